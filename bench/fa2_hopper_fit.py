"""Refit FlashAttention-2's Hopper share (overheads.ATTENTION_KERNEL_PEAK_FRACTION[("flash2", "Hopper")]) on the
fitted split of bench/throughput.py, as its note says it was set: the rows it moves (those whose estimate changes when
the share does, on a Hopper card), least squares on log(estimate / published) over the fitted ones (id number not a
multiple of 3), the held-out ones only reported. Run it after changing a Hopper GEMM input to see where the share
lands (bench/results/train_s30.md).

``python bench/fa2_hopper_fit.py`` prints, for shares 0.150 to 0.250, the fitted rows' sum of squared log errors and
the median |error| of both splits.
"""

from __future__ import annotations

import math
import statistics
import sys
from pathlib import Path
from unittest import mock

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "src"))
sys.path.insert(0, str(HERE))

import yaml  # noqa: E402

import throughput  # noqa: E402
from gpuplan import overheads as oh  # noqa: E402
from gpuplan.hardware import load_gpu  # noqa: E402

KEY = ("flash2", "Hopper")
SHARES = [round(0.15 + 0.005 * k, 3) for k in range(21)]


def errors(cases: list[dict], share: float) -> dict[str, dict]:
    """Every scored row at ``share``, by id."""
    with mock.patch.dict(oh.ATTENTION_KERNEL_PEAK_FRACTION, {KEY: share}):
        scored, _ = throughput.run(cases)
    return {c["id"]: c for c in scored}


def main() -> None:
    cases = yaml.safe_load((HERE / "throughput_cases.yaml").read_text())["cases"]
    low, high = errors(cases, 0.19), errors(cases, 0.25)
    rows = [i for i in low if low[i]["error_pct"] != high[i]["error_pct"]
            and load_gpu(low[i]["scenario"]["gpu"]).generation == "Hopper"]
    fit = [i for i in rows if not throughput.held_out(low[i])]
    held = [i for i in rows if throughput.held_out(low[i])]
    print(f"{len(rows)} rows run FlashAttention-2 on Hopper: {len(fit)} fitted, {len(held)} held out")
    print("| share | fitted sum of squared log errors | fitted median abs % | held-out median abs % |")
    print("|---:|---:|---:|---:|")
    for share in SHARES:
        e = errors(cases, share)
        sse = sum(math.log(1 + e[i]["error_pct"] / 100) ** 2 for i in fit)
        print(f"| {share:.3f} | {sse:.4f} | {statistics.median(abs(e[i]['error_pct']) for i in fit):.1f} | "
              f"{statistics.median(abs(e[i]['error_pct']) for i in held):.1f} |")


if __name__ == "__main__":
    main()
