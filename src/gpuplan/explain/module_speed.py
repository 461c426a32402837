"""The formulas of a module plan's speed and price (a diffusion pipeline, an encoder-decoder, an encoder): the step
or call as the sum of its parts, the rates it implies, the dollars per thousand images, samples or windows and the
job's hours. The parts themselves come from the recorded profiles of the real classes
(:mod:`gpuplan.plan.modules`); these are the arithmetic :func:`gpuplan.plan.modules.priced` and the speed model
do on them, written out, so that the page opens each number into how it was reached."""

from __future__ import annotations

from ..plan.modules import ModulePlan
from ..result import usd_amount
from ..speed.gemm import peak_flops
from .accuracy import module_accuracy
from .formula import Constant, Explanation, Formula
from .module_memory import accuracy_group, module_memory


def unit(plan: ModulePlan) -> str:
    """What one sample of the plan is: images (diffusion), windows (Whisper on a recording) or samples."""
    w = plan.work
    if w is not None and "diffusion" in w.kind:
        return "images"
    return "windows" if plan.scenario.get("audio_seconds") and plan.scenario["task"] == "infer" else "samples"


def _speed(plan: ModulePlan) -> dict[str, Formula]:
    w = plan.work
    assert w is not None
    per = unit(plan)
    whole = sum(w.parts_s.values())
    key, label = ("work.image_s", "one call") if w.image_s is not None else ("work.step_s", "one optimizer step")
    out = {key: Formula(
        label=label, value=w.image_s if w.image_s is not None else w.step_s, unit="s", computed=whole,
        formula=f"{label} = the sum of its parts (each op of the real class's recorded pass timed on the card)",
        substituted=" + ".join(f"{k} {v:,.3f}" for k, v in w.parts_s.items() if v > 0) + f" = {whole:,.3f} s")}
    out["work.steps_per_s"] = Formula(
        label=step_unit(plan), value=w.steps_per_s, unit=step_unit(plan), computed=1 / w.step_s,
        formula=f"{step_unit(plan)} = 1 / the time of one step" + (" (one denoising step)" if w.steps else ""),
        substituted=f"1 / {w.step_s:,.4f} s = {1 / w.step_s:,.3f} {step_unit(plan)}")
    per_call = w.image_s if w.image_s is not None else w.step_s
    out["work.samples_per_s"] = Formula(
        label=f"{per}/s", value=w.samples_per_s, unit=f"{per}/s", computed=w.samples_per_step / per_call,
        formula=f"{per}/s = {per} per {'call' if w.image_s is not None else 'step'} / its time",
        substituted=f"{w.samples_per_step:,} / {per_call:,.4f} s = {w.samples_per_step / per_call:,.4g} {per}/s")
    if w.first_call_s is not None and w.image_s is not None:
        setup = w.first_call_s - w.image_s
        out["work.first_call_s"] = Formula(
            label="first call after loading", value=w.first_call_s, unit="s", computed=w.image_s + setup,
            constants=[Constant(name="one-time setup of a first call", value=f"{setup:,.2f} s",
                                source="overheads.FIRST_CALL_SETUP_S (siliconflow/onediff baselines)")],
            formula="first call = one call + the setup a first call pays (kernels loaded on first use, cuBLAS and "
                    "cuDNN choosing algorithms per shape)",
            substituted=f"{w.image_s:,.3f} s + {setup:,.2f} s = {w.first_call_s:,.3f} s")
    out.update(_rates(plan))
    measured = module_accuracy("speed", accuracy_group(plan.module.job))
    for f in out.values():
        f.accuracy = measured
    return out


def _rates(plan: ModulePlan) -> dict[str, Formula]:
    """Images per hour (a call's images over its seconds) and the implied MFU: the FLOPs of one step over its
    seconds and the card's dense peak at the job's dtype (fp32 at TF32 where the card has it), as
    :func:`gpuplan.speed.modules.generation` and ``model_step`` compute them; a generate's FLOPs (an encoder-decoder
    transcribing) are the whole call's, over the call's seconds."""
    w, job, gpu = plan.work, plan.module.job, plan.module.gpu
    assert w is not None
    per, out = unit(plan), {}
    if w.images_per_hour is not None and w.image_s is not None:
        hourly = 3600 * w.samples_per_step / w.image_s
        out["work.images_per_hour"] = Formula(
            label=f"{per} per hour", value=w.images_per_hour, unit=f"{per}/h", computed=hourly,
            formula=f"{per} per hour = 3,600 s x {per} per call / one call",
            substituted=f"3600 x {w.samples_per_step:,} / {w.image_s:,.3f} s = {hourly:,.0f}")
    dense = peak_flops(gpu, "tf32" if job.dtype == "fp32" else job.dtype) if gpu is not None else 0.0
    if dense and w.mfu:
        whole = job.task == "infer" and "decoder_tokens" in w.sizes and w.image_s is not None
        seconds = w.image_s if whole else w.step_s
        mfu = w.flops_per_step / (seconds * dense)
        what = "one call (every decoder step)" if whole else "one step"
        out["work.mfu"] = Formula(
            label="implied MFU", value=w.mfu, unit="", computed=mfu,
            formula=f"MFU = FLOPs of {what} / (its seconds x the card's dense peak at {job.dtype})",
            substituted=f"{w.flops_per_step / 1e12:,.4g} TFLOP / ({seconds:,.4f} s x {dense / 1e12:,.1f} TFLOPS) = "
                        f"{mfu:.3f}")
    return out


def _price(plan: ModulePlan) -> dict[str, Formula]:
    w, c = plan.work, plan.cost
    assert w is not None and c is not None
    per = unit(plan)
    price = Constant(name=c.offer, value=f"${c.usd_per_gpu_hour:,.3f} per GPU-hour, {c.price_age_days} days old",
                     source=c.price_origin or "data/offers.csv")
    out = {"cost.usd_per_hour": Formula(
        label="$ per hour", value=c.usd_per_hour, unit="$/h", computed=c.num_gpus * c.usd_per_gpu_hour,
        constants=[price], formula="$/h = GPUs x price per GPU-hour",
        substituted=f"{c.num_gpus} x ${c.usd_per_gpu_hour:,.3f} = ${c.num_gpus * c.usd_per_gpu_hour:,.2f}/h")}
    if w.usd_per_1000_samples is not None:
        per_1000 = 1000 / (w.samples_per_s * c.num_gpus) / 3600 * c.usd_per_hour
        out["work.usd_per_1000_samples"] = Formula(
            label=f"$ per 1,000 {per}", value=w.usd_per_1000_samples, unit="$", computed=per_1000, constants=[price],
            formula=f"$ per 1,000 {per} = 1,000 / ({per}/s x GPUs) / 3600 x $/h",
            substituted=f"1000 / ({w.samples_per_s:,.4g} x {c.num_gpus}) / 3600 x {c.usd_per_hour:,.2f} = "
                        f"${per_1000:,.4f}")
    steps = plan.scenario.get("train_steps")
    if w.job_hours is not None and steps:
        out["work.job_hours"] = Formula(
            label="hours", value=w.job_hours, unit="h", computed=steps * w.step_s / 3600,
            formula="hours = train_steps x one optimizer step / 3600",
            substituted=f"{steps:,} x {w.step_s:,.4f} s / 3600 = {steps * w.step_s / 3600:,.3f} h")
        out["cost.usd_total"] = Formula(
            label="GPU time $", value=c.usd_total, unit="$", computed=w.job_hours * c.usd_per_hour,
            formula="GPU time = hours x $/h",
            substituted=f"{w.job_hours:,.3f} x {c.usd_per_hour:,.2f} = ${w.job_hours * c.usd_per_hour:,.2f}")
    return out


def step_unit(plan: ModulePlan) -> str:
    """What one of the plan's steps is, per second: a denoising or optimizer step is an ``it`` as diffusers' and the
    trainers' progress bars count it; a transcription's step is one decoder token of a pass (``step_s`` of
    :func:`gpuplan.speed.modules.model_step`), and an encoder's forward call is the whole call."""
    parts = plan.work.parts_s if plan.work is not None else {}
    if "decoder steps" in parts:
        return "decoder steps/s"
    return "calls/s" if set(parts) == {"forward"} else "it/s"


def speed_line(plan: ModulePlan) -> str:
    """The plan's speed and price in one line (the Markdown export's)."""
    w, c, per = plan.work, plan.cost, unit(plan)
    if w is None:
        return "Speed: none without a card that has a 16-bit matrix rate"
    line = f"Speed: {w.steps_per_s:,.2f} {step_unit(plan)}, {w.samples_per_s:,.4g} {per}/s ({w.bound}-bound)"
    if w.image_s is not None:
        line += f", {w.image_s:,.3g} s per call of {w.samples_per_step:,} {per}"
    if c is not None and w.usd_per_1000_samples is not None:
        line += f"\nCost: {c.offer} at ${c.usd_per_hour:.2f}/h, ${usd_amount(w.usd_per_1000_samples)} per 1,000 {per}"
        if w.job_hours:
            line += f"; {w.job_hours:,.2f} h, ${c.usd_total:,.2f} for {plan.scenario['train_steps']:,} steps"
        line += f" (price {c.price_age_days} days old)"
    return line


def explain_module(plan: ModulePlan) -> Explanation:
    """The formulas of a module plan's memory (:mod:`.module_memory`), speed and price, the defaults it took, and
    each part's share of its step (or call) in whole percent, as the command line's ``step:`` line prints them."""
    numbers: dict[str, Formula] = module_memory(plan)
    if plan.work is not None:
        numbers.update(_speed(plan))
        if plan.cost is not None:
            numbers.update(_price(plan))
    shared = plan.work.step_shares() if plan.work is not None else []
    return Explanation(numbers=numbers, defaults=list(plan.defaults), step_shares=shared)
