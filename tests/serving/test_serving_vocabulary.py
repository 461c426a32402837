"""One serving scenario, every command: estimate, recommend, capacity, launch and the web API show the same KV
tokens, concurrent requests, time to first token and streaming tokens/s per user (the engine profiles' kv_pool and
the speed layer are the one source of each)."""

import pytest

pytest.importorskip("fastapi")
pytest.importorskip("numpy")

from fastapi.testclient import TestClient

from gpuplan import estimate
from gpuplan.launchers.plan import launch_plan
from gpuplan.model.catalog import load_model
from gpuplan.plan.capacity import capacity
from gpuplan.scenario import scenario_from
from gpuplan.serving.workload import load_workload
from gpuplan.web.app import create_app

# 16 users of 2,000-token prompts and 300-token answers on one H100, vLLM and SGLang; max_model_len as capacity
# would set it
FIELDS = {"model": "llama-3.1-8b", "task": "infer", "engine": "vllm", "gpu": "h100-sxm", "batch_size": 16,
          "prompt_tokens": 2000, "output_tokens": 300, "max_model_len": 2300}


@pytest.mark.parametrize("engine", ["vllm", "sglang"])
@pytest.mark.parametrize("prefix", [0, 1500])  # 1,500 tokens of the prompts shared: capacity takes it from the scenario
def test_one_scenario_gives_the_same_serving_numbers_in_every_command(engine, prefix):
    fields = {**FIELDS, "engine": engine, **({"shared_prefix_tokens": prefix} if prefix else {})}
    r = estimate(fields, advise=False)
    want = {"kv_tokens": r.memory.max_context_tokens, "concurrency": r.memory.max_concurrency,
            "ttft": r.speed.ttft_s, "streaming": r.speed.streaming_tokens_per_s_per_user}
    assert want["concurrency"] >= 16 and want["kv_tokens"] > 16 * 2300
    assert want["streaming"] == pytest.approx(1 / r.speed.step_time_s)
    if prefix:  # the cached prefix counts: a quarter of the prompt left to prefill, its blocks held once
        plain = estimate({**FIELDS, "engine": engine}, advise=False)
        assert r.speed.ttft_s < 0.4 * plain.speed.ttft_s
        # 2,300-token requests: 144 blocks alone, 144 - 93 = 51 beside the shared prefix (SGLang 2300 vs 800): x2.8
        assert r.memory.max_concurrency > 2.5 * plain.memory.max_concurrency

    client = TestClient(create_app(), base_url="http://127.0.0.1")
    api = client.post("/api/estimate", json=fields).json()
    assert {"kv_tokens": api["memory"]["max_context_tokens"], "concurrency": api["memory"]["max_concurrency"],
            "ttft": api["speed"]["ttft_s"], "streaming": api["speed"]["streaming_tokens_per_s_per_user"]} == want

    rec = client.post("/api/recommend", json={"scenario": fields, "constraints": {"gpus": ["h100-sxm"],
                                                                                   "max_gpus": 1}}).json()
    row = next(x for x in rec["setups"] if x["num_gpus"] == 1 and not x["techniques"])
    assert {"kv_tokens": row["kv_tokens"], "concurrency": row["max_concurrency"], "ttft": row["ttft_s"],
            "streaming": row["tokens_per_s_per_user"]} == pytest.approx(want)

    launch = launch_plan(fields).predictions()
    assert launch["kv_tokens"] == want["kv_tokens"] and launch["max_concurrency"] == want["concurrency"]
    assert launch["ttft_s"] == pytest.approx(want["ttft"], abs=1e-4)
    assert launch["streaming_tokens_per_s_per_user"] == pytest.approx(want["streaming"], abs=0.01)

    w = load_workload(None, {"users": 16, "prompt_tokens": 2000, "output_tokens": 300, "num_requests": 80,
                             "ttft_s": 60, "tpot_s": 1})
    s = scenario_from({k: v for k, v in fields.items() if k not in ("gpu", "batch_size", "output_tokens")})
    plan = next(p for p in capacity(s, load_model("llama-3.1-8b"), w, gpu_ids=("nvidia-h100-sxm5-80gb",),
                                    max_gpus=1) if p.tp == 1 and p.quant is None)
    assert plan.max_users == 16
    assert {"kv_tokens": plan.kv_tokens, "concurrency": plan.max_concurrency, "ttft": plan.ttft_alone_s,
            "streaming": plan.streaming_tokens_per_s_per_user} == pytest.approx(want)
