"""The shared prompt prefix a serving engine reuses across requests (``shared_prefix_tokens``: a system prompt
every request starts with).

- vLLM V1 (0.8+): automatic prefix caching, on by default but on hybrid Mamba models
  (:func:`gpuplan.engines.vllm.prefix_caching`), hashes and matches whole KV blocks (``vllm/v1/core/
  kv_cache_utils.py`` ``hash_request_tokens``: full blocks only), so a request finds ``floor(prefix / 16) x 16``
  tokens cached and holds those blocks in common with the others; V0 caches nothing unless
  ``--enable-prefix-caching`` is given;
- SGLang: the radix cache (on unless ``--disable-radix-cache``) matches token by token at its default
  ``page_size`` of 1, so the whole prefix;
- transformers ``generate`` and llama.cpp share nothing across the requests of one batch (llama-server's
  ``cache_prompt`` reuses a slot's own previous prompt, not another slot's); TensorRT-LLM's block reuse is not
  modelled: nothing.
"""

from __future__ import annotations

from .. import overheads as oh


def cached_prefix_tokens(s, m=None) -> int:
    """Tokens of ``s.shared_prefix_tokens`` that a request after the first finds in the engine's cache (no prefill
    compute, KV held once); ``m``, the model, where known (vLLM leaves the cache off on hybrid Mamba models)."""
    prefix = s.shared_prefix_tokens
    if not prefix:
        return 0
    if s.engine == "sglang":
        return prefix
    if s.engine == "vllm":
        from .vllm import prefix_caching

        return prefix // oh.VLLM_BLOCK_TOKENS * oh.VLLM_BLOCK_TOKENS if prefix_caching(s, m) else 0
    return 0
