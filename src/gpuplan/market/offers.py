"""Dated cloud prices (``data/offers.csv``) and provider facts (``data/providers.yaml``).

Rows are validated on load: unknown GPU ids, non-positive prices and spot prices above the matching
on-demand price are errors. A row older than :data:`STALE_DAYS` is marked stale and carries its age into
every output. User files override bundled rows with the same key (provider, tier, GPU, count, pricing,
region): ``~/.config/gpuplan/offers.csv`` and any ``--catalog PATH``, the later winning; each offer says
which file its price came from. Negotiated prices: a per-provider discount multiplier.
"""

from __future__ import annotations

import csv
import datetime as dt
from dataclasses import dataclass, replace
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

import yaml

from ..errors import GpuplanError, UnknownNameError
from ..hardware import Network, gpus
from ..userdirs import config_dir

STALE_DAYS = 30
PRICINGS = ("on_demand", "spot", "interruptible", "reserved")
COLUMNS = ("provider", "tier", "gpu_id", "gpu_count", "pricing", "price_usd_per_gpu_hour", "region", "intra_node",
           "observed_at", "source", "notes")  # optional: inter_node, inter_node_gbps (see hardware.Network)


@dataclass(frozen=True, kw_only=True)
class Offer:
    """One price: ``gpu_count`` GPUs of ``gpu_id`` at ``price_usd_per_gpu_hour`` each."""

    provider: str
    tier: str
    gpu_id: str
    gpu_count: int
    pricing: str
    price_usd_per_gpu_hour: float
    region: str
    intra_node: str
    observed_at: dt.date
    source: str
    notes: str
    origin: str  # the file the price came from
    discount: float = 1.0
    inter_node: str = ""  # infiniband | roce | ethernet | none | "" (unknown)
    inter_node_gbps: float | None = None

    @property
    def network(self) -> Network:
        return Network(intra_node=self.intra_node, inter_node=self.inter_node, inter_node_gbps=self.inter_node_gbps)

    @property
    def key(self) -> tuple:
        return self.provider, self.tier, self.gpu_id, self.gpu_count, self.pricing, self.region

    @property
    def interruptible(self) -> bool:
        return self.pricing in ("spot", "interruptible")

    @property
    def usd_per_gpu_hour(self) -> float:
        return self.price_usd_per_gpu_hour * self.discount

    def age_days(self, today: dt.date | None = None) -> int:
        return ((today or dt.date.today()) - self.observed_at).days

    def stale(self, today: dt.date | None = None) -> bool:
        return self.age_days(today) > STALE_DAYS

    @property
    def label(self) -> str:
        tier = f" {self.tier}" if self.tier not in ("neocloud", "hyperscaler", "marketplace") else ""
        return f"{self.provider}{tier} {self.gpu_count}x {self.pricing}"


def _parse(row: dict[str, str], origin: str, line: int) -> Offer:
    where = f"{origin} line {line}"
    missing = [c for c in ("provider", "gpu_id", "pricing", "price_usd_per_gpu_hour", "observed_at") if not row.get(c)]
    if missing:
        raise GpuplanError(f"{where}: missing {', '.join(missing)}")
    if row["gpu_id"] not in gpus():
        raise UnknownNameError("GPU id", row["gpu_id"], gpus(), hint=f"({where}; ids as in `gpuplan gpus`)")
    if row["pricing"] not in PRICINGS:
        raise GpuplanError(f"{where}: pricing {row['pricing']!r} must be one of {', '.join(PRICINGS)}")
    try:
        price = float(row["price_usd_per_gpu_hour"])
        count = int(row.get("gpu_count") or 1)
        observed = dt.date.fromisoformat(row["observed_at"])
    except ValueError as err:
        raise GpuplanError(f"{where}: {err}") from None
    if not (0 < price < 10_000) or not 0 < count <= 1024:
        raise GpuplanError(f"{where}: price_usd_per_gpu_hour must be a positive number below 10,000 and gpu_count "
                           f"positive (got {price}, {count})")
    if observed > dt.date.today() + dt.timedelta(days=1):
        raise GpuplanError(f"{where}: observed_at {observed} is in the future; give the date the price was seen")
    return Offer(provider=row["provider"], tier=row.get("tier") or "", gpu_id=row["gpu_id"], gpu_count=count,
                 pricing=row["pricing"], price_usd_per_gpu_hour=price, region=row.get("region") or "",
                 intra_node=row.get("intra_node") or "", observed_at=observed, source=row.get("source") or "",
                 notes=row.get("notes") or "", origin=origin)


def read_offers(path: Path | str, origin: str | None = None) -> list[Offer]:
    path = Path(path)
    if not path.is_file():
        raise GpuplanError(f"no offers file {str(path)!r}")
    try:
        with path.open(encoding="utf-8", newline="") as f:
            return [_parse(row, origin or str(path), n) for n, row in enumerate(csv.DictReader(f), start=2)]
    except (UnicodeDecodeError, csv.Error) as err:
        raise GpuplanError(f"{path} is not a UTF-8 CSV of offers ({err.__class__.__name__}); columns as in "
                           "data/offers.csv") from None


def check_spot_below_on_demand(offers: list[Offer]) -> None:
    on_demand = {(o.provider, o.tier, o.gpu_id, o.gpu_count, o.region): o for o in offers if o.pricing == "on_demand"}
    for o in offers:
        base = on_demand.get((o.provider, o.tier, o.gpu_id, o.gpu_count, o.region))
        if o.interruptible and base and o.price_usd_per_gpu_hour > base.price_usd_per_gpu_hour:
            raise GpuplanError(f"{o.origin}: {o.pricing} price {o.price_usd_per_gpu_hour} of {o.provider} "
                               f"{o.gpu_id} is above its on-demand price {base.price_usd_per_gpu_hour}")


def user_config_dir() -> Path:
    return config_dir()


@cache
def bundled_offers() -> tuple[Offer, ...]:
    path = resources.files("gpuplan") / "data" / "offers.csv"
    return tuple(read_offers(Path(str(path)), origin="bundled data/offers.csv"))


def load_offers(catalogs: tuple[str, ...] = (), discounts: dict[str, float] | None = None) -> list[Offer]:
    """Bundled offers, overridden by the user's ``offers.csv`` and then by each ``catalogs`` file."""
    table = {o.key: o for o in bundled_offers()}
    user = user_config_dir() / "offers.csv"
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
    return [replace(o, discount=discounts.get(o.provider, 1.0)) for o in offers]


def load_discounts() -> dict[str, float]:
    """``~/.config/gpuplan/discounts.yaml``: ``{provider: multiplier}``, e.g. ``runpod: 0.85``."""
    path = user_config_dir() / "discounts.yaml"
    if not path.is_file():
        return {}
    data = yaml.safe_load(path.read_text()) or {}
    if not isinstance(data, dict):
        raise GpuplanError(f"{path} must map provider ids to price multipliers")
    try:
        return {str(k): float(v) for k, v in data.items()}
    except (TypeError, ValueError):
        raise GpuplanError(f"{path} must map provider ids to numbers (runpod: 0.85)") from None


@cache
def providers() -> dict[str, dict[str, Any]]:
    """Provider facts by id (spot semantics, interruption notice), from data/providers.yaml."""
    path = resources.files("gpuplan") / "data" / "providers.yaml"
    return {p["id"]: p for p in yaml.safe_load(path.read_text(encoding="utf-8"))["providers"]}


def max_per_node(offer: Offer) -> int:
    """GPUs one node of this offer can hold: the instance's size, or up to 8 where the provider rents pods of
    any size at the per-GPU price (``gpus_per_instance: any`` in data/providers.yaml)."""
    scalable = providers().get(offer.provider, {}).get("gpus_per_instance") == "any"
    return max(offer.gpu_count, 8) if scalable else offer.gpu_count


@cache
def interruption_priors() -> list[dict[str, Any]]:
    path = resources.files("gpuplan") / "data" / "providers.yaml"
    return yaml.safe_load(path.read_text(encoding="utf-8"))["interruption_priors"]
