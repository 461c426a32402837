"""The H100 SXM's GEMM rate against measured GEMMs, as gpuplan has it and with the H200's measured LLM-shape asymptote
(overheads.GEMM_SHAPE_ASYMPTOTE, 0.915 of the best-shape MAMF: bench/data/gpu-measurements/gemm-h200-2026-11-27.json)
applied to the H100 SXM too, the same GH100 die at the same 700 W TDP. A what-if, not a model change
(bench/results/train_s30.md).

Measurements:
- Meta's H100 at 500 W (the catalog's nvidia-h100-sxm5-96gb, power_limit_w 500): pytorch/FBGEMM PR #2546
  (2024-04-29, fbgemm_gpu/experimental/gen_ai/bench/fp8_gemm_benchmark.py: torch.matmul bf16 of [M, K] by [N, K].T,
  Triton's do_bench_cudagraph, rep 100 ms), shapes (M, N, K).
- Azure ND H100 v5 (700 W): cuBLASLt fp8, random inputs, 10,000 warm-up iterations (Azure/AI-benchmarking-guide,
  samuel-bohman's fork Azure_Results/ND_H100_v5_results.md); the same page for ND H200 v5 reads within 2.5 % of it.
  Compared with gpuplan's fast-accumulating fp8 rate (the accumulation Azure's benchmark used is not stated).

``python bench/h100_gemm_check.py`` prints each measurement with gpuplan's rate now and at the asymptote.
"""

from __future__ import annotations

import sys
from pathlib import Path
from unittest import mock

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from gpuplan import overheads as oh  # noqa: E402
from gpuplan.hardware import load_gpu  # noqa: E402
from gpuplan.speed import gemm  # noqa: E402

FBGEMM_500W_BF16 = [((8192, 8192, 8192), 585.23), ((65536, 8192, 7168), 575.12), ((65536, 3584, 8192), 546.31)]
AZURE_H100_FP8 = [((8192, 8192, 8192), 1290.1), ((16384, 16384, 16384), 1377.3), ((32768, 32768, 32768), 1382.2),
                  ((6144, 12288, 12288), 1351.4)]
H100_SXM = ("nvidia-h100-sxm5-80gb", "nvidia-h100-sxm5-96gb")


def tflops(gpu_id: str, dtype: str, m: int, n: int, k: int) -> float:
    """gpuplan's achieved TFLOP/s for one [m x k] @ [k x n] GEMM (fp8: 1-byte operands, a bf16 output)."""
    width = 1.0 if dtype == "fp8" else 2.0
    t = gemm.gemm_time_s(load_gpu(gpu_id), dtype, m, k, n, act_bytes=width, weight_bytes=width, out_bytes=2.0)
    return 2 * m * k * n / t / 1e12


def rows(asymptote: bool) -> list[tuple[str, float, float]]:
    """(label, measured, gpuplan) for every measurement, with or without the asymptote on the H100 SXM."""
    extra = {gpu_id: oh.GEMM_SHAPE_ASYMPTOTE["nvidia-h200-sxm-141gb"] for gpu_id in H100_SXM} if asymptote else {}
    with mock.patch.dict(oh.GEMM_SHAPE_ASYMPTOTE, extra), mock.patch.dict(gemm._RATES, clear=True):
        out = [(f"H100 500 W bf16 {m}x{n}x{k} (FBGEMM #2546)", value, tflops(H100_SXM[1], "bf16", m, n, k))
               for (m, n, k), value in FBGEMM_500W_BF16]
        out += [(f"H100 700 W fp8 {m}x{n}x{k} (Azure)", value, tflops(H100_SXM[0], "fp8", m, n, k))
                for (m, n, k), value in AZURE_H100_FP8]
    return out


def main() -> None:
    print("| measurement | measured TFLOPS | gpuplan | error % | at the GH100 asymptote | error % |")
    print("|---|---:|---:|---:|---:|---:|")
    for (label, value, now), (_, _, then) in zip(rows(False), rows(True), strict=True):
        print(f"| {label} | {value:.1f} | {now:.1f} | {100 * (now / value - 1):+.1f} | {then:.1f} | "
              f"{100 * (then / value - 1):+.1f} |")


if __name__ == "__main__":
    main()
