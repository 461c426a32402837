"""Where a stack's launch files come from and whether it builds its own decoder are facts of its profile
(:attr:`gpuplan.stacks.base.Stack.launch_targets`, :attr:`~gpuplan.stacks.base.Stack.own_model`), as the sharding
facts are of the sharding's (s16-walk): the launch targets' ``applies()``, the trainer's refusal, the target -> stack
map ``launch --target`` plans by, the fake-tensor simulation and the probe read them, where each named the stacks
(``s.stack != "axolotl"``, ``OWN_CONFIG``, ``OWN_MODELS``, ``("torchtune", "torchtitan")``): 42 stack-name lines
outside ``stacks/`` -> 29 (``bench/name_branches.py``). Adding a stack with launch files is its profile's line."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from gpuplan.launchers import TARGETS, stack_of
from gpuplan.scenario import scenario_from
from gpuplan.sim.stacks import own_model
from gpuplan.stacks import STACKS

SRC = Path(__file__).resolve().parents[2] / "src" / "gpuplan"


def test_each_target_writes_the_stack_its_profile_names():
    """The map the targets plan by, read back: the same as the one written out by hand before."""
    assert stack_of() == {"trainer": "hf", "deepspeed": "hf", "accelerate": "hf", "torchrun": "hf",
                          "torchtune": "torchtune", "torchtitan": "torchtitan", "axolotl": "axolotl",
                          "unsloth": "unsloth", "megatron": "megatron", "nemo": "megatron", "diffusers": "diffusers",
                          "kohya": "kohya", "simpletuner": "simpletuner", "ai-toolkit": "ai-toolkit"}
    assert STACKS["pytorch"].launch_targets == ()  # your own loop: no files
    assert all(t in TARGETS for p in STACKS.values() for t in p.launch_targets)


def test_own_models_are_torchtune_and_torchtitan():
    own = {name for name, p in STACKS.items() if p.own_model}
    assert own == {"torchtune", "torchtitan"}
    assert own_model(scenario_from({"model": "llama-3.2-1b", "task": "train", "stack": "torchtune"}))
    assert not own_model(scenario_from({"model": "llama-3.2-1b", "task": "train", "stack": "hf"}))
    assert not own_model(scenario_from({"model": "llama-3.2-1b", "task": "infer"}))


@pytest.mark.parametrize("folder", ["launchers", "sim"])
def test_applies_and_the_simulation_name_no_stack_to_choose(folder):
    """No ``applies()`` compares the plan's stack with a name, and the simulation names no own-model stack list."""
    for path in (SRC / folder).glob("*.py"):
        text = path.read_text(encoding="utf-8")
        assert not re.search(r"s\.stack (!=|==) \"(axolotl|megatron|torchtitan|torchtune|unsloth)\":\n\s+return \"",
                             text), path
        assert "OWN_MODELS" not in text and "OWN_CONFIG" not in text, path


def test_the_trainer_target_on_a_stack_with_its_own_config_says_which():
    from gpuplan.launchers import launch_plan, trainer

    plan = launch_plan({"model": "llama-3.2-1b", "task": "train", "stack": "torchtune", "method": "lora",
                        "gpu": "h100-sxm"})
    assert plan.stack_targets == ("torchtune",)
    assert trainer.applies(plan) == ("stack torchtune runs from its own config, not the Trainer's: use --target "
                                     "torchtune")
    assert TARGETS["torchtune"].applies(plan) is None and TARGETS["axolotl"].applies(plan) is not None
