"""A plan with a load run (``--users`` or ``--rate``) is priced at the tokens that run served per second
(gpuplan.plan.build.priced_on_load), and every face shows that price: the CLI table and ``--json``, the Python API
and the page's ``/api/estimate``. Before (walk s10), ``estimate --rate 4`` of Llama-3.1-8B on an H100 under vLLM
quoted $2.32 per million output tokens from its decode step at batch 1 (155 tokens/s) while its own run served
759 tokens/s ($0.47)."""

import json

import pytest

pytest.importorskip("numpy")

from typer.testing import CliRunner

from gpuplan import estimate
from gpuplan.cli import app as cli_app

runner = CliRunner()
RATE = {"model": "llama-3.1-8b", "task": "infer", "engine": "vllm", "gpu": "h100-sxm", "rate_rps": 4,
        "prompt_tokens": 1000, "output_tokens": 200}


def test_a_rate_is_priced_at_the_tokens_its_run_served_by_hand():
    """At 4 requests/s of 200 output tokens on average, an engine that keeps up serves 4 x 200 = 800 output
    tokens/s (within a few percent over a finite run of Poisson arrivals that starts idle and drains).
    The instance's $/h over an hour of those tokens is the price: $/h / (tokens/s x 3,600) x 1e6."""
    plan = estimate(RATE, advise=False)
    run, cost = plan.load, plan.cost
    served = run.steady_output_throughput  # what the run served per second after its warm-up, before its drain
    assert plan.priced_tokens_per_s == pytest.approx(served) == pytest.approx(run.served[0])
    assert served == pytest.approx(4 * 200, rel=0.1)  # Poisson arrivals of 1,000 requests: +-3% on the rate
    # the whole run (vllm bench serve's output_throughput) counts its ramp and drain too: near it at a light load
    assert run.output_throughput == pytest.approx(served, rel=0.05)
    assert cost.usd_per_million_tokens == pytest.approx(cost.usd_per_hour / (served * 3600) * 1e6)
    # an hour at $1.29 (hyperbolic's H100, bundled catalog) over 800 tokens/s x 3,600 s = 2.88 M tokens: $0.448/M
    hand = cost.usd_per_hour / (4 * 200 * 3600) * 1e6
    assert cost.usd_per_million_tokens == pytest.approx(hand, rel=0.15)
    # the decode step at batch 1 (what it was priced at before) serves a fifth of that, at five times the price
    step = plan.speed.tokens_per_s
    assert step < served / 3
    assert plan.priced[0].cost.usd_per_million_tokens == pytest.approx(cost.usd_per_hour / (step * 3600) * 1e6)
    said = [a for a in plan.assumptions if a.startswith("cost: priced at the")]
    assert len(said) == 1 and f"{served:,.0f} output tokens/s the simulated run at 4 requests/s served" in said[0]
    assert f"${cost.usd_per_million_tokens:,.2f} per million output tokens" in said[0]


def test_users_are_priced_at_their_runs_tokens():
    """A closed loop of 16 users: the price reads the run's output tokens/s, not the decode step at 16."""
    plan = estimate({**RATE, "rate_rps": None, "users": 16, "num_requests": 160}, advise=False)
    run = plan.load
    served = run.steady_request_throughput * run.total_output_tokens / run.completed  # the steady window's
    assert plan.priced_tokens_per_s == pytest.approx(served)
    assert plan.cost.usd_per_million_tokens == pytest.approx(plan.cost.usd_per_hour / (served * 3600) * 1e6)
    assert any("the simulated run at 16 users served (steady" in a for a in plan.assumptions)


def test_estimate_users_and_capacity_price_one_setup_at_one_load_alike():
    """Session 24's walk: Qwen3-30B-A3B on one H100 for 50 chat users. capacity said 11.14 requests/s and $0.158
    per million output tokens, estimate --users 50 9.82 requests/s and $0.20: estimate priced its whole run, whose
    last requests decode in a thinning batch (its drain), and capacity the preset's mean reply (203 tokens) over a
    rate its shorter drawn replies (192) allowed. Both now read the steady window and the run's own tokens.
    Hand check (Little's law): 50 users / (0.08 s to first token + 23.3 ms x 202 more tokens) = 10.4 requests/s x
    203 tokens = 2,118 output tokens/s."""
    from gpuplan import capacity

    s = {"model": "qwen3-30b-a3b", "task": "infer", "engine": "vllm", "gpu": "h100-sxm", "users": 50,
         "preset": "chat"}
    plan = estimate(s, advise=False)
    assert plan.priced_tokens_per_s == pytest.approx(2118, rel=0.05)
    assert plan.load.steady_request_throughput > 1.1 * plan.load.request_throughput  # the drain left out
    rows = capacity("qwen3-30b-a3b", users=50, preset="chat", ttft_s=1.0, gpus=["h100-sxm"], top=1).deployments
    row = next(r for r in rows if r.num_gpus == 1)
    assert row.max_users == 50 and plan.cost.offer.startswith(row.offer.split(" ")[0])
    assert row.usd_per_million_output == pytest.approx(plan.cost.usd_per_million_tokens, rel=0.04)
    assert row.max_rate_rps == pytest.approx(plan.load.steady_request_throughput, rel=0.04)


def test_a_plan_without_a_load_keeps_its_speeds_price_and_says_nothing_of_it():
    plan = estimate({**RATE, "rate_rps": None, "batch_size": 8}, advise=False)
    assert plan.load is None and plan.priced_tokens_per_s is None
    assert "priced_tokens_per_s" not in plan.to_dict()
    assert plan.cost.usd_per_million_tokens == pytest.approx(
        plan.cost.usd_per_hour / (plan.speed.tokens_per_s * 3600) * 1e6)
    assert not any(a.startswith("cost: priced at the") for a in plan.assumptions)


def test_cli_table_json_api_and_page_show_the_served_price():
    pytest.importorskip("fastapi")
    from fastapi.testclient import TestClient

    from gpuplan.web.app import create_app

    args = ["estimate", "--model", "llama-3.1-8b", "--task", "infer", "--engine", "vllm", "--gpu", "h100-sxm",
            "--rate", "4", "--prompt-tokens", "1000", "--output-tokens", "200"]
    api = estimate(RATE).to_dict()
    cli = json.loads(runner.invoke(cli_app, [*args, "--json"]).stdout)
    page = TestClient(create_app(), base_url="http://127.0.0.1").post("/api/estimate", json=RATE).json()
    for face in (cli, page):
        assert face["cost"] == api["cost"] and face["priced_tokens_per_s"] == api["priced_tokens_per_s"]
        assert face["load"]["output_throughput"] == api["load"]["output_throughput"]
    served, usd = api["priced_tokens_per_s"], api["cost"]["usd_per_million_tokens"]
    table = " ".join(runner.invoke(cli_app, args, env={"COLUMNS": "200"}).stdout.split())
    assert f"speed: {served:,.0f} output tokens/s served at 4 requests/s" in table
    assert f"${usd:,.2f} per million output tokens" in table
    assert f"decode step at 1 request at once: {api['speed']['tokens_per_s']:,.0f} output tokens/s" in table


def test_capacity_and_estimate_agree_at_the_same_rate_and_say_what_each_prices():
    """capacity prices a replica at the highest rate it serves within the SLOs (req/s x mean output tokens);
    estimate at that rate prices the tokens its run served: the same figure but for the run's idle start and drain
    (1,000 Poisson arrivals over ~40 s, then the last requests' lives), which only estimate counts."""
    from gpuplan.api import capacity

    report = capacity("llama-3.1-8b", engine="vllm", gpus=["h100-sxm"], max_gpus=1, rate_rps=4, prompt_tokens=1000,
                      output_tokens=200, ttft_s=1, tpot_s=0.05, top=1)
    row = report.deployments[0]
    assert row.output_tokens_per_s == pytest.approx(row.max_rate_rps * 200)
    assert row.usd_per_million_output == pytest.approx(row.usd_per_hour / (row.max_rate_rps * 200 * 3600) * 1e6)
    assert any("price each replica at the highest rate it serves within the SLOs" in n for n in report.notes)
    plan = estimate({**RATE, "rate_rps": round(row.max_rate_rps, 2)}, advise=False)
    assert plan.cost.usd_per_hour == pytest.approx(row.usd_per_hour)
    assert plan.priced_tokens_per_s < row.output_tokens_per_s  # the idle start and the drain
    assert plan.cost.usd_per_million_tokens == pytest.approx(row.usd_per_million_output, rel=0.15)


def test_recommend_with_a_rate_says_its_rows_are_priced_on_their_run():
    """Since session 24 recommend under a rate prices its best rows on their simulated run, as `estimate --rate`
    does (the note says so; tests/plan/test_recommend.py checks the ranking): the H100's row here is the run's
    throughput and price, not its decode step at one request."""
    from gpuplan.api import recommend

    searched = {k: v for k, v in RATE.items() if k != "gpu"}
    rec = recommend(searched, gpus=["h100-sxm"], top=1)
    note = [n for n in rec.notes if n.startswith("$/M tok: the best rows")]
    assert len(note) == 1 and "`gpuplan estimate --rate 4`" in note[0] and "simulated run of --rate 4" in note[0]
    row = rec.setups[0]
    assert row.usd_per_million_tokens == pytest.approx(row.usd_per_hour / (row.tokens_per_s * 3600) * 1e6)
    alone = estimate({**RATE, "provider": row.provider})
    assert row.tokens_per_s == pytest.approx(alone.priced_tokens_per_s, rel=1e-9)
    unloaded = recommend({**searched, "rate_rps": None}, gpus=["h100-sxm"], top=1)
    assert not any(n.startswith("$/M tok: the best rows") for n in unloaded.notes)


def test_a_rate_just_past_saturation_says_its_queue_grows_as_capacity_judges_it():
    """Llama-3.1-8B on one H100, 1,000 + 200 tokens: capacity serves 25.66 requests/s with no SLO (97% of its
    saturated run, 26.45). At 26.5 the 1,000-request run's queue climbs by ~54 over a window of 700, under the
    growth test's 70, and nothing was said; the saturated run capacity uses now decides it. At 20 the queue does
    not climb and no saturation run is made."""
    from gpuplan.serving import load

    over = estimate({**RATE, "rate_rps": 26.5}, advise=False)
    said = [w for w in over.load.warnings if "queue grows at 26.5 requests/s" in w]
    assert len(said) == 1 and "a steady rate stays under 97% of that" in said[0]
    calls = []
    real = load._saturated
    try:
        load._saturated = lambda *a: calls.append(real(*a)) or calls[-1]
        under = estimate({**RATE, "rate_rps": 20}, advise=False)
    finally:
        load._saturated = real
    assert not any("queue grows" in w for w in under.load.warnings)
    assert calls == [None]  # asked, and no second simulation made: the queue held
