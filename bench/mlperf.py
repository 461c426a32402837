"""MLPerf Training time to train: gpuplan against NVIDIA's submissions (bench/data/mlperf-training.csv, copied from
mlcommons/training_results_v4.0-v5.1 by bench/make_mlperf.py).

Each row is a whole job: the samples its runs trained to reach the benchmark's target (median of the runs) times
8,192 tokens, at gpuplan's throughput for the submission's own layout (stack megatron: TP, PP, virtual
stages, CP, micro and global batch, fp8, its activation recompute), plus its evaluation passes (the log's
``eval_start`` count x ``eval_samples`` sequences, each a forward: :func:`gpuplan.market.job.forward_share`; every
data-parallel rank runs whole micro-batches, so a pass takes ``ceil(eval_samples / (dp x mbs))`` rounds), with the
CUDA graphs, fp8 attention, fp8 store of the MLP activation's input and userbuffers TP overlap its configuration sets
(``MCORE_CUDA_GRAPH`` / ``LAYER_CUDA_GRAPH``, ``FP8_DPA``, ``FP8_ACT``, ``TP_COMM_OVERLAP``).
Error = (estimate - measured) / measured. Beside it, gpuplan's step against the pace the log states, and the
measured time split as the log states it (steps at that pace, evaluations, the rest): :func:`paced`. The memory
estimate must fit the card too (the job ran). No constant of
gpuplan was fitted on these rows: every row is held out. fp4 rows train in NVFP4 (precision fp4-mixed), the LoRA ones
for their ``healing_iter`` steps and in fp8 after (NVIDIA's "FP4 -> FP8 healing"). Rows gpuplan cannot express are
listed with the reason.

``python bench/mlperf.py`` prints the report; ``--write`` also writes bench/results/mlperf.md.
"""

from __future__ import annotations

import csv
import math
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from gpuplan import GpuplanError, estimate, load_model  # noqa: E402
from gpuplan import overheads as oh  # noqa: E402
from gpuplan.hardware import Network, load_gpu  # noqa: E402
from gpuplan.market.job import forward_share  # noqa: E402
from gpuplan.scenario import scenario_from  # noqa: E402
from gpuplan.speed import speed_of  # noqa: E402

DATA = ROOT / "bench" / "data" / "mlperf-training.csv"
# AMD's and Intel's submissions (bench/make_mlperf_other.py): one-node rows, held out as NVIDIA's
OTHER = ROOT / "bench" / "data" / "mlperf-training-other.csv"
RESULTS = ROOT / "bench" / "results" / "mlperf.md"
# The systems' fabrics, from their system descriptions (NVIDIA/systems/<system>.json): DGX H100/H200/B200 nodes
# have 8 ConnectX-7 400 Gb/s InfiniBand NICs; GB200 NVL72 trays 4 GPUs with a 400 Gb/s NIC each, GB300 trays
# 800 Gb/s (ConnectX-8); inside an NVL72 rack the GPUs share one NVLink domain (the catalog's nvlink_domain 72).
FABRIC = {"h100-sxm": 3200, "h200-sxm": 3200, "b200": 3200, "gb200": 1600, "gb300": 3200}
LORA = {"method": "lora", "lora_rank": 16, "lora_targets": ["q_proj", "k_proj", "v_proj", "o_proj"]}


def scenario(row: dict) -> dict:
    n, nodes = int(row["n_gpus"]), int(row["nodes"])
    tp, pp, cp, vpp = (int(row[k]) for k in ("tp", "pp", "cp", "vpp"))
    mb, gbs, seq = int(row["micro_batch"]), int(row["global_batch"]), int(row["seq_len"])
    dp = n // (tp * pp * cp)
    stack = row.get("stack") or "megatron"  # Intel's Gaudi 2 LoRA: the Hugging Face Trainer under DeepSpeed ZeRO-3
    return {"model": row["model"], "task": "train", "stack": stack, "gpu": row["gpu"],
            **({"sharding": row["sharding"]} if row.get("sharding") else {}),
            "num_gpus": n // nodes, "num_nodes": nodes, "tp": tp, "pp": pp, "cp": cp, "vpp": vpp,
            "seq_len": seq, "micro_batch_size": mb, "grad_accum_steps": max(1, gbs // (mb * dp)),
            "precision": f"{row['precision']}-mixed", "train_tokens": float(row["samples_to_converge"]) * seq,
            "grad_checkpointing": row["recompute"], "cuda_graphs": row["cuda_graphs"] == "1",
            "fp8_attention": row["fp8_attention"] == "1", "fp8_activation_store": row["fp8_activation_store"] == "1",
            **({"tp_overlap": row["tp_overlap"]} if row["tp_overlap"] else {}),
            # AMD's rows (bench/make_mlperf_other.py): block recompute of the first N layers, the fp8 transposes
            **({"recompute_layers": int(row["recompute_layers"])} if row.get("recompute_layers") else {}),
            **({"fp8_transpose_cache": row["fp8_transpose_cache"] == "1"} if row.get("fp8_transpose_cache") else {}),
            **(LORA if row["benchmark"] == "llama2_70b_lora" else {})}


def why_not(row: dict) -> str | None:
    if not row["gpu"]:
        return f"{row['accelerator']}: not in gpuplan's catalog"
    if row["gpu"] not in FABRIC and int(row["nodes"]) > 1:
        return f"{row['accelerator']}: the node's fabric is not transcribed"
    return None


def run(rows: list[dict]) -> tuple[list[dict], list[dict]]:
    scored, skipped = [], []
    for row in rows:
        reason = why_not(row)
        if reason is None:
            try:
                fields = scenario(row)
                s = scenario_from(fields)
                m, gpu = load_model(s.model), load_gpu(s.gpu)
                net = Network(intra_node="nvlink", inter_node="infiniband", inter_node_gbps=FABRIC[row["gpu"]]) \
                    if row["gpu"] in FABRIC else Network()  # one node off NVIDIA: the card's own links
                speed = speed_of(s, m, gpu, net)
                memory = estimate(fields, advise=False).memory
            except GpuplanError as err:
                reason = str(err)
        if reason:
            skipped.append({**row, "why": reason})
            continue
        train_s = s.train_tokens / speed.tokens_per_s
        healed = int(row["healing_iter"] or 0)
        if healed:  # NVFP4 for the first healing_iter steps, then fp8 (delayed scaling) for the rest
            fp4_tokens = min(s.train_tokens, healed * int(row["global_batch"]) * s.seq_len)
            fp8 = speed_of(s.model_copy(update={"precision": "fp8-mixed", "fp8_recipe": "delayed"}), m, gpu, net)
            train_s = fp4_tokens / speed.tokens_per_s + (s.train_tokens - fp4_tokens) / fp8.tokens_per_s
        # each data-parallel rank runs whole micro-batches: an evaluation takes ceil(samples / (dp x mbs)) rounds
        per_round = s.dp * s.micro_batch_size
        eval_seqs = math.ceil(int(row["eval_samples"] or 0) / per_round) * per_round
        eval_s = int(row["evals"]) * eval_seqs * s.seq_len * forward_share(s, m) / speed.tokens_per_s
        minutes = (train_s + eval_s) / 60
        measured = float(row["time_to_train_min"])
        scored.append({**row, "estimated_min": minutes, "eval_min": eval_s / 60,
                       "error_pct": 100 * (minutes - measured) / measured,
                       "device_gib": memory.device_peak_gib, "fits": memory.fits, **paced(row, speed.step_time_s)})
    return scored, skipped


def paced(row: dict, step_s: float) -> dict:
    """gpuplan's step against the pace the runs logged (``logged_step_s``, bench/make_mlperf.py ``log_facts``), and
    the measured time to train split as the log states it: the steps to the target at that pace, the evaluations'
    logged minutes, and the rest (neither a timed step nor an evaluation: the first evaluation's start, slower first
    steps). Empty where the log states no pace. NVFP4 rows: gpuplan's NVFP4 step against the whole run's pace."""
    if not row.get("logged_step_s"):
        return {}
    logged = float(row["logged_step_s"])
    steps_min = int(row["samples_to_converge"]) / int(row["global_batch"]) * logged / 60
    evals_min = float(row["logged_eval_min"])
    return {"step_s": step_s, "step_error_pct": 100 * (step_s - logged) / logged, "logged_steps_min": steps_min,
            "logged_rest_min": float(row["time_to_train_min"]) - steps_min - evals_min}


def _median_abs(rows: list[dict], key: str = "error_pct") -> float | None:
    rows = [r for r in rows if key in r]
    return statistics.median(abs(r[key]) for r in rows) if rows else None


def report(scored: list[dict], skipped: list[dict]) -> str:
    lines = ["## MLPerf Training: time to train", "",
             "gpuplan's time to train (samples to the target x 8,192 tokens at its throughput for the submission's "
             "own layout, plus the logged evaluation passes) against NVIDIA's MLPerf Training submissions (NeMo); "
             "median of each system's runs; error = (estimate - measured) / measured. Source: "
             "bench/data/mlperf-training.csv (`python bench/make_mlperf.py`); no gpuplan constant was fitted on "
             "these rows (all held out). Memory: the device peak gpuplan predicts per GPU (the job ran, so it must "
             "fit). Step: gpuplan's step time against the pace the runs logged (the median of their `tracked_stats`: "
             "`train_step_time`, or v4.x's timed `throughput` in samples/s); log split: the measured minutes as "
             "steps to the target at that pace + the logged evaluations + the rest (neither: the first "
             "evaluation's start, slower first steps).", "",
             "| id | round | system | benchmark | GPUs | TP/PP/VP/CP | GBS | measured min | gpuplan min (eval) | "
             "error % | step s gpuplan / log (error %) | log split: steps + evals + rest min | GiB/GPU fits |",
             "|---|---|---|---|---|---|---|---:|---:|---:|---:|---:|---|"]
    for r in scored:
        step = f"{r['step_s']:.3f} / {float(r['logged_step_s']):.3f} ({r['step_error_pct']:+.1f})" \
            if "step_s" in r else "-"
        split = f"{r['logged_steps_min']:.2f} + {float(r['logged_eval_min']):.2f} + {r['logged_rest_min']:.2f}" \
            if "step_s" in r else "-"
        lines.append(f"| {r['id']} | v{r['round']} | {r['system']} | {r['benchmark']} | {r['n_gpus']}x {r['gpu']} | "
                     f"{r['tp']}/{r['pp']}/{r['vpp']}/{r['cp']} | {r['global_batch']} | "
                     f"{float(r['time_to_train_min']):.2f} | {r['estimated_min']:.2f} ({r['eval_min']:.2f}) | "
                     f"{r['error_pct']:+.1f} | {step} | {split} | {r['device_gib']:.1f} "
                     f"{'yes' if r['fits'] else 'NO'} |")
    lines += ["", "| benchmark | rows | median abs error % | median abs step error % | within 15 % | memory fits |",
              "|---|---:|---:|---:|---:|---:|"]
    groups: dict[str, list[dict]] = {}
    for r in scored:
        groups.setdefault(r["benchmark"], []).append(r)
    for name, rows in [*groups.items(), ("all", scored)]:
        lines.append(f"| {name} | {len(rows)} | {_median_abs(rows):.1f} | {_median_abs(rows, 'step_error_pct'):.1f} | "
                     f"{sum(abs(r['error_pct']) <= 15 for r in rows)} | {sum(bool(r['fits']) for r in rows)} |")
    lines += ["", "Not expressed:", ""]
    lines += [f"- {r['id']} v{r['round']} {r['system']} {r['benchmark']}: {r['why']}" for r in skipped]
    return "\n".join(lines) + "\n"


def band_check(r: dict, speed_low: float, speed_high: float) -> str:
    """Whether the measured pace lies inside the range gpuplan printed: the logged step against gpuplan's step
    scaled by the tokens/s range (rate low -> step long); the time to train where the log states no pace."""
    ratio = float(r["logged_step_s"]) / r["step_s"] if "step_s" in r else \
        float(r["time_to_train_min"]) / r["estimated_min"]
    return "yes" if 1 / (1 + speed_high) <= ratio <= 1 / (1 + speed_low) else "NO"


def report_other(scored: list[dict], skipped: list[dict]) -> str:
    """AMD's and Intel's submissions (bench/data/mlperf-training-other.csv), each against the range gpuplan prints
    off NVIDIA: ``uncalibrated``, twice the held-out training spread (overheads.SPEED_SPREAD x
    SPEED_SPREAD_WIDENING)."""
    low, high = (oh.SPEED_SPREAD["train"][i] * oh.SPEED_SPREAD_WIDENING["uncalibrated"] for i in (0, 1))
    lines = ["## MLPerf Training off NVIDIA: AMD Instinct and Intel Gaudi", "",
             "The same measure on AMD's and Intel's own submissions (bench/data/mlperf-training-other.csv, "
             "`python bench/make_mlperf_other.py`): AMD's NeMo / Megatron-Core / Transformer Engine on ROCm as stack "
             "megatron, Intel's optimum-habana Trainer under DeepSpeed ZeRO-3 as stack hf; held out, nothing fitted. "
             f"In range: the measured pace inside the range gpuplan prints off NVIDIA ({low:+.0%} / {high:+.0%} of "
             "its tokens/s, 'uncalibrated').", "",
             "| id | round | submitter | system | benchmark | GPUs | precision | measured min | gpuplan min (eval) | "
             "error % | step s gpuplan / log (error %) | in range | GiB/GPU fits | software |",
             "|---|---|---|---|---|---|---|---:|---:|---:|---:|---|---|---|"]
    for r in scored:
        step = f"{r['step_s']:.3f} / {float(r['logged_step_s']):.3f} ({r['step_error_pct']:+.1f})" \
            if "step_s" in r else "- (no pace logged)"
        lines.append(f"| {r['id']} | v{r['round']} | {r['submitter']} | {r['system']} | {r['benchmark']} | "
                     f"{r['n_gpus']}x {r['gpu']} | {r['precision']} | {float(r['time_to_train_min']):.2f} | "
                     f"{r['estimated_min']:.2f} ({r['eval_min']:.2f}) | {r['error_pct']:+.1f} | {step} | "
                     f"{band_check(r, low, high)} | {r['device_gib']:.1f} {'yes' if r['fits'] else 'NO'} | "
                     f"{r['software']} |")
    lines += ["", "| card maker / card | rows | median error % | median abs error % | in range |",
              "|---|---:|---:|---:|---:|"]
    groups: dict[str, list[dict]] = {}
    for r in scored:
        for key in (load_gpu(r["gpu"]).vendor, f"{load_gpu(r['gpu']).vendor} / {r['gpu']}"):
            groups.setdefault(key, []).append(r)
    for name, rows in sorted(groups.items()):
        lines.append(f"| {name} | {len(rows)} | {statistics.median(r['error_pct'] for r in rows):+.1f} | "
                     f"{_median_abs(rows):.1f} | {sum(band_check(r, low, high) == 'yes' for r in rows)} |")
    lines += ["", "Not expressed:", ""]
    lines += [f"- {r['id']} v{r['round']} {r['submitter']} {r['system']} {r['benchmark']}: {r['why']}" for r in skipped]
    return "\n".join(lines) + "\n"


def main() -> None:
    with DATA.open() as f:
        rows = list(csv.DictReader(f))
    with OTHER.open() as f:
        other = list(csv.DictReader(f))
    text = report(*run(rows)) + "\n" + report_other(*run(other))
    print(text)
    if "--write" in sys.argv:
        RESULTS.write_text(text)


if __name__ == "__main__":
    main()
