"""From a Hugging Face ``config.json`` to the layers its ``transformers`` model class builds.

One reader per family maps that family's keys (``n_embd``, ``n_head_kv``, ``num_local_experts``...) and
conventions (fused projections, LayerNorm with bias vs RMSNorm, sliding-window patterns, expert
layouts) onto :class:`~gpuplan.model.layers.Layer` lists. Sources: the ``modeling_*.py`` and
``configuration_*.py`` files of transformers 5.x; each reader names what differs from Llama.
Every bundled config is checked against ``transformers`` on the meta device (tests/model/test_model_sim.py).
"""

from __future__ import annotations

from collections.abc import Callable

from .conventions import Keys as Config
from .layers import Layer, Linear


def _rms(n: int) -> int:
    return n


def _layernorm(n: int) -> int:
    return 2 * n


def _attention(h: int, a: int, kv: int, d: int, *, qkv_bias=False, o_bias=False) -> tuple[Linear, ...]:
    return (
        Linear(name="q_proj", in_features=h, out_features=a * d, bias=qkv_bias),
        Linear(name="k_proj", in_features=h, out_features=kv * d, bias=qkv_bias),
        Linear(name="v_proj", in_features=h, out_features=kv * d, bias=qkv_bias),
        Linear(name="o_proj", in_features=a * d, out_features=h, bias=o_bias),
    )


def _gated_mlp(h: int, i: int, *, bias=False, group="mlp", count=1, names=("gate_proj", "up_proj", "down_proj")):
    """SwiGLU MLP linears; experts are fused 3-D parameters in transformers 5, not linears peft can wrap."""
    gate, up, down = names
    plain = group != "experts"
    return (
        Linear(name=gate, in_features=h, out_features=i, bias=bias, group=group, count=count, adaptable=plain),
        Linear(name=up, in_features=h, out_features=i, bias=bias, group=group, count=count, adaptable=plain),
        Linear(name=down, in_features=i, out_features=h, bias=bias, group=group, count=count, adaptable=plain),
    )


def _windows(cfg: Config, n: int, pattern: list[str] | None, window: int | None) -> list[int | None]:
    """Per-layer sliding window (None = full attention), from ``layer_types`` when the config has it."""
    types = cfg.get("layer_types") or pattern
    if types:
        return [window if t == "sliding_attention" and window else None for t in types[:n]]
    return [window] * n


def _kind(window: int | None) -> str:
    return "sliding" if window else "full"


def _llama_like(cfg: Config, *, qkv_bias=None, o_bias=None, qk_norm: str = "none", norms: int = 2,
                windows: list[int | None] | None = None) -> dict:
    """Llama and its close relatives: GQA attention, SwiGLU MLP, RMSNorm (Llama, Mistral, Qwen2/3, OLMo-2)."""
    h, n, V = cfg.need("hidden_size"), cfg.need("num_hidden_layers"), cfg.need("vocab_size")
    a = cfg.need("num_attention_heads")
    kv = cfg.get("num_key_value_heads", default=a)
    d = cfg.get("head_dim") or h // a  # 0 in some configs means "derive it"
    i = cfg.need("intermediate_size")
    bias = bool(cfg.get("attention_bias", default=False))
    qkv_b = bias if qkv_bias is None else qkv_bias
    o_b = bias if o_bias is None else o_bias
    qk = {"none": 0, "head": 2 * d, "full": a * d + kv * d}[qk_norm]
    if windows is None:
        windows = _windows(cfg, n, None, cfg.get("sliding_window"))
    layers = [
        Layer(attention=_kind(w), window=w,
              linears=_attention(h, a, kv, d, qkv_bias=qkv_b, o_bias=o_b)
              + _gated_mlp(h, i, bias=bool(cfg.get("mlp_bias", default=False))),
              norm_params=norms * h + qk, kv_dims=2 * kv * d)
        for w in windows
    ]
    return dict(vocab_size=V, hidden_size=h, num_heads=a, num_kv_heads=kv, head_dim=d, intermediate_size=i,
                layers=layers, final_norm_params=h, gated_mlp=True)


def _llama(cfg: Config) -> dict:
    return _llama_like(cfg)


def _mistral(cfg: Config) -> dict:
    return _llama_like(cfg)


def _qwen_windows(cfg: Config) -> list[int | None]:
    """Qwen2/Qwen3's per-layer windows as transformers sets them (``Qwen3Config.__post_init__``, the attention's
    ``config.sliding_window if self.layer_type == "sliding_attention" else None``): the window only with
    ``use_sliding_window``, on the layers ``layer_types`` marks sliding, or by default from ``max_window_layers``."""
    n = cfg.need("num_hidden_layers")
    w = cfg.get("sliding_window") if cfg.get("use_sliding_window", default=False) else None
    first = cfg.get("max_window_layers", default=n)
    pattern = ["sliding_attention" if w and k >= first else "full_attention" for k in range(n)]
    return _windows(cfg, n, pattern, w)


def _qwen2(cfg: Config) -> dict:
    """Qwen2: biases on q/k/v only; sliding window only if ``use_sliding_window`` (:func:`_qwen_windows`)."""
    return _llama_like(cfg, qkv_bias=True, o_bias=False, windows=_qwen_windows(cfg))


def _qwen3(cfg: Config) -> dict:
    """Qwen3: per-head RMSNorm on queries and keys (q_norm, k_norm of size head_dim)."""
    return _llama_like(cfg, qk_norm="head", windows=_qwen_windows(cfg))


def _olmo2(cfg: Config) -> dict:
    """OLMo-2: RMSNorm over all of q (heads x head_dim) and k; norms after attention and MLP."""
    return _llama_like(cfg, qk_norm="full", windows=[None] * cfg.need("num_hidden_layers"))


def _olmo3(cfg: Config) -> dict:
    """OLMo 3: OLMo-2's layer (full q/k norms, norms after attention and MLP) with 3 sliding : 1 full layers
    from ``layer_types``."""
    return _llama_like(cfg, qk_norm="full")


def _phi3(cfg: Config) -> dict:
    """Phi-3: fused qkv_proj and gate_up_proj (same counts as Llama); sliding window on every layer."""
    spec = _llama_like(cfg)
    h, i = spec["hidden_size"], spec["intermediate_size"]
    a, kv, d = spec["num_heads"], spec["num_kv_heads"], spec["head_dim"]
    fused = (
        Linear(name="qkv_proj", in_features=h, out_features=(a + 2 * kv) * d),
        Linear(name="o_proj", in_features=a * d, out_features=h),
        Linear(name="gate_up_proj", in_features=h, out_features=2 * i, group="mlp"),
        Linear(name="down_proj", in_features=i, out_features=h, group="mlp"),
    )
    spec["layers"] = [Layer(attention=lay.attention, window=lay.window, linears=fused, norm_params=lay.norm_params,
                            kv_dims=lay.kv_dims) for lay in spec["layers"]]
    return spec


def _gemma(cfg: Config) -> dict:
    """Gemma 1: head_dim 256 from the config, GeGLU MLP, tied embeddings."""
    return _llama_like(cfg, windows=[None] * cfg.need("num_hidden_layers")) | {"tie_default": True}


def _gemma2(cfg: Config) -> dict:
    """Gemma 2: four RMSNorms per layer; even layers (0, 2, ...) use the sliding window."""
    n = cfg.need("num_hidden_layers")
    pattern = ["sliding_attention" if (k + 1) % 2 else "full_attention" for k in range(n)]
    return _llama_like(cfg, norms=4, windows=_windows(cfg, n, pattern, cfg.get("sliding_window"))) | {
        "tie_default": True}


def _gemma3(cfg: Config) -> dict:
    """Gemma 3: settings in ``text_config``; 5 local : 1 global layers; q/k norms; SigLIP vision tower.

    Google's multimodal config.json files name only the keys that differ from transformers' ``Gemma3TextConfig``
    defaults (gemma-3-4b-it names no head counts), so those defaults fill the gaps: vocabulary 262,208, 8 heads,
    4 KV heads, head_dim 256 (transformers ``models/gemma3/configuration_gemma3.py``, ``Gemma3TextConfig``)."""
    defaults = {"vocab_size": 262_208, "num_attention_heads": 8, "num_key_value_heads": 4, "head_dim": 256}
    text = Config(defaults | cfg.get("text_config", default=cfg.data))
    n = text.need("num_hidden_layers")
    every = text.get("sliding_window_pattern", default=6)
    pattern = ["sliding_attention" if (k + 1) % every else "full_attention" for k in range(n)]
    spec = _llama_like(text, norms=4, qk_norm="head",
                       windows=_windows(text, n, pattern, text.get("sliding_window", default=4096)))
    vision = cfg.get("vision_config")
    if vision and cfg.get("text_config"):
        spec["vision_params"] = _siglip_params(Config(vision)) + _gemma3_projector_params(Config(vision), spec)
        spec["tower_linears"] = _siglip_linears(Config(vision))  # the projector is a Parameter, not a Linear
    # transformers' Gemma3TextConfig default when text_config omits it (the 27B's config.json does)
    return spec | {"tie_default": True, "max_context": text.get("max_position_embeddings", default=131_072)}


def _siglip_params(v: Config) -> int:
    """SigLIP vision encoder (transformers SiglipVisionModel): patch conv, positions, pre-LN ViT layers."""
    hv, iv, n = v.get("hidden_size", default=768), v.get("intermediate_size", default=3072), \
        v.get("num_hidden_layers", default=12)
    p, img, ch = v.get("patch_size", default=16), v.get("image_size", default=224), v.get("num_channels", default=3)
    patches = (img // p) ** 2
    per_layer = 4 * (hv * hv + hv) + 2 * _layernorm(hv) + (hv * iv + iv) + (iv * hv + hv)
    total = ch * p * p * hv + hv + patches * hv + n * per_layer + _layernorm(hv)
    if v.get("vision_use_head", default=True):  # pooling head: probe, attention, LayerNorm, MLP
        total += hv + (3 * hv * hv + 3 * hv) + (hv * hv + hv) + _layernorm(hv) + (hv * iv + iv) + (iv * hv + hv)
    return total


def _siglip_linears(v: Config) -> tuple[Linear, ...]:
    """The plain linears of SigLIP's encoder layers (transformers ``models/siglip/modeling_siglip.py``:
    ``SiglipAttention`` q/k/v/out_proj, ``SiglipMLP`` fc1/fc2), ``count`` = its layers; the patch embedding is a
    Conv2d, and the pooling head (``vision_use_head``) an ``nn.MultiheadAttention`` whose out_proj peft's all-linear
    wraps too, with its MLP's fc1/fc2."""
    hv, iv, n = v.get("hidden_size", default=768), v.get("intermediate_size", default=3072), \
        v.get("num_hidden_layers", default=12)
    out = [Linear(name=name, in_features=hv, out_features=hv, bias=True, count=n)
           for name in ("q_proj", "k_proj", "v_proj", "out_proj")]
    out += [Linear(name="fc1", in_features=hv, out_features=iv, bias=True, count=n, group="mlp"),
            Linear(name="fc2", in_features=iv, out_features=hv, bias=True, count=n, group="mlp")]
    if v.get("vision_use_head", default=True):
        out += [Linear(name="out_proj", in_features=hv, out_features=hv, bias=True),
                Linear(name="fc1", in_features=hv, out_features=iv, bias=True, group="mlp"),
                Linear(name="fc2", in_features=iv, out_features=hv, bias=True, group="mlp")]
    return tuple(out)


def _gemma3_projector_params(v: Config, text: dict) -> int:
    hv = v.get("hidden_size", default=768)
    return hv * text["hidden_size"] + _rms(hv)


def _mixtral(cfg: Config) -> dict:
    """Mixtral: every MLP is ``num_local_experts`` SwiGLU experts behind a bias-free router, top-k."""
    spec = _llama_like(cfg)
    h = spec["hidden_size"]
    E, k = cfg.need("num_local_experts"), cfg.need("num_experts_per_tok")
    i = spec["intermediate_size"]
    moe = (Linear(name="gate", in_features=h, out_features=E, group="router", adaptable=False),
           *_gated_mlp(h, i, group="experts", count=E, names=("w1", "w3", "w2")))
    spec["layers"] = [_with_mlp(lay, moe, k) for lay in spec["layers"]]
    return spec | {"num_experts": E, "experts_per_token": k}


def _with_mlp(layer: Layer, mlp: tuple[Linear, ...], top_k: int, sinks: int = 0) -> Layer:
    attn = tuple(lin for lin in layer.linears if lin.group == "attention")
    return Layer(attention=layer.attention, window=layer.window, moe=True, linears=attn + mlp,
                 norm_params=layer.norm_params, attention_extra=sinks, kv_dims=layer.kv_dims,
                 experts_per_token=top_k)


def _qwen_moe(cfg: Config, base: Callable[[Config], dict]) -> dict:
    """Qwen2-MoE / Qwen3-MoE: expert layers every ``decoder_sparse_step`` except ``mlp_only_layers``;
    Qwen2-MoE adds a shared expert with a sigmoid gate."""
    spec = base(cfg)
    h = spec["hidden_size"]
    E, k = cfg.need("num_experts", "num_local_experts"), cfg.need("num_experts_per_tok")
    i = cfg.need("moe_intermediate_size")
    step, dense_only = cfg.get("decoder_sparse_step", default=1), set(cfg.get("mlp_only_layers", default=[]))
    moe = [Linear(name="gate", in_features=h, out_features=E, group="router", adaptable=False),
           *_gated_mlp(h, i, group="experts", count=E)]
    shared = cfg.get("shared_expert_intermediate_size")
    if shared:
        moe += [*_gated_mlp(h, shared, group="shared_experts"),
                Linear(name="shared_expert_gate", in_features=h, out_features=1, group="router")]
    spec["layers"] = [
        _with_mlp(lay, tuple(moe), k) if (n not in dense_only and E > 0 and (n + 1) % step == 0) else lay
        for n, lay in enumerate(spec["layers"])
    ]
    return spec | {"num_experts": E, "experts_per_token": k}


def _deepseek_v3(cfg: Config) -> dict:
    """DeepSeek-V3/R1: multi-head latent attention (low-rank q and kv with a shared RoPE key), the first
    ``first_k_dense_replace`` layers dense, then routed experts + shared experts. The multi-token
    prediction layer (``num_nextn_predict_layers``) is in the checkpoint but not in transformers' model, and
    the router's ``e_score_correction_bias`` is a buffer there, not a parameter."""
    h, n, V = cfg.need("hidden_size"), cfg.need("num_hidden_layers"), cfg.need("vocab_size")
    a = cfg.need("num_attention_heads")
    q_rank, kv_rank = cfg.get("q_lora_rank"), cfg.need("kv_lora_rank")
    nope, rope, vd = cfg.need("qk_nope_head_dim"), cfg.need("qk_rope_head_dim"), cfg.need("v_head_dim")
    bias = bool(cfg.get("attention_bias", default=False))
    qd = nope + rope
    if q_rank:
        q = (Linear(name="q_a_proj", in_features=h, out_features=q_rank, bias=bias),
             Linear(name="q_b_proj", in_features=q_rank, out_features=a * qd))
    else:
        q = (Linear(name="q_proj", in_features=h, out_features=a * qd),)
    attn = (
        *q,
        Linear(name="kv_a_proj_with_mqa", in_features=h, out_features=kv_rank + rope, bias=bias),
        Linear(name="kv_b_proj", in_features=kv_rank, out_features=a * (nope + vd)),
        Linear(name="o_proj", in_features=a * vd, out_features=h, bias=bias),
    )
    norms = 2 * h + (q_rank or 0) + kv_rank
    E, k = cfg.get("n_routed_experts"), cfg.get("num_experts_per_tok")
    i, mi = cfg.need("intermediate_size"), cfg.get("moe_intermediate_size")
    first_dense, freq = cfg.get("first_k_dense_replace", default=0), cfg.get("moe_layer_freq", default=1)
    shared = cfg.get("n_shared_experts") or 0
    layers = []
    for idx in range(n):
        if E and idx >= first_dense and idx % freq == 0:
            mlp = (Linear(name="gate", in_features=h, out_features=E, group="router", adaptable=False),
                   *_gated_mlp(h, mi, group="experts", count=E))
            if shared:
                mlp += _gated_mlp(h, mi * shared, group="shared_experts")
            layers.append(Layer(attention="mla", moe=True, linears=attn + mlp, norm_params=norms,
                                kv_dims=kv_rank + rope, experts_per_token=k))
        else:
            layers.append(Layer(attention="mla", linears=attn + _gated_mlp(h, i), norm_params=norms,
                                kv_dims=kv_rank + rope))
    return dict(vocab_size=V, hidden_size=h, num_heads=a, num_kv_heads=a, head_dim=qd, intermediate_size=i,
                layers=layers, final_norm_params=h, gated_mlp=True, num_experts=E or 0, experts_per_token=k or 0,
                mla=dict(q_lora_rank=q_rank, kv_lora_rank=kv_rank, qk_nope_head_dim=nope, qk_rope_head_dim=rope,
                         v_head_dim=vd))


def _gpt_oss(cfg: Config) -> dict:
    """gpt-oss: biased attention with per-head sinks, alternating 128-token sliding / full layers, and
    experts stored fused (gate_up_proj: h -> 2i) with biases, behind a biased router."""
    spec = _llama_like(cfg, qkv_bias=True, o_bias=True)
    h, a = spec["hidden_size"], spec["num_heads"]
    E = cfg.need("num_local_experts")
    k = cfg.get("num_experts_per_tok", "experts_per_token")
    i = spec["intermediate_size"]
    moe = (Linear(name="router", in_features=h, out_features=E, bias=True, group="router", adaptable=False),
           Linear(name="gate_up_proj", in_features=h, out_features=2 * i, bias=True, group="experts", count=E,
                  adaptable=False),
           Linear(name="down_proj", in_features=i, out_features=h, bias=True, group="experts", count=E,
                  adaptable=False))
    spec["layers"] = [_with_mlp(lay, moe, k, sinks=a) for lay in spec["layers"]]
    return spec | {"num_experts": E, "experts_per_token": k}


def _cohere(cfg: Config) -> dict:
    """Command-R: one bias-free LayerNorm per layer (attention and MLP in parallel), tied embeddings."""
    qk = "full" if cfg.get("use_qk_norm", default=False) else "none"
    spec = _llama_like(cfg, norms=1, qk_norm=qk, windows=[None] * cfg.need("num_hidden_layers"))
    return spec | {"tie_default": True, "parallel_residual": True}


def _gpt_neox(cfg: Config) -> dict:
    """GPT-NeoX: fused biased query_key_value, GELU MLP with biases, LayerNorms with bias, parallel residual."""
    h, n, V = cfg.need("hidden_size"), cfg.need("num_hidden_layers"), cfg.need("vocab_size")
    a, i = cfg.need("num_attention_heads"), cfg.get("intermediate_size", default=4 * cfg.need("hidden_size"))
    linears = (
        Linear(name="query_key_value", in_features=h, out_features=3 * h, bias=True),
        Linear(name="dense", in_features=h, out_features=h, bias=True),
        Linear(name="dense_h_to_4h", in_features=h, out_features=i, bias=True, group="mlp"),
        Linear(name="dense_4h_to_h", in_features=i, out_features=h, bias=True, group="mlp"),
    )
    layers = [Layer(attention="full", linears=linears, norm_params=2 * _layernorm(h), kv_dims=2 * h)] * n
    return dict(vocab_size=V, hidden_size=h, num_heads=a, num_kv_heads=a, head_dim=h // a, intermediate_size=i,
                layers=layers, final_norm_params=_layernorm(h),
                parallel_residual=bool(cfg.get("use_parallel_residual", default=True)))


def _gpt2(cfg: Config) -> dict:
    """GPT-2: learned positions, Conv1D projections with biases, LayerNorms with bias, tied head."""
    h, n, V = cfg.need("n_embd", "hidden_size"), cfg.need("n_layer", "num_hidden_layers"), cfg.need("vocab_size")
    a = cfg.need("n_head", "num_attention_heads")
    i = cfg.get("n_inner", default=4 * h)
    positions = cfg.get("n_positions", "max_position_embeddings", default=1024)
    linears = (
        Linear(name="c_attn", in_features=h, out_features=3 * h, bias=True),
        Linear(name="c_proj", in_features=h, out_features=h, bias=True),
        Linear(name="c_fc", in_features=h, out_features=i, bias=True, group="mlp"),
        Linear(name="mlp.c_proj", in_features=i, out_features=h, bias=True, group="mlp"),
    )
    layers = [Layer(attention="full", linears=linears, norm_params=2 * _layernorm(h), kv_dims=2 * h)] * n
    return dict(vocab_size=V, hidden_size=h, num_heads=a, num_kv_heads=a, head_dim=h // a, intermediate_size=i,
                layers=layers, final_norm_params=_layernorm(h), position_params=positions * h,
                tie_default=True, max_context=positions)


def _nanogpt(cfg: Config) -> dict:
    """nanoGPT's ``GPT`` (karpathy/nanoGPT ``model.py``, ``GPTConfig``): GPT-2's block (fused ``c_attn``, a GELU
    MLP four times as wide, LayerNorms before attention and MLP, a final ``ln_f``), learned positions for
    ``block_size`` tokens and the head tied to ``wte`` (``self.transformer.wte.weight = self.lm_head.weight``);
    ``bias: false`` drops every linear's and LayerNorm's bias (its ``LayerNorm(ndim, bias)``)."""
    h, n, V = cfg.need("n_embd"), cfg.need("n_layer"), cfg.need("vocab_size")
    a, positions = cfg.need("n_head"), cfg.need("block_size")
    bias = bool(cfg.get("bias", default=True))
    norm = _layernorm(h) if bias else h
    linears = (
        Linear(name="c_attn", in_features=h, out_features=3 * h, bias=bias),
        Linear(name="c_proj", in_features=h, out_features=h, bias=bias),
        Linear(name="c_fc", in_features=h, out_features=4 * h, bias=bias, group="mlp"),
        Linear(name="mlp.c_proj", in_features=4 * h, out_features=h, bias=bias, group="mlp"),
    )
    layers = [Layer(attention="full", linears=linears, norm_params=2 * norm, kv_dims=2 * h)] * n
    return dict(vocab_size=V, hidden_size=h, num_heads=a, num_kv_heads=a, head_dim=h // a, intermediate_size=4 * h,
                layers=layers, final_norm_params=norm, position_params=positions * h, tie_default=True,
                gated_mlp=False, max_context=positions)


def _bloom(cfg: Config) -> dict:
    """BLOOM: ALiBi (no position table), a LayerNorm right after the embeddings, GELU MLP, tied head."""
    h, n, V = cfg.need("hidden_size", "n_embed"), cfg.need("n_layer", "num_hidden_layers"), cfg.need("vocab_size")
    a = cfg.need("n_head", "num_attention_heads")
    linears = (
        Linear(name="query_key_value", in_features=h, out_features=3 * h, bias=True),
        Linear(name="dense", in_features=h, out_features=h, bias=True),
        Linear(name="dense_h_to_4h", in_features=h, out_features=4 * h, bias=True, group="mlp"),
        Linear(name="dense_4h_to_h", in_features=4 * h, out_features=h, bias=True, group="mlp"),
    )
    layers = [Layer(attention="full", linears=linears, norm_params=2 * _layernorm(h), kv_dims=2 * h)] * n
    return dict(vocab_size=V, hidden_size=h, num_heads=a, num_kv_heads=a, head_dim=h // a, intermediate_size=4 * h,
                layers=layers, final_norm_params=2 * _layernorm(h), tie_default=True,
                max_context=cfg.get("seq_length"))


def _falcon(cfg: Config) -> dict:
    """Falcon (native and legacy RefinedWeb keys): fused query_key_value sized for multi-query or grouped
    KV heads, parallel attention and MLP, LayerNorms with bias, tied head."""
    h, n, V = cfg.need("hidden_size"), cfg.need("num_hidden_layers", "n_layer"), cfg.need("vocab_size")
    a = cfg.need("num_attention_heads", "n_head")
    legacy_new = cfg.get("model_type") == "RefinedWeb" or cfg.get("n_head_kv") is not None
    new_arch = bool(cfg.get("new_decoder_architecture", default=legacy_new))
    d = cfg.get("head_dim") or h // a  # 0 in some configs means "derive it"
    if new_arch:
        kv = cfg.need("num_kv_heads", "n_head_kv")
    elif cfg.get("multi_query", default=True):
        kv = 1
    else:
        kv = a
    bias = bool(cfg.get("bias", default=False))
    i = cfg.get("ffn_hidden_size", default=4 * h)
    linears = (
        Linear(name="query_key_value", in_features=h, out_features=(a + 2 * kv) * d, bias=bias),
        Linear(name="dense", in_features=a * d, out_features=h, bias=bias),
        Linear(name="dense_h_to_4h", in_features=h, out_features=i, bias=bias, group="mlp"),
        Linear(name="dense_4h_to_h", in_features=i, out_features=h, bias=bias, group="mlp"),
    )
    parallel = bool(cfg.get("parallel_attn", default=True))
    # new architecture: ln_attn + ln_mlp; old: input_layernorm (+ post_attention_layernorm if sequential)
    norms = cfg.get("num_ln_in_parallel_attn", default=2) if new_arch else (1 if parallel else 2)
    layers = [Layer(attention="full", linears=linears, norm_params=norms * _layernorm(h), kv_dims=2 * kv * d)] * n
    return dict(vocab_size=V, hidden_size=h, num_heads=a, num_kv_heads=kv, head_dim=d, intermediate_size=i,
                layers=layers, final_norm_params=_layernorm(h), tie_default=True, parallel_residual=parallel,
                max_context=cfg.get("max_position_embeddings", default=2048))


def _opt(cfg: Config) -> dict:
    """OPT: learned positions with an offset of 2, biased projections, ReLU MLP, optional in/out projection
    when ``word_embed_proj_dim`` differs from ``hidden_size``, tied head."""
    h, n, V = cfg.need("hidden_size"), cfg.need("num_hidden_layers"), cfg.need("vocab_size")
    a, i = cfg.need("num_attention_heads"), cfg.need("ffn_dim")
    bias = bool(cfg.get("enable_bias", default=True))
    proj = cfg.get("word_embed_proj_dim", default=h)
    positions = cfg.get("max_position_embeddings", default=2048)
    affine = _layernorm(h) if cfg.get("layer_norm_elementwise_affine", default=True) else 0
    linears = (*_attention(h, a, a, h // a, qkv_bias=bias, o_bias=bias),
               Linear(name="fc1", in_features=h, out_features=i, bias=bias, group="mlp"),
               Linear(name="fc2", in_features=i, out_features=h, bias=bias, group="mlp"))
    layers = [Layer(attention="full", linears=linears, norm_params=2 * affine, kv_dims=2 * h)] * n
    final = affine if cfg.get("do_layer_norm_before", default=True) and not cfg.get(
        "_remove_final_layer_norm", default=False) else 0
    return dict(vocab_size=V, hidden_size=h, num_heads=a, num_kv_heads=a, head_dim=h // a, intermediate_size=i,
                layers=layers, final_norm_params=final, tie_default=True, embedding_dim=proj,
                position_params=(positions + 2) * h, projection_params=2 * proj * h if proj != h else 0,
                gated_mlp=False, max_context=positions)


READERS: dict[str, Callable[[Config], dict]] = {
    "llama": _llama,
    "mistral": _mistral,
    "mixtral": _mixtral,
    "qwen2": _qwen2,
    "qwen2_moe": lambda c: _qwen_moe(c, _qwen2),
    "qwen3": _qwen3,
    "qwen3_moe": lambda c: _qwen_moe(c, _qwen3),
    "gemma": _gemma,
    "gemma2": _gemma2,
    "gemma3": _gemma3,
    "gemma3_text": _gemma3,
    "phi3": _phi3,
    "deepseek_v3": _deepseek_v3,
    "kimi_k2": _deepseek_v3,  # Kimi K2 ships DeepseekV3ForCausalLM under its own model_type
    "gpt_neox": _gpt_neox,
    "gpt2": _gpt2,
    "nanogpt": _nanogpt,
    "bloom": _bloom,
    "falcon": _falcon,
    "RefinedWeb": _falcon,
    "RefinedWebModel": _falcon,
    "opt": _opt,
    "olmo2": _olmo2,
    "olmo3": _olmo3,
    "cohere": _cohere,
    "gpt_oss": _gpt_oss,
}
