"""Plain-data views of domain objects for ``--json`` output and for the rich tables of the CLI.

Pure functions from objects to dicts of numbers and strings; nothing here prints.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .quant import make_format
from .spec import ModelSpec

if TYPE_CHECKING:
    from .module_spec import ModuleSpec

GIB = 2**30


# model_type values that name a family by an older or internal name
FAMILY_NAMES = {"RefinedWeb": "falcon", "RefinedWebModel": "falcon", "gemma3_text": "gemma3"}


def inexact_warning(spec: ModelSpec) -> str | None:
    """The sentence every answer that uses a model not counted exactly must show (None when exact)."""
    if spec.exact:
        return None
    return f"{spec.name} is not counted exactly, so every number below may be off: {spec.inexact_reason}"


def model_summary(spec: ModelSpec, repo: str | None = None) -> dict[str, Any]:
    """One row of ``gpuplan models``, with the short names people type for a bundled model."""
    from .catalog import short_names

    return {
        "name": repo or spec.name,
        "names": short_names().get(repo, []) if repo else [],
        "family": FAMILY_NAMES.get(spec.family, spec.family),
        "params_total": spec.params_total,
        "params_active": spec.params_active,
        "num_layers": spec.num_layers,
        "hidden_size": spec.hidden_size,
        "num_heads": spec.num_heads,
        "num_kv_heads": spec.num_kv_heads,
        "max_context": spec.max_context,
        "dtype": spec.dtype,
        "quantization": (spec.quantization or {}).get("quant_method"),
        "moe": spec.is_moe,
        "exact": spec.exact,
    }


def model_facts(spec: ModelSpec) -> dict[str, Any]:
    """Everything ``gpuplan model NAME`` shows."""
    shipped, _ = spec.shipped_format()
    weights = {
        "as_shipped": sum(spec.weight_bytes().values()),
        "bf16": sum(spec.weight_bytes(make_format("none")).values()),
        "int8": sum(spec.weight_bytes(make_format("int8")).values()),
        "int4": sum(spec.weight_bytes(make_format("nf4")).values()),
    }
    return {
        "name": spec.name,
        "family": FAMILY_NAMES.get(spec.family, spec.family),
        "architecture": spec.architecture,
        "params_total": spec.params_total,
        "params_active": spec.params_active,
        "params_breakdown": spec.params_breakdown(),
        "num_layers": spec.num_layers,
        "hidden_size": spec.hidden_size,
        "intermediate_size": spec.intermediate_size,
        "num_heads": spec.num_heads,
        "num_kv_heads": spec.num_kv_heads,
        "head_dim": spec.head_dim,
        "vocab_size": spec.vocab_size,
        "max_context": spec.max_context,
        "tie_word_embeddings": spec.tie_word_embeddings,
        "num_experts": spec.num_experts,
        "experts_per_token": spec.experts_per_token,
        "mla": spec.mla,
        "layer_kinds": [{"kind": layer.kind, "count": count, "window": layer.window,
                         "params_per_layer": layer.params, "kv_elements_per_token": layer.kv_dims,
                         "state_elements": layer.state_elements}
                        for layer, count in spec.layer_kinds()],
        "kv_bytes_per_token_bf16": spec.kv_bytes_per_token(2),
        "kv_bytes_per_token_bf16_total": sum(spec.kv_bytes_per_token(2).values()),
        "dtype": spec.dtype,
        "dtype_assumed": spec.dtype_assumed,
        "quantization": spec.quantization,
        "shipped_format": shipped.name if shipped.name != "none" else spec.dtype,
        "weight_bytes": weights,
        "weight_gib": {k: v / GIB for k, v in weights.items()},
        "state_bytes_per_sequence_bf16": spec.state_bytes(2),
        "exact": spec.exact,
        "exact_reason": spec.inexact_reason,
        "counted_by": spec.counted_by,
        "notes": list(spec.notes),
    }


def module_facts(spec: ModuleSpec) -> dict[str, Any]:
    """What ``gpuplan model`` says of a model that is not a decoder LLM: its components and exact counts."""
    return {"name": spec.name, "kind": spec.kind, "family": spec.family, "params_total": spec.params_total,
            "components": [{"name": c.name, "role": c.role, "library": c.library, "class": c.cls,
                            "params": c.params} for c in spec.components],
            "defaults": dict(spec.defaults), "counted_by": spec.counted_by, "exact": True, "notes": list(spec.notes)}
