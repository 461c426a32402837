"""``probe(scenario)``: the scenario's step run for real on a CUDA GPU, measured; ``calibrate(records)``: how far
the estimate was from those measurements.

The probe builds the model from its config with random weights (no download), sets it up and steps it with the
same code as the simulator (:func:`gpuplan.simulate.build`, ``train_steps``, ``generate_steps``), after one
warm-up pass, and measures ``torch.cuda.max_memory_allocated`` / ``max_memory_reserved``, the device memory in
use (``torch.cuda.mem_get_info``, which honours ``CUDA_VISIBLE_DEVICES``, as nvidia-smi would show it for the
card, other processes included), the step time and tokens per second. The record it writes holds the
scenario, the probe, the estimate and (unless skipped) the simulation, so that ``gpuplan calibrate`` can
report the error of each level and the overheads the estimator assumes (allocator slack, CUDA context).

4-bit weights and 8-bit optimizers use the simulator's stand-ins (same bytes, not bitsandbytes' kernels): their
memory is right, their time is not, and the record says so.
"""

from __future__ import annotations

import datetime as dt
import json
import math
import statistics
import time
from pathlib import Path
from typing import Any

from .. import overheads as oh
from ..errors import GpuplanError
from ..model.catalog import load_model
from ..plan.estimate import estimate
from ..scenario import Scenario, scenario_from

GIB = 2**30


def probe(scenario: Scenario | dict[str, Any], *, steps: int = 2, simulate_too: bool = True) -> dict[str, Any]:
    """Run and measure ``scenario`` on the current CUDA device; returns the record."""
    try:
        import torch
    except ImportError:
        raise GpuplanError("probe needs torch with CUDA: pip install torch (a CUDA build) and "
                           "'gpuplan[sim]'") from None
    if not torch.cuda.is_available():
        raise GpuplanError("probe needs a CUDA GPU and none is visible (torch.cuda.is_available() is False): run "
                           "it on the machine you will use, or run gpuplan simulate here")
    from .simulate import _check, build, sized_config

    s = scenario_from(scenario)
    m = load_model(s.model)
    _check(s, m)
    notes: list[str] = []
    kinds = list(m.layer_kinds())
    model = build(s, m, sized_config(m, kinds, [n for _, n in kinds]), notes)
    device = torch.device("cuda")
    torch.cuda.empty_cache()
    torch.cuda.reset_peak_memory_stats()
    record: dict[str, Any] = {"scenario": s.model_dump(), "model": m.name, "gpu": torch.cuda.get_device_name(),
                              "torch": torch.__version__, "measured_at": dt.datetime.now(dt.timezone.utc).isoformat(),
                              "notes": notes}
    try:
        record["probe"] = _measure(s, m, model.to_empty(device=device), steps, notes)
    except torch.cuda.OutOfMemoryError:
        record["probe"] = {"oom": True, "allocated_peak_gib": torch.cuda.max_memory_allocated() / GIB,
                           "reserved_peak_gib": torch.cuda.max_memory_reserved() / GIB}
    finally:
        torch.set_grad_enabled(True)
        del model
        torch.cuda.empty_cache()
    record["estimate"] = estimate(s, advise=False).memory.model_dump()
    if simulate_too:
        from .simulate import simulate

        sim = simulate(s)
        record["simulation"] = {"allocated_peak_gib": sim.allocated_peak_gib, "peak_phase": sim.peak_phase,
                                "parts_gib": sim.parts_gib}
    return record


def _measure(s: Scenario, m, model, steps: int, notes: list[str]) -> dict[str, Any]:
    """Random weights, one warm-up run (kernels chosen, optimizer states created), then ``steps`` timed runs."""
    import torch

    from .simulate import Phases, generate_steps, train_steps

    model.tie_weights()
    with torch.no_grad():
        for p in model.parameters():
            if p.is_floating_point():
                p.normal_(0.0, 0.02)

    def run() -> int:
        if s.task == "train":
            return train_steps(s, m, model, Phases(), notes, "cuda")
        return generate_steps(s, m, model, Phases(), "cuda")

    run()
    torch.cuda.synchronize()
    times, tokens = [], 0
    for _ in range(steps):
        start = time.perf_counter()
        tokens = run()
        torch.cuda.synchronize()
        times.append(time.perf_counter() - start)
    free, total = torch.cuda.mem_get_info()
    step_s = statistics.median(times)
    return {"allocated_peak_gib": torch.cuda.max_memory_allocated() / GIB,
            "reserved_peak_gib": torch.cuda.max_memory_reserved() / GIB,
            "device_used_gib": (total - free) / GIB, "device_total_gib": total / GIB,
            "step_time_s": step_s, "tokens_per_s": tokens / step_s, "oom": False}


def write_record(record: dict[str, Any], folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    stamp = record["measured_at"].replace(":", "").split(".")[0]
    path = folder / f"probe-{Path(str(record['model'])).name}-{record['scenario']['task']}-{stamp}.json"
    path.write_text(json.dumps(record, indent=2, default=str))
    return path


def read_record(path: str | Path) -> dict[str, Any]:
    """A probe record from ``path``, checked: a JSON object with ``scenario``, ``probe`` and ``estimate``
    objects whose measured and estimated GiB are finite numbers >= 0 (one sentence per problem)."""
    p = Path(path)
    if p.is_dir():
        raise GpuplanError(f"{path} is a folder: pass the probe records in it ({path}/*.json)")
    try:
        record = json.loads(p.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise GpuplanError(f"no probe record at {path}") from None
    except (UnicodeDecodeError, OSError):
        raise GpuplanError(f"{path} is not a probe record (not a readable UTF-8 JSON file)") from None
    except json.JSONDecodeError as e:
        raise GpuplanError(f"{path} is not a probe record (invalid JSON at line {e.lineno})") from None
    if not isinstance(record, dict):
        raise GpuplanError(f"{path} is not a probe record: it holds a JSON {_kind(record)}, not an object")
    missing = {"scenario", "probe", "estimate"} - set(record)
    if missing:
        raise GpuplanError(f"{path} is not a probe record: it lacks {', '.join(sorted(missing))}")
    for part in ("scenario", "probe", "estimate"):
        if not isinstance(record[part], dict):
            raise GpuplanError(f"{path}: {part!r} must be a JSON object, got {_kind(record[part])}")
    if "simulation" in record and not isinstance(record["simulation"], dict):
        raise GpuplanError(f"{path}: 'simulation' must be a JSON object")
    for key in ("allocated_peak_gib", "reserved_peak_gib", "device_used_gib"):
        if key in record["probe"] or key != "device_used_gib":
            _gib(record["probe"].get(key), f"{path}: probe.{key}")
    for key in ("allocated_peak_gib", "reserved_peak_gib", "device_peak_gib"):
        if key not in record["estimate"]:
            raise GpuplanError(f"{path}: estimate.{key} is missing (the record was not written by gpuplan probe)")
        _gib(record["estimate"][key], f"{path}: estimate.{key}")
    if "simulation" in record:
        _gib(record["simulation"].get("allocated_peak_gib"), f"{path}: simulation.allocated_peak_gib")
    return record


def _kind(value: Any) -> str:
    return {type(None): "null", dict: "object", list: "list", str: "string", bool: "boolean"}.get(
        type(value), "number")


def _gib(value: Any, where: str) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
        raise GpuplanError(f"{where} must be a number of GiB >= 0, got {value!r}")


def calibrate(records: list[dict[str, Any]]) -> dict[str, Any]:
    """Estimate vs probe error per level (allocated, reserved, device) for each record, and the overheads the
    measurements imply next to the ones :mod:`gpuplan.overheads` assumes: the caching allocator's slack
    (reserved / allocated - 1) and what lives outside it (device - reserved: CUDA context, cuBLAS, NCCL)."""
    rows, slack, outside = [], [], []
    for r in records:
        p, e = r["probe"], r["estimate"]
        row = {"model": r.get("model"), "task": r["scenario"].get("task"), "gpu": r.get("gpu"), "oom": p.get("oom")}
        for level, measured in (("allocated", "allocated_peak_gib"), ("reserved", "reserved_peak_gib"),
                                ("device", "device_used_gib")):
            if p.get(measured):
                row[f"{level}_measured_gib"] = p[measured]
                row[f"{level}_estimated_gib"] = e[f"{level}_peak_gib"]
                row[f"{level}_error_pct"] = 100 * (e[f"{level}_peak_gib"] / p[measured] - 1)
        if "simulation" in r and p.get("allocated_peak_gib"):
            row["simulation_error_pct"] = 100 * (r["simulation"]["allocated_peak_gib"] / p["allocated_peak_gib"] - 1)
        if not p.get("oom") and p.get("allocated_peak_gib"):
            slack.append(p["reserved_peak_gib"] / p["allocated_peak_gib"] - 1)
            if p.get("device_used_gib"):
                outside.append(p["device_used_gib"] - p["reserved_peak_gib"])
        rows.append(row)
    assumed_slack = {"train": oh.ALLOCATOR_SLACK_TRAIN, "infer": oh.ALLOCATOR_SLACK_INFER}
    return {"records": rows,
            "allocator_slack": {"measured_median": statistics.median(slack) if slack else None,
                                "assumed": assumed_slack},
            "outside_allocator_gib": {"measured_median": statistics.median(outside) if outside else None}}
