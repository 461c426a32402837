"""NVIDIA's Model Optimizer checkpoints priced as they ship: the modules each leaves in bf16 (its
``exclude_modules`` / ``ignore``), read from a checkpoint's config.json and from the bundled list of the checkpoints
NVIDIA publishes (``data/nvfp4_checkpoints.json``)."""

from __future__ import annotations

import json
from importlib import resources

import pytest

from gpuplan import load_model
from gpuplan.errors import GpuplanError
from gpuplan.model.checkpoints import excluded_modules, published
from gpuplan.model.quant import checkpoint_format, excluded_groups, make_format
from gpuplan.scenario import Scenario
from gpuplan.tensors.state import weight_format

# DeepSeek-R1's MLA projections, in x out (config.json: hidden 7168, q_lora_rank 1536, 128 heads of 192 query and
# 128 value dims, kv_lora_rank 512, rope dim 64)
MLA = {"q_a_proj": (7168, 1536), "q_b_proj": (1536, 128 * 192), "kv_a_proj_with_mqa": (7168, 512 + 64),
       "kv_b_proj": (512, 128 * (128 + 128)), "o_proj": (128 * 128, 7168)}
# nvidia/DeepSeek-R1-0528-FP4-v2: every attention projection but wo (o_proj) in bf16
V2_EXCLUDE = ["lm_head", "model.layers.*.self_attn.q_a_proj", "model.layers.*.self_attn.q_b_proj",
              "model.layers.*.self_attn.kv_a_proj_with_mqa", "model.layers.*.self_attn.kv_b_proj",
              "model.layers.*.self_attn.kv_a_layernorm", "model.layers.*.mlp.gate", "model.layers.61*"]


def _bf16_minus_nvfp4(names) -> int:
    """Bytes a layer's ``names`` projections take in bf16 beyond NVFP4 (9 bytes per 16 weights + one fp32 scale)."""
    return sum(2 * i * o - (i * o // 16 * 9 + 4) for name, (i, o) in MLA.items() if name in names)


def test_deepseek_r1_nvfp4_keeps_its_attention_in_bf16_hand_count():
    """``--quant nvfp4`` on DeepSeek-R1 prices nvidia/DeepSeek-R1-FP4 as it ships: the 61 layers' attention
    projections in bf16, the experts and dense FFNs in NVFP4. Per layer (``MLA``): 187,105,280 weights, 374,210,560
    bytes in bf16 against 105,246,740 in NVFP4 (6,193,156 + 21,233,668 + 2,322,436 + 9,437,188 + 66,060,292):
    16,406,793,020 bytes more over 61 layers."""
    m = load_model("deepseek-ai/DeepSeek-R1")
    assert sum(i * o for i, o in MLA.values()) == 187_105_280
    assert _bf16_minus_nvfp4(MLA) == 374_210_560 - 105_246_740
    s = Scenario(model="deepseek-ai/DeepSeek-R1", task="infer", quant="nvfp4", gpu="b200", num_gpus=8, tp=8)
    fmt, skip = weight_format(s, m)
    assert fmt.name == "nvfp4" and skip == ("attention", "router")
    shipped = m.weight_bytes(fmt, skip=skip)
    every = m.weight_bytes(make_format("nvfp4"), skip=("router",))
    assert shipped["attention"] - every["attention"] == 61 * _bf16_minus_nvfp4(MLA) == 16_406_793_020
    assert shipped["experts"] == every["experts"] and shipped["mlp"] == every["mlp"]


def test_deepseek_r1_nvfp4_times_its_attention_gemms_in_bf16():
    """NVIDIA's precision strategy for DeepSeek-R1 on B200 (TensorRT-LLM tech blog 1): attention and router GEMMs
    in bf16, the experts in nvfp4; Llama-3.3-70B's FP4 checkpoint quantizes its attention too."""
    from gpuplan.hardware import load_gpu
    from gpuplan.speed.inference import step_timer

    gpu = load_gpu("b200")
    s = Scenario(model="deepseek-ai/DeepSeek-R1", task="infer", quant="nvfp4", gpu="b200", num_gpus=8, tp=8)
    timer = step_timer(s, load_model(s.model), gpu)
    dtypes = {(lin.group, timer.linear_dtype(lin)) for layer in timer.m.layers for lin in layer.linears}
    assert dtypes == {("attention", "bf16"), ("router", "bf16"), ("mlp", "fp4"), ("experts", "fp4"),
                      ("shared_experts", "fp4")}
    s = Scenario(model="meta-llama/Llama-3.3-70B-Instruct", task="infer", quant="nvfp4", gpu="b200", num_gpus=1)
    timer = step_timer(s, load_model(s.model), gpu)
    assert {timer.linear_dtype(lin) for lin in timer.m.layers[0].linears} == {"fp4"}


def test_modelopt_config_json_is_read_as_shipped(tmp_path):
    """A local NVFP4 checkpoint's config.json (``quant_method: modelopt``, ``ignore``): wo in NVFP4, the other MLA
    projections in bf16 (nvidia/DeepSeek-R1-0528-FP4-v2), the layernorm and MTP entries naming no linear. Per layer,
    bf16 minus NVFP4: q_a 22,020,096 - 6,193,156, q_b 75,497,472 - 21,233,668, kv_a 8,257,536 - 2,322,436, kv_b
    33,554,432 - 9,437,188 = 100,143,088 bytes; 61 layers: 6,108,728,368."""
    bundled = resources.files("gpuplan") / "data" / "models" / "deepseek-ai__DeepSeek-R1.json"
    config = json.loads(bundled.read_text())
    config["quantization_config"] = {"quant_method": "modelopt", "quant_algo": "NVFP4", "group_size": 16,
                                     "ignore": V2_EXCLUDE}
    (tmp_path / "config.json").write_text(json.dumps(config))
    m = load_model(str(tmp_path / "config.json"))
    fmt, skip = m.shipped_format()
    assert fmt.name == "nvfp4" and fmt.group_size == 16
    assert skip == ("attention.kv_a_proj_with_mqa", "attention.kv_b_proj", "attention.q_a_proj",
                    "attention.q_b_proj", "router")
    every = m.weight_bytes(make_format("nvfp4"), skip=("router",))
    kept = [name for name in MLA if name != "o_proj"]
    assert m.weight_bytes()["attention"] - every["attention"] == 61 * _bf16_minus_nvfp4(kept) == 6_108_728_368
    # served as nvfp4 (SGLang --quantization modelopt_fp4): its own list, not the one of R1's published checkpoint
    s = Scenario(model=str(tmp_path / "config.json"), task="infer", quant="nvfp4", gpu="b300", num_gpus=4, tp=4)
    assert weight_format(s, m)[1] == skip


def test_modelopt_nested_form_fp8_and_errors():
    """hf_quant_config.json's nested form (``quantization: {quant_algo, exclude_modules}``), FP8 per tensor, and
    one sentence for an algorithm gpuplan does not size."""
    nested = {"quant_method": "modelopt", "quantization": {"quant_algo": "NVFP4", "exclude_modules": ["lm_head"]}}
    assert checkpoint_format(nested, 2) == (make_format("nvfp4", group_size=16), ())
    fp8 = {"quant_method": "modelopt", "quant_algo": "FP8", "ignore": ["model.layers.*.self_attn*"]}
    fmt, skip = checkpoint_format(fp8, 2, 4)
    assert fmt.name == "fp8" and fmt.fp8_block is None and skip == ("attention",)
    with pytest.raises(GpuplanError, match="quant_algo 'W4A8_AWQ' is not supported"):
        checkpoint_format({"quant_method": "modelopt", "quant_algo": "W4A8_AWQ"}, 2)


def test_named_linears_stay_alone_unless_the_whole_group_is_named():
    linears = {"attention": frozenset(MLA), "router": frozenset({"gate"})}
    assert excluded_groups(V2_EXCLUDE, 61, linears)[:2] == ("attention.kv_a_proj_with_mqa", "attention.kv_b_proj")
    every = [f"model.layers.{i}.self_attn.{name}" for i in range(2) for name in MLA]
    assert excluded_groups(every, 2, linears) == ("attention",)
    assert excluded_groups(every[:5] + every[5:7], 2, linears) == (
        "attention@0", "attention.q_a_proj@1", "attention.q_b_proj@1")
    # a name the model does not have (a fused qkv_proj) stands for its group, as before
    assert excluded_groups(["model.layers.*.self_attn.qkv_proj"], 2, linears) == ("attention",)


def test_bundled_checkpoint_lists_name_their_sources():
    """Every NVFP4 checkpoint gpuplan points at carries its sources; a list not found is None, and the plan keeps
    only the routers at 16 bits (the behaviour before the lists)."""
    entries = json.loads((resources.files("gpuplan") / "data" / "nvfp4_checkpoints.json").read_text())["checkpoints"]
    assert len(entries) == 9
    for model, entry in entries.items():
        assert published(model, "nvfp4") == entry["repo"] and entry["repo"].startswith("nvidia/")
        assert entry["sources"] and all(len(source) > 40 for source in entry["sources"])
    assert excluded_modules("qwen/qwen3-30b-a3b", "nvfp4") is None
    assert excluded_modules("meta-llama/Llama-3.3-70B-Instruct", "nvfp4") == ["lm_head"]
    assert published("deepseek-ai/DeepSeek-R1", "fp8") is None
    m = load_model("Qwen/Qwen3-30B-A3B")
    s = Scenario(model="Qwen/Qwen3-30B-A3B", task="infer", quant="nvfp4", gpu="b200", num_gpus=1)
    assert weight_format(s, m)[1] == ("router",)


def test_hf_quant_config_beside_a_config_without_one(tmp_path):
    """An early Model Optimizer checkpoint (nvidia/DeepSeek-R1-FP4) states its quantization only in
    hf_quant_config.json: read beside config.json, every attention projection and router kept in bf16."""
    bundled = resources.files("gpuplan") / "data" / "models" / "deepseek-ai__DeepSeek-R1.json"
    config = json.loads(bundled.read_text())
    del config["quantization_config"]
    (tmp_path / "config.json").write_text(json.dumps(config))
    exclude = [f"model.layers.{i}.self_attn.{name}" for i in range(61) for name in MLA] + [
        f"model.layers.{i}.mlp.gate" for i in range(3, 61)] + ["lm_head", "model.layers.61*"]
    quant = {"producer": {"name": "modelopt", "version": "0.23.0"},
             "quantization": {"quant_algo": "NVFP4", "group_size": 16, "exclude_modules": exclude}}
    (tmp_path / "hf_quant_config.json").write_text(json.dumps(quant))
    m = load_model(str(tmp_path))
    assert m.shipped_format() == (make_format("nvfp4", group_size=16), ("attention", "router"))
    (tmp_path / "hf_quant_config.json").write_text("[]")
    with pytest.raises(GpuplanError, match="no 'quantization' object"):
        load_model(str(tmp_path))
