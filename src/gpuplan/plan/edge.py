"""The edge of what fits a card: the largest n (a batch, a context) whose scenario fits, found by probes that aim
where the peaks say the edge is (:func:`largest`; bench/results/startup.md, session 6), each probe a memory-only plan
of the changed scenario (:func:`fits_with`). The advice's largest batch and context (:mod:`.advice`) and the room a
combination of fixes leaves (:mod:`.fixes`) are found here.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable
from typing import Any

from ..errors import GpuplanError
from ..model.spec import ModelSpec
from ..scenario import Scenario
from .plan import probe

BATCH_LIMIT = 4096  # the largest batch an LLM's search tries (a module's: MODULE_BATCH_LIMIT)
MODULE_BATCH_LIMIT = 1024  # a diffusion pipeline's or encoder's, each probe a plan of the pipeline


def batch_fields(batch: int | None, limit: float = BATCH_LIMIT) -> dict[str, Any]:
    """The largest batch a memory report (or a fit row, a combination) gives, and whether it is the search's
    ``limit``: every batch up to it fits and none above was tried, so the true largest is that or more
    (``max_batch_size_capped``; gpt2 on an H200 holds far more than 4,096)."""
    return {"max_batch_size": batch, "max_batch_size_capped": batch is not None and batch >= limit}


def largest(at: Callable[[int], tuple[bool, float]], hi: int, capacity: float) -> int | None:
    """Largest n in [1, hi] that fits, assuming fitting is monotone (True then False); None if 1 does not fit.
    ``at(n)``: (fits, device peak in GiB) of the scenario at n. The answer is bisection's, in fewer probes: the next
    n is where the line through the last two peaks seen meets ``capacity`` (the card's usable GiB; the peak grows
    about linearly in the batch and the context, so an aim lands on the edge or next to it, and the probe beside
    it closes the interval), kept inside the interval still open. After three aims in a row that did not halve the
    interval comes a halving, so the search takes at most about four times bisection's probes (where the peak does
    not move with n, as an engine's preallocated pool, every step is a halving: bisection itself)."""
    ok, peak = at(1)
    if not ok:
        return None
    lo, seen, misses = 1, [(1, peak)], 0
    while lo < hi:
        aim = _aim(seen, capacity, lo, hi) if misses < 3 else None
        n, width = aim or (lo + hi + 1) // 2, hi - lo
        ok, peak = at(n)
        if math.isfinite(peak):
            seen.append((n, peak))
        lo, hi = (n, hi) if ok else (lo, n - 1)
        misses = misses + 1 if aim and 2 * (hi - lo) > width else 0
    return lo


def _aim(seen: list[tuple[int, float]], capacity: float, lo: int, hi: int) -> int | None:
    """The n in (lo, hi] where the line through the last two peaks of ``seen`` reaches ``capacity`` (the largest
    n on the line's near side of it), or None when the peaks seen do not all rise with n: then the peak is no guide
    (llama.cpp moves layers to the CPU as the context grows, and whether it fits can turn more than once), and the
    search is bisection, which gives the answer it always gave."""
    ordered = sorted(seen)
    if len(seen) < 2 or any(b <= a for (_, a), (_, b) in itertools.pairwise(ordered)):
        return None
    (n1, p1), (n2, p2) = seen[-2:]
    slope = (p2 - p1) / (n2 - n1)
    if not slope > 0 or not math.isfinite(capacity):
        return None
    n = n1 + (capacity - p1) / slope
    return min(max(math.floor(n), lo + 1), hi) if math.isfinite(n) else None


def fits_with(s: Scenario, m: ModelSpec, change: dict[str, Any]) -> tuple[bool, float]:
    """Whether ``s`` with ``change`` fits, and its device peak in GiB ((False, inf) when the change is refused)."""
    try:
        return probe(s.model_copy(update=change), m)
    except GpuplanError:
        return False, math.inf
