"""Your own PyTorch loop over a transformers model, as Answer.AI's ``fsdp_qlora`` ``train.py`` is: transformers'
modules and peft's adapters (or its own), no Trainer, no autocast unless asked, the loss on full logits.

Activation offloading is ``torch.autograd.graph.save_on_cpu`` (``offload_wrapper`` in fsdp_qlora): every saved
tensor goes to pinned CPU memory and comes back when its backward runs, one layer at a time.
"""

from __future__ import annotations

from .hf import Hf


class PlainPytorch(Hf):
    name = "pytorch"
    offload_resident_layers = 1
