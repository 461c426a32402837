"""An optimizer that loops over its tensors in Python (transformers' Adafactor) spends host time per trained tensor
every step (issue 34): its aten ops, counted under a dispatch counter (``OPTIMIZER_OPS_PER_TENSOR``), at eager
PyTorch's per-op cost. Checked on a hand-written profile of kohya's SDXL LoRA: 722 adapted linears (kohya's own log,
'create LoRA for U-Net: 722 modules'), two adapter tensors each."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from gpuplan import overheads as oh
from gpuplan.hardware import load_gpu
from gpuplan.model.profile import Op, Poly, Profile
from gpuplan.speed.modules import optimizer_host_s

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
    lora = SimpleNamespace(trained="none", lora_roles=("attention",))
    full = SimpleNamespace(trained="all", lora_roles=())
    bf16_true = SimpleNamespace(optimizer="adafactor", precision="bf16-true")
    bf16_mixed = SimpleNamespace(optimizer="adafactor", precision="bf16-mixed")
    p = _profile()
    assert optimizer_host_s(bf16_true, lora, p, desktop) == pytest.approx(1444 * 31 * 7e-6) == pytest.approx(0.313348)
    assert optimizer_host_s(bf16_true, lora, p, server) == pytest.approx(1.75 * 0.313348)
    assert optimizer_host_s(bf16_mixed, lora, p, desktop) == pytest.approx(0.283024)
    assert optimizer_host_s(bf16_mixed, full, p, desktop) == pytest.approx((722 * 2 + 10) * 28 * 7e-6)
    assert optimizer_host_s(SimpleNamespace(optimizer="adamw", precision="bf16-true"), lora, p, desktop) == 0.0
