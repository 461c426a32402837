"""Count how often functions of the package run while a block runs (a ``sys.setprofile`` hook, as the
architecture review counted the scenario's validations and the memory reports of one estimate)."""

from __future__ import annotations

import collections
import contextlib
import sys


@contextlib.contextmanager
def counting(*where: str):
    """Count the calls of each ``"path/in/gpuplan.py:function"`` named while the block runs."""
    wanted = {tuple(w.split(":")) for w in where}
    seen: collections.Counter = collections.Counter()

    def hook(frame, event, arg):
        if event == "call":
            key = (frame.f_code.co_filename.split("/gpuplan/")[-1], frame.f_code.co_name)
            if key in wanted:
                seen[":".join(key)] += 1

    previous = sys.getprofile()
    sys.setprofile(hook)
    try:
        yield seen
    finally:
        sys.setprofile(previous)


VALIDATIONS = "scenario/fields.py:_defaults"  # the scenario's cross-field validator: once per validation
MEMORY = "memory/report.py:memory_report"
