"""The building blocks of a decoder: linear layers and decoder layers, with exact parameter counts.

A model is described by the tensors its ``transformers`` implementation allocates, so the counts here
equal ``sum(p.numel() for p in model.parameters())`` on the meta device (tested for every bundled config).
Linear layers are kept as shapes, not just totals, because memory estimates need them: LoRA adds
``r·(in + out)`` per targeted linear, quantizers store scales per block of a weight matrix, and ZeRO-3
gathers the largest layer at once.
"""

from __future__ import annotations

from dataclasses import astuple, dataclass
from functools import cached_property
from typing import Literal

Group = Literal["attention", "mlp", "shared_experts", "experts", "router"]
AttentionKind = Literal["full", "sliding", "mla"]


@dataclass(frozen=True, kw_only=True)
class Linear:
    """``count`` identical ``nn.Linear(in_features, out_features, bias)`` (``count`` > 1 for experts)."""

    name: str
    in_features: int
    out_features: int
    bias: bool = False
    count: int = 1
    group: Group = "attention"

    @property
    def weight_params(self) -> int:
        return self.count * self.in_features * self.out_features

    @property
    def bias_params(self) -> int:
        return self.count * self.out_features if self.bias else 0

    @property
    def params(self) -> int:
        return self.weight_params + self.bias_params


@dataclass(frozen=True, kw_only=True)
class Layer:
    """One decoder layer: its attention kind, its linears, its norms and ``attention_extra``
    parameters (gpt-oss attention sinks, one per head).

    ``kv_dims`` is the number of cached elements per token in this layer: ``2·kv_heads·head_dim`` for
    (grouped-query) attention, ``kv_lora_rank + qk_rope_head_dim`` for multi-head latent attention as
    vLLM and SGLang cache it (DeepSeek-V2 paper, section 2.1.3).
    """

    attention: AttentionKind
    window: int | None = None
    moe: bool = False
    linears: tuple[Linear, ...]
    norm_params: int
    attention_extra: int = 0
    kv_dims: int
    experts_per_token: int = 0

    def __hash__(self) -> int:  # estimators key dicts by layer, once per layer of the model
        return self._hash

    @cached_property
    def _hash(self) -> int:
        return hash(astuple(self))

    @property
    def params(self) -> int:
        return sum(lin.params for lin in self.linears) + self.norm_params + self.attention_extra

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

    @property
    def kind(self) -> str:
        """A short label: ``full``, ``sliding(4096)``, ``mla``, with ``+moe`` for expert layers."""
        label = f"sliding({self.window})" if self.attention == "sliding" else self.attention
        return label + ("+moe" if self.moe else "")
