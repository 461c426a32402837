"""Per-deployment corrections from the user's own benchmark runs: ``vllm bench serve --save-result``, GuideLLM
``benchmarks.json`` and AIPerf ``profile_export_aiperf.json``.

Each file gives rate (or a burst), mean lengths, mean TTFT and mean TPOT. The simulation replays each run (at most
:data:`MAX_REPLAY` requests, whatever count the file states); the corrections scale the compute term (prompt
steps: TTFT) and the memory term (decode steps: TPOT), fitted together on half of each run's requests and applied
only if they make no run's error on the other half worse (:func:`fit_corrections`). The error before and after is
reported per run, on the held-out requests.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

from ..errors import GpuplanError, echo, echo_value
from ..userfiles import load_json, number, output_file, read_mapping, write_text
from .steptime import Calibration

if TYPE_CHECKING:
    from .simulate import Budget


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
    max_concurrency: int | None = None  # the client's limit on requests in flight (None: none)
    burstiness: float = 1.0  # the arrivals' gamma shape (1: Poisson), vllm bench serve's --burstiness


MAX_RUN_REQUESTS = 1_000_000  # requests one benchmark run reports (vllm bench serve's default is 1,000)
MAX_RUNS = 100  # benchmarks one file holds (a GuideLLM sweep has about 10)
MAX_TOKENS = 10_000_000  # a mean prompt or output, as a workload's lengths
MAX_TTFT_MS, MAX_TPOT_MS, MAX_RATE = 3_600_000, 60_000, 100_000  # 1 hour, 1 minute a token, as a workload's SLOs
MAX_BURSTINESS = 1_000  # a gamma shape; vllm bench serve's default is 1 (Poisson)


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
    probe = isinstance(data, dict) and {"scenario", "probe", "estimate"} <= set(data)
    raise GpuplanError(f"{path}: not a vllm bench serve, GuideLLM or AIPerf result (no mean_ttft_ms, benchmarks or "
                       "time_to_first_token)" + ("; it is a probe record, which `gpuplan calibrate FILE` reads"
                                                 if probe else ""))


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
         throughput: Any, names: tuple[str, str, str, str, str, str], load: dict[str, Any] | None = None
         ) -> Measurement:
    """A checked measurement; ``names`` are the file's own names of count, inputs, outputs, TTFT, TPOT and
    throughput, for the messages; ``load``: the client's concurrency limit and burstiness as the file names them
    (``{"max_concurrency": (name, value), "burstiness": (name, value)}``, a value None when not set)."""
    n = int(number(count, f"{src}: {names[0]}", least=1, most=MAX_RUN_REQUESTS, whole=True))
    limits = {}
    for field, (name, value) in (load or {}).items():
        if value is not None:
            limits[field] = (int(number(value, f"{src}: {name}", least=1, most=MAX_RUN_REQUESTS, whole=True))
                             if field == "max_concurrency" else number(value, f"{src}: {name}", least=0, above=True,
                                                                        most=MAX_BURSTINESS))
    return Measurement(**limits,
        source=src, rate_rps=rate, num_requests=n,
        mean_input_tokens=number(inputs, f"{src}: {names[1]} per request", least=1, most=MAX_TOKENS),
        mean_output_tokens=number(outputs, f"{src}: {names[2]} per request", least=1, most=MAX_TOKENS),
        mean_ttft_s=number(ttft_ms, f"{src}: {names[3]}", least=0, above=True, most=MAX_TTFT_MS) / 1000,
        mean_tpot_s=number(tpot_ms, f"{src}: {names[4]}", least=0, above=True, most=MAX_TPOT_MS) / 1000,
        output_tokens_per_s=None if throughput is None else number(throughput, f"{src}: {names[5]}", least=0))


def _vllm(d: dict, src: str) -> Measurement:
    """``vllm bench serve --save-result``: totals over the ``completed`` requests, means in milliseconds, and the
    traffic it was sent with: ``request_rate`` ("inf": all at once), ``burstiness`` and ``max_concurrency``
    (``vllm/benchmarks/serve.py``: ``result_json["max_concurrency"] = args.max_concurrency``; a run at
    ``--max-concurrency 16`` holds 16 requests in flight, not all of them)."""
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
                       "output_throughput"),
                load={k: (k, d.get(k)) for k in ("max_concurrency", "burstiness")})


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
    """One GuideLLM benchmark: its strategy's rate (a ``concurrent`` strategy's ``streams``, a ``synchronous`` one's
    single request, held in flight: guidellm ``scheduler/strategies.py`` ``ConcurrentStrategy``), the successful
    requests' means (milliseconds) and count (``request_totals``: at the benchmark's top level in GuideLLM 0.2,
    inside ``metrics`` in later releases)."""
    b = _object(b, src)
    m = _object(b.get("metrics"), f"{src}: metrics")
    setup = _object(b.get("args") or b.get("config"), f"{src}: args")
    strategy = _object(setup.get("strategy") or b.get("strategy"), f"{src}: strategy")  # GuideLLM's own key
    totals = b.get("request_totals") if b.get("request_totals") is not None else m.get("request_totals")
    count = _object(totals, f"{src}: request_totals").get("successful", 100) if totals is not None else 100
    names = {"ttft": ("time_to_first_token_ms",), "tpot": ("time_per_output_token_ms", "inter_token_latency_ms"),
             "in": ("prompt_token_count", "prompt_tokens"), "out": ("output_token_count", "output_tokens")}
    values = {k: _metric(m, src, *v) for k, v in names.items()}
    missing = [v[0] for k, v in names.items() if values[k] is None]
    if missing:
        raise GpuplanError(f"{src}: a GuideLLM benchmark without metrics.{missing[0]}; pass the benchmarks.json "
                           "GuideLLM wrote")
    kind = strategy.get("type_", strategy.get("type"))  # GuideLLM's streams: "concurrent" holds them in flight
    streams = strategy.get("streams") if kind == "concurrent" else 1 if kind == "synchronous" else None
    return _run(src, rate=_rate(strategy.get("rate"), f"{src}: strategy.rate"), count=count,
                inputs=values["in"], outputs=values["out"], ttft_ms=values["ttft"], tpot_ms=values["tpot"],
                throughput=_metric(m, src, "output_tokens_per_second"),
                names=("request_totals.successful", "prompt_token_count", "output_token_count",
                       "time_to_first_token_ms", "time_per_output_token_ms", "output_tokens_per_second"),
                load={"max_concurrency": ("strategy.streams", streams)})


def _aiperf(d: dict, src: str) -> Measurement:
    """AIPerf's ``profile_export_aiperf.json``: per-metric summaries (``{"avg": ...}``, milliseconds) and the
    load it was run with (``input_config.loadgen``: ``request_rate``, and ``concurrency``, the requests it holds in
    flight)."""
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
                       "inter_token_latency", "output_token_throughput"),
                load={"max_concurrency": ("input_config.loadgen.concurrency", load.get("concurrency"))})


def replay(model, engine, *, rate_rps: float | None, prompt, output, shared_prefix: int = 0,
           distinct_prompts: int | None = None, max_concurrency: int | None = None, burstiness: float = 1.0,
           seed: int = 0, budget: Budget | None = None):
    """Simulate one benchmark run: ``len(prompt)`` requests sent at ``rate_rps`` (Poisson; None: all at once),
    as ``vllm bench serve`` and inference-perf send them, by a client holding at most ``max_concurrency``.
    ``distinct_prompts``: the run cycles through that many prompts (inference-perf's shared-prefix data: groups x
    prompts per group, reused in turn), so from the second round each prompt's full blocks hit the prefix cache;
    ``shared_prefix`` tokens (the group's system prompt) hit from the first round. ``budget``: as
    :func:`.simulate.simulate`'s."""
    import numpy as np

    from .simulate import arrivals, pool_hits, simulate

    n = len(prompt)
    prompt, output = np.asarray(prompt), np.asarray(output)
    rng = np.random.default_rng(seed)
    arrive = np.zeros(n) if not rate_rps else arrivals(rate_rps, n, burstiness, rng)
    if not distinct_prompts:
        return simulate(model, engine, arrive, prompt, output, shared_prefix, max_concurrency=max_concurrency,
                        budget=budget)
    hits, blocks = pool_hits(prompt, distinct_prompts, shared_prefix, engine.block_tokens)
    return simulate(model, engine, arrive, prompt, output, max_concurrency=max_concurrency, prefix_hits=hits,
                    cached_blocks=blocks, budget=budget)


# Requests one run's replay simulates at most: a result file's count never sizes an array. A longer run is replayed
# in its first MAX_REPLAY requests, sent at its rate (at a steady rate its means are the whole run's; a burst of
# more requests queues longer than the replay says, and the notes say that it was cut).
MAX_REPLAY = 2_000
# simulated events all the replays of one fit may run (:class:`.simulate.Budget`): work, not wall seconds, so that a
# fit is a function of its runs (the 120 wall seconds before session 31, at 10,000 events a CPU second)
FIT_EVENTS = 1_200_000
BOUNDS = (0.05, 20.0)  # the range of a correction (as load_calibration accepts it)


@dataclass(frozen=True)
class Halves:
    """A run replayed: the mean (TTFT, TPOT) of every other request in the order sent (``fit``: the corrections
    are fitted on them) and of the others (``check``: held out), and why the replay stopped early ("": it did
    not)."""

    fit: tuple[float, float]
    check: tuple[float, float]
    stopped: str = ""


def deployment(s, m, gpu):
    """The step model and vLLM scheduler of the deployment the runs measured (``s``: its model, GPU and tp);
    refuses one whose weights leave vLLM no KV cache there: the runs cannot have been served on it."""
    from ..engines import vllm
    from .simulate import vllm_scheduler
    from .steptime import step_model

    mem = vllm.startup_memory(s, m, gpu)
    if mem.num_blocks <= 0:
        raise GpuplanError(f"{m.name} does not fit {gpu.name} at tp {s.tp} in vLLM: its weights take "
                           f"{mem.weights / 2**30:.1f} GiB of the {mem.requested / 2**30:.1f} GiB vLLM may use on "
                           "each GPU, leaving no KV cache; check --model, --gpu and --tp")
    return step_model(s, m, gpu), vllm_scheduler(s, mem)


def predict(model, engine, m: Measurement, budget: Budget | None = None) -> Halves:
    """The simulation of the run ``m`` (its mean lengths, at most :data:`MAX_REPLAY` requests), split into the
    requests the corrections are fitted on and those held out."""
    import numpy as np

    n = min(max(int(m.num_requests), 1), MAX_REPLAY)
    out = replay(model, engine, rate_rps=m.rate_rps, prompt=np.full(n, max(round(m.mean_input_tokens), 1)),
                 output=np.full(n, max(round(m.mean_output_tokens), 1)), max_concurrency=m.max_concurrency,
                 burstiness=m.burstiness, budget=budget)
    order = np.argsort(out.sent_at, kind="stable")

    def means(part) -> tuple[float, float]:
        return (float(out.ttft_s[part].mean()), float(out.tpot_s[part].mean())) if len(part) else (math.nan,) * 2

    return Halves(fit=means(order[0::2]), check=means(order[1::2]), stopped=out.stopped)


def usable(model, engine, runs: list[Measurement]) -> tuple[list[Measurement], list[str]]:
    """The runs a correction can be fitted on, and a sentence for each one left out: it needs a mean TTFT above
    the API server's own per-request latency (:attr:`.steptime.StepModel.request_s`), a TPOT above 0, a positive
    rate (or none: a burst), at least one request, and requests that fit the deployment's KV pool."""
    pool = engine.kv_blocks * engine.block_tokens
    good, left_out = [], []
    for r in runs:
        length = r.mean_input_tokens + r.mean_output_tokens
        why = ("its mean TTFT is not above the API server's own latency" if not r.mean_ttft_s > model.request_s
               else "its mean TPOT is not above 0" if not r.mean_tpot_s > 0
               else "its request rate is not positive" if r.rate_rps is not None and not r.rate_rps > 0
               else "it counts no request" if not r.num_requests >= 1
               else f"its requests of {length:,.0f} tokens do not fit the deployment's KV pool of {pool:,} tokens"
               if not 0 < length <= pool else "")
        if why:
            left_out.append(f"{r.source} is left out: {why}")
        else:
            good.append(r)
    return good, left_out


def fit_corrections(model, engine, runs: list[Measurement], events: int = FIT_EVENTS
                    ) -> tuple[Calibration, list[dict], list[str]]:
    """Corrections fitted on the runs, each run's error before and after them on its held-out requests, and notes
    (runs left out, corrections refused, replays cut).

    Each run is replayed and its requests split in two (:func:`predict`). ``compute`` (prompt steps) and
    ``memory`` (decode steps) are fitted together on the first half (:func:`_fixed_point`: fitted one after the
    other, the memory factor also slowed the prompts and undid the TTFT fit, 43 % too slow on the run it came
    from); the second half judges them (:func:`_judge`): a correction that makes any run's held-out TTFT or TPOT
    worse is not applied. Refuses, in one sentence, runs it cannot fit (:class:`GpuplanError`)."""
    from .simulate import Budget

    budget = Budget(events)
    good, notes = usable(model, engine, runs)
    if not runs:
        raise GpuplanError("no run to fit: the result files hold no benchmark")
    if not good:
        raise GpuplanError(f"no run can be fitted: {'; '.join(notes)}")
    base = [predict(model, engine, r, budget) for r in good]
    chosen, after, refused = _judge(model, engine, good, base, _fixed_point(model, engine, good, base, budget),
                                    budget)
    notes += refused
    notes += [f"{r.source}: {MAX_REPLAY:,} of its {r.num_requests:,} requests replayed" for r in good
              if r.num_requests > MAX_REPLAY]
    notes += sorted({f"{r.source}: a replay {h.stopped}" for r, b, a in zip(good, base, after, strict=True)
                     for h in (b, a) if h.stopped})
    rows = []
    for r, b, a in zip(good, base, after, strict=True):
        rows.append({"run": r.source, "rate_rps": r.rate_rps, "max_concurrency": r.max_concurrency,
                     "ttft_s": r.mean_ttft_s, "tpot_s": r.mean_tpot_s,
                     "ttft_err_before_pct": _err(b.check[0], r.mean_ttft_s),
                     "ttft_err_after_pct": _err(a.check[0], r.mean_ttft_s),
                     "tpot_err_before_pct": _err(b.check[1], r.mean_tpot_s),
                     "tpot_err_after_pct": _err(a.check[1], r.mean_tpot_s)})
    source = f"{len(good)} run{'s' * (len(good) > 1)}"
    return Calibration(compute=chosen[0], memory=chosen[1], source=source), rows, notes


def _with(model, factors: tuple[float, float]):
    """``model`` with the corrections (compute, memory)."""
    from dataclasses import replace

    return replace(model, calibration=Calibration(compute=factors[0], memory=factors[1]))


def _err(predicted: float, measured: float) -> float | None:
    """Percent error of a prediction (None: the replay finished no request of that half)."""
    return 100 * (predicted / measured - 1) if math.isfinite(predicted) else None


def _fixed_point(model, engine, runs: list[Measurement], base: list[Halves], budget: Budget, rounds: int = 6
                 ) -> tuple[float, float]:
    """(compute, memory) fitted together on the runs' first halves: each round multiplies compute by the median
    over runs of measured / predicted TTFT (beyond the API server's latency, which no factor scales) and memory by
    that of TPOT, and replays the runs with both, until every median is within 1 % of 1 (or ``rounds`` rounds);
    each factor stays within :data:`BOUNDS`."""
    fixed, factors, pred = model.request_s, (1.0, 1.0), base
    for _ in range(rounds):
        ttft = [(r.mean_ttft_s - fixed) / (p.fit[0] - fixed) for r, p in zip(runs, pred, strict=True)
                if p.fit[0] > fixed]
        tpot = [r.mean_tpot_s / p.fit[1] for r, p in zip(runs, pred, strict=True) if p.fit[1] > 0]
        if not ttft or not tpot:
            break
        q = (statistics.median(ttft), statistics.median(tpot))
        if max(abs(q[0] - 1), abs(q[1] - 1)) < 0.01:
            break
        factors = tuple(min(max(f * x, BOUNDS[0]), BOUNDS[1]) for f, x in zip(factors, q, strict=True))
        pred = [predict(_with(model, factors), engine, r, budget) for r in runs]
    return factors


def _judge(model, engine, runs: list[Measurement], base: list[Halves], fitted: tuple[float, float],
           budget: Budget) -> tuple[tuple[float, float], list[Halves], list[str]]:
    """The correction applied: ``fitted`` when it makes no run's held-out TTFT or TPOT error larger than without
    a correction (:func:`_worse`); else, of its compute factor alone and its memory factor alone, the one with the
    least error on the held-out halves among those that pass; none if neither does. Returns it, the runs replayed
    with it, and a note when the fitted correction is not the one applied."""
    tried, why = [], ""
    for factors in dict.fromkeys((fitted, (fitted[0], 1.0), (1.0, fitted[1]))):
        if factors == (1.0, 1.0):
            continue
        preds = [predict(_with(model, factors), engine, r, budget) for r in runs]
        bad = _worse(preds, base, runs)
        if factors == fitted and not bad:
            return factors, preds, []
        why = why or (bad if factors == fitted else "")
        if not bad:
            error = sum(abs(p.check[i] / m - 1) for p, r in zip(preds, runs, strict=True)
                        for i, m in ((0, r.mean_ttft_s), (1, r.mean_tpot_s)))
            tried.append((error, factors, preds))
    factors, preds = min(tried, key=lambda x: x[0])[1:] if tried else ((1.0, 1.0), base)
    if factors == fitted:
        return factors, preds, []
    applied = ("no correction is applied" if factors == (1.0, 1.0) else
               f"only its {'compute' if factors[0] != 1.0 else 'memory'} factor is applied")
    return factors, preds, [f"the fitted correction (compute x{fitted[0]:.2f}, memory x{fitted[1]:.2f}) made the "
                            f"held-out {why} worse: {applied}"]


def _worse(preds: list[Halves], base: list[Halves], runs: list[Measurement]) -> str:
    """The first run whose held-out TTFT or TPOT error ``preds`` make larger than ``base`` ("": none)."""
    for p, b, r in zip(preds, base, runs, strict=True):
        for i, name, measured in ((0, "TTFT", r.mean_ttft_s), (1, "TPOT", r.mean_tpot_s)):
            if not abs(p.check[i] - measured) <= abs(b.check[i] - measured):
                return f"{name} of {r.source}"
    return ""


def save_calibration(cal: Calibration, path: str | Path, flag: str = "--out") -> None:
    """The corrections as YAML at ``path`` (checked: :func:`~gpuplan.userfiles.output_file`), whole or not at
    all; one sentence when it cannot be written."""
    write_text(output_file(path, flag), yaml.safe_dump(asdict(cal), sort_keys=False), flag)


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
