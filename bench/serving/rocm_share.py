"""The ROCm builds' share: how much longer an AMD card's decode step takes under SGLang than the CUDA-calibrated step
model says, measured against NVIDIA runs of the same harness (bench/data/sglang_serving.csv).

    python bench/serving/rocm_share.py [--out bench/results/rocm_share.md] [--max-requests 640]

Each AMD row (roles ``rocm-fit`` and ``rocm-check``) is paired with the NVIDIA row of the same source family, model,
workload and concurrency (InferenceX's DeepSeek-R1-0528 FP8 SGLang TP 8 runs, 8k/1k: MI325X against H200). Both are
replayed with SGLang's scheduler and the step model (bench/serving/sglang_serving.py ``run``). A pair's error is
the predicted AMD / NVIDIA TPOT ratio against the measured one, which cancels what the step model gets wrong on both
vendors alike. ``ROCM_DECODE_SLOWDOWN`` (gpuplan/overheads.py) scales the decode step's GPU work on AMD; it is set
by bisection so that the fit rows' median error is zero, as the model applies it (the host loop and the all-reduces
are not scaled). The check rows are scored with it. dstack's March 2025 runs (MI300X on SGLang
0.4.2.post4 at TP 8 against H200 on 0.4.3.post2 with DP attention) are shown as a check of another era and layout.
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent.parent / "src"))

import sglang_serving as bench  # noqa: E402

from gpuplan import overheads as oh  # noqa: E402

PAIRS = {"ix3318-r1-mi325x-8k-": "ix3173-r1-h200-8k-", "dstack-r1-mi300x-": "dstack-r1-h200-"}


def twin(row: dict, by_id: dict) -> dict | None:
    """The NVIDIA row of the same harness, workload and concurrency as the AMD ``row``."""
    for amd, nvidia in PAIRS.items():
        if row["id"].startswith(amd):
            return by_id.get(nvidia + row["id"][len(amd):])
    return None


def tpot(row: dict, max_requests: int, scale: float) -> float:
    """Predicted median TPOT (ms) of ``row`` with the ROCm factor at ``scale``."""
    held, oh.ROCM_DECODE_SLOWDOWN = oh.ROCM_DECODE_SLOWDOWN, scale
    try:
        return bench.run(row, max_requests)["median_tpot_ms"]
    finally:
        oh.ROCM_DECODE_SLOWDOWN = held


def ratio_error(row: dict, nv: dict, max_requests: int, scale: float) -> tuple[float, float, float]:
    """(predicted AMD TPOT with the factor at ``scale``, predicted NVIDIA TPOT, the AMD / NVIDIA ratio's error)."""
    p_amd, p_nv = tpot(row, max_requests, scale), tpot(nv, max_requests, 1.0)
    real = float(row["median_tpot_ms"]) / float(nv["median_tpot_ms"])
    return p_amd, p_nv, (p_amd / p_nv) / real - 1


def fit(rows: list[dict], by_id: dict, max_requests: int) -> float:
    """The factor that zeroes the fit rows' median ratio error (bisection on 1-4)."""
    lo, hi = 1.0, 4.0
    for _ in range(30):
        mid = (lo + hi) / 2
        errs = [ratio_error(r, twin(r, by_id), max_requests, mid)[2] for r in rows]
        lo, hi = (mid, hi) if statistics.median(errs) < 0 else (lo, mid)
    return (lo + hi) / 2


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=str(HERE.parent / "results" / "rocm_share.md"))
    ap.add_argument("--max-requests", type=int, default=640)
    args = ap.parse_args()
    rows = bench.load_rows()
    by_id = {r["id"]: r for r in rows}
    amd = [r for r in rows if r["gpu"].startswith("mi3") and twin(r, by_id)]
    assert amd, "no AMD rows with an NVIDIA twin"
    fitted = fit([r for r in amd if r["role"] == "rocm-fit"], by_id, args.max_requests)
    lines = ["# The ROCm builds' share (SGLang on AMD Instinct against H200, same harness)\n",
             f"Fitted ROCM_DECODE_SLOWDOWN = {fitted:.2f} (the fit rows' median AMD / NVIDIA ratio error zero, the "
             f"factor applied as the model applies it; gpuplan/overheads.py holds {oh.ROCM_DECODE_SLOWDOWN:.2f}). "
             "Errors are (gpuplan - published) / published.\n",
             "| AMD row | role | TPOT AMD / NVIDIA published | AMD factor off | AMD with the factor / NVIDIA "
             "predicted | AMD / NVIDIA ratio error | AMD TPOT error |", "|---|---|---|---|---|---|---|"]
    held: dict[str, list[float]] = {"ratio": [], "abs": [], "era": []}
    for r in amd:
        nv = twin(r, by_id)
        p_amd, p_nv, ratio_err = ratio_error(r, nv, args.max_requests, fitted)
        real_amd, real_nv = float(r["median_tpot_ms"]), float(nv["median_tpot_ms"])
        abs_err = (p_amd - real_amd) / real_amd
        if r["role"] == "rocm-check":
            held["ratio"].append(abs(ratio_err))
            held["abs"].append(abs(abs_err))
        elif not r["role"].startswith("rocm"):
            held["era"].append(abs(abs_err))
        off = tpot(r, args.max_requests, 1.0)
        lines.append(f"| {r['id']} | {r['role']} | {real_amd:.1f} / {real_nv:.1f} ms | {off:.1f} ms | "
                     f"{p_amd:.1f} / {p_nv:.1f} ms | {100 * ratio_err:+.0f}% | {100 * abs_err:+.0f}% |")
    lines += ["", f"Held out (rocm-check, {len(held['ratio'])} rows): median |AMD / NVIDIA ratio error| "
              f"{100 * statistics.median(held['ratio']):.1f}%, median |AMD TPOT error| "
              f"{100 * statistics.median(held['abs']):.1f}% (the latter carries the step model's NVIDIA error on the "
              "same runs: bench/results/moe_layout.md).",
              "", "dstack's rows (March 2025: the MI300X on SGLang 0.4.2.post4 at TP 8, the H200 on 0.4.3.post2 with "
              "DP attention) are another era and layout: there the MI300X decoded faster than the H200 (34.9 against "
              "43.1 ms at 4 requests), the reverse of InferenceX's MI325X against H200; they are shown, not fitted "
              f"(median |MI300X TPOT error| {100 * statistics.median(held['era']):.1f}% with the fitted share)."]
    Path(args.out).write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
