"""TensorRT-LLM's offline throughput (serving/offline.py) against NVIDIA's published trtllm-bench tables, and
trtllm-bench's own max batch size / max num tokens (engines/trtllm.bench_settings) by hand.

Published values: NVIDIA/TensorRT-LLM@00f37686aa854010d68bcbd0f4ab000221541ca6
docs/source/performance/perf-overview.md, "Total Output Throughput (tokens/sec)" of ``trtllm-bench throughput``
(PyTorch backend, FP8 KV, every request exactly ISL in and OSL out), copied in bench/data/trtllm-perf-overview.csv.
The constants (overheads.TRTLLM_*) were fitted on the tables' H100 and B200 columns only; the rows below are from
the held-out H200 and GB200 columns.
"""

from __future__ import annotations

import statistics
from pathlib import Path

import pytest

import benchfiles
from gpuplan import estimate
from gpuplan.engines import trtllm
from gpuplan.hardware import load_gpu
from gpuplan.model.catalog import load_model
from gpuplan.scenario import scenario_from
from gpuplan.serving.offline import offline_throughput
from gpuplan.speed.inference import step_timer

ROOT = Path(__file__).resolve().parents[2]
TOLERANCE = 0.12  # the held-out rows' median |error| is 5.5% (bench/results/trtllm.md); the largest of these 8%


def bench_scenario(model: str, gpu: str, tp: int, quant: str, isl: int, osl: int):
    return scenario_from({"task": "infer", "engine": "trtllm", "model": model, "gpu": gpu, "tp": tp, "num_gpus": tp,
                          "quant": quant, "kv_cache_dtype": "fp8", "prompt_tokens": isl, "output_tokens": osl})


# (table, column, model, gpu, tp, quant, ISL, OSL, num_requests, published total output tokens/s): the 1000/1000
# row of every held-out column of the overview's dense tables.
HELD_OUT = [
    ("Llama 3.1 8B", "H200 TP1 (FP8)", "meta-llama/Llama-3.1-8B", "nvidia-h200-sxm-141gb", 1, "fp8", 17_744),
    ("Llama 3.3 70B", "H200 TP1 (FP8)", "meta-llama/Llama-3.3-70B-Instruct", "nvidia-h200-sxm-141gb", 1, "fp8",
     2_909),
    ("Llama 3.3 70B", "GB200 TP1 (FP4)", "meta-llama/Llama-3.3-70B-Instruct", "nvidia-gb200", 1, "nvfp4", 7_326),
    ("Llama 3.1 405B", "H200 TP8 (FP8)", "meta-llama/Llama-3.1-405B", "nvidia-h200-sxm-141gb", 8, "fp8", 3_330),
    ("Llama 3.1 405B", "GB200 TP4 (FP4)", "meta-llama/Llama-3.1-405B", "nvidia-gb200", 4, "nvfp4", 5_389),
]


@pytest.mark.parametrize(("table", "column", "model", "gpu", "tp", "quant", "published"), HELD_OUT,
                         ids=[f"{row[0]}-{row[1]}" for row in HELD_OUT])
def test_held_out_rows_within_tolerance(table, column, model, gpu, tp, quant, published):
    """1000/1000, 3,000 requests (the overview's $num_requests for 1000/1000)."""
    s = bench_scenario(model, gpu, tp, quant, 1000, 1000)
    run = offline_throughput(s, load_model(model), load_gpu(gpu), requests=3000)
    assert run.output_tokens_per_s == pytest.approx(published, rel=TOLERANCE)


# Release 0.17's table (NVIDIA/TensorRT-LLM@258c7540c03517def55d9a5aadfa9288af474e1b, same path, TensorRT engines,
# FP8, copied in bench/data/trtllm-perf-overview-v0.17.csv), LLaMA v3.1 70B at 1000/1000 (3,000 requests): tensor
# parallelism from 1 to 8 on H200, and one H100, whose 80 GB leave FP8 70B room for few requests.
OLDER = [("H200 141GB HBM3", "nvidia-h200-sxm-141gb", 1, 2_823.45), ("H200 141GB HBM3", "nvidia-h200-sxm-141gb", 2,
          5_164.76), ("H200 141GB HBM3", "nvidia-h200-sxm-141gb", 4, 8_911.29),
         ("H200 141GB HBM3", "nvidia-h200-sxm-141gb", 8, 13_181.24), ("H100 80GB HBM3", "nvidia-h100-sxm5-80gb", 1,
                                                                        839.97)]


@pytest.mark.parametrize(("column", "gpu", "tp", "published"), OLDER, ids=[f"{r[0]}-TP{r[2]}" for r in OLDER])
def test_release_0_17_rows_within_tolerance(column, gpu, tp, published):
    s = bench_scenario("meta-llama/Llama-3.1-70B", gpu, tp, "fp8", 1000, 1000)
    run = offline_throughput(s, load_model("meta-llama/Llama-3.1-70B"), load_gpu(gpu), requests=3000)
    assert run.output_tokens_per_s == pytest.approx(published, rel=TOLERANCE)


@pytest.mark.parametrize(("gpu", "published"), [("nvidia-h200-sxm-141gb", 10_371.36),
                                                ("nvidia-h100-sxm5-80gb", 6_868.52)], ids=["H200", "H100"])
def test_mixtral_one_gpu_with_grouped_experts(gpu, published):
    """Release 0.17's Mixtral 8x7B TP1 FP8 rows at 1000/1000 (3,000 requests), column H200 141GB HBM3 / H100 80GB
    HBM3: the fused MoE's dispatch is fitted on the B200 rows of Scout and Qwen3-30B-A3B only, so these check the
    grouped-expert path (StepTimer.grouped_experts, speed/experts.fused_moe_s) independently. The vLLM path keeps
    its roofline (grouped_experts off)."""
    m = load_model("mistralai/Mixtral-8x7B-v0.1")
    s = bench_scenario(m.name, gpu, 1, "fp8", 1000, 1000)
    run = offline_throughput(s, m, load_gpu(gpu), requests=3000)
    assert run.output_tokens_per_s == pytest.approx(published, rel=TOLERANCE)
    assert not step_timer(s.model_copy(update={"engine": "vllm"}), m, load_gpu(gpu)).grouped_experts


def test_held_out_median_of_the_whole_table():
    """Every held-out (H200, GB200) dense row of the CSV: median |error| under the issue's 15% target (5.3% when
    written), scored by the bench script's own functions."""
    bench = _bench()
    rows = [r for r in bench.load_rows() if bench.role(r) == "held-out" and not bench.why_not(r)]
    assert len(rows) == 50
    assert statistics.median(abs(bench.err(bench.offline(r), r)) for r in rows) < 0.08


def _bench():
    return benchfiles.load("bench/trtllm.py", "bench_trtllm")


def test_moe_held_out_median():
    """Every held-out one-GPU MoE row (GB200 Scout and Qwen3-30B-A3B, release 0.17's Mixtral on H100/H200/GH200):
    median |error| under the issue's 15% target (7.4% when written; 31% with the serving estimate, 19% before the
    fused NVFP4 MoE's dispatch was timed)."""
    bench = _bench()
    rows = [r for r in bench.load_rows() + bench.load_rows(bench.OLDER)
            if bench.role(r) == "MoE held-out" and not bench.why_not(r)]
    assert len(rows) == 47
    assert statistics.median(abs(bench.err(bench.offline(r), r)) for r in rows) < 0.10


def _timer(model: str, gpu: str, quant: str, engine: str = "trtllm"):
    s = scenario_from({"task": "infer", "engine": engine, "model": model, "gpu": gpu, "quant": quant,
                       "kv_cache_dtype": "fp8", "prompt_tokens": 1000, "output_tokens": 1000})
    return step_timer(s, load_model(s.model), load_gpu(s.gpu))


def test_moe_dispatch_by_hand():
    """Qwen3-30B-A3B in NVFP4 has 48 MoE layers: a decode iteration of 1,000 tokens pays 48 x (0 us + 1,000 x 200
    ns) = 9.6 ms, a prefill iteration of 8,192 tokens 48 x (0 us + 8,192 x 80 ns) = 31.5 ms (the constants refitted
    with the context steps' launches, and again once the expanded rows' traffic was priced apart), each the step
    timer's ``fused_moe`` part; a dense model nothing, nor an FP8 run, nor another engine's NVFP4 MoE."""
    from gpuplan.speed.experts import fused_moe_s

    timer = _timer("Qwen/Qwen3-30B-A3B", "b200", "nvfp4")
    assert sum(1 for layer in timer.m.layers if layer.moe) == 48
    assert fused_moe_s(timer, 1000, decode=True) == pytest.approx(9.6e-3)
    assert fused_moe_s(timer, 8192, decode=False) == pytest.approx(31.46e-3, abs=0.01e-3)
    assert timer.decode_parts(1000, 1000)["fused_moe"] == pytest.approx(9.6e-3)
    assert timer.prefill_parts(8192, seqs=8)["fused_moe"] == pytest.approx(31.46e-3, abs=0.01e-3)
    assert fused_moe_s(_timer("meta-llama/Llama-3.1-8B", "b200", "nvfp4"), 1000, decode=True) == 0.0
    assert fused_moe_s(_timer("Qwen/Qwen3-30B-A3B", "h100-sxm", "fp8"), 1000, decode=True) == 0.0
    assert fused_moe_s(_timer("Qwen/Qwen3-30B-A3B", "b200", "nvfp4", engine="vllm"), 1000, decode=True) == 0.0


def test_the_serving_step_model_prices_the_dispatch_at_each_steps_rate():
    """One copy of the fused MoE's dispatch: the scheduler simulation's step model (serving/steptime.sample) carries
    the step timer's ``fused_moe`` part, at 80 ns a token and MoE layer in a step that holds a prompt and 200 ns in a
    step of decodes alone (before, only the offline model added it, and the simulated batch of an NVFP4 MoE ran
    without it). At 1,024 tokens: 48 x 1,024 x 200 ns = 9.83 ms of a decode step, 48 x 1,024 x 80 ns = 3.93 ms of a
    prompt step."""
    from gpuplan.serving.steptime import GRID_TOKENS, sample
    from gpuplan.speed.work import lm_head_s

    timer = _timer("Qwen/Qwen3-30B-A3B", "b200", "nvfp4")
    plain = _timer("Qwen/Qwen3-30B-A3B", "b200", "nvfp4", engine="vllm")  # no fused MoE: the same linears' walk
    model = sample(timer)
    i = GRID_TOKENS.index(1024)
    dec, pre = timer.decode_parts(1024, 0), timer.prefill_parts(1024)
    assert dec["fused_moe"] == pytest.approx(48 * 1024 * 200e-9)
    assert pre["fused_moe"] == pytest.approx(48 * 1024 * 80e-9)
    head = model.lm_head_s[i]
    rest = dec.get("kernel_latency", 0.0) + dec.get("elementwise", 0.0) + dec.get("tensor_parallel", 0.0)
    assert model.decode_dense_s[i] == pytest.approx(dec["weights"] - head + rest + 48 * 1024 * 200e-9)
    prompt_linears = pre["gemm"] - lm_head_s(timer.m, timer.gpu, timer.dtype, 1)
    assert model.dense_s[i] == pytest.approx(max(dec["weights"] - head, prompt_linears) + rest + 48 * 1024 * 80e-9)
    assert "fused_moe" not in plain.decode_parts(1024, 0)


def test_bench_settings_by_hand():
    """Llama-3.1-8B FP8 on one H100 (nvml total T = 79.6 GiB, the catalog's usable memory): engine
    8,030,261,248 x 1 B; KV per token 2 x 32 layers x 8 heads x 128 x 1 B = 65,536 B.
    128/128: requests = (T - 7.479) x 0.95 / (65,536 x 256 / 2^30) = 64 x 0.95 x (T - 7.479) > 4,096, so raw_bs =
    4,096 -> max_batch_size 4,096 (256 x 16); raw_tokens = 4,096 x 2 = 8,192 -> 8,192.
    5000/500: requests = (T - 7.479) x 0.95 / (65,536 x 5,500 / 2^30) = 203.x -> max_batch_size 32 x ceil(203.x/32)
    = 224; raw_tokens = 203.x x 11 = 2,23x -> max(2,048, 256 x 9) = 2,304, then ISL + batch = 5,224 (no chunking)."""
    m, gpu = load_model("meta-llama/Llama-3.1-8B"), load_gpu("nvidia-h100-sxm5-80gb")
    assert gpu.usable_gib == 79.6
    requests = (79.6 - 8_030_261_248 / 2**30) * 0.95 / (65_536 * 5_500 / 2**30)
    assert 192 < requests < 224
    assert trtllm.bench_settings(bench_scenario(m.name, gpu.id, 1, "fp8", 128, 128), m, gpu) == (4096, 8192)
    assert trtllm.bench_settings(bench_scenario(m.name, gpu.id, 1, "fp8", 5000, 500), m, gpu) == (224, 5224)


def test_precision_as_the_hardware_runs_it():
    """FP8 checkpoints are W8A8 on Hopper (GEMMs in fp8), NVFP4 W4A4 on Blackwell (fp4); NVFP4 on a Hopper card,
    which has no FP4 tensor cores, is dequantized to bf16 in the GEMM."""
    m = load_model("meta-llama/Llama-3.3-70B-Instruct")
    for gpu, quant, dtype in (("nvidia-h100-sxm5-80gb", "fp8", "fp8"), ("nvidia-b200", "nvfp4", "fp4"),
                              ("nvidia-h200-sxm-141gb", "nvfp4", "bf16")):
        s = bench_scenario(m.name, gpu, 1, quant, 1000, 1000)
        assert step_timer(s, m, load_gpu(gpu)).dtype == dtype


def test_a_finite_dataset_runs_in_waves():
    """3,000 requests at concurrency C take floor(3000/C) full cycles and one of the rest: never faster than the
    steady state, and equal to it when C divides the dataset."""
    m, gpu = load_model("meta-llama/Llama-3.1-8B"), load_gpu("nvidia-h100-sxm5-80gb")
    s = bench_scenario(m.name, gpu.id, 1, "fp8", 2048, 2048)
    steady = offline_throughput(s, m, gpu)
    finite = offline_throughput(s, m, gpu, requests=3000)
    assert finite.waves == -(-3000 // steady.concurrency)
    assert finite.output_tokens_per_s < steady.output_tokens_per_s
    exact = offline_throughput(s, m, gpu, requests=4 * steady.concurrency)
    assert exact.output_tokens_per_s == pytest.approx(steady.output_tokens_per_s)


def test_the_plan_says_the_max_load_figure():
    """An ``engine: trtllm`` plan states trtllm-bench's max-load throughput for its lengths beside the serving
    estimate at its own batch size; other engines do not."""
    serve = {"model": "llama-3.1-8b", "task": "infer", "engine": "trtllm", "gpu": "h100-sxm", "quant": "fp8",
             "kv_cache_dtype": "fp8", "prompt_tokens": 1000, "output_tokens": 1000, "batch_size": 64}
    m, gpu = load_model("llama-3.1-8b"), load_gpu("h100-sxm")
    run = offline_throughput(scenario_from(serve), m, gpu)
    said = [a for a in estimate(serve, advise=False).assumptions if "maximum load" in a]
    assert len(said) == 1 and f"{run.output_tokens_per_s:,.0f} output tokens/s" in said[0]
    assert not [a for a in estimate({**serve, "engine": "vllm"}, advise=False).assumptions if "maximum load" in a]


def test_fp8_and_nvfp4_checkpoints_get_an_fp8_cache():
    """trtllm-bench maps an FP8 or NVFP4 checkpoint's KV dtype ``auto`` to FP8 (``_KV_CACHE_MAP``): leaving it at
    auto gives the same run as asking for fp8; a bf16 checkpoint keeps a 16-bit cache (half the requests fit)."""
    m, gpu = load_model("meta-llama/Llama-3.1-8B"), load_gpu("nvidia-h100-sxm5-80gb")
    fp8 = bench_scenario(m.name, gpu.id, 1, "fp8", 2048, 2048)
    auto = fp8.model_copy(update={"kv_cache_dtype": "auto"})
    assert offline_throughput(auto, m, gpu) == offline_throughput(fp8, m, gpu)
    bf16 = offline_throughput(auto.model_copy(update={"quant": None}), m, gpu)
    assert bf16.kv_requests < 0.6 * offline_throughput(fp8, m, gpu).kv_requests


# vllm-project/vllm PR #20646 (2025-07-08, "Basic tuned configs for NVFP4 CUTLASS dense GEMM"), its "Before" table of
# benchmarks/kernels/bench_nvfp4_gemm.py on a B200: Llama-3.1-8B's N = 6,144, K = 4,096 (the fused QKV projection),
# "nvfp4-noquant" TFLOP/s (the W4A4 GEMM alone, its activations quantized before the timing, as TensorRT-LLM fuses the
# quantization into the kernel before it).
VLLM_NVFP4_B200 = {2048: 3411.5, 4096: 3645.6, 8192: 3778.8, 16384: 3904.3}


@pytest.mark.parametrize(("rows", "published"), VLLM_NVFP4_B200.items())
def test_nvfp4_gemms_on_a_b200_against_a_published_kernel_timing(rows, published):
    """The NVFP4 GEMM rate the offline model gives a B200 (speed/gemm.trtllm_gpu: the per-watt default 0.477 of the
    9,000 TFLOPS FP4 peak, TRTLLM_GEMM_PEAK_SHARE's fitted 1.0, half at 64 rows) against another engine's CUTLASS
    NVFP4 kernel timed alone: within 8 % from 2,048 rows (-6.8 % there, -0.5 % at 16,384; -9.3 % at 1,024). A check
    of the fitted share's level, not a fit: the Llama-3.1-8B NVFP4 rows MLPerf v5.1 runs on B200s are +29 % fast
    (bench/results/mlperf_inference.md), and their GEMMs are not where that time goes."""
    from gpuplan.speed.gemm import gemm_time_s, trtllm_gpu

    gpu = trtllm_gpu(load_gpu("b200"), rows)
    seconds = gemm_time_s(gpu, "fp4", rows, 4096, 6144, act_bytes=0.5625, weight_bytes=0.5625, out_bytes=2)
    assert 2 * rows * 4096 * 6144 / seconds / 1e12 == pytest.approx(published, rel=0.08)
