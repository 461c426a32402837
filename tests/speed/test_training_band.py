"""A training estimate off NVIDIA says it is uncalibrated: every training row of bench/throughput.py and
bench/accuracy.py ran on an NVIDIA card, so an Intel Gaudi or AMD Instinct rate rests on a share of the datasheet
with no training run behind it, and its range is twice the held-out spread (overheads.SPEED_SPREAD_WIDENING)."""
from __future__ import annotations

import pytest

from gpuplan import overheads as oh
from gpuplan.hardware import load_gpu
from gpuplan.model.catalog import load_model
from gpuplan.scenario import scenario_from
from gpuplan.speed import speed_of

LORA = {"model": "qwen2.5-7b", "task": "train", "method": "lora", "seq_len": 2048, "micro_batch_size": 4,
        "grad_accum_steps": 4}


@pytest.mark.parametrize("gpu_id, vendor", [("intel-gaudi3", "Intel"), ("amd-mi300x", "AMD")])
def test_training_off_nvidia_is_uncalibrated_and_twice_as_wide(gpu_id, vendor):
    m = load_model("qwen2.5-7b")
    sp = speed_of(scenario_from(LORA), m, load_gpu(gpu_id))
    assert sp.band is not None and sp.band.startswith(f"uncalibrated: no bench measures training on {vendor} cards")
    low, high = oh.SPEED_SPREAD["train"]
    assert sp.tokens_per_s_low == pytest.approx(sp.tokens_per_s * (1 + 2 * low))
    assert sp.tokens_per_s_high == pytest.approx(sp.tokens_per_s * (1 + 2 * high))


def test_training_on_nvidia_keeps_the_measured_spread():
    sp = speed_of(scenario_from(LORA), load_model("qwen2.5-7b"), load_gpu("nvidia-h100-sxm5-80gb"))
    low, high = oh.SPEED_SPREAD["train"]
    assert sp.band is None
    assert (sp.tokens_per_s_low, sp.tokens_per_s_high) == pytest.approx((sp.tokens_per_s * (1 + low),
                                                                         sp.tokens_per_s * (1 + high)))
