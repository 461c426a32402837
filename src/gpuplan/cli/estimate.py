"""``gpuplan estimate``: does it fit, and where does the memory go."""

from __future__ import annotations

from rich.table import Table

from ..scenario import load_scenario
from .app import err, out, overrides, print_json, scenario_command


def estimate_cmd(scenario: str | None = None, as_json: bool = False, **fields: str | None) -> None:
    """Does it fit, and where does the memory go? Per GPU: weights, gradients, optimizer states, activations,
    KV cache and named extras; three peak levels (allocated = torch max_memory_allocated, reserved = + caching
    allocator slack, device = + CUDA context and NCCL, what nvidia-smi shows); the peak phase; and, on a named
    GPU, fit, headroom, the largest batch and context that fit, and what to change when it does not fit.

    Examples:
      gpuplan estimate --model llama-3.1-8b --task train --method qlora --gpu rtx-4090
      gpuplan estimate job.yaml --micro-batch-size 8 --json
    """
    from ..estimate import estimate

    result = estimate(load_scenario(scenario, overrides(fields)))
    if as_json:
        print_json(result.model_dump())
        return
    render_estimate(result)


def render_estimate(result) -> None:
    mem = result.memory
    s = result.scenario
    if not result.model.exact:  # first, before the numbers it puts in doubt
        err.print(f"[bold yellow]warning:[/] {result.warnings[0]}")
    what = (f"{s['task']} {result.model.name}" + (f" ({s['method']})" if s["task"] == "train" else "")
            + (f" on {result.gpu['name']}" if result.gpu else ""))
    table = Table(title=f"memory per GPU: {what}", title_justify="left")
    for col, justify in (("part", "left"), ("GiB", "right"), ("share", "right")):
        table.add_column(col, justify=justify)
    parts = [("weights", mem.weights_gib), ("gradients", mem.gradients_gib), ("optimizer states", mem.optimizer_gib),
             ("activations", mem.activations_gib), ("KV cache", mem.kv_cache_gib),
             *((f"other: {k}", v) for k, v in mem.other.items())]
    total = mem.allocated_peak_gib or 1.0
    for name, gib in parts:
        if gib > 0.0005:
            table.add_row(name, f"{gib:.2f}", f"{100 * gib / total:.1f}%")
    table.add_section()
    table.add_row(f"[bold]allocated peak[/] ({mem.peak_phase})", f"[bold]{mem.allocated_peak_gib:.2f}[/]", "")
    table.add_row("reserved peak (+ allocator slack)", f"{mem.reserved_peak_gib:.2f}", "")
    table.add_row("device peak (+ " + ", ".join(mem.device_overheads) + ")", f"{mem.device_peak_gib:.2f}", "")
    out.print(table)
    if mem.cpu_gib:
        out.print(f"CPU memory for offloaded states: {mem.cpu_gib:.1f} GiB")
    if mem.max_concurrency is not None:
        out.print(f"vLLM KV pool {mem.kv_cache_pool_gib:.1f} GiB: up to {mem.max_concurrency} concurrent requests "
                  f"of {s['prompt_tokens'] + s['output_tokens']:,} tokens, or {mem.max_context_tokens:,} tokens total")
    if mem.gpu_layers is not None:
        out.print(f"llama.cpp: {mem.gpu_layers} of {result.model.num_layers} layers on the GPU"
                  + (f", {mem.offloaded_layers} offloaded to the CPU" if mem.offloaded_layers else ""))
    if mem.fits is not None:
        verdict = "[green]fits[/]" if mem.fits else "[red]does not fit[/]"
        out.print(f"{verdict} on {result.gpu['name']}: {mem.device_peak_gib:.1f} of {mem.capacity_gib:.1f} GiB "
                  f"usable, headroom {mem.headroom_gib:+.1f} GiB")
        batch = "micro_batch_size" if s["task"] == "train" else "batch_size"
        length = "seq_len" if s["task"] == "train" else "prompt_tokens"
        out.print(f"largest {batch} that fits: {mem.max_batch_size or 'none'}; longest {length}: "
                  f"{mem.max_seq_len if mem.max_seq_len else 'none'}")
    if result.suggestions:
        out.print("[bold]changes that would make it fit[/] (or save the most):")
        for sug in result.suggestions[:10]:
            mark = "[green]fits[/]" if sug.fits else "[yellow]still too big[/]"
            out.print(f"  - {sug.change} ({mark}; {sug.cost})")
    if result.speed:
        sp = result.speed
        if s["task"] == "train":
            out.print(f"[bold]speed[/]: {sp['tokens_per_s']:,.0f} tokens/s, {sp['step_time_s']:.2f} s per optimizer "
                      f"step (MFU {sp['mfu_assumed']:.2f}, {sp['bound']}-bound)")
        else:
            out.print(f"[bold]speed[/]: {sp['tokens_per_s']:,.0f} output tokens/s in aggregate, "
                      f"{sp['tokens_per_s_per_sequence']:,.1f} per sequence, time to first token "
                      f"{sp['ttft_s']:.2f} s ({sp['bound']}-bound decode)")
    if result.cost:
        c = result.cost
        stale = f" [yellow](price {c['price_age_days']} days old)[/]" if c["stale"] else ""
        line = f"[bold]cost[/]: {c['offer']} {c['gpu_id']} at ${c['usd_per_hour']:.2f}/h{stale}"
        if c["usd_per_million_tokens"] is not None:
            line += f": ${c['usd_per_million_tokens']:.2f} per million output tokens"
        elif c["hours"]:
            line += f": {c['hours']:.1f} h, ${c['usd_total']:,.0f}"
        out.print(line)
        if c["spot"]:
            sp = c["spot"]
            out.print(f"  spot: checkpoint every {sp['interval_h'] * 60:.0f} min (Daly), interruptions every "
                      f"{sp['mtbi_h']:.1f} h on average: wall time x{sp['overhead']:.2f}"
                      + (f", {c['spot_multiplier']:.2f}x the on-demand cost" if c["spot_multiplier"] else ""))
        out.print(f"  [dim]price from {c['price_origin']}; `gpuplan cost` compares every offer[/]")
    for line in result.assumptions:
        out.print(f"[dim]assumed: {line}[/]")
    for line in result.warnings[0 if result.model.exact else 1:]:
        err.print(f"[yellow]warning:[/] {line}")


scenario_command("estimate", estimate_cmd)


