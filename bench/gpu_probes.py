"""Score gpuplan against the real-GPU probe records in bench/data/gpu-measurements/ (copied from the project's
shared reference set: `gpuplan probe` run on one NVIDIA H200 on 2026-11-27, see that folder's README.md): tokens/s
and allocated peak, estimate against measured. Runs alone:

    python bench/gpu_probes.py
"""

from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "src"))

from gpuplan import load_model  # noqa: E402
from gpuplan.hardware import load_gpu  # noqa: E402
from gpuplan.memory import inference_memory, training_memory  # noqa: E402
from gpuplan.scenario import scenario_from  # noqa: E402
from gpuplan.speed import speed_of  # noqa: E402

RECORDS = HERE / "data" / "gpu-measurements" / "probes-h200-2026-11-27.json"
GPU = "h200"


def records() -> list[dict]:
    return json.loads(RECORDS.read_text())["records"]


def scenario_of(record: dict):
    """The record's scenario (full or short form) on the measured card."""
    data = dict(record.get("scenario") or record["scenario_short"])
    data["gpu"] = GPU
    return scenario_from({k: v for k, v in data.items() if v is not None or k in ("gpu",)})


def score(record: dict) -> dict:
    s = scenario_of(record)
    m = load_model(s.model)
    gpu = load_gpu(s.gpu)
    mem = (training_memory(s, m, gpu.usable_gib) if s.task == "train"
           else inference_memory(s, m, gpu.usable_gib, gpu))
    speed = speed_of(s, m, gpu)
    measured = record["probe"]
    rate = speed.tokens_per_s if s.task == "train" else speed.tokens_per_s_per_sequence * s.batch_size
    return {"id": record["id"], "what": f"{s.model} {s.task} {s.method if s.task == 'train' else s.engine}",
            "tokens_per_s": rate, "measured_tokens_per_s": measured["tokens_per_s"],
            "speed_error_pct": 100 * (rate - measured["tokens_per_s"]) / measured["tokens_per_s"],
            "allocated_gib": mem.allocated / 2**30, "measured_allocated_gib": measured["allocated_peak_gib"],
            "memory_error_pct": 100 * (mem.allocated / 2**30 - measured["allocated_peak_gib"])
            / measured["allocated_peak_gib"]}


def report(rows: list[dict]) -> str:
    lines = ["| id | scenario | tokens/s est. | measured | error % | allocated GiB est. | measured | error % |",
             "|---|---|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        lines.append(f"| {r['id']} | {r['what']} | {r['tokens_per_s']:,.0f} | {r['measured_tokens_per_s']:,.0f} | "
                     f"{r['speed_error_pct']:+.1f} | {r['allocated_gib']:.1f} | {r['measured_allocated_gib']:.1f} | "
                     f"{r['memory_error_pct']:+.1f} |")
    train = [abs(r["speed_error_pct"]) for r in rows if " train " in r["what"]]
    lines.append(f"\ntraining tokens/s: median |error| {statistics.median(train):.1f}% over {len(train)} records")
    return "\n".join(lines) + "\n"


def main() -> None:
    print(report([score(r) for r in records()]))


if __name__ == "__main__":
    main()
