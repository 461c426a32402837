"""Block-scaled fp8 GEMMs as the engines run them (engines/block_fp8.py): the first DeepSeek-V3 releases' Triton
kernels (overheads.BLOCK_FP8_KERNEL_SHARE), DeepGEMM and its ports (DEEPGEMM_KERNEL_SHARE), the later Triton MoE
(TRITON_MOE_OVER_DEEPGEMM), FlashInfer's groupwise GEMM on Blackwell (FLASHINFER_GROUPWISE_KERNEL_SHARE): one
kernel's time by hand, the published timings each was fitted on and checked against, and which engine release takes
which."""

from __future__ import annotations

import statistics

import pytest

from gpuplan import overheads as oh
from gpuplan.hardware import load_gpu
from gpuplan.plan.resolve import resolve
from gpuplan.scenario import scenario_from
from gpuplan.speed.gemm import gemm_time_s
from gpuplan.speed.inference import step_timer

H200 = load_gpu("nvidia-h200-sxm-141gb")
H100 = load_gpu("nvidia-h100-sxm5-80gb")


def _triton(gpu, m: int, k: int, n: int) -> float:
    """The kernel's seconds: fp8 operands, a bf16 output, at the early kernels' share."""
    return gemm_time_s(gpu, "fp8", m, k, n, act_bytes=1, weight_bytes=1, out_bytes=2,
                       kernel_share=oh.BLOCK_FP8_KERNEL_SHARE)


def test_one_triton_block_fp8_gemm_by_hand():
    """m = 4,096, k = 7,168, n = 24,576 on an H200 (SGLang PR #3893's tp=1 table, the row the share is fitted on:
    4,067.3 us). The rate: 1,978.9 TFLOPS fp8 x 0.801 (the MAMF share) x 0.915 (the H200's shape asymptote) x
    1,044.0 / 4,067.3; the shape term 1 + 68/4,096 + 132/7,168 + 218/24,576; the bytes 4,096 x 7,168 (fp8 in) +
    4,096 x 24,576 x 2 (bf16 out) + 7,168 x 24,576 (fp8 weights) at 0.8 x 4,800 GB/s; p = 3; 5 us of latency."""
    flops = 2 * 4096 * 7168 * 24576
    rate = 1978.9e12 * 0.801 * 0.915 * (1044.0 / 4067.3)
    compute = flops * (1 + 68 / 4096 + 132 / 7168 + 218 / 24576) / rate
    traffic = (4096 * 7168 + 4096 * 24576 * 2 + 7168 * 24576) / (0.8 * 4800e9)
    by_hand = (compute**3 + traffic**3) ** (1 / 3) + 5e-6
    assert compute == pytest.approx(4.04e-3, rel=0.01) and traffic == pytest.approx(0.106e-3, rel=0.01)
    assert _triton(H200, 4096, 7168, 24576) == pytest.approx(by_hand, rel=1e-3)
    assert by_hand == pytest.approx(4067.3e-6, rel=0.01)  # what it was fitted on
    # the fast-accumulating rate gpuplan gives an fp8 GEMM otherwise: 3.9x shorter
    fast = gemm_time_s(H200, "fp8", 4096, 7168, 24576, act_bytes=1, weight_bytes=1, out_bytes=2)
    assert fast == pytest.approx(1044.0e-6, rel=0.01)


@pytest.mark.parametrize(("m", "n", "k", "published_us", "low", "high"), [
    (2048, 24576, 7168, 2157.6, 0.93, 0.98),
    (4096, 32768, 512, 513.5, 0.90, 0.96),
    (2048, 32768, 512, 275.7, 0.86, 0.92),
    (1024, 32768, 512, 154.8, 0.80, 0.86),
])
def test_the_same_tables_other_rows_are_checks(m, n, k, published_us, low, high):
    """SGLang PR #3893 (2025-02-26, one H200, benchmark_deepgemm_fp8_gemm.py, tp=1, the SGLang column): held out of
    the fit; gpuplan's time over the published one (the model is up to 17 % fast on k = 512's thin products)."""
    assert low < _triton(H200, m, k, n) / (published_us * 1e-6) < high


@pytest.mark.parametrize(("m", "tflops"), [(1024, 366.84), (2048, 396.03), (4096, 402.98), (8192, 406.51)])
def test_vllms_tuned_triton_kernel_on_an_h100_is_a_check(m, tflops):
    """vLLM PR #23280 (September 2025, one H100 SXM, benchmark_w8a8_block_fp8.py, DeepSeek-V3's N = 2,112,
    K = 7,168, 'w8a8-block-fp8-triton' with a tuned config): a later Triton and tuned configs, 12-13 % faster than
    the early kernel's share says."""
    achieved = 2 * m * 7168 * 2112 / _triton(H100, m, 7168, 2112) / 1e12
    assert 0.85 < achieved / tflops < 0.90


def _timer(engine: str, version: str, gpu: str = "h200", **kw):
    r = resolve(scenario_from(dict({"model": "deepseek-r1", "task": "infer", "engine": engine, "gpu": gpu,
                                    "num_gpus": 8, "tp": 8, "prompt_tokens": 3200, "output_tokens": 800,
                                    "engine_version": version}, **kw)))
    return step_timer(r.scenario, r.model, r.gpu)


def test_the_engines_take_it_for_their_first_deepseek_releases_only():
    """vLLM 0.7 (its CUTLASS block-FP8 linears and Triton fused MoE) and SGLang 0.4.3 run DeepSeek-R1's block-FP8
    checkpoint at the share, every linear as an fp8 GEMM but the router; SGLang 0.5.7 runs its linears through
    DeepGEMM and its experts through the tuned Triton MoE (engines/block_fp8.py), both at DeepGEMM's share at TP 8."""
    for engine, early in (("vllm", "0.7.4"), ("sglang", "0.4.3.post2")):
        old = _timer(engine, early)
        assert old.timing.block_fp8_share == oh.BLOCK_FP8_KERNEL_SHARE == old.timing.block_fp8_expert_share
        lins = [lin for layer in old.m.layers for lin in layer.linears]
        router = next(lin for lin in lins if lin.group == "router")
        expert = next(lin for lin in lins if lin.group == "experts")
        assert (old.linear_dtype(expert), old.kernel_share(expert)) == ("fp8", oh.BLOCK_FP8_KERNEL_SHARE)
        assert old.kernel_share(router) == 1.0 and old.linear_dtype(router) != "fp8"
    new = _timer("sglang", "0.5.7")
    expert = next(lin for layer in new.m.layers for lin in layer.linears if lin.group == "experts")
    attention = next(lin for layer in new.m.layers for lin in layer.linears if lin.group == "attention")
    assert (new.linear_dtype(expert), new.kernel_share(expert)) == ("fp8", oh.DEEPGEMM_KERNEL_SHARE)
    assert (new.linear_dtype(attention), new.kernel_share(attention)) == ("fp8", oh.DEEPGEMM_KERNEL_SHARE)
    # a 3,200-token prompt's GEMMs on vLLM 0.7 against SGLang 0.5.7's: the Triton share (0.257) against DeepGEMM's
    # (0.875) is 3.4x on the compute; the experts' ~100 rows each stay partly bound by their weights' bytes
    ratio = _timer("vllm", "0.7.4").prefill_parts(3200)["gemm"] / new.prefill_parts(3200)["gemm"]
    assert 2.6 < ratio < 3.4


def _deepgemm(gpu, m: int, k: int, n: int, groups: int = 1) -> float:
    """DeepGEMM's seconds: fp8 operands, a bf16 output, ``groups`` experts in one kernel, at its share."""
    return gemm_time_s(gpu, "fp8", m, k, n, count=groups, kernels=1, act_bytes=1, weight_bytes=1, out_bytes=2,
                       kernel_share=oh.DEEPGEMM_KERNEL_SHARE)


def _fast(gpu, m: int, k: int, n: int, groups: int = 1) -> float:
    return gemm_time_s(gpu, "fp8", m, k, n, count=groups, kernels=1, act_bytes=1, weight_bytes=1, out_bytes=2)


# deepseek-ai/DeepGEMM@55ab91f README.md "Performance" (H800 SXM5, 2025-03-25): M, N, K, groups, published TFLOPS
README_FIT = [(4096, 2112, 7168, 1, 1009), (4096, 24576, 1536, 1, 1125), (4096, 32768, 512, 1, 751),
              (4096, 7168, 16384, 1, 1426), (4096, 4096, 7168, 1, 1265), (4096, 7168, 2048, 1, 1168),
              (8192, 4096, 7168, 4, 1346), (8192, 7168, 2048, 4, 1214), (4096, 4096, 7168, 8, 1346),
              (4096, 7168, 2048, 8, 1214)]


def test_the_deepgemm_share_is_the_median_of_the_readmes_compute_bound_rows():
    """The H800 has the H100 SXM's compute: gpuplan's fast fp8 time over the published one on the README's six
    normal GEMMs at M = 4,096 and four contiguous grouped ones, whose median is the share (0.875)."""
    ratios = sorted(_fast(H100, m, k, n, g) / (2 * g * m * n * k / (tf * 1e12)) for m, n, k, g, tf in README_FIT)
    assert [round(r, 2) for r in ratios] == [0.77, 0.78, 0.83, 0.86, 0.87, 0.88, 0.90, 0.92, 0.93, 0.96]
    assert (ratios[4] + ratios[5]) / 2 == pytest.approx(oh.DEEPGEMM_KERNEL_SHARE, abs=0.005)


@pytest.mark.parametrize(("groups", "m", "n", "k", "tflops", "low", "high"), [
    (1, 1024, 4096, 7168, 1233, 1.10, 1.16), (1, 1024, 7168, 2048, 925, 0.92, 0.98),
    (2, 512, 4096, 7168, 1040, 1.00, 1.06), (2, 512, 7168, 2048, 916, 1.00, 1.06),
    (4, 256, 4096, 7168, 932, 1.11, 1.16), (4, 256, 7168, 2048, 815, 1.09, 1.15),
])
def test_the_readmes_masked_rows_are_checks(groups, m, n, k, tflops, low, high):
    """The README's masked grouped rows (256-1,024 rows an expert), held out of the fit: gpuplan's time at the share
    over the published: 5 % fast to 14 % slow."""
    published = 2 * groups * m * n * k / (tflops * 1e12)
    assert low < _deepgemm(H100, m, k, n, groups) / published < high


def test_sglang_pr3893s_h200_deepgemm_column_is_a_check():
    """SGLang PR #3893's tp=1 table on one H200, the DeepGEMM column at the row the Triton share is fitted on
    (m = 4,096, n = 24,576, k = 7,168): 1,354 us published; gpuplan at the share 1,193 us (0.88)."""
    assert _deepgemm(H200, 4096, 7168, 24576) / 1354e-6 == pytest.approx(0.88, abs=0.01)


B200 = load_gpu("b200")
# SGLang PR #13528's B200 table (benchmark_deepgemm_fp8_gemm_blackwell.py --tp-size 4): (m, n, k, DeepGEMM us,
# FlashInfer us), its rows at m >= 1,024 of the two shapes the pull request's text prints
PR13528 = [(1024, 24576, 7168, 146.031998, 826.191992), (2048, 24576, 7168, 260.383993, 1632.544041),
           (1024, 576, 7168, 60.543999, 28.704001), (2048, 576, 7168, 61.439998, 41.216001),
           (4096, 576, 7168, 62.208001, 63.487999)]


def test_the_flashinfer_share_is_the_mean_over_pr13528s_two_shapes():
    """FlashInfer's groupwise FP8 GEMM (trtllm backend) on a B200: gpuplan's fast fp8 time over the published one
    at m >= 1,024, by shape: 0.229 / 0.222 at 24,576 x 7,168 (437 / 442 TFLOPS: 2 x 1,024 x 24,576 x 7,168 /
    826.2 us), 0.378 / 0.397 / 0.432 at 576 x 7,168; the share is the mean of the two shapes' means, (0.225 +
    0.402) / 2 = 0.314."""
    by_shape: dict[int, list[float]] = {}
    for m, n, k, _, fi_us in PR13528:
        by_shape.setdefault(n, []).append(_fast(B200, m, k, n, 1) / (fi_us * 1e-6))
    assert {n: [round(r, 3) for r in v] for n, v in by_shape.items()} == {
        24576: [0.229, 0.222], 576: [0.378, 0.397, 0.432]}
    assert pytest.approx(437, abs=1) == 2 * 1024 * 24576 * 7168 / 826.191992e-6 / 1e12
    means = [statistics.mean(v) for v in by_shape.values()]
    assert statistics.mean(means) == pytest.approx(oh.FLASHINFER_GROUPWISE_KERNEL_SHARE, abs=0.0005)


def test_pr13528s_deepgemm_column_is_faster_than_the_hopper_share_on_the_wide_shape():
    """The same table's DeepGEMM column (SM100 kernels) at 24,576 x 7,168: 5.7 / 6.3x FlashInfer's speed, and
    1.30 / 1.39 of gpuplan's rate alone (so above the 0.875 DEEPGEMM_KERNEL_SHARE timed on Blackwell: a check
    that the B200's DeepGEMM linears are not timed too fast, left as it is)."""
    wide = [r for r in PR13528 if r[1] == 24576]
    assert [round(fi / dg, 2) for *_, dg, fi in wide] == [5.66, 6.27]
    assert [round(_fast(B200, m, k, n, 1) / (dg * 1e-6), 2) for m, n, k, dg, _ in wide] == [1.30, 1.39]


def test_the_triton_moe_against_deepgemm_by_tensor_parallel_width():
    """vLLM PR #13932's H100 table (DeepSeek-V3's experts, 128-2,048 tokens): DeepGEMM's time over Triton's, the
    median of six batch sizes per TP; TP 8's (1.349, Triton the faster) capped at DeepGEMM's own share."""
    deepgemm = {1: [6355.22, 6599.51, 7017.80, 7850.04, 8691.74, 9545.87],
                2: [3745.24, 3917.15, 4270.21, 4874.43, 5559.64, 6217.40],
                4: [2529.50, 2669.84, 3000.99, 3575.18, 4111.26, 4699.03],
                8: [1936.17, 2051.67, 2331.06, 2886.08, 3423.49, 3974.65]}
    triton = {1: [12480.49, 12782.98, 13017.54, 13322.31, 13777.98, 19839.38],
              2: [6025.39, 6164.44, 6631.64, 6800.41, 7037.34, 10111.40],
              4: [3121.16, 3236.88, 3433.29, 3546.83, 3677.90, 5230.76],
              8: [1732.33, 1728.73, 1810.36, 1892.75, 1988.70, 2818.65]}
    medians = {tp: statistics.median(d / t for d, t in zip(deepgemm[tp], triton[tp], strict=True)) for tp in deepgemm}
    assert {tp: round(v, 3) for tp, v in medians.items()} == {1: 0.528, 2: 0.640, 4: 0.886, 8: 1.349}
    capped = {tp: min(round(v, 3), 1.0) for tp, v in medians.items()}
    assert capped == oh.TRITON_MOE_OVER_DEEPGEMM


def _kernels(engine: str, version: str | None, gpu: str = "h200", **kw) -> tuple[float, float]:
    t = _timer(engine, version, gpu=gpu, **kw).timing if version else step_timer(*_resolved(engine, gpu, **kw)).timing
    return round(t.block_fp8_share, 4), round(t.block_fp8_expert_share, 4)


def _resolved(engine: str, gpu: str, **kw):
    r = resolve(scenario_from(dict(model="deepseek-r1", task="infer", engine=engine, gpu=gpu, num_gpus=8, tp=8,
                                   prompt_tokens=3200, output_tokens=800, **kw)))
    return r.scenario, r.model, r.gpu


T, D, F = round(oh.BLOCK_FP8_KERNEL_SHARE, 4), oh.DEEPGEMM_KERNEL_SHARE, oh.FLASHINFER_GROUPWISE_KERNEL_SHARE


@pytest.mark.parametrize(("engine", "version", "gpu", "kw", "shares"), [
    ("sglang", "0.4.3.post2", "h200", {}, (T, T)),  # Triton for both (the early releases)
    ("sglang", "0.4.5", "h200", {}, (T, D)),  # DeepGEMM opt-in until PR #5628; the tuned Triton MoE at TP 8
    ("sglang", "0.4.6", "h200", {}, (D, D)),
    ("sglang", "0.5.12", "h200", {"tp": 4, "num_gpus": 4}, (D, round(D * 0.886, 4))),  # the MoE at TP 4
    ("sglang", "0.5.12", "b200", {}, (D, D)),  # flashinfer_trtllm's MoE on SM 10.x
    ("sglang", "0.5.12", "b200", {"fp8_gemm_backend": "flashinfer_trtllm"}, (F, D)),  # FlashInfer's linears
    ("sglang", "0.5.12", "b300", {"fp8_gemm_backend": "flashinfer_trtllm"}, (F, D)),
    ("sglang", "0.5.12", "b200", {"fp8_gemm_backend": "deep_gemm"}, (D, D)),  # SGLang's own pick named
    ("vllm", "0.7.4", "h200", {}, (T, T)),
    ("vllm", "0.11.0", "h200", {}, (T, D)),  # the wheel: CUTLASS linears, no deep_gemm; the Triton MoE at TP 8
    ("vllm", "0.19.0", "h200", {"tp": 4, "num_gpus": 4}, (D, D)),  # DeepGEMM bundled; its MoE below TP 8
    ("trtllm", "0.21.0", "h200", {}, (D, D)),
    ("sglang", None, "b200", {"quant": "nvfp4"}, None),  # another format: no block-scaled kernels
])
def test_the_kernel_table_by_engine_and_release(engine, version, gpu, kw, shares):
    """engines/block_fp8.py's table on DeepSeek-R1's own checkpoint: (linears, routed experts) shares of the fast
    fp8 rate; None: the scenario's dtype."""
    if shares is None:
        assert _kernels(engine, version, gpu, **kw) == (0.0, 0.0)
        return
    assert _kernels(engine, version, gpu, **kw) == shares


def test_rocm_after_the_first_releases_is_not_timed_here():
    """SGLang 0.5 on an MI300X (AITER's kernels): the linears keep the scenario's dtype; the first releases' Triton
    kernels run at gfx942's own share (overheads.ROCM_BLOCK_FP8_KERNEL_SHARE)."""
    assert _kernels("sglang", "0.5.12", "mi300x") == (0.0, 0.0)
    assert _kernels("sglang", "0.4.3", "mi300x") == (oh.ROCM_BLOCK_FP8_KERNEL_SHARE,) * 2


@pytest.mark.parametrize(("m", "tflops", "low", "high"), [
    (1, 1.298436, 0.43, 0.49), (16, 20.755163, 0.52, 0.57), (64, 63.663467, 0.50, 0.55),
    (128, 118.310905, 0.62, 0.67), (256, 219.266445, 0.87, 0.92),
])
def test_small_m_is_slower_than_the_share_and_not_modelled(m, tflops, low, high):
    """The gap left at small M (overheads.BLOCK_FP8_KERNEL_SHARE's comment): vLLM PR #23280's graph-captured H100 rows
    (benchmarks/kernels/bench_block_fp8_gemm.py, do_bench_cudagraph; N = 2,112, K = 7,168, 'w8a8-block-fp8-triton')
    take 23.3 us at M = 1, where the share gives 10.7 us. By hand at M = 1: the bytes 7,168 x 2,112 (fp8 weights) +
    7,168 (fp8 in) + 2 x 2,112 (bf16 out) at 0.8 x 3,350 GB/s = 5.65 us; the compute 2 x 7,168 x 2,112 x (1 + 68 / 16 +
    132 / 7,168 + 218 / 2,112) over 1,978.9 TFLOPS x 0.801 x 1,044.0 / 4,067.3 = 0.40 us; p = 3; 5 us of latency.
    gpuplan over published stays in these bands until the gap is modelled."""
    published = 2 * m * 7168 * 2112 / (tflops * 1e12)
    assert low < _triton(H100, m, 7168, 2112) / published < high
    if m == 1:
        traffic = (7168 * 2112 + 7168 + 2112 * 2) / (0.8 * 3350e9)
        compute = 2 * 7168 * 2112 * (1 + 68 / 16 + 132 / 7168 + 218 / 2112) / (1978.9e12 * 0.801 * 1044.0 / 4067.3)
        assert traffic == pytest.approx(5.65e-6, rel=0.01) and compute == pytest.approx(0.40e-6, rel=0.02)
        assert _triton(H100, 1, 7168, 2112) == pytest.approx((traffic**3 + compute**3) ** (1 / 3) + 5e-6, rel=1e-3)
        assert published == pytest.approx(23.3e-6, rel=0.01)
