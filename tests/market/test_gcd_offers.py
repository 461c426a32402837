"""Offers of multi-GCD cards: gpuhunt and SkyPilot count packages, gpuplan plans devices.

An MI250X or MI250 package is two GCDs, "each of which constitutes one GPU device in the system" (ROCm,
docs/conceptual/gpu-arch/mi250.md), 64 GB each; gpuhunt's ``KNOWN_AMD_GPUS`` lists both cards at ``memory=128``
(dstackai/gpuhunt ``src/gpuhunt/_internal/constraints.py``). So 4 MI250X at $16.40/h are 8 devices at
16.40 / 8 = $2.05 per device-hour, not 4 at $4.10.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import subprocess
from types import SimpleNamespace
from unittest import mock

from conftest import cli_in_process
from gpuplan.hardware import gpus
from gpuplan.market.sources import Query
from gpuplan.market.sources.gpuhunt_source import GpuhuntSource
from gpuplan.market.sources.names import devices_offered
from gpuplan.market.sources.skypilot import read_catalog

INFO = "\"{'Gpus': [{'Name': '%s', 'Count': %d, 'MemoryInfo': {'SizeInMiB': %d}}]}\""
HEADER = ("InstanceType,AcceleratorName,AcceleratorCount,vCPUs,MemoryGiB,GpuInfo,Price,SpotPrice,Region,"
          "AvailabilityZone\n")
VMS = HEADER + f"mi250x-4,MI250X,4.0,64.0,512.0,{INFO % ('MI250X', 4, 128 * 1024)},16.4,,us-east-1,z1\n"


def gpuplan(*args: str, cache) -> subprocess.CompletedProcess:
    with mock.patch.dict(os.environ, {"GPUPLAN_CACHE_DIR": str(cache)}):
        return cli_in_process(*args)


def test_the_device_count_comes_from_the_catalog_and_the_memory_says_package_or_device():
    """128 GB a card (gpuhunt's figure) or none: packages, x2; 64 GB: already devices; 96 GB: not this card."""
    assert gpus().devices_per_package("amd-instinct-mi250x") == gpus().devices_per_package("amd-instinct-mi250") == 2
    assert devices_offered("amd-instinct-mi250x", 4, 16.4, 128.0) == (8, 2.05)
    assert devices_offered("amd-instinct-mi250x", 4, 16.4, None) == (8, 2.05)
    assert devices_offered("amd-instinct-mi250x", 8, 16.4, 64.0) == (8, 2.05)
    assert devices_offered("amd-instinct-mi250x", 4, 16.4, 96.0) is None
    assert devices_offered("nvidia-l4", 4, 3.2, 22.35) == (4, 0.8)  # one device a card: as before


def test_a_skypilot_row_of_4_mi250x_is_8_devices_at_an_eighth_of_its_price(tmp_path):
    vms = tmp_path / "vms.csv"
    vms.write_text(VMS)
    [offer] = read_catalog(vms, "runpod", today=dt.date(2026, 12, 3)).offers
    assert (offer.gpu_id, offer.gpu_count, offer.price_usd_per_gpu_hour) == ("amd-instinct-mi250x", 8, 2.05)


def test_gpuhunt_mi250_offers_are_mapped_and_counted_per_gcd():
    """MI250 was unmapped before; a 96 GB 'MI250X' is no package of two 64 GB GCDs and is reported."""
    item = lambda **k: SimpleNamespace(**{"cpu": 64, "memory": 512.0, "location": "us", "spot": False,  # noqa: E731
                                          "instance_name": "x", "provider": "runpod", **k})
    got = GpuhuntSource(lambda **kw: [item(gpu_name="MI250", gpu_memory=128.0, gpu_count=2, price=6.0),
                                      item(gpu_name="MI250X", gpu_memory=96.0, gpu_count=1, price=3.0)]).get(Query())
    assert [(o.gpu_id, o.gpu_count, o.price_usd_per_gpu_hour) for o in got.offers] == [("amd-instinct-mi250", 4, 1.5)]
    assert got.unmapped == {"MI250X": 1}


def test_recommend_and_cost_on_4_mi250x_use_8_devices(tmp_path):
    vms = tmp_path / "vms.csv"
    vms.write_text(VMS)
    cache = tmp_path / "cache"
    proc = gpuplan("prices", "update", "--source", "skypilot", "--file", str(vms), "--provider", "runpod", cache=cache)
    assert proc.returncode == 0, proc.stderr
    cost = gpuplan("cost", "--model", "llama-3.2-1b", "--task", "infer", "--gpu", "mi250x", "--json", cache=cache)
    row = json.loads(cost.stdout)["rows"][0]
    assert (row["gpus_per_instance"], row["usd_per_gpu_hour"], row["usd_per_hour"]) == (8, 2.05, 16.4)
    rec = gpuplan("recommend", "--model", "llama-3.1-70b", "--task", "infer", "--gpus", "mi250x", "--json", cache=cache)
    best = json.loads(rec.stdout)["setups"][0]
    assert (best["gpu_id"], best["num_gpus"], best["sharding"], best["offer"]) == \
        ("amd-instinct-mi250x", 8, "tp8", "runpod 8x on-demand")  # 70B bf16 = 141 GB: 8 x 64 GB, not 4
