"""The building blocks of a decoder: linear layers and decoder layers, with exact parameter counts.

A model is described by the tensors its ``transformers`` implementation allocates, so the counts here
equal ``sum(p.numel() for p in model.parameters())`` on the meta device (tested for every bundled config and
every causal-LM architecture transformers ships). Linear layers are kept as shapes, not just totals, because
memory estimates need them: LoRA adds ``r·(in + out)`` per targeted linear, quantizers store scales per block of
a weight matrix, and ZeRO-3 gathers the largest layer at once.

A layer's token mixer is one of:

- ``full``: softmax attention over every earlier token; its cache grows by ``kv_dims`` elements per token;
- ``sliding`` / ``chunked``: attention over the last ``window`` tokens (Mistral, Gemma 2/3, gpt-oss) or within
  fixed chunks of ``window`` tokens (Llama 4); the cache stops growing at ``window`` tokens (transformers'
  ``DynamicSlidingWindowLayer`` holds both);
- ``mla``: multi-head latent attention (DeepSeek-V2/V3, Kimi K2): the cache holds the compressed latent and the
  shared rope key, ``kv_lora_rank + qk_rope_head_dim`` per token (DeepSeek-V2 paper, section 2.1.3);
- ``linear``: linear attention with a fixed-size recurrent state (Gated DeltaNet in Qwen3-Next and Qwen3.5,
  Kimi Delta Attention, lightning attention): no per-token cache, ``state_elements`` per sequence;
- ``mamba``: a state-space mixer (Mamba, Mamba-2 in Granite 4, Nemotron-H, Jamba): a convolution state and an
  SSM state, ``state_elements`` per sequence;
- ``conv``: a short causal convolution (LFM2): a convolution state per sequence;
- ``hybrid``: attention and a state-space mixer side by side in one layer (Falcon-H1, Hymba): both caches;
- ``cross``: cross-attention to an image or audio encoder (Mllama): no cache per text token;
- ``none``: no cache of its own (layers that reuse another layer's keys and values, MLP-only layers).
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from functools import cached_property
from typing import Literal

Group = Literal["attention", "mlp", "shared_experts", "experts", "router"]
AttentionKind = Literal["full", "sliding", "chunked", "mla", "linear", "mamba", "conv", "hybrid", "cross", "none"]
WINDOWED = ("sliding", "chunked")  # kinds whose cache stops growing at ``window`` tokens


@dataclass(frozen=True, kw_only=True)
class Linear:
    """``count`` identical ``nn.Linear(in_features, out_features, bias)`` (``count`` > 1 for experts).

    ``adaptable`` is False for linears peft's ``all-linear`` must not adapt: subclasses of ``nn.Linear`` whose
    forward returns more than a tensor (Llama 4's router returns scores and logits) and routers that are not
    linears at all (gpt-oss).
    """

    name: str
    in_features: int
    out_features: int
    bias: bool = False
    count: int = 1
    group: Group = "attention"
    adaptable: bool = True

    @property
    def weight_params(self) -> int:
        return self.count * self.in_features * self.out_features

    @property
    def bias_params(self) -> int:
        return self.count * self.out_features if self.bias else 0

    @property
    def params(self) -> int:
        return self.weight_params + self.bias_params

    def kept(self, skip: tuple[str, ...]) -> bool:
        """Whether a checkpoint's unquantized ``skip`` groups hold this linear: its whole group (``attention``)
        or it alone (``attention.q_a_proj``: :func:`gpuplan.model.quant.excluded_groups`)."""
        return self.group in skip or f"{self.group}.{self.name}" in skip


@dataclass(frozen=True, kw_only=True)
class Layer:
    """One decoder layer: its token mixer (``attention``), its linears, its norms and the other parameters of
    its mixer (``attention_extra``: gpt-oss attention sinks, Mamba's ``A_log``, ``D``, ``dt_bias`` and convolution
    weights) and of its MLP (``mlp_extra``).

    The cache of one sequence in this layer is ``kv_dims`` elements per token (``2·kv_heads·head_dim`` for
    grouped-query attention; the latent for MLA), at most ``window`` tokens for sliding and chunked layers, plus
    ``state_elements`` fixed elements (convolution and recurrent states of linear-attention and state-space
    mixers) whatever the length.

    A forward runs the layer ``runs`` times with its one set of weights, ``grad_runs`` of them with autograd on
    (the others leave nothing for the backward): HRM-Text runs its low-level stack ``H_cycles x L_cycles`` times,
    the last ``L_bp_cycles`` of each high-level cycle with gradients, and its high-level stack ``H_cycles`` times
    (transformers ``modeling_hrm_text.py``, ``HrmTextModel.forward``). Each run caches its own keys and values
    (one cache slot per run there): ``kv_dims`` and ``state_elements`` hold what all its runs cache together, the
    FLOPs count every run and the parameters count the layer once.
    """

    attention: AttentionKind
    window: int | None = None
    moe: bool = False
    linears: tuple[Linear, ...]
    norm_params: int
    attention_extra: int = 0
    mlp_extra: int = 0
    kv_dims: int
    state_elements: int = 0
    experts_per_token: int = 0
    runs: int = 1
    grad_runs: int = 1

    def __hash__(self) -> int:  # estimators key dicts by layer, once per layer of the model
        return self._hash

    @cached_property
    def _hash(self) -> int:  # the fields as they are (astuple's deep copy of every linear took ~5 ms a model)
        return hash(tuple(getattr(self, f.name) for f in fields(self)))

    @property
    def params(self) -> int:
        return sum(lin.params for lin in self.linears) + self.norm_params + self.attention_extra + self.mlp_extra

    def params_in(self, *groups: Group) -> int:
        return sum(lin.params for lin in self.linears if lin.group in groups)

    @property
    def params_active(self) -> int:
        """Parameters one token uses: the routed experts count ``experts_per_token`` of ``count``."""
        total = self.params
        for lin in self.linears:
            if lin.group == "experts":
                total -= lin.params - lin.params // lin.count * self.experts_per_token
        return total

    def cached_tokens(self, tokens: int) -> int:
        """Tokens this layer keeps keys and values for after ``tokens`` tokens (0 for state-only mixers)."""
        if not self.kv_dims:
            return 0
        return min(tokens, self.window) if self.attention in WINDOWED and self.window else tokens

    def cache_elements(self, tokens: int) -> int:
        """Cached elements of one sequence of ``tokens`` tokens: keys and values up to the window, plus the
        fixed recurrent state."""
        return self.kv_dims * self.cached_tokens(tokens) + self.state_elements

    @property
    def kind(self) -> str:
        """A short label: ``full``, ``sliding(4096)``, ``chunked(8192)``, ``mla``, ``linear``, ``mamba``..., with
        ``+moe`` for expert layers."""
        label = f"{self.attention}({self.window})" if self.attention in WINDOWED and self.window else self.attention
        return label + ("+moe" if self.moe else "")


def attends(layer: Layer) -> bool:
    """Whether a layer's token mixer computes attention scores: not a Mamba layer, nor a layer of kind ``none``
    without a query projection (an MLP-only layer: Nemotron-H's expert layers, ``E`` in ``hybrid_override_pattern``,
    whose mixer is NemotronHMoE alone in transformers' modeling_nemotron_h.py); a ``none`` layer that reuses
    another layer's keys and values (Gemma 4's) keeps its ``q_proj`` and attends. Linear-attention (Gated DeltaNet,
    xLSTM's mLSTM) and short-convolution mixers do not: :func:`gpuplan.speed.work.linear_scans_s` times them."""
    if layer.attention in ("mamba", "linear", "conv"):
        return False
    return layer.attention != "none" or any(lin.name == "q_proj" for lin in layer.linears)
