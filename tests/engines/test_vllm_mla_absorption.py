"""vLLM 0.7's MLA backend materializes the absorbed decode matrices beside DeepSeek's projections (engines/vllm.py
``absorbed_mla_bytes``; vllm/attention/backends/mla/utils.py ``process_weights_after_loading`` of v0.7.3, removed
by vLLM PR #14770 for 0.8.0): each GPU's weights grow by them, and its KV pool shrinks by as much."""

from __future__ import annotations

from gpuplan import overheads as oh
from gpuplan.engines import vllm
from gpuplan.hardware import load_gpu
from gpuplan.model.catalog import load_model
from gpuplan.scenario import scenario_from
from gpuplan.tensors.state import weight_format

R1 = load_model("deepseek-r1")
H200 = load_gpu("h200")


def _scenario(version: str, model: str = "deepseek-r1"):
    return scenario_from({"model": model, "task": "infer", "engine": "vllm", "gpu": "h200", "tp": 8, "num_gpus": 8,
                          "engine_version": version, "prompt_tokens": 3200, "output_tokens": 800})


def test_absorbed_matrices_of_deepseek_r1_at_tp8_by_hand():
    """DeepSeek-R1 at TP 8 (16 heads a GPU; q_lora_rank 1,536, kv_lora_rank 512, rope 64, nope and v 128, hidden
    7,168, fp8 in 128 x 128 blocks with one fp32 scale a block), per MLA layer:
    W_Q_UK 1,536 x (16 x 512 = 8,192) fp8 = 12,582,912 B + 4 x 12 x 64 = 3,072 B of scales;
    W_UV_O 8,192 x 7,168 fp8 = 58,720,256 B + 4 x 64 x 56 = 14,336 B;
    W_QR 1,536 x (16 x 64) bf16 = 3,145,728 B; kv_b_proj dequantized, 512 x 16 x 256 bf16 = 4,194,304 B:
    78,660,608 B a layer, 61 layers: 4,798,297,088 B (4.47 GiB)."""
    s = _scenario("0.7.3")
    fmt, _ = weight_format(s, R1)
    per_layer = (12_582_912 + 3_072) + (58_720_256 + 14_336) + 3_145_728 + 4_194_304
    assert per_layer == 78_660_608
    assert vllm.absorbed_mla_bytes(s, R1, R1.layers, fmt) == 61 * per_layer


def test_only_the_releases_that_materialize_them():
    """0.7.0 ran no MLA backend (PR #12528 came in 0.7.1); 0.8.0 computes the decode with bmm's instead (PR
    #14770); a model without MLA has none."""
    for version in ("0.7.0", "0.8.0", "0.11.0"):
        s = _scenario(version)
        assert vllm.absorbed_mla_bytes(s, R1, R1.layers, weight_format(s, R1)[0]) == 0.0
    llama = load_model("llama-3.1-70b")
    s = _scenario("0.7.3", "llama-3.1-70b")
    assert vllm.absorbed_mla_bytes(s, llama, llama.layers, weight_format(s, llama)[0]) == 0.0


def test_the_pool_gives_them_up(monkeypatch):
    """0.7.3's weights exceed 0.8.0's by the absorbed matrices (nothing else in a GPU's weights depends on the
    release here), and at 0.7.3 the KV pool is smaller by as much as without them (the window closed)."""
    extra = 61 * 78_660_608
    old = vllm.startup_memory(_scenario("0.7.3"), R1, H200)
    assert vllm.startup_memory(_scenario("0.8.0"), R1, H200).weights + extra == old.weights
    monkeypatch.setattr(oh, "VLLM_MLA_ABSORPTION", ((0, 0, 0), (0, 0, 0)))
    without = vllm.startup_memory(_scenario("0.7.3"), R1, H200)
    assert without.weights + extra == old.weights
    assert abs(without.kv_pool - extra - old.kv_pool) < 1
    assert old.num_blocks < without.num_blocks
