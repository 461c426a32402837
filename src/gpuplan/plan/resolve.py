"""The one resolver: a scenario on its model and card, every default filled once and said with why, refused when
it cannot run.

Each default has one home, and the resolver gathers their reasons:

- the training stack's recipe and the card's precision are filled when the scenario is validated
  (:func:`gpuplan.scenario.stacks.resolve`: a field left unset takes the stack's default; GPUs without bf16 run
  fp16), and said here (:func:`gpuplan.scenario.stacks.defaults_in_force`, :func:`precision_note`);
- the card named resolves to its catalog id (an ambiguous name takes its common variant, said);
- **several GPUs for serving split the model** instead of copying it (:func:`serving_split`): an engine that
  shards with tensor parallelism does (vLLM ``--tensor-parallel-size``, SGLang ``--tp``, TensorRT-LLM
  ``--tp_size``), the others place layers across the cards (transformers' ``device_map="auto"``, llama.cpp's
  ``--split-mode layer``); replicas need ``strategy: ddp``.

These need no second validation of the scenario: the card's id and the split change no stack default, so the
resolved scenario is a copy with them set (as given fields). :func:`gpuplan.plan.refusals.check` then refuses
what cannot run.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..engines import Engine, engine_for
from ..hardware import GpuSpec, resolve_gpu
from ..model.catalog import load_model
from ..model.report import inexact_warning
from ..model.spec import ModelSpec
from ..scenario import Scenario
from ..scenario.stacks import defaults_in_force
from .refusals import check


@dataclass(frozen=True, kw_only=True)
class Resolved:
    """One scenario resolved on its model and card: every default filled, each said with why (``defaults`` for
    the card and model's, ``assumptions`` for the stack's), the doubtful combinations in ``warnings``."""

    scenario: Scenario
    model: ModelSpec
    gpu: GpuSpec | None
    defaults: tuple[str, ...] = ()
    assumptions: tuple[str, ...] = ()
    warnings: tuple[str, ...] = ()

    @property
    def engine(self) -> Engine:
        return engine_for(self.scenario)


def resolve(s: Scenario, m: ModelSpec | None = None) -> Resolved:
    """``s`` on its model (``m``, else loaded by name) and its card (``s.gpu``, else none), every default filled,
    refused (:class:`~gpuplan.errors.GpuplanError`, one sentence) when it cannot run."""
    m = m if m is not None else load_model(s.model)
    gpu, note = resolve_gpu(s.gpu) if s.gpu else (None, None)
    update: dict[str, Any] = {"gpu": gpu.id} if gpu is not None and s.gpu != gpu.id else {}
    split, said = serving_split(s, m)
    update.update(split)
    if update:  # the card's id and the split change no default: set them as given fields, without validating again
        s = s.with_resolved(update)
    card = precision_note(s, gpu)
    notes = [n for n in (note, *m.notes, card, said) if n]
    warnings = check(s, m, gpu)
    inexact = inexact_warning(m)
    stack = defaults_in_force(s, ("precision",) if card else ())
    return Resolved(scenario=s, model=m, gpu=gpu, defaults=tuple(notes), assumptions=(stack,) if stack else (),
                    warnings=(inexact, *warnings) if inexact else tuple(warnings))


def precision_note(s: Scenario, gpu: GpuSpec | None) -> str | None:
    """The sentence for a precision the card chose (:func:`gpuplan.scenario.stacks.card_precision`)."""
    if gpu is None or "precision" in s.model_fields_set or gpu.supports_dtype("bf16") or \
            not s.precision.startswith("fp16"):
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
    if s.task != "infer" or n == 1 or s.tp * s.pp != 1 or s.strategy is not None or s.num_nodes != 1:
        return {}, None
    engine = engine_for(s)
    if engine.tensor_parallel_flag and tensor_parallel_ok(m, n):
        return {"tp": n}, (f"{n} GPUs serve one copy of the model with tensor parallelism "
                           f"({engine.tensor_parallel_flag} {n}); for {n} replicas set strategy ddp")
    if n <= m.num_layers:
        return {"pp": n}, (f"{n} GPUs hold one copy of the model, its layers split across them "
                           f"({engine.layer_split_words}): each holds 1/{n} of the weights and KV cache; for {n} "
                           "replicas set strategy ddp")
    return {}, None

