"""``estimate(scenario) -> Result``: validate, estimate memory per GPU, say what fits and what would.

The result is the one output of design.md: the scenario as resolved (the card- and count-dependent defaults of
:mod:`gpuplan.resolve` filled in, and said in one line), model facts, the memory breakdown with three peak levels,
and, when it does not fit, the changes that would (single ones, and the smallest combination when none is enough).
A job that does not fit is not priced.
"""

from __future__ import annotations

from typing import Any

from .errors import UnknownNameError
from .hardware import GpuSpec, resolve_gpu
from .memory import check, memory_report
from .model.catalog import load_model
from .model.report import inexact_warning
from .model.spec import ModelSpec
from .resolve import describe, resolve
from .result import ModelFacts, Result
from .scenario import INFER_ONLY, TRAIN_ONLY, Scenario, scenario_from


def _model_facts(m: ModelSpec, trainable: int) -> ModelFacts:
    kinds: dict[str, int] = {}
    for layer, count in m.layer_kinds():
        kinds[layer.kind] = kinds.get(layer.kind, 0) + count
    return ModelFacts(name=m.name, family=m.family, params_total=m.params_total, params_active=m.params_active,
                      params_trainable=trainable, num_layers=m.num_layers, hidden_size=m.hidden_size,
                      num_kv_heads=m.num_kv_heads, head_dim=m.head_dim, vocab_size=m.vocab_size, layer_kinds=kinds,
                      exact=m.exact, exact_reason=m.inexact_reason, counted_by=m.counted_by)


def estimate(scenario: Scenario | dict[str, Any], *, advise: bool = True) -> Result:
    """Estimate memory for a scenario. ``advise`` adds solvers and fixes (they re-run the estimate)."""
    s = scenario_from(scenario)
    m = load_model(s.model)
    gpu, gpu_note = resolve_gpu(s.gpu) if s.gpu else (None, None)
    if gpu is not None and s.gpu != gpu.id:
        s = s.model_copy(update={"gpu": gpu.id})
    s, defaults = resolve(s, m, gpu)
    warnings = check(s, m, gpu)
    inexact = inexact_warning(m)
    if inexact:
        warnings.insert(0, inexact)
    e, report = memory_report(s, m, gpu)
    from .stacks import defaults_in_force

    stack_defaults = defaults_in_force(s)
    result = Result(scenario=_normalized(s), resolved=describe(s, m), model=_model_facts(
        m, int(e.extra.get("params_trainable", 0))), gpu=_gpu_facts(gpu), memory=report,
        defaults=[*([gpu_note] if gpu_note else []), *m.notes, *defaults],
        assumptions=([stack_defaults] if stack_defaults else []) + e.assumptions, warnings=warnings + e.warnings)
    if gpu and advise:
        from .plan.advice import largest_fitting, suggestions

        report.max_batch_size, report.max_seq_len = largest_fitting(s, m, gpu)
        if not report.fits:
            result.suggestions = suggestions(s, m, gpu, report)
    if gpu and gpu.peak_tflops("fp16"):  # speed always (what it would run at); cost only for a job that fits
        _speed_and_cost(result, s, m, gpu, int(e.extra.get("params_trainable", 0)), price_it=report.fits is not False)
    elif gpu:
        result.warnings.append(f"no speed or cost: {gpu.name} has no dense 16-bit matrix rate in the GPU catalog")
    return result


def _speed_and_cost(result: Result, s: Scenario, m: ModelSpec, gpu: GpuSpec, trainable: int,
                    price_it: bool = True) -> None:
    """Cost on the matching offer with the lowest $ per million tokens (the order ``recommend`` ranks by), and
    speed on that offer's interconnect; without an offer, speed with the GPU's own links. ``price_it`` False (the
    job does not fit): speed only."""
    from dataclasses import asdict

    from .market.store import load_offers
    from .plan.pricing import matching, price
    from .speed import speed_of

    offers = load_offers()
    if s.provider and s.provider not in {o.provider for o in offers}:
        known = sorted({o.provider for o in offers})
        raise UnknownNameError("provider", s.provider, known, f"(providers in the price catalog: {', '.join(known)})")
    candidates = matching(offers, s, gpu.id)
    costs = sorted(((c, o) for o in candidates if (c := price(s, m, o, trainable, offers)).finishes),
                   key=lambda pair: pair[0].usd_per_million_tokens)
    speed = speed_of(s, m, gpu, costs[0][1].network if costs else None)  # the interconnect of the offer priced
    result.speed = {k: v for k, v in asdict(speed).items() if k != "assumptions"}
    result.assumptions += speed.assumptions
    if not price_it:
        return
    if not costs:
        known = [o for o in offers if o.gpu_id == gpu.id]
        why = "" if known else " (no offer of it at all)"
        result.warnings.append(f"no price for {gpu.name}: no {s.pricing.replace('_', '-')} offer"
                               + (f" at {s.provider}" if s.provider else "") + f" in force{why}; "
                               "older or low-confidence rows need --max-price-age-days / --include-low-confidence")
        return
    best, offer = costs[0]
    result.cost = {**asdict(best), "label": best.label}
    if best.stale:
        result.warnings.append(f"the price of {best.offer} is {best.price_age_days} days old")
    if best.price_confidence == "low":
        result.warnings.append(f"the price of {best.offer} is marked low confidence in {offer.origin}")
    if best.spot_multiplier and best.spot_multiplier > 1:
        result.warnings.append(f"spot at {best.provider} costs {best.spot_multiplier:.2f}x the cheapest on-demand "
                               f"{gpu.name} ({best.best_on_demand_offer} at ${best.best_on_demand_usd_per_gpu_hour:.2f}"
                               "/GPU-h) once interruptions are counted: --pricing any picks the cheaper")


def _normalized(s: Scenario) -> dict[str, Any]:
    data = s.model_dump()
    data["strategy"] = s.sharding_engine if s.sharding_engine.startswith("fsdp") else s.resolved_strategy
    for key in TRAIN_ONLY if s.task == "infer" else INFER_ONLY:
        data.pop(key, None)
    return data


def _gpu_facts(gpu: GpuSpec | None) -> dict[str, Any] | None:
    if gpu is None:
        return None
    return {"id": gpu.id, "name": gpu.name, "memory_gib": gpu.memory_gib, "usable_gib": gpu.usable_gib,
            "architecture": gpu.architecture}
