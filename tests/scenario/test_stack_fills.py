"""Each stack's defaults that depend on other fields live in its recipe (``Recipe.fill``), beside its plain defaults
and its refusals; the resolver that applies them (``scenario.stacks.resolve``) names no stack."""

from __future__ import annotations

import inspect
import re

import pytest

from gpuplan.scenario import scenario_from
from gpuplan.scenario.stacks import RECIPES, resolve

TRAIN = {"model": "llama-3.1-8b", "task": "train"}


def test_the_resolver_names_no_stack():
    source = inspect.getsource(resolve)
    names = "|".join(re.escape(n) for n in RECIPES)
    assert not re.search(rf"""["'](?:{names})["']""", source)
    assert sorted(n for n, r in RECIPES.items() if r.fill) == ["axolotl", "hf", "kohya", "megatron", "torchtitan",
                                                           "unsloth"]


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
    assert resolve({**base, "method": "lora"})["text_encoders"] == "trained"
    assert resolve({**base, "method": "full"})["text_encoders"] == "frozen"
