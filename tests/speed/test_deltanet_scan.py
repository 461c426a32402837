"""Gated DeltaNet layers in a prompt (fla's chunked gated delta rule from its kernels' own work, not attention) and
the recurrent mixers' backward in a training step (Mamba-2's and Gated DeltaNet's, from their backward kernels)."""

from __future__ import annotations

import pytest

from gpuplan import load_model
from gpuplan.hardware import load_gpu
from gpuplan.model.conventions import deltanet_shape, mamba2_shape
from gpuplan.speed.gemm import bandwidth
from gpuplan.speed.work import (
    attends,
    attention_s,
    deltanet_backward_ratio,
    deltanet_chunk_s,
    linear_scans_s,
    mamba_scans_s,
    scans_training_s,
    ssd_backward_ratio,
)

NEXT = "Qwen/Qwen3-Next-80B-A3B-Instruct"
NANO = "nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16"


def test_qwen3_next_delta_rule_bytes_by_hand():
    """One 1,024-token prompt through one Gated DeltaNet layer of Qwen3-Next (32 value heads, keys and values of
    128, 16 chunks of 64) on an H200, per value head: kkt reads k (2 x 128 x 1,024) and writes A in fp32
    (4 x 16 x 64^2): 524,288 bytes; solve_tril reads A in fp32 and writes it in 16 bits: 393,216; w and u read k
    and v and write w and u (4 x 256 x 1,024) and read A: 1,179,648; the state pass reads k, w, u and writes v_new
    (2 x 512 x 1,024) and 16 states of 128 x 128: 1,572,864; the output reads q, k, v_new and the states and writes
    o: 1,572,864. 5,242,880 bytes a head, 167,772,160 for 32; the convolution reads and writes 8,192 channels
    (4 x 1,024 x 8,192): 33,554,432. The largest matmul work, 67.1 MFLOP a head (4 x 128 x 128 x 1,024), takes
    0.19 us at 989 TFLOPS x 0.35 against 0.4 us for its bytes: every kernel is memory-bound on this card."""
    m, gpu = load_model(NEXT), load_gpu("h200")
    assert deltanet_shape(m.config) == {"k_heads": 16, "v_heads": 32, "k_dim": 128, "v_dim": 128, "conv": 8192,
                                        "chunk": 64}
    assert deltanet_chunk_s(m, gpu, 1, 1024) == pytest.approx(201_326_592 / bandwidth(gpu), rel=1e-9)
    assert deltanet_chunk_s(m, gpu, 1, 1024, tp=2) == pytest.approx(100_663_296 / bandwidth(gpu), rel=1e-9)


def test_linear_attention_layers_are_not_attention():
    """Of Qwen3-Next's 48 layers the 12 ``full_attention`` ones attend; its 36 ``linear_attention`` layers are
    timed by the delta rule (before, all 48 were timed as 16-head attention of width 256)."""
    m, gpu = load_model(NEXT), load_gpu("h200")
    kinds = {layer.attention: attends(layer) for layer in m.layers}
    assert kinds == {"linear": False, "full": True}
    assert sum(1 for layer in m.layers if layer.attention == "linear") == 36
    assert linear_scans_s(m, gpu, 2, 1024) == pytest.approx(36 * deltanet_chunk_s(m, gpu, 2, 1024), rel=1e-12)
    flops = 12 * 2 * 4 * 16 * 256 * 1024 * (1024 + 1) / 2
    llama = load_model("llama-3.1-8b")  # 32 layers of 32 heads of 128
    per_flop = attention_s(llama, gpu, "bf16", 2, 1024, kernel="flash") / (32 * 2 * 4 * 32 * 128 * 1024 * 1025 / 2)
    assert attention_s(m, gpu, "bf16", 2, 1024, kernel="flash") == pytest.approx(flops * per_flop, rel=1e-9)


def test_prompt_step_carries_the_delta_rule():
    """vLLM prefilling a 1,024-token prompt of Qwen3-Next on one H200: the step's ``ssm_scan`` part is the 36 layers'
    delta rule."""
    from gpuplan.scenario import scenario_from
    from gpuplan.speed.inference import step_timer

    s = scenario_from({"model": NEXT, "task": "infer", "engine": "vllm", "gpu": "h200", "num_gpus": 2, "tp": 2,
                       "quant": "fp8"})
    m, gpu = load_model(NEXT), load_gpu("h200")
    parts = step_timer(s, m, gpu).prefill_parts(1024)
    assert parts["ssm_scan"] == pytest.approx(linear_scans_s(m, gpu, 1, 1024, tp=2), rel=1e-12)


def test_backward_over_forward_from_the_kernels():
    """Mamba-2 (Nemotron-3-Nano: inner 4,096, d_state 128, 8 groups, chunks of 128): 10 x 4,096 x 128 + 3 x 4,096
    x 128 + 6 x 8 x 128 x 128 = 7,602,176 FLOPs a token backward against 2,883,584 forward. Gated DeltaNet
    (Qwen3-Next: 128, 128, chunks of 64): 16 x 128^2 + 64 x (16 + 10) x 128 = 475,136 against 6 x 128^2 + 64 x 10 x
    128 + 64^2 / 3 = 181,589.3."""
    nano, nxt = load_model(NANO), load_model(NEXT)
    assert ssd_backward_ratio(mamba2_shape(nano.config, nano.hidden_size)) == pytest.approx(7_602_176 / 2_883_584)
    assert deltanet_backward_ratio(deltanet_shape(nxt.config)) == pytest.approx(475_136 / (181_589 + 1 / 3))


def test_training_step_pays_for_the_scans():
    """A training micro-step runs each recurrent mixer forward, again under full checkpointing, and backward:
    Nemotron-3-Nano's 23 Mamba-2 layers at 1 + 1 + 2.64 forwards, Qwen3-Next's 36 delta-rule layers at
    1 + 1 + 2.62; the step's ``ssm_scan`` part is that work (before, the mixers trained at no cost)."""
    from gpuplan.scenario import scenario_from
    from gpuplan.speed.training import training_speed

    nano, nxt, gpu = load_model(NANO), load_model(NEXT), load_gpu("h100")
    assert scans_training_s(nano, gpu, 2, 4096, again=1.0) == pytest.approx(
        mamba_scans_s(nano, gpu, 2, 4096) * (2 + 7_602_176 / 2_883_584), rel=1e-12)
    assert scans_training_s(nxt, gpu, 2, 4096) == pytest.approx(
        linear_scans_s(nxt, gpu, 2, 4096) * (1 + 475_136 / (181_589 + 1 / 3)), rel=1e-12)
    for checkpointing, again in (("none", 0.0), ("full", 1.0)):
        s = scenario_from({"model": NANO, "task": "train", "method": "lora", "gpu": "h100", "seq_len": 4096,
                           "micro_batch_size": 1, "grad_accum_steps": 2, "grad_checkpointing": checkpointing})
        parts = training_speed(s, nano, gpu).parts_s
        assert parts["ssm_scan"] == pytest.approx(2 * scans_training_s(nano, gpu, 1, 4096, again=again), rel=1e-12)


def test_llama_cpp_prompt_carries_the_scans_too():
    """llama.cpp prefilling Qwen3-Next (Q4_K_M on an L4, one 4,096-token prompt in micro-batches of 512): its
    ``ssm_scan`` part is the delta rule over each micro-batch (the same work as fla's kernels), not nothing."""
    from gpuplan.scenario import scenario_from
    from gpuplan.speed.inference import step_timer

    s = scenario_from({"model": NEXT, "task": "infer", "engine": "llama.cpp", "gpu": "l4", "num_gpus": 8,
                       "quant": "q4_k_m"})
    m, gpu = load_model(NEXT), load_gpu("l4")
    parts = step_timer(s, m, gpu).prefill_parts(4096)
    assert parts["ssm_scan"] == pytest.approx(8 * linear_scans_s(m, gpu, 1, 512), rel=1e-12)
