"""What one GEMM costs on one card: a smooth roofline of its compute and its memory traffic, plus a fixed
GPU-side latency per kernel.

For ``[M x K] @ [K x N]`` (``M`` tokens in the micro-step, ``K`` input width, ``N`` output width):

- compute: ``2·M·K·N / (peak x f_matmul x a) x (1 + M0/M + K0/K + N0/N)``: ``f_matmul`` the card's achievable
  fraction of its datasheet peak at its best shape (the Maximum Achievable Matmul FLOPS that stas00/ml-engineering
  measured; power-capped cards lower), ``a`` what the shapes of LLM layers reach of that best (cuBLAS tile, wave
  and prologue costs that thin operands pay more of): both fitted on a real card's matmul rates
  (``bench/data/gpu-measurements/gemm-h200-2026-11-27.json``: torch.matmul bf16 on an H200, 49 LLM shapes);
  never faster than ``2·M·K·N`` at the rate the card sustains at its power cap where that is measured below the
  short-loop rate (:func:`sustained_flops`: AMD's Max-Achievable FLOPs on MI300X and MI325X);
- traffic: ``M·K·a + K·N·w + M·N·o`` bytes (``a``, ``w``, ``o`` bytes per input activation, weight and output
  element: an fp8 GEMM reads 1-byte operands and writes a bf16 output) at the achievable bandwidth;
- time: ``(compute^p + traffic^p)^(1/p) + latency``: the roofline of Williams et al. (2009) with a smooth
  corner (``p`` = :data:`~gpuplan.overheads.GEMM_ROOFLINE_SHARPNESS`), plus the launch/ramp/tail latency that
  dominates small kernels.

An fp8 GEMM that adds its partial sums into fp32 outside the tensor cores (the split accumulator Transformer Engine
and torchao use for the two backward GEMMs) runs at :func:`accumulation_share` of that rate; one left to the tensor
cores' own accumulator (the forward's fast accumulation) at the bf16-calibrated share of its 2x peak; one run by an
engine's block-scaled fp8 kernel of early 2025 (Triton's ``w8a8_block_fp8_matmul`` and ``fused_moe``) at the share of
that rate the kernel was measured at (``kernel_share``).

The achieved fraction of peak therefore rises with ``M``: a 256-token micro-batch through a 2048-wide layer
reaches a fraction of what 8k tokens do, and a card whose peak FLOPS are high for its bandwidth (L40S,
GeForce) falls further below its datasheet at a given shape. What this leaves out: tile and wave quantization
(cuBLAS picks tiles per shape; the smooth curve averages them), L2 reuse between consecutive kernels.
"""

from __future__ import annotations

import dataclasses

from .. import overheads as oh
from ..errors import GpuplanError
from ..hardware import GpuSpec


def power_limit_factor(gpu: GpuSpec) -> float:
    """Share of its rated tensor rate a card sustains when it runs at a power limit below its TDP
    (``power_limit_w``, e.g. Grand Teton's H100s at 500 of 700 W): (limit / TDP) ** POWER_CAP_EXPONENT, the clock
    the power management settles at when dynamic power grows with about the square of the clock (1 where no
    lower limit is set)."""
    if not gpu.power_limit_w or not gpu.tdp_w or gpu.power_limit_w >= gpu.tdp_w:
        return 1.0
    return (gpu.power_limit_w / gpu.tdp_w) ** oh.POWER_CAP_EXPONENT


def continuous_clock_factor(gpu: GpuSpec, dtype: str = "bf16") -> float:
    """Share of its short-loop clock a power-capped card keeps in continuous 16-bit tensor work
    (:data:`~gpuplan.overheads.CONTINUOUS_CLOCK_FACTOR`: the T4's 70 W cap), for GEMMs and fused attention alike; 1
    for fp32 and for cards without a continuous measurement."""
    if dtype in ("fp32", "tf32"):
        return 1.0
    return oh.CONTINUOUS_CLOCK_FACTOR.get(gpu.id, 1.0)


def clock_factor(gpu: GpuSpec, dtype: str = "bf16") -> float:
    """Share of its own clock a card keeps in the work: run below its TDP (:func:`power_limit_factor`) and, held by a
    low power cap, in continuous tensor work (:func:`continuous_clock_factor`). It slows every kernel of the card
    alike, so it multiplies the GEMMs' share (:func:`matmul_fraction`) and the fused attentions' alike."""
    return power_limit_factor(gpu) * continuous_clock_factor(gpu, dtype)


def full_clock_fraction(gpu: GpuSpec, dtype: str = "bf16") -> float:
    """Achievable share of the datasheet matmul peak for ``dtype`` at the card's own clock, before
    :func:`clock_factor`: the measured MAMF where published (at most the datasheet itself in a sustained run:
    :data:`~gpuplan.overheads.MATMUL_PEAK_FRACTION_SUSTAINED`), else the vendor's default, lowered for cards whose
    datasheet TFLOPS per watt exceed what their power cap sustains. A GeForce card's default is what the GeForce
    cards measured reach (:data:`~gpuplan.overheads.MATMUL_PEAK_FRACTION_GEFORCE`), not the data-center cards' range.
    fp32 on the CUDA cores (``fp32``, or ``tf32`` on a card without TF32 tensor cores) takes the card's posted fp32
    matmul rate where one is posted (:data:`~gpuplan.overheads.MATMUL_FP32_TFLOPS_POSTED`)."""
    cuda_cores = dtype == "fp32" or (dtype == "tf32" and not gpu.peak_tflops("tf32"))
    if cuda_cores and gpu.id in oh.MATMUL_FP32_TFLOPS_POSTED and gpu.peak_tflops("fp32"):
        return oh.MATMUL_FP32_TFLOPS_POSTED[gpu.id] / gpu.peak_tflops("fp32")
    if gpu.id in oh.MATMUL_PEAK_FRACTION:
        return min(oh.MATMUL_PEAK_FRACTION[gpu.id], oh.MATMUL_PEAK_FRACTION_SUSTAINED)
    if gpu.vendor != "NVIDIA":
        base = oh.MATMUL_PEAK_FRACTION_OTHER_VENDOR
    elif gpu.segment == "consumer":
        base = oh.MATMUL_PEAK_FRACTION_GEFORCE
    else:
        base = oh.MATMUL_PEAK_FRACTION_DEFAULT
    peak = gpu.peak_tflops("bf16") or gpu.peak_tflops("fp16") or 0.0
    per_watt = peak / gpu.tdp_w if gpu.tdp_w else 0.0
    if per_watt > oh.POWER_CAPPED_TFLOPS_PER_W:
        base *= (oh.POWER_CAPPED_TFLOPS_PER_W / per_watt) ** oh.POWER_CAP_EXPONENT
    return base


def matmul_fraction(gpu: GpuSpec, dtype: str = "bf16") -> float:
    """Achievable share of the datasheet matmul peak for ``dtype`` in the work: the share at the card's own clock
    (:func:`full_clock_fraction`: measured, posted or the vendor's default) times the clock it keeps
    (:func:`clock_factor`), for every card, measured or not: a card run below its TDP or held by its power cap in
    continuous work is lowered whatever its share's source."""
    return full_clock_fraction(gpu, dtype) * clock_factor(gpu, dtype)


def peak_flops(gpu: GpuSpec, dtype: str) -> float:
    """Dense datasheet FLOP/s for ``dtype``, falling back to bf16 then fp16 where the card lacks it (0 where the
    catalog has no matrix rate at all: :func:`can_time`). GeForce cards' bf16/fp16 rates in the catalog are the
    fp32-accumulate ones PyTorch's GEMMs use (half the fp16-accumulate marketing figure). fp32 runs at the card's
    fp32 (CUDA-core) rate, and TF32 where the card has TF32 tensor cores (else fp32 too: V100 and T4 have none);
    neither falls back to a 16-bit rate (issue 33: T4 fp32 was timed at its fp16 tensor-core rate)."""
    if dtype in ("fp32", "tf32"):
        return (gpu.peak_tflops(dtype) or gpu.peak_tflops("fp32") or 0.0) * 1e12
    return (gpu.peak_tflops(dtype) or gpu.peak_tflops("bf16") or gpu.peak_tflops("fp16") or 0.0) * 1e12


def can_time(gpu: GpuSpec) -> bool:
    """Whether the catalog gives ``gpu`` a dense 16-bit matrix rate to time work against (Apple's GPUs have none)."""
    return peak_flops(gpu, "bf16") > 0


def _require_rate(gpu: GpuSpec, dtype: str) -> None:
    """One sentence where the catalog has no rate for the GEMMs asked: no 16-bit matrix rate at all, or, for fp32
    and tf32 work, no fp32 rate (Gaudi 2 and 3 publish none; :func:`peak_flops` does not fall back to a 16-bit
    rate for them), which divided by zero (fuzz_s16: ``recommend --precision fp32`` and ``estimate --precision fp32
    --gpu gaudi2`` ended in a ZeroDivisionError)."""
    if not can_time(gpu):
        raise GpuplanError(f"{gpu.name} has no dense 16-bit matrix rate in gpuplan's GPU catalog, so its speed "
                           "cannot be estimated; memory answers (gpuplan fit) still work")
    if peak_flops(gpu, dtype) <= 0:
        raise GpuplanError(f"{gpu.name} has no {dtype} rate in gpuplan's GPU catalog, so a {dtype} job's speed "
                           "cannot be estimated on it; plan it in bf16 (--precision bf16-mixed), or on another card")


def bandwidth(gpu: GpuSpec) -> float:
    """Achievable memory bandwidth in bytes/s."""
    return gpu.bandwidth_gbs * 1e9 * oh.BANDWIDTH_FRACTION


def streaming_bandwidth(gpu: GpuSpec) -> float:
    """Bytes/s of kernels that stream weights or the KV cache once (decode GEMVs, paged attention): the card's
    measured figure where a kernel profile is published (:data:`~gpuplan.overheads.STREAMING_BANDWIDTH_FRACTION`),
    else :func:`bandwidth`."""
    return gpu.bandwidth_gbs * 1e9 * oh.STREAMING_BANDWIDTH_FRACTION.get(gpu.id, oh.BANDWIDTH_FRACTION)


def shape_scale(gpu: GpuSpec) -> float:
    """How much of the H200's thin-shape cost a card pays: a tile's fixed work (prologue, epilogue, the last partial
    wave) against its compute scales with what one SM multiplies per second, so a card whose SMs are slower than the
    H200's (A100: 2.9 against 7.5 dense bf16 TFLOPS per SM) pays that share of it, and none less than the A100's
    (:data:`~gpuplan.overheads.GEMM_SHAPE_SCALE_FLOOR`: GeForce cards' own rates per size show more); 1 where the SM
    count is not known or the card's SMs are faster."""
    peak = peak_flops(gpu, "bf16")
    if not gpu.sm_count or not peak:
        return 1.0
    law = min(1.0, peak / gpu.sm_count / oh.GEMM_SHAPE_REFERENCE_FLOPS_PER_SM) ** oh.GEMM_SHAPE_SM_EXPONENT
    return max(oh.GEMM_SHAPE_SCALE_FLOOR, law)


def accumulation_share(gpu: GpuSpec, dtype: str, split_accumulator: bool) -> float:
    """Share of the fast-accumulating rate an fp8 GEMM keeps with a split accumulator (its partial sums added into
    fp32 every few K steps outside the tensor cores: Transformer Engine's ``use_split_accumulator``, on for dgrad and
    wgrad, ``transformer_engine/pytorch/module/base.py`` ``_2X_ACC_DGRAD``/``_2X_ACC_WGRAD``; torchao's
    ``use_fast_accum=False`` for grad_input and grad_weight, ``torchao/float8/config.py``): the card's fp8 over its
    bf16 Maximum Achievable Matmul FLOPS share (:data:`~gpuplan.overheads.FP8_SPLIT_ACCUMULATOR_SHARE`: H100 SXM
    0.709 / 0.803 = 0.883), its generation's where the card has no row; 1 for other dtypes and fast accumulation."""
    if dtype != "fp8" or not split_accumulator:
        return 1.0
    return oh.FP8_SPLIT_ACCUMULATOR_SHARE.get(gpu.id, oh.FP8_SPLIT_ACCUMULATOR_SHARE_BY_GENERATION.get(
        gpu.generation, 1.0))


def sustained_flops(gpu: GpuSpec, dtype: str) -> float:
    """FLOP/s of dense matrix work ``gpu`` sustains at its power cap in ``dtype``
    (:data:`~gpuplan.overheads.SUSTAINED_MATMUL_TFLOPS`: AMD's Max-Achievable FLOPs, a warmed-up card at the median
    clock its power management holds under a dense GEMM), lowered as its rate is where it runs below its TDP
    (:func:`power_limit_factor`): a ceiling on any GEMM's achieved rate, so a large GEMM whose best-shape rate
    (:func:`matmul_fraction`, a short loop) is above it runs at it, and a thin or slow kernel below it keeps its own.
    Infinite for cards and dtypes without a measurement."""
    tflops = oh.SUSTAINED_MATMUL_TFLOPS.get(gpu.id, {}).get(dtype)
    return tflops * 1e12 * power_limit_factor(gpu) if tflops else float("inf")


def sustained_clock_share(gpu: GpuSpec, dtype: str = "bf16") -> float:
    """Share of its short-loop matrix rate (the datasheet times :func:`matmul_fraction`) a card keeps in continuous
    dense matrix work: :func:`sustained_flops` over it, at most 1 (1 where no sustained rate is measured). The clock
    its power management holds under dense tensor work, which slows a fused attention kernel as it does a GEMM
    (AMD's Max-Achievable FLOPs blog: "the power management system reduces the clock speed when running dense
    tensor-core logic"); MI300X bf16 708 / (1,307.4 x 0.601) = 0.901. The power limit is in both and cancels."""
    short_loop = peak_flops(gpu, dtype) * matmul_fraction(gpu, dtype)
    return min(1.0, sustained_flops(gpu, dtype) / short_loop) if short_loop else 1.0


_RATES: dict[tuple[int, str, bool], tuple[GpuSpec, tuple[float, float, float, float]]] = {}


def _card_rates(gpu: GpuSpec, dtype: str, split_accumulator: bool = False) -> tuple[float, float, float, float]:
    """The card's part of every GEMM's time, worked out once per card, dtype and accumulation (a search times
    hundreds of thousands of GEMMs): achievable FLOP/s at the best shape, :func:`shape_scale`, :func:`bandwidth` and
    the :func:`sustained_flops` ceiling."""
    key = (id(gpu), dtype, split_accumulator)
    held = _RATES.get(key)
    if held is None or held[0] is not gpu:  # the id of a card that is gone may be reused
        _require_rate(gpu, dtype)
        rate = peak_flops(gpu, dtype) * matmul_fraction(gpu, dtype) * oh.GEMM_SHAPE_ASYMPTOTE.get(gpu.id, 1.0) \
            * accumulation_share(gpu, dtype, split_accumulator)
        held = _RATES[key] = (gpu, (rate, shape_scale(gpu), bandwidth(gpu), sustained_flops(gpu, dtype)))
    return held[1]


def gemm_time_s(gpu: GpuSpec, dtype: str, m: float, k: float, n: float, *, count: float = 1,
                act_bytes: float = 2.0, weight_bytes: float = 2.0, out_bytes: float | None = None,
                kernels: float | None = None, latency_s: float | None = None, bandwidth_bps: float | None = None,
                split_accumulator: bool = False, kernel_share: float = 1.0) -> float:
    """Seconds for ``count`` GEMMs of ``[m x k] @ [k x n]`` in ``dtype`` on ``gpu`` (see the module docstring),
    launched as ``kernels`` kernels (default ``count``; a grouped MoE kernel runs every expert in one) of
    ``latency_s`` fixed time each (default :data:`~gpuplan.overheads.GEMM_KERNEL_LATENCY_S`), moving their bytes
    at ``bandwidth_bps`` (default :func:`bandwidth`); the output ``out_bytes`` per element (default ``act_bytes``);
    ``split_accumulator``: an fp8 GEMM's partial sums promoted to fp32 (:func:`accumulation_share`);
    ``kernel_share``: the share of that rate the engine's own kernel reaches (an early block-scaled fp8 kernel:
    :data:`~gpuplan.overheads.BLOCK_FP8_KERNEL_SHARE`). A GEMM with a side of 0 (no rows, or a Linear(0, n) of a
    user's module) does no work: 0 s. No GEMM's compute runs faster than the card's :func:`sustained_flops`."""
    if min(m, k, n) <= 0 or count <= 0:
        return 0.0
    rate, scale, card_bandwidth, ceiling = _card_rates(gpu, dtype, split_accumulator)
    shape = 1 + scale * (oh.GEMM_SHAPE_M / max(m, oh.MMA_TILE_M) + oh.GEMM_SHAPE_K / k + oh.GEMM_SHAPE_N / n)
    compute = max(2 * m * k * n * shape / (rate * kernel_share), 2 * m * k * n / ceiling)
    out = act_bytes if out_bytes is None else out_bytes
    traffic = (m * k * act_bytes + m * n * out + k * n * weight_bytes) / (bandwidth_bps or card_bandwidth)
    p = oh.GEMM_ROOFLINE_SHARPNESS
    kernels = count if kernels is None else kernels
    latency = oh.GEMM_KERNEL_LATENCY_S if latency_s is None else latency_s
    return count * (compute**p + traffic**p) ** (1 / p) + kernels * latency


def gemm_efficiency(gpu: GpuSpec, dtype: str, m: float, k: float, n: float) -> float:
    """Achieved fraction of the datasheet peak for one such GEMM (what an MFU counter would report for it)."""
    t = gemm_time_s(gpu, dtype, m, k, n)
    return 2 * m * k * n / (peak_flops(gpu, dtype) * t) if t else 0.0


# TensorRT-LLM's quantized GEMMs: the peaks they are timed against (trtllm_gpu)
PEAK_KEYS = {"fp8": "fp8_tensor", "fp4": "fp4_tensor"}


def gemm_share(gpu: GpuSpec, dtype: str, rows: float) -> float:
    """Share of ``gpu``'s ``dtype`` peak TensorRT-LLM's quantized GEMMs of ``rows`` tokens reach, against the
    bf16-calibrated GEMM model: ``share / (1 + half_rows / rows)`` (:data:`~gpuplan.overheads.
    TRTLLM_GEMM_PEAK_SHARE`, :data:`~gpuplan.overheads.TRTLLM_GEMM_HALF_ROWS`): the faster the math, the larger
    the share of a tile's time its fixed costs (quantizing the activations, scales, prologue, epilogue) take, so
    low-precision GEMMs need more rows than bf16 ones to approach their peak."""
    share = oh.TRTLLM_GEMM_PEAK_SHARE.get(gpu.generation, {}).get(dtype, 1.0)
    return share / (1 + oh.TRTLLM_GEMM_HALF_ROWS.get(dtype, 0.0) / max(rows, 1.0))


def trtllm_gpu(gpu: GpuSpec, rows: float) -> GpuSpec:
    """``gpu`` with its FP8 and FP4 peaks scaled to what TensorRT-LLM's quantized GEMMs of ``rows`` tokens reach
    of them (:func:`gemm_share`)."""
    peaks = dict(gpu.dense_tflops)
    for dtype, key in PEAK_KEYS.items():
        if peaks.get(key):
            peaks[key] = peaks[key] * gemm_share(gpu, dtype, rows)
    return dataclasses.replace(gpu, dense_tflops=peaks)
