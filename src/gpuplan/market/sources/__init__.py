"""Offer sources: small plugins with one contract, bundled and live alike.

A source has a ``name`` and ``get(query) -> list[Offer]``; it raises :class:`SourceError` (one sentence) when it
cannot answer (network, provider), and a plain :class:`GpuplanError` when the input is at fault (a missing or
malformed file, a missing optional dependency). ``gpuplan prices update`` keeps what a source returns in the user's
cache (:mod:`..store`), so that every later command prices on it. The shape follows gpuhunt's providers
(``gpuhunt/providers/*.py``: a name and a ``get`` returning catalog items) and SkyPilot's per-cloud catalogs
(``vms.csv`` per cloud, prices per instance).
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from ... import clock
from ...errors import GpuplanError
from ..offers import Offer, check_offer, check_provider, check_spot_below_on_demand, implausible


class SourceError(GpuplanError):
    """A source could not answer though the input was right (offline, a provider's API failed): not a usage
    error, so the CLI says the prices in force stay and exits 1."""


@dataclass(frozen=True, kw_only=True)
class Query:
    """What to fetch: one provider (or all), from a file or folder where the source reads one."""

    provider: str | None = None
    path: Path | None = None
    today: dt.date = field(default_factory=clock.today)


@dataclass(kw_only=True)
class Fetched:
    """A source's answer: the offers, what was read, and the vendor names it could not map to the catalog."""

    offers: list[Offer]
    origin: str
    unmapped: dict[str, int] = field(default_factory=dict)
    implausible: dict[str, int] = field(default_factory=dict)  # rows left out: "price" or "GPU count" -> rows


def plausible(offer: Offer, left_out: dict[str, int]) -> bool:
    """Whether a vendor catalog's row is a plausible offer (:func:`..offers.implausible`); one that is not is
    counted in ``left_out`` ("price" or "GPU count") and left out: SkyPilot's and gpuhunt's catalogs hold odd
    rows, and one should not cost the whole refresh (a file of the user's own is refused whole instead)."""
    why = implausible(offer.price_usd_per_gpu_hour, offer.gpu_count)
    if why:
        kind = "price" if why.startswith("price") else "GPU count"
        left_out[kind] = left_out.get(kind, 0) + 1
    return why is None


class Source(Protocol):
    name: str

    def get(self, query: Query) -> Fetched: ...


def sources() -> dict[str, Source]:
    from .files import BundledSource, FileSource
    from .gpuhunt_source import GpuhuntSource
    from .skypilot import SkyPilotSource

    return {s.name: s for s in (BundledSource(), FileSource(), SkyPilotSource(), GpuhuntSource())}


def fetch(name: str, query: Query) -> Fetched:
    """Ask source ``name``; the offers come back validated: provider ids plain names, prices and GPU counts
    plausible, spot never above the same on-demand price."""
    table = sources()
    if name not in table:
        from ...errors import UnknownNameError

        raise UnknownNameError("price source", name, table, hint=f"(sources: {', '.join(table)})")
    if query.provider is not None:
        check_provider(query.provider, "--provider")
    fetched = table[name].get(query)
    for o in fetched.offers:  # the vendor readers leave implausible rows out; a new source is held to the same
        check_offer(o, f"the {name} source")
    check_spot_below_on_demand(fetched.offers)
    return fetched
