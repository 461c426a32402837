"""``capacity``: how many GPUs a request stream needs. For every GPU type x count x TP x quantization whose engine
holds one request of the longest length, the highest arrival rate (or number of users) that meets the SLOs, its
cost per unit of goodput, and the Pareto front of cost vs latency; each row a reading of plans.

A search over setups, as ``recommend``'s: enumerate setups -> each setup's **memory plan** (the one resolver and
builder's memory stage, :func:`gpuplan.plan.plan.memory_plan`: the engine's KV pool and start-up limits, as
``estimate`` reports them) -> a closed-form queueing pass (:mod:`gpuplan.serving.capacity`: idle-engine latencies
against the SLOs, the saturation rate of a full decode batch) that drops hopeless setups and bounds the search ->
bisection on the rate with the simulation for the most promising ones -> the **plan at the load found** (built
once per row: its TTFT alone and streaming speed) -> price on the cheapest instance that holds a tensor-parallel
group whole (whole instances: a group never spans rented instances, so this is not the builder's cheapest per
million tokens).

Bounded: the search has :data:`SEARCH_EVENTS` simulated events (turns of the simulation's loop), shared out among
the setups it simulates (each gets what is left over the setups still to go), and every simulation its own bounds
(:data:`gpuplan.serving.simulate.MAX_STEPS`, :data:`gpuplan.serving.simulate.MAX_EVENTS`). A setup whose
simulation stopped early says so in its ``warnings`` (its rate is then from the requests that finished: a lower
bound when the run was cut short). The budget counts work, not wall seconds: an answer is a function of its inputs,
the same on a loaded machine as on a quiet one (session 31; the wall-clock budget it replaces cut the searches of a
loaded machine earlier). The page keeps its deadline by stopping work with no answer (:func:`gpuplan.clock.in_time`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from .. import overheads as oh
from ..engines import engine_for
from ..engines.records import KvPool
from ..errors import GpuplanError
from ..hardware import GpuSpec, gpus, short_id
from ..market.choice import matching
from ..market.cost import default_mtbi_h, spot_dearer, spot_replicas
from ..market.offers import Offer
from ..market.store import load_offers
from ..model.spec import ModelSpec
from ..scenario import Scenario
from ..scenario.fields import MAX_MODEL_LEN, MIN_MODEL_LEN
from ..serving.capacity import RatePoint, idle_latencies, max_rate, max_users, saturation_rate
from ..serving.steptime import Calibration, StepModel, step_model
from ..serving.workload import MAX_TOKENS, Workload
from ..speed.deepgemm import deepgemm_warnings
from .build import build
from .plan import Plan
from .refusals import context_warnings, engine_refusal, load_refusal, unsimulated, whole_prompts
from .resolve import resolve

if TYPE_CHECKING:
    from ..serving.simulate import Budget, Scheduler


@dataclass(frozen=True, kw_only=True)
class Candidate:
    """One layout capacity tries (card, count, weight format, its scenario); a priced row is a
    :class:`Deployment`, and recommend's priced row is :class:`gpuplan.plan.recommend.Setup`."""

    gpu: GpuSpec
    num_gpus: int
    quant: str | None
    scenario: Scenario

    @property
    def label(self) -> str:
        q = f" {self.quant}" if self.quant else ""
        name = short_id(self.gpu.id)  # the card's name as every other command's rows give it (h100-sxm)
        s = self.scenario
        layout = (f" ep{s.ep}" if s.ep > 1 else "") + (" dp-attention" if s.attention_dp else "")
        return f"{self.num_gpus}x {name} tp{s.tp}{layout}{q}"


@dataclass(kw_only=True)
class Deployment:
    setup: str
    engine: str = "vllm"
    gpu_id: str
    num_gpus: int
    tp: int
    quant: str | None
    kv_tokens: int  # tokens of the workload's mean request the pool holds (the engine's KvPool, as estimate)
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
    usd_per_month_for_target: float | None = None  # at HOURS_PER_MONTH: a month of the service running
    # spot (--pricing spot): the replicas the target needs up (whole, and the fraction of one replica's rate or
    # users it needs: target / what one replica serves), the mean hours between interruptions assumed, a
    # replica's restart (weights read + graph capture) and the share of time it is up (:func:`_spot_fleet`)
    replicas_up_for_target: int | None = None
    replicas_needed: float | None = None
    spot_mtbi_h: float | None = None
    restart_s: float | None = None
    availability: float | None = None
    max_users: int | None = None  # closed loop: most concurrent users one replica serves within the SLOs
    output_tokens_per_s: float | None = None  # at max_rate_rps
    ttft_alone_s: float | None = None  # one request on an idle engine (estimate's figure)
    streaming_tokens_per_s_per_user: float | None = None  # 1 / decode step at this load (estimate's figure)
    pareto: bool = False
    # an offline job (the workload's batch queued at once): how long one replica takes, its share of the instance's
    # price for that time, the most requests it ran at once and the requests preempted (resumed as
    # :func:`gpuplan.serving.load.preempted_words` says)
    job_s: float | None = None
    usd_per_job: float | None = None
    job_peak_running: int | None = None
    job_preemptions: int | None = None
    curve: list[RatePoint] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)  # what the user must know: a simulation that stopped early
    # the plan this row reads: the setup at the load found (memory, KV pool, TTFT alone, streaming speed); not shown
    plan: Plan | None = field(default=None, repr=False)


def setups(s: Scenario, m: ModelSpec, gpu_ids: tuple[str, ...] = (), max_gpus: int = 8, any_quant: bool = False,
           *, fields: dict | None = None, expert_parallel: bool = False) -> list[Candidate]:
    """GPU type x count (1, 2, 4, 8, all tensor-parallel) x weights (as shipped; fp8 where the card has fp8
    tensor cores or vLLM runs it weight-only; awq-int4 with ``any_quant``); ``fields``: set on every setup's
    scenario too (the workload's lengths), in its one validation. An MoE layout (``expert_parallel``: ep = the
    group's GPUs; ``s.attention_dp``) takes the counts of 2 GPUs or more whose ep divides the experts."""
    out = []
    quants: list[str | None] = [s.quant]
    if any_quant and s.quant is None and not m.quantization:
        quants += ["fp8", "awq-int4"]
    for gpu in gpus().values():
        if gpu_ids and gpu.id not in gpu_ids:
            continue
        if _unsimulable(s, gpu):
            continue
        for n in (1, 2, 4, 8):
            if n > max_gpus or m.num_heads % n or (n > m.num_kv_heads and n % m.num_kv_heads and not m.mla):
                continue
            if (expert_parallel or s.attention_dp) and (n == 1 or (expert_parallel and m.num_experts % n)):
                continue
            for q in quants:
                if q == "fp8" and not gpu.supports_dtype("fp8"):
                    continue
                precision = "bf16-true" if gpu.supports_dtype("bf16") else "fp16-true"
                sc = s.model_copy(update={"gpu": gpu.id, "num_gpus": n, "tp": n, "pp": 1, "quant": q,
                                          "ep": n if expert_parallel else s.ep,
                                          "engine": s.engine,
                                          "precision": precision, **(fields or {})})
                out.append(Candidate(gpu=gpu, num_gpus=n, quant=q, scenario=sc))
    return out


# Simulated events one capacity search may run, all its simulations together: the 120 wall seconds it had before
# session 31 at the 10,000 events a CPU second measured then on the 2-core machine (10,000-13,000 over whole searches
# of vLLM, SGLang and TensorRT-LLM: 8,800 to 13,100)
SEARCH_EVENTS = 1_200_000
HOURS_PER_MONTH = 730.0  # 8,760 hours a year / 12: a service that runs all month


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


def _longest(w: Workload, m: ModelSpec, s: Scenario) -> int:
    """The longest request of the workload (prompt + output), within the context its engine is started with for the
    mean request (:meth:`gpuplan.engines.base.Engine.served_context`, the rule of ``estimate``, ``recommend`` and
    ``launch``: the model's context as the engine derives it, or the mean request's where it runs past it, planned
    and warned of as they do): the setups' max_model_len. Requests spread past both are refused, as a run of them
    is (:func:`gpuplan.serving.load.longest_request`)."""
    def top(d):
        return d.max if d.kind != "fixed" else d.mean

    longest = int(max(top(w.prompt_lengths()), w.mean_prompt_tokens) + max(top(w.output_lengths()),
                                                                            w.mean_output_tokens))
    engine = engine_for(s)
    derived = engine.model_context(m)
    mean = round(w.mean_prompt_tokens) + round(w.mean_output_tokens)
    if _no_max(w.prompt_lengths()) or _no_max(w.output_lengths()):
        # a draw with no max of its own (examples/chat-workload.yaml's normal outputs): the engine starts at the
        # context it would for the mean request, as before session 30, not at the 10,000,000 tokens that stand
        # for "no max" (which max_model_len's bound then refused)
        longest = engine.served_context(m, mean) if derived else mean
    if m.position_params and m.max_context and longest > m.max_context:  # as fit.check refuses it
        raise GpuplanError(f"{m.name} learns {m.max_context:,} positions (a position-embedding table, no RoPE to "
                           f"extend): the workload's requests of up to {longest:,} tokens index past it; shorten "
                           "its prompts or outputs")
    if longest > MAX_MODEL_LEN:
        raise GpuplanError(f"the workload's requests run to {longest:,} tokens, past the longest context gpuplan "
                           f"starts an engine with ({MAX_MODEL_LEN:,}, max_model_len's bound): shorten them")
    if not derived:
        return longest
    context = engine.served_context(m, mean)
    if longest > context > derived:
        raise GpuplanError(f"the workload's requests run to {longest:,} tokens, past both {m.name}'s context of "
                           f"{derived:,} tokens ({engine.label}'s) and its mean request's {mean:,}, which the engine "
                           "would be started with: narrow length_spread, or shorten them")
    return min(longest, context)


def _no_max(d) -> bool:
    """A drawn length (normal, lognormal, uniform) whose ``max`` is the field's default, which stands for none:
    bounded by nothing of its own."""
    return d.kind in ("uniform", "normal", "lognormal") and d.max >= MAX_TOKENS


@dataclass(frozen=True)
class ServingMemory:
    """What a setup's engine holds at start-up, as the search needs it: the setup's memory plan, its KV pool
    (:class:`gpuplan.engines.records.KvPool`, the plan's) and the scheduler the simulation runs over it."""

    plan: Plan
    pool: KvPool
    engine: Scheduler


def engine_memory(sc: Scenario, m: ModelSpec, gpu: GpuSpec, longest: int) -> ServingMemory | None:
    """The memory plan of ``sc`` on ``gpu`` (resolved and refused as every plan), its KV pool and the scheduler
    over it; None when one request of ``longest`` tokens does not fit the pool. vLLM: its startup rules and V1
    scheduler (:func:`gpuplan.engines.vllm.scheduler_of`). SGLang: its token pool (``max_total_num_tokens``)
    and scheduler (:func:`gpuplan.engines.sglang.scheduler_of`: prefill batches of ``chunked_prefill_size``
    before decodes, ``max_running_requests``, one-token pages); its radix cache serves the workload's shared prefix
    and repeated prompts (other reuse, such as multi-turn history, is not modelled). TensorRT-LLM:
    ``free_gpu_memory_fraction`` of the free memory in 32-token blocks and its in-flight batching
    (:func:`gpuplan.engines.trtllm.scheduler_of`: ``max_batch_size``, ``max_num_tokens``, whole contexts,
    ``GUARANTEED_NO_EVICT``)."""
    from ..serving.simulate import scheduler_for

    plan = build(resolve(sc, m, gpu), memory_only=True)
    engine = scheduler_for(plan.setup.scenario, plan.startup, plan.pool, longest)
    return None if engine is None else ServingMemory(plan=plan, pool=plan.pool, engine=engine)


def capacity(s: Scenario, m: ModelSpec, w: Workload, *, gpu_ids: tuple[str, ...] = (), max_gpus: int = 8,
             any_quant: bool = False, simulate_top: int = 6, calibration: Calibration | None = None,
             catalogs: tuple[str, ...] = (), search_events: int = SEARCH_EVENTS,
             expert_parallel: bool = False, notes: list[str] | None = None) -> list[Deployment]:
    """Plans ranked by what the target costs (the workload's rate or users: whole instances), else by cost per
    request at their highest SLO-meeting load (unpriced setups last); for an offline job (the workload's
    ``batch``), by what one replica costs to run it (:func:`_job_row`). The simulations share ``search_events``
    simulated events (see the module docstring). ``notes`` gets one sentence for each GPU of ``gpu_ids`` that has no
    row, saying why (:func:`_left_out`)."""
    why = unsimulated(s.engine, "capacity's searches run") or \
        load_refusal(w.users, w.rate_rps, batch=w.batch, think_s=w.think_time_s) or engine_refusal(s, m) or \
        engine_for(s).chunked_prefill_refusal(s) or engine_for(s).async_scheduling_refusal(s)
    if why:
        raise GpuplanError(why)
    if (expert_parallel or s.attention_dp) and not m.is_moe:
        raise GpuplanError(f"expert parallelism and attention data parallelism lay out an MoE model, and {m.name} has "
                           "no experts: drop them")
    simulated = [g for g in gpus().values() if not _unsimulable(s, g)]  # as setups()
    if gpu_ids and not any(g.id in gpu_ids for g in simulated):
        whys = dict.fromkeys(_unsimulable(s, gpus()[g]) for g in gpu_ids)  # one sentence a reason, in order
        raise GpuplanError(f"capacity simulates none of the cards named ({'; '.join(whys)}): name others, or leave "
                           "--gpus out")
    offers = load_offers(catalogs)
    w = with_scenario_prefix(w, s)
    longest = _longest(w, m, s)
    prompts = w.prompt_lengths()  # the longest against the engine: refused rather than simulate requests never served
    whole_prompts(s, int(prompts.max if prompts.kind != "fixed" else prompts.mean))
    candidates, late_alone, refused = [], set(), {}
    prompt = round(w.mean_prompt_tokens)
    lengths = {"max_model_len": s.max_model_len or max(longest, MIN_MODEL_LEN), "prompt_tokens": prompt,
               "output_tokens": round(w.mean_output_tokens), "batch_size": w.batch or w.users or s.batch_size,
               "shared_prefix_tokens": max(min(w.shared_prefix_tokens, prompt - 1), 0)}
    for st in setups(s, m, gpu_ids, max_gpus, any_quant, fields=lengths, expert_parallel=expert_parallel):
        try:
            mem = engine_memory(st.scenario, m, st.gpu, longest)
        except GpuplanError as err:  # the plan's own refusal (nvfp4 off Blackwell...): named, as estimate says it
            refused.setdefault(st.gpu.id, str(err))
            continue
        except (ValueError, ZeroDivisionError):
            continue
        if mem is None:
            continue
        sc = mem.plan.setup.scenario  # as resolved
        model = step_model(sc, m, st.gpu, calibration=calibration)
        ttft0, tpot0 = idle_latencies(model, w)
        slo = w.slo
        late = (slo.ttft_s and ttft0 > slo.ttft_s) or (slo.tpot_s and tpot0 > slo.tpot_s) or \
            (slo.e2e_s and ttft0 + tpot0 * w.mean_output_tokens > slo.e2e_s)
        if late and w.batch is None:  # an offline job has no latency targets
            late_alone.add(st.gpu.id)
            continue
        bound = saturation_rate(model, w, mem.pool.kv_tokens, mem.engine.max_num_seqs,
                                mem.engine.max_num_batched_tokens, mem.engine.mixed_prefill)  # (rate, batch)
        price = cheapest_offer(sc, offers, st.gpu.id)
        slowest = (slo.ttft_s or ttft0) + (slo.tpot_s or tpot0) * w.mean_output_tokens  # a request within the SLOs
        candidates.append((st, sc, mem, model, bound, price,
                           _bound_rank(w, bound[0], price, min(slowest, slo.e2e_s or slowest))))
    named = [g for g in gpu_ids if g in {x.id for x in simulated}]
    if named and all(g in refused for g in named):  # every card named refused: that sentence, as estimate's
        raise GpuplanError("; ".join(dict.fromkeys(refused[g] for g in named)))
    candidates = _simulated_first(candidates)
    from ..serving.simulate import Budget

    chosen, budget = candidates[:simulate_top], Budget(search_events)
    plans = _simulated(chosen, w, m, budget)
    undercut = _undercut(candidates[simulate_top:], plans) if budget.left else []
    for c in undercut:  # the lowest bound first, each while it undercuts the cheapest row so far (the events left)
        if c[6][1] < min(p.usd_per_hour_for_target or math.inf for p in plans):
            plans += _simulated([c], w, m, budget)
            chosen.append(c)
    plans.sort(key=_rank)
    _mark_pareto(plans)
    if notes is not None:
        notes += _left_out(s, gpu_ids, simulated, candidates, chosen, late_alone, max_gpus, refused) + \
            _priced_at(w, plans) + \
            _unstreamed(plans) + _spot_said(s, w, plans) + _spot_dearer(plans, offers) + _unserved(w, plans) + \
            _unpriced(s, plans, offers) + _unbounded(w) + _past_context(m, plans)
    return plans


def _past_context(m: ModelSpec, plans: list[Deployment]) -> list[str]:
    """What ``estimate`` warns of the rows' requests where they run past the model's context (its quality, and the
    switch the engine is started with: :func:`gpuplan.plan.refusals.context_warnings`), said once: every row plans
    the same lengths on the same engine."""
    return context_warnings(plans[0].plan.setup.scenario, m) if plans and plans[0].plan else []


def _unbounded(w: Workload) -> list[str]:
    """What a search under a load without latency targets answers: every setup meets no SLO, so one replica counts
    as serving the whole load however slow. Walk s20: 60,000 chat users thinking 30 s on ``--gpus h100`` answered
    one H100 at $1.29/h serving all 60,000, its p95 TTFT 785 s, its streaming speed 0 tok/s a user. The columns
    it points at are the percentile asked (``--percentile``), so the sentence names that one."""
    slo = w.slo
    if not w.users or slo.ttft_s or slo.tpot_s or slo.e2e_s:  # an open loop's rate is held to what a replica drains
        return []
    return ["no latency target given (--ttft, --tpot, --e2e): each replica counts as serving every user however slow "
            f"(the p{slo.percentile} TTFT and TPOT columns say how slow), so the replica counts size no service: give "
            "the latencies your users accept, e.g. --ttft 2 --tpot 0.05"]


def _unpriced(s: Scenario, plans: list[Deployment], offers: list[Offer]) -> list[str]:
    """Why rows have no price: no offer in force holds their tensor-parallel group on one instance
    (:func:`cheapest_offer`). Walk s20: Llama-3.1-8B for 10 users on ``--gpus t4`` listed 2x, 4x and 8x T4 with every
    price cell blank under 'cheapest first' and no sentence; the T4's one offer in force is AWS's 1-GPU g4dn.xlarge."""
    out, unpriced = [], [p for p in plans if p.usd_per_hour is None and p.max_rate_rps > 0]  # _unserved: the rest
    for gpu_id in dict.fromkeys(p.gpu_id for p in unpriced):
        rows = ", ".join(p.setup for p in unpriced if p.gpu_id == gpu_id)
        sizes = sorted({f"{o.provider} {o.gpu_count}x" for o in matching(offers, s.model_copy(
            update={"tp": 1, "pp": 1, "num_gpus": 1}), gpu_id)})
        rented = f"the offers in force rent {', '.join(sizes)}" if sizes else "no offer of it is in force"
        out.append(f"{rows}: no price: no rented instance holds the group whole ({gpus()[gpu_id].name}: {rented}; "
                   f"a tensor-parallel group is priced on one instance); `gpuplan prices --gpu {short_id(gpu_id)}` "
                   "lists its offers")
    return out


def _unserved(w: Workload, plans: list[Deployment]) -> list[str]:
    """Why a row serves nothing and has no price: no load simulated met the SLOs, though one request alone does
    (its TTFT alone passed them, so it was simulated), with the lightest load's figures; or its simulations
    stopped early (its warning says why). s22 fuzz: ``--gpus mi300x --rate 5 --preset chat --ttft 0.03`` listed
    1x MI300X at 0.00 req/s, and its missing price was said to be the offers', though runpod's 1x holds it."""
    out = []
    for p in plans:
        if w.batch or p.max_rate_rps > 0 or not p.curve:
            continue
        if any(c.stopped for c in p.curve):
            out.append(f"{p.setup}: no load met the SLOs before its simulations stopped early (its warning says "
                       "why), so it has no rate and no price")
            continue
        least = min(p.curve, key=lambda c: c.users or c.rate_rps)
        load = f"{least.users:,} users" if least.users else f"{least.rate_rps:.3g} req/s"
        tpot = f", TPOT {least.tpot_s * 1e3:,.0f} ms" if least.tpot_s is not None else ""
        out.append(f"{p.setup}: meets the SLOs at none of the loads simulated (the lightest, {load}, had "
                   f"p{w.slo.percentile} TTFT {least.ttft_s * 1e3:,.0f} ms{tpot}, E2E {least.e2e_s:,.2f} s), so it "
                   "has no rate and no price: relax the SLOs, or allow more GPUs (--max-gpus)")
    return out


def _simulated(chosen: list, w: Workload, m: ModelSpec, budget: Budget) -> list[Deployment]:
    """The rows of the setups ``chosen``, simulated in turn, each given an equal share of the events ``budget`` has
    left over the setups to go (what one leaves unspent goes to those after it)."""
    plans = []
    for i, (st, sc, mem, model, bound, price, _) in enumerate(chosen):
        share = budget.share(len(chosen) - i)
        plans.append(_job_row(st, sc, mem, bound, price, w, m) if w.batch else
                     _row(st, sc, mem, model, bound, price, w, m, share))
        budget.spend(share.spent)
    return plans


def _undercut(rest: list, plans: list[Deployment]) -> list:
    """The setups ranked past those simulated whose closed-form cost of the target (a lower bound of their row's,
    :func:`_bound_rank`) is under the cheapest simulated row's: each may serve the target for less, so each is
    simulated too (branch and bound). s19-rewalk's finding: GLM-4.5-Air for 80 users on SGLang ranked 2x B200 11th
    (bound $11.96/h) behind an 8x A40 bound at $9.60/h and served at $44.80/h, and answered 4x H200 at $14.36/h
    where 2x B200 serves all 80 for $11.96/h."""
    costs = [p.usd_per_hour_for_target for p in plans if p.usd_per_hour_for_target is not None]
    return sorted((c for c in rest if costs and c[6][0] == 0 and c[6][1] < min(costs)), key=lambda c: c[6])


def _simulated_first(candidates: list) -> list:
    """The setups in the order they are simulated: the closed form's two ranks taken in turn, each setup once.
    The rank by the target's cost (:func:`_bound_rank`, the rows' own order) holds a replica to the saturation
    rate, which small cards miss most under the SLOs, so it counts them too few replicas (Llama-3.1-8B at 5 req/s:
    an RTX 4090 ranked at 4 where 6 serve it, the H100 that serves all 5 alone left out); the rank by the cost per
    request at saturation favours cards far faster than the target (40 users of gpt-oss-120b: 2x A100, 2x H100,
    1x B200 first, the 2x L40S that serve them for $1.58/h left out). In turn, each brings its best."""
    by_target = sorted(candidates, key=lambda c: c[6])
    by_request = sorted(candidates, key=lambda c: (c[6][0] == 2, c[6][2]))
    order, seen = [], set()
    for pair in zip(by_target, by_request, strict=True):  # the same setups, two orders
        for c in pair:
            if id(c) not in seen:
                seen.add(id(c))
                order.append(c)
    return order


def _bound_rank(w: Workload, rate: float, price: tuple[float, str, int] | None, e2e_s: float) -> tuple:
    """The rank :func:`_rank` gives a setup, from the closed form before any simulation: a target (a rate, or
    users sending ``users / (think + e2e_s)`` requests/s) costs ``ceil(replicas / replicas per instance)`` whole
    instances, a replica serving at most the saturation ``rate``
    (:func:`gpuplan.serving.capacity.saturation_rate`); then the cost per request at that rate (an offline job's
    order too: its cost is the price over the rate). Unpriced setups last. Users are taken at
    the slowest end-to-end latency within the SLOs (``e2e_s``), so they send the fewest requests a setup meeting
    the SLOs serves, and a replica the most it can complete: each setup's cost is a lower bound of its row's."""
    if price is None:
        return (2, 0.0, 0.0)
    per_hour, _, groups = price
    per_request = per_hour / groups / rate
    target = w.rate_rps or (w.users / (w.think_time_s + e2e_s) if w.users else None)
    if target is None or w.batch:
        return (1, 0.0, per_request)
    return (0, math.ceil(math.ceil(target / rate) / groups) * per_hour, per_request)


def _priced_at(w: Workload, plans: list[Deployment]) -> list[str]:
    """What a row's $ per million tokens reads (:func:`_row`): one replica at the highest load it serves within the
    SLOs (its req/s x the mean lengths), not at the target; ``estimate`` prices one setup at the load asked, from
    the tokens its simulated run served (:func:`gpuplan.plan.build.priced_on_load`). At the same rate the two agree
    but for the run's idle start and drain, which ``estimate`` counts and a steady rate does not."""
    if w.batch or not any(p.usd_per_million_output for p in plans):
        return []
    load = "most users" if w.users else "highest rate"
    flag = "--users N" if w.users else "--rate R"
    return [f"$/M out and $/M in price each replica at the {load} it serves within the SLOs (req/s x the mean "
            f"tokens), not at the target; `gpuplan estimate {flag}` prices one setup at the load asked, from what its "
            "simulated run served"]


def _spot_said(s: Scenario, w: Workload, plans: list[Deployment]) -> list[str]:
    """What a spot answer assumed (each row's MTBI, restart and availability: :func:`_spot_fleet`), and that its
    capacity is not guaranteed."""
    if s.pricing != "spot":
        return []
    rows = [p for p in plans if p.availability is not None]
    said = "; ".join(f"{p.setup}: an interruption every {p.spot_mtbi_h:g} h, back in {p.restart_s:,.0f} s "
                     f"(up {p.availability:.2%}), {p.replicas_needed:,.2f} replicas' worth up -> "
                     f"{p.replicas_for_target} run"
                     for p in rows)
    source = ("--mtbi-hours" if s.mtbi_hours else "the AWS spot traces' prior in data/providers.yaml, by the "
              "instance's GPUs (one prior for every provider: none publishes its own rate)")
    return [f"spot: offers that can be interrupted only; the fleet runs ceil(replicas' worth / availability), the "
            f"replicas' worth being the target over what one replica serves, each "
            f"replica up MTBI / (MTBI + restart) of the time, MTBI from {source}, restart = the weights read at "
            f"--disk-gbs {s.disk_gbs:g} GB/s + {oh.ENGINE_CAPTURE_S:g} s of CUDA graph capture"
            + (f" ({said})" if said else "") + ". Spot capacity is not guaranteed: a new instance may take hours "
            "to come back and one zone's interruptions come together; keep an on-demand base (SkyServe's "
            "base_ondemand_fallback_replicas) for what must stay up"
            + ("" if w.rate_rps or w.users else "; no target (--rate or --users) was given, so no fleet was sized")]


def _spot_dearer(plans: list[Deployment], offers: list[Offer]) -> list[str]:
    """A note for each row whose spot fleet costs more an hour than the same replicas on the card's cheapest
    on-demand instances (:func:`cheapest_offer` at on-demand prices), in :func:`spot_dearer`'s words, the fleet's
    extra replicas counted."""
    out = []
    for p in plans:
        if p.availability is None or not p.usd_per_hour_for_target or p.plan is None:
            continue
        on_demand = cheapest_offer(p.plan.setup.scenario.model_copy(update={"pricing": "on_demand"}), offers,
                                   p.gpu_id)
        if on_demand is None:
            continue
        per_hour, label, groups = on_demand
        usd = math.ceil((p.replicas_up_for_target or 1) / groups) * per_hour
        said = spot_dearer(f"{p.setup} at the same target", (p.usd_per_hour_for_target, p.offer or "spot"),
                           (usd, label), per="/h",
                           counted=_spares(p.replicas_for_target, p.replicas_up_for_target),
                           instead="--pricing on-demand ranks them so")
        out += [said] if said else []
    return out


def _spares(on_spot: int | None, up: int | None) -> str:
    """What a spot fleet's price counts beyond the on-demand one: its spare replicas, "" when it has none."""
    if not on_spot or not up or on_spot <= up:
        return ""
    return f"{on_spot} replicas on spot for {up} up, no spares on demand"


def _unstreamed(plans: list[Deployment]) -> list[str]:
    """Why a row's TPOT and streaming speed are blank: no request of its load streamed a second token (a
    trace of ``output_length`` 0 or 1; each is timed as one token, the one its prefill samples)."""
    if not any(p.ttft_s is not None and p.tpot_s is None for p in plans):
        return []
    return ["TPOT n/a: no request of the workload streams a second token (output lengths of 0 or 1, each timed as "
            "the one token its prefill samples), so there is no time between tokens to report or to hold to an "
            "SLO; vllm bench serve counts a request's TPOT only when its output is longer than 1 token"]


def _unsimulable(s: Scenario, gpu: GpuSpec) -> str:
    """Why capacity does not simulate ``s``'s engine on ``gpu`` ("": it does): a card with no 16-bit matrix rate
    to time its steps on (Apple silicon's GPUs list none), or one the engine does not run on
    (:meth:`~gpuplan.engines.Engine.card_refusal`: TensorRT-LLM off NVIDIA, an engine without Metal on a Mac). The
    ROCm builds of vLLM and SGLang on AMD Instinct and vLLM on Gaudi are simulated as ``estimate --users`` simulates
    them (:mod:`gpuplan.engines.rocm`), with the bands that say what was measured there (session 21: capacity had
    refused every card but NVIDIA's, where estimate answered)."""
    if not (gpu.peak_tflops("fp16") or gpu.peak_tflops("bf16")):
        return f"capacity times steps from a card's 16-bit matrix rate, and {gpu.name} lists none"
    return engine_for(s).card_refusal(s, gpu) or ""


def _left_out(s: Scenario, gpu_ids: tuple[str, ...], simulated: list[GpuSpec], candidates: list, chosen: list,
              late_alone: set[str], max_gpus: int, refused: dict[str, str]) -> list[str]:
    """Why a GPU the user named has no row: not simulated (:func:`_unsimulable`), the plan's refusal on it
    (``refused``: nvfp4 weights off Blackwell), no setup that holds the model, its requests too slow even alone, or
    ranked below the setups simulated (``simulate_top``, unpriced setups last)."""
    out, simulable = [], {g.id for g in simulated}
    for gpu_id in gpu_ids:
        name = gpus()[gpu_id].name
        if gpu_id not in simulable:
            out.append(f"{name}: not simulated ({_unsimulable(s, gpus()[gpu_id])})")
        elif any(c[0].gpu.id == gpu_id for c in chosen):
            continue
        elif any(c[0].gpu.id == gpu_id for c in candidates):
            priced = any(c[0].gpu.id == gpu_id and c[5] for c in candidates)
            unpriced = "" if priced else "; no offer rents its GPUs together, so it ranks last"
            out.append(f"{name}: ranked below the {len(chosen)} setups simulated (the cheapest first by the closed "
                       f"form: the target in whole instances, then per request{unpriced}): raise --top, or give "
                       f"--gpus {gpu_id} alone")
        elif gpu_id in refused and gpu_id not in late_alone:
            out.append(f"{name}: {refused[gpu_id]}")
        elif gpu_id in late_alone:
            out.append(f"{name}: misses the SLOs even with one request at a time on up to {max_gpus} GPUs")
        else:
            out.append(f"{name}: no setup of up to {max_gpus} GPUs holds the model and one request of the "
                       "workload's longest")
    return out


def with_scenario_prefix(w: Workload, s: Scenario) -> Workload:
    """The workload with the scenario's ``shared_prefix_tokens`` where the workload does not say its own (the
    ``--shared-prefix`` flag or the workload file's field win): one scenario, one prefix in every command."""
    if "shared_prefix_tokens" in w.model_fields_set or not s.shared_prefix_tokens:
        return w
    return w.model_copy(update={"shared_prefix_tokens": s.shared_prefix_tokens})


def _row(st: Candidate, sc: Scenario, mem: ServingMemory, model: StepModel, bound: tuple[float, float], price,
         w: Workload, m: ModelSpec, budget: Budget | None = None) -> Deployment:
    """One setup simulated (within the events of ``budget``): its highest steady load meeting the SLOs, priced on whole
    instances; the KV pool from its memory plan, and the idle-engine speeds from its plan at that load (one
    scenario, one set of numbers)."""
    pool, engine = mem.pool, mem.engine
    low, high = oh.SERVING_RATE_BAND
    row = Deployment(setup=st.label, engine=sc.engine, gpu_id=st.gpu.id, num_gpus=st.num_gpus, tp=sc.tp,
                     quant=st.quant, kv_tokens=pool.kv_tokens, max_concurrency=pool.max_concurrency,
                     max_rate_rps=0.0, rate_band_rps=(0.0, 0.0), bound_rate_rps=bound[0])
    if w.users:
        row.max_users, row.curve, stops = max_users(model, engine, w, w.users, w.think_time_s, budget)
        at = [p for p in row.curve if p.meets_slo and p.users == row.max_users]
    else:
        rate, row.curve, stops = max_rate(model, engine, w, *bound, budget=budget)
        at = [p for p in row.curve if p.meets_slo and p.rate_rps <= rate]
    if stops:
        row.warnings.append(f"{st.label}: {len(stops)} of its simulations stopped early ({stops[0]}), so its "
                             "figures count only the requests that finished")
    in_flight_s = 0.0  # the mean time a request is in the system at that load (Little's law's W, not a percentile)
    if at:
        best = max(at, key=lambda p: p.rate_rps)
        row.ttft_s, row.tpot_s, row.e2e_s = best.ttft_s, best.tpot_s, best.e2e_s
        in_flight_s = best.e2e_mean_s or best.e2e_s
        row.max_rate_rps = best.rate_rps if w.users else rate
        # an engine that keeps up completes what arrives: the rate x the mean output (the short simulated window
        # counts fewer completions while the queue fills, 10-20 % below the rate the row states); a closed loop's
        # rate is what its drawn replies allow (shorter ones, more requests), so its tokens are the run's own, as
        # estimate --users prices them (serving.load.summary; session 24's walk: 11.14 requests/s x the preset's 203
        # tokens priced 50 chat users on an H100 7 % over the 192 tokens a reply its run drew)
        row.output_tokens_per_s = best.output_tokens_per_s if w.users else row.max_rate_rps * w.mean_output_tokens
    row.rate_band_rps = (row.max_rate_rps * low, row.max_rate_rps * high)
    rate = row.max_rate_rps
    # estimate's figures for this load: TTFT alone, streaming speed with as many requests in flight (users who
    # never pause; else Little's law, rate x the mean end-to-end latency: users who think between turns leave their
    # slot empty meanwhile, so 100 users thinking 10 s over 5 s replies keep about 35 in flight, not 100; the SLO
    # percentile's latency counted 28 in flight for 80 chat users on an H100 where the run held about 8)
    users = row.max_users or w.users
    if w.users and (not w.think_time_s or not in_flight_s):
        busy = users
    else:
        busy = max(1, round(rate * in_flight_s))
        busy = min(busy, users) if w.users else busy
    loaded = sc if sc.batch_size == busy else sc.model_copy(update={"batch_size": busy})
    row.plan = at_load = build(resolve(loaded, m, st.gpu), advise=False)
    row.warnings += [f"{st.label}: {x}" for x in deepgemm_warnings(loaded, m, st.gpu)]
    speed = at_load.speed  # on the card's own links: no offer is priced by the builder here
    # the shared prefix rides in sc: TTFT alone starts after the cached part, as estimate's does
    row.ttft_alone_s = speed.ttft_s
    if row.ttft_s is None or row.tpot_s is not None:  # no streaming speed where no request streams (_unstreamed)
        row.streaming_tokens_per_s_per_user = speed.streaming_tokens_per_s_per_user
    needed = (w.users / row.max_users if w.users and row.max_users else
              w.rate_rps / rate if w.rate_rps and rate > 0 else None)
    if needed is not None:
        row.replicas_for_target = math.ceil(needed)
    if price and rate > 0:
        per_hour, label, groups = price
        row.usd_per_hour, row.offer, row.replicas_per_instance = per_hour, label, groups
        per_s = per_hour / groups / 3600  # one replica's share of the instance
        row.usd_per_million_input = per_s / (rate * w.mean_prompt_tokens) * 1e6
        if w.mean_output_tokens:  # a prompt-only trace outputs nothing to price per token
            row.usd_per_million_output = per_s / (row.output_tokens_per_s or rate * w.mean_output_tokens) * 1e6
        row.usd_per_1k_requests = per_s / rate * 1000
        if row.replicas_for_target and sc.pricing == "spot":
            _spot_fleet(row, sc, groups, needed)
        if row.replicas_for_target:
            row.instances_for_target = math.ceil(row.replicas_for_target / groups)
            row.usd_per_hour_for_target = row.instances_for_target * per_hour
            row.usd_per_month_for_target = row.usd_per_hour_for_target * HOURS_PER_MONTH
    return row


def restart_s(plan: Plan, num_gpus: int) -> float:
    """Seconds a serving replica takes to come back: its weights (every GPU's shard) read at the plan's
    ``disk_gbs``, then the engine's CUDA graphs captured (:data:`gpuplan.overheads.ENGINE_CAPTURE_S`). Not counted:
    getting a new instance and its image, which a spot market may take hours to return."""
    weights = plan.memory.weights_gib * oh.GIB * num_gpus
    return weights / (plan.setup.scenario.disk_gbs * 1e9) + oh.ENGINE_CAPTURE_S


def _spot_fleet(row: Deployment, sc: Scenario, groups: int, needed: float) -> None:
    """Size ``row``'s fleet for spot interruptions (:func:`gpuplan.market.cost.spot_replicas`): the ``needed``
    replicas' worth of the target (its rate or users / what one replica serves) becomes the replicas to run, each
    up MTBI / (MTBI + restart) of the time; the MTBI is the scenario's ``mtbi_hours``, else the prior for the
    instance's GPUs (:func:`gpuplan.market.cost.default_mtbi_h`)."""
    assert row.plan is not None and row.replicas_for_target is not None
    row.replicas_up_for_target, row.replicas_needed = row.replicas_for_target, needed
    row.spot_mtbi_h = sc.mtbi_hours or default_mtbi_h(row.num_gpus * groups)
    row.restart_s = restart_s(row.plan, row.num_gpus)
    row.replicas_for_target, row.availability = spot_replicas(needed, row.spot_mtbi_h, row.restart_s)


def _job_row(st: Candidate, sc: Scenario, mem: ServingMemory, bound: tuple[float, float], price, w: Workload,
             m: ModelSpec) -> Deployment:
    """One setup running the workload's ``batch`` requests queued at once: the plan of that batch (``estimate
    --batch-size``'s offline run through the engine's scheduler: its ``max_num_seqs`` by release, waves as the KV
    pool frees, preemption and recompute), its time, and one replica's share of the instance's price for it."""
    pool = mem.pool
    row = Deployment(setup=st.label, engine=sc.engine, gpu_id=st.gpu.id, num_gpus=st.num_gpus, tp=sc.tp,
                     quant=st.quant, kv_tokens=pool.kv_tokens, max_concurrency=pool.max_concurrency,
                     max_rate_rps=0.0, rate_band_rps=(0.0, 0.0), bound_rate_rps=bound[0])
    row.plan = build(resolve(sc, m, st.gpu), advise=False, simulate=True)
    row.warnings += [f"{st.label}: {x}" for x in deepgemm_warnings(sc, m, st.gpu)]
    row.ttft_alone_s = row.plan.speed.ttft_s
    row.streaming_tokens_per_s_per_user = row.plan.speed.streaming_tokens_per_s_per_user
    run = row.plan.offline
    if run is None or not run.completed:
        row.warnings.append(f"{st.label}: no offline run of the batch (its KV pool holds no request of the longest "
                            "length)")
        return row
    row.warnings += [f"{st.label}: {x}" for x in run.warnings]
    row.job_s, row.job_peak_running, row.job_preemptions = run.duration, run.peak_running, run.preemptions
    row.max_rate_rps, row.output_tokens_per_s = run.request_throughput, run.output_throughput
    low, high = oh.SERVING_RATE_BAND
    row.rate_band_rps = (row.max_rate_rps * low, row.max_rate_rps * high)
    if price and row.max_rate_rps > 0:
        per_hour, row.offer, row.replicas_per_instance = price
        row.usd_per_hour = per_hour
        per_s = per_hour / row.replicas_per_instance / 3600  # one replica's share of the instance
        row.usd_per_job = per_s * run.duration
        row.usd_per_1k_requests = per_s / row.max_rate_rps * 1000
        row.usd_per_million_input = per_s * run.duration / max(run.total_input_tokens, 1) * 1e6
        row.usd_per_million_output = per_s * run.duration / max(run.total_output_tokens, 1) * 1e6
    return row


def _rank(p: Deployment) -> tuple:
    if p.job_s is not None:  # an offline job: the cheapest run of it, then the quickest
        return (0 if p.usd_per_job is not None else 1, p.usd_per_job or 0, p.job_s)
    if p.usd_per_hour_for_target is not None:
        return (0, p.usd_per_hour_for_target, p.usd_per_1k_requests or 0, -p.max_rate_rps)
    return (1 if p.usd_per_1k_requests is not None else 2, p.usd_per_1k_requests or 0, -p.max_rate_rps)


def _mark_pareto(plans: list[Deployment]) -> None:
    """Pareto front of cost per request vs the SLO-percentile TTFT at the plan's rate (an offline job: its cost vs
    its time; lower is better)."""
    def point(p: Deployment) -> tuple[float | None, float | None]:
        return (p.usd_per_job, p.job_s) if p.job_s is not None else (p.usd_per_1k_requests, p.ttft_s)

    priced = [(p, *point(p)) for p in plans if None not in point(p)]
    for p, cost, wait in priced:
        p.pareto = not any(q is not p and c <= cost and t <= wait and (c < cost or t < wait) for q, c, t in priced)


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
             "usd_per_month_for_target": p.usd_per_month_for_target,
             **({"replicas_up_for_target": p.replicas_up_for_target, "replicas_needed": p.replicas_needed,
                 "spot_mtbi_h": p.spot_mtbi_h,
                 "restart_s": p.restart_s, "availability": p.availability} if p.availability is not None else {}),
             "job_s": p.job_s, "usd_per_job": p.usd_per_job, "job_peak_running": p.job_peak_running,
             "job_preemptions": p.job_preemptions, "warnings": list(p.warnings)}
            for p in plans]
