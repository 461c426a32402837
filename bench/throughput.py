"""Score the speed model against published throughput (bench/throughput_cases.yaml, made by
bench/make_throughput_cases.py): training tokens/s, step times, achieved TFLOPs (recomputed with gpuplan's
FLOP formula) and decode tokens/s. Called by bench/accuracy.py; runs alone too:

    python bench/throughput.py
"""

from __future__ import annotations

import statistics
import sys
from pathlib import Path

import yaml

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "src"))

from gpuplan import GpuplanError, load_model  # noqa: E402
from gpuplan.hardware import Network, load_gpu  # noqa: E402
from gpuplan.memory import check  # noqa: E402
from gpuplan.scenario import scenario_from  # noqa: E402
from gpuplan.speed import speed_of  # noqa: E402


def predicted(speed, scenario, metric: str) -> float | None:
    """The estimate in the unit the source published."""
    world = scenario.world_size
    return {
        "train_tokens_per_s_per_gpu": speed.tokens_per_s / world,
        "train_tokens_per_s": speed.tokens_per_s,
        "step_time_s": speed.step_time_s,
        "decode_tokens_per_s": speed.tokens_per_s_per_sequence,  # output tokens / (prefill + decode)
        "achieved_TFLOPs_per_GPU": (speed.flops_per_token or 0) * speed.tokens_per_s / world / 1e12,
    }.get(metric)


def run(cases: list[dict]) -> tuple[list[dict], list[dict]]:
    """Speed of each case on the measured cluster's own network (the case's ``network``: the fabric the source
    ran on, not an offer's), scored against the published value."""
    scored, rejected = [], []
    for case in cases:
        data = dict(case["scenario"])
        if str(data["model"]).startswith("bench/"):
            data["model"] = str(HERE.parent / data["model"])
        if not data.get("gpu"):
            rejected.append({**case, "error": "no GPU named: no speed estimate"})
            continue
        try:
            s = scenario_from(data)
            m = load_model(s.model)
            gpu = load_gpu(s.gpu)
            check(s, m, gpu)
            speed = speed_of(s, m, gpu, Network(**case.get("network", {})))
        except GpuplanError as err:
            rejected.append({**case, "error": str(err)})
            continue
        value = predicted(speed, s, case["metric"])
        scored.append({**case, "estimated": value, "error_pct": 100 * (value - case["value"]) / case["value"],
                       "range": (speed.tokens_per_s_low / speed.tokens_per_s, speed.tokens_per_s_high /
                                 speed.tokens_per_s)})
    return scored, rejected


def report(scored: list[dict], rejected: list[dict]) -> str:
    groups: dict[tuple[str, str], list[dict]] = {}
    for c in scored:
        groups.setdefault((c["source"], c["metric"]), []).append(c)
    medians = []
    lines = ["## Throughput", "",
             "Speed model (MFU defaults, roofline efficiencies in src/gpuplan/overheads.py) against measured "
             "throughput; error = (estimate - measured) / measured.", "",
             "| source | metric | n | median abs % | worst abs % | median signed % |", "|---|---|---:|---:|---:|---:|"]
    for (source, metric), rows in sorted(groups.items()):
        errs = [c["error_pct"] for c in rows]
        med = statistics.median(abs(e) for e in errs)
        medians.append(med)
        lines.append(f"| {source} | {metric} | {len(rows)} | {med:.1f} | {max(abs(e) for e in errs):.1f} | "
                     f"{statistics.median(errs):+.1f} |")
    lines[2:2] = [f"- {len(scored)} cases scored, {len(rejected)} not estimable; median of the per-source medians "
                  f"{statistics.median(medians) if medians else float('nan'):.1f}%", ""]
    if rejected:
        lines += ["", *(f"- {c['id']}: {c['error']}" for c in rejected)]
    return "\n".join(lines) + "\n"


def main() -> None:
    cases = yaml.safe_load((HERE / "throughput_cases.yaml").read_text())["cases"]
    print(report(*run(cases)))


if __name__ == "__main__":
    main()
