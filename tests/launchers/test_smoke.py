"""The launch files run: each plan rewritten onto a tiny Qwen2 (2 layers, 64 wide, random weights) and its files
run for STEPS optimizer steps on the CPU (gpuplan.launchers.smoke): the TRL trainer alone, ``accelerate launch``
and ``torchrun`` with 2 DDP processes over gloo, SkyPilot's ``run`` section as it runs on one node, and DeepSpeed
ZeRO-2 on its CPU accelerator through accelerate. Each must exit 0, log STEPS finite losses, the last lower than the
first, and leave its checkpoint in the plan's output folder; and torchtune's LoRA recipe on one device (torchtune
builds the tiny Qwen2 from its component builders, reading its safetensors and its BPE tokenizer).

Measured on this 2-core machine: about 2-3 minutes for the six runs (bench/smoke.py times each). The GPU-only
targets (Unsloth, Megatron-LM, torchtitan, vLLM, SGLang, TensorRT-LLM) run in bench/smoke_gpu.py on a CUDA machine.
"""

from __future__ import annotations

import math
import os
import shlex
from importlib.util import find_spec

import pytest

from gpuplan.launchers.smoke import STEPS, _sky_run, clear, prepare, run_target, smoke
from gpuplan.scenario import scenario_from

# one worker runs them in turn (pytest-xdist): accelerate's processes on one machine meet on port 29500. The runs
# import TRL and DeepSpeed in their own processes: looked up here, not imported (DeepSpeed's import alone is ~2.5
# CPU-s, which every worker's collection paid)
pytestmark = [pytest.mark.xdist_group("smoke"),
              pytest.mark.skipif(not (find_spec("trl") and find_spec("deepspeed")), reason="needs trl and deepspeed")]
BASE = dict(model="qwen2.5-0.5b", task="train", method="full", gpu="l40s")


def check(runs, targets) -> None:
    assert [r.target for r in runs] == targets  # every target ran
    for r in runs:
        assert r.returncode == 0, f"{r.target}: {r.command} exited {r.returncode}:\n{r.tail}"
        assert len(r.losses) == STEPS and all(map(math.isfinite, r.losses)), f"{r.target}: losses {r.losses}"
        assert r.losses[-1] < r.losses[0], f"{r.target}: the loss did not fall: {r.losses}"
        assert r.checkpoint, f"{r.target}: no checkpoint in the output folder"
        assert r.passed


def command_of(text: str) -> list[str]:
    """A shell command's words, its line continuations joined."""
    return shlex.split(text.replace("\\\n", " "))


def test_ddp_plan_trains_with_trainer_accelerate_torchrun_and_skypilot(tmp_path):
    """SkyPilot's ``run`` section on one node is accelerate-launch.sh's command, word for word (the script's resume
    suffix aside: ``$(ls -d checkpoints/checkpoint-* ...)`` finds nothing in a run that starts afresh, as every smoke
    run does), run here in the same folder and environment: the accelerate run is its run, and running the same
    command again (3 processes importing torch and TRL, ~20 CPU-s) would check nothing more."""
    targets = ["trainer", "accelerate", "torchrun"]
    plan, opts, chosen = prepare(scenario_from({**BASE, "num_gpus": 2, "sharding": "ddp"}), tmp_path,
                                 [*targets, "skypilot"])
    assert chosen == [*targets, "skypilot"]
    runs = []
    for target in targets:  # as smoke() runs each: afresh
        clear(tmp_path / opts.output_dir)
        runs.append(run_target(target, plan, opts, tmp_path, False, 600.0))
    assert plan.scenario.world_size == 2 and plan.model.num_layers == 2 and plan.model.hidden_size == 64
    check(runs, targets)
    script = (tmp_path / "accelerate-launch.sh").read_text(encoding="utf-8").split("set -euo pipefail\n", 1)[1]
    launched, resume = script.split(" $(ls -d checkpoints/checkpoint-* 2>/dev/null", 1)
    assert resume.strip().endswith("| sed 's/^/--resume_from_checkpoint /')")
    assert command_of(_sky_run(tmp_path)) == command_of(launched) == [
        "accelerate", "launch", "--config_file", "accelerate.yaml", "-m", "trl.scripts.sft", "--config", "trainer.yaml"]


def test_zero2_plan_trains_with_deepspeed_on_the_cpu(tmp_path):
    plan, runs = smoke(scenario_from({**BASE, "num_gpus": 2, "sharding": "zero2"}), tmp_path, ["deepspeed"],
                       cuda=False)
    assert (tmp_path / "ds_config.json").is_file() and plan.scenario.resolved_sharding == "zero2"
    check(runs, ["deepspeed"])


def test_torchtune_recipe_trains(tmp_path, monkeypatch):
    """torchtune 0.6.1's recipes import an API torchao 0.16 removed: the run takes torchao 0.15 first on its path
    (the same no-deps install test_launch_stacks.py reads torchtune's checkpointer with; tune-run's setup pins
    torchao<0.16)."""
    pytest.importorskip("torchtune")
    from test_launch_stacks import cached_packages

    old = cached_packages("torchao-0.15.0", ["torchao==0.15.0"])
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(old), *filter(None, [os.environ.get("PYTHONPATH")])]))
    plan, runs = smoke(scenario_from({**BASE, "method": "lora", "stack": "torchtune"}), tmp_path,
                       ["torchtune"], cuda=False)
    assert (tmp_path / "torchtune.yaml").is_file() and plan.scenario.stack == "torchtune"
    check(runs, ["torchtune"])


def test_torchtune_dpo_recipe_trains(tmp_path, monkeypatch):
    """A torchtune DPO plan runs torchtune 0.6.1's own lora_dpo_single_device on the CPU (torchao 0.15 first on its
    path, as above) over the smoke pairs (whole chosen and rejected conversations: its preference_dataset), DPOLoss
    starting at log 2 and falling."""
    pytest.importorskip("torchtune")
    from test_launch_stacks import cached_packages

    old = cached_packages("torchao-0.15.0", ["torchao==0.15.0"])
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(old), *filter(None, [os.environ.get("PYTHONPATH")])]))
    plan, runs = smoke(scenario_from({**BASE, "method": "lora", "stack": "torchtune", "train_objective": "dpo"}),
                       tmp_path, ["torchtune"], cuda=False)
    assert plan.scenario.train_objective == "dpo" and runs[0].command.startswith("tune run lora_dpo_single_device")
    assert runs[0].losses[0] == pytest.approx(math.log(2), abs=0.01)
    check(runs, ["torchtune"])


def test_dpo_plan_trains_with_the_trainer_on_preference_pairs(tmp_path):
    """Session 24: `gpuplan launch` writes TRL's DPO script for a DPO plan, but the smoke run fed it its SFT chats
    (``messages``), which DPOTrainer does not read; a DPO plan's smoke run now writes preference pairs (the chat
    and the same chat with a worse reply: TRL extracts the shared prompt) and runs `trl.scripts.dpo`: the loss
    starts at log 2 and falls."""
    plan, runs = smoke(scenario_from({**BASE, "method": "lora", "train_objective": "dpo"}), tmp_path, ["trainer"],
                       cuda=False)
    assert plan.scenario.train_objective == "dpo" and (tmp_path / "smoke-inputs" / "pairs.jsonl").is_file()
    assert "-m trl.scripts.dpo" in runs[0].command
    check(runs, ["trainer"])
