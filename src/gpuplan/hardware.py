"""The GPU catalog: cited specs from ``data/gpus.yaml`` (conventions and sources in ``data/GPUS.md``).

Names resolve case-insensitively through ids and aliases; a name that several cards share (``H100``,
``A100-80GB``, ``V100``) resolves to the variant clouds rent most (SXM, the largest memory) with a note naming the
others (:func:`resolve_gpu`). Usable memory is what the driver reports: the marketed size (which behaves as GiB,
GPUS.md section 1) less the ECC/driver reserve (section 5); on Apple silicon, the share of unified memory macOS
lets the GPU wire.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from functools import cache
from typing import Any

from .datafiles import read_yaml
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
    # RTX 2080 Ti: deviceQuery's total global memory, 11523260416 bytes (WonyoungCho/CUDA docs/rtx2080Ti.md, driver
    # 10.1): 10.73 of its 11 GiB, where the 0.5 % driver reserve would give 10.95.
    "nvidia-geforce-rtx-2080-ti": 11523260416 / 2**30,
    # Unified memory shared with the OS and the CPU (GPUS.md section 7). DGX Spark: what the kernel can hand the GPU,
    # /proc/meminfo MemAvailable on a GB10 at rest, 115.85 of the 121.69 GiB pool (unslothai/unsloth PR #10704:
    # "[baseline] cuda_free=103.25 MemFree=103.25 MemAvailable=115.85"; vLLM reads MemAvailable on integrated GPUs
    # since PR #35356, vllm-project/vllm issue 35313). Strix Halo: 96 GiB, the GPU's share in the usual setting (the
    # BIOS carve-out's 96 GB on Windows; on Linux the GTT ceiling ttm.pages_limit sets, measured at 96.00 GiB and
    # reported by llama.cpp's HIP backend as 98304 MiB, noamsto/nix-amd-ai issue 42; Linux can raise it, adiudiuu/tps
    # issue 1).
    "nvidia-dgx-spark": 115.85,
    "amd-ryzen-ai-max-plus-395": 96.0,
}

# macOS lets the GPU wire only part of unified memory unless `sysctl iogpu.wired_limit_mb` raises it: Metal's
# recommendedMaxWorkingSetSize is about 2/3 of RAM up to 36 GB and 3/4 above (16 GB Mac: 10.67 GB, exo-explore/exo
# PR 1672; 64 GB M2 Max: loads fail above ~47 GB, ggml-org/llama.cpp issue 1870; GPUStack reads it as 75 % of RAM,
# gpustack/gpustack issue 1375).
APPLE_WIRED_SHARE_SMALL = 2 / 3
APPLE_WIRED_SHARE = 3 / 4
APPLE_SMALL_GB = 36
# Raising it: exo's configure_mlx.sh (exo-explore/exo, configure_mlx.sh) sets iogpu.wired_limit_mb to the larger of
# 80 % of RAM and RAM less 5,120 MB, which leaves macOS the few GB it needs ("leave 4-6GB for MacOS", instructlab's
# lab-troubleshoot.md).
APPLE_RAISED_WIRED_SHARE = 0.8
APPLE_RAISED_WIRED_RESERVE_MB = 5120

# The variant a bare name means when several cards share it: what clouds rent most (SXM boards, the larger memory;
# GH200 in its 96 GB form, the one Lambda and most clouds list).
PREFERRED_VARIANT = {"gh200": "nvidia-gh200-96gb"}

GENERATIONS = ("Volta", "Turing", "Ampere", "Ada", "Hopper", "Blackwell", "CDNA", "RDNA", "Gaudi", "Apple")

# A GeForce card's model number names it alone, as its 4090, 3090 and 5090 did by hand and the 4080 and 3090 Ti did
# not (session 8's walk: `--gpu 4080` was an unknown GPU): "GeForce RTX 4070 Ti SUPER" -> "4070 Ti SUPER", its
# memory left off ("GeForce RTX 3060 12GB" -> "3060"; a number two cards share is ambiguous, as any name).
GEFORCE_NUMBER = re.compile(r"GeForce RTX (\d{4}(?: Ti)?(?: SUPER)?)(?: \d+GB)?")
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
    sm_count: int | None = None  # streaming multiprocessors (compute units), where the catalog has them
    pcie_lanes: int | None = None  # the card's PCIe link width (x16, or x8 for the RTX 4060 and 4060 Ti)
    boost_clock_mhz: float | None = None  # rated boost clock, where the catalog has it
    # the L2 cache in MB and the partitions it is split into, each caching the accesses of the SMs wired to it (the
    # A100's two: data every SM reads is held in both, so one partition's share is what a kernel can count on)
    l2_cache_mb: float | None = None
    l2_partitions: int = 1
    # GPUs one NVLink switch fabric joins: 72 in GB200/GB300 NVL72 racks (across trays); 0: the node's own links
    nvlink_domain: int = 0
    # the power limit the card is run at where it is set below its TDP (Grand Teton's H100s: 500 W of 700 W)
    power_limit_w: float | None = None
    msrp_date: str | None = None  # the day the launch MSRP applied from (entries added in 2026 have it)
    slot_width: float | None = None  # expansion slots the reference card takes (None: not in the catalog, or a SoC)
    unified_memory: bool = False  # one memory pool for CPU and GPU (Apple silicon, DGX Spark, Strix Halo)
    # a whole computer's own ports for linking several (DGX Spark: ConnectX-7, RoCE at 200 Gb/s); "": none on file
    network: str = ""
    network_gbps: float | None = None
    # AMD Instinct OAM modules: the Infinity Fabric (xGMI) links to the other GPUs of the node, GB/s in both
    # directions over all links (MI300X: 7 x 128 GB/s); None: no such fabric on file
    infinity_fabric_gbs: float | None = None
    scale_up_gbs: float | None = None  # Gaudi's on-chip RoCE ports to the other cards of its server, bidirectional

    @property
    def busy_w(self) -> float | None:
        """What the card draws while it works: its TDP, or the power limit it is run at (None: no TDP on file)."""
        return self.power_limit_w or self.tdp_w

    @property
    def generation(self) -> str:
        """Volta, Turing, Ampere, Ada, Hopper, Blackwell... (the first word GPUS.md uses that matches)."""
        return next((g for g in GENERATIONS if g.lower() in self.architecture.lower()), self.architecture)

    @property
    def capability(self) -> int | None:
        """The card's NVIDIA compute capability as one number, major x 10 + minor (8.6 -> 86, 12.0 -> 120): vLLM's
        ``DeviceCapability.to_int`` (vllm-project/vllm ``vllm/platforms/interface.py``, c7761993), the number each
        engine's ``get_min_capability`` is compared with at start (vLLM's ``VllmConfig``, SGLang's
        ``model_loader/loader.py``). None for another maker's card, or one with no capability on file. The one
        place gpuplan reads ``compute_capability``'s text."""
        if self.vendor != "NVIDIA" or not self.compute_capability:
            return None
        major, _, minor = self.compute_capability.partition(".")
        return int(major) * 10 + int(minor or 0)

    @property
    def sm_major(self) -> int:
        """The compute capability's major version, the generation the kernels dispatch on (8 for 8.6, 9 Hopper, 10
        datacenter Blackwell, 12 GeForce Blackwell: vLLM's ``is_device_capability_family``, ``to_int() // 10``); 0 where
        :attr:`capability` is None."""
        return (self.capability or 0) // 10

    @property
    def sparse_tensor_cores(self) -> bool:
        """Whether the matrix units run 2:4 structured sparsity, which datasheets quote at twice the dense rate:
        NVIDIA from Ampere (compute capability 8.0: the A100 whitepaper's Sparse Tensor Cores), AMD CDNA 3 and 4 and
        RDNA 4 (their gpus.yaml entries quote sparse figures apart); not Volta, Turing, CDNA 2, RDNA 3, Gaudi or
        Apple silicon (the entries' notes: 'no sparsity on Turing', 'No sparsity on CDNA2', Gaudi's MME dense)."""
        if self.vendor == "NVIDIA":
            return (self.capability or 0) >= 80
        return self.vendor == "AMD" and any(a in self.architecture for a in ("CDNA 3", "CDNA 4", "RDNA 4"))

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


def raised_wired_limit_mb(gpu: GpuSpec) -> int | None:
    """The ``iogpu.wired_limit_mb`` a Mac's GPU can be given (:data:`APPLE_RAISED_WIRED_SHARE`, exo's rule: the larger
    of 80 % of RAM and RAM less 5,120 MB); None on any other card."""
    if gpu.vendor != "Apple":
        return None
    total = round(gpu.memory_gib * 1024)
    return max(int(total * APPLE_RAISED_WIRED_SHARE), total - APPLE_RAISED_WIRED_RESERVE_MB)


def _usable_gib(entry: dict[str, Any], size: float) -> float:
    if entry["id"] in REPORTED_USABLE_GIB:
        return REPORTED_USABLE_GIB[entry["id"]]
    if entry["vendor"] == "Apple":
        return size * (APPLE_WIRED_SHARE_SMALL if size <= APPLE_SMALL_GB else APPLE_WIRED_SHARE)
    inband = entry.get("ecc") and "GDDR" in str(entry["memory"].get("type", "")) and entry["segment"] == "datacenter"
    return size * (1 - (ECC_INBAND_RESERVE if inband else DRIVER_RESERVE))


def _per_device(entry: dict[str, Any]) -> dict[str, Any]:
    """The entry as software sees one of its devices. An MI250X or MI250 package holds two GCDs that ROCm shows as
    two GPUs of 64 GB and 1.6 TB/s each ("two GCDs, each of which constitutes one GPU device in the system": ROCm's
    gpu-arch/mi250.md; stas00's MAMF of 147 TFLOPS is of one MI250X GCD's 191.5), so a
    ``devices_per_package`` of 2 halves the package's datasheet memory, bandwidth, peaks, power and price, and the
    name says so; a count of GPUs is then of devices, as ``rocm-smi`` and ``torch.cuda.device_count()`` count."""
    n = int(entry.get("devices_per_package") or 1)
    if n == 1:
        return entry
    mem = entry["memory"]
    return {**entry, "name": f"{entry['name']} (one GCD of {n})",
            "memory": {**mem, "size_gb": mem["size_gb"] / n, "bandwidth_gbs": (mem.get("bandwidth_gbs") or 0) / n},
            "dense_tflops": {k: (v / n if v else v) for k, v in (entry.get("dense_tflops") or {}).items()},
            "tdp_w": entry["tdp_w"] / n if entry.get("tdp_w") else entry.get("tdp_w"),
            "launch_msrp_usd": entry["launch_msrp_usd"] / n if entry.get("launch_msrp_usd") else None}


def _spec(entry: dict[str, Any]) -> GpuSpec:
    entry = _per_device(entry)
    mem = entry["memory"]
    size = float(mem["size_gb"])
    link = entry.get("interconnect") or {}
    return GpuSpec(
        id=entry["id"], name=entry["name"], vendor=entry["vendor"], architecture=str(entry["architecture"]),
        segment=str(entry.get("segment")), form_factor=str(entry.get("form_factor")), memory_gib=size,
        usable_gib=_usable_gib(entry, size), memory_type=str(mem.get("type")),
        bandwidth_gbs=float(mem.get("bandwidth_gbs") or 0), dense_tflops=dict(entry.get("dense_tflops") or {}),
        supports=dict(entry.get("supports") or {}), nvlink_bandwidth_gbs=link.get("nvlink_bandwidth_gbs"),
        pcie_generation=(entry.get("pcie") or {}).get("generation"), tdp_w=entry.get("tdp_w"),
        msrp_usd=entry.get("launch_msrp_usd"), compute_capability=entry.get("compute_capability"),
        aliases=tuple(str(a) for a in entry.get("aliases") or ()), sm_count=entry.get("sm_count"),
        pcie_lanes=(entry.get("pcie") or {}).get("lanes"),
        boost_clock_mhz=entry.get("boost_clock_mhz"), l2_cache_mb=entry.get("l2_cache_mb"),
        l2_partitions=int(entry.get("l2_partitions") or 1), nvlink_domain=int(link.get("nvlink_domain") or 0),
        power_limit_w=entry.get("power_limit_w"),
        msrp_date=str(entry["launch_msrp_date"]) if entry.get("launch_msrp_date") else None,
        slot_width=entry.get("slot_width"), unified_memory=bool(mem.get("unified")) or entry["vendor"] == "Apple",
        network=str(link.get("network") or ""), network_gbps=link.get("network_gbps"),
        infinity_fabric_gbs=link.get("infinity_fabric_gbs"), scale_up_gbs=link.get("scale_up_gbs"))


def _entries() -> list[dict]:
    """The entries of ``gpus.yaml``, read from its JSON twin ``gpus.json`` when the twin is fresh
    (:func:`gpuplan.datafiles.read_yaml`: PyYAML takes a tenth to a third of a second for this file)."""
    return read_yaml("gpus.yaml")


class Catalog(Mapping[str, GpuSpec]):
    """The catalog by id, each card's :class:`GpuSpec` made when it is first asked for: a first estimate asks for
    one or two of the 69 cards, and making them all took 2 ms of its CPU time (bench/results/startup_s20.md).
    Membership and the names (:func:`_names`) read the entries alone."""

    def __init__(self, entries: list[dict[str, Any]]) -> None:
        self._entries = {e["id"]: e for e in entries}
        self._specs: dict[str, GpuSpec] = {}

    def __getitem__(self, gpu_id: str) -> GpuSpec:
        spec = self._specs.get(gpu_id)
        if spec is None:
            spec = self._specs[gpu_id] = _spec(self._entries[gpu_id])
        return spec

    def __contains__(self, gpu_id: object) -> bool:
        return gpu_id in self._entries

    def __iter__(self) -> Iterator[str]:
        return iter(self._entries)

    def __len__(self) -> int:
        return len(self._entries)

    def segment(self, gpu_id: str) -> str:
        """The card's :attr:`GpuSpec.segment` without making its spec (the offers ask it of every card they list)."""
        return str(self._entries[gpu_id].get("segment"))

    def devices_per_package(self, gpu_id: str) -> int:
        """How many devices software sees in one package of the card (2 for the MI250X and MI250: :func:`_per_device`),
        the count a vendor's offer of packages is multiplied by."""
        return int(self._entries[gpu_id].get("devices_per_package") or 1)

    def names(self) -> Iterator[tuple[str, str, tuple[str, ...]]]:
        """(id, name, aliases) of every card, as its :class:`GpuSpec` says them, without making one."""
        for gpu_id, entry in self._entries.items():
            yield gpu_id, _per_device(entry)["name"], tuple(str(a) for a in entry.get("aliases") or ())


@cache
def gpus() -> Catalog:
    """The catalog by id, validated: unique ids, positive memory."""
    entries = _entries()
    if len({e["id"] for e in entries}) != len(entries):
        raise RuntimeError("gpus.yaml has duplicate ids")
    for e in entries:
        if float(e["memory"]["size_gb"]) <= 0:
            raise RuntimeError(f"gpus.yaml: {e['id']} has memory {float(e['memory']['size_gb'])}")
    return Catalog(entries)


@cache
def _names() -> dict[str, tuple[str, ...]]:
    """Normalized name -> the ids it may mean."""
    table: dict[str, set[str]] = {}
    for gpu_id, full, aliases in gpus().names():
        short = gpu_id.removeprefix("nvidia-").removeprefix("geforce-")
        number = GEFORCE_NUMBER.fullmatch(full)  # "4080", "3090 Ti": as people name them
        numbers = (number[1], number[1].replace(" ", "")) if number else ()
        for name in (gpu_id, short, full, *aliases, *numbers):
            table.setdefault(normalize_name(name), set()).add(gpu_id)
    for alias, ids in EXTRA_ALIASES.items():
        table.setdefault(normalize_name(alias), set()).update(ids)
    return {k: tuple(sorted(v)) for k, v in table.items()}


@cache
def short_id(gpu_id: str) -> str:
    """The shortest name that still means this card, for table cells (JSON keeps full ids):
    nvidia-geforce-rtx-4090 -> rtx-4090, nvidia-h100-sxm5-80gb -> h100-sxm; the memory stays where it tells
    variants apart (a100-sxm4-80gb). Names not in the catalog pass through."""
    short = gpu_id.removeprefix("nvidia-").removeprefix("geforce-").removeprefix("amd-instinct-")
    for candidate in (re.sub(r"-\d+gb$", "", short).replace("-sxm5", "-sxm"), re.sub(r"-\d+gb$", "", short)):
        if candidate != short and _names().get(normalize_name(candidate)) == (gpu_id,):
            return candidate
    return short


COUNTED = re.compile(r"(\d+)\s*[x\u00d7]\s*(.+)", re.IGNORECASE)  # 2x3090, 2 X 3090, 2\u00d73090


def counted_card(text: str) -> tuple[str, int | None]:
    """``"2x3090"`` -> (``"3090"``, 2): the one parser of a count and a card (``--gpu`` of every command, the
    scenario's ``gpu``, ``--have``, a build); a name with no count, or whose whole is a card's name, -> (it, None).
    A count below 1 is one sentence. Read after NFKC, as names are (:func:`~gpuplan.errors.normalize_name`): a
    full-width ``２Ｘ３０９０`` is ``2X3090``."""
    name = text.strip()
    if not name.isascii():
        import unicodedata  # rare, as in normalize_name

        name = unicodedata.normalize("NFKC", name)
    counted = COUNTED.fullmatch(name)
    if not counted or not _is_card(counted[2]) or _names().get(normalize_name(name)):
        return name, None
    if int(counted[1]) < 1:
        raise GpuplanError(f"a count of cards starts at 1: {name!r} has {int(counted[1])} (write 2x3090, or a name "
                           "for one card)")
    return counted[2].strip(), int(counted[1])


def _is_card(name: str) -> bool:
    """Whether ``name`` names a card, in any spelling :func:`resolve_gpu` reads ('3090', 'L4 24GB', 'Tesla T4')."""
    try:
        resolve_gpu(name)
    except GpuplanError:
        return False
    return True


# a Mac's own name before its chip ("MacBook Pro M4 Max", "Mac Studio M3 Ultra", "Mac mini M4 Pro"): the chip is
# what the catalog names (the s31 walk: "MacBook M4 Max" was refused, with the right suggestion)
MAC = re.compile(r"\b(?:macbook|mac)(?:\s*(?:pro|air|studio|mini))?\b|\bimac\b", re.IGNORECASE)


def resolve_gpu(name: str) -> tuple[GpuSpec, str | None]:
    """A GPU by id or alias, and a note when the name was ambiguous (``H100``, ``A100-80GB``): the variant clouds
    rent most is taken (SXM, then the larger memory; :data:`PREFERRED_VARIANT`) and the note names the others."""
    if not isinstance(name, str) or not name.strip():
        raise GpuplanError("no GPU given: name one from `gpuplan gpus` (h100-sxm, rtx-4090, l40s...)")
    name = " ".join(MAC.sub(" ", name).split()) or name  # "MacBook Pro M4 Max": the chip is the card
    key = normalize_name(name)
    ids = _names().get(key) or _names().get(key.replace("-", ""))
    worded = False
    if not ids:
        card, count = counted_card(name)
        if count is not None:  # a list of cards (recommend's and capacity's --gpus) or one card of a split
            raise GpuplanError(f"{name.strip()!r} is a count and a card, where a card alone is asked: name {card}")
        ids, worded = _by_words(name), True
        if not ids:
            ids, worded = _by_size(name), False
        if not ids and "," in name:  # session 22's walk: "did you mean 'rtx-3090-ti'" for two cards
            raise GpuplanError(f"{name.strip()!r} is a list where one card is asked: name one (2x3090 for two of "
                               "the same)")
        if not ids:
            raise UnknownNameError("GPU", name, sorted(_names()), hint="`gpuplan gpus` lists the catalog.")
    if len(ids) == 1:
        spec = gpus()[ids[0]]
        return spec, (f"{name.strip()} taken as {spec.name} ({spec.id}), the one card whose name has those words"
                      if worded else None)
    chosen = PREFERRED_VARIANT.get(key) or max(ids, key=lambda i: ("sxm" in i, gpus()[i].memory_gib, i))
    others = [i.removeprefix("nvidia-") for i in ids if i != chosen]
    note = (f"{name} taken as {gpus()[chosen].name} ({chosen}); it could also be {', '.join(others)}: "
            "name the variant to choose")
    return gpus()[chosen], note


def _words(text: str) -> set[str]:
    return set(re.findall(r"[a-z0-9]+", text.lower()))


# words that name another card of the same number: an RTX 4070 is not the 4070 Ti SUPER (12 GB at 504 GB/s against
# 16 GB at 672 GB/s), a 4060 not the 4060 Ti 16GB, an RX 7900 XT not the XTX, an RTX 4090 not the 4090 Laptop GPU
# (AD103, 16 GB at 576 GB/s against AD102, 24 GB at 1,008 GB/s)
TIER_WORDS = frozenset({"ti", "super", "xt", "xtx", "laptop", "mobile"})


def _by_words(name: str) -> tuple[str, ...]:
    """The cards whose name, id or an alias holds every word of ``name``, in any order ("Tesla V100", "A100 40GB
    PCIe" for "A100 PCIe 40GB"), and no tier word (:data:`TIER_WORDS`) more: those are other cards; a name without a
    model number (a word with a digit: "rtx", "nvidia") means none."""
    words = _words(name)
    if not any(re.search(r"\d", w) for w in words):
        return ()
    return tuple(sorted(spec.id for spec in gpus().values()
                        if any(words <= _words(n) and not TIER_WORDS & (_words(n) - words)
                               for n in (spec.name, spec.id, *spec.aliases))))


SIZED = re.compile(r"(?<![0-9a-z.])(\d+(?:\.\d+)?)\s*gi?b(?![0-9a-z])", re.IGNORECASE)  # 24GB, 24 GB, 80gib


def _by_size(name: str) -> tuple[str, ...]:
    """The s30 walk: 'T4 16GB', 'L4 24GB', 'RTX 4090 24GB', 'A100 80GB SXM', as cloud consoles and shops write cards,
    where the catalog names them without their memory. The name less its size is looked up as any name is, and the
    cards it names with that memory (gpus.yaml ``memory.size_gb``) are the answer; a size none of them has is one
    sentence (an 'RTX 4090 48GB' is not the 24 GB card). No size, or a rest that names nothing: ()."""
    sized = SIZED.search(name)
    rest = (name[:sized.start()] + " " + name[sized.end():]).strip(" -_") if sized else ""
    key = normalize_name(rest)
    ids = (_names().get(key) or _names().get(key.replace("-", "")) or _by_words(rest)) if key else ()
    size = float(sized[1]) if sized else 0.0
    matching = tuple(i for i in ids if round(gpus()[i].memory_gib) == round(size))
    if ids and not matching:
        sizes = " or ".join(f"{s:g}" for s in sorted({gpus()[i].memory_gib for i in ids}))
        named = f"the catalog's {gpus()[ids[0]].name} has" if len(ids) == 1 else f"{rest} comes in the catalog with"
        raise GpuplanError(f"{name.strip()!r}: {named} {sizes} GB, not {size:g}: name a card from `gpuplan gpus`")
    return matching


def load_gpu(name: str) -> GpuSpec:
    """A GPU by id or alias; an ambiguous name gives its common variant (see :func:`resolve_gpu` for the note)."""
    return resolve_gpu(name)[0]


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

