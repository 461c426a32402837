"""``ModelSpec``: what a model is, read from its Hugging Face ``config.json``.

Everything is derived from the layer list that :mod:`gpuplan.model.architectures` builds: parameter counts (equal
to ``transformers`` on the meta device), the parameters one token activates in a mixture of experts, the cache of
each layer kind (keys and values per token, capped by sliding and chunked windows, and the fixed recurrent state
of linear-attention and state-space layers), and the bytes of the weights as the checkpoint ships them
(``quantization_config`` wins over ``torch_dtype``). ``exact`` says whether the counts are exact; when they are
not (a family no reader knows, read without transformers), ``inexact_reason`` says why and what to do, and every
answer that uses the model repeats it.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from ..errors import GpuplanError
from .families import refuse_unknown
from .layers import Layer, Linear
from .quant import DTYPE_BYTES, Format, checkpoint_format
from .reading import family_of, not_a_decoder, read_architecture
from .validate import checked_config

# The dtype checkpoints ship in when their config.json does not say (the repos' safetensors headers).
SHIPPED_DTYPE = {"gpt2": "float32", "bloom": "bfloat16", "gpt_oss": "bfloat16", "phi3": "bfloat16",
                 "nanogpt": "float32"}
# nanoGPT's GPTConfig (karpathy/nanoGPT model.py) as its checkpoints' "model_args" hold it: no model_type of its own
NANOGPT_KEYS = frozenset({"n_layer", "n_head", "n_embd", "block_size", "vocab_size"})

PARTS = ("embeddings", "attention", "mlp", "experts", "norms", "lm_head", "vision", "other")


@dataclass(frozen=True, kw_only=True)
class ModelSpec:
    """A normalized decoder-only LLM. Build it with :meth:`ModelSpec.from_config`."""

    name: str
    family: str
    architecture: str
    vocab_size: int
    hidden_size: int
    num_heads: int
    num_kv_heads: int
    head_dim: int
    intermediate_size: int
    max_context: int | None
    tie_word_embeddings: bool
    embedding_dim: int
    position_params: int = 0
    projection_params: int = 0
    final_norm_params: int
    vision_params: int = 0  # vision / audio towers and their projectors
    # the towers' plain linears (counted in vision_params; ``count`` = the tower's layers): what peft's all-linear
    # wraps there too (peft tuners_utils ``_maybe_include_all_linear_layers``: every nn.Linear but the output head)
    tower_linears: tuple[Linear, ...] = ()
    other_params: int = 0  # anything else the checkpoint holds (MTP heads, extra projections)
    head_bias: bool = False
    eager_only: bool = False  # transformers has no SDPA attention for it (``_supports_sdpa = False``)
    layers: tuple[Layer, ...]
    gated_mlp: bool = True
    parallel_residual: bool = False
    activation: str = "silu"
    num_experts: int = 0
    experts_per_token: int = 0
    mla: dict[str, int | None] | None = field(default=None, hash=False)
    dtype: str
    dtype_assumed: bool = False
    quantization: dict[str, Any] | None = field(default=None, hash=False, compare=False)
    # ``group@i`` entries an engine holds at 16 bits beyond what the checkpoint leaves: a speculative draft's layers
    # loaded from a 16-bit checkpoint of their own (:func:`gpuplan.engines.speculative.served_model`)
    kept_layers: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()
    counted_by: str = "gpuplan"
    inexact_reason: str | None = None
    config: dict[str, Any] = field(default_factory=dict, repr=False, hash=False, compare=False)

    @classmethod
    def from_config(cls, config: dict[str, Any], name: str | None = None, *,
                    use_transformers: bool = True) -> ModelSpec:
        """Read a ``config.json`` dict (``use_transformers``: trace unknown families with transformers when it
        is installed). Raises :class:`GpuplanError` when it cannot describe a decoder."""
        if not isinstance(config, dict):
            raise GpuplanError(f"a config.json must hold a JSON object, got {type(config).__name__}")
        if isinstance(config.get("_class_name"), str):
            raise GpuplanError(f"{name or 'this config'} is a diffusers {config['_class_name']} config, not a decoder "
                               "LLM's: pass its path or name to gpuplan estimate, model or simulate")
        config = checked_config({k: v for k, v in config.items() if not k.startswith("_transcription")},
                                f"config.json of {name}" if name else "config.json")
        if config.get("model_type") is None and config.keys() >= NANOGPT_KEYS:
            config = {**config, "model_type": "nanogpt", "architectures": config.get("architectures") or ["GPT"]}
        reading = read_architecture(config, use_transformers=use_transformers)
        arch, notes = dict(reading.arch), list(reading.notes)
        text = config.get("text_config") or config
        tie = arch.pop("tie_word_embeddings", None)  # a traced structure knows what transformers built
        if tie is None:
            tie = config.get("tie_word_embeddings", text.get("tie_word_embeddings"))
        if tie is None:
            tie = arch.pop("tie_default", False)
        arch.pop("tie_default", None)
        dtype = config.get("torch_dtype") or config.get("dtype") or text.get("torch_dtype")
        assumed = dtype is None
        if assumed:
            dtype = SHIPPED_DTYPE.get(str(config.get("model_type")), "bfloat16")
            notes.append(f"config.json has no torch_dtype: assuming {dtype} weights")
        if dtype not in DTYPE_BYTES:
            raise GpuplanError(f"torch_dtype {dtype!r} is not supported; use float32, bfloat16 or float16")
        if min(arch.get("head_dim", 1), arch.get("hidden_size", 1), arch.get("num_heads", 1)) < 1:
            raise GpuplanError("the config gives a head, width or head count of 0: check hidden_size, "
                               "num_attention_heads and head_dim")
        distinct: dict[Layer, Layer] = {}  # identical layers share one object: lookups by layer stay cheap
        layers = tuple(distinct.setdefault(layer, layer) for layer in arch.pop("layers"))
        if not layers:
            raise GpuplanError("the config declares zero decoder layers (num_hidden_layers must be >= 1)")
        cached = any(layer.attention != "none" for layer in layers)  # a decoder's layers keep a cache to decode with
        if reading.counted_by.startswith("transformers") and "(bundled)" not in reading.counted_by \
                and not_a_decoder(config, cached):  # read off transformers now or before (bundled ones: decoders)
            built = (config.get("architectures") or [family_of(config)])[0]
            why = "filed by transformers under no class that generates text" + \
                ("" if cached else ", and no layer of it keeps a cache to decode with")
            raise refuse_unknown(config, f"{name or built} ({built}: {why})")
        context = text.get("max_position_embeddings") or arch.pop("max_context", None)
        arch.pop("max_context", None)
        if config.get("model_type") == "bloom":
            context = config.get("seq_length")
        return cls(
            name=name or config.get("_name_or_path") or (config.get("architectures") or ["model"])[0],
            family=family_of(config),
            architecture=(config.get("architectures") or ["?"])[0],
            max_context=context,
            tie_word_embeddings=bool(tie),
            embedding_dim=arch.pop("embedding_dim", arch["hidden_size"]),
            layers=layers,
            activation=str(text.get("hidden_act") or text.get("hidden_activation") or text.get("activation_function")
                           or "gelu"),
            dtype=str(dtype),
            dtype_assumed=assumed,
            quantization=config.get("quantization_config"),
            notes=tuple(notes),
            counted_by=reading.counted_by,
            inexact_reason=reading.inexact_reason,
            config=config,
            **arch,
        )

    # ---- structure -------------------------------------------------------------------------------
    @property
    def num_layers(self) -> int:
        return len(self.layers)

    @property
    def exact(self) -> bool:
        """Whether parameter counts and cache sizes are exact (see ``inexact_reason`` when not)."""
        return self.inexact_reason is None

    @property
    def is_moe(self) -> bool:
        return any(layer.moe for layer in self.layers)

    @property
    def rope_scaling(self) -> dict:
        """The text config's ``rope_scaling`` (``rope_parameters`` in transformers 5, which may hold one per layer
        kind: ``{"full_attention": {...}, "sliding_attention": {...}}``), as the engines read it; {} for none."""
        text = self.config.get("text_config") or self.config
        rope = text.get("rope_scaling") or text.get("rope_parameters") or self.config.get("rope_scaling")
        return rope if isinstance(rope, dict) else {}

    @property
    def scaled_context(self) -> int:
        """The context a config's ``rope_scaling`` already extends to, the model's own (what its quality holds to,
        whatever an engine derives: :meth:`gpuplan.engines.base.Engine.model_context`): YaRN reaches
        ``original_max_position_embeddings x factor`` (Qwen's long-context recipe adds it to a 32k config). Other
        kinds are taken as inside max_position_embeddings (llama3, longrope; Gemma 3 states its linear-scaled 128k
        there)."""
        rope = self.rope_scaling
        context = self.max_context or 0
        if not isinstance(rope.get("factor"), (int, float)):
            return context
        kind = rope.get("rope_type") or rope.get("type")
        if kind == "yarn" and isinstance(rope.get("original_max_position_embeddings"), int):
            return max(context, int(rope["original_max_position_embeddings"] * rope["factor"]))
        return context

    def layer_kinds(self) -> list[tuple[Layer, int]]:
        """Distinct layers with how many times each occurs, in order of first appearance."""
        return self._kinds

    @cached_property
    def _kinds(self) -> list[tuple[Layer, int]]:
        return list(Counter(self.layers).items())

    @property
    def lm_head(self) -> Linear | None:
        if self.tie_word_embeddings:
            return None
        return Linear(name="lm_head", in_features=self.embedding_dim, out_features=self.vocab_size, group="mlp",
                      bias=self.head_bias)

    # ---- parameters -----------------------------------------------------------------------------
    def params_breakdown(self) -> dict[str, int]:
        """Parameters by part; tied embeddings are counted once (under ``embeddings``)."""
        return dict(self._breakdown)

    @cached_property
    def _breakdown(self) -> dict[str, int]:
        parts = dict.fromkeys(PARTS, 0)
        parts["embeddings"] = self.vocab_size * self.embedding_dim + self.position_params + self.projection_params
        parts["lm_head"] = self.lm_head.params if self.lm_head else 0
        parts["norms"] = self.final_norm_params
        parts["vision"] = self.vision_params
        parts["other"] = self.other_params
        for layer, count in self.layer_kinds():
            parts["attention"] += count * (layer.params_in("attention") + layer.attention_extra)
            parts["mlp"] += count * (layer.params_in("mlp", "shared_experts") + layer.mlp_extra)
            parts["experts"] += count * (layer.params_in("experts", "router"))
            parts["norms"] += count * layer.norm_params
        return parts

    @cached_property
    def params_total(self) -> int:
        return sum(self._breakdown.values())

    @cached_property
    def params_active(self) -> int:
        """Parameters used per token: everything but the routed experts a token does not visit.

        Counts the embedding table and lm_head, as Mistral's 12.9B for Mixtral-8x7B does (OpenAI's 3.6B for
        gpt-oss-20b leaves the input embedding out).
        """
        routed_saving = sum(count * (layer.params - layer.params_active) for layer, count in self.layer_kinds())
        return self.params_total - routed_saving

    # ---- cache -----------------------------------------------------------------------------------
    def kv_bytes_per_token(self, dtype_bytes: float = 2) -> dict[str, float]:
        """Key and value bytes per token, per layer kind summed over that kind's layers (no window cap).

        ``2 · kv_heads · head_dim · bytes`` per attention layer (GQA), ``(kv_lora_rank + qk_rope_head_dim)
        · bytes`` per MLA layer (the latent transformers 5 and vLLM cache). Sliding and chunked layers store
        at most ``window`` tokens (:meth:`kv_bytes` applies the cap); linear-attention and state-space layers
        store no keys or values (their fixed state is :meth:`state_bytes`).
        """
        out: dict[str, float] = {}
        for layer, count in self.layer_kinds():
            if layer.kv_dims:
                key = layer.kind.removesuffix("+moe")
                out[key] = out.get(key, 0) + count * layer.kv_dims * dtype_bytes
        return out

    def state_bytes(self, dtype_bytes: float = 2) -> float:
        """Bytes of the fixed recurrent state of one sequence (convolution and SSM / delta-rule states of
        linear-attention and state-space layers): the same at 10 tokens and at 1M."""
        return sum(count * layer.state_elements * dtype_bytes for layer, count in self.layer_kinds())

    def kv_bytes(self, tokens: int, dtype_bytes: float = 2) -> float:
        """Cache bytes of one sequence of ``tokens`` tokens: keys and values, sliding and chunked windows
        capped at their size, plus the fixed recurrent states."""
        return sum(count * layer.cache_elements(tokens) * dtype_bytes for layer, count in self.layer_kinds())

    # ---- weight bytes ---------------------------------------------------------------------------
    @property
    def dtype_bytes(self) -> int:
        return DTYPE_BYTES[self.dtype]

    def weight_bytes(self, fmt: Format | None = None, skip: tuple[str, ...] = ("router",)) -> dict[str, float]:
        """Bytes of the weights by part when linear weights are stored in ``fmt`` (default: as shipped).

        Embeddings, lm_head, norms, biases and the linears in ``skip`` groups stay at ``fmt.high_bytes``; a
        ``group@i`` entry keeps that group of layer ``i`` alone there (a checkpoint's ``modules_to_not_convert``
        naming a few layers: :func:`gpuplan.model.quant.excluded_groups`).
        """
        if fmt is None:
            fmt, shipped_skip = self.shipped_format()
            skip = tuple(set(skip) | set(shipped_skip))
        if fmt.name.startswith("gguf-"):  # llama.cpp files: a type per tensor
            from .gguf import weight_bytes

            return weight_bytes(self, fmt.name[5:])
        params = self.params_breakdown()
        high = fmt.high_bytes
        out = dict.fromkeys(PARTS, 0.0)
        out["embeddings"] = fmt.embedding_bytes(self.vocab_size * self.embedding_dim) + high * (
            self.position_params + self.projection_params)
        if self.lm_head:
            out["lm_head"] = fmt.embedding_bytes(self.lm_head.weight_params) + high * self.lm_head.bias_params
        out["norms"] = params["norms"] * high
        out["vision"] = params["vision"] * high
        out["other"] = params["other"] * high
        for layer, count in self.layer_kinds():
            for lin in layer.linears:
                part = {"attention": "attention", "mlp": "mlp", "shared_experts": "mlp"}.get(lin.group, "experts")
                stored = lin.weight_params * high if lin.kept(skip) else fmt.linear_weight_bytes(lin)
                out[part] += count * (stored + lin.bias_params * high)
            out["attention"] += count * layer.attention_extra * high
            out["mlp"] += count * layer.mlp_extra * high
        whole = tuple(entry for entry in skip if "@" not in entry)
        for key, index in (entry.split("@") for entry in skip if "@" in entry):
            if int(index) >= len(self.layers):
                continue
            for lin in self.layers[int(index)].linears:
                if lin.kept((key,)) and not lin.kept(whole):
                    part = {"attention": "attention", "mlp": "mlp", "shared_experts": "mlp"}.get(lin.group, "experts")
                    out[part] += lin.weight_params * high - fmt.linear_weight_bytes(lin)
        return out

    def linear_names(self) -> dict[str, frozenset[str]]:
        """The names of the decoder's linears by group (``attention``: ``q_a_proj``, ``o_proj``...)."""
        names: dict[str, set[str]] = {}
        for layer in self.layers:
            for lin in layer.linears:
                names.setdefault(lin.group, set()).add(lin.name)
        return {group: frozenset(n) for group, n in names.items()}

    def group_layers(self) -> dict[str, int]:
        """How many decoder layers hold each group of linears (DeepSeek-R1: routers in 58 of 61)."""
        counts: dict[str, int] = {}
        for layer, count in self.layer_kinds():
            for group in {lin.group for lin in layer.linears}:
                counts[group] = counts.get(group, 0) + count
        return counts

    @cached_property
    def weight_formats(self) -> dict[tuple, tuple[Format, tuple[str, ...]]]:
        """The weight formats derived for this model (:func:`gpuplan.tensors.state.weight_format`), by the scenario
        fields each reads: each derived once, however many plans, stages and stages' timings read it."""
        return {}

    def shipped_format(self) -> tuple[Format, tuple[str, ...]]:
        """The checkpoint's weight format and the groups its quantization leaves at high precision."""
        high = 2 if self.quantization and self.dtype_bytes == 4 else self.dtype_bytes
        return checkpoint_format(self.quantization, high, self.num_layers, self.linear_names(), self.group_layers())
