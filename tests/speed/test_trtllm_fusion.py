"""TensorRT-LLM's DeepSeek decoder layer (issue 31): both all-reduces fused with the residual add and RMSNorm
(``DeepseekV3DecoderLayer``'s PRE_MOE_FUSION / POST_MOE_FUSION at tensor parallelism without attention data
parallelism), worked by hand from overheads' counts; other models, one GPU, attention DP and two nodes keep the
unfused all-reduce and the generic count."""

from __future__ import annotations

import functools

import pytest

from conftest import step_timer_of
from gpuplan import overheads as oh
from gpuplan.engines import trtllm
from gpuplan.speed.comms import all_reduce_s

R1 = dict(model="deepseek-r1", task="infer", engine="trtllm", gpu="h200", num_gpus=8, tp=8, quant="fp8",
          batch_size=1, prompt_tokens=1600, output_tokens=600)


timer = functools.partial(step_timer_of, R1)


@pytest.mark.parametrize("gpu, quant", [("h200", "fp8"), ("b200", "nvfp4"), ("b200", "fp8")])
def test_deepseek_at_tp8_fuses_both_all_reduces_and_their_norms(gpu, quant):
    t = timer(gpu=gpu, quant=quant)
    assert t.timing.fused_all_reduce
    # 14 - 7 dense + 16 MoE + 10 MLA = 33 non-GEMM kernels, less the 2 RMSNorms the all-reduces take in
    assert t.timing.layer_kernels == 31 == oh.DECODE_KERNELS_PER_LAYER - 7 + oh.MOE_KERNELS_PER_LAYER \
        + oh.MLA_KERNELS_PER_LAYER - trtllm.FUSED_NORMS_PER_LAYER
    parts = t.decode_parts(1, 2200)
    assert parts["kernel_latency"] == pytest.approx(61 * 31 * 3e-6, rel=1e-9)  # 5.673 ms (6.039 ms unfused)
    # 2 fused all-reduces per layer: 8 us each plus the ring's bandwidth term for one token's 7,168 bf16 values
    ring = all_reduce_s(7168 * 2, 8, t.link) - t.link.latency_s
    assert parts["tensor_parallel"] == pytest.approx(2 * 61 * (8e-6 + ring), rel=1e-9)


def test_the_eager_context_step_launches_the_fused_layer():
    t = timer()
    # (31 + 7 linears) x 61 layers, each launched at the fitted host time
    assert t.launch_host_s() == pytest.approx(38 * 61 * oh.TRTLLM_EAGER_LAUNCH_S, rel=1e-9)


@pytest.mark.parametrize("fields", [dict(num_gpus=1, tp=1, gpu="b200", quant="nvfp4"),
                                    dict(ep=8, attention_dp=True),
                                    dict(model="qwen3-235b-a22b", num_gpus=4, tp=4),
                                    dict(model="llama-3.1-70b", num_gpus=4, tp=4)])
def test_one_gpu_attention_dp_and_other_models_stay_unfused(fields):
    t = timer(**fields)
    assert not t.timing.fused_all_reduce and t.timing.layer_kernels == 0


def test_the_fused_moes_expanded_rows_cross_memory_once_each_way():
    """speed/experts.expanded_rows_s, by hand for DeepSeek-R1 FP8 on 8 H200s at TP 8 without EP: 1,000 tokens, top-8,
    58 MoE layers, hidden 7,168: per layer 7,168 x (4 x 1,000 + (1 + 4) x 8,000) = 315.4 MB (the expansion's 16-bit
    read and FP8 write of 8,000 rows, the finalize's read of 8,000 16-bit rows after the second GEMM wrote them,
    and its 16-bit write of 1,000), 18.29 GB for the step at the weights' streaming bandwidth; at EP 8 the busiest
    GPU's picks are 1,000 x the uniform-routing imbalance (speed/experts.imbalance); vLLM has no such term."""
    from gpuplan.speed.experts import expanded_rows_s, imbalance

    t = timer()
    per_layer = 7168 * (4 * 1000 + 5 * 8000)
    assert per_layer == 315_392_000
    assert expanded_rows_s(t, 1000) == pytest.approx(58 * per_layer / t._stream_bps, rel=1e-12)
    assert 3e-3 < expanded_rows_s(t, 1000) < 6e-3  # ~18.3 GB at a few TB/s
    ep8 = timer(ep=8)
    picks = 1000 * imbalance(1000, 8, 8)
    assert expanded_rows_s(ep8, 1000) == pytest.approx(58 * 7168 * (4 * 1000 + 5 * picks) / ep8._stream_bps,
                                                       rel=1e-12)
    nvfp4 = timer(gpu="b200", quant="nvfp4")  # FP4 rows: 0.5 byte a value and an FP8 scale per 16
    assert expanded_rows_s(nvfp4, 1000) == pytest.approx(58 * 7168 * (4000 + 4.5625 * 8000) / nvfp4._stream_bps,
                                                         rel=1e-12)
    assert expanded_rows_s(timer(engine="vllm"), 1000) == 0.0
    # it is in the step: a prefill's GEMM part and a decode's weights part each carry it
    assert t.prefill_parts(1000)["gemm"] > expanded_rows_s(t, 1000)


def test_mla_prompt_attention_runs_a_bf16_mha():
    """TensorRT-LLM's MLA context path (MLA.forward_context_default: kv_b_proj, then "BF16 MHA for context phase")
    takes no FP8-FMHA speed-up, where a dense FP8 model's prompt attention does (1.5x, fitted): DeepSeek-R1's prompt
    attention on 8 H200s at 8,192 tokens is 1.5 times what it would be with it."""
    r1 = timer()
    assert r1.timing.context_attention_speedup == 1.0
    llama = timer(model="llama-3.1-70b", num_gpus=4, tp=4)
    assert llama.timing.context_attention_speedup == oh.TRTLLM_CONTEXT_ATTENTION_SPEEDUP == 1.5
    import dataclasses
    fp8_fmha = dataclasses.replace(r1, timing=dataclasses.replace(r1.timing, context_attention_speedup=1.5))
    assert r1.prefill_parts(8192)["attention"] == pytest.approx(1.5 * fp8_fmha.prefill_parts(8192)["attention"])
