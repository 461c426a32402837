"""Peak GPU memory of one training step: persistent state + the maximum over phases, per GPU.

Training peak = persistent (weights, optimizer states, sharding buffers) + max over forward, backward and optimizer
step of what lives then (saved activations, gradients, temporaries), not their sum (formulas.md section 9). The
stack's profile (:mod:`gpuplan.stacks`) says what its code saves and what its loss materializes; the sharding's
profile (:mod:`gpuplan.sharding`) says what the model state costs per GPU and which buffers it gathers. The layer
rules are in :mod:`gpuplan.tensors.activations`.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from ..errors import GpuplanError
from ..model.spec import ModelSpec
from ..scenario import Scenario
from ..sharding import sharding_for
from ..stacks import State, stack_for
from ..stacks.base import head_inputs
from ..tensors import activations as act
from ..tensors.breakdown import GIB, Estimate
from ..tensors.state import attention_kernel, lora_targets, optimizer_step_temporaries, stepped_tensors
from . import dpo

if TYPE_CHECKING:
    from ..hardware import GpuSpec


def training_memory(s: Scenario, m: ModelSpec, capacity_gib: float | None = None,
                    outside_gib: float = 0.0, cuda: bool = True, gpu: GpuSpec | None = None) -> Estimate:
    """The peak of one training step of ``s`` per GPU; ``capacity_gib`` (the card's usable memory) and
    ``outside_gib`` (what lives outside PyTorch's allocator: the CUDA context) only matter to stacks that size
    buffers from the memory the driver reports free (Unsloth's fused loss: :func:`_free_at_loss`); ``cuda``:
    False on Apple silicon, whose Metal backend has no cuBLAS workspace; ``gpu``: the plan's card, which
    Megatron's fp8 weights read (whether their transposes are kept)."""
    stack, sharding = stack_for(s), sharding_for(s)
    if stack.own_memory:
        from .megatron import megatron_memory  # Megatron's layout rules load for its plans only

        return megatron_memory(s, m, gpu)
    s = dpo.pair_rows(s)  # DPO: chosen and rejected are two rows of one batch
    e = _checked(s, m)
    pp = s.pp
    stage_layers = m.layers[:math.ceil(m.num_layers / pp)]  # the first stage holds the most micro-batches
    shard = 1 / (s.tp * pp)

    st = _model_state(e, s, m, stack, sharding)
    grads_total = st.gradients
    # -- activations: what each layer keeps under the checkpointing policy, on the GPU
    mixed = s.precision.endswith("-mixed")
    autocast_fp32 = mixed and s.method == "full" and sharding.autocasts_fp32_weights
    setup, kinds, kept, kept_casts, recomputed, casts = _kept(s, m, stack, autocast_fp32, stage_layers)
    resident, cast_cache = _offloaded(s, stack, e, kept, kept_casts), _cast_cache(s, stack, casts, kept_casts)
    in_flight = min(pp, s.grad_accum_steps) if pp > 1 else 1  # 1F1B: first stage holds pp micro-batches
    A_all = in_flight * sum(resident)
    lm_head_cast = mixed and (autocast_fp32 or stack.head_upcast(s))
    buffers, extras = sharding.buffers(s, m, stack, st), stack.extras(s, m, shard, cuda)
    other = {**buffers, **extras, **dpo.reference_model(s, st, stack, sharding.master_partition)}
    # gathered layers and a dequantized 4-bit weight exist while a decoder layer runs, not at the loss
    layer_only = {**sharding.layer_buffers(s, stack, buffers), **stack.layer_buffers(extras)}
    persistent_other = sum(other.values()) - sum(layer_only.values())
    L = sum(layer_only.values())
    free = _free_at_loss(s, m, setup, e.weights + persistent_other + L + A_all, capacity_gib, outside_gib,
                         sharding.slack)
    loss = dpo.loss_of(stack, s, m, setup, lm_head_cast, free) if pp == 1 else None
    if loss and loss.note:
        e.assumptions.append(loss.note)
    lsaved, lfwd, lbwd, held = (loss.saved + head_inputs(s, m, setup), loss.forward, loss.backward,
                                loss.held) if loss else (0.0, 0.0, 0.0, 0.0)
    fwd_kinds = {layer: act.forward_transient(layer, m, setup) for layer in kinds}
    bwd_kinds = {layer: stack.backward_transient(layer, m, setup) for layer in kinds}
    fwd_tmp = max(fwd_kinds[layer] for layer in stage_layers)
    grads_prev = grads_total if s.grad_accum_steps > 1 else 0.0

    # forward: all kept activations (and autocast's cached weight copies) + the last layer's transients, or the
    # logits and loss at the end (and the output the loop keeps); each phase's peak is at a decoder layer
    # (``at_layer``: the layer-only buffers alive) or not
    fwd_layer = grads_prev + A_all + cast_cache + fwd_tmp + L
    fwd_loss = grads_prev + A_all + cast_cache + lsaved + lfwd + held
    loss_point, layer_peak, cached = _backward_peak(s, stage_layers, resident, recomputed, fwd_kinds, bwd_kinds,
                                                    in_flight=in_flight, grads_total=grads_total,
                                                    grads_prev=grads_prev, loss_saved=lsaved, loss_backward=lbwd,
                                                    held=held)
    loss_point = max(loss_point, _tied_gradients(s, m, st, shard, grads_total) + held)
    step = _step_peak(s, m, sharding, st, shard) + held
    phases = {"forward": max(fwd_layer, fwd_loss), "backward": max(loss_point, layer_peak + L)}
    at_layer = {"forward": fwd_layer >= fwd_loss, "backward": layer_peak + L >= loss_point, "optimizer_step": False}
    if loss and (ref := dpo.reference_forward(stack, s, m, setup, layer=fwd_tmp + L, head=loss)):  # after the policy's
        phases["reference_forward"], at_layer["reference_forward"] = fwd_loss - lfwd + ref, True
    if not s.optimizer_in_backward:
        phases["optimizer_step"] = step
    e.peak_phase = max(phases, key=phases.get)
    base_state = e.weights + e.optimizer + persistent_other
    e.phases = {k: (v + base_state) / GIB for k, v in phases.items()}
    peak = phases[e.peak_phase]
    # what the caching allocator holds at most: the layer-only buffers' blocks stay cached between layers (FSDP
    # frees a resharded layer into it), and the loss's blocks, freed by its backward, while the last layer asks for
    # its own (:func:`_backward_peak`)
    before = max(fwd_loss, fwd_layer - L, loss_point, layer_peak, step if "optimizer_step" in phases else 0.0)
    held_blocks = max(before, cached) + L - peak
    _parts_at_peak(e, peak, other, layer_only, at_layer=at_layer[e.peak_phase], grads_total=grads_total,
                   grads_prev=grads_prev, held=held, activations=A_all)
    e.slack = sharding.slack
    e.fragmentation = sharding.fragmentation(s, m, stack, e) + max(0.0, held_blocks) * (1 + e.slack)
    _init_blocks(e, s, m, stack)
    e.extra["params_trainable"] = st.trainable
    e.assumptions += stack.notes(s)
    return e


def _tied_gradients(s: Scenario, m: ModelSpec, st: State, shard: float, grads_total: float) -> float:
    """Tied embeddings under full fine-tuning: the lm_head's gradient waits in autograd's input buffer until the
    embedding's arrives, and the two are summed out of place (what the fake-tensor simulation runs); 0 otherwise."""
    if not (s.method == "full" and m.tie_word_embeddings and s.grad_accum_steps == 1):
        return 0.0
    tied = m.vocab_size * m.embedding_dim * shard * grads_total / max(st.trainable * shard, 1)
    return (tied if s.optimizer_in_backward else grads_total) + 2 * tied


def _checked(s: Scenario, m: ModelSpec) -> Estimate:
    """A new estimate, with the LoRA targets checked and the eager-attention fallback said."""
    e = Estimate()
    if attention_kernel(s, m) != s.attention:
        e.assumptions.append(f"{m.family} runs eager attention in transformers (no SDPA support): the s x s "
                             "scores are materialized; attention flash (FlashAttention-2) avoids them")
    if s.method != "full":
        _check_targets(s, m)
    return e


def _parts_at_peak(e: Estimate, peak: float, other: dict[str, float], layer_only: dict[str, float], *,
                   at_layer: bool, grads_total: float, grads_prev: float, held: float, activations: float) -> None:
    """Split the peak phase's bytes (``peak``, beyond the weights and optimizer states) into the estimate's
    parts: the gradients live then, the activations, the other buffers (those alive only while a decoder layer
    runs counted when the peak is at one: ``at_layer``), the optimizer step's temporaries, the output the loop
    keeps (``held``)."""
    if not at_layer:
        other = {k: v - layer_only.get(k, 0.0) for k, v in other.items()}
    if e.peak_phase == "optimizer_step":
        e.gradients = grads_total
        e.activations = 0.0
        other["optimizer step temporaries"] = peak - grads_total - held
        if held:
            other["model output kept by the loop (logits)"] = held
    else:
        forward = e.peak_phase in ("forward", "reference_forward")
        live_grads = grads_prev if forward else min(grads_total, max(peak - activations, grads_prev))
        e.gradients = live_grads
        e.activations = peak - live_grads - (sum(layer_only.values()) if at_layer else 0.0)
    e.other = {k: v for k, v in other.items() if v > 0}


def _init_blocks(e: Estimate, s: Scenario, m: ModelSpec, stack) -> None:
    """The blocks model init leaves reserved where the stack's allocations are replayed on the caching allocator
    (:meth:`gpuplan.stacks.base.Stack.replayed_reserved`): the peak counters are reset after init, the blocks it
    cached are not given back."""
    replayed, at_init = stack.replayed_reserved(s, m)
    if replayed:
        e.fragmentation += max(0.0, replayed - e.reserved)
        e.assumptions.append(f"model init leaves {at_init / GIB:.2f} GiB reserved and the step takes it to "
                             f"{replayed / GIB:.2f} GiB ({stack.name}'s allocations replayed on the caching "
                             "allocator); training's reserved keeps init's blocks")


def _free_at_loss(s: Scenario, m: ModelSpec, setup, before: float, capacity_gib: float | None,
                  outside_gib: float, slack: float) -> float | None:
    """What ``torch.cuda.mem_get_info`` reports free when the loss first runs (None without a card): the card
    less the memory outside the allocator and what the allocator reserved for the weights, the buffers, the
    kept activations and the head's saved inputs (``before`` + :func:`head_inputs`, with the allocator's slack).
    That is the first step's forward, before the optimizer has made its states or any gradient exists: unsloth-zoo
    reads the free memory once and caches the chunk size (``functools.cache`` on ``_get_chunk_multiplier``)."""
    if capacity_gib is None:
        return None
    allocated = before + head_inputs(s, m, setup)
    return (capacity_gib - outside_gib) * GIB - allocated * (1 + slack)


def _model_state(e: Estimate, s: Scenario, m: ModelSpec, stack, sharding) -> State:
    """Weights, gradients and optimizer states per GPU as the sharding holds them (offloaded parts on the CPU)."""
    st = sharding.state(s, m, stack)
    sharding.offload(s, st)
    e.weights, e.gradients, e.optimizer, e.cpu = st.weights, st.gradients, st.optimizer, st.cpu
    if s.optimizer == "paged-adamw-8bit" and e.optimizer:
        # bitsandbytes' paged optimizers allocate their states with cudaMallocManaged (functional.get_paged):
        # outside PyTorch's allocator, so torch.cuda.max_memory_* never counts them; nvidia-smi does, until the
        # driver pages them to the CPU under memory pressure
        e.managed["paged optimizer states (CUDA managed memory)"] = e.optimizer
        e.optimizer = 0.0
    e.assumptions += st.assumptions
    return st


def _backward_peak(s: Scenario, stage_layers: list, resident: list[float], recomputed: list[float],
                   fwd_kinds: dict, bwd_kinds: dict, *, in_flight: int, grads_total: float, grads_prev: float,
                   loss_saved: float, loss_backward: float, held: float) -> tuple[float, float, float]:
    """The backward's peak at the loss (the loss's saved tensors and its backward's transients), the peak over the
    decoder layers from the last (activations still kept + gradients made so far + the layer's transients, a
    checkpointed layer's recompute among them; the layer-only buffers not included), and what the caching allocator
    holds at the last layer: its live tensors and the blocks of the loss's saved tensors. Those died in the loss's
    own backward (autograd frees a node's saved tensors once it has run), so they count at the reserved level only:
    torch's allocated counters do not see them (torchtune's Llama 3.1 table), reserved memory keeps them
    (Answer.AI's fsdp_qlora rows measure 4-7 % less without them)."""
    n = len(stage_layers)
    g_layer = (grads_total - grads_prev) / max(n, 1) if s.grad_accum_steps == 1 else 0.0
    at_loss = grads_prev + in_flight * sum(resident) + loss_saved + loss_backward + held
    backward, remaining, cached = 0.0, in_flight * sum(resident), 0.0
    for j in range(n - 1, -1, -1):
        layer = stage_layers[j]
        # a checkpointed layer recomputes its saved set from what it kept (counted in ``remaining``); the
        # recompute's own temporaries are gone before the layer's backward makes its gradients
        transient = bwd_kinds[layer]
        if recomputed[j]:
            transient = max(transient, fwd_kinds[layer])
        made = g_layer if s.optimizer_in_backward else g_layer * (n - j)  # stepped and freed as they come
        live = grads_prev + remaining + made + recomputed[j] + transient + held
        backward = max(backward, live)
        if j == n - 1:
            cached = live + loss_saved
        remaining -= in_flight * resident[j]
    return at_loss, backward, cached


def _step_peak(s: Scenario, m: ModelSpec, sharding, st: State, shard: float) -> float:
    """The optimizer step: the gradients, and the step's temporaries over this rank's share (its TP/PP shard and
    its ZeRO / FSDP partition, of the whole group and of each tensor); with offload, the step runs on the CPU."""
    if s.offload != "none":
        return st.gradients
    local = shard / sharding.shards(s)[2]  # each rank steps its share of every tensor (FSDP's per-parameter shards)
    local_trainable = st.trainable * local
    stepped = [(int(n * local), int(before * local)) for n, before in stepped_tensors(s, m)]
    return st.gradients + optimizer_step_temporaries(s, local_trainable, st.state_bytes, stepped) + st.step_extra


def _kept(s: Scenario, m: ModelSpec, stack, autocast_fp32: bool, stage_layers):
    """The layers' setup, what each layer kind saves, per layer of the stage what the checkpointing policy
    keeps (:func:`_checkpointed`): saved tensors, autocast's 16-bit weight copies (kept when a layer is not
    checkpointed) and what a checkpointed layer recomputes; and per layer its 16-bit weight copies under autocast
    over fp32 weights (0 otherwise)."""
    setup = stack.setup(s, m, autocast_fp32)
    kinds = {layer: stack.saved(layer, m, setup) for layer, _ in m.layer_kinds()}  # layers repeat
    saved = [kinds[layer] for layer in stage_layers]
    if autocast_fp32:  # bf16 copies of the weights, cached by autocast and saved for the backward
        casts = [2 * sum(lin.weight_params for lin in layer.linears) / s.tp for layer in stage_layers]
    else:
        casts = [0.0] * len(stage_layers)
    return (setup, kinds, *_checkpointed(s, m, stack, setup, stage_layers, saved, casts), casts)


def _cast_cache(s: Scenario, stack, casts: list[float], kept_casts: list[float]) -> float:
    """The 16-bit weight copies autocast's cache holds in the forward beyond those autograd saves on the GPU.
    PyTorch caches the cast of an fp32 leaf that requires grad until the outermost autocast region exits
    (pytorch ``aten/src/ATen/autocast_mode.cpp`` ``cached_cast``, ``clear_autocast_cache``), whatever the
    checkpointing. The forward and the loss run inside that region and the backward outside it (torchtitan
    ``train.py`` ``train_step``; accelerate's ``prepare_model`` wraps the model's forward, which computes
    transformers' loss), so every layer's copies live to the end of the loss and none into the backward: those of
    checkpointed layers, and those of layers whose saved tensors are offloaded, add to the forward only. Compiled,
    the casts are ops of the graph (dynamo traces autocast) and the eager cache holds none."""
    if s.compile:
        return 0.0
    stay = stack.offload_resident_layers if s.activation_offload else len(kept_casts)
    return sum(casts) - (sum(kept_casts[-stay:]) if stay else 0.0)


def offloaded_activation_bytes(s: Scenario, m: ModelSpec) -> float:
    """Bytes of saved activations one micro-step moves to pinned CPU memory in the forward and brings back in the
    backward under ``activation_offload`` (what the stage's layers keep, less the stack's resident last layers:
    :func:`_offloaded`); 0 without it. The speed model prices their PCIe round trip."""
    if not s.activation_offload:
        return 0.0
    stack, sharding = stack_for(s), sharding_for(s)
    autocast_fp32 = s.precision.endswith("-mixed") and s.method == "full" and sharding.autocasts_fp32_weights
    stage_layers = m.layers[:math.ceil(m.num_layers / s.pp)]
    _, _, kept, kept_casts, _, _ = _kept(s, m, stack, autocast_fp32, stage_layers)
    resident = [k + c for k, c in zip(kept, kept_casts, strict=True)]
    stay = stack.offload_resident_layers
    return sum(resident[:-stay]) if len(resident) > stay else 0.0


def _check_targets(s: Scenario, m: ModelSpec) -> None:
    targets = lora_targets(s, m)
    known = {lin.name for layer in m.layers for lin in layer.linears} | {lin.name for lin in m.tower_linears}
    unknown = targets - known
    if unknown:
        names = sorted(known)
        raise GpuplanError(f"lora_targets {sorted(unknown)} are not modules of {m.name}; "
                           f"its linear layers are: {', '.join(names)}")


def _checkpointed(s: Scenario, m: ModelSpec, stack, setup, layers, saved, casts):
    """Per layer: bytes kept to the backward, autocast copies kept, and bytes a checkpointed layer recomputes
    (its saved set less what it kept). ``full`` keeps each layer's input; ``checkpoint_every`` N keeps the input
    of one layer in N and everything of the others; ``selective`` is the stack's own policy. A layer run several
    times with autograd on (:attr:`~gpuplan.model.layers.Layer.grad_runs`) keeps that many sets: transformers
    checkpoints every call of a ``GradientCheckpointingLayer`` (``modeling_layers.py``)."""
    kept, kept_casts, recomputed = [], [], []
    for i, layer in enumerate(layers):
        if s.grad_checkpointing == "full" and (i + 1) % s.checkpoint_every == 0:
            keep, keep_cast = act.boundary_bytes(m, setup), 0.0
        elif s.grad_checkpointing == "selective":
            keep, keep_cast = stack.selective(layer, m, setup), 0.0
        else:
            keep, keep_cast = saved[i], casts[i]
        kept.append(keep * layer.grad_runs)  # each run with autograd on keeps its own (HRM-Text's cycles)
        kept_casts.append(keep_cast)  # autocast casts a weight once per forward, however often it runs
        recomputed.append(saved[i] + casts[i] - keep if keep != saved[i] else 0.0)
    return kept, kept_casts, recomputed


def _offloaded(s: Scenario, stack, e: Estimate, kept: list[float], kept_casts: list[float]) -> list[float]:
    """What each layer keeps on the GPU. With activation offloading the stack's resident layers (the last ones
    of the forward, which its backward needs first) stay, the rest is in pinned CPU memory."""
    resident = [k + c for k, c in zip(kept, kept_casts, strict=True)]
    if not s.activation_offload:
        return resident
    stay = stack.offload_resident_layers
    moved = sum(resident[:-stay]) if len(resident) > stay else 0.0
    e.cpu += moved * s.pp
    e.assumptions.append(f"activation offloading: {moved / GIB:.2f} GiB of saved activations in pinned CPU memory, "
                         f"the last {min(stay, len(resident))} layers' on the GPU ({stack.name})")
    return [0.0] * max(len(resident) - stay, 0) + resident[-stay:]
