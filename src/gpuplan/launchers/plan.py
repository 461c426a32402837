"""The plan a launch writes: one setup (scenario + offer) and what gpuplan predicted for it.

A :class:`LaunchPlan` is the launch files' view of one :class:`~gpuplan.plan.plan.Plan`, the plan to launch a
scenario (``gpuplan launch``) or a ranked setup (``gpuplan recommend --launch N``) that
:func:`gpuplan.plan.launch.runnable` builds: memory, speed on the offer's own interconnect, the price and the spot
plan (Young/Daly checkpoint interval), the recipe. Nothing here computes a number of its own; the writers read only
this object.
"""

from __future__ import annotations

import datetime as dt
import math
from dataclasses import dataclass
from pathlib import Path

from .. import __version__, clock
from .. import overheads as oh
from ..errors import no_control
from ..hardware import GpuSpec
from ..market.cost import SpotPlan, checkpoint_bytes, dataset_gb
from ..market.offers import Offer
from ..model.spec import ModelSpec
from ..plan.launch import runnable
from ..plan.plan import Plan
from ..plan.recipe import Recipe
from ..scenario import Scenario, scenario_from
from ..speed import Speed
from .settings import pip_packages

GB = 1e9


@dataclass(frozen=True, kw_only=True)
class LaunchPlan:
    """One setup to run and the numbers predicted for it (per GPU unless named otherwise)."""

    scenario: Scenario
    command: str  # the gpuplan command (or API call) that produced the plan
    result: Plan  # the plan to launch: memory, model facts, warnings, speed, cost, recipe
    model: ModelSpec
    gpu: GpuSpec
    speed: Speed
    offer: Offer | None  # None: the user's own cards, or no matching offer in the price catalog
    offer_label: str | None = None  # as `estimate` and `recommend` print it: ``vast 2x interruptible``
    owned: bool = False  # the user's own cards, priced by power alone
    usd_per_hour: float | None
    hours: float | None  # wall-clock hours, spot restarts included
    usd_total: float | None
    spot: SpotPlan | None
    visible_devices: tuple[int, ...] | None = None  # CUDA_VISIBLE_DEVICES when the plan uses some of the cards
    written_on: dt.date
    recipe: Recipe | None = None  # training: batch, lr, schedule, steps, checkpoints (gpuplan.plan.recipe)

    @classmethod
    def of(cls, plan: Plan, *, command: str, visible_devices: tuple[int, ...] | None, written_on: dt.date
           ) -> LaunchPlan:
        """The launch files' view of ``plan``: its scenario, model and card as resolved, its speed, the offer it is
        priced on and its cost (hours and total for a training run of ``train_tokens``), its spot plan and recipe."""
        r, cost = plan.setup, plan.cost
        s = r.scenario
        owned = plan.offer is not None and plan.offer.pricing == "owned"
        whole_run = s.task == "train" and bool(s.train_tokens)
        if cost is not None:
            per_hour, hours, usd = cost.usd_per_hour, *((cost.hours, cost.usd_total) if whole_run else (None, None))
        else:
            spot = plan.spot
            per_hour, usd = None, None
            hours = (spot.wall_h if spot else plan.work_hours) if whole_run else None
        return cls(scenario=s, command=command, result=plan, model=r.model, gpu=r.gpu, speed=plan.speed,
                   offer=None if owned else plan.offer, offer_label=cost.offer if cost and not owned else None,
                   owned=owned, usd_per_hour=per_hour, hours=hours, usd_total=usd, spot=plan.spot,
                   visible_devices=visible_devices, written_on=written_on, recipe=plan.typed_recipe)

    @property
    def inputs(self) -> dict[str, str]:
        """The local files and folders the run reads, by role (``model``: a config folder; ``tokenizer``;
        ``dataset``), as absolute paths: the files name them there, and SkyPilot copies each to the same path on
        every node (``file_mounts``), so one config runs here and there."""
        s, out = self.scenario, {}
        for role, text in (("model", s.model), ("tokenizer", s.tokenizer), ("dataset", s.dataset)):
            path = local_path(text)
            if path is not None:
                out[role] = str(path.parent if role == "model" and path.is_file() else path)
        return out

    @property
    def model_ref(self) -> str:
        """The model as the stacks load it: its local folder (absolute), else its Hugging Face id."""
        return self.inputs.get("model", self.model.name)

    @property
    def synthetic(self) -> bool:
        """A model that exists only as a size (``model_size``): built from its config with random weights."""
        return bool(self.scenario.model_size)

    @property
    def train(self) -> bool:
        return self.scenario.task == "train"

    @property
    def gpus_per_node(self) -> int:
        s = self.scenario
        return s.num_gpus if self.train else s.tp * s.pp

    @property
    def num_nodes(self) -> int:
        return self.scenario.num_nodes if self.train else 1

    @property
    def tokens_per_step(self) -> int:
        """Tokens one optimizer step consumes: micro-batch x sequence x accumulation x data-parallel ranks."""
        s = self.scenario
        return s.micro_batch_size * s.seq_len * s.grad_accum_steps * s.dp

    @property
    def max_steps(self) -> int | None:
        """Optimizer steps that process ``train_tokens`` (rounded up); None without ``train_tokens``."""
        if not self.train or not self.scenario.train_tokens:
            return None
        if self.recipe is not None and self.recipe.steps is not None:
            return self.recipe.steps
        return math.ceil(self.scenario.train_tokens / self.tokens_per_step)

    @property
    def save_steps(self) -> int | None:
        """Optimizer steps between checkpoints: the spot plan's Daly interval over the predicted step time
        (at least 1); on demand, the recipe's (Daly's interval for hardware failures), None when that is longer
        than the run; the scenario's ``save_interval`` when it sets one (its saves are priced in the time)."""
        if not self.train:
            return None
        if self.scenario.save_interval:
            return self.scenario.save_interval
        if self.spot is None:
            return self.recipe.save_steps if self.recipe is not None else None
        return max(1, math.floor(self.spot.interval_h * 3600 / self.speed.step_time_s))

    @property
    def checkpoint_gb(self) -> float:
        """Size of one resumable checkpoint (weights and optimizer states), GB."""
        trainable = self.result.model.params_trainable
        return checkpoint_bytes(self.scenario, self.model, trainable) / GB if self.train else 0.0

    @property
    def weights_gb(self) -> float:
        """The checkpoint as downloaded from the hub, GB."""
        return sum(self.model.weight_bytes().values()) / GB

    @property
    def disk_gb(self) -> int:
        """Disk to ask for: the downloaded weights, ``CHECKPOINTS_KEPT`` resumable checkpoints and the final
        save (counted as one more checkpoint, an upper bound), the dataset (``dataset_gb``, else 4 bytes per
        train token: :func:`gpuplan.market.cost.dataset_gb`), and an allowance for the software
        (:data:`gpuplan.overheads.LAUNCH_SOFTWARE_GB`), rounded up to 10 GB."""
        need = self.weights_gb + oh.LAUNCH_SOFTWARE_GB + dataset_gb(self.scenario)
        if self.train:
            need += (oh.CHECKPOINTS_KEPT + 1) * self.checkpoint_gb
        return int(math.ceil(need / 10) * 10)

    @property
    def setup_label(self) -> str:
        s = self.scenario
        what = f"{s.world_size if self.train else self.gpus_per_node}x {self.gpu.name}"
        if self.train:
            what += f", {s.resolved_strategy}, {s.method}"
        else:
            what += f", {s.engine} tp{s.tp}" + (f" pp{s.pp}" if s.pp > 1 else "")
        if self.offer is not None:
            what += f", {self.offer_label}" + (f" {self.offer.region}" if self.offer.region else "")
        elif self.owned:
            what += ", your own cards"
        return what

    def launch_command(self) -> str:
        """``gpuplan launch`` with the plan's scenario as flags (the fields given explicitly; the framework fills
        the rest again), to write the files again with other targets or options."""
        import shlex

        argv = ["gpuplan", "launch"]
        for name, value in self.scenario.model_dump().items():
            if value is None or name not in self.scenario.model_fields_set:
                continue
            text = ",".join(value) if isinstance(value, list) else f"{value:g}" if isinstance(value, float) else \
                str(value)
            argv += [f"--{name.replace('_', '-')}", text]
        return shlex.join(argv)

    def predictions(self) -> dict[str, float | int | str | None]:
        """What gpuplan predicted, with units in the names, for the header of every file and ``plan.json``."""
        mem = self.result.memory
        out: dict[str, float | int | str | None] = {
            "device_peak_gib_per_gpu": round(mem.device_peak_gib, 2),
            "reserved_peak_gib_per_gpu": round(mem.reserved_peak_gib, 2),
            "allocated_peak_gib_per_gpu": round(mem.allocated_peak_gib, 2),
            "capacity_gib_per_gpu": round(self.gpu.usable_gib, 2),
            "peak_phase": mem.peak_phase,
            "tokens_per_s": round(self.speed.tokens_per_s, 1),
        }
        if self.speed.tokens_per_s_low and self.speed.tokens_per_s_high:  # the calibration spread
            out["tokens_per_s_low"] = round(self.speed.tokens_per_s_low, 1)
            out["tokens_per_s_high"] = round(self.speed.tokens_per_s_high, 1)
        if self.train:
            out["step_time_s"] = round(self.speed.step_time_s, 3)
            out["max_steps"] = self.max_steps
        else:
            out["max_concurrency"] = mem.max_concurrency
            out["kv_tokens"] = mem.max_context_tokens
            out["kv_cache_pool_gib"] = None if mem.kv_cache_pool_gib is None else round(mem.kv_cache_pool_gib, 2)
            out["ttft_s"] = None if self.speed.ttft_s is None else round(self.speed.ttft_s, 4)
            streaming = self.speed.streaming_tokens_per_s_per_user
            out["streaming_tokens_per_s_per_user"] = None if streaming is None else round(streaming, 2)
        out["hours"] = None if self.hours is None else round(self.hours, 2)
        out["usd_per_hour"] = None if self.usd_per_hour is None else round(self.usd_per_hour, 4)
        out["usd_total"] = None if self.usd_total is None else round(self.usd_total, 2)
        if self.spot is not None:
            out["checkpoint_every_min"] = round(self.spot.interval_h * 60, 1)
            out["save_steps"] = self.save_steps
            out["mtbi_hours"] = round(self.spot.mtbi_h, 2)
        return out

    def header(self) -> list[str]:
        """The lines every written file starts with: who wrote it, from what, and what it predicted."""
        mem, p = self.result.memory, self.predictions()
        lines = [f"written by gpuplan {__version__} on {self.written_on.isoformat()}: {self.command}",
                 f"plan: {self.setup_label}"]
        if self.train:
            s = self.scenario
            lines.append(f"  {self.model.name}, micro-batch {s.micro_batch_size} x {s.seq_len:,} tokens x "
                         f"accumulation {s.grad_accum_steps} x {s.dp} data-parallel, checkpointing "
                         f"{s.grad_checkpointing}, optimizer {s.optimizer}, {s.precision}")
        lines.append(f"predicted per GPU: device peak {mem.device_peak_gib:.1f} GiB of {self.gpu.usable_gib:.1f} "
                     f"(reserved {mem.reserved_peak_gib:.1f}, allocated {mem.allocated_peak_gib:.1f}; "
                     f"torch.cuda.max_memory_reserved / max_memory_allocated), peak in {mem.peak_phase}")
        speed = f"predicted: {self.speed.tokens_per_s:,.0f} tokens/s"
        if self.speed.tokens_per_s_low and self.speed.tokens_per_s_high:
            speed += f" ({self.speed.tokens_per_s_low:,.0f}-{self.speed.tokens_per_s_high:,.0f})"
        if self.train:
            speed += f", {self.speed.step_time_s:.2f} s per optimizer step"
        if self.hours is not None and self.train and self.scenario.train_tokens:
            speed += f", {self.hours:,.1f} h"
        if self.usd_per_hour is not None:
            speed += f", ${self.usd_per_hour:,.2f}/h"
            if self.usd_total is not None and self.train and self.scenario.train_tokens:
                speed += f", ${self.usd_total:,.0f} in total"
        lines.append(speed)
        if self.spot is not None:
            lines.append(f"spot: checkpoint every {p['checkpoint_every_min']} min (Daly; interruptions every "
                         f"{self.spot.mtbi_h:.1f} h on average) = every {self.save_steps} steps")
        lines += self.recipe_lines()
        return lines

    def recipe_lines(self) -> list[str]:
        """The data, the recipe (each value with its reason) and the pinned packages, as header lines."""
        if not self.train:
            return []
        out = []
        d = self.result.dataset
        if d:
            out.append(f"data: {d['source']}: {d['samples']:,} records, {d['tokens_total']:,} tokens + "
                       f"{d['special_tokens']:,} EOS/template; {d['tokens_trained']:,} trained per epoch; packing "
                       f"{d['packing']}: {d['packed_sequences']:,} sequences, {d['padding_pct']:.1f}% padding")
        if self.recipe is not None:
            out.append(f"recipe ({self.recipe.kind}):")
            out += [f"  {c.name}: {c.value} ({c.why})" for c in self.recipe.choices]
        out.append("tested with: pip install " + " ".join(pip_packages(self)))
        return out


def local_path(text: str | None) -> Path | None:
    """``text`` as an absolute path when it names a file or folder on this machine, else None (a hub id)."""
    if not text or text.lower().startswith("synthetic-"):
        return None
    path = Path(text).expanduser()
    try:
        return path.resolve() if path.exists() else None
    except OSError:  # too long or otherwise impossible as a path: not one
        return None


def launch_plan(scenario: Scenario | dict, *, command: str = "gpuplan.launchers.launch_plan (Python API)",
                offer_label: str | None = None, visible_devices: tuple[int, ...] | None = None,
                owned_usd_per_hour: float | None = None, today: dt.date | None = None,
                keep_micro_batch: bool = False) -> LaunchPlan:
    """The files' view of the plan to launch ``scenario`` on its GPU (:func:`gpuplan.plan.launch.runnable`: the
    run's defaults chosen before the plan is built, the offer priced the way ``estimate`` and ``recommend`` rank
    it or the one named ``offer_label`` (a ranked setup's), the user's own cards priced by power alone with
    ``owned_usd_per_hour``, the recipe made by the builder); everything here is read off that plan."""
    s = scenario_from(scenario)
    _check_names(s)
    plan = runnable(s, offer_label=offer_label, owned_usd_per_hour=owned_usd_per_hour,
                    keep_micro_batch=keep_micro_batch)
    no_control(plan.setup.model.name, "the model's name")
    return LaunchPlan.of(plan, command=command, visible_devices=visible_devices, written_on=today or clock.today())


def _check_names(s: Scenario) -> None:
    """Refuse a scenario whose text (the model's folder, the dataset's file, ...) holds a control character: the
    launch files carry these names."""
    for name, value in s.model_dump().items():
        for text in value if isinstance(value, (list, tuple)) else [value]:
            if isinstance(text, str):
                no_control(text, f"the {name.replace('_', ' ')}")
