"""``gpuplan prices``: the offers in force, and ``prices update`` to refresh them from gpuhunt, a SkyPilot catalog or
the user's own file (kept, dated, in the user's cache)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.text import Text

from ..errors import GpuplanError, echo
from .app import JsonFlag, app, print_json, short
from .render import Column, FormatOption, err, out, resolve_format, show

prices_app = typer.Typer(help="The prices in force (bundled snapshot, refreshed caches, your files); "
                         "`prices update` refreshes them.", pretty_exceptions_enable=False)
app.add_typer(prices_app, name="prices")
SOURCES = ("gpuhunt", "skypilot", "file", "bundled")


def _rows(gpu: str | None, provider: str | None, spot: bool, max_age: int | None, low: bool):
    from ..hardware import load_gpu
    from ..market.store import PriceFilter, load_offers, matches

    gpu_id = load_gpu(gpu).id if gpu else None
    offers = load_offers()
    if provider and provider not in {o.provider for o in offers}:
        from ..errors import UnknownNameError

        raise UnknownNameError("provider", provider, sorted({o.provider for o in offers}))
    f = PriceFilter(max_age_days=max_age, include_low_confidence=low)
    rows = [o for o in offers if matches(o, f) and (not gpu_id or o.gpu_id == gpu_id)
            and (not provider or o.provider == provider) and (o.interruptible if spot else True)]
    return sorted(rows, key=lambda o: (o.gpu_id, o.usd_per_gpu_hour)), gpu_id


@prices_app.callback(invoke_without_command=True)
def prices_cmd(
    ctx: typer.Context,
    gpu: Annotated[str | None, typer.Option(help="Only this GPU: t4, l4, h100-sxm...")] = None,
    provider: Annotated[str | None, typer.Option(help="Only this provider: aws, runpod...")] = None,
    spot: Annotated[bool, typer.Option("--spot", help="Only spot / interruptible offers.")] = False,
    max_age: Annotated[int | None, typer.Option(help="Only prices observed at most this many days ago.",
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
    from ..market.store import price_origin, status

    rows, _ = _rows(gpu, provider, spot, max_age, low_confidence)
    fmt = resolve_format(fmt, as_json)
    if fmt == "json":
        print_json([{**o.row(), "age_days": o.age_days(), "price_origin": price_origin(o)} for o in rows])
        return
    render_prices(rows, status(), fmt)


def render_prices(rows, state, fmt: str = "table") -> None:
    """The offers (the GPU, provider and price identify a row and are never cut; region, instance and source
    drop first on narrow terminals) and one line on what is in force."""
    if not rows:
        out.print(Text("no offer matches", style="yellow") + Text(" (drop a filter, or `gpuplan prices update`)"))
        return
    old = lambda r: "yellow" if r["age"] > 90 or r["confidence"] == "low" else None  # noqa: E731
    data = [{"gpu": short(o.gpu_id), "provider": o.provider, "region": o.region, "instance": o.instance,
             "count": o.gpu_count, "price": o.usd_per_gpu_hour, "spot": "spot" if o.interruptible else "",
             "observed": str(o.observed_at), "age": o.age_days(), "confidence": o.confidence,
             "source": _short_source(o.source)} for o in rows]
    columns = [Column("gpu", "GPU", priority=0), Column("provider", "provider", priority=0),
               Column("price", "$/GPU-h", fmt="{:,.3f}".format, align="right", priority=0),
               Column("count", "GPUs", align="right", priority=1), Column("spot", "spot", priority=1),
               Column("age", "age", fmt=lambda d: f"{d} d", align="right", priority=2, style=old),
               Column("confidence", "conf.", priority=2, style=old),
               Column("observed", "observed", priority=4), Column("region", "region", priority=5),
               Column("instance", "instance", priority=3), Column("source", "source", priority=6)]
    show(data, columns, fmt, title=f"{len(rows)} offers, {len({o.gpu_id for o in rows})} GPU types, "
         f"{len({o.provider for o in rows})} providers (yellow: over 90 days old or low confidence)")
    if fmt != "table":
        return
    from ..market.store import in_force

    out.print(Text(f"in force: {in_force(state)}" + ("" if state["refreshes"] else
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
    from ..market.offers import MAX_GPUS_PER_INSTANCE, USD_PER_GPU_HOUR, check_provider
    from ..market.sources import Query, SourceError, fetch
    from ..market.store import clear_refreshes, in_force, refresh_name, save_refresh, status

    if source not in SOURCES:
        raise GpuplanError(f"--source must be one of {', '.join(SOURCES)}, got {echo(source)}")
    if provider is not None:
        check_provider(provider, "--provider")  # it names the cache file: a plain name, never a path
    if source == "file" and file is None:
        raise GpuplanError("--source file needs --file PATH: a CSV with the columns of data/offers.csv")
    if file is not None and source == "gpuhunt":
        source = "file"  # `prices update --file my-offers.csv`: the user's own prices
    if source == "bundled":
        gone = clear_refreshes()
        if as_json:
            print_json({"source": "bundled", "dropped_refreshes": gone, "in_force": status()})
            return
        out.print(f"dropped {gone} refreshed file(s): the {in_force()} is in force", highlight=False)
        return
    try:  # bad input (a missing file, gpuhunt not installed) is a GpuplanError: one line, exit 2
        fetched = fetch(source, Query(provider=provider, path=file))
        saved = save_refresh(refresh_name(source, provider, file), source, fetched.origin, fetched.offers)
    except (SourceError, OSError) as e:  # the source could not answer, or the cache could not be written
        err.print(Text("prices not updated:", style="yellow") + f" {e}. The prices in force stay as they were: "
                  f"{in_force()}.", highlight=False, soft_wrap=True)
        if as_json:  # a script asked for JSON: it gets it, the failure included (exit 1 all the same)
            print_json({"source": source, "updated": False, "reason": str(e), "in_force": status()})
        raise typer.Exit(1) from None
    summary = {"source": source, "updated": True, "rows": saved.rows,
               "gpu_types": len({o.gpu_id for o in fetched.offers}), "path": str(saved.path),
               "fetched_at": saved.fetched_at, "origin": fetched.origin, "unmapped_gpu_names": fetched.unmapped,
               "implausible_rows_left_out": fetched.implausible}
    if as_json:
        print_json(summary)
        return
    out.print(f"saved {saved.rows} offers for {summary['gpu_types']} GPU types from {source} ({fetched.origin}) to "
              f"{saved.path}; later commands price on them", highlight=False)
    if fetched.unmapped:
        names = ", ".join(f"{k} ({v})" for k, v in sorted(fetched.unmapped.items()))
        out.print(Text(f"not in the GPU catalog, skipped: {names}", style="dim"), highlight=False)
    if fetched.implausible:
        low, high = USD_PER_GPU_HOUR
        counts = ", ".join(f"{n} by {kind}" for kind, n in sorted(fetched.implausible.items()))
        out.print(Text(f"left out as implausible: {counts} (prices outside ${low:g}-${high:,.0f} per GPU-hour, or "
                       f"more than {MAX_GPUS_PER_INSTANCE} GPUs per instance)", style="dim"), highlight=False)
