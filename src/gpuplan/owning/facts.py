"""The sourced figures owning needs, read once from ``data/owning.yaml`` (each with its url and the words that hold
it; docs/owning.md says how each is used): street prices, depreciation, electricity, idle draw, coolers, host
profiles and power delivery."""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cache
from typing import Any

from ..errors import GpuplanError, did_you_mean
from ..market.owned_power import electricity_facts, owning_yaml


@dataclass(frozen=True)
class Source:
    """Where a figure comes from: an address and the words there that hold it (or how it was worked out)."""

    url: str
    where: str = ""

    def line(self) -> str:
        return f"{self.url}: {self.where}" if self.where else self.url


@dataclass(frozen=True, kw_only=True)
class HostProfile:
    """The computer around the cards: its price (None: not sourced, give it), RAM, PCIe lanes and x16-length slots
    for cards, the slots between two of them (``slot_pitch``), its PSU where the price includes one, and its own draw
    busy and idle, each with the sources that hold them."""

    id: str
    label: str
    max_gpus: int
    usd: float | None
    ram_gib: float
    gpu_lanes: int
    slots: int
    slot_pitch: int
    psu_w: float | None
    busy_w: float
    idle_w: float
    sources: tuple[Source, ...] = field(default=())
    notes: tuple[str, ...] = field(default=())


def owning_facts() -> dict[str, Any]:
    """data/owning.yaml, as the market reads it (:func:`gpuplan.market.owned_power.owning_yaml`: one reading)."""
    return owning_yaml()


def street_rows(gpu_id: str) -> list[dict[str, Any]]:
    """The dated street prices of a card (new and used), as the data file has them."""
    return list(owning_facts()["street_prices"].get(gpu_id, ()))


def depreciation(kind: str) -> dict[str, Any]:
    return owning_facts()["depreciation"][kind]


def electricity() -> dict[str, Any]:
    return electricity_facts()  # one reader for the market's own-card price and buy


def idle() -> dict[str, Any]:
    return owning_facts()["idle"]


def coolers() -> dict[str, Any]:
    return owning_facts()["coolers"]


def power() -> dict[str, Any]:
    return owning_facts()["power"]


def linked(gpu_id: str) -> dict[str, Any] | None:
    """How many of a unified-memory computer link with cables alone (``most``), with sources, or None."""
    return owning_facts().get("linked_computers", {}).get(gpu_id)


def _sources(entry: dict[str, Any]) -> tuple[Source, ...]:
    pairs = [("url", "where"), ("lanes_url", "lanes_where"), ("power_url", "power_where")]
    return tuple(Source(entry[u], entry.get(w, "")) for u, w in pairs if entry.get(u))


@cache
def host_profiles() -> dict[str, HostProfile]:
    out = {}
    for key, e in owning_facts()["hosts"].items():
        notes = tuple(n for n in (e.get("derived"), e.get("lanes_note"), e.get("idle_note")) if n)
        out[key] = HostProfile(id=key, label=e["label"], max_gpus=int(e["max_gpus"]), usd=e.get("usd"),
                               ram_gib=float(e["ram_gib"]), gpu_lanes=int(e["gpu_lanes"]), slots=int(e["slots"]),
                               slot_pitch=int(e["slot_pitch"]), psu_w=e.get("psu_w"), busy_w=float(e["busy_w"]),
                               idle_w=float(e["idle_w"]), sources=_sources(e), notes=notes)
    return out


def host_profile(name: str) -> HostProfile:
    profiles = host_profiles()
    if name not in profiles:
        close = did_you_mean(name, list(profiles))
        raise GpuplanError(f"unknown host profile {name!r}" + (f"; did you mean {' or '.join(close)}?" if close
                                                                else f"; choose one of {', '.join(profiles)}"))
    return profiles[name]


def host_for(count: int) -> HostProfile:
    """The smallest host profile that holds ``count`` cards."""
    fitting = [p for p in host_profiles().values() if p.max_gpus >= count]
    if not fitting:
        raise GpuplanError(f"no host profile holds {count} cards (8 at most in one machine): split the build")
    return min(fitting, key=lambda p: p.max_gpus)
