"""The kernels the training stacks swap in, emulated for the fake-tensor simulation: autograd Functions that
allocate and save what the real kernels do (Liger's and Unsloth's fused RMSNorm, SwiGLU and linear cross-entropy,
Unsloth's fused LoRA MLP and projections), so that the memory tracker sees their bytes. Loaded only when a
simulation needs them (it imports torch)."""

from __future__ import annotations

import torch


class FusedRMSNorm(torch.autograd.Function):
    """Liger ``LigerRMSNormFunction`` / Unsloth ``Fast_RMS_Layernorm``: output in the input dtype, saves the
    input, the weight and an fp32 rstd per row."""

    @staticmethod
    def forward(ctx, x, weight):
        y = torch.empty_like(x)
        rstd = torch.empty(x.shape[:-1], dtype=torch.float32, device=x.device)
        ctx.save_for_backward(x, weight, rstd)
        return y

    @staticmethod
    def backward(ctx, grad):
        x, weight, _ = ctx.saved_tensors
        return torch.empty_like(x), (torch.empty_like(weight) if ctx.needs_input_grad[1] else None)

class SiLUMul(torch.autograd.Function):
    """Liger ``LigerSiLUMulFunction``: ``silu(a) * b`` saving a and b, silu recomputed in the backward."""

    @staticmethod
    def forward(ctx, a, b):
        ctx.save_for_backward(a, b)
        return torch.empty_like(a)

    @staticmethod
    def backward(ctx, grad):
        a, b = ctx.saved_tensors
        return torch.empty_like(a), torch.empty_like(b)

class FusedLinearCE(torch.autograd.Function):
    """Liger ``LigerFusedLinearCrossEntropyFunction``: ``grad_input`` (and ``grad_weight``) filled in the
    forward chunk by chunk, one chunk of logits at a time; the backward only rescales ``grad_input``.
    Unsloth's ``UnslothFusedLoss``: ``grad_inputs = empty_like(hidden)`` and one chunk's logits in bf16 and
    fp32 at a time (``chunk`` rows)."""

    @staticmethod
    def forward(ctx, hidden, weight, chunk, fp32_chunk):
        rows = hidden.reshape(-1, hidden.shape[-1])
        grad_input = torch.zeros_like(rows)
        grad_weight = torch.zeros_like(weight) if weight.requires_grad else None
        for start in range(0, rows.shape[0], chunk):
            n = min(chunk, rows.shape[0] - start)
            logits = rows[start:start + n] @ weight.t()
            upcast = logits.float() if fp32_chunk else None
            del logits, upcast
        loss = torch.empty(rows.shape[0], dtype=torch.float32, device=hidden.device)
        ctx.save_for_backward(grad_input, *([grad_weight] if grad_weight is not None else []))
        ctx.has_weight_grad = grad_weight is not None
        ctx.shape = hidden.shape
        return loss.sum()

    @staticmethod
    def backward(ctx, grad):
        saved = ctx.saved_tensors
        return saved[0].view(ctx.shape), (saved[1] if ctx.has_weight_grad else None), None, None

class LoRAMLP(torch.autograd.Function):
    """Unsloth ``LoRA_MLP``: gate and up with their adapters, ``silu(e) * g``, down with its adapter; saves the
    input and the gate and up outputs, recomputes the rest in the backward and writes dX into X."""

    @staticmethod
    def forward(ctx, x, gate_w, up_w, down_w, ga, gb, ua, ub, da, db):
        e = x @ gate_w.t().to(x.dtype)
        g = x @ up_w.t().to(x.dtype)
        h = torch.empty_like(e)
        out = h @ down_w.t().to(x.dtype)
        del h
        ctx.save_for_backward(x, e, g, ga, gb, ua, ub, da, db)
        return out

    @staticmethod
    def backward(ctx, grad):
        x, e, _g, *adapters = ctx.saved_tensors
        # DW = dY @ down (width i); the SwiGLU backward writes h, df and de over DW, e and g in place
        # (unsloth/kernels/fast_lora.py LoRA_MLP.backward: ``DW, e, g = _backward_function(DW, e, g)``); the
        # adapters' share of dX (``df @ upB.t() @ upA.t()``) is one hidden-size temporary
        work = [torch.empty_like(e), torch.empty_like(x)]
        del work
        return (x, None, None, None, *[torch.empty_like(a) for a in adapters])

class LoRAProj(torch.autograd.Function):
    """Unsloth ``LoRA_QKV`` / ``LoRA_W``: a projection with its adapter; the input saved once (q, k and v share
    it), the weight dequantized for the matmul only."""

    @staticmethod
    def forward(ctx, x, weight, a, b):
        ctx.save_for_backward(x, a, b)
        return x @ weight.t().to(x.dtype)

    @staticmethod
    def backward(ctx, grad):
        x, a, b = ctx.saved_tensors
        return torch.empty_like(x), None, torch.empty_like(a), torch.empty_like(b)


FUNCTIONS = {"FusedRMSNorm": FusedRMSNorm, "SiLUMul": SiLUMul, "FusedLinearCE": FusedLinearCE, "LoRAMLP": LoRAMLP,
             "LoRAProj": LoRAProj}
