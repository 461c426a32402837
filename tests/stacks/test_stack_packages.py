"""What each training stack's launch files install (gpuplan.stacks.base.Stack.packages, the pins in
gpuplan.stacks.releases): the lines `launch` writes under "tested with", word for word as before the pins moved
out of the launchers."""

from __future__ import annotations

import pytest

from gpuplan.scenario import scenario_from
from gpuplan.stacks import STACKS

BASE = {"model": "llama-3.1-8b", "task": "train", "method": "lora", "gpu": "a100-sxm4-80gb"}
HF = ["torch==2.13.0", "transformers==5.24.0", "accelerate==1.15.0", "trl==1.16.0", "datasets==5.2.0"]


@pytest.mark.parametrize(("fields", "deepspeed", "packages"), [
    ({"stack": "hf"}, False, [*HF, "peft==0.21.2"]),
    ({"stack": "hf", "method": "qlora"}, True, [*HF, "peft==0.21.2", "bitsandbytes>=0.45", "deepspeed==0.19.8"]),
    ({"stack": "hf", "method": "full", "loss": "fused-linear"}, False, [*HF, "liger-kernel"]),
    ({"stack": "torchtune", "optimizer": "adamw-8bit"}, False,
     ["torch>=2.6", "torchtune>=0.6", "torchao>=0.13,<0.16", "bitsandbytes>=0.45"]),
    ({"stack": "torchtitan", "method": "full", "precision": "fp8-mixed", "gpu": "h100-sxm"}, False,
     ["torch>=2.7", "torchtitan==0.1.0", "tyro", "tensorboard", "torchao>=0.9"]),
    ({"stack": "unsloth"}, False, ["unsloth==2026.10.9", "datasets==5.2.0"]),
    ({"stack": "axolotl", "attention": "flash"}, True, ["axolotl[deepspeed,flash-attn]==0.18.0"]),
    ({"stack": "axolotl"}, False, ["axolotl==0.18.0"]),
])
def test_each_stack_installs_its_own_packages(fields, deepspeed, packages):
    s = scenario_from({**BASE, **fields})
    assert STACKS[s.stack].packages(s, lambda: deepspeed) == packages


def test_megatron_runs_in_its_container_and_the_others_from_pip():
    assert STACKS["megatron"].container.startswith("Megatron-LM d98e8a64ddf3 (https://github.com/NVIDIA/Megatron-LM.git)"
                                                   " in nvcr.io/nvidia/pytorch:26.06-py3")
    assert [name for name in STACKS if STACKS[name].container] == ["megatron"]


def test_the_stacks_that_never_run_deepspeed_do_not_ask():
    """torchtune, torchtitan and Unsloth's packages do not depend on DeepSpeed, so the launchers' backend (which
    refuses some layouts in a sentence of its own) is not asked for them."""
    def never() -> bool:
        raise AssertionError("asked")

    for name in ("torchtune", "torchtitan", "unsloth"):
        s = scenario_from({**BASE, "stack": name, "method": "full" if name == "torchtitan" else "lora"})
        assert STACKS[name].packages(s, never)
