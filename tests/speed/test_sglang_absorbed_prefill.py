"""SGLang up to 0.4.5 prefills DeepSeek's MLA absorbed once the radix cache holds any prefix of the batch (its
tokenizer's BOS token is enough): scores over the 576-wide latent and values over the 512-wide one, against MHA's
192 and 128 (engines/sglang.py ``absorbed_prefill``). Counted by hand from DeepSeek-R1's config."""

from __future__ import annotations

import functools

import pytest

from conftest import step_timer_of
from gpuplan import overheads as oh
from gpuplan.engines.sglang import absorbed_prefill
from gpuplan.plan.resolve import resolve
from gpuplan.scenario import scenario_from

R1 = dict(model="deepseek-r1", task="infer", engine="sglang", gpu="h200", num_gpus=8, tp=8, batch_size=1,
          prompt_tokens=3200, output_tokens=800)


timer = functools.partial(step_timer_of, R1)


def test_sglang_043_prompt_attention_costs_the_absorbed_flops():
    # per head and key: 2 x (512 + 64 + 512) absorbed against 2 x (128 + 64 + 128) multi-head: 1,088 / 320 = 3.4
    # (0.4.5: the last absorbing release after the first DeepSeek ones, whose triton prompt attention costs 5.09x
    # more on top, tests/serving/test_sglang_dp_attention.py)
    old, new = timer(engine_version="0.4.5"), timer(engine_version="0.5.12")
    assert old.timing.context_attention_speedup == pytest.approx(320 / 1088)
    assert timer(engine_version="0.4.3.post2").timing.context_attention_speedup == pytest.approx(320 / 1088 / 5.09)
    assert new.timing.context_attention_speedup == 1.0
    assert "prefills MLA prompts absorbed" in old.timing.note and "absorbed" not in new.timing.note
    ratio = old.prefill_parts(3200)["attention"] / new.prefill_parts(3200)["attention"]
    assert ratio == pytest.approx(1088 / 320, rel=1e-9)
    # the GEMMs differ by the linears' kernel alone (engines/block_fp8.py: 0.4.5's Triton, DeepGEMM from 0.4.6; the
    # tuned Triton MoE in both)
    assert (old.timing.block_fp8_share, new.timing.block_fp8_share) == (
        oh.BLOCK_FP8_KERNEL_SHARE, oh.DEEPGEMM_KERNEL_SHARE)
    assert old.timing.block_fp8_expert_share == new.timing.block_fp8_expert_share


def test_the_last_triton_release_absorbs_and_dense_models_never_do():
    r = resolve(scenario_from({**R1, "engine_version": "0.4.5"}))
    assert absorbed_prefill(r.scenario, r.model) == {"context_attention_speedup": pytest.approx(320 / 1088)}
    assert absorbed_prefill(resolve(scenario_from({**R1, "engine_version": "0.4.6"})).scenario, r.model) == {}
    llama = resolve(scenario_from(dict(R1, model="llama-3.1-70b", engine_version="0.4.1")))
    assert absorbed_prefill(llama.scenario, llama.model) == {}
