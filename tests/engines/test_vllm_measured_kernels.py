"""vLLM's decode costs that are not the bytes' rate (engines/vllm.py ``measured_kernels``): an fp8 KV cache read by
FlashAttention-3 (Hopper) or FlashInfer (B200), and gpt-oss's MXFP4 MoE layers, against the single-request sweeps of
the vLLM blog "The State of FP8 KV-Cache and Attention Quantization in vLLM" (2026-04-22)."""

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


@pytest.mark.parametrize(("gpu", "intercept"), [("h100-sxm", 4.05), ("b200", 3.15)])
def test_gpt_oss_one_sequence_step_is_the_blogs_intercept(gpu, intercept):
    """gpt-oss-20b, one request under v0.19.1: the blog fits ITL = 4.03 to 4.07 ms + slope x input on the H100
    (the bytes take 2.83 ms: 24 MoE layers x 51 us, fitted here) and 3.15 ms on the B200 (bytes 1.92 ms: the
    same 51 us a layer, a check)."""
    assert _timer("openai/gpt-oss-20b", gpu).decode_s(1, 64) * 1e3 == pytest.approx(intercept, abs=0.02)


@pytest.mark.parametrize(("model", "gpu", "ratio"), [("openai/gpt-oss-20b", "h100-sxm", 0.80),
                                                     ("meta-llama/Llama-3.1-8B", "h100-sxm", 0.54),
                                                     ("openai/gpt-oss-20b", "b200", 2.06 / 3.56),
                                                     ("meta-llama/Llama-3.1-8B", "b200", 9.72 / 18.0)])
def test_fp8_slope_over_bf16_slope_is_the_blogs(model, gpu, ratio):
    """FP8 over BF16 ITL slope on v0.19.1: 80 % for gpt-oss-20b (head_dim 64) and 54 % for Llama-3.1-8B (128) on
    the H100, 58 % and 54 % on the B200; gpuplan's BF16 slopes on the H100 are 8.5e-6 and 4.55e-5 ms a token
    against the blog's 8.94e-6 and 4.37e-5."""
    assert _slope(_timer(model, gpu, kv="fp8")) / _slope(_timer(model, gpu)) == pytest.approx(ratio, rel=0.01)


def test_only_where_the_sweeps_ran():
    """No change on Ampere or consumer Blackwell, for Hopper's Marlin MXFP4 path before 0.11.1, or for a hybrid's
    cache (mostly Mamba state its own kernels read); v0.10.2's slower FP8 decode before 0.19 (96 % for 64)."""
    assert _timer("openai/gpt-oss-20b", gpu="a100-sxm4-80gb").timing.expert_layer_s == 0.0
    assert _timer("openai/gpt-oss-20b", gpu="rtx-5090").timing.expert_layer_s == 0.0
    assert _timer("openai/gpt-oss-20b", version="0.10.1").timing.expert_layer_s == 0.0
    assert _timer("nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16", kv="fp8").timing.fp8_kv_rate == 1.0
    assert _timer("openai/gpt-oss-20b", version="0.12.0", kv="fp8").timing.fp8_kv_rate == pytest.approx(0.5 / 0.96)


NANO = "nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16"
# vLLM PR #44251's H200 table (cache_dtype=float32, headdim 64, dstate 128): (sequence, head) states and microseconds
# under the launch heuristic (BLOCK_SIZE_M 4, num_warps 4) and the tuned config; each state is 64 x 128 fp32, read
# and written back: 65,536 bytes moved
_STATE_BYTES = 64 * 128 * 4 * 2


def test_ssm_state_rate_is_the_heuristic_row_of_pr44251():
    """2,842 GB/s: the mean of 4,096 states in 94.81 us (2,831 GB/s) and 8,192 in 188.20 us (2,853)."""
    from gpuplan import overheads as oh

    rows = [4096 * _STATE_BYTES / 94.81e-6, 8192 * _STATE_BYTES / 188.20e-6]
    assert rows[0] / 1e9 == pytest.approx(2831, abs=1) and rows[1] / 1e9 == pytest.approx(2853, abs=1)
    assert oh.VLLM_SSU_HEURISTIC_GBS["nvidia-h200-sxm-141gb"] * 1e9 == pytest.approx(sum(rows) / 2, rel=1e-3)
    timer = _timer(NANO, "h200", "0.12.0")
    assert timer.timing.ssm_state_bps == pytest.approx(2842e9, rel=1e-3)


def test_tuned_configs_move_the_state_at_the_streaming_rate():
    """A check, not an input: the same table's tuned config moves 8,192 states in 142.70 us, 3,763 GB/s, 2 % below
    the H200's measured streaming bandwidth (3,840 GB/s), which gpuplan takes from the release shipping it."""
    from gpuplan.speed.gemm import streaming_bandwidth

    tuned = 8192 * _STATE_BYTES / 142.70e-6
    assert tuned / streaming_bandwidth(load_gpu("h200")) == pytest.approx(0.98, abs=0.005)
    assert _timer(NANO, "h200", "0.23.0").timing.ssm_state_bps == 0.0


def test_heuristic_state_update_prices_the_recipes_decode_step():
    """Nemotron-3-Nano (23 Mamba-2 layers of 64 heads x 64 x 128 fp32: 48,234,496 bytes of SSM state a sequence) at
    1,000 sequences: vLLM 0.12 moves 2 x 1,000 x 48.2 MB at 2,842 GB/s where 0.23 streams it at 3,840: +8.8 ms a
    step, all of it in the cache term; the convolution windows and the attention layers' keys and values keep the
    streaming rate."""
    from gpuplan.speed.work import ssm_state_bytes

    state = 23 * 64 * 64 * 128 * 4
    assert ssm_state_bytes(load_model(NANO)) == state
    old, new = _timer(NANO, "h200", "0.12.0"), _timer(NANO, "h200", "0.23.0")
    extra = 2 * 1000 * state * (1 / 2842e9 - 1 / 3840e9)
    assert extra * 1e3 == pytest.approx(8.83, abs=0.01)
    assert (old.decode_parts(1000, 1536)["kv_cache"] - new.decode_parts(1000, 1536)["kv_cache"]) \
        == pytest.approx(extra, rel=1e-3)
    assert old.decode_parts(1000, 1536)["weights"] == new.decode_parts(1000, 1536)["weights"]


def test_ssm_state_rate_only_where_measured():
    """Attention-only models move no SSM state; the H100's heuristic rate was not measured (its tuned configs were,
    PR #43083), so it keeps the streaming rate."""
    llama = "meta-llama/Llama-3.1-8B"
    old, new = (_timer(llama, "h200", v).decode_parts(64, 2048)["kv_cache"] for v in ("0.12.0", "0.23.0"))
    assert old == new
    assert _timer(NANO, "h100-sxm", "0.12.0").timing.ssm_state_bps == 0.0
