"""How many GPUs a request stream needs: for every GPU type x count x TP x quantization that fits, the highest
arrival rate that meets the SLOs, its cost per unit of goodput, and the Pareto front of cost vs latency.

A pipeline of pure stages (as recommend's): enumerate setups -> vLLM memory (does one request of the longest
length fit; how many KV blocks) -> a closed-form queueing pass (idle-engine latencies against the SLOs, and the
saturation rate of a full decode batch) that drops hopeless setups and bounds the search -> bisection on the
rate with the simulation (:mod:`.simulate`) for the most promising ones -> price on the cheapest matching offer.

Bounded: the search has :data:`SEARCH_TIME_S` wall seconds, shared out among the setups it simulates (each gets
what is left over the setups still to go), and every simulation its own bounds (:data:`.simulate.MAX_EVENTS`,
:data:`.simulate.TIME_LIMIT_S`). A setup whose simulation stopped early says so in its ``warnings`` (its rate is
then from the requests that finished: a lower bound when the run was cut short).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from .. import overheads as oh
from ..engines import vllm
from ..errors import GpuplanError
from ..hardware import GpuSpec, gpus
from ..market.choice import matching
from ..market.offers import Offer
from ..market.store import load_offers
from ..memory.fit import check_kv_cache
from ..memory.pool import KvPool
from ..model.spec import ModelSpec
from ..scenario import Scenario
from .steptime import Calibration, StepModel, step_model
from .workload import Workload

if TYPE_CHECKING:
    from .simulate import Scheduler


@dataclass(frozen=True, kw_only=True)
class Setup:
    gpu: GpuSpec
    num_gpus: int
    quant: str | None
    scenario: Scenario

    @property
    def label(self) -> str:
        q = f" {self.quant}" if self.quant else ""
        name = self.gpu.id.removeprefix("nvidia-").removeprefix("geforce-")
        return f"{self.num_gpus}x {name} tp{self.scenario.tp}{q}"


@dataclass(kw_only=True)
class RatePoint:
    rate_rps: float
    ttft_s: float
    tpot_s: float
    e2e_s: float
    output_tokens_per_s: float
    meets_slo: bool
    requests_per_s: float = 0.0  # completed in the steady window
    queue_growth: float = 0.0  # requests in the system, end of the steady window minus its start
    stable: bool = True
    users: int | None = None  # closed loop
    stopped: str = ""  # why its simulation stopped early ("": it ran to the end)


@dataclass(kw_only=True)
class Deployment:
    setup: str
    engine: str = "vllm"
    gpu_id: str
    num_gpus: int
    tp: int
    quant: str | None
    kv_tokens: int  # tokens of the workload's mean request the pool holds (memory.pool, as estimate)
    max_concurrency: int  # such requests the pool holds at once
    max_rate_rps: float
    rate_band_rps: tuple[float, float]
    bound_rate_rps: float  # closed-form saturation bound
    ttft_s: float | None = None
    tpot_s: float | None = None
    e2e_s: float | None = None
    usd_per_hour: float | None = None
    offer: str | None = None
    usd_per_million_input: float | None = None
    usd_per_million_output: float | None = None
    usd_per_1k_requests: float | None = None
    replicas_for_target: int | None = None
    replicas_per_instance: int = 1  # tensor-parallel groups one rented instance holds
    instances_for_target: int | None = None
    usd_per_hour_for_target: float | None = None
    max_users: int | None = None  # closed loop: most concurrent users one replica serves within the SLOs
    output_tokens_per_s: float | None = None  # at max_rate_rps
    ttft_alone_s: float | None = None  # one request on an idle engine (estimate's figure)
    streaming_tokens_per_s_per_user: float | None = None  # 1 / decode step at this load (estimate's figure)
    pareto: bool = False
    curve: list[RatePoint] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)  # what the user must know: a simulation that stopped early


def setups(s: Scenario, m: ModelSpec, gpu_ids: tuple[str, ...] = (), max_gpus: int = 8, any_quant: bool = False
           ) -> list[Setup]:
    """GPU type x count (1, 2, 4, 8, all tensor-parallel) x weights (as shipped; fp8 where the card has fp8
    tensor cores or vLLM runs it weight-only; awq-int4 with ``any_quant``)."""
    out = []
    quants: list[str | None] = [s.quant]
    if any_quant and s.quant is None and not m.quantization:
        quants += ["fp8", "awq-int4"]
    for gpu in gpus().values():
        if gpu_ids and gpu.id not in gpu_ids:
            continue
        if gpu.vendor != "NVIDIA" or not gpu.peak_tflops("fp16"):
            continue
        for n in (1, 2, 4, 8):
            if n > max_gpus or m.num_heads % n or (n > m.num_kv_heads and n % m.num_kv_heads):
                continue
            for q in quants:
                if q == "fp8" and not gpu.supports_dtype("fp8"):
                    continue
                precision = "bf16-true" if gpu.supports_dtype("bf16") else "fp16-true"
                sc = s.model_copy(update={"gpu": gpu.id, "num_gpus": n, "tp": n, "pp": 1, "quant": q,
                                          "engine": s.engine if s.engine == "sglang" else "vllm",
                                          "precision": precision})
                out.append(Setup(gpu=gpu, num_gpus=n, quant=q, scenario=sc))
    return out


def idle_latencies(model: StepModel, w: Workload) -> tuple[float, float]:
    """(TTFT, TPOT) of one request on an idle engine: the lower bounds of any load."""
    p, o = w.mean_prompt_tokens, w.mean_output_tokens
    return model.prefill_time(max(p - w.shared_prefix_tokens, 1)), model.time(0, 1, p + o / 2)


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
# Wall seconds one capacity search may take, all its simulations together.
SEARCH_TIME_S = 120.0


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
    (``kw``: :func:`.simulate.simulate`'s, its ``deadline`` among them)."""
    from .simulate import pool_hits, simulate

    if w.distinct_prompts:
        hits, blocks = pool_hits(prompt, w.distinct_prompts, w.shared_prefix_tokens, engine.block_tokens)
        return simulate(model, engine, arrive, prompt, output, prefix_hits=hits, cached_blocks=blocks, **kw)
    return simulate(model, engine, arrive, prompt, output, w.shared_prefix_tokens, **kw)


def saturated_rps(model: StepModel, engine, w: Workload, batch: float, deadline: float | None = None) -> RatePoint:
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
    out = _run(model, engine, w, np.zeros(n), prompt, output, users=users, rng=rng, deadline=deadline,
               until_sent=last)
    if out.stopped or out.refused or out.completed == n:  # not ended with the window: judged as a whole run
        point = _point(out, w, 0.0, n)
    else:
        start, end = float(out.sent_all[first]), float(out.sent_all[last])
        done = int(np.count_nonzero((out.finished_at >= start) & (out.finished_at <= end)))
        rps = done / (end - start) if end > start else 0.0
        point = RatePoint(rate_rps=rps, ttft_s=math.inf, tpot_s=math.inf, e2e_s=math.inf, requests_per_s=rps,
                          output_tokens_per_s=0.0, meets_slo=False)
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


def _point(out, w: Workload, rate: float, n: int) -> RatePoint:
    """The SLO percentiles and throughput of the steady window of ``out``."""
    import numpy as np

    keep, start, end = _judged(out)
    q = w.slo.percentile
    pick = lambda x: float(np.percentile(x[keep], q)) if len(keep) else math.inf  # noqa: E731
    ttft, tpot, e2e = pick(out.ttft_s), pick(out.tpot_s), pick(out.e2e_s)
    done = (out.finished_at >= start) & (out.finished_at <= end)
    span = end - start
    rps = float(done.sum() / span) if span > 0 else rate
    slo = w.slo
    meets = out.completed == n and (slo.ttft_s is None or ttft <= slo.ttft_s) and \
        (slo.tpot_s is None or tpot <= slo.tpot_s) and (slo.e2e_s is None or e2e <= slo.e2e_s)
    return RatePoint(rate_rps=rate, ttft_s=ttft, tpot_s=tpot, e2e_s=e2e, requests_per_s=rps,
                     output_tokens_per_s=rps * out.output_tokens / max(out.completed, 1), meets_slo=bool(meets))


def evaluate(model: StepModel, engine, w: Workload, rate: float, saturated: float | None = None,
             deadline: float | None = None) -> RatePoint:
    """Simulate ``w.num_requests`` requests arriving at ``rate``; the SLO percentiles of the steady window, and
    whether the rate is a steady state at all (below :data:`STABLE_LOAD` of ``saturated``, the engine's
    :func:`saturated_rps`, and a queue that does not grow). A run stopped early (``deadline``, the simulation's
    bounds) does not meet the SLOs and says why in ``stopped``."""
    import numpy as np

    from .simulate import arrivals

    rng = np.random.default_rng(w.seed)
    n = w.num_requests
    prompt, output = _requests(w, n, rng)
    out = _run(model, engine, w, arrivals(rate, n, w.burstiness, rng), prompt, output, deadline=deadline)
    point = _point(out, w, rate, n)
    point.stopped = out.stopped
    keep, _, _ = _judged(out)
    point.queue_growth = queue_growth(out)
    point.stable = bool(point.queue_growth <= max(3.0, QUEUE_GROWTH_SHARE * len(keep))
                        and (saturated is None or rate <= STABLE_LOAD * saturated))
    point.meets_slo = bool(point.meets_slo and point.stable)
    return point


def evaluate_users(model: StepModel, engine, w: Workload, users: int, think_s: float = 0.0,
                   deadline: float | None = None) -> RatePoint:
    """Closed loop: ``users`` clients, each sending its next request ``think_s`` (exponential mean) after its
    last one finished; the SLO percentiles and the requests/s of the steady window (a closed loop cannot
    overload: its queue holds at most ``users``). ``stopped``: as :func:`evaluate`."""
    import numpy as np

    rng = np.random.default_rng(w.seed)
    n = max(w.num_requests, 5 * users)
    prompt, output = _requests(w, n, rng)
    out = _run(model, engine, w, np.zeros(n), prompt, output, users=users, think_s=think_s, rng=rng,
               deadline=deadline)
    point = _point(out, w, 0.0, n)
    point.stopped = out.stopped
    point.rate_rps = point.requests_per_s
    point.users = users
    return point


def max_rate(model: StepModel, engine, w: Workload, upper: float, batch: float = 1.0, iterations: int = 5,
             deadline: float | None = None) -> tuple[float, list, list[str]]:
    """Highest steady rate meeting the SLOs, by bisection in ``(0, STABLE_LOAD x saturated]``, the saturated
    throughput found by simulation from the closed-form rate ``upper`` and ``batch`` (5 halvings: within 3 % of
    the top of the range, well inside the rate band of the accuracy table). Also returns why simulations stopped
    early, if any did (``deadline``: when all of them must end)."""
    sat = saturated_rps(model, engine, w, batch, deadline)
    saturated = sat.requests_per_s or upper
    curve = []
    lo, hi = 0.0, STABLE_LOAD * saturated
    point = evaluate(model, engine, w, hi, saturated, deadline)
    curve.append(point)
    if not point.meets_slo:
        for _ in range(iterations):
            mid = (lo + hi) / 2
            point = evaluate(model, engine, w, mid, saturated, deadline)
            curve.append(point)
            lo, hi = (mid, hi) if point.meets_slo else (lo, mid)
        hi = lo
    stops = [f"saturation run {sat.stopped}"] * bool(sat.stopped) + \
        [f"run at {p.rate_rps:.3g} req/s {p.stopped}" for p in curve if p.stopped]
    return hi, sorted(curve, key=lambda p: p.rate_rps), stops


def max_users(model: StepModel, engine, w: Workload, users: int, think_s: float, deadline: float | None = None
              ) -> tuple[int, list, list[str]]:
    """Most concurrent users (at most ``users``) whose requests meet the SLOs, by bisection; and why simulations
    stopped early, if any did."""
    curve = []
    point = evaluate_users(model, engine, w, users, think_s, deadline)
    curve.append(point)
    lo = users
    if not point.meets_slo:
        lo, hi = 0, users
        while hi - lo > 1:
            mid = (lo + hi) // 2
            point = evaluate_users(model, engine, w, mid, think_s, deadline)
            curve.append(point)
            lo, hi = (mid, hi) if point.meets_slo else (lo, mid)
    stops = [f"run with {p.users:,} users {p.stopped}" for p in curve if p.stopped]
    return lo, sorted(curve, key=lambda p: p.users or 0), stops


def cheapest_offer(s: Scenario, offers: list[Offer], gpu_id: str) -> tuple[float, str, int] | None:
    """The cheapest instance that holds one tensor-parallel group of ``s`` whole (a group never spans rented
    instances: its all-reduces need the node's links): (the instance's $/h, its label with the GPUs rented,
    groups it holds). Providers that rent any pod size up to a node (``max_per_node``) rent the group's size."""
    from dataclasses import replace

    group = s.tp * s.pp
    rows = []
    for o in matching(offers, s, gpu_id):
        size = max(o.gpu_count, group)
        rows.append((size * o.usd_per_gpu_hour, replace(o, gpu_count=size).label, size // group))
    return min(rows) if rows else None


def _within_context(w: Workload, m: ModelSpec) -> None:
    """Refuse a workload whose mean request (prompt + output) is longer than the model's context: no engine would
    accept its requests (and none would finish in the simulation)."""
    mean = w.mean_prompt_tokens + w.mean_output_tokens
    if m.max_context and mean > m.max_context:
        raise GpuplanError(f"the workload's requests average {mean:,.0f} tokens ({w.mean_prompt_tokens:,.0f} prompt "
                           f"+ {w.mean_output_tokens:,.0f} output), more than {m.name}'s context of "
                           f"{m.max_context:,} tokens: shorten them")


def _longest(w: Workload, m: ModelSpec) -> int:
    """The longest request of the workload (prompt + output), within the model's context: vLLM's max_model_len."""
    def top(d):
        return d.max if d.kind != "fixed" else d.mean

    longest = int(max(top(w.prompt_lengths()), w.mean_prompt_tokens) + max(top(w.output_lengths()),
                                                                            w.mean_output_tokens))
    if m.position_params and m.max_context and longest > m.max_context:  # as fit.check refuses it
        raise GpuplanError(f"{m.name} learns {m.max_context:,} positions (a position-embedding table, no RoPE to "
                           f"extend): the workload's requests of up to {longest:,} tokens index past it; shorten "
                           "its prompts or outputs")
    return min(longest, m.max_context or longest)


@dataclass(frozen=True)
class ServingMemory:
    """What a setup's engine holds at startup, as the search needs it: the KV pool (:mod:`gpuplan.memory.pool`)
    and the scheduler the simulation runs over it."""

    pool: KvPool
    engine: Scheduler


def engine_memory(sc: Scenario, m: ModelSpec, gpu: GpuSpec, longest: int) -> ServingMemory | None:
    """The KV pool and scheduler of ``sc``'s engine on ``gpu``; None when one request of ``longest`` tokens
    does not fit. vLLM: its startup rules and V1 scheduler (:func:`.simulate.vllm_scheduler`). SGLang: its token
    pool (``max_total_num_tokens``) and scheduler (:func:`.simulate.sglang_scheduler`: prefill batches of
    ``chunked_prefill_size`` before decodes, ``max_running_requests``, one-token pages); its radix cache serves
    the workload's shared prefix and repeated prompts (other reuse, such as multi-turn history, is not modelled)."""
    from ..memory.pool import sglang_pool, vllm_pool
    from .simulate import sglang_scheduler, vllm_scheduler

    if sc.engine == "sglang":
        from ..engines import sglang

        sm = sglang.startup_memory(sc, m, gpu, mem_fraction_static=sc.mem_fraction_static)
        if sm.kv_tokens < longest:
            return None
        return ServingMemory(pool=sglang_pool(sc, sm), engine=sglang_scheduler(sm))
    mem = vllm.startup_memory(sc, m, gpu)
    if mem.num_blocks <= 0 or not mem.fits_max_model_len:
        return None
    pool = vllm_pool(sc, m, mem)
    return ServingMemory(pool=pool, engine=vllm_scheduler(sc, mem, blocks=pool.sim_blocks))


def capacity(s: Scenario, m: ModelSpec, w: Workload, *, gpu_ids: tuple[str, ...] = (), max_gpus: int = 8,
             any_quant: bool = False, simulate_top: int = 6, calibration: Calibration | None = None,
             catalogs: tuple[str, ...] = (), time_limit_s: float = SEARCH_TIME_S) -> list[Deployment]:
    """Plans ranked by what the target costs (the workload's rate or users: whole instances), else by cost per
    request at their highest SLO-meeting load (unpriced setups last). The simulations share ``time_limit_s``
    wall seconds (see the module docstring)."""
    check_kv_cache(s)
    simulated = [g for g in gpus().values() if g.vendor == "NVIDIA" and g.peak_tflops("fp16")]  # as setups()
    if gpu_ids and not any(g.id in gpu_ids for g in simulated):
        raise GpuplanError(f"capacity simulates vLLM and SGLang on NVIDIA GPUs only (their step model is measured "
                           f"there), not on {', '.join(gpu_ids)}: name NVIDIA cards, or leave --gpus out")
    offers = load_offers(catalogs)
    w = with_scenario_prefix(w, s)
    longest = _longest(w, m)
    _within_context(w, m)
    candidates = []
    prompt = round(w.mean_prompt_tokens)
    for st in setups(s, m, gpu_ids, max_gpus, any_quant):
        sc = st.scenario.model_copy(update={
            "max_model_len": st.scenario.max_model_len or longest, "prompt_tokens": prompt,
            "output_tokens": round(w.mean_output_tokens), "batch_size": w.users or st.scenario.batch_size,
            "shared_prefix_tokens": max(min(w.shared_prefix_tokens, prompt - 1), 0)})
        try:
            mem = engine_memory(sc, m, st.gpu, longest)
        except (ValueError, ZeroDivisionError):
            continue
        if mem is None:
            continue
        model = step_model(sc, m, st.gpu, calibration=calibration)
        ttft0, tpot0 = idle_latencies(model, w)
        slo = w.slo
        if (slo.ttft_s and ttft0 > slo.ttft_s) or (slo.tpot_s and tpot0 > slo.tpot_s) or \
                (slo.e2e_s and ttft0 + tpot0 * w.mean_output_tokens > slo.e2e_s):
            continue
        bound = saturation_rate(model, w, mem.pool.kv_tokens, mem.engine.max_num_seqs,
                                mem.engine.max_num_batched_tokens, mem.engine.mixed_prefill)  # (rate, batch)
        price = cheapest_offer(sc, offers, st.gpu.id)
        candidates.append((st, sc, mem, model, bound, price))
    # closed-form cost per request decides which setups get simulated
    candidates.sort(key=lambda c: (c[5] is None, (c[5][0] / c[5][2] if c[5] else 0) / c[4][0]))
    chosen, start, plans = candidates[:simulate_top], time.monotonic(), []
    for i, (st, sc, mem, model, bound, price) in enumerate(chosen):  # each the time left over the setups to go
        now = time.monotonic()
        deadline = now + max(time_limit_s - (now - start), 0.0) / (len(chosen) - i)
        plans.append(_plan(st, sc, mem, model, bound, price, w, m, deadline))
    plans.sort(key=_rank)
    _mark_pareto(plans)
    return plans


def with_scenario_prefix(w: Workload, s: Scenario) -> Workload:
    """The workload with the scenario's ``shared_prefix_tokens`` where the workload does not say its own (the
    ``--shared-prefix`` flag or the workload file's field win): one scenario, one prefix in every command."""
    if "shared_prefix_tokens" in w.model_fields_set or not s.shared_prefix_tokens:
        return w
    return w.model_copy(update={"shared_prefix_tokens": s.shared_prefix_tokens})


def _plan(st: Setup, sc: Scenario, mem, model: StepModel, bound: tuple[float, float], price, w: Workload,
          m: ModelSpec, deadline: float | None = None) -> Deployment:
    """One setup simulated (by ``deadline``): its highest steady load meeting the SLOs, priced on whole
    instances; the KV pool and the idle-engine speeds from the functions estimate uses (one scenario, one set of
    numbers)."""
    from ..speed.inference import inference_speed

    pool, engine = mem.pool, mem.engine
    low, high = oh.SERVING_RATE_BAND
    plan = Deployment(setup=st.label, engine=sc.engine, gpu_id=st.gpu.id, num_gpus=st.num_gpus, tp=sc.tp,
                      quant=st.quant, kv_tokens=pool.kv_tokens, max_concurrency=pool.max_concurrency,
                      max_rate_rps=0.0, rate_band_rps=(0.0, 0.0), bound_rate_rps=bound[0])
    if w.users:
        plan.max_users, plan.curve, stops = max_users(model, engine, w, w.users, w.think_s, deadline)
        at = [p for p in plan.curve if p.meets_slo and p.users == plan.max_users]
    else:
        rate, plan.curve, stops = max_rate(model, engine, w, *bound, deadline=deadline)
        at = [p for p in plan.curve if p.meets_slo and p.rate_rps <= rate]
    if stops:
        plan.warnings.append(f"{st.label}: {len(stops)} of its simulations stopped early ({stops[0]}), so its "
                             "figures count only the requests that finished")
    if at:
        best = max(at, key=lambda p: p.rate_rps)
        plan.ttft_s, plan.tpot_s, plan.e2e_s = best.ttft_s, best.tpot_s, best.e2e_s
        plan.max_rate_rps = best.rate_rps if w.users else rate
        # an engine that keeps up completes what arrives: the rate x the mean output (the short simulated window
        # counts fewer completions while the queue fills, 10-20 % below the rate the row states)
        plan.output_tokens_per_s = plan.max_rate_rps * w.mean_output_tokens
    plan.rate_band_rps = (plan.max_rate_rps * low, plan.max_rate_rps * high)
    rate = plan.max_rate_rps
    # estimate's figures for this load: TTFT alone, streaming speed with as many requests decoding (users, or
    # Little's law: rate x end-to-end latency)
    busy = (plan.max_users or w.users) if w.users else max(1, round(rate * (plan.e2e_s or 0.0)))
    speed = inference_speed(sc.model_copy(update={"batch_size": busy}), m, st.gpu)
    # the shared prefix rides in sc: TTFT alone starts after the cached part, as estimate's does
    plan.ttft_alone_s, plan.streaming_tokens_per_s_per_user = speed.ttft_s, speed.streaming_tokens_per_s_per_user
    if w.users and plan.max_users:
        plan.replicas_for_target = math.ceil(w.users / plan.max_users)
    elif w.rate_rps and rate > 0:
        plan.replicas_for_target = math.ceil(w.rate_rps / rate)
    if price and rate > 0:
        per_hour, label, groups = price
        plan.usd_per_hour, plan.offer, plan.replicas_per_instance = per_hour, label, groups
        per_s = per_hour / groups / 3600  # one replica's share of the instance
        plan.usd_per_million_input = per_s / (rate * w.mean_prompt_tokens) * 1e6
        plan.usd_per_million_output = per_s / (rate * w.mean_output_tokens) * 1e6
        plan.usd_per_1k_requests = per_s / rate * 1000
        if plan.replicas_for_target:
            plan.instances_for_target = math.ceil(plan.replicas_for_target / groups)
            plan.usd_per_hour_for_target = plan.instances_for_target * per_hour
    return plan


def _rank(p: Deployment) -> tuple:
    if p.usd_per_hour_for_target is not None:
        return (0, p.usd_per_hour_for_target, p.usd_per_1k_requests or 0, -p.max_rate_rps)
    return (1 if p.usd_per_1k_requests is not None else 2, p.usd_per_1k_requests or 0, -p.max_rate_rps)


def _mark_pareto(plans: list[Deployment]) -> None:
    """Pareto front of cost per request vs the SLO-percentile TTFT at the plan's rate (lower is better)."""
    priced = [p for p in plans if p.usd_per_1k_requests is not None and p.ttft_s is not None]
    for p in priced:
        p.pareto = not any(q is not p and q.usd_per_1k_requests <= p.usd_per_1k_requests and q.ttft_s <= p.ttft_s
                           and (q.usd_per_1k_requests < p.usd_per_1k_requests or q.ttft_s < p.ttft_s)
                           for q in priced)


def shown(plans: list[Deployment]) -> list[dict]:
    """What the listing shows, one dict per plan (the json format prints these)."""
    return [{"setup": p.setup, "engine": p.engine, "pareto": p.pareto, "max_users": p.max_users,
             "max_rate_rps": p.max_rate_rps,
             "rate_band_rps": list(p.rate_band_rps), "output_tokens_per_s": p.output_tokens_per_s,
             "ttft_s": p.ttft_s, "tpot_s": p.tpot_s, "e2e_s": p.e2e_s,
             "streaming_tokens_per_s_per_user": p.streaming_tokens_per_s_per_user, "ttft_alone_s": p.ttft_alone_s,
             "kv_tokens": p.kv_tokens, "max_concurrency": p.max_concurrency,
             "gpu_id": p.gpu_id, "num_gpus": p.num_gpus, "tp": p.tp, "quant": p.quant, "offer": p.offer,
             "usd_per_hour": p.usd_per_hour, "replicas_per_instance": p.replicas_per_instance,
             "usd_per_million_input": p.usd_per_million_input, "usd_per_million_output": p.usd_per_million_output,
             "usd_per_1k_requests": p.usd_per_1k_requests, "replicas_for_target": p.replicas_for_target,
             "instances_for_target": p.instances_for_target, "usd_per_hour_for_target": p.usd_per_hour_for_target,
             "warnings": list(p.warnings)}
            for p in plans]
