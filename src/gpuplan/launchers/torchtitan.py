"""``torchtitan.toml`` and ``torchtitan-run.sh``: a plan for ``stack torchtitan`` as the job config that
``torchrun ... -m torchtitan.train --job.config_file torchtitan.toml`` reads (torchtitan 0.1.0
``config_manager.py``: ``ConfigManager.parse_args`` loads the TOML into ``JobConfig``, section by section).

The sections carry what decides memory and time: ``[model]`` the llama3 flavor (torchtitan builds its own Llama,
``models/llama3/__init__.py`` ``llama3_configs``: 8B, 70B, 405B) and the ``float8`` converter for ``fp8-mixed``;
``[training]`` the micro-batch (``local_batch_size``), the accumulation (``global_batch_size = local x
accumulation x data-parallel ranks``, from which ``train.py`` derives ``gradient_accumulation_steps``), ``seq_len``,
``steps`` from ``train_tokens``, ``compile``, CPU offload, and the FSDP2 mixed precision (``mixed_precision_param``
bf16 over fp32 shards, ``mixed_precision_reduce`` fp32, as the memory estimate assumes); ``[parallelism]`` the
replicate (DDP) and shard (FSDP2) degrees, tensor and pipeline parallel; ``[activation_checkpoint]`` ``none``,
``full``, per-op ``selective`` (``selective_ac_option = "op"``) or one block in N (``"N"``); ``[checkpoint]`` the
spot plan's interval; ``[float8]`` the FSDP float8 all-gather torchtitan recommends for tensorwise scaling
(``docs/float8.md``). With pipeline parallelism the local batch is split into micro-batches of the plan's
micro-batch size, which the pipeline schedule runs (``pipeline_parallel_microbatch_size``).
"""

from __future__ import annotations

from typing import Any

from .. import overheads as oh
from .files import LaunchFile, shell_text, toml_text
from .plan import LaunchPlan
from .settings import TORCHTITAN_VERSION as VERSION
from .settings import LaunchOptions
from .torchrun import launcher

NAME = "torchtitan"
FILE = "torchtitan.toml"
SCRIPT = "torchtitan-run.sh"
TOKENIZERS = "assets/tokenizer"  # where torchtitan's README puts the downloaded tokenizer
# gpuplan's models that torchtitan 0.1.0 builds (llama3_configs; the test builds each on the meta device and
# counts gpuplan's parameters), with the tiktoken file torchtitan reads from the model's repository
FLAVORS = {
    "meta-llama/Llama-3.1-8B": ("8B", "original/tokenizer.model"),
    "meta-llama/Meta-Llama-3-8B": ("8B", "original/tokenizer.model"),
    "meta-llama/Llama-3.1-70B": ("70B", "original/tokenizer.model"),
    "meta-llama/Meta-Llama-3-70B": ("70B", "original/tokenizer.model"),
    "meta-llama/Llama-3.3-70B-Instruct": ("70B", "original/tokenizer.model"),
    "meta-llama/Llama-3.1-405B": ("405B", "original/mp8/tokenizer.model"),
}
DATASET = "c4"  # the dataset torchtitan 0.1.0 registers (datasets/hf_datasets.py DATASETS), as its recipes use


def applies(plan: LaunchPlan) -> str | None:
    s = plan.scenario
    if not plan.train or s.stack != "torchtitan":
        return "the plan is not for stack torchtitan (set --stack torchtitan to plan a torchtitan job)"
    if plan.model.name not in FLAVORS:
        return (f"torchtitan {VERSION} builds its own Llama 3 (8B, 70B, 405B), not {plan.model.name}: plan one of "
                f"{', '.join(FLAVORS)}")
    if s.loss != "full":
        return f"torchtitan {VERSION}'s loss is cross-entropy on the full logits: plan with loss full, not {s.loss}"
    if s.attention == "eager":
        return "torchtitan's Llama runs SDPA attention: plan with attention sdpa or flash, not eager"
    if s.precision != "fp32" and (s.tp > 1 or s.pp > 1) and s.sharded_by != "fsdp2":
        return ("torchtitan computes in bf16 under tensor or pipeline parallelism only with FSDP (maybe_enable_amp "
                "turns autocast off otherwise): shard the data-parallel ranks with sharding fsdp, or plan fp32")
    if s.sharded_by == "ddp" and (s.tp > 1 or s.pp > 1):
        return "torchtitan's DDP runs on a one-dimensional mesh: use sharding fsdp with tensor or pipeline parallelism"
    return None


def degrees(plan: LaunchPlan) -> tuple[int, int]:
    """(``data_parallel_replicate_degree``, ``data_parallel_shard_degree``): DDP replicates, FSDP2 shards."""
    s = plan.scenario
    if s.sharded_by == "fsdp2":
        return 1, s.dp
    return (s.dp, 1) if s.sharded_by == "ddp" else (1, 1)


def checkpointing(plan: LaunchPlan) -> tuple[str, str]:
    """(``mode``, ``selective_ac_option``) of ``[activation_checkpoint]``: per-op selective is ``"op"``; full
    checkpointing of one block in N is torchtitan's selective mode with option ``"N"``
    (``parallelize._apply_ac_to_transformer_block``)."""
    s = plan.scenario
    if s.grad_checkpointing == "selective":
        return "selective", "op"
    if s.grad_checkpointing == "full":
        return ("selective", str(s.checkpoint_every)) if s.checkpoint_every > 1 else ("full", "op")
    return "none", "op"


def tables(plan: LaunchPlan, opts: LaunchOptions) -> dict[str, dict[str, Any]]:
    s = plan.scenario
    flavor, tokenizer = FLAVORS[plan.model.name]
    replicate, shard = degrees(plan)
    steps = plan.max_steps
    local = s.micro_batch_size * (s.grad_accum_steps if s.pp > 1 else 1)
    model: dict[str, Any] = {"name": "llama3", "flavor": flavor, "tokenizer_path": f"./{TOKENIZERS}/{tokenizer}"}
    if s.precision == "fp8-mixed":
        model["converters"] = ["float8"]
    training: dict[str, Any] = {
        "dataset": DATASET, "local_batch_size": local, "global_batch_size": s.micro_batch_size * s.grad_accum_steps *
        s.dp, "seq_len": s.seq_len, "max_norm": 1.0, "compile": bool(s.compile),
        "enable_cpu_offload": s.offload == "optimizer+params",
        "mixed_precision_param": "float32" if s.precision == "fp32" else "bfloat16",
        "mixed_precision_reduce": "float32"}
    if steps is not None:
        training["steps"] = steps
    parallelism: dict[str, Any] = {"data_parallel_replicate_degree": replicate, "data_parallel_shard_degree": shard,
                                   "fsdp_reshard_after_forward": "default", "tensor_parallel_degree": s.tp,
                                   "pipeline_parallel_degree": s.pp, "context_parallel_degree": 1}
    if s.pp > 1:
        parallelism.update({"pipeline_parallel_schedule": "1F1B",
                            "pipeline_parallel_microbatch_size": s.micro_batch_size})
    mode, option = checkpointing(plan)
    out = {
        "job": {"dump_folder": opts.output_dir, "description": f"gpuplan: {plan.model.name}, {plan.setup_label}"},
        "metrics": {"log_freq": 10},
        "model": model,
        "optimizer": {"name": "AdamW", "lr": plan.recipe.learning_rate if plan.recipe else 3e-4, "eps": 1e-8,
                      "implementation": s.optimizer_impl, "early_step_in_backward": bool(s.optimizer_in_backward)},
        # the recipe's warm-up; without one "normally 1/5 of --training.steps" (config_manager.py LRScheduler), at
        # most the recipes' 200
        "lr_scheduler": {"warmup_steps": plan.recipe.warmup_steps if plan.recipe and plan.recipe.warmup_steps else
                         200 if steps is None else max(1, min(200, steps // 5))},
        "training": training,
        "parallelism": parallelism,
        "checkpoint": {"enable_checkpoint": True, "folder": "checkpoint",
                       "interval": plan.save_steps or steps or 500, "keep_latest_k": oh.CHECKPOINTS_KEPT,
                       "last_save_model_weights_only": False},
        "activation_checkpoint": {"mode": mode, "selective_ac_option": option},
    }
    if s.precision == "fp8-mixed":
        sharded = shard > 1
        out["float8"] = {"enable_fsdp_float8_all_gather": sharded, "precompute_float8_dynamic_scale_for_fsdp": sharded,
                         "force_recompute_fp8_weight_in_bwd": sharded, "filter_fqns": ["output"]}
    return out


def command(plan: LaunchPlan, *, multinode_env: bool = False) -> list[str]:
    return [*launcher(plan, multinode_env=multinode_env), "-m", "torchtitan.train", "--job.config_file", FILE]


def download(plan: LaunchPlan) -> list[str]:
    """The tokenizer torchtitan reads (its README: ``scripts/download_tokenizer.py``; the same file with the
    Hugging Face CLI)."""
    return ["hf", "download", plan.model.name, FLAVORS[plan.model.name][1], "--local-dir", TOKENIZERS]


def notes(plan: LaunchPlan) -> list[str]:
    s = plan.scenario
    out = [f"run: bash {SCRIPT} (downloads the tokenizer, then torchrun -m torchtitan.train); torchtitan {VERSION}",
           "torchtitan starts from random weights (pre-training): to fine-tune, convert Meta's original checkpoint "
           "with torchtitan's scripts/convert_llama_to_dcp.py and set checkpoint.initial_load_path",
           f"dataset {DATASET}: torchtitan reads the datasets it registers (torchtitan/datasets/hf_datasets.py); "
           "register yours there to train on it"]
    if plan.max_steps is None:
        out.append("no train_tokens in the plan: training.steps is left at torchtitan's default (10,000)")
    if s.precision == "fp8-mixed" and not s.compile:
        out.append("float8 without compile runs unfused casts: torchtitan recommends training.compile true")
    return out


def files(plan: LaunchPlan, opts: LaunchOptions) -> list[LaunchFile]:
    script = shell_text(plan, command(plan), before=[download(plan)])
    return [LaunchFile(name=FILE, target=NAME, text=toml_text(plan, tables(plan, opts), notes(plan)),
                       reader="torchrun -m torchtitan.train --job.config_file torchtitan.toml"),
            LaunchFile(name=SCRIPT, target=NAME, text=script, reader="bash (hf download, torchrun torchtitan.train)",
                       executable=True)]
