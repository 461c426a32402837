"""Communication: the links of a setup (from the offer's :class:`~gpuplan.hardware.Network`, else the card's own)
and the time of ring collectives over them.

Ring collectives (Patarasuk & Yuan 2009) move ``2·(n-1)/n`` of the buffer per GPU for an all-reduce and
``(n-1)/n`` for an all-gather or reduce-scatter; each call also pays a latency (the alpha of the alpha-beta
model, :data:`~gpuplan.overheads.COLLECTIVE_LATENCY_S`). Across nodes the ring runs through each node's
network: every GPU gets ``node Gbit/s / GPUs per node`` (one NIC per GPU on HGX nodes), and a node without a
fabric (``inter_node = "none"``) cannot join a multi-node job at all.

Data-parallel collectives over several nodes run hierarchically, as NCCL does on rail-optimized nodes (one NIC per
GPU; NCCL's tree and NVLS/CollNet algorithms, and its rings, which enter and leave each node on different rails): a
reduce-scatter inside the node over NVLink/PCIe, then each GPU exchanges only its ``1/g`` share with the same rail of
the other nodes over its NIC, then an all-gather inside the node (:class:`DataParallel`). A flat ring over the
slowest link would move ``g`` times as many bytes per NIC.

Rack-scale NVLink (GB200/GB300 NVL72: ``nvlink_domain`` 72 in the catalog) joins the GPUs of many trays in one
NVLink switch fabric: a group inside the domain runs its ring over NVLink whatever the tray count. A group larger
than the domain runs hierarchically (as NCCL's NVLS/tree algorithms do): reduce-scatter inside each domain over
NVLink, all-reduce of each GPU's ``1/d`` shard across domains over its own NIC, all-gather inside the domain:
``2·(d-1)/d · B / bw_nvlink + 2·(k-1)/k · B/d / bw_nic`` for ``k`` domains of ``d`` GPUs (half of each term for an
all-gather or reduce-scatter) (:func:`group_all_reduce_s`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from .. import overheads as oh
from ..hardware import GpuSpec, Network


@dataclass(frozen=True, kw_only=True)
class Link:
    """Achievable bandwidth per GPU and direction (bytes/s), per-call latency, and what it is, in words."""

    bytes_per_s: float
    latency_s: float
    kind: str
    label: str


def _is_sxm(gpu: GpuSpec) -> bool:
    return bool(gpu.nvlink_bandwidth_gbs) and "PCIe" not in gpu.form_factor


def intra_node_link(gpu: GpuSpec, network: Network) -> Link:
    """Within a node: NVLink (half the bidirectional catalog figure) where the offer says so, or the card is an
    SXM/OAM module and the offer does not say otherwise; AMD Instinct's Infinity Fabric likewise (an offer's
    ``nvlink`` reads as the node's GPU fabric); PCIe x16 of the card's generation with peer-to-peer;
    through host memory without it (GeForce cards: NCCL's SHM transport). Intel Gaudi: the on-chip RoCE ports
    that join the eight cards of a server all-to-all (docs.habana.ai "Intel Gaudi Network Configuration": 21 of the
    24 ports, 3 to each other card), not PCIe."""
    kind = network.intra_node or ("nvlink" if _is_sxm(gpu) else "infinity-fabric" if gpu.infinity_fabric_gbs
                                  else "scale-up" if gpu.scale_up_gbs
                                  else "pcie-no-p2p" if gpu.segment == "consumer" else "pcie")
    if kind in ("nvlink", "scale-up") and gpu.scale_up_gbs:
        bw = gpu.scale_up_gbs / 2 * 1e9 * oh.GAUDI_SCALE_UP_EFFICIENCY
        return Link(bytes_per_s=bw, latency_s=oh.COLLECTIVE_LATENCY_S["roce"], kind="scale-up",
                    label=f"on-chip RoCE scale-up {gpu.scale_up_gbs / 2:.0f} GB/s")
    if kind in ("nvlink", "infinity-fabric") and gpu.infinity_fabric_gbs:
        # AMD's fully connected xGMI mesh: 64 GB/s per link and direction on MI300X, ~48 usable (AMD ROCm blog,
        # "Understanding RCCL Bandwidth and xGMI Performance on AMD Instinct MI300X", 2025-03-02: 75 %)
        bw = gpu.infinity_fabric_gbs / 2 * 1e9 * oh.INFINITY_FABRIC_EFFICIENCY
        return Link(bytes_per_s=bw, latency_s=oh.COLLECTIVE_LATENCY_S["infinity-fabric"], kind="infinity-fabric",
                    label=f"Infinity Fabric {gpu.infinity_fabric_gbs / 2:.0f} GB/s")
    if kind == "nvlink" and gpu.nvlink_bandwidth_gbs:
        bw = gpu.nvlink_bandwidth_gbs / 2 * 1e9 * oh.NVLINK_EFFICIENCY
        return Link(bytes_per_s=bw, latency_s=oh.COLLECTIVE_LATENCY_S["nvlink"], kind="nvlink",
                    label=f"NVLink {gpu.nvlink_bandwidth_gbs / 2:.0f} GB/s")
    gen = gpu.pcie_generation or 4
    bw = oh.PCIE_X16_GBS.get(gen, 32.0) * 1e9 * oh.PCIE_EFFICIENCY
    if kind == "pcie-no-p2p":
        return Link(bytes_per_s=bw * oh.PCIE_NO_P2P_FACTOR, latency_s=oh.COLLECTIVE_LATENCY_S["pcie-no-p2p"],
                    kind=kind, label=f"PCIe gen{gen} without peer-to-peer (through host memory)")
    return Link(bytes_per_s=bw, latency_s=oh.COLLECTIVE_LATENCY_S["pcie"], kind="pcie", label=f"PCIe gen{gen}")


def inter_node_link(gpu: GpuSpec, network: Network, gpus_per_node: int) -> Link | None:
    """Between nodes, per GPU: the node's fabric shared by its GPUs. ``None`` when the provider sells no
    multi-node fabric. Where the offer does not say, a whole computer's own ports (the catalog's ``network``: two
    DGX Sparks over ConnectX-7 RoCE at 200 Gb/s), else the default of the card's class (HGX: one 200 Gb/s NIC per
    GPU; others: one 100 Gb/s Ethernet port per node), said in the assumptions."""
    kind = network.inter_node
    if kind == "none":
        return None
    own = not kind and bool(gpu.network)
    if own:
        kind = gpu.network
    elif not kind:
        kind = "infiniband" if _is_sxm(gpu) else "ethernet"
    gbps = network.inter_node_gbps or (gpu.network_gbps if own else None) or oh.INTER_NODE_DEFAULT_GBPS[
        "sxm" if _is_sxm(gpu) else "other"]
    per_gpu = gbps / 8 * 1e9 / max(gpus_per_node, 1) * oh.INTER_NODE_EFFICIENCY.get(kind, 0.6)
    said = "" if network.inter_node else " (the computer's own ports)" if own else " (assumed)"
    return Link(bytes_per_s=per_gpu, latency_s=oh.COLLECTIVE_LATENCY_S.get(kind, 100e-6), kind=kind,
                label=f"{kind} {gbps:.0f} Gb/s per node{said}")


def in_nvlink_domain(gpu: GpuSpec, network: Network, ranks: int) -> bool:
    """Whether ``ranks`` GPUs fit in one rack-scale NVLink domain of the card (NVL72), on NVLink."""
    return bool(gpu.nvlink_domain) and ranks <= gpu.nvlink_domain and intra_node_link(gpu, network).kind == "nvlink"


def slowest_link(gpu: GpuSpec, network: Network, num_nodes: int, gpus_per_node: int) -> Link | None:
    """The link a collective over all ranks is bound by: the inter-node share per GPU once the group spans
    nodes (``None`` if there is no fabric), else the node's own links; NVLink while the whole job fits one
    rack-scale NVLink domain."""
    intra = intra_node_link(gpu, network)
    if num_nodes <= 1 or in_nvlink_domain(gpu, network, num_nodes * gpus_per_node):
        return intra
    inter = inter_node_link(gpu, network, gpus_per_node)
    if inter is None:
        return None
    return inter if inter.bytes_per_s < intra.bytes_per_s else intra


def all_reduce_s(nbytes: float, ranks: int, link: Link) -> float:
    """Ring all-reduce of an ``nbytes`` buffer over ``ranks`` GPUs."""
    if ranks <= 1 or nbytes <= 0:
        return 0.0
    return 2 * (ranks - 1) / ranks * nbytes / link.bytes_per_s + link.latency_s


def all_gather_s(nbytes: float, ranks: int, link: Link) -> float:
    """Ring all-gather (or reduce-scatter) whose full, unsharded buffer is ``nbytes``."""
    if ranks <= 1 or nbytes <= 0:
        return 0.0
    return (ranks - 1) / ranks * nbytes / link.bytes_per_s + link.latency_s


@dataclass(frozen=True, kw_only=True)
class DataParallel:
    """The data-parallel group of a setup: ``per_node`` ranks on each of ``nodes`` nodes over ``intra`` (inside a
    node) and ``inter`` (each GPU's share of the node's fabric; ``None`` on one node)."""

    per_node: int
    nodes: int
    intra: Link
    inter: Link | None

    def all_reduce_s(self, nbytes: float) -> float:
        """Hierarchical all-reduce: reduce-scatter in the node, all-reduce of the ``1/g`` share across nodes,
        all-gather in the node."""
        if self.nodes <= 1 or self.inter is None:
            return all_reduce_s(nbytes, self.per_node, self.intra)
        share = nbytes / self.per_node
        return (2 * all_gather_s(nbytes, self.per_node, self.intra)
                + all_reduce_s(share, self.nodes, self.inter))

    def all_gather_s(self, nbytes: float) -> float:
        """Hierarchical all-gather (or reduce-scatter) of a buffer whose whole is ``nbytes``: each rail gathers its
        ``1/g`` across nodes, then the node gathers the rails."""
        if self.nodes <= 1 or self.inter is None:
            return all_gather_s(nbytes, self.per_node, self.intra)
        return all_gather_s(nbytes / self.per_node, self.nodes, self.inter) + all_gather_s(nbytes, self.per_node,
                                                                                           self.intra)


def data_parallel(gpu: GpuSpec, network: Network, num_nodes: int, gpus_per_node: int, ranks_per_node: int
                  ) -> DataParallel:
    """The data-parallel group of ``ranks_per_node`` ranks per node (``gpus_per_node`` GPUs share each node's
    fabric) over ``num_nodes`` nodes."""
    inter = inter_node_link(gpu, network, gpus_per_node) if num_nodes > 1 else None
    return DataParallel(per_node=max(ranks_per_node, 1), nodes=num_nodes, intra=intra_node_link(gpu, network),
                        inter=inter)


def _levels(gpu: GpuSpec, network: Network, ranks: int, num_nodes: int, gpus_per_node: int, spread: int):
    """(the group's GPUs per NVLink domain, domains, NVLink, NIC link) of a group spanning several rack-scale
    domains, or None when the group is flat (one domain, or a card without one). ``spread``: the GPUs between two
    of the group's ranks (the model-parallel ranks packed inside each domain)."""
    if not gpu.nvlink_domain or in_nvlink_domain(gpu, network, ranks * spread) or num_nodes <= 1:
        return None
    inter = inter_node_link(gpu, network, gpus_per_node)
    if inter is None or intra_node_link(gpu, network).kind != "nvlink":
        return None
    d = max(gpu.nvlink_domain // spread, 1)
    return d, math.ceil(ranks / d), intra_node_link(gpu, network), inter


def group_all_reduce_s(nbytes: float, ranks: int, gpu: GpuSpec, network: Network, num_nodes: int,
                       gpus_per_node: int, flat: Link, spread: int = 1) -> float:
    """All-reduce over ``ranks`` GPUs: hierarchical across rack-scale NVLink domains (module docstring), else the
    ring over ``flat``."""
    levels = _levels(gpu, network, ranks, num_nodes, gpus_per_node, spread)
    if levels is None:
        return all_reduce_s(nbytes, ranks, flat)
    d, k, nvlink, nic = levels
    return all_reduce_s(nbytes, d, nvlink) + all_reduce_s(nbytes / d, k, nic)


def group_all_gather_s(nbytes: float, ranks: int, gpu: GpuSpec, network: Network, num_nodes: int,
                       gpus_per_node: int, flat: Link, spread: int = 1) -> float:
    """All-gather (or reduce-scatter) over ``ranks`` GPUs, hierarchical like :func:`group_all_reduce_s`."""
    levels = _levels(gpu, network, ranks, num_nodes, gpus_per_node, spread)
    if levels is None:
        return all_gather_s(nbytes, ranks, flat)
    d, k, nvlink, nic = levels
    return all_gather_s(nbytes, d, nvlink) + all_gather_s(nbytes / d, k, nic)
