"""Turn the memory rows of ../shared/reference/measured-public.csv into estimator scenarios.

    python bench/make_cases.py [--csv PATH]   # writes bench/accuracy_cases.yaml

One rule per source, with every inferred value written into the case's ``assumptions``; rows that cannot
be expressed are listed with the reason under ``skipped``. The rules read the row's own columns; no value
is chosen to flatter the estimator. Levels: ``allocated`` (torch max_memory_allocated), ``reserved``
(max_memory_reserved, torchtitan's max_reserved, mean reserved), ``device`` (method not stated: the
comparison assumes nvidia-smi), ``weights`` (a GGUF file size), ``oom`` (the run did not fit).
"""

from __future__ import annotations

import argparse
import csv
import re
from pathlib import Path

import yaml

HERE = Path(__file__).resolve().parent
DEFAULT_CSV = HERE.parents[1] / "shared" / "reference" / "measured-public.csv"
if not DEFAULT_CSV.exists():
    DEFAULT_CSV = HERE.parent.parent / "shared" / "reference" / "measured-public.csv"

GB_PER_GIB = 2**30 / 1e9


def gib(row) -> float:
    value = float(row["value"])
    if row["unit"].strip() == "GB":
        value /= GB_PER_GIB
    if "total_all_gpus" in row["metric"] or "sum_all_gpus" in row["metric"]:
        value /= int(row["n_gpus"] or 1)
    return round(value, 4)


def level(row) -> str:
    metric = row["metric"]
    if "allocated" in metric:
        return "allocated"
    if "reserved" in metric or "active" in metric:
        return "reserved"
    return "device"


def qwen25(row):
    """Qwen2.5 docs speed benchmark (transformers): batch 1, prompt N, 2048 generated, FlashAttention-2."""
    m = re.match(r"Qwen/Qwen2\.5-([\d.]+B)-Instruct(?:-(GPTQ-Int4|GPTQ-Int8|AWQ))?$", row["model"])
    if not m:
        return None, f"unknown model {row['model']}"
    size, quant = m.groups()
    model = "bench/models/Qwen2.5-3B.json" if size == "3B" else f"qwen2.5-{size.lower()}"
    n = re.match(r"input (\d+) \+ (\d+) generated", row["seq_len"])
    scenario = dict(model=model, task="infer", batch_size=1, prompt_tokens=int(n.group(1)),
                    output_tokens=int(n.group(2)), attention="flash")
    if quant:
        scenario["quant"] = {"GPTQ-Int4": "gptq-int4", "GPTQ-Int8": "gptq-int8", "AWQ": "awq-int4"}[quant]
    note = "Instruct = base architecture; "
    if row["n_gpus"] not in ("", "1"):
        note += f"sum over {row['n_gpus']} GPUs (device_map=auto) compared with the single-device total; "
        return dict(scenario=scenario, measured_gib=float(row["value"]), assumptions=note), None
    return dict(scenario=scenario, assumptions=note), None


QWEN1 = {"1_8B": "bench/models/Qwen-1_8B.json", "7B": "bench/models/Qwen-7B.json",
         "14B": "bench/models/Qwen-14B.json", "72B": "bench/models/Qwen-72B.json"}


def qwen1_finetune(row):
    """Qwen (v1) finetune.py profiling: micro-batch 1, grad accumulation 8, checkpointing, FlashAttention-2."""
    if row["notes"].startswith("VARIANT"):
        return None, "variant: embeddings and lm_head trainable (not a LoRA scenario gpuplan expresses)"
    m = re.search(r"Qwen-(1_8B|7B|14B|72B)", row["model"])
    model = QWEN1[m.group(1)]
    gpus = int(row["n_gpus"] or 1)
    scenario = dict(model=model, task="train", micro_batch_size=1, grad_accum_steps=8, seq_len=int(row["seq_len"]),
                    grad_checkpointing="full", attention="flash", optimizer="adamw")
    notes = "HF Trainer adamw_torch; "
    par = row["parallelism"]
    if row["workload"] == "LoRA":
        scenario.update(method="lora", lora_rank=64, lora_targets="all-linear", precision="bf16-mixed")
        notes += "LoRA r=64 on c_attn,c_proj,w1,w2 = every linear (all-linear); bf16 base, fp32 adapters; "
    elif row["workload"] == "QLoRA":
        scenario.update(method="qlora", quant="gptq-int4", lora_rank=64, precision="fp16-mixed")
        notes += "Q-LoRA on the GPTQ-Int4 chat model, fp16; "
    else:
        scenario.update(method="full", precision="bf16-mixed")
    if gpus > 1:
        nodes = 2 if "2 nodes" in par else 1
        scenario.update(num_gpus=gpus // nodes, num_nodes=nodes,
                        strategy="zero3" if "ZeRO-3" in par else "zero2")
        notes += f"DeepSpeed {scenario['strategy'].upper()} over {gpus} GPUs; "
    elif "DeepSpeed" in par:
        notes += "DeepSpeed on one GPU shards nothing: modelled as a single GPU; "
    return dict(scenario=scenario, assumptions=notes + "memory tool not stated: compared as device (nvidia-smi)"), None


def qwen1_inference(row):
    """Qwen (v1) profile.py / KV-cache tables: a short prompt (assumed 16 tokens), N generated."""
    m = re.search(r"Qwen-(1_8B|7B|14B|72B)", row["model"])
    model = QWEN1[m.group(1)]
    gen = re.search(r"(\d+)", row["seq_len"].replace("short prompt + ", "")).group(1)
    scenario = dict(model=model, task="infer", batch_size=int(row["micro_batch"] or 1), prompt_tokens=16,
                    output_tokens=int(gen), precision="bf16-true")
    quant = row["quant"]
    if "GPTQ int8" in quant:
        scenario["quant"] = "gptq-int8"
    elif "GPTQ int4" in quant:
        scenario["quant"] = "gptq-int4"
    if "KV int8" in quant or "int8 KV" in row["notes"]:
        scenario["kv_cache_dtype"] = "int8"
    scenario["attention"] = "flash" if "flash" in row["attn"] else "sdpa"
    if row["metric"] == "oom_flag":
        scenario["gpu"] = "a100-sxm4-80gb"
    return dict(scenario=scenario, assumptions="short prompt taken as 16 tokens; memory tool not stated: "
                "compared as device (nvidia-smi)"), None


def peft_metamath(row):
    """peft MetaMathQA benchmark: Llama-3.2-3B, pure bf16, batch 4, sequences up to 768 (variable)."""
    if row["workload"] == "PEFT-other":
        return None, "IA3 / prefix tuning / VeRA / OSF are not gpuplan methods"
    if "incl_eval" in row["metric"]:
        return None, "peak includes evaluation with generation (not a training step)"
    scenario = dict(model="llama-3.2-3b", task="train", precision="bf16-true", micro_batch_size=4, seq_len=768,
                    attention="sdpa", optimizer="adamw")
    m = re.search(r"r=(\d+) on ([\w/,]+)", row["notes"])
    if row["workload"] == "LoRA" and m:
        targets = m.group(2).replace("gate/up/down_proj", "gate_proj,up_proj,down_proj").split(",")
        scenario.update(method="lora", lora_rank=int(m.group(1)), lora_targets=[t.strip() for t in targets])
    return dict(scenario=scenario, assumptions="variable lengths up to 768 modelled at 768 (an upper bound "
                "for a mean over steps)", fixed_length=False), None


def torchtune(row):
    """torchtune recipes (not HF code: chunked cross-entropy, its own LoRA modules)."""
    if "after_model_init" in row["metric"]:
        return None, "memory after model init only (no step)"
    model = {"meta-llama/Llama-2-7b-hf": "llama-2-7b", "meta-llama/Meta-Llama-3-8B-Instruct": "llama-3-8b",
             "meta-llama/Llama-3.2-3B": "llama-3.2-3b"}.get(row["model"])
    if model is None:
        return None, f"model {row['model']} not expressible"
    seq = 4096 if row["seq_len"].startswith("4096") else 1024
    scenario = dict(model=model, task="train", micro_batch_size=int(row["micro_batch"].split()[0]), seq_len=seq,
                    grad_checkpointing="full" if row["grad_ckpt"].startswith("on") else "none",
                    precision="bf16-true", attention="sdpa")
    if row["workload"] == "LoRA":
        scenario.update(method="lora", lora_rank=8, lora_targets=["q_proj", "v_proj"])
    elif row["workload"] == "QLoRA":
        scenario.update(method="qlora", lora_rank=8, lora_targets=["q_proj", "v_proj", "k_proj", "o_proj"],
                        precision="bf16-mixed")
    else:
        opt = row["optimizer"]
        scenario["optimizer"] = "paged-adamw-8bit" if "Paged" in opt else "adamw"
    n = int(row["n_gpus"] or 1)
    if n > 1:
        scenario.update(num_gpus=n, strategy="fsdp")
    return dict(scenario=scenario, assumptions=f"alpaca/variable lengths taken as {seq} tokens; torchtune "
                "defaults (LoRA r=8); not HF code", fixed_length=False), None


def torchtitan(row):
    """torchtitan: FSDP2 pre-training. Only the bf16, 1D-FSDP rows are expressible (no float8, CP, TP+PP)."""
    if "float8" in row["precision"] or row["parallelism"] != f"FSDP {row['n_gpus']} (1D)":
        return None, "float8 / context parallel / 2D-4D parallelism not expressed"
    scenario = dict(model="llama-3.1-8b", task="train", micro_batch_size=int(row["micro_batch"]), seq_len=8192,
                    grad_checkpointing="selective", attention="flash", precision="bf16-mixed",
                    num_gpus=8, num_nodes=int(row["n_gpus"]) // 8, strategy="fsdp")
    return dict(scenario=scenario, assumptions="FSDP2 as ZeRO-3; torch.compile fusions not modelled"), None


def llama_cpp(row):
    kind = row["quant"].replace("GGUF ", "").lower()
    scenario = dict(model="llama-3.1-8b", task="infer", engine="llama.cpp", quant=f"gguf-{kind}")
    return dict(scenario=scenario, level="weights", assumptions="file size = all weights; mixes use the "
                "bits/weight of llama.cpp's own table (calibration, not an independent check)"), None


RULES = {
    "Qwen2.5 docs speed benchmark": qwen25,
    "Qwen (v1) README finetuning profiling": qwen1_finetune,
    "Qwen (v1) README inference profiling": qwen1_inference,
    "Qwen (v1) README KV-cache profiling": qwen1_inference,
    "huggingface/peft MetaMathQA method-comparison benchmark": peft_metamath,
    "torchtune README (2024-04 memory table)": torchtune,
    "torchtune README (optimization flags table)": torchtune,
    "torchtune docs Llama3 tutorial": torchtune,
    "torchtune docs QLoRA tutorial": torchtune,
    "torchtitan benchmarks (Dec 2024)": torchtitan,
    "llama.cpp quantize README": llama_cpp,
}
SKIP_SOURCES = {
    "huggingface/peft README memory table": "T5/BLOOMZ rows with batch and length not stated",
    "HF accelerate big-model-inference benchmark": "encoder-decoder T0pp (not a decoder-only model)",
    "Unsloth README max-context benchmark": "Unsloth's own offloaded checkpointing and kernels",
}
MEMORY_METRICS = ("mem", "gguf_model_size", "oom_flag", "max_seq_len_that_fits")


def build(csv_path: Path) -> dict:
    cases, skipped = [], []
    for row in csv.DictReader(csv_path.open(encoding="utf-8")):
        if not any(k in row["metric"] for k in MEMORY_METRICS):
            continue
        rule = RULES.get(row["source"])
        if rule is None:
            skipped.append({"id": row["id"], "why": SKIP_SOURCES.get(row["source"], "source not expressible")})
            continue
        if "torchtune" in row["source"] and row["workload"] == "inference":
            skipped.append({"id": row["id"], "why": "torchtune generate of a merged model: prompt not stated"})
            continue
        case, why = rule(row)
        if case is None:
            skipped.append({"id": row["id"], "why": why})
            continue
        lvl = case.pop("level", None) or ("oom" if row["metric"] == "oom_flag" else level(row))
        measured = case.pop("measured_gib", None)
        cases.append({"id": row["id"], "source": row["source"], "workload": row["workload"],
                      "metric": row["metric"], "level": lvl,
                      "measured_gib": None if lvl == "oom" else (round(measured, 4) if measured else gib(row)),
                      "fixed_length": case.pop("fixed_length", True), **case})
    return {"cases": cases, "skipped": skipped}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--csv", type=Path, default=DEFAULT_CSV)
    parser.add_argument("--out", type=Path, default=HERE / "accuracy_cases.yaml")
    args = parser.parse_args()
    data = build(args.csv)
    header = "# Generated by bench/make_cases.py from measured-public.csv; edit the rules there, not this file.\n"
    args.out.write_text(header + yaml.safe_dump(data, sort_keys=False, width=120))
    print(f"{len(data['cases'])} cases, {len(data['skipped'])} skipped -> {args.out}")


if __name__ == "__main__":
    main()
