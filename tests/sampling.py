"""The heavy checks (architecture sweeps, fuzzing, simulation matrices) are sampled per run, so that the default
``pytest -q`` fits a 2-core machine, and every item is still checked over a few runs.

The items of a sampled check are dealt, in their sorted order, into ``parts`` parts; a run checks part
``round % parts``, where the round is ``GPUPLAN_SWEEP_SEED`` (an integer) or else today's date (days since
0001-01-01), so that ``parts`` consecutive days (or seeds) check every item exactly once. Fuzzing draws its cases
from the same round. ``GPUPLAN_SWEEP=all`` checks every item, and fuzzes at full size, in one run. The header and
the last line of every run say which round it ran and how to reproduce it.
"""

from __future__ import annotations

import datetime as dt
import os
from collections.abc import Iterable, Sequence
from typing import TypeVar

T = TypeVar("T")


def every_item() -> bool:
    """Whether this run checks every item (``GPUPLAN_SWEEP=all``)."""
    return os.environ.get("GPUPLAN_SWEEP", "").strip().lower() == "all"


def sweep_round() -> int:
    """This run's round: ``GPUPLAN_SWEEP_SEED``, else today's date as a day number."""
    seed = os.environ.get("GPUPLAN_SWEEP_SEED", "").strip()
    return int(seed) if seed else dt.date.today().toordinal()


def part_of(items: Sequence[T], parts: int, always: Iterable[T] = ()) -> list[T]:
    """This run's part of ``items`` (every ``parts``-th in sorted order, starting at ``round % parts``), plus
    ``always`` (items a check needs every run), in the order of ``items``; every item when
    :func:`every_item`."""
    if every_item() or parts <= 1:
        return list(items)
    start = sweep_round() % parts
    ordered = sorted(range(len(items)), key=lambda i: str(items[i]))
    chosen = {i for rank, i in enumerate(ordered) if rank % parts == start}
    keep = set(always)
    return [item for i, item in enumerate(items) if i in chosen or item in keep]


def header() -> str:
    """The line a run prints first: which part of the sampled checks it runs, and how to run them all."""
    fuzz = os.environ.get("GPUPLAN_FUZZ_SEED", "").strip()
    seed = f"; fuzzing seed {fuzz} (GPUPLAN_FUZZ_SEED)" if fuzz else ""  # else the fuzzing follows the round
    if every_item():
        return f"gpuplan sampled checks: every item (GPUPLAN_SWEEP=all){seed}"
    return (f"gpuplan sampled checks: round {sweep_round()} (GPUPLAN_SWEEP_SEED={sweep_round()} reproduces it; "
            f"GPUPLAN_SWEEP=all runs every item){seed}")
