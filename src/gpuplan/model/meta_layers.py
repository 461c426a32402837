"""What a model's modules hold, read on the meta device: each decoder layer's linears (shapes, fused 3-D experts,
expert lists merged into one linear with a count), norms and other parameters; and every parameter outside the
decoder layers (embeddings, head, final norms, vision or audio towers, the rest), so the parts add up to
``sum(p.numel() for p in model.parameters())``. Used by :mod:`.trace`; imports torch inside its functions.
"""

from __future__ import annotations

import re
from typing import Any

from .layers import Layer, Linear

TOWER_WORDS = ("vision", "visual", "image", "audio", "speech", "multi_modal", "multimodal", "mm_projector",
               "projector", "resampler", "vqmodel", "vq_model", "patch_embed", "video")
MLP_WORDS = ("mlp", "ffn", "feed_forward", "moe", "expert", "router")
MLP_LEAVES = ("fc1", "fc2", "fc_in", "fc_out", "c_fc", "w1", "w2", "w3", "gate_proj", "up_proj", "down_proj",
              "gate_up_proj", "dense_h_to_4h", "dense_4h_to_h", "wi", "wo")
# a layer's child whose class is an MLP or a mixture of experts, whatever its attribute is called (Nemotron-H's
# ``mixer`` is NemotronHMoE or NemotronHMLP on its expert and MLP layers: modeling_nemotron_h.py, MIXER_TYPES)
MLP_CLASS = re.compile(r"(MLP|Mlp|MoE|Moe|MoeBlock|FeedForward|Experts?)$")

# ---- the decoder layers ----------------------------------------------------------------------------------
def decoder_layers(model, n: int | None) -> tuple[tuple[str, ...], list]:
    """(names, layers) of the decoder layers: the ``nn.ModuleList`` of length ``num_hidden_layers`` when one is,
    else the one holding the most parameters (vision towers and MTP heads have their own lists), together with
    every other list of the same layer class (HRM-Text's two stacks, ``L_module.layers`` and ``H_module.layers``
    of ``HrmTextDecoderLayer``: transformers ``modeling_hrm_text.py``, ``HrmTextModel.__init__``)."""
    import torch

    best, lists = None, []
    for name, module in model.named_modules():
        if not isinstance(module, torch.nn.ModuleList) or not len(module) or is_tower(name):
            continue
        lists.append((name, module))
        size = sum(p.numel() for p in module.parameters())
        rank = (len(module) == n, size)
        if best is None or rank > best[0]:
            best = (rank, name, module)
    if best is None:
        raise ValueError(f"{type(model).__name__} has no list of decoder layers to read")
    cls = type(best[2][0])
    chosen = [(name, module) for name, module in lists if name == best[1] or (
        all(type(item) is cls for item in module) and not any(name.startswith(f"{c}.") for c, _ in lists if c != name))]
    return tuple(name for name, _ in chosen), [block for _, module in chosen for block in module]


def is_tower(path: str) -> bool:
    return any(word in part for part in path.lower().split(".") for word in TOWER_WORDS)


def _in_mlp(path: str, mlp_children: set[str]) -> bool:
    """Whether a module of a decoder layer belongs to its MLP: under ``mlp``, ``feed_forward``, ``moe``..., under
    a child whose class is an MLP or MoE (``mlp_children``: Nemotron-H's ``mixer``), or a feed-forward projection
    that is a direct child of the layer (OPT's ``fc1``)."""
    parts = path.lower().split(".")
    return (any(word in parts[0] for word in MLP_WORDS) or path.split(".")[0] in mlp_children
            or (len(parts) == 1 and parts[0] in MLP_LEAVES))


def _layer_structure(block, hidden: int, top_k: int, seen: set[int]) -> dict[str, Any]:
    """Linears (merged by name and shape: expert lists become one linear with a count), norms and the other
    parameters of one decoder layer, split between its token mixer and its MLP. Parameters in ``seen`` (shared
    with an earlier layer, as Zamba's shared attention block is) are counted there only."""
    import torch

    found: list[tuple[str, Linear]] = []  # (path, linear)
    fused: dict[str, list] = {}  # experts module path -> [(param name, shape)]
    norms = attention_extra = mlp_extra = 0
    mlp_children = {name for name, child in block.named_children() if MLP_CLASS.search(type(child).__name__)}
    for path, module in block.named_modules():
        own = [(n, p) for n, p in module.named_parameters(recurse=False) if id(p) not in seen]
        seen.update(id(p) for _, p in own)
        if not own:
            continue
        kind = type(module).__name__
        mlp = _in_mlp(path, mlp_children)
        if isinstance(module, torch.nn.Linear) or kind == "Conv1D":
            w = module.weight
            in_f, out_f = (w.shape[0], w.shape[1]) if kind == "Conv1D" else (w.shape[1], w.shape[0])
            plain = type(module).forward in (torch.nn.Linear.forward,) or kind == "Conv1D"
            found.append((path, Linear(name=path.rsplit(".", 1)[-1], in_features=int(in_f), out_features=int(out_f),
                                       bias=getattr(module, "bias", None) is not None, group="mlp" if mlp else
                                       "attention", adaptable=plain)))
            continue
        if "norm" in kind.lower():
            norms += sum(p.numel() for _, p in own)
            continue
        named = dict(own)
        weight, bias = named.get("weight"), named.get("bias")
        if (weight is not None and weight.dim() == 2
                and not isinstance(module, (torch.nn.Conv1d, torch.nn.Embedding))):  # a custom router or linear
            has_bias = bias is not None and bias.dim() == 1
            found.append((path, Linear(name=path.rsplit(".", 1)[-1], in_features=int(weight.shape[1]),
                                       out_features=int(weight.shape[0]), bias=has_bias,
                                       group="mlp" if mlp else "attention", adaptable=False)))
            named.pop("weight")
            if has_bias:
                named.pop("bias")
        if _holds_experts(path, kind) and any(p.dim() == 3 for p in named.values()):  # (E, a, b), biases (E, out)
            fused[path] = [(pname, tuple(p.shape)) for pname, p in named.items()]
            continue
        for p in named.values():
            if mlp:
                mlp_extra += p.numel()
            else:
                attention_extra += p.numel()
    experts, leftover = _fused_experts(fused, hidden)
    mlp_extra += leftover
    linears = _merge(found, experts)
    moe = any(lin.group == "experts" for lin in linears)
    return dict(linears=linears, norm_params=norms, attention_extra=attention_extra, mlp_extra=mlp_extra, moe=moe,
                experts_per_token=top_k if moe else 0)


def _holds_experts(path: str, kind: str) -> bool:
    """Fused expert weights live in a module named for experts (``mlp.experts``, ``Llama4TextExperts``); other
    3-D parameters (block-diagonal gates, convolution kernels, RWKV's mixing vectors) are not experts."""
    return "expert" in path.lower() or "expert" in kind.lower()


def _fused_experts(fused: dict[str, list], hidden: int) -> tuple[list[Linear], int]:
    """3-D expert weights ``(E, a, b)`` as linears with ``count = E``: the side equal to the hidden size is the
    input of gate/up projections and the output of down projections (transformers stores either layout).
    2-D ``(E, out)`` siblings named ``<weight>_bias`` are their biases (gpt-oss). Returns the linears and the
    parameters of those modules that are neither (counted as MLP extras)."""
    out, leftover = [], 0
    for params in fused.values():
        shapes = dict(params)
        used: set[str] = set()
        for name, shape in params:
            if len(shape) != 3:
                continue
            E, a, b = shape
            down = "down" in name or name in ("w2", "wo")
            if down:
                in_f, out_f = (a, b) if b == hidden else (b, a)
            else:
                in_f, out_f = (a, b) if a == hidden else (b, a)
            bias = shapes.get(f"{name}_bias") == (E, out_f)
            used |= {name, f"{name}_bias"} if bias else {name}
            out.append(Linear(name=name, in_features=int(in_f), out_features=int(out_f), count=int(E),
                              group="experts", bias=bias, adaptable=False))
        for name, shape in params:
            if name not in used:
                n = 1
                for dim in shape:
                    n *= dim
                leftover += n
    return out, leftover


def _merge(found: list[tuple[str, Linear]], experts: list[Linear]) -> tuple[Linear, ...]:
    """One linear per distinct (name, shape, group); per-expert module lists (``experts.3.w1``) merge into one
    linear with ``count`` E; shared experts and routers get their groups; names stay the module's own name
    unless two modules of one group share it (then the shortest distinct suffix, ``mlp.c_proj``)."""
    num_experts = max((lin.count for lin in experts), default=0)
    routed = [(p, lin) for p, lin in found if re.search(r"\.experts?\.\d+\.", f".{p}")]
    plain = [(p, lin) for p, lin in found if not re.search(r"\.experts?\.\d+\.", f".{p}")]
    listed: dict[tuple, int] = {}
    for _, lin in routed:
        key = (lin.name, lin.in_features, lin.out_features, lin.bias)
        listed[key] = listed.get(key, 0) + 1
    num_experts = max([num_experts, *listed.values()])
    result: list[Linear] = []
    for p, lin in plain:
        group = lin.group
        if group == "mlp" and "shared" in p:
            group = "shared_experts"
        elif group == "mlp" and num_experts and lin.out_features == num_experts:
            group = "router"
        result.append(Linear(name=lin.name, in_features=lin.in_features, out_features=lin.out_features,
                             bias=lin.bias, group=group, adaptable=lin.adaptable))
    result = _unique_names(plain, result)
    for (name, i, o, bias), count in listed.items():
        result.append(Linear(name=name, in_features=i, out_features=o, bias=bias, count=count, group="experts"))
    return tuple(result) + tuple(experts)


def _unique_names(found: list[tuple[str, Linear]], linears: list[Linear]) -> list[Linear]:
    paths = [p for p, _ in found]
    out = []
    for k, (path, lin) in enumerate(zip(paths, linears, strict=True)):
        clash = [q for j, q in enumerate(paths) if j != k and linears[j].group == lin.group and
                 q.rsplit(".", 1)[-1] == lin.name]
        name = lin.name
        if clash:
            parts = path.split(".")
            for depth in range(2, len(parts) + 1):
                name = ".".join(parts[-depth:])
                if not any(q.endswith("." + name) or q == name for q in clash):
                    break
        out.append(Linear(name=name, in_features=lin.in_features, out_features=lin.out_features, bias=lin.bias,
                          count=lin.count, group=lin.group, adaptable=lin.adaptable))
    return out


# ---- outside the layers ----------------------------------------------------------------------------------
def _embedding_dim(model) -> int:
    emb = model.get_input_embeddings()
    return int(emb.weight.shape[1]) if emb is not None and hasattr(emb, "weight") else 0


def _top_level(model, text, layers: list[Layer], layers_names: tuple[str, ...], hidden: int, top_k: int
               ) -> dict[str, Any]:
    """Embeddings, head, final norms, towers and the rest: every parameter outside the decoder layers."""
    import torch

    params = dict(model.named_parameters())  # shared (tied) tensors appear once
    total = sum(p.numel() for p in params.values())
    emb = model.get_input_embeddings()
    head = model.get_output_embeddings() if hasattr(model, "get_output_embeddings") else None
    emb_w = getattr(emb, "weight", None)
    head_w = getattr(head, "weight", None) if isinstance(head, torch.nn.Module) else None
    vocab_in, dim = (int(emb_w.shape[0]), int(emb_w.shape[1])) if emb_w is not None else (0, hidden)
    tied = head_w is None or head_w is emb_w
    vocab = int(head_w.shape[0]) if head_w is not None and not tied else vocab_in
    layer_params = sum(layer.params for layer in layers)
    ids = {id(p) for p in (emb_w, head_w) if p is not None}
    norms = tower = positions = 0
    other_names: list[str] = []
    tower_linears: dict[tuple[str, int, int, bool], int] = {}
    for module_name, module in model.named_modules():
        if any(module_name == name or module_name.startswith(name + ".") for name in layers_names):
            continue
        if is_tower(module_name) and isinstance(module, torch.nn.Linear):  # what peft's all-linear wraps
            kind = (".".join(part for part in module_name.split(".") if not part.isdigit()), module.in_features,
                    module.out_features, module.bias is not None)
            tower_linears[kind] = tower_linears.get(kind, 0) + 1
        for pname, p in module.named_parameters(recurse=False):
            if id(p) in ids:
                continue
            ids.add(id(p))
            if is_tower(module_name):
                tower += p.numel()
            elif "norm" in type(module).__name__.lower():
                norms += p.numel()
            elif isinstance(module, torch.nn.Embedding):
                positions += p.numel()
            else:
                other_names.append(f"{module_name}.{pname}".lstrip("."))
    if head_w is not None and not tied and tuple(head_w.shape) != (vocab, dim):
        tied = True  # a head of another shape (a projection first): its parameters are counted under 'other'
        other_names.append("lm_head")
    head_b = getattr(head, "bias", None) if not tied else None
    head_bias = isinstance(head_b, torch.nn.Parameter)
    if head_bias:
        other_names = [n for n in other_names if not n.endswith(".bias") or not n.startswith(_path_of(model, head))]
    head_params = 0 if tied else vocab * dim + (vocab if head_bias else 0)
    extra_embedding = (emb_w.numel() if emb_w is not None else 0) - vocab * dim
    other = total - layer_params - vocab * dim - extra_embedding - head_params - norms - tower - positions
    heads = _int(_get(text, "num_attention_heads")) or 1
    head_dim = _int(_get(text, "head_dim")) or (hidden // heads if heads else 0)
    kv_layers = [lay for lay in layers if lay.kv_dims and lay.attention not in ("mla",)]
    kv_heads = _int(_get(text, "num_key_value_heads")) or (
        kv_layers[0].kv_dims // (2 * head_dim * kv_layers[0].runs) if kv_layers and head_dim else heads)
    moe_layers = [lay for lay in layers if lay.moe]
    experts = max((lin.count for lay in moe_layers for lin in lay.linears if lin.group == "experts"), default=0)
    arch: dict[str, Any] = dict(
        vocab_size=vocab, hidden_size=hidden, num_heads=heads, num_kv_heads=kv_heads, head_dim=head_dim,
        intermediate_size=_intermediate(text, layers, hidden), layers=layers, final_norm_params=norms,
        embedding_dim=dim, position_params=positions, projection_params=extra_embedding, vision_params=tower,
        other_params=other, tie_word_embeddings=tied, head_bias=head_bias, gated_mlp=_gated(layers),
        num_experts=experts, experts_per_token=top_k if experts else 0, _other_names=other_names,
        tower_linears=_tower_linears(tower_linears),
        eager_only=not getattr(model, "_supports_sdpa", True))
    mla = {key: _int(_get(text, key)) for key in ("q_lora_rank", "kv_lora_rank", "qk_nope_head_dim",
                                                  "qk_rope_head_dim", "v_head_dim")}
    if mla["kv_lora_rank"] and mla["qk_nope_head_dim"] and mla["qk_rope_head_dim"] and mla["v_head_dim"]:
        arch["mla"] = mla
        arch["head_dim"] = mla["qk_nope_head_dim"] + mla["qk_rope_head_dim"]
        arch["num_kv_heads"] = heads
    context = _int(_get(text, "max_position_embeddings"))
    if context:
        arch["max_context"] = context
    return arch


def _tower_linears(found: dict[tuple[str, int, int, bool], int]) -> tuple[Linear, ...]:
    """The towers' ``nn.Linear`` modules (subclasses too: ``nn.MultiheadAttention``'s out_proj), one
    :class:`Linear` per path with its layer indices dropped, ``count`` the modules on it, named by the path's last
    part as peft matches a target (``qkv``, ``linear_fc1``): what ``all-linear`` adapts beside the decoder's (peft
    ``_maybe_include_all_linear_layers``: every linear but the output head)."""
    return tuple(Linear(name=path.rsplit(".", 1)[-1], in_features=k, out_features=n, bias=bias, count=count,
                        group="mlp" if any(word in path.lower() for word in MLP_WORDS) else "attention")
                 for (path, k, n, bias), count in sorted(found.items()))


def _path_of(model, module) -> str:
    return next((name for name, m in model.named_modules() if m is module), "lm_head")


def _intermediate(text, layers: list[Layer], hidden: int) -> int:
    value = _int(_get(text, "intermediate_size"))
    if value:
        return value
    widths = [lin.in_features for lay in layers for lin in lay.linears
              if lin.group in ("mlp", "shared_experts", "experts") and lin.out_features == hidden]
    return max(widths, default=4 * hidden)


def _gated(layers: list[Layer]) -> bool:
    names = {lin.name.rsplit(".", 1)[-1] for lay in layers for lin in lay.linears if lin.group != "attention"}
    return bool(names & {"gate_proj", "gate_up_proj", "w1", "w3", "up_proj", "wi_0", "fc1_gate"})


def _int(value) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _get(cfg, key: str):
    """A config attribute; configs whose attributes vary per layer (Gemma 4) give the first layer's."""
    try:
        return getattr(cfg, key, None)
    except Exception:
        layers = getattr(cfg, "per_layer_config", None) or []
        return getattr(layers[0], key, None) if layers else None
