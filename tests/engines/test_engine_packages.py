"""What ``pip install`` a serving plan's launch files write is its engine profile's answer
(:meth:`gpuplan.engines.base.Engine.packages`), not a branch on the engine's name in the launchers."""

from __future__ import annotations

from gpuplan.engines import ENGINES
from gpuplan.scenario import scenario_from


def _serving(engine: str, **fields):
    return scenario_from(dict(model="llama-3.2-1b", task="infer", engine=engine, **fields))


def test_vllm_pins_the_release_its_memory_rules_follow():
    assert ENGINES["vllm"].packages(_serving("vllm"), "0.33.0") == ["vllm==0.33.0"]


def test_sglang_pins_the_release_asked_else_the_rules_it_follows():
    assert ENGINES["sglang"].packages(_serving("sglang"), None) == ["sglang>=0.5"]
    pinned = _serving("sglang", engine_version="0.4.3.post2")
    assert ENGINES["sglang"].packages(pinned, None) == ["sglang==0.4.3.post2"]


def test_the_engines_without_a_pip_line_give_none():
    assert ENGINES["llama.cpp"].packages(_serving("llama.cpp"), None) == []
    assert ENGINES["trtllm"].packages(_serving("trtllm"), None) == []
