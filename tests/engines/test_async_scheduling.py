"""vLLM's async-scheduling switch (scenario field ``async_scheduling``): the release's default, the step it hides the
host behind (never shorter than the GPU's work), the refusals, the CLI, and the flag in the launch file."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import pytest
from typer.testing import CliRunner

from gpuplan import estimate
from gpuplan.cli import app as cli_app
from gpuplan.engines import engine_for, vllm
from gpuplan.errors import GpuplanError
from gpuplan.hardware import load_gpu
from gpuplan.launchers import launch_files, launch_plan
from gpuplan.model.catalog import load_model
from gpuplan.scenario import scenario_from
from gpuplan.serving.steptime import step_model
from gpuplan.speed.inference import step_timer

H100 = load_gpu("h100-sxm")
M = load_model("qwen2.5-0.5b")
_DATA = Path(__file__).resolve().parents[1] / "data" / "vllm"
BASE = {"model": "qwen2.5-0.5b", "task": "infer", "engine": "vllm", "gpu": "h100-sxm", "prompt_tokens": 500,
        "output_tokens": 100, "max_model_len": 4096}


def _s(**extra):
    return scenario_from({**BASE, **extra})


@pytest.mark.parametrize("version,value,pp,on", [
    ("0.12.0", None, 1, False),  # opt-in before 0.14
    ("0.14.0", None, 1, True),  # the default from 0.14.0 (vLLM PR #27614)
    ("0.19.0", None, 2, False),  # but not with pipeline parallelism
    ("0.12.0", True, 1, True),  # --async-scheduling on a release where it is opt-in
    ("0.19.0", False, 1, False),  # --no-async-scheduling
    ("0.9.2", False, 1, False),  # no switch yet: off is its one state
])
def test_the_release_default_and_the_switch(version, value, pp, on):
    s = _s(engine_version=version, async_scheduling=value, pp=pp, num_gpus=pp)
    assert vllm.async_scheduling(s) is on
    assert step_model(s, M, H100).async_host is on


def test_the_overlap_hides_host_time_only_up_to_the_gpu_step():
    """A decode step under async scheduling is ``max(GPU, host)`` (``EngineCore.step_with_batch_queue`` schedules
    step N+1 while the GPU runs step N): Qwen2.5-0.5B at 16 sequences is GPU-bound, the whole host term hides; at
    3,000 the host's 0.765 ms + 19.9 us per sequence (60.5 ms, by hand) outlasts the GPU and is the step. The GPU's
    own work is the same either way."""
    sync, on = (step_timer(_s(engine_version="0.12.0", async_scheduling=v), M, H100) for v in (False, True))
    for batch in (16, 3000):
        a, b = sync.decode_parts(batch, 600), on.decode_parts(batch, 600)
        gpu = sum(v for k, v in a.items() if k != "host")
        assert gpu == pytest.approx(sum(v for k, v in b.items() if k != "host"), rel=1e-12)
        host = a["host"]
        assert sum(b.values()) == pytest.approx(max(gpu, host), rel=1e-9)
    assert host == pytest.approx(0.765e-3 + 19.9e-6 * 3000, rel=1e-9)
    assert sum(on.decode_parts(16, 600).values()) < sum(sync.decode_parts(16, 600).values())


def test_the_load_run_gets_faster_steps_with_it():
    """The estimate at 64 users on vLLM 0.12: with --async-scheduling each decode step loses its host time, so the
    median TPOT drops and the requests per second rise; the same run with it left to 0.12's default is unchanged
    from an explicit false."""
    run = {**BASE, "engine_version": "0.12.0", "users": 64, "num_requests": 192}
    off, default, on = (estimate({**run, **extra}, advise=False).load
                        for extra in ({"async_scheduling": False}, {}, {"async_scheduling": True}))
    assert default.median_tpot_ms == off.median_tpot_ms
    assert on.median_tpot_ms < off.median_tpot_ms and on.request_throughput > off.request_throughput


@pytest.mark.parametrize("extra,words", [
    ({"engine_version": "0.9.2", "async_scheduling": True}, "vLLM 0.9.2 has no --async-scheduling (it came in "
                                                              "0.10.0)"),
    ({"pp": 2, "num_gpus": 2, "async_scheduling": True}, "gpuplan times vLLM's pipeline-parallel engine loop "
                                                        "synchronously"),
    ({"engine": "sglang", "async_scheduling": False}, "SGLang takes no async_scheduling: it is vLLM's"),
])
def test_what_cannot_take_it_is_refused_in_one_sentence(extra, words):
    with pytest.raises(GpuplanError) as err:
        estimate({**BASE, **extra}, advise=False)
    text = str(err.value)
    assert text.startswith(words) and "\n" not in text and text.count(". ") == 0
    s = _s(**extra)
    assert engine_for(s).async_scheduling_refusal(s) == text


def _argv(text: str) -> list[str]:
    lines = [line for line in text.splitlines() if line and not line.startswith(("#", "set "))]
    return shlex.split(" ".join(lines).replace("\\ ", " "))


@pytest.mark.parametrize("version,value,flag", [
    ("0.33.0", True, "--async-scheduling"),
    ("0.32.0", False, "--no-async-scheduling"),
    ("0.12.0", True, "--async-scheduling"),
    ("0.9.2", False, None),  # the release has no flag: nothing to turn off
    ("0.33.0", None, None),  # the release's default: left to vLLM
])
def test_the_vllm_launch_file_carries_the_switch(version, value, flag):
    s = {**BASE, "engine_version": version, "batch_size": 8, **({} if value is None else {"async_scheduling": value})}
    argv = _argv({f.name: f.text for f in launch_files(launch_plan(s), ["vllm"])}["vllm-serve.sh"])
    assert argv[:3] == ["vllm", "serve", "Qwen/Qwen2.5-0.5B"]
    written = [a for a in argv if "async-scheduling" in a]
    assert written == ([flag] if flag else [])
    if flag and version in ("0.32.0", "0.33.0"):  # the release's own parser has the option (tests/data/vllm)
        actions = json.loads((_DATA / f"serve-args-{version}.json").read_text())["actions"]
        assert flag in {o for a in actions if a["dest"] == "async_scheduling" for o in a["options"]}


def test_the_cli_flag_reaches_the_estimate():
    args = ["estimate", "--model", "qwen2.5-0.5b", "--task", "infer", "--engine", "vllm", "--gpu", "h100-sxm",
            "--engine-version", "0.12.0", "--async-scheduling", "true", "--json"]
    out = CliRunner().invoke(cli_app, args)
    assert out.exit_code == 0, out.output
    assert json.loads(out.output)["scenario"]["async_scheduling"] is True
    bad = CliRunner().invoke(cli_app, [*args[:-3], "--async-scheduling", "maybe"])
    assert bad.exit_code == 2 and "is not true or false" in bad.output
