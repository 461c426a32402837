"""What a person sees about models: the new families listed, and a model gpuplan cannot count exactly flagged before
any number, in every command that uses it (and in --json as model.exact: false with the reason)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from unittest import mock

import pytest

from conftest import cli_in_process

UNKNOWN = {"model_type": "my_new_lm", "architectures": ["MyNewLMForCausalLM"], "hidden_size": 4096,
           "num_attention_heads": 32, "num_key_value_heads": 8, "num_hidden_layers": 32, "vocab_size": 128256,
           "intermediate_size": 14336, "num_local_experts": 8, "num_experts_per_tok": 2, "torch_dtype": "bfloat16"}


def gpuplan(*args: str) -> subprocess.CompletedProcess:
    with mock.patch.dict(os.environ, {"COLUMNS": "120"}):
        return cli_in_process(*args)


@pytest.fixture
def unknown(tmp_path):
    path = tmp_path / "config.json"
    path.write_text(json.dumps(UNKNOWN))
    return str(path)


def test_estimate_warns_on_the_first_screen(unknown):
    done = gpuplan("estimate", "--model", unknown, "--task", "infer", "--gpu", "h100-sxm")
    assert done.returncode == 0, done.stderr
    first = done.stderr.strip().splitlines()[:3]
    assert any("not counted exactly" in line for line in first), done.stderr
    assert "upgrade transformers" in done.stderr and "gpuplan simulate" in done.stderr  # the fix, with it
    assert "Traceback" not in done.stderr


def test_json_answers_carry_exact_false_with_the_reason(unknown):
    data = json.loads(gpuplan("estimate", "--model", unknown, "--task", "infer", "--json").stdout)
    assert data["model"]["exact"] is False and "my_new_lm" in data["model"]["exact_reason"]
    assert data["warnings"][0].startswith("config.json") or "not counted exactly" in data["warnings"][0]
    facts = json.loads(gpuplan("model", unknown, "--json").stdout)
    assert facts["exact"] is False and facts["counted_by"] == "the common config keys"
    assert facts["num_experts"] == 8  # the conventions still read its experts
    rec = gpuplan("recommend", "--model", unknown, "--task", "infer", "--top", "1")
    assert "not counted exactly" in rec.stderr.splitlines()[0]


def test_bundled_models_are_exact(unknown):
    data = json.loads(gpuplan("estimate", "--model", "qwen3-next", "--task", "infer", "--json").stdout)
    assert data["model"]["exact"] is True and data["model"]["exact_reason"] is None


def test_models_lists_the_new_families():
    rows = json.loads(gpuplan("models", "--json").stdout)
    families = {r["family"] for r in rows}
    assert {"llama4", "qwen3_next", "qwen3_5", "qwen3_vl", "glm4_moe", "glm_moe_dsa", "kimi_k2", "deepseek_v32",
            "minimax_m2", "falcon_h1", "ernie4_5_moe", "smollm3", "gemma3", "nemotron_h"} <= families
    # DeepSeek-V4's compressed-attention cache is measured over 3 tokens only: it says so
    assert [r["name"] for r in rows if not r["exact"]] == ["deepseek-ai/DeepSeek-V4-Flash",
                                                          "deepseek-ai/DeepSeek-V4-Pro"]
    assert len(rows) >= 75


def test_unreadable_config_is_one_sentence(tmp_path):
    path = tmp_path / "config.json"
    path.write_text(json.dumps({"model_type": "mystery_lm", "hidden_size": 64}))
    done = gpuplan("model", str(path))
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert "lacks num_attention_heads, num_hidden_layers, vocab_size" in done.stderr


def test_first_models_listing_builds_nothing_and_says_nothing(tmp_path):
    """A fresh install (empty cache): `gpuplan models` lists every bundled model from what ships, with nothing
    on stderr (no build, no third-party warnings) and nothing written to the cache."""
    done = subprocess.run([sys.executable, "-m", "gpuplan", "models", "--json"], capture_output=True, text=True,
                          env={**os.environ, "GPUPLAN_CACHE_DIR": str(tmp_path / "cache")})
    assert done.returncode == 0 and done.stderr == "", done.stderr
    from gpuplan.model.catalog import bundled

    assert len(json.loads(done.stdout)) == len(bundled())
    assert not (tmp_path / "cache").exists() or not any((tmp_path / "cache").rglob("*"))


def test_a_hybrid_models_mixers_are_not_called_attention_alone(capsys):
    """Falcon-H1 runs a Mamba-2 mixer beside attention in each layer; their parameters are one part, which the
    table called "attention" (95 % of a pure Mamba-2 model's parameters read "attention"). A model with recurrent
    state names the part for both; a transformer keeps "attention"."""
    from gpuplan.cli import run

    assert run(["model", "falcon-h1-0.5b"]) == 0
    hybrid = capsys.readouterr().out
    assert "│ attention and recurrent mixers │ 227,702,304 │" in hybrid
    assert run(["model", "llama-3.2-1b"]) == 0
    dense = capsys.readouterr().out
    assert "│ attention  │" in dense and "recurrent" not in dense
