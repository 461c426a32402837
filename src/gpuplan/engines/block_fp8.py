"""The GEMM kernels a serving engine runs for a block-scaled fp8 checkpoint, by engine and release, and the share of
gpuplan's fast-accumulating fp8 rate each keeps (:func:`gpuplan.speed.gemm.gemm_time_s` ``kernel_share``).

A block-scaled checkpoint (``quantization_config.weight_block_size`` 128 x 128: DeepSeek-V3/R1, Kimi K2, the Qwen3
FP8 releases) is served as itself: w8a8 GEMMs over its fp8 weights, the activations quantized per 1 x 128 group
(:func:`fp8_block_served`). Three classes of kernel run them, each timed at a share of that rate (:func:`share`):

- ``triton``: Triton's ``w8a8_block_fp8_matmul`` and, in the first DeepSeek releases, its ``fused_moe`` with a
  ``block_shape``, which add each 128-deep K slice into an fp32 accumulator scaled by both blocks' scales without
  Hopper's warp-specialized pipelines; vLLM's CUTLASS block linears are timed alike (vLLM PR #23280's H100 table at
  N = 2,112, K = 7,168, M = 1,024-8,192: upstream CUTLASS 351-490 TFLOPS, Triton 367-407).
  ``overheads.BLOCK_FP8_KERNEL_SHARE``, 0.257 (SGLang PR #3893's H200 timing).
- ``deepgemm``: DeepGEMM's warp-specialized fp8 GEMMs (deepseek-ai/DeepGEMM ``fp8_gemm_nt``, the grouped
  ``m_grouped_fp8_gemm_nt_contiguous`` / ``_masked``) and the kernels ported from it (TensorRT-LLM's
  ``cpp/tensorrt_llm/kernels/cutlass_kernels/fp8_blockscale_gemm``, FlashInfer's TRTLLM-Gen block-scale MoE).
  ``overheads.DEEPGEMM_KERNEL_SHARE``, 0.875 (the DeepGEMM README's H800 table).
- ``flashinfer``: FlashInfer's groupwise FP8 GEMM (``flashinfer.gemm.gemm_fp8_nt_groupwise``, its TRTLLM-Gen
  backend on SM 10.x), SGLang's dense linears on B200/B300 under ``--fp8-gemm-backend flashinfer_trtllm`` (the
  scenario's ``fp8_gemm_backend``) or with DeepGEMM off (``SGL_ENABLE_JIT_DEEPGEMM=false``: ``fp8_utils.py``
  ``_dispatch_auto_backend`` takes it next, as InferenceX's dsr1_fp8_b200.sh runs). ``overheads.
  FLASHINFER_GROUPWISE_KERNEL_SHARE``, 0.314 (SGLang PR #13528's B200 timing).
- ``triton-moe``: the later releases' Triton ``fused_moe`` with tuned configs, timed against DeepGEMM's grouped GEMM
  on the same shapes (``overheads.TRITON_MOE_OVER_DEEPGEMM``, by the experts' tensor-parallel width: as fast at 8
  GPUs, about half as fast on one). vLLM PR #13932 timed vLLM's main of 2025-02-26, between 0.7.3 and 0.8.0; the
  first releases' experts keep the ``triton`` share fitted on SGLang 0.4.3's dense kernel, which their own serving
  rows were fitted and checked with (vLLM 0.7's DeepSeek rows, the early SGLang prompt factors): not reconciled.

Which runs where (:func:`kernels`; the linears first, then the routed experts):

- SGLang up to 0.4.3: Triton for both (``overheads.BLOCK_FP8_KERNELS_UNTIL``), on every vendor (on AMD compiled
  for gfx942, at ``overheads.ROCM_BLOCK_FP8_KERNEL_SHARE``: :func:`.rocm.block_fp8_share`). From 0.4.6 the
  linears run DeepGEMM on SM 9.x / 10.x (sgl-project/sglang PR #5628, 2025-04-22, turned ``ENABLE_JIT_DEEPGEMM`` on
  by default; ``python/sglang/srt/layers/quantization/fp8_utils.py`` ``_dispatch_auto_backend`` takes DeepGEMM
  first); 0.4.4-0.4.5 kept Triton unless ``SGL_ENABLE_JIT_DEEPGEMM`` was set. ``--fp8-gemm-backend`` (PR #14379,
  2025-12; ``auto`` by default) names the linears' kernel: ``flashinfer_trtllm`` runs FlashInfer's on SM 10.x,
  ``triton`` Triton's; a launch with DeepGEMM off takes one of the two (:func:`without_deepgemm`).
  The experts stay in the Triton ``fused_moe`` on Hopper at tensor parallelism (``--moe-runner-backend auto``;
  PR #18388, 2026-02: "In TP MoE it seems triton is quite efficient"); DeepEP's dispatch runs DeepGEMM's grouped
  GEMMs; on SM 10.x from 0.5.4 ``server_args.py`` picks ``flashinfer_trtllm`` for DeepSeek's fp8 MoE (PR #11816,
  2025-10-19), timed as DeepGEMM's class (no SM 10.x timing of it is published).
- vLLM up to 0.7: Triton for both (the ``BLOCK_FP8_KERNELS_UNTIL`` range). As its wheel installs it, to 0.18:
  CUTLASS linears (``apply_w8a8_block_fp8_linear``; upstream CUTLASS's from 0.11) and the tuned Triton
  ``fused_moe``.
  DeepGEMM needs the ``deep_gemm`` package, which the wheel did not carry (``tools/install_deepgemm.sh``; vLLM PR
  #25592 to bundle it closed, "This doesn't actually work"), so ``VLLM_USE_DEEP_GEMM``'s default (on from PR
  #24462, 2025-09-09) falls back there; GPUStack's runner images install vLLM 0.11.0 from the wheel
  (gpustack/runner ``pack/cuda/Dockerfile``: ``uv pip install vllm==``, no DeepGEMM). The vllm/vllm-openai images
  built DeepGEMM in (PR #21533, 2025-07) and are not modelled apart. From 0.19 the wheel bundles it (PR #37980,
  merged 2026-03-24; taken from the first release after it): DeepGEMM for the linears and the experts, but the
  experts at TP 8 in Triton (PR #29346, 2025-11-24: "DeepGEMM MoE is disabled by default when TP size is 8").
- TensorRT-LLM on SM 9.x / 10.x: DeepGEMM's class for both (its PyTorch flow's ``FP8_BLOCK_SCALES`` linears
  through ``fp8_block_scaling_gemm``, DeepGEMM by default since NVIDIA/TensorRT-LLM PR #3341, 2025-04-07; the MoE's
  grouped ``fp8_blockscale_gemm``, overheads.TRTLLM_HOPPER_GROUP_WALK_S).

Cards without DeepGEMM (NVIDIA's fp8 cards outside SM 9.x / 10.x: Ada, SM 12.x) run Triton's linears and its
tuned MoE under SGLang and vLLM; TensorRT-LLM's kernels there are not timed here. The ROCm builds after the
first releases (AITER's block-scale GEMMs and MoE) are not timed here: their linears keep the scenario's dtype.
Where the checkpoint is not block-scaled, or the scenario asks another format, none of this applies.
"""

from __future__ import annotations

from .. import overheads as oh
from ..hardware import GpuSpec
from ..model.spec import ModelSpec
from ..scenario import Scenario
from .rocm import block_fp8_share

TRITON = "triton"
DEEPGEMM = "deepgemm"
TRITON_MOE = "triton-moe"
FLASHINFER = "flashinfer"
# Releases that change the kernels (the first one carrying each change; the module docstring names the PRs)
SGLANG_DEEPGEMM_LINEARS_FROM = (0, 4, 6)
SGLANG_SM100_TRTLLM_MOE_FROM = (0, 5, 4)
VLLM_DEEPGEMM_FROM = (0, 19, 0)
# SGLang --fp8-gemm-backend -> the linears' kernel class (deep_gemm and auto: the release's own pick)
EXPLICIT_LINEARS = {"flashinfer_trtllm": FLASHINFER, "triton": TRITON}


def fp8_block_served(s: Scenario, m: ModelSpec) -> bool:
    """Whether the weights served are the model's own block-scaled fp8 checkpoint (its ``quantization_config``
    ``weight_block_size``), as ``quant: fp8`` or the checkpoint's format: the engines load it as it is
    (TensorRT-LLM as ``FP8_BLOCK_SCALES``)."""
    return s.quant in (None, "fp8") and m.shipped_format()[0].fp8_block is not None


def block_fp8_kernels(s: Scenario, m: ModelSpec, gpu: GpuSpec, engine: str,
                      version: tuple[int, int, int] | None) -> dict[str, float]:
    """:class:`~gpuplan.engines.records.Timing` fields for a block-scaled fp8 checkpoint served by ``engine`` at
    ``version`` (None: its current release): the shares of the fast fp8 rate its linears and its routed experts
    reach (:func:`kernels`, :func:`share`); none where the checkpoint is not block-scaled, the card has no fp8 or
    the engine's kernels on it are not timed."""
    if not fp8_block_served(s, m) or not gpu.supports_dtype("fp8"):
        return {}
    pair = kernels(s, gpu, engine, version)
    return {} if pair is None else shares(pair, s, gpu)


def share(kernel: str, s: Scenario, gpu: GpuSpec) -> float:
    """The share of the fast fp8 rate ``kernel`` reaches (the module docstring's classes): Triton's on ``gpu``
    (:func:`.rocm.block_fp8_share`: the gfx942 builds' own on AMD); the tuned Triton MoE's by the tensor-parallel
    width of its experts (``tp / ep``; the widest measured for wider)."""
    if kernel == TRITON:
        return block_fp8_share(gpu)
    if kernel == DEEPGEMM:
        return oh.DEEPGEMM_KERNEL_SHARE
    if kernel == FLASHINFER:
        return oh.FLASHINFER_GROUPWISE_KERNEL_SHARE
    width = max(s.tp // max(s.ep, 1), 1)
    measured = max(w for w in oh.TRITON_MOE_OVER_DEEPGEMM if w <= width)
    return oh.DEEPGEMM_KERNEL_SHARE * oh.TRITON_MOE_OVER_DEEPGEMM[measured]


def kernels(s: Scenario, gpu: GpuSpec, engine: str, version: tuple[int, int, int] | None) -> tuple[str, str] | None:
    """The kernel class of the linears and of the routed experts (the module docstring's table)."""
    early = version is not None and version <= oh.BLOCK_FP8_KERNELS_UNTIL.get(engine, (-1,))
    if early:
        return TRITON, TRITON
    if gpu.vendor != "NVIDIA":
        return None
    major = gpu.sm_major
    if major not in (9, 10):
        return (TRITON, TRITON_MOE) if engine != "trtllm" else None
    if engine == "sglang":
        return _sglang(s, major, version)
    if engine == "vllm":
        return _vllm(s, version)
    return DEEPGEMM, DEEPGEMM


def _sglang(s: Scenario, major: int, version: tuple[int, int, int] | None) -> tuple[str, str]:
    """SGLang after its first DeepSeek releases on SM 9.x / 10.x; the linears FlashInfer's where the scenario asks
    ``fp8_gemm_backend: flashinfer_trtllm`` (SM 10.x only: :meth:`.sglang.Sglang.card_refusal`), Triton's where it
    asks ``triton`` (``_dispatch_explicit_backend``: ``triton_w8a8_block_fp8_linear``)."""
    if s.fp8_gemm_backend in EXPLICIT_LINEARS:
        linears = EXPLICIT_LINEARS[s.fp8_gemm_backend]
    else:
        linears = DEEPGEMM if version is None or version >= SGLANG_DEEPGEMM_LINEARS_FROM else TRITON
    return linears, DEEPGEMM if s.moe_dispatch == "deepep" or sm100_trtllm_moe(major, version) else TRITON_MOE


def sm100_trtllm_moe(major: int, version: tuple[int, int, int] | None) -> bool:
    """SGLang's pick of FlashInfer's TRTLLM-Gen MoE for a block-fp8 checkpoint's experts on SM 10.x from 0.5.4
    (``server_args.py``, sgl-project/sglang PR #11816: ``--moe-runner-backend flashinfer_trtllm``)."""
    return major == 10 and (version is None or version >= SGLANG_SM100_TRTLLM_MOE_FROM)


def sglang_trtllm_moe(s: Scenario, m: ModelSpec, gpu: GpuSpec, version: tuple[int, int, int] | None) -> bool:
    """Whether SGLang at ``version`` (None: its current release) runs the routed experts of ``m``'s block-fp8
    checkpoint in FlashInfer's TRTLLM-Gen MoE (:func:`sm100_trtllm_moe`), without DeepEP's dispatch."""
    return (fp8_block_served(s, m) and gpu.vendor == "NVIDIA" and s.moe_dispatch != "deepep"
            and sm100_trtllm_moe(gpu.sm_major, version))


def _vllm(s: Scenario, version: tuple[int, int, int] | None) -> tuple[str, str]:
    """vLLM after 0.7 on SM 9.x / 10.x, as its wheel installs it."""
    if version is not None and version < VLLM_DEEPGEMM_FROM:
        return TRITON, TRITON_MOE
    return DEEPGEMM, TRITON_MOE if s.tp == 8 else DEEPGEMM


def without_deepgemm(s: Scenario, gpu: GpuSpec, engine: str,
                     version: tuple[int, int, int] | None) -> tuple[str, str] | None:
    """The kernel classes (linears, routed experts) of a launch with DeepGEMM turned off, where the plan times
    DeepGEMM's linears as the engine's own pick; None elsewhere (the engine's kernels are not DeepGEMM's, or the
    scenario names SGLang's ``fp8_gemm_backend``, which such a launch follows).

    - SGLang (``SGL_ENABLE_JIT_DEEPGEMM=false``, ``SGLANG_ENABLE_JIT_DEEPGEMM=0`` in later releases):
      ``fp8_utils.py`` ``_dispatch_auto_backend`` takes DeepGEMM first, then FlashInfer's groupwise GEMM on
      Blackwell (its TRTLLM-Gen backend on SM 10.x), then Triton's ``w8a8_block_fp8_matmul`` on Hopper (CUTLASS only
      on SM 12.x): as ``fp8_gemm_backend`` ``flashinfer_trtllm`` or ``triton`` times them. The experts keep their
      kernels (FlashInfer's TRTLLM-Gen MoE on SM 10.x, the Triton ``fused_moe`` at tensor parallelism on Hopper).
    - vLLM from 0.19 (``VLLM_USE_DEEP_GEMM=0``): the kernels its wheel ran before it bundled DeepGEMM, CUTLASS's
      block-FP8 linears (timed in the ``triton`` class) and the Triton ``fused_moe``."""
    if engine not in ("sglang", "vllm") or s.fp8_gemm_backend not in (None, "auto"):
        return None
    pair = kernels(s, gpu, engine, version)
    if pair is None or pair[0] != DEEPGEMM:
        return None
    if engine == "vllm":
        return TRITON, TRITON_MOE
    blackwell = gpu.sm_major == 10
    return FLASHINFER if blackwell else TRITON, pair[1]


def shares(pair: tuple[str, str], s: Scenario, gpu: GpuSpec) -> dict[str, float]:
    """:class:`~gpuplan.engines.records.Timing` fields of a (linears, experts) kernel pair (:func:`share`)."""
    return {"block_fp8_share": share(pair[0], s, gpu), "block_fp8_expert_share": share(pair[1], s, gpu)}
