"""The defaults that depend on the model and the card, and the one line that says what was assumed.

A scenario's own defaults (design.md) do not know the hardware. Where the user left a field unset and the card or
the GPU count decides what people actually run, :func:`resolve` fills it in and says so in words:

- **precision follows the card**: GPUs without bf16 (V100, T4 and other Turing cards, Apple silicon) run fp16
  (``fp16-mixed`` for training as the Trainer's ``fp16=True``; ``fp16-true`` weights for serving);
- **several GPUs for serving split the model** instead of copying it: vLLM shards it with tensor parallelism
  (``--tensor-parallel-size``), as SGLang (``--tp``) and TensorRT-LLM (``--tp_size``) do, transformers places layers
  across the cards (``device_map="auto"``) and llama.cpp splits by layer (``--split-mode layer``); replicas need
  ``strategy: ddp``.

:func:`describe` writes the resolved scenario as the first line of every answer.
"""

from __future__ import annotations

from typing import Any

from ..hardware import GpuSpec, short_id
from ..model.spec import ModelSpec
from .fields import INFER_ONLY, TRAIN_ONLY, TRAINING_LAYOUT, Scenario
from .stacks import WHY

STRATEGY_WORDS = {"single": "single GPU", "ddp": "DDP", "zero1": "ZeRO-1", "zero2": "ZeRO-2", "zero3": "ZeRO-3"}


def card_precision(s: Scenario, gpu: GpuSpec) -> str | None:
    """The precision to run on ``gpu`` when the user did not choose one and the default (bf16) has no tensor
    cores there; None when the scenario's own precision stands."""
    if "precision" in s.model_fields_set or gpu.supports_dtype("bf16") or not s.precision.startswith("bf16"):
        return None
    return "fp16-true" if s.task == "infer" else s.precision.replace("bf16", "fp16")  # -mixed or -true as the stack


def tensor_parallel_ok(m: ModelSpec, n: int) -> bool:
    """Whether ``n`` GPUs can split the model's heads evenly (KV heads divided or replicated evenly; MLA has none)."""
    return m.num_heads % n == 0 and (m.mla is not None or (n <= m.num_kv_heads and m.num_kv_heads % n == 0)
                                     or n % m.num_kv_heads == 0)


def serving_split(s: Scenario, m: ModelSpec) -> tuple[dict[str, Any], str | None]:
    """How several GPUs serve one model when the scenario does not say: (fields to set, the sentence)."""
    n = s.world_size
    if s.task != "infer" or n == 1 or s.tp * s.pp != 1 or s.strategy is not None or s.num_nodes != 1:
        return {}, None
    if s.engine in ("vllm", "sglang", "trtllm") and tensor_parallel_ok(m, n):
        flag = {"vllm": "vLLM --tensor-parallel-size", "sglang": "SGLang --tp", "trtllm": "trtllm-serve --tp_size"}[
            s.engine]
        return {"tp": n}, (f"{n} GPUs serve one copy of the model with tensor parallelism ({flag} {n}); for {n} "
                           "replicas set strategy ddp")
    if n <= m.num_layers:
        how = {"vllm": "vLLM --pipeline-parallel-size", "sglang": "SGLang --pp-size",
               "llama.cpp": "llama.cpp --split-mode layer"}.get(
            s.engine, 'transformers device_map="auto"')
        return {"pp": n}, (f"{n} GPUs hold one copy of the model, its layers split across them ({how}): each "
                           f"holds 1/{n} of the weights and KV cache; for {n} replicas set strategy ddp")
    return {}, None


def resolve(s: Scenario, m: ModelSpec, gpu: GpuSpec | None) -> tuple[Scenario, list[str]]:
    """``s`` with the card- and count-dependent defaults filled in, and one sentence per default taken."""
    update: dict[str, Any] = {}
    notes: list[str] = []
    if gpu is not None:
        precision = card_precision(s, gpu)
        if precision:
            update["precision"] = precision
            notes.append(f"precision {precision}: {gpu.name} has no bf16 ({gpu.architecture}), so fp16 is what runs "
                         "there (set precision to choose)")
    split, note = serving_split(s, m)
    if note:
        update.update(split)
        notes.append(note)
    lengths, note = within_context(s, m)
    if note:
        update.update(lengths)
        notes.append(note)
    return (s.model_copy(update=update) if update else s), notes


def within_context(s: Scenario, m: ModelSpec) -> tuple[dict[str, Any], str | None]:
    """Default lengths that fit the model's context when they would not: a shorter default prompt for serving
    (gpt2's 1,024 positions hold the default 1,024-token prompt only without the 256 output tokens), the context
    as the default training sequence (a dataset's own lengths are capped where they are read,
    :func:`gpuplan.dataset.fields`). Lengths the user set are kept, and judged as set."""
    context = m.max_context
    if not context:
        return {}, None
    if s.task == "infer" and "prompt_tokens" not in s.model_fields_set and \
            s.shared_prefix_tokens < context - s.output_tokens < s.prompt_tokens:
        prompt = context - s.output_tokens
        return {"prompt_tokens": prompt}, (f"prompt_tokens {prompt:,}: the default {s.prompt_tokens:,} plus "
                                           f"{s.output_tokens:,} output tokens would run past {m.name}'s "
                                           f"{context:,} positions (set prompt_tokens to choose)")
    if s.task == "train" and "seq_len" not in s.model_fields_set and not (s.dataset or s.samples) and \
            s.seq_len > context:
        return {"seq_len": context}, (f"seq_len {context:,}: the default {s.seq_len:,} would run past {m.name}'s "
                                      f"{context:,} positions (set seq_len to choose)")
    return {}, None


def describe(s: Scenario, m: ModelSpec | None = None, gpu_id: str | None = None, *, engine: str | None = None,
             hardware: str | None = None) -> str:
    """The scenario as resolved, in one line: model, task, method and rank, lengths and batch, checkpointing,
    precision, engine, framework, GPUs and strategy. ``engine`` and ``hardware`` replace those parts where a
    search tries several (``recommend``, ``cost``)."""
    model = m.name if m is not None else s.model
    framework = getattr(s, "framework", None)
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
        parts = [f"train {method}", f"seq {s.seq_len:,} x micro-batch {s.micro_batch_size} x {s.grad_accum_steps} "
                 "accumulation", "no checkpointing" if s.grad_checkpointing == "none" else
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
                 f"KV cache {dense if s.kv_cache_dtype == 'auto' else s.kv_cache_dtype}"]
    if framework and s.task == "train":  # the training stack; serving runs the engine named
        parts.append(str(framework))
    gpu = s.gpu if gpu_id is None else gpu_id
    where = f"{s.world_size} x {short_id(gpu)}" if gpu else (f"{s.world_size} GPUs" if s.world_size > 1 else
                                                               "no GPU named")
    strategy = s.resolved_strategy if s.task == "train" or s.strategy else ""
    layout = [STRATEGY_WORDS.get(strategy, strategy)]
    if s.tp > 1:
        layout.append(f"tensor parallel {s.tp}")
    if s.pp > 1:
        layout.append(f"{s.pp} pipeline stages" if s.task == "train" else f"layers split over {s.pp} GPUs")
    if s.task == "infer" and s.world_size == 1:
        layout.append("single GPU")
    return f"{model}: {', '.join(parts)}; {hardware or where + ', ' + ', '.join(x for x in layout if x)}"


def defaults_said(s: Scenario) -> list[str]:
    """Every field the user left out, in words, with why its value was chosen: "optimizer adamw (default)",
    "grad checkpointing full (the hf recipe's default: peft's prepare_model_for_kbit_training ...)" where the
    framework chose it (:data:`~gpuplan.scenario.stacks.WHY`), the strategy from the GPU count. The card- and
    model-dependent defaults are :func:`resolve`'s notes; the recipe's are :func:`gpuplan.scenario.stacks.resolve`:
    every default a scenario takes is chosen in this package."""
    skip = INFER_ONLY if s.task == "train" else TRAIN_ONLY | TRAINING_LAYOUT
    out = []
    for name, info in Scenario.model_fields.items():
        if name in s.model_fields_set or name in skip or info.is_required():
            continue
        value = getattr(s, name)
        label = name.replace("_", " ")
        if name == "strategy":
            out.append(f"{label} {s.resolved_strategy} (from the GPU count)")
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
            why = WHY.get((s.framework, name, value))
            out.append(f"{label} {value} (the {s.framework} recipe's default" + (f": {why})" if why else ")"))
        else:
            out.append(f"{label} {value} (default)")
    return out
