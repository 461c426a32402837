"""Every number of an estimate as its formula, with the user's values, the constants' sources and the accuracy.

Each :class:`Formula` states the rule in symbols, the same rule with this scenario's values, and ``computed``:
what that arithmetic gives. Where ``computed`` equals the estimate's number, the formula is the whole story;
where a part is not one closed formula (activations, the live gradients of a backward pass), ``computed`` is
None or differs and ``note`` says what the estimate adds. The rules are those of :mod:`gpuplan.memory`,
:mod:`gpuplan.speed` and :mod:`gpuplan.market.cost` (each cited there); a test holds ``computed`` to the
estimate on a matrix of scenarios, so a changed estimator cannot leave a stale formula unnoticed.
"""

from __future__ import annotations

from ..plan.plan import Plan
from ..scenario.describe import defaults_said
from ..stacks.unsloth import FREE_SIZED_LOSS
from . import memory as mf
from . import speed as sf
from .accuracy import memory_accuracy
from .formula import Context, Explanation, Formula


def explain(result: Plan) -> Explanation:
    """Formulas for every number the plan ``result`` holds, keyed ``memory.weights_gib``, ``speed.tokens_per_s``...,
    on the scenario, model and card it was built from (as resolved: the serving split, the card's precision). A
    diffusion pipeline's, an encoder-decoder's or an encoder's plan: its speed and price (:mod:`.work`)."""
    if "work" in type(result).model_fields:  # a ModulePlan (its module is loaded only for such plans)
        from .module_speed import explain_module

        return explain_module(result)  # type: ignore[arg-type]
    s, m, gpu = result.setup.scenario, result.setup.model, result.setup.gpu
    x = Context(s, m, gpu, result)
    method = s.method if s.task == "train" else None
    part_acc = memory_accuracy(s.task, method, part=True)
    total_acc = memory_accuracy(s.task, method)
    mem = result.memory
    numbers: dict[str, Formula] = {"memory.weights_gib": mf.weights(x)}
    if s.task == "train":
        numbers["memory.gradients_gib"] = mf.gradients(x)
        numbers["memory.optimizer_gib"] = mf.optimizer(x)
    else:
        numbers["memory.kv_cache_gib"] = mf.kv_cache(x)
    numbers["memory.activations_gib"] = mf.activations(x)
    for name, value in mem.other.items():
        numbers[f"memory.other.{name}"] = mf.other(x, name, value)
    for f in numbers.values():
        f.accuracy = part_acc
    numbers["memory.allocated_peak_gib"] = mf.allocated(x)
    numbers["memory.reserved_peak_gib"] = mf.reserved(x)
    numbers["memory.device_peak_gib"] = mf.device(x)
    for key in ("memory.allocated_peak_gib", "memory.reserved_peak_gib", "memory.device_peak_gib"):
        numbers[key].accuracy = total_acc
    if gpu is not None and mem.capacity_gib is not None:
        numbers["memory.capacity_gib"] = mf.capacity(x)
        numbers["memory.headroom_gib"] = mf.headroom(x)
        numbers["memory.headroom_gib"].accuracy = total_acc
    if result.speed and gpu is not None:
        numbers.update(sf.training_speed(x) if s.task == "train" else sf.inference_speed(x))
    if result.cost:
        numbers.update(sf.cost(x))
    shares = result.speed.step_shares() if result.speed else []
    if result.headroom_note():
        numbers["memory.headroom_gib"].note = next(a for a in result.assumptions if a.startswith(FREE_SIZED_LOSS))
    return Explanation(numbers=numbers, defaults=defaults_said(s), step_shares=shares)
