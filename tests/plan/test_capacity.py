"""capacity's rows are readings of plans (gpuplan/plan/capacity.py): each setup's KV pool and scheduler limits come
from its memory plan (one memory report each), and each row's TTFT alone and streaming speed from the plan at the
load found, the same plan ``estimate`` makes of that scenario."""

from __future__ import annotations

import pytest

import gpuplan
from counting import MEMORY, counting
from gpuplan.model.catalog import load_model
from gpuplan.plan.capacity import capacity, setups
from gpuplan.scenario import scenario_from
from gpuplan.serving.workload import load_workload

PLANS = "plan/plan.py:memory_plan"


@pytest.mark.parametrize("engine", ["vllm", "sglang"])
def test_capacity_rows_read_their_plans(engine):
    m = load_model("llama-3.1-8b")
    s = scenario_from({"model": "llama-3.1-8b", "task": "infer", "engine": engine})
    w = load_workload(None, {"rate_rps": 2, "prompt_tokens": 1000, "output_tokens": 100, "ttft_s": 2,
                             "tpot_s": 0.1, "num_requests": 60})
    gpus = ("nvidia-l40s", "nvidia-h100-sxm5-80gb")
    with counting(MEMORY, PLANS) as seen:
        rows = capacity(s, m, w, gpu_ids=gpus, max_gpus=2, simulate_top=2)
    considered = len(setups(s, m, gpus, 2))
    assert considered == 4 and len(rows) == 2
    # a memory plan per setup considered, one per row at its load; each one memory report
    assert seen[PLANS] == seen[MEMORY] == considered + len(rows)
    for row in rows:
        plan = row.plan
        sc = plan.setup.scenario
        assert (sc.gpu, sc.tp, sc.engine) == (row.gpu_id, row.tp, engine)
        assert sc.batch_size == max(1, round(row.max_rate_rps * row.e2e_s))  # the load found, by Little's law
        assert row.kv_tokens == plan.memory.max_context_tokens == plan.pool.kv_tokens > 0
        assert row.max_concurrency == plan.memory.max_concurrency
        assert row.ttft_alone_s == plan.speed.ttft_s
        assert row.streaming_tokens_per_s_per_user == plan.speed.streaming_tokens_per_s_per_user
        again = gpuplan.estimate(sc.model_dump(exclude_unset=True), advise=False)
        assert again.speed.ttft_s == pytest.approx(row.ttft_alone_s, rel=1e-12)
        assert again.memory.max_concurrency == row.max_concurrency


def _job(model: str, gpu: str, batch: int, prompt: int, output: int, **scenario):
    m = load_model(model)
    s = scenario_from({"model": model, "task": "infer", "engine": "vllm", **scenario})
    w = load_workload(None, {"batch": batch, "prompt_tokens": prompt, "output_tokens": output})
    return capacity(s, m, w, gpu_ids=(gpu,), max_gpus=1, simulate_top=1)


def test_an_offline_job_is_the_plans_offline_run_priced():
    """capacity --batch (issue 31 item 4): each row is estimate --batch-size's offline run of the batch through
    vLLM's scheduler, on the setup's own pool: 2,000 requests of 1,000 + 200 tokens of Llama-3.1-8B on one RTX 4090,
    whose pool holds 32 such requests, run a few dozen at a time with preemptions; the job costs the instance's
    price for its time (one group per instance here)."""
    (row,) = _job("llama-3.1-8b", "nvidia-geforce-rtx-4090", 2000, 1000, 200)
    run = row.plan.offline
    assert run is not None and run.completed == 2000 and run.num_prompts == 2000
    assert (row.job_s, row.job_peak_running, row.job_preemptions) == (run.duration, run.peak_running,
                                                                       run.preemptions)
    assert row.max_concurrency == 32 and 32 <= row.job_peak_running < 64 and row.job_preemptions > 0
    assert row.replicas_per_instance == 1
    assert row.usd_per_job == pytest.approx(row.usd_per_hour * row.job_s / 3600, rel=1e-12)
    assert row.output_tokens_per_s == pytest.approx(2000 * 200 / row.job_s, rel=1e-12)
    again = gpuplan.estimate(row.plan.setup.scenario.model_dump(exclude_unset=True), advise=False)
    assert again.offline.duration == pytest.approx(row.job_s, rel=1e-12)


@pytest.mark.parametrize(("version", "cap"), [(None, 1024), ("0.8.5", 256)])
def test_an_offline_job_runs_at_most_the_releases_max_num_seqs(version, cap):
    """vLLM's default cap on running requests by release (vllm/engine/arg_utils.py _set_default_args_v1: 1,024 for
    `vllm serve` on an H100 from 0.9, 256 before): 3,000 short requests of Qwen2.5-0.5B, which the pool could hold
    all of, run at most ``cap`` at a time, in waves, without preemption."""
    extra = {"engine_version": version} if version else {}
    (row,) = _job("qwen2.5-0.5b", "nvidia-h100-sxm5-80gb", 3000, 100, 50, **extra)
    assert row.max_concurrency > 3000
    assert row.job_peak_running == cap and row.job_preemptions == 0
    assert row.plan.offline.running_cap == cap


def test_an_offline_job_takes_the_chunked_prefill_switch():
    """capacity carries the scenario's chunked_prefill into every setup's plan: vLLM 0.6.3 at 65,536 tokens of
    context chunks by default (512 tokens a step); turned off, the profiling run takes 65,536 tokens, so the pool
    is smaller and the job's whole 8,000-token prompts run in steps of their own."""
    on = _job("llama-3.1-8b", "nvidia-h100-sxm5-80gb", 64, 8000, 200, engine_version="0.6.3", max_model_len=65_536)
    off = _job("llama-3.1-8b", "nvidia-h100-sxm5-80gb", 64, 8000, 200, engine_version="0.6.3", max_model_len=65_536,
               chunked_prefill=False)
    assert off[0].plan.setup.scenario.chunked_prefill is False
    assert off[0].plan.memory.engine["max_num_batched_tokens"] == 65_536 > on[0].plan.memory.engine[
        "max_num_batched_tokens"] == 512
    assert off[0].kv_tokens < on[0].kv_tokens and off[0].job_s != on[0].job_s
    assert off[0].job_s == pytest.approx(gpuplan.estimate(off[0].plan.setup.scenario.model_dump(exclude_unset=True),
                                                          advise=False).offline.duration, rel=1e-12)


def test_the_api_and_cli_take_the_switch_and_refuse_it_for_an_engine_without_it():
    with pytest.raises(gpuplan.GpuplanError, match="chunked_prefill takes True or False"):
        gpuplan.api.capacity("llama-3.1-8b", batch=10, prompt_tokens=100, output_tokens=10, chunked_prefill="no")
    with pytest.raises(gpuplan.GpuplanError, match="TensorRT-LLM takes no chunked_prefill true"):
        gpuplan.api.capacity("llama-3.1-8b", engine="trtllm", batch=10, prompt_tokens=100, output_tokens=10,
                             gpus=["h100-sxm"], chunked_prefill=True)
