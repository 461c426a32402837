"""Offloaded states and llama.cpp's CPU layers never "fit" beyond the host's RAM (issue 33): host_ram_gib when
given, a unified-memory computer's own pool, else 64 GiB per GPU of the node (said in the warning)."""

from __future__ import annotations

import pytest

import gpuplan
from gpuplan.hardware import load_gpu

OFFLOAD = {"model": "llama-3.1-8b", "task": "train", "method": "full", "gpu": "rtx-4090", "sharding": "zero3",
           "offload": "optimizer+params"}


def test_offload_beyond_the_default_host_ram_does_not_fit():
    p = gpuplan.estimate(OFFLOAD)
    assert p.memory.device_peak_gib < p.memory.capacity_gib  # the card holds it: the host is what is short
    assert p.memory.cpu_gib > 64 and p.memory.fits is False and p.cost is None
    said = next(w for w in p.warnings if w.startswith("the host's RAM cannot hold"))
    assert f"{p.memory.cpu_gib:,.1f} GiB against 64.0 GiB (default: 64 GiB per GPU of the node" in said
    first = p.suggestions[0]
    assert first.fields == {"host_ram_gib": 192} and first.fits  # 134.6 GiB, rounded up to 64 GiB steps
    bigger = gpuplan.estimate({**OFFLOAD, "host_ram_gib": 192})
    assert bigger.memory.fits is True and not any("host's RAM" in w for w in bigger.warnings)
    assert bigger.scenario["host_ram_gib"] == 192 and "host_ram_gib" not in p.scenario


def test_a_training_node_needs_each_rank_s_share():
    """ZeRO-Offload shards the offloaded states: each rank's CPU memory times the node's GPUs."""
    two = gpuplan.estimate({**OFFLOAD, "num_gpus": 2})
    need = two.memory.cpu_gib * 2
    fits = gpuplan.estimate({**OFFLOAD, "num_gpus": 2, "host_ram_gib": need + 1})
    short = gpuplan.estimate({**OFFLOAD, "num_gpus": 2, "host_ram_gib": need - 1})
    assert fits.memory.fits is True and short.memory.fits is False


def test_llama_cpp_cpu_layers_on_a_mac_come_out_of_its_one_pool():
    """Qwen3-235B Q4_K_M on a 128 GB M4 Max: 30 layers would sit in "system RAM", but the Mac's CPU side is the
    32 GiB its GPU does not take (review 3, problem 4)."""
    mac = load_gpu("apple-m4-max")
    p = gpuplan.estimate({"model": "qwen3-235b", "task": "infer", "engine": "llama.cpp", "quant": "q4_k_m",
                          "gpu": "apple-m4-max", "cpu_layers": True})
    assert p.memory.offloaded_layers and p.memory.cpu_gib > mac.memory_gib - mac.usable_gib
    assert p.memory.fits is False
    assert any("one memory pool: 128 GB, 96.0 GiB for the GPU" in w for w in p.warnings)
    rows = {r.model: r for r in gpuplan.fit("apple-m4-max", engine="llama.cpp", quant="q4_k_m").rows}
    assert not rows["moonshotai/Kimi-K2-Instruct"].fits  # 492 GiB of "CPU layers" was counted as fitting


def test_cpu_layers_fit_a_machine_with_the_ram():
    base = {"model": "llama-3.1-70b", "task": "infer", "engine": "llama.cpp", "quant": "q4_k_m", "gpu": "rtx-4090",
            "cpu_layers": True}
    small, big = gpuplan.estimate({**base, "host_ram_gib": 16}), gpuplan.estimate({**base, "host_ram_gib": 128})
    assert small.memory.cpu_gib == pytest.approx(big.memory.cpu_gib) and 16 < big.memory.cpu_gib < 128
    assert small.memory.fits is False and big.memory.fits is True
