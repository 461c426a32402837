"""Your own PyTorch loop over a transformers model, as Answer.AI's ``fsdp_qlora`` ``train.py`` is: transformers'
modules and peft's adapters (or its own), no Trainer, no autocast unless asked, the loss on full logits.

Activation offloading is ``torch.autograd.graph.save_on_cpu`` (``offload_wrapper`` in fsdp_qlora): every saved
tensor goes to pinned CPU memory and comes back when its backward runs, one layer at a time.

The loop keeps the model's output, and so its logits, until the optimizer has stepped (fsdp_qlora ``train.py``
``fsdp_main``: ``output = model(...)``, ``loss.backward()``, ``optimizer.step()``, then ``output = None`` "so more
memory frees up before the next forward pass"), as most hand-written loops do (``outputs = model(**batch)`` stays
in scope through ``loss.backward()``).
"""

from __future__ import annotations

from .hf import Hf


class PlainPytorch(Hf):
    name = "pytorch"
    launch_targets = ()  # your own loop: no files to write
    searched_shardings = ("ddp", "fsdp")  # your own loop: DDP or FSDP (Answer.AI's fsdp_qlora)
    offloads_activations = True  # torch.autograd.graph.save_on_cpu
    offload_resident_layers = 1
    holds_output = True  # output = model(...); loss.backward(); optimizer.step(); output = None
