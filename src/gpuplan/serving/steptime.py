"""The time of one continuous-batching step, as vLLM V1 schedules it: decodes and prefill chunks in one batch.

A roofline per step (Williams et al. 2009; formulas.md section 10), with the rates of the speed layer
(:mod:`gpuplan.speed.gemm`: the card's achievable matmul fraction and bandwidth; :mod:`gpuplan.speed.comms`: the
link and its per-call latency), so that one calibration serves :mod:`gpuplan.speed.inference` and this module::

    compute = (tokens x 2·N_active + attention FLOPs) / (tp x peak x f_matmul)
    memory  = (weights touched + KV read) / achievable bandwidth
    step    = max(compute, memory) + TP all-reduces + per-layer kernel floor + engine overhead

This module keeps its own closed form (microseconds per call: the scheduler simulation prices thousands of
steps per rate point) rather than calling :class:`gpuplan.speed.inference.StepTimer` per step.

with ``tokens`` = prefill-chunk tokens + one per decoding sequence, attention at ``4·a·d`` FLOPs per query and
key, the KV of every decoding sequence read once, the routed experts a batch touches
(``1 - (1 - k/E)^tokens`` of them), and two all-reduces of ``tokens x h`` per layer under TP (ring: ``2(t-1)/t``
of the bytes, plus a fixed latency each). ``Calibration`` scales the compute and memory terms and the overhead
per deployment (:mod:`.calibrate`).
"""

from __future__ import annotations

from dataclasses import dataclass

from .. import overheads as oh
from ..hardware import GpuSpec, Network
from ..memory import kv_bytes_per_sequence, weight_format
from ..model.spec import ModelSpec
from ..scenario import Scenario
from ..speed.comms import intra_node_link
from ..speed.flops import matmul_params
from ..speed.gemm import bandwidth, matmul_fraction, peak_flops


@dataclass(frozen=True, kw_only=True)
class Calibration:
    """Per-deployment multipliers fitted on measured runs (1.0: the model as published)."""

    compute: float = 1.0
    memory: float = 1.0
    overhead: float = 1.0
    source: str = "none"


@dataclass(frozen=True, kw_only=True)
class StepModel:
    """Per-GPU constants of one deployment (tp GPUs, one replica); :meth:`time` prices a step."""

    flops_per_token: float  # 2·N_active / tp
    attn_flops_per_pair: float  # 4·a·d·L / tp per (query, key) pair
    peak_flops: float
    weight_bytes: float  # per GPU, all experts
    expert_bytes: float  # per GPU, routed experts only
    experts_per_token: int
    num_experts: int
    kv_bytes_per_token: float  # per GPU
    bandwidth: float  # achievable bytes/s
    allreduce_bytes_per_token: float  # per GPU per step, 0 without TP
    allreduce_latency_s: float
    link_bytes_per_s: float
    overhead_s: float
    floor_s: float = 0.0  # per-step latency of the non-GEMM kernels of every layer (CUDA graphs replay them)
    calibration: Calibration = Calibration()

    def time(self, prefill_tokens: float, decode_seqs: float, decode_context: float, prefill_pairs: float = 0.0
             ) -> float:
        """Seconds for one step with ``prefill_tokens`` prompt tokens, ``decode_seqs`` decoding sequences whose
        contexts total ``decode_context`` tokens, and ``prefill_pairs`` (query, key) pairs of prompt attention."""
        tokens = prefill_tokens + decode_seqs
        if tokens <= 0:
            return 0.0
        c = self.calibration
        compute = (tokens * self.flops_per_token + (prefill_pairs + decode_context) * self.attn_flops_per_pair) \
            / self.peak_flops * c.compute
        weights = self.weight_bytes
        if self.num_experts:
            touched = 1 - (1 - self.experts_per_token / self.num_experts) ** tokens
            weights -= self.expert_bytes * (1 - touched)
        memory = (weights + decode_context * self.kv_bytes_per_token) / self.bandwidth * c.memory
        comm = 0.0
        if self.allreduce_bytes_per_token:
            comm = tokens * self.allreduce_bytes_per_token / self.link_bytes_per_s + self.allreduce_latency_s
        return max(compute, memory) + comm + self.floor_s + self.overhead_s * c.overhead

    def prefill_time(self, prompt_tokens: float) -> float:
        """One prompt alone (its time to first token on an idle engine, chunking aside)."""
        return self.time(prompt_tokens, 0, 0, prompt_tokens * prompt_tokens / 2)


def step_model(s: Scenario, m: ModelSpec, gpu: GpuSpec, network: Network | None = None,
               calibration: Calibration | None = None) -> StepModel:
    """The step model of ``s`` (its tp, quantization and KV dtype) on ``gpu`` over ``network``."""
    t = s.tp * s.pp
    dtype = "fp8" if s.quant == "fp8" and gpu.supports_dtype("fp8") else ("bf16" if gpu.supports_dtype("bf16")
                                                                           else "fp16")
    peak = (peak_flops(gpu, dtype) or 1e12) * matmul_fraction(gpu)
    fmt, skip = weight_format(s, m)
    parts = m.weight_bytes(fmt, skip=skip)
    block = oh.VLLM_BLOCK_TOKENS
    kv_token = kv_bytes_per_sequence(s.model_copy(update={"engine": "vllm"}), m, block) / block / s.pp
    attn = sum(4 * m.num_heads * m.head_dim for _ in m.layers)
    link = intra_node_link(gpu, network or Network())
    allreduce = 0.0
    if s.tp > 1:
        allreduce = 2 * m.num_layers * 2 * (s.tp - 1) / s.tp * m.hidden_size * 2
    overhead = oh.VLLM_STEP_OVERHEAD_S if s.engine == "vllm" else oh.GENERATE_STEP_OVERHEAD_S
    kernels = oh.DECODE_KERNELS_PER_LAYER - 7 + (oh.MOE_KERNELS_PER_LAYER if m.is_moe else 0) + (
        oh.MLA_KERNELS_PER_LAYER if m.mla else 0)  # the 7 linears' latency sits in their GEMMs (speed.inference)
    return StepModel(flops_per_token=2 * matmul_params(m) / t, attn_flops_per_pair=attn / t, peak_flops=peak,
                     weight_bytes=sum(parts.values()) / t, expert_bytes=parts["experts"] / t,
                     experts_per_token=m.experts_per_token if m.is_moe else 0,
                     num_experts=m.num_experts if m.is_moe else 0, kv_bytes_per_token=kv_token,
                     bandwidth=bandwidth(gpu),
                     allreduce_bytes_per_token=allreduce, allreduce_latency_s=2 * m.num_layers *
                     link.latency_s if s.tp > 1 else 0.0, link_bytes_per_s=link.bytes_per_s,
                     overhead_s=overhead, floor_s=kernels * m.num_layers / s.pp * oh.GEMM_KERNEL_LATENCY_S,
                     calibration=calibration or Calibration())
