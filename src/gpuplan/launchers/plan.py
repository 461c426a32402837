"""The plan a launch writes: one setup (scenario + offer) and what gpuplan predicted for it.

A :class:`LaunchPlan` is the launch files' view of one :class:`~gpuplan.plan.plan.Plan`, the plan to launch a
scenario (``gpuplan launch``) or a ranked setup (``gpuplan recommend --launch N``) that
:func:`gpuplan.plan.launch.runnable` builds: memory, speed on the offer's own interconnect, the price and the spot
plan (Young/Daly checkpoint interval), the recipe. Nothing here computes a number of its own; the writers read only
this object.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from pathlib import Path

from .. import clock
from .._version import __version__
from ..engines import engine_for
from ..errors import no_control
from ..hardware import GpuSpec
from ..market.cost import SpotPlan
from ..market.offers import Offer
from ..model.checkpoints import published
from ..model.spec import ModelSpec
from ..plan.dataset_report import data_warnings
from ..plan.launch import run_of, runnable
from ..plan.plan import Plan
from ..plan.recipe import Recipe
from ..result import hours_words
from ..scenario import Scenario, scenario_from
from ..scenario.describe import flag_text
from ..speed import Speed
from ..stacks import STACKS
from .settings import backend

# a checkpoint's weight files as transformers' from_pretrained finds them in a folder (model.safetensors, its shards
# and index; pytorch_model.bin and its shards)
WEIGHT_FILES = ("*.safetensors", "*.bin")


@dataclass(frozen=True, kw_only=True)
class LaunchPlan:
    """One setup to run and the numbers predicted for it (per GPU unless named otherwise), each read off the plan
    (:func:`gpuplan.plan.launch.run_of`)."""

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
    setup_label: str  # the setup in one line (cards, layout or engine, offer)
    max_steps: int | None = None  # optimizer steps that process train_tokens
    save_steps: int | None = None  # optimizer steps between checkpoints (None: only the final save)
    checkpoint_gb: float = 0.0  # one resumable checkpoint (weights and optimizer states), GB
    weights_gb: float = 0.0  # the checkpoint as downloaded from the hub, GB
    disk_gb: int = 0  # disk to ask for, GB

    @classmethod
    def of(cls, plan: Plan, *, command: str, visible_devices: tuple[int, ...] | None, written_on: dt.date
           ) -> LaunchPlan:
        """The launch files' view of ``plan``: its scenario, model and card as resolved, its speed, its run
        (:func:`gpuplan.plan.launch.run_of`: the offer, cost, steps, checkpoints, disk), its spot plan and recipe."""
        r, run = plan.setup, run_of(plan)
        return cls(scenario=r.scenario, command=command, result=plan, model=r.model, gpu=r.gpu, speed=plan.speed,
                   offer=run.offer, offer_label=run.offer_label, owned=run.owned, usd_per_hour=run.usd_per_hour,
                   hours=run.hours, usd_total=run.usd_total, spot=plan.spot, visible_devices=visible_devices,
                   written_on=written_on, recipe=plan.typed_recipe, setup_label=run.label, max_steps=run.max_steps,
                   save_steps=run.save_steps, checkpoint_gb=run.checkpoint_gb, weights_gb=run.weights_gb,
                   disk_gb=run.disk_gb)

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
        """The model as the stacks load it: its local folder (absolute), else its Hugging Face id; a serving plan in
        a format the model's publishers ship loads their checkpoint (NVIDIA's NVFP4:
        :mod:`gpuplan.model.checkpoints`)."""
        ready = published(self.model.name, self.scenario.quant or "") if not self.train else None
        return self.inputs.get("model", ready or self.model.name)

    def weights_missing(self) -> list[str]:
        """A line when the model is a local folder with no checkpoint in it (a config.json alone, as planning
        needs): the stacks load the weights from that folder, so the run would stop there (review 3: a hand-written
        Qwen3-14B config became ``model_name: 'qwen3-14b'``)."""
        folder = self.inputs.get("model")
        if folder is None or self.synthetic or not Path(folder).is_dir():
            return []
        if any(next(Path(folder).glob(pattern), None) for pattern in WEIGHT_FILES):
            return []
        return [f"model: {folder} holds no weights ({', '.join(WEIGHT_FILES)}): put the checkpoint there, or "
                "plan with its Hugging Face id, before running"]

    @property
    def synthetic(self) -> bool:
        """A model that exists only as a size (``model_size``): built from its config with random weights."""
        return bool(self.scenario.model_size)

    @property
    def train(self) -> bool:
        return self.scenario.task == "train"

    @property
    def stack_targets(self) -> tuple[str, ...]:
        """The targets that write a training plan's stack's files (its profile's
        :attr:`~gpuplan.stacks.base.Stack.launch_targets`); none for a serving plan."""
        profile = STACKS.get(self.scenario.stack) if self.train else None
        return profile.launch_targets if profile is not None else ()

    @property
    def gpus_per_node(self) -> int:
        """GPUs on each node: a training node's, or the node's share of one serving copy (tp x pp over its nodes)."""
        s = self.scenario
        return s.num_gpus if self.train else s.tp * s.pp // s.num_nodes

    @property
    def num_nodes(self) -> int:
        return self.scenario.num_nodes

    def launch_command(self) -> str:
        """``gpuplan launch`` with the plan's scenario as flags (the fields given explicitly; the stack fills
        the rest again), to write the files again with other targets or options."""
        import shlex

        argv = ["gpuplan", "launch"]
        for name, value in self.scenario.model_dump().items():
            if value is None or name not in self.scenario.model_fields_set:
                continue
            argv += [f"--{name.replace('_', '-')}", flag_text(value)]
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
            out.update(self.served())
        out["hours"] = None if self.hours is None else round(self.hours, 2)
        out["usd_per_hour"] = None if self.usd_per_hour is None else round(self.usd_per_hour, 4)
        out["usd_total"] = None if self.usd_total is None else round(self.usd_total, 2)
        if self.spot is not None:
            out["checkpoint_every_min"] = round(self.spot.interval_h * 60, 1)
            out["save_steps"] = self.save_steps
            out["mtbi_hours"] = round(self.spot.mtbi_h, 2)
        return out

    def served(self) -> dict[str, float | str]:
        """What the plan's run at its ``users`` or ``rate_rps`` served (:func:`gpuplan.plan.build.serving_runs`, the
        figures ``vllm bench serve`` saves) and the price per million output tokens on it
        (:func:`gpuplan.plan.build.priced_on_load`); without a load, its batch's offline run (all queued at once),
        unpriced as the plan prices it at its decode step; empty without either."""
        run = self.result.load
        offline = self.result.offline  # a batch of requests and no load: the batch queued at once
        if (run is None or not run.output_throughput) and offline is not None and offline.output_throughput:
            return _run_figures(offline, offline.load_words + " queued at once")
        if run is None or not run.output_throughput:
            return {}
        out = _run_figures(run, run.load_words)
        if self.result.priced_tokens_per_s is not None and self.result.cost is not None:
            out["usd_per_million_output_tokens"] = round(self.result.cost.usd_per_million_tokens, 4)
        return out

    def speed_lines(self) -> list[str]:
        """The predicted speed and price: a loaded serving plan's run (what it serves at its users or rate, priced on
        it), then its decode step; else the speed (a training plan's step, hours and total)."""
        p, sp = self.predictions(), self.speed
        speed = f"{sp.tokens_per_s:,.0f} tokens/s"
        if sp.tokens_per_s_low and sp.tokens_per_s_high:
            speed += f" ({sp.tokens_per_s_low:,.0f}-{sp.tokens_per_s_high:,.0f})"
        if self.train:
            speed += f", {sp.step_time_s:.2f} s per optimizer step"
        if "served_at" not in p:
            return [f"predicted: {speed}{self.price_words()}"]
        n = sp.batch_held or self.scenario.batch_size
        latency = "no request completed" if p["median_ttft_ms"] is None else \
            f"TTFT median {p['median_ttft_ms']:,.0f} ms, p99 {p['p99_ttft_ms']:,.0f} ms; " + (
                "no TPOT (one-token replies)" if p["median_tpot_ms"] is None else  # load.NO_GAP
                f"TPOT median {p['median_tpot_ms']:,.1f} ms, p99 {p['p99_tpot_ms']:,.1f} ms")
        return [f"predicted: {p['output_throughput']:,.0f} output tokens/s served at {p['served_at']}, "
                f"{p['request_throughput']:,.3g} requests/s (the engine's scheduler simulated){self.price_words()}",
                f"  {latency}; decode step at {n:,} request{'s' if n != 1 else ''} at once: {speed}"]

    def price_words(self) -> str:
        """The hours and price as the header states them: ``, 12.5 h, $2.10/h, $26 in total`` for a training run of
        ``train_tokens``; a serving plan's $/h, and its $ per million output tokens where it was priced on its run."""
        out, whole_run = "", self.train and bool(self.scenario.train_tokens)
        if self.hours is not None and whole_run:
            out += f", {hours_words(self.hours)}"
        if self.usd_per_hour is None:
            return out
        out += f", ${self.usd_per_hour:,.2f}/h"
        if self.usd_total is not None and whole_run:
            out += f", ${self.usd_total:,.0f} in total" if self.usd_total >= 1 else \
                f", ${self.usd_total:.2f} in total"  # a job on one's own card costs cents of power
        served = self.predictions().get("usd_per_million_output_tokens")
        return out + (f", ${served:,.2f} per million output tokens" if served is not None else "")

    def header(self) -> list[str]:
        """The lines every written file starts with: who wrote it, from what, and what it predicted."""
        mem, p = self.result.memory, self.predictions()
        lines = [f"written by gpuplan {__version__} on {self.written_on.isoformat()}: {self.command}",
                 f"plan: {self.setup_label}", *self.weights_missing()]
        if self.train:
            s = self.scenario
            lines.append(f"  {self.model.name}, micro-batch {s.micro_batch_size} x {s.seq_len:,} tokens x "
                         f"accumulation {s.grad_accum_steps} x {s.dp} data-parallel, checkpointing "
                         f"{s.grad_checkpointing}, optimizer {s.optimizer}, {s.precision}")
        devices = (mem.engine or {}).get("devices")  # a llama.cpp split over mixed cards: its fullest device's
        fullest = min(devices, key=lambda d: d["usable_gib"] - d["device_peak_gib"]) if devices else None
        where = f"predicted on the fullest device, {fullest['name']}" if fullest else "predicted per GPU"
        usable = fullest["usable_gib"] if fullest else self.gpu.usable_gib  # (session 24: "2.9 of 23.9" for a
        # 3060's 2.9 of 11.9 beside a 4090)
        log = "llama-server's load log prints its buffers" if self.scenario.engine == "llama.cpp" and not self.train \
            else "torch.cuda.max_memory_reserved / max_memory_allocated"
        lines.append(f"{where}: device peak {mem.device_peak_gib:.1f} GiB of {usable:.1f} "
                     f"(reserved {mem.reserved_peak_gib:.1f}, allocated {mem.allocated_peak_gib:.1f}; "
                     f"{log}), peak in {mem.peak_phase}")
        if self.result.headroom_note():
            lines.append(f"  headroom {mem.headroom_gib:+.1f} GiB, {self.result.headroom_note()}")
        lines += self.speed_lines()
        if self.spot is not None:
            why = "save_interval" if self.scenario.save_interval else "Daly"  # spot_plan's interval
            lines.append(f"spot: checkpoint every {p['checkpoint_every_min']} min ({why}; interruptions every "
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
            typed = self.result.typed_recipe
            out += [f"warning: {w}" for w in (data_warnings(self.scenario, typed) if typed is not None else ())]
        if self.recipe is not None:
            out.append(f"recipe ({self.recipe.kind}):")
            out += [f"  {c.name}: {c.value} ({c.why})" for c in self.recipe.choices]
        container = STACKS[self.scenario.stack].container if self.train else None
        out.append("tested with: " + (container or "pip install " + " ".join(pip_packages(self))))
        return out


def _run_figures(run, served_at: str) -> dict[str, float | str]:
    """A serving run's figures as ``vllm bench serve`` saves them (output and request throughput, TTFT and TPOT
    median and p99 in ms), ``served_at`` the load it ran at: the plan's run at its load or its batch's offline
    run (:meth:`LaunchPlan.served`)."""
    return {"served_at": served_at, "output_throughput": round(run.output_throughput, 1),
            "request_throughput": round(run.request_throughput, 3),
            **{f"{stat}_{metric}_ms": None if ms is None else round(ms, 1) for metric in ("ttft", "tpot")
               for stat, ms in run.latency(metric).items() if stat in ("median", "p99")}}


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


def pip_packages(plan: LaunchPlan) -> list[str]:
    """What ``pip install`` needs for the plan: the serving engine's (:meth:`gpuplan.engines.base.Engine.packages`,
    the release whose memory rules the estimate followed) or the training stack's packages
    (:meth:`gpuplan.stacks.base.Stack.packages`)."""
    s = plan.scenario
    if not plan.train:
        return engine_for(s).packages(s, (plan.result.memory.engine or {}).get("version"))
    return STACKS[s.stack].packages(s, lambda: backend(s) == "deepspeed")
