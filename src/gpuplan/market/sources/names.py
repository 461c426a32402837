"""Vendor GPU names as SkyPilot's catalogs and gpuhunt write them, mapped to catalog ids.

Names are folded to upper-case letters and digits (``RTX6000-Ada`` -> ``RTX6000ADA``). Where one name covers
several cards (``A100``, ``H100``, ``V100``), the GPU memory and the instance name decide: ``nvl`` and ``pcie``/
``sxm`` in the instance name, 80 GB vs 40 GB, 94-96 GB H100 = NVL. Sources: SkyPilot's
``catalogs/v7/common/metadata.csv`` (GPU names and memory) and gpuhunt ``_internal/constraints.py``
``KNOWN_NVIDIA_GPUS`` (names, memory). Names left unmapped are reported, never guessed.

Both catalogs count packages: gpuhunt's ``KNOWN_AMD_GPUS`` lists ``MI250`` and ``MI250X`` at ``memory=128``, the
whole OAM. gpuplan plans a package of several GCDs as that many devices (``devices_per_package`` in gpus.yaml;
ROCm's gpu-arch/mi250.md: "two GCDs, each of which constitutes one GPU device in the system", 64 GB each), so
:func:`devices_offered` turns N packages at a price into N x devices_per_package devices at the price over that.
"""

from __future__ import annotations

import re

from ...hardware import gpus

MEMORY_TOLERANCE = 0.1  # share an offer's GPU memory may differ from the catalog's (GB against GiB is 7 %)

SIMPLE = {
    "T4": "nvidia-t4", "L4": "nvidia-l4", "L40": "nvidia-l40", "L40S": "nvidia-l40s", "A10": "nvidia-a10",
    "A10G": "nvidia-a10g", "A40": "nvidia-a40", "B200": "nvidia-b200", "GB200": "nvidia-gb200", "B300": "nvidia-b300",
    "MI300X": "amd-instinct-mi300x", "MI325X": "amd-instinct-mi325x", "MI250X": "amd-instinct-mi250x",
    "MI250": "amd-instinct-mi250",
    "RTX3060": "nvidia-geforce-rtx-3060-12gb", "RTX3070": "nvidia-geforce-rtx-3070",
    "RTX3080": "nvidia-geforce-rtx-3080-10gb", "RTX3090": "nvidia-geforce-rtx-3090",
    "RTX3090TI": "nvidia-geforce-rtx-3090-ti", "RTX4080": "nvidia-geforce-rtx-4080",
    "RTX4080SUPER": "nvidia-geforce-rtx-4080", "RTX4090": "nvidia-geforce-rtx-4090",
    "RTX4070TISUPER": "nvidia-geforce-rtx-4070-ti-super", "RTX5090": "nvidia-geforce-rtx-5090",
    "A4000": "nvidia-rtx-a4000", "RTXA4000": "nvidia-rtx-a4000", "A5000": "nvidia-rtx-a5000",
    "RTXA5000": "nvidia-rtx-a5000", "A6000": "nvidia-rtx-a6000", "RTXA6000": "nvidia-rtx-a6000",
    "RTX6000ADA": "nvidia-rtx-6000-ada", "L40SADA": "nvidia-l40s", "RTXPRO6000": "nvidia-rtx-pro-6000-blackwell",
    "H100NVL": "nvidia-h100-nvl-94gb", "H200NVL": "nvidia-h200-nvl-141gb", "H100SXM": "nvidia-h100-sxm5-80gb",
    "H200SXM": "nvidia-h200-sxm-141gb", "H200": "nvidia-h200-sxm-141gb", "A10080GBSXM": "nvidia-a100-sxm4-80gb",
    "GAUDI2": "intel-gaudi2", "GAUDI3": "intel-gaudi3",
}
# Providers whose plain "A100-80GB" / "H100" are the PCIe cards (their SXM parts carry -SXM in the name).
PCIE_BY_DEFAULT = {"runpod"}


def fold(name: str) -> str:
    return re.sub(r"[^A-Z0-9]", "", name.upper())


def gpu_id_for(name: str, *, memory_gib: float | None = None, instance: str = "", provider: str = "") -> str | None:
    """The catalog id of a vendor GPU name, or None when the name is not one the catalog holds."""
    key, shape = fold(name), instance.lower()
    if key in ("H100", "H200") and "nvl" in shape:
        key += "NVL"
    if key in SIMPLE:
        return SIMPLE[key]
    pcie = "pcie" in shape or ("sxm" not in shape and provider in PCIE_BY_DEFAULT)
    if key in ("A100", "A10080GB"):
        big = key == "A10080GB" or (memory_gib or 0) > 60
        return f"nvidia-a100-{'pcie' if pcie else 'sxm4'}-{'80' if big else '40'}gb"
    if key == "H100":
        if memory_gib and 90 <= memory_gib <= 100:
            return "nvidia-h100-nvl-94gb"
        return "nvidia-h100-pcie-80gb" if pcie else "nvidia-h100-sxm5-80gb"
    if key in ("V100", "V10032GB"):
        big = key == "V10032GB" or (memory_gib or 0) > 20
        sxm = shape.startswith(("p3", "gpu_8x_v100")) or "sxm" in shape
        return f"nvidia-v100-{'sxm2' if sxm else 'pcie'}-{'32' if big else '16'}gb"
    if key == "GH200":
        return "nvidia-gh200-144gb" if (memory_gib or 0) > 120 else "nvidia-gh200-96gb"
    return None


def devices_offered(gpu_id: str, count: int, price_usd_per_hour: float,
                    memory_gib: float | None = None) -> tuple[int, float] | None:
    """(devices, USD per device-hour) of an offer of ``count`` cards of ``gpu_id`` at ``price_usd_per_hour``.

    A card of several devices (:meth:`gpuplan.hardware.Catalog.devices_per_package`) is a package in both
    catalogs: 4 MI250X at $X/h are 8 devices of 64 GB at X/8. The offer's per-card memory says which it counts:
    the package's (128 GB = 2 x 64) or none multiplies, one device's (64) is already a device count, anything
    else is None: not this card, reported unmapped."""
    n = gpus().devices_per_package(gpu_id)
    device_gib = gpus()[gpu_id].memory_gib

    def near(gib: float) -> bool:
        return abs(memory_gib - gib) <= MEMORY_TOLERANCE * gib

    if n > 1 and memory_gib and not near(device_gib * n):
        if not near(device_gib):
            return None
        n = 1
    return count * n, round(price_usd_per_hour / (count * n), 6)
