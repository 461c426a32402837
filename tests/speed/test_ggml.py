"""llama.cpp's prompt processing from ggml's kernels (speed/ggml.py), CUDA and Metal, and generation on Apple silicon,
against public llama-bench tables (bench/data/llama-bench.csv, scored by bench/llama_bench.py) and by hand."""

from __future__ import annotations

import importlib.util
import statistics
from pathlib import Path

import pytest

from gpuplan import overheads as oh
from gpuplan.hardware import load_gpu
from gpuplan.model import gguf
from gpuplan.model.catalog import load_model
from gpuplan.scenario import scenario_from
from gpuplan.speed import ggml
from gpuplan.speed.inference import step_timer

ROOT = Path(__file__).resolve().parents[2]


def _bench():
    spec = importlib.util.spec_from_file_location("bench_llama", ROOT / "bench" / "llama_bench.py")
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    return bench


def _held_out(bench, kind: str, test: str) -> list[float]:
    rows = [r for r in bench.load_rows() if bench.backend(r) == kind and bench.work(r) == test and r["role"] == "check"]
    assert rows
    return [bench.err(r) for r in rows]


@pytest.mark.parametrize(("kind", "test", "count", "limit"), [("cuda", "pp", 20, 0.15), ("cuda", "tg", 15, 0.15),
                                                              ("metal", "pp", 14, 0.15), ("metal", "tg", 15, 0.15)])
def test_held_out_rows_within_the_issue_target(kind, test, count, limit):
    """Held-out llama-bench rows, median |error| under the issue's 15% (when written: CUDA prompts 9.6%, 10.2% with
    PR #6017's one-card A100 row and PR #19378's 4x RTX 4090 split, CUDA generation 9.8%, 9.3% with the 70B split
    row (26.0% through the generic step model before its own path), Metal prompts 6.7%, Metal generation 3.8%,
    7.9% with XiongjieDai's Llama 3 rows; CUDA prompts were 36% before, the A100 +203%)."""
    errors = _held_out(_bench(), kind, test)
    assert len(errors) == count
    assert statistics.median(abs(e) for e in errors) < limit


def _timer(model: str, gpu: str, quant: str | None, **extra):
    s = scenario_from({"task": "infer", "engine": "llama.cpp", "model": model, "gpu": gpu, "batch_size": 1,
                       "prompt_tokens": 512, "output_tokens": 128, "quant": quant, **extra})
    return step_timer(s, load_model(s.model), load_gpu(s.gpu))


def test_mmq_rate_by_hand():
    """RTX 4090: 128 SMs at 2,520 MHz x 700 FLOPs per SM and clock = 225.8 TFLOP/s for Q4_0, 0.9 of it for Q4_K;
    the A100 (108 SMs at 1,410 MHz) gets 106.6, below the RTX 3090's 97.3 x 1.1: the int8 peak (624 against 284
    TOPS) does not set it."""
    rtx4090, a100 = load_gpu("rtx-4090"), load_gpu("a100-sxm4-80gb")
    assert ggml.mmq_flops(rtx4090, "q4_0") == pytest.approx(700 * 128 * 2520e6)
    assert ggml.mmq_flops(rtx4090, "q4_k") == pytest.approx(0.9 * 700 * 128 * 2520e6)
    assert ggml.mmq_flops(a100, "q4_0") == pytest.approx(700 * 108 * 1410e6)


def test_mmq_or_cublas_by_card_and_rows():
    """ggml_cuda_should_use_mmq: Turing and later always, Volta below 64 rows, then dequantize + cuBLAS; the cuBLAS
    path writes and reads the f16 copy, so a V100 prompt costs more per row past 64 rows than below."""
    v100, t4 = load_gpu("nvidia-v100-sxm2-32gb"), load_gpu("t4")
    assert ggml.uses_mmq(t4, 512) and ggml.uses_mmq(v100, 63) and not ggml.uses_mmq(v100, 64)
    params = 4096 * 4096
    assert ggml.matmul_s(v100, "cuda", "q4_0", 64, params, 4096) > ggml.matmul_s(v100, "cuda", "q4_0", 63, params,
                                                                                   4096)


def test_micro_batch_sweep_follows_the_published_one():
    """PR #7676's RTX 4090 sweep of -ub (Llama-3-8B Q4_0, pp512): 1,937 tokens/s at 16 to 10,359 at 512. The
    kernels' model keeps the shape: every micro-batch within 16%, and a larger one never slower."""
    published = {16: 1937.21, 32: 3427.61, 64: 5420.06, 128: 7443.66, 256: 9601.53, 512: 10358.75}
    got = {ub: 512 / _timer("meta-llama/Meta-Llama-3-8B", "rtx-4090", "gguf-q4_0", ubatch_tokens=ub,
                            flash_attention="off").prefill_s(512) for ub in published}
    assert all(got[ub] == pytest.approx(v, rel=0.16) for ub, v in published.items())
    assert list(got.values()) == sorted(got.values())


def test_metal_generation_by_hand():
    """Llama-2-7B Q4_0 on an M2 Ultra: every layer's weights and the Q6_K output, 3.83 GB, at 0.87 x 800 GB/s =
    5.50 ms; 32 layers x 140 us = 4.48 ms; llama.cpp's loop 1 ms; the KV cache of 64 tokens. #4167 measured 94.3
    tokens/s (10.6 ms)."""
    timer = _timer("meta-llama/Llama-2-7b-hf", "apple-m2-ultra", "gguf-q4_0")
    parts = timer.decode_parts(1, 64)
    weights = ggml.streamed_bytes(timer.s, timer.m)
    assert 3.7e9 < weights < 3.9e9
    assert parts["weights"] == pytest.approx(weights / (800e9 * oh.LLAMA_CPP_METAL_DECODE_BANDWIDTH_FRACTION))
    assert parts["kernel_latency"] == pytest.approx(32 * oh.LLAMA_CPP_METAL_LAYER_S)
    assert 1 / timer.decode_s(1, 64) == pytest.approx(94.3, rel=0.05)


def test_cuda_generation_by_hand():
    """Llama-2-7B Q4_0 on an RTX 4090, one token after 64: MMVQ streams every layer's weights and the Q6_K output,
    3.751 GB, at 0.96 x 1,008 GB/s = 3.876 ms; their dot products, 2 x 3.751e9 / 0.5625 bytes per weight = 13.34
    GFLOP at 70 x 128 SMs x 2.52 GHz = 22.58 TFLOP/s, 0.591 ms, join it on the roofline (p = 3): 3.881 ms; 32 layers
    x 60 us = 1.92 ms under CUDA graphs; the cache of 64 tokens, 33.55 MB, 0.035 ms; no host loop (llama-bench does
    not sample). 5.836 ms, 171.4 tokens/s: #15013 measured 189.0 (a held-out row, -9%)."""
    timer = _timer("meta-llama/Llama-2-7b-hf", "rtx-4090", "gguf-q4_0")
    parts = timer.decode_parts(1, 64)
    assert set(parts) == {"weights", "kv_cache", "kernel_latency"}
    assert oh.LLAMA_CPP_CUDA_DECODE_BANDWIDTH_FRACTION == 0.96 and oh.LLAMA_CPP_CUDA_LAYER_S == 60e-6
    traffic, compute = 3.751338e9 / (0.96 * 1008e9), 2 * 3.751338e9 / 0.5625 / (70 * 128 * 2520e6)
    assert traffic == pytest.approx(3.876e-3, rel=1e-3) and compute == pytest.approx(0.591e-3, rel=2e-3)
    assert parts["weights"] == pytest.approx((traffic**3 + compute**3) ** (1 / 3), rel=1e-6)
    assert parts["weights"] == pytest.approx(3.881e-3, rel=1e-3)
    assert parts["kernel_latency"] == pytest.approx(32 * 60e-6)
    assert parts["kv_cache"] == pytest.approx(32 * 2 * 4096 * 2 * 64 / (0.96 * 1008e9))
    assert 1 / timer.decode_s(1, 64) == pytest.approx(171.4, abs=0.1)


def test_cuda_decode_takes_mmvq_up_to_eight_rows():
    """MMVQ_MAX_BATCH_SIZE is 8: a llama-server step of 1 to 8 sequences streams the weights once (a step of 8 is
    far less than 8 steps of 1, and slower than one), 9 sequences go to MMQ and the step timer's generic path (its
    host loop shows); the step never gets shorter as the batch grows."""
    timer = _timer("meta-llama/Llama-3.1-8B", "rtx-4090", "gguf-q4_k_m")
    steps = {b: timer.decode_s(b, 1000) for b in (1, 2, 4, 8, 9, 16)}
    assert list(steps.values()) == sorted(steps.values())
    assert steps[1] < steps[8] < 2 * steps[1]
    assert "host" not in timer.decode_parts(8, 1000) and "host" in timer.decode_parts(9, 1000)


def test_cuda_moe_step_reads_the_experts_the_batch_reaches():
    """Qwen3-30B-A3B Q4_K_M on an RTX 5090, 4 sequences: the step streams the experts the 4 tokens reach (more
    bytes than one token's), but each routed expert multiplies only the rows sent to it, so the dot products are 4
    times one token's, not 4 rows through every expert read."""
    timer = _timer("Qwen/Qwen3-30B-A3B", "rtx-5090", "gguf-q4_k_m", batch_size=4)
    s, m, gpu = timer.s, timer.m, timer.gpu
    one, four = ggml.streamed_bytes(s, m, 1), ggml.streamed_bytes(s, m, 4)
    assert 2 * one < four < 4 * one
    bpp = gguf.linear_bytes_per_param(m, "q4_k_m")
    compute = 2 * 4 * one / bpp / ggml.mmvq_flops(gpu)
    traffic = four / (gpu.bandwidth_gbs * 1e9 * oh.LLAMA_CPP_CUDA_DECODE_BANDWIDTH_FRACTION)
    assert timer.decode_parts(4, 1000)["weights"] == pytest.approx((compute**3 + traffic**3) ** (1 / 3), rel=1e-9)


def test_metal_prompt_is_a_share_of_the_fp32_rate():
    """An f16 prompt on an M1 Max runs at 0.80 of 10.4 TFLOPS, a quantized one at 0.70: Q4_0 and Q8_0 prompts take
    the same time (#4167: 530 and 537 tokens/s), F16's is faster (600)."""
    f16 = _timer("meta-llama/Llama-2-7b-hf", "apple-m1-max", None).prefill_s(512)
    q8 = _timer("meta-llama/Llama-2-7b-hf", "apple-m1-max", "gguf-q8_0").prefill_s(512)
    q4 = _timer("meta-llama/Llama-2-7b-hf", "apple-m1-max", "gguf-q4_0").prefill_s(512)
    assert f16 < q4 and q8 == pytest.approx(q4, rel=0.02)
    assert ggml.metal_flops(load_gpu("apple-m1-max"), "f16") == pytest.approx(0.80 * 10.4e12)


def test_layer_split_hands_the_fp32_residual_over_the_link_at_each_boundary():
    """--split-mode layer over 8 A100 PCIe (llama.cpp PR #6017's machine): 7 boundaries, each a copy of the
    micro-batch's fp32 residual (512 x 4,096 x 4 B = 8 MiB) at PCIe gen4's 25.6 GB/s plus 20 us: 2.43 ms for the
    prompt, 16 KiB a token when decoding; one card has none. PR #6017 measured 61.1 ms on eight cards and 59.1 on
    one, 2.0 ms for the 7 hand-offs."""
    split = _timer("meta-llama/Llama-2-7b-hf", "a100-pcie-80gb", None, num_gpus=8, pp=8, flash_attention="off")
    one = _timer("meta-llama/Llama-2-7b-hf", "a100-pcie-80gb", None, flash_attention="off")
    assert split.prefill_parts(512)["layer_split_handoffs"] == pytest.approx(7 * (20e-6 + 512 * 4096 * 4 / 25.6e9))
    assert split.prefill_parts(1024)["layer_split_handoffs"] == pytest.approx(7 * (40e-6 + 1024 * 4096 * 4 / 25.6e9))
    assert split.decode_parts(1, 64)["layer_split_handoffs"] == pytest.approx(7 * (20e-6 + 4096 * 4 / 25.6e9))
    assert "layer_split_handoffs" not in one.prefill_parts(512)
    assert split.prefill_s(512) - one.prefill_s(512) == pytest.approx(2.434e-3, rel=1e-3)
