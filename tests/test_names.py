"""One word, one idea, for the words of the road to the Plan (session 30's architecture walk, after review 2's
"One word, many ideas"): ``resolve`` is the resolver (``plan/resolve.py``), ``fit`` what fits the user's cards
(``gpuplan.fit``). The stack's fills were a second ``resolve`` (``scenario/stacks.py``, now ``stack_fills``) and the
serving calibration's curve fit a second ``fit`` (``serving/calibrate.py``, now ``fit_corrections``)."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "src" / "gpuplan"
ONE_HOME = {"resolve": ["plan/resolve.py"], "fit": ["api/searches.py"]}


def _homes(name: str) -> list[str]:
    """The modules of the package that define a module-level function ``name``."""
    return sorted(str(p.relative_to(PACKAGE)) for p in PACKAGE.rglob("*.py")
                  if any(isinstance(n, ast.FunctionDef) and n.name == name
                         for n in ast.parse(p.read_text(encoding="utf-8")).body))


def test_each_word_of_the_road_names_one_function():
    assert {name: _homes(name) for name in ONE_HOME} == ONE_HOME

