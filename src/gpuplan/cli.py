"""The ``gpuplan`` command line (typer + rich). Bad input prints one red line and exits with code 2."""

from __future__ import annotations

import inspect
import json
import sys
import typing
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.table import Table

from . import __version__
from .catalog import bundled, load_model
from .errors import GpuplanError
from .report import human_count, model_facts, model_summary
from .scenario import load_scenario

app = typer.Typer(
    name="gpuplan",
    help="Which GPUs an LLM job needs and what it will cost: memory, speed and price, from the model's own "
    "config.json.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
out = Console()
err = Console(stderr=True)

JsonFlag = Annotated[bool, typer.Option("--json", help="Print machine-readable JSON instead of a table.")]


def _print_json(data: Any) -> None:
    sys.stdout.write(json.dumps(data, indent=2, default=str) + "\n")


def _version(value: bool) -> None:
    if value:
        out.print(f"gpuplan {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: Annotated[bool, typer.Option("--version", callback=_version, is_eager=True,
                                          help="Show the version and exit.")] = False,
) -> None:
    """gpuplan: plan GPU memory, speed and cost for LLM inference and training."""


SORT_KEYS = ("name", "params", "active", "layers", "hidden", "context", "family")


@app.command("models")
def models_cmd(
    family: Annotated[str | None, typer.Option(help="Only this family (model_type): llama, qwen2, gemma2...")] = None,
    search: Annotated[str | None, typer.Option("--search", "-s", help="Only names containing this text.")] = None,
    moe: Annotated[bool | None, typer.Option("--moe/--dense", help="Only mixture-of-experts / only dense models.",
                                             show_default=False)] = None,
    min_params: Annotated[float, typer.Option(help="At least this many parameters, in billions.")] = 0.0,
    max_params: Annotated[float | None, typer.Option(help="At most this many parameters, in billions.")] = None,
    sort: Annotated[str, typer.Option(help=f"Sort by one of: {', '.join(SORT_KEYS)}.")] = "params",
    reverse: Annotated[bool, typer.Option("--reverse", help="Largest first.")] = False,
    as_json: JsonFlag = False,
) -> None:
    """List the bundled models: parameters (total and active), layers, width, KV heads, context, dtype.

    Any of these names works wherever a model is asked for, as do Hugging Face repo ids and paths to a
    config.json. Example: gpuplan models --family qwen2 --sort params
    """
    if sort not in SORT_KEYS:
        raise GpuplanError(f"--sort must be one of {', '.join(SORT_KEYS)}, got {sort!r}")
    rows = [model_summary(load_model(repo), repo) for repo in bundled()]
    if family:
        rows = [r for r in rows if r["family"].lower() == family.lower()]
    if search:
        rows = [r for r in rows if search.lower() in r["name"].lower()]
    if moe is not None:
        rows = [r for r in rows if r["moe"] == moe]
    rows = [r for r in rows if r["params_total"] >= min_params * 1e9
            and (max_params is None or r["params_total"] <= max_params * 1e9)]
    field = {"params": "params_total", "active": "params_active", "layers": "num_layers", "hidden": "hidden_size",
             "context": "max_context"}.get(sort, sort)
    rows.sort(key=lambda r: (r[field] is None, r[field] or 0) if field not in ("name", "family")
              else str(r[field]).lower(), reverse=reverse)
    if as_json:
        _print_json(rows)
        return
    table = Table(title=f"{len(rows)} bundled models", title_justify="left")
    for col, justify in (("model", "left"), ("family", "left"), ("params", "right"), ("active", "right"),
                         ("layers", "right"), ("hidden", "right"), ("heads/kv", "right"), ("context", "right"),
                         ("dtype", "left")):
        table.add_column(col, justify=justify)
    for r in rows:
        table.add_row(r["name"], r["family"], human_count(r["params_total"]),
                      human_count(r["params_active"]) if r["moe"] else "", str(r["num_layers"]),
                      str(r["hidden_size"]), f"{r['num_heads']}/{r['num_kv_heads']}",
                      f"{r['max_context']:,}" if r["max_context"] else "?",
                      r["quantization"] or r["dtype"])
    out.print(table)


@app.command("model")
def model_cmd(
    name: Annotated[str, typer.Argument(help="Bundled name or alias, Hugging Face repo id, or path to a "
                                        "config.json / model folder.")],
    as_json: JsonFlag = False,
) -> None:
    """Show one model: parameter breakdown, layer kinds, KV-cache bytes per token, and weight sizes as
    shipped and at bf16 / int8 / int4.

    Example: gpuplan model llama-3.1-8b --json
    """
    facts = model_facts(load_model(name))
    if as_json:
        _print_json(facts)
        return
    for note in facts["notes"]:
        err.print(f"[yellow]note:[/] {note}")
    out.print(f"[bold]{facts['name']}[/]  ({facts['family']}, {facts['architecture']})")
    out.print(f"{facts['params_total']:,} parameters" + (
        f", {facts['params_active']:,} active per token ({facts['experts_per_token']} of {facts['num_experts']} "
        "experts)" if facts["num_experts"] else ""))
    parts = Table(title="parameters by part", title_justify="left")
    parts.add_column("part")
    parts.add_column("params", justify="right")
    parts.add_column("share", justify="right")
    for part, n in facts["params_breakdown"].items():
        if n:
            parts.add_row(part, f"{n:,}", f"{100 * n / facts['params_total']:.1f}%")
    out.print(parts)
    kinds = Table(title="layer kinds", title_justify="left")
    for col in ("kind", "layers", "params/layer", "KV B/token/layer (bf16)"):
        kinds.add_column(col, justify="left" if col == "kind" else "right")
    for k in facts["layer_kinds"]:
        kinds.add_row(k["kind"], str(k["count"]), f"{k['params_per_layer']:,}", f"{2 * k['kv_elements_per_token']:,}")
    out.print(kinds)
    out.print(f"KV cache per token, all layers, bf16: {facts['kv_bytes_per_token_bf16_total']:,.0f} B "
              f"({facts['kv_bytes_per_token_bf16_total'] / 1024:,.1f} KiB; sliding-window layers stop growing "
              "at their window)")
    w = facts["weight_gib"]
    out.print(f"weights as shipped ({facts['shipped_format']}): {w['as_shipped']:.2f} GiB;  bf16 {w['bf16']:.2f} GiB, "
              f"int8 {w['int8']:.2f} GiB, int4 (nf4) {w['int4']:.2f} GiB  [GiB = 2^30 B]")
    if facts["dtype_assumed"]:
        out.print("[yellow]the config does not state its dtype; the shipped size is an assumption[/]")


def _scenario_options() -> list[inspect.Parameter]:
    """One ``--field-name`` option per scenario field, typed as text and validated by the scenario model."""
    from .scenario import Scenario

    params = []
    for name, info in Scenario.model_fields.items():
        choices = typing.get_args(info.annotation)
        literals = [a for arg in choices or (info.annotation,) for a in typing.get_args(arg)
                    if isinstance(a, str)] or [a for a in choices if isinstance(a, str)]
        helptext = info.description or ""
        if literals:
            helptext = (helptext + "; " if helptext else "") + " | ".join(literals)
        if name == "lora_targets":
            helptext = "all-linear, or modules separated by commas: q_proj,v_proj"
        default = None if info.is_required() else info.default
        if default is not None:
            helptext += f" [default: {default}]"
        params.append(inspect.Parameter(
            name, inspect.Parameter.KEYWORD_ONLY, default=None,
            annotation=Annotated[str | None, typer.Option(f"--{name.replace('_', '-')}", help=helptext,
                                                          show_default=False, rich_help_panel="Scenario fields")]))
    return params


def _overrides(fields: dict[str, str | None]) -> dict[str, Any]:
    out: dict[str, Any] = {k: v for k, v in fields.items() if v is not None}
    if "lora_targets" in out and out["lora_targets"] != "all-linear":
        out["lora_targets"] = [t.strip() for t in out["lora_targets"].split(",") if t.strip()]
    return out


def estimate_cmd(scenario: str | None = None, as_json: bool = False, **fields: str | None) -> None:
    """Does it fit, and where does the memory go? Per GPU: weights, gradients, optimizer states, activations,
    KV cache and named extras; three peak levels (allocated = torch max_memory_allocated, reserved = + caching
    allocator slack, device = + CUDA context and NCCL, what nvidia-smi shows); the peak phase; and, on a named
    GPU, fit, headroom, the largest batch and context that fit, and what to change when it does not fit.

    Examples:
      gpuplan estimate --model llama-3.1-8b --task train --method qlora --gpu rtx-4090
      gpuplan estimate job.yaml --micro-batch-size 8 --json
    """
    from .estimate import estimate

    result = estimate(load_scenario(scenario, _overrides(fields)))
    if as_json:
        _print_json(result.model_dump())
        return
    render_estimate(result)


def render_estimate(result) -> None:
    mem = result.memory
    s = result.scenario
    what = (f"{s['task']} {result.model.name}" + (f" ({s['method']})" if s["task"] == "train" else "")
            + (f" on {result.gpu['name']}" if result.gpu else ""))
    table = Table(title=f"memory per GPU: {what}", title_justify="left")
    for col, justify in (("part", "left"), ("GiB", "right"), ("share", "right")):
        table.add_column(col, justify=justify)
    parts = [("weights", mem.weights_gib), ("gradients", mem.gradients_gib), ("optimizer states", mem.optimizer_gib),
             ("activations", mem.activations_gib), ("KV cache", mem.kv_cache_gib),
             *((f"other: {k}", v) for k, v in mem.other.items())]
    total = mem.allocated_peak_gib or 1.0
    for name, gib in parts:
        if gib > 0.0005:
            table.add_row(name, f"{gib:.2f}", f"{100 * gib / total:.1f}%")
    table.add_section()
    table.add_row(f"[bold]allocated peak[/] ({mem.peak_phase})", f"[bold]{mem.allocated_peak_gib:.2f}[/]", "")
    table.add_row("reserved peak (+ allocator slack)", f"{mem.reserved_peak_gib:.2f}", "")
    table.add_row("device peak (+ " + ", ".join(mem.device_overheads) + ")", f"{mem.device_peak_gib:.2f}", "")
    out.print(table)
    if mem.cpu_gib:
        out.print(f"CPU memory for offloaded states: {mem.cpu_gib:.1f} GiB")
    if mem.max_concurrency is not None:
        out.print(f"vLLM KV pool {mem.kv_cache_pool_gib:.1f} GiB: up to {mem.max_concurrency} concurrent requests "
                  f"of {s['prompt_tokens'] + s['output_tokens']:,} tokens, or {mem.max_context_tokens:,} tokens total")
    if mem.gpu_layers is not None:
        out.print(f"llama.cpp: {mem.gpu_layers} of {result.model.num_layers} layers on the GPU"
                  + (f", {mem.offloaded_layers} offloaded to the CPU" if mem.offloaded_layers else ""))
    if mem.fits is not None:
        verdict = "[green]fits[/]" if mem.fits else "[red]does not fit[/]"
        out.print(f"{verdict} on {result.gpu['name']}: {mem.device_peak_gib:.1f} of {mem.capacity_gib:.1f} GiB "
                  f"usable, headroom {mem.headroom_gib:+.1f} GiB")
        batch = "micro_batch_size" if s["task"] == "train" else "batch_size"
        length = "seq_len" if s["task"] == "train" else "prompt_tokens"
        out.print(f"largest {batch} that fits: {mem.max_batch_size or 'none'}; longest {length}: "
                  f"{mem.max_seq_len if mem.max_seq_len else 'none'}")
    if result.suggestions:
        out.print("[bold]changes that would make it fit[/] (or save the most):")
        for sug in result.suggestions[:10]:
            mark = "[green]fits[/]" if sug.fits else "[yellow]still too big[/]"
            out.print(f"  - {sug.change} ({mark}; {sug.cost})")
    if result.speed:
        sp = result.speed
        if s["task"] == "train":
            out.print(f"[bold]speed[/]: {sp['tokens_per_s']:,.0f} tokens/s, {sp['step_time_s']:.2f} s per optimizer "
                      f"step (MFU {sp['mfu_assumed']:.2f}, {sp['bound']}-bound)")
        else:
            out.print(f"[bold]speed[/]: {sp['tokens_per_s']:,.0f} output tokens/s in aggregate, "
                      f"{sp['tokens_per_s_per_sequence']:,.1f} per sequence, time to first token "
                      f"{sp['ttft_s']:.2f} s ({sp['bound']}-bound decode)")
    if result.cost:
        c = result.cost
        stale = f" [yellow](price {c['price_age_days']} days old)[/]" if c["stale"] else ""
        line = f"[bold]cost[/]: {c['offer']} {c['gpu_id']} at ${c['usd_per_hour']:.2f}/h{stale}"
        if c["usd_per_million_tokens"] is not None:
            line += f": ${c['usd_per_million_tokens']:.2f} per million output tokens"
        elif c["hours"]:
            line += f": {c['hours']:.1f} h, ${c['usd_total']:,.0f}"
        out.print(line)
        if c["spot"]:
            sp = c["spot"]
            out.print(f"  spot: checkpoint every {sp['interval_h'] * 60:.0f} min (Daly), interruptions every "
                      f"{sp['mtbi_h']:.1f} h on average: wall time x{sp['overhead']:.2f}"
                      + (f", {c['spot_multiplier']:.2f}x the on-demand cost" if c["spot_multiplier"] else ""))
        out.print(f"  [dim]price from {c['price_origin']}; `gpuplan cost` compares every offer[/]")
    for line in result.assumptions:
        out.print(f"[dim]assumed: {line}[/]")
    for line in result.warnings:
        err.print(f"[yellow]warning:[/] {line}")


estimate_cmd.__signature__ = inspect.Signature([
    inspect.Parameter("scenario", inspect.Parameter.POSITIONAL_OR_KEYWORD, default=None,
                      annotation=Annotated[str | None, typer.Argument(
                          help="Scenario YAML/JSON file; flags override it.", show_default=False)]),
    inspect.Parameter("as_json", inspect.Parameter.KEYWORD_ONLY, default=False, annotation=JsonFlag),
    *_scenario_options(),
])
app.command("estimate")(estimate_cmd)


# ---- GPUs -------------------------------------------------------------------------------------------
gpus_app = typer.Typer(help="The GPU catalog: dense TFLOPS, memory, bandwidth, NVLink, power, price.",
                       no_args_is_help=False, pretty_exceptions_enable=False)
app.add_typer(gpus_app, name="gpus")
GPU_SORT = ("memory", "bandwidth", "bf16", "fp8", "tdp", "msrp", "usd_per_gb", "usd_per_tflop", "name")


def _short(gpu_id: str) -> str:
    """nvidia-geforce-rtx-4090 -> rtx-4090: table cells stay narrow; the JSON keeps full ids."""
    return gpu_id.removeprefix("nvidia-").removeprefix("geforce-").removeprefix("amd-instinct-")


def _gpu_row(g) -> dict[str, Any]:
    bf16 = g.peak_tflops("bf16") or g.peak_tflops("fp16")
    return {"id": g.id, "name": g.name, "vendor": g.vendor, "architecture": g.architecture, "segment": g.segment,
            "memory_gib": g.memory_gib, "usable_gib": round(g.usable_gib, 2), "bandwidth_gbs": g.bandwidth_gbs,
            "bf16_tflops": bf16, "fp8_tflops": g.peak_tflops("fp8"), "fp4_tflops": g.peak_tflops("fp4"),
            "nvlink_gbs": g.nvlink_bandwidth_gbs, "tdp_w": g.tdp_w, "msrp_usd": g.msrp_usd,
            "usd_per_gb": round(g.msrp_usd / g.memory_gib, 1) if g.msrp_usd else None,
            "usd_per_tflop": round(g.msrp_usd / bf16, 1) if g.msrp_usd and bf16 else None}


@gpus_app.callback(invoke_without_command=True)
def gpus_cmd(
    ctx: typer.Context,
    vendor: Annotated[str | None, typer.Option(help="NVIDIA, AMD, Intel, Apple.")] = None,
    segment: Annotated[str | None, typer.Option(help="consumer, workstation or datacenter.")] = None,
    min_memory: Annotated[float, typer.Option(help="At least this much memory, GiB.")] = 0.0,
    nvlink: Annotated[bool, typer.Option("--nvlink", help="Only cards with NVLink.")] = False,
    sort: Annotated[str, typer.Option(help=f"Sort by: {', '.join(GPU_SORT)}.")] = "memory",
    reverse: Annotated[bool, typer.Option("--reverse", help="Largest first.")] = False,
    as_json: JsonFlag = False,
) -> None:
    """List the GPU catalog (dense TFLOPS: no 2:4 sparsity, FP32 accumulate). `gpuplan gpus compare A B` puts
    cards side by side."""
    if ctx.invoked_subcommand:
        return
    from .hardware import gpus

    if sort not in GPU_SORT:
        raise GpuplanError(f"--sort must be one of {', '.join(GPU_SORT)}, got {sort!r}")
    rows = [_gpu_row(g) for g in gpus().values()]
    rows = [r for r in rows if r["memory_gib"] >= min_memory and (not nvlink or r["nvlink_gbs"])
            and (not vendor or r["vendor"].lower() == vendor.lower())
            and (not segment or r["segment"] == segment.lower())]
    field = {"memory": "memory_gib", "bandwidth": "bandwidth_gbs", "bf16": "bf16_tflops", "fp8": "fp8_tflops",
             "tdp": "tdp_w", "msrp": "msrp_usd"}.get(sort, sort)
    rows.sort(key=lambda r: (r[field] is None, r[field] or 0) if field != "name" else (False, r["id"]),
              reverse=reverse)
    if as_json:
        _print_json(rows)
        return
    table = Table(title=f"{len(rows)} GPUs (dense TFLOPS)", title_justify="left")
    for col in ("id", "GiB", "GB/s", "bf16", "fp8", "NVLink GB/s", "TDP W", "MSRP $", "$/GB", "$/TFLOP"):
        table.add_column(col, justify="left" if col == "id" else "right")
    fmt = lambda v, spec="{:,.0f}": "" if v is None else spec.format(v)  # noqa: E731
    for r in rows:
        table.add_row(_short(r["id"]), fmt(r["memory_gib"]), fmt(r["bandwidth_gbs"]), fmt(r["bf16_tflops"], "{:,.1f}"),
                      fmt(r["fp8_tflops"], "{:,.1f}"), fmt(r["nvlink_gbs"]), fmt(r["tdp_w"]), fmt(r["msrp_usd"]),
                      fmt(r["usd_per_gb"], "{:,.1f}"), fmt(r["usd_per_tflop"], "{:,.1f}"))
    out.print(table)


@gpus_app.command("compare")
def gpus_compare(
    names: Annotated[list[str], typer.Argument(help="Two or more GPU names or ids: 4090 a6000 'rtx 6000 ada'.")],
    as_json: JsonFlag = False,
) -> None:
    """Side by side, with dense figures, and where the usual marketing numbers differ (2:4 sparsity doubles
    them; GeForce FP16 with FP16 accumulate runs at twice the FP32-accumulate rate frameworks use)."""
    from .hardware import load_gpu

    cards = [load_gpu(n) for n in names]
    rows = [_gpu_row(g) for g in cards]
    notes = {}
    for g in cards:
        half = g.dense_tflops.get("fp16_tensor_fp16acc")
        bf16 = g.peak_tflops("bf16")
        text = []
        if bf16:
            text.append(f"datasheets with 2:4 sparsity say {2 * bf16:,.0f} bf16 TFLOPS")
        if half:
            text.append(f"FP16 with FP16 accumulate {half:,.0f}, but PyTorch accumulates in FP32: {bf16:,.0f}")
        notes[g.id] = "; ".join(text)
    if as_json:
        _print_json([{**r, "marketing_note": notes[r["id"]]} for r in rows])
        return
    table = Table(title="dense figures (TFLOPS = 1e12 FLOP/s, no sparsity)", title_justify="left")
    table.add_column("")
    for g in cards:
        table.add_column(g.name, justify="right")
    labels = [("memory (GiB)", "memory_gib", "{:,.0f}"), ("usable (GiB)", "usable_gib", "{:,.1f}"),
              ("bandwidth (GB/s)", "bandwidth_gbs", "{:,.0f}"), ("bf16 dense TFLOPS", "bf16_tflops", "{:,.1f}"),
              ("fp8 dense TFLOPS", "fp8_tflops", "{:,.1f}"), ("fp4 dense TFLOPS", "fp4_tflops", "{:,.1f}"),
              ("NVLink (GB/s, both ways)", "nvlink_gbs", "{:,.0f}"), ("TDP (W)", "tdp_w", "{:,.0f}"),
              ("launch MSRP ($)", "msrp_usd", "{:,.0f}"), ("$ per GB", "usd_per_gb", "{:,.1f}"),
              ("$ per bf16 TFLOP", "usd_per_tflop", "{:,.1f}")]
    for label, key, spec in labels:
        table.add_row(label, *["-" if r[key] is None else spec.format(r[key]) for r in rows])
    out.print(table)
    for g in cards:
        if notes[g.id]:
            out.print(f"[dim]{g.name}: {notes[g.id]}[/]")


# ---- cost -------------------------------------------------------------------------------------------
def cost_cmd(scenario: str | None = None, as_json: bool = False, catalog: list[str] | None = None,
             discount: list[str] | None = None, top: int = 20, **fields: str | None) -> None:
    """What the job costs on every offer that fits it: GPUs rented, $/hour, hours (spot: with interruptions
    and Daly checkpointing) and total, or $ per million output tokens for serving. Prices are dated; rows older
    than 30 days say so.

    Examples:
      gpuplan cost --model llama-3.1-8b --task train --method lora --train-tokens 2e8
      gpuplan cost job.yaml --pricing any --catalog my-prices.csv --discount runpod=0.85
    """
    from .catalog import load_model
    from .estimate import estimate
    from .offers import load_offers
    from .pricing import compare

    s = load_scenario(scenario, _overrides(fields))
    discounts = {}
    for item in discount or []:
        provider, _, factor = item.partition("=")
        try:
            discounts[provider] = float(factor)
        except ValueError:
            raise GpuplanError(f"--discount takes provider=multiplier (runpod=0.85), got {item!r}") from None
    base = estimate(s.model_copy(update={"gpu": None}), advise=False)
    rows = compare(s, load_model(s.model), load_offers(tuple(catalog or ()), discounts),
                   base.model.params_trainable)[:top]
    if as_json:
        from dataclasses import asdict

        _print_json([{**asdict(c), "device_peak_gib": peak} for c, peak in rows])
        return
    if not rows:
        out.print("[yellow]no offer in the catalog fits this scenario[/] (try --pricing any, more GPUs, or QLoRA)")
        return
    infer = s.task == "infer"
    table = Table(title=f"{len(rows)} offers that fit, cheapest first", title_justify="left")
    cols = ["offer", "GPU", "GPUs", "$/h", "peak GiB"] + (["$/M tokens"] if infer else ["hours", "total $"]) + [
        "price age"]
    for col in cols:
        table.add_column(col, justify="left" if col in ("offer", "GPU") else "right")
    for c, peak in rows:
        age = f"{c.price_age_days} d" + (" [yellow]stale[/]" if c.stale else "")
        tail = [f"{c.usd_per_million_tokens:,.3f}"] if infer else [f"{c.hours:,.1f}", f"{c.usd_total:,.0f}"]
        table.add_row(c.offer.replace("_", "-"), _short(c.gpu_id), str(c.num_gpus), f"{c.usd_per_hour:,.2f}",
                      f"{peak:,.1f}", *tail, age)
    out.print(table)
    if not infer and not s.train_tokens:
        out.print("[yellow]set --train-tokens to get hours and totals[/]")


cost_cmd.__signature__ = inspect.Signature([
    inspect.Parameter("scenario", inspect.Parameter.POSITIONAL_OR_KEYWORD, default=None,
                      annotation=Annotated[str | None, typer.Argument(
                          help="Scenario YAML/JSON file; flags override it.", show_default=False)]),
    inspect.Parameter("as_json", inspect.Parameter.KEYWORD_ONLY, default=False, annotation=JsonFlag),
    inspect.Parameter("catalog", inspect.Parameter.KEYWORD_ONLY, default=None, annotation=Annotated[
        list[str] | None, typer.Option("--catalog", help="A CSV of offers (same columns as data/offers.csv) that "
                                       "overrides the bundled rows; repeatable.")]),
    inspect.Parameter("discount", inspect.Parameter.KEYWORD_ONLY, default=None, annotation=Annotated[
        list[str] | None, typer.Option("--discount", help="Negotiated price multiplier: provider=0.85; repeatable.")]),
    inspect.Parameter("top", inspect.Parameter.KEYWORD_ONLY, default=20, annotation=Annotated[
        int, typer.Option("--top", help="Show this many offers.")]),
    *[p for p in _scenario_options() if p.name != "gpu"],
])
app.command("cost")(cost_cmd)


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
    from .catalog import load_model
    from .hardware import load_gpu
    from .recommend import Constraints, parse_have, recommend

    if objective not in ("cost", "time", "balanced"):
        raise GpuplanError(f"--objective must be cost, time or balanced, got {objective!r}")
    try:
        headroom = float(min_headroom.rstrip("%")) / (100 if min_headroom.endswith("%") or
                                                       float(min_headroom.rstrip("%")) > 1 else 1)
    except ValueError:
        raise GpuplanError(f"--min-headroom takes a percentage like 10%, got {min_headroom!r}") from None
    if not 0 <= headroom < 1:
        raise GpuplanError(f"--min-headroom must be between 0% and 100%, got {min_headroom!r}")
    s = load_scenario(scenario, _overrides(fields))
    c = Constraints(budget_usd=budget_usd, deadline_hours=deadline_hours, max_gpus=max_gpus,
                    gpus=tuple(load_gpu(g).id for g in (gpus or "").split(",") if g.strip()),
                    providers=tuple(p.strip() for p in (providers or "").split(",") if p.strip()),
                    pricing=s.pricing, have=tuple(parse_have(h) for h in have or ()), min_headroom=headroom,
                    objective=objective, top=top, any_method=any_method, any_quant=any_quant,
                    catalogs=tuple(catalog or ()))
    result = recommend(s, load_model(s.model), c)
    if as_json:
        from dataclasses import asdict

        data = asdict(result)
        for setup, raw in zip(result.setups, data["setups"], strict=True):
            raw["scenario"] = setup.scenario.model_dump()
        _print_json(data)
        return
    render_recommendation(s, result)


def _usd(x: float) -> str:
    return f"{x:,.0f}" if x >= 100 else f"{x:,.2f}" if x >= 1 else f"{x:.3f}"


def render_recommendation(s, result) -> None:
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
        setup = f"{x.num_gpus}x {_short(x.gpu_id)} " + "+".join([x.strategy, *x.techniques])
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


recommend_cmd.__signature__ = inspect.Signature([
    inspect.Parameter("scenario", inspect.Parameter.POSITIONAL_OR_KEYWORD, default=None,
                      annotation=Annotated[str | None, typer.Argument(
                          help="Scenario YAML/JSON file; flags override it.", show_default=False)]),
    inspect.Parameter("as_json", inspect.Parameter.KEYWORD_ONLY, default=False, annotation=JsonFlag),
    *[inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=default, annotation=Annotated[
        kind, typer.Option(f"--{name.replace('_', '-')}", help=text, rich_help_panel="Constraints")])
      for name, kind, default, text in (
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
    *[p for p in _scenario_options() if p.name not in ("gpu", "num_gpus", "num_nodes", "tp", "pp", "strategy")],
])
app.command("recommend")(recommend_cmd)


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

    from .table import guide_table

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
        _print_json(data)
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
    return f"{x.num_gpus}x {_short(x.gpu_id)} ${x.usd_per_hour:,.2f}/h {x.provider}"


@app.command("buy")
def buy_cmd(
    gpu: Annotated[str, typer.Argument(help="The card to buy: 4090, a6000, 'rtx 6000 ada'...")],
    count: Annotated[int, typer.Option(help="How many cards.", min=1)] = 1,
    hours: Annotated[float, typer.Option(help="Hours of use over the horizon (e.g. 2 years at 30% = 5256).",
                                         min=1)] = 5000.0,
    usd_per_kwh: Annotated[float, typer.Option(help="Electricity price.")] = 0.15,
    pue: Annotated[float, typer.Option(help="Cooling overhead (power usage effectiveness).")] = 1.4,
    utilization: Annotated[float, typer.Option(help="Average share of TDP drawn.")] = 0.8,
    as_json: JsonFlag = False,
) -> None:
    """Buy or rent? Launch MSRP + power (TDP x utilization x PUE x $/kWh) over the hours you will use it,
    against the cheapest rental of the same card in the price catalog; prints the break-even hours."""
    from dataclasses import asdict

    from .cost import buy_vs_rent
    from .hardware import load_gpu
    from .offers import load_offers

    card = load_gpu(gpu)
    if not card.msrp_usd or not card.tdp_w:
        raise GpuplanError(f"{card.name} has no public launch price or TDP in the catalog (data-center cards are "
                           "sold through vendors): compare rentals with `gpuplan cost`")
    rentals = [o for o in load_offers() if o.gpu_id == card.id and o.pricing == "on_demand"]
    if not rentals:
        raise GpuplanError(f"no on-demand rental of {card.name} in the price catalog to compare with")
    cheapest = min(rentals, key=lambda o: o.usd_per_gpu_hour)
    b = buy_vs_rent(card.msrp_usd, card.tdp_w, count, cheapest.usd_per_gpu_hour * count, hours,
                    usd_per_kwh=usd_per_kwh, pue=pue, utilization=utilization)
    if as_json:
        _print_json({**asdict(b), "rental": cheapest.label, "gpu_id": card.id})
        return
    out.print(f"buy {count}x {card.name}: ${b.purchase_usd:,.0f} + ${b.power_usd_per_hour:.3f}/h of power "
              f"({card.tdp_w:.0f} W x {utilization:.0%} x PUE {pue} x ${usd_per_kwh}/kWh)")
    out.print(f"rent: {cheapest.label} at ${b.rent_usd_per_hour:.2f}/h (price {cheapest.age_days()} days old)")
    if b.break_even_hours:
        out.print(f"break-even after {b.break_even_hours:,.0f} hours of use; over {hours:,.0f} h: buy "
                  f"${b.buy_total_usd:,.0f} vs rent ${b.rent_total_usd:,.0f} -> "
                  f"[bold]{'buy' if b.buy_total_usd < b.rent_total_usd else 'rent'}[/]")
    else:
        out.print("renting costs less per hour than the power to run your own card: rent")


def main() -> None:
    """Entry point: bad input (a :class:`GpuplanError`) prints one red line and exits with code 2;
    usage errors are click's, also exit code 2."""
    try:
        app()
    except GpuplanError as e:
        err.print(f"[red]error:[/] {e}", highlight=False, soft_wrap=True)
        sys.exit(2)


if __name__ == "__main__":
    main()
