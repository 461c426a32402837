"""One checkpoint size a plan (session 18's architecture walk): the plan's own ``checkpoint_bytes`` is what its
spot plan, its launch files' disk and its recipe read, where each computed its own copy from the scenario; the
16-bit copy beside an fp32 master is a fact of the sharding's or the stack's profile, not a stack name in the
market (``s.stack == "megatron"`` in ``market/cost.state_bytes``)."""

from __future__ import annotations

import pytest

from gpuplan import estimate
from gpuplan.plan.launch import run_of
from gpuplan.sharding import SHARDINGS, master_partition
from gpuplan.stacks import STACKS

TINYLLAMA = 1_100_048_384  # model_size 1B: 2 x 32,000 x 2,048 + 22 x (...) + 2,048 (tests/market/test_job.py)
PRETRAIN = {"model_size": "1B", "task": "train", "gpu": "h100-sxm", "num_gpus": 8, "train_tokens": 5e10,
            "pricing": "spot"}


def test_the_plan_says_its_checkpoint_once_and_its_readers_read_it():
    """torchtitan's FSDP2 1B pretrain: fp32 weights and two fp32 moments, 12 B x 1,100,048,384 = 13.2 GB; the spot
    plan writes it in 13.2 s at 1 GB/s, the launch files size their disk with it, and the recipe says it."""
    plan = estimate(PRETRAIN, advise=False)
    assert plan.checkpoint_bytes == 12 * TINYLLAMA
    assert plan.cost.spot.write_h == pytest.approx(12 * TINYLLAMA / 1e9 / 3600, rel=1e-12)  # disk_gbs 1
    assert run_of(plan).checkpoint_gb == pytest.approx(12 * TINYLLAMA / 1e9, rel=1e-12)


def test_a_serving_plan_writes_no_checkpoint():
    plan = estimate({"model": "llama-3.1-8b", "task": "infer", "gpu": "h100-sxm"}, advise=False)
    assert plan.checkpoint_bytes == 0.0 and run_of(plan).checkpoint_gb == 0.0


def test_a_16bit_copy_beside_the_fp32_master_is_a_profile_fact():
    """DeepSpeed ZeRO keeps bf16 model states beside its fp32 master partition; Megatron-Core keeps bf16 parameters
    beside its distributed optimizer's fp32 main parameters; the others train fp32 weights under autocast."""
    assert {name for name, sharding in SHARDINGS.items() if sharding.master_partition} == {"deepspeed"}
    assert {name for name in STACKS if STACKS[name].master_partition} == {"megatron"}
    megatron = estimate({**PRETRAIN, "stack": "megatron"}, advise=False)
    assert master_partition(megatron.setup.scenario)
    assert megatron.checkpoint_bytes == (2 + 4 + 8) * TINYLLAMA
    assert not master_partition(estimate(PRETRAIN, advise=False).setup.scenario)
