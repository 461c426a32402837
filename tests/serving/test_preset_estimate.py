"""``estimate --preset``: a serving plan's requests drawn from capacity's named mixes (serving/workload.py PRESETS),
so that a row of ``capacity --preset chat`` can be run again by the command its note points to (s20 walk: a
startup's chat bot sized with ``capacity --preset chat`` got "No such option: --preset" from ``estimate --rate``,
whose uniform lengths around 230 and 203 tokens are another workload)."""

from __future__ import annotations

import pytest

import gpuplan
from gpuplan.cli import run
from gpuplan.errors import GpuplanError
from gpuplan.scenario import scenario_from
from gpuplan.serving.load import requests_of
from gpuplan.serving.workload import PRESETS, load_workload, preset_means

SERVE = {"model": "qwen3-14b", "task": "infer", "gpu": "a40", "engine": "vllm"}


def test_the_chat_preset_s_means_and_lengths_are_capacity_s():
    # ShareGPT as vLLM's benchmarks sample it: lognormal, clipped to 4..1,024 each; the clipped means 230 and 203
    assert preset_means("chat") == (230, 203) == tuple(round(x) for x in (
        load_workload(None, {"preset": "chat"}).mean_prompt_tokens,
        load_workload(None, {"preset": "chat"}).mean_output_tokens))
    assert preset_means("rag") == (4000, 300)
    plan = gpuplan.estimate({**SERVE, "preset": "chat"})
    assert (plan.scenario["prompt_tokens"], plan.scenario["output_tokens"]) == (230, 203)
    assert any(n.startswith("prompt_tokens 230 and output_tokens 203: the means of preset chat")
               for n in plan.defaults)
    s = scenario_from({**SERVE, "preset": "chat", "rate_rps": 2})
    _, prompt, output = requests_of(s, offline=False)
    assert (prompt, output) == PRESETS["chat"][:2] and prompt.kind == "lognormal"
    # the choices are capacity's presets, one list
    assert set(type(s).model_fields["preset"].annotation.__args__[0].__args__) == set(PRESETS)


def test_a_run_at_a_rate_draws_the_preset():
    plan = gpuplan.estimate({**SERVE, "preset": "chat", "rate_rps": 2, "num_requests": 200})
    assert plan.load is not None and plan.load.completed == 200
    assert plan.load.total_input_tokens / 200 == pytest.approx(230, rel=0.25)  # long-tailed: 200 draws


def test_lengths_beside_a_preset_are_refused(capsys):
    for given, named in (({"prompt_tokens": 1000}, "prompt_tokens"), ({"output_tokens": 50}, "output_tokens"),
                         ({"length_spread": 0.2}, "length_spread")):
        with pytest.raises(GpuplanError, match=f"preset chat says the requests' lengths .*drop {named}, or the "):
            gpuplan.estimate({**SERVE, "preset": "chat", **given})
    assert gpuplan.estimate({**SERVE, "preset": "chat", "prompt_tokens": 230}).scenario["prompt_tokens"] == 230
    assert run(["estimate", "--model", "qwen3-14b", "--task", "infer", "--gpu", "a40", "--preset", "chatt"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err and "preset" in err


def test_capacity_refuses_lengths_beside_a_preset_as_estimate_does(capsys):
    """The s20 walk: ``capacity --preset chat --prompt-tokens 500`` drew prompts around 500 tokens under the chat
    preset's name and outputs from the preset, where ``estimate`` refuses the pair; both refuse it in one sentence."""
    with pytest.raises(GpuplanError, match=r"preset chat says the requests' lengths \(230 prompt and 203 output"):
        load_workload(None, {"preset": "chat", "prompt_tokens": 500})
    assert run(["capacity", "--model", "qwen3-14b", "--gpus", "a40", "--preset", "chat", "--prompt-tokens", "500",
                "--ttft", "1"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "drop the prompt and output lengths, or the preset" in err
