"""Dated cloud prices: the :class:`Offer`, its CSV form (``data/offers.csv``) and provider facts
(``data/providers.yaml``).

Rows are validated on load: unknown GPU ids, provider ids that are not plain names, text with control characters,
prices and GPU counts outside a plausible range (:func:`implausible`), dates in the future, spot prices above the
matching on-demand price and unknown link kinds are errors naming the file and line. Every offer
carries its date, source, confidence (high | medium | low) and the file it came from; its network (links within
a node and between nodes) is the row's own, or else the provider's from providers.yaml.

Which offers are in force (bundled snapshot, refreshed caches, the user's files) is :mod:`.store`'s business;
this module only reads, writes and describes rows.
"""

from __future__ import annotations

import csv
import datetime as dt
import math
import os
import re
import tempfile
from dataclasses import dataclass, replace
from functools import cache
from pathlib import Path
from typing import Any, NamedTuple

from .. import clock
from ..datafiles import read_yaml
from ..errors import GpuplanError, UnknownNameError, echo, no_control
from ..hardware import Network, gpus
from ..userfiles import is_file, read_csv

PRICINGS = ("on_demand", "spot", "interruptible", "reserved")
CONFIDENCES = ("high", "medium", "low")
INTRA_NODE = ("nvlink", "pcie", "pcie-no-p2p")
INTER_NODE = ("infiniband", "roce", "ethernet", "none")
COLUMNS = ("provider", "tier", "gpu_id", "gpu_count", "pricing", "price_usd_per_gpu_hour", "region", "instance",
           "vcpus", "memory_gib", "intra_node", "inter_node", "inter_node_gbps", "observed_at", "source",
           "confidence", "notes")
REQUIRED = ("provider", "gpu_id", "pricing", "price_usd_per_gpu_hour", "observed_at")
# a provider id names cache files (`prices update --provider`) and is matched by --provider: a plain name
PROVIDER_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")
# Plausible offers (fuzz-report-3 N2: $1e-300 and $1e300 per GPU-hour were put in force). The bundled snapshot
# spans $0.12 (a Vast.ai RTX 4090 bid) to $14.24 (an AWS p6-b200.48xlarge's B200) per GPU-hour: a price under a
# cent or over $1,000 per GPU-hour is a typo or a unit slip (cents, a month), not an offer. The largest machine
# sold as one instance is a GB200 NVL72 rack, 72 GPUs in one NVLink domain (NVIDIA's GB200 NVL72 product page);
# 256 GPUs leaves room for the next rack and refuses counts that are typos or identifiers.
USD_PER_GPU_HOUR = (0.01, 1000.0)
MAX_GPUS_PER_INSTANCE = 256
# A node's network: the fastest sold today is eight 800 Gbit/s ConnectX-8 NICs, one per GPU of an HGX B300
# (6,400 Gbit/s); 12,800 leaves room for the next. Above it a value is a unit slip (Mbit/s, bytes), and it would
# make every multi-node collective free.
MAX_NODE_GBPS = 12_800.0


@dataclass(frozen=True, kw_only=True)
class Offer:
    """One price: instances of ``gpu_count`` GPUs of ``gpu_id`` at ``price_usd_per_gpu_hour`` each (the instance's
    price divided by its GPUs: host vCPU and RAM included where the provider sells them together)."""

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
    confidence: str = "medium"
    instance: str = ""
    vcpus: float | None = None
    memory_gib: float | None = None
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
        return max(((today or clock.today()) - self.observed_at).days, 0)

    @property
    def pricing_words(self) -> str:
        """The pricing as users type it (``--pricing on-demand``): the catalog's ``on_demand`` is ``on-demand``."""
        return self.pricing.replace("_", "-")

    @property
    def label(self) -> str:
        """``runpod community 1x on-demand``: provider, tier where it names a product line, instance size."""
        tier = f" {self.tier}" if self.tier not in ("neocloud", "hyperscaler", "marketplace", "") else ""
        return f"{self.provider}{tier} {self.gpu_count}x {self.pricing_words}"

    def row(self) -> dict[str, Any]:
        """The CSV/JSON row: the columns of offers.csv (discount and origin left out)."""
        data = {c: getattr(self, c) for c in COLUMNS}  # (asdict's deep copy of plain values cost ~10 ms a catalog)
        data["observed_at"] = self.observed_at.isoformat()
        return {c: ("" if v is None else v) for c, v in data.items()}


def owned_offer(gpu_id: str, count: int, usd_per_gpu_hour: float | None = None) -> Offer | None:
    """The user's own ``count`` cards of ``gpu_id`` as an offer priced by power only (``recommend --have``,
    ``estimate --pricing owned``, and any card no offer prices): the card's draw under load at a home's price of a
    kWh, as ``buy`` prices it (:func:`~gpuplan.market.owned_power.owned_usd_per_gpu_hour`), unless
    ``usd_per_gpu_hour`` says (a ranked setup's, launched); None when no draw is on file for the card (no TDP and no
    measured draw of its computer: :func:`~gpuplan.market.owned_power.busy_draw`). The links are the card's own
    (GeForce: no peer-to-peer), as ``estimate`` and ``launch`` time them."""
    if usd_per_gpu_hour is None:
        from .owned_power import owned_usd_per_gpu_hour  # loaded by the first plan on one's own cards

        usd_per_gpu_hour = owned_usd_per_gpu_hour(gpus()[gpu_id])
    if usd_per_gpu_hour is None:
        return None
    return Offer(provider="owned", tier="", gpu_id=gpu_id, gpu_count=count, pricing="owned",
                 price_usd_per_gpu_hour=usd_per_gpu_hour, region="", intra_node="", observed_at=clock.today(),
                 source="power only", notes="", origin="--have")


def check_provider(name: str, where: str = "provider") -> str:
    """``name`` if it is a provider id (letters, digits, ``.``, ``_``, ``-``; 64 at most), else one sentence."""
    if not isinstance(name, str) or not PROVIDER_ID.fullmatch(name):
        raise GpuplanError(f"{where} {echo(name)} is not a provider id: use letters, digits, '.', '_' or '-' (like "
                           "runpod or my-cloud), 64 at most")
    return name


class Implausible(NamedTuple):
    """Why a vendor's row cannot be an offer: its ``kind`` (``price`` or ``GPU count``, what the refresh counts the
    rows left out by) and the sentence that says so (``why``)."""

    kind: str
    why: str


def implausible(price_usd_per_gpu_hour: float, gpu_count: int) -> Implausible | None:
    """Why a price or a GPU count cannot be an offer (outside :data:`USD_PER_GPU_HOUR` or above
    :data:`MAX_GPUS_PER_INSTANCE`), or None."""
    low, high = USD_PER_GPU_HOUR
    if not low <= price_usd_per_gpu_hour <= high:
        return Implausible("price", f"price ${price_usd_per_gpu_hour:.3g} per GPU-hour is outside the plausible "
                           f"${low:g} to ${high:,.0f}")
    if not 1 <= gpu_count <= MAX_GPUS_PER_INSTANCE:
        return Implausible("GPU count", f"{gpu_count:.3g} GPUs per instance is outside the plausible 1 to "
                           f"{MAX_GPUS_PER_INSTANCE}")
    return None


def check_offer(o: Offer, where: str) -> Offer:
    """``o``, or one sentence naming ``where`` when its provider is not an id (:func:`check_provider`), a text
    field holds a control character (it is printed and written into launch files), its price or GPU count is
    implausible (:func:`implausible`) or its network above :data:`MAX_NODE_GBPS`: every offer from a file or a
    source passes here."""
    check_provider(o.provider, f"{where}: provider")
    for name, value in o.row().items():
        if isinstance(value, str):
            no_control(value, f"{where}: {name}")
    bad = implausible(o.price_usd_per_gpu_hour, o.gpu_count)
    if bad:
        raise GpuplanError(f"{where}: {bad.why}; check the units (US dollars per GPU per hour)")
    if o.inter_node_gbps is not None and o.inter_node_gbps > MAX_NODE_GBPS:
        raise GpuplanError(f"{where}: inter_node_gbps {o.inter_node_gbps:,.3g} is above the plausible "
                           f"{MAX_NODE_GBPS:,.0f} Gbit/s per node; check the units (Gbit/s, all the node's NICs)")
    return o


def price_origin(o: Offer, today: dt.date | None = None) -> str:
    """Where a price came from and how old it is, in one line."""
    return f"{o.origin}: {o.source or 'no source given'}, observed {o.observed_at} ({o.age_days(today)} days old, " \
           f"{o.confidence} confidence)"


# a number as a CSV writes it: ASCII digits, a point, an exponent. Python's float() and int() also read "0_55" as 55
# (digit grouping) and fullwidth or Arabic-Indic digits: a price typed 0_55 was put in force at $55 an hour (session
# 18's fuzzing); nan and inf read, to be refused as not finite
CSV_NUMBER = re.compile(r"[+-]?((\d+\.?\d*|\.\d+)(e[+-]?\d+)?|nan|inf|infinity)", re.ASCII | re.IGNORECASE)


def _number(value: str, where: str, name: str, kind=float):
    try:
        if not CSV_NUMBER.fullmatch(value):
            raise ValueError(value)
        x = kind(value)
    except ValueError:
        raise GpuplanError(f"{where}: {name} must be a number, got {echo(value)}") from None
    if not math.isfinite(x) or x <= 0:
        raise GpuplanError(f"{where}: {name} must be positive and finite, got {echo(value)}")
    return x


def parse_row(row: dict[str, str], origin: str, line: int, today: dt.date | None = None) -> Offer:
    """One CSV row as an :class:`Offer`, its links filled from providers.yaml where the row leaves them empty (as
    :func:`with_network` does); every problem is one sentence naming ``origin`` and ``line``."""
    where = f"{origin} line {line}"
    row = {k.strip(): (v or "").strip() for k, v in row.items() if k}
    missing = [c for c in REQUIRED if not row.get(c)]
    if missing:
        raise GpuplanError(f"{where}: missing {', '.join(missing)} (columns as in data/offers.csv)")
    if row["gpu_id"] not in gpus():
        raise UnknownNameError("GPU id", row["gpu_id"], gpus(), hint=f"({where}; ids as in `gpuplan gpus`)")
    if row["pricing"] not in PRICINGS:
        raise GpuplanError(f"{where}: pricing {row['pricing']!r} must be one of {', '.join(PRICINGS)}")
    for name, allowed in (("confidence", CONFIDENCES), ("intra_node", INTRA_NODE), ("inter_node", INTER_NODE)):
        if row.get(name) and row[name] not in allowed:
            raise GpuplanError(f"{where}: {name} {row[name]!r} must be one of {', '.join(allowed)} or empty")
    try:
        observed = dt.date.fromisoformat(row["observed_at"])
    except ValueError:
        raise GpuplanError(f"{where}: observed_at must be a date like 2026-11-23, got {row['observed_at']!r}") \
            from None
    if observed > (today or clock.today()):
        raise GpuplanError(f"{where}: observed_at {observed} is in the future; give the day the price was seen")
    price = _number(row["price_usd_per_gpu_hour"], where, "price_usd_per_gpu_hour")
    count = _number(row.get("gpu_count") or "1", where, "gpu_count", int)
    optional = {name: _number(row[name], where, name) for name in ("vcpus", "memory_gib", "inter_node_gbps")
                if row.get(name)}
    given = {"provider": row["provider"], "tier": row.get("tier", ""), "gpu_id": row["gpu_id"],
             "intra_node": row.get("intra_node", ""), "inter_node": row.get("inter_node", ""), **optional}
    offer = Offer(**{**given, **_links(given)}, gpu_count=count, pricing=row["pricing"], price_usd_per_gpu_hour=price,
                  region=row.get("region", ""), observed_at=observed, source=row.get("source", ""),
                  notes=row.get("notes", ""), origin=origin, confidence=row.get("confidence") or "medium",
                  instance=row.get("instance", ""))
    return check_offer(offer, where)


def read_offers(path: Path | str, origin: str | None = None) -> list[Offer]:
    """The offers of a CSV file with the columns of data/offers.csv (only :data:`REQUIRED` are mandatory)."""
    if not str(path).strip() or not is_file(path):
        raise GpuplanError(f"no offers file {str(path)!r}: give the path of a CSV with the columns of "
                           "data/offers.csv")
    path = Path(path)
    rows = read_csv(path, "price list")  # bounded, UTF-8 with or without a byte-order mark (s17-sec)
    today = clock.today()  # read once for the file, not once a row
    return [parse_row(row, origin or str(path), n, today) for n, row in enumerate(rows, start=2)]


def write_offers(path: Path, offers: list[Offer]) -> None:
    """Write ``offers`` as CSV atomically: a temporary file in the same folder, then a rename, so that a failed
    or interrupted refresh never leaves half a file in force."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as f:
            writer = csv.DictWriter(f, fieldnames=COLUMNS)
            writer.writeheader()
            writer.writerows(o.row() for o in offers)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def check_spot_below_on_demand(offers: list[Offer]) -> None:
    on_demand = {(o.provider, o.tier, o.gpu_id, o.gpu_count, o.region): o for o in offers if o.pricing == "on_demand"}
    for o in offers:
        base = on_demand.get((o.provider, o.tier, o.gpu_id, o.gpu_count, o.region))
        if o.interruptible and base and o.price_usd_per_gpu_hour > base.price_usd_per_gpu_hour:
            raise GpuplanError(f"{o.origin}: {o.pricing_words} price {o.price_usd_per_gpu_hour} of {o.provider} "
                               f"{o.gpu_id} is above its on-demand price {base.price_usd_per_gpu_hour}")


# ---- provider facts ---------------------------------------------------------------------------------------
@cache
def _providers_yaml() -> dict[str, Any]:
    return read_yaml("providers.yaml")


@cache
def providers() -> dict[str, dict[str, Any]]:
    """Provider facts by id (spot semantics, interruption notice, network, storage, egress, billing)."""
    return {p["id"]: p for p in _providers_yaml()["providers"]}


def interruption_priors() -> list[dict[str, Any]]:
    return _providers_yaml()["interruption_priors"]


def spot_rows_missing() -> str:
    """Why RunPod spot and Vast interruptible are not ranked: the dated figures found, and why none holds up."""
    return " ".join(_providers_yaml()["spot_rows_missing"].split())


def provider_network(provider: str, tier: str) -> dict[str, Any]:
    """The provider's links (``intra_node``, ``inter_node``, ``inter_node_gbps``), its tier's entry overriding."""
    facts = providers().get(provider, {})
    net = dict(facts.get("network") or {})
    net.update((facts.get("tiers") or {}).get(tier, {}).get("network") or {})
    return net


def with_network(o: Offer) -> Offer:
    """The offer with its links filled from providers.yaml where the row leaves them empty."""
    updates = _links({"provider": o.provider, "tier": o.tier, "gpu_id": o.gpu_id, "intra_node": o.intra_node,
                      "inter_node": o.inter_node, "inter_node_gbps": o.inter_node_gbps})
    return o if not updates else replace(o, **updates)


def _links(given: dict[str, Any]) -> dict[str, Any]:
    """The links (``intra_node``, ``inter_node``, ``inter_node_gbps``) an offer's fields ``given`` leave empty, from
    the provider's facts (:func:`provider_network`): what :func:`with_network` and :func:`parse_row` fill in."""
    net = provider_network(given["provider"], given["tier"])
    updates: dict[str, Any] = {}
    if not given["inter_node"] and net.get("inter_node"):
        updates["inter_node"] = net["inter_node"]
        if given.get("inter_node_gbps") is None and net.get("inter_node_gbps"):
            updates["inter_node_gbps"] = float(net["inter_node_gbps"])
    if not given["intra_node"]:
        consumer = gpus().segment(given["gpu_id"]) == "consumer"
        intra = net.get("intra_node_consumer" if consumer else "intra_node")
        if intra:
            updates["intra_node"] = intra
    return updates


NODE_GPUS = 8  # GPUs of one HGX/DGX board: the node size where no offer lists the card


def max_per_node(offer: Offer) -> int:
    """GPUs one node of this offer can hold: the instance's size, or up to a board's :data:`NODE_GPUS` where the
    provider rents pods of any size at the per-GPU price (``gpus_per_instance: any`` in data/providers.yaml)."""
    scalable = providers().get(offer.provider, {}).get("gpus_per_instance") == "any"
    return max(offer.gpu_count, NODE_GPUS) if scalable else offer.gpu_count


def largest_node(gpu_id: str, catalog: list[Offer]) -> int:
    """The most GPUs of ``gpu_id`` one machine holds: its largest instance in the catalog, at least a board's."""
    return max([NODE_GPUS, *(max_per_node(o) for o in catalog if o.gpu_id == gpu_id)])


def multi_node(offer: Offer) -> bool:
    """Whether several nodes of this offer can form one job: not where the provider sells no fabric
    (``inter_node: none``)."""
    return offer.inter_node != "none"
