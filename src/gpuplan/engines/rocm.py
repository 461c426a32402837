"""The ROCm builds of vLLM and SGLang on AMD Instinct cards: how much longer their GPU work takes than the CUDA builds'
on the same datasheet.

The step model is calibrated on NVIDIA cards (the CUDA builds: CUDA graphs, FlashInfer /
FlashMLA, DeepGEMM, NCCL). The ROCm builds run other kernels (AITER's MLA decode and fused MoE, hipBLASLt GEMMs,
RCCL), which reach a smaller share of the card's datasheet bandwidth and rate. The share is measured, not assumed: on
InferenceX's runs of DeepSeek-R1-0528 FP8 under SGLang at TP 8 (the same client, workload and model on both vendors),
the ratio of measured to predicted decode time on MI325X over the same ratio on H200 (bench/serving/rocm_share.py,
bench/results/rocm_share.md) is :data:`gpuplan.overheads.ROCM_DECODE_SLOWDOWN` on the fitted rows; its held-out rows
check it. Dense models (no MoE layer) take their own figure, :data:`gpuplan.overheads.ROCM_DENSE_DECODE_SLOWDOWN`,
measured the same way on dstack's vLLM runs of Llama 3.1 405B FP8 on MI300X against H100
(bench/serving/rocm_dense.py, bench/results/rocm_dense.md). It scales the decode step's GPU work (weight and KV
streaming, kernel latency, element-wise work); prefill is timed from the card's measured matmul rate
(:data:`gpuplan.overheads.MATMUL_PEAK_FRACTION`: MI300X's MAMF under ROCm) and is not scaled by it. The first
DeepSeek-V3 releases (vLLM 0.7, SGLang up to 0.4.3) ran DeepSeek's block-FP8 linears and experts through Triton
kernels, which reach a smaller share of the fp8 rate on gfx942 than on the H200: :func:`block_fp8_share`, measured on
SGLang PR #3237's MI300X prefill. vLLM's ROCm build has no MoE decode runs of its own in the fit: it takes SGLang's
figure, said as borrowed; MoE models other than DeepSeek-R1 take it unmeasured, said so. Dense models on either
engine take the dense figure, measured on vLLM.
"""

from __future__ import annotations

from .. import overheads as oh
from ..hardware import GpuSpec
from ..model.spec import ModelSpec


def class_slowdown(moe: bool) -> float:
    """The ROCm builds' measured decode share for a model class: MoE (DeepSeek-R1 under SGLang) or dense (Llama 3.1
    405B under vLLM)."""
    return oh.ROCM_DECODE_SLOWDOWN if moe else oh.ROCM_DENSE_DECODE_SLOWDOWN


def slowdown(m: ModelSpec) -> float:
    """The ROCm builds' measured decode share for ``m`` (:func:`class_slowdown` of its class)."""
    return class_slowdown(m.is_moe)


def gpu_scale(gpu: GpuSpec, m: ModelSpec) -> float:
    """How many times the CUDA-calibrated decode GPU time the engine's ROCm build takes on ``gpu`` for ``m`` (1: not
    AMD)."""
    return slowdown(m) if gpu.vendor == "AMD" else 1.0


def block_fp8_share(gpu: GpuSpec) -> float:
    """The share of the fast fp8 rate the first DeepSeek-V3 releases' block-FP8 kernels reach on ``gpu``
    (:func:`gpuplan.engines.block_fp8.block_fp8_kernels`): Triton's ``w8a8_block_fp8_matmul`` and block-scaled
    ``fused_moe`` compiled for gfx942 on AMD (:data:`gpuplan.overheads.ROCM_BLOCK_FP8_KERNEL_SHARE`, measured on
    SGLang PR #3237's MI300X prefill), else the H200's (:data:`gpuplan.overheads.BLOCK_FP8_KERNEL_SHARE`)."""
    return oh.ROCM_BLOCK_FP8_KERNEL_SHARE if gpu.vendor == "AMD" else oh.BLOCK_FP8_KERNEL_SHARE


def rocm_note(engine_label: str, gpu: GpuSpec, m: ModelSpec, *, measured: bool) -> str:
    """The sentence that says how the engine's ROCm build is timed on ``gpu`` for ``m`` ("" off AMD)."""
    if gpu.vendor != "AMD":
        return ""
    if not m.is_moe:
        where = ("measured for dense models on dstack's vLLM 0.6.3 runs of Llama 3.1 405B FP8 on MI300X against H100 "
                 "(bench/results/rocm_dense.md)")
    elif measured:
        where = ("measured on InferenceX's SGLang runs of DeepSeek-R1 on MI325X against H200 (bench/results/"
                 "rocm_share.md; other MoE models take the same figure, unmeasured)")
    else:
        where = ("borrowed from SGLang's ROCm runs of DeepSeek-R1 (vLLM's own, dstack's 0.7.3 runs on MI300X, are "
                 "held out)")
    return (f"{engine_label} on ROCm ({gpu.name}): decode GPU work {slowdown(m):.2f}x the CUDA build's on "
            f"the same datasheet, {where}")
