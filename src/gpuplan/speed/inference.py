"""Inference speed: a roofline per phase (Williams et al. 2009; LLM-Viewer, formulas.md section 10).

Prefill is compute-bound (``2·N`` per token plus attention); decode reads the active weights and the KV cache
once per step, so its time is ``max(bytes / (bandwidth x eta_mem), FLOPs / (peak x eta_compute))``, plus the
host's per-step overheads (eager PyTorch kernel launches, the serving engine's loop) and TP all-reduces.
"""

from __future__ import annotations

from .. import overheads as oh
from ..hardware import GpuSpec, Network
from ..memory import kv_bytes_per_sequence, weight_format
from ..model import ModelSpec
from ..scenario import Scenario
from .breakdown import Speed
from .comms import link_bandwidth_gbs
from .flops import matmul_params


def inference_speed(s: Scenario, m: ModelSpec, gpu: GpuSpec, network: Network | None = None) -> Speed:
    """Prefill time (time to first token) and decode tokens/s at ``batch_size`` concurrent sequences."""
    dtype = "fp16" if not gpu.supports_dtype("bf16") else ("fp8" if s.quant == "fp8" and gpu.supports_dtype("fp8")
                                                           else "bf16")
    peak = (gpu.peak_tflops(dtype) or gpu.peak_tflops("fp16") or 0) * 1e12
    bw = gpu.bandwidth_gbs * 1e9
    gpus_ = s.tp * s.pp
    n = matmul_params(m)
    # prefill: 2N per token + causal attention (2 matmuls x 2 FLOP x a·d x s/2 average keys)
    prompt = s.batch_size * s.prompt_tokens
    attn = sum(4 * m.num_heads * m.head_dim * min(s.prompt_tokens, layer.window or s.prompt_tokens) / 2
               for layer in m.layers)
    prefill = prompt * (2 * n + attn) / (gpus_ * peak * oh.PREFILL_EFFICIENCY)
    # decode: read active weights (experts touched by the batch) + the KV cache, once per step
    fmt, skip = weight_format(s, m)
    weights = sum(m.weight_bytes(fmt, skip=skip).values())
    if m.is_moe:
        expert_bytes = m.weight_bytes(fmt, skip=skip)["experts"]
        touched = 1 - (1 - m.experts_per_token / m.num_experts) ** s.batch_size
        weights -= expert_bytes * (1 - touched)
    context = s.prompt_tokens + s.output_tokens / 2
    kv = s.batch_size * kv_bytes_per_sequence(s.model_copy(update={"engine": "vllm", "tp": 1}), m, int(context))
    mem_time = (weights + kv) / (gpus_ * bw * oh.DECODE_BW_EFFICIENCY)
    flop_time = s.batch_size * 2 * n / (gpus_ * peak * oh.PREFILL_EFFICIENCY)
    comm = 0.0
    if s.tp > 1:
        link_bw, _ = link_bandwidth_gbs(gpu, s, network or Network())
        per_layer = 2 * 2 * (s.tp - 1) / s.tp * 2 * s.batch_size * m.hidden_size
        comm = m.num_layers * (per_layer / (link_bw * 1e9) + 2 * oh.COLLECTIVE_LATENCY_S)
    host = (m.num_layers / s.pp * oh.EAGER_OPS_PER_LAYER * oh.EAGER_OP_OVERHEAD_S + oh.GENERATE_STEP_OVERHEAD_S
            if s.engine == "transformers" else 0.0)
    engine_loop = oh.VLLM_STEP_OVERHEAD_S if s.engine == "vllm" else 0.0
    step = max(mem_time, flop_time, host) + comm + engine_loop
    bound = "memory" if mem_time >= flop_time else "compute"
    if host > max(mem_time, flop_time):
        bound = "host (kernel launches)"
    if comm > max(mem_time, flop_time, host):
        bound = "communication"
    speed = Speed(tokens_per_s=s.batch_size / step, step_time_s=step, mfu_assumed=None, bound=bound,
                  compute_s=prefill, communication_s=comm, ttft_s=prefill, tokens_per_s_per_sequence=1 / step)
    speed.assumptions.append(f"decode reads {weights / 2**30:.1f} GiB of weights + {kv / 2**30:.2f} GiB of KV per "
                             f"step at {oh.DECODE_BW_EFFICIENCY:.0%} of {gpu.bandwidth_gbs:.0f} GB/s; prefill at "
                             f"{oh.PREFILL_EFFICIENCY:.0%} of the {dtype} peak")
    return speed
