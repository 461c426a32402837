"""Peak GPU memory of one scenario: persistent state + the maximum over phases, per GPU.

Three levels, as PyTorch and nvidia-smi report them:
- ``allocated``: live tensors (``torch.cuda.max_memory_allocated``), counted from shapes;
- ``reserved``: + the caching allocator's slack (``max_memory_reserved``), see :mod:`gpuplan.overheads`;
- ``device``: + CUDA context, cuBLAS workspace and NCCL buffers (what nvidia-smi shows).

Training peak = persistent (weights, optimizer states, DDP/ZeRO buffers) + max over forward, backward and
optimizer step of what lives then (saved activations, gradients, temporaries), not their sum
(formulas.md section 9). Model-state bytes follow ZeRO (Rajbhandari et al. 2020, section 3) and DeepSpeed's
``estimate_zero*_model_states_mem_needs``; activations are in :mod:`gpuplan.activations`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from . import activations as act
from . import overheads as oh
from .model import ModelSpec
from .quant import Format, make_format
from .scenario import Scenario

GIB = 2**30


@dataclass(kw_only=True)
class Estimate:
    """Bytes per GPU at the peak phase, by part; ``other`` holds named extras. Parts add up to allocated."""

    weights: float = 0.0
    gradients: float = 0.0
    optimizer: float = 0.0
    activations: float = 0.0
    kv_cache: float = 0.0
    other: dict[str, float] = field(default_factory=dict)
    peak_phase: str = ""
    phases: dict[str, float] = field(default_factory=dict)
    cpu: float = 0.0
    slack: float = oh.ALLOCATOR_SLACK_TRAIN
    outside_allocator: dict[str, float] = field(default_factory=dict)  # counted at device level only
    preallocated: float | None = None  # vLLM: the device level is its budget, whatever the tensors
    fragmentation: float = 0.0  # reserved beyond the slack: blocks the allocator holds but cannot reuse
    extra: dict[str, object] = field(default_factory=dict)
    assumptions: list[str] = field(default_factory=list)

    @property
    def allocated(self) -> float:
        return self.weights + self.gradients + self.optimizer + self.activations + self.kv_cache + sum(
            self.other.values())

    @property
    def reserved(self) -> float:
        if self.preallocated is not None:
            return self.preallocated
        return self.allocated * (1 + self.slack) + self.fragmentation

    @property
    def device(self) -> float:
        return self.reserved + sum(self.outside_allocator.values())


# ---- weights ---------------------------------------------------------------------------------------
def weight_format(s: Scenario, m: ModelSpec) -> tuple[Format, tuple[str, ...]]:
    """The storage of the model's linear weights for this scenario, and the groups left unquantized."""
    high = s.compute_bytes
    if s.task == "train" and s.method == "qlora":
        return make_format(s.quant or "nf4", high_bytes=high), ("router",)
    if s.quant is None:
        fmt, skip = m.shipped_format()
        return make_format(fmt.name, high_bytes=high, double_quant=fmt.double_quant, group_size=fmt.group_size,
                           fp8_block=fmt.fp8_block), (*skip, "router")
    return make_format(s.quant, high_bytes=high), ("router",)


# peft's ``all-linear`` on transformers 5 MoE models (checked with the fake-tensor simulation): fused expert
# weights get a ``ParamWrapper`` LoRA in these families; gpt-oss's experts and router are custom modules it skips.
PEFT_ADAPTS_EXPERTS = frozenset({"mixtral", "qwen2_moe", "qwen3_moe", "deepseek_v3"})
CUSTOM_ROUTER = frozenset({"gpt_oss"})


def adapts_experts(s: Scenario, m: ModelSpec) -> bool:
    """Whether peft's ``all-linear`` adapts this model's fused expert weights (peft >= 0.17)."""
    return s.method != "full" and s.lora_targets == "all-linear" and m.is_moe and m.family in PEFT_ADAPTS_EXPERTS


def lora_targets(s: Scenario, m: ModelSpec) -> frozenset[str]:
    """Module names LoRA adapts. ``all-linear`` = every ``nn.Linear`` of the decoder layers except the output
    head (peft's rule); fused 3-D expert weights are counted apart (:func:`adapts_experts`)."""
    names = {lin.name for layer, _ in m.layer_kinds() for lin in layer.linears if lin.count == 1
             and not (lin.group == "router" and m.family in CUSTOM_ROUTER)}
    if s.lora_targets == "all-linear":
        return frozenset(names)
    return frozenset(s.lora_targets)


def lora_params(m: ModelSpec, targets: frozenset[str], rank: int, experts: bool = False) -> int:
    """Trainable LoRA parameters: ``r·(in + out)`` per adapted linear (Hu et al. 2021, section 4). With
    ``experts`` (``all-linear`` on a mixture of experts), peft's ``ParamWrapper`` adapts the fused 3-D expert
    weights of transformers 5 too: ``r·E`` rows per expert matrix, doubled for the fused gate/up projection
    (peft ``lora.ParamWrapper``: ``lora_A = Linear(in, r·E)``, ``lora_B = Linear(r·E, out)``)."""
    total = sum(count * rank * (lin.in_features + lin.out_features) * lin.count
                for layer, count in m.layer_kinds() for lin in layer.linears if lin.name in targets)
    if experts:
        total += sum(count * expert_lora_params(layer, rank) for layer, count in m.layer_kinds() if layer.moe)
    return total


def expert_lora_params(layer, rank: int) -> int:
    """peft ``ParamWrapper`` parameters of one MoE layer: gate/up fused (``2·r·E·(h + 2i)``), down
    (``r·E·(i + h)``)."""
    experts = [lin for lin in layer.linears if lin.group == "experts"]
    if not experts:
        return 0
    E = experts[0].count
    fused_in = [lin for lin in experts if act.INPUT_OF.get(lin.name) == "mlp_in"]
    down = [lin for lin in experts if act.INPUT_OF.get(lin.name) == "mlp_mid"]
    total = 0
    if fused_in:
        total += 2 * rank * E * (fused_in[0].in_features + sum(lin.out_features for lin in fused_in))
    for lin in down:
        total += rank * E * (lin.in_features + lin.out_features)
    return total


# Families transformers runs only with eager attention when SDPA is asked for (``_supports_sdpa = False``):
# Gemma-2's attention logit soft-capping, BLOOM's ALiBi, gpt-oss's attention sinks. FlashAttention kernels
# (attention flash) cover Gemma-2 and gpt-oss.
EAGER_ONLY = frozenset({"gemma2", "bloom", "gpt_oss"})


def attention_kernel(s: Scenario, m: ModelSpec) -> str:
    """The attention implementation transformers will run for ``s.attention`` on this model."""
    return "eager" if s.attention == "sdpa" and m.family in EAGER_ONLY else s.attention


# ---- optimizer -------------------------------------------------------------------------------------
def optimizer_state_bytes(s: Scenario, m: ModelSpec, trainable: int, state_bytes: int) -> float:
    """Bytes of optimizer state for ``trainable`` parameters whose states are ``state_bytes`` wide.

    AdamW: two moments; Lion and SGD with momentum: one; SGD: none; Adafactor (HF defaults, beta1=None):
    row + column second-moment factors per matrix (Shazeer & Stern 2018); 8-bit AdamW: one byte per moment
    plus an fp32 absmax per 256-element block (Dettmers et al. 2022).
    """
    opt = s.optimizer
    if opt == "adamw":
        return 2 * state_bytes * trainable
    if opt in ("adamw-8bit", "paged-adamw-8bit"):
        return trainable * (2 + 2 * 4 / oh.BNB_STATE_BLOCK)
    if opt in ("lion", "sgd-momentum"):
        return state_bytes * trainable
    if opt == "sgd":
        return 0.0
    # adafactor: factored second moment for matrices, full for vectors
    if s.method == "full":
        factored = sum(count * sum((lin.in_features + lin.out_features) * lin.count for lin in layer.linears)
                       for layer, count in m.layer_kinds())
        vectors = trainable - sum(count * sum(lin.weight_params for lin in layer.linears)
                                  for layer, count in m.layer_kinds()) - m.vocab_size * m.embedding_dim * (
            1 if m.tie_word_embeddings else 2)
        embeddings = (m.vocab_size + m.embedding_dim) * (1 if m.tie_word_embeddings else 2)
        return state_bytes * (factored + max(vectors, 0) + embeddings)
    return state_bytes * trainable * 0.05  # LoRA matrices are thin: r + d per (r x d) factor


def optimizer_step_temporaries(s: Scenario, trainable: int, state_bytes: int, largest: int) -> float:
    """Transient bytes of ``optimizer.step()``: torch's foreach AdamW computes ``sqrt(v)`` for the whole
    parameter group at once (``torch/optim/adamw.py`` ``_multi_tensor_adamw``); fused AdamW and the
    bitsandbytes kernels update in place; Adafactor and Lion make a few update-sized temporaries per tensor."""
    if s.optimizer == "adamw" and s.optimizer_impl == "foreach":
        return state_bytes * trainable
    if s.optimizer in ("adafactor", "lion"):
        return 3 * state_bytes * largest
    return 0.0


# ---- training --------------------------------------------------------------------------------------
def training(s: Scenario, m: ModelSpec) -> Estimate:
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
            from .errors import GpuplanError

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


# ---- inference -------------------------------------------------------------------------------------
def kv_dtype_bytes(s: Scenario) -> float:
    return {"auto": s.compute_bytes, "fp16": 2, "bf16": 2, "fp8": 1, "int8": 1}[s.kv_cache_dtype]


def kv_bytes_per_sequence(s: Scenario, m: ModelSpec, tokens: int, layers=None) -> float:
    """KV bytes of one sequence on one GPU: per layer ``kv_dims`` elements per token, sliding windows capped,
    KV heads split over TP (replicated when TP exceeds them); MLA's latent in vLLM, while transformers
    caches the decompressed per-head keys and values."""
    b = kv_dtype_bytes(s)
    total = 0.0
    for layer in layers if layers is not None else m.layers:
        cached = min(tokens, layer.window) if layer.window else tokens
        if s.engine == "vllm":
            cached = math.ceil(cached / oh.VLLM_BLOCK_TOKENS) * oh.VLLM_BLOCK_TOKENS
        if layer.attention == "mla":
            mla = m.mla
            dims = layer.kv_dims if s.engine != "transformers" else \
                m.num_heads * (mla["qk_nope_head_dim"] + mla["qk_rope_head_dim"] + mla["v_head_dim"]) // s.tp
        else:
            dims = layer.kv_dims * math.ceil(m.num_kv_heads / s.tp) / m.num_kv_heads
        total += cached * dims * b
        if s.kv_cache_dtype == "int8":
            total += cached * 2 * math.ceil(m.num_kv_heads / s.tp) * 4  # per-token-head fp32 scales
    return total


def prefill_working_set(s: Scenario, m: ModelSpec, tokens: int, seqs: int) -> float:
    """Largest set of temporaries of one layer's forward without autograd, for ``tokens`` tokens at once:
    the MLP holds act(gate), up and their product (``3·i``) plus the residual and its norm (``2·h``); eager
    attention holds the fp32 softmax of ``seqs·heads·s²`` scores."""
    c = s.compute_bytes
    t = s.tp
    i = max((lin.in_features for layer in m.layers for lin in layer.linears
             if act.INPUT_OF.get(lin.name) == "mlp_mid" and lin.group != "experts"), default=0) / t
    mlp = c * tokens * (3 * i + 2 * m.hidden_size)
    if m.is_moe:
        i_e = max((lin.in_features for layer in m.layers for lin in layer.linears if lin.group == "experts"),
                  default=0)
        mlp = max(mlp, c * tokens * m.experts_per_token * (3 * i_e + 2 * m.hidden_size) + 8 * tokens * m.num_experts)
    heads = max(m.num_heads // t, 1)
    attn = c * tokens * (heads * m.head_dim * 3 + 2 * m.hidden_size) + 4 * tokens * m.hidden_size
    if attention_kernel(s, m) == "eager":
        seq = tokens // max(seqs, 1)
        attn += (4 + 2 * c) * seqs * heads * seq * seq
    return max(mlp, attn)


def inference(s: Scenario, m: ModelSpec, capacity_gib: float | None) -> Estimate:
    e = Estimate(slack=oh.ALLOCATOR_SLACK_INFER)
    if attention_kernel(s, m) != s.attention:
        e.assumptions.append(f"{m.family} runs eager attention in transformers (no SDPA support): the s x s "
                             "scores are materialized; attention flash (FlashAttention-2) avoids them")
    fmt, skip = weight_format(s, m)
    t, pp = s.tp, s.pp
    weights = sum(m.weight_bytes(fmt, skip=skip).values())
    e.weights = weights / (t * pp)
    layers = m.layers[: math.ceil(m.num_layers / pp)]
    tokens = s.prompt_tokens + s.output_tokens
    c = s.compute_bytes
    if fmt.name != "none":
        e.assumptions.append(f"weights stored as {fmt.name}; embeddings, lm_head and norms at {c} bytes")

    if s.engine == "vllm":
        return _vllm(s, m, e, layers, tokens, capacity_gib)
    if s.engine == "llama.cpp":
        return _llama_cpp(s, m, e, fmt, tokens, capacity_gib)

    e.kv_cache = s.batch_size * kv_bytes_per_sequence(s, m, tokens, layers)
    prefill_tokens = s.batch_size * s.prompt_tokens
    work = prefill_working_set(s, m, prefill_tokens, s.batch_size)
    logits = s.batch_size * m.vocab_size * (c + 4) / t  # last position only (generate's logits_to_keep=1)
    prompt_kv = s.batch_size * kv_bytes_per_sequence(s, m, s.prompt_tokens, layers)
    prefill = prompt_kv + work + logits
    decode_work = prefill_working_set(s, m, s.batch_size, s.batch_size)
    decode = e.kv_cache + decode_work + logits + kv_bytes_per_sequence(s, m, tokens, layers[:1]) * s.batch_size
    e.phases = {"prefill": (e.weights + prefill) / GIB, "decode": (e.weights + decode) / GIB}
    # transformers grows each layer's cache with torch.cat every step: the freed, one-token-smaller blocks
    # cannot serve the next, larger request, so the caching allocator holds extra segments (reserved only)
    # (counted when the decode phase with those segments exceeds the allocated peak)
    fragmented = e.weights + decode + oh.KV_GROWTH_FRAGMENTATION * e.kv_cache
    e.fragmentation = max(0.0, fragmented - e.weights - max(prefill, decode))
    if prefill > decode:
        e.peak_phase, e.kv_cache, e.activations = "prefill", prompt_kv, work + logits
    else:
        e.peak_phase, e.activations = "decode", decode - e.kv_cache
    return e


def _vllm(s: Scenario, m: ModelSpec, e: Estimate, layers, tokens: int, capacity_gib: float | None) -> Estimate:
    """vLLM preallocates ``gpu_memory_utilization`` of the card and gives the rest to the KV cache
    (vLLM ``determine_num_available_blocks``; formulas.md section 3)."""
    batched = s.max_num_batched_tokens or oh.VLLM_MAX_BATCHED_TOKENS
    c = s.compute_bytes
    sampler = oh.VLLM_MAX_NUM_SEQS * m.vocab_size * 4 * 2 / s.tp  # fp32 logits and probabilities
    e.activations = prefill_working_set(s, m, batched, 1) + sampler
    per_seq = kv_bytes_per_sequence(s, m, tokens, layers)
    e.kv_cache = s.batch_size * per_seq
    e.peak_phase = "serving"
    e.assumptions.append(f"vLLM: max_num_batched_tokens {batched}, block size {oh.VLLM_BLOCK_TOKENS}, "
                         f"gpu_memory_utilization {s.gpu_memory_utilization}")
    if capacity_gib is not None:
        budget = s.gpu_memory_utilization * capacity_gib * GIB
        context = oh.CUDA_CONTEXT_DEFAULT_GIB * GIB
        free_kv = budget - context - e.weights - e.activations
        e.preallocated = budget - context
        e.extra["kv_cache_pool_gib"] = max(free_kv, 0) / GIB
        e.extra["max_concurrency"] = max(int(free_kv // per_seq), 0) if per_seq else None
        per_token = kv_bytes_per_sequence(s, m, oh.VLLM_BLOCK_TOKENS, layers) / oh.VLLM_BLOCK_TOKENS
        e.extra["max_context_tokens"] = max(int(free_kv // per_token), 0) if per_token else None
    _ = c
    return e


def _llama_cpp(s: Scenario, m: ModelSpec, e: Estimate, fmt: Format, tokens: int, capacity_gib) -> Estimate:
    """llama.cpp: GGUF weights, an f16 KV cache for the whole context (q8_0 with an 8-bit KV dtype), and a
    compute buffer sized by the micro-batch (n_ubatch 512): logits ``n_ubatch·V`` and the ``n_ubatch·n_ctx``
    attention scores per head, in fp32."""
    kv_b = 2 if s.kv_cache_dtype in ("auto", "fp16", "bf16") else 8.5 / 8
    per_layer_kv = [layer.kv_dims * kv_b * (min(tokens, layer.window) if layer.window else tokens)
                    for layer in m.layers]
    e.kv_cache = s.batch_size * sum(per_layer_kv)
    ub = oh.LLAMA_CPP_UBATCH
    e.activations = 4 * ub * (m.vocab_size + m.num_heads * tokens * s.batch_size)
    e.peak_phase = "prefill"
    if capacity_gib is not None:
        budget = capacity_gib * GIB - oh.CUDA_CONTEXT_DEFAULT_GIB * GIB - e.activations
        non_layer = m.weight_bytes(fmt)["lm_head"] + m.weight_bytes(fmt)["norms"]
        per_layer_w = (e.weights - sum(m.weight_bytes(fmt)[p] for p in ("embeddings", "lm_head", "norms"))) \
            / m.num_layers
        per_layer = per_layer_w + e.kv_cache / m.num_layers
        fit = int(max(budget - non_layer, 0) // per_layer) if per_layer else m.num_layers
        e.extra["gpu_layers"] = min(fit, m.num_layers)
        e.extra["offloaded_layers"] = m.num_layers - e.extra["gpu_layers"]
    return e


def device_overheads(s: Scenario, generation: str | None) -> dict[str, float]:
    """Memory outside PyTorch's allocator: CUDA context, and NCCL buffers when several GPUs talk."""
    out = {"CUDA context": oh.CUDA_CONTEXT_GIB.get(generation or "", oh.CUDA_CONTEXT_DEFAULT_GIB) * GIB}
    if s.world_size > 1:
        out["NCCL buffers"] = oh.NCCL_GIB * GIB
    return out
