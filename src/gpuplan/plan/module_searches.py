"""``recommend`` and ``cost`` for a model that is not a decoder LLM (a diffusion pipeline, an encoder-decoder, an
encoder): the scenario placed on every card among the offers in force, each placement resolved by the one resolver
(:func:`~.resolve.resolve_module_scenario`) and built by the one builder (:func:`~.build.build`): its memory on
the card, its verdict, its speed from the recorded profiles; where it fits, its price on each of the card's offers
(:func:`~.modules.priced`, the builder's own pricing). These plans run on one GPU, so a setup is one card.

``recommend`` keeps each card's cheapest offer and ranks the cards (cost: the job's total where ``train_steps``
is set, else dollars per thousand images or samples; time: the step or call; balanced: their product);
``cost`` lists every offer of every card that fits, cheapest first.
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Any

from pydantic import BaseModel, Field

from ..answer import Answer
from ..errors import GpuplanError
from ..hardware import gpus, resolve_gpu, short_id
from ..market.choice import cheapest_in_force
from ..market.offers import Offer
from ..market.store import price_filter
from ..model.module_spec import ModuleSpec
from ..scenario import Scenario
from .build import build, offers_for
from .modules import ModulePlan, describe, priced
from .recommend import Constraints, technique_variants
from .resolve import resolve_module_scenario


class CardSetup(BaseModel):
    """One card and offer for a module job: memory on the card, speed, and the price on the offer."""

    gpu_id: str
    offer: str
    provider: str
    pricing: str
    usd_per_hour: float
    device_peak_gib: float
    capacity_gib: float
    headroom_gib: float
    step_s: float  # one optimizer step (training), one denoising or decoder step (inference)
    call_s: float | None = None  # inference: one call (a batch of images or samples, a recording)
    samples_per_s: float
    unit: str  # images | samples | windows
    techniques: list[str] = Field(default_factory=list)  # what recommend changed for the job to fit the card,
    fields: dict[str, Any] = Field(default_factory=dict)  # ... and the scenario fields it set
    hours: float | None = None  # the job's, where training names its train_steps
    usd_total: float | None = None
    usd_per_1000: float  # dollars per thousand images, samples or windows
    bound: str
    price_origin: str = ""
    observed_at: str = ""
    price_confidence: str = "medium"


class ModuleChoices(Answer):
    """``recommend`` and ``cost`` for a diffusion pipeline, an encoder-decoder or an encoder: one row per card (its
    cheapest offer: ``recommend``) or per offer (``cost``), best first."""

    resolved: str
    task: str
    objective: str = "cost"
    setups: list[CardSetup]
    evaluated: int  # cards planned
    fitting: int  # cards the job fits
    notes: list[str] = Field(default_factory=list)
    defaults: list[str] = Field(default_factory=list)
    warnings: list[str] = Field(default_factory=list)


def _setup(plan: ModulePlan, s: Scenario, offer: Offer, change: tuple[list[str], dict]) -> CardSetup:
    w, mem = plan.work, plan.memory
    assert w is not None  # a built plan on a card with a matrix rate
    cost, per_1000 = priced(s, w.job_hours, w.samples_per_s, offer, plan.checkpoint_bytes)
    unit = "images" if "diffusion" in w.kind else ("windows" if s.audio_seconds else "samples")
    return CardSetup(gpu_id=offer.gpu_id, offer=cost.offer, provider=cost.provider, pricing=cost.pricing,
                     usd_per_hour=cost.usd_per_hour, device_peak_gib=mem.device_peak_gib,
                     capacity_gib=plan.verdict.capacity_gib or 0.0, headroom_gib=plan.verdict.headroom_gib or 0.0,
                     step_s=w.step_s, call_s=w.image_s, samples_per_s=w.samples_per_s,
                     unit=unit, techniques=change[0], fields=change[1], hours=cost.hours if w.job_hours else None,
                     usd_total=cost.usd_total if w.job_hours else None,
                     usd_per_1000=per_1000, bound=w.bound, price_origin=cost.price_origin,
                     observed_at=cost.observed_at, price_confidence=cost.price_confidence)


def card_setups(s: Scenario, spec: ModuleSpec, catalog: list[Offer], *, every_offer: bool,
                providers: tuple[str, ...] = (), cards_asked: tuple[str, ...] = (),
                variants: list[tuple[list[str], dict]] | None = None, c: Constraints | None = None
                ) -> tuple[list[CardSetup], int, int, list[str]]:
    """The setups of ``s`` on the cards of the offers in force (the scenario's card, or ``cards_asked``, when
    named): each card's plan built once, priced on each offer (``every_offer``) or its cheapest; the count of
    cards planned and of those the job fits; and a note for each card the job fits that has no speed to rank it
    by (session 22's walk: an SDXL LoRA fitted a rented A10G, whose catalog entry had no fp32 rate for the VAE, and
    the card left the table without a word, "1 of 2 cards planned fit"). ``variants``: where the job as given
    does not fit a card with ``c.min_headroom`` free, the technique combinations tried instead (recommend's, as a
    decoder LLM's search tries them), the best by ``c.objective`` taken."""
    in_force = [o for o in cheapest_in_force(catalog, price_filter(s))
                if (s.pricing == "any" or (o.interruptible if s.pricing == "spot" else o.pricing == "on_demand"))
                and (not providers or o.provider in providers)]
    wanted = (resolve_gpu(s.gpu)[0].id,) if s.gpu else cards_asked  # the scenario's card by any of its names
    by_card: dict[str, list[Offer]] = {}
    for o in in_force:
        if not wanted or o.gpu_id in wanted:
            by_card.setdefault(o.gpu_id, []).append(o)
    rows, fitting, untimed = [], 0, []
    for gpu_id, offers in by_card.items():
        offers.sort(key=lambda o: o.usd_per_gpu_hour)
        found = _card_plan(s, spec, gpu_id, (offers[0], catalog), variants or [([], {})], c or Constraints())
        if found is None:
            continue
        fitting += 1
        plan, r, change = found
        if plan.work is None:
            why = next((w.removeprefix("no speed or cost: ") for w in plan.warnings if w.startswith("no speed")),
                       "no speed model for it")
            untimed.append(f"{short_id(gpu_id)} fits ({plan.memory.device_peak_gib:.1f} of "
                           f"{plan.verdict.capacity_gib:.1f} GiB) but is not ranked: {why}")
            continue
        rows += [_setup(plan, r.scenario, o, change) for o in (offers if every_offer else offers[:1])]
    return rows, len(by_card), fitting, untimed


def _card_plan(s: Scenario, spec: ModuleSpec, gpu_id: str, priced_on: tuple[Offer, list[Offer]],
               variants: list[tuple[list[str], dict]], c: Constraints):
    """(plan, resolved scenario, (techniques, fields changed)) of ``s`` on one card: as given where it fits with
    ``c.min_headroom`` free, else the best of the ``variants`` that do by ``c.objective`` on the card's cheapest
    offer (fewer techniques first at an equal key), each resolved once (one the stack's defaults make the same job
    is not built twice); None where none fits. A plan that fits but has no speed is kept as given, for its note.
    ``priced_on``: (the card's cheapest offer, the catalog the plan is built on)."""
    (offer, catalog), seen, fits = priced_on, [], []
    for labels, change in variants:
        try:
            r = resolve_module_scenario((s.on_card(gpu_id) if s.gpu is None else s).model_copy(update=change),
                                        spec, gpus()[gpu_id])
            if r.scenario in seen:
                continue
            seen.append(r.scenario)
            plan = build(r, offers_for(r, catalog), advise=False)
        except GpuplanError:  # the card cannot run it (no matrix rate, its precision), or a stack refuses a change
            continue
        if not plan.verdict.fits or plan.verdict.headroom_gib < c.min_headroom * plan.verdict.capacity_gib:
            continue
        if plan.work is None or (not change and not c.any_method):
            return plan, r, (labels, change)
        fits.append((_key(_setup(plan, r.scenario, offer, (labels, change)), c.objective), len(labels), plan, r,
                     (labels, change)))
    return min(fits, key=lambda x: x[:2])[2:] if fits else None


def _key(x: CardSetup, objective: str) -> tuple[float, ...]:
    money = x.usd_total if x.usd_total is not None else x.usd_per_1000
    time = x.call_s or x.step_s
    if objective == "time":
        return (time, money)
    if objective == "balanced":
        return (math.sqrt(money * time), money)
    return (money, time)


def recommend_module(s: Scenario, spec: ModuleSpec, c: Constraints, defaults: list[str] = ()) -> ModuleChoices:
    """The cards a module job fits with ``c.min_headroom`` of their usable memory free, each on its cheapest offer,
    ranked by ``c.objective``, within the budget and the deadline (which need the job's hours: ``train_steps``);
    the constraints that do not apply to a one-card module plan said in a note each."""
    from ..market.store import load_offers

    variants = list(technique_variants(s, replace(c, any_stack=False))) if s.task == "train" \
        else None  # an inference's variants are a decoder LLM's engines and formats; the stacks are LLM stacks
    rows, evaluated, fitting, untimed = card_setups(s, spec, load_offers(c.catalogs), every_offer=False,
                                                    providers=c.providers, cards_asked=c.gpus, variants=variants, c=c)
    notes = list(untimed)
    if any(x.techniques for x in rows) and c.any_method and s.task == "train":
        notes.append("with --any-method, recommend tried on every card what a decoder LLM's search tries (LoRA and "
                     "QLoRA beside the method asked, each with gradient checkpointing, micro-batch 1 with "
                     f"accumulation, paged 8-bit AdamW) and kept the best by {c.objective}: a row's setup names "
                     "what it took")
    elif any(x.techniques for x in rows):
        notes.append("where the job as given does not fit a card, recommend tried what a decoder LLM's search tries "
                     "(gradient checkpointing, micro-batch 1 with accumulation, paged 8-bit AdamW): a row's setup "
                     "names what it took")
    if (c.budget_usd is not None or c.deadline_hours is not None) and not (s.task == "train" and s.train_steps):
        notes.append("a budget or a deadline holds a whole job: set --train-steps (training) to apply them")
    else:
        rows = [x for x in rows if (c.budget_usd is None or (x.usd_total or 0) <= c.budget_usd)
                and (c.deadline_hours is None or (x.hours or 0) <= c.deadline_hours)]
    notes += [f"{name} does not apply here: {why}" for name, why, asked in (
        ("--max-gpus", "these plans run on one card", c.max_gpus != 8),
        ("--have", "plan your own card with `gpuplan estimate --gpu NAME`", bool(c.have)),
        ("--any-method", "an inference has no method to change", c.any_method and s.task != "train"),
        ("--any-quant, --any-stack", "set --quant or --stack and compare the answers", c.any_quant or c.any_stack),
        ("--per-gpu", "every setup is already one card type", c.per_gpu)) if asked]
    rows.sort(key=lambda x: _key(x, c.objective))
    line, said, unread = describe_searched(s, spec)
    return ModuleChoices(resolved=f"{line}; one card per setup, {c.objective} first",
                         task=s.task, objective=c.objective, setups=rows[:c.top], evaluated=evaluated,
                         fitting=fitting, notes=notes, defaults=[*defaults, *said], warnings=list(unread))


def cost_module(s: Scenario, spec: ModuleSpec, catalog: list[Offer], top: int | None = None) -> ModuleChoices:
    """Every offer of every card the module job fits, cheapest first (the job's total, else per thousand)."""
    rows, evaluated, fitting, untimed = card_setups(s, spec, catalog, every_offer=True)
    rows.sort(key=lambda x: _key(x, "cost"))
    line, said, unread = describe_searched(s, spec)
    return ModuleChoices(resolved=f"{line}; on each offer", task=s.task, setups=rows[:top] if top else rows,
                         evaluated=evaluated, fitting=fitting, notes=untimed, defaults=list(said),
                         warnings=list(unread))


def describe_searched(s: Scenario, spec: ModuleSpec) -> tuple[str, tuple[str, ...], tuple[str, ...]]:
    """The scenario as searched, in one line: the plan's own words on the first card (the card left out); the
    defaults its job says, as ``estimate`` says them (what a sample, a call or a window of the rows is: s18 walk,
    where ``cost --module`` priced "samples" of 32 sequences without a word); and the fields given that it does not
    read, as ``estimate`` warns of them."""
    r = resolve_module_scenario(s, spec)
    line = describe(r.scenario, r.job)
    return (line.rsplit(";", 1)[0] if not s.gpu else line), r.defaults, r.checked
