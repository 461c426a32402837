"""One road (issue 30): every golden training and serving case's plan, explained on the page, has formulas whose
arithmetic gives the plan's own numbers. The golden cases span every stack, sharding, method, optimizer and engine,
so a formula that computes its own copy of a number (a second derivation that drifts from the plan's) shows
here."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from cases import cases  # noqa: E402
from record import ANSWERS  # noqa: E402


def fields_of(args: list[str]) -> dict[str, str] | None:
    """The scenario fields of ``gpuplan estimate --json --flag value ...`` (None for a case that names a file)."""
    flags = [a for a in args[1:] if a != "--json"]
    pairs = [(flags[i], flags[i + 1]) for i in range(0, len(flags) - 1, 2)]
    if args[0] != "estimate" or len(flags) % 2 or not all(k.startswith("--") and not v.startswith("--")
                                                         for k, v in pairs):
        return None
    return {k[2:].replace("-", "_"): v for k, v in pairs}


CASES = {name: fields for name, args in cases().items() if (fields := fields_of(args)) is not None
         and json.loads((ANSWERS / f"{name}.json").read_text(encoding="utf-8"))["code"] == 0}


def test_the_cases_are_many():
    assert sum(name.startswith("estimate-train-") for name in CASES) >= 100
    assert sum(name.startswith("estimate-infer-") for name in CASES) >= 80
    assert {"estimate-samples", "estimate-offload", "estimate-pretrain"} <= set(CASES)  # data, offload, pretraining


@pytest.mark.sampled(4)
@pytest.mark.parametrize("name", sorted(CASES))
def test_formulas_give_the_plans_numbers(name):
    import gpuplan
    from gpuplan.explain.words import explain

    plan = gpuplan.estimate(CASES[name], advise=False)
    numbers = explain(plan).numbers
    checked = 0
    for key, f in numbers.items():
        if f.computed is None:
            assert f.note, key  # it says what the number counts instead
            continue
        if key == "memory.gradients_gib" and f.computed != pytest.approx(f.value, rel=1e-3, abs=1e-6):
            # the gradients live at a forward or backward peak: a share of all of them, as the note says
            assert plan.memory.peak_phase != "optimizer_step" and f.computed > f.value and "backward" in f.note
            continue
        assert f.computed == pytest.approx(f.value, rel=1e-3, abs=1e-6), (key, f.substituted)
        checked += 1
    assert checked >= 5
