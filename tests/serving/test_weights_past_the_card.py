"""A serving plan whose weights alone are more than the GPU holds says so, instead of blaming the KV pool (s25 walk:
Phi-4 in bf16 on one L4 read "vLLM's KV pool cannot hold one request of 1,800 tokens" and "vLLM will refuse to start
with max_model_len 16,384: its KV pool holds 0 tokens", which points at the prompt's length)."""

from __future__ import annotations

from gpuplan import estimate

PHI4_L4 = {"model": "phi-4", "task": "infer", "engine": "vllm", "gpu": "l4", "prompt_tokens": 1500,
           "output_tokens": 300}


def test_the_verdict_names_the_weights():
    """Phi-4: 14,659,507,200 parameters x 2 bytes = 27.31 GiB of bf16 weights, past the L4's 22.50 GiB usable."""
    for extra in ({"batch_size": 1}, {"users": 30, "think_time_s": 10}):
        r = estimate({**PHI4_L4, **extra}, advise=False)
        assert r.memory.weights_gib > r.memory.capacity_gib == 22.5
        assert f"the weights alone ({r.memory.weights_gib:,.2f} GiB per GPU) are more than the GPU holds" \
            in r.verdict.sentence
        assert "KV pool" not in r.verdict.sentence
        start = [w for w in r.warnings if "vLLM will refuse to start" in w]
        assert start and "weights alone" in start[0] and "shorter context" not in start[0]


def test_a_pool_too_small_for_a_long_prompt_still_says_the_pool():
    """Llama-3.1-8B (14.96 GiB of weights) on an L4 holds its weights: a 100k-token prompt is the KV pool's story."""
    r = estimate({"model": "llama-3.1-8b", "task": "infer", "engine": "vllm", "gpu": "l4", "prompt_tokens": 100_000,
                  "output_tokens": 300, "batch_size": 1}, advise=False)
    assert r.memory.weights_gib < r.memory.capacity_gib
    assert "KV pool" in r.verdict.sentence and "weights alone" not in r.verdict.sentence


def test_the_missing_run_names_the_weights():
    r = estimate({**PHI4_L4, "users": 30, "think_time_s": 10}, advise=False)
    assert "no simulated run: the weights alone are more than the GPU holds" in r.warnings


def test_one_user_is_one_user():
    """s25 walk: `estimate --users 1` printed "served at 1 users" and "serving 1 users (closed loop ...)"."""
    r = estimate({"model": "qwen3-0.6b", "task": "infer", "engine": "vllm", "gpu": "h100-sxm", "users": 1,
                  "prompt_tokens": 256, "output_tokens": 64}, advise=False)
    assert r.load.load_words == "1 user" and r.load.load_said.startswith("1 user (closed loop")
