"""Whole jobs: time to train = tokens / throughput, plus the evaluation passes and checkpoint saves asked for, each
its own part of the hours and the cost (gpuplan/market/job.py). Checked by hand on the bundled MLPerf-shaped
Llama-3.1-8B pre-training (256 B200, global batch 128 x 4 x 1 = 512 sequences of 8,192 tokens = 4,194,304 tokens
per step)."""

from __future__ import annotations

import pytest

from gpuplan import GpuplanError, estimate
from gpuplan.scenario import load_scenario

EXAMPLE = "examples/mlperf-llama31-8b-pretrain.yaml"


def _plan(**fields):
    s = load_scenario(EXAMPLE)
    return estimate({**s.model_dump(exclude_unset=True), **fields}, advise=False)


def test_default_is_the_training_time_alone():
    """Without eval_interval and save_interval the hours are train_tokens / tokens_per_s, as before."""
    plan = _plan()
    assert plan.cost.job is None
    assert plan.cost.hours == pytest.approx(1e10 / plan.speed.tokens_per_s / 3600, rel=1e-12)


def test_evaluation_and_checkpoint_pauses_by_hand():
    """1e10 tokens = ceil(1e10 / 4,194,304) = 2,385 steps. Every 100 steps an evaluation of NeMo's 32 global
    batches (134,217,728 tokens): 23 passes, each a forward, 2·N + 4·L·a·d·s FLOPs per token against the step's
    6·N + 12·L·a·d·s (selective recompute of core attention adds no matmul): exactly a third of a training token's
    time. Every 500 steps a save of 8,030,261,248 parameters x 14 B (bf16 weights, fp32 master and two Adam
    moments) = 112.42 GB at disk_gbs 1 GB/s = 112.4 s: 4 saves."""
    base = _plan()
    plan = _plan(eval_interval=100, save_interval=500)
    job, tps = plan.cost.job, plan.speed.tokens_per_s
    assert (job.steps, job.evaluations, job.saves) == (2385, 23, 4)
    assert job.eval_tokens == 32 * 4_194_304
    assert job.train_h == pytest.approx(base.cost.hours, rel=1e-12)
    assert job.eval_h == pytest.approx(23 * 134_217_728 / 3 / tps / 3600, rel=1e-9)
    assert job.checkpoint_h == pytest.approx(4 * 8_030_261_248 * 14 / 1e9 / 3600, rel=1e-9)
    assert plan.cost.hours == pytest.approx(job.train_h + job.eval_h + job.checkpoint_h, rel=1e-12)
    assert plan.cost.usd_total == pytest.approx(plan.cost.hours * plan.cost.usd_per_hour, rel=1e-12)
    assert plan.to_dict()["cost"]["job"]["saves"] == 4


def test_eval_tokens_given():
    plan = _plan(eval_interval=1000, eval_tokens=1e6)
    assert plan.cost.job.evaluations == 2 and plan.cost.job.eval_tokens == 1e6


@pytest.mark.parametrize("fields, message", [
    ({"eval_tokens": 1e6}, "give eval_interval"),
    ({"stack": "hf", "eval_interval": 10}, "give eval_tokens"),
])
def test_evaluation_needs_its_size(fields, message):
    with pytest.raises(GpuplanError, match=message):
        estimate({"model": "llama-3.1-8b", "task": "train", "method": "lora", "gpu": "h100-sxm",
                  "stack": "megatron", **fields}, advise=False)


def test_spot_saves_at_the_scenario_interval_counted_once():
    """On spot, Daly's expected wall time (Daly 2006, eq. 20: T = M e^(R/M) (e^((tau + delta)/M) - 1) W / tau)
    already writes a checkpoint every tau hours of work W. With save_interval 500 the saves the job asks for are
    those checkpoints: tau = 500 steps x 4,194,304 tokens / tokens/s, W the training alone (0.891 h here), delta
    = 112.42 GB at 1 GB/s, R = 10 min, M = 6 h. Before, W held the 4 saves too (their 0.125 h, counted twice) and
    tau was Daly's optimum (35 min here), which the launch files did not use (they save every 500 steps)."""
    import math

    from gpuplan.plan.recipe import plan_recipe

    plan = _plan(save_interval=500, pricing="spot", mtbi_hours=6)
    job, spot, tps = plan.cost.job, plan.cost.spot, plan.speed.tokens_per_s
    tau = 500 * 4_194_304 / tps / 3600
    delta, restart, mtbi = 8_030_261_248 * 14 / 1e9 / 3600, 10 / 60, 6.0
    wall = mtbi * math.exp(restart / mtbi) * math.expm1((tau + delta) / mtbi) * job.train_h / tau
    assert job.train_h == pytest.approx(1e10 / tps / 3600, rel=1e-12) and job.saves == 4
    assert spot.interval_h == pytest.approx(tau, rel=1e-12)
    assert plan.cost.hours == pytest.approx(wall, rel=1e-9)
    assert plan.cost.usd_total == pytest.approx(wall * plan.cost.usd_per_hour, rel=1e-9)
    assert plan.cost.usd_per_million_tokens == pytest.approx(wall * plan.cost.usd_per_hour / 1e10 * 1e6, rel=1e-9)
    assert plan_recipe(plan).save_steps == 500  # the recipe saves where the time counts the saves


@pytest.mark.parametrize("fields", [{"save_interval": 500}, {"eval_interval": 100, "save_interval": 300},
                                    {"pricing": "spot", "eval_interval": 100},
                                    {"pricing": "spot", "save_interval": 500, "mtbi_hours": 6}])
def test_the_explanation_counts_the_jobs_parts(fields):
    """The page's explanation of the hours and the $ per million tokens gives the plan's own numbers when the job
    has evaluation passes or checkpoint saves (one road): before, its formula was train_tokens / tokens/s alone
    (x the spot overhead): 0.891 h against the plan's 1.016 h with its 4 saves of 112.4 s each."""
    from gpuplan.explain.words import explain

    plan = _plan(**fields)
    numbers = explain(plan).numbers
    for key in ("cost.hours", "cost.usd_per_million_tokens", "cost.usd_total"):
        assert numbers[key].computed == pytest.approx(numbers[key].value, rel=1e-9), numbers[key].substituted


@pytest.mark.parametrize("fields, per_param", [
    ({"model_size": "1B"}, 4 + 8),  # torchtitan FSDP2: fp32 parameters and moments, no 16-bit copy kept
    ({"model_size": "1B", "stack": "hf"}, 4 + 8),  # the HF Trainer, autocast: fp32 weights + optimizer.pt
    ({"model_size": "1B", "stack": "hf", "sharding": "zero3", "num_gpus": 8}, 2 + 4 + 8),  # DeepSpeed bf16 + master
    ({"model_size": "1B", "stack": "megatron"}, 2 + 4 + 8),  # Megatron-Core: bf16 params, fp32 main params in the opt.
    ({"model_size": "1B", "stack": "torchtune"}, 2 + 2 * 2),  # bf16-true: bf16 weights and bf16 AdamW moments
])
def test_a_checkpoint_holds_the_state_as_the_trainer_keeps_it(fields, per_param):
    """Session 17's second walk (user C, a 1B pretrain on spot): the torchtitan plan's checkpoint was 15.4 GB, 14 B
    for each of TinyLlama-1B's 1,100,048,384 parameters (2 x 32,000 x 2,048 + 22 x (2 x 2,048^2 + 2 x 2,048 x 256
    + 3 x 2,048 x 5,632 + 2 x 2,048) + 2,048), as DeepSpeed saves it (bf16 weights, fp32 master, two moments). Its
    memory holds fp32 weights and moments and no 16-bit copy (FSDP2 casts for compute), so its model and optimizer
    state dicts are 12 B: 13.2 GB. The size sets Daly's spot interval and the saves' pause."""
    from gpuplan.model.synthetic import param_count

    assert param_count("1B") == 1_100_048_384
    plan = estimate({"task": "train", "train_tokens": 1e9, **fields}, advise=False)
    assert plan.checkpoint_bytes == 1_100_048_384 * per_param


def test_the_pretrain_plans_spot_checkpoint_is_its_fp32_state():
    """The recipe line user C read: 12 B x 1,100,048,384 = 13.2 GB written in 13 s at 1 GB/s (was 15.4 GB)."""
    plan = estimate({"model_size": "1B", "task": "train", "gpu": "h100-sxm", "num_gpus": 8, "train_tokens": 5e10,
                     "pricing": "spot"}, advise=False)
    assert plan.cost.spot.write_h == pytest.approx(12 * 1_100_048_384 / 1e9 / 3600, rel=1e-12)


def test_a_size_between_shapes_says_which_shape_it_took():
    """Session 17's second walk (user C): `--model-size 2B` planned OpenLLaMA 3B's shape, 3,426,473,600 parameters
    = 2 x 32,000 x 3,200 + 26 x (4 x 3,200^2 + 3 x 3,200 x 8,640 + 2 x 3,200) + 3,200, 1.71x the 2B asked, and said
    only "synthetic 3B config". A size that is a shape's own name says nothing more (3B is 14 % off its label)."""
    from gpuplan.model.synthetic import param_count

    assert param_count("3B") == 2 * 32_000 * 3_200 + 26 * (4 * 3_200**2 + 3 * 3_200 * 8_640 + 2 * 3_200) + 3_200
    job = {"task": "train", "gpu": "h200", "num_gpus": 16, "train_tokens": 4e10}
    said = estimate({"model_size": "2B", **job}, advise=False).setup.defaults
    assert ("model_size 2B: no published shape of that size; the nearest is 3B (3,426,473,600 parameters, 1.71x the "
            "size asked): name one of 125M, 350M, 760M, 1B, 3B, 7B, 13B, 34B, 70B to choose") in said
    plain = estimate({"model_size": "3B", **job}, advise=False).setup.defaults
    assert not any(n.startswith("model_size") for n in plain)
