"""SGLang's piecewise CUDA graphs for prompt steps (from 0.5.10) and the whole-pool cast that 0.5.10-0.5.12 pay on
Blackwell under them (engines/sglang.py prefill_graphs), pinned to the releases' notes and to SGLang issue #35291's
measured cast, worked by hand; and the flashinfer_trtllm MoE guard that kept them off for a block-fp8 DeepSeek on
Blackwell until 0.5.13 (SGLang issue #26715), checked against InferenceX PR #3175's B300 FP8 run."""

from __future__ import annotations

import dataclasses

import pytest

from gpuplan import overheads as oh
from gpuplan.engines import block_fp8, sglang
from gpuplan.plan.resolve import resolve
from gpuplan.scenario import scenario_from
from gpuplan.serving.steptime import sample
from gpuplan.speed.inference import step_timer

# InferenceX's DeepSeek-R1 FP8 run on 8 B200s (dsr1_fp8_b200.sh: --mem-fraction-static 0.82 --kv-cache-dtype fp8_e4m3)
R1 = dict(model="deepseek-r1", task="infer", engine="sglang", gpu="b200", num_gpus=8, tp=8, batch_size=1,
          prompt_tokens=1024, output_tokens=1024, engine_version="0.5.12", kv_cache_dtype="fp8",
          mem_fraction_static=0.82)
# the same in NVFP4: its experts are not the block-fp8 ones SGLang hands to flashinfer_trtllm, so the graphs stay on
NVFP4 = dict(quant="nvfp4")


def resolved(**fields):
    r = resolve(scenario_from({**R1, **fields}))
    return r.scenario, r.model, r.gpu


def timer(**fields):
    return step_timer(*resolved(**fields))


def test_the_cast_costs_what_issue_35291_measured_per_element():
    # 13.77 ms for 61 layers x 131,072 tokens x (512 + 64) elements on an H200 at 4.8 TB/s:
    # 13.77e-3 x 4.8e12 = 6.6096e10 bytes over 4,605,345,792 elements = 14.352 bytes an element
    cast = oh.SGLANG_POOL_CAST_BYTES_PER_ELEMENT
    assert abs(cast - 6.6096e10 / 4_605_345_792) < 1e-12
    assert abs(cast - 14.352) < 1e-3


def test_b200_0512_with_an_fp8_pool_casts_the_whole_pool_every_graphed_prompt_step():
    s, m, gpu = resolved(**NVFP4)
    mla = [layer for layer in m.layers if layer.attention == "mla"]
    assert len(mla) == 61 and {layer.kv_dims for layer in mla} == {576}  # kv_lora_rank 512 + rope 64
    pool = sglang.startup_memory(s, m, gpu, mem_fraction_static=0.82).kv_tokens
    t = step_timer(s, m, gpu)
    assert t.timing.prefill_graph_tokens == 2048  # MLA: --piecewise-cuda-graph-max-tokens 2048
    # every layer's pool tokens x 576 elements x 14.352 bytes at the B200's 7.7 TB/s
    assert t.timing.prefill_graph_s == pytest.approx(pool * 61 * 576 * 14.352 / 7.7e12, rel=1e-4)
    assert 0.18 < t.timing.prefill_graph_s < 0.21  # ~3.0M tokens of pool: ~197 ms a step, whatever the prompt
    assert f"{t.timing.prefill_graph_s * 1e3:,.0f} ms" in t.timing.note and "whole fp8 KV pool" in t.timing.note
    assert "whole fp8 KV pool" not in timer(gpu="h200").timing.note  # the plan says it only where it is paid


def test_a_graphed_prompt_step_pays_the_cast_and_no_launches_a_longer_one_runs_eagerly():
    t = timer(**NVFP4)
    short, long = t.prefill_parts(1024), t.prefill_parts(4096)
    assert short["kv_pool_cast"] == t.timing.prefill_graph_s and "kernel_launches" not in short
    assert "kv_pool_cast" not in long
    plain = dataclasses.replace(t, timing=dataclasses.replace(t.timing, prefill_graph_tokens=0, prefill_graph_s=0.0))
    eager = plain.prefill_parts(1024)
    assert eager["kernel_launches"] > 0  # 23 kernels x 61 layers x 36.9 us launched over the GPU's work
    assert t.prefill_s(1024) == pytest.approx(plain.prefill_s(1024) - eager["kernel_launches"]
                                              + t.timing.prefill_graph_s, rel=1e-12)


def test_the_step_model_prices_graphed_prompt_steps_alike():
    """A graphed prompt step pays the pool cast and no launches; the same step without prefill graphs (past the
    decode graphs' cap) takes the longer of its GPU work and the launches (23 kernels x 61 layers x 36.9 us)."""
    model = sample(timer(**NVFP4))
    plain = dataclasses.replace(model, prefill_graph_tokens=0.0, prefill_graph_s=0.0)
    gpu_only = dataclasses.replace(plain, eager_launch_s=0.0)
    assert 1024 > model.graph_max_tokens > 0 and model.eager_launch_s == pytest.approx(23 * 61 * 36.9e-6)
    assert plain.time(1024, 0, 0, 1024 * 512) == pytest.approx(max(gpu_only.time(1024, 0, 0, 1024 * 512),
                                                                   model.eager_launch_s), rel=1e-12)
    assert model.time(1024, 0, 0, 1024 * 512) == pytest.approx(
        gpu_only.time(1024, 0, 0, 1024 * 512) + model.prefill_graph_s, rel=1e-12)
    assert model.time(0, 8, 8 * 1500) == plain.time(0, 8, 8 * 1500)  # decode steps: unchanged
    assert model.time(4096, 0, 0, 4096 * 2048) == plain.time(4096, 0, 0, 4096 * 2048)  # past the graphs


@pytest.mark.parametrize(("fields", "tokens", "cast"), [
    ({"engine_version": "0.5.9", **NVFP4}, 0, False),  # before 0.5.10's default
    ({"engine_version": "0.5.13", **NVFP4}, 2048, False),  # after PR #28053 (2026-06-12)
    ({"kv_cache_dtype": "auto", **NVFP4}, 2048, False),  # a bf16 pool: .to(bf16) copies nothing
    ({"gpu": "h200"}, 2048, False),  # Hopper: flashinfer_mla, not trtllm_mla; the Triton MoE, no guard
    ({"ep": 8, **NVFP4}, 0, False),  # expert parallelism turns the graphs off
    ({"ep": 8, "attention_dp": True}, 0, False),
    ({"gpu": "mi325x", "engine_version": "0.5.19"}, 0, False),  # ROCm's default not read
    ({}, 0, False),  # the block-fp8 experts in flashinfer_trtllm: the MoE guard keeps the graphs off
    ({"gpu": "b300"}, 0, False),
    ({"engine_version": "0.5.13"}, 2048, False),  # the guard gone; PR #28053's cast-free graphs
])
def test_which_setups_replay_prompt_graphs_and_which_cast(fields, tokens, cast):
    t = timer(**fields)
    assert t.timing.prefill_graph_tokens == tokens
    assert (t.timing.prefill_graph_s > 0) is cast


def test_models_without_mla_capture_up_to_the_chunk():
    s, m, gpu = resolved(model="llama-3.1-70b", kv_cache_dtype="auto", mem_fraction_static=None)
    d = sglang.defaults(gpu.usable_gib * 1024, s.tp, s.pp, s.engine_version)
    t = step_timer(s, m, gpu)
    assert t.timing.prefill_graph_tokens == d.chunked_prefill_size == 16384  # a B200: chunk 16,384
    assert t.timing.prefill_graph_s == 0.0


def test_the_cast_matches_pr_35807s_gb300_fallback_within_its_pool():
    """Outside the bench, never fitted: SGLang PR #35807 measured the same fallback on Kimi-K2.6 NVFP4 with an fp8
    pool on 4 GB300s (TP 4, one 1k-token request): TTFT 122.68 -> 344.58 ms, +221.9 ms. gpuplan's pool there at
    SGLang's default memory fraction (~3.5M tokens) gives the cast within 5%."""
    t = timer(model="kimi-k2", gpu="gb300", num_gpus=4, tp=4, quant="nvfp4", mem_fraction_static=None)
    assert t.timing.prefill_graph_s == pytest.approx(344.58e-3 - 122.68e-3, rel=0.05)


def test_the_moe_guard_follows_sglangs_moe_pick_and_matches_pr_3175s_b300_fp8_run():
    """Outside the bench, never fitted: InferenceX PR #3175 prints dsr1-fp8-b300-sglang at 0.5.12 (dsr1_fp8_b300.sh:
    the B200 recipe, --moe-runner-backend flashinfer_trtllm, trtllm_mla, an fp8 pool at 0.82; TP 8, EP 1), one
    1k-token request at a time: 70.93 ms mean TTFT. With the graphs off its ~1,000-token prompt step is its eager
    launches, 23 kernels x 61 layers x 36.9 us = 51.8 ms, under the TTFT; graphed with the cast it would take
    ~275 ms (the B300's ~3.9M-token pool)."""
    t = timer(gpu="b300")
    assert t.timing.prefill_graph_tokens == 0 and t.timing.prefill_graph_s == 0.0
    assert t.prefill_s(1024) == pytest.approx(23 * 61 * 36.9e-6, rel=1e-3)
    assert t.prefill_s(1024) < 70.93e-3
    s, m, gpu = resolved(gpu="b300")
    assert block_fp8.sglang_trtllm_moe(s, m, gpu, (0, 5, 12))  # SM 10.x, block-fp8 experts, from 0.5.4
    assert not block_fp8.sglang_trtllm_moe(s, m, gpu, (0, 5, 3))
    assert not block_fp8.sglang_trtllm_moe(*resolved(gpu="h200"), (0, 5, 12))  # Hopper: Triton's fused_moe
    assert not block_fp8.sglang_trtllm_moe(*resolved(**NVFP4), (0, 5, 12))
