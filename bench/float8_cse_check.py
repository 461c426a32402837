"""What a compiled torchao float8 block launches when three linears read one norm's output (bench/results/
train_s28.md): torchao's ``convert_to_float8_training`` (tensorwise dynamic scaling) on RMSNorm -> q, k, v, forward
and backward under ``torch.compile``, and the generated wrappers read back (``torch._inductor.utils.
run_and_get_code``). Runs on CPU (torch 2.13, torchao 0.17); prints per graph the fused kernels, the
``_scaled_mm`` calls, the distinct scale buffers the forward's GEMMs take for their input (1: the max(abs) merged)
and the [512, 256] fp8 buffers allocated (forward: each linear's own copy of the input; backward: the three
column-major copies and the q projection's grad_output).

``--sac``: a Llama-like block (norm -> q, k, v -> o; norm -> gate, up -> down) under torchtitan's per-op selective
checkpointing (its ``_save_list``: every other ``mm``'s output and ``max``'s result kept), compiled; prints the
``_scaled_mm`` calls of each graph (forward 7; backward 14 of the gradients plus the forward GEMMs whose outputs
were not kept, re-run) and each graph's fp8 buffers with their strides (bench/results/train_s29.md).

    python bench/float8_cse_check.py [--sac]
"""

from __future__ import annotations

import re
import sys
from collections import defaultdict

import torch
from torch import nn


class Block(nn.Module):
    """A norm feeding three projections, as a Llama block's q, k and v read ``attn_in``."""

    def __init__(self, d: int = 256, kv: int = 64):
        super().__init__()
        self.norm = nn.RMSNorm(d)
        self.q, self.k, self.v = nn.Linear(d, d, bias=False), nn.Linear(d, kv, bias=False), nn.Linear(d, kv, bias=False)

    def forward(self, x):
        h = self.norm(x)
        return self.q(h).sum() + self.k(h).sum() + self.v(h).sum()


class LlamaBlock(nn.Module):
    """Attention's projections and a gated MLP around two norms, the attention itself left out (a product of the
    projections stands in for it); ``policy``: torchtitan's per-op checkpointing."""

    def __init__(self, d: int = 256, kv: int = 64, ffn: int = 640):
        super().__init__()
        self.n1, self.n2 = nn.RMSNorm(d), nn.RMSNorm(d)
        self.q, self.k, self.v = nn.Linear(d, d, bias=False), nn.Linear(d, kv, bias=False), nn.Linear(d, kv, bias=False)
        self.o = nn.Linear(d, d, bias=False)
        self.g, self.u, self.d = (nn.Linear(d, ffn, bias=False), nn.Linear(d, ffn, bias=False),
                                  nn.Linear(ffn, d, bias=False))
        self.heads = d // kv

    def inner(self, x):
        h = self.n1(x)
        y = x + self.o(self.q(h) + (self.k(h) * self.v(h)).repeat(1, self.heads))
        h = self.n2(y)
        return y + self.d(nn.functional.silu(self.g(h)) * self.u(h))

    def forward(self, x):
        from torch.utils.checkpoint import checkpoint

        return checkpoint(self.inner, x, use_reentrant=False, context_fn=_titan_context)


def _titan_context():
    """torchtitan's ``selective_checkpointing_context_fn``: a fresh count of ``mm`` calls per checkpointed block."""
    from torch.utils.checkpoint import create_selective_checkpoint_contexts

    return create_selective_checkpoint_contexts(_titan_policy(defaultdict(int)))


def _titan_policy(meta: dict):
    """torchtitan's ``_get_custom_policy`` (torchtitan 9dec370 ``parallelize_llama.py``): save ``mm`` and ``max``
    outputs, every second ``mm`` recomputed."""
    from torch.utils.checkpoint import CheckpointPolicy

    save = {torch.ops.aten.mm.default, torch.ops.aten.max.default}

    def policy(ctx, func, *args, **kwargs):
        mode = "recompute" if ctx.is_recompute else "forward"
        if func == torch.ops.aten.mm.default:
            meta[mode] += 1
        keep = func in save and not (func == torch.ops.aten.mm.default and meta[mode] % 2 == 0)
        return CheckpointPolicy.MUST_SAVE if keep else CheckpointPolicy.PREFER_RECOMPUTE
    return policy


def sac() -> None:
    from torch._inductor.utils import run_and_get_code
    from torchao.float8 import Float8LinearConfig, convert_to_float8_training

    block = LlamaBlock().to(torch.bfloat16)
    convert_to_float8_training(block, config=Float8LinearConfig())
    x = torch.randn(384, 256, dtype=torch.bfloat16, requires_grad=True)
    _, codes = run_and_get_code(torch.compile(lambda t: block(t).sum().backward()), x)
    for name, code in zip(("forward", "backward"), codes, strict=True):
        call = code[code.index("    def call("):]
        fp8 = re.findall(r"\w+ = empty_strided_\w+\((\([\d, ]+\)), (\([\d, ]+\)).*float8", call)
        print(f"{name}: {call.count('_scaled_mm(')} _scaled_mm, {len(fp8)} fp8 buffers (shape, stride): {fp8}")


def main() -> None:
    if "--sac" in sys.argv:
        sac()
        return
    from torch._inductor.utils import run_and_get_code
    from torchao.float8 import Float8LinearConfig, convert_to_float8_training

    block = Block().to(torch.bfloat16)
    convert_to_float8_training(block, config=Float8LinearConfig())
    x = torch.randn(512, 256, dtype=torch.bfloat16, requires_grad=True)
    _, codes = run_and_get_code(torch.compile(lambda t: block(t).backward()), x)
    for name, code in zip(("forward", "backward"), codes, strict=True):
        call = code[code.index("    def call("):]
        kernels = sorted(set(re.findall(r"(cpp_fused_\w+|triton_\w+)\(", call)))
        mms = re.findall(r"_scaled_mm\((\w+), (\w+), (\w+), (\w+)", call)
        fp8 = re.findall(r"(\w+) = empty_strided_\w+\(\(512, 256\).*float8", call)
        print(f"{name}: {len(kernels)} kernels, {len(mms)} _scaled_mm, input scales {sorted({m[2] for m in mms})}, "
              f"fp8 copies of the [512, 256] input {fp8}")
        for k in kernels:
            print("   ", k)


if __name__ == "__main__":
    main()
