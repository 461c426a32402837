"""Formulas of a Megatron-Core rank's model state: weights, gradients and optimizer states of the pipeline stage the
plan shows, read from that rank's state (:func:`gpuplan.memory.megatron.largest_stage`,
:func:`gpuplan.stacks.megatron.rank_state`, where each rule is cited)."""

from __future__ import annotations

from ..memory.megatron import largest_stage
from ..stacks import megatron as mg
from .formula import GIB, Constant, Context, Formula, count

_STAGES = ("first", "second", "last")


def _stage(x: Context) -> tuple[mg.RankState, str, str]:
    """The rank's state, its parameters written out and the stage's name."""
    rank, st = largest_stage(x.s, x.m, x.gpu)
    name = "" if x.s.pp == 1 else f" ({_STAGES[0 if rank == 0 else 2 if rank == x.s.pp - 1 else 1]} pipeline stage)"
    held = f"{count(st.dense)} dense + {count(st.embedding)} embedding/output + {count(st.experts)} expert"
    return st, held, name


_HELD = "H = this rank's parameters: dense / TP (norms and routers whole, MLA's down-projections whole), " \
        "embedding and output layer / TP on the first and last stages, routed experts / EP"


def weights(x: Context) -> Formula:
    st, held, stage = _stage(x)
    fp8 = f" - 1 B x {count(st.fp8)} fp8 linear weights" if st.fp8 else ""
    if x.s.method == "full":
        computed = 2 * (st.dense + st.embedding + st.experts) - st.fp8
        formula = f"W = 2 B x H{' - 1 B per fp8 primary weight' if fp8 else ''}; {_HELD}"
        substituted = f"2 x ({held}){fp8}"
    else:  # the frozen base (its bytes from the rank's state, by precision) + bf16 adapters
        computed = st.base + 2 * st.trainable
        formula = "W = frozen base (2 B x H, fp8 or NVFP4 linears as the precision holds them) + 2 B x adapters"
        substituted = f"{st.base / GIB:,.2f} GiB ({held}) + 2 x {count(st.trainable)}"
    return Formula(label="weights", value=x.r.memory.weights_gib, unit="GiB", formula=formula,
                   substituted=f"{substituted} = {computed / GIB:,.2f} GiB{stage}", computed=computed / GIB,
                   constants=[Constant(name="Megatron weights", value="bf16 (fp8 primary weights under fp8-mixed)",
                                       source="gpuplan/stacks/megatron.py rank_state")])


def gradients(x: Context) -> Formula:
    st, held, stage = _stage(x)
    full = x.s.method == "full"
    computed = 4 * (st.dense + st.embedding + st.experts if full else st.trainable)
    return Formula(label="gradients", value=x.r.memory.gradients_gib, unit="GiB",
                   formula="G = 4 B x " + (f"H (fp32 gradient buffer, not sharded); {_HELD}" if full
                                           else "adapter parameters (fp32 gradient buffer)"),
                   substituted=f"4 x {f'({held})' if full else count(st.trainable)} = {computed / GIB:,.2f} GiB"
                               f"{stage}", computed=computed / GIB,
                   constants=[Constant(name="gradient buffer", value="fp32",
                                       source="megatron/core/distributed/param_and_grad_buffer.py (grad in fp32)")])


def optimizer(x: Context) -> Formula:
    st, _, stage = _stage(x)
    b = mg.OPTIMIZER_BYTES[x.s.optimizer]
    n, n_exp = st.shards
    if x.s.method == "full":
        computed = b * ((st.dense + st.embedding) / n + st.experts / n_exp)
        formula = (f"O = {b} B (fp32 master + moments) x (dense and embedding parameters / DP x CP + expert "
                   "parameters / expert-data-parallel ranks)")
        substituted = f"{b} x (({count(st.dense)} + {count(st.embedding)}) / {n} + {count(st.experts)} / {n_exp})"
    else:
        computed = b * st.trainable / n
        formula = f"O = {b} B (fp32 master + moments) x adapter parameters / DP x CP"
        substituted = f"{b} x {count(st.trainable)} / {n}"
    return Formula(label="optimizer states", value=x.r.memory.optimizer_gib, unit="GiB", formula=formula,
                   substituted=f"{substituted} = {computed / GIB:,.2f} GiB{stage}", computed=computed / GIB,
                   constants=[Constant(name="distributed optimizer", value="over DP x CP; experts over DP x CP x TP "
                                       "/ EP", source="megatron/core/optimizer/distrib_optimizer.py")])
