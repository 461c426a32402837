"""A training recipe for the plan, each value with its source: global batch, learning rate, schedule and warm-up,
epochs and steps, the micro-batch x accumulation x GPUs that reach the global batch fastest, and the checkpoint
interval.

Published recipes, by kind of run:

- **LoRA / QLoRA fine-tuning**: the QLoRA paper (Dettmers et al. 2023, appendix B, Table 9, and its released
  ``scripts/finetune_guanaco_*.sh``): global batch 16 sequences, learning rate 2e-4 up to 13B and 1e-4 above,
  a constant schedule after a 3 % warm-up, gradient clipping 0.3;
- **full fine-tuning**: Stanford Alpaca (Taori et al. 2023, its README's hyperparameters): global batch 128,
  learning rate 2e-5 for 7B and 13B, cosine decay after a 3 % warm-up; Tulu 2 (Ivison et al. 2023, section 3)
  trains 70B at 1e-5 with the same batch;
- **pretraining** (a synthetic ``model_size``): GPT-3 (Brown et al. 2020, Table 2.1: batch in tokens and
  learning rate by size, 125M to 13B; 375M tokens of linear warm-up, appendix B; cosine decay to 10 %), and
  Llama 2 (Touvron et al. 2023, section 2.2: 4M-token batches, 1.5e-4 for 34B and 70B, 2,000 warm-up steps).

The micro-batch is searched on the card (1, 2, 4, ... while it fits): accumulation and data-parallel GPUs make up
the global batch, and the fastest time per sequence wins. The checkpoint interval is Daly's optimum
(:func:`gpuplan.market.cost.daly_interval_h`) for the offer's spot interruption rate, or on demand for the
hardware failure rate of Llama 3's training (:data:`gpuplan.overheads.GPU_HOURS_BETWEEN_FAILURES`).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

from .. import overheads as oh

QLORA = "QLoRA paper (Dettmers et al. 2023, Table 9)"
ALPACA = "Stanford Alpaca's recipe (Taori et al. 2023)"
TULU = "Tulu 2 (Ivison et al. 2023)"
GPT3 = "GPT-3 (Brown et al. 2020, Table 2.1)"
LLAMA2 = "Llama 2 (Touvron et al. 2023, section 2.2)"
# GPT-3 Table 2.1: parameters -> (batch tokens, learning rate)
GPT3_TABLE = ((125e6, 0.5e6, 6.0e-4), (350e6, 0.5e6, 3.0e-4), (760e6, 0.5e6, 2.5e-4), (1.3e9, 1e6, 2.0e-4),
              (2.7e9, 1e6, 1.6e-4), (6.7e9, 2e6, 1.2e-4), (13e9, 2e6, 1.0e-4))
WARMUP_RATIO = 0.03  # QLoRA and Alpaca
GPT3_WARMUP_TOKENS = 375e6


@dataclass(frozen=True, kw_only=True)
class Choice:
    name: str
    value: str
    why: str


@dataclass(frozen=True, kw_only=True)
class Recipe:
    kind: str  # lora | full fine-tuning | pretraining
    global_batch: int  # sequences per optimizer step, as the recipe asks
    learning_rate: float
    schedule: str  # constant | cosine
    warmup_steps: int
    steps: int | None  # optimizer steps of the run (None without data or train_tokens)
    epochs: float | None
    micro_batch_size: int
    grad_accum_steps: int
    data_parallel: int
    save_steps: int | None
    max_grad_norm: float
    choices: tuple[Choice, ...]

    @property
    def effective_batch(self) -> int:
        return self.micro_batch_size * self.grad_accum_steps * self.data_parallel

    def as_dict(self) -> dict:
        return {**{k: v for k, v in asdict(self).items() if k != "choices"}, "effective_batch": self.effective_batch,
                "choices": [asdict(c) for c in self.choices]}


def kind_of(s) -> str:
    if s.method != "full":
        return "lora"
    return "pretraining" if s.model_size else "full fine-tuning"


def published(s, params: float) -> tuple[int, float, str, float, str]:
    """(global batch in sequences, learning rate, schedule, max grad norm, why) of the recipe for ``s``."""
    kind = kind_of(s)
    if kind == "lora":
        lr = 2e-4 if params <= 20e9 else 1e-4
        return 16, lr, "constant", 0.3, (f"{QLORA}: batch 16, lr 2e-4 up to 13B and 1e-4 for 33B-65B (here "
                                         f"{lr:g}), constant schedule, max grad norm 0.3")
    if kind == "full fine-tuning":
        lr = 2e-5 if params <= 20e9 else 1e-5
        return 128, lr, "cosine", 1.0, (f"{ALPACA}: batch 128, lr 2e-5 at 7B and 13B, cosine; " + (
            f"{TULU}: lr 1e-5 for its 70B, taken above 20B" if lr < 2e-5 else f"{TULU} the same up to 13B"))
    if params > 20e9:
        tokens, lr, why = 4e6, 1.5e-4, f"{LLAMA2}: 4M-token batches, lr 1.5e-4 at 34B and 70B, cosine to 10 %"
    else:
        _, tokens, lr = min(GPT3_TABLE, key=lambda r: abs(math.log(r[0] / params)))
        why = f"{GPT3}: {tokens / 1e6:g}M-token batches and lr {lr:g} at this size, cosine to 10 %"
    return max(1, round(tokens / s.seq_len)), lr, "cosine", 1.0, why


def checkpoint_steps(s, step_time_s: float, checkpoint_bytes: float, spot_mtbi_h: float | None,
                     steps: int | None) -> tuple[int | None, str]:
    """Daly's optimum interval, in optimizer steps, for the offer's spot interruptions or on demand the hardware
    failure rate (per GPU-hour, Llama 3) over the job's GPUs."""
    from ..market.cost import daly_interval_h

    write_h = checkpoint_bytes / (s.disk_gbs * 1e9) / 3600
    if spot_mtbi_h:
        mtbi, source = spot_mtbi_h, f"spot interruptions every {spot_mtbi_h:.1f} h"
    else:
        mtbi = oh.GPU_HOURS_BETWEEN_FAILURES / s.world_size
        source = (f"on demand: hardware failures every {mtbi:,.0f} h for {s.world_size} GPU(s) "
                  "(Llama 3's 419 in 54 days on 16,384 GPUs)")
    interval_h = daly_interval_h(write_h, mtbi)
    every = max(1, math.floor(interval_h * 3600 / step_time_s))
    why = (f"Daly's optimum {interval_h * 60:,.0f} min of work between checkpoints ({source}; a checkpoint of "
           f"{checkpoint_bytes / 1e9:,.1f} GB writes in {write_h * 3600:,.0f} s at {s.disk_gbs:g} GB/s)")
    if steps is not None and every >= steps:
        return None, why + ": longer than the run, so only the final save (and one per epoch)"
    return every, why


def recipe(s, m, gpu, *, network=None, spot_mtbi_h: float | None = None, checkpoint_bytes: float = 0.0,
           rows_per_epoch: int | None = None, layout_why: str | None = None, step_s: float | None = None,
           layout_of=None) -> Recipe:
    """The recipe of ``s`` (module docstring) on ``gpu`` over ``network``; ``rows_per_epoch``: sequences per epoch
    after packing; the checkpoint interval needs a GPU to time the step (``step_s``: the plan's, when the recipe's
    layout is the scenario's). The micro-batch x accumulation: the scenario's, as chosen before it was planned
    (``layout_why``, a launch's), else ``layout_of(s, m, gpu, global_batch)`` (:func:`gpuplan.plan.layout.layout`,
    which plans each micro-batch it tries)."""
    params = float(m.params_total)
    global_batch, lr, schedule, clip, why = published(s, params)
    choices = [Choice(name="global batch", value=f"{global_batch:,} sequences", why=why)]
    if rows_per_epoch and rows_per_epoch < global_batch:
        global_batch = rows_per_epoch
        choices[0] = Choice(name="global batch", value=f"{global_batch:,} sequences",
                            why=f"{why}; capped at the {rows_per_epoch:,} sequences of one epoch")
    if layout_why:  # the run's layout, chosen before the scenario took it (gpuplan launch)
        mb, accum, why_layout = s.micro_batch_size, s.grad_accum_steps, layout_why
    else:
        mb, accum, why_layout = layout_of(s, m, gpu, global_batch)
    dp = s.dp
    effective = mb * accum * dp
    choices.append(Choice(name="micro-batch x accumulation x GPUs",
                          value=f"{mb} x {accum} x {dp} = {effective:,} sequences", why=why_layout))
    choices.append(Choice(name="learning rate", value=f"{lr:g}", why=why))
    epochs = s.epochs or (1.0 if rows_per_epoch else None)
    if rows_per_epoch:
        steps = math.ceil(epochs * rows_per_epoch / effective)
        choices.append(Choice(name="steps", value=f"{steps:,} ({epochs:g} epoch(s) of {rows_per_epoch:,} sequences)",
                              why="epochs x sequences per epoch (after packing) / global batch"))
    elif s.train_tokens:
        steps = math.ceil(s.train_tokens / (effective * s.seq_len))
        choices.append(Choice(name="steps", value=f"{steps:,}", why=f"train_tokens {s.train_tokens:,.3g} / "
                              f"({effective:,} x {s.seq_len:,} tokens per step)"))
    else:
        steps = None
    if kind_of(s) == "pretraining":
        warm = math.ceil(GPT3_WARMUP_TOKENS / (effective * s.seq_len)) if params <= 20e9 else 2000
        source = f"{GPT3}: 375M tokens of warm-up" if params <= 20e9 else f"{LLAMA2}: 2,000 steps"
        if steps:
            warm = min(warm, max(1, steps // 10))
        choices.append(Choice(name="warm-up", value=f"{warm:,} steps, then {schedule}", why=source +
                              (" (at most a tenth of the run)" if steps else "")))
    else:
        warm = max(1, math.ceil(WARMUP_RATIO * steps)) if steps else 0
        choices.append(Choice(name="warm-up", value=f"{warm:,} steps (3 %), then {schedule}",
                              why=f"{QLORA if kind_of(s) == 'lora' else ALPACA}: warm-up ratio 0.03"))
    save = None
    if gpu is not None and gpu.peak_tflops("fp16"):
        from ..speed import speed_of

        if step_s is None or (mb, accum) != (s.micro_batch_size, s.grad_accum_steps):
            step_s = speed_of(s.model_copy(update={"micro_batch_size": mb, "grad_accum_steps": accum}), m, gpu,
                              network).step_time_s
        save, why_save = checkpoint_steps(s, step_s, checkpoint_bytes, spot_mtbi_h, steps)
        choices.append(Choice(name="checkpoint every", value=f"{save:,} steps" if save else "end of run",
                              why=why_save))
    return Recipe(kind=kind_of(s), global_batch=global_batch, learning_rate=lr, schedule=schedule,
                  warmup_steps=warm, steps=steps, epochs=epochs if rows_per_epoch else s.epochs,
                  micro_batch_size=mb, grad_accum_steps=accum, data_parallel=dp, save_steps=save,
                  max_grad_norm=clip, choices=tuple(choices))
