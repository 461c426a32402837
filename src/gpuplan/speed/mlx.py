"""MLX's prompt processing and token generation on Apple silicon (the ``mlx`` engine, :mod:`gpuplan.engines.mlx`).

- Generation: every weight the step reaches (as stored: 16-bit or MLX's 4/8-bit groups with their scales and
  biases, the output head included; of the routed experts, those the batch picks) and the KV cache streamed once
  per token at :data:`~gpuplan.overheads.MLX_DECODE_BANDWIDTH_FRACTION` of the unified memory's bandwidth, plus
  :data:`~gpuplan.overheads.MLX_LAYER_S` per layer (the lazy graph built and evaluated each token, ~a dozen kernels
  a layer, and the command buffers MLX commits every 40-50 ops or MB: fitted on ml-explore/mlx PR #1864's
  ``mlx_lm.generate`` rates); mlx-lm's loop per token runs beside the GPU (``generate_step``'s ``mx.async_eval``).
- Prompts: the linears at :data:`~gpuplan.overheads.MLX_MATMUL_FRACTION` of the GPU's FP32 rate (MLX's ``steel``
  GEMMs and ``qmm`` quantized GEMMs run on the shader ALUs, FP16 at the FP32 rate on M1-M4), the attention at the
  attention efficiency of the step timer, the element-wise work as a fused engine's.
"""

from __future__ import annotations

from .. import overheads as oh
from ..model.spec import ModelSpec
from ..scenario import Scenario
from ..tensors.state import weight_format
from .ggml import metal_decode_parts
from .work import attention_s, recurrent_scans_s, unread_expert_bytes


def weight_bytes(s: Scenario, m: ModelSpec, tokens: float = 1) -> float:
    """Bytes a step of ``tokens`` tokens reads: every layer's weights but only the routed experts the tokens reach
    (mlx-lm's ``SwitchGLU`` multiplies the picked experts' weights alone, ``mx.gather_qmm`` / ``gather_mm``), and the
    output head (the token embedding is one row per token; a tied head reads ``vocab x dim`` of it, not the
    per-layer tables of Gemma 3n/4, which are looked up too)."""
    fmt, skip = weight_format(s, m)
    parts = m.weight_bytes(fmt, skip=skip)
    head = parts["lm_head"] or fmt.embedding_bytes(m.vocab_size * m.embedding_dim)
    unread = unread_expert_bytes(((layer, lin, fmt.linear_weight_bytes(lin)) for layer in m.layers
                                  for lin in layer.linears if not lin.kept(skip)), tokens)
    return sum(v for k, v in parts.items() if k not in ("embeddings", "lm_head", "vision")) + head - unread


def decode_parts(timer, batch: int, context: float) -> dict[str, float]:
    """One generation step of ``batch`` sequences (module docstring)."""
    s, m = timer.s, timer.m
    return metal_decode_parts(s, m, timer.gpu, batch, context, weight_bytes=weight_bytes(s, m, batch),
                              bandwidth_fraction=oh.MLX_DECODE_BANDWIDTH_FRACTION, layer_s=oh.MLX_LAYER_S,
                              matmul_flops=matmul_rate(timer.gpu))


def matmul_rate(gpu) -> float:
    """FLOP/s of MLX's GEMMs: :data:`~gpuplan.overheads.MLX_MATMUL_FRACTION` of the GPU's FP32 rate."""
    return (gpu.peak_tflops("fp32") or 0.0) * 1e12 * oh.MLX_MATMUL_FRACTION


def prefill_parts(timer, tokens: int, *, context: int = 0, seqs: int = 1) -> dict[str, float]:
    """Prefilling ``tokens`` tokens in ``seqs`` sequences after ``context`` cached ones (module docstring)."""
    s, m, gpu = timer.s, timer.m, timer.gpu
    rate = matmul_rate(gpu)
    flops = 2 * tokens * sum(count * sum(lin.weight_params * (layer.experts_per_token / lin.count
                                                               if lin.group == "experts" and lin.count > 1 else 1)
                                         for lin in layer.linears) for layer, count in m.layer_kinds())
    traffic = weight_bytes(s, m, tokens) / (gpu.bandwidth_gbs * 1e9 * oh.MLX_DECODE_BANDWIDTH_FRACTION)
    per_seq = max(tokens // max(seqs, 1), 1)
    return {"gemm": max(flops / rate, traffic),
            "attention": attention_s(m, gpu, "fp16", seqs, per_seq, kernel="flash", context=context),
            "ssm_scan": recurrent_scans_s(m, gpu, seqs, per_seq),
            "kernel_latency": m.num_layers * oh.MLX_LAYER_S}
