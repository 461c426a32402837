"""SGLang's --max-prefill-tokens beside the chunk (python/sglang/srt/managers/schedule_policy.py PrefillAdder:
rem_input_tokens and rem_chunk_tokens, each taken down by every prompt the batch holds): up to 0.5.12.post1, and
without chunked prefill in every release, add_one_req refuses a prompt at least as long as what the batch leaves of
max_prefill_tokens once the batch holds one; from 0.5.13, with chunking, budget_state closes the batch after the
prompt that uses it up (read in the 0.4.3.post2, 0.5.12, 0.5.12.post1, 0.5.13 and 0.5.19 wheels). Counted by hand
on a step model whose every step takes 10 ms, six prompts of 7,000 tokens sent at once."""

from __future__ import annotations

import numpy as np
import pytest

from gpuplan.engines import sglang
from gpuplan.plan.resolve import resolve
from gpuplan.scenario import scenario_from
from gpuplan.serving.simulate import Scheduler, simulate
from gpuplan.serving.steptime import StepModel

FLAT = StepModel(grid_tokens=(1.0, 2.0), dense_s=(0.010, 0.010), lm_head_s=(0.0, 0.0), attention_s_per_pair=0.0,
                 kv_s_per_token=0.0, step_host_s=0.0, seq_host_s=0.0)


def _ttft_ms(**rules) -> list[float]:
    """The six requests' first-token times: prefill first (SGLang), a 32,768-token chunk, a pool that holds all."""
    engine = Scheduler(kv_blocks=1_000_000, block_tokens=1, max_num_batched_tokens=32_768, mixed_prefill=False,
                       **rules)
    out = simulate(FLAT, engine, np.zeros(6), np.full(6, 7_000), np.full(6, 2))
    return sorted(round(1e3 * x, 6) for x in out.ttft_s)


def test_up_to_0512_a_prompt_longer_than_what_is_left_closes_the_batch():
    """16,384 - 2 x 7,000 = 2,384 left: the third prompt (7,000 >= 2,384) waits for the next batch, though the
    chunk has 18,768 tokens left. Batches of 2: first tokens at 10, 20 and 30 ms."""
    assert _ttft_ms(max_prefill_tokens=16_384) == [10.0, 10.0, 20.0, 20.0, 30.0, 30.0]


def test_from_0513_the_prompt_that_reaches_it_is_taken_and_closes_the_batch():
    """2,384 left after two prompts is above 0: the third is added whole (it fits the chunk), leaving -4,616:
    the batch closes. Batches of 3."""
    assert _ttft_ms(max_prefill_tokens=16_384, prefill_cap_takes_last=True) == [10.0] * 3 + [20.0] * 3


def test_the_chunk_alone_would_take_four_and_a_piece():
    """Without the cap (vLLM's budget): 4 x 7,000 and 4,768 of the fifth in the first step; the fifth's rest and
    the sixth in the second."""
    assert _ttft_ms() == [10.0] * 4 + [20.0] * 2


def test_without_chunking_every_release_closes_at_a_prompt_longer_than_what_is_left():
    """--chunked-prefill-size -1: the 0.5.13+ flag does not apply (add_one_req's test stands when rem_chunk_tokens
    is None); batches of 2 again."""
    assert _ttft_ms(max_prefill_tokens=16_384, prefill_cap_takes_last=True, chunked_prefill=False) == \
        [10.0, 10.0, 20.0, 20.0, 30.0, 30.0]


@pytest.mark.parametrize("version,takes_last", [("0.4.3.post2", False), ("0.5.12", False), ("0.5.13", True),
                                                ("0.5.19", True), (None, False)])
def test_the_engine_schedules_with_its_releases_rule_and_one_ranks_cap(version, takes_last):
    """Each release's rule (the default release is taken as 0.5.3, as the other release tests of engines/sglang.py
    take it); under DP attention each rank's scheduler takes the server's --max-prefill-tokens whole (tp_worker.py
    reads server_args.max_prefill_tokens on every rank) while the chunk is one rank's."""
    r = resolve(scenario_from({"model": "deepseek-r1", "task": "infer", "engine": "sglang", "gpu": "h200",
                               "num_gpus": 8, "tp": 8, "engine_version": version, "attention_dp": True}))
    sm = sglang.startup_memory(r.scenario, r.model, r.gpu)
    settings = sglang.scheduler_of(sm.ranks(8))
    assert settings["max_prefill_tokens"] == 16_384 and settings["prefill_cap_takes_last"] is takes_last
    assert settings["max_num_batched_tokens"] == sm.chunked_prefill_size
