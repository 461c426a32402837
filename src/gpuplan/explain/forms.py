"""The page's form, read from the :class:`~gpuplan.scenario.Scenario` model: one input per field.

Literal fields become choices, bounded numbers keep their bounds, optional fields get an empty "(default)"
choice, fields that name a file a file input (the page uploads the file), and the field's description is its
hint. A field the model gains later (a stack, a technique) appears on the page without a change here: known
fields are placed in groups, new ones go to "more".
"""

from __future__ import annotations

import types
import typing
from typing import Any, Literal

import annotated_types as at
from pydantic import BaseModel
from pydantic_core import PydanticUndefined

from ..scenario import Scenario, modules
from ..scenario import fields as scenario

# Shown first, in this order (names the model lacks are skipped: `stack` appears once it exists).
PRIMARY = ("model", "task", "method", "stack", "precision", "tf32", "quant", "resolution", "seq_len",
           "micro_batch_size", "grad_checkpointing", "batch_size", "inference_steps", "audio_seconds", "timestamps",
           "prompt_tokens",
           "output_tokens", "decoder_tokens", "train_steps", "engine", "gpu", "num_gpus")
GROUPS = {
    "training": ("dataset", "tokenizer", "optimizer", "optimizer_impl", "lora_rank", "lora_targets", "lora_dropout",
                 "qlora_fp32_upcast", "adapter_dtype", "grad_accum_steps", "train_tokens", "dataset_gb",
                 "samples", "mean_tokens", "max_tokens", "epochs", "packing"),
    "techniques": ("loss", "loss_chunks", "activation_offload", "compile", "optimizer_in_backward",
                   "checkpoint_every"),
    "inference": ("shared_prefix_tokens", "kv_cache_dtype", "gpu_memory_utilization", "max_num_batched_tokens",
                  "speculative_method", "speculative_tokens", "acceptance_length", "draft_model"),
    "load": ("users", "think_time_s", "rate_rps", "length_spread", "num_requests", "preset"),
    "parallelism": ("num_nodes", "sharding", "tp", "pp", "ep", "attention_dp", "moe_dispatch", "offload",
                    "host_ram_gib", "extra_gpus", "tensor_split"),
    "pricing": ("provider", "pricing", "mtbi_hours", "disk_gbs", "max_price_age_days", "include_low_confidence"),
    "diffusion": ("cfg", "cpu_offload", "cache_latents", "text_encoders", "set_grads_to_none", "prior_preservation",
                  "blocks_to_swap"),
}
# The kinds of model the page plans (:func:`page_kind`), and the fields each reads beside the decoder LLM's: a
# diffusion pipeline, Whisper (speech), another encoder-decoder (T5, BART), an encoder (ViT, CLIP, SigLIP) and a text
# encoder (BERT, RoBERTa, DeBERTa, ModernBERT) are planned by gpuplan.plan.modules, whose resolver reads these and
# refuses the others (gpuplan.scenario.modules.reads: one model's own list, which the page is given with each bundled
# model); every other field is a decoder's.
KINDS = ("decoder", "diffusion", "speech", "encoder-decoder", "encoder", "text-encoder")
MODULE_READS = {page: (*modules.COMMON_READS, *modules.KIND_READS[kind]) for page, kind in
                (("diffusion", "diffusion"), ("speech", "whisper"), ("encoder-decoder", "encoder-decoder"),
                 ("encoder", "encoder"), ("text-encoder", "text-encoder"))}
MODULE_ONLY = frozenset(scenario.MODULE_FIELDS)
# fields of a module plan that mean something for one task only (gpuplan.scenario.modules)
MODULE_TASK = {"inference_steps": "infer", "cfg": "infer", "cpu_offload": "infer", "cache_latents": "train",
               "text_encoders": "train", "set_grads_to_none": "train", "prior_preservation": "train",
               "blocks_to_swap": "train", "timestamps": "infer",
               "train_steps": "train"}
# Fields that only mean something for one task (scenario.py; the normalized result drops them too), and those the
# form also hides for inference (they change nothing there).
TRAIN_ONLY = scenario.TRAIN_ONLY | scenario.TRAINING_LAYOUT
INFER_ONLY = scenario.INFER_ONLY
# Free-text fields whose values the page offers from a catalog.
SUGGEST = {"model": "models", "gpu": "gpus", "quant": "quants", "provider": "providers"}
# Fields that name a file: the page reads the chosen file and uploads it (web/uploads.py); the file types they take.
FILES = {"dataset": ".jsonl,.ndjson,.json,.parquet,.csv", "tokenizer": ".json"}
FILE_HINTS = {"dataset": "choose a .jsonl, .json, .parquet or .csv file: it is uploaded and tokenized as "
                         "`gpuplan estimate --dataset` does (up to 16 MiB)",
              "tokenizer": "the tokenizer.json that counts the dataset (default: the model's own, from the server's "
                           "Hugging Face cache)"}


class FieldSpec(BaseModel):
    """One input of the form."""

    name: str
    label: str
    kind: Literal["choice", "int", "float", "bool", "text", "list", "file"]
    choices: list[str] = []
    optional: bool = False
    required: bool = False
    default: Any = None
    minimum: float | None = None
    maximum: float | None = None
    exclusive_minimum: bool = False
    exclusive_maximum: bool = False
    description: str = ""
    group: str
    task: Literal["train", "infer", "both"] = "both"
    suggest: str | None = None
    accept: str | None = None  # a file field's types
    kinds: list[str] = list(KINDS)  # the kinds of model whose plans read it (:data:`KINDS`)
    # the placeholder for a kind of model whose plan fills a blank field otherwise than ``default`` (Whisper's
    # output_tokens: the transcript's tokens a window, s27 walk), from the function its plan reads
    kind_defaults: dict[str, str] = {}


def _literals(annotation: Any) -> tuple[list[str], bool, set[type]]:
    """(string literals, whether None is allowed, the other types) of a field annotation."""
    choices: list[str] = []
    optional = False
    other: set[type] = set()
    stack = [annotation]
    while stack:
        a = stack.pop(0)
        origin = typing.get_origin(a)
        if a is type(None):
            optional = True
        elif origin is Literal:
            choices += [v for v in typing.get_args(a) if isinstance(v, str)]
        elif origin in (typing.Union, types.UnionType):
            stack += list(typing.get_args(a))
        else:
            other.add(origin or a)
    return choices, optional, other


def field_specs() -> list[FieldSpec]:
    """Every scenario field as a form input, primary fields first."""
    grouped = {name: group for group, names in GROUPS.items() for name in names}
    specs = []
    for name, info in Scenario.model_fields.items():
        choices, optional, other = _literals(info.annotation)
        if name in FILES:
            kind = "file"
        elif list in other:
            kind = "list"
        elif choices and not other:
            kind = "choice"
        elif other == {bool} and optional:  # unset, true or false: the stack decides when unset
            kind, choices = "choice", ["true", "false"]
        elif bool in other:
            kind = "bool"
        elif int in other:
            kind = "int"
        elif float in other:
            kind = "float"
        else:
            kind = "text"
        bounds: dict[str, Any] = {}
        for meta in info.metadata:
            if isinstance(meta, at.Ge | at.Gt):
                bounds["minimum"] = float(meta.ge if isinstance(meta, at.Ge) else meta.gt)
                bounds["exclusive_minimum"] = isinstance(meta, at.Gt)
            if isinstance(meta, at.Le | at.Lt):
                bounds["maximum"] = float(meta.le if isinstance(meta, at.Le) else meta.lt)
                bounds["exclusive_maximum"] = isinstance(meta, at.Lt)
        default = None if info.default is PydanticUndefined else info.default
        specs.append(FieldSpec(
            name=name, label=name.replace("_", " "), kind=kind, choices=choices, optional=optional,
            required=info.is_required(), default=default, description=FILE_HINTS.get(name, info.description or ""),
            group="main" if name in PRIMARY else grouped.get(name, "more"),
            task="train" if name in TRAIN_ONLY else "infer" if name in INFER_ONLY else MODULE_TASK.get(name, "both"),
            suggest=SUGGEST.get(name), accept=FILES.get(name), kinds=_kinds(name),
            kind_defaults=_kind_defaults(name, default), **bounds))
    order = {name: i for i, name in enumerate(PRIMARY)}
    return sorted(specs, key=lambda f: (f.group != "main", order.get(f.name, len(order))))


def _kind_defaults(name: str, default: Any) -> dict[str, str]:
    """:attr:`FieldSpec.kind_defaults` of field ``name``: Whisper's output_tokens
    (:func:`gpuplan.scenario.modules.whisper_output_default`)."""
    return {"speech": modules.whisper_output_default(default)} if name == "output_tokens" else {}


def _kinds(name: str) -> list[str]:
    """The kinds of model whose plans read field ``name``."""
    modules = [kind for kind, names in MODULE_READS.items() if name in names]
    return modules if name in MODULE_ONLY else ["decoder", *modules]


def page_kind(spec: Any) -> str:
    """The page's word for a model that is not a decoder LLM (a :class:`~gpuplan.model.module_spec.ModuleSpec`):
    Whisper is speech, BERT and the other text encoders text-encoder (they read seq_len and prompt_tokens), the
    others their kind (diffusion, encoder-decoder, encoder)."""
    return "speech" if spec.family == "whisper" else modules.reads_kind(spec)


def given(s: Scenario) -> dict[str, Any]:
    """The fields of a scenario given explicitly (model and task always), in the model's order; the fields left out
    take the stack's defaults again when the scenario is read back."""
    data = s.model_dump()
    return {name: data[name] if name in data else getattr(s, name) for name, info in Scenario.model_fields.items()
            if name in s.model_fields_set or info.is_required()}  # (the module fields are left out of dumps)
