"""The result: what every estimate returns and ``--json`` prints (design.md, "The result").

Plain pydantic models with units in their field names; the CLI, the web page and scripts read the same fields.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel


class MemoryReport(BaseModel):
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
    capacity_gib: float | None = None
    fits: bool | None = None
    headroom_gib: float | None = None
    peak_phase: str
    phases_gib: dict[str, float]
    cpu_gib: float = 0.0
    max_batch_size: int | None = None
    max_seq_len: int | None = None
    max_concurrency: int | None = None
    max_context_tokens: int | None = None
    kv_cache_pool_gib: float | None = None
    gpu_layers: int | None = None
    offloaded_layers: int | None = None
    engine: dict[str, Any] | None = None  # what the serving engine's startup log prints (vLLM, llama.cpp)
    logged_statistic: str | None = None  # what the training stack's own memory log prints
    logged_gib: float | None = None  # the estimate at that level (allocated or reserved)


class ModelFacts(BaseModel):
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


class Suggestion(BaseModel):
    change: str
    fields: dict[str, Any]
    device_peak_gib: float
    fits: bool | None
    cost: str
    combination: bool = False  # several fixes together (when no single one is enough)
    max_batch_size: int | None = None  # with a combination: the largest (micro-)batch that still fits
    max_seq_len: int | None = None  # ... and the longest context


class Result(BaseModel):
    scenario: dict[str, Any]
    resolved: str = ""  # the scenario as resolved, in one line (what every answer prints first)
    defaults: list[str] = []  # the defaults taken for this card and model, in words (GPU variant, precision, split)
    model: ModelFacts
    gpu: dict[str, Any] | None
    memory: MemoryReport
    suggestions: list[Suggestion] = []
    speed: dict[str, Any] | None = None
    cost: dict[str, Any] | None = None
    dataset: dict[str, Any] | None = None  # the training data: samples, tokens, lengths, batching (gpuplan.dataset)
    recipe: dict[str, Any] | None = None  # global batch, lr, schedule, layout, checkpoints, each with its source
    assumptions: list[str] = []
    warnings: list[str] = []

