"""``accelerate.yaml`` and ``accelerate-launch.sh``: the config ``accelerate launch --config_file`` reads (accelerate
``commands/config/config_args.py`` ``ClusterConfig``) and the command that runs the trainer with it.

``num_processes`` counts every GPU of every machine (accelerate's convention). Under DeepSpeed the config only
points at ``ds_config.json``: accelerate refuses ``mixed_precision`` and the ZeRO keys beside a
``deepspeed_config_file`` (``DeepSpeedPlugin._deepspeed_config_checks``), so they live in that one file. FSDP is
the plan's version (``sharding fsdp`` is FSDP1 in the HF stack, as the memory estimate assumes; fsdp2 for
``fully_shard``), fully sharded, with CPU offload when the plan offloads.
"""

from __future__ import annotations

from typing import Any

from .data import resume_token
from .files import LaunchFile, Raw, shell_text, yaml_text
from .plan import LaunchPlan
from .settings import LaunchOptions, autocast, backend, entry_script, fsdp_settings, zero_stage
from .trainer import FILE as TRAINER_FILE
from .trainer import applies as trainer_applies

NAME = "accelerate"
FILE = "accelerate.yaml"
SCRIPT = "accelerate-launch.sh"
DISTRIBUTED = {"none": "NO", "ddp": "MULTI_GPU", "deepspeed": "DEEPSPEED", "fsdp1": "FSDP", "fsdp2": "FSDP"}


def applies(plan: LaunchPlan) -> str | None:
    return trainer_applies(plan)


def config(plan: LaunchPlan, opts: LaunchOptions | None = None) -> dict[str, Any]:
    s = plan.scenario
    kind = backend(s)
    cpu = opts is not None and opts.device == "cpu"  # a smoke run: processes on the CPU, gloo between them
    distributed = "MULTI_CPU" if cpu and kind == "ddp" else DISTRIBUTED[kind]
    data: dict[str, Any] = {"compute_environment": "LOCAL_MACHINE", "distributed_type": distributed}
    if kind != "deepspeed":
        data["mixed_precision"] = autocast(s) or "no"
    data.update({"num_machines": plan.num_nodes, "num_processes": plan.num_nodes * plan.gpus_per_node,
                 "machine_rank": 0, "gpu_ids": ",".join(map(str, plan.visible_devices)) if plan.visible_devices
                 else "all", "main_training_function": "main", "rdzv_backend": "static",
                 "same_network": True, "use_cpu": cpu})
    if kind == "deepspeed":
        data["deepspeed_config"] = {"deepspeed_config_file": "ds_config.json",
                                    "zero3_init_flag": zero_stage(s) == 3,
                                    "deepspeed_multinode_launcher": "standard"}
    elif kind.startswith("fsdp"):
        data["fsdp_config"] = {f"fsdp_{k}": v for k, v in fsdp_settings(s, accelerate_names=True).items()}
    return data


def command(plan: LaunchPlan, opts: LaunchOptions, *, multinode_env: bool = False) -> list[str]:
    """``accelerate launch`` with the config and the trainer's entry point. With ``multinode_env``, the machine
    rank and the main node come from SkyPilot's environment (``SKYPILOT_NODE_RANK``, ``SKYPILOT_NODE_IPS``)."""
    argv = ["accelerate", "launch", "--config_file", FILE]
    if plan.num_nodes > 1:
        if multinode_env:
            argv += ["--machine_rank", Raw("$SKYPILOT_NODE_RANK"), "--main_process_ip",
                     Raw('"$(echo "$SKYPILOT_NODE_IPS" | head -n1)"')]
        else:
            argv += ["--machine_rank", Raw('"${MACHINE_RANK:?set MACHINE_RANK to the rank of this machine, 0 on the '
                                           'main one}"'),
                     "--main_process_ip", Raw('"${MAIN_PROCESS_IP:?set MAIN_PROCESS_IP to the address of the main '
                                              'machine}"')]
        argv += ["--main_process_port", "29500"]
    return [*argv, *entry_script(plan.scenario, opts), "--config", TRAINER_FILE]


def files(plan: LaunchPlan, opts: LaunchOptions) -> list[LaunchFile]:
    notes = [f"run: bash {SCRIPT}"]
    if plan.num_nodes > 1:
        notes.append(f"{plan.num_nodes} machines: run {SCRIPT} on each with MACHINE_RANK and MAIN_PROCESS_IP set")
    return [LaunchFile(name=FILE, target=NAME, text=yaml_text(plan, config(plan, opts), notes),
                       reader="accelerate launch --config_file accelerate.yaml"),
            LaunchFile(name=SCRIPT, target=NAME, text=shell_text(plan, [*command(plan, opts),
                                                                     resume_token(opts.output_dir)], notes=notes[1:]),
                       reader="bash (accelerate launch)", executable=True)]
