"""DPO's step as TRL's DPOTrainer runs it (``train_objective: dpo``; huggingface/trl 1.16, ``trainer/dpo_trainer.py``;
stacks hf, axolotl, unsloth), and as torchtune 0.6.1's DPO recipes run it (its fp32 logits: :func:`logits_head`).

- **Pairs as rows.** ``DataCollatorForPreference`` pads the prompts (left) and the chosen and rejected replies (right)
  and stacks ``[prompt + chosen; prompt + rejected]``: the model's batch is twice the pairs of the micro-batch
  (``_compute_loss``: ``chosen_logps, rejected_logps = logps.chunk(2, dim=0)``), each row the prompt and the longer
  reply of the batch. :func:`pair_rows` is that scenario; memory and speed plan it.
- **The reference.** ``_compute_loss`` runs the policy's forward first, then the reference's under
  ``torch.no_grad()`` (gradient checkpointing off for it), while the policy's saved activations wait for the
  backward. Under peft it is the same model with the adapters off (``use_adapter(..., adapter_name=None)``): no
  second copy. Under full fine-tuning ``__init__`` loads a second model from the same checkpoint in the policy's
  dtype (``ref_model_init_kwargs.setdefault("dtype", self.model.dtype)``) and prepares it as the policy is
  (``prepare_deepspeed``: ZeRO-3 shards it, ZeRO-1/2 keep a whole copy; ``prepare_fsdp``: sharded), unless
  ``precompute_ref_log_probs``, which computes the reference's log-probabilities in one pass before training and
  keeps no reference model (``self.ref_model = None``).
- **The head.** ``add_fused_lm_head`` makes ``model(..., fused_lm_head=True)`` score the labelled positions with
  ``ChunkedLogProbFunction`` (``trl/kernels/chunked_logprob.py``): no ``(batch, seq, vocab)`` logits; tiles of
  ``TOKEN_CHUNK_SIZE`` (4096) tokens by 32,768 vocabulary entries (:func:`trl_head`).
"""

from __future__ import annotations

from ..scenario import Scenario
from ..stacks import State
from ..stacks.base import LossBytes, residual_bytes
from ..tensors import activations as act

TOKEN_TILE, VOCAB_TILE = 4096, 32768  # trl/kernels/chunked_logprob.py TOKEN_CHUNK_SIZE; _CHUNKED_LOGPROB_CHUNK_SIZE


def pair_rows(s: Scenario) -> Scenario:
    """The scenario as the model's forward sees a DPO micro-batch: the chosen and the rejected sequence of each pair
    as two rows of one batch (TRL's ``DataCollatorForPreference``), so ``micro_batch_size`` doubles; ``s`` itself
    when it is no DPO run."""
    if s.train_objective != "dpo":
        return s
    return s.with_resolved({"micro_batch_size": 2 * s.micro_batch_size})


def reference_model(s: Scenario, st: State, stack, master_partition: bool) -> dict[str, float]:
    """Bytes per GPU of the DPO reference kept through training: under method full a frozen copy of the policy's
    module weights (``st``: the policy's state per GPU; same sharding: module docstring), without DeepSpeed's fp32
    master partition, which belongs to the policy's optimizer (the reference's engine has none); none under lora
    and qlora (the base with the adapters off). TRL loads it in the policy's dtype (fp32 where ``-mixed`` precision
    keeps fp32 weights, no ``master_partition``) and drops it with ``precompute_ref_log_probs``; a stack that loads
    the reference itself (:attr:`~gpuplan.stacks.base.Stack.dpo_loads_reference`: axolotl) holds it in the compute
    dtype and hands it to the DPOTrainer, which keeps a reference it was given even when the log-probabilities are
    precomputed (trl 1.16 ``trainer/dpo_trainer.py`` ``__init__``: ``self.ref_model = ref_model``)."""
    if s.train_objective != "dpo" or s.method != "full":
        return {}
    own = stack.dpo_loads_reference
    if s.precompute_ref_log_probs and not own:
        return {}
    master = st.master if s.offload == "none" else 0.0  # offloaded, it already left st.weights
    copy = st.weights - master
    if own and s.precision.endswith("-mixed") and not master_partition:  # fp32 module weights, a 16-bit copy
        copy /= 2
    return {"DPO reference model (frozen copy)": copy}


def loss_of(stack, s: Scenario, m, setup: act.ActivationSetup, head_cast: bool, free: float | None) -> LossBytes:
    """The output head and loss of a step: TRL's fused log-prob head under DPO (:func:`trl_head`), else the
    stack's own (:meth:`gpuplan.stacks.base.Stack.loss`)."""
    if s.train_objective == "dpo":
        return logits_head(s, m, setup) if stack.dpo_logits_head else trl_head(s, m, setup, head_cast)
    return stack.loss(s, m, setup, head_cast, free)


def logits_head(s: Scenario, m, setup: act.ActivationSetup) -> LossBytes:
    """torchtune's DPO head (0.6.1 ``recipes/lora_dpo_single_device.py`` ``concatenated_forward``, as in
    ``full_dpo_distributed.py``): ``TransformerDecoder.unembed`` returns fp32 logits (``self.output(h).float()``, no
    output chunks in the DPO recipes), then ``rlhf.get_batch_log_probs`` -> ``logits_to_logprobs``:
    ``torch.gather(F.log_softmax(logits / temperature, -1), 2, labels)``. Over the ``T x V`` positions of the paired
    batch: saved, the log_softmax output (fp32; its backward reads it); forward, the fp32 logits (held by the
    returned chosen/rejected views until the train loop's ``del``) and the fp32 copy ``logits / 1.0`` makes; backward,
    gather's scattered fp32 gradient and log_softmax's fp32 input gradient (each later step, the division's and
    the slice's gradients, and the bf16 cast back, holds no more). Held: the LoRA recipes unpack the reference's
    chosen and rejected logits into ``_, _`` (``lora_dpo_single_device.py`` and ``lora_dpo_distributed.py``
    ``train``), so the reference's fp32 logits stay alive through the backward, the optimizer step and the next
    micro-step's policy forward, until the next reference forward rebinds ``_``; ``full_dpo_distributed.py``
    deletes them (``del reference_chosen_logits, reference_rejected_logits``)."""
    TV = setup.tokens * m.vocab_size / setup.tp
    return LossBytes(saved=4 * TV, forward=8 * TV, backward=8 * TV, held=4 * TV if s.method != "full" else 0.0)


def trl_head(s: Scenario, m, setup: act.ActivationSetup, head_cast: bool) -> LossBytes:
    """TRL's fused log-prob head (``ChunkedLogProbFunction``) over the ``T`` positions of the paired batch (an upper
    bound: on CUDA it scores only the reply positions, ``hidden_states[mask]``). Saved: the hidden rows it scores (a
    copy, in the residual dtype; under full fine-tuning :func:`~gpuplan.stacks.base.head_inputs` counts it as the
    head's input), the targets (int64) and ``log_z`` (fp32). Forward: one ``min(T, 4096) x 32768`` tile in the
    compute dtype and six fp32 vectors of ``T``. Backward: ``grad_hidden`` (fp32, ``T x h``), under full
    fine-tuning ``grad_weight`` (fp32, ``V x h``), the tile, and their casts back to the tensors' dtypes. In both,
    each tile's operands cast to the compute dtype (``.to(compute_dtype)``): a chunk of ``32768`` rows of the head's
    weight (two in the backward) when it is fp32 (``head_cast``: autocast over fp32 weights, QLoRA's upcast),
    ``4096`` hidden rows when the residual stream is fp32."""
    T, c, h, V = setup.tokens, setup.compute_bytes, m.embedding_dim, m.vocab_size / setup.tp
    r = residual_bytes(setup)
    tile = c * min(T, TOKEN_TILE) * min(V, VOCAB_TILE)
    hidden = 0.0 if setup.base_trainable else r * T * h
    full = s.method == "full"
    w = 4 if setup.autocast_fp32_weights else c
    casts = (r * T * h if r < 4 else 0.0) + (w * V * h if full and w < 4 else 0.0)
    chunk = c * min(V, VOCAB_TILE) * h if head_cast else 0.0
    rows = c * min(T, TOKEN_TILE) * h if r > c else 0.0
    # the backward binds each cast chunk to ``w_chunk``: the last one lives until the next replaces it
    backward = 4 * T * h + (4 * V * h if full else 0.0) + max(tile + 2 * chunk + rows, casts)
    return LossBytes(saved=hidden + 12 * T, forward=tile + chunk + rows + 24 * T, backward=backward)


def reference_forward(stack, s: Scenario, m, setup: act.ActivationSetup, *, layer: float, head: LossBytes) -> float:
    """What the reference's forward adds on top of what the policy's forward left alive (its saved activations,
    its head's saved tensors): under ``torch.no_grad()`` nothing is saved, so its peak is one decoder layer's
    transients (``layer``) or its head's (the scored hidden rows and a tile: ``head.forward``) over the residual
    stream running through it (one boundary tensor). With a stack's logits head (:func:`logits_head`) the
    head's peak is its fp32 logits, their copy and the log_softmax output at once (``forward + saved``: nothing is
    saved under no_grad, but all three are alive). 0 with ``precompute_ref_log_probs`` (no reference forward)."""
    if s.train_objective != "dpo" or s.precompute_ref_log_probs:
        return 0.0
    boundary = act.boundary_bytes(m, setup)
    rows = residual_bytes(setup) * setup.tokens * m.embedding_dim
    return boundary + max(layer, head.forward + (head.saved if stack.dpo_logits_head else rows))
