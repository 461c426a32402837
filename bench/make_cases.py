"""Turn the memory rows of bench/data/measured-public.csv (published measurements, each row with its source; see
bench/data/SOURCES.md) and bench/measured-stacks.csv (published rows of the training stacks it lacks) into
estimator scenarios.

    python bench/make_cases.py [--csv PATH]   # writes bench/accuracy_cases.yaml

One rule per source, with every inferred value written into the case's ``assumptions``; rows that cannot
be expressed are listed with the reason under ``skipped``. The rules read the row's own columns; no value
is chosen to flatter the estimator. Levels: ``allocated`` (torch max_memory_allocated; torchtune's peak
*active* bytes count here, being allocated blocks), ``reserved`` (max_memory_reserved, torchtitan's
max_reserved, mean reserved), ``device`` (method not stated: the comparison assumes nvidia-smi), ``weights``
(memory right after model init), ``file`` (a GGUF file: llama.cpp's GPU model buffer + the token embedding it maps
in RAM), ``oom`` (the run did not fit). Cases with
``calibration: true`` are rows a gpuplan constant was read from; the runner shows them apart.
"""

from __future__ import annotations

import argparse
import csv
import re
from pathlib import Path

import yaml

HERE = Path(__file__).resolve().parent
DEFAULT_CSV = HERE / "data" / "measured-public.csv"  # a copy kept in the repository (bench/data/SOURCES.md)

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
    if "allocated" in metric or "active" in metric:  # peak active bytes = allocated blocks, below reserved
        return "allocated"
    if "reserved" in metric:
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
    par = row["parallelism"]
    deepspeed = "DeepSpeed" in par
    # finetune.py pads every sample to model_max_length, so the data is fixed-length. With DeepSpeed the
    # ds_config's "optimizer": AdamW block builds DeepSpeed's FusedAdam (HF --optim is then ignored); without
    # it HF Trainer's adamw_torch is torch.optim.AdamW with torch 2.0's default, the foreach implementation.
    scenario = dict(model=model, task="train", micro_batch_size=1, grad_accum_steps=8, seq_len=int(row["seq_len"]),
                    grad_checkpointing="full", attention="flash", optimizer="adamw",
                    optimizer_impl="fused" if deepspeed else "foreach")
    notes = ("DeepSpeed FusedAdam (ds_config optimizer block); " if deepspeed else
             "HF Trainer adamw_torch = torch 2.0 AdamW, foreach; ")
    if row["workload"] == "LoRA":
        scenario.update(method="lora", lora_rank=64, lora_targets="all-linear", lora_dropout=0.05,
                        precision="bf16-mixed")
        notes += ("LoRA r=64, dropout 0.05 (finetune.py LoraArguments) on c_attn,c_proj,w1,w2 = every linear "
                  "(all-linear); bf16 base, fp32 adapters; ")
    elif row["workload"] == "QLoRA":
        scenario.update(method="qlora", quant="gptq-int4", lora_rank=64, lora_dropout=0.05, precision="fp16-mixed")
        notes += "Q-LoRA r=64, dropout 0.05 on the GPTQ-Int4 chat model, fp16; "
    else:
        scenario.update(method="full", precision="bf16-mixed")
    if gpus > 1:
        nodes = 2 if "2 nodes" in par else 1
        scenario.update(num_gpus=gpus // nodes, num_nodes=nodes,
                        sharding="zero3" if "ZeRO-3" in par else "zero2")
        notes += f"DeepSpeed {scenario['sharding'].upper()} over {gpus} GPUs; "
    elif deepspeed:
        notes += ("DeepSpeed ZeRO on one GPU (its fp16/bf16 optimizer wrapper, fp32 partitions, buckets) is "
                  "modelled as a plain single GPU: gpuplan rejects ZeRO with one data-parallel rank; ")
    return dict(scenario=scenario, assumptions=notes + "memory tool not stated: compared as device (nvidia-smi)"), None


def qwen1_inference(row):
    """Qwen (v1) README inference table, made with the repo's profile.py: context_length_per_experiment = 1
    (the prompt is one token, '我'), 2048 generated, use_flash_attn = True, and the memory printed as
    ``torch.cuda.max_memory_allocated() / 1024**3`` under the label "GB": allocated level, already GiB."""
    case, why = qwen1_kv(row)
    case["scenario"].update(prompt_tokens=1, attention="flash")
    if "quant" in case["scenario"]:
        case["scenario"]["precision"] = "fp16-true"  # AutoGPTQ from_quantized loads fp16
    case.update(level="allocated", measured_gib=float(row["value"]),
                assumptions="profile.py: 1-token context, 2048 generated, FlashAttention; memory = "
                            "max_memory_allocated / 2**30 printed as 'GB' (GiB, not converted)")
    return case, why


def qwen1_kv(row):
    """Qwen (v1) README KV-cache tables: a short prompt (assumed 16 tokens), N generated; KV-cache
    quantization needs use_flash_attn=False, and the CSV gives the baseline as eager/non-flash too."""
    if row["id"] == "M0533":
        return None, "same setting and value as M0519 (batch 1, 1024 tokens, 16.3 GB), repeated in the other table"
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
    scenario["attention"] = "flash" if "flash" in row["attn"] else "eager"
    if row["metric"] == "oom_flag":
        scenario["gpu"] = "a100-sxm4-80gb"
    return dict(scenario=scenario, assumptions="short prompt taken as 16 tokens; attention eager (Qwen-1 "
                "disables flash attention with KV-cache quantization; baseline stated as non-flash); memory "
                "tool not stated: compared as device (nvidia-smi)"), None


def peft_metamath(row):
    """peft MetaMathQA benchmark: Llama-3.2-3B, pure bf16, batch 4, sequences up to 768 (variable)."""
    if row["workload"] == "PEFT-other":
        return None, "IA3 / prefix tuning / VeRA / OSF are not gpuplan methods"
    if "incl_eval" in row["metric"]:
        return None, "peak includes evaluation with generation (not a training step)"
    if "use_dora" in row["notes"]:
        return None, "DoRA (peft's use_dora: the weight's column norms each step) is not a gpuplan method"
    # the data as gpuplan's shorthand: MetaMathQA's 395,000 records filtered to the 93.8 % that fit 768 tokens
    # (data.py CHAR_LIMIT), mean ~210 tokens (the row's notes), up to 768; run.py's BucketIterator sorts buckets of
    # 20 batches by length (modelled as the Trainer's group_by_length, 50 batches)
    scenario = dict(model="llama-3.2-3b", task="train", precision="bf16-true", micro_batch_size=4,
                    samples=370_510, mean_tokens=210, max_tokens=768, packing="bucket",
                    attention="sdpa", optimizer="adamw", optimizer_impl="foreach")
    m = re.search(r"r=(\d+) on ([\w/,]+)", row["notes"])
    if row["workload"] == "LoRA" and m:
        targets = m.group(2).replace("gate/up/down_proj", "gate_proj,up_proj,down_proj").split(",")
        scenario.update(method="lora", lora_rank=int(m.group(1)), lora_targets=[t.strip() for t in targets])
    case = dict(scenario=scenario, assumptions="MetaMathQA as the shorthand 370,510 records of mean 210 tokens up "
                "to 768 (log-normal lengths assumed), bucketed by length; run.py's own loop builds "
                "torch.optim.AdamW with defaults (foreach); adapters kept fp32 (autocast_adapter_dtype)",
                fixed_length=False)
    if row["metric"] == "mean_mem_reserved_train_steps":  # reserved after each step, empty_cache every 10 steps
        case["mean_over_steps"] = 10
        case["assumptions"] += ("; the mean over steps of memory_reserved() with empty_cache every 10 steps: the "
                                "mean of the estimates at the longest batch of the last 1 to 10 steps")
    return case, None


# torchtune releases by their tag's commit date (pytorch/torchtune tags v0.1.0 to v0.6.1; the PyPI uploads follow within
# a day, 0.6.0's on 2025-03-25). Rule for a source that does not state its release (no torchtune source here does): the
# release current on the source's date, the last one tagged on or before it. Read by torchtune_before
# (gpuplan.scenario.stacks): < 0.2 torchao 0.1's whole-weight NF4, < 0.3 FSDP1 recipes, < 0.5 the bf16 RMSNorm output
TORCHTUNE_RELEASES = (("2024-04-15", "0.1.0"), ("2024-04-18", "0.1.1"), ("2024-07-16", "0.2.0"),
                      ("2024-07-25", "0.2.1"), ("2024-09-17", "0.3.0"), ("2024-10-02", "0.3.1"),
                      ("2024-11-13", "0.4.0"), ("2024-12-20", "0.5.0"), ("2025-03-18", "0.6.0"),
                      ("2025-04-07", "0.6.1"))
# each torchtune source's date: the commit that wrote its numbers (git log -S on the figure)
TORCHTUNE_DATES = {
    "torchtune docs QLoRA tutorial": "2024-04-15",  # 0914d5cf 'QLoRA tutorial (#693)', in v0.1.0
    "torchtune README (2024-04 memory table)": "2024-04-16",  # fef3ed10 'Memory update (#775)'
    "torchtune docs Llama3 tutorial": "2024-04-18",  # 20747cd8 'Llama3 changes (#793)', in v0.1.1 (llama3 models)
    "torchtune README (Llama 3.1 memory table)": "2024-09-24",  # 30b8519e 'Readme Updates (#1664)'
    "torchtune README (optimization flags table)": "2024-11-18",  # 1814feb1 'add flags to readme (#2003)'
}


def release_on(releases: tuple[tuple[str, str], ...], date: str) -> str:
    """The release current on ``date`` (ISO): the last of ``releases`` (date, release) dated on or before it."""
    current = [release for day, release in releases if day <= date]
    if not current:
        raise ValueError(f"no release on or before {date}")
    return current[-1]


def torchtune_release(source: str) -> tuple[str, str]:
    """The torchtune release a source ran, by :data:`TORCHTUNE_DATES` and :func:`release_on`, and the note saying
    so."""
    date = TORCHTUNE_DATES[source]
    version = release_on(TORCHTUNE_RELEASES, date)
    return version, f"torchtune {version}, the release current on the source's date ({date}; none stated)"


def torchtune(row):
    """torchtune recipes (its own modules, not HF code). Sources for the defaults: the recipe configs of the
    time (llama2/7B_qlora_single_device: LoRA r=8 on q,k,v,output_proj + MLP; llama2/7B_lora_single_device and
    llama3/8B_lora_single_device: r=8 on q,v; dtype bf16 everywhere, so adapters and AdamW states are bf16) and
    torchtune.datasets.alpaca_cleaned_dataset(max_seq_len=512), padded per batch to its longest sample."""
    metric, opt = row["metric"], row["optimizer"]
    if row["id"] == "M0055":
        return None, "same measurement as M0063 (9.29 GB, llama2/7B_qlora_single_device), which states reserved"
    model = {"meta-llama/Llama-2-7b-hf": "llama-2-7b", "meta-llama/Meta-Llama-3-8B-Instruct": "llama-3-8b",
             "meta-llama/Llama-3.2-3B": "llama-3.2-3b",
             "meta-llama/Meta-Llama-3-8B-Instruct (LoRA-merged)": "llama-3-8b"}.get(row["model"])
    if model is None:
        return None, f"model {row['model']} not expressible"
    if row["workload"] == "inference":
        # recipes/generate.py: setup_caches(batch_size=1) allocates a static KV cache of the model's
        # max_seq_len (8192 for Llama-3), and logs torch.cuda.max_memory_allocated() / 1e9 as "Memory used".
        scenario = dict(model=model, task="infer", batch_size=1, prompt_tokens=6, output_tokens=206,
                        precision="bf16-true", attention="sdpa")
        return dict(scenario=scenario, level="allocated",
                    assumptions="tutorial prompt 'Hello, my name is' (6 tokens with BOS); 206 tokens = 10.88 s "
                                "x 18.94 tok/s; 'Memory used' = max_memory_allocated/1e9; torchtune's static KV "
                                "cache for 8192 positions is not modelled"), None
    packed = "packed from" in row["seq_len"]  # the flags table packs to 4096 from its '+Packed' row on
    # torchtune 0.1.0 (2024-04-15): the QLoRA tutorial (0914d5cf) and the README table (fef3ed10) of its week
    v01 = row["source"].startswith(("torchtune README (2024-04", "torchtune docs QLoRA tutorial"))
    seq = 4096 if row["seq_len"].startswith("4096") else 512
    scenario = dict(model=model, task="train", stack="torchtune",
                    micro_batch_size=int(row["micro_batch"].split()[0]), seq_len=seq,
                    grad_checkpointing="full" if row["grad_ckpt"].startswith("on") else "none",
                    precision="bf16-true", attention="sdpa", optimizer="adamw")
    notes = []
    if "in backward" in opt or "optimizer_in_bwd" in opt:
        scenario["optimizer_in_backward"] = True
        notes.append("optimizer step fused into backward (optimizer_in_bwd)")
    if "PagedAdamW8bit" in opt:
        scenario["optimizer"] = "paged-adamw-8bit"
    if row["workload"] == "LoRA":
        scenario.update(method="lora", lora_rank=8, lora_targets=["q_proj", "v_proj"])
    elif row["workload"] == "QLoRA":
        scenario.update(method="qlora", lora_rank=8, lora_targets="all-linear")
        notes.append("QLoRA on q,k,v,o and the MLP = all-linear (torchtune quantizes only LoRA-wrapped "
                     "linears, here all of them); " + ("torchao 0.1 NF4 (torchtune 0.1, the tutorial's release), "
                                                       "which quantizes each weight whole at model init"
                                                       if v01 else "torchao NF4"))
    # 2024-04 configs: torch.optim.AdamW without fused, torch.nn.CrossEntropyLoss on the fp32 logits
    scenario.update(optimizer_impl="foreach", loss="full")
    notes.append("alpaca-cleaned padded per batch, max_seq_len 512 (dataset default then); AdamW foreach; "
                 "loss on the full fp32 logits (CrossEntropyLoss; chunked CE came in 2024-08)")
    if "4090" in row["gpu"]:
        scenario["gpu"] = "rtx-4090"
    n = int(row["n_gpus"] or 1)
    if n > 1:
        scenario.update(num_gpus=n, sharding="fsdp1" if v01 else "fsdp")
        if v01:
            notes.insert(0, "torchtune 0.1's full_finetune_distributed wrapped the model in FSDP1 (FULL_SHARD, one "
                            "unit per decoder layer, mixed_precision None, flat parameters: torch AdamW foreach "
                            "over them)")
    scenario["torchtune_version"], release = torchtune_release(row["source"])
    notes.append(release)
    if "after_model_init" in metric:
        notes.append("reserved right after model init = weights + LoRA adapters (+ RoPE cache), compared with "
                     "the weights")
        return dict(scenario=scenario, level="weights", assumptions="; ".join(notes), fixed_length=packed), None
    if metric == "peak_mem_per_gpu" and v01:
        # the same table's QLoRA row (9.29 GB) is the QLoRA tutorial's 'Peak memory reserved, training' of the
        # same week, and the README's LoRA figure before the table (~15.5 GB) the tutorial's LoRA reserved (15.57)
        notes.append("'peak memory' is reserved: the table's QLoRA row (9.29 GB) is the QLoRA tutorial's 'Peak "
                     "memory reserved, training' of the same week, and the README's LoRA figure before this table "
                     "(~15.5 GB) its LoRA reserved (15.57 GB)")
        return dict(scenario=scenario, level="reserved", assumptions="; ".join(notes), fixed_length=packed), None
    if metric == "peak_mem_per_gpu":
        # the statistic is not stated: torchtune's recipes log torch's counters (training.get_memory_stats:
        # peak_memory_active, peak_memory_alloc, peak_memory_reserved), so its 'peak memory' is taken as allocated
        notes.append("'peak memory' not named: torchtune logs torch.cuda's counters (peak_memory_active/alloc/"
                     "reserved), compared as allocated")
        return dict(scenario=scenario, level="allocated", assumptions="; ".join(notes), fixed_length=packed), None
    return dict(scenario=scenario, assumptions="; ".join(notes), fixed_length=packed), None


# torchtune README 'Optimization flags' (pytorch/torchtune@1814feb1, 2024-11-18): each technique added on top of the
# ones above it; LoRA and QLoRA take all of them but the optimizer in backward and 8-bit AdamW
FLAGS = ("Baseline", "+ Packed Dataset", "+ Compile", "+ Chunked Cross Entropy", "+ Activation Checkpointing",
         "+ Fuse optimizer step into backward", "+ Activation Offloading", "+ 8-bit AdamW", "LoRA", "QLoRA")


def torchtune_flags(row):
    """torchtune README 'Optimization flags': Llama 3.2 3B, batch 2, max sequence length 4096, bf16, A100 (80GB
    taken), recipe full_finetune_single_device with torch AdamW (fused taken) and the techniques applied in
    :data:`FLAGS` order; LoRA and QLoRA: the llama3_2/3B_{lora,qlora}_single_device configs of 1814feb1 (r=64 on
    q_proj, v_proj, output_proj and the MLP; AdamW fused) with the reproduce command's flags (packed, compile,
    chunked loss, checkpointing, activation offloading, batch 2, no accumulation). 'Peak Memory Active' (active
    bytes are allocated blocks) compared with allocated."""
    tech = re.match(r"Technique: ([^;]+);", row["notes"]).group(1)
    k = FLAGS.index(tech)
    if k == 0:
        return None, ("baseline: alpaca unpacked, padded per batch up to 4,096 tokens; the longest batch of the "
                      "measured epoch (and the mean length behind its tokens/s) is not stated")
    scenario = dict(model="llama-3.2-3b", task="train", stack="torchtune", micro_batch_size=2, seq_len=4096,
                    grad_checkpointing="full" if k >= 4 else "none", precision="bf16-true", attention="sdpa",
                    optimizer="adamw-8bit" if k == 7 else "adamw")
    scenario["torchtune_version"], release = torchtune_release(row["source"])
    notes = ["packed to 4096 (fixed length)", release]
    if 5 <= k <= 7:
        scenario["optimizer_in_backward"] = True
        notes.insert(0, "optimizer step fused into backward (optimizer_in_bwd)")
    if k != 7:
        scenario["optimizer_impl"] = "fused"
    scenario.update(gpu="a100-sxm4-80gb", compile=k >= 2, loss="chunked" if k >= 3 else "full")
    if k >= 6:
        scenario["activation_offload"] = True
        notes.append("activation offloading (OffloadActivations)")
    if k >= 8:
        scenario.update(method=tech.lower(), lora_rank=64,
                        lora_targets=["q_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"])
        notes.append("r=64 on q, v, output_proj and the MLP (config); AdamW fused (config), no optimizer in backward")
    notes.append("torch.compile (layers and loss) and CEWithChunkedOutputLoss (8 chunks) on from their rows on; "
                 "peak *active* bytes compared with allocated; A100 taken as 80GB")
    case = dict(scenario=scenario, level="allocated")
    if k == 7:
        # which 8-bit AdamW is not named: the memory tutorial offers torchao's AdamW8bit and bnb's PagedAdamW8bit;
        # the paged one keeps its states in CUDA managed memory, outside torch's counters (10.0 GiB estimated that
        # way, against 17.6), so the states were tracked: read off the row, it is calibration, not counted
        case["calibration"] = True
        notes.append("8-bit AdamW not named: a tracked 8-bit state (torchao AdamW8bit, the tutorial's first "
                     "suggestion) as adamw-8bit, inferred from the measured level, since bnb PagedAdamW8bit's "
                     "managed-memory states are outside torch's counters (calibration row, not counted)")
    case["assumptions"] = "; ".join(notes)
    return case, None


def torchtune_llama31(row):
    """torchtune README 'Memory and training speed' (2024-09-24): Llama 3.1 with the llama3_1 recipe configs of that
    commit (30b8519e8) and the table's note: batch 2 without accumulation, packed to 2,048, compile on. The configs:
    activation checkpointing on, CEWithChunkedOutputLoss (405B: torch.nn.CrossEntropyLoss), AdamW fused (8B full:
    bnb PagedAdamW8bit with optimizer_in_bwd), LoRA r=8 on q,v (8B LoRA), r=8 on all linears (8B QLoRA), r=16 on
    q,k,v (70B), r=16 on all linears (405B); one dtype, bf16. 'Peak Memory per GPU' is not named: compared as
    allocated, torchtune's own counters (peak active bytes are allocated blocks)."""
    if "offload" in row["parallelism"]:
        return None, ("70B full: custom_sharded_layers (embeddings and head as FSDP units of their own) with "
                      "CPUOffloadPolicy is not a gpuplan scenario")
    model = {"meta-llama/Llama-3.1-8B-Instruct": "llama-3.1-8b", "meta-llama/Llama-3.1-70B-Instruct": "llama-3.1-70b",
             "meta-llama/Llama-3.1-405B-Instruct": "llama-3.1-405b"}[row["model"]]
    scenario = dict(model=model, task="train", stack="torchtune", micro_batch_size=2, seq_len=2048,
                    grad_checkpointing="full", precision="bf16-true", attention="sdpa", compile=True,
                    optimizer="adamw", optimizer_impl="fused", loss="full" if model == "llama-3.1-405b" else "chunked",
                    gpu={"RTX 4090 24GB": "rtx-4090", "RTX A6000 48GB": "rtx-a6000"}.get(row["gpu"], "a100-sxm4-80gb"))
    scenario["torchtune_version"], release = torchtune_release(row["source"])
    notes = ["batch 2 x 2,048 packed, compile (the table's note); the llama3_1 config of 2024-09-24 for the rest",
             release]
    if row["workload"] == "full-FT":
        scenario.update(method="full", optimizer="paged-adamw-8bit", optimizer_in_backward=True)
    elif model == "llama-3.1-8b":
        scenario.update(method=row["workload"].lower(), lora_rank=8,
                        lora_targets=["q_proj", "v_proj"] if row["workload"] == "LoRA" else "all-linear")
    else:
        scenario.update(method=row["workload"].lower(), lora_rank=16,
                        lora_targets=["q_proj", "k_proj", "v_proj"] if row["workload"] == "LoRA" else "all-linear")
    if int(row["n_gpus"]) > 1:
        scenario.update(num_gpus=int(row["n_gpus"]), sharding="fsdp")
        notes.append("8 x A100 taken as 80GB; FSDP2 (lora_finetune_distributed)")
    case = dict(scenario=scenario, level="allocated")
    if model == "llama-3.1-405b":
        # batch 2 cannot have run as the note says: the NF4 shard (24.3 GiB), the unsharded root unit holding the
        # output head (7.8 GiB) and the checkpoints of 2 x 2,048 tokens (126 x 4,096 x 16,384 x 2 B = 15.8 GiB)
        # exceed the 44.8 alone, and the distributed LoRA recipe had no activation offloading before 2024-10-03
        # (#1645): the config's batch_size 1. torchtune logs GiB (get_memory_stats divides by 1024**3)
        scenario["micro_batch_size"] = 1
        case["measured_gib"] = float(row["value"])
        notes.append("the config's batch_size 1 (batch 2, the note's, exceeds the row by its lower bound: NF4 shard "
                     "+ unsharded root + checkpoints); the config's torch.nn.CrossEntropyLoss; '44.8 GB' taken as "
                     "the GiB torchtune's get_memory_stats logs (the other rows print GiB)")
    if "A6000" in row["gpu"]:
        # the same config as the 4090 row 14-18 GiB higher: which setting changed is not stated; the estimate
        # with activation checkpointing off matches, so the row is shown as calibration, not counted
        scenario["grad_checkpointing"] = "none"
        case["calibration"] = True
        notes.append("activation checkpointing off: inferred from the 14-18 GiB over the 4090 row of the same "
                     "config (calibration row, not counted)")
    case["assumptions"] = "; ".join(notes)
    return case, None


def torchtitan(row):
    """torchtitan (Dec 2024): FSDP2 pre-training of Llama 3.1, C4 packed to fixed length. Float8 linears are
    fp8-mixed; TP and 1F1B PP are scenario fields (PP microbatches = stages, torchtitan's default); context
    parallelism is not, so CP > 1 rows are skipped. AdamW: torchtitan's optimizer.fused defaulted to False
    (foreach)."""
    par = row["parallelism"]
    cp = re.search(r"CP (\d+)", par)
    if cp and int(cp.group(1)) > 1:
        return None, f"context parallelism ({par}) is not a gpuplan scenario field"
    n = int(row["n_gpus"])
    tp = int(m.group(1)) if (m := re.search(r"TP (\d+)", par)) else 1
    pp = int(m.group(1)) if (m := re.search(r"PP (\d+)", par)) else 1
    local = int(row["micro_batch"].split()[0])
    model = {"meta-llama/Llama-3.1-8B": "llama-3.1-8b", "meta-llama/Llama-3.1-70B": "llama-3.1-70b",
             "meta-llama/Llama-3.1-405B": "llama-3.1-405b"}[row["model"]]
    scenario = dict(model=model, task="train", stack="torchtitan",
                    micro_batch_size=local // pp if pp > 1 else local,
                    grad_accum_steps=pp, seq_len=int(row["seq_len"].split()[0]),
                    grad_checkpointing="selective" if row["grad_ckpt"].startswith("selective") else "full",
                    attention="flash", precision="fp8-mixed" if "float8" in row["precision"] else "bf16-mixed",
                    optimizer="adamw", optimizer_impl="foreach",
                    num_gpus=8, num_nodes=n // 8, sharding="fsdp", tp=tp, pp=pp)
    notes = ["stack torchtitan: FSDP2 with fp32 master weights and reductions"]
    if "compile" in row["notes"]:
        notes.append("torchtitan 9dec370 compiled the blocks but not the loss (the loss is compiled from 2025 on, "
                     "as gpuplan's compile models it): taken with compile false, so the blocks' fusions (5.0-5.4 "
                     "GiB in Tables 1 and 3) are left in the estimate")
    notes += ["H100 96GB HBM2e (Grand Teton) is not in "
             "the GPU catalog: gpu left out"]
    if scenario["grad_checkpointing"] == "selective":
        notes.append("selective: torchtitan's per-op policy (saves every other matmul output and SDPA's)")
    if pp > 1:
        notes.append(f"local batch {local} split into {pp} 1F1B microbatches of {local // pp} (microbatches = "
                     "stages by default), grad_accum_steps stands for the microbatches")
    if "AsyncTP" in row["notes"]:
        notes.append("async TP not modelled")
    if "float8" in row["precision"]:
        notes.append("torchao float8 linears as fp8-mixed")
    return dict(scenario=scenario, assumptions="; ".join(notes)), None


def unsloth_readme(row):
    """Unsloth README 'Context length benchmarks': the longest sequence that fits on an 80 GB card, Llama-3.1-8B
    QLoRA rank 32 on all linear layers, batch 1, sequences padded to length. The row is the Hugging Face +
    FlashAttention-2 baseline: the HF stack with checkpointing (the QLoRA recipe's default), NF4, fp32 upcast. The
    table came into the README on 2025-01-14 (unslothai/unsloth e3162dc5bf) with the Llama 3.3 rows of December
    2024: transformers 4.46-4.48 then, whose ``ForCausalLMLoss`` shifted an fp32 copy of the logits."""
    scenario = dict(model="llama-3.1-8b", task="train", stack="hf", method="qlora", quant="nf4", lora_rank=32,
                    lora_targets="all-linear", micro_batch_size=1, seq_len=2048, grad_checkpointing="full",
                    attention="flash", gpu="a100-sxm4-80gb", transformers_version="4.47")
    return dict(scenario=scenario, level="max_seq_len", measured_gib=float(row["value"]),
                assumptions="HF + FA2 baseline: checkpointing on (prepare_model_for_kbit_training), AdamW (8-bit "
                            "not stated), A100 80GB taken for the unnamed 80 GB card; compared as the longest "
                            "seq_len that fits (the value is tokens); transformers of December 2024 (4.47 taken; "
                            "4.46-4.48 share the shifted fp32 copy in the loss)"), None


# the table gives VRAM only: an Ampere card of that size (Apple's Cut Cross Entropy, which Unsloth ran then, needs
# Ampere or newer: cut_cross_entropy/cce.py), the A100 80GB the 70B text names
UNSLOTH_CARDS = {"8": "rtx-3070", "12": "rtx-3060", "16": "rtx-a4000", "24": "rtx-3090", "40": "a100-pcie-40gb",
                 "48": "rtx-a6000", "80": "a100-sxm4-80gb"}
SOLVER_LIMIT = 131_072  # the longest sequence gpuplan's solver tries for Llama 3.x (advice.largest_fitting)


def unsloth_context_table(row):
    """Unsloth README 'Context length benchmarks' (2025-01-14, the rows of unsloth.ai/blog/llama3-3), both columns:
    the longest sequence that fits, QLoRA rank 32 on all linear layers, batch 1, sequences padded to length, by
    VRAM; 'OOM' rows must not fit at 512 tokens. Unsloth's column: ``use_gradient_checkpointing='unsloth'`` and, in
    December 2024, Apple's Cut Cross Entropy for the loss (no logits); gpuplan models today's Unsloth, whose fused
    loss takes half of the memory left free. The Hugging Face column is the HF stack as :func:`unsloth_readme`
    expresses its 80 GB row. AdamW as for that row (the optimizer is not stated)."""
    vram = row["gpu"].split()[0]
    model = "llama-3.3-70b" if "70B" in row["model"] else "llama-3.1-8b"
    unsloth = "Unsloth column" in row["source"]
    scenario = dict(model=model, task="train", stack="unsloth" if unsloth else "hf", method="qlora", quant="nf4",
                    lora_rank=32, lora_targets="all-linear", micro_batch_size=1, seq_len=2048,
                    gpu=UNSLOTH_CARDS[vram])
    if not unsloth:
        scenario.update(grad_checkpointing="full", attention="flash", transformers_version="4.47")
    else:  # its offloaded checkpoints sit in host RAM, which the runs had room for (the 70B row at 89,389 tokens
        # keeps 109 GiB there; the machines' RAM is not stated): 256 GiB, so that the card decides, as in the table
        scenario["host_ram_gib"] = 256
    notes = [f"{UNSLOTH_CARDS[vram]} for the unnamed {vram} GB card" if model == "llama-3.1-8b" or vram != "80"
             else "A100 80GB (named)", "AdamW (not stated)"]
    if unsloth:
        notes.append("host RAM 256 GiB (not stated; the offloaded checkpoints of the 70B row need 109 GiB)")
    notes.append("Unsloth's offloaded checkpointing and fused loss (today's; the table's Cut Cross Entropy kept no "
                 "logits)" if unsloth else "HF + FA2: checkpointing on, transformers 4.47 (December 2024)")
    if row["metric"] == "oom_flag":
        scenario["seq_len"] = 512
        return dict(scenario=scenario, assumptions="; ".join([*notes, "'OOM': must not fit at 512 tokens"])), None
    if float(row["value"]) > SOLVER_LIMIT:
        return None, (f"{int(float(row['value'])):,} tokens is beyond the {SOLVER_LIMIT:,} the solver searches "
                      "(Llama 3.1's context; Unsloth extends it by RoPE scaling); tests/stacks/test_unsloth_context.py "
                      "checks the memory at that length instead")
    notes.append("compared as the longest seq_len that fits (the value is tokens)")
    return dict(scenario=scenario, level="max_seq_len", measured_gib=float(row["value"]),
                assumptions="; ".join(notes)), None


def answerai(row):
    """Answer.AI fsdp_qlora ``train.py`` (benchmarks_03_2024.md): a plain PyTorch loop (stack pytorch) over
    transformers' Llama with peft, FSDP1 ``full_shard`` over 2 GPUs (``ddp`` = NO_SHARD), pure bf16 (its default
    ``precision bf16``: params, grads and AdamW states), reentrant checkpointing, LoRA r=64, dropout 0.1 on k, q, v,
    up, down, gate; the dummy dataset makes every sample exactly ``context_length`` tokens. peft of March 2024
    (before ``autocast_adapter_dtype``, 0.12) kept the adapters in the base dtype: bf16. The tables report
    max_memory_reserved over epoch 0 (and the text two max_memory_allocated values)."""
    model = {"meta-llama/Llama-2-7b-hf": "llama-2-7b", "01-ai/Yi-34B": "yi-34b",
             "meta-llama/Llama-2-70b-hf": "llama-2-70b"}[row["model"]]
    par = row["parallelism"]
    scenario = dict(model=model, task="train", stack="pytorch", method=row["workload"].lower(),
                    precision="bf16-true", adapter_dtype="bf16", lora_rank=64, lora_dropout=0.1,
                    lora_targets=["q_proj", "k_proj", "v_proj", "gate_proj", "up_proj", "down_proj"],
                    micro_batch_size=int(row["micro_batch"]), seq_len=int(row["seq_len"]), grad_checkpointing="full",
                    attention="sdpa", optimizer="adamw", optimizer_impl="foreach", num_gpus=2,
                    sharding="ddp" if "no_shard" in par else "fsdp1", transformers_version="4.39")
    notes = ["FSDP1 (FullyShardedDataParallel) as fsdp_qlora wraps it; adapters bf16 (peft < 0.12)",
             "transformers of March 2024 (4.39 taken; 4.37.2-4.45 share the loss code): fp32 logits returned by "
             "the model and a shifted fp32 copy in the loss; train.py keeps `output` to the optimizer step"]
    if "offload" in par:
        scenario["offload"] = "optimizer+params"
        notes.append("CPUOffload(offload_params=True): parameters, gradients and the step on the CPU")
    if "no_shard" in par:
        notes.append("sharding_strategy ddp (FSDP NO_SHARD) taken as DDP")
    return dict(scenario=scenario, assumptions="; ".join(notes)), None


def litgpt(row):
    """LitGPT resource tables (October 2023, LitGPT commit 8641822 ``finetune/lora.py``) on one A100-SXM4-40GB:
    LitGPT's own model and Fabric loop, held out (session 16). Written as the ``pytorch`` stack, a plain loop over
    the same operations (SDPA, fp32 RMSNorm, SwiGLU): Fabric ``bf16-true`` keeps weights, LoRA parameters and
    optimizer states in bf16, no activation checkpointing on one device, LoRA r=8 (dropout 0.05) on query and value.
    ``get_batch`` forces Alpaca's longest sample (1,304 Llama 2 tokens) into the first batch and pads the batch to it,
    so the peak is micro-batch x 1,304 tokens; 'Max GPU RAM' is ``torch.cuda.max_memory_allocated() / 1e9``.
    bnb's 4-bit without double quantization (``bnb.nf4``) is not a gpuplan format: those rows are skipped."""
    if row["quant"].startswith("bnb.nf4 "):
        return None, ("bitsandbytes nf4 without double quantization (LitGPT bnb.nf4): gpuplan's nf4 always double-"
                      "quantizes the absmax (the bnb.nf4-dq rows are scored)")
    qlora = row["workload"] == "QLoRA"
    scenario = dict(model={"meta-llama/Llama-2-7b-hf": "llama-2-7b", "meta-llama/Llama-2-13b-hf": "llama-2-13b"}[
                        row["model"]], task="train", stack="pytorch", method="qlora" if qlora else "lora",
                    precision="bf16-true", adapter_dtype="bf16", lora_rank=8, lora_dropout=0.05,
                    lora_targets=["q_proj", "v_proj"], micro_batch_size=int(row["micro_batch"]), seq_len=1304,
                    grad_checkpointing="none", attention="sdpa", optimizer="adamw", optimizer_impl="foreach",
                    gpu="nvidia-a100-sxm4-40gb", **({"quant": "nf4"} if qlora else {}))
    notes = ["LitGPT's model and Fabric loop written as the pytorch stack (same operations: SDPA, fp32 RMSNorm, "
             "SwiGLU; its lm_head_chunk_size=128 and chunked cross-entropy not modelled: full logits, 0.2 GB at "
             "2 x 1,304 x 32,000 in fp32)", "micro-batch x 1,304 tokens: get_batch puts Alpaca's longest sample "
             "first and pads to it", "bf16-true: LoRA parameters and AdamW states bf16; no checkpointing on one "
             "device (strategy auto)"]
    if qlora:
        notes.append("bnb.nf4-dq via Fabric BitsandbytesPrecision (it also quantizes lm_head); bnb PagedAdamW's "
                     "32-bit states sit in managed memory, outside max_memory_allocated (0.03 GB for 4M adapters)")
    return dict(scenario=scenario, assumptions="; ".join(notes)), None


def torchtitan_h200(row):
    """torchtitan on H200 (Trainy, June 2025; torchtitan e7c0cae): :func:`torchtitan`'s rule on the run's card and
    release. The run compiled (``--training.compile``): the loss compiles with the blocks from 2025 on, as gpuplan's
    compile models it, so memory is taken with compile on. 'Memory(GiB)' is torchtitan's logged max reserved."""
    case, why = torchtitan(row)
    if case is None:
        return None, why
    case["scenario"].update(gpu="nvidia-h200-sxm-141gb", compile=True)
    case["assumptions"] = ("stack torchtitan: FSDP2 with fp32 master weights and reductions; torchtitan e7c0cae "
                           "(June 2025) compiled blocks and loss (compile true); selective: torchtitan's per-op "
                           "policy; torchao float8 linears (tensorwise) as fp8-mixed, their FSDP float8 all-gather "
                           "and force_recompute_fp8_weight_in_bwd not modelled; 'Memory(GiB)' = max reserved at "
                           "iteration 100 (peak reset each log window)")
    return case, None


def llama_cpp(row):
    kind = row["quant"].replace("GGUF ", "").lower()
    scenario = dict(model="llama-3.1-8b", task="infer", engine="llama.cpp", quant=f"gguf-{kind}")
    return dict(scenario=scenario, level="file", assumptions="file size = all weights (llama.cpp's GPU model buffer "
                "+ the token embedding it keeps in RAM); a type per tensor by llama-quantize's rules for the file type "
                "(src/llama-quant.cpp), no importance matrix"), None


RULES = {
    "Qwen2.5 docs speed benchmark": qwen25,
    "Qwen (v1) README finetuning profiling": qwen1_finetune,
    "Qwen (v1) README inference profiling": qwen1_inference,
    "Qwen (v1) README KV-cache profiling": qwen1_kv,
    "huggingface/peft MetaMathQA method-comparison benchmark": peft_metamath,
    "torchtune README (2024-04 memory table)": torchtune,
    "torchtune README (optimization flags table)": torchtune_flags,
    "torchtune docs Llama3 tutorial": torchtune,
    "torchtune docs QLoRA tutorial": torchtune,
    "torchtune README (Llama 3.1 memory table)": torchtune_llama31,
    "torchtitan benchmarks (Dec 2024)": torchtitan,
    "llama.cpp quantize README": llama_cpp,
    "Unsloth README max-context benchmark": unsloth_readme,
    "Unsloth README context table (Unsloth column)": unsloth_context_table,
    "Unsloth README context table (HF + FA2 column)": unsloth_context_table,
    "Answer.AI fsdp_qlora benchmarks (Mar 2024)": answerai,
    "LitGPT resource tables (Oct 2023)": litgpt,
    "torchtitan benchmarks (Trainy H200, Jun 2025)": torchtitan_h200,
}
# published rows of the training stacks that measured-public.csv does not hold, transcribed with their locators
EXTRA_CSV = HERE / "measured-stacks.csv"
SKIP_SOURCES = {
    "huggingface/peft README memory table": "T5/BLOOMZ rows with batch and length not stated",
    "HF accelerate big-model-inference benchmark": "encoder-decoder T0pp (not a decoder-only model)",
}
MEMORY_METRICS = ("mem", "gguf_model_size", "oom_flag", "max_seq_len_that_fits")


def build(csv_path: Path) -> dict:
    cases, skipped = [], []
    rows = [*csv.DictReader(csv_path.open(encoding="utf-8")), *csv.DictReader(EXTRA_CSV.open(encoding="utf-8"))]
    for row in rows:
        if not any(k in row["metric"] for k in MEMORY_METRICS):
            continue
        rule = RULES.get(row["source"])
        if rule is None:
            skipped.append({"id": row["id"], "why": SKIP_SOURCES.get(row["source"], "source not expressible")})
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
