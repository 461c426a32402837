"""What a card sells for after ``t`` years: its price x (1 - d)^t, ``d`` the annual loss its class shows on the used
market (``owning.yaml`` depreciation): data-center cards the median of SpotWire's eBay-measured decays, consumer cards
the RTX 3090's launch price against its used price 5.75 years later; workstation cards, Apple silicon and the
unified-memory boxes take the consumer rate (no study of their used market was found, said so)."""

from __future__ import annotations

from pydantic import BaseModel

from ..hardware import GpuSpec
from .facts import Source, depreciation


class Depreciation(BaseModel):
    per_year: float  # the share of value lost each year
    kind: str  # datacenter | consumer
    source: str
    note: str = ""


def consumer_rate() -> float:
    """The annual loss of the RTX 3090: 1 - (used / launch) ^ (1 / years)."""
    d = depreciation("consumer")
    return 1 - (d["used_usd"] / d["launch_usd"]) ** (1 / d["used_years"])


def depreciation_of(gpu: GpuSpec) -> Depreciation:
    if gpu.segment == "datacenter":
        d = depreciation("datacenter")
        return Depreciation(per_year=d["per_year"], kind="datacenter", source=Source(d["url"], d["where"]).line(),
                            note=f"{d['derived']}; range {d['range']}")
    d = depreciation("consumer")
    note = d["derived"] + "; " + d["range"]
    if gpu.segment != "consumer" or gpu.unified_memory:
        note = f"no used-market study found for {gpu.segment} cards or unified-memory computers: the consumer rate; " \
            + note
    return Depreciation(per_year=consumer_rate(), kind="consumer", source=Source(d["url"], d["where"]).line(),
                        note=note)


def resale_usd(value_usd: float, years: float, rate: Depreciation) -> float:
    """What ``value_usd`` of hardware sells for after ``years``."""
    return value_usd * (1 - rate.per_year) ** max(years, 0.0)
