"""Which offers a scenario may use: those in force that pass its price filter (age, confidence:
:func:`gpuplan.market.store.matches`), its provider and pricing, whose instances hold the GPUs that run together
(a training job's GPUs per node; a serving replica's tensor- and pipeline-parallel group, split over its nodes), and
whose provider has a fabric when the scenario spans nodes; the cheapest region of each product only.
"""

from __future__ import annotations

from ..scenario import Scenario
from .offers import Offer, max_per_node, multi_node
from .store import PriceFilter, matches, price_filter


def cheapest_in_force(offers: list[Offer], f: PriceFilter) -> list[Offer]:
    """The offers a ranking may use, cheapest per (provider, tier, GPU, GPUs per instance, pricing): the other
    regions of the same product cannot win."""
    best: dict[tuple, Offer] = {}
    for o in offers:
        if not matches(o, f):
            continue
        key = o.key[:5]
        if key not in best or o.usd_per_gpu_hour < best[key].usd_per_gpu_hour:
            best[key] = o
    return list(best.values())


def allowed(o: Offer, s: Scenario, per_node: int, num_nodes: int) -> bool:
    """Whether ``o`` can run ``s``: provider and pricing asked, node size, and a fabric for several nodes."""
    if per_node > max_per_node(o) or (num_nodes > 1 and not multi_node(o)):
        return False
    if s.provider and o.provider != s.provider:
        return False
    if s.pricing in ("on_demand", "owned"):  # owned: the user's cards, no offer to rent (market.offers.owned_offer)
        return o.pricing == s.pricing
    return o.interruptible if s.pricing == "spot" else True


def matching(offers: list[Offer], s: Scenario, gpu_id: str | None = None) -> list[Offer]:
    """Offers for ``gpu_id`` (any GPU when None) that the scenario may use (see :func:`allowed`)."""
    return usable(cheapest_in_force(offers, price_filter(s)), s, gpu_id)


def usable(in_force: list[Offer], s: Scenario, gpu_id: str | None = None) -> list[Offer]:
    """:func:`matching` of offers already in force (:func:`cheapest_in_force` of the scenario's price filter)."""
    per_node = s.num_gpus if s.task == "train" else s.tp * s.pp // s.num_nodes  # a serving copy may span nodes
    return [o for o in in_force if (not gpu_id or o.gpu_id == gpu_id) and allowed(o, s, per_node, s.num_nodes)]


def cheapest_on_demand(in_force: list[Offer], gpu_id: str) -> tuple[float, str] | None:
    """The cheapest on-demand $/GPU-hour of ``gpu_id`` among the offers in force (:func:`cheapest_in_force`), any
    provider, with its label."""
    same = [o for o in in_force if o.pricing == "on_demand" and o.gpu_id == gpu_id]
    if not same:
        return None
    o = min(same, key=lambda x: x.usd_per_gpu_hour)
    return o.usd_per_gpu_hour, f"{o.provider} {o.gpu_count}x on-demand"
