"""GGUF files as llama.cpp's quantize tool writes them: a type per tensor, not one bits-per-weight per file type.

``llama-quantize`` picks each tensor's type from the file type (ftype), the tensor's role and its layer
(``src/llama-quant.cpp`` ``llama_tensor_get_type_impl``, read at ggml-org/llama.cpp@007dbbf3):

- the ftype's default type (``llama_ftype_get_default_type``: Q4_K_M -> Q4_K, Q3_K_L -> Q3_K, IQ4_XS -> IQ4_XS...);
- ``output.weight`` (and a tied token embedding) Q6_K, Q8_0 where the default is Q8_0 or the row length is not
  a multiple of the block, Q5_K for the 1-2 bit IQ types; the token embedding keeps the default type;
- ``attn_v`` (and fused ``attn_qkv`` / MLA ``attn_kv_b``) more bits where few heads share it: Q4_K_M and Q5_K_M
  give Q6_K to the layers ``use_more_bits`` picks (the first and last eighth, and every third between),
  Q3_K_M Q5_K to the first two and Q4_K after, Q3_K_L Q5_K, Q2_K Q4_K with 4+ query heads per KV head,
  Q4_K_S Q5_K to the first four; 70B Llamas Q5_K in place of Q3_K/Q4_K; 8-expert models Q8_0 (also ``attn_k``);
- ``ffn_down`` likewise by layer: Q4_K_M / Q5_K_M Q6_K where ``use_more_bits``, Q4_K_S Q5_K in the first eighth,
  Q3_K_M Q5_K in the first sixteenth and Q4_K after, Q3_K_L Q5_K, Q2_K Q3_K;
- ``attn_output``: Q2_K -> Q3_K, Q3_K_M -> Q4_K, Q3_K_L -> Q5_K (8-expert models Q5_K for most ftypes);
- norms, biases, routers (``ffn_gate_inp``) and other 1-D tensors stay F32;
- a tensor whose rows are not a multiple of the chosen type's block falls back (``tensor_type_fallback``):
  Q4_K -> Q5_0, Q5_K -> Q5_1, Q6_K -> Q8_0, Q2_K/Q3_K -> Q4_0, IQ* -> IQ4_NL, and F16 if even that does not fit.

Files are quantized without an importance matrix (``llama-quantize`` without ``--imatrix``, which changes a few
rules for IQ types and Q4_0/Q5_0). Block sizes (``ggml/src/ggml-common.h`` block structs) and the file types' default
types are in :mod:`gpuplan.model.quant` (``BLOCKS``, ``FTYPES``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

from .layers import Layer, Linear
from .quant import BLOCKS, FTYPES


class Checkpoint(Protocol):
    """What the GGUF rules read of a model (a :class:`~gpuplan.model.spec.ModelSpec`): its family and shape, its
    decoder layers, its embedding and output head."""

    family: str
    num_layers: int
    num_heads: int
    num_kv_heads: int
    num_experts: int
    vocab_size: int
    embedding_dim: int
    position_params: int
    projection_params: int
    layers: list[Layer]
    lm_head: Any
    quantization: dict[str, Any] | None

    @property
    def is_moe(self) -> bool: ...

    def params_breakdown(self) -> dict[str, int]: ...

PURE = frozenset({"q3_k", "q4_k", "q5_k"})
_LOW_IQ = {"iq2_xxs", "iq2_xs", "iq1_s", "iq2_s", "iq2_m", "iq1_m"}
_FALLBACK = {"iq1_s": "iq4_nl", "iq1_m": "iq4_nl", "iq2_xxs": "iq4_nl", "iq2_xs": "iq4_nl", "iq2_s": "iq4_nl",
             "iq3_xxs": "iq4_nl", "iq3_s": "iq4_nl", "iq4_xs": "iq4_nl", "q2_k": "q4_0", "q3_k": "q4_0",
             "q4_k": "q5_0", "q5_k": "q5_1", "q6_k": "q8_0"}

# gpuplan linear names -> GGUF tensor categories (llama.cpp's tensor_get_category)
_CATEGORY = {
    "q_proj": "attn_q", "k_proj": "attn_k", "v_proj": "attn_v",
    "o_proj": "attn_output", "dense": "attn_output", "c_proj": "attn_output", "qkv_proj": "attn_qkv",
    "query_key_value": "attn_qkv", "c_attn": "attn_qkv", "kv_b_proj": "attn_kv_b", "kv_a_proj_with_mqa": "other",
    "gate_proj": "ffn_gate", "w1": "ffn_gate", "up_proj": "ffn_up", "w3": "ffn_up", "gate_up_proj": "ffn_up",
    "c_fc": "ffn_up", "dense_h_to_4h": "ffn_up", "down_proj": "ffn_down", "w2": "ffn_down",
    "dense_4h_to_h": "ffn_down", "mlp.c_proj": "ffn_down",
}


def type_bytes(kind: str, elements: float) -> float:
    """Bytes of ``elements`` weights stored as ggml type ``kind``."""
    per, size = BLOCKS[kind]
    return elements / per * size


def _use_more_bits(i: int, n: int) -> bool:
    """llama-quant.cpp ``use_more_bits``: the first and last eighth of the layers and every third between."""
    return i < n // 8 or i >= 7 * n // 8 or (i - n // 8) % 3 == 2


def fallback(kind: str, ncols: int) -> str:
    """``tensor_type_fallback``: a compatible type for rows of ``ncols`` that are not a multiple of the block."""
    if ncols % BLOCKS[kind][0] == 0:
        return kind
    kind = _FALLBACK.get(kind, "f16")
    return kind if ncols % BLOCKS[kind][0] == 0 else "f16"


@dataclass(frozen=True, kw_only=True)
class Model:
    """What the rules read from the model: its family, layer count, query heads per KV head, experts."""

    family: str
    num_layers: int
    n_gqa: float
    n_expert: int

    @property
    def is_70b_llama(self) -> bool:  # llama.cpp's LLM_TYPE_70B: an 80-layer Llama with grouped-query attention
        return self.family == "llama" and self.num_layers == 80 and self.n_gqa > 1


def output_type(ftype: str, ncols: int, family: str) -> str:
    """``output.weight`` (and a tied token embedding)."""
    default = FTYPES[ftype]
    if ftype in PURE:
        return fallback(default, ncols)
    if ftype == "mxfp4_moe" or family == "falcon" or ncols % BLOCKS[default][0]:
        return "q8_0"
    if ftype in _LOW_IQ:
        return "q5_k"
    return default if default == "q8_0" else "q6_k"


def token_embedding_type(ftype: str) -> str:
    """``token_embd.weight`` when the output is a tensor of its own (MXFP4_MOE: Q8_0, as every tensor but the
    3-D expert stacks; ggml-org's gpt-oss-20b and -120b GGUFs weigh 11.27 and 59.02 GiB in llama-bench's size
    column, ggml-org/llama.cpp PRs #16991 and #19922, which these rules give to the hundredth)."""
    if ftype in PURE:
        return FTYPES[ftype]
    if ftype == "mxfp4_moe":
        return "q8_0"
    if ftype in ("iq2_xxs", "iq2_xs", "iq1_s", "iq1_m"):
        return "q2_k"
    if ftype in ("iq2_s", "iq2_m", "iq3_xxs"):
        return "iq3_s"
    return FTYPES[ftype]


def layer_type(ftype: str, category: str, i: int, m: Model, *, i_wv: int, n_wv: int) -> str:
    """The type of one decoder tensor of ``category`` in layer ``i`` (``i_wv``-th of ``n_wv`` attn_v tensors)."""
    t = FTYPES[ftype]
    if ftype in PURE:
        return t
    n, gqa, e = m.num_layers, m.n_gqa, m.n_expert
    attn_v = category in ("attn_v", "attn_qkv", "attn_kv_b")
    if ftype == "mxfp4_moe":
        return "mxfp4" if e > 1 and category in ("ffn_up", "ffn_gate", "ffn_down") else "q8_0"
    if ftype in _LOW_IQ:
        iq3 = ftype in ("iq2_s", "iq2_m")
        if attn_v:
            return "q4_k" if gqa >= 4 or e >= 4 else ("iq3_s" if iq3 else "q2_k")
        if e == 8 and category == "attn_k":
            return "q4_k"
        if category == "ffn_down":
            return ("iq3_s" if iq3 else "q2_k") if i < n // 8 else t
        if category == "attn_output":
            if e == 8:
                return "q5_k"
            return "iq2_xxs" if ftype in ("iq1_s", "iq1_m") else ("iq3_s" if iq3 else t)
        return t
    if attn_v:
        return _value_type(ftype, t, m, i_wv=i_wv, n_wv=n_wv)
    if category == "attn_k":
        if e == 8:
            return "q8_0"
        return {"iq3_xs": "iq3_xxs", "iq3_xxs": "iq2_s"}.get(ftype, t)
    if category == "attn_q":
        return {"iq3_xs": "iq3_xxs", "iq3_xxs": "iq2_s"}.get(ftype, t)
    if category == "ffn_down":
        return _ffn_down_type(ftype, t, m, i)
    if category == "attn_output":
        if m.family == "falcon":
            return "q4_k" if ftype == "q3_k_l" else t
        if e == 8:
            few = {"q2_k", "iq3_xs", "iq3_xxs", "q3_k_s", "q3_k_m", "iq4_nl", "q4_k_s", "q4_k_m", "iq3_s", "iq3_m",
                   "iq4_xs"}
            return "q5_k" if ftype in few else t
        return {"q2_k": "q3_k", "iq3_xxs": "iq3_s", "q3_k_m": "q4_k", "q3_k_l": "q5_k", "iq3_m": "q4_k"}.get(ftype, t)
    if category in ("ffn_gate", "ffn_up") and ftype == "iq3_xs" and n // 8 <= i < 7 * n // 8:
        return "iq3_xxs"
    return t


def _value_type(ftype: str, t: str, m: Model, *, i_wv: int, n_wv: int) -> str:
    """The type of the ``i_wv``-th of ``n_wv`` attention value tensors (llama.cpp gives V more bits: its error
    costs the most), ``t`` the file type's default."""
    gqa = m.n_gqa
    if ftype == "q2_k":
        t = "q4_k" if gqa >= 4 else "q3_k"
    elif ftype == "q2_k_s" and gqa >= 4:
        t = "q4_k"
    elif ftype == "iq3_xxs":
        t = "q4_k" if gqa >= 4 else "iq3_s"
    elif (ftype in ("iq3_xs", "iq3_s") and gqa >= 4) or ftype == "iq3_m":
        t = "q4_k"
    elif ftype == "q3_k_m":
        t = "q5_k" if i_wv < 2 else "q4_k"
    elif ftype == "q3_k_l" or (ftype in ("iq4_nl", "iq4_xs") and gqa >= 4):
        t = "q5_k"
    elif ftype in ("q4_k_m", "q5_k_m") and _use_more_bits(i_wv, n_wv):
        t = "q6_k"
    elif ftype == "q4_k_s" and i_wv < 4:
        t = "q5_k"
    if m.is_70b_llama and t in ("q3_k", "q4_k"):
        t = "q5_k"
    return "q8_0" if m.n_expert == 8 else t


def _ffn_down_type(ftype: str, t: str, m: Model, i: int) -> str:
    """The type of layer ``i``'s ffn_down tensor (more bits in some layers: the first sixteenth or eighth, and
    :func:`_use_more_bits`'s), ``t`` the file type's default."""
    n, e, falcon = m.num_layers, m.n_expert, m.family == "falcon"
    if ftype == "q2_k":
        return "q3_k"
    if ftype == "q2_k_s":
        return "q4_k" if i < n // 8 else t
    if ftype == "iq3_xxs":
        return "q4_k" if i < n // 8 else "q3_k"
    if ftype == "q3_k_m":
        return "q5_k" if i < n // 16 else ("q4_k" if not falcon or _use_more_bits(i, n) else "q3_k")
    if ftype == "iq3_m" and (i < n // 8 or (e == 8 and _use_more_bits(i, n))):
        return "q4_k"
    if ftype == "q3_k_l":
        return "q4_k" if falcon else "q5_k"
    if ftype == "q4_k_m":
        if falcon:
            return "q6_k" if i < n // 16 else ("q5_k" if _use_more_bits(i, n) else "q4_k")
        return "q6_k" if _use_more_bits(i, n) else t
    if i < n // 8 and ftype in ("iq4_nl", "iq4_xs"):
        return "q5_k"
    if ftype == "q5_k_m" and _use_more_bits(i, n):
        return "q6_k"
    if ftype == "q4_k_s" and not falcon and i < n // 8:
        return "q5_k"
    return t


def _linear_category(lin: Linear) -> str:
    if lin.group == "router":
        return "router"
    return _CATEGORY.get(lin.name, "other")


def tensor_types(m: Checkpoint, ftype: str) -> list[tuple[str, int, Linear, str]]:
    """(category, layer, linear, ggml type) for every decoder linear of ``m`` in a ``ftype`` GGUF."""
    rules = Model(family=m.family, num_layers=m.num_layers, n_gqa=m.num_heads / max(m.num_kv_heads, 1),
                  n_expert=m.num_experts if m.is_moe else 0)
    n_wv = sum(1 for layer in m.layers for lin in layer.linears
               if _linear_category(lin) in ("attn_v", "attn_qkv", "attn_kv_b"))
    out, i_wv = [], 0
    for i, layer in enumerate(m.layers):
        for lin in layer.linears:
            cat = _linear_category(lin)
            if cat == "router":
                out.append((cat, i, lin, "f32"))
                continue
            if FTYPES[ftype] in ("f32", "f16", "bf16"):
                kind = converted_type(m, lin, FTYPES[ftype])
            else:
                kind = fallback(layer_type(ftype, cat, i, rules, i_wv=i_wv, n_wv=n_wv), lin.in_features)
            if cat in ("attn_v", "attn_qkv", "attn_kv_b"):
                i_wv += 1
            out.append((cat, i, lin, kind))
    return out


def converted_type(m: Checkpoint, lin: Linear, plain: str) -> str:
    """The type ``convert_hf_to_gguf.py`` writes one linear in when its output type is ``plain`` (f32/f16/bf16):
    ``plain``, but the routed experts of a checkpoint shipped in MXFP4 (``quant_method: mxfp4``, gpt-oss) are copied
    as they are, GGML_TYPE_MXFP4 blocks of 32 E2M1 values and one E8M0 scale, 17 bytes (ggml-org/llama.cpp
    ``conversion/gpt_oss.py`` ``GptOssModel.repack_mxfp4``: ``raw_dtype=gguf.GGMLQuantizationType.MXFP4``; the
    attention, router, embeddings and output follow the output type)."""
    method = str((m.quantization or {}).get("quant_method", "")).lower()
    return "mxfp4" if method == "mxfp4" and lin.group == "experts" else plain


def _embedding_type(m: Checkpoint, ftype: str) -> str:
    """The type of ``token_embd`` and of Gemma 3n/4's ``per_layer_token_embd``: both are llama-quant.cpp's
    TOKEN_EMBD category (``tensor_name_match_token_embd``), which a tied model quantizes as its output."""
    if FTYPES[ftype] in ("f32", "f16", "bf16"):
        return FTYPES[ftype]
    if m.lm_head is None:  # tied: the token embedding takes the output's type
        return output_type(ftype, m.embedding_dim, m.family)
    return fallback(token_embedding_type(ftype), m.embedding_dim)


def per_token_table_params(m: Checkpoint) -> int:
    """Parameters of the embedding tables beside the token embedding that hold a row per token (Gemma 3n/4's
    ``embed_tokens_per_layer``, ``per_layer_token_embd`` in a GGUF). A structure traced off transformers counts
    every ``nn.Embedding`` but the token embedding in ``position_params`` (:mod:`gpuplan.model.meta_layers`); a table
    of whole vocabulary rows is a per-token table, learned positions have a row per position."""
    extra = m.position_params
    return extra if extra and m.vocab_size and extra % m.vocab_size == 0 else 0


def token_embedding_bytes(m: Checkpoint, ftype: str) -> float:
    """Bytes of ``token_embd`` alone (``vocab x n_embd``): what a tied output matmul reads each step, and the GPU's
    duplicate of it (``TENSOR_DUPLICATED``); the per-layer tables beside it are only looked up (``get_rows``)."""
    return type_bytes(_embedding_type(m, ftype), m.vocab_size * m.embedding_dim)


def weight_bytes(m: Checkpoint, ftype: str) -> dict[str, float]:
    """Bytes of a ``ftype`` GGUF of ``m`` by part (the ``ModelSpec.weight_bytes`` parts): each tensor at the type
    the rules give it; norms, biases and routers F32. Per-token tables beside the token embedding
    (:func:`per_token_table_params`) take its type; learned positions and projections stay F32
    (``tensor_allows_quantization`` leaves ``position_embd`` alone)."""
    params = m.params_breakdown()
    out = {"embeddings": 0.0, "lm_head": 0.0, "norms": params["norms"] * 4.0, "attention": 0.0, "mlp": 0.0,
           "experts": 0.0, "vision": params.get("vision", 0) * 2.0}
    plain = FTYPES[ftype] in ("f32", "f16", "bf16")
    tables = per_token_table_params(m)
    out["embeddings"] = token_embedding_bytes(m, ftype) + type_bytes(_embedding_type(m, ftype), tables)
    out["embeddings"] += 4.0 * (m.position_params - tables + m.projection_params)
    if m.lm_head is not None:
        kind = FTYPES[ftype] if plain else output_type(ftype, m.lm_head.in_features, m.family)
        out["lm_head"] = type_bytes(kind, m.lm_head.weight_params)
    for _, _, lin, kind in tensor_types(m, ftype):
        part = {"mlp": "mlp", "shared_experts": "mlp", "attention": "attention"}.get(lin.group, "experts")
        out[part] += type_bytes(kind, lin.weight_params) + 4.0 * lin.bias_params
    for layer in m.layers:
        out["attention"] += 4.0 * layer.attention_extra
    return out


def linear_bytes_per_param(m: Checkpoint, ftype: str) -> float:
    """Average bytes per decoder-linear weight of a ``ftype`` GGUF (what decode reads per parameter)."""
    rows = [(type_bytes(kind, lin.weight_params), lin.weight_params) for cat, _, lin, kind in tensor_types(m, ftype)
            if cat != "router"]
    return sum(b for b, _ in rows) / max(sum(p for _, p in rows), 1)
