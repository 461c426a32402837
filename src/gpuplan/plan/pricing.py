"""A scenario priced across offers: keep the GPUs it fits on, estimate speed there, then cost.

The same memory, speed and cost functions as ``gpuplan estimate``; this module only enumerates offers.
"""

from __future__ import annotations

import math

from ..hardware import gpus
from ..market.cost import Cost, price_job
from ..market.offers import Offer, max_per_node
from ..memory import fits_only
from ..model.spec import ModelSpec
from ..scenario import Scenario
from ..speed import speed_of


def matching(offers: list[Offer], s: Scenario, gpu_id: str | None = None) -> list[Offer]:
    """Offers for ``gpu_id`` (any GPU when None) allowed by the scenario's provider and pricing, whose nodes
    hold the scenario's GPUs per node (tensor parallelism and NVLink do not span instances)."""
    out = []
    for o in offers:
        if gpu_id and o.gpu_id != gpu_id:
            continue
        if s.num_gpus > max_per_node(o):
            continue
        if s.provider and o.provider != s.provider:
            continue
        if s.pricing == "on_demand" and o.pricing != "on_demand":
            continue
        if s.pricing == "spot" and not o.interruptible:
            continue
        out.append(o)
    return out


def on_demand_price(offers: list[Offer], o: Offer) -> float | None:
    """The on-demand price of the same provider, tier and GPU, to express a spot price as a multiplier."""
    same = [x.usd_per_gpu_hour for x in offers if x.pricing == "on_demand" and
            (x.provider, x.tier, x.gpu_id) == (o.provider, o.tier, o.gpu_id)]
    return min(same) if same else None


def price(s: Scenario, m: ModelSpec, offer: Offer, trainable: int, all_offers: list[Offer], today=None) -> Cost:
    gpu = gpus()[offer.gpu_id]
    scenario = replace_gpu(s, offer.gpu_id)
    speed = speed_of(scenario, m, gpu, offer.network)
    return price_job(scenario, m, speed, offer, trainable, today=today, mtbi_h=s.mtbi_hours, disk_gbs=s.disk_gbs,
                     on_demand_price=on_demand_price(all_offers, offer))


def replace_gpu(s: Scenario, gpu_id: str) -> Scenario:
    return s.model_copy(update={"gpu": gpu_id})


def compare(s: Scenario, m: ModelSpec, offers: list[Offer], trainable: int, today=None) -> list[tuple[Cost, float]]:
    """Every matching offer whose GPU fits the scenario, with its cost and device peak, cheapest first."""
    rows = []
    fit_cache: dict[str, tuple[bool, float]] = {}
    for offer in matching(offers, s):
        gpu = gpus()[offer.gpu_id]
        if offer.gpu_id not in fit_cache:
            fit_cache[offer.gpu_id] = fits_only(replace_gpu(s, offer.gpu_id), m, gpu)
        ok, peak = fit_cache[offer.gpu_id]
        if ok:
            cost = price(s, m, offer, trainable, offers, today)
            if math.isfinite(cost.usd_per_million_tokens or 0.0) and math.isfinite(cost.usd_total):
                rows.append((cost, peak))  # a spot job that never finishes is not an offer
    return sorted(rows, key=lambda r: r[0].usd_per_million_tokens)

