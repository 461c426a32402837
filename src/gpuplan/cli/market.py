"""``gpuplan gpus``, ``gpus compare`` and ``cost``: the catalog and prices (``buy`` is in :mod:`.buy`)."""

from __future__ import annotations

from dataclasses import asdict
from typing import Annotated, Any

import typer

from .. import api
from ..errors import GpuplanError
from .app import OWN_MODULE, JsonFlag, app, module_of, option, overrides, print_json, scenario_command, short
from .render import FORMAT_HELP, Column, FormatOption, FormatValue, bullet, err, num, out, resolve_format, show, usd

# ---- GPUs -------------------------------------------------------------------------------------------
gpus_app = typer.Typer(help="The GPU catalog: dense TFLOPS, memory, bandwidth, NVLink, power, rental price.\n\n"
                       "TFLOPS are dense (no 2:4 sparsity), 16-bit at the FP32-accumulate rate frameworks use."
                       "\n\nExamples:\n\n\b\n"
                       "  gpuplan gpus --vendor nvidia --min-memory 40 --sort usd_per_gb\n"
                       "  gpuplan gpus --segment consumer --sort rent --json\n"
                       "  gpuplan gpus compare 4090 a6000 'rtx 6000 ada'",
                       rich_markup_mode=None, no_args_is_help=False, pretty_exceptions_enable=False)
app.add_typer(gpus_app, name="gpus")
GPU_SORT = api.GPU_SORT


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
    rows = api.gpus(vendor=vendor, segment=segment, min_memory=min_memory, nvlink=nvlink, sort=sort,
                    reverse=reverse)
    for r in rows:
        r["short"] = short(r["id"])
    f0, f1 = num(), num("{:,.1f}")
    columns = [Column("short", "id", priority=0), Column("memory_gib", "GiB", fmt=f0, align="right"),
               Column("usable_gib", "usable", fmt=f1, align="right", priority=4),
               Column("bandwidth_gbs", "GB/s", fmt=f0, align="right", priority=3),
               Column("bf16_tflops", "bf16", fmt=f1, align="right"),
               Column("fp8_tflops", "fp8", fmt=f1, align="right", priority=3),
               Column("nvlink_gbs", "NVLink GB/s", fmt=f0, align="right", priority=5),
               Column("tdp_w", "TDP W", fmt=f0, align="right", priority=5),
               Column("msrp_usd", "MSRP $", fmt=f0, align="right", priority=4),
               Column("rent_usd_per_hour", "rent $/h", fmt=num("{:,.2f}"), align="right", priority=2),
               Column("usd_per_tflop_hour", "$/TFLOP-h", fmt=num("{:.4f}"), align="right", priority=2)]
    show(rows, columns, resolve_format(fmt, as_json), title=f"{len(rows)} GPUs (dense TFLOPS; GiB as sold, usable "
         "as the driver reports)", notes=["rent: the cheapest on-demand offer in force (<= 90 days old, not low "
                                          "confidence; `gpuplan prices`); $/TFLOP-h = rent / dense bf16 TFLOPS",
                                          "bf16: a card without bf16 (Turing, Volta) shows its fp16 rate, FP32 "
                                          "accumulate, what PyTorch trains and serves it at"],
         json_data=[{k: v for k, v in r.items() if k != "short"} for r in rows])


@gpus_app.command("compare")
def gpus_compare(
    names: Annotated[list[str], typer.Argument(help="Two or more GPU names or ids: 4090 a6000 'rtx 6000 ada'.")],
    fmt: FormatOption = None,
    as_json: JsonFlag = False,
) -> None:
    """Side by side, with dense figures, and where the usual marketing numbers differ (2:4 sparsity doubles
    them; GeForce FP16 with FP16 accumulate runs at twice the FP32-accumulate rate PyTorch uses).

    Examples:

    \b
      gpuplan gpus compare 4090 a6000 'rtx 6000 ada'
      gpuplan gpus compare h100-sxm mi300x b200 --json
    """
    fmt = resolve_format(fmt, as_json)
    said: list[str] = []
    rows = api.gpus_compare(names, said)
    for note in said:
        bullet(note, prefix="note: ", style="yellow", stream=err)
    notes = {r["id"]: r["marketing_note"] for r in rows}
    # a card without NVLink says so ("none": the catalog's interconnect states it); a blank figure is not in the catalog
    labels = [("memory (GiB)", "memory_gib", "{:,.0f}"), ("usable (GiB)", "usable_gib", "{:,.1f}"),
              ("bandwidth (GB/s)", "bandwidth_gbs", "{:,.0f}"),
              ("bf16 dense TFLOPS (fp16 without bf16)", "bf16_tflops", "{:,.1f}"),
              ("fp8 dense TFLOPS", "fp8_tflops", "{:,.1f}"), ("fp4 dense TFLOPS", "fp4_tflops", "{:,.1f}"),
              ("tf32 dense TFLOPS (tf32 true)", "tf32_tflops", "{:,.1f}"),
              ("fp32 TFLOPS (precision fp32)", "fp32_tflops", "{:,.1f}"),
              ("NVLink (GB/s, both ways)", "nvlink_gbs", "{:,.0f}", "none"), ("TDP (W)", "tdp_w", "{:,.0f}"),
              ("launch MSRP ($)", "msrp_usd", "{:,.0f}"), ("$ per GB", "usd_per_gb", "{:,.1f}"),
              ("$ per bf16 TFLOP (MSRP)", "msrp_usd_per_tflop", "{:,.1f}"),
              ("cheapest rental ($/h)", "rent_usd_per_hour", "{:,.2f}"),
              ("$ per TFLOP-hour (rental)", "usd_per_tflop_hour", "{:.4f}")]
    table_rows = [{"figure": label, **{f"c{i}": ("".join(missing) or None) if r[key] is None else spec.format(r[key])
                                       for i, r in enumerate(rows)}} for label, key, spec, *missing in labels]
    columns = [Column("figure", "", priority=0),
               *(Column(f"c{i}", short(r["id"]), align="right", priority=0) for i, r in enumerate(rows))]
    show(table_rows, columns, fmt, title="dense figures (TFLOPS = 1e12 FLOP/s, no sparsity)",
         notes=[f"{r['name']}: {notes[r['id']]}" for r in rows if notes[r["id"]]], json_data=rows)


# ---- cost -------------------------------------------------------------------------------------------
def cost_cmd(scenario: str | None = None, as_json: bool = False, catalog: list[str] | None = None,
             discount: list[str] | None = None, top: int | None = None, fmt: str | None = None,
             **fields: Any) -> None:
    """What the job costs on every offer that fits it.

    With --gpu, that GPU only. GPUs rented, $/hour, hours (spot: with interruptions and Daly checkpointing), GPU
    total and the whole bill (idle GPUs of the instance shape, billing increments, storage for checkpoint, dataset
    and result, egress), $ per million training tokens, or $ per million output tokens for serving. Only prices at
    most --max-price-age-days old (default 90) and not low confidence are used unless asked; each row shows its
    age and confidence, and the first offer's bill is itemized. The first line says what was assumed.

    Examples:

    \b
      gpuplan cost --model llama-3.1-8b --task train --method lora --train-tokens 2e8
      gpuplan cost examples/lora-llama-8b.yaml --pricing any --format csv
      gpuplan cost --model qwen2.5-7b --task infer --engine vllm --discount runpod=0.85
    """
    fmt = resolve_format(fmt, as_json)
    target = module_of(fields)
    s = api.load_scenario(scenario, overrides(fields))
    discounts = {}
    for item in discount or []:
        provider, _, factor = item.partition("=")
        try:
            discounts[provider.strip()] = float(factor)
        except ValueError:
            raise GpuplanError(f"--discount takes provider=multiplier (runpod=0.85), got {item!r}") from None
    table = api.cost(s, module=target, catalogs=tuple(catalog or ()), discounts=discounts,
                     top=top or (20 if fmt != "json" else None))
    if isinstance(table, api.ModuleChoices):  # a diffusion pipeline, an encoder-decoder, an encoder
        from .modules import render_choices

        render_choices(table, fmt, ranked=False)
        return
    if fmt == "json":
        print_json(table)
        return
    if fmt == "table":
        bullet(table.resolved, prefix="", style="bold")
    for warning in table.warnings:  # first, before the numbers they put in doubt
        bullet(warning, prefix="warning: ", style="bold yellow", stream=err)
    if table.warnings:
        for note in table.notes:
            bullet(note, prefix="note: ", style="yellow")
    render_costs(s, table.rows, table.left_out, fmt, table.why_none)


def _offer_cell(c) -> str:
    """The offer in a cell: provider and tier, and the pricing when it is not on-demand (the GPUs column holds
    the count)."""
    parts = c.offer.replace("_", "-").split()
    return " ".join(p for p in parts if not (p.endswith("x") and p[:-1].isdigit()) and p != "on-demand")


def render_costs(s, rows, skipped: dict[str, int], fmt: str = "table", why_none: str = "") -> None:
    if not rows and why_none:
        out.print(f"no row: {why_none}", markup=False, highlight=False)
        return
    if not rows:
        fix = "QLoRA" if s.task == "train" else "quantized weights (--quant awq-int4 or fp8), nodes (--num-nodes)"
        out.print(f"no offer in force fits this scenario (try --pricing any, more GPUs, {fix}, --max-price-age-days "
                  "or --include-low-confidence)")
        return
    infer = s.task == "infer"
    data = [{**asdict(c), "cell": _offer_cell(c), "gpu": short(c.gpu_id)} for c in rows]
    old = lambda r: "yellow" if r["stale"] else None  # noqa: E731
    columns = [Column("cell", "offer", priority=0, style=old), Column("gpu", "GPU", priority=0),
               Column("num_gpus", "GPUs", align="right"),
               Column("usd_per_gpu_hour", "$/GPU/h", fmt=num("{:,.2f}"), align="right", priority=4),
               Column("usd_per_hour", "$/h", fmt=num("{:,.2f}"), align="right"),
               Column("device_peak_gib", "peak GiB", fmt=num("{:,.1f}"), align="right", priority=5)]
    if not infer and s.train_tokens:
        columns += [Column("hours", "hours", fmt=num("{:,.1f}"), align="right"),
                    Column("usd_total", "GPU $", fmt=usd, align="right"),
                    Column("bill_usd", "bill $", fmt=usd, align="right", priority=2)]
    columns += [Column("usd_per_million_tokens", "$/M tok", fmt=usd, align="right", priority=1 if infer else 3),
                Column("price_age_days", "age", fmt=lambda d: f"{d} d", align="right", priority=2, style=old),
                Column("price_confidence", "conf.", priority=3)]
    tokens = "output" if infer else "training"
    notes = [f"{n} offers left out: {why} (--max-price-age-days, --include-low-confidence)"
             for why, n in skipped.items()]
    if not infer and not s.train_tokens:
        notes.append("set --train-tokens to get hours, totals and the bill")
    show(data, columns, fmt, title=f"{len(rows)} offers that fit, cheapest first (on-demand unless marked; $/M tok: "
         f"per million {tokens} tokens; yellow: price over 30 days old)", notes=notes)
    first = rows[0]
    if fmt == "table":
        if not infer and s.train_tokens:
            render_bill(first)
        bullet(f"{first.offer}: price from {first.price_origin}", prefix="", style="dim")


def render_bill(c) -> None:
    """The itemized bill of one offer: lines that add up to its total."""
    rows = [{"item": line.item + (f" ({line.note})" if line.note else ""), "quantity": line.quantity,
             "unit": line.unit, "price": line.usd_per_unit, "usd": line.usd} for line in c.bill]
    rows.append({"item": "total", "usd": c.bill_usd})
    show(rows, [Column("item", "item", priority=1), Column("quantity", "quantity", fmt=num("{:,.2f}"), align="right"),
                Column("unit", "unit", priority=2), Column("price", "$/unit", fmt=num("{:,.3f}"), align="right",
                                                           priority=2),
                Column("usd", "$", fmt=num("{:,.2f}"), align="right")], "table", title=f"the whole bill on {c.label}")


scenario_command(
    "cost", cost_cmd,
    option("catalog", list[str] | None, None, "A CSV of offers (same columns as data/offers.csv) that overrides "
           "the bundled rows; repeatable."),
    option("discount", list[str] | None, None, "Negotiated price multiplier: provider=0.85; repeatable."),
    option("top", int | None, None, "Show this many offers [default: 20 in tables, all in JSON]."),
    option("fmt", FormatValue, None, FORMAT_HELP, param_decls=("--format",)), OWN_MODULE)
