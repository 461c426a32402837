"""A training recipe for the plan, each value with its source: global batch, learning rate, schedule and warm-up,
epochs and steps, the micro-batch x accumulation x GPUs that reach the global batch fastest, and the checkpoint
interval.

The global batch, the learning rate, the schedule and the clipping are the published recipes' (:mod:`.batch`).

With data, the fine-tuning batches are **examples** (what the papers count), before packing: a packed row holds
``examples / rows`` of them, so the trainer's rows per step are the examples per step over that. The run is at
least :data:`~.batch.MIN_STEPS` optimizer steps (the batch shrinks for a small set), and the epochs are suggested
from the set's size (:func:`~.batch.suggested_epochs`). Data with roles (chat ``messages``) trains on the assistant
turns only (``assistant_only``).

The micro-batch x accumulation is the plan's: the builder searches it on the card (1, 2, 4, ... while it fits;
accumulation and data-parallel GPUs make up the global batch, and the fastest time per sequence wins), in one place,
:mod:`gpuplan.plan.layout`. The checkpoint interval is Daly's optimum
(:func:`gpuplan.market.cost.daly_interval_h`) for the offer's spot interruption rate, or on demand for the
hardware failure rate of Llama 3's training (:data:`gpuplan.overheads.GPU_HOURS_BETWEEN_FAILURES`).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

from .. import overheads as oh
from ..dataset import profile
from ..scenario.stacks import RECIPES, trl_masks_assistant
from .batch import ALPACA, GPT3, LLAMA2, QLORA, data_batch, kind_of, published, suggested_epochs

WARMUP_RATIO = 0.03  # QLoRA and Alpaca
GPT3_WARMUP_TOKENS = 375e6
GPT3_MIN_LR = 0.1  # GPT-3 (Brown et al. 2020, appendix B): cosine decay to 10 % of the peak


@dataclass(frozen=True, kw_only=True)
class Choice:
    name: str
    value: str
    why: str


@dataclass(frozen=True, kw_only=True)
class Recipe:
    kind: str  # lora | full fine-tuning | pretraining
    global_batch: int  # sequences per optimizer step, as the recipe asks (rows as the trainer counts them)
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
    examples_per_step: int | None = None  # fine-tuning with data: the global batch in examples, before packing
    suggested_epochs: float | None = None  # from the data set's size (EPOCHS_BY_SIZE)
    assistant_only: bool = False  # the loss on the assistant turns only (data with roles)
    min_lr_ratio: float = 0.0  # the floor of the decay, as a share of the peak

    @property
    def effective_batch(self) -> int:
        return self.micro_batch_size * self.grad_accum_steps * self.data_parallel

    def as_dict(self) -> dict:
        return {**{k: v for k, v in asdict(self).items() if k != "choices"}, "effective_batch": self.effective_batch,
                "choices": [asdict(c) for c in self.choices]}


def checkpoint_steps(s, step_time_s: float, checkpoint_bytes: float, spot_mtbi_h: float | None,
                     steps: int | None) -> tuple[int | None, str]:
    """The scenario's ``save_interval`` (the saves its time and spot plan count), else Daly's optimum interval, in
    optimizer steps, for the offer's spot interruptions or on demand the hardware failure rate (per GPU-hour,
    Llama 3) over the job's GPUs."""
    from ..market.cost import daly_interval_h

    write_h = checkpoint_bytes / (s.disk_gbs * 1e9) / 3600
    if s.save_interval:
        return s.save_interval, (f"save_interval: {s.save_interval * step_time_s / 60:,.0f} min of work between "
                                 f"checkpoints (a checkpoint of {checkpoint_bytes / 1e9:,.1f} GB writes in "
                                 f"{write_h * 3600:,.0f} s at {s.disk_gbs:g} GB/s)")
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


def recipe(s, m, *, spot_mtbi_h: float | None = None, checkpoint_bytes: float = 0.0,
           rows_per_epoch: int | None = None, examples_per_epoch: int | None = None, roles: bool = False,
           layout_why: str | None = None, step_s: float | None = None) -> Recipe:
    """The recipe of ``s`` (module docstring); ``rows_per_epoch``: sequences per epoch
    after packing, ``examples_per_epoch`` the records they hold, ``roles``: whether the data has roles (chat turns);
    the checkpoint interval from the plan's step time (``step_s``). The micro-batch x accumulation is the
    scenario's, as the builder laid it out (``layout_why``: :func:`gpuplan.plan.layout.with_layout`, the one place
    it is decided) or as the user set it (:func:`as_set`); the recipe searches none of its own."""
    params = float(m.params_total)
    global_batch, lr, schedule, clip, why = published(s, params)
    kind = kind_of(s)
    examples = None
    if rows_per_epoch and examples_per_epoch and kind != "pretraining":
        examples, global_batch, said = data_batch(s, params, examples_per_epoch, rows_per_epoch)
        choices = [Choice(name="global batch", value=f"{examples:,} examples" + (
            f" ({global_batch:,} sequences)" if global_batch != examples else ""), why=said)]
    else:
        choices = [Choice(name="global batch", value=f"{global_batch:,} sequences", why=why)]
        if rows_per_epoch and rows_per_epoch < global_batch:
            global_batch = rows_per_epoch
            choices[0] = Choice(name="global batch", value=f"{global_batch:,} sequences",
                                why=f"{why}; capped at the {rows_per_epoch:,} sequences of one epoch")
    mb, accum, dp = s.micro_batch_size, s.grad_accum_steps, s.dp
    why_layout = layout_why or as_set(s, global_batch)
    effective = mb * accum * dp
    choices.append(Choice(name="micro-batch x accumulation x GPUs", value=f"{mb} x {accum} x {dp} = {effective:,} "
                          f"sequences{run_batch(effective, global_batch)}", why=why_layout))
    choices.append(Choice(name="learning rate", value=f"{lr:g}", why=why))
    epochs = s.epochs or (1.0 if rows_per_epoch else None)
    steps, more = run_length(s, epochs, rows_per_epoch, examples_per_epoch, effective)
    choices += more
    warm, said = warmup(s, params, effective, steps, schedule)
    choices.append(said)
    said = loss_on(s, m, bool(roles) and kind != "pretraining")
    choices += said
    assistant_only = any(c.value == ASSISTANT_ONLY for c in said)
    save = None
    if step_s is not None:
        save, why_save = checkpoint_steps(s, step_s, checkpoint_bytes, spot_mtbi_h, steps)
        choices.append(Choice(name="checkpoint every", value=f"{save:,} steps" if save else "end of run",
                              why=why_save))
    suggested = suggested_epochs(examples_per_epoch)[0] if examples_per_epoch and kind != "pretraining" else None
    return Recipe(kind=kind, global_batch=global_batch, learning_rate=lr, schedule=schedule,
                  warmup_steps=warm, steps=steps, epochs=epochs if rows_per_epoch else s.epochs,
                  micro_batch_size=mb, grad_accum_steps=accum, data_parallel=dp, save_steps=save,
                  max_grad_norm=clip, choices=tuple(choices), examples_per_step=examples,
                  suggested_epochs=suggested, assistant_only=assistant_only,
                  min_lr_ratio=GPT3_MIN_LR if kind == "pretraining" else 0.0)



ASSISTANT_ONLY = "the assistant turns only"


def loss_on(s, m, roles: bool) -> list[Choice]:
    """The recipe's line on which tokens train, for data with roles (chat turns; none without): the assistant turns,
    except where the stack trains through TRL's SFTTrainer and TRL cannot mark the model's chat template (the s30
    walk: ``assistant_only_loss`` stopped TRL at start for Mistral and Llama 3.1; :func:`trl_masks_assistant`)."""
    if not roles:
        return []
    if RECIPES[s.stack].trl_files and not trl_masks_assistant(m.name):
        return [Choice(name="loss on", value="every token", why=(
            f"TRL 1.16 has no {{% generation %}} patch for {m.name}'s chat template, so assistant_only_loss would "
            "stop its SFTTrainer at start ('The chat template is not training-compatible'); a template with the "
            "markers (SFTConfig chat_template_path), or stack axolotl or torchtune, masks the other turns"))]
    return [Choice(name="loss on", value=ASSISTANT_ONLY, why=(
        "the data has roles: the user and system turns are context, not targets (TRL assistant_only_loss, "
        "torchtune train_on_input false, Axolotl train_on_inputs false, Unsloth train_on_responses_only)"))]


def plan_recipe(plan):
    """The recipe of a plan: checkpointing by its step time (on the links of the offer it is priced on) for its spot
    interruptions (if spot), its micro-batch x accumulation the plan's own (why, where the builder laid it out)."""
    r = plan.setup
    s, m = r.scenario, r.model
    p = profile(s)
    spot = plan.spot
    return recipe(s, m, spot_mtbi_h=spot.mtbi_h if spot else None,
                  checkpoint_bytes=plan.checkpoint_bytes,
                  rows_per_epoch=p.batching.rows if p else None,
                  examples_per_epoch=p.stats.samples if p else None,
                  roles=bool(p) and "messages" in p.lengths.kind, layout_why=r.layout_why,
                  step_s=plan.speed.step_time_s if plan.speed else None)


def run_batch(effective: int, global_batch: int) -> str:
    """What the layout's ``effective`` sequences a step are beside the recipe's ``global_batch``, where they differ:
    the batch the steps, the warm-up and the launch files use (a micro-batch that does not divide the recipe's
    batch overshoots it by up to :data:`gpuplan.plan.layout.OVERSHOOT`; a layout set by hand may fall short)."""
    if effective == global_batch:
        return ""
    side = "over" if effective > global_batch else "under"
    return f", the global batch run ({abs(effective / global_batch - 1):.1%} {side} the recipe's {global_batch:,})"


def as_set(s, global_batch: int) -> str:
    """Why the layout is the scenario's own (set by the user, or no card to time on), and the accumulation that
    would reach the recipe's ``global_batch`` where it falls short."""
    reach = max(1, -(-global_batch // (s.micro_batch_size * s.dp)))
    short = f"; grad_accum_steps {reach} would reach the recipe's {global_batch:,}" \
        if s.micro_batch_size * s.grad_accum_steps * s.dp < global_batch and not s.optimizer_in_backward else ""
    return f"as set{short}"


def run_length(s, epochs: float | None, rows: int | None, examples: int | None, effective: int
               ) -> tuple[int | None, list[Choice]]:
    """Optimizer steps (epochs x rows per epoch / rows per step, or train_tokens / tokens per step), and the lines
    that say them, with the epochs suggested for the set's size."""
    out = []
    if rows:
        steps = math.ceil(epochs * rows / effective)
        what = f"{examples:,} examples in {rows:,} sequences" if examples and examples != rows else \
            f"{rows:,} sequences"
        out.append(Choice(name="steps", value=f"{steps:,} ({epochs:g} epoch(s) of {what})",
                          why="epochs x sequences per epoch (after packing) / sequences per step"))
        if examples and kind_of(s) != "pretraining":
            suggested, why = suggested_epochs(examples)
            run = f"{epochs:g} as set" if s.epochs else f"{epochs:g} (the default)"
            out.append(Choice(name="epochs", value=f"{run}; {suggested:g} suggested for {examples:,} examples",
                              why=why + ("" if s.epochs or suggested == epochs else
                                         f": set --epochs {suggested:g} to train so")))
    elif s.train_tokens:
        steps = math.ceil(s.train_tokens / (effective * s.seq_len))
        out.append(Choice(name="steps", value=f"{steps:,}", why=f"train_tokens {s.train_tokens:,.3g} / "
                          f"({effective:,} x {s.seq_len:,} tokens per step)"))
    else:
        steps = None
    return steps, out


def warmup(s, params: float, effective: int, steps: int | None, schedule: str) -> tuple[int, Choice]:
    """Warm-up steps and the line that says them: pretraining GPT-3's 375M tokens (Llama 2's 2,000 steps above
    20B), at most a tenth of the run; fine-tuning 3 % of the run (QLoRA, Alpaca)."""
    if kind_of(s) == "pretraining":
        warm = math.ceil(GPT3_WARMUP_TOKENS / (effective * s.seq_len)) if params <= 20e9 else 2000
        source = f"{GPT3}: 375M tokens of warm-up" if params <= 20e9 else f"{LLAMA2}: 2,000 steps"
        if steps:
            warm = min(warm, max(1, steps // 10))
        return warm, Choice(name="warm-up", value=f"{warm:,} steps, then {schedule} to 10 %",
                            why=source + (" (at most a tenth of the run)" if steps else ""))
    warm = max(1, math.ceil(WARMUP_RATIO * steps)) if steps else 0
    return warm, Choice(name="warm-up", value=f"{warm:,} steps (3 %), then {schedule}",
                        why=f"{QLORA if kind_of(s) == 'lora' else ALPACA}: warm-up ratio 0.03")
