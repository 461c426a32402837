"""A Mac named as people name it, the machine before its chip (the session-31 walk: ``--gpu "MacBook M4 Max"`` was
refused with "did you mean 'apple-m4-max'"): the chip is what the catalog names, and the machine's words never
pick a larger chip than the one written (an iMac M4 is the M4, not the M4 Max)."""

import pytest

from gpuplan.errors import GpuplanError
from gpuplan.hardware import load_gpu
from gpuplan.scenario import scenario_from


@pytest.mark.parametrize("typed, chip", [
    ("MacBook M4 Max", "apple-m4-max"), ("MacBook Pro M4 Max", "apple-m4-max"), ("MacBook Pro M4 Pro", "apple-m4-pro"),
    ("Mac Studio M3 Ultra", "apple-m3-ultra"), ("Mac mini M4 Pro", "apple-m4-pro"), ("iMac M4", "apple-m4"),
    ("MacBook Air M4", "apple-m4"), ("Mac Pro M2 Ultra", "apple-m2-ultra"),
    ("Mac Studio M2 Ultra 192GB", "apple-m2-ultra"),
])
def test_a_mac_is_its_chip(typed, chip):
    assert load_gpu(typed).id == chip
    s = scenario_from({"model": "qwen3-8b", "task": "infer", "engine": "llama.cpp", "gpu": f"2x {typed}"})
    assert (s.gpu, s.num_gpus) == (typed, 2)


def test_a_mac_without_a_chip_is_no_card():
    with pytest.raises(GpuplanError, match="unknown GPU 'Mac Studio'"):
        load_gpu("Mac Studio")
