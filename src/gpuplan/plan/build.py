"""``build(resolved, offers) -> Plan``: the one road from a resolved scenario (:mod:`.resolve`) to its plan.

Read top to bottom, each stage once:

0. **layout**: a training plan on a card whose scenario set neither micro-batch nor accumulation takes the
   recipe's (:func:`.layout.with_layout`), so every command plans the run ``gpuplan launch`` writes;
1. **memory** per GPU at three levels, then the **verdict** on the card (:func:`.plan.memory_plan`; a memory-only
   build stops here: the advice's probes are plans of this kind);
2. **speed**, once per class of links among the offers (the links that can change it: none on one GPU, the
   node's within one node), and **cost** on every offer the scenario may use; the offer the plan is priced on is
   chosen here alone (:func:`choose`: the lowest $ per million tokens, the order ``recommend`` ranks by, or the
   offer a ranked row named); a job that does not fit is timed, not priced;
3. **serving runs** (``simulate``): a serving plan on an engine whose scheduler is simulated runs its ``users`` or
   ``rate_rps`` and its ``batch_size`` requests at once through it (:func:`serving_runs`, on the priced offer's
   links); a plan with a load run is priced at the tokens/s that run served (:func:`priced_on_load`);
4. **advice**: the largest batch and context that fit, and when it does not fit, the changes that would
   (:mod:`.advice` and :mod:`.fixes`, each a memory-only build; a change whose line states a speed is built
   whole, from the scenario as asked, so that its ratio is the one ``estimate`` gives with the change applied);
5. the training **data** and the **recipe**, when the scenario names data or a pretraining run.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from .. import clock
from ..errors import GpuplanError, UnknownNameError
from ..hardware import Network
from ..market.choice import cheapest_in_force, cheapest_on_demand, usable
from ..market.cost import Cost, default_mtbi_h, price_job, spot_dearer, spot_plan
from ..market.job import save_interval_h
from ..market.offers import Offer, owned_offer
from ..market.store import price_filter
from ..scenario import Scenario
from ..scenario.fields import MIN_MODEL_LEN
from ..speed import Speed, speed_of
from ..speed.comms import inter_node_link, intra_node_link
from ..speed.gemm import can_time
from .advice import advice
from .layout import with_layout
from .plan import Plan, memory_plan
from .resolve import Resolved, ResolvedModule, resolve


@dataclass(frozen=True, kw_only=True)
class Offers:
    """The offers a plan may be priced on (those its scenario may use) and the cheapest on-demand price of its card
    anywhere (what spot is compared with); ``listed``: whether the catalog has the card at all."""

    candidates: tuple[Offer, ...] = ()
    reference: tuple[float, str] | None = None
    listed: bool = True


def offers_for(r: Resolved | ResolvedModule, catalog: list[Offer], in_force: list[Offer] | None = None) -> Offers:
    """The catalog's offers the resolved scenario may use on its card (:func:`gpuplan.market.choice.matching`: its
    provider and pricing, prices in force, instances that hold its GPUs). ``in_force``: the catalog's offers in
    force under the scenario's price filter (:func:`in_force_for`), where the caller has them already."""
    s, gpu = r.scenario, r.gpu
    if gpu is None:
        return Offers()
    known_provider(s, catalog)
    in_force = in_force_for(s, catalog) if in_force is None else in_force
    return Offers(candidates=tuple(usable(in_force, s, gpu.id)), listed=any(o.gpu_id == gpu.id for o in catalog),
                  reference=cheapest_on_demand(in_force, gpu.id))


def in_force_for(s: Scenario, catalog: list[Offer]) -> list[Offer]:
    """The catalog's offers in force under ``s``'s price filter, cheapest per product
    (:func:`gpuplan.market.choice.cheapest_in_force`): filtered once per plan, read by the placement on nodes
    (:func:`gpuplan.plan.nodes.on_nodes`) and the offers (:func:`offers_for`)."""
    return cheapest_in_force(catalog, price_filter(s))


def known_provider(s: Scenario, catalog: list[Offer]) -> None:
    """The scenario's provider, if it names one, is one of the catalog's; else one sentence naming them."""
    if s.provider and s.provider not in {o.provider for o in catalog}:
        known = sorted({o.provider for o in catalog})
        raise UnknownNameError("provider", s.provider, known, f"(providers in the price catalog: {', '.join(known)})")


def build(r: Resolved | ResolvedModule, offers: Offers | None = None, *, advise: bool = True, memory_only: bool = False,
          offer_label: str | None = None, base: Plan | None = None, speeds: dict | None = None,
          recipe: bool | None = None, simulate: bool = False, keep_micro_batch: bool = False,
          layout: bool = True, memory: tuple | None = None) -> Plan:
    """The plan of ``r`` priced on ``offers`` (the stages of the module docstring). A search passes the memory plan
    it already made (``base``) and the speeds it timed on this card (``speeds``, by class of links), or the memory
    of a layout it estimated once for every card (``memory``: :func:`.plan.card_memory`); ``memory_only``: the
    first two stages alone (memory and verdict, at ``r``'s own layout), the searches' pruning rows; ``recipe``: the
    training recipe even without data (True: a plan to launch), with data only (None), or never (False: a
    search's row, whose recipe is made for the setup launched); ``simulate``: the serving runs (one plan's
    question, not a search's); ``keep_micro_batch``: a ranked setup's layout keeps its micro-batch; ``layout``
    False: a search's row, at the layout the search ranked (recommend's, decided by :func:`.layout.layout`), and
    without a recipe. Without ``offers`` the plan is timed and not priced, and says nothing of prices (the caller
    prices it: a llama.cpp split's devices, :mod:`.split`). A model that is not a decoder LLM (``r`` a
    :class:`ResolvedModule`) runs the same stages on its recorded profiles
    (:func:`gpuplan.plan.modules.build_module`). Every plan checks the deadline of the work it is part of
    (:func:`gpuplan.clock.in_time`: the page's, none on the command line)."""
    clock.in_time()  # a search builds one plan per candidate: work past its request's deadline stops here
    if isinstance(r, ResolvedModule):
        from .modules import build_module  # the module plans' readers and timings load for a module's plan only

        return build_module(r, module_offers(r, offers), advise=advise, memory_only=memory_only)
    given = r.scenario  # before the layout: the advice's changes are planned from it, as estimate plans them
    if layout and not memory_only:
        laid, estimated = with_layout(r, keep_micro_batch)
        if laid.scenario is not r.scenario:  # another layout: its own memory (the ladder's, where it made it), speeds
            base, speeds, memory = None, None, estimated
        r = laid
    plan = base if base is not None else memory_plan(r, memory)
    r = plan.setup if base is None else r  # with what the engine filled from its pool (vLLM's max_model_len)
    if memory_only:
        return plan
    s, m, gpu = r.scenario, r.model, r.gpu
    asked, offers = offers is not None, offers or Offers()  # no offers given: timed, its price the caller's to find
    if gpu is not None and can_time(gpu):  # speed always (what it would run at); cost for a job that fits
        at = held(s, plan)
        priced = price_offers(at, m, gpu, plan.model.params_trainable, offers, speeds={} if speeds is None else speeds)
        chosen = choose(priced, offer_label)
        if chosen is None and offer_label is None and (s.pricing == "owned" or not offers.listed):
            chosen = owned(at, m, gpu, plan.model.params_trainable)
        speed, said = (chosen.speed, chosen.said) if chosen else timed(at, m, gpu, None)
        if at is not s:
            speed = replace(speed, batch_held=at.batch_size)
        cost = chosen.cost if chosen and plan.verdict.fits is not False else None
        warned = price_warnings(r, chosen, offers, unfinished=bool(offers.candidates) and not priced) \
            if plan.verdict.fits is not False and asked else []
        if cost is not None and cost.pricing == "owned":
            said = (*said, power_words(gpu, cost))
        plan = plan.said(said, tuple(warned), speed=speed, cost=cost)
        plan._offer = chosen.offer if chosen else None
        plan._priced = tuple(priced)
        plan._spot = unpriced_spot(plan) if chosen is None else None
    elif gpu is not None:
        plan = plan.said(warnings=(f"no speed or cost: {gpu.name} has no dense 16-bit matrix rate in the GPU "
                                   "catalog",))
    if simulate and plan.speed is not None and s.task == "infer":
        plan = priced_on_load(serving_runs(r, plan))
    if gpu is not None and advise:
        plan = plan.said(**advice(r, plan, given, lambda changed: changed_plan(changed, m, offers, layout)))
    if s.task == "train" and recipe is not False and layout and \
            (recipe or s.dataset or s.samples or s.model_size or s.epochs):  # a recipe reads the builder's layout
        from .dataset_report import data_warnings, dataset_section
        from .recipe import plan_recipe

        typed = plan_recipe(plan)
        plan = plan.said(warnings=data_warnings(s, typed), dataset=dataset_section(s, plan.cost),
                         recipe=typed.as_dict())
        plan._recipe = typed
    return plan


def changed_plan(changed: Scenario, m, offers: Offers, layout: bool = True) -> Plan:
    """The plan of a change whose speed the advice states (:class:`gpuplan.plan.fixes.Timing`): the builder's, without
    advice or recipe, priced on ``offers`` where their links can change its speed (:func:`links_that_matter`:
    several GPUs), else timed on the card's own links, the same speed without pricing every offer."""
    r = resolve(changed, m)
    links = r.gpu is not None and links_that_matter(r.scenario, r.gpu, Network()) is not None
    return build(r, offers if links else None, advise=False, recipe=False, layout=layout)


def held(s: Scenario, plan: Plan) -> Scenario:
    """The scenario its decode step is timed at: ``users`` beyond what the engine's KV pool holds wait their turn
    (:attr:`Scenario.held_at_once`), so the step runs the pool's requests, not the users' (a 1x H100 pool of 3
    requests of 6,300 tokens was ranked by ``recommend --users 50`` at a decode step of 50 at once)."""
    pool = plan.memory.max_concurrency
    if not s.users or s.held_at_once != 1 or pool is None or not 1 <= pool < s.batch_size:
        return s
    return s.model_copy(update={"batch_size": pool})


def module_offers(r: ResolvedModule, offers: Offers | None) -> tuple[Offer, ...]:
    """The offers a module's plan is priced on: ``offers``' candidates, or, as a decoder LLM's plan is priced
    (:func:`owned`), the user's own cards by their power under ``--pricing owned`` or for a card no offer lists."""
    if offers is None or r.gpu is None or (r.scenario.pricing != "owned" and offers.listed):
        return (offers or Offers()).candidates
    offer = owned_offer(r.gpu.id, r.scenario.world_size)
    return () if offer is None else (offer,)


def serving_runs(r: Resolved, plan: Plan) -> Plan:
    """``plan`` with its serving runs (:mod:`gpuplan.serving.load`) through the engine's scheduler over the plan's
    own KV pool and limits, on the links of the offer it is priced on: the scenario's ``users`` or ``rate_rps``
    (asked: numpy needed) and, for more than one request, its ``batch_size`` requests queued at once (skipped, and
    said, without numpy). Engines whose scheduler is not simulated get none; a vLLM that would not start at the
    model's context runs at ``--max-model-len`` of the longest request (as the verdict tells the user to)."""
    from ..engines import SIMULATED
    from ..serving.load import longest_request, run_load

    s, offer = r.scenario, plan.offer
    asked, batch = bool(s.users or s.rate_rps), s.batch_size > 1 and not s.users
    if s.engine not in SIMULATED or not (asked or batch):
        return plan
    try:
        from ..serving.simulate import scheduler_for
    except ImportError:  # numpy
        if asked:
            raise GpuplanError("users and rate_rps run the engine's scheduler with numpy: pip install "
                               "'gpuplan[serving]'") from None
        return plan.said(("the offline run of the batch through the engine's scheduler needs numpy (pip install "
                          "'gpuplan[serving]')",))
    network, runs = offer.network if offer is not None else None, {}
    for key, offline in (("load", False), ("offline", True)):
        if not (asked if key == "load" else batch):
            continue
        longest = longest_request(s, r.model, offline)
        engine, said = _scheduler(r, plan, longest, scheduler_for)
        if engine is not None:
            runs[key] = run_load(s, r.model, r.gpu, engine, network, offline=offline, said=said)
    # (the batch's run is not asked for: a pool too small for one request is the verdict's to say)
    why = "the weights alone are more than the GPU holds" \
        if plan.memory.capacity_gib and plan.memory.weights_gib > plan.memory.capacity_gib \
        else "the engine's KV pool cannot hold one request of the longest length"
    warned = (f"no simulated run: {why}",) if asked and "load" not in runs else ()
    return plan.said(warnings=warned, **runs)


def _scheduler(r: Resolved, plan: Plan, longest: int, scheduler_for) -> tuple[object, tuple[str, ...]]:
    """The scheduler a serving run of ``plan`` goes through (:func:`gpuplan.serving.simulate.scheduler_for`, passed
    in: it needs numpy), and what to say of it: where vLLM would not start at the model's context and none is asked,
    the one it starts with at ``--max-model-len`` of the longest request (as the verdict tells the user to)."""
    s = r.scenario
    engine = scheduler_for(s, plan.startup, plan.pool, longest)
    if engine is not None or s.max_model_len is not None:
        return engine, ()
    fitted = memory_plan(resolve(s.with_resolved({"max_model_len": max(longest, MIN_MODEL_LEN)}), r.model, r.gpu))
    return scheduler_for(fitted.setup.scenario, fitted.startup, fitted.pool, longest), (
        f"simulated with --max-model-len {longest:,} (the longest request): at the model's context the engine would "
        "not start",)


def saturation_of(r: Resolved, plan: Plan) -> float | None:
    """Requests/s ``plan``'s setup completes with its engine full, in closed form
    (:func:`gpuplan.serving.load.saturation_bound`), over the scheduler :func:`serving_runs` would run it on; None
    where its engine is not simulated, numpy is missing, or its pool holds no request of the longest length."""
    from ..engines import SIMULATED

    if r.scenario.engine not in SIMULATED:
        return None
    try:
        from ..serving.load import longest_request, saturation_bound
        from ..serving.simulate import scheduler_for
    except ImportError:  # numpy
        return None
    engine, _ = _scheduler(r, plan, longest_request(r.scenario, r.model), scheduler_for)
    if engine is None:
        return None
    return saturation_bound(r.scenario, r.model, r.gpu, engine, plan.offer.network if plan.offer else None)


def priced_on_load(plan: Plan) -> Plan:
    """``plan`` priced at the output tokens/s its load run served (``users`` or ``rate_rps``: the run's
    ``served``: its steady window's, :func:`gpuplan.serving.load.summary`) where it has one: the instance's $/h over the
    tokens an hour of that run serves, ``usd_per_hour / (output_throughput x 3600) x 1e6`` per million output
    tokens, as ``capacity`` prices its rows from its simulation (:func:`gpuplan.plan.capacity._row`). Before, a
    loaded plan was priced at its decode step's tokens/s at ``batch_size`` (1 for a rate): an 8B model at 4
    requests/s on an H100 quoted $2.32 per million at 155 tokens/s while its own run served 759. The assumption
    says which throughput the price reads; a plan without a load run keeps its speed's."""
    run, cost = plan.load, plan.cost
    if run is None or cost is None or not run.served[0]:
        return plan
    served = run.served[0]  # its steady window's, as capacity judges (not the ramp and drain of a finite run)
    usd = cost.usd_per_hour / (served * 3600) * 1e6
    batch = plan.speed.batch_held or plan.setup.scenario.batch_size
    window = " (steady, after its warm-up and before its drain)" if run.steady_output_throughput else ""
    said = (f"cost: priced at the {served:,.0f} output tokens/s the simulated run at {run.load_words} "
            f"served{window}, not "
            f"the decode step's {plan.speed.tokens_per_s:,.0f} at {batch:,} request{'s' if batch != 1 else ''} at "
            f"once: ${cost.usd_per_hour:,.2f}/h / "
            f"({served:,.0f} x 3,600 s) = ${usd:,.2f} per million output tokens",)
    return plan.said(said, cost=replace(cost, usd_per_million_tokens=usd), priced_tokens_per_s=served)


def unpriced_spot(plan: Plan):
    """Spot asked of a training plan with no offer priced: how it would checkpoint and restart, from its work
    hours, its checkpoint's write time and the interruptions' prior (:func:`gpuplan.market.cost.spot_plan`)."""
    s = plan.setup.scenario
    if s.task != "train" or s.pricing != "spot":
        return None
    return spot_plan(plan.work_hours or 0.0, plan.checkpoint_bytes, s.world_size,
                     mtbi_h=s.mtbi_hours, disk_gbs=s.disk_gbs, interval_h=save_interval_h(s, plan.speed))


def links_that_matter(s: Scenario, gpu, network: Network) -> object:
    """The part of an offer's links that can change the speed of ``s`` on ``gpu`` (offers that differ only
    elsewhere share one speed): none on one GPU; on one node, the link inside the node they give the card
    (:func:`gpuplan.speed.comms.intra_node_link`, all the speed model reads of them there: an offer saying "nvlink"
    of an SXM card and one that says nothing time alike); across nodes, that link, the fabric's share per GPU
    (:func:`~gpuplan.speed.comms.inter_node_link`, at the node's GPUs) and whether the offer named its fabric."""
    if s.num_nodes > 1:
        return intra_node_link(gpu, network), inter_node_link(gpu, network, s.num_gpus), not network.inter_node
    return intra_node_link(gpu, network) if s.world_size > 1 or s.tp * s.pp > 1 else None


@dataclass(frozen=True, kw_only=True)
class Priced:
    """One offer priced: its cost, and the speed on its links with what that speed assumed (``said``)."""

    cost: Cost
    offer: Offer
    speed: Speed
    said: tuple[str, ...]


def timed(s: Scenario, m, gpu, network: Network | None) -> tuple[Speed, tuple[str, ...]]:
    """The speed of ``s`` on ``gpu`` over ``network`` (None: the card's own links), its assumptions apart (the plan
    says them once); an inference plan's with TensorRT-LLM's figure at maximum load where its engine has one
    (:func:`gpuplan.serving.offline.with_offline`: the serving step model under trtllm-bench's settings)."""
    speed = speed_of(s, m, gpu, network)
    if s.task != "train":
        from ..serving.offline import with_offline  # the serving step model: a training plan never loads it

        speed = with_offline(speed, s, m, gpu, network)
    return apart(speed)


def apart(speed: Speed) -> tuple[Speed, tuple[str, ...]]:
    """``speed`` without its assumptions, and the assumptions (the plan says them once)."""
    return replace(speed, assumptions=[]), tuple(speed.assumptions)


def own_links(s: Scenario, gpu, speed: Speed) -> dict:
    """The ``speeds`` of :func:`price_offers` holding ``speed``, the speed of ``s`` timed on the card's own links
    (``speed_of`` without a network): a search that timed the setup to choose its layout does not time it again
    for the offers of that class of links."""
    return {links_that_matter(s, gpu, Network()): apart(speed)}


def price_offers(s: Scenario, m, gpu, trainable: int, offers: Offers, *, speeds: dict) -> list[Priced]:
    """Every offer of ``offers`` that finishes the job, with its cost and the speed on its links, cheapest per
    million tokens first. ``speeds`` holds the speed of each class of links (:func:`links_that_matter`), filled
    here: one speed per class."""
    out, today = [], clock.today()
    for offer in offers.candidates:
        links = links_that_matter(s, gpu, offer.network)
        if links not in speeds:
            speeds[links] = timed(s, m, gpu, offer.network)
        speed, said = speeds[links]
        cost = price_job(s, m, speed, offer, trainable, mtbi_h=s.mtbi_hours, disk_gbs=s.disk_gbs,
                         best_on_demand=offers.reference, today=today)
        if cost.finishes:
            out.append(Priced(cost=cost, offer=offer, speed=speed, said=said))
    return sorted(out, key=lambda x: x.cost.usd_per_million_tokens)


def owned(s: Scenario, m, gpu, trainable: int) -> Priced | None:
    """The job on the user's own cards (``--pricing owned``, or a card no offer prices): the offer
    ``recommend --have`` ranks (:func:`~gpuplan.market.offers.owned_offer`: the power they draw), timed on the
    card's own links; the price said in words. None when no draw is on file for the card (not priced)."""
    offer = owned_offer(gpu.id, s.world_size if s.task == "train" else s.tp * s.pp)
    if offer is None:
        return None
    speed, said = timed(s, m, gpu, None)
    cost = price_job(s, m, speed, offer, trainable, mtbi_h=s.mtbi_hours, disk_gbs=s.disk_gbs)
    return Priced(cost=cost, offer=offer, speed=speed, said=said)


def power_words(gpu, cost: Cost) -> str:
    """How a plan on the user's own cards is priced, in words (the assumption it says)."""
    from ..market.owned_power import HOME_PUE, busy_draw, home_kwh  # a plan on rented cards never asks

    kwh, where = home_kwh()
    watts, whence = busy_draw(gpu)  # an owned offer is made only for a card whose draw is on file
    whence = "" if gpu.busy_w else f" ({whence})"  # a TDP goes unsaid, as before; a computer's measured draw is said
    return (f"cost: {cost.offer}: {watts:g} W per card under load{whence} x PUE {HOME_PUE:.1f} x ${kwh:g}/kWh "
            f"({where}, as `gpuplan buy` prices a home's power) = ${cost.usd_per_gpu_hour:.3f} per GPU-hour; the "
            "cards themselves are not counted (`gpuplan buy` weighs buying against renting)")


def choose(priced: list[Priced], label: str | None = None) -> Priced | None:
    """The offer a plan is priced on: the lowest $ per million tokens (``priced`` is in that order), or the one
    labelled ``label`` (a ranked row's); None when there is none."""
    if label is not None:
        priced = [x for x in priced if x.cost.offer == label]
    return priced[0] if priced else None


def price_warnings(r: Resolved, chosen: Priced | None, offers: Offers, *, unfinished: bool = False) -> list[str]:
    """What the price of the chosen offer needs said: none in force, old, low confidence, spot dearer than
    on-demand per GPU-hour the job uses (:func:`gpuplan.market.cost.spot_dearer`). ``unfinished``: offers were in
    force and the job finishes on none of them (interruptions too frequent for a checkpoint and a restart,
    :func:`gpuplan.market.cost.price_job`), which fuzz_s31 found said as "no spot offer in force"."""
    s, gpu = r.scenario, r.gpu
    if chosen is None and unfinished:
        return [f"no price for {gpu.name}: on its {len(offers.candidates)} {s.pricing.replace('_', '-')} offer(s) "
                "in force the job never finishes: interruptions (every "
                f"{s.mtbi_hours or default_mtbi_h(s.world_size):.3g} h) come faster than a checkpoint is written "
                f"(at {s.disk_gbs:.3g} GB/s) and the job restarts; use --pricing on-demand, faster storage "
                "(--disk-gbs) or a longer --mtbi-hours"]
    if chosen is None:
        from ..market.owned_power import busy_draw  # a plan priced on an offer never asks

        if (s.pricing == "owned" or not offers.listed) and busy_draw(gpu) is None:
            return [f"no price for {gpu.name}: " + ("" if s.pricing == "owned" else "no offer of it at all, and ") +
                    "no power draw on file to price it as your own card by (no TDP in the GPU catalog, no measured "
                    "draw of its computer in data/owning.yaml; `gpuplan buy --host-w W` prices yours)"]
        why = "" if offers.listed else " (no offer of it at all)"
        return [f"no price for {gpu.name}: no {s.pricing.replace('_', '-')} offer"
                + (f" at {s.provider}" if s.provider else "") + f" in force{why}; "
                "older or low-confidence rows need --max-price-age-days / --include-low-confidence"]
    best, offer = chosen.cost, chosen.offer
    if offer.pricing == "owned":  # a card no one rents: the user's own, as recommend --have prices it
        return [] if s.pricing == "owned" else [f"no price for {gpu.name}: no offer of it at all; priced as your "
                                                "own card, by its power (--pricing owned)"]
    out = []
    if best.stale:
        out.append(f"the price of {best.offer} is {best.price_age_days} days old")
    if best.price_confidence == "low":
        out.append(f"the price of {best.offer} is marked low confidence in {offer.origin}")
    if best.spot_multiplier and best.best_on_demand_usd_per_gpu_hour:
        od = best.best_on_demand_usd_per_gpu_hour
        counted = "interruptions counted" if s.task == "train" else \
            "an hour's price before the restarts after interruptions: `gpuplan capacity --pricing spot` sizes a fleet"
        said = spot_dearer(gpu.name, (best.spot_multiplier * od, best.offer),
                           (od, f"{best.best_on_demand_offer}, the cheapest"), per="/GPU-h",
                           counted=f"per GPU-hour the job uses, {counted}", instead="--pricing any picks the cheaper")
        out += [said] if said else []
    return out
