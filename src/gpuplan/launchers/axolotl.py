"""``axolotl.yaml`` and ``axolotl-train.sh``: a plan for ``stack axolotl`` as the config ``axolotl train`` reads
(axolotl 0.18 ``utils/schemas/config.py`` ``AxolotlInputConfig``, with the Liger plugin's ``LigerArgs``), and, for
ZeRO plans, the ``ds_config.json`` it names (:mod:`.deepspeed`).

What carries the plan: ``micro_batch_size``, ``gradient_accumulation_steps``, ``sequence_len`` with
``sample_packing`` and ``pad_to_sequence_len`` (every micro-batch holds ``seq_len`` tokens), ``gradient_checkpointing``
and ``activation_offloading``, ``bf16``/``fp16`` (see below), ``optimizer`` (the Trainer's names), LoRA
(``adapter``, ``lora_r``, ``lora_alpha``, ``lora_dropout``, ``lora_target_linear`` or ``lora_target_modules``,
``peft_autocast_adapter_dtype``), 4-bit or 8-bit loading, the Liger plugin as gpuplan's axolotl stack assumes it
(``liger_rope``, ``liger_rms_norm``, ``liger_glu_activation``, and ``liger_fused_linear_cross_entropy`` for loss
fused-linear) or ``chunked_cross_entropy``, ``torch_compile``, ``attn_implementation``, ``max_steps`` from
``train_tokens``, ``save_steps`` from the spot plan with ``auto_resume_from_checkpoints``, and ``deepspeed`` /
``fsdp_version`` + ``fsdp_config``. Axolotl turns its fused LoRA kernels on by itself
(``check_auto_enable_lora_kernels``); gpuplan's axolotl plan counts peft's LoRA layers, so the file turns them off.

Precision: ``bf16: true`` makes axolotl load the model in bf16 (``utils/config`` ``resolve_dtype``: ``torch_dtype``
follows ``bf16``/``fp16``). Under FSDP accelerate upcasts the shards to fp32 for mixed precision
(``fsdp_utils.fsdp2_prepare_model``, ``Accelerator.prepare_model``) and DeepSpeed keeps fp32 master weights, so
both run ``bf16-mixed``; on one GPU or DDP a full fine-tune runs bf16 weights under autocast, which is gpuplan's
``bf16-true``.
"""

from __future__ import annotations

from typing import Any

from .. import overheads as oh
from ..stacks.releases import AXOLOTL_VERSION as VERSION
from . import deepspeed
from .data import DPO_BETA, chat_turns, explicit_prompt, local_file, record_kind, save_fields, save_note
from .files import LaunchFile, shell_text, yaml_text
from .plan import LaunchPlan
from .settings import LaunchOptions, backend, dataset_for, fsdp_settings, hf_optim, is_dpo
from .torchrun import launcher
from .trainer import pretraining_refusal

NAME = "axolotl"
FILE = "axolotl.yaml"
SCRIPT = "axolotl-train.sh"
ATTENTION = {"eager": "eager", "sdpa": "sdpa", "flash": "flash_attention_2"}
LIGER = "axolotl.integrations.liger.LigerPlugin"
KERNELS = ("lora_mlp_kernel", "lora_qkv_kernel", "lora_o_kernel", "lora_embedding_kernel")


def applies(plan: LaunchPlan) -> str | None:
    s = plan.scenario
    if NAME not in plan.stack_targets:
        return "the plan is not for stack axolotl (set --stack axolotl to plan an Axolotl run)"
    if plan.synthetic:
        return pretraining_refusal(plan)
    kind = backend(s)
    mixed = s.precision.endswith("-mixed")
    if s.precision in ("fp8-mixed", "fp16-true"):
        return f"axolotl trains bf16, fp16 or fp32 weights: use bf16-mixed or bf16-true, not {s.precision}"
    if s.method == "full" and kind in ("none", "ddp") and mixed:
        return (f"axolotl loads the weights in {s.precision[:4]} when {s.precision[:4]}: true (resolve_dtype), so a "
                f"full fine-tune without ZeRO or FSDP trains {s.precision[:4]} weights: plan precision "
                f"{s.precision[:4]}-true")
    if kind.startswith("fsdp") and s.precision.endswith("-true"):
        return ("under FSDP accelerate upcasts the shards to fp32 for mixed precision: plan precision "
                f"{s.precision[:4]}-mixed")
    if s.quant not in (None, "none") and s.method == "full":
        return f"full fine-tuning of {s.quant} weights does not train: use method lora or qlora"
    if s.method == "qlora" and s.quant not in (None, "nf4", "fp4"):
        return f"axolotl's QLoRA loads bitsandbytes 4-bit weights: set quant nf4 or fp4, not {s.quant}"
    if s.method == "lora" and s.quant not in (None, "none", "int8"):
        return f"axolotl's LoRA loads 16-bit or bitsandbytes 8-bit weights: set quant int8 or none, not {s.quant}"
    if is_dpo(s) and kind == "fsdp2" and (s.method == "qlora" or s.quant == "int8"):
        return ("axolotl refuses 4-bit or 8-bit loading under FSDP2 with rl: dpo (check_fsdp2_base_model_quant_rl): "
                "plan sharding fsdp1 or zero3")
    return None


def dtype_flags(s) -> dict[str, bool]:
    half = None if s.precision == "fp32" else s.precision[:4]
    return {"bf16": half == "bf16", "fp16": half == "fp16"}


def config(plan: LaunchPlan, opts: LaunchOptions) -> dict[str, Any]:
    s = plan.scenario
    data: dict[str, Any] = {"base_model": plan.model_ref}
    if s.method == "qlora":
        data.update({"load_in_4bit": True, "adapter": "qlora"})
        if (s.quant or "nf4") != "nf4":  # axolotl's BitsAndBytesConfig is nf4 with double quantization
            data["bnb_config_kwargs"] = {"bnb_4bit_quant_type": s.quant}
    elif s.method == "lora":
        data["adapter"] = "lora"
        if s.quant == "int8":
            data["load_in_8bit"] = True
    if s.method != "full":
        data.update({"lora_r": s.lora_rank, "lora_alpha": 2 * s.lora_rank, "lora_dropout": s.lora_dropout})
        if s.lora_targets == "all-linear":
            data["lora_target_linear"] = True
        else:
            data["lora_target_modules"] = list(s.lora_targets)
        data["peft_autocast_adapter_dtype"] = s.adapter_dtype == "fp32"
        data.update({k: False for k in KERNELS})
    dpo = is_dpo(s)
    data.update({
        **(dpo_settings(plan, opts) if dpo else {"datasets": [axolotl_dataset(opts, record_kind(plan))]}),
        "chat_template": "tokenizer_default_fallback_chatml", "dataset_prepared_path": "last_run_prepared",
        "val_set_size": 0.0, "output_dir": opts.output_dir, "sequence_len": s.seq_len,
        **({"sample_packing": False} if dpo else {
            "sample_packing": (s.packing or "bfd") in ("bfd", "wrapped"),
            "pad_to_sequence_len": (s.packing or "bfd") != "none", "group_by_length": s.packing == "bucket"}),
        "micro_batch_size": s.micro_batch_size, "gradient_accumulation_steps": s.grad_accum_steps,
        "num_epochs": (plan.recipe.epochs or 1) if plan.recipe and (s.dataset or s.samples) else 1})
    if plan.max_steps is not None and not (s.dataset or s.samples):
        data["max_steps"] = plan.max_steps
    if plan.recipe is not None and plan.recipe.assistant_only and not dpo:  # the loss on the assistant turns only
        data["train_on_inputs"] = False
    optim, optim_args = hf_optim(s)
    data["optimizer"] = optim
    if optim_args:
        data["optim_args"] = optim_args
    r = plan.recipe
    data.update({"learning_rate": r.learning_rate if r else 2e-5 if s.method == "full" else 2e-4,
                 "lr_scheduler": r.schedule if r else "cosine", "warmup_steps": r.warmup_steps if r else 0,
                 "max_grad_norm": r.max_grad_norm if r else 1.0, **dtype_flags(s),
                 "attn_implementation": ATTENTION[s.attention],
                 "gradient_checkpointing": s.grad_checkpointing == "full"})
    if s.grad_checkpointing == "full":
        data["gradient_checkpointing_kwargs"] = {"use_reentrant": False}
    if s.activation_offload:
        data["activation_offloading"] = True
    if s.compile:
        data["torch_compile"] = True
    data.update({"plugins": [LIGER], "liger_rope": True, "liger_rms_norm": True, "liger_glu_activation": True,
                 "liger_fused_linear_cross_entropy": s.loss == "fused-linear" and not dpo})
    if s.loss == "chunked" and not dpo:
        data.update({"chunked_cross_entropy": True, "chunked_cross_entropy_num_chunks": s.loss_chunks})
    kind = backend(s)
    if kind == "deepspeed":
        data["deepspeed"] = deepspeed.FILE
    elif kind.startswith("fsdp"):
        fsdp = fsdp_settings(s, accelerate_names=True)
        data["fsdp_version"] = fsdp.pop("version")
        data["fsdp_config"] = {k: v for k, v in fsdp.items() if k not in ("sharding_strategy", "backward_prefetch",
                                                                         "forward_prefetch")}
        data["fsdp_config"]["reshard_after_forward"] = True  # FULL_SHARD (FSDP1), fully_shard's default (FSDP2)
    data.update(save_fields(plan))
    data["auto_resume_from_checkpoints"] = True  # the newest checkpoint in output_dir, after an interruption
    data.update({"save_total_limit": oh.CHECKPOINTS_KEPT, "logging_steps": 10})
    return data


def command(plan: LaunchPlan, *, multinode_env: bool = False, output_dir: str | None = None) -> list[str]:
    """``axolotl train`` with torchrun as its launcher: the launcher's options follow ``--`` (axolotl
    ``cli/utils/train.py`` ``_launch_torchrun_training``: ``torchrun <options> -m axolotl.cli.train axolotl.yaml``)."""
    argv = ["axolotl", "train", FILE]
    if output_dir:
        argv += ["--output-dir", output_dir]
    return [*argv, "--launcher", "torchrun", "--", *launcher(plan, multinode_env=multinode_env)[1:]]


def notes(plan: LaunchPlan, opts: LaunchOptions | None = None) -> list[str]:
    s = plan.scenario
    out = [f"run: bash {SCRIPT}; checked against axolotl {VERSION}'s config schema"]
    if plan.num_nodes > 1:
        out.append(f"{plan.num_nodes} machines: run {SCRIPT} on each with NODE_RANK and MASTER_ADDR set")
    out += save_note(plan)
    if is_dpo(s):
        hub = local_file(dataset_for(s, opts or LaunchOptions())) is None
        out.append("DPO: micro_batch_size counts pairs, each two rows of up to sequence_len tokens; " + (
            "the pairs are read as whole chosen/rejected conversations (chat_template.argilla_chat): for "
            "prompt/chosen/rejected records set type chat_template.default and field_messages prompt" if hub else
            "the pairs' form was read from the file"))
    if s.attention == "sdpa" and dtype_flags(s)["bf16"] and not is_dpo(s) and plan.gpu.compute_capability != "9.0":
        out.append("axolotl warns that sample packing under SDPA in bf16 may give a zero loss except on sm_90 "
                   "(check_sample_packing_w_sdpa_bf16): plan attention flash if it does")
    if s.transformers_version and s.loss == "full":
        out.append(f"the plan's loss follows transformers {s.transformers_version}; axolotl {VERSION} runs "
                   "transformers 5, whose loss keeps compute-dtype logits and no shifted copy: no more memory than "
                   "planned, less in the forward")
    if s.method == "qlora" and s.qlora_fp32_upcast:
        out.append("the plan upcasts the non-4-bit weights to fp32; axolotl casts the embeddings and norms back to "
                   "bf16 after prepare_model_for_kbit_training (loaders/model.py): a little less memory than planned")
    return out


def files(plan: LaunchPlan, opts: LaunchOptions) -> list[LaunchFile]:
    out = [LaunchFile(name=FILE, target=NAME, text=yaml_text(plan, config(plan, opts), notes(plan, opts)),
                      reader="axolotl train axolotl.yaml (Axolotl: AxolotlInputConfig)"),
           LaunchFile(name=SCRIPT, target=NAME, text=shell_text(plan, command(plan)), reader="bash (axolotl train)",
                      executable=True)]
    if backend(plan.scenario) == "deepspeed":
        out += [LaunchFile(name=f.name, target=NAME, text=f.text, reader="DeepSpeed, via axolotl's deepspeed: key")
                for f in deepspeed.files(plan, opts)]
    return out


# prompt and completion records as axolotl's user-defined instruct format: the prompt alone as the instruction, the
# completion as the output, trained on the output only (train_on_inputs defaults to false); axolotl
# docs/dataset-formats/index.qmd, "Custom Instruct Prompt Format"
PROMPT_COMPLETION = {"field_instruction": "prompt", "field_output": "completion", "format": "{instruction}",
                     "no_input_format": "{instruction}"}


def axolotl_dataset(opts: LaunchOptions, kind: str = "messages") -> dict[str, Any]:
    """One ``datasets`` entry for records of ``kind`` (:func:`~gpuplan.launchers.data.record_kind`): chat turns
    (``messages``, or ShareGPT's ``conversations`` of from/value: :func:`~gpuplan.launchers.data.chat_turns`)
    through the tokenizer's template, ``prompt``/``completion`` as a user-defined instruct format,
    ``text`` as axolotl's ``completion`` type (its field defaults to ``text``; docs/dataset-formats/index.qmd,
    "Pre-training without streaming"); a local file by its type."""
    column, sharegpt = chat_turns(opts)
    entry: dict[str, Any] = {"path": opts.dataset, "type": "chat_template", "field_messages": column}
    if sharegpt:  # docs/dataset-formats/index.qmd: message_property_mappings from the dataset's keys
        entry["message_property_mappings"] = {"role": "from", "content": "value"}
    if kind == "prompt-completion":
        entry = {"path": opts.dataset, "type": dict(PROMPT_COMPLETION)}
    elif kind == "text":
        entry = {"path": opts.dataset, "type": "completion"}
    local = local_file(opts)
    if local is not None:
        entry.update({"path": local[0], "data_files": local[1]})
    return entry


def dpo_settings(plan: LaunchPlan, opts: LaunchOptions) -> dict[str, Any]:
    """A DPO plan in axolotl's keys (axolotl 0.18.0 docs/rlhf.qmd "DPO"; ``core/trainers/dpo/__init__.py``
    ``DPOStrategy.set_training_args_kwargs`` and ``core/builders/rl.py`` pass them to TRL's DPOConfig): ``rl: dpo``,
    ``rl_beta`` at TRL's default, the sigmoid loss the plan costs (``dpo_loss_type``), ``precompute_ref_log_probs``
    from the scenario, the pairs as a preference dataset (:func:`dpo_dataset`); ``sequence_len`` becomes DPOConfig's
    ``max_length`` (the pair's longer row, as the plan counts it) and ``micro_batch_size`` counts pairs. No sample
    packing (``check_sample_packing_w_rl`` refuses it): the DPOTrainer pads each batch of pairs."""
    return {"rl": "dpo", "rl_beta": DPO_BETA, "dpo_loss_type": ["sigmoid"],
            "precompute_ref_log_probs": bool(plan.scenario.precompute_ref_log_probs),
            "datasets": [dpo_dataset(dataset_for(plan.scenario, opts))]}


def dpo_dataset(opts: LaunchOptions) -> dict[str, Any]:
    """One DPO ``datasets`` entry (axolotl 0.18.0 ``utils/schemas/datasets.py`` ``DPODataset``;
    ``prompt_strategies/dpo/chat_template.py``): records with a ``prompt`` (TRL's explicit preference form, its
    prompt a message list or text, each reply a message list or text) as ``chat_template.default`` with
    ``field_messages: prompt``; records of whole ``chosen`` and ``rejected`` conversations (TRL's implicit-prompt
    form, trl-lib/ultrafeedback_binarized) as ``chat_template.argilla_chat``. A local file is read for its form; a
    Hugging Face id is taken in the implicit form (:func:`notes` says so)."""
    entry: dict[str, Any] = {"path": opts.dataset, "split": "train"}
    local = local_file(opts)
    if local is not None:
        entry.update({"path": local[0], "data_files": [local[1]]})
    if explicit_prompt(opts):
        return {**entry, "type": "chat_template.default", "field_messages": "prompt", "field_chosen": "chosen",
                "field_rejected": "rejected"}
    return {**entry, "type": "chat_template.argilla_chat"}
