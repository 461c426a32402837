"""The parts of every answer (design.md, "The result"): the memory report, the model's facts, a change that would
make a job fit, and :func:`to_dict`, every answer's JSON (the base of the other answers is
:class:`gpuplan.answer.Answer`).

Typed records with units in their field names; the CLI, the web page and scripts read the same fields. The parts a
first estimate makes are :class:`gpuplan.stored.StoredModel` records, validated and dumped by pydantic-core from their
stored core schemas, so that a first estimate defines no pydantic model. The plan itself
(:class:`gpuplan.plan.plan.Plan`) adds speed and cost, which live above this floor.
"""

# No `from __future__ import annotations`: the fields' annotations are read as objects (FieldInfo.annotation), and
# pydantic would compile them from their text when it builds a model (see gpuplan.scenario.fields).
import math
from typing import Any

from .stored import Field, StoredModel


def to_dict(answer: Any) -> dict[str, Any]:
    """An answer as plain JSON data (non-finite numbers as null), equal to its command's ``--json`` output: its dump
    in JSON mode. Every answer's ``to_dict``: an :class:`Answer`'s and the Plan's, which needs no ``Answer`` base."""
    return finite(answer.model_dump(mode="json"))


def finite(data: Any) -> Any:
    """``data`` with every non-finite float replaced by None, so that the JSON is strict (no NaN/Infinity)."""
    if isinstance(data, float):
        return data if math.isfinite(data) else None
    if isinstance(data, dict):
        return {str(k): finite(v) for k, v in data.items()}
    if isinstance(data, (list, tuple)):
        return [finite(v) for v in data]
    return data


class MemoryReport(StoredModel):
    weights_gib: float
    gradients_gib: float
    optimizer_gib: float
    activations_gib: float
    kv_cache_gib: float
    other_gib: float
    other: dict[str, float]
    allocated_peak_gib: float
    reserved_peak_gib: float
    device_peak_gib: float
    device_overheads: dict[str, float]
    cached_gib: float = 0.0  # reserved beyond the allocator's slack: freed blocks it keeps cached (fragmentation)
    capacity_gib: float | None = None
    fits: bool | None = None
    headroom_gib: float | None = None
    peak_phase: str
    phases_gib: dict[str, float]
    cpu_gib: float = 0.0
    max_batch_size: int | None = None
    # max_batch_size is the search's limit: every batch up to it fits and none above was tried (a floor, said "or
    # more"); said when set, so that other answers read as they did
    max_batch_size_capped: bool = Field(default=False, exclude_if=lambda v: not v)
    max_seq_len: int | None = None
    max_concurrency: int | None = None
    max_context_tokens: int | None = None
    kv_cache_pool_gib: float | None = None
    gpu_layers: int | None = None
    offloaded_layers: int | None = None
    engine: dict[str, Any] | None = None  # what the serving engine's startup log prints (vLLM, llama.cpp)
    logged_statistic: str | None = None  # what the training stack's own memory log prints
    logged_gib: float | None = None  # the estimate at that level (allocated or reserved)


class ModelFacts(StoredModel):
    name: str
    family: str
    params_total: int
    params_active: int
    params_trainable: int
    num_layers: int
    hidden_size: int
    num_kv_heads: int
    head_dim: int
    vocab_size: int
    layer_kinds: dict[str, int]
    exact: bool = True  # parameter counts and cache sizes exact (transformers' own model, or a verified reader)
    exact_reason: str | None = None  # when not exact: why, and what gives an exact answer
    counted_by: str = ""


class GpuFacts(StoredModel):
    id: str
    name: str
    memory_gib: float
    usable_gib: float
    architecture: str


class Suggestion(StoredModel):
    change: str
    fields: dict[str, Any]
    device_peak_gib: float
    fits: bool | None
    cost: str
    combination: bool = False  # several fixes together (when no single one is enough)
    max_batch_size: int | None = None  # with a combination: the largest (micro-)batch that still fits
    max_batch_size_capped: bool = Field(default=False, exclude_if=lambda v: not v)  # as MemoryReport's
    max_seq_len: int | None = None  # ... and the longest context


def usd_amount(value: float) -> str:
    """Dollars with the precision that matters, without the sign: 1,234 / 12.35 / 0.123 / 0.00045 (a $0.11 job is
    not written $0, nor 1,000 CLIP embeddings at $0.00045 written 0.000): below a tenth of a cent, two significant
    digits."""
    if 0 < value < 0.001:
        return f"{value:.{1 - math.floor(math.log10(value))}f}"
    return f"{value:,.0f}" if value >= 100 else f"{value:,.2f}" if value >= 1 else f"{value:.3f}"


def hours_words(hours: float) -> str:
    """A job's length as a sentence states it: 12.5 h; under six minutes, in minutes (a 3-minute fine-tune was
    written "0.0 h" beside its $0.01: the session-31 walk); under a minute, so."""
    if hours >= 0.1:
        return f"{hours:,.1f} h"
    return f"{hours * 60:.0f} min" if hours * 60 >= 0.5 else "under a minute"


def batch_words(n: int | None, capped: bool = False, *, why: bool = True) -> str:
    """The largest batch that fits, in words: 3,072; none; or, at the search's limit (``max_batch_size_capped``),
    "4,096 or more (the search stops there)" (``why`` False: "4,096 or more", a table's cell, its note saying why)."""
    if not n:
        return "none"
    return f"{n:,} or more{' (the search stops there)' if why else ''}" if capped else f"{n:,}"


def human_count(n: float) -> str:
    """8030261248 -> '8.03B', 124439808 -> '124.4M'."""
    for unit, size in (("T", 1e12), ("B", 1e9), ("M", 1e6), ("K", 1e3)):
        if abs(n) >= size:
            value = n / size
            return f"{value:.3g}{unit}" if value < 100 else f"{value:.1f}{unit}"
    return str(int(n))
