"""Which attention kernel a training stack runs: the speed model times attention at that kernel's efficiency on the
card (:data:`~gpuplan.overheads.ATTENTION_KERNEL_PEAK_FRACTION`), so a stack's attention is a property of its code and
of the PyTorch release under it, not one number per GPU generation.

Two classes of fused (flash) attention kernel differ on Hopper and newer cards:

- ``flash2``: kernels written for Ampere's ``mma.sync`` tensor-core instructions, which Hopper runs without its own
  asynchronous ``wgmma`` and TMA: FlashAttention-2 (the ``flash_attn`` package, transformers'
  ``attn_implementation="flash_attention_2"``), PyTorch SDPA's flash backend (FlashAttention-2's code since
  torch 2.2), and llm-foundry's Triton FlashAttention (``attn_impl: triton``, compiled by a pre-MLIR Triton that
  predates Hopper). FlashAttention-3 (Shah et al. 2024, abstract) puts FlashAttention-2 at 35 % of the H100 peak.
- ``cudnn``: cuDNN's fused flash attention, written for Hopper (``wgmma``, TMA), FlashAttention-3's class: what
  Transformer Engine's ``DotProductAttention`` runs on Hopper and newer (its ``get_attention_backend`` disables
  FlashAttention "to give FusedAttention preference on Hopper+ for performance reasons",
  NVIDIA/TransformerEngine ``transformer_engine/pytorch/attention.py``), i.e. Megatron-LM and NeMo, and PyTorch
  SDPA's cuDNN backend where the release tries it first.

PyTorch SDPA's default order on sm90/sm100 (``aten/src/ATen/native/transformers/cuda/sdp_utils.cpp``,
``priority_order`` and ``check_prefer_cudnn_attention``), by release:

- up to 2.4: flash, efficient, math; cuDNN behind ``TORCH_CUDNN_SDPA_ENABLED`` (pytorch/pytorch#128539 reverted
  #125343, which had made it the default, before 2.4);
- 2.5.0: cuDNN first on H100 ("enabled by default for all users of SDPA on H100 or newer GPUs", PyTorch 2.5
  release blog, "up to 75 % speed-up over FlashAttentionV2");
- 2.5.1 to 2.8: cuDNN last, opt-in (pytorch/pytorch#138522, cherry-picked onto release/2.5 after the 2.5.0 bugs
  of #138649);
- 2.9: cuDNN first on sm90 and sm100 again (pytorch/pytorch#162073, "for 2.9");
- 2.10: cuDNN first only with a runtime cuDNN above 9.15.0 (pytorch/pytorch#171627, cherry-picked as #171895, for
  #169849), which the 2.10 wheels do not bundle: flash first;
- 2.11 and later: the wheels' cuDNN passes that gate (2.11.0+cu128 ships cuDNN 9.19.0: pytorch/pytorch#193893,
  whose unpinned SDPA runs cuDNN; huggingface/transformers#48163): cuDNN first.

On Ampere and Ada no release tries cuDNN first, and both classes run at the generation's one rate. torchtitan calls
SDPA as PyTorch orders it until May 2025 (its December 2024 benchmarks: flash on H100: their rows say
``attention: flash``), then pins flash first except on sm100 (pytorch/torchtitan#1196: ``attention: flash``), and
from October 2025 cuDNN first on every card (pytorch/torchtitan#1776: ``attention: sdpa`` on a current torch).
"""

from __future__ import annotations

from ..scenario import Scenario
from ..scenario.fields import release_numbers

# PyTorch releases whose SDPA tries cuDNN's fused attention first on sm90/sm100 (the list above), as (major, minor,
# patch) ranges [first, last]; None: the current release (2.11 and later)
SDPA_CUDNN_FIRST = (((2, 5, 0), (2, 5, 0)), ((2, 9, 0), (2, 9, 99)), ((2, 11, 0), (99, 0, 0)))


def sdpa_prefers_cudnn(torch_version: str | None) -> bool:
    """Whether PyTorch SDPA's default dispatch runs cuDNN's fused attention first on Hopper/Blackwell."""
    release = release_numbers(torch_version)
    return release is None or any(first <= release <= last for first, last in SDPA_CUDNN_FIRST)


def attention_class(stack: str, s: Scenario, *, te: bool = False) -> str:
    """``cudnn`` or ``flash2`` (module docstring) for the fused attention ``stack`` runs: Transformer Engine's in
    Megatron-LM and where ``te`` (the default stack with tensor parallelism or fp8 stands for NeMo's Megatron
    stack), the ``flash_attn`` package for ``attention: flash``, and for ``attention: sdpa`` the backend
    ``s.torch_version``'s SDPA tries first. Eager attention does not use it."""
    if stack == "megatron" or te:
        return "cudnn"
    if s.attention == "sdpa" and sdpa_prefers_cudnn(s.torch_version):
        return "cudnn"
    return "flash2"
