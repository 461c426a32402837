"""One profile per stack (design.md, estimation layer): the training stacks and sharding engines here, which
:mod:`gpuplan.memory.training` consults; the serving engines in :mod:`.vllm` and :mod:`.llama_cpp`.

A stack profile (:class:`Runtime`) says what its code saves for backward, what its selective checkpointing keeps,
what its loss materializes, what stays on the GPU under activation offloading, which buffers it adds, and how its
techniques change the step time. An engine profile (:class:`Engine`) says what the model state costs per GPU, what
it shards, the buffers it gathers, and the reserved memory it leaves beyond the allocated peak. Which statistic a
stack's own logs print is in :mod:`gpuplan.stacks`. Adding a stack is adding a module here and its defaults there.
"""

from __future__ import annotations

from ...scenario import Scenario
from .axolotl import Axolotl
from .base import LossBytes, Recompute, Runtime, State
from .deepspeed import DeepSpeed
from .engine import Engine
from .fsdp1 import Fsdp1
from .fsdp2 import Fsdp2
from .hf import Hf
from .pytorch import PlainPytorch
from .torchtitan import Torchtitan
from .torchtune import Torchtune
from .unsloth import Unsloth

RUNTIMES: dict[str, Runtime] = {r.name: r for r in (Hf(), Torchtune(), Torchtitan(), Unsloth(), Axolotl(),
                                                      PlainPytorch())}
ENGINES: dict[str, Engine] = {"single": Engine(), "ddp": Engine(), "deepspeed": DeepSpeed(), "fsdp1": Fsdp1(),
                              "fsdp2": Fsdp2()}


def runtime_for(s: Scenario) -> Runtime:
    return RUNTIMES[s.framework]


def engine_for(s: Scenario) -> Engine:
    return ENGINES[s.sharding_engine]


__all__ = ["ENGINES", "RUNTIMES", "Engine", "LossBytes", "Recompute", "Runtime", "State", "engine_for",
           "runtime_for"]
