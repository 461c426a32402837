"""Offer sources: small plugins with one contract, bundled and live alike.

A source has a ``name`` and ``get(query) -> list[Offer]``; it raises :class:`SourceError` (one sentence) when it
cannot answer (network, provider), and a plain :class:`GpuplanError` when the input is at fault (a missing or
malformed file, a missing optional dependency). ``gpuplan prices update`` keeps what a source returns in the user's
cache (:mod:`..store`), so that every later command prices on it. The shape follows gpuhunt's providers
(``gpuhunt/providers/*.py``: a name and a ``get`` returning catalog items) and SkyPilot's per-cloud catalogs
(``vms.csv`` per cloud, prices per instance).
"""

from __future__ import annotations

from ...errors import SourceError, UnknownNameError
from ..offers import check_offer, check_provider, check_spot_below_on_demand
from .base import Fetched, Query, Source, plausible
from .files import BundledSource, FileSource
from .gpuhunt_source import GpuhuntSource
from .skypilot import SkyPilotSource

__all__ = ["Fetched", "Query", "Source", "SourceError", "fetch", "plausible", "sources"]


def sources() -> dict[str, Source]:
    return {s.name: s for s in (BundledSource(), FileSource(), SkyPilotSource(), GpuhuntSource())}


def fetch(name: str, query: Query) -> Fetched:
    """Ask source ``name``; the offers come back validated: provider ids plain names, prices and GPU counts
    plausible, spot never above the same on-demand price."""
    table = sources()
    if name not in table:
        raise UnknownNameError("price source", name, table, hint=f"(sources: {', '.join(table)})")
    if query.provider is not None:
        check_provider(query.provider, "--provider")
    fetched = table[name].get(query)
    for o in fetched.offers:  # the vendor readers leave implausible rows out; a new source is held to the same
        check_offer(o, f"the {name} source")
    check_spot_below_on_demand(fetched.offers)
    return fetched
