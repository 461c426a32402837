"""ModelSpec against hand arithmetic and published counts. Each expected value is written out."""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import require
from gpuplan import load_model
from gpuplan.model.spec import ModelSpec

ROOT = Path(__file__).resolve().parents[2]

# Published exact counts (INDEX.md of the shared model configs: model cards and HF safetensors totals).
OFFICIAL = {
    "meta-llama/Llama-3.1-8B": 8_030_261_248,
    "meta-llama/Llama-3.2-1B": 1_235_814_400,
    "meta-llama/Llama-3.2-3B": 3_212_749_824,
    "Qwen/Qwen2.5-0.5B": 494_032_768,
    "bigscience/bloom": 176_247_271_424,
    "microsoft/Phi-3-mini-4k-instruct": 3_821_079_552,
    "deepseek-ai/DeepSeek-R1-Distill-Qwen-32B": 32_763_876_352,
    "openai-community/gpt2": 124_439_808,
    "meta-llama/Llama-2-7b-hf": 6_738_417_664 - 2_048,  # safetensors total minus 2,048 fp32 rotary buffers
}


@pytest.mark.parametrize("repo", sorted(OFFICIAL))
def test_official_parameter_counts(repo):
    assert load_model(repo).params_total == OFFICIAL[repo]


def test_llama_3_1_8b_by_hand():
    m = load_model("llama-3.1-8b")
    h, i, V, L, kv, d = 4096, 14336, 128256, 32, 8, 128
    attention = h * h + 2 * h * kv * d + h * h  # q, k, v, o
    mlp = 3 * h * i
    per_layer = attention + mlp + 2 * h
    assert m.params_total == 2 * V * h + L * per_layer + h == 8_030_261_248
    assert m.params_breakdown()["lm_head"] == V * h  # untied
    # KV: 2 (K and V) x 8 heads x 128 dims x 2 bytes x 32 layers
    assert sum(m.kv_bytes_per_token(2).values()) == 2 * kv * d * 2 * L == 131_072
    assert m.head_dim == 128 and m.num_kv_heads == 8


def test_tied_embeddings_counted_once():
    m = load_model("llama-3.2-1b")
    assert m.tie_word_embeddings and m.params_breakdown()["lm_head"] == 0
    assert m.params_breakdown()["embeddings"] == 128256 * 2048


def test_mixtral_8x7b_active_by_hand():
    m = load_model("mixtral-8x7b")
    h, V, L = 4096, 32000, 32
    attention = h * 4096 + 2 * h * 1024 + 4096 * h
    expert = 3 * h * 14336
    router = 8 * h
    active_layer = attention + router + 2 * expert + 2 * h  # top-2 of 8
    assert m.params_active == 2 * V * h + h + L * active_layer == 12_879_925_248  # Mistral: "12.9B active"
    assert m.params_total == 2 * V * h + h + L * (attention + router + 8 * expert + 2 * h) == 46_702_792_704


def test_qwen3_30b_a3b_active_by_hand():
    m = load_model("qwen3-30b-a3b")
    h, V, L, d = 2048, 151936, 48, 128
    attention = h * 32 * d + 2 * h * 4 * d + 32 * d * h
    norms = 2 * h + 2 * d  # input + post-attention RMSNorm, q_norm and k_norm per head
    active_layer = attention + norms + 128 * h + 8 * 3 * h * 768  # router + top-8 of 128 experts
    assert m.params_active == 2 * V * h + h + L * active_layer == 3_353_032_704  # Qwen: "3.3B activated"


def test_deepseek_v3_active_by_hand():
    m = load_model("deepseek-v3")
    h, V, a = 7168, 129280, 128
    mla = (h * 1536 + 1536 * a * (128 + 64)  # q_a, q_b (nope 128 + rope 64 per head)
           + h * (512 + 64) + 512 * a * (128 + 128)  # kv_a with the shared rope key, kv_b (k_nope + v)
           + a * 128 * h)  # o_proj
    norms = 2 * h + 1536 + 512  # layer norms + q_a and kv_a norms
    dense_mlp = 3 * h * 18432
    moe_active = 256 * h + 8 * 3 * h * 2048 + 3 * h * 2048  # router, top-8 routed, 1 shared expert
    expected = 2 * V * h + h + 61 * (mla + norms) + 3 * dense_mlp + 58 * moe_active
    assert m.params_active == expected == 37_552_282_624  # DeepSeek: "37B activated"
    assert m.params_total == 671_026_404_352
    # MLA caches the compressed latent plus the shared rope key: (512 + 64) x 2 B x 61 layers
    assert m.kv_bytes_per_token(2) == {"mla": (512 + 64) * 2 * 61}


def test_gpt_oss_20b_active_by_hand():
    m = load_model("gpt-oss-20b")
    h, V, L, E, i = 2880, 201088, 24, 32, 2880
    attention = (h * 4096 + 4096) + 2 * (h * 512 + 512) + (4096 * h + h) + 64  # biased q,k,v,o + 64 sinks
    expert = (h * 2 * i + 2 * i) + (i * h + h)  # fused gate_up and down, with biases
    router = E * h + E
    active = 2 * V * h + h + L * (attention + router + 4 * expert + 2 * h)
    assert m.params_active == active == 4_187_440_704
    # OpenAI's "3.6B active" is the same count without the input embedding table (a lookup, not a matmul)
    assert m.params_active - V * h == 3_608_307_264
    assert m.params_total == 20_914_757_184


def test_mistral_sliding_window_caps_kv():
    m = load_model("mistral-7b-v0.1")
    per_token = 2 * 8 * 128 * 2 * 32
    assert m.kv_bytes_per_token(2) == {"sliding(4096)": per_token}
    assert m.kv_bytes(2048) == 2048 * per_token
    assert m.kv_bytes(8192) == 4096 * per_token  # the window holds 4096 tokens
    assert load_model("mistral-7b-v0.3").kv_bytes(8192) == 8192 * per_token  # v0.3 has no window


def test_gemma2_alternating_windows():
    m = load_model("gemma-2-9b")
    per_layer = 2 * 8 * 256 * 2  # head_dim 256 from the config, not 3584 / 16 = 224
    kinds = [layer.kind for layer in m.layers]
    assert kinds[:4] == ["sliding(4096)", "full", "sliding(4096)", "full"]
    assert m.kv_bytes_per_token(2) == {"sliding(4096)": 21 * per_layer, "full": 21 * per_layer}
    assert m.kv_bytes(8192) == 21 * per_layer * 8192 + 21 * per_layer * 4096


def test_gemma3_text_config_and_pattern():
    m = load_model("gemma-3-27b")
    assert m.num_layers == 62 and m.vocab_size == 262_208 and m.head_dim == 128
    globals_ = [k for k, layer in enumerate(m.layers) if layer.attention == "full"]
    assert globals_ == list(range(5, 62, 6))  # 5 local : 1 global
    assert m.params_total - m.vision_params == 27_009_346_304  # the language model alone (INDEX.md)


def test_gpt_oss_layers_and_mxfp4_bytes():
    m = load_model("gpt-oss-20b")
    assert [layer.kind for layer in m.layers[:2]] == ["sliding(128)+moe", "full+moe"]
    wb = m.weight_bytes()
    expert_weights = 24 * 32 * (2880 * 5760 + 2880 * 2880)
    expert_biases = 24 * 32 * (5760 + 2880)
    assert wb["experts"] == expert_weights * 17 / 32 + (expert_biases + 24 * (32 * 2880 + 32)) * 2
    assert wb["attention"] == m.params_breakdown()["attention"] * 2  # attention stays bf16


def test_deepseek_fp8_block_scales():
    m = load_model("deepseek-v3")
    fmt, skip = m.shipped_format()
    assert fmt.name == "fp8" and fmt.fp8_block == (128, 128) and skip == ()
    wb = m.weight_bytes()
    # o_proj 16384 -> 7168: one byte per weight + fp32 scale per 128x128 block
    o_proj = next(lin for lin in m.layers[0].linears if lin.name == "o_proj")
    assert fmt.linear_weight_bytes(o_proj) == 16384 * 7168 + 4 * 128 * 56 == 117_469_184
    assert wb["lm_head"] == 129280 * 7168 * 2  # lm_head is not quantized


def test_llama_405b_fbgemm_fp8_keeps_its_attention_in_bf16():
    """Meta's Llama-3.1-405B-FP8 (quant_method fbgemm_fp8, bench/serving/models/llama-3.1-405b-fp8.json): every
    layer's q/k/v/o projections listed one by one in modules_to_not_convert stay bf16; so do the first and last
    layers' MLPs, listed by their paths (layers 0 and 125); the other 124 MLPs are FP8 (one byte a weight, one fp32
    scale a matrix)."""
    m = load_model(str(ROOT / "bench" / "serving" / "models" / "llama-3.1-405b-fp8.json"))
    fmt, skip = m.shipped_format()
    assert fmt.name == "fp8" and skip == ("attention", "mlp@0", "mlp@125")
    wb, params = m.weight_bytes(), m.params_breakdown()
    assert wb["attention"] == params["attention"] * 2 == 126 * (2 * 16384 * 16384 + 2 * 16384 * 1024) * 2
    mlp = 3 * 16384 * 53248  # 2,617,245,696 weights a layer
    assert wb["mlp"] == 124 * (mlp + 3 * 4) + 2 * mlp * 2 == 335_007_450_576
    # 5.23 GB more than with every MLP in FP8: 0.61 GiB per GPU at TP 8
    assert (wb["mlp"] - 126 * (mlp + 3 * 4)) / 8 / 2**30 == pytest.approx(0.6094, abs=1e-4)


def test_modules_named_one_layer_at_a_time_count_when_they_cover_every_layer():
    from gpuplan.model.quant import excluded_groups

    gates = [f"model.layers.{i}.mlp.gate" for i in range(4)]
    assert excluded_groups(gates, 4) == ("router",)
    assert excluded_groups([*gates[:2], "model.layers.*.self_attn", "lm_head"], 4) == \
        ("attention", "router@0", "router@1")
    assert excluded_groups(["model.layers.0.self_attn.q_proj", "model.layers.1.self_attn.o_proj"], 2) == \
        ("attention",)
    # a few layers' modules: those layers' group alone (mlp@i), in layer order
    assert excluded_groups(["model.layers.10.mlp.up_proj", "model.layers.2.mlp.down_proj", "lm_head"], 12) == \
        ("mlp@2", "mlp@10")


def test_families_and_keys():
    assert load_model("falcon-40b").num_kv_heads == 8  # legacy RefinedWeb keys n_head_kv
    assert load_model("falcon-7b").num_kv_heads == 1  # multi-query
    assert load_model("gpt2").max_context == 1024
    assert load_model("bloom").tie_word_embeddings
    assert load_model("opt-6.7b").position_params == (2048 + 2) * 4096


def test_unknown_family_is_read_by_conventions_and_says_it_is_not_exact():
    config = {"model_type": "my_llama", "hidden_size": 64, "num_attention_heads": 4, "num_hidden_layers": 2,
              "vocab_size": 100, "intermediate_size": 128, "torch_dtype": "bfloat16"}
    m = ModelSpec.from_config(config)
    assert not m.exact and "my_llama" in m.inexact_reason and m.counted_by == "the common config keys"
    assert m.params_total == 2 * 100 * 64 + 2 * (4 * 64 * 64 + 3 * 64 * 128 + 2 * 64) + 64


# ---- the models of 2025-2026 ---------------------------------------------------------------------------------
# (repo, stated total parameters, tolerance for how the card rounds, where it is stated); our count is transformers'
# (tests/model/test_model_sim.py checks that), which leaves out multi-token-prediction layers (GLM-4.5's 355B counts
# one).
CARDS = [
    ("meta-llama/Llama-4-Scout-17B-16E-Instruct", 109e9, 0.01, "Meta: 17B active, 16 experts, 109B total"),
    ("meta-llama/Llama-4-Maverick-17B-128E-Instruct", 400e9, 0.01, "Meta: 17B active, 128 experts, 400B total"),
    ("Qwen/Qwen3-Next-80B-A3B-Instruct", 80e9, 0.01, "Qwen: 80B total parameters, only 3B active"),
    ("moonshotai/Kimi-K2-Instruct", 1e12, 0.05, "Moonshot card: 1T total, 32B activated (one significant digit)"),
    ("zai-org/GLM-4.5", 355e9, 0.01, "Z.ai README: 355B total, 32B active (with its MTP layer)"),
    ("zai-org/GLM-4.5-Air", 106e9, 0.01, "Z.ai README: 106B total, 12B active"),
    ("Qwen/Qwen3-32B", 32.8e9, 0.005, "Qwen3 card: Number of Parameters 32.8B"),
    ("Qwen/Qwen3-0.6B", 0.6e9, 0.01, "Qwen3 card: Number of Parameters 0.6B"),
    ("deepseek-ai/DeepSeek-V3.2", 671e9, 0.005, "DeepSeek-V3 family: 671B main model (685B with MTP)"),
    ("microsoft/Phi-4-mini-instruct", 3.8e9, 0.01, "Microsoft card: 3.8B parameters"),
]


@pytest.mark.parametrize("repo, stated, tolerance, source", CARDS, ids=[c[0] for c in CARDS])
def test_new_models_match_their_model_cards(repo, stated, tolerance, source):
    assert load_model(repo).exact
    assert load_model(repo).params_total == pytest.approx(stated, rel=tolerance), source


def test_qwen3_next_cache_by_hand():
    """12 gated-attention layers cache 2 KV heads x 256 per token; 36 Gated DeltaNet layers keep a fixed state:
    a causal convolution over q, k, v (2·16·128 + 32·128 = 8192 channels x 4 taps) and the fp32 32 x 128 x 128
    delta-rule state (two 16-bit units per element)."""
    m = load_model("qwen3-next")
    assert m.kv_bytes_per_token(2) == {"full": 12 * 2 * 2 * 256 * 2}
    state = 36 * (8192 * 4 + 2 * 32 * 128 * 128)
    assert m.state_bytes(2) == state * 2
    assert m.kv_bytes(32768) == 12 * 2 * 2 * 256 * 2 * 32768 + state * 2
    assert m.kv_bytes(1_000_000) - m.kv_bytes(32768) == 12 * 2 * 2 * 256 * 2 * (1_000_000 - 32768)


def test_llama4_chunked_layers_stop_at_their_chunk():
    m = load_model("llama-4-scout")
    per_layer = 2 * 8 * 128 * 2  # 8 KV heads x 128, keys and values, bf16
    assert [layer.kind for layer in m.layers[:4]] == ["chunked(8192)+moe"] * 3 + ["full+moe"]
    assert m.kv_bytes(32768) == 12 * per_layer * 32768 + 36 * per_layer * 8192
    assert m.vision_params == 871_932_416 and m.exact


def test_falcon_h1_layers_hold_attention_and_mamba_side_by_side():
    """Falcon-H1-0.5B: every layer attention (2 KV heads x 64) and a Mamba-2 mixer (conv over d_inner + 2·d_state
    = 1536 + 256 channels x 4 taps, fp32 SSM state 24 heads x 64 x 128)."""
    m = load_model("falcon-h1-0.5b")
    layer = m.layers[0]
    assert layer.kind == "hybrid" and layer.kv_dims == 2 * 2 * 64
    assert layer.state_elements == (1536 + 2 * 128) * 4 + 2 * 24 * 64 * 128


def test_structure_is_cached_and_read_without_transformers(tmp_path, monkeypatch, capsys):
    """An unknown family is traced once, saying so in one line on stderr (no third-party warnings); the next read
    needs neither the time nor transformers, and says nothing."""
    pytest.importorskip("transformers")
    from gpuplan.model import reading

    monkeypatch.setenv("GPUPLAN_CACHE_DIR", str(tmp_path))
    config = {"model_type": "stablelm", "hidden_size": 256, "num_attention_heads": 4, "num_key_value_heads": 2,
              "num_hidden_layers": 2, "vocab_size": 1000, "intermediate_size": 512, "torch_dtype": "bfloat16",
              "architectures": ["StableLmForCausalLM"]}
    traced = ModelSpec.from_config(config)
    assert traced.exact and "meta device" in traced.counted_by and list(tmp_path.glob("models/*.json"))
    said = capsys.readouterr().err.splitlines()
    assert len(said) == 1 and said[0].startswith("gpuplan: reading the structure of this stablelm model"), said
    assert ModelSpec.from_config(config).params_total == traced.params_total and not capsys.readouterr().err
    h, kv, V = 256, 2 * 64, 1000  # 2 KV heads of 64; LayerNorms with bias (StableLM)
    per_layer = (h * h + 2 * h * kv + h * h) + 3 * h * 512 + 2 * 2 * h
    assert traced.params_total == 2 * V * h + 2 * per_layer + 2 * h == 1_694_208
    monkeypatch.setattr(reading, "_can_trace", lambda: False)
    again = ModelSpec.from_config(config)
    assert again.params_total == traced.params_total and "(stored)" in again.counted_by
    fresh = ModelSpec.from_config({**config, "num_hidden_layers": 3})  # not stored, no transformers: conventions
    assert not fresh.exact and "pip install 'gpuplan[sim]'" in fresh.inexact_reason


def test_bundled_models_need_no_build(tmp_path, monkeypatch, capsys):
    """Every bundled model is read with an empty cache and without building anything: a family reader, or the
    structure shipped in data/models/structures (whatever transformers is installed); every shipped structure
    belongs to a bundled model (tests/model/test_model_sim.py checks them against a fresh trace)."""
    import json

    from gpuplan.model import reading, structure
    from gpuplan.model.catalog import bundled

    def no_build():
        raise AssertionError("a bundled model was about to be built")

    monkeypatch.setenv("GPUPLAN_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(reading, "_can_trace", no_build)
    used = set()
    for repo, path in bundled().items():
        config = json.loads(path.read_text(encoding="utf-8"))
        spec = ModelSpec.from_config(config)
        assert spec.counted_by != "the common config keys", repo
        if "(bundled)" in spec.counted_by:
            used.add(structure.config_key(config))
    assert not list(tmp_path.iterdir()) and not capsys.readouterr().err
    assert used == {p.stem for p in structure.bundled_folder().glob("*.json")}


def test_a_config_missing_every_size_names_the_keys():
    from gpuplan import GpuplanError

    with pytest.raises(GpuplanError, match="lacks hidden_size, num_attention_heads, num_hidden_layers, vocab_size"):
        ModelSpec.from_config({"model_type": "mystery_lm"})


# nanoGPT's GPTConfig as the review's file holds it (new-user-review-3, question 8)
NANOGPT = {"n_layer": 24, "n_head": 16, "n_embd": 2048, "block_size": 2048, "vocab_size": 50304, "dropout": 0.0,
           "bias": False}


def test_a_nanogpt_config_is_gpt2_shaped_with_a_tied_head():
    """The review counted +38% (a SwiGLU MLP and an untied head assumed). nanoGPT's GPT, written out: 24 blocks of
    12·C² weights (c_attn 3C², c_proj C², c_fc 4C², mlp c_proj 4C²), the tied wte (V·C) once, wpe (block_size·C),
    and without biases one weight per LayerNorm (2 per block and ln_f)."""
    m = ModelSpec.from_config(NANOGPT, name="nanogpt")
    C = 2048
    assert m.params_total == 24 * 12 * C * C + 50304 * C + 2048 * C + (2 * 24 + 1) * C == 1_315_276_800
    assert m.exact and m.family == "nanogpt" and m.tie_word_embeddings and not m.gated_mlp
    assert m.lm_head is None and m.max_context == 2048 and m.dtype == "float32"


def test_nanogpt_with_biases_equals_transformers_gpt2():
    """``bias: true`` is GPT-2 exactly: transformers' GPT2LMHeadModel on the meta device holds the same count."""
    torch = require("torch")
    transformers = require("transformers")
    config = {**NANOGPT, "n_layer": 4, "n_embd": 256, "n_head": 8, "bias": True}
    cfg = transformers.GPT2Config(n_layer=4, n_embd=256, n_head=8, n_positions=2048, vocab_size=50304)
    with torch.device("meta"):
        model = transformers.GPT2LMHeadModel(cfg)
    assert ModelSpec.from_config(config).params_total == sum(p.numel() for p in model.parameters()) == 16_561_664


@pytest.mark.parametrize("architectures", ["NaN", "3", '"LlamaForCausalLM"', "{}"])
def test_architectures_of_the_wrong_type_are_one_sentence(tmp_path, architectures):
    """A config whose ``architectures`` is not a list (bench/fuzz.py seed 4: NaN raised TypeError while the
    catalog asked what kind of model it is) is refused as the decoder's reader refuses it."""
    from gpuplan import GpuplanError

    path = tmp_path / "config.json"
    path.write_text(f'{{"architectures": {architectures}, "model_type": "llama", "hidden_size": 512, '
                    '"intermediate_size": 1376, "num_attention_heads": 8, "num_hidden_layers": 2, "vocab_size": 1000}')
    with pytest.raises(GpuplanError, match="architectures must be a JSON list"):
        load_model(str(path))


def test_every_bundled_moe_layer_routes_each_token_to_experts():
    """A layer holding experts with no experts per token: gemma-4-26b's structure was traced with its router's
    key (Gemma 4's ``top_k_experts``) unread, so each token reached 0 experts and every serving estimate of it
    ended in a ZeroDivisionError (a session's walk). Every bundled MoE layer now routes to between 1 and all of its
    experts, and Gemma 4 26B-A4B to the 8 of 128 its config names: active = total - 120/128 of the experts'
    parameters (the router's and the shared MLP's run for every token) = 4,395,322,672."""
    import json

    from gpuplan.model.catalog import bundled

    moe = 0
    for repo in bundled():
        m = load_model(repo)
        for layer, _ in m.layer_kinds():
            experts = [lin for lin in layer.linears if lin.group == "experts" and lin.count > 1]
            if experts:
                moe += 1
                assert 1 <= layer.experts_per_token <= experts[0].count, repo
    assert moe >= 20
    gemma = load_model("gemma-4-26b")
    config = json.loads(bundled()[gemma.name].read_text())["text_config"]
    experts = sum(lin.params * c for layer, c in gemma.layer_kinds() for lin in layer.linears
                  if lin.group == "experts")
    k, e = config["top_k_experts"], config["num_experts"]
    assert (k, e) == (8, 128)
    assert gemma.params_active == gemma.params_total - experts * (e - k) // e == 4_395_322_672


@pytest.mark.parametrize("family", ["qwen2", "qwen3"])
def test_qwen_windows_are_transformers_own(tmp_path, family):
    """Qwen2/Qwen3 take the window only with ``use_sliding_window``, on the layers ``layer_types`` marks sliding (or,
    without it, from ``max_window_layers``): transformers' configs give each layer's type, and the attention uses
    ``config.sliding_window`` on the sliding ones. Before, a Qwen3 config with ``layer_types`` alternating sliding
    and full read all 6 layers as full (KV 24,576 B per token at any length), and a Qwen2 one took every sliding
    layer as full."""
    import json

    transformers = require("transformers")
    config_class = {"qwen2": transformers.Qwen2Config, "qwen3": transformers.Qwen3Config}[family]
    base = dict(model_type=family, architectures=[f"{family.capitalize()}ForCausalLM"], hidden_size=256,
                intermediate_size=512, num_attention_heads=4, num_key_value_heads=2, head_dim=64,
                num_hidden_layers=6, vocab_size=1000, max_position_embeddings=4096, rms_norm_eps=1e-6)
    alternating = ["sliding_attention", "full_attention"] * 3
    cases = [dict(use_sliding_window=True, sliding_window=512, max_window_layers=6, layer_types=alternating),
             dict(use_sliding_window=False, sliding_window=512, layer_types=alternating),
             dict(use_sliding_window=True, sliding_window=256, max_window_layers=2),
             dict(use_sliding_window=False, sliding_window=4096, max_window_layers=0)]
    for i, case in enumerate(cases):
        folder = tmp_path / str(i)
        folder.mkdir()
        (folder / "config.json").write_text(json.dumps({**base, **case}))
        ref = config_class(**{**base, **case})
        want = [ref.sliding_window if t == "sliding_attention" else None for t in ref.layer_types]
        assert [layer.window for layer in load_model(str(folder)).layers] == want, case
    assert want == [None] * 6 and i == 3  # the last case: no window without use_sliding_window
