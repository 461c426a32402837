"""DeepEP's buffers in the memory plan: DeepEP's own size hints (csrc/config.hpp) by hand, and where each engine
takes them from (SGLang's reserve, vLLM's KV pool)."""

import pytest

from gpuplan import api
from gpuplan.engines import deepep
from gpuplan.tensors.breakdown import GIB


def test_the_low_latency_hint_by_hand():
    """DeepSeek-V3 (hidden 7,168, 256 experts) at EP 8, 128 tokens a rank (SGLang's default): 56 scales; a dispatch
    message 16 + max(14,336, 7,168 + 224) = 14,352 B, a combine message 224 + 14,336 = 14,560 B; send = max(128 x
    14,352, 256 x 128 x 14,560) = 477,102,080; receive the same (the combine message is the larger); signalling 256 x
    8 + 32 x 4 = 2,176 (a multiple of 128); twice all three: 1,908,412,672 B (1.78 GiB)."""
    assert deepep.low_latency_bytes(128, 7168, 8, 256) == 1_908_412_672
    assert deepep.low_latency_bytes(256, 7168, 8, 256) == 2 * (2 * 256 * 256 * 14_560 + 2_176)


def test_the_normal_hint_by_hand():
    """Within a node (EP 8, FP8 dispatch: 7,168 hidden bytes): 10 channels x 8 ranks x (256 tokens x (7,168 + 8 +
    128 x 16) + 5 x 4) = 188,909,120, rounded up to 128 B: 188,909,184; no RDMA buffer. Across two nodes (EP 16) the
    NVLink part counts 8 ranks of 288 tokens, and an RDMA part appears."""
    assert deepep.normal_bytes(7168, 8) == (188_909_184, 0)
    nvl, rdma = deepep.normal_bytes(7168, 16)
    assert nvl == -(-(10 * 8 * (288 * 9224 + 7 * 4)) // 128) * 128
    assert rdma == -(-(10 * 2 * 2 * (140 * (9224 + 16) + 18 * 4) + 2**20) // 128) * 128


def _plan(engine: str, dispatch: str):
    return api.estimate({"model": "deepseek-v3", "task": "infer", "engine": engine, "gpu": "h200", "num_gpus": 8,
                         "tp": 8, "ep": 8, "attention_dp": True, "moe_dispatch": dispatch})


def _other(plan, start: str) -> float:
    found = [v for k, v in plan.memory.other.items() if k.startswith(start)]
    assert len(found) <= 1
    return found[0] if found else 0.0


def test_sglang_takes_the_buffers_from_its_reserve():
    """SGLang allocates the buffer after its pool: the pool and the device peak stay, the reserve line shrinks by
    the buffers (the normal NVLink hint, 188,909,184 B, and the larger RDMA one, the low-latency 1,908,412,672 B)."""
    with_ep, without = _plan("sglang", "deepep"), _plan("sglang", "allgather")
    buffers = (188_909_184 + 1_908_412_672) / GIB
    assert _other(with_ep, "DeepEP buffers (EP 8") == pytest.approx(buffers, abs=0.01)
    assert _other(without, "DeepEP") == 0.0
    assert with_ep.memory.kv_cache_gib == pytest.approx(without.memory.kv_cache_gib)
    assert with_ep.memory.device_peak_gib == pytest.approx(without.memory.device_peak_gib)
    reserve = "SGLang reserve"
    assert _other(without, reserve) - _other(with_ep, reserve) == pytest.approx(buffers, abs=0.01)


def test_vllm_takes_the_buffers_from_its_kv_pool():
    """vLLM's profiling sees the buffer as non-torch memory: its 1 GiB NVLink buffer and the low-latency buffer at
    256 tokens a rank (VLLM_MOE_DP_CHUNK_SIZE) come out of the KV pool (4.55 GiB on DeepSeek-V3 at EP 8)."""
    with_ep, without = _plan("vllm", "deepep"), _plan("vllm", "allgather")
    buffers = (2**30 + deepep.low_latency_bytes(256, 7168, 8, 256)) / GIB
    assert buffers == pytest.approx(4.55, abs=0.01)
    assert _other(with_ep, "DeepEP buffers (EP 8, low latency)") == pytest.approx(buffers, abs=0.01)
    assert without.memory.kv_cache_gib - with_ep.memory.kv_cache_gib == pytest.approx(buffers, abs=0.01)
    assert with_ep.memory.max_concurrency < without.memory.max_concurrency


def test_no_buffers_without_deepep():
    """Expert parallelism over the all-gather, one GPU, or TensorRT-LLM's own all-to-all: no DeepEP buffers."""
    from gpuplan.model.catalog import load_model
    from gpuplan.scenario import scenario_from

    m = load_model("deepseek-v3")
    base = {"model": "deepseek-v3", "task": "infer", "gpu": "h200", "num_gpus": 8, "tp": 8, "ep": 8,
            "attention_dp": True}
    assert deepep.buffer_bytes(scenario_from({**base, "engine": "trtllm", "moe_dispatch": "deepep"}), m) == 0
    assert deepep.buffer_bytes(scenario_from({**base, "engine": "sglang"}), m) == 0
    assert deepep.buffer_bytes(scenario_from({**base, "engine": "sglang", "moe_dispatch": "deepep"}), m) > 0


def test_the_page_explains_the_buffers_line():
    """The page's formula for the line: computed again from DeepEP's hints, equal to the plan's, with its source."""
    e = api.explain({"model": "deepseek-v3", "task": "infer", "engine": "sglang", "gpu": "h200", "num_gpus": 8,
                     "tp": 8, "ep": 8, "attention_dp": True, "moe_dispatch": "deepep"})
    (key,) = [k for k in e.numbers if k.startswith("memory.other.DeepEP buffers")]
    f = e.numbers[key]
    assert f.computed == pytest.approx(f.value) == pytest.approx((188_909_184 + 1_908_412_672) / GIB)
    assert "csrc/config.hpp" in f.constants[0].source
