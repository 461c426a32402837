"""The accuracy gpuplan measured, quoted from the accuracy tables it links to; those tables and the README as pages.

The page never restates an error figure of its own: it reads the accuracy tables (``gpuplan/data/accuracy.md``,
shipped with the package; the documentation site's Accuracy page includes the same file), so the numbers it shows
are the ones the linked tables print. A file that lost a table shows the link alone.
"""

from __future__ import annotations

import re
from functools import cache
from importlib import metadata, resources
from pathlib import Path

from markdown_it import MarkdownIt
from pydantic import BaseModel

WORKLOAD = {"infer": "inference", "full": "full-FT", "lora": "LoRA", "qlora": "QLoRA"}
TRAIN_METRICS = ("train_tokens_per_s", "train_tokens_per_s_per_gpu", "achieved_TFLOPs_per_GPU", "step_time_s")
DECODE_METRICS = ("decode_tokens_per_s",)


class AccuracyRow(BaseModel):
    source: str
    what: str
    n: int
    median_abs_pct: float
    worst_abs_pct: float


class Accuracy(BaseModel):
    """What gpuplan measured for one kind of number: a sentence, the rows behind it, and the tables' link."""

    summary: str
    rows: list[AccuracyRow] = []
    link: str


@cache
def accuracy_text() -> str:
    """The accuracy tables (``gpuplan/data/accuracy.md``)."""
    return resources.files("gpuplan.data").joinpath("accuracy.md").read_text(encoding="utf-8")


@cache
def readme_text() -> str:
    """README.md of the source checkout, else the long description of the installed package."""
    here = Path(__file__).resolve().parents[3]
    if (here / "pyproject.toml").is_file() and (here / "README.md").is_file():
        return (here / "README.md").read_text(encoding="utf-8")
    try:
        return metadata.metadata("gpuplan").get_payload() or ""  # type: ignore[attr-defined]
    except metadata.PackageNotFoundError:
        return ""


def slug(heading: str) -> str:
    """GitHub's heading anchor: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def _tables(text: str) -> list[tuple[str, list[dict[str, str]]]]:
    """Every Markdown table of ``text`` as (anchor of the heading above it, rows keyed by the header)."""
    tables, block, anchor = [], [], ""
    for line in [*text.splitlines(), ""]:
        if line.startswith("|"):
            block.append([cell.strip() for cell in line.strip().strip("|").split("|")])
            continue
        if len(block) > 2:
            header = block[0]
            tables.append((anchor, [dict(zip(header, row, strict=False)) for row in block[2:]]))
        block = []
        if line.startswith("#"):
            anchor = slug(line.lstrip("#"))
    return tables


def _anchor_before(text: str, position: int) -> str:
    headings = [line for line in text[:position].splitlines() if line.startswith("#")]
    return slug(headings[-1].lstrip("#")) if headings else ""


def _number(text: str) -> float | None:
    try:
        return float(text.replace(",", ""))
    except ValueError:
        return None


def _rows(table: list[dict[str, str]], what_key: str, keep) -> list[AccuracyRow]:
    out = []
    for row in table:
        n, median, worst = (_number(row.get(k, "")) for k in ("n", "median abs %", "worst abs %"))
        if n is not None and median is not None and worst is not None and keep(row):
            out.append(AccuracyRow(source=row["source"], what=row[what_key], n=int(n), median_abs_pct=median,
                                   worst_abs_pct=worst))
    return out


@cache
def _facts() -> dict:
    text = accuracy_text()
    facts: dict = {"memory": [], "speed": [], "headline": None, "oracle": None, "memory_anchor": "",
                   "speed_anchor": "", "oracle_anchor": "", "modules": {}, "modules_anchor": ""}
    for anchor, table in _tables(text):
        header = set(table[0]) if table else set()
        if {"group", "quantity", "median abs %"} <= header:
            for kind in ("memory", "speed"):
                facts["modules"][kind] = _rows(table, "group", lambda r, k=kind: r.get("quantity") == k)
            facts["modules_anchor"] = anchor
        elif {"workload", "median abs %"} <= header:
            facts["memory"], facts["memory_anchor"] = _rows(table, "workload", lambda r: True), anchor
        elif {"metric", "median abs %"} <= header:
            facts["speed"], facts["speed_anchor"] = _rows(table, "metric", lambda r: True), anchor
    head = re.search(r"Median error on fixed-length data: \*\*([\d.]+) ?%\*\* over ([\d,]+) rows", text)
    if head:
        facts["headline"] = (float(head.group(1)), int(head.group(2).replace(",", "")))
        facts["memory_anchor"] = facts["memory_anchor"] or _anchor_before(text, head.start())
    oracle = re.search(r"(\d+) cases \(.*?median \|error\| ([\d.]+) ?%, worst ([\d.]+) ?%", text, re.S)
    if oracle:
        facts["oracle"] = (int(oracle.group(1)), float(oracle.group(2)), float(oracle.group(3)))
        facts["oracle_anchor"] = _anchor_before(text, oracle.start())
    return facts


def _span(rows: list[AccuracyRow]) -> str:
    """'median |error| 5.5 % (source, n=7) to 45.9 % (source, n=31) across 4 sources'."""
    best = min(rows, key=lambda r: r.median_abs_pct)
    worst = max(rows, key=lambda r: r.median_abs_pct)
    if len(rows) == 1:
        return f"median |error| {best.median_abs_pct:.1f} % ({best.source}, n={best.n})"
    return (f"median |error| {best.median_abs_pct:.1f} % ({best.source}, n={best.n}) to {worst.median_abs_pct:.1f} % "
            f"({worst.source}, n={worst.n}) across {len(rows)} sources")


def memory_accuracy(task: str, method: str | None, part: bool = False) -> Accuracy:
    """Error of memory estimates against published measurements for this workload; for a part of the
    breakdown (weights, activations...), also the fake-tensor oracle's figure."""
    facts = _facts()
    workload = WORKLOAD["infer" if task == "infer" else method or "full"]
    rows = [r for r in facts["memory"] if r.what == workload]
    sentences = [f"{workload}: {_span(rows)}"] if rows else []
    if facts["headline"]:
        sentences.append("all fixed-length rows: median {:.1f} % over {} measurements".format(*facts["headline"]))
    if part and facts["oracle"]:
        n, median, worst = facts["oracle"]
        return Accuracy(summary=f"against the fake-tensor simulation of the real code: median {median:.1f} %, worst "
                        f"{worst:.1f} % over {n} cases; " + "; ".join(sentences), rows=rows,
                        link=f"/accuracy#{facts['oracle_anchor']}")
    return Accuracy(summary="; ".join(sentences) or "see the accuracy tables", rows=rows,
                    link=f"/accuracy#{facts['memory_anchor']}")


def speed_accuracy(task: str) -> Accuracy:
    """Error of throughput estimates against published measurements (training or decoding)."""
    metrics = DECODE_METRICS if task == "infer" else TRAIN_METRICS
    facts = _facts()
    rows = [r for r in facts["speed"] if r.what in metrics]
    if not rows:
        return Accuracy(summary="see the throughput table", link=f"/accuracy#{facts['speed_anchor']}")
    return Accuracy(summary=_span(rows), rows=rows, link=f"/accuracy#{facts['speed_anchor']}")


def serving_accuracy(band: str, low: float, high: float, engine: str) -> Accuracy:
    """A serving plan's speed against the held-out rows of its own engine and class of model: the plan's band
    (``speed.band``, from bench/results/bands.md, or "uncalibrated") and its range, ``low`` and ``high`` as
    fractions of the estimate. The throughput table's decode rows (transformers' generate on dense Qwen models) stay
    beside it for engine transformers only: they say nothing of another engine's or a MoE model's speed."""
    base = speed_accuracy("infer")
    rows = base.rows if engine == "transformers" else []
    return Accuracy(summary=f"{band}; this plan's range: {low:+.0%} to {high:+.0%} of the estimate", rows=rows,
                    link=base.link)


def module_accuracy(kind: str, group: str | None) -> Accuracy | None:
    """Error of a diffusion pipeline's, an encoder-decoder's plan (``group``: ``diffusion generation``,
    ``diffusion training``, ``encoder-decoders``) against the held-out published rows of ``bench/modules.py``, for
    its ``memory`` or ``speed``; None where the tables hold no row of that group (an encoder, a user's module)."""
    facts = _facts()
    rows = [r for r in facts["modules"].get(kind, []) if r.what == group]
    if not rows:
        return None
    r = rows[0]
    return Accuracy(summary=f"{group}, held-out published rows: median |error| {r.median_abs_pct:.1f} %, worst "
                    f"{r.worst_abs_pct:.1f} % over {r.n} ({r.source})", rows=rows,
                    link=f"/accuracy#{facts['modules_anchor']}")


def price_accuracy() -> Accuracy:
    return Accuracy(summary="prices are dated quotes, not estimates: their error is their age (shown with the "
                    "offer); the hours and $ per token inherit the speed's error",
                    link=f"/accuracy#{_facts()['speed_anchor']}")


def readme_html() -> str:
    """The README as an HTML fragment whose headings carry GitHub's anchors."""
    return markdown_html(readme_text())


def accuracy_html() -> str:
    """The accuracy tables as an HTML fragment whose headings carry GitHub's anchors (the page links to them)."""
    return markdown_html(accuracy_text())


def markdown_html(text: str) -> str:
    """Markdown as an HTML fragment: raw HTML escaped, headings with GitHub's anchors, images left out."""
    md = MarkdownIt("commonmark", {"html": False}).enable("table")
    tokens = md.parse(text)
    for i, token in enumerate(tokens):
        if token.type == "heading_open":
            token.attrSet("id", slug(tokens[i + 1].content))
        if token.children:  # images point into the repository, which the server does not serve
            token.children = [c for c in token.children if c.type != "image"]
    return md.renderer.render(tokens, md.options, {})
