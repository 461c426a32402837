"""SGLang's ``--scheduler-recv-interval`` as the scenario's ``scheduler_recv_interval`` (engines/sglang.py
scheduler_settings, launchers/sglang.py): a busy scheduler takes in new requests every N decode steps, so they wait
for their prompt step. InferenceX's DeepSeek-R1 scripts set 30 from 16 requests at TP 8 (dsr1_fp8_b200.sh), beside
SGL_ENABLE_JIT_DEEPGEMM=false; issue 31's "TTFT -83 %" row typed neither."""

from __future__ import annotations

import pytest

from gpuplan import estimate
from gpuplan.launchers import launch_files, launch_plan
from gpuplan.scenario import scenario_from

R1 = {"model": "deepseek-r1", "task": "infer", "engine": "sglang", "gpu": "b200", "num_gpus": 8, "tp": 8,
      "users": 32, "prompt_tokens": 1024, "output_tokens": 1024, "length_spread": 0.2}


def test_said_only_when_set_and_written_into_the_launch_file():
    assert "scheduler_recv_interval" not in scenario_from(R1).model_dump()
    plain = {f.name: f for f in launch_files(launch_plan(R1), ["sglang"])}["sglang-serve.sh"].text
    assert "--scheduler-recv-interval" not in plain
    text = {f.name: f for f in launch_files(launch_plan({**R1, "scheduler_recv_interval": 30}),
                                            ["sglang"])}["sglang-serve.sh"].text
    assert "--scheduler-recv-interval 30 " in text


def test_requests_wait_for_the_poll():
    """32 closed-loop users on 8 B200s, DeepSeek-R1 1k/1k: a request that finishes is replaced at once, but the new one
    is read only at the next poll, up to 30 decode steps of ~16 ms later. The mean TTFT rises from 120 ms to
    311 ms (InferenceX PR #3363 publishes 471 ms mean for this launch; its DeepGEMM switch adds ~30 ms more,
    tests/speed/test_deepgemm.py); the decode step is the same work."""
    own = estimate(R1, advise=False)
    polled = estimate({**R1, "scheduler_recv_interval": 30}, advise=False)
    assert own.load.mean_ttft_ms == pytest.approx(120.0, abs=1.0)
    assert polled.load.mean_ttft_ms == pytest.approx(311.4, abs=1.0)
    assert polled.speed.step_time_s == own.speed.step_time_s


def test_another_engine_is_warned():
    warned = estimate({**R1, "engine": "vllm", "scheduler_recv_interval": 30}, advise=False).warnings
    assert any("scheduler_recv_interval is sglang's setting" in w for w in warned)
