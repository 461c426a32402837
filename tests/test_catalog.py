"""Resolving a model argument: aliases, paths, hub ids (offline and cached), and every error path."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from gpuplan import GpuplanError, load_model
from gpuplan.errors import UnknownNameError
from gpuplan.model.catalog import aliases, bundled


def test_75_configs_bundled_without_transcription_keys():
    assert len(bundled()) == 75
    for path in bundled().values():
        assert not any(k.startswith("_transcription") for k in json.loads(path.read_text()))


@pytest.mark.parametrize("name, repo", [
    ("llama-3.1-8b", "meta-llama/Llama-3.1-8B"),
    ("Qwen2.5-72B", "Qwen/Qwen2.5-72B"),
    ("deepseek-r1", "deepseek-ai/DeepSeek-R1"),
    ("mixtral-8x7b", "mistralai/Mixtral-8x7B-v0.1"),
    ("GPT-OSS-20B", "openai/gpt-oss-20b"),
    # the names the guides use
    ("DeepSeek-R1-Distill-Qwen-7B", "deepseek-ai/DeepSeek-R1-Distill-Qwen-7B"),
    ("Llama 3 70B", "meta-llama/Meta-Llama-3-70B"),
    ("GPT-NeoX", "EleutherAI/gpt-neox-20b"),
    ("BLOOM", "bigscience/bloom"),
    ("meta-llama/Llama-3.1-8B", "meta-llama/Llama-3.1-8B"),
])
def test_aliases(name, repo):
    assert load_model(name).name == repo


def test_every_alias_points_at_a_bundled_model():
    assert set(aliases().values()) == set(bundled())


def test_typo_suggests():
    with pytest.raises(UnknownNameError) as err:
        load_model("lama-3.1-8b")
    assert "llama-3.1-8b" in err.value.suggestions
    assert "did you mean" in str(err.value)


def test_local_file_and_folder(tmp_path):
    config = json.loads(bundled()["meta-llama/Llama-3.2-1B"].read_text())
    (tmp_path / "config.json").write_text(json.dumps(config))
    assert load_model(str(tmp_path)).params_total == 1_235_814_400
    assert load_model(str(tmp_path / "config.json")).params_total == 1_235_814_400


def test_bad_path():
    with pytest.raises(GpuplanError, match="no such file"):
        load_model("./nowhere/config.json")


def test_folder_without_config(tmp_path):
    with pytest.raises(GpuplanError, match=r"no config\.json"):
        load_model(str(tmp_path))


def test_malformed_json(tmp_path):
    bad = tmp_path / "config.json"
    bad.write_text('{"model_type": "llama", ')
    with pytest.raises(GpuplanError, match="not valid JSON"):
        load_model(str(bad))


def test_json_that_is_not_an_object(tmp_path):
    bad = tmp_path / "config.json"
    bad.write_text("[1, 2]")
    with pytest.raises(GpuplanError, match=r"not a config\.json object"):
        load_model(str(bad))


def test_missing_keys_are_named(tmp_path):
    bad = tmp_path / "config.json"
    bad.write_text(json.dumps({"model_type": "mystery", "hidden_size": 64}))
    with pytest.raises(GpuplanError, match="num_attention_heads, num_hidden_layers, vocab_size"):
        load_model(str(bad))


def test_known_family_missing_key(tmp_path):
    bad = tmp_path / "config.json"
    bad.write_text(json.dumps({"model_type": "llama", "hidden_size": 64, "num_attention_heads": 4,
                               "num_hidden_layers": 2, "vocab_size": 10}))
    with pytest.raises(GpuplanError, match="lacks intermediate_size"):
        load_model(str(bad))


def _hub(code: str, tmp_path, **env) -> subprocess.CompletedProcess:
    environment = {**os.environ, "HF_HOME": str(tmp_path / "hf"), "HF_HUB_OFFLINE": "1", **env}
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=environment)


def test_offline_hub_id_not_cached_is_a_clear_error(tmp_path):
    pytest.importorskip("huggingface_hub")
    proc = _hub("from gpuplan import load_model; load_model('someorg/some-model')", tmp_path)
    assert proc.returncode != 0
    assert "not in the local cache" in proc.stderr and "pass its path" in proc.stderr


def test_offline_hub_id_from_cache(tmp_path):
    """A config already in the huggingface_hub cache is used without network (HF_HUB_OFFLINE=1)."""
    pytest.importorskip("huggingface_hub")
    commit = "0" * 40
    repo = tmp_path / "hf" / "hub" / "models--someorg--tiny"
    (repo / "refs").mkdir(parents=True)
    (repo / "refs" / "main").write_text(commit)
    (repo / "snapshots" / commit).mkdir(parents=True)
    config = json.loads(bundled()["Qwen/Qwen2.5-0.5B"].read_text())
    (repo / "snapshots" / commit / "config.json").write_text(json.dumps(config))
    proc = _hub("from gpuplan import load_model; print(load_model('someorg/tiny').params_total)", tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "494032768"
