"""``sky.yaml``: a SkyPilot task (``sky launch sky.yaml``, or ``sky jobs launch sky.yaml`` for spot) that rents the
plan's cards and runs it (SkyPilot ``sky/task.py`` ``Task.from_yaml``; schema ``sky/utils/schemas.py``).

``resources``: the accelerator and its count per node in SkyPilot's names (``data/skypilot.yaml``), ``infra`` =
``cloud[/region]`` of the offer priced (SkyPilot >= 0.10 spells cloud and region this way), ``use_spot`` for
interruptible offers, ``disk_size`` from the weights, the checkpoints, the dataset and the software
(:meth:`LaunchPlan.disk_gb`), and the serving port. ``num_nodes``; ``workdir: .`` syncs this folder (the configs)
to every node; ``file_mounts`` copies the local model folder, tokenizer and dataset the plan names to the same
absolute paths there (SkyPilot ``file_mounts``: ``/remote/path: /local/path``), so the configs read them alike;
``setup`` installs the stack; ``run`` is the training command (accelerate launch, tune run, torchrun
torchtitan.train, axolotl train, the Unsloth script, torchrun pretrain_gpt.py in NVIDIA's PyTorch container with
Megatron-LM checked out: :mod:`.megatron`), or the plan's server: vllm serve or SGLang's launch_server (TensorRT-LLM
is refused: :func:`applies`). On spot, the trainer saves every
``save_steps`` (the Daly interval) into ``/checkpoints``, a bucket mounted with ``MOUNT_CACHED`` when ``--bucket``
names one, and resumes from the newest checkpoint after an interruption (the Trainer with
``--resume_from_checkpoint``, torchtitan from its dump folder, Megatron-LM with ``--load``, Axolotl with
``auto_resume_from_checkpoints``, the Unsloth script by itself).
"""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path
from typing import Any

from ..datafiles import read_yaml
from ..engines import engine_for
from . import accelerate, axolotl, llama_cpp, megatron, sglang, torchtitan, torchtune, trtllm, unsloth, vllm
from .files import LaunchFile, Raw, command_text, quote, yaml_text
from .plan import LaunchPlan, pip_packages
from .serving import long_context_env
from .settings import LaunchOptions

NAME = "skypilot"
FILE = "sky.yaml"
CHECKPOINTS = "/checkpoints"


@cache
def names() -> dict[str, Any]:
    """SkyPilot's accelerator and cloud names (``data/skypilot.yaml``), read as every bundled YAML file is
    (:func:`gpuplan.datafiles.read_yaml`)."""
    return read_yaml("skypilot.yaml")


def applies(plan: LaunchPlan) -> str | None:
    if plan.owned:
        return f"the plan runs on your own cards; SkyPilot rents cloud ones (use {own_script(plan)})"
    if wide := copied_too_wide(plan):
        return wide
    if not plan.train and (refused := engine_for(plan.scenario).skypilot_refusal):
        return refused
    return runner(plan).applies(plan)


def copied_too_wide(plan: LaunchPlan) -> str | None:
    """Why the task would copy too much, or None: SkyPilot copies each input folder whole to every node
    (``file_mounts``), and a model's config.json in the home folder names the home folder as the model's (its
    weights are looked for beside it), so the task would send the home folder, keys and credentials with it, to
    rented machines; the home folder, a folder above it and ``/`` are never an input's folder."""
    home = Path.home().resolve()
    for role, path in plan.inputs.items():
        p = Path(path).resolve()
        if p == home or p in home.parents or p == Path(p.anchor):
            what = "the home folder" if p == home else "the file system's root" if p == Path(p.anchor) else \
                "above the home folder"
            return (f"the {role}'s folder {path} is {what}, and SkyPilot copies an input's folder whole to every node "
                    f"(file_mounts): move the {role}'s files into a folder of their own and name that")
    return None


def own_script(plan: LaunchPlan) -> str:
    """The script that runs the plan on cards already at hand: the engine's serving command, else the training
    runner's (s19-fuzz2: a serving plan was told to use accelerate-launch.sh or torchrun.sh)."""
    if not plan.train:
        engines = {m.NAME: m.SCRIPT for m in (vllm, sglang, trtllm, llama_cpp)}
        return engines.get(engine_for(plan.scenario).launch_target or "", "the engine's own serving command")
    run = runner(plan)
    return f"{accelerate.SCRIPT} or torchrun.sh" if run is accelerate else run.SCRIPT


def runner(plan: LaunchPlan):
    """The target whose command the task runs: to serve, the plan's engine (SGLang's launch_server, else vLLM,
    whose refusal names the engine it does not run); to train, the stack's own (torchtune, torchtitan, Axolotl,
    Unsloth, Megatron-LM's pretrain_gpt.py), else accelerate with the Trainer's arguments."""
    if not plan.train:
        return sglang if engine_for(plan.scenario).launch_target == sglang.NAME else vllm
    return {"torchtune": torchtune, "torchtitan": torchtitan, "axolotl": axolotl, "unsloth": unsloth,
            "megatron": megatron}.get(plan.scenario.stack, accelerate)


def cloud(plan: LaunchPlan) -> str | None:
    return names()["clouds"].get(plan.offer.provider) if plan.offer else None


def accelerator(plan: LaunchPlan) -> tuple[str, bool]:
    """SkyPilot's name for the card on the plan's cloud, and whether SkyPilot's catalog knows it."""
    entry = names()["accelerators"].get(plan.gpu.id)
    if entry is None:
        return (plan.gpu.aliases[0] if plan.gpu.aliases else plan.gpu.name).replace(" ", ""), False
    return entry.get("by_cloud", {}).get(cloud(plan), entry["name"]), True


def spot(plan: LaunchPlan) -> bool:
    return plan.offer.interruptible if plan.offer else plan.scenario.pricing == "spot"


def task(plan: LaunchPlan, opts: LaunchOptions) -> dict[str, Any]:
    name, _ = accelerator(plan)
    res: dict[str, Any] = {"accelerators": f"{name}:{plan.gpus_per_node}"}
    if cloud(plan):
        res["infra"] = cloud(plan) + (f"/{plan.offer.region}" if plan.offer.region else "")
    if runner(plan) is megatron:  # the container Megatron-LM's CI runs in (megatron.IMAGE)
        res["image_id"] = f"docker:{megatron.IMAGE}"
    res["use_spot"] = spot(plan)
    res["disk_size"] = plan.disk_gb
    if not plan.train:
        res["ports"] = opts.port
    data: dict[str, Any] = {"name": _slug(f"gpuplan-{plan.model.name.split('/')[-1]}-"
                                          f"{'train' if plan.train else 'serve'}"),
                            "resources": res, "num_nodes": plan.num_nodes, "workdir": "."}
    mounts: dict[str, Any] = {path: path for path in plan.inputs.values()}  # the same absolute path on every node
    if plan.train and spot(plan) and opts.bucket:
        mounts[CHECKPOINTS] = {"name": opts.bucket, "mode": "MOUNT_CACHED"}
    if mounts:
        data["file_mounts"] = mounts
    flash = plan.train and plan.scenario.attention == "flash"
    build = ["--no-build-isolation"] if flash and runner(plan) is axolotl else []  # axolotl[flash-attn] compiles
    if runner(plan) is megatron:  # the container pins pip's packages; Megatron-LM's guide unsets the pin
        data["envs"] = {"PIP_CONSTRAINT": ""}
        data["setup"] = megatron.setup()
    else:
        data["setup"] = command_text(["pip", "install", *build, *pip_packages(plan)])
    if flash and runner(plan) is accelerate:
        data["setup"] += command_text(["pip", "install", "flash-attn", "--no-build-isolation"])
    data["run"] = run(plan, opts)
    return data


def run(plan: LaunchPlan, opts: LaunchOptions) -> str:
    if not plan.train:
        return command_text(runner(plan).command(plan, opts, multinode_env=True), long_context_env(plan))
    if runner(plan) is torchtune:
        fetch = torchtune.download(plan)
        return (command_text(fetch) if fetch else "") + command_text(torchtune.command(plan, multinode_env=True))
    out = CHECKPOINTS if opts.bucket and spot(plan) else None
    if runner(plan) is torchtitan:  # it resumes from the newest checkpoint under its dump folder by itself
        argv = torchtitan.command(plan, multinode_env=True)
        fetch = command_text(torchtitan.download(plan)) if torchtitan.download(plan) else ""
        return fetch + command_text(argv + (["--job.dump_folder", out] if out else []))
    if runner(plan) is megatron:  # from the checkout; --load resumes from the newest checkpoint
        steps = [megatron.command(plan, opts, multinode_env=True, checkpoints=out)]
        return f"cd {megatron.CHECKOUT}\n" + "".join(command_text(argv) for argv in [*megatron.before(plan), *steps])
    if runner(plan) is axolotl:  # auto_resume_from_checkpoints on spot
        return command_text(axolotl.command(plan, multinode_env=True, output_dir=out))
    if runner(plan) is unsloth:  # the script resumes from the newest checkpoint in its output folder
        return command_text(unsloth.command(plan, multinode_env=True), {"OUTPUT_DIR": out} if out else None)
    argv = accelerate.command(plan, opts, multinode_env=True)
    if not spot(plan):
        return command_text(argv)
    out = out or opts.output_dir
    resume = f'LAST=$(ls -d {quote(out)}/checkpoint-* 2>/dev/null | sort -t- -k2 -n | tail -n 1 || true)\n'
    return resume + command_text([*argv, "--output_dir", out,
                                  Raw('${LAST:+--resume_from_checkpoint "$LAST"}')])


def notes(plan: LaunchPlan, opts: LaunchOptions) -> list[str]:
    name, known = accelerator(plan)
    out = ["run: sky jobs launch sky.yaml (managed: restarted after a spot interruption)" if spot(plan) and
           plan.train else "run: sky launch -c gpuplan sky.yaml"]
    if not known:
        out.append(f"SkyPilot's catalog has no {plan.gpu.name}: {name!r} only matches a Kubernetes node labelled so")
    for role, path in plan.inputs.items():
        out.append(f"the {role} {path} is copied to the same path on every node (file_mounts)")
    if plan.offer and not cloud(plan):
        out.append(f"{plan.offer.provider} is not a SkyPilot cloud: the task lets SkyPilot choose among your clouds")
    if opts.bucket and not (plan.train and spot(plan)):  # (given, and not written into the task: say why)
        out.append(f"--bucket {opts.bucket} is not mounted: it keeps a spot training run's checkpoints, and this "
                   + ("is a serving plan" if not plan.train else "plan runs on demand (--pricing spot to run it on "
                      "spot instances, checkpointing into the bucket)"))
    if plan.train and spot(plan) and not opts.bucket and runner(plan) is not torchtune:
        out.append("spot without --bucket: checkpoints stay on the node and are lost with it; pass --bucket NAME to "
                   "keep them in cloud storage")
    return out


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9-]+", "-", text.lower()).strip("-")


def files(plan: LaunchPlan, opts: LaunchOptions) -> list[LaunchFile]:
    return [LaunchFile(name=FILE, target=NAME, text=yaml_text(plan, task(plan, opts), notes(plan, opts)),
                       reader="sky launch / sky jobs launch (SkyPilot)")]
