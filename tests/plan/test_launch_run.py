"""What the launch files state of a plan's run is read off the plan (gpuplan/plan/launch.py:run_of); the setup's
words name the sharding that runs and the parallel layout (torchtitan's FSDP was labelled "zero3" and Megatron's
16 GPUs at tp 8 x pp 2 "single")."""

from __future__ import annotations

import pytest

from gpuplan.plan.launch import run_of, runnable
from gpuplan.scenario import scenario_from


@pytest.mark.parametrize(("fields", "words"), [
    ({"stack": "torchtitan", "num_gpus": 8, "sharding": "fsdp"}, "fsdp2"),
    ({"stack": "megatron", "num_gpus": 16, "tp": 8, "pp": 2}, "tp8 pp2"),
    ({"stack": "megatron", "num_gpus": 16, "tp": 4, "pp": 2}, "zero1 tp4 pp2"),  # its distributed optimizer
    ({"stack": "hf", "num_gpus": 8, "sharding": "zero3"}, "zero3"),
    ({"stack": "hf", "num_gpus": 2, "sharding": "fsdp2"}, "fsdp2"),
    ({"stack": "hf", "num_gpus": 1}, "single"),
    ({"stack": "hf", "num_gpus": 4}, "ddp"),
])
def test_the_layout_names_what_runs(fields, words):
    s = scenario_from({"model": "llama-3.1-70b", "task": "train", "gpu": "h100-sxm", **fields})
    assert s.layout == words


def test_the_run_is_read_off_the_plan():
    plan = runnable(scenario_from({"model": "llama-3.1-8b", "task": "train", "method": "lora", "gpu": "h100-sxm",
                                   "train_tokens": 1e8}))
    run = run_of(plan)
    s = plan.setup.scenario
    assert run.usd_per_hour == plan.cost.usd_per_hour and run.hours == plan.cost.hours
    assert run.max_steps == plan.typed_recipe.steps > 0
    region = f" {plan.offer.region}" if plan.offer.region else ""
    assert run.label == f"1x H100 SXM5 80GB, single, lora, {plan.cost.offer}{region}"
    # disk: the weights (8.03e9 bf16 parameters), 2 kept checkpoints and the final save, the data at 4 B per token,
    # 50 GB of software, rounded up to 10 GB
    need = 16.06 + 3 * run.checkpoint_gb + 4 * 1e8 / 1e9 + 50
    assert run.weights_gb == pytest.approx(16.06, abs=0.01) and s.method == "lora" and run.checkpoint_gb < 1
    assert run.disk_gb == 70 and need < 70
