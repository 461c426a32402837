"""The host side of a profiled module's eager pass (issue 34): every aten op the dispatcher runs and every module call
the pass makes, at the per-op costs of :mod:`gpuplan.overheads`, on a desktop's CPU or, 1.75 times slower, on the
server a datacenter card sits in (``SERVER_HOST_FACTOR``, fitted on fal-ai's eager SD 1.5 on an A100 80GB:
bench/results/modules.md, sd15-a100-fal). Checked on a profile written by hand, so the counts are known."""

from __future__ import annotations

import dataclasses

import pytest

from gpuplan import overheads as oh
from gpuplan.hardware import load_gpu
from gpuplan.model.profile import Poly, Profile
from gpuplan.speed.modules import Run, forward, host_scale

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
