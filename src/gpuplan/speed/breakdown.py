"""The speed result every speed model returns."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(kw_only=True)
class Speed:
    tokens_per_s: float
    step_time_s: float
    mfu_assumed: float | None
    bound: str
    compute_s: float = 0.0
    communication_s: float = 0.0
    ttft_s: float | None = None
    tokens_per_s_per_sequence: float | None = None
    flops_per_token: float | None = None
    assumptions: list[str] = field(default_factory=list)
