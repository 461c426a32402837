"""A discrete-event simulation of vLLM V1's scheduler, one engine step at a time (numpy; imported on demand).

Each step (``vllm/v1/core/sched/scheduler.py`` ``Scheduler.schedule``): running requests first, in order, each
taking its next prefill chunk or one decode token out of the ``max_num_batched_tokens`` budget; a request that needs
a KV block the pool lacks preempts the most recently admitted running request (recompute: its blocks are freed, it
returns to the head of the queue keeping the tokens it generated, and recomputes prompt and those tokens when it
resumes); then, unless this step preempted, waiting requests are admitted in arrival order while the budget,
``max_num_seqs`` and free blocks allow (chunked prefill: a long prompt takes several steps; without it,
``--no-enable-chunked-prefill``, a prompt waits until it fits the step's budget whole). From 0.19 a waiting request
is admitted only if its whole known sequence fits the free blocks, not just its first chunk
(``scheduler_reserve_full_isl``, vLLM PR #37307: it stops chunked prompts from being admitted, preempted and
re-admitted in a loop). The step lasts :meth:`StepModel.time` of what it holds; a request's first token comes at the
end of the step that finishes its prompt, plus the model's per-request latency outside the engine (``request_s``).
Shared-prefix tokens hit the prefix cache after the first request (no compute, blocks shared). A client with
``max_concurrency`` (``vllm bench serve --max-concurrency``, inference-perf's workers) sends a request only while
fewer are in flight; latencies count from the send. Closed loop (``users`` with ``think_s``): each of ``users``
clients sends its next request ``think_s`` seconds after its last one finished (exponential think times of that
mean; 0: back to back, as ``vllm bench serve --max-concurrency``). With vLLM's async scheduling
(``StepModel.async_host``, 0.14+) the engine core schedules step N+1 while the GPU runs step N
(``vllm/v1/engine/core.py`` ``step_with_batch_queue``), so a request arriving during step N first runs in step N+2:
one step later than the synchronous loop, unless the engine was idle. Runs of pure-decode steps with no arrival in
between are advanced together (their step times summed at the mid-point context), which keeps light loads fast.

SGLang's scheduler (:func:`sglang_scheduler`) runs in the same loop with ``mixed_prefill`` off
(``python/sglang/srt/managers/scheduler.py`` ``get_next_batch_to_run``): whenever a prefill batch forms (a chunked
prompt continues, or the first waiting request fits a seat and the free pool) the step holds prompt tokens alone and
the decodes wait; otherwise every running request decodes. Its radix cache matches token by token (one-token
pages), where vLLM's prefix cache matches whole blocks.
"""

from __future__ import annotations

import heapq
import math
from dataclasses import dataclass, field

import numpy as np

from .steptime import StepModel

_add = np.add.reduce  # ndarray.sum without its Python wrapper (the step loop sums small arrays ~6 times a step)


@dataclass(frozen=True, kw_only=True)
class Scheduler:
    kv_blocks: int
    block_tokens: int = 16
    max_num_seqs: int = 256
    max_num_batched_tokens: int = 8192
    chunked_prefill: bool = True
    reserve_full_sequence: bool = False  # vLLM 0.19+: admit a waiting request only if its whole sequence fits
    # vLLM mixes prompt chunks and decodes in one step; SGLang (without --enable-mixed-chunk) runs a prefill batch
    # alone whenever it can form one, the decodes waiting that step
    mixed_prefill: bool = True


def vllm_scheduler(s, mem, *, chunked_prefill: bool = True, blocks: int | None = None) -> Scheduler:
    """The scheduler of ``s``'s vLLM release over the KV pool and limits its startup ``mem`` gives
    (:func:`gpuplan.engines.vllm.startup_memory`); ``blocks``: the pool in 16-token blocks of requests
    (:attr:`gpuplan.engines.KvPool.sim_blocks`: hybrid models' sliding-window pages counted), by default
    its block ids."""
    from .. import overheads as oh
    from ..engines import vllm

    return Scheduler(kv_blocks=mem.num_blocks if blocks is None else blocks, block_tokens=oh.VLLM_BLOCK_TOKENS,
                  max_num_seqs=mem.limits.max_num_seqs,
                  max_num_batched_tokens=mem.limits.max_num_batched_tokens, chunked_prefill=chunked_prefill,
                  reserve_full_sequence=vllm.reserve_full_sequence(s))


def sglang_scheduler(sm) -> Scheduler:
    """SGLang's scheduler over its startup memory ``sm`` (:func:`gpuplan.engines.sglang.startup_memory`): the token
    pool in one-token pages (``page_size`` 1, the default until 2026), ``chunked_prefill_size`` as a prefill
    batch's token budget (``PrefillAdder``: each admitted prompt takes its tokens out of ``rem_chunk_tokens``, a
    longer one is chunked and closes the batch), ``max_running_requests`` as the batch cap, and prefill first:
    ``Scheduler.get_next_batch_to_run`` runs a new prefill batch whenever one forms, else the decode batch, so a
    prompt's chunks stall the running decodes (mixing them needs ``--enable-mixed-chunk``, off by default)."""
    return Scheduler(kv_blocks=sm.kv_tokens, block_tokens=1, max_num_seqs=sm.max_running_requests,
                     max_num_batched_tokens=sm.chunked_prefill_size, chunked_prefill=sm.chunked_prefill_size > 0,
                     mixed_prefill=sm.mixed_chunk)


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
             shared_prefix: int = 0, max_steps: int = 2_000_000, max_concurrency: int | None = None,
             prefix_hits: np.ndarray | None = None, cached_blocks: int = 0, users: int | None = None,
             think_s: float = 0.0, rng=None) -> Outcome:
    """Serve the requests; returns per-request latencies (requests that never fit the pool are dropped and
    counted out of ``completed``). ``shared_prefix``: tokens every prompt starts with (cached after the first
    request); or ``prefix_hits``, each request's prompt tokens found in the prefix cache, with ``cached_blocks``
    blocks the cache holds for them. ``users``: a closed loop (see the module docstring); ``arrive`` is then
    ignored past its length, the number of requests sent in all.

    A step: the clients send what has arrived (:meth:`_Clients.send`); the running requests take their next tokens
    (:func:`_schedule_with_preemption` when the pool runs out); waiting requests are admitted
    (:func:`_admit_waiting`); the step's work (:func:`_step_work`) is timed, a run of pure-decode steps advanced
    at once; requests that finish free their blocks and their clients' seats (:meth:`_Clients.replied`).
    :func:`_outcome` turns the times into latencies."""
    n = len(arrive)
    clients = _Clients(arrive, max_concurrency or n, users, think_s, rng)
    arrive = clients.arrive
    bt = engine.block_tokens
    prompt = np.asarray(prompt, dtype=np.int64)
    output = np.maximum(np.asarray(output, dtype=np.int64), 1)
    hit, shared_blocks = _cached_tokens(n, prompt, bt, shared_prefix, prefix_hits, cached_blocks)
    free = engine.kv_blocks - shared_blocks
    done_tokens = hit.copy()  # tokens whose KV exists (prefix hits count as computed)
    target = prompt.copy()  # tokens to prefill: the prompt, and after a preemption the tokens generated too
    generated = np.zeros(n, dtype=np.int64)
    held = np.zeros(n, dtype=np.int64)
    first = np.full(n, np.nan)
    finish = np.full(n, np.nan)
    too_big = np.ceil((prompt + output) / bt) > engine.kv_blocks
    if not engine.chunked_prefill:  # vLLM refuses a prompt longer than the step budget without chunking
        too_big |= prompt - hit > engine.max_num_batched_tokens
    waiting: list[int] = []
    running: list[int] = []
    ra = None
    t, steps, preempt = 0.0, 0, 0
    lag, busy, scheduled_at = model.async_host, False, 0.0  # async: this step was scheduled when the last began
    finished = int(too_big.sum())
    next_at = clients.next_at()  # when the next request can go out (inf: none left, or every seat taken)
    while finished < n and steps < max_steps:
        cutoff = scheduled_at if lag and busy else t
        if next_at <= cutoff:
            next_at = clients.send(cutoff, too_big, waiting)
        if not running and not waiting:
            if clients.nxt >= n:
                break
            t, busy = max(t, float(arrive[clients.nxt])), False
            continue
        budget = engine.max_num_batched_tokens
        sched_idx: list[int] = []
        sched_take: list[int] = []
        run_idx = run_take = None  # the running requests scheduled by the vectorized path (arrays)
        # prefill first (SGLang): a step of prompt tokens alone whenever one can be formed
        prefill_only = not engine.mixed_prefill and _prefill_ready(engine, running, waiting, done_tokens, target,
                                                                   held, free)
        if running:  # running requests in order: the vectorized path unless the pool runs out (then preempt)
            if ra is None:  # the running requests as an array, rebuilt when the set changes
                ra = np.fromiter(running, dtype=np.int64, count=len(running))
            have_ra = done_tokens[ra]
            left = target[ra] - have_ra
            held_ra = held[ra]
            fits = _running_tokens(have_ra, left, held_ra, budget, free, bt, prefill_only)
            if fits is not None:
                takes, sel, wanted, need, total = fits
                if total:
                    held[ra] = held_ra + need
                    free -= total
                run_idx, run_take = (ra, takes) if sel is None else (ra[sel], takes[sel])
                budget -= wanted
            else:
                before = preempt
                ra = None
                budget, free, preempt = _schedule_with_preemption(
                    running, waiting, budget, free, preempt, bt, prompt, target, done_tokens, held, generated, hit,
                    sched_idx, sched_take)
                if preempt > before:  # vLLM admits no waiting request in a step that preempted
                    budget = 0
        if waiting and budget > 0 and (engine.mixed_prefill or prefill_only):
            budget, free, admitted = _admit_waiting(engine, waiting, running, budget, free, done_tokens, target,
                                                    held, sched_idx, sched_take)
            if admitted:
                ra = None
        if run_idx is not None and len(run_idx):
            if sched_idx:
                idx = np.concatenate((run_idx, np.asarray(sched_idx, dtype=np.int64)))
                take = np.concatenate((run_take, np.asarray(sched_take, dtype=np.int64)))
            else:
                idx, take = run_idx, run_take
                if sel is None:  # every running request, in order: their tokens are known already
                    have, prefilling = have_ra, left > 0
        elif not sched_idx:  # nothing fits: wait for the next arrival (cannot happen with requests running)
            if clients.nxt >= n:
                break
            t, busy = max(t, float(arrive[clients.nxt])), False
            continue
        else:
            idx = np.asarray(sched_idx, dtype=np.int64)
            take = np.asarray(sched_take, dtype=np.int64)
        if idx is not run_idx or sel is not None:
            have = done_tokens[idx]
            prefilling = have < target[idx]
        n_pre = int(np.count_nonzero(prefilling))
        want_all = target[idx] if n_pre else None
        pre_tok, pairs, finishing, ctx = _step_work(have, take, prefilling, n_pre, want_all)
        pre_seqs, n_dec = float(n_pre), float(len(idx) - n_pre)
        rem = None if n_pre else output[idx] - generated[idx]  # tokens each decoding request has left
        k = 1
        # the queue cannot move until a request finishes: it waits on max_num_seqs or on free blocks, not on
        # this step's token budget (decoding takes blocks, never frees them)
        blocked = bool(waiting) and (budget > 0 if engine.mixed_prefill else not prefill_only)
        if not n_pre and (not waiting or blocked) and len(idx) == len(running):
            # pure decode until a request finishes or the next one arrives (that could be admitted): advance k
            # steps at once
            k = _decode_run(rem, have, held[idx], free, bt)
        dt1 = model.time(pre_tok, n_dec, ctx, pairs, pre_seqs, n_dec + finishing)
        if k > 1:
            dt_mid = model.time(0.0, float(len(idx)), ctx + len(idx) * (k - 1) / 2)
            if next_at < math.inf and not blocked:
                k = max(1, min(k, int((next_at - t) / dt_mid)))
            extra = np.maximum(-(-(have + k) // bt) + (have + 1) // -bt, 0)
            held[idx] += extra
            free -= int(_add(extra))
            dt = dt1 + (k - 1) * dt_mid
        else:
            dt = dt1
        scheduled_at, busy = t + dt - (dt_mid if k > 1 else dt1), True  # the last step's start
        t += dt
        steps += k
        # the step's tokens land: prompts complete (their first token), decodes generate, requests finish
        if n_pre:
            done_tokens[idx] = have + take  # k is 1 in a step with prompt tokens, and a decode takes 1
            completes_prompt = prefilling & (done_tokens[idx] >= want_all)
            generated[idx] += np.where(prefilling, 0, k) + completes_prompt
            newly = idx[completes_prompt & np.isnan(first[idx])]
            first[newly] = t
            over = idx[generated[idx] >= output[idx]]
        else:
            done_tokens[idx] = have + k
            generated[idx] = output[idx] - (rem - k)
            over = idx[rem <= k]
        if len(over):  # finished: their blocks go back to the pool, their seats to the clients
            finish[over] = t
            free += int(_add(held[over]))
            held[over] = 0
            gone = set(over.tolist())
            running = [r for r in running if r not in gone]
            ra = None
            finished += len(over)
            next_at = clients.replied(t, len(over))
    return _outcome(model, prompt, output, first, finish, clients.sent, preempt)


class _Clients:
    """Who sends the requests (see the module docstring): each at its arrival time (open loop), or ``users``
    each sending the next ``think_s`` seconds (exponential of that mean with ``rng``) after its last reply (closed
    loop); no more than ``cap`` in flight (``max_concurrency``: a request waits for a free seat, and its latency
    counts from the send, ``sent``)."""

    def __init__(self, arrive, cap: int, users: int | None, think_s: float, rng) -> None:
        n = len(arrive)
        self.users, self.ready = users, []
        self.think = (lambda: rng.exponential(think_s)) if think_s > 0 and rng is not None else (lambda: think_s)
        if users:  # request i goes out when a user is ready; times are filled in as they become known
            self.ready = sorted(self.think() for _ in range(users))
            arrive = np.full(n, math.inf)
            _next_user(arrive, self.ready, 0)
        self.arrive, self.n, self.cap = arrive, n, cap
        self.sent = np.asarray(arrive, dtype=float).copy()
        self.nxt, self.in_flight, self.full_until = 0, 0, -math.inf

    def next_at(self) -> float:
        """When the next request goes out: its arrival time; inf when all were sent or every seat is taken."""
        return float(self.arrive[self.nxt]) if self.nxt < self.n and self.in_flight < self.cap else math.inf

    def send(self, cutoff: float, too_big, waiting: list[int]) -> float:
        """Send the requests due by ``cutoff`` to the queue ``waiting`` (one too big for the pool is refused at
        once: its user thinks and sends another); returns :meth:`next_at`."""
        arrive, n, users = self.arrive, self.n, self.users
        nxt = self.nxt
        while nxt < n and arrive[nxt] <= cutoff and self.in_flight < self.cap:
            if not too_big[nxt]:
                self.sent[nxt] = max(arrive[nxt], self.full_until)
                waiting.append(nxt)
                self.in_flight += 1
            elif users:
                heapq.heappush(self.ready, arrive[nxt] + self.think())
            nxt += 1
            if users and nxt < n:
                _next_user(arrive, self.ready, nxt)
        self.nxt = nxt
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


def _running_tokens(have, left, held, budget: int, free: int, bt: int, prefill_only: bool):
    """The running requests' tokens this step, in order (``have`` in the cache, ``left`` of the prompt, ``held``
    blocks each): a decode takes one, a prompt its rest, until the budget runs out; under SGLang's prefill first
    only prompt chunks. Returns the tokens each takes, which take any (None: all of them), the tokens in all, the
    new blocks each needs and their sum; None when the free blocks cannot hold them (then requests are preempted,
    :func:`_schedule_with_preemption`)."""
    want = np.where(left > 0, left, 0) if prefill_only else np.maximum(left, 1)  # a decode takes one token
    wanted = int(_add(want))
    if wanted <= budget and not prefill_only:  # all of them fit the budget whole (the usual step)
        takes, sel = want, None
    else:
        ahead = want.cumsum() - want
        takes = np.minimum(np.maximum(budget - ahead, 0), want)
        sel = takes > 0
        wanted = int(_add(takes))
    need = np.maximum((have + takes + (bt - 1)) // bt - held, 0)
    if sel is not None:
        need *= sel
    total = int(_add(need))
    return None if total > free else (takes, sel, wanted, need, total)


def _admit_waiting(engine: Scheduler, waiting: list[int], running: list[int], budget: int, free: int, done_tokens,
                   target, held, sched_idx: list[int], sched_take: list[int]) -> tuple[int, int, int]:
    """Admit waiting requests in arrival order while the step's token budget, ``max_num_seqs`` and the free
    blocks allow: a prompt takes what the budget leaves (chunked prefill) or waits until it fits whole; from vLLM
    0.19 its whole known sequence must fit the free blocks. Returns the budget and free blocks left and how many
    were admitted."""
    bt, admitted = engine.block_tokens, 0
    while waiting and budget > 0 and len(running) < engine.max_num_seqs:
        r = waiting[0]
        take = min(target[r] - done_tokens[r], budget)
        if not engine.chunked_prefill and take < target[r] - done_tokens[r]:
            break
        need = math.ceil((done_tokens[r] + take) / bt) - held[r]
        whole = math.ceil(target[r] / bt) - held[r] if engine.reserve_full_sequence else need
        if max(need, whole) > free:
            break
        waiting.pop(0)
        running.append(r)
        admitted += 1
        free -= need
        held[r] += need
        sched_idx.append(r)
        sched_take.append(take)
        budget -= take
    return budget, free, admitted


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
    halved until the free blocks hold the growing contexts (``have`` tokens, ``held`` blocks each)."""
    k = int(rem.min())
    while k > 1 and int(_add(-(-(have + k) // bt) - held)) > free:
        k //= 2
    return k


def _outcome(model: StepModel, prompt, output, first, finish, sent, preemptions: int) -> Outcome:
    """The latencies of the completed requests (a request's first token and last token plus the model's
    per-request latency outside the engine, from its send), the tokens served and the time it took."""
    ok = ~np.isnan(finish)
    ttft = first[ok] - sent[ok] + model.request_s
    e2e = finish[ok] - sent[ok] + model.request_s
    out = output[ok]
    tpot = np.where(out > 1, (finish[ok] - first[ok]) / np.maximum(out - 1, 1), 0.0)
    return Outcome(ttft_s=ttft, tpot_s=tpot, e2e_s=e2e,
                   duration_s=float(finish[ok].max() + model.request_s - sent[0]) if ok.any() else 0.0,
                   input_tokens=int(prompt[ok].sum()), output_tokens=int(out.sum()), preemptions=preemptions,
                   completed=int(ok.sum()), sent_at=sent[ok], finished_at=finish[ok])


def _prefill_ready(engine: Scheduler, running: list[int], waiting: list[int], done_tokens, target, held,
                   free: int) -> bool:
    """Whether a prefill batch forms this step (SGLang's ``get_new_batch_prefill``): a running request has prompt
    tokens left (a chunked prompt continues), or the first waiting request fits a seat and the free pool."""
    if running and bool((done_tokens[running] < target[running]).any()):
        return True
    if not waiting or len(running) >= engine.max_num_seqs:
        return False
    r = waiting[0]
    left = target[r] - done_tokens[r]
    if not engine.chunked_prefill and left > engine.max_num_batched_tokens:
        return False
    take = min(left, engine.max_num_batched_tokens)
    bt = engine.block_tokens
    need = -(-(done_tokens[r] + take) // bt) - held[r]
    whole = -(-target[r] // bt) - held[r] if engine.reserve_full_sequence else need
    return max(need, whole) <= free


def _next_user(arrive: np.ndarray, ready: list[float], nxt: int) -> None:
    """Closed loop: request ``nxt`` (the next to send) goes out at the earliest time a user is ready (a user
    readied since it was timed may come first: its time goes back to the heap)."""
    if not math.isinf(arrive[nxt]):
        heapq.heappush(ready, float(arrive[nxt]))
    arrive[nxt] = heapq.heappop(ready) if ready else math.inf


def _schedule_with_preemption(running: list[int], waiting: list[int], budget: int, free: int, preempt: int, bt: int,
                              prompt, target, done_tokens, held, generated, hit, sched_idx: list[int],
                              sched_take: list[int]) -> tuple[int, int, int]:
    """The running requests one by one when the pool cannot hold their next tokens: a request that needs a block
    the pool lacks preempts the most recently admitted one (recompute: its blocks freed, back to the head of the
    queue), itself if it is the last. Returns the budget, free blocks and preemptions left."""
    i = 0
    while i < len(running) and budget > 0:
        r = running[i]
        left = target[r] - done_tokens[r]
        take = min(left, budget) if left > 0 else 1
        need = math.ceil((done_tokens[r] + take) / bt) - held[r]
        while need > free and running[-1] != r:
            v = running.pop()
            free += held[v]
            held[v], done_tokens[v], target[v] = 0, hit[v], prompt[v] + generated[v]
            waiting.insert(0, v)
            preempt += 1
        if need > free:  # r itself must go
            running.pop(i)
            free += held[r]
            held[r], done_tokens[r], target[r] = 0, hit[r], prompt[r] + generated[r]
            waiting.insert(0, r)
            preempt += 1
            continue
        free -= max(need, 0)
        held[r] += max(need, 0)
        sched_idx.append(r)
        sched_take.append(take)
        budget -= take
        i += 1
    return budget, free, preempt
