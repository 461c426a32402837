"""Mamba-2 layers in a prompt: the chunked scan (SSD) from its kernels' own work, and no attention where a layer
has none (Nemotron-H's expert layers)."""

from __future__ import annotations

import pytest

from gpuplan import load_model
from gpuplan.hardware import load_gpu
from gpuplan.model.conventions import mamba2_shape
from gpuplan.speed.gemm import bandwidth
from gpuplan.speed.work import attends, attention_s, mamba_scans_s, ssd_scan_s

NANO = "nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16"


def test_nemotron_nano_scan_bytes_by_hand():
    """One 1,024-token prompt through one Mamba-2 layer of Nemotron-3-Nano (64 heads x 64, d_state 128, 8 groups,
    chunks of 128: 8 chunks, each state 4,096 x 128 fp32 = 2 MiB) on an H200, kernel by kernel:
    chunk_state reads x and B (2 x 1,024 x (4,096 + 1,024)) and writes 8 states: 27,262,976 bytes;
    state_passing reads and writes them: 33,554,432; bmm_chunk reads B and C and writes C B^T in fp32
    (4 x 8 x 8 x 128^2): 8,388,608; chunk_scan reads the states, C B^T, x, z, C and writes y: 48,234,496;
    the convolution reads and writes 6,144 channels: 25,165,824. 142,606,336 bytes in all. The largest matmul,
    chunk_scan's 2 x 4,096 x (66,048 + 128 x 1,024) = 1.61 GFLOPs, takes 4.7 us at 989 TFLOPS x 0.35; its bytes
    take longer at 4.8 TB/s, so every kernel is memory-bound on this card and the layer is its bytes' time."""
    m, gpu = load_model(NANO), load_gpu("h200")
    assert mamba2_shape(m.config, m.hidden_size) == {"inner": 4096, "heads": 64, "state": 128, "groups": 8,
                                                     "chunk": 128}
    assert ssd_scan_s(m, gpu, 1, 1024) == pytest.approx(142_606_336 / bandwidth(gpu), rel=1e-9)
    assert ssd_scan_s(m, gpu, 3, 1024) == pytest.approx(3 * ssd_scan_s(m, gpu, 1, 1024), rel=1e-12)


def test_expert_layers_have_no_attention():
    """Of Nemotron-3-Nano's 52 layers only the 6 ``*`` layers attend; its 23 Mamba layers' scans are timed apart
    (mamba_scans_s) and its 23 expert layers have no mixer (before, all 52 were timed as 32-head attention)."""
    m, gpu = load_model(NANO), load_gpu("h200")
    kinds = {layer.attention: attends(layer) for layer in m.layers}
    assert kinds == {"mamba": False, "none": False, "full": True}
    flops = 6 * 4 * 32 * 128 * 1024 * (1024 + 1) / 2
    only_attention = attention_s(m, gpu, "bf16", 1, 1024, kernel="flash")
    llama_like = attention_s(load_model("llama-3.1-8b"), gpu, "bf16", 1, 1024, kernel="flash")
    assert only_attention == pytest.approx(llama_like * flops / (32 * 4 * 32 * 128 * 1024 * 1025 / 2), rel=1e-9)
    assert mamba_scans_s(m, gpu, 2, 1024) == pytest.approx(23 * ssd_scan_s(m, gpu, 2, 1024), rel=1e-12)


def test_kv_sharing_layers_still_attend():
    """Gemma 4 E2B's layers of kind ``none`` reuse an earlier layer's keys and values but keep their queries."""
    m = load_model("google/gemma-4-E2B-it")
    shared = [layer for layer in m.layers if layer.attention == "none"]
    assert shared and all(attends(layer) for layer in shared)


def test_serving_step_prices_the_scan_per_prompt_token():
    """The serving step model carries the scan per prompt token, from a 4,096-token prompt (32 chunks of 128)."""
    from gpuplan.scenario import scenario_from
    from gpuplan.serving.steptime import step_model

    s = scenario_from({"model": NANO, "task": "infer", "engine": "vllm", "gpu": "h200", "quant": "fp8"})
    m, gpu = load_model(NANO), load_gpu("h200")
    sm = step_model(s, m, gpu)
    assert sm.scan_s_per_token == pytest.approx(mamba_scans_s(m, gpu, 1, 4096) / 4096, rel=1e-12)
    without = type(sm)(**{**sm.__dict__, "scan_s_per_token": 0.0})
    assert sm.time(4096, 8, 8 * 1024) - without.time(4096, 8, 8 * 1024) == pytest.approx(
        4096 * sm.scan_s_per_token, rel=1e-9)


def test_decode_moves_the_recurrent_state_twice_per_sequence():
    """A decode step reads each Mamba layer's state and writes it back (selective_state_update stores it in place):
    23 layers x (fp32 SSM state 4,096 x 128 x 4 B + conv state 6,144 x 4 x 2 B) = 49,364,992 bytes, twice, per
    sequence whatever its length. The step model keeps it per sequence and only the 6 attention layers' fp8 keys and
    values per token (6 x 2 x 2 heads x 128 x 1 B = 3,072 bytes); it took the state per token at 1,024 tokens,
    which made a 32k-token sequence's decode read 32 times its state."""
    from gpuplan.scenario import scenario_from
    from gpuplan.serving.steptime import step_model
    from gpuplan.speed.inference import step_timer

    s = scenario_from({"model": NANO, "task": "infer", "engine": "vllm", "gpu": "h200", "quant": "fp8",
                       "kv_cache_dtype": "fp8"})
    m, gpu = load_model(NANO), load_gpu("h200")
    timer = step_timer(s, m, gpu)
    bps = timer._stream_bps
    assert timer.decode_parts(1, 0)["kv_cache"] == pytest.approx(2 * 49_364_992 / bps, rel=1e-9)
    sm = step_model(s, m, gpu)
    assert sm.state_s_per_seq == pytest.approx(2 * 49_364_992 / bps, rel=1e-9)
    assert sm.kv_s_per_token == pytest.approx(3072 / bps, rel=1e-9)
    dense = load_model("llama-3.1-8b")
    assert step_model(scenario_from({"model": "llama-3.1-8b", "task": "infer", "engine": "vllm", "gpu": "h200"}),
                      dense, gpu).state_s_per_seq == 0.0


def test_moe_kernels_only_on_the_expert_layers():
    """A decode step launches the MoE layer's kernels (routing, align, grouped GEMMs, the shared expert's adds:
    overheads.MOE_KERNELS_PER_LAYER, 16) on Nemotron-3-Nano's 23 expert layers, not on its 23 Mamba and 6
    attention layers: 7 + 16 x 23 / 52 = 14.08 non-GEMM kernels a layer on average (23.0 when all 52 paid them)."""
    from gpuplan.scenario import scenario_from
    from gpuplan.speed.inference import step_timer

    s = scenario_from({"model": NANO, "task": "infer", "engine": "vllm", "gpu": "h200", "quant": "fp8"})
    timer = step_timer(s, load_model(NANO), load_gpu("h200"))
    assert timer._kernels_per_layer() == pytest.approx(7 + 16 * 23 / 52, rel=1e-12)
