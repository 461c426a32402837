"""The decode step's projections against Vidur's kernel profiles on three cards (bench/serving/decode_ops_cases.yaml).

    python bench/serving/decode_ops.py [--out bench/results/decode_ops.md]

For each profiled (card, model, tensor-parallel degree, tokens): the time of one decoder layer's projections as
the speed layer's StepTimer prices them for vLLM (packed q/k/v and gate/up GEMMs, one kernel latency each, the
card's streaming bandwidth), against the sum of the four projections Vidur measured. error = (gpuplan -
measured) / measured. The H100 rows set overheads.STREAMING_BANDWIDTH_FRACTION; the A100 and A40 rows check the
speed layer's default achievable bandwidth, set by no serving row.
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

from gpuplan.hardware import load_gpu  # noqa: E402
from gpuplan.model.catalog import load_model  # noqa: E402
from gpuplan.scenario import scenario_from  # noqa: E402
from gpuplan.speed.inference import step_timer  # noqa: E402
from gpuplan.speed.work import lm_head_s  # noqa: E402


def layer_us(model: str, gpu_id: str, tp: int, tokens: int) -> float:
    """Microseconds of one decoder layer's projections for ``tokens`` decoding sequences (vLLM, bf16)."""
    path = str(ROOT / model) if model.startswith("bench/") else model
    s = scenario_from({"task": "infer", "engine": "vllm", "model": path, "gpu": gpu_id, "tp": tp, "num_gpus": tp})
    m, gpu = load_model(s.model), load_gpu(gpu_id)
    timer = step_timer(s, m, gpu)
    weights = timer.decode_parts(tokens, 0)["weights"] - lm_head_s(m, gpu, timer.dtype, tokens, tp=tp)
    return 1e6 * weights / m.num_layers


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=str(ROOT / "bench/results/decode_ops.md"))
    args = ap.parse_args()
    cases = yaml.safe_load((HERE / "decode_ops_cases.yaml").read_text())
    rows, errors = [], {}
    for c in cases:
        for tp, by_tokens in c["us_per_layer"].items():
            for tokens, measured in by_tokens.items():
                pred = layer_us(c["model"], c["gpu"], int(tp), int(tokens))
                err = 100 * (pred - measured) / measured
                errors.setdefault((c["gpu"], c["role"]), []).append(err)
                rows.append(f"| {c['id']} | {c['role']} | {tp} | {tokens} | {measured:,.1f} | {pred:,.1f} | "
                            f"{err:+.1f}% |")
    summary = ["| card | rows | n | median abs error | median signed | worst |", "|---|---|---:|---:|---:|---:|"]
    for (gpu, role), errs in sorted(errors.items(), key=lambda kv: kv[0][1]):
        summary.append(f"| {gpu} | {role} | {len(errs)} | {statistics.median(map(abs, errs)):.1f}% | "
                       f"{statistics.median(errs):+.1f}% | {max(errs, key=abs):+.1f}% |")
    text = "\n".join(["# Decode projections: gpuplan's StepTimer against Vidur's kernel profiles", "",
                      "Per decoder layer, microseconds, vLLM kernels (bench/serving/decode_ops_cases.yaml).", "",
                      *summary, "", "| profile | role | TP | tokens | Vidur us | gpuplan us | error |",
                      "|---|---|---:|---:|---:|---:|---:|", *rows]) + "\n"
    Path(args.out).write_text(text)
    print(text)


if __name__ == "__main__":
    main()
