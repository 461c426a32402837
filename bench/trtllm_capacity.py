"""Replay NVIDIA's TensorRT-LLM performance overview through ``capacity --batch`` (the simulated scheduler).

    python bench/trtllm_capacity.py [--out bench/results/trtllm_capacity.md]

Each dense row of bench/data/trtllm-perf-overview.csv (trtllm-bench throughput, PyTorch backend) becomes an offline
job for :func:`gpuplan.plan.capacity.capacity` with ``engine: trtllm`` on the row's GPU and TP: the FP8 or NVFP4
checkpoint with an FP8 KV cache, 0.95 of the free memory and trtllm-bench's own max_batch_size and max_num_tokens
(:func:`gpuplan.engines.trtllm.bench_settings`), the row's number of requests queued at once. The job runs through
TensorRT-LLM's simulated in-flight batching (GUARANTEED_NO_EVICT, whole contexts) on the serving step model: the
same road as ``gpuplan capacity --engine trtllm --batch N``. Nothing is fitted here; the roles are bench/trtllm.py's
(H100 and B200 rows fitted the trtllm-bench model's constants, which this road does not use). error = (gpuplan -
published) / published, on total output tokens/s.

Under load: MLPerf Inference v4.0 and v4.1 Server runs of Llama-2-70B (bench/data/mlperf-server.csv), each the
highest Poisson rate whose p99 TTFT <= 2 s and p99 TPOT <= 200 ms, against ``capacity --engine trtllm --rate`` with
the same SLOs on one instance of the submission (its tp, gpu_batch_size, max_num_tokens 4,096, kv fraction,
MAX_UTILIZATION as MLPerf's harness schedules, the TensorRT engine its case file names: ``trtllm_backend``), prompts
of 300 tokens (assumed, as bench/mlperf_inference.py: OpenOrca's mean is not published) and the run's own output
tokens, both drawn within +-50 % (the capacity default);
error on requests/s per instance. Each simulated rate serves as many requests as the MLPerf run sent one instance:
its minimum duration (2,400 s in v4.1, 600 s in v4.0: ``min_duration`` in the run's Test Parameters) at its rate. A
request of that run lived 36 s on average; capacity's default sizes each rate point to 10 request lifetimes
(serving/capacity.py run_requests; a fixed 600 requests, 48 s at 12.5 req/s, judged a queue still filling its batch
and found 10.49 req/s on the H200). Beside it, the simulation at the published rate: p99 TTFT and TPOT, mean TPOT
and requests in flight (Little's law: rate x mean end-to-end latency; published: the per-instance rate x the run's
``Mean latency``, bench/data/mlperf-server.csv).
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "src"))
sys.path.insert(0, str(HERE))

from gpuplan.engines import trtllm  # noqa: E402
from gpuplan.hardware import load_gpu  # noqa: E402
from gpuplan.model.catalog import load_model  # noqa: E402
from gpuplan.plan.capacity import capacity  # noqa: E402
from gpuplan.serving.workload import load_workload  # noqa: E402
from trtllm import err, load_rows, role, scenario  # noqa: E402


def predicted(row: dict) -> float:
    """Output tokens/s of the row's offline job under ``capacity``."""
    s = scenario(row).model_copy(update={"free_gpu_memory_fraction": 0.95})
    m, gpu = load_model(s.model), load_gpu(s.gpu)
    batch, tokens = trtllm.bench_settings(s, m, gpu)
    s = s.model_copy(update={"max_num_seqs": batch, "max_num_batched_tokens": tokens})
    w = load_workload(None, {"batch": int(row["num_requests"]), "prompt_tokens": s.prompt_tokens,
                             "output_tokens": s.output_tokens})
    rows = [d for d in capacity(s, m, w, gpu_ids=(gpu.id,), max_gpus=s.tp) if d.tp == s.tp]
    return rows[0].output_tokens_per_s if rows and rows[0].output_tokens_per_s else float("nan")


SERVER = HERE / "data" / "mlperf-server.csv"
SERVER_PROMPT_TOKENS = 300


def server_rows() -> list[dict]:
    import csv

    with open(SERVER, newline="") as f:
        return list(csv.DictReader(line for line in f if not line.startswith("#")))


def per_instance(row: dict) -> float:
    """Published completed requests/s of one tp-GPU instance."""
    return float(row["samples_per_s"]) / (int(row["gpus"]) // int(row["tp"]))


def server_setup(row: dict):
    """(scenario, workload) of one instance of the MLPerf Server row (module docstring)."""
    from gpuplan.scenario import scenario_from

    out = int(row["output_tokens"])
    s = scenario_from({"model": "meta-llama/Llama-2-70b-hf", "task": "infer", "engine": "trtllm", "quant": "fp8",
                       "kv_cache_dtype": "fp8", "free_gpu_memory_fraction": float(row["kv_fraction"]),
                       "max_num_seqs": int(row["max_batch_size"]), "tp": int(row["tp"]), "num_gpus": int(row["tp"]),
                       "gpu": row["gpu"],
                       "max_num_batched_tokens": int(row["max_num_tokens"]), "prompt_tokens": SERVER_PROMPT_TOKENS,
                       "output_tokens": out, "capacity_scheduler_policy": "max_utilization",
                       "trtllm_backend": row["backend"]})
    w = load_workload(None, {"prompt_tokens": SERVER_PROMPT_TOKENS, "output_tokens": out, "length_spread": 0.5,
                             "ttft_s": 2, "tpot_s": 0.2, "percentile": 99,
                             "num_requests": round(per_instance(row) * float(row["min_duration_s"]))})
    return s, w


def server_rate(row: dict) -> tuple[float, float, float]:
    """(requests/s, p99 TTFT s, p99 TPOT s) ``capacity`` finds for one instance of the MLPerf Server row."""
    s, w = server_setup(row)
    tp = int(row["tp"])
    (d,) = [d for d in capacity(s, load_model(s.model), w, gpu_ids=(row["gpu"],), max_gpus=tp) if d.tp == tp]
    return d.max_rate_rps, d.ttft_s, d.tpot_s


def at_published_rate(row: dict) -> tuple[float, float, float, float]:
    """(p99 TTFT s, p99 TPOT s, mean TPOT s, requests in flight) of the simulation at the published rate."""
    import numpy as np

    from gpuplan.plan.capacity import _longest, engine_memory
    from gpuplan.serving.simulate import arrivals, simulate
    from gpuplan.serving.steptime import step_model
    from gpuplan.serving.workload import sample_lengths

    s, w = server_setup(row)
    m, gpu = load_model(s.model), load_gpu(row["gpu"])
    mem = engine_memory(s, m, gpu, _longest(w, m))
    rate, rng = per_instance(row), np.random.default_rng(w.seed)
    prompt = sample_lengths(w.prompt_lengths(), w.num_requests, rng)
    output = sample_lengths(w.output_lengths(), w.num_requests, rng)
    out = simulate(step_model(mem.plan.setup.scenario, m, gpu), mem.engine,
                   arrivals(rate, w.num_requests, w.burstiness, rng), prompt, output)
    return (out.percentile("ttft_s", 99), out.percentile("tpot_s", 99), float(out.tpot_s.mean()),
            rate * float(out.e2e_s.mean()))


def server_lines() -> list[str]:
    title = "## Under load: MLPerf Inference Server, Llama-2-70B (capacity --rate, p99 TTFT 2 s, TPOT 200 ms)"
    lines = ["", title,
             "", "| round | system | tp | published req/s per instance | capacity | error | "
             "p99 TTFT / TPOT published | capacity at its rate | simulated at the published rate | "
             "mean TPOT / in flight published | simulated |", "|---|---|---:|---:|---:|---:|---|---|---|---|---|"]
    for row in server_rows():
        per = per_instance(row)
        rate, ttft, tpot = server_rate(row)
        p_ttft, p_tpot, mean_tpot, flight = at_published_rate(row)
        lines.append(f"| {row['round']} | {row['system']} | {row['tp']} | {per:.2f} | {rate:.2f} | "
                     f"{rate / per - 1:+.1%} | "
                     f"{float(row['p99_ttft_ms']):.0f} / {float(row['p99_tpot_ms']):.0f} ms | "
                     f"{ttft * 1e3:.0f} / {tpot * 1e3:.0f} ms | {p_ttft * 1e3:.0f} / {p_tpot * 1e3:.0f} ms | "
                     f"{float(row['mean_tpot_ms']):.0f} ms / {per * float(row['mean_latency_s']):.0f} | "
                     f"{mean_tpot * 1e3:.0f} ms / {flight:.0f} |")
    lines += ["", SERVER_NOTE]
    return lines


SERVER_NOTE = (
    "Each simulated rate serves the run's length (its min_duration at its rate). With capacity's defaults, which "
    "send 10 request lifetimes a rate point (8,500 requests on the H200, whose requests live 68 s in a full batch),"
    " the rows find 12.43, 21.36 and 21.28 req/s; a fixed 600 requests (48 s at 12.5 req/s) judged a queue still "
    "filling a batch whose requests live 36 s, and found 10.49 req/s on the H200. The step model prices "
    "TensorRT-LLM's FP8 GEMMs at the share of the FP8 peak the offline "
    "model uses (TRTLLM_GEMM_PEAK_SHARE, fitted on the H100 rows of NVIDIA's performance overview; nothing fitted "
    "on MLPerf). Before that, at the bf16 GEMMs' share of the FP8 peak, the H200 found 13.68 req/s (+9.1 %) and at "
    "the published rate held 275 requests at a 75 ms mean TPOT (p99 95 ms): the run held 450 at 123 ms. Now the "
    "simulation sits a little on the slow side: its saturation is within a few percent of the published rate, where"
    " the batch grows by tens of percent per percent of step time, so it holds 580 at 158 ms. The H100 pairs stay "
    "fast (v4.1 +23.9 % before; v4.0 +18.9 %, its max_num_tokens assumed): their GEMMs are priced at the H100 SXM "
    "MAMF, 9 % above what the same GH100 silicon reached in the H200 measurement the shape terms were fitted on "
    "(with the H200's asymptote the v4.1 pair lands at +8 %; the rest is the TP 2 all-reduce of ~1,000-token "
    "iterations), left for the GEMM model. Prompt lengths are an assumption (300 tokens).")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=str(HERE / "results" / "trtllm_capacity.md"))
    args = ap.parse_args()
    rows = [r for r in load_rows() if role(r) in ("fitted", "held-out")]
    lines, by_role = [], {}
    for r in rows:
        e = err(predicted(r), r)
        by_role.setdefault(role(r), []).append(e)
        lines.append(f"| {r['table']} | {r['gpu_label']} | {r['tp']} | {r['isl']}/{r['osl']} | {role(r)} | "
                     f"{float(r['output_tokens_per_s']):,.0f} | {e:+.1%} |")
    head = ["# TensorRT-LLM through `capacity --batch` against NVIDIA's performance overview", "",
            ("Generated by `python bench/trtllm_capacity.py` (see its docstring): every dense row of NVIDIA's v1.0 "
             "table as an offline job through TensorRT-LLM's simulated scheduler (the road of `gpuplan capacity "
             "--engine trtllm --batch N`), nothing fitted here; bench/results/trtllm.md scores the same rows with "
             "the generic estimate (held-out 6.8 %) and the trtllm-bench model (5.3 %). The issue's goal for "
             "TensorRT-LLM: 15 %."),
            "",
            "| rows | n | median abs error |", "|---|---:|---:|"]
    for name, errors in sorted(by_role.items()):
        head.append(f"| {name} | {len(errors)} | {statistics.median(abs(x) for x in errors):.1%} |")
    lines = ["| table | GPU | TP | ISL/OSL | role | published tok/s | capacity --batch |",
             "|---|---|---:|---|---|---:|---:|", *lines]
    Path(args.out).write_text("\n".join(head + server_lines() + ["", "## Every offline row", ""] + lines) + "\n",
                              encoding="utf-8")
    print("\n".join(head[4:4 + 2 + len(by_role)]))


if __name__ == "__main__":
    main()
