"""The time of a profiled module's passes on one card: every op its profile holds (:mod:`gpuplan.model.profile`),
at the batch and sizes asked, timed as the LLM passes are (:mod:`.work`, :mod:`.gemm`).

- **forward**: each linear and convolution as the GEMM it is, at its shape's efficiency on the card
  (:func:`~.gemm.gemm_time_s`: a convolution as cuDNN's implicit GEMM, ``M`` = batch x output pixels, ``K`` =
  input channels x kernel area); each attention call at the card's fused-attention rate
  (:func:`attention_share`: the softmax weighs more beside narrow heads, whose matmuls run padded to the
  kernel's tile; FlashAttention-style:
  ``2·q·k·(d + d_v)`` FLOPs per head); every other
  matrix product as a batched GEMM; the element-wise, normalization and copy kernels as the bytes they move at the
  achievable bandwidth, each kernel at least its launch latency;
- **backward**: each linear's and convolution's input gradient (same shape), the weight gradient of the weights
  trained (``[K x M] @ [M x N]``), attention at 2.5x its forward FLOPs (FlashAttention-2: 5 matmuls to 2), the
  element-wise kernels moving twice their forward bytes (:data:`~gpuplan.overheads.ELEMENTWISE_BACKWARD_RATIO`);
  LoRA adapters add their two thin GEMMs forward and four backward per adapted linear, with peft's scale and add;
  gradient checkpointing runs the forward once more;
- **host**: eager PyTorch's dispatcher and Python per aten op (views too) and per module call the pass makes (both
  counted in the profile), the backward's autograd ops at their own cost; host and GPU overlap, the pass takes
  their smooth maximum (:func:`~.work.smooth_max`); an optimizer that loops over its tensors in Python (Adafactor)
  adds its ops per trained tensor once a step (:func:`optimizer_host_s`), and AdamW as a for-loop (transformers'
  own, the Trainer's adamw_hf before 4.32) its ops and kernels per tensor in place of the fused pass
  (:func:`adamw_for_loop_s`);
- **eager attention under mixed precision**: autocast's fp32 softmax, 16 bytes per score (:func:`score_bytes`);
  BERT's eager chain (scale, padding mask, softmax, dropout: :func:`masked_score_bytes`) one kernel a step;
- **autocast** (precision ``*-mixed``): a text encoder's or a denoiser's full fine-tune is read from its profile
  recorded under autocast (:mod:`gpuplan.model.autocast`), whose element-wise bytes hold the casts of the fp32
  weights and inputs and the fp32 norms and what follows them (the text encoders' residual stream, the U-Net's
  GroupNorm and SiLU: diffusers' train_dreambooth.py keeps the trained U-Net in fp32 and accelerate's
  ``prepare`` wraps its forward in ``torch.autocast``);
- **weights stored in fewer bits**: a bitsandbytes NF4 weight is dequantized to 16 bits before each GEMM that
  uses it (forward, and the input gradient), fp8 storage (diffusers' layerwise casting, kohya's ``--fp8_base``)
  cast up the same way, and GGUF blocks unpacked by diffusers' PyTorch code: the bytes those kernels move per
  weight, at the achievable bandwidth (:data:`~gpuplan.overheads.DEQUANT_BYTES_PER_WEIGHT`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from .. import overheads as oh
from ..errors import GpuplanError
from ..hardware import GpuSpec, load_gpu
from ..memory.modules import encoded_again, pipeline_weight_bytes, swapped_weight_bytes
from ..model.encoders import SDPA_DROPOUT
from ..model.layers import Linear
from ..model.profile import Op, Profile, storage_format, text_encoder_storage
from ..model.quant import make_format
from ..scenario.fields import release_numbers
from ..scenario.modules import (
    TEXT_LORA_ROLES,
    frozen_text_params,
    pass_tokens,
    text_way,
    trained_text_params,
    trains_encoder,
)
from .gemm import bandwidth, clock_factor, gemm_time_s, matmul_fraction, peak_flops
from .work import attention_fraction, smooth_max, softmax_per_score


@dataclass(frozen=True, kw_only=True)
class PassTime:
    """Seconds of one pass by kind of work, its FLOPs, and the total (GPU and host overlapped)."""

    gemm_s: float = 0.0
    attention_s: float = 0.0
    elementwise_s: float = 0.0
    dequant_s: float = 0.0
    host_s: float = 0.0
    flops: float = 0.0

    @property
    def gpu_s(self) -> float:
        return self.gemm_s + self.attention_s + self.elementwise_s + self.dequant_s

    @property
    def total_s(self) -> float:
        return smooth_max(self.gpu_s, self.host_s, oh.HOST_GPU_OVERLAP_SHARPNESS)

    def __add__(self, other: PassTime) -> PassTime:
        return PassTime(gemm_s=self.gemm_s + other.gemm_s, attention_s=self.attention_s + other.attention_s,
                        elementwise_s=self.elementwise_s + other.elementwise_s,
                        dequant_s=self.dequant_s + other.dequant_s, host_s=self.host_s + other.host_s,
                        flops=self.flops + other.flops)

    def scaled(self, factor: float) -> PassTime:
        return PassTime(gemm_s=self.gemm_s * factor, attention_s=self.attention_s * factor,
                        elementwise_s=self.elementwise_s * factor, dequant_s=self.dequant_s * factor,
                        host_s=self.host_s * factor, flops=self.flops * factor)


@dataclass(frozen=True, kw_only=True)
class Run:
    """How a pass runs: the compute dtype (``bf16``, ``fp16``, ``fp32``: fp32 convolutions take the card's TF32 rate,
    as PyTorch's cuDNN default allows, and fp32 matmuls its fp32 rate unless ``tf32``: :func:`_matmul_dtype`),
    activation bytes per element, the storage of the
    weights of linears and convolutions (``16bit``, ``fp8``, ``nf4``, ``gguf-q4_0``...), what is trained (``all``,
    ``none``), the LoRA adapters (the roles they adapt and their rank) and whether checkpointing recomputes."""

    dtype: str = "bf16"
    weights: str = "16bit"
    trained: str = "none"
    lora_roles: tuple[str, ...] = ()
    lora_rank: int = 16
    recompute: bool = False
    host_factor: float = 1.0  # compiled graphs and fused stacks launch fewer ops
    attention: str = "sdpa"  # eager: the scores as two batched GEMMs and a softmax through memory
    autocast: bool = False  # mixed precision (torch.autocast): an eager softmax runs in fp32 (_eager)
    masked: str = ""  # BERT's eager chain (score_bytes): "scale-mask" (inference), "scale-mask-dropout" (training)
    tf32: bool = False  # fp32 matmuls on TF32 tensor cores (torch.backends.cuda.matmul.allow_tf32)


def _rate_dtype(dtype: str) -> str:
    """The rate an fp32 pass's convolutions and fused attention kernels take, and its MFU's peak: TF32."""
    return "tf32" if dtype == "fp32" else dtype


def _matmul_dtype(run: Run) -> str:
    """The rate of a pass's linears and matrix products (eager attention's too). PyTorch runs fp32 matmuls in fp32
    unless TF32 is allowed for them (``torch.backends.cuda.matmul.allow_tf32``, off by default since 1.12; pytorch
    docs notes/cuda.html, "TensorFloat-32 (TF32) on Ampere (and later) devices"), where its convolutions take TF32
    by default (``torch.backends.cudnn.allow_tf32``, on): the LLM path's rule (:func:`~.flops.compute_dtype`)."""
    if run.dtype != "fp32":
        return run.dtype
    return "tf32" if run.tf32 else "fp32"


def fp32_rates(s, job, gpu: GpuSpec) -> str:
    """What an fp32 job's GEMMs are timed at (:func:`_op_dtype`), said in its plan as an LLM plan says its own
    (:mod:`.training`): convolutions at TF32, matmuls at the fp32 rate unless ``tf32``; "" for a 16-bit job."""
    if job.dtype != "fp32":
        return ""
    fp32 = peak_flops(gpu, "fp32") * matmul_fraction(gpu, "fp32") / 1e12
    if not gpu.peak_tflops("tf32"):
        return f"fp32 on CUDA cores throughout ({gpu.name} has no TF32 tensor cores): {fp32:,.1f} TFLOPS achievable"
    if getattr(s, "tf32", False):
        return "fp32 matmuls and convolutions on TF32 tensor cores (tf32 true)"
    return (f"fp32: convolutions on TF32 tensor cores (cuDNN's default), matmuls at the fp32 rate, {fp32:,.1f} TFLOPS "
            "achievable (TF32 is off for matmuls by default since PyTorch 1.12; tf32 true for the TF32 rate)")


def _op_dtype(run: Run, op: Op) -> str:
    """A linear's or convolution's GEMM rate: a convolution at cuDNN's (TF32 for fp32), a linear at
    :func:`_matmul_dtype`'s."""
    return _rate_dtype(run.dtype) if op.kind == "conv" else _matmul_dtype(run)


def _act_bytes(dtype: str) -> float:
    return 4.0 if dtype == "fp32" else 2.0


def _weight_bytes(run: Run, k: float, n: float, op: Op | None = None) -> float:
    """Bytes per weight element of a ``k x n`` linear in the run's storage (:mod:`gpuplan.model.quant`)."""
    if run.weights in ("16bit", "none") or (op is not None and op.stored_16bit(run.weights)):
        return _act_bytes(run.dtype)
    fmt = make_format(storage_format(run.weights))
    return fmt.linear_weight_bytes(Linear(name="w", in_features=int(k), out_features=int(n))) / (k * n)


def _gemm(gpu: GpuSpec, run: Run, op: Op, m: float, k: float, n: float) -> float:
    return gemm_time_s(gpu, _op_dtype(run, op), m, k, n, count=op.count, act_bytes=_act_bytes(run.dtype),
                       weight_bytes=_weight_bytes(run, k, n, op))


def _dequant_s(gpu: GpuSpec, run: Run, op: Op, k: float, n: float) -> float:
    """Unpacking a stored weight to 16 bits before its GEMM: the bytes its kernels move per weight
    (:data:`~gpuplan.overheads.DEQUANT_BYTES_PER_WEIGHT`) and a kernel's latency."""
    if run.weights in ("16bit", "none") or op.stored_16bit(run.weights):
        return 0.0
    kind = storage_format(run.weights)
    if kind.startswith("gguf-"):  # 8-bit blocks unpack in fewer ops than the 2- to 6-bit ones
        kind = "gguf-8bit" if kind in ("gguf-q8_0", "gguf-q8_k") else "gguf"
    moved = oh.DEQUANT_BYTES_PER_WEIGHT.get(kind, oh.DEQUANT_BYTES_PER_WEIGHT["fp8"])
    return op.count * (k * n * moved / bandwidth(gpu) + oh.GEMM_KERNEL_LATENCY_S)


def attention_share(gpu: GpuSpec, head_dim: float) -> float:
    """Share of the dense 16-bit peak a fused attention kernel reaches on heads ``head_dim`` wide (``d``): the
    generation's fraction for 128-wide heads (:func:`~.work.attention_fraction`), set on a reference card
    (:data:`~gpuplan.overheads.ATTENTION_REFERENCE_CARD`: the A100 for Ampere, so GeForce Ampere's cheaper softmax
    counts), times ``(1 + r_ref(128)) / (t/d + r(d))``, ``r(d)`` the softmax's exponential and FP32 work per score
    in tensor-FLOP equivalents over the ``4d`` matmul FLOPs per score on this card
    (:data:`~gpuplan.overheads.ATTENTION_REFERENCE_HEAD_DIM`), ``t`` the head width the kernel's matmuls run at,
    ``d`` rounded up to its tile (:data:`~gpuplan.overheads.ATTENTION_HEAD_DIM_TILE`); the card's fraction times
    ``d/t`` alone where its SM count, clock or FP32 rate are not in the catalog."""
    if head_dim <= 0:
        return attention_fraction(gpu)
    padded = math.ceil(head_dim / oh.ATTENTION_HEAD_DIM_TILE) * oh.ATTENTION_HEAD_DIM_TILE / head_dim
    per_score = softmax_per_score(gpu)
    if per_score is None:
        return attention_fraction(gpu) / padded
    ref = oh.ATTENTION_REFERENCE_CARD.get(gpu.generation)
    ref_score = softmax_per_score(load_gpu(ref)) if ref else None
    base = per_score if ref_score is None else ref_score
    ratio = (1 + base / (4 * oh.ATTENTION_REFERENCE_HEAD_DIM)) / (padded + per_score / (4 * head_dim))
    return attention_fraction(gpu) * ratio


def _attention_s(gpu: GpuSpec, run: Run, work: float, d: tuple[float, ...], count: float) -> float:
    """A fused attention kernel's FLOPs ``work`` on heads of ``d``'s widths, and each call's latency."""
    share = attention_share(gpu, (d[3] + d[4]) / 2)
    dtype = _rate_dtype(run.dtype)
    return work / (peak_flops(gpu, dtype) * share * clock_factor(gpu, dtype)) \
        + count * oh.GEMM_KERNEL_LATENCY_S


def forward(p: Profile, gpu: GpuSpec, batch: int, sizes: tuple[float, ...], run: Run) -> PassTime:
    """One forward pass (see the module docstring)."""
    if run.dtype == "fp32" and not peak_flops(gpu, "fp32"):
        raise GpuplanError(f"{gpu.name} has no fp32 rate in gpuplan's GPU catalog, and this job runs fp32 work "
                           "(a VAE kept in fp32, or fp32 precision)")
    gemm = attention = dequant = flops = 0.0
    kernels = p.other_kernels
    for op in p.ops:
        d = op.at(batch, sizes)
        kernels += op.count
        if op.kind in ("linear", "conv"):
            m, k, n = d
            gemm += _gemm(gpu, run, op, m, k, n)
            dequant += _dequant_s(gpu, run, op, k, n)
            flops += op.count * 2 * m * k * n
            if run.lora_roles and op.role in run.lora_roles:
                gemm += _lora_forward(gpu, run, op, m, k, n)
                kernels += op.count * oh.LORA_OPS_PER_LINEAR
        elif op.kind == "matmul":
            b, m, k, n = d
            gemm += gemm_time_s(gpu, _matmul_dtype(run), m, k, n, count=op.count * b, kernels=op.count,
                                act_bytes=_act_bytes(run.dtype), weight_bytes=_act_bytes(run.dtype))
            flops += op.count * 2 * b * m * k * n
        else:
            heads, q, kv, dk, dv = d
            work = op.count * 2 * heads * q * kv * (dk + dv)
            attention += _eager(gpu, run, op, d, 1) if run.attention == "eager" else \
                _attention_s(gpu, run, work, d, op.count)
            flops += work
    scale = _act_bytes(run.dtype) / 2  # the profile moved bf16 activations
    elementwise = p.other_bytes.at(batch, sizes) * scale / bandwidth(gpu) + p.other_kernels * oh.GEMM_KERNEL_LATENCY_S
    host = (host_scale(gpu) * (p.dispatches * oh.DISPATCH_OVERHEAD_S + p.calls * oh.MODULE_CALL_OVERHEAD_S)
            + (kernels - p.other_kernels - sum(o.count for o in p.ops)) * oh.EAGER_OP_OVERHEAD_S) * run.host_factor
    return PassTime(gemm_s=gemm, attention_s=attention, elementwise_s=elementwise, dequant_s=dequant, host_s=host,
                    flops=flops)


def host_scale(gpu: GpuSpec) -> float:
    """How much longer eager PyTorch's per-op host work takes on the host the card sits in than on the desktop CPU
    :data:`~gpuplan.overheads.DISPATCH_OVERHEAD_S` was fitted on: a datacenter card's server
    (:data:`~gpuplan.overheads.SERVER_HOST_FACTOR`), an H100 or H200 SXM5 board's server of its own generation
    (:data:`~gpuplan.overheads.HOPPER_SXM_HOST_FACTOR`)."""
    if gpu.segment != "datacenter":
        return 1.0
    if gpu.generation == "Hopper" and gpu.form_factor.startswith("SXM"):
        return oh.HOPPER_SXM_HOST_FACTOR
    return oh.SERVER_HOST_FACTOR


def _eager(gpu: GpuSpec, run: Run, op: Op, d: tuple[float, ...], factor: int) -> float:
    """Eager attention (``factor`` 1 forward, 2 backward): ``Q·Kᵀ`` and ``P·V`` as batched GEMMs, and the score
    matrix moved through memory (:func:`score_bytes` per score), and the cast's kernel under autocast."""
    heads, q, kv, dk, dv = d
    dtype = _matmul_dtype(run)
    gemms = (gemm_time_s(gpu, dtype, q, dk, kv, count=op.count * heads, kernels=op.count,
                         act_bytes=_act_bytes(run.dtype), weight_bytes=_act_bytes(run.dtype))
             + gemm_time_s(gpu, dtype, q, kv, dv, count=op.count * heads, kernels=op.count,
                           act_bytes=_act_bytes(run.dtype), weight_bytes=_act_bytes(run.dtype)))
    scores = op.count * heads * q * kv * score_bytes(run) / bandwidth(gpu)
    cast = op.count * oh.GEMM_KERNEL_LATENCY_S if _upcast(run) else 0.0
    return factor * (gemms + scores + cast)


def _upcast(run: Run) -> bool:
    return run.autocast and run.dtype != "fp32"


def score_bytes(run: Run) -> float:
    """Bytes an eager attention's forward moves per score: the scores written by ``Q·Kᵀ``, read and written by the
    softmax, read by ``P·V`` (four passes at the activations' width). Under mixed precision (``torch.autocast``) the
    softmax is on autocast's float32 list (PyTorch's Automatic Mixed Precision reference, "CUDA Ops that can autocast
    to float32": softmax), so it writes fp32 probabilities, and ``P·V``, on the 16-bit list, casts them back first
    (a kernel reading 4 bytes and writing 2): 2 + 2 + 4 + (4 + 2) + 2 = 16 bytes where a 16-bit pass moves 8
    (transformers' Whisper and BART attention call ``softmax`` on 16-bit scores; diffusers' eager processor too).
    BERT's chain (``run.masked``: :func:`masked_score_bytes`) has more kernels."""
    width = _act_bytes(run.dtype)
    if run.masked:
        return masked_score_bytes(run, width)
    if not _upcast(run):
        return 4 * width
    return width + width + 4 + (4 + width) + width


def masked_score_bytes(run: Run, width: float) -> float:
    """BERT's, RoBERTa's and XLM-RoBERTa's eager attention, one kernel per step (transformers 5.24
    ``eager_attention_forward``: ``matmul(query, keyᵀ) * scaling``, ``+ attention_mask``, ``softmax``,
    ``nn.functional.dropout``, ``matmul(·, value)``; transformers 4.16's BertSelfAttention and NVIDIA's BERT
    modeling.py at DeepLearningExamples 23a6382c, lines 390-402, the same with a division): the scores written
    (``w``), scaled (read and written, ``2w``), the padding mask added (read ``w``, written at the mask's width: the
    extended mask is in the weights' dtype, fp32 under autocast, so the sum is fp32 by type promotion), the softmax
    (read and written at that width), in training the dropout (read, written, its 1-byte mask), under autocast
    ``P·V``'s cast back to 16 bits (read 4, written 2), and ``P·V`` reading ``w``: 16-bit training 2 + 4 + 4 + 4 +
    5 + 2 = 21 bytes, autocast 2 + 4 + 6 + 8 + 9 + 6 + 2 = 37, fp32 41; inference without the dropout."""
    wide = 4.0 if _upcast(run) else width
    out = width + 2 * width + (width + wide) + 2 * wide + width
    if run.masked.endswith("dropout"):
        out += 2 * wide + 1
    if _upcast(run):
        out += 4 + width
    return out


def _lora_forward(gpu: GpuSpec, run: Run, op: Op, m: float, k: float, n: float) -> float:
    """peft's adapter path: ``x @ A`` (k -> r), ``@ B`` (r -> n), scaled and added to the base output."""
    r = run.lora_rank
    return (gemm_time_s(gpu, _matmul_dtype(run), m, k, r, count=op.count)
            + gemm_time_s(gpu, _matmul_dtype(run), m, r, n, count=op.count)
            + op.count * m * n * oh.LORA_BYTES_PER_OUTPUT / bandwidth(gpu))


def backward(p: Profile, gpu: GpuSpec, batch: int, sizes: tuple[float, ...], run: Run) -> PassTime:
    """The backward of one pass (and the recomputed forward under checkpointing)."""
    gemm = attention = dequant = flops = 0.0
    for op in p.ops:
        d = op.at(batch, sizes)
        if op.kind in ("linear", "conv"):
            m, k, n = d
            gemm += _gemm(gpu, run, op, m, n, k)  # input gradient
            dequant += _dequant_s(gpu, run, op, k, n)
            flops += op.count * 2 * m * k * n
            if run.trained == "all":
                gemm += gemm_time_s(gpu, _op_dtype(run, op), k, m, n, count=op.count)  # weight gradient
                flops += op.count * 2 * m * k * n
            if run.lora_roles and op.role in run.lora_roles:
                gemm += 2 * _lora_forward(gpu, run, op, m, k, n)  # dX and dW through A and B
        elif op.kind == "matmul":
            b, m, k, n = d
            gemm += 2 * gemm_time_s(gpu, _matmul_dtype(run), m, k, n, count=op.count * b, kernels=op.count,
                                    act_bytes=_act_bytes(run.dtype), weight_bytes=_act_bytes(run.dtype))
            flops += op.count * 4 * b * m * k * n
        else:
            heads, q, kv, dk, dv = d
            if run.attention == "eager":  # four GEMMs (dP, dV, dQ, dK) and the softmax's backward
                work = op.count * 4 * heads * q * kv * (dk + dv)
                attention += _eager(gpu, run, op, d, 2)
            else:
                work = op.count * 2 * heads * q * kv * (dk + dv) * oh.ATTENTION_BACKWARD_FLOP_RATIO
                attention += _attention_s(gpu, run, work, d, op.count)
            flops += work
    scale = _act_bytes(run.dtype) / 2
    elementwise = (p.other_bytes.at(batch, sizes) * scale * oh.ELEMENTWISE_BACKWARD_RATIO / bandwidth(gpu)
                   + p.other_kernels * oh.GEMM_KERNEL_LATENCY_S)
    kernels = p.other_kernels + sum(o.count for o in p.ops)
    host = kernels * oh.BACKWARD_OPS_RATIO * oh.AUTOGRAD_OP_OVERHEAD_S * run.host_factor
    out = PassTime(gemm_s=gemm, attention_s=attention, elementwise_s=elementwise, dequant_s=dequant, host_s=host,
                   flops=flops)
    if run.recompute:
        out = out + forward(p, gpu, batch, sizes, run)
    return out


def decode_step(p: Profile, gpu: GpuSpec, batch: int, sizes: tuple[float, ...], grows: int, run: Run) -> PassTime:
    """One autoregressive step of the ops whose rows grow with variable ``grows`` (an encoder-decoder's decoder):
    each at one row per sequence, reading its weights (memory-bound), and the host work in proportion. Each
    self-attention layer's cache is grown by ``torch.cat`` (transformers 4.35 ``WhisperAttention.forward``:
    ``key_states = torch.cat([past_key_value[0], key_states], dim=2)``; today's ``DynamicLayer.update`` in
    cache_utils.py the same), so every step reads the cache and writes it one token longer besides the attention's
    read: twice the attention's bytes again, element-wise work (issue 34, bench/results/whisper_s27.md)."""
    gemm = flops = attention = copies = 0.0
    share = 0
    for op in p.ops:
        if op.kind == "attention" and _grows(op, grows, dim=1):
            # one query row per sequence against the cached keys and values: their bytes read (the encoder's
            # for cross-attention; the decoder's own, half their final length on average, for self-attention)
            heads, _, kv, dk, dv = op.at(batch, sizes)
            mean = 0.5 if _grows(op, grows, dim=2) else 1.0
            attention += op.count * (heads * kv * mean * (dk + dv) * _act_bytes(run.dtype) / bandwidth(gpu)
                                     + oh.GEMM_KERNEL_LATENCY_S)
            if mean < 1:  # the self-attention cache grown by torch.cat: read and written again every step
                copies += op.count * 2 * heads * kv * mean * (dk + dv) * _act_bytes(run.dtype) / bandwidth(gpu)
            flops += op.count * 2 * heads * kv * mean * (dk + dv)
            continue
        if op.kind not in ("linear", "conv") or not _grows(op, grows):
            continue
        _, k, n = op.at(batch, sizes)
        gemm += _gemm(gpu, run, op, batch, k, n)
        flops += op.count * 2 * batch * k * n
        share += op.count
    linears = sum(o.count for o in p.ops if o.kind in ("linear", "conv")) or 1
    host = host_scale(gpu) * (p.dispatches * oh.DISPATCH_OVERHEAD_S + p.calls * oh.MODULE_CALL_OVERHEAD_S) * share \
        / linears
    return PassTime(gemm_s=gemm, attention_s=attention, elementwise_s=copies, host_s=host * run.host_factor,
                    flops=flops)


def _grows(op: Op, variable: int, dim: int = 0) -> bool:
    """Whether the op's dim ``dim`` (its rows: a linear's first, an attention's queries second) grows with the
    variable ``variable``."""
    return any(exps[variable] and (a or b) for exps, a, b in op.dims[dim].terms)


def optimizer_s(gpu: GpuSpec, trainable: int, bytes_per_param: float) -> float:
    """An optimizer step: each trained parameter's weight, gradient and states read and written once."""
    return trainable * bytes_per_param / bandwidth(gpu)


def offload_copy_s(nbytes: float, gpu: GpuSpec) -> float:
    """Copying ``nbytes`` between the host and the card as diffusers' CPU offload does, through accelerate's hooks
    from pageable memory (:data:`~gpuplan.overheads.OFFLOAD_COPY_BYTES_PER_S`, a desktop's), at most the link's pinned
    rate. The CUDA driver stages a pageable copy through a pinned buffer with the CPU, one thread, so the copy runs at
    the host's speed: a datacenter card's server copies :func:`host_scale` times slower, as it dispatches."""
    gen = gpu.pcie_generation or 4
    link = oh.PCIE_X16_GBS.get(gen, 32.0) * 1e9 * oh.PCIE_EFFICIENCY
    return nbytes / min(oh.OFFLOAD_COPY_BYTES_PER_S / host_scale(gpu), link)


def block_swap_s(job, gpu: GpuSpec) -> float:
    """The copies of kohya's ``--blocks_to_swap`` in one forward and backward: each swapped block's weights onto the
    card and a block that has run back to the CPU, in the forward and again in the backward, so four times the
    swapped bytes (:func:`~gpuplan.memory.modules.swapped_weight_bytes`), one direction at a time (sd-scripts
    custom_offloading_utils.py ``swap_weight_devices_cuda``: the device-to-host copies, ``stream.synchronize()``,
    then the host-to-device ones; one worker thread, so one swap at a time). At the link's pinned rate: the CPU
    copies are made by ``.to("cpu", non_blocking=True)``, which PyTorch allocates pinned (aten
    TensorConversions.cpp ``_to_copy``: ``pin_out = non_blocking && self.is_cuda() && options.device().is_cpu()``),
    and the next copy onto the card reads them; the card's PCIe generation and width (x16 unless the catalog says
    less: the RTX 4060 and 4060 Ti's x8) at :data:`~gpuplan.overheads.PCIE_EFFICIENCY`. LoRA's adapters are
    modules of their own network, not of the blocks, and stay on the card."""
    gen = gpu.pcie_generation or 4
    link = oh.PCIE_X16_GBS.get(gen, 32.0) * 1e9 * oh.PCIE_EFFICIENCY * min(gpu.pcie_lanes or 16, 16) / 16
    return 4 * swapped_weight_bytes(job) / link


def swap_exposed(job, gpu: GpuSpec, pass_s: float) -> tuple[float, float]:
    """The block swap's copies in one forward and backward of ``pass_s`` seconds (:func:`block_swap_s`), and the
    part of them the step waits for: kohya runs them on a side stream from a worker thread while the blocks between
    compute (a swapped block is sent back after it runs and the next one is waited for only before it runs), so the
    step waits only for copies beyond the pass's own time."""
    copies = block_swap_s(job, gpu) if any(job.swapped) else 0.0
    return copies, max(copies - pass_s, 0.0)


# ---- jobs ---------------------------------------------------------------------------------------------------------
@dataclass(frozen=True, kw_only=True)
class ModuleSpeed:
    """The speed of a module job on one card. Training: ``step_s`` one optimizer step, ``steps_per_s`` (the it/s
    the trainers' progress bars print), ``samples_per_s``. Generation: ``step_s`` one denoising step (the
    pipelines' it/s is its inverse), ``image_s`` one call of ``batch`` images (prompt, steps, decode, transfers),
    ``images_per_hour``, ``first_call_s`` the first call of a pipeline just loaded (a warm call and the one-time
    setup: :data:`~gpuplan.overheads.FIRST_CALL_SETUP_S`, ``first_call_range_s`` at the ends of its measured range).
    Encoder-decoders serving: ``image_s`` one batch of samples. ``parts_s`` add up to the
    step (training) or the call (generation); ``mfu``: the main component's FLOPs over the card's dense peak."""

    step_s: float
    steps_per_s: float
    samples_per_s: float
    image_s: float | None = None
    images_per_hour: float | None = None
    first_call_s: float | None = None
    first_call_range_s: tuple[float, float] | None = None
    parts_s: dict[str, float]
    flops_per_step: float
    mfu: float
    bound: str
    low: float = 0.0  # samples_per_s at the ends of the calibration spread
    high: float = 0.0


def _masked(job) -> str:
    """BERT's eager chain (:func:`masked_score_bytes`) for the families whose attention runs it, with the dropout
    when training and the config's attention dropout is above 0."""
    key = SDPA_DROPOUT.get(job.spec.family)
    if job.attention != "eager" or not key:
        return ""
    dropout = job.kind == "train" and job.spec.main.config.get(key, 0.1)
    return "scale-mask-dropout" if dropout else "scale-mask"


def _run(job, s) -> Run:
    compiled = bool(getattr(s, "compile", False))
    return Run(dtype=job.dtype, weights=job.weights, trained=job.trained, lora_roles=job.lora_roles,
               lora_rank=job.lora_rank, recompute=job.way.endswith("-gc"), attention=job.attention,
               autocast=str(getattr(s, "precision", "")).endswith("-mixed"), masked=_masked(job),
               host_factor=oh.HOST_OPS_FACTOR["compile"] if compiled else 1.0, tf32=bool(getattr(s, "tf32", False)))


def train_step(s, job, main: Profile, parts: dict[str, Profile], gpu: GpuSpec) -> ModuleSpeed:
    """One optimizer step: ``grad_accum_steps`` micro-steps, each the main component's forward and backward
    averaged over the aspect buckets, the VAE encoding the batch (no cached latents) and frozen text encoders
    encoding the prompts, then the optimizer (see the module docstring)."""
    run = _run(job, s)
    parts_s: dict[str, float] = {}
    flops = 0.0
    micro = 0.0
    for i, sizes in enumerate(job.shapes):
        fwd = forward(main, gpu, job.batch, sizes, run)
        bwd = backward(main, gpu, job.batch, sizes, run)
        total = fwd + bwd
        copies, exposed = swap_exposed(job, gpu, total.total_s)
        if copies:
            parts_s["block swap copies (overlapped)"] = parts_s.get("block swap copies (overlapped)", 0.0) + (
                copies - exposed) / len(job.shapes)
            parts_s["block swap copies (waited for)"] = parts_s.get("block swap copies (waited for)", 0.0) + \
                exposed / len(job.shapes)
        micro += (total.total_s + exposed) / len(job.shapes)
        flops += total.flops / len(job.shapes)
        for key, value in (("gemm", total.gemm_s), ("attention", total.attention_s),
                           ("elementwise", total.elementwise_s), ("dequantize", total.dequant_s)):
            parts_s[key] = parts_s.get(key, 0.0) + value / len(job.shapes)
        parts_s["host (overlapped)"] = parts_s.get("host (overlapped)", 0.0) + max(
            total.total_s - total.gpu_s, 0.0) / len(job.shapes)
        if job.kind == "diffusion-train" and not job.cache_latents:
            w, h = job.pixels[i]
            vae = forward(parts["vae-encode"], gpu, job.batch, (sizes[0], w // 8 + h // 8),
                          Run(dtype="fp32" if job.vae_dtype == "fp32" else job.dtype, tf32=run.tf32))
            micro += vae.total_s / len(job.shapes)
            parts_s["VAE encode"] = parts_s.get("VAE encode", 0.0) + vae.total_s / len(job.shapes)
    if job.kind == "diffusion-train" and job.text_encoders in ("frozen", "trained"):
        for name, t in text_encoders_s(job, parts, gpu, run).items():
            micro += t
            parts_s[name] = parts_s.get(name, 0.0) + t
    trainable = job.spec.main.params + text_whole(job) if job.trained == "all" else 0
    accum = s.grad_accum_steps
    step = micro * accum
    parts_s = {k: v * accum for k, v in parts_s.items()}
    if trainable:  # weights, gradients and two moments, fp32 where mixed: read and written (LoRA: negligible)
        opt = adamw_for_loop_s(s, gpu, trainable, trained_tensors(job, main, parts)) \
            if job.optimizer_impl == "for-loop" and getattr(s, "optimizer", "") == "adamw" else \
            optimizer_s(gpu, trainable, oh.OPTIMIZER_BYTES_PER_PARAM)
        step += opt
        parts_s["optimizer"] = opt
    if host := optimizer_host_s(s, job, main, gpu, parts):
        step += host
        parts_s["optimizer (host)"] = host
    step += oh.DATALOADER_S_PER_MICRO_STEP * accum
    parts_s["trainer loop"] = oh.DATALOADER_S_PER_MICRO_STEP * accum
    if job.spec.family == "whisper":  # the log-mel batches read from the dataset on the CPU, between steps
        parts_s["log-mel batches from the dataset (CPU)"] = cpu = speech_batches_s(job) * accum
        step += cpu
    samples = job.samples_per_step * accum / step
    dense = peak_flops(gpu, _rate_dtype(job.dtype))
    return _speed(step, samples, parts_s, flops * accum, dense, "train")


def text_encoders_s(job, parts: dict[str, Profile], gpu: GpuSpec, run: Run) -> dict[str, float]:
    """Seconds per micro-step of the text encoders on the card: a frozen one's forward without gradients; a trained
    one's (:func:`~gpuplan.scenario.modules.trains_encoder`) forward and backward, with its LoRA adapters (input
    gradients through the frozen linears and the adapters' own, as the denoiser's LoRA; the forward again where its
    way is checkpointed: :func:`~gpuplan.scenario.modules.text_way`) or trained whole (weight
    gradients too, and the forward again under checkpointing, as the denoiser's full fine-tune)."""
    out: dict[str, float] = {}
    for te in job.spec.role("text_encoder"):
        prof = parts[f"text-encoder:{te.name}"]
        stored = text_encoder_storage(job.weights, te.cls)  # kohya's --fp8_base, ai-toolkit's quantized T5
        tokens = (job.t5_tokens,) if te.cls == "T5EncoderModel" else ()
        if trains_encoder(job, te):
            how = Run(dtype=job.dtype, weights=stored, lora_roles=TEXT_LORA_ROLES[job.text_lora],
                      lora_rank=job.lora_rank, recompute=text_way(job, te).endswith("-gc"), autocast=run.autocast,
                      host_factor=run.host_factor, tf32=run.tf32) if job.text_lora else \
                Run(dtype=job.dtype, trained="all", recompute=run.recompute, autocast=run.autocast,
                    host_factor=run.host_factor, tf32=run.tf32)
            name = "text encoders (LoRA trained)" if job.text_lora else "text encoders (trained)"
            t = (forward(prof, gpu, job.batch, tokens, how) + backward(prof, gpu, job.batch, tokens, how)).total_s
            out[name] = out.get(name, 0.0) + t
            continue
        t = forward(prof, gpu, job.batch, tokens, Run(dtype=job.dtype, weights=stored, tf32=run.tf32)).total_s
        out["text encoders"] = out.get("text encoders", 0.0) + t
    return out


def text_whole(job) -> int:
    """The parameters of the text encoders a full fine-tune trains whole with the denoiser (0 with LoRA), less what
    the trainer leaves frozen (:func:`~gpuplan.scenario.modules.trained_text_params`)."""
    if job.trained != "all":
        return 0
    return sum(trained_text_params(job, te) for te in job.spec.role("text_encoder") if trains_encoder(job, te))


def adamw_for_loop_s(s, gpu: GpuSpec, trainable: int, tensors: int) -> float:
    """AdamW as a Python for-loop over the trained tensors (``optimizer_impl`` for-loop: transformers' own AdamW):
    per tensor :data:`~gpuplan.overheads.ADAMW_FOR_LOOP_OPS_PER_TENSOR` aten ops dispatched on the card's host, and
    :data:`~gpuplan.overheads.ADAMW_FOR_LOOP_KERNELS_PER_TENSOR` kernels on the GPU, each at least its launch latency
    and together moving :data:`~gpuplan.overheads.ADAMW_FOR_LOOP_PASSES` of each parameter's weight, state and
    gradient bytes (4 each: fp32, the master weights' dtype under autocast; 2 under a ``*-true`` precision); host
    and GPU overlap as a pass's do (their smooth maximum)."""
    passes = oh.ADAMW_FOR_LOOP_PASSES
    element = 2 if str(getattr(s, "precision", "")).endswith("-true") else 4
    gpu_s = trainable * element * sum(passes.values()) / bandwidth(gpu) \
        + tensors * oh.ADAMW_FOR_LOOP_KERNELS_PER_TENSOR * oh.GEMM_KERNEL_LATENCY_S
    host_s = tensors * oh.ADAMW_FOR_LOOP_OPS_PER_TENSOR * oh.DISPATCH_OVERHEAD_S * host_scale(gpu)
    return smooth_max(gpu_s, host_s, oh.HOST_GPU_OVERLAP_SHARPNESS)


def optimizer_host_s(s, job, main: Profile, gpu: GpuSpec, parts: dict[str, Profile] | None = None) -> float:
    """The host seconds of an optimizer that loops over its tensors in Python: its aten ops per trained tensor
    (:data:`~gpuplan.overheads.OPTIMIZER_OPS_PER_TENSOR`, more for 16-bit tensors: precision ``*-true``) at eager
    PyTorch's per-op cost on the card's host, once per optimizer step; its kernels are too small to keep the GPU
    busy, so the step waits for them (:func:`trained_tensors`)."""
    ops = oh.OPTIMIZER_OPS_PER_TENSOR.get(str(getattr(s, "optimizer", "")), 0)
    if not ops:
        return 0.0
    if str(getattr(s, "precision", "")).endswith("-true"):
        ops += oh.OPTIMIZER_OPS_16BIT_EXTRA
    return trained_tensors(job, main, parts) * ops * oh.DISPATCH_OVERHEAD_S * host_scale(gpu)


def trained_tensors(job, main: Profile, parts: dict[str, Profile] | None = None) -> int:
    """The tensors a step's optimizer updates: a LoRA adapter's two per adapted linear or convolution; in a full
    fine-tune the model's parameter tensors where its spec counted them (a bundled encoder's, on the meta device),
    else each linear's and convolution's weight and bias (the norms' and embeddings' tensors left out), with the
    trained text encoders' linears."""
    linears = [op for op in main.ops if op.kind in ("linear", "conv")]
    if job.trained == "all":
        tensors = job.spec.main.tensors or sum(op.count * (2 if op.bias else 1) for op in linears)
        if parts:  # the trained encoders' linears, less those the trainer leaves frozen
            tensors += sum(op.count * (2 if op.bias else 1) for te in job.spec.role("text_encoder")
                           if trains_encoder(job, te) for op in parts[f"text-encoder:{te.name}"].ops
                           if op.kind == "linear")
            tensors -= 2 * sum(frozen_text_params(job, te).linears for te in job.spec.role("text_encoder"))
    else:
        tensors = 2 * sum(op.count for op in linears if job.lora_roles and op.role in job.lora_roles)
    return tensors + 2 * text_adapted(job, parts or {})


def text_adapted(job, parts: dict[str, Profile]) -> int:
    """The linears the job's trained text encoders adapt with LoRA (0 when it trains none)."""
    if not getattr(job, "text_lora", "") or job.trained == "all":
        return 0
    roles = TEXT_LORA_ROLES[job.text_lora]
    return sum(op.count for te in job.spec.role("text_encoder") if trains_encoder(job, te)
               for op in parts[f"text-encoder:{te.name}"].ops if op.kind == "linear" and op.role in roles)


def speech_batches_s(job) -> float:
    """Seconds to read one micro-batch of Whisper's stored log-mel features back from the dataset and pad them
    into a tensor in the training process (:data:`~gpuplan.overheads.SPEECH_BATCH_S_PER_VALUE`): ``num_mel_bins``
    x 3,000 frames per sample, every clip padded to 30 s."""
    config = job.spec.main.config
    frames = 2 * int(config.get("max_source_positions", 1500))
    return job.batch * int(config.get("num_mel_bins", 80)) * frames * oh.SPEECH_BATCH_S_PER_VALUE


def host_range(gpu: GpuSpec) -> tuple[float, float] | None:
    """The factors on a datacenter card's modelled host work that give the fastest and slowest server hosts measured
    (:data:`~gpuplan.overheads.SERVER_HOST_RANGE` over :data:`~gpuplan.overheads.SERVER_HOST_FACTOR`); ``None`` on a
    desktop card, whose host the per-op costs were fitted on."""
    if gpu.segment != "datacenter":
        return None
    fast, slow = oh.SERVER_HOST_RANGE
    return fast / host_scale(gpu), slow / host_scale(gpu)


def generation(s, job, main: Profile, parts: dict[str, Profile], gpu: GpuSpec, host: float = 1.0) -> ModuleSpeed:
    """One pipeline call: the prompt through each text encoder, ``steps`` denoiser passes (the batch doubled by
    classifier-free guidance), the latents through the VAE decoder, and what offloading copies (:func:`_offload_bytes`
    at :func:`offload_copy_s`): each model onto the card and back once per call (model offload; the negative prompt's
    encoders twice) or the denoiser's weights before every step (sequential offload, in the step's it/s). ``host``
    scales the denoiser's host work (:func:`host_range`)."""
    run = _run(job, s)
    run = replace(run, host_factor=run.host_factor * host)
    sizes = job.shapes[0]
    w, h = job.pixels[0]
    den = forward(main, gpu, job.batch, sizes, run)
    step = den.total_s + oh.SCHEDULER_STEP_S
    parts_s = {"denoise": step * job.steps}
    once, each_step = _offload_bytes(job, main, parts)
    for te in job.spec.role("text_encoder"):
        tokens = (job.t5_tokens,) if te.cls == "T5EncoderModel" else ()
        parts_s["text encoders"] = parts_s.get("text encoders", 0.0) + forward(
            parts[f"text-encoder:{te.name}"], gpu, job.samples_per_step, tokens,
            Run(dtype=job.dtype, tf32=run.tf32)).total_s
    if job.spec.role("vae"):
        parts_s["VAE decode"] = forward(parts["vae-decode"], gpu, job.samples_per_step, (sizes[0], w // 8 + h // 8),
                                        Run(dtype=job.vae_dtype, tf32=run.tf32)).total_s
    if once or each_step:
        parts_s["CPU offload transfers"] = offload_copy_s(once + each_step * job.steps, gpu)
    call = sum(parts_s.values())
    dense = peak_flops(gpu, _rate_dtype(job.dtype))
    # a step's it/s holds the denoiser's copy sequential offload makes before it runs
    out = _speed(step + offload_copy_s(each_step, gpu), job.samples_per_step / call, parts_s, den.flops, dense,
                 "infer")
    return ModuleSpeed(**{**out.__dict__, "image_s": call, "images_per_hour": 3600 * job.samples_per_step / call,
                          "first_call_s": call + oh.FIRST_CALL_SETUP_S,
                          "first_call_range_s": tuple(call + x for x in oh.FIRST_CALL_SETUP_RANGE)})


def _offload_bytes(job, main: Profile, parts: dict[str, Profile]) -> tuple[float, float]:
    """Bytes moved between the card and the host per call, and per denoising step: each model's weights as the
    pipeline holds them (:func:`~gpuplan.memory.modules.pipeline_weight_bytes`). Model offload: every model onto
    the card and back once a call (diffusers' enable_model_cpu_offload hooks each model with accelerate's
    cpu_offload_with_hook, whose prev_module_hook moves the model before it back to the CPU, and
    maybe_free_model_hooks offloads the rest at the call's end: huggingface/diffusers
    src/diffusers/pipelines/pipeline_utils.py), and the text encoders the negative prompt runs again onto the card
    and back a second time (:func:`~gpuplan.memory.modules.encoded_again`). Sequential offload: the text encoders and
    the VAE onto the card once, the denoiser's weights at every step, none back (accelerate's cpu_offload keeps the
    CPU copy and drops the card's after each module runs)."""
    if job.offload == "none":
        return 0.0, 0.0
    held = {c.name: pipeline_weight_bytes(job, c, main, parts) for c in job.spec.components}
    if job.offload == "model":
        return 2 * (sum(held.values()) + sum(held[name] for name in encoded_again(job))), 0.0
    denoiser = held[job.spec.main.name]
    return sum(held.values()) - denoiser, denoiser


def model_step(s, job, main: Profile, gpu: GpuSpec, host: float = 1.0) -> ModuleSpeed:
    """An encoder-decoder's or encoder's training step, or one inference call (encoder-decoders: the encoder and
    the first decoder token, then one decoder step per further output token; ``host`` scales an inference call's
    modelled host work: :func:`host_range`)."""
    run = _run(job, s)
    run = replace(run, host_factor=run.host_factor * host)
    sizes = job.shapes[0]
    dense = peak_flops(gpu, _rate_dtype(job.dtype))
    if job.task == "train":
        return train_step(s, job, main, {}, gpu)
    if sizes and "decoder_tokens" in main.variables:
        parts_s, work, step_s = _transcribe(job, main, gpu, sizes, run)
        call = sum(parts_s.values())
        out = _speed(step_s, job.samples_per_step / call, parts_s, work.flops, dense, "infer")
        out = replace(out, mfu=work.flops / (call * dense) if dense else 0.0)  # over the whole call
    else:
        work = forward(main, gpu, job.batch, sizes, run)
        call = work.total_s
        out = _speed(call, job.samples_per_step / call, {"forward": call}, work.flops, dense, "infer")
    out = replace(out, bound=bound_of(work))
    return ModuleSpeed(**{**out.__dict__, "image_s": call, "images_per_hour": 3600 * job.samples_per_step / call})


def _transcribe(job, main: Profile, gpu: GpuSpec, sizes: tuple[float, ...],
                run: Run) -> tuple[dict[str, float], PassTime, float]:
    """An encoder-decoder's generate on ``job.batch`` samples, or a recording's ``job.windows`` Whisper windows
    ``job.batch`` at a time (the last pass on the rest): per pass the encoder and the first token, then one decoder
    step per further token, a pass of windows until its longest window ends (:func:`pass_tokens`; the batch's rows
    all step, their self-attention caches as long as the longest); Whisper's log-mel features built on the CPU
    between passes. The parts of the call, the passes' work summed (its FLOPs, and its GPU and host seconds for
    :func:`bound_of`) and one decoder step's seconds."""
    index = main.variables.index("decoder_tokens")
    first = tuple(1 if i == index else x for i, x in enumerate(sizes))
    passes = [(job.batch, 1)]
    if job.windows:
        passes = [(job.batch, job.windows // job.batch), (job.windows % job.batch, 1)]
    parts_s = {"encoder and first token": 0.0, "decoder steps": 0.0}
    work, step_s = PassTime(), 0.0
    for batch, times in passes:
        if not batch or not times:
            continue
        tokens = sizes[index]
        if job.windows:
            tokens = pass_tokens(tokens, batch, job.spec.defaults["decoder_tokens_max"])
        grown = tuple(tokens if i == index else x for i, x in enumerate(sizes))
        prefill = forward(main, gpu, batch, first, run)
        # transformers' generate between steps: inputs, cache and mask updates, logits processors, stopping criteria
        step = decode_step(main, gpu, batch, grown, index, run) + PassTime(host_s=oh.GENERATE_STEP_OVERHEAD_S
                                                                            + timestamps_host_s(job, gpu, batch))
        step_s = step_s or step.total_s
        parts_s["encoder and first token"] += times * prefill.total_s
        parts_s["decoder steps"] += times * (tokens - 1) * step.total_s
        work = work + (prefill + step.scaled(tokens - 1)).scaled(times)
    if job.spec.family == "whisper":
        parts_s["log-mel features (CPU)"] = log_mel_s(job)
    return parts_s, work, step_s


def older_than(job, release: str) -> bool:
    """Whether the job runs a transformers release before ``release`` (``transformers_version``; None, the current
    release, is not)."""
    return job.transformers is not None and job.transformers < release_numbers(release)


def log_mel_s(job) -> float:
    """CPU seconds of the log-mel features of a Whisper job's windows (or samples): the current extractor's torch STFT
    (:data:`~gpuplan.overheads.WHISPER_LOG_MEL_S_PER_WINDOW`), or before transformers 4.37 numpy's per-frame loop
    (:data:`~gpuplan.overheads.WHISPER_NUMPY_LOG_MEL_S_PER_WINDOW`)."""
    numpy = older_than(job, oh.WHISPER_TORCH_LOG_MEL_FROM)
    return (job.windows or job.batch) * (oh.WHISPER_NUMPY_LOG_MEL_S_PER_WINDOW if numpy
                                         else oh.WHISPER_LOG_MEL_S_PER_WINDOW)


def timestamps_host_s(job, gpu: GpuSpec, batch: int) -> float:
    """Host seconds a decoder step of ``batch`` Whisper windows spends in transformers' WhisperTimeStampLogitsProcessor
    when the transcription returns timestamps (``job.timestamps``; 0 without): the ops it dispatches per step and per
    row (:data:`~gpuplan.overheads.WHISPER_TIMESTAMP_OPS_PER_STEP`, :data:`~gpuplan.overheads.
    WHISPER_TIMESTAMP_OPS_PER_ROW`, counted on transformers 5.24.0's code; before 5.20 its per-row loops,
    :data:`~gpuplan.overheads.WHISPER_TIMESTAMP_LOOP_OPS_PER_ROW`, counted on 4.35.0's) at eager PyTorch's host cost
    per op (:data:`~gpuplan.overheads.DISPATCH_OVERHEAD_S`, on the card's host: :func:`host_scale`)."""
    if not job.timestamps:
        return 0.0
    if older_than(job, oh.WHISPER_TIMESTAMP_BATCHED_FROM):
        ops = oh.WHISPER_TIMESTAMP_LOOP_OPS_PER_STEP + batch * oh.WHISPER_TIMESTAMP_LOOP_OPS_PER_ROW
    else:
        ops = oh.WHISPER_TIMESTAMP_OPS_PER_STEP + batch * oh.WHISPER_TIMESTAMP_OPS_PER_ROW
    return ops * oh.DISPATCH_OVERHEAD_S * host_scale(gpu)


def bound_of(work: PassTime) -> str:
    """What limits an inference call's passes: ``host`` where eager PyTorch's host work outlasts the GPU's (the pass
    takes the longer of the two, :attr:`PassTime.total_s`: a Whisper decoder step at batch 16 on an H100 is 0.37 ms
    of GPU work and 5.3 ms of host dispatch), ``memory`` where element-wise and dequantizing bytes outlast GEMMs
    and attention, else ``compute`` (as :func:`_speed` judges a training step's parts)."""
    if work.host_s > work.gpu_s:
        return "host"
    return "memory" if work.elementwise_s + work.dequant_s > work.gemm_s + work.attention_s else "compute"


def _speed(step: float, samples: float, parts_s: dict[str, float], flops: float, dense: float,
           kind: str) -> ModuleSpeed:
    host = parts_s.get("host (overlapped)", 0.0)
    bound = "host" if host > 0.5 * step else ("memory" if parts_s.get("elementwise", 0) + parts_s.get(
        "dequantize", 0) > parts_s.get("gemm", 0) + parts_s.get("attention", 0) else "compute")
    low, high = oh.MODULE_SPEED_SPREAD
    return ModuleSpeed(step_s=step, steps_per_s=1 / step, samples_per_s=samples, parts_s=parts_s,
                       flops_per_step=flops, mfu=flops / (step * dense) if dense else 0.0, bound=bound,
                       low=samples * (1 + low),
                       high=samples * (1 + high))
