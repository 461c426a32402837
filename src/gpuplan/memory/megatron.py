"""Peak memory per rank of a Megatron-Core training step (:mod:`gpuplan.stacks.megatron` has the formulas).

The first pipeline stage holds the most micro-batches in flight and the input embedding; the last stage holds the
output layer and the loss's fp32 logits. Each is estimated; the larger is the rank that must fit. Peak = model state
+ the maximum of the forward's end (every in-flight micro-batch's saved activations, and on the last stage the
logits) and the backward (the saved activations, one layer's activation gradients, under full recompute one
layer's recomputed set) (formulas.md section 9: the peak of phases, not their sum). The caching allocator's
slack (:data:`gpuplan.overheads.ALLOCATOR_SLACK_TRAIN`) is taken on the activations alone: Megatron allocates
the model state once, in whole buffers.
"""

from __future__ import annotations

import math

from .. import overheads as oh
from ..model.spec import ModelSpec
from ..scenario import Scenario
from ..stacks import megatron as mg
from ..stacks import stack_for
from ..tensors.breakdown import GIB, Estimate


def megatron_memory(s: Scenario, m: ModelSpec) -> Estimate:
    """The larger of the first and the last pipeline stage's peaks (one estimate when pp is 1)."""
    stages = [_stage(s, m, 0)]
    if s.pp > 1:
        stages.append(_stage(s, m, s.pp - 1))
    e = max(stages, key=lambda x: x.allocated)
    if s.pp > 1:
        e.assumptions.append("pipeline: first stage " + f"{stages[0].allocated / GIB:.1f} GiB, last stage "
                             f"{stages[1].allocated / GIB:.1f} GiB allocated; the larger is shown")
    return e


def _stage(s: Scenario, m: ModelSpec, rank: int) -> Estimate:
    first, last = rank == 0, rank == s.pp - 1
    e = Estimate()
    st = mg.rank_state(s, m, first=first, last=last)
    e.weights, e.optimizer = st.weights, st.optimizer
    layers = m.layers[:math.ceil(m.num_layers / s.pp)]
    per_mb = sum(mg.layer_bytes(layer, m, s) for layer in layers)
    flight = mg.in_flight(s, rank)
    acts = per_mb * flight
    kept, fwd = mg.logits_bytes(s, m) if last else (0.0, 0.0)
    backward = max(mg.backward_transient(layer, m, s) for layer in layers)
    if s.grad_checkpointing == "full":  # one layer's whole set, recomputed before its backward
        backward += max(mg.layer_bytes(layer, m, s, "none") for layer in layers)
    phases = {"forward": acts + kept + fwd, "backward": acts + kept + backward}
    e.peak_phase = max(phases, key=phases.get)
    e.gradients = st.gradients
    e.activations = phases[e.peak_phase]
    e.other = {k: v for k, v in {**stack_for(s).extras(s, m, 1.0),
                                 "fp8 weight transposes (Transformer Engine)": st.fp8_copies}.items() if v}
    base = e.weights + e.optimizer + e.gradients + sum(e.other.values())
    # the state is allocated once, in whole buffers (the DDP's contiguous param and fp32 grad buffers,
    # megatron/core/distributed/param_and_grad_buffer.py; the optimizer's fp32 shards): the caching allocator's
    # slack grows with the blocks that churn every micro-batch, the activations
    e.slack = oh.ALLOCATOR_SLACK_TRAIN * e.activations / (base + e.activations)
    e.phases = {k: (v + base) / GIB for k, v in phases.items()}
    e.extra["params_trainable"] = int(st.trainable * s.tp * s.pp)
    stage = "" if s.pp == 1 else (" (first stage)" if first else " (last stage)")
    e.assumptions += [
        f"state per rank{stage}: {st.dense / 1e9:.3g}B dense + {st.embedding / 1e9:.3g}B embedding/output + "
        f"{st.experts / 1e9:.3g}B expert parameters; 2 B weights + 4 B fp32 gradients"
        + (f" + 12 B master/Adam over {s.dp * s.cp} DP x CP ranks (distributed optimizer)"
           if s.resolved_strategy == "zero1" else " + optimizer states unsharded"),
        f"activations{stage}: {per_mb / GIB:.2f} GiB per micro-batch of {mg.tokens(s):,} tokens/rank "
        f"(seq_len / cp) x {flight:.3g} in flight ({s.grad_checkpointing} recompute)",
        *stack_for(s).notes(s)]
    return e
