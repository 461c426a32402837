"""The documentation site builds without a warning (``mkdocs build --strict``: every page in the navigation, every
link and anchor found, the included accuracy tables there), and the README points at every page; the documents the
code cites (docs/design.md, docs/formulas.md) hold every section the code, the tests and the bench cite by name or
number. The pages' examples run in tests/test_readme.py. The build is skipped only where MkDocs is not installed
(the ``docs`` extra, which ``all`` holds: the README's test command installs it)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import yaml

from conftest import require

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"


def nav_pages() -> list[str]:
    config = yaml.safe_load((ROOT / "mkdocs.yml").read_text(encoding="utf-8"))
    return [page for item in config["nav"] for page in item.values()]


def test_the_site_builds_strictly(tmp_path):
    require("mkdocs")
    require("material")
    done = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "site")],
                          cwd=ROOT, capture_output=True, text=True, env={**os.environ, "NO_MKDOCS_2_WARNING": "1"})
    assert done.returncode == 0, done.stderr[-3000:]
    assert "WARNING" not in done.stderr, done.stderr[-3000:]
    for page in nav_pages():
        built = tmp_path / "site" / ("index.html" if page == "index.md" else f"{page[:-3]}/index.html")
        assert built.is_file(), page
    accuracy = (tmp_path / "site" / "accuracy" / "index.html").read_text(encoding="utf-8")
    assert "Accuracy against published measurements" in accuracy and "median abs %" in accuracy  # the snippet


def test_every_page_is_in_the_navigation_and_the_readme():
    pages = sorted(p.name for p in DOCS.glob("*.md"))
    assert len(pages) >= 11
    assert sorted(nav_pages()) == pages
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    linked = set(re.findall(r"\]\(docs/([\w-]+\.md)\)", readme))
    # the accuracy page is the shipped tables it includes: the README links that file, which GitHub renders
    assert linked == set(pages) - {"index.md", "accuracy.md"}
    assert "](src/gpuplan/data/accuracy.md)" in readme


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
