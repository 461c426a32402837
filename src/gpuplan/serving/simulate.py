"""A discrete-event simulation of vLLM V1's scheduler, one engine step at a time (numpy; imported on demand).

Each step (``vllm/v1/core/sched/scheduler.py`` ``Scheduler.schedule``): running requests first, in order, each
taking its next prefill chunk or one decode token out of the ``max_num_batched_tokens`` budget; a request that
needs a KV block the pool lacks preempts the most recently admitted running request (recompute: its blocks are
freed, it returns to the head of the queue); then waiting requests are admitted in arrival order while the
budget, ``max_num_seqs`` and free blocks allow (chunked prefill: a long prompt takes several steps). The step
lasts :meth:`StepModel.time` of what it holds; a request's first token comes at the end of the step that
finishes its prompt. Shared-prefix tokens hit the prefix cache after the first request (no compute, blocks
shared). Runs of pure-decode steps with no arrival in between are advanced together (their step times summed
at the mid-point context), which keeps light loads fast.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .steptime import StepModel


@dataclass(frozen=True, kw_only=True)
class Engine:
    kv_blocks: int
    block_tokens: int = 16
    max_num_seqs: int = 256
    max_num_batched_tokens: int = 8192


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

    @property
    def output_tokens_per_s(self) -> float:
        return self.output_tokens / self.duration_s if self.duration_s else 0.0

    @property
    def requests_per_s(self) -> float:
        return self.completed / self.duration_s if self.duration_s else 0.0

    def percentile(self, what: str, q: float) -> float:
        x = getattr(self, what)
        return float(np.percentile(x, q)) if len(x) else math.inf


def arrivals(rate_rps: float, n: int, burstiness: float, rng) -> np.ndarray:
    """Arrival times of ``n`` requests: gamma inter-arrival times of shape ``burstiness`` and mean ``1/rate``
    (Poisson at 1), as ``vllm bench serve`` draws them."""
    gaps = rng.gamma(burstiness, 1.0 / (rate_rps * burstiness), n)
    return np.cumsum(gaps) - gaps[0]


def simulate(model: StepModel, engine: Engine, arrive: np.ndarray, prompt: np.ndarray, output: np.ndarray,
             shared_prefix: int = 0, max_steps: int = 2_000_000) -> Outcome:
    """Serve the requests; returns per-request latencies (requests that never fit the pool are dropped and
    counted out of ``completed``)."""
    n = len(arrive)
    bt = engine.block_tokens
    prompt = np.asarray(prompt, dtype=np.int64)
    output = np.maximum(np.asarray(output, dtype=np.int64), 1)
    hit = np.zeros(n, dtype=np.int64)
    if shared_prefix:
        hit[1:] = np.minimum(shared_prefix, prompt[1:] - 1)
    shared_blocks = shared_prefix // bt if shared_prefix else 0
    free = engine.kv_blocks - shared_blocks
    done_tokens = hit.copy()  # tokens whose KV exists (prefix hits count as computed)
    generated = np.zeros(n, dtype=np.int64)
    held = np.zeros(n, dtype=np.int64)
    first = np.full(n, np.nan)
    finish = np.full(n, np.nan)
    too_big = np.ceil((prompt + output) / bt) > engine.kv_blocks
    waiting: list[int] = []
    running: list[int] = []
    nxt, t, steps, preempt = 0, 0.0, 0, 0
    finished = int(too_big.sum())
    while finished < n and steps < max_steps:
        while nxt < n and arrive[nxt] <= t:
            if not too_big[nxt]:
                waiting.append(nxt)
            nxt += 1
        if not running and not waiting:
            if nxt >= n:
                break
            t = float(arrive[nxt])
            continue
        budget = engine.max_num_batched_tokens
        sched: list[tuple[int, int]] = []
        i = 0
        while i < len(running) and budget > 0:
            r = running[i]
            left = prompt[r] - done_tokens[r]
            take = min(left, budget) if left > 0 else 1
            need = math.ceil((done_tokens[r] + take) / bt) - held[r]
            while need > free and running[-1] != r:
                v = running.pop()
                free += held[v]
                held[v], done_tokens[v], generated[v] = 0, hit[v], 0
                waiting.insert(0, v)
                preempt += 1
            if need > free:  # r itself must go
                running.pop(i)
                free += held[r]
                held[r], done_tokens[r], generated[r] = 0, hit[r], 0
                waiting.insert(0, r)
                preempt += 1
                continue
            free -= max(need, 0)
            held[r] += max(need, 0)
            sched.append((r, take))
            budget -= take
            i += 1
        while waiting and budget > 0 and len(running) < engine.max_num_seqs:
            r = waiting[0]
            take = min(prompt[r] - done_tokens[r], budget)
            need = math.ceil((done_tokens[r] + take) / bt) - held[r]
            if need > free:
                break
            waiting.pop(0)
            running.append(r)
            free -= need
            held[r] += need
            sched.append((r, take))
            budget -= take
        if not sched:  # nothing fits: wait for the next arrival (cannot happen with requests running)
            if nxt >= n:
                break
            t = max(t, float(arrive[nxt]))
            continue
        idx = np.fromiter((r for r, _ in sched), dtype=np.int64, count=len(sched))
        take = np.fromiter((k for _, k in sched), dtype=np.int64, count=len(sched))
        prefilling = done_tokens[idx] < prompt[idx]
        pre_tok = float(take[prefilling].sum())
        pairs = float((take[prefilling] * (done_tokens[idx][prefilling] + take[prefilling] / 2)).sum())
        dec = ~prefilling
        ctx = float(done_tokens[idx][dec].sum())
        k = 1
        if pre_tok == 0 and not waiting and len(sched) == len(running):
            # pure decode until a request finishes or the next one arrives: advance k steps at once
            left_out = output[idx] - generated[idx]
            k = int(left_out.min())
            room = [math.ceil((done_tokens[r] + k) / bt) - held[r] for r in idx]
            while k > 1 and sum(room) > free:
                k //= 2
                room = [math.ceil((done_tokens[r] + k) / bt) - held[r] for r in idx]
        dt1 = model.time(pre_tok, float(dec.sum()), ctx, pairs)
        if k > 1:
            dt_mid = model.time(0.0, float(len(idx)), ctx + len(idx) * (k - 1) / 2)
            if nxt < n:
                k = max(1, min(k, int((arrive[nxt] - t) / dt_mid)))
            extra = [math.ceil((done_tokens[r] + k) / bt) - held[r] - (math.ceil((done_tokens[r] + 1) / bt)
                                                                       - held[r]) for r in idx]
            for r, e in zip(idx, extra, strict=True):
                held[r] += max(e, 0)
                free -= max(e, 0)
            dt = dt1 + (k - 1) * dt_mid
        else:
            dt = dt1
        t += dt
        steps += k
        done_tokens[idx] += np.where(prefilling, take, k)
        completes_prompt = prefilling & (done_tokens[idx] >= prompt[idx])
        generated[idx] += np.where(dec, k, 0) + completes_prompt
        newly = idx[completes_prompt & np.isnan(first[idx])]
        first[newly] = t
        over = idx[generated[idx] >= output[idx]]
        for r in over:
            finish[r] = t
            free += held[r]
            held[r] = 0
            running.remove(r)
            finished += 1
    ok = ~np.isnan(finish)
    ttft = first[ok] - arrive[ok]
    e2e = finish[ok] - arrive[ok]
    out = output[ok]
    tpot = np.where(out > 1, (finish[ok] - first[ok]) / np.maximum(out - 1, 1), 0.0)
    return Outcome(ttft_s=ttft, tpot_s=tpot, e2e_s=e2e, duration_s=float(t - arrive[0]) if ok.any() else 0.0,
                   input_tokens=int(prompt[ok].sum()), output_tokens=int(out.sum()), preemptions=preempt,
                   completed=int(ok.sum()))
