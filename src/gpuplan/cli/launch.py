"""``gpuplan launch``: write the files that run a plan (SkyPilot, accelerate, DeepSpeed, torchrun, the trainer's
arguments, torchtune, torchtitan, Axolotl, Unsloth, vllm serve)."""

from __future__ import annotations

import inspect
import shlex
import sys
from typing import Annotated

import typer
from rich.table import Table
from rich.text import Text

from .. import api
from ..errors import GpuplanError, no_control
from .app import overrides, print_json, scenario_command
from .render import bullet, err, out

DEFAULT_DIR = "gpuplan-launch"


def launch_cmd(scenario: str | None = None, as_json: bool = False, target: list[str] | None = None,
               output: str = DEFAULT_DIR, force: bool = False,
               script: str | None = None, bucket: str | None = None, visible_devices: str | None = None,
               smoke: bool = False, **fields: str | None) -> None:
    """Write the files that run the plan, with the plan's settings intact: a SkyPilot task (rent the cards),
    an accelerate config and its launch command, a DeepSpeed JSON (ZeRO plans), a torchrun command, the
    trainer's arguments (Hugging Face Trainer / TRL SFTConfig, read by `trl sft --config`; DPOConfig and
    `trl dpo` for a DPO plan), a torchtune recipe config (stack torchtune; its DPO recipes for a DPO plan), a
    torchtitan job config (stack torchtitan), an Axolotl config (stack axolotl; `rl: dpo` for DPO), an Unsloth
    script (stack unsloth; PatchDPOTrainer and TRL's DPOTrainer for DPO), or the serving command of
    a serving plan (`vllm serve`,
    SGLang's launch_server, `trtllm-serve`, llama.cpp's `llama-server`); for a diffusion pipeline, diffusers'
    DreamBooth command, kohya sd-scripts' TOML, SimpleTuner's config.json or ai-toolkit's job YAML. Every file
    opens with the command that wrote it and what gpuplan predicted (peak memory per GPU, tokens/s, hours,
    dollars); plan.json holds the same numbers for scripts.

    The scenario must name the GPU and the layout (--gpu, --num-gpus, --sharding; --engine vllm --tp for
    serving); `gpuplan recommend ... --launch N` writes the files of its N-th setup instead.

    Examples:

    \b
      gpuplan launch --model llama-3.1-8b --task train --gpu a100-sxm4-80gb --num-gpus 4 --sharding zero3 -o run/
      gpuplan launch --model llama-3.1-8b --task train --method qlora --gpu rtx-4090 --target trainer --target torchrun
      gpuplan launch --model llama-3.1-8b --task infer --engine vllm --gpu l40s --batch-size 16 --target vllm -o -
    """
    api.check_launch(target or (), output, flag="-o")  # said before the scenario's and the plan's own problems
    if scenario is not None:
        no_control(scenario, "the scenario file")  # its name is in the header of every file
    for name, value in fields.items():  # before a file they name is opened
        if isinstance(value, str):
            no_control(value, f"--{name.replace('_', '-')}")
    if script is not None:
        no_control(script, "--script")
    s = api.load_scenario(scenario, overrides(fields))
    if smoke:
        smoke_run(s, target, output, as_json, force)
        return
    report = api.launch(s, targets=target or (), folder=output, force=force, dataset=s.dataset, script=script,
                        bucket=bucket, visible_devices=parse_devices(visible_devices, s.num_gpus),
                        command=command_line())
    show_launch(report, output, as_json)


def smoke_run(s, names, output: str, as_json: bool, force: bool) -> None:
    """``--smoke``: the plan on a tiny model of its architecture, its files written into ``output`` and run a few
    steps (:mod:`gpuplan.launchers.smoke`); one row per target, exit 1 when one fails."""
    if output == "-":
        raise GpuplanError("--smoke writes and runs files: name a folder with -o, not -")
    plan, runs = api.smoke(s, folder=output, targets=names or (), force=force)
    if s.task != "train":
        serve_table(plan, runs, output, as_json)
        return
    if as_json:
        print_json({"setup": plan.setup_label, "folder": output, "runs": [
            {"target": r.target, "passed": r.passed, "command": r.command, "returncode": r.returncode,
             "seconds": round(r.seconds, 1), "losses": list(r.losses), "checkpoint": r.checkpoint} for r in runs]})
    else:
        table = _smoke_table(plan, output, ("target", "result", "steps", "loss first -> last", "checkpoint",
                                            "seconds"))
        for r in runs:
            loss = f"{r.losses[0]:.4f} -> {r.losses[-1]:.4f}" if r.losses else "-"
            table.add_row(r.target, "passed" if r.passed else f"FAILED (exit {r.returncode})", str(len(r.losses)),
                          loss, "yes" if r.checkpoint else "no", f"{r.seconds:.0f}")
        out.print(table)
        for r in runs:
            if not r.passed:
                out.print(Text(f"{r.target}: {r.command}\n{r.tail[-1500:]}", style="dim"), highlight=False)
    if not runs or not all(r.passed for r in runs):
        raise typer.Exit(1)


def _smoke_table(plan, output: str, columns: tuple[str, ...]) -> Table:
    """The smoke run's table, titled with the plan's setup and the folder its files are in."""
    table = Table(title=f"smoke run of {plan.setup_label} (tiny {plan.model.family}): files in {output}",
                  title_justify="left", padding=(0, 1))
    for col in columns:
        table.add_column(col)
    return table


def serve_table(plan, runs, output: str, as_json: bool) -> None:
    """``--smoke`` of a serving plan: whether the server came up and answered (:mod:`gpuplan.launchers.smoke_serve`);
    exit 1 when it did not."""
    if as_json:
        print_json({"setup": plan.setup_label, "folder": output, "runs": [
            {"target": r.target, "passed": r.passed, "command": r.command, "ready": r.ready, "tokens": r.tokens,
             "text": r.text, "seconds": round(r.seconds, 1)} for r in runs]})
    else:
        table = _smoke_table(plan, output, ("target", "result", "ready", "tokens", "answer", "seconds"))
        for r in runs:
            table.add_row(r.target, "passed" if r.passed else "FAILED", "yes" if r.ready else "no", str(r.tokens),
                          repr(r.text[:40]), f"{r.seconds:.0f}")
        out.print(table)
        for r in runs:
            if not r.passed:
                out.print(Text(f"{r.target}: {r.command}\n{r.tail[-1500:]}", style="dim"), highlight=False)
    if not all(r.passed for r in runs):
        raise typer.Exit(1)


def launch_setup(setups: list, n: int, have: tuple[str, ...], output: str, as_json: bool) -> None:
    """``recommend --launch N``: the files of the N-th setup, on its offer (or the user's own cards)."""
    if not 1 <= n <= len(setups):
        raise GpuplanError(f"--launch {n}: the recommendation lists {len(setups)} setup(s); pick one of 1 to "
                           f"{len(setups)}" if setups else "--launch: no setup fits, so there is nothing to launch")
    report = api.ranked_launch(setups[n - 1], have=have, folder=output, command=command_line())
    show_launch(report, output, as_json)
    if not as_json and not report.said["owned"]:
        out.print(Text(f"other targets or options (--target, --bucket, --dataset): {report.said['again']}",
                       style="dim"), highlight=False, soft_wrap=True)


def command_line() -> str:
    return shlex.join(["gpuplan", *sys.argv[1:]])


def parse_devices(text: str | None, num_gpus: int) -> tuple[int, ...] | None:
    if not text:
        return None
    try:
        devices = tuple(int(d) for d in text.split(",") if d.strip())
    except ValueError:
        raise GpuplanError(f"--visible-devices takes GPU indices like 0,2, got {text!r}") from None
    if len(devices) != num_gpus or len(set(devices)) != len(devices) or min(devices, default=0) < 0:
        raise GpuplanError(f"--visible-devices names {len(devices)} distinct GPUs but the plan uses {num_gpus} per "
                           "node: list one index per GPU, like 0,1")
    return devices


def show_launch(report, output: str, as_json: bool) -> None:
    """The plan's warnings (on stderr), the files written (or, with ``-o -``, printed; with ``--json`` too, each
    file's text in the JSON), then the resolver's notes, what every file opens with and the next step."""
    from pathlib import Path

    if not as_json:  # first, on stderr, as estimate says them (a field the plan leaves out, an old price)
        for warning in report.warnings:
            bullet(warning, prefix="warning: ", style="bold yellow", stream=err)
    if output == "-" and as_json:  # the files' text in the JSON, for scripts that asked for JSON
        texts = {name: text for name, _, text in report.printed}
        data = report.to_dict()
        data["files"] = [{**f, "text": texts[Path(f["path"]).name]} for f in data["files"]]
        print_json(data)
        return
    if output == "-":
        for name, target, text in report.printed:
            sys.stdout.write(f"# ===== {name} ({target}) =====\n{text}\n")
        return
    if as_json:
        print_json(report)
        return
    table = Table(title=f"{report.setup}: files in {output}", title_justify="left", padding=(0, 1))
    for col in ("file", "target", "read by"):
        table.add_column(col)
    for f in report.files:
        table.add_row(Path(f.path).name, f.target, f.read_by)
    out.print(table)
    for note in report.said["notes"]:  # the resolver's, as `estimate` says them (an h100 taken as the SXM5...)
        bullet(note, prefix="note: ", style="yellow")
    for line in report.said["header"][2:]:  # wrapped under their own indent (at 80 columns the terminal broke
        # "x accumulation 16 x 1 / data-parallel" at the margin, with no indent to tell a line from the next)
        text = line.lstrip()
        bullet(text, prefix=line[:len(line) - len(text)], style="dim")
    names = {Path(f.path).name for f in report.files}
    if "sky.yaml" in names:
        how = "sky jobs launch" if report.said["train"] and report.said["spot"] else "sky launch -c gpuplan"
        out.print(f"next: cd {shlex.quote(output)} && {how} sky.yaml", highlight=False)
    for script in ("accelerate-launch.sh", "vllm-serve.sh", "torchrun.sh", "tune-run.sh", "torchtitan-run.sh",
                   "axolotl-train.sh", "unsloth-run.sh"):
        if script in names:
            out.print(f"on a machine with the GPUs: cd {shlex.quote(output)} && bash {script}", highlight=False)
            break


def launch_params() -> list[inspect.Parameter]:
    """The options ``launch`` adds to the scenario's (``recommend --launch`` shares the output ones)."""
    def opt(name, kind, default, *flags, text, metavar=None):
        return inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=default, annotation=Annotated[
            kind, typer.Option(*flags, help=text, rich_help_panel="Launch", metavar=metavar)])

    return [
        opt("target", list[str] | None, None, "--target", "-t",
            text="skypilot, accelerate, deepspeed, torchrun, trainer, torchtune, torchtitan, axolotl, unsloth, "
                 "megatron, nemo, vllm, sglang, trtllm, llama.cpp; for a diffusion model diffusers, kohya, "
                 "simpletuner, ai-toolkit; or all (repeatable or comma-separated; default: every target that "
                 "applies, the scenario's stack for a diffusion model). A stack's own target plans that stack "
                 "when --stack is not set, a serving engine's that engine when --engine is not", metavar="TARGET"),
        opt("output", str, DEFAULT_DIR, "--output", "-o", text="Folder to write into; - prints the files.",
            metavar="DIR"),
        opt("force", bool, False, "--force", text="Overwrite files already in the folder (with --smoke: its launch "
            "files, inputs and checkpoints; without it --smoke needs a new or empty folder)."),
        opt("script", str | None, None, "--script",
            text="Training entry point instead of `-m trl.scripts.sft` (`-m trl.scripts.dpo` for DPO); it must read "
            "--config trainer.yaml.",
            metavar="COMMAND"),
        opt("bucket", str | None, None, "--bucket",
            text="Cloud bucket SkyPilot mounts at /checkpoints, so spot checkpoints survive interruptions.",
            metavar="NAME"),
        opt("visible_devices", str | None, None, "--visible-devices",
            text="Your own cards to use, as CUDA_VISIBLE_DEVICES: 0,2.", metavar="INDICES"),
        opt("smoke", bool, False, "--smoke",
            text="Rewrite the plan onto a tiny model of the same architecture, write its files into -o and run "
                 "each target that runs here a few steps (on the CPU without a GPU): loss, checkpoint, exit code; "
                 "a llama.cpp serving plan starts llama-server on a tiny GGUF and asks for one completion."),
    ]


scenario_command("launch", launch_cmd, *launch_params())
