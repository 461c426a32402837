"""MFU at the data's mix of lengths counts the attention of the data's own records.

Review 3's second rewalk (bench/results/review3_rewalk_s6.md): with ``--samples 3000 --mean-tokens 700`` Qwen3-4B
LoRA on an M3 Max printed ``MFU 0.77`` beside ``a ... GEMM reaches 60% of the fp16 peak``, while the same model at
a fixed 700 tokens gave 0.51 at nearly the same tokens/s. The step was timed at the data's lengths but MFU kept the
FLOPs per token of the longest row (6,266 tokens): attention there is 11.1 GFLOP per token, at the data's own
lengths 2.0."""

from __future__ import annotations

import math

import pytest

import gpuplan
from gpuplan.api.page import explain
from gpuplan.dataset import profile
from gpuplan.scenario import scenario_from
from gpuplan.speed.flops import attended_length

DATA = dict(model="qwen3-4b", task="train", method="lora", gpu="apple-m3-max", samples=3000, mean_tokens=700)


def test_attended_length_is_sum_of_squares_over_sum():
    """Hand calculation over the shorthand's own records: sum(len^2) / sum(len), each cut at seq_len; a log-normal
    of sigma 0.7 puts it near mean x exp(sigma^2) = 700 x 1.632 = 1,143."""
    s = scenario_from(DATA)
    rows = [min(x, s.seq_len) for x in profile(s).lengths.sequences]
    assert len(rows) > 100
    assert attended_length(s) == round(sum(x * x for x in rows) / sum(rows))
    assert attended_length(s) == pytest.approx(700 * math.exp(0.7 ** 2), rel=0.05)
    assert attended_length(scenario_from({**DATA, "samples": None, "mean_tokens": None, "seq_len": 900})) == 900


def test_mfu_at_the_mix_matches_the_mfu_at_its_lengths():
    """The data's MFU is within 3% of the MFU of fixed rows at the mean length (both about 0.51 on the M3 Max),
    not 1.5x it, and MFU x peak / tokens/s is the model's FLOPs at the attended length."""
    mixed = gpuplan.estimate(DATA).speed
    fixed = gpuplan.estimate({**DATA, "samples": None, "mean_tokens": None, "seq_len": 700}).speed
    assert mixed.mfu == pytest.approx(fixed.mfu, rel=0.03)
    assert 0.45 < mixed.mfu < 0.56


@pytest.mark.parametrize("extra", [{}, {"seq_len": 4096}], ids=["padded", "packed"])
def test_the_page_formula_gives_the_mfu_shown(extra):
    """The page's MFU formula, with the data's attended length, computes the value the estimate states."""
    f = explain({**DATA, **extra}).numbers["speed.mfu"]
    assert f.computed == pytest.approx(f.value, rel=1e-9)
    assert "keys" in f.substituted
