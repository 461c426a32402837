"""The JSON API: the Python API's inputs and outputs over HTTP (``--json`` prints the same objects).

``POST /api/estimate`` takes a scenario and returns :class:`~gpuplan.plan.plan.Plan`; ``POST /api/recommend`` a
scenario and constraints, returning what ``gpuplan recommend --json`` prints; ``POST /api/buy`` a build (or a
budget), workloads and the owner's terms, returning what ``gpuplan buy --json`` prints; ``GET /api/models`` and
``GET /api/gpus`` the rows of ``gpuplan models --json`` and ``gpuplan gpus --json``; ``POST /api/capacity`` a model,
a load and SLOs, returning what ``gpuplan capacity --json`` prints. The page also reads the
form (``/api/form``), the formulas (``/api/explain``), the exports (``/api/export``), the launch files
(``/api/launch``) and the catalog grid (``/api/fit-grid``).
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

import anyio.to_thread
from fastapi import APIRouter, Body, Query, Request, Response
from pydantic import BaseModel, ConfigDict, Field, SkipValidation, ValidationInfo, field_validator

from .. import api
from ..errors import RENAMED, number_fields
from .guard import MAX_ITEMS, UPLOADED, check_model, check_models, check_no_server_files, held, with_uploads
from .uploads import MAX_UPLOAD_BYTES

router = APIRouter(prefix="/api")
# A scenario as the request sends it: documented as the Scenario, validated by the job (off the event loop: reading
# a dataset it names is long work), after its upload references are checked (:func:`~.guard.with_uploads`).
RawScenario = SkipValidation[api.Scenario]


class Uploaded(BaseModel):
    ref: str  # what the scenario's dataset, tokenizer (or, for a config.json, model) field takes
    name: str
    bytes: int


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
    tf32_tflops: float | None = None
    fp32_tflops: float | None = None
    nvlink_gbs: float | None
    tdp_w: float | None
    msrp_usd: float | None
    usd_per_gb: float | None
    msrp_usd_per_tflop: float | None
    rent_usd_per_hour: float | None
    rent_offer: str | None
    usd_per_tflop_hour: float | None


class RequestBody(BaseModel):
    """A request body's fields: unknown ones refused, and a yes/no never read as a number (pydantic's lax mode
    reads ``true`` as 1: ``"users": true`` simulated one user)."""

    model_config = ConfigDict(extra="forbid")

    @field_validator("*", mode="before")
    @classmethod
    def _no_yes_for_a_number(cls, value: Any, info: ValidationInfo) -> Any:
        if isinstance(value, bool) and info.field_name in number_fields(cls):
            raise ValueError(f"takes a number, not {str(value).lower()}")
        return value


class RecommendOptions(RequestBody):
    """The constraints of ``gpuplan recommend`` (its ``--catalog`` files are a command-line matter)."""

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


class RecommendRequest(RequestBody):
    scenario: RawScenario
    constraints: RecommendOptions = RecommendOptions()


class BuyJob(RequestBody):
    """One job of the work: a scenario without hardware and how often it runs (gpuplan.owning.workloads.Job)."""

    name: str = Field(default="", max_length=80)
    scenario: dict[str, Any]
    per_year: float | None = Field(default=None, ge=0)  # bounded in runs a year by the workloads file's Job
    per_month: float | None = Field(default=None, ge=0)
    per_week: float | None = Field(default=None, ge=0)
    hours_per_day: float | None = Field(default=None, gt=0, le=24)
    output_tokens_per_day: float | None = Field(default=None, gt=0, le=1e13)


class BuyRequest(RequestBody):
    """``gpuplan buy``'s arguments (the workloads inline: the page reads no files on the server)."""

    build: str | None = Field(default=None, max_length=80, description="COUNTxCARD to price: 8x5090")
    workloads: list[BuyJob] = Field(default=[], max_length=20, description="the jobs and how often they run")
    rent: list[str] = Field(default=[], max_length=8, description="rent these instead: 8xh100-sxm")
    budget_usd: float | None = Field(default=None, gt=0, le=1e9, description="search the builds this buys")
    years: float | None = Field(default=None, gt=0, le=10)
    gpus: list[str] = Field(default=[], max_length=MAX_ITEMS, description="a search's cards")
    price: float | None = Field(default=None, gt=0, le=1e8, description="what you pay per card")
    used: bool = False
    have: str | None = Field(default=None, max_length=80, description="of the build's cards, those owned: 2x3090")
    host: str | None = Field(default=None, max_length=40)
    host_usd: float | None = Field(default=None, ge=0, le=1e7)
    host_ram_gib: float | None = Field(default=None, ge=1, le=65536)  # a computer holds some RAM (make_build's)
    display: Literal["none", "linux", "windows"] = "none"
    region: str | None = Field(default=None, max_length=40)
    sector: Literal["residential", "commercial"] = "residential"
    usd_per_kwh: float | None = Field(default=None, ge=0, le=10)
    pue: float = Field(default=1.0, ge=1, le=3)
    off_when_idle: bool = False
    hours: float | None = Field(default=None, ge=1, le=1e6)
    utilization: float | None = Field(default=None, gt=0, le=1)
    top: int = Field(default=10, ge=1, le=50)


class GridRequest(RequestBody):
    scenario: RawScenario
    axis: api.Axis = "auto"


class ModuleModel(BaseModel):
    """A bundled model that is not a decoder LLM: the form shows the fields its kind reads (FieldSpec.kinds)."""

    name: str
    names: list[str]
    kind: str  # diffusion | speech | encoder-decoder | encoder | text-encoder
    reads: dict[str, list[str]]  # per task, the fields its plan reads (gpuplan.scenario.modules.reads): the form's
    family: str
    params_total: int


class Form(BaseModel):
    fields: list[api.FieldSpec]
    module_models: list[ModuleModel] = []  # diffusion pipelines, Whisper, T5/BART, ViT/CLIP/SigLIP
    quants: list[str]
    providers: list[str]
    hub: bool
    max_upload_bytes: int = MAX_UPLOAD_BYTES  # the largest dataset or tokenizer file /api/upload keeps
    # fields renamed since a permalink may have been made (framework -> stack): the page reads the old names too
    renamed: dict[str, str] = dict(RENAMED)


def _scenario(data: Any, hub: bool) -> api.Scenario:
    """The scenario of a request: its model checked first (the model's name also finds its tokenizer), then
    validated, which reads and tokenizes a dataset it names. A model that is a config.json the page uploaded
    (:func:`~.guard.with_uploads` named it) is read as ``--model config.json`` reads a local one."""
    uploaded = data.get(UPLOADED, ()) if isinstance(data, dict) else ()
    if uploaded:
        data = {k: v for k, v in data.items() if k != UPLOADED}
    check_models(data, hub, skip=tuple(uploaded))
    s = api.scenario_from(data)
    check_models(s, hub, skip=tuple(uploaded))  # model_size's synthetic model, a renamed field
    return s


# The jobs: a request's whole work, the scenario read included, in a worker thread or the reader process (their
# arguments and JSON text cross the process boundary); the JSON is the Python API's objects, as --json prints.
def estimate_json(data: Any, hub: bool) -> str:
    return api.estimate(_scenario(data, hub)).model_dump_json()


def recommend_json(data: Any, hub: bool, constraints: dict[str, Any]) -> str:
    return api.recommend(_scenario(data, hub), **constraints).model_dump_json()


def buy_json(body: dict[str, Any], hub: bool) -> str:
    """``api.buy`` on the request's fields; each job's model checked as the page checks every model, and no job may
    name a file on the server."""
    jobs = body.pop("workloads")
    for job in jobs:
        check_no_server_files(job["scenario"])
        check_models(job["scenario"], hub)
    jobs = [{k: v for k, v in job.items() if v is not None and v != ""} for job in jobs]
    return api.buy(workloads=jobs or None, **body).model_dump_json()


def explain_json(data: Any, hub: bool) -> str:
    return api.explain(_scenario(data, hub)).model_dump_json()


def export_json(data: Any, hub: bool, base_url: str) -> str:
    return api.export(_scenario(data, hub), base_url).model_dump_json()


class LaunchFile(api.LaunchFileInfo):
    text: str  # the file as `gpuplan launch -o DIR` writes it


class LaunchFiles(BaseModel):
    """``gpuplan launch -o -``: the files that run the plan, made and not written (the page offers each as a
    download); ``again`` is the command that writes them."""

    setup: str
    predicted: dict[str, Any]
    files: list[LaunchFile]
    again: str


def launch_json(data: Any, hub: bool) -> str:
    report = api.launch(_scenario(data, hub), folder="-", command="the gpuplan web page")
    read_by = {f.path: f.read_by for f in report.files}
    files = [LaunchFile(path=name, target=target, read_by=read_by.get(name, ""), text=text)
             for name, target, text in report.printed]
    again = report.said.get("again", "")  # a diffusion pipeline's files have no command line of their own
    return LaunchFiles(setup=report.setup, predicted=report.predicted, files=files,
                       again=again if again.startswith("gpuplan launch") else "").model_dump_json()


def grid_json(data: Any, hub: bool, axis: str) -> str:
    return api.fit_grid(_scenario(data, hub), axis).model_dump_json()


async def answer(request: Request, job: Any, scenario: Any, *args: Any) -> Response:
    """``job(scenario, hub, *args)`` in the lane for its kind of work (:mod:`.lanes`): the reader process when the
    scenario reads an uploaded file, else a worker thread; the files named as the user named them."""
    state = request.app.state
    data = with_uploads(scenario, state.uploads)
    hide = state.uploads.hide
    if files := held(data):  # kept on the server until the reader is done with them, whether or not it is in time

        def give_back() -> None:
            for path in files:
                state.uploads.give_back(path)

        text = await state.pools.data.run(lambda worker: hide(worker.call(job, (data, state.hub, *args))), give_back)
    else:
        text = await state.pools.plans.run(lambda _: hide(job(data, state.hub, *args)))
    return Response(text, media_type="application/json")


async def in_thread(request: Request, fn: Any, *args: Any) -> Any:
    return await request.app.state.pools.plans.run(lambda _: fn(*args))


def _models(search: str | None, family: str | None) -> list[dict[str, Any]]:
    return api.models(family=family, search=search)


@router.post("/estimate", response_model=api.Plan, summary="Does it fit, and where does the memory go")
async def estimate_route(scenario: Annotated[RawScenario, Body()], request: Request) -> Response:
    """`gpuplan.estimate(scenario)`: memory per GPU at three levels, fit and headroom on a named GPU, the changes
    that would make it fit, speed and cost on the best offer (what `gpuplan estimate --json` prints)."""
    return await answer(request, estimate_json, scenario)


@router.post("/recommend", response_model=api.Recommendation | api.ModuleChoices, summary="The setups that fit, ranked")
async def recommend_route(body: RecommendRequest, request: Request) -> Response:
    """`gpuplan recommend`: GPU type x count x sharding x techniques x offers, pruned by memory, ranked by cost,
    time or both, with the Pareto front of cost vs speed marked (what `gpuplan recommend --json` prints). A
    diffusion pipeline, an encoder-decoder or an encoder: one card per setup, each on its cheapest offer."""
    return await answer(request, recommend_json, body.scenario, body.constraints.model_dump())


@router.get("/models", response_model=list[ModelRow], summary="The bundled models")
async def models_route(request: Request, search: str | None = Query(default=None, max_length=100),
                       family: str | None = Query(default=None, max_length=40)) -> list[dict[str, Any]]:
    """The rows of `gpuplan models --json` (sorted by parameters); any Hugging Face repo id works too when the
    server runs with `--hub`."""
    return await in_thread(request, _models, search, family)


def _gpus() -> list[dict[str, Any]]:
    return api.gpus(sort="memory")


@router.get("/gpus", response_model=list[GpuRow], summary="The GPU catalog")
async def gpus_route(request: Request) -> list[dict[str, Any]]:
    """The rows of `gpuplan gpus --json`: dense TFLOPS, memory (marketed and usable), bandwidth, NVLink, launch
    price, and the cheapest rental in force per hour and per TFLOP-hour."""
    return await in_thread(request, _gpus)


def _form(hub: bool) -> Form:
    return Form(fields=api.form_fields(), module_models=api.module_models(), quants=api.quant_formats(), hub=hub,
                providers=api.providers())


@router.get("/form", response_model=Form, summary="The scenario form")
async def form_route(request: Request) -> Form:
    """One input per scenario field (choices, bounds, defaults, hints, the kinds of model that read it), read from
    the Scenario model; and the bundled models that are not decoder LLMs, with their kinds."""
    return await in_thread(request, _form, request.app.state.hub)


@router.post("/explain", response_model=api.Explanation, summary="Every number as its formula")
async def explain_route(scenario: Annotated[RawScenario, Body()], request: Request) -> Response:
    """Each number of the estimate as its formula with this scenario's values, the constants' sources, and the
    accuracy gpuplan measured for that kind of number; plus the defaults left in force."""
    return await answer(request, explain_json, scenario)


@router.post("/export", response_model=api.Export, summary="scenario.yaml, the CLI command, Markdown")
async def export_route(scenario: Annotated[RawScenario, Body()], request: Request) -> Response:
    """The scenario as a file `gpuplan estimate` reads, the equivalent command, a Markdown report and the
    permalink's query string."""
    return await answer(request, export_json, scenario, str(request.base_url))


@router.post("/launch", response_model=LaunchFiles, summary="The files that run the plan")
async def launch_route(scenario: Annotated[RawScenario, Body()], request: Request) -> Response:
    """`gpuplan launch -o -`: the files that run the scenario's plan (SkyPilot, accelerate, DeepSpeed, torchrun, the
    trainer's arguments, the serving command...), each with its text; nothing is written on the server. The
    scenario names the GPU and the layout, as `gpuplan launch` asks."""
    return await answer(request, launch_json, scenario)


UPLOAD_BODY = {"requestBody": {"required": True, "description": "the file's bytes, as they are on disk",
                               "content": {"application/octet-stream": {"schema": {"type": "string",
                                                                                   "format": "binary"}}}}}


@router.post("/upload", response_model=Uploaded, summary="A dataset, tokenizer.json or model config.json for the "
             "scenario", openapi_extra=UPLOAD_BODY)
async def upload_route(request: Request, kind: Literal["dataset", "tokenizer", "config"] = Query(),
                       name: str = Query(min_length=1, max_length=200)) -> Uploaded:
    """Keep a file the page read, its bytes as the body (at most 16 MiB a file; the server keeps the last 16
    files, 64 MiB in all, and takes 30 files a minute from one address) and answer its reference: a scenario's
    `dataset` (or `tokenizer`) set to it is read and tokenized as `gpuplan estimate --dataset FILE` does, with the
    model's own tokenizer from the server's Hugging Face cache unless a tokenizer.json is uploaded too. A model's
    config.json (`kind=config`) goes in the scenario's `model`: it is read as `gpuplan estimate --model config.json`
    reads a local file, as data (no code from it runs)."""
    state = request.app.state
    declared = request.headers.get("content-length", "")
    client = request.client.host if request.client else "unknown"
    kept = await state.uploads.receive(kind, name, request.stream(), client,
                                       int(declared) if declared.isdigit() else None)
    await anyio.to_thread.run_sync(state.pools.warm)  # the reader process starts now, not on the first plan
    return Uploaded(**kept)


@router.post("/fit-grid", response_model=api.FitGrid, summary="The fit on every card of the catalog")
async def grid_route(body: GridRequest, request: Request) -> Response:
    """Fits / does not fit with the headroom on every GPU of the catalog, against quantization (inference),
    method (training) or context length; and device memory against context length."""
    return await answer(request, grid_json, body.scenario, body.axis)


@router.post("/buy", response_model=api.BuyReport, summary="Buy or rent: owning a build against renting any card")
async def buy_route(body: BuyRequest, request: Request) -> Response:
    """`gpuplan buy`: a build's total cost of owning (purchase, power at the hours used, resale, upkeep) against
    renting the same work on any card, with break-even months and utilization and the build's checks; or, with
    `budget_usd`, the builds that budget buys, ranked (what `gpuplan buy --json` prints)."""
    data = body.model_dump()
    hub = request.app.state.hub
    text = await in_thread(request, buy_json, data, hub)
    return Response(text, media_type="application/json")


# ---- capacity: the requests each serving setup sustains (gpuplan capacity) ------------------------------------
# The page's search shares this many simulated events among its simulations (capacity's search_events): about 6 s
# of one core (10,000 events a CPU second, session 31), within the request's deadline (:data:`.lanes.TIMEOUT_S`,
# 10 s). A search that spends them says so in its rows' warnings, as the same call does in the CLI and the Python API;
# one the machine's load slows past the deadline is stopped with a 503 (``clock.in_time``, read inside the
# simulations), never answered with fewer events, so the page's answer is the API's on any machine.
PAGE_SEARCH_EVENTS = 60_000


class CapacityRequest(RequestBody):
    """``gpuplan capacity``'s arguments: the model, the load (a rate, users or an offline batch), the lengths and
    the SLOs; the search kept to what answers within the request's deadline (at most 8 GPUs a setup, 6 setups
    simulated, :data:`PAGE_SEARCH_EVENTS` simulated events)."""

    model: str = Field(max_length=200)
    engine: Literal["vllm", "sglang", "trtllm"] = "vllm"
    rate_rps: float | None = Field(default=None, gt=0, le=10_000, description="open loop: requests/s")
    users: int | None = Field(default=None, ge=1, le=2_000, description="closed loop: concurrent users")
    batch: int | None = Field(default=None, ge=2, le=20_000, description="offline: requests queued at once")
    think_time_s: float | None = Field(default=None, ge=0, le=3600, description="closed loop: mean seconds a "
                                      "user waits between a reply and the next request (the scenario's name)")
    # unset with no preset: refused as gpuplan.capacity refuses it (say how long requests are); the page sends its
    # form's lengths; 0 output tokens: timed as one token, as estimate does
    prompt_tokens: int | None = Field(default=None, ge=1, le=1_000_000)
    output_tokens: int | None = Field(default=None, ge=0, le=100_000)
    preset: Literal["chat", "summarize", "generate", "balanced", "rag", "code"] | None = Field(
        default=None, description="the requests' lengths from a named mix (capacity --preset), instead of "
        "prompt_tokens and output_tokens")
    length_spread: float | None = Field(default=None, ge=0, le=0.99)
    ttft_s: float | None = Field(default=None, gt=0, le=3600)
    tpot_s: float | None = Field(default=None, gt=0, le=60)
    e2e_s: float | None = Field(default=None, gt=0, le=36_000)
    percentile: Literal[50, 90, 95, 99] | None = None
    gpus: list[str] = Field(default=[], max_length=MAX_ITEMS, description="only these GPUs (ids or aliases)")
    max_gpus: int = Field(default=8, ge=1, le=8)
    quant: str | None = Field(default=None, max_length=40, description="the weights' format on every setup (the "
                              "scenario field); null: the checkpoint's own")
    any_quant: bool = False
    expert_parallel: bool = False
    attention_dp: bool = False
    chunked_prefill: bool | None = Field(default=None, description="the engine's chunked-prefill switch (the "
                                         "scenario field); null: its own default by release")
    async_scheduling: bool | None = Field(default=None, description="vLLM's async-scheduling switch (the scenario "
                                          "field); null: the release's own default (on from 0.14)")
    top: int = Field(default=4, ge=1, le=6, description="setups simulated")
    pricing: str = Field(default="on-demand", max_length=20, description="on-demand, or spot: interruptible "
                         "offers, each fleet sized for the interruptions (checked by api.capacity)")
    mtbi_hours: float | None = Field(default=None, ge=0.01, le=1e6, description="spot: mean hours between "
                                     "interruptions (null: the prior in data/providers.yaml)")


def capacity_json(body: dict[str, Any], hub: bool) -> str:
    """``api.capacity`` on the request's fields within :data:`PAGE_SEARCH_EVENTS`; the model checked as the page checks
    every model (never a file on the server)."""
    check_model(body["model"], hub)
    model = body.pop("model")
    fields = {k: v for k, v in body.items() if v is not None}  # no lengths: the Python API's refusal, word for word
    return api.capacity(model, search_events=PAGE_SEARCH_EVENTS, **fields).model_dump_json()


@router.post("/capacity", response_model=api.CapacityReport, summary="Requests per second each serving setup sustains")
async def capacity_route(body: CapacityRequest, request: Request) -> Response:
    """`gpuplan capacity`: for every GPU type x count that holds the model in the engine, the highest request rate
    (or most users) that meets the SLOs on a simulation of the engine's scheduler, priced on the cheapest instance;
    with `batch`, an offline job's time and cost (what `gpuplan capacity --json` prints)."""
    text = await in_thread(request, capacity_json, body.model_dump(), request.app.state.hub)
    return Response(text, media_type="application/json")
