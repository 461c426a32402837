"""Transformer Engine's fused attention in training on AMD Instinct (overheads.ATTENTION_FORWARD_KERNEL_TFLOPS,
speed/work.py training_share_from_kernel): AITER's published forward rate on the card times what a training step
keeps of a kernel benchmark's rate on Hopper; by hand. The held-out MLPerf rows it moves are checked in
tests/test_mlperf.py (bench/results/train_s27.md).

Tolerance: 1e-4 on the shares (the constants are given to 4-6 digits)."""

from __future__ import annotations

import pytest

from gpuplan.hardware import load_gpu
from gpuplan.speed.work import attention_fraction

KEPT = 0.19 / (327.9 / 989.4)  # Hopper FA2: end to end 0.19 over its forward benchmark's 327.9 of 989.4 TFLOPS


def test_kept_share_of_a_kernel_benchmark_on_hopper():
    """0.19 / 0.33141 = 0.57330."""
    kept = 0.19 / (327.9 / 989.4)
    assert kept == pytest.approx(0.57330, rel=1e-4)


@pytest.mark.parametrize("card, forward_tflops, peak", [("amd-instinct-mi300x", 591.37, 1307.4),
                                                        ("amd-instinct-mi325x", 591.37, 1307.4),
                                                        ("amd-instinct-mi355x", 1412.91, 2516.0)])
def test_training_attention_share_from_aiters_forward_rate(card, forward_tflops, peak):
    """MI325X: 591.37 / 1,307.4 x 0.5733 = 0.2593; MI355X 1,412.91 / 2,516 x 0.5733 = 0.3220, where both had the
    0.30 default; the MI300X (the same chip at 750 W) at the clock it holds in continuous matrix work, its sustained
    bf16 708 TFLOPS over its short-loop 1,307.4 x 0.601 = 785.75: 0.2593 x 0.9010 = 0.2337. The MI325X's sustained
    843 is above its short loop (786): no drop; the MI355X has no sustained rate."""
    clock = {"amd-instinct-mi300x": 708.0 / (1307.4 * 0.601)}.get(card, 1.0)
    share = attention_fraction(load_gpu(card), "cudnn")
    assert share == pytest.approx(forward_tflops / peak * KEPT * clock, rel=1e-9)
    assert share == pytest.approx({"amd-instinct-mi355x": 0.3220, "amd-instinct-mi300x": 0.2337}.get(card, 0.2593),
                                  rel=1e-3)


def test_serving_prompts_and_other_kernels_keep_their_shares():
    """A serving prompt's forward (no forward benchmark entry for these cards), SDPA's flash class, and a CDNA card
    AITER does not list (MI250X) stay at the 0.30 default; NVIDIA's unchanged (Hopper cuDNN 0.35)."""
    mi300x = load_gpu("amd-instinct-mi300x")
    assert attention_fraction(mi300x, "cudnn", forward=True) == 0.30
    assert attention_fraction(mi300x, "flash2") == 0.30
    assert attention_fraction(load_gpu("amd-instinct-mi250x"), "cudnn") == 0.30
    assert attention_fraction(load_gpu("nvidia-h100-sxm5-80gb"), "cudnn") == 0.35


def test_sdpa_on_rocm_runs_its_flash_kernel_not_cudnn():
    """PyTorch's cuDNN attention is CUDA-only: SDPA on an MI300X is FlashAttention-2's class (ROCm's AOTriton or CK
    flash, the 0.30 default), whatever today's release prefers on Hopper; Megatron's Transformer Engine attention
    stays "cudnn" (AITER's share); on an H100 SDPA stays cuDNN's."""
    from gpuplan.scenario import scenario_from
    from gpuplan.speed.training import _on_card
    from gpuplan.stacks import stack_for

    mi300x, h100 = load_gpu("amd-instinct-mi300x"), load_gpu("nvidia-h100-sxm5-80gb")
    hf = scenario_from(dict(model="llama-3.1-8b", task="train", method="lora", stack="hf", attention="sdpa"))
    assert _on_card(stack_for(hf).kernels(hf), mi300x).attention == "flash2"
    assert _on_card(stack_for(hf).kernels(hf), h100).attention == "cudnn"
    mega = scenario_from(dict(model="llama-3.1-8b", task="train", method="lora", stack="megatron"))
    assert _on_card(stack_for(mega).kernels(mega), mi300x).attention == "cudnn"
