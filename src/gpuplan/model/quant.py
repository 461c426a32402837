"""Bytes of weights in each storage format: plain dtypes and the quantizers people use.

Each format stores the weight matrix of a linear layer; the modules libraries keep in high precision
(embeddings, lm_head, norms, MoE routers, biases) stay at the compute dtype. Byte counts, per
``in x out`` weight with ``n = in·out``:

- ``int8``: bitsandbytes LLM.int8 (Dettmers et al. 2022): int8 matrix + one fp32 scale per output row.
- ``nf4`` / ``fp4``: bitsandbytes 4-bit, blocksize 64. Packed 4-bit values ``n/2``; absmax per block as
  fp32 (``4·n/64``) or, with double quantization (QLoRA paper, section 3), as 8 bits plus one fp32 per
  256 blocks: ``n/64 + 4·n/(64·256)``, i.e. 0.127 bit/param instead of 0.5.
- ``gptq-int4`` / ``gptq-int8``: AutoGPTQ layout, group 128: packed int32 qweight, qzeros (bits per group
  and column), fp16 scales per group and column, int32 ``g_idx`` per input row.
- ``awq-int4``: AutoAWQ GEMM layout, group 128: as GPTQ without ``g_idx``.
- ``fp8``: one byte per weight, plus an fp32 scale per tensor or per ``128 x 128`` block (DeepSeek-V3).
- ``mxfp4``: OCP microscaling, 32 fp4 values share one e8m0 scale: 17 bytes per 32 weights (4.25 bits).
- ``nvfp4``: NVIDIA's fp4 (Blackwell, TensorRT-LLM / ModelOpt): 16 e2m1 values share one e4m3 scale, plus one
  fp32 scale per tensor: 9 bytes per 16 weights (4.5 bits) + 4 bytes (NVIDIA, "Introducing NVFP4", 2025; the
  ModelOpt checkpoints' ``weight_scale`` (fp8, ``in/16`` per row) and ``weight_scale_2`` (fp32)).
- ``gguf-<ftype>``: llama.cpp files: a type per tensor by the file type's rules (:mod:`gpuplan.model.gguf`),
  the token embedding and output matrices quantized too.
- ``mlx-4bit`` / ``mlx-8bit``: MLX's affine quantization as ``mlx_lm.convert -q`` writes it (mlx-community
  checkpoints): groups of 64 values, each with a scale and a bias in the 16-bit dtype (``mlx.core.quantize``:
  ``group_size=64``, ``bits=4``): ``n·bits/8 + 4·n/64`` bytes, 4.5 and 8.5 bits per weight; the token embedding and
  the output head are quantized too (``QuantizedEmbedding``, ``QuantizedLinear``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ..errors import GpuplanError, UnknownNameError, echo_value
from .layers import Linear

DTYPE_BYTES = {"float32": 4, "fp32": 4, "bfloat16": 2, "bf16": 2, "float16": 2, "fp16": 2, "float8": 1,
               "fp8": 1, "int8": 1}

# llama.cpp's formats (kept here, not in gpuplan.model.gguf, so that a plan of no GGUF file loads none of the GGUF
# rules): ggml type -> (elements per block, bytes per block), from ggml/src/ggml-common.h's block structs
BLOCKS = {
    "f32": (1, 4), "f16": (1, 2), "bf16": (1, 2), "q8_0": (32, 34), "q4_0": (32, 18), "q4_1": (32, 20),
    "q5_0": (32, 22), "q5_1": (32, 24), "q2_k": (256, 84), "q3_k": (256, 110), "q4_k": (256, 144),
    "q5_k": (256, 176), "q6_k": (256, 210), "iq1_s": (256, 50), "iq1_m": (256, 56), "iq2_xxs": (256, 66),
    "iq2_xs": (256, 74), "iq2_s": (256, 82), "iq3_xxs": (256, 98), "iq3_s": (256, 110), "iq4_nl": (32, 18),
    "iq4_xs": (256, 136), "mxfp4": (32, 17),
}

# file type -> its default tensor type (llama_ftype_get_default_type)
FTYPES = {
    "f32": "f32", "f16": "f16", "bf16": "bf16", "q8_0": "q8_0", "q4_0": "q4_0", "q4_1": "q4_1", "q5_0": "q5_0",
    "q5_1": "q5_1", "q2_k": "q2_k", "q2_k_s": "q2_k", "q3_k_s": "q3_k", "q3_k_m": "q3_k", "q3_k_l": "q3_k",
    "q4_k_s": "q4_k", "q4_k_m": "q4_k", "q5_k_s": "q5_k", "q5_k_m": "q5_k", "q6_k": "q6_k", "iq1_s": "iq1_s",
    "iq1_m": "iq1_m", "iq2_xxs": "iq2_xxs", "iq2_xs": "iq2_xs", "iq2_s": "iq2_xs", "iq2_m": "iq2_s",
    "iq3_xxs": "iq3_xxs", "iq3_xs": "iq3_s", "iq3_s": "iq3_s", "iq3_m": "iq3_s", "iq4_nl": "iq4_nl",
    "iq4_xs": "iq4_xs", "mxfp4_moe": "mxfp4",
    # block types named directly: not llama.cpp file types; read as ``llama-quantize --pure`` (every tensor)
    "q3_k": "q3_k", "q4_k": "q4_k", "q5_k": "q5_k",
}

# llama.cpp block formats: bits per weight = block bytes * 8 / block size (ggml-common.h); whole GGUF files
# (a type per tensor, by the file type's rules) are priced by :mod:`gpuplan.model.gguf`.
GGUF_BITS = {kind: 8 * size / per for kind, (per, size) in BLOCKS.items()}

# a diffusion module's weights stored in fp8 two ways beside plain fp8 (gpuplan.model.profile reads them): every
# weight of the module in fp8, as kohya sd-scripts' --fp8_base (flux_train_network.py load_target_model:
# model.to(torch.float8_e4m3fn), the norms and modulation linears too), where diffusers' layerwise casting skips some
FP8_ALL = "fp8-all"
# every nn.Linear and nn.Conv2d stored in fp8, the rest (norms, biases, embeddings) 16-bit: optimum-quanto's
# quantize(model, weights=qfloat8) as ai-toolkit calls it with model.quantize true (ostris/ai-toolkit
# toolkit/stable_diffusion_model.py load_model, no exclude for FLUX; optimum/quanto/nn/qmodule.py quantize_module:
# QLinear and QConv2d take the weights, QLayerNorm only with quantized activations), the adaptive norms' linears too
FP8_LINEARS = "fp8-linears"
QUANT_FORMATS = ("none", "int8", "nf4", "fp4", "gptq-int4", "gptq-int8", "awq-int4", "fp8", "mxfp4", "nvfp4",
                 "mlx-4bit", "mlx-8bit", *(f"gguf-{t}" for t in FTYPES))
MLX_GROUP = 64  # mlx.core.quantize's default group size


def mlx_bits(name: str) -> int:
    """Bits per value of an ``mlx-<bits>bit`` format."""
    return int(name[4:-3])


@dataclass(frozen=True, kw_only=True)
class Format:
    """How linear weights are stored. ``high_bytes`` is the dtype of everything kept unquantized."""

    name: str = "none"
    high_bytes: int = 2
    double_quant: bool = True
    group_size: int = 128
    fp8_block: tuple[int, int] | None = None

    @property
    def quantizes_embeddings(self) -> bool:
        return self.name.startswith(("gguf-", "mlx-"))

    def linear_weight_bytes(self, lin: Linear) -> float:
        """Bytes of the weight matrices of ``lin`` (biases are counted apart, at ``high_bytes``)."""
        i, o, n = lin.in_features, lin.out_features, lin.in_features * lin.out_features
        name = self.name
        if name == "none":
            per = n * self.high_bytes
        elif name == "int8":
            per = n + 4 * o
        elif name in ("nf4", "fp4"):
            blocks = math.ceil(n / 64)
            per = n / 2 + (blocks + 4 * math.ceil(blocks / 256) if self.double_quant else 4 * blocks)
        elif name.startswith(("gptq-", "awq-")):
            bits = 4 if name.endswith("int4") else 8
            groups = 1 if self.group_size == -1 else math.ceil(i / self.group_size)
            per = n * bits / 8 + groups * o * bits / 8 + 2 * groups * o + (4 * i if name.startswith("gptq") else 0)
        elif name == "fp8":
            bi, bo = self.fp8_block or (i, o)
            per = n + 4 * math.ceil(o / bo) * math.ceil(i / bi)
        elif name == "mxfp4":
            per = math.ceil(n / 32) * 17
        elif name == "nvfp4":
            per = math.ceil(n / 16) * 9 + 4
        elif name.startswith("gguf-"):  # one linear alone, at the file type's default type (files: model.gguf)
            per = n * GGUF_BITS[FTYPES[name[5:]]] / 8
        elif name.startswith("mlx-"):
            per = n * mlx_bits(name) / 8 + 2 * self.high_bytes * math.ceil(n / MLX_GROUP)
        else:  # validated in make_format
            raise AssertionError(name)
        return per * lin.count

    def embedding_bytes(self, params: int) -> float:
        if self.name.startswith("mlx-"):
            return params * mlx_bits(self.name) / 8 + 2 * self.high_bytes * math.ceil(params / MLX_GROUP)
        if self.quantizes_embeddings:
            return params * GGUF_BITS[FTYPES[self.name[5:]]] / 8
        return params * self.high_bytes


def make_format(name: str, *, high_bytes: int = 2, double_quant: bool = True, group_size: int = 128,
                fp8_block: tuple[int, int] | None = None) -> Format:
    """A :class:`Format` from a scenario's ``quant`` name, with a clear error for unknown names."""
    key = name.strip().lower()
    if key not in QUANT_FORMATS:
        hint = f"choose one of: {', '.join(QUANT_FORMATS[:9])}, gguf-<type>"
        raise UnknownNameError("quant format", name, QUANT_FORMATS, hint=hint)
    if group_size <= 0 and group_size != -1:  # -1: one group per column (GPTQ_GROUP_ALL)
        raise GpuplanError(f"quantization group size must be positive (or -1, one group per column), got {group_size}")
    return Format(name=key, high_bytes=high_bytes, double_quant=double_quant, group_size=group_size,
                  fp8_block=fp8_block)


def checkpoint_format(quantization: dict | None, high_bytes: int, num_layers: int | None = None,
                      linears: dict[str, frozenset[str]] | None = None,
                      group_layers: dict[str, int] | None = None) -> tuple[Format, tuple[str, ...]]:
    """The format a checkpoint ships in, from its ``quantization_config``, and the groups it leaves alone.

    Returns the format and the layer groups (``attention``, ``router``, ``experts``...) that stay at the
    high-precision dtype according to ``modules_to_not_convert`` (:func:`excluded_groups`; ``num_layers``: the
    model's decoder layers, which module paths naming one layer each must all be listed to cover; ``linears``: the
    model's linear names by group, so that a list naming some of a group's projections keeps those alone;
    ``group_layers``: how many layers hold each group, where fewer than all: DeepSeek-R1's routers are in 58 of 61).

    ``fbgemm_fp8`` (transformers' ``FbgemmFp8Config``, Meta's Llama 3.1 FP8 checkpoints): FP8 weights with one
    scale per output row, as vLLM loads them (``FBGEMMFp8LinearMethod``); the modules it lists stay in the
    checkpoint's dtype. Meta's Llama-3.1-405B-FP8 lists every layer's self-attention projections, the first and
    last layers' MLPs and ``lm_head`` (the Llama 3 paper, arXiv 2407.21783, section 6.2: FP8 in the feed-forward
    layers only, "we do not perform quantization in the first and last Transformer layers"); the two MLPs stay in
    bf16 as the layers they name (``mlp@0``, ``mlp@125``: :meth:`gpuplan.model.spec.ModelSpec.weight_bytes`), 5.2 GB
    more than at FP8 (0.61 GiB per GPU at TP 8).
    """
    if not quantization:
        return Format(name="none", high_bytes=high_bytes), ()
    _check_fields(quantization)
    method = str(quantization.get("quant_method", "")).lower()
    if method == "modelopt":
        return _modelopt_format(quantization, high_bytes, (num_layers, linears, group_layers))
    skip = excluded_groups(quantization.get("modules_to_not_convert") or [], num_layers, linears, group_layers)
    if method in ("fp8", "fbgemm_fp8"):
        block = quantization.get("weight_block_size")
        fp8_block = (int(block[0]), int(block[1])) if block else None
        return Format(name="fp8", high_bytes=high_bytes, fp8_block=fp8_block), skip
    if method == "mxfp4":
        return Format(name="mxfp4", high_bytes=high_bytes), skip
    if method == "bitsandbytes":
        if quantization.get("load_in_4bit"):
            kind = quantization.get("bnb_4bit_quant_type", "nf4")
            return Format(name=kind, high_bytes=high_bytes,
                          double_quant=bool(quantization.get("bnb_4bit_use_double_quant", False))), skip
        return Format(name="int8", high_bytes=high_bytes), skip
    if method in ("gptq", "awq"):
        bits = int(quantization.get("bits", 4))
        if method == "awq" and bits != 4:
            raise GpuplanError(f"AWQ checkpoints with {bits} bits are not supported; AWQ ships 4-bit weights")
        if bits not in (4, 8):  # GPTQ also writes 2 and 3 bits; their packing is not sized here
            raise GpuplanError(f"GPTQ checkpoints with {bits} bits are not supported; gpuplan sizes 4- and 8-bit "
                               "GPTQ weights")
        return Format(name=f"{method}-int{bits}", high_bytes=high_bytes,
                      group_size=int(quantization.get("group_size") or 128)), skip
    raise GpuplanError(f"quantization_config quant_method {method!r} is not supported; "
                       "supported: fp8, fbgemm_fp8, mxfp4, bitsandbytes, gptq, awq, modelopt")


# the keys of a quantization_config that the readers above take, and what each must hold (transformers'
# quantization_config classes: GPTQConfig/AwqConfig bits and group_size, FineGrainedFP8Config weight_block_size,
# BitsAndBytesConfig bnb_4bit_quant_type, modules_to_not_convert; ModelOpt's ignore / exclude_modules)
PATTERN_LISTS = ("modules_to_not_convert", "ignore", "exclude_modules")


def _check_fields(quantization: dict) -> None:
    """Each field :func:`checkpoint_format` reads holds what it must, or one sentence says which does not: a
    ``weight_block_size`` of other than two whole numbers >= 1, module lists that are not lists of text, a ``bits``
    or ``group_size`` that is not whole (``group_size`` -1 is GPTQ's one group per column: AutoGPTQ
    ``nn_modules/qlinear`` ``QuantLinear.__init__``, ``group_size if group_size != -1 else infeatures``), a 4-bit
    type other than nf4 and fp4, a nested ``quantization`` that is not an object. These ended in a traceback deep in
    the byte count (fuzz_s16: ``weight_block_size: [0, 0]`` a ZeroDivisionError, ``[128, 128, 128]`` a ValueError,
    ``modules_to_not_convert: [1]`` an AttributeError) or were read silently (``bits: 4.7`` as 4)."""
    nested = quantization.get("quantization")
    if nested is not None and not isinstance(nested, dict):
        raise GpuplanError(f"quantization_config's quantization must be an object, got {echo_value(nested)}")
    for where in (quantization, nested or {}):
        for key in PATTERN_LISTS:
            value = where.get(key)
            if value is not None and not (isinstance(value, list) and all(isinstance(v, str) for v in value)):
                raise GpuplanError(f"quantization_config's {key} must be a list of module names, got "
                                   f"{echo_value(value)}")
    block = quantization.get("weight_block_size")
    if block is not None and not (isinstance(block, list) and len(block) == 2 and all(_whole(b, 1) for b in block)):
        raise GpuplanError(f"quantization_config's weight_block_size must be two whole numbers >= 1 ([128, 128]), "
                           f"got {echo_value(block)}")
    for key, least in (("bits", 1), ("group_size", -1)):
        value = quantization.get(key)
        if value is not None and (not _whole(value, least) or value == 0):
            raise GpuplanError(f"quantization_config's {key} must be a whole number >= 1"
                               + (" (or -1, one group per column)" if key == "group_size" else "")
                               + f", got {echo_value(value)}")
    kind = quantization.get("bnb_4bit_quant_type")
    if quantization.get("load_in_4bit") and kind is not None and kind not in ("nf4", "fp4"):
        raise GpuplanError(f"quantization_config's bnb_4bit_quant_type must be nf4 or fp4, got {echo_value(kind)}")


def _whole(value: object, least: int) -> bool:
    """``value`` a whole number (4 or 4.0, not True, 4.7 or NaN) from ``least`` up to 2**31."""
    return not isinstance(value, bool) and isinstance(value, (int, float)) and math.isfinite(value) and \
        float(value).is_integer() and least <= value <= 2**31


def _modelopt_format(quantization: dict, high_bytes: int, model: tuple) -> tuple[Format, tuple[str, ...]]:
    """NVIDIA Model Optimizer checkpoints (``quant_method: modelopt``): ``quant_algo`` NVFP4 (16 e2m1 values per
    e4m3 scale, ``group_size`` 16) or FP8 (one scale per tensor), and the modules left in the checkpoint's dtype,
    ``ignore`` in config.json or ``exclude_modules`` as ``hf_quant_config.json`` nests them under ``quantization``
    (vLLM ``modelopt.py`` ``ModelOptFp8Config.from_config`` / ``ModelOptNvFp4Config.from_config``: the flat
    config.json form first, the nested one as fallback); ``model``: :func:`excluded_groups`' other arguments."""
    nested = quantization.get("quantization") or {}
    algo = str(quantization.get("quant_algo") or nested.get("quant_algo") or "").upper()
    patterns = quantization.get("ignore") or quantization.get("exclude_modules") or nested.get("exclude_modules")
    skip = excluded_groups(patterns or [], *model)
    if algo == "NVFP4":
        return Format(name="nvfp4", high_bytes=high_bytes, group_size=16), skip
    if algo == "FP8":
        return Format(name="fp8", high_bytes=high_bytes), skip
    raise GpuplanError(f"Model Optimizer quant_algo {algo or 'missing'!r} is not supported; supported: NVFP4, FP8")


_GROUPS = {"self_attn": "attention", "attention": "attention", "router": "router", "gate": "router",
           "shared_expert": "shared_experts", "shared_experts": "shared_experts", "experts": "experts", "mlp": "mlp"}


def _pattern_key(parts: list[str]) -> str | None:
    """The group a module path names (its innermost dotted part that names one), or ``group.linear`` where the
    next part names one linear of it (``model.layers.*.self_attn.q_a_proj`` -> ``attention.q_a_proj``); None for
    paths of no group and for norms (``self_attn.kv_a_layernorm``), which are not linears."""
    index = next((i for i in range(len(parts) - 1, -1, -1) if parts[i] in _GROUPS), None)
    if index is None:
        return None
    tail = parts[index + 1] if index + 1 < len(parts) else ""
    if "norm" in tail:
        return None
    group = _GROUPS[parts[index]]
    return f"{group}.{tail}" if tail and not tail.isdigit() else group


def excluded_groups(patterns: list[str], num_layers: int | None = None,
                    linears: dict[str, frozenset[str]] | None = None,
                    group_layers: dict[str, int] | None = None) -> tuple[str, ...]:
    """Layer groups that a checkpoint's unquantized-module patterns (``modules_to_not_convert``, ``ignore``,
    ``exclude_modules``) name, by their innermost dotted part that names one (``model.layers.*.self_attn`` ->
    attention, ``model.layers.*.mlp.gate`` -> router, ``model.layers.3.self_attn.q_proj`` -> attention). With
    ``linears`` (the model's linear names by group), a path naming one linear keeps it alone (``attention.q_a_proj``:
    :meth:`gpuplan.model.layers.Linear.kept`) unless the patterns name every linear of its group; a name the model
    does not have stands for its whole group. A group named by paths of single layers (``model.layers.<i>.``) is
    whole when they cover all ``num_layers`` layers, or all the layers that hold it (``group_layers``: a checkpoint
    that lists every layer's modules one by one);
    where they cover only some, each such layer's group is ``group@i`` (Meta's Llama-3.1-405B-FP8: ``mlp@0``,
    ``mlp@125``; a path naming a whole layer, NVIDIA's NVFP4 DeepSeek-R1's ``model.layers.61*``, its MTP layer, keeps
    every group of it), which no whole-group test matches: its bytes are counted in
    :meth:`gpuplan.model.spec.ModelSpec.weight_bytes`, its GEMMs are timed at the format of the rest."""
    whole, per_layer = set(), {}
    for pattern in patterns:
        parts = [p.rstrip("*") for p in pattern.split(".")]
        key = _pattern_key(parts)
        if key is None:
            whole_layer = len(parts) > 1 and parts[-2] == "layers" and parts[-1].isdigit()
            if linears and whole_layer and (num_layers is None or int(parts[-1]) < num_layers):  # one the model has
                per_layer.setdefault(int(parts[-1]), set()).update(linears)
            continue
        group, _, name = key.partition(".")
        key = key if name and linears is not None and name in linears.get(group, ()) else group
        layer = next((int(parts[i + 1]) for i, p in enumerate(parts[:-1]) if p == "layers" and parts[i + 1].isdigit()),
                     None)
        if layer is None:
            whole.add(key)
        else:
            per_layer.setdefault(layer, set()).add(key)
    by_layer: dict[str, set[int]] = {}
    for layer, keys in per_layer.items():
        for key in _collapse(keys, linears):
            by_layer.setdefault(key, set()).add(layer)
    counts = group_layers or {}
    whole = _collapse(whole | {k for k, layers in by_layer.items()
                               if num_layers is None or len(layers) >= counts.get(k.partition(".")[0], num_layers)},
                      linears)
    some = {f"{k}@{i}" for k, layers in by_layer.items() if k not in whole and k.partition(".")[0] not in whole
            for i in layers}
    return tuple(sorted(whole)) + tuple(sorted(some, key=lambda x: (x.split("@")[0], int(x.split("@")[1]))))


def _collapse(keys: set[str], linears: dict[str, frozenset[str]] | None) -> set[str]:
    """``keys`` with the ``group.linear`` entries of a group whose every linear is named, or whose group is named
    whole, replaced by the group."""
    for group, names in (linears or {}).items():
        if names and all(f"{group}.{n}" in keys for n in names):
            keys = {k for k in keys if k.partition(".")[0] != group} | {group}
    return {k for k in keys if "." not in k or k.partition(".")[0] not in keys}
