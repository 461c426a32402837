"""SGLang 0.5's DeepSeek decode floor (issue 31): its own kernel count per MLA + MoE layer and FlashInfer's fused
all-reduce + RMSNorm on Hopper and Blackwell, worked by hand from overheads' counts; older releases, vLLM and ROCm
keep what they had."""

from __future__ import annotations

import functools

import pytest

from conftest import step_timer_of
from gpuplan import overheads as oh
from gpuplan.speed.comms import all_reduce_s

R1 = dict(model="deepseek-r1", task="infer", engine="sglang", gpu="h200", num_gpus=8, tp=8, batch_size=4,
          prompt_tokens=1024, output_tokens=1024)


timer = functools.partial(step_timer_of, R1)


def test_sglang_05_on_h200_fuses_the_all_reduce_and_counts_its_own_kernels():
    t = timer(engine_version="0.5.12")
    assert t.timing.fused_all_reduce and t.timing.layer_kernels == 16
    parts = t.decode_parts(4, 1536)
    # 61 layers x 16 kernels x 3 us = 2.928 ms (the generic count, 33, gave 6.04 ms)
    assert parts["kernel_latency"] == pytest.approx(61 * 16 * 3e-6, rel=1e-9)
    # 2 fused all-reduces per layer: 8 us each plus the ring's bandwidth term for 4 x 7,168 bf16 values
    ring = all_reduce_s(4 * 7168 * 2, 8, t.link) - t.link.latency_s
    assert parts["tensor_parallel"] == pytest.approx(2 * 61 * (8e-6 + ring), rel=1e-9)
    assert parts["tensor_parallel"] < 1.1e-3


def test_blackwell_fuses_too_and_only_the_listed_architectures_at_tp_fuse():
    assert timer(gpu="b200", engine_version="0.5.12").timing.fused_all_reduce
    qwen = dict(model="qwen3-30b-a3b", engine_version="0.5.12", num_gpus=2, tp=2)
    assert timer(**qwen).timing.fused_all_reduce
    assert timer(**qwen).timing.layer_kernels == 0  # no MLA: the generic count
    assert not timer(**{**qwen, "num_gpus": 1, "tp": 1}).timing.fused_all_reduce
    assert not timer(model="llama-3.1-70b", engine_version="0.5.12").timing.fused_all_reduce
    assert not timer(engine_version="0.5.12", ep=8, attention_dp=True).timing.fused_all_reduce


def test_rocm_counts_the_same_layer_with_its_norms_and_no_fusion():
    t = timer(gpu="mi325x", engine_version="0.5.19")
    assert not t.timing.fused_all_reduce
    assert t.timing.layer_kernels == oh.SGLANG_MLA_MOE_KERNELS_PER_LAYER + 2 == 18


def test_older_sglang_and_vllm_keep_the_generic_floor():
    for t in (timer(engine_version="0.4.3"), timer(engine="vllm")):
        assert not t.timing.fused_all_reduce and t.timing.layer_kernels == 0
        # 14 - 7 dense + 10 MLA per layer, and 16 MoE on the 58 expert layers (the first 3 are dense)
        assert t.decode_parts(4, 1536)["kernel_latency"] == pytest.approx((61 * 17 + 58 * 16) * 3e-6, rel=1e-9)


def test_the_floor_is_about_what_the_runs_imply():
    """InferenceX's H200 run at 4 requests (1k/1k) decoded in 9.7 ms; the step's weight reads take ~6.1 ms, so the
    fixed part (kernels and all-reduces) is ~3.5 ms: now 2.9 + 1.0 ms, before 6.0 + 3.8 ms."""
    parts = timer(engine_version="0.5.12").decode_parts(4, 1536)
    fixed = parts["kernel_latency"] + parts["tensor_parallel"]
    assert 3.0e-3 < fixed < 4.5e-3
