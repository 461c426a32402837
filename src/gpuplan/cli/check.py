"""``gpuplan simulate``, ``probe`` and ``calibrate``: check a plan against the real code, on fake tensors or a GPU."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table
from rich.text import Text

from .. import api
from ..errors import GpuplanError
from ..userfiles import write_file
from .app import JsonFlag, app, option, overrides, print_json, scenario_command
from .render import Column, FormatOption, bullet, out, resolve_format, show


def simulate_cmd(scenario: str | None = None, as_json: bool = False, compare: bool = False,
                 plot: str | None = None, layers: int | None = None, module: str | None = None,
                 **fields: str | None) -> None:
    """The real training or serving step on fake tensors: exact memory, no GPU.

    Runs the scenario's step with the real transformers / peft code on fake tensors (no GPU, no download) and
    counts every tensor as the CUDA caching allocator would: allocated peak, its phase and op, memory by category.
    Memory is affine in the number of identical layers, so a few layers are run and extrapolated to the full
    depth. Needs the sim extra (torch, transformers, peft).

    Examples:

    \b
      gpuplan simulate --model llama-3.1-8b --task train --method qlora --seq-len 2048 --compare
      gpuplan simulate examples/lora-llama-8b.yaml --plot memory.png
      gpuplan simulate --model sdxl --task train --method lora --resolution 1024
      gpuplan simulate --module examples.my_model:build --task train --gpu rtx-4090
    """
    from .plots import plot_target

    if module:
        return _simulate_module(module, overrides(fields), as_json)
    s = api.load_scenario(scenario, overrides(fields))
    target = plot_target(plot) if plot is not None else None  # before the simulation, not after it
    try:
        m = api.load_model(s.model)
    except api.NotADecoder:  # a diffusion pipeline or an encoder-decoder: its main component
        return _simulate_pipeline(s, as_json)
    sim = api.simulate(s, timeline=target is not None, layers=layers, compare=compare)
    if not as_json:  # after: a scenario simulate refuses prints its sentence alone
        bullet(api.describe(s, m), prefix="", style="bold")
    est = sim.estimate
    if target is not None:
        _plot(sim, target)
    if as_json:
        print_json(sim)
        return
    table = Table(title=f"{sim.model}: simulated step ({sim.elapsed_s:.1f} s on the CPU)", title_justify="left")
    table.add_column("part")
    table.add_column("simulated GiB", justify="right")
    if est:
        table.add_column("estimate GiB", justify="right")
        table.add_column("estimate - simulated", justify="right")
    *parts, (_, peak, estimated_peak) = sim.compared()
    for name, simulated, estimated in parts:
        table.add_row(name, f"{simulated:.3f}", *([f"{estimated:.3f}", f"{estimated - simulated:+.3f}"]
                                                  if estimated is not None else []))
    total = [Text(f"allocated peak ({sim.peak_phase}, {sim.peak_op or '-'})", style="bold"), f"{peak:.3f}"]
    if estimated_peak is not None:
        total += [f"{estimated_peak:.3f}", f"{100 * (estimated_peak / peak - 1):+.1f}%"]
    table.add_row(*total)
    out.print(table)
    out.print("phases: " + ", ".join(f"{k} {v:.3f} GiB" for k, v in sim.phases_gib.items()))
    if est:
        out.print(f"the estimate's peak is in {est.peak_phase}; its cuBLAS workspace ({sim.cuda_only_gib:.3f} GiB) is "
                  "CUDA-only and left out; parts at the peak are split as each side sees them, the totals compare")
    for note in sim.notes:
        bullet(note, style="dim")
    if plot:
        out.print(f"timeline written to {plot}")


def _simulate_module(target: str, given: dict, as_json: bool) -> None:
    """``simulate --module``: the user's own module on fake tensors (:func:`gpuplan.api.simulate_module`)."""
    from .modules import render_module_simulation

    result = api.simulate_module(target, task=str(given.get("task") or "train"), gpu=given.get("gpu"))
    print_json(result) if as_json else render_module_simulation(result)


def _simulate_pipeline(s, as_json: bool) -> None:
    """``simulate`` of a diffusion pipeline or encoder-decoder: its main component at the scenario's sizes."""
    from .modules import render_pipeline_simulation

    result = api.simulate_pipeline(s)
    print_json(result) if as_json else render_pipeline_simulation(result)


def _plot(sim, path: Path) -> None:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise GpuplanError("--plot needs matplotlib: pip install 'gpuplan[sim]'") from None
    if not sim.timeline:
        raise GpuplanError("the simulation recorded no timeline to plot")
    depth = sum(sim.runs[0]["layers"].values()) if len(sim.runs) == 1 else None
    full = depth or sim.full_layers
    fig, ax = plt.subplots(figsize=(9, 4.5))
    phases = list(dict.fromkeys(phase for _, _, phase in sim.timeline))
    for phase in phases:
        xs = [event for event, _, p in sim.timeline if p == phase]
        ys = [gib for _, gib, p in sim.timeline if p == phase]
        ax.plot(xs, ys, ".", markersize=1.5, label=phase)
    ax.axhline(sim.allocated_peak_gib, color="black", linestyle="--", linewidth=0.8)
    ax.annotate(f"allocated peak {sim.allocated_peak_gib:.2f} GiB ({sim.peak_phase})",
                (0, sim.allocated_peak_gib), xytext=(4, 4), textcoords="offset points", fontsize=8)
    ax.set_ylim(bottom=0)
    ax.set(xlabel=f"allocation / release events of the step\n(a {sim.timeline_layers}-layer run raised to {full} "
                  "layers: each phase's peak extrapolated exactly, linear in between)",
           ylabel=f"live tensors at {full} layers, GiB",
           title=f"{sim.model}: {sim.scenario['task']} step at full depth ({full} layers), as max_memory_allocated "
                 "counts it")
    ax.legend(markerscale=8, title="phase")
    fig.tight_layout()
    try:
        write_file(path, lambda temp: fig.savefig(temp, dpi=120), "--plot")
    finally:
        plt.close(fig)


scenario_command(
    "simulate", simulate_cmd,
    option("compare", bool, False, "Print the analytic estimate beside the simulation, part by part."),
    option("plot", str | None, None, "Draw memory over the step to this PNG (matplotlib)."),
    option("layers", int | None, None, "Run this many layers as they are, without extrapolating [default: two depths a "
           "layer pattern apart, raised to the full depth exactly]."),
    option("module", str | None, None, "Your own PyTorch module: package.module:function, a callable returning "
           "(module, example_input), run once on fake tensors (with --task train|infer, --gpu for its time); "
           "the scenario's --model is not needed; imports and runs that code from the current folder, as python -m "
           "does: name only your own"))


def probe_cmd(scenario: str | None = None, as_json: bool = False, steps: int = 2, out_dir: str = "probes",
              no_simulate: bool = False, **fields: str | None) -> None:
    """Measure the step on this machine's CUDA GPU, for calibrate.

    Runs the scenario's step for real on the visible CUDA GPU (random weights from the config, no download)
    and measures max_memory_allocated / reserved, device memory in use, step time and tokens/s. Writes a JSON
    record with the estimate and the simulation of the same scenario, for gpuplan calibrate.

    Examples:

    \b
      CUDA_VISIBLE_DEVICES=0 gpuplan probe --model llama-3.1-8b --task train --method lora --seq-len 2048
    """
    report, path = api.probe(api.load_scenario(scenario, overrides(fields)), steps=steps,
                             simulate_too=not no_simulate, out_dir=out_dir)
    record = report.to_dict()
    if as_json:
        print_json(record)
        return
    p, e = record["probe"], record["estimate"]
    if p.get("oom"):
        out.print(Text("out of memory", style="red") + f" on {record['gpu']} after {p['allocated_peak_gib']:.2f} GiB "
                  f"allocated (the estimate said {e['device_peak_gib']:.2f} GiB at the device level)")
    else:
        out.print(f"{record['gpu']}: allocated {p['allocated_peak_gib']:.3f} GiB (estimate "
                  f"{e['allocated_peak_gib']:.3f}), reserved {p['reserved_peak_gib']:.3f} (estimate "
                  f"{e['reserved_peak_gib']:.3f}), device {p['device_used_gib']:.3f} (estimate "
                  f"{e['device_peak_gib']:.3f}); {p['step_time_s']:.3f} s per step, {p['tokens_per_s']:,.0f} tokens/s")
    out.print(f"record written to {path}")


scenario_command(
    "probe", probe_cmd,
    option("steps", int, 2, "Timed steps after one warm-up."),
    option("out_dir", str, "probes", "Folder for the JSON record."),
    option("no_simulate", bool, False, "Skip the fake-tensor simulation in the record."))


@app.command("calibrate")
def calibrate_cmd(
    records: Annotated[list[str], typer.Argument(help="Probe records (JSON) written by gpuplan probe.")],
    fmt: FormatOption = None,
    as_json: JsonFlag = False,
) -> None:
    """How far the estimate was from real runs.

    Error per level (allocated, reserved, device) for each probe record, the simulation's error, and the
    allocator slack and CUDA overheads the measurements imply next to the ones the estimator assumes.

    Examples:

    \b
      gpuplan calibrate probes/*.json
    """
    fmt = resolve_format(fmt, as_json)
    report = api.calibrate(records).to_dict()
    rows = []
    for r in report["records"]:
        row = {"model": str(r["model"]), "task": str(r["task"]), "gpu": str(r["gpu"])}
        for level in ("allocated", "reserved", "device"):
            err_pct = r.get(f"{level}_error_pct")
            row[level] = "OOM" if r.get("oom") else None if err_pct is None else \
                f"{r[f'{level}_measured_gib']:.2f} GiB {err_pct:+.1f}%"
        sim = r.get("simulation_error_pct")
        row["simulation"] = None if sim is None else f"{sim:+.1f}%"
        rows.append(row)
    notes = []
    slack = report["allocator_slack"]
    if slack["measured_median"] is not None:
        notes.append(f"allocator slack: measured median {100 * slack['measured_median']:.1f}%, assumed "
                     f"{100 * slack['assumed']['train']:.0f}% (train) / {100 * slack['assumed']['infer']:.0f}% "
                     "(infer)")
    outside = report["outside_allocator_gib"]["measured_median"]
    if outside is not None:
        notes.append(f"outside the allocator (CUDA context, cuBLAS, NCCL, other processes): measured median "
                     f"{outside:.2f} GiB")
    columns = [Column("model", "model", priority=0), Column("task", "task", priority=3),
               Column("gpu", "gpu", priority=2), *(Column(k, k, align="right") for k in (
                   "allocated", "reserved", "device")), Column("simulation", "simulation", align="right",
                                                               priority=2)]
    show(rows, columns, fmt, title="estimate vs probe (measured GiB, error = estimate / measured - 1)", notes=notes,
         json_data=report)
