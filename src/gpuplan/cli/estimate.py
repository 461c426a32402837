"""``gpuplan estimate``: does it fit, and where does the memory go."""

from __future__ import annotations

from typing import Any

from rich.table import Table
from rich.text import Text

from .. import api
from ..errors import GpuplanError
from ..result import batch_words, hours_words, usd_amount
from .app import OWN_MODULE, module_of, option, overrides, print_json, scenario_command, short
from .render import bullet, err, out, spot_bullet

EXIT_DOES_NOT_FIT = 3


def estimate_cmd(scenario: str | None = None, as_json: bool = False, check: bool = False, **fields: Any) -> int:
    """Does it fit, and where does the memory go?

    Per GPU: weights, gradients, optimizer states, activations, KV cache and named extras; three peak levels
    (allocated = torch max_memory_allocated, reserved = + caching allocator slack, device = + CUDA context and
    NCCL, what nvidia-smi shows); the peak phase; and, on a named GPU, fit, headroom, the largest batch and context
    that fit, what to change when it does not fit (the smallest combination when no single change is enough), and
    speed and cost when it does. The first line says what was assumed.

    With --check the exit code says whether it fits: 0 fits, 3 does not fit, 2 bad input.

    Examples:

    \b
      gpuplan estimate --model llama-3.1-8b --task train --method qlora --gpu rtx-4090
      gpuplan estimate examples/lora-llama-8b.yaml --micro-batch-size 8 --json
      gpuplan estimate --model qwen2.5-7b --task infer --gpu l40s --check && echo fits
    """
    target = module_of(fields)
    result = api.estimate(api.load_scenario(scenario, overrides(fields)), module=target)
    if check and result.memory.fits is None:
        raise GpuplanError("--check needs a GPU to check against: add --gpu (e.g. --gpu rtx-4090)")
    if as_json:
        print_json(result)
    else:
        render_estimate(result)
    return EXIT_DOES_NOT_FIT if check and not result.memory.fits else 0


def render_estimate(result) -> None:
    mem = result.memory
    s = result.scenario
    bullet(result.resolved, prefix="", style="bold")
    if not result.model.exact:  # first, before the numbers it puts in doubt
        bullet(result.warnings[0], prefix="warning: ", style="bold yellow", stream=err)
    for note in result.defaults:
        bullet(note, prefix="note: ", style="yellow")
    table = Table(title="memory per GPU" + (f" on {result.gpu.name}" if result.gpu else ""), title_justify="left")
    for col, justify in (("part", "left"), ("GiB", "right"), ("share", "right")):
        table.add_column(col, justify=justify)
    parts = [("weights", mem.weights_gib), ("gradients", mem.gradients_gib), ("optimizer states", mem.optimizer_gib),
             ("activations", mem.activations_gib), ("KV cache", mem.kv_cache_gib),
             *((f"other: {k}", v) for k, v in mem.other.items())]
    total = mem.allocated_peak_gib or 1.0
    for name, gib in parts:
        if gib > 0.0005:
            table.add_row(Text(name), f"{gib:.2f}", f"{100 * gib / total:.1f}%")
    table.add_section()
    table.add_row(Text(f"allocated peak ({mem.peak_phase})", style="bold"), Text(f"{mem.allocated_peak_gib:.2f}",
                                                                                style="bold"), "")
    table.add_row("reserved peak (+ allocator slack)", f"{mem.reserved_peak_gib:.2f}", "")
    overheads = ", ".join(mem.device_overheads) or "nothing outside the allocator"
    table.add_row(Text(f"device peak (+ {overheads})"), f"{mem.device_peak_gib:.2f}", "")
    out.print(table)
    if mem.logged_statistic:
        bullet(f"its own log: {mem.logged_statistic}; compare with {mem.logged_gib:.2f} GiB", prefix="", style="dim")
    if mem.cpu_gib:
        out.print(f"CPU memory for offloaded states: {mem.cpu_gib:.{2 if mem.cpu_gib < 1 else 1}f} GiB")
    v = result.verdict  # the plan's own sentence, as the page and the API state it
    style = "green" if v.fits else "red bold" if v.fits is False else ""
    out.print(Text(v.word, style=style) + Text(v.sentence[len(v.word):]), soft_wrap=True)
    for line in v.details:
        bullet(line, prefix="  ")
    if mem.fits is not None and result.model.family != "module":  # your module's batch is its example input's
        batch = "micro-batch" if s["task"] == "train" else "batch"
        length = "sequence" if s["task"] == "train" else "prompt"
        longest = f"; longest {length}: {f'{mem.max_seq_len:,} tokens' if mem.max_seq_len else 'none'}"
        if hasattr(result, "work"):  # images and audio windows have no longest sequence, timed or not (s22 walk)
            longest = ""
        out.print(f"largest {batch} that fits: {batch_words(mem.max_batch_size, mem.max_batch_size_capped)}{longest}")
    if result.suggestions:
        out.print(Text("changes that would make it fit", style="bold") + Text(" (or save the most):"))
        for sug in result.suggestions[:10]:
            mark = "fits" if sug.fits else "still too big"
            prefix = "  * " if sug.combination else "  - "
            bullet(f"{'together: ' if sug.combination else ''}{sug.change} ({mark}; {sug.cost})", prefix=prefix)
    if getattr(result, "work", None) is not None:  # a diffusion pipeline, an encoder-decoder, an encoder
        from .modules import render_work

        render_work(result)
    else:
        _speed(result, s)
        if result.load is not None:
            render_load(result.load, s)
        _cost(result, s)
    if result.dataset or result.recipe:
        from .data import render_data

        render_data(result)
    for line in result.assumptions:
        bullet(line, prefix="assumed: ", style="dim")
    for line in result.warnings[0 if result.model.exact else 1:]:
        bullet(line, prefix="warning: ", style="yellow", stream=err)


def _rate(x: float) -> str:
    """Tokens/s as people read them: whole from 10 up, two significant digits below ("0.06", "2.4"). Before, a
    model run from system RAM read "0 output tokens/s in all (likely 0-0)" (session 8's walk)."""
    return f"{x:,.0f}" if x >= 10 else f"{x:.2g}"



def _tpot(s: dict, sp, streaming: float) -> str:
    """The decode step and the time per output token it gives: the same without speculative decoding; with it, a
    step yields the acceptance length's tokens (the plan's scenario says how many)."""
    if not s.get("speculative_method") or s["speculative_method"] == "none":
        return f"decode step, TPOT {1e3 * sp.step_time_s:,.1f} ms"
    return (f"decode step {1e3 * sp.step_time_s:,.1f} ms yielding {s['acceptance_length']:g} tokens a sequence, TPOT "
            f"{1e3 / streaming:,.1f} ms")

def _speed(result, s: dict) -> None:
    sp = result.speed
    if not sp:
        return
    head = "speed" if result.memory.fits is not False else "speed, were it to fit"
    low, high = sp.tokens_per_s_low, sp.tokens_per_s_high
    likely = f" (likely {_rate(low)}-{_rate(high)})" if low is not None and high is not None else ""
    if s["task"] == "train":
        mfu = sp.mfu
        line = (f"{head}: {_rate(sp.tokens_per_s)} tokens/s{likely}, {sp.step_time_s:,.2f} s per optimizer step "
                f"({sp.bound}-bound" + (f", MFU {mfu:.2f}" if mfu else "") + ")")
        bullet(line, prefix="")
        if sp.band:
            bullet(f"range: {sp.band}", prefix="  ", style="yellow")
    else:
        per_user, rate = sp.tokens_per_s_per_sequence, sp.requests_per_s
        streaming = sp.streaming_tokens_per_s_per_user
        run = result.load
        if run is not None and run.served[0]:  # the headline is what the run at the load served
            out, rps = run.served
            steady = " after its warm-up and before its drain, as capacity judges" \
                if run.steady_output_throughput else ""
            bullet(f"{head}: {_rate(out)} output tokens/s served at {run.load_words}, "
                   f"{rps:,.3g} requests/s (the simulated run below{steady}"
                   + ("; the cost is priced on it)" if result.cost else ")"), prefix="")
            n = sp.batch_held or s["batch_size"]
            head = (f"  decode step at {n:,} request{'s' if n != 1 else ''} at once"
                    + (f" (all the KV pool holds of the {s['batch_size']:,} users)" if sp.batch_held else ""))
        line = (f"{head}: {_rate(sp.tokens_per_s)} output tokens/s in all{likely}"
                + (f", {rate:,.3g} requests/s" if rate else "")
                + (f"; each user streams {_rate(streaming)} tokens/s ({_tpot(s, sp, streaming)}, {sp.bound}-bound)"
                   if streaming else
                   f"; decode step {1e3 * sp.step_time_s:,.1f} ms ({sp.bound}-bound)")
                + (f", {per_user:,.1f} tokens/s averaged over a whole request with the other users' prompts "
                   "prefilled in between" if per_user and s["batch_size"] > 1 else ""))
        bullet(line, prefix="")
        if sp.band:
            bullet(f"range: {sp.band}", prefix="  ", style="yellow" if sp.band.startswith("uncalibrated") else "dim")
        if result.offline is not None:
            render_offline(result.offline, s)
        if sp.offline_tokens_per_s:
            gpus = s["num_gpus"] * s.get("num_nodes", 1)
            bullet(f"{sp.offline_basis}: {sp.offline_tokens_per_s:,.0f} output tokens/s on all {gpus} GPU(s)",
                   prefix="  ")
        if sp.ttft_s is not None:
            burst = sp.ttft_burst_s
            warm = " (the shared prefix cached, if the engine caches it)" if s.get("shared_prefix_tokens") else ""
            server = sp.request_overhead_s or 0.0
            bullet(f"time to first token: {sp.ttft_s:,.2f} s for one request alone{warm}"
                   + (f", {burst:,.2f} s for the last of {sp.batch_held or s['batch_size']} arriving together"
                      if burst is not None and (sp.batch_held or s["batch_size"]) > 1 else "")
                   + (f" (each with {1e3 * server:.1f} ms outside the engine's steps)" if server else ""),
                   prefix="  ")
    shares = sp.step_shares()
    if shares:
        bullet(("step" if s["task"] == "train" else "decode step") + ": " + ", ".join(
            f"{k.replace('_', ' ')} {pct}%" for k, pct in shares), prefix="  ", style="dim")


def render_load(run, s: dict) -> None:
    """The simulated benchmark run at the scenario's users or rate, as ``vllm bench serve`` prints its result:
    throughput, then mean, median, p90 and p99 of TTFT, TPOT, ITL and E2EL in ms."""
    engine = api.engine_profile(run.engine).label
    bullet(f"serving {run.load_said}: {engine}'s scheduler simulated over {run.num_prompts:,} "
           f"request{'s' if run.num_prompts != 1 else ''}, {run.lengths}",
           prefix="", style="bold")
    whole = ", the whole run as vllm bench serve counts it" if run.steady_output_throughput else ""
    bullet(f"request throughput {run.request_throughput:,.2f} req/s, output token throughput "
           f"{run.output_throughput:,.0f} tok/s, total token throughput {run.total_token_throughput:,.0f} tok/s "
           f"over {run.duration:,.1f} s{whole}; at most {run.peak_running:,} "
           f"request{'s' if run.peak_running != 1 else ''} running at once (cap "
           f"{run.running_cap:,}), {run.preemptions:,} preempted", prefix="  ")
    table = Table(title_justify="left", box=None, padding=(0, 2))
    for col in ("ms", "mean", "median", "p90", "p99"):
        table.add_column(col, justify="left" if col == "ms" else "right")
    for metric, label in (("ttft", "TTFT"), ("tpot", "TPOT"), ("itl", "ITL"), ("e2el", "E2EL")):
        cells = run.latency(metric)
        table.add_row(label, *("" if v is None else f"{v:,.1f}" for v in cells.values()))
    out.print(table)
    start = ("; every user sends its first request at once, as benchmark clients do, and that first wave is in "
             "the p99" if run.mode == "closed loop" else "")
    bullet(f"TTFT and E2EL include {1e3 * run.per_request_s:.1f} ms per request outside the engine's steps (HTTP, "
           "tokenizing, the first streamed chunk); TPOT is each request's mean gap, ITL every token's gap pooled"
           + start, prefix="  ", style="dim")
    for line in run.warnings:
        bullet(line, prefix="warning: ", style="yellow", stream=err)


def render_offline(run, s: dict) -> None:
    """The batch queued at once through the engine's scheduler: its throughput, and how many ran together."""
    profile = api.engine_profile(run.engine)
    engine = profile.label
    n, peak = run.num_prompts, run.peak_running
    if peak >= n:
        together = f"all {n:,} ran together"
    else:
        limit = (f"{engine} runs at most {run.running_cap:,} ({profile.running_cap})" if peak >= run.running_cap else
                 "the KV pool holds no more")
        together = f"at most {peak:,} of the {n:,} ran together ({limit}): the others waited for them to finish"
    preempted = f", {run.preempted_words}" if run.preempted_words else ""
    bullet(f"offline under the plan's settings (all {n:,} requests queued at once; {engine}'s scheduler simulated): "
           f"{run.output_throughput:,.0f} output tokens/s, {run.duration:,.1f} s in all; {together}{preempted}",
           prefix="  ")
    for line in run.warnings:
        bullet(line, prefix="warning: ", style="yellow", stream=err)


def _cost(result, s: dict) -> None:
    c = result.cost
    if result.memory.fits is False:
        above = "apply a change above, or " if result.suggestions else ""  # none: no change fits this card
        bullet(f"not priced: the job does not fit on this GPU ({above}ask `gpuplan recommend`)", prefix="",
               style="yellow")
        return
    if not c:
        return
    owned = c.pricing == "owned"
    label = c.label or f"{c.offer} at ${c.usd_per_hour:,.2f}/h"
    line = f"cost: {label}" if owned else f"cost: {short(c.gpu_id)} on {label}"
    if c.stale:
        line += f" (price {c.price_age_days} days old)"
    tokens = "output" if s["task"] == "infer" else "training"
    if c.usd_per_million_tokens is not None:
        line += f": ${c.usd_per_million_tokens:,.2f} per million {tokens} tokens"
    if s["task"] == "train" and c.hours:
        total = f"{c.usd_total:,.2f}" if c.usd_total >= 0.01 else usd_amount(c.usd_total)  # not $0.00
        line += f"; {hours_words(c.hours)}, ${total} in all"
    bullet(line, prefix="")
    if c.job and c.hours:
        j, rate = c.job, c.usd_total / c.hours
        bullet(f"job: training {j.train_h:,.1f} h (${j.train_h * rate:,.0f}) over {j.steps:,} steps"
               + (f" + evaluation {j.eval_h:,.2f} h (${j.eval_h * rate:,.0f}: {j.evaluations:,} passes of "
                  f"{j.eval_tokens:,.3g} tokens)" if j.evaluations else "")
               + (f" + checkpoint saves {j.checkpoint_h:,.2f} h (${j.checkpoint_h * rate:,.0f}: {j.saves:,} "
                  "saves)" if j.saves else ""), prefix="  ")
    if c.spot:
        spot_bullet(c, bool(s.get("save_interval")))
    if s["task"] == "train" and not c.hours:
        bullet("set --train-tokens for hours and the total", prefix="  ", style="dim")
    if not owned:
        bullet(f"price from {c.price_origin}; `gpuplan cost` compares every offer and shows the whole bill",
               prefix="  ", style="dim")


scenario_command("estimate", estimate_cmd,
                 option("check", bool, False, "Exit with code 3 when the job does not fit on the GPU (0 when it "
                        "fits, 2 for bad input): for scripts."), OWN_MODULE)
