"""The fit across the whole GPU catalog at once: a GPU x quantization (or method, or context) grid, and the
device memory against the context length next to every card's capacity.

Every cell is the memory-only plan of the scenario with that card and that change
(the one builder's, :func:`gpuplan.plan.build.build` with ``memory_only``:
resolved, refused and judged as ``gpuplan estimate``'s plan is, without its speed, cost or advice); every point of
the curve the memory-only plan at that length.
"""

from __future__ import annotations

import math
from typing import Any, Literal

from pydantic import BaseModel

from ..engines import engine_for
from ..errors import GpuplanError
from ..hardware import gpus
from ..model.spec import ModelSpec
from ..plan.build import build
from ..plan.resolve import resolve
from ..scenario import Scenario

Axis = Literal["auto", "quant", "method", "context"]
QUANTS = ("none", "fp8", "int8", "awq-int4", "nf4")
GGUF = ("gguf-q8_0", "gguf-q6_k", "gguf-q5_k_m", "gguf-q4_k_m", "gguf-q3_k_m")
CONTEXTS = (1024, 2048, 4096, 8192, 16384, 32768, 65536, 131072)


class Cell(BaseModel):
    fits: bool | None  # None: the combination cannot run on this card (``reason`` says why)
    device_peak_gib: float | None = None
    headroom_gib: float | None = None
    max_concurrency: int | None = None  # vLLM: requests its KV pool holds (fits when >= batch_size)
    gpu_layers: int | None = None  # llama.cpp: layers placed on the GPU (fits when all are)
    reason: str = ""


class GridRow(BaseModel):
    gpu_id: str
    name: str
    capacity_gib: float
    cells: list[Cell]


class CurvePoint(BaseModel):
    tokens: int
    device_peak_gib: float | None


class Capacity(BaseModel):
    capacity_gib: float
    gpus: list[str]


class FitGrid(BaseModel):
    axis: str
    field: str
    columns: list[str]
    changes: list[dict[str, Any]]
    rows: list[GridRow]
    curve_field: str
    curve_tokens: int  # the scenario's own length on the curve (its resolved seq_len or prompt_tokens)
    curve: list[CurvePoint]
    capacities: list[Capacity]
    note: str = ""


def _columns(s: Scenario, axis: str) -> tuple[str, str, list[str], list[dict[str, Any]]]:
    if axis == "auto":
        axis = "quant" if s.task == "infer" else "method"
    if axis == "context":
        field = s.length_field
        return axis, field, [f"{n // 1024}k" for n in CONTEXTS], [{field: n} for n in CONTEXTS]
    if axis == "method":
        if s.task != "train":
            raise GpuplanError("the method axis is for training scenarios; use quant or context for inference")
        return axis, "method", ["full", "LoRA", "QLoRA"], [{"method": "full"}, {"method": "lora"},
                                                           {"method": "qlora", "quant": None}]
    if s.task == "train":
        raise GpuplanError("the quant axis is for inference; for training compare methods (full, LoRA, QLoRA)")
    names = QUANTS if engine_for(s).loads_quants else GGUF
    return axis, "quant", ["bf16" if q == "none" else q for q in names], [{"quant": q} for q in names]


def _cell(s: Scenario, m: ModelSpec, gpu_id: str) -> Cell:
    try:  # the card's defaults, as `gpuplan estimate` takes them (fp16 where there is no bf16)
        report = build(resolve(s, m, gpus()[gpu_id]), memory_only=True).memory
    except GpuplanError as err:
        return Cell(fits=None, reason=str(err))
    return Cell(fits=bool(report.fits), device_peak_gib=report.device_peak_gib, headroom_gib=report.headroom_gib,
                max_concurrency=report.max_concurrency, gpu_layers=report.gpu_layers)


def _curve(s: Scenario, m: ModelSpec, field: str) -> list[CurvePoint]:
    """Device memory at context lengths from 512 tokens to the model's maximum (and the scenario's own)."""
    top = max(m.max_context or 0, getattr(s, field), 4096)
    points = sorted({*(512 * 2**k for k in range(int(math.log2(top / 512)) + 1)), getattr(s, field), top})
    out = []
    for tokens in points:
        try:
            # vLLM and llama.cpp adapt to the card; without one they report what the batch needs
            changed = s.model_copy(update={field: tokens, **({"gpu": None} if engine_for(s).card_sized else {})})
            peak = build(resolve(changed, m), memory_only=True).memory.device_peak_gib
        except GpuplanError:
            peak = None
        out.append(CurvePoint(tokens=tokens, device_peak_gib=peak))
    return out


def fit_grid(s: Scenario, m: ModelSpec, axis: Axis = "auto") -> FitGrid:
    """Every card of the catalog (largest first) against each column's change to ``s``."""
    axis, field, columns, changes = _columns(s, axis)
    rows = []
    for gpu in sorted(gpus().values(), key=lambda g: (-g.usable_gib, g.id)):
        cells = []
        for change in changes:
            scenario = s.model_copy(update={**change, "gpu": gpu.id})
            cells.append(_cell(scenario, m, gpu.id))
        rows.append(GridRow(gpu_id=gpu.id, name=gpu.name, capacity_gib=gpu.usable_gib, cells=cells))
    curve_field = s.length_field
    by_capacity: dict[float, list[str]] = {}
    for gpu in gpus().values():
        by_capacity.setdefault(round(gpu.usable_gib, 1), []).append(gpu.name)
    note = engine_for(s).grid_note if s.task == "infer" else ""
    if s.num_gpus > 1:
        note += (" " if note else "") + f"per GPU, {s.num_gpus} GPUs of each kind"
    return FitGrid(axis=axis, field=field, columns=columns, changes=changes, rows=rows, curve_field=curve_field,
                   curve_tokens=getattr(s, curve_field), curve=_curve(s, m, curve_field),
                   capacities=[Capacity(capacity_gib=c, gpus=sorted(names))
                               for c, names in sorted(by_capacity.items())],
                   note=note)
