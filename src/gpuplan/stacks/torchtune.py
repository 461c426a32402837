"""torchtune (pytorch/torchtune 0.6, recipes ``full_finetune_*``, ``lora_finetune_*``): its own modules, one dtype.

What differs from the HF stack, with the code that does it:

- one dtype throughout (``training.set_default_dtype``; no autocast, no fp32 master weights): full fine-tuning holds
  8 bytes/parameter with bf16 AdamW, and LoRA adapters are in the model dtype (``validate_expected_param_dtype``);
- ``modules/attention.py`` ``MultiHeadAttention.forward`` expands the keys and values to every query head
  (``k.unsqueeze(2).expand(...).flatten(1, 2)``) before SDPA, which saves the expanded copies;
- ``modules/rms_norm.py`` ``RMSNorm.forward`` normalizes in fp32, ``F.rms_norm(x.float(), weight=self.scale)``
  with the scale in the model dtype: the dtypes differ, so PyTorch takes the composite path on every device
  (aten ``layer_norm.cpp`` ``rms_norm_symint``: "Mismatch dtype between input and module ... Can not dispatch to
  fused implementation"), whose ``normalized * weight`` saves the fp32 normalized output for the scale's gradient
  when the scale trains: ``4·T·h`` a norm beside the fp32 input, where HF's RMSNorm saves a 16-bit one. Since
  0.5 (pytorch/torchtune#2054, 2024-11-25); before, ``(x_fp32 * rsqrt(...)).type_as(x) * self.scale`` saved it
  in the model dtype, as HF does;
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

from collections.abc import Callable
from dataclasses import replace

from ..model.spec import ModelSpec
from ..scenario import Scenario
from ..scenario.stacks import torchtune_before
from ..tensors import activations as act
from .base import LossBytes
from .native import OpSelective, chunked_loss
from .torchao_nf4 import nf4_layout
from .torchtune_step import replay


class Torchtune(OpSelective):
    name = "torchtune"
    launch_targets = ("torchtune",)
    own_model = True  # torchtune.models.llama3*
    offloads_activations = True  # enable_activation_offloading (OffloadActivations)
    saves_4bit_inputs = False
    offload_resident_layers = 5  # OffloadActivations(max_fwd_stash_size=5): the last five stay on the GPU
    saves_merged_model = True  # save_adapter_weights_only: False, the recipes' default (market.cost)
    dpo_logits_head = True  # its DPO recipes' concatenated_forward: fp32 logits, log_softmax (memory.dpo.logits_head)


    def packages(self, s: Scenario, deepspeed: Callable[[], bool]) -> list[str]:
        """torchtune 0.6.1 imports torchao APIs that torchao 0.16 removed; bitsandbytes for an 8-bit optimizer."""
        return ["torch>=2.6", "torchtune>=0.6", "torchao>=0.13,<0.16"] + \
            (["bitsandbytes>=0.45"] if "8bit" in s.optimizer else [])

    def fp32_upcast(self, s: Scenario) -> bool:
        return False

    def replayed_reserved(self, s: Scenario, m: ModelSpec) -> tuple[float, float]:
        """torchtune 0.1 (``torchao==0.1`` in its pyproject) QLoRA on one GPU: its allocations replayed on the
        caching allocator (:mod:`.torchao_nf4` for model init, :mod:`.torchtune_step` for the step at the
        longest batch). torchao 0.1 quantizes each NF4 weight in one piece, ``(value - nf4).abs()`` over the 16
        levels in bf16 (64 bytes/element at once), and init quantizes each weight twice (the deep copy's clone of
        the template layer's, then the checkpoint's) after the template's own; the allocator keeps those blocks,
        and the packed weights that split them leave the next quantization a new segment to find. torchao 0.2
        (torchtune 0.2 on) quantizes in chunks of 1024**2 elements ("Note: Quantize in Chunks", pytorch/ao
        6081796b, 2024-05-01): no such level, and no replay."""
        if s.method != "qlora" or s.world_size > 1 or not torchtune_before(s, 0, 2):
            return 0.0, 0.0
        layout = nf4_layout(s, m)
        if layout is None:
            return 0.0, 0.0
        r = replay(layout, s.micro_batch_size * s.seq_len, s.micro_batch_size)
        return float(r.reserved), float(r.init_reserved)

    def setup(self, s: Scenario, m: ModelSpec, autocast_fp32: bool) -> act.ActivationSetup:
        fp32_norm = not torchtune_before(s, 0, 5)  # F.rms_norm(x.float()) saves an fp32 normalized output
        return replace(super().setup(s, m, autocast_fp32), kv_expanded=True, norm_out_bytes=4 if fp32_norm else 0)

    def loss(self, s: Scenario, m: ModelSpec, setup: act.ActivationSetup, lm_head_cast: bool,
             free: float | None) -> LossBytes:
        if s.loss == "chunked":
            return chunked_loss(m, setup, s.loss_chunks or 8, compiled=bool(s.compile))
        # unembed: fp32 logits are the model's output; the 16-bit ones exist only for the upcast
        TV = setup.tokens * m.vocab_size / setup.tp
        c = setup.compute_bytes
        if s.compile:
            return LossBytes(saved=4 * TV, forward=c * TV, backward=(4 + c) * TV)
        return LossBytes(saved=4 * TV, forward=4 * TV, backward=8 * TV)
