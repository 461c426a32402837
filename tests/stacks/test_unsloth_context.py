"""The longest context that fits, against Unsloth's published table (unslothai/unsloth@e3162dc5bf README.md
'Context length benchmarks', 2025-01-14, the rows of unsloth.ai/blog/llama3-3; copied with their locators to
bench/measured-stacks.csv S0018-S0034): QLoRA rank 32 on all linear layers, batch 1, sequences padded to length,
Llama 3.1 8B by VRAM and Llama 3.3 70B on 48 and 80 GB. The cards are not named (the 70B text names an A100 80GB):
an Ampere card of each size is taken; AdamW (the optimizer is not stated), as for the 80 GB Hugging Face row M0873.

The table is linear in VRAM (4,719 tokens per GB): where a card has little room beyond the weights a few hundred MiB
move the longest sequence by several times, so the test compares two things: the peak at the published length with
the card (well conditioned everywhere) and the longest sequence where the card leaves room.
"""

from __future__ import annotations

import pytest

from gpuplan import estimate

CARDS = {8: "rtx-3070", 12: "rtx-3060", 16: "rtx-a4000", 24: "rtx-3090", 40: "a100-pcie-40gb", 48: "rtx-a6000",
         80: "a100-sxm4-80gb"}
# (model, GB of VRAM, published longest context in tokens), Unsloth's column
UNSLOTH = [("llama-3.1-8b", 8, 2_972), ("llama-3.1-8b", 12, 21_848), ("llama-3.1-8b", 16, 40_724),
           ("llama-3.1-8b", 24, 78_475), ("llama-3.1-8b", 40, 153_977), ("llama-3.1-8b", 48, 191_728),
           ("llama-3.1-8b", 80, 342_733), ("llama-3.3-70b", 48, 12_106), ("llama-3.3-70b", 80, 89_389)]
# the Hugging Face + FlashAttention-2 column where it did not run out of memory (80 GB 8B: M0873)
HF = [("llama-3.1-8b", 12, 932), ("llama-3.1-8b", 16, 2_551), ("llama-3.1-8b", 24, 5_789),
      ("llama-3.1-8b", 40, 12_264), ("llama-3.1-8b", 48, 15_502), ("llama-3.3-70b", 80, 6_916)]


# Unsloth offloads the checkpointed layer inputs to host RAM, which the published runs had room for (the 70B row at
# 89,389 tokens keeps 80 x 89,389 x 8,192 x 2 bytes = 109 GiB there; a cloud A100 80GB machine has 170 GB or more):
# the machines' RAM is not stated, so the tests give 256 GiB (host_ram_gib) and the card decides, as in the table.
HOST_RAM_GIB = 256


def scenario(model: str, gb: int, stack: str, seq_len: int) -> dict:
    out = dict(model=model, task="train", stack=stack, method="qlora", quant="nf4", lora_rank=32,
               lora_targets="all-linear", micro_batch_size=1, seq_len=seq_len, gpu=CARDS[gb], host_ram_gib=HOST_RAM_GIB)
    if stack == "hf":
        out.update(grad_checkpointing="full", attention="flash", transformers_version="4.47")
    return out


@pytest.mark.parametrize("model, gb, tokens", UNSLOTH, ids=[f"{m}-{g}GB" for m, g, _ in UNSLOTH])
def test_unsloth_peak_at_the_published_context_is_the_card(model, gb, tokens):
    """At the longest context Unsloth published, the peak (nvidia-smi level) is the card's memory: within 8 %
    (observed -6 % to +7 %; the rows beyond the 131,072 tokens the solver searches are checked this way only)."""
    mem = estimate(scenario(model, gb, "unsloth", tokens), advise=False).memory
    assert mem.device_peak_gib == pytest.approx(mem.capacity_gib, rel=0.08)


ROOMY = [r for r in UNSLOTH if r[1] in (12, 16, 24) or (r[0].endswith("70b") and r[1] == 80)]


@pytest.mark.parametrize("model, gb, tokens", ROOMY, ids=[f"{m}-{g}GB" for m, g, _ in ROOMY])
def test_unsloth_longest_context_where_the_card_leaves_room(model, gb, tokens):
    """Offloaded checkpoints (three layer inputs on the GPU), one layer's recompute at a time, the fused loss
    taking half of what the first step leaves free: the longest sequence within 10 % of the table (observed
    -3 % to +7 %). Before, the loss chunk was half the card, not half of what is free: 5,650 tokens on 12 GB."""
    mem = estimate(scenario(model, gb, "unsloth", 2048), advise=True).memory
    assert mem.max_seq_len == pytest.approx(tokens, rel=0.10)


@pytest.mark.parametrize("model, gb, tokens", [r for r in HF if r[1] > 12], ids=[f"{m}-{g}GB" for m, g, _ in HF
                                                                                   if g > 12])
def test_hf_column_longest_context(model, gb, tokens):
    """The Hugging Face + FA2 column: within 12 % (observed -11 % to +2 %; the 70B row turns on the optimizer,
    which is not stated)."""
    mem = estimate(scenario(model, gb, "hf", 2048), advise=True).memory
    assert mem.max_seq_len == pytest.approx(tokens, rel=0.12)


@pytest.mark.parametrize("model, gb", [("llama-3.1-8b", 8), ("llama-3.3-70b", 48)])
def test_hf_column_out_of_memory_rows(model, gb):
    """'OOM' in the table: the Hugging Face stack does not fit even 512 tokens, while Unsloth's does."""
    assert estimate(scenario(model, gb, "hf", 512), advise=False).memory.fits is False
    assert estimate(scenario(model, gb, "unsloth", 512), advise=False).memory.fits is True
