"""What a sharding splits, and how its ranks meet once a step, are its profile's answers (``Sharding.shards_*``,
``Sharding.step_sync``): the speed's data-parallel collectives ask them instead of naming the stages. The table is
the ZeRO paper's (Rajbhandari et al. 2020, section 5) and DeepSpeed's ``stage_1_and_2.py`` / ``stage3.py``:
stage 1 partitions the optimizer states, stage 2 the gradients too, stage 3 the weights too; FSDP's FULL_SHARD
splits all three as stage 3 does."""

from __future__ import annotations

import inspect
import re

import pytest

from gpuplan.scenario import scenario_from
from gpuplan.sharding import sharding_for
from gpuplan.speed import training

# sharding -> (weights, gradients, optimizer states) split, the step's collective, updated weights gathered
TABLE = {
    "ddp": ((False, False, False), "all-reduce", False),
    "zero1": ((False, False, True), "reduce-scatter", True),
    "zero2": ((False, True, True), None, True),
    "zero3": ((True, True, True), None, False),
    "fsdp1": ((True, True, True), None, False),
    "fsdp2": ((True, True, True), None, False),
}


@pytest.mark.parametrize("sharding", list(TABLE))
def test_each_sharding_says_what_it_splits_and_how_its_ranks_meet(sharding):
    s = scenario_from({"model": "llama-3.1-8b", "task": "train", "method": "full", "stack": "hf", "num_gpus": 8,
                       "sharding": sharding})
    split, collective, gathered = TABLE[sharding]
    holder = sharding_for(s)
    assert (holder.shards_weights(s), holder.shards_gradients(s), holder.shards_optimizer(s)) == split
    assert holder.step_sync(s) == (collective, gathered)
    assert holder.shards(s) == tuple(8 if x else 1 for x in split)  # 8 data-parallel ranks


def test_one_gpu_splits_nothing_and_would_all_reduce_as_ddp():
    # the speed times no collective on one rank (data_parallel_s returns before asking); the answer is DDP's
    s = scenario_from({"model": "llama-3.1-8b", "task": "train", "method": "lora", "stack": "hf"})
    holder = sharding_for(s)
    assert holder.shards(s) == (1, 1, 1) and holder.step_sync(s) == ("all-reduce", False)


def test_the_speeds_collectives_name_no_sharding():
    source = inspect.getsource(training)
    assert not re.search(r"""["'](?:single|ddp|zero[123]|fsdp[12]?)["']""", source)
    assert "resolved_sharding" not in source
