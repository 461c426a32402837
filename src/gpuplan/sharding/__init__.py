"""Sharding: who holds the model state and how it is split across GPUs (design.md, "One plan, three words").

A :class:`Sharding` says what the weights, gradients and optimizer states cost per GPU, what it shards, the
buffers it gathers, and the reserved memory it leaves beyond the allocated peak:

- :mod:`.base`: one GPU, or DDP replicas (flat gradient buckets); tensor and pipeline parallel split every rank's
  state the same way;
- :mod:`.deepspeed`: DeepSpeed ZeRO-1/2/3;
- :mod:`.fsdp`: what FSDP1 (:mod:`.fsdp1`) and FSDP2 (:mod:`.fsdp2`) share, and how they differ.

Which one a scenario uses is ``Scenario.sharded_by`` (its ``sharding`` and, for FSDP, the stack's version).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..stacks import STACKS
from .base import Sharding
from .deepspeed import DeepSpeed
from .fsdp1 import Fsdp1
from .fsdp2 import Fsdp2

if TYPE_CHECKING:
    from ..scenario import Scenario

SHARDINGS: dict[str, Sharding] = {"single": Sharding(), "ddp": Sharding(), "deepspeed": DeepSpeed(),
                                  "fsdp1": Fsdp1(), "fsdp2": Fsdp2()}


def sharding_for(s: Scenario) -> Sharding:
    """The sharding code that holds the scenario's training state."""
    return SHARDINGS[s.sharded_by]


def master_partition(s: Scenario) -> bool:
    """Whether ``-mixed`` precision keeps a 16-bit working copy of the trained weights beside an fp32 master copy,
    not fp32 weights under autocast, as the memory model holds them: the sharding's own
    :attr:`~.base.Sharding.master_partition` in a full fine-tune (DeepSpeed ZeRO: :meth:`.deepspeed.DeepSpeed.state`
    holds LoRA's adapters as the base sharding does), or the stack's
    (:attr:`gpuplan.stacks.base.Stack.master_partition`: Megatron-Core, whose ``rank_state`` trains adapters like
    full parameters); a diffusion trainer has no stack profile and keeps none apart."""
    stack = STACKS.get(s.stack)
    return (s.method == "full" and sharding_for(s).master_partition) or (stack is not None and stack.master_partition)


__all__ = ["SHARDINGS", "Sharding", "master_partition", "sharding_for"]
