"""Nodes x GPUs per node: a training job of more GPUs than one machine holds runs on several instances.
``--num-gpus 16`` of H100 SXM is 2 nodes x 8, the largest instance in force in the price catalog that divides the
count (8 where no offer lists the card: an HGX board), as ``recommend`` places it. ``estimate``,
``cost`` and ``launch`` place the scenario here before they build its plan, so its speed is timed over the links
between nodes and it is priced on instances that exist (one plan, one offer, whatever the command).
"""

from __future__ import annotations

from ..errors import GpuplanError
from ..hardware import gpus
from ..market.offers import NODE_GPUS, Offer, largest_node, max_per_node, multi_node
from ..scenario import Scenario
from .resolve import Resolved, changed


def node_shape(s: Scenario, gpu_id: str, in_force: list[Offer]) -> tuple[int, int, str] | None:
    """(GPUs per node, nodes, why) for several unified-memory computers (an Apple silicon Mac, a DGX Spark: one GPU
    a machine, training or serving), or a training scenario of more GPUs than one machine holds (the card's largest
    instance in force, and at least an HGX board's 8: a server or workstation of up to 8 cards is one node, priced
    where the catalog rents it): the largest instance in force among offers of several nodes (a fabric between
    them) whose size divides the count; None when one machine holds the GPUs or the scenario sets its nodes.
    ``in_force``: the catalog's offers in force under the scenario's price filter
    (:func:`gpuplan.plan.build.in_force_for`)."""
    if s.num_nodes > 1 or "num_nodes" in s.model_fields_set:
        return None
    gpu = gpus()[gpu_id]
    if gpu.unified_memory and s.num_gpus > 1:  # training or serving: each is a computer with its own GPU
        return 1, s.num_gpus, (f"{s.num_gpus} x {gpu.name} are {s.num_gpus} computers of one GPU each, linked over "
                               f"their network ports: {s.num_gpus} nodes x 1 (set --num-nodes to choose)")
    if s.task != "train":
        return None
    card = [o for o in in_force if o.gpu_id == gpu_id]
    if s.num_gpus <= largest_node(gpu_id, card):  # one machine holds them
        return None
    offers = [o for o in card if multi_node(o)]
    sizes = sorted({max_per_node(o) for o in offers}, reverse=True) or [NODE_GPUS]
    per_node = next((n for n in sizes if s.num_gpus % n == 0 and n % s.tp == 0), None)  # a TP group in one node
    if per_node is None:
        raise GpuplanError(f"{s.num_gpus} GPUs do not split into nodes of {' or '.join(map(str, sizes))} (the "
                           f"instances of {gpu_id} in the price catalog): set --num-gpus per node and --num-nodes")
    where = (f"the largest {gpu_id} instance in force in the price catalog holds {sizes[0]}" if offers else
             f"no offer lists {gpu_id}: {NODE_GPUS} per node, an HGX board")
    return per_node, s.num_gpus // per_node, (f"{s.num_gpus} GPUs as {s.num_gpus // per_node} nodes x {per_node} "
                                              f"({where}; set --num-nodes to choose)")


def on_nodes(r: Resolved, in_force: list[Offer]) -> Resolved:
    """``r`` on several nodes when one node cannot hold its GPUs (:func:`node_shape`: ``in_force``, the catalog's
    offers in force under its price filter), and why."""
    shape = r.gpu and node_shape(r.scenario, r.gpu.id, in_force)
    if not shape:
        return r
    per_node, nodes, why = shape
    return changed(r, {"num_gpus": per_node, "num_nodes": nodes}, why)
