"""What each stack shards with is one fact of its recipe (``Recipe.shardings``): its refusal of another sharding
reads it (the sentences are the stacks' own, unchanged), recommend's search (``Stack.shardings``) is read from it
(a stack's own subset only where the recipe runs every sharding), and ``Recipe.fsdp_only`` follows from it."""

from __future__ import annotations

import pytest

from gpuplan.scenario import scenario_from
from gpuplan.scenario.stacks import RECIPES, refusal
from gpuplan.stacks import STACKS

TRAIN = {"model": "llama-3.1-8b", "task": "train", "num_gpus": 8}
OTHERS = ("ddp", "zero1", "zero2", "zero3", "fsdp1", "fsdp2")
UNSLOTH = "Unsloth trains on one GPU (or DDP replicas): for sharded training use stack hf or axolotl"
DIFFUSION = "kohya trains a diffusion model on one GPU, or as DDP replicas: use sharding single or ddp"
MEGATRON = ("Megatron-Core shards optimizer states with its distributed optimizer (sharding zero1) or replicates them "
            "(ddp); gpuplan does not model its FSDP: use zero1 or ddp, not ")


def _said(stack: str, sharding: str, **given) -> str | None:
    method = "full" if stack in ("torchtitan", "megatron") else "lora"
    return refusal(scenario_from({**TRAIN, "stack": stack, "method": method, "sharding": sharding, **given}))


@pytest.mark.parametrize("sharding", OTHERS)
@pytest.mark.parametrize(("stack", "runs", "sentence"), [
    ("hf", OTHERS, None), ("axolotl", OTHERS, None), ("pytorch", OTHERS, None),
    ("unsloth", ("ddp",), UNSLOTH), ("kohya", ("ddp",), DIFFUSION),
    ("torchtune", ("fsdp2",), "torchtune shards with FSDP2 only: use sharding fsdp (or fsdp2), not "),
    ("torchtitan", ("ddp", "fsdp2"), "torchtitan shards with FSDP2: use sharding fsdp (or fsdp2), not "),
    ("megatron", ("ddp", "zero1"), MEGATRON),
])
def test_each_stack_refuses_the_shardings_it_does_not_run_in_its_own_words(stack, runs, sentence, sharding):
    said = _said(stack, sharding)
    if sharding in runs:
        assert said is None
    else:
        assert said.startswith(sentence) and (sharding in said or not sentence.endswith("not "))


def test_torchtune_before_0_3_ran_fsdp1():
    assert _said("torchtune", "fsdp1", torchtune_version="0.2.1") is None
    assert _said("torchtune", "fsdp2", torchtune_version="0.2.1").startswith(
        "torchtune 0.2.1 wrapped its distributed recipes in FSDP1 (FSDP2 came in 0.3): use sharding fsdp1")


def test_recommend_searches_only_what_each_stack_runs():
    for name, stack in STACKS.items():
        recipe = RECIPES[name]
        searched = {recipe.fsdp if s == "fsdp" else s for s in stack.shardings}
        assert searched <= set(recipe.shardings), name
    # where the recipe runs only some, the search is the recipe's, by the word the scenario takes (fsdp)
    assert {n: STACKS[n].shardings for n in ("unsloth", "torchtune", "torchtitan", "megatron")} == {
        "unsloth": ("ddp",), "torchtune": ("fsdp",), "torchtitan": ("ddp", "fsdp"), "megatron": ("ddp", "zero1")}
    # where it runs every one, the stack's own subset: the Trainer's DDP and ZeRO, your own loop's DDP and FSDP
    assert {n: STACKS[n].shardings for n in ("hf", "axolotl", "pytorch")} == {
        "hf": ("ddp", "zero2", "zero3"), "axolotl": ("ddp", "zero2", "zero3"), "pytorch": ("ddp", "fsdp")}
    assert sorted(n for n, r in RECIPES.items() if r.fsdp_only) == ["torchtitan", "torchtune"]
