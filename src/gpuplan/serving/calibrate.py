"""Per-deployment corrections from the user's own benchmark runs: ``vllm bench serve --save-result``, GuideLLM
``benchmarks.json`` and AIPerf ``profile_export_aiperf.json``.

Each file gives rate (or a burst), mean lengths, mean TTFT and mean TPOT. The simulation replays each run;
the corrections are the median ratios measured/predicted: TTFT (prefill, compute-bound) scales the compute term,
TPOT (decode, bandwidth-bound) the memory term. The error before and after is reported per run.
"""

from __future__ import annotations

import statistics
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any

import yaml

from ..errors import GpuplanError, echo, echo_value
from ..userfiles import load_json, number, read_mapping
from .steptime import Calibration


@dataclass(frozen=True, kw_only=True)
class Measurement:
    source: str
    rate_rps: float | None  # None: every request sent at once (rate inf)
    num_requests: int
    mean_input_tokens: float
    mean_output_tokens: float
    mean_ttft_s: float
    mean_tpot_s: float
    output_tokens_per_s: float | None


MAX_RUN_REQUESTS = 1_000_000  # requests one benchmark run reports (vllm bench serve's default is 1,000)
MAX_RUNS = 100  # benchmarks one file holds (a GuideLLM sweep has about 10)
MAX_TOKENS = 10_000_000  # a mean prompt or output, as a workload's lengths
MAX_TTFT_MS, MAX_TPOT_MS, MAX_RATE = 3_600_000, 60_000, 100_000  # 1 hour, 1 minute a token, as a workload's SLOs


def read_results(path: str | Path) -> list[Measurement]:
    """Measurements from one result file, whichever of the three tools wrote it; every field read is checked
    (type and range, one sentence naming the file and the field)."""
    data = load_json(path, "benchmark result")
    if isinstance(data, dict) and "mean_ttft_ms" in data:
        return [_vllm(data, str(path))]
    if isinstance(data, dict) and "benchmarks" in data:
        benchmarks = data["benchmarks"]
        if benchmarks == []:
            raise GpuplanError(f"{path} holds no benchmarks: GuideLLM wrote none (did every request fail?)")
        if not isinstance(benchmarks, list):
            raise GpuplanError(f"{path}: benchmarks must be a list of GuideLLM benchmarks, got "
                               f"{echo_value(benchmarks)}")
        if len(benchmarks) > MAX_RUNS:
            raise GpuplanError(f"{path} holds {len(benchmarks):,} benchmarks; gpuplan replays up to {MAX_RUNS} a file")
        return [_guidellm(b, f"{path}#{i}") for i, b in enumerate(benchmarks)]
    if isinstance(data, dict) and "time_to_first_token" in data:
        return [_aiperf(data, str(path))]
    raise GpuplanError(f"{path}: not a vllm bench serve, GuideLLM or AIPerf result (no mean_ttft_ms, benchmarks or "
                       "time_to_first_token)")


def _object(value: Any, where: str) -> dict:
    """``value`` if it is a JSON object (None: an empty one); else one sentence."""
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise GpuplanError(f"{where} must be a JSON object, got {echo_value(value)}")
    return value


def _rate(value: Any, where: str) -> float | None:
    """A run's request rate: None when every request was sent at once ("inf", as vllm bench serve writes it)."""
    if value is None or (isinstance(value, str) and value.strip().lower() in ("inf", "infinity")):
        return None
    if isinstance(value, float) and value == float("inf"):
        return None
    return number(value, where, least=0, above=True, most=MAX_RATE)


def _run(src: str, *, rate: float | None, count: Any, inputs: Any, outputs: Any, ttft_ms: Any, tpot_ms: Any,
         throughput: Any, names: tuple[str, str, str, str, str, str]) -> Measurement:
    """A checked measurement; ``names`` are the file's own names of count, inputs, outputs, TTFT, TPOT and
    throughput, for the messages."""
    n = int(number(count, f"{src}: {names[0]}", least=1, most=MAX_RUN_REQUESTS, whole=True))
    return Measurement(
        source=src, rate_rps=rate, num_requests=n,
        mean_input_tokens=number(inputs, f"{src}: {names[1]} per request", least=1, most=MAX_TOKENS),
        mean_output_tokens=number(outputs, f"{src}: {names[2]} per request", least=1, most=MAX_TOKENS),
        mean_ttft_s=number(ttft_ms, f"{src}: {names[3]}", least=0, above=True, most=MAX_TTFT_MS) / 1000,
        mean_tpot_s=number(tpot_ms, f"{src}: {names[4]}", least=0, above=True, most=MAX_TPOT_MS) / 1000,
        output_tokens_per_s=None if throughput is None else number(throughput, f"{src}: {names[5]}", least=0))


def _vllm(d: dict, src: str) -> Measurement:
    """``vllm bench serve --save-result``: totals over the ``completed`` requests, means in milliseconds."""
    count_key = "completed" if d.get("completed") is not None else "num_prompts"
    n = d.get(count_key)
    for key in ("mean_tpot_ms", "total_input_tokens", "total_output_tokens"):
        if d.get(key) is None:
            raise GpuplanError(f"{src}: a vllm bench serve result without {key}; pass the file --save-result wrote")
    n = number(n, f"{src}: {count_key}", least=1, most=MAX_RUN_REQUESTS, whole=True)
    totals = [number(d[k], f"{src}: {k}", least=0, most=MAX_TOKENS * MAX_RUN_REQUESTS)
              for k in ("total_input_tokens", "total_output_tokens")]
    return _run(src, rate=_rate(d.get("request_rate"), f"{src}: request_rate"), count=n, inputs=totals[0] / n,
                outputs=totals[1] / n, ttft_ms=d["mean_ttft_ms"], tpot_ms=d["mean_tpot_ms"],
                throughput=d.get("output_throughput"),
                names=(count_key, "total_input_tokens", "total_output_tokens", "mean_ttft_ms", "mean_tpot_ms",
                       "output_throughput"))


def _metric(m: dict, src: str, *names: str) -> Any:
    """The mean of the first of ``names`` in a GuideLLM metrics object (``{"successful": {"mean": ...}}``, a
    summary ``{"mean": ...}`` or a bare number), unchecked; None when none is there."""
    for name in names:
        v = m.get(name)
        if isinstance(v, dict):
            part = _object(v.get("successful", v), f"{src}: metrics.{name}.successful")
            v = part.get("mean", part.get("avg"))
        if v is not None:
            return v
    return None


def _guidellm(b: Any, src: str) -> Measurement:
    """One GuideLLM benchmark: its strategy's rate, the successful requests' means (milliseconds) and count
    (``request_totals``: at the benchmark's top level in GuideLLM 0.2, inside ``metrics`` in later releases)."""
    b = _object(b, src)
    m = _object(b.get("metrics"), f"{src}: metrics")
    setup = _object(b.get("args") or b.get("config"), f"{src}: args")
    strategy = _object(setup.get("strategy") or b.get("strategy"), f"{src}: strategy")
    totals = b.get("request_totals") if b.get("request_totals") is not None else m.get("request_totals")
    count = _object(totals, f"{src}: request_totals").get("successful", 100) if totals is not None else 100
    names = {"ttft": ("time_to_first_token_ms",), "tpot": ("time_per_output_token_ms", "inter_token_latency_ms"),
             "in": ("prompt_token_count", "prompt_tokens"), "out": ("output_token_count", "output_tokens")}
    values = {k: _metric(m, src, *v) for k, v in names.items()}
    missing = [v[0] for k, v in names.items() if values[k] is None]
    if missing:
        raise GpuplanError(f"{src}: a GuideLLM benchmark without metrics.{missing[0]}; pass the benchmarks.json "
                           "GuideLLM wrote")
    return _run(src, rate=_rate(strategy.get("rate"), f"{src}: strategy.rate"), count=count,
                inputs=values["in"], outputs=values["out"], ttft_ms=values["ttft"], tpot_ms=values["tpot"],
                throughput=_metric(m, src, "output_tokens_per_second"),
                names=("request_totals.successful", "prompt_token_count", "output_token_count",
                       "time_to_first_token_ms", "time_per_output_token_ms", "output_tokens_per_second"))


def _aiperf(d: dict, src: str) -> Measurement:
    """AIPerf's ``profile_export_aiperf.json``: per-metric summaries (``{"avg": ...}``, milliseconds) and the
    load it was run with (``input_config.loadgen``)."""
    def avg(key: str) -> Any:
        return _object(d.get(key), f"{src}: {key}").get("avg")

    load = _object(_object(d.get("input_config"), f"{src}: input_config").get("loadgen"),
                   f"{src}: input_config.loadgen")
    for key in ("time_to_first_token", "inter_token_latency", "input_sequence_length", "output_sequence_length"):
        if avg(key) is None:
            raise GpuplanError(f"{src}: an AIPerf export without {key}.avg; pass the profile_export_aiperf.json "
                               "AIPerf wrote")
    count = avg("request_count") if avg("request_count") is not None else load.get("request_count", 100)
    return _run(src, rate=_rate(load.get("request_rate"), f"{src}: input_config.loadgen.request_rate"),
                count=count, inputs=avg("input_sequence_length"), outputs=avg("output_sequence_length"),
                ttft_ms=avg("time_to_first_token"), tpot_ms=avg("inter_token_latency"),
                throughput=avg("output_token_throughput"),
                names=("request_count", "input_sequence_length", "output_sequence_length", "time_to_first_token",
                       "inter_token_latency", "output_token_throughput"))


def replay(model, engine, *, rate_rps: float | None, prompt, output, shared_prefix: int = 0,
           distinct_prompts: int | None = None, max_concurrency: int | None = None, burstiness: float = 1.0,
           seed: int = 0):
    """Simulate one benchmark run: ``len(prompt)`` requests sent at ``rate_rps`` (Poisson; None: all at once),
    as ``vllm bench serve`` and inference-perf send them, by a client holding at most ``max_concurrency``.
    ``distinct_prompts``: the run cycles through that many prompts (inference-perf's shared-prefix data: groups x
    prompts per group, reused in turn), so from the second round each prompt's full blocks hit the prefix cache;
    ``shared_prefix`` tokens (the group's system prompt) hit from the first round."""
    import numpy as np

    from .simulate import arrivals, pool_hits, simulate

    n = len(prompt)
    prompt, output = np.asarray(prompt), np.asarray(output)
    rng = np.random.default_rng(seed)
    arrive = np.zeros(n) if not rate_rps else arrivals(rate_rps, n, burstiness, rng)
    if not distinct_prompts:
        return simulate(model, engine, arrive, prompt, output, shared_prefix, max_concurrency=max_concurrency)
    hits, blocks = pool_hits(prompt, distinct_prompts, shared_prefix, engine.block_tokens)
    return simulate(model, engine, arrive, prompt, output, max_concurrency=max_concurrency, prefix_hits=hits,
                    cached_blocks=blocks)


def predict(model, engine, m: Measurement) -> tuple[float, float, float]:
    """(mean TTFT, mean TPOT, output tokens/s) the simulation gives for the run ``m`` (its mean lengths)."""
    import numpy as np

    n = max(m.num_requests, 1)
    out = replay(model, engine, rate_rps=m.rate_rps, prompt=np.full(n, max(round(m.mean_input_tokens), 1)),
                 output=np.full(n, max(round(m.mean_output_tokens), 1)))
    return float(out.ttft_s.mean()), float(out.tpot_s.mean()), out.output_tokens_per_s


def fit(model, engine, runs: list[Measurement]) -> tuple[Calibration, list[dict]]:
    """Corrections and, per run, the error before and after them."""
    from dataclasses import replace

    before = [predict(model, engine, r) for r in runs]
    fixed = model.request_s  # the API server's per-request latency is not the engine's: left out of the ratio
    ttft_ratio = statistics.median((r.mean_ttft_s - fixed) / (b[0] - fixed) for r, b in zip(runs, before, strict=True)
                                   if b[0] > fixed and r.mean_ttft_s > fixed)
    tpot_ratio = statistics.median(r.mean_tpot_s / b[1] for r, b in zip(runs, before, strict=True) if b[1] > 0)
    cal = Calibration(compute=ttft_ratio, memory=tpot_ratio, source=f"{len(runs)} runs")
    tuned = replace(model, calibration=cal)
    after = [predict(tuned, engine, r) for r in runs]
    rows = []
    for r, b, a in zip(runs, before, after, strict=True):
        rows.append({"run": r.source, "rate_rps": r.rate_rps, "ttft_s": r.mean_ttft_s, "tpot_s": r.mean_tpot_s,
                     "ttft_err_before_pct": 100 * (b[0] / r.mean_ttft_s - 1),
                     "ttft_err_after_pct": 100 * (a[0] / r.mean_ttft_s - 1),
                     "tpot_err_before_pct": 100 * (b[1] / r.mean_tpot_s - 1),
                     "tpot_err_after_pct": 100 * (a[1] / r.mean_tpot_s - 1)})
    return cal, rows


def save_calibration(cal: Calibration, path: str | Path) -> None:
    Path(path).write_text(yaml.safe_dump(asdict(cal), sort_keys=False), encoding="utf-8")


def load_calibration(path: str | Path) -> Calibration:
    """Corrections written by :func:`save_calibration` (or by hand): each a number in [0.05, 20]."""
    data = read_mapping(path, "calibration")
    known = {f.name for f in fields(Calibration)}
    unknown = sorted(str(k) for k in data if k not in known)
    if unknown:
        raise GpuplanError(f"{path}: unknown field {echo(unknown[0])}; a calibration holds {', '.join(sorted(known))}")
    for key in ("compute", "memory", "overhead"):
        if key in data:
            number(data[key], f"{path}: {key} correction", least=0.05, most=20)
    if data.get("source") is not None and not isinstance(data["source"], str):
        raise GpuplanError(f"{path}: source must be text, got {echo_value(data['source'])}")
    return Calibration(**data)
