"""bench/serving/load_accuracy.py's runs: every row names its source, becomes a scenario estimate accepts, and the
SGLang rows (held out: nothing fitted on them) stay within the issue's 20 % on median TTFT."""

import csv
import sys
from pathlib import Path

import pytest

pytest.importorskip("numpy")

BENCH = Path(__file__).resolve().parents[2] / "bench" / "serving"
sys.path.insert(0, str(BENCH))


def test_rows_name_their_source_and_run_through_estimate():
    import load_accuracy

    with load_accuracy.DATA.open(newline="") as f:
        rows = list(csv.DictReader(f))
    assert len(rows) >= 15 and all(len(r["source"]) > 40 for r in rows)
    # SGLang below its knee: DataCrunch's Llama-3.3-70B at 1-4 requests/s and Llama-3.1-405B at 1-2 (at 4 and 8
    # the 405B runs serve 3.2 and 3.6 requests/s: past the knee, scored in the bench, not held to 20 % here)
    sglang = [r for r in rows if r["engine"] == "sglang" and (r["id"].startswith("dc-llama33")
                                                              or float(r["rate_rps"]) <= 2)]
    assert len(sglang) == 5
    for r in sglang:
        got = load_accuracy.predict(r)["TTFT"]
        assert got == pytest.approx(float(r["median_ttft_ms"]), rel=0.2), r["id"]
    offline = next(r for r in rows if r["mode"] == "offline")
    assert load_accuracy.scenario(offline)["batch_size"] == int(offline["num_requests"]) > 1
    # kvcached's burst, `vllm bench serve --request-rate inf`, goes through the API server: an open loop sending
    # all 500 at once (the scenario's highest rate), not a batch handed to the engine in-process
    burst = next(r for r in rows if r["id"] == "kvcached-h100-qwen3-0.6b-offline")
    sc = load_accuracy.scenario(burst)
    assert burst["mode"] == "open" and sc["rate_rps"] == 10_000 and sc["num_requests"] == 500


def test_tt340_replays_its_clients_prefix_cache():
    """tt-inference-server's client draws prompt i of every run with seed 42 + i, so each run finds the previous
    (shorter) run's prompts in vLLM's prefix cache, and one request per run its whole prompt (the benchmark's test
    prompt): replayed, the runs of 1,024 prompt tokens or more land within 15 %, where computing every prompt whole
    put Qwen3-30B-A3B's 4,096 and 8,192-token runs 2-3x too slow."""
    import load_accuracy

    with load_accuracy.DATA.open(newline="") as f:
        rows = [r for r in csv.DictReader(f) if r["id"].startswith("tt340") and int(r["prompt_tokens"]) >= 1024]
    assert len(rows) == 7
    for r in rows:
        assert int(r["prefix_hit_tokens"]) >= 112 and r["warm_requests"] == "1"
        got = load_accuracy.predict(r)["TTFT"]
        assert got == pytest.approx(float(r["median_ttft_ms"]), rel=0.15), r["id"]
    longest = rows[-1]
    assert longest["prompt_tokens"] == "8192" and longest["prefix_hit_tokens"] == "4080"
    whole = {**longest, "prefix_hit_tokens": "0", "warm_requests": "0"}
    assert load_accuracy.cached_ttft_ms(whole) > 2 * load_accuracy.cached_ttft_ms(longest)


def test_k8sllm_replays_the_previous_levels_prompts():
    """k8s-llm-inference-platform's job runs 1, 2, 4 ... 32 users in turn against one vLLM 0.23 server with one
    seed, and vLLM's RandomDataset draws prompt i the same whatever the count: each level's first half (all 320 at
    32 users, whose previous level also sent 320) is whole in the prefix cache. Replayed, the cached half makes the
    run's TTFT shorter than computing every prompt; at 32 users every prompt is cached (one plan, no weighting)."""
    import load_accuracy

    with load_accuracy.DATA.open(newline="") as f:
        rows = {r["id"]: r for r in csv.DictReader(f) if r["id"].startswith("k8sllm")}
    assert [rows[i]["warm_requests"] for i in sorted(rows, key=lambda i: int(rows[i]["users"]))] == \
        ["1", "20", "40", "80", "160", "320"]
    for r in rows.values():
        assert int(r["num_requests"]) == min(20 * int(r["users"]), 320) and r["prefix_hit_tokens"] == "0"
    full = rows["k8sllm-l4-qwen2.5-0.5b-c32"]
    cold = {**full, "warm_requests": "0"}
    assert load_accuracy.cached_ttft_ms(full) < 0.5 * load_accuracy.cached_ttft_ms(cold)
