"""Eager attention under mixed precision (issue 34): ``torch.autocast`` runs ``softmax`` in fp32 (PyTorch's autocast
float32 list), so a 16-bit eager attention's score matrix moves 16 bytes per score forward where a 16-bit pass moves
8, and the cast back to 16 bits is one more kernel per attention call. Checked on a one-op profile written by hand,
so the counts are known."""

from __future__ import annotations

import pytest

from gpuplan import overheads as oh
from gpuplan.hardware import load_gpu
from gpuplan.model.profile import Op, Poly, Profile
from gpuplan.speed.modules import Run, backward, forward, score_bytes

NOTHING = Poly((((), 0.0, 0.0),))


def _const(value: float) -> Poly:
    return Poly((((), float(value), 0.0),))


def _attention_profile() -> Profile:
    """Whisper-small's encoder self-attention at batch 16, as one op: 12 layers x 16 x 12 heads of 1,500 x 1,500
    scores, 64-wide heads."""
    op = Op(kind="attention", dims=(_const(16 * 12), _const(1500), _const(1500), _const(64), _const(64)), count=12)
    return Profile(module="Attention", variables=(), ops=(op,), other_bytes=NOTHING, other_kernels=0, memory={},
                   params=0, dispatches=0, calls=0)


def test_score_bytes_by_width_and_autocast():
    """Four passes at the activations' width, and under autocast 2 + 2 + 4 + (4 + 2) + 2 bytes."""
    assert score_bytes(Run(dtype="fp16")) == 8
    assert score_bytes(Run(dtype="bf16", autocast=True)) == 16
    assert score_bytes(Run(dtype="fp16", autocast=True)) == 16
    assert score_bytes(Run(dtype="fp32")) == score_bytes(Run(dtype="fp32", autocast=True)) == 16


def test_autocast_adds_the_fp32_softmax_bytes_and_the_cast_kernel_to_an_eager_pass():
    """On a V100 (900 GB/s, 80 % achievable: 720 GB/s): 12 x 192 x 1,500^2 = 5.184e9 scores x 8 more bytes =
    41.47 GB, 57.60 ms, plus 12 cast kernels at 5 us: 57.66 ms more per forward; the backward runs the score traffic
    twice (115.32 ms more). The GEMMs are the same."""
    gpu = load_gpu("v100-sxm2-16gb")
    assert gpu.bandwidth_gbs == 900 and oh.BANDWIDTH_FRACTION == 0.80 and oh.GEMM_KERNEL_LATENCY_S == 5e-6
    p = _attention_profile()
    plain, mixed = Run(dtype="fp16", attention="eager"), Run(dtype="fp16", attention="eager", autocast=True)
    extra = forward(p, gpu, 16, (), mixed).attention_s - forward(p, gpu, 16, (), plain).attention_s
    assert extra == pytest.approx(5.184e9 * 8 / 720e9 + 12 * 5e-6) == pytest.approx(57.66e-3, rel=1e-4)
    extra_bwd = backward(p, gpu, 16, (), mixed).attention_s - backward(p, gpu, 16, (), plain).attention_s
    assert extra_bwd == pytest.approx(2 * extra)
    # a fused kernel (SDPA) keeps no score matrix: autocast changes nothing there
    fused, fused_mixed = Run(dtype="fp16"), Run(dtype="fp16", autocast=True)
    assert forward(p, gpu, 16, (), fused_mixed).attention_s == forward(p, gpu, 16, (), fused).attention_s
