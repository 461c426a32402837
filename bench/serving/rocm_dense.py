"""The ROCm builds' share on dense models: how much longer an AMD card's decode step takes under vLLM than the
CUDA-calibrated step model says, measured against NVIDIA runs of the same client and workloads
(bench/data/rocm_dense_runs.csv).

    python bench/serving/rocm_dense.py [--out bench/results/rocm_dense.md]

Each MI300X row (dstack's vLLM ``benchmark_throughput.py`` runs of Llama 3.1 405B FP8 at TP 8, dstackai/benchmarks
comparison/h100sxm5_vs_mi300x) is paired with the 8x H100 row of the same input length, output length and batch
(bench/data/serving_load_runs.csv, scored by bench/serving/load_accuracy.py). Both are replayed offline with the step
model (``gpuplan.estimate``, the row's batch as the offline batch). A pair's error is the predicted AMD / NVIDIA
requests/s ratio against the measured one, which cancels what the step model gets wrong on both vendors alike.
``ROCM_DENSE_DECODE_SLOWDOWN`` (gpuplan/overheads.py) is set by bisection so that the fit rows' median error is zero;
the check rows (roles in the data file) are scored with it. The two sides differ in more than the vendor: AMD's
FP8-KV checkpoint quantizes every linear and the KV cache to FP8 where Meta's leaves attention and two MLPs in bf16,
and the MI300X ran with ``--enforce-eager``; both are replayed as run (the MI300X side as fp8 weights, fp8 KV cache and
enforce_eager), so the fitted share is the ROCm build's residue after them.
"""

from __future__ import annotations

import argparse
import csv
import statistics
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent.parent / "src"))

import load_accuracy as load  # noqa: E402

from gpuplan import estimate  # noqa: E402
from gpuplan import overheads as oh  # noqa: E402

DATA = HERE.parent / "data" / "rocm_dense_runs.csv"


def amd_rows() -> list[dict]:
    """The MI300X rows of bench/data/rocm_dense_runs.csv."""
    with DATA.open() as f:
        return list(csv.DictReader(f))


def nvidia_rows() -> dict[str, dict]:
    """bench/data/serving_load_runs.csv by id (the H100 twins)."""
    with (HERE.parent / "data" / "serving_load_runs.csv").open() as f:
        return {r["id"]: r for r in csv.DictReader(f)}


def amd_scenario(row: dict, twin: dict) -> dict:
    """The AMD row as a scenario: its twin's workload on the row's cards, release, quantization and eager flag."""
    s = load.scenario({**twin, **{k: row[k] for k in ("engine_version", "model", "gpu", "tp", "quant",
                                                      "kv_cache_dtype", "prompt_tokens", "output_tokens")}})
    return {**s, "enforce_eager": row["enforce_eager"] == "true", "batch_size": int(row["num_requests"])}


def amd_rps(row: dict, twin: dict, scale: float) -> float:
    """Predicted requests/s of the AMD ``row`` with the dense ROCm factor at ``scale``."""
    held, oh.ROCM_DENSE_DECODE_SLOWDOWN = oh.ROCM_DENSE_DECODE_SLOWDOWN, scale
    try:
        return estimate(amd_scenario(row, twin), advise=False).offline.request_throughput
    finally:
        oh.ROCM_DENSE_DECODE_SLOWDOWN = held


def ratio_error(row: dict, twin: dict, nv_pred: float, scale: float) -> tuple[float, float]:
    """(predicted AMD requests/s at ``scale``, the AMD / NVIDIA requests/s ratio's error)."""
    p_amd = amd_rps(row, twin, scale)
    real = float(row["request_throughput"]) / float(twin["request_throughput"])
    return p_amd, (p_amd / nv_pred) / real - 1


def fit(rows: list[dict], twins: dict, nv_pred: dict) -> float:
    """The factor that zeroes the fit rows' median ratio error (bisection on 1-4; a larger factor, fewer req/s)."""
    lo, hi = 1.0, 4.0
    for _ in range(25):
        mid = (lo + hi) / 2
        errs = [ratio_error(r, twins[r["twin"]], nv_pred[r["twin"]], mid)[1] for r in rows]
        lo, hi = (lo, mid) if statistics.median(errs) < 0 else (mid, hi)
    return (lo + hi) / 2


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=str(HERE.parent / "results" / "rocm_dense.md"))
    args = ap.parse_args()
    rows, twins = amd_rows(), nvidia_rows()
    nv_pred = {r["twin"]: load.predict(twins[r["twin"]])["req/s"] for r in rows}
    fitted = fit([r for r in rows if r["role"] == "rocm-fit"], twins, nv_pred)
    lines = ["# The ROCm builds' share on dense models (vLLM on MI300X against H100, same client)\n",
             f"Fitted ROCM_DENSE_DECODE_SLOWDOWN = {fitted:.2f} (the fit rows' median AMD / NVIDIA requests/s ratio "
             f"error zero; gpuplan/overheads.py holds {oh.ROCM_DENSE_DECODE_SLOWDOWN:.2f}, the MoE figure "
             f"ROCM_DECODE_SLOWDOWN {oh.ROCM_DECODE_SLOWDOWN:.2f}). Errors are (gpuplan - published) / published; "
             "requests/s, so a slower predicted card reads negative.\n",
             "| MI300X row | role | req/s MI300X / H100 published | MI300X factor 1 | MI300X at the MoE factor | "
             "MI300X at the fitted factor / H100 predicted | ratio error (MoE factor) | ratio error (fitted) | "
             "MI300X req/s error (fitted) |", "|---|---|---|---|---|---|---|---|---|"]
    held: dict[str, list[float]] = {"ratio": [], "abs": [], "moe": []}
    for r in rows:
        tw, nv = twins[r["twin"]], nv_pred[r["twin"]]
        real_amd, real_nv = float(r["request_throughput"]), float(tw["request_throughput"])
        p_amd, err = ratio_error(r, tw, nv, fitted)
        p_moe, err_moe = ratio_error(r, tw, nv, oh.ROCM_DECODE_SLOWDOWN)
        off = amd_rps(r, tw, 1.0)
        abs_err = p_amd / real_amd - 1
        if r["role"] == "rocm-check":
            held["ratio"].append(abs(err))
            held["abs"].append(abs(abs_err))
            held["moe"].append(abs(err_moe))
        lines.append(f"| {r['id']} | {r['role']} | {real_amd:.4f} / {real_nv:.4f} | {off:.4f} | {p_moe:.4f} | "
                     f"{p_amd:.4f} / {nv:.4f} | {100 * err_moe:+.0f}% | {100 * err:+.0f}% | {100 * abs_err:+.0f}% |")
    lines += ["", f"Held out (rocm-check, {len(held['ratio'])} rows): median |AMD / NVIDIA ratio error| "
              f"{100 * statistics.median(held['ratio']):.1f}% with the fitted dense factor, "
              f"{100 * statistics.median(held['moe']):.1f}% with the MoE factor; median |MI300X req/s error| "
              f"{100 * statistics.median(held['abs']):.1f}% (it carries the step model's H100 error on the same runs: "
              "bench/results/load_accuracy.md).",
              "", "One source, one model, one release (vLLM 0.6.3's ROCm build, October 2024, run eager): the dense "
              "share of later ROCm releases is not measured here."]
    Path(args.out).write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
