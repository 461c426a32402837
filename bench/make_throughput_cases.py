"""Turn the throughput rows of bench/data/measured-public.csv (bench/data/SOURCES.md), its companion files there and
bench/measured-stacks.csv into scenarios for the speed estimator.

    python bench/make_throughput_cases.py [--csv PATH]   # writes bench/throughput_cases.yaml

Same scenario mapping as bench/make_cases.py (its rules are reused for the sources both files share), plus
rules for the sources that publish only throughput: llm-foundry's MPT benchmarks, the Megatron-LM paper and
NVIDIA NeMo's performance summary. Each case keeps the row's ``metric``, ``value`` and ``unit`` as published
(MFU in notes are the authors' own; recompute them with the project's FLOP formula before comparing). Rows
that cannot be expressed are listed under ``skipped`` with the reason.
"""

from __future__ import annotations

import argparse
import csv
import re
from pathlib import Path

import yaml

import make_cases as mc

HERE = Path(__file__).resolve().parent
THROUGHPUT_METRICS = ("train_tokens_per_s_per_gpu", "train_tokens_per_s", "step_time_s", "iteration_time",
                      "achieved_TFLOPs_per_GPU", "decode_tokens_per_s", "prefill_tokens_per_s",
                      "serving_output_tokens_per_s_total", "MFU", "layer_fwd_bwd_time_ms")
GPUS = {"H100-SXM-80GB": "nvidia-h100-sxm5-80gb", "H100-SXM-80GB (DGX-H100)": "nvidia-h100-sxm5-80gb",
        "A100-SXM-80GB": "nvidia-a100-sxm4-80gb", "A100-SXM-40GB": "nvidia-a100-sxm4-40gb",
        "A100-SXM-80GB (Selene)": "nvidia-a100-sxm4-80gb", "A100-SXM4-80GB": "nvidia-a100-sxm4-80gb",
        "A100-80GB": "nvidia-a100-sxm4-80gb", "L40S-48GB": "nvidia-l40s"}


def _nodes(n: int) -> dict:
    return dict(num_gpus=8, num_nodes=n // 8) if n >= 8 and n % 8 == 0 else dict(num_gpus=n)


def qwen25(row):
    case, why = mc.qwen25(row)
    if case is None:
        return None, why
    case.pop("measured_gib", None)
    s = case["scenario"]
    n = int(row["n_gpus"] or 1)
    if "vLLM" in row["notes"]:
        version = re.search(r"vLLM (\d+\.\d+\.\d+)", row["attn"] or "")
        s.update(engine="vllm", gpu_memory_utilization=0.9, **({"engine_version": version[1]} if version else {}))
        case["assumptions"] += "vLLM offline, gpu_memory_utilization 0.9, max_model_len 32768 (YaRN beyond); "
        if n > 1:
            s.update(num_gpus=n, tp=n)
    elif n > 1:
        s.update(num_gpus=n, pp=n)
        case["assumptions"] += f"device_map=auto over {n} GPUs = naive pipeline (pp={n}, one micro-batch); "
    s["gpu"] = "nvidia-a100-sxm4-80gb"
    s["precision"] = "fp16-true" if "quant" in s else "bf16-true"
    case["assumptions"] += "speed = 2048 generated tokens / total time including prefill; A100-80GB taken as SXM4"
    return case, None


def qwen1_finetune(row):
    case, why = mc.qwen1_finetune(row)
    if case is None:
        return None, why
    case["scenario"]["gpu"] = "nvidia-a100-sxm4-80gb"
    case["assumptions"] = (case["assumptions"].split("memory tool not stated")[0]
                           + "one iteration = 8 micro-steps of batch 1")
    return case, None


def qwen1_inference(row):
    case, why = mc.qwen1_inference(row)
    if case is None:
        return None, why
    case.pop("measured_gib", None)
    case.pop("level", None)
    s = case["scenario"]
    s["gpu"] = "nvidia-a100-sxm4-80gb"
    n = int(row["n_gpus"] or 1)
    if n > 1:
        s.update(num_gpus=n, pp=n)
    case["assumptions"] = ("profile.py: 1-token context, 2048 generated, FlashAttention; speed averaged over the "
                           "encoded and generated tokens" + ("; device_map=auto = naive pipeline" if n > 1 else ""))
    return case, None


def peft_metamath(row):
    case, why = mc.peft_metamath(row)
    if case is not None:
        case["scenario"]["gpu"] = "nvidia-l40s"
    return case, why


def torchtune(row):
    case, why = mc.torchtune(row)
    if case is not None:
        case.pop("level", None)
        case["assumptions"] = ("tutorial prompt 'Hello, my name is' (6 tokens with BOS); 206 tokens = 10.88 s x "
                               "18.94 tok/s; eager decode (no torch.compile), static KV cache of 8192 positions; "
                               "GPU not stated: a sanity check only")
    return case, why


def torchtitan(row):
    """bench/make_cases.py's rule, on the card the runs had: Grand Teton's H100 SXM5 with 96GB HBM2e (2.4 TB/s)
    at its default 500 W power limit (benchmarks/llama3_h100_202412_torchtitan.md 'Hardware'), 400 Gb/s RDMA per
    GPU between hosts. Context parallelism is a scenario field of the Megatron stack only: CP rows stay skipped."""
    case, why = mc.torchtitan(row)
    if case is None:
        return None, why
    case["scenario"]["gpu"] = "nvidia-h100-sxm5-96gb"
    case["assumptions"] = case["assumptions"].replace(
        "H100 96GB HBM2e (Grand Teton) is not in the GPU catalog: gpu left out",
        "Grand Teton's H100 SXM5 96GB HBM2e at its default 500 W power limit (nvidia-h100-sxm5-96gb)") + (
        "; attention: SDPA on the torch nightly of the end of 2024, whose dispatcher tries the flash backend "
        "(FlashAttention-2) first (cuDNN's opt-in since pytorch/pytorch#138522)")
    if "compile" in row["notes"] and "no compile" not in row["notes"]:  # speed only: what 9dec370 compiled
        case["scenario"]["compile"] = True
        case["assumptions"] = case["assumptions"].replace(
            "taken with compile false, so the blocks' fusions (5.0-5.4 GiB in Tables 1 and 3) are left in the "
            "estimate", "taken with compile true here, as speed is scored: gpuplan's compile fuses the blocks' "
            "element-wise ops and cuts their launches, what 9dec370 compiled (the loss it did not compile changes "
            "the memory, not the speed model)")
    return case, None


def mpt(row):
    """llm-foundry MPT benchmarks (scripts/train/benchmarking): FSDP, bf16 AMP (or TransformerEngine fp8),
    llm-foundry's Triton FlashAttention (submit_benchmarks.py's default ``--attn_impl triton`` at b2a43a14, which
    added the H100 tables; sweep.sh does not change it), decoupled AdamW; grad_accum and global batch from the
    row's notes."""
    m = re.match(r"MPT-(\w+) ", row["model"])
    size = m.group(1).lower()
    n = int(row["n_gpus"])
    accum = int(re.search(r"grad_accum=(\d+)", row["notes"]).group(1))
    fp8 = "fp8" in row["precision"]
    scenario = dict(model=f"bench/models/mpt-{size}.json", task="train", method="full",
                    precision="fp8-mixed" if fp8 else "bf16-mixed", optimizer="adamw", optimizer_impl="foreach",
                    micro_batch_size=int(row["micro_batch"]), seq_len=int(row["seq_len"]), grad_accum_steps=accum,
                    grad_checkpointing="full" if row["grad_ckpt"] == "full" else "none", attention="flash",
                    sharding="zero2" if "SHARD_GRAD_OP" in row["parallelism"] else "fsdp",
                    gpu=GPUS[row["gpu"]], **_nodes(n))
    fewer = 65536 - int(row["seq_len"])
    notes = [f"MPT written as gpt2 layout (bench/models/mpt-{size}.json, n_positions 65536, the sweep's longest"
             + (f"; at seq {row['seq_len']} the run's learned position table had {fewer}*d_model fewer parameters)"
                if fewer > 0 else ")"),
             "Composer DecoupledAdamW (torch AdamW subclass, foreach assumed)",
             "attention: llm-foundry's Triton FlashAttention (attn_impl triton), FlashAttention-2's class on H100"]
    if "PURE" in row["precision"]:
        notes.append("FSDP mixed_precision PURE: bf16 params, grads and reductions (fp32 master shard kept)")
    if fp8:
        notes.append("TransformerEngine fp8 linears; the default stack under fp8 stands for Transformer Engine "
                     "throughout, its fused attention included (llm-foundry kept its Triton attention)")
    if "SHARD_GRAD_OP" in row["parallelism"]:
        notes.append("FSDP SHARD_GRAD_OP taken as ZeRO-2")
    return dict(scenario=scenario, assumptions="; ".join(notes)), None


ANSWERAI_GPUS = {"RTX 4090 24GB": "nvidia-geforce-rtx-4090", "A5000 24GB": "nvidia-rtx-a5000",
                 "A6000 Ada 48GB": "nvidia-rtx-6000-ada", "A100 40GB SXM": "nvidia-a100-sxm4-40gb",
                 "H100 80GB SXM": "nvidia-h100-sxm5-80gb"}


def answerai(row):
    """Answer.AI fsdp_qlora benchmarks (benchmarks_03_2024.md): the time ``train.py`` took over 1,024 dummy samples
    of ``context_length`` tokens, as tokens/s per GPU. bench/make_cases.py's rule (FSDP1 over a plain PyTorch loop,
    pure bf16, reentrant checkpointing, LoRA r=64 on the seven projections, bnb NF4 for QLoRA), on the card of the
    row. The 3090 rig ran power-limited to 280 W on an older motherboard's PCIe lanes: neither is a scenario field,
    so its rows are skipped. Mistral 7B v0.2 base is written as v0.3 (the same shape without a sliding window; v0.3's
    vocabulary is 768 tokens larger)."""
    if "3090" in row["gpu"]:
        return None, "RTX 3090s power-limited to 280 W on an older motherboard's PCIe lanes (not scenario fields)"
    mistral = row["model"].startswith("mistral")
    case, why = mc.answerai({**row, "model": "meta-llama/Llama-2-7b-hf"} if mistral else row)
    if case is None:
        return None, why
    s = case["scenario"]
    n = int(row["n_gpus"])
    s.update(gpu=ANSWERAI_GPUS[row["gpu"]], num_gpus=n, **({"model": "mistral-7b-v0.3"} if mistral else {}))
    notes = [case["assumptions"], "time over 1,024 samples taken as training time (model loading and quantization "
             "not in it)", "AdamW foreach, no gradient accumulation (the table's effective batch only sets how often "
             "the adapters step)"]
    if "activation offload" in row["parallelism"]:
        s["activation_offload"] = True
        notes.append("--use_activation_cpu_offload: saved activations on the CPU")
    if mistral:
        notes.append("Mistral 7B v0.2 base as mistral-7b-v0.3 (same shape, no sliding window)")
    if "Recommendations" in row["source_locator"]:
        notes.append("sharding not stated: train.py's default full_shard")
    s["torch_version"] = "2.2"
    notes.append("torch 2.2, the release current in February-March 2024 when the runs were made (any release up to "
                 "2.4 runs SDPA's flash backend first)")
    case["assumptions"] = "; ".join(notes)
    return case, None


def torchtune_flags(row):
    """torchtune README 'Optimization flags' (Llama 3.2 3B on an A100, 80GB taken): bench/make_cases.py's rule; the
    recipe logs tokens_per_second_per_gpu as the label tokens (labels != ignore_index: the pack's padding left out)
    over the step time."""
    case, why = mc.torchtune_flags(row)
    if case is None:
        return None, why
    case["scenario"]["gpu"] = "nvidia-a100-sxm4-80gb"
    case["assumptions"] += "; tokens/s = label tokens (padding left out) / step time, taken as all tokens"
    return case, None


def torchtune_llama31(row):
    """torchtune README 'Memory and training speed' (2024-09-24): bench/make_cases.py's rule on the row's card;
    'Tokens/sec' is torchtune's tokens_per_second_per_gpu (tokens.numel() / step time), over one full epoch."""
    if "A6000" in row["gpu"]:
        # 4,699 tokens/s of 8B LoRA is 4 x 7.5e9 x 4,699 = 141 TFLOP/s of linears alone without checkpointing
        # (with it, 6 x: 211), against the card's 154.8 TFLOP/s dense bf16
        return None, ("RTX A6000 rows: the setting that ran is not the config's (the memory rows match only with "
                      "checkpointing off and are calibration), and the LoRA row's rate would need 91 % of the card's "
                      "dense bf16 peak for its linears alone even without checkpointing")
    if row["gpu"].startswith("RTX 4090") and "PagedAdamW8bit" in row["optimizer"]:
        return None, ("8B full on a 24 GB 4090 with bnb PagedAdamW8bit: 18.9 GiB allocated plus 7.5 GiB of paged "
                      "8-bit states exceed the card, so the driver migrates managed pages over PCIe every step; "
                      "gpuplan does not model that traffic")
    case, why = mc.torchtune_llama31(row)
    if case is None:
        return None, why
    case["assumptions"] += "; tokens/s per GPU = every token of the packed batch / step time, over one epoch"
    return case, None


MEGATRON_GPT = {3072: "megatron-gpt-3.6b", 8192: "megatron-gpt-39.1b", 16384: "megatron-gpt-310b",
                20480: "megatron-gpt-530b"}
# The authors' own Table 1 launch settings (NVIDIA/Megatron-LM@de7dc40f examples/sc21/run_table_1.sh, "scripts for
# sc21"): by hidden size, the micro-batch (--micro-batch-size), the layers per virtual pipeline stage
# (--num-layers-per-virtual-pipeline-stage; None: no interleaving) and --DDP-impl (torch: PyTorch DDP, its bucketed
# all-reduce behind the backward; local: Megatron's own, one all-reduce of the gradient buffer after it)
MEGATRON_SC21 = {3072: (16, None, "torch"), 8192: (4, None, "local"), 16384: (1, 3, "local"),
                 20480: (1, 1, "local")}


def megatron_lm(row):
    """Narayanan et al. SC'21, Table 1: GPT models with TP x PP x DP on Selene, run by Megatron-LM (stack megatron)
    with the settings of the authors' examples/sc21/run_table_1.sh and CONFIG.sh: fp16 with loss scaling, full
    recomputation (--checkpoint-activations), Adam, the row's micro-batch and virtual stages, no sequence parallelism
    or distributed optimizer (both came later), Megatron's fused softmax over eager attention matmuls, and the tensor-
    parallel all-reduces of ``mpu/mappings.py`` in line with the compute (``tp_overlap: none``)."""
    h = int(re.search(r"h=(\d+)", row["model"]).group(1))
    par = row["parallelism"]
    tp, pp, dp = (int(re.search(rf"{k}(\d+)", par).group(1)) for k in ("TP", "PP", "DP"))
    gbs = int(re.search(r"global batch (\d+)", par).group(1))
    layers = int(re.search(r"L=(\d+)", row["model"]).group(1))
    mbs, per_virtual, ddp = MEGATRON_SC21[h]
    vpp = layers // pp // per_virtual if per_virtual else 1
    n = int(row["n_gpus"])
    scenario = dict(model=f"bench/models/{MEGATRON_GPT[h]}.json", task="train", stack="megatron", method="full",
                    precision="fp16-mixed", optimizer="adamw", micro_batch_size=mbs, seq_len=2048,
                    grad_accum_steps=gbs // (dp * mbs), grad_checkpointing="full", attention="eager",
                    sharding="ddp", tp=tp, pp=pp, vpp=vpp, gpu=GPUS[row["gpu"]], **_nodes(n),
                    **({"tp_overlap": "none"} if tp > 1 else {}))
    return dict(scenario=scenario, assumptions=f"examples/sc21/run_table_1.sh: micro-batch {mbs}, so "
                f"{gbs // (dp * mbs)} micro-batches per step" + (f", {per_virtual} layer(s) per virtual stage "
                f"({vpp} virtual stages)" if per_virtual else ", no interleaving") + f"; --DDP-impl {ddp}; fp16, "
                "full recomputation; TP all-reduces waited for (tp_overlap none: "
                "--async-tensor-model-parallel-allreduce came in later); achieved TFLOP/s count the recompute "
                "(paper Eq. 3)"), None


NEMO_MODELS = {"GPT3-175B": "bench/models/gpt3-175b.json", "LLAMA2-7B": "llama-2-7b", "LLAMA2-13B": "llama-2-13b",
               "LLAMA2-70B": "llama-2-70b"}
# NeMo-Framework-Launcher@24.07 (the release that ran the 24.07 container; its examples/README.md: "These scripts
# run a recommended config", the tables beside them): the fine-tuning rows' virtual stages, sequence parallelism
# and TP communication overlap are those of examples/peft/llama/h100/{13b_1node,70b_2node}.sh (the table gives
# none); the pre-training rows' VP is the table's own
NEMO_FINETUNE_VP = {("LLAMA2-13B", "TP1 PP4"): 10, ("LLAMA2-70B", "TP4 PP4"): 20}
# ... and 70b_2node.sh runs Transformer Engine's userbuffers (peft.model.ub_tp_comm_overlap=true); the pre-training
# configs (conf/training/gpt3/175b.yaml) leave ub_tp_comm_overlap False
NEMO_USERBUFFERS = {("LLAMA2-70B", "TP4 PP4")}
# SQuAD v1.1 as NeMo's packed fine-tuning data: 87,599 training records (the dataset card); their length in Llama-2
# tokens with NeMo's prompt template, mean and longest, is assumed (a paragraph of some 120 words with its question
# and answer; not published with the table): a mean of 150 to 400 tokens moves the fine-tuning rows by under 2.5 %
SQUAD_RECORDS, SQUAD_MEAN_TOKENS, SQUAD_MAX_TOKENS = 87_599, 200, 1_024


def nemo(row):
    """NVIDIA NeMo 24.07 performance summary: NeMo 1's Megatron-Core GPT model (``mcore_gpt``, stack megatron),
    fp8 through Transformer Engine, DGX-H100, as NeMo-Framework-Launcher@24.07 runs it:

    - pre-training (``conf/training/gpt3/175b.yaml``, ``llama/llama2_13b.yaml``): ``distributed_fused_adam`` with
      overlapped grad sync and param sync (ZeRO-1), no activation recompute (``activations_checkpoint_granularity:
      null``), sequence parallelism with TP (175B), interleaved pipeline with the table's VP;
    - fine-tuning (``conf/peft/llama/sft.yaml`` and ``examples/peft/llama/h100``): SFT with ``distributed_fused_adam``,
      LoRA with ``fused_adam`` (no distributed optimizer: DDP of the adapters), rank 32 on the fused QKV (NeMo's
      LoRA default), fp8 weights (``fp8_params``), no recompute; SQuAD packed into 4,096-token rows whose attention
      runs per record (``packed_sequence``: Transformer Engine's variable-length kernels, "attention values between
      sequences are never calculated", NeMo docs features/optimizations/sequence_packing.rst)."""
    model = NEMO_MODELS.get(row["model"])
    if model is None:
        return None, f"{row['model']}: architecture not transcribed (no config in bench/models)"
    par = row["parallelism"]
    n = int(row["n_gpus"])
    tp = int(re.search(r"TP(\d+)", par).group(1))
    pp = int(re.search(r"PP(\d+)", par).group(1))
    dp = int(m.group(1)) if (m := re.search(r"DP=(\d+)", par)) else n // (tp * pp)
    gbs = int(re.search(r"GBS=(\d+)", par).group(1))
    mbs = int(row["micro_batch"])
    vp = int(m.group(1)) if (m := re.search(r"VP(\d+)", par)) else \
        NEMO_FINETUNE_VP.get((row["model"], f"TP{tp} PP{pp}"), 1)
    lora = row["workload"] == "LoRA"
    scenario = dict(model=model, task="train", stack="megatron", precision="fp8-mixed", optimizer="adamw",
                    micro_batch_size=mbs, seq_len=int(row["seq_len"].split()[0]),
                    grad_accum_steps=max(gbs // (dp * mbs), 1), grad_checkpointing="none",
                    sharding="ddp" if lora else "zero1" if dp > 1 else "single", tp=tp, pp=pp,
                    **({"vpp": vp} if vp > 1 else {}), gpu=GPUS[row["gpu"]], **_nodes(n))
    if row["workload"] != "pretrain" and (row["model"], f"TP{tp} PP{pp}") in NEMO_USERBUFFERS:
        scenario["tp_overlap"] = "userbuffers"
    notes = ["NeMo 1 with Megatron-Core (mcore_gpt: stack megatron), NeMo-Framework-Launcher@24.07's configs",
             "no activation recompute (activations_checkpoint_granularity null)"]
    notes.append("fused_adam, no distributed optimizer (examples/peft/llama/h100/*_lora.sh)" if lora else
                 "distributed_fused_adam = ZeRO-1, overlapped grad and param sync")
    if scenario.get("tp_overlap"):
        notes.append("TP communication overlapped with the GEMMs by userbuffers (ub_tp_comm_overlap, "
                     "examples/peft/llama/h100/70b_2node.sh)")
    if vp > 1:
        notes.append(f"{vp} virtual pipeline stages" + ("" if "VP" in par else
                                                        " (examples/peft/llama/h100, not in the table)"))
    if lora:
        scenario.update(method="lora", lora_rank=32, lora_targets=["q_proj", "k_proj", "v_proj"])
        notes.append("NeMo LoRA defaults: rank 32 on the fused QKV projection")
    else:
        scenario["method"] = "full"
    if "packed" in row["seq_len"]:
        scenario.update(samples=SQUAD_RECORDS, mean_tokens=SQUAD_MEAN_TOKENS, max_tokens=SQUAD_MAX_TOKENS,
                        packing="bfd")
        notes.append(f"packed SQuAD v1.1 ({SQUAD_RECORDS:,} records of ~{SQUAD_MEAN_TOKENS} tokens, assumed) in "
                     "4,096-token rows, attention per record")
    return dict(scenario=scenario, assumptions="; ".join(notes)), None


def hf_blog_zero3(row):
    """HF blog 'From DeepSpeed to FSDP and Back Again' (June 2024), Table 3: IBM Granite-7B (Llama-2-7B shape) on 4
    A100s through accelerate, DeepSpeed ZeRO-3 or FSDP FULL_SHARD in 'aligned mode' (fp32 flat params, bf16 compute:
    bf16-mixed either way). The batch of 8 and the tokens per step (tokens/s x step time = 8 x 4096) give micro-batch
    8 at 4,096 tokens; checkpointing is not stated but 8 x 4,096 tokens of a 7B need it on an 80 GB card."""
    deepspeed = "DeepSpeed" in row["parallelism"]
    scenario = dict(model="llama-2-7b", task="train", stack="hf", method="full", precision="bf16-mixed",
                    optimizer="adamw", micro_batch_size=8, grad_accum_steps=1, seq_len=4096,
                    grad_checkpointing="full", attention="sdpa", num_gpus=4,
                    sharding="zero3" if deepspeed else "fsdp", gpu="nvidia-a100-sxm4-80gb")
    return dict(scenario=scenario, assumptions="granite-7b as llama-2-7b (same shape); batch 8 taken as the "
                "micro-batch (no accumulation), 4,096 tokens from tokens/s x step time; full checkpointing and SDPA "
                "assumed (not stated); A100 taken as SXM4 80 GB" + ("" if deepspeed else "; FSDP1 (accelerate), "
                "BACKWARD_PRE prefetch")), None


FMS_MODELS = {"Llama-2-70B (fms llama2 70b)": "llama-2-70b", "fms llama2_34b": "bench/models/llama2-34b-fms.json"}


def fms_fsdp(row):
    """fms-fsdp README (IBM): Llama 2 pre-training with FSDP over 128 A100 80GB (16 nodes, 400 Gb/s between nodes),
    4,096 tokens, bf16 params and reductions, SDPA flash, no compile. HSDP (sharded in a node, replicated across
    nodes) is not a gpuplan sharding: those rows are skipped."""
    if "HSDP" in row["parallelism"]:
        return None, "HSDP (shard within a node, replicate across nodes) is not a gpuplan sharding"
    model = next(v for k, v in FMS_MODELS.items() if row["model"].startswith(k))
    scenario = dict(model=model, task="train", stack="pytorch", method="full", precision="bf16-mixed",
                    optimizer="adamw", micro_batch_size=int(row["micro_batch"]), grad_accum_steps=1, seq_len=4096,
                    grad_checkpointing="full" if row["grad_ckpt"].startswith("full") else "none",
                    attention="flash", sharding="fsdp", gpu=GPUS[row["gpu"]], **_nodes(int(row["n_gpus"])))
    return dict(scenario=scenario, assumptions="fms-fsdp's own loop over FSDP (stack pytorch); bf16 reductions "
                "(fms bfSixteen) taken as bf16-mixed; AdamW implementation not stated: torch default (foreach)"), None


def llama3_table4(row):
    """Llama 3 paper (Dubey et al. 2024) Table 4: Llama 3 405B on 8,192-16,384 H100s with TP x CP x PP x DP (4D
    parallelism, Meta's own stack), 16M tokens per batch, BF16 MFU 38-43 %. Written as Megatron-style 4D
    parallelism: one sequence per micro-batch, batch size/DP micro-batches per step, DP sharding the optimizer
    (ZeRO-1; the paper's FSDP keeps the parameters unsharded between forward and backward). The schedule is
    interleaved (paper section 3.3.2) but the number of virtual stages is not in the table: 2, the least an
    interleaved schedule has, is taken. Achieved TFLOP/s are recomputed with gpuplan's FLOP count (no recompute)."""
    par = row["parallelism"]
    tp, cp, pp, dp = (int(re.search(rf"{k}(\d+)", par).group(1)) for k in ("TP", "CP", "PP", "DP"))
    n, seq = int(row["n_gpus"]), int(row["seq_len"])
    per_dp = 16 * 2**20 // (seq * dp)  # 16M tokens per batch (Table 4: batch size/DP)
    scenario = dict(model="llama-3.1-405b", task="train", stack="megatron", method="full", precision="bf16-mixed",
                    optimizer="adamw", micro_batch_size=1, grad_accum_steps=per_dp, seq_len=seq,
                    grad_checkpointing="none", attention="flash", sharding="zero1", tp=tp, cp=cp, pp=pp, vpp=2,
                    gpu=GPUS[row["gpu"]], **_nodes(n))
    return dict(scenario=scenario, assumptions=f"{per_dp} micro-batches of one sequence per step (batch size/DP); "
                "interleaved schedule with 2 virtual stages assumed (not in the table); no activation recompute "
                "(recalled: section 3.3.2 says the 8K pre-training ran without activation checkpointing; gpuplan's "
                "memory model puts these rows above 80 GB); DP as ZeRO-1 (optimizer sharded); RoCE 400 Gb/s per "
                "GPU"), None


BRIDGE_MODELS = {"LLAMA3_8B": "llama-3-8b", "LLAMA3_70B": "llama-3-70b", "LLAMA3.1_405B": "llama-3.1-405b"}
BRIDGE_GPUS = {"H100-SXM-80GB (DGX-H100)": "nvidia-h100-sxm5-80gb", "B200 (DGX-B200)": "nvidia-b200",
               "GB200 (DGX-GB200)": "nvidia-gb200"}


def megatron_bridge(row):
    """Megatron-Bridge performance summary (NeMo containers 25.11 and 26.06), held out (session 16): Megatron-Core
    (stack megatron) as the launch configs of scripts/performance run it. Pre-training: mock data at 8,192 tokens, the
    Llama 3 recipes' distributed optimizer with overlapped grad reduce and param gather, no recompute (the recipes set
    none), sequence parallelism and Transformer Engine userbuffers (``tp_comm_overlap``) with TP > 1, fp8 by
    ``fp8_cs`` (Transformer Engine per-tensor current scaling, first and last layers in fp8 too), the 8B configs on
    B200/GB200 with CUDA graphs of the full iteration. SFT/LoRA (26.06): SQuAD packed into 4,096-token rows, as
    :func:`nemo`'s rows (same record assumptions), the distributed optimizer, no recompute (the recipes set
    ``recompute_granularity`` None), LoRA on ``linear_qkv`` only at rank 16 (``llama3_70b_peft_config``: dim 16 for
    70B)."""
    name = re.search(r"\((LLAMA[\w.]+)\)", row["model"]).group(1)
    par = row["parallelism"]
    n = int(row["n_gpus"])
    tp, pp, cp = (int(re.search(rf"{k}(\d+)", par).group(1)) for k in ("TP", "PP", "CP"))
    vp = int(m.group(1)) if (m := re.search(r"VP(\d+)", par)) else 1
    dp = int(re.search(r"DP=(\d+)", par).group(1))
    gbs = int(re.search(r"GBS=(\d+)", par).group(1))
    mbs = int(row["micro_batch"])
    lora = row["workload"] == "LoRA"
    scenario = dict(model=BRIDGE_MODELS[name], task="train", stack="megatron", method="lora" if lora else "full",
                    precision="fp8-mixed", fp8_recipe="current", optimizer="adamw", micro_batch_size=mbs,
                    seq_len=int(row["seq_len"].split()[0]), grad_accum_steps=gbs // (dp * mbs),
                    grad_checkpointing="none", sharding="zero1" if dp * cp > 1 else "single", tp=tp, pp=pp, cp=cp,
                    **({"vpp": vp} if vp > 1 else {}), gpu=BRIDGE_GPUS[row["gpu"]], **_nodes(n))
    notes = ["Megatron-Bridge's launch config (scripts/performance): distributed optimizer (zero1), no recompute",
             "fp8_cs: Transformer Engine per-tensor current scaling (fp8_recipe current)"]
    if tp > 1:
        scenario["tp_overlap"] = "userbuffers"
        notes.append("sequence parallelism; TP collectives overlapped by Transformer Engine userbuffers "
                     "(tp_comm_overlap)")
    if "full_iteration" in row["notes"]:
        scenario["cuda_graphs"] = True
        notes.append("CUDA graphs of the full iteration (cuda_graph_impl local)")
    elif "scope mlp" in row["notes"]:
        notes.append("Transformer Engine CUDA graphs of the MLP only (scope mlp): not modelled, graphs off")
    if lora:
        scenario.update(lora_rank=16, lora_targets=["q_proj", "k_proj", "v_proj"])
        notes.append("LoRA on linear_qkv (the fused QKV), rank 16 (llama3_70b_peft_config: dim 16 for 70B)")
    if "packed" in row["seq_len"]:
        scenario.update(samples=SQUAD_RECORDS, mean_tokens=SQUAD_MEAN_TOKENS, max_tokens=SQUAD_MAX_TOKENS,
                        packing="bfd")
        notes.append(f"packed SQuAD ({SQUAD_RECORDS:,} records of ~{SQUAD_MEAN_TOKENS} tokens, assumed as for NeMo "
                     "24.07's rows) in 4,096-token rows, attention per record")
    if "GB200" in row["gpu"]:
        notes.append("8 GB200s = two 4-GPU trays in one NVL72 NVLink domain: one NVLink node")
    return dict(scenario=scenario, assumptions="; ".join(notes)), None


RULES = {
    "Megatron-Bridge performance summary (NeMo 25.11 / 26.06)": megatron_bridge,
    "torchtitan benchmarks (Trainy H200, Jun 2025)": mc.torchtitan_h200,  # compiled as it ran
    "Qwen2.5 docs speed benchmark": qwen25,
    "Qwen (v1) README finetuning profiling": qwen1_finetune,
    "Qwen (v1) README inference profiling": qwen1_inference,
    "huggingface/peft MetaMathQA method-comparison benchmark": peft_metamath,
    "torchtune docs Llama3 tutorial": torchtune,
    "torchtitan benchmarks (Dec 2024)": torchtitan,
    "MosaicML llm-foundry MPT training benchmarks": mpt,
    "Megatron-LM paper (Narayanan et al., SC'21)": megatron_lm,
    "NVIDIA NeMo performance summary (24.07)": nemo,
    "HF blog 'From DeepSpeed to FSDP and Back Again' (Jun 2024)": hf_blog_zero3,
    "fms-fsdp README throughput table": fms_fsdp,
    "Llama 3 paper Table 4 (Dubey et al. 2024)": llama3_table4,
    "Answer.AI fsdp_qlora benchmarks (Mar 2024)": answerai,
    "torchtune README (optimization flags table)": torchtune_flags,
    "torchtune README (Llama 3.1 memory table)": torchtune_llama31,
}
SKIP = {
    "layer_fwd_bwd_time_ms": "time of one transformer layer, not a whole-model scenario",
    "Korthikanti": "global batch (hence pipeline micro-batches per step) not transcribed from the paper's Table 3",
}


# The fabric each source's cluster ran on (bench/throughput.py passes it to the speed model instead of an
# offer's): DGX A100 nodes (Selene, MosaicML's A100 clusters) carry 8 x 200 Gb/s HDR InfiniBand, DGX H100 nodes
# 8 x 400 Gb/s NDR (NVIDIA DGX user guides; one NIC per GPU). MosaicML does not name its fabric: the DGX
# reference one is assumed. Sources on one node need none.
NETWORKS = {
    "Megatron-LM paper (Narayanan et al., SC'21)": {"A100": ("infiniband", 1600)},
    "MosaicML llm-foundry MPT training benchmarks": {"A100": ("infiniband", 1600), "H100": ("infiniband", 3200)},
    "NVIDIA NeMo performance summary (24.07)": {"H100": ("infiniband", 3200)},
    # fms-fsdp README (earlier version): "A100 80G 128 GPUs with 400Gbps"; Llama 3: RoCE, 400 Gb/s per GPU
    "fms-fsdp README throughput table": {"A100": ("infiniband", 400)},
    "Llama 3 paper Table 4 (Dubey et al. 2024)": {"H100": ("roce", 3200)},
    # torchtitan benchmarks: 'Hosts are inter-connected with backend RDMA network with 400 Gb/s per GPU' (Meta's
    # RoCE, as for Llama 3)
    "torchtitan benchmarks (Dec 2024)": {"H100": ("roce", 3200)},
    # Trainy on WhiteFiber: 'backend RDMA fabric with 400Gb/s (Mellanox CX-7) per GPU' (InfiniBand taken)
    "torchtitan benchmarks (Trainy H200, Jun 2025)": {"H200": ("infiniband", 3200)},
    # DGX H100 and DGX B200: 8 x 400 Gb/s ConnectX-7 InfiniBand per node (NVIDIA DGX user guides); the GB200 rows
    # run on 8 GPUs of one NVL72 NVLink domain (no fabric between nodes)
    "Megatron-Bridge performance summary (NeMo 25.11 / 26.06)": {"DGX-H100": ("infiniband", 3200),
                                                                 "DGX-B200": ("infiniband", 3200)},
}


def network(row) -> dict:
    for card, (kind, gbps) in NETWORKS.get(row["source"], {}).items():
        if card in row["gpu"]:
            return {"network": {"intra_node": "nvlink", "inter_node": kind, "inter_node_gbps": gbps}}
    return {}


# Published throughput of sharded (ZeRO-3, FSDP) and 4D-parallel training that measured-public.csv lacks, with
# their locators (bench/data/SOURCES.md)
SHARDED_CSV = HERE / "data" / "measured-sharded-public.csv"
# Answer.AI fsdp_qlora's published training times (benchmarks_03_2024.md): consumer, workstation and cloud cards
ANSWERAI_CSV = HERE / "data" / "measured-answerai-public.csv"
# torchtitan's benchmark rows that measured-public.csv lacks (Tables 1-4 of the Dec 2024 file, the vanilla-TP rows of
# the June 2025 async-TP file), same card and locators
TORCHTITAN_CSV = HERE / "data" / "measured-torchtitan-public.csv"


def build(csv_path: Path) -> dict:
    cases, skipped = [], []
    rows = [*csv.DictReader(csv_path.open(encoding="utf-8")),
            *(row for extra in (SHARDED_CSV, ANSWERAI_CSV, TORCHTITAN_CSV, mc.EXTRA_CSV)
              for row in csv.DictReader(extra.open(encoding="utf-8")))]
    for row in rows:
        if row["metric"] not in THROUGHPUT_METRICS:
            continue
        reason = next((why for key, why in SKIP.items() if key in row["metric"] or key in row["source"]), None)
        rule = RULES.get(row["source"])
        if reason is None and rule is None:
            reason = "source not expressible"
        if reason is None:
            case, reason = rule(row)
        if reason is not None:
            skipped.append({"id": row["id"], "why": reason})
            continue
        case.pop("level", None)
        case.pop("calibration", None)
        cases.append({"id": row["id"], "source": row["source"], "workload": row["workload"],
                      "metric": row["metric"], "value": float(row["value"]), "unit": row["unit"],
                      "fixed_length": case.pop("fixed_length", True), **case, **network(row)})
    return {"cases": cases, "skipped": skipped}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--csv", type=Path, default=mc.DEFAULT_CSV)
    parser.add_argument("--out", type=Path, default=HERE / "throughput_cases.yaml")
    args = parser.parse_args()
    data = build(args.csv)
    header = ("# Generated by bench/make_throughput_cases.py from measured-public.csv; edit the rules there, "
              "not this file.\n")
    args.out.write_text(header + yaml.safe_dump(data, sort_keys=False, width=120, allow_unicode=True))
    print(f"{len(data['cases'])} cases, {len(data['skipped'])} skipped -> {args.out}")


if __name__ == "__main__":
    main()
