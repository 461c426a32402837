"""A config that transformers or diffusers builds (a family without an exact reader, an encoder-decoder, a
pipeline's component) may name at most 512 layers in one stack, refused before the library builds any (session 19's
security audit): a Bart config sent with ``decoder_layers: 200000`` ran ``gpuplan estimate`` for hours (each layer
built on the meta device and run on fake tensors; 1,000 layers had not finished in 500 s), because the bound of
``num_hidden_layers`` (10,000, for the exact readers) does not name the keys those libraries read."""

from __future__ import annotations

import json
import re

import pytest

from conftest import require
from gpuplan.cli import run
from gpuplan.errors import GpuplanError
from gpuplan.model.validate import MOST_BUILT_LAYERS, check_depth

BART = {"model_type": "bart", "architectures": ["BartForConditionalGeneration"], "d_model": 64, "encoder_layers": 2,
        "decoder_layers": 200_000, "encoder_attention_heads": 4, "decoder_attention_heads": 4, "encoder_ffn_dim": 128,
        "decoder_ffn_dim": 128, "vocab_size": 1000, "max_position_embeddings": 512}


def test_an_encoder_decoder_with_200000_layers_is_refused_before_it_is_built(tmp_path, monkeypatch, capsys):
    require("transformers")
    (tmp_path / "bart").mkdir()
    (tmp_path / "bart" / "config.json").write_text(json.dumps(BART))
    monkeypatch.setenv("GPUPLAN_CACHE_DIR", str(tmp_path / "cache"))
    assert run(["estimate", "--model", str(tmp_path / "bart" / "config.json"), "--task", "infer", "--gpu",
                "h100"]) == 2
    err = capsys.readouterr().err.strip()
    assert err == ("error: bart: decoder_layers is 200,000; a model built by transformers or diffusers may have at "
                   "most 512 layers in one stack"), err


def test_a_traced_family_is_refused_past_the_bound_before_transformers_builds_it():
    require("transformers")
    from gpuplan.model.trace import build_meta

    config = {"model_type": "mamba", "hidden_size": 64, "num_hidden_layers": 600, "vocab_size": 100}
    with pytest.raises(GpuplanError, match=r"the mamba config: num_hidden_layers is 600; .* at most 512 layers"):
        build_meta(config)


@pytest.mark.parametrize("config, said", [
    ({"model_type": "t5", "num_layers": 6, "num_decoder_layers": 10**6}, "num_decoder_layers is 1,000,000"),
    ({"vision_config": {"depth": 4096}}, "vision_config.depth is 4,096"),
    ({"transformer_layers_per_block": [1, 2, 10**5]}, "transformer_layers_per_block is 100,000"),
    ({"n_layer": 10**20}, "n_layer is about 10^20"),
    ({"num_single_layers": 1e9}, "num_single_layers is 1,000,000,000"),
], ids=["t5-decoder", "vision-depth", "unet-per-block", "gpt2-huge", "flux-float"])
def test_every_layer_count_a_library_reads_is_bounded(config, said):
    with pytest.raises(GpuplanError, match=re.escape(f"the config: {said}; ")):
        check_depth(config)


def test_real_depths_and_other_keys_pass():
    check_depth({"num_hidden_layers": MOST_BUILT_LAYERS, "text_config": {"num_hidden_layers": 126,
                                                                         "max_window_layers": 126},
                 "vision_config": {"depth": 32}, "layers_per_block": 2, "transformer_layers_per_block": [1, 2, 10],
                 "moe_layers": list(range(48)), "hidden_size_per_layer_input": 10_000, "layer_norm_eps": 1e-5,
                 "use_layer_norm": True, "num_blocks": 24})
