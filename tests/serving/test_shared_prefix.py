"""The scenario's shared_prefix_tokens (a system prompt every request starts with): the time to first token of a
burst and the KV pool's concurrency, counted by hand per engine rule (vLLM V1: whole 16-token blocks; SGLang: token
by token; vLLM V0, transformers: nothing shared), and refused where it cannot hold."""

import math

import pytest

from gpuplan import estimate
from gpuplan.engines import sglang, vllm
from gpuplan.errors import GpuplanError
from gpuplan.hardware import load_gpu
from gpuplan.model.catalog import load_model
from gpuplan.scenario import scenario_from
from gpuplan.speed.inference import step_timer


def kv_pool(s):
    """The KV pool of the plan of ``s`` (the engine's, as the estimate builds it and every interface reads it)."""
    return estimate(s).pool


M, H100 = load_model("llama-3.1-8b"), load_gpu("h100-sxm")
# 20 users, 2,100-token prompts whose first 2,010 tokens are one system prompt, 300-token answers, one H100
BASE = dict(model="llama-3.1-8b", task="infer", gpu="h100-sxm", batch_size=20, prompt_tokens=2100,
            output_tokens=300)


def timer(engine, prefix, **more):
    return step_timer(scenario_from({**BASE, "engine": engine, "shared_prefix_tokens": prefix, **more}), M, H100)


def test_vllm_burst_skips_the_prefix_in_whole_blocks():
    """vLLM V1 matches whole 16-token blocks: of 2,010 shared tokens 2010 // 16 x 16 = 2,000 are cached, so 2,008
    or 2,010 give the same answer. The burst: the first prompt's 2,100 tokens + 19 x (2,100 - 2,000) = 4,000 new
    tokens, under one step's 8,192-token budget: one prefill of 4,000 tokens in 4,000 / 100 = 40 sequences
    attending to 2,000 cached tokens. Without the prefix: 42,000 tokens, 5 full chunks of 8,192 (8,192 // 2,100
    = 3 sequences each) and 1,040 left (one sequence). A sequence a chunk's end cuts goes on in the next chunk,
    attending to its earlier part: the 4 cut ones put 208, 416, 624 and 832 tokens after 1,892, 1,684, 1,476 and
    1,268 of their own, 3,070,080 / 40,960 = 75 earlier tokens a query of the full chunks; the last chunk is the
    last sequence's tokens 1,060-2,099. Alone, a warm engine prefills 100 tokens after 2,000."""
    t = timer("vllm", 2010)
    assert vllm.scheduler_limits(t.s, M, H100).max_num_batched_tokens == 8192
    assert t.cached_prefix == 2000 and timer("vllm", 2008).cached_prefix == 2000
    assert t.burst_ttft_s(2100, 20) == pytest.approx(t.prefill_s(4000, seqs=40, context=2000), rel=1e-12)
    assert t.ttft_s(2100) == pytest.approx(t.prefill_s(100, context=2000), rel=1e-12)
    plain = timer("vllm", 0)
    assert plain.burst_ttft_s(2100, 20) == pytest.approx(
        5 * plain.prefill_s(8192, seqs=3, context=75) + plain.prefill_s(1040, seqs=1, context=1060), rel=1e-12)
    # prefill is compute-bound: the linears scale with the new tokens (4,000 / 42,000 = 0.095), attention falls
    # from 20 x 2,100^2 / 2 = 44.1 M query-key pairs to 2.2 M + 19 x (100 x 2,000 + 100^2 / 2) = 6.1 M
    ratio = t.burst_ttft_s(2100, 20) / plain.burst_ttft_s(2100, 20)
    assert 0.09 < ratio < 0.13


def test_sglang_burst_skips_the_prefix_token_by_token():
    """SGLang's radix cache matches token by token: all 2,010 shared tokens. 2,100 + 19 x 90 = 3,810 new tokens
    under its 8,192-token chunk: one prefill of 3,810 tokens in 3,810 // 90 = 42 sequences after 2,010 cached."""
    t = timer("sglang", 2010)
    assert t.timing.loop.chunk_tokens == 8192 and t.cached_prefix == 2010
    assert t.burst_ttft_s(2100, 20) == pytest.approx(t.prefill_s(3810, seqs=42, context=2010), rel=1e-12)
    assert t.ttft_s(2100) == pytest.approx(t.prefill_s(90, context=2010), rel=1e-12)
    assert t.ttft_s(2100) < timer("vllm", 2010).ttft_s(2100)  # 90 tokens to prefill, not vLLM's 100


@pytest.mark.parametrize("engine, version", [("vllm", "0.6.3"), ("transformers", None)])
def test_engines_without_a_shared_cache_prefill_every_prompt_whole(engine, version):
    """vLLM V0 caches prefixes only with --enable-prefix-caching; transformers' generate shares nothing: the
    field changes nothing, and the answer says why."""
    more = {"engine_version": version} if version else {}
    with_prefix = estimate({**BASE, "engine": engine, "shared_prefix_tokens": 2000, **more}, advise=False)
    without = estimate({**BASE, "engine": engine, **more}, advise=False)
    assert (with_prefix.speed.ttft_s, with_prefix.speed.ttft_burst_s, with_prefix.memory.max_concurrency) == \
        (without.speed.ttft_s, without.speed.ttft_burst_s, without.memory.max_concurrency)
    assert any("prefilled by every request" in a for a in with_prefix.assumptions)


def test_the_kv_pool_holds_the_shared_prefix_once():
    """2,400-token requests (2,100 + 300). vLLM: ceil(2,400 / 16) = 150 blocks each alone; the 2,000 cached
    prefix tokens are 125 blocks held once, so each request adds 25: (N - 125) // 25 requests of the pool's N
    blocks, against N // 150 without. SGLang: its token pool P holds the 2,010 prefix tokens once and 390 per
    request: min((P - 2,010) // 390, max_running_requests)."""
    s = scenario_from({**BASE, "engine": "vllm", "shared_prefix_tokens": 2010})
    n = vllm.startup_memory(s, M, H100).num_blocks
    assert n > 20_000  # ~53 GiB in blocks of 32 layers x 8 KV heads x 128 x 2 (K, V) x 2 B x 16 tokens = 2 MiB
    pool = kv_pool(s)
    assert pool.max_concurrency == (n - 125) // 25
    assert kv_pool(s.model_copy(update={"shared_prefix_tokens": 0})).max_concurrency == n // 150
    assert pool.kv_tokens == int(n / 150 * 2400)  # the pool's tokens, each held once: unchanged by sharing
    g = scenario_from({**BASE, "engine": "sglang", "shared_prefix_tokens": 2010})
    sm = sglang.startup_memory(g, M, H100, mem_fraction_static=None)
    assert kv_pool(g).max_concurrency == min((sm.kv_tokens - 2010) // 390, sm.max_running_requests)
    assert math.floor(sm.kv_tokens / 2400) < kv_pool(g).max_concurrency


@pytest.mark.parametrize("engine, pool", [("vllm", "KV pool"), ("sglang", "token pool")])
def test_a_pool_smaller_than_the_prefix_holds_no_request_not_minus_one(engine, pool):
    """s19 fuzz (seed 1903): Qwen3-30B-A3B's 57 GiB of weights leave an RTX 4090 no pool; with a 64-token shared
    prefix vLLM's (0 - 4 blocks) // own and SGLang's (0 - 64) // tokens counted -1 request, said as "holds -1 of the
    1 concurrent request asked". Since s25-walk (5d5defdf) the verdict names the weights, which alone exceed the card,
    and no longer the pool; the pool's count stays 0 and no sentence of the plan says -1."""
    plan = estimate({"model": "qwen3-30b-a3b", "task": "infer", "gpu": "rtx-4090", "engine": engine,
                     "shared_prefix_tokens": 64})
    assert plan.memory.max_concurrency == 0
    assert "the weights alone (56.87 GiB per GPU) are more than the GPU holds" in plan.verdict.sentence
    assert "holds -1" not in plan.model_dump_json()
    assert f"{pool} holds -1" not in plan.verdict.sentence


def test_the_prefix_is_shared_only_where_every_layer_keeps_full_attention():
    """A sliding-window model (gpt-oss) keeps window blocks per request that the shared count does not cover: vLLM's
    concurrency is left as without the prefix, the TTFT still gains from the cache."""
    fields = dict(model="gpt-oss-20b", task="infer", engine="vllm", gpu="h100-sxm", batch_size=4,
                  prompt_tokens=2100, output_tokens=300)
    s = scenario_from({**fields, "shared_prefix_tokens": 2000})
    assert kv_pool(s).max_concurrency == \
        kv_pool(s.model_copy(update={"shared_prefix_tokens": 0})).max_concurrency


@pytest.mark.parametrize("fields, says", [
    ({"shared_prefix_tokens": 2100}, "shared_prefix_tokens (2,100) must be below prompt_tokens (2,100)"),
    ({"task": "train", "shared_prefix_tokens": 10}, "drop it for training"),
    ({"shared_prefix_tokens": -1}, "greater than or equal to 0"),
])
def test_a_prefix_that_cannot_be_is_refused_in_one_sentence(fields, says):
    with pytest.raises(GpuplanError, match=r"^[^\n]*$") as err:
        scenario_from({**BASE, "engine": "vllm", **fields})
    assert says in str(err.value)


def test_vllm_leaves_the_prefix_cache_off_on_hybrid_mamba_models():
    """vLLM's ``_set_default_args``: prefix caching defaults to off for hybrid models (Mamba or linear-attention
    layers beside attention, here Falcon-H1): nothing is cached, every prompt prefilled whole."""
    fields = dict(model="falcon-h1-0.5b", task="infer", gpu="h100-sxm", batch_size=4, prompt_tokens=2100,
                  output_tokens=300, shared_prefix_tokens=2000)
    m = load_model("falcon-h1-0.5b")
    assert step_timer(scenario_from({**fields, "engine": "vllm"}), m, H100).cached_prefix == 0
