"""A serving plan under a load says what the plan says it serves there: ``launch`` of 64 users wrote "predicted:
4,080 tokens/s", the decode step of 64 requests at once, while ``estimate`` of the same scenario said 4,027 output
tokens/s served at 64 users (its simulated run through vLLM's scheduler, the figure the cost is priced on). The
launch plan is now built as ``estimate``'s is (:func:`gpuplan.plan.launch.runnable`, ``simulate``), and the header
and ``plan.json`` read its run (:meth:`gpuplan.launchers.plan.LaunchPlan.served`); nothing is computed in the files.

The values: Llama 3.1 8B on one H100 SXM5, vLLM, 64 users (closed loop, think 0 s), 1,024 + 256 tokens. The
independent check is ``gpuplan.estimate`` of the same scenario: the same run's figures, and the price per million
output tokens worked out by hand from its $/h and the run's output tokens/s."""

from __future__ import annotations

import json

import pytest

import gpuplan
from gpuplan.cli import run
from gpuplan.launchers import launch_plan

USERS = {"model": "llama-3.1-8b", "task": "infer", "engine": "vllm", "gpu": "h100-sxm", "users": 64}


@pytest.fixture(scope="module")
def both():
    return launch_plan(USERS), gpuplan.estimate(USERS)


def test_the_launch_plan_states_the_run_estimate_made(both):
    launch, plan = both
    p, load = launch.predictions(), plan.load
    assert p["served_at"] == "64 users"
    assert p["output_throughput"] == pytest.approx(4027.1, abs=0.5)
    assert p["output_throughput"] == pytest.approx(load.output_throughput, abs=0.05)
    assert p["request_throughput"] == pytest.approx(15.78, abs=0.01)
    assert p["request_throughput"] == pytest.approx(load.request_throughput, abs=5e-4)
    assert (p["median_ttft_ms"], p["p99_ttft_ms"]) == (round(load.median_ttft_ms, 1), round(load.p99_ttft_ms, 1))
    assert (p["median_tpot_ms"], p["p99_tpot_ms"]) == (round(load.median_tpot_ms, 1), round(load.p99_tpot_ms, 1))
    # priced on the run: $1.29/h / (its steady output tokens/s x 3,600 s) x 1e6
    assert p["usd_per_hour"] == 1.29
    # (the figures above are the whole run, as vllm bench serve saves them; the price reads its steady window,
    # after the warm-up and before the drain, as capacity does: session 24)
    assert p["usd_per_million_output_tokens"] == pytest.approx(1.29 / (load.served[0] * 3600) * 1e6, abs=1e-4)
    assert load.served[0] > load.output_throughput
    assert p["usd_per_million_output_tokens"] == pytest.approx(plan.cost.usd_per_million_tokens, abs=1e-4)
    assert p["tokens_per_s"] == pytest.approx(plan.speed.tokens_per_s, abs=0.05)  # the decode step, still said


def test_the_header_leads_with_what_64_users_are_served(both):
    launch, _ = both
    lines = launch.header()
    said = next(i for i, line in enumerate(lines) if line.startswith("predicted: "))
    assert lines[said] == ("predicted: 4,027 output tokens/s served at 64 users, 15.8 requests/s (the engine's "
                           "scheduler simulated), $1.29/h, $0.09 per million output tokens")
    # vLLM dense's band on NVIDIA, -10..+12 % since session 19 (bench/results/bands.md): 4,080 x 0.90 = 3,672,
    # 4,080 x 1.12 = 4,570
    assert lines[said + 1].endswith("decode step at 64 requests at once: 4,080 tokens/s (3,672-4,570)")


def test_a_plan_without_a_load_says_its_decode_step(tmp_path):
    """One request (no users, no rate): no run, and the header is the decode step's as before."""
    out = tmp_path / "o"
    assert run(["launch", "--model", "llama-3.1-8b", "--task", "infer", "--gpu", "h100-sxm", "--target", "vllm",
                "-o", str(out)]) == 0
    p = json.loads((out / "plan.json").read_text())["predicted"]
    assert "served_at" not in p and p["tokens_per_s"] == pytest.approx(155.1, abs=0.05)
    # 155.1 x 0.90 = 140, 155.1 x 1.12 = 174 (the band above)
    assert "# predicted: 155 tokens/s (140-174), $1.29/h\n" in (out / "vllm-serve.sh").read_text()


def test_a_batch_without_a_load_states_its_offline_run():
    """16 requests and no users: the plan's offline run of the batch queued at once through vLLM's scheduler (as
    ``estimate`` prints it), not priced on (the plan prices a batch at its decode step)."""
    scenario = {"model": "llama-3.1-8b", "task": "infer", "engine": "vllm", "gpu": "h100-sxm", "batch_size": 16}
    launch, plan = launch_plan(scenario), gpuplan.estimate(scenario)
    p, run = launch.predictions(), plan.offline
    assert p["served_at"] == "the batch of 16 queued at once"
    assert p["output_throughput"] == pytest.approx(1838.2, abs=0.5)
    assert p["output_throughput"] == pytest.approx(run.output_throughput, abs=0.05)
    assert (p["median_ttft_ms"], p["p99_tpot_ms"]) == (round(run.median_ttft_ms, 1), round(run.p99_tpot_ms, 1))
    assert "usd_per_million_output_tokens" not in p and p["tokens_per_s"] == pytest.approx(1850.4, abs=0.05)
    said = next(line for line in launch.header() if line.startswith("predicted: "))
    assert said == ("predicted: 1,838 output tokens/s served at the batch of 16 queued at once, 7.18 requests/s (the "
                    "engine's scheduler simulated), $1.29/h")
