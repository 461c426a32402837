"""The rate one serving setup sustains within its SLOs: the closed-form bounds (the latencies on an idle engine, the
saturation rate of a full decode batch) and the simulations that judge a rate or a number of users (:mod:`.simulate`,
judged on the steady window after warm-up), with the bisections on them. The search over setups that uses these,
and its rows (plans), are :mod:`gpuplan.plan.capacity`'s.

Bounded: every simulation has its own bounds (:data:`.simulate.MAX_STEPS`, :data:`.simulate.MAX_EVENTS`) and the
search's ``budget`` of events (:class:`.simulate.Budget`: work, never wall seconds, so an answer does not move with
the machine's load); a run stopped early says why in its ``stopped``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

from .steptime import StepModel
from .workload import Workload

if TYPE_CHECKING:
    from .simulate import Budget


@dataclass(kw_only=True)
class RatePoint:
    rate_rps: float
    ttft_s: float
    tpot_s: float | None  # None: no request of the window streamed a second token (vllm bench serve's output_len > 1)
    e2e_s: float
    output_tokens_per_s: float
    meets_slo: bool
    requests_per_s: float = 0.0  # completed in the steady window
    queue_growth: float = 0.0  # requests in the system, end of the steady window minus its start
    stable: bool = True
    users: int | None = None  # closed loop
    stopped: str = ""  # why its simulation stopped early ("": it ran to the end)
    lifetime_s: float = 0.0  # saturated run: mean first-to-last-token time of the requests it completed
    e2e_mean_s: float = 0.0  # the mean end-to-end latency of the judged requests (Little's law's W; e2e_s is the
    # SLO percentile's)



def idle_latencies(model: StepModel, w: Workload) -> tuple[float, float]:
    """(TTFT, TPOT) of one request on an idle engine: the lower bounds of any load. The TTFT is a user's, as the
    simulation's: the prefill plus the engine's latency per request outside its steps (``request_s``)."""
    p, o = w.mean_prompt_tokens, w.mean_output_tokens
    return model.prefill_time(max(p - w.shared_prefix_tokens, 1)) + model.request_s, model.time(0, 1, p + o / 2)


def saturation_rate(model: StepModel, w: Workload, kv_tokens: int, max_num_seqs: int,
                    max_num_batched_tokens: int = 8192, mixed: bool = True) -> tuple[float, float]:
    """Requests/s a full engine completes (closed form, no queueing): ``B`` sequences decode together, as many
    as the KV pool (at the mean half-generated length, beside one copy of a shared prefix) and ``max_num_seqs``
    allow; while one generates its
    ``o`` tokens, ``B`` new prompts of ``p`` tokens are prefilled in chunks riding the same steps (chunked
    prefill), ``B p / o`` prompt tokens a step within the step's token budget. Not ``mixed`` (SGLang): the
    prompts run in prefill steps of their own of up to the budget, each decode step bearing its share of them.
    Returns the throughput ``B / (o x step)`` and ``B``."""
    p, o = w.mean_prompt_tokens, max(w.mean_output_tokens, 1.0)
    fresh = max(p - w.shared_prefix_tokens, 1.0)
    held = p - fresh  # the shared prefix, held once in the pool beside every request's own tokens
    batch = max(1.0, min(max_num_seqs, (kv_tokens - held) / (fresh + o / 2)))
    chunk = batch * fresh / o
    if not mixed:
        full = float(max_num_batched_tokens)
        prefill = model.time(full, 0, 0, full * (p / 2), max(full / fresh, 1.0))
        return batch / (o * (model.time(0, batch, batch * (p + o / 2)) + chunk / full * prefill)), batch
    if chunk + batch > max_num_batched_tokens:  # the budget caps the batch: shrink it until the chunk fits
        batch = max(1.0, max_num_batched_tokens / (1 + fresh / o))
        chunk = batch * fresh / o
    pairs = chunk * (p / 2)  # each prompt token attends to half its prompt on average
    step = model.time(chunk, batch, batch * (p + o / 2), pairs, min(batch, max(chunk / fresh, 1.0)))
    return batch / (o * step), batch


# A finite run starts on an idle engine and ends by draining it: neither end is the steady state. SLOs and
# throughput are judged on the requests sent after the first WARMUP_SHARE and before the last COOLDOWN_SHARE of
# the run (a queue's start-up transient; the last requests decode in a thinning batch).
WARMUP_SHARE, COOLDOWN_SHARE = 0.2, 0.1
# Open loop: a rate is a steady state only below STABLE_LOAD of the engine's saturated throughput (an M/D/1
# queue at 97 % load waits 16 service times on average: any latency target fails there first), and, a second
# guard, when the number of requests in the system does not climb over the judged window by more than
# QUEUE_GROWTH_SHARE of the requests sent in it: an overloaded queue climbs by (1 - capacity/rate) per request
# sent, while a stable one still drifts up by some as its batch grows to its steady size (a few percent of a
# 600-request run at high load: public runs of bench/serving/capacity_accuracy.py).
STABLE_LOAD, QUEUE_GROWTH_SHARE = 0.97, 0.10
# An open-loop run fills its batch over about one request lifetime W (the in-flight count of an M/G/infinity
# queue reaches its steady lambda x W once the oldest request still running was sent after the start), longer
# when each added request slows the step and so lengthens W. A run of n requests at rate lambda judges only what
# it sends after WARMUP_SHARE x n / lambda seconds, so a rate point sends at least RUN_LIFETIMES x lambda x W
# requests (Little's law: that many times the requests in flight): a warm-up of 2 lifetimes and a judged window
# of 7. W is the saturated run's (first token to last, in a full batch), the longest below saturation. A fixed
# count cannot do: 600 requests at 12.5 req/s last 48 s, and MLPerf's Llama-2-70B requests live 36 s on an H200.
# With 6 lifetimes the queue-growth test at 97 % load was a coin flip on bench/serving/capacity_accuracy.py's
# ~1 s requests (saturated runs: median 11.6 %, against 1.6 % with 10 and 3.1 % with the fixed 600). MLPerf's
# loadgen also sizes a Server run by time as well as count (mlcommons/inference mlperf.conf,
# ``*.Server.min_duration`` beside ``min_query_count``; the Llama-2-70B runs of bench/data/mlperf-server.csv last
# 600-2,400 s, 17-67 lifetimes). MAX_RUN_REQUESTS bounds a run, beside the simulation's own bounds: SGLang's
# batch of thousands of 2,048-token requests (Qwen2.5-0.5B, preset generate: 2,400 in flight) gets 4 lifetimes,
# and its rates found did not move from 20,000 requests down to 6,000 (bench/serving/capacity_speed.py).
RUN_LIFETIMES, MAX_RUN_REQUESTS = 10, 10_000


def run_requests(w: Workload, rate: float, lifetime_s: float) -> int:
    """Requests one open-loop rate point simulates: ``w.num_requests``, or more, to cover :data:`RUN_LIFETIMES`
    request lifetimes of ``lifetime_s`` at ``rate``, up to :data:`MAX_RUN_REQUESTS`."""
    need = RUN_LIFETIMES * rate * lifetime_s if math.isfinite(rate * lifetime_s) else 0.0
    return max(w.num_requests, min(math.ceil(need), MAX_RUN_REQUESTS))


def _requests(w: Workload, n: int, rng):
    import numpy as np

    from .workload import read_trace, sample_lengths

    if w.trace:
        ins, outs, _, _ = read_trace(w.trace)
        pick = rng.integers(0, len(ins), n)
        return np.asarray(ins)[pick], np.asarray(outs)[pick]
    return sample_lengths(w.prompt_lengths(), n, rng), sample_lengths(w.output_lengths(), n, rng)


def _run(model: StepModel, engine, w: Workload, arrive, prompt, output, **kw):
    """The simulation of ``w``'s requests: its shared prefix, or the prefix hits of its pool of distinct prompts
    (``kw``: :func:`.simulate.simulate`'s, its ``budget`` among them)."""
    from .simulate import pool_hits, simulate

    if w.distinct_prompts:
        hits, blocks = pool_hits(prompt, w.distinct_prompts, w.shared_prefix_tokens, engine.block_tokens)
        return simulate(model, engine, arrive, prompt, output, prefix_hits=hits, cached_blocks=blocks, **kw)
    return simulate(model, engine, arrive, prompt, output, w.shared_prefix_tokens, **kw)


def saturated_rps(model: StepModel, engine, w: Workload, batch: float, budget: Budget | None = None) -> RatePoint:
    """Requests/s the engine completes with a queue that never empties: a closed loop of twice the closed-form
    ``batch`` users (:func:`saturation_rate`), each sending its next request as its last one finishes, over the
    steady window (as :func:`evaluate_users`; ``requests_per_s``, and ``stopped`` if the run was cut short). A
    closed loop rather than a burst at time zero or an overload of arrivals: a burst admits a whole batch at once,
    whose requests of equal length then finish together in waves, and an overload run's window is short next to a
    request's life; both miscount the rate.

    The simulation ends with the window (its last send): what comes after, the last tenth of the requests and the
    drain, changes no completion inside it, so the rate is the one of the whole run, a quarter of its events
    sooner (the closed loop sends in request order, so the window's sends are known by index)."""
    import numpy as np

    users = max(int(2 * batch), int(batch) + 16)
    rng = np.random.default_rng(w.seed)
    n = max(w.num_requests, 5 * users)
    prompt, output = _requests(w, n, rng)
    first = int(WARMUP_SHARE * n)
    last = max(int((1 - COOLDOWN_SHARE) * n), first + 1) - 1
    out = _run(model, engine, w, np.zeros(n), prompt, output, users=users, rng=rng, budget=budget,
               until_sent=last)
    if out.stopped or out.refused or out.completed == n:  # not ended with the window: judged as a whole run
        point = _point(out, w, 0.0, n)
        done = _judged(out)[0]
    else:
        start, end = float(out.sent_all[first]), float(out.sent_all[last])
        done = (out.finished_at >= start) & (out.finished_at <= end)
        rps = int(np.count_nonzero(done)) / (end - start) if end > start else 0.0
        point = RatePoint(rate_rps=rps, ttft_s=math.inf, tpot_s=math.inf, e2e_s=math.inf, requests_per_s=rps,
                          output_tokens_per_s=0.0, meets_slo=False)
    decode = (out.e2e_s - out.ttft_s)[done]
    point.lifetime_s = float(decode.mean()) if len(decode) else 0.0
    point.rate_rps, point.users, point.stopped = point.requests_per_s, users, out.stopped
    return point


def _judged(out) -> tuple:
    """Indices of the completed requests in the steady window, and the window's (start, end) send times (none and
    (0, 0) when no request completed: every one longer than the pool, or the run stopped before the first)."""
    import numpy as np

    order = np.argsort(out.sent_at, kind="stable")
    k = len(order)
    if not k:
        return order, 0.0, 0.0
    keep = order[int(WARMUP_SHARE * k):max(int((1 - COOLDOWN_SHARE) * k), int(WARMUP_SHARE * k) + 1)]
    return keep, float(out.sent_at[keep].min()), float(out.sent_at[keep].max())


def steady_requests_per_s(out) -> float | None:
    """Requests/s the run ``out`` completed over its steady window (:func:`_judged`: after the warm-up, before the
    drain), as every rate and user point is judged (:func:`_point`); None where the window is empty. ``estimate
    --users`` prices its run on it, so that it and ``capacity`` say one figure for one setup at one load: before,
    estimate priced the whole run (its ramp and its drain, where the last requests decode in a thinning batch), and
    Qwen3-30B-A3B on an H100 for 50 chat users read 9.82 requests/s and $0.20 per million output tokens there
    against capacity's 11.14 and $0.158 (session 24's walk)."""
    keep, start, end = _judged(out)
    if not len(keep) or end <= start:
        return None
    done = (out.finished_at >= start) & (out.finished_at <= end)
    return float(done.sum() / (end - start))


def queue_growth(out) -> float:
    """How many more requests are in the system (sent, not finished) at the end of the steady window than at
    its start, by a least-squares line through the count at each send."""
    import numpy as np

    keep, _, _ = _judged(out)
    sends, ends = np.sort(out.sent_at), np.sort(out.finished_at)
    at = np.sort(out.sent_at[keep])
    count = np.searchsorted(sends, at, side="right") - np.searchsorted(ends, at, side="right")
    if len(at) < 3 or at[-1] <= at[0]:
        return 0.0
    slope = np.polyfit(at, count, 1)[0]
    return float(slope * (at[-1] - at[0]))


def queue_grows(out) -> tuple[bool, float]:
    """Whether an open-loop run's queue grows over its steady window (:func:`queue_growth` above
    :data:`QUEUE_GROWTH_SHARE` of the requests judged, or 3): the rate is past what the engine serves, and each
    request waits longer than the last. The test of every rate point (:func:`evaluate`) and of ``estimate --rate``'s
    run (:func:`gpuplan.serving.load.summary`); with the growth, in requests."""
    keep, _, _ = _judged(out)
    growth = queue_growth(out)
    return growth > max(3.0, QUEUE_GROWTH_SHARE * len(keep)), growth


def _streamed_tpot(tpot, q: int) -> float | None:
    """The ``q``-th percentile TPOT of the requests that streamed more than one token, as ``vllm bench serve``
    reports it (vllm/benchmarks/serve.py ``calculate_metrics``: a request's TPOT joins ``tpots`` only when its
    ``output_len > 1``; ``estimate --users`` reads its runs so, serving/load.py ``summary``); None when none did (a
    prompt-only trace, ``output_length: 0``): no time between tokens to report, and none to miss an SLO by. Before,
    the percentile took such requests at 0 ms, so a prompt-only trace read "p95 TPOT 0 ms"."""
    import numpy as np

    streamed = tpot[tpot > 0]
    return float(np.percentile(streamed, q)) if len(streamed) else None


def _point(out, w: Workload, rate: float, n: int) -> RatePoint:
    """The SLO percentiles and throughput of the steady window of ``out``."""
    import numpy as np

    keep, _, _ = _judged(out)
    q = w.slo.percentile
    pick = lambda x: float(np.percentile(x[keep], q)) if len(keep) else math.inf  # noqa: E731
    ttft, e2e = pick(out.ttft_s), pick(out.e2e_s)
    tpot = _streamed_tpot(out.tpot_s[keep], q) if len(keep) else math.inf
    steady = steady_requests_per_s(out)
    rps = rate if steady is None else steady
    slo = w.slo
    meets = out.completed == n and (slo.ttft_s is None or ttft <= slo.ttft_s) and \
        (slo.tpot_s is None or tpot is None or tpot <= slo.tpot_s) and (slo.e2e_s is None or e2e <= slo.e2e_s)
    return RatePoint(rate_rps=rate, ttft_s=ttft, tpot_s=tpot, e2e_s=e2e, requests_per_s=rps,
                     output_tokens_per_s=rps * out.output_tokens / max(out.completed, 1), meets_slo=bool(meets),
                     e2e_mean_s=float(out.e2e_s[keep].mean()) if len(keep) else 0.0)


def evaluate(model: StepModel, engine, w: Workload, rate: float, saturated: float | None = None,
             budget: Budget | None = None, lifetime_s: float = 0.0) -> RatePoint:
    """Simulate requests arriving at ``rate`` (as many as :func:`run_requests` asks for requests that live
    ``lifetime_s``); the SLO percentiles of the steady window, and
    whether the rate is a steady state at all (below :data:`STABLE_LOAD` of ``saturated``, the engine's
    :func:`saturated_rps`, and a queue that does not grow). A run stopped early (its ``budget`` spent, the simulation's
    bounds) does not meet the SLOs and says why in ``stopped``."""
    import numpy as np

    from .simulate import arrivals

    rng = np.random.default_rng(w.seed)
    n = run_requests(w, rate, lifetime_s)
    prompt, output = _requests(w, n, rng)
    out = _run(model, engine, w, arrivals(rate, n, w.burstiness, rng), prompt, output, budget=budget)
    point = _point(out, w, rate, n)
    point.stopped = out.stopped
    grows, point.queue_growth = queue_grows(out)
    point.stable = bool(not grows and (saturated is None or rate <= STABLE_LOAD * saturated))
    point.meets_slo = bool(point.meets_slo and point.stable)
    return point


def evaluate_users(model: StepModel, engine, w: Workload, users: int, think_s: float = 0.0,
                   budget: Budget | None = None, users_wait: bool = True) -> RatePoint:
    """Closed loop: ``users`` clients, each sending its next request ``think_s`` (exponential mean) after its
    last one finished, received the API server's latency later (``users_wait``, :func:`.simulate.simulate`); the
    SLO percentiles and the requests/s of the steady window (a closed loop cannot overload: its queue holds at most
    ``users``). ``stopped``: as :func:`evaluate`."""
    import numpy as np

    rng = np.random.default_rng(w.seed)
    n = max(w.num_requests, 5 * users)
    prompt, output = _requests(w, n, rng)
    out = _run(model, engine, w, np.zeros(n), prompt, output, users=users, think_s=think_s, rng=rng,
               budget=budget, users_wait=users_wait)
    point = _point(out, w, 0.0, n)
    point.stopped = out.stopped
    point.rate_rps = point.requests_per_s
    point.users = users
    return point


def max_rate(model: StepModel, engine, w: Workload, upper: float, batch: float = 1.0, iterations: int = 5,
             budget: Budget | None = None) -> tuple[float, list, list[str]]:
    """Highest steady rate meeting the SLOs, by bisection in ``(0, STABLE_LOAD x saturated]``, the saturated
    throughput found by simulation from the closed-form rate ``upper`` and ``batch`` (5 halvings: within 3 % of
    the top of the range, well inside the rate band of the accuracy table). Also returns why simulations stopped
    early, if any did (``budget``: the events all of them share)."""
    sat = saturated_rps(model, engine, w, batch, budget)
    saturated = sat.requests_per_s or upper
    lifetime = sat.lifetime_s  # a request's life in a full batch (for run_requests)
    curve = []
    lo, hi = 0.0, STABLE_LOAD * saturated
    point = evaluate(model, engine, w, hi, saturated, budget, lifetime)
    curve.append(point)
    if not point.meets_slo:
        for _ in range(iterations):
            mid = (lo + hi) / 2
            point = evaluate(model, engine, w, mid, saturated, budget, lifetime)
            curve.append(point)
            lo, hi = (mid, hi) if point.meets_slo else (lo, mid)
        hi = lo
    stops = [f"saturation run {sat.stopped}"] * bool(sat.stopped) + \
        [f"run at {p.rate_rps:.3g} req/s {p.stopped}" for p in curve if p.stopped]
    return hi, sorted(curve, key=lambda p: p.rate_rps), stops


def max_users(model: StepModel, engine, w: Workload, users: int, think_s: float, budget: Budget | None = None
              ) -> tuple[int, list, list[str]]:
    """Most concurrent users (at most ``users``) whose requests meet the SLOs, by bisection; and why simulations
    stopped early, if any did."""
    curve = []
    point = evaluate_users(model, engine, w, users, think_s, budget)
    curve.append(point)
    lo = users
    if not point.meets_slo:
        lo, hi = 0, users
        while hi - lo > 1:
            mid = (lo + hi) // 2
            point = evaluate_users(model, engine, w, mid, think_s, budget)
            curve.append(point)
            lo, hi = (mid, hi) if point.meets_slo else (lo, mid)
    stops = [f"run with {p.users:,} users {p.stopped}" for p in curve if p.stopped]
    return lo, sorted(curve, key=lambda p: p.users or 0), stops
