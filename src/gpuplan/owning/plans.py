"""Each job's Plan on an owned build or on rented GPUs, read for what owning needs: does it run (and with what
change), its hours per run at the central speed and at the pessimistic end of the speed band, and, rented, what a
run costs on the cheapest whole-instance offer (on-demand, or spot with Daly's checkpointing overhead).

Nothing here computes a speed, a memory figure or a price of its own: the Plan is ``gpuplan.estimate``'s; when the
job does not fit as given, ``gpuplan.recommend`` finds the layout and techniques that make it fit on those cards
(as ``recommend --have`` does) and that scenario's Plan is used; the hours are
:func:`gpuplan.market.job.job_time` of the Plan's speed (and of its low end); the rent is the Plan's cost, its hours
stretched to the speed's low end.

A job whose model is not a decoder LLM (a diffusion pipeline, Whisper, an encoder-decoder, an encoder) is planned by
the same builder as a :class:`~gpuplan.plan.modules.ModulePlan`, on one card: a training run's hours are its plan's
(train_steps x step time), a call's its samples (batch_size images, a recording's windows) over the plan's samples
per second; the low end at the plan's low samples per second; the rent is the Plan's offer's hourly price over
those hours."""

from __future__ import annotations

from dataclasses import replace

from pydantic import BaseModel, ConfigDict, Field

from ..errors import GpuplanError
from ..hardware import GpuSpec, short_id
from ..market.job import job_time
from ..memory.host import host_need_gib
from ..model.catalog import load_model
from ..plan.estimate import estimate
from ..plan.modules import ModulePlan, ModuleWork
from ..plan.plan import Plan
from ..plan.recommend import Constraints, recommend
from ..scenario import Scenario
from .power import HOURS_PER_YEAR
from .workloads import Job


class JobPlan(BaseModel):
    """One job on one setup: whether it runs, how long a run takes (central and at the low end of the speed band),
    how many hours a year the work keeps the setup busy, and, rented, what that costs."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    job: str
    setup: str  # "8x rtx-5090 (owned)" or "8x h100-sxm, lambda 8x on-demand"
    cards: int | None = None  # how many of the setup's cards the job runs on (a module plan: one); None: all
    runs: bool
    why_not: str = ""  # when it cannot run: the verdict and the fix for this task
    change: str = ""  # the layout and techniques it needs on these cards, when the scenario as given does not fit
    scenario: dict = Field(default_factory=dict)  # the scenario as it runs
    device_peak_gib: float | None = None
    capacity_gib: float | None = None
    cpu_gib: float = 0.0  # host memory the plan needs on a node (offload, llama.cpp layers on the CPU)
    tokens_per_s: float | None = None
    tokens_per_s_low: float | None = None
    per: str = "run"  # what hours_per_run is per: a training run, a module's call, or a day of serving
    hours_per_run: float | None = None  # training: one run; a module's inference: one call; serving: one day
    hours_per_run_low: float | None = None
    busy_hours_per_year: float = 0.0
    busy_hours_per_year_low: float = 0.0
    offer: str = ""  # rented: the offer priced
    usd_per_hour: float | None = None
    usd_per_year: float | None = None  # rented: central
    usd_per_year_low: float | None = None  # rented: at the low end of the speed band
    plan: Plan | None = Field(default=None, exclude=True)


def _placed(job: Job, gpu: GpuSpec, count: int, pricing: str | None, host_ram_gib: float | None,
            display: str = "none") -> Scenario:
    data = {**job.scenario, "gpu": gpu.id}
    if job.module is not None:  # its plan runs on one card, and reads neither the host's RAM nor a desktop
        data |= {"pricing": pricing} if pricing else {}
        return _scenario(job, data, gpu, count)
    if host_ram_gib is not None:  # an owned build's RAM decides what offload and CPU layers it can hold
        data["host_ram_gib"] = host_ram_gib
    if display != "none":  # the desktop an owned card drives, counted on the card by the Plan
        data["display"] = display
    if gpu.unified_memory and count > 1:  # linked computers: one GPU in each, their own ports between them
        data |= {"num_gpus": 1, "num_nodes": count}
    elif count > 8:  # several machines of eight
        if count % 8:
            raise GpuplanError(f"{count} GPUs across machines come in nodes of 8: ask for a multiple of 8")
        data |= {"num_gpus": 8, "num_nodes": count // 8}
    else:
        data["num_gpus"] = count
    if pricing:
        data["pricing"] = pricing
    return _scenario(job, data, gpu, count)


def _scenario(job: Job, data: dict, gpu: GpuSpec, count: int) -> Scenario:
    try:
        return job.parsed.model_copy(update=data)
    except GpuplanError as err:
        raise GpuplanError(f"workload {job.label!r} on {count}x {short_id(gpu.id)}: {err}") from None


def _fitting(s: Scenario, gpu: GpuSpec, count: int, owned: bool) -> tuple[Plan, Scenario, str, str]:
    """The Plan of ``s``, or of the layout and techniques ``recommend`` finds that make it fit on ``count`` of
    ``gpu``; (plan, its scenario, the change, why it cannot run: the Plan's verdict and its first fix that fits)."""
    plan = estimate(s, advise=False)
    if plan.memory.fits:
        return plan, s, "", ""
    if isinstance(plan, ModulePlan):  # one card: its own changes that keep the job
        return _fix_in_place(s, plan, MODULE_TECHNIQUES, "nothing makes it fit on one card")
    if owned and s.num_nodes > 1:  # linked computers, one GPU a node: the Plan's first fix that keeps them
        return _fix_in_place(s, plan, TECHNIQUES, "nothing that keeps one GPU in each computer makes it fit")
    base = s.model_copy(update={"gpu": None, "num_gpus": 1, "num_nodes": 1, "sharding": None, "tp": 1, "pp": 1})
    c = Constraints(max_gpus=count, gpus=(gpu.id,), have=((gpu.id, count),) if owned else (), top=1,
                    pricing=s.pricing)
    found = recommend(base, load_model(s.model), c, explain=False)
    rows = found.owned if owned else found.setups
    if rows:
        x = rows[0]
        placed = x.scenario.model_copy(update={"gpu": gpu.id} if owned else {"gpu": gpu.id, "pricing": s.pricing})
        found_plan = estimate(placed, advise=False)
        if found_plan.memory.fits:
            return found_plan, placed, "+".join([x.sharding, *x.techniques]), ""
    advised = estimate(s)
    fix = next((f for f in advised.suggestions if f.fits and "num_gpus" not in f.fields), None)
    why = f"does not fit: {plan.memory.device_peak_gib:,.1f} of {plan.memory.capacity_gib or 0:,.1f} GiB per GPU"
    return plan, s, "", why + (f"; {fix.change} ({fix.cost})" if fix else "; nothing makes it fit on these cards")


# what ``recommend`` changes to make a job fit on owned cards (its layouts and techniques: plan/recommend.py
# _variants and _layouts), and so what may be changed on linked computers; a fix beyond them (another method, a
# quantization) changes the job and is named, not applied
TECHNIQUES = frozenset({"sharding", "tp", "pp", "grad_checkpointing", "micro_batch_size", "grad_accum_steps",
                        "optimizer", "offload", "activation_offload"})
# what a module plan's changes (plan/modules.py _changes) may change and keep the job: checkpointing, the optimizer,
# cached latents, SDPA attention, CPU offload; its other changes (NF4 or fp8 weights, a smaller batch, LoRA for a full
# fine-tune, text encoders not trained) change the job and are named, not applied
MODULE_TECHNIQUES = frozenset({"grad_checkpointing", "optimizer", "cache_latents", "attention", "cpu_offload"})


def _fix_in_place(s: Scenario, plan: Plan, techniques: frozenset, nothing: str) -> tuple[Plan, Scenario, str, str]:
    """A job that does not fit and whose layout stays (linked computers, one GPU in each: ``recommend`` places owned
    cards in one node; a module plan: one card): the Plan's first fix of ``techniques`` alone, applied when it
    fits; else why it cannot run, with the Plan's first fix that fits (``nothing`` when none does)."""
    fixes = [f for f in estimate(s).suggestions if f.fits and not {"num_gpus", "num_nodes", "gpu"} & set(f.fields)]
    for fix in (f for f in fixes if set(f.fields) <= techniques):
        placed = s.model_copy(update=fix.fields)
        fixed = estimate(placed, advise=False)
        if fixed.memory.fits:
            return fixed, placed, fix.change, ""
    why = f"does not fit: {plan.memory.device_peak_gib:,.1f} of {plan.memory.capacity_gib or 0:,.1f} GiB per GPU"
    if fixes:
        return plan, s, "", f"{why}; {fixes[0].change} ({fixes[0].cost})"
    return plan, s, "", f"{why}; {nothing}"


def job_plan(job: Job, gpu: GpuSpec, count: int, *, owned: bool, pricing: str = "on_demand",
             host_ram_gib: float | None = None, display: str = "none") -> JobPlan:
    """``job`` on ``count`` of ``gpu``: owned (power is the owner's to count; ``host_ram_gib`` its RAM; ``display``
    the desktop a card drives) or rented at ``pricing``. Several unified-memory computers are linked nodes of one GPU
    each, over their own ports."""
    s = _placed(job, gpu, count, None if owned else pricing, host_ram_gib, display)
    where = f"{count}x {short_id(gpu.id)}" + (" (owned)" if owned else "")
    per = {"serving": "day", "calls": "call"}.get(job.kind, "run")
    try:
        plan, s, change, why = _fitting(s, gpu, count, owned)
    except GpuplanError as err:  # s30 walk: a layout the job refuses (transformers serving on 2 linked computers)
        return JobPlan(job=job.label, setup=where, runs=False, why_not=str(err), scenario=s.model_dump(), per=per)
    if job.module is not None and count > 1:  # a module plan runs on one card (plan/refusals.py module_refusal)
        change = "+".join(x for x in ("one card of the " + str(count), change) if x)
    out = JobPlan(job=job.label, setup=where, cards=1 if job.module is not None else count, runs=not why,
                  why_not=why, change=change, scenario=plan.scenario,
                  per=per,
                  device_peak_gib=plan.memory.device_peak_gib, capacity_gib=plan.memory.capacity_gib,
                  cpu_gib=host_need_gib(s, plan.memory.cpu_gib), plan=plan)
    if why:
        return out
    if plan.speed is None and not (isinstance(plan, ModulePlan) and plan.work is not None):
        out.runs, out.why_not = False, f"no speed: {gpu.name} has no matrix rate in gpuplan's GPU catalog"
        return out
    _hours(out, job, plan, s)
    if not owned:
        _rent(out, job, plan, pricing)
    return out


def _hours(out: JobPlan, job: Job, plan: Plan, s: Scenario) -> None:
    """Hours per run (training, a module's call) or per day (serving), central and at the speed's low end, and busy
    hours a year."""
    work = plan.work if isinstance(plan, ModulePlan) else None
    if work is None:
        speed = plan.speed
        out.tokens_per_s, out.tokens_per_s_low = speed.tokens_per_s, speed.tokens_per_s_low or speed.tokens_per_s
    if job.serving:
        if job.hours_per_day is not None:
            out.hours_per_run = out.hours_per_run_low = job.hours_per_day
        else:
            out.hours_per_run = job.output_tokens_per_day / out.tokens_per_s / 3600
            out.hours_per_run_low = job.output_tokens_per_day / out.tokens_per_s_low / 3600
        days = HOURS_PER_YEAR / 24
        out.busy_hours_per_year, out.busy_hours_per_year_low = out.hours_per_run * days, out.hours_per_run_low * days
        if out.hours_per_run_low > 24:
            out.runs = False
            out.why_not = (f"needs {out.hours_per_run_low:,.1f} h a day at the low end of its speed: more than a day "
                           "has (more GPUs, or a smaller daily load)")
        return
    if work is not None:
        out.hours_per_run, out.hours_per_run_low = module_run_hours(work)
        if plan.cost is not None and plan.cost.spot is not None:  # a spot run's checkpoints and restarts
            stretch = plan.cost.spot.overhead
            out.hours_per_run, out.hours_per_run_low = out.hours_per_run * stretch, out.hours_per_run_low * stretch
    else:
        m, ckpt = plan.setup.model, plan.checkpoint_bytes  # the model the plan was built on, not read again
        out.hours_per_run = job_time(s, m, plan.speed, ckpt).total_h
        out.hours_per_run_low = job_time(s, m, replace(plan.speed, tokens_per_s=out.tokens_per_s_low), ckpt).total_h
    out.busy_hours_per_year = job.runs_per_year * out.hours_per_run
    out.busy_hours_per_year_low = job.runs_per_year * out.hours_per_run_low


def module_run_hours(w: ModuleWork) -> tuple[float, float]:
    """A module plan's run, in hours, central and at the low end of its speed band: a training run is the plan's
    job hours (train_steps x step time: plan/modules.py ``_work``); an inference run is one call, its samples
    (``samples_per_step``: batch_size images, a recording's windows) over the plan's samples per second (for a
    diffusion pipeline, batch_size x seconds per image). The low end stretches it by samples_per_s /
    samples_per_s_low."""
    run_s = w.job_hours * 3600 if w.job_hours is not None else w.samples_per_step / w.samples_per_s
    return run_s / 3600, run_s * w.samples_per_s / (w.samples_per_s_low or w.samples_per_s) / 3600


def _rent(out: JobPlan, job: Job, plan: Plan, pricing: str) -> None:
    """What the year's work costs on the Plan's offer: its hourly price over the busy hours (a spot run's hours
    include Daly's checkpoint-and-restart overhead); at the low end of the speed band, the runs take longer. A card
    no offer rents is priced by the Plan as one's own, by its power (``pricing`` owned): that is no rental."""
    cost = plan.cost
    if cost is None or cost.pricing == "owned":
        out.runs = False
        out.why_not = f"no {pricing.replace('_', '-')} offer in force for {out.setup}"
        return
    out.offer, out.usd_per_hour = cost.offer, cost.usd_per_hour
    if job.serving or isinstance(plan, ModulePlan):  # a module's run: the offer's hourly price over its hours
        out.usd_per_year = cost.usd_per_hour * out.busy_hours_per_year
        out.usd_per_year_low = cost.usd_per_hour * out.busy_hours_per_year_low
        return
    stretch = out.tokens_per_s / out.tokens_per_s_low if out.tokens_per_s_low else 1.0
    out.usd_per_year = cost.usd_total * job.runs_per_year
    out.usd_per_year_low = cost.usd_total * stretch * job.runs_per_year
