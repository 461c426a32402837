"""vLLM V1's decodes beside a prompt chunk on FlashAttention-2 cards (SM 8.x, 12.x): one varlen call runs the step's
tokens, and FA2 folds a decode's query heads into one tile only when every query is one token
(vllm-project/flash-attention csrc/flash_attn/flash_api.cpp mha_varlen_fwd, ``seqlenq_ngroups_swapped``), so in a
step that holds a prompt each decoding sequence's every head takes a 64-row split-KV tile of its own over its whole
context (overheads.FA2_SPLITKV_TILE_ROWS): 64 (query, key) pairs of the prompt's kernel per context token."""

import pytest

from gpuplan import overheads as oh
from gpuplan.engines import vllm
from gpuplan.hardware import load_gpu
from gpuplan.model.catalog import load_model
from gpuplan.scenario import scenario_from
from gpuplan.serving.steptime import step_model

QWEN = load_model("qwen3-14b")


def _scenario(gpu: str, version: str = "0.11.0", **extra):
    return scenario_from(dict(model="qwen3-14b", task="infer", engine="vllm", engine_version=version, gpu=gpu,
                              num_gpus=1, tp=1, prompt_tokens=2000, output_tokens=100, **extra))


def test_fa2_cards_of_the_v1_engine_only():
    """64 rows on the A100, the L4 and the RTX 5090 (FA2); none on the H100 (FA3 packs a KV head's query heads into
    one tile), before the V1 engine (0.7: V0 ran its decodes in a call of their own) or with an fp8 cache (FA2
    takes none: FlashInfer or Triton, not read)."""
    for gpu in ("a100-sxm4-80gb", "l4", "rtx-5090"):
        assert vllm.mixed_decode_rows(_scenario(gpu), QWEN, load_gpu(gpu)) == 64
    assert oh.FA2_SPLITKV_TILE_ROWS == 64
    assert vllm.mixed_decode_rows(_scenario("h100-sxm"), QWEN, load_gpu("h100-sxm")) == 0
    assert vllm.mixed_decode_rows(_scenario("a100-sxm4-80gb", "0.7.3"), QWEN, load_gpu("a100-sxm4-80gb")) == 0
    fp8 = _scenario("a100-sxm4-80gb", kv_cache_dtype="fp8")
    assert vllm.mixed_decode_rows(fp8, QWEN, load_gpu("a100-sxm4-80gb")) == 0


def test_the_decodes_attention_beside_a_prompt_by_hand():
    """Qwen3-14B on an A100, a 2,048-token chunk beside 100 decodes of 2,050 tokens (GPUStack's 2,000-token burst):
    the decodes' attention is 205,000 context tokens x 64 rows x the prompt's seconds a pair, 5.6x their cache's
    bytes (40 heads of 128 x 40 layers x 4 FLOPs a pair at Ampere's 0.30 of 312 TFLOPS = 8.75 ns a pair; 163,840
    bytes a token, K and V of 8 heads of 128 in 40 layers, at 0.8 of 2,039 GB/s = 100 ns): 115 ms where the bytes
    took 21. A step of decodes alone reads the cache, as before."""
    a100 = load_gpu("a100-sxm4-80gb")
    sm = step_model(_scenario("a100-sxm4-80gb"), QWEN, a100)
    assert sm.mixed_decode_rows == 64
    assert sm.attention_s_per_pair == pytest.approx(40 * 128 * 40 * 4 / (0.30 * 312e12), rel=0.01)
    assert sm.kv_s_per_token == pytest.approx(2 * 8 * 128 * 2 * 40 / (0.8 * 2039e9), rel=0.01)
    ctx = 100 * 2050
    mixed = sm.time(2048, 100, ctx) - sm.time(2048, 100, 0)
    assert mixed == pytest.approx(ctx * 64 * sm.attention_s_per_pair, rel=1e-9)
    assert mixed == pytest.approx(0.115, abs=0.002)
    assert sm.time(0, 100, ctx) - sm.time(0, 100, 0) == pytest.approx(ctx * sm.kv_s_per_token, rel=1e-9)
    assert mixed / (ctx * sm.kv_s_per_token) == pytest.approx(5.6, abs=0.1)


def test_where_the_cache_read_is_longer_it_stays():
    """The tile's work is a floor, not an addition: on the H100 (FA3) nothing changes, and a step model without
    the rows times a mixed step's decodes by their bytes."""
    h100 = step_model(_scenario("h100-sxm"), QWEN, load_gpu("h100-sxm"))
    assert h100.mixed_decode_rows == 0
    assert h100.time(2048, 100, 205_000) - h100.time(2048, 100, 0) == pytest.approx(205_000 * h100.kv_s_per_token)
