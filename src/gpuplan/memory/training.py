"""Peak GPU memory of one training step: persistent state + the maximum over phases, per GPU.

Training peak = persistent (weights, optimizer states, DDP/ZeRO buffers) + max over forward, backward and
optimizer step of what lives then (saved activations, gradients, temporaries), not their sum
(formulas.md section 9). Activations are in :mod:`gpuplan.memory.activations`.
"""

from __future__ import annotations

import math

from .. import overheads as oh
from ..errors import GpuplanError
from ..model.quant import make_format
from ..model.spec import ModelSpec
from ..scenario import Scenario
from . import activations as act
from .breakdown import GIB, Estimate
from .state import (
    adapts_experts,
    attention_kernel,
    lora_params,
    lora_targets,
    optimizer_state_bytes,
    optimizer_step_temporaries,
    weight_format,
)


def training_memory(s: Scenario, m: ModelSpec) -> Estimate:
    e = Estimate()
    if attention_kernel(s, m) != s.attention:
        e.assumptions.append(f"{m.family} runs eager attention in transformers (no SDPA support): the s x s "
                             "scores are materialized; attention flash (FlashAttention-2) avoids them")
    strategy, N, t, pp = s.resolved_strategy, s.dp, s.tp, s.pp
    mixed = s.precision.endswith("-mixed")
    c = s.compute_bytes
    deepspeed = strategy.startswith("zero")
    autocast_fp32 = mixed and s.method == "full" and not deepspeed
    P = m.params_total
    # layers on the busiest pipeline stage (the first holds embeddings and the most micro-batches in flight)
    per_stage = math.ceil(m.num_layers / pp)
    stage_layers = m.layers[:per_stage]
    shard = 1 / (t * pp)  # model state split by TP and PP (vocab-parallel embeddings included)

    if s.method == "full":
        trainable = P
        if deepspeed and mixed:
            e.assumptions.append(f"{strategy.upper()} as DeepSpeed runs it: bf16 working weights and gradients, "
                                 "fp32 master weights and optimizer states sharded; the fp32 gradient partition "
                                 "exists during the step (ZeRO paper section 5; DeepSpeed stage_1_and_2.py, stage3.py)")
            w16, g16 = 2 * P * shard, 2 * P * shard
            if strategy in ("zero2", "zero3"):
                g16 /= N
            if strategy == "zero3":
                w16 /= N
            e.weights = w16 + 4 * P * shard / N  # + fp32 master
            e.gradients = g16
            state_bytes = 4
            e.optimizer = optimizer_state_bytes(s, m, trainable, state_bytes) * shard / N
            # fp32 copy of the gradient partition, made per sub-group (stage3 sub_group_size 1e9) at the step
            step_fp32_grads = 4 * min(P * shard / N, 1e9 if strategy == "zero3" else P)
        elif deepspeed:  # one dtype throughout (bf16-true, fp32): FSDP / ZeRO shard weights, grads and states
            wbytes = 4 if s.precision == "fp32" else 2
            state_bytes = wbytes
            e.weights = wbytes * P * shard / (N if strategy == "zero3" else 1)
            e.gradients = wbytes * P * shard / (N if strategy in ("zero2", "zero3") else 1)
            e.optimizer = optimizer_state_bytes(s, m, trainable, state_bytes) * shard / N
            step_fp32_grads = 0.0
            e.assumptions.append(f"{strategy.upper()} in {s.precision}: weights, gradients and optimizer states "
                                 f"in one dtype, sharded over {N} ranks")
        else:
            wbytes = 4 if (mixed or s.precision == "fp32") else 2
            state_bytes = wbytes
            e.weights = wbytes * P * shard
            e.gradients = wbytes * P * shard
            e.optimizer = optimizer_state_bytes(s, m, trainable, state_bytes) * shard
            if mixed:
                e.assumptions.append(f"{s.precision}: fp32 weights, gradients and optimizer states with "
                                     "torch autocast (16 bytes/parameter with AdamW)")
        grads_total = e.gradients
    else:
        targets = lora_targets(s, m)
        unknown = targets - {lin.name for layer in m.layers for lin in layer.linears}
        if unknown:
            names = sorted({lin.name for layer in m.layers for lin in layer.linears})
            raise GpuplanError(f"lora_targets {sorted(unknown)} are not modules of {m.name}; "
                               f"its linear layers are: {', '.join(names)}")
        trainable = lora_params(m, targets, s.lora_rank, experts=adapts_experts(s, m))
        adapter_bytes = 4 if (mixed or s.precision == "fp32") else 2
        state_bytes = adapter_bytes
        fmt, skip = weight_format(s, m) if s.method == "qlora" else (make_format("none", high_bytes=c), ("router",))
        base = sum(m.weight_bytes(fmt, skip=skip).values())
        if s.method == "qlora" and fmt.name in ("nf4", "fp4") and s.qlora_fp32_upcast:
            # peft's prepare_model_for_kbit_training casts every non-4-bit parameter of a bitsandbytes model
            # to fp32 (it leaves GPTQ/AWQ models alone)
            high_params = P - sum(count * sum(lin.weight_params for lin in layer.linears if lin.group not in skip)
                                  for layer, count in m.layer_kinds())
            base += high_params * (4 - c)
            e.assumptions.append(f"QLoRA: {fmt.name} base (blocksize 64, double quantization), other parameters "
                                 "in fp32 (peft prepare_model_for_kbit_training)")
        elif s.method == "qlora":
            e.assumptions.append(f"QLoRA on a {fmt.name} base; embeddings, lm_head and norms in {c}-byte precision")
        base_shard = shard / (N if strategy == "zero3" else 1)
        e.weights = (base + adapter_bytes * trainable) * base_shard
        opt_shard = shard / (N if deepspeed else 1)
        e.optimizer = optimizer_state_bytes(s, m, trainable, state_bytes) * opt_shard
        e.gradients = adapter_bytes * trainable * shard / (N if strategy in ("zero2", "zero3") else 1)
        grads_total = e.gradients
        e.assumptions.append(f"LoRA rank {s.lora_rank} on {len(targets)} module kinds: {trainable:,} trainable "
                             f"parameters in {'fp32' if adapter_bytes == 4 else 'the compute dtype'}")

    if s.offload != "none":
        e.cpu += e.optimizer
        e.optimizer = 0.0
        if deepspeed or s.method != "full":
            e.cpu += e.gradients if s.method == "full" else 0
        if s.offload == "optimizer+params":
            e.cpu += e.weights
            e.weights = 0.0
        e.assumptions.append(f"offload {s.offload}: those states live in CPU memory and the step runs there")

    # -- activations
    bnb_4bit = s.method == "qlora" and (s.quant or "nf4") in ("nf4", "fp4")
    setup = act.ActivationSetup(
        tokens=s.micro_batch_size * s.seq_len, batch=s.micro_batch_size, seq=s.seq_len, compute_bytes=c,
        autocast_fp32_weights=autocast_fp32, base_trainable=s.method == "full",
        lora_targets=lora_targets(s, m) if s.method != "full" else frozenset(), attention=attention_kernel(s, m), tp=t,
        recompute_attention=s.grad_checkpointing == "selective",
        lora_rank=s.lora_rank if s.method != "full" else 0, lora_dropout=s.lora_dropout,
        lora_input_casts=mixed and s.method != "full", lora_experts=adapts_experts(s, m),
        base_4bit=bnb_4bit, fp32_residual_4bit=bnb_4bit and mixed and s.qlora_fp32_upcast)
    kinds = {layer: act.saved_bytes(layer, m, setup) for layer, _ in m.layer_kinds()}  # layers repeat
    saved = [kinds[layer] for layer in stage_layers]
    if autocast_fp32:  # bf16 copies of the weights, cached by autocast and saved for the backward
        casts = [2 * sum(lin.weight_params for lin in layer.linears) * shard * pp for layer in stage_layers]
    else:
        casts = [0.0] * len(stage_layers)
    if s.grad_checkpointing == "full":
        kept = [act.boundary_bytes(m, setup)] * len(stage_layers)
        kept_casts = [0.0] * len(stage_layers)
    else:
        kept, kept_casts = saved, casts
    in_flight = min(pp, s.grad_accum_steps) if pp > 1 else 1  # 1F1B: first stage holds pp micro-batches
    A_all = in_flight * (sum(kept) + sum(kept_casts))
    last_stage = pp == 1  # logits live on the last stage; with PP the first stage is the busiest
    lm_head_cast = mixed and (autocast_fp32 or (s.method == "qlora" and s.qlora_fp32_upcast))
    lsaved, lfwd, lbwd = act.logits_bytes(m, setup, lm_head_cast) if last_stage else (0.0, 0.0, 0.0)
    fwd_kinds = {layer: act.forward_transient(layer, m, setup) for layer in kinds}
    bwd_kinds = {layer: act.backward_transient(layer, m, setup) for layer in kinds}
    fwd_tmp = max(fwd_kinds[layer] for layer in stage_layers)
    grads_prev = grads_total if s.grad_accum_steps > 1 else 0.0

    other: dict[str, float] = {}
    if strategy == "ddp":
        other["DDP gradient buckets"] = grads_total  # PyTorch DDP keeps flat bucket copies of the gradients
    if deepspeed:
        other["ZeRO communication buckets"] = 2 * 2 * oh.deepspeed_bucket_elements(m.hidden_size)
    if strategy == "zero3" and s.method == "full":
        largest = max(layer.params for layer, _ in m.layer_kinds()) * shard
        other["ZeRO-3 gathered layers"] = 2 * 2 * largest + 2 * largest  # current + prefetched, one layer's grads
    elif strategy == "zero3":  # a frozen base is gathered in its own format; adapter gradients are small
        largest = max(sum(lin.weight_params * fmt.high_bytes if lin.group in skip else fmt.linear_weight_bytes(lin)
                          for lin in layer.linears) for layer, _ in m.layer_kinds()) * shard
        other["ZeRO-3 gathered layers"] = 2 * largest  # current + prefetched
    if s.method == "qlora":
        largest_linear = max(lin.weight_params / lin.count for layer, _ in m.layer_kinds() for lin in layer.linears)
        other["dequantized 4-bit weight"] = c * largest_linear * shard
    other["cuBLAS workspace"] = oh.CUBLAS_WORKSPACE_GIB * GIB
    persistent_other = sum(other.values())

    # forward: all saved activations + the logits and loss at the end
    forward = grads_prev + A_all + max(fwd_tmp, lsaved + lfwd)
    # backward, layer by layer from the last: activations still saved + gradients made so far + transients
    n = len(stage_layers)
    g_layer = (grads_total - grads_prev) / max(n, 1) if s.grad_accum_steps == 1 else 0.0
    backward = grads_prev + A_all + lsaved + lbwd
    remaining = A_all
    for j in range(n - 1, -1, -1):
        layer = stage_layers[j]
        # full checkpointing recomputes this layer's saved set from its kept input (counted in ``remaining``);
        # the recompute's own temporaries are gone before the layer's backward makes its gradients
        recompute = saved[j] + casts[j] - kept[j] if s.grad_checkpointing == "full" else 0.0
        transient = bwd_kinds[layer]
        if s.grad_checkpointing == "full":
            transient = max(transient, fwd_kinds[layer])
        live = grads_prev + remaining + g_layer * (n - j) + recompute + transient
        backward = max(backward, live + lsaved * (j == n - 1))
        remaining -= kept[j] + kept_casts[j]
    if s.method == "full" and m.tie_word_embeddings and s.grad_accum_steps == 1:
        # tied embeddings: the lm_head's gradient waits in autograd's input buffer until the embedding's
        # arrives, and the two are summed out of place (what the fake-tensor simulation runs)
        tied = m.vocab_size * m.embedding_dim * shard * grads_total / max(trainable * shard, 1)
        backward = max(backward, grads_total + 2 * tied)
    largest_param = max(lin.weight_params / lin.count for layer, _ in m.layer_kinds() for lin in layer.linears)
    # the optimizer steps over this rank's share: its TP/PP shard, and its ZeRO partition
    local_trainable = trainable * shard / (N if deepspeed else 1)
    step = grads_total + optimizer_step_temporaries(s, local_trainable, state_bytes, int(largest_param * shard))
    if deepspeed and s.method == "full":
        step += step_fp32_grads
    if s.offload != "none":
        step = grads_total

    phases = {"forward": forward, "backward": backward, "optimizer_step": step}
    e.peak_phase = max(phases, key=phases.get)
    base_state = e.weights + e.optimizer + persistent_other
    e.phases = {k: (v + base_state) / GIB for k, v in phases.items()}
    peak = phases[e.peak_phase]
    # split the peak phase into parts
    if e.peak_phase == "optimizer_step":
        e.gradients = grads_total
        e.activations = 0.0
        other["optimizer step temporaries"] = peak - grads_total
    else:
        live_grads = grads_prev if e.peak_phase == "forward" else min(grads_total, max(peak - A_all, grads_prev))
        e.gradients = live_grads
        e.activations = peak - live_grads
    e.other = {k: v for k, v in other.items() if v > 0}
    e.extra["params_trainable"] = trainable
    return e

