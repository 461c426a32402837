"""What torchtune and torchtitan share, both PyTorch-native stacks: torchtitan's per-op selective activation
checkpointing (``torchtitan/models/llama3/infra/parallelize.py`` ``_apply_ac_to_transformer_block``, which torchtune's
``apply_selective_activation_checkpointing`` with ``ac_option: op`` copies) and torchtune's chunked cross-entropy
(``CEWithChunkedOutputLoss``, which torchtitan's ``loss: chunked`` scenario runs as well).
"""

from __future__ import annotations

from ..model.spec import ModelSpec
from ..tensors import activations as act
from .base import LossBytes, Stack


def _mms(layer) -> list:
    """The layer's ``aten.mm`` calls in order (routed experts and the router run grouped or other kernels)."""
    return [lin for lin in layer.linears if lin.group not in ("experts", "router")]


def op_sac_recomputed(layer) -> frozenset[str]:
    """The linears torchtitan's per-op policy runs again in the backward: every second ``aten.mm`` in call order
    (``_custom_policy``: ``meta[mm_count_key] % 2 == 0`` is PREFER_RECOMPUTE; wk, wo and w3 of a Llama block) and
    the ops outside ``_save_list`` (the experts' and router's among them)."""
    others = {lin.name for lin in layer.linears if lin.group in ("experts", "router")}
    return frozenset({lin.name for i, lin in enumerate(_mms(layer)) if i % 2 == 1} | others)


def op_sac_bytes(layer, m: ModelSpec, setup: act.ActivationSetup) -> float:
    """What torchtitan's per-op selective checkpointing keeps of one decoder layer: the layer input and the saved
    op outputs (every other matmul in call order, SDPA's output and log-sum-exp), from the layer's linears. The
    input is the residual stream, as full checkpointing keeps it (:func:`~gpuplan.tensors.activations.boundary_bytes`):
    fp32 where autocast runs over fp32 weights (torchtitan on one GPU: the fp32 embedding's output plus each 16-bit
    block output promotes to fp32)."""
    T, c, t = setup.tokens, setup.compute_bytes, setup.tp
    mms = _mms(layer)
    kept = act.boundary_bytes(m, setup)  # the checkpointed block's input
    for i, lin in enumerate(mms):
        if i % 2 == 0:  # the 1st, 3rd, 5th... matmul is saved, the 2nd, 4th... recomputed
            kept += c * T * lin.out_features / (1 if lin.name in ("o_proj", "down_proj") else t)
    heads = max(m.num_heads // t, 1)
    kept += c * T * heads * m.head_dim + 4 * T * heads  # SDPA output and fp32 log-sum-exp
    return kept


def chunked_loss(m: ModelSpec, setup: act.ActivationSetup, chunks: int, *, compiled: bool) -> LossBytes:
    """``CEWithChunkedOutputLoss``: each of ``chunks`` sequence chunks is projected to 16-bit logits (all alive as
    the model's output until the recipe's ``del logits``) and upcast one at a time. Eager, each chunk's fp32
    log-softmax is saved (4 bytes per logit) and the backward makes two fp32 gradients and a 16-bit one per chunk;
    compiled (``compile_loss``), inductor fuses the upcast into the kernel and saves the 16-bit chunk instead, and
    its backward kernel writes each chunk's 16-bit gradient from the saved chunk and the log-sum-exp, with no fp32
    copy (the compiled graph takes its inputs boxed and frees each saved chunk after its last use).
    When the head trains, each chunk's matmul makes a whole ``V x h`` weight gradient that autograd sums out of
    place into the previous chunks' (the simulation shows three alive at once), next to the chunk's logit
    gradient."""
    TV = setup.tokens * m.vocab_size / setup.tp
    c = setup.compute_bytes
    saved = c * TV if compiled else 4 * TV
    # the loss backward runs chunk by chunk, then the chunks' matmul backwards: by then the saved tensors are
    # freed and every chunk's 16-bit logit gradient waits; the head's weight gradients pile up, three at once
    # when the second chunk's is summed into the first's, with the other chunks' logit gradients still waiting
    per_chunk = (c if compiled else (8 + c)) * TV / chunks
    backward = per_chunk
    if setup.base_trainable and chunks > 1:
        head = 3 * c * m.vocab_size * m.embedding_dim / setup.tp
        backward = max(per_chunk, c * TV * (chunks - 2) / chunks + head - saved)
    if compiled:
        return LossBytes(saved=saved, forward=0.0, backward=backward)
    return LossBytes(saved=saved, forward=c * TV + 4 * TV / chunks, backward=backward)


class OpSelective(Stack):
    """A stack whose ``grad_checkpointing: selective`` is torchtitan's per-op policy, over its own models (grouped
    experts, no Python loop over them)."""

    experts_loop = False

    def selective(self, layer, m: ModelSpec, setup: act.ActivationSetup) -> float:
        return op_sac_bytes(layer, m, setup)

    def selective_recomputed(self, layer) -> frozenset[str]:
        return op_sac_recomputed(layer)
