"""What a card costs to buy: what the user pays (``--price``), else the newest dated street price (new before used
unless ``used``), else the launch MSRP of the catalog; each said with its date and source. A card with no price at
all (data-center parts, Apple configurations) asks for ``--price``."""

from __future__ import annotations

import math

from pydantic import BaseModel

from ..errors import GpuplanError
from ..hardware import GpuSpec, short_id
from .facts import Source, street_rows


class Price(BaseModel):
    """One purchase price: USD, where it comes from (``given``, ``street new``, ``street used``, ``launch MSRP``),
    its date and source, and the range the source gives."""

    usd: float
    kind: str
    date: str = ""
    source: str = ""
    low: float | None = None
    high: float | None = None

    @property
    def label(self) -> str:
        when = f" ({self.date})" if self.date else ""
        span = f", ${self.low or self.usd:,.0f}-${self.high:,.0f}" if self.high else ""
        return f"${self.usd:,.0f} {self.kind}{when}{span}"


def given_price(usd: float, what: str = "--price") -> Price:
    if isinstance(usd, bool) or not isinstance(usd, (int, float)) or not math.isfinite(usd) or not 1 <= usd <= 1e8:
        raise GpuplanError(f"{what} must be a price in USD between 1 and 100,000,000, got {usd!r}")
    return Price(usd=float(usd), kind="given")


def card_price(gpu: GpuSpec, *, given: float | None = None, used: bool = False) -> Price:
    """The price of one card (a unified-memory box or a Mac: the whole computer)."""
    if given is not None:
        return given_price(given)
    rows = [r for r in street_rows(gpu.id) if r.get("usd") is not None]
    conditions = ("used",) if used else ("new", "used")
    for condition in conditions:
        found = sorted((r for r in rows if r["condition"] == condition), key=lambda r: str(r["date"]), reverse=True)
        if found:
            r = found[0]
            source = Source(r["url"], r.get("where", "")).line() + (f" ({r['derived']})" if r.get("derived") else "")
            return Price(usd=float(r["usd"]), kind=f"street {condition}", date=str(r["date"]), source=source,
                         low=r.get("low"), high=r.get("high"))
    if gpu.msrp_usd and not used:
        return Price(usd=float(gpu.msrp_usd), kind="launch MSRP", date=gpu.msrp_date or "",
                     source="gpus.yaml launch_msrp_usd (GPUS.md): no dated street price found for this card")
    unpriced = [r for r in street_rows(gpu.id) if r.get("usd") is None]
    why = f" (sourced only for another configuration: {unpriced[0]['where']})" if unpriced else ""
    kind = "used " if used else ""
    raise GpuplanError(f"no {kind}price for {gpu.name} in gpuplan's data{why}: give what you would pay with "
                       f"--price USD (per {'computer' if gpu.unified_memory else 'card'}), e.g. "
                       f"--price {short_id(gpu.id)}=3000 in a search")
