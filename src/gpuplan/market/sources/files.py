"""The two file sources: the bundled snapshot, and the user's own CSV (negotiated prices) with the columns of
``data/offers.csv``."""

from __future__ import annotations

from ...errors import GpuplanError
from ..offers import read_offers
from ..store import BUNDLED, bundled_offers
from .base import Fetched, Query


class BundledSource:
    name = "bundled"

    def get(self, query: Query) -> Fetched:
        offers = [o for o in bundled_offers() if not query.provider or o.provider == query.provider]
        return Fetched(offers=offers, origin=BUNDLED)


class FileSource:
    name = "file"

    def get(self, query: Query) -> Fetched:
        if query.path is None:
            raise GpuplanError("--source file needs --file PATH: a CSV with the columns of data/offers.csv")
        offers = [o for o in read_offers(query.path) if not query.provider or o.provider == query.provider]
        return Fetched(offers=offers, origin=str(query.path))
