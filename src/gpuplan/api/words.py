"""The faces' words for what an answer names: a card's short name and its catalog name, a serving engine's profile.

Apart from :mod:`.catalog`, whose answers (``Prices``, ``PriceUpdate``, ``GuideTable``) are pydantic models: the
command line's ``estimate`` prints a card's short name, and importing those models would load pydantic's model
machinery on its road for that (bench/results/planschema_s31.md).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..engines import Engine


def short_gpu(gpu_id: str) -> str:
    """The shortest name that still means this card, for table cells (``nvidia-geforce-rtx-4090`` -> ``rtx-4090``)."""
    from ..hardware import short_id

    return short_id(gpu_id) if isinstance(gpu_id, str) else str(gpu_id)


def engine_profile(name: str) -> Engine:
    """A serving engine's profile (:mod:`gpuplan.engines`), for the words an answer prints of it: its label
    (``vLLM``), where its simulated runs come from, the setting that caps its running requests."""
    from ..engines import ENGINES

    return ENGINES[name]


def gpu_name(gpu: str) -> str:
    """A card's name as the catalog writes it (``rtx-4090`` -> ``GeForce RTX 4090``)."""
    from ..hardware import load_gpu

    return load_gpu(gpu).name
