"""What AMD's own Max-Achievable FLOPs would do to the AMD MLPerf Training rows (bench/data/mlperf-training-other.csv)
taken as the matmul share outright (every GEMM, thin ones too, at it): a check of one mechanism. gpuplan's MI300X and
MI325X share is one figure for every precision (overheads.MATMUL_PEAK_FRACTION 0.601: stas00/ml-engineering's BF16
MAMF on MI300X, ROCm 6.2), and since session 25 AMD's figures are a ceiling on every GEMM's achieved rate
(overheads.SUSTAINED_MATMUL_TFLOPS, speed/gemm.py sustained_flops), which the first column below includes.

AMD's table (ROCm blogs, "Measuring Max-Achievable FLOPs - Part 2", Table 1; ROCm/rocm-blogs
blogs/software-tools-optimization/measuring-max-achievable-flops-part2/README.md, hipBLASLt db8e93b, normal-like
``trig_float`` inputs, ROCm 6.3.0): MI300X (750 W) BF16 708 TFLOPS at 1,207 MHz, FP8 1,273 at 1,230 MHz; MI325X
(1000 W) BF16 843 at 1,447 MHz, FP8 1,519 at 1,464 MHz. Over the datasheet (BF16 1,307.4, FP8 2,614.9): MI300X 0.542
and 0.487, MI325X 0.645 and 0.581. The MI325X holds a higher clock at its higher power cap, the same chip otherwise.

``python bench/amd_maf_check.py`` prints each expressed AMD row's step error as gpuplan has it and with AMD's MAF.
"""

from __future__ import annotations

import csv
import statistics
import sys
from pathlib import Path
from unittest import mock

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "bench"))

import mlperf  # noqa: E402
from gpuplan.speed import gemm, work  # noqa: E402

# AMD's MAF over the datasheet, by card and precision (the table above)
MAF = {("amd-instinct-mi300x", "bf16"): 708 / 1307.4, ("amd-instinct-mi300x", "fp8"): 1273 / 2614.9,
       ("amd-instinct-mi325x", "bf16"): 843 / 1307.4, ("amd-instinct-mi325x", "fp8"): 1519 / 2614.9}


def with_maf(gpu, dtype: str = "bf16") -> float:
    return MAF.get((gpu.id, dtype), ORIGINAL(gpu, dtype))


ORIGINAL = gemm.full_clock_fraction


def main() -> None:
    with mlperf.OTHER.open() as f:
        rows = [r for r in csv.DictReader(f) if r["gpu"] in ("amd-instinct-mi300x", "amd-instinct-mi325x")]
    before, _ = mlperf.run(rows)
    with mock.patch.object(gemm, "full_clock_fraction", with_maf), \
            mock.patch.object(work, "full_clock_fraction", with_maf), mock.patch.object(gemm, "_RATES", {}):
        after, _ = mlperf.run(rows)  # gemm._RATES holds each card's rate once worked out: a fresh one here
    print("| id | system | card | step error % gpuplan | with AMD's MAF |\n|---|---|---|---:|---:|")
    for b, a in zip(before, after, strict=True):
        print(f"| {b['id']} | {b['system']} | {b['gpu']} | {b['step_error_pct']:+.1f} | {a['step_error_pct']:+.1f} |")
    for card in ("amd-instinct-mi300x", "amd-instinct-mi325x"):
        pairs = [(b, a) for b, a in zip(before, after, strict=True) if b["gpu"] == card]
        print(f"| median | | {card} | {statistics.median(b['step_error_pct'] for b, _ in pairs):+.1f} | "
              f"{statistics.median(a['step_error_pct'] for _, a in pairs):+.1f} |")


if __name__ == "__main__":
    main()
