"""``fit``'s refusals of every model alike live in the refusals module (:func:`gpuplan.plan.refusals.every_model`,
session 30's architecture walk: the API called five of its functions in turn and raised the stack's card sentence
itself). Each is one sentence, raised before the search, and ``fit`` says the same."""

from __future__ import annotations

import pytest

import gpuplan
from gpuplan.errors import GpuplanError
from gpuplan.hardware import resolve_gpu
from gpuplan.plan.refusals import every_model
from gpuplan.scenario import scenario_from

CASES = {  # fields of fit's scenario (the card's and its count set) -> the sentence's start
    "stack off the card": ({"gpu": "intel-gaudi3", "task": "train", "method": "lora", "stack": "unsloth"},
                           "unsloth"),
    "tp over the cards": ({"gpu": "rtx-4090", "num_gpus": 2, "task": "infer", "tp": 4}, "tp x pp = 4 must divide"),
    "a diffusion field": ({"gpu": "rtx-4090", "task": "infer", "inference_steps": 20}, "inference_steps"),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_every_model_refuses_in_one_sentence_and_fit_says_it(name):
    fields, start = CASES[name]
    s = scenario_from({**fields, "model": "each bundled model"})
    with pytest.raises(GpuplanError) as raised:
        every_model(s, resolve_gpu(fields["gpu"])[0])
    said = str(raised.value)
    assert start in said and "\n" not in said
    count = fields.get("num_gpus", 1)
    rest = {k: v for k, v in fields.items() if k not in ("gpu", "num_gpus")}
    with pytest.raises(GpuplanError) as from_fit:
        gpuplan.fit(f"{count}x{fields['gpu']}", models=["llama-3.2-1b"], **rest)
    assert str(from_fit.value) == said


def test_a_scenario_every_model_may_run_passes():
    s = scenario_from({"model": "each bundled model", "gpu": "rtx-4090", "task": "train", "method": "lora"})
    assert every_model(s, resolve_gpu("rtx-4090")[0]) is None
