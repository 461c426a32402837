"""``gpuplan gpus``, ``gpus compare``, ``cost`` and ``buy``: the catalog, prices and owning."""

from __future__ import annotations

import math
import re
from dataclasses import asdict
from typing import Annotated, Any

import typer

from ..errors import GpuplanError
from ..scenario import load_scenario
from .app import JsonFlag, app, err, option, out, overrides, print_json, scenario_command, short
from .render import FORMAT_HELP, Column, FormatOption, FormatValue, bullet, num, resolve_format, show, usd

# ---- GPUs -------------------------------------------------------------------------------------------
gpus_app = typer.Typer(help="The GPU catalog: dense TFLOPS, memory, bandwidth, NVLink, power.",
                       rich_markup_mode=None, no_args_is_help=False, pretty_exceptions_enable=False)
app.add_typer(gpus_app, name="gpus")
GPU_SORT = ("memory", "bandwidth", "bf16", "fp8", "tdp", "msrp", "usd_per_gb", "usd_per_tflop", "name")


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
    fmt: FormatOption = None,
    as_json: JsonFlag = False,
) -> None:
    """List the GPU catalog (dense TFLOPS: no 2:4 sparsity, FP32 accumulate). `gpuplan gpus compare A B` puts
    cards side by side."""
    if ctx.invoked_subcommand:
        return
    from ..hardware import gpus

    if sort not in GPU_SORT:
        raise GpuplanError(f"--sort must be one of {', '.join(GPU_SORT)}, got {sort!r}")
    if not (math.isfinite(min_memory) and min_memory >= 0):
        raise GpuplanError(f"--min-memory takes GiB >= 0, got {min_memory}")
    rows = [_gpu_row(g) for g in gpus().values()]
    rows = [r for r in rows if r["memory_gib"] >= min_memory and (not nvlink or r["nvlink_gbs"])
            and (not vendor or r["vendor"].lower() == vendor.lower())
            and (not segment or r["segment"] == segment.lower())]
    field = {"memory": "memory_gib", "bandwidth": "bandwidth_gbs", "bf16": "bf16_tflops", "fp8": "fp8_tflops",
             "tdp": "tdp_w", "msrp": "msrp_usd"}.get(sort, sort)
    rows.sort(key=lambda r: (r[field] is None, r[field] or 0) if field != "name" else (False, r["id"]),
              reverse=reverse)
    for r in rows:
        r["short"] = short(r["id"])
    f0, f1 = num(), num("{:,.1f}")
    columns = [Column("short", "id", priority=0), Column("memory_gib", "GiB", fmt=f0, align="right"),
               Column("usable_gib", "usable", fmt=f1, align="right", priority=3),
               Column("bandwidth_gbs", "GB/s", fmt=f0, align="right", priority=2),
               Column("bf16_tflops", "bf16", fmt=f1, align="right"),
               Column("fp8_tflops", "fp8", fmt=f1, align="right", priority=2),
               Column("nvlink_gbs", "NVLink GB/s", fmt=f0, align="right", priority=4),
               Column("tdp_w", "TDP W", fmt=f0, align="right", priority=4),
               Column("msrp_usd", "MSRP $", fmt=f0, align="right", priority=3),
               Column("usd_per_gb", "$/GB", fmt=f1, align="right", priority=5),
               Column("usd_per_tflop", "$/TFLOP", fmt=f1, align="right", priority=5)]
    show(rows, columns, resolve_format(fmt, as_json), title=f"{len(rows)} GPUs (dense TFLOPS; GiB as sold, usable "
         "as the driver reports)", json_data=[{k: v for k, v in r.items() if k != "short"} for r in rows])


@gpus_app.command("compare")
def gpus_compare(
    names: Annotated[list[str], typer.Argument(help="Two or more GPU names or ids: 4090 a6000 'rtx 6000 ada'.")],
    fmt: FormatOption = None,
    as_json: JsonFlag = False,
) -> None:
    """Side by side, with dense figures, and where the usual marketing numbers differ (2:4 sparsity doubles
    them; GeForce FP16 with FP16 accumulate runs at twice the FP32-accumulate rate frameworks use)."""
    from ..hardware import resolve_gpu

    resolved = [resolve_gpu(n) for n in names]  # every name checked before anything is printed
    cards = [card for card, _ in resolved]
    for _, note in resolved:
        if note:
            bullet(note, prefix="note: ", style="yellow", stream=err)
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
    labels = [("memory (GiB)", "memory_gib", "{:,.0f}"), ("usable (GiB)", "usable_gib", "{:,.1f}"),
              ("bandwidth (GB/s)", "bandwidth_gbs", "{:,.0f}"), ("bf16 dense TFLOPS", "bf16_tflops", "{:,.1f}"),
              ("fp8 dense TFLOPS", "fp8_tflops", "{:,.1f}"), ("fp4 dense TFLOPS", "fp4_tflops", "{:,.1f}"),
              ("NVLink (GB/s, both ways)", "nvlink_gbs", "{:,.0f}"), ("TDP (W)", "tdp_w", "{:,.0f}"),
              ("launch MSRP ($)", "msrp_usd", "{:,.0f}"), ("$ per GB", "usd_per_gb", "{:,.1f}"),
              ("$ per bf16 TFLOP", "usd_per_tflop", "{:,.1f}")]
    table_rows = [{"figure": label, **{f"c{i}": None if r[key] is None else spec.format(r[key])
                                       for i, r in enumerate(rows)}} for label, key, spec in labels]
    columns = [Column("figure", "", priority=0),
               *(Column(f"c{i}", short(g.id), align="right", priority=0) for i, g in enumerate(cards))]
    show(table_rows, columns, resolve_format(fmt, as_json), title="dense figures (TFLOPS = 1e12 FLOP/s, no sparsity)",
         notes=[f"{g.name}: {notes[g.id]}" for g in cards if notes[g.id]],
         json_data=[{**r, "marketing_note": notes[r["id"]]} for r in rows])


# ---- cost -------------------------------------------------------------------------------------------
def cost_cmd(scenario: str | None = None, as_json: bool = False, catalog: list[str] | None = None,
             discount: list[str] | None = None, top: int | None = None, fmt: str | None = None,
             **fields: Any) -> None:
    """What the job costs on every offer that fits it.

    GPUs rented, $/hour, hours (spot: with interruptions and Daly checkpointing) and total, $ per million training
    tokens, or $ per million output tokens for serving. Prices are dated; rows older than 30 days say so. The
    first line says what was assumed.

    Examples:

    \b
      gpuplan cost --model llama-3.1-8b --task train --method lora --train-tokens 2e8
      gpuplan cost examples/lora-llama-8b.yaml --pricing any --format csv
      gpuplan cost --model qwen2.5-7b --task infer --engine vllm --discount runpod=0.85
    """
    from ..estimate import estimate
    from ..market.offers import load_offers
    from ..model.catalog import load_model
    from ..plan.pricing import compare
    from ..resolve import describe, resolve

    if top is not None and top < 1:
        raise GpuplanError(f"--top must be 1 or more, got {top}")
    s = load_scenario(scenario, overrides(fields))
    discounts = {}
    for item in discount or []:
        provider, _, factor = item.partition("=")
        try:
            discounts[provider.strip()] = float(factor)
        except ValueError:
            raise GpuplanError(f"--discount takes provider=multiplier (runpod=0.85), got {item!r}") from None
    m = load_model(s.model)
    s, defaults = resolve(s.model_copy(update={"gpu": None}), m, None)
    base = estimate(s, advise=False)
    rows = compare(s, m, load_offers(tuple(catalog or ()), discounts), base.model.params_trainable)
    fmt = resolve_format(fmt, as_json)
    if fmt != "json":
        rows = rows[: top or 20]
    elif top:
        rows = rows[:top]
    infer = s.task == "infer"
    data = []
    for c, peak in rows:
        per_gpu = c.usd_per_hour / max(c.num_gpus, 1)
        data.append({**asdict(c), "device_peak_gib": peak, "usd_per_gpu_hour": per_gpu,
                     "label": re.sub(r" \d+x ", " ", c.offer).removesuffix(" on_demand").replace("_", "-"),
                     "gpu": short(c.gpu_id)})
    if fmt in ("table", "plain", "markdown"):
        bullet(describe(s, m, gpu_id="each offer's GPU"), prefix="", style="bold")
        for note in [*m.notes, *defaults]:
            bullet(note, prefix="note: ", style="yellow")
    if not rows:
        if fmt == "json":
            print_json([])
        else:
            out.print("no offer in the catalog fits this scenario (try --pricing any, more GPUs, or QLoRA)")
        return
    age_style = lambda r: "yellow" if r["stale"] else None  # noqa: E731
    tokens = "output" if infer else "training"
    columns = [Column("label", "offer", priority=0, style=age_style), Column("gpu", "GPU", priority=0),
               Column("num_gpus", "GPUs", align="right"),
               Column("usd_per_gpu_hour", "$/GPU/h", fmt=num("{:,.2f}"), align="right", priority=3),
               Column("usd_per_hour", "$/h", fmt=num("{:,.2f}"), align="right"),
               Column("device_peak_gib", "peak GiB", fmt=num("{:,.1f}"), align="right", priority=4)]
    if not infer:
        columns += [Column("hours", "hours", fmt=num("{:,.1f}"), align="right"),
                    Column("usd_total", "total $", fmt=usd, align="right")]
    columns += [Column("usd_per_million_tokens", f"$/M {tokens} tok", fmt=usd, align="right",
                       priority=1 if infer else 2),
                Column("price_age_days", "price age", fmt=lambda d: f"{d} d", align="right", priority=2,
                       style=age_style)]
    if not infer and not s.train_tokens:
        columns = [c for c in columns if c.key not in ("hours", "usd_total")]
    show(data, columns, fmt, title=f"{len(rows)} offers that fit, cheapest first (on-demand unless marked; yellow: "
         "price over 30 days old)",
         notes=["set --train-tokens to get hours and totals"] if not infer and not s.train_tokens else [],
         json_data=[{k: v for k, v in r.items() if k not in ("label", "gpu")} for r in data])


scenario_command(
    "cost", cost_cmd,
    option("catalog", list[str] | None, None, "A CSV of offers (same columns as data/offers.csv) that overrides "
           "the bundled rows; repeatable."),
    option("discount", list[str] | None, None, "Negotiated price multiplier: provider=0.85; repeatable."),
    option("top", int | None, None, "Show this many offers [default: 20 in tables, all in JSON]."),
    option("fmt", FormatValue, None, FORMAT_HELP, param_decls=("--format",)),
    skip=("gpu",))


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
    """Buy or rent? The break-even hours of owning a card.

    Launch MSRP + power (TDP x utilization x PUE x $/kWh) over the hours you will use it,
    against the cheapest rental of the same card in the price catalog; prints the break-even hours."""
    from dataclasses import asdict

    from ..hardware import load_gpu
    from ..market.cost import buy_vs_rent
    from ..market.offers import load_offers

    for name, value, low, high in (("--hours", hours, 1, 1e6), ("--usd-per-kwh", usd_per_kwh, 0, 10),
                                   ("--pue", pue, 1, 3), ("--utilization", utilization, 0.01, 1),
                                   ("--count", count, 1, 1024)):
        if not (math.isfinite(value) and low <= value <= high):
            raise GpuplanError(f"{name} must be between {low:g} and {high:g}, got {value:g}")
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
        print_json({**asdict(b), "rental": cheapest.label, "gpu_id": card.id})
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


