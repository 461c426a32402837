"""Serving: workload validation, the step model's arithmetic, the scheduler simulation, capacity and calibration."""

import json

import numpy as np
import pytest

from gpuplan.errors import GpuplanError
from gpuplan.hardware import load_gpu
from gpuplan.model.catalog import load_model
from gpuplan.scenario import scenario_from
from gpuplan.serving.calibrate import fit, read_results
from gpuplan.serving.simulate import Engine, arrivals, simulate
from gpuplan.serving.steptime import step_model
from gpuplan.serving.workload import load_workload, read_trace

H100 = load_gpu("h100-sxm")
M = load_model("llama-3.1-8b")
S = scenario_from(dict(model="llama-3.1-8b", task="infer", engine="vllm", gpu="h100-sxm"))


def test_workload_errors_are_one_sentence_with_did_you_mean():
    with pytest.raises(GpuplanError, match="did you mean 'chat'"):
        load_workload(None, {"preset": "chta"})
    with pytest.raises(GpuplanError, match="say how long requests are"):
        load_workload(None, {"rate_rps": 2})
    with pytest.raises(GpuplanError, match="rate_rps"):
        load_workload(None, {"rate_rps": -1, "preset": "chat"})
    w = load_workload(None, {"prompt_tokens": 2000, "output_tokens": 300, "ttft_s": 1, "percentile": 99})
    assert (w.mean_prompt_tokens, w.mean_output_tokens, w.slo.ttft_s, w.slo.percentile) == (2000, 300, 1, 99)


def test_decode_step_of_one_sequence_is_weights_over_bandwidth_plus_overhead():
    sm = step_model(S, M, H100)
    weights = 8_030_261_248 * 2  # bf16, every part
    kv = 1000 * 131_072
    floor = (14 - 7) * 32 * 5e-6  # 7 non-GEMM kernels per layer x 32 layers x 5 us (overheads.py)
    expected = (weights + kv) / (3350e9 * 0.8) + floor + 3e-3
    assert sm.time(0, 1, 1000) == pytest.approx(expected, rel=1e-3)


def test_prefill_is_compute_bound_at_two_n_flops_per_token():
    sm = step_model(S, M, H100)
    n = sm.flops_per_token / 2
    t = sm.time(8192, 0, 0, 8192 * 8192 / 2) - 3e-3 - (14 - 7) * 32 * 5e-6
    flops = 8192 * 2 * n + 8192 * 8192 / 2 * 4 * 32 * 128 * 32
    assert t == pytest.approx(flops / (989e12 * 0.801), rel=1e-3)  # H100 SXM: 80.1 % of peak (stas00's MAMF)


def test_one_request_alone_gets_prefill_then_decode_steps():
    sm = step_model(S, M, H100)
    out = simulate(sm, Engine(kv_blocks=1000), np.array([0.0]), np.array([100]), np.array([11]))
    ttft = sm.time(100, 0, 0, 100 * 50)
    assert out.ttft_s[0] == pytest.approx(ttft)
    # 10 more tokens at contexts 100..109 (advanced together at the mid-point context)
    assert out.tpot_s[0] == pytest.approx(sm.time(0, 1, 104.5), rel=1e-3)


def test_a_small_pool_preempts_and_still_finishes_everything():
    sm = step_model(S, M, H100)
    n = 40
    out = simulate(sm, Engine(kv_blocks=60, max_num_seqs=64), np.zeros(n), np.full(n, 200), np.full(n, 200))
    assert out.completed == n and out.preemptions > 0
    roomy = simulate(sm, Engine(kv_blocks=10_000, max_num_seqs=64), np.zeros(n), np.full(n, 200), np.full(n, 200))
    assert roomy.preemptions == 0 and roomy.duration_s < out.duration_s


def test_latency_grows_with_rate():
    sm = step_model(S, M, H100)
    rng = np.random.default_rng(0)
    eng = Engine(kv_blocks=29_000, max_num_seqs=1024, max_num_batched_tokens=8192)
    lo = simulate(sm, eng, arrivals(1, 300, 1.0, rng), np.full(300, 1000), np.full(300, 200))
    hi = simulate(sm, eng, arrivals(60, 300, 1.0, rng), np.full(300, 1000), np.full(300, 200))
    assert np.percentile(hi.tpot_s, 95) > np.percentile(lo.tpot_s, 95)
    assert hi.output_tokens_per_s > 10 * lo.output_tokens_per_s


def test_traces_in_vllm_bench_formats(tmp_path):
    p = tmp_path / "run.json"
    p.write_text(json.dumps({"input_lens": [10, 20], "output_lens": [5, 6], "mean_ttft_ms": 1, "mean_tpot_ms": 1}))
    assert read_trace(p)[:2] == ([10, 20], [5, 6])
    q = tmp_path / "trace.jsonl"
    q.write_text('{"timestamp": 1000, "input_length": 7, "output_length": 3}\n'
                 '{"timestamp": 3000, "input_length": 9, "output_length": 4}\n')
    assert read_trace(q)[:3] == ([7, 9], [3, 4], [0.0, 2.0])
    g = tmp_path / "sharegpt.json"
    g.write_text(json.dumps([{"conversations": [{"from": "human", "value": "x" * 40},
                                                 {"from": "gpt", "value": "y" * 80}]}]))
    assert read_trace(g)[:2] == ([10], [20])


def test_calibration_recovers_a_uniform_slowdown(tmp_path):
    sm = step_model(S, M, H100)
    eng = Engine(kv_blocks=29_000, max_num_seqs=256, max_num_batched_tokens=8192)
    runs = []
    for rate in (1.0, 4.0):
        from dataclasses import replace

        from gpuplan.serving.calibrate import predict
        from gpuplan.serving.steptime import Calibration

        fake = read_results(_vllm_result(tmp_path, rate, 1, 1))[0]
        slow = replace(sm, calibration=Calibration(compute=1.5, memory=1.3))
        ttft, tpot, _ = predict(slow, eng, fake)
        runs.append(replace(fake, mean_ttft_s=ttft, mean_tpot_s=tpot))
    cal, rows = fit(sm, eng, runs)
    assert cal.compute == pytest.approx(1.5, rel=0.15) and cal.memory == pytest.approx(1.3, rel=0.1)
    assert all(abs(r["tpot_err_after_pct"]) < abs(r["tpot_err_before_pct"]) for r in rows)


def _vllm_result(tmp_path, rate, ttft_ms, tpot_ms):
    p = tmp_path / f"r{rate}.json"
    p.write_text(json.dumps({"request_rate": rate, "completed": 60, "total_input_tokens": 60 * 500,
                             "total_output_tokens": 60 * 100, "mean_ttft_ms": ttft_ms, "mean_tpot_ms": tpot_ms,
                             "output_throughput": 100.0}))
    return p


def test_capacity_cli_json(tmp_path):
    from typer.testing import CliRunner

    from gpuplan.cli import app

    wl = tmp_path / "w.yaml"
    wl.write_text("rate_rps: 2\nprompt: {mean: 1000}\noutput: {mean: 100}\nslo: {ttft_s: 2, tpot_s: 0.1}\n"
                  "num_requests: 60\n")
    r = CliRunner().invoke(app, ["capacity", str(wl), "--model", "llama-3.1-8b", "--gpus", "l40s", "--max-gpus", "1",
                                 "--json"])
    assert r.exit_code == 0, r.output
    plan = json.loads(r.output)["plans"][0]
    assert plan["gpu_id"] == "nvidia-l40s" and plan["max_rate_rps"] > 0.5
    assert plan["usd_per_million_output"] == pytest.approx(
        plan["usd_per_hour"] / 3600 / (plan["max_rate_rps"] * 100) * 1e6)
