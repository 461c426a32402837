"""The memory breakdown every estimator returns: bytes per GPU by part, at three levels.

- ``allocated``: live tensors (``torch.cuda.max_memory_allocated``), counted from shapes;
- ``reserved``: + the caching allocator's slack (``max_memory_reserved``), see :mod:`gpuplan.overheads`;
- ``device``: + CUDA context, cuBLAS workspace and NCCL buffers (what nvidia-smi shows).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .. import overheads as oh
from ..scenario import Scenario
from ..scenario.fields import release_numbers

GIB = 2**30


@dataclass(kw_only=True)
class Estimate:
    """Bytes per GPU at the peak phase, by part; ``other`` holds named extras. Parts add up to allocated."""

    weights: float = 0.0
    gradients: float = 0.0
    optimizer: float = 0.0
    activations: float = 0.0
    kv_cache: float = 0.0
    other: dict[str, float] = field(default_factory=dict)
    peak_phase: str = ""
    phases: dict[str, float] = field(default_factory=dict)
    cpu: float = 0.0
    slack: float = oh.ALLOCATOR_SLACK_TRAIN
    outside_allocator: dict[str, float] = field(default_factory=dict)  # counted at device level only
    managed: dict[str, float] = field(default_factory=dict)  # CUDA managed memory (paged optimizers): device level
    preallocated: float | None = None  # vLLM: the device level is its budget, whatever the tensors (never below
    # the tensors themselves: weights larger than the budget do not load, they do not shrink)
    fragmentation: float = 0.0  # reserved beyond the slack: blocks the allocator holds but cannot reuse
    extra: dict[str, object] = field(default_factory=dict)
    assumptions: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    @property
    def allocated(self) -> float:
        return self.weights + self.gradients + self.optimizer + self.activations + self.kv_cache + sum(
            self.other.values())

    @property
    def reserved(self) -> float:
        if self.preallocated is not None:
            return max(self.preallocated, self.allocated)
        return self.allocated * (1 + self.slack) + self.fragmentation

    @property
    def device(self) -> float:
        return self.reserved + sum(self.managed.values()) + sum(self.outside_allocator.values())


def device_overheads(s: Scenario, generation: str | None, memory_gib: float | None = None) -> dict[str, float]:
    """Memory outside PyTorch's allocator: CUDA context, NCCL buffers when several GPUs talk, and the desktop when
    the card drives a screen (``s.display``: :data:`~gpuplan.overheads.DISPLAY_GIB`, on Windows more on a card of
    over 15 GiB, ``memory_gib``). Apple silicon runs Metal, with none of them (its wired-memory limit is in the
    card's usable memory)."""
    if generation == "Apple":
        return {}
    out = {"CUDA context": cuda_context_gib(s, generation) * GIB}
    if s.world_size > 1:
        out["NCCL buffers"] = oh.NCCL_GIB * GIB
    if s.display != "none":
        out[f"desktop ({s.display})"] = desktop_gib(s, memory_gib) * GIB
    return out


def cuda_context_gib(s: Scenario, generation: str | None) -> float:
    """The CUDA context a PyTorch process makes on a card of ``generation``: every kernel loaded where
    ``s.torch_version`` predates lazy module loading (:data:`~gpuplan.overheads.CUDA_CONTEXT_EAGER_LOADING_GIB`),
    else the generation's lazily loaded one (:data:`~gpuplan.overheads.CUDA_CONTEXT_GIB`)."""
    release = release_numbers(s.torch_version)
    since = release_numbers(oh.TORCH_LAZY_LOADING_SINCE)
    if release is not None and since is not None and release < since:
        return oh.CUDA_CONTEXT_EAGER_LOADING_GIB
    return oh.CUDA_CONTEXT_GIB.get(generation or "", oh.CUDA_CONTEXT_DEFAULT_GIB)


def desktop_gib(s: Scenario, memory_gib: float | None) -> float:
    """GiB a desktop holds on the card that drives it (``s.display``; 0 for none): :func:`display_gib`."""
    return display_gib(s.display, memory_gib)


def display_gib(display: str, memory_gib: float | None) -> float:
    """GiB a ``display`` desktop (none, linux, windows) holds on a card of ``memory_gib``: :data:`~gpuplan.overheads.
    DISPLAY_GIB`, on Windows 100 MiB more on a card of over 15 GiB, as ComfyUI reserves."""
    if display == "none":
        return 0.0
    large = display == "windows" and (memory_gib or 0) > 15
    return oh.DISPLAY_GIB[display] + (oh.DISPLAY_WINDOWS_LARGE_CARD_GIB if large else 0.0)

