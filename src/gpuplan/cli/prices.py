"""``gpuplan prices``: the offers in force, and ``prices update`` to refresh them from gpuhunt, a SkyPilot catalog or
the user's own file (kept, dated, in the user's cache)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.text import Text

from .. import api
from ..errors import SourceError
from .app import JsonFlag, app, print_json, short
from .render import Column, FormatOption, err, out, resolve_format, show

prices_app = typer.Typer(help="The prices in force (bundled snapshot, refreshed caches, your files); "
                         "`prices update` refreshes them. Rankings (cost, recommend, estimate) leave out rows "
                         "older than 90 days and low-confidence rows unless asked (--max-price-age-days, "
                         "--include-low-confidence)."
                         "\n\nExamples:\n\n\b\n"
                         "  gpuplan prices --gpu h100-sxm --max-age 30\n"
                         "  gpuplan prices --provider runpod --spot --format csv\n"
                         "  gpuplan prices update --source file --file my-offers.csv",
                         pretty_exceptions_enable=False)
app.add_typer(prices_app, name="prices")
SOURCES = api.PRICE_SOURCES


@prices_app.callback(invoke_without_command=True)
def prices_cmd(
    ctx: typer.Context,
    gpu: Annotated[str | None, typer.Option(help="Only this GPU: t4, l4, h100-sxm...")] = None,
    provider: Annotated[str | None, typer.Option(help="Only this provider: aws, runpod...")] = None,
    spot: Annotated[bool, typer.Option("--spot", help="Only spot / interruptible offers.")] = False,
    max_age: Annotated[int | None, typer.Option(help="Only prices observed at most this many days ago "
                                                     "[default: any age].",
                                                min=0)] = None,
    low_confidence: Annotated[bool, typer.Option("--low-confidence/--no-low-confidence",
                                                 help="List low-confidence rows too.")] = True,
    as_json: JsonFlag = False,
    fmt: FormatOption = None,
) -> None:
    """List the offers in force, cheapest first per GPU, each with its date, age, source and confidence.
    Rankings (cost, recommend, estimate) leave out rows older than 90 days and low-confidence rows unless asked
    (--max-price-age-days, --include-low-confidence).

    Examples:

    \b
      gpuplan prices --gpu l4
      gpuplan prices --provider aws --spot --json
      gpuplan prices update --source skypilot --file vms.csv --provider aws
    """
    if ctx.invoked_subcommand:
        return
    found = api.prices(gpu=gpu, provider=provider, spot=spot, max_age=max_age, low_confidence=low_confidence)
    fmt = resolve_format(fmt, as_json)
    if fmt == "json":
        print_json(found)
        return
    render_prices(found, fmt)


def render_prices(found, fmt: str = "table") -> None:
    """The offers (the GPU, provider and price identify a row and are never cut; region, instance and source
    drop first on narrow terminals) and one line on what is in force."""
    rows = found.rows
    if not rows:
        out.print(Text("no offer matches", style="yellow") + Text(" (drop a filter, or `gpuplan prices update`)"))
        return
    old = lambda r: "yellow" if r["age"] > 90 or r["confidence"] == "low" else None  # noqa: E731
    data = [{"gpu": short(o["gpu_id"]), "provider": o["provider"], "region": o["region"], "instance": o["instance"],
             "count": o["gpu_count"], "price": o["price_usd_per_gpu_hour"],
             "spot": "spot" if o["pricing"] in ("spot", "interruptible") else "",
             "observed": str(o["observed_at"]), "age": o["age_days"], "confidence": o["confidence"],
             "source": _short_source(o["source"])} for o in rows]
    columns = [Column("gpu", "GPU", priority=0), Column("provider", "provider", priority=0),
               Column("price", "$/GPU-h", fmt="{:,.3f}".format, align="right", priority=0),
               Column("count", "GPUs", align="right", priority=1), Column("spot", "spot", priority=1),
               Column("age", "age", fmt=lambda d: f"{d} d", align="right", priority=2, style=old),
               Column("confidence", "conf.", priority=2, style=old),
               Column("observed", "observed", priority=4), Column("region", "region", priority=5),
               Column("instance", "instance", priority=3), Column("source", "source", priority=6)]
    show(data, columns, fmt, title=f"{len(rows)} offers, {len({o['gpu_id'] for o in rows})} GPU types, "
         f"{len({o['provider'] for o in rows})} providers (yellow: over 90 days old or low confidence)")
    if fmt != "table":
        return
    out.print(Text(f"in force: {found.in_force}" + ("" if found.refreshed else
                                                     "; refresh with `gpuplan prices update`"), style="dim"))


def _short_source(text: str) -> str:
    """The source without its parenthesised detail (the JSON keeps it whole)."""
    return text.split(" (")[0].replace("SkyPilot catalog catalogs/v7/", "SkyPilot ")[:40]


@prices_app.command("update")
def update_cmd(
    source: Annotated[str, typer.Option(help=f"Where from: {', '.join(SOURCES)} (bundled: drop every refresh).")]
    = "gpuhunt",
    file: Annotated[Path | None, typer.Option(help="A SkyPilot vms.csv (or its folder), or your own offers CSV.")]
    = None,
    provider: Annotated[str | None, typer.Option(help="The provider the prices are for (aws, gcp, runpod...).")]
    = None,
    as_json: JsonFlag = False,
) -> None:
    """Refresh the offers into your cache (GPUPLAN_CACHE_DIR or the platform's cache folder); every later command
    prices on the newest data and says where each price came from. On any failure the prices in force stay as
    they were, and one line says so.

    Examples:

    \b
      gpuplan prices update                                   # gpuhunt (pip install 'gpuplan[live]')
      gpuplan prices update --source skypilot --file vms.csv --provider aws
      gpuplan prices update --source skypilot                 # SkyPilot's own ~/.sky/catalogs
      gpuplan prices update --source file --file my-offers.csv
      gpuplan prices update --source bundled                  # back to the bundled snapshot
    """
    try:
        u = api.prices_update(source, file=file, provider=provider)
    except SourceError as e:  # the source could not answer, or the cache could not be written: exit 1
        err.print(Text("prices not updated:", style="yellow") + f" {e}. The prices in force stay as they were: "
                  f"{api.prices_in_force()}.", highlight=False, soft_wrap=True)
        if as_json:  # a script asked for JSON: it gets it, the failure included (exit 1 all the same)
            print_json({"source": source, "updated": False, "reason": str(e), "in_force": api.prices_status()})
        raise typer.Exit(1) from None
    if as_json:
        print_json(u)
        return
    if u.source == "bundled":
        out.print(f"dropped {u.dropped_refreshes} refreshed file(s): the {api.prices_in_force()} is in force",
                  highlight=False)
        return
    out.print(f"saved {u.rows} offers for {u.gpu_types} GPU types from {u.source} ({u.origin}) to "
              f"{u.path}; later commands price on them", highlight=False)
    if u.unmapped_gpu_names:
        names = ", ".join(f"{k} ({v})" for k, v in sorted(u.unmapped_gpu_names.items()))
        out.print(Text(f"not in the GPU catalog, skipped: {names}", style="dim"), highlight=False)
    if u.implausible_rows_left_out:
        (low, high), most = api.plausible_prices()
        counts = ", ".join(f"{n} by {kind}" for kind, n in sorted(u.implausible_rows_left_out.items()))
        out.print(Text(f"left out as implausible: {counts} (prices outside ${low:g}-${high:,.0f} per GPU-hour, or "
                       f"more than {most} GPUs per instance)", style="dim"), highlight=False)
