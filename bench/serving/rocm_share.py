"""The ROCm builds' share: how much longer an AMD card's decode step takes under SGLang than the CUDA-calibrated step
model says, measured against NVIDIA runs of the same harness (bench/data/sglang_serving.csv).

    python bench/serving/rocm_share.py [--out bench/results/rocm_share.md] [--max-requests 640]

Each AMD row (roles ``rocm-fit`` and ``rocm-check``) is paired with the NVIDIA row of the same source family, model,
workload and concurrency (InferenceX's DeepSeek-R1-0528 FP8 SGLang TP 8 runs, 8k/1k: MI325X against H200). Both are
replayed with SGLang's scheduler and the step model (bench/serving/sglang_serving.py ``run``) with the ROCm factor
off; a pair's ratio is (measured / predicted TPOT on AMD) / (measured / predicted TPOT on NVIDIA), which cancels what
the step model gets wrong on both vendors alike. ``ROCM_DECODE_SLOWDOWN`` (gpuplan/overheads.py) is the median over
the fit rows; the check rows are scored with it: the error of the predicted AMD / NVIDIA TPOT ratio against the
measured one, and the absolute TPOT error. dstack's March 2025 runs (MI300X against H200, SGLang 0.4.3) are shown
as a check of another era.
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


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=str(HERE.parent / "results" / "rocm_share.md"))
    ap.add_argument("--max-requests", type=int, default=640)
    args = ap.parse_args()
    rows = bench.load_rows()
    by_id = {r["id"]: r for r in rows}
    amd = [r for r in rows if r["gpu"].startswith("mi3") and twin(r, by_id)]
    assert amd, "no AMD rows with an NVIDIA twin"
    pairs = []
    for r in amd:
        nv = twin(r, by_id)
        pred_amd, pred_nv = tpot(r, args.max_requests, 1.0), tpot(nv, args.max_requests, 1.0)
        real_amd, real_nv = float(r["median_tpot_ms"]), float(nv["median_tpot_ms"])
        pairs.append((r, nv, pred_amd, pred_nv, real_amd, real_nv, (real_amd / pred_amd) / (real_nv / pred_nv)))
    fit = statistics.median(p[-1] for p in pairs if p[0]["role"] == "rocm-fit")
    lines = ["# The ROCm builds' share (SGLang on AMD Instinct against H200, same harness)\n",
             f"Fitted ROCM_DECODE_SLOWDOWN = {fit:.2f} (median over the rocm-fit rows; gpuplan/overheads.py holds "
             f"{oh.ROCM_DECODE_SLOWDOWN:.2f}). Errors are (gpuplan - published) / published, with the factor.\n",
             "| AMD row | role | TPOT AMD / NVIDIA published | predicted, factor off | pair ratio | AMD / NVIDIA "
             "ratio error with the factor | AMD TPOT error with the factor |", "|---|---|---|---|---|---|---|"]
    held = {"ratio": [], "abs": []}
    for r, _nv, p_amd, p_nv, real_amd, real_nv, q in pairs:
        with_fit = p_amd * fit
        ratio_err = 100 * ((with_fit / p_nv) / (real_amd / real_nv) - 1)
        abs_err = 100 * (with_fit - real_amd) / real_amd
        if r["role"] == "rocm-check":
            held["ratio"].append(abs(ratio_err))
            held["abs"].append(abs(abs_err))
        lines.append(f"| {r['id']} | {r['role']} | {real_amd:.1f} / {real_nv:.1f} ms | {p_amd:.1f} / {p_nv:.1f} ms | "
                     f"{q:.2f} | {ratio_err:+.0f}% | {abs_err:+.0f}% |")
    lines += ["", f"Held out (rocm-check, {len(held['ratio'])} rows): median |AMD / NVIDIA ratio error| "
              f"{statistics.median(held['ratio']):.1f}%, median |AMD TPOT error| {statistics.median(held['abs']):.1f}% "
              "(the latter carries the step model's NVIDIA error on the same runs: bench/results/sglang_serving.md).",
              "", "dstack's rows (March 2025, SGLang 0.4.3) are another era: there the MI300X decoded faster than the "
              "H200 (34.9 against 43.1 ms at 4 requests), and both ran 2x slower than the step model; they are shown, "
              "not fitted."]
    Path(args.out).write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
