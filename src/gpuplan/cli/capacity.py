"""``gpuplan capacity``: which GPUs, how many, and at what cost for a request stream under latency targets."""

from __future__ import annotations

from typing import Annotated

import typer
from rich.table import Table
from rich.text import Text

from ..errors import GpuplanError
from .app import BoolText, JsonFlag, app, boolean, out, print_json, quant_help
from .render import Column, FormatOption, bullet, err, num, resolve_format, show, usd

# the weights' format on every setup: estimate's --quant (the scenario field), one format for the whole search
Quant = Annotated[str | None, typer.Option(help=quant_help() + " (every setup)", show_default=False)]
# an MoE model's layout on each setup (issue 31): the options' types, kept out of the command's long signature
ExpertParallel = Annotated[bool, typer.Option(
    help="MoE models: the experts spread over each setup's GPUs (ep = tp: SGLang --ep-size, vLLM "
    "--enable-expert-parallel).")]
AttentionDp = Annotated[bool, typer.Option(
    help="MoE models: attention data parallel over each setup's GPUs (SGLang --enable-dp-attention, vLLM "
    "--data-parallel-size).")]
# the engine's chunked-prefill switch (the scenario field chunked_prefill), true or false
ChunkedPrefill = Annotated[BoolText | None, typer.Option(  # type: ignore[valid-type]
    "--chunked-prefill", parser=boolean, metavar="BOOL", show_default=False,
    help="Split long prompts over steps (vLLM --enable-chunked-prefill; false: whole prompts a step and a "
    "profiling run of max_model_len tokens; SGLang --chunked-prefill-size -1) [default: the engine's own by "
    "release].")]
# vLLM's async-scheduling switch (the scenario field async_scheduling), true or false
AsyncScheduling = Annotated[BoolText | None, typer.Option(  # type: ignore[valid-type]
    "--async-scheduling", parser=boolean, metavar="BOOL", show_default=False,
    help="vLLM --async-scheduling: schedule the next step while the GPU runs this one, so the host's work per step "
    "hides behind the GPU's (false: --no-async-scheduling) [default: the release's own: on from 0.14].")]


# the workload's lengths and targets: the presets' mean tokens (serving/workload.py PRESETS, as the plans clip them;
# tests/cli/test_cli.py holds them), an SLO flag in seconds, the GPUs searched and the KV cache's storage
Preset = Annotated[str | None, typer.Option(
    help="Lengths, mean prompt/output tokens: chat 230/203 (ShareGPT's long tail, at most 1,024 each), summarize "
    "2048/128, generate 128/2048, balanced 1000/1000, rag 4000/300, code 1500/400.")]
Gpus = Annotated[str | None, typer.Option(help="Only these GPUs, comma-separated [default: every card of the "
                                          "catalog the engine runs on: NVIDIA's; AMD Instinct and Gaudi for vllm "
                                          "and sglang].")]
KvCacheDtype = Annotated[str | None, typer.Option(help="KV cache storage: auto | fp8 | fp16 | bf16 | int8 "
                                                  "[default: auto].")]
Ttft, Tpot, E2e = (Annotated[float | None, typer.Option(help=f"SLO: {what}, seconds (unset: no limit).")]
                   for what in ("time to first token", "time per output token", "end-to-end latency"))
LengthSpread = Annotated[float | None, typer.Option(help="Each request's prompt and output lengths drawn uniformly "
                                                   "within (1 +- spread) x the means (vllm bench serve "
                                                   "--random-range-ratio); 0: fixed lengths, which keep a closed "
                                                   "loop in lockstep [default 0.5].")]
Pricing = Annotated[str, typer.Option(help="on-demand, or spot: interruptible offers, each fleet sized for the "
                                      "interruptions (the target / one replica's rate / availability).")]
MtbiHours = Annotated[float | None, typer.Option(help="Spot: mean hours between interruptions [default: the AWS "
                                                 "spot traces' 2 under 8 GPUs, 1 from 8].")]
EngineVersion = Annotated[str | None, typer.Option(help="Engine release whose rules apply [default: current].")]
Plot = Annotated[str | None, typer.Option(help="Write the latency-vs-rate curves to this PNG (matplotlib).")]
DiskGbs = Annotated[float | None, typer.Option(help="Spot: GB/s a restarted replica reads its weights at "
                                               "[default: 1].")]


RATE_HELP = ("Expected arrival rate, requests/s (open loop; unset with no --users or --batch: each setup's most "
             "within the SLOs).")
TOP_HELP = ("Setups simulated (the cheapest by the closed-form bound; one whose bound undercuts the cheapest row "
            "found is simulated too).")

@app.command("capacity")
def capacity_cmd(
    workload: Annotated[str | None, typer.Argument(help="Workload YAML (rate_rps, preset or prompt/output, slo...); "
                                                   "flags override it.", show_default=False)] = None,
    model: Annotated[str | None, typer.Option(help="Catalog alias, HF repo id or config.json path.")] = None,
    rate: Annotated[float | None, typer.Option("--rate", help=RATE_HELP)] = None,
    users: Annotated[int | None, typer.Option("--users", help="Concurrent users instead of a rate (closed loop: "
                                              "each sends its next request after the last one finished).")] = None,
    batch: Annotated[int | None, typer.Option("--batch", help="An offline job instead: this many requests queued "
                                              "at once; each setup's time and cost to run them all.")] = None,
    think_time: Annotated[float | None, typer.Option("--think-time", help="Closed loop: mean seconds a user waits "
                                                     "between a reply and the next request [default 0].")] = None,
    preset: Preset = None,
    prompt_tokens: Annotated[int | None, typer.Option(help="Mean prompt length, tokens (with --output-tokens, "
                                                      "instead of --preset).")] = None,
    output_tokens: Annotated[int | None, typer.Option(help="Mean output length, tokens.")] = None,
    length_spread: LengthSpread = None,
    trace: Annotated[str | None, typer.Option(help="Trace: vllm bench serve result, JSON lines, ShareGPT.")] = None,
    ttft: Ttft = None, tpot: Tpot = None, e2e: E2e = None,
    percentile: Annotated[int | None, typer.Option(help="SLO percentile: 50, 90, 95 or 99 [default 95].")] = None,
    burstiness: Annotated[float | None, typer.Option(help="Gamma shape of arrivals (1 Poisson, <1 bursty) "
                                                     "[default 1].")] = None,
    shared_prefix: Annotated[int | None, typer.Option(  # estimate's name too (s25 walk: one field, two names)
        "--shared-prefix-tokens", "--shared-prefix", help="Tokens every prompt shares (prefix cache) [default 0].")
                             ] = None,
    gpus: Gpus = None,
    max_gpus: Annotated[int, typer.Option(help="Largest tensor-parallel group.")] = 8, quant: Quant = None,
    any_quant: Annotated[bool, typer.Option(help="Also try fp8 weights (where supported) and AWQ int4.")] = False,
    expert_parallel: ExpertParallel = False, attention_dp: AttentionDp = False,
    engine: Annotated[str, typer.Option(help="vllm, sglang or trtllm (its pool, scheduler and host loop).")] = "vllm",
    engine_version: EngineVersion = None,
    kv_cache_dtype: KvCacheDtype = None,
    chunked_prefill: ChunkedPrefill = None, async_scheduling: AsyncScheduling = None,
    calibration: Annotated[str | None, typer.Option(help="Corrections from `gpuplan calibrate-serving`.")] = None,
    top: Annotated[int, typer.Option(help=TOP_HELP)] = 6,
    pricing: Pricing = "on-demand", mtbi_hours: MtbiHours = None, disk_gbs: DiskGbs = None,
    plot: Plot = None,
    fmt: FormatOption = None,
    as_json: JsonFlag = False,
) -> None:
    """How many GPUs for my traffic, and at what cost? For every GPU type x count x tensor parallelism (x fp8/AWQ
    weights with --any-quant) that holds the model in the engine (vLLM, SGLang or TensorRT-LLM): the highest steady
    request rate (or, with --users, the most concurrent users) within the SLOs (bisection on a simulation of the
    engine's scheduler, judged after warm-up), the cheapest instance that holds a tensor-parallel group whole, $ per
    million input and output tokens at that load, what the target costs in whole instances, and the Pareto front
    of cost vs time to first token. Rates carry the band of the serving accuracy table. With --batch, an offline
    job: how long each setup takes (the engine's cap and KV pool decide how many run at once) and its cost.
    With --pricing spot, interruptible offers: each replica is down for its restart (weights read + CUDA graph
    capture) after each interruption, so the fleet runs ceil(the target / one replica's rate / availability).

    Examples:

    \b
      gpuplan capacity --model llama-3.1-8b --rate 5 --prompt-tokens 2000 --output-tokens 300 --ttft 1 --tpot 0.05
      gpuplan capacity examples/chat-workload.yaml --model qwen2.5-72b --any-quant --json
      gpuplan capacity --model gpt-oss-120b --users 20 --prompt-tokens 8192 --output-tokens 512 --gpus h100
      gpuplan capacity --model llama-3.1-8b --batch 5000 --prompt-tokens 1000 --output-tokens 200
      gpuplan capacity --model llama-3.1-8b --rate 20 --preset chat --ttft 1 --tpot 0.05 --pricing spot --mtbi-hours 2
    """
    from .. import api

    fmt = resolve_format(fmt, as_json)  # two formats asked for: refused before the search
    if plot:
        _plot_first(plot, batch)
    report = api.capacity(model, workload, engine=engine, gpus=gpus or (), max_gpus=max_gpus, top=top,
                          any_quant=any_quant, engine_version=engine_version, kv_cache_dtype=kv_cache_dtype,
                          chunked_prefill=chunked_prefill, async_scheduling=async_scheduling, calibration=calibration,
                          expert_parallel=expert_parallel, attention_dp=attention_dp, quant=quant,
                          pricing=pricing, mtbi_hours=mtbi_hours, disk_gbs=disk_gbs, **dict(
                              rate_rps=rate, users=users, batch=batch, think_time_s=think_time, preset=preset,
                              prompt_tokens=prompt_tokens, output_tokens=output_tokens, length_spread=length_spread,
                              trace=trace, ttft_s=ttft, tpot_s=tpot, e2e_s=e2e, percentile=percentile,
                              burstiness=burstiness, shared_prefix_tokens=shared_prefix))
    plans, w = report.deployments, report.workload
    if plot:
        from .plots import plot_curves

        plot_curves(plans, w, plot)
    render(plans, w, fmt, report.notes)


def _plot_first(plot: str, batch: int | None) -> None:
    """Check the plot's target before the simulation, not after it; an offline job has no rate to draw."""
    if batch:
        raise GpuplanError("--plot draws latency against the request rate; an offline job (--batch) has no rate "
                           "to draw: leave one of them out")
    from .plots import plot_target

    plot_target(plot)


def render(plans, w, fmt: str = "table", notes: list[str] | None = None) -> None:
    """The rows of a capacity search, with ``notes`` (each GPU asked for that has no row, and why)."""
    from .. import api

    slo = w.slo
    targets = ", ".join(f"{k} <= {v:g} s" for k, v in (("TTFT", slo.ttft_s), ("TPOT", slo.tpot_s), ("E2E", slo.e2e_s))
                        if v) or "none"
    lengths = ("lengths from the trace: " if w.trace else "") + api.lengths_words(w.prompt_lengths(),
                                                                                 w.output_lengths())
    head = f"workload: {lengths}, {_load_said(w)}; SLO p{slo.percentile}: {targets}"
    if w.batch:  # estimate --batch-size's offline run: every request at the mean lengths, as vllm bench throughput
        head = (f"workload: an offline job of {w.batch:,} requests queued at once, each {w.mean_prompt_tokens:,.0f} "
                f"prompt + {w.mean_output_tokens:,.0f} output tokens (the means, fixed)")
    rows = api.shown(plans)
    if fmt == "json":  # each plan's warnings ride in its row
        show(rows, [], "json", json_data={"workload": w.model_dump(mode="json"), "plans": rows,
                                          "notes": list(notes or [])})
        return
    for p in plans:  # first, on stderr, before the numbers they put in doubt (as estimate's)
        for warning in p.warnings:
            bullet(warning, prefix="warning: ", style="bold yellow", stream=err)
    for note in notes or []:
        bullet(note, prefix="note: ", style="yellow", stream=err)
    if not plans:
        bullet(head, prefix="")
        out.print(Text("no setup meets the SLOs", style="red")
                  + Text(": relax them, allow more GPUs (--max-gpus) or quantization (--any-quant)"))
        return
    if w.batch:
        _render_job(rows, head, fmt, plans[0].engine)
        return
    target = bool(w.users or w.rate_rps)
    load_col = Column("max_users", "users", num(), "right", 0) if w.users else \
        Column("max_rate_rps", "req/s", num("{:,.2f}"), "right", 0)
    cols = [Column("setup", "setup", priority=0, style=lambda r: "green" if r.get("pareto") else None),
            load_col,
            Column("ttft_s", f"p{slo.percentile} TTFT", _s, "right", 1),
            Column("tpot_s", f"p{slo.percentile} TPOT", _tpot, "right", 2),
            Column("streaming_tokens_per_s_per_user", "tok/s/user", num(), "right", 1),
            Column("usd_per_1k_requests", "$/1k req", usd, "right", 1),
            Column("usd_per_hour_for_target" if target else "usd_per_hour", "$/h all" if target else "$/h", usd,
                   "right", 1),
            *([Column("usd_per_month_for_target", "$/month", num(), "right", 1)] if target else []),
            Column("instances_for_target", "inst", num(), "right", 2),
            Column("offer", "offer", priority=2),
            Column("max_rate_rps" if w.users else "output_tokens_per_s", "req/s" if w.users else "out tok/s",
                   num("{:,.2f}" if w.users else "{:,.0f}"), "right", 3),
            Column("usd_per_million_output", "$/M out", usd, "right", 3),
            Column("usd_per_million_input", "$/M in", usd, "right", 4),
            Column("ttft_alone_s", "TTFT alone", _s, "right", 4),
            Column("max_concurrency", "KV reqs", num(), "right", 4),
            Column("kv_tokens", "KV tokens", num(), "right", 4)]
    note = ("Green: the Pareto front of cost vs TTFT. tok/s/user: streaming speed, 1 / decode step at that load "
            f"(p{slo.percentile} TPOT adds the stalls of other requests' prompts). KV reqs, KV tokens: requests of "
            "the mean length the KV pool holds, and their tokens"
            + (" (the shared prefix held once; TTFT alone after it, cached). " if w.shared_prefix_tokens else ". ")
            + ("users: most concurrent users one replica serves within the SLOs (up to the target); " if w.users else
               "req/s: highest steady rate one replica serves within the SLOs; ")
            + ("$/h all, $/month (730 h), inst: what the target costs in whole instances. " if target else "")
            + api.engine_profile(plans[0].engine).scheduler_words
            + " on the roofline step model, judged after warm-up; a tensor-parallel group is priced on one "
            "instance that holds it whole." + _bands_said(plans))
    _show_setups(rows, cols, fmt, head, "setups, cheapest first", note)


def _load_said(w) -> str:
    """The load of a capacity search in words: "200 users (closed loop, think 0 s: ... a stress test ...)" or
    "Poisson arrivals, target 4 req/s"; users in lockstep are said only where there are two or more."""
    if not w.users:
        return (f"{'Poisson' if w.burstiness == 1 else f'gamma(shape {w.burstiness:g})'} arrivals"
                + (f", target {w.rate_rps:g} req/s" if w.rate_rps else ""))
    stress = (": each user sends the next request the moment a reply ends, a stress test; people chatting pause "
              "between turns: try --think-time 10") if not w.think_time_s else ""
    if stress and w.users > 1 and not w.trace and w.prompt_lengths().kind == w.output_lengths().kind == "fixed":
        stress += ("; with fixed lengths too the users stay in lockstep, every prompt prefilled at once: "
                   "--length-spread 0.5 draws them")
    return f"{w.users:,} user{'s' if w.users != 1 else ''} (closed loop, think {w.think_time_s:g} s{stress})"


def _bands_said(plans: list) -> str:
    """Where the step model's decode band comes from, once per distinct band of the setups' plans (the band
    estimate prints: overheads.DECODE_BANDS through speed/bands.py)."""
    bands = list(dict.fromkeys(p.plan.speed.band for p in plans if p.plan is not None and p.plan.speed.band))
    said = []
    for b in bands:  # a band that extends another (the ROCm rows' widening) says only what it adds (s22 walk)
        base = next((a for a in bands if a != b and b.startswith(a)), None)
        said.append(f" Decode steps' band: {b}." if base is None else
                    f" Rows on other vendors' cards: the same band, widened by {b[len(base):].lstrip(', ')}.")
    return "".join(said)


def _render_job(rows: list[dict], head: str, fmt: str, engine: str) -> None:
    """An offline job's setups, cheapest run first."""
    cols = [Column("setup", "setup", priority=0, style=lambda r: "green" if r.get("pareto") else None),
            Column("job_s", "time", _s, "right", 0),
            Column("usd_per_job", "$ job", usd, "right", 0),
            Column("job_peak_running", "ran at once", num(), "right", 1),
            Column("job_preemptions", "preempted", num(), "right", 1),
            Column("output_tokens_per_s", "out tok/s", num(), "right", 1),
            Column("usd_per_hour", "$/h", usd, "right", 2),
            Column("offer", "offer", priority=2),
            Column("usd_per_million_output", "$/M out", usd, "right", 3),
            Column("max_concurrency", "KV reqs", num(), "right", 3),
            Column("kv_tokens", "KV tokens", num(), "right", 4)]
    from .. import api

    profile = api.engine_profile(engine)
    note = (f"Green: the Pareto front of cost vs time. From {profile.label}'s scheduler simulated on the batch "
            f"(estimate --batch-size's offline run): at most {profile.running_cap} requests run at once, and no more "
            f"than the KV pool {profile.pool_admits} "
            "$ job: one tensor-parallel group's share of the instance for that time.")
    _show_setups(rows, cols, fmt, head, "setups, cheapest run first", note)


def _show_setups(rows: list[dict], cols: list[Column], fmt: str, head: str, title: str, note: str) -> None:
    """The headline as a bullet above a table titled ``title``; in the other formats, the headline is the title."""
    if fmt == "table":
        bullet(head, prefix="")
        show(rows, cols, fmt, title=title, notes=[note])
    else:
        show(rows, cols, fmt, title=head, notes=[note])


def _s(x: float | None) -> str:
    return "" if x is None else (f"{x * 1000:.0f} ms" if x < 10 else f"{x:.1f} s")


def _tpot(x: float | None) -> str:
    """A row's TPOT; n/a where no request streamed a second token (the notes say why)."""
    return "n/a" if x is None else _s(x)


def _sent(row: dict) -> str:
    """How a run's requests were sent: its rate ("all at once" for vllm bench serve's "inf"), and the client's limit
    on requests in flight."""
    rate = "all at once" if row["rate_rps"] is None else f"{row['rate_rps']:g}/s"
    limit = row.get("max_concurrency")
    return rate if limit is None else f"{limit:,} at a time" if row["rate_rps"] is None else f"{rate}, {limit:,} max"


@app.command("calibrate-serving")
def calibrate_serving_cmd(
    results: Annotated[list[str], typer.Argument(help="vllm bench serve --save-result JSON, GuideLLM benchmarks.json "
                                                "or AIPerf profile_export_aiperf.json files.")],
    model: Annotated[str, typer.Option(help="The model the runs served.")],
    gpu: Annotated[str, typer.Option(help="The GPU they ran on.")],
    tp: Annotated[int, typer.Option(help="Tensor parallelism of the deployment.")] = 1,
    save: Annotated[str | None, typer.Option("--out", help="Write the corrections (YAML) for --calibration "
                                                      "[default: none written].")] = None,
    as_json: JsonFlag = False,
) -> None:
    """Fit per-deployment corrections on your own benchmark runs and show the error before and after.

    Each run is replayed in simulation; the corrections are fitted on half of its requests and applied only if
    they make no run's error on the other half worse (the errors shown are on that held-out half).

    Example:

    \b
      gpuplan calibrate-serving run-2rps.json run-8rps.json --model llama-3.1-8b --gpu h100-sxm --out cal.yaml
    """
    from .. import api
    from ..userfiles import output_file

    if save is not None:
        output_file(save, "--out")  # before the replay, not after it
    report = api.calibrate_serving(results, model=model, gpu=gpu, tp=tp, out=save)
    cal, rows, notes = report.calibration, report.runs, report.notes
    if as_json:
        print_json(report)
        return
    table = Table(title=f"corrections: compute x{cal['compute']:.2f}, memory x{cal['memory']:.2f}",
                  title_justify="left")
    for col in ("run", "rate", "TTFT", "err before", "err after", "TPOT", "err before", "err after"):
        table.add_column(col, justify="left" if col == "run" else "right", no_wrap=col != "run")  # a figure whole
    for r in rows:
        # vllm bench serve writes "inf" for a burst; a bare inf in a table reads as an overflow
        table.add_row(r["run"], _sent(r), _s(r["ttft_s"]),
                      _pct(r["ttft_err_before_pct"]), _pct(r["ttft_err_after_pct"]), _s(r["tpot_s"]),
                      _pct(r["tpot_err_before_pct"]), _pct(r["tpot_err_after_pct"]))
    out.print(table)
    bullet("Errors on held-out requests: each run's replay is split in two, the corrections fitted on one half.",
           prefix="")
    for note in notes:
        bullet(note, prefix="note: ", style="yellow")
    if save is not None:
        out.print(f"saved to {save}: pass --calibration {save} to gpuplan capacity")


def _pct(x: float | None) -> str:
    return "n/a" if x is None else f"{x:+.0f}%"
