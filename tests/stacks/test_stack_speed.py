"""Stacks' published speed-ups as checks of the speed model (issue 20): no stack's speed is an input any more
(:mod:`gpuplan.stacks.speedups` changes the kernels of the parts of a step a stack touches), so each published
figure is compared with the ratio the model finds under the publisher's conditions, within a stated tolerance.

Tolerance: the modelled speed-up within 20 % of the published one (ratio of ratios in 0.8-1.2), and on the right
side of 1. Sources, with their conditions:

- Unsloth against Hugging Face, QLoRA (both with gradient checkpointing, bitsandbytes NF4, batch 2, accumulation 4),
  the measurements the Unsloth README carries (unslothai/unsloth@bb66faaa33 README.md, Feb 2024), each with its
  conditions: Hugging Face's own (blog "Make LLM Fine-tuning 2x faster with Unsloth and TRL", the "Free Colab T4"
  table: fp16, against PyTorch 2.1.1's SDPA) Llama-2 7B on OASST 1.95x / 1.19x = 1.64x and Mistral 7B on Alpaca
  1.56x / 1.07x = 1.46x; Unsloth's "Detailed Benchmarking Tables" on an A100 40GB, Mistral 7B on Slim Orca, against
  HF + Flash Attention 2: 1,571 s / 842 s = 1.87x. The baseline is the HF QLoRA recipe (TRL's SFTTrainer runs peft's
  prepare_model_for_kbit_training: fp32 norms, embeddings and head); the model prices bitsandbytes' kernels and
  Python and that upcast from their code (overheads.BNB_*, FP32_UPCAST_*), Unsloth's same dequantization kernels
  with less Python, and its fused kernels. Sequence lengths: Alpaca's rows are short (the 52k-row set's 'text'
  column with the prompt template is ~550 bytes a row, ~150-200 Llama tokens; 2 x 256 here, padded to the longer
  of two), OASST's and Slim Orca's longer (2 x 512); the modelled ratio moves by under 10 % from 256 to 1,024.
  The README's headline "2x" for Llama 3.1 (8B) on 80 GB (Alpaca, rank 32) is not met within 20 %: the modelled
  ratio is ~1.5x (see test_unsloth_headline_within_the_measured_range).
- Liger-Kernel README: "LLaMA 3-8B ~20% faster ... on Alpaca dataset using 4 A100s with FSDP" (HF Trainer,
  gradient checkpointing).
- torchtune README "Optimization flags" (Llama-3.2-3B full fine-tuning, 1x A100, batch 2 x 4,096 packed):
  compile 7,075 -> 8,998 tokens/s; chunked cross-entropy 8,998 -> 9,174.
- torchtitan benchmarks/llama3_h100_202412_torchtitan.md (Llama-3.1-8B, FSDP on 8 H100, 2 x 8,192, selective AC):
  compile 5,762 -> 6,667 tokens/s; float8 6,667 -> 8,532.
"""

from __future__ import annotations

import pytest

from gpuplan.hardware import load_gpu
from gpuplan.model.catalog import load_model
from gpuplan.scenario import scenario_from
from gpuplan.speed import speed_of

TOLERANCE = 0.20


def _tps(**fields) -> float:
    s = scenario_from(fields)
    return speed_of(s, load_model(s.model), load_gpu(s.gpu)).tokens_per_s


UNSLOTH = dict(model="llama-3.1-8b", task="train", method="qlora", gpu="a100-80gb", micro_batch_size=2, seq_len=512,
               grad_accum_steps=4, lora_rank=32, attention="flash", grad_checkpointing="full")
# the README's T4 settings: bsz 2, ga 4, adamw_8bit; T4 has no bf16 and no FlashAttention-2
UNSLOTH_T4 = dict(task="train", method="qlora", gpu="nvidia-t4", precision="fp16-mixed", micro_batch_size=2,
                  grad_accum_steps=4, lora_rank=16, attention="sdpa", grad_checkpointing="full", optimizer="adamw-8bit")
UNSLOTH_A100 = dict(task="train", method="qlora", gpu="nvidia-a100-sxm4-40gb", micro_batch_size=2,
                    grad_accum_steps=4, lora_rank=16, attention="flash", grad_checkpointing="full")
T4_LLAMA = {**UNSLOTH_T4, "model": "llama-2-7b", "seq_len": 512}
T4_MISTRAL = {**UNSLOTH_T4, "model": "mistral-7b-v0.1", "seq_len": 256}
A100_MISTRAL = {**UNSLOTH_A100, "model": "mistral-7b-v0.1", "seq_len": 512}
LIGER = dict(model="llama-3-8b", task="train", gpu="a100-80gb", num_gpus=4, sharding="fsdp", micro_batch_size=8,
             seq_len=512, grad_checkpointing="full")
TORCHTUNE = dict(model="llama-3.2-3b", task="train", stack="torchtune", gpu="a100-80gb", micro_batch_size=2,
                 seq_len=4096)
TORCHTITAN = dict(model="llama-3.1-8b", task="train", stack="torchtitan", gpu="h100-sxm", num_gpus=8,
                  sharding="fsdp", micro_batch_size=2, seq_len=8192, grad_checkpointing="selective",
                  attention="flash")

CHECKS = [  # (what, baseline fields, changed fields, published speed-up)
    ("Unsloth T4 Llama-2 7B OASST (HF) 1.64x", T4_LLAMA, {**T4_LLAMA, "stack": "unsloth"}, 1.95 / 1.19),
    ("Unsloth T4 Mistral 7B Alpaca (HF) 1.46x", T4_MISTRAL, {**T4_MISTRAL, "stack": "unsloth"}, 1.56 / 1.07),
    ("Unsloth A100 Mistral 7B Slim Orca 1.87x", A100_MISTRAL, {**A100_MISTRAL, "stack": "unsloth"}, 1571 / 842),
    ("Liger ~20%", LIGER, {**LIGER, "loss": "fused-linear"}, 1.2),
    ("torchtune compile", TORCHTUNE, {**TORCHTUNE, "compile": True}, 8998 / 7075),
    ("torchtitan compile", TORCHTITAN, {**TORCHTITAN, "compile": True}, 6667 / 5762),
    ("torchtitan float8", {**TORCHTITAN, "compile": True}, {**TORCHTITAN, "compile": True, "precision": "fp8-mixed"},
     8532 / 6667),
]


@pytest.mark.parametrize("check", CHECKS, ids=lambda c: c[0])
def test_published_speed_ups_are_checks_not_inputs(check):
    _, before, after, published = check
    modelled = _tps(**after) / _tps(**before)
    assert modelled > 1
    assert modelled / published == pytest.approx(1, abs=TOLERANCE)


def test_torchtune_chunked_loss_is_about_the_same_speed():
    """torchtune's flags table: chunked cross-entropy +2 % (8,998 -> 9,174 tokens/s, compiled): within 5 %."""
    base = {**TORCHTUNE, "compile": True}
    ratio = _tps(**{**base, "loss": "chunked"}) / _tps(**{**base, "loss": "full"})
    assert ratio == pytest.approx(9174 / 8998, abs=0.05)


def test_unsloth_full_fine_tuning_claims_nothing_and_gains_little():
    """Unsloth claims no speed-up for full fine-tuning; its fused norms and loss change a few percent of the step."""
    base = {**UNSLOTH, "method": "full", "model": "llama-3.2-1b"}
    ratio = _tps(**{**base, "stack": "unsloth"}) / _tps(**base)
    assert 1.0 <= ratio < 1.3


def test_unsloth_headline_within_the_measured_range():
    """The README's headline "2x" (Llama 3.1 8B QLoRA on an A100 80GB, Alpaca, batch 2 x 4, rank 32, against HF +
    FA2) is a rounded claim without its timings; the physically modelled ratio there is ~1.5x, 0.76 of it, below the
    20 % tolerance. Not tuned to it: bitsandbytes' dequantization runs the same kernels under both stacks
    (fast_dequantize calls cdequantize_blockwise_*_nf4 itself), so what Unsloth saves is host work, peft's clone,
    the fp32 upcast, its fused norms, activations, adapters and loss. What the measured rows above support is
    checked instead: the modelled speed-up lies within their range (1.46x-1.87x), 20 % either side, and above 1."""
    ratio = _tps(**{**UNSLOTH, "seq_len": 256, "stack": "unsloth"}) / _tps(**{**UNSLOTH, "seq_len": 256})
    assert 1.46 * (1 - TOLERANCE) <= ratio <= 1.87 * (1 + TOLERANCE)
    assert ratio > 1
