"""``cost``: a scenario priced on every offer it may use, each row a reading of the plan on that offer's card.

For each card among the offers (the scenario's, when it names one): the scenario placed on it, resolved and
refused as every plan, on several nodes where one instance cannot hold its GPUs
(:func:`gpuplan.plan.nodes.on_nodes`), its memory plan, and where it fits, the plan built on the card's offers
(:func:`gpuplan.plan.build.build`: timed once per class of links, priced on each offer); its costs on every offer
that finishes the job are the rows, with the plan's device peak. Spot offers are compared with the cheapest
on-demand price of the same GPU anywhere (the builder's ``Offers.reference``).
"""

from __future__ import annotations

from dataclasses import replace

from ..errors import GpuplanError
from ..hardware import gpus
from ..market.choice import cheapest_in_force
from ..market.cost import Cost
from ..market.offers import Offer
from ..market.store import price_filter
from ..model.spec import ModelSpec
from ..scenario import Scenario
from .build import build, in_force_for, known_provider, links_that_matter, offers_for
from .nodes import on_nodes
from .plan import Plan
from .refusals import check
from .resolve import resolve


def compare(s: Scenario, m: ModelSpec, catalog: list[Offer]) -> list[Cost]:
    """Every offer of ``catalog`` the scenario may use, on a card it fits, with its cost and the device peak per GPU,
    cheapest first (by $ per million tokens, spot with its interruption overhead; then more GPUs first)."""
    # what no card changes (the layout, the engine, speculation, a load, the provider), refused in estimate's
    # sentence before the search, which leaves out each card whose plan is refused (session 17's outside fuzzer:
    # tp 3 of 32 heads, a draft model of another vocabulary or an unknown provider answered "no offer fits")
    check(s.model_copy(update={"gpu": None}), m, None)
    known_provider(s, catalog)
    rows = []
    in_force = cheapest_in_force(catalog, price_filter(s))
    cards = dict.fromkeys(o.gpu_id for o in in_force if not s.gpu or o.gpu_id == s.gpu)  # in the catalog's order
    for gpu_id in cards:
        gpu = gpus()[gpu_id]
        try:
            r = on_nodes(resolve(s.on_card(gpu_id) if s.gpu is None else s, m, gpu), in_force)
            offers = offers_for(r, catalog, in_force)
            plan = build(r, memory_only=True) if offers.candidates else None
        except GpuplanError:  # the card cannot run it (its precision, its kernels), or its GPUs make no nodes
            continue
        if plan is None or not plan.verdict.fits:
            continue
        r = plan.setup  # with what the engine filled from its pool (vLLM's max_model_len)
        priced = build(r, offers, advise=False, base=plan)
        rows += [replace(c, device_peak_gib=priced.memory.device_peak_gib) for c in _on_load(r, offers, plan, priced)]
    return sorted(rows, key=lambda c: (c.usd_per_million_tokens, -c.num_gpus))


def _on_load(r, offers, base: Plan, plan: Plan) -> list[Cost]:
    """Each offer's cost; a scenario with a load (``users``, ``rate_rps``) priced as ``estimate`` prices it, at the
    output tokens/s its simulated run served on that offer's links (:func:`gpuplan.plan.build.priced_on_load`), one
    run per class of links (:func:`~gpuplan.plan.build.links_that_matter`), not at the decode step's tokens/s at
    ``batch_size``: Llama-3.1-8B at 4 requests/s on an H100 was $2.31 per million here and $0.37 in ``estimate``."""
    s = r.scenario
    if s.task != "infer" or (s.users is None and s.rate_rps is None):
        return [p.cost for p in plan.priced]
    served: dict = {}
    out = []
    for p in plan.priced:
        links = links_that_matter(s, r.gpu, p.offer.network)
        if links not in served:  # the plan on this offer, its load run simulated and its price read from it
            served[links] = build(r, offers, advise=False, base=base, offer_label=p.cost.offer,
                                  simulate=True).priced_tokens_per_s
        tokens_per_s = served[links]
        out.append(replace(p.cost, usd_per_million_tokens=p.cost.usd_per_hour / (tokens_per_s * 3600) * 1e6)
                   if tokens_per_s else p.cost)
    return out


def why_none(s: Scenario, m: ModelSpec, catalog: list[Offer]) -> str:
    """Why :func:`compare` found no row for a scenario that names its card, in one sentence ("" where the card's
    offers are in force and the job fits none of them, or no card is named): the card has no offer at all, none
    recent and confident enough, none of the pricing asked, or the card cannot run the plan (its refusal). Session
    24's fuzz: ``cost --gpu rtx-2080-ti`` (no offer of it) read "no offer in force fits this scenario (try ...
    more GPUs, QLoRA)", where the job fits the card, as recommend's ``_no_price`` says it."""
    if not s.gpu:
        return ""
    name = gpus()[s.gpu].name
    mine = [o for o in catalog if o.gpu_id == s.gpu]
    if not mine:
        return (f"no offer of {name} is in the prices at all (`gpuplan prices update` or --catalog FILE); "
                "`gpuplan estimate --pricing owned` prices your own card by its power")
    if not cheapest_in_force(mine, price_filter(s)):
        return (f"no offer of {name} is recent and confident enough: its {len(mine)} offers are older than "
                f"{s.max_price_age_days} days or low confidence (--max-price-age-days, --include-low-confidence)")
    try:
        r = on_nodes(resolve(s, m, gpus()[s.gpu]), in_force_for(s, catalog))
    except GpuplanError as e:  # the card cannot run the plan: its own sentence
        return str(e)
    offers = offers_for(r, catalog)
    if not offers.candidates:
        return (f"no offer of {name} in force matches the pricing ({s.pricing.replace('_', '-')}), the provider or "
                f"the {s.world_size} GPU{'s' if s.world_size > 1 else ''} asked: --pricing any, or fewer GPUs")
    if s.task == "train" and s.pricing == "spot":  # the offers are there and the job never finishes on them (s31)
        return next((w for w in build(r, offers, advise=False).warnings if "never finishes" in w), "")
    return ""


def left_out(offers: list[Offer], s: Scenario) -> dict[str, int]:
    """How many offers the price filter leaves out, by reason (stale, low confidence), to say so."""
    f = price_filter(s)
    old = sum(1 for o in offers if f.max_age_days is not None and o.age_days(f.today) > f.max_age_days)
    low = sum(1 for o in offers if o.confidence == "low" and not f.include_low_confidence
              and not (f.max_age_days is not None and o.age_days(f.today) > f.max_age_days))
    return {"older than max_price_age_days": old, "low confidence": low}
