"""How much faster or slower each stack's techniques make a training step than the HF stack's eager step at the
same FLOPs, from each project's own published benchmarks (their conditions quoted). The speed model
(:mod:`gpuplan.speed.training`) multiplies the micro-steps' work by :func:`step_time_factor`; what a stack's
checkpointing runs again (:meth:`Stack.recompute <gpuplan.stacks.base.Stack.recompute>`) is work
the speed model counts itself, as is the PCIe time of activation offloading's copies where they outlast the pass
they hide behind, so neither has a factor here beyond offloading's measured residual.

- torch.compile: torchtune README "Optimization flags" (Llama-3.2-3B full fine-tuning, 1x A100, batch 2 x 4,096
  packed, bf16): 7,075 -> 8,998 tokens/s (+27 %); torchtitan benchmarks/llama3_h100_202412_torchtitan.md
  (Llama-3.1-8B, FSDP, 8 and 128 H100, local batch 2 x 8,192, selective AC): 5,762 -> 6,667 and 5,605 -> 6,514
  tokens/s (+16 %).
- chunked cross-entropy: torchtune flags table 8,998 -> 9,174 tokens/s (+2 %).
- activation offloading: torchtune flags table 7,309 -> 7,301 tokens/s (-0.1 %): the copies overlap compute
  (the speed model finds them hidden there too); the factor is the residual cost of the streams' syncs.
- optimizer step in backward: torchtune flags table 7,210 -> 7,309 tokens/s (+1.4 %).
- Liger's kernels (fused linear cross-entropy, RMSNorm, SwiGLU, RoPE): Liger-Kernel README, "LLaMA 3-8B ~20 %
  faster ... on Alpaca dataset using 4 A100s with FSDP" (HF Trainer).
- Unsloth: README "2x faster" for LoRA/QLoRA (its benchmark: Alpaca, batch 2, accumulation 4, rank 32, QLoRA on
  all linear layers, against Hugging Face + FlashAttention-2); no claim for full fine-tuning.
- float8 linears (torchtitan Table 1): 6,667 -> 8,532 tokens/s (+28 %) on H100; the speed model takes fp8 peak
  FLOPS for fp8-mixed already, so no factor is added here.
"""

from __future__ import annotations

from ..scenario import Scenario

COMPILE = {"torchtitan": 5762 / 6667}  # others: torchtune's single-GPU measurement
COMPILE_DEFAULT = 7075 / 8998
CHUNKED = 8998 / 9174
OFFLOAD = 7309 / 7301
IN_BACKWARD = 7210 / 7309
LIGER = 1 / 1.2
UNSLOTH_LORA = 1 / 2.0


def step_time_factor(stack: str, s: Scenario) -> tuple[float, str]:
    """(factor on the HF eager step time, what it is made of)."""
    factor, parts = 1.0, []
    if stack == "unsloth" and s.method != "full":
        factor *= UNSLOTH_LORA
        parts.append("Unsloth kernels x0.50 (README: 2x faster, QLoRA r32 all-linear, vs HF + FA2)")
    elif s.loss == "fused-linear" and stack in ("hf", "axolotl", "pytorch"):
        factor *= LIGER
        parts.append("Liger kernels x0.83 (Liger README: ~20% faster, Llama-3-8B, 4xA100 FSDP)")
    if s.compile:
        c = COMPILE.get(stack, COMPILE_DEFAULT)
        factor *= c
        parts.append(f"torch.compile x{c:.2f} ("
                     + ("torchtitan Dec-2024 benchmark, +16% tokens/s" if stack == "torchtitan" else
                        "torchtune flags table, +27% tokens/s") + ")")
    if s.loss == "chunked":
        factor *= CHUNKED
        parts.append(f"chunked cross-entropy x{CHUNKED:.2f} (torchtune flags table)")
    if s.activation_offload:
        factor *= OFFLOAD
        parts.append(f"activation offloading x{OFFLOAD:.3f} (torchtune flags table)")
    if s.optimizer_in_backward:
        factor *= IN_BACKWARD
        parts.append(f"optimizer in backward x{IN_BACKWARD:.2f} (torchtune flags table)")
    return factor, "; ".join(parts)
