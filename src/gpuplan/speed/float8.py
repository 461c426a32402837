"""The memory traffic of fp8 training's casts, by the library that runs them: torchao (torchtitan) and Transformer
Engine (Megatron-Core, NeMo). The GEMMs themselves are :func:`~gpuplan.speed.gemm.gemm_time_s`'s, one mechanism for
both (fast accumulation in the forward, a split accumulator in the backward: :func:`~gpuplan.speed.gemm.
accumulation_share`).

torchao's float8 training as torchtitan runs it (``precision: fp8-mixed``): every decoder
linear swapped for ``Float8Linear`` with dynamic tensorwise scaling (torchtitan ``float8.py`` ``Float8Handler``; the
output head is left in bf16, ``module_filter_fn``), compiled, its weights gathered in float8 by FSDP2
(``enable_fsdp_float8_all_gather`` and ``precompute_float8_dynamic_scale_for_fsdp``, the launch torchtitan's
``docs/float8.md`` gives and gpuplan's launcher writes).

Per linear ``[M x K] @ [K x N]`` and micro-step (pytorch/ao@eab345c ``torchao/float8/float8_linear.py``: the
forward casts the input and the weight to e4m3, ``NoopFwToFloat8BwDynamic`` casts grad_output to e5m2 in the
backward, and the three ``torch._scaled_mm`` GEMMs take them; bytes per element from
:data:`~gpuplan.overheads.TORCHAO_FLOAT8_CAST_BYTES`):

- the input, ``M x K``: its max(abs) fused into the kernel that produced it; compiled, the forward writes only the
  row-major copy its GEMM takes and the backward writes the column-major one for the weight gradient, each pass
  reading the bf16 input once for every projection that reads it (q, k and v; gate and up share the read and the
  max(abs), each writing its own copies). Checked on torch 2.13's Inductor with torchao 0.17
  (``bench/float8_cse_check.py``): a compiled RMSNorm feeding three ``Float8Linear`` computes one max(abs), fused
  into the norm's kernel, and one kernel writes the three row-major fp8 copies of the forward, one more the three
  column-major ones of the backward (bench/results/train_s28.md); so no kernel writes both layouts of an input and
  torchao's extra read for one that does (pytorch/pytorch#130015, #133242) is not paid there;
- grad_output, ``M x N``: its max(abs) fused, cast and written in both layouts in one backward kernel, which pays
  that extra read;
- the weight, ``K x N``: gathered in fp8, only copied to the other layout for grad_input; without FSDP (one rank)
  its max(abs) and cast run in every forward;
- what checkpointing runs again: the row-major copy of each re-run GEMM's input, written by the backward's kernel
  beside the column-major one (both layouts: the extra read). torchtitan's per-op policy (``_save_list``) keeps
  every other ``mm``'s output and ``max``'s result, not the fp8 tensors: compiled under it
  (``bench/float8_cse_check.py --sac``), the backward re-runs the forward GEMMs whose outputs it did not keep and
  casts their inputs' row-major copies again, the max(abs) not.

Under tensor parallelism each rank casts its own shard (torchao's ``Float8ColwiseParallel`` casts the sequence
shard before the fp8 all-gather), so the bytes divide by ``tp``. Left out: the few tiny kernels torchao's roofline
also charges (the second stage of each reduction, ~2 us each) and each rank's cast of its fp32 shard to fp8 before
every gather (4 B read, 1 B written per shard element: 3 % of these bytes for Llama-3.1-8B over 8 ranks).
"""

from __future__ import annotations

from collections.abc import Mapping

from .. import overheads as oh
from ..model.layers import Layer
from ..model.spec import ModelSpec
from ..tensors.activations import INPUT_OF

# The inputs a norm writes (Transformer Engine's LayerNormLinear casts them to fp8 in the norm's own kernel)
NORMED_INPUTS = frozenset({"attn_in", "mlp_in", "q_latent", "kv_latent"})


def torchao_cast_bytes(m: ModelSpec, tokens: float, *, tp: int = 1, layers: float = 1.0, again: float = 0.0,
                       rerun: Mapping[Layer, frozenset[str]] | None = None, fp8_weights: bool = True) -> float:
    """Bytes one micro-step of ``tokens`` tokens moves casting to and between float8 on one rank holding the share
    ``layers`` of the decoder (``1/pp``), with ``again`` of every linear's forward re-run by checkpointing, or, under
    a selective policy, the linears ``rerun`` names per layer kind; ``fp8_weights``: FSDP2 gathers the weights in
    fp8 (else each forward casts them). An input is read once per pass for every projection that reads it, each
    writing its own copy: row-major in the forward, column-major in the backward, where a re-run GEMM's row-major
    copy is written beside it (the module docstring)."""
    b = oh.TORCHAO_FLOAT8_CAST_BYTES
    total = 0.0
    for layer, count in m.layer_kinds():
        seen: set[tuple[str, str]] = set()
        for lin in layer.linears:
            routed = lin.group == "experts" and lin.count > 1
            rows = tokens * (layer.experts_per_token if routed else lin.count)
            x, dy, w = rows * lin.in_features, rows * lin.out_features, lin.weight_params
            key = (INPUT_OF.get(lin.name, lin.name), lin.group)
            shared = key in seen and not routed  # another projection already read this input for its cast
            seen.add(key)
            redo = again if rerun is None else float(lin.name in rerun.get(layer, frozenset()))
            inputs = (2 * b["read"] * (not shared) + 2 * b["write"] + redo * (b["write"] + b["both layouts"])) * x
            if fp8_weights:
                backward = b["fused amax"] * dy + b["layout copy"] * w
            else:
                inputs, backward = inputs + (1 + redo) * b["own amax"] * w, b["fused amax"] * dy
            total += count * (inputs + backward)
    return total * layers / tp


def te_cast_bytes(m: ModelSpec, tokens: float, *, tp: int = 1, layers: float = 1.0, again: float = 0.0,
                  weight_grads: bool = True, weight_transposes: bool = False) -> float:
    """Bytes one micro-step of ``tokens`` tokens moves casting to and between fp8 (1 B an element) and bf16 in
    Transformer Engine's linears as Megatron-Core builds them
    (``TELayerNormColumnParallelLinear`` for the projections that read a norm, ``TERowParallelLinear`` for the output
    projections; Transformer Engine 1.x ``pytorch/module/layernorm_linear.py`` and ``linear.py``), on one rank
    holding the share ``layers`` of the decoder, with ``again`` of the forward's casts re-run by checkpointing:

    - an input a norm writes (``attn_in``, ``mlp_in``, MLA's latents; once for the q, k, v or gate and up
      projections that share it): the norm kernel writes it in fp8 (``layernorm_fwd_fp8``, no pass of its own), the
      backward transposes it for wgrad (``tex.fp8_transpose(ln_out_total)``: 2 B per element) over the
      sequence-parallel gather (all ``tokens`` rows on every rank);
    - any other input (attention's output, the MLP's activation, an expert's tokens): read in bf16 and written in
      both layouts (``fp8_cast_transpose_fused``: 4 B), its ``1/tp`` shard, in every forward and re-run; without
      weight gradients only the row-major copy (3 B);
    - every grad_output: cast and transposed the same way in the backward (``fp8_cast_transpose_bgrad_fused``),
      ``1/tp`` of it (without weight gradients, cast only);
    - the weights: none per micro-step (fp8 primary weights, ``fp8_param_gather``; or the cast kept over a step's
      micro-batches, ``is_first_microbatch``), except with ``weight_transposes``: where no transpose is kept
      (``fp8_transpose_cache`` false), each backward's dgrad transposes its fp8 weight again
      (``Float8Tensor.transpose_2d`` into a fresh buffer: 2 B per weight element, its ``1/tp`` shard; routed
      experts' left out). Routers stay bf16.

    Left out: sequence parallelism's gathered grad_output of the row-parallel projections is cast on each rank's
    shard and transposed after the gather (about ``tp`` times the ``1/tp`` share above for their transposes), and
    the amax reductions and scale updates (a few small kernels per step)."""
    total = 0.0
    for layer, count in m.layer_kinds():
        forward = backward = 0.0
        seen: set[tuple[str, str]] = set()
        for lin in layer.linears:
            if lin.group == "router":
                continue
            routed = lin.group == "experts" and lin.count > 1
            rows = tokens * (layer.experts_per_token if routed else lin.count)
            key = (INPUT_OF.get(lin.name, lin.name), lin.group)
            if key not in seen:  # the projections that share an input cast it once
                seen.add(key)
                if key[0] in NORMED_INPUTS and not routed:
                    backward += 2 * tokens * lin.in_features * tp * weight_grads
                else:
                    forward += (3 + weight_grads) * rows * lin.in_features
            backward += (3 + weight_grads) * rows * lin.out_features
            backward += 2 * lin.weight_params * (weight_transposes and lin.group != "experts")
        total += count * ((1 + again) * forward + backward)
    return total * layers / tp
