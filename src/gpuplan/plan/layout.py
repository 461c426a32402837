"""The training recipe's micro-batch x accumulation (:mod:`.recipe` says why the global batch is what it is): the
fastest per sequence among the micro-batches that fit the card, each tried as a memory plan of its own (one
validation and one memory report each), timed on the card's own links."""

from __future__ import annotations

from ..errors import GpuplanError
from ..speed import speed_of
from .plan import memory_plan
from .resolve import resolve

OVERSHOOT = 1.1  # a layout may exceed the recipe's global batch by 10 % at most (a micro-batch that does not divide it)


def layout(s, m, gpu, global_batch: int) -> tuple[int, int, str]:
    """(micro-batch, accumulation, why): the micro-batch that fits ``gpu`` and reaches ``global_batch`` sequences
    (with accumulation over the data-parallel GPUs, at most :data:`OVERSHOOT` past it: the steps would count other
    batches than the recipe's) at the least time per sequence (each one tried a memory plan,
    timed on the card's own links when it fits); the scenario's own when it
    set either (the layout it runs, which `gpuplan launch` writes: an accumulation the scenario does not run would
    make the steps count other batches than the trainer's), or when there is no GPU to time on."""
    dp = s.dp
    if "micro_batch_size" in s.model_fields_set or "grad_accum_steps" in s.model_fields_set or gpu is None:
        mb, accum = s.micro_batch_size, s.grad_accum_steps
        reach = max(1, -(-global_batch // (mb * dp)))
        short = f"; grad_accum_steps {reach} would reach the recipe's {global_batch:,}" \
            if mb * accum * dp < global_batch and not s.optimizer_in_backward else ""
        return mb, accum, f"as set{short}"
    best = None
    mb = 1
    tried = []
    stepwise = bool(s.optimizer_in_backward)  # steps as gradients arrive: no accumulation
    while mb <= max(1, global_batch // dp):
        accum = 1 if stepwise else max(1, -(-global_batch // (mb * dp)))
        if mb > 1 and not stepwise and mb * accum * dp > OVERSHOOT * global_batch:
            mb *= 2
            continue
        try:
            plan = memory_plan(resolve(s.model_copy(update={"micro_batch_size": mb, "grad_accum_steps": accum}), m,
                                       gpu))
        except GpuplanError:  # refused at this micro-batch: none larger runs either
            break
        if not plan.verdict.fits:
            break
        per_sequence = speed_of(plan.setup.scenario, m, gpu).step_time_s / (mb * accum * dp)
        tried.append(f"{mb}: {per_sequence:.3g} s")
        if best is None or per_sequence < best[2] * 0.98 or stepwise:  # a bigger one must be clearly faster
            best = (mb, accum, per_sequence)
        mb *= 2
    if best is None:
        return 1, 1 if stepwise else max(1, -(-global_batch // dp)), "micro-batch 1 (none larger fits)"
    if stepwise:
        return best[0], 1, (f"the largest micro-batch that fits {gpu.name} up to the global batch: "
                            "optimizer_in_backward cannot accumulate")
    return best[0], best[1], (f"the fastest per sequence that fits {gpu.name} (seconds per sequence by micro-batch: "
                              f"{', '.join(tried)})")
