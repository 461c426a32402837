"""Power at the time actually used: the cards at their TDP (or power limit) and the host at its busy draw for the hours
the work takes, idle draw for the rest of the horizon (or nothing, when the machine is switched off between jobs),
times the room's cooling overhead (PUE) and the electricity price of a region and sector (EIA, Eurostat) or given.

Idle draw of a card: its nvidia-smi capture where ``owning.yaml`` has one, else the median share of TDP of those
captures."""

from __future__ import annotations

import math

from pydantic import BaseModel

from ..errors import GpuplanError, did_you_mean
from ..hardware import GpuSpec
from .facts import Source, electricity, idle

HOURS_PER_YEAR = 8766  # 365.25 days


class Electricity(BaseModel):
    """The price of a kWh: USD, and where it comes from."""

    usd_per_kwh: float
    label: str
    source: str = ""
    circuit: str = "us"  # the household circuit of the region (data/owning.yaml power.circuits): the build's checks


def electricity_price(region: str | None = None, sector: str = "residential",
                      usd_per_kwh: float | None = None) -> Electricity:
    """The electricity price: given, or the region's (``us``, ``us-ca``, ``eu``, ``de``...) for the sector
    (``residential`` for a home, ``commercial`` for an office or a rack), converted from EUR at the cited rate."""
    if usd_per_kwh is not None:
        if isinstance(usd_per_kwh, bool) or not (isinstance(usd_per_kwh, (int, float))
                                                 and math.isfinite(usd_per_kwh) and 0 <= usd_per_kwh <= 10):
            raise GpuplanError(f"--usd-per-kwh must be between 0 and 10, got {usd_per_kwh!r}")
        return Electricity(usd_per_kwh=float(usd_per_kwh), label=f"${usd_per_kwh:.3f}/kWh (given)")
    if sector not in ("residential", "commercial"):
        raise GpuplanError(f"--sector must be residential or commercial, got {sector!r}")
    facts = electricity()
    name = (region or facts["default_region"]).strip().lower()
    if name not in facts["regions"]:
        close = did_you_mean(name, facts["regions"])
        raise GpuplanError(f"unknown electricity region {name!r}" + (f"; did you mean {' or '.join(close)}?" if close
                           else f"; choose one of {', '.join(facts['regions'])} or give --usd-per-kwh"))
    r = facts["regions"][name]
    circuit = r.get("circuit", "us")
    chosen = sector if r.get(sector) is not None or r.get(f"{sector}_eur") is not None else "residential"
    note = "" if chosen == sector else f" (no {sector} figure for {name}: residential)"
    source = Source(r["url"], r.get("where", "")).line()
    if r.get(f"{chosen}_eur") is not None:
        fx = facts["usd_per_eur"]
        usd = r[f"{chosen}_eur"] * fx["value"]
        return Electricity(usd_per_kwh=usd, label=f"${usd:.3f}/kWh: {name} {chosen} {r['year']}, EUR "
                           f"{r[chosen + '_eur']:.4f} at {fx['value']} USD/EUR ({fx['date']}){note}",
                           source=f"{source}; {Source(fx['url'], fx['where']).line()}", circuit=circuit)
    usd = float(r[chosen])
    return Electricity(usd_per_kwh=usd, label=f"${usd:.3f}/kWh: {name} {chosen} {r['year']}{note}", source=source,
                       circuit=circuit)


def card_idle_w(gpu: GpuSpec) -> tuple[float, str]:
    """A card's idle draw in W and where the figure comes from."""
    facts = idle()
    captured = facts["watts"].get(gpu.id)
    if captured:
        return float(captured["w"]), f"{facts['source']} {captured['where']}"
    share = facts["idle_share_of_tdp"]
    return (gpu.tdp_w or 0.0) * share, f"{share:.1%} of TDP ({facts['derived']})"


def card_busy_w(gpu: GpuSpec) -> float:
    """What a card draws while it works: its TDP, or the power limit it is run at."""
    return float(gpu.busy_w or 0.0)


class Energy(BaseModel):
    """Energy over a horizon: busy and idle kWh (after PUE) and what they cost."""

    busy_hours: float
    idle_hours: float
    busy_w: float  # the whole build while it works
    idle_w: float  # the whole build while it waits (0: switched off)
    pue: float
    kwh: float
    usd: float


def energy(busy_w: float, idle_w: float, busy_hours: float, total_hours: float, pue: float,
           price: Electricity, *, off_when_idle: bool = False) -> Energy:
    """kWh and USD for ``busy_hours`` at ``busy_w`` and the rest of ``total_hours`` at ``idle_w`` (0 when the
    machine is switched off between jobs), times ``pue``."""
    idle_hours = max(total_hours - busy_hours, 0.0)
    waiting = 0.0 if off_when_idle else idle_w
    kwh = (busy_hours * busy_w + idle_hours * waiting) / 1000 * pue
    return Energy(busy_hours=busy_hours, idle_hours=idle_hours, busy_w=busy_w, idle_w=waiting, pue=pue, kwh=kwh,
                  usd=kwh * price.usd_per_kwh)
