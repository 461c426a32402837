"""A serving engine's KV pool has one home (session 30's architecture walk): the engine's profile computes a
:class:`~gpuplan.engines.records.KvPool` and the memory report reads its requests, tokens and GiB from it. The
engines also wrote the three numbers beside the pool (``max_concurrency``, ``max_context_tokens``,
``kv_cache_pool_gib``), and attention data parallelism scaled both copies; one copy now."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import gpuplan

ENGINES = Path(__file__).resolve().parents[2] / "src" / "gpuplan" / "engines"
BASE = {"model": "qwen2.5-7b", "task": "infer", "gpu": "l40s", "batch_size": 16, "prompt_tokens": 2048}


@pytest.mark.parametrize("fields", [
    {"engine": "vllm"},
    {"engine": "sglang"},
    {"engine": "trtllm"},
    {"engine": "sglang", "model": "qwen3-30b-a3b", "gpu": "h100-sxm", "num_gpus": 2, "tp": 2, "attention_dp": True},
], ids=["vllm", "sglang", "trtllm", "sglang-attention-dp"])
def test_the_report_reads_the_engines_pool(fields):
    plan = gpuplan.estimate({**BASE, **fields}, advise=False)
    pool, mem = plan.pool, plan.memory
    assert pool is not None and pool.max_concurrency > 16
    assert (mem.max_concurrency, mem.max_context_tokens, mem.kv_cache_pool_gib) == \
        (pool.max_concurrency, pool.kv_tokens, pool.pool_gib)


def test_the_vllm_pool_is_the_printed_one():
    """The review's walk 2 (Qwen2.5-7B, vLLM, one L40S, 16 x 2,048 + 256 tokens): 24.4 GiB, 198 requests, 456,544
    tokens, as the command line prints them."""
    mem = gpuplan.estimate({**BASE, "engine": "vllm"}, advise=False).memory
    assert (mem.max_concurrency, mem.max_context_tokens, round(mem.kv_cache_pool_gib, 1)) == (198, 456_544, 24.4)


def test_attention_dp_scales_the_one_pool():
    """Two attention ranks (Qwen3-30B-A3B, SGLang, TP 2 on H100s) each hold SGLang's logged token pool,
    396,695 tokens: the copy holds twice that, 793,390 tokens, and 2 x floor(396,695 / 2,304) = 344 requests of
    2,048 + 256 tokens. The pool is scaled once and the report reads it."""
    plan = gpuplan.estimate({**BASE, "engine": "sglang", "model": "qwen3-30b-a3b", "gpu": "h100-sxm", "num_gpus": 2,
                             "tp": 2, "attention_dp": True}, advise=False)
    assert plan.memory.engine["max_total_num_tokens"] == plan.pool.logged_tokens == 396_695
    assert (plan.memory.max_context_tokens, plan.memory.max_concurrency) == (2 * 396_695, 2 * (396_695 // 2_304))


def test_no_engine_writes_the_pools_numbers_beside_it():
    written = [f"{p.name}: {k}" for p in sorted(ENGINES.glob("*.py"))
               for k in re.findall(r"\b(max_concurrency|max_context_tokens|kv_cache_pool_gib)=",
                                   " ".join(re.findall(r"extra\.update\((.*?)\)\n", p.read_text(), re.S)))]
    assert written == []
