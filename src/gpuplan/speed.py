"""How fast a scenario runs: training step time and tokens/s, inference prefill and decode, communication.

Training FLOPs per token (PaLM, Chowdhery et al. 2022, appendix B): ``6·N + 12·L·a·d·s`` where ``N`` counts
the parameters a token multiplies (active parameters without the input embedding lookup) and the second term
is attention's score and value matmuls over ``s`` keys (a sliding window caps ``s``). Full recomputation adds
one forward (``+2·N + 4·L·a·d·s``, i.e. 8/6). LoRA/QLoRA skip the weight gradients of the frozen base: the
backward is ``2·N`` instead of ``4·N`` (Hu et al. 2021: "no gradients for most parameters"), so ``4·N``.
Time = FLOPs / (GPUs x dense peak for the compute dtype x MFU); MFU defaults in :mod:`gpuplan.overheads`.

Inference is a roofline per phase (Williams et al. 2009; LLM-Viewer, formulas.md section 10): prefill is
compute-bound (``2·N`` per token plus attention), decode reads the active weights and the KV cache once per
step, so its time is ``max(bytes / (bandwidth x eta_mem), FLOPs / (peak x eta_compute))``.

Communication (ring collectives, Patarasuk & Yuan 2009): all-reduce moves ``2·(n-1)/n`` of the buffer per
GPU, all-gather and reduce-scatter ``(n-1)/n``; we assume it overlaps with the backward up to the compute
time and report which bound dominates.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from . import overheads as oh
from .hardware import GpuSpec
from .memory import kv_bytes_per_sequence, weight_format
from .model.spec import ModelSpec
from .scenario import Scenario


@dataclass(kw_only=True)
class Speed:
    tokens_per_s: float
    step_time_s: float
    mfu_assumed: float | None
    bound: str
    compute_s: float = 0.0
    communication_s: float = 0.0
    ttft_s: float | None = None
    tokens_per_s_per_sequence: float | None = None
    flops_per_token: float | None = None
    assumptions: list[str] = field(default_factory=list)


def matmul_params(m: ModelSpec) -> int:
    """Parameters a token multiplies: the active ones less the input embedding lookup (kept when tied,
    since the same matrix is the output head)."""
    lookup = 0 if m.tie_word_embeddings else m.vocab_size * m.embedding_dim
    return m.params_active - lookup - m.position_params - m.vision_params


def attention_flops_per_token(m: ModelSpec, seq: int) -> float:
    """Forward + backward attention FLOPs per token: ``12 · a · d · s_eff`` summed over layers."""
    total = 0.0
    for layer in m.layers:
        keys = min(seq, layer.window) if layer.window else seq
        total += 12 * m.num_heads * m.head_dim * keys
    return total


def training_flops_per_token(s: Scenario, m: ModelSpec) -> float:
    n = matmul_params(m)
    attention = attention_flops_per_token(m, s.seq_len)
    dense = 6 * n if s.method == "full" else 4 * n
    if s.grad_checkpointing == "full":
        dense += 2 * n
        attention *= 16 / 12
    elif s.grad_checkpointing == "selective":
        attention *= 16 / 12
    return dense + attention


def compute_dtype(s: Scenario) -> str:
    if s.precision.startswith("fp8"):
        return "fp8"
    if s.precision == "fp32":
        return "tf32"
    return s.precision.split("-")[0]


def link_bandwidth_gbs(gpu: GpuSpec, s: Scenario, intra_node: str = "") -> tuple[float, str]:
    """Unidirectional GB/s between GPUs: NVLink (half the bidirectional catalog figure) when the card has
    it and the offer does not say PCIe; else PCIe (x16: 2 GB/s per lane-gen step); across nodes the
    inter-node network."""
    if s.num_nodes > 1:
        return oh.INTER_NODE_GBS, "inter-node network"
    if gpu.nvlink_bandwidth_gbs and intra_node != "pcie" and "PCIe" not in gpu.form_factor:
        return gpu.nvlink_bandwidth_gbs / 2, "NVLink"
    gen = gpu.pcie_generation or 4
    return oh.PCIE_X16_GBS.get(gen, 32.0) * oh.PCIE_EFFICIENCY, f"PCIe gen{gen}"


def training_speed(s: Scenario, m: ModelSpec, gpu: GpuSpec, intra_node: str = "") -> Speed:
    dtype = compute_dtype(s)
    peak = (gpu.peak_tflops(dtype) or gpu.peak_tflops("bf16") or gpu.peak_tflops("fp16") or 0) * 1e12
    mfu = oh.mfu(gpu, s)
    fpt = training_flops_per_token(s, m)
    tokens_step = s.micro_batch_size * s.seq_len * s.grad_accum_steps * s.dp
    compute = tokens_step * fpt / (s.world_size * peak * mfu) if peak else math.inf
    bw, link = link_bandwidth_gbs(gpu, s, intra_node)
    comm = _training_comm_bytes(s, m) / (bw * 1e9) if s.world_size > 1 else 0.0
    step = max(compute, comm)
    speed = Speed(tokens_per_s=tokens_step / step, step_time_s=step, mfu_assumed=mfu,
                  bound="communication" if comm > compute else "compute", compute_s=compute, communication_s=comm,
                  flops_per_token=fpt)
    speed.assumptions.append(f"MFU {mfu:.2f} ({oh.mfu_source(gpu, s)}); {fpt / 1e9:.1f} GFLOP/token "
                             f"(6N + attention, PaLM appendix B{'; LoRA backward 2N' if s.method != 'full' else ''})")
    if s.world_size > 1:
        speed.assumptions.append(f"collectives over {link} at {bw:.0f} GB/s per direction, overlapped with compute")
    return speed


def _training_comm_bytes(s: Scenario, m: ModelSpec) -> float:
    """Bytes each GPU sends per optimizer step (ring collectives)."""
    strategy, n, t = s.resolved_strategy, s.dp, s.tp
    trainable = m.params_total if s.method == "full" else 0.01 * m.params_total
    grad_bytes = (4 if s.precision.endswith("mixed") and strategy in ("ddp", "single") else 2) * trainable / (t * s.pp)
    total = 0.0
    if n > 1:
        ring = (n - 1) / n
        if strategy == "zero3":  # all-gather weights for forward and backward, reduce-scatter gradients
            total += ring * (2 * 2 * m.params_total / (t * s.pp) + grad_bytes)
        elif strategy in ("zero1", "zero2"):
            total += ring * (grad_bytes + 2 * trainable / (t * s.pp))  # reduce-scatter + all-gather
        else:
            total += 2 * ring * grad_bytes  # all-reduce
    if t > 1:  # Megatron TP: 4 all-reduces of b·s·h per layer (2 forward, 2 backward), per micro-batch
        act = 2 * s.micro_batch_size * s.seq_len * m.hidden_size
        total += s.grad_accum_steps * m.num_layers / s.pp * 4 * 2 * (t - 1) / t * act
    return total


def inference_speed(s: Scenario, m: ModelSpec, gpu: GpuSpec, intra_node: str = "") -> Speed:
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
        link_bw, _ = link_bandwidth_gbs(gpu, s, intra_node)
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


def speed_of(s: Scenario, m: ModelSpec, gpu: GpuSpec, intra_node: str = "") -> Speed:
    """Training or inference speed of ``s`` on ``gpu`` (``intra_node``: the offer's link, e.g. ``pcie``)."""
    return training_speed(s, m, gpu, intra_node) if s.task == "train" else inference_speed(s, m, gpu, intra_node)
