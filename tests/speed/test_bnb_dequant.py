"""QLoRA's bitsandbytes path as the speed model counts it (speed/training.py ``_dequant_pass_s``), against hand
calculations from bitsandbytes' code and the one published profile of it.

- bitsandbytes issue #1319 (A800 80GB PCIe, NF4/bf16): dequantizing a 4096 x 14336 weight costs "near 30%~50%" of
  the matmul of 4 x 512 tokens by it; gpuplan's A100 PCIe is the same GA100 at 1,935 GB/s.
- one dequantization with double quantization runs 3 kernels and moves 0.5 + 4/64 + 2 + 13/64 = 2.77 B per weight
  (functional.dequantize_4bit and dequantize_blockwise, 0.43-0.45); the NF4 decode issues ~1 weight per SM and cycle.
- Unsloth's fast_dequantize launches the same kernels: the GPU time is the same under both stacks, the host time not.
"""

from __future__ import annotations

import pytest

from gpuplan import overheads as oh
from gpuplan.hardware import load_gpu
from gpuplan.model.catalog import load_model
from gpuplan.scenario import scenario_from
from gpuplan.speed import speed_of
from gpuplan.speed.gemm import bandwidth, gemm_time_s
from gpuplan.speed.training import _dequant_pass_s
from gpuplan.stacks import stack_for

A100_PCIE = "nvidia-a100-pcie-80gb"


def test_issue_1319_share_of_the_gemm(tmp_path):
    """The down projection's shape of issue #1319 on an A100 PCIe: the NF4 decode at 1.0 weight per SM-cycle
    (58.7 M weights / (108 SMs x 1.41 GHz) = 0.385 ms) against the 2,048-token GEMM gpuplan times (~0.98 ms), plus
    three kernels' fixed cost: inside the profiled 30-50 %."""
    gpu = load_gpu(A100_PCIE)
    weights = 4096 * 14336
    issue = weights / (gpu.sm_count * gpu.boost_clock_mhz * 1e6 * oh.BNB_NF4_VALUES_PER_SM_CYCLE)
    memory = weights * oh.BNB_DEQUANT_BYTES_PER_PARAM / bandwidth(gpu)
    assert issue == pytest.approx(0.385e-3, rel=0.01)
    assert memory < issue  # issue-bound on HBM: 0.10 ms of traffic
    share = (issue + oh.BNB_DEQUANT_KERNELS * oh.GEMM_KERNEL_LATENCY_S) / gemm_time_s(gpu, "bf16", 2048, 14336, 4096)
    assert 0.30 <= share <= 0.50


def _scenario(stack: str, gpu: str = "a100-80gb", quant: str | None = None):
    return scenario_from(dict(model="llama-3.1-8b", task="train", method="qlora", gpu=gpu, micro_batch_size=2,
                              seq_len=512, grad_checkpointing="full", attention="flash", stack=stack,
                              quant=quant))


def test_same_kernels_under_unsloth_and_peft():
    """Unsloth's fast_dequantize calls cdequantize_blockwise_fp32 and cdequantize_blockwise_bf16_nf4 itself: the
    dequantization's GPU time is the same as through peft and MatMul4Bit; only the host work around it differs."""
    m, gpu = load_model("llama-3.1-8b"), load_gpu("a100-80gb")
    hf, un = _scenario("hf"), _scenario("unsloth")
    k_hf, k_un = stack_for(hf).kernels(hf), stack_for(un).kernels(un)
    assert _dequant_pass_s(hf, m, gpu, k_hf) == pytest.approx(_dequant_pass_s(un, m, gpu, k_un))
    assert k_hf.dequant_host_ops > k_un.dequant_host_ops and k_un.linear_4bit_host_ops == 0


def test_memory_bound_on_a_geforce_card():
    """An RTX 4090 (128 SMs at 2.52 GHz, 1,008 GB/s) decodes faster than it can write: the pass is the bytes at
    the card's bandwidth, as bitsandbytes PR #1747 found for sm89 at large sizes."""
    m, gpu = load_model("llama-3.1-8b"), load_gpu("nvidia-geforce-rtx-4090")
    s = _scenario("pytorch", gpu="nvidia-geforce-rtx-4090")
    weights = sum(c * lin.weight_params for layer, c in m.layer_kinds() for lin in layer.linears)
    modules = sum(c * lin.count for layer, c in m.layer_kinds() for lin in layer.linears)
    expected = weights * oh.BNB_DEQUANT_BYTES_PER_PARAM / bandwidth(gpu) \
        + modules * oh.BNB_DEQUANT_KERNELS * oh.GEMM_KERNEL_LATENCY_S
    assert _dequant_pass_s(s, m, gpu, stack_for(s).kernels(s)) == pytest.approx(expected)


def test_gptq_keeps_its_calibration():
    """A GPTQ base is AutoGPTQ's dequantize-then-matmul, 4.5 B per weight at 20 % of the bandwidth (fitted on Qwen-1's
    rows): the bitsandbytes counts do not touch it."""
    m, gpu = load_model("llama-3.1-8b"), load_gpu("a100-80gb")
    s = _scenario("hf", quant="gptq-int4")
    weights = sum(c * lin.weight_params for layer, c in m.layer_kinds() for lin in layer.linears)
    expected = weights * oh.QLORA_DEQUANT_BYTES_PER_PARAM / (bandwidth(gpu) * oh.QLORA_DEQUANT_BANDWIDTH_FRACTION)
    assert stack_for(s).kernels(s).dequant == "generic"
    assert _dequant_pass_s(s, m, gpu, stack_for(s).kernels(s)) == pytest.approx(expected)


def test_fp32_upcast_costs_time_only_where_it_runs():
    """prepare_model_for_kbit_training's fp32 parameters (the HF recipe's default) slow the step; the same run without
    them (qlora_fp32_upcast false, as Unsloth and Answer.AI's loop run) does not pay the casts."""
    m, gpu = load_model("llama-3.1-8b"), load_gpu("a100-80gb")
    up = _scenario("hf")
    plain = up.model_copy(update={"qlora_fp32_upcast": False})
    assert up.qlora_fp32_upcast
    slow, fast = speed_of(up, m, gpu), speed_of(plain, m, gpu)
    assert slow.step_time_s > fast.step_time_s
    assert any("fp32 activations" in a for a in slow.assumptions)
    assert not any("fp32 activations" in a for a in fast.assumptions)


def test_fp32_upcast_casts_only_the_tokens_routed_to_each_expert():
    """Under the fp32 upcast each 4-bit linear casts its input and output (6 B a element, and the adapter's input
    again), for the rows it multiplies. A routed expert multiplies only the tokens routed to it (transformers'
    MixtralSparseMoeBlock indexes them before calling the expert): Mixtral-8x7B's 2 of 8 experts a token, by hand
    for 2,048 tokens, per pass:
    q 4096 x 2 (adapted) + 4096, k and v 4096 x 2 + 1024, o 4096 x 2 + 4096 = 43,008; the experts (not adapted)
    2 x (w1 4096 + 14336, w3 the same, w2 14336 + 4096) = 110,592; the router stays 16-bit:
    6 B x 2,048 x 32 layers x 153,600 = 60.4 GB. Every expert counted for every token, it was 6 x 2,048 x 32 x
    (43,008 + 8 x 55,296) = 190.9 GB: GLM-4.5-Air QLoRA on two RTX 3090s read 3,402.6 GiB of casts a micro-step
    (128 experts for each token, where 8 take it), now 341.3."""
    from gpuplan.speed.training import _upcast_cast_bytes

    m = load_model("mixtral-8x7b")
    s = scenario_from(dict(model="mixtral-8x7b", task="train", method="qlora", gpu="h100-sxm"))
    assert _upcast_cast_bytes(s, m, 2048) == 6 * 2048 * 32 * (43_008 + 110_592) == pytest.approx(60.40e9, rel=1e-3)
