"""Copy AMD's and Intel (Habana Labs)'s MLPerf Training results (Llama-2-70B LoRA, Llama 3.1 8B pre-training) into
bench/data/mlperf-training-other.csv: one row per submitted system, from the round's own files, as
bench/make_mlperf.py copies NVIDIA's (its :func:`~make_mlperf.runs` read the same MLLOG lines).

The layout each submitter ran:

- AMD (v5.0, v5.1; NeMo, Megatron-Core and Transformer Engine on ROCm): the ``config_<GPU>_*.sh`` in
  ``AMD/benchmarks/<benchmark>/implementations/<system>*/`` (``TP``, ``PP``, ``CP``, ``MBS``, ``FP8`` or
  ``FP8_PARAMS``, ``FP8_DPA``, ``FP8_ACTIVATION``; ``ACG``, ``ACM``, ``ACL``: the activation recompute, none where
  unset, as NeMo's default; the MI300X configs set ``ACG=full ACM=block ACL=21``: the first 21 layers recomputed,
  ``recompute_layers``), stack megatron; whether Transformer Engine keeps the fp8 weights' transposes
  (``fp8_transpose_cache``, :func:`make_mlperf.transpose_cache`: ``ENABLE_TRANSPOSE_CACHE=0`` in v5.1, the NeMo
  config's ``disable_parameter_transpose_cache: True`` in v5.0).
- Intel-HabanaLabs (v4.0, Gaudi 2): the launch script its README names
  (``benchmarks/llm_finetune/run_llama_70B_fp8_submission.sh``): the Hugging Face Trainer (optimum-habana) under
  DeepSpeed ZeRO-3 (``configs/ds_zero3.json``), ``--per_device_train_batch_size``, ``--fp8``,
  ``--use_gradient_checkpointing``; stack hf, sharding zero3.

Rows are held out: no gpuplan constant is fitted on them. ``python bench/make_mlperf_other.py ROUND=CLONE ...
> bench/data/mlperf-training-other.csv`` with clones of mlcommons/training_results_v<ROUND>.
"""

from __future__ import annotations

import csv
import json
import re
import statistics
import sys

from make_mlperf import BENCHMARKS, COLUMNS, exports, git, runs, transpose_cache

# AMD's own and its partners' (AMD's recipe on their machines), Intel's
SUBMITTERS = ("AMD", "ASUSTeK", "Dell", "GigaComputing", "MangoBoost", "MiTAC", "Oracle", "Supermicro",
              "Intel-HabanaLabs")
# gpuplan's ids by the accelerator name of the system description (MI350X: not in gpuplan's catalog)
GPUS = {"MI300X": "amd-instinct-mi300x", "MI325X": "amd-instinct-mi325x", "MI355X": "amd-instinct-mi355x",
        "Gaudi(R) 2": "intel-gaudi2", "Gaudi 2": "intel-gaudi2", "MI350X": ""}
# the launch script each Intel system's README names (benchmarks/llm_finetune/README.md, "./run_llama_70B_...")
INTEL_SCRIPTS = {"llama2_70b_lora": "Intel-HabanaLabs/benchmarks/llm_finetune/run_llama_70B_fp8_submission.sh"}
OTHER = ["submitter", "stack", "sharding", "software", "recompute_layers"]


def accelerator_of(sysjson: dict) -> tuple[str, str]:
    name = sysjson.get("accelerator_model_name", "")
    return name, next((gpu for key, gpu in GPUS.items() if key in name), "")


def amd_layout(files: set[str], submitter: str, benchmark: str, system: str, accel: str,
               nodes: int) -> str | None:
    """The ``config_<chip>_<nodes>x8x1*.sh`` the system ran: AMD's own under ``implementations/<system>*``; a
    partner's (Dell, Oracle, Supermicro, ...: AMD's recipe) wherever under its benchmark's folder, the system's own
    folder first."""
    chip = next((k for k in GPUS if k.startswith("MI") and k in accel), "")
    found = [f for f in files if f.startswith(f"{submitter}/benchmarks/{benchmark}/")
             and re.search(rf"/config_{chip}_{nodes}x\d+x\d+[\w.]*\.sh$", f)]
    own = [f for f in files if f.startswith(f"{submitter}/benchmarks/{benchmark}/implementations/{system}")
           and re.search(rf"/config_\w*{chip}\.sh$", f)]  # ASUSTeK's config_ESC_A8A_MI325X.sh
    return min(found, key=lambda f: (f"/{system}" not in f, f), default=None) or min(own, default=None)


def chained_exports(text: str) -> dict[str, str]:
    """:func:`make_mlperf.exports`, with the ``export A=x && export B=y`` chains AMD's configs write on one line."""
    out = exports(text)
    for name, value in re.findall(r"&&\s*export\s+(\w+)=([^\s#&;]*)", text):
        if value and "$" not in value:
            out[name] = value.strip("\"'")
    return out


def amd_fields(cfg: dict, cache: str = "") -> dict:
    fp8 = any(cfg.get(k, "").lower() in ("true", "1") for k in ("FP8", "FP8_PARAMS"))
    full = cfg.get("ACG") == "full"
    return {"tp": cfg.get("TP", "1"), "pp": cfg.get("PP", "1"), "vpp": "1", "cp": cfg.get("CP", "1"),
            "micro_batch": cfg.get("MBS", "1"), "precision": "fp8" if fp8 else "bf16",
            "recompute": cfg.get("ACG", "none") if cfg.get("ACG") in ("full", "selective") else "none",
            "recompute_layers": cfg.get("ACL", "") if full and cfg.get("ACM") == "block" else "",
            "fp8_transpose_cache": cache if fp8 else "",
            "cuda_graphs": 0, "fp8_attention": int(cfg.get("FP8_DPA", "0").lower() in ("true", "1")),
            "fp8_activation_store": int(cfg.get("FP8_ACTIVATION", "").lower() in ("true", "1")),
            "tp_overlap": "", "healing_iter": 0, "stack": "megatron", "sharding": ""}


def intel_fields(script: str) -> dict:
    flag = dict(re.findall(r"--(\w+)[ \t]+([^\s\\-][^\s\\]*)", script))
    recompute = flag.get("use_gradient_checkpointing", "").lower() == "true"
    return {"tp": "1", "pp": "1", "vpp": "1", "cp": "1", "micro_batch": flag.get("per_device_train_batch_size", "1"),
            "precision": "fp8" if re.search(r"--fp8\b", script) else "bf16",
            "recompute": "full" if recompute else "none", "cuda_graphs": 0, "fp8_attention": 0,
            "fp8_activation_store": 0, "tp_overlap": "", "healing_iter": 0, "stack": "hf",
            "sharding": "zero3" if "ds_zero3" in flag.get("deepspeed", "") else ""}


def layout_of(clone: str, files: set[str], submitter: str, benchmark: str, system: str, accel: str,
              nodes: int) -> tuple[str, dict] | None:
    """The launch file a system ran and the layout it sets; None off AMD and Intel (NVIDIA's cards: its own
    submissions are bench/make_mlperf.py's) or where no launch file is found."""
    if "Gaudi" in accel:
        config = INTEL_SCRIPTS[benchmark]
        return config, intel_fields(git(clone, "show", f"HEAD:{config}"))
    config = amd_layout(files, submitter, benchmark, system, accel, nodes) if "MI3" in accel else None
    if not config:
        return None
    cfg = chained_exports(git(clone, "show", f"HEAD:{config}"))
    return config, amd_fields(cfg, transpose_cache(clone, config, files, cfg))


def system_rows(round_: str, clone: str, commit: str, files: set[str], submitter: str) -> list[dict]:
    out = []
    for benchmark, (model, seq) in BENCHMARKS.items():
        systems = sorted({f.split("/")[2] for f in files
                          if re.match(rf"{submitter}/results/[^/]+/{benchmark}/result_\d+\.txt$", f)})
        for system in systems:
            if f"{submitter}/systems/{system}.json" not in files:
                continue
            sj = json.loads(git(clone, "show", f"HEAD:{submitter}/systems/{system}.json"))
            accel, gpu = accelerator_of(sj)
            nodes, per_node = int(sj.get("number_of_nodes", 1)), int(sj.get("accelerators_per_node", 8))
            found = layout_of(clone, files, submitter, benchmark, system, accel, nodes)
            logs = sorted(f for f in files if re.match(rf"{submitter}/results/{system}/{benchmark}/result_\d+\.txt$",
                                                       f))
            done = runs(clone, logs) if found else []
            if not done:
                continue
            config, fields = found
            paced = [r for r in done if "step_s" in r]
            evals = [r["evals"] for r in done]
            if not any(evals):  # Intel's v4.0 logs have no eval_start: one eval_accuracy line a pass
                evals = [git(clone, "show", f"HEAD:{log}").count('"key": "eval_accuracy"') for log in logs]
            out.append({
                "round": round_, "system": system, "benchmark": benchmark, "model": model, "accelerator": accel,
                "gpu": gpu, "n_gpus": nodes * per_node, "nodes": nodes, **fields,
                "global_batch": done[0].get("global_batch_size", ""), "seq_len": seq, "runs": len(done),
                "time_to_train_min": round(statistics.median(r["minutes"] for r in done), 3),
                "samples_to_converge": int(statistics.median(r["samples"] for r in done)),
                "evals": int(statistics.median(evals)),
                "eval_samples": done[0].get("eval_samples", ""),
                "logged_step_s": round(statistics.median(r["step_s"] for r in paced), 4) if paced else "",
                "logged_eval_min": round(statistics.median(r["eval_s"] for r in done) / 60, 3),
                "commit": commit, "submitter": submitter,
                "software": f"{sj.get('framework', '')}; {sj.get('other_software_stack', '')}".strip("; "),
                "source_locator": f"mlcommons/training_results_v{round_}@{commit[:8]} {submitter}/results/{system}/"
                                  f"{benchmark}/result_*.txt; {config}"})
    return out


def rows(round_: str, clone: str) -> list[dict]:
    commit = git(clone, "rev-parse", "HEAD").strip()
    out = []
    for submitter in SUBMITTERS:
        files = set(git(clone, "ls-tree", "-r", "--name-only", "HEAD", submitter).split())
        out += system_rows(round_, clone, commit, files, submitter)
    return out


def main(pairs: list[str]) -> None:
    table = [row for pair in pairs for row in rows(*pair.split("=", 1))]
    writer = csv.DictWriter(sys.stdout, fieldnames=COLUMNS + OTHER, lineterminator="\n")
    writer.writeheader()
    for i, row in enumerate(table, 1):
        writer.writerow({"id": f"V{i:03d}", **row})


if __name__ == "__main__":
    main(sys.argv[1:])
