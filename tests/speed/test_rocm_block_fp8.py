"""The first DeepSeek-V3 releases' block-FP8 kernels on AMD Instinct (gfx942): vLLM 0.7's ROCm build and SGLang
0.4.3 run Triton's w8a8_block_fp8_matmul and block-scaled fused_moe there (ROCm/vllm at 21f6ca217, the
rocm/vllm-dev:vllm-ds3-staging-0217 image dstack's MI300X rows ran: apply_w8a8_block_fp8_linear takes the Triton
kernel on ROCm, with MI300X-tuned configs), at overheads.ROCM_BLOCK_FP8_KERNEL_SHARE of the fast fp8 rate, fitted on
SGLang PR #3237's MI300X prefill (tests/serving/test_sglang_dp_attention.py). Here: where the engines take it, and
the kernel timings published on gfx942 it is checked against (never fitted on)."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

import gpuplan
from gpuplan import overheads as oh
from gpuplan.hardware import load_gpu
from gpuplan.plan.resolve import resolve
from gpuplan.scenario import scenario_from
from gpuplan.speed.gemm import gemm_time_s
from gpuplan.speed.inference import step_timer

MI300X = load_gpu("mi300x")
AITER = Path(__file__).parents[2] / "bench" / "data" / "aiter_blockscale_gemm.csv"


def _timer(engine: str, version: str, gpu: str):
    r = resolve(scenario_from(dict(model="deepseek-r1", task="infer", engine=engine, gpu=gpu, num_gpus=8, tp=8,
                                   prompt_tokens=3200, output_tokens=800, engine_version=version)))
    return step_timer(r.scenario, r.model, r.gpu)


def test_the_rocm_builds_of_those_releases_take_the_gfx942_share():
    """vLLM 0.7.3 (ROCm) and SGLang 0.4.3 on MI300X: 0.143; the same releases on an H200: the H200's 0.257; SGLang
    0.5.19 on MI325X (AITER's CK block-scale GEMMs, timed at the 16-bit rate: the check below): none."""
    for engine, version in (("vllm", "0.7.3"), ("sglang", "0.4.3")):
        assert _timer(engine, version, "mi300x").timing.block_fp8_share == oh.ROCM_BLOCK_FP8_KERNEL_SHARE == 0.143
        assert _timer(engine, version, "h200").timing.block_fp8_share == oh.BLOCK_FP8_KERNEL_SHARE
    assert _timer("sglang", "0.5.19", "mi325x").timing.block_fp8_share == 0.0  # later ROCm builds: not timed here


def _rows(tag: str) -> list[dict]:
    with AITER.open(newline="") as f:
        return [r for r in csv.DictReader(f) if r["table"] == tag]


def _ratios(tag: str, time_s) -> list[float]:
    """gpuplan's time over the published one for each prompt-sized row (M = 1,024-8,192) of one AITER table."""
    return sorted(time_s(int(r["M"]), int(r["K"]), int(r["N"])) / (float(r["us"]) * 1e-6) for r in _rows(tag))


def test_aiters_first_block_scale_kernel_on_mi300x_is_a_check():
    """ROCm/aiter e5578aeb (PR #156, 2025-02-27, aiter/configs/a8w8_blockscale_tuned_gemm.csv): the first CK
    block-scale GEMM for DeepSeek-R1's TP 8 shapes, timed on MI300X by its tuner in the weeks the Triton kernels ran
    (4,096 x 4,608 x 7,168: 1,172.3 us, 231 TFLOPS). The Triton kernels at the share fitted on PR #3237 time the
    45 rows at 0.72-1.35 of those times, median 1.01; AMD's blog of 2025-03-21 ("Supercharge DeepSeek-R1 Inference
    on AMD Instinct MI300X", footnote 2) puts AITER's block-scale GEMM at "up to 2X" what it replaced, so the
    Triton kernels within 1x-2x of it would read the same; the H200's share instead times them at 0.56 of it."""
    def triton(share):
        return lambda m, k, n: gemm_time_s(MI300X, "fp8", m, k, n, act_bytes=1, weight_bytes=1, out_bytes=2,
                                           kernel_share=share)
    ratios = _ratios("ck-2025-02-27", triton(oh.ROCM_BLOCK_FP8_KERNEL_SHARE))
    assert len(ratios) == 45
    assert ratios[22] == pytest.approx(1.01, abs=0.02)
    assert ratios[0] > 0.70 and ratios[-1] < 1.40
    h200 = _ratios("ck-2025-02-27", triton(oh.BLOCK_FP8_KERNEL_SHARE))
    assert h200[22] == pytest.approx(0.56, abs=0.02)


def test_aiters_retuned_kernel_reads_as_the_16_bit_rate_sglang_05_is_timed_at():
    """ROCm/aiter 1e8ac920 (PR #365, 'Block scale gemm retune', 2025-05-01; the same times through 2026): the CK
    block-scale GEMM SGLang 0.5's AITER path runs on gfx942 (sgl-project/sglang PR #14043 keeps MI300X on it), 4,096 x
    4,608 x 7,168 at 380.4 us (711 TFLOPS). gpuplan times those releases' DeepSeek linears at the 16-bit rate over
    fp8 weights (their quant is the checkpoint's own): 0.73-1.10 of the 45 published times, median 0.88, so the
    MI325X rows' prompts (ix3318, 2.2x their measured TTFT short at 4 requests) are not short for their GEMMs."""
    ratios = _ratios("ck-2025-05-01", lambda m, k, n: gemm_time_s(MI300X, "bf16", m, k, n, act_bytes=2,
                                                                  weight_bytes=1, out_bytes=2))
    assert len(ratios) == 45
    assert ratios[22] == pytest.approx(0.88, abs=0.02)
    assert ratios[0] > 0.70 and ratios[-1] < 1.15


@pytest.mark.parametrize(("users", "published_ms", "low", "high"),
                         [(4, 1288.6, -0.03, 0.01), (64, 11650.4, 0.03, 0.07)])
def test_dstacks_vllm_runs_on_mi300x_are_the_held_out_test(users, published_ms, low, high):
    """dstackai/benchmarks@7f37e6697725 Deepseek-R1/raw_data/online_results.csv (bench/data/serving_load_runs.csv
    dstackr1-mi300xx8-vllm-c4 and -c64; held out, nothing fitted on them): vLLM 0.7.3's ROCm build, DeepSeek-R1 at
    TP 8 on 8 MI300Xs, 3,200 / 800 tokens, median TTFT. At the H200's share gpuplan said -33 % and -29 %; at the
    gfx942 share -0.5 % and +5.0 % (load_accuracy.md)."""
    plan = gpuplan.estimate({"model": "deepseek-r1", "task": "infer", "engine": "vllm", "engine_version": "0.7.3",
                             "gpu": "mi300x", "num_gpus": 8, "tp": 8, "prompt_tokens": 3200, "output_tokens": 800,
                             "max_model_len": 32768, "users": users, "num_requests": 500, "length_spread": 0.0},
                            advise=False)
    assert low < plan.load.median_ttft_ms / published_ms - 1 < high
