"""A scenario priced across offers: keep the GPUs it fits on, estimate speed there, then cost.

The same memory, speed and cost functions as ``gpuplan estimate``; this module only chooses offers:
those in force that pass the scenario's price filter (age, confidence: :func:`gpuplan.market.store.matches`),
its provider and pricing, whose nodes hold the scenario's GPUs, and whose provider has a fabric when the
scenario spans nodes. Spot offers are compared with the cheapest on-demand price of the same GPU anywhere.
"""

from __future__ import annotations

from ..errors import GpuplanError
from ..hardware import gpus
from ..market.cost import Cost, price_job
from ..market.offers import Offer, max_per_node, multi_node
from ..market.store import PriceFilter, matches, price_filter
from ..memory import fits_only
from ..model.spec import ModelSpec
from ..resolve import card_precision
from ..scenario import Scenario
from ..speed import speed_of


def in_force(offers: list[Offer], f: PriceFilter) -> list[Offer]:
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
    if s.pricing == "on_demand":
        return o.pricing == "on_demand"
    return o.interruptible if s.pricing == "spot" else True


def matching(offers: list[Offer], s: Scenario, gpu_id: str | None = None) -> list[Offer]:
    """Offers for ``gpu_id`` (any GPU when None) that the scenario may use (see :func:`allowed`)."""
    per_node = s.num_gpus if s.task == "train" else s.tp * s.pp
    return [o for o in in_force(offers, price_filter(s)) if (not gpu_id or o.gpu_id == gpu_id)
            and allowed(o, s, per_node, s.num_nodes if s.task == "train" else 1)]


def best_on_demand(offers: list[Offer], gpu_id: str, f: PriceFilter) -> tuple[float, str] | None:
    """The cheapest on-demand $/GPU-hour of ``gpu_id`` among the offers in force, any provider, with its label."""
    same = [o for o in in_force(offers, f) if o.pricing == "on_demand" and o.gpu_id == gpu_id]
    if not same:
        return None
    o = min(same, key=lambda x: x.usd_per_gpu_hour)
    return o.usd_per_gpu_hour, f"{o.provider} {o.gpu_count}x on_demand"


def price(s: Scenario, m: ModelSpec, offer: Offer, trainable: int, all_offers: list[Offer], today=None) -> Cost:
    gpu = gpus()[offer.gpu_id]
    scenario = replace_gpu(s, offer.gpu_id)
    speed = speed_of(scenario, m, gpu, offer.network)
    return price_job(scenario, m, speed, offer, trainable, today=today, mtbi_h=s.mtbi_hours, disk_gbs=s.disk_gbs,
                     best_on_demand=best_on_demand(all_offers, offer.gpu_id, price_filter(s)))


def replace_gpu(s: Scenario, gpu_id: str) -> Scenario:
    """``s`` on ``gpu_id``, in fp16 where the card has no bf16 and the precision was left to the card."""
    precision = card_precision(s, gpus()[gpu_id])
    try:
        return s.model_copy(update={"gpu": gpu_id, **({"precision": precision} if precision else {})})
    except GpuplanError:  # the stack refuses fp16: keep its precision, and the card check says why it cannot run
        return s.model_copy(update={"gpu": gpu_id})


def compare(s: Scenario, m: ModelSpec, offers: list[Offer], trainable: int, today=None) -> list[tuple[Cost, float]]:
    """Every matching offer whose GPU fits the scenario, with its cost and device peak, cheapest first (by $ per
    million tokens, spot with its interruption overhead)."""
    rows = []
    fit_cache: dict[str, tuple[bool, float]] = {}
    gpu_id = None
    if s.gpu:
        from ..hardware import load_gpu

        gpu_id = load_gpu(s.gpu).id
    for offer in matching(offers, s, gpu_id):
        gpu = gpus()[offer.gpu_id]
        if offer.gpu_id not in fit_cache:
            fit_cache[offer.gpu_id] = fits_only(replace_gpu(s, offer.gpu_id), m, gpu)
        ok, peak = fit_cache[offer.gpu_id]
        if ok:
            cost = price(s, m, offer, trainable, offers, today)
            if cost.finishes:
                rows.append((cost, peak))
    return sorted(rows, key=lambda r: (r[0].usd_per_million_tokens, -r[0].num_gpus))


def left_out(offers: list[Offer], s: Scenario) -> dict[str, int]:
    """How many offers the price filter leaves out, by reason (stale, low confidence), to say so."""
    f = price_filter(s)
    old = sum(1 for o in offers if f.max_age_days is not None and o.age_days(f.today) > f.max_age_days)
    low = sum(1 for o in offers if o.confidence == "low" and not f.include_low_confidence
              and not (f.max_age_days is not None and o.age_days(f.today) > f.max_age_days))
    return {"older than max_price_age_days": old, "low confidence": low}
