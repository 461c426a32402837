"""What the command line prints for a model that is not a decoder LLM: its plan's work (it/s, seconds per image,
the parts of a step, the price), and ``gpuplan model``'s components."""

from __future__ import annotations

from rich.table import Table
from rich.text import Text

from .app import print_json, short
from .render import TECHNIQUE_CELLS, Column, bullet, err, num, out, show, spot_bullet, usd


def render_work(result) -> None:
    """The speed and price lines of a module plan (after the memory table :func:`.estimate.render_estimate`
    prints)."""
    w, s, c = result.work, result.scenario, result.cost
    head = "speed" if result.memory.fits is not False else "speed, were it to fit"
    if w.kind == "diffusion generation":
        bullet(f"{head}: {w.image_s:,.1f} s per call of {w.samples_per_step} image(s) ({w.steps} steps at "
               f"{w.steps_per_s:,.2f} it/s, {1e3 * w.step_s:,.0f} ms per step, {w.bound}-bound); "
               f"{w.images_per_hour:,.0f} images/h (likely {_sig(3600 * w.samples_per_s_low)}-"
               f"{_sig(3600 * w.samples_per_s_high)})", prefix="")
        if w.first_call_s is not None:
            low, high = w.first_call_range_s
            bullet(f"first call after loading the pipeline: about {w.first_call_s:,.1f} s (likely {low:,.1f}-"
                   f"{high:,.1f} s), with its one-time setup: kernels loaded on first use, cuBLAS and cuDNN choosing "
                   "algorithms for each new shape", prefix="  ", style="dim")
    elif s["task"] == "train":
        unit = "images" if w.kind == "diffusion training" else "samples"
        bullet(f"{head}: {w.steps_per_s:,.2f} it/s ({w.step_s:,.2f} s per optimizer step), {_sig(w.samples_per_s)} "
               f"{unit}/s (likely {_sig(w.samples_per_s_low)}-{_sig(w.samples_per_s_high)}), MFU {w.mfu:.2f}, "
               f"{w.bound}-bound", prefix="")
    elif s.get("audio_seconds") and s["task"] == "infer":
        bullet(f"{head}: {w.image_s:,.1f} s per recording of {s['audio_seconds']:g} s ({w.samples_per_step:,} "
               f"windows, {w.batch} per pass), {_sig(w.samples_per_s)} windows/s (likely "
               f"{_sig(w.samples_per_s_low)}-{_sig(w.samples_per_s_high)}; {w.bound}-bound)", prefix="")
    else:
        bullet(f"{head}: {w.image_s:,.3f} s per batch of {w.samples_per_step}, {_sig(w.samples_per_s)} samples/s "
               f"(likely {_sig(w.samples_per_s_low)}-{_sig(w.samples_per_s_high)}; {w.bound}-bound)", prefix="")
    # the explanation's shares (the page shows the same): whole percents summing to 100, the rest as other
    bullet(("step: " if s["task"] == "train" else "call: ") + ", ".join(
        f"{k} {pct}%" for k, pct in w.step_shares()), prefix="  ", style="dim")
    if result.memory.fits is False:
        bullet("not priced: the job does not fit on this GPU (apply a change above)", prefix="", style="yellow")
    elif c is not None:
        # the user's own cards: "your 1x rtx-4090 (power only)"
        where = c.offer if c.pricing == "owned" else f"{short(c.gpu_id)} on {c.offer}"
        line = f"cost: {where} at ${c.usd_per_hour:,.2f}/h"
        if s["task"] == "train" and w.job_hours:
            line += f": {c.hours:,.2f} h, ${c.usd_total:,.2f} for {s['train_steps']:,} steps"
        elif s["task"] == "train":
            line += f"; ${usd(w.usd_per_1000_samples)} per 1,000 {'images' if 'diffusion' in w.kind else 'samples'}"
            line += " (set --train-steps for the job's hours and total)"
        else:
            unit = "images" if "diffusion" in w.kind else ("windows" if s.get("audio_seconds") else "samples")
            line += f": ${usd(w.usd_per_1000_samples)} per 1,000 {unit}"
        bullet(line, prefix="")
        if c.spot:
            spot_bullet(c, False)
    bullet("simulated: " + "; ".join(w.simulated), prefix="  ", style="dim")
    bullet("modelled: " + "; ".join(w.modelled), prefix="  ", style="dim")


def _sig(x: float) -> str:
    """A rate with three significant figures (0.0486, 1.23, 1,234)."""
    return f"{x:,.0f}" if x >= 100 else f"{x:.3g}"


def render_module(spec_facts: dict) -> None:
    """``gpuplan model`` for a pipeline or encoder-decoder: its components and their exact counts."""
    out.print(Text(spec_facts["name"], style="bold") + f"  ({spec_facts['kind']}, {spec_facts['family']})")
    out.print(f"{spec_facts['params_total']:,} parameters")
    table = Table(title="components", title_justify="left")
    for col in ("component", "class", "params", "share"):
        table.add_column(col, justify="right" if col in ("params", "share") else "left")
    for c in spec_facts["components"]:
        share = 100 * c["params"] / spec_facts["params_total"]
        table.add_row(c["name"], c["class"], f"{c['params']:,}", f"{share:.1f}%")
    out.print(table)
    defaults = spec_facts["defaults"]
    if defaults:
        out.print("defaults: " + ", ".join(f"{k.replace('_', ' ')} {v}" for k, v in defaults.items()))
    out.print(Text(f"counted by {spec_facts['counted_by']}", style="dim"))
    for note in spec_facts["notes"]:
        bullet(note, prefix="note: ", style="yellow")


def render_module_simulation(r) -> None:
    """``simulate --module``: the module's memory and FLOPs on fake tensors, its time on a card."""
    out.print(Text(f"{r.target} ({r.module}): {'training step' if r.task == 'train' else 'forward'} on fake tensors "
                   f"({r.elapsed_s:.1f} s on the CPU)", style="bold"))
    out.print(f"{r.params:,} parameters ({r.dtype})")
    table = Table(title="memory", title_justify="left")
    table.add_column("part")
    table.add_column("GiB", justify="right")
    for name, gib in (("weights", r.weights_gib), ("gradients", r.gradients_gib), ("optimizer states (AdamW)",
                      r.optimizer_gib), ("activations", r.activations_gib)):
        if gib or name == "activations":
            table.add_row(name, f"{gib:.3f}")
    table.add_section()
    table.add_row(Text("allocated peak", style="bold"), Text(f"{r.allocated_peak_gib:.3f}", style="bold"))
    table.add_row("device peak (+ allocator slack, CUDA context)", f"{r.device_peak_gib:.3f}")
    out.print(table)
    unit = "step" if r.task == "train" else "call"
    out.print(f"FLOPs: {r.flops_forward:,.3g} forward, {r.flops_step:,.3g} per {unit}")
    if r.gpu:
        verdict = "fits" if r.fits else "does not fit"
        out.print(f"{r.gpu}: {verdict}; {r.step_s * 1e3:,.1f} ms per {'step' if r.task == 'train' else 'call'}")
    bullet("simulated: " + "; ".join(r.simulated), prefix="  ", style="dim")
    bullet("modelled: " + "; ".join(r.modelled), prefix="  ", style="dim")


def render_pipeline_simulation(r) -> None:
    """``simulate`` of a pipeline or encoder-decoder: the exact pass beside the profile's estimate."""
    bullet(r.resolved, prefix="", style="bold")
    table = Table(title=f"{r.model}: {r.way}, batch {r.batch} ({r.elapsed_s:.1f} s on the CPU)", title_justify="left")
    for col in ("", "simulated GiB", "estimate GiB", "estimate - simulated"):
        table.add_column(col, justify="left" if not col else "right")
    table.add_row("activations", f"{r.simulated_activations_gib:.3f}", f"{r.estimated_activations_gib:.3f}",
                  f"{r.estimated_activations_gib - r.simulated_activations_gib:+.3f}")
    table.add_row("allocated peak", f"{r.allocated_peak_gib:.3f}", f"{r.estimated_allocated_peak_gib:.3f}",
                  f"{r.estimated_allocated_peak_gib - r.allocated_peak_gib:+.3f}")
    out.print(table)
    for note in r.notes:
        bullet(note, style="dim")


def render_choices(choices, fmt: str, *, ranked: bool) -> None:
    """``recommend`` (``ranked``: one card per row, best first) or ``cost`` (every offer) for a diffusion pipeline,
    an encoder-decoder or an encoder: the cards the job fits, their speed and price."""
    if fmt == "json":
        print_json(choices)
        return
    if fmt == "table":
        bullet(choices.resolved, prefix="", style="bold")
    for warning in choices.warnings:  # first, as estimate's and the LLM searches' are
        bullet(warning, prefix="warning: ", style="bold yellow", stream=err)
    for note in [*choices.defaults, *choices.notes]:
        bullet(note, prefix="note: ", style="yellow", stream=err)
    rows = choices.setups
    if not rows and choices.fitting:  # fits, but untimed (the note says why): not "no card fits" (s22 walk)
        out.print(f"no card to rank: the job fits {choices.fitting} of the {choices.evaluated} cards planned, but "
                  "none of them has the speed a price needs (the note above says why)")
        return
    if not rows:
        tried = " (with gradient checkpointing and 8-bit AdamW tried)" if choices.task == "train" else ""
        out.print(f"no card among the offers in force fits this job ({choices.evaluated} planned{tried}): `gpuplan "
                  "estimate --gpu NAME` lists the changes that would make it fit (LoRA or QLoRA, NF4 or fp8 weights, "
                  "CPU offload, block swapping)")
        return
    unit = rows[0].unit
    job = any(r.usd_total is not None for r in rows)
    train = choices.task == "train"
    changed = any(r.techniques for r in rows)  # recommend's changes where the job as given fits no card: as the
    data = [{**r.model_dump(), "rank": i, "cell": r.offer.replace("_", "-"),  # decoder LLM's setup cells say them
             "gpu": " ".join([short(r.gpu_id), "+".join(TECHNIQUE_CELLS.get(w, w) for w in r.techniques)]).strip(),
             "time": r.step_s if train else r.call_s, "memory": f"{r.device_peak_gib:,.1f} / {r.capacity_gib:,.1f}"}
            for i, r in enumerate(rows, 1)]
    # on a narrow terminal the columns of what the rows are ranked by stay (the job's hours and price, else the
    # price per 1,000; the step's time when ranked by time); $/h and the rates drop first (s30-beyond's walk: at 80
    # columns a FLUX LoRA's "cost first" table showed $/h, s/step and images/s and dropped the job's $)
    timed = ranked and choices.objective == "time"
    columns = [*([Column("rank", "#", align="right", priority=0)] if ranked else []),
               Column("gpu", "setup" if changed else "GPU", priority=0), Column("cell", "offer", priority=1),
               Column("usd_per_hour", "$/h", fmt=num("{:,.2f}"), align="right", priority=2),
               Column("time", "s/step" if train else "s/call", fmt=num("{:,.3g}"), align="right",
                      priority=1 if timed else 2),
               Column("samples_per_s", f"{unit}/s", fmt=num("{:,.3g}"), align="right", priority=2),
               *([Column("hours", "hours", fmt=num("{:,.2f}"), align="right"),
                  Column("usd_total", "job $", fmt=usd, align="right")] if job else []),
               Column("usd_per_1000", f"$/1k {unit}", fmt=usd, align="right", priority=2 if job else 1),
               Column("memory", "GiB used / usable", align="right", priority=3)]
    what = "cards, each on its cheapest offer" if ranked else "offers"
    show(data, columns, fmt, title=f"{len(rows)} {what} the job fits ({choices.fitting} of {choices.evaluated} cards "
         f"planned fit), {choices.objective if ranked else 'cost'} first", json_data=choices.to_dict())
