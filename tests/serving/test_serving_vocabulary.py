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
        server = r.speed.request_overhead_s  # the server path is the same with or without a cached prefix
        assert server == plain.speed.request_overhead_s > 0
        assert r.speed.ttft_s - server < 0.4 * (plain.speed.ttft_s - server)
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


# (engine, its per-request latency outside the steps): vLLM's fitted on its own runs, SGLang's on its own plus its
# TokenizerManager's tokenizing of the 2,048-token prompt at 4 us a token, TensorRT-LLM's borrowed from vLLM's
# (gpuplan/overheads.py)
REQUEST_S = [("vllm", 14.7e-3), ("sglang", 8.06e-3 + 2048 * 4e-6), ("trtllm", 14.7e-3)]


@pytest.mark.parametrize("engine,request_s", REQUEST_S)
@pytest.mark.parametrize("model,gpu", [("llama-3.1-8b", "h100-sxm"), ("qwen3-30b-a3b", "a100-80gb")])
def test_ttft_alone_is_what_one_user_sees(engine, request_s, model, gpu):
    """The speed section's TTFT alone is a user's: the engine's prefill plus its latency per request outside its
    steps, as ``--users 1`` reports it for one fixed-length request at a time (both measure it at the client, as
    vLLM's benchmark_serving does). The prefill alone missed by the whole server path (8-15 ms, 8-25%)."""
    from gpuplan.plan.resolve import resolve
    from gpuplan.speed.inference import step_timer

    fields = {"model": model, "task": "infer", "engine": engine, "gpu": gpu, "users": 1, "prompt_tokens": 2048,
              "output_tokens": 64, "length_spread": 0}
    r = estimate(fields, advise=False)
    alone, one_user = r.speed.ttft_s, r.load.median_ttft_ms / 1e3
    assert r.speed.request_overhead_s == pytest.approx(request_s) == pytest.approx(r.load.per_request_s)
    x = resolve(scenario_from(fields))
    prefill = step_timer(x.scenario, x.model, x.gpu).ttft_s(2048)
    assert alone == pytest.approx(prefill + request_s, rel=1e-12)
    assert r.speed.ttft_burst_s == pytest.approx(alone, rel=1e-12)  # a burst of one is the request alone
    assert alone == pytest.approx(one_user, rel=0.04)  # the step model interpolates the prefill: 1-3.5% apart
    assert abs(prefill - one_user) > 0.06 * one_user  # without the server path the two disagreed


@pytest.mark.parametrize(("prompt", "alone_ms", "chunked_ms"), [(4096, 188.5, 215.2), (8192, 499.3, 571.4),
                                                                (16384, 1548.7, 1706.7)])
def test_a_prompt_longer_than_the_chunk_is_alone_what_one_user_sees(prompt, alone_ms, chunked_ms):
    """vLLM prefills a prompt longer than its step budget (2,048 tokens for Qwen3-30B-A3B on an A100) over several
    steps, each chunk attending to the earlier ones. TTFT alone timed the prompt whole, 10-13 % under the simulated
    user from 8k tokens (review3_s28.md): a chunk's grouped expert GEMMs hold a quarter of the rows (8,192 tokens:
    gemm 198 ms whole, 4 x 67.6 ms chunked; attention 282 ms either way, 17.6 + 52.9 + 88.1 + 123.4 ms). Now the
    chunks, with their earlier tokens: within 2 % of the simulation (the step model interpolates the prefill)."""
    from gpuplan.plan.resolve import resolve
    from gpuplan.speed.inference import step_timer

    fields = {"model": "qwen3-30b-a3b", "task": "infer", "engine": "vllm", "gpu": "a100-80gb", "users": 1,
              "prompt_tokens": prompt, "output_tokens": 64, "length_spread": 0}
    r = estimate(fields, advise=False)
    x = resolve(scenario_from(fields))
    t = step_timer(x.scenario, x.model, x.gpu)
    assert 1e3 * t.prefill_s(prompt) == pytest.approx(alone_ms, abs=0.1)  # the whole prompt, as before
    assert 1e3 * t.ttft_s(prompt) == pytest.approx(chunked_ms, abs=0.1)
    assert 1e3 * t.ttft_s(prompt) == pytest.approx(sum(
        1e3 * t.prefill_s(2048, context=k) for k in range(0, prompt, 2048)), rel=1e-9)
    assert r.speed.ttft_burst_s == pytest.approx(r.speed.ttft_s, rel=1e-12)  # a burst of one is the request alone
    assert r.speed.ttft_s == pytest.approx(r.load.median_ttft_ms / 1e3, rel=0.02)


def test_explain_takes_the_server_path_out_of_the_cycle():
    """The tokens/s formula's cycle is the decode steps plus the engine's prefill of the next prompts: the burst TTFT
    less the per-request latency outside the steps (which overlaps other requests' steps); the TTFT formula shows
    the prefill and that latency adding to the plan's TTFTs."""
    from gpuplan import api

    fields = {"model": "llama-3.1-8b", "task": "infer", "engine": "vllm", "gpu": "h100-sxm", "batch_size": 8,
              "prompt_tokens": 2000, "output_tokens": 16}
    r = estimate(fields, advise=False)
    e = api.explain(fields)
    sp, server = r.speed, r.speed.request_overhead_s
    assert server == pytest.approx(14.7e-3)
    f = e.numbers["speed.tokens_per_s"]
    cycle = 16 * sp.step_time_s + sp.ttft_burst_s - server
    assert f.computed == pytest.approx(f.value, rel=1e-9) == pytest.approx(8 * 16 / cycle, rel=1e-9)
    assert 8 * 16 / (cycle + server) < 0.99 * f.value  # the server path in the cycle would cost over 1%
    t = e.numbers["speed.ttft_s"]
    assert t.value == sp.ttft_s and "outside its steps" in t.formula
    assert t.substituted == (f"{sp.ttft_s - server:,.3f} s + 14.7 ms = {sp.ttft_s:,.3f} s alone; "
                             f"{sp.ttft_burst_s - server:,.3f} s + 14.7 ms = {sp.ttft_burst_s:,.3f} s for the last of "
                             "8 arriving together")
