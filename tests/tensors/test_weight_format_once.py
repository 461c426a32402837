"""The weight format is derived once per model and the scenario fields it reads (session 30's walk counted three
derivations per plan, 98 in one serving estimate): held on the model, a plan's input, and read by the refusals,
the memory, the engine's stages and the speed."""

from __future__ import annotations

import dataclasses

from gpuplan.model.catalog import load_model
from gpuplan.plan.build import build
from gpuplan.plan.resolve import resolve
from gpuplan.scenario import scenario_from
from gpuplan.tensors import state

SERVE = {"model": "llama-3.1-8b", "task": "infer", "engine": "vllm", "gpu": "l40s", "batch_size": 16,
         "prompt_tokens": 2048}


def _counted(monkeypatch) -> list:
    seen = []
    derive = state.derive_weight_format
    monkeypatch.setattr(state, "derive_weight_format", lambda s, m: seen.append(s.quant) or derive(s, m))
    return seen


def test_a_plan_derives_its_weight_format_once(monkeypatch):
    """A whole serving plan (its refusals, memory, vLLM's stages, speed, simulated batch and the advice's probes at
    other batches and prompts) on a model fresh from the catalog derives the format once; the value read is the one
    derived: Llama-3.1-8B ships unquantized (format "none": every linear at the compute dtype, the routers, which it
    has none of, always kept out)."""
    m = dataclasses.replace(load_model("llama-3.1-8b"))  # a copy: nothing derived on it yet
    seen = _counted(monkeypatch)
    plan = build(resolve(scenario_from(SERVE), m), simulate=True)
    assert plan.memory.weights_gib > 14 and seen == [None]
    fmt, skip = state.weight_format(scenario_from(SERVE), m)
    assert (fmt.name, skip) == ("none", ("router",)) and seen == [None]


def test_another_format_is_derived_for_the_fields_it_reads(monkeypatch):
    """Another quant is another format, derived once too; a field the format does not read (the batch) is not."""
    m = dataclasses.replace(load_model("llama-3.1-8b"))
    seen = _counted(monkeypatch)
    fp8 = state.weight_format(scenario_from({**SERVE, "quant": "fp8"}), m)
    assert state.weight_format(scenario_from({**SERVE, "quant": "fp8", "batch_size": 4}), m) is fp8
    assert state.weight_format(scenario_from(SERVE), m)[0].name == "none" and fp8[0].name == "fp8"
    assert seen == ["fp8", None]
