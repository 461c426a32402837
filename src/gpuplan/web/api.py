"""The JSON API: the Python API's inputs and outputs over HTTP (``--json`` prints the same objects).

``POST /api/estimate`` takes a scenario and returns :class:`~gpuplan.result.Plan`; ``POST /api/recommend`` a
scenario and constraints, returning what ``gpuplan recommend --json`` prints; ``GET /api/models`` and
``GET /api/gpus`` the rows of ``gpuplan models --json`` and ``gpuplan gpus --json``. The page also reads the
form (``/api/form``), the formulas (``/api/explain``), the exports (``/api/export``) and the catalog grid
(``/api/fit-grid``).
"""

from __future__ import annotations

from typing import Any, Literal, TypeVar

from fastapi import APIRouter, Query, Request
from pydantic import BaseModel, ConfigDict, Field, model_validator

from .. import api
from ..hardware import gpus
from ..model.catalog import bundled, load_model
from ..model.quant import QUANT_FORMATS
from ..model.report import model_summary
from ..plan.estimate import Plan
from ..plan.gpus import cheapest_rentals, gpu_row
from ..plan.recommend import Recommendation
from ..plan.resolve import resolve
from ..scenario import Scenario
from .explain import Explanation, explain
from .export import Export, export
from .forms import FieldSpec, field_specs
from .grid import Axis, FitGrid, fit_grid
from .guard import MAX_ITEMS, check_model, run_limited, with_uploads
from .uploads import MAX_UPLOAD_BYTES, hide_paths, save

M = TypeVar("M", bound=BaseModel)

router = APIRouter(prefix="/api")


class ServerScenario(Scenario):
    """The scenario as the server takes it: the CLI's, but a dataset or tokenizer file on the server's disk is
    refused before anything reads it (:func:`~gpuplan.web.guard.check_no_server_files`); a file the page uploaded
    (its ``upload:`` reference) and the shorthand work."""

    @model_validator(mode="before")
    @classmethod
    def _no_server_files(cls, data: Any) -> Any:
        return with_uploads(data)


class Upload(BaseModel):
    """A file the page read: a dataset (.jsonl, .json, .parquet, .csv) or a tokenizer.json, its bytes in base64."""

    model_config = ConfigDict(extra="forbid")

    kind: Literal["dataset", "tokenizer"]
    name: str = Field(min_length=1, max_length=200)
    content_base64: str = Field(max_length=-(-MAX_UPLOAD_BYTES // 3) * 4)


class Uploaded(BaseModel):
    ref: str  # what the scenario's dataset or tokenizer field takes
    name: str
    bytes: int


def _named(model: M) -> M:
    """``model`` with the uploaded files named as the user named them (:func:`~gpuplan.web.uploads.hide_paths`)."""
    return type(model).model_validate_json(hide_paths(model.model_dump_json()))


class ModelRow(BaseModel):
    name: str
    names: list[str] = []
    family: str
    params_total: int
    params_active: int
    num_layers: int
    hidden_size: int
    num_heads: int
    num_kv_heads: int
    max_context: int | None
    dtype: str
    quantization: str | None
    moe: bool
    exact: bool = True  # counted exactly (`gpuplan model NAME` says why not)


class GpuRow(BaseModel):
    id: str
    name: str
    vendor: str
    architecture: str
    segment: str
    memory_gib: float
    usable_gib: float
    bandwidth_gbs: float
    bf16_tflops: float | None
    fp8_tflops: float | None
    fp4_tflops: float | None
    nvlink_gbs: float | None
    tdp_w: float | None
    msrp_usd: float | None
    usd_per_gb: float | None
    msrp_usd_per_tflop: float | None
    rent_usd_per_hour: float | None
    rent_offer: str | None
    usd_per_tflop_hour: float | None


class RecommendOptions(BaseModel):
    """The constraints of ``gpuplan recommend`` (its ``--catalog`` files are a command-line matter)."""

    model_config = ConfigDict(extra="forbid")

    budget_usd: float | None = Field(default=None, gt=0, le=1e9, description="most the job may cost, USD")
    deadline_hours: float | None = Field(default=None, gt=0, le=1e6, description="longest the job may take")
    max_gpus: int = Field(default=8, ge=1, le=64, description="most GPUs in a setup (above 8: several nodes)")
    gpus: list[str] = Field(default=[], max_length=MAX_ITEMS, description="only these GPUs (ids or aliases)")
    providers: list[str] = Field(default=[], max_length=MAX_ITEMS, description="only these providers")
    have: list[str] = Field(default=[], max_length=8, description="hardware you own, priced by power: 2x3090")
    min_headroom: float = Field(default=0.0, ge=0.0, lt=1.0, description="share of GPU memory left free: 0.1")
    objective: Literal["cost", "time", "balanced"] = "cost"
    top: int = Field(default=10, ge=1, le=50)
    any_method: bool = Field(default=False, description="allow LoRA / QLoRA instead of the scenario's method")
    any_quant: bool = Field(default=False, description="allow quantized weights and an fp8 KV cache for serving")


class RecommendRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    scenario: ServerScenario
    constraints: RecommendOptions = RecommendOptions()


class GridRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    scenario: ServerScenario
    axis: Axis = "auto"


class Form(BaseModel):
    fields: list[FieldSpec]
    quants: list[str]
    providers: list[str]
    hub: bool
    max_upload_bytes: int = MAX_UPLOAD_BYTES  # the largest dataset or tokenizer file /api/upload keeps


def _estimate(s: Scenario, hub: bool) -> Plan:
    check_model(s.model, hub)
    return _named(api.estimate(s))


def _recommend(req: RecommendRequest, hub: bool) -> Recommendation:
    check_model(req.scenario.model, hub)
    return _named(api.recommend(req.scenario, **req.constraints.model_dump()))


def _explain(s: Scenario, hub: bool) -> Explanation:
    check_model(s.model, hub)
    result = api.estimate(s)
    r = resolve(s)  # the scenario the plan was computed for (the serving split, the card's precision)
    return _named(explain(result, r.scenario, r.model, r.gpu))


def _grid(req: GridRequest, hub: bool) -> FitGrid:
    check_model(req.scenario.model, hub)
    return _named(fit_grid(req.scenario, load_model(req.scenario.model), req.axis))


def _models(search: str | None, family: str | None) -> list[dict[str, Any]]:
    rows = [model_summary(load_model(repo), repo) for repo in bundled()]
    if family:
        rows = [r for r in rows if r["family"].lower() == family.lower()]
    if search:
        rows = [r for r in rows if search.lower() in r["name"].lower()]
    return sorted(rows, key=lambda r: r["params_total"])


@router.post("/estimate", response_model=Plan, summary="Does it fit, and where does the memory go")
async def estimate_route(scenario: ServerScenario, request: Request) -> Plan:
    """`gpuplan.estimate(scenario)`: memory per GPU at three levels, fit and headroom on a named GPU, the changes
    that would make it fit, speed and cost on the best offer (what `gpuplan estimate --json` prints)."""
    return await run_limited(_estimate, scenario, request.app.state.hub)


@router.post("/recommend", response_model=Recommendation, summary="The setups that fit, ranked")
async def recommend_route(body: RecommendRequest, request: Request) -> Recommendation:
    """`gpuplan recommend`: GPU type x count x strategy x techniques x offers, pruned by memory, ranked by cost,
    time or both, with the Pareto front of cost vs speed marked (what `gpuplan recommend --json` prints)."""
    return await run_limited(_recommend, body, request.app.state.hub)


@router.get("/models", response_model=list[ModelRow], summary="The bundled models")
async def models_route(search: str | None = Query(default=None, max_length=100),
                       family: str | None = Query(default=None, max_length=40)) -> list[dict[str, Any]]:
    """The rows of `gpuplan models --json` (sorted by parameters); any Hugging Face repo id works too when the
    server runs with `--hub`."""
    return await run_limited(_models, search, family)


def _gpus() -> list[dict[str, Any]]:
    rentals = cheapest_rentals()
    rows = [gpu_row(g, rentals.get(g.id)) for g in gpus().values()]
    return sorted(rows, key=lambda r: r["memory_gib"])


@router.get("/gpus", response_model=list[GpuRow], summary="The GPU catalog")
async def gpus_route() -> list[dict[str, Any]]:
    """The rows of `gpuplan gpus --json`: dense TFLOPS, memory (marketed and usable), bandwidth, NVLink, launch
    price, and the cheapest rental in force per hour and per TFLOP-hour."""
    return await run_limited(_gpus)


@router.get("/form", response_model=Form, summary="The scenario form")
async def form_route(request: Request) -> Form:
    """One input per scenario field (choices, bounds, defaults, hints), read from the Scenario model."""
    from ..market.store import load_offers

    return Form(fields=field_specs(), quants=list(QUANT_FORMATS), hub=request.app.state.hub,
                providers=sorted({o.provider for o in load_offers()}))


@router.post("/explain", response_model=Explanation, summary="Every number as its formula")
async def explain_route(scenario: ServerScenario, request: Request) -> Explanation:
    """Each number of the estimate as its formula with this scenario's values, the constants' sources, and the
    accuracy gpuplan measured for that kind of number; plus the defaults left in force."""
    return await run_limited(_explain, scenario, request.app.state.hub)


@router.post("/export", response_model=Export, summary="scenario.yaml, the CLI command, Markdown")
async def export_route(scenario: ServerScenario, request: Request) -> Export:
    """The scenario as a file `gpuplan estimate` reads, the equivalent command, a Markdown report and the
    permalink's query string."""
    result = await run_limited(_estimate, scenario, request.app.state.hub)
    return _named(export(scenario, result, str(request.base_url)))


@router.post("/upload", response_model=Uploaded, summary="A dataset or tokenizer.json for the scenario")
async def upload_route(body: Upload) -> Uploaded:
    """Keep a file the page read (at most 16 MiB; the server keeps the last 16) and answer its reference: a
    scenario's `dataset` (or `tokenizer`) set to it is read and tokenized as `gpuplan estimate --dataset FILE`
    does, with the model's own tokenizer from the server's Hugging Face cache unless a tokenizer.json is uploaded
    too."""
    return Uploaded(**await run_limited(save, body.kind, body.name, body.content_base64))


@router.post("/fit-grid", response_model=FitGrid, summary="The fit on every card of the catalog")
async def grid_route(body: GridRequest, request: Request) -> FitGrid:
    """Fits / does not fit with the headroom on every GPU of the catalog, against quantization (inference),
    method (training) or context length; and device memory against context length."""
    return await run_limited(_grid, body, request.app.state.hub)
