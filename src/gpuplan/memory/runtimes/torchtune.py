"""torchtune (pytorch/torchtune 0.6, recipes ``full_finetune_*``, ``lora_finetune_*``): its own modules, one dtype.

What differs from the HF stack, with the code that does it:

- one dtype throughout (``training.set_default_dtype``; no autocast, no fp32 master weights): full fine-tuning holds
  8 bytes/parameter with bf16 AdamW, and LoRA adapters are in the model dtype (``validate_expected_param_dtype``);
- ``modules/attention.py`` ``MultiHeadAttention.forward`` expands the keys and values to every query head
  (``k.unsqueeze(2).expand(...).flatten(1, 2)``) before SDPA, which saves the expanded copies;
- QLoRA's NF4 base (torchao ``NF4Tensor``, ``LinearNF4.forward``: ``ctx.save_for_backward(weight)``) saves only the
  packed weight, not the layer input as bitsandbytes' ``MatMul4Bit`` does; embeddings and the head stay bf16;
- the loss: ``CEWithChunkedOutputLoss`` (8 chunks): ``TransformerDecoder.chunked_output`` projects each chunk of
  the sequence to bf16 logits and ``compute_cross_entropy`` upcasts one chunk at a time; without chunks
  ``TransformerDecoder.unembed`` returns fp32 logits (``self.output(h).float()``). ``compile: true`` compiles each
  layer and the loss (``training.compile_model``, ``compile_loss``);
- ``training.OffloadActivations`` (``enable_activation_offloading``) moves every saved tensor of at least 1 KiB to
  pinned CPU memory, keeping up to 5 in flight, and brings them back one node at a time in the backward;
- ``optimizer_in_bwd`` steps each parameter in a post-accumulate-grad hook (``OptimizerInBackwardWrapper``);
- selective checkpointing (``apply_selective_activation_checkpointing``, ``ac_option: op``) is torchtitan's
  per-op policy, taken from :mod:`.torchtitan`.
"""

from __future__ import annotations

from ...model.spec import ModelSpec
from ...scenario import Scenario
from .. import activations as act
from .base import LossBytes, Runtime
from .torchtitan import op_sac_bytes, op_sac_recomputed


def chunked_loss(m: ModelSpec, setup: act.ActivationSetup, chunks: int, *, compiled: bool) -> LossBytes:
    """``CEWithChunkedOutputLoss``: each of ``chunks`` sequence chunks is projected to 16-bit logits (all alive as
    the model's output until the recipe's ``del logits``) and upcast one at a time. Eager, each chunk's fp32
    log-softmax is saved (4 bytes per logit) and the backward makes two fp32 gradients and a 16-bit one per chunk;
    compiled (``compile_loss``), inductor fuses the upcast into the kernel and saves the 16-bit chunk instead.
    When the head trains, each chunk's matmul makes a whole ``V x h`` weight gradient that autograd sums out of
    place into the previous chunks' (the simulation shows three alive at once), next to the chunk's logit
    gradient."""
    TV = setup.tokens * m.vocab_size / setup.tp
    c = setup.compute_bytes
    saved = c * TV if compiled else 4 * TV
    # the loss backward runs chunk by chunk, then the chunks' matmul backwards: by then the saved tensors are
    # freed and every chunk's 16-bit logit gradient waits; the head's weight gradients pile up, three at once
    # when the second chunk's is summed into the first's, with the other chunks' logit gradients still waiting
    per_chunk = ((4 + c) if compiled else (8 + c)) * TV / chunks
    backward = per_chunk
    if setup.base_trainable and chunks > 1:
        head = 3 * c * m.vocab_size * m.embedding_dim / setup.tp
        backward = max(per_chunk, c * TV * (chunks - 2) / chunks + head - saved)
    if compiled:
        return LossBytes(saved=saved, forward=0.0, backward=backward)
    return LossBytes(saved=saved, forward=c * TV + 4 * TV / chunks, backward=backward)


class Torchtune(Runtime):
    name = "torchtune"
    saves_4bit_inputs = False
    offload_resident_layers = 5  # OffloadActivations(max_fwd_stash_size=5): the last five stay on the GPU

    def fp32_upcast(self, s: Scenario) -> bool:
        return False

    def setup(self, s: Scenario, m: ModelSpec, autocast_fp32: bool) -> act.ActivationSetup:
        from dataclasses import replace

        return replace(super().setup(s, m, autocast_fp32), kv_expanded=True)

    def selective(self, layer, m: ModelSpec, setup: act.ActivationSetup) -> float:
        return op_sac_bytes(layer, m, setup)

    def selective_recomputed(self, layer) -> frozenset[str]:
        return op_sac_recomputed(layer)

    def loss(self, s: Scenario, m: ModelSpec, setup: act.ActivationSetup, lm_head_cast: bool,
             capacity: float | None) -> LossBytes:
        if s.loss == "chunked":
            return chunked_loss(m, setup, s.loss_chunks or 8, compiled=bool(s.compile))
        # unembed: fp32 logits are the model's output; the 16-bit ones exist only for the upcast
        TV = setup.tokens * m.vocab_size / setup.tp
        c = setup.compute_bytes
        if s.compile:
            return LossBytes(saved=4 * TV, forward=c * TV, backward=(4 + c) * TV)
        return LossBytes(saved=4 * TV, forward=4 * TV, backward=8 * TV)
