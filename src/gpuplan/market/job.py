"""A whole training job's time: the tokens to train over the throughput, plus the evaluation passes and the
checkpoint saves the scenario asks for, each its own part.

- **training**: ``train_tokens / tokens_per_s`` (the speed model's optimizer steps, recomputation included);
- **evaluation**: every ``eval_interval`` optimizer steps one pass over ``eval_tokens`` (NeMo's recipes under
  stack megatron: ``limit_val_batches`` = 32 global batches). A pass runs the forward only, ``2·N + 4·L·a·d·s``
  FLOPs per token against the step's ``training_flops_per_token`` (PaLM's count, appendix B: the forward is a
  third of ``6·N`` and of attention's ``12·L·a·d·s``), at the training step's own rate;
- **checkpoints**: every ``save_interval`` steps a pause of the checkpoint's size (weights and optimizer states,
  :func:`gpuplan.market.cost.checkpoint_bytes`) over ``disk_gbs``, as a synchronous save blocks training (an
  asynchronous one, NeMo's ``ckpt_async_save``, hides most of it: leave ``save_interval`` unset to count none).

Without ``eval_interval`` and ``save_interval`` the job is its training time alone, as before.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ..model.spec import ModelSpec
from ..scenario import Scenario
from ..speed import Speed
from ..speed.flops import attention_forward_flops, run_params, training_flops_per_token


@dataclass(frozen=True, kw_only=True)
class JobTime:
    """Hours of the job by part; ``evaluations`` passes and ``saves`` checkpoints."""

    train_h: float
    eval_h: float = 0.0
    checkpoint_h: float = 0.0
    steps: int = 0
    evaluations: int = 0
    saves: int = 0
    eval_tokens: float = 0.0

    @property
    def total_h(self) -> float:
        return self.train_h + self.eval_h + self.checkpoint_h


def tokens_per_step(s: Scenario) -> int:
    return s.micro_batch_size * s.seq_len * s.grad_accum_steps * s.dp


def save_interval_h(s: Scenario, speed: Speed) -> float | None:
    """Hours of training work between the checkpoints ``save_interval`` asks for (its steps at the step time), or
    None: none asked, or no speed to time them by."""
    if not s.save_interval or not speed.tokens_per_s:
        return None
    return s.save_interval * tokens_per_step(s) / speed.tokens_per_s / 3600


def eval_tokens(s: Scenario) -> float:
    """Tokens of one evaluation pass: the scenario's, else its stack recipe's global batches (NeMo's 32 under stack
    megatron, ``Recipe.eval_batches``)."""
    return s.eval_tokens if s.eval_tokens is not None else s.recipe.eval_batches * tokens_per_step(s)


def forward_share(s: Scenario, m: ModelSpec) -> float:
    """The forward's FLOPs per token over the training step's (module docstring)."""
    forward = 2 * run_params(m) + attention_forward_flops(m, s.seq_len)
    return forward / training_flops_per_token(s, m)


def job_time(s: Scenario, m: ModelSpec, speed: Speed, checkpoint_bytes: float) -> JobTime:
    """The job's hours by part (module docstring); all zero without ``train_tokens``."""
    if not s.train_tokens or not speed.tokens_per_s:
        return JobTime(train_h=0.0)
    train_h = s.train_tokens / speed.tokens_per_s / 3600
    steps = math.ceil(s.train_tokens / tokens_per_step(s))
    out = {"train_h": train_h, "steps": steps}
    if s.eval_interval:
        passes, tokens = steps // s.eval_interval, eval_tokens(s)
        out |= {"evaluations": passes, "eval_tokens": tokens,
                "eval_h": passes * tokens * forward_share(s, m) / speed.tokens_per_s / 3600}
    if s.save_interval:
        saves = steps // s.save_interval
        out |= {"saves": saves, "checkpoint_h": saves * checkpoint_bytes / (s.disk_gbs * 1e9) / 3600}
    return JobTime(**out)
