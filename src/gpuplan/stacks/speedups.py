"""What each training stack's kernels change in a step, as the speed model (:mod:`gpuplan.speed.training`) applies
them to the parts of the step they touch. A stack's published speed-up is never an input here: the tests check the
speed model against it (``tests/stacks/test_stack_speed.py``).

What a stack changes, and where it lands in the step:

- fused element-wise kernels (Liger's and Unsloth's Triton RMSNorm, RoPE and SwiGLU; Megatron's and Transformer
  Engine's fused norms and activations; torch.compile's Inductor fusions): the element-wise traffic falls to what
  fused kernels move (:data:`~gpuplan.overheads.FUSED_ELEMENTWISE_BYTES`, counted as for vLLM's fused kernels);
- the loss: transformers' fp32 cross-entropy moves :data:`~gpuplan.overheads.LOSS_BYTES_PER_LOGIT`; torchtune's
  chunked loss upcasts one chunk at a time, and a fused linear cross-entropy (Liger, Unsloth, Cut Cross-Entropy)
  never stores fp32 logits (:data:`~gpuplan.overheads.LOSS_BYTES_PER_LOGIT_STACK`);
- peft's adapter path (scale, add, dropout) or Unsloth's fused LoRA matmuls (``matmul_lora``: the adapter's
  product added in place to the base output, no dropout);
- QLoRA's dequantization: bitsandbytes' kernels called through peft per module (``MatMul4Bit``, with peft's
  defensive clone of the base output), or Unsloth's ``fast_dequantize`` launching the same three CUDA kernels
  through ctypes with less Python around them: the GPU work is the same, the host work is not;
- host work: eager PyTorch launches every op from Python; Unsloth's hand-written autograd functions launch fewer,
  and compiled graphs fewer still (:data:`~gpuplan.overheads.HOST_OPS_FACTOR`);
- attention: which fused kernel runs (:mod:`.attention`: FlashAttention-2's class or cuDNN's Hopper kernel, by the
  stack and the PyTorch release), timed at that kernel's efficiency on the card;
- offloaded checkpointing's PCIe copies, recomputation and fp8 casts: counted by the speed model itself.
"""

from __future__ import annotations

from dataclasses import dataclass

from .. import overheads as oh
from ..scenario import Scenario
from .attention import attention_class


@dataclass(frozen=True, kw_only=True)
class Kernels:
    """The kernels a stack runs for the parts of a step it changes; 1.0 (the defaults) is transformers + peft eager."""

    fused_elementwise: bool = False  # fused norm/RoPE/activation kernels (FUSED_ELEMENTWISE_BYTES), else eager
    complex_rope: bool = False  # a rotary embedding in complex numbers, left unfused by Inductor (ROPE_COMPLEX_BYTES)
    loss_bytes_per_logit: float = oh.LOSS_BYTES_PER_LOGIT
    lora_bytes_per_output: float = oh.LORA_BYTES_PER_OUTPUT
    lora_dropout: bool = True  # whether a lora_dropout > 0 runs (Unsloth drops it)
    # QLoRA's dequantization: "bnb" (bitsandbytes' kernels), "eager" / "compiled" (torchao's NF4Tensor, by
    # overheads.TORCHAO_NF4_DEQUANT_BYTES_PER_PARAM) or "generic" (AutoGPTQ's)
    dequant: str = "generic"
    dequant_host_ops: float = 0.0  # eager ops of host work per dequantization (overheads.DEQUANT_HOST_OPS)
    linear_4bit_host_ops: float = 0.0  # per 4-bit linear forward around it (overheads.BNB_LINEAR_HOST_OPS)
    host_ops: float = 1.0  # share of eager PyTorch's per-op host cost that remains
    attention: str = "cudnn"  # the fused attention kernel's class (.attention): cudnn | flash2
    attention_by_sdpa: bool = False  # the class is the one PyTorch SDPA's dispatch picks (the torch release's)
    why: tuple[str, ...] = ()

    @property
    def text(self) -> str:
        return "; ".join(self.why)


def kernels(stack: str, s: Scenario, *, liger: bool = False, fused_stack: bool = False,
            te_attention: bool | None = None, complex_rope: bool = False) -> Kernels:
    """The kernels ``stack`` runs for ``s``; ``liger``: it runs Liger's RMSNorm, RoPE and SwiGLU kernels (its profile
    says, :meth:`~gpuplan.stacks.base.Stack.liger_kernels`, as the memory's :meth:`~gpuplan.stacks.base.Stack.fused`
    does); ``fused_stack``: a Megatron-style stack (tensor parallel,
    Transformer Engine under fp8) whose norms and activations are fused kernels whatever the stack field says, and whose
    attention is Transformer Engine's unless ``te_attention`` says otherwise; ``complex_rope``: the stack's model
    rotates queries and keys in complex numbers, which torch.compile leaves to eager kernels."""
    fused, host, why = False, 1.0, []
    loss = oh.LOSS_BYTES_PER_LOGIT_STACK.get(s.loss, oh.LOSS_BYTES_PER_LOGIT)
    lora_out, dropout = oh.LORA_BYTES_PER_OUTPUT, True
    # bitsandbytes runs QLoRA's NF4/FP4 base under transformers-based stacks; torchtune's NF4 is torchao's, GPTQ
    # checkpoints AutoGPTQ's
    bnb = s.method == "qlora" and (s.quant or "nf4") in ("nf4", "fp4") and stack in ("hf", "axolotl", "pytorch",
                                                                                       "unsloth")
    dequant, dequant_ops, linear_ops = ("bnb", oh.DEQUANT_HOST_OPS["bnb"], oh.BNB_LINEAR_HOST_OPS) if bnb \
        else ("generic", 0.0, 0.0)
    if s.method == "qlora" and stack == "torchtune" and (s.quant or "nf4") == "nf4":
        dequant = "compiled" if s.compile else "eager"
    if stack == "unsloth":
        fused = True
        host = oh.HOST_OPS_FACTOR["unsloth"]
        why.append("Unsloth: Triton RMSNorm/RoPE/SwiGLU, hand-written autograd (fewer launches)")
        if s.method != "full" and s.lora_dropout == 0:  # Unsloth's fast LoRA path needs dropout 0, else peft's
            lora_out, dropout = oh.LORA_BYTES_PER_OUTPUT_FUSED, False
            why.append("fused LoRA matmuls")
        if bnb and s.lora_dropout == 0:  # fast_lora.py's autograd functions call fast_dequantize
            dequant_ops, linear_ops = oh.DEQUANT_HOST_OPS["unsloth"], 0.0
            why.append("bitsandbytes' dequantize kernels launched directly (fast_dequantize)")
    elif liger:
        fused = True
        why.append("Liger: Triton RMSNorm/RoPE/SwiGLU")
    elif fused_stack:
        fused = True
        why.append("fused norms and activations (Megatron / Transformer Engine)")
    if bnb and linear_ops:  # peft's Linear4bit clones the base output before adding the adapter's
        lora_out += oh.PEFT_4BIT_CLONE_BYTES_PER_OUTPUT
    if s.loss != "full":
        why.append(f"{s.loss} loss: {loss:.0f} bytes per logit instead of {oh.LOSS_BYTES_PER_LOGIT}")
    if s.compile:
        fused = True
        host *= oh.HOST_OPS_FACTOR["compile"]
        why.append("torch.compile: element-wise ops fused, fewer launches"
                   + ("; the complex-number rotary embedding left unfused" if complex_rope else ""))
    te = fused_stack if te_attention is None else te_attention
    sdpa = s.attention == "sdpa" and stack != "megatron" and not te
    # a complex rotary embedding runs as eager ATen kernels whatever else is fused (Inductor generates none for it)
    return Kernels(fused_elementwise=fused, complex_rope=complex_rope and fused, loss_bytes_per_logit=loss,
                   lora_bytes_per_output=lora_out,
                   lora_dropout=dropout, dequant=dequant, dequant_host_ops=dequant_ops,
                   linear_4bit_host_ops=linear_ops, host_ops=host,
                   attention=attention_class(stack, s, te=te), attention_by_sdpa=sdpa, why=tuple(why))
