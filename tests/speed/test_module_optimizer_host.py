"""An optimizer that loops over its tensors in Python (transformers' Adafactor) spends host time per trained tensor
every step (issue 34): its aten ops, counted under a dispatch counter (``OPTIMIZER_OPS_PER_TENSOR``), at eager
PyTorch's per-op cost. Checked on a hand-written profile of kohya's SDXL LoRA: 722 adapted linears (kohya's own log,
'create LoRA for U-Net: 722 modules'), two adapter tensors each. AdamW as a for-loop (transformers' own, the
Trainer's adamw_hf before 4.32): its ops on the host and its kernels and bytes on the GPU, per tensor."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from gpuplan import overheads as oh
from gpuplan.hardware import load_gpu
from gpuplan.model.profile import Op, Poly, Profile
from gpuplan.speed.modules import adamw_for_loop_s, optimizer_host_s, optimizer_s

NOTHING = Poly((((), 0.0, 0.0),))
ONE = Poly((((), 1.0, 0.0),))


def _profile() -> Profile:
    adapted = Op(kind="linear", dims=(ONE, ONE, ONE), count=722, role="attention", bias=True)
    other = Op(kind="conv", dims=(ONE, ONE, ONE), count=10, role="other")
    return Profile(module="UNet", variables=(), ops=(adapted, other), other_bytes=NOTHING, other_kernels=0,
                   memory={}, params=0, dispatches=0, calls=0)


def test_adafactor_host_time_per_adapter_tensor_and_per_weight():
    """LoRA in bf16 (precision bf16-true): 1,444 tensors x (28 + 3) ops x 7 us = 0.313348 s on a desktop, 1.75 times
    that on a datacenter card's server; in fp32 master weights (bf16-mixed) 28 ops: 0.283024 s. A full fine-tune
    updates each linear's weight and bias and each convolution's weight: (722 x 2 + 10) x 28 x 7 us = 0.284984 s.
    torch's AdamW (foreach) is not counted per tensor."""
    assert (oh.OPTIMIZER_OPS_PER_TENSOR["adafactor"], oh.OPTIMIZER_OPS_16BIT_EXTRA) == (28, 3)
    assert oh.DISPATCH_OVERHEAD_S == 7e-6
    desktop, server = load_gpu("rtx-3090-ti"), load_gpu("a100-sxm4-80gb")
    unknown = SimpleNamespace(main=SimpleNamespace(tensors=0))  # a spec whose tensors were not counted
    lora = SimpleNamespace(trained="none", lora_roles=("attention",), spec=unknown)
    full = SimpleNamespace(trained="all", lora_roles=(), spec=unknown)
    bf16_true = SimpleNamespace(optimizer="adafactor", precision="bf16-true")
    bf16_mixed = SimpleNamespace(optimizer="adafactor", precision="bf16-mixed")
    p = _profile()
    assert optimizer_host_s(bf16_true, lora, p, desktop) == pytest.approx(1444 * 31 * 7e-6) == pytest.approx(0.313348)
    assert optimizer_host_s(bf16_true, lora, p, server) == pytest.approx(1.75 * 0.313348)
    assert optimizer_host_s(bf16_mixed, lora, p, desktop) == pytest.approx(0.283024)
    assert optimizer_host_s(bf16_mixed, full, p, desktop) == pytest.approx((722 * 2 + 10) * 28 * 7e-6)
    assert optimizer_host_s(SimpleNamespace(optimizer="adamw", precision="bf16-true"), lora, p, desktop) == 0.0


def test_adamw_for_loop_is_its_ops_kernels_and_bytes_per_tensor():
    """BERT-large's step of transformers 4.16's AdamW on a V100-SXM2 (900 GB/s x 0.8 = 720 GB/s achievable; a
    datacenter card's server host, 1.75 times a desktop's per-op time), by hand:
    GPU: 335,143,938 parameters x 4 B x (2 + 14 + 2) passes = 24,130,363,536 B / 720e9 = 33.5144 ms, and 393 tensors x
    7 kernels x 5 us = 13.755 ms: 47.2694 ms; host: 393 x 9 ops x 7 us x 1.75 = 43.3283 ms; overlapped as a pass's
    host and GPU work (p = 2): sqrt(47.2694^2 + 43.3283^2) = 64.1228 ms, where the fused kernel's one pass is
    335,143,938 x 32 B / 720e9 = 14.8953 ms. Under a 16-bit precision (bf16-true) the bytes halve: 16.7572 + 13.755 =
    30.5122 ms GPU, sqrt(30.5122^2 + 43.3283^2) = 52.9942 ms."""
    assert (oh.ADAMW_FOR_LOOP_OPS_PER_TENSOR, oh.ADAMW_FOR_LOOP_KERNELS_PER_TENSOR) == (9, 7)
    assert sum(oh.ADAMW_FOR_LOOP_PASSES.values()) == 18
    assert (oh.GEMM_KERNEL_LATENCY_S, oh.SERVER_HOST_FACTOR, oh.HOST_GPU_OVERLAP_SHARPNESS) == (5e-6, 1.75, 2.0)
    v100 = load_gpu("v100-sxm2-16gb")
    fp16_mixed = SimpleNamespace(optimizer="adamw", precision="fp16-mixed")
    assert adamw_for_loop_s(fp16_mixed, v100, 335_143_938, 393) == pytest.approx(0.0641228, rel=1e-5)
    assert optimizer_s(v100, 335_143_938, oh.OPTIMIZER_BYTES_PER_PARAM) == pytest.approx(0.0148953, rel=1e-5)
    bf16_true = SimpleNamespace(optimizer="adamw", precision="bf16-true")
    assert adamw_for_loop_s(bf16_true, v100, 335_143_938, 393) == pytest.approx(0.0529942, rel=1e-5)


def test_the_trainer_s_adamw_is_its_release_s_default_unless_given():
    """transformers' Trainer defaulted to optim adamw_hf (its own AdamW, a for-loop) from 4.16 until 4.32 (pull
    request 25109): a text encoder's plan given an older transformers_version steps AdamW as that loop; a given
    optimizer_impl wins; no release given is the current one's fused kernel."""
    from gpuplan.scenario import Scenario
    from gpuplan.scenario.modules import optimizer_impl

    base = {"model": "bert-large-uncased", "task": "train", "method": "full"}
    assert optimizer_impl(Scenario(**base, transformers_version="4.16")) == "for-loop"
    assert optimizer_impl(Scenario(**base, transformers_version="4.31.0")) == "for-loop"
    assert optimizer_impl(Scenario(**base, transformers_version="4.32")) == "fused"
    assert optimizer_impl(Scenario(**base, transformers_version="4.16", optimizer_impl="foreach")) == "foreach"
    assert optimizer_impl(Scenario(**base)) == "fused"


def test_bert_large_on_a_v100_steps_the_trainer_s_loop_and_a_decoder_refuses_it():
    """The plan of transformers' docs' BERT-large fp16 run (batch 4 x 512, January 2022) times its optimizer as the
    for-loop above (64.1 ms, the fused pass 14.9 ms); a decoder LLM's plan does not model the loop and says so, and
    a diffusion pipeline's plan, which reads no optimizer_impl, refuses it as another kind of model's field."""
    from gpuplan import estimate
    from gpuplan.errors import GpuplanError

    run = {"model": "bert-large-uncased", "task": "train", "method": "full", "micro_batch_size": 4, "seq_len": 512,
           "precision": "fp16-mixed", "attention": "eager", "gpu": "v100-sxm2-16gb"}
    now, then = estimate(run, advise=False), estimate({**run, "transformers_version": "4.16"}, advise=False)
    assert now.work.parts_s["optimizer"] == pytest.approx(0.0148953, rel=1e-4)
    assert then.work.parts_s["optimizer"] == pytest.approx(0.0641228, rel=1e-4)
    with pytest.raises(GpuplanError, match=r"for-loop .* is planned for text encoders"):
        estimate({"model": "llama-3.1-8b", "task": "train", "method": "full", "optimizer_impl": "for-loop"})
    with pytest.raises(GpuplanError, match=r"optimizer_impl is read by another kind of model, and .* is a diffusion"):
        estimate({"model": "sd-1.5", "task": "train", "method": "lora", "optimizer_impl": "for-loop"})
