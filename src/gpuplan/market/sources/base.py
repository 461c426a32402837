"""The contract every offer source keeps (:mod:`gpuhunt`'s providers and SkyPilot's catalogs are read through it):
a ``name`` and ``get(query) -> Fetched``; :class:`SourceError` when it cannot answer; :func:`plausible` for the
vendor rows it keeps."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from ... import clock
from ..offers import Offer, implausible


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
    bad = implausible(offer.price_usd_per_gpu_hour, offer.gpu_count)
    if bad:
        left_out[bad.kind] = left_out.get(bad.kind, 0) + 1
    return bad is None


class Source(Protocol):
    name: str

    def get(self, query: Query) -> Fetched: ...
