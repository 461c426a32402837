"""Training step time: FLOPs / (GPUs x dense peak x MFU), with collectives overlapped up to the compute time.

MFU defaults live in :mod:`gpuplan.overheads`; we report which bound (compute or communication) dominates.
"""

from __future__ import annotations

import math

from .. import overheads as oh
from ..hardware import GpuSpec, Network
from ..memory.runtimes import runtime_for
from ..model import ModelSpec
from ..scenario import Scenario
from .breakdown import Speed
from .comms import link_bandwidth_gbs, training_comm_bytes
from .flops import compute_dtype, training_flops_per_token


def training_speed(s: Scenario, m: ModelSpec, gpu: GpuSpec, network: Network | None = None) -> Speed:
    dtype = compute_dtype(s)
    peak = (gpu.peak_tflops(dtype) or gpu.peak_tflops("bf16") or gpu.peak_tflops("fp16") or 0) * 1e12
    mfu = oh.mfu(gpu, s)
    fpt = training_flops_per_token(s, m)
    tokens_step = s.micro_batch_size * s.seq_len * s.grad_accum_steps * s.dp
    compute = tokens_step * fpt / (s.world_size * peak * mfu) if peak else math.inf
    # the training stack's own kernels and techniques (compile, fused losses, offloading), from each project's
    # published benchmarks: the stack's profile says by how much (issue 10)
    stack_factor, stack_why = runtime_for(s).step_time_factor(s)
    compute *= stack_factor
    bw, link = link_bandwidth_gbs(gpu, s, network or Network())
    comm = training_comm_bytes(s, m) / (bw * 1e9) if s.world_size > 1 else 0.0
    step = max(compute, comm)
    speed = Speed(tokens_per_s=tokens_step / step, step_time_s=step, mfu_assumed=mfu,
                  bound="communication" if comm > compute else "compute", compute_s=compute, communication_s=comm,
                  flops_per_token=fpt)
    speed.assumptions.append(f"MFU {mfu:.2f} ({oh.mfu_source(gpu, s)}); {fpt / 1e9:.1f} GFLOP/token "
                             f"(6N + attention, PaLM appendix B{'; LoRA backward 2N' if s.method != 'full' else ''})")
    if stack_why:
        speed.assumptions.append(f"{s.framework} step time x{stack_factor:.2f}: {stack_why}")
    if s.world_size > 1:
        speed.assumptions.append(f"collectives over {link} at {bw:.0f} GB/s per direction, overlapped with compute")
    return speed
