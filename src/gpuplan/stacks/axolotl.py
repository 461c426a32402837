"""axolotl: the HF Trainer with its Liger plugin (``src/axolotl/integrations/liger``: ``liger_rope``,
``liger_rms_norm``, ``liger_glu_activation``, ``liger_fused_linear_cross_entropy``), its own chunked cross-entropy
(``chunked_cross_entropy``: the logits chunked before the fp32 upcast, PR #2625) and activation offloading ported
from torchtune (``activation_offloading: true``).

Liger's kernels (linkedin/Liger-Kernel ``src/liger_kernel/ops``): RMSNorm saves its input and an fp32 ``rstd`` per
row (``rms_norm.py``), not transformers' fp32 copy of the input; SwiGLU saves gate and up and recomputes
``silu(gate)`` (``swiglu.py`` ``LigerSiLUMulFunction``); RoPE rotates q and k in place (``rope.py``); the fused
linear cross-entropy never makes the logits (:func:`~gpuplan.stacks.base.liger_fused_linear`).
"""

from __future__ import annotations

from collections.abc import Callable

from ..model.spec import ModelSpec
from ..scenario import Scenario
from ..tensors import activations as act
from .base import LossBytes
from .hf import Hf
from .native import chunked_loss
from .releases import AXOLOTL_VERSION


class Axolotl(Hf):
    name = "axolotl"
    launch_targets = ("axolotl",)
    offloads_activations = True  # activation_offloading: its port of torchtune's OffloadActivations
    liger = "plugin"  # the Liger plugin's RoPE, RMSNorm and SwiGLU kernels, whatever the loss
    # rl: dpo under full fine-tuning loads the reference with its ModelLoader (axolotl 0.18.0 src/axolotl/train.py
    # setup_reference_model; core/builders/rl.py ensure_dtype(trainer.ref_model, cfg.torch_dtype)) and passes it
    # to TRL's DPOTrainer; with an adapter it passes None (the adapters off, as TRL's own)
    dpo_loads_reference = True


    def packages(self, s: Scenario, deepspeed: Callable[[], bool]) -> list[str]:
        """Its release (liger-kernel and bitsandbytes come with it), with the extras the plan runs."""
        extras = [e for e, used in (("deepspeed", deepspeed()), ("flash-attn", s.attention == "flash")) if used]
        return [f"axolotl[{','.join(extras)}]=={AXOLOTL_VERSION}" if extras else f"axolotl=={AXOLOTL_VERSION}"]

    def loss(self, s: Scenario, m: ModelSpec, setup: act.ActivationSetup, lm_head_cast: bool,
             free: float | None) -> LossBytes:
        if s.loss == "chunked":
            return chunked_loss(m, setup, s.loss_chunks or 8, compiled=bool(s.compile))
        return super().loss(s, m, setup, lm_head_cast, free)
