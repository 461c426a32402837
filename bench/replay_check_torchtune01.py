"""Check the torchtune 0.1 QLoRA replay (src/gpuplan/stacks/torchao_nf4.py, torchtune_step.py) against the real code.

    python bench/replay_check_torchtune01.py SRC [--layers 4 --hidden 1024 --intermediate 2752 --heads 8]

SRC is a directory holding torchtune's ``torchtune`` package at tag v0.1.0 (``git -C torchtune archive v0.1.0
torchtune | tar x -C SRC``) and torchao v0.1's ``torchao/dtypes/nf4tensor.py`` (``git -C ao show
v0.1:torchao/dtypes/nf4tensor.py``); the script adds the two import shims torchtune 0.1 needs here (a
``pkg_resources`` that gives ``packaging``, empty ``torchao.quantization`` classes it imports but QLoRA never uses).

It builds the model with torchtune's own ``lora_llama2`` (bf16, QLoRA on every linear), loads a float16 state dict
through ``load_state_dict``, wraps the layers in activation checkpoints, and runs the recipe's two micro-batches of
2 x 512 tokens with AdamW between them, all on CPU tensors under a dispatch mode that sends each new storage to
gpuplan's caching allocator model and frees it when the storage is collected (the NF4 subclass's handlers run with
the mode on, so the tensors they make are seen too; a host-to-device ``.to(device)`` becomes a clone). It prints
the reserved bytes that trace gives after init and after the step, beside the hand-written replay's. Small
dimensions run in a minute; CPU kernels (SDPA's) may differ from CUDA's in their workspaces.
"""

from __future__ import annotations

import argparse
import sys
import weakref
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "src"))

SHIMS = {
    "pkg_resources/__init__.py": "import packaging  # noqa: F401\nimport packaging.version  # noqa: F401\n",
    "torchao/__init__.py": "",
    "torchao/dtypes/__init__.py": "",
    "torchao/quantization/__init__.py": "",
    "torchao/quantization/quant_api.py": (
        "class Quantizer:\n    pass\n\n\nclass Int4WeightOnlyGPTQQuantizer(Quantizer):\n    pass\n\n\n"
        "class Int4WeightOnlyQuantizer(Quantizer):\n    pass\n\n\n"
        "def apply_weight_only_int8_quant(*a, **k):\n    raise NotImplementedError\n\n\n"
        "def change_linear_weights_to_int4_woqtensors(*a, **k):\n    raise NotImplementedError\n"),
}


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("src", type=Path)
    p.add_argument("--layers", type=int, default=4)
    p.add_argument("--hidden", type=int, default=1024)
    p.add_argument("--intermediate", type=int, default=2752)
    p.add_argument("--heads", type=int, default=8)
    p.add_argument("--vocab", type=int, default=32000)
    a = p.parse_args()
    for name, text in SHIMS.items():
        path = a.src / name
        if not path.exists():
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
    sys.path.insert(0, str(a.src))
    print(run(a.layers, a.hidden, a.intermediate, a.heads, a.vocab))


def run(layers: int, hidden: int, intermediate: int, heads: int, vocab: int, rank: int = 8) -> str:
    import torch
    from torch.utils._python_dispatch import TorchDispatchMode
    from torch.utils._pytree import tree_flatten
    from torchao.dtypes.nf4tensor import NF4Tensor
    from torchtune import modules, utils
    from torchtune.models.llama2._component_builders import lora_llama2
    from torchtune.modules.peft.peft_utils import get_adapter_params, set_trainable_params

    from gpuplan.stacks import torchao_nf4 as nf4
    from gpuplan.stacks.torchtune_step import replay_step
    from gpuplan.tensors.allocator import CachingAllocator

    class Trace(TorchDispatchMode):
        def __init__(self) -> None:
            super().__init__()
            self.a, self.live = CachingAllocator(), {}

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            if any(isinstance(x, NF4Tensor) for x in tree_flatten((args, kwargs))[0]):
                with self:
                    return NF4Tensor.__torch_dispatch__(func, types, args, kwargs)
            out = func(*args, **(kwargs or {}))
            for v in tree_flatten(out)[0]:
                if isinstance(v, torch.Tensor) and type(v) is torch.Tensor:
                    storage = v.untyped_storage()
                    key = storage._cdata
                    if key not in self.live and storage.nbytes():
                        self.live[key] = self.a.malloc(storage.nbytes())
                        weakref.finalize(storage, self._release, key)
            return out

        def _release(self, key: int) -> None:
            block = self.live.pop(key, None)
            if block is not None:
                self.a.free(block)

    plain_to = torch.Tensor.to

    def host_to_device(self, *args, **kwargs):
        if len(args) == 1 and isinstance(args[0], torch.device) and not kwargs:
            return self.clone()
        return plain_to(self, *args, **kwargs)

    torch.manual_seed(0)
    trace = Trace()
    torch.set_default_dtype(torch.bfloat16)
    with trace:
        model = lora_llama2(["q_proj", "k_proj", "v_proj", "output_proj"], apply_lora_to_mlp=True, vocab_size=vocab,
                            num_layers=layers, num_heads=heads, num_kv_heads=heads, embed_dim=hidden,
                            max_seq_len=4096, intermediate_dim=intermediate, lora_rank=rank, lora_alpha=16,
                            quantize_base=True)
    state = {k: torch.randn(v.shape, dtype=torch.float16) for k, v in model.state_dict().items() if "lora" not in k}
    torch.Tensor.to = host_to_device
    with trace, torch.no_grad():
        model.load_state_dict(state, strict=False)
    torch.Tensor.to = plain_to
    init = trace.a.reserved
    set_trainable_params(model, get_adapter_params(model))
    utils.set_activation_checkpointing(model, auto_wrap_policy={modules.TransformerDecoderLayer})
    opt = torch.optim.AdamW([q for q in model.parameters() if q.requires_grad], lr=3e-4, weight_decay=0.01,
                            foreach=True)
    ids, labels_all = torch.randint(0, vocab, (2, 512)), torch.randint(0, vocab, (2, 512))
    with trace:
        for micro in range(2):
            logits = model(ids)[..., :-1, :].contiguous().transpose(1, 2)
            loss = torch.nn.CrossEntropyLoss()(logits, labels_all[..., 1:].contiguous()) / 16
            loss.backward()
            del logits, loss
            if micro == 0:
                opt.step()
                opt.zero_grad(set_to_none=True)
    torch.set_default_dtype(torch.float32)

    lay = nf4.Layout(linears=(("q_proj", hidden, hidden, True), ("k_proj", hidden, hidden, True),
                              ("v_proj", hidden, hidden, True), ("o_proj", hidden, hidden, True),
                              ("gate_proj", hidden, intermediate, True), ("down_proj", intermediate, hidden, True),
                              ("up_proj", hidden, intermediate, True)),
                     num_layers=layers, hidden=hidden, vocab=vocab, head_dim=hidden // heads, max_seq_len=4096,
                     lora_rank=rank, checkpoint_bf16=False)
    h = nf4.init_heap(lay)
    replay_init = h.a.reserved
    replay_step(h, lay, 1024, 2, micro_batches=2)
    return (f"{layers} layers, hidden {hidden}, intermediate {intermediate}: reserved after init {init:,} B (real "
            f"code) vs {replay_init:,} B (replay); after the step {trace.a.reserved:,} B vs {h.a.reserved:,} B")


if __name__ == "__main__":
    main()
