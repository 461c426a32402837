"""The training recipe's micro-batch x accumulation (:mod:`.recipe` says why the global batch is what it is): the
fastest per sequence among the micro-batches that fit the card, each tried as a memory plan of its own (one
validation and one memory report each), timed on the card's own links.

The builder takes it (:func:`with_layout`) for every training plan on a card whose scenario set neither
``micro_batch_size`` nor ``grad_accum_steps``, so ``estimate``, ``cost``, ``capacity``, the page and ``gpuplan
launch`` plan the run that is launched; ``recommend`` ranks every row whose micro-batch is free at the same
layout (:func:`layout`, each micro-batch estimated once and reported on every card), and a row whose micro-batch a
variant set at the recipe's accumulation (:func:`accumulation`). This module is the one place a layout is decided:
the recipe reads the plan's."""

from __future__ import annotations

from ..errors import GpuplanError
from ..memory import memory_report
from ..speed import speed_of
from .batch import data_batch, kind_of, published
from .plan import Plan, memory_plan
from .resolve import Resolved, changed, resolve

OVERSHOOT = 1.1  # a layout may exceed the recipe's global batch by 10 % at most (a micro-batch that does not divide it)
CLEARLY_FASTER = 0.98  # a larger micro-batch is taken only at under 98 % of the time per sequence (more memory, ~same)


def ladder(s, global_batch: int) -> list[tuple[int, int]]:
    """The (micro-batch, accumulation) pairs the recipe's layout tries on a card, smallest first: micro-batches 1,
    2, 4, ... up to the global batch over the data-parallel GPUs, each with the accumulation that reaches
    ``global_batch`` (none with the optimizer in backward), a micro-batch past 1 left out where it would exceed the
    global batch by more than :data:`OVERSHOOT` (the steps would count other batches than the recipe's)."""
    dp, stepwise, out, mb = s.dp, bool(s.optimizer_in_backward), [], 1
    while mb <= max(1, global_batch // dp):
        accum = 1 if stepwise else max(1, -(-global_batch // (mb * dp)))
        if mb == 1 or stepwise or mb * accum * dp <= OVERSHOOT * global_batch:
            out.append((mb, accum))
        mb *= 2
    return out


def planned(s, m, gpu, mb: int, accum: int, tried: dict | None = None) -> Plan | None:
    """The memory plan of ``s`` at ``mb`` x ``accum`` on ``gpu`` when it runs and fits there, else None. ``tried``:
    given each layout's resolved scenario and memory (:func:`gpuplan.memory.memory_report`), fitting or not, for
    :func:`with_layout` to plan the one it takes without estimating it again."""
    try:
        r = resolve(s.model_copy(update={"micro_batch_size": mb, "grad_accum_steps": accum}), m, gpu)
        memory = memory_report(r.scenario, r.model, r.gpu)
        plan = memory_plan(r, memory)
    except GpuplanError:
        return None
    if tried is not None:
        tried[mb, accum] = (r, memory)
    return plan if plan.verdict.fits else None


def layout(s, m, gpu, global_batch: int, plans: dict | None = None, plan_at=planned) -> tuple[int, int, str]:
    """(micro-batch, accumulation, why) of ``s`` on ``gpu``: of the :func:`ladder`'s layouts, the one with the least
    time per sequence (each a memory plan of its own, timed on the card's own links when it fits; a larger
    micro-batch must be clearly faster; none larger is tried past the first that does not fit or is refused).
    ``plans``: filled with the (memory plan, speed) of each layout that fits, for the caller to keep the one chosen;
    ``plan_at(s, m, gpu, mb, accum)``: the memory plan of a layout that fits, else None (:func:`planned`; a search
    reports one estimate per layout on every card). The one place a training plan's layout is decided: the builder
    takes it (:func:`with_layout`), and so does ``recommend`` for every row it ranks."""
    stepwise = bool(s.optimizer_in_backward)  # steps as gradients arrive: no accumulation
    best, tried = None, []
    for mb, accum in ladder(s, global_batch):
        plan = plan_at(s, m, gpu, mb, accum)
        if plan is None:  # does not fit, or refused, at this micro-batch: none larger runs either
            break
        speed = speed_of(plan.setup.scenario, m, gpu)
        if plans is not None:
            plans[mb, accum] = (plan, speed)
        per_sequence = speed.step_time_s / (mb * accum * s.dp)
        tried.append(f"{mb}: {per_sequence:.3g} s")
        if best is None or per_sequence < best[2] * CLEARLY_FASTER or stepwise:  # a bigger one: clearly faster
            best = (mb, accum, per_sequence)
    if best is None:
        accum = 1 if stepwise else max(1, -(-global_batch // s.dp))
        return 1, accum, f"micro-batch 1: not even one sequence fits {gpu.name}"
    if stepwise:
        return best[0], 1, (f"the largest micro-batch that fits {gpu.name} up to the global batch: "
                            "optimizer_in_backward cannot accumulate")
    return best[0], best[1], (f"the fastest per sequence that fits {gpu.name}, a larger one only where "
                              f"{1 - CLEARLY_FASTER:.0%} faster (seconds per sequence by micro-batch: "
                              f"{', '.join(tried)})")


def recipe_batch(s, m) -> int:
    """The recipe's global batch in sequences (:func:`gpuplan.plan.batch.published`), from the data's examples
    where the scenario names data (:func:`gpuplan.plan.batch.data_batch`), at most one epoch of its sequences."""
    data = None
    if s.dataset or s.samples:  # the scenario names data (gpuplan.dataset is read, and imported, only then)
        from ..dataset import profile

        data = profile(s)
    params = float(m.params_total)
    global_batch = published(s, params)[0]
    if data is not None and data.stats.samples and kind_of(s) != "pretraining":  # examples before packing
        return data_batch(s, params, data.stats.samples, data.batching.rows)[1]
    return min(global_batch, data.batching.rows) if data is not None else global_batch


def accumulation(s, global_batch: int) -> tuple[int, str]:
    """The accumulation that makes ``s``'s own micro-batch reach ``global_batch`` over its data-parallel GPUs (none
    with the optimizer in backward), and why: a ranked setup's micro-batch kept, the same on every card."""
    if s.optimizer_in_backward:
        return 1, f"micro-batch {s.micro_batch_size} as ranked"
    return max(1, -(-global_batch // (s.micro_batch_size * s.dp))), \
        f"micro-batch {s.micro_batch_size} as ranked; accumulation makes up the global batch"


def as_run(s):
    """``s`` with its own micro-batch and accumulation given, so the builder keeps them (:func:`with_layout` lays
    out only a scenario that set neither): the plan of the step a simulation or a probe ran, which runs the
    scenario's micro-batch (s27 walk: ``simulate --model qwen2.5-0.5b --task train --method lora --gpu rtx-4090
    --compare`` set the simulated micro-batch 1 beside the estimate of the recipe's 4: +226 %)."""
    if s.task != "train":
        return s
    return s.model_copy(update={"micro_batch_size": s.micro_batch_size, "grad_accum_steps": s.grad_accum_steps})


def with_layout(r: Resolved, keep_micro_batch: bool = False) -> tuple[Resolved, tuple | None]:
    """``r`` at the recipe's micro-batch x accumulation (:func:`layout`) when its training scenario set neither,
    with why (``layout_why``, said in the plan's recipe); ``keep_micro_batch``: a ranked setup keeps its micro-batch
    (recommend may have set it: "micro-batch 4") and takes the accumulation (:func:`accumulation`). A layout that
    would not fit the card (a full gradient buffer beside ZeRO-3's shards) where the scenario's does leaves the
    scenario's, said. With it, the memory of the layout taken where the ladder estimated it (its
    :func:`gpuplan.memory.memory_report`, for the builder's memory plan), else None: each layout's memory is
    estimated once (session 28 estimated a layout that fits nothing three times: the ladder's, ``again``'s and the
    builder's)."""
    s, m, gpu = r.scenario, r.model, r.gpu
    given = {"grad_accum_steps"} if keep_micro_batch else {"micro_batch_size", "grad_accum_steps"}
    if r.layout_why is not None or s.task != "train" or gpu is None or given & s.model_fields_set:
        return r, None
    global_batch, plans, tried = recipe_batch(s, m), {}, {}
    if keep_micro_batch:
        mb, (accum, why) = s.micro_batch_size, accumulation(s, global_batch)
    else:
        mb, accum, why = layout(s, m, gpu, global_batch, plans,
                                lambda *at: planned(*at, tried=tried))  # every layout's memory kept
    if (mb, accum) == (s.micro_batch_size, s.grad_accum_steps):
        return Resolved(**{**r.__dict__, "layout_why": why}), None
    if (mb, accum) in plans:  # planned (and validated) once already, where the search tried it
        a = plans[mb, accum][0].setup
        return Resolved(scenario=a.scenario, model=a.model, gpu=a.gpu, gpu_note=r.gpu_note, split_note=r.split_note,
                        length_note=r.length_note, checked=a.checked, chosen=r.chosen, layout_why=why), \
            tried[mb, accum][1]
    again = changed(r, {"micro_batch_size": mb, "grad_accum_steps": accum}, None, layout_why=why)
    memory = _estimated(again, tried.get((mb, accum)))
    if memory_plan(again, memory).verdict.fits or not memory_plan(r).verdict.fits:  # neither fits: the recipe's,
        return again, memory  # as it runs
    run = s.micro_batch_size * s.grad_accum_steps * s.dp
    kept = (f"{s.micro_batch_size} x {s.grad_accum_steps}, a global batch of {run:,} sequence{'s' if run != 1 else ''} "
            f"against the recipe's {global_batch:,}")
    why = (" (accumulation holds a whole gradient buffer beside the next micro-step)"
           if mb == s.micro_batch_size and accum > s.grad_accum_steps else "")
    return Resolved(**{**r.__dict__, "layout_why": f"the recipe's {mb} x {accum} would not fit {gpu.name}{why}, so "
                       f"{kept}"}), None


def _estimated(r: Resolved, tried: tuple | None) -> tuple:
    """The memory of ``r`` (:func:`gpuplan.memory.memory_report`): the ladder's (``tried``: its resolved layout and
    memory) where it estimated the same scenario on the same model and card, else estimated here."""
    if tried is not None:
        at, memory = tried
        if (at.scenario, at.scenario.model_fields_set, at.gpu) == (r.scenario, r.scenario.model_fields_set, r.gpu) \
                and at.model is r.model:
            return memory
    return memory_report(r.scenario, r.model, r.gpu)
