"""Which offers are in force, and where each price came from.

Layers, later ones winning for the same key (provider, tier, GPU, GPUs per instance, pricing, region):

1. the bundled snapshot ``data/offers.csv`` (dated and cited per row);
2. refreshed offers in the user's cache (``gpuplan prices update``: one CSV per source under
   ``<cache>/offers/``, each with a small JSON note of when and from what it was fetched), oldest refresh first;
3. the user's own ``<config>/offers.csv`` (negotiated prices);
4. ``--catalog FILE`` arguments, in order.

Then negotiated discounts (``<config>/discounts.yaml``, ``--discount``) apply. :class:`PriceFilter` and
:func:`matches` decide which rows a ranking may use: not older than ``max_age_days`` (default 90) and not
low-confidence unless asked; both are reported, never silent.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import re
import shutil
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, replace
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

from .. import clock
from ..errors import GpuplanError, UnknownNameError, echo
from ..userdirs import cache_dir, config_dir
from ..userfiles import read_mapping
from .offers import Offer, check_spot_below_on_demand, price_origin, read_offers, write_offers  # noqa: F401

MAX_PRICE_AGE_DAYS = 90
_NAME = r"[a-z0-9][a-z0-9_-]{0,79}"  # a refresh's file name in the cache (refresh_name); compiled on a save
BUNDLED = "bundled data/offers.csv"


@dataclass(frozen=True, kw_only=True)
class PriceFilter:
    """Which offers a ranking may use: on or after ``today - max_age_days``, low-confidence only if asked."""

    max_age_days: int | None = MAX_PRICE_AGE_DAYS
    include_low_confidence: bool = False
    today: dt.date | None = None


def matches(o: Offer, f: PriceFilter) -> bool:
    """Pure: whether ``o`` passes ``f``."""
    if f.max_age_days is not None and o.age_days(f.today) > f.max_age_days:
        return False
    return f.include_low_confidence or o.confidence != "low"


def price_filter(s) -> PriceFilter:
    """The filter a scenario asks for (``max_price_age_days``, ``include_low_confidence``), as of today: the clock
    read once for the answer, not once per offer matched (385 reads in one estimate, 4,068 in one recommend)."""
    return PriceFilter(max_age_days=getattr(s, "max_price_age_days", MAX_PRICE_AGE_DAYS),
                       include_low_confidence=getattr(s, "include_low_confidence", False), today=clock.today())


def offers_dir() -> Path:
    return cache_dir() / "offers"


@cache
def bundled_offers() -> tuple[Offer, ...]:
    path = resources.files("gpuplan") / "data" / "offers.csv"
    return tuple(read_offers(Path(str(path)), origin=BUNDLED))


def bundled_date() -> dt.date:
    """The newest observation in the bundled snapshot."""
    return max(o.observed_at for o in bundled_offers())


# ---- the cache of refreshed offers --------------------------------------------------------------------------
@dataclass(frozen=True, kw_only=True)
class Refresh:
    """One refreshed offers file in the cache and what it came from."""

    name: str  # skypilot-aws, gpuhunt, file-my-offers
    source: str
    fetched_at: str  # ISO timestamp
    origin: str  # what was read: a file path, or the library and its version
    rows: int
    path: Path


def refreshes() -> list[Refresh]:
    """Every refreshed offers file in the cache, oldest first (a symbolic link is not one: the cache holds only
    what ``prices update`` wrote)."""
    folder = offers_dir()
    out = []
    for meta in sorted(folder.glob("*.json")) if folder.is_dir() else ():
        if meta.is_symlink() or meta.with_suffix(".csv").is_symlink():
            continue
        try:
            data = json.loads(meta.read_text(encoding="utf-8"))
            out.append(Refresh(name=meta.stem, source=data["source"], fetched_at=data["fetched_at"],
                               origin=data["origin"], rows=int(data["rows"]), path=meta.with_suffix(".csv")))
        except (ValueError, KeyError, OSError):
            continue  # a note we cannot read is ignored; its CSV is then not in force
    return sorted((r for r in out if r.path.is_file()), key=lambda r: r.fetched_at)


def refresh_name(source: str, provider: str | None = None, file: Path | None = None) -> str:
    """The cache's name for a refresh: ``skypilot-aws``, ``gpuhunt-all``, ``file-my-offers``; slugged (lowercase
    letters, digits, ``_`` and ``-``), so that no provider or file name can point outside the cache."""
    what = provider or (file.stem if source == "file" and file else "all")
    return re.sub(r"[^a-z0-9_]+", "-", f"{source}-{what}".lower()).strip("-_")[:80] or "offers"


def save_refresh(name: str, source: str, origin: str, offers: list[Offer], now: dt.datetime | None = None) -> Refresh:
    """Keep ``offers`` in the cache as ``<name>.csv`` with its note, both or neither: each written to a temporary
    file first, then renamed into place (CSV first, so that a note never points at a missing or partial file),
    and the old CSV put back if the note cannot be. ``name`` must be a :func:`refresh_name`."""
    if not offers:
        raise GpuplanError(f"{source} gave no offer for a GPU of the catalog; nothing was written")
    if not re.fullmatch(_NAME, name):
        raise GpuplanError(f"the cache name {echo(name)} is not a plain name (lowercase letters, digits, _ and -)")
    folder = offers_dir()
    path = folder / f"{name}.csv"
    stamp = (now or dt.datetime.now(dt.timezone.utc)).isoformat(timespec="seconds")
    note = {"source": source, "fetched_at": stamp, "origin": origin, "rows": len(offers)}
    with _cache_lock(folder):
        if path.parent.resolve() != folder.resolve():
            raise GpuplanError(f"{path} is not inside the offers cache {folder}")
        fd, note_tmp = tempfile.mkstemp(prefix=f".{name}.", suffix=".tmp", dir=folder)
        backup, written = None, False
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                json.dump(note, f, indent=1)
            if path.is_file() and not path.is_symlink():
                backup = _kept(path, folder / f".{name}.csv.old.tmp")
            write_offers(path, offers)
            written = True
            os.replace(note_tmp, path.with_suffix(".json"))
        except BaseException:
            Path(note_tmp).unlink(missing_ok=True)
            if written and backup is not None:  # the note could not follow the new CSV: the old one again
                os.replace(backup, path)
            elif written:
                path.unlink(missing_ok=True)
            raise
        finally:
            if backup is not None:
                backup.unlink(missing_ok=True)
    return Refresh(name=name, source=source, fetched_at=stamp, origin=origin, rows=len(offers), path=path)


def _kept(path: Path, copy: Path) -> Path:
    """A second name for ``path``'s content (a hard link, else a copy), to put back if the refresh fails."""
    try:
        os.link(path, copy)
    except OSError:
        shutil.copyfile(path, copy)
    return copy


def clear_refreshes() -> int:
    """Remove every refreshed file from the cache (the bundled snapshot is then in force); returns how many."""
    gone = 0
    folder = offers_dir()
    if not folder.is_dir():
        return 0
    with _cache_lock(folder):
        for r in refreshes():
            r.path.unlink(missing_ok=True)
            r.path.with_suffix(".json").unlink(missing_ok=True)
            gone += 1
    return gone


@contextmanager
def _cache_lock(folder: Path) -> Iterator[None]:
    """Hold the offers cache for one writer (an advisory ``flock`` on the folder itself), and first remove the
    temporary files a writer killed mid-way left behind: with the lock held, no other writer is using one.
    Without ``fcntl`` (Windows) only temporary files over an hour old are removed."""
    folder.mkdir(parents=True, exist_ok=True)
    try:
        import fcntl
    except ImportError:
        fcntl = None
    fd = os.open(folder, os.O_RDONLY) if fcntl is not None else None
    try:
        if fd is not None:
            fcntl.flock(fd, fcntl.LOCK_EX)
        oldest = time.time() - (0 if fd is not None else 3600)
        for tmp in folder.glob(".*.tmp"):
            with suppress(OSError):  # gone already, or not ours to remove
                if tmp.lstat().st_mtime <= oldest:
                    tmp.unlink()
        yield
    finally:
        if fd is not None:
            os.close(fd)  # releases the lock


# ---- offers in force -----------------------------------------------------------------------------------------
def load_offers(catalogs: tuple[str, ...] = (), discounts: dict[str, float] | None = None) -> list[Offer]:
    """Bundled offers, overridden by refreshed caches, the user's ``offers.csv`` and each ``catalogs`` file."""
    table = {o.key: o for o in bundled_offers()}
    for r in refreshes():
        origin = f"{r.source} refresh of {r.fetched_at[:10]} ({r.path})"
        for offer in read_offers(r.path, origin=origin):
            table[offer.key] = offer
    user = config_dir() / "offers.csv"
    if any(not str(c).strip() for c in catalogs):
        raise GpuplanError("--catalog needs the path of an offers CSV, got an empty string")
    for path in ([user] if user.is_file() else []) + [Path(c) for c in catalogs]:
        for offer in read_offers(path):
            table[offer.key] = offer
    offers = list(table.values())
    check_spot_below_on_demand(offers)
    discounts = {**load_discounts(), **(discounts or {})}
    unknown = set(discounts) - {o.provider for o in offers}
    if unknown:
        raise UnknownNameError("provider", sorted(unknown)[0], {o.provider for o in offers})
    for provider, factor in discounts.items():
        if not 0 < factor <= 1.5:
            raise GpuplanError(f"discount for {provider} must be a price multiplier in (0, 1.5], got {factor}")
    # a copy only where the discount changes (most offers keep 1.0: ~10 us a copy, a millisecond a catalog)
    return [o if (d := discounts.get(o.provider, 1.0)) == o.discount else replace(o, discount=d) for o in offers]


def load_discounts() -> dict[str, float]:
    """``<config>/discounts.yaml``: ``{provider: multiplier}``, e.g. ``runpod: 0.85``."""
    path = config_dir() / "discounts.yaml"
    if not path.is_file():
        return {}
    data = read_mapping(path, "discounts")
    try:
        return {str(k): float(v) for k, v in data.items()}
    except (TypeError, ValueError):
        raise GpuplanError(f"{path}: every discount must be a number like 0.85") from None


def in_force(state: dict[str, Any] | None = None) -> str:
    """The prices in force in one phrase: the bundled snapshot, and the refreshes over it if any."""
    state = state or status()
    where = "; ".join(f"{r['source']} {r['fetched_at'][:10]} ({r['rows']} rows)" for r in state["refreshes"])
    return f"bundled snapshot (observed until {state['bundled_observed_until']})" + (
        f" + refreshes: {where}" if where else "")


def status() -> dict[str, Any]:
    """What is in force: the bundled snapshot's date and every refresh in the cache."""
    return {"bundled_observed_until": bundled_date().isoformat(), "bundled_rows": len(bundled_offers()),
            "cache": str(offers_dir()),
            "refreshes": [{"name": r.name, "source": r.source, "fetched_at": r.fetched_at, "origin": r.origin,
                           "rows": r.rows, "path": str(r.path)} for r in refreshes()]}
