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
