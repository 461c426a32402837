"""The one builder (gpuplan/plan/build.py): every plan is built once from its resolved scenario, with one validation
of the scenario and one memory report per plan (the advice's probes are memory-only plans, one each), the speed
once per class of links among the offers, and the verdict on the plan for every interface to print."""

from __future__ import annotations

import contextlib
import io

import pytest

import gpuplan
from counting import MEMORY, VALIDATIONS, counting
from gpuplan.cli import run
from gpuplan.market.store import load_offers
from gpuplan.plan.build import Offers, build, links_that_matter, offers_for
from gpuplan.plan.resolve import resolve
from gpuplan.scenario import scenario_from

PLANS = "plan/plan.py:memory_plan"  # every plan, whole or memory-only, is made here first
SPEED = "speed/__init__.py:speed_of"
QLORA_4090 = ["estimate", "--model", "llama-3.1-8b", "--task", "train", "--method", "qlora", "--seq-len", "2048",
              "--gpu", "rtx-4090", "--train-tokens", "1e8", "--micro-batch-size", "1"]  # the review's walk 1
# (the micro-batch set: a layout left to the recipe plans and times each micro-batch it tries, gpuplan.plan.layout)
VLLM_L40S = ["estimate", "--model", "qwen2.5-7b", "--task", "infer", "--engine", "vllm", "--gpu", "l40s",
             "--batch-size", "16", "--prompt-tokens", "2048"]  # its walk 2


@pytest.mark.parametrize("argv", [QLORA_4090, VLLM_L40S])
def test_one_validation_and_one_memory_report_per_plan(argv):
    """The review traced one CLI estimate validating the scenario 40 and 50 times and computing memory 32 times
    (each of the largest-batch probes, then again per offer priced). Now each plan, the estimate's and each
    probe's, is one validation and one memory report; the speed is timed once (one class of links here)."""
    with counting(VALIDATIONS, MEMORY, PLANS, SPEED) as seen, contextlib.redirect_stdout(io.StringIO()), \
            contextlib.redirect_stderr(io.StringIO()):
        assert run(argv) == 0
    assert seen[PLANS] >= 8  # the estimate and its largest-batch and -context probes (the walk's search: 9 probes)
    assert seen[VALIDATIONS] == seen[MEMORY] == seen[PLANS]
    assert seen[SPEED] == 1


def test_a_plan_without_advice_is_one_of_each():
    with counting(VALIDATIONS, MEMORY, PLANS, SPEED) as seen:
        plan = gpuplan.estimate({"model": "llama-3.1-8b", "task": "train", "method": "lora", "gpu": "h100-sxm",
                                 "num_gpus": 2, "sharding": "zero2", "train_tokens": 1e8, "grad_accum_steps": 8},
                                advise=False)
    assert plan.cost is not None
    assert (seen[VALIDATIONS], seen[MEMORY], seen[PLANS]) == (1, 1, 1)
    offers = offers_for(plan.setup, load_offers()).candidates
    classes = {links_that_matter(plan.setup.scenario, plan.setup.gpu, o.network) for o in offers}
    assert len(offers) > len(classes) >= 1 and seen[SPEED] == len(classes)  # two GPUs: timed per class of links


def test_a_memory_only_build_stops_after_the_verdict():
    r = resolve(scenario_from({"model": "qwen2.5-7b", "task": "infer", "engine": "vllm", "gpu": "l40s",
                               "batch_size": 400}))
    plan = build(r, Offers(), memory_only=True)
    assert plan.speed is None and plan.cost is None and plan.memory.max_batch_size is None
    assert plan.verdict.fits is False and plan.verdict.word == "does not fit"
    assert plan.verdict.sentence.startswith("does not fit on L40S: vLLM's KV pool holds 356 of the 400 concurrent "
                                            "requests asked (vLLM takes its budget whatever the job); ")
    assert plan.verdict.headroom_gib is None and "headroom" not in plan.verdict.sentence  # memory is not what's short
    assert plan.setup is r
    one = build(resolve(scenario_from({"model": "qwen2.5-7b", "task": "infer", "engine": "vllm", "gpu": "l40s"})),
                Offers(), memory_only=True)
    assert "vLLM's KV pool holds the 1 concurrent request asked (up to " in one.verdict.sentence  # not "requests"


def test_the_verdict_is_the_plans_and_every_interface_prints_it():
    fields = {"model": "llama-3.1-8b", "task": "train", "method": "qlora", "gpu": "rtx-4090"}
    plan = gpuplan.estimate(fields, advise=False)
    v = plan.verdict
    assert v.fits and v.sentence == (f"fits on GeForce RTX 4090: {plan.memory.device_peak_gib:,.2f} of "
                                     f"{plan.memory.capacity_gib:,.2f} GiB usable per GPU, headroom "
                                     f"{plan.memory.headroom_gib:+,.2f} GiB")
    assert plan.to_dict()["verdict"]["sentence"] == v.sentence
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        run(["estimate", *[f"--{k.replace('_', '-')}={x}" for k, x in fields.items()]])
    assert v.sentence in out.getvalue().replace("\n", " ") or v.sentence in out.getvalue()
