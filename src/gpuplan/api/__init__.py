"""The Python API, gpuplan's one face: a function per question, each returning a typed answer whose ``to_dict()``
is exactly what the command's ``--json`` prints. The command line and the web page call these and only render.

- :func:`estimate`: one scenario's :class:`~gpuplan.plan.plan.Plan` (memory, fit, fixes, speed, cost);
- :func:`recommend`: the setups that fit, ranked (:class:`~gpuplan.plan.recommend.Recommendation`);
- :func:`fit`: every bundled model on the user's cards (:class:`FitReport`);
- :func:`cost`: the job priced on every offer that fits it (:class:`CostTable`);
- :func:`capacity`: the request rate each serving setup sustains within the SLOs (:class:`CapacityReport`);
- :func:`launch`: the files that run a plan (:class:`LaunchReport`).

Every function takes a scenario as a :class:`~gpuplan.scenario.Scenario`, a dict of its fields or the path of a
YAML/JSON file, and raises :class:`~gpuplan.errors.GpuplanError` (one sentence) on bad input.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from ..errors import GpuplanError, UnknownNameError
from ..hardware import resolve_gpu
from ..market.cost import Cost
from ..model.catalog import load_model
from ..model.report import inexact_warning
from ..plan.capability import FitRow
from ..plan.capacity import Deployment
from ..plan.estimate import estimate as _estimate
from ..plan.plan import Plan
from ..plan.recommend import Recommendation
from ..result import Answer
from ..scenario import Scenario, load_scenario, scenario_from
from ..serving.workload import DEFAULT_SPREAD, Workload
from . import arguments as arg
from .arguments import names_of

ScenarioLike = Scenario | Mapping[str, Any] | str | Path


def scenario_of(scenario: ScenarioLike, overrides: Mapping[str, Any] | None = None) -> Scenario:
    """A scenario from an object, a dict of its fields or a YAML/JSON file, with ``overrides`` on top."""
    if not isinstance(scenario, (Scenario, Mapping, str, Path)):
        raise GpuplanError(f"a scenario is a Scenario, a dict of its fields or the path of a YAML/JSON file, not "
                           f"{type(scenario).__name__}")
    if isinstance(scenario, (str, Path)):
        return load_scenario(scenario, dict(overrides or {}))
    if overrides:
        base = scenario.model_dump(exclude_unset=True) if isinstance(scenario, Scenario) else dict(scenario)
        return scenario_from({**base, **overrides})
    return scenario_from(scenario if isinstance(scenario, Scenario) else dict(scenario))


def estimate(scenario: ScenarioLike, *, advise: bool = True) -> Plan:
    """Does the job fit, where does the memory go, what would make it fit, how fast and for how much:
    ``gpuplan estimate``. ``advise`` False skips the largest batch and context and the fixes (faster)."""
    return _estimate(scenario_of(scenario), advise=arg.flag(advise, "advise"))


def gpu_ids(names: Iterable[str], notes: list[str]) -> tuple[str, ...]:
    """Catalog ids of GPU names (aliases, ambiguous names taking their common variant, said in ``notes``)."""
    out = []
    for name in names_of(names, "gpus"):
        if not name.strip():
            continue
        gpu, note = resolve_gpu(name.strip())
        if note:
            notes.append(note)
        out.append(gpu.id)
    return tuple(out)


def provider_names(names: Iterable[str]) -> tuple[str, ...]:
    """Providers of the price catalog, checked (an unknown one gets "did you mean")."""
    from ..market.store import load_offers

    wanted = [n.strip() for n in names_of(names, "providers") if n.strip()]
    if not wanted:
        return ()
    known = sorted({o.provider for o in load_offers()})
    for name in wanted:
        if name not in known:
            raise UnknownNameError("provider", name, known, f"(providers in the price catalog: {', '.join(known)})")
    return tuple(wanted)


def recommend(scenario: ScenarioLike, *, budget_usd: float | None = None, deadline_hours: float | None = None,
              max_gpus: int = 8, gpus: Iterable[str] = (), providers: Iterable[str] = (),
              have: Iterable[str | tuple[str, int]] = (), min_headroom: float = 0.0, objective: str = "cost",
              top: int = 10, any_method: bool = False, any_quant: bool = False, any_framework: bool = False,
              catalogs: Iterable[str] = (), per_gpu: bool = False) -> Recommendation:
    """Which GPUs, how many, where: every setup that fits, ranked by ``objective`` (cost, time or balanced), your
    own cards (``have``: ``"2x3090"`` or ``("nvidia-geforce-rtx-3090", 2)``) in their own list: ``gpuplan
    recommend``. ``min_headroom`` is a fraction of the card's usable memory (0.1 for 10 %)."""
    from ..plan.recommend import Constraints, parse_have
    from ..plan.recommend import recommend as search

    budget_usd = arg.amount(budget_usd, "budget_usd", above=True, optional=True)
    deadline_hours = arg.amount(deadline_hours, "deadline_hours", above=True, optional=True)
    max_gpus = arg.count(max_gpus, "max_gpus", most=512)
    min_headroom = arg.amount(min_headroom, "min_headroom", most=0.99)
    top = arg.count(top, "top", most=10_000)
    objective = arg.text(objective, "objective", choices=("cost", "time", "balanced"))
    any_method, any_quant, any_framework, per_gpu = (arg.flag(v, k) for k, v in (
        ("any_method", any_method), ("any_quant", any_quant), ("any_framework", any_framework),
        ("per_gpu", per_gpu)))
    catalogs = tuple(names_of(catalogs, "catalogs"))
    s = scenario_of(scenario)
    m = load_model(s.model)
    notes: list[str] = []
    owned = tuple(parse_have(h) if isinstance(h, str) else (resolve_gpu(h[0])[0].id, int(h[1]))
                  for h in names_of(have, "have", pairs=True) if not isinstance(h, str) or h.strip())
    c = Constraints(budget_usd=budget_usd, deadline_hours=deadline_hours, max_gpus=max_gpus,
                    gpus=gpu_ids(gpus, notes), providers=provider_names(providers), pricing=s.pricing, have=owned,
                    min_headroom=min_headroom, objective=objective, top=top, any_method=any_method,
                    any_quant=any_quant, any_framework=any_framework, catalogs=catalogs, per_gpu=per_gpu)
    result = search(s, m, c)
    result.defaults = [*notes, *result.defaults]
    return result


class FitReport(Answer):
    """``fit``'s answer: every bundled model on the cards, those that fit first."""

    resolved: str  # the job, resolved, in one line
    task: str
    gpu_id: str
    num_gpus: int
    notes: list[str] = Field(default_factory=list)
    rows: list[FitRow]

    @property
    def fitting(self) -> int:
        return sum(r.fits for r in self.rows)


def fit(gpu: str, scenario: ScenarioLike | None = None, *, models: Iterable[str] | None = None,
        **fields: Any) -> FitReport:
    """What can my cards do? Each bundled model (or ``models``) with the job of ``scenario`` (serving unless
    ``task`` says train) on ``gpu`` (``"2x3090"``, ``"rtx-4090"``): fits as asked, fits with a change, or not,
    with the largest batch and longest context: ``gpuplan fit``."""
    from ..plan.capability import what_fits
    from ..plan.recommend import parse_have
    from ..scenario.describe import describe

    if not isinstance(gpu, str) or not gpu.strip():
        raise GpuplanError("fit needs your cards: --gpu 2x3090 (count x name, or a name for one card)")
    models = names_of(models, "models") if models is not None else None
    gpu_id, count = parse_have(gpu)
    count_text, sep, name = gpu.strip().partition("x")
    card, note = resolve_gpu(name.strip() if sep and count_text.strip().isdigit() else gpu.strip())
    if count > 8:
        raise GpuplanError(f"fit looks at one machine: --gpu takes up to 8 cards, got {count}")
    if scenario is None:
        template: dict[str, Any] = {}
    elif isinstance(scenario, (str, Path)):
        template = load_scenario(scenario).model_dump(exclude_unset=True)
    elif isinstance(scenario, Scenario):
        template = scenario.model_dump(exclude_unset=True)
    elif isinstance(scenario, Mapping):
        template = dict(scenario)
    else:
        raise GpuplanError(f"a scenario is a Scenario, a dict of its fields or the path of a YAML/JSON file, not "
                           f"{type(scenario).__name__}")
    template = {**template, **fields}
    template.pop("model", None)
    template.setdefault("task", "infer")
    example = load_scenario(None, {**template, "model": "each bundled model", "gpu": gpu_id, "num_gpus": count})
    rows = what_fits(template, card, count, models)
    return FitReport(resolved=describe(example), task=example.task, gpu_id=card.id, num_gpus=count,
                     notes=[note] if note else [], rows=rows)


class CostTable(Answer):
    """``cost``'s answer: the job on every offer that fits it, cheapest per million tokens first."""

    resolved: str
    model_exact: bool = True
    model_exact_reason: str | None = None
    notes: list[str] = Field(default_factory=list)  # the defaults taken, in words
    warnings: list[str] = Field(default_factory=list)  # a model not counted exactly, before every number
    left_out: dict[str, int] = Field(default_factory=dict)  # offers the price filter left out, by reason
    rows: list[Cost]


def cost(scenario: ScenarioLike, *, catalogs: Iterable[str] = (), discounts: Mapping[str, float] | None = None,
         top: int | None = None) -> CostTable:
    """What the job costs on every offer that fits it (the scenario's GPU only, when it names one), each row
    with its whole bill and the device peak per GPU: ``gpuplan cost``."""
    from ..market.store import load_offers
    from ..plan.pricing import compare, left_out
    from ..plan.resolve import card_free
    from ..scenario.describe import describe

    top = arg.count(top, "top", most=100_000, optional=True)
    catalogs = tuple(names_of(catalogs, "catalogs"))
    discounts = arg.discounts_of(discounts)
    s = scenario_of(scenario)
    m = load_model(s.model)
    if s.gpu:  # one GPU: its name resolved (an ambiguous one takes its common variant)
        s = s.model_copy(update={"gpu": resolve_gpu(s.gpu)[0].id})
    s, said = card_free(s, m)  # the card is each offer's
    defaults = [n for n in said if n]
    base = _estimate(s.model_copy(update={"gpu": None}), advise=False)
    offers = load_offers(catalogs, discounts)
    rows = compare(s, m, offers, base.model.params_trainable)
    return CostTable(resolved=describe(s, m, hardware=f"on each offer's GPUs ({s.world_size} per job)"
                                       if not s.gpu else None),
                     model_exact=m.exact, model_exact_reason=m.inexact_reason, notes=[*m.notes, *defaults],
                     warnings=[w for w in (inexact_warning(m),) if w],
                     left_out={k: v for k, v in left_out(offers, s).items() if v},
                     rows=rows[:top] if top else rows)


class CapacityReport(Answer):
    """``capacity``'s answer: the workload as resolved and each serving setup's sustainable rate and price."""

    workload: Workload
    plans: list[dict[str, Any]]  # the rows ``gpuplan capacity`` shows
    deployments: list[Deployment] = Field(default_factory=list, exclude=True)  # each with its latency curve


def capacity(model: str, workload: str | Path | Mapping[str, Any] | None = None, *, engine: str = "vllm",
             gpus: Iterable[str] = (),
             max_gpus: int = 8, any_quant: bool = False, engine_version: str | None = None,
             kv_cache_dtype: str | None = None, calibration: str | Path | None = None, top: int = 8,
             **workload_fields: Any) -> CapacityReport:
    """For every GPU type x count x tensor parallelism that holds ``model`` in vLLM, the highest request rate that
    meets the workload's SLOs, the cheapest offer and the price per million tokens: ``gpuplan capacity``.
    ``workload`` is a YAML file or a dict of :class:`~gpuplan.serving.workload.Workload` fields; flat fields
    (``rate_rps``, ``prompt_tokens``, ``ttft_s``...) override it. Lengths given as ``prompt_tokens`` and
    ``output_tokens`` are means, each request's drawn within ``length_spread`` (default 0.5: +-50 %; 0 keeps them
    fixed, which puts a closed loop in lockstep). Needs numpy (the ``serving`` extra)."""
    try:
        import numpy  # noqa: F401
    except ImportError:
        raise GpuplanError("capacity simulates vLLM's scheduler with numpy: pip install 'gpuplan[serving]'") from None
    from ..hardware import load_gpu
    from ..plan.capacity import capacity as search
    from ..plan.capacity import shown
    from ..serving.calibrate import load_calibration
    from ..serving.workload import load_workload

    model = arg.text(model, "model")
    max_gpus = arg.count(max_gpus, "max_gpus", most=64)
    top = arg.count(top, "top", most=100)
    any_quant = arg.flag(any_quant, "any_quant")
    engine = arg.text(engine, "engine", choices=("vllm", "sglang"))
    engine_version = arg.text(engine_version, "engine_version", optional=True)
    kv_cache_dtype = arg.text(kv_cache_dtype, "kv_cache_dtype", optional=True)
    calibration = arg.path(calibration, "calibration", optional=True)
    ids = tuple(load_gpu(g).id for g in names_of(gpus, "gpus") if g.strip())
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
                                             kv_cache_dtype=kv_cache_dtype).items() if v is not None})
    plans = search(s, load_model(model), w, gpu_ids=ids, max_gpus=max_gpus, any_quant=any_quant,
                   simulate_top=top, calibration=load_calibration(calibration) if calibration else None)
    return CapacityReport(workload=w, plans=shown(plans), deployments=plans)


class LaunchFileInfo(BaseModel):
    path: str
    target: str
    read_by: str


class LaunchReport(Answer):
    """``launch``'s answer: the setup, what gpuplan predicted for it, and the files written."""

    folder: str
    setup: str
    scenario: dict[str, Any]  # the scenario launched: with the recipe's micro-batch x accumulation when it set neither
    predicted: dict[str, Any]  # what gpuplan.estimate(scenario) predicts for it
    files: list[LaunchFileInfo]


def launch(scenario: ScenarioLike, *, targets: Iterable[str] = (), folder: str | Path = "gpuplan-launch",
           force: bool = False, dataset: str | None = None, script: str | Iterable[str] | None = None,
           bucket: str | None = None, visible_devices: tuple[int, ...] | None = None,
           command: str = "gpuplan.launch (Python API)") -> LaunchReport:
    """Write the files that run the scenario's plan (SkyPilot, accelerate, DeepSpeed, torchrun, the trainer's
    arguments, torchtune, torchtitan, Axolotl, Unsloth, vllm serve: every target that applies, or ``targets``)
    into ``folder``: ``gpuplan launch``."""
    from ..launchers import LaunchOptions, check_target_names, launch_plan
    from ..launchers.diffusion import NAMES as DIFFUSION_TARGETS
    from ..launchers.files import output_folder

    targets = names_of(targets, "targets")
    check_target_names(targets, also=DIFFUSION_TARGETS)
    folder, force = output_folder(folder, "folder"), arg.flag(force, "force")  # checked before the plan is made
    options: dict[str, Any] = {"bucket": arg.text(bucket, "bucket", optional=True)}
    if arg.text(dataset, "dataset", optional=True):
        options["dataset"] = dataset
    if arg.script_of(script):
        options["script"] = arg.script_of(script)
    visible_devices = arg.devices_of(visible_devices)
    command = arg.text(command, "command")
    s = scenario_of(scenario)
    spec = _module_spec(s.model)
    if spec is not None:  # a diffusion pipeline: its trainers' files (launchers/diffusion.py)
        return _write_diffusion(s, spec, targets, folder, force, command)
    check_target_names(targets)
    plan = launch_plan(s, command=command, visible_devices=visible_devices)
    return write_plan(plan, targets, LaunchOptions(**options), folder, force)


def _module_spec(model: str):
    """The module spec of a model that is not a decoder LLM (a diffusion pipeline...), or None."""
    from ..model.catalog import load_model
    from ..model.module import NotADecoder

    try:
        load_model(model)
    except NotADecoder as other:
        return other.spec
    return None


def _write_diffusion(s, spec, targets: list[str], folder: str | Path, force: bool, command: str) -> LaunchReport:
    from ..launchers import write
    from ..launchers.diffusion import diffusion_launch, files

    plan = diffusion_launch(s, spec, estimate(s, advise=False), command)
    chosen = files(plan, targets, None)
    paths = write(chosen, folder, force=force)
    return LaunchReport(folder=str(folder), setup=plan.setup_label, predicted=plan.predictions(),
                        scenario=plan.scenario.model_dump(mode="json", exclude_unset=True),
                        files=[LaunchFileInfo(path=str(p), target=f.target, read_by=f.reader)
                               for p, f in zip(paths, chosen, strict=True)])


def write_plan(plan, targets: list[str], options, folder: str | Path, force: bool) -> LaunchReport:
    """Write a launch plan's files and say what was written."""
    from ..launchers import launch_files, write

    files = launch_files(plan, targets, options)
    paths = write(files, folder, force=force)  # write() checks the folder: one sentence if it is not a path
    return LaunchReport(folder=str(folder), setup=plan.setup_label, predicted=plan.predictions(),
                        scenario=plan.scenario.model_dump(mode="json", exclude_unset=True),
                        files=[LaunchFileInfo(path=str(p), target=f.target, read_by=f.reader)
                               for p, f in zip(paths, files, strict=True)])


__all__ = ["CapacityReport", "CostTable", "FitReport", "LaunchReport", "capacity", "cost", "estimate", "fit",
           "launch", "recommend"]
