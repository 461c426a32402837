"""``estimate(scenario) -> Plan``: validate, estimate memory per GPU, say what fits and what would, time and price it.

The plan is the one output of design.md, computed once per scenario and read by every interface (the command line,
the web page, ``recommend --launch``, ``launch``): the scenario as resolved (the card- and count-dependent defaults of
:mod:`gpuplan.scenario.resolve` filled in, and said in one line), model facts, the memory breakdown with three peak
levels, and, when it does not fit, the changes that would (single ones, and the smallest combination when none is
enough). A job that does not fit is not priced.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from pydantic import ConfigDict

from ..errors import GpuplanError, UnknownNameError
from ..hardware import GpuSpec, resolve_gpu
from ..market.cost import Cost
from ..memory import check, memory_report
from ..model.catalog import load_model
from ..model.module import NotADecoder
from ..model.report import inexact_warning
from ..model.spec import ModelSpec
from ..result import Answer, GpuFacts, MemoryReport, ModelFacts, Suggestion
from ..scenario import INFER_ONLY, TRAIN_ONLY, Scenario, scenario_from
from ..scenario.resolve import describe, resolve
from ..scenario.stacks import defaults_in_force
from ..speed.breakdown import Speed
from .modules import MODULE_FIELDS, ModuleWork, module_plan


def _model_facts(m: ModelSpec, trainable: int) -> ModelFacts:
    kinds: dict[str, int] = {}
    for layer, count in m.layer_kinds():
        kinds[layer.kind] = kinds.get(layer.kind, 0) + count
    return ModelFacts(name=m.name, family=m.family, params_total=m.params_total, params_active=m.params_active,
                      params_trainable=trainable, num_layers=m.num_layers, hidden_size=m.hidden_size,
                      num_kv_heads=m.num_kv_heads, head_dim=m.head_dim, vocab_size=m.vocab_size, layer_kinds=kinds,
                      exact=m.exact, exact_reason=m.inexact_reason, counted_by=m.counted_by)


class Plan(Answer):
    """The one answer for one scenario: the scenario as resolved (every default filled in, the card-dependent ones
    said in ``defaults`` with why), the model's facts, memory per GPU at three levels and the verdict on the card,
    the changes that would make it fit, the speed (on the interconnect of the offer priced) and the cost on the
    cheapest offer per million tokens. Immutable: every interface renders it, none recomputes a number of it."""

    model_config = ConfigDict(frozen=True)

    scenario: dict[str, Any]
    resolved: str = ""  # the scenario as resolved, in one line (what every answer prints first)
    defaults: tuple[str, ...] = ()  # the defaults taken for this card and model, in words (GPU variant, precision...)
    model: ModelFacts
    gpu: GpuFacts | None
    memory: MemoryReport
    suggestions: tuple[Suggestion, ...] = ()
    speed: Speed | None = None  # None without a GPU (or one with no tensor rate)
    cost: Cost | None = None  # None when it does not fit, or no offer of the card is in force
    dataset: dict[str, Any] | None = None  # the training data: samples, tokens, lengths, batching (gpuplan.dataset)
    recipe: dict[str, Any] | None = None  # global batch, lr, schedule, layout, checkpoints, each with its source
    assumptions: tuple[str, ...] = ()
    warnings: tuple[str, ...] = ()


class ModulePlan(Plan):
    """The plan of a model that is not a decoder LLM (a diffusion pipeline, an encoder-decoder, an encoder): a
    :class:`Plan` with no token speed, and its work: it/s, seconds per image, the parts of a step, and which
    numbers were simulated on fake tensors and which modelled (:mod:`gpuplan.plan.modules`)."""

    work: ModuleWork | None = None


def estimate(scenario: Scenario | dict[str, Any], *, advise: bool = True) -> Plan:
    """The plan of a scenario. ``advise`` adds the largest batch and context that fit and, when the job does not
    fit, the changes that would (they re-run the memory estimate)."""
    s = scenario_from(scenario)
    try:
        m = load_model(s.model)
    except NotADecoder as other:  # a diffusion pipeline, an encoder-decoder, an encoder: plan/modules.py
        return ModulePlan(**module_plan(s, other.spec, advise=advise))
    stray = [name for name in MODULE_FIELDS if name in s.model_fields_set]
    if stray:
        raise GpuplanError(f"{', '.join(stray)} apply to diffusion pipelines and encoder-decoders, and {m.name} is a "
                           "decoder LLM: drop them")
    gpu, gpu_note = resolve_gpu(s.gpu) if s.gpu else (None, None)
    if gpu is not None and s.gpu != gpu.id:
        s = s.model_copy(update={"gpu": gpu.id})
    s, defaults = resolve(s, m, gpu)
    warnings = check(s, m, gpu)
    inexact = inexact_warning(m)
    if inexact:
        warnings.insert(0, inexact)
    e, report = memory_report(s, m, gpu)
    trainable = int(e.extra.get("params_trainable", 0))
    stack_defaults = defaults_in_force(s)
    assumptions = ([stack_defaults] if stack_defaults else []) + e.assumptions
    warnings += e.warnings
    suggestions: tuple[Suggestion, ...] = ()
    if gpu and advise:
        from .advice import largest_fitting
        from .advice import suggestions as fixes

        report.max_batch_size, report.max_seq_len = largest_fitting(s, m, gpu)
        if not report.fits:
            suggestions = fixes(s, m, gpu, report)
    speed = cost = None
    if gpu and gpu.peak_tflops("fp16"):  # speed always (what it would run at); cost only for a job that fits
        speed, cost, more_assumptions, more_warnings = _speed_and_cost(s, m, gpu, trainable,
                                                                       price_it=report.fits is not False)
        assumptions += more_assumptions
        warnings += more_warnings
    elif gpu:
        warnings.append(f"no speed or cost: {gpu.name} has no dense 16-bit matrix rate in the GPU catalog")
    dataset = recipe = None
    if s.task == "train" and (s.dataset or s.samples or s.model_size or s.epochs):  # data and recipe
        from .dataset_report import dataset_section, recipe_section

        dataset = dataset_section(s, cost)
        recipe = recipe_section(s, m, gpu, cost, trainable)
    return Plan(scenario=_normalized(s), resolved=describe(s, m), model=_model_facts(m, trainable),
                gpu=_gpu_facts(gpu), memory=report, defaults=[*([gpu_note] if gpu_note else []), *m.notes, *defaults],
                suggestions=suggestions, speed=speed, cost=cost, dataset=dataset, recipe=recipe,
                assumptions=assumptions, warnings=warnings)


def _speed_and_cost(s: Scenario, m: ModelSpec, gpu: GpuSpec, trainable: int, price_it: bool = True
                    ) -> tuple[Speed, Cost | None, list[str], list[str]]:
    """Cost on the matching offer with the lowest $ per million tokens (the order ``recommend`` ranks by), and
    speed on that offer's interconnect; without an offer, speed with the GPU's own links. ``price_it`` False (the
    job does not fit): speed only. Returns (speed, cost, assumptions, warnings)."""
    from ..market.choice import matching
    from ..market.store import load_offers
    from ..speed import speed_of
    from .pricing import price

    offers = load_offers()
    if s.provider and s.provider not in {o.provider for o in offers}:
        known = sorted({o.provider for o in offers})
        raise UnknownNameError("provider", s.provider, known, f"(providers in the price catalog: {', '.join(known)})")
    candidates = matching(offers, s, gpu.id)
    costs = sorted(((c, o) for o in candidates if (c := price(s, m, o, trainable, offers)).finishes),
                   key=lambda pair: pair[0].usd_per_million_tokens)
    speed = speed_of(s, m, gpu, costs[0][1].network if costs else None)  # the interconnect of the offer priced
    assumptions, warnings = list(speed.assumptions), []
    speed = replace(speed, assumptions=[])  # said once, in the plan's assumptions
    if not price_it:
        return speed, None, assumptions, warnings
    if not costs:
        known = [o for o in offers if o.gpu_id == gpu.id]
        why = "" if known else " (no offer of it at all)"
        warnings.append(f"no price for {gpu.name}: no {s.pricing.replace('_', '-')} offer"
                        + (f" at {s.provider}" if s.provider else "") + f" in force{why}; "
                        "older or low-confidence rows need --max-price-age-days / --include-low-confidence")
        return speed, None, assumptions, warnings
    best, offer = costs[0]
    if best.stale:
        warnings.append(f"the price of {best.offer} is {best.price_age_days} days old")
    if best.price_confidence == "low":
        warnings.append(f"the price of {best.offer} is marked low confidence in {offer.origin}")
    if best.spot_multiplier and best.spot_multiplier > 1:
        warnings.append(f"spot at {best.provider} costs {best.spot_multiplier:.2f}x the cheapest on-demand "
                        f"{gpu.name} ({best.best_on_demand_offer} at ${best.best_on_demand_usd_per_gpu_hour:.2f}"
                        "/GPU-h) once interruptions are counted: --pricing any picks the cheaper")
    return speed, best, assumptions, warnings


def _normalized(s: Scenario) -> dict[str, Any]:
    data = s.model_dump()
    data["strategy"] = s.sharding if s.sharding.startswith("fsdp") else s.resolved_strategy
    for key in TRAIN_ONLY if s.task == "infer" else INFER_ONLY:
        data.pop(key, None)
    return data


def _gpu_facts(gpu: GpuSpec | None) -> GpuFacts | None:
    if gpu is None:
        return None
    return GpuFacts(id=gpu.id, name=gpu.name, memory_gib=gpu.memory_gib, usable_gib=gpu.usable_gib,
                    architecture=gpu.architecture)
