"""Each stack's defaults that depend on other fields live in its recipe (``Recipe.fill``), beside its plain defaults
and its refusals; the function that applies them (``scenario.stacks.stack_fills``) names no stack."""

from __future__ import annotations

import inspect
import re

import pytest

from gpuplan.scenario import Scenario, scenario_from
from gpuplan.scenario.describe import defaults_said
from gpuplan.scenario.stacks import BASE, RECIPES, defaults_in_force, reason, stack_fills

TRAIN = {"model": "llama-3.1-8b", "task": "train"}


def test_the_resolver_names_no_stack():
    source = inspect.getsource(stack_fills)
    names = "|".join(re.escape(n) for n in RECIPES)
    assert not re.search(rf"""["'](?:{names})["']""", source)
    assert sorted(n for n, r in RECIPES.items() if r.fill) == ["ai-toolkit", "axolotl", "hf", "kohya", "megatron",
                                                           "torchtitan", "unsloth"]


@pytest.mark.parametrize(("given", "field", "value"), [
    ({"stack": "hf", "method": "qlora"}, "grad_checkpointing", "full"),  # prepare_model_for_kbit_training
    ({"stack": "hf", "method": "lora"}, "grad_checkpointing", "none"),
    ({"stack": "hf", "method": "qlora", "qlora_fp32_upcast": False}, "grad_checkpointing", "none"),
    ({"stack": "axolotl", "method": "full"}, "precision", "bf16-true"),  # bf16: true loads bf16 weights
    ({"stack": "axolotl", "method": "full", "num_gpus": 2, "sharding": "zero3"}, "precision", "bf16-mixed"),
    ({"stack": "axolotl", "method": "qlora", "num_gpus": 2, "sharding": "fsdp"}, "qlora_fp32_upcast", True),
    ({"stack": "axolotl", "method": "qlora"}, "qlora_fp32_upcast", False),
    ({"stack": "unsloth", "method": "lora", "seq_len": 512}, "activation_offload", True),
    ({"stack": "unsloth", "method": "lora", "seq_len": 256}, "activation_offload", False),  # below 512 tokens
    ({"stack": "torchtitan", "method": "full", "num_gpus": 4}, "sharding", "fsdp2"),  # data_parallel_shard -1
    ({"stack": "torchtitan", "method": "full", "num_gpus": 4, "tp": 4}, "sharding", None),  # no DP rank left
    ({"stack": "megatron", "method": "full", "num_gpus": 8, "tp": 2}, "sharding", "zero1"),  # distributed optimizer
    ({"stack": "megatron", "method": "full", "num_gpus": 8, "tp": 8}, "sharding", None),
    ({"stack": "megatron", "method": "full", "num_gpus": 8, "precision": "fp8-mixed", "gpu": "h100-sxm"},
     "fp8_recipe", "delayed"),
    ({"stack": "megatron", "method": "full", "num_gpus": 8}, "fp8_recipe", None),
])
def test_each_stacks_dependent_default(given, field, value):
    s = scenario_from({**TRAIN, **given})
    assert getattr(s, field) == value


def test_kohya_trains_the_text_encoders_of_a_lora_and_not_of_a_full_fine_tune():
    base = {"task": "train", "stack": "kohya", "seq_len": 2048, "num_gpus": 1, "num_nodes": 1, "tp": 1, "pp": 1,
            "cp": 1}
    assert stack_fills({**base, "method": "lora"})["text_encoders"] == "trained"
    assert stack_fills({**base, "method": "full"})["text_encoders"] == "frozen"


# every stack over the fields its fills depend on: method, GPUs (and so sharding), length, precision, loss
WALK = [{"method": method, "num_gpus": gpus, **extra} for method in ("full", "lora", "qlora") for gpus in (1, 8)
        for extra in ({}, {"seq_len": 256}, {"precision": "fp8-mixed"}, {"loss": "chunked"}, {"tp": 2},
                      {"sharding": "fsdp"} if gpus > 1 else {"cp": 1})]


def _walked():
    for stack in RECIPES:
        for given in WALK:
            yield scenario_from({**TRAIN, "stack": stack, **given})


def test_every_default_a_stack_fills_is_said_with_its_reason():
    """Walk every stack's defaults: each field its recipe fills (``stack_fills``) is one its sentence names
    (``Recipe.said``), and each value that is not BASE's (the switches left off, bf16 autocast) says why."""
    unsaid, unexplained = set(), set()
    for s in _walked():
        recipe = RECIPES[s.stack]
        given = {k: getattr(s, k) if k in s.model_fields_set else f.default for k, f in Scenario.model_fields.items()}
        unsaid |= {(s.stack, k) for k in stack_fills(given) if k not in s.model_fields_set and k not in recipe.said}
        for name in recipe.said:
            value = getattr(s, name)
            if name not in s.model_fields_set and value not in (None, BASE.get(name)) and not reason(s.stack, name,
                                                                                                    value):
                unexplained.add((s.stack, name, value))
    assert not unsaid and not unexplained, (unsaid, unexplained)


@pytest.mark.parametrize(("given", "said"), [
    ({"stack": "torchtitan", "method": "full", "num_gpus": 8},
     "sharding fsdp2 (config_manager.py's data_parallel_shard_degree -1: FSDP2 over every data-parallel rank)"),
    ({"stack": "megatron", "method": "full", "num_gpus": 8},
     "sharding zero1 (NeMo's recipes/optim/adam.py sets use_distributed_optimizer=True: master weights and Adam "
     "moments sharded over DP x CP)"),
    ({"stack": "megatron", "method": "full", "num_gpus": 8, "precision": "fp8-mixed"},
     "fp8_recipe delayed (NeMo's DtypeConfig fp8_recipe 'delayed': Transformer Engine's DelayedScaling)"),
])
def test_the_stacks_sharding_and_fp8_recipe_are_said_with_their_reason(given, said):
    s = scenario_from({**TRAIN, **given})
    assert said in defaults_in_force(s)
    field, value = said.split(" (")[0].split(" ")
    assert f"{field.replace('_', ' ')} {value} (the {s.stack} recipe's default: " in "|".join(defaults_said(s))
    # given, the field is the user's: not said as the stack's
    assert field not in (defaults_in_force(scenario_from({**TRAIN, **given, field: value})) or "")


def test_a_sharding_from_the_gpu_count_is_not_a_stacks_default():
    s = scenario_from({**TRAIN, "stack": "hf", "num_gpus": 8})
    assert "sharding" not in defaults_in_force(s) and "sharding ddp (from the GPU count)" in defaults_said(s)


def test_the_resolved_line_names_the_card_as_every_plan_does():
    """Walk s16: `simulate --gpu 3090` opened with '1 x 3090' (the name as typed) where `estimate --gpu 3090`
    says '1 x rtx-3090': describe read the unresolved scenario. It names the catalog's card whatever was typed."""
    from gpuplan.model.catalog import load_model
    from gpuplan.scenario.describe import describe

    m = load_model("qwen3-0.6b")
    for typed, said in (("3090", "1 x rtx-3090"), ("RTX 3090", "1 x rtx-3090"), ("h100", "1 x h100-sxm")):
        assert said in describe(scenario_from({**TRAIN, "model": "qwen3-0.6b", "gpu": typed}), m)
