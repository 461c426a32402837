"""Serving: workload validation, the step model's arithmetic, the scheduler simulation, capacity and calibration."""

import dataclasses
import json

import numpy as np
import pytest

from gpuplan.engines import vllm
from gpuplan.errors import GpuplanError
from gpuplan.hardware import load_gpu
from gpuplan.model.catalog import load_model
from gpuplan.scenario import scenario_from
from gpuplan.serving.calibrate import fit_corrections, read_results, replay
from gpuplan.serving.simulate import Scheduler, arrivals, simulate, vllm_scheduler
from gpuplan.serving.steptime import sample, step_model
from gpuplan.serving.workload import load_workload, read_trace, sample_lengths
from gpuplan.speed.inference import step_timer

H100 = load_gpu("h100-sxm")
M = load_model("llama-3.1-8b")
S = scenario_from(dict(model="llama-3.1-8b", task="infer", engine="vllm", gpu="h100-sxm"))


def test_workload_errors_are_one_sentence_with_did_you_mean():
    with pytest.raises(GpuplanError, match="did you mean 'chat'"):
        load_workload(None, {"preset": "chta"})
    with pytest.raises(GpuplanError, match="say how long requests are"):
        load_workload(None, {"rate_rps": 2})
    with pytest.raises(GpuplanError, match="rate_rps"):
        load_workload(None, {"rate_rps": -1, "preset": "chat"})
    w = load_workload(None, {"prompt_tokens": 2000, "output_tokens": 300, "ttft_s": 1, "percentile": 99})
    assert (w.mean_prompt_tokens, w.mean_output_tokens, w.slo.ttft_s, w.slo.percentile) == (2000, 300, 1, 99)


def test_a_workload_file_says_lengths_as_the_flags_do(tmp_path):
    """Session 9's walk: a workload file with 'prompt_tokens: 800' (as the flags and scenario files name it) read
    "unknown field; did you mean 'prompt'?", and 'prompt: 800' then read "Input should be a valid dictionary or
    instance of Lengths": a loop. Both are now that length for every request, the flags still over the file; an
    unknown SLO key is offered the SLO's own names."""
    path = tmp_path / "w.yaml"
    for text in ("rate_rps: 2\nprompt_tokens: 800\noutput_tokens: 200\n", "rate_rps: 2\nprompt: 800\noutput: 200\n"):
        path.write_text(text)
        w = load_workload(path)
        assert (w.mean_prompt_tokens, w.mean_output_tokens, w.rate_rps) == (800, 200, 2)
    assert load_workload(path, {"prompt_tokens": 1000}).mean_prompt_tokens == 1000
    path.write_text("rate_rps: 2\nprompt: 800\noutput: 200\nslo: {tpot_ms: 50}\n")
    with pytest.raises(GpuplanError, match=r"^workload slo.tpot_ms: unknown field; did you mean 'tpot_s'\?$"):
        load_workload(path)


def test_a_workloads_think_time_has_the_scenarios_name(tmp_path):
    """Walk s16: estimate --users (the scenario, the page's estimate) names the think time think_time_s, and
    capacity's workload (its YAML, gpuplan.capacity(), the page's /api/capacity) named it think_s: the same idea under
    two words, so gpuplan.capacity(..., think_time_s=20) read "unknown field; did you mean 'think_s'?". One name
    now; the old one still reads, with one note."""
    import warnings

    from gpuplan import errors
    from gpuplan.errors import RenamedWarning

    w = load_workload(None, {"users": 50, "think_time_s": 20, "prompt_tokens": 6000, "output_tokens": 300})
    assert w.think_time_s == 20
    path = tmp_path / "w.yaml"
    path.write_text("users: 8\nthink_s: 2\npreset: chat\n")
    errors._SAID.discard("think_s")  # (said once a process)
    with warnings.catch_warnings(record=True) as said:
        warnings.simplefilter("always")
        assert load_workload(path).think_time_s == 2
    assert [str(x.message) for x in said if x.category is RenamedWarning] == [
        "the workload field 'think_s' is now 'think_time_s' (the old name still works)"]


def test_step_model_is_the_speed_layers_step_timer_sampled():
    """A pure decode step equals StepTimer.decode_s at the sampled batch sizes (no second set of efficiencies);
    a lone prompt equals StepTimer.prefill_s plus the per-layer kernel floor decode steps also pay."""
    timer = step_timer(S, M, H100)
    sm = sample(timer)
    for batch, context in ((1, 1024), (16, 704), (256, 2304)):  # whole 16-token blocks
        assert sm.time(0, batch, batch * context) == pytest.approx(timer.decode_s(batch, context), rel=1e-9)
    floor = timer.decode_parts(1, 0)["kernel_latency"]
    assert sm.prefill_time(4096) == pytest.approx(timer.prefill_s(4096) + floor, rel=2e-3)


def test_a_decode_only_step_keeps_the_decode_paths_own_work():
    """DeepSeek-R1 FP8 on 8 H200s under SGLang 0.5.12 (InferenceX's setup): at 32 tokens a prompt's GEMMs (the
    tuned Triton MoE at its prompt rate) cost more than a decode step of 32 sequences, and a step of 32 decodes alone
    used to take that larger figure (the closed form's max of the two). It now equals StepTimer.decode_s; a step
    that holds a prompt keeps the larger one."""
    s = scenario_from(dict(model="deepseek-r1", task="infer", engine="sglang", gpu="h200", tp=8, num_gpus=8,
                           engine_version="0.5.12"))
    m, gpu = load_model("deepseek-r1"), load_gpu("h200")
    timer = step_timer(s, m, gpu)
    sm = sample(timer)
    assert timer.prefill_parts(32)["gemm"] > timer.decode_parts(32, 0)["weights"]
    for batch, context in ((1, 1024), (32, 1024), (64, 2048)):
        assert sm.time(0, batch, batch * context) == pytest.approx(timer.decode_s(batch, context), rel=1e-9)
    i = sm.grid_tokens.index(32.0)
    assert sm.dense_s[i] > sm.decode_dense_s[i]


def test_decode_step_by_hand_vllm_v1():
    """Llama-3.1-8B, one sequence of 1,000 tokens, H100, vLLM V1 (overheads.py figures, written out). vLLM packs
    q/k/v and gate/up into one GEMM each (one kernel latency per pack); its decode kernels stream weights and
    KV at the H100's measured 86 % (Vidur's kernel profile); the engine loop adds to the step in 0.11 and hides
    behind it with 0.14's async scheduling."""
    stream, bw, peak, lat = 3350e9 * 0.86, 3350e9 * 0.8, 989.4e12 * 0.801, 3e-6  # CUDA-graph replay: 3 us

    def gemm(rows, k, n, latency=lat, bps=stream):  # compute with the thin-shape terms of speed/gemm.py
        c = 2 * rows * k * n * (1 + 68 / max(rows, 16) + 132 / k + 218 / n) / peak
        w = (rows * k + rows * n + k * n) * 2 / bps
        return (c**3 + w**3) ** (1 / 3) + latency

    shapes = [(4096, 4096, lat), (4096, 1024, 0), (4096, 1024, 0), (4096, 4096, lat),  # q (+k, v), o
              (4096, 14336, lat), (4096, 14336, 0), (14336, 4096, lat)]  # gate (+up), down
    weights = 32 * sum(gemm(1, k, n, latency) for k, n, latency in shapes) + gemm(1, 4096, 128256, 5e-6, bw)
    kv = 1000 * 2 * 8 * 128 * 2 * 32 / stream  # K and V, 8 KV heads x 128, bf16, 32 layers
    floor = (14 - 7) * 32 * lat  # the non-GEMM kernels of each layer
    elementwise = 0.37 * 32 * (60 * 4096 + 15 * 14336) / bw  # fused kernels: 37 % of unfused traffic
    gpu = weights + kv + floor + elementwise  # ~6.3 ms
    host = 0.765e-3 + 19.9e-6  # V1 engine loop: per step + per scheduled sequence
    sync = S.model_copy(update={"engine_version": "0.11.0"})
    assert step_model(sync, M, H100).time(0, 1, 1000) == pytest.approx(gpu + host, rel=1e-9)
    assert step_model(S, M, H100).time(0, 1, 1000) == pytest.approx(gpu, rel=1e-9)  # async: max(gpu, host)


def test_async_scheduling_hides_the_host_until_it_outlasts_the_gpu():
    """From 0.14 the engine loop overlaps the GPU step: a step takes the longer of the two. For Qwen2.5-0.5B,
    3,000 sequences of the host's 19.9 us each (60 ms) outlast the GPU's; 16 (1.1 ms) do not. (Llama-3.1-8B's
    batched GEMMs take ~21 us per token on an H100, more than the host's 19.9 us per sequence.)"""
    small = S.model_copy(update={"model": "qwen2.5-0.5b"})
    m_small = load_model("qwen2.5-0.5b")
    sm = step_model(small, m_small, H100)
    assert sm.async_host and not step_model(S.model_copy(update={"engine_version": "0.13.0"}), M, H100).async_host
    sync = step_model(small.model_copy(update={"engine_version": "0.13.0"}), m_small, H100)

    def host(n):
        return sm.step_host_s + sm.seq_host_s * n

    assert sm.time(0, 16, 16 * 500) == pytest.approx(sync.time(0, 16, 16 * 500) - host(16))  # GPU-bound
    assert sm.time(0, 3000, 3000 * 10) == pytest.approx(host(3000))  # host-bound
    pp = step_model(S.model_copy(update={"pp": 2, "num_gpus": 2}), M, H100)
    assert not pp.async_host  # pipeline parallelism keeps the synchronous loop (0.14.0 release notes)


def test_host_cost_grows_per_scheduled_sequence_and_is_v0_flat():
    v1 = step_model(S, M, H100)
    assert v1.seq_host_s == pytest.approx(19.9e-6) and v1.step_host_s == pytest.approx(0.765e-3)
    v0 = step_model(S.model_copy(update={"engine_version": "0.6.3"}), M, H100)
    assert v0.seq_host_s == 0 and v0.step_host_s == pytest.approx(3e-3)  # the V0 loop: 3 ms per step


def test_mixtral_experts_read_at_full_bandwidth_once_a_batch_touches_enough_bytes():
    """Mixtral-8x7B TP 2: at batch 32 every expert is touched; each expert linear's touched bytes (8 x 4096 x
    28672 / 2 x 2 B = 940 MB for w1+w3) exceed 256 MB, so the grouped kernel streams them at the full rate."""
    mix = load_model("mixtral-8x7b")
    s = scenario_from(dict(model="mixtral-8x7b", task="infer", engine="vllm", gpu="h100-sxm", tp=2, num_gpus=2))
    timer = step_timer(s, mix, H100)
    touched = 8 * (1 - (6 / 8) ** 32)
    stream = 3350e9 * 0.86  # vLLM's decode kernels on an H100 (Vidur's kernel profile)
    experts = 32 * touched * (4096 * 28672 + 14336 * 4096) / 2 * 2 / stream
    dense_only = timer.decode_parts(32, 0)["weights"] - experts
    assert 0 < dense_only < 0.003  # attention, router and lm_head: ~1.6 GB per GPU, well under 3 ms
    small = timer.decode_parts(1, 0)["weights"]  # 2 experts: 235 MB and 117 MB per linear, below 256 MB
    assert small > 32 * 2 * (4096 * 28672 + 14336 * 4096) / 2 * 2 / stream


def test_one_request_alone_gets_prefill_then_decode_steps():
    sm = step_model(S, M, H100)
    out = simulate(sm, Scheduler(kv_blocks=1000), np.array([0.0]), np.array([100]), np.array([11]))
    ttft = sm.time(100, 0, 0, 100 * 50, 1, 1)
    assert out.ttft_s[0] == pytest.approx(ttft + sm.request_s)  # the API server's latency adds to TTFT only
    # 10 more tokens at contexts 100..109 (advanced together at the mid-point context)
    assert out.tpot_s[0] == pytest.approx(sm.time(0, 1, 104.5), rel=1e-3)


def test_v1_before_0_11_pays_its_piecewise_graphs_per_layer_pr20059():
    """V1 before 0.11 ran every layer's attention eagerly between piecewise CUDA graphs (the default until
    v0.11.0's FULL_AND_PIECEWISE): 14.3 us per layer and step (vLLM PR #20059: Qwen2.5-1.5B's 28 layers, median
    TPOT 5.42 ms piecewise against 5.02 ms full). Llama-3.1-8B's 32 layers: 0.458 ms more per step in 0.10.1
    than in 0.11.0 (both synchronous loops); nothing before V1 or from 0.11, nothing for SGLang's loop."""
    from gpuplan import overheads as oh

    per_layer = (5.42e-3 - 5.02e-3) / 28
    assert per_layer == pytest.approx(oh.VLLM_PIECEWISE_GRAPH_LAYER_S, rel=0.01)
    old, new = (step_model(S.model_copy(update={"engine_version": v}), M, H100) for v in ("0.10.1", "0.11.0"))
    assert old.step_host_s - new.step_host_s == pytest.approx(32 * 14.3e-6, rel=1e-9)
    assert old.time(0, 1, 1000) - new.time(0, 1, 1000) == pytest.approx(32 * 14.3e-6, rel=1e-9)
    for v in ("0.7.3", "0.11.0", None):
        assert vllm.piecewise_graph_s(S.model_copy(update={"engine_version": v}), M) == 0.0
    assert vllm.piecewise_graph_s(S.model_copy(update={"engine_version": "0.8.5", "pp": 2, "num_gpus": 2}), M) \
        == pytest.approx(16 * 14.3e-6)
    sg = S.model_copy(update={"engine": "sglang", "engine_version": "0.4.1"})
    assert step_model(sg, M, H100).step_host_s == pytest.approx(oh.SGLANG_STEP_OVERHEAD_S, rel=1e-9)


def test_async_scheduling_admits_a_request_one_step_later_on_a_busy_engine():
    """A request arriving while step N runs joins step N+1 in the synchronous loop, N+2 with async scheduling
    (step N+1 was scheduled when N began): its first token comes one (decode-sized) step later. On an idle
    engine both admit it at once."""
    sync = step_model(S.model_copy(update={"engine_version": "0.13.0"}), M, H100)
    asyn = step_model(S, M, H100)
    arrive, prompt, output = np.array([0.0, 0.05]), np.array([100, 17]), np.array([200, 2])
    late = {}
    for name, sm in (("sync", sync), ("async", asyn)):
        out = simulate(sm, Scheduler(kv_blocks=10_000), arrive, prompt, output)
        late[name] = out.ttft_s[1] - sm.request_s
        alone = simulate(sm, Scheduler(kv_blocks=10_000), np.zeros(1), prompt[1:], output[1:])
        assert alone.ttft_s[0] == pytest.approx(sm.time(17, 0, 0, 17 * 8.5, 1, 1) + sm.request_s)
    step = asyn.time(0, 1, 150)  # a decode step of the first request (~6.3 ms)
    assert late["async"] - late["sync"] == pytest.approx(step, rel=0.2)


def test_vllm_runs_packed_projections_as_one_kernel_and_a_routed_moe_layer_as_six_more():
    """Kernel floors at batch 1 (3 us each under CUDA graphs): Llama's 7 linears are 4 GEMMs in vLLM (qkv, o,
    gate_up, down) beside 7 other kernels; Mixtral's MoE layer adds fused_moe's 6 (topk_softmax, align and its
    fill, two grouped GEMMs, moe_sum) to the attention's 4 GEMM latencies (qkv, o) and the router's."""
    lat = 3e-6
    timer = step_timer(S, M, H100)
    llama = timer.decode_parts(1, 0)
    assert llama["kernel_latency"] == pytest.approx(32 * 7 * lat)
    eager = step_timer(S.model_copy(update={"engine": "transformers"}), M, H100)
    assert timer._packed_followers(M.layers[0]) == {"k_proj", "v_proj", "up_proj"}
    assert eager._packed_followers(M.layers[0]) == frozenset()
    mix = load_model("mixtral-8x7b")
    s = scenario_from(dict(model="mixtral-8x7b", task="infer", engine="vllm", gpu="h100-sxm", tp=2, num_gpus=2))
    assert step_timer(s, mix, H100).decode_parts(1, 0)["kernel_latency"] == pytest.approx(32 * (7 + 6) * lat)


def test_a_client_with_max_concurrency_one_serializes_requests_and_times_from_the_send():
    sm = step_model(S, M, H100)
    n = 5
    out = simulate(sm, Scheduler(kv_blocks=10_000), np.zeros(n), np.full(n, 500), np.full(n, 50), max_concurrency=1)
    alone = simulate(sm, Scheduler(kv_blocks=10_000), np.zeros(1), np.full(1, 500), np.full(1, 50))
    # each request is sent when the previous one finishes, so each sees an idle engine; each waits the API
    # server's serial part (frontend_s) before the engine has it, the rest of request_s after its last token
    assert sm.frontend_s > 0
    assert np.allclose(out.ttft_s, alone.ttft_s[0]) and np.allclose(out.e2e_s, alone.e2e_s[0])
    parallel = sm.request_s - sm.frontend_s
    assert out.duration_s == pytest.approx(n * (alone.e2e_s[0] - parallel) + parallel, rel=1e-6)


def test_without_chunked_prefill_a_prompt_waits_until_it_fits_the_budget_whole():
    # both prompts reach the engine at once (no frontend queue between them: this is the scheduler's rule)
    sm = dataclasses.replace(step_model(S, M, H100), frontend_s=0.0)
    arrive, prompt, output = np.zeros(2), np.array([600, 600]), np.array([2, 2])
    chunked = simulate(sm, Scheduler(kv_blocks=10_000, max_num_batched_tokens=1000), arrive, prompt, output)
    whole = simulate(sm, Scheduler(kv_blocks=10_000, max_num_batched_tokens=1000, chunked_prefill=False), arrive,
                     prompt, output)
    step1 = sm.time(1000, 0, 0, 600 * 300 + 400 * 200, 2, 1)  # 600 + the first 400 of the second
    assert chunked.ttft_s[0] == pytest.approx(step1 + sm.request_s)
    alone = sm.time(600, 0, 0, 600 * 300, 1, 1)
    assert whole.ttft_s[0] == pytest.approx(alone + sm.request_s)  # the second prompt did not fit: next step
    assert whole.ttft_s[1] > alone + sm.request_s


def test_a_pool_of_distinct_prompts_hits_the_prefix_cache_from_the_second_round():
    sm = step_model(S, M, H100)
    n = 6
    out = replay(sm, Scheduler(kv_blocks=10_000), rate_rps=0.001, prompt=np.full(n, 1000), output=np.full(n, 2),
                 distinct_prompts=3, shared_prefix=100)  # requests ~1,000 s apart: each alone
    cold = sm.time(1000, 0, 0, 1000 * 500, 1, 1)
    shared = sm.time(1000 - 96, 0, 0, 904 * (96 + 452), 1, 1)  # the 100-token system prompt: 6 full blocks
    warm = sm.time(8, 0, 0, 8 * (992 + 4), 1, 1)  # a repeated prompt: 62 full blocks cached, 8 tokens computed
    expected = np.array([cold, shared, shared, warm, warm, warm]) + sm.request_s
    assert out.ttft_s == pytest.approx(expected)


def test_chat_preset_has_sharegpts_long_tail_and_its_mean():
    w = load_workload(None, {"preset": "chat"})
    assert w.mean_prompt_tokens == pytest.approx(230, abs=1) and w.mean_output_tokens == pytest.approx(203, abs=1)
    x = sample_lengths(w.prompt_lengths(), 50_000, np.random.default_rng(0))
    assert x.mean() == pytest.approx(230, rel=0.02) and np.percentile(x, 50) < 180 and x.max() == 1024


def test_a_small_pool_preempts_and_still_finishes_everything():
    sm = step_model(S, M, H100)
    n = 40
    out = simulate(sm, Scheduler(kv_blocks=60, max_num_seqs=64), np.zeros(n), np.full(n, 200), np.full(n, 200))
    assert out.completed == n and out.preemptions > 0
    roomy = simulate(sm, Scheduler(kv_blocks=10_000, max_num_seqs=64), np.zeros(n), np.full(n, 200), np.full(n, 200))
    assert roomy.preemptions == 0 and roomy.duration_s < out.duration_s


def test_a_preempted_request_keeps_its_tokens_and_recomputes_them_when_it_resumes():
    """Two requests of 16 + 64 tokens in a 6-block pool: at 48 tokens each the pool is full, the second is
    preempted with 32 tokens generated, resumes when the first finishes (64 steps), recomputes its 48 tokens in
    one step and generates the 32 left: ~96 decode-sized steps, not the ~128 of starting over."""
    sm = step_model(S.model_copy(update={"engine_version": "0.13.0"}), M, H100)
    out = simulate(sm, Scheduler(kv_blocks=6), np.zeros(2), np.array([16, 16]), np.array([64, 64]))
    assert out.preemptions == 1 and out.completed == 2
    steps = (out.e2e_s[1] - sm.request_s) / sm.time(0, 1, 50)
    assert steps == pytest.approx(96, rel=0.03)


def test_vllm_v1_resumes_a_preempted_request_from_the_blocks_its_prefix_cache_still_holds():
    """12 prompts of 2,000 tokens in a pool of 270 blocks (two such requests and a chunk), 512 tokens a step: a
    prompt admitted by its first chunks is preempted as the others grow. Recomputed from its first token each time
    it resumes, the run takes 9.6 s; found again in the prefix cache (vLLM V1: freed blocks keep their hashes until
    the pool hands them out again), 8.9 s, with fewer preemptions."""
    sm = step_model(S, M, H100)
    n = 12
    args = np.zeros(n), np.full(n, 2000), np.full(n, 200)
    again = simulate(sm, Scheduler(kv_blocks=270, max_num_batched_tokens=512), *args)
    kept = simulate(sm, Scheduler(kv_blocks=270, max_num_batched_tokens=512, keeps_preempted=True), *args)
    assert again.completed == kept.completed == n
    assert kept.preemptions < again.preemptions
    assert kept.duration_s == pytest.approx(0.92 * again.duration_s, rel=0.02)


def test_a_preempted_request_whose_blocks_were_handed_out_again_recomputes_them_all():
    """The first of two 16-token prompts grows to 96 tokens in a 6-block pool: it takes every block the second
    left when it was preempted (tail first, then the rest), so the cache holds none of them when the second
    resumes and the run is the recomputing one to the microsecond; a first request that stops at 64 tokens leaves
    the second's first block cached, and the second finishes sooner."""
    sm = step_model(S.model_copy(update={"engine_version": "0.13.0"}), M, H100)
    runs = {(keep, out): simulate(sm, Scheduler(kv_blocks=6, keeps_preempted=keep), np.zeros(2), np.array([16, 16]),
                                  np.array([out, 64]))
            for keep in (False, True) for out in (80, 48)}
    assert all(run.preemptions == 1 for run in runs.values())
    assert np.array_equal(runs[True, 80].e2e_s, runs[False, 80].e2e_s)
    assert runs[True, 48].e2e_s[0] == runs[False, 48].e2e_s[0]
    assert runs[True, 48].e2e_s[1] < runs[False, 48].e2e_s[1]


def test_vllm_keeps_preempted_blocks_only_where_its_prefix_cache_is_on():
    """V1 (0.8+) turns automatic prefix caching on by default; V0 leaves it off."""
    mem = vllm.startup_memory(S, M, H100)
    assert vllm.scheduler_of(S, mem)["keeps_preempted"] is True
    v0 = S.model_copy(update={"engine_version": "0.7.3"})
    assert vllm.scheduler_of(v0, vllm.startup_memory(v0, M, H100))["keeps_preempted"] is False


def test_a_hybrid_models_preempted_request_recomputes_whole():
    """Hybrid models (Mamba or linear-attention layers beside attention) run with the prefix cache off in vLLM
    (:func:`gpuplan.engines.vllm.prefix_caching`), so a preempted request keeps none of its blocks; the same
    release keeps them for a plain transformer."""
    hybrid = scenario_from(dict(model="nemotron-3-nano", task="infer", engine="vllm", gpu="h100-sxm"))
    m = load_model("nemotron-3-nano")
    mem = vllm.startup_memory(hybrid, m, H100)
    assert mem.limits.prefix_caching is False
    assert vllm.scheduler_of(hybrid, mem)["keeps_preempted"] is False
    assert vllm.startup_memory(S, M, H100).limits.prefix_caching is True


def test_from_vllm_0_19_a_waiting_prompt_is_admitted_only_when_it_fits_whole():
    """A 96-token prompt behind a running 64 + 60 request in a 10-block pool, 64 tokens per step: admitted by its
    first chunk it is preempted again and again as the first request grows (vLLM PR #37307's thrash); admitted
    whole it waits and nothing is preempted."""
    sm = step_model(S, M, H100)
    args = np.zeros(2), np.array([64, 96]), np.array([60, 4])
    chunk = simulate(sm, Scheduler(kv_blocks=10, max_num_batched_tokens=64), *args)
    whole = simulate(sm, Scheduler(kv_blocks=10, max_num_batched_tokens=64, reserve_full_sequence=True), *args)
    assert chunk.preemptions > 5 and whole.preemptions == 0 and whole.duration_s < chunk.duration_s
    s19, s18 = (S.model_copy(update={"engine_version": v}) for v in ("0.19.0", "0.18.0"))
    mem = vllm.startup_memory(s19, M, H100)
    assert vllm_scheduler(s19, mem).reserve_full_sequence and not vllm_scheduler(s18, mem).reserve_full_sequence


def test_vllm_v0_schedules_as_its_scheduler_and_block_manager_do():
    """vLLM before 0.8 (V0, ``vllm/core/scheduler.py`` and ``block_manager.py``): below 32,768 tokens of context no
    chunked prefill, and a step that admits prompts runs no decode (``_schedule_default``); a prompt is admitted
    only when its whole sequence fits with 1 % of the pool left free. V1 0.9 mixes chunks and decodes and admits a
    prompt by its first chunk."""
    s6 = S.model_copy(update={"engine_version": "0.6.3", "max_model_len": 8192})
    v0 = vllm_scheduler(s6, vllm.startup_memory(s6, M, H100))
    assert (v0.chunked_prefill, v0.mixed_prefill, v0.reserve_full_sequence) == (False, False, True)
    assert v0.admit_watermark_blocks == int(0.01 * v0.kv_blocks) > 0
    assert v0.max_num_batched_tokens == 8192  # max(max_model_len, 2048)
    s9 = S.model_copy(update={"engine_version": "0.9.2"})
    v1 = vllm_scheduler(s9, vllm.startup_memory(s9, M, H100))
    assert (v1.chunked_prefill, v1.mixed_prefill, v1.reserve_full_sequence, v1.admit_watermark_blocks) == \
        (True, True, False, 0)
    long = S.model_copy(update={"engine_version": "0.6.3", "max_model_len": 65_536})
    assert vllm_scheduler(long, vllm.startup_memory(long, M, H100)).chunked_prefill  # V0's long-context default


def test_v0_prefill_first_stalls_the_running_decode_for_a_step():
    """A 512-token request decoding when a second 2,048-token prompt arrives: under V0's prefill-first step the
    first request's next token waits for the whole prompt's step; V1's mixed step carries the decode beside it.
    The first request's largest inter-token gap is the prompt's step in both, but only V0 delays its finish by a
    prefill step that produced none of its tokens."""
    sm = step_model(S.model_copy(update={"engine_version": "0.6.3"}), M, H100)
    args = np.array([0.0, 0.05]), np.array([512, 2048]), np.array([200, 4])
    mixed = simulate(sm, Scheduler(kv_blocks=10_000, max_num_batched_tokens=8192), *args)
    first = simulate(sm, Scheduler(kv_blocks=10_000, max_num_batched_tokens=8192, mixed_prefill=False,
                                   chunked_prefill=False), *args)
    prefill = sm.prefill_time(2048)
    assert first.e2e_s[0] - mixed.e2e_s[0] == pytest.approx(sm.time(0, 1, 600), rel=0.5)
    assert first.e2e_s[0] > mixed.e2e_s[0] and first.ttft_s[1] < mixed.ttft_s[1] + prefill


def test_v0_admits_a_prompt_only_when_its_whole_sequence_and_the_watermark_fit():
    """Requests of 64 + 60 and 96 + 4 tokens, 64 tokens a step, in an 11-block pool: after the first prompt's
    step 6 blocks are free, exactly the second prompt's. Without a watermark it is admitted, and preempted when the
    first request grows; with V0's watermark (1 block here) it waits for the first to finish, and nothing is
    preempted. In a pool of 100 blocks both run at once."""
    sm = step_model(S, M, H100)
    args = np.zeros(2), np.array([64, 96]), np.array([60, 4])

    def run(blocks: int, mark: int):
        eng = Scheduler(kv_blocks=blocks, max_num_batched_tokens=64, reserve_full_sequence=True,
                        admit_watermark_blocks=mark)
        return simulate(sm, eng, *args)

    bare, marked, roomy = run(11, 0), run(11, 1), run(100, 1)
    assert bare.preemptions == 1 and bare.ttft_s[1] < bare.e2e_s[0] / 5
    assert marked.preemptions == roomy.preemptions == 0
    assert marked.ttft_s[1] > marked.e2e_s[0] - 0.01 and roomy.ttft_s[1] < roomy.e2e_s[0] / 5


def test_latency_grows_with_rate():
    sm = step_model(S, M, H100)
    rng = np.random.default_rng(0)
    eng = Scheduler(kv_blocks=29_000, max_num_seqs=1024, max_num_batched_tokens=8192)
    lo = simulate(sm, eng, arrivals(1, 300, 1.0, rng), np.full(300, 1000), np.full(300, 200))
    hi = simulate(sm, eng, arrivals(60, 300, 1.0, rng), np.full(300, 1000), np.full(300, 200))
    assert np.percentile(hi.tpot_s, 95) > np.percentile(lo.tpot_s, 95)
    assert hi.output_tokens_per_s > 10 * lo.output_tokens_per_s


def test_traces_in_vllm_bench_formats(tmp_path):
    p = tmp_path / "run.json"
    p.write_text(json.dumps({"input_lens": [10, 20], "output_lens": [5, 6], "mean_ttft_ms": 1, "mean_tpot_ms": 1}))
    assert read_trace(p)[:2] == ([10, 20], [5, 6])
    q = tmp_path / "trace.jsonl"
    q.write_text('{"timestamp": 1000, "input_length": 7, "output_length": 3}\n'
                 '{"timestamp": 3000, "input_length": 9, "output_length": 4}\n')
    assert read_trace(q)[:3] == ([7, 9], [3, 4], [0.0, 2.0])
    g = tmp_path / "sharegpt.json"
    g.write_text(json.dumps([{"conversations": [{"from": "human", "value": "x" * 40},
                                                 {"from": "gpt", "value": "y" * 80}]}]))
    assert read_trace(g)[:2] == ([10], [20])


def test_calibration_recovers_a_uniform_slowdown(tmp_path):
    sm = step_model(S, M, H100)
    eng = Scheduler(kv_blocks=29_000, max_num_seqs=256, max_num_batched_tokens=8192)
    runs = []
    for rate in (1.0, 4.0):
        from dataclasses import replace

        from gpuplan.serving.calibrate import predict
        from gpuplan.serving.steptime import Calibration

        fake = read_results(_vllm_result(tmp_path, rate, 1, 1))[0]
        slow = replace(sm, calibration=Calibration(compute=1.5, memory=1.3))
        h = predict(slow, eng, fake)  # the run as measured: the mean over all its requests
        runs.append(replace(fake, mean_ttft_s=(h.fit[0] + h.check[0]) / 2, mean_tpot_s=(h.fit[1] + h.check[1]) / 2))
    cal, rows, notes = fit_corrections(sm, eng, runs)
    assert cal.compute == pytest.approx(1.5, rel=0.15) and cal.memory == pytest.approx(1.3, rel=0.1)
    assert len(rows) == 2 and not notes
    assert all(abs(r["tpot_err_after_pct"]) < abs(r["tpot_err_before_pct"]) for r in rows)
    assert all(abs(r["ttft_err_after_pct"]) < abs(r["ttft_err_before_pct"]) for r in rows)


def _vllm_result(tmp_path, rate, ttft_ms, tpot_ms):
    p = tmp_path / f"r{rate}.json"
    p.write_text(json.dumps({"request_rate": rate, "completed": 60, "total_input_tokens": 60 * 500,
                             "total_output_tokens": 60 * 100, "mean_ttft_ms": ttft_ms, "mean_tpot_ms": tpot_ms,
                             "output_throughput": 100.0}))
    return p


def test_capacity_cli_json(tmp_path):
    from typer.testing import CliRunner

    from gpuplan.cli import app

    wl = tmp_path / "w.yaml"
    wl.write_text("rate_rps: 2\nprompt: {mean: 1000}\noutput: {mean: 100}\nslo: {ttft_s: 2, tpot_s: 0.1}\n"
                  "num_requests: 60\n")
    r = CliRunner().invoke(app, ["capacity", str(wl), "--model", "llama-3.1-8b", "--gpus", "l40s", "--max-gpus", "1",
                                 "--json"])
    assert r.exit_code == 0, r.output
    plan = json.loads(r.output)["plans"][0]
    assert plan["gpu_id"] == "nvidia-l40s" and plan["max_rate_rps"] > 0.5
    assert plan["usd_per_million_output"] == pytest.approx(
        plan["usd_per_hour"] / plan["replicas_per_instance"] / 3600 / (plan["max_rate_rps"] * 100) * 1e6)
    assert plan["streaming_tokens_per_s_per_user"] > 1 / plan["tpot_s"]  # the stalls of others' prompts aside
    # the same listing in every format; closed loop with --users
    for fmt in ("plain", "csv", "markdown", "table"):
        r = CliRunner().invoke(app, ["capacity", str(wl), "--model", "llama-3.1-8b", "--gpus", "l40s", "--max-gpus",
                                     "1", "--format", fmt], env={"COLUMNS": "80"})
        assert r.exit_code == 0 and "1x l40s tp1" in r.output, r.output
        if fmt == "table":
            assert max(len(line) for line in r.output.splitlines()) <= 80
    wl.write_text("prompt: {mean: 1000}\noutput: {mean: 100}\nslo: {ttft_s: 2, tpot_s: 0.1}\nnum_requests: 60\n")
    r = CliRunner().invoke(app, ["capacity", str(wl), "--model", "llama-3.1-8b", "--gpus", "l40s", "--max-gpus", "1",
                                 "--users", "8", "--format", "json"])
    plan = json.loads(r.output)["plans"][0]
    assert plan["max_users"] == 8 and plan["replicas_for_target"] == 1 and plan["usd_per_hour_for_target"]
    # review 3 (Q2): a month of the service, 8,760 h / 12 = 730 h of the whole instances
    assert plan["usd_per_month_for_target"] == pytest.approx(730 * plan["usd_per_hour_for_target"], rel=1e-12)
    # review 3 (Q2): think 0 s is a stress test, said beside it; a think time given is said alone
    for think, said in ((None, True), ("10", False)):
        r = CliRunner().invoke(app, ["capacity", str(wl), "--model", "llama-3.1-8b", "--gpus", "l40s", "--max-gpus",
                                     "1", "--users", "8", "--format", "plain",
                                     *(("--think-time", think) if think else ())])
        head = " ".join(r.output.split("SLO p95")[0].split())  # the workload line, up to its SLOs
        assert r.exit_code == 0 and head.endswith(f"8 users (closed loop, think {think or 0} s"
                                                  + (": each user sends the next request the moment a reply ends, a "
                                                     "stress test; people chatting pause between turns: try "
                                                     "--think-time 10; with fixed lengths too the users stay in "
                                                     "lockstep, every prompt prefilled at once: --length-spread 0.5 "
                                                     "draws them);" if said else ");")), head
    drawn = CliRunner().invoke(app, ["capacity", "--model", "llama-3.1-8b", "--gpus", "l40s", "--max-gpus", "1",
                                     "--users", "8", "--prompt-tokens", "1000", "--output-tokens", "100",
                                     "--format", "plain"])  # lengths drawn (spread 0.5 by default): no lockstep
    assert drawn.exit_code == 0 and "a stress test" in drawn.output and "lockstep" not in drawn.output
    # a think time with a rate did nothing (only closed-loop users think): refused, as the scenario's think_time_s is
    r = CliRunner().invoke(app, ["capacity", "--model", "llama-3.1-8b", "--rate", "5", "--think-time", "10",
                                 "--preset", "chat", "--gpus", "l40s"])
    assert isinstance(r.exception, GpuplanError) and str(r.exception) == (
        "a think time is the pause of closed-loop users between a reply and their next request: give users too, or "
        "drop it")
    r = CliRunner().invoke(app, ["capacity", str(wl), "--model", "llama-3.1-8b", "--users", "8", "--rate", "2"])
    assert isinstance(r.exception, GpuplanError) and str(r.exception) == (
        "give users (a closed loop) or rate_rps (an open loop), not both")


def _single_server(d: float):
    """One request at a time, each a single step of ``d`` seconds: a deterministic single server."""
    from gpuplan.serving.steptime import StepModel

    sm = StepModel(grid_tokens=(1.0, 1e9), dense_s=(d, d), lm_head_s=(0.0, 0.0), attention_s_per_pair=0.0,
                   kv_s_per_token=0.0, step_host_s=0.0, seq_host_s=0.0)
    return sm, Scheduler(kv_blocks=10**6, max_num_seqs=1)


def _md1_wait_cdf(lam: float, d: float, t: float) -> float:
    """P(wait <= t) in an M/D/1 queue (Erlang 1909; Gross & Harris, Fundamentals of Queueing Theory, 4th ed.,
    eq. 5.61): (1 - rho) sum_{k=0}^{floor(t/d)} (lam (k d - t))^k / k! exp(-lam (k d - t))."""
    import math

    return (1 - lam * d) * sum((lam * (k * d - t)) ** k / math.factorial(k) * math.exp(-lam * (k * d - t))
                               for k in range(int(t / d) + 1))


def test_an_md1_queue_waits_as_pollaczek_khinchine_says():
    """Poisson arrivals to a deterministic single server (10 ms per request): the mean wait of the steady window
    is Pollaczek-Khinchine's rho d / (2 (1 - rho)): 10 ms at 50 % load, 20 ms at 80 %."""
    from gpuplan.serving.capacity import evaluate

    d = 0.01
    sm, eng = _single_server(d)
    w = load_workload(None, {"prompt_tokens": 100, "output_tokens": 1, "num_requests": 20_000})
    for rho in (0.5, 0.8):
        point = evaluate(sm, eng, w, rho / d)
        out = simulate(sm, eng, arrivals(rho / d, 20_000, 1.0, np.random.default_rng(0)), np.full(20_000, 100),
                       np.full(20_000, 1))
        assert (out.ttft_s[4000:].mean() - d) == pytest.approx(rho * d / (2 * (1 - rho)), rel=0.10)
        assert point.stable and point.requests_per_s == pytest.approx(rho / d, rel=0.03)


def test_capacity_of_an_md1_queue_is_its_closed_form():
    """The highest rate whose p95 time to first token (wait + 10 ms service) is within 80 ms: Erlang's M/D/1
    wait distribution puts it at 81.0 req/s (solved below); with no latency target, the stable limit 1/d =
    100 req/s. gpuplan's bisection on its simulation: within 10 % of both, and never above the stable limit."""
    from gpuplan.serving.capacity import max_rate

    d, target = 0.01, 0.08
    sm, eng = _single_server(d)
    lo, hi = 0.0, 1 / d
    for _ in range(60):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if _md1_wait_cdf(mid, d, target - d) >= 0.95 else (lo, mid)
    assert lo == pytest.approx(81.0, abs=0.05)
    w = load_workload(None, {"prompt_tokens": 100, "output_tokens": 1, "num_requests": 4000, "ttft_s": target})
    assert max_rate(sm, eng, w, 1000)[0] == pytest.approx(lo, rel=0.10)
    loose = load_workload(None, {"prompt_tokens": 100, "output_tokens": 1, "num_requests": 4000, "ttft_s": 100})
    rate = max_rate(sm, eng, loose, 1000)[0]
    assert 0.9 / d <= rate <= 1 / d


def test_an_overloaded_queue_is_no_steady_state_however_good_its_finite_run_looks():
    """At 1.5x a single server's capacity the queue grows by a third of the requests sent: refused, even with
    a latency target loose enough for the whole finite run."""
    from gpuplan.serving.capacity import evaluate

    sm, eng = _single_server(0.01)
    w = load_workload(None, {"prompt_tokens": 100, "output_tokens": 1, "num_requests": 600, "ttft_s": 1000})
    point = evaluate(sm, eng, w, 150)
    assert point.queue_growth > 0.25 * 0.7 * 600 * 0.6 and not point.stable and not point.meets_slo


def test_closed_loop_users_take_turns_on_a_single_server():
    """N users with no think time on a deterministic single server: each request waits for the other N - 1,
    so every latency is N d and the server completes 1/d requests/s; one user thinking 90 ms between 10 ms
    requests sends 1/(d + think) requests/s on average."""
    from gpuplan.serving.capacity import evaluate_users

    d = 0.01
    sm, eng = _single_server(d)
    w = load_workload(None, {"prompt_tokens": 100, "output_tokens": 1, "num_requests": 400})
    point = evaluate_users(sm, eng, w, 5)
    assert point.ttft_s == pytest.approx(5 * d) and point.requests_per_s == pytest.approx(1 / d, rel=0.01)
    thinking = evaluate_users(sm, eng, load_workload(None, {"prompt_tokens": 100, "output_tokens": 1,
                                                            "num_requests": 4000}), 1, think_s=0.09)
    assert thinking.requests_per_s == pytest.approx(1 / 0.1, rel=0.05) and thinking.ttft_s == pytest.approx(d)


def test_a_tensor_parallel_group_is_priced_on_one_instance_that_holds_it():
    """A tp4 group never rides on four rented 1-GPU instances: its offer names an instance of 4 GPUs or more,
    and its $/h is that instance's."""
    from gpuplan.market.choice import matching
    from gpuplan.market.store import load_offers
    from gpuplan.plan.capacity import cheapest_offer

    s = scenario_from(dict(model="llama-3.1-8b", task="infer", engine="vllm", gpu="h100-sxm", tp=4, num_gpus=4))
    offers = load_offers(())
    per_hour, label, groups = cheapest_offer(s, offers, H100.id)
    size = int(label.split("x ")[0].split()[-1])
    assert size >= 4 and groups == size // 4
    cheapest = min(o.usd_per_gpu_hour for o in matching(offers, s, H100.id))
    assert per_hour >= 4 * cheapest - 1e-9


def test_capacity_with_sglang_uses_its_pool_and_scheduler_limits():
    """`capacity --engine sglang`: SGLang's token pool (the function estimate shows) and its chunked_prefill_size
    and max_running_requests run the same simulation; the KV tokens are the pool's."""
    from gpuplan import estimate
    from gpuplan.plan.capacity import capacity

    w = load_workload(None, {"rate_rps": 2, "prompt_tokens": 1000, "output_tokens": 100, "ttft_s": 2,
                             "tpot_s": 0.1, "num_requests": 60})
    s = scenario_from(dict(model="llama-3.1-8b", task="infer", engine="sglang", max_model_len=1100))
    plan = capacity(s, M, w, gpu_ids=(H100.id,), max_gpus=1)[0]
    r = estimate(dict(model="llama-3.1-8b", task="infer", engine="sglang", gpu="h100-sxm", max_model_len=1100,
                      prompt_tokens=1000, output_tokens=100), advise=False)
    assert plan.engine == "sglang" and plan.kv_tokens == r.memory.max_context_tokens
    assert plan.max_concurrency == r.memory.max_concurrency and plan.max_rate_rps > 2


def test_capacity_refuses_what_it_cannot_simulate():
    """A card the search cannot simulate is refused: asked for AMD ones alone (then NVIDIA only) it said
    "no setup meets the SLOs" with no SLO set; a Mac's GPU, which vLLM does not run on, is refused now. OPT-6.7B
    learns 2,048 positions: a workload of 3,000 + 400 tokens cannot run on it (estimate refuses it), and capacity
    ranked it at 2.6 req/s with max_model_len cut to 2,048."""
    import gpuplan

    with pytest.raises(GpuplanError, match=r"simulates none of the cards named \(capacity times steps from a "
                                           r"card's 16-bit matrix rate, and M4 Max .* lists none|no Metal backend"):
        gpuplan.capacity("qwen3-8b", rate_rps=2, prompt_tokens=3000, output_tokens=400, gpus=["apple-m4-max"])
    with pytest.raises(GpuplanError, match=r"learns 2,048 positions .* up to 5,100 tokens"):  # 1.5 x 3,400
        gpuplan.capacity("opt-6.7b", rate_rps=1, prompt_tokens=3000, output_tokens=400, gpus=["h100"], top=1)
    fits = gpuplan.capacity("opt-6.7b", rate_rps=1, prompt_tokens=1000, output_tokens=360, gpus=["h100", "mi300x"],
                            top=1)  # up to 1,500 + 540 tokens
    assert fits.deployments and fits.deployments[0].max_rate_rps > 1


def test_capacity_rows_agree_with_themselves():
    """A row's output tokens/s is its steady request rate x the mean output (an engine that keeps up completes
    what arrives), and its $ per million output tokens is its $/h over those tokens: the row said 6.51 req/s x
    200 tokens but 1,085 output tokens/s (the simulated window's count while the queue filled)."""
    import gpuplan

    report = gpuplan.capacity("qwen3-8b", rate_rps=2, prompt_tokens=1000, output_tokens=200, gpus=["l40s", "h100"],
                              top=2)
    assert report.deployments
    for p in report.deployments:
        assert p.output_tokens_per_s == pytest.approx(p.max_rate_rps * 200)
        per_s = p.usd_per_hour / p.replicas_per_instance / 3600
        assert p.usd_per_million_output == pytest.approx(per_s / p.output_tokens_per_s * 1e6)


def test_capacity_refuses_a_prefix_longer_than_the_prompt_and_sglang_int8_kv():
    """estimate refuses a shared prefix not below the prompt and an int8 KV cache on SGLang; capacity took both
    (the prefix cut to the prompt, int8 priced as SGLang cannot run it)."""
    import gpuplan

    with pytest.raises(GpuplanError, match=r"shared_prefix_tokens \(200\) must be below the mean prompt"):
        gpuplan.capacity("qwen3-8b", rate_rps=1, prompt_tokens=100, output_tokens=10, shared_prefix_tokens=200,
                         gpus=["l4"])
    with pytest.raises(GpuplanError, match="SGLang's KV cache is 16-bit or fp8"):
        gpuplan.capacity("qwen3-8b", rate_rps=1, prompt_tokens=100, output_tokens=10, engine="sglang",
                         kv_cache_dtype="int8", gpus=["l4"])


def test_capacity_cli_offline_job(tmp_path):
    """capacity --batch: one sentence for a second load or a plot; the job's time and cost in the JSON rows."""
    from typer.testing import CliRunner

    from gpuplan.cli import app

    base = ["capacity", "--model", "qwen2.5-0.5b", "--batch", "500", "--prompt-tokens", "200", "--output-tokens", "50",
            "--gpus", "l40s", "--max-gpus", "1"]
    r = CliRunner().invoke(app, [*base, "--rate", "2"])
    assert isinstance(r.exception, GpuplanError) and str(r.exception) == (
        "batch is an offline job, a load of its own: give it without users or rate_rps")
    r = CliRunner().invoke(app, [*base, "--plot", str(tmp_path / "c.png")])
    assert isinstance(r.exception, GpuplanError) and "no rate to draw" in str(r.exception)
    assert not (tmp_path / "c.png").exists()
    r = CliRunner().invoke(app, [*base, "--json"])
    assert r.exit_code == 0, r.output
    (plan,) = json.loads(r.output)["plans"]
    assert plan["job_peak_running"] <= 500 and plan["job_s"] > 0
    assert plan["usd_per_job"] == pytest.approx(plan["usd_per_hour"] / plan["replicas_per_instance"]
                                                * plan["job_s"] / 3600)
    r = CliRunner().invoke(app, [*base, "--format", "plain"])
    assert r.exit_code == 0 and "an offline job of 500 requests queued at once" in r.output and "$ job" in r.output
