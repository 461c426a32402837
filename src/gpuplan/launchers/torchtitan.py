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

from pathlib import Path
from typing import Any

from .. import overheads as oh
from ..stacks.releases import TORCHTITAN_VERSION as VERSION
from .data import local_file
from .files import LaunchFile, comment, shell_text, toml_text
from .plan import LaunchPlan
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
CUSTOM = "gpuplan_model"  # the module torchtitan imports first (experimental.custom_import): the model to build
LLAMA2_TOKENIZER = ("hf-internal-testing/llama-tokenizer", "tokenizer.json")  # Llama 2's 32,000-token tokenizer
DATASET = "c4"  # the dataset torchtitan 0.1.0 registers (datasets/hf_datasets.py DATASETS), as its recipes use


def applies(plan: LaunchPlan) -> str | None:
    s = plan.scenario
    if NAME not in plan.stack_targets:
        return "the plan is not for stack torchtitan (set --stack torchtitan to plan a torchtitan job)"
    if plan.model.name not in FLAVORS and not buildable(plan):
        return (f"torchtitan {VERSION} builds its own Llama 3 (8B, 70B, 405B) and, from a config, Llama-style models "
                f"with untied embeddings (or a size-only model), not {plan.model.name}")
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


def buildable(plan: LaunchPlan) -> bool:
    """Whether torchtitan's Llama builds the plan's model from its shape (:mod:`custom`): a size-only model, or a
    Llama with untied embeddings (torchtitan's ``Transformer`` has a separate output layer)."""
    m = plan.model
    return plan.synthetic or (m.family == "llama" and not m.tie_word_embeddings and not m.is_moe)


def custom(plan: LaunchPlan) -> bool:
    """Whether the run builds the model from ``gpuplan_model.py`` rather than one of torchtitan's own flavors: a
    model torchtitan has no flavor of, or a plan that brings its own tokenizer or data (registered there)."""
    return plan.model.name not in FLAVORS or bool({"tokenizer", "dataset"} & set(plan.inputs))


def model_args(plan: LaunchPlan) -> dict[str, Any]:
    """``TransformerModelArgs`` of the plan's model (torchtitan ``models/llama3/model/args.py``). torchtitan sizes the
    MLP as ``multiple_of * ceil(int(ffn_dim_multiplier * int(8 dim / 3)) / multiple_of)``
    (``model.py`` ``FeedForward``): ``multiple_of`` 1 and a multiplier of ``(width + 0.5) / int(8 dim / 3)`` give the
    model's width exactly (a test builds it on the meta device and counts its parameters). The vocabulary comes from
    the tokenizer (``update_from_config``)."""
    from ..tensors.activations import INPUT_OF

    m = plan.model
    width = next(lin.in_features for lyr in m.layers for lin in lyr.linears
                 if INPUT_OF.get(lin.name) == "mlp_mid" and lin.group == "mlp")
    base = int(2 * 4 * m.hidden_size / 3)
    config = m.config or synthetic_config(plan)
    return {"dim": m.hidden_size, "n_layers": m.num_layers, "n_heads": m.num_heads, "n_kv_heads": m.num_kv_heads,
            "multiple_of": 1, "ffn_dim_multiplier": (width + 0.5) / base,
            "norm_eps": float(config.get("rms_norm_eps", 1e-5)), "rope_theta": float(config.get("rope_theta", 1e4))}


def synthetic_config(plan: LaunchPlan) -> dict[str, Any]:
    """The config.json of a size-only model (:func:`gpuplan.model.synthetic.config`), else {}."""
    from ..model.synthetic import config, nearest_size

    return config(nearest_size(plan.scenario.model_size)) if plan.synthetic else {}


def tokenizer_source(plan: LaunchPlan) -> tuple[str, list[str] | None]:
    """(the tokenizer the run reads, the command that downloads it or None): the plan's own (absolute); Llama 3's
    tiktoken file for torchtitan's flavors; else a ``tokenizer.json`` (``gpuplan_model.py`` reads it): Llama 2's
    32,000-token one for a size-only model, the local model folder's, or the hub model's."""
    name = plan.model.name
    if "tokenizer" in plan.inputs:
        return plan.inputs["tokenizer"], None
    if not custom(plan):
        return f"./{TOKENIZERS}/{FLAVORS[name][1]}", ["hf", "download", name, FLAVORS[name][1], "--local-dir",
                                                      TOKENIZERS]
    if "model" in plan.inputs:
        return str(Path(plan.inputs["model"]) / "tokenizer.json"), None
    repo, file = LLAMA2_TOKENIZER if plan.synthetic else (name, "tokenizer.json")
    return f"./{TOKENIZERS}/{file}", ["hf", "download", repo, file, "--local-dir", TOKENIZERS]


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
    replicate, shard = degrees(plan)
    steps = plan.max_steps
    local = s.micro_batch_size * (s.grad_accum_steps if s.pp > 1 else 1)
    name, flavor = ("gpuplan", "gpuplan") if custom(plan) else ("llama3", FLAVORS[plan.model.name][0])
    model: dict[str, Any] = {"name": name, "flavor": flavor, "tokenizer_path": tokenizer_source(plan)[0]}
    if s.precision == "fp8-mixed":
        model["converters"] = ["float8"]
    training: dict[str, Any] = {
        "dataset": "gpuplan" if "dataset" in plan.inputs else DATASET, "local_batch_size": local,
        "global_batch_size": s.micro_batch_size * s.grad_accum_steps * s.dp, "seq_len": s.seq_len,
        "max_norm": 1.0, "compile": bool(s.compile),
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
                         200 if steps is None else max(1, min(200, steps // 5)), **schedule(plan)},
        "training": training,
        "parallelism": parallelism,
        "checkpoint": {"enable_checkpoint": True, "folder": "checkpoint",
                       "interval": plan.save_steps or steps or 500, "keep_latest_k": oh.CHECKPOINTS_KEPT,
                       "last_save_model_weights_only": False},
        "activation_checkpoint": {"mode": mode, "selective_ac_option": option},
    }
    if custom(plan):
        out["experimental"] = {"custom_import": CUSTOM}
    if opts.max_steps:  # a smoke run (gpuplan.launchers.smoke): a few steps, each logged, the last saved
        out["training"]["steps"] = out["checkpoint"]["interval"] = opts.max_steps
        out["metrics"]["log_freq"] = 1
        out["lr_scheduler"]["warmup_steps"] = min(out["lr_scheduler"]["warmup_steps"], max(1, opts.max_steps // 3))
    if s.precision == "fp8-mixed":
        sharded = shard > 1
        out["float8"] = {"enable_fsdp_float8_all_gather": sharded, "precompute_float8_dynamic_scale_for_fsdp": sharded,
                         "force_recompute_fp8_weight_in_bwd": sharded, "filter_fqns": ["output"]}
    return out


MODULE = '''
import dataclasses

from torchtitan.components.tokenizer import Tokenizer
from torchtitan.datasets import hf_datasets
from torchtitan.models.llama3 import TransformerModelArgs, llama3_configs
from torchtitan.protocols.train_spec import get_train_spec, register_train_spec


class HuggingFaceTokenizer(Tokenizer):
    """A tokenizer.json (Hugging Face tokenizers) as torchtitan's Tokenizer: encode(text, bos, eos), n_words."""

    def __init__(self, path):
        from tokenizers import Tokenizer as Fast

        super().__init__()
        self.fast = Fast.from_file(path)
        self._n_words = self.fast.get_vocab_size()
        vocab = self.fast.get_vocab()
        named = [vocab[t] for t in ("<|endoftext|>", "</s>", "<|end_of_text|>", "<eos>") if t in vocab]
        self.eos_id = named[0] if named else self._n_words - 1
        start = [vocab[t] for t in ("<s>", "<|begin_of_text|>", "<bos>") if t in vocab]
        self.bos_id = start[0] if start else None

    def encode(self, text, bos=False, eos=False):
        ids = self.fast.encode(text, add_special_tokens=False).ids
        return ([self.bos_id] if bos and self.bos_id is not None else []) + ids + ([self.eos_id] if eos else [])

    def decode(self, ids):
        return self.fast.decode(ids)


def text_of(sample):
    """A record as one text: its "text", a chat's turns one per line, or prompt and completion."""
    if "text" in sample:
        return sample["text"]
    if "messages" in sample:
        return "\\n".join(str(m.get("content", "")) for m in sample["messages"])
    return str(sample.get("prompt", "")) + str(sample.get("completion", ""))


llama3_configs["gpuplan"] = TransformerModelArgs(**MODEL)
register_train_spec(dataclasses.replace(get_train_spec("llama3"), name="gpuplan",
                                        build_tokenizer_fn=lambda job: HuggingFaceTokenizer(job.model.tokenizer_path)))
if DATA is not None:
    from datasets import load_dataset

    hf_datasets.DATASETS["gpuplan"] = hf_datasets.DatasetConfig(
        path=DATA[1], loader=lambda path: load_dataset(DATA[0], data_files=path, split="train"), text_processor=text_of)
'''


def module(plan: LaunchPlan, opts: LaunchOptions) -> str:
    """``gpuplan_model.py``: the model's shape registered as torchtitan flavor ``gpuplan`` (built from random
    weights), a ``tokenizer.json`` reader (torchtitan 0.1.0 reads tiktoken files only), and the plan's local dataset
    registered as ``gpuplan`` (``hf_datasets.DATASETS``), each record's text tokenized as it streams."""
    local = local_file(opts) if "dataset" in plan.inputs else None
    return (comment([*plan.header(), f"imported by torchtitan first (experimental.custom_import = {CUSTOM!r})"]) +
            f"MODEL = {model_args(plan)!r}\nDATA = {local!r}  # (datasets builder, file) or None\n" + MODULE)


def schedule(plan: LaunchPlan) -> dict[str, Any]:
    """The decay after the warm-up: the recipe's cosine down to its floor (``lr_min``, a share of the peak; GPT-3's
    10 % for pretraining), linear where the recipe keeps a constant rate (torchtitan has no constant decay)."""
    r = plan.recipe
    if r is None:
        return {}
    return {"decay_type": "cosine" if r.schedule == "cosine" else "linear", "lr_min": r.min_lr_ratio}


def command(plan: LaunchPlan, *, multinode_env: bool = False) -> list[str]:
    return [*launcher(plan, multinode_env=multinode_env), "-m", "torchtitan.train", "--job.config_file", FILE]


def download(plan: LaunchPlan) -> list[str] | None:
    """The tokenizer torchtitan reads, downloaded (its README: ``scripts/download_tokenizer.py``; the same file with
    the Hugging Face CLI); None when it is a local file."""
    return tokenizer_source(plan)[1]


def notes(plan: LaunchPlan) -> list[str]:
    s = plan.scenario
    fetch = "downloads the tokenizer, then " if download(plan) else ""
    out = [f"run: bash {SCRIPT} ({fetch}torchrun -m torchtitan.train); torchtitan {VERSION}",
           "torchtitan starts from random weights (pre-training): to fine-tune, convert Meta's original checkpoint "
           "with torchtitan's scripts/convert_llama_to_dcp.py and set checkpoint.initial_load_path"]
    if custom(plan):
        out.append(f"{CUSTOM}.py: the model's shape as flavor 'gpuplan' (built from random weights), a tokenizer.json "
                   "reader" + (", and your dataset as 'gpuplan', tokenized as it streams" if "dataset" in plan.inputs
                               else ""))
    if "dataset" not in plan.inputs:
        out.append(f"dataset {DATASET} (streamed from the hub, tokenized as it streams): pass --dataset to train on "
                   "your own file")
    if plan.max_steps is None:
        out.append("no train_tokens in the plan: training.steps is left at torchtitan's default (10,000)")
    if s.precision == "fp8-mixed" and not s.compile:
        out.append("float8 without compile runs unfused casts: torchtitan recommends training.compile true")
    return out


def files(plan: LaunchPlan, opts: LaunchOptions) -> list[LaunchFile]:
    script = shell_text(plan, command(plan), before=[d for d in [download(plan)] if d])
    extra = [LaunchFile(name=f"{CUSTOM}.py", target=NAME, text=module(plan, opts),
                        reader="torchtitan.train (experimental.custom_import)")] if custom(plan) else []
    return [*extra, LaunchFile(name=FILE, target=NAME, text=toml_text(plan, tables(plan, opts), notes(plan)),
                       reader="torchrun -m torchtitan.train --job.config_file torchtitan.toml"),
            LaunchFile(name=SCRIPT, target=NAME, text=script, reader="bash (hf download, torchrun torchtitan.train)",
                       executable=True)]
