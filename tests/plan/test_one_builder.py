"""One road to the Plan, read from the code (issue 30): a :class:`~gpuplan.plan.plan.Plan` is made in one place,
the builder's first stage (``plan/plan.py:memory_plan``), whose plans only the builder (``plan/build.py:build``)
times and prices; that stage is called by the builder and its own stages' helpers only (the layout's micro-batches,
the serving runs, the advice's probes): the searches that keep a memory-only row (recommend's pruning, capacity's
pools, launch's trials, fit's rows, the page's fit grid) ask ``build(..., memory_only=True)``. A module's plan
(``ModulePlan``) is made by ``plan/modules.py:build_module``, which ``build`` calls. The counts of validations and
memory reports per plan are tests/plan/test_build.py and tests/plan/test_counts.py."""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "src" / "gpuplan"


def _calls() -> dict[str, list[str]]:
    """Called name (``Plan``, ``Plan.model_construct``, ``memory_plan``, ...) -> the ``path:function`` of each call
    in the package (``path:`` alone at module level)."""
    out: dict[str, list[str]] = defaultdict(list)
    for path in sorted(PACKAGE.rglob("*.py")):
        for name, sites in _calls_in(ast.parse(path.read_text(encoding="utf-8")),
                                     str(path.relative_to(PACKAGE))).items():
            out[name] += sites
    return out


def _calls_in(tree: ast.Module, where_file: str) -> dict[str, list[str]]:
    """The calls of one module's tree, as :func:`_calls` names them."""
    out: dict[str, list[str]] = defaultdict(list)
    where = {}
    for fn in ast.walk(tree):
        if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
            for node in ast.walk(fn):
                where.setdefault(id(node), fn.name)  # the outermost function holding the call
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            name = ast.unparse(node.func)
            out[name].append(f"{where_file}:{where.get(id(node), '')}")
            if isinstance(node.func, ast.Attribute) and name.endswith(".said") and any(
                    k.arg in ("speed", "cost") for k in node.keywords):
                out["said(speed/cost)"].append(f"{where_file}:{where.get(id(node), '')}")
    return out


@pytest.fixture(scope="module")
def calls() -> dict[str, list[str]]:
    """:func:`_calls`, read once by the worker that runs this module's tests (read at import, every worker of a run
    walked the package's syntax trees while collecting, 2.5 CPU-s each)."""
    return _calls()


def test_a_plan_is_made_in_the_builders_first_stage_only(calls):
    made = [site for name in ("Plan", "Plan.model_construct", "Plan.model_validate", "Plan.construct")
            for site in calls.get(name, [])]
    assert made == ["plan/plan.py:_blank"]
    assert calls["_blank"] == ["plan/plan.py:memory_plan"]  # every plan, whole or memory-only, starts there


# The builder's first stage is called by the builder and by its own stages' helpers, which ``build`` imports and so
# cannot call it back without a circle: stage 0's layout trials, stage 3's scheduler at the longest request (for the
# serving runs and the closed-form bound recommend --rate orders its rows by),
# stage 4's advice (the pool's fixes and every probe through ``plan.py:probe``; a fix whose line states a speed or
# CPU RAM reads them off the builder's whole plan of the changed scenario, which ``build`` hands it). Every
# other module asks
# ``build(..., memory_only=True)`` (recommend's pruning, capacity's pools, launch's trials, fit's rows, compare).
BUILDERS_OWN = {
    "plan/build.py:build", "plan/build.py:_scheduler",  # stages 1 and 3
    "plan/layout.py:planned", "plan/layout.py:with_layout",  # stage 0 (the recipe's micro-batch x accumulation)
    "plan/fixes.py:_vllm_suggestions", "plan/plan.py:probe",  # stage 4 (the advice's memory-only probes)
}


def test_only_the_builder_and_its_own_stages_call_the_first_stage(calls):
    sites = set(calls["memory_plan"])
    assert sites == BUILDERS_OWN, f"a direct caller of memory_plan outside the builder: {sites - BUILDERS_OWN}"
    # the searches' memory-only rows come from the builder
    memory_only = {s for s in calls["build"] if not s.startswith("plan/build.py")}
    for search in ("plan/recommend.py", "plan/capacity.py", "plan/launch.py", "plan/capability.py",
                   "plan/pricing.py", "explain/grid.py"):
        assert any(s.startswith(search) for s in memory_only), search


def test_a_second_direct_caller_fails_the_first_stage_test():
    """The check above reads calls, not imports: a call of ``memory_plan`` added in a search (recommend's loop)
    is named as a caller outside the builder."""
    source = "from .plan import memory_plan\ndef rows(r):\n    return memory_plan(r)\n"
    found = _calls_in(ast.parse(source), "plan/recommend.py")
    assert set(found["memory_plan"]) - BUILDERS_OWN == {"plan/recommend.py:rows"}


def test_only_the_builder_times_and_prices_a_plan(calls):
    # speed and cost are set on a plan by the builder and its cost stage's helper (a loaded plan priced at what its
    # run served); a llama.cpp split composes the builder's device plans
    assert sorted(set(calls["said(speed/cost)"])) == ["plan/build.py:build", "plan/build.py:priced_on_load",
                                                       "plan/split.py:split_estimate"]


def test_a_module_plan_is_made_by_build_module_which_build_calls(calls):
    assert calls["ModulePlan"] == ["plan/modules.py:build_module"]
    assert "plan/build.py:build" in calls["build_module"]
    outside = [s for s in calls["build_module"] if s != "plan/build.py:build"]
    assert all(s.startswith("plan/") for s in outside), outside  # its memory-only readings, in plan/
