"""How many GPUs a request stream needs: for every GPU type x count x TP x quantization that fits, the highest
arrival rate that meets the SLOs, its cost per unit of goodput, and the Pareto front of cost vs latency.

A pipeline of pure stages (as recommend's): enumerate setups -> vLLM memory (does one request of the longest
length fit; how many KV blocks) -> a closed-form queueing pass (idle-engine latencies against the SLOs, and the
saturation rate of a full decode batch) that drops hopeless setups and bounds the search -> bisection on the
rate with the simulation (:mod:`.simulate`) for the most promising ones -> price on the cheapest matching offer.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from .. import overheads as oh
from ..engines import vllm
from ..hardware import GpuSpec, gpus
from ..market.choice import matching
from ..market.offers import Offer
from ..market.store import load_offers
from ..model.spec import ModelSpec
from ..scenario import Scenario
from .steptime import Calibration, StepModel, step_model
from .workload import Workload


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


@dataclass(kw_only=True)
class Plan:
    setup: str
    gpu_id: str
    num_gpus: int
    tp: int
    quant: str | None
    kv_tokens: int
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
    pareto: bool = False
    curve: list[RatePoint] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


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
                                          "engine": "vllm", "precision": precision})
                out.append(Setup(gpu=gpu, num_gpus=n, quant=q, scenario=sc))
    return out


def idle_latencies(model: StepModel, w: Workload) -> tuple[float, float]:
    """(TTFT, TPOT) of one request on an idle engine: the lower bounds of any load."""
    p, o = w.mean_prompt_tokens, w.mean_output_tokens
    return model.prefill_time(max(p - w.shared_prefix_tokens, 1)), model.time(0, 1, p + o / 2)


def saturation_rate(model: StepModel, w: Workload, kv_tokens: int, max_num_seqs: int) -> float:
    """Requests/s a full engine completes: a decode batch as large as the KV pool and ``max_num_seqs`` allow,
    plus each request's prefill (closed form, no queueing)."""
    p, o = w.mean_prompt_tokens, w.mean_output_tokens
    batch = max(1.0, min(max_num_seqs, kv_tokens / (p + o / 2)))
    decode = model.time(0, batch, batch * (p + o / 2)) / batch  # seconds of engine per token per sequence
    prefill = model.time(max(p - w.shared_prefix_tokens, 1), 0, 0, p * p / 2) - model.overhead_s
    return 1.0 / (o * decode + max(prefill, 0.0))


def evaluate(model: StepModel, engine, w: Workload, rate: float) -> RatePoint:
    """Simulate ``w.num_requests`` requests at ``rate``; the SLO percentiles of the outcome."""
    import numpy as np

    from .simulate import arrivals, simulate
    from .workload import read_trace, sample_lengths

    rng = np.random.default_rng(w.seed)
    n = w.num_requests
    if w.trace:
        ins, outs, _, _ = read_trace(w.trace)
        pick = rng.integers(0, len(ins), n)
        prompt, output = np.asarray(ins)[pick], np.asarray(outs)[pick]
    else:
        prompt, output = sample_lengths(w.prompt_lengths(), n, rng), sample_lengths(w.output_lengths(), n, rng)
    out = simulate(model, engine, arrivals(rate, n, w.burstiness, rng), prompt, output, w.shared_prefix_tokens)
    q = w.slo.percentile
    ttft, tpot, e2e = out.percentile("ttft_s", q), out.percentile("tpot_s", q), out.percentile("e2e_s", q)
    slo = w.slo
    meets = out.completed == n and (slo.ttft_s is None or ttft <= slo.ttft_s) and \
        (slo.tpot_s is None or tpot <= slo.tpot_s) and (slo.e2e_s is None or e2e <= slo.e2e_s)
    # a queue that keeps growing is not a steady state, whatever the percentiles of a finite run say
    if out.requests_per_s < 0.9 * rate and out.completed == n and out.duration_s > 0:
        meets = meets and out.requests_per_s >= 0.97 * rate * (n - 1) / n
    return RatePoint(rate_rps=rate, ttft_s=ttft, tpot_s=tpot, e2e_s=e2e,
                     output_tokens_per_s=out.output_tokens_per_s, meets_slo=meets)


def max_rate(model: StepModel, engine, w: Workload, upper: float, iterations: int = 7) -> tuple[float, list]:
    """Highest rate meeting the SLOs, by bisection in ``(0, upper]`` (the closed-form bound)."""
    curve = []
    lo, hi = 0.0, upper
    point = evaluate(model, engine, w, hi)
    curve.append(point)
    if point.meets_slo:
        return hi, curve
    for _ in range(iterations):
        mid = (lo + hi) / 2
        point = evaluate(model, engine, w, mid)
        curve.append(point)
        lo, hi = (mid, hi) if point.meets_slo else (lo, mid)
    return lo, sorted(curve, key=lambda p: p.rate_rps)


def cheapest_offer(s: Scenario, offers: list[Offer], gpu_id: str) -> tuple[float, str] | None:
    rows = []
    for o in matching(offers, s, gpu_id):
        per_hour = math.ceil(s.num_gpus / o.gpu_count) * o.gpu_count * o.usd_per_gpu_hour
        rows.append((per_hour, o.label))
    return min(rows) if rows else None


def capacity(s: Scenario, m: ModelSpec, w: Workload, *, gpu_ids: tuple[str, ...] = (), max_gpus: int = 8,
             any_quant: bool = False, simulate_top: int = 8, calibration: Calibration | None = None,
             catalogs: tuple[str, ...] = ()) -> list[Plan]:
    """Plans ranked by cost per request at their highest SLO-meeting rate (unpriced setups last)."""
    offers = load_offers(catalogs)
    longest = int(max(w.prompt_lengths().max if w.prompt_lengths().kind != "fixed" else w.mean_prompt_tokens,
                      w.mean_prompt_tokens) + max(w.output_lengths().max if w.output_lengths().kind != "fixed"
                                                  else w.mean_output_tokens, w.mean_output_tokens))
    longest = min(longest, m.max_context or longest)
    candidates = []
    for st in setups(s, m, gpu_ids, max_gpus, any_quant):
        sc = st.scenario.model_copy(update={"max_model_len": st.scenario.max_model_len or longest})
        try:
            mem = vllm.startup_memory(sc, m, st.gpu)
        except (ValueError, ZeroDivisionError):
            continue
        if mem.num_blocks <= 0 or not mem.fits_max_model_len:
            continue
        model = step_model(sc, m, st.gpu, calibration=calibration)
        ttft0, tpot0 = idle_latencies(model, w)
        slo = w.slo
        if (slo.ttft_s and ttft0 > slo.ttft_s) or (slo.tpot_s and tpot0 > slo.tpot_s) or \
                (slo.e2e_s and ttft0 + tpot0 * w.mean_output_tokens > slo.e2e_s):
            continue
        bound = saturation_rate(model, w, mem.kv_tokens, mem.limits.max_num_seqs)
        price = cheapest_offer(sc, offers, st.gpu.id)
        candidates.append((st, sc, mem, model, bound, price))
    # closed-form cost per request decides which setups get simulated
    candidates.sort(key=lambda c: (c[5] is None, (c[5][0] if c[5] else 0) / c[4]))
    plans = []
    for st, sc, mem, model, bound, price in candidates[:simulate_top]:
        from .simulate import vllm_scheduler

        engine = vllm_scheduler(sc, mem)
        rate, curve = max_rate(model, engine, w, bound * 1.1)
        low, high = oh.SERVING_RATE_BAND
        plan = Plan(setup=st.label, gpu_id=st.gpu.id, num_gpus=st.num_gpus, tp=sc.tp, quant=st.quant,
                    kv_tokens=mem.kv_tokens, max_rate_rps=rate, rate_band_rps=(rate * low, rate * high),
                    bound_rate_rps=bound, curve=curve)
        at = [p for p in curve if p.meets_slo and p.rate_rps <= rate]
        if at:
            best = max(at, key=lambda p: p.rate_rps)
            plan.ttft_s, plan.tpot_s, plan.e2e_s = best.ttft_s, best.tpot_s, best.e2e_s
        if price and rate > 0:
            per_hour, label = price
            plan.usd_per_hour, plan.offer = per_hour, label
            per_s = per_hour / 3600
            plan.usd_per_million_input = per_s / (rate * w.mean_prompt_tokens) * 1e6
            plan.usd_per_million_output = per_s / (rate * w.mean_output_tokens) * 1e6
            plan.usd_per_1k_requests = per_s / rate * 1000
        if w.rate_rps and rate > 0:
            plan.replicas_for_target = math.ceil(w.rate_rps / rate)
        plans.append(plan)
    plans.sort(key=lambda p: (p.usd_per_1k_requests is None, p.usd_per_1k_requests or 0, -p.max_rate_rps))
    _mark_pareto(plans)
    return plans


def _mark_pareto(plans: list[Plan]) -> None:
    """Pareto front of cost per request vs the SLO-percentile TTFT at the plan's rate (lower is better)."""
    priced = [p for p in plans if p.usd_per_1k_requests is not None and p.ttft_s is not None]
    for p in priced:
        p.pareto = not any(q is not p and q.usd_per_1k_requests <= p.usd_per_1k_requests and q.ttft_s <= p.ttft_s
                           and (q.usd_per_1k_requests < p.usd_per_1k_requests or q.ttft_s < p.ttft_s)
                           for q in priced)
