"""TensorRT-LLM's FP8 block-scale MoE on Hopper (issue 31): both grouped GEMMs of a MoE layer are DeepGEMM
``GroupedWithOffset`` kernels whose scheduler walks every local expert on every call
(``deep_gemm/scheduler.cuh`` ``get_next_block``), ``overheads.TRTLLM_HOPPER_GROUP_WALK_S`` a local expert and call,
fitted on issue #5929's H200 calibration rows. Worked by hand: the walk's count from the experts a GPU holds, the
decode step it lengthens; the B200, NVFP4, per-tensor FP8 and other engines pay none."""

from __future__ import annotations

import dataclasses

import pytest

from gpuplan import overheads as oh
from gpuplan.engines import block_fp8, trtllm
from gpuplan.plan.resolve import resolve
from gpuplan.scenario import scenario_from
from gpuplan.speed.inference import step_timer

R1 = dict(model="deepseek-r1", task="infer", engine="trtllm", gpu="h200", num_gpus=8, tp=8, quant="fp8",
          batch_size=1, prompt_tokens=1600, output_tokens=600)


def resolved(**fields):
    r = resolve(scenario_from({**R1, **fields}))
    return r.scenario, r.model, r.gpu


@pytest.mark.parametrize("ep, local", [(1, 256), (4, 64), (8, 32)])
def test_the_walk_counts_every_local_expert_twice_a_layer(ep, local):
    """DeepSeek-R1's 256 routed experts over EP: each GPU holds 256 / ep of them (all 256, sliced, at EP 1), and both
    grouped GEMMs of a layer walk them: 2 x 256 x 137 ns = 70.144 us a layer at EP 1, 8.768 us at EP 8."""
    s, m, gpu = resolved(ep=ep)
    walk = trtllm.grouped_gemm_walk(s, m, gpu)["expert_layer_s"]
    assert walk == pytest.approx(2 * local * oh.TRTLLM_HOPPER_GROUP_WALK_S, rel=1e-12)
    assert oh.TRTLLM_HOPPER_GROUP_WALK_S == 1.37e-7
    assert walk == pytest.approx({1: 70.144e-6, 4: 17.536e-6, 8: 8.768e-6}[ep], rel=1e-9)


def test_the_checkpoints_own_fp8_blocks_count_as_fp8():
    """``quant: fp8`` on DeepSeek-R1 serves its own checkpoint (quantization_config weight_block_size 128 x 128), as
    leaving the quantization to the checkpoint does."""
    s, m, _ = resolved()
    assert m.shipped_format()[0].fp8_block == (128, 128)
    assert block_fp8.fp8_block_served(s, m)
    s0, m0, _ = resolved(quant=None)
    assert block_fp8.fp8_block_served(s0, m0)


def test_the_decode_step_pays_the_walk_in_each_of_58_moe_layers():
    """The step's weights part grows by 58 MoE layers x 70.144 us = 4.07 ms at EP 1 (one user, 2,200 tokens of
    context): the calibration rows' 9.6 ms a token without it against 13.8 measured."""
    s, m, gpu = resolved()
    timer = step_timer(s, m, gpu)
    with_walk = timer.decode_parts(1, 2200)["weights"]
    assert timer.timing.expert_layer_s == pytest.approx(70.144e-6, rel=1e-9)
    bare = dataclasses.replace(timer, timing=dataclasses.replace(timer.timing, expert_layer_s=0.0))
    without = bare.decode_parts(1, 2200)["weights"]
    assert sum(1 for layer in m.layers if layer.moe) == 58
    assert with_walk - without == pytest.approx(58 * 70.144e-6, rel=1e-9)  # 4.068 ms


@pytest.mark.parametrize("fields", [dict(gpu="b200", quant="nvfp4"), dict(gpu="b200"),
                                    dict(model="mixtral-8x7b", num_gpus=1, tp=1),
                                    dict(model="llama-3.1-70b", num_gpus=4, tp=4),
                                    dict(engine="sglang"), dict(engine="vllm")])
def test_blackwell_other_formats_dense_models_and_other_engines_pay_none(fields):
    """Blackwell runs other kernels (fp8_swap_ab_gemm, CUTLASS NVFP4, TRTLLM-Gen); Mixtral's fp8 is per-tensor (its
    checkpoint is bf16); a dense model has no grouped GEMM; SGLang and vLLM run their own MoE kernels."""
    s, m, gpu = resolved(**fields)
    assert step_timer(s, m, gpu).timing.expert_layer_s == 0.0
