"""Memory-bound kernels of a profiled module are timed by their bytes at the card's bandwidth (issue 34).

The roofline of Williams et al. (2009) puts a kernel that does little arithmetic per byte at bytes / bandwidth.
gpuplan records every kernel outside linears, convolutions, matrix products and attention by the bytes of its
inputs and outputs (:mod:`gpuplan.model.record`) and times them at the achievable bandwidth, each kernel also at
least its launch latency (:func:`gpuplan.speed.modules.forward`). Checked here on one real ``nn.GroupNorm`` (the
op that follows every convolution of a diffusion UNet) run on fake tensors, against bytes counted by hand.
"""

from __future__ import annotations

import pytest

from gpuplan import overheads as oh
from gpuplan.hardware import load_gpu
from gpuplan.speed.modules import Run, forward

torch = pytest.importorskip("torch")


def _groupnorm_part():
    from gpuplan.model.record import Part

    def build(way):
        with torch.device("meta"):
            return torch.nn.GroupNorm(32, 320).half()  # SD 1.5's first level: 320 channels in 32 groups

    def inputs(batch, sizes):
        side = int(sizes[0] ** 0.5)
        return (torch.empty(batch, 320, side, side, dtype=torch.float16),), {}

    return Part(name="groupnorm", variables=("latent_pixels",), base=(4096,), second=(1024,), check=(256,),
                build=build, inputs=inputs, dtype="float16")


def test_a_groupnorm_on_a_t4_takes_its_bytes_at_the_bandwidth():
    """A GroupNorm over SD 1.5's 64 x 64 latents at 320 channels, batch 2 (one image with classifier-free
    guidance), fp16. Bytes read and written: the input 2 x 320 x 4,096 x 2 B = 5,242,880, the output as much, the
    weight and bias 320 x 2 B each, the per-group mean and reciprocal deviation 2 x 32 x 2 B each:
    10,487,296 B. A T4's datasheet bandwidth is 320 GB/s; at the achievable share (0.8: 256 GB/s) the kernel takes
    10,487,296 / 256e9 = 40.97 us, plus one kernel's latency (5 us). At batch 32 the activations grow 16-fold:
    32 x 320 x 4,096 x 2 B x 2 + 1,280 + 32 x 32 x 2 B x 2 = 167,777,536 B, 655.38 us + 5 us."""
    from gpuplan.model.record import record

    gn = record(_groupnorm_part())
    t4 = load_gpu("nvidia-t4")
    assert t4.bandwidth_gbs == 320 and oh.BANDWIDTH_FRACTION == 0.8 and oh.GEMM_KERNEL_LATENCY_S == 5e-6
    assert not gn.ops and gn.other_kernels == 1
    assert gn.other_bytes.at(2, (4096,)) == 10_487_296
    assert gn.other_bytes.at(32, (4096,)) == 167_777_536
    two = forward(gn, t4, 2, (4096,), Run(dtype="fp16"))
    assert two.elementwise_s == pytest.approx(10_487_296 / 256e9 + 5e-6, rel=1e-9)  # 45.97 us
    assert two.gemm_s == two.attention_s == two.flops == 0
    thirty_two = forward(gn, t4, 32, (4096,), Run(dtype="fp16"))
    assert thirty_two.elementwise_s == pytest.approx(167_777_536 / 256e9 + 5e-6, rel=1e-9)  # 660.38 us
    # an fp32 run moves twice the activation bytes (the profile's bytes are 16-bit)
    assert forward(gn, t4, 2, (4096,), Run(dtype="fp32")).elementwise_s == pytest.approx(
        2 * 10_487_296 / 256e9 + 5e-6, rel=1e-9)
