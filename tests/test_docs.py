"""The documents the code cites are in the repository (docs/design.md, docs/formulas.md), and every section the
code, the tests and the bench cite by name or number is in them."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"


def _sources() -> list[tuple[Path, str]]:
    return [(p, p.read_text(encoding="utf-8")) for folder in ("src", "tests", "bench")
            for p in (ROOT / folder).rglob("*.py")]


def test_every_cited_design_section_is_there():
    headings = {m.group(1).strip() for m in re.finditer(r"^## (.+)$", (DOCS / "design.md").read_text(), re.M)}
    cited = {(str(p.relative_to(ROOT)), " ".join(m.group(1).split())) for p, text in _sources()
             if p.name != "test_docs.py"
             for m in re.finditer(r"design\.md[,:]?\s*[\"'“]([^\"'”]{1,60})[\"'”]", text)}
    assert len(cited) >= 5  # the code cites it: stacks, sharding, engines, result, the layers test
    missing = sorted((name, section) for name, section in cited if section.strip() not in headings)
    assert missing == [], f"sections cited but not in docs/design.md: {missing}"


def test_every_cited_formulas_section_is_there():
    numbers = {int(m.group(1)) for m in re.finditer(r"^## (\d+)\. ", (DOCS / "formulas.md").read_text(), re.M)}
    cited = {(str(p.relative_to(ROOT)), int(m.group(1))) for p, text in _sources()
             for m in re.finditer(r"formulas\.md section (\d+)", text)}
    assert len(cited) >= 4
    missing = sorted((name, n) for name, n in cited if n not in numbers)
    assert missing == [], f"sections cited but not in docs/formulas.md: {missing}"
