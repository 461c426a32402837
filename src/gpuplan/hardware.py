"""The GPU catalog: cited specs from ``data/gpus.yaml`` (conventions and sources in ``data/GPUS.md``).

Names resolve case-insensitively through ids and aliases; a name that several cards share (``H100``,
``A100``) is an error listing them. Usable memory is what the driver reports: the marketed size (which
behaves as GiB, GPUS.md section 1) less the ECC/driver reserve (section 5).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cache
from importlib import resources
from typing import Any

import yaml

from .errors import GpuplanError, UnknownNameError, normalize_name

# Driver/ECC reserve as a fraction of the marketed size, where no reported total is known (GPUS.md section 5).
# GDDR with ECC enabled stores check bits in-band: 1/16 of the memory (L40S: 46068 of 49152 MiB reported);
# data-center GDDR cards ship with ECC on, workstation cards (RTX A6000, 6000 Ada) with it off.
# HBM keeps ECC out of band; the driver still reserves ~0.5 % (H100 80GB: 81559 of 81920 MiB).
ECC_INBAND_RESERVE = 1 / 16
DRIVER_RESERVE = 0.005

# Reported usable totals (GPUS.md section 5 and gpus.yaml notes), in GiB.
REPORTED_USABLE_GIB = {
    "nvidia-geforce-rtx-5090": 32607 / 1024,
    "nvidia-l40s": 46068 / 1024,
    "nvidia-rtx-pro-6000-blackwell": 97887 / 1024,
    "nvidia-b300": 270e9 / 2**30,
}

GENERATIONS = ("Volta", "Turing", "Ampere", "Ada", "Hopper", "Blackwell", "CDNA", "RDNA", "Gaudi", "Apple")

# Common names that the yaml's own aliases do not carry; an alias naming several ids is ambiguous.
EXTRA_ALIASES: dict[str, tuple[str, ...]] = {
    "h100-sxm": ("nvidia-h100-sxm5-80gb",), "h100-pcie": ("nvidia-h100-pcie-80gb",),
    "h100-nvl": ("nvidia-h100-nvl-94gb",), "h200-sxm": ("nvidia-h200-sxm-141gb",),
    "4090": ("nvidia-geforce-rtx-4090",), "3090": ("nvidia-geforce-rtx-3090",), "5090": ("nvidia-geforce-rtx-5090",),
    "rtx-4090": ("nvidia-geforce-rtx-4090",), "rtx-3090": ("nvidia-geforce-rtx-3090",),
    "rtx-5090": ("nvidia-geforce-rtx-5090",),
    "a100-80g": ("nvidia-a100-pcie-80gb", "nvidia-a100-sxm4-80gb"),
    "a100-40gb": ("nvidia-a100-pcie-40gb", "nvidia-a100-sxm4-40gb"),
    "a100-sxm": ("nvidia-a100-sxm4-40gb", "nvidia-a100-sxm4-80gb"),
    "a100-sxm4-80g": ("nvidia-a100-sxm4-80gb",), "a6000-ada": ("nvidia-rtx-6000-ada",),
    "rtx-a6000": ("nvidia-rtx-a6000",), "l40-s": ("nvidia-l40s",), "v100-32gb": ("nvidia-v100-sxm2-32gb",
                                                                                 "nvidia-v100-pcie-32gb"),
}


@dataclass(frozen=True, kw_only=True)
class GpuSpec:
    """One accelerator. TFLOPS are dense (no 2:4 sparsity), FP16/BF16 with FP32 accumulate."""

    id: str
    name: str
    vendor: str
    architecture: str
    segment: str
    form_factor: str
    memory_gib: float
    usable_gib: float
    memory_type: str
    bandwidth_gbs: float
    dense_tflops: dict[str, float | None] = field(hash=False)
    supports: dict[str, bool | None] = field(hash=False)
    nvlink_bandwidth_gbs: float | None
    pcie_generation: int | None
    tdp_w: float | None
    msrp_usd: float | None
    compute_capability: str | None
    aliases: tuple[str, ...]

    @property
    def generation(self) -> str:
        """Volta, Turing, Ampere, Ada, Hopper, Blackwell... (the first word GPUS.md uses that matches)."""
        return next((g for g in GENERATIONS if g.lower() in self.architecture.lower()), self.architecture)

    def supports_dtype(self, dtype: str) -> bool:
        """Native tensor-core support: bf16 from Ampere, fp8 from Ada/Hopper, fp4 from Blackwell."""
        if dtype in ("fp32", "fp16"):
            return True
        if dtype == "tf32":
            return self.dense_tflops.get("tf32_tensor") is not None
        return bool(self.supports.get(dtype))

    def peak_tflops(self, dtype: str) -> float | None:
        """Dense peak for a compute dtype (``bf16``, ``fp16``, ``fp8``, ``fp4``, ``tf32``, ``fp32``)."""
        key = {"bf16": "bf16_tensor", "fp16": "fp16_tensor", "fp8": "fp8_tensor", "fp4": "fp4_tensor",
               "tf32": "tf32_tensor", "fp32": "fp32", "int8": "int8_tensor_tops"}[dtype]
        return self.dense_tflops.get(key)


def _usable_gib(entry: dict[str, Any], size: float) -> float:
    if entry["id"] in REPORTED_USABLE_GIB:
        return REPORTED_USABLE_GIB[entry["id"]]
    inband = entry.get("ecc") and "GDDR" in str(entry["memory"].get("type", "")) and entry["segment"] == "datacenter"
    return size * (1 - (ECC_INBAND_RESERVE if inband else DRIVER_RESERVE))


def _spec(entry: dict[str, Any]) -> GpuSpec:
    mem = entry["memory"]
    size = float(mem["size_gb"])
    if size <= 0:
        raise RuntimeError(f"gpus.yaml: {entry['id']} has memory {size}")
    link = entry.get("interconnect") or {}
    return GpuSpec(
        id=entry["id"], name=entry["name"], vendor=entry["vendor"], architecture=str(entry["architecture"]),
        segment=str(entry.get("segment")), form_factor=str(entry.get("form_factor")), memory_gib=size,
        usable_gib=_usable_gib(entry, size), memory_type=str(mem.get("type")),
        bandwidth_gbs=float(mem.get("bandwidth_gbs") or 0), dense_tflops=dict(entry.get("dense_tflops") or {}),
        supports=dict(entry.get("supports") or {}), nvlink_bandwidth_gbs=link.get("nvlink_bandwidth_gbs"),
        pcie_generation=(entry.get("pcie") or {}).get("generation"), tdp_w=entry.get("tdp_w"),
        msrp_usd=entry.get("launch_msrp_usd"), compute_capability=entry.get("compute_capability"),
        aliases=tuple(str(a) for a in entry.get("aliases") or ()))


@cache
def gpus() -> dict[str, GpuSpec]:
    """The catalog by id, validated: unique ids, positive memory."""
    path = resources.files("gpuplan") / "data" / "gpus.yaml"
    entries = yaml.safe_load(path.read_text(encoding="utf-8"))
    specs = [_spec(e) for e in entries]
    ids = [s.id for s in specs]
    if len(ids) != len(set(ids)):
        raise RuntimeError("gpus.yaml has duplicate ids")
    return {s.id: s for s in specs}


@cache
def _names() -> dict[str, tuple[str, ...]]:
    """Normalized name -> the ids it may mean."""
    table: dict[str, set[str]] = {}
    for spec in gpus().values():
        short = spec.id.removeprefix("nvidia-").removeprefix("geforce-")
        for name in (spec.id, short, spec.name, *spec.aliases):
            table.setdefault(normalize_name(name), set()).add(spec.id)
    for alias, ids in EXTRA_ALIASES.items():
        table.setdefault(normalize_name(alias), set()).update(ids)
    return {k: tuple(sorted(v)) for k, v in table.items()}


def load_gpu(name: str) -> GpuSpec:
    """A GPU by id or alias. Ambiguous names (``H100``, ``A100``) raise an error listing the candidates."""
    key = normalize_name(name)
    ids = _names().get(key) or _names().get(key.replace("-", ""))
    if not ids:
        raise UnknownNameError("GPU", name, sorted(_names()), hint="`gpuplan gpus` lists the catalog.")
    if len(ids) > 1:
        raise GpuplanError(f"{name} could be {', '.join(ids[:-1])} or {ids[-1]}; name one")
    return gpus()[ids[0]]


@dataclass(frozen=True, kw_only=True)
class Network:
    """How the GPUs of one setup talk: within a node and between nodes (an offer's or the user's own).

    ``intra_node``: ``nvlink`` | ``pcie`` (P2P over PCIe) | ``pcie-no-p2p`` (through host memory, GeForce cards)
    | ``""`` (unknown: the card's own links decide). ``inter_node``: ``infiniband`` | ``roce`` | ``ethernet`` |
    ``none`` (the provider sells no multi-node fabric) | ``""`` (unknown); ``inter_node_gbps``: the node's
    aggregate network bandwidth in Gbit/s when known.
    """

    intra_node: str = ""
    inter_node: str = ""
    inter_node_gbps: float | None = None

