"""The layout of a multi-head latent attention model under tensor parallelism: the down-projections (and DeepSeek
sparse attention's indexer) whole on every rank, as vLLM, SGLang and TensorRT-LLM build them
(gpuplan.tensors.layout.replicated), in the weights a GPU holds, the KV pool left beside them and the step time."""

from __future__ import annotations

import pytest

from gpuplan.hardware import resolve_gpu
from gpuplan.model import load_model
from gpuplan.scenario import scenario_from
from gpuplan.tensors.breakdown import GIB
from gpuplan.tensors.layout import replicated_bytes, weights_per_gpu
from gpuplan.tensors.state import weight_format

R1_FP8_TP8 = {"model": "deepseek-r1", "task": "infer", "gpu": "h200", "num_gpus": 8, "tp": 8, "quant": "fp8",
              "prompt_tokens": 1024, "output_tokens": 256}
# 61 layers x 7/8 x (7,168 x 1,536 + 7,168 x 576 FP8 weights + a 4-byte scale each: 15,138,824 B)
R1_FP8_TP8_EXTRA = 808_034_731


@pytest.mark.parametrize(("name", "layers", "params"), [
    # q_a_proj 7,168 x 1,536 + kv_a_proj_with_mqa 7,168 x (512 + 64)
    ("deepseek-ai/DeepSeek-R1", 61, 7168 * 1536 + 7168 * 576),
    ("moonshotai/Kimi-K2-Instruct", 61, 7168 * 1536 + 7168 * 576),
    # and the indexer: wq_b 1,536 x 64 x 128, wk 7,168 x 128, weights_proj 7,168 x 64
    ("deepseek-ai/DeepSeek-V3.2", 61, 7168 * 1536 + 7168 * 576 + 1536 * 8192 + 7168 * 128 + 7168 * 64),
    # GLM-5: q_a 6,144 x 2,048, kv_a 6,144 x 576, wq_b 2,048 x 32 x 128, wk 6,144 x 128, weights_proj 6,144 x 32
    ("zai-org/GLM-5", 78, 6144 * 2048 + 6144 * 576 + 2048 * 4096 + 6144 * 128 + 6144 * 32),
])
def test_each_rank_holds_the_mla_down_projections_whole(name, layers, params):
    """BF16 at TP 8: each GPU holds 7/8 of the replicated linears beyond the even split, 2 bytes a parameter
    (DeepSeek-R1: 61 x 15,138,816 x 2 x 7/8 = 1,616,068,608 B, 1.5 GiB); none at TP 1, none under attention data
    parallelism (the attention is whole already), none for a model without MLA."""
    m = load_model(name)
    s = scenario_from({**R1_FP8_TP8, "model": name, "quant": "none", "engine": "vllm"})
    fmt, skip = weight_format(s, m)
    assert m.num_layers == layers
    extra = replicated_bytes(s, m.layers, fmt, skip)
    assert extra == layers * params * 2 * 7 / 8
    assert weights_per_gpu(s, m, fmt, skip) == pytest.approx(sum(m.weight_bytes(fmt, skip=skip).values()) / 8 + extra)
    assert replicated_bytes(s.model_copy(update={"tp": 1, "num_gpus": 1}), m.layers, fmt, skip) == 0.0
    assert replicated_bytes(s.model_copy(update={"attention_dp": True}), m.layers, fmt, skip) == 0.0
    llama = load_model("llama-3.1-70b")
    assert replicated_bytes(s, llama.layers, fmt, skip) == 0.0


def test_deepseek_r1_fp8_at_tp8_counts_the_replicated_bytes_by_hand():
    """``quant: fp8`` stores each linear as one byte a weight and one 4-byte scale: a layer's q_a_proj and
    kv_a_proj_with_mqa hold 7,168 x 1,536 + 4 + 7,168 x 576 + 4 = 15,138,824 B; 61 layers x 7/8 of it is
    808,034,731 B (0.75 GiB) more on each GPU than the even split."""
    m = load_model("deepseek-r1")
    s = scenario_from({**R1_FP8_TP8, "engine": "sglang"})
    fmt, skip = weight_format(s, m)
    extra = replicated_bytes(s, m.layers, fmt, skip)
    assert extra == pytest.approx(R1_FP8_TP8_EXTRA, abs=1) and extra / GIB == pytest.approx(0.7526, abs=1e-4)


def test_vllm_and_sglang_load_the_replicated_bytes_and_keep_that_less_kv_cache():
    """vLLM (DeepseekV2MLAAttention's fused_qkv_a_proj, disable_tp=True) and SGLang (fused_qkv_a_proj_with_mqa, a
    ReplicatedLinear): DeepSeek-R1 FP8 at TP 8 on H200s, each GPU loads the even split plus 808,034,731 B, and the
    KV pool sized from the memory left is that much smaller (vLLM: its budget less weights; SGLang: the token pool
    from the memory left after the weights)."""
    from gpuplan.engines import sglang, vllm

    m = load_model("deepseek-r1")
    gpu = resolve_gpu("h200")[0]
    s = scenario_from({**R1_FP8_TP8, "engine": "vllm"})
    fmt, skip = weight_format(s, m)
    even = sum(m.weight_bytes(fmt, skip=skip).values()) / 8
    stage = vllm.stages(m, 1)[0]
    assert vllm.stage_weights(s, m, stage, gpu) == pytest.approx(even + R1_FP8_TP8_EXTRA)
    g = scenario_from({**R1_FP8_TP8, "engine": "sglang"})
    held = sglang.startup_memory(g, m, gpu)
    from gpuplan import overheads as oh

    assert held.weights_gib == pytest.approx((even + R1_FP8_TP8_EXTRA) / GIB + oh.SGLANG_LOAD_EXTRA_GIB)
    dp = sglang.startup_memory(g.model_copy(update={"attention_dp": True}), m, gpu)
    assert dp.weights_gib > held.weights_gib  # the whole attention on every GPU, the down-projections within it


@pytest.mark.parametrize("engine", ["vllm", "sglang", "trtllm"])
def test_every_engine_reads_the_replicated_down_projection_whole_each_decode_step(engine, monkeypatch):
    """One decode token of DeepSeek-R1 FP8 at TP 8 on H200s: each GPU reads all of 7,168 x (1,536 + 576) FP8
    weights a layer, not an eighth, so 61 layers read 61 x 15,138,816 x 7/8 = 808,034,304 B more a token, at the
    weights' streaming bandwidth (a one-row GEMM is memory-bound)."""
    from gpuplan.plan.resolve import resolve
    from gpuplan.speed import inference

    r = resolve(scenario_from({**R1_FP8_TP8, "engine": engine}))
    timer = inference.step_timer(r.scenario, r.model, r.gpu)
    whole = timer._linears_s(1, dense_only=True)
    monkeypatch.setattr(inference, "replicated", lambda layer, lin: False)
    split = timer._linears_s(1, dense_only=True)
    extra = 61 * 7168 * (1536 + 576) * 7 / 8
    assert extra == 808_034_304
    assert whole - split == pytest.approx(extra / timer._stream_bps, rel=0.02)


# NVIDIA-Nemotron-3-Nano-30B-A3B (bundled config): hidden 2,688; hybrid_override_pattern of 23 Mamba-2 layers (M),
# 23 MoE layers (E) and 6 attention layers (*)
NANO = "nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16"
H = 2688
# Mamba-2 mixer: in_proj 2,688 -> 2 x 4,096 + 2 x 8 x 128 + 64 = 10,304; out_proj 4,096 -> 2,688; the causal conv
# over 6,144 channels (4 taps + bias) and A_log, D, dt_bias (64 each) = 30,912; attention: q 4,096, k and v 256 each
NANO_MIXERS = 23 * (H * 10304 + 4096 * H + 30912) + 6 * (H * 4096 + 2 * H * 256 + 4096 * H)
NANO_SHARED = 23 * 2 * H * 3712  # the shared expert: up_proj 2,688 -> 3,712, relu2, down_proj back
NANO_ROUTED = 23 * (128 * H + 128 * 2 * H * 1856)  # the router (2,688 -> 128) and 128 experts of width 1,856


def test_nemotron_h_shared_experts_and_router_are_not_attention():
    """Nemotron-H names every layer's module ``mixer`` (transformers' modeling_nemotron_h.py: NemotronHMoE on its
    ``E`` layers), so the trace read the shared expert and the router as attention. Counted by hand they are the
    MLP and the experts: 1,031,354,688 attention parameters (Mamba-2 and attention mixers), 458,981,376 in the
    shared experts, 29,382,721,536 routed, 31,577,937,344 in all (the real class on the meta device)."""
    m = load_model(NANO)
    parts = m.params_breakdown()
    assert (parts["attention"], parts["mlp"], parts["experts"]) == (NANO_MIXERS, NANO_SHARED, NANO_ROUTED)
    assert NANO_MIXERS == 1_031_354_688 and m.params_total == 31_577_937_344
    groups = {lin.name: lin.group for lin in m.layers[1].linears if lin.count == 1}
    assert groups == {"gate": "router", "up_proj": "shared_experts", "down_proj": "shared_experts"}


def test_nemotron_3_nano_weights_per_gpu_at_tp2_by_hand():
    """BF16 over 2 GPUs: 31,577,937,344 parameters x 2 B / 2 = 31,577,937,344 B each. Under SGLang's attention
    data parallelism each GPU also holds the other half of the mixers (Mamba-2 and attention), 1,031,354,688 x 2 B
    x 1/2, but not of the shared experts and router (split over TP 2: vLLM's and SGLang's NemotronHMoE build the
    shared expert as a column- then row-parallel MLP), which the trace had counted as attention (466,894,848 B more)."""
    m = load_model(NANO)
    s = scenario_from({"model": NANO, "task": "infer", "gpu": "h100", "num_gpus": 2, "tp": 2, "engine": "sglang",
                       "prompt_tokens": 1024, "output_tokens": 256})
    fmt, skip = weight_format(s, m)
    assert weights_per_gpu(s, m, fmt, skip) == 31_577_937_344
    dp = s.model_copy(update={"attention_dp": True})
    assert weights_per_gpu(dp, m, fmt, skip) == 31_577_937_344 + NANO_MIXERS
