"""What a compiled torchao float8 block launches when three linears read one norm's output (bench/results/
train_s28.md): torchao's ``convert_to_float8_training`` (tensorwise dynamic scaling) on RMSNorm -> q, k, v, forward
and backward under ``torch.compile``, and the generated wrappers read back (``torch._inductor.utils.
run_and_get_code``). Runs on CPU (torch 2.13, torchao 0.17); prints per graph the fused kernels, the
``_scaled_mm`` calls, the distinct scale buffers the forward's GEMMs take for their input (1: the max(abs) merged)
and the [512, 256] fp8 buffers allocated (forward: each linear's own copy of the input; backward: the three
column-major copies and the q projection's grad_output).

    python bench/float8_cse_check.py
"""

from __future__ import annotations

import re

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


def main() -> None:
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
