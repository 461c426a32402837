"""Resolving a model argument: aliases, paths, hub ids (offline and cached), and every error path."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

import gpuplan
from gpuplan import GpuplanError, load_model
from gpuplan.errors import UnknownNameError
from gpuplan.model.catalog import aliases, bundled, bundled_repo

README = Path(__file__).resolve().parents[2] / "README.md"


def test_92_configs_bundled_without_transcription_keys():
    assert len(bundled()) == 92
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


def test_full_width_letters_name_the_model_they_spell():
    """s20-fuzz's leftover: ``ｑｗｅｎ３-８ｂ`` (an East Asian keyboard's full-width forms) was "unknown model" with no
    suggestion; names are folded with NFKC, so it is Qwen3-8B, and a GPU so typed is the GPU."""
    from gpuplan.hardware import load_gpu

    assert load_model("ｑｗｅｎ３－８ｂ").name == load_model("qwen3-8b").name == "Qwen/Qwen3-8B"
    assert load_gpu("ｈ１００").name == load_gpu("h100").name
    with pytest.raises(UnknownNameError) as err:
        load_model("ｌａｍａ-3.1-8b")
    assert "llama-3.1-8b" in err.value.suggestions


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


@pytest.mark.parametrize("repo_id, hint", [
    ("Qwen/Qwen2.5-7B-Instruct-1M", "(did you mean the bundled 'Qwen/Qwen2.5-7B'?)"),  # new-user review 3
    ("Qwen/Qwen2.5-3B-Instruct", None),  # no bundled Qwen2.5 of 3B: nothing, not a Qwen3-VL of another size
])
def test_offline_suggestion_keeps_the_numbers_typed(repo_id, hint, tmp_path):
    """The bundled name offered for a repo not in the cache has the version and size that were typed; before,
    difflib's letters offered 'Qwen/Qwen3-VL-8B-Instruct' for the 1M-context Qwen2.5-7B."""
    pytest.importorskip("huggingface_hub")
    proc = _hub(f"from gpuplan import load_model; load_model({repo_id!r})", tmp_path)
    assert "not in the local cache" in proc.stderr
    if hint:
        assert hint in proc.stderr
    else:
        assert "did you mean" not in proc.stderr


@pytest.mark.parametrize("name, offered, not_offered", [
    ("llama-3.1-8b-instrct", "llama-3.1-8b", "llama-3.3-70b-instruct"),
    ("qwen25-7b", "qwen2.5-7b", "qwen3.5-35b"),
])
def test_a_typo_is_offered_names_of_its_version_and_size(name, offered, not_offered):
    with pytest.raises(UnknownNameError) as err:
        load_model(name)
    assert offered in err.value.suggestions and not_offered not in err.value.suggestions


def test_no_suggestion_of_another_size():
    with pytest.raises(UnknownNameError) as err:
        load_model("qwen2.5-3b")
    assert err.value.suggestions == [] and "did you mean" not in str(err.value)


def cache_config(tmp_path, repo_id: str, config: dict) -> None:
    """Put ``config`` in a huggingface_hub cache under ``tmp_path/hf/hub`` as ``repo_id``'s main revision."""
    commit = "0" * 40
    repo = tmp_path / "hf" / "hub" / ("models--" + repo_id.replace("/", "--"))
    (repo / "refs").mkdir(parents=True)
    (repo / "refs" / "main").write_text(commit)
    (repo / "snapshots" / commit).mkdir(parents=True)
    (repo / "snapshots" / commit / "config.json").write_text(json.dumps(config))


def test_offline_hub_id_from_cache(tmp_path):
    """A config already in the huggingface_hub cache is used without network (HF_HUB_OFFLINE=1)."""
    pytest.importorskip("huggingface_hub")
    config = json.loads(bundled()["Qwen/Qwen2.5-0.5B"].read_text())
    cache_config(tmp_path, "someorg/tiny", config)
    proc = _hub("from gpuplan import load_model; print(load_model('someorg/tiny').params_total)", tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "494032768"


def test_a_cached_hub_module_is_known_before_it_is_resolved(tmp_path):
    """The scenario's checks word their refusals by the model's kind before the resolver asks the hub: a repo id
    whose config is in the local cache is known as the module it is (no network), one that is not is not."""
    pytest.importorskip("huggingface_hub")
    config = json.loads((Path(gpuplan.__file__).parent / "data/modules/models/google__flan-t5-base.json").read_text())
    cache_config(tmp_path, "someorg/t5", config["config"])
    code = ("from gpuplan.model.kinds import known_here as k; a = k('someorg/t5'); "
            "print(a.kind, a.family, k('someorg/other'), k('llama-3.1-8b'), k('a b/c d'))")
    proc = _hub(code, tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["encoder-decoder", "t5", "None", "None", "None"]


# ---- config.json values checked at the boundary ---------------------------------------------------------
TINY = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 256, "intermediate_size": 512,
        "num_attention_heads": 8, "num_key_value_heads": 4, "num_hidden_layers": 4, "vocab_size": 1000,
        "max_position_embeddings": 2048, "torch_dtype": "bfloat16"}


@pytest.mark.parametrize("change, message", [
    ({"hidden_size": float("nan")}, "hidden_size must be a whole number, got nan"),
    ({"hidden_size": -256}, "hidden_size must be between 1 and"),
    ({"num_hidden_layers": 2.5}, "num_hidden_layers must be a whole number, got 2.5"),
    ({"hidden_size": "256"}, "hidden_size must be a number, got '256'"),
    ({"model_type": "mixtral", "num_local_experts": 0, "num_experts_per_tok": 4}, "num_local_experts must be"),
    ({"model_type": "mixtral", "num_local_experts": 2, "num_experts_per_tok": 4}, "experts per token but only 2"),
    # session 7's walk: Gemma 4's key, top_k_experts 999 of 128, ended in an OverflowError traceback in the speed
    ({"text_config": {"num_experts": 128, "top_k_experts": 999}},
     "999 experts per token but only 128 experts; top_k_experts must not exceed the expert count"),
    ({"text_config": {"num_experts": 128, "top_k_experts": 0}}, "top_k_experts must be between 1 and"),
    # session 18's fuzzing: ERNIE 4.5's keys (moe_num_experts, moe_k) were not compared, and 6 of 1 expert planned
    # more parameters active than in all (3.35 B of 1.76 B); Hunyuan's moe_topk likewise
    ({"model_type": "ernie4_5_moe", "moe_num_experts": 1, "moe_k": 6},
     "6 experts per token but only 1 expert; moe_k must not exceed the expert count"),
    ({"model_type": "hunyuan_v1_moe", "num_experts": 4, "moe_topk": 8},
     "8 experts per token but only 4 experts; moe_topk"),
    # the sizes the common-keys reader takes for Mamba and sparse-attention layers: a list (Nemotron-H's n_groups)
    # or an object (GLM-5's index_n_heads) ended in a TypeError inside the reader
    ({"n_groups": []}, "n_groups must be"), ({"index_n_heads": {}}, "index_n_heads must be"),
    ({"moe_k": {}}, "moe_k must be"),
    ({"interleave_moe_layer_step": "8"}, "interleave_moe_layer_step must be a number"),
    # a per-layer width list (Gemma 3n's form) given to a family whose reader takes one number: a TypeError before
    ({"intermediate_size": [1, 2]}, "intermediate_size is a list (one per layer or part), and llama configs give"),
    ({"quantization_config": [1, 2]}, "quantization_config must be a JSON object, got list"),
    ({"num_key_value_heads": 0}, "num_key_value_heads must be between 1 and"),
    ({"model_type": ["llama"]}, "model_type must be text"),
    ({"num_hidden_layers": True}, "num_hidden_layers must be a number"),
    ({"num_attention_heads": 257}, "hidden_size 256 is smaller than num_attention_heads 257"),  # found by the fuzz
    # found by the fuzz: it built two billion layer objects
    ({"num_hidden_layers": 2_000_000_000}, "num_hidden_layers must be between 1 and 10,000"),
    # fuzz-report-3 N3: contradictory heads gave plans ("1.64 GiB, fits")
    ({"num_key_value_heads": 64}, "num_key_value_heads 64 is more than num_attention_heads 8"),
    ({"num_key_value_heads": 3}, "num_attention_heads 8 is not a multiple of num_key_value_heads 3"),
    ({"head_dim": 0}, "head_dim 0 gives heads of no size; remove it (transformers then takes hidden_size / "
                      "num_attention_heads = 32)"),
    # fuzz-report-3: a 501-character line ending in a 300-digit number
    ({"hidden_size": 1e308}, "hidden_size must be between 1 and 2,147,483,648, got 1e+308"),
    ({"hidden_size": 10**100}, "hidden_size must be between 1 and 2,147,483,648, got about 10^100"),
    # the rewalk: a 3-bit GPTQ config passed here and failed in the plan as "unknown quant format 'gptq-int3'", a
    # name the user never wrote and without the file's
    ({"quantization_config": {"quant_method": "gptq", "bits": 3}},
     ": GPTQ checkpoints with 3 bits are not supported; gpuplan sizes 4- and 8-bit"),
    # review leftover: a window of 0 with sliding attention on was read silently as full attention
    ({"sliding_window": 0, "use_sliding_window": True},
     ": sliding_window is 0 while use_sliding_window true turns sliding attention on"),
    ({"sliding_window": 0, "layer_types": ["sliding_attention", "full_attention"] * 2},
     "sliding_window is 0 while layer_types 'sliding_attention' turns sliding attention on"),
    ({"sliding_window": 0, "sliding_window_pattern": 2}, "sliding_window is 0 while sliding_window_pattern 2 turns"),
    ({"text_config": {"sliding_window": 0, "use_sliding_window": True}}, "(text_config): sliding_window is 0"),
    # s30-fuzz: a YaRN factor of NaN, 1e308 or 10**400 ended in a traceback in every serving plan (int() of the
    # scaled context); rope_theta "abc" in one from `launch --stack torchtitan`, and NaN was written into
    # gpuplan_model.py as `'rope_theta': nan`
    ({"rope_scaling": {"rope_type": "yarn", "factor": float("nan"), "original_max_position_embeddings": 2048}},
     "rope_scaling.factor must be a positive, finite number, got nan"),
    ({"rope_scaling": {"rope_type": "yarn", "factor": 1e308, "original_max_position_embeddings": 2048}},
     "rope_scaling.factor must be a positive, finite number, got 1e+308"),
    ({"rope_scaling": {"rope_type": "yarn", "factor": 10**6, "original_max_position_embeddings": 32768}},
     "rope_scaling.factor 1,000,000 x original_max_position_embeddings 32,768 reaches more than 2,147,483,648"),
    ({"rope_scaling": {"rope_type": "yarn", "factor": 4, "original_max_position_embeddings": "32k"}},
     "rope_scaling.original_max_position_embeddings must be a number, got '32k'"),
    ({"rope_parameters": {"full_attention": {"rope_theta": float("inf")}}},
     "rope_parameters.full_attention.rope_theta must be a positive, finite number, got inf"),
    ({"rope_theta": "abc"}, "rope_theta must be a number, got 'abc'"),
    ({"rope_theta": float("nan")}, "rope_theta must be a positive, finite number, got nan"),
    ({"rms_norm_eps": -1e-6}, "rms_norm_eps must be a positive, finite number, got -1e-06"),
    ({"rope_scaling": "yarn"}, "rope_scaling must be a JSON object, got str"),
    # s30-fuzz: the Mamba-2 chunk (Falcon-H1, Nemotron-H), Llama 4's attention chunk and the layer lists, taken
    # unchecked: NaN, 0, "x" or a list there ended in ValueError, ZeroDivisionError or TypeError tracebacks
    ({"mamba_chunk_size": 0}, "mamba_chunk_size must be between 1 and"),
    ({"chunk_size": float("nan")}, "chunk_size must be a whole number, got nan"),
    ({"attention_chunk_size": "x"}, "attention_chunk_size must be a number, got 'x'"),
    ({"mamba_expand": [2]}, "mamba_expand must be a number"),
    ({"moe_layers": [[1]]}, "moe_layers must list whole numbers (layer indices or 0/1 per layer), got '[[1]]'"),
    ({"no_rope_layers": "1,1,0"}, "no_rope_layers must be a JSON list, got str"),
    ({"no_rope_layers": [1]}, "no_rope_layers lists 1 flags but num_hidden_layers is 4; give one 0/1 per layer"),
    ({"hybrid_override_pattern": 5}, "hybrid_override_pattern must be text, got 5"),
])
def test_broken_configs_are_refused_in_one_sentence(tmp_path, change, message):
    """The fuzz report's configs (a tiny Llama with one field broken): one sentence naming the key, not a
    traceback deep in the arithmetic."""
    path = tmp_path / "config.json"
    path.write_text(json.dumps({**TINY, **change}, allow_nan=True))
    with pytest.raises(GpuplanError, match=re.escape(message)):
        load_model(str(path))


@pytest.mark.parametrize("value, said", [
    ("256", "hidden_size must be a number, got '256'; write it without quotes"),
    ("fp8", "hidden_size must be a number, got 'fp8'"),
    (True, "hidden_size must be a number, got True"), ({}, "hidden_size must be a number, got '{}'"),
])
def test_only_a_number_written_as_text_is_told_to_drop_its_quotes(tmp_path, value, said):
    """The outside fuzzer's session 17: every size of the wrong type was told "write it without quotes", a
    true, an object or the word "fp8" too, where no quotes were written or dropping them gives no number."""
    path = tmp_path / "config.json"
    path.write_text(json.dumps({**TINY, "hidden_size": value}))
    with pytest.raises(GpuplanError) as err:
        load_model(str(path))
    assert str(err.value).endswith(said)


def test_sliding_window_0_without_sliding_layers_stands(tmp_path):
    """Released configs write 0 or null for "no window" where nothing turns sliding attention on."""
    plain = load_model(str(_write(tmp_path / "a", TINY))).params_total
    assert load_model(str(_write(tmp_path / "b", {**TINY, "sliding_window": 0}))).params_total == plain
    assert load_model(str(_write(tmp_path / "c", {**TINY, "sliding_window": 0, "use_sliding_window": False}))
                      ).params_total == plain


def test_head_dim_0_stands_in_mla_configs(tmp_path):
    """DeepSeek's MLA configs may carry head_dim 0: their heads are sized by qk_nope_head_dim and v_head_dim."""
    config = json.loads(bundled()["deepseek-ai/DeepSeek-V3"].read_text())
    path = tmp_path / "config.json"
    path.write_text(json.dumps({**config, "head_dim": 0}))
    assert load_model(str(path)).params_total == load_model("deepseek-ai/DeepSeek-V3").params_total


def test_a_deep_or_huge_config_is_a_short_sentence(tmp_path):
    deep = tmp_path / "deep.json"
    deep.write_text("[" * 3000 + "]" * 3000)
    with pytest.raises(GpuplanError, match=r"deep\.json: lists or mappings nest more than 64 levels deep"):
        load_model(str(deep))
    huge = tmp_path / "config.json"
    huge.write_text(json.dumps({**TINY, "hidden_size": 1e308}))
    with pytest.raises(GpuplanError) as err:
        load_model(str(huge))
    assert len(str(err.value)) < len(str(huge)) + 80


@pytest.mark.parametrize("name", [-1, float("nan"), None, b"gpt2", ["gpt2"], {"model": "gpt2"}])
def test_a_model_named_by_anything_but_text_is_one_sentence(name):
    """fuzz-report-3 F9/C8: load_model(-1) and load_model(nan) gave AttributeError."""
    with pytest.raises(GpuplanError, match="a model is named by text"):
        load_model(name)


def test_integral_floats_are_read_as_counts(tmp_path):
    path = tmp_path / "config.json"
    path.write_text(json.dumps({**TINY, "hidden_size": 256.0, "num_hidden_layers": 4.0}))
    assert load_model(str(path)).params_total == load_model(str(_write(tmp_path / "b", TINY))).params_total


def _write(folder, config):
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps(config))
    return folder


def test_a_name_too_long_for_a_path_is_an_unknown_model():
    with pytest.raises(GpuplanError, match="unknown model"):
        load_model("a" * 300)


# ---- the README's list of bundled models ------------------------------------------------------------------------
def readme_model_names() -> list[str]:
    """The names in the README's paragraph that starts "The bundled models (`gpuplan models`" and ends before
    "Where each config came from": every backticked word but the command."""
    text = README.read_text(encoding="utf-8")
    start = text.index("The bundled models (`gpuplan models`")
    paragraph = text[start:text.index("Where each config came from", start)]
    return [name for name in re.findall(r"`([^`]+)`", paragraph)
            if not name.startswith("gpuplan ") and not name.startswith("-")]


def test_readme_lists_exactly_the_bundled_models():
    """Every name in the README's list answers offline with a bundled model, no model is named twice, and every
    bundled model is named: adding a config without the README (or the README without a config) fails here. The
    tour's count of them (`gpuplan models  # the 92 bundled models`) is the catalog's (held by nothing until session
    20's docs audit)."""
    assert f"# the {len(bundled())} bundled models:" in README.read_text(encoding="utf-8")
    names = readme_model_names()
    assert len(names) >= 90
    repos = {name: bundled_repo(name) for name in names}
    assert [name for name, repo in repos.items() if repo is None] == []
    assert len(set(repos.values())) == len(names)  # one name per model
    assert set(bundled()) - set(repos.values()) == set()


# ---- the models people ask about (issues 33 and 35): offline, their variants, exact counts ----------------------
@pytest.mark.parametrize("name, repo, params", [
    # transformers 5.24 on the meta device gives the same totals (tests/model/test_model_sim.py)
    ("Qwen/Qwen3-4B", "Qwen/Qwen3-4B", 4_022_468_096),
    ("qwen3-14b", "Qwen/Qwen3-14B", 14_768_307_200),
    ("google/gemma-3-4b-it", "google/gemma-3-4b-it", 4_300_079_472),
    ("gemma-3-12b", "google/gemma-3-12b-it", 12_187_325_040),
    ("mistral-small-3.1", "mistralai/Mistral-Small-3.1-24B-Instruct-2503", 24_011_361_280),
    ("mistralai/Mistral-Nemo-Base-2407", "mistralai/Mistral-Nemo-Base-2407", 12_247_782_400),
])
def test_models_people_ask_about_answer_offline(name, repo, params, tmp_path):
    proc = _hub(f"from gpuplan import load_model; m = load_model({name!r}); print(m.name, m.params_total)", tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == [repo, str(params)]


@pytest.mark.parametrize("variant, base", [
    ("Qwen/Qwen3-14B-Instruct", "Qwen/Qwen3-14B"),  # a chat-tuned name maps to the bundled config
    ("qwen3-4b-instruct", "Qwen/Qwen3-4B"),
    ("google/gemma-3-12b-pt", "google/gemma-3-12b-it"),
    ("gemma-3-4b-it", "google/gemma-3-4b-it"),
    ("mistralai/Mistral-Nemo-Instruct-2407", "mistralai/Mistral-Nemo-Base-2407"),
    ("mistralai/Mistral-Small-3.2-24B-Instruct-2506", "mistralai/Mistral-Small-3.1-24B-Instruct-2503"),
])
def test_tuned_variants_resolve_to_the_bundled_config(variant, base):
    assert load_model(variant).params_total == load_model(base).params_total
    assert bundled_repo(variant) == base or any(base in note for note in load_model(variant).notes)


@pytest.mark.parametrize("name, published, vocab_rows, source", [
    ("qwen3-4b", 4_022_468_096, 0, "keras-hub qwen3_presets.py qwen3_4b_en @1df65dab96fb"),
    ("qwen3-14b", 14_768_307_200, 0, "keras-hub qwen3_presets.py qwen3_14b_en @1df65dab96fb"),
    # keras-hub's Gemma 3 vision+text presets keep 262,144 vocabulary rows, the checkpoints' config 262,208
    # (transformers' Gemma3TextConfig default, the rows its embedding holds): 64 rows of hidden_size apart;
    # medgemma_4b, a Gemma 3 4B with the 262,208 rows, states 4,300,079,472 exactly
    ("gemma-3-4b", 4_299_915_632, 64 * 2560, "keras-hub gemma3_presets.py gemma3_instruct_4b @00d9f10a8e74"),
    ("gemma-3-12b", 12_187_079_280, 64 * 3840, "keras-hub gemma3_presets.py gemma3_instruct_12b @00d9f10a8e74"),
    ("gemma-3-27b", 27_432_062_576, 64 * 5376, "keras-hub gemma3_presets.py gemma3_instruct_27b @00d9f10a8e74"),
    ("mistral-small-3.1", 24_011_361_280, 0,
     "keras-hub mistral3_presets.py mistral_small_3.1_24b_instruct_2503_en (and 3.2's) @961f8f7cce91"),
])
def test_new_models_match_published_exact_totals(name, published, vocab_rows, source):
    """Exact totals published by another implementation (keras-hub's preset metadata), so a config value bundled
    wrong (a head count, an untied head) shows here as well as against transformers."""
    assert load_model(name).params_total == published + vocab_rows, source


def test_new_models_match_their_cards():
    """Rounded totals the publishers state: Qwen3-4B 4.0B and Qwen3-14B 14.8B ("Number of Parameters", Qwen model
    cards as mirrored at hf.barry1.top/Qwen/Qwen3-4B); Gemma 4 E2B 5.1B with its embeddings (sophgo/LLM-TPU
    models/Gemma4/README.md @988af09eeefb)."""
    assert round(load_model("qwen3-4b").params_total / 1e9, 1) == 4.0
    assert round(load_model("qwen3-14b").params_total / 1e9, 1) == 14.8
    assert round(load_model("gemma-4-e2b").params_total / 1e9, 1) == 5.1


@pytest.mark.parametrize("name, said", [
    ("openai/gpt-oss-20b:latest", "give the bundled 'openai/gpt-oss-20b'"),
    ("qwen3:8b", "give the bundled 'Qwen/Qwen3-8B'"),
    ("llama3.1:8b-instruct-q4_K_M", "give a bundled name (`gpuplan models`), a Hugging Face repo id or a path"),
])
def test_an_ollama_tag_names_the_model_it_means(name, said):
    """Ollama names models with a tag after a colon; `openai/gpt-oss-20b:latest` read "no such file" (session 7's
    walk). The sentence now says the tag is no part of the name and names the bundled model meant, where one is."""
    with pytest.raises(GpuplanError) as err:
        load_model(name)
    tag = name.rpartition(":")[2]
    assert str(err.value) == (f"model {name!r}: ':{tag}' is a tag, as Ollama names models, not part of a model "
                              f"name; {said}")


def test_a_hub_file_larger_than_the_reader_takes_is_not_fetched(monkeypatch):
    """Session 18's security audit: hf_hub_download takes no size limit, so a repo whose config.json (or
    model_index.json, or a component's config) is a large file had it written whole into the Hugging Face cache
    before the bounded reader refused it (the page with --hub fetches any repo a request names). The hub's size is
    read first (a HEAD request, as hf_hub_download makes itself): past 64 MiB, one sentence and no download. The
    hub is unreachable here: its answers are stood in for."""
    hub = pytest.importorskip("huggingface_hub")
    from huggingface_hub.errors import LocalEntryNotFoundError

    from gpuplan.model import catalog

    fetched = []

    def download(repo_id, filename, local_files_only=False, **_):
        if local_files_only:
            raise LocalEntryNotFoundError("not cached")
        fetched.append(filename)
        raise AssertionError("downloaded")

    sizes = {"model_index.json": None, "config.json": 10 * 2**30}
    monkeypatch.setattr(hub, "hf_hub_download", download)
    monkeypatch.setattr(hub, "get_hf_file_metadata", lambda url: SimpleNamespace(size=sizes[url.rsplit("/", 1)[1]]))
    monkeypatch.setattr(catalog, "_hub_reachable", lambda: True)
    monkeypatch.setattr(catalog.kinds, "from_hub", lambda repo, fetch: None)
    with pytest.raises(GpuplanError, match=r"^someone/huge's config.json is 10,737,418,240 bytes on the hub; a file "
                                           r"read whole is at most 64 MiB, so it is not fetched$"):
        catalog.load_model("someone/huge")
    assert fetched == []
    sizes["model_index.json"] = 2**27  # a pipeline's index too large: said, not taken for a repo without one
    monkeypatch.undo()
    monkeypatch.setattr(hub, "hf_hub_download", download)
    monkeypatch.setattr(hub, "get_hf_file_metadata", lambda url: SimpleNamespace(size=sizes[url.rsplit("/", 1)[1]]))
    monkeypatch.setattr(catalog, "_hub_reachable", lambda: True)
    with pytest.raises(GpuplanError, match=r"model_index\.json is 134,217,728 bytes"):
        catalog.load_model("someone/huge-pipeline")
    assert fetched == []


def test_a_pipeline_listing_more_components_than_any_has_is_refused_before_fetching_them(monkeypatch, tmp_path):
    """s20-sec: a repo's model_index.json listing 20,000 components made one model name ask the hub 20,000 times
    (a TCP probe, a HEAD and a download of up to 64 MiB each), past the page's deadline with --hub. At most
    MAX_COMPONENTS (16; SD3 lists 9) are read, counted before the first is fetched; a local folder alike. The hub is
    unreachable here: its answers are stood in for."""
    hub = pytest.importorskip("huggingface_hub")
    from huggingface_hub.errors import LocalEntryNotFoundError

    from gpuplan.model import catalog, diffusers

    index = {"_class_name": "FluxPipeline", **{f"c{i}": ["diffusers", "AutoencoderKL"] for i in range(20_000)}}
    (tmp_path / "model_index.json").write_text(json.dumps(index))
    asked = []

    def download(repo_id, filename, local_files_only=False, **_):
        if local_files_only:
            raise LocalEntryNotFoundError("not cached")
        asked.append(filename)
        return str(tmp_path / "model_index.json")

    monkeypatch.setattr(hub, "hf_hub_download", download)
    monkeypatch.setattr(hub, "get_hf_file_metadata", lambda url: SimpleNamespace(size=100))
    monkeypatch.setattr(catalog, "_hub_reachable", lambda: True)
    with pytest.raises(GpuplanError, match=r"^someone/wide: model_index\.json lists 20,000 components; a pipeline has "
                                           r"at most 16 \(SD3 lists 9\)$"):
        catalog.load_model("someone/wide")
    assert asked == ["model_index.json"]
    local = tmp_path / "wide"
    local.mkdir()
    (local / "model_index.json").write_text(json.dumps(dict(list(index.items())[:diffusers.MAX_COMPONENTS + 2])))
    with pytest.raises(GpuplanError, match=r"lists 17 components; a pipeline has at most 16"):
        diffusers.read_pipeline_folder(local, "wide")


@pytest.mark.parametrize("folder, label", [
    ("m\x1b[2J", None),  # the folder's name is the model's label
    ("m\u202eltuae", None),  # a right-to-left override: the name reads backwards (s20-fuzz's leftover)
    ("plain", "\x1b]0;title\x07\x1b[2Jx\ntouch PWNED"),  # config.json's _name_or_path is
])
def test_a_label_read_from_a_local_model_prints_no_control_character(tmp_path, capsys, folder, label):
    """Session 20's fuzzing: a model folder or a config's _name_or_path holding ESC sequences was printed raw by
    `model`, `estimate` and every command naming the model (cleared the screen, set the terminal's title); launch
    refused the name. The label is read with each control character written as its escape."""
    from gpuplan.cli import run
    from gpuplan.errors import printable
    from gpuplan.model import catalog

    config = json.loads((Path(catalog.__file__).parent.parent / "data" / "models" /
                         "meta-llama__Llama-3.2-1B.json").read_text())
    if label is not None:
        config["_name_or_path"] = label
    (tmp_path / folder).mkdir()
    (tmp_path / folder / "config.json").write_text(json.dumps(config))
    name = catalog.load_model(str(tmp_path / folder)).name
    assert name == printable(label or folder) and not {"\x1b", "\n", "\u202e"} & set(name)
    assert run(["model", str(tmp_path / folder)]) == 0
    assert not {"\x1b", "\u202e"} & set(capsys.readouterr().out)
    assert run(["launch", "--model", str(tmp_path / folder), "--task", "train", "--method", "lora", "--gpu",
                "rtx-4090", "-o", str(tmp_path / "out")]) == (2 if {"\x1b", "\u202e"} & set(folder) else 0)
    written = "".join(p.read_text() for p in (tmp_path / "out").glob("*") if p.is_file()) if label else ""
    assert not any(line.startswith("touch") for line in written.splitlines())
