"""A serving setup under a load (gpuplan.serving.load): estimate --users / --rate and the batch queued at once, the
scheduler simulation capacity runs, reported as vllm bench serve names its fields, on the plan every face renders."""

import json
import re

import numpy as np
import pytest

pytest.importorskip("numpy")

from typer.testing import CliRunner

from gpuplan import estimate
from gpuplan.cli import app as cli_app
from gpuplan.errors import GpuplanError
from gpuplan.plan.resolve import resolve
from gpuplan.scenario import scenario_from
from gpuplan.serving.simulate import TokenGaps
from gpuplan.serving.steptime import step_model
from gpuplan.serving.workload import load_workload, spread_lengths

runner = CliRunner()
BASE = {"model": "llama-3.1-8b", "task": "infer", "engine": "vllm", "gpu": "h100-sxm"}


def model_of(fields):
    r = resolve(scenario_from(fields))
    return step_model(r.scenario, r.model, r.gpu)


def test_one_user_back_to_back_is_the_step_model_by_hand():
    """One user, fixed lengths: each request is one prefill step (its first token) and 100 decode steps of one
    sequence, plus the API server's 14.7 ms outside the engine in TTFT and E2E; the user's next request reaches the
    engine that 14.7 ms after the last token, so a cycle is TTFT + 100 TPOT."""
    fields = {**BASE, "users": 1, "length_spread": 0, "num_requests": 20, "prompt_tokens": 2000,
              "output_tokens": 101}
    run = estimate(fields, advise=False).load
    sm = model_of(fields)
    ttft = sm.time(2000, 0, 0, 2000 * 1000, 1, 1) + sm.request_s
    tpot = sm.time(0, 1, 2000 + 50)  # the decode run timed at its mid-point context
    assert sm.request_s == pytest.approx(0.0147)
    assert (run.mode, run.max_concurrency, run.num_prompts, run.completed) == ("closed loop", 1, 20, 20)
    assert run.median_ttft_ms == pytest.approx(1e3 * ttft, rel=1e-6)
    assert run.median_tpot_ms == pytest.approx(1e3 * tpot, rel=1e-3)
    assert run.mean_itl_ms == pytest.approx(1e3 * tpot, rel=1e-3)  # one sequence: every gap is a decode step
    assert run.median_e2el_ms == pytest.approx(1e3 * (ttft + 100 * tpot), rel=1e-3)
    assert run.request_throughput == pytest.approx(1 / (ttft + 100 * tpot), rel=2e-3)
    assert run.output_throughput == pytest.approx(101 * run.request_throughput, rel=1e-9)
    assert run.total_token_throughput == pytest.approx(2101 * run.request_throughput, rel=1e-9)
    assert (run.peak_running, run.preemptions) == (1, 0)


def test_offline_batch_runs_in_waves_of_the_engines_cap():
    """32 requests queued at once under max_num_seqs 8 (a pool far larger): four waves, each one prefill step of
    8 prompts (4,096 tokens, within the 8,192-token budget) then 63 decode steps of 8 sequences, back to back."""
    fields = {**BASE, "batch_size": 32, "max_num_seqs": 8, "prompt_tokens": 512, "output_tokens": 64}
    plan = estimate(fields, advise=False)
    run, sm = plan.offline, model_of(fields)
    wave = sm.time(4096, 0, 0, 8 * 512 * 256, 8, 8) + 63 * sm.time(0, 8, 8 * (512 + 32))
    assert (run.mode, run.num_prompts, run.completed, run.peak_running, run.running_cap) == ("offline", 32, 32, 8, 8)
    assert run.duration == pytest.approx(4 * wave, rel=0.01)
    assert run.output_throughput == pytest.approx(32 * 64 / (4 * wave), rel=0.01)
    # the waves wait: the last wave's first token comes after three whole waves
    assert run.p99_ttft_ms > 1e3 * 3 * wave
    # the steady-state speed assumes all 32 decode together: faster than the engine, capped at 8, is
    assert plan.speed.tokens_per_s > 1.5 * run.output_throughput


def test_offline_batch_the_pool_cannot_hold_preempts_and_is_slower_than_the_steady_state():
    """Llama-3.1-405B FP8 on 8 H100s, 256 prompts of 32,000 tokens (the issue's case): the pool holds 8 such
    requests, so the batch runs 8 at a time and the offline rate is well below the all-at-once figure."""
    fields = {"model": "llama-3.1-405b", "task": "infer", "engine": "vllm", "gpu": "h100-sxm", "num_gpus": 8,
              "quant": "fp8", "batch_size": 256, "prompt_tokens": 32000, "output_tokens": 1000}
    plan = estimate(fields, advise=False)
    run = plan.offline
    assert plan.memory.max_concurrency == 8 and plan.verdict.fits is False
    assert run.completed == 256 and 8 <= run.peak_running <= 9
    assert run.output_throughput < 0.7 * plan.speed.tokens_per_s
    assert run.duration > 256 / 9 * (1000 * plan.speed.step_time_s / 256 * 8)  # at least 29 waves of decode


def test_fixed_lengths_lock_a_closed_loop_step_and_the_default_spread_does_not():
    """New-user review 3, question 2: SGLang, Qwen3-30B-A3B on one H200, 200 users of 2,000 + 400 tokens, think 0.
    Fixed lengths send every request back together (each waits for a whole wave of prompts: median TTFT in
    seconds); drawn within +-50 % they spread out (median TTFT a few prefills)."""
    fields = {"model": "qwen3-30b-a3b", "task": "infer", "engine": "sglang", "gpu": "h200", "users": 200,
              "prompt_tokens": 2000, "output_tokens": 400}
    fixed = estimate({**fields, "length_spread": 0}, advise=False).load
    spread = estimate(fields, advise=False).load
    assert spread.lengths == "prompts 1,000-3,000 (uniform, mean 2,000) and outputs 200-600 (uniform, mean 400) tokens"
    assert fixed.lengths == "prompts 2,000 and outputs 400 tokens"
    assert fixed.median_ttft_ms > 1000 and spread.median_ttft_ms < 250
    assert fixed.median_ttft_ms > 10 * spread.median_ttft_ms
    # the same tokens in both: throughput within 20 % (the spread run prefills in more, smaller batches, each
    # waiting on SGLang's kernel launches from Python: 9.3 against 11.1 requests/s)
    assert spread.request_throughput == pytest.approx(fixed.request_throughput, rel=0.2)


def test_open_loop_at_a_low_rate_is_the_idle_engine():
    """At 0.5 requests/s of 1,000 + 100 tokens an H100 is idle between requests: it completes what arrives, and
    the median TTFT is one prompt's prefill step plus the API server's latency."""
    fields = {**BASE, "rate_rps": 0.5, "num_requests": 200, "prompt_tokens": 1000, "output_tokens": 100,
              "length_spread": 0}
    run = estimate(fields, advise=False).load
    sm = model_of(fields)
    assert (run.mode, run.request_rate, run.max_concurrency) == ("open loop", 0.5, None)
    assert run.request_throughput == pytest.approx(0.5, rel=0.15)
    assert run.median_ttft_ms == pytest.approx(1e3 * (sm.time(1000, 0, 0, 1000 * 500, 1, 1) + sm.request_s),
                                               rel=0.02)


def test_token_gaps_percentiles_within_a_bin_of_numpy():
    rng = np.random.default_rng(1)
    gaps = rng.lognormal(np.log(0.02), 0.8, 5000)
    t = TokenGaps(5000)
    t.started(np.arange(5000), 0.0)
    for i, g in enumerate(gaps):
        t.emitted(np.array([i]), float(g), 1, 0.0)
    assert t.tokens == 5000 and t.mean_s == pytest.approx(gaps.mean(), rel=1e-9)
    for q in (50, 90, 99):
        assert t.percentile(q) == pytest.approx(np.percentile(gaps, q), rel=0.01)
    # a run of k tokens dt apart counts k - 1 gaps of dt after the first
    run = TokenGaps(2)
    run.started(np.array([0, 1]), 0.0)
    run.emitted(np.array([0, 1]), 0.5, 10, 0.01)
    assert run.tokens == 20 and run.total_s == pytest.approx(2 * 0.5 + 18 * 0.01)
    assert run.percentile(50) == pytest.approx(0.01, rel=0.01) and run.percentile(99) == pytest.approx(0.5, rel=0.01)


def test_spread_lengths_are_vllms_random_dataset_bounds():
    d = spread_lengths(1000, 0.5)
    assert (d.kind, d.min, d.max, d.mean) == ("uniform", 500, 1500, 1000)
    assert spread_lengths(7, 0.9).min == 1  # floor(0.7) -> at least one token
    assert spread_lengths(300, 0).kind == "fixed"
    w = load_workload(None, {"prompt_tokens": 2000, "output_tokens": 400, "length_spread": 0.25})
    assert (w.prompt.min, w.prompt.max, w.output.min, w.output.max) == (1500, 2500, 300, 500)
    with pytest.raises(GpuplanError, match="length_spread draws the lengths given as prompt_tokens"):
        load_workload(None, {"preset": "chat", "length_spread": 0.5})


@pytest.mark.parametrize("fields, text", [
    ({"users": 4, "rate_rps": 1}, "give users (a closed loop) or rate_rps (an open loop), not both"),
    ({"users": 4, "engine": "llama.cpp"}, "simulated for vllm, sglang and trtllm, not llama.cpp"),
    # a llama.cpp user is told how to stay on it (session 24's walk: "serve to 3 friends" met only other engines)
    ({"users": 4, "engine": "llama.cpp"}, "to stay on llama.cpp, give batch_size N instead (N requests decoded "
     "together, as llama-server --parallel N"),
    ({"think_time_s": 3}, "give users (closed loop) or rate_rps (open loop) too"),
    ({"rate_rps": 2, "think_time_s": 3}, "a think time is the pause of closed-loop users between a reply and"),
    ({"users": 4, "task": "train"}, "describe a serving load: drop them for training"),
    ({"users": 4, "length_spread": 1.0}, "length_spread"),
])
def test_load_fields_refused_in_one_sentence(fields, text):
    with pytest.raises(GpuplanError, match=re.escape(text)):
        resolve(scenario_from({**BASE, **fields}))


LOAD_RULES = [  # (estimate's fields, capacity's flags, the one sentence both say)
    ({"users": 4, "rate_rps": 1}, ["--users", "4", "--rate", "1"],
     "give users (a closed loop) or rate_rps (an open loop), not both"),
    ({"rate_rps": 2, "think_time_s": 3}, ["--rate", "2", "--think-time", "3"],
     "a think time is the pause of closed-loop users between a reply and their next request: give users too, or "
     "drop it"),
    ({"users": 4, "engine": "trtllm", "prompt_tokens": 10_000}, ["--users", "4", "--engine", "trtllm"],
     "TensorRT-LLM schedules a prompt whole (chunked prefill is off in trtllm-serve) within max_num_tokens 8,192, and "
     "the workload's prompts run to 10,000 tokens: it would refuse them"),
]


@pytest.mark.parametrize("fields, flags, sentence", LOAD_RULES, ids=["two-loads", "think-rate", "trtllm-prompt"])
def test_estimate_capacity_and_the_page_say_one_sentence(fields, flags, sentence, capsys):
    """The load's rules live in one module (gpuplan.plan.refusals): estimate, capacity and the HTTP API refuse in
    the same sentence, exit 2 / 422. Before, capacity said its own words for the first two, and TensorRT-LLM's
    estimate --users only warned (after simulating requests never admitted) where capacity refused."""
    pytest.importorskip("fastapi")
    from fastapi.testclient import TestClient

    from gpuplan.cli import run
    from gpuplan.web.app import create_app

    said = []
    assert run(["estimate", "--model", "llama-3.1-8b", "--task", "infer", "--gpu", "h100-sxm",
                *[x for k, v in fields.items() for x in (f"--{k.replace('_', '-')}", str(v))]]) == 2
    said.append(capsys.readouterr().err)
    prompt = str(fields.get("prompt_tokens", 100))
    assert run(["capacity", "--model", "llama-3.1-8b", "--gpus", "h100-sxm", "--prompt-tokens", prompt,
                "--output-tokens", "10", "--length-spread", "0", *flags]) == 2
    said.append(capsys.readouterr().err)
    page = TestClient(create_app(), base_url="http://127.0.0.1").post("/api/estimate", json={**BASE, **fields})
    assert page.status_code == 422
    said.append(page.json()["detail"])
    for text in said:
        assert sentence in " ".join(text.split())


def test_an_open_loop_past_what_the_setup_serves_says_its_queue_grows_and_one_below_does_not():
    """Qwen3-30B-A3B on one H100 under vLLM, 2,000 + 300 tokens (walk s10): capacity serves 5.3 requests/s within
    TTFT 2 s; at 12 requests/s the run completed 5.61 requests/s, TTFT median 43 s and growing with the run's length,
    and nothing said so. The warning is capacity's queue test (serving.capacity.queue_grows) on the run."""
    fields = {"model": "qwen3-30b", "task": "infer", "engine": "vllm", "gpu": "h100-sxm", "prompt_tokens": 2000,
              "output_tokens": 300}
    over = estimate({**fields, "rate_rps": 12}, advise=False)
    assert over.load.request_throughput < 0.5 * 12
    said = [w for w in over.load.warnings if "queue grows" in w]
    assert len(said) == 1 and "12 requests/s" in said[0] and "gpuplan capacity --rate" in said[0]
    under = estimate({**fields, "rate_rps": 4}, advise=False)
    assert under.load.request_throughput == pytest.approx(4, rel=0.1)
    assert not any("queue grows" in w for w in under.load.warnings)


def test_a_rate_is_not_judged_as_one_concurrent_request_asked():
    """``--rate 4`` sets no number of requests at once: the verdict read 'holds the 1 concurrent request asked (up
    to 50)' over a run that kept 46 running. It says the pool's size and leaves the count to the run."""
    plan = estimate({**BASE, "rate_rps": 4, "prompt_tokens": 2000, "output_tokens": 300}, advise=False)
    sentence = plan.verdict.sentence
    assert "asked" not in sentence and f"holds up to {plan.memory.max_concurrency:,} concurrent requests" in sentence
    assert "the run at 4 requests/s" in sentence and plan.load.peak_running > 1
    users = estimate({**BASE, "users": 8}, advise=False).verdict.sentence
    assert "holds the 8 concurrent requests asked" in users


def test_users_set_the_batch_the_pool_is_judged_on():
    s = scenario_from({**BASE, "users": 48})
    assert s.batch_size == 48 and "batch_size" not in s.model_fields_set
    assert scenario_from({**BASE, "users": 48, "batch_size": 8}).batch_size == 8


def test_cli_table_and_json_are_the_plans_run():
    args = ["estimate", "--model", "llama-3.1-8b", "--task", "infer", "--engine", "sglang", "--gpu", "h100-sxm",
            "--rate", "2", "--prompt-tokens", "1000", "--output-tokens", "100", "--num-requests", "100"]
    plan = estimate({**BASE, "engine": "sglang", "rate_rps": 2, "prompt_tokens": 1000, "output_tokens": 100,
                     "num_requests": 100})
    data = json.loads(runner.invoke(cli_app, [*args, "--json"]).stdout)
    assert data["load"] == plan.load.model_dump(mode="json")
    assert {"median_ttft_ms", "p90_tpot_ms", "p99_itl_ms", "mean_e2el_ms", "request_throughput",
            "output_throughput", "total_token_throughput", "duration", "completed"} <= set(data["load"])
    assert data["scenario"]["rate_rps"] == 2 and "offline" not in data  # one request at a time: no batch
    table = runner.invoke(cli_app, args, env={"COLUMNS": "200"}).stdout
    assert "serving 2 requests/s (open loop, Poisson): SGLang's scheduler simulated over 100 requests" in \
        " ".join(table.split())
    ttft = next(line for line in table.splitlines() if line.strip().startswith("TTFT"))
    assert f"{plan.load.median_ttft_ms:,.1f}" in ttft and f"{plan.load.p99_ttft_ms:,.1f}" in ttft
    think = runner.invoke(cli_app, ["estimate", *args[1:9], "--users", "3", "--think-time", "2", "--json"])
    assert json.loads(think.stdout)["load"]["think_time_s"] == 2.0


def test_scenarios_without_a_load_do_not_show_its_fields():
    plan = estimate({**BASE, "batch_size": 4}, advise=False)
    data = plan.to_dict()
    assert "users" not in data["scenario"] and "length_spread" not in data["scenario"] and "load" not in data
    assert data["offline"]["num_prompts"] == 4
    assert "users" not in scenario_from(BASE).model_dump()
    assert scenario_from({**BASE, "users": 2}).model_dump()["length_spread"] == 0.5


def test_http_api_returns_the_plans_run():
    pytest.importorskip("fastapi")
    from fastapi.testclient import TestClient

    from gpuplan.web.app import create_app

    fields = {**BASE, "users": 6, "think_time_s": 1.5, "prompt_tokens": 800, "output_tokens": 120}
    client = TestClient(create_app(), base_url="http://127.0.0.1")
    body = client.post("/api/estimate", json=fields).json()
    assert body["load"] == estimate(fields).to_dict()["load"]
    assert body["load"]["mode"] == "closed loop" and body["load"]["max_concurrency"] == 6
    refused = client.post("/api/estimate", json={**fields, "rate_rps": 1})
    assert refused.status_code == 422 and "not both" in refused.text


@pytest.mark.parametrize("command", [["recommend", "--model", "llama-3.1-8b"], ["cost", "--model", "llama-3.1-8b"],
                                     ["fit", "--gpu", "2x3090"]], ids=["recommend", "cost", "fit"])
def test_the_searches_refuse_a_load_in_estimates_sentence(command, capsys):
    """recommend, cost and fit search many candidates and skip those that cannot run: a load that cannot be
    simulated as given is refused first, in estimate's sentence, not answered "nothing fits" (each candidate was
    refused, silently)."""
    from gpuplan.cli import run

    assert run([*command, "--task", "infer", "--users", "4", "--rate-rps", "2"]) == 2
    assert capsys.readouterr().err.strip() == "error: give users (a closed loop) or rate_rps (an open loop), not both"


def test_one_request_running_or_finished_is_said_in_the_singular(capsys):
    """Session 10's walk: `--rate 1e-300` (one arrival before the simulation's bound) read 'at most 1 requests
    running at once' and 'count only the 1 requests that finished'."""
    from gpuplan.cli import run

    code = run(["estimate", "--model", "llama-3.1-8b", "--task", "infer", "--engine", "vllm", "--gpu", "l40s",
                "--rate", "1e-300", "--num-requests", "20"])
    out = capsys.readouterr()
    text = " ".join((out.out + out.err).split())
    assert code == 0 and "at most 1 request running at once" in text
    assert "count only the 1 request that finished" in text
    code = run(["estimate", "--model", "llama-3.1-8b", "--task", "infer", "--engine", "vllm", "--gpu", "l40s",
                "--users", "4", "--num-requests", "1"])
    text = " ".join(capsys.readouterr().out.split())
    assert code == 0 and "scheduler simulated over 1 request," in text


def test_users_the_pool_cannot_hold_at_once_wait_their_turn_and_the_setup_is_priced():
    """Walk s16: Qwen3-32B for 50 RAG users (6,000 + 300 tokens, think 20 s) on 2 H100s at tp 2. capacity served
    all 50 within TTFT 2 s on this setup (vast 2x, $4.80/h); estimate --users 50 said 'does not fit' and priced
    nothing, because its pool (45 requests of 6,300 tokens) was judged against 50 at once, while its own run held at
    most 37 at once and preempted none. vLLM queues what its pool cannot hold; a given batch is still judged."""
    fields = {"model": "qwen3-32b", "task": "infer", "engine": "vllm", "gpu": "h100-sxm", "num_gpus": 2, "tp": 2,
              "users": 50, "think_time_s": 20, "prompt_tokens": 6000, "output_tokens": 300, "provider": "vast"}
    plan = estimate(fields, advise=False)
    assert plan.memory.max_concurrency == 45 and plan.verdict.fits
    assert "holds up to 45 concurrent requests, fewer than the 50 users" in plan.verdict.sentence
    assert plan.load.peak_running < 45 and plan.load.preemptions == 0
    assert plan.cost.usd_per_hour == pytest.approx(4.80)  # 2 x $2.40, capacity's row
    assert plan.cost.usd_per_million_tokens == pytest.approx(4.80 / (plan.load.served[0] * 3600) * 1e6)
    asked = estimate({**fields, "batch_size": 50}, advise=False)
    assert not asked.verdict.fits and "holds 45 of the 50 concurrent requests asked" in asked.verdict.sentence
    # its decode step runs the pool's 45 at once, the other 5 users waiting (the batch the speed says it timed)
    assert plan.speed.batch_held == 45 and asked.speed.batch_held is None
    assert "decode step of 45 sequence(s)" in " ".join(plan.assumptions)
    assert plan.speed.tokens_per_s < asked.speed.tokens_per_s  # (the 50 at once it cannot hold: 538)


def test_recommend_for_users_prices_a_setup_at_the_requests_its_pool_holds():
    """Walk s16: recommend --users 50 (Qwen3-32B, 6,000 + 300 tokens) ranks each setup at its decode step of the
    users at once; a 1x H100, whose KV pool holds 3 such requests, is timed at the 3 it can run, not at 50, so its
    row is the pool's tokens/s and its $/M that rate's (at 50 at once it read 298 tok/s and ranked first). Session 22:
    the row is priced on the simulated run of the 50 users, as estimate prices it (101 tok/s, where the decode step
    at the 3 the pool holds gave 91)."""
    from gpuplan import recommend

    fields = {"model": "qwen3-32b", "task": "infer", "engine": "vllm", "users": 50, "think_time_s": 20,
              "prompt_tokens": 6000, "output_tokens": 300}
    rows = recommend(fields, gpus=["h100-sxm"], max_gpus=1).setups
    row = next(r for r in rows if r.num_gpus == 1)
    plan = estimate({**fields, "gpu": "h100-sxm", "num_gpus": 1}, advise=False)
    fifty = estimate({**fields, "gpu": "h100-sxm", "num_gpus": 1, "batch_size": 50}, advise=False)
    assert plan.memory.max_concurrency == 3 and plan.speed.batch_held == 3
    assert row.tokens_per_s == pytest.approx(plan.priced_tokens_per_s, rel=1e-6)
    assert row.usd_per_million_tokens == pytest.approx(plan.cost.usd_per_million_tokens, rel=1e-6)
    assert row.tokens_per_s < 0.5 * fifty.speed.tokens_per_s


def test_a_load_without_an_engine_runs_vllm_as_capacity_does():
    """Walk s16: `estimate --users 8` without --engine refused ('set engine vllm, sglang or trtllm'), the
    scenario's engine being transformers' generate, which has no scheduler; capacity, asked the same load, runs vLLM.
    A load now takes vLLM when no engine is named, and says so; an engine given is kept (and refused where it has no
    scheduler)."""
    fields = {"model": "qwen3-8b", "task": "infer", "gpu": "l4", "users": 8, "prompt_tokens": 1000,
              "output_tokens": 200}
    plan = estimate(fields, advise=False)
    assert plan.setup.scenario.engine == "vllm" and plan.load is not None and plan.load.max_concurrency == 8
    assert any(d.startswith("engine vllm: users and rate_rps run a serving engine's scheduler") for d in plan.defaults)
    assert estimate({**fields, "engine": "vllm"}, advise=False).load.output_throughput == plan.load.output_throughput
    assert scenario_from({**fields, "users": None, "rate_rps": 2}).engine == "vllm"
    assert scenario_from({k: v for k, v in fields.items() if k != "users"}).engine == "transformers"
    with pytest.raises(GpuplanError, match="not transformers: set engine vllm, sglang or trtllm"):
        estimate({**fields, "engine": "transformers"})


@pytest.mark.parametrize("load", [{"users": 4}, {"rate_rps": 0.5}])
def test_a_pool_that_holds_no_request_says_none_can_run(load):
    """Walk s20: gpt-oss-20b under vLLM on an RTX 5080 (16 GB) leaves a KV pool of 0 tokens at the default 0.9. Under
    a load the verdict read 'holds up to 0 concurrent requests, fewer than the 4 users: the others wait their turn
    (the run of 4 users says how many were running at once)' (and 'the run at 0.5 requests/s'): no request runs,
    nobody waits a turn, and a plan that does not fit has no run."""
    plan = estimate({"model": "gpt-oss-20b", "task": "infer", "engine": "vllm", "gpu": "rtx-5080", **load},
                    advise=False)
    sentence = plan.verdict.sentence
    assert plan.memory.max_concurrency == 0 and not plan.verdict.fits and plan.load is None
    assert "cannot hold one request of 1,280 tokens, so no request can run" in sentence
    assert "wait their turn" not in sentence and "the run" not in sentence
