"""Training stacks: one profile per stack a scenario names with ``stack`` (design.md, "One plan, three
words").

A :class:`Stack` answers for one stack's code (transformers + peft, torchtune's modules, torchtitan's model,
Unsloth's and Liger's kernels): what each decoder layer saves for backward, what its selective checkpointing keeps,
what its loss materializes, what stays on the GPU under activation offloading, which buffers it adds, and how its
techniques change the step (:mod:`.speedups`). Its recipe defaults and refusals are in
:mod:`gpuplan.scenario.stacks`; how the state is split across GPUs is :mod:`gpuplan.sharding`. Adding a stack is
adding a module here, its entry below and its recipe there.

- :mod:`.base`: the profile's questions, answered as the Hugging Face stack does (:class:`Stack`);
- :mod:`.hf`, :mod:`.torchtune`, :mod:`.torchtitan`, :mod:`.unsloth`, :mod:`.axolotl`, :mod:`.pytorch`: each
  stack's differences, with the code that makes them;
- :mod:`.megatron`: Megatron-Core with NeMo's recipes (TP/SP, PP with virtual stages, CP, EP, fp8);
- :mod:`.speedups`: each stack's published speed-ups.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .axolotl import Axolotl
from .base import LossBytes, Recompute, Stack, State
from .hf import Hf
from .megatron import Megatron
from .pytorch import PlainPytorch
from .torchtitan import Torchtitan
from .torchtune import Torchtune
from .unsloth import Unsloth

if TYPE_CHECKING:
    from ..scenario import Scenario

STACKS: dict[str, Stack] = {r.name: r for r in (Hf(), Torchtune(), Torchtitan(), Unsloth(), Axolotl(),
                                                         PlainPytorch(), Megatron())}


def stack_for(s: Scenario) -> Stack:
    """The profile of the scenario's ``stack``."""
    return STACKS[s.stack]


__all__ = ["STACKS", "LossBytes", "Recompute", "Stack", "State", "stack_for"]
