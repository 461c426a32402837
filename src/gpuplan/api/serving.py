"""``capacity``: the request rate each serving setup sustains within the SLOs, as an answer."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from pydantic import Field

from ..answer import Answer
from ..engines import SIMULATED
from ..errors import GpuplanError, echo_value, spelled_choice
from ..model.catalog import load_model
from ..model.kinds import NotADecoder
from ..plan.capacity import Deployment, shown
from ..scenario import scenario_from
from ..serving.workload import DEFAULT_SPREAD, Workload
from ..userfiles import read_mapping
from . import arguments as arg
from .arguments import names_of


class CapacityReport(Answer):
    """``capacity``'s answer: the workload as resolved and each serving setup's sustainable rate and price."""

    workload: Workload
    plans: list[dict[str, Any]]  # the rows ``gpuplan capacity`` shows
    notes: list[str] = Field(default_factory=list)  # each GPU named in ``gpus`` that has no row, and why
    deployments: list[Deployment] = Field(default_factory=list, exclude=True)  # each with its latency curve


def _named(model: str | None, workload: str | Path | Mapping[str, Any] | None) -> str:
    """The model named; none: one sentence, which says so where the workload names one (it holds requests and SLOs
    only; the model and cards are arguments), so the workload's ``model:`` is not taken for read."""
    if model is not None:
        return arg.text(model, "model")
    try:
        data = workload if isinstance(workload, Mapping) else read_mapping(workload, "workload") if workload else {}
    except GpuplanError:
        data = {}
    said = (f"; a workload file holds the requests and their SLOs, not the model: its model: "
            f"{str(data['model'])[:60]!r} is not read there") if "model" in data else ""
    raise GpuplanError("name the model: --model llama-3.1-8b (or a HF repo id / config.json path)" + said)


def _decoder(model: str):
    """The decoder LLM ``model`` names; another kind of model refused with what plans it."""
    try:
        return load_model(model)
    except NotADecoder as other:
        name = other.spec.name
        raise GpuplanError(f"{other.spec.describe()}: capacity plans an LLM engine's requests per second; `gpuplan "
                           f"estimate --model {name} --task infer --gpu NAME` gives its time per call and output per "
                           f"hour, and `gpuplan recommend --model {name} --task infer` the cards ranked by price per "
                           "thousand") from None


def capacity(model: str | None, workload: str | Path | Mapping[str, Any] | None = None, *, engine: str = "vllm",
             gpus: Iterable[str] = (),
             max_gpus: int = 8, quant: str | None = None, any_quant: bool = False, engine_version: str | None = None,
             kv_cache_dtype: str | None = None, calibration: str | Path | None = None, top: int = 6,
             chunked_prefill: bool | None = None, async_scheduling: bool | None = None,
             expert_parallel: bool = False, attention_dp: bool = False,
             search_events: int | None = None, pricing: str = "on_demand", mtbi_hours: float | None = None,
             disk_gbs: float | None = None,
             **workload_fields: Any) -> CapacityReport:
    """For every GPU type x count x tensor parallelism that holds ``model`` in ``engine`` (vllm, sglang or trtllm), the
    highest request rate that meets the workload's SLOs, the cheapest offer and the price per million tokens: ``gpuplan
    capacity``. ``workload`` is a YAML file or a dict of :class:`~gpuplan.serving.workload.Workload` fields; flat fields
    (``rate_rps``, ``prompt_tokens``, ``ttft_s``...) override it. Lengths given as ``prompt_tokens`` and
    ``output_tokens`` are means, each request's drawn within ``length_spread`` (default 0.5: +-50 %; 0 keeps them fixed,
    which puts a closed loop in lockstep). ``batch`` instead of a rate or users: an offline job of that many requests
    queued at once, each setup's time and cost to run it (``estimate --batch-size``'s offline run). An MoE model may be
    laid out with ``expert_parallel`` (its experts over each setup's GPUs) and ``attention_dp`` (attention data parallel
    over them). ``quant``: the weights' format on every setup (the scenario field, as ``estimate`` takes it; None: the
    checkpoint's own, and with ``any_quant`` fp8 and AWQ int4 tried too). ``chunked_prefill``, ``async_scheduling``: the
    engine's switches (the scenario fields of those names; None: its own default by release). ``search_events``: the
    simulated events all the simulations share (default 1,200,000, about two minutes of one core; a simulation cut
    short says so in its row's warnings): a count of work, so the answer is the same on a busy machine. ``pricing``
    on-demand or spot: spot prices interruptible offers and sizes each fleet for the interruptions (the scenario's
    ``mtbi_hours``, else the prior; a replica back after its weights read at ``disk_gbs`` and its graph capture:
    :func:`gpuplan.plan.capacity.restart_s`). Needs numpy (the ``serving`` extra)."""
    try:
        import numpy  # noqa: F401
    except ImportError:
        raise GpuplanError("capacity simulates vLLM's scheduler with numpy: pip install 'gpuplan[serving]'") from None
    from ..hardware import load_gpu
    from ..plan.capacity import capacity as search
    from ..serving.calibrate import load_calibration
    from ..serving.workload import load_workload

    model = _named(model, workload)
    m = _decoder(model)
    max_gpus = arg.count(max_gpus, "max_gpus", most=64)
    top = arg.count(top, "top", most=100)
    events = arg.count(search_events, "search_events", most=10**9, optional=True)
    any_quant = arg.flag(any_quant, "any_quant")
    quant = arg.text(quant, "quant", optional=True)
    expert_parallel, attention_dp = arg.flag(expert_parallel, "expert_parallel"), arg.flag(attention_dp, "attention_dp")
    engine = arg.text(spelled_choice(engine, SIMULATED), "engine", choices=SIMULATED)  # vLLM, as the scenario reads
    if (pricing.replace("_", "-") if isinstance(pricing, str) else pricing) not in ("on-demand", "spot"):
        raise GpuplanError(f"capacity prices rented replicas on demand or on spot, not {echo_value(pricing)}: "
                           "--pricing on-demand or spot")
    engine_version = arg.text(engine_version, "engine_version", optional=True)
    kv_cache_dtype = arg.text(kv_cache_dtype, "kv_cache_dtype", optional=True)
    chunked_prefill = arg.flag(chunked_prefill, "chunked_prefill") if chunked_prefill is not None else None
    async_scheduling = arg.flag(async_scheduling, "async_scheduling") if async_scheduling is not None else None
    calibration = arg.path(calibration, "calibration", optional=True)
    ids = tuple(load_gpu(g).id for g in names_of(gpus, "gpus") if g.strip())
    if workload_fields.get("trace") is not None:  # a Path as calibration and the workload take one
        workload_fields["trace"] = arg.path(workload_fields["trace"], "trace")
    if workload_fields.get("length_spread") is None and (workload_fields.get("prompt_tokens") is not None
                                                        or workload_fields.get("output_tokens") is not None):
        workload_fields["length_spread"] = DEFAULT_SPREAD  # lengths given as means are spread (lockstep)
    if isinstance(workload, Mapping):
        w = load_workload(None, {**workload, **workload_fields})
    elif workload is None or isinstance(workload, (str, Path)):
        w = load_workload(workload, workload_fields)
    else:
        raise GpuplanError(f"a workload is a dict of its fields or the path of a YAML file, not "
                           f"{type(workload).__name__}")
    s = scenario_from({k: v for k, v in dict(model=model, task="infer", engine=engine, engine_version=engine_version,
                                             quant=quant,
                                             kv_cache_dtype=kv_cache_dtype, attention_dp=attention_dp or None,
                                             chunked_prefill=chunked_prefill,
                                             async_scheduling=async_scheduling, pricing=pricing,
                                             mtbi_hours=mtbi_hours, disk_gbs=disk_gbs).items()
                       if v is not None})
    notes: list[str] = []
    plans = search(s, m, w, gpu_ids=ids, max_gpus=max_gpus, any_quant=any_quant,
                   simulate_top=top, calibration=load_calibration(calibration) if calibration else None,
                   expert_parallel=expert_parallel, notes=notes,
                   **({"search_events": events} if events is not None else {}))
    return CapacityReport(workload=w, plans=shown(plans), notes=notes, deployments=plans)


__all__ = ["CapacityReport", "capacity", "shown"]
