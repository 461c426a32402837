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
