"""The dense matmul rate a card sustains at its power cap (overheads.SUSTAINED_MATMUL_TFLOPS, gemm.sustained_flops):
a ceiling on any GEMM's achieved rate, from AMD's Max-Achievable FLOPs for MI300X and MI325X; by hand, and on the
held-out MLPerf Training rows (bench/results/rocm_training_s25.md).

Tolerances: 1e-9 for the arithmetic; the MLPerf step errors within the spread of the rows of one card."""

from __future__ import annotations

import math

import pytest

from gpuplan.hardware import load_gpu
from gpuplan.speed import gemm

MI300X = load_gpu("amd-instinct-mi300x")
MI325X = load_gpu("amd-instinct-mi325x")


def test_a_large_fp8_gemm_on_mi300x_runs_at_amds_max_achievable_rate():
    """[8192 x 8192] @ [8192 x 28672] in fp8 (Llama-2-70B's fused gate/up projection at a MLPerf LoRA micro-batch):
    the short-loop rate 2,614.9 TFLOPS x 0.601 = 1,571.55 TFLOPS with the shape 1 + 68/8192 + 132/8192 + 218/28672
    = 1.032017 (no CU count in the catalog: scale 1) gives 3.848291e12 FLOP x 1.032017 / 1.571555e15 = 2,527.1 us,
    above the 1,273 TFLOPS the MI300X sustains at 750 W: 3.848291e12 / 1.273e15 = 3,023.01 us; traffic 8192·8192·1
    + 8192·28672·2 (bf16 out) + 8192·28672·1 = 771,751,936 B at 5,300 x 0.8 GB/s = 182.02 us;
    (3,023.01^3 + 182.02^3)^(1/3) + 5 us latency = 3,028.23 us (1,271 TFLOPS achieved)."""
    flops = 2 * 8192 * 8192 * 28672
    short = flops * (1 + 68 / 8192 + 132 / 8192 + 218 / 28672) / (2614.9e12 * 0.601)
    capped = flops / 1273e12
    assert short == pytest.approx(2527.1e-6, rel=1e-4) and capped == pytest.approx(3023.01e-6, rel=1e-5)
    traffic = (8192 * 8192 + 8192 * 28672 * 2 + 8192 * 28672) / (5300e9 * 0.8)
    expected = (capped**3 + traffic**3) ** (1 / 3) + 5e-6
    got = gemm.gemm_time_s(MI300X, "fp8", 8192, 8192, 28672, act_bytes=1, weight_bytes=1, out_bytes=2)
    assert got == pytest.approx(expected, rel=1e-9) and got == pytest.approx(3028.23e-6, rel=1e-5)


def test_the_ceiling_is_per_card_and_dtype_and_never_raises_a_rate():
    """MI300X: 708 bf16, 654 fp16, 1,273 fp8 TFLOPS; MI325X 843, 794, 1,519. The MI325X's bf16 ceiling (843) is above
    its short-loop rate (1,307.4 x 0.601 = 785.7): a large bf16 GEMM keeps the short-loop rate there. No NVIDIA card,
    and no MI355X (no AMD figure), has one; fp32 has none."""
    assert gemm.sustained_flops(MI300X, "bf16") == 708e12 and gemm.sustained_flops(MI300X, "fp16") == 654e12
    assert gemm.sustained_flops(MI300X, "fp8") == 1273e12 and gemm.sustained_flops(MI325X, "fp8") == 1519e12
    for card in ("nvidia-h100-sxm5-80gb", "nvidia-h200-sxm-141gb", "amd-instinct-mi355x"):
        assert math.isinf(gemm.sustained_flops(load_gpu(card), "fp8"))
    assert math.isinf(gemm.sustained_flops(MI300X, "fp32"))
    m = k = n = 16384
    no_ceiling = 2 * m * k * n * (1 + 68 / m + 132 / k + 218 / n) / (1307.4e12 * 0.601)
    traffic = 3 * m * k * 2 / (6000e9 * 0.8)
    assert gemm.gemm_time_s(MI325X, "bf16", m, k, n) == pytest.approx(
        (no_ceiling**3 + traffic**3) ** (1 / 3) + 5e-6, rel=1e-9)


def test_thin_and_slow_kernels_keep_their_own_rate():
    """A decode GEMV (1 token) and an early block-scaled fp8 kernel (a seventh of the fast rate) achieve far less than
    the ceiling: their times are what the short-loop rate gives."""
    gemv = 2 * 8192 * 8192 * (1 + 68 / 16 + 132 / 8192 + 218 / 8192) / (2614.9e12 * 0.601)  # M below a tile: 16
    gemv_traffic = (8192 * 2 + 8192 * 2 + 8192 * 8192 * 2) / (5300e9 * 0.8)
    assert gemm.gemm_time_s(MI300X, "fp8", 1, 8192, 8192) == pytest.approx(
        (gemv**3 + gemv_traffic**3) ** (1 / 3) + 5e-6, rel=1e-9)
    flops = 2 * 4096 * 7168 * 4608
    slow = flops * (1 + 68 / 4096 + 132 / 7168 + 218 / 4608) / (2614.9e12 * 0.601 * 0.143)
    assert flops / slow < 1273e12 / 4
    traffic = (4096 * 7168 + 4096 * 4608 * 2 + 7168 * 4608) / (5300e9 * 0.8)
    assert gemm.gemm_time_s(MI300X, "fp8", 4096, 7168, 4608, act_bytes=1, weight_bytes=1, out_bytes=2,
                            kernel_share=0.143) == pytest.approx((slow**3 + traffic**3) ** (1 / 3) + 5e-6, rel=1e-9)
