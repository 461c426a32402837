"""Megatron-Core (NVIDIA/Megatron-LM ``megatron/core``) as NeMo 2's recipes run it: Transformer Engine layers, tensor
parallelism with sequence parallelism, 1F1B pipelines (interleaved with virtual stages), context parallelism (ring
attention), expert parallelism, the distributed optimizer, fp8 through Transformer Engine.

Per rank, with ``t`` = TP, ``p`` = PP, ``v`` = virtual stages, ``c`` = CP, ``e`` = EP, ``N`` = DP x CP:

- **state** (Megatron ``theoretical_memory_usage.compute_weight_and_optimizer_memory``: 18 bytes/parameter, or
  ``6 + 12/N`` with the distributed optimizer): 16-bit weights (2 B), fp32 gradient buffers (4 B,
  ``grad_reduce_in_fp32``), fp32 master weights and Adam moments (12 B) sharded over ``N`` ranks (``N·t/e`` for
  routed experts, whose data-parallel group is the expert-data-parallel one). Dense layers split by ``t`` but MLA's
  down-projections and DSA's indexer, whole on every rank (:func:`gpuplan.tensors.layout.training_extra_params`),
  routed experts by ``e`` (``expert_tensor_parallel_size`` 1), the input embedding on the first stage and the output
  layer on the last, each split by ``t``. fp8 keeps the linear weights in fp8 themselves, as NeMo's fp8 recipes
  set it (``bf16_with_fp8_mixed`` and ``bf16_with_fp8_current_scaling_mixed``: ``fp8_param_gather=True``; Megatron
  builds the model under Transformer Engine's ``fp8_model_init`` and the distributed optimizer all-gathers the
  fp8 bytes): 1 B per linear parameter plus the transpose Hopper's fp8 GEMMs need (1 B; ``megatron/core/
  fp8_utils.py`` ``post_all_gather_processing`` creates it after each all-gather; Blackwell's GEMMs need none:
  :func:`keeps_fp8_transpose`), no 16-bit copy; embedding,
  output layer and norms stay 16-bit; the fp32 master weights live in the optimizer. LoRA trains adapters the same
  way over a frozen base held in bf16, or with fp8 in fp8 itself (``fp8_model_init``, NVIDIA's MLPerf LoRA runs):
  1 B + its 1 B transpose; under NVFP4 (``fp4-mixed``) as NVFP4 itself, NVIDIA's MLPerf LoRA recipe
  (``PRE_QUANTIZED_MODEL=True``: ``custom_callbacks.py`` ``_pre_quantize_model`` replaces each TE linear's weight
  by its ``NVFP4Quantizer`` output, row-wise and column-wise data both, and parks the fp8 healing copy in host
  memory): 2 x :data:`~gpuplan.overheads.NVFP4_BYTES` per linear weight;
- **activations per layer** (Korthikanti et al. 2022, "Reducing Activation Recomputation in Large Transformer
  Models", section 4, for ``T`` = micro-batch x seq_len / c tokens): with sequence parallelism every tensor is
  split by ``t``; the two norms keep their 16-bit input and an fp32 rstd; the QKV and FC1 linears their (sharded)
  input; attention its rotary q, k, v and, unless recomputed, its output and fp32 log-sum-exp; the output
  projection and FC2 their inputs; SwiGLU its FC1 output. With no dropout (Llama recipes) and fused attention the
  GPT count is ``32·s·b·h/t`` bytes (Korthikanti's ``34·s·b·h/t`` less the two dropout masks) (:func:`layer_bytes`).
  Transformer Engine's fp8 attention (``fp8_dot_product_attention``, ``NVTE_FP8_DPA_BWD=1``, as NVIDIA's MLPerf
  LoRA configs set ``FP8_DPA=1``) saves its fp8 q, k, v and output for the fp8 backward: 1 B each; Megatron-Core's
  ``activation_func_fp8_input_store`` ("Store the input of MLP activation function in FP8 for backprop to save
  memory", ``transformer_config.py``; NVIDIA's one-node TP1 LoRA configs set it: ``FP8_ACT=1``) keeps SwiGLU's input
  (the FC1 output) in fp8: 1 B;
  fp8 saves each linear's input as fp8 (1 B) (Transformer Engine ``Linear`` keeps its fp8-cast input for the
  weight gradient), NVFP4 (``fp4-mixed``, Megatron ``--fp4-format e2m1``, TE ``NVFP4BlockScaling``) as NVFP4
  (:data:`~gpuplan.overheads.NVFP4_BYTES`), its weights staying 16-bit (``fp4_param`` off); under LoRA a frozen linear
  keeps no input (Transformer Engine saves it only when ``weight.requires_grad``), an adapted one the 16-bit input its
  adapter needs. ``selective``
  (``recompute_granularity='selective'``, ``recompute_modules=['core_attn']``) recomputes core attention: its
  output and log-sum-exp are not kept; ``full`` keeps each layer's input;
- **in-flight micro-batches** (Narayanan et al. 2021, section 2.2): pipeline stage ``r`` of a 1F1B schedule holds
  ``min(p - r, m)`` micro-batches; interleaved, rank ``r`` holds ``2·(p-r-1) + (v-1)·p + 1`` chunk-micro-batches of
  ``L/(p·v)`` layers (Megatron ``get_forward_backward_func``, warm-up counts), so the first stage holds
  ``L·(1 + (p-1)/(p·v))`` layers' worth, as Megatron's ``interleaved_schedule_memory_penalty`` says;
- **pipeline split**: ``ceil(L/p)`` layers per stage; where ``p·v`` model chunks do not divide the ``L`` layers but
  divide ``L + 2``, the embedding and the loss count as one layer each (``account_for_embedding_in_pipeline_split``
  and ``account_for_loss_in_pipeline_split``, as NeMo's ``llama31_405b`` recipe sets them: 126 + 2 layers over
  TP 8 / PP 8 / VP 2): every chunk holds ``(L+2)/(p·v)`` layers, the first stage's first chunk one fewer (it holds
  the embedding) and the last stage's last chunk one fewer (the output layer and loss), so a middle stage holds
  the most layers (Megatron ``get_num_layers_to_build``) (:func:`stage_layers`); a stage's in-flight chunks are
  counted at its mean chunk size;
- **logits** on the last stage: the vocabulary-parallel cross-entropy upcasts the ``T x V/t`` logits to fp32 and
  keeps the softmax in that buffer (``_VocabParallelCrossEntropy``); the 16-bit logits live until the upcast.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

from .. import overheads as oh
from ..errors import GpuplanError
from ..model.layers import Layer
from ..model.spec import ModelSpec
from ..scenario import Scenario
from ..tensors.activations import INPUT_OF
from ..tensors.layout import training_extra_params
from ..tensors.state import lora_params, lora_targets
from .base import Recompute, Stack
from .releases import MEGATRON_COMMIT, MEGATRON_IMAGE, MEGATRON_REPO

if TYPE_CHECKING:
    from ..hardware import GpuSpec


def _mid(layer: Layer, groups: tuple[str, ...]) -> int:
    """The intermediate width of the layer's MLP in ``groups`` (the input of its down projection), 0 if none."""
    return max((lin.in_features for lin in layer.linears
                if lin.group in groups and INPUT_OF.get(lin.name) == "mlp_mid"), default=0)


def tokens(s: Scenario) -> int:
    """Tokens of one micro-batch on one rank before sequence parallelism: ``b·s/cp``."""
    return s.micro_batch_size * s.seq_len // s.cp


def layer_bytes(layer: Layer, m: ModelSpec, s: Scenario, recompute: str | None = None) -> float:
    """Bytes one decoder layer keeps for the backward of one micro-batch on one rank (module docstring), under
    ``recompute`` (default: the scenario's ``grad_checkpointing``)."""
    T, t, c, h = tokens(s), s.tp, 2, m.hidden_size
    q = {"fp8-mixed": 1, "fp4-mixed": oh.NVFP4_BYTES}.get(s.precision, c)  # bytes of a linear's saved input
    recompute = recompute or s.grad_checkpointing
    if recompute == "full":
        return c * T * h / t  # the checkpointed layer's input, sequence-parallel
    a = m.num_heads
    if layer.attention == "mla":
        mla = m.mla
        qkv = a * (2 * (mla["qk_nope_head_dim"] + mla["qk_rope_head_dim"]) + mla["v_head_dim"])
        out = a * mla["v_head_dim"]
    else:
        qkv, out = (a + 2 * m.num_kv_heads) * m.head_dim, a * m.head_dim
    saved = _saved_inputs(s, m, q, c)
    fa = 1 if s.fp8_attention else c  # bytes of core attention's saved q, k, v and output (fp8 attention: fp8)
    total = 2 * (c * h + 4) * T / t  # the two norms' inputs and fp32 rstd
    total += saved["qkv"] * T * h / t + fa * T * qkv / t  # QKV's input; rotary q, k, v kept by core attention
    kept_out = recompute != "selective"  # core attention's output and log-sum-exp (else recomputed)
    if kept_out:
        total += fa * T * out / t + 4 * T * a / t
    if saved["proj"] != fa or not kept_out:  # the projection's own input (attention's output, kept above)
        total += saved["proj"] * T * out / t
    gate = 2 if m.gated_mlp else 1
    f = _mid(layer, ("mlp", "shared_experts"))
    act = 1 if s.fp8_activation_store else c  # activation_func_fp8_input_store: SwiGLU's input in fp8
    if f:  # FC1 input, FC1 output (SwiGLU's input, needed for any gradient through the MLP), FC2 input
        total += saved["fc1"] * T * h / t + act * T * gate * f / t + saved["fc2"] * T * f / t
    if layer.moe:
        k, E, fe = layer.experts_per_token, m.num_experts, _mid(layer, ("experts",))
        routed = T * k / t  # copies each rank computes, balanced routing (expert_tensor_parallel_size 1)
        total += c * T * h / t + 8 * T * E / t  # router input, fp32 logits and probabilities
        total += routed * (q * h + act * gate * fe + q * fe + c * h)  # experts' FC1 in/out, FC2 in, unpermuted out
    return total


# the dense linears' sites in a layer and the Hugging Face names of the weights LoRA adapts there
_SITES = {"qkv": ("q_proj", "k_proj", "v_proj"), "proj": ("o_proj",), "fc1": ("gate_proj", "up_proj"),
          "fc2": ("down_proj",)}


def _saved_inputs(s: Scenario, m: ModelSpec, q: int, c: int) -> dict[str, int]:
    """Bytes per element each dense linear keeps of its input: ``q`` when its weight trains; under LoRA none for a
    frozen one (Transformer Engine's ``backward_needs_input = is_grad_enabled and weight.requires_grad``) and the
    16-bit input the adapter keeps where LoRA adapts it (module docstring)."""
    if s.method == "full":
        return dict.fromkeys(_SITES, q)
    targets = lora_targets(s, m)
    return {site: c if targets & set(names) else 0 for site, names in _SITES.items()}


def backward_transient(layer: Layer, m: ModelSpec, s: Scenario) -> float:
    """Activation gradients alive while one layer runs its backward: two of the MLP's width and two of the hidden
    width (with routed experts, per routed copy)."""
    T, t, h = tokens(s), s.tp, m.hidden_size
    f = _mid(layer, ("mlp", "shared_experts"))
    total = 2 * T * (2 * f + 2 * h) / t
    if layer.moe:
        total += 2 * T * layer.experts_per_token * (2 * _mid(layer, ("experts",)) + 2 * h) / t
    return total


def in_flight(s: Scenario, rank: int) -> float:
    """Micro-batches whose activations pipeline rank ``rank`` holds at once, in units of its whole stage (module
    docstring; Narayanan et al. 2021)."""
    p, v, m = s.pp, s.vpp, s.grad_accum_steps
    if p == 1:
        return 1.0
    if v == 1:
        return float(min(p - rank, m))
    chunks = 2 * (p - rank - 1) + (v - 1) * p + 1  # warm-up forwards of model chunks, plus the steady one
    return min(chunks, m * v) / v


def embedding_in_split(s: Scenario, m: ModelSpec) -> bool:
    """Whether the embedding and the loss count as pipeline layers (module docstring: the chunks divide ``L + 2``
    layers and not ``L``)."""
    chunks = s.pp * s.vpp
    return s.pp > 1 and m.num_layers % chunks != 0 and (m.num_layers + 2) % chunks == 0


def stage_layers(s: Scenario, m: ModelSpec, *, first: bool, last: bool) -> int:
    """Decoder layers on one pipeline rank: the first, the last, or (neither) a middle one (module docstring)."""
    if s.pp == 1:
        return m.num_layers
    if not embedding_in_split(s, m):
        return math.ceil(m.num_layers / s.pp)
    return (m.num_layers + 2) // s.pp - first - last


def needs_fp8_transpose(gpu: GpuSpec | None) -> bool:
    """Whether the backward's fp8 GEMMs on ``gpu`` (the plan's resolved card; None: none named) need a transposed
    copy of each fp8 weight: Hopper's and Ada's take the TN layout only; Blackwell's (compute capability 10.x and
    from 13) take any, and TE makes no transpose there (``transformer_engine/pytorch/utils.py``
    ``is_non_tn_fp8_gemm_supported``). AMD's cards (no compute capability), the MI355X too, and unknown ones: needed
    (ROCm/TransformerEngine's ``is_non_tn_fp8_gemm_supported`` returns ``(not IS_HIP_EXTENSION) and ...``, "release
    until rocm support non-TN fp8 gemms")."""
    cc = gpu.capability if gpu is not None else None
    if cc is None:
        return True
    return not (100 <= cc < 120 or cc >= 130)


def keeps_fp8_transpose(s: Scenario, gpu: GpuSpec | None) -> bool:
    """Whether Transformer Engine keeps each fp8 weight's transpose from step to step: where the GEMMs need one
    (:func:`needs_fp8_transpose`), unless ``fp8_transpose_cache`` is false. TE 1.x fills a primary fp8 weight's
    transpose cache only when ``is_first_microbatch`` is set (``module/linear.py``: ``update_transpose_cache =
    is_first_microbatch or skip_fp8_weight_update is not None``), which Megatron-Core passes as None under
    ``disable_parameter_transpose_cache`` (``TELinear.forward``), and the backward's ``weight_fp8.transpose_2d()``
    then allocates a fresh one; ROCm TE 2.x skips it under ``keep_fp8_weight_transpose_cache=False``. AMD's MLPerf
    Llama-2-70B LoRA configs set both (mlcommons/training_results_v5.0 ``AMD/benchmarks/llama2_70b_lora/
    implementations/MI300X_EPYC_9575F_pytorch/src/conf/megatron_gpt_peft_tuning_config.yaml``
    ``disable_parameter_transpose_cache: True``; v5.1 ``config_MI300X_1x8x1.sh`` ``ENABLE_TRANSPOSE_CACHE=0``)."""
    return needs_fp8_transpose(gpu) and s.fp8_transpose_cache is not False


def transient_fp8_transpose(s: Scenario, m: ModelSpec, gpu: GpuSpec | None) -> float:
    """Bytes of the one fp8 weight transpose alive during a dgrad GEMM when none is kept
    (``fp8_transpose_cache`` false where the GEMMs need one): the largest linear weight of a rank, 1 B each, with
    Megatron-Core's fused sites (``linear_qkv``; ``linear_fc1`` holds the gate and up projections)."""
    if s.precision != "fp8-mixed" or keeps_fp8_transpose(s, gpu) or not needs_fp8_transpose(gpu):
        return 0.0
    fused = {"q_proj": "qkv", "k_proj": "qkv", "v_proj": "qkv", "gate_proj": "fc1", "up_proj": "fc1"}
    sites: dict[tuple[int, str], float] = {}
    for i, lyr in enumerate(m.layers):
        for lin in lyr.linears:
            share = s.ep if lin.group == "experts" else s.tp
            key = (i, fused.get(lin.name, lin.name) if lin.group != "experts" else f"{lin.name}#{id(lin)}")
            sites[key] = sites.get(key, 0.0) + lin.weight_params / share
    return max(sites.values(), default=0.0)


def recomputed_layers(s: Scenario, layers: int) -> int:
    """Layers of a stage of ``layers`` that re-run their forward: all of them under ``full``, the first
    ``recompute_layers`` with it (Megatron-Core ``recompute_method='block'``, ``transformer_block.py``
    ``_checkpointed_forward``: ``if layer_idx < recompute_num_layers`` checkpoint, else run plainly); none else."""
    if s.grad_checkpointing != "full":
        return 0
    return layers if s.recompute_layers is None else min(s.recompute_layers, layers)


@dataclass(frozen=True, kw_only=True)
class RankState:
    """Parameters one rank holds, by kind, and the bytes of its weights, gradients, optimizer states and fp8
    weight copies."""

    dense: float
    experts: float
    embedding: float
    trainable: float
    weights: float
    gradients: float
    optimizer: float
    fp8_copies: float
    copies: float = 0.0  # parameters held whole beyond the rank's 1/tp share (MLA's down-projections)
    fp8: float = 0.0  # fp8 primary linear weights (1 B each instead of 2)
    base: float = 0.0  # bytes of the frozen base under LoRA (0 in full training)
    shards: tuple[int, int] = (1, 1)  # the distributed optimizer's shards of dense and of expert parameters


def optimizer_shards(s: Scenario) -> tuple[int, int]:
    """The ranks the distributed optimizer splits a dense and an expert parameter's states over: DP x CP, and the
    expert-data-parallel ranks (DP x CP x TP / EP) for the routed experts; 1 without it."""
    if s.resolved_sharding != "zero1":
        return 1, 1
    n = s.dp * s.cp
    return n, max(n * s.tp // s.ep, 1)


def rank_state(s: Scenario, m: ModelSpec, gpu: GpuSpec | None, *, first: bool, last: bool) -> RankState:
    """The model state of one rank of the first and/or last pipeline stage (module docstring) on ``gpu``, the plan's
    card (whether it keeps fp8 weight transposes: :func:`needs_fp8_transpose`)."""
    t, p, e = s.tp, s.pp, s.ep
    layers = m.layers[:stage_layers(s, m, first=first, last=last)]
    # norms and MoE routers are replicated on every TP rank; the final norm sits on the last stage
    whole = sum(lyr.norm_params + lyr.params_in("router") for lyr in layers) + (m.final_norm_params if last else 0)
    extra = training_extra_params(s, layers)  # MLA's down-projections (and DSA's indexer) whole on every rank
    dense = sum(lyr.params - lyr.params_in("experts") for lyr in layers) / t + whole - \
        sum(lyr.norm_params + lyr.params_in("router") for lyr in layers) / t + extra
    experts = sum(lyr.params_in("experts") for lyr in layers) / e
    emb = m.vocab_size * m.embedding_dim / t
    embedding = (emb if first else 0.0) + (emb if last and (not m.tie_word_embeddings or p > 1) else 0.0)
    linear = sum(lin.weight_params for lyr in layers for lin in lyr.linears if lin.group != "experts") / t + \
        sum(lin.weight_params for lyr in layers for lin in lyr.linears if lin.group == "experts") / e + extra
    fp8 = linear if s.precision == "fp8-mixed" else 0.0  # fp8 primary weights: 1 B each
    # and on Hopper, Ada and AMD their transposes, 1 B each, kept; or the one made for a dgrad GEMM and freed
    transposes = fp8 if keeps_fp8_transpose(s, gpu) else transient_fp8_transpose(s, m, gpu)
    n, n_experts = optimizer_shards(s)  # distributed optimizer: over DP x CP
    opt = OPTIMIZER_BYTES[s.optimizer]
    if s.method == "full":
        params = dense + embedding + experts
        return RankState(dense=dense, experts=experts, embedding=embedding, trainable=params,
                         weights=2 * params - fp8, gradients=4 * params,
                         optimizer=opt * ((dense + embedding) / n + experts / n_experts), fp8_copies=transposes,
                         copies=extra, fp8=fp8, shards=(n, n_experts))
    # LoRA (NeMo's PEFT): adapters trained like full parameters (bf16 + fp32 grads + states); the frozen base in
    # bf16, or under fp8 held as fp8 itself (Transformer Engine fp8_model_init, as NVIDIA's MLPerf LoRA submissions
    # run it): 1 byte per linear weight plus its cached transpose, no 16-bit copy
    adapters = lora_params(m, lora_targets(s, m), s.lora_rank) / (t * p)  # in the layers, split as they are
    base = 2 * (dense + embedding + experts) - fp8
    if s.precision == "fp4-mixed":  # NVFP4 base: row- and column-wise copies (module docstring)
        base -= (2 - 2 * oh.NVFP4_BYTES) * linear
    return RankState(dense=dense, experts=experts, embedding=embedding, trainable=adapters,
                     weights=base + 2 * adapters, gradients=4 * adapters, optimizer=opt * adapters / n,
                     fp8_copies=transposes, fp8=fp8, base=base, shards=(n, n_experts))


# fp32 optimizer bytes per parameter: master weights and the optimizer's moments (Megatron's 12 for Adam)
OPTIMIZER_BYTES = {"adamw": 12, "sgd-momentum": 8, "sgd": 4}


def logits_bytes(s: Scenario, m: ModelSpec) -> tuple[float, float]:
    """(kept, forward transient) bytes of the output layer and loss on the last stage: the fp32 softmax of the
    vocabulary-parallel cross-entropy, the output layer's and final norm's sequence-parallel inputs; the 16-bit
    logits before their upcast."""
    T, t = tokens(s), s.tp
    TV = T * m.vocab_size / t
    return 4 * TV + 2 * (2 * T * m.hidden_size + 4 * T) / t, 2 * TV


def fp8_words(s: Scenario, gpu: GpuSpec | None) -> list[str]:
    """The sentence of an fp8 plan's linears on ``gpu`` (whether their weights' transposes are kept:
    :func:`keeps_fp8_transpose`); none for another precision."""
    if s.precision != "fp8-mixed":
        return []
    return [f"fp8 ({s.fp8_recipe} scaling, Transformer Engine hybrid: E4M3 forward, E5M2 gradients): "
            "linears' inputs saved in fp8, linear weights held in fp8 "
            + ("(their transposes made for each backward GEMM and freed: fp8_transpose_cache false) "
               if needs_fp8_transpose(gpu) and not keeps_fp8_transpose(s, gpu) else "with their transposes ")
            + "(fp8_param_gather, NeMo's fp8 recipes), fp32 master weights; embedding, attention, norms "
            "and the loss in bf16"]


class Megatron(Stack):
    """Megatron-Core's layers (Transformer Engine) and schedules; the memory is :mod:`gpuplan.memory.megatron`."""

    name = "megatron"
    launch_targets = ("megatron", "nemo")  # Megatron-LM's pretrain_gpt.py, NeMo 2.0's recipes
    container = (f"Megatron-LM {MEGATRON_COMMIT[:12]} ({MEGATRON_REPO}) in {MEGATRON_IMAGE}; NeMo 2.0's recipes "
                 "(--target nemo) in NVIDIA's NeMo container")  # no pip line: Megatron-LM's checkout
    model_parallel = ("tp", "pp")  # --tensor-model-parallel-size, --pipeline-model-parallel-size
    experts_loop = False  # its MoE layer runs grouped GEMMs
    own_memory = True  # gpuplan.memory.megatron: whole buffers per rank (rank_state)
    master_partition = True  # bf16 parameters beside the optimizer's fp32 main parameters (OPTIMIZER_BYTES)
    sums_replicated_grads = True  # finalize_model_grads _allreduce_non_tensor_model_parallel_grads


    def seq_len_step(self, s: Scenario) -> int:
        """Context parallelism cuts each sequence into 2·cp chunks and sequence parallelism splits a rank's share
        over tp (:meth:`check_layout`): multiples of 2 x cp x tp where either is on."""
        return 2 * s.cp * s.tp if s.tp * s.cp > 1 else 1

    def check_layout(self, s: Scenario, m: ModelSpec) -> list[str]:
        """Megatron-Core's own rules for its parallel sizes (``megatron/training/arguments.py`` and Transformer
        Engine's context-parallel attention), one sentence each; returns warnings for what it runs unevenly."""
        if s.cp > 1 and s.seq_len % (2 * s.cp):
            raise GpuplanError(f"cp={s.cp} needs seq_len divisible by 2 x cp = {2 * s.cp} (each sequence is cut "
                               f"into 2·cp chunks for load-balanced causal ring attention); seq_len is {s.seq_len}")
        if s.tp > 1 and (s.seq_len // s.cp) % s.tp:
            raise GpuplanError(f"sequence parallelism splits each rank's {s.seq_len // s.cp} tokens (seq_len / cp) "
                               f"over tp={s.tp} ranks: choose a seq_len divisible by tp x cp = {s.tp * s.cp}")
        if s.ep > 1 and not m.is_moe:
            raise GpuplanError(f"ep={s.ep} splits the experts of an MoE model, and {m.name} has none: set ep 1")
        if s.ep > 1 and m.num_experts % s.ep:
            raise GpuplanError(f"ep={s.ep} does not divide the {m.num_experts} experts of {m.name}; use a divisor "
                               f"of {m.num_experts}")
        if s.ep > 1 and (s.tp * s.cp * s.dp) % s.ep:
            raise GpuplanError(f"ep={s.ep} must divide tp x cp x dp = {s.tp * s.cp * s.dp}, the ranks of one "
                               "pipeline stage that the expert-parallel groups are cut from "
                               "(expert_tensor_parallel_size 1)")
        warnings = []
        if m.num_layers % (s.pp * s.vpp) and (m.num_layers + 2) % (s.pp * s.vpp):
            warnings.append(f"{m.num_layers} layers do not split evenly into pp x vpp = {s.pp * s.vpp} model "
                            "chunks: Megatron needs an uneven split (num_layers_in_first/last_pipeline_stage); the "
                            "first stage is counted with the rounded-up share")
        if s.vpp > 1 and s.grad_accum_steps % s.pp:
            warnings.append(f"the interleaved schedule runs best with micro-batches per step ({s.grad_accum_steps}) "
                            f"a multiple of pp={s.pp}")
        return warnings

    def recompute(self, s: Scenario, m: ModelSpec) -> Recompute:
        """``full`` re-runs every layer's forward; ``selective`` re-runs core attention only (the speed model
        prices that attention pass itself): no linears."""
        if s.grad_checkpointing == "full":  # every layer, or recompute_layers of a stage's
            stage = stage_layers(s, m, first=True, last=s.pp == 1)
            return Recompute(layers=recomputed_layers(s, stage) / stage)
        if s.grad_checkpointing == "selective":
            return Recompute(linears={layer: frozenset() for layer, _ in m.layer_kinds()}, attention=True)
        return Recompute()

    def tp_overlap(self, s: Scenario) -> str:
        """``backward`` unless the scenario says: Megatron-Core's linears (Transformer Engine's ``Linear`` and
        ``LayerNormLinear``; ``megatron/core/tensor_parallel/layers.py``
        ``LinearWithGradAccumulationAndAsyncCommunication``) issue the backward's all-gather of the input and
        reduce-scatter of its gradient asynchronously and run the gradient GEMMs meanwhile, while the forward waits
        for its collectives unless ``tp_comm_overlap`` sets up Transformer Engine's userbuffers (``userbuffers``);
        Megatron-LM before its ``--async-tensor-model-parallel-allreduce`` (2021) waited for every one (``none``)."""
        return s.tp_overlap or "backward"

    def extras(self, s: Scenario, m: ModelSpec, shard: float, cuda: bool = True) -> dict[str, float]:
        return {"cuBLAS workspace": oh.CUBLAS_WORKSPACE_GIB * oh.GIB}  # Megatron-Core runs on CUDA only

    def memory_reads_card(self, s: Scenario) -> bool:
        """An fp8 plan's weights keep their transposes on some cards only (:func:`needs_fp8_transpose`)."""
        return s.precision == "fp8-mixed" or super().memory_reads_card(s)

    def notes(self, s: Scenario) -> list[str]:
        out = ["Megatron-Core: sequence parallelism with TP, the distributed optimizer over DP x CP, fp32 gradient "
               "buffers, routed experts split by EP (expert_tensor_parallel_size 1)"]
        if s.precision == "fp4-mixed":
            out.append("NVFP4 (Transformer Engine NVFP4BlockScaling, Megatron --fp4-format e2m1): the linears' GEMMs "
                       "at the fp4 rate, their inputs saved as NVFP4 (4 bits + an 8-bit scale per 16); weights kept "
                       "16-bit (fp4_param off, as NVIDIA's MLPerf fp4 configs set FP4_PARAM=False), fp32 master "
                       "weights; embedding, attention, norms and the loss in bf16 (attention fp8 with fp8_attention)")
        return out
