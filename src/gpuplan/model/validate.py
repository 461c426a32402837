"""A ``config.json`` checked at the boundary: the sizes a model is built from are whole, positive numbers.

A config is user input (a local file, a downloaded one, a hand-edited one). Before any arithmetic, the keys the
readers in :mod:`gpuplan.model.architectures` multiply and divide by must be integers (not strings, not 2.5,
not NaN) in range; the nested ``text_config`` / ``vision_config`` are checked the same way, and the few keys
that must be mappings or lists are. Each problem is one sentence naming the key, the value and the fix.
"""

from __future__ import annotations

import math
import re
from typing import Any

from ..errors import GpuplanError, echo_value, shown_number
from .conventions import EXPERT_COUNT_KEYS, EXPERTS_PER_TOKEN_KEYS
from .quant import checkpoint_format

# Sizes and counts that must be >= 1 wherever they appear.
POSITIVE = (
    "hidden_size", "n_embd", "n_embed", "d_model", "num_hidden_layers", "n_layer", "num_layers", "vocab_size",
    "num_attention_heads", "n_head", "num_key_value_heads", "num_kv_heads", "n_head_kv", "intermediate_size",
    "n_inner", "ffn_dim", "ffn_hidden_size", "max_position_embeddings", "n_positions", "seq_length",
    "num_local_experts", "num_experts", "n_routed_experts", "num_experts_per_tok", "experts_per_token", "top_k_experts",
    "moe_layer_freq", "decoder_sparse_step", "kv_lora_rank", "qk_nope_head_dim", "v_head_dim", "word_embed_proj_dim",
    "patch_size", "image_size", "num_channels", "sliding_window_pattern", "block_size",
    # the sizes the common-keys reader (conventions.py) takes for hybrid, linear-attention, Mamba and sparse-attention
    # layers: a list or an object there ended in a TypeError deep in the reader (session 7's walk: n_groups [])
    "n_groups", "mamba_n_groups", "mamba_n_heads", "mamba_num_heads", "ssm_num_heads", "mamba_d_state",
    "ssm_state_size", "state_size", "mamba_d_head", "mamba_head_dim", "ssm_head_dim", "mamba_d_ssm", "mamba_d_conv",
    "conv_kernel", "linear_conv_kernel_dim", "linear_key_head_dim", "linear_num_key_heads", "linear_num_value_heads",
    "linear_value_head_dim", "index_n_heads", "index_head_dim", "kv_channels", "multi_query_group_num",
    "moe_num_experts", "padded_vocab_size", "moe_k", "moe_topk", "num_experts_per_token", "interleave_moe_layer_step",
    "moe_layer_interval", "attn_layer_period", "full_attention_interval", "no_rope_layer_interval",
    # the chunk lengths and widths the readers divide and multiply by (conventions.mamba2_shape, _mamba2, Llama 4's
    # chunked attention): NaN, 0, "x" or a list there ended in a traceback (s30-fuzz)
    "mamba_chunk_size", "chunk_size", "attention_chunk_size", "mamba_expand", "expand",
)
# The sizes of the encoder and encoder-decoder families (model/encoders.py: Whisper's positions, mel bins and layers,
# T5's heads and feed-forward, BART's layers and heads) that are >= 1: a config of one is checked with these too
# (session 12's fuzzing: T5 with d_model 0 was counted as 768 parameters, Whisper with max_source_positions 0 planned)
ENCODER_POSITIVE = (
    "max_source_positions", "max_target_positions", "num_mel_bins", "encoder_layers", "decoder_layers",
    "num_decoder_layers", "encoder_attention_heads", "decoder_attention_heads", "encoder_ffn_dim", "decoder_ffn_dim",
    "num_heads", "d_kv", "d_ff",
)
# Sizes and counts that may be 0 in released configs: 0 means "none" or "derive it" (Qwen3-Coder's
# shared_expert_intermediate_size 0: no shared expert; head_dim 0: hidden_size / heads; q_lora_rank 0: no
# query compression).
NON_NEGATIVE = ("n_shared_experts", "first_k_dense_replace", "max_window_layers", "num_ln_in_parallel_attn",
                "sliding_window", "head_dim", "moe_intermediate_size", "shared_expert_intermediate_size",
                "q_lora_rank", "qk_rope_head_dim", "attn_layer_offset", "moe_layer_start_index",
                "moe_num_shared_experts", "num_shared_experts")
# Sizes that released configs also give per layer or per axis (Gemma 3n's intermediate_size per layer, ERNIE 4.5
# VL's moe_intermediate_size per modality, a vision tower's [height, width] patch and image sizes and its heads
# per stage): a list of whole numbers, each checked.
PER_ENTRY = ("intermediate_size", "moe_intermediate_size")
PER_ENTRY_VISION = ("num_attention_heads", "patch_size", "image_size")
MAPPINGS = ("text_config", "vision_config", "quantization_config", "rope_scaling", "rope_parameters")
# Real numbers written as they are into launch files and the stacks' fake-tensor models (torchtitan's and
# torchtune's model arguments: ``float(config["rope_theta"])``): positive and finite. A NaN there was written as
# ``'rope_theta': nan`` into gpuplan_model.py (a NameError when it runs), a string ended in a traceback (s30-fuzz).
POSITIVE_REALS = ("rope_theta", "rms_norm_eps", "layer_norm_eps", "layer_norm_epsilon")
LISTS = ("layer_types", "architectures", "mlp_only_layers", "moe_layers", "no_rope_layers")
# Lists of layer indices or 0/1 flags, one whole number each (conventions._moe_layers makes a set of them)
INDEX_LISTS = ("mlp_only_layers", "moe_layers", "no_rope_layers")
# Switches the readers take as booleans (a bias, a tied head, a norm, a layout): JSON's true/false (or null); a string
# there is truthy in Python, so "false" turned the switch on (fuzz_s16: "tie_word_embeddings": "false" counted Llama
# 3.2 1B untied at 1,236 M parameters, the tied count, where false gives 1,498 M)
SWITCHES = ("tie_word_embeddings", "use_sliding_window", "attention_bias", "mlp_bias", "use_qk_norm",
            "qk_norm", "use_parallel_residual", "parallel_attn", "new_decoder_architecture", "multi_query",
            "o_bias", "routing_bias", "mamba_rms_norm", "mamba_proj_bias", "mamba_conv_bias", "enable_bias",
            "layer_norm_elementwise_affine", "do_layer_norm_before")
TEXTS = ("model_type", "torch_dtype", "dtype", "hidden_act", "hidden_activation", "activation_function",
         "_name_or_path", "hybrid_override_pattern")
LARGEST = 2**31  # no real size comes near; keeps products of sizes far from overflow in float arithmetic
# Counts the readers build one object per unit of (layers, experts): bounded so a typo cannot exhaust memory.
# The deepest released decoders have ~130 layers; the most routed experts, 384 (Kimi K2).
BUILT = {"num_hidden_layers": 10_000, "n_layer": 10_000, "num_layers": 10_000, "num_local_experts": 65_536,
         "num_experts": 65_536, "n_routed_experts": 65_536, "n_shared_experts": 65_536}

# The most layers (or blocks) one stack may have in a config that transformers or diffusers builds (a family without
# an exact reader, an encoder, a pipeline's component): four times the deepest released decoder (Llama 3.1 405B's
# 126). Those libraries build every layer on the meta device and gpuplan runs each on fake tensors, ~0.1-0.5 s a
# layer, and they read layer counts BUILT does not name (Bart's decoder_layers, T5's num_decoder_layers, a vision
# tower's depth, a UNet's layers_per_block): a config sent with decoder_layers 200,000 ran for hours (s19-sec).
MOST_BUILT_LAYERS = 512
LAYER_COUNT = re.compile(r"(^|_)(layers|blocks|depth)$|^n_layer$|layers_per_block$")


def check_depth(config: dict[str, Any], where: str = "the config", path: str = "") -> None:
    """Refuse, in one sentence naming ``where``, a count of layers past :data:`MOST_BUILT_LAYERS` anywhere in
    ``config`` (sub-configs and per-block lists included), before a library builds them."""
    for key, value in config.items():
        if isinstance(value, dict):
            check_depth(value, where, f"{path}{key}.")
            continue
        if not (isinstance(key, str) and LAYER_COUNT.search(key)):
            continue
        for count in value if isinstance(value, list) else [value]:
            if isinstance(count, (int, float)) and not isinstance(count, bool) and count > MOST_BUILT_LAYERS:
                raise GpuplanError(f"{where}: {path}{key} is {shown_number(count)}; a model built by transformers "
                                   f"or diffusers may have at most {MOST_BUILT_LAYERS} layers in one stack")


def checked_config(config: dict[str, Any], where: str = "config.json", *, vision: bool = False,
                   positive: tuple[str, ...] = ()) -> dict[str, Any]:
    """``config`` with integral floats (4096.0) made ints; raises :class:`GpuplanError` on the first bad value;
    ``positive`` names more keys that must be >= 1 (:data:`ENCODER_POSITIVE`), here and in the nested configs."""
    out = dict(config)
    for key in MAPPINGS:
        if out.get(key) is not None and not isinstance(out[key], dict):
            raise GpuplanError(f"{where}: {key} must be a JSON object, got {type(out[key]).__name__}; fix the file "
                               "or pass the model's original config.json")
    for key in TEXTS:
        if out.get(key) is not None and not isinstance(out[key], str):
            raise GpuplanError(f"{where}: {key} must be text, got {out[key]!r}")
    for key in LISTS:
        if out.get(key) is not None and not isinstance(out[key], list):
            raise GpuplanError(f"{where}: {key} must be a JSON list, got {type(out[key]).__name__}")
    for key in SWITCHES:
        if isinstance(out.get(key), str):
            raise GpuplanError(f"{where}: {key} must be true or false, got {echo_value(out[key])}; write it without "
                               "quotes")
    for key in INDEX_LISTS:
        if out.get(key) and not all(isinstance(i, int) and not isinstance(i, bool) and 0 <= i <= LARGEST
                                    for i in out[key]):
            raise GpuplanError(f"{where}: {key} must list whole numbers (layer indices or 0/1 per layer), got "
                               f"{echo_value(out[key])}")
    if out.get("layer_types") and not all(isinstance(t, str) for t in out["layer_types"]):
        raise GpuplanError(f"{where}: layer_types must list layer kinds as text (full_attention, sliding_attention)")
    for key in (*POSITIVE, *positive, *NON_NEGATIVE):
        value, least, most = out.get(key), 1 if key in POSITIVE or key in positive else 0, BUILT.get(key, LARGEST)
        if isinstance(value, list) and value and (key in PER_ENTRY or (vision and key in PER_ENTRY_VISION)):
            out[key] = [_whole(v, key, where, least, most) for v in value]
        elif value is not None:
            out[key] = _whole(value, key, where, least, most)
    hidden = out.get("hidden_size") or out.get("n_embd")
    heads = out.get("num_attention_heads") or out.get("n_head")
    if hidden and isinstance(heads, int) and not out.get("head_dim") and hidden < heads:
        raise GpuplanError(f"{where}: hidden_size {hidden} is smaller than num_attention_heads {heads}, so each head "
                           "would have no dimensions (head_dim = hidden_size / heads); give head_dim or fix the sizes")
    _check_heads(out, where, heads)
    _check_rope(out, where)
    _check_window(out, where)
    _check_layer_kinds(out, where)
    # the keys the readers take (conventions._experts; Gemma 4's top_k_experts is read off its trace): ERNIE's moe_k
    # of 6 over moe_num_experts 1 was planned with more parameters active than in all (session 18's fuzzing)
    experts = next((out[k] for k in EXPERT_COUNT_KEYS if out.get(k)), None)
    key = next((k for k in (*EXPERTS_PER_TOKEN_KEYS, "top_k_experts") if out.get(k)), None)
    per_token, experts = out.get(key) if key else None, experts if isinstance(experts, int) else None
    if experts and per_token and per_token > experts:  # Gemma 4 names it top_k_experts
        raise GpuplanError(f"{where}: {per_token} experts per token but only {experts} expert{'s' * (experts != 1)}; "
                           f"{key} must not exceed the expert count")
    if experts and out.get("moe_intermediate_size") == 0:
        raise GpuplanError(f"{where}: moe_intermediate_size 0 gives {experts} experts of no width; give the experts' "
                           "real width (or remove it: the readers then take intermediate_size)")
    for key in ("text_config", "vision_config"):
        if isinstance(out.get(key), dict):
            out[key] = checked_config(out[key], f"{where} ({key})", vision=key == "vision_config", positive=positive)
    _check_quantization(out.get("quantization_config"), where)
    return out


def _check_quantization(quantization: dict[str, Any] | None, where: str) -> None:
    """A ``quantization_config`` read now, as every plan will read it (:func:`gpuplan.model.quant.checkpoint_format`),
    so an unknown ``quant_method`` or a bad ``bits`` is refused at the door, not when a plan is printed."""
    if not quantization:
        return
    try:
        checkpoint_format(quantization, 2)
    except GpuplanError as err:
        raise GpuplanError(f"{where}: {err}") from None
    except (TypeError, ValueError):
        raise GpuplanError(f"{where}: quantization_config's bits and group_size must be whole numbers, got "
                           f"{echo_value(quantization.get('bits'))} and {echo_value(quantization.get('group_size'))}"
                           ) from None


def _check_heads(config: dict[str, Any], where: str, heads: Any) -> None:
    """Attention heads that go together: key/value heads at most the query heads and dividing them evenly
    (grouped-query attention shares each key/value head among an equal group: transformers' ``repeat_kv`` by
    ``num_attention_heads // num_key_value_heads``), and no head of size 0 outside MLA (where ``head_dim`` is
    unused)."""
    kv_key = next((k for k in ("num_key_value_heads", "num_kv_heads", "n_head_kv") if config.get(k)), None)
    kv = config.get(kv_key) if kv_key else None
    if isinstance(heads, int) and isinstance(kv, int) and kv > heads:
        raise GpuplanError(f"{where}: {kv_key} {kv} is more than num_attention_heads {heads}; each key/value head "
                           "serves one or more query heads, so fix one of them")
    if isinstance(heads, int) and isinstance(kv, int) and heads % kv:
        raise GpuplanError(f"{where}: num_attention_heads {heads} is not a multiple of {kv_key} {kv}; grouped-query "
                           "attention shares each key/value head among an equal number of query heads")
    mla = config.get("kv_lora_rank") is not None or config.get("qk_nope_head_dim") is not None
    if config.get("head_dim") == 0 and not mla:
        hidden = config.get("hidden_size") or config.get("n_embd")
        derived = f" = {hidden // heads}" if isinstance(hidden, int) and isinstance(heads, int) and heads else ""
        raise GpuplanError(f"{where}: head_dim 0 gives heads of no size; remove it (transformers then takes "
                           f"hidden_size / num_attention_heads{derived}) or give the real value")


def _check_rope(config: dict[str, Any], where: str) -> None:
    """The rotary settings the plans and launch files compute with: ``rope_theta`` and the norms' epsilons positive
    and finite, here and in ``rope_scaling`` / ``rope_parameters`` (transformers 5 nests one per layer kind);
    a scaling ``factor`` positive and finite, and ``original_max_position_embeddings x factor`` (the context YaRN
    reaches, :attr:`~gpuplan.model.spec.ModelSpec.scaled_context`) at most :data:`LARGEST` positions. A NaN factor
    ended in a traceback in every serving plan, 1e308 in an overflow (s30-fuzz)."""
    ropes = [(f"{k}.", config[k]) for k in ("rope_scaling", "rope_parameters") if isinstance(config.get(k), dict)]
    ropes += [(f"{owner}{kind}.", v) for owner, rope in ropes for kind, v in rope.items() if isinstance(v, dict)]
    for owner, scope in [("", config), *ropes]:
        for key in POSITIVE_REALS:
            if scope.get(key) is not None:
                _positive_real(scope[key], f"{owner}{key}", where)
    for owner, rope in ropes:
        factor, original = rope.get("factor"), rope.get("original_max_position_embeddings")
        if factor is not None:
            _positive_real(factor, f"{owner}factor", where)
        if original is not None:
            rope["original_max_position_embeddings"] = original = _whole(
                original, f"{owner}original_max_position_embeddings", where, 1, LARGEST)
        if factor is not None and original is not None and original * factor > LARGEST:
            raise GpuplanError(f"{where}: {owner}factor {shown_number(factor)} x original_max_position_embeddings "
                               f"{original:,} reaches more than {LARGEST:,} positions; give the model's real factor")


def _positive_real(value: Any, key: str, where: str) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise GpuplanError(f"{where}: {key} must be a number, got {echo_value(value)}"
                           + ("; write it without quotes" if isinstance(value, str) and _reads_as_number(value)
                              else ""))
    if not 0 < value <= 1e300:  # NaN and infinity fail the comparison too
        raise GpuplanError(f"{where}: {key} must be a positive, finite number, got {shown_number(value)}")


def _check_window(config: dict[str, Any], where: str) -> None:
    """A ``sliding_window`` of 0 where the config turns sliding attention on (``use_sliding_window: true``, a
    ``sliding_window_pattern``, or a sliding kind in ``layer_types``) would make each such layer attend to no
    token: refused, as transformers' own masks take the window as a length in tokens. Where nothing turns it on,
    0 stays what released configs mean by it (no window)."""
    if config.get("sliding_window") != 0:
        return
    types = config.get("layer_types") or []
    sliding = next((t for t in types if isinstance(t, str) and ("sliding" in t or t.startswith("local"))), None)
    switch = ("use_sliding_window true" if config.get("use_sliding_window") is True else
              f"sliding_window_pattern {config['sliding_window_pattern']}" if config.get("sliding_window_pattern")
              else f"layer_types {sliding!r}" if sliding else None)
    if switch:
        raise GpuplanError(f"{where}: sliding_window is 0 while {switch} turns sliding attention on, and a window of "
                           "0 tokens sees nothing; give the window's length in tokens, or sliding_window null for "
                           "full attention")


def _check_layer_kinds(config: dict[str, Any], where: str) -> None:
    """``layer_types`` names one kind per decoder layer: a list of another length than ``num_hidden_layers`` is
    refused, as transformers refuses it (``configuration_utils.layer_type_validation``: "`num_hidden_layers` must be
    equal to the number of layer types"); the readers build one layer per entry, so a short list planned a model
    of fewer layers (fuzz_s16: six Gemma 3 layers with one kind listed were counted as one layer, 328 M of 463 M
    parameters)."""
    types, layers = config.get("layer_types"), config.get("num_hidden_layers")
    if types and isinstance(layers, int) and len(types) != layers:
        raise GpuplanError(f"{where}: layer_types lists {len(types):,} layer kinds but num_hidden_layers is "
                           f"{layers:,}; give one kind per layer")
    # Llama 4's 0/1 per layer (RoPE or not): a shorter list made fewer layer kinds than layers, a ValueError in
    # conventions' zip (s30-fuzz)
    flags = config.get("no_rope_layers")
    if flags and isinstance(layers, int) and len(flags) != layers:
        raise GpuplanError(f"{where}: no_rope_layers lists {len(flags):,} flags but num_hidden_layers is "
                           f"{layers:,}; give one 0/1 per layer")


def _reads_as_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def _whole(value: Any, key: str, where: str, least: int, most: int) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        quoted = isinstance(value, str) and _reads_as_number(value)  # "4096": the advice fits; null, [], "x": no
        raise GpuplanError(f"{where}: {key} must be a number, got {echo_value(value)}"
                           + ("; write it without quotes" if quoted else ""))
    if isinstance(value, float):
        if not math.isfinite(value) or not value.is_integer():
            raise GpuplanError(f"{where}: {key} must be a whole number, got {echo_value(value)}")
        if not least <= value <= most:  # before int(): 1e308 is a 309-digit integer
            raise GpuplanError(f"{where}: {key} must be between {least} and {most:,}, got {shown_number(value)}")
        value = int(value)
    if not least <= value <= most:
        raise GpuplanError(f"{where}: {key} must be between {least} and {most:,}, got {shown_number(value)}")
    return value
