"""Copy NVIDIA's MLPerf Training results (Llama-2-70B LoRA, Llama 3.1 405B and 8B pre-training, NeMo) into
bench/data/mlperf-training.csv: one row per submitted system, from the round's own files.

For each ``NVIDIA/results/<system>/<benchmark>/result_*.txt`` (MLLOG lines): the time to train of each run
(``run_stop`` - ``run_start``, ms), the samples it trained (``run_stop``'s ``samples_count``), its evaluation passes
(``eval_start`` lines), their size (``eval_samples``) and the minutes they took, the step pace the run logged
(:func:`log_facts`), the global batch, and from ``:::SYSJSON`` the GPUs. The
parallel layout comes from the launch configuration the system's README names
(``NVIDIA/benchmarks/<benchmark>/implementations/<system>/README-<system>.md`` -> ``config_*.sh``, with the
``config_common.sh`` and the other ``config_*.sh`` it sources): TP, PP, virtual stages, CP, micro-batch, fp8 or
fp4, whether the fp8 weights' transposes are kept (:func:`transpose_cache`), activation recompute
(``ACT_CKPT_GRANULARITY`` / ``RECOMPUTE_GRANULARITY``; the benchmarks' NeMo configs
default to none), CUDA graphs, fp8 attention and the fp8 store of the MLP activation's input
(``MCORE_CUDA_GRAPH`` / ``LAYER_CUDA_GRAPH``, ``FP8_DPA``, ``FP8_ACT`` / ``FP8_ACTIVATION``), tensor-parallel
communication overlapped by userbuffers (``TP_COMM_OVERLAP``, where TP > 1), and for fp4 the steps
before fp8 "healing" (``HEALING_ITER``). A row is the median of the successful runs (MLPerf scores the mean of the runs
less the fastest and slowest; the median is close and needs no rule per benchmark).

``python bench/make_mlperf.py ROUND=CLONE [ROUND=CLONE ...] > bench/data/mlperf-training.csv`` with clones of
mlcommons/training_results_v<ROUND> (read with ``git show HEAD:path``: no work tree needed).
"""

from __future__ import annotations

import csv
import json
import re
import statistics
import subprocess
import sys

BENCHMARKS = {"llama2_70b_lora": ("meta-llama/Llama-2-70b-hf", 8192),
              "llama31_405b": ("meta-llama/Llama-3.1-405B", 8192),
              "llama31_8b": ("meta-llama/Llama-3.1-8B", 8192)}
GPUS = {"H100": "h100-sxm", "H200": "h200-sxm", "B200": "b200", "GB200": "gb200", "GB300": "gb300",
        "B300": "b300", "L40S": "l40s"}
COLUMNS = ["id", "round", "system", "benchmark", "model", "accelerator", "gpu", "n_gpus", "nodes", "tp", "pp", "vpp",
           "cp", "micro_batch", "global_batch", "seq_len", "precision", "recompute", "runs", "time_to_train_min",
           "samples_to_converge", "evals", "eval_samples", "cuda_graphs", "fp8_attention", "fp8_activation_store",
           "tp_overlap", "healing_iter", "logged_step_s", "logged_eval_min", "commit", "source_locator",
           "fp8_transpose_cache"]
# the NeMo model config beside a launch file, where the submission ships one
NEMO_CONFIGS = ("conf/megatron_gpt_peft_tuning_config.yaml", "src/conf/megatron_gpt_peft_tuning_config.yaml")


def gpu_id(accelerator: str) -> str:
    """gpuplan's id of the system's GPU, by the name in its system description ('' when gpuplan has none)."""
    for name in sorted(GPUS, key=len, reverse=True):
        if re.search(rf"\b{re.escape(name)}\b", accelerator):
            return GPUS[name]
    return ""


def truthy(value: str | None) -> bool:
    return (value or "").lower() in ("true", "1")


def transpose_cache(clone: str, config_path: str, files: set[str], cfg: dict[str, str]) -> str:
    """Whether Transformer Engine keeps the fp8 weights' transposes (gpuplan ``fp8_transpose_cache``): "1" or "0"
    where the launch file sets ``ENABLE_TRANSPOSE_CACHE`` (AMD's v5.1 configs: ROCm Transformer Engine's
    ``keep_fp8_weight_transpose_cache``), else "0" where the NeMo config beside it sets
    ``disable_parameter_transpose_cache: True`` (NVIDIA's v4.x and AMD's v5.0 LoRA configs: Megatron-Core passes
    ``is_first_microbatch=None`` and Transformer Engine 1.x fills no transpose cache), else "" (gpuplan's default)."""
    if "ENABLE_TRANSPOSE_CACHE" in cfg:
        return "1" if truthy(cfg["ENABLE_TRANSPOSE_CACHE"]) else "0"
    folder = config_path.rsplit("/", 1)[0]
    nemo = next((f"{folder}/{name}" for name in NEMO_CONFIGS if f"{folder}/{name}" in files), None)
    text = git(clone, "show", f"HEAD:{nemo}") if nemo else ""
    return "0" if re.search(r"^\s*disable_parameter_transpose_cache:\s*True\b", text, re.M) else ""


def git(clone: str, *args: str) -> str:
    return subprocess.run(["git", "-C", clone, *args], check=True, capture_output=True, text=True).stdout


def exports(text: str) -> dict[str, str]:
    """``export NAME=value`` lines with a literal value (``${...}`` defaults and expressions left out)."""
    out = {}
    for name, value in re.findall(r"^\s*export\s+(\w+)=([^\s#]*)", text, re.M):
        value = value.strip("\"'")
        if value and "$" not in value:
            out[name] = value
    return out


def layout(clone: str, benchmark: str, system: str, files: set[str]) -> tuple[dict[str, str], str] | None:
    readme = f"NVIDIA/benchmarks/{benchmark}/implementations/{system}/README-{system}.md"
    if readme not in files:
        return None
    names = re.findall(r"(config_[\w.\-]+\.sh)", git(clone, "show", f"HEAD:{readme}"))
    if not names:
        return None
    name = names[0]
    found = [f for f in files if f.startswith(f"NVIDIA/benchmarks/{benchmark}/implementations/")
             and f.endswith("/" + name)]
    if not found:
        return None
    path = sorted(found, key=lambda f: f"/{system}/" not in f)[0]  # the system's own copy first
    folder = path.rsplit("/", 1)[0]
    values: dict[str, str] = {}
    for common in ("config_common.sh", "configs/config_common.sh"):
        if f"{folder}/{common}" in files:
            values |= exports(git(clone, "show", f"HEAD:{folder}/{common}"))
    text = git(clone, "show", f"HEAD:{path}")
    for sourced in re.findall(r"^\s*source\s+.*/(config_[\w.\-]+\.sh)", text, re.M):  # the files it sources
        if sourced != "config_common.sh" and f"{folder}/{sourced}" in files:
            values |= exports(git(clone, "show", f"HEAD:{folder}/{sourced}"))
    values |= exports(text)
    return values, path


def log_facts(lines: list[str]) -> dict:
    """One run's facts from its MLLOG lines: start and stop (ms), samples trained, evaluation passes and the seconds
    they took (``eval_start`` to ``eval_stop``), the logged step pace (s), the status, batch and platform.

    The pace is the median of the run's ``tracked_stats``: ``train_step_time`` (s per step; NVIDIA's v5.x
    ``mlperf_common`` callbacks), else ``throughput`` (samples/s over the timed training batches: v4.x
    ``custom_callbacks.py`` ``Timer``, ``on_train_batch_start`` to ``on_train_batch_end``; a step is
    ``global_batch_size`` samples)."""
    facts: dict = {"evals": 0, "eval_s": 0.0, "sysjson": {}}
    steps, rates, opened = [], [], None
    for line in lines:
        if line.startswith(":::SYSJSON"):
            facts["sysjson"] = json.loads(line.split(" ", 1)[1])
        if ":::MLLOG" not in line:
            continue
        rec = json.loads(line.split(":::MLLOG", 1)[1])
        key, value = rec["key"], rec["value"]
        if key == "run_start":
            facts["start"] = rec["time_ms"]
        elif key == "run_stop":
            facts["stop"], facts["samples"] = rec["time_ms"], rec["metadata"].get("samples_count")
            facts["status"] = rec["metadata"].get("status")
        elif key == "eval_start":
            facts["evals"] += 1
            opened = rec["time_ms"]
        elif key == "eval_stop" and opened is not None:
            facts["eval_s"] += (rec["time_ms"] - opened) / 1000
            opened = None
        elif key == "tracked_stats" and isinstance(value, dict):
            if value.get("train_step_time"):
                steps.append(float(value["train_step_time"]))
            elif value.get("throughput"):
                rates.append(float(value["throughput"]))
        elif key in ("global_batch_size", "eval_samples", "submission_platform"):
            facts[key] = value
    if steps:
        facts["step_s"] = statistics.median(steps)
    elif rates and facts.get("global_batch_size"):
        facts["step_s"] = facts["global_batch_size"] / statistics.median(rates)
    return facts


def runs(clone: str, paths: list[str]) -> list[dict]:
    out = []
    for path in paths:
        facts = log_facts(git(clone, "show", f"HEAD:{path}").splitlines())
        start, stop, samples = facts.pop("start", None), facts.pop("stop", None), facts.pop("samples", None)
        if start and stop and facts.get("status") == "success" and samples:
            out.append({"minutes": (stop - start) / 60000, "samples": samples, **facts})
    return out


def rows(round_: str, clone: str) -> list[dict]:
    commit = git(clone, "rev-parse", "HEAD").strip()
    files = set(git(clone, "ls-tree", "-r", "--name-only", "HEAD", "NVIDIA").split())
    out = []
    for benchmark, (model, seq) in BENCHMARKS.items():
        systems = sorted({f.split("/")[2] for f in files
                          if re.match(rf"NVIDIA/results/[^/]+/{benchmark}/result_\d+\.txt$", f)})
        for system in systems:
            found = layout(clone, benchmark, system, files)
            logs = sorted(f for f in files if re.match(rf"NVIDIA/results/{system}/{benchmark}/result_\d+\.txt$", f))
            done = runs(clone, logs)
            if not found or not done:
                continue
            cfg, config_path = found
            paced = [r for r in done if "step_s" in r]
            sj = done[0]["sysjson"] or json.loads(git(clone, "show", f"HEAD:NVIDIA/systems/{system}.json"))
            accel = sj.get("accelerator_model_name", "").replace("NVIDIA ", "")
            nodes, per_node = int(sj.get("number_of_nodes", 1)), int(sj.get("accelerators_per_node", 8))
            tp = cfg.get("TP") or cfg.get("TENSOR_MODEL_PARALLEL", "1")
            pp = cfg.get("PP") or cfg.get("PIPELINE_MODEL_PARALLEL", "1")
            cp = cfg.get("CP") or cfg.get("CONTEXT_PARALLEL", "1")
            vpp = cfg.get("INTERLEAVED_PIPELINE") or cfg.get("VP") or "1"
            vpp = "1" if vpp.lower() in ("null", "none", "0") else vpp
            fp4 = any(k.startswith("FP4") and v.lower() in ("true", "1") for k, v in cfg.items()) or \
                "fp4" in config_path
            precision = "fp4" if fp4 else "fp8" if cfg.get("FP8", "").lower() in ("true", "1") else "bf16"
            out.append({
                "round": round_, "system": system, "benchmark": benchmark, "model": model, "accelerator": accel,
                "gpu": gpu_id(accel), "n_gpus": nodes * per_node, "nodes": nodes,
                "tp": tp, "pp": pp, "vpp": vpp, "cp": cp,
                "micro_batch": cfg.get("MICRO_BATCH_SIZE", "1"),
                "global_batch": done[0].get("global_batch_size", ""), "seq_len": seq, "precision": precision,
                # the NeMo configs' activations_checkpoint_granularity / recompute_granularity default null
                "recompute": cfg.get("ACT_CKPT_GRANULARITY") or cfg.get("RECOMPUTE_GRANULARITY") or "none",
                "runs": len(done),
                "time_to_train_min": round(statistics.median(r["minutes"] for r in done), 3),
                "samples_to_converge": int(statistics.median(r["samples"] for r in done)),
                "evals": int(statistics.median(r["evals"] for r in done)),
                "eval_samples": done[0].get("eval_samples", ""),
                # CUDA graphs: Megatron-Core's (MCORE_CUDA_GRAPH -> enable_cuda_graph) or Transformer Engine's per
                # layer (LAYER_CUDA_GRAPH -> external_cuda_graph / enable_cuda_graph); fp8 attention: FP8_DPA ->
                # fp8_dot_product_attention
                "cuda_graphs": int(any(truthy(cfg.get(k)) for k in ("MCORE_CUDA_GRAPH", "LAYER_CUDA_GRAPH"))),
                "fp8_attention": int(truthy(cfg.get("FP8_DPA"))),
                # activation_func_fp8_input_store: FP8_ACT (v5.x), FP8_ACTIVATION (v4.x; v4.0's config names it
                # fp8_activation_input_store)
                "fp8_activation_store": int(truthy(cfg.get("FP8_ACT")) or truthy(cfg.get("FP8_ACTIVATION"))),
                # TP_COMM_OVERLAP -> NeMo's ub_tp_comm_overlap: Transformer Engine's userbuffers pipeline every
                # tensor-parallel collective with the GEMM beside it (gpuplan tp_overlap userbuffers)
                "tp_overlap": "userbuffers" if truthy(cfg.get("TP_COMM_OVERLAP")) and int(tp) > 1 else "",
                # NVIDIA's fp4 LoRA recipe trains HEALING_ITER steps in NVFP4, then heals in fp8 (HEALING_PRECISION)
                "healing_iter": int(cfg.get("HEALING_ITER", "0")) if fp4 else 0,
                # what the runs logged: their step pace (log_facts) and the minutes their evaluations took
                "logged_step_s": round(statistics.median(r["step_s"] for r in paced), 4) if paced else "",
                "logged_eval_min": round(statistics.median(r["eval_s"] for r in done) / 60, 3),
                "commit": commit,
                "source_locator": f"mlcommons/training_results_v{round_}@{commit[:8]} NVIDIA/results/{system}/"
                                  f"{benchmark}/result_*.txt; {config_path}",
                "fp8_transpose_cache": transpose_cache(clone, config_path, files, cfg) if precision == "fp8" else ""})
    return out


def main(pairs: list[str]) -> None:
    table = [row for pair in pairs for row in rows(*pair.split("=", 1))]
    writer = csv.DictWriter(sys.stdout, fieldnames=COLUMNS, lineterminator="\n")
    writer.writeheader()
    for i, row in enumerate(table, 1):
        writer.writerow({"id": f"T{i:03d}", **row})


if __name__ == "__main__":
    main(sys.argv[1:])
