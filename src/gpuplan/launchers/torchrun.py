"""``torchrun.sh``: the plan as a ``torchrun`` command (``torch.distributed.run``): one process per GPU of the
node, ``--nnodes`` machines meeting at a c10d rendezvous, ``CUDA_VISIBLE_DEVICES`` when the plan uses some of the
user's own cards. The trainer reads ``trainer.yaml``, which names the ZeRO or FSDP settings itself, so no
accelerate config is needed.
"""

from __future__ import annotations

from .data import resume_token
from .files import LaunchFile, Raw, shell_text
from .plan import LaunchPlan
from .settings import LaunchOptions, entry_script
from .trainer import FILE as TRAINER_FILE
from .trainer import applies as trainer_applies

NAME = "torchrun"
SCRIPT = "torchrun.sh"
PORT = 29500  # torchrun's default rendezvous port


def applies(plan: LaunchPlan) -> str | None:
    return trainer_applies(plan)


def launcher(plan: LaunchPlan, *, multinode_env: bool = False) -> list[str]:
    """``torchrun`` and its own options, before the program: one process per GPU of the node, and on several
    nodes a c10d rendezvous at the main node (from ``NODE_RANK`` and ``MASTER_ADDR``, or with ``multinode_env``
    from SkyPilot's ``SKYPILOT_NODE_RANK`` and ``SKYPILOT_NODE_IPS``)."""
    argv = ["torchrun", "--nproc-per-node", str(plan.gpus_per_node), "--nnodes", str(plan.num_nodes)]
    if plan.num_nodes == 1:
        return [*argv, "--standalone"]
    rank, addr = (("$SKYPILOT_NODE_RANK", f'"$(echo "$SKYPILOT_NODE_IPS" | head -n1):{PORT}"') if multinode_env else
                  ('"${NODE_RANK:?set NODE_RANK to the rank of this node, 0 on the main one}"',
                   f'"${{MASTER_ADDR:?set MASTER_ADDR to the address of the main node}}:{PORT}"'))
    return [*argv, "--node-rank", Raw(rank), "--rdzv-backend", "c10d", "--rdzv-endpoint", Raw(addr),
            "--rdzv-id", "gpuplan"]


def command(plan: LaunchPlan, opts: LaunchOptions) -> list[str]:
    return [*launcher(plan), *entry_script(plan.scenario, opts), "--config", TRAINER_FILE]


def env(plan: LaunchPlan) -> dict[str, str]:
    return {"CUDA_VISIBLE_DEVICES": ",".join(map(str, plan.visible_devices))} if plan.visible_devices else {}


def files(plan: LaunchPlan, opts: LaunchOptions) -> list[LaunchFile]:
    notes = [f"run: bash {SCRIPT}" + (f" on each of the {plan.num_nodes} machines, with NODE_RANK and MASTER_ADDR "
                                      "set" if plan.num_nodes > 1 else "")]
    argv = [*command(plan, opts), resume_token(opts.output_dir)]  # resumes after an interruption
    return [LaunchFile(name=SCRIPT, target=NAME, text=shell_text(plan, argv, env(plan), notes),
                       reader="bash (torchrun)", executable=True)]
