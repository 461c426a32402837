"""A scenario priced across offers: keep the GPUs it fits on, estimate speed there, then cost.

The same memory, speed and cost functions as ``gpuplan estimate``; this module only chooses offers:
the offers the scenario may use (:func:`gpuplan.market.choice.matching`), each estimated on its own card and
network and priced. Spot offers are compared with the cheapest on-demand price of the same GPU anywhere.
"""

from __future__ import annotations

from ..hardware import gpus
from ..market.choice import best_on_demand, matching
from ..market.cost import Cost, price_job
from ..market.offers import Offer
from ..market.store import price_filter
from ..model.spec import ModelSpec
from ..scenario import Scenario
from ..speed import speed_of
from .plan import probe


def price(s: Scenario, m: ModelSpec, offer: Offer, trainable: int, all_offers: list[Offer], today=None) -> Cost:
    gpu = gpus()[offer.gpu_id]
    scenario = replace_gpu(s, offer.gpu_id)
    speed = speed_of(scenario, m, gpu, offer.network)
    return price_job(scenario, m, speed, offer, trainable, today=today, mtbi_h=s.mtbi_hours, disk_gbs=s.disk_gbs,
                     best_on_demand=best_on_demand(all_offers, offer.gpu_id, price_filter(s)))


def replace_gpu(s: Scenario, gpu_id: str) -> Scenario:
    """``s`` on ``gpu_id`` (in fp16 where the card has no bf16 and the precision was left to the card: the
    scenario's validation takes the card's precision)."""
    return s.model_copy(update={"gpu": gpu_id})


def compare(s: Scenario, m: ModelSpec, offers: list[Offer], trainable: int, today=None) -> list[Cost]:
    """Every matching offer whose GPU fits the scenario, its cost with the device peak, cheapest first (by $ per
    million tokens, spot with its interruption overhead)."""
    rows = []
    fit_cache: dict[str, tuple[bool, float]] = {}
    gpu_id = None
    if s.gpu:
        from ..hardware import load_gpu

        gpu_id = load_gpu(s.gpu).id
    for offer in matching(offers, s, gpu_id):
        if offer.gpu_id not in fit_cache:
            fit_cache[offer.gpu_id] = probe(replace_gpu(s, offer.gpu_id), m)
        ok, peak = fit_cache[offer.gpu_id]
        if ok:
            cost = price(s, m, offer, trainable, offers, today)
            cost.device_peak_gib = peak
            if cost.finishes:
                rows.append(cost)
    return sorted(rows, key=lambda c: (c.usd_per_million_tokens, -c.num_gpus))


def left_out(offers: list[Offer], s: Scenario) -> dict[str, int]:
    """How many offers the price filter leaves out, by reason (stale, low confidence), to say so."""
    f = price_filter(s)
    old = sum(1 for o in offers if f.max_age_days is not None and o.age_days(f.today) > f.max_age_days)
    low = sum(1 for o in offers if o.confidence == "low" and not f.include_low_confidence
              and not (f.max_age_days is not None and o.age_days(f.today) > f.max_age_days))
    return {"older than max_price_age_days": old, "low confidence": low}
