"""Communication: link bandwidth between GPUs and the bytes collectives move.

Ring collectives (Patarasuk & Yuan 2009): all-reduce moves ``2·(n-1)/n`` of the buffer per GPU, all-gather and
reduce-scatter ``(n-1)/n``.
"""

from __future__ import annotations

from .. import overheads as oh
from ..hardware import GpuSpec, Network
from ..model import ModelSpec
from ..scenario import Scenario


def link_bandwidth_gbs(gpu: GpuSpec, s: Scenario, network: Network) -> tuple[float, str]:
    """Unidirectional GB/s between GPUs: NVLink (half the bidirectional catalog figure) when the card has
    it and the offer does not say PCIe; else PCIe (x16: 2 GB/s per lane-gen step); across nodes the
    inter-node network."""
    if s.num_nodes > 1:
        return oh.INTER_NODE_GBS, "inter-node network"
    if gpu.nvlink_bandwidth_gbs and not network.intra_node.startswith("pcie") and "PCIe" not in gpu.form_factor:
        return gpu.nvlink_bandwidth_gbs / 2, "NVLink"
    gen = gpu.pcie_generation or 4
    return oh.PCIE_X16_GBS.get(gen, 32.0) * oh.PCIE_EFFICIENCY, f"PCIe gen{gen}"


def training_comm_bytes(s: Scenario, m: ModelSpec) -> float:
    """Bytes each GPU sends per optimizer step (ring collectives)."""
    strategy, n, t = s.resolved_strategy, s.dp, s.tp
    trainable = m.params_total if s.method == "full" else 0.01 * m.params_total
    grad_bytes = (4 if s.precision.endswith("mixed") and strategy in ("ddp", "single") else 2) * trainable / (t * s.pp)
    total = 0.0
    if n > 1:
        ring = (n - 1) / n
        if strategy == "zero3":  # all-gather weights for forward and backward, reduce-scatter gradients
            total += ring * (2 * 2 * m.params_total / (t * s.pp) + grad_bytes)
        elif strategy in ("zero1", "zero2"):
            total += ring * (grad_bytes + 2 * trainable / (t * s.pp))  # reduce-scatter + all-gather
        else:
            total += 2 * ring * grad_bytes  # all-reduce
    if t > 1:  # Megatron TP: 4 all-reduces of b·s·h per layer (2 forward, 2 backward), per micro-batch
        act = 2 * s.micro_batch_size * s.seq_len * m.hidden_size
        total += s.grad_accum_steps * m.num_layers / s.pp * 4 * 2 * (t - 1) / t * act
    return total
