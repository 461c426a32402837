"""The one resolver: a scenario on its model and card, every default filled once and said with why, refused when
it cannot run.

Each default has one home, and the resolver gathers their reasons:

- the training stack's recipe and the card's precision are filled when the scenario is validated
  (:func:`gpuplan.scenario.stacks.stack_fills`: a field left unset takes the stack's default; GPUs without bf16 run
  fp16), and said here (:func:`gpuplan.scenario.stacks.defaults_in_force`, :func:`precision_note`);
- the card named resolves to its catalog id (an ambiguous name takes its common variant, said);
- **several GPUs for serving split the model** instead of copying it (:func:`serving_split`): an engine that
  shards with tensor parallelism does (vLLM ``--tensor-parallel-size``, SGLang ``--tp``, TensorRT-LLM
  ``--tp_size``), the others place layers across the cards (transformers' ``device_map="auto"``, llama.cpp's
  ``--split-mode layer``); replicas need ``sharding: ddp``;
- **how a served MoE model's tokens reach their experts** under expert and attention data parallelism
  (:func:`dispatch_default`): the engine's own ``moe_dispatch`` (:attr:`gpuplan.engines.base.Engine.moe_dispatch`),
  which the speed model times and the launchers write.

These need no second validation of the scenario: the card's id and the split change no stack default, so the
resolved scenario is a copy with them set (as given fields). :func:`gpuplan.plan.refusals.check` then refuses
what cannot run.
"""

from __future__ import annotations

import dataclasses
import functools
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..engines import Engine, engine_for
from ..errors import GpuplanError
from ..hardware import GpuSpec, resolve_gpu
from ..model.catalog import load_model
from ..model.kinds import NotADecoder
from ..model.report import inexact_warning
from ..model.spec import ModelSpec
from ..model.synthetic import size_note
from ..scenario import Scenario
from ..scenario.fields import LOAD_ENGINE
from ..scenario.stacks import NO_FP16_STACKS, defaults_in_force
from .refusals import check, module_quant, module_refusal, other_task, stack_card, technique_card

if TYPE_CHECKING:
    from ..model.module_spec import ModuleSpec
    from ..scenario.modules import ModuleJob

# the technique fields a module's plan reads, said when the stack chose them (scenario.stacks.defaults_in_force)
MODULE_STACK_FIELDS = {"diffusion": ("precision", "grad_checkpointing", "cache_latents", "text_encoders", "optimizer",
                                     "adapter_dtype", "quant"),
                       "encoder-decoder": ("precision", "grad_checkpointing"),
                       "encoder": ("precision", "grad_checkpointing")}


@dataclass(frozen=True, kw_only=True)
class Resolved:
    """One scenario resolved on its model and card: every default filled, each said with why (``defaults`` for
    the card and model's, ``assumptions`` for the stack's), the doubtful combinations in ``warnings``. The
    sentences are written when read (a search resolves thousands of placements and says few)."""

    scenario: Scenario
    model: ModelSpec
    gpu: GpuSpec | None
    gpu_note: str | None = None  # an ambiguous name's variant
    split_note: str | None = None  # the serving split
    length_note: str | None = None  # a default length shortened to the model's context
    dtype_note: str | None = None  # a served checkpoint's own 16-bit dtype taken (:func:`served_dtype`)
    dispatch_note: str | None = None  # the engine's MoE dispatch taken (:func:`dispatch_default`)
    checked: tuple[str, ...] = ()  # the refusals' warnings
    chosen: tuple[str, ...] = ()  # defaults taken after the resolve, with why (the nodes: gpuplan.plan.nodes; what
    # the engine fills from its pool: gpuplan.plan.plan.memory_plan)
    layout_why: str | None = None  # why the micro-batch x accumulation are the recipe's (gpuplan.plan.layout)

    @property
    def engine(self) -> Engine:
        return engine_for(self.scenario)

    @functools.cached_property
    def defaults(self) -> tuple[str, ...]:
        """The defaults taken for this card and model, in words: the GPU name's variant, the model's notes, the
        card's precision, the serving split."""
        said = (self.gpu_note, *self.model.notes, size_note(self.scenario.model_size),
                precision_note(self.scenario, self.gpu), self.dtype_note, self.split_note, self.dispatch_note,
                self.length_note, pretraining_note(self.scenario), load_note(self.scenario),
                *self.chosen, self.layout_note)
        return tuple(n for n in said if n)

    @property
    def layout_note(self) -> str | None:
        """The recipe's micro-batch x accumulation the builder took (:func:`gpuplan.plan.layout.with_layout`), and
        why."""
        s = self.scenario
        return f"micro-batch {s.micro_batch_size} x accumulation {s.grad_accum_steps}: {self.layout_why} (set " \
            "micro_batch_size or grad_accum_steps to choose)" if self.layout_why else None

    @functools.cached_property
    def assumptions(self) -> tuple[str, ...]:
        """The stack's defaults in force, in one sentence (the card's precision said in :attr:`defaults`)."""
        card = precision_note(self.scenario, self.gpu)
        stack = defaults_in_force(self.scenario, ("precision",) if card else ())
        return (stack,) if stack else ()

    @functools.cached_property
    def warnings(self) -> tuple[str, ...]:
        """What runs but is doubtful: a model not counted exactly first, then the refusals' warnings."""
        inexact = inexact_warning(self.model)
        return (inexact, *self.checked) if inexact else self.checked


def load_note(s: Scenario) -> str | None:
    """The engine a load took when none was named (:data:`gpuplan.scenario.fields.LOAD_ENGINE`), and why."""
    if s.task != "infer" or (s.users is None and s.rate_rps is None) or "engine" in s.model_fields_set \
            or s.engine != LOAD_ENGINE:
        return None
    return (f"engine {LOAD_ENGINE}: users and rate_rps run a serving engine's scheduler, which transformers' generate "
            "has not; vLLM's, as `gpuplan capacity` takes it (--engine sglang or trtllm to choose)")


def pretraining_note(s: Scenario) -> str | None:
    """Why a size-only model trains on torchtitan though no stack was given (``_pretraining_stack`` of
    :mod:`gpuplan.scenario.fields`), in words."""
    if not (s.model_size and s.task == "train" and s.stack == "torchtitan" and "stack" not in s.model_fields_set):
        return None
    return (f"stack torchtitan: {s.model} pretrains from random weights, which a pretraining stack does (an SFT "
            "trainer loads pretrained weights); set --stack hf (DeepSpeed ZeRO) or megatron for another")


def resolve(s: Scenario, m: ModelSpec | None = None, gpu: GpuSpec | None = None) -> Resolved:
    """``s`` on its model (``m``, else loaded by name) and its card (``s.gpu``, else none), every default filled,
    refused (:class:`~gpuplan.errors.GpuplanError`, one sentence) when it cannot run. ``gpu``: the card ``s.gpu``
    names by its catalog id, where a search placed the scenario on it."""
    m = m if m is not None else load_model(s.model)
    if gpu is not None and gpu.id == s.gpu:
        note = None
    else:
        gpu, note = resolve_gpu(s.gpu) if s.gpu else (None, None)
    if gpu is not None and s.gpu != gpu.id:  # the card's id changes no default: set without validating again
        s = s.with_resolved({"gpu": gpu.id})
    gpu = wired(s, gpu)
    s, (said, shortened) = card_free(s, m)
    s, dtype = served_dtype(s, m, gpu)
    warnings = check(s, m, gpu)
    s, dispatch = dispatch_default(s, m)
    return Resolved(scenario=s, model=m, gpu=gpu, gpu_note=note, split_note=said, length_note=shortened,
                    dtype_note=dtype, dispatch_note=dispatch, checked=tuple(warnings))


def dispatch_default(s: Scenario, m: ModelSpec) -> tuple[Scenario, str | None]:
    """A served MoE model under expert parallelism and attention data parallelism (``ep`` > 1 with ``attention_dp``,
    the only layout where tokens travel to experts on other GPUs) that left ``moe_dispatch`` unset: the engine's own
    (:attr:`gpuplan.engines.base.Engine.moe_dispatch`: vLLM's ``--all2all-backend`` and SGLang's
    ``--moe-a2a-backend`` default to gathering the batch and reduce-scattering the outputs, TensorRT-LLM runs its own
    all-to-all), set as a given field so the speed model and the launchers read one value, and the sentence saying
    so (None: not taken). Run after :func:`gpuplan.plan.refusals.check`, which judges only what the user set."""
    if s.task != "infer" or s.moe_dispatch is not None or s.ep <= 1 or not s.attention_dp or not m.is_moe:
        return s, None
    engine = engine_for(s)
    if not engine.expert_parallel:
        return s, None
    return s.with_resolved({"moe_dispatch": engine.moe_dispatch}), (
        f"moe_dispatch {engine.moe_dispatch}: {engine.moe_dispatch_words} (set moe_dispatch to choose)")


@dataclass(frozen=True, kw_only=True)
class ResolvedModule:
    """One scenario resolved on a model that is not a decoder LLM (a diffusion pipeline, an encoder-decoder, an
    encoder: ``spec``) and its card: the module's defaults taken and its ``job`` (:mod:`gpuplan.scenario.modules`:
    the way it runs, its batch and sizes), each default said as :class:`Resolved` says a decoder's."""

    scenario: Scenario
    spec: ModuleSpec
    job: ModuleJob
    gpu: GpuSpec | None
    gpu_note: str | None = None
    checked: tuple[str, ...] = ()  # the fields given that its plan does not read (refusals.other_task)

    @functools.cached_property
    def defaults(self) -> tuple[str, ...]:
        said = (self.gpu_note, precision_note(self.scenario, self.gpu), *self.spec.notes, *self.job.notes)
        return tuple(n for n in said if n)

    @functools.cached_property
    def assumptions(self) -> tuple[str, ...]:
        card = precision_note(self.scenario, self.gpu)
        if self.spec.kind == "module":  # your own loop, not a stack's: the precision is the scenario's default
            s = self.scenario
            return () if "precision" in s.model_fields_set or card else (
                f"precision {s.precision}: gpuplan's default (set --precision for the one your code runs in)",)
        stack = defaults_in_force(self.scenario, ("precision",) if card else (), MODULE_STACK_FIELDS[self.spec.kind])
        return (stack,) if stack else ()


def resolve_any(s: Scenario) -> Resolved | ResolvedModule:
    """``s`` resolved whatever its model is: a decoder LLM's :class:`Resolved` (:func:`resolve`), or, for a model
    that is not one (the model's reader raises :class:`~gpuplan.model.kinds.NotADecoder`), the module's
    (:func:`resolve_module_scenario`). ``estimate`` plans both; the searches plan decoder LLMs and let the
    sentence of NotADecoder say which commands plan the others."""
    try:
        return resolve(s)
    except NotADecoder as other:
        return resolve_module_scenario(s, other.spec)


def resolve_module_scenario(s: Scenario, spec: ModuleSpec, gpu: GpuSpec | None = None) -> ResolvedModule:
    """``s`` on module ``spec`` and its card (resolved by name as a decoder's is, or ``gpu`` when a search already
    did), refused in one sentence where the module cannot run it (:func:`gpuplan.scenario.modules.resolve_module`)
    or is given a field its plan does not read (:func:`gpuplan.plan.refusals.module_refusal`), or trains with a
    stack or a technique that does not run on the card (:func:`gpuplan.plan.refusals.stack_card`,
    :func:`~gpuplan.plan.refusals.technique_card`); a field given that changes
    nothing and is not read for its task is said (:func:`gpuplan.plan.refusals.other_task`)."""
    note = None
    if gpu is None or gpu.id != s.gpu:
        gpu, note = resolve_gpu(s.gpu) if s.gpu else (None, None)
    if gpu is not None and s.gpu != gpu.id:
        s = s.with_resolved({"gpu": gpu.id})
    from ..scenario.modules import resolve_module  # a decoder's plan never loads the modules' jobs

    unread = other_task(s, spec)  # the fields the user gave, before the module's defaults are taken
    s, job = resolve_module(s, spec)
    module_refusal(s, spec)
    module_quant(s, spec, gpu)
    # a diffusion trainer off its cards (kohya on Gaudi), bitsandbytes' 8-bit AdamW off NVIDIA and AMD
    why = (stack_card(s, gpu) or technique_card(s, gpu)) if gpu is not None else None
    if why:
        raise GpuplanError(why)
    return ResolvedModule(scenario=s, spec=spec, job=job, gpu=wired(s, gpu), gpu_note=note, checked=tuple(unread))


def wired(s: Scenario, gpu: GpuSpec | None) -> GpuSpec | None:
    """The card with the unified memory ``wired_limit_mb`` lets an Apple silicon GPU wire (macOS's ``sysctl
    iogpu.wired_limit_mb``) as its usable memory; refused above the machine's memory or on another card."""
    if s.wired_limit_mb is None or gpu is None:
        return gpu
    if gpu.vendor != "Apple":
        raise GpuplanError(f"wired_limit_mb is macOS's limit on the GPU's share of unified memory (Apple silicon); "
                           f"{gpu.name} is not a Mac: leave it unset")
    limit = s.wired_limit_mb / 1024
    if limit > gpu.memory_gib:
        raise GpuplanError(f"wired_limit_mb {s.wired_limit_mb:,} is more than the {gpu.name}'s "
                           f"{gpu.memory_gib:,.0f} GB of memory: macOS keeps some for itself, so set it below "
                           f"{gpu.memory_gib * 1024:,.0f}")
    return dataclasses.replace(gpu, usable_gib=limit)


def card_free(s: Scenario, m: ModelSpec) -> tuple[Scenario, tuple[str | None, str | None]]:
    """``s`` with the defaults that need the model but no card (a search over cards takes them once): the
    serving split over its GPUs (:func:`serving_split`, set without validating again: it changes no default) and
    default lengths within the model's context (:func:`within_context`, validated again: a shorter sequence may
    change a stack's default); and why each was taken (None: not taken)."""
    split, said = serving_split(s, m)
    if split:
        s = s.with_resolved(split)
    lengths, shortened = within_context(s, m)
    if lengths:
        s = s.model_copy(update=lengths)
    return s, (said, shortened)


def served_dtype(s: Scenario, m: ModelSpec, gpu: GpuSpec | None) -> tuple[Scenario, str | None]:
    """A serving scenario that left its precision to the stack, on a float16 checkpoint: served in float16, as the
    engines' ``--dtype auto`` serve it, and the note saying so (None: not taken). vLLM keeps a 16-bit config dtype
    that the platform supports and only downcasts float32 (``vllm/config/model.py`` ``_resolve_auto_dtype``; fp16
    is supported on every CUDA card), SGLang's model config does the same, and TensorRT-LLM and transformers
    (``dtype="auto"``) load the checkpoint's dtype. A bfloat16 or float32 checkpoint keeps the stack's bf16 (fp16
    where the card has no bf16: :func:`gpuplan.scenario.stacks.card_precision`); a card the catalog gives no fp16
    rate (Gaudi) keeps bf16. Training is left as the stack sets it: bf16 autocast on a card with bf16 is the norm,
    whatever dtype the checkpoint was saved in."""
    if s.task != "infer" or m.dtype != "float16" or "precision" in s.model_fields_set or \
            not s.precision.startswith("bf16") or (gpu is not None and gpu.peak_tflops("fp16") is None):
        return s, None
    return s.with_resolved({"precision": "fp16-true"}), (
        "precision fp16-true: the checkpoint's weights are float16 (config.json torch_dtype), and the engine serves "
        "them in float16 (vLLM's and SGLang's --dtype auto, not a cast to bf16; set precision to choose)")


def precision_note(s: Scenario, gpu: GpuSpec | None) -> str | None:
    """The sentence for a precision the card chose (:func:`gpuplan.scenario.stacks.card_precision`)."""
    if gpu is None or "precision" in s.model_fields_set or gpu.supports_dtype("bf16"):
        return None
    if s.precision == "fp32" and s.task == "train" and s.stack in NO_FP16_STACKS:
        return (f"precision fp32: {gpu.name} has no bf16 ({gpu.architecture}) and {s.stack} trains in no fp16, so "
                "fp32 is what runs there (set precision to choose)")
    if not s.precision.startswith("fp16"):
        return None
    return (f"precision {s.precision}: {gpu.name} has no bf16 ({gpu.architecture}), so fp16 is what runs there (set "
            "precision to choose)")


def tensor_parallel_ok(m: ModelSpec, n: int) -> bool:
    """Whether ``n`` GPUs can split the model's heads evenly (KV heads divided or replicated evenly; MLA has none)."""
    return m.num_heads % n == 0 and (m.mla is not None or (n <= m.num_kv_heads and m.num_kv_heads % n == 0)
                                     or n % m.num_kv_heads == 0)


def serving_split(s: Scenario, m: ModelSpec) -> tuple[dict[str, Any], str | None]:
    """How several GPUs serve one model when the scenario does not say: (fields to set, the sentence)."""
    n = s.world_size
    if s.task == "infer" and s.tp > 1 and not engine_for(s).tensor_parallel:  # llama.cpp, mlx: layers, not tensors
        engine = engine_for(s)
        return {"tp": 1, "pp": s.tp * s.pp}, (
            f"{engine.label} splits the model's layers over GPUs, not its tensors: tp {s.tp} taken as its layer split "
            f"over {s.tp * s.pp} GPUs ({engine.layer_split_words}); set pp to say so")
    if s.task != "infer" or n == 1 or s.tp * s.pp != 1 or s.sharding is not None:
        return {}, None
    engine = engine_for(s)
    if s.num_nodes > 1:  # vLLM's multi-node recipe: tensor parallel inside each node, pipeline stages across nodes
        if engine.tensor_parallel_flag and s.num_gpus == 1 and tensor_parallel_ok(m, s.num_nodes):
            return {"tp": s.num_nodes}, (
                f"{s.num_nodes} machines of one GPU serve one copy of the model with tensor parallel {s.num_nodes} "
                "across them, as two linked DGX Sparks run vLLM (--tensor-parallel-size 2 over Ray: conselara.dev/"
                "notes/dgx-spark-benchmarks, corti.com's two-Spark cluster); set pp instead for pipeline stages")
        if engine.tensor_parallel_flag and tensor_parallel_ok(m, s.num_gpus):
            return {"tp": s.num_gpus, "pp": s.num_nodes}, (
                f"{s.num_nodes} nodes of {s.num_gpus} GPUs serve one copy of the model: tensor parallel {s.num_gpus} "
                f"inside each node, {s.num_nodes} pipeline stages across nodes (vLLM docs, serving/"
                "distributed_serving.md: the tensor parallel size is the GPUs per node, the pipeline parallel size "
                "the number of nodes)")
        return {}, None
    if engine.tensor_parallel_flag and tensor_parallel_ok(m, n):
        return {"tp": n}, (f"{n} GPUs serve one copy of the model with tensor parallelism "
                           f"({engine.tensor_parallel_flag} {n}); for {n} replicas set sharding ddp")
    if n <= m.num_layers:
        return {"pp": n}, (f"{n} GPUs hold one copy of the model, its layers split across them "
                           f"({engine.layer_split_words}): each holds 1/{n} of the weights and KV cache; for {n} "
                           "replicas set sharding ddp")
    return {}, None


def within_context(s: Scenario, m: ModelSpec) -> tuple[dict[str, Any], str | None]:
    """Default lengths that fit the model's context when they would not: a shorter default prompt for serving
    (gpt2's 1,024 positions hold the default 1,024-token prompt only without the 256 output tokens), the context
    as the default training sequence (a dataset's own lengths are capped where they are read,
    :func:`gpuplan.dataset.fields`). Lengths the user set are kept, and judged as set."""
    if s.task == "infer" and s.preset:
        return preset_lengths(s)
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


def preset_lengths(s: Scenario) -> tuple[dict[str, Any], str | None]:
    """A serving plan given a ``preset``: its means as ``prompt_tokens`` and ``output_tokens`` (the KV pool's
    requests, the decode step, the price per token), as capacity plans each setup on them; the run draws each
    request's lengths from the preset (:func:`gpuplan.serving.load.requests_of`). Lengths set otherwise, or a
    spread, are refused: the preset says them (s20 walk: a row of ``capacity --preset chat`` could not be run
    again by ``estimate --rate``, which had no preset)."""
    from ..serving.workload import PRESETS, preset_means

    prompt, output = preset_means(s.preset)
    other = [f for f, v in (("prompt_tokens", prompt), ("output_tokens", output)) if f in s.model_fields_set
             and getattr(s, f) != v] + (["length_spread"] if "length_spread" in s.model_fields_set else [])
    if other:
        raise GpuplanError(f"preset {s.preset} says the requests' lengths ({prompt:,} prompt and {output:,} output "
                           f"tokens on average): drop {' and '.join(other)}, or the preset")
    if (s.prompt_tokens, s.output_tokens) == (prompt, output):
        return {}, None
    return {"prompt_tokens": prompt, "output_tokens": output}, (
        f"prompt_tokens {prompt:,} and output_tokens {output:,}: the means of preset {s.preset} "
        f"({PRESETS[s.preset][2]}); a simulated run draws each request's lengths from it, as capacity does")


def changed(r: Resolved, change: dict[str, Any], why: str | None, *, layout_why: str | None = None) -> Resolved:
    """``r``'s scenario with ``change``, resolved again, keeping what was said of it and adding ``why`` (a default
    a run takes: :mod:`gpuplan.plan.nodes`, :mod:`gpuplan.plan.launch`)."""
    again = resolve(r.scenario.model_copy(update=change), r.model)
    return Resolved(scenario=again.scenario, model=again.model, gpu=again.gpu, gpu_note=r.gpu_note,
                    split_note=r.split_note, dtype_note=r.dtype_note or again.dtype_note,
                    dispatch_note=r.dispatch_note or again.dispatch_note, checked=again.checked,
                    chosen=(*r.chosen, *([why] if why else [])), layout_why=layout_why or r.layout_why)
