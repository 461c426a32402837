"""What the page shows for one number: its formula, with the user's values, the constants' sources and the
accuracy gpuplan measured; and what the formulas read (:class:`Context`)."""

from __future__ import annotations

from pydantic import BaseModel

from ..hardware import GpuSpec
from ..model.spec import ModelSpec
from ..plan.plan import Plan
from ..scenario import Scenario
from ..sharding import sharding_for
from ..stacks import stack_for
from .accuracy import Accuracy

GIB = 2**30


class Constant(BaseModel):
    name: str
    value: str
    source: str


class Formula(BaseModel):
    label: str
    value: float
    unit: str
    formula: str
    substituted: str
    computed: float | None = None
    note: str = ""
    constants: list[Constant] = []
    accuracy: Accuracy | None = None


class Explanation(BaseModel):
    numbers: dict[str, Formula]
    defaults: list[str]
    # the step's parts in whole percent, summing to 100 (:meth:`gpuplan.speed.Speed.step_shares`, as the CLI's
    # ``step:`` line prints them)
    step_shares: list[tuple[str, int]] = []


def gib(x: float) -> str:
    return f"{x / GIB:,.2f} GiB"


def count(x: float) -> str:
    return f"{x / 1e9:,.3f}B" if x >= 1e8 else f"{x:,.0f}"


class Context:
    """What the formulas read: the scenario, the model, the card and the shards."""

    def __init__(self, s: Scenario, m: ModelSpec, gpu: GpuSpec | None, result: Plan):
        self.s, self.m, self.gpu, self.r = s, m, gpu, result
        self.sharding = s.resolved_sharding
        self.mixed = s.precision.endswith("-mixed")
        self.c = s.compute_bytes
        self.P = m.params_total
        self.trainable = result.model.params_trainable
        self.shard = s.tp * s.pp
        self.N = s.dp
        # who holds the training state, and over how many data-parallel ranks it splits weights, gradients and
        # optimizer states: the plan's own (:mod:`gpuplan.sharding`); Megatron's ranks read its stack's state
        self.megatron = s.task == "train" and stack_for(s).own_memory
        self.holder = sharding_for(s) if s.task == "train" else None
        # DeepSpeed's 16-bit working copy beside an fp32 master partition (sharding/deepspeed.py)
        self.master_partition = bool(self.holder and self.holder.master_partition)
        self.w_n, self.g_n, self.o_n = self.holder.shards(s) if self.holder else (1, 1, 1)
        # optimizer states and fp32 master copies: fp32 under mixed precision (training.py); LoRA adapters, their
        # gradients and states in the adapters' dtype (sharding/base.py ``lora_state``)
        self.state_bytes = 4 if (self.mixed or s.precision == "fp32") else 2
        if s.task == "train" and s.method != "full":
            self.state_bytes = s.adapter_bytes

    def shards_text(self, ranks: int) -> str:
        parts = [f"TP {self.s.tp} x PP {self.s.pp}"] + ([f"{ranks} data-parallel ranks"] if ranks > 1 else [])
        return " x ".join(parts)
