"""Rack-scale NVLink domains (GB200/GB300 NVL72) and two-level collectives, and the catalog entries issue 24 added
(GB300, MI355X), checked by hand arithmetic written out here."""

from __future__ import annotations

import pytest

from gpuplan import overheads as oh
from gpuplan.hardware import Network, resolve_gpu
from gpuplan.speed.comms import (
    all_reduce_s,
    group_all_gather_s,
    group_all_reduce_s,
    inter_node_link,
    intra_node_link,
    slowest_link,
)


def gpu(name):
    return resolve_gpu(name)[0]


def test_nvl72_is_one_nvlink_domain_across_trays():
    """18 trays of 4 GB200s are one NVLink fabric: the job's ring runs over NVLink (900 GB/s a direction); 19 trays
    leave the domain and the ring is bound by the NICs."""
    g, net = gpu("gb200"), Network()
    assert slowest_link(g, net, 18, 4).kind == "nvlink"
    assert slowest_link(g, net, 19, 4).kind != "nvlink"
    assert slowest_link(gpu("b200"), net, 2, 8).kind != "nvlink"  # an HGX B200's NVLink ends at its 8 GPUs


def test_two_level_all_reduce_by_hand():
    """144 GB200s (2 NVL72 racks), a 10 GB gradient buffer: reduce-scatter and all-gather inside each rack over
    NVLink (72 GPUs: 2·71/72·10e9 B / (900e9·NVLINK_EFFICIENCY) + latency), then an all-reduce of each GPU's
    10e9/72-byte shard across the 2 racks over its own NIC (2·1/2·(10e9/72) / NIC + latency)."""
    g, net = gpu("gb200"), Network()
    nvlink = intra_node_link(g, net)
    nic = inter_node_link(g, net, 4)
    assert nvlink.bytes_per_s == pytest.approx(900e9 * oh.NVLINK_EFFICIENCY)
    expected = (2 * 71 / 72 * 10e9 / nvlink.bytes_per_s + nvlink.latency_s
                + 2 * 1 / 2 * (10e9 / 72) / nic.bytes_per_s + nic.latency_s)
    flat = slowest_link(g, net, 36, 4)
    assert group_all_reduce_s(10e9, 144, g, net, 36, 4, flat) == pytest.approx(expected)
    assert group_all_reduce_s(10e9, 144, g, net, 36, 4, flat) < all_reduce_s(10e9, 144, flat) / 10
    # all-gather: half of each level's bytes
    half = (71 / 72 * 10e9 / nvlink.bytes_per_s + nvlink.latency_s
            + 1 / 2 * (10e9 / 72) / nic.bytes_per_s + nic.latency_s)
    assert group_all_gather_s(10e9, 144, g, net, 36, 4, flat) == pytest.approx(half)
    # with TP 4 inside each rack, 18 data-parallel ranks share a domain: 8 domains' worth for 144 ranks of 4
    spread = group_all_reduce_s(10e9, 144, g, net, 144, 4, flat, spread=4)
    assert spread == pytest.approx(2 * 17 / 18 * 10e9 / nvlink.bytes_per_s + nvlink.latency_s
                                   + 2 * 7 / 8 * (10e9 / 18) / nic.bytes_per_s + nic.latency_s)


def test_hgx_collectives_stay_flat():
    g, net = gpu("h100-sxm"), Network()
    flat = slowest_link(g, net, 4, 8)
    assert group_all_reduce_s(1e9, 32, g, net, 4, 8, flat) == all_reduce_s(1e9, 32, flat)


@pytest.mark.parametrize("name, memory_gb, bf16, fp4, domain", [
    ("gb300", 279, 2500.0, 15000.0, 72),
    ("mi355x", 288, 2516.0, 10066.0, 0),
])
def test_new_catalog_entries(name, memory_gb, bf16, fp4, domain):
    """GB300 (Verda's per-GPU dense figures) and MI355X (256 CUs x 8,192 FP8 FLOP/clock x 2.4 GHz = 5,033 TFLOPS
    FP8 dense; FP16 half, FP4 twice: AMD's 20.1 PF FP4 is with sparsity)."""
    g = gpu(name)
    assert g.memory_gib == memory_gb and g.peak_tflops("bf16") == bf16 and g.peak_tflops("fp4") == fp4
    assert g.nvlink_domain == domain and g.supports_dtype("fp4")
    assert pytest.approx(gpu("mi355x").peak_tflops("fp8"), rel=1e-3) == 256 * 8192 * 2.4e9 / 1e12


@pytest.mark.parametrize("name, per_direction_gbs", [("intel-gaudi2", 262.5), ("intel-gaudi3", 525.0)])
def test_gaudi_cards_of_a_server_talk_over_their_scale_up_ports(name, per_direction_gbs):
    """An HLS server's Gaudis reach each other over 21 on-chip RoCE ports (docs.habana.ai "Intel Gaudi Network
    Configuration": Gaudi 2 21 x 100 Gb/s = 262.5 GB/s a direction, Gaudi 3 21 x 200 Gb/s = 525), at HCCL's measured
    97.7 % (512.96 GB/s of 525 on one HLS-3 box), not over PCIe (Gaudi 2 was ring-bound at PCIe gen4's ~25 GB/s).
    By hand, Gaudi 2: 8-card all-reduce of 1 GB = 2 x 7/8 x 1e9 / (262.5e9 x 0.977) + 35 us = 6.86 ms."""
    link = intra_node_link(gpu(name), Network())
    assert link.kind == "scale-up"
    assert link.bytes_per_s == pytest.approx(per_direction_gbs * 1e9 * oh.GAUDI_SCALE_UP_EFFICIENCY)
    if name == "intel-gaudi2":
        assert all_reduce_s(1e9, 8, link) == pytest.approx(6.858e-3, rel=1e-3)
    assert intra_node_link(gpu(name), Network(intra_node="pcie")).kind == "pcie"  # an offer's PCIe-only node
