"""The work a build is bought for, over a horizon: a YAML file (or a dict) of jobs, each a scenario without its
hardware and how often it runs.

.. code-block:: yaml

    years: 1                 # the horizon (default 1)
    workloads:
      - name: weekly LoRA
        per_week: 1          # training: per_week, per_month or per_year runs
        scenario: {model: llama-3.1-8b, task: train, method: lora, train_tokens: 1e8, seq_len: 4096}
      - name: chat API
        hours_per_day: 8     # serving: hours a day the server is up at the scenario's batch
        scenario: {model: qwen3-8b, task: infer, engine: vllm, batch_size: 16}
      - name: SDXL LoRA
        per_week: 1          # a diffusion, Whisper or encoder job: its module plan's time (train_steps x step)
        scenario: {model: sdxl, task: train, method: lora, stack: kohya, resolution: "1024", train_steps: 2000}
      - name: SDXL images
        per_week: 200        # a module's inference: runs are calls (batch_size images, or one recording)
        scenario: {model: sdxl, task: infer}

A scenario may also be the name of a scenario file beside the workloads file (inside its folder). The build or the
rental sets the hardware, so a job's scenario leaves out ``gpu``, ``num_gpus``, ``num_nodes``, ``provider``,
``pricing`` and ``host_ram_gib``.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from ..errors import GpuplanError, did_you_mean, yes_for_a_number
from ..scenario import Scenario, load_scenario, scenario_from
from ..userfiles import read_mapping

if TYPE_CHECKING:
    from ..model.module_spec import ModuleSpec

HARDWARE_FIELDS = ("gpu", "num_gpus", "num_nodes", "provider", "pricing", "host_ram_gib")
MAX_JOBS = 20
# runs a year at most, whichever of per_week, per_month or per_year says them: one bound, in runs, so that the three
# agree (they were 2,000 a week, 10,000 a month and 100,000 a year: 104,357, 120,000 and 100,000 a year), and
# large enough for a module's calls (an image endpoint's 500 images a day are 3,500 calls a week); about 3 a second
MAX_RUNS_PER_YEAR = 1e8


def _numbers_not_yes(model: Any, data: Any) -> Any:
    """``per_week: true`` or ``years: yes`` was read as 1 by pydantic's lax mode, where the page's BuyJob refuses it
    (session 18's fuzzing): the scenario's rule (errors.yes_for_a_number)."""
    said = yes_for_a_number(model, data)
    if said:
        raise ValueError(said)
    return data


class Job(BaseModel):
    """One kind of work: its scenario (no hardware) and how much of it over a year."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(default="", max_length=80)
    scenario: dict[str, Any]
    per_year: float | None = Field(default=None, ge=0, allow_inf_nan=False)
    per_month: float | None = Field(default=None, ge=0, allow_inf_nan=False)
    per_week: float | None = Field(default=None, ge=0, allow_inf_nan=False)
    hours_per_day: float | None = Field(default=None, gt=0, le=24, allow_inf_nan=False,
                                        description="serving: hours a day the server is up")
    output_tokens_per_day: float | None = Field(default=None, gt=0, le=1e13, allow_inf_nan=False,
                                                description="serving as batch work: output tokens a day")

    _no_yes = model_validator(mode="before")(classmethod(lambda cls, data: _numbers_not_yes(cls, data)))

    @model_validator(mode="after")
    def _one_rate(self) -> Job:
        given = [k for k in ("per_year", "per_month", "per_week", "hours_per_day", "output_tokens_per_day")
                 if getattr(self, k) is not None]
        if len(given) != 1:
            raise ValueError("say how much of this job there is with one of per_week, per_month, per_year "
                             "(training runs) or hours_per_day, output_tokens_per_day (serving)"
                             + (f", not {' and '.join(given)}" if given else ""))
        if self.runs_per_year > MAX_RUNS_PER_YEAR:
            rate = given[0]
            raise ValueError(f"{rate} {getattr(self, rate):,g} is {self.runs_per_year:,.0f} runs a year, more than "
                             f"the {MAX_RUNS_PER_YEAR:,.0f} (about 3 a second) gpuplan takes as real work; a call may "
                             "hold several images (batch_size), or say the serving hours (hours_per_day)")
        return self

    @property
    def runs_per_year(self) -> float:
        """Training runs a year (serving: 0)."""
        if self.per_week is not None:
            return self.per_week * 365.25 / 7
        if self.per_month is not None:
            return self.per_month * 12
        return self.per_year or 0.0

    @property
    def serving(self) -> bool:
        return self.hours_per_day is not None or self.output_tokens_per_day is not None

    @functools.cached_property
    def parsed(self) -> Scenario:
        """The job's scenario, validated once: the check of the workloads file and each setup's plan (a copy of it
        on the setup's cards) read this one."""
        return scenario_from(self.scenario)

    @functools.cached_property
    def module(self) -> ModuleSpec | None:
        """The model when it is not a decoder LLM (a diffusion pipeline, Whisper, an encoder-decoder, an encoder:
        the one builder plans it as a :class:`~gpuplan.plan.modules.ModulePlan`, on one card); None for a decoder
        LLM (or a name the plan will refuse in its own words)."""
        from ..model.catalog import load_model
        from ..model.kinds import NotADecoder

        try:
            load_model(str(self.scenario.get("model", "")))
        except NotADecoder as other:
            return other.spec
        except GpuplanError:
            return None
        return None

    @property
    def kind(self) -> str:
        """serving (hours a day, or output tokens a day), training (runs), or calls (a module's inference runs: each
        one call of its scenario, batch_size images or samples, or one recording)."""
        if self.serving:
            return "serving"
        return "calls" if self.module is not None and self.scenario.get("task") == "infer" else "training"

    @property
    def label(self) -> str:
        return self.name or f"{self.scenario.get('model', '?')} {self.scenario.get('task', '')}".strip()


class Workloads(BaseModel):
    model_config = ConfigDict(extra="forbid")

    years: float = Field(default=1.0, gt=0, le=10, allow_inf_nan=False, description="the horizon")
    workloads: list[Job] = Field(min_length=1, max_length=MAX_JOBS)

    _no_yes = model_validator(mode="before")(classmethod(lambda cls, data: _numbers_not_yes(cls, data)))


def _scenario_data(job: Mapping[str, Any], folder: Path | None) -> dict[str, Any]:
    """A job's scenario as a dict: given inline, or a scenario file inside the workloads file's folder."""
    value = job.get("scenario")
    label = repr(str(job.get("name") or "")) if job.get("name") else "a job"
    if value is None:  # the scenario's fields written on the job itself (model: ..., task: ...) or nowhere
        fields = [str(k) for k in job if k not in Job.model_fields][:4]
        raise GpuplanError(f"workload {label}: no 'scenario' (the job's model, task and method, as a scenario file "
                           "holds them)" + (f"; its {', '.join(fields)} go under 'scenario:', beside name and "
                                            "per_week" if fields else ""))
    if isinstance(value, str) and folder is not None:
        path = (folder / value).resolve()
        if folder.resolve() not in path.parents:
            raise GpuplanError(f"the scenario file {value!r} is outside the workloads file's folder: keep it beside "
                               "the workloads file")
        return load_scenario(path).model_dump(exclude_unset=True)
    if not isinstance(value, Mapping):
        raise GpuplanError(f"workload {label}: its scenario is a mapping of scenario fields (or a scenario file's "
                           f"name), not {type(value).__name__}")
    return dict(value)


def _check_job(job: Job) -> None:
    fields = set(job.scenario)
    hardware = [k for k in HARDWARE_FIELDS if k in fields or k.replace("_", "-") in fields]
    if hardware:
        raise GpuplanError(f"workload {job.label!r}: leave {', '.join(hardware)} out of its scenario: the build and "
                           "the rentals set the hardware")
    s = job.parsed
    if s.task == "train" and job.serving:
        raise GpuplanError(f"workload {job.label!r} trains: give runs (per_week, per_month, per_year), not serving "
                           "hours")
    if job.module is not None:
        _check_module(job, s)
        return
    if s.task == "infer" and not job.serving:
        raise GpuplanError(f"workload {job.label!r} serves: give hours_per_day (the server is up) or "
                           "output_tokens_per_day (batch work), not runs")
    if s.task == "train" and not s.train_tokens:
        raise GpuplanError(f"workload {job.label!r}: say how much it trains (train_tokens, or a dataset, or "
                           "samples with mean_tokens) so a run has a length")


def _check_module(job: Job, s: Scenario) -> None:
    """A job whose model is not a decoder LLM: its run is its module plan's time, so a training run names its
    optimizer steps (train_steps; the plan's job hours are train_steps x step time, plan/modules.py ``_work``), and
    its inference runs calls (a call: batch_size images or samples, one recording) or a server's hours a day, not
    output tokens."""
    what = job.module.describe() if job.module is not None else "a module"
    if s.task == "train" and not s.train_steps:
        raise GpuplanError(f"workload {job.label!r}: {what}: say how many optimizer steps a run trains (train_steps) "
                           "so a run has a length")
    if s.task == "infer" and job.output_tokens_per_day is not None:
        raise GpuplanError(f"workload {job.label!r}: {what}: give runs (per_week, per_month, per_year: calls of "
                           "batch_size images or samples, or recordings) or hours_per_day, not output tokens")


def _known_fields(error: Mapping[str, Any]) -> str:
    """For a field the file should not have (the s30 walk's ``hours_per_week``), the fields it may have: the nearest
    ones, else all of a job's (or of the file's top level)."""
    if error["type"] != "extra_forbidden":
        return ""
    in_job = len(error["loc"]) > 1
    known = list((Job if in_job else Workloads).model_fields)
    close = did_you_mean(str(error["loc"][-1]), known)
    if close:
        return f"; did you mean {' or '.join(close)}?"
    return f"; {'a job' if in_job else 'the file'}'s fields: {', '.join(known)}"


def load_workloads(source: str | Path | Mapping[str, Any] | list, years: float | None = None) -> Workloads:
    """Workloads from a YAML/JSON file, a dict (``{"years": 1, "workloads": [...]}``) or a list of jobs; ``years``
    overrides the file's horizon. Each job's scenario is validated now (one sentence if it is wrong)."""
    folder = None
    if isinstance(source, (str, Path)):
        folder = Path(source).parent
        data: Any = read_mapping(source, "workloads")
    elif isinstance(source, list):
        data = {"workloads": source}
    elif isinstance(source, Mapping):
        data = dict(source)
    else:
        raise GpuplanError(f"workloads are a file, a dict or a list of jobs, not {type(source).__name__}")
    if "workloads" not in data:  # the first of pydantic's errors would read "workloads: workloads: Field required"
        other = ", ".join(repr(str(k)) for k in list(data)[:4] if k != "years")
        raise GpuplanError("workloads: no 'workloads' list of jobs (each a scenario and how often it runs: per_week, "
                           "per_month, per_year, hours_per_day or output_tokens_per_day)"
                           + (f"; found {other}" if other else ""))
    jobs = data.get("workloads")
    if isinstance(jobs, list):
        data["workloads"] = [{**j, "scenario": _scenario_data(j, folder)} if isinstance(j, Mapping)
                             else j for j in jobs[:MAX_JOBS + 1]]
    if years is not None:
        data["years"] = years
    try:
        w = Workloads(**data)
    except ValidationError as err:
        first = err.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise GpuplanError(f"workloads: {where + ': ' if where else ''}{first['msg'].removeprefix('Value error, ')}"
                           + _known_fields(first)) from None
    except TypeError as err:
        raise GpuplanError(f"workloads: {err}") from None
    for job in w.workloads:
        _check_job(job)
    return w
