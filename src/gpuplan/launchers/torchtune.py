"""``torchtune.yaml`` and ``tune-run.sh``: a plan for ``stack torchtune`` as a torchtune recipe config
(``tune run <recipe> --config torchtune.yaml``; torchtune 0.6 recipe configs, ``recipes/configs/*``).

The model builder, tokenizer and checkpoint files are those of torchtune's own config for the model
(``data/torchtune.yaml``, captured from torchtune's recipe configs by ``tests/data/torchtune/capture.py``); the
plan sets what decides memory and time: the recipe (full or LoRA, single device or distributed), ``batch_size``,
``gradient_accumulation_steps``, ``tokenizer.max_seq_len`` with a packed dataset (every micro-batch holds
``seq_len`` tokens), ``dtype``, ``enable_activation_checkpointing``, ``enable_activation_offloading``, ``compile``,
``optimizer_in_bwd``, the loss (``CEWithChunkedOutputLoss`` with ``num_output_chunks``, or full cross-entropy),
the LoRA rank and the modules it adapts, ``fsdp_cpu_offload``, and ``max_steps_per_epoch`` from ``train_tokens``.
"""

from __future__ import annotations

import math
from functools import cache
from pathlib import Path
from typing import Any

from ..datafiles import read_yaml
from ..errors import GpuplanError
from .data import DPO_BETA, chat_turns, explicit_prompt, local_file, record_kind
from .files import Interpolation, LaunchFile, Raw, shell_text, yaml_text
from .plan import LaunchPlan
from .settings import LaunchOptions, dataset_for, is_dpo

NAME = "torchtune"
FILE = "torchtune.yaml"
SCRIPT = "tune-run.sh"
ATTENTION = {"q_proj": "q_proj", "k_proj": "k_proj", "v_proj": "v_proj", "o_proj": "output_proj"}
MLP = {"gate_proj", "up_proj", "down_proj"}
OPTIMIZERS = {"adamw": {"_component_": "torch.optim.AdamW", "fused": True},
              "adamw-8bit": {"_component_": "bitsandbytes.optim.AdamW8bit"},
              "paged-adamw-8bit": {"_component_": "bitsandbytes.optim.PagedAdamW8bit"},
              "sgd": {"_component_": "torch.optim.SGD"},
              "sgd-momentum": {"_component_": "torch.optim.SGD", "momentum": 0.9}}


@cache
def models() -> dict[str, Any]:
    """torchtune's model builders per bundled model (``data/torchtune.yaml``), read as every bundled YAML file is
    (:func:`gpuplan.datafiles.read_yaml`)."""
    return read_yaml("torchtune.yaml")["models"]


def entry_of(plan: LaunchPlan) -> dict[str, Any] | None:
    """How torchtune builds the plan's model: a bundled model's recipe entry (data/torchtune.yaml), or for a local
    Qwen2-family folder with a byte-level BPE (vocab.json, merges.txt, tokenizer.json) the component builders
    ``torchtune.models.qwen2.qwen2`` / ``lora_qwen2`` (0.6.1 ``_component_builders.py``) with its shape, its
    tokenizer with the folder's own special tokens (``qwen2_tokenizer(special_tokens_path=tokenizer.json)``), and
    its safetensors read as ``QWEN2``."""
    if plan.model.name in models():
        return {**models()[plan.model.name], "folder": f"models/{plan.model.name.split('/')[-1]}", "args": {}}
    folder = plan.inputs.get("model")
    files = ("vocab.json", "merges.txt", "tokenizer.json", "model.safetensors")
    if plan.model.family != "qwen2" or folder is None or not all((Path(folder) / f).is_file() for f in files):
        return None
    m, c = plan.model, plan.model.config
    args = {"vocab_size": m.vocab_size, "num_layers": m.num_layers, "num_heads": m.num_heads,
            "num_kv_heads": m.num_kv_heads, "embed_dim": m.hidden_size, "intermediate_dim": m.intermediate_size,
            "max_seq_len": m.max_context or plan.scenario.seq_len, "norm_eps": float(c.get("rms_norm_eps", 1e-6)),
            "rope_base": float(c.get("rope_theta", 1e6)), "tie_word_embeddings": m.tie_word_embeddings}
    return {"config": "qwen2_5/0.5B_lora_single_device", "folder": folder, "args": args,
            "builders": {"full": "torchtune.models.qwen2.qwen2", "lora": "torchtune.models.qwen2.lora_qwen2"},
            "tokenizer": {"_component_": "torchtune.models.qwen2.qwen2_tokenizer", "path": "vocab.json",
                          "merges_file": "merges.txt", "special_tokens_path": "tokenizer.json"},
            "checkpoint_files": ["model.safetensors"], "model_type": "QWEN2"}


def applies(plan: LaunchPlan) -> str | None:
    s = plan.scenario
    if NAME not in plan.stack_targets:
        return "the plan is not for stack torchtune (set --stack torchtune to plan a torchtune recipe)"
    entry = entry_of(plan)
    if entry is None:
        return (f"torchtune ships no recipe config for {plan.model.name}; gpuplan knows torchtune builders for "
                f"{', '.join(models())}")
    if s.method not in entry["builders"]:
        return f"torchtune has no {s.method} builder for {plan.model.name}"
    if s.optimizer not in OPTIMIZERS:
        return f"torchtune recipes take a torch or bitsandbytes optimizer: {s.optimizer} has no builder here"
    if s.offload == "optimizer":
        return "torchtune offloads with FSDP2 (parameters, gradients and optimizer together): set offload " \
               "optimizer+params"
    try:
        _lora_modules(s)
    except ValueError as err:
        return str(err)
    return None


def dpo_refusal(plan: LaunchPlan, opts: LaunchOptions) -> str | None:
    """A local preference file with a ``prompt`` column: torchtune's ``preference_dataset`` reads whole chosen and
    rejected conversations (0.6.1 ``data/_messages.py`` ``ChosenRejectedToMessages``)."""
    if is_dpo(plan.scenario) and explicit_prompt(dataset_for(plan.scenario, opts)):
        return ("torchtune's preference_dataset reads whole chosen and rejected conversations "
                "(ChosenRejectedToMessages), and this file has a prompt column: put the prompt's turns at the start "
                "of both, or plan stack hf")
    return None


def recipe(plan: LaunchPlan) -> str:
    """The recipe: ``{full,lora}_finetune_{single_device,distributed}``, or for DPO torchtune 0.6.1's
    ``lora_dpo_single_device``, ``lora_dpo_distributed`` or ``full_dpo_distributed`` (its recipe registry; no
    single-device full DPO, which the plan refuses)."""
    s = plan.scenario
    where = "single_device" if s.world_size == 1 else "distributed"
    if is_dpo(s):
        return f"{'full' if s.method == 'full' else 'lora'}_dpo_{where}"
    return f"{'full_finetune' if s.method == 'full' else 'lora_finetune'}_{where}"


def _dataset(plan: LaunchPlan, opts: LaunchOptions, local: tuple[str, str] | None) -> dict[str, Any]:
    """The ``dataset`` entry for the records' form (:func:`~gpuplan.launchers.data.record_kind`), torchtune 0.6
    builders: chat turns by ``chat_dataset`` (OpenAI style, or ShareGPT's from/value turns in its sharegpt
    style); ``prompt``/``completion`` by ``instruct_dataset`` with its ``column_map`` (``input``, ``output``), the
    prompt masked as the estimate counts it; ``text`` by ``text_completion_dataset`` (every token trained)."""
    s, r = plan.scenario, plan.recipe
    kind = record_kind(plan)
    where = {"source": local[0] if local else opts.dataset, **({"data_files": local[1]} if local else {})}
    if is_dpo(s):  # whole chosen and rejected conversations (ChosenRejectedToMessages), padded per batch
        return {"_component_": "torchtune.datasets.preference_dataset", **where, "split": "train"}
    packed = {"packed": (s.packing or "bfd") in ("bfd", "wrapped")}
    if kind == "prompt-completion":
        return {"_component_": "torchtune.datasets.instruct_dataset", **where,
                "column_map": {"input": "prompt", "output": "completion"}, "split": "train", "train_on_input": False,
                **packed}
    if kind == "text":
        return {"_component_": "torchtune.datasets.text_completion_dataset", **where, "column": "text",
                "split": "train", **packed}
    column, sharegpt = chat_turns(opts)  # ShareGPT's from/value turns: torchtune's sharegpt style
    return {"_component_": "torchtune.datasets.chat_dataset", **where, "conversation_column": column,
            "conversation_style": "sharegpt" if sharegpt else "openai", "split": "train",
            "train_on_input": not (r is not None and r.assistant_only), **packed}


def _lora_modules(s) -> tuple[list[str], bool, bool]:
    """peft-style targets as torchtune's ``lora_attn_modules``, ``apply_lora_to_mlp``, ``apply_lora_to_output``
    (``all-linear`` = every linear of the decoder layers, not the output head, as peft reads it)."""
    if s.lora_targets == "all-linear":
        return ["q_proj", "k_proj", "v_proj", "output_proj"], True, False
    names = set(s.lora_targets)
    mlp = names & MLP
    if mlp and mlp != MLP:
        raise ValueError("torchtune adapts the whole MLP or none of it: target gate_proj, up_proj and down_proj "
                         "together")
    unknown = names - set(ATTENTION) - MLP - {"lm_head"}
    if unknown:
        raise ValueError(f"torchtune's LoRA builders have no module {sorted(unknown)[0]!r}: use q_proj, k_proj, "
                         "v_proj, o_proj, the MLP projections or lm_head")
    return [ATTENTION[n] for n in ATTENTION if n in names], bool(mlp), "lm_head" in names


def config(plan: LaunchPlan, opts: LaunchOptions) -> dict[str, Any]:
    s, r = plan.scenario, plan.recipe
    opts = dataset_for(s, opts)  # a DPO plan that names no data: TRL's preference example
    local = local_file(opts)
    entry = entry_of(plan)
    folder = entry["folder"]
    model: dict[str, Any] = {"_component_": entry["builders"][s.method], **entry["args"]}
    if s.method != "full":
        attn, mlp, output = _lora_modules(s)
        model.update({"lora_attn_modules": attn, "apply_lora_to_mlp": mlp, "apply_lora_to_output": output,
                      "lora_rank": s.lora_rank, "lora_alpha": 2 * s.lora_rank, "lora_dropout": s.lora_dropout})
    tokenizer = {k: (f"{folder}/{v}" if k in ("path", "merges_file", "special_tokens_path") else v)
                 for k, v in entry["tokenizer"].items()}
    data: dict[str, Any] = {
        "output_dir": opts.output_dir, "model": model, "tokenizer": {**tokenizer, "max_seq_len": s.seq_len},
        "checkpointer": {"_component_": "torchtune.training.FullModelHFCheckpointer", "checkpoint_dir": folder,
                         "checkpoint_files": entry["checkpoint_files"], "recipe_checkpoint": None,
                         "output_dir": Interpolation("${output_dir}"), "model_type": entry["model_type"]},
        "resume_from_checkpoint": False,  # set true to resume from output_dir after an interruption (0.6: per epoch)
        "dataset": _dataset(plan, opts, local),
        "seed": None, "shuffle": True, "batch_size": s.micro_batch_size,
        "optimizer": {**OPTIMIZERS[s.optimizer], "lr": r.learning_rate if r else 2e-5 if s.method == "full" else
                      3e-4},
    }
    if s.method != "full":
        data["save_adapter_weights_only"] = False
    else:
        data["optimizer_in_bwd"] = bool(s.optimizer_in_backward)
    if s.method != "full" or r is not None:
        data["lr_scheduler"] = {"_component_": "torchtune.training.lr_schedulers.get_cosine_schedule_with_warmup",
                                "num_warmup_steps": r.warmup_steps if r else 100}
    data["loss"] = {"_component_": "torchtune.modules.loss.CEWithChunkedOutputLoss",
                    "num_output_chunks": s.loss_chunks} if s.loss == "chunked" else \
        {"_component_": "torch.nn.CrossEntropyLoss", "ignore_index": -100}
    if is_dpo(s):  # recipes/configs/llama3_1/8B_full_dpo.yaml: DPOLoss, and the reference's own checkpointer
        data["loss"] = {"_component_": "torchtune.rlhf.loss.DPOLoss", "beta": DPO_BETA, "label_smoothing": 0.0}
        if s.method == "full":
            data["ref_checkpointer"] = dict(data["checkpointer"])
    data.update({"epochs": 1 if opts.max_steps else math.ceil(r.epochs) if r and r.epochs else 1,
                 "max_steps_per_epoch": opts.max_steps or (None if r and r.epochs else plan.max_steps),
                 "gradient_accumulation_steps": s.grad_accum_steps, "clip_grad_norm": None,
                 "compile": bool(s.compile), "device": opts.device,
                 "dtype": "fp32" if s.precision == "fp32" else "bf16",
                 "enable_activation_checkpointing": s.grad_checkpointing != "none",
                 "enable_activation_offloading": bool(s.activation_offload)})
    if s.world_size > 1:
        data.update({"fsdp_cpu_offload": s.offload == "optimizer+params", "fsdp_reshard_after_forward": True})
    data.update({"metric_logger": {"_component_": "torchtune.training.metric_logging.DiskLogger",
                                   "log_dir": Interpolation("${output_dir}/logs")},
                 "log_every_n_steps": 1, "log_peak_memory_stats": True})
    return data


def command(plan: LaunchPlan, *, multinode_env: bool = False) -> list[str]:
    """``tune run``; with several GPUs it passes torchrun's own flags through. With ``multinode_env`` the node
    rank and the main node come from SkyPilot's environment."""
    argv = ["tune", "run"]
    if plan.scenario.world_size > 1:
        argv += ["--nproc_per_node", str(plan.gpus_per_node), "--nnodes", str(plan.num_nodes)]
        if plan.num_nodes > 1:
            rank, addr = (("$SKYPILOT_NODE_RANK", '"$(echo "$SKYPILOT_NODE_IPS" | head -n1):29500"') if multinode_env
                          else ('"${NODE_RANK:?set NODE_RANK to the rank of this node, 0 on the main one}"',
                                '"${MASTER_ADDR:?set MASTER_ADDR to the address of the main node}:29500"'))
            argv += ["--node_rank", Raw(rank), "--rdzv_backend", "c10d", "--rdzv_endpoint", Raw(addr)]
    return [*argv, recipe(plan), "--config", FILE]


def download(plan: LaunchPlan) -> list[str] | None:
    """``tune download`` of a bundled model's weights; None for a local folder."""
    if "model" in plan.inputs:
        return None
    return ["tune", "download", plan.model.name, "--output-dir", f"models/{plan.model.name.split('/')[-1]}"]


def notes(plan: LaunchPlan) -> list[str]:
    s = plan.scenario
    out = [f"run: bash {SCRIPT} (downloads the weights with tune download, then tune run {recipe(plan)}); from "
           f"torchtune's {entry_of(plan)['config']} config"]
    if is_dpo(s):
        out.append("DPO: batch_size counts pairs, each two rows of up to max_seq_len tokens; the data needs whole "
                   "chosen and rejected conversations (preference_dataset)")
    if s.grad_checkpointing == "selective" or s.checkpoint_every > 1:
        out.append("torchtune's LoRA and full recipes expose whole-layer checkpointing only: every layer is "
                   "checkpointed (less memory, slower than planned)")
    if s.torchtune_version:
        out.append(f"the plan follows torchtune {s.torchtune_version}; these are torchtune 0.6 configs, which "
                   "shard with FSDP2 and quantize NF4 weights in chunks: the run's memory differs from the plan")
    if plan.save_steps is not None:
        out.append(f"torchtune 0.6 saves at the end of each epoch, not every {plan.save_steps} steps: a spot "
                   "interruption loses the epoch")
    return out


def files(plan: LaunchPlan, opts: LaunchOptions) -> list[LaunchFile]:
    why = dpo_refusal(plan, opts)
    if why:
        raise GpuplanError(why)
    script = shell_text(plan, command(plan), before=[d for d in [download(plan)] if d])
    text = yaml_text(plan, config(plan, opts), notes(plan), expands="omegaconf")  # tune run reads it with OmegaConf
    return [LaunchFile(name=FILE, target=NAME, text=text,
                       reader=f"tune run {recipe(plan)} --config torchtune.yaml"),
            LaunchFile(name=SCRIPT, target=NAME, text=script, reader="bash (tune download, tune run)",
                       executable=True)]
