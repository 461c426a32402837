"""`gpuplan capacity` against the public vLLM server runs of bench/serving/serving_cases.yaml.

    python bench/serving/capacity_accuracy.py [--out bench/results/capacity_accuracy.md]

For each scored run, the deployment's step model and vLLM engine (as serving_accuracy.py builds them) go
through capacity's search (serving/capacity.py ``max_rate``) with the run's request lengths:

- saturated runs (the server fell behind: what it measured is its highest throughput): no latency target, so
  the answer is the highest steady rate; scored: its output tokens/s against the measured ones;
- runs below the knee: latency targets at 2x the run's measured mean TTFT and 1.25x its mean TPOT (at the
  median, p50), which the real server met at the run's rate; scored: the output tokens/s capacity allows within them
  against the run's. A server that met the targets at rate r can serve at least r, so an allowance below the
  run's is an error (capacity refusing a rate that worked); above it is not necessarily one (the run did not
  look for its limit) and is shown, not counted in the median of refusals.

error = (gpuplan - measured) / measured. Works against older checkouts too (PYTHONPATH=<old>/src) for a
before/after comparison: their ``max_rate`` takes the closed-form bound x 1.1 as its upper end.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import statistics
import sys
import time
from pathlib import Path

import yaml

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
if "PYTHONPATH" not in os.environ:  # a PYTHONPATH picks the checkout (before/after)
    sys.path.insert(0, str(ROOT / "src"))

from gpuplan.engines import vllm  # noqa: E402
from gpuplan.hardware import load_gpu  # noqa: E402
from gpuplan.model.catalog import load_model  # noqa: E402
from gpuplan.scenario import scenario_from  # noqa: E402
from gpuplan.serving import capacity as cap  # noqa: E402

try:  # this checkout
    from gpuplan.serving.simulate import vllm_scheduler as vllm_engine
except ImportError:  # older checkouts
    from gpuplan.serving.simulate import vllm_engine
from gpuplan.serving.steptime import step_model  # noqa: E402
from gpuplan.serving.workload import Workload, load_workload  # noqa: E402

# Targets above the run's means: the simulation's own latency errors (bench/serving/serving_accuracy.py: TTFT of
# tens of ms off by up to ~40 %, TPOT by ~10-20 %) must not decide whether a rate is allowed.
TTFT_SLACK, TPOT_SLACK = 2.0, 1.25


def workload_of(case: dict, num_requests: int):
    w = case["workload"]
    prefix = case.get("engine", {}).get("prefix_caching", True)
    fields = {"num_requests": num_requests, "shared_prefix_tokens": w.get("shared_prefix_tokens", 0) if prefix else 0,
              "percentile": 50}
    if prefix and w.get("distinct_prompts") and "distinct_prompts" in Workload.model_fields:  # older: absent
        fields["distinct_prompts"] = w["distinct_prompts"]
    if "preset" in w:
        fields["preset"] = w["preset"]
    elif "prompt" in w:
        fields |= {"prompt": w["prompt"], "output": w["output"]}
    else:
        fields |= {"prompt": {"mean": w["prompt_tokens"]}, "output": {"mean": w["output_tokens"]}}
    if case["regime"] == "below_knee":
        fields["slo"] = {"ttft_s": TTFT_SLACK * case["measured"]["mean_ttft_s"],
                         "tpot_s": TPOT_SLACK * case["measured"]["mean_tpot_s"], "percentile": 50}
        del fields["percentile"]
    else:
        fields["slo"] = {"percentile": fields.pop("percentile")}
    return load_workload(None, fields)


def allowed(case: dict, num_requests: int) -> float:
    """Output tokens/s capacity allows one replica of the run's deployment."""
    sc = dict(case["scenario"])
    s = scenario_from({"task": "infer", "engine": "vllm", **sc})
    m, gpu = load_model(s.model), load_gpu(s.gpu)
    mem = vllm.startup_memory(s, m, gpu)
    eng = case.get("engine", {})
    engine = vllm_engine(s, mem, chunked_prefill=eng.get("chunked_prefill", True))
    model = step_model(s, m, gpu)
    if not eng.get("api_server", True):
        model = dataclasses.replace(model, request_s=0.0)
    w = workload_of(case, num_requests)
    try:  # this checkout: (rate, batch)
        bound = cap.saturation_rate(model, w, mem.kv_tokens, mem.limits.max_num_seqs,
                                    mem.limits.max_num_batched_tokens)
    except TypeError:  # older checkouts: the rate alone
        bound = cap.saturation_rate(model, w, mem.kv_tokens, mem.limits.max_num_seqs)
    if isinstance(bound, tuple):
        rate, _, _ = cap.max_rate(model, engine, w, *bound)
    else:
        rate, _, _ = cap.max_rate(model, engine, w, bound * 1.1)
    return rate * w.mean_output_tokens


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=str(ROOT / "bench/results/capacity_accuracy.md"))
    ap.add_argument("--requests", type=int, default=600, help="fewest requests per simulated rate point")
    args = ap.parse_args()
    cases = [c for c in yaml.safe_load((HERE / "serving_cases.yaml").read_text()) if c["role"] != "excluded"]
    t0 = time.perf_counter()
    lines = ["| run | regime | measured out tok/s | gpuplan allows | error |", "|---|---|---:|---:|---:|"]
    sat, below = [], []
    for c in cases:
        got = allowed(c, args.requests)
        meas = c["measured"]["output_tokens_per_s"]
        err = 100 * (got - meas) / meas
        (sat if c["regime"] == "saturated" else below).append(err)
        lines.append(f"| {c['id']} | {c['regime'].replace('_', ' ')} | {meas:,.0f} | {got:,.0f} | {err:+.0f}% |")
    refused = [e for e in below if e < 0]
    worst = statistics.median(refused) if refused else 0.0
    summary = [
        f"saturated runs (highest throughput, no latency target): n={len(sat)}, median abs error "
        f"{statistics.median(map(abs, sat)):.1f}%, median signed {statistics.median(sat):+.1f}%, worst "
        f"{max(sat, key=abs):+.1f}%",
        f"runs below the knee (targets {TTFT_SLACK}x their mean TTFT, {TPOT_SLACK}x their mean TPOT, at p50): "
        f"n={len(below)}, capacity allows "
        f"less than the run served in {len(refused)} (median of those {worst:+.1f}%), median signed "
        f"{statistics.median(below):+.1f}%",
    ]
    text = "\n".join(["# Capacity: gpuplan's highest rate against public vLLM server runs", "",
                      f"{len(cases)} runs in {time.perf_counter() - t0:.0f} s, at least {args.requests} requests per "
                      "rate point (more where requests live long: serving/capacity.py run_requests).", "",
                      *[f"- {s}" for s in summary], "", *lines]) + "\n"
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(text)
    print(text)


if __name__ == "__main__":
    main()
