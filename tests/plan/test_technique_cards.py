"""Techniques a card cannot run are neither advised nor planned there (s27 walk, "Left": the Mac's training advice
offered Liger's Triton kernels and torch.compile). Liger runs where Triton does (NVIDIA, AMD); torch.compile on
MPS has no measured speed-up, so it is warned, not advised."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from gpuplan import estimate
from gpuplan.plan.refusals import COMPILE_APPLE

ROOT = Path(__file__).resolve().parents[2]
LONG_LORA = {"model": "llama-3.1-8b", "task": "train", "method": "lora", "seq_len": 16384}  # 157 GiB: needs advice


def _advice(card: str) -> str:
    result = estimate({**LONG_LORA, "gpu": card})
    assert not result.memory.fits
    return " | ".join(x.change for x in result.suggestions)


@pytest.mark.parametrize("card", ["apple-m4-max", "intel-gaudi3"])
def test_no_liger_where_triton_does_not_run(card):
    said = _advice(card)
    assert "Liger" not in said and "axolotl" not in said
    assert ("torch.compile" in said) == (card != "apple-m4-max")


def test_a_cuda_card_still_gets_both():
    said = _advice("rtx-4090")
    assert "fused linear cross-entropy, no logits (Liger" in said and "torch.compile" in said


def test_liger_loss_on_a_mac_is_refused_in_one_sentence():
    run = subprocess.run([sys.executable, "-m", "gpuplan", "estimate", "--model", "llama-3.1-8b", "--task", "train",
                          "--method", "lora", "--loss", "fused-linear", "--gpu", "apple-m4-max"],
                         capture_output=True, text=True, cwd=ROOT,
                         env={"PYTHONPATH": str(ROOT / "src"), "PATH": "/usr/bin:/bin"})
    assert run.returncode == 2 and "Traceback" not in run.stderr
    assert "loss fused-linear on M4 Max" in run.stderr and "use loss chunked or full" in run.stderr


def test_compile_on_a_mac_is_warned():
    result = estimate({"model": "llama-3.2-1b", "task": "train", "method": "lora", "compile": True,
                       "gpu": "apple-m4-max"})
    assert COMPILE_APPLE in result.warnings
    assert COMPILE_APPLE not in estimate({"model": "llama-3.2-1b", "task": "train", "method": "lora",
                                          "compile": True, "gpu": "h100-sxm"}).warnings


# s27-mac: the rest of what a Mac cannot run. Full fine-tuning of Llama-3.1-8B (163.5 GiB on a 128 GB M4 Max) needs
# advice; before, the Mac was offered 8-bit AdamW, ZeRO-3 over 2, 4 and 8 GPUs and "switch to Unsloth".
FULL = {"model": "llama-3.1-8b", "task": "train", "method": "full"}
CANNOT_ON_A_MAC = ("8-bit AdamW", "ZeRO-3 over", "Unsloth (FastLanguageModel", "FSDP")


def _full_advice(card: str) -> str:
    result = estimate({**FULL, "gpu": card})
    assert not result.memory.fits
    return " | ".join(x.change for x in result.suggestions)


def test_a_mac_is_offered_nothing_it_cannot_run():
    said = _full_advice("apple-m4-max")
    assert not [x for x in CANNOT_ON_A_MAC if x in said], said
    assert "QLoRA (4-bit base)" in said and "LoRA instead of full fine-tuning" in said  # bitsandbytes' MPS 4-bit


def test_an_rtx_4090_still_gets_them():
    said = _full_advice("rtx-4090")
    assert "8-bit AdamW (bitsandbytes)" in said and "ZeRO-3 over 2 GPUs" in said
    assert "switch to Unsloth (FastLanguageModel" in said


def test_gaudi_keeps_zero3_but_not_8bit_adamw():
    said = _full_advice("intel-gaudi3")  # DeepSpeed runs on Gaudi; bitsandbytes' hpu backend has no 8-bit step
    assert "ZeRO-3 over 2 GPUs" in said and "8-bit AdamW" not in said


@pytest.mark.parametrize("card, vendor", [("apple-m4-max", "Apple silicon (MPS)"), ("intel-gaudi3", "Intel Gaudi")])
def test_8bit_adamw_asked_off_cuda_and_rocm_is_refused_in_one_sentence(card, vendor):
    run = subprocess.run([sys.executable, "-m", "gpuplan", "estimate", "--model", "llama-3.2-1b", "--task", "train",
                          "--method", "lora", "--optimizer", "adamw-8bit", "--gpu", card],
                         capture_output=True, text=True, cwd=ROOT,
                         env={"PYTHONPATH": str(ROOT / "src"), "PATH": "/usr/bin:/bin"})
    assert run.returncode == 2 and "Traceback" not in run.stderr
    assert "optimizer adamw-8bit on" in run.stderr and f"no {vendor} kernel" in run.stderr
    assert run.stderr.strip().count("\n") == 0


def test_8bit_adamw_on_amd_still_plans():
    job = {"model": "llama-3.2-1b", "task": "train", "method": "full", "gpu": "amd-instinct-mi300x"}
    eight, full = (estimate({**job, "optimizer": o}).memory.optimizer_gib for o in ("adamw-8bit", "adamw"))
    assert eight == pytest.approx(full / 4, rel=0.03)  # 2 bytes of state a parameter, not 8 (+ blocks' absmax)


def test_a_diffusion_job_on_a_mac_is_not_told_8bit_adamw():
    job = {"model": "flux.1-dev", "task": "train", "method": "full"}
    mac, rtx = ([x.change for x in estimate({**job, "gpu": card}).suggestions] for card in ("apple-m4-max", "rtx-4090"))
    assert "8-bit AdamW" not in " | ".join(mac) and "LoRA instead of full fine-tuning" in mac
    assert "8-bit AdamW" in rtx


def test_recommend_leaves_8bit_adamw_off_an_owned_mac():
    """Before: the owned M4 Max's row for full fine-tuning of Llama-3.1-8B was "gradient checkpointing, 8-bit AdamW"."""
    import gpuplan

    rec = gpuplan.recommend({**FULL, "seq_len": 2048}, have=["1xapple-m4-max"])
    assert not [x for x in rec.owned or [] if "paged 8-bit AdamW" in x.techniques]
    assert any("paged 8-bit AdamW" in x.techniques for x in rec.setups)  # a CUDA card's row keeps it
