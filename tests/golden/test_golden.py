"""Golden answers (issue 30): every recorded case, run again, gives the same exit code, the same words and the
same numbers (relative 1e-9) as when it was recorded. A change is either a bug fixed, named in the commit that
re-records the case (``python tests/golden/record.py NAME``), or a bug introduced.

The cases are sampled per run like the other heavy checks (a quarter a run, ``tests/sampling.py``);
``GPUPLAN_SWEEP=all`` runs them all."""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from cases import cases  # noqa: E402
from record import ANSWERS, answer  # noqa: E402

CASES = cases()
PARTS = 4
WALL_CLOCK = {"elapsed_s"}  # how long the search took here: not an answer


def differences(want, got, where: str = "") -> list[str]:
    """Where ``got`` departs from ``want``: numbers beyond relative 1e-9, any other value not equal."""
    if isinstance(want, dict) and isinstance(got, dict):
        out = [f"{where}.{k}: missing" for k in want.keys() - got.keys()]
        out += [f"{where}.{k}: new" for k in got.keys() - want.keys()]
        for k in want.keys() & got.keys() - WALL_CLOCK:
            out += differences(want[k], got[k], f"{where}.{k}")
        return out
    if isinstance(want, list) and isinstance(got, list):
        if len(want) != len(got):
            return [f"{where}: {len(want)} items -> {len(got)}"]
        return [d for i, (a, b) in enumerate(zip(want, got, strict=True)) for d in differences(a, b, f"{where}[{i}]")]
    numbers = (int, float)
    if isinstance(want, numbers) and isinstance(got, numbers) and not isinstance(want, bool) \
            and not isinstance(got, bool):
        return [] if math.isclose(want, got, rel_tol=1e-9, abs_tol=1e-12) else [f"{where}: {want} -> {got}"]
    return [] if want == got else [f"{where}: {str(want)[:120]!r} -> {str(got)[:120]!r}"]


def test_every_case_is_recorded():
    recorded = {p.stem for p in ANSWERS.glob("*.json")}
    assert set(CASES) == recorded
    assert len(CASES) >= 300


@pytest.mark.sampled(PARTS)
@pytest.mark.parametrize("name", sorted(CASES))
def test_golden(name):
    want = json.loads((ANSWERS / f"{name}.json").read_text(encoding="utf-8"))
    got = json.loads(json.dumps(answer(CASES[name])))
    found = differences(want, got)
    assert not found, f"{name}: {len(found)} differences, first: " + "; ".join(found[:8])
