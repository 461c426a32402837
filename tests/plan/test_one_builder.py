"""One road to the Plan, read from the code (issue 30): a :class:`~gpuplan.plan.plan.Plan` is made in one place,
the builder's first stage (``plan/plan.py:memory_plan``), whose plans only the builder (``plan/build.py:build``)
times and prices; the searches that keep a memory-only row (recommend's pruning, capacity's pools, launch's
trials, the layout's micro-batches) call that first stage, and nothing outside ``plan/`` does: the page's fit
grid asks ``build(..., memory_only=True)``. A module's plan
(``ModulePlan``) is made by ``plan/modules.py:build_module``, which ``build`` calls. The counts of validations and
memory reports per plan are tests/plan/test_build.py and tests/plan/test_counts.py."""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "src" / "gpuplan"


def _calls() -> dict[str, list[str]]:
    """Called name (``Plan``, ``Plan.model_construct``, ``memory_plan``, ...) -> the ``path:function`` of each call
    in the package (``path:`` alone at module level)."""
    out: dict[str, list[str]] = defaultdict(list)
    for path in sorted(PACKAGE.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        where = {}
        for fn in ast.walk(tree):
            if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
                for node in ast.walk(fn):
                    where.setdefault(id(node), fn.name)  # the outermost function holding the call
        for node in ast.walk(tree):
            if isinstance(node, ast.Call):
                name = ast.unparse(node.func)
                out[name].append(f"{path.relative_to(PACKAGE)}:{where.get(id(node), '')}")
                if isinstance(node.func, ast.Attribute) and name.endswith(".said") and any(
                        k.arg in ("speed", "cost") for k in node.keywords):
                    out["said(speed/cost)"].append(f"{path.relative_to(PACKAGE)}:{where.get(id(node), '')}")
    return out


CALLS = _calls()


def test_a_plan_is_made_in_the_builders_first_stage_only():
    made = [site for name in ("Plan", "Plan.model_construct", "Plan.model_validate", "Plan.construct")
            for site in CALLS.get(name, [])]
    assert made == ["plan/plan.py:_blank"]
    assert CALLS["_blank"] == ["plan/plan.py:memory_plan"]  # every plan, whole or memory-only, starts there


def test_only_the_plan_folder_makes_memory_plans_and_only_the_builder_times_and_prices_them():
    sites = CALLS["memory_plan"]
    assert "plan/build.py:build" in sites and len(sites) >= 5  # the builder and the searches' memory-only rows
    assert [s for s in sites if not s.startswith("plan/")] == []
    # speed and cost are set on a plan by the builder (a llama.cpp split composes the builder's device plans)
    assert sorted(set(CALLS["said(speed/cost)"])) == ["plan/build.py:build", "plan/split.py:split_estimate"]


def test_a_module_plan_is_made_by_build_module_which_build_calls():
    assert CALLS["ModulePlan"] == ["plan/modules.py:build_module"]
    assert "plan/build.py:build" in CALLS["build_module"]
    outside = [s for s in CALLS["build_module"] if s != "plan/build.py:build"]
    assert all(s.startswith("plan/") for s in outside), outside  # its memory-only readings, in plan/
