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

import importlib
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING

from .base import LossBytes, Recompute, Stack, State

if TYPE_CHECKING:
    from ..scenario import Scenario


# each stack's name -> (its module here, its profile's class)
HOMES = {"hf": ("hf", "Hf"), "torchtune": ("torchtune", "Torchtune"), "torchtitan": ("torchtitan", "Torchtitan"),
         "unsloth": ("unsloth", "Unsloth"), "axolotl": ("axolotl", "Axolotl"), "pytorch": ("pytorch", "PlainPytorch"),
         "megatron": ("megatron", "Megatron")}


class _Profiles(Mapping[str, Stack]):
    """Stack name -> its profile, each module imported when its stack is first asked for: a plan uses one stack,
    and importing the seven (torchtune's step replay, torchao's NF4 among them) cost every first estimate."""

    def __init__(self) -> None:
        self._made: dict[str, Stack] = {}

    def __getitem__(self, name: str) -> Stack:
        if name not in self._made:
            module, cls = HOMES[name]
            self._made[name] = getattr(importlib.import_module(f"{__name__}.{module}"), cls)()
        return self._made[name]

    def __iter__(self) -> Iterator[str]:
        return iter(HOMES)

    def __len__(self) -> int:
        return len(HOMES)


STACKS: Mapping[str, Stack] = _Profiles()


def stack_for(s: Scenario) -> Stack:
    """The profile of the scenario's ``stack``."""
    return STACKS[s.stack]


__all__ = ["STACKS", "LossBytes", "Recompute", "Stack", "State", "stack_for"]
