"""The day answers are made on: today, or the ISO date in ``GPUPLAN_TODAY`` to repeat an answer as of that day.

Prices age (an offer older than ``max_price_age_days`` leaves the ranking; one older than 30 days is flagged stale),
so the same command gives other offers on another day. Pinning the day makes an answer reproducible: the golden
answers of the test suite run as of the day they were recorded.
"""

from __future__ import annotations

import datetime as dt
import os

from .errors import GpuplanError


def today() -> dt.date:
    """``GPUPLAN_TODAY`` when set (``2026-11-28``), else the calendar's today."""
    pinned = os.environ.get("GPUPLAN_TODAY", "").strip()
    if not pinned:
        return dt.date.today()
    try:
        return dt.date.fromisoformat(pinned)
    except ValueError:
        raise GpuplanError(f"GPUPLAN_TODAY must be a date like 2026-11-28, got {pinned[:40]!r}") from None
