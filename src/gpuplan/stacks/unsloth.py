"""Unsloth (unslothai/unsloth ``models/llama.py``, kernels in ``unsloth/kernels``, the loss and the offloaded
checkpointing in unslothai/unsloth-zoo).

- ``use_gradient_checkpointing="unsloth"``: each layer's input is copied to pinned CPU memory
  (unsloth-zoo ``gradient_checkpointing.UnslothCheckpointFunction``), except the last layer's, and brought back
  into one GPU buffer (two when more than 512 MiB are free, for double buffering): three layer inputs stay on the
  GPU. Below 512 tokens it is plain checkpointing (``apply_unsloth_gradient_checkpointing``).
- The loss is ``unsloth_fused_ce_loss``: no logits; ``grad_inputs = torch.empty_like(hidden_states)`` is filled in
  the forward, chunk by chunk, each chunk's logits upcast to fp32 with at most ``min(0.5 x free memory, 4 GiB)`` of
  them at once (``fused_losses/cross_entropy_loss.py`` ``_get_chunk_multiplier``, ``get_chunk_size``), "free"
  being ``torch.cuda.mem_get_info`` at the first step's loss (what the card has left after the weights, the kept
  activations and ``grad_inputs``): the estimate takes 4 GiB without a GPU. So the loss takes at most half of
  what is left, and never by itself makes a long sequence run out of memory.
- With ``lora_dropout = 0`` (its default) the LoRA layers run its fused kernels (``kernels/fast_lora.py``):
  ``LoRA_MLP`` saves the MLP input and the gate and up outputs and recomputes the rest in the backward,
  ``LoRA_QKV`` and ``LoRA_W`` save their input once, in the compute dtype (the fp32 adapters are cast inside the
  kernel); its RMSNorm kernel saves the input and an fp32 ``r`` per row; the 4-bit base is dequantized inside the
  kernels, which save no extra input; embeddings stay bf16 (no fp32 upcast).
- Attention (``models/llama.py`` ``LlamaAttention_fast_forward``, unslothai/unsloth 63782ea3, January 2025, the
  context table's release): without the ``flash_attn`` package (its default install; ``attention: flash`` says it
  is there) it runs xformers, and for grouped-query models in training it repeats the keys and values to every
  query head with ``K.expand(...).reshape(bsz, kv_seq_len, n_heads, head_dim)``, a copy the attention saves (the
  SDPA fallback does the same); ``flash_attn_func`` takes the grouped heads as they are.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from .. import overheads as oh
from ..model.spec import ModelSpec
from ..scenario import Scenario
from ..tensors import activations as act
from .base import LossBytes, Stack
from .releases import TESTED, UNSLOTH_VERSION

FUSED_LOSS_MAX_GIB = 4.0  # unsloth-zoo fused_losses: target_gb = min(0.5 x free, 4.0)
# how the plan's assumption that the fused loss was sized from the free memory begins (Plan.headroom_note reads it)
FREE_SIZED_LOSS = "Unsloth's fused loss sizes its fp32 logit chunks from the memory free"


class Unsloth(Stack):
    name = "unsloth"
    launch_targets = ("unsloth",)
    offload_resident_layers = 3  # the last layer's input and two reload buffers
    saves_4bit_inputs = False
    sizes_from_free_memory = True  # the fused loss's chunk: half of what the card has free


    def packages(self, s: Scenario, deepspeed: Callable[[], bool]) -> list[str]:
        """Its release, which brings TRL, peft and bitsandbytes, and the datasets the Trainer's files are read with."""
        return [f"unsloth=={UNSLOTH_VERSION}", f"datasets=={TESTED['datasets']}"]

    def fp32_upcast(self, s: Scenario) -> bool:
        return False

    def fused(self, s: Scenario) -> bool:
        return True

    def fast_lora(self, s: Scenario) -> bool:
        return s.method != "full" and s.lora_dropout == 0

    def setup(self, s: Scenario, m: ModelSpec, autocast_fp32: bool) -> act.ActivationSetup:
        # xformers (or the SDPA fallback) saves keys and values repeated to every query head; flash_attn does not
        setup = replace(super().setup(s, m, autocast_fp32), kv_expanded=s.attention != "flash")
        if self.fast_lora(s):  # inputs saved once in the compute dtype, no rank-r intermediates
            setup = replace(setup, lora_cast_bytes=0, lora_rank=0)
        return setup

    def saved(self, layer, m: ModelSpec, setup: act.ActivationSetup) -> float:
        total = act.saved_bytes(layer, m, setup)
        if not setup.base_trainable and not setup.lora_rank:  # LoRA_MLP recomputes down_proj's input
            mids = [lin for lin in layer.linears if lin.name in setup.lora_targets
                    and act.INPUT_OF.get(lin.name) == "mlp_mid" and lin.count == 1]
            total -= sum(setup.compute_bytes * setup.tokens * lin.in_features / setup.tp for lin in mids)
        return total

    def backward_transient(self, layer, m: ModelSpec, setup: act.ActivationSetup) -> float:
        """``LoRA_MLP.backward`` makes one gradient of the MLP's width (``DW``, the down projection's input
        gradient); the SwiGLU backward writes the two others over the saved gate and up outputs in place
        (``_backward_function(DW, e, g)``) and ``dX`` goes into the saved input (``out = X``): one width-``i``
        gradient fewer than the eager MLP's two."""
        total = act.backward_transient(layer, m, setup)
        mids = [lin.in_features for lin in self._fast_mlp(layer, setup)]
        return total - setup.compute_bytes * setup.tokens * max(mids) / setup.tp if mids else total

    @staticmethod
    def _fast_mlp(layer, setup: act.ActivationSetup) -> list:
        """The MLP's down projection when ``LoRA_MLP`` runs the layer's MLP (fast LoRA on a frozen base, dense
        MLP), else nothing."""
        if setup.base_trainable or setup.lora_rank or layer.moe:
            return []
        return [lin for lin in layer.linears if lin.name in setup.lora_targets
                and act.INPUT_OF.get(lin.name) == "mlp_mid" and lin.count == 1]

    def loss(self, s: Scenario, m: ModelSpec, setup: act.ActivationSetup, lm_head_cast: bool,
             free: float | None) -> LossBytes:
        if s.loss != "fused-linear":
            return super().loss(s, m, setup, lm_head_cast, free)
        T, c, h, TV = setup.tokens, setup.compute_bytes, m.embedding_dim, setup.tokens * m.vocab_size
        head = c * m.vocab_size * h if s.method == "full" else 0.0
        saved = c * T * h + head  # grad_inputs (and the head's gradient), made before the chunk size is read
        target = FUSED_LOSS_MAX_GIB * oh.GIB if free is None else min(FUSED_LOSS_MAX_GIB * oh.GIB,
                                                                        0.5 * max(free - saved, 0.0))
        chunk = min(TV, target / 4)  # logits per chunk (fp32 bytes within the target)
        note = ""
        if free is not None and chunk < TV and target < FUSED_LOSS_MAX_GIB * oh.GIB:  # half of what is free
            left = max(free - saved, 0.0) / oh.GIB
            note = (f"{FREE_SIZED_LOSS} at the first step's loss, half of it up to {FUSED_LOSS_MAX_GIB:g} GiB "
                    f"(unsloth-zoo get_chunk_size): {target / oh.GIB:.2f} GiB of the {left:.2f} GiB free here, so "
                    "the peak grows toward the card by design; a larger batch or a desktop on the card leaves "
                    "smaller chunks, not an out-of-memory error")
        return LossBytes(saved=saved, forward=(c + 4) * chunk, backward=0.0, note=note)
