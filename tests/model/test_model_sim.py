"""Every bundled config: our parameter count equals transformers' model on the meta device (the class its
``architectures`` names: multimodal checkpoints with their towers); the bundled structures equal a fresh trace."""

from __future__ import annotations

import json

import pytest

from conftest import require
from gpuplan.model.catalog import bundled, load_model
from sampling import part_of

pytestmark = pytest.mark.sim


def _as_native_falcon(config: dict) -> dict:
    """The legacy RefinedWeb keys of falcon-40b renamed as the current HF file names them (same weights)."""
    out = {k: v for k, v in config.items() if k not in ("n_head", "n_head_kv", "n_layer", "auto_map")}
    out.update(model_type="falcon", num_attention_heads=config["n_head"], num_kv_heads=config["n_head_kv"],
               num_hidden_layers=config["n_layer"], new_decoder_architecture=True)
    return out


def transformers_param_count(config: dict) -> int:
    torch = require("torch")
    transformers = require("transformers")
    if config["model_type"] == "RefinedWeb":
        config = _as_native_falcon(config)
    from gpuplan.model.trace import instantiate, quiet

    config = {k: v for k, v in config.items() if not k.startswith("_transcription") and k != "quantization_config"}
    if config["model_type"] == "kimi_k2":  # remote code under DeepSeek-V3's architecture
        config = {k: v for k, v in config.items() if k != "auto_map"} | {"model_type": "deepseek_v3"}
    with quiet():
        cfg = transformers.AutoConfig.for_model(**config)
        with torch.device("meta"):
            model = instantiate(config, cfg)
    return sum(p.numel() for p in model.parameters())


@pytest.mark.parametrize("repo", sorted(bundled()))
def test_param_count_matches_transformers(repo):
    config = json.loads(bundled()[repo].read_text())
    assert load_model(repo).params_total == transformers_param_count(config)


def test_bundled_structures_equal_a_fresh_trace(tmp_path):
    """The structures shipped for models no reader counts exactly (vision towers) are what the installed
    transformers builds: every field, layer and note, the version named in the notes aside. Every structure names
    the installed version; a run traces a quarter of them afresh (tests/sampling.py: each one every 4 days or seeds,
    all of them with ``GPUPLAN_SWEEP=all``): a trace with autograd takes 2 to 15 s."""
    require("transformers")
    from gpuplan.model import structure
    from gpuplan.model.trace import trace

    installed = structure.installed_transformers()
    paths = sorted(structure.bundled_folder().glob("*.json"))
    for path in paths:
        stored = json.loads(path.read_text())
        if stored["transformers"] != installed:
            pytest.fail(f"bundled structures were traced with transformers {stored['transformers']}; installed "
                        f"{installed}: run python -m gpuplan.model.structure to trace them again", pytrace=False)
    for path in part_of(paths, 4):
        stored = json.loads(path.read_text())
        repo = next(r for r, p in bundled().items() if structure.config_key(json.loads(p.read_text())) == path.stem)
        fresh = json.loads(json.dumps(structure.to_json(*trace(json.loads(bundled()[repo].read_text())),
                                                        stored["transformers"])))
        fresh["notes"] = [note.replace(f"transformers {installed} ", f"transformers {stored['transformers']} ")
                          for note in fresh["notes"]]
        assert fresh == stored, (f"{repo}: transformers {installed} builds another structure than the one shipped "
                                 f"(read with {stored['transformers']}): python -m gpuplan.model.structure rewrites it")


def test_experts_without_a_routing_key_are_refused_in_one_sentence():
    """A MoE config whose experts-per-token key the trace does not find was read as 0 experts per token (Gemma 4's
    ``top_k_experts`` before it was read): timing divided by 0. Gemma 4's key is read (8); without any key the
    reading is one sentence naming the keys it looks for."""
    require("transformers")
    from gpuplan.model.trace import TraceError, trace

    config = json.loads(bundled()["google/gemma-4-26B-A4B"].read_text())
    assert trace(config)[0]["experts_per_token"] == 8
    text = {k: v for k, v in config["text_config"].items() if k != "top_k_experts"}
    with pytest.raises(TraceError) as err:
        trace({**config, "text_config": text})
    assert str(err.value) == ("the gemma4 model has experts but its config names no experts per token (one of "
                              "num_experts_per_tok, num_experts_per_token, experts_per_token...), so its active "
                              "parameters cannot be counted")
