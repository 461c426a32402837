"""Checks of the estimate against the real code and real runs, as answers: the fake-tensor simulation of a step
(``gpuplan simulate``), a measured step on this machine's CUDA GPU (``probe``), the estimate's error over probe
records (``calibrate``), and corrections fitted on the user's own serving benchmarks (``calibrate-serving``).
Each function returns what its command's ``--json`` prints; the command line only renders it.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import asdict
from pathlib import Path
from typing import Any

from pydantic import ConfigDict, Field

from ..answer import Answer
from ..errors import GpuplanError
from ..result import MemoryReport, finite
from . import arguments as arg
from .arguments import scenario_of

# simulate --compare's rows: a part's name, the simulation's categories and the estimate's fields that hold it
PARTS = (("parameters", ("parameters",), ("weights_gib",)), ("gradients", ("gradients",), ("gradients_gib",)),
         ("optimizer", ("optimizer",), ("optimizer_gib",)),
         ("activations + temporaries", ("activations", "temporaries"), ("activations_gib", "other_gib")),
         ("kv_cache", ("kv_cache",), ("kv_cache_gib",)))


class SimulationReport(Answer):
    """``simulate``'s answer: what the simulated step allocated at the model's full depth (GiB), by phase and by
    category, the runs it extrapolated from, and with ``compare`` the estimate's memory beside it. ``timeline``
    (the allocations over the step, for a plot) is not in the JSON."""

    model: str
    scenario: dict[str, Any]
    allocated_peak_gib: float
    peak_phase: str
    peak_op: str
    parts_gib: dict[str, float]
    phase_parts_gib: dict[str, dict[str, float]]
    phases_gib: dict[str, float]
    runs: list[dict[str, Any]]
    params_trainable: int = 0
    cache_gib: float = 0.0
    notes: list[str] = Field(default_factory=list)
    timeline_layers: int = 0
    elapsed_s: float = 0.0
    estimate: MemoryReport | None = None  # with compare: the analytic estimate of the same scenario
    timeline: list[tuple[int, float, str]] = Field(default_factory=list, exclude=True)
    full_layers: int = Field(default=0, exclude=True)  # the model's depth (the plot's axis)

    def to_dict(self) -> dict[str, Any]:
        data = super().to_dict()
        if self.estimate is None:
            data.pop("estimate")
        return data

    @property
    def cuda_only_gib(self) -> float:
        """The estimate's cuBLAS workspace (0 without ``compare``): CUDA-only, no fake tensor holds it, so the
        comparison leaves it out of the estimate's other memory."""
        return self.estimate.other.get("cuBLAS workspace", 0.0) if self.estimate else 0.0

    def compared(self) -> list[tuple[str, float, float | None]]:
        """Each part of :data:`PARTS`: its name, the simulated GiB and the estimate's (None without ``compare``,
        less :attr:`cuda_only_gib`), then ``"allocated peak"`` with both peaks."""
        est, cuda = self.estimate, self.cuda_only_gib
        rows: list[tuple[str, float, float | None]] = []
        for name, categories, keys in PARTS:
            estimated = sum(getattr(est, k) for k in keys) - (cuda if "other_gib" in keys else 0.0) if est else None
            rows.append((name, sum(self.parts_gib.get(k, 0.0) for k in categories), estimated))
        rows.append(("allocated peak", self.allocated_peak_gib, est.allocated_peak_gib - cuda if est else None))
        return rows


def simulate(scenario, *, layers: int | None = None, timeline: bool = False, compare: bool = False
             ) -> SimulationReport:
    """The scenario's real training or serving step on fake tensors (transformers / peft, no GPU, no download),
    every tensor counted as the CUDA caching allocator would: ``gpuplan simulate``. ``layers`` runs that many
    layers without extrapolating; ``compare`` adds the estimate's memory. Needs the ``sim`` extra."""
    from ..model.catalog import load_model
    from ..plan.estimate import estimate
    from ..plan.layout import as_run
    from ..sim.simulate import simulate as run

    layers = arg.count(layers, "layers", most=10_000, optional=True)
    timeline, compare = arg.flag(timeline, "timeline"), arg.flag(compare, "compare")
    s = scenario_of(scenario)
    sim = run(s, timeline=timeline, layers=layers)
    est = estimate(as_run(s), advise=False).memory if compare else None  # at the micro-batch simulated
    depth = sum(n for _, n in load_model(s.model).layer_kinds())
    return SimulationReport(**{k: v for k, v in sim.__dict__.items()}, estimate=est, full_layers=depth)


def simulate_module(target: str, *, task: str = "train", gpu: str | None = None):
    """Your own PyTorch module on fake tensors: ``target`` is ``package.module:function``, a callable returning
    ``(module, example_input)``, run once for its memory, its FLOPs and bytes counted for time on ``gpu``:
    ``gpuplan simulate --module`` (:func:`gpuplan.sim.module.simulate_module`). Needs torch."""
    from ..sim.module import simulate_module as run

    return run(arg.text(target, "module"), task=arg.text(task, "task", choices=("train", "infer")),
               gpu=arg.text(gpu, "gpu", optional=True))


def simulate_pipeline(scenario):
    """The main component of a diffusion pipeline or an encoder-decoder (the scenario's model) run once on fake
    tensors the way the scenario runs it, at its largest size, beside the plan's estimate: ``gpuplan simulate``
    of such a model (:func:`gpuplan.sim.module.simulate_pipeline`). A decoder LLM goes to :func:`simulate`."""
    from ..model.catalog import load_model
    from ..model.kinds import NotADecoder
    from ..sim.module import simulate_pipeline as run

    s = scenario_of(scenario)
    try:
        load_model(s.model)
    except NotADecoder as other:
        return run(s, other.spec)
    raise GpuplanError(f"{s.model} is a decoder LLM: gpuplan.simulate runs it")


class Record(Answer):
    """A record as its command prints it (a probe's measurement, calibrate's report): a JSON object whose keys
    are documented where it is made (:func:`gpuplan.sim.probe.probe`, :func:`gpuplan.sim.probe.calibrate`)."""

    model_config = ConfigDict(extra="allow")


def probe(scenario, *, steps: int = 2, simulate_too: bool = True, out_dir: str | Path | None = None
          ) -> tuple[Record, Path | None]:
    """The scenario's step run and measured on the visible CUDA GPU (max_memory_allocated / reserved, device memory
    in use, step time, tokens/s), with the estimate and the simulation of the same scenario: ``gpuplan probe``.
    Returns the record and, with ``out_dir``, the JSON file it was written to (for ``calibrate``)."""
    from ..sim.probe import probe as run
    from ..sim.probe import record_folder, write_record

    steps = arg.count(steps, "steps", most=10_000)
    simulate_too, out_dir = arg.flag(simulate_too, "simulate_too"), arg.path(out_dir, "out_dir", optional=True)
    if out_dir is not None:
        record_folder(out_dir, make=False)  # before the GPU runs; made when the record is written
    record = run(scenario_of(scenario), steps=steps, simulate_too=simulate_too)
    path = write_record(record, Path(out_dir)) if out_dir is not None else None
    return Record(**finite(record)), path


def calibrate(records: Iterable[str | Path | dict[str, Any]]) -> Record:
    """How far the estimate was from real runs: the error per level (allocated, reserved, device) of each probe
    record (a path, or the record), the simulation's error, and the allocator slack and CUDA overheads the
    measurements imply beside those the estimator assumes: ``gpuplan calibrate``."""
    from ..sim.probe import calibrate as report
    from ..sim.probe import check_record, read_record

    if isinstance(records, (str, Path, dict)):
        records = [records]
    if isinstance(records, bytes) or not hasattr(records, "__iter__"):
        raise GpuplanError(f"calibrate takes probe records: paths or records, not {type(records).__name__}")
    taken = []
    for r in records:
        if isinstance(r, dict):
            taken.append(check_record(r, f"record {len(taken) + 1}"))
        elif isinstance(r, (str, Path)):
            taken.append(read_record(arg.path(r, "records")))
        else:
            raise GpuplanError(f"calibrate takes probe records: paths or records, not {type(r).__name__}")
    if not taken:
        raise GpuplanError("calibrate needs at least one probe record (written by gpuplan probe)")
    return Record(**report(taken))


class ServingCalibration(Answer):
    """``calibrate-serving``'s answer: the corrections (``calibration``, what ``capacity --calibration`` reads),
    each run's error before and after them on its held-out requests, and notes."""

    calibration: dict[str, Any]  # compute, memory, overhead multipliers and their source
    runs: list[dict[str, Any]]
    notes: list[str] = Field(default_factory=list)


def calibrate_serving(results: Iterable[str | Path], *, model: str, gpu: str, tp: int = 1,
                      out: str | Path | None = None) -> ServingCalibration:
    """Corrections fitted on the user's own benchmark runs of one deployment (``vllm bench serve
    --save-result``, GuideLLM, AIPerf files), each run replayed in simulation, fitted on half its requests and
    applied only where they make no run's held-out error worse; ``out`` writes them (YAML) for ``capacity
    --calibration``: ``gpuplan calibrate-serving``. Needs numpy (the ``serving`` extra)."""
    try:
        import numpy  # noqa: F401
    except ImportError:
        raise GpuplanError("the serving simulation needs numpy: pip install 'gpuplan[serving]'") from None
    from ..hardware import load_gpu
    from ..model.catalog import load_model
    from ..plan.refusals import check
    from ..scenario import scenario_from
    from ..serving.calibrate import deployment, fit_corrections, read_results, save_calibration

    if isinstance(results, (str, Path)):
        results = [results]
    if isinstance(results, (bytes, dict)) or not hasattr(results, "__iter__"):
        raise GpuplanError(f"calibrate-serving takes result files, not {type(results).__name__}")
    results = [arg.path(r, "results") for r in results]
    if not results:
        raise GpuplanError("calibrate-serving needs benchmark result files (vllm bench serve, GuideLLM, AIPerf)")
    model, gpu = arg.text(model, "model"), arg.text(gpu, "gpu")
    tp = arg.count(tp, "tp", most=64)
    out = arg.path(out, "out", optional=True)
    runs = [r for path in results for r in read_results(path)]
    g, m = load_gpu(gpu), load_model(model)
    s = scenario_from(dict(model=model, task="infer", engine="vllm", gpu=g.id, tp=tp, num_gpus=tp))
    check(s, m, g)  # what vLLM cannot run there, as estimate refuses it (s24 fuzz: an Apple M4 Max was fitted)
    cal, rows, notes = fit_corrections(*deployment(s, m, g), runs)
    if out:
        save_calibration(cal, out)
    return ServingCalibration(calibration=asdict(cal), runs=rows, notes=notes)
