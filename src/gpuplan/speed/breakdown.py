"""The speed result every speed model returns: a step time that is the sum of its parts, the rates it
implies, and the range the calibration spread gives them."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from .. import overheads as oh


@dataclass(kw_only=True)
class Speed:
    """Training: ``step_time_s`` is one optimizer step, ``tokens_per_s`` over all GPUs. Inference: ``step_time_s`` is
    one decode step of the whole batch, ``tokens_per_s`` the output tokens/s of all sequences together; ``ttft_s`` a
    user's time to first token of one request alone, ``ttft_burst_s`` of the last of ``batch_size`` prompts arriving
    at once: the engine's prefill plus ``request_overhead_s``, the engine's latency per request outside its steps
    (its API server: HTTP, tokenizing, streaming the token back; vLLM's ``benchmark_serving`` measures TTFT at the
    client, so it includes it, as ``--users`` does); ``streaming_tokens_per_s_per_user`` is ``1 / step_time_s``
    (vLLM's inter-token latency while the batch decodes, the speed people quote per user),
    ``tokens_per_s_per_sequence`` a request's output over its whole cycle, other users' prompts prefilled in between
    included. ``offline_tokens_per_s`` (``engine: trtllm`` only) is the whole setup's output tokens/s at maximum
    load, every request queued at once (``trtllm-bench throughput``, MLPerf Offline): one instance's
    :func:`gpuplan.serving.offline.offline_throughput` times the data-parallel replicas, under trtllm-bench's own
    settings (``offline_basis`` names those that differ from the plan's, whose simulated batch is ``Plan.offline``).

    ``parts_s`` adds up to ``step_time_s`` (seconds per step by kind of work). ``tokens_per_s_low`` and
    ``_high`` bracket the estimate with the calibration spread of this kind of estimate.
    """

    tokens_per_s: float
    step_time_s: float
    bound: str
    parts_s: dict[str, float] = field(default_factory=dict)
    tokens_per_s_low: float = 0.0
    tokens_per_s_high: float = 0.0
    mfu: float | None = None
    compute_s: float = 0.0
    communication_s: float = 0.0
    flops_per_token: float | None = None
    ttft_s: float | None = None
    ttft_burst_s: float | None = None
    request_overhead_s: float | None = None  # in ttft_s and ttft_burst_s: per request, outside the engine's steps
    tokens_per_s_per_sequence: float | None = None  # a request's output over its whole cycle (others' prompts too)
    streaming_tokens_per_s_per_user: float | None = None  # 1 / decode step: what a user sees while it streams
    request_latency_s: float | None = None
    requests_per_s: float | None = None
    # engine trtllm: output tokens/s of the whole setup (every replica of tp x pp GPUs) at maximum load, every request
    # queued at once (trtllm-bench throughput, MLPerf Offline): serving/offline.py; None for other engines
    offline_tokens_per_s: float | None = None
    # what offline_tokens_per_s answers, in words: trtllm-bench's settings beside the plan's where they differ
    # (serving/offline.py bench_basis); the CLI, the JSON and the page label the figure with it
    offline_basis: str | None = None
    assumptions: list[str] = field(default_factory=list)
    # serving under users: the requests decoded at once where the engine's KV pool holds fewer than the users (the
    # others wait their turn: plan/build.py held); None: the scenario's batch_size
    batch_held: int | None = None
    # serving: where the low/high range comes from, in words (the engine x model class's held-out rows, or
    # "uncalibrated"); None for training, whose range is bench/throughput.py's training rows
    band: str | None = None

    def with_range(self, kind: str, *widen: str, band: tuple[float, float] | None = None) -> Speed:
        """Set the low/high rates from the spread of ``kind`` (train | decode | prefill), or the measured ``band``
        (measured / estimated - 1, low and high), widened for each named weakness of this estimate (a default
        fabric, another vendor's software, CPU-held layers, no bench at all)."""
        low, high = band if band is not None else oh.SPEED_SPREAD[kind]
        factor = 1.0
        for reason in widen:
            factor *= oh.SPEED_SPREAD_WIDENING[reason]
        self.tokens_per_s_low = self.tokens_per_s * max(1 + low * factor, 0.05)
        self.tokens_per_s_high = self.tokens_per_s * (1 + high * factor)
        return self

    @property
    def spread_pct(self) -> float:
        """Half the width of the range, in percent of the central value."""
        return 50 * (self.tokens_per_s_high - self.tokens_per_s_low) / self.tokens_per_s if self.tokens_per_s else 0

    def step_shares(self, top: int = 5) -> list[tuple[str, int]]:
        """Each part's share of ``step_time_s`` in whole percent (:func:`shares`)."""
        return shares(self.parts_s, top)


def shares(parts_s: dict[str, float], top: int = 5) -> list[tuple[str, int]]:
    """Each part's share of the sum of ``parts_s`` in whole percent, largest first: the ``top - 1`` largest parts and
    the rest as ``other`` (all of them when there are ``top`` or fewer), rounded by largest remainder (Hamilton's
    method) so that the shares sum to exactly 100; parts that round to 0% are left out."""
    total = sum(parts_s.values())
    if total <= 0:
        return []
    ranked = sorted(parts_s.items(), key=lambda kv: -kv[1])
    if len(ranked) > top:
        ranked = [*ranked[:top - 1], ("other", sum(v for _, v in ranked[top - 1:]))]
    exact = [(k, 100 * v / total) for k, v in ranked]
    whole = {k: math.floor(x) for k, x in exact}
    for k, _ in sorted(exact, key=lambda kx: -(kx[1] - whole[kx[0]]))[:100 - sum(whole.values())]:
        whole[k] += 1
    return [(k, whole[k]) for k, _ in ranked if whole[k] > 0]
