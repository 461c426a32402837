"""A plan to launch: the scenario's plan with the defaults a run needs beyond an estimate's, chosen before the plan
is built (each with why), and the recipe made by the builder (with the recipe's micro-batch x accumulation, which
the builder takes for every training plan: :func:`gpuplan.plan.layout.with_layout`; a ranked setup keeps its
micro-batch and takes the accumulation). The launch files (``gpuplan launch``) are
written from this plan alone.

The default of a run: **nodes x GPUs per node**: a training job of more GPUs than the card's largest instance
holds runs on several instances (:func:`gpuplan.plan.nodes.on_nodes`, as ``estimate`` places it). vLLM's
``--max-model-len`` is every plan's (:func:`gpuplan.engines.vllm.started`: the longest request the pool holds where
the model's context does not fit it), not a launch's own.

A serving plan runs its ``users`` or ``rate_rps`` through the engine's scheduler as ``estimate``'s does
(``simulate``), so the files state what it serves at that load and the price on it.

The offer is chosen by the builder as ``estimate`` chooses it, or the one a ranked row names (``offer_label``), or
the user's own cards (``owned_usd_per_hour``: priced by power alone).

:func:`run_of` reads what the files state off that plan (:class:`Run`): the setup in words, the price and hours, the
steps, the steps between checkpoints, the checkpoint's and the disk's size. The launch files compute nothing.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from .. import overheads as oh
from ..errors import GpuplanError
from ..market.cost import dataset_gb
from ..market.offers import Offer, owned_offer
from ..market.store import load_offers
from ..scenario import Scenario
from ..scenario.stacks import RECIPES
from .build import Offers, build, in_force_for, offers_for
from .nodes import on_nodes
from .plan import Plan
from .resolve import resolve
from .split import split_cards


def runnable(s: Scenario, *, offer_label: str | None = None, owned_usd_per_hour: float | None = None,
             keep_micro_batch: bool = False) -> Plan:
    """The plan to launch ``s`` on its card (module docstring); refused in one sentence when it does not fit."""
    if not s.gpu:
        raise GpuplanError("launch needs a GPU: set --gpu (and --num-gpus), or pick a setup with "
                           "`gpuplan recommend ... --launch N`")
    if (s.extra_gpus or s.tensor_split) and owned_usd_per_hour is None and offer_label is None:
        from .split import split_estimate  # a llama.cpp split: the plan estimate makes of it, each device's composed

        plan = split_estimate(s)  # (session 24's walk: launch built 2x the first card, 187 tokens/s and $0.06/h for
        _fits(plan)  # an RTX 4070 beside an RTX 3060 that estimate put at 141 tokens/s, unpriced, split by memory)
        return plan
    catalog = load_offers()
    r = resolve(s)
    in_force = in_force_for(r.scenario, catalog)  # filtered once: the nodes and the offers read it
    if owned_usd_per_hour is None and offer_label is None:
        r = on_nodes(r, in_force)
    memory = build(r, memory_only=True)
    _fits(memory)
    if owned_usd_per_hour is not None:
        offers = Offers(candidates=(owned_offer(r.gpu.id, r.scenario.world_size,
                                                owned_usd_per_hour / r.scenario.world_size),))
    else:
        offers = offers_for(r, catalog, in_force)
    plan = build(r, offers, advise=False, offer_label=offer_label, recipe=True, keep_micro_batch=keep_micro_batch,
                 simulate=True)
    if offer_label is not None and (plan.cost is None or plan.cost.offer != offer_label):
        raise GpuplanError(f"no offer {offer_label!r} for {r.gpu.id} in the price catalog")
    _trl_takes_the_data(plan)
    return plan


def _trl_takes_the_data(plan: Plan) -> None:
    """Refuse the files of a TRL stack whose chat records hold no assistant turn while the loss is on the assistant
    turns only (``assistant_only_loss``): TRL's SFTTrainer stops on the first such record ("at least one example has
    no assistant tokens", trl 1.x ``trainer/sft_trainer.py``), so the run would fail before its first step. The
    estimate only warns (:func:`gpuplan.dataset.reply_warning`); the other stacks mask such records and run."""
    from .dataset_report import data_warnings

    typed, s = plan.typed_recipe, plan.setup.scenario
    said = data_warnings(s, typed) if typed is not None and RECIPES[s.stack].trl_files else ()
    if said:
        raise GpuplanError(f"the {s.stack} files would stop before the first step: {said[0]}")


def _fits(plan: Plan) -> None:
    """Refuse a plan that does not fit, in one sentence: a launch would fail."""
    mem, s = plan.memory, plan.setup.scenario
    if mem.fits is not False:
        return
    digits = 1 if f"{mem.device_peak_gib:.1f}" != f"{mem.capacity_gib:.1f}" else 2  # never "23.9 of 23.9"
    why = (f"its KV pool holds {mem.max_concurrency:,} of the {s.batch_size:,} concurrent "
           f"request{'s' if s.batch_size != 1 else ''} asked "
           f"({mem.device_peak_gib:.1f} of {mem.capacity_gib:.1f} GiB usable per GPU)"
           if mem.max_concurrency is not None and mem.max_concurrency < s.batch_size
           and mem.device_peak_gib <= mem.capacity_gib else
           f"{mem.device_peak_gib:.{digits}f} GiB per GPU on {plan.gpu.name} ({mem.capacity_gib:.{digits}f} usable)")
    raise GpuplanError(f"the plan does not fit: {why}; run `gpuplan estimate` for the changes that would make it fit")


GB = 1e9


@dataclass(frozen=True, kw_only=True)
class Run:
    """A plan's run as its launch files state it, read off the plan (per GPU unless named otherwise)."""

    label: str  # the setup in words: cards, sharding and parallel layout, method (or engine), offer
    offer: Offer | None  # None: the user's own cards, or no matching offer in the price catalog
    offer_label: str | None  # as `estimate` and `recommend` print it: ``vast 2x interruptible``
    owned: bool  # the user's own cards, priced by power alone
    usd_per_hour: float | None
    hours: float | None  # wall-clock hours of a training run of train_tokens, spot restarts included
    usd_total: float | None
    max_steps: int | None  # optimizer steps of the run (the recipe's); None without train_tokens or data
    save_steps: int | None  # optimizer steps between checkpoints (None: only the final save)
    checkpoint_gb: float  # one resumable checkpoint: weights and optimizer states
    weights_gb: float  # the checkpoint as downloaded from the hub
    disk_gb: int  # disk to ask for


def run_of(plan: Plan) -> Run:
    """The run of ``plan``: its offer and cost (hours and total for a training run of ``train_tokens``), its steps
    and checkpoints, the disk it needs, and its setup in words."""
    r, cost = plan.setup, plan.cost
    s, m = r.scenario, r.model
    train = s.task == "train"
    owned = plan.offer is not None and plan.offer.pricing == "owned"
    whole_run = train and bool(s.train_tokens)
    if cost is not None:
        per_hour, hours, usd = cost.usd_per_hour, *((cost.hours, cost.usd_total) if whole_run else (None, None))
    else:
        per_hour, usd = None, None
        hours = (plan.spot.wall_h if plan.spot else plan.work_hours) if whole_run else None
    offer, offer_label = (None, None) if owned else (plan.offer, cost.offer if cost else None)
    checkpoint = plan.checkpoint_bytes / GB
    weights = sum(m.weight_bytes().values()) / GB
    return Run(label=setup_label(plan, offer, offer_label, owned), offer=offer, offer_label=offer_label,
               owned=owned, usd_per_hour=per_hour, hours=hours, usd_total=usd, max_steps=max_steps(plan),
               save_steps=save_steps(plan), checkpoint_gb=checkpoint, weights_gb=weights,
               disk_gb=disk_gb(s, weights, checkpoint))


def max_steps(plan: Plan) -> int | None:
    """Optimizer steps that process ``train_tokens`` (the recipe's, else rounded up from the tokens one step
    takes: micro-batch x sequence x accumulation x data-parallel ranks); None without ``train_tokens``."""
    s = plan.setup.scenario
    if s.task != "train" or not s.train_tokens:
        return None
    if plan.typed_recipe is not None and plan.typed_recipe.steps is not None:
        return plan.typed_recipe.steps
    return math.ceil(s.train_tokens / (s.micro_batch_size * s.seq_len * s.grad_accum_steps * s.dp))


def save_steps(plan: Plan) -> int | None:
    """Optimizer steps between checkpoints: the scenario's ``save_interval`` when it sets one (its saves are priced
    in the time); on spot, the spot plan's Daly interval over the plan's step time (at least 1); on demand, the
    recipe's (Daly's interval for hardware failures), None when that is longer than the run."""
    s = plan.setup.scenario
    if s.task != "train":
        return None
    if s.save_interval:
        return s.save_interval
    if plan.spot is None:
        return plan.typed_recipe.save_steps if plan.typed_recipe is not None else None
    return max(1, math.floor(plan.spot.interval_h * 3600 / plan.speed.step_time_s))


def disk_gb(s: Scenario, weights_gb: float, checkpoint_gb: float) -> int:
    """Disk to ask for: the downloaded weights, ``CHECKPOINTS_KEPT`` resumable checkpoints and the final save
    (counted as one more checkpoint, an upper bound), the dataset (``dataset_gb``, else 4 bytes per train token:
    :func:`gpuplan.market.cost.dataset_gb`), and an allowance for the software
    (:data:`gpuplan.overheads.LAUNCH_SOFTWARE_GB`), rounded up to 10 GB."""
    need = weights_gb + oh.LAUNCH_SOFTWARE_GB + dataset_gb(s)
    if s.task == "train":
        need += (oh.CHECKPOINTS_KEPT + 1) * checkpoint_gb
    return int(math.ceil(need / 10) * 10)


def setup_label(plan: Plan, offer: Offer | None, offer_label: str | None, owned: bool) -> str:
    """The setup in one line: the cards, the layout (training) or the engine and its split (serving), the offer."""
    s, gpu = plan.setup.scenario, plan.setup.gpu
    if s.task == "train":
        what = f"{s.world_size}x {gpu.name}, {s.layout}, {s.method}"
    elif s.extra_gpus:  # a llama.cpp split over mixed cards: each card named, in llama.cpp's device order
        what = " + ".join(c.name for c in split_cards(s)) + f", {s.engine} layer split"
    else:
        what = f"{s.tp * s.pp}x {gpu.name}, {s.engine} tp{s.tp}" + (f" pp{s.pp}" if s.pp > 1 else "")
    if offer is not None:
        what += f", {offer_label}" + (f" {offer.region}" if offer.region else "")
    elif owned:
        what += ", your own cards"
    return what
