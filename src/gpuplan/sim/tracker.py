"""A memory tracker for simulated steps: every storage an op creates, counted as the CUDA caching allocator
counts it, from creation to release.

``MemoryTracker`` is a ``TorchDispatchMode``: it sees each op's outputs, records each new storage once (views
share their base's storage) rounded up to 512 bytes (the allocator's ``kMinBlockSize``; c10/cuda/
CUDACachingAllocator.cpp), and releases it when the storage's Python object is collected (PyTorch keeps one
Python object per live storage). ``max_memory_allocated`` on CUDA is the same sum over the same blocks.

Each storage carries a category: the phase labels what it creates (``forward`` -> activations, ``backward`` and
``optimizer_step`` -> temporaries, ``decode``/``prefill`` -> activations), and the simulator relabels what it
recognizes: parameters and buffers, gradients as autograd accumulates them, optimizer states, the KV cache.
PyTorch's own ``MemTracker`` (torch.distributed._tools) walks module parameters' gradients and fails on
frozen parameters, which rules it out for LoRA; this one needs nothing from the modules.

Imports torch: only the simulator loads this module.
"""

from __future__ import annotations

import contextlib
import weakref
from dataclasses import dataclass, field

import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten

BLOCK = 512  # CUDA caching allocator: every block is a multiple of 512 bytes
CATEGORIES = ("parameters", "gradients", "optimizer", "activations", "kv_cache", "temporaries")
PHASE_CATEGORY = {"forward": "activations", "prefill": "activations", "decode": "activations",
                  "backward": "temporaries", "optimizer_step": "temporaries", "setup": "parameters"}


def rounded(nbytes: int) -> int:
    return -(-nbytes // BLOCK) * BLOCK if nbytes else 0


@dataclass
class PhasePeak:
    """The largest live total seen during one phase, the op that reached it and the categories then."""

    bytes: int = 0
    op: str = ""
    parts: dict[str, int] = field(default_factory=dict)


class MemoryTracker(TorchDispatchMode):
    """Live bytes by category, the peak of each phase, and a timeline of (event, live bytes, phase)."""

    def __init__(self, *, timeline: bool = False) -> None:
        super().__init__()
        self.live: dict[int, tuple[int, str]] = {}  # storage key -> (bytes, category)
        self.parts = dict.fromkeys(CATEGORIES, 0)
        self.current = 0
        self.phase = "setup"
        self.peaks: dict[str, PhasePeak] = {}
        self.keep_timeline = timeline
        self.timeline: list[tuple[int, int, str]] = []
        self._events = 0
        self._measuring = True
        self._category: str | None = None  # set by :meth:`labelled`

    # -- bookkeeping ------------------------------------------------------------------------------------
    def track(self, tensor: torch.Tensor, category: str | None = None, op: str = "") -> None:
        """Count ``tensor``'s storage if it is new (under ``category``, else the phase's)."""
        storage = tensor.untyped_storage()
        key = storage._cdata
        if key in self.live:
            return
        size = rounded(storage.nbytes())
        category = category or self._category or PHASE_CATEGORY.get(self.phase, "temporaries")
        self.live[key] = (size, category)
        self.parts[category] += size
        self.current += size
        weakref.finalize(storage, self._release, key)
        self._record(op)

    def relabel(self, tensor: torch.Tensor | None, category: str) -> None:
        """Move ``tensor``'s storage to ``category`` (counting it first if it was made outside the tracker)."""
        if tensor is None:
            return
        key = tensor.untyped_storage()._cdata
        if key not in self.live:
            self.track(tensor, category)
            return
        size, old = self.live[key]
        if old != category:
            self.live[key] = (size, category)
            self.parts[old] -= size
            self.parts[category] += size

    def offload(self, tensor: torch.Tensor) -> None:
        """Count ``tensor``'s storage as moved to pinned CPU memory: it leaves the GPU totals for good (activation
        offloading; the copy back is a new storage)."""
        key = tensor.untyped_storage()._cdata
        size, category = self.live.pop(key, (0, ""))
        if size:
            self.parts[category] -= size
            self.current -= size
            self._record("offload")

    def _release(self, key: int) -> None:
        size, category = self.live.pop(key, (0, ""))
        if size:
            self.parts[category] -= size
            self.current -= size
            self._record("")

    @contextlib.contextmanager
    def labelled(self, category: str):
        """A stretch whose new storages count as ``category`` from their making, whatever the phase: a KV cache
        layer's update, whose concatenated keys and values are the cache the moment they exist."""
        before, self._category = self._category, category
        try:
            yield
        finally:
            self._category = before

    @contextlib.contextmanager
    def unmeasured(self):
        """A stretch whose storages are counted live (they stay after it) but whose totals make no peak and no
        timeline event: the simulator's own bookkeeping, such as a KV cache filled without running the model."""
        self._measuring = False
        try:
            yield
        finally:
            self._measuring = True

    def _record(self, op: str) -> None:
        if not self._measuring:
            return
        peak = self.peaks.setdefault(self.phase, PhasePeak())
        if self.current > peak.bytes:
            peak.bytes, peak.op, peak.parts = self.current, op, dict(self.parts)
        if self.keep_timeline:
            self._events += 1
            self.timeline.append((self._events, self.current, self.phase))

    # -- the mode ---------------------------------------------------------------------------------------
    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        for value in tree_flatten(out)[0]:
            if isinstance(value, torch.Tensor):
                self.track(value, op=str(func.__name__))
        return out

    @property
    def peak(self) -> PhasePeak:
        return max(self.peaks.values(), key=lambda p: p.bytes, default=PhasePeak())

    @property
    def peak_phase(self) -> str:
        return max(self.peaks, key=lambda k: self.peaks[k].bytes, default="")
