"""Training step time from the work each step does (per GPU), not one efficiency constant.

One optimizer step is ``grad_accum_steps`` micro-steps plus the step's own fixed costs:

- **micro-step, GPU work** (:mod:`.work`): every linear's GEMMs at the efficiency of its shape (forward,
  input gradient, weight gradient for trained weights), peft's adapter GEMMs, attention, element-wise traffic,
  the loss, QLoRA's dequantization of every 4-bit weight each time a pass uses it (bitsandbytes' three kernels per
  linear, the NF4 decode bound by the instructions it issues or by the memory it moves; AutoGPTQ memory-bound) and,
  under peft's prepare_model_for_kbit_training, fp32 activations and the casts around each 4-bit linear, fp8 casts
  (fp8 runs the linears only: attention and the rest stay 16-bit; torchtitan's torchao and Megatron's Transformer
  Engine each cast input, grad_output and weight as :mod:`.float8` counts them; the backward's two fp8 GEMMs at the
  split accumulator's share, :func:`~.gemm.accumulation_share`); under Transformer Engine's userbuffers each forward
  linear as ``tp`` GEMMs of one rank's rows (:func:`_userbuffers_chunks`); and what the stack's
  checkpointing runs again (:meth:`~gpuplan.stacks.Stack.recompute`): the whole forward of the
  checkpointed layers under ``full`` (one layer in ``checkpoint_every``), under torchtitan's and torchtune's
  per-op ``selective`` policy the matmuls it does not save (every second one) and every element-wise op, not
  attention (``_save_list`` keeps SDPA's output) and not the reduce-scatters of tensor parallelism;
- **micro-step, host work**: eager PyTorch launches ~40 ops per layer forward (+5 per LoRA linear) at
  ~20 us each and the backward's autograd ops at ~10 us; bitsandbytes' Python per 4-bit linear and pass (less under
  Unsloth's fast_dequantize); DeepSpeed ZeRO-3 adds its module hooks. Host and
  GPU overlap: the micro-step takes their smooth maximum;
- **micro-step, communication**: Megatron TP's 4 all-reduces per layer (6 with recomputation) on the critical
  path; ZeRO-3/FSDP all-gathers the weights once per micro-batch in the forward and again in the backward,
  prefetched behind compute where it fits (FSDP's prefetch hides most of a pass; DeepSpeed's hook-driven fetch with
  its small prefetch bucket little of it: ``overheads.ZERO3_GATHER_OVERLAP``); ZeRO-2/3 reduce-scatter gradients
  every micro-batch behind the backward; FSDP2 under pipeline stages (torchtitan) gathers once and reduce-scatters
  once per step (across nodes each data-parallel collective runs hierarchically, :class:`~.comms.DataParallel`);
  CPU parameter offload streams the weights over PCIe on every pass; activation offloading copies
  the saved activations it moves (:func:`~gpuplan.memory.training.offloaded_activation_bytes`) to pinned CPU
  memory on a side stream during the forward and back during the backward (torchtune ``OffloadActivations``
  ``use_streams``, Unsloth's non-blocking copies): only the part of each copy longer than the pass it hides
  behind adds time;
- **per step**: DDP's all-reduce (or ZeRO-1's reduce-scatter) behind the last backward, the 16-bit weights'
  all-gather after a ZeRO-1/2 step, the optimizer (states, master weights and gradients read and written
  once, memory-bound; DeepSpeed CPU Adam plus the PCIe round trip when offloaded), the trainer loop and the
  dataloader; Megatron's 1F1B pipeline bubble (``p-1`` micro-steps of fill and drain per step, ``(p-1)/v`` with
  ``v`` interleaved virtual stages: Narayanan et al. 2021);
- **context parallelism** (Megatron-Core, ``cp``): each rank runs ``seq_len / cp`` tokens of every sequence and
  ``1/cp`` of its attention; ring attention passes each rank's K and V chunk ``cp-1`` times per layer in the forward
  (and K, V and their gradients in the backward), overlapped with the attention it feeds: only the excess shows.
  Megatron's ``selective`` recompute runs core attention again and nothing else.

``parts_s`` of the result adds up to the step. The training stack's kernels (fused element-wise ops and loss,
Unsloth's LoRA and dequantization paths, compiled graphs: :meth:`Stack.kernels
<gpuplan.stacks.base.Stack.kernels>`) change the parts they touch; no stack multiplies the step, so no
estimate runs a GEMM faster than its shape allows on the card (the ceiling
``tests/speed/test_speed_ceiling.py`` checks).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from .. import overheads as oh
from ..hardware import GpuSpec, Network
from ..memory.dpo import pair_rows
from ..memory.training import offloaded_activation_bytes
from ..model.spec import ModelSpec
from ..scenario import Scenario
from ..sharding import sharding_for
from ..stacks import stack_for
from ..tensors.layout import replicated_params, training_extra_params
from ..tensors.state import LION_STATE_BYTES, attention_kernel, lora_targets, weight_format
from .breakdown import Speed
from .comms import (
    all_reduce_s,
    data_parallel,
    group_all_gather_s,
    group_all_reduce_s,
    intra_node_link,
    slowest_link,
)
from .float8 import te_cast_bytes, torchao_cast_bytes
from .flops import compute_dtype, training_flops_per_token
from .gemm import bandwidth, peak_flops
from .work import (
    attention_fraction,
    attention_s,
    eager_ops_per_layer,
    elementwise_s,
    expert_loop_s,
    linears_s,
    lm_head_s,
    lora_s,
    loss_s,
    runs,
    scans_training_s,
    smooth_max,
)


def _trainable(s: Scenario, m: ModelSpec) -> float:
    """Parameters with gradients and optimizer states (LoRA: the adapters, ~1 % of the base or fewer)."""
    if s.method == "full":
        return float(m.params_total)
    from ..tensors.state import adapts_experts, lora_params

    return float(lora_params(m, lora_targets(s, m), s.lora_rank, adapts_experts(s, m)))


def _rank_trainable(s: Scenario, m: ModelSpec) -> float:
    """Trained parameters one tensor- and pipeline-parallel rank holds: its ``1/(tp x pp)`` share, and in a full
    fine-tune the :func:`~gpuplan.tensors.layout.replicated` linears whole on every tensor-parallel rank."""
    extra = training_extra_params(s, m.layers) / s.pp if s.method == "full" else 0.0
    return _trainable(s, m) / (s.tp * s.pp) + extra


def _optimizer_bytes_per_param(s: Scenario) -> float:
    """Bytes the optimizer step reads and writes per trained parameter (memory-bound update): one pass for the
    fused kernels, one per op for torch's foreach AdamW."""
    mixed = s.precision.endswith("mixed") or s.method != "full"
    master = 4 if mixed else 2
    grad = 4 if mixed else 2
    state = {"adamw": 2 * master, "adamw-8bit": 2 + 8 / 256, "paged-adamw-8bit": 2 + 8 / 256, "lion": LION_STATE_BYTES,
             "sgd-momentum": master, "sgd": 0.0, "adafactor": 0.1}[s.optimizer]
    low_copy = 2 if mixed else 0
    if s.optimizer == "adamw" and s.optimizer_impl == "foreach":  # one kernel per op (overheads.ADAMW_FOREACH_PASSES)
        passes = oh.ADAMW_FOREACH_PASSES
        return passes["weight"] * master + passes["state"] * master + passes["grad"] * grad + low_copy
    return 2 * (master + state) + grad + low_copy  # read master+states+grad, write master+states (+16-bit copy)


def _fp8_gather(s: Scenario) -> bool:
    """Whether FSDP2 gathers the decoder's linear weights in float8: torchtitan's fp8-mixed over sharded data
    parallelism (``enable_fsdp_float8_all_gather``, on when the weights are sharded: ``dp_shard_enabled``)."""
    return (stack_for(s).fp8_all_gather and s.precision == "fp8-mixed" and sharding_for(s).shards_weights(s)
            and s.dp > 1)


def _sharded_weight_bytes(s: Scenario, m: ModelSpec) -> float:
    """Bytes of one pipeline stage's weights as ZeRO-3 gathers them: 16-bit (the decoder's linears in 1 B under
    torchtitan's float8 all-gather; MLA's down-projections whole on every tensor-parallel rank), or the frozen
    base's storage format under LoRA/QLoRA (the gather moves what is stored)."""
    if s.method == "full":
        fp8 = sum(c * lin.weight_params for layer, c in m.layer_kinds() for lin in layer.linears) \
            if _fp8_gather(s) else 0
        return (2.0 * m.params_total - fp8) / (s.tp * s.pp) + 2.0 * training_extra_params(s, m.layers) / s.pp
    fmt, skip = weight_format(s, m)
    return sum(m.weight_bytes(fmt, skip=skip).values()) / (s.tp * s.pp)


@dataclass(frozen=True, kw_only=True)
class _Micro:
    """One micro-step's GPU work on one rank, by kind (seconds), and how much of a forward its recomputation
    runs again."""

    gemm: float
    lora: float
    attention: float
    elementwise: float
    extra: float  # QLoRA's dequantization and fp8's casts
    scan: float  # the Mamba-2 and linear-attention mixers' scans, forward, re-run and backward
    recompute: float  # the re-run share of a forward pass
    rest_again: float  # the element-wise ops' and adapters' re-run share
    attention_passes: float  # attention's forward, its re-run and its backward, in forwards
    reference: float = 0.0  # DPO: the reference model's forward, without gradients (outside gpu_busy's shares)

    @property
    def gpu_busy(self) -> float:
        return self.gemm + self.lora + self.attention + self.elementwise + self.extra + self.scan


@dataclass(frozen=True)
class Stage:
    """One pipeline rank's part of the model: ``layers``, its share of the decoder layers; ``head``, 1 where it
    holds the output layer and the loss (the last stage), else 0."""

    layers: float
    head: float


def pipeline_stages(s: Scenario, m: ModelSpec) -> list[Stage]:
    """The ranks that may pace the pipeline: the whole model without one; else the first stage, a middle one and
    the last, which holds the output layer and the loss beside its layers. Layers per stage as Megatron-Core builds
    them (:func:`gpuplan.stacks.megatron.stage_layers`: ``ceil(L/p)``, or ``(L+2)/p`` less the embedding on the
    first stage and the loss on the last where the chunks divide ``L + 2``)."""
    if s.pp == 1:
        return [Stage(1.0, 1.0)]
    from ..stacks.megatron import stage_layers

    L = m.num_layers
    shapes = [(True, False), (False, False), (False, True)] if s.pp > 2 else [(True, False), (False, True)]
    return [Stage(stage_layers(s, m, first=first, last=last) / L, float(last)) for first, last in shapes]


def _pacing_stage(s: Scenario, m: ModelSpec, gpu: GpuSpec, dtype: str, tokens: int, kern, comm: _Comms,
                  assumptions: list[str]) -> tuple[Stage, _Micro, float, bool, float]:
    """The stage whose micro-step (GPU and host work, tensor-parallel collectives) is the longest, its work, its
    host time and its tensor-parallel time: in a 1F1B schedule's steady state every rank runs one forward and one
    backward per micro-batch, each waiting for its neighbour's, so the slowest rank sets the pace (Narayanan et al.
    2021, section 2.2: the schedule's time per micro-batch is the stage's ``t_f + t_b``; Megatron-Core's
    ``account_for_loss_in_pipeline_split`` counts the loss as a layer to even the last stage out)."""
    best = None
    for stage in pipeline_stages(s, m):
        notes: list[str] = []
        work = _micro_work(s, m, gpu, dtype, tokens, kern, notes, stage)
        host, zero3 = _host_s(s, m, tokens, kern, work.rest_again, stage)
        busy = smooth_max(work.gpu_busy, 0.0 if s.cuda_graphs else host, oh.HOST_GPU_OVERLAP_SHARPNESS)
        tp = comm.tensor_parallel_s(tokens, stage, work)
        if best is None or busy + tp > best[0]:
            best = (busy + tp, stage, work, host, zero3, notes, tp)
    _, stage, work, host, zero3, notes, tp = best
    assumptions.extend(notes)
    if s.pp > 1:
        assumptions.append(f"pipeline paced by its slowest stage: {stage.layers * m.num_layers:.0f} of "
                           f"{m.num_layers} layers" + (" with the output layer and the loss" if stage.head else ""))
    return stage, work, host, zero3, tp


def _attention_note(s: Scenario, m: ModelSpec, gpu: GpuSpec, kern) -> str | None:
    """Which fused attention kernel class the step is timed with, where the classes differ on ``gpu``'s generation
    (:mod:`gpuplan.stacks.attention`: FlashAttention-2's against cuDNN's on Hopper): a plan of today's PyTorch
    runs cuDNN's through SDPA, a run of the end of 2024 ran FlashAttention-2's (torchtitan's December 2024
    benchmarks: 15 % apart on their Llama 3.1 8B step, bench/results/titan_s25.md). None where one rate serves
    both."""
    flash2 = oh.ATTENTION_KERNEL_PEAK_FRACTION.get(("flash2", gpu.generation))
    if flash2 is None or attention_kernel(s, m) == "eager":
        return None
    cudnn = attention_fraction(gpu)
    if kern.attention == "flash2":
        return (f"attention: a FlashAttention-2-class kernel (Ampere's mma.sync) on {gpu.generation}, {flash2:.2f} "
                f"of the peak against {cudnn:.2f} for cuDNN's fused attention (SDPA in torch 2.5.0, 2.9 and from "
                "2.11; Transformer Engine)")
    if not kern.attention_by_sdpa:
        return None
    release = f"torch {s.torch_version}" if s.torch_version else "torch 2.11 and later"
    return (f"attention: SDPA runs cuDNN's fused attention first on {gpu.generation} ({release}), {cudnn:.2f} of "
            f"the peak; torch 2.5.1 to 2.8 and 2.10 run FlashAttention-2's kernel at {flash2:.2f} (--torch-version "
            "or --attention flash to plan them)")


def _on_card(kern, gpu: GpuSpec):
    """The stack's kernels on ``gpu``: PyTorch's cuDNN attention backend exists in its CUDA builds only, so SDPA on
    another vendor's card runs its own flash kernel (ROCm: AOTriton's or Composable Kernel's), FlashAttention-2's
    class, whatever the release prefers on NVIDIA cards (Transformer Engine's fused attention stays its own)."""
    if kern.attention_by_sdpa and kern.attention == "cudnn" and gpu.vendor != "NVIDIA":
        return replace(kern, attention="flash2")
    return kern


def training_speed(s: Scenario, m: ModelSpec, gpu: GpuSpec, network: Network | None = None) -> Speed:
    """Step time and tokens/s of ``s`` on ``gpu`` over ``network`` (see the module docstring): one micro-step's
    GPU work and host work, its communication, then the step's accumulation, synchronization, optimizer and
    pipeline bubble."""
    network = network or Network()
    s = pair_rows(s)  # DPO: chosen and rejected are two rows of one batch (gpuplan.memory.dpo)
    dtype = compute_dtype(s)
    tokens = s.micro_batch_size * s.seq_len // s.cp  # context parallel: each rank runs seq_len / cp tokens
    assumptions: list[str] = []
    kern = _on_card(stack_for(s).kernels(s), gpu)
    comm = _Comms(s, m, gpu, network, assumptions)
    stage, work, host, deepspeed_zero3, tp_comm = _pacing_stage(s, m, gpu, dtype, tokens, kern, comm, assumptions)
    if s.cuda_graphs:  # the step replays captured kernels: no per-kernel host launches
        host = 0.0
        assumptions.append("CUDA graphs (Megatron-Core enable_cuda_graph, full iteration): the step's kernels are "
                           "replayed from one capture, no per-kernel launches from Python")
    busy = smooth_max(work.gpu_busy, host, oh.HOST_GPU_OVERLAP_SHARPNESS)
    if kern.why:
        assumptions.append(f"{s.stack} kernels: {kern.text}")
    note = _attention_note(s, m, gpu, kern)
    if note:
        assumptions.append(note)
    forward_time = busy / (3 + work.recompute)  # forward share of the micro-step; the backward is about twice it
    cp_comm = comm.context_parallel_s(tokens, work, stage)
    gather, reduce, sync = comm.data_parallel_s(forward_time, 2 * forward_time)
    offload, activations_offload = _offload_s(s, m, forward_time, 2 * forward_time, comm, assumptions)
    micro = busy + tp_comm + cp_comm + gather + reduce + offload + activations_offload + work.reference
    optimizer = _optimizer_s(s, m, gpu, comm.pcie, assumptions)
    # the trainer's per-step Python (scheduler, zero_grad, clipping, the loss's sync) runs inside the captured
    # iteration under full-iteration CUDA graphs; the dataloader still feeds every micro-batch
    loop = (0.0 if s.cuda_graphs else oh.TRAINER_STEP_OVERHEAD_S) + s.grad_accum_steps * oh.DATALOADER_S_PER_MICRO_STEP
    # 1F1B: p-1 micro-steps of fill and drain per step; interleaved over v virtual stages, (p-1)/v of them
    # (Narayanan et al. 2021, section 2.2.2: bubble fraction (p-1)/(m·v))
    bubble = (s.pp - 1) / s.vpp * micro
    tp_grads = comm.replicated_grads_s()
    step = s.grad_accum_steps * micro + bubble + sync + tp_grads + optimizer + loop
    straggle = step * (1 / oh.MULTINODE_STRAGGLER - 1) if s.num_nodes > 1 else 0.0
    step += straggle
    k = s.grad_accum_steps
    parts = {"gemm": k * work.gemm, "attention": k * work.attention, "ssm_scan": k * work.scan,
             "elementwise": k * work.elementwise,
             "lora_adapters": k * work.lora, "dequant_and_casts": k * work.extra,
             "reference_forward": k * work.reference,
             "host_overhead": k * busy - k * work.gpu_busy, "tensor_parallel": k * tp_comm + tp_grads,
             "context_parallel": k * cp_comm, "parameter_gathers": k * gather, "gradient_sync": k * reduce + sync,
             "offload": k * offload, "activation_offload": k * activations_offload, "pipeline_bubble": bubble,
             "optimizer": optimizer, "trainer_loop": loop, "stragglers": straggle}
    speed = _speed(s, m, gpu, dtype, {k: v for k, v in parts.items() if v > 0}, step, tokens * k * s.dp * s.cp,
                   k * busy, assumptions)
    speed.assumptions.insert(0, step_summary(s, gpu, speed))
    if s.train_objective == "dpo":
        speed.assumptions.append(_dpo_said(s, work.reference))
    if s.world_size > 1:
        speed.assumptions.append(f"collectives over {comm.dp_link.label if s.num_nodes > 1 else comm.intra.label}"
                                 + ("; DeepSpeed ZeRO-3 module hooks on every pass" if deepspeed_zero3 else ""))
    widen = []
    if gpu.vendor != "NVIDIA":  # bench/throughput.py's and bench/accuracy.py's training rows are all NVIDIA's
        speed.band = (f"uncalibrated: no bench measures training on {gpu.vendor} cards (every training row of "
                      "bench/throughput.py is NVIDIA's), so the range is twice the held-out spread")
        widen.append("uncalibrated")
    if s.num_nodes > 1 and not network.inter_node and not gpu.network:  # neither the offer's nor the computer's
        widen.append("no fabric data")
    return speed.with_range("train", *widen)


def _micro_work(s: Scenario, m: ModelSpec, gpu: GpuSpec, dtype: str, tokens: int, kern, assumptions: list[str],
                stage: Stage) -> _Micro:
    """The GPU work of one micro-step: the linears' GEMMs (forward, activation and weight gradients, what the
    checkpointing runs again), the head, adapters, attention, element-wise ops and loss, dequantization and casts.
    The forward does each layer's work once per run, the backward and the re-runs once per run with autograd on
    (:func:`~gpuplan.speed.work.runs`: HRM-Text's early low-level cycles run under ``torch.no_grad()``)."""
    tp, share, full = s.tp, stage.layers, s.method == "full"  # the layers of this pipeline stage
    rc = stack_for(s).recompute(s, m)
    kernel = attention_kernel(s, m)
    act_bytes = oh.NVFP4_BYTES if dtype == "fp4" else 1.0 if dtype == "fp8" else \
        (4.0 if dtype in ("tf32", "fp32") else 2.0)
    whole = stack_for(s).replicated_on_all_tokens  # MLA's down-projections on every token (layout.replicated)
    # fp8 and NVFP4 GEMMs read low-precision operands and write bf16 outputs; an fp8 backward's two GEMMs promote
    # their sums to fp32 (gemm.accumulation_share), the forward's and its re-run's accumulate fast
    io = {"tp": tp, "layers": share, "act_bytes": act_bytes, "weight_bytes": act_bytes, "whole": whole,
          "out_bytes": 2.0 if dtype in ("fp8", "fp4") else None}
    chunks = _userbuffers_chunks(s)
    forward = chunks * linears_s(m, gpu, dtype, tokens / chunks, **io)
    # the backward and the checkpointing's re-runs go through the layer runs with autograd on (work.runs)
    rerun = chunks * linears_s(m, gpu, dtype, tokens / chunks, grad=True, **io)
    grad = linears_s(m, gpu, dtype, tokens, grad=True, split_accumulator=dtype == "fp8", **io)
    # recomputation (the stack's checkpointing, its Recompute): the re-run linears' GEMMs; a selective policy
    # keeps attention's output and re-runs the element-wise ops and adapters, full checkpointing all of a layer
    if rc.attention:  # Megatron's core_attn recompute: attention's forward again, no linears
        again, attention_again, rest_again = 0.0, 1.0, 0.0
    elif rc.selective:
        again = chunks * linears_s(m, gpu, dtype, tokens / chunks, per_layer=rc.linears, grad=True, **io)
        attention_again, rest_again = 0.0, 1.0
    else:
        again = rerun * rc.layers
        attention_again = rest_again = rc.layers
    head = lm_head_s(m, gpu, "bf16" if dtype in ("fp8", "fp4") else dtype, tokens, tp=tp) * stage.head
    targets = lora_targets(s, m) if not full else frozenset()
    lora = sum(lora_s(m, gpu, tokens, s.lora_rank, targets, tp=tp, layers=share,
                      dropout=s.lora_dropout > 0 and kern.lora_dropout, bytes_per_output=kern.lora_bytes_per_output,
                      grad=g) * n for g, n in ((False, 1), (True, 2 + rest_again))) if targets else 0.0
    # under CP each rank's queries meet every key of the sequence: 1/cp of the sequence's attention work
    passes = 1 + attention_again + (oh.ATTENTION_BACKWARD_FLOP_RATIO if kernel != "eager" else 2)
    attention = sum(attention_s(m, gpu, "fp8" if dtype == "fp4" else dtype, s.micro_batch_size, s.seq_len,
                                fp8_kernel=bool(s.fp8_attention), backend=kern.attention, kernel=kernel, tp=tp,
                                layers=share, masked_windows=True, grad=g) * n
                    for g, n in ((False, 1), (True, passes - 1))) / s.cp
    per_element = _fused_bytes(m, kern, tp) if kern.fused_elementwise else None
    elementwise = sum(elementwise_s(m, gpu, tokens, tp=tp, layers=share, per_element=per_element, grad=g) * n
                      for g, n in ((False, 1), (True, rest_again + oh.ELEMENTWISE_BACKWARD_RATIO)))
    if _fp32_upcast(s, kern):  # the residual stream and the ops between the linears in fp32
        elementwise *= oh.FP32_UPCAST_ELEMENTWISE_FACTOR
    elementwise += loss_s(m, gpu, tokens, tp=tp, bytes_per_logit=kern.loss_bytes_per_logit) * stage.head
    scan = scans_training_s(m, gpu, s.micro_batch_size, s.seq_len, tp=tp, again=attention_again) / s.cp * share
    reference = _reference_s(s, m, gpu, kern, forward + head, attention / passes,
                             elementwise / (1 + rest_again + oh.ELEMENTWISE_BACKWARD_RATIO)) if \
        s.train_objective == "dpo" and not s.precompute_ref_log_probs else 0.0
    return _Micro(reference=reference, gemm=forward + grad * (1 + full) + again + head * (2 + full), lora=lora,
                  attention=attention,
                  elementwise=elementwise, scan=scan,
                  extra=_dequant_and_casts_s(s, m, gpu, dtype, tokens, rc, kern, assumptions, share),
                  recompute=again / forward if forward else rc.layers, rest_again=rest_again,
                  attention_passes=passes)


def _dpo_said(s: Scenario, reference: float) -> str:
    """What a DPO step's speed counts, in one sentence."""
    ref = "the reference's log-probabilities precomputed, no reference forward in the step" if \
        s.precompute_ref_log_probs else f"the reference forward {reference * 1e3:.0f} ms per micro-step (no backward)"
    gathers = "; the reference's own ZeRO-3 / FSDP weight gathers are not counted" if \
        s.method == "full" and sharding_for(s).shards_weights(s) and not s.precompute_ref_log_probs else ""
    return (f"DPO: each micro-step runs {s.micro_batch_size} rows (chosen and rejected of "
            f"{s.micro_batch_size // 2} pairs, the prompt in both), and tokens/s counts both rows; {ref}{gathers}")


def _reference_s(s: Scenario, m: ModelSpec, gpu: GpuSpec, kern, gemm: float, attention: float,
                 elementwise: float) -> float:
    """DPO's reference forward in one micro-step (TRL's DPOTrainer ``_compute_loss``, under ``torch.no_grad()``):
    the policy's forward GEMMs and output head (``gemm``), one attention forward (``attention``, the pass the
    attention term counts in forwards), the element-wise ops of one forward (``elementwise``) and, under QLoRA,
    one dequantization pass of the 4-bit base; no recompute, no adapters (peft's
    adapters are off for it), no backward. Its host launches are not counted: they overlap a GPU-bound step."""
    dequant = _dequant_pass_s(s, m, gpu, kern) if s.method == "qlora" else 0.0
    return gemm + attention + elementwise + dequant


def _userbuffers_chunks(s: Scenario) -> int:
    """How many GEMMs each forward linear runs as under Transformer Engine's userbuffers (``tp_overlap``
    ``userbuffers``): its ring exchange multiplies the rows of one tensor-parallel rank at a time while it passes the
    next rank's to its neighbour, ``tp`` GEMMs of ``tokens / tp`` rows each (transformer_engine/common/
    comm_gemm_overlap/comm_gemm_overlap.cpp ``CommOverlapP2PBase::split_overlap_ag``: a GEMM per chunk of
    ``_ubufs[0].size(0)`` rows; the reduce-scatter after the row-parallel linears likewise, NVIDIA's MLPerf
    ``tp_overlap/h100tp8mbs1.yaml``: ``proj_fprop``/``fc2_fprop`` ``ring_exchange``); 1 otherwise. The backward's
    dgrad and wgrad of the column-parallel linears overlap in ``bulk`` (whole GEMMs); the ring-exchanged dgrad of
    the row-parallel ones is left whole here."""
    return s.tp if s.tp > 1 and stack_for(s).tp_overlap(s) == "userbuffers" else 1


def _dequant_and_casts_s(s: Scenario, m: ModelSpec, gpu: GpuSpec, dtype: str, tokens: int, rc, kern,
                         assumptions: list[str], layers: float) -> float:
    """QLoRA dequantizes every 4-bit weight on each pass that multiplies by it (:func:`_dequant_pass_s`); fp8 casts
    the linears' inputs of the stage's ``layers`` (share of the model's)."""
    extra = 0.0
    if s.method == "qlora":
        again_share = _dequant_again_share(s, m, rc)
        per_pass = _dequant_pass_s(s, m, gpu, kern)
        extra += per_pass * (2 + again_share)
        how = {"bnb": "bitsandbytes' kernels, 3 per linear", "eager": "torchao NF4, 14 eager kernels per linear",
               "compiled": "torchao NF4, one compiled kernel per linear"}.get(kern.dequant, "memory-bound")
        assumptions.append(f"QLoRA dequantizes the 4-bit base on each of {2 + again_share:.3g} passes per "
                           f"micro-step ({per_pass * 1e3:.1f} ms each, {how})")
        if _fp32_upcast(s, kern):
            cast = _upcast_cast_bytes(s, m, tokens) * (2 + again_share) \
                + oh.FP32_UPCAST_CAST_BYTES * m.vocab_size * m.hidden_size / s.tp * (s.pp == 1)
            extra += cast / bandwidth(gpu)
            assumptions.append(f"prepare_model_for_kbit_training's fp32 parameters: fp32 activations between the "
                               f"linears and {cast / 2**30:.1f} GiB of dtype casts per micro-step")
    if dtype == "fp8" and stack_for(s).torchao_float8:  # torchao's Float8Linear, compiled (.float8)
        # the per-op policy keeps no fp8 tensor: its backward casts the inputs of the GEMMs it re-runs again
        cast = torchao_cast_bytes(m, tokens, tp=s.tp, layers=layers, again=rc.layers, rerun=rc.linears,
                                  fp8_weights=_fp8_gather(s))
        extra += cast / bandwidth(gpu)
        assumptions.append(f"torchao float8 linears (tensorwise, compiled): {cast / 2**30:.1f} GiB of casts per "
                           "micro-step; attention, norms and the output layer stay bf16")
    elif dtype == "fp8":  # Transformer Engine's casts in its linears, counted from its code (.float8)
        again = rc.layers if not rc.selective else _selective_cast_share(m, rc)
        cast = te_cast_bytes(m, tokens, tp=s.tp, layers=layers, again=again, weight_grads=s.method == "full",
                             weight_transposes=_transposes_again(s, gpu))
        extra += cast / bandwidth(gpu)
        assumptions.append(f"fp8 on the linear layers only ({cast / 2**30:.1f} GiB of Transformer Engine casts per "
                           "micro-step); attention (unless fp8_attention), norms and the loss stay 16-bit")
    elif dtype == "fp4":  # NVFP4: 3 B per linear input element and pass (its quantizer's Hadamard transforms and
        # stochastic rounding are not a plain byte stream: not counted from Transformer Engine's code here)
        width = tokens * sum(c * sum(lin.in_features for lin in layer.linears) for layer, c in m.layer_kinds())
        again = rc.layers if not rc.selective else _selective_cast_share(m, rc)
        extra += width * layers / s.tp * 3 / bandwidth(gpu) * (2 + again + (s.method == "full"))
        assumptions.append("fp4 on the linear layers only; attention (unless fp8_attention), norms and the loss stay "
                           "16-bit")
    return extra


def _transposes_again(s: Scenario, gpu: GpuSpec) -> bool:
    """Whether each backward transposes the fp8 weights again: Megatron-Core with ``fp8_transpose_cache`` false on
    ``gpu``, the plan's card, where its fp8 GEMMs need the transpose
    (:func:`gpuplan.stacks.megatron.keeps_fp8_transpose`)."""
    from ..stacks.megatron import needs_fp8_transpose

    return s.stack == "megatron" and s.fp8_transpose_cache is False and needs_fp8_transpose(gpu)


def _selective_cast_share(m: ModelSpec, rc) -> float:
    """The share of the linears' input width a selective recomputation multiplies again (its re-run's casts)."""
    width = sum(c * sum(lin.in_features for lin in layer.linears) for layer, c in m.layer_kinds())
    again = sum(c * sum(lin.in_features for lin in layer.linears if lin.name in rc.linears[layer])
                for layer, c in m.layer_kinds())
    return again / max(width, 1)


def _fused_bytes(m: ModelSpec, kern, tp: int) -> tuple[float, float]:
    """Bytes per hidden and per MLP element per layer forward of fused element-wise kernels
    (:data:`~gpuplan.overheads.FUSED_ELEMENTWISE_BYTES`), with a complex-number rotary embedding's unfused kernels
    added over the rank's query and key widths (:data:`~gpuplan.overheads.ROPE_COMPLEX_BYTES` instead of
    :data:`~gpuplan.overheads.ROPE_FUSED_BYTES` per element)."""
    hidden, mlp = oh.FUSED_ELEMENTWISE_BYTES
    if kern.complex_rope:
        qk = (m.num_heads + m.num_kv_heads) * m.head_dim / tp
        hidden += (oh.ROPE_COMPLEX_BYTES - oh.ROPE_FUSED_BYTES) * qk / m.hidden_size
    return hidden, mlp


def _fp32_upcast(s: Scenario, kern) -> bool:
    """Whether peft's prepare_model_for_kbit_training left a bitsandbytes base's other parameters in fp32
    (:data:`~gpuplan.overheads.FP32_UPCAST_CAST_BYTES`)."""
    return kern.dequant == "bnb" and stack_for(s).fp32_upcast(s)


def _upcast_cast_bytes(s: Scenario, m: ModelSpec, tokens: int) -> float:
    """Bytes of one pass's dtype casts under the fp32 upcast: each 4-bit linear's input and output, and each
    adapter's input (autocast), for the rows it multiplies: a routed expert casts only the tokens routed to it,
    ``experts_per_token`` copies of each token over the layer's experts (transformers' MoE blocks index each
    expert's tokens before calling it, e.g. ``MixtralSparseMoeBlock.forward``), as
    :func:`gpuplan.speed.float8.torchao_cast_bytes` counts them."""
    targets = lora_targets(s, m)
    _, skip = weight_format(s, m)
    per_token = sum(c * (layer.experts_per_token if lin.group == "experts" and lin.count > 1 else lin.count)
                    * (lin.in_features * (1 + (lin.name in targets)) + lin.out_features)
                    for layer, c in m.layer_kinds() for lin in layer.linears if not lin.kept(skip))
    return oh.FP32_UPCAST_CAST_BYTES * tokens * per_token / (s.tp * s.pp)


def _quantized_linears(s: Scenario, m: ModelSpec):
    """(linear, count of its layer kind) for the 4-bit linears of the base."""
    _, skip = weight_format(s, m)
    return [(lin, c) for layer, c in m.layer_kinds() for lin in layer.linears if not lin.kept(skip)]


def _dequant_again_share(s: Scenario, m: ModelSpec, rc) -> float:
    """The share of the 4-bit weights a checkpointed recomputation multiplies by again."""
    if not rc.selective:
        return rc.layers
    _, skip = weight_format(s, m)
    params = sum(c * lin.weight_params for lin, c in _quantized_linears(s, m))
    return sum(c * lin.weight_params for layer, c in m.layer_kinds() for lin in layer.linears
               if not lin.kept(skip) and lin.name in rc.linears[layer]) / max(params, 1)


def _dequant_pass_s(s: Scenario, m: ModelSpec, gpu: GpuSpec, kern) -> float:
    """GPU time to dequantize this rank's 4-bit weights once.

    bitsandbytes (``kern.dequant == "bnb"``): per linear module, its three kernels'
    :data:`~gpuplan.overheads.BNB_DEQUANT_BYTES_PER_PARAM` at the card's bandwidth or the NF4 kernel's instruction
    rate (:data:`~gpuplan.overheads.BNB_NF4_VALUES_PER_SM_CYCLE` per SM and cycle at the boost clock), whichever is
    slower, plus each kernel's fixed GPU cost. torchao's NF4Tensor (``kern.dequant`` "eager" or "compiled"): the
    bytes counted from its ``get_original_weight`` (:data:`~gpuplan.overheads.TORCHAO_NF4_DEQUANT_BYTES_PER_PARAM`)
    at the card's bandwidth, plus each kernel's fixed cost. Otherwise (AutoGPTQ): the calibrated memory-bound rate."""
    share = 1 / (s.tp * s.pp)
    lins = _quantized_linears(s, m)
    params = sum(c * lin.weight_params for lin, c in lins) * share
    modules = sum(c * lin.count for lin, c in lins) / s.pp  # each tensor-parallel rank launches its shards' kernels
    if kern.dequant in oh.TORCHAO_NF4_DEQUANT_BYTES_PER_PARAM:
        return (params * oh.TORCHAO_NF4_DEQUANT_BYTES_PER_PARAM[kern.dequant] / bandwidth(gpu)
                + modules * oh.TORCHAO_NF4_DEQUANT_KERNELS[kern.dequant] * oh.GEMM_KERNEL_LATENCY_S)
    if kern.dequant != "bnb":
        return params * oh.QLORA_DEQUANT_BYTES_PER_PARAM / (bandwidth(gpu) * oh.QLORA_DEQUANT_BANDWIDTH_FRACTION)
    memory = params * oh.BNB_DEQUANT_BYTES_PER_PARAM / bandwidth(gpu)
    issue = params / (gpu.sm_count * gpu.boost_clock_mhz * 1e6 * oh.BNB_NF4_VALUES_PER_SM_CYCLE) \
        if gpu.sm_count and gpu.boost_clock_mhz else 0.0
    return max(memory, issue) + modules * oh.BNB_DEQUANT_KERNELS * oh.GEMM_KERNEL_LATENCY_S


def _host_s(s: Scenario, m: ModelSpec, tokens: int, kern, rest_again: float, stage: Stage) -> tuple[float, bool]:
    """The host's work of one micro-step of a pipeline ``stage`` in eager PyTorch (kernel launches, autograd,
    transformers' expert loop, DeepSpeed ZeRO-3's module hooks), and whether those hooks run."""
    share = stage.layers
    layers_here = m.num_layers * share
    targets = lora_targets(s, m) if s.method != "full" else frozenset()
    n_lora = len({lin.name for layer, _ in m.layer_kinds() for lin in layer.linears if lin.name in targets})
    # the forward's ops once per layer run, the backward's and the re-run's per run with autograd on (work.runs)
    ops, grad_ops = (eager_ops_per_layer(n_lora) * share * sum(c * runs(layer, g) for layer, c in m.layer_kinds())
                     for g in (False, True))
    host = kern.host_ops * (ops * oh.EAGER_OP_OVERHEAD_S + grad_ops * oh.EAGER_OP_OVERHEAD_S * rest_again
                            + grad_ops * oh.BACKWARD_OPS_RATIO * oh.AUTOGRAD_OP_OVERHEAD_S)
    if s.method == "qlora" and kern.dequant_host_ops:  # bitsandbytes' Python per 4-bit linear and pass
        again = _dequant_again_share(s, m, stack_for(s).recompute(s, m))
        modules = sum(c * lin.count for lin, c in _quantized_linears(s, m)) * share
        host += modules * oh.EAGER_OP_OVERHEAD_S * (kern.dequant_host_ops * (2 + again)
                                                     + kern.linear_4bit_host_ops * (1 + again))
    if stack_for(s).experts_loop:  # transformers' Python loop over the experts hit
        host += expert_loop_s(m, tokens, layers=share) * (1 + rest_again + oh.BACKWARD_OPS_RATIO)
    hook_s = sharding_for(s).hook_s(s)  # DeepSpeed ZeRO-3's module hooks, each layer and pass
    if hook_s:
        host += layers_here * (2 + stack_for(s).recompute(s, m).layers) * hook_s
    return host, bool(hook_s)


class _Comms:
    """The setup's links and collectives: tensor and context parallel inside a micro-step, data parallel
    (ZeRO-3's gathers, ZeRO-2's reduce-scatters, DDP's all-reduce) behind the passes they overlap."""

    def __init__(self, s: Scenario, m: ModelSpec, gpu: GpuSpec, network: Network, assumptions: list[str]):
        self.s, self.m, self.gpu, self.assumptions = s, m, gpu, assumptions
        self.intra = intra_node_link(gpu, network)
        self.pcie = intra_node_link(gpu, Network(intra_node="pcie")).bytes_per_s
        per_node = s.num_gpus
        dp_link = slowest_link(gpu, network, s.num_nodes, per_node)
        if dp_link is None:
            dp_link = self.intra
            assumptions.append("the offer's provider sells no multi-node fabric: this setup cannot span nodes")
        self.dp_link = dp_link
        # the DP group: hierarchical over nodes when each node holds whole DP ranks (no TP/PP/CP), else a flat
        # ring over the slowest link; across rack-scale NVLink domains (NVL72) in two levels
        # (comms.group_all_reduce_s); the ranks are the data- and context-parallel ones (Megatron reduces
        # gradients over both)
        self.ranks = s.dp * s.cp
        self.hier = data_parallel(gpu, network, s.num_nodes, per_node, per_node) \
            if s.tp * s.pp * s.cp == 1 and s.num_nodes > 1 and dp_link is not self.intra and not gpu.nvlink_domain \
            else None
        self.levels = (gpu, network, s.num_nodes, per_node, dp_link, s.tp * s.pp)

    def all_gather_s(self, nbytes: float) -> float:
        return self.hier.all_gather_s(nbytes) if self.hier else group_all_gather_s(nbytes, self.ranks, *self.levels)

    def all_reduce_s(self, nbytes: float) -> float:
        return self.hier.all_reduce_s(nbytes) if self.hier else group_all_reduce_s(nbytes, self.ranks, *self.levels)

    def context_parallel_s(self, tokens: int, work: _Micro, stage: Stage) -> float:
        """Ring attention (TE p2p): cp-1 steps pass this rank's K and V chunk, overlapped with attention."""
        s, m, cp = self.s, self.m, self.s.cp
        if cp <= 1:
            return 0.0
        ring = self.intra if s.tp * cp <= max(s.num_gpus, self.gpu.nvlink_domain) else self.dp_link
        kv = 2 * tokens * 2 * max(m.num_kv_heads // s.tp, 1) * m.head_dim  # K and V of b·s/cp tokens, bf16
        step_s = (cp - 1) * (kv / ring.bytes_per_s + ring.latency_s) * (m.num_layers * stage.layers)
        attn_fwd = work.attention / (work.attention_passes + 1)
        # forward passes K, V; the backward passes K, V and their gradients (twice the bytes)
        self.assumptions.append(f"context parallel {cp}: ring attention passes {(cp - 1)} K/V chunks of "
                                f"{kv / 2**20:.1f} MiB per layer over {ring.label}, behind the attention it overlaps")
        return max(0.0, step_s - attn_fwd) + max(0.0, 2 * step_s - attn_fwd * oh.ATTENTION_BACKWARD_FLOP_RATIO)

    def tensor_parallel_s(self, tokens: int, stage: Stage, work: _Micro) -> float:
        """The part of the stage's tensor-parallel collectives no GEMM hides: 2 all-reduces' worth per layer in the
        forward (sequence parallelism's all-gather and reduce-scatter move the same bytes), 2 in the backward, and a
        re-run layer repeats its forward's (the per-op policy saves the reduce-scatters). By the stack's
        :meth:`~gpuplan.stacks.Stack.tp_overlap`: ``none`` hides none; ``backward`` hides the backward's behind
        the gradient GEMMs; ``userbuffers`` hides all of them behind the GEMMs they are pipelined with; a stack
        not modelled by setting hides :data:`~gpuplan.overheads.TP_OVERLAP` of them."""
        s, m = self.s, self.m
        if s.tp <= 1:
            return 0.0
        rc = stack_for(s).recompute(s, m)
        # Megatron's core_attn recompute re-runs attention alone, inside the layer's TP region: no collective
        tp_again = 0.0 if rc.attention else 2 * (0.5 if rc.selective else rc.layers)
        one = m.num_layers * stage.layers * all_reduce_s(tokens * m.hidden_size * 2, s.tp, self.intra)
        forward, backward = (2 + tp_again) * one, 2 * one
        gemm_backward = work.gemm * 2 / (3 + work.recompute)  # the backward's share of the GEMMs
        overlap = stack_for(s).tp_overlap(s)
        if overlap is None:
            return (forward + backward) * (1 - oh.TP_OVERLAP)
        if overlap == "none":
            return forward + backward
        if overlap == "backward":
            return forward + max(0.0, backward - gemm_backward)
        return max(0.0, forward + backward - work.gemm)

    def replicated_grads_s(self) -> float:
        """Megatron-Core sums the fp32 gradients of the weights every rank holds whole under sequence parallelism
        (MLA's down-projections, :func:`~gpuplan.tensors.layout.training_extra_params`) over the TP group once a
        step, after the backward (``finalize_model_grads`` ``_allreduce_non_tensor_model_parallel_grads``, one
        coalesced all-reduce; the norms' gradients, a few MB, are not counted). torchtitan's ranks compute those
        gradients whole from the gathered input: nothing to sum."""
        s, m = self.s, self.m
        if s.tp <= 1 or not stack_for(s).sums_replicated_grads or s.method != "full":
            return 0.0
        stage = m.layers[:math.ceil(m.num_layers / s.pp)]
        return all_reduce_s(4.0 * replicated_params(stage), s.tp, self.intra) if replicated_params(stage) else 0.0

    def data_parallel_s(self, forward_time: float, backward_time: float) -> tuple[float, float, float]:
        """(ZeRO-3's gathers and ZeRO-2/3's reduce-scatters per micro-step, the step's gradient sync), each the
        part its pass does not hide."""
        s, m = self.s, self.m
        dp, holder = s.dp, sharding_for(s)
        grads = _rank_trainable(s, m) * holder.reduced_grad_bytes(s)
        gather = reduce = sync = 0.0
        sharded = holder.shards_weights(s) and dp > 1
        if sharded and s.pp > 1 and holder.gathers_once_under_pp:
            # FSDP2 under torch.distributed.pipelining: torchtitan keeps a stage's weights gathered after the
            # forward when PP is on (apply_fsdp, reshard_after_forward = not pp_enabled) and the pipeline stage
            # turns off resharding after backward and gradient sync for every micro-batch, reducing once after the
            # last (PipelineStage.backward_maybe_with_nosync): one all-gather and one reduce-scatter per step
            sync = max(0.0, self.all_gather_s(_sharded_weight_bytes(s, m)) - oh.DP_OVERLAP * forward_time) \
                + max(0.0, self.all_gather_s(grads) - oh.DP_OVERLAP * backward_time)
            self.assumptions.append("FSDP2 with pipeline stages: weights gathered once and gradients "
                                    "reduce-scattered once per step, not per micro-batch")
            return gather, reduce, sync
        if sharded:
            g = self.all_gather_s(_sharded_weight_bytes(s, m))
            hide = holder.gather_overlap
            gather = max(0.0, g - hide * forward_time) + max(0.0, g - hide * backward_time)
        if holder.shards_gradients(s) and dp > 1:
            reduce = max(0.0, self.all_gather_s(grads) - oh.DP_OVERLAP * backward_time)
        if self.ranks == 1:
            return gather, reduce, sync
        collective, gather_updated = holder.step_sync(s)  # a reduce-scatter moves what an all-gather does
        if collective:
            timed = self.all_reduce_s if collective == "all-reduce" else self.all_gather_s
            sync = max(0.0, timed(grads) - oh.DP_OVERLAP * backward_time)
        if gather_updated:  # the updated 16-bit weights
            sync += max(0.0, self.all_gather_s(2.0 * _rank_trainable(s, m)) - oh.DP_OVERLAP * forward_time)
        return gather, reduce, sync


def _offload_s(s: Scenario, m: ModelSpec, forward_time: float, backward_time: float, comm: _Comms,
               assumptions: list[str]) -> tuple[float, float]:
    """PCIe time a micro-step cannot hide: parameter offload's weight streams, activation offloading's copies
    beyond the pass they run behind.

    Parameter offload copies this rank's shard to the GPU before each pass's all-gather, on the same side stream
    that runs ahead of the compute (torch FSDP1 ``_unshard``: ``pre_unshard`` moves the pinned CPU shard with
    ``non_blocking=True`` on the pre-unshard stream, the all-gather follows on the unshard stream; DeepSpeed's
    ZeRO-3 fetches from its prefetch hooks): copy and gather share the part of the pass that hides collectives
    (:data:`~gpuplan.overheads.DP_OVERLAP`, DeepSpeed's :data:`~gpuplan.overheads.ZERO3_GATHER_OVERLAP`), and only
    what exceeds it, beyond the gather's own excess, shows."""
    offload = 0.0
    if s.offload == "optimizer+params":  # every pass fetches this rank's shard from host memory
        copy = _sharded_weight_bytes(s, m) / s.dp / comm.pcie
        gather = comm.all_gather_s(_sharded_weight_bytes(s, m)) if sharding_for(s).shards_weights(s) and s.dp > 1 \
            else 0.0
        hide = sharding_for(s).gather_overlap
        again = stack_for(s).recompute(s, m).layers  # the recomputation fetches the weights once more
        for passes, pass_s in ((1, forward_time), (1 + again, backward_time + again * forward_time)):
            offload += max(0.0, passes * (copy + gather) - hide * pass_s) - max(0.0, passes * gather - hide * pass_s)
        assumptions.append(f"parameter offload: each forward, recomputation and backward copies this rank's "
                           f"weights from pinned CPU memory ({copy * 1e3:,.0f} ms per pass over PCIe), ahead of the "
                           f"pass on a side stream: {offload * 1e3:,.0f} ms of it not hidden")
    moved = offloaded_activation_bytes(s, m)
    activations_offload = 0.0
    if moved:  # copied out on a side stream behind the forward, back behind the backward: only the excess shows
        copy = moved / comm.pcie
        activations_offload = max(0.0, copy - forward_time) + max(0.0, copy - backward_time)
        assumptions.append(f"activation offloading: {moved / 2**30:.2f} GiB of saved activations to pinned CPU "
                           f"memory and back per micro-step over PCIe ({copy * 1e3:.0f} ms each way, hidden behind "
                           f"the forward and the backward up to their length)")
    return offload, activations_offload


def _optimizer_s(s: Scenario, m: ModelSpec, gpu: GpuSpec, pcie: float, assumptions: list[str]) -> float:
    """Gradient clipping and the optimizer step over this rank's shard: memory-bound on the GPU, or DeepSpeed's CPU
    Adam when offloaded."""
    shard = _rank_trainable(s, m) / (s.dp * s.cp if sharding_for(s).shards_optimizer(s) else 1)
    if s.offload == "none":  # and clip_grad_norm_ over the gradients first (overheads.GRAD_CLIP_GRAD_PASSES)
        grad = 4 if s.precision.endswith("mixed") or s.method != "full" else 2
        return shard * (_optimizer_bytes_per_param(s) + oh.GRAD_CLIP_GRAD_PASSES * grad) / bandwidth(gpu)
    assumptions.append(f"optimizer offloaded: DeepSpeed CPU Adam at ~{oh.CPU_ADAM_PARAMS_PER_S:.0e} "
                       "parameters/s (assumed) plus the PCIe round trip of gradients and weights")
    return shard / oh.CPU_ADAM_PARAMS_PER_S + 2 * 2 * shard / pcie  # CPU Adam + grads down, weights up


def _speed(s: Scenario, m: ModelSpec, gpu: GpuSpec, dtype: str, parts: dict[str, float], step: float,
           tokens_step: float, compute_s: float, assumptions: list[str]) -> Speed:
    """The step's parts as a Speed: tokens/s, what bounds it (compute, host, communication), MFU."""
    comm = sum(parts.get(k, 0) for k in ("tensor_parallel", "context_parallel", "parameter_gathers", "gradient_sync"))
    gpu_work = sum(parts.get(k, 0) for k in ("gemm", "attention", "ssm_scan", "elementwise", "lora_adapters",
                                             "dequant_and_casts", "reference_forward"))
    bound = max(("compute", gpu_work), ("host (kernel launches)", parts.get("host_overhead", 0)),
                ("communication", comm + parts.get("offload", 0) + parts.get("activation_offload", 0)),
                key=lambda kv: kv[1])[0]
    model_fpt = training_flops_per_token(s, m, recompute=False)
    tokens_per_s = tokens_step / step
    peak = peak_flops(gpu, dtype)
    return Speed(tokens_per_s=tokens_per_s, step_time_s=step, bound=bound, parts_s=parts,
                 mfu=model_fpt * tokens_per_s / (s.world_size * peak) if peak else None, compute_s=compute_s,
                 communication_s=comm, flops_per_token=training_flops_per_token(s, m), assumptions=assumptions)


def step_summary(s: Scenario, gpu: GpuSpec, speed: Speed) -> str:
    """The step in one line: its three largest parts as shares of the step (rounded as the ``step:`` line rounds
    them), one full micro-step's GEMM efficiency, and the MFU, all read off ``speed`` (the data's mix restates it:
    :func:`gpuplan.speed.speed_of`)."""
    from .gemm import gemm_efficiency

    dtype = compute_dtype(s)
    tokens = s.micro_batch_size * s.seq_len // s.cp
    eff = gemm_efficiency(gpu, dtype, tokens, 4096, 4096)
    top = ", ".join([f"{k.replace('_', ' ')} {pct}%" for k, pct in speed.step_shares() if k != "other"][:3])
    return (f"step = work per micro-step x {s.grad_accum_steps} + per-step costs ({top}); a {tokens:,}-token "
            f"micro-step's 4096x4096 GEMM reaches {eff:.0%} of the {dtype} peak on {gpu.name}"
            f"{_rate_said(s, gpu, dtype)}; implied MFU {speed.mfu or math.nan:.2f}")


def _rate_said(s: Scenario, gpu: GpuSpec, dtype: str) -> str:
    """The dense rate a precision runs at, said where it is not the card's 16-bit tensor rate: fp32 at the fp32 rate
    (TF32 off, PyTorch's default since 1.12: docs.pytorch.org notes/cuda.html, "TensorFloat-32 (TF32) on Ampere
    (and later) devices"), or TF32 (``tf32``), with the rate the other choice would give."""
    if dtype not in ("fp32", "tf32"):
        return ""
    rate = peak_flops(gpu, dtype) / 1e12
    tf32 = gpu.peak_tflops("tf32")
    if dtype == "tf32":
        return f" ({rate:,.1f} TFLOPS: TF32 tensor cores, as tf32 allows)" if tf32 else \
            f" ({rate:,.1f} TFLOPS: {gpu.name} has no TF32 tensor cores, so fp32 runs on CUDA cores)"
    other = f"; tf32 true for the TF32 rate, {tf32:,.1f} TFLOPS" if tf32 else ""
    return f" ({rate:,.1f} TFLOPS fp32: TF32 is off by default since PyTorch 1.12{other})"
