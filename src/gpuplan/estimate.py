"""``estimate(scenario) -> Result``: validate, estimate memory per GPU, say what fits and what would.

The result is the one output of design.md: the scenario as normalized, model facts, the memory breakdown
with three peak levels, and, when it does not fit, each single change that would (with its new peak).
"""

from __future__ import annotations

from typing import Any

from .hardware import GpuSpec, load_gpu
from .memory import check, memory_report
from .model.catalog import load_model
from .model.report import inexact_warning
from .model.spec import ModelSpec
from .result import ModelFacts, Result
from .scenario import Scenario, scenario_from


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
    gpu = load_gpu(s.gpu) if s.gpu else None
    warnings = check(s, m, gpu)
    inexact = inexact_warning(m)
    if inexact:
        warnings.insert(0, inexact)
    e, report = memory_report(s, m, gpu)
    result = Result(scenario=_normalized(s), model=_model_facts(m, int(e.extra.get("params_trainable", 0))),
                    gpu=_gpu_facts(gpu), memory=report, assumptions=e.assumptions, warnings=warnings)
    if gpu and advise:
        from .plan.advice import largest_fitting, suggestions

        report.max_batch_size, report.max_seq_len = largest_fitting(s, m, gpu)
        if not report.fits:
            result.suggestions = suggestions(s, m, gpu, report)
    if gpu and gpu.peak_tflops("fp16"):
        _speed_and_cost(result, s, m, gpu, int(e.extra.get("params_trainable", 0)))
    return result


def _speed_and_cost(result: Result, s: Scenario, m: ModelSpec, gpu: GpuSpec, trainable: int) -> None:
    """Cost on the matching offer with the lowest $ per million tokens (the order ``recommend`` ranks by), and
    speed on that offer's interconnect; without an offer, speed with the GPU's own links."""
    from dataclasses import asdict

    from .market.offers import load_offers
    from .plan.pricing import matching, price
    from .speed import speed_of

    offers = load_offers()
    candidates = matching(offers, s, gpu.id)
    costs = sorted(((price(s, m, o, trainable, offers), o) for o in candidates),
                   key=lambda pair: pair[0].usd_per_million_tokens)
    speed = speed_of(s, m, gpu, costs[0][1].network if costs else None)  # the interconnect of the offer priced
    result.speed = {k: v for k, v in asdict(speed).items() if k != "assumptions"}
    result.assumptions += speed.assumptions
    if not costs:
        if s.provider or s.pricing != "on_demand":
            result.warnings.append(f"no {s.pricing.replace('_', '-')} offer for {gpu.id}"
                                   + (f" at {s.provider}" if s.provider else "") + " in the price catalog")
        return
    best = costs[0][0]
    result.cost = asdict(best)
    if best.stale:
        result.warnings.append(f"the price of {best.offer} is {best.price_age_days} days old")


def _normalized(s: Scenario) -> dict[str, Any]:
    data = s.model_dump()
    data["strategy"] = s.resolved_strategy
    if s.task == "infer":
        for key in ("method", "optimizer", "optimizer_impl", "lora_rank", "lora_targets", "lora_dropout",
                    "micro_batch_size", "seq_len", "grad_accum_steps", "grad_checkpointing", "train_tokens"):
            data.pop(key, None)
    else:
        for key in ("batch_size", "prompt_tokens", "output_tokens", "kv_cache_dtype", "engine",
                    "gpu_memory_utilization", "max_num_batched_tokens"):
            data.pop(key, None)
    return data


def _gpu_facts(gpu: GpuSpec | None) -> dict[str, Any] | None:
    if gpu is None:
        return None
    return {"id": gpu.id, "name": gpu.name, "memory_gib": gpu.memory_gib, "usable_gib": gpu.usable_gib,
            "architecture": gpu.architecture}
