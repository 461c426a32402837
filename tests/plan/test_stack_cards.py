"""Training stacks refused on the cards their projects do not run on, warned on those they run on in part
(gpuplan.scenario.stack_cards; s22's fuzzer: unsloth and megatron on an M4 Max, megatron on Gaudi 3, kohya's FLUX on
Gaudi 3 were planned without a word). The matrix below is the cited table written out by hand: R refused, W warned,
. planned as is."""

from __future__ import annotations

import csv
import subprocess
import sys
from pathlib import Path

import pytest

from gpuplan import estimate
from gpuplan.errors import GpuplanError
from gpuplan.hardware import load_gpu
from gpuplan.plan.refusals import stack_card, stack_card_warnings
from gpuplan.scenario import scenario_from

ROOT = Path(__file__).resolve().parents[2]
CARDS = ("h100-sxm", "amd-instinct-mi300x", "intel-gaudi3", "apple-m4-max")  # NVIDIA, AMD, Intel Gaudi, Apple
MATRIX = {  # stack: its answer on each of CARDS
    "hf": "....", "pytorch": "....", "torchtune": "..RW", "torchtitan": "..RR", "unsloth": "..RW",
    "axolotl": "..RW", "megatron": "..WR", "diffusers": "..WW", "kohya": ".WRW", "simpletuner": "..R.",
    "ai-toolkit": ".RRR",
}


def _answer(stack: str, card: str) -> str:
    s = scenario_from({"model": "x", "task": "train", "stack": stack})
    gpu = load_gpu(card)
    why, warned = stack_card(s, gpu), stack_card_warnings(s, gpu)
    assert not (why and warned)
    if why:
        assert why.startswith(f"stack {stack} does not run on {gpu.name}, an ")
    return "R" if why else "W" if warned else "."


@pytest.mark.parametrize("stack", MATRIX)
def test_each_stack_on_each_vendor_is_its_projects_word(stack):
    assert "".join(_answer(stack, card) for card in CARDS) == MATRIX[stack]


def test_the_refusal_names_the_stacks_that_run_there():
    s = scenario_from({"model": "x", "task": "train", "stack": "unsloth"})
    assert stack_card(s, load_gpu("intel-gaudi3")) == (
        "stack unsloth does not run on Gaudi 3 (HL-325L OAM), an Intel Gaudi card (it runs on NVIDIA (CUDA) and AMD "
        "(ROCm), Apple silicon (MPS) in part): train there with stack hf, pytorch or megatron")
    kohya = stack_card(scenario_from({"model": "x", "task": "train", "stack": "kohya"}), load_gpu("intel-gaudi3"))
    assert kohya.endswith("train there with stack diffusers")  # the diffusion trainers only


def test_serving_is_not_judged_by_a_training_stack():
    s = scenario_from({"model": "x", "task": "infer"})
    assert stack_card(s, load_gpu("apple-m4-max")) is None and stack_card_warnings(s, load_gpu("intel-gaudi3")) == []


JOB = {"model": "qwen2.5-0.5b", "task": "train", "method": "lora", "seq_len": 512, "micro_batch_size": 1}


@pytest.mark.parametrize(("stack", "card"), [("megatron", "apple-m4-max"), ("unsloth", "intel-gaudi3"),
                                             ("torchtitan", "intel-gaudi3")])
def test_the_fuzzers_plans_are_refused(stack, card):
    fields = {**JOB, "stack": stack, "gpu": card, **({"method": "full"} if stack == "torchtitan" else {})}
    with pytest.raises(GpuplanError, match=f"^stack {stack} does not run on "):
        estimate(fields, advise=False)


def test_kohyas_flux_on_gaudi_is_refused():
    with pytest.raises(GpuplanError, match=r"^stack kohya does not run on Gaudi 3"):
        estimate({"model": "flux.1-dev", "task": "train", "method": "lora", "stack": "kohya", "gpu": "intel-gaudi3"},
                 advise=False)


def test_megatron_on_gaudi_is_planned_with_a_warning():
    warnings = estimate({**JOB, "stack": "megatron", "gpu": "intel-gaudi3"}, advise=False).warnings
    assert [w for w in warnings if w.startswith("stack megatron on Intel Gaudi: Intel's port (HabanaAI/Megatron-LM")]


def test_the_unsloth_mac_warning_is_said_once():
    warnings = estimate({**JOB, "stack": "unsloth", "gpu": "apple-m4-max"}, advise=False).warnings
    assert sum(w.startswith("stack unsloth on Apple silicon") for w in warnings) == 1


def test_recommend_leaves_the_card_out_with_a_note():
    from gpuplan import recommend

    r = recommend({**JOB, "stack": "unsloth"}, have=["1xintel-gaudi3"], gpus=["h100-sxm"])
    assert r.setups and not r.owned and all("gaudi" not in x.gpu_id for x in r.setups)
    assert [n for n in r.notes if n.startswith("intel-gaudi3 left out of stack unsloth's setups: stack unsloth does "
                                               "not run on Gaudi 3")]


def test_fit_refuses_in_one_sentence_with_exit_2():
    run = subprocess.run([sys.executable, "-m", "gpuplan", "fit", "--gpu", "intel-gaudi3", "--task", "train",
                          "--method", "lora", "--stack", "unsloth"], capture_output=True, text=True, cwd=ROOT,
                         env={"PYTHONPATH": str(ROOT / "src"), "PATH": "/usr/bin:/bin"})
    assert run.returncode == 2 and "Traceback" not in run.stderr
    assert "stack unsloth does not run on Gaudi 3" in run.stderr


def test_no_mlperf_training_row_is_refused():
    """AMD's MLPerf Training rows run Megatron-LM's ROCm fork, Intel's the optimum-habana Trainer (stack hf)."""
    with open(ROOT / "bench/data/mlperf-training-other.csv") as f:
        rows = [*csv.DictReader(f)]
    assert len(rows) >= 30
    for row in rows:
        if row["gpu"]:
            s = scenario_from({"model": "x", "task": "train", "stack": row["stack"] or "megatron"})
            assert stack_card(s, load_gpu(row["gpu"])) is None, row["id"]
