"""The context each engine derives from a model's config (``Engine.model_context``), past which it needs its
long-context switch (session 29: ``Engine.context`` / ``long_context``). Session 30: SGLang took
max_position_embeddings, where its own ``get_context_length`` (sgl-project/sglang 2aa2e2d0
``python/sglang/srt/utils/hf_transformers_utils.py``) multiplies a rope_scaling ``factor`` unless the rope names
``original_max_position_embeddings`` or is llama3; vLLM's ``_get_and_verify_max_len`` (vllm-project/vllm 0052a5b8
``vllm/config/model.py``) multiplies it for every kind but su/longrope/llama3 and Gemma 3, YaRN from its original
length. Session 31: TensorRT-LLM took max_position_embeddings, where its ``_infer_max_seq_len_from_config``
(NVIDIA/TensorRT-LLM 1a0dc5f7 ``tensorrt_llm/_torch/pyexecutor/model_engine.py``; the models' ``infer_max_seq_len``
alike) multiplies the factor for every kind but su/longrope/llama3/yarn, reading ``type`` before ``rope_type``. The
expected values are written out by hand from each config (max_position_embeddings, rope kind, factor, original
length)."""

from __future__ import annotations

import pytest

from gpuplan.engines import engine_for
from gpuplan.model import load_model
from gpuplan.model.spec import ModelSpec
from gpuplan.scenario import Scenario

# every bundled model whose config names a rope_scaling factor: (vLLM's, SGLang's, TensorRT-LLM's); TensorRT-LLM
# keeps max_position_embeddings for YaRN and llama3 and multiplies Gemma 3's linear 8, as SGLang does
BUNDLED = [
    # YaRN, factor 40 x original 4,096 = 163,840 = max_position_embeddings: vLLM 4,096 x 40; SGLang keeps 163,840
    ("deepseek-ai/DeepSeek-V3", 163_840, 163_840, 163_840),
    ("deepseek-ai/DeepSeek-V3.2", 163_840, 163_840, 163_840),
    ("deepseek-ai/DeepSeek-R1", 163_840, 163_840, 163_840),
    # YaRN, factor 16 x original 65,536 = 1,048,576 = max_position_embeddings
    ("deepseek-ai/DeepSeek-V4-Flash", 1_048_576, 1_048_576, 1_048_576),
    ("deepseek-ai/DeepSeek-V4-Pro", 1_048_576, 1_048_576, 1_048_576),
    # YaRN, factor 32 x original 4,096 = 131,072 = max_position_embeddings
    ("moonshotai/Kimi-K2-Instruct", 131_072, 131_072, 131_072),
    ("openai/gpt-oss-20b", 131_072, 131_072, 131_072),
    ("openai/gpt-oss-120b", 131_072, 131_072, 131_072),
    # llama3, factor 8 (3.1, 3.3) or 32 (3.2) over original 8,192: both keep max_position_embeddings 131,072
    ("meta-llama/Llama-3.1-8B", 131_072, 131_072, 131_072),
    ("meta-llama/Llama-3.1-70B", 131_072, 131_072, 131_072),
    ("meta-llama/Llama-3.1-405B", 131_072, 131_072, 131_072),
    ("meta-llama/Llama-3.2-1B", 131_072, 131_072, 131_072),
    ("meta-llama/Llama-3.2-3B", 131_072, 131_072, 131_072),
    ("meta-llama/Llama-3.3-70B-Instruct", 131_072, 131_072, 131_072),
    ("deepseek-ai/DeepSeek-R1-Distill-Llama-8B", 131_072, 131_072, 131_072),
    ("deepseek-ai/DeepSeek-R1-Distill-Llama-70B", 131_072, 131_072, 131_072),
    ("meta-llama/Llama-4-Scout-17B-16E-Instruct", 10_485_760, 10_485_760, 10_485_760),  # llama3, factor 16
    # linear, factor 8, max_position_embeddings 131,072 (transformers' Gemma3TextConfig default): vLLM skips Gemma
    # 3's factor, SGLang and TensorRT-LLM (Gemma3VLM asks its text model) multiply it: 131,072 x 8
    ("google/gemma-3-4b-it", 131_072, 1_048_576, 1_048_576),
    ("google/gemma-3-12b-it", 131_072, 1_048_576, 1_048_576),
    ("google/gemma-3-27b-it", 131_072, 1_048_576, 1_048_576),
]


def text_config(rope: dict | None, positions: int = 4096, **more) -> dict:
    """A small Llama config with the given rope_scaling."""
    return {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 256,
            "intermediate_size": 512, "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 4,
            "vocab_size": 1000, "max_position_embeddings": positions, "rope_scaling": rope, **more}


# the kinds no bundled model has: (config, vLLM's, SGLang's, TensorRT-LLM's)
KINDS = [
    ({"type": "linear", "factor": 4.0}, 4096, 16_384, 16_384, 16_384),  # a Llama 2 extended 4x: all 4,096 x 4
    ({"type": "dynamic", "factor": 2.0}, 4096, 8192, 8192, 8192),  # NTK-aware: all 4,096 x 2
    # Qwen's long-context recipe on a 40,960 config: vLLM 32,768 x 4; SGLang sees original_max_position_embeddings,
    # TensorRT-LLM leaves every yarn factor out: both keep 40,960
    ({"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 32_768}, 40_960, 131_072, 40_960,
     40_960),
    # Phi-3-mini-128k: longrope lists, no factor: all keep 131,072
    ({"type": "longrope", "long_factor": [1.0] * 32, "short_factor": [1.0] * 32}, 131_072, 131_072, 131_072,
     131_072),
    # TensorRT-LLM reads "type" before "rope_type" (model_engine.py, rope_scaling.get('type', ...)): a config naming
    # both as linear and yarn is multiplied there (4,096 x 2.5 = 10,240, rounded up), YaRN-kept in vLLM and SGLang
    ({"type": "linear", "rope_type": "yarn", "factor": 2.5, "original_max_position_embeddings": 4096}, 4096,
     10_240, 4096, 10_240),
    (None, 4096, 4096, 4096, 4096),
]


@pytest.mark.parametrize(("name", "vllm", "sglang", "trtllm"), BUNDLED)
def test_each_engine_derives_a_bundled_models_context_as_its_code_does(name, vllm, sglang, trtllm):
    m = load_model(name)
    assert m.rope_scaling.get("factor"), "a config with a rope_scaling factor"
    assert context_of("vllm", m) == vllm
    assert context_of("sglang", m) == sglang
    assert context_of("trtllm", m) == trtllm


@pytest.mark.parametrize(("rope", "positions", "vllm", "sglang", "trtllm"), KINDS)
def test_each_rope_kind(rope, positions, vllm, sglang, trtllm):
    m = ModelSpec.from_config(text_config(rope, positions), name="tiny")
    assert (context_of("vllm", m), context_of("sglang", m), context_of("trtllm", m)) == (vllm, sglang, trtllm)


def test_one_rope_per_layer_kind_has_no_top_level_factor():
    """transformers 5's per-layer-kind rope_parameters (Gemma 4: proportional on full attention, default on sliding
    layers): no factor anywhere, so all three keep max_position_embeddings."""
    m = load_model("google/gemma-4-31B-it")
    assert (context_of("vllm", m), context_of("sglang", m), context_of("trtllm", m)) == (262_144,) * 3


def test_sglang_starts_gemma_3_at_its_own_context_without_the_switch():
    """SGLang's own default for Gemma 3 (1,048,576) is what the plan starts it with, so 200,000-token requests need
    no SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN (main asked for it past 131,072); vLLM's stays 131,072 and needs
    VLLM_ALLOW_LONG_MAX_MODEL_LEN past it."""
    m = load_model("google/gemma-3-27b-it")
    s = Scenario(model="gemma-3-27b", task="infer", engine="sglang", prompt_tokens=200_000, output_tokens=64)
    assert engine_for(s).context(s, m) == 1_048_576 and engine_for(s).long_context(s, m) is None
    v = s.model_copy(update={"engine": "vllm"})
    assert engine_for(v).context(v, m) == 200_064
    assert engine_for(v).long_context(v, m) == "VLLM_ALLOW_LONG_MAX_MODEL_LEN"


def test_trtllm_starts_gemma_3_at_its_own_context_without_the_switch():
    """TensorRT-LLM derives Gemma 3's 1,048,576 (main: 131,072, so 200,000-token requests asked for
    TLLM_ALLOW_LONG_MAX_MODEL_LEN and --max_seq_len 200,064); Llama 3.1 keeps 131,072 (llama3 is left out)."""
    m = load_model("google/gemma-3-27b-it")
    s = Scenario(model="gemma-3-27b", task="infer", engine="trtllm", prompt_tokens=200_000, output_tokens=64)
    assert engine_for(s).context(s, m) == 1_048_576 and engine_for(s).long_context(s, m) is None
    llama = load_model("meta-llama/Llama-3.1-8B")
    t = s.model_copy(update={"model": "llama-3.1-8b"})
    assert engine_for(t).context(t, llama) == 200_064
    assert engine_for(t).long_context(t, llama) == "TLLM_ALLOW_LONG_MAX_MODEL_LEN"


def context_of(engine: str, m: ModelSpec) -> int:
    s = Scenario(model="llama-3.2-1b", task="infer", engine=engine)
    return engine_for(s).model_context(m)
