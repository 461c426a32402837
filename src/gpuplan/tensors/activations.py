"""Activation memory, counted from the tensors autograd saves and the temporaries ops allocate.

Per decoder layer of ``T`` tokens (micro-batch x sequence, divided by TP when sequence parallel), at
``c`` bytes per element of the compute dtype, as the Hugging Face implementations run:

- each norm saves its fp32 upcast input (``4·T·h``; HF RMSNorm computes in fp32), and its normalized
  output when its weight trains (in the compute dtype in HF's RMSNorm, in fp32 in torchtune's);
- a linear saves its input when its weight trains or a LoRA adapter sits on it (frozen weights need no
  input: autograd saves only what a required gradient uses); under torch autocast with fp32 weights every
  linear casts its input separately, so q, k and v each save a bf16 copy;
- attention with SDPA / FlashAttention saves q, k, v, the output and the fp32 log-sum-exp (``4·T·a``); the output
  is also the output projection's saved input, one tensor (:data:`SDPA_KINDS`); eager attention materializes the
  ``b·a·s²`` scores: fp32 softmax output + its cast to the compute dtype, and saves no output of its own;
- a SwiGLU MLP saves gate, act(gate) and up (``3·c·T·i``) plus the product when down_proj trains; a GELU MLP
  saves fc1's output;
- MoE layers save the routed copies (top-k per token) through the experts, and the fp32 router softmax;
- LoRA adapters save their rank-``r`` intermediate, and with dropout a dropped copy of the input and the mask
  (huggingface/transformers #25572 gives ``2·(4·s·b·(r+h) + s·b·h)`` per adapted linear for fp32 adapters);
- logits: the fp32 log-softmax output stays saved (``4·T·V``); the forward makes a bf16 logits tensor and
  its fp32 copy (HF ``ForCausalLMLoss`` upcasts), the backward an fp32 and a bf16 gradient.

These follow Korthikanti et al. 2022 ("Reducing Activation Recomputation in Large Transformer Models",
section 4.1) in spirit, but count the tensors of the HF code rather than Megatron's fused kernels; the
fake-tensor simulation (``gpuplan simulate``) is the oracle that checks them.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..model.layers import Layer, Linear

# Which input a linear reads, by module name: linears with the same key share one input tensor.
INPUT_OF = {
    "q_proj": "attn_in", "k_proj": "attn_in", "v_proj": "attn_in", "qkv_proj": "attn_in",
    "query_key_value": "attn_in", "c_attn": "attn_in", "q_a_proj": "attn_in", "kv_a_proj_with_mqa": "attn_in",
    "q_b_proj": "q_latent", "kv_b_proj": "kv_latent",
    "o_proj": "attn_out", "dense": "attn_out", "c_proj": "attn_out",
    "gate_proj": "mlp_in", "up_proj": "mlp_in", "gate_up_proj": "mlp_in", "fc1": "mlp_in", "c_fc": "mlp_in",
    "dense_h_to_4h": "mlp_in", "w1": "mlp_in", "w3": "mlp_in", "gate": "mlp_in", "router": "mlp_in",
    "shared_expert_gate": "mlp_in",
    "down_proj": "mlp_mid", "fc2": "mlp_mid", "dense_4h_to_h": "mlp_mid", "mlp.c_proj": "mlp_mid", "w2": "mlp_mid",
    "input_linear": "mlp_in", "output_linear": "mlp_mid",  # Granite's fused MLP
    "in_proj_qkvz": "attn_in", "in_proj_ba": "attn_in", "in_proj_qkv": "attn_in", "in_proj_z": "attn_in",
    "in_proj_b": "attn_in", "in_proj_a": "attn_in", "in_proj": "attn_in", "out_proj": "attn_out",  # DeltaNet, Mamba
}
CAST_FROM_FP32 = {"attn_in", "mlp_in"}  # inputs that come straight from an fp32 norm under autocast
# Softmax-attention layers whose SDPA output is the output projection's input: the kernel allocates its output in
# the query's layout (torch ``_meta_registrations.py`` ``meta__scaled_dot_product_flash_attention``: ``empty_like
# (query)``; CUDA ``_flash_attention_forward``: ``empty_like(q)`` of the BSHD query), and every stack makes its
# query a transposed (b, s, heads, d) projection, so ``attn_output.transpose(1, 2).contiguous()`` (transformers
# integrations/sdpa_attention.py ``sdpa_attention_forward``; torchtitan models/llama3/model/model.py ``Attention``;
# torchtune modules/attention.py ``MultiHeadAttention``) copies nothing: o_proj saves the tensor SDPA saved
SDPA_KINDS = frozenset({"full", "sliding", "chunked", "mla", "cross"})
QK_NORM = frozenset({"qwen3", "qwen3_moe", "olmo2", "gemma3", "gemma3_text"})  # families that norm q and k


@dataclass(frozen=True, kw_only=True)
class ActivationSetup:
    """How a layer runs: what trains, in which dtype, with which attention kernel."""

    tokens: int  # T = micro_batch x seq_len on this rank
    batch: int
    seq: int
    compute_bytes: int = 2
    autocast_fp32_weights: bool = False  # torch AMP over fp32 weights (full fine-tuning, single/DDP)
    base_trainable: bool = True
    lora_targets: frozenset[str] = frozenset()
    attention: str = "sdpa"
    tp: int = 1
    lora_rank: int = 0
    lora_dropout: float = 0.0
    # each adapter saves its own copy of its input, in this many bytes (0: the shared input): peft casts the input
    # to fp32 adapters (``_cast_input_dtype``) and autocast casts it back (compute bytes), or, without autocast,
    # lora_A saves the fp32 copy (4 bytes)
    lora_cast_bytes: int = 0
    lora_inner_bytes: int = 0  # bytes of lora_A's rank-r output saved by lora_B (0: the compute dtype)
    fused_norm: bool = False  # RMSNorm kernel (Liger, Unsloth, inductor) saves its input and fp32 rstd per row
    # bytes per element of the normalized output a trained norm weight saves (0: the residual stream's dtype);
    # torchtune's fp32 RMSNorm keeps it in fp32 (:mod:`gpuplan.stacks.torchtune`)
    norm_out_bytes: int = 0
    fused_mlp: bool = False  # SwiGLU kernel saves gate and up, recomputes act(gate) (Liger, Unsloth, inductor)
    kv_expanded: bool = False  # keys and values repeated to every query head before attention (torchtune, Unsloth)
    lora_experts: bool = False  # peft ParamWrapper on fused MoE experts: W + B@A materialized per forward
    fp32_residual_4bit: bool = False  # QLoRA after peft's fp32 upcast: the residual stream runs in fp32
    base_4bit: bool = False  # bitsandbytes 4-bit base linears: MatMul4Bit saves its input for the backward


def trains(lin: Linear, setup: ActivationSetup) -> bool:
    return setup.base_trainable or lin.name in setup.lora_targets


def saved_bytes(layer: Layer, model, setup: ActivationSetup) -> float:
    """Bytes one layer keeps for its backward (no checkpointing)."""
    T, c, t = setup.tokens, setup.compute_bytes, setup.tp
    Ts = T / t  # sequence-parallel: h-wide tensors are split over TP ranks (Korthikanti et al. 2022)
    h = model.hidden_size
    residual = 4 if setup.autocast_fp32_weights else c
    total = 0.0
    # norms: fp32 upcast input (or the fp32 residual itself), plus the normalized output if the weight trains
    n_norms = 1 if model.parallel_residual else 2
    if model.family in ("gemma2", "gemma3", "gemma3_text"):
        n_norms = 4
    if setup.fused_norm:
        total += n_norms * (residual * Ts * h + 4 * Ts)
    else:
        normalized = setup.norm_out_bytes or residual
        total += n_norms * (4 * Ts * h + (normalized * Ts * h if setup.base_trainable else 0))
    if model.family in QK_NORM and layer.attention != "mla":  # RMSNorm on queries and keys: fp32 inputs saved
        qk = T * (max(model.num_heads // t, 1) + max(model.num_kv_heads // t, 1)) * model.head_dim
        total += 4 * qk + (c * qk if setup.base_trainable else 0)
    # linear inputs (an SDPA layer's output projection reads the attention output, counted by attention_saved)
    seen: set[str] = {"attn_out"} if setup.attention != "eager" and layer.attention in SDPA_KINDS else set()
    for lin in layer.linears:
        if lin.group == "experts" or not trains(lin, setup):
            continue
        if (not setup.base_trainable and setup.lora_dropout > 0 and not setup.lora_cast_bytes
                and lin.name in setup.lora_targets):
            continue  # the adapter saves its own dropped copy instead of the shared input (lora_saved)
        key = INPUT_OF.get(lin.name, lin.name)
        row_parallel = key in ("attn_out", "mlp_mid")
        size = (T * lin.in_features / t) if row_parallel else Ts * lin.in_features
        if setup.lora_cast_bytes and lin.name in setup.lora_targets and not setup.base_trainable:
            total += setup.lora_cast_bytes * size  # the adapter's own copy of its input
        elif setup.autocast_fp32_weights and key in CAST_FROM_FP32:
            total += c * size  # one bf16 cast per linear
        elif key not in seen:
            total += c * size
        seen.add(key)
    if setup.base_4bit:
        total += base_4bit_saved(layer, setup)
    if setup.fp32_residual_4bit:
        total += upcast_4bit_saved(layer, model, setup)
    total += attention_saved(layer, model, setup)
    total += mlp_saved(layer, model, setup)
    total += lora_saved(layer, setup)
    return total


def base_4bit_saved(layer: Layer, setup: ActivationSetup) -> float:
    """bitsandbytes ``MatMul4Bit`` saves its input whenever it needs an input gradient (``ctx.tensors = (A,
    B)``), though a frozen weight needs none for itself: each distinct input of the 4-bit base linears is
    kept once (the attention output is saved by attention already)."""
    T, c, t = setup.tokens, setup.compute_bytes, setup.tp
    sizes: dict[str, float] = {}
    for lin in layer.linears:
        key = INPUT_OF.get(lin.name, lin.name)
        if lin.group in ("experts", "router") or key == "attn_out":
            continue
        sizes[key] = T / t * lin.in_features
    return c * sum(sizes.values())


def upcast_4bit_saved(layer: Layer, model, setup: ActivationSetup) -> float:
    """QLoRA after ``prepare_model_for_kbit_training`` casts embeddings and norms to fp32: the residual stream
    and the norms' outputs are fp32, so each bitsandbytes ``Linear4bit`` reading a norm casts it to its compute
    dtype itself and ``MatMul4Bit`` saves that copy (q, k and v keep three copies, gate and up two, where one
    shared input sufficed), and the keys and values leave their LoRA sum in fp32 (the rotary tables follow
    the fp32 hidden states). Counted against the fake-tensor simulation of Llama, Qwen2.5 and Mistral."""
    T, c, t = setup.tokens, setup.compute_bytes, setup.tp
    groups: dict[str, int] = {}
    for lin in layer.linears:
        key = INPUT_OF.get(lin.name, lin.name)
        if key in CAST_FROM_FP32 and lin.group not in ("experts", "router"):
            groups[key] = groups.get(key, 0) + 1
    total = sum(c * T / t * model.hidden_size * (n - 1) for n in groups.values())
    if layer.attention != "mla":
        total += 2 * 4 * T * max(model.num_kv_heads // t, 1) * model.head_dim
    return total


def lora_saved(layer: Layer, setup: ActivationSetup) -> float:
    """LoRA's own activations per adapted linear (peft ``lora.Linear``): lora_B saves lora_A's ``T x r``
    output; with ``lora_dropout > 0`` each adapter also keeps its dropped copy of the input and the
    dropout mask (one byte per element), since peft applies a separate dropout per adapter. Under autocast
    with fp32 adapters, peft casts the input to fp32 (``_cast_input_dtype``) and autocast casts it back for
    ``lora_A``: that 16-bit copy, counted with the linear inputs, is the one the adapter saves."""
    if not setup.lora_rank:
        return 0.0
    T, c = setup.tokens, setup.compute_bytes
    inner = setup.lora_inner_bytes or c
    total = 0.0
    for lin in layer.linears:
        if lin.name in setup.lora_targets and lin.count == 1:
            total += inner * T * setup.lora_rank
            if setup.lora_dropout > 0:
                total += (1 + (0 if setup.lora_cast_bytes else c)) * T * lin.in_features
    return total


def attention_saved(layer: Layer, model, setup: ActivationSetup) -> float:
    T, c, t = setup.tokens, setup.compute_bytes, setup.tp
    a = max(model.num_heads // t, 1)
    if layer.attention == "mla":
        mla = model.mla
        qk = a * (mla["qk_nope_head_dim"] + mla["qk_rope_head_dim"])
        v = a * mla["v_head_dim"]
        qkv, out = c * T * (2 * qk + v), c * T * v
    else:
        d = model.head_dim
        kv = max(model.num_kv_heads // t, 1)
        # eager (transformers' repeat_kv), torchtune (expand + flatten) and Unsloth's xformers path (expand + reshape)
        # repeat KV heads before attention
        kv_saved = a if setup.attention == "eager" or setup.kv_expanded else kv
        qkv, out = c * T * d * (a + 2 * kv_saved), c * T * a * d
    if setup.attention == "eager":  # probs @ v saves its inputs: the output is o_proj's (a copy, counted there)
        out = 0.0 if layer.attention in SDPA_KINDS else out
        scores = setup.batch * a * setup.seq * setup.seq  # full s x s, even for sliding-window layers
        softcap = c if softcapping(model, "attn_logit_softcapping") else 0  # Gemma-2 saves tanh(scores / cap)
        return qkv + (4 + c + softcap) * scores
    return qkv + out + 4 * T * a


def mlp_saved(layer: Layer, model, setup: ActivationSetup) -> float:
    T, c, t = setup.tokens, setup.compute_bytes, setup.tp
    total = 0.0
    dense = [lin for lin in layer.linears if lin.group in ("mlp", "shared_experts")]
    widths = {INPUT_OF.get(lin.name): lin.in_features for lin in dense}
    if "mlp_mid" in widths:
        i = widths["mlp_mid"] / t
        n_shared = sum(1 for lin in dense if INPUT_OF.get(lin.name) == "mlp_mid")
        total += n_shared * ((2 if setup.fused_mlp else 3) if model.gated_mlp else 1) * c * T * i
    if layer.moe:
        k, E = layer.experts_per_token, model.num_experts
        experts = [lin for lin in layer.linears if lin.group == "experts"]
        i_e = next((lin.in_features for lin in experts if INPUT_OF.get(lin.name) == "mlp_mid"), 0)
        routed = T * k
        total += 8 * T * E  # router logits and fp32 softmax
        total += c * routed * (3 * i_e if model.gated_mlp else i_e) + c * routed * model.hidden_size  # internals, out
        if any(trains(lin, setup) for lin in experts) or setup.lora_experts:
            total += c * routed * (model.hidden_size + i_e)  # gathered inputs and down_proj inputs
        if setup.lora_experts:  # the adapted expert weights W + scaling·B@A, saved for the input gradient
            total += c * sum(lin.weight_params for lin in experts)
    return total


def boundary_bytes(model, setup: ActivationSetup) -> float:
    """What full checkpointing keeps per layer: the layer's input (the residual stream, fp32 when the weights
    or, after QLoRA's upcast, the embeddings are fp32)."""
    residual = 4 if setup.autocast_fp32_weights or setup.fp32_residual_4bit else setup.compute_bytes
    return residual * setup.tokens / setup.tp * model.hidden_size


def backward_transient(layer: Layer, model, setup: ActivationSetup) -> float:
    """Gradients of activations alive while one layer runs backward: the MLP's intermediate gradients
    (two of width ``i``) and two of width ``h``; eager attention adds its score gradients."""
    T, c, t = setup.tokens, setup.compute_bytes, setup.tp
    h = model.hidden_size
    widths = [lin.in_features for lin in layer.linears if INPUT_OF.get(lin.name) == "mlp_mid"
              and lin.group != "experts"]
    i = max(widths, default=0) / t
    total = c * T * (2 * i + 2 * h)
    if layer.moe:
        experts = [lin for lin in layer.linears if lin.group == "experts" and INPUT_OF.get(lin.name) == "mlp_mid"]
        i_e = max((lin.in_features for lin in experts), default=0)
        total += c * T * layer.experts_per_token * (2 * i_e + 2 * h)
    if setup.attention == "eager":
        a = max(model.num_heads // t, 1)
        total += (4 + 4 + c) * setup.batch * a * setup.seq * setup.seq
    return total


def forward_transient(layer: Layer, model, setup: ActivationSetup) -> float:
    """Temporaries of one layer's forward that are not saved: eager attention's raw and masked scores."""
    if setup.attention != "eager":
        return 0.0
    a = max(model.num_heads // setup.tp, 1)
    return 2 * setup.compute_bytes * setup.batch * a * setup.seq * setup.seq


def softcapping(model, key: str) -> bool:
    """Whether the config soft-caps logits (Gemma-2: ``final_logit_softcapping``, ``attn_logit_softcapping``):
    ``cap · tanh(x / cap)`` saves the tanh output for the backward."""
    config = model.config.get("text_config") or model.config
    return bool(config.get(key))


def logits_bytes(model, setup: ActivationSetup, lm_head_cast: bool = False) -> tuple[float, float, float]:
    """(saved, forward transient, backward transient) bytes of the logits and the loss.

    Saved: the fp32 log-softmax output (``F.cross_entropy`` = log_softmax + nll_loss, HF ``ForCausalLMLoss``),
    and, when autocast runs an fp32 lm_head in 16 bits (full fine-tuning in ``-mixed`` precision, QLoRA after
    peft's fp32 upcast), the 16-bit copy of its weight that the matmul saves for the input gradient.
    Forward: the logits in the compute dtype (the model's output keeps them alive) and their fp32 copy.
    Backward: ``nll_loss_backward`` makes a full fp32 gradient, ``_log_softmax_backward_data`` another while the
    first and the saved output are alive; the cast back to the compute dtype comes after both are freed.
    Soft-capped logits (Gemma-2) also keep the tanh output. Vocabulary-parallel over TP.
    """
    TV = setup.tokens * model.vocab_size / setup.tp
    c = setup.compute_bytes
    upcast = 4 if c < 4 else 0
    cast = c * model.vocab_size * model.embedding_dim / setup.tp if lm_head_cast else 0.0
    softcap = c * TV if softcapping(model, "final_logit_softcapping") else 0.0
    return 4 * TV + cast + softcap, (c + upcast) * TV, 8 * TV
