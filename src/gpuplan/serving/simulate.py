"""A discrete-event simulation of vLLM V1's scheduler, one engine step at a time (numpy; imported on demand).

Each step (``vllm/v1/core/sched/scheduler.py`` ``Scheduler.schedule``): running requests first, in order, each
taking its next prefill chunk or one decode token out of the ``max_num_batched_tokens`` budget; a request that needs
a KV block the pool lacks preempts the most recently admitted running request (recompute: its blocks are freed, it
returns to the head of the queue keeping the tokens it generated, and recomputes prompt and those tokens when it
resumes, less what vLLM V1's prefix cache still holds of them: ``keeps_preempted``, :func:`_keep_preempted`);
then, unless this step preempted, waiting requests are admitted in arrival order while the budget,
``max_num_seqs`` and free blocks allow (chunked prefill: a long prompt takes several steps; without it,
``--no-enable-chunked-prefill``, a prompt waits until it fits the step's budget whole). From 0.19 a waiting request
is admitted only if its whole known sequence fits the free blocks, not just its first chunk
(``scheduler_reserve_full_isl``, vLLM PR #37307: it stops chunked prompts from being admitted, preempted and
re-admitted in a loop); the V0 engine (before 0.8) did the same from the start, with 1 % of the pool kept free,
and without chunked prefill ran its prompts in steps of their own (:func:`vllm_scheduler`).
The step lasts :meth:`StepModel.time` of what it holds; a request's first token comes at the
end of the step that finishes its prompt, plus the model's per-request latency outside the engine (``request_s``).
Shared-prefix tokens hit the prefix cache after the first request (no compute, blocks shared). A client with
``max_concurrency`` (``vllm bench serve --max-concurrency``, inference-perf's workers) sends a request only while
fewer are in flight; latencies count from the send. Closed loop (``users`` with ``think_s``): each of ``users``
clients sends its next request ``think_s`` seconds after its last one finished (exponential think times of that
mean; 0: back to back, as ``vllm bench serve --max-concurrency``), and with ``users_wait`` the engine receives it
the model's per-request latency outside the engine (``request_s``) later, which the user's next cycle waits for as
its TTFT counts it. With vLLM's async scheduling
(``StepModel.async_host``, 0.14+ or ``async_scheduling``) the engine core schedules step N+1 while the GPU runs step N
(``vllm/v1/engine/core.py`` ``step_with_batch_queue``), so a request arriving during step N first runs in step N+2:
one step later than the synchronous loop, unless the engine was idle. Runs of pure-decode steps with no arrival in
between are advanced together (their step times summed at the mid-point context), which keeps light loads fast.

In front of the engine (:class:`_Frontend`, when the model has a serial ``frontend_s``): the engine's one
frontend process (vLLM's API server, SGLang's TokenizerManager) takes the sent requests in the order sent, each
for its serial cost, with the share of its time that streaming the engine's tokens leaves; a request reaches the
engine's queue when the process is done with it, and its latencies add the rest of ``request_s`` (the parallel
part: the network, the client). A burst therefore reaches the engine spread out, as ``vllm bench serve
--request-rate inf`` sees it.

SGLang's scheduler (:func:`sglang_scheduler`) runs in the same loop with ``mixed_prefill`` off
(``python/sglang/srt/managers/scheduler.py`` ``get_next_batch_to_run``): whenever a prefill batch forms (a chunked
prompt continues, or the first waiting request fits a seat and the free pool) the step holds prompt tokens alone and
the decodes wait; otherwise every running request decodes. A prefill batch takes prompts within the chunk and, beside
it, ``--max-prefill-tokens`` as the release applies it (:func:`_closes_prefill_batch`). Its radix cache matches
token by token (one-token pages), where vLLM's prefix cache matches whole blocks. With ``--scheduler-recv-interval
N`` (``recv_interval``) a busy scheduler reads new requests only every N decode steps and right after a prefill
batch (:meth:`_Engine.receive`): a request sent meanwhile waits in ``inbox``, its latency counting from the send.
Under SGLang's DP attention (``Scheduler.attention_ranks``) each rank is such a scheduler of its own, fed round robin,
and the ranks step together (:class:`_Ranks`).
"""

from __future__ import annotations

import heapq
import math
from collections import deque
from dataclasses import dataclass, field

import numpy as np

from .. import clock
from ..engines import ENGINES
from .steptime import StepModel

_add = np.add.reduce  # ndarray.sum without its Python wrapper (the step loop sums small arrays ~6 times a step)

# Bounds of one simulation (:func:`simulate`), so that no input runs it for long: engine steps and turns of its loop
# (a step, a run of decode steps or a wait for an arrival: events). Counts of the simulation's own work, never wall
# seconds, so that the same inputs stop at the same place on any machine under any load (session 31: a 60 s clock
# cut capacity's runs earlier on a loaded machine, and its answers moved with the load). A capacity search's
# saturated run of SGLang on a large card takes about 40,000 events; at the 10,000-13,000 events a CPU second
# measured on the 2-core machine (session 31) the event bound is about the 60 s the clock allowed.
MAX_STEPS = 2_000_000
MAX_EVENTS = 600_000


@dataclass
class Budget:
    """Events several simulations share (a capacity search's, one setup's share of it, a calibration fit's): each
    run takes at most what is left (:func:`simulate`'s ``budget``) and spends the events it ran. A count of work,
    so a search cut short is cut at the same place whatever the machine's load."""

    events: int
    spent: int = 0

    @property
    def left(self) -> int:
        return max(self.events - self.spent, 0)

    def share(self, parts: int) -> Budget:
        """An equal share of what is left over ``parts`` (the setups still to simulate); spend it back with
        :meth:`spend`."""
        return Budget(self.left // max(parts, 1))

    def spend(self, events: int) -> None:
        self.spent += events


@dataclass(frozen=True, kw_only=True)
class Scheduler:
    kv_blocks: int
    block_tokens: int = 16
    max_num_seqs: int = 256
    max_num_batched_tokens: int = 8192
    chunked_prefill: bool = True
    reserve_full_sequence: bool = False  # vLLM V0 and 0.19+: admit a waiting request only if its whole sequence fits
    # vLLM V0: free blocks an admission must leave (BlockSpaceManager's watermark, 1 % of the pool)
    admit_watermark_blocks: int = 0
    # vLLM mixes prompt chunks and decodes in one step; SGLang (without --enable-mixed-chunk) runs a prefill batch
    # alone whenever it can form one, the decodes waiting that step
    mixed_prefill: bool = True
    # TensorRT-LLM's GUARANTEED_NO_EVICT capacity policy: a waiting request is admitted only when the free blocks
    # hold its whole sequence (prompt + output) beside the blocks the running requests still need to finish theirs,
    # so nothing is ever preempted
    reserve_to_completion: bool = False
    prefix_cache: bool = True  # later requests find a shared prefix cached (TensorRT-LLM's block reuse: not modelled)
    # vLLM V1's prefix cache keeps a preempted request's full blocks until the pool hands them out again
    # (:func:`_keep_preempted`): resumed, it recomputes only what was evicted meanwhile
    keeps_preempted: bool = False
    # SGLang's --scheduler-recv-interval (1: every loop turn, its default): new requests are taken in only once
    # this many decode steps have run since the last take, or right after a prefill batch (_Engine.receive)
    recv_interval: int = 1
    # SGLang's DP attention: this many ranks, each a scheduler of its own with the settings above (one GPU's pool,
    # chunk and request cap), fed round robin and stepping together (:class:`_Ranks`)
    attention_ranks: int = 1
    # SGLang's --max-prefill-tokens beside the chunk (0: none, vLLM and TensorRT-LLM), and its release's rule for it
    # (:func:`_closes_prefill_batch`)
    max_prefill_tokens: int = 0
    prefill_cap_takes_last: bool = False
    # SGLang's admission reserve (:func:`_output_room`): the running requests' remaining outputs (clipped to
    # ``output_clip`` tokens) times ``new_token_ratio``, which starts at ``reserve_ratio`` (0: no reserve, vLLM and
    # TensorRT-LLM), falls by ``(reserve_ratio - reserve_ratio_min) / reserve_decay_steps`` every decode step and
    # is raised again by a retraction
    reserve_ratio: float = 0.0
    reserve_ratio_min: float = 0.0
    reserve_decay_steps: int = 600
    output_clip: int = 4096
    # SGLang's rule for ignore_eos requests when the radix cache is off (:func:`_fits_to_finish`), in place of the
    # reserve above: every remaining output reserved whole, the running requests freed as they finish
    reserve_whole_outputs: bool = False


def vllm_scheduler(s, mem, *, chunked_prefill: bool | None = None, blocks: int | None = None) -> Scheduler:
    """vLLM's scheduler of ``s``'s release over its startup ``mem`` (:func:`gpuplan.engines.vllm.scheduler_of`, the
    engine's own facts); ``blocks``: the pool in blocks of requests, ``chunked_prefill``: the release's by default."""
    from ..engines import vllm

    return Scheduler(**vllm.scheduler_of(s, mem, chunked_prefill=chunked_prefill, blocks=blocks))


def sglang_scheduler(sm) -> Scheduler:
    """SGLang's scheduler over its startup memory ``sm`` (:func:`gpuplan.engines.sglang.scheduler_of`)."""
    from ..engines import sglang

    return Scheduler(**sglang.scheduler_of(sm))


def trtllm_scheduler(s, sm) -> Scheduler:
    """TensorRT-LLM's in-flight batching for ``s`` over its startup memory ``sm``
    (:func:`gpuplan.engines.trtllm.scheduler_of`)."""
    from ..engines import trtllm

    return Scheduler(**trtllm.scheduler_of(s, sm))


def scheduler_for(s, startup, pool, longest: int) -> Scheduler | None:
    """The scheduler over an engine's start-up memory and KV pool (a plan's ``startup`` and ``pool``), with the
    settings the engine's profile gives (:meth:`gpuplan.engines.base.Engine.scheduler_settings`: vLLM's, SGLang's,
    TensorRT-LLM's); None when there is no pool, or one request of ``longest`` tokens does not fit it (vLLM: its
    ``max_model_len`` does not, and it would not start)."""
    if startup is None or pool is None:
        return None
    settings = ENGINES[pool.engine].scheduler_settings(s, startup, pool, longest)
    return None if settings is None else Scheduler(**settings)


@dataclass(frozen=True, kw_only=True)
class Outcome:
    ttft_s: np.ndarray
    tpot_s: np.ndarray
    e2e_s: np.ndarray
    duration_s: float
    input_tokens: int
    output_tokens: int
    preemptions: int
    completed: int
    # each completed request's send time and last token's time (engine clock, before request_s), in the order
    # of the latencies
    sent_at: np.ndarray = field(default_factory=lambda: np.zeros(0))
    finished_at: np.ndarray = field(default_factory=lambda: np.zeros(0))
    stopped: str = ""  # why the run ended before every request finished ("": it did not), in words
    sent_all: np.ndarray = field(default_factory=lambda: np.zeros(0))  # every request's send time (inf: never)
    refused: int = 0  # requests longer than the pool holds (never admitted)
    events: int = 0  # turns of the simulation's loop
    steps: int = 0  # engine steps simulated
    gaps: TokenGaps | None = None  # every output token's gap since the one before it (``inter_token_gaps``)
    peak_running: int = 0  # the most requests the engine ran at once

    @property
    def output_tokens_per_s(self) -> float:
        return self.output_tokens / self.duration_s if self.duration_s else 0.0

    @property
    def requests_per_s(self) -> float:
        return self.completed / self.duration_s if self.duration_s else 0.0

    def percentile(self, what: str, q: float) -> float:
        x = getattr(self, what)
        return float(np.percentile(x, q)) if len(x) else math.inf


def pool_hits(prompt: np.ndarray, distinct_prompts: int, shared_prefix: int, block: int) -> tuple[np.ndarray, int]:
    """Prefix-cache hits of requests cycling through ``distinct_prompts`` prompts in turn (inference-perf's
    shared-prefix data): from the second round each prompt's full blocks hit, in the first round only the
    ``shared_prefix`` (the group's system prompt) after the very first request. Returns each request's hit
    tokens and the blocks the cache holds for them (for :func:`simulate`'s ``prefix_hits``, ``cached_blocks``)."""
    n = len(prompt)
    whole = (prompt - 1) // block * block  # vLLM caches full blocks and computes at least the last token
    hits = np.where(np.arange(n) >= distinct_prompts, whole, np.minimum(shared_prefix, whole) // block * block)
    hits[:1] = 0
    return hits, int(min(distinct_prompts, n) * whole.mean() // block)


def arrivals(rate_rps: float, n: int, burstiness: float, rng) -> np.ndarray:
    """Arrival times of ``n`` requests: gamma inter-arrival times of shape ``burstiness`` and mean ``1/rate``
    (Poisson at 1), as ``vllm bench serve`` draws them."""
    gaps = rng.gamma(burstiness, 1.0 / (rate_rps * burstiness), n)
    return np.cumsum(gaps) - gaps[0]


def simulate(model: StepModel, engine: Scheduler, arrive: np.ndarray, prompt: np.ndarray, output: np.ndarray,
             shared_prefix: int = 0, max_steps: int = MAX_STEPS, max_concurrency: int | None = None,
             prefix_hits: np.ndarray | None = None, cached_blocks: int = 0, users: int | None = None,
             think_s: float = 0.0, rng=None, max_events: int = MAX_EVENTS, budget: Budget | None = None,
             until_sent: int | None = None, inter_token_gaps: bool = False, users_wait: bool = False) -> Outcome:
    """Serve the requests; returns per-request latencies (requests that never fit the pool are dropped and
    counted out of ``completed``). ``shared_prefix``: tokens every prompt starts with (cached after the first
    request); or ``prefix_hits``, each request's prompt tokens found in the prefix cache, with ``cached_blocks``
    blocks the cache holds for them. ``users``: a closed loop (see the module docstring); ``arrive`` is then
    ignored past its length, the number of requests sent in all.

    A turn of the loop (an event): the clients send what has arrived (:meth:`_Clients.send`); the engine schedules
    a step (:meth:`_Engine.schedule`), or waits for the next arrival; the step is timed (:func:`_timed`: a run of
    pure-decode steps advanced at once) and its tokens land (:meth:`_Engine.land`); requests that finish free
    their clients' seats (:meth:`_Clients.replied`). :func:`_outcome` turns the times into latencies.

    Bounded: at most ``max_steps`` engine steps and ``max_events`` turns, and what ``budget`` has left (its turns are
    spent from it); a run that reaches a bound, or whose queue can never be admitted, stops and says why in
    :attr:`Outcome.stopped`. No clock: a page request's deadline stops the work with no answer (:func:`_bound_hit`).

    ``until_sent``: a caller that judges only what happens until request ``until_sent`` (in the order sent) goes
    out ends the run once the clock has passed that send (not an early stop: :attr:`Outcome.sent_all` has every
    send time); ignored when a request can never fit the pool (the run's completed requests would differ).

    ``users_wait``: a closed loop's users are people (or benchmark clients): each next request is sent the
    parallel part of the model's ``request_s`` (less ``frontend_s``) after the user's think time, then queues for
    the frontend (a saturation run's users only keep the queue full).

    ``inter_token_gaps``: also keep every output token's gap since the request's previous token
    (:class:`TokenGaps`, :attr:`Outcome.gaps`): the inter-token latency benchmark clients pool over all requests."""
    n = len(arrive)
    prompt = np.asarray(prompt, dtype=np.int64)
    output = np.maximum(np.asarray(output, dtype=np.int64), 1)
    delay = model.request_s - model.frontend_s if users_wait else 0.0  # the frontend's part is its queue's
    clients = _Clients(arrive, max_concurrency or n, users, think_s, rng, delay, _Frontend.of(model, prompt))
    if not engine.prefix_cache:
        shared_prefix, prefix_hits = 0, None
    hit, shared_blocks = _cached_tokens(n, prompt, engine.block_tokens, shared_prefix, prefix_hits, cached_blocks)
    st = _state(engine, model, prompt, output, hit, shared_blocks)
    inbox = st.inbox if engine.recv_interval > 1 else st.waiting  # where sent requests wait to be taken in
    if inter_token_gaps:
        st.gaps = TokenGaps(n)
    budget, limit = budget or Budget(max_events), min(max_events, budget.left if budget else max_events)
    t, steps, events, stopped = 0.0, 0, 0, ""
    lag, busy, scheduled_at = model.async_host, False, 0.0  # async: this step was scheduled when the last began
    next_at = clients.next_at()  # when the next request can go out (inf: none left, or every seat taken)
    if until_sent is not None and (st.finished or not 0 <= until_sent < n):
        until_sent = None
    while st.finished < n:
        if until_sent is not None and clients.nxt > until_sent and t >= clients.sent[until_sent]:
            break
        stopped = _bound_hit(steps, max_steps, events, limit, max_events)
        if stopped:
            break
        events += 1
        cutoff = scheduled_at if lag and busy else t
        if next_at <= cutoff:
            next_at = clients.send(cutoff, st.too_big, inbox)
        if st.inbox:
            st.receive()
        step = st.schedule() if len(st.ra) or st.waiting else None
        if step is None:  # idle, or nothing fits (cannot happen with requests running): wait for the next arrival
            next_at = clients.streaming(t, 0.0)  # nothing streams while the engine idles
            if math.isinf(next_at):  # none left to send or hand over, or every seat held by the stuck queue
                if st.waiting:
                    stopped = f"stalled: {len(st.waiting):,} queued requests can never be admitted"
                break
            t, busy = max(t, next_at), False
            continue
        k, dt, last = st.timed(model, step, next_at, t)
        next_at = clients.streaming(t, model.tokens_per_step * k * step.seqs / dt if dt > 0 else 0.0)
        scheduled_at, busy = t + dt - last, True  # the last step's start
        t += dt
        steps += k
        st.count_steps(step, k)
        over = st.land(step, k, t, t - (k - 1) * last)
        if len(over):  # finished: their seats go back to the clients
            next_at = clients.replied(t, len(over))
    budget.spend(events)
    return _outcome(model, st, clients.sent, stopped, events, steps, output)


def _state(engine: Scheduler, model: StepModel, prompt, output, hit, shared_blocks: int) -> _Engine | _Ranks:
    """The engine's state: one scheduler, or one per attention data-parallel rank (SGLang's DP workers), each
    request's output as the steps it takes (:func:`output_steps`: a step yields ``model.tokens_per_step`` tokens)."""
    kind = _Ranks if engine.attention_ranks > 1 else _Engine
    return kind(engine, prompt, output_steps(model, output), hit, shared_blocks)


def output_steps(model: StepModel, output: np.ndarray) -> np.ndarray:
    """The decode steps each request's output takes: one token a step, or with speculative decoding the first token
    from the prompt's step and then :attr:`~.steptime.StepModel.tokens_per_step` a step (the acceptance length, its
    mean: ``1 + ceil((output - 1) / a)``). The scheduler runs requests in steps (a request's cache grows by one token
    a step in its blocks, so with speculation it holds ``1 / a`` of its output's cache: optimistic where the pool
    binds); the latencies count the output's tokens (:func:`_outcome`)."""
    a = model.tokens_per_step
    return output if a == 1 else 1 + np.ceil((output - 1) / a).astype(np.int64)


def _bound_hit(steps: int, max_steps: int, events: int, limit: int, max_events: int) -> str:
    """Which bound stops a simulation at this turn, in words ("": none; ``limit``: its events, with what its budget
    had left). Every 256 turns it also reads the page request's deadline (:func:`gpuplan.clock.in_time`)."""
    if events % 256 == 255:
        clock.in_time()
    if steps < max_steps and events < limit:
        return ""
    if steps >= max_steps:
        return f"stopped after {steps:,} engine steps (the bound is {max_steps:,})"
    if events >= max_events:
        return f"stopped after {events:,} events (the bound is {max_events:,})"
    return f"stopped after {events:,} events, what was left of its search's budget of simulated events"


@dataclass(slots=True)
class _Step:
    """One scheduled step: the requests (``idx``), the tokens each takes, its tokens in the cache before the step
    (``have``), which take prompt tokens (``prefilling``, ``n_pre`` of them; ``want`` their prompts), what each
    decoding one has left to generate (``rem``, pure-decode steps), and whether the queue is blocked (it cannot
    move until a request finishes)."""

    idx: np.ndarray
    take: np.ndarray
    have: np.ndarray
    prefilling: np.ndarray | None  # None: every one decodes
    n_pre: int
    want: np.ndarray | None
    rem: np.ndarray | None
    blocked: bool

    @property
    def seqs(self) -> int:
        """Requests the step holds."""
        return len(self.idx)


class _Engine:
    """The engine's state, as the steps change it: each request's tokens in the cache (``done``: prefix hits count
    as computed), tokens to prefill (``target``: the prompt, after a preemption the tokens generated too), output
    tokens still to generate (``owed``), blocks held, first-token and finish times; the free blocks, the running
    batch (``ra``, in the order admitted: an array, so that a step's arithmetic runs over it without list round
    trips) and the queue."""

    def __init__(self, engine: Scheduler, prompt, output, hit, shared_blocks: int) -> None:
        n, bt = len(prompt), engine.block_tokens
        self.engine, self.bt, self.prompt, self.output, self.hit = engine, bt, prompt, output, hit
        self.done = hit.copy()
        self.target = prompt.copy()
        self.owed = output.copy()
        self.ones = np.ones(n, dtype=np.int64)  # a decode's take, for any batch (read only: steps share it)
        self.ones.flags.writeable = False
        self.held = np.zeros(n, dtype=np.int64)
        self.first = np.full(n, np.nan)
        self.finish = np.full(n, np.nan)
        self.free = engine.kv_blocks - shared_blocks
        self.freed = -self.free  # blocks freed so far, less the free ones at the start: taken = freed - free
        self.kept = np.zeros(n, dtype=np.int64)  # a preempted request's full blocks left in the prefix cache
        self.evict_at = np.zeros(n, dtype=np.int64)  # blocks taken when the pool starts evicting them
        self.ra = np.zeros(0, dtype=np.int64)
        self.waiting: deque[int] = deque()
        self.inbox: deque[int] = deque()  # sent, not yet taken in (SGLang's --scheduler-recv-interval)
        self.recv_counter = 0  # decode steps since the scheduler last polled (recv_interval: a poll is due)
        self.prompting = 0  # running requests with prompt tokens left (chunked prompts mid-way, or just admitted)
        self.preempt = 0
        self.ratio = engine.reserve_ratio  # SGLang's new_token_ratio (:func:`_output_room`)
        self.gaps: TokenGaps | None = None  # the inter-token gaps, when kept
        self.peak = 0  # the most requests running at once
        self.too_big = np.ceil((prompt + output) / bt) > engine.kv_blocks
        if not engine.chunked_prefill:  # vLLM refuses a prompt longer than the step budget without chunking
            self.too_big |= prompt - hit > engine.max_num_batched_tokens
        self.finished = int(self.too_big.sum())

    def receive(self) -> None:
        """Take the sent requests in (``inbox``) if SGLang's scheduler polls for them now
        (``python/sglang/srt/managers/scheduler_recv_skipper.py`` ``SchedulerRecvSkipper.handle``, called by
        ``Scheduler.recv_requests`` every turn of the event loop: a counter grows by 1 per decode batch and per idle
        turn and by 1,000 per prefill batch, ``SGLANG_SCHEDULER_RECV_SKIPPER_WEIGHT_*``; the socket is read only
        when the counter reaches ``--scheduler-recv-interval``, which zeroes it). An idle engine spins through the
        threshold in microseconds: with nothing running it takes a request in on arrival."""
        if len(self.ra) and self.recv_counter < self.engine.recv_interval:
            return
        self.waiting.extend(self.inbox)
        self.inbox.clear()
        self.recv_counter = 0

    def steps_to_receive(self) -> int | None:
        """Decode steps until the scheduler next polls, when sent requests wait for it (None: no bound)."""
        return max(self.engine.recv_interval - self.recv_counter, 1) if self.inbox else None

    def count_steps(self, step: _Step, k: int) -> None:
        """Advance the poll counter (:meth:`receive`) by a step with prompts (a poll is due next) or ``k`` decode
        steps; each poll passed on the way, with nothing sent, zeroed it."""
        interval = self.engine.recv_interval
        if self.ratio and not step.n_pre:  # SGLang's new_token_ratio decays each decode step
            e = self.engine
            decay = (e.reserve_ratio - e.reserve_ratio_min) / e.reserve_decay_steps
            self.ratio = max(self.ratio - k * decay, e.reserve_ratio_min)
        if interval > 1:
            counter = interval if step.n_pre else self.recv_counter + k
            self.recv_counter = counter - (counter - 1) // interval * interval if counter > interval else counter

    def timed(self, model: StepModel, step: _Step, next_at: float, t: float) -> tuple[int, float, float]:
        """:func:`_timed` of ``step``, its decode runs cut at the scheduler's next poll."""
        return _timed(model, self, step, next_at, t, self.steps_to_receive())

    def schedule(self) -> _Step | None:
        """This step's requests: the running ones in order, each taking its next prompt chunk or one decode token
        out of the budget (:func:`_running_tokens`; under SGLang's prefill first only prompt chunks,
        :func:`_prompt_chunks`; :func:`_schedule_with_preemption` when the pool runs out), then waiting ones
        admitted (:func:`_admit_waiting`). None when nothing can run."""
        engine, ra, held = self.engine, self.ra, self.held
        budget = engine.max_num_batched_tokens
        if not len(ra) and engine.reserve_ratio:  # SGLang idle: self_check_during_idle resets new_token_ratio
            self.ratio = engine.reserve_ratio
        run_idx = run_take = left = pending = None
        first = 0  # the running requests scheduled are the first ``first`` ones, in order (None: others)
        owed_outputs = _owed_outputs(self) if engine.reserve_ratio and self.waiting else 0  # SGLang's reserve
        # prefill first (SGLang): a step of prompt tokens alone whenever one can be formed
        prefill_only = not engine.mixed_prefill and _prefill_ready(self, owed_outputs)
        if len(ra) and (self.prompting or not prefill_only):  # (else the running requests wait this step)
            have_ra = self.done[ra]
            if self.prompting:  # else every running request decodes: no prompt arithmetic
                left = self.target[ra] - have_ra
                pending = left > 0  # prompt tokens left
        if prefill_only and self.prompting:
            fits = _prompt_chunks(have_ra, left, pending, ra, held, budget, self.free, self.bt)
            if fits is not None:
                run_idx, run_take, wanted, need, total = fits
                held[run_idx] += need
                self.free -= total
                budget -= wanted
                first = None
        if len(ra) and run_idx is None and (self.prompting or not prefill_only):  # (prompt chunks that do not fit)
            held_ra = held[ra]
            first, run_take, wanted, need, total = _running_tokens(have_ra, left, held_ra, budget, self.bt,
                                                                   self.ones)
            if total <= self.free:
                if total:
                    held[ra[:first]] = held_ra[:first] + need
                    self.free -= total
                budget -= wanted
            else:
                before = self.preempt
                first, run_take, budget = _schedule_with_preemption(self, budget, run_take, need, held_ra)
                if self.preempt > before:  # vLLM admits no waiting request in a step that preempted
                    budget = 0
            run_idx = ra[:first]
        admitted: list[int] = []
        takes: list[int] = []
        if self.waiting and budget > 0 and (engine.mixed_prefill or prefill_only):
            prompts_in = first is None or (pending is not None and bool(pending[:first].any()))
            budget = _admit_waiting(self, budget, admitted, takes, prompts_in and run_idx is not None,
                                    owed_outputs)
            if admitted:
                self.ra = np.concatenate((self.ra, np.asarray(admitted, dtype=np.int64)))
                self.prompting += len(admitted)
                self.peak = max(self.peak, len(self.ra))
        if run_idx is not None and len(run_idx):
            idx, take = run_idx, run_take
            if admitted:
                idx = np.concatenate((run_idx, np.asarray(admitted, dtype=np.int64)))
                take = np.concatenate((run_take, np.asarray(takes, dtype=np.int64)))
        elif not admitted:
            return None
        else:
            idx, take = np.asarray(admitted, dtype=np.int64), np.asarray(takes, dtype=np.int64)
        if first is not None and not admitted:  # the first running requests: their tokens are known already
            have, prefilling = have_ra[:first], None if pending is None else pending[:first]
        else:
            have = self.done[idx]
            prefilling = have < self.target[idx]
        n_pre = 0 if prefilling is None else int(np.count_nonzero(prefilling))
        # the queue cannot move until a request finishes: it waits on max_num_seqs or on free blocks, not on this
        # step's token budget (decoding takes blocks, never frees them)
        blocked = bool(self.waiting) and (budget > 0 if engine.mixed_prefill else not prefill_only)
        return _Step(idx=idx, take=take, have=have, prefilling=prefilling, n_pre=n_pre,
                     want=self.target[idx] if n_pre else None,
                     rem=None if n_pre else self.owed[idx], blocked=blocked)

    def land(self, step: _Step, k: int, t: float, t_first: float | None = None) -> np.ndarray:
        """The step's tokens land at ``t`` (``k`` steps of them in a decode run, the first at ``t_first``):
        prompts complete (their first token), decodes generate, requests finish and free their blocks. Returns the
        finished requests."""
        idx, have = step.idx, step.have
        batch = None  # the running requests left, when known without a search
        gaps = self.gaps
        if step.n_pre:
            done = have + step.take  # k is 1 in a step with prompt tokens, and a decode takes 1
            self.done[idx] = done
            completes_prompt = step.prefilling & (done >= step.want)
            self.prompting -= int(np.count_nonzero(completes_prompt))
            owed = self.owed[idx] - (np.where(step.prefilling, 0, k) + completes_prompt)
            self.owed[idx] = owed
            fresh = completes_prompt & np.isnan(self.first[idx])
            newly = idx[fresh]
            self.first[newly] = t
            if gaps is not None:  # decodes, and prompts recomputed after a preemption, emit a token
                gaps.started(newly, t)
                gaps.emitted(idx[~step.prefilling | (completes_prompt & ~fresh)], t, 1, 0.0)
            over = idx[owed <= 0]
        else:
            self.done[idx] = have + k
            self.owed[idx] = step.rem - k
            if gaps is not None:
                gaps.emitted(idx, t if t_first is None else t_first, k, (t - t_first) / (k - 1) if k > 1 else 0.0)
            going = step.rem <= k
            over = idx[going]
            if len(over) and len(idx) == len(self.ra):  # every running request decoded: idx is the batch
                batch = idx[~going]
        if len(over):
            self.finish[over] = t
            released = int(_add(self.held[over]))
            self.free += released
            self.freed += released
            self.held[over] = 0
            self.ra = self.ra[np.isnan(self.finish[self.ra])] if batch is None else batch
            self.finished += len(over)
        return over


class _Dispatch:
    """SGLang's data-parallel controller in front of its DP attention ranks: each request it takes goes to the next
    rank in turn (``managers/data_parallel_controller.py`` ``round_robin_scheduler``, the default
    ``load_balance_method``), into that rank's ``queues`` entry."""

    def __init__(self, queues: list[deque[int]]) -> None:
        self.queues, self.turn = queues, 0

    def append(self, r: int) -> None:
        self.queues[self.turn].append(r)
        self.turn = (self.turn + 1) % len(self.queues)

    def __len__(self) -> int:
        return sum(len(q) for q in self.queues)

    def __bool__(self) -> bool:
        return any(self.queues)


@dataclass(slots=True)
class _RankStep:
    """One step of every DP attention rank that runs one (``parts``: each rank's engine and its step)."""

    parts: list[tuple[_Engine, _Step]]

    @property
    def seqs(self) -> int:
        return sum(len(s.idx) for _, s in self.parts)

    @property
    def n_pre(self) -> int:
        return sum(s.n_pre for _, s in self.parts)


class _Ranks:
    """SGLang's DP attention ranks (``Scheduler.attention_ranks``), each a scheduler of its own (an :class:`_Engine`
    over one GPU's pool, chunk and request cap: its own prefill-first choice, prompt chunks and decodes), fed round
    robin by the controller (:class:`_Dispatch`), stepping together: every rank's forward gathers the tokens of all
    ranks before each MLP and MoE layer (``models/deepseek_v2.py`` ``DeepseekV2DecoderLayer.forward``,
    ``all_gather``), and a rank with nothing to run runs an idle batch beside the others
    (``Scheduler.prepare_dp_attn_batch``: the ranks' token counts are all-gathered every turn, ``get_idle_batch``
    when any rank has work). So a prompt on one rank stalls only that rank's decodes; the others decode in the same
    step, which lasts as long as the busiest rank's attention and every rank's gathered tokens take
    (:meth:`timed`). SGLang 0.4.3.post2, 0.4.x."""

    def __init__(self, engine: Scheduler, prompt, output, hit, shared_blocks: int) -> None:
        self.ranks = [_Engine(engine, prompt, output, hit, shared_blocks) for _ in range(engine.attention_ranks)]
        first = self.ranks[0]
        self.engine, self.prompt, self.output, self.too_big = engine, prompt, output, first.too_big
        self.refused = int(first.too_big.sum())
        self.waiting = _Dispatch([e.waiting for e in self.ranks])
        self.inbox = _Dispatch([e.inbox for e in self.ranks])
        self.peak = 0

    @property
    def finished(self) -> int:
        return sum(e.finished for e in self.ranks) - (len(self.ranks) - 1) * self.refused

    @property
    def ra(self) -> np.ndarray:
        return np.concatenate([e.ra for e in self.ranks])

    @property
    def gaps(self) -> TokenGaps | None:
        return self.ranks[0].gaps

    @gaps.setter
    def gaps(self, gaps: TokenGaps) -> None:
        for e in self.ranks:  # one record: a request runs on one rank
            e.gaps = gaps

    @property
    def first(self) -> np.ndarray:
        return _merged([e.first for e in self.ranks])

    @property
    def finish(self) -> np.ndarray:
        return _merged([e.finish for e in self.ranks])

    @property
    def preempt(self) -> int:
        return sum(e.preempt for e in self.ranks)

    def receive(self) -> None:
        for e in self.ranks:
            if e.inbox:
                e.receive()

    def schedule(self) -> _RankStep | None:
        """Every rank's step (:meth:`_Engine.schedule`); None when no rank can run one."""
        parts = [(e, s) for e in self.ranks if (len(e.ra) or e.waiting) and (s := e.schedule()) is not None]
        self.peak = max(self.peak, sum(len(e.ra) for e in self.ranks))
        return _RankStep(parts) if parts else None

    def timed(self, model: StepModel, step: _RankStep, next_at: float, t: float) -> tuple[int, float, float]:
        """How long the ranks' step takes (as :func:`_timed`): every rank's tokens at once for the token-proportional
        work (the MLP and MoE layers run the gathered tokens of all ranks), the busiest rank's prompt attention,
        cache read and host work (each rank runs its own beside the others). A run of decode steps only when every
        rank that runs decodes all its requests with nothing to admit; it ends when the first rank's does."""
        works = [(_step_work(s.have, s.take, s.prefilling, s.n_pre, s.want), s) for _, s in step.parts]
        pre_tok = sum(w[0] for w, _ in works)
        pairs = max(w[1] for w, _ in works)
        sampled = sum(w[2] + len(s.idx) - s.n_pre for w, s in works)
        n_dec = float(sum(len(s.idx) - s.n_pre for _, s in works))
        busiest = float(max(len(s.idx) for _, s in works))
        dt1 = model.time(pre_tok, n_dec, max(w[3] for w, _ in works), pairs, float(step.n_pre), sampled,
                         host_seqs=busiest)
        decoding = all(not s.n_pre and (not e.waiting or s.blocked) and len(s.idx) == len(e.ra)
                       for e, s in step.parts)
        if not decoding:
            return 1, dt1, dt1
        k = min(_decode_run(s.rem, s.have, e.held[s.idx], e.free, e.bt) for e, s in step.parts)
        polls = [c for e, _ in step.parts if (c := e.steps_to_receive()) is not None]
        k = min([k, *polls])
        if k == 1:
            return 1, dt1, dt1
        mid = max(w[3] + len(s.idx) * (k - 1) / 2 for w, s in works)
        dt_mid = model.time(0.0, n_dec, mid, host_seqs=busiest)
        if next_at < math.inf and not all(s.blocked for _, s in step.parts):
            k = max(1, min(k, int((next_at - t) / dt_mid)))
        for e, s in step.parts:
            extra = np.maximum(-(-(s.have + k) // e.bt) + (s.have + 1) // -e.bt, 0)
            e.held[s.idx] += extra
            e.free -= int(_add(extra))
        return k, dt1 + (k - 1) * dt_mid, dt_mid if k > 1 else dt1

    def count_steps(self, step: _RankStep, k: int) -> None:
        for e, s in step.parts:
            e.count_steps(s, k)

    def land(self, step: _RankStep, k: int, t: float, t_first: float | None = None) -> np.ndarray:
        """Every rank's tokens land (:meth:`_Engine.land`); returns the finished requests."""
        over = [e.land(s, k, t, t_first) for e, s in step.parts]
        return np.concatenate(over) if len(over) > 1 else over[0]


def _merged(per_rank: list[np.ndarray]) -> np.ndarray:
    """Each request's time from the rank that ran it (nan on the others)."""
    return np.fmin.reduce(np.stack(per_rank), axis=0)


class TokenGaps:
    """Every output token's gap since its request's previous token: the inter-token latency (ITL) that ``vllm
    bench serve`` and genai-perf pool over all requests (``vllm/benchmarks/serve.py`` ``calculate_metrics``:
    ``itls += outputs[i].itl``), as opposed to TPOT, one mean per request. A decode step's tokens come ``dt`` after
    the previous ones; a decode stalled by a prompt batch (SGLang's prefill first) or a preemption shows as one
    long gap. Kept as counts in log-spaced bins (:data:`BINS_PER_DECADE` per decade from 1 us: 1 % wide) and the
    exact sum, so memory stays fixed however long the run."""

    BINS_PER_DECADE = 230  # 10^(1/230) = 1.0101: bins 1 % wide
    LOW_S = 1e-6
    DECADES = 10  # up to 10^4 s

    def __init__(self, n: int) -> None:
        self.last = np.full(n, np.nan)  # each request's last token
        self.counts = np.zeros(self.BINS_PER_DECADE * self.DECADES + 1)
        self.total_s = 0.0
        self.tokens = 0

    def started(self, idx: np.ndarray, t: float) -> None:
        """First tokens of ``idx`` at ``t`` (no gap: that is the time to first token)."""
        self.last[idx] = t

    def emitted(self, idx: np.ndarray, t_first: float, k: int, dt: float) -> None:
        """``k`` tokens of each request in ``idx``: the first at ``t_first``, the others ``dt`` apart."""
        if not len(idx):
            return
        first = t_first - self.last[idx]
        self._add(first, 1.0)
        if k > 1:
            self._add(np.array([dt]), float((k - 1) * len(idx)))
        self.total_s += float(_add(first)) + (k - 1) * len(idx) * dt
        self.tokens += k * len(idx)
        self.last[idx] = t_first + (k - 1) * dt

    def _add(self, gaps: np.ndarray, weight: float) -> None:
        at = np.log10(np.maximum(gaps, self.LOW_S) / self.LOW_S) * self.BINS_PER_DECADE
        bins = np.minimum(np.rint(at).astype(np.int64), len(self.counts) - 1)
        self.counts += np.bincount(bins, minlength=len(self.counts)) * weight

    @property
    def mean_s(self) -> float:
        return self.total_s / self.tokens if self.tokens else math.nan

    def percentile(self, q: float) -> float:
        """The ``q``-th percentile gap in seconds (the centre of its bin: within 0.5 %); nan without gaps."""
        if not self.tokens:
            return math.nan
        cum = np.cumsum(self.counts)
        i = int(np.searchsorted(cum, q / 100 * cum[-1], side="left"))
        return self.LOW_S * 10 ** (i / self.BINS_PER_DECADE)


def _timed(model: StepModel, st: _Engine, step: _Step, next_at: float, t: float,
           cap: int | None = None) -> tuple[int, float, float]:
    """How long ``step`` takes, and how many steps run back to back: a pure decode of every running request, with
    nothing the queue can admit, repeats until a request finishes or the next one arrives (that could be admitted),
    :func:`_decode_run`, and at most ``cap`` steps (the scheduler's next poll, :meth:`_Engine.steps_to_receive`);
    those steps' blocks are taken here. Returns the steps, their seconds and the last one's."""
    idx, have = step.idx, step.have
    pre_tok, pairs, finishing, ctx = _step_work(have, step.take, step.prefilling, step.n_pre, step.want)
    pre_seqs, n_dec = float(step.n_pre), float(len(idx) - step.n_pre)
    dt1 = model.time(pre_tok, n_dec, ctx, pairs, pre_seqs, n_dec + finishing)
    k = 1
    # a run's later steps hold more context, so none is shorter than this one (:meth:`StepModel.time` grows with
    # ``decode_context``): an arrival before this step ends cuts the run to it
    soon = next_at - t < dt1 and not step.blocked
    if not step.n_pre and not soon and (not st.waiting or step.blocked) and len(idx) == len(st.ra):
        k = _decode_run(step.rem, have, st.held[idx], st.free, st.bt)
        if cap is not None:
            k = min(k, cap)
        if k > 1 and st.waiting and st.ratio > st.engine.reserve_ratio_min and not st.engine.reserve_whole_outputs:
            k = _steps_to_room(st, k)
    if k == 1:
        return 1, dt1, dt1
    dt_mid = model.time(0.0, float(len(idx)), ctx + len(idx) * (k - 1) / 2)
    if next_at < math.inf and not step.blocked:
        k = max(1, min(k, int((next_at - t) / dt_mid)))
        if k == 1:
            return 1, dt1, dt1
    bt = st.bt
    if bt == 1:  # one-token pages (SGLang): k - 1 more each (the first step's are taken)
        st.held[idx] += k - 1
        st.free -= (k - 1) * len(idx)
    else:
        extra = np.maximum(-(-(have + k) // bt) + (have + 1) // -bt, 0)
        st.held[idx] += extra
        st.free -= int(_add(extra))
    return k, dt1 + (k - 1) * dt_mid, dt_mid


class _Clients:
    """Who sends the requests (see the module docstring): each at its arrival time (open loop), or ``users``
    each sending the next ``think_s`` seconds (exponential of that mean with ``rng``) after its last reply (closed
    loop), received by the engine ``delay_s`` later; no more than ``cap`` in flight (``max_concurrency``: a
    request waits for a free seat, and its latency counts from the send, ``sent``)."""

    def __init__(self, arrive, cap: int, users: int | None, think_s: float, rng, delay_s: float = 0.0,
                 frontend: _Frontend | None = None) -> None:
        n = len(arrive)
        self.users, self.ready, self.frontend = users, [], frontend
        # a user's next request reaches the engine its think time, plus the API server's own latency per request
        # (``delay_s``, StepModel.request_s: HTTP, tokenizing), after the last one's final token
        self.think = (lambda: rng.exponential(think_s) + delay_s) if think_s > 0 and rng is not None else \
            (lambda: think_s + delay_s)
        if users:  # request i goes out when a user is ready; times are filled in as they become known
            self.ready = sorted(self.think() for _ in range(users))
            arrive = np.full(n, math.inf)
            _next_user(arrive, self.ready, 0)
        self.arrive, self.n, self.cap = arrive, n, cap
        self.sent = np.asarray(arrive, dtype=float).copy()
        self.nxt, self.in_flight, self.full_until = 0, 0, -math.inf

    def next_at(self) -> float:
        """When the next request goes out (its arrival time) or the frontend hands one to the engine, whichever
        comes first; inf when all were sent or every seat is taken, and the frontend holds none."""
        at = float(self.arrive[self.nxt]) if self.nxt < self.n and self.in_flight < self.cap else math.inf
        return at if self.frontend is None else min(at, self.frontend.next_at())

    def send(self, cutoff: float, too_big, waiting: deque[int]) -> float:
        """Send the requests due by ``cutoff`` to the queue ``waiting`` (one too big for the pool is refused at
        once: its user thinks and sends another); returns :meth:`next_at`."""
        arrive, n, users, front = self.arrive, self.n, self.users, self.frontend
        nxt = self.nxt
        while nxt < n and arrive[nxt] <= cutoff and self.in_flight < self.cap:
            if not too_big[nxt]:
                self.sent[nxt] = max(arrive[nxt], self.full_until)
                if front is None:
                    waiting.append(nxt)
                else:
                    front.take(nxt, self.sent[nxt])
                self.in_flight += 1
            elif users:
                heapq.heappush(self.ready, arrive[nxt] + self.think())
            nxt += 1
            if users and nxt < n:
                _next_user(arrive, self.ready, nxt)
        self.nxt = nxt
        if front is not None:
            front.hand_over(cutoff, waiting)
        return self.next_at()

    def streaming(self, t: float, tokens_per_s: float) -> float:
        """From ``t`` the engine emits ``tokens_per_s`` tokens a second, which the frontend streams
        (:meth:`_Frontend.set_load`); returns :meth:`next_at`."""
        if self.frontend is not None:
            self.frontend.set_load(t, tokens_per_s)
        return self.next_at()

    def replied(self, t: float, count: int) -> float:
        """``count`` requests finished at ``t``: their users start thinking, their seats free up; returns
        :meth:`next_at`."""
        if self.users:
            for _ in range(count):
                heapq.heappush(self.ready, t + self.think())
            if self.nxt < self.n:
                _next_user(self.arrive, self.ready, self.nxt)
        if self.in_flight == self.cap:
            self.full_until = t
        self.in_flight -= count
        return self.next_at()


class _Frontend:
    """The engine's frontend process (vLLM's API server, SGLang's TokenizerManager: one Python process for every
    request) in front of the engine's queue. A request sent waits for the requests sent before it, then takes
    ``serial_s`` of the process's time (:attr:`StepModel.frontend_s`: parsing, the hand-off) and ``prompt_token_s``
    for each token of its prompt (:attr:`StepModel.frontend_prompt_token_s`: the tokenizer's call), then reaches the
    engine's queue. The same process streams every output token the engine emits (``token_s`` each,
    :attr:`StepModel.frontend_token_s`): that takes the share ``load`` of its time (:meth:`set_load`, at most
    :attr:`MOST_LOAD`), and new requests get the rest. A burst on an idle engine is handed over ``serial_s`` apart,
    the later ones farther apart as the first ones stream. The engine does not wait for the stream (vLLM's engine
    core and SGLang's scheduler push their outputs and go on), so the steps keep their own pace; tokens that reach
    the clients later than the engine makes them (a process streaming more than it can) are not modelled."""

    # the most of the process streaming takes from new requests: asyncio runs a waiting request's handler between
    # the chunks the output handler yields after (vLLM: VLLM_V1_OUTPUT_PROC_CHUNK_SIZE), so admissions never stop
    MOST_LOAD = 0.9

    def __init__(self, serial_s: float, token_s: float, prompt: np.ndarray | None = None,
                 prompt_token_s: float = 0.0) -> None:
        self.serial_s, self.token_s = serial_s, token_s
        self.prompt, self.prompt_token_s = prompt, prompt_token_s
        self.clock = -math.inf  # the time up to which the process's work is counted
        self.idle_since = -math.inf  # when it finished its last request
        self.load = 0.0  # the share of the process streaming takes now
        self.left = 0.0  # seconds of the first queued request's work left (at the whole process's speed)
        self.queue: deque[tuple[float, int]] = deque()  # (sent, request), in the order sent
        self.done: deque[tuple[float, int]] = deque()  # (handed over at, request), in that order

    @classmethod
    def of(cls, model: StepModel, prompt: np.ndarray | None = None) -> _Frontend | None:
        """The frontend of ``model`` for requests of ``prompt`` tokens (None: its requests reach the engine as
        sent, no serial part)."""
        if model.frontend_s <= 0:
            return None
        return cls(model.frontend_s, model.frontend_token_s, prompt, model.frontend_prompt_token_s)

    def serial(self, r: int) -> float:
        """The process's time for request ``r`` before the engine gets it: the fixed part and its prompt's
        tokenizing."""
        if self.prompt is None or not self.prompt_token_s:
            return self.serial_s
        return self.serial_s + float(self.prompt[r]) * self.prompt_token_s

    def take(self, r: int, sent: float) -> None:
        """Request ``r``, sent at ``sent``, joins the queue."""
        if not self.queue:  # an idle process starts on it as sent (the loop may have counted past that)
            self.clock, self.left = max(self.idle_since, sent), self.serial(r)
        self.queue.append((sent, r))

    def advance(self, t: float) -> None:
        """Count the process's work up to ``t``."""
        if t <= self.clock:
            return
        rate, queue = 1.0 - self.load, self.queue
        while queue:
            end = self.clock + self.left / rate
            if end > t:
                self.left -= (t - self.clock) * rate
                break
            self.done.append((end, queue.popleft()[1]))
            self.idle_since = end
            self.clock, self.left = (max(end, queue[0][0]), self.serial(queue[0][1])) if queue else (end, 0.0)
            if self.clock > t:
                return
        self.clock = t

    def set_load(self, t: float, tokens_per_s: float) -> None:
        """From ``t`` the engine emits ``tokens_per_s`` output tokens a second, each streamed by the process."""
        self.advance(t)
        self.load = min(tokens_per_s * self.token_s, self.MOST_LOAD)

    def hand_over(self, t: float, waiting: deque[int]) -> None:
        """Hand the requests the process is done with by ``t`` to the engine's queue ``waiting``."""
        self.advance(t)
        done = self.done
        while done and done[0][0] <= t:
            waiting.append(done.popleft()[1])

    def next_at(self) -> float:
        """When the process hands over its next request at the present load (inf: it holds none)."""
        if self.done:
            return self.done[0][0]
        return self.clock + self.left / (1.0 - self.load) if self.queue else math.inf


def _cached_tokens(n: int, prompt: np.ndarray, bt: int, shared_prefix: int, prefix_hits: np.ndarray | None,
                   cached_blocks: int) -> tuple[np.ndarray, int]:
    """Each request's prompt tokens found in the prefix cache (at least the last token is computed), and the blocks
    the cache holds for them (see :func:`simulate`)."""
    if prefix_hits is not None:
        return np.minimum(np.asarray(prefix_hits, dtype=np.int64), prompt - 1), cached_blocks
    hit = np.zeros(n, dtype=np.int64)
    if shared_prefix:
        hit[1:] = np.minimum(shared_prefix, prompt[1:] - 1) // bt * bt  # vLLM caches and matches full blocks
        return hit, shared_prefix // bt
    return hit, cached_blocks


def _running_tokens(have, left, held, budget: int, bt: int, ones):
    """The running requests' tokens this step, in order (``have`` in the cache, ``left`` of the prompt, None when
    every one decodes; ``held`` blocks each; ``ones``: at least as many ones, read only): a decode takes one, a prompt
    its rest, until the budget runs out.
    Returns how many the budget reaches (the first ones), their tokens, the tokens in all, the new blocks each
    needs and their sum (more than the free blocks: requests are preempted, :func:`_schedule_with_preemption`)."""
    if left is None:
        want, wanted = ones[:len(have)], len(have)
    else:
        want = np.maximum(left, 1)  # a decode takes one token
        wanted = int(_add(want))
    if wanted <= budget:  # all of them fit the budget whole (the usual step)
        m, takes = len(want), want
    else:
        ahead = want.cumsum() - want
        m = int(np.searchsorted(ahead, budget, side="left"))
        takes = np.minimum(want[:m], budget - ahead[:m])
        wanted = int(_add(takes))
        have, held = have[:m], held[:m]
    need = np.maximum((have + takes if bt == 1 else (have + takes + (bt - 1)) // bt) - held, 0)
    return m, takes, wanted, need, int(_add(need))


def _prompt_chunks(have, left, pending, ra, held, budget: int, free: int, bt: int):
    """Under SGLang's prefill first: only the running requests with prompt tokens left (``pending``: a chunked
    prompt continues) take them, in order, until the budget runs out; the decodes wait. Returns the requests that
    take any, their tokens, the tokens in all, their new blocks and their sum; None when the free blocks cannot
    hold them."""
    p = np.flatnonzero(pending)
    want = left[p]
    ahead = want.cumsum() - want
    takes = np.minimum(np.maximum(budget - ahead, 0), want)
    sel = takes > 0
    p, takes = p[sel], takes[sel]
    idx = ra[p]
    need = np.maximum((have[p] + takes + (bt - 1)) // bt - held[idx], 0)
    total = int(_add(need))
    return None if total > free else (idx, takes, int(_add(takes)), need, total)


def _admit_waiting(st: _Engine, budget: int, admitted: list[int], takes: list[int], prompts_in: bool,
                   owed_outputs: int) -> int:
    """Admit waiting requests in arrival order while the step's token budget, ``max_num_seqs`` and the free
    blocks allow: a prompt takes what the budget leaves (chunked prefill) or waits until it fits whole; from vLLM
    0.19 its whole known sequence must fit the free blocks; under TensorRT-LLM's ``GUARANTEED_NO_EVICT`` its whole
    sequence with its output, beside what the running requests still need to finish (``owed``); under SGLang's
    ``max_prefill_tokens`` while :func:`_closes_prefill_batch` lets it (``prompts_in``: the step holds a prompt
    chunk already); under SGLang's reserve while :func:`_output_room` holds it (``owed_outputs``). Appends them and
    their tokens to ``admitted`` and ``takes``; returns the budget left."""
    engine, waiting, done, target, held = st.engine, st.waiting, st.done, st.target, st.held
    bt, seats = engine.block_tokens, engine.max_num_seqs - len(st.ra)
    owed = _blocks_to_finish(st, st.ra) if engine.reserve_to_completion and waiting else 0
    # what the batch leaves of max_prefill_tokens: SGLang takes the batch's tokens out of both alike
    cap_left = budget - (engine.max_num_batched_tokens - engine.max_prefill_tokens)
    room = _output_room(st, owed_outputs) if engine.reserve_ratio else 0.0
    while waiting and budget > 0 and len(admitted) < seats:
        r = waiting[0]
        have, want, has = int(done[r]), int(target[r]), int(held[r])
        if st.kept[r]:
            have = max(have, _still_cached(st, r))
        if engine.max_prefill_tokens and _closes_prefill_batch(engine, want - have, cap_left,
                                                                prompts_in or bool(admitted)):
            break
        take = min(want - have, budget)
        if not engine.chunked_prefill and take < want - have:
            break
        need = -(-(have + take) // bt) - has
        whole = -(-want // bt) - has if engine.reserve_full_sequence else need
        if engine.reserve_to_completion:
            whole = -(-int(st.prompt[r] + st.output[r]) // bt) - has
            if owed + whole > st.free:
                break
            owed += whole - need
        elif max(need, whole) + engine.admit_watermark_blocks > st.free:
            break
        if engine.reserve_whole_outputs:
            if not _fits_to_finish(st, r, admitted):
                break
        elif engine.reserve_ratio:
            out = min(int(st.owed[r]), engine.output_clip)
            if want - have + out >= room:
                break
            room -= take + (out if take == want - have else 0)
        waiting.popleft()
        done[r] = have
        st.kept[r] = 0
        st.free -= need
        held[r] += need
        admitted.append(r)
        takes.append(take)
        budget -= take
        cap_left -= take
    return budget


def _closes_prefill_batch(engine: Scheduler, prompt: int, cap_left: int, started: bool) -> bool:
    """Whether SGLang's ``--max-prefill-tokens`` closes the prefill batch before a waiting prompt of ``prompt``
    tokens, ``cap_left`` being what the batch leaves of it (``python/sglang/srt/managers/schedule_policy.py``
    ``PrefillAdder``: ``rem_input_tokens``, taken down by every prompt and chunk the batch holds). Up to 0.5.12.post1,
    and without chunked prefill in every release, ``add_one_req`` refuses a prompt at least as long as
    ``rem_input_tokens`` once the batch holds one (``started``; the first prompt runs whatever its length; 0.4.x
    tests ``>``, 0.5 ``>=``). From 0.5.13 with chunked prefill that test is gone: ``budget_state`` closes the batch
    after the prompt that brings ``rem_input_tokens`` to 0, which is taken whole or up to the chunk (read in the
    0.4.2.post4, 0.4.3.post2, 0.5.12, 0.5.12.post1, 0.5.13 and 0.5.19 wheels)."""
    if engine.prefill_cap_takes_last and engine.chunked_prefill:
        return cap_left <= 0
    return started and prompt >= cap_left


def _keep_preempted(st: _Engine, gone, held_gone) -> None:
    """Record what the prefix cache keeps of the requests ``gone`` (holding ``held_gone`` blocks) as vLLM V1 preempts
    them, the last admitted first (``vllm/v1/core/sched/scheduler.py``: the preempted request's blocks freed,
    ``num_computed_tokens`` back to 0, the request to the head of the waiting queue). Freed blocks join the end of
    the pool's free queue, each request's in reverse order "so that the tail blocks are evicted first"
    (``vllm/v1/core/kv_cache_manager.py`` ``KVCacheManager.free``), and keep their hashes until ``get_new_blocks``
    hands them out from the queue's front (``vllm/v1/core/block_pool.py``, ``_maybe_evict_cached_block``): a
    request's full blocks (``kept``) stay cached until the pool has handed out every block ahead of them in the
    queue and its partial last block (``evict_at``, in blocks taken since the start). When it resumes,
    ``get_computed_blocks`` finds what is left (:func:`_still_cached`)."""
    order = np.arange(len(gone))[::-1]  # preempted from the end of the running batch
    ahead = st.free + np.concatenate(([0], np.cumsum(held_gone[order])[:-1]))
    full = np.minimum(st.done[gone[order]] // st.bt, held_gone[order])
    taken = st.freed - st.free
    st.kept[gone[order]] = full
    st.evict_at[gone[order]] = taken + ahead + held_gone[order] - full


def _still_cached(st: _Engine, r: int) -> int:
    """Tokens of the preempted request ``r`` the prefix cache still holds (:func:`_keep_preempted`): its full blocks
    less those the pool has handed out since, tail first; at most all but the last token of what it must recompute
    (``get_computed_blocks``: ``max_cache_hit_length = request.num_tokens - 1``), in whole blocks."""
    evicted = max(st.freed - st.free - int(st.evict_at[r]), 0)
    blocks = min(max(int(st.kept[r]) - evicted, 0), (int(st.target[r]) - 1) // st.bt)
    return blocks * st.bt


def _blocks_to_finish(st: _Engine, idx) -> int:
    """Blocks the requests ``idx`` still need to hold their whole sequences (prompt + output) beyond those they
    hold: what TensorRT-LLM's ``GUARANTEED_NO_EVICT`` keeps back for the running requests
    (``GuaranteedNoEvictScheduler``: each request's remaining blocks to completion)."""
    if not len(idx):
        return 0
    whole = -(-(st.prompt[idx] + st.output[idx]) // st.bt)
    return int(_add(np.maximum(whole - st.held[idx], 0)))


def _step_work(have, take, prefilling, n_pre: int, want_all) -> tuple[float, float, float, float]:
    """What the step computes, for :meth:`StepModel.time`: prompt tokens, attention pairs of the prompt chunks
    (each token attends to the context before it and half its chunk), prompts finishing this step, and the
    decoding requests' context tokens. ``have``: each scheduled request's tokens in the cache, ``take`` its tokens
    this step, ``prefilling`` whether they are prompt tokens (``n_pre`` of them), ``want_all`` its prompt."""
    if n_pre == 1:  # one prompt chunk beside the decodes (the usual mixed step): scalars
        j = int(prefilling.argmax())
        tpj, hpj = int(take[j]), int(have[j])
        finishing = 1.0 if hpj + tpj >= int(want_all[j]) else 0.0
        return float(tpj), float(tpj * (hpj + tpj / 2)), finishing, float(int(_add(have)) - hpj)
    if n_pre:  # (a pure-decode step skips this arithmetic: the common case)
        tp, hp = take[prefilling], have[prefilling]
        return (float(_add(tp)), float(_add(tp * (hp + tp / 2))),
                float(np.count_nonzero(hp + tp >= want_all[prefilling])), float(_add(have) - _add(hp)))
    return 0.0, 0.0, 0.0, float(_add(have))


def _decode_run(rem, have, held, free: int, bt: int) -> int:
    """Pure-decode steps that can run back to back: until the first request finishes (``rem`` tokens left each),
    halved until the free blocks hold the growing contexts (``have`` tokens, ``held`` blocks each). The halving
    runs first on a lower bound of the blocks (the ceiling of the sum: exact for one-token pages), then on the
    sum of each request's ceiling."""
    k = int(rem.min())
    if k > 1:
        n, have_all, held_all = len(have), int(_add(have)), int(_add(held))
        while k > 1 and -(-(have_all + k * n) // bt) - held_all > free:
            k //= 2
        while bt > 1 and k > 1 and int(_add(-(-(have + k) // bt) - held)) > free:
            k //= 2
    return k


def _outcome(model: StepModel, st: _Engine, sent, stopped: str, events: int, steps: int,
             output: np.ndarray) -> Outcome:
    """The latencies of the completed requests (a request's first token and last token plus the model's
    per-request latency outside the engine, from its send), the ``output`` tokens served (each request's, whatever
    steps they took: :func:`output_steps`) and the time it took."""
    finish, first = st.finish, st.first
    ok = ~np.isnan(finish)
    after = model.request_s - model.frontend_s  # the frontend's serial part is in first and finish already
    ttft = first[ok] - sent[ok] + after
    e2e = finish[ok] - sent[ok] + after
    out = output[ok]
    tpot = np.where(out > 1, (finish[ok] - first[ok]) / np.maximum(out - 1, 1), 0.0)
    return Outcome(ttft_s=ttft, tpot_s=tpot, e2e_s=e2e,
                   duration_s=float(finish[ok].max() + after - sent[0]) if ok.any() else 0.0,
                   input_tokens=int(st.prompt[ok].sum()), output_tokens=int(out.sum()), preemptions=st.preempt,
                   completed=int(ok.sum()), sent_at=sent[ok], finished_at=finish[ok], stopped=stopped,
                   events=events, steps=steps, sent_all=sent, refused=int(st.too_big.sum()), gaps=st.gaps,
                   peak_running=st.peak)


def _prefill_ready(st: _Engine, owed_outputs: int) -> bool:
    """Whether a prefill batch forms this step (SGLang's ``get_new_batch_prefill``): a running request has prompt
    tokens left (a chunked prompt continues), or the first waiting request fits a seat, the free pool and the reserve
    (:func:`_output_room` of ``owed_outputs``)."""
    if st.prompting:
        return True
    engine, waiting, done_tokens, target, held = st.engine, st.waiting, st.done, st.target, st.held
    if not waiting or len(st.ra) >= engine.max_num_seqs:
        return False
    r = waiting[0]
    have, want, has = int(done_tokens[r]), int(target[r]), int(held[r])
    if not engine.chunked_prefill and want - have > engine.max_num_batched_tokens:
        return False
    take = min(want - have, engine.max_num_batched_tokens)
    bt = engine.block_tokens
    need = -(-(have + take) // bt) - has
    whole = -(-want // bt) - has if engine.reserve_full_sequence else need
    if engine.reserve_whole_outputs:
        if not _fits_to_finish(st, r, []):
            return False
    elif engine.reserve_ratio and \
            want - have + min(int(st.owed[r]), engine.output_clip) >= _output_room(st, owed_outputs):
        return False
    return max(need, whole) + engine.admit_watermark_blocks <= st.free


def _fits_to_finish(st: _Engine, r: int, admitted: list[int]) -> bool:
    """SGLang's admission of an ``ignore_eos`` request with the radix cache off (sgl-project/sglang
    ``python/sglang/srt/managers/schedule_policy.py`` ``PrefillAdder.add_one_req_ignore_eos``, 0.3.5 to 0.4.3.post2
    read; ``add_one_req`` hands such requests to it): each running request, each one admitted to this batch and
    ``r`` owe their whole remaining output (``tokens_left``, new_token_ratio 1.0 for ``ignore_eos``) and hold their
    prompt and generated tokens (``tokens_occupied``); sorted by what they owe, the ``bs`` requests still running
    when the i-th finishes take the next one's ``tokens_left`` each (``decode_steps``), which the free pool less
    ``r``'s prompt (``cur_rem_tokens - len(origin_input_ids)``) plus what the ones before have freed must exceed.
    (0.5 takes the i-th's own ``tokens_left`` and keeps one token a request back; not simulated.)"""
    idx = np.concatenate([st.ra, np.asarray(admitted, dtype=st.ra.dtype), [r]])
    left = st.owed[idx]
    keep = left > 0
    idx, left = idx[keep], left[keep]
    order = np.argsort(left, kind="stable")
    left = left[order].astype(np.int64)
    occupied = (st.prompt[idx] + st.output[idx] - st.owed[idx])[order].astype(np.int64)
    freed = np.concatenate([[0], np.cumsum(occupied)[:-1]])
    steps = np.concatenate([left[1:], left[-1:]])
    bs = len(left) - np.arange(len(left))
    return bool(np.all(st.free - int(st.prompt[r]) + freed - steps * bs > 0))


def _output_room(st: _Engine, owed: int) -> float:
    """What SGLang's admission leaves of the free pool (sgl-project/sglang
    ``python/sglang/srt/managers/schedule_policy.py`` ``PrefillAdder.rem_total_tokens``): the free tokens less each
    running request's remaining output, clipped to ``CLIP_MAX_NEW_TOKENS`` (4,096) and times ``new_token_ratio``
    (``_get_running_request_total_token_offset``). ``PrefillAdder.add_one_req`` admits a waiting prompt only when
    its whole uncached prompt plus its clipped output is less than that (``total_tokens >= rem_total_tokens``:
    ``NO_TOKEN``), and takes each admitted prompt's tokens (with its clipped output, once whole) out of it
    (``_update_prefill_budget``). ``new_token_ratio`` (``scheduler.py``: ``init_new_token_ratio`` 0.7 x
    ``schedule_conservativeness``, ``min_new_token_ratio`` 0.14 of it, ``new_token_ratio_decay`` over 600 decode
    steps) falls each decode step (``update_running_batch``), is reset when the scheduler idles
    (``self_check_during_idle``) and raised by a retraction (``ScheduleBatch.retract_decode``, :func:`_retracted`).
    The radix cache's evictable tokens are not counted (the simulation keeps only the shared prefix). ``owed``: the
    running requests' clipped outputs (:func:`_owed_outputs`), which stay as they are through a step's scheduling."""
    return st.free - owed * st.ratio


def _owed_outputs(st: _Engine) -> int:
    """The running requests' remaining outputs, each clipped to ``output_clip`` (:func:`_output_room`)."""
    ra = st.ra
    return int(_add(np.minimum(st.owed[ra], st.engine.output_clip))) if len(ra) else 0


def _steps_to_room(st: _Engine, k: int) -> int:
    """The decode steps, at most ``k``, after which the first waiting request fits :func:`_output_room` as
    ``new_token_ratio`` decays (each step the running requests take a token each and owe one less, and the ratio
    falls by its decay), so that a decode run stops where SGLang's scheduler would admit it; ``k`` if it never does
    within them (or the batch is full)."""
    e, ra, r = st.engine, st.ra, st.waiting[0]
    if len(ra) >= e.max_num_seqs:
        return k
    need = int(st.target[r] - st.done[r]) + min(int(st.owed[r]), e.output_clip)
    owed = np.minimum(st.owed[ra], e.output_clip)
    falling = int(np.count_nonzero(st.owed[ra] <= e.output_clip))  # clipped outputs stay at the clip
    j = np.arange(1, k + 1)
    ratio = np.maximum(st.ratio - j * (e.reserve_ratio - e.reserve_ratio_min) / e.reserve_decay_steps,
                       e.reserve_ratio_min)
    # (the first step's blocks are taken already, its token not yet emitted)
    room = st.free - len(ra) * (j - 1) - ratio * (int(_add(owed)) - falling * j)
    fits = np.flatnonzero(need < room)
    return max(int(fits[0]) + 1, 1) if len(fits) else k


def _retracted(st: _Engine) -> None:
    """SGLang's ``new_token_ratio`` after a retraction (``ScheduleBatch.retract_decode``, sgl-project/sglang
    ``python/sglang/srt/managers/schedule_batch.py``): the running requests' decoded tokens plus
    ``RETRACT_DECODE_STEPS`` (20) each, over their ``max_new_tokens`` (+1), at most 1."""
    ra, out = st.ra, st.output[st.ra]
    decoded = int(_add(out - st.owed[ra])) if len(ra) else 0
    st.ratio = min(1.0, (decoded + 20 * len(ra)) / (int(_add(out)) + 1 if len(ra) else 1))


def _next_user(arrive: np.ndarray, ready: list[float], nxt: int) -> None:
    """Closed loop: request ``nxt`` (the next to send) goes out at the earliest time a user is ready (a user
    readied since it was timed may come first: its time goes back to the heap)."""
    if not math.isinf(arrive[nxt]):
        heapq.heappush(ready, float(arrive[nxt]))
    arrive[nxt] = heapq.heappop(ready) if ready else math.inf


def _schedule_with_preemption(st: _Engine, budget: int, take, need, held_ra) -> tuple[int, np.ndarray, int]:
    """The running requests in order when the pool cannot hold their next tokens: a request that needs a block the
    pool lacks preempts the most recently admitted ones (recompute: their blocks freed, back to the head of the
    queue) until it fits, itself if it is the last. ``take`` and ``need``: the tokens and new blocks of the
    requests the budget reaches (:func:`_running_tokens`), ``held_ra`` the blocks each running request holds.
    Returns how many are served (the first ones), their tokens and the budget left.

    In closed form rather than one request at a time (a full pool of one-token pages, SGLang's, preempts at every
    step, and a walk over thousands of running requests each step took minutes): the requests the budget reaches
    take their tokens in order (``need`` new blocks each, ``S_i`` the running sum); request ``i`` is served once the
    pool holds ``S_i``, that is when the tail from ``p_i`` on is preempted, ``p_i`` the last position whose suffix
    of held blocks ``H[p]`` covers ``S_i - free``; the first ``i`` with ``p_i <= i`` goes with everything after it."""
    ra, held, done, target = st.ra, st.held, st.done, st.target
    n, m = len(ra), len(need)
    s = np.cumsum(need)
    # H[n - k]: blocks held by the last k running requests; p_i the largest p with H[p] >= S_i - free
    from_end = np.concatenate(([0], np.cumsum(held_ra[::-1])))
    last = n - int(np.searchsorted(from_end, s[-1] - st.free, side="left")) if m else n
    if last >= m:  # every request reached is served (p_i >= p_last > i)
        served, cut = m, last
    else:  # p_i >= p_last > i below p_last: the first i with p_i <= i is at p_last or after it
        lo = max(last, 0)
        p = n - np.searchsorted(from_end, s[lo:] - st.free, side="left")
        served = cut = lo + int(np.flatnonzero(p <= np.arange(lo, m))[0])
    gone = ra[cut:]
    if len(gone):
        if st.engine.keeps_preempted:
            _keep_preempted(st, gone, held_ra[cut:])
        released = int(_add(held_ra[cut:]))
        st.free += released
        st.freed += released
        st.prompting -= int(np.count_nonzero(done[gone] < target[gone]))
        held[gone] = 0
        done[gone] = st.hit[gone]
        target[gone] = st.prompt[gone] + st.output[gone] - st.owed[gone]
        st.waiting.extendleft(gone[::-1].tolist())
        st.ra = ra[:cut]
        st.preempt += len(gone)
        if st.engine.reserve_ratio:
            _retracted(st)
    if served:
        st.free -= int(s[served - 1])
        held[ra[:served]] = held_ra[:served] + need[:served]
        budget -= int(_add(take[:served]))
    return served, take[:served], budget


