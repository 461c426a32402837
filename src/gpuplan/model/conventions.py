"""Any decoder read from the keys most ``config.json`` files share, without transformers.

The conventions (names as transformers' configuration classes spell them; first match wins):

- sizes: ``hidden_size``, ``num_hidden_layers``, ``vocab_size``, ``num_attention_heads``, ``num_key_value_heads``,
  ``head_dim``, ``intermediate_size``; multimodal configs keep them in ``text_config``;
- the mixer of each layer: a ``layer_types`` list (``full_attention``, ``sliding_attention``, ``chunked_attention``,
  ``linear_attention``, ``mamba``, ``conv``, ``hybrid``...), ``layers_block_type`` (Jamba, Nemotron-H),
  ``hybrid_override_pattern`` (``M`` Mamba, ``*`` attention, ``-`` MLP, ``E`` experts), ``attn_layer_period`` /
  ``attn_layer_offset`` (Jamba), ``full_attention_interval`` (Qwen3-Next), ``sliding_window`` with
  ``use_sliding_window`` / ``max_window_layers`` (Qwen2) or ``sliding_window_pattern`` (Gemma 3), and
  ``attention_chunk_size`` with ``no_rope_layers`` (Llama 4: chunked on RoPE layers, global on NoPE layers);
- multi-head latent attention: ``q_lora_rank``, ``kv_lora_rank``, ``qk_nope_head_dim``, ``qk_rope_head_dim``,
  ``v_head_dim`` (DeepSeek-V2/V3, Kimi K2, GLM-5);
- mixtures of experts: the expert count (``num_experts``, ``num_local_experts``, ``n_routed_experts``,
  ``moe_num_experts``), their width (``moe_intermediate_size``, else ``intermediate_size``), top-k
  (``num_experts_per_tok``, ``moe_k``, ``moe_topk``), shared experts (``n_shared_experts`` x the expert width,
  ``shared_expert_intermediate_size`` with its sigmoid gate, ``moe_num_shared_experts``,
  ``moe_shared_expert_intermediate_size``, ``shared_intermediate_size``), and which layers hold experts
  (``mlp_only_layers``, ``first_k_dense_replace``, ``moe_layer_freq``, ``decoder_sparse_step``,
  ``interleave_moe_layer_step``, ``moe_layers``, ``moe_layer_start_index`` / ``moe_layer_end_index`` /
  ``moe_layer_interval``); dense layers of mixed models may use ``intermediate_size_mlp`` (Llama 4);
- linear attention (Gated DeltaNet, Qwen3-Next / Qwen3.5): ``linear_num_key_heads``, ``linear_num_value_heads``,
  ``linear_key_head_dim``, ``linear_value_head_dim``, ``linear_conv_kernel_dim``;
- Mamba-2 mixers (Granite 4, Falcon-H1, Nemotron-H, Bamba, Zamba2): ``mamba_n_heads`` / ``mamba_num_heads``,
  ``mamba_d_head`` / ``mamba_head_dim``, ``mamba_d_state`` / ``ssm_state_size``, ``mamba_n_groups`` / ``n_groups``,
  ``mamba_d_conv`` / ``conv_kernel``, ``mamba_expand`` / ``expand``.

What the keys do not say (per-head query/key norms, gated attention outputs, extra norms, biases under
family-specific names) a reader cannot know: models read this way are marked not exact unless their family is
one the test sweep has verified (``architectures.EXACT_READERS``). Parameter formulas follow the transformers
modules of each kind (``Qwen3NextGatedDeltaNet``, ``FalconH1Mixer``/``BambaMixer``, ``DeepseekV3Attention``).
"""

from __future__ import annotations

from typing import Any

from ..errors import GpuplanError
from .layers import Layer, Linear

KIND_OF_TYPE = {
    "full_attention": "full", "attention": "full", "global": "full", "global_attention": "full", "*": "full",
    "sliding_attention": "sliding", "local": "sliding", "local_attention": "sliding", "sliding": "sliding",
    "chunked_attention": "chunked",
    "linear_attention": "linear", "linear": "linear", "deltanet": "linear", "gated_deltanet": "linear",
    "mamba": "mamba", "mamba2": "mamba", "ssm": "mamba", "m": "mamba",
    "conv": "conv", "hybrid": "hybrid",
    "mlp": "none", "moe": "none", "-": "none", "e": "none",
}


# What some families build beyond their keys (read off their transformers modules): per-head or full query/key
# RMSNorms, a sigmoid output gate on attention (q_proj twice as wide), a shared expert as wide as
# ``intermediate_size``, the key that sets the dense MLP width, attention and Mamba side by side in every layer,
# a learned per-expert routing bias, and DeepSeek sparse attention's lightning indexer.
FAMILY_TRAITS: dict[str, dict[str, Any]] = {
    "qwen3_next": {"qk_norm": "head", "gated_attention": True},
    **{family: {"qk_norm": "head", "gated_attention": True, "split_deltanet": True}
       for family in ("qwen3_5", "qwen3_5_text", "qwen3_5_moe", "qwen3_5_moe_text")},
    **{family: {"qk_norm": "none", "shared_expert_width": "intermediate_size", "dense_width": "intermediate_size_mlp"}
       for family in ("llama4", "llama4_text")},
    "falcon_h1": {"hybrid": True},
    "granitemoehybrid": {"dense_width": "shared_intermediate_size", "fused_mlp": True},
    **{family: {"fused_mlp": True} for family in ("granitemoe", "granitemoeshared")},
    "minimax_m2": {"qk_norm": "full"},
    "glm4_moe": {"o_bias": False},  # attention_bias puts biases on q, k and v only
    "ernie4_5_moe": {"routing_bias": True},
    **{family: {"indexer": True} for family in ("deepseek_v32", "glm_moe_dsa")},
}


class Keys:
    """A config dict read with key aliases; ``need`` names the missing keys in one sentence."""

    def __init__(self, data: dict[str, Any]):
        self.data = data

    def get(self, *keys: str, default: Any = None) -> Any:
        for key in keys:
            if self.data.get(key) is not None:
                return self.data[key]
        return default

    def need(self, *keys: str) -> Any:
        value = self.get(*keys)
        if value is None:
            raise GpuplanError(
                f"config.json of model_type {self.data.get('model_type')!r} lacks {' / '.join(keys)}, which gpuplan "
                "needs to size the model; pass the model's full config.json")
        return value


def _mixer_kinds(c: Keys, n: int) -> list[tuple[str, int | None]]:
    """(kind, window) of each layer, from whichever convention the config uses."""
    window = c.get("sliding_window")
    chunk = c.get("attention_chunk_size")
    types = c.get("layer_types") or c.get("layers_block_type")
    pattern = c.get("hybrid_override_pattern")
    if isinstance(pattern, str) and len(pattern) >= n:
        types = list(pattern[:n])
    if isinstance(types, list) and types:
        types = [str(t).lower() for t in types[:n]] + ["full_attention"] * max(0, n - len(types))
        kinds = [KIND_OF_TYPE.get(t, "full") for t in types]
    elif c.get("attn_layer_period"):
        period, offset = c.get("attn_layer_period"), c.get("attn_layer_offset", default=0)
        kinds = ["full" if k % period == offset else "mamba" for k in range(n)]
    elif c.get("full_attention_interval"):
        every = c.get("full_attention_interval")
        kinds = ["full" if (k + 1) % every == 0 else "linear" for k in range(n)]
    elif chunk:  # Llama 4: RoPE layers attend within chunks, NoPE layers (every no_rope_layer_interval-th) globally
        every = c.get("no_rope_layer_interval", default=4)
        rope = c.get("no_rope_layers") or [int((k + 1) % every != 0) for k in range(n)]
        kinds = ["chunked" if r else "full" for r in rope[:n]]
    elif window and c.get("sliding_window_pattern"):
        every = c.get("sliding_window_pattern")
        kinds = ["sliding" if (k + 1) % every else "full" for k in range(n)]
    elif window and c.get("use_sliding_window") is not False and (
            c.get("use_sliding_window") or c.get("max_window_layers") is None):
        first = c.get("max_window_layers", default=0) if c.get("use_sliding_window") else 0
        kinds = ["sliding" if k >= first else "full" for k in range(n)]
    else:
        kinds = ["full"] * n
    if c.get("kv_lora_rank"):
        kinds = ["mla" if k == "full" else k for k in kinds]
    if c.get("linear_num_key_heads") is None and c.get("mamba_n_heads", "mamba_num_heads", "mamba_d_state"):
        kinds = ["mamba" if k == "linear" else k for k in kinds]  # Granite 4 names its Mamba layers linear_attention
    if FAMILY_TRAITS.get(c.get("model_type"), {}).get("hybrid"):
        kinds = ["hybrid" if k == "full" else k for k in kinds]
    return [(k, window if k == "sliding" else chunk if k == "chunked" else None) for k in kinds]


def _moe_layers(c: Keys, n: int, kinds: list[tuple[str, int | None]]) -> list[bool]:
    """Which layers hold experts."""
    experts = c.get("num_experts", "num_local_experts", "n_routed_experts", "moe_num_experts")
    if not experts:
        return [False] * n
    types = c.get("layer_types") or c.get("layers_block_type")
    pattern = c.get("hybrid_override_pattern")
    if isinstance(pattern, str) and len(pattern) >= n:
        return [ch.upper() == "E" for ch in pattern[:n]]
    if isinstance(types, list) and any(str(t).lower() == "moe" for t in types):
        return [str(t).lower() == "moe" for t in types[:n]]
    if c.get("moe_layers") is not None:
        listed = set(c.get("moe_layers"))
        return [k in listed for k in range(n)]
    dense = set(c.get("mlp_only_layers", default=[]) or [])
    first = c.get("first_k_dense_replace", default=0) or 0
    freq = c.get("moe_layer_freq", default=1) or 1
    step = c.get("decoder_sparse_step", "interleave_moe_layer_step", default=1) or 1
    start = c.get("moe_layer_start_index", default=0) or 0
    end = c.get("moe_layer_end_index", default=n - 1)
    interval = c.get("moe_layer_interval", default=1) or 1
    if not isinstance(start, int) or not isinstance(end, int):
        start, end = 0, n - 1
    return [k not in dense and k >= first and k % freq == 0 and (k + 1) % step == 0 and start <= k <= end and
            (k - start) % interval == 0 for k in range(n)]


def _attention(c: Keys, h: int, a: int, kv: int, d: int) -> tuple[tuple[Linear, ...], int]:
    """(linears, norm params) of grouped-query attention: q, k, v, o with ``attention_bias``; ``use_qk_norm``
    adds per-head RMSNorms on queries and keys; the family traits add full q/k norms or an output gate."""
    bias = bool(c.get("attention_bias", "use_bias", "qkv_bias", default=False))
    traits = FAMILY_TRAITS.get(c.get("model_type"), {})
    gate = 2 if traits.get("gated_attention") else 1
    qk_norm = traits.get("qk_norm", "head" if c.get("use_qk_norm", "qk_layernorm", default=False) else "none")
    qk = {"head": 2 * d, "full": a * d + kv * d, "none": 0}[qk_norm]
    linears = (Linear(name="q_proj", in_features=h, out_features=gate * a * d, bias=bias),
               Linear(name="k_proj", in_features=h, out_features=kv * d, bias=bias),
               Linear(name="v_proj", in_features=h, out_features=kv * d, bias=bias),
               Linear(name="o_proj", in_features=a * d, out_features=h, bias=bias and traits.get("o_bias", True)))
    return linears, qk


def _mla(c: Keys, h: int, a: int) -> tuple[tuple[Linear, ...], int, int]:
    """(linears, norm params, cached elements per token) of multi-head latent attention (DeepseekV3Attention)."""
    q_rank, kv_rank = c.get("q_lora_rank"), c.need("kv_lora_rank")
    nope, rope, vd = c.need("qk_nope_head_dim"), c.need("qk_rope_head_dim"), c.need("v_head_dim")
    bias = bool(c.get("attention_bias", default=False))
    q = ((Linear(name="q_a_proj", in_features=h, out_features=q_rank, bias=bias),
          Linear(name="q_b_proj", in_features=q_rank, out_features=a * (nope + rope)))
         if q_rank else (Linear(name="q_proj", in_features=h, out_features=a * (nope + rope)),))
    linears = (*q, Linear(name="kv_a_proj_with_mqa", in_features=h, out_features=kv_rank + rope, bias=bias),
               Linear(name="kv_b_proj", in_features=kv_rank, out_features=a * (nope + vd)),
               Linear(name="o_proj", in_features=a * vd, out_features=h, bias=bias))
    norms, cached = (q_rank or 0) + kv_rank, kv_rank + rope
    if FAMILY_TRAITS.get(c.get("model_type"), {}).get("indexer"):  # DeepSeek sparse attention's indexer
        heads, dim = c.need("index_n_heads"), c.need("index_head_dim")
        linears += (Linear(name="wq_b", in_features=q_rank or h, out_features=heads * dim),
                    Linear(name="wk", in_features=h, out_features=dim),
                    Linear(name="weights_proj", in_features=h, out_features=heads))
        norms, cached = norms + 2 * dim, cached + dim  # its keys' LayerNorm; its keys are cached per token
    return linears, norms, cached


def _deltanet(c: Keys, h: int) -> tuple[tuple[Linear, ...], int, int, int]:
    """(linears, norm params, other params, state elements) of a Gated DeltaNet layer (Qwen3NextGatedDeltaNet):
    fused q/k/v/z and b/a projections, a depthwise causal convolution over q, k, v, per-head ``dt_bias`` and
    ``A_log``, a gated RMSNorm over the value head, and the output projection. The state is the convolution
    window plus the fp32 ``v_heads x k_dim x v_dim`` recurrent state (counted twice in 16-bit units)."""
    kh, vh = c.need("linear_num_key_heads"), c.need("linear_num_value_heads")
    kd, vd = c.need("linear_key_head_dim"), c.need("linear_value_head_dim")
    kernel = c.get("linear_conv_kernel_dim", default=4)
    conv = 2 * kh * kd + vh * vd
    if FAMILY_TRAITS.get(c.get("model_type"), {}).get("split_deltanet"):  # Qwen3.5: one projection per input
        linears = (Linear(name="out_proj", in_features=vh * vd, out_features=h),
                   Linear(name="in_proj_qkv", in_features=h, out_features=conv),
                   Linear(name="in_proj_z", in_features=h, out_features=vh * vd),
                   Linear(name="in_proj_b", in_features=h, out_features=vh),
                   Linear(name="in_proj_a", in_features=h, out_features=vh))
    else:
        linears = (Linear(name="in_proj_qkvz", in_features=h, out_features=2 * kh * kd + 2 * vh * vd),
                   Linear(name="in_proj_ba", in_features=h, out_features=2 * vh),
                   Linear(name="out_proj", in_features=vh * vd, out_features=h))
    return linears, vd, conv * kernel + 2 * vh, conv * kernel + 2 * vh * kd * vd


def _mamba2(c: Keys, h: int) -> tuple[tuple[Linear, ...], int, int, int]:
    """(linears, norm params, other params, state elements) of a Mamba-2 mixer (BambaMixer, FalconH1Mixer):
    ``in_proj`` to (z, x, B, C, dt), a depthwise convolution over (x, B, C), per-head ``dt_bias``, ``A_log`` and
    ``D``, a gated RMSNorm over ``d_inner``, ``out_proj``. State: the convolution window and the fp32
    ``heads x head_dim x d_state`` SSM state (counted twice in 16-bit units)."""
    heads = c.need("mamba_n_heads", "mamba_num_heads", "ssm_num_heads")
    state = c.need("mamba_d_state", "ssm_state_size", "state_size")
    head_dim = c.get("mamba_d_head", "mamba_head_dim", "ssm_head_dim")
    inner = c.get("mamba_d_ssm") or (heads * head_dim if head_dim else
                                      c.get("mamba_expand", "expand", default=2) * h)
    groups = c.get("mamba_n_groups", "n_groups", default=1)
    kernel = c.get("mamba_d_conv", "conv_kernel", default=4)
    conv = inner + 2 * groups * state
    conv_bias = bool(c.get("mamba_conv_bias", "use_conv_bias", default=True))
    proj_bias = bool(c.get("mamba_proj_bias", default=False))
    linears = (Linear(name="in_proj", in_features=h, out_features=2 * inner + 2 * groups * state + heads,
                      bias=proj_bias),
               Linear(name="out_proj", in_features=inner, out_features=h, bias=proj_bias))
    norm = inner if c.get("mamba_rms_norm", default=True) else 0
    return linears, norm, conv * kernel + (conv if conv_bias else 0) + 3 * heads, conv * kernel + 2 * inner * state


# Mamba-2's chunk length when the config names none: mamba_ssm ``Mamba2(chunk_size=256)`` (modules/mamba2.py).
MAMBA2_CHUNK = 256


def mamba2_shape(config: dict[str, Any], h: int) -> dict[str, int] | None:
    """The sizes of a Mamba-2 mixer the chunked scan works on, from the keys :func:`_mamba2` reads: ``inner``
    (heads x head_dim), ``heads``, ``state`` (d_state), ``groups`` (of B and C) and ``chunk`` (the SSD chunk length:
    ``chunk_size`` in Nemotron-H, ``mamba_chunk_size`` in Bamba, Granite 4 and Falcon-H1); None when the config
    names no Mamba-2 heads."""
    c = _text(config)
    heads = c.get("mamba_n_heads", "mamba_num_heads", "ssm_num_heads")
    state = c.get("mamba_d_state", "ssm_state_size", "state_size")
    if not heads or not state:
        return None
    head_dim = c.get("mamba_d_head", "mamba_head_dim", "ssm_head_dim")
    inner = c.get("mamba_d_ssm") or (heads * head_dim if head_dim else c.get("mamba_expand", "expand", default=2) * h)
    return {"inner": int(inner), "heads": int(heads), "state": int(state),
            "groups": int(c.get("mamba_n_groups", "n_groups", default=1)),
            "chunk": int(c.get("mamba_chunk_size", "chunk_size", default=MAMBA2_CHUNK))}


DELTANET_CHUNK = 64  # fla's chunk_gated_delta_rule_fwd: chunk_local_cumsum(g, chunk_size=64) and 64-token tiles


def deltanet_shape(config: dict[str, Any]) -> dict[str, int] | None:
    """The sizes of a Gated DeltaNet mixer the chunked delta rule works on, from the keys :func:`_deltanet` reads:
    ``k_heads`` and ``v_heads`` (queries and keys are repeated to the value heads before the kernel: transformers'
    Qwen3NextGatedDeltaNet.forward ``repeat_interleave``), ``k_dim``, ``v_dim``, ``conv`` (the channels of the causal
    convolution, ``2 k_heads k_dim + v_heads v_dim``) and ``chunk``; None without ``linear_num_value_heads``."""
    c = _text(config)
    vh = c.get("linear_num_value_heads")
    if not vh:
        return None
    kh, kd, vd = c.need("linear_num_key_heads"), c.need("linear_key_head_dim"), c.need("linear_value_head_dim")
    return {"k_heads": int(kh), "v_heads": int(vh), "k_dim": int(kd), "v_dim": int(vd),
            "conv": int(2 * kh * kd + vh * vd), "chunk": DELTANET_CHUNK}


def _mlp(h: int, i: int, *, bias: bool, group: str = "mlp", count: int = 1, fused: bool = False) -> tuple[Linear, ...]:
    plain = group != "experts"  # experts are fused 3-D parameters in transformers 5
    if fused:  # Granite: gate and up in one input_linear
        return (Linear(name="input_linear", in_features=h, out_features=2 * i, bias=bias, group=group, count=count,
                       adaptable=plain),
                Linear(name="output_linear", in_features=i, out_features=h, bias=bias, group=group, count=count,
                       adaptable=plain))
    return (Linear(name="gate_proj", in_features=h, out_features=i, bias=bias, group=group, count=count,
                   adaptable=plain),
            Linear(name="up_proj", in_features=h, out_features=i, bias=bias, group=group, count=count,
                   adaptable=plain),
            Linear(name="down_proj", in_features=i, out_features=h, bias=bias, group=group, count=count,
                   adaptable=plain))


# the keys of an expert block's expert count and of the experts each token is routed to, first found read (Mixtral
# num_local_experts, DeepSeek n_routed_experts, ERNIE 4.5 moe_num_experts and moe_k, Hunyuan moe_topk); the config's
# checks (validate.checked_config) read the same keys
EXPERT_COUNT_KEYS = ("num_experts", "num_local_experts", "n_routed_experts", "moe_num_experts")
EXPERTS_PER_TOKEN_KEYS = ("num_experts_per_tok", "moe_k", "moe_topk", "num_experts_per_token", "experts_per_token")


def _experts(c: Keys, h: int, i: int) -> tuple[tuple[Linear, ...], int]:
    """(linears, top-k) of an expert block: router, routed experts, shared experts (with Qwen's sigmoid gate)."""
    traits = FAMILY_TRAITS.get(c.get("model_type"), {})
    E = c.need(*EXPERT_COUNT_KEYS)
    k = c.get(*EXPERTS_PER_TOKEN_KEYS, default=1)
    mi = c.get("moe_intermediate_size", default=i)
    if isinstance(mi, list):  # ERNIE 4.5 VL: text experts first, then the vision experts (not counted here)
        mi = mi[0]
    linears = [Linear(name="gate", in_features=h, out_features=E, group="router", adaptable=False),
               *_mlp(h, mi, bias=False, group="experts", count=E)]
    shared_width = c.get("shared_expert_intermediate_size", "moe_shared_expert_intermediate_size",
                         "shared_intermediate_size", traits.get("shared_expert_width", "-"))
    n_shared = c.get("n_shared_experts", "moe_num_shared_experts", "num_shared_experts", default=0) or 0
    fused = bool(traits.get("fused_mlp"))
    if c.get("shared_expert_intermediate_size"):
        linears += [*_mlp(h, shared_width, bias=False, group="shared_experts"),
                    Linear(name="shared_expert_gate", in_features=h, out_features=1, group="router")]
    elif shared_width or n_shared:
        linears += _mlp(h, (shared_width or mi) * max(n_shared, 1), bias=False, group="shared_experts", fused=fused)
    return tuple(linears), k


def _text(config: dict[str, Any]) -> Keys:
    text = config.get("text_config") or config.get("llm_config") or config
    return Keys({"model_type": config.get("model_type"), **text})


ESSENTIAL = (("hidden_size", "n_embd", "d_model"), ("num_attention_heads", "n_head", "num_heads"),
             ("num_hidden_layers", "n_layer", "num_layers"), ("vocab_size", "padded_vocab_size"))


def read(config: dict[str, Any]) -> dict[str, Any]:
    """Architecture fields of any decoder from the common keys (see the module docstring)."""
    c = _text(config)
    missing = sorted(keys[0] for keys in ESSENTIAL if c.get(*keys) is None)
    if missing:
        raise GpuplanError(f"config.json of model_type {config.get('model_type')!r} lacks {', '.join(missing)}, which "
                           "gpuplan needs to size the model; pass the model's full config.json")
    h, n = c.need("hidden_size", "n_embd", "d_model"), c.need("num_hidden_layers", "n_layer", "num_layers")
    V = c.need("vocab_size", "padded_vocab_size")
    a = c.need("num_attention_heads", "n_head", "num_heads")
    kv = c.get("num_key_value_heads", "num_kv_heads", "n_head_kv", "multi_query_group_num", default=a)
    d = c.get("head_dim", "kv_channels") or h // a  # 0 in some configs means "derive it"
    i = c.get("intermediate_size", "ffn_hidden_size", "n_inner", "ffn_dim", default=4 * h)
    if isinstance(i, list):
        i = max(i)
    traits = FAMILY_TRAITS.get(c.get("model_type"), {})
    dense_i = c.get(traits.get("dense_width", "-"), default=i)
    mlp_bias = bool(c.get("mlp_bias", default=False))
    kinds = _mixer_kinds(c, n)
    moe = _moe_layers(c, n, kinds)
    layers, top_k, E = [], 0, 0
    for (kind, window), sparse in zip(kinds, moe, strict=True):
        extra, extra_mlp, state, kv_dims = 0, 0, 0, 0
        if kind in ("full", "sliding", "chunked", "hybrid"):
            mixer, norms = _attention(c, h, a, kv, d)
            kv_dims = 2 * kv * d
        elif kind == "mla":
            mixer, norms, kv_dims = _mla(c, h, a)
        elif kind == "linear":
            mixer, norms, extra, state = _deltanet(c, h)
        elif kind == "mamba":
            mixer, norms, extra, state = _mamba2(c, h)
        else:
            mixer, norms = (), 0
        if kind == "hybrid":
            linears, more_norms, extra, state = _mamba2(c, h)
            mixer, norms = mixer + linears, norms + more_norms
        if sparse:
            mlp, top_k = _experts(c, h, i)
            E = mlp[0].out_features
            extra_mlp = E if traits.get("routing_bias") else 0
        elif kind == "none" and c.get("layers_block_type") and not c.get("intermediate_size"):
            mlp = ()
        else:
            mlp = _mlp(h, dense_i, bias=mlp_bias, fused=bool(traits.get("fused_mlp")))
        layers.append(Layer(attention=kind, window=window, moe=sparse, linears=mixer + mlp, norm_params=2 * h + norms,
                            attention_extra=extra, mlp_extra=extra_mlp, kv_dims=kv_dims, state_elements=state,
                            experts_per_token=top_k if sparse else 0))
    spec: dict[str, Any] = dict(vocab_size=V, hidden_size=h, num_heads=a, num_kv_heads=kv, head_dim=d,
                                intermediate_size=i, layers=layers, final_norm_params=h, gated_mlp=True,
                                num_experts=E, experts_per_token=top_k)
    if c.get("kv_lora_rank"):
        spec["mla"] = dict(q_lora_rank=c.get("q_lora_rank"), kv_lora_rank=c.get("kv_lora_rank"),
                           qk_nope_head_dim=c.get("qk_nope_head_dim"), qk_rope_head_dim=c.get("qk_rope_head_dim"),
                           v_head_dim=c.get("v_head_dim"))
        spec.update(num_kv_heads=a, head_dim=c.get("qk_nope_head_dim") + c.get("qk_rope_head_dim"))
    return spec
