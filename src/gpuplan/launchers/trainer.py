"""``trainer.yaml``: the Hugging Face Trainer / TRL ``SFTConfig`` fields that set memory and time, with TRL's
``ModelConfig`` (dtype, LoRA, 4-bit loading) and ``ScriptArguments`` (dataset), as ``trl sft --config`` and
``python -m trl.scripts.sft --config`` read them (TRL ``scripts/utils.py`` ``TrlParser.parse_args_and_config``).

What carries the plan: ``per_device_train_batch_size`` and ``gradient_accumulation_steps`` (the micro-batch and
accumulation), ``max_length`` with ``packing`` (every micro-batch holds ``seq_len`` tokens, as the estimate
assumes), ``gradient_checkpointing``, ``dtype`` and ``bf16``/``fp16`` (see :mod:`.settings`), ``optim``, the LoRA
rank and targets, ``load_in_4bit`` with nf4 double quantization, ``attn_implementation``, ``use_liger_kernel``
(loss fused-linear), ``torch_compile``, ``max_steps`` from
``train_tokens``, and ``save_steps`` from the spot plan's checkpoint interval. The ZeRO/FSDP settings point at
the same files ``accelerate launch`` reads, so ``torchrun`` alone runs the same plan.
"""

from __future__ import annotations

from typing import Any

from .. import overheads as oh
from ..errors import GpuplanError
from .data import dpo_fields, save_fields, save_note, sft_fields, trl_dataset
from .files import LaunchFile, yaml_text
from .plan import LaunchPlan
from .settings import LaunchOptions, autocast, backend, dataset_for, fsdp_settings, hf_optim, is_dpo, model_dtype

NAME = "trainer"
FILE = "trainer.yaml"
ATTENTION = {"eager": "eager", "sdpa": "sdpa", "flash": "flash_attention_2"}


def applies(plan: LaunchPlan) -> str | None:
    """Why the target does not apply to the plan, or None."""
    if not plan.train:
        return "trainer arguments are for training; serve with --target vllm"
    s = plan.scenario
    if plan.synthetic:
        return pretraining_refusal(plan)
    if plan.stack_targets and NAME not in plan.stack_targets:
        return f"stack {s.stack} runs from its own config, not the Trainer's: use --target {plan.stack_targets[0]}"
    if NAME not in plan.stack_targets:
        return (f"stack {s.stack}: gpuplan launch writes the Hugging Face Trainer stack (stack hf); a "
                f"{s.stack} writer is not built yet")
    if s.precision == "fp16-true" and s.method == "full":
        return "the Trainer cannot train fp16 weights without fp32 master weights: use fp16-mixed or bf16-true"
    if s.quant not in (None, "none") and s.method == "full":
        return f"full fine-tuning of {s.quant} weights does not train: use method lora or qlora"
    return None


def pretraining_refusal(plan: LaunchPlan) -> str:
    """Why a fine-tuning stack does not run a size-only model: it loads pretrained weights and a chat set."""
    return (f"{plan.model.name} exists only as a size: it pretrains from random weights, which an SFT trainer does "
            "not (it loads pretrained weights); plan --stack torchtitan or megatron")


def fields(plan: LaunchPlan, opts: LaunchOptions) -> dict[str, Any]:
    """The config's fields: TRL's SFTConfig, or DPOConfig for a DPO plan (:func:`.data.dpo_fields`: ``max_length``
    is the pair's longer row, prompt + reply; ``per_device_train_batch_size`` counts pairs, as the plan's
    micro-batch does)."""
    s = plan.scenario
    dpo = is_dpo(s)
    data: dict[str, Any] = {"model_name_or_path": plan.model_ref, "dtype": model_dtype(s),
                            "attn_implementation": ATTENTION[s.attention], **trl_dataset(dataset_for(s, opts)),
                            "output_dir": opts.output_dir, "max_length": s.seq_len,
                            **(dpo_fields(plan) if dpo else sft_fields(plan)),
                            "per_device_train_batch_size": s.micro_batch_size,
                            "gradient_accumulation_steps": s.grad_accum_steps,
                            "gradient_checkpointing": s.grad_checkpointing != "none"}
    if s.grad_checkpointing != "none":
        data["gradient_checkpointing_kwargs"] = {"use_reentrant": False}
    mixed = autocast(s)
    data["bf16"] = mixed in ("bf16", "fp8") or s.precision == "bf16-true"
    data["fp16"] = mixed == "fp16"
    if s.tf32:  # TrainingArguments.tf32 sets torch.backends.cuda.matmul.allow_tf32 (transformers training_args.py)
        data["tf32"] = True
    optim, optim_args = hf_optim(s)
    data["optim"] = optim
    if optim_args:
        data["optim_args"] = optim_args
    data.setdefault("max_grad_norm", 1.0)
    if s.loss == "fused-linear" and not dpo:  # TRL's DPOTrainer fuses its own head (use_liger_kernel deprecated)
        data["use_liger_kernel"] = True  # the Trainer's switch for Liger's fused linear cross-entropy
    if s.compile:
        data["torch_compile"] = True
    if plan.max_steps is not None and "num_train_epochs" not in data:
        data["max_steps"] = plan.max_steps
    data.update(save_fields(plan))
    data["save_total_limit"] = oh.CHECKPOINTS_KEPT
    data["logging_steps"] = 10
    data["report_to"] = "none"
    kind = backend(s)
    if kind == "deepspeed":
        data["deepspeed"] = "ds_config.json"
    elif kind.startswith("fsdp"):
        data["fsdp"] = True
        data["fsdp_config"] = fsdp_settings(s)
    if s.method != "full":
        targets = s.lora_targets if isinstance(s.lora_targets, str) else list(s.lora_targets)
        data.update({"use_peft": True, "lora_r": s.lora_rank, "lora_alpha": 2 * s.lora_rank,
                     "lora_dropout": s.lora_dropout, "lora_target_modules": targets})
    data.update(_quantized_base(plan))
    return {**data, **smoke_fields(opts)}


def smoke_fields(opts: LaunchOptions) -> dict[str, Any]:
    """A smoke run's changes (:mod:`.smoke`): on the CPU (``use_cpu``, no half precision), ``max_steps`` steps
    (the Trainer stops there whatever the epochs), logging and saving at the last."""
    out: dict[str, Any] = {}
    if opts.device == "cpu":
        out.update({"use_cpu": True, "bf16": False, "fp16": False})
    if opts.max_steps:
        out.update({"max_steps": opts.max_steps, "logging_steps": 1, "save_steps": opts.max_steps})
    return out


def _quantized_base(plan: LaunchPlan) -> dict[str, Any]:
    """bitsandbytes loading of the frozen base (TRL ``get_quantization_config``); GPTQ/AWQ checkpoints carry
    their own quantization config."""
    s = plan.scenario
    if s.method == "qlora" and s.quant in (None, "nf4", "fp4"):
        out: dict[str, Any] = {"load_in_4bit": True, "bnb_4bit_quant_type": s.quant or "nf4",
                               "use_bnb_nested_quant": True}
        if s.resolved_sharding == "zero3":
            out["bnb_4bit_quant_storage"] = model_dtype(s)  # ZeRO-3/FSDP shard 4-bit weights stored as this dtype
        return out
    if s.method == "lora" and s.quant == "int8":
        return {"load_in_8bit": True}
    if s.method != "full" and s.quant not in (None, "none", "gptq-int4", "gptq-int8", "awq-int4"):
        raise GpuplanError(f"quant {s.quant!r} has no Trainer loading switch: use nf4/fp4 (QLoRA), int8 (LoRA) or "
                           "a GPTQ/AWQ checkpoint")
    return {}


def notes(plan: LaunchPlan) -> list[str]:
    s = plan.scenario
    kind = ("DPO", "dpo") if is_dpo(s) else ("SFT", "sft")
    out = [f"run: bash accelerate-launch.sh or torchrun.sh; TRL's {kind[0]} script (python -m trl.scripts.{kind[1]} "
           "--config trainer.yaml) reads every field below"]
    if is_dpo(s):
        out.append("DPO: the data needs prompt/chosen/rejected columns (TRL's preference format); "
                   "per_device_train_batch_size counts pairs, each two rows of up to max_length tokens")
    out += save_note(plan)
    if s.method == "qlora" and not s.qlora_fp32_upcast:
        out.append("the plan assumes no fp32 upcast of the non-4-bit weights: TRL's peft preparation upcasts them "
                   "and uses more memory than planned")
    if s.transformers_version and s.loss == "full":
        out.append(f"the plan's loss follows transformers {s.transformers_version}; the setup installs "
                   "transformers>=5.0, whose loss keeps compute-dtype logits and no shifted copy: no more memory "
                   "than planned, less in the forward, unless you pin that release")
    if s.method != "full" and s.adapter_dtype != "fp32":
        out.append(f"the plan keeps LoRA adapters in {s.adapter_dtype}; TRL has no switch for it and peft makes them "
                   "fp32 (autocast_adapter_dtype), a little more memory than planned")
    return out


def files(plan: LaunchPlan, opts: LaunchOptions) -> list[LaunchFile]:
    reader = ("trl dpo --config trainer.yaml (TRL: DPOConfig, ModelConfig)" if is_dpo(plan.scenario) else
              "trl sft --config trainer.yaml (TRL: SFTConfig, ModelConfig)")
    return [LaunchFile(name=FILE, target=NAME, text=yaml_text(plan, fields(plan, opts), notes(plan)), reader=reader)]
