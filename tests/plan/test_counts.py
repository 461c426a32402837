"""Every answer is a reading of plans, and no plan costs more than one validation of its scenario and one memory
report (the architecture review counted one CLI estimate validating the scenario 40 times and reporting its memory
32 times; capacity, cost and launch each ran their own memory and speed besides).

Counted with a profiler hook (tests/counting.py) over whole commands: every memory report written belongs to a plan
(``report_of`` once per ``memory_plan``: a search's pruning reports become plans too), no scenario is validated twice
(each validation recorded by what it was given), and a search estimates memory at most once per plan (recommend once
per layout, reported on every card). An estimate is one validation and one report per plan exactly
(tests/plan/test_build.py)."""

from __future__ import annotations

import contextlib
import io
from pathlib import Path

import pytest

import gpuplan
from counting import ESTIMATES, MEMORY, VALIDATIONS, counting, validations
from gpuplan.cli import run

PLANS = "plan/plan.py:memory_plan"  # every plan, whole or memory-only, is made here first
COMMANDS = {
    "recommend-train": ["recommend", "--model", "llama-3.1-8b", "--task", "train", "--method", "lora",
                        "--train-tokens", "1e8"],
    "recommend-infer": ["recommend", "--model", "llama-3.1-8b", "--task", "infer", "--batch-size", "16"],
    "cost": ["cost", "--model", "llama-3.1-8b", "--task", "infer", "--batch-size", "16"],
    "capacity": ["capacity", "--model", "llama-3.2-1b", "--users", "20", "--preset", "chat", "--gpus", "l4",
                 "--top", "1"],
    "capacity-sglang": ["capacity", "--model", "llama-3.2-1b", "--engine", "sglang", "--users", "20", "--preset",
                        "chat", "--gpus", "l4", "--top", "1"],
    # the review's walk 1 with the layout left to the recipe: each micro-batch tried is a plan of its own
    "estimate-qlora": ["estimate", "--model", "llama-3.1-8b", "--task", "train", "--method", "qlora", "--seq-len",
                       "2048", "--gpu", "rtx-4090", "--train-tokens", "1e8"],
    "launch-train": ["launch", "--model", "llama-3.2-1b", "--task", "train", "--method", "lora", "--gpu", "rtx-4090",
                     "--train-tokens", "1e7"],
    "launch-serve": ["launch", "--model", "llama-3.1-70b", "--task", "infer", "--engine", "vllm", "--gpu",
                     "h100-sxm", "--num-gpus", "4"],
}


def _counted(argv: list[str], tmp_path) -> dict:
    if argv[0] == "launch":
        argv = [*argv, "-o", str(tmp_path / "out")]
    with counting(VALIDATIONS, MEMORY, ESTIMATES, PLANS) as seen, validations() as given, \
            contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()) as err:
        code = run(argv)
    assert code == 0, err.getvalue()
    assert len(given) == seen[VALIDATIONS] >= 1  # the hook saw every validation
    twice = [g for g in set(given) if given.count(g) > 1]
    assert twice == [], f"{len(twice)} scenarios validated more than once, e.g. {dict(twice[0])}"
    return seen


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_each_command_reads_plans_one_validation_and_report_each(name, tmp_path):
    seen = _counted(COMMANDS[name], tmp_path)
    plans = seen[PLANS]
    assert plans >= 2  # a search's candidates, a launch's plan and the trials or limits chosen before it
    # every memory report is a plan's; the layout the recipe's ladder reported is planned on that report, not
    # reported again (s29: layout.with_layout; one fewer for estimate-qlora and launch-train)
    assert seen[MEMORY] <= plans
    assert seen[ESTIMATES] <= plans
    assert seen[VALIDATIONS] <= plans  # no plan costs a second validation (a search's cards share one)


def test_recommend_estimates_each_layout_once():
    """The fast path: a training layout's memory does not depend on the card, so it is estimated once and
    reported on each card (a plan per card it may fit)."""
    seen = _counted(COMMANDS["recommend-train"], None)
    assert seen[ESTIMATES] * 5 < seen[PLANS]


def test_fit_plans_each_model_and_its_probes():
    """A model that does not fit as asked (Qwen2.5-7B LoRA on 2x 3090 at ZeRO-3) gets its changes from the advice,
    which asks of each fix several times (whether the stack runs it, its speed, its memory, combinations): each
    changed scenario is still validated once."""
    with counting(VALIDATIONS, MEMORY, ESTIMATES, PLANS) as seen, validations() as given:
        report = gpuplan.fit("2x3090", task="train", method="lora", models=["llama-3.2-1b", "qwen2.5-7b"])
    assert len(report.rows) == 2 and report.fitting == 2 and any(r.change for r in report.rows)
    # each model's plan and its largest-fit probes, a layout the ladder reported planned on its report (s29)
    assert seen[MEMORY] == seen[ESTIMATES] <= seen[PLANS] and seen[PLANS] > 2
    assert len(given) == len(set(given)) == seen[VALIDATIONS]


@pytest.mark.parametrize("build", [["2x3090", "--used"], ["--budget", "5000"]])
def test_buy_validates_each_job_once_and_reads_plans(build):
    """``buy`` plans each job of the workloads file on the build and on each rental: the job's scenario is
    validated once (the file's check), and each setup's plan is one validation of its copy on that setup's cards
    (s20: the job was validated again for every setup, 4 times for one job on a build and two rentals; a budget's
    search validated the job without its cards once per build tried, 10 times, and the advice's combination of
    fixes once as searched and again as sized)."""
    jobs = Path(__file__).resolve().parents[2] / "examples" / "owning-example.yaml"  # one job
    seen = _counted(["buy", *build, "--workloads", str(jobs)], None)
    assert seen[PLANS] >= 3  # the job on the build and on the two rentals (on demand, spot), and their layouts
    assert seen[MEMORY] <= seen[PLANS]  # (a layout the ladder reported is planned on its report: s29)
    assert seen[VALIDATIONS] <= seen[PLANS] + 1  # + the job's own scenario, on no card
