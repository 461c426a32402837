"""Count how often functions of the package run while a block runs (a ``sys.setprofile`` hook, as the
architecture review counted the scenario's validations and the memory reports of one estimate)."""

from __future__ import annotations

import collections
import contextlib
import sys


@contextlib.contextmanager
def counting(*where: str):
    """Count the calls of each ``"path/in/gpuplan.py:function"`` named while the block runs (from a cold memo of
    scenario copies: what an earlier test validated counts again)."""
    from gpuplan.scenario.fields import _copy

    _copy.cache_clear()
    wanted = {tuple(w.split(":")) for w in where}
    seen: collections.Counter = collections.Counter()

    def on(frame, event, arg):
        if event == "call":
            key = (frame.f_code.co_filename.split("/gpuplan/")[-1], frame.f_code.co_name)
            if key in wanted:
                seen[":".join(key)] += 1

    with _profiling(on):
        yield seen


VALIDATIONS = "scenario/fields.py:_defaults"  # the scenario's cross-field validator: once per validation
MEMORY = "memory/report.py:report_of"  # each memory report written (on a card or without one)
ESTIMATES = "memory/report.py:estimate_memory"  # each memory estimate (a search reports one on several cards)


@contextlib.contextmanager
def validations():
    """Each scenario validated while the block runs, by what was given (the fields set and their values): a
    scenario validated twice appears twice in the list."""
    given: list = []

    def on(frame, event, arg):
        if event == "return" and frame.f_code.co_name == "_defaults" and \
                frame.f_code.co_filename.endswith("scenario/fields.py") and arg is not None:
            given.append(tuple(sorted((k, repr(getattr(arg, k))) for k in arg.model_fields_set)))

    with _profiling(on):
        yield given


@contextlib.contextmanager
def _profiling(on):
    """``on(frame, event, arg)`` as the profile hook while the block runs; a hook already set keeps running after
    it (blocks nest: an outer count keeps counting)."""
    previous = sys.getprofile()

    def hook(frame, event, arg):
        on(frame, event, arg)
        if previous is not None:
            previous(frame, event, arg)

    sys.setprofile(hook)
    try:
        yield
    finally:
        sys.setprofile(previous)
