"""KV tokens and concurrent requests of one serving scenario: the one function estimate, recommend, capacity,
launch and the web page read, so that one scenario shows the same numbers everywhere.

For requests of ``prompt_tokens + output_tokens``:

- vLLM: the pool's block ids over the ids one such request takes in every KV-cache group
  (:func:`gpuplan.engines.vllm.kv_geometry`: whole blocks of its tokens in full-attention groups; in sliding-window
  groups the window plus one step's tokens, ``SlidingWindowSpec.max_memory_usage_bytes``), which is how vLLM
  counts its "Maximum concurrency for N tokens per request" (``vllm/v1/core/kv_cache_utils.py``
  ``get_max_concurrency_for_kv_cache_config``) at N = the request's length. ``kv_tokens`` is that concurrency
  times the request's length: the tokens of such requests the pool holds at once. vLLM's own log line "GPU KV
  cache size: N tokens" counts at ``--max-model-len`` instead (``logged_tokens``): the same pool, a different
  request length, so for hybrid sliding-window models (gpt-oss) a different number of tokens;
- SGLang: its token pool (``max_total_num_tokens``) over the request's tokens, capped by
  ``max_running_requests``; ``kv_tokens`` is the pool.

A prefix every prompt shares (``shared_prefix_tokens``) that the engine's cache holds is stored once: the
requests' own tokens fit beside one copy of it (vLLM's prefix-cached blocks are shared by reference count,
SGLang's radix tree nodes likewise). ``kv_tokens`` stays the pool; only the concurrency grows.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from .. import overheads as oh


@dataclass(frozen=True, kw_only=True)
class KvPool:
    engine: str
    pool_gib: float
    request_tokens: int  # one request: prompt + output
    max_concurrency: int  # whole requests of request_tokens the pool holds at once
    kv_tokens: int  # tokens of such requests the pool holds at once
    logged_tokens: int  # what the engine logs at its max_model_len (vLLM "GPU KV cache size", SGLang #tokens)
    max_model_len: int
    sim_blocks: int  # 16-token blocks a scheduler simulation gives the pool (requests of this length fill it alike)


def vllm_pool(s, m, sm) -> KvPool:
    """The pool of vLLM's startup memory ``sm`` (:func:`gpuplan.engines.vllm.startup_memory` of ``s``). With a
    shared prefix the prefix cache holds (:func:`gpuplan.engines.prefix.cached_prefix_tokens`), its ``S`` blocks
    are held once and each request adds its other ``R - S`` blocks: ``(blocks - S) // (R - S)`` requests (only on
    models of full attention in every layer: a sliding window or a recurrent state keeps blocks per request that
    this does not count); ``kv_tokens`` stays the pool's tokens, each held once."""
    from ..engines import vllm

    tokens = s.prompt_tokens + s.output_tokens
    per_request = max(vllm.kv_geometry(s, m, st, sm.limits, max_len=tokens)[1] for st in vllm.stages(m, s.pp))
    cached = shared_prefix_held(s, m)
    shared = max(vllm.kv_geometry(s, m, st, sm.limits, max_len=cached)[1] for st in vllm.stages(m, s.pp)) \
        if cached else 0
    own = per_request - shared
    exact = sm.num_blocks / per_request if per_request else 0.0  # the pool in tokens, with or without sharing
    plain = math.ceil(tokens / oh.VLLM_BLOCK_TOKENS)  # the blocks of one group of full attention
    return KvPool(engine="vllm", pool_gib=sm.kv_pool / 2**30, request_tokens=tokens,
                  max_concurrency=(sm.num_blocks - shared) // own if own else 0,
                  kv_tokens=int(exact * tokens), logged_tokens=sm.kv_tokens, max_model_len=sm.limits.max_model_len,
                  sim_blocks=sm.num_blocks * plain // per_request if per_request else 0)


def sglang_pool(s, sm) -> KvPool:
    """The pool of SGLang's startup memory ``sm`` (:func:`gpuplan.engines.sglang.startup_memory` of ``s``); the
    radix cache holds a shared prefix of ``c`` tokens once: ``(pool - c) // (tokens - c)`` requests."""
    tokens = s.prompt_tokens + s.output_tokens
    from ..engines.prefix import cached_prefix_tokens

    cached = cached_prefix_tokens(s)
    return KvPool(engine="sglang", pool_gib=sm.kv_pool_gib, request_tokens=tokens,
                  max_concurrency=min((sm.kv_tokens - cached) // (tokens - cached), sm.max_running_requests)
                  if tokens else 0,
                  kv_tokens=sm.kv_tokens, logged_tokens=sm.kv_tokens, max_model_len=sm.context_len,
                  sim_blocks=sm.kv_tokens // oh.VLLM_BLOCK_TOKENS)


def shared_prefix_held(s, m) -> int:
    """Tokens of the shared prefix vLLM holds once for all requests: the cached whole blocks, on models whose
    every layer keeps full attention (0 otherwise)."""
    from ..engines.prefix import cached_prefix_tokens

    full = all(layer.kv_dims and not layer.window and not layer.state_elements for layer in m.layers)
    return cached_prefix_tokens(s, m) if full else 0


def trtllm_pool(s, sm) -> KvPool:
    """The pool of TensorRT-LLM's startup memory ``sm`` (:func:`gpuplan.engines.trtllm.startup_memory`): whole
    blocks of ``tokens_per_block`` per request, capped by ``max_batch_size``; ``kv_tokens`` is the pool."""
    tokens = s.prompt_tokens + s.output_tokens
    return KvPool(engine="trtllm", pool_gib=sm.kv_pool / 2**30, request_tokens=tokens,
                  max_concurrency=sm.max_concurrency(tokens), kv_tokens=sm.kv_tokens, logged_tokens=sm.kv_tokens,
                  max_model_len=sm.max_seq_len, sim_blocks=sm.kv_tokens // oh.VLLM_BLOCK_TOKENS)


def kv_pool(s, m, gpu) -> KvPool | None:
    """The KV pool of serving ``s`` on ``gpu`` with its engine (None for engines without a preallocated pool)."""
    if s.engine == "vllm":
        from ..engines import vllm

        return vllm_pool(s, m, vllm.startup_memory(s, m, gpu))
    if s.engine == "sglang":
        from ..engines import sglang

        return sglang_pool(s, sglang.startup_memory(s, m, gpu, mem_fraction_static=s.mem_fraction_static))
    if s.engine == "trtllm":
        from ..engines import trtllm

        return trtllm_pool(s, trtllm.startup_memory(s, m, gpu, trtllm.activation(s, m)))
    return None
