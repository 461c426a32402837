"""``probe(scenario)``: the scenario's step run for real on a CUDA GPU, measured; ``calibrate(records)``: how far
the estimate was from those measurements.

The probe builds the model from its config with random weights (no download), sets it up and steps it with the
same code as the simulator (:func:`gpuplan.sim.simulate.build`, ``train_steps``, ``generate_steps``), after one
warm-up pass, and measures ``torch.cuda.max_memory_allocated`` / ``max_memory_reserved``, the device memory in
use (``torch.cuda.mem_get_info``, which honours ``CUDA_VISIBLE_DEVICES``, as nvidia-smi would show it for the
card, other processes included), the step time and tokens per second. The record it writes holds the
scenario, the probe, the estimate and (unless skipped) the simulation, so that ``gpuplan calibrate`` can
report the error of each level and the overheads the estimator assumes (allocator slack, CUDA context).

On the GPU the probe runs each installed library's own modules (bitsandbytes' 4-bit linears and 8-bit
optimizers, Liger's kernels, torchtune's and torchtitan's models, the HF Trainer for the hf stack: :mod:`.real`)
and the record's ``backends`` says, part by part, which ran and which stayed gpuplan's stand-in (a library not
installed, Unsloth's kernels), and ``timed`` what one timed step holds.
"""

from __future__ import annotations

import datetime as dt
import json
import math
import os
import re
import statistics
import time
from pathlib import Path
from typing import Any

from .. import overheads as oh
from ..errors import GpuplanError, echo, echo_value, no_control
from ..model.catalog import load_model
from ..plan.estimate import estimate
from ..plan.layout import as_run
from ..plan.refusals import scenario_refusal
from ..scenario import Scenario, scenario_from
from ..userfiles import is_folder, load_json, write_text

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
    from .real import backends, record_of
    from .simulate import refusal

    s = scenario_from(scenario)
    scenario_refusal(s)  # what the stack cannot run
    m = load_model(s.model)
    refusal(s, m)
    notes: list[str] = []
    chosen = backends(s)
    torch.cuda.empty_cache()
    torch.cuda.reset_peak_memory_stats()
    record: dict[str, Any] = {"scenario": s.model_dump(), "model": m.name, "gpu": torch.cuda.get_device_name(),
                              "torch": torch.__version__, "measured_at": dt.datetime.now(dt.timezone.utc).isoformat(),
                              "backends": record_of(chosen), "notes": notes}
    model = forward_loss = None
    try:
        model, forward_loss = _build_on_device(s, m, chosen, notes)
        record["probe"] = _measure(s, m, model, forward_loss, chosen, steps, notes)
    except torch.cuda.OutOfMemoryError:
        record["probe"] = {"oom": True, "allocated_peak_gib": torch.cuda.max_memory_allocated() / GIB,
                           "reserved_peak_gib": torch.cuda.max_memory_reserved() / GIB}
    finally:
        torch.set_grad_enabled(True)
        del model, forward_loss
        torch.cuda.empty_cache()
    record["estimate"] = estimate(as_run(s), advise=False).memory.model_dump()  # at the micro-batch measured
    if simulate_too:
        from .simulate import simulate

        sim = simulate(s)
        record["simulation"] = {"allocated_peak_gib": sim.allocated_peak_gib, "peak_phase": sim.peak_phase,
                                "parts_gib": sim.parts_gib}
    return record


def _build_on_device(s: Scenario, m, chosen, notes: list[str], device: str = "cuda"):
    """The scenario's model on the CUDA device with random weights, and its loss function (None: the model's own
    forward with labels), with the libraries :func:`~.real.backends` chose swapped in."""
    import torch

    from . import real, stacks
    from .simulate import build, sized_config

    device = torch.device(device)
    if stacks.own_model(s):
        with device:
            return stacks.build_own(s, m, m.num_layers, notes)
    real_4bit = s.task == "train" and s.method == "qlora" and real.uses(chosen, "4-bit base")
    liger = s.task == "train" and real.uses(chosen, "fused kernels")
    built = s
    if real_4bit:  # peft over plain linears first, then bitsandbytes' Linear4bit under the adapters
        kept = ("grad_checkpointing", "adapter_dtype", "loss", "activation_offload", "compile", "lora_rank",
                "lora_targets", "lora_dropout", "precision")
        built = s.model_copy(update={"method": "lora", **{k: getattr(s, k) for k in kept}})
    kinds = list(m.layer_kinds())
    patch = stacks.patch_hf
    if liger:  # the real kernels replace the emulation
        stacks.patch_hf = lambda *args, **kwargs: None
    try:
        model = build(built, m, sized_config(m, kinds, [n for _, n in kinds]), notes)
    finally:
        stacks.patch_hf = patch
    model = model.to_empty(device=device)
    model.tie_weights()
    with torch.no_grad():
        for p in model.parameters():
            if p.is_floating_point():
                p.normal_(0.0, 0.02)
    if real_4bit:
        compute = torch.float16 if s.precision.startswith("fp16") else torch.bfloat16
        notes.append(f"QLoRA: {real.quantize_4bit(model, compute)} linears quantized by bitsandbytes (nf4)")
        if s.qlora_fp32_upcast:  # peft prepare_model_for_kbit_training
            for name, p in model.named_parameters():
                if p.dtype in (torch.bfloat16, torch.float16) and "lora_" not in name:
                    p.data = p.data.float()
    if s.task != "train":
        return model, None
    if liger and s.stack != "hf":  # the hf stack's Trainer applies Liger itself (use_liger_kernel)
        real.apply_liger(model, fused_loss=s.loss == "fused-linear")
    return model, None if liger else stacks.fused_loss(s, m, model)


def _measure(s: Scenario, m, model, forward_loss, chosen, steps: int, notes: list[str]) -> dict[str, Any]:
    """One warm-up run (kernels chosen, optimizer states created), then ``steps`` timed runs: the HF Trainer's
    optimizer steps for the hf stack, gpuplan's loop (two optimizer steps per run) for the others, ``generate``
    for inference."""
    import torch

    from . import real
    from .simulate import SAFE_IDS, Phases, generate_steps, train_steps

    if s.task == "train" and s.stack == "hf":
        times = real.trainer_step_times(s, model, min(m.vocab_size, SAFE_IDS), steps,
                                        liger=real.uses(chosen, "fused kernels"))
        step_s = statistics.median(times)
        tokens, timed = s.micro_batch_size * s.seq_len * s.grad_accum_steps, "one optimizer step (HF Trainer)"
    else:
        make_optimizer = (lambda params: real.optimizer(s, params)) if real.uses(chosen, "optimizer") else None

        def run() -> int:
            if s.task == "train":
                return train_steps(s, m, model, Phases(), notes, "cuda", forward_loss=forward_loss,
                                   make_optimizer=make_optimizer)
            return generate_steps(s, m, model, Phases(), "cuda", every_step=True)

        run()
        torch.cuda.synchronize()
        times, tokens = [], 0
        for _ in range(steps):
            start = time.perf_counter()
            tokens = run()
            torch.cuda.synchronize()
            times.append(time.perf_counter() - start)
        step_s = statistics.median(times)
        timed = "two optimizer steps (gpuplan's loop)" if s.task == "train" else "prefill and decode (generate)"
    free, total = torch.cuda.mem_get_info()
    return {"allocated_peak_gib": torch.cuda.max_memory_allocated() / GIB,
            "reserved_peak_gib": torch.cuda.max_memory_reserved() / GIB,
            "device_used_gib": (total - free) / GIB, "device_total_gib": total / GIB,
            "step_time_s": step_s, "tokens_per_s": tokens / step_s, "timed": timed, "oom": False}


def record_folder(folder: str | Path, *, make: bool = True) -> Path:
    """``--out-dir`` checked (``~`` expanded; no control character, not a file) and, with ``make``, created with its
    parents and checked by :func:`gpuplan.userfiles.output_file` on a record in it (no name too long, a folder that
    takes a new file), or one sentence."""
    from ..userfiles import NAME_MAX, output_file, user_path

    path = user_path(no_control(str(folder), "--out-dir"))
    for part in path.parts:  # before the GPU runs: the system's lookup of a longer name is an OSError (s19-fuzz2)
        if len(os.fsencode(part)) > NAME_MAX:
            raise GpuplanError(f"--out-dir has a name of {len(os.fsencode(part)):,} bytes ({echo(part)}); file "
                               f"systems allow {NAME_MAX}")
    if path.exists() and not path.is_dir():
        raise GpuplanError(f"--out-dir {echo(str(folder))} is a file: name a folder for the probe records")
    if not make:
        return path
    try:
        path.mkdir(parents=True, exist_ok=True)
    except (OSError, ValueError) as err:
        why = err.strerror if isinstance(err, OSError) and err.strerror else str(err)
        raise GpuplanError(f"cannot make --out-dir {echo(str(folder))}: {why}") from None
    return output_file(path / "probe.json", "--out-dir").parent


def write_record(record: dict[str, Any], folder: Path) -> Path:
    """The record as ``folder/probe-MODEL-TASK-TIME.json``, whole or not at all (:func:`gpuplan.userfiles.write_text`:
    a temporary renamed into place, a link at the name replaced, not followed); the model's name in it reduced to
    letters, digits, ``.``, ``-`` and ``_`` (a folder's name may hold anything)."""
    stamp = record["measured_at"].replace(":", "").split(".")[0]
    model = re.sub(r"[^A-Za-z0-9._-]+", "_", Path(str(record["model"])).name).strip("._")[:100] or "model"
    path = record_folder(folder) / f"probe-{model}-{record['scenario']['task']}-{stamp}.json"
    write_text(path, json.dumps(record, indent=2, default=str), "--out-dir")
    return path


def read_record(path: str | Path) -> dict[str, Any]:
    """A probe record from ``path``, checked: a JSON object with ``scenario``, ``probe`` and ``estimate``
    objects whose measured and estimated GiB are finite numbers >= 0 (one sentence per problem)."""
    p = Path(path)
    if is_folder(p):
        raise GpuplanError(f"{path} is a folder: pass the probe records in it ({path}/*.json)")
    return check_record(load_json(p, "probe record"), str(path))


def check_record(record: Any, path: str) -> dict[str, Any]:
    """``record`` (read from ``path``, or given to the Python API as a dict) if it is a probe record as
    :func:`read_record` asks, else one sentence naming ``path``."""
    if not isinstance(record, dict):
        raise GpuplanError(f"{path} is not a probe record: it holds a JSON {_kind(record)}, not an object")
    missing = {"scenario", "probe", "estimate"} - set(record)
    if missing:
        # a serving benchmark's result (vllm bench serve, GuideLLM, AIPerf: serving/calibrate.py reads their keys)
        serving = {"mean_ttft_ms", "benchmarks", "time_to_first_token"} & set(record)
        raise GpuplanError(f"{path} is not a probe record: it lacks {', '.join(sorted(missing))}" + (
            "; it is a serving benchmark's result, which `gpuplan calibrate-serving FILE --model NAME --gpu GPU` "
            "reads" if serving else ""))
    for part in ("scenario", "probe", "estimate"):
        if not isinstance(record[part], dict):
            raise GpuplanError(f"{path}: {part!r} must be a JSON object, got {_kind(record[part])}")
    if "simulation" in record and not isinstance(record["simulation"], dict):
        raise GpuplanError(f"{path}: 'simulation' must be a JSON object")
    if record["scenario"].get("task") not in ("train", "infer"):
        task = record["scenario"].get("task")
        raise GpuplanError(f"{path}: scenario.task must be train or infer, got {echo_value(task)}")
    for key, where, kind in (("model", record, str), ("gpu", record, str), ("oom", record["probe"], bool)):
        if key in where and not isinstance(where[key], kind):
            raise GpuplanError(f"{path}: {'probe.' if key == 'oom' else ''}{key} must be "
                               f"{'text' if kind is str else 'true or false'}, got {echo_value(where[key])}")
    for key in ("allocated_peak_gib", "reserved_peak_gib", "device_used_gib"):
        if key in record["probe"] or key != "device_used_gib":
            _gib(record["probe"].get(key), f"{path}: probe.{key}")
    _measured_in_order(record["probe"], path)
    for key in ("allocated_peak_gib", "reserved_peak_gib", "device_peak_gib"):
        if key not in record["estimate"]:
            raise GpuplanError(f"{path}: estimate.{key} is missing (the record was not written by gpuplan probe)")
        _gib(record["estimate"][key], f"{path}: estimate.{key}")
    if "simulation" in record:
        _gib(record["simulation"].get("allocated_peak_gib"), f"{path}: simulation.allocated_peak_gib")
    return record


def _measured_in_order(probe: dict[str, Any], path: str) -> None:
    """One sentence when the probe's figures cannot all have been measured: PyTorch's caching allocator serves
    every allocation from memory it reserved, so ``torch.cuda.max_memory_allocated()`` is at most
    ``max_memory_reserved()`` (c10/cuda/CUDACachingAllocator.cpp: allocated bytes are blocks of reserved
    segments), and no figure is above the card's own memory (``device_total_gib``, ``torch.cuda.mem_get_info``)."""
    allocated, reserved = probe["allocated_peak_gib"], probe["reserved_peak_gib"]
    if allocated > reserved:
        raise GpuplanError(f"{path}: probe.allocated_peak_gib {allocated:,.4g} is above probe.reserved_peak_gib "
                           f"{reserved:,.4g}; PyTorch allocates within the memory it reserved, so these were not "
                           "measured together")
    total = probe.get("device_total_gib")
    if total is None:
        return
    _gib(total, f"{path}: probe.device_total_gib")
    for key in ("allocated_peak_gib", "reserved_peak_gib", "device_used_gib"):
        if probe.get(key, 0) > total:
            raise GpuplanError(f"{path}: probe.{key} {probe[key]:,.4g} is above the card's "
                               f"probe.device_total_gib {total:,.4g}")


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
            # the device's use at the end holds the reserved segments unless an allocation retried after freeing
            # the cache (CUDACachingAllocator's release_cached_blocks): then the peak is gone and the difference
            # measures nothing, and is left out rather than counted as memory below zero
            if p.get("device_used_gib") and p["device_used_gib"] >= p["reserved_peak_gib"]:
                outside.append(p["device_used_gib"] - p["reserved_peak_gib"])
        rows.append(row)
    assumed_slack = {"train": oh.ALLOCATOR_SLACK_TRAIN, "infer": oh.ALLOCATOR_SLACK_INFER}
    return {"records": rows,
            "allocator_slack": {"measured_median": statistics.median(slack) if slack else None,
                                "assumed": assumed_slack},
            "outside_allocator_gib": {"measured_median": statistics.median(outside) if outside else None}}
