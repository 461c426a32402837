"""A config's ``auto_map`` (the repo's own modeling code) is never imported, nor asked about (session 18's security
audit): transformers' ``AutoModelForCausalLM.from_config`` with ``trust_remote_code`` unset asked "Do you wish to
run the custom code? [y/N]" on the terminal where the config's model_type has no causal-LM class of its own (llava
and some 500 others), and a "y" imported the module its ``_name_or_path`` pointed at."""

from __future__ import annotations

import builtins
import json

import pytest

from conftest import require
from gpuplan.cli import run


@pytest.fixture
def evil(tmp_path):
    folder = tmp_path / "evilrepo"
    folder.mkdir()
    marker = tmp_path / "ran"
    (folder / "modeling_evil.py").write_text(f"import pathlib\npathlib.Path({str(marker)!r}).write_text('ran')\n")
    (folder / "config.json").write_text(json.dumps({
        "model_type": "llava", "_name_or_path": str(folder), "auto_map": {"AutoModelForCausalLM": "modeling_evil.Evil"},
        "text_config": {"model_type": "llama", "hidden_size": 64, "num_hidden_layers": 1, "num_attention_heads": 2,
                        "intermediate_size": 128, "vocab_size": 100}}))
    return folder / "config.json", marker


def test_a_config_s_auto_map_is_never_asked_about_nor_run(evil, tmp_path, monkeypatch, capsys):
    require("transformers")
    config, marker = evil
    asked = []
    monkeypatch.setattr(builtins, "input", lambda prompt="": asked.append(prompt) or "y")
    monkeypatch.setenv("HF_MODULES_CACHE", str(tmp_path / "modules"))
    monkeypatch.setenv("GPUPLAN_CACHE_DIR", str(tmp_path / "cache"))
    run(["estimate", "--model", str(config), "--task", "infer", "--gpu", "h100"])
    assert asked == [] and not marker.exists(), capsys.readouterr().err


def test_the_builder_refuses_an_auto_map_left_in_a_config(evil):
    """The one builder of a model by its model_type (trace.instantiate) passes trust_remote_code=False: an auto_map
    that reached it is an error (a sentence upstream), never a question."""
    transformers = require("transformers")
    import torch

    from gpuplan.model.trace import instantiate

    config, marker = evil
    data = json.loads(config.read_text())
    cfg = transformers.AutoConfig.for_model(**{k: v for k, v in data.items() if k != "_name_or_path"})
    cfg._name_or_path = data["_name_or_path"]
    with torch.device("meta"), pytest.raises(ValueError, match="trust_remote_code=True"):
        instantiate({"model_type": "llava"}, cfg)
    assert not marker.exists()
