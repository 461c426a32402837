"""Bands that mean what they say (issue 31 item 7): each serving engine x model class carries the band its
held-out rows measure (bench/serving/bands.py writes bench/results/bands.md), or says "uncalibrated"."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from gpuplan import estimate
from gpuplan import overheads as oh
from gpuplan.model.catalog import load_model
from gpuplan.speed.bands import decode_band, model_class

RESULTS = Path(__file__).resolve().parents[2] / "bench" / "results" / "bands.md"


def test_the_bands_are_the_benchs_held_out_rows():
    rows = re.findall(r"^\| (\w+) \| (\w+) \| (\d+) \| ([+-][\d.]+) \| ([+-][\d.]+) \|", RESULTS.read_text(), re.M)
    measured = {(e, c): (float(lo), float(hi), int(n)) for e, c, n, lo, hi in rows}
    assert len(measured) >= 5
    assert {k: v[:3] for k, v in oh.DECODE_BANDS.items()} == measured


def test_model_classes():
    names = ("llama-3.1-8b", "qwen3-30b-a3b", "deepseek-r1", "Qwen/Qwen3.5-27B", "tiiuae/Falcon-H1-0.5B-Instruct")
    assert [model_class(load_model(n)) for n in names] == ["dense", "MoE", "MoE", "hybrid", "hybrid"]


@pytest.mark.parametrize("engine, model, calibrated", [
    ("vllm", "llama-3.1-8b", True), ("sglang", "llama-3.1-8b", True), ("sglang", "qwen3-30b-a3b", False),
    ("llama.cpp", "llama-3.1-8b", False), ("vllm", "qwen3-30b-a3b", True)])
def test_a_plans_range_is_its_pairs_band_or_says_uncalibrated(engine, model, calibrated):
    plan = estimate({"model": model, "task": "infer", "engine": engine, "gpu": "h100-sxm", "batch_size": 8},
                    advise=False)
    sp = plan.speed
    band = decode_band(engine, load_model(model))
    assert (band is not None) == calibrated
    if calibrated:
        low, high, _ = band
        assert sp.tokens_per_s_low == pytest.approx(sp.tokens_per_s * (1 + low))
        assert sp.tokens_per_s_high == pytest.approx(sp.tokens_per_s * (1 + high))
        assert sp.band.startswith(f"{engine} x {model_class(load_model(model))}: ")
    else:
        lo, hi = oh.SPEED_SPREAD["decode"]
        assert sp.band.startswith("uncalibrated: no bench measures")
        assert sp.tokens_per_s_high == pytest.approx(sp.tokens_per_s * (1 + 2 * hi))
        assert sp.tokens_per_s_low == pytest.approx(sp.tokens_per_s * (1 + 2 * lo))


def test_trtllm_offline_sentence_names_its_class():
    dense = estimate({"model": "llama-3.1-8b", "task": "infer", "engine": "trtllm", "gpu": "h100-sxm",
                      "batch_size": 8}, advise=False)
    moe = estimate({"model": "qwen3-30b-a3b", "task": "infer", "engine": "trtllm", "gpu": "h200",
                    "batch_size": 8}, advise=False)
    said = [a for a in dense.assumptions if a.startswith("TensorRT-LLM at maximum load")]
    assert said and "164 held-out rows" in said[0]
    said = [a for a in moe.assumptions if a.startswith("TensorRT-LLM at maximum load")]
    assert said and "up to 1.7x too fast" in said[0] and "median error 5%" not in said[0]
