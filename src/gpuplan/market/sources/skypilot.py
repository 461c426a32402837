"""SkyPilot's catalog CSVs (``vms.csv`` per cloud), read by column name.

Format (SkyPilot ``sky/catalog/common.py`` and the published ``skypilot-org/skypilot-catalog`` repository,
``catalogs/v7/<cloud>/vms.csv``): one row per instance type, region and zone with ``InstanceType``,
``AcceleratorName``, ``AcceleratorCount``, ``vCPUs``, ``MemoryGiB``, ``Price`` and ``SpotPrice`` (USD per
*instance* hour), ``Region``, optional ``AvailabilityZone`` and ``GpuInfo``. Rows without an accelerator are CPU
instances and skipped. Per instance and region, the cheapest zone's price is kept (what SkyPilot's optimizer
picks); per GPU, GPUs per instance, pricing and region, the cheapest instance shape is kept and its name, vCPUs
and RAM recorded. Spot prices at or above the on-demand price (seen in a RunPod catalog with the two columns
swapped) are dropped. The date is the file's modification time: when SkyPilot (or the user) fetched it.
"""

from __future__ import annotations

import ast
import datetime as dt
from pathlib import Path

from ... import clock
from ...errors import GpuplanError, echo
from ...hardware import gpus
from ...userfiles import is_file, is_folder, read_csv
from ..offers import Offer, providers, with_network
from .base import Fetched, Query, plausible
from .names import devices_offered, gpu_id_for

NEEDED = ("InstanceType", "AcceleratorName", "AcceleratorCount", "Price", "Region")
CLOUDS = {"lambda": "lambda", "lambdalabs": "lambda", "vast": "vast", "do": "digitalocean"}


def local_catalogs() -> Path:
    """SkyPilot's own cache of catalogs (``~/.sky/catalogs/<version>/<cloud>/vms.csv``)."""
    return Path.home() / ".sky" / "catalogs"


def _catalog_files(query: Query) -> list[tuple[Path, str]]:
    """(file, provider) pairs: the given file, a folder of ``<cloud>/vms.csv``, or SkyPilot's local cache."""
    path = query.path or local_catalogs()
    if is_file(path):
        if not query.provider:
            provider = CLOUDS.get(path.parent.name, path.parent.name)
            if provider not in providers():
                raise GpuplanError(f"say which cloud {echo(path)} prices with --provider (aws, gcp, lambda...)")
            return [(path, provider)]
        return [(path, query.provider)]
    if not is_folder(path):
        raise GpuplanError(f"no SkyPilot catalog at {echo(path)}: give --file PATH/vms.csv (a file of the "
                          "skypilot-catalog repository) or install SkyPilot, whose catalogs live there")
    found = sorted(path.glob("**/vms.csv"))
    pairs = [(f, CLOUDS.get(f.parent.name, f.parent.name)) for f in found]
    pairs = [(f, p) for f, p in pairs if not query.provider or p == query.provider]
    if not pairs:
        raise GpuplanError(f"no vms.csv under {echo(path)}" + (f" for {query.provider}" if query.provider else ""))
    return pairs


MAX_GPU_INFO = 2_000  # characters of a GpuInfo cell read (SkyPilot's own are under 300)


def _memory_gib(gpu_info: str) -> float | None:
    """Per-GPU memory from the GpuInfo column (a Python dict literal in SkyPilot's files), if it holds one; a cell
    longer than :data:`MAX_GPU_INFO` is not read (Python's parser ran out of memory on 100,000 nested minus signs,
    a traceback; session 18's security audit)."""
    if len(gpu_info) > MAX_GPU_INFO:
        return None
    try:
        info = ast.literal_eval(gpu_info) if gpu_info.strip().startswith("{") else None
        return float(info["Gpus"][0]["MemoryInfo"]["SizeInMiB"]) / 1024 if info else None
    except (ValueError, SyntaxError, KeyError, IndexError, TypeError):
        return None


def _price(text: str | None) -> float | None:
    try:
        x = float(text) if text not in (None, "") else None
    except ValueError:
        return None
    return x if x and x > 0 and x < 1e6 else None


def read_catalog(path: Path, provider: str, today: dt.date | None = None) -> Fetched:
    """Offers from one SkyPilot ``vms.csv`` for ``provider``."""
    rows = read_csv(path, "SkyPilot catalog")  # bounded, UTF-8 (s17-sec)
    header = set(rows[0]) if rows else set()
    missing = [c for c in NEEDED if c not in header]
    if missing:
        raise GpuplanError(f"{echo(path)} is not a SkyPilot vms.csv: no column {', '.join(missing)}")
    observed = min(dt.date.fromtimestamp(path.stat().st_mtime), today or clock.today())
    tier = providers().get(provider, {}).get("tier", "")
    best: dict[tuple, Offer] = {}
    unmapped: dict[str, int] = {}
    left_out: dict[str, int] = {}
    for row in rows:
        name, instance = (row.get("AcceleratorName") or "").strip(), (row["InstanceType"] or "").strip()
        count = _price(row.get("AcceleratorCount"))
        if not name or not count or count != int(count):  # a CPU instance, or a slice of a GPU (Azure's 1/6 A10)
            continue
        memory = _memory_gib(row.get("GpuInfo") or "")
        gpu_id = gpu_id_for(name, memory_gib=memory, instance=instance, provider=provider)
        if gpu_id is None or gpu_id not in gpus() or devices_offered(gpu_id, int(count), 1.0, memory) is None:
            unmapped[name] = unmapped.get(name, 0) + 1
            continue
        on_demand, spot = _price(row.get("Price")), _price(row.get("SpotPrice"))
        if on_demand and spot and spot >= on_demand:
            spot = None
        row_tier = "secure" if instance.endswith("_SECURE") else "community" if instance.endswith("_COMMUNITY") \
            else tier
        for pricing, price in (("on_demand", on_demand), ("spot", spot)):
            if price is None:
                continue
            devices, per_device = devices_offered(gpu_id, int(count), price, memory)
            offer = Offer(provider=provider, tier=row_tier, gpu_id=gpu_id, gpu_count=devices, pricing=pricing,
                          price_usd_per_gpu_hour=per_device, region=row["Region"].strip(),
                          instance=instance, vcpus=_price(row.get("vCPUs")), memory_gib=_price(row.get("MemoryGiB")),
                          intra_node="", observed_at=observed, source=f"SkyPilot catalog {path.name}",
                          notes="", origin=str(path), confidence="medium")
            key = offer.key
            if plausible(offer, left_out) and (key not in best or offer.price_usd_per_gpu_hour <
                                               best[key].price_usd_per_gpu_hour):
                best[key] = offer
    return Fetched(offers=[with_network(o) for o in best.values()], origin=str(path), unmapped=unmapped,
                   implausible=left_out)


class SkyPilotSource:
    name = "skypilot"

    def get(self, query: Query) -> Fetched:
        offers, unmapped, left_out, origins = [], {}, {}, []
        for path, provider in _catalog_files(query):
            got = read_catalog(path, provider, query.today)
            offers += got.offers
            origins.append(got.origin)
            for total, part in ((unmapped, got.unmapped), (left_out, got.implausible)):
                for k, v in part.items():
                    total[k] = total.get(k, 0) + v
        return Fetched(offers=offers, origin=", ".join(origins), unmapped=unmapped, implausible=left_out)
