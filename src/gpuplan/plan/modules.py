"""The plan of a model that is not a decoder LLM (a diffusion pipeline, an encoder-decoder, an encoder): the fields
of a :class:`~gpuplan.plan.estimate.Plan`, built from the module's profiles.

It is the module's leg of the one road: the one resolver resolves the scenario into its job
(:func:`gpuplan.plan.resolve.resolve_module_scenario`), and the one builder (:func:`gpuplan.plan.build.build`) runs
:func:`build_module`'s stages in its order: memory and the verdict, speed, cost, advice. Each component's profile
is read (bundled, cached, or recorded now on fake tensors: :mod:`gpuplan.model.profile`); memory comes from
:mod:`gpuplan.memory.modules`, time from :mod:`gpuplan.speed.modules`, and the price from the cheapest of the offers
the builder found for the card, for the job's ``train_steps`` (training) or per thousand images or samples
(inference).
:class:`ModuleWork` carries what the LLM plan's speed does not say: it/s, seconds per image, the parts of a step,
and which numbers were simulated on fake tensors and which were modelled.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, replace
from typing import Any

from pydantic import BaseModel, PrivateAttr, computed_field

from ..datafiles import made
from ..errors import GpuplanError
from ..hardware import GpuSpec, short_id
from ..market.cost import STALE_DAYS, Cost, offer_label, spot_plan
from ..market.offers import price_origin
from ..memory.modules import generation_memory, model_memory, report, training_memory
from ..model import diffusers as diff
from ..model import encoders as enc
from ..model.families import FAMILIES
from ..model.module_spec import ModuleSpec
from ..model.profile import Profile, storage_format
from ..model.record import obtain
from ..result import MemoryReport, ModelFacts, Suggestion
from ..scenario import Scenario
from ..scenario.diffusion_stacks import diffusion_stack_for
from ..scenario.fields import MODULE_FIELDS
from ..scenario.modules import (
    ModuleJob,
    encoders_trained,
    pipeline_family,
    swap_limit,
    text_way,
    text_ways,
    trains_encoder,
)
from ..speed.breakdown import shares
from ..speed.modules import ModuleSpeed, fp32_rates, generation, host_range, model_step, train_step
from .edge import MODULE_BATCH_LIMIT, batch_fields
from .fixes import SHOWN_SAVING_GIB, Fix, accumulation_fix, fewest
from .plan import Plan, gpu_facts, verdict
from .refusals import stack_card_warnings
from .resolve import ResolvedModule, resolve_module_scenario

# what the published Whisper runs spent beyond the model's work (bench/results/modules.md: whisper-small on a V100,
# transformers' speech-recognition README; whisper-large-v3 on an A100, insanely-fast-whisper)
WHISPER_WALL_TIME = ("the time is the model's work on the card, eager PyTorch's dispatch and the CPU work Hugging "
                     "Face's Whisper recipes do between steps on one core (transcribing: the log-mel features; "
                     "training: reading the stored features back and padding each batch, with the Trainer's "
                     "default of no dataloader workers); not counted: decoding audio files, a slower or busier "
                     "host, and the evaluations with generate that the training recipes run (the published "
                     "Whisper-small recipe, of December 2022, took twice the estimate with its evaluations "
                     "counted, most of it its libraries' slower reading of the stored features, measured; a "
                     "transcription on an A100 1.2 times: bench/results/modules.md)")
KIND_WORDS = {"diffusion-train": "diffusion training", "diffusion-generate": "diffusion generation",
              "train": "training", "infer": "inference"}


class ModuleWork(BaseModel):
    """The work of a module plan: the job, its speed and what each number rests on."""

    kind: str
    components: list[dict[str, Any]]
    way: str
    batch: int
    samples_per_step: int
    sizes: dict[str, list[int]]
    buckets: list[str] = []
    steps: int | None = None
    step_s: float
    steps_per_s: float
    samples_per_s: float
    samples_per_s_low: float
    samples_per_s_high: float
    image_s: float | None = None
    images_per_hour: float | None = None
    first_call_s: float | None = None  # generation: the first call of a pipeline just loaded
    first_call_range_s: list[float] | None = None
    parts_s: dict[str, float]
    flops_per_step: float
    mfu: float
    bound: str
    job_hours: float | None = None
    usd_per_1000_samples: float | None = None
    simulated: list[str]
    modelled: list[str]

    def step_shares(self, top: int = 6) -> list[tuple[str, int]]:
        """Each part's share of the step (or call) in whole percent, summing to 100 (:func:`shares`): what the
        command line's ``step:`` line and the page print."""
        return shares(self.parts_s, top)


# ---- profiles ------------------------------------------------------------------------------------------------------
def profiles(job: ModuleJob) -> tuple[Profile, dict[str, Profile]]:
    """The main component's profile (with the job's way) and the others' the job runs."""
    spec = job.spec
    main_c = spec.main
    if main_c.profile is not None:  # your own module: recorded just now (gpuplan.sim.module.module_spec)
        return main_c.profile, {}
    if spec.kind == "diffusion" and job.autocast:  # a mixed-precision full fine-tune: recorded under autocast
        main = obtain(main_c.config, diff.AUTOCAST_PART, lambda ways: diff.denoiser_part(main_c, ways, "float16"),
                      (job.way,))
    elif spec.kind == "diffusion":
        main = obtain(main_c.config, "denoiser", lambda ways: diff.denoiser_part(main_c, ways), (job.way,))
    elif job.autocast:  # a text encoder's mixed-precision full fine-tune: recorded under autocast
        main = obtain(main_c.config, enc.AUTOCAST_PART, lambda ways: _model_part(spec, ways, "float16"), (job.way,))
    else:
        main = obtain(main_c.config, "model", lambda ways: _model_part(spec, ways), (job.way,))
    parts: dict[str, Profile] = {}
    vae = spec.role("vae")
    if vae and job.kind == "diffusion-train" and not job.cache_latents:
        parts["vae-encode"] = obtain(vae[0].config, "vae-encode", lambda ways: diff.vae_part(vae[0], "encode"))
    if vae and job.kind == "diffusion-generate":
        parts["vae-decode"] = obtain(vae[0].config, "vae-decode", lambda ways: diff.vae_part(vae[0], "decode"))
    if job.kind == "diffusion-generate" or job.text_encoders in ("frozen", "trained"):
        for te in spec.role("text_encoder"):
            ways = (text_way(job, te),) if trains_encoder(job, te) else ("inference",)
            parts[f"text-encoder:{te.name}"] = obtain(te.config, "text-encoder",
                                                      lambda ways, te=te: diff.text_encoder_part(te, ways), ways)
    return main, parts


def _model_part(spec: ModuleSpec, ways: tuple[str, ...], autocast: str = ""):
    from dataclasses import replace

    return replace(enc.model_part(spec, spec.main, autocast), ways=ways)


# ---- the plan ------------------------------------------------------------------------------------------------------
@dataclass(frozen=True, kw_only=True)
class ModuleSetup:
    """What a module plan was built from: the scenario as resolved, its job, the card, and what was taken and
    assumed on the way (as :class:`~gpuplan.plan.resolve.Resolved` is for a decoder LLM's plan)."""

    scenario: Scenario
    job: ModuleJob
    gpu: GpuSpec | None
    defaults: tuple[str, ...] = ()
    assumptions: tuple[str, ...] = ()
    warnings: tuple[str, ...] = ()
    checkpoint_bytes: float = 0.0  # one resumable checkpoint of a training job, as its memory holds the state


class ModulePlan(Plan):
    """The plan of a model that is not a decoder LLM: a :class:`~gpuplan.plan.plan.Plan` (memory, the verdict on the
    card, the changes that fit, the cost) whose speed is its ``work``: it/s, seconds per image, the parts of a step,
    and which numbers were simulated on fake tensors and which modelled. Its scenario, line, defaults, assumptions
    and warnings come from its :class:`ModuleSetup`."""

    work: ModuleWork | None = None
    _module: ModuleSetup | None = PrivateAttr(default=None)

    @property
    def module(self) -> ModuleSetup:
        if self._module is None:
            raise GpuplanError("this plan was not built by gpuplan.plan.modules (it was read back from JSON)")
        return self._module

    @computed_field
    @functools.cached_property
    def scenario(self) -> dict[str, Any]:
        return normalized(self.module.scenario)

    @computed_field
    @functools.cached_property
    def resolved(self) -> str:
        return describe(self.module.scenario, self.module.job)

    @computed_field
    @functools.cached_property
    def defaults(self) -> tuple[str, ...]:
        return self.module.defaults

    @computed_field
    @property
    def assumptions(self) -> tuple[str, ...]:
        return self.module.assumptions

    @computed_field
    @property
    def warnings(self) -> tuple[str, ...]:
        return self.module.warnings

    @property
    def work_hours(self) -> float | None:
        return self.work.job_hours if self.work else None

    @property
    def checkpoint_bytes(self) -> float:
        """What one resumable checkpoint of this training job writes: its trained weights and their optimizer states
        as its memory holds them (``memory/modules.py`` ``training_memory``); 0 for an inference plan."""
        return self.module.checkpoint_bytes


def build_module(r: ResolvedModule, candidates: tuple = (), *, advise: bool = True,
                 memory_only: bool = False) -> ModulePlan:
    """The plan of a resolved module scenario, in :func:`gpuplan.plan.build.build`'s stages: memory and its verdict
    on the card (a memory-only build stops there), the speed and the price on the cheapest of ``candidates`` (the
    offers the builder found for the card), then the largest batch and the changes that fit."""
    s, spec, job, gpu = r.scenario, r.spec, r.job, r.gpu
    main, parts = profiles(job)
    e = _estimate(s, job, main, parts)
    checkpoint = e.extra.get("checkpoint_bytes", 0.0) if s.task == "train" else 0.0
    mem = report(s, e, gpu)
    judged = verdict(s, gpu, mem)
    warnings, work, cost, suggestions, rates = [*r.checked, *e.warnings], None, None, (), ()
    warnings += stack_card_warnings(s, gpu) if gpu is not None else []  # a trainer that runs on the card in part
    if not memory_only and gpu is not None and (gpu.peak_tflops("bf16") or gpu.peak_tflops("fp16")):
        try:
            speed = _speed(s, job, main, parts, gpu)
        except GpuplanError as err:  # a rate the catalog lacks for this card
            warnings.append(f"no speed or cost: {err}")
        else:
            work, cost, more = _work(s, job, main, speed, gpu, candidates, price_it=mem.fits is not False,
                                     checkpoint=checkpoint)
            warnings += more
            rates = tuple(note for note in (fp32_rates(s, job, gpu),) if note)
            if spec.family == "whisper":
                warnings.append(WHISPER_WALL_TIME)
    elif not memory_only and gpu is not None:
        warnings.append(f"no speed or cost: {gpu.name} has no dense 16-bit matrix rate in the GPU catalog")
    if not memory_only and gpu is not None and advise:
        # your own module's batch is its example input's: no other batch was recorded
        if spec.kind != "module":
            mem = mem.model_copy(update=batch_fields(largest_batch(s, spec, gpu), MODULE_BATCH_LIMIT))
        suggestions = tuple(fixes(s, spec, gpu, mem)) if not mem.fits else ()
    plan = ModulePlan(model=facts(spec, int(e.extra.get("params_trainable", 0))), gpu=gpu_facts(gpu), memory=mem,
                      verdict=judged, suggestions=suggestions, cost=cost, work=work)
    plan._module = ModuleSetup(scenario=s, job=job, gpu=gpu, defaults=r.defaults,
                               assumptions=(*r.assumptions, *e.assumptions, *rates), warnings=tuple(warnings),
                               checkpoint_bytes=checkpoint)
    return plan


def _estimate(s: Scenario, job: ModuleJob, main: Profile, parts: dict[str, Profile]):
    if job.kind == "diffusion-train":
        return training_memory(s, job, main, parts)
    if job.kind == "diffusion-generate":
        return generation_memory(s, job, main, parts)
    return model_memory(s, job, main)


def _speed(s: Scenario, job: ModuleJob, main: Profile, parts: dict[str, Profile], gpu: GpuSpec) -> ModuleSpeed:
    """The job's speed; a generation or inference call on a datacenter card says in its likely range what the
    fastest and slowest server hosts measured would make of it (speed.modules.host_range)."""
    if job.kind == "diffusion-train":
        return train_step(s, job, main, parts, gpu)
    if job.task == "train":  # an encoder-decoder's or encoder's training step
        return model_step(s, job, main, gpu)

    def at(host: float) -> ModuleSpeed:
        if job.kind == "diffusion-generate":
            return generation(s, job, main, parts, gpu, host)
        return model_step(s, job, main, gpu, host)

    speed = at(1.0)
    if (factors := host_range(gpu)) is None:
        return speed
    fast, slow = (at(f).samples_per_s for f in factors)
    return replace(speed, low=min(speed.low, slow), high=max(speed.high, fast))


def memory_only(s: Scenario, spec: ModuleSpec, gpu: GpuSpec) -> MemoryReport:
    """The memory report alone of ``s`` resolved on the card (the advice: largest batch, the changes that fit)."""
    return build_module(resolve_module_scenario(s, spec, gpu), memory_only=True).memory


def largest_batch(s: Scenario, spec: ModuleSpec, gpu: GpuSpec, limit: int = MODULE_BATCH_LIMIT) -> int | None:
    """The largest (micro-)batch that fits the card, by bisection on the memory alone, up to ``limit`` (reached:
    :func:`.edge.batch_fields` says it is a floor). A Whisper
    recording's pass holds at most its windows (``batch = min(batch, windows)``: a longer batch is the same pass), so
    its batch is searched as windows per pass, on the scenario without the recording's length."""
    field = "micro_batch_size" if s.task == "train" else "batch_size"
    if s.audio_seconds is not None and s.task != "train":
        s = s.model_copy(update={"audio_seconds": None})

    def fits(n: int) -> bool:
        try:
            return bool(memory_only(s.model_copy(update={field: n}), spec, gpu).fits)
        except GpuplanError:
            return False

    if not fits(1):
        return None
    low, high = 1, 2
    while high <= limit and fits(high):
        low, high = high, high * 2
    if high > limit:  # every batch up to the limit fits: none above it was tried
        return low
    while high - low > 1:
        mid = (low + high) // 2
        low, high = (mid, high) if fits(mid) else (low, mid)
    return low


def _changes(s: Scenario, spec: ModuleSpec, largest: int | None = None) -> list[Fix]:
    """The changes people make to fit a diffusion or encoder-decoder job, gentlest first; changes of one group are
    alternatives (fp8 or NF4 base weights; text encoders frozen or their embeddings cached; model or sequential
    offload), of which a combination takes one. ``largest``: the largest micro-batch that fits as it is."""
    out: list[Fix] = []
    if spec.kind == "module":  # its batch, sizes, checkpointing and weights are its build()'s own
        return [Fix(label="8-bit AdamW", change={"optimizer": "adamw-8bit"}, group="optimizer")] \
            if s.task == "train" and s.optimizer == "adamw" else []
    if s.attention == "eager":
        out.append(Fix(label="SDPA attention (or xformers)", change={"attention": "sdpa"}, group="attention"))
    if s.task != "train":
        return out + _generation_changes(s, spec)
    if s.grad_checkpointing == "none":
        out.append(Fix(label="gradient checkpointing", change={"grad_checkpointing": "full"}, group="checkpointing"))
    if s.optimizer == "adamw":
        out.append(Fix(label="8-bit AdamW", change={"optimizer": "adamw-8bit"}, group="optimizer"))
    if spec.kind == "diffusion":
        if not s.cache_latents and spec.role("vae"):
            out.append(Fix(label="cached latents", change={"cache_latents": True}, group="latents"))
        if s.text_encoders == "trained-all":
            out.append(Fix(label="T5 not trained (CLIP trained)", change={"text_encoders": "trained"}, group="text"))
        if encoders_trained(s):
            out.append(Fix(label="text encoders not trained (frozen)", change={"text_encoders": "frozen"},
                           group="text"))
        if s.text_encoders in ("frozen", "trained", "trained-all"):
            out.append(Fix(label="cached text embeddings", change={"text_encoders": "cached"}, group="text"))
        if s.method == "lora" and not s.quant:
            out.append(Fix(label="fp8 base weights", change={"quant": "fp8"}, group="base"))
            out.append(Fix(label="QLoRA (NF4 base)", change={"method": "qlora", "quant": "nf4"}, group="base"))
        if pipeline_family(spec) in diffusion_stack_for(s.stack).swaps_blocks and \
                (s.blocks_to_swap or 0) < swap_limit(spec):  # the most; fixes() takes the fewest that fit
            out.append(Fix(label=f"blocks_to_swap {swap_limit(spec)}", change={"blocks_to_swap": swap_limit(spec)},
                           group="swap"))
    if s.method == "full":
        out.append(Fix(label="LoRA instead of full fine-tuning", change={"method": "lora"}, group="method"))
    fewer = accumulation_fix(s, largest)  # the global batch kept, as a decoder LLM's fix keeps it
    if fewer is not None:
        out.append(fewer)
    return out


def _generation_changes(s: Scenario, spec: ModuleSpec) -> list[Fix]:
    """A generation's or an encoder's changes; a smaller batch is another job, offered alone."""
    out: list[Fix] = []
    if spec.kind == "diffusion" and s.cpu_offload == "none":
        out.append(Fix(label="model CPU offload", change={"cpu_offload": "model"}, group="offload"))
    if not s.quant:
        out.append(Fix(label="NF4 weights", change={"quant": "nf4"}, group="weights"))
        out.append(Fix(label="fp8 weights", change={"quant": "fp8"}, group="weights"))
    if spec.kind == "diffusion" and s.cpu_offload != "sequential":
        out.append(Fix(label="sequential CPU offload", change={"cpu_offload": "sequential"}, group="offload"))
    if s.batch_size > 1:
        out.append(Fix(label="batch 1", change={"batch_size": 1}, group="batch", keeps_job=False))
    return out


def _peak_with(s: Scenario, spec: ModuleSpec, gpu: GpuSpec, combo: tuple[Fix, ...]) -> tuple[bool, float]:
    """Whether ``s`` with the changes of ``combo`` fits, and its device peak ((False, inf): refused)."""
    change = {k: v for fix in combo for k, v in fix.change.items()}
    try:
        r = memory_only(s.model_copy(update=change), spec, gpu)
    except GpuplanError:
        return False, math.inf
    return r.fits, r.device_peak_gib


def _widest(s: Scenario, spec: ModuleSpec, gpu: GpuSpec, combo: tuple[Fix, ...], peak: float
            ) -> tuple[tuple[Fix, ...], float]:
    """``combo`` with its smaller micro-batch (:func:`gpuplan.plan.fixes.accumulation_fix`, sized by what fits
    before the other changes: 1 where nothing did) widened to the largest divisor of the global batch that fits with
    them, as a decoder's combination takes the largest micro-batch that still fits (plan/fixes.py ``_room``):
    Whisper-large-v3 full on an RTX 4090 with 8-bit AdamW fits micro-batch 4 x 4 (21.7 GiB, 5.04 samples/s) where
    1 x 16 was offered (3.44 samples/s; session 24's walk)."""
    fewer = next((f for f in combo if f.group == "micro-batch"), None)
    if fewer is None:
        return combo, peak
    total, others = s.micro_batch_size * s.grad_accum_steps, tuple(f for f in combo if f is not fewer)
    for micro in range(s.micro_batch_size - 1, fewer.change["micro_batch_size"], -1):
        if total % micro:
            continue
        wider = accumulation_fix(s, micro)  # (the largest divisor up to micro: micro itself here)
        ok, wide_peak = _peak_with(s, spec, gpu, (*others, wider))
        if ok:
            return tuple(wider if f is fewer else f for f in combo), wide_peak
    return combo, peak


def fixes(s: Scenario, spec: ModuleSpec, gpu: GpuSpec, now: MemoryReport) -> list[Suggestion]:
    """Each change alone; when none fits, the fewest that fit together, one of each group, gentlest first
    (:func:`gpuplan.plan.fixes.fewest`, the search a decoder's advice makes); when no combination of those fits,
    the strongest change of each group together, where it saves more than each change alone. A change alone is
    said where it fits or saves what its line shows (:data:`gpuplan.plan.fixes.SHOWN_SAVING_GIB`), as a decoder's."""
    out, peaks, alone = [], {}, []
    for fix in _changes(s, spec, now.max_batch_size):
        fits, peaks[fix] = _peak_with(s, spec, gpu, (fix,))
        alone += [fix] if fits else []
        if math.isfinite(peaks[fix]) and (fits or peaks[fix] <= now.device_peak_gib - SHOWN_SAVING_GIB):
            out.append(made(Suggestion, dict(change=fix.label, fields=fix.change, device_peak_gib=peaks[fix],
                                             fits=fits, cost=f"{now.device_peak_gib:.1f} -> {peaks[fix]:.1f} GiB")))
    tried = [f for f, peak in peaks.items() if math.isfinite(peak) and f.keeps_job]
    if alone and all(f.group == "method" for f in alone):  # only another method fits alone (LoRA for a full
        # fine-tune): the combinations that keep the user's method, as a decoder's advice searches them
        # (plan/fixes.py; session 24's walk: Whisper-large-v3 full on an RTX 4090 offered LoRA alone, where 8-bit
        # AdamW with micro-batch 1 x 16 fits in 19.7 GiB)
        kept = [f for f in tried if f.group != "method"]
        found = fewest(kept, lambda combo: _peak_with(s, spec, gpu, combo)) if len(kept) > 1 else None
        if found is not None:
            combo, peak = _widest(s, spec, gpu, *found)
            out.append(made(Suggestion, dict(
                change=" + ".join(f.label for f in combo), fields={k: v for f in combo for k, v in f.change.items()},
                device_peak_gib=peak, fits=True, combination=True,
                cost=f"{now.device_peak_gib:.1f} -> {peak:.1f} GiB")))
    elif len(tried) > 1 and not any(x.fits for x in out):
        found = fewest(tried, lambda combo: _peak_with(s, spec, gpu, combo))
        if found is None:
            strongest: dict[str, Fix] = {}
            for f in tried:
                if f.group not in strongest or peaks[f] < peaks[strongest[f.group]]:
                    strongest[f.group] = f
            combo = tuple(f for f in tried if strongest[f.group] is f)
            fits, peak = _peak_with(s, spec, gpu, combo)
        else:
            (combo, peak), fits = _widest(s, spec, gpu, *found), True
        if fits or peak < min(peaks[f] for f in tried):  # (changes can undo each other: say only a saving)
            out.append(made(Suggestion, dict(
                change=" + ".join(f.label for f in combo), fields={k: v for f in combo for k, v in f.change.items()},
                device_peak_gib=peak, fits=fits, combination=True,
                cost=f"{now.device_peak_gib:.1f} -> {peak:.1f} GiB")))
    said = [_offload_time(s, spec, gpu, fewest_blocks(s, spec, gpu, x)) for x in out]
    # CPU offload last of those that fit, as a decoder's advice orders it (plan/fixes.py _gentlest): FLUX.1-dev's
    # sequential offload (131 s of copies a call) stood above NF4 weights by its smaller peak
    return sorted(said, key=lambda x: (not x.fits, x.fits and x.fields.get("cpu_offload", "none") != "none",
                                       x.device_peak_gib))


def _call_s(s: Scenario, spec: ModuleSpec, gpu: GpuSpec) -> ModuleSpeed | None:
    """The speed of ``s`` on ``gpu`` as its plan times it; None where the card has no rate for it."""
    r = resolve_module_scenario(s, spec, gpu)
    main, parts = profiles(r.job)
    try:
        return _speed(r.scenario, r.job, main, parts, gpu)
    except GpuplanError:
        return None


def _offload_time(s: Scenario, spec: ModuleSpec, gpu: GpuSpec, x: Suggestion) -> Suggestion:
    """A change to diffusers' CPU offload with what it costs a call on the card, read off the plans with and
    without it (:func:`gpuplan.speed.modules.generation`: the weights' copies at
    :func:`~gpuplan.speed.modules.offload_copy_s`), where the line said only its GiB (s27 walk: FLUX.1-dev on an
    RTX 4090, "sequential CPU offload (fits; 36.4 -> 3.7 GiB)", a call of 25.2 s without it)."""
    if x.fields.get("cpu_offload", "none") == "none" or s.task == "train":
        return x
    before, after = _call_s(s, spec, gpu), _call_s(s.model_copy(update=x.fields), spec, gpu)
    if before is None or after is None or before.image_s is None or after.image_s is None:
        return x
    copies = after.parts_s.get("CPU offload transfers", 0.0)
    return x.model_copy(update={"cost": f"{x.cost}; {before.image_s:,.1f} -> {after.image_s:,.1f} s a call, "
                                        f"{copies:,.1f} s of it copying weights over PCIe"})


def fewest_blocks(s: Scenario, spec: ModuleSpec, gpu: GpuSpec, x: Suggestion) -> Suggestion:
    """A change that swaps blocks (kohya's ``--blocks_to_swap``, offered at its most) with the fewest blocks that
    still fit beside the rest of it, by bisection on the memory alone, and what the swap costs a step on the card:
    its copies (:func:`~gpuplan.speed.modules.block_swap_s`) and the part the step waits for."""
    if not x.fits or "blocks_to_swap" not in x.fields:
        return x
    def with_blocks(n: int) -> tuple[bool, float]:
        return _peak_with(s, spec, gpu, (Fix(label="", change={**x.fields, "blocks_to_swap": n}, group=""),))

    low, high = 0, x.fields["blocks_to_swap"]  # fits at high; low is known not to (or none)
    while high - low > 1:
        mid = (low + high) // 2
        low, high = (low, mid) if with_blocks(mid)[0] else (mid, high)
    fields = {**x.fields, "blocks_to_swap": high}
    changed = s.model_copy(update=fields)
    r = resolve_module_scenario(changed, spec, gpu)
    main, parts = profiles(r.job)
    speed = _speed(changed, r.job, main, parts, gpu)
    copies = speed.parts_s.get("block swap copies (overlapped)", 0.0)
    waited = speed.parts_s.get("block swap copies (waited for)", 0.0)
    peak = with_blocks(high)[1]
    label = x.change.replace(f"blocks_to_swap {x.fields['blocks_to_swap']}", f"blocks_to_swap {high}")
    return x.model_copy(update={
        "change": label, "fields": fields, "device_peak_gib": peak,
        "cost": f"{x.cost.split(' -> ')[0]} -> {peak:.1f} GiB; the swap copies {copies + waited:.2f} s a step over "
                f"PCIe, {waited:.2f} s of it waited for ({speed.step_s:.2f} s a step)"})


# ---- speed and price ---------------------------------------------------------------------------------------------
def _work(s: Scenario, job: ModuleJob, main: Profile, speed: ModuleSpeed, gpu: GpuSpec, candidates: tuple, *,
          price_it: bool, checkpoint: float) -> tuple[ModuleWork, Cost | None, list[str]]:
    warnings: list[str] = []
    hours = s.train_steps * speed.step_s / 3600 if s.task == "train" and s.train_steps else None
    offers = sorted((o for o in candidates if o.pricing in ("on_demand", "owned") or s.pricing != "on_demand"),
                    key=lambda o: o.usd_per_gpu_hour)
    cost = None
    per_1000 = None
    if price_it and offers:
        cost, per_1000 = priced(s, hours, speed.samples_per_s, offers[0], checkpoint)
        if cost.stale:  # as a decoder LLM's plan says it (plan/build.py)
            warnings.append(f"the price of {cost.offer} is {cost.price_age_days} days old")
        if cost.pricing == "owned" and s.pricing != "owned":  # a card no offer lists (plan/build.py module_offers)
            warnings.append(f"no price for {gpu.name}: no offer of it at all; priced as your own card, by its power "
                            "(--pricing owned)")
    elif price_it:
        warnings.append(f"no price for {gpu.name}: no {s.pricing.replace('_', '-')} offer of it in force")
    spec = job.spec
    on_card = _on_card(job)
    work = ModuleWork(
        kind=KIND_WORDS[job.kind], way=job.way, batch=job.batch, samples_per_step=job.samples_per_step,
        components=[{"name": c.name, "class": c.cls, "params": c.params, "on_gpu": c.name in on_card}
                    for c in spec.components],
        sizes=dict(zip(main.variables, [list(x) for x in zip(*job.shapes, strict=True)], strict=True))
        if main.variables else {},
        buckets=[f"{w}x{h}" for w, h in job.pixels], steps=job.steps if job.kind == "diffusion-generate" else None,
        step_s=speed.step_s, steps_per_s=speed.steps_per_s, samples_per_s=speed.samples_per_s,
        samples_per_s_low=speed.low, samples_per_s_high=speed.high, image_s=speed.image_s,
        images_per_hour=speed.images_per_hour, first_call_s=speed.first_call_s,
        first_call_range_s=list(speed.first_call_range_s) if speed.first_call_range_s else None,
        parts_s=speed.parts_s, flops_per_step=speed.flops_per_step,
        mfu=speed.mfu, bound=speed.bound, job_hours=hours, usd_per_1000_samples=per_1000,
        simulated=_simulated(main, job), modelled=MODELLED)
    return work, cost, warnings


def priced(s: Scenario, hours: float | None, samples_per_s: float, o, checkpoint: float = 0.0) -> tuple[Cost, float]:
    """The job on offer ``o``: its cost (the job's ``hours`` where training names its steps) and the dollars per
    thousand samples (images, windows) at ``samples_per_s`` per GPU. On a spot offer a training run's hours take
    Daly's checkpoint-and-restart overhead (:func:`gpuplan.market.cost.spot_plan`), the ``checkpoint`` being the
    trained parameters and their optimizer states as the memory holds them (``memory/modules.py``
    ``training_memory``), as a decoder's."""
    gpus = s.world_size
    per_hour = o.usd_per_gpu_hour * gpus
    per_1000 = 1000 / (samples_per_s * gpus) / 3600 * per_hour
    label = offer_label(o, gpus if o.pricing == "owned" else 1)
    cost = Cost(offer=label, provider=o.provider, gpu_id=o.gpu_id, pricing=o.pricing, num_gpus=gpus,
                instances=gpus, usd_per_hour=per_hour, hours=hours or 0.0, usd_total=(hours or 0.0) * per_hour,
                usd_per_gpu_hour=o.usd_per_gpu_hour, price_origin=price_origin(o), price_age_days=o.age_days(),
                stale=o.age_days() > STALE_DAYS, observed_at=o.observed_at.isoformat(),
                price_confidence=o.confidence)
    if o.interruptible and s.task == "train" and hours:
        spot = spot_plan(hours, checkpoint, gpus, mtbi_h=s.mtbi_hours, disk_gbs=s.disk_gbs)
        cost.spot, cost.hours = spot, hours * spot.overhead
        cost.usd_total, per_1000 = cost.hours * per_hour, per_1000 * spot.overhead
    return cost, per_1000


MODELLED = ["the time of each op on the card (GEMM and convolution shapes at the card's measured matmul rates, "
            "fused attention, element-wise bytes at its bandwidth, eager PyTorch's host work per op)",
            "weights, gradients and optimizer states from the parameter counts and dtypes",
            "the CUDA context and the caching allocator's slack"]


def _simulated(main: Profile, job: ModuleJob) -> list[str]:
    versions = ", ".join(f"{k} {v}" for k, v in main.recorded_with.items())
    if job.spec.kind == "module":
        return [f"the {main.module}'s parameters, ops and activation peak ({job.way}): your build() run once on fake "
                f"tensors at its example input ({versions})"]
    out = [f"the {main.module}'s ops and its activation peaks ({job.way}) at any batch and size: the real class "
           f"on fake tensors ({versions}), fitted and checked exactly on its recorded passes"
           + (f"; {main.notes[0]}" if main.notes else "")]
    if job.text_trained:
        out.append(f"the trained text encoders' ops and what their forward keeps for the backward "
                   f"({text_ways(job)}): the real transformers classes"
                   + (" with peft adapters" if job.text_lora else "") + " on fake tensors")
    return out


def _on_card(job: ModuleJob) -> set[str]:
    spec = job.spec
    if job.kind == "diffusion-generate":
        return {c.name for c in spec.components} if job.offload == "none" else set()
    names = {spec.main.name}
    if job.kind == "diffusion-train":
        if not job.cache_latents:
            names |= {c.name for c in spec.role("vae")}
        if job.text_encoders in ("frozen", "trained"):
            names |= {c.name for c in spec.role("text_encoder")}
    return names


# ---- words -------------------------------------------------------------------------------------------------------
def describe(s: Scenario, job: ModuleJob) -> str:
    """The scenario as resolved, in one line."""
    spec = job.spec
    where = f"{s.world_size} x {short_id(s.gpu)}" if s.gpu else "no GPU named"  # as scenario.describe names it
    if job.kind == "diffusion-generate":
        return (f"{spec.name}: generate {s.batch_size} image(s) at {', '.join(f'{w}x{h}' for w, h in job.pixels)}, "
                f"{job.steps} steps{', classifier-free guidance' if job.cfg else ''}, {s.precision.split('-')[0]}"
                f"{f', {job.weights} denoiser' if job.weights != '16bit' else ''}"
                f"{f', {job.offload} CPU offload' if job.offload != 'none' else ''}{_eager_words(job)}; {where}")
    if job.kind == "diffusion-train":
        method = {"full": "full fine-tuning", "lora": f"LoRA r{s.lora_rank}",
                  "qlora": f"QLoRA r{s.lora_rank} ({storage_format(job.weights)} base)"}[s.method]
        if s.method == "lora" and job.weights != "16bit":
            method += f" ({storage_format(job.weights)} base)"
        return (f"{spec.name}: train {method} with {s.stack}, {s.micro_batch_size} image(s) at "
                f"{', '.join(f'{w}x{h}' for w, h in job.pixels)} x {s.grad_accum_steps} accumulation"
                f"{' (prior preservation: x2)' if s.prior_preservation else ''}, "
                f"{'no checkpointing' if s.grad_checkpointing == 'none' else 'gradient checkpointing'}, "
                f"{s.precision}, {s.optimizer}, latents {'cached' if job.cache_latents else 'encoded each step'}, "
                f"text encoders {job.text_encoders}{_eager_words(job)}; {where}")
    if spec.kind == "module":
        run = "a training step (forward, loss, backward)" if s.task == "train" else "a forward"
        return (f"{spec.name}: {run} of {spec.main.cls} on its example input, {s.precision}"
                f"{', ' + s.optimizer if s.task == 'train' else ''}; {where}")
    sizes = ", ".join(f"{name} {v:,}" for name, v in zip(_variables(spec), job.shapes[0], strict=False))
    if s.task == "train":
        method = {"full": "full fine-tuning", "lora": f"LoRA r{s.lora_rank}", "qlora": f"QLoRA r{s.lora_rank}"}[
            s.method]
        checkpointing = "no checkpointing" if s.grad_checkpointing == "none" else "gradient checkpointing"
        return (f"{spec.name}: train {method}, micro-batch {s.micro_batch_size} x {s.grad_accum_steps} accumulation"
                f"{', ' + sizes if sizes else ''}, {checkpointing}, {s.precision}, {s.optimizer}; {where}")
    if job.windows:
        windows = f"{job.windows:,} window{'s' if job.windows != 1 else ''}"
        return (f"{spec.name}: transcribe {s.audio_seconds:,g} s of audio, {windows} of 30 s, "
                f"{job.batch} per pass, {sizes}, {s.precision.split('-')[0]}; {where}")
    return (f"{spec.name}: run {s.batch_size} sample(s){', ' + sizes if sizes else ''}, "
            f"{s.precision.split('-')[0]}; {where}")


def _eager_words(job: ModuleJob) -> str:
    return ", eager attention (no SDPA or xformers)" if job.attention == "eager" else ""


def _variables(spec: ModuleSpec) -> tuple[str, ...]:
    return FAMILIES[spec.family][2] if spec.kind != "diffusion" else ("latent_pixels", "text_tokens")


def normalized(s: Scenario) -> dict[str, Any]:
    """The scenario as resolved, with the module fields (left out of decoder plans) in."""
    data = s.model_dump()
    for name in MODULE_FIELDS:
        data[name] = getattr(s, name)
    return data


def facts(spec: ModuleSpec, trainable: int) -> ModelFacts:
    return ModelFacts(name=spec.name, family=spec.family, params_total=spec.params_total,
                      params_active=spec.params_total, params_trainable=trainable, num_layers=0, hidden_size=0,
                      num_kv_heads=0, head_dim=0, vocab_size=0, layer_kinds={}, exact=True,
                      counted_by=spec.counted_by)

