"""``gpuplan buy``: owning a build against renting any card, or the builds a budget buys (renders
:func:`gpuplan.api.buy`'s answer)."""

from __future__ import annotations

import re
from typing import Annotated, Any

import typer

from ..errors import GpuplanError
from .app import JsonFlag, app, print_json
from .render import FORMAT_HELP, Column, FormatValue, bullet, err, num, out, resolve_format, show, usd

HELP_PANEL_OWN = "Owning"
HELP_PANEL_POWER = "Power and upkeep"
HOST_USD_HELP = ("What the computer around the cards costs, USD [default: the host profile's dated price, "
                 "data/owning.yaml; 0 when the host the cards you --have sit in holds the build].")


def _prices(values: list[str] | None) -> tuple[float | None, dict[str, float]]:
    """``--price 3000`` (the named build's cards) or ``--price 5090=3000`` (a card in a search), repeatable."""
    one, by_card = None, {}
    for item in values or []:
        name, sep, amount = item.rpartition("=")
        try:
            value = float(amount)
        except ValueError:
            raise GpuplanError(f"--price takes USD (3000) or CARD=USD (5090=3000), got {item!r}") from None
        if sep and not name.strip():
            raise GpuplanError(f"--price takes USD (3000) or CARD=USD (5090=3000), got {item!r}: name the card")
        if sep:
            by_card[name.strip()] = value
        else:
            one = value
    return one, by_card


def _counted(build: str | None, count: int | None) -> str | None:
    """The build with ``--count`` written in (``buy 3090 --count 3`` is 3x3090); a count that disagrees with the
    build's own is one sentence (``buy 2x3090 --count 3`` priced three cards without a word, session 18's fuzzing)."""
    if count is None or not build:
        return build
    counted = re.fullmatch(r"\s*(\d+)\s*x\s*(.+)", build, re.IGNORECASE)
    if counted and int(counted[1]) != count:
        raise GpuplanError(f"the build {build.strip()} counts {int(counted[1])} cards and --count {count}: give the "
                           "count once")
    return f"{count}x{counted[2] if counted else build}"


BUY_HELP = """Buy or rent? The total cost of owning a build against renting any card for the same work.

Owning: the cards (a dated street price, the launch MSRP, or --price) and the host (a profile or --host-usd),
power for the hours the work takes (cards at TDP, idle draw otherwise, your region's electricity), less the
resale after the horizon (used-market depreciation), plus maintenance and space where given. Renting: each job's
plan on the rented cards, whole instances, on-demand and spot (with Daly's checkpointing overhead). Every total
is at the pessimistic end of the speed band; break-even months and utilization are said. The build's checks
(power supply, lanes, slots, cooling, NVLink, host RAM, display) follow. With --budget, the builds that budget
buys, ranked by what they run and by cost per job.

Examples:

\b
  gpuplan buy 8x5090 --rent 8xh100-sxm --workloads examples/weekly-8b-finetunes.yaml --host-usd 6000
  gpuplan buy --budget 15000 --workloads examples/weekly-8b-finetunes.yaml
  gpuplan buy 2x3090 --used --utilization 0.3 --years 2 --region us-ca
  gpuplan buy 3x3090 --have 2x3090 --used --workloads examples/owning-example.yaml
"""


# the cards of the build owned already, spelled as recommend --have spells them (api/owning.py ``_owned``)
HaveOption = Annotated[str | None, typer.Option(help="Of the build's cards, those you own already, as recommend "
                                                     "--have writes them: 2x3090 (their price left out: "
                                                     "docs/owning.md).", rich_help_panel=HELP_PANEL_OWN)]


@app.command("buy", help=BUY_HELP)
def buy_cmd(
    build: Annotated[str | None, typer.Argument(help="The build to price: COUNTxCARD (8x5090, 2x3090, dgx-spark). "
                                                     "Leave it out with --budget to search.")] = None,
    workloads: Annotated[str | None, typer.Option(help="YAML file of the work: jobs, how often they run "
                                                       "(docs/owning.md).")] = None,
    rent: Annotated[list[str] | None, typer.Option(help="Rent these instead: COUNTxCARD (8xh100-sxm); repeatable "
                                                        "[default: the same cards]; one that cannot run the work is "
                                                        "named with the fewest of its cards that can.")] = None,
    budget: Annotated[float | None, typer.Option(help="Search the builds this many USD buy (with --workloads).")]
    = None,
    years: Annotated[float | None, typer.Option(help="The horizon in years [default: the workloads file's, else 1].")]
    = None,
    gpus: Annotated[str | None, typer.Option(help="Search only these cards (comma-separated).")] = None,
    count: Annotated[int | None, typer.Option(help="How many cards (or write 8x5090) [default: the "
                                                        "build's COUNTx, else 1].", min=1, max=8)] = None,
    price: Annotated[list[str] | None, typer.Option(help="What you pay per card: USD, or CARD=USD (a search's cards "
                                                         "each) [default: a dated street price, else launch MSRP].",
                                                    rich_help_panel=HELP_PANEL_OWN)] = None,
    have: HaveOption = None,
    used: Annotated[bool, typer.Option("--used", help="Price the cards used.", rich_help_panel=HELP_PANEL_OWN)]
    = False,
    host: Annotated[str | None, typer.Option(help="Host profile: desktop, epyc-4gpu, workstation, server-8gpu "
                                                  "[default: the smallest that holds the cards].",
                                             rich_help_panel=HELP_PANEL_OWN)] = None,
    host_usd: Annotated[float | None, typer.Option(help=HOST_USD_HELP,
                                                   rich_help_panel=HELP_PANEL_OWN)] = None,
    host_ram: Annotated[float | None, typer.Option(help="The host's RAM, GiB [default: the profile's, said].",
                                                   rich_help_panel=HELP_PANEL_OWN)] = None,
    host_w: Annotated[float | None, typer.Option(help="The host's draw while it works, W [default: the profile's].",
                                                 rich_help_panel=HELP_PANEL_POWER)] = None,
    host_idle_w: Annotated[float | None, typer.Option(help="The host's idle draw, W [default: the profile's].",
                                                      rich_help_panel=HELP_PANEL_POWER)] = None,
    display: Annotated[str, typer.Option(help="A card also drives a desktop on this OS: linux or windows (what it "
                                              "holds is counted on the card, as estimate --display does).",
                                         rich_help_panel=HELP_PANEL_OWN)] = "none",
    region: Annotated[str | None, typer.Option(help="Electricity price of: us, us-ca, us-tx, us-ny, us-wa, us-ma, "
                                                    "us-hi, eu, de, be, dk, hu [default: us].",
                                               rich_help_panel=HELP_PANEL_POWER)] = None,
    sector: Annotated[str, typer.Option(help="residential (a home) or commercial (an office, a rack).",
                                        rich_help_panel=HELP_PANEL_POWER)] = "residential",
    usd_per_kwh: Annotated[float | None, typer.Option(help="Your electricity price (instead of --region).",
                                                      rich_help_panel=HELP_PANEL_POWER)] = None,
    pue: Annotated[float, typer.Option(help="Cooling overhead: 1.0 at home, ~1.4 in a data centre.",
                                       rich_help_panel=HELP_PANEL_POWER)] = 1.0,
    off_when_idle: Annotated[bool, typer.Option("--off-when-idle", help="Switched off between jobs (no idle draw).",
                                                rich_help_panel=HELP_PANEL_POWER)] = False,
    maintenance_usd: Annotated[float, typer.Option(help="Maintenance per year, USD.",
                                                   rich_help_panel=HELP_PANEL_POWER)] = 0.0,
    space_usd_per_month: Annotated[float, typer.Option(help="Space (rack, colocation) per month, USD.",
                                                       rich_help_panel=HELP_PANEL_POWER)] = 0.0,
    hours: Annotated[float | None, typer.Option(help="Without workloads: hours of use over the horizon (this, "
                                                     "--utilization or --workloads is needed).")] = None,
    utilization: Annotated[float | None, typer.Option(help="Without workloads: the share of the horizon's HOURS the "
                                                           "cards work (0.3 = 30 %).")] = None,
    top: Annotated[int, typer.Option(help="Builds to show in a search.", min=1, max=100)] = 10,
    fmt: Annotated[FormatValue | None, typer.Option("--format", help=FORMAT_HELP, show_default=False)] = None,
    as_json: JsonFlag = False,
) -> None:
    from .. import api

    fmt = resolve_format(fmt, as_json)  # two formats asked for: refused before any work
    build = _counted(build, count)
    one, by_card = _prices(price)
    report = api.buy(build, workloads=workloads, rent=rent or (), budget_usd=budget, years=years,
                     gpus=gpus or (), price=one, prices=by_card, used=used, host=host,
                     host_usd=host_usd, host_ram_gib=host_ram, host_w=host_w, host_idle_w=host_idle_w,
                     display=display, region=region, sector=sector, usd_per_kwh=usd_per_kwh, pue=pue,
                     off_when_idle=off_when_idle, maintenance_usd_per_year=maintenance_usd,
                     space_usd_per_month=space_usd_per_month, hours=hours, utilization=utilization, top=top,
                     have=have)
    if fmt == "json":
        print_json(report)
        return
    for warning in report.warnings:
        bullet(warning, prefix="warning: ", style="bold yellow", stream=err)
    if report.budget_usd is not None:
        render_search(report, fmt)
    else:
        render_build(report, fmt)


def _hours(p: Any) -> str:
    if not p.runs:
        return "cannot: " + p.why_not
    if p.hours_per_run is None:
        return ""
    text = f"{p.hours_per_run_low:,.2f} h/{p.per} ({p.hours_per_run:,.2f})" if p.hours_per_run >= 0.1 else \
        f"{p.hours_per_run_low * 3600:,.1f} s/{p.per} ({p.hours_per_run * 3600:,.1f})"  # a call: seconds
    return text + (f", {p.change}" if p.change else "")


def render_build(report: Any, fmt: str) -> None:
    b = report.builds[0]
    o = b.ownership
    out.print(f"buy {b.build.label} ({b.build.gpu_name}): {b.build.card.label} each + host ${b.build.host_usd:,.0f} "
              f"= ${b.build.purchase_usd:,.0f}", highlight=False)
    setups = [("own", b.jobs)] + [(r.label, r.jobs) for r in report.rentals]
    if any(p.hours_per_run is not None or not p.runs for _, jobs in setups for p in jobs):
        rows = [{"job": p.job, **{f"s{i}": _hours(jobs[k]) for i, (_, jobs) in enumerate(setups)}}
                for k, p in enumerate(b.jobs)]
        show(rows, [Column("job", "job", priority=0),
                    *(Column(f"s{i}", name, priority=1) for i, (name, _) in enumerate(setups))], fmt,
             title="time per run (a call, a serving day) at the low end of the speed band (central)")
    rows = [{"setup": f"own {b.build.label}", "total": o.total_usd_low, "central": o.total_usd,
             "detail": f"purchase ${o.purchase_usd:,.0f} + power ${o.power_low.usd:,.0f} ({o.power_low.kwh:,.0f} kWh) "
             f"- resale ${o.resale_usd:,.0f}" + (f" + upkeep ${o.maintenance_usd + o.space_usd:,.0f}"
                                                 if o.maintenance_usd or o.space_usd else "")
             + f"; busy {o.utilization_low:.1%} of hours"}]
    for r, v in zip(report.rentals, b.versus, strict=False):
        months = f"owning pays after {v.break_even_months:,.0f} months" if v.break_even_months else \
            "owning does not pay within 10 years"
        share = f"{v.break_even_utilization:.1%} of hours" if v.break_even_utilization else "none"
        rows.append({"setup": f"rent {r.label}", "total": v.rent_usd, "central": v.rent_usd_central,
                     "detail": f"{', '.join(r.offers)}; {months}; break-even utilization {share}"})
    rows += [{"setup": f"keep {b.build.owned}, rent the rest on {k.rental}", "total": k.total_usd,
              "central": k.total_usd_central, "detail": k.line} for k in b.keep]
    show(rows, [Column("setup", "setup", priority=0), Column("total", f"{o.years:g} y $", fmt=usd, align="right"),
                Column("central", "central $", fmt=usd, align="right", priority=2), Column("detail", "", priority=1)],
         fmt, title=f"cost over {o.years:g} year(s), at the low end of the speed band")
    out.print(f"-> {report.verdict}", highlight=False)
    show([{"status": c.status, "check": c.name, "line": c.line} for c in b.checks],
         [Column("status", "", priority=0), Column("check", "check", priority=0), Column("line", "", priority=1)],
         fmt, title="can it be built (sources: --json)")
    for note in report.notes:
        bullet(note, prefix="note: ", style="dim")


def render_search(report: Any, fmt: str) -> None:
    rows = [{"rank": i + 1, "build": b.build.label, "usd": b.build.purchase_usd, "runs": f"{b.runs}/{len(b.jobs)}",
             "per_job": b.usd_per_job, "busy": f"{b.ownership.utilization_low:.0%}", "largest": b.largest,
             "cannot": "; ".join(b.cannot),
             "rent": b.renting_wins or ("not compared: it cannot run all the work" if b.cannot else
                                        "owning is cheaper")} for i, b in enumerate(report.builds)]
    show(rows, [Column("rank", "#", priority=0), Column("build", "build", priority=0),
                Column("usd", "price $", fmt=num(), align="right"), Column("runs", "runs", align="right"),
                Column("per_job", "$/job", fmt=usd, align="right"), Column("busy", "busy", align="right", priority=2),
                Column("largest", "largest job", priority=3),
                Column("cannot", "cannot", priority=2), Column("rent", "vs renting", priority=2)], fmt,
         title=f"builds for ${report.budget_usd:,.0f}, by jobs they run, then cost of owning per job over "
               f"{report.years:g} y (low end of the speed band)")
    out.print(f"-> {report.verdict}", highlight=False)
    for line in report.unranked:
        bullet(line, prefix="not ranked: ", style="dim")
    for note in report.notes:
        bullet(note, prefix="note: ", style="dim")
