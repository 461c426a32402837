"""SGLang's DP attention as its scheduler runs it (0.4.3.post2: managers/data_parallel_controller.py,
managers/scheduler.py, models/deepseek_v2.py): a scheduler per rank over its GPU's pool, chunk and request cap, fed
round robin, the ranks stepping together (a prompt on one rank stalls only that rank's decodes; the step lasts the
busiest rank's attention and every rank's gathered tokens); 0.4.3's halved chunk; the triton MLA decode reading the
latent cache once per block of 16 heads; and the first DeepSeek releases' prompt costs fitted on SGLang PR #3550's
two long-prompt runs on H200 and PR #3237's prefill on MI300X (their published durations written here)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from gpuplan import overheads as oh
from gpuplan.engines import sglang
from gpuplan.plan.resolve import resolve
from gpuplan.scenario import scenario_from
from gpuplan.serving.calibrate import replay
from gpuplan.serving.simulate import Scheduler, sglang_scheduler, simulate
from gpuplan.serving.steptime import StepModel, sample
from gpuplan.speed.inference import step_timer

R1 = dict(model="deepseek-r1", task="infer", engine="sglang", gpu="h200", num_gpus=8, tp=8)


def resolved(**fields):
    r = resolve(scenario_from({**R1, **fields}))
    return r.scenario, r.model, r.gpu


def flat(step_s: float = 0.010, pair_s: float = 0.0) -> StepModel:
    """Every step ``step_s`` plus ``pair_s`` per prompt (query, key) pair: counted by hand below."""
    return StepModel(grid_tokens=(1.0, 2.0), dense_s=(step_s, step_s), lm_head_s=(0.0, 0.0),
                     attention_s_per_pair=pair_s, kv_s_per_token=0.0, step_host_s=0.0, seq_host_s=0.0)


def test_each_rank_schedules_one_gpus_pool_chunk_and_cap_and_043_halves_the_chunk():
    """0.4.3.post2 server_args.py: under --enable-dp-attention ``chunked_prefill_size // 2`` (8,192 -> 4,096 on an
    H200); each DP worker's scheduler holds its own GPU's pool and request cap (the copy's figures / 8)."""
    s, m, gpu = resolved(engine_version="0.4.3.post2", attention_dp=True)
    sm = sglang.startup_memory(s, m, gpu)
    assert sm.chunked_prefill_size == 4096
    eng = sglang_scheduler(sm.ranks(8))
    assert (eng.attention_ranks, eng.kv_blocks, eng.max_num_batched_tokens, eng.max_num_seqs) == \
        (8, sm.kv_tokens, 4096, sm.max_running_requests)
    later = sglang.startup_memory(*resolved(engine_version="0.5.7", attention_dp=True))
    plain = sglang.startup_memory(*resolved(engine_version="0.4.3.post2"))
    assert later.chunked_prefill_size == 8192 and plain.chunked_prefill_size == 8192  # H200: < 160 GiB usable


def test_a_prompt_on_one_rank_stalls_only_that_ranks_decodes():
    """Every step 10 ms. A: 100-token prompt at 0, 5 tokens out (rank 0); B: the same at 25 ms (rank 1, round
    robin). A's first token at 10 ms, 2nd and 3rd at 20, 30. One scheduler (prefill first): B's prompt alone at
    30-40, A's 4th and 5th at 50, 60: TPOT 12.5 ms. Two DP ranks: rank 1 prefills B while rank 0 decodes A in the
    same step, A's 4th and 5th at 40, 50: TPOT 10 ms. B's first token at 40 ms either way (TTFT 15 ms)."""
    arrive, prompt, output = np.array([0.0, 0.025]), np.array([100, 100]), np.array([5, 5])
    one = Scheduler(kv_blocks=10_000, block_tokens=1, max_num_seqs=8, max_num_batched_tokens=8192,
                    mixed_prefill=False)
    two = dataclasses.replace(one, attention_ranks=2)
    a, b = simulate(flat(), one, arrive, prompt, output), simulate(flat(), two, arrive, prompt, output)
    assert a.tpot_s[0] == pytest.approx(0.0125) and b.tpot_s[0] == pytest.approx(0.010)
    assert a.ttft_s[1] == pytest.approx(0.015) and b.ttft_s[1] == pytest.approx(0.015)
    assert b.completed == 2 and b.output_tokens == 10


def test_prompts_on_different_ranks_pay_the_busiest_ranks_attention_not_the_sum():
    """Two 1,000-token prompts at once, 1 ns a pair, nothing else: one scheduler prefills both in one step of
    2 x 1,000 x 500 pairs = 1.0 ms; two ranks, one prompt each, side by side: 0.5 ms. Round robin: 4 prompts on
    2 ranks are 2 per rank, 1.0 ms."""
    one = Scheduler(kv_blocks=10_000, block_tokens=1, max_num_seqs=8, max_num_batched_tokens=8192,
                    mixed_prefill=False)
    model = flat(step_s=0.0, pair_s=1e-9)
    for n, ranks, want in ((2, 1, 1.0e-3), (2, 2, 0.5e-3), (4, 2, 1.0e-3)):
        out = simulate(model, dataclasses.replace(one, attention_ranks=ranks), np.zeros(n), np.full(n, 1000),
                       np.ones(n, dtype=int))
        assert out.ttft_s == pytest.approx(np.full(n, want)), (n, ranks)


def test_the_triton_mla_decode_streams_the_cache_once_per_16_heads():
    """triton_ops/decode_attention.py of 0.4.3.post2: grid (batch, cdiv(heads, BLOCK_H = 16), splits). DP attention
    puts DeepSeek's 128 heads on every GPU: 8 blocks, the latent cache read 8 times; TP 8 leaves 16: once; 0.5's
    backends (FlashMLA, FA3) are timed as before."""
    dp = resolved(engine_version="0.4.3.post2", attention_dp=True)
    assert sglang.triton_mla_decode(*dp[:2]) == {"kv_reads": 8}
    assert sglang.triton_mla_decode(*resolved(engine_version="0.4.3.post2")[:2]) == {}
    assert sglang.triton_mla_decode(*resolved(engine_version="0.5.7", attention_dp=True)[:2]) == {}
    t = step_timer(*dp)
    twice = dataclasses.replace(t, timing=dataclasses.replace(t.timing, kv_reads=2))
    kv8, kv2 = t.decode_parts(128, 3600)["kv_cache"], twice.decode_parts(128, 3600)["kv_cache"]
    # 16 sequences of 3,600 tokens on the busiest rank: 8 reads of their latent cache (8.4 ms), where the bytes of
    # one read (1.05 ms) sit below the absorbed decode's compute floor (the kv_cache term is the larger of the two)
    assert kv8 == pytest.approx(4 * kv2, rel=1e-9) and kv8 == pytest.approx(8.43e-3, rel=0.01)


def _pr3550_s(backend: str) -> float:
    """gpuplan's replay of SGLang PR #3550's run (DeepSeek-V3, TP 8, H200, 0.4.3, radix cache off; bench_serving
    random 32,000 / 100 at range ratio 0: lengths uniform in 1..32,000 and 1..100, 60 prompts at 1 request/s),
    scaled to its 936,860 published input tokens. FlashInfer's prompt attention at gpuplan's multi-head figure;
    the triton run's first chunk of each prompt (no prefix) multi-head, 320 / 1,088 of the absorbed cost."""
    r = resolve(scenario_from(dict(R1, model="deepseek-v3", engine_version="0.4.3")))
    s, m, gpu = r.scenario, r.model, r.gpu
    rng = np.random.default_rng(0)
    prompt, output = rng.integers(1, 32001, 60), rng.integers(1, 101, 60)
    timer, sm = step_timer(s, m, gpu), sglang.startup_memory(s, m, gpu)
    model = sample(timer)
    if backend == "flashinfer":
        scale = timer.timing.context_attention_speedup
    else:
        first = (np.minimum(prompt, 8192) ** 2.0).sum() / (prompt ** 2.0).sum()
        scale = 1 - first * (1 - 320 / 1088)
    model = dataclasses.replace(model, attention_s_per_pair=model.attention_s_per_pair * scale)
    out = replay(model, sglang_scheduler(sm), rate_rps=1.0, prompt=prompt, output=output)
    return out.duration_s * 936_860 / prompt.sum()


def test_the_early_prompt_costs_replay_pr3550s_two_runs():
    """Fitted in turn (sglang_serving.py --calibrate-prompts): the prompt path's non-attention work from the
    FlashInfer run (89.26 s published), then the triton attention from the triton run ((936,860 + ~2,790) tokens
    / 2,679.07 tokens/s = 350.7 s). Both within 2 % of what they were fitted on. 1.11 and 4.22 until SGLang's
    admission reserve was switched on (issue 31): the replay then stopped retracting and recomputing requests; 1.63
    until the block-FP8 kernels were timed at their measured rate (overheads.BLOCK_FP8_KERNEL_SHARE)."""
    assert (oh.SGLANG_EARLY_PROMPT_SCALE, oh.SGLANG_EARLY_TRITON_PROMPT_ATTENTION) == (1.03, 5.09)
    assert _pr3550_s("flashinfer") == pytest.approx(89.26, rel=0.02)
    assert _pr3550_s("triton") == pytest.approx(350.7, rel=0.02)


def _pr3237_prefill_s() -> float:
    """gpuplan's step for SGLang PR #3237's bench_one_batch prefill (DeepSeek-V3, TP 8, 8 MI300Xs, 0.4.3): 4 prompts
    of 2,048 tokens in one extend batch, no radix cache, so multi-head on the triton extend kernel (320 / 1,088 of
    the absorbed figure)."""
    r = resolve(scenario_from(dict(R1, model="deepseek-v3", gpu="mi300x", engine_version="0.4.3")))
    model = sample(step_timer(r.scenario, r.model, r.gpu))
    model = dataclasses.replace(model, attention_s_per_pair=model.attention_s_per_pair * 320 / 1088)
    return model.time(4 * 2048, 0, 0, 4 * 2048 * 2048 / 2, 4)


def test_the_rocm_prompt_path_replays_pr3237s_prefill():
    """Fitted (sglang_serving.py --calibrate-prompts) on PR #3237's 'Without Fusion' run: bench_one_batch's total
    10.656 s less 255 decode steps at the median 38.50 ms leaves 0.838 s for the prefill; the fused-decode run of the
    same comment leaves 9.970 - 255 x 0.03581 = 0.838 s too. At the CUDA build's 1.11 gpuplan said 0.427 s. What is
    fitted: the gfx942 Triton block-FP8 kernels' share of the fast fp8 rate (overheads.ROCM_BLOCK_FP8_KERNEL_SHARE),
    the rest of the prompt path at the CUDA build's factor (the same Python code on both vendors). Until issue 31's
    session 14 an AMD prompt factor of its own was fitted there instead (2.35, 2.29, then 1.62 with the H200's
    share)."""
    assert (oh.ROCM_BLOCK_FP8_KERNEL_SHARE, oh.SGLANG_EARLY_PROMPT_SCALE) == (0.143, 1.03)
    assert _pr3237_prefill_s() == pytest.approx(10.656 - 255 * 0.03850, rel=0.01)
    assert _pr3237_prefill_s() == pytest.approx(9.970 - 255 * 0.03581, rel=0.01)


def test_the_early_prompt_costs_are_timed_where_those_releases_run():
    """0.4.3 and earlier DeepSeek layers: attention x 5.09 over the absorbed figure (1,088 / 320 of the multi-head
    FLOPs), the rest of a prompt's GPU work x 1.03 (its block-FP8 GEMMs at their own rate); 0.5 and Llama
    untouched."""
    early = step_timer(*resolved(engine_version="0.4.3.post2"))
    later = step_timer(*resolved(engine_version="0.5.7"))
    assert early.timing.prompt_scale == 1.03 and later.timing.prompt_scale == 1.0
    assert early.timing.block_fp8_share == pytest.approx(0.2567, abs=1e-4)
    # 0.5.7: DeepGEMM's linears, the Triton MoE at TP 8 (engines/block_fp8.py), neither Triton's early share
    assert (later.timing.block_fp8_share, later.timing.block_fp8_expert_share) == (0.875, 0.875)
    # the ROCm build's prompt path: the same factor and triton attention factor, its Triton block-FP8 kernels at their
    # gfx942 share (PR #3237)
    rocm = step_timer(*resolved(engine_version="0.4.2.post4", gpu="mi300x"))
    assert (rocm.timing.prompt_scale, rocm.timing.block_fp8_share) == (1.03, 0.143)
    assert rocm.timing.context_attention_speedup == pytest.approx(320 / 1088 / 5.09)
    assert early.timing.context_attention_speedup == pytest.approx(320 / 1088 / 5.09)
    parts = early.prefill_parts(3200)
    rest = sum(v for k, v in parts.items() if k not in ("attention", "unfused_prompt", "kernel_launches", "host"))
    assert parts["unfused_prompt"] == pytest.approx(0.03 * rest, rel=1e-9)
    llama = resolve(scenario_from(dict(R1, model="llama-3.1-70b", engine_version="0.4.3")))
    assert sglang.early_deepseek(llama.scenario, llama.model, llama.gpu) == {}
