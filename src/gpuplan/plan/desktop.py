"""Whether a desktop would still leave room: an owned card that can drive a screen (a consumer or workstation
card with display outputs, not a data-centre card or unified memory), planned without ``display``, whose free
memory is less than a desktop holds (:func:`gpuplan.tensors.breakdown.desktop_gib`: ComfyUI's reserve for the OS
and other software, :data:`gpuplan.overheads.DISPLAY_GIB`). The plan is right for a card that drives no screen; the
owner of a card that does is told before trusting its fit (s20 rewalk: an RTX 4070 Ti SUPER ranked first by
``recommend --have`` at 15.82 of 15.92 GiB)."""

from __future__ import annotations

from ..hardware import GpuSpec, short_id
from ..scenario import Scenario
from ..tensors.breakdown import desktop_gib


def desktop_warning(s: Scenario, gpu: GpuSpec, count: int, peak_gib: float, capacity_gib: float) -> str | None:
    """The sentence for ``count`` owned ``gpu`` planned at ``peak_gib`` of ``capacity_gib`` per card without a
    desktop, when less is left than a Linux desktop holds (None otherwise, or where ``s.display`` is set)."""
    if s.display != "none" or gpu.segment == "datacenter" or gpu.unified_memory:
        return None
    linux, windows = (desktop_gib(s.model_copy(update={"display": d}), gpu.memory_gib) for d in ("linux", "windows"))
    free = capacity_gib - peak_gib
    if free >= linux:
        return None
    return (f"your {count}x {short_id(gpu.id)}: {peak_gib:.2f} of {capacity_gib:.2f} GiB leaves {max(free, 0):.2f} "
            f"GiB, less than a desktop holds on the card that drives the screen (about {linux:.2f} GiB on Linux, "
            f"{windows:.2f} on Windows, as ComfyUI reserves); if this card drives yours, --display linux or windows "
            "plans with it")
