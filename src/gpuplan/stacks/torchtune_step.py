"""torchtune 0.1 QLoRA on one GPU: one training step's allocations, replayed after model init (:mod:`.torchao_nf4`).

The recipe (``recipes/lora_finetune_single_device.py`` at pytorch/torchtune v0.1.0) wraps each decoder layer in a
non-reentrant activation checkpoint (``utils.set_activation_checkpointing``), runs the model, slices the fp32
logits (``logits[..., :-1, :].contiguous()``), takes ``CrossEntropyLoss`` and ``loss.backward()``; AdamW steps the
LoRA adapters. What the replay allocates, in order, with the lifetimes the code gives them (bf16 activations, T
tokens of the micro-batch):

- forward, per layer: only the layer's input stays; inside, ``RMSNorm`` (``x.float()``, its square, the row mean,
  ``rsqrt``, the product, ``type_as``, ``* scale``), each ``LoRALinear`` (``linear_nf4``: torchao 0.1's
  ``get_original_weight`` and the matmul; ``lora_a``, ``lora_b``, the scaling, the sum), the rotary embedding of q
  and k (``x.float()``, four products, two sums, ``torch.stack``, ``type_as``), SDPA (flash: output and
  log-sum-exp), ``contiguous`` of its transpose, the output projection, the residuals, the MLP (w1, SiLU, w3, the
  product, w2);
- the loss: final norm, the bf16 head output, ``.float()``, the sliced copy (kept by the loop's ``logits`` until
  the step ends), ``log_softmax``; in the backward the NLL gradient, its ``log_softmax`` backward, the slice's
  zero-filled full-size gradient, the cast back to bf16 and the head's input gradient;
- backward, per layer from the last: the checkpoint recomputes the layer keeping what its backward saves (the
  norms' fp32 input, ``rsqrt`` and bf16 output, the LoRA inputs, q and k after the rotary embedding, v, the SDPA
  output and log-sum-exp, the MLP's gate, SiLU, up and product), then each op's backward frees what it used:
  ``LinearNF4.backward`` dequantizes the weight again (``grad_output @ weight.to(dtype)``), ``lora_b``/``lora_a``
  give their input gradients, SDPA's flash backward takes an fp32 ``dq`` accumulator;
- AdamW (foreach) creates ``exp_avg`` and ``exp_avg_sq`` for each adapter at its first step.

Small-pool details below 512 bytes (scalars, the loss) are left out; they share 2 MiB segments with the adapters.
``bench/replay_check_torchtune01.py`` runs the recipe's step with torchtune v0.1.0's and torchao v0.1's code on CPU
tensors, each storage fed to the allocator model: the same reserved bytes as this replay with 4 layers of 1,024
(two micro-batches of 2 x 512; CPU's SDPA kernels stand in for CUDA's), 0.3 % more with 12 layers of 2,048 (three
2 MiB small segments: small tensors left out here).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from ..tensors.allocator import Block
from .torchao_nf4 import Heap, Layout, get_original_weight, init_heap


@dataclass(frozen=True)
class Replay:
    """Bytes in the allocator's segments after model init and after a training step on top (``reserved``:
    ``max_memory_reserved``, as nothing is given back)."""

    init_reserved: int
    reserved: int


class _Step:
    """One micro-batch of ``tokens`` tokens through ``lay``'s model on the heap ``h``."""

    def __init__(self, h: Heap, lay: Layout, tokens: int, batch: int):
        self.h, self.lay, self.T, self.batch = h, lay, tokens, batch
        self.shapes = {name: (n_in, n_out, quantized) for name, n_in, n_out, quantized in lay.linears}
        self.grads: list = []  # the adapters' gradients, kept to the optimizer step

    # -- pieces -----------------------------------------------------------------------------------------
    def rmsnorm(self, keep: bool) -> tuple:
        """Returns the output and what the backward keeps (empty unless ``keep``)."""
        h, T, d = self.h, self.T, self.lay.hidden
        xf = h.new(4 * T * d)
        sq = h.new(4 * T * d)
        mean = h.new(4 * T)
        h.drop(sq)
        eps = h.new(4 * T)
        h.drop(mean)
        r = h.new(4 * T)
        h.drop(eps)
        prod = h.new(4 * T * d)
        t = h.new(2 * T * d)
        h.drop(prod)
        out = h.new(2 * T * d)
        if keep:
            return out, (xf, r, t)
        h.drop(t, r, xf)
        return out, ()

    def rmsnorm_backward(self, saved: tuple) -> Block | None:
        """grad * scale, the cast to fp32, the product's and rsqrt/mean/pow's backward, the cast back."""
        h, T, d = self.h, self.T, self.lay.hidden
        g = h.new(2 * T * d)
        g32 = h.new(4 * T * d)
        h.drop(g)
        gx = h.new(4 * T * d)
        gr_full = h.new(4 * T * d)
        gr = h.new(4 * T)
        h.drop(gr_full)
        gm = h.new(4 * T)
        h.drop(gr)
        gsq = h.new(4 * T * d)
        h.drop(gm)
        gp = h.new(4 * T * d)
        h.drop(gsq)
        h.drop(gp, g32)  # accumulated into gx
        out = h.new(2 * T * d)
        h.drop(gx, *saved)
        return out

    def linear(self, name: str, keep: bool) -> tuple:
        """``LoRALinear.forward`` on the live input; returns the output and what its backward keeps."""
        h, T = self.h, self.T
        n_in, n_out, quantized = self.shapes[name]
        weight = get_original_weight(h, n_in * n_out) if quantized else None
        base = h.new(2 * T * n_out)
        h.drop(weight)
        if not quantized:
            return base, ()
        a = h.new(2 * T * self.lay.lora_rank)
        b = h.new(2 * T * n_out)
        scaled = h.new(2 * T * n_out)
        h.drop(b)
        out = h.new(2 * T * n_out)
        h.drop(base, scaled)
        if keep:
            return out, (a,)
        h.drop(a)
        return out, ()

    def linear_backward(self, name: str, saved: tuple) -> Block | None:
        """The scaled LoRA branch's gradients, then ``grad_output @ W`` (W dequantized again); the input's two
        gradients are summed into the first."""
        h, T = self.h, self.T
        n_in, n_out, quantized = self.shapes[name]
        if not quantized:  # a frozen bf16 nn.Linear: grad_output @ W
            return h.new(2 * T * n_in)
        rank = self.lay.lora_rank
        gb = h.new(2 * T * n_out)
        ga = h.new(2 * T * rank)
        self.grads += [h.new(2 * n_out * rank), h.new(2 * rank * n_in)]
        h.drop(gb, *saved)
        g_lora = h.new(2 * T * n_in)
        h.drop(ga)
        weight = get_original_weight(h, n_in * n_out)
        g_base = h.new(2 * T * n_in)
        h.drop(weight, g_lora)  # summed into g_base
        return g_base

    def rope(self, n: int) -> Block | None:
        """The rotary embedding of a (T, n) projection: returns the bf16 result."""
        h, T = self.h, self.T
        xs = h.new(4 * T * n)
        halves = []
        for _ in range(2):
            p1, p2 = h.new(2 * T * n), h.new(2 * T * n)
            halves.append(h.new(2 * T * n))
            h.drop(p1, p2)
        st = h.new(4 * T * n)
        h.drop(*halves)
        out = h.new(2 * T * n)
        h.drop(st, xs)
        return out

    def rope_backward(self, n: int) -> Block | None:
        h, T = self.h, self.T
        g32 = h.new(4 * T * n)
        parts = [h.new(2 * T * n) for _ in range(4)]
        gx = h.new(4 * T * n)
        h.drop(*parts, g32)
        out = h.new(2 * T * n)
        h.drop(gx)
        return out

    # -- a decoder layer ---------------------------------------------------------------------------------
    def layer(self, keep: bool) -> tuple:
        """The layer's forward on its (live) input; returns its output and the saved tensors (when ``keep``)."""
        h, T, d = self.h, self.T, self.lay.hidden
        nq = self.shapes["q_proj"][1]
        nkv = self.shapes["k_proj"][1]
        saved: dict[str, tuple] = {}
        y, saved["sa_norm"] = self.rmsnorm(keep)
        q, saved["q_proj"] = self.linear("q_proj", keep)
        k, saved["k_proj"] = self.linear("k_proj", keep)
        v, saved["v_proj"] = self.linear("v_proj", keep)
        qr = self.rope(nq)
        h.drop(q)
        kr = self.rope(nkv)
        h.drop(k)
        attn = h.new(2 * T * nq)
        lse = h.new(4 * T * nq // self.lay.head_dim)
        cont = h.new(2 * T * nq)
        if not keep:
            h.drop(attn, lse)
        out, saved["o_proj"] = self.linear("o_proj", keep)
        if keep:
            saved["attention"] = (y, qr, kr, v, attn, lse, cont)
        else:
            h.drop(qr, kr, v, cont, y)
        resid = h.new(2 * T * d)
        y2, saved["mlp_norm"] = self.rmsnorm(keep)
        f = self.shapes["gate_proj"][1]
        gate, saved["gate_proj"] = self.linear("gate_proj", keep)
        act = h.new(2 * T * f)
        if not keep:
            h.drop(gate)
        up, saved["up_proj"] = self.linear("up_proj", keep)
        prod = h.new(2 * T * f)
        if not keep:
            h.drop(act, up)
        mlp, saved["down_proj"] = self.linear("down_proj", keep)
        if keep:
            saved["mlp"] = (y2, gate, act, up, prod)
        else:
            h.drop(prod, y2)
        result = h.new(2 * T * d)
        h.drop(out, resid, mlp)
        return result, saved

    def layer_backward(self, saved: dict[str, tuple]) -> Block | None:
        """The layer's backward from the gradient of its output (live) to that of its input (returned)."""
        h, T = self.h, self.T
        nq, nkv = self.shapes["q_proj"][1], self.shapes["k_proj"][1]
        y2, gate, act, up, prod = saved["mlp"]
        g_prod = self.linear_backward("down_proj", saved["down_proj"])
        h.drop(prod)
        g_act, g_up = h.new(g_prod.size), h.new(g_prod.size)
        h.drop(g_prod, up)
        g_y2 = self.linear_backward("up_proj", saved["up_proj"])
        h.drop(g_up)
        g_gate = h.new(g_act.size)
        h.drop(g_act, act, gate)
        g_y2b = self.linear_backward("gate_proj", saved["gate_proj"])
        h.drop(g_gate, g_y2b, y2)  # summed into g_y2
        g_h = self.rmsnorm_backward(saved["mlp_norm"])
        h.drop(g_y2)
        y, qr, kr, v, attn, lse, cont = saved["attention"]
        g_cont = self.linear_backward("o_proj", saved["o_proj"])
        h.drop(cont)
        g_attn = h.new(2 * T * nq)
        h.drop(g_cont)
        dq_accum = h.new(4 * T * nq)
        g_q, g_k, g_v = h.new(2 * T * nq), h.new(2 * T * nkv), h.new(2 * T * nkv)
        h.drop(dq_accum, g_attn, attn, lse, qr, kr, v)
        g_qp = self.rope_backward(nq)
        h.drop(g_q)
        g_kp = self.rope_backward(nkv)
        h.drop(g_k)
        g_y = self.linear_backward("q_proj", saved["q_proj"])
        h.drop(g_qp)
        h.drop(self.linear_backward("k_proj", saved["k_proj"]), g_kp)
        h.drop(self.linear_backward("v_proj", saved["v_proj"]), g_v, y)
        g_x = self.rmsnorm_backward(saved["sa_norm"])
        h.drop(g_y)
        h.drop(g_h)  # summed into g_x with the residual
        return g_x

    # -- the step ----------------------------------------------------------------------------------------
    def run(self, grads: list) -> None:
        """Forward, loss and backward of the micro-batch; the adapters' gradients are added to ``grads``."""
        h, T, lay = self.h, self.T, self.lay
        d, V = lay.hidden, lay.vocab
        self.grads = grads
        inputs = [h.new(2 * T * d)]  # the embedding's output; each layer's input stays for its checkpoint
        for _ in range(lay.num_layers):
            inputs.append(self.layer(keep=False)[0])
        # the loss
        y, norm_saved = self.rmsnorm(keep=True)
        h.drop(inputs.pop())
        logits16 = h.new(2 * T * V)
        logits32 = h.new(4 * T * V)
        h.drop(logits16)
        rows = T - self.batch
        logits = h.new(4 * rows * V)  # the loop's ``logits`` holds the sliced copy to the end of the step
        h.drop(logits32)
        logp = h.new(4 * rows * V)
        g_nll = h.new(4 * rows * V)
        g_ls = h.new(4 * rows * V)
        h.drop(g_nll, logp)
        g_full = h.new(4 * T * V)
        h.drop(g_ls)
        g16 = h.new(2 * T * V)
        h.drop(g_full)
        g_y = h.new(2 * T * d)
        h.drop(g16, y)
        g = self.rmsnorm_backward(norm_saved)
        h.drop(g_y)
        # the layers, last first: the checkpoint recomputes the layer (its output is dropped), then its backward
        while inputs:
            out, saved = self.layer(keep=True)
            h.drop(out)
            g_in = self.layer_backward(saved)
            h.drop(g, inputs.pop())
            g = g_in
        h.drop(g, logits)


def replay_step(h: Heap, lay: Layout, tokens: int, batch: int, micro_batches: int = 1) -> None:
    """A micro-batch of ``tokens`` tokens (``batch`` sequences) on the heap model init left, then AdamW's step:
    its ``exp_avg`` and ``exp_avg_sq`` per adapter stay, the gradients go (``zero_grad(set_to_none=True)``); then
    ``micro_batches - 1`` more (on Llama-2-7B a second one reserves nothing new: the test checks it)."""
    grads: list = []
    _Step(h, lay, tokens, batch).run(grads)
    for g in grads:
        h.new(g.size)
        h.new(g.size)
    h.drop(*grads)
    for _ in range(micro_batches - 1):
        _Step(h, lay, tokens, batch).run([])


@lru_cache(maxsize=64)
def replay(lay: Layout, tokens: int, batch: int) -> Replay:
    """Model init, then a training step at ``tokens`` tokens; cached (a replay takes about 60 ms)."""
    h = init_heap(lay)
    init = h.a.reserved
    replay_step(h, lay, tokens, batch)
    return Replay(init_reserved=init, reserved=h.a.reserved)
