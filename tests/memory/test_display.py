"""``--display``: a card that also drives a desktop has less room for the job (issue 35). The margin is ComfyUI's
default reserve for "your OS/other software" (comfy/model_management.py EXTRA_RESERVED_VRAM @02b2b3886164):
400 MiB on Linux, 600 MiB on Windows and 100 MiB more on cards over 15 GiB. It is memory outside the job's
allocator, so it adds to the device level (what nvidia-smi shows), shrinks what an engine or a loss that sizes
itself from the free memory finds, and leaves vLLM's fraction-of-the-card budget as it is."""

from __future__ import annotations

import pytest

import gpuplan
from gpuplan.hardware import load_gpu
from gpuplan.scenario import Scenario
from gpuplan.tensors.breakdown import device_overheads

MIB = 1 / 1024


@pytest.mark.parametrize("display, gpu, mib", [("linux", "rtx-4070-ti-super", 400), ("windows", "rtx-3060", 600),
                                               ("windows", "rtx-4070-ti-super", 700), ("windows", "rtx-4090", 700),
                                               ("linux", "rtx-4090", 400)])
def test_the_margin_is_comfyuis_reserve(display, gpu, mib):
    card = load_gpu(gpu)
    s = Scenario(model="qwen3-8b", task="train", display=display)
    out = device_overheads(s, card.generation, card.memory_gib)
    assert out[f"desktop ({display})"] == pytest.approx(mib * 2**20)
    assert "desktop (none)" not in device_overheads(s.model_copy(update={"display": "none"}), card.generation)


def test_training_loses_the_margin_from_its_headroom():
    base = dict(model="qwen3-8b", task="train", method="lora", gpu="rtx-4090", framework="hf",
                grad_checkpointing="full")
    plain, shown = gpuplan.estimate(base), gpuplan.estimate(base | {"display": "linux"})
    assert shown.memory.device_overheads["desktop (linux)"] == pytest.approx(400 * MIB)
    assert shown.memory.device_peak_gib - plain.memory.device_peak_gib == pytest.approx(400 * MIB, abs=1e-9)
    assert plain.memory.headroom_gib - shown.memory.headroom_gib == pytest.approx(400 * MIB, abs=1e-9)
    assert shown.memory.reserved_peak_gib == plain.memory.reserved_peak_gib  # the job's own memory is the same
    assert shown.scenario["display"] == "linux" and "display" not in plain.scenario


def test_unsloth_takes_smaller_loss_chunks_instead():
    """The fused loss sizes itself from what is free: the desktop's 0.59 GiB leaves it less, so the peak rises by
    less than the margin and the job still fits the 16 GB card that drives the screen."""
    base = dict(model="qwen3-14b", task="train", method="qlora", framework="unsloth", gpu="t4", seq_len=2048,
                micro_batch_size=4)
    plain, shown = gpuplan.estimate(base), gpuplan.estimate(base | {"display": "windows"})
    margin = 600 * MIB  # a 15 GiB T4: no large-card extra
    assert shown.headroom_note() and plain.headroom_note()
    assert shown.memory.fits and plain.memory.fits
    rise = shown.memory.device_peak_gib - plain.memory.device_peak_gib
    assert 0 < rise < margin
    assert shown.memory.reserved_peak_gib < plain.memory.reserved_peak_gib


def test_serving_engines_see_the_desktop_as_their_design_says():
    """vLLM takes its fraction of the whole card whatever else runs there (the desktop adds to the device total);
    SGLang sizes its pool from the memory it finds free (the pool shrinks)."""
    vllm = dict(model="qwen3-8b", task="infer", engine="vllm", gpu="rtx-4090", batch_size=4)
    a, b = gpuplan.estimate(vllm), gpuplan.estimate(vllm | {"display": "linux"})
    assert a.memory.kv_cache_pool_gib == b.memory.kv_cache_pool_gib
    assert b.memory.device_peak_gib - a.memory.device_peak_gib == pytest.approx(400 * MIB, abs=1e-9)
    sglang = vllm | {"engine": "sglang"}
    a, b = gpuplan.estimate(sglang), gpuplan.estimate(sglang | {"display": "linux"})
    assert b.memory.kv_cache_pool_gib < a.memory.kv_cache_pool_gib
    assert b.memory.device_peak_gib <= b.memory.capacity_gib
