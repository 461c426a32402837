"""The plan's offline throughput (``speed.offline_tokens_per_s``, ``engine: trtllm``) against MLPerf Inference
Offline results, and the whole-setup and scheduler-policy rules behind it.

Published values: "Tokens per second" of each run's mlperf_log_summary.txt in mlcommons/inference_results_v4.1
(@198fc467e5c3) and v5.1 (@965182b0a4d1), closed division, copied with the submitter's TensorRT-LLM settings into
bench/data/mlperf-inference.csv (each row's source and settings_source). Nothing in gpuplan is fitted on them: the
TensorRT-LLM constants were fitted on NVIDIA's trtllm-bench tables (bench/trtllm.py). Mean prompt lengths are the
bench's (bench/mlperf_inference.py PROMPT_TOKENS: Llama-2-70B's 300 is an assumption), output lengths each run's own.
"""

from __future__ import annotations

import contextlib
import io
import math
import re
import statistics
from pathlib import Path

import pytest

import benchfiles
from gpuplan import estimate
from gpuplan.errors import GpuplanError
from gpuplan.hardware import load_gpu
from gpuplan.model.catalog import load_model
from gpuplan.scenario import scenario_from
from gpuplan.serving.offline import held_tokens, offline_throughput

ROOT = Path(__file__).resolve().parents[2]


def bench():
    return benchfiles.load("bench/mlperf_inference.py", "bench_mlperf_inference")


# NVIDIA's own v4.1 Hopper submissions (closed/NVIDIA/results/<system>/<benchmark>/Offline/performance/run_1/
# mlperf_log_summary.txt, Tokens per second): (system, benchmark, published, tolerance). Within 6% when written
# (H100 +2.9%, Mixtral +3.0% / +1.0%, H200 -5.3%).
NVIDIA_HOPPER = [("DGX-H100_H100-SXM-80GBx8_TRT", "llama2-70b-99", 24_524.9),
                 ("DGX-H100_H100-SXM-80GBx8_TRT", "mixtral-8x7b", 52_415.9),
                 ("H200-SXM-141GBx8_TRT", "llama2-70b-99", 31_302.7),
                 ("H200-SXM-141GBx8_TRT", "mixtral-8x7b", 59_022.3)]


@pytest.mark.parametrize(("system", "workload", "published"), NVIDIA_HOPPER,
                         ids=[f"{r[0]}-{r[1]}" for r in NVIDIA_HOPPER])
def test_nvidia_hopper_rows_within_tolerance(system, workload, published):
    b = bench()
    row = next(r for r in b.load_rows() if r["submitter"] == "NVIDIA" and r["system"] == system
               and r["benchmark"] == workload)
    assert float(row["output_tokens_per_s"]) == published
    assert b.predict(row) == pytest.approx(published, rel=0.10)


def test_blackwell_llama2_70b_is_too_slow_by_under_a_quarter():
    """NVIDIA's v5.1 B200 x8 Llama-2-70B (101,527 tokens/s, NVFP4, 8 instances of tp 1): gpuplan says ~18% less.
    Known and not fitted away (bench/results/mlperf_inference.md); this pins the size of the gap so that a change
    that widens it fails."""
    b = bench()
    row = next(r for r in b.load_rows() if r["submitter"] == "NVIDIA" and r["gpu_label"] == "B200"
               and r["benchmark"] == "llama2-70b-99")
    assert float(row["output_tokens_per_s"]) == 101_527
    assert -0.25 < b.err(b.predict(row), row) < 0


def test_median_over_every_mlperf_row():
    """67 rows (v4.1 + v5.1; Llama-2-70B, Llama-3.1-8B, Mixtral-8x7B): median |error| 9.6% when written, under the
    issue's 15%. Every row is scored (none is inexpressible)."""
    b = bench()
    rows = b.load_rows()
    assert len(rows) == 67 and not [r for r in rows if b.why_not(r)]
    assert statistics.median(abs(b.err(b.predict(r), r)) for r in rows) < 0.12


SERVE = {"task": "infer", "engine": "trtllm", "model": "meta-llama/Llama-2-70b-hf", "gpu": "nvidia-h200-sxm-141gb",
         "tp": 1, "num_gpus": 8, "sharding": "ddp", "quant": "fp8", "kv_cache_dtype": "fp8", "prompt_tokens": 300,
         "output_tokens": 290, "batch_size": 64}


def test_offline_figure_is_the_whole_setup():
    """8 replicas of one GPU: the plan's offline figure is 8 x one instance's trtllm-bench run, and is a JSON key of
    the plan; the serving headline (tokens/s at the user's batch size) is another number."""
    plan = estimate(SERVE, advise=False)
    one = offline_throughput(scenario_from({**SERVE, "num_gpus": 1, "sharding": None}),
                             load_model(SERVE["model"]), load_gpu(SERVE["gpu"]))
    assert plan.speed.offline_tokens_per_s == pytest.approx(8 * one.output_tokens_per_s)
    assert plan.to_dict()["speed"]["offline_tokens_per_s"] == pytest.approx(plan.speed.offline_tokens_per_s)
    assert plan.speed.tokens_per_s < plan.speed.offline_tokens_per_s


def test_other_engines_have_no_offline_figure():
    plan = estimate({**SERVE, "engine": "vllm"}, advise=False)
    assert plan.speed.offline_tokens_per_s is None


def test_max_utilization_holds_requests_at_their_mean_length():
    """300 in, 290 out, blocks of 32 tokens: GUARANTEED_NO_EVICT reserves ceil(590 / 32) = 19 blocks a request,
    MAX_UTILIZATION holds ceil((300 + 145) / 32) = 14 on average: 19/14 as many requests in the same pool."""
    s = scenario_from({**SERVE, "num_gpus": 1, "sharding": None})
    util = s.model_copy(update={"capacity_scheduler_policy": "max_utilization"})
    assert held_tokens(s) == 590 and held_tokens(util) == 445
    m, gpu = load_model(s.model), load_gpu(s.gpu)
    big = s.model_copy(update={"max_num_seqs": 8192, "max_num_batched_tokens": 8192})
    a = offline_throughput(big, m, gpu).kv_requests
    b = offline_throughput(big.model_copy(update={"capacity_scheduler_policy": "max_utilization"}), m, gpu).kv_requests
    assert b / a == pytest.approx(math.ceil(590 / 32) / math.ceil(445 / 32), rel=0.01)


def test_capacity_policy_is_tensorrt_llm_s():
    with pytest.raises(GpuplanError, match="TensorRT-LLM's settings"):
        estimate({**SERVE, "engine": "vllm", "capacity_scheduler_policy": "max_utilization"}, advise=False)


def test_several_gpus_serve_one_tensor_parallel_copy():
    """trtllm-serve on 8 GPUs without tp or strategy: one copy split by tensor parallelism (``--tp_size 8``), as vLLM
    and SGLang are, not layers spread over the cards; so the plan has its offline figure (one instance of 8)."""
    plan = estimate({k: v for k, v in SERVE.items() if k not in ("tp", "sharding")}, advise=False)
    assert plan.scenario["tp"] == 8 and plan.scenario.get("pp", 1) == 1
    assert "tensor parallelism (trtllm-serve --tp_size 8)" in str(plan.to_dict())
    assert plan.speed.offline_tokens_per_s


# bench/results/review_rewalk_s15.md finding 8: Qwen3-30B-A3B, 2,000 requests of 500 + 200 on one H100 (bf16)
BATCH = {"task": "infer", "engine": "trtllm", "model": "qwen3-30b-a3b", "gpu": "nvidia-h100-sxm5-80gb",
         "batch_size": 2000, "prompt_tokens": 500, "output_tokens": 200}


def test_the_two_offline_figures_name_their_settings():
    """The plan printed two offline lines for one batch, 6,572 and 6,031 output tokens/s, the second labelled only
    "as trtllm-bench or MLPerf Offline". They answer two questions: the batch through the scheduler under the plan's
    settings (trtllm-serve's: pool 0.9 of the free memory, max_batch_size 2,048, max_num_tokens 8,192) and
    trtllm-bench's run under its own (pool 0.95, its max_batch_size and max_num_tokens heuristic). The second's
    label names each setting beside the plan's, in the CLI, the JSON and the assumption alike."""
    from gpuplan.cli import run
    from gpuplan.engines import trtllm

    plan = estimate(BATCH, advise=False)
    s = scenario_from(BATCH)
    batch, tokens = trtllm.bench_settings(trtllm.bench_scenario(s), load_model(s.model), load_gpu(s.gpu))
    # requests = (79.6 - 56.9 GiB of bf16 weights) x 0.95 / (96 KiB x 700) = 336.9: 384 in 128s above 256;
    # tokens 336.9 x (1 + 500/200) = 1,179 -> the floor of 2,048
    assert (batch, tokens) == (384, 2048)
    assert plan.offline.running_cap == 2048 and plan.offline.peak_running == 277  # the plan's settings
    basis = plan.speed.offline_basis
    assert basis == ("trtllm-bench throughput under its own settings, not the plan's (KV pool 0.95 of the free "
                     "memory against the plan's 0.9, max_batch_size 384 against the plan's 2,048, max_num_tokens "
                     "2,048 against the plan's 8,192, KV cache the weights' dtype), every request queued at once, "
                     "in steady state at 315 requests in flight")
    assert plan.to_dict()["speed"]["offline_basis"] == basis
    assert any(a.startswith(f"TensorRT-LLM at maximum load, as {basis}") for a in plan.assumptions)
    args = ["estimate", "--model", "qwen3-30b-a3b", "--task", "infer", "--engine", "trtllm", "--batch-size", "2000",
            "--prompt-tokens", "500", "--output-tokens", "200", "--gpu", "h100-sxm"]
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        assert run(args) == 0
    text = " ".join(buf.getvalue().split())
    assert f"{basis}: {plan.speed.offline_tokens_per_s:,.0f} output tokens/s on all 1 GPU(s)" in text
    assert (f"offline under the plan's settings (all 2,000 requests queued at once; TensorRT-LLM's scheduler "
            f"simulated): {plan.offline.output_throughput:,.0f} output tokens/s") in text
    assert "as trtllm-bench or MLPerf Offline" not in text and "as vllm bench throughput" not in text


def test_under_the_benchmarks_settings_both_runs_admit_the_same_requests():
    """Given trtllm-bench's own settings, the label says so, and the simulated batch runs as many requests at once
    as the closed form holds in flight (315: the pool at 0.95 holds 315 whole requests of 700 tokens, under
    max_batch_size 384)."""
    bench = {**BATCH, "max_num_seqs": 384, "max_num_batched_tokens": 2048, "free_gpu_memory_fraction": 0.95}
    plan = estimate(bench, advise=False)
    assert plan.speed.offline_basis.startswith("trtllm-bench throughput under the plan's settings (KV pool 0.95 of "
                                               "the free memory, max_batch_size 384, max_num_tokens 2,048,")
    assert "against" not in plan.speed.offline_basis
    assert plan.offline.peak_running == 315 and plan.speed.offline_basis.endswith("at 315 requests in flight")


def test_the_two_offline_figures_read_one_step_model():
    """Issue 30: the trtllm-bench figure and the simulated batch priced a TensorRT-LLM step twice (the offline model
    its own step timer at each batch, the simulation its sampled step model), and under trtllm-bench's settings they
    read 6,031 against 7,061 output tokens/s for Qwen3-30B-A3B on one H100. The offline model now prices each
    iteration with the simulation's step model: its decode step of 315 sequences at the mean context of 600 tokens and
    its context iteration of 4 whole prompts (max_num_tokens 2,048 // 500) are that model's own times. What is left
    between the two is the batch's composition (waves of prompts then lockstep decodes, against the scheduler's
    prompts joining the decodes in flight), which the held-out MoE rows of NVIDIA's tables score (bench/trtllm.py)."""
    from gpuplan.engines import trtllm
    from gpuplan.serving.steptime import step_model

    s, m = scenario_from(BATCH), load_model(BATCH["model"])
    gpu = load_gpu(BATCH["gpu"])
    run = offline_throughput(s, m, gpu)
    assert (run.concurrency, run.max_batch_size, run.max_num_tokens) == (315, 384, 2048)
    bench = trtllm.bench_scenario(s).model_copy(update={"max_num_seqs": 384, "max_num_batched_tokens": 2048})
    model = step_model(bench, m, gpu)
    assert run.decode_step_s == model.time(0, 315, 315 * 600)
    # 315 prompts = 78 iterations of 4 and one of 3
    prompts = 78 * model.time(2000, 0, 0, 4 * 500 * 500 / 2, prefill_seqs=4) \
        + model.time(1500, 0, 0, 3 * 500 * 500 / 2, prefill_seqs=3)
    assert run.prefill_s == pytest.approx(prompts, rel=1e-12)
    assert run.cycle_s == pytest.approx(200 * run.decode_step_s + run.prefill_s, rel=1e-12)
    plan = estimate({**BATCH, "max_num_seqs": 384, "max_num_batched_tokens": 2048, "free_gpu_memory_fraction": 0.95},
                    advise=False)
    assert plan.speed.offline_tokens_per_s == pytest.approx(315 * 200 / run.cycle_s)
    assert plan.speed.offline_tokens_per_s == pytest.approx(6039, abs=1)  # 6,031 with its own step timer
    assert plan.offline.peak_running == 315 and plan.offline.output_throughput == pytest.approx(7061, abs=1)


def test_the_fit_page_quotes_the_mlperf_inference_medians():
    """docs/fit-a-model.md quotes bench/results/mlperf_inference.md's medians (all rows, then Llama-2-70B,
    Llama-3.1-8B and Mixtral). bd03b53f regenerated the file (9.6 -> 7.3 %, Llama-3.1-8B 28.4 -> 9.1 %) and the page
    kept the old ones until session 18's docs audit."""
    bench = (ROOT / "bench" / "results" / "mlperf_inference.md").read_text(encoding="utf-8")
    page = " ".join((ROOT / "docs" / "fit-a-model.md").read_text(encoding="utf-8").split())

    def median(label: str) -> str:
        return re.search(rf"^\| {re.escape(label)}[^|]* \| \d+ \| ([\d.]+)%", bench, re.M).group(1)

    n = re.search(r"^\| all scored \| (\d+) \|", bench, re.M).group(1)
    assert f"Against {n} MLPerf Inference Offline rows" in page
    said = re.search(r"the median error is ([\d.]+) %, but by benchmark it is ([\d.]+) % \(Llama-2-70B.*?\), "
                     r"([\d.]+) % \(Llama-3.1-8B.*?\) and ([\d.]+) % \(Mixtral\)", page)
    assert said and said.groups() == tuple(median(x) for x in ("all scored", "Llama-2-70B", "Llama-3.1-8B",
                                                               "Mixtral-8x7B"))
