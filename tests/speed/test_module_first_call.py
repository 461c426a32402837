"""The first call of a diffusers pipeline just loaded (issue 34, session 8): a warm call and the one-time setup the
sources measured (``overheads.FIRST_CALL_SETUP_S``: siliconflow/onediff's plain-diffusers baselines, the first call
after ``from_pretrained(...).to("cuda")`` less a warm one), given beside the warm call in every face that shows a
generation plan; training and encoder plans have none."""

from __future__ import annotations

import json
import statistics

import pytest

import gpuplan
from gpuplan import overheads as oh
from gpuplan.cli import run
from gpuplan.explain.module_speed import explain_module

# (first call, warm call) in seconds as onediff's READMEs print them: PixArt-alpha on an RTX 4090, an A100-PCIE-40GB
# and an H800 (examples/pixart/README.md), SD3-medium on an H800 and an RTX 4090 (examples/sd3/README.md)
ONEDIFF = [(3.314, 2.881), (4.100, 2.568), (1.741, 1.102), (2.86, 2.03), (4.99, 4.90)]


def test_the_setup_is_the_median_and_range_of_the_measured_first_calls():
    setups = [first - warm for first, warm in ONEDIFF]
    assert len(setups) == 5
    median, low, high = statistics.median(setups), min(setups), max(setups)  # 0.639, 0.09, 1.532 s
    assert abs(oh.FIRST_CALL_SETUP_S - median) < 0.005
    assert abs(oh.FIRST_CALL_SETUP_RANGE[0] - low) < 0.005 and abs(oh.FIRST_CALL_SETUP_RANGE[1] - high) < 0.005


def test_a_generation_plan_gives_its_first_call_as_a_warm_call_and_the_setup():
    p = gpuplan.estimate({"model": "sd-1.5", "task": "infer", "gpu": "t4", "inference_steps": 50})
    w = p.work
    assert w.kind == "diffusion generation" and 5 < w.image_s < 9
    assert w.first_call_s == pytest.approx(w.image_s + 0.64)
    low, high = w.first_call_range_s
    assert (low, high) == pytest.approx((w.image_s + 0.09, w.image_s + 1.53))
    assert low < w.first_call_s < high
    # the warm numbers are untouched: images per hour are the warm call's
    assert w.images_per_hour == pytest.approx(3600 / w.image_s)


@pytest.mark.parametrize("scenario", [
    {"model": "sdxl", "task": "train", "method": "lora", "resolution": "1024", "gpu": "rtx-3090"},
    {"model": "whisper-large-v3", "task": "infer", "gpu": "a100-sxm4-80gb", "audio_seconds": 60},
])
def test_plans_that_are_not_a_pipeline_call_have_no_first_call(scenario):
    w = gpuplan.estimate(scenario).work
    assert w.first_call_s is None and w.first_call_range_s is None


def test_the_first_call_is_printed_put_in_json_and_explained(capsys):
    args = ["estimate", "--model", "sd-1.5", "--task", "infer", "--gpu", "t4", "--inference-steps", "50"]
    assert run(args) == 0
    text = " ".join(capsys.readouterr().out.split())
    assert "first call after loading the pipeline: about 7.6 s (likely 7.0-8.5 s)" in text
    assert run([*args, "--json"]) == 0
    work = json.loads(capsys.readouterr().out)["work"]
    assert work["first_call_s"] == pytest.approx(work["image_s"] + 0.64)
    p = gpuplan.estimate({"model": "sd-1.5", "task": "infer", "gpu": "t4", "inference_steps": 50})
    f = explain_module(p).numbers["work.first_call_s"]
    assert f.value == pytest.approx(p.work.first_call_s) and f.computed == pytest.approx(f.value)
    assert "0.64 s" in f.substituted and "FIRST_CALL_SETUP_S" in f.constants[0].source
