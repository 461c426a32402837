"""``gpuplan recommend`` and ``gpuplan table``: the setups that fit, and the guide's table."""

from __future__ import annotations

import sys
from typing import Annotated

import typer
from rich.table import Table

from ..errors import GpuplanError
from ..model.report import human_count
from ..scenario import load_scenario
from .app import JsonFlag, app, err, option, out, overrides, print_json, scenario_command, short


# ---- recommend --------------------------------------------------------------------------------------
def recommend_cmd(scenario: str | None = None, as_json: bool = False, budget_usd: float | None = None,
                  deadline_hours: float | None = None, max_gpus: int = 8, gpus: str | None = None,
                  providers: str | None = None, have: list[str] | None = None, min_headroom: str = "0%",
                  objective: str = "cost", top: int = 10, any_method: bool = False, any_quant: bool = False,
                  catalog: list[str] | None = None, **fields: str | None) -> None:
    """The setups that fit the job, ranked: memory first, then communication, then cost, then headroom.
    Searches GPU type x count (1-8, multi-node for training) x strategy (single, DDP, ZeRO-2, ZeRO-3; TP for
    serving) x techniques (checkpointing, micro-batch 1 with accumulation, 8-bit AdamW; LoRA/QLoRA with
    --any-method; quantization and fp8 KV with --any-quant) x every offer. Marks the Pareto front of cost vs
    speed; when nothing fits, lists the smallest changes that would.

    Examples:
      gpuplan recommend --model llama-3.1-8b --task train --train-tokens 2e8 --any-method
      gpuplan recommend --model llama-3.1-70b --task infer --batch-size 32 --prompt-tokens 4096 --objective time
      gpuplan recommend job.yaml --have 2x3090 --budget-usd 50 --pricing any
    """
    from ..hardware import load_gpu
    from ..model.catalog import load_model
    from ..plan.recommend import Constraints, parse_have, recommend

    if objective not in ("cost", "time", "balanced"):
        raise GpuplanError(f"--objective must be cost, time or balanced, got {objective!r}")
    try:
        headroom = float(min_headroom.rstrip("%")) / (100 if min_headroom.endswith("%") or
                                                       float(min_headroom.rstrip("%")) > 1 else 1)
    except ValueError:
        raise GpuplanError(f"--min-headroom takes a percentage like 10%, got {min_headroom!r}") from None
    if not 0 <= headroom < 1:
        raise GpuplanError(f"--min-headroom must be between 0% and 100%, got {min_headroom!r}")
    s = load_scenario(scenario, overrides(fields))
    c = Constraints(budget_usd=budget_usd, deadline_hours=deadline_hours, max_gpus=max_gpus,
                    gpus=tuple(load_gpu(g).id for g in (gpus or "").split(",") if g.strip()),
                    providers=tuple(_provider(p) for p in (providers or "").split(",") if p.strip()),
                    pricing=s.pricing, have=tuple(parse_have(h) for h in have or ()), min_headroom=headroom,
                    objective=objective, top=top, any_method=any_method, any_quant=any_quant,
                    catalogs=tuple(catalog or ()))
    result = recommend(s, load_model(s.model), c)
    if as_json:
        from dataclasses import asdict

        data = asdict(result)
        for setup, raw in zip(result.setups, data["setups"], strict=True):
            raw["scenario"] = setup.scenario.model_dump()
        print_json(data)
        return
    render_recommendation(s, result)


def _provider(name: str) -> str:
    from ..errors import UnknownNameError
    from ..market.offers import load_offers

    known = sorted({o.provider for o in load_offers()})
    if name.strip() not in known:
        raise UnknownNameError("provider", name.strip(), known, f"(providers in the price catalog: "
                               f"{', '.join(known)})")
    return name.strip()


def _usd(x: float) -> str:
    return f"{x:,.0f}" if x >= 100 else f"{x:,.2f}" if x >= 1 else f"{x:.3f}"


def render_recommendation(s, result) -> None:
    for note in result.notes:
        err.print(f"[bold yellow]warning:[/] {note}")
    out.print(f"[dim]{result.evaluated:,} setups evaluated ({result.evaluated / max(result.elapsed_s, 1e-9):,.0f}/s), "
              f"{result.fitting:,} fit[/]")
    if not result.setups:
        out.print("[red]no setup fits the constraints[/]; smallest changes that would:")
        for change in result.changes:
            out.print(f"  - {change}")
        return
    train = s.task == "train" and s.train_tokens
    table = Table(title="setups that fit, best first (* Pareto front of cost vs speed)", title_justify="left",
                  padding=(0, 1))
    cols = ["#", "setup", "offer", "GiB", "tok/s"] + (["hours", "$"] if train else []) + ["$/Mtok"]
    for col in cols:
        table.add_column(col, justify="left" if col in ("setup", "offer") else "right")
    for i, x in enumerate(result.setups, 1):
        setup = f"{x.num_gpus}x {short(x.gpu_id)} " + "+".join([x.strategy, *x.techniques])
        offer = f"{x.provider} {x.pricing.replace('_', '-')}" + (" [yellow](old)[/]" if x.stale else "")
        row = [f"{i}{'*' if x.pareto else ''}", setup, offer, f"{x.device_peak_gib:.0f}/{x.capacity_gib:.0f}",
               f"{x.tokens_per_s:,.0f}"]
        if train:
            row += [f"{x.hours:,.1f}", _usd(x.usd_total)]
        table.add_row(*row, _usd(x.usd_per_million_tokens))
    out.print(table)
    for i, x in enumerate(result.setups[:3], 1):
        out.print(f"{i}. {x.num_gpus}x {x.gpu_id} ({x.offer}): {x.rationale}")
    if s.task == "train" and not s.train_tokens:
        out.print("[yellow]set --train-tokens for hours and totals; ranked by $ per million tokens[/]")


scenario_command(
    "recommend", recommend_cmd,
    *[option(name, kind, default, text, "Constraints") for name, kind, default, text in (
        ("budget_usd", float | None, None, "Most the job may cost, USD."),
        ("deadline_hours", float | None, None, "Longest the job may take, hours."),
        ("max_gpus", int, 8, "Most GPUs in a setup (above 8: several nodes)."),
        ("gpus", str | None, None, "Only these GPUs, comma-separated: h100-sxm,l40s."),
        ("providers", str | None, None, "Only these providers, comma-separated: runpod,vast."),
        ("have", list[str] | None, None, "Hardware you own, priced by power only: 2x3090 (repeatable)."),
        ("min_headroom", str, "0%", "Leave this share of GPU memory free: 10%."),
        ("objective", str, "cost", "Rank by cost, time or balanced."),
        ("top", int, 10, "Show this many setups."),
        ("any_method", bool, False, "Allow LoRA / QLoRA instead of the scenario's method."),
        ("any_quant", bool, False, "Allow quantized weights and an fp8 KV cache for serving."),
        ("catalog", list[str] | None, None, "Extra offers CSV overriding bundled prices (repeatable)."))],
    skip=("gpu", "num_gpus", "num_nodes", "tp", "pp", "strategy"))


@app.command("table")
def table_cmd(
    cheapest: Annotated[bool, typer.Option("--cheapest/--no-cheapest",
                                           help="Search the cheapest setups (about a second more).")] = True,
    catalog: Annotated[list[str] | None, typer.Option(help="Extra offers CSV overriding bundled prices.")] = None,
    markdown: Annotated[bool, typer.Option("--markdown", help="Print a Markdown table and numbered notes.")] = False,
    as_json: JsonFlag = False,
) -> None:
    """The GPU guide's model table recomputed: serving memory at bf16 / 8-bit / 4-bit with a 4k context,
    LoRA and QLoRA fine-tuning memory, the cheapest setups, and footnotes where the guide's figures are off.

    Settings: one 4,096-token sequence in transformers (8-bit = LLM.int8, 4-bit = AWQ); fine-tuning at rank 16 on
    all linear layers, micro-batch 1 x 4,096 tokens, full checkpointing. Device peak in GB (10^9 bytes, as the
    guide writes). Re-run any cell with gpuplan estimate.
    """
    from dataclasses import asdict

    from ..table import guide_table

    rows = guide_table(catalogs=tuple(catalog or ()), cheapest=cheapest)
    if as_json:
        data = []
        for r in rows:
            raw = {k: v for k, v in asdict(r).items() if k not in ("serve", "qlora")}
            for key in ("serve", "qlora"):
                best = getattr(r, key).setups[0] if getattr(r, key) and getattr(r, key).setups else None
                raw[key] = None if best is None else {
                    "gpu": best.gpu_id, "num_gpus": best.num_gpus, "strategy": best.strategy,
                    "techniques": best.techniques, "offer": best.offer, "usd_per_hour": best.usd_per_hour,
                    "device_peak_gib": best.device_peak_gib}
            data.append(raw)
        print_json(data)
        return
    gb = 2**30 / 1e9
    columns = ("model", "params", "guide says", "bf16", "8-bit", "4-bit", "LoRA", "QLoRA", "cheapest to serve bf16",
               "cheapest QLoRA")
    notes: list[str] = []
    cells = []
    for r in rows:
        marks = ""
        for note in r.notes:
            notes.append(note)
            marks += f" [{len(notes)}]"
        cells.append([r.guide.guide_name.removeprefix("DeepSeek-") + marks, human_count(r.params_total),
                      r.guide.guide_vram, *(f"{r.infer_gib[k] * gb:,.1f}" for k in ("bf16", "8-bit", "4-bit")),
                      *(f"{r.train_gib[k] * gb:,.1f}" for k in ("LoRA", "QLoRA")), _cheapest(r.serve),
                      _cheapest(r.qlora)])
    if markdown:
        right = ("params", "bf16", "8-bit", "4-bit", "LoRA", "QLoRA")
        lines = ["| " + " | ".join(columns) + " |", "|" + "|".join("---:" if c in right else "---" for c in columns)
                 + "|", *("| " + " | ".join(row) + " |" for row in cells), ""]
        lines += [f"{i}. {note}" for i, note in enumerate(notes, 1)]
        sys.stdout.write("\n".join(lines) + "\n")
        return
    table = Table(title="The guide's table, recomputed (GB = 10^9 bytes; 4k tokens; \\[n] = footnote)",
                  title_justify="left", padding=(0, 1))
    for col in columns:
        table.add_column(col, justify="left" if col in ("model", "guide says") or col.startswith("cheap") else
                         "right")
    for row in cells:
        table.add_row(*(cell.replace("[", "\\[") for cell in row))
    out.print(table)
    for i, note in enumerate(notes, 1):
        out.print(f"\\[{i}] {note}", highlight=False)


def _cheapest(rec) -> str:
    if rec is None:
        return ""
    if not rec.setups:
        return "no fit on 8 GPUs"
    x = rec.setups[0]
    return f"{x.num_gpus}x {short(x.gpu_id)} ${x.usd_per_hour:,.2f}/h {x.provider}"


