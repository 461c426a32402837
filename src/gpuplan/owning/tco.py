"""The total cost of owning a build over a horizon of ``years``:

    purchase (cards + host) + power + maintenance + space - resale

- **power** at the time actually used (:mod:`.power`): the busy hours the jobs' Plans take, the cards at their TDP
  and the host at its busy draw; idle draw for the rest of the horizon (or none, switched off), times the PUE;
- **resale** (:mod:`.resale`): the cards bought (or the whole computer) after ``years`` at their class's used-market
  depreciation; the host is counted as worth nothing (conservative: no study of used host prices was found);
- **maintenance** and **space**: as given (none unless given, said in the answer).

Everything is worked out twice: at the jobs' central speed and at the low end of their speed band (the runs take
longer, so the build is busy, and draws power, for more hours)."""

from __future__ import annotations

from pydantic import BaseModel

from ..hardware import gpus
from .builds import Build
from .plans import JobPlan
from .power import HOURS_PER_YEAR, Electricity, Energy, card_busy_w, card_idle_w, energy
from .resale import Depreciation, depreciation_of, resale_usd


class Ownership(BaseModel):
    """What owning ``build`` for ``years`` costs, line by line, at the central speed and at the low end."""

    years: float
    horizon_hours: float
    cards_usd: float
    host_usd: float
    purchase_usd: float
    busy_hours: float
    busy_hours_low: float
    utilization: float  # the share of the horizon's hours the build works
    utilization_low: float
    busy_w: float  # the whole build while it works: the cards a job runs on at TDP, the others idle, + host
    spare_cards: float  # of the build's cards idle while its work runs (an average over the jobs' hours)
    idle_w: float  # ... while it waits
    idle_source: str
    electricity: Electricity
    power: Energy
    power_low: Energy
    depreciation: Depreciation
    resale_usd: float
    maintenance_usd: float
    space_usd: float
    total_usd: float
    total_usd_low: float
    overbooked: bool = False  # the work needs more hours than the horizon has (at the low end)


def own(build: Build, plans: list[JobPlan], years: float, price: Electricity, *, pue: float = 1.0,
        off_when_idle: bool = False, maintenance_usd_per_year: float = 0.0,
        space_usd_per_month: float = 0.0) -> Ownership:
    """The cost of owning ``build`` for ``years`` while it runs ``plans`` (the jobs' Plans on it)."""
    gpu = gpus()[build.gpu_id]
    horizon = years * HOURS_PER_YEAR
    busy = sum(p.busy_hours_per_year for p in plans if p.runs) * years
    busy_low = sum(p.busy_hours_per_year_low for p in plans if p.runs) * years
    card_idle, idle_source = card_idle_w(gpu)
    if build.whole_computer and not gpu.tdp_w:  # a Mac: the computer's own figures, not a share of a TDP
        idle_source = build.notes[0]
    spare = spare_cards(build, [p for p in plans if p.runs])
    busy_w = build.count * card_busy_w(gpu) + build.host_busy_w - spare * (card_busy_w(gpu) - card_idle)
    idle_w = build.count * card_idle + build.host_idle_w
    central = energy(busy_w, idle_w, min(busy, horizon), horizon, pue, price, off_when_idle=off_when_idle)
    low = energy(busy_w, idle_w, min(busy_low, horizon), horizon, pue, price, off_when_idle=off_when_idle)
    rate = depreciation_of(gpu)
    cards = build.card.usd * build.bought  # cards owned already are not bought (builds.py make_build)
    resale = resale_usd(cards, years, rate)
    maintenance, space = maintenance_usd_per_year * years, space_usd_per_month * 12 * years
    fixed = cards + build.host_usd + maintenance + space - resale
    return Ownership(years=years, horizon_hours=horizon, cards_usd=cards, host_usd=build.host_usd,
                     purchase_usd=build.purchase_usd, busy_hours=busy, busy_hours_low=busy_low,
                     utilization=min(busy / horizon, 1.0), utilization_low=min(busy_low / horizon, 1.0),
                     busy_w=busy_w, spare_cards=spare, idle_w=idle_w, idle_source=idle_source, electricity=price,
                     power=central,
                     power_low=low, depreciation=rate, resale_usd=resale, maintenance_usd=maintenance,
                     space_usd=space, total_usd=fixed + central.usd, total_usd_low=fixed + low.usd,
                     overbooked=busy_low > horizon)


def spare_cards(build: Build, plans: list[JobPlan]) -> float:
    """How many of the build's cards sit idle while its work runs, averaged over the jobs' busy hours (a module plan
    runs on one card of a build of several: owning/plans.py ``job_plan``); the build draws their idle power, not
    their TDP, then. The low end of the speed band stretches each job's hours alike, so one average serves both
    ends."""
    hours = sum(p.busy_hours_per_year for p in plans)
    if not hours:
        return 0.0
    return sum(p.busy_hours_per_year * (build.count - min(p.cards or build.count, build.count))
               for p in plans) / hours


def owned_total(o: Ownership, years: float, work_scale: float, *, low: bool = True) -> float:
    """What owning costs over ``years`` (up to the horizon it was priced for) with the year's work scaled by
    ``work_scale``: purchase + upkeep - the resale at ``years`` + the power the scaled work draws."""
    rate = o.depreciation.per_year
    resale = o.cards_usd * (1 - rate) ** years
    upkeep = (o.maintenance_usd + o.space_usd) / o.years * years
    busy = (o.busy_hours_low if low else o.busy_hours) / o.years * years * work_scale
    hours = years * HOURS_PER_YEAR
    busy = min(busy, hours)
    idle_w = o.power.idle_w
    kwh = (busy * o.busy_w + (hours - busy) * idle_w) / 1000 * o.power.pue
    return o.purchase_usd + upkeep - resale + kwh * o.electricity.usd_per_kwh
