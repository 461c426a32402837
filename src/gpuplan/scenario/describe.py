"""The scenario in words: :func:`describe` writes the resolved scenario as the first line of every answer, and
:func:`defaults_said` every default left in force with why it was chosen. The defaults themselves are filled by
the stack's recipe (:mod:`.stacks`, when the scenario is validated) and by the one resolver
(:mod:`gpuplan.plan.resolve`).
"""

from __future__ import annotations

from ..errors import GpuplanError
from ..hardware import resolve_gpu, short_id
from ..model.spec import ModelSpec
from .fields import INFER_ONLY, MOE_LAYOUT, TRAIN_ONLY, TRAINING_LAYOUT, Scenario
from .stacks import reason

SHARDING_WORDS = {"single": "single GPU", "ddp": "DDP", "zero1": "ZeRO-1", "zero2": "ZeRO-2", "zero3": "ZeRO-3",
                  "fsdp1": "FSDP1", "fsdp2": "FSDP2"}


def flag_text(value: object) -> str:
    """A scenario field's value as its command-line flag (and the page's permalink) reads it back, unchanged: a list
    comma-separated (the floats of ``tensor_split`` too), a bool as ``true``/``false``, a float in ``:g``'s short
    form where that is the same number, else the shortest text that is (``repr``: 123,456,789 training tokens are
    not ``1.23457e+08``)."""
    if isinstance(value, list):
        return ",".join(map(flag_text, value))
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, float):
        short = f"{value:g}"
        return short if float(short) == value else repr(value)
    return str(value)


def laid_out(s: Scenario, given: set[str] | frozenset[str], each: str) -> str | None:
    """A search's micro-batch x accumulation in words, where it lays out the fields not ``given`` for ``each`` of
    its rows as estimate does (gpuplan/plan/layout.py: the fastest micro-batch that fits, the recipe's
    accumulation); None when both are given (the scenario's own words then). ``recommend`` and ``cost`` said
    "micro-batch 1 x 1 accumulation" of rows laid out at 8 x 2."""
    if {"micro_batch_size", "grad_accum_steps"} <= given:
        return None
    micro = f"micro-batch {s.micro_batch_size}" if "micro_batch_size" in given else f"each {each}'s micro-batch"
    accumulation = f"{s.grad_accum_steps} accumulation" if "grad_accum_steps" in given else \
        "its recipe's accumulation"
    return f"{micro} x {accumulation}" + ("" if "micro_batch_size" in given else " (the fastest that fits)")


def _card(name: str) -> str:
    """A card's short name as every plan says it (``3090`` as typed -> ``rtx-3090``, the catalog id's short form),
    or the name as given where the catalog does not know it (the resolver refuses it)."""
    try:
        return short_id(resolve_gpu(name)[0].id)
    except GpuplanError:
        return short_id(name)


def describe(s: Scenario, m: ModelSpec | None = None, gpu_id: str | None = None, *, engine: str | None = None,
             hardware: str | None = None, batches: str | None = None) -> str:
    """The scenario as resolved, in one line: model, task, method and rank, lengths and batch, checkpointing,
    precision, engine, stack, GPUs and sharding. ``engine``, ``hardware`` and ``batches`` (a training step's
    micro-batch and accumulation) replace those parts where a search tries several (``recommend``, ``cost``,
    ``fit``)."""
    model = m.name if m is not None else s.model
    stack = getattr(s, "stack", None)
    shipped = None  # the checkpoint's own quantization, which a scenario without quant keeps
    if s.quant is None and m is not None and m.quantization:
        shipped = m.shipped_format()[0].name
    if s.task == "train":
        method = {"full": "full fine-tuning", "lora": f"LoRA r{s.lora_rank}",
                  "qlora": f"QLoRA r{s.lora_rank} ({s.quant or 'nf4'} base)"}[s.method]
        if s.method == "full" and (s.quant or shipped):
            method += f" ({s.quant or shipped} weights{' as shipped' if shipped else ''})"
        if s.method == "lora" and s.quant not in (None, "none"):
            method += f" ({s.quant} base)"
        batches = batches or f"micro-batch {s.micro_batch_size} x {s.grad_accum_steps} accumulation"
        if s.train_objective == "dpo":  # TRL's DPOTrainer: the micro-batch counts pairs (gpuplan.memory.dpo)
            method += " DPO" + (" (reference precomputed)" if s.precompute_ref_log_probs else "")
            mb = s.micro_batch_size
            batches = batches.replace(f"micro-batch {mb}", f"micro-batch {mb} pair{'s' * (mb > 1)} ({2 * mb} rows)", 1)
        parts = [f"train {method}", f"seq {s.seq_len:,} x {batches}",
                 "no checkpointing" if s.grad_checkpointing == "none" else
                 f"{s.grad_checkpointing} checkpointing", s.precision, s.optimizer, s.attention]
        if s.offload != "none":
            parts.append(f"{s.offload} offloaded to CPU")
    else:
        dense = "fp16" if s.precision.startswith("fp16") else "fp32" if s.precision == "fp32" else "bf16"
        weights = (dense if s.quant == "none" else s.quant) if s.quant else \
            f"{shipped} (as shipped)" if shipped else dense
        parts = [f"serve with {engine or s.engine}",
                 f"{s.batch_size:,} x ({s.prompt_tokens:,} prompt + {s.output_tokens:,} output tokens)",
                 f"{weights} weights",
                 f"KV cache {_kv_words(s, dense)}"]
    if stack and s.task == "train":  # the training stack; serving runs the engine named
        parts.append(str(stack))
    gpu = s.gpu if gpu_id is None else gpu_id
    where = " + ".join(_card(g) for g in (gpu, *s.extra_gpus)) if gpu and s.extra_gpus else \
        f"{s.world_size} x {_card(gpu)}" if gpu else (f"{s.world_size} GPUs" if s.world_size > 1 else
                                                      "no GPU named")
    sharding = (s.sharding_name if s.task == "train" or s.sharding else None) or ""
    layout = [SHARDING_WORDS.get(sharding, sharding)]
    if s.tp > 1:
        layout.append(f"tensor parallel {s.tp}")
    if s.task == "infer" and s.ep > 1:
        layout.append(f"expert parallel {s.ep}")
    if s.task == "infer" and s.attention_dp:
        layout.append(f"attention data parallel {s.tp}")
    if s.pp > 1:
        layout.append(f"{s.pp} pipeline stages" if s.task == "train" else f"layers split over {s.pp} GPUs" if s.tp == 1
                      else f"layers split over {s.pp} groups of {s.tp} GPUs")  # tp 8 x pp 2: 2 groups, 16 GPUs
    if s.task == "infer" and s.world_size == 1:
        layout.append("single GPU")
    return f"{model}: {', '.join(parts)}; {hardware or where + ', ' + ', '.join(x for x in layout if x)}"


def defaults_said(s: Scenario) -> list[str]:
    """Every field the user left out, in words, with why its value was chosen: "optimizer adamw (default)",
    "grad checkpointing full (the hf recipe's default: peft's prepare_model_for_kbit_training ...)" where the
    stack chose it (:func:`~gpuplan.scenario.stacks.reason`), the sharding from the GPU count unless the stack chose
    it (torchtitan's FSDP2, Megatron-Core's distributed optimizer). The card- and
    model-dependent defaults are the resolver's notes (:func:`gpuplan.plan.resolve.resolve`); the recipe's are
    :func:`gpuplan.scenario.stacks.stack_fills`."""
    skip = INFER_ONLY if s.task == "train" else TRAIN_ONLY | TRAINING_LAYOUT | MOE_LAYOUT
    out = []
    for name, info in Scenario.model_fields.items():
        if name in s.model_fields_set or name in skip or info.is_required():
            continue
        value = getattr(s, name)
        label = name.replace("_", " ")
        if name == "sharding" and value is not None and s.task == "train":  # filled by the stack's recipe
            out.append(f"{label} {value} (the {s.stack} recipe's default: {reason(s.stack, name, value)})")
        elif name == "sharding":
            out.append(f"{label} {s.sharding_name} (from the GPU count)" if s.sharding_name else
                       f"{label} none ({s.layout} takes every GPU: one data-parallel rank)")
        elif value is None:
            said = {"quant": "the checkpoint's own format", "gpu": "none named (no fit, speed or cost)",
                    "provider": "any", "train_tokens": "not set (no job hours or total)",
                    "mtbi_hours": "the provider's interruption rate",
                    "max_num_batched_tokens": "vLLM's default for the release, GPU and entry point",
                    "max_num_seqs": "vLLM's default for the release, GPU and entry point",
                    "max_model_len": "the model's context (max_position_embeddings)",
                    "dataset_gb": "4 bytes per train token"}.get(name, "not set")
            out.append(f"{label}: {said}")
        elif info.default is None and s.task == "train":
            why = reason(s.stack, name, value)
            out.append(f"{label} {value} (the {s.stack} recipe's default" + (f": {why})" if why else ")"))
        else:
            out.append(f"{label} {value} (default)")
    return out


def _kv_words(s, dense: str) -> str:
    """The cache's dtype as the engine keeps it: ``auto`` is the weights' 16-bit dtype, except llama.cpp's, whose
    ``-ctk``/``-ctv`` default is f16 whatever the weights (ggml-org/llama.cpp common/common.h ``cache_type_k``;
    session 22's walk read "KV cache bf16" above a launch file with ``-ctk f16``)."""
    if s.kv_cache_dtype != "auto":
        return s.kv_cache_dtype
    return "fp16" if s.engine == "llama.cpp" else dense
