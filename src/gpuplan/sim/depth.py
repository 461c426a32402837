"""A few layers for many: the period of a model's layer pattern, its config cut to a depth, and the extrapolation
of each phase's peak to the full depth.

A decoder's layers repeat with a period after an optional prefix: Llama 1 (every layer alike), Gemma 2 and
gpt-oss 2 (sliding / full), Qwen3-Next and Qwen3.5 4 (3 Gated DeltaNet : 1 full attention), Gemma 3 6 (5 local : 1
global), Llama 4 Maverick 4 (chunked / full x dense / MoE), DeepSeek-V3 1 after 3 dense layers. Memory is affine
in the number of periods (each adds the same parameters, cache, saved activations), so a model of ``prefix + K
periods + r`` layers is simulated at ``prefix + m periods + r`` and one period more, and each phase's peak is
``peak(m) + (K - m)·(peak(m + 1) - peak(m))``. The truncated model is the real one's first layers: every list
indexed by layer (``layer_types``, ``no_rope_layers``, ``hybrid_override_pattern``...) is cut to the depth and
every index list (``mlp_only_layers``, ``moe_layers``) filtered; the simulator then checks that each layer it built
holds the parameters of the full model's layer of the same index.
"""

from __future__ import annotations

import math
from typing import Any

# xLSTM builds num_blocks blocks and its cache num_hidden_layers states (transformers 5.24 modeling_xlstm.py): both cut
LAYER_KEYS = ("num_hidden_layers", "n_layer", "num_layers", "decoder_layers", "num_blocks")
INDEX_LISTS = ("mlp_only_layers", "moe_layers", "full_attn_idxs", "attn_layer_indices", "swa_layers")
PER_LAYER_WORDS = ("layer", "pattern", "types", "block", "modes")  # lists with one entry per layer
PER_LAYER_SIZES = ("intermediate_size", "num_query_heads", "num_kv_heads", "num_key_value_heads", "head_dim")


def period(layers: list[Any]) -> tuple[int, int]:
    """(prefix, period) of the layer sequence with the smallest ``prefix + period``: after ``prefix`` layers,
    layer ``i`` equals layer ``i + period``."""
    ids: dict[Any, int] = {}
    seq = [ids.setdefault(layer, len(ids)) for layer in layers]
    n = len(seq)
    for total in range(1, n + 1):
        for prefix in range(total):
            step = total - prefix
            if all(seq[i] == seq[i + step] for i in range(prefix, n - step)):
                return prefix, step
    return 0, n


def plan(layers: list[Any], *, min_layers: int = 2) -> tuple[list[int], int]:
    """(depths to simulate, periods to extrapolate over): two depths one period apart, each ending with the
    full model's remainder, and the number of periods the second adds up to the full depth; or the full depth
    alone when it is that short, or when the forward runs a layer more than once (HRM-Text's recurrent stacks:
    its first layers are no model of their own)."""
    n = len(layers)
    if any(getattr(layer, "runs", 1) > 1 for layer in layers):
        return [n], 0
    prefix, step = period(layers)
    periods, rest = divmod(n - prefix, step)
    base = max(1, math.ceil(min_layers / step))
    if periods <= base:
        return [n], 0
    first = prefix + base * step + rest
    return [first, first + step], periods - base


def cut_config(config: dict[str, Any], depth: int) -> dict[str, Any]:
    """The config with ``depth`` decoder layers: the real model's first ``depth`` layers."""
    config = dict(config)
    if isinstance(config.get("text_config"), dict):
        config["text_config"] = cut_config(config["text_config"], depth)
        return config
    n = next((config[k] for k in LAYER_KEYS if isinstance(config.get(k), int)), None)
    for key in LAYER_KEYS:
        if key in config:
            config[key] = depth
    if not isinstance(n, int):
        return config
    for key, value in list(config.items()):
        if key in INDEX_LISTS and isinstance(value, list):
            config[key] = [k for k in value if isinstance(k, int) and k < depth]
        elif key == "per_layer_config" and isinstance(value, dict):  # Gemma 4: overrides keyed by layer index
            config[key] = {k: v for k, v in value.items() if str(k).isdigit() and int(k) < depth}
        elif _per_layer(key, value, n, depth):
            config[key] = value[:depth]
    return config


def _per_layer(key: str, value: Any, n: int, depth: int) -> bool:
    """Whether a config value holds one entry per layer: a list of ``n`` under a per-layer key (``layer_types``,
    ``no_rope_layers``...), a pattern string of ``n`` characters (Nemotron-H's ``M-M*-``), or a longer layer-type
    list (one that also types MTP layers)."""
    if isinstance(value, list) and len(value) == n:
        return any(word in key for word in PER_LAYER_WORDS) or key in PER_LAYER_SIZES
    if isinstance(value, str) and len(value) == n:
        return "pattern" in key
    return isinstance(value, list) and key.endswith(("layer_types", "block_type")) and len(value) > depth


def extrapolate(runs: list[Any], steps: int) -> tuple[dict[str, float], dict[str, dict[str, float]], dict[str, str]]:
    """Each phase's peak, its parts and the op that reached it, at the full depth: with two runs one period
    apart, the second plus ``steps - 1`` times their difference (``steps`` periods beyond the first)."""
    last = runs[-1]
    before = runs[-2] if len(runs) > 1 else None
    phases, parts, ops = {}, {}, {}
    for phase, peak in last.peaks.items():
        if phase in ("setup", "zero_grad"):
            continue
        total, split = float(peak.bytes), {k: float(v) for k, v in peak.parts.items()}
        other = before.peaks.get(phase) if before is not None else None
        if other is not None:
            total += (steps - 1) * (peak.bytes - other.bytes)
            for name in split:
                split[name] += (steps - 1) * (peak.parts.get(name, 0) - other.parts.get(name, 0))
        phases[phase], parts[phase], ops[phase] = total, split, peak.op
    return phases, parts, ops
