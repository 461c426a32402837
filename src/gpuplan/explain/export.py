"""A plan taken away from the page: scenario.yaml (which ``gpuplan estimate`` reads), the equivalent command,
Markdown for a ticket or a chat, and the permalink's query string."""

from __future__ import annotations

import re
import shlex
from typing import Any
from urllib.parse import urlencode

import yaml
from pydantic import BaseModel

from ..plan.plan import Plan
from ..result import hours_words, usd_amount
from ..scenario import Scenario
from ..scenario.describe import flag_text
from .forms import given


class Export(BaseModel):
    yaml: str
    command: str
    markdown: str
    query: str


def _fields(s: Scenario) -> dict[str, Any]:
    """The fields the user gave, in the model's order: the stack fills the others in the same way again."""
    return given(s)


def scenario_yaml(s: Scenario) -> str:
    body = yaml.safe_dump(_fields(s), sort_keys=False, default_flow_style=False, allow_unicode=True)
    return "# gpuplan scenario: gpuplan estimate scenario.yaml (fields: design.md, 'The scenario')\n" + body


def command(s: Scenario, verb: str = "estimate") -> str:
    """``gpuplan estimate --model ... --task ...``, quoted for a POSIX shell."""
    parts = ["gpuplan", verb]
    for name, value in _fields(s).items():
        parts += [f"--{name.replace('_', '-')}", flag_text(value)]
    return shlex.join(parts)


def query(s: Scenario) -> str:
    """The permalink's query string: the fields that differ from their defaults."""
    return urlencode({k: flag_text(v) for k, v in _fields(s).items()})


def code_span(text: str) -> str:
    """``text`` as one Markdown code span, whatever backticks it holds (a model folder's name may): fenced by a run
    of backticks longer than any inside it, and padded with a space where it starts or ends with one (CommonMark
    0.31, "Code spans")."""
    fence = "`" * (max(map(len, re.findall("`+", text)), default=0) + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def markdown(s: Scenario, r: Plan, link: str = "") -> str:
    """A short report: verdict, memory table, fixes, speed and cost, assumptions."""
    mem = r.memory
    what = f"{s.task} {r.model.name}" + (f" ({s.method})" if s.task == "train" else "") + \
        (f" on {s.num_gpus}x {r.gpu.name}" if r.gpu else "")
    lines = [f"### gpuplan: {what}", ""]
    if mem.fits is not None:  # the plan's own sentence, its first words in bold
        v = r.verdict
        lines += [f"**{v.word}**{v.sentence[len(v.word):]}", ""]
    lines += ["| part | GiB |", "|---|---:|"]
    parts = [("weights", mem.weights_gib), ("gradients", mem.gradients_gib), ("optimizer states", mem.optimizer_gib),
             ("activations", mem.activations_gib), ("KV cache", mem.kv_cache_gib), *mem.other.items()]
    lines += [f"| {name} | {gib:.2f} |" for name, gib in parts if gib > 0.0005]
    lines += [f"| **allocated peak** ({mem.peak_phase}) | **{mem.allocated_peak_gib:.2f}** |",
              f"| reserved peak | {mem.reserved_peak_gib:.2f} |",
              f"| device peak (nvidia-smi) | {mem.device_peak_gib:.2f} |",
              ""]
    if r.suggestions:
        lines += ["Changes that would make it fit:", ""]
        lines += [f"- {x.change} ({'fits' if x.fits else 'still too big'}; {x.cost})" for x in r.suggestions[:8]]
        lines.append("")
    module = "work" in type(r).model_fields  # a diffusion pipeline's, an encoder-decoder's, an encoder's plan
    if module:
        from .module_speed import speed_line

        lines.append(speed_line(r))  # type: ignore[arg-type]
    elif r.speed:
        sp = r.speed
        unit = "output tokens/s" if s.task == "infer" else "tokens/s"
        lines.append(f"Speed: {sp.tokens_per_s:,.0f} {unit} ({sp.bound}-bound)")
    if r.cost and not module:
        c = r.cost
        line = f"Cost: {c.offer} at ${c.usd_per_hour:.2f}/h"
        if s.task == "train" and c.hours:
            line += f", {hours_words(c.hours)}, ${usd_amount(c.usd_total)}"
        elif c.usd_per_million_tokens is not None:
            line += f", ${c.usd_per_million_tokens:.3f} per million tokens"
        lines.append(line + f" (price {c.price_age_days} days old)")
    if r.assumptions:
        lines += ["", "Assumed:", "", *(f"- {a}" for a in r.assumptions)]
    if r.warnings:
        lines += ["", "Warnings:", "", *(f"- {w}" for w in r.warnings)]
    lines += ["", f"Reproduce: {code_span(command(s))}"]
    if link:
        lines.append(f"Plan: {link}")
    return "\n".join(lines) + "\n"


def export(s: Scenario, r: Plan, base_url: str = "") -> Export:
    q = query(s)
    link = f"{base_url}?{q}" if base_url else ""
    return Export(yaml=scenario_yaml(s), command=command(s), markdown=markdown(s, r, link), query=q)
