"""``torchrun.sh``: the plan as a ``torchrun`` command (``torch.distributed.run``): one process per GPU of the
node, ``--nnodes`` machines meeting at a c10d rendezvous, ``CUDA_VISIBLE_DEVICES`` when the plan uses some of the
user's own cards. The trainer reads ``trainer.yaml``, which names the ZeRO or FSDP settings itself, so no
accelerate config is needed.
"""

from __future__ import annotations

from .files import LaunchFile, Raw, shell_text
from .plan import LaunchPlan
from .stack import LaunchOptions
from .trainer import FILE as TRAINER_FILE
from .trainer import applies as trainer_applies

NAME = "torchrun"
SCRIPT = "torchrun.sh"
PORT = 29500  # torchrun's default rendezvous port


def applies(plan: LaunchPlan) -> str | None:
    return trainer_applies(plan)


def command(plan: LaunchPlan, opts: LaunchOptions) -> list[str]:
    argv = ["torchrun", "--nproc-per-node", str(plan.gpus_per_node), "--nnodes", str(plan.num_nodes)]
    if plan.num_nodes == 1:
        argv.append("--standalone")
    else:
        argv += ["--node-rank", Raw('"${NODE_RANK:?set NODE_RANK to the rank of this node, 0 on the main one}"'),
                 "--rdzv-backend", "c10d",
                 "--rdzv-endpoint", Raw(f'"${{MASTER_ADDR:?set MASTER_ADDR to the address of the main node}}:{PORT}"'),
                 "--rdzv-id", "gpuplan"]
    return [*argv, *opts.script, "--config", TRAINER_FILE]


def env(plan: LaunchPlan) -> dict[str, str]:
    return {"CUDA_VISIBLE_DEVICES": ",".join(map(str, plan.visible_devices))} if plan.visible_devices else {}


def files(plan: LaunchPlan, opts: LaunchOptions) -> list[LaunchFile]:
    notes = [f"run: bash {SCRIPT}" + (f" on each of the {plan.num_nodes} machines, with NODE_RANK and MASTER_ADDR "
                                      "set" if plan.num_nodes > 1 else "")]
    return [LaunchFile(name=SCRIPT, target=NAME, text=shell_text(plan, command(plan, opts), env(plan), notes),
                       reader="bash (torchrun)", executable=True)]
