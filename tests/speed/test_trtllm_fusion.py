"""TensorRT-LLM's DeepSeek decoder layer (issue 31): both all-reduces fused with the residual add and RMSNorm
(``DeepseekV3DecoderLayer``'s PRE_MOE_FUSION / POST_MOE_FUSION at tensor parallelism without attention data
parallelism), worked by hand from overheads' counts; other models, one GPU, attention DP and two nodes keep the
unfused all-reduce and the generic count."""

from __future__ import annotations

import pytest

from gpuplan import overheads as oh
from gpuplan.engines import trtllm
from gpuplan.plan.resolve import resolve
from gpuplan.scenario import scenario_from
from gpuplan.speed.comms import all_reduce_s
from gpuplan.speed.inference import step_timer

R1 = dict(model="deepseek-r1", task="infer", engine="trtllm", gpu="h200", num_gpus=8, tp=8, quant="fp8",
          batch_size=1, prompt_tokens=1600, output_tokens=600)


def timer(**fields):
    r = resolve(scenario_from({**R1, **fields}))
    return step_timer(r.scenario, r.model, r.gpu)


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
