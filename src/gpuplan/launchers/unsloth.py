"""``unsloth_train.py`` (and ``unsloth-run.sh``): a plan for ``stack unsloth`` as the short script Unsloth's
own notebooks are: ``FastLanguageModel.from_pretrained``, ``FastLanguageModel.get_peft_model``, then TRL's
``SFTTrainer`` with an ``SFTConfig``. The arguments are three Python literals at the top of the script (``LOAD``,
``PEFT``, ``TRAIN``), so a test reads them back without running Unsloth, which needs a GPU to import.

What carries the plan (unsloth 2026.10.9 ``models/loader.py`` ``FastLanguageModel.from_pretrained``,
``models/llama.py`` ``FastLlamaModel.get_peft_model``): ``max_seq_length``; ``load_in_4bit`` (QLoRA; Unsloth
loads 4-bit unless told otherwise, so 16-bit LoRA says ``False``) or ``load_in_8bit``; the LoRA rank, alpha,
dropout (0 runs Unsloth's fused LoRA kernels, as the memory estimate assumes) and target modules;
``use_gradient_checkpointing``: ``"unsloth"`` offloads the checkpoints to the CPU (``activation_offload``),
``True`` checkpoints on the GPU, ``False`` not at all; and TRL's ``SFTConfig`` fields the trainer target writes
(micro-batch, accumulation, ``max_length`` with packing, bf16/fp16, ``optim``, ``max_steps``, ``save_steps`` from
the spot plan). Unsloth's fused linear cross-entropy is its default; ``loss full`` sets ``UNSLOTH_RETURN_LOGITS=1``
before the import (``models/llama.py``: the logits are then made and returned). Several GPUs run the script under
torchrun as DDP replicas, the only layout gpuplan's Unsloth stack plans.
"""

from __future__ import annotations

from typing import Any

from .. import overheads as oh
from ..stacks.releases import UNSLOTH_VERSION as VERSION
from .data import dpo_fields, hf_dataset_call, local_file, save_fields, save_note, sft_fields
from .files import LaunchFile, comment, shell_text
from .plan import LaunchPlan
from .settings import LaunchOptions, autocast, dataset_for, hf_optim, is_dpo
from .torchrun import launcher
from .trainer import smoke_fields

NAME = "unsloth"
FILE = "unsloth_train.py"
SCRIPT = "unsloth-run.sh"
ALL_LINEAR = ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]  # Unsloth's default


def applies(plan: LaunchPlan) -> str | None:
    s = plan.scenario
    if NAME not in plan.stack_targets:
        return "the plan is not for stack unsloth (set --stack unsloth to plan an Unsloth run)"
    if s.method == "full":
        return ("gpuplan writes Unsloth's LoRA and QLoRA runs (its documented use): for full fine-tuning plan "
                "stack hf or axolotl")
    if s.method == "lora" and s.quant not in (None, "none", "int8"):
        return f"Unsloth's LoRA loads 16-bit or bitsandbytes 8-bit weights: set quant int8 or none, not {s.quant}"
    if s.method == "qlora" and (s.quant or "nf4") != "nf4":
        return f"Unsloth's load_in_4bit loads nf4 weights: set quant nf4, not {s.quant}"
    if s.activation_offload and s.grad_checkpointing != "full":
        return "Unsloth offloads the checkpoints of its checkpointing: set grad_checkpointing full, or no offload"
    if s.adapter_dtype != "fp32":
        return "Unsloth's adapters are fp32 (peft's autocast_adapter_dtype): drop adapter_dtype"
    return None


def arguments(plan: LaunchPlan, opts: LaunchOptions) -> dict[str, dict[str, Any]]:
    """``LOAD``, ``PEFT`` and ``TRAIN``: the keyword arguments of from_pretrained, get_peft_model and SFTConfig."""
    s = plan.scenario
    checkpointing = ("unsloth" if s.activation_offload else True) if s.grad_checkpointing == "full" else False
    load = {"model_name": plan.model_ref, "max_seq_length": s.seq_len, "load_in_4bit": s.method == "qlora",
            "load_in_8bit": s.quant == "int8", "full_finetuning": False}
    peft = {"r": s.lora_rank, "lora_alpha": 2 * s.lora_rank, "lora_dropout": s.lora_dropout,
            "target_modules": ALL_LINEAR if s.lora_targets == "all-linear" else list(s.lora_targets),
            "bias": "none", "use_gradient_checkpointing": checkpointing, "random_state": 3407}
    optim, optim_args = hf_optim(s)
    mixed = autocast(s)
    train: dict[str, Any] = {"output_dir": opts.output_dir, "max_length": s.seq_len,
                             "per_device_train_batch_size": s.micro_batch_size,
                             "gradient_accumulation_steps": s.grad_accum_steps, "bf16": mixed == "bf16",
                             "fp16": mixed == "fp16", "optim": optim, "learning_rate": 2e-4, "max_grad_norm": 1.0,
                             **(dpo_fields(plan) if is_dpo(s) else sft_fields(plan)), "logging_steps": 10,
                             **save_fields(plan),
                             "save_total_limit": oh.CHECKPOINTS_KEPT, "report_to": "none"}
    if optim_args:
        train["optim_args"] = optim_args
    if plan.max_steps is not None and "num_train_epochs" not in train:
        train["max_steps"] = plan.max_steps
    return {"LOAD": load, "PEFT": peft, "TRAIN": {**train, **smoke_fields(opts)}}


def script(plan: LaunchPlan, opts: LaunchOptions) -> str:
    s = plan.scenario
    opts = dataset_for(s, opts)  # a DPO plan that names no data: TRL's preference example
    literals = "".join(f"{name} = {{\n" + "".join(f"    {k!r}: {v!r},\n" for k, v in value.items()) + "}\n"
                       for name, value in arguments(plan, opts).items())
    dtype = {"bf16": "bfloat16", "fp16": "float16"}[autocast(s)]
    logits = 'os.environ["UNSLOTH_RETURN_LOGITS"] = "1"  # loss full: make the logits (no fused loss)\n' \
        if s.loss == "full" and not is_dpo(s) else ""
    return ("#!/usr/bin/env python\n" + comment([*plan.header(), *notes(plan)]) +
            "import os\nfrom pathlib import Path\n\n" + logits + _imports(s) +
            f"DATASET = {(local_file(opts) or (None, opts.dataset))[1]!r}\nDTYPE = {dtype!r}\n" + literals +
            "TRAIN[\"output_dir\"] = os.environ.get(\"OUTPUT_DIR\", TRAIN[\"output_dir\"])  # SkyPilot: the bucket\n"
            "\nmodel, tokenizer = FastLanguageModel.from_pretrained(**LOAD, dtype=getattr(torch, DTYPE))\n"
            "model = FastLanguageModel.get_peft_model(model, **PEFT)\n" + _trainer(s, opts) +
            "# after a spot interruption: resume from the newest checkpoint in output_dir\n"
            "trainer.train(resume_from_checkpoint=any(Path(TRAIN[\"output_dir\"]).glob(\"checkpoint-*\")))\n")


def _imports(s) -> str:
    """Unsloth first (it patches transformers and TRL on import), then TRL's trainer for the objective. A DPO run
    calls ``PatchDPOTrainer()`` as Unsloth's DPO notebooks and docs do (unsloth.ai/docs, "Preference
    Optimization Training - DPO, ORPO & KTO"); in 2026.10.9 it is a no-op kept for them (``unsloth/models/dpo.py``)
    and the import's patches run TRL 1.16's own DPOTrainer with its fused log-prob head, which Unsloth keeps
    (``models/rl.py`` ``patch_trl_fused_lm_head_devices``), so the plan's TRL head holds."""
    if not is_dpo(s):
        return ("from unsloth import FastLanguageModel  # first: Unsloth patches transformers and TRL on import\n"
                "import torch\nfrom datasets import load_dataset\nfrom trl import SFTConfig, SFTTrainer\n\n")
    return ("from unsloth import FastLanguageModel, PatchDPOTrainer  # first: Unsloth patches transformers and TRL\n"
            "PatchDPOTrainer()\nimport torch\nfrom datasets import load_dataset\nfrom trl import DPOConfig, "
            "DPOTrainer\n\n")


def _trainer(s, opts: LaunchOptions) -> str:
    """The trainer over the LoRA model: SFTTrainer, or DPOTrainer with ``ref_model=None`` (the reference is the
    base with the adapters off, TRL ``use_adapter(..., None)``, as the plan counts it: no copy)."""
    if is_dpo(s):
        return ("trainer = DPOTrainer(model=model, ref_model=None, processing_class=tokenizer,\n"
                f"                     train_dataset={hf_dataset_call(opts)}, args=DPOConfig(**TRAIN))\n")
    return ("trainer = SFTTrainer(model=model, processing_class=tokenizer,\n"
            f"                     train_dataset={hf_dataset_call(opts)}, args=SFTConfig(**TRAIN))\n")


def command(plan: LaunchPlan, *, multinode_env: bool = False) -> list[str]:
    """``python unsloth_train.py`` on one GPU; torchrun's DDP replicas on several."""
    if plan.scenario.world_size == 1:
        return ["python", FILE]
    return [*launcher(plan, multinode_env=multinode_env), FILE]


def notes(plan: LaunchPlan) -> list[str]:
    out = [f"run: bash {SCRIPT} ({' '.join(command(plan)[:3])}...); arguments checked against unsloth {VERSION}"]
    if is_dpo(plan.scenario):
        out.append("DPO: the data needs prompt/chosen/rejected columns (TRL's preference format) or whole chosen and "
                   "rejected conversations; per_device_train_batch_size counts pairs, each two rows of up to "
                   "max_length tokens")
    out += save_note(plan)
    return out


def files(plan: LaunchPlan, opts: LaunchOptions) -> list[LaunchFile]:
    trainer = "DPOTrainer" if is_dpo(plan.scenario) else "SFTTrainer"
    return [LaunchFile(name=FILE, target=NAME, text=script(plan, opts), reader=f"python (Unsloth + TRL {trainer})",
                       executable=True),
            LaunchFile(name=SCRIPT, target=NAME, text=shell_text(plan, command(plan)),
                       reader="bash (python or torchrun unsloth_train.py)", executable=True)]
