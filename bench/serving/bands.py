"""Error bands of the decode speed per engine x model class (issue 31 item 7), from the rows the benches hold out.

    python bench/serving/bands.py [--out bench/results/bands.md] [--max-requests 1500]

A band is the 10th to 90th percentile of measured / gpuplan - 1 of the decode speed (1 / TPOT, or output tokens/s)
over the held-out rows of one engine and one class of model (dense; MoE: experts routed per token; hybrid: layers
of recurrent state or linear attention beside attention), each row scored once:

- vLLM: bench/serving/serving_accuracy.py's runs below the knee, their mean TPOT (check rows: isim, kubecon), and
  bench/throughput.py's held-out decode rows served by vLLM (Qwen2.5 docs: one request's output tokens/s);
- SGLang: bench/serving/sglang_serving.py's online check rows, their median TPOT;
- TensorRT-LLM: bench/trtllm.py's held-out rows (H200 and GB200; release 0.17's table), offline output tokens/s;
  its one-GPU MoE rows were never fitted either (the constants came from dense rows), so they are held out too;
- transformers: bench/throughput.py's held-out decode rows served by transformers.

A pair with no held-out row has no band: gpuplan says "uncalibrated" (llama.cpp, hybrid models, SGLang on MoE...).
The table's bands are what :data:`gpuplan.overheads.DECODE_BANDS` holds (tests/speed/test_bands.py compares them).
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
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(ROOT / "bench"))

import serving_accuracy  # noqa: E402
import sglang_serving  # noqa: E402

import throughput  # noqa: E402
import trtllm  # noqa: E402
from gpuplan.model.catalog import load_model  # noqa: E402
from gpuplan.speed.bands import model_class  # noqa: E402


def _model(name: str):
    return load_model(str(ROOT / name) if str(name).startswith("bench/") else name)


Row = tuple[str, str, str, float, str]  # engine, class, row id, measured / gpuplan - 1, model


def vllm_rows(max_requests: int) -> list[Row]:
    """(engine, class, row id, measured / gpuplan - 1, model) of vLLM's serving check rows below the knee (1 / mean
    TPOT)."""
    out = []
    for c in yaml.safe_load((HERE / "serving_cases.yaml").read_text()):
        if c["role"] != "check" or c["regime"] != "below_knee":
            continue
        pred = serving_accuracy.run_case(c, max_requests)
        m = _model(c["scenario"]["model"])
        out.append(("vllm", model_class(m), c["id"], pred["mean_tpot_s"] / c["measured"]["mean_tpot_s"] - 1, m.name))
    return out


def sglang_rows(max_requests: int) -> list[Row]:
    """SGLang's online check rows (1 / median TPOT)."""
    out = []
    for r in sglang_serving.load_rows():
        if r["role"] != "check" or r["regime"] != "online" or not r["median_tpot_ms"]:
            continue
        pred = sglang_serving.run(r, max_requests)
        m = _model(r["model"])
        out.append(("sglang", model_class(m), r["id"], pred["median_tpot_ms"] / float(r["median_tpot_ms"]) - 1,
                    m.name))
    return out


def trtllm_rows() -> list[Row]:
    """TensorRT-LLM's held-out rows (output tokens/s offline), MoE included (never fitted)."""
    out = []
    for r in trtllm.load_rows() + trtllm.load_rows(trtllm.OLDER):
        if trtllm.why_not(r) or trtllm.role(r) == "fitted":
            continue
        m = _model(r["model"])
        out.append(("trtllm", model_class(m), f"{r['table']} {r['gpu_label']} {r['isl']}/{r['osl']}",
                    1 / (1 + trtllm.err(trtllm.offline(r), r)) - 1, m.name))
    return out


def decode_rows() -> list[Row]:
    """bench/throughput.py's held-out decode rows (one request's output tokens/s), by the engine that served them."""
    cases = [c for c in yaml.safe_load((ROOT / "bench" / "throughput_cases.yaml").read_text())["cases"]
             if c["metric"] == "decode_tokens_per_s" and throughput.held_out(c)]
    scored, _ = throughput.run(cases)
    models = [_model(c["scenario"]["model"]) for c in scored]
    return [(c["scenario"].get("engine", "transformers"), model_class(m), c["id"], throughput.true_over_estimate(c) - 1,
             m.name) for c, m in zip(scored, models, strict=True)]


def band(errors: list[float]) -> tuple[float, float]:
    """10th and 90th percentile (inclusive) of the errors, rounded to a percent, widened to hold 0."""
    if len(errors) == 1:
        return round(min(errors[0], 0.0), 2), round(max(errors[0], 0.0), 2)
    qs = statistics.quantiles(errors, n=10, method="inclusive")
    return round(min(qs[0], 0.0), 2), round(max(qs[-1], 0.0), 2)


def bands(rows: list[Row]) -> dict[tuple[str, str], tuple[float, float, int, list[str]]]:
    """Per (engine, class): the band, the rows and the models they cover."""
    groups: dict[tuple[str, str], list[Row]] = {}
    for r in rows:
        groups.setdefault((r[0], r[1]), []).append(r)
    return {k: (*band([r[3] for r in rs]), len(rs), sorted({r[4].split("/")[-1] for r in rs}))
            for k, rs in sorted(groups.items())}


def report(rows: list[Row], seconds: float) -> str:
    lines = ["# Decode-speed bands per engine x model class", "",
             f"Generated by `python bench/serving/bands.py` in {seconds:.0f} s: measured / gpuplan - 1 of the decode "
             "speed over each bench's held-out rows (the module docstring names them); a band is the 10th to 90th "
             "percentile, widened to hold 0. overheads.DECODE_BANDS holds these; a pair missing here is "
             "uncalibrated.", "",
             "| engine | class | rows | band low | band high | median | worst | models |",
             "|---|---|---:|---:|---:|---:|---:|---|"]
    for (engine, cls), (low, high, n, models) in bands(rows).items():
        errs = [r[3] for r in rows if (r[0], r[1]) == (engine, cls)]
        lines.append(f"| {engine} | {cls} | {n} | {low:+.2f} | {high:+.2f} | {statistics.median(errs):+.2f} | "
                     f"{max(errs, key=abs):+.2f} | {', '.join(models)} |")
    lines += ["", "Every row:", "", "| engine | class | row | measured / gpuplan - 1 |", "|---|---|---|---:|"]
    lines += [f"| {r[0]} | {r[1]} | {r[2]} | {r[3]:+.3f} |" for r in sorted(rows)]
    return "\n".join(lines) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "bands.md")
    ap.add_argument("--max-requests", type=int, default=1500, help="requests simulated per serving run")
    args = ap.parse_args()
    t0 = time.perf_counter()
    rows = vllm_rows(args.max_requests) + sglang_rows(args.max_requests) + trtllm_rows() + decode_rows()
    text = report(rows, time.perf_counter() - t0)
    args.out.write_text(text)
    print(text)


if __name__ == "__main__":
    main()
