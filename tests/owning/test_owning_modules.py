"""``buy`` with jobs that are not decoder LLMs (review_rewalk_s15.md finding 12): a hobbyist's weekly SDXL LoRA and
SDXL images join a buy-vs-rent comparison through the one Plan builder. Each hour is the module plan's own time
(train_steps x step time; a call's images x seconds per image), computed here separately from ``gpuplan.estimate``
and multiplied out by hand."""

from __future__ import annotations

import pytest

import gpuplan
from gpuplan.errors import GpuplanError
from gpuplan.hardware import load_gpu, short_id
from gpuplan.owning.builds import make_build
from gpuplan.owning.checks import build_checks
from gpuplan.owning.plans import job_plan
from gpuplan.owning.power import HOURS_PER_YEAR
from gpuplan.owning.workloads import load_workloads

LORA = {"model": "sdxl", "task": "train", "method": "lora", "stack": "kohya", "resolution": "1024",
        "train_steps": 2000}
IMAGES = {"model": "sdxl", "task": "infer"}  # diffusers' defaults: 1 image at 1024x1024, 50 steps, CFG
HOBBY = [{"name": "sdxl lora", "per_week": 1, "scenario": LORA},
         {"name": "sdxl images", "per_week": 200, "scenario": IMAGES}]
WEEKS = 365.25 / 7


@pytest.fixture(autouse=True)
def _pinned_day(monkeypatch):
    monkeypatch.setenv("GPUPLAN_TODAY", "2026-11-28")  # the offers in force, as the golden answers have them


def _plan(scenario: dict):
    """The module plan of ``scenario`` on one RTX 3090, built on its own (not through buy)."""
    plan = gpuplan.estimate({**scenario, "gpu": "rtx-3090"}, advise=False)
    assert type(plan).__name__ == "ModulePlan" and plan.memory.fits and plan.work is not None
    return plan


def test_sdxl_lora_and_images_join_buy_vs_rent_with_the_plans_hours():
    """A 3090 bought used against a 3090 rented on demand, for a weekly SDXL LoRA (kohya, 1024 px, 2,000 steps) and
    200 SDXL images a week: hours per run = the module plan's time; busy hours a year = that x 52.18 weeks; the rent =
    the plan's offer's hourly price x those hours; owning's busy hours are their sum over the horizon."""
    lora, images = _plan(LORA), _plan(IMAGES)
    lora_h = 2000 * lora.work.step_s / 3600  # train_steps x step time
    assert lora.work.job_hours == pytest.approx(lora_h)
    image_h = 1 * images.work.image_s / 3600  # one call: batch_size 1 image x seconds per image
    assert images.work.samples_per_step == 1 and images.work.image_s == pytest.approx(1 / images.work.samples_per_s)
    lora_low = lora_h * lora.work.samples_per_s / lora.work.samples_per_s_low
    image_low = image_h * images.work.samples_per_s / images.work.samples_per_s_low
    assert lora_low > lora_h and image_low > image_h

    report = gpuplan.buy("3090", workloads={"years": 2, "workloads": HOBBY}, used=True)
    b = report.builds[0]
    assert b.runs == 2 and not b.cannot
    assert [r["kind"] for r in report.workloads] == ["training", "calls"]
    own_lora, own_images = b.jobs
    assert (own_lora.per, own_images.per) == ("run", "call")
    assert own_lora.hours_per_run == pytest.approx(lora_h) and own_lora.hours_per_run_low == pytest.approx(lora_low)
    assert own_images.hours_per_run == pytest.approx(image_h)
    assert own_images.hours_per_run_low == pytest.approx(image_low)
    assert own_lora.busy_hours_per_year == pytest.approx(WEEKS * lora_h)
    assert own_images.busy_hours_per_year == pytest.approx(200 * WEEKS * image_h)
    o = b.ownership
    assert o.busy_hours == pytest.approx(2 * WEEKS * (lora_h + 200 * image_h))
    assert o.busy_hours_low == pytest.approx(2 * WEEKS * (lora_low + 200 * image_low))

    rent = report.rentals[0]
    assert rent.label == "1x rtx-3090 on-demand" and rent.runs_all
    per_hour = lora.cost.usd_per_hour  # the plan's own offer (the cheapest on-demand 3090)
    assert images.cost.usd_per_hour == per_hour and rent.offers == [lora.cost.offer]
    assert lora.cost.usd_total == pytest.approx(lora_h * per_hour)  # the plan's price of one run
    assert rent.usd_per_year == pytest.approx(per_hour * WEEKS * (lora_h + 200 * image_h))
    assert rent.usd_per_year_low == pytest.approx(per_hour * WEEKS * (lora_low + 200 * image_low))
    versus = b.versus[0]
    assert versus.rent_usd == pytest.approx(2 * rent.usd_per_year_low)
    assert versus.own_usd == pytest.approx(o.total_usd_low)


def test_a_module_job_that_does_not_fit_is_said_as_for_decoders():
    """SDXL fine-tuned whole at 1024 px on a 3090: the plan's verdict (does not fit, X of Y GiB per GPU) and its
    first change that fits, named and not applied (LoRA changes the job); the same words owned and rented. A change
    that keeps the job (8-bit AdamW, checkpointing, cached latents) is applied and said, as recommend's are for a
    decoder on owned cards."""
    full = {**LORA, "method": "full"}
    plan = gpuplan.estimate({**full, "gpu": "rtx-3090"})
    w = load_workloads([{"name": "sdxl full", "per_month": 1, "scenario": full}])
    gpu = load_gpu("rtx-3090")
    for owned in (True, False):
        p = job_plan(w.workloads[0], gpu, 1, owned=owned)
        assert not p.runs and p.hours_per_run is None
        fix = next(f for f in plan.suggestions if f.fits)
        assert p.why_not == (f"does not fit: {plan.memory.device_peak_gib:,.1f} of {plan.memory.capacity_gib:,.1f} "
                             f"GiB per GPU; {fix.change} ({fix.cost})")
        assert fix.fields == {"method": "lora"}
    report = gpuplan.buy("3090", workloads={"workloads": [*HOBBY, {"name": "sdxl full", "per_month": 1,
                                                                     "scenario": full}]}, used=True)
    assert report.builds[0].cannot == [f"sdxl full: {p.why_not}"]
    assert report.verdict.startswith("1x rtx-3090 cannot run all the work: sdxl full: does not fit")
    eager = {**LORA, "attention": "eager", "micro_batch_size": 4}  # fits with a change that keeps the job
    fixed = job_plan(load_workloads([{"per_week": 1, "scenario": eager}]).workloads[0], gpu, 1, owned=True)
    refused = gpuplan.estimate({**eager, "gpu": "rtx-3090"})
    assert not refused.memory.fits
    keeps = next(f for f in refused.suggestions if f.fits and set(f.fields) <= {"attention", "grad_checkpointing",
                                                                                 "optimizer", "cache_latents"})
    assert fixed.runs and fixed.change == keeps.change == "gradient checkpointing"
    assert fixed.scenario["grad_checkpointing"] == "full" and fixed.scenario["micro_batch_size"] == 4
    applied = gpuplan.estimate({**eager, **keeps.fields, "gpu": "rtx-3090"}, advise=False)
    assert fixed.hours_per_run == pytest.approx(applied.work.job_hours)


def test_a_module_job_on_several_cards_runs_on_one_and_the_desktop_is_said():
    """A module plan runs on one card (module_refusal: data parallelism is not modelled for it): on 2 owned 3090s the
    job is planned on one and says so; its plan does not count a desktop, which the display check says."""
    w = load_workloads(HOBBY)
    p = job_plan(w.workloads[0], load_gpu("rtx-3090"), 2, owned=True)
    lora = _plan(LORA)
    assert p.runs and p.change == "one card of the 2" and p.hours_per_run == pytest.approx(lora.work.job_hours)
    shown = [c for c in build_checks(make_build("rtx-3090", 2, display="linux"), [p]) if c.name == "display"]
    left = p.capacity_gib - p.device_peak_gib
    assert len(shown) == 1 and shown[0].status == "ok"
    assert f"does not count the linux desktop's 0.39 GiB: {p.device_peak_gib:,.1f} of {p.capacity_gib:,.1f} GiB " \
           f"leaves {left:,.2f} GiB" in shown[0].line


def test_module_jobs_are_refused_what_their_plan_cannot_time():
    """A module's training run is sized by train_steps; its inference by calls or a server's hours, not tokens."""
    for job, words in (({"per_week": 1, "scenario": {k: v for k, v in LORA.items() if k != "train_steps"}},
                        "how many optimizer steps a run trains"),
                       ({"output_tokens_per_day": 1e6, "scenario": IMAGES}, "not output tokens"),
                       ({"hours_per_day": 2, "scenario": LORA}, "trains: give runs")):
        with pytest.raises(GpuplanError, match=words):
            load_workloads([job])
    served = load_workloads([{"hours_per_day": 2, "scenario": IMAGES}]).workloads[0]
    p = job_plan(served, load_gpu("rtx-3090"), 1, owned=False)
    assert p.per == "day" and p.hours_per_run == 2 and p.busy_hours_per_year == pytest.approx(2 * HOURS_PER_YEAR / 24)
    assert p.usd_per_year == pytest.approx(p.usd_per_hour * p.busy_hours_per_year)


def test_a_budget_search_rents_each_module_job_on_its_cheapest_card():
    """``buy --budget``'s reference rental puts each module job on the first card ``recommend`` ranks for it (one
    card per setup), at that plan's hours x the offer's hourly price."""
    report = gpuplan.buy(None, workloads={"workloads": HOBBY}, budget_usd=2500, gpus="rtx-3090", used=True)
    rental = report.rentals[0]
    for job, scenario in zip(rental.jobs, (LORA, IMAGES), strict=True):
        top = gpuplan.recommend(scenario, top=1).setups[0]
        assert job.setup == f"1x {short_id(top.gpu_id)}"
        plan = gpuplan.estimate({**scenario, "gpu": top.gpu_id}, advise=False)
        assert job.usd_per_hour == pytest.approx(plan.cost.usd_per_hour)
    assert report.builds[0].build.label == "1x rtx-3090" and report.builds[0].runs == 2


def test_the_display_check_counts_a_windows_desktop_as_the_plan_would():
    """buy's display check for a plan that does not count the desktop takes the desktop's GiB from the one rule
    estimate --display and recommend --have use (tensors.breakdown.display_gib): on a 24 GB card Windows holds
    600 + 100 MiB = 0.68 GiB (ComfyUI's reserve, 100 MiB more on cards over 15 GiB), where it read 0.59."""
    w = load_workloads(HOBBY)
    p = job_plan(w.workloads[0], load_gpu("rtx-3090"), 1, owned=True)
    shown = [c for c in build_checks(make_build("rtx-3090", 1, display="windows"), [p]) if c.name == "display"]
    assert len(shown) == 1 and "does not count the windows desktop's 0.68 GiB" in shown[0].line
