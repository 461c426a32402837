"""The host side of a profiled module's eager pass (issue 34): every aten op the dispatcher runs and every module call
the pass makes, at the per-op costs of :mod:`gpuplan.overheads`, on a desktop's CPU or, 1.75 times slower, on the
server a datacenter card sits in (``SERVER_HOST_FACTOR``, fitted on fal-ai's eager SD 1.5 on an A100 80GB:
bench/results/modules.md, sd15-a100-fal), 1.16 times on an H100 or H200 SXM5 board's (``HOPPER_SXM_HOST_FACTOR``,
fitted on alexeigor/sd-benchmarks' eager H100 SXM call: sd15-h100-alexeigor). Checked on a profile written by hand,
so the counts are known."""

from __future__ import annotations

import dataclasses

import pytest

from gpuplan import overheads as oh
from gpuplan.hardware import load_gpu
from gpuplan.model.profile import Poly, Profile
from gpuplan.speed.modules import Run, forward, host_range, host_scale

NOTHING = Poly((((), 0.0, 0.0),))


def _profile(dispatches: int, calls: int) -> Profile:
    """A pass of no GPU work: only its host side."""
    return Profile(module="Host", variables=(), ops=(), other_bytes=NOTHING, other_kernels=0, memory={}, params=0,
                   dispatches=dispatches, calls=calls)


def test_a_pass_host_work_is_its_ops_and_calls_at_their_costs_and_a_servers_is_slower():
    """1,617 aten ops and 665 module calls (SD 1.5's UNet pass, as recorded): 1,617 x 7 us + 665 x 5 us = 14.644 ms
    on an RTX 4090's desktop; the same pass on an A100, in a server, 1.75 times that: 25.627 ms."""
    desktop, server = load_gpu("rtx-4090"), load_gpu("a100-sxm4-80gb")
    assert (desktop.segment, server.segment) == ("consumer", "datacenter")
    p = _profile(1617, 665)
    on_desktop = forward(p, desktop, 1, (), Run(dtype="fp16")).host_s
    on_server = forward(p, server, 1, (), Run(dtype="fp16")).host_s
    assert on_desktop == pytest.approx(1617 * 7e-6 + 665 * 5e-6) == pytest.approx(14.644e-3)
    assert on_server == pytest.approx(1.75 * on_desktop) == pytest.approx(25.627e-3)
    assert host_scale(server) == oh.SERVER_HOST_FACTOR == 1.75 and host_scale(desktop) == 1.0
    # the card decides nothing else: the A100 taken for a desktop card runs the pass's host work as the 4090's host
    assert forward(p, dataclasses.replace(server, segment="consumer"), 1, (), Run(dtype="fp16")).host_s == on_desktop


def test_a_datacenter_cards_range_spans_the_server_hosts_measured():
    """The server hosts the sources bound run eager PyTorch's host work from a desktop's to 2.6 times it
    (``SERVER_HOST_RANGE``): on a datacenter card the modelled host work (1.75 times a desktop's) is scaled by 1/1.75
    and 2.6/1.75 for the ends of a generation plan's likely range; a desktop card keeps its host and the +-25 % band."""
    assert host_range(load_gpu("a100-sxm4-80gb")) == pytest.approx((1 / 1.75, 2.6 / 1.75))
    assert host_range(load_gpu("rtx-4090")) is None
    from gpuplan import estimate

    def work(gpu: str):
        return estimate({"model": "sd-1.5", "task": "infer", "gpu": gpu, "batch_size": 1, "precision": "fp16-true"},
                        advise=False).work

    desktop = work("rtx-4090")
    assert (desktop.samples_per_s_low, desktop.samples_per_s_high) == pytest.approx(
        (0.75 * desktop.samples_per_s, 1.25 * desktop.samples_per_s))
    # SD 1.5 at batch 1 on an A100 is host-bound in the plan (17 ms of GPU work a step, 26 ms of host work): a
    # desktop's host makes it more than 25 % faster, the slowest server's more than 25 % slower
    a100 = work("a100-sxm4-80gb")
    assert a100.samples_per_s_high > 1.3 * a100.samples_per_s
    assert a100.samples_per_s_low < 0.75 * a100.samples_per_s
    # an H100 SXM5's server (1.16 times a desktop's host work) spans the same hosts: its range is the same seconds
    assert host_range(load_gpu("h100-sxm")) == pytest.approx((1 / 1.16, 2.6 / 1.16))


def test_an_h100_or_h200_sxm_boards_server_is_of_its_own_generation():
    """HGX/DGX H100 and H200 boards (SXM5) sit in servers of their own generation (DGX H100: Sapphire Rapids, where
    DGX A100 had Zen 2), fitted on alexeigor/sd-benchmarks' eager H100 SXM call (``HOPPER_SXM_HOST_FACTOR``, 1.16):
    SD 1.5's 1,617 aten ops and 665 module calls are 14.644 ms on a desktop, 16.987 ms there. PCIe Hopper cards go
    into any server, GH200's host is Grace, Blackwell is unmeasured: those keep the A100's 1.75 (25.627 ms)."""
    p = _profile(1617, 665)
    sxm = forward(p, load_gpu("h100-sxm"), 1, (), Run(dtype="fp16")).host_s
    assert sxm == pytest.approx(1.16 * 14.644e-3) == pytest.approx(16.987e-3, rel=1e-4)
    assert host_scale(load_gpu("h200-sxm-141gb")) == oh.HOPPER_SXM_HOST_FACTOR == 1.16
    for other in ("h100-pcie", "nvidia-h100-nvl-94gb", "nvidia-gh200-144gb", "nvidia-b200", "a100-sxm4-80gb"):
        gpu = load_gpu(other)
        assert host_scale(gpu) == oh.SERVER_HOST_FACTOR == 1.75, gpu.id
        assert forward(p, gpu, 1, (), Run(dtype="fp16")).host_s == pytest.approx(25.627e-3, rel=1e-4)
