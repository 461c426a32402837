"""``gpuplan gpus``, ``gpus compare``, ``cost`` and ``buy``: the catalog, prices and owning."""

from __future__ import annotations

from typing import Annotated, Any

import typer
from rich.table import Table

from ..errors import GpuplanError
from ..scenario import load_scenario
from .app import JsonFlag, app, err, option, out, overrides, print_json, scenario_command, short

# ---- GPUs -------------------------------------------------------------------------------------------
gpus_app = typer.Typer(help="The GPU catalog: dense TFLOPS, memory, bandwidth, NVLink, power, price.",
                       no_args_is_help=False, pretty_exceptions_enable=False)
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
    as_json: JsonFlag = False,
) -> None:
    """List the GPU catalog (dense TFLOPS: no 2:4 sparsity, FP32 accumulate). `gpuplan gpus compare A B` puts
    cards side by side."""
    if ctx.invoked_subcommand:
        return
    from ..hardware import gpus

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
        print_json(rows)
        return
    table = Table(title=f"{len(rows)} GPUs (dense TFLOPS)", title_justify="left")
    for col in ("id", "GiB", "GB/s", "bf16", "fp8", "NVLink GB/s", "TDP W", "MSRP $", "$/GB", "$/TFLOP"):
        table.add_column(col, justify="left" if col == "id" else "right")
    fmt = lambda v, spec="{:,.0f}": "" if v is None else spec.format(v)  # noqa: E731
    for r in rows:
        table.add_row(short(r["id"]), fmt(r["memory_gib"]), fmt(r["bandwidth_gbs"]), fmt(r["bf16_tflops"], "{:,.1f}"),
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
    from ..hardware import load_gpu

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
        print_json([{**r, "marketing_note": notes[r["id"]]} for r in rows])
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
    from ..estimate import estimate
    from ..market.offers import load_offers
    from ..model.catalog import load_model
    from ..plan.pricing import compare

    s = load_scenario(scenario, overrides(fields))
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
    if not base.model.exact:
        err.print(f"[bold yellow]warning:[/] {base.warnings[0]}")
    if as_json:
        from dataclasses import asdict

        print_json([{**asdict(c), "device_peak_gib": peak, "model_exact": base.model.exact,
                     "model_exact_reason": base.model.exact_reason} for c, peak in rows])
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
        table.add_row(c.offer.replace("_", "-"), short(c.gpu_id), str(c.num_gpus), f"{c.usd_per_hour:,.2f}",
                      f"{peak:,.1f}", *tail, age)
    out.print(table)
    if not infer and not s.train_tokens:
        out.print("[yellow]set --train-tokens to get hours and totals[/]")


scenario_command(
    "cost", cost_cmd,
    option("catalog", list[str] | None, None, "A CSV of offers (same columns as data/offers.csv) that overrides "
           "the bundled rows; repeatable."),
    option("discount", list[str] | None, None, "Negotiated price multiplier: provider=0.85; repeatable."),
    option("top", int, 20, "Show this many offers."),
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
    """Buy or rent? Launch MSRP + power (TDP x utilization x PUE x $/kWh) over the hours you will use it,
    against the cheapest rental of the same card in the price catalog; prints the break-even hours."""
    from dataclasses import asdict

    from ..hardware import load_gpu
    from ..market.cost import buy_vs_rent
    from ..market.offers import load_offers

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


