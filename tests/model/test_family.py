"""A config without ``model_type`` (transformers' own AutoConfig refuses one; gpuplan reads its structure off the
class ``architectures`` names) was shown as family "None": ``gpuplan model`` printed ``(None, Qwen2ForCausalLM)``
and the launchers' family checks (torchtune's Qwen2 tokenizer, torchtitan's Llama, Megatron's Llama-like) compared
"None". The family is the model_type transformers files that class under, else the class's name, else "unknown"."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import gpuplan
from gpuplan.model.catalog import load_model
from gpuplan.model.reading import family_of

QWEN = Path(gpuplan.__file__).parent / "data" / "models" / "Qwen__Qwen2.5-0.5B.json"


@pytest.mark.parametrize("config, family", [
    ({"model_type": "llama", "architectures": ["MistralForCausalLM"]}, "llama"),  # model_type first, as written
    ({"architectures": ["GPTNeoXForCausalLM"]}, "gpt_neox"),  # transformers' AutoModelForCausalLM table
    ({"model_type": "", "architectures": ["Gemma3ForConditionalGeneration"]}, "gemma3"),  # image-text-to-text
    ({"architectures": ["MadeUpForCausalLM"]}, "MadeUpForCausalLM"),  # a class transformers does not file
    ({}, "unknown"), ({"architectures": []}, "unknown"), ({"model_type": None, "architectures": [None]}, "unknown"),
])
def test_the_family_of_a_config(config, family):
    pytest.importorskip("transformers")
    assert family_of(config) == family


def test_a_config_without_model_type_is_of_its_class_family(tmp_path):
    pytest.importorskip("transformers")
    config = json.loads(QWEN.read_text())
    del config["model_type"]
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config))
    spec = load_model(str(path))
    assert (spec.family, spec.architecture) == ("qwen2", "Qwen2ForCausalLM")
    assert spec.params_total == load_model("Qwen/Qwen2.5-0.5B").params_total == 494_032_768
