"""Per-deployment corrections from the user's own benchmark runs: ``vllm bench serve --save-result``, GuideLLM
``benchmarks.json`` and AIPerf ``profile_export_aiperf.json``.

Each file gives rate (or a burst), mean lengths, mean TTFT and mean TPOT. The simulation replays each run;
the corrections are the median ratios measured/predicted: TTFT (prefill, compute-bound) scales the compute term,
TPOT (decode, bandwidth-bound) the memory term. The error before and after is reported per run.
"""

from __future__ import annotations

import json
import statistics
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import yaml

from ..errors import GpuplanError
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


def _num(x: Any) -> float | None:
    try:
        v = float(x)
    except (TypeError, ValueError):
        return None
    return v if v == v and abs(v) != float("inf") else None


def read_results(path: str | Path) -> list[Measurement]:
    """Measurements from one result file, whichever of the three tools wrote it."""
    p = Path(path)
    if not p.is_file():
        raise GpuplanError(f"no benchmark result file {str(path)!r}")
    try:
        data = json.loads(p.read_text(encoding="utf-8"))
    except json.JSONDecodeError as err:
        raise GpuplanError(f"{path} is not JSON: {err}") from None
    if isinstance(data, dict) and "mean_ttft_ms" in data:
        return [_vllm(data, str(p))]
    if isinstance(data, dict) and "benchmarks" in data:
        return [_guidellm(b, f"{p}#{i}") for i, b in enumerate(data["benchmarks"])]
    if isinstance(data, dict) and "time_to_first_token" in data:
        return [_aiperf(data, str(p))]
    raise GpuplanError(f"{path}: not a vllm bench serve, GuideLLM or AIPerf result (no mean_ttft_ms, benchmarks or "
                       "time_to_first_token)")


def _vllm(d: dict, src: str) -> Measurement:
    n = int(d.get("completed") or d.get("num_prompts") or 1)
    rate = _num(d.get("request_rate"))
    return Measurement(source=src, rate_rps=rate, num_requests=n,
                       mean_input_tokens=(d.get("total_input_tokens") or 0) / n,
                       mean_output_tokens=(d.get("total_output_tokens") or 0) / n,
                       mean_ttft_s=float(d["mean_ttft_ms"]) / 1000, mean_tpot_s=float(d["mean_tpot_ms"]) / 1000,
                       output_tokens_per_s=_num(d.get("output_throughput")))


def _metric(m: dict, *names: str) -> float | None:
    for name in names:
        v = m.get(name)
        if isinstance(v, dict):
            v = (v.get("successful") or v).get("mean", v.get("avg"))
        if _num(v) is not None:
            return float(v)
    return None


def _guidellm(b: dict, src: str) -> Measurement:
    m = b.get("metrics") or {}
    strategy = (b.get("args") or b.get("config") or {}).get("strategy") or b.get("strategy") or {}
    rate = _num(strategy.get("rate")) if isinstance(strategy, dict) else None
    ttft, tpot = _metric(m, "time_to_first_token_ms"), _metric(m, "time_per_output_token_ms",
                                                                 "inter_token_latency_ms")
    if ttft is None or tpot is None:
        raise GpuplanError(f"{src}: GuideLLM benchmark without time_to_first_token_ms / time_per_output_token_ms")
    return Measurement(source=src, rate_rps=rate, num_requests=int(_metric(m, "request_totals") or 100),
                       mean_input_tokens=_metric(m, "prompt_token_count", "prompt_tokens") or 0,
                       mean_output_tokens=_metric(m, "output_token_count", "output_tokens") or 0,
                       mean_ttft_s=ttft / 1000, mean_tpot_s=tpot / 1000,
                       output_tokens_per_s=_metric(m, "output_tokens_per_second"))


def _aiperf(d: dict, src: str) -> Measurement:
    def avg(key: str) -> float | None:
        v = d.get(key)
        return _num(v.get("avg")) if isinstance(v, dict) else None

    load = ((d.get("input_config") or {}).get("loadgen") or {})
    ttft, itl = avg("time_to_first_token"), avg("inter_token_latency")
    if ttft is None or itl is None:
        raise GpuplanError(f"{src}: AIPerf export without time_to_first_token / inter_token_latency averages")
    return Measurement(source=src, rate_rps=_num(load.get("request_rate")),
                       num_requests=int(avg("request_count") or load.get("request_count") or 100),
                       mean_input_tokens=avg("input_sequence_length") or 0,
                       mean_output_tokens=avg("output_sequence_length") or 0,
                       mean_ttft_s=ttft / 1000, mean_tpot_s=itl / 1000,
                       output_tokens_per_s=avg("output_token_throughput"))


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
    p = Path(path)
    if not p.is_file():
        raise GpuplanError(f"no calibration file {str(path)!r}")
    data = yaml.safe_load(p.read_text(encoding="utf-8")) or {}
    try:
        cal = Calibration(**data)
    except TypeError as err:
        raise GpuplanError(f"{path}: {err}") from None
    for key in ("compute", "memory", "overhead"):
        v = getattr(cal, key)
        if not isinstance(v, (int, float)) or not 0.05 <= v <= 20:
            raise GpuplanError(f"{path}: {key} correction must be a number in [0.05, 20], got {v!r}")
    return cal
