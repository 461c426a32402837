"""Every bundled config: our parameter count equals transformers' model on the meta device."""

from __future__ import annotations

import json

import pytest

from conftest import require
from gpuplan.model.catalog import bundled, load_model

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
    cfg = transformers.AutoConfig.for_model(**config)
    with torch.device("meta"):
        if config["model_type"] == "gemma3":
            model = transformers.Gemma3ForConditionalGeneration(cfg)
        else:
            model = transformers.AutoModelForCausalLM.from_config(cfg)
    return sum(p.numel() for p in model.parameters())


@pytest.mark.parametrize("repo", sorted(bundled()))
def test_param_count_matches_transformers(repo):
    config = json.loads(bundled()[repo].read_text())
    assert load_model(repo).params_total == transformers_param_count(config)
