"""SGLang's admission reserve (sgl-project/sglang python/sglang/srt/managers/schedule_policy.py PrefillAdder:
add_one_req refuses a prompt when its whole uncached prompt plus its output clipped to CLIP_MAX_NEW_TOKENS is at
least rem_total_tokens, the free pool less each running request's clipped remaining output x new_token_ratio;
scheduler.py decays new_token_ratio every decode step and resets it when idle). Counted by hand on a step model
whose every step takes 10 ms: a pool of 1,000 one-token pages, a 200-token prefill chunk, prefill first, two
requests of a 100-token prompt and a 600-token output sent at once. SGLang's profile sets the reserve by release
(engines/sglang.py new_token_ratios, read in the 0.3.0 to 0.5.19 wheels)."""

from __future__ import annotations

import numpy as np
import pytest

from gpuplan.engines import sglang
from gpuplan.scenario import scenario_from
from gpuplan.serving.simulate import Scheduler, simulate
from gpuplan.serving.steptime import StepModel

FLAT = StepModel(grid_tokens=(1.0, 2.0), dense_s=(0.010, 0.010), lm_head_s=(0.0, 0.0), attention_s_per_pair=0.0,
                 kv_s_per_token=0.0, step_host_s=0.0, seq_host_s=0.0)


def _run(pool: int = 1_000, **reserve):
    engine = Scheduler(kv_blocks=pool, block_tokens=1, max_num_batched_tokens=200, mixed_prefill=False, **reserve)
    out = simulate(FLAT, engine, np.zeros(2), np.full(2, 100), np.full(2, 600))
    return out.preemptions, [round(1e3 * x, 6) for x in out.ttft_s]


def test_the_chunk_rule_takes_both_and_the_pool_runs_out():
    """Without the reserve both prompts (200 tokens) fit the chunk and the pool: first tokens at 10 ms; together
    they need 2 x (100 + 600) = 1,400 > 1,000 tokens, so one is retracted (preempted) on the way."""
    assert _run() == (1, [10.0, 10.0])


def test_the_reserve_refuses_the_second_prompt_until_the_first_finishes():
    """new_token_ratio 0.5, not decaying: the first prompt is admitted (100 + 600 = 700 < 1,000) and takes 700 of
    rem_total_tokens, leaving 300: the second (700 >= 300) waits. Each later step the first holds one token more
    and owes one less: 900 - j - 0.5 x (599 - j) = 600.5 - 0.5 j < 700 for every j, so the second waits until the
    first finishes (10 ms + 599 x 10 ms = 6,000 ms) and prefills in the next step: 6,010 ms. Nothing preempted."""
    assert _run(reserve_ratio=0.5, reserve_ratio_min=0.5) == (0, [10.0, 6010.0])


def test_the_decaying_ratio_admits_the_second_prompt_once_the_reserve_shrinks():
    """new_token_ratio 0.5 falling by 0.5 / 100 a decode step: after j decode steps the pool leaves
    900 - j - (0.5 - 0.005 j) x (599 - j); at j = 43: 857 - 0.285 x 556 = 698.5 (< 700: waits), at j = 44:
    856 - 0.28 x 555 = 700.6 (> 700): admitted after 10 + 44 x 10 = 450 ms, first token at 460 ms. The ratio is
    by then too low: the pool runs out later and one request is retracted, as SGLang's would be."""
    assert _run(reserve_ratio=0.5, reserve_ratio_min=0.0, reserve_decay_steps=100) == (1, [10.0, 460.0])


def test_ignore_eos_without_the_radix_cache_reserves_every_output_whole():
    """add_one_req_ignore_eos (0.3.5 to 0.4.x): sorted by the output they owe, the requests running when the i-th
    finishes take the next one's tokens_left each. The first prompt: 1,000 - 100 - 600 x 1 = 300 > 0, admitted;
    the second beside it: (1,000 - 100) - 100 - 600 x 2 = -400, refused, and while the first runs its own
    600 x 2 stays the first term (the next one's, the second's whole output): it waits until the first finishes,
    first token at 6,010 ms as under a fixed reserve. A pool of 1,500 holds both: 1,400 - 100 - 1,200 = 100 and
    1,400 - 100 + 100 - 600 = 800, both admitted at once, and nothing is retracted."""
    assert _run(reserve_whole_outputs=True) == (0, [10.0, 6010.0])
    assert _run(1_500, reserve_whole_outputs=True) == (0, [10.0, 10.0])


def test_sglangs_releases_set_the_reserve_they_ship():
    """new_token_ratio as each release sets it: 0.3.0 (global_config.py) 0.7 falling by 0.001 a step to
    base_min_new_token_ratio 0.1, 600 steps; from 0.3.5 (SGLANG_INIT_NEW_TOKEN_RATIO 0.7, SGLANG_MIN_NEW_TOKEN_RATIO_
    FACTOR 0.14, 600 decay steps) 0.7 to 0.7 x 0.14 = 0.098; --enable-dp-attention scales schedule_conservativeness
    by 0.3: 0.21 to 0.21 x 0.14 = 0.0294. scheduler_of hands them to the simulation."""
    def ratios(**fields):
        s = scenario_from({"task": "infer", "engine": "sglang", "model": "llama-3.1-8b", "gpu": "h100-sxm", **fields})
        return sglang.new_token_ratios(s)

    assert ratios(engine_version="0.3.0") == (0.7, 0.1)
    assert ratios(engine_version="0.3.5.post2") == ratios(engine_version="0.5.12") == (0.7, 0.7 * 0.14)
    assert ratios(engine_version="0.4.3.post2", attention_dp=True, tp=8, num_gpus=8) == pytest.approx((0.21, 0.0294))
    sm = sglang.StartupMemory(total_gib=70, weights_gib=16, available_gib=54, mem_fraction_static=0.88, kv_tokens=1000,
                              kv_pool_gib=1, chunked_prefill_size=8192, max_running_requests=2048, context_len=8192,
                              new_token_ratio=0.21, min_new_token_ratio=0.0294)
    settings = sglang.scheduler_of(sm)
    assert (settings["reserve_ratio"], settings["reserve_ratio_min"], settings["reserve_decay_steps"]) == (0.21, 0.0294,
                                                                                                          600)
