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
from ..offers import Offer, check_spot_below_on_demand


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


class Source(Protocol):
    name: str

    def get(self, query: Query) -> Fetched: ...


def sources() -> dict[str, Source]:
    from .files import BundledSource, FileSource
    from .gpuhunt_source import GpuhuntSource
    from .skypilot import SkyPilotSource

    return {s.name: s for s in (BundledSource(), FileSource(), SkyPilotSource(), GpuhuntSource())}


def fetch(name: str, query: Query) -> Fetched:
    """Ask source ``name``; the offers come back validated (spot never above the same on-demand price)."""
    table = sources()
    if name not in table:
        from ...errors import UnknownNameError

        raise UnknownNameError("price source", name, table, hint=f"(sources: {', '.join(table)})")
    fetched = table[name].get(query)
    check_spot_below_on_demand(fetched.offers)
    return fetched
