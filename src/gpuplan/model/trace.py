"""A model's structure read off ``transformers``' own module tree on the meta device: exact by construction.

The model is built from its config on the meta device (shapes, no bytes), and every parameter is assigned to
a part: the decoder layers (each one's linears with their shapes, fused 3-D expert weights, norms, the other
parameters of its token mixer and MLP), the input embeddings, the output head, the final norms, the vision or
audio tower, and whatever else the checkpoint holds (``other``), so the parts sum to
``sum(p.numel() for p in model.parameters())``.

The cache of each layer is measured, not assumed: the meta model runs a 2-token prefill and a 1-token decode
step with transformers' ``DynamicCache``, and the size of every cached tensor after each step separates what
grows per token (keys, values, MLA latents, indexer keys) from what does not (the convolution and recurrent
states of linear-attention and state-space mixers); the window of sliding and chunked layers is the cache
layer's own ``sliding_window``. Where that forward cannot run on the meta device, the layer kinds come from
transformers' ``get_layer_types_and_kwargs`` and the sizes from the attention projections, with a note.

The result is cached per config (a hash of the config JSON) in the user cache folder, so the next call is
instant and works without transformers (:mod:`gpuplan.model.structure`).

Needs the ``sim`` extra (torch + transformers); imported only when a config is not otherwise known.
"""

from __future__ import annotations

import contextlib
import copy
import logging
import sys
import warnings
from typing import Any

from ..errors import GpuplanError
from .layers import Layer
from .meta_layers import _embedding_dim, _get, _int, _layer_structure, _top_level, decoder_layers
from .validate import check_depth

# the config keys of the experts each token is routed to (Gemma 4: ``top_k_experts``, transformers
# ``Gemma4TextConfig``, read by its router as ``k=self.config.top_k_experts`` in ``modeling_gemma4.py``)
TOP_K_KEYS = ("num_experts_per_tok", "num_experts_per_token", "experts_per_token", "moe_topk", "moe_top_k",
              "top_k", "moe_k", "num_selected_experts", "router_top_k", "n_activated_experts", "top_k_experts")
MAMBA_WORDS = ("mamba", "ssm", "mixer")


class TraceError(GpuplanError):
    """transformers could not build or read the model (the message says why, in one sentence)."""


@contextlib.contextmanager
def quiet():
    """Silence transformers' and torch's warnings and logs while a model is built on the meta device (the
    imports too: transformers' quantizers import torchao, which logs every kernel library it cannot load)."""
    previous = logging.root.manager.disable
    logging.disable(logging.ERROR)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            yield
        finally:
            logging.disable(previous)


def instantiate(config: dict[str, Any], cfg, **kwargs):
    """The model a config describes, built with ``kwargs`` (dtype, attention) under the caller's device: the
    class its ``architectures`` names when transformers has it (multimodal checkpoints keep their towers), else
    the causal-LM class of its ``model_type``."""
    import transformers

    named = (config.get("architectures") or [None])[0]
    cls = getattr(transformers, named, None) if isinstance(named, str) else None
    if cls is not None and hasattr(cls, "_from_config"):
        return cls._from_config(cfg, **kwargs)
    # trust_remote_code=False: with it unset, a config whose auto_map names a causal-LM class made transformers ask
    # "Do you wish to run the custom code? [y/N]" where its model_type has no causal-LM class of its own, and a "y"
    # imported the module _name_or_path points at (session 18's security audit)
    return transformers.AutoModelForCausalLM.from_config(cfg, trust_remote_code=False, **kwargs)


@quiet()
def build_meta(config: dict[str, Any], dtype: str = "bfloat16", progress: str | None = None):
    """(model, transformers config) built on the meta device from a config.json dict (:func:`instantiate`);
    ``progress`` is written to stderr once transformers has read the config, before the model is built."""
    import torch
    import transformers

    # auto_map: the repo's own code, never read (docs/security.md); "_" keys: bookkeeping, left out of the structure
    # cache's key (structure.config_key), so left out of what is traced too: "_experts_implementation" changed a
    # trace, and a config sent with it would have been kept under the key of the config without it (session 18)
    clean = {k: v for k, v in config.items() if k not in ("quantization_config", "auto_map") and not k.startswith("_")}
    model_type = clean.get("model_type")
    named = (clean.get("architectures") or [None])[0]
    known = getattr(transformers, named, None) if isinstance(named, str) else None
    check_depth(clean, f"the {model_type} config")
    try:
        if model_type not in transformers.CONFIG_MAPPING and known is not None:
            # remote-code model types of a transformers architecture (Kimi K2's kimi_k2 is DeepseekV3ForCausalLM)
            cfg = known.config_class(**{k: v for k, v in clean.items() if k != "model_type"})
            clean["model_type"] = known.config_class.model_type
        else:
            cfg = transformers.AutoConfig.for_model(**clean)
    except Exception as err:  # transformers' config validation, whatever it raises, in one sentence
        if model_type not in transformers.CONFIG_MAPPING:
            raise TraceError(f"transformers {transformers.__version__} does not know model_type "
                             f"{model_type!r}: upgrade transformers, pass a config of a known family, or run "
                             "your model's own code with `gpuplan simulate --module my_pkg.my_model:build`") from None
        raise TraceError(f"transformers cannot read this {model_type} config ({_first_line(err)})") from None
    if progress:
        print(progress, file=sys.stderr, flush=True)
    try:
        with torch.device("meta"):
            model = instantiate(clean, cfg, dtype=getattr(torch, dtype))
    except Exception as err:  # any failure of the model's own code is reported in one line
        raise TraceError(f"transformers {transformers.__version__} cannot build the {model_type} model of this "
                         f"config ({type(err).__name__}: {_first_line(err)})") from None
    return model.eval(), cfg


def _first_line(err: BaseException) -> str:
    text = str(err).strip().splitlines()
    return (text[0] if text else type(err).__name__)[:200]


@quiet()
def trace(config: dict[str, Any], progress: str | None = None) -> tuple[dict[str, Any], list[str], str | None]:
    """The architecture fields (as :mod:`gpuplan.model.architectures` readers return them) of ``config``, read
    off transformers' model on the meta device; notes; and why the cache sizes are not exact (None when they
    are). ``progress``: a line for stderr once transformers knows the config (:func:`build_meta`). Raises
    :class:`TraceError` when transformers cannot build the model."""
    import transformers

    model, cfg = build_meta(copy.deepcopy(config), progress=progress)  # transformers pops nested config keys
    text = cfg.get_text_config(decoder=True)
    notes = [f"structure read off transformers {transformers.__version__} on the meta device"]
    try:
        layers_names, blocks = decoder_layers(model, _get(text, "num_hidden_layers"))
    except ValueError as err:
        raise TraceError(str(err)) from None
    _refuse_attention_both_ways(config, blocks)
    hidden = _int(_get(text, "hidden_size")) or _embedding_dim(model)
    top_k = _top_k(text, blocks)
    seen: set[int] = set()
    structures = [_layer_structure(block, hidden, top_k, seen) for block in blocks]
    if top_k == 0 and any(s["moe"] for s in structures):  # each token would reach no expert: time and memory at 0
        raise TraceError(f"the {cfg.model_type} model has experts but its config names no experts per token (one "
                         f"of {', '.join(TOP_K_KEYS[:3])}...), so its active parameters cannot be counted")
    caches, problem = _caches(model, cfg, text, blocks)
    layers = [_layer(s, c, block) for s, c, block in zip(structures, caches, blocks, strict=True)]
    arch = _top_level(model, text, layers, layers_names, hidden, top_k)
    other = arch.pop("_other_names")
    notes += _runs_note(layers)
    if arch["other_params"]:
        notes.append(f"{arch['other_params']:,} parameters outside the decoder layers, embeddings, head and towers "
                     f"({', '.join(other[:4])}) are counted under 'other'")
    return arch, notes, problem


def _refuse_attention_both_ways(config: dict[str, Any], blocks) -> None:
    """Refuse a model whose layers' attention all attend both ways: every module in them that carries transformers'
    ``is_causal`` (the flag its attention functions pass to SDPA and the mask builders) has it False, as
    ``EmbeddingGemma2Attention`` sets (transformers 5.24 ``modeling_embedding_gemma2.py``: ``self.is_causal =
    False``), whose config says nothing of it; a decoder's are True (Llama's, Gemma 3's, BLT's, Qwen 3.5's text
    layers; their vision towers' False flags lie outside the decoder layers)."""
    flags = [m.is_causal for block in blocks for m in block.modules()
             if isinstance(getattr(m, "is_causal", None), bool)]
    if flags and not any(flags):
        from .families import refuse_unknown

        named = config.get("architectures")
        built = named[0] if isinstance(named, list) and named and isinstance(named[0], str) else \
            config.get("model_type")
        raise refuse_unknown(config, f"{built} (its attention is not causal: every token attends to every other, so "
                                     "it generates no text)")


def _runs_note(layers: list[Layer]) -> list[str]:
    """A note when the forward runs decoder layers more than once (:attr:`Layer.runs`), else none."""
    runs: dict[tuple[int, int], int] = {}
    for layer in layers:
        runs[(layer.runs, layer.grad_runs)] = runs.get((layer.runs, layer.grad_runs), 0) + 1
    if all(r == (1, 1) for r in runs):
        return []
    parts = [f"{n} layers {r} times ({g} with autograd)" for (r, g), n in runs.items()]
    return [f"the forward runs {', '.join(parts)}: the cache and FLOPs count every run, parameters each layer once"]


def _top_k(text, blocks) -> int:
    for key in TOP_K_KEYS:
        value = _get(text, key)
        if isinstance(value, int) and value > 0:
            return value
    for block in blocks:
        for module in block.modules():
            value = getattr(module, "top_k", None)
            if isinstance(value, int) and value > 0:
                return value
    return 0


# ---- the cache of each layer -----------------------------------------------------------------------------
# xLSTMCache (transformers 5.24 modeling_xlstm.py): its states are allocated once, in its __init__, at their size
KNOWN_CACHES = ("DynamicLayer", "DynamicSlidingWindowLayer", "DynamicIndexedLayer", "LinearAttentionLayer",
                "LinearAttentionAndFullAttentionLayer", "LinearAttentionAndSlidingWindowAttentionLayer", "DummyLayer",
                "xLSTMCache")


def _caches(model, cfg, text, blocks) -> tuple[list[dict[str, Any]], str | None]:
    """Per layer: the transformers cache class, elements per token and fixed elements (of all its runs, each
    with its own cache layer where the cache has one per run), window, and how many times the prefill runs it
    (``runs``; ``grad_runs`` of them with autograd on); measured by a 2-token prefill and a 1-token decode step
    on the meta device. The second value says why the sizes are not exact, when they are not."""
    try:
        first, second, layers, names, ran = _measure(model, cfg, blocks)
    except Exception as err:  # nothing measured: which layers run, how often, with a backward, keep a cache
        caches, problem = _declared_caches(text, blocks)
        estimated = f"; cache sizes of its {problem} layers are estimated" if problem else ""
        return caches, (f"the runs and caches of its layers are not measured, as a forward on the meta device failed "
                        f"({type(err).__name__}: {_first_line(err)}): each layer is counted as run once per token, "
                        f"with a backward, keeping the keys and values its projections make{estimated}")
    # a layer the prefill did not run (no hook fired) is counted once, as it was before runs were measured
    runs = [sum(1 for b, _, _ in ran if b == k) or 1 for k in range(len(blocks))]
    grad_runs = [sum(1 for b, g, _ in ran if b == k and g) if any(b == k for b, _, _ in ran) else 1
                 for k in range(len(blocks))]
    if len(names) == len(blocks):
        mine = [[k] for k in range(len(blocks))]  # one cache layer per decoder layer, however often it runs
    else:  # a cache layer per run (HRM-Text, looped models): those each decoder layer's runs wrote
        mine = [sorted({i for b, _, wrote in ran if b == k for i in wrote}) for k in range(len(blocks))]
        owners = sorted(i for cache_layers in mine for i in cache_layers)
        if owners != list(range(len(names))) or not all(mine):
            caches, problem = _declared_caches(text, blocks)
            return [dict(c, runs=r, grad_runs=g, kv_dims=r * c["kv_dims"], state_elements=r * c["state_elements"])
                    for c, r, g in zip(caches, runs, grad_runs, strict=True)], \
                f"cache sizes are estimated: transformers' cache has {len(names)} layers for {len(blocks)} " \
                f"decoder layers run {len(ran)} times"
    types = _layer_types(text, len(names))
    out, odd = [], set()
    for k, slots in enumerate(mine):
        slot = slots[0]
        layer = layers[slot]
        per_token = sum(second[j] - first[j] for j in slots)  # every run's own cache layer
        fixed = sum(first[j] for j in slots) - 2 * per_token
        window = getattr(layer, "sliding_window", None)
        name = names[slot]
        if name not in KNOWN_CACHES:
            odd.add(name)
        elif not per_token and not fixed and name != "DummyLayer":
            odd.add(f"{name} left empty")
        out.append(dict(cache=name, kv_dims=int(per_token), state_elements=int(fixed), runs=runs[k],
                        grad_runs=grad_runs[k], window=int(window) if isinstance(window, int) else None,
                        layer_type=types[slot]))
    if odd:
        return out, (f"cache sizes measured over 3 tokens may not hold for long contexts ({', '.join(sorted(odd))}: "
                     "a state kept outside transformers' standard cache layers)")
    return out, None


def new_cache(cfg, runs: list[int] | None = None):
    """transformers' ``DynamicCache`` for ``cfg`` that also knows its length when it holds no attention layer
    (a run of linear-attention or Mamba layers alone, which ``get_seq_length`` refuses): the caller adds the
    tokens of each forward to ``tokens``.

    ``runs``: how many times the forward runs each decoder layer (:attr:`Layer.runs`). A looped model (Inkling 2
    Loop's layers ``loop_layer_index_start`` to ``loop_layer_index_end`` run ``loop_num_passes`` times, Dory's
    recurrent section ``n_recurrent_loops`` times, transformers 5.24) gets the cache layers of its extra passes
    here, built new as the first ones are and appended pass after pass, as its forward would: its first forward
    would otherwise deep-copy them itself, which fake tensors cannot survive (the copy asks for a real storage,
    fails, and leaves a tensor that crashes the garbage collector)."""
    from transformers import DynamicCache

    class CountingCache(DynamicCache):
        tokens = 0

        def get_seq_length(self, layer_idx: int = 0) -> int:
            try:
                return super().get_seq_length(layer_idx)
            except ValueError:
                return self.tokens

        def get_mask_sizes(self, query_length: int, layer_idx: int = 0) -> tuple[int, int]:
            try:
                return super().get_mask_sizes(query_length, layer_idx)
            except ValueError:
                return self.tokens + query_length, 0

    cache = CountingCache(config=cfg)
    if runs and len(cache.layers) == len(runs) and max(runs) > 1:
        fresh = [DynamicCache(config=cfg).layers for _ in range(max(runs) - 1)]
        cache.layers += [fresh[p - 2][k] for p in range(2, max(runs) + 1) for k in range(len(runs)) if runs[k] >= p]
    return cache


# Multimodal classes whose forward fails on text-only input, run through the text model their forward calls when
# there are no images (the same tensors: the embedding lookup, the decoder, the head and the loss move inside it):
# transformers 5.24.0's Llama4ForConditionalGeneration builds its output from ``outputs.image_outputs``, a field its
# text model's output does not have (AttributeError on every call without images, return_dict=False included).
TEXT_FORWARD = {"Llama4ForConditionalGeneration": "language_model"}


def forward(model, **inputs):
    """``model(**inputs)``, or its text model's forward for the classes of :data:`TEXT_FORWARD` (peft's LoRA
    layers sit in the modules, so a wrapped model adapts the same way): the meta prefill's and simulate's."""
    base = model.get_base_model() if hasattr(model, "get_base_model") else model
    text = TEXT_FORWARD.get(type(base).__name__)
    return getattr(base, text)(**inputs) if text else model(**inputs)


def cache_keyword(model) -> str:
    """The name the model's forward takes its cache by: ``cache`` since transformers 5.24 (models keep
    ``past_key_values`` as a deprecated alias, and a model without the alias, Dory, ignores it)."""
    import inspect

    return "cache" if "cache" in inspect.signature(model.forward).parameters else "past_key_values"


def own_cache(model) -> bool:
    """Whether the model's forward takes a cache class of its own, not one of transformers' ``Cache`` (xLSTM's
    ``xLSTMCache``, ``cache: xLSTMCache | None`` in transformers 5.24 ``modeling_xlstm.py``, ``xLSTMModel.forward``,
    reads ``cache.rnn_state[layer_idx]``, which a ``DynamicCache`` does not have): its forward then builds it."""
    import inspect
    import typing

    from transformers import Cache

    param = inspect.signature(model.forward).parameters.get(cache_keyword(model))
    annotation = param.annotation if param is not None else inspect.Parameter.empty
    classes = [a for a in (typing.get_args(annotation) or (annotation,)) if isinstance(a, type)]
    return any(c.__name__.endswith("Cache") for c in classes) and not any(issubclass(c, Cache) for c in classes)


def cache_layers(cache, n: int) -> list:
    """The per-layer parts of a cache: transformers' ``cache.layers``; for a cache class of a model's own, its
    public dict or list with one entry per decoder layer (``xLSTMCache.rnn_state``: ``{layer: (C, n, m)}``, the
    matrix memory, normalizer and max state of each mLSTM layer, fixed in size)."""
    if isinstance(getattr(cache, "layers", None), list):
        return cache.layers
    for name, value in vars(cache).items():
        if not name.startswith("_") and isinstance(value, (dict, list)) and len(value) == n:
            return list(value.values()) if isinstance(value, dict) else list(value)
    raise ValueError(f"{type(cache).__name__} holds no list of {n} layers")


def _measure(model, cfg, blocks):
    """Cached elements (at 2 bytes each) per cache layer after a 2-token prefill, then after one decode step; the
    cache layers (:func:`cache_layers`) and their class names; and the decoder layers the prefill ran, in order
    (their indices in ``blocks``), each with whether autograd was on and the cache layers it wrote. Autograd is on
    around the prefill with every parameter frozen, so nothing is recorded and a layer runs with it off only where
    the model's own forward turns it off (HRM-Text's early low-level cycles run under ``torch.no_grad()``:
    transformers ``modeling_hrm_text.py``, ``HrmTextModel.forward``). A model with a cache class of its own
    (:func:`own_cache`) builds it in the prefill, which then records no writes (its layers hold one cache entry
    each). Multimodal classes run their text model (:func:`forward`)."""
    import torch

    runs: list[tuple[int, bool, list[int]]] = []
    index = {id(block): k for k, block in enumerate(blocks)}
    cache = None if own_cache(model) else new_cache(cfg)
    before: list[int] = []

    def sizes() -> list[int]:
        return [_cached_bytes(layer) for layer in cache.layers] if cache is not None else []

    def pre(block, *_):
        before[:] = sizes()

    def post(block, *_):
        wrote = [i for i, size in enumerate(sizes()) if size != (before[i] if i < len(before) else 0)]
        runs.append((index[id(block)], torch.is_grad_enabled(), wrote))

    model.requires_grad_(False)
    handles = [h for block in blocks for h in (block.register_forward_pre_hook(pre), block.register_forward_hook(post))]
    keyword = cache_keyword(model)
    try:
        with quiet():
            ids = torch.zeros((1, 2), dtype=torch.long, device="meta")
            with torch.enable_grad():
                out = forward(model, input_ids=ids, use_cache=True, **({keyword: cache} if cache is not None else {}))
            for handle in handles:
                handle.remove()
            if cache is None:
                cache = getattr(out, keyword, None) or getattr(out, "past_key_values", None)
            layers = cache_layers(cache, len(blocks))
            cache.tokens = 2
            first = [_cached_bytes(layer) // 2 for layer in layers]
            with torch.no_grad():
                forward(model, input_ids=ids[:, :1], use_cache=True, **{keyword: cache})
            cache.tokens = 3
            second = [_cached_bytes(layer) // 2 for layer in layers]
    finally:
        for handle in handles:
            handle.remove()
    names = [type(layer).__name__ for layer in layers] if layers is getattr(cache, "layers", None) else \
        [type(cache).__name__] * len(layers)
    return first, second, list(layers), names, runs


def cache_layer_tensors(layer):
    """Every tensor one transformers cache layer holds, once each: keys and values, MLA latents, indexer keys,
    convolution and recurrent states (its public attributes, walked through dicts, lists and tuples)."""
    seen: set[int] = set()

    def visit(value):
        if hasattr(value, "untyped_storage"):
            if id(value) not in seen:
                seen.add(id(value))
                yield value
        elif isinstance(value, dict):
            for v in value.values():
                yield from visit(v)
        elif isinstance(value, (list, tuple)):
            for v in value:
                yield from visit(v)

    if isinstance(layer, (dict, list, tuple)):  # an entry of a model's own cache class (:func:`cache_layers`)
        yield from visit(layer)
        return
    for name, value in vars(layer).items():
        if not name.startswith("_"):
            yield from visit(value)


def _cached_bytes(layer) -> int:
    return sum(t.numel() * t.element_size() for t in cache_layer_tensors(layer) if t.numel())


def _layer_types(text, n: int) -> list[str]:
    try:
        from transformers.cache_utils import get_layer_types_and_kwargs

        types, _ = get_layer_types_and_kwargs(text)
        return [str(t) for t in types][:n] + ["full_attention"] * (n - len(types))
    except Exception:
        types = _get(text, "layer_types") or []
        return [str(t) for t in types][:n] + ["full_attention"] * (n - len(types))


def _declared_caches(text, blocks) -> tuple[list[dict[str, Any]], str | None]:
    """Without a forward: the layer types transformers declares; keys and values sized by each layer's k/v
    projections (MLA: the latent and the rope key, as transformers caches them); recurrent states from the
    mixer's convolution and state sizes. Returns the kinds whose sizes are estimates (None when all are exact)."""
    types = _layer_types(text, len(blocks))
    heads = _int(_get(text, "num_attention_heads")) or 1
    kv = _int(_get(text, "num_key_value_heads")) or heads
    d = _int(_get(text, "head_dim")) or (_int(_get(text, "hidden_size")) or 0) // heads
    latent = (_int(_get(text, "kv_lora_rank")) or 0) + (_int(_get(text, "qk_rope_head_dim")) or 0)
    out, estimated = [], set()
    for layer_type, block in zip(types, blocks, strict=True):
        modules = {n.rsplit(".", 1)[-1]: m for n, m in block.named_modules()}
        kv_dims = state = 0
        if layer_type in ("full_attention", "sliding_attention", "chunked_attention", "hybrid", "hybrid_sliding"):
            if "kv_a_proj_with_mqa" in modules and latent:
                kv_dims = latent
            elif "k_proj" in modules and "v_proj" in modules and hasattr(modules["k_proj"], "out_features"):
                kv_dims = modules["k_proj"].out_features + modules["v_proj"].out_features
            else:
                kv_dims = 2 * kv * d
                estimated.add(layer_type)
        if layer_type not in ("full_attention", "sliding_attention", "chunked_attention", "dummy"):
            state = _module_state(block)
            estimated.add(layer_type)
        window = _get(text, "sliding_window") if "sliding" in layer_type else (
            _get(text, "attention_chunk_size") if layer_type == "chunked_attention" else None)
        out.append(dict(cache=layer_type, kv_dims=kv_dims, state_elements=state, window=window,
                        layer_type=layer_type, runs=1, grad_runs=1))
    return out, ", ".join(sorted(estimated)) or None


def _module_state(block) -> int:
    """The recurrent state of a linear-attention or state-space mixer, from its modules: the depthwise
    convolution's ``channels x kernel`` and the SSM state (Mamba-2 ``heads x head_dim x d_state``, Mamba
    ``d_inner x d_state``, Gated DeltaNet ``v_heads x k_head_dim x v_head_dim``)."""
    import torch

    total = 0
    for module in block.modules():
        if isinstance(module, torch.nn.Conv1d) and module.groups == module.in_channels:
            total += module.in_channels * module.kernel_size[0]
        a = vars(module)
        state = _int(a.get("ssm_state_size")) or _int(a.get("d_state"))
        if state and _int(a.get("num_heads")) and _int(a.get("head_dim")):
            total += a["num_heads"] * a["head_dim"] * state
        elif state and _int(a.get("intermediate_size")):
            total += a["intermediate_size"] * state
        elif _int(a.get("num_v_heads")) and _int(a.get("head_k_dim")) and _int(a.get("head_v_dim")):
            total += a["num_v_heads"] * a["head_k_dim"] * a["head_v_dim"]
    return total


def _layer(structure: dict[str, Any], cache: dict[str, Any], block) -> Layer:
    names = {type(m).__name__.lower() for m in block.modules()}
    linears = structure["linears"]
    mla = any(lin.name in ("kv_a_proj_with_mqa", "kv_a_proj") for lin in linears)
    layer_type, state = cache["layer_type"], cache["state_elements"]
    if cache["cache"] in ("DummyLayer", "dummy"):
        kind = "none"
    elif cache["kv_dims"] and state:
        kind = "hybrid"
    elif state or layer_type in ("linear_attention", "conv", "mamba"):
        if layer_type == "conv" or any("shortconv" in n for n in names):
            kind = "conv"
        elif any(word in n for n in names for word in MAMBA_WORDS):
            kind = "mamba"
        else:
            kind = "linear"
    elif any("crossattention" in n or "cross_attn" in n for n in names) and not cache["kv_dims"]:
        kind = "cross"
    elif mla:
        kind = "mla"
    elif layer_type == "chunked_attention":
        kind = "chunked"
    elif cache["window"] or "sliding" in layer_type:
        kind = "sliding"
    elif cache["kv_dims"]:
        kind = "full"
    else:
        kind = "none"
    window = cache["window"] if kind in ("sliding", "chunked") else None
    return Layer(attention=kind, window=window, moe=structure["moe"], linears=linears,
                 norm_params=structure["norm_params"], attention_extra=structure["attention_extra"],
                 mlp_extra=structure["mlp_extra"], kv_dims=cache["kv_dims"], state_elements=max(state, 0),
                 experts_per_token=structure["experts_per_token"], runs=cache["runs"],
                 grad_runs=cache["grad_runs"])
