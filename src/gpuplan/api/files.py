"""``launch``: the files that run a plan, written, as an answer."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from ..answer import Answer
from ..errors import GpuplanError
from . import arguments as arg
from .arguments import ScenarioLike, comma_names, scenario_of


class LaunchFileInfo(BaseModel):
    path: str
    target: str
    read_by: str


class LaunchReport(Answer):
    """``launch``'s answer: the setup, what gpuplan predicted for it, and the files written. Kept beside, not in
    the JSON: the files' text (``printed``: with folder ``-`` they are not written, only made) and the lines every
    file opens with and the next steps, in words (``said``)."""

    folder: str
    setup: str
    scenario: dict[str, Any]  # the scenario launched: with the recipe's micro-batch x accumulation when it set neither
    predicted: dict[str, Any]  # what gpuplan.estimate(scenario) predicts for it
    files: list[LaunchFileInfo]
    warnings: list[str] = Field(default_factory=list)  # the plan's, as estimate gives them (s27: a field left out)
    printed: list[tuple[str, str, str]] = Field(default_factory=list, exclude=True)  # (name, target, text)
    said: dict[str, Any] = Field(default_factory=dict, exclude=True)


def launch(scenario: ScenarioLike, *, targets: Iterable[str] = (), folder: str | Path = "gpuplan-launch",
           force: bool = False, dataset: str | None = None, script: str | Iterable[str] | None = None,
           bucket: str | None = None, visible_devices: tuple[int, ...] | None = None,
           command: str = "gpuplan.launch (Python API)") -> LaunchReport:
    """Write the files that run the scenario's plan (SkyPilot, accelerate, DeepSpeed, torchrun, the trainer's
    arguments, torchtune, torchtitan, Axolotl, Unsloth, vllm serve: every target that applies, or ``targets``)
    into ``folder`` (``-``: make them, write nothing; their text is the answer's ``printed``): ``gpuplan
    launch``. ``dataset``: the data the files train on (default: the scenario's own, else TRL's example)."""
    from ..launchers import check_target_names, launch_plan, with_targets

    targets, folder = check_launch(targets, folder)
    force = arg.flag(force, "force")
    visible_devices = arg.devices_of(visible_devices)
    command = arg.text(command, "command")
    s = scenario_of(scenario)
    options = _options(s.dataset if dataset is None else dataset, script, bucket)  # the data the plan counted
    spec = _module_spec(s.model)
    if spec is not None and spec.kind != "diffusion":  # Whisper, T5/BART, ViT/CLIP: no launcher writes their files
        raise GpuplanError(f"{spec.describe()}: gpuplan launch writes files for decoder LLMs and diffusion "
                           "pipelines; `gpuplan estimate` plans this job (memory, speed, price), run it with your "
                           "own script")
    if spec is not None:  # a diffusion pipeline: its trainers' files (launchers/diffusion.py)
        return _write_diffusion(s, spec, targets, folder, force, command, dataset)
    check_target_names(targets)  # a diffusion trainer named for a decoder LLM
    s = with_targets(s, targets)  # the plan's stack and engine are the ones whose files the targets write
    plan = launch_plan(s, command=command, visible_devices=visible_devices)
    return write_plan(plan, targets, options, folder, force)


def _module_spec(model: str):
    """The module spec of a model that is not a decoder LLM (a diffusion pipeline...), or None."""
    from ..model.catalog import load_model
    from ..model.kinds import NotADecoder

    try:
        load_model(model)
    except NotADecoder as other:
        return other.spec
    except GpuplanError:  # any other problem of the name is the decoder's road's to say, in its order
        return None
    return None


def _write_diffusion(s, spec, targets: list[str], folder: str | Path, force: bool, command: str,
                     dataset: str | None) -> LaunchReport:
    """The files of a diffusion training plan's trainer (``diffusers``, ``kohya``, ``simpletuner``, ``ai-toolkit``:
    the plan's stack, which a trainer named sets), written or, with folder ``-``, made only."""
    from ..launchers import with_targets
    from ..launchers.diffusion import diffusion_launch, files, named
    from ..plan.estimate import estimate

    s = with_targets(s, named(targets))
    plan = diffusion_launch(s, spec, estimate(s, advise=False), command)
    said = {"header": plan.header(), "notes": plan.result.defaults, "train": True, "spot": False, "owned": False,
            "again": command}
    return _report(plan, files(plan, dataset), folder, force, said)


def smoke(scenario: ScenarioLike, *, folder: str | Path, targets: Iterable[str] = (), force: bool = False):
    """``gpuplan launch --smoke``: the plan rewritten onto a tiny model of its architecture, its files written into
    ``folder`` (new or empty; ``force``: what a smoke run makes there is replaced, the checkpoints of its
    ``output_dir`` too) and each target that runs here run a few steps (:mod:`gpuplan.launchers.smoke`); the smoke
    plan and one :class:`~gpuplan.launchers.smoke.SmokeRun` per target; for a serving plan, llama-server started on
    a tiny GGUF and asked for one completion (:mod:`gpuplan.launchers.smoke_serve`, one
    :class:`~gpuplan.launchers.smoke_serve.ServeRun`)."""
    from ..launchers import check_target_names, with_targets
    from ..launchers.files import output_folder
    from ..launchers.smoke import smoke as run
    from ..launchers.smoke_serve import smoke_serving

    names = comma_names(targets, "targets")
    check_target_names(names)
    force = arg.flag(force, "force")
    s = with_targets(scenario_of(scenario), names)
    if s.task != "train":
        return smoke_serving(s, output_folder(folder), force=force)
    return run(s, output_folder(folder), names or None, force=force)


def check_launch(targets: Iterable[str] = (), folder: str | Path = "gpuplan-launch", *, flag: str = "folder"
                 ) -> tuple[list[str], str | Path]:
    """The targets named (each a known one; comma-separated names split) and the folder (``-``: none), checked
    before a plan is made: a misspelt target or a bad folder name is said before the plan's own problems."""
    from ..launchers import check_target_names
    from ..launchers.diffusion import NAMES as DIFFUSION_TARGETS
    from ..launchers.files import output_folder

    names = comma_names(targets, "targets")
    check_target_names(names, also=DIFFUSION_TARGETS)  # the diffusion trainers' too: the model is not read yet
    return names, folder if folder == "-" else output_folder(folder, flag)


def ranked_launch(setup, *, have: Iterable[str | tuple[str, int]] = (), folder: str | Path = "gpuplan-launch",
                  force: bool = False, command: str = "gpuplan.ranked_launch (Python API)") -> LaunchReport:
    """The files of one setup ``recommend`` ranked (a :class:`~gpuplan.plan.recommend.Setup`), on its offer, or on
    the user's own cards (``have``: ``"2x3090"`` or ``(gpu id, count)``, as recommend took them) priced by power
    alone: ``recommend --launch N``."""
    from ..launchers import launch_plan
    from ..plan.recommend import Setup, parse_have

    if not isinstance(setup, Setup):
        raise GpuplanError(f"ranked_launch takes a setup recommend ranked (its answer's setups or owned), not "
                           f"{type(setup).__name__}")
    have = arg.haves_of(have)
    folder, force = check_launch((), folder)[1], arg.flag(force, "force")
    command = arg.text(command, "command")
    x = setup
    if x.owned:
        owned = dict(parse_have(h) if isinstance(h, str) else h for h in have).get(x.gpu_id, x.num_gpus)
        plan = launch_plan(x.scenario, command=command, owned_usd_per_hour=x.usd_per_hour,
                           visible_devices=tuple(range(x.num_gpus)) if owned > x.num_gpus else None,
                           keep_micro_batch=True)
    else:
        plan = launch_plan(x.scenario, command=command, offer_label=x.offer, keep_micro_batch=True)
    return write_plan(plan, [], _options(x.scenario.dataset), folder, force)


def _options(dataset: str | None = None, script: str | Iterable[str] | None = None, bucket: str | None = None):
    """The launch files' options, checked: the dataset they train on, the training entry point, the bucket."""
    from ..launchers import LaunchOptions

    options: dict[str, Any] = {"bucket": arg.text(bucket, "bucket", optional=True)}
    if arg.text(dataset, "dataset", optional=True):
        options["dataset"] = dataset
    if arg.script_of(script):
        options["script"] = arg.script_of(script)
    return LaunchOptions(**options)


def write_plan(plan, targets: list[str], options, folder: str | Path, force: bool) -> LaunchReport:
    """Write a launch plan's files (folder ``-``: make them only) and say what was written."""
    from ..launchers import launch_files

    said = {"header": plan.header(), "notes": plan.result.defaults, "train": plan.train, "spot": plan.spot is not None,
            "owned": plan.owned, "again": plan.launch_command()}
    return _report(plan, launch_files(plan, targets, options), folder, force, said)


def _report(plan, files: list, folder: str | Path, force: bool, said: dict[str, Any]) -> LaunchReport:
    """Write a launch plan's ``files`` (folder ``-``: make them only) and say what was written: the one report of a
    decoder LLM's launch and a diffusion trainer's."""
    from ..launchers import write

    paths = [Path(f.name) for f in files] if folder == "-" else write(files, folder, force=force)
    return LaunchReport(folder=str(folder), setup=plan.setup_label, predicted=plan.predictions(),
                        scenario=plan.scenario.model_dump(mode="json", exclude_unset=True),
                        files=[LaunchFileInfo(path=str(p), target=f.target, read_by=f.reader)
                               for p, f in zip(paths, files, strict=True)],
                        warnings=list(plan.result.warnings),
                        printed=[(f.name, f.target, f.text) for f in files] if folder == "-" else [], said=said)
