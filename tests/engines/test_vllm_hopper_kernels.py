"""vLLM's kernels on Hopper that do not run at their bytes' rate (engines/vllm.py ``hopper_kernels``): FlashAttention-3
reading an fp8 KV cache, and the MXFP4 experts on the Triton backend, against the single-request H100 sweeps of the
vLLM blog "The State of FP8 KV-Cache and Attention Quantization in vLLM" (2026-04-22) they were fitted on."""

from __future__ import annotations

import pytest

from gpuplan.hardware import load_gpu
from gpuplan.model.catalog import load_model
from gpuplan.scenario import scenario_from
from gpuplan.speed.inference import step_timer


def _timer(model: str, gpu: str = "h100-sxm", version: str = "0.19.1", kv: str = "auto"):
    s = scenario_from({"task": "infer", "engine": "vllm", "engine_version": version, "model": model, "gpu": gpu,
                       "kv_cache_dtype": kv, "batch_size": 8, "prompt_tokens": 20000, "output_tokens": 2000})
    return step_timer(s, load_model(s.model), load_gpu(s.gpu))


def _slope(timer) -> float:
    """ms of decode step per cached token of one sequence (the blog's ITL slope)."""
    return (timer.decode_s(1, 100_064) - timer.decode_s(1, 64)) * 1e3 / 100_000


def test_gpt_oss_one_sequence_step_is_the_blogs_intercept():
    """gpt-oss-20b, one request on an H100 under v0.19.1: the blog fits ITL = 4.03 to 4.07 ms + slope x input; the
    bytes alone take 2.83 ms, and 24 MoE layers x 51 us bring it to 4.05 ms."""
    assert _timer("openai/gpt-oss-20b").decode_s(1, 64) * 1e3 == pytest.approx(4.05, abs=0.02)


@pytest.mark.parametrize(("model", "ratio"), [("openai/gpt-oss-20b", 0.80), ("meta-llama/Llama-3.1-8B", 0.54)])
def test_fp8_slope_over_bf16_slope_is_the_blogs(model, ratio):
    """FP8 over BF16 ITL slope on v0.19.1: 80% for gpt-oss-20b (head_dim 64), 54% for Llama-3.1-8B (128); gpuplan's
    BF16 slopes are 8.5e-6 and 4.55e-5 ms a token against the blog's 8.94e-6 and 4.37e-5."""
    assert _slope(_timer(model, kv="fp8")) / _slope(_timer(model)) == pytest.approx(ratio, rel=0.01)


def test_only_where_the_sweeps_ran():
    """No change off Hopper, for the Marlin MXFP4 path of releases before 0.11.1, or for a hybrid's cache (mostly
    Mamba state its own kernels read); v0.10.2's slower FP8 decode before 0.19 (its 96% for head_dim 64)."""
    assert _timer("openai/gpt-oss-20b", gpu="a100-sxm4-80gb").timing.expert_layer_s == 0.0
    assert _timer("openai/gpt-oss-20b", version="0.10.1").timing.expert_layer_s == 0.0
    assert _timer("nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16", kv="fp8").timing.fp8_kv_rate == 1.0
    assert _timer("openai/gpt-oss-20b", version="0.12.0", kv="fp8").timing.fp8_kv_rate == pytest.approx(0.5 / 0.96)
