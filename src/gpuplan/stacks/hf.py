"""The Hugging Face stack: transformers' modules, peft's adapters, the Trainer's autocast, accelerate or DeepSpeed.

Everything :class:`~gpuplan.stacks.base.Stack` does by default is this stack (the layer rules are in
:mod:`gpuplan.tensors.activations`, checked against the fake-tensor simulation of transformers' own code). Two
switches change its kernels: ``Trainer(use_liger_kernel=True)`` (``loss: fused-linear``) patches in Liger's fused
linear cross-entropy, RMSNorm, SwiGLU and RoPE (``liger_kernel.transformers._apply_liger_kernel_to_instance``,
all four on by default), and ``torch_compile=True`` (``compile: true``) lets inductor fuse the same elementwise
chains.
"""

from __future__ import annotations

from .base import Stack


class Hf(Stack):
    name = "hf"
    liger = "loss"  # Trainer(use_liger_kernel=True)
    launch_targets = ("trainer", "deepspeed", "accelerate", "torchrun")  # TRL's SFTConfig, run by each launcher
    fsdp_reduces_compute_dtype = True  # accelerate's FSDP plugin: reduce_dtype = the mixed-precision dtype
