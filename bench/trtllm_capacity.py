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

Under load: MLPerf Inference v4.1 Server runs of Llama-2-70B (bench/data/mlperf-server.csv), each the highest Poisson
rate whose p99 TTFT <= 2 s and p99 TPOT <= 200 ms, against ``capacity --engine trtllm --rate`` with the same SLOs on
one instance of the submission (its tp, gpu_batch_size, max_num_tokens 4,096, kv fraction, MAX_UTILIZATION as MLPerf's
harness schedules), prompts of 300 tokens (assumed, as bench/mlperf_inference.py: OpenOrca's mean is not published)
and the run's own output tokens, both drawn within +-50 % (the capacity default); error on requests/s per instance.
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


def server_rate(row: dict) -> tuple[float, float, float]:
    """(requests/s, p99 TTFT s, p99 TPOT s) ``capacity`` finds for one instance of the MLPerf Server row."""
    from gpuplan.scenario import scenario_from

    tp, out = int(row["tp"]), int(row["output_tokens"])
    s = scenario_from({"model": "meta-llama/Llama-2-70b-hf", "task": "infer", "engine": "trtllm", "quant": "fp8",
                       "kv_cache_dtype": "fp8", "free_gpu_memory_fraction": float(row["kv_fraction"]),
                       "max_num_seqs": int(row["max_batch_size"]),
                       "max_num_batched_tokens": int(row["max_num_tokens"]), "prompt_tokens": SERVER_PROMPT_TOKENS,
                       "output_tokens": out, "capacity_scheduler_policy": "max_utilization"})
    w = load_workload(None, {"prompt_tokens": SERVER_PROMPT_TOKENS, "output_tokens": out, "length_spread": 0.5,
                             "ttft_s": 2, "tpot_s": 0.2, "percentile": 99})
    (d,) = [d for d in capacity(s, load_model(s.model), w, gpu_ids=(row["gpu"],), max_gpus=tp) if d.tp == tp]
    return d.max_rate_rps, d.ttft_s, d.tpot_s


def server_lines() -> list[str]:
    title = "## Under load: MLPerf Inference v4.1 Server, Llama-2-70B (capacity --rate, p99 TTFT 2 s, TPOT 200 ms)"
    lines = ["", title,
             "", "| system | tp | published req/s per instance | capacity | error | p99 TTFT / TPOT published | "
             "capacity at its rate |", "|---|---:|---:|---:|---:|---|---|"]
    for row in server_rows():
        per = float(row["samples_per_s"]) / (int(row["gpus"]) // int(row["tp"]))
        rate, ttft, tpot = server_rate(row)
        lines.append(f"| {row['system']} | {row['tp']} | {per:.2f} | {rate:.2f} | {rate / per - 1:+.1%} | "
                     f"{float(row['p99_ttft_ms']):.0f} / {float(row['p99_tpot_ms']):.0f} ms | "
                     f"{ttft * 1e3:.0f} / {tpot * 1e3:.0f} ms |")
    lines += ["", "The rates land within 10 %, but not for the SLO's reason: the simulated engine stops being steady "
              "(its queue grows) near its saturated throughput while its p99 TPOT is still about a third of the "
              "published one. The H200 run held about 450 requests in flight (100.35 req/s / 8 x the 35.9 s mean "
              "latency of its log) where the simulation holds fewer than 240 (11.46 req/s x its p99 end-to-end latency "
              "of 20.9 s, an upper bound): the step model prices a large mixed batch of "
              "a 70B model faster than TensorRT-LLM ran it, and the prompt lengths are an assumption. Not fitted; "
              "left for the serving step model's next calibration."]
    return lines


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
