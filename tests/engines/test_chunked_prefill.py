"""The chunked-prefill switch (scenario field ``chunked_prefill``): vLLM's profiling run and KV pool, the scheduler
the serving simulation runs, the launch files of vLLM and SGLang, and a refusal for engines without the switch."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import pytest
from typer.testing import CliRunner

from gpuplan import estimate
from gpuplan import overheads as oh
from gpuplan.cli import app as cli_app
from gpuplan.engines import engine_for, sglang, vllm
from gpuplan.errors import GpuplanError
from gpuplan.hardware import load_gpu
from gpuplan.launchers import launch_files, launch_plan
from gpuplan.model.catalog import load_model
from gpuplan.scenario import scenario_from
from gpuplan.serving.simulate import sglang_scheduler, vllm_scheduler

H100 = load_gpu("h100-sxm")
_DATA = Path(__file__).resolve().parents[1] / "data" / "vllm"
M = load_model("llama-3.1-8b")
# V0 (0.6.3) at 65,536 tokens of context: chunked prefill on by default (past 32,768), 8,000-token prompts
V0 = {"model": "llama-3.1-8b", "task": "infer", "engine": "vllm", "gpu": "h100-sxm", "prompt_tokens": 8000,
      "output_tokens": 200, "engine_version": "0.6.3", "max_model_len": 65_536, "batch_size": 64}


def test_v0_off_profiles_the_whole_context_and_shrinks_the_pool():
    """V0 with chunked prefill on profiles 512 tokens (before 0.6.5); off, ``max(max_model_len, 2048)`` = 65,536
    tokens, and the pool loses the difference of the two forward peaks (the fp32 logits of 256 rows in both)."""
    on = vllm.startup_memory(scenario_from(V0), M, H100)
    off = vllm.startup_memory(scenario_from({**V0, "chunked_prefill": False}), M, H100)
    assert (on.limits.chunked_prefill, on.limits.max_num_batched_tokens) == (True, 512)
    assert (off.limits.chunked_prefill, off.limits.max_num_batched_tokens) == (False, 65_536)
    grown = (vllm.forward_peak(M, 65_536, 1, oh.VLLM_V0_EARLY_FWD_HIDDEN_BYTES)
             - vllm.forward_peak(M, 512, 1, oh.VLLM_V0_EARLY_FWD_HIDDEN_BYTES))
    assert off.activation - on.activation == pytest.approx(grown)
    assert on.kv_pool - off.kv_pool == pytest.approx(grown)
    # asking for what the release does anyway changes nothing
    same = vllm.startup_memory(scenario_from({**V0, "chunked_prefill": True}), M, H100)
    assert (same.kv_tokens, same.limits) == (on.kv_tokens, on.limits)


def test_v0_on_below_32k_chunks_512_tokens():
    """V0 leaves chunked prefill off at 16,384 tokens of context; asked for it, it takes 512-token chunks."""
    s = scenario_from({**V0, "max_model_len": 16_384, "chunked_prefill": True})
    lim = vllm.scheduler_limits(s, M, H100)
    assert (lim.chunked_prefill, lim.max_num_batched_tokens) == (True, 512)
    assert vllm.scheduler_limits(scenario_from({**V0, "max_model_len": 16_384}), M, H100).chunked_prefill is False


def test_v0_never_chunks_an_mla_model_by_default():
    """DeepSeek-R1 (MLA, 163,840 tokens of context) under V0: chunked prefill stays off where Llama's turns on past
    32,768 tokens (vLLM PR #12642 forced it off in 0.7.1-0.7.3 whatever the flag; ``_set_default_args_v0`` after PR
    #12639: "Chunked prefill not supported for Multimodal or MLA in V0"), so a step takes a whole prompt,
    ``max(max_model_len, 2048)`` tokens; asked for, 0.7.4 chunks at 2,048 (0.6.5+), 0.7.3 still does not."""
    r1, h200 = load_model("deepseek-r1"), load_gpu("h200")
    base = {"model": "deepseek-r1", "task": "infer", "engine": "vllm", "gpu": "h200", "tp": 8, "num_gpus": 8,
            "prompt_tokens": 3200, "output_tokens": 800}
    assert r1.mla is not None and r1.scaled_context > 32_768
    for version in ("0.7.3", "0.7.4"):
        lim = vllm.scheduler_limits(scenario_from({**base, "engine_version": version}), r1, h200)
        assert (lim.chunked_prefill, lim.max_num_batched_tokens) == (False, r1.scaled_context)
    asked = {**base, "chunked_prefill": True}
    lim = vllm.scheduler_limits(scenario_from({**asked, "engine_version": "0.7.4"}), r1, h200)
    assert (lim.chunked_prefill, lim.max_num_batched_tokens) == (True, 2048)
    assert vllm.scheduler_limits(scenario_from({**asked, "engine_version": "0.7.3"}), r1, h200).chunked_prefill is False
    # a model without MLA at the same context still chunks by default (V0's long-context rule)
    llama = scenario_from({**V0, "max_model_len": 163_840, "engine_version": "0.7.4"})
    assert vllm.scheduler_limits(llama, M, H100).chunked_prefill is True


def test_v1_off_takes_the_whole_context_per_step():
    """V1 (0.33, `vllm serve` on an H100: 8,192 tokens a step) without chunked prefill: a step holds a whole
    prompt, ``max(max_model_len, 2048)`` = 32,768 tokens, and the forward of those tokens outgrows the sampler."""
    s = {**V0, "engine_version": "0.33.0", "max_model_len": 32_768}
    on = vllm.startup_memory(scenario_from(s), M, H100)
    off = vllm.startup_memory(scenario_from({**s, "chunked_prefill": False}), M, H100)
    assert on.limits.max_num_batched_tokens == 8192 and off.limits.max_num_batched_tokens == 32_768
    assert off.forward_peak == pytest.approx(vllm.forward_peak(M, 32_768, 1)) and off.kv_tokens < on.kv_tokens


def test_the_schedule_follows_the_switch():
    """The simulated scheduler takes the same switch and budget, and the simulated run changes with them: whole
    8,000-token prompts in steps of their own (V0's prefill-first ``_schedule_default``) instead of 512-token
    chunks beside the decodes."""
    on, off = (scenario_from({**V0, **extra}) for extra in ({}, {"chunked_prefill": False}))
    sched_on = vllm_scheduler(on, vllm.startup_memory(on, M, H100))
    sched_off = vllm_scheduler(off, vllm.startup_memory(off, M, H100))
    assert (sched_on.chunked_prefill, sched_on.max_num_batched_tokens, sched_on.mixed_prefill) == (True, 512, True)
    assert (sched_off.chunked_prefill, sched_off.max_num_batched_tokens, sched_off.mixed_prefill) == (
        False, 65_536, False)
    run_on = estimate(dict(V0), advise=False).offline
    run_off = estimate({**V0, "chunked_prefill": False}, advise=False).offline
    assert run_on.completed == run_off.completed == 64
    assert run_off.peak_running > run_on.peak_running  # whole prompts admit more requests at once
    assert run_off.median_ttft_ms < run_on.median_ttft_ms and run_off.mean_tpot_ms > run_on.mean_tpot_ms


def _argv(text: str) -> list[str]:
    lines = [line for line in text.splitlines() if line and not line.startswith(("#", "set "))]
    return shlex.split(" ".join(lines).replace("\\ ", " "))


@pytest.mark.parametrize("version,value,flags", [
    ("0.33.0", False, ["--disable-chunked-prefill"]),
    ("0.33.0", True, ["--enable-chunked-prefill"]),
    ("0.32.0", False, ["--no-enable-chunked-prefill"]),
    ("0.6.3", False, ["--enable-chunked-prefill", "False"]),
])
def test_the_vllm_launch_file_carries_the_switch(version, value, flags):
    s = {**V0, "engine_version": version, "max_model_len": 16_384, "batch_size": 8, "chunked_prefill": value}
    plan = launch_plan(s)
    argv = _argv({f.name: f.text for f in launch_files(plan, ["vllm"])}["vllm-serve.sh"])
    at = argv.index(flags[0])
    assert argv[at:at + len(flags)] == flags
    # the budget the estimate assumed goes with it: a whole 16,384-token prompt a step when it is off
    budget = int(argv[argv.index("--max-num-batched-tokens") + 1])
    assert budget == plan.result.memory.engine["max_num_batched_tokens"] == (16_384 if not value else budget)
    if version in ("0.32.0", "0.33.0"):  # the release's own parser has the option (tests/data/vllm)
        actions = json.loads((_DATA / f"serve-args-{version}.json").read_text())["actions"]
        assert flags[0] in {o for a in actions if a["dest"] == "enable_chunked_prefill" for o in a["options"]}


def test_the_vllm_launch_file_leaves_the_default_alone():
    argv = _argv({f.name: f.text for f in launch_files(launch_plan({**V0, "max_model_len": 16_384, "batch_size": 8}),
                                                       ["vllm"])}["vllm-serve.sh"])
    assert not any("chunked-prefill" in a for a in argv)


def test_sglang_off_writes_minus_one_and_prefills_whole_prompts():
    """SGLang's ``--chunked-prefill-size -1`` ("disabling chunked prefill", ``ServerArgs``): the launch file says
    it, and the simulated scheduler takes whole prompts, ``max_prefill_tokens`` (16,384) or a longer one alone."""
    s = {"model": "llama-3.1-8b", "task": "infer", "engine": "sglang", "gpu": "h100-sxm", "batch_size": 16,
         "prompt_tokens": 2000, "output_tokens": 200, "max_model_len": 32_768}
    text = {f.name: f.text for f in launch_files(launch_plan({**s, "chunked_prefill": False}), ["sglang"])}
    argv = _argv(text["sglang-serve.sh"])
    assert argv[argv.index("--chunked-prefill-size") + 1] == "-1"
    sm = sglang.startup_memory(scenario_from({**s, "chunked_prefill": False}), M, H100)
    sched = sglang_scheduler(sm)
    assert sm.chunked_prefill_size == -1 and sched.chunked_prefill is False
    assert sched.max_num_batched_tokens == max(sglang.MAX_PREFILL_TOKENS, 32_768) == 32_768
    assert sched.max_prefill_tokens == 16_384 and not sched.prefill_cap_takes_last  # the others: PrefillAdder's cap
    default = sglang.startup_memory(scenario_from(s), M, H100)
    assert default.chunked_prefill_size == 8192 and sglang_scheduler(default).chunked_prefill is True


@pytest.mark.parametrize("engine,value,words", [
    ("llama.cpp", False, "llama.cpp takes no chunked_prefill false: it always splits a prompt into --ubatch-size"),
    ("transformers", True, "transformers takes no chunked_prefill true: generate() prefills each prompt whole"),
    ("trtllm", True, "TensorRT-LLM takes no chunked_prefill true: gpuplan times it with chunked context off"),
])
def test_engines_without_the_switch_refuse_it_in_one_sentence(engine, value, words):
    s = {"model": "llama-3.1-8b", "task": "infer", "engine": engine, "gpu": "h100-sxm", "chunked_prefill": value}
    with pytest.raises(GpuplanError) as err:
        estimate(s, advise=False)
    text = str(err.value)
    assert text.startswith(words) and text.count(". ") == 0 and "\n" not in text


def test_trtllm_takes_its_own_default():
    plan = estimate({"model": "llama-3.1-8b", "task": "infer", "engine": "trtllm", "gpu": "h100-sxm",
                     "chunked_prefill": False}, advise=False)
    assert plan.memory.device_peak_gib > 0


def test_vllm_refuses_a_budget_below_the_context_without_chunking():
    """vLLM's ``SchedulerConfig._verify_args``: without chunked prefill a step must hold a whole prompt."""
    with pytest.raises(GpuplanError, match=r"max_num_batched_tokens \(8,192\) is below max_model_len \(16,384\)"):
        estimate({**V0, "max_model_len": 16_384, "max_num_batched_tokens": 8192, "chunked_prefill": False},
                 advise=False)


def test_the_cli_flag_reaches_the_estimate():
    args = ["estimate", "--model", "llama-3.1-8b", "--task", "infer", "--engine", "vllm", "--gpu", "h100-sxm",
            "--engine-version", "0.6.3", "--max-model-len", "65536", "--chunked-prefill", "false", "--json"]
    out = CliRunner().invoke(cli_app, args)
    assert out.exit_code == 0, out.output
    data = json.loads(out.output)
    assert data["scenario"]["chunked_prefill"] is False
    assert data["memory"]["engine"]["max_num_batched_tokens"] == 65_536
    bad = CliRunner().invoke(cli_app, [*args[:-3], "--chunked-prefill", "maybe"])
    assert bad.exit_code == 2 and "is not true or false" in bad.output


def test_mlx_says_it_always_steps_its_prefill():
    s = scenario_from({"model": "llama-3.1-8b", "task": "infer", "engine": "mlx", "gpu": "apple-m4-max",
                       "chunked_prefill": False})
    assert engine_for(s).chunked_prefill_refusal(s) == (
        "MLX (mlx-lm) takes no chunked_prefill false: it always prefills in steps of prefill_step_size (2,048 "
        "tokens); drop chunked_prefill, or serve with engine vllm or sglang")
