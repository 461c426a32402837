"""Peak memory per rank of a Megatron-Core training step (:mod:`gpuplan.stacks.megatron` has the formulas).

The first pipeline stage holds the most micro-batches in flight and the input embedding; the last stage holds the
output layer and the loss's fp32 logits; where the embedding and the loss count as layers of the split, the second
stage holds more layers than the first. Each is estimated; the largest is the rank that must fit. Peak = model state
+ the maximum of the forward's end (every in-flight micro-batch's saved activations, and on the last stage the
logits) and the backward (the saved activations, one layer's activation gradients, under full recompute one
layer's recomputed set) (formulas.md section 9: the peak of phases, not their sum). The caching allocator's
slack (:data:`gpuplan.overheads.ALLOCATOR_SLACK_TRAIN`) is taken on the activations alone: Megatron allocates
the model state once, in whole buffers.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .. import overheads as oh
from ..model.spec import ModelSpec
from ..scenario import Scenario
from ..sharding import sharding_for
from ..stacks import megatron as mg
from ..stacks import stack_for
from ..tensors.breakdown import GIB, Estimate

if TYPE_CHECKING:
    from ..hardware import GpuSpec


def megatron_memory(s: Scenario, m: ModelSpec, gpu: GpuSpec | None) -> Estimate:
    """The largest of the first, (with the embedding and loss in the split) the second and the last pipeline
    stage's peaks (one estimate when pp is 1) on ``gpu``, the plan's card (None: none named)."""
    ranks = _ranks(s, m)
    stages = [_stage(s, m, gpu, rank) for rank in ranks]
    e = max(stages, key=lambda x: x.allocated)
    if s.pp > 1:
        said = ", ".join(f"{_NAMES[min(r, 1) if r < s.pp - 1 else 2]} {x.allocated / GIB:.1f} GiB"
                         for r, x in zip(ranks, stages, strict=True))
        e.assumptions.append(f"pipeline: {said} allocated; the largest is shown")
    return e


_NAMES = ("first stage", "second stage", "last stage")


def _ranks(s: Scenario, m: ModelSpec) -> list[int]:
    """The pipeline ranks whose peaks are estimated: the first, the second where the embedding and the loss count
    as layers of the split (a middle stage holds a whole share of layers), the last."""
    ranks = [0]
    if mg.embedding_in_split(s, m) and s.pp > 2:
        ranks.append(1)
    if s.pp > 1:
        ranks.append(s.pp - 1)
    return ranks


def largest_stage(s: Scenario, m: ModelSpec, gpu: GpuSpec | None) -> tuple[int, mg.RankState]:
    """The pipeline rank :func:`megatron_memory` shows (the largest allocated peak) and its model state: what the
    formulas of the page read."""
    rank = max(_ranks(s, m), key=lambda r: _stage(s, m, gpu, r).allocated)
    return rank, mg.rank_state(s, m, gpu, first=rank == 0, last=rank == s.pp - 1)


def _validation_pool(s: Scenario, m: ModelSpec, layers, last: bool) -> float:
    """Under CUDA graphs Megatron captures validation in a graph of its own, in a memory pool of its own
    (``megatron/core/full_cuda_graph.py`` ``FullCudaGraphWrapper``: separate ``training`` and ``validation``
    graphs, a new ``graph_pool_handle()`` per capture unless ``use_single_mempool``), which the training step's
    pool cannot reuse: one validation micro-batch's forward, a layer's tensors (counted as the set a layer keeps
    without recompute) and on the last stage the logits and their fp32 upcast."""
    if not s.cuda_graphs:
        return 0.0
    layer = max(mg.layer_bytes(lyr, m, s, "none") for lyr in layers)
    return layer + (sum(mg.logits_bytes(s, m)) if last else 0.0)


def _stage(s: Scenario, m: ModelSpec, gpu: GpuSpec | None, rank: int) -> Estimate:
    first, last = rank == 0, rank == s.pp - 1
    e = Estimate()
    st = mg.rank_state(s, m, gpu, first=first, last=last)
    e.weights, e.optimizer = st.weights, st.optimizer
    layers = m.layers[:mg.stage_layers(s, m, first=first, last=last)]
    redone = mg.recomputed_layers(s, len(layers))  # the first ones of the stage (recompute_method block)
    rest = "none" if s.grad_checkpointing == "full" else s.grad_checkpointing
    per_mb = sum(mg.layer_bytes(layer, m, s, "full" if i < redone else rest) for i, layer in enumerate(layers))
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
                                 ("fp8 weight transposes (Transformer Engine)" if mg.keeps_fp8_transpose(s, gpu) else
                                  "fp8 weight transpose, one at a time (Transformer Engine)"): st.fp8_copies,
                                 "CUDA graph pool (validation capture)": _validation_pool(s, m, layers, last)
                                 }.items() if v}
    base = e.weights + e.optimizer + e.gradients + sum(e.other.values())
    # the state is allocated once, in whole buffers (the DDP's contiguous param and fp32 grad buffers,
    # megatron/core/distributed/param_and_grad_buffer.py; the optimizer's fp32 shards): the caching allocator's
    # slack grows with the blocks that churn every micro-batch, the activations
    e.slack = oh.ALLOCATOR_SLACK_TRAIN * e.activations / (base + e.activations)
    e.phases = {k: (v + base) / GIB for k, v in phases.items()}
    # the model's trainable parameters (a checkpoint's), not counting the TP ranks' whole copies of MLA's
    # down-projections twice
    e.extra["params_trainable"] = int((st.trainable - (st.copies if s.method == "full" else 0.0)) * s.tp * s.pp)
    stage = "" if s.pp == 1 else f" ({_NAMES[min(rank, 1) if not last else 2]}, {len(layers)} layers" + \
        (", embedding and loss counted as layers in the split)" if mg.embedding_in_split(s, m) else ")")
    e.assumptions += [
        f"state per rank{stage}: {st.dense / 1e9:.3g}B dense + {st.embedding / 1e9:.3g}B embedding/output + "
        f"{st.experts / 1e9:.3g}B expert parameters; 2 B weights + 4 B fp32 gradients"
        + (f" + 12 B master/Adam over {s.dp * s.cp} DP x CP ranks (distributed optimizer)"
           if sharding_for(s).shards_optimizer(s) else " + optimizer states unsharded"),
        f"activations{stage}: {per_mb / GIB:.2f} GiB per micro-batch of {mg.tokens(s):,} tokens/rank "
        f"(seq_len / cp) x {flight:.3g} in flight ({s.grad_checkpointing} recompute"
        + (f" of the first {redone} of {len(layers)} layers, recompute_method block)" if s.recompute_layers else ")"),
        *stack_for(s).notes(s), *mg.fp8_words(s, gpu)]
    return e
