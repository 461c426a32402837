"""A benchmark run's client limit on requests in flight is replayed (session 29's walk): ``vllm bench serve
--request-rate inf --max-concurrency 16`` of 200 requests writes ``"request_rate": "inf", "max_concurrency": 16``
(vllm/benchmarks/serve.py), AIPerf's concurrency mode ``input_config.loadgen.concurrency`` and GuideLLM's
``concurrent`` strategy its ``streams``; calibrate-serving
replayed all 200 at once, so its TTFT "before" read +1,919 % on a run it could reproduce, and the corrections it
fitted (or refused) came from a burst that never happened."""

from __future__ import annotations

import json

import numpy as np
import pytest

from gpuplan import GpuplanError, api
from gpuplan.hardware import load_gpu
from gpuplan.model.catalog import load_model
from gpuplan.scenario import scenario_from
from gpuplan.serving.calibrate import deployment, read_results, replay

N, PROMPT, OUTPUT, LIMIT = 200, 1024, 128, 16


def simulated_means() -> tuple[float, float]:
    """Mean TTFT and TPOT (ms) of the run as gpuplan's own replay serves it, 16 requests in flight."""
    s = scenario_from(dict(model="llama-3.2-1b", task="infer", engine="vllm", gpu="l40s"))
    model, engine = deployment(s, load_model("llama-3.2-1b"), load_gpu("l40s"))
    out = replay(model, engine, rate_rps=None, prompt=np.full(N, PROMPT), output=np.full(N, OUTPUT),
                 max_concurrency=LIMIT)
    return 1000 * float(out.ttft_s.mean()), 1000 * float(out.tpot_s.mean())


@pytest.mark.parametrize("tool", ["vllm", "aiperf", "guidellm"])
def test_a_run_held_to_16_in_flight_is_replayed_so(tool, tmp_path):
    ttft, tpot = simulated_means()
    if tool == "vllm":
        data = {"request_rate": "inf", "burstiness": 1.0, "max_concurrency": LIMIT, "completed": N,
                "total_input_tokens": N * PROMPT, "total_output_tokens": N * OUTPUT, "mean_ttft_ms": ttft,
                "mean_tpot_ms": tpot}
    elif tool == "guidellm":
        mean = lambda x: {"successful": {"mean": x}}  # noqa: E731
        data = {"benchmarks": [{"args": {"strategy": {"type_": "concurrent", "streams": LIMIT}},
                                "request_totals": {"successful": N},
                                "metrics": {"time_to_first_token_ms": mean(ttft),
                                            "time_per_output_token_ms": mean(tpot),
                                            "prompt_token_count": mean(PROMPT),
                                            "output_token_count": mean(OUTPUT)}}]}
    else:
        data = {"time_to_first_token": {"avg": ttft}, "inter_token_latency": {"avg": tpot},
                "input_sequence_length": {"avg": PROMPT}, "output_sequence_length": {"avg": OUTPUT},
                "request_count": {"avg": N}, "input_config": {"loadgen": {"concurrency": LIMIT}}}
    path = tmp_path / f"{tool}.json"
    path.write_text(json.dumps(data))
    row = api.calibrate_serving([path], model="llama-3.2-1b", gpu="l40s").runs[0]
    assert abs(row["ttft_err_before_pct"]) < 10 and abs(row["tpot_err_before_pct"]) < 10, row
    assert row["max_concurrency"] == read_results(path)[0].max_concurrency == LIMIT


def test_a_limit_that_is_not_a_count_is_one_sentence(tmp_path):
    path = tmp_path / "bad.json"
    path.write_text(json.dumps({"request_rate": "inf", "max_concurrency": 0.5, "completed": 10, "mean_ttft_ms": 50,
                                "mean_tpot_ms": 20, "total_input_tokens": 1000, "total_output_tokens": 100}))
    with pytest.raises(GpuplanError, match="max_concurrency must be a whole number"):
        read_results(path)
