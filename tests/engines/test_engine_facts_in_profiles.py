"""Engine facts live in each engine's profile (issue 30, "one profile per idea"): the serving simulation asks the
profile for its scheduler's settings and the step model asks it how its low-precision GEMMs are timed, so no module
of ``gpuplan/serving`` branches on an engine's name."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

pytest.importorskip("numpy")

from gpuplan.engines import ENGINES, SIMULATED
from gpuplan.engines.base import Engine
from gpuplan.hardware import load_gpu
from gpuplan.model.catalog import load_model
from gpuplan.plan.estimate import estimate
from gpuplan.serving.simulate import Scheduler, scheduler_for, sglang_scheduler

SERVING = Path(__file__).resolve().parents[2] / "src" / "gpuplan" / "serving"
BRANCH = re.compile(r"""engine\s*(==|!=|\bin\b|\bnot in\b)\s*[("'{]""")


def test_the_simulated_engines_are_those_whose_profile_gives_a_scheduler():
    own = [name for name in ENGINES if type(ENGINES[name]).scheduler_settings is not Engine.scheduler_settings]
    assert own == list(SIMULATED) == ["vllm", "sglang", "trtllm"]
    assert [n for n in ENGINES if ENGINES[n].gemm_share_by_rows] == ["trtllm"]


@pytest.mark.parametrize("engine", SIMULATED)
def test_a_plans_scheduler_is_its_profiles(engine):
    """scheduler_for builds the scheduler from the profile's settings over the plan's own pool; a request longer than
    the pool holds gets none."""
    plan = estimate({"model": "llama-3.1-8b", "task": "infer", "engine": engine, "gpu": "h100-sxm",
                     "prompt_tokens": 1000, "output_tokens": 100}, advise=False)
    s = plan.setup.scenario
    sched = scheduler_for(s, plan.startup, plan.pool, 1100)
    assert isinstance(sched, Scheduler) and sched.kv_blocks > 0
    assert sched == Scheduler(**ENGINES[engine].scheduler_settings(s, plan.startup, plan.pool, 1100))
    if engine == "sglang":
        assert sched == sglang_scheduler(plan.startup) and sched.block_tokens == 1
    if engine == "trtllm":
        assert sched.reserve_to_completion and not sched.prefix_cache and not sched.chunked_prefill
    if engine != "vllm":  # (vLLM's pool is judged by its max_model_len, which it would not start without)
        assert scheduler_for(s, plan.startup, plan.pool, 10**9) is None
    assert ENGINES["transformers"].scheduler_settings(s, plan.startup, plan.pool, 1100) is None


def test_no_serving_module_branches_on_an_engines_name():
    found = [f"{p.name}:{i}" for p in sorted(SERVING.glob("*.py"))
             for i, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1) if BRANCH.search(line)]
    assert len(list(SERVING.glob("*.py"))) >= 6
    assert found == []


def test_the_profile_decides_whether_fp8_gemms_are_timed_by_their_rows(monkeypatch):
    """TensorRT-LLM's profile times its fp8 GEMMs at the share of the peak NVIDIA's runs show for their rows
    (gemm_share_by_rows): the step model reads the profile, so turning it off times them as vLLM's kernels."""
    from gpuplan.scenario import scenario_from
    from gpuplan.serving.steptime import step_model

    m, gpu = load_model("llama-3.1-8b"), load_gpu("h100-sxm")
    s = scenario_from({"model": "llama-3.1-8b", "task": "infer", "gpu": "h100-sxm", "quant": "fp8",
                       "engine": "trtllm"})
    by_rows = step_model(s, m, gpu)
    monkeypatch.setattr(ENGINES["trtllm"], "gemm_share_by_rows", False)
    flat = step_model(s, m, gpu)
    assert len(by_rows.dense_s) == len(flat.dense_s) > 3
    assert all(a >= b for a, b in zip(by_rows.dense_s, flat.dense_s, strict=True)) and by_rows.dense_s != flat.dense_s
