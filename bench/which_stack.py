"""docs/fine-tune.md's "Which stack?" table: the same job on every training stack, with each stack's own defaults.

    python bench/which_stack.py [--gpu rtx-4090] [--model llama-3.1-8b]

Llama-3.1-8B, LoRA (rank 16, all linear layers) and QLoRA, one sequence of 2,048 and 8,192 tokens per micro-step
(micro-batch 1: left unset, each stack's recipe would pick the micro-batch that fills the card) on one 24 GB card:
the device peak (what nvidia-smi would show), whether it fits, tokens/s from the speed model with the kernels each
stack runs (stacks/speedups.py), and the technique that makes the difference, named by the stack's profile.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))

from gpuplan import GpuplanError, estimate
from gpuplan.scenario.stacks import STACK_NAMES

WHAT = {  # the technique that makes the difference in each stack's defaults
    "hf": "fp32 logits (12 bytes per logit at the loss backward); QLoRA: checkpointing on (peft), fp32 embeddings",
    "torchtune": "bf16 throughout (bf16 adapters), chunked cross-entropy, checkpointing",
    "torchtitan": "full fine-tuning only (no LoRA): not run",
    "unsloth": "fused linear cross-entropy (no logits), checkpoints offloaded to CPU, fused LoRA kernels",
    "axolotl": "Liger's fused linear cross-entropy, RMSNorm and SwiGLU kernels, checkpointing; QLoRA's embeddings "
               "cast back to bf16",
    "pytorch": "your loop as written: bf16 base, fp32 peft adapters, full logits, no checkpointing",
}


def rows(model: str, gpu: str) -> list[str]:
    lines = ["| stack | method | tokens | peak GiB | fits | tokens/s | what makes the difference |",
             "|---|---|---:|---:|---|---:|---|"]
    for stack in STACK_NAMES:
        for method in ("lora", "qlora"):
            for seq in (2048, 8192):
                scenario = dict(model=model, task="train", stack=stack, method=method, seq_len=seq, gpu=gpu,
                                micro_batch_size=1)  # one sequence per step: the recipes would fill the card
                try:
                    r = estimate(scenario, advise=False)
                except GpuplanError as err:
                    lines.append(f"| {stack} | {method} | {seq:,} | - | - | - | {err} |")
                    break
                mem, tokens_per_s = r.memory, (r.speed.tokens_per_s if r.speed else 0.0)
                lines.append(f"| {stack} | {method} | {seq:,} | {mem.device_peak_gib:.1f} | "
                             f"{'yes' if mem.fits else 'no'} | {tokens_per_s:,.0f} | "
                             f"{WHAT[stack]} |")
            else:
                continue
            break
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gpu", default="rtx-4090")
    parser.add_argument("--model", default="llama-3.1-8b")
    args = parser.parse_args()
    print("\n".join(rows(args.model, args.gpu)))


if __name__ == "__main__":
    main()
