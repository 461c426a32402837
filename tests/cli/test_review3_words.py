"""Review 3's questions 2 and 4 asked again with other inputs (session 28's walk, bench/results/review3_s28.md):
sentences that said a number twice, or a word wrong, where one user or one request was asked for."""

from __future__ import annotations

from typer.testing import CliRunner

from gpuplan import estimate
from gpuplan.api.page import explain
from gpuplan.cli import app
from gpuplan.serving.workload import Lengths, lengths_words

ONE = dict(model="qwen3-30b-a3b", task="infer", engine="vllm", gpu="a100-80gb", batch_size=1, prompt_tokens=2048,
           output_tokens=128)


def test_one_request_has_one_time_to_first_token():
    """One request of 2,048 tokens on an A100 (tt-inference-server#340's row): the assumption said "0.11 s for one
    2,048-token prompt alone, 0.11 s for the last of 1 arriving together" (with a cached shared prefix "0.08 s
    alone, 0.11 s for the last of 1", the same request twice); estimate's speed line and the page's row already
    said the burst only for 2 or more. The page's TTFT formula said it as well."""
    for shared, alone in ((0, "alone"), (1008, "alone, the shared prefix cached")):
        p = estimate(dict(ONE, shared_prefix_tokens=shared), advise=False)
        said = next(a for a in p.assumptions if a.startswith("time to first token"))
        assert said.startswith(f"time to first token {p.speed.ttft_s:.2f} s for one 2,048-token prompt {alone}, "
                               "each with"), said
        assert "arriving together" not in said
        f = explain(dict(ONE, shared_prefix_tokens=shared)).numbers["speed.ttft_s"]
        assert f.substituted.endswith(f"= {p.speed.ttft_s:,.3f} s alone"), f.substituted
    p = estimate(dict(ONE, batch_size=4), advise=False)  # a burst of 4 still says its last
    said = next(a for a in p.assumptions if a.startswith("time to first token"))
    assert f"{p.speed.ttft_burst_s:.2f} s for the last of 4 arriving together" in said


def test_capacity_says_one_user_in_the_singular_and_no_lockstep(tmp_path):
    """A workload of 1 user at fixed lengths: the head read "1 users (closed loop, think 0 s: ...; with fixed
    lengths too the users stay in lockstep, every prompt prefilled at once ...)": one user has no one to keep step
    with."""
    w = tmp_path / "w.yaml"
    w.write_text("users: 1\nprompt: {kind: fixed, mean: 2048}\noutput: {kind: fixed, mean: 128}\n")
    r = CliRunner().invoke(app, ["capacity", str(w), "--model", "qwen3-0.6b", "--gpus", "l4", "--max-gpus", "1",
                                 "--format", "plain"])
    head = " ".join(r.output.split("SLO p95")[0].split())
    assert r.exit_code == 0 and "prompts 2,048 and outputs 128 tokens, 1 user (closed loop, think 0 s: " in head, head
    assert "lockstep" not in head and "1 users" not in head


def test_lengths_without_a_cap_are_said_from_their_floor():
    """Review 3's Q2 workload file (normal lengths with a floor and no cap) read "prompts 500-any (normal ...)"."""
    prompt = Lengths(kind="normal", mean=2000, std=300, min=500)
    output = Lengths(kind="uniform", mean=400, min=200, max=600)
    assert lengths_words(prompt, output) == ("prompts 500 or more (normal, mean 2,000, std 300) and outputs 200-600 "
                                             "(uniform, mean 400) tokens")
