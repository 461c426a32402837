"""``gpuplan launch``: the files that run a plan with the engines that already exist.

gpuplan does not run jobs; it hands the plan, settings intact, to what does: SkyPilot rents the cards
(:mod:`.skypilot`), ``accelerate launch`` / ``torchrun`` start one process per GPU (:mod:`.accelerate`,
:mod:`.torchrun`), DeepSpeed shards (:mod:`.deepspeed`), the Hugging Face Trainer / TRL trains (:mod:`.trainer`),
torchtune's recipes, torchtitan, Axolotl, Unsloth and Megatron-LM train from their own configs (:mod:`.torchtune`,
:mod:`.torchtitan`, :mod:`.axolotl`, :mod:`.unsloth`, :mod:`.megatron`), NeMo 2.0 from its own recipes
(:mod:`.nemo`), vLLM, SGLang, TensorRT-LLM and llama.cpp's llama-server serve (:mod:`.vllm`, :mod:`.sglang`,
:mod:`.trtllm`, :mod:`.llama_cpp`). One module per target, each with ``NAME``, ``applies(plan)`` (why it does not
apply, or None) and ``files(plan, options)``; adding a target is one module and one line in :data:`TARGETS`.
Every file opens with the command that wrote it and what gpuplan predicted, and ``plan.json`` holds the same
numbers for scripts, so a run can be compared with its plan.

This is the interfaces layer: it imports the API and planning, and nothing below imports it.
"""

from __future__ import annotations

import json
from types import ModuleType

from ..engines import ENGINES, engine_for
from ..errors import GpuplanError, did_you_mean
from ..scenario import Scenario, scenario_from
from ..stacks import STACKS
from . import (
    accelerate,
    axolotl,
    deepspeed,
    llama_cpp,
    megatron,
    nemo,
    sglang,
    skypilot,
    torchrun,
    torchtitan,
    torchtune,
    trainer,
    trtllm,
    unsloth,
    vllm,
)
from .diffusion import NAMES as DIFFUSION_TARGETS
from .files import LaunchFile, output_folder, write
from .plan import LaunchPlan, launch_plan
from .settings import LaunchOptions

TARGETS: dict[str, ModuleType] = {m.NAME: m for m in (trainer, deepspeed, accelerate, torchrun, torchtune, torchtitan,
                                                       axolotl, unsloth, megatron, nemo, vllm, sglang, trtllm,
                                                       llama_cpp, skypilot)}
PLAN_FILE = "plan.json"


def stack_of() -> dict[str, str]:
    """The stack whose files each target writes: the inverse of the stack profiles' own
    :attr:`~gpuplan.stacks.base.Stack.launch_targets`, and each diffusion trainer's target (skypilot and the
    serving engines' targets follow the plan's)."""
    return {**{target: name for name, profile in STACKS.items() for target in profile.launch_targets},
            **{name: name for name in DIFFUSION_TARGETS}}


def engine_of() -> dict[str, str]:
    """The engine whose command each serving target writes: the inverse of the engines' own
    :attr:`~gpuplan.engines.base.Engine.launch_target` (``vllm``, ``sglang``, ``trtllm``, ``llama.cpp``); skypilot
    and the training targets name none."""
    return {profile.launch_target: name for name, profile in ENGINES.items() if profile.launch_target}


def with_targets(s: Scenario, names) -> Scenario:
    """``s`` planned on the stack (:func:`stack_of`) and, for a serving plan, the engine (:func:`engine_of`) whose
    files the named targets write, so the plan every file's header predicts is the one the files run: a scenario
    that names no stack (engine) takes the targets' (its defaults rebuilt for it, as ``--stack`` or ``--engine``
    would set them); one that names another, or targets of two, are refused in one sentence. A training plan's
    engine is not set: the serving targets refuse a training plan themselves."""
    keys = [name.strip().lower() for name in names or ()]
    if not keys:
        return s
    s = _implied(s, keys, "stack", stack_of())
    return s if s.task == "train" else _implied(s, keys, "engine", engine_of())


def _implied(s: Scenario, keys: list[str], field: str, of: dict[str, str]) -> Scenario:
    """``s`` with the ``field`` (stack or engine) that the targets ``keys`` imply through ``of`` (target -> value),
    set when ``s`` names none; a contradiction is one sentence (:func:`with_targets`)."""
    implied: dict[str, str] = {}
    for key in keys:
        if key in of:
            implied.setdefault(of[key], key)
    if not implied:
        return s
    if len(implied) > 1:
        (a, va), (b, vb) = [(t, v) for v, t in implied.items()][:2]
        raise GpuplanError(f"--target {a} writes {field} {va}'s files and --target {b} {field} {vb}'s, each from its "
                           "own plan: launch them one at a time")
    value, target = next(iter(implied.items()))
    given = getattr(s, field)
    if field not in s.model_fields_set:
        return scenario_from({**{k: getattr(s, k) for k in s.model_fields_set}, field: value})
    if given != value:
        mine = next((t for t, v in of.items() if v == given), None)
        raise GpuplanError(f"--target {target} writes {field} {value}'s files, and --{field} {given} plans {field} "
                           f"{given}: drop --{field}" + (f" or pick --target {mine}" if mine else
                                                         f" ({field} {given} has no launch files)"))
    return s


def targets_for(plan: LaunchPlan, names: list[str] | None = None) -> list[str]:
    """The targets to write: ``names`` (each must apply to the plan, else one clear error), or every target
    that applies. A DPO plan is written by its stack's target (TRL's DPOConfig, axolotl's ``rl: dpo``, Unsloth's
    script over TRL's DPOTrainer); the targets that cannot run it say why in their ``applies``."""
    if not names:
        chosen = [name for name, module in TARGETS.items() if module.applies(plan) is None]
        if not chosen:
            stack = plan.scenario.stack
            serving = engine_for(plan.scenario).launch_target or "vllm"
            main = TARGETS[serving if not plan.train else stack if stack in TARGETS else "trainer"]
            raise GpuplanError(f"no launch target applies to this plan: {main.applies(plan)}")
        return chosen
    chosen = []
    for name in names:
        key = name.strip().lower()
        if key == "all":
            chosen += [n for n, module in TARGETS.items() if module.applies(plan) is None]
            continue
        check_target_names([key])
        why = TARGETS[key].applies(plan)
        if why:
            raise GpuplanError(f"--target {key} does not apply: {why}")
        chosen.append(key)
    return list(dict.fromkeys(chosen))


def check_target_names(names, also: tuple[str, ...] = ()) -> None:
    """Refuse an unknown target name before any planning (a typo should not be answered with the plan's own
    problems): one sentence with the names that come close. ``also``: more names that are known (the diffusion
    trainers' before the model is read)."""
    known = [*TARGETS, *also]
    for name in names or ():
        for part in str(name).split(","):
            key = part.strip().lower()
            if key and key != "all" and key not in known:
                close = did_you_mean(key, known)
                raise GpuplanError(f"unknown target {part.strip()!r}" + (
                    f"; did you mean {' or '.join(close)}?" if close else f"; choose from {', '.join(known)}"))


def launch_files(plan: LaunchPlan, names: list[str] | None = None,
                 options: LaunchOptions | None = None) -> list[LaunchFile]:
    """Every file of the chosen targets, then ``plan.json`` (the scenario and the predictions)."""
    options = options or LaunchOptions()
    files = [f for name in targets_for(plan, names) for f in TARGETS[name].files(plan, options)]
    summary = {"written_by": plan.header()[0], "setup": plan.setup_label, "again": plan.launch_command(),
               "predicted": plan.predictions(),
               "scenario": plan.result.scenario, "offer": plan.offer.label if plan.offer else None,
               "region": plan.offer.region if plan.offer else None, "files": {f.name: f.reader for f in files}}
    files.append(LaunchFile(name=PLAN_FILE, target="plan", text=json.dumps(summary, indent=2, default=str) + "\n",
                            reader="you and scripts: the predictions"))
    return files


__all__ = ["TARGETS", "LaunchFile", "LaunchOptions", "LaunchPlan", "check_target_names", "engine_of",
           "launch_files", "launch_plan", "output_folder", "stack_of", "targets_for", "with_targets", "write"]
