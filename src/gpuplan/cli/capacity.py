"""``gpuplan capacity``: which GPUs, how many, and at what cost for a request stream under latency targets."""

from __future__ import annotations

from typing import Annotated

import typer
from rich.table import Table
from rich.text import Text

from ..errors import GpuplanError
from .app import JsonFlag, app, out, print_json, short


@app.command("capacity")
def capacity_cmd(
    workload: Annotated[str | None, typer.Argument(help="Workload YAML (rate_rps, preset or prompt/output, slo...); "
                                                   "flags override it.", show_default=False)] = None,
    model: Annotated[str | None, typer.Option(help="Catalog alias, HF repo id or config.json path.")] = None,
    rate: Annotated[float | None, typer.Option("--rate", help="Expected arrival rate, requests/s.")] = None,
    preset: Annotated[str | None, typer.Option(help="Lengths: chat, summarize, generate, balanced, rag, code.")] = None,
    prompt_tokens: Annotated[int | None, typer.Option(help="Mean prompt length (fixed).")] = None,
    output_tokens: Annotated[int | None, typer.Option(help="Mean output length (fixed).")] = None,
    trace: Annotated[str | None, typer.Option(help="Trace: vllm bench serve result, JSON lines, ShareGPT.")] = None,
    ttft: Annotated[float | None, typer.Option(help="SLO: time to first token, seconds.")] = None,
    tpot: Annotated[float | None, typer.Option(help="SLO: time per output token, seconds.")] = None,
    e2e: Annotated[float | None, typer.Option(help="SLO: end-to-end latency, seconds.")] = None,
    percentile: Annotated[int | None, typer.Option(help="SLO percentile: 50, 90, 95 or 99 [default 95].")] = None,
    burstiness: Annotated[float | None, typer.Option(help="Gamma shape of arrivals (1 Poisson, <1 bursty).")] = None,
    shared_prefix: Annotated[int | None, typer.Option(help="Tokens every prompt shares (prefix cache).")] = None,
    gpus: Annotated[str | None, typer.Option(help="Only these GPUs, comma-separated.")] = None,
    max_gpus: Annotated[int, typer.Option(help="Largest tensor-parallel group.")] = 8,
    any_quant: Annotated[bool, typer.Option(help="Also try fp8 weights (where supported) and AWQ int4.")] = False,
    engine_version: Annotated[str | None, typer.Option(help="vLLM release whose rules apply [default: current].")
                              ] = None,
    kv_cache_dtype: Annotated[str | None, typer.Option(help="auto | fp8 | fp16 | bf16 | int8")] = None,
    calibration: Annotated[str | None, typer.Option(help="Corrections from `gpuplan calibrate-serving`.")] = None,
    top: Annotated[int, typer.Option(help="Setups simulated (the cheapest by the closed-form bound).")] = 8,
    plot: Annotated[str | None, typer.Option(help="Write the latency-vs-rate curves to this PNG (matplotlib).")
                    ] = None,
    as_json: JsonFlag = False,
) -> None:
    """For every GPU type x count x tensor parallelism (x fp8/AWQ weights with --any-quant) that holds the model
    in vLLM, the highest request rate that meets the SLOs (bisection on a simulation of vLLM's scheduler), the
    cheapest offer, $ per million input and output tokens at that rate, and the Pareto front of cost vs time to
    first token. Rates carry the band of the serving accuracy table.

    Examples:
      gpuplan capacity --model llama-3.1-8b --rate 5 --prompt-tokens 2000 --output-tokens 300 --ttft 1 --tpot 0.05
      gpuplan capacity workload.yaml --model qwen2.5-72b --any-quant --json
    """
    from ..model.catalog import load_model
    from ..scenario import scenario_from
    from ..serving.calibrate import load_calibration
    from ..serving.capacity import capacity
    from ..serving.workload import load_workload

    _need_numpy()
    if model is None:
        raise GpuplanError("name the model: --model llama-3.1-8b (or a HF repo id / config.json path)")
    if not 1 <= max_gpus <= 64 or not 1 <= top <= 100:
        raise GpuplanError("--max-gpus takes 1..64 and --top 1..100")
    w = load_workload(workload, dict(rate_rps=rate, preset=preset, prompt_tokens=prompt_tokens,
                                     output_tokens=output_tokens, trace=trace, ttft_s=ttft, tpot_s=tpot, e2e_s=e2e,
                                     percentile=percentile, burstiness=burstiness,
                                     shared_prefix_tokens=shared_prefix))
    s = scenario_from({k: v for k, v in dict(model=model, task="infer", engine="vllm", engine_version=engine_version,
                                             kv_cache_dtype=kv_cache_dtype).items() if v is not None})
    from ..hardware import load_gpu

    ids = tuple(load_gpu(g).id for g in (gpus or "").split(",") if g.strip())
    plans = capacity(s, load_model(model), w, gpu_ids=ids, max_gpus=max_gpus, any_quant=any_quant,
                     simulate_top=top, calibration=load_calibration(calibration) if calibration else None)
    if plot:
        from ..serving.report import plot_curves

        plot_curves(plans, w, plot)
    if as_json:
        from dataclasses import asdict

        print_json({"workload": w.model_dump(), "plans": [asdict(p) for p in plans]})
        return
    render(plans, w)


def render(plans, w) -> None:
    slo = w.slo
    targets = ", ".join(f"{k} <= {v:g} s" for k, v in (("TTFT", slo.ttft_s), ("TPOT", slo.tpot_s), ("E2E", slo.e2e_s))
                        if v) or "none"
    arrivals = "Poisson" if w.burstiness == 1 else f"gamma(shape {w.burstiness:g})"
    out.print(Text("workload", style="bold") + f": prompts ~{w.mean_prompt_tokens:,.0f} tokens, outputs "
              f"~{w.mean_output_tokens:,.0f}, {arrivals} arrivals; SLO p{slo.percentile}: {targets}"
              + (f"; target {w.rate_rps:g} req/s" if w.rate_rps else ""))
    if not plans:
        out.print(Text("no setup meets the SLOs", style="red") + ": relax them, allow more GPUs (--max-gpus) or "
                  "quantization (--any-quant)")
        return
    table = Table(title="setups by cost per request at their highest SLO-meeting rate", title_justify="left")
    for col in ("setup", "max req/s", "band", f"p{slo.percentile} TTFT", f"p{slo.percentile} TPOT", "$/h",
                "$/M in", "$/M out", "$/1k req", "replicas", "offer"):
        table.add_column(col, justify="left" if col in ("setup", "offer") else "right")
    for p in plans:
        star = Text("* ", style="green") if p.pareto else Text("")
        table.add_row(star + p.setup, f"{p.max_rate_rps:.2f}", f"{p.rate_band_rps[0]:.2f}-{p.rate_band_rps[1]:.2f}",
                      _s(p.ttft_s), _s(p.tpot_s), _usd(p.usd_per_hour), _usd(p.usd_per_million_input),
                      _usd(p.usd_per_million_output), _usd(p.usd_per_1k_requests),
                      str(p.replicas_for_target or ""), short(p.offer or "") if p.offer else "-")
    out.print(table)
    out.print(Text("* Pareto front of cost vs TTFT. Rates from a simulation of vLLM's scheduler on the roofline step "
                   "model; `--json` has each setup's latency-vs-rate curve.", style="dim"))


def _s(x: float | None) -> str:
    return "-" if x is None else (f"{x * 1000:.0f} ms" if x < 10 else f"{x:.1f} s")


def _usd(x: float | None) -> str:
    return "-" if x is None else (f"{x:,.2f}" if x >= 0.1 else f"{x:.3f}")


@app.command("calibrate-serving")
def calibrate_serving_cmd(
    results: Annotated[list[str], typer.Argument(help="vllm bench serve --save-result JSON, GuideLLM benchmarks.json "
                                                "or AIPerf profile_export_aiperf.json files.")],
    model: Annotated[str, typer.Option(help="The model the runs served.")],
    gpu: Annotated[str, typer.Option(help="The GPU they ran on.")],
    tp: Annotated[int, typer.Option(help="Tensor parallelism of the deployment.")] = 1,
    save: Annotated[str | None, typer.Option("--out", help="Write the corrections (YAML) for --calibration.")] = None,
    as_json: JsonFlag = False,
) -> None:
    """Fit per-deployment corrections on your own benchmark runs and show the error before and after.

    Example:
      gpuplan calibrate-serving run-2rps.json run-8rps.json --model llama-3.1-8b --gpu h100-sxm --out cal.yaml
    """
    from ..hardware import load_gpu
    from ..memory.runtimes import vllm
    from ..model.catalog import load_model
    from ..scenario import scenario_from
    from ..serving.calibrate import fit, read_results, save_calibration
    from ..serving.simulate import vllm_engine
    from ..serving.steptime import step_model

    _need_numpy()
    runs = [r for path in results for r in read_results(path)]
    g = load_gpu(gpu)
    m = load_model(model)
    s = scenario_from(dict(model=model, task="infer", engine="vllm", gpu=g.id, tp=tp, num_gpus=tp))
    mem = vllm.startup_memory(s, m, g)
    engine = vllm_engine(s, mem)
    cal, rows = fit(step_model(s, m, g), engine, runs)
    if save:
        save_calibration(cal, save)
    if as_json:
        from dataclasses import asdict

        print_json({"calibration": asdict(cal), "runs": rows})
        return
    table = Table(title=f"corrections: compute x{cal.compute:.2f}, memory x{cal.memory:.2f}", title_justify="left")
    for col in ("run", "rate", "TTFT", "err before", "err after", "TPOT", "err before", "err after"):
        table.add_column(col, justify="left" if col == "run" else "right")
    for r in rows:
        table.add_row(r["run"], "inf" if r["rate_rps"] is None else f"{r['rate_rps']:g}", _s(r["ttft_s"]),
                      f"{r['ttft_err_before_pct']:+.0f}%", f"{r['ttft_err_after_pct']:+.0f}%", _s(r["tpot_s"]),
                      f"{r['tpot_err_before_pct']:+.0f}%", f"{r['tpot_err_after_pct']:+.0f}%")
    out.print(table)
    if save:
        out.print(f"saved to {save}: pass --calibration {save} to gpuplan capacity")


def _need_numpy() -> None:
    try:
        import numpy  # noqa: F401
    except ImportError:
        raise GpuplanError("the serving simulation needs numpy: pip install 'gpuplan[serving]'") from None
