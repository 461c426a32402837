"""torchtitan (pytorch/torchtitan 0.1.0, ``models/llama3``): pre-training and full fine-tuning of its own Llama.

- FSDP2 with a ``MixedPrecisionPolicy``: fp32 parameters, gradients and AdamW states sharded (16 bytes/parameter
  over the ranks), bf16 compute on the gathered layer, fp32 reduce-scatter (``parallelize.apply_fsdp``);
- selective activation checkpointing, ``selective_ac_option = 'op'`` (``parallelize._apply_ac_to_transformer_block``):
  inside each block, the outputs of ``aten.mm`` are saved except every second one, and SDPA's outputs are saved
  (``_save_list``); everything else is recomputed. A Llama block runs wq, wk, wv, [SDPA], wo, w1, w3, w2, so it saves
  the block input, wq's, wv's, w1's and w2's outputs and SDPA's output and fp32 log-sum-exp: per token per layer
  ``(4·h + kv + f)·c + 4·heads`` bytes (:func:`op_sac_bytes`). ``selective_ac_option = 'N'`` checkpoints every N-th
  block fully (``checkpoint_every``);
- the loss: ``components/loss.cross_entropy_loss`` upcasts the bf16 logits to fp32 for ``F.cross_entropy`` (the
  trainer deletes ``pred`` before the backward); ``training.compile`` compiles each block and the loss
  (``build_cross_entropy_loss``), so inductor fuses the upcast and saves the bf16 logits instead.
"""

from __future__ import annotations

from ...model.spec import ModelSpec
from ...scenario import Scenario
from .. import activations as act
from .base import LossBytes, Runtime


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
    op outputs (every other matmul in call order, SDPA's output and log-sum-exp), from the layer's linears."""
    T, c, t = setup.tokens, setup.compute_bytes, setup.tp
    Ts = T / t
    mms = _mms(layer)
    kept = c * Ts * m.hidden_size  # the checkpointed block's input
    for i, lin in enumerate(mms):
        if i % 2 == 0:  # the 1st, 3rd, 5th... matmul is saved, the 2nd, 4th... recomputed
            kept += c * T * lin.out_features / (1 if lin.name in ("o_proj", "down_proj") else t)
    heads = max(m.num_heads // t, 1)
    kept += c * T * heads * m.head_dim + 4 * T * heads  # SDPA output and fp32 log-sum-exp
    return kept


class Torchtitan(Runtime):
    name = "torchtitan"

    def fused(self, s: Scenario) -> bool:
        return bool(s.compile)

    def selective(self, layer, m: ModelSpec, setup: act.ActivationSetup) -> float:
        return op_sac_bytes(layer, m, setup)

    def selective_recomputed(self, layer) -> frozenset[str]:
        return op_sac_recomputed(layer)

    def loss(self, s: Scenario, m: ModelSpec, setup: act.ActivationSetup, lm_head_cast: bool,
             capacity: float | None) -> LossBytes:
        TV = setup.tokens * m.vocab_size / setup.tp
        c = setup.compute_bytes
        # on one GPU (no FSDP) torchtitan runs autocast over fp32 weights: the head's 16-bit copy is saved
        cast = c * m.vocab_size * m.embedding_dim / setup.tp if lm_head_cast else 0.0
        if s.loss == "chunked":
            from .torchtune import chunked_loss

            loss = chunked_loss(m, setup, s.loss_chunks or 8, compiled=bool(s.compile))
            return LossBytes(saved=loss.saved + cast, forward=loss.forward, backward=loss.backward)
        if s.compile:
            return LossBytes(saved=c * TV + cast, forward=0.0, backward=c * TV)
        if setup.tp > 1:
            # loss_parallel (the default with TP): DTensor's vocabulary-parallel log-softmax and its fused backward
            # (torch/distributed/tensor/parallel/loss.py ``_log_softmax``: the fp32 input, its shifted copy and
            # the result alive at once; ``_nll_loss_and_log_softmax_backward``: ``(zeros_like(x) + exp(x)) * grad``
            # keeps three fp32 copies next to the saved output)
            return LossBytes(saved=4 * TV + cast, forward=(c + 8) * TV, backward=12 * TV)
        return LossBytes(saved=4 * TV + cast, forward=(c + 4) * TV, backward=8 * TV)
