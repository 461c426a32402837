"""Replay public vLLM serving runs with gpuplan's scheduler simulation (bench/serving/serving_cases.yaml).

    python bench/serving/serving_accuracy.py [--out bench/results/serving_accuracy.md] [--max-requests 3000]

For each run: vLLM's KV pool for the setup (engines/vllm.py), the step model sampled from the speed
layer's StepTimer, and the run's requests (its rate, lengths, shared prefix, client concurrency) through the
simulation. Scores mean TTFT and mean TPOT on the runs below the knee and output throughput on saturated ones,
per source and role (calibration rows set constants; check rows are independent). error = (gpuplan - measured)
/ measured.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import yaml

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
sys.path.insert(0, str(ROOT / "src"))

import dataclasses  # noqa: E402

import numpy as np  # noqa: E402

from gpuplan.engines import vllm  # noqa: E402
from gpuplan.hardware import load_gpu  # noqa: E402
from gpuplan.model.catalog import load_model  # noqa: E402
from gpuplan.scenario import scenario_from  # noqa: E402
from gpuplan.serving.calibrate import replay  # noqa: E402
from gpuplan.serving.simulate import vllm_scheduler  # noqa: E402
from gpuplan.serving.steptime import step_model  # noqa: E402
from gpuplan.serving.workload import Lengths, load_workload, sample_lengths  # noqa: E402

QUANTITIES = (("throughput", "output_tokens_per_s", "saturated"), ("TPOT", "mean_tpot_s", "below_knee"),
              ("TTFT", "mean_ttft_s", "below_knee"), ("TPOT saturated", "mean_tpot_s", "saturated"))


def source_of(case: dict) -> str:
    return case["id"].split("-", 1)[0]


def run_case(case: dict, max_requests: int) -> dict:
    """Predicted mean TTFT, mean TPOT and output tokens/s for one case."""
    sc = dict(case["scenario"])
    if str(sc["model"]).startswith("bench/"):
        sc["model"] = str(ROOT / sc["model"])
    s = scenario_from({"task": "infer", "engine": "vllm", **sc})
    m, gpu = load_model(s.model), load_gpu(s.gpu)
    mem = vllm.startup_memory(s, m, gpu)
    eng = case.get("engine", {})
    engine = vllm_scheduler(s, mem, chunked_prefill=eng.get("chunked_prefill", True))
    w = case["workload"]
    rate = w.get("rate_rps")
    if "preset" in w or "prompt" in w:  # a preset, or distributions fitted to the run's requests
        wl = load_workload(None, {"preset": w["preset"]}) if "preset" in w else None
        dist_in = wl.prompt_lengths() if wl else Lengths(**w["prompt"])
        dist_out = wl.output_lengths() if wl else Lengths(**w["output"])
        n = min(w["num_requests"], max_requests)
        rng = np.random.default_rng(0)
        prompt, output = sample_lengths(dist_in, n, rng), sample_lengths(dist_out, n, rng)
    else:
        n = min(int(rate * w["duration_s"]) if rate else w["num_requests"], max_requests)
        prompt, output = np.full(n, w["prompt_tokens"]), np.full(n, w["output_tokens"])
    prefix = w.get("shared_prefix_tokens", 0) if eng.get("prefix_caching", True) else 0
    model = step_model(s, m, gpu)
    if not eng.get("api_server", True):  # requests handed to the engine in-process (AsyncLLM): no HTTP server
        model = dataclasses.replace(model, request_s=0.0)
    out = replay(model, engine, rate_rps=rate, prompt=prompt, output=output, shared_prefix=prefix,
                 distinct_prompts=w.get("distinct_prompts") if eng.get("prefix_caching", True) else None,
                 max_concurrency=w.get("max_concurrency"))
    return {"mean_ttft_s": float(out.ttft_s.mean()), "mean_tpot_s": float(out.tpot_s.mean()),
            "output_tokens_per_s": out.output_tokens_per_s, "kv_blocks": mem.num_blocks}


def pct(pred: float, real: float) -> float:
    return 100 * (pred - real) / real


def calibrate(cases: list[dict], max_requests: int) -> dict[str, float]:
    """The three vLLM V1 host constants from the calibration rows, in turn: the per-step cost from the TPOT of
    the lowest-rate KubeCon stages (one request at a time), the per-sequence cost from the saturated KubeCon base
    stages' throughput (bisection to a median error of 0), the per-request latency from the TTFT of the lowest-rate
    stage of each configuration (median of measured - simulated)."""
    from gpuplan import overheads as oh

    cal = [c for c in cases if c["role"] == "calibration"]
    lowest = [c for c in cal if c["regime"] == "below_knee"]
    oh.VLLM_V1_REQUEST_S = 0.0
    step_rows = [c for c in lowest if c["id"].startswith("kubecon")]
    gaps = [c["measured"]["mean_tpot_s"] - run_case(c, max_requests)["mean_tpot_s"] for c in step_rows]
    oh.VLLM_V1_STEP_OVERHEAD_S = max(oh.VLLM_V1_STEP_OVERHEAD_S + statistics.median(gaps), 0.0)
    sat = [c for c in cal if c["regime"] == "saturated"]
    lo, hi = 0.0, 200e-6
    for _ in range(12):
        oh.VLLM_V1_HOST_S_PER_SEQ = (lo + hi) / 2
        err = statistics.median(pct(run_case(c, max_requests)["output_tokens_per_s"],
                                    c["measured"]["output_tokens_per_s"]) for c in sat)
        lo, hi = (oh.VLLM_V1_HOST_S_PER_SEQ, hi) if err > 0 else (lo, oh.VLLM_V1_HOST_S_PER_SEQ)
    oh.VLLM_V1_REQUEST_S = max(statistics.median(c["measured"]["mean_ttft_s"] - run_case(c, max_requests)["mean_ttft_s"]
                                                 for c in lowest), 0.0)
    return {k: getattr(oh, k) for k in ("VLLM_V1_STEP_OVERHEAD_S", "VLLM_V1_HOST_S_PER_SEQ", "VLLM_V1_REQUEST_S")}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=str(ROOT / "bench/results/serving_accuracy.md"))
    ap.add_argument("--max-requests", type=int, default=3000, help="requests simulated per run (the rest of a "
                    "long run is the same steady state)")
    ap.add_argument("--calibrate", action="store_true", help="refit the vLLM V1 host constants from the "
                    "calibration rows and print them (copy them into src/gpuplan/overheads.py)")
    args = ap.parse_args()
    cases = yaml.safe_load((HERE / "serving_cases.yaml").read_text())
    if args.calibrate:
        for name, value in calibrate(cases, args.max_requests).items():
            print(f"{name} = {value:.3g}")
        return
    t0 = time.perf_counter()
    rows, errors = [], {}
    for c in cases:
        pred = run_case(c, args.max_requests)
        meas = c["measured"]
        errs = {}
        for name, key, regime in QUANTITIES:
            if c["regime"] == regime:
                errs[name] = pct(pred[key], meas[key])
                if c["role"] != "excluded":
                    errors.setdefault((source_of(c), name, c["role"]), []).append(errs[name])
        rows.append((c, pred, errs))
    lines = ["| run | role | regime | TTFT ms meas / gpuplan | TPOT ms meas / gpuplan | out tok/s meas / gpuplan "
             "| scored error |", "|---|---|---|---:|---:|---:|---|"]
    for c, p, e in rows:
        m = c["measured"]
        scored = ", ".join(f"{k} {v:+.0f}%" for k, v in e.items())
        role = c["role"] + (f" ({c['why']})" if c.get("why") else "")
        lines.append(f"| {c['id']} | {role} | {c['regime'].replace('_', ' ')} | "
                     f"{1e3 * m['mean_ttft_s']:,.1f} / {1e3 * p['mean_ttft_s']:,.1f} | "
                     f"{1e3 * m['mean_tpot_s']:.2f} / {1e3 * p['mean_tpot_s']:.2f} | "
                     f"{m['output_tokens_per_s']:,.0f} / {p['output_tokens_per_s']:,.0f} | {scored} |")
    summary = ["| source | quantity | rows | n | median abs error | median signed | worst |",
               "|---|---|---|---:|---:|---:|---:|"]
    pooled: dict[tuple[str, str], list[float]] = {}
    for (src, name, role), errs in sorted(errors.items()):
        summary.append(f"| {src} | {name} | {role} | {len(errs)} | {statistics.median(map(abs, errs)):.1f}% | "
                       f"{statistics.median(errs):+.1f}% | {max(errs, key=abs):+.1f}% |")
        pooled.setdefault((name, role), []).extend(errs)
    summary += ["", "| all sources | rows | n | median abs error | median signed |", "|---|---|---:|---:|---:|"]
    for (name, role), errs in sorted(pooled.items()):
        summary.append(f"| {name} | {role} | {len(errs)} | {statistics.median(map(abs, errs)):.1f}% | "
                       f"{statistics.median(errs):+.1f}% |")
    elapsed = time.perf_counter() - t0
    text = "\n".join(["# Serving: gpuplan's simulation against public vLLM runs", "",
                      f"{len(cases)} runs replayed in {elapsed:.0f} s (up to {args.max_requests:,} requests each).",
                      "", *summary, "", *lines]) + "\n"
    Path(args.out).write_text(text)
    print(text)


if __name__ == "__main__":
    main()
