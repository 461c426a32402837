"""Error bands of the decode speed per engine x model class x card maker (issue 31 item 7), from the rows the
benches hold out.

    python bench/serving/bands.py [--out bench/results/bands.md] [--max-requests 1500]

A band is the 10th to 90th percentile of measured / gpuplan - 1 of the decode speed (1 / TPOT, or output tokens/s)
over the held-out rows of one engine, one class of model (dense; MoE: experts routed per token; hybrid: layers
of recurrent state or linear attention beside attention; a model with both is MoE) and one card maker (NVIDIA:
CUDA kernels; Apple: Metal; AMD: ROCm builds), each row scored once:

- vLLM: bench/serving/serving_accuracy.py's runs below the knee, their mean TPOT (check rows: isim, kubecon),
  bench/serving/load_accuracy.py's runs with a TPOT (every row held out: kvcached, tt-inference-server#340, vLLM
  recipes; its dstack offline rows give request throughput, not decode speed, and are left out) and
  bench/throughput.py's held-out decode rows served by vLLM (Qwen2.5 docs: one request's output tokens/s);
- SGLang: bench/serving/sglang_serving.py's online rows with a TPOT whose role holds them out: ``check`` (dense),
  ``moe`` (DeepSeek-R1 from InferenceX and dstack: shown, never fitted; dstack's runs of 0.4.3.post2 (H200, DP
  attention) and 0.4.2.post4 (MI300X) decode 13-24 % slower and -17 to +16 % off what gpuplan says and are kept,
  since their role holds them out like the rest) and
  ``rocm-check`` (MI325X at 8 and 32 requests; the ``rocm-fit`` rows set overheads.ROCM_DECODE_SLOWDOWN and are
  left out);
- TensorRT-LLM: bench/trtllm.py's held-out rows (H200 and GB200; release 0.17's table), offline output tokens/s;
  of its one-GPU MoE rows the GB200 ones and release 0.17's Mixtral ones (the B200 rows fit the fused MoE's
  dispatch, ``trtllm.role`` "MoE fitted", and are left out);
- llama.cpp and MLX: bench/llama_bench.py's check rows of generation (tg, and CUDA prompt rows in micro-batches of
  at most 8 tokens, the same MMVQ steps), tokens/s on public llama-bench tables; Metal and CUDA apart, since their
  spreads differ (CUDA: gpuplan low more often; Metal: the M1 Max rows of one source decode 30-40 % slower);
- transformers: bench/throughput.py's held-out decode rows served by transformers.

A plan on a maker with no band of its own takes the engine's NVIDIA band, widened (speed/bands.py says so); a pair
with no held-out row at all has no band: gpuplan says "uncalibrated" (llama.cpp on MoE or hybrid models, ...).
The table's bands are what :data:`gpuplan.overheads.DECODE_BANDS` holds (tests/speed/test_bands.py compares them).
"""

from __future__ import annotations

import argparse
import csv
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

import load_accuracy  # noqa: E402
import serving_accuracy  # noqa: E402
import sglang_serving  # noqa: E402

import llama_bench  # noqa: E402
import throughput  # noqa: E402
import trtllm  # noqa: E402
from gpuplan.hardware import load_gpu  # noqa: E402
from gpuplan.model.catalog import load_model  # noqa: E402
from gpuplan.speed.bands import model_class  # noqa: E402


def _model(name: str):
    return load_model(str(ROOT / name) if str(name).startswith("bench/") else name)


def _maker(gpu: str) -> str:
    return load_gpu(gpu).vendor


# engine, class, card maker, row id, measured / gpuplan - 1, model
Row = tuple[str, str, str, str, float, str]
SGLANG_HELD_OUT = ("check", "moe", "rocm-check")  # sglang_serving.csv's roles that no constant was fitted on


def vllm_rows(max_requests: int) -> list[Row]:
    """vLLM's serving check rows below the knee (1 / mean TPOT)."""
    out = []
    for c in yaml.safe_load((HERE / "serving_cases.yaml").read_text()):
        if c["role"] != "check" or c["regime"] != "below_knee":
            continue
        pred = serving_accuracy.run_case(c, max_requests)
        m = _model(c["scenario"]["model"])
        out.append(("vllm", model_class(m), _maker(c["scenario"]["gpu"]), c["id"],
                    pred["mean_tpot_s"] / c["measured"]["mean_tpot_s"] - 1, m.name))
    return out


def load_rows() -> list[Row]:
    """load_accuracy.py's runs with a TPOT (1 / TPOT, the statistic the source gives), every one held out."""
    out = []
    with load_accuracy.DATA.open(newline="") as f:
        for r in csv.DictReader(f):
            if not r["median_tpot_ms"]:
                continue
            m = load_model(load_accuracy.model_of(r))
            out.append((r["engine"], model_class(m), _maker(r["gpu"]), r["id"],
                        load_accuracy.predict(r)["TPOT"] / float(r["median_tpot_ms"]) - 1, m.name))
    return out


def sglang_rows(max_requests: int) -> list[Row]:
    """SGLang's online held-out rows (1 / TPOT, the statistic each source prints)."""
    out = []
    for r in sglang_serving.load_rows():
        if r["role"] not in SGLANG_HELD_OUT or r["regime"] != "online" or not r["median_tpot_ms"]:
            continue
        pred = sglang_serving.run(r, max_requests)
        m = _model(r["model"])
        out.append(("sglang", model_class(m), _maker(r["gpu"]), r["id"],
                    pred["median_tpot_ms"] / float(r["median_tpot_ms"]) - 1, m.name))
    return out


def trtllm_rows() -> list[Row]:
    """TensorRT-LLM's held-out rows (output tokens/s offline): dense and MoE, the B200 MoE rows (which fit the fused
    MoE's dispatch) left out."""
    out = []
    for r in trtllm.load_rows() + trtllm.load_rows(trtllm.OLDER):
        if trtllm.why_not(r) or trtllm.role(r) in ("fitted", "MoE fitted"):
            continue
        m = _model(r["model"])
        out.append(("trtllm", model_class(m), _maker(r["gpu"]), f"{r['table']} {r['gpu_label']} {r['isl']}/{r['osl']}",
                    1 / (1 + trtllm.err(trtllm.offline(r), r)) - 1, m.name))
    return out


def llama_bench_rows() -> list[Row]:
    """llama.cpp's and MLX's held-out generation rows on public llama-bench tables (tokens/s)."""
    out = []
    for r in llama_bench.load_rows():
        if r["role"] != "check" or llama_bench.work(r) != "tg":
            continue
        m = _model(r["model"])
        out.append((r["engine"], model_class(m), _maker(r["gpu"]), r["id"], 1 / (1 + llama_bench.err(r)) - 1, m.name))
    return out


def decode_rows() -> list[Row]:
    """bench/throughput.py's held-out decode rows (one request's output tokens/s), by the engine that served them."""
    cases = [c for c in yaml.safe_load((ROOT / "bench" / "throughput_cases.yaml").read_text())["cases"]
             if c["metric"] == "decode_tokens_per_s" and throughput.held_out(c)]
    scored, _ = throughput.run(cases)
    models = [_model(c["scenario"]["model"]) for c in scored]
    return [(c["scenario"].get("engine", "transformers"), model_class(m), _maker(c["scenario"]["gpu"]), c["id"],
             throughput.true_over_estimate(c) - 1, m.name) for c, m in zip(scored, models, strict=True)]


def band(errors: list[float]) -> tuple[float, float]:
    """10th and 90th percentile (inclusive) of the errors, rounded to a percent, widened to hold 0."""
    if len(errors) == 1:
        return round(min(errors[0], 0.0), 2), round(max(errors[0], 0.0), 2)
    qs = statistics.quantiles(errors, n=10, method="inclusive")
    return round(min(qs[0], 0.0), 2), round(max(qs[-1], 0.0), 2)


Key = tuple[str, str, str]  # engine, class, card maker


def bands(rows: list[Row]) -> dict[Key, tuple[float, float, int, list[str]]]:
    """Per (engine, class, card maker): the band, the rows and the models they cover."""
    groups: dict[Key, list[Row]] = {}
    for r in rows:
        groups.setdefault(r[:3], []).append(r)
    return {k: (*band([r[4] for r in rs]), len(rs), sorted({r[5].split("/")[-1] for r in rs}))
            for k, rs in sorted(groups.items())}


def report(rows: list[Row], seconds: float) -> str:
    lines = ["# Decode-speed bands per engine x model class x card maker", "",
             f"Generated by `python bench/serving/bands.py` in {seconds:.0f} s: measured / gpuplan - 1 of the decode "
             "speed over each bench's held-out rows (the module docstring names them), each row once; a band is the "
             "10th to 90th percentile, widened to hold 0. overheads.DECODE_BANDS holds these; a plan on another "
             "maker takes its engine's NVIDIA band, widened; a pair missing here is uncalibrated.", "",
             "| engine | class | maker | rows | band low | band high | median | worst | models |",
             "|---|---|---|---:|---:|---:|---:|---:|---|"]
    for key, (low, high, n, models) in bands(rows).items():
        errs = [r[4] for r in rows if r[:3] == key]
        lines.append(f"| {' | '.join(key)} | {n} | {low:+.2f} | {high:+.2f} | {statistics.median(errs):+.2f} | "
                     f"{max(errs, key=abs):+.2f} | {', '.join(models)} |")
    lines += ["", "Every row:", "", "| engine | class | maker | row | measured / gpuplan - 1 |",
              "|---|---|---|---|---:|"]
    lines += [f"| {' | '.join(r[:4])} | {r[4]:+.3f} |" for r in sorted(rows)]
    return "\n".join(lines) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "bands.md")
    ap.add_argument("--max-requests", type=int, default=1500, help="requests simulated per serving run")
    args = ap.parse_args()
    t0 = time.perf_counter()
    rows = (vllm_rows(args.max_requests) + load_rows() + sglang_rows(args.max_requests) + trtllm_rows()
            + llama_bench_rows() + decode_rows())
    text = report(rows, time.perf_counter() - t0)
    args.out.write_text(text)
    print(text)


if __name__ == "__main__":
    main()
