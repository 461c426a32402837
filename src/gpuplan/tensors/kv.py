"""The KV cache and the recurrent states of each layer kind, per token and per sequence, on one GPU: the
arithmetic transformers' cache, vLLM's paged blocks and SGLang's token pool share (engines use it; so do the
memory and speed estimates and the web page's formulas).
"""

from __future__ import annotations

import math

from ..model.layers import Layer
from ..model.spec import ModelSpec
from ..scenario import Scenario


def kv_dtype_bytes(s: Scenario) -> float:
    """Bytes per cached element: the compute dtype unless ``kv_cache_dtype`` names another."""
    return {"auto": s.compute_bytes, "fp16": 2, "bf16": 2, "fp8": 1, "int8": 1}[s.kv_cache_dtype]


def layer_cache_bytes(s: Scenario, m: ModelSpec, layer: Layer, tokens: int, *, windowed: bool = True,
                      block: int = 1) -> float:
    """Cache bytes of one sequence of ``tokens`` tokens in one layer, on one GPU.

    Keys and values: ``kv_dims`` elements per token (``2·kv_heads·head_dim``; MLA's latent and rope key, which
    transformers 5 and vLLM both cache), KV heads split over TP (replicated when TP exceeds them; MLA's latent is
    replicated; all of them on each GPU under attention data parallelism), at the KV-cache dtype (int8 adds an
    fp32 scale per token and head), for at most ``window`` tokens on sliding and chunked layers when
    ``windowed``, in whole blocks of ``block`` tokens (vLLM's pages: ``VLLM_BLOCK_TOKENS``).
    Linear-attention and state-space layers add their fixed recurrent state (``state_elements`` 16-bit units:
    convolution window and SSM / delta-rule state, measured off transformers' cache), split over TP by heads,
    whatever the length (transformers ``LinearAttentionLayer``; vLLM's ``MambaSpec`` keeps one state per request).
    """
    b = kv_dtype_bytes(s)
    cached = layer.cached_tokens(tokens) if windowed else (tokens if layer.kv_dims else 0)
    if block > 1:
        cached = math.ceil(cached / block) * block
    if layer.attention == "mla":
        dims = layer.kv_dims
        heads = 1
    else:
        heads = math.ceil(m.num_kv_heads / s.attention_tp)
        dims = layer.kv_dims * heads / m.num_kv_heads
    total = cached * dims * b
    if s.kv_cache_dtype == "int8" and layer.kv_dims:
        total += cached * 2 * heads * 4  # per-token-head fp32 scales
    return total + layer.state_elements * s.compute_bytes / s.attention_tp


def kv_bytes_per_sequence(s: Scenario, m: ModelSpec, tokens: int, layers=None, *, windowed: bool = True,
                          block: int = 1) -> float:
    """Cache bytes of one sequence on one GPU, summed over ``layers`` (default: all) with
    :func:`layer_cache_bytes`: keys and values per layer kind (sliding and chunked windows capped when
    ``windowed``) in blocks of ``block`` tokens, plus the fixed recurrent states of linear-attention and
    state-space layers."""
    kinds = m.layer_kinds() if layers is None else [(layer, 1) for layer in layers]
    return sum(count * layer_cache_bytes(s, m, layer, tokens, windowed=windowed, block=block)
               for layer, count in kinds)

