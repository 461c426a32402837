"""The day answers are made on: today, or the ISO date in ``GPUPLAN_TODAY`` to repeat an answer as of that day.

Prices age (an offer older than ``max_price_age_days`` leaves the ranking; one older than 30 days is flagged stale),
so the same command gives other offers on another day. Pinning the day makes an answer reproducible: the golden
answers of the test suite run as of the day they were recorded.
"""

from __future__ import annotations

import contextlib
import contextvars
import datetime as dt
import os
import time
from collections.abc import Iterator

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


# ---- a deadline for the work of one request (the web page's plans) -----------------------------------------------
class Overdue(BaseException):
    """The work went past the deadline :func:`until` set: its request has been answered already. A BaseException,
    as asyncio's CancelledError is: the searches skip a candidate on a GpuplanError (and some code catches any
    Exception), and this must end the whole job."""


_DEADLINE: contextvars.ContextVar[float | None] = contextvars.ContextVar("gpuplan_deadline", default=None)


@contextlib.contextmanager
def until(deadline: float) -> Iterator[None]:
    """Work in this context stops at its next plan once ``time.monotonic()`` passes ``deadline``
    (:func:`in_time`): a thread cannot be killed, so the page's plans lane (:mod:`gpuplan.web.lanes`) ends the work
    its answered request left this way."""
    token = _DEADLINE.set(deadline)
    try:
        yield
    finally:
        _DEADLINE.reset(token)


def in_time() -> None:
    """Raise :class:`Overdue` when the context's deadline (:func:`until`) has passed; nothing without one (the
    command line and the Python API)."""
    deadline = _DEADLINE.get()
    if deadline is not None and time.monotonic() > deadline:
        raise Overdue("the work went past its deadline and was stopped")


# ---- a bound on counting one dataset's tokens (the command line's --count-timeout) -----------------------------
# the command line's default: a sample's 200,000 chat records at 6 ms each (bench/results/dataset_cache.md: 2,000
# records of 650 tokens in 12.1 s on the loaded 2-core machine) take 20 minutes
COUNT_TIMEOUT_S = 1800.0
_COUNT_SECONDS: contextvars.ContextVar[float | None] = contextvars.ContextVar("gpuplan_count_seconds", default=None)


@contextlib.contextmanager
def count_timeout(seconds: float | None) -> Iterator[None]:
    """Counting one dataset's tokens in this context (:mod:`gpuplan.dataset`) stops after ``seconds`` (None or 0:
    never) with one sentence. The command line sets it (``--count-timeout``, :data:`COUNT_TIMEOUT_S`); the Python
    API sets none, and the page's reader process has a deadline of its own (docs/security.md)."""
    token = _COUNT_SECONDS.set(seconds or None)
    try:
        yield
    finally:
        _COUNT_SECONDS.reset(token)


def count_seconds() -> float | None:
    """The seconds :func:`count_timeout` gives counting one dataset, None for no bound."""
    return _COUNT_SECONDS.get()


class CountOverdue(GpuplanError):
    """Counting one dataset went past its deadline (:func:`count_deadline`); the caller says it in words."""


def count_deadline() -> float | None:
    """The ``time.monotonic()`` by which counting a dataset begun now must end, every pass over its file included
    (:func:`count_timeout`); None: no bound."""
    seconds = count_seconds()
    return time.monotonic() + seconds if seconds else None


def count_in_time(deadline: float | None) -> None:
    """Raise :class:`CountOverdue` once ``time.monotonic()`` passes ``deadline`` (None: never)."""
    if deadline is not None and time.monotonic() > deadline:
        raise CountOverdue("counting went past its deadline")
