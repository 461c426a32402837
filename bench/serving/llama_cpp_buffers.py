"""Score gpuplan's llama.cpp buffers against public load logs (bench/serving/llama_cpp_cases.yaml).

    python bench/serving/llama_cpp_buffers.py [--out bench/results/llama_cpp_buffers.md]

For each log: the model buffer on the GPU, the token embedding mapped in host memory, the KV buffer and the
compute buffer gpuplan predicts against what llama.cpp printed (MiB); the median absolute error per buffer over
the check rows.
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

import yaml

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
sys.path.insert(0, str(ROOT / "src"))

from gpuplan import estimate  # noqa: E402

KEYS = {"model": "model_buffer_gib", "host": "host_model_buffer_gib", "kv": "kv_buffer_gib",
        "compute": "compute_buffer_gib"}


def predict(scenario: dict) -> dict[str, float]:
    engine = estimate({"task": "infer", "engine": "llama.cpp", **scenario}, advise=False).memory.engine
    return {k: engine[v] * 1024 for k, v in KEYS.items()}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=str(ROOT / "bench/results/llama_cpp_buffers.md"))
    args = ap.parse_args()
    cases = yaml.safe_load((HERE / "llama_cpp_cases.yaml").read_text())
    lines = ["| log | buffer | role | logged MiB | gpuplan MiB | error |", "|---|---|---|---:|---:|---:|"]
    errors: dict[tuple[str, str], list[float]] = {}
    for c in cases:
        pred = predict(c["scenario"])
        for key, real in c["measured"].items():
            err = 100 * (pred[key] - real) / real
            role = c["role"][key]
            errors.setdefault((key, role), []).append(err)
            lines.append(f"| {c['id']} | {key} | {role} | {real:,.2f} | {pred[key]:,.2f} | {err:+.2f}% |")
    summary = ["| buffer | rows | n | median abs error | worst |", "|---|---|---:|---:|---:|"]
    for (key, role), errs in sorted(errors.items()):
        summary.append(f"| {key} | {role} | {len(errs)} | {statistics.median(map(abs, errs)):.2f}% | "
                       f"{max(errs, key=abs):+.2f}% |")
    text = "\n".join(["# llama.cpp buffers: gpuplan against public load logs", "", *summary, "", *lines]) + "\n"
    Path(args.out).write_text(text)
    print(text)


if __name__ == "__main__":
    main()
