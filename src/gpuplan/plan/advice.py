"""The builder's advice stage: the largest batch and context that fit the plan's card (:func:`largest_fitting`, on
the edge search of :mod:`.edge`) and, when the plan does not fit, the changes that would (:mod:`.fixes`, loaded for
such a plan only).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..hardware import GpuSpec
from ..model.spec import ModelSpec
from ..scenario import Scenario
from ..stacks import stack_for
from .edge import BATCH_LIMIT, batch_fields, fits_with, largest
from .plan import Plan
from .resolve import Resolved


def advice(r: Resolved, plan: Plan, asked: Scenario | None = None,
           plan_of: Callable[[Scenario], Plan] | None = None) -> dict[str, Any]:
    """What the builder's advice stage adds to ``plan``: the largest batch and context that fit on its card (in
    its memory report) and, when it does not fit, the changes that would (its suggestions). Every probe is a
    memory-only plan of the changed scenario; the speed a change's line states is that of ``plan_of``'s plan (the
    builder's) of ``asked``, the scenario before the builder's layout, with the change: the plan ``estimate`` makes
    with it applied (:class:`gpuplan.plan.fixes.Timing`)."""
    s, m, gpu = r.scenario, r.model, r.gpu
    batch, length = largest_fitting(s, m, gpu, plan)
    memory = plan.memory.model_copy(update={**batch_fields(batch), "max_seq_len": length})
    fixes: tuple = ()
    if not plan.verdict.fits:
        from .fixes import Timing, suggestions  # the changes load for a plan that does not fit only

        timing = Timing(before=plan, asked=asked or s, plan_of=plan_of) \
            if plan_of is not None and plan.speed is not None else None
        fixes = tuple(suggestions(s, m, gpu, memory, timing))  # (with the largest micro-batch that fits)
    return {"memory": memory, "suggestions": fixes}


def largest_fitting(s: Scenario, m: ModelSpec, gpu: GpuSpec, plan: Plan | None = None
                    ) -> tuple[int | None, int | None]:
    """(largest batch, longest context) that fit on ``gpu``, all else equal. Training varies
    ``micro_batch_size`` and ``seq_len``; inference ``batch_size`` and ``prompt_tokens``. The batch searched stops
    at :data:`.edge.BATCH_LIMIT` (:func:`.edge.batch_fields` says when it got there). The context searched
    stops at the model's own (with the rope scaling its config declares; 131,072 when the config gives none):
    longer ones fit in memory but are past what it was trained for, which ``check`` warns about. ``plan``: the
    memory plan of ``s`` itself, read for a probe that changes nothing (the micro-batch a layout chose)."""
    def fits(**change) -> tuple[bool, float]:
        if plan is not None and all(getattr(s, k) == v for k, v in change.items()):
            return bool(plan.verdict.fits), plan.memory.device_peak_gib
        return fits_with(s, m, change)

    limit, usable = m.scaled_context or 131_072, gpu.usable_gib
    if s.task == "train":
        q = stack_for(s).seq_len_step(s)  # Megatron: 2·cp chunks, each rank's share over tp
        longest = largest(lambda n: fits(seq_len=n * q), limit // q, usable)
        return (largest(lambda n: fits(micro_batch_size=n), BATCH_LIMIT, usable), longest * q if longest else None)
    prefix = s.shared_prefix_tokens  # a prompt is at least the shared prefix and one token of its own
    longest = largest(lambda n: fits(prompt_tokens=prefix + n), max(limit - s.output_tokens - prefix, 1), usable)
    return (largest(lambda n: fits(batch_size=n), BATCH_LIMIT, usable), prefix + longest if longest else None)
