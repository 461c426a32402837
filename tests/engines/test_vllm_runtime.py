"""vLLM startup memory, one rule per test, with the arithmetic written out (engines/vllm.py)."""

import math

import pytest

from gpuplan import estimate
from gpuplan import overheads as oh
from gpuplan.engines import vllm
from gpuplan.errors import GpuplanError
from gpuplan.hardware import load_gpu
from gpuplan.model.catalog import load_model
from gpuplan.scenario import scenario_from

GIB = 2**30
H100 = load_gpu("h100-sxm")


def sc(**kw):
    return scenario_from({"model": "llama-3.1-8b", "task": "infer", "engine": "vllm", "gpu": "h100-sxm", **kw})


def test_pool_is_budget_less_weights_peak_and_non_torch():
    # vLLM 0.19 on an H100 at 0.95: requested = ceil(79.19 GiB x 0.95); the peak is the sampler's
    # 0.133 GiB + 14.37 B x 1,024 sequences x 128,256 vocab = 1.89 GiB (> the 8,192-token forward); non-torch
    # 0.25 GiB.
    s = sc(engine_version="0.19.0", gpu_memory_utilization=0.95, max_model_len=8192)
    mem = vllm.startup_memory(s, load_model("llama-3.1-8b"), H100)
    requested = math.ceil((H100.usable_gib - 0.41) * GIB * 0.95)
    sampler = 0.133 * GIB + 14.37 * 1024 * 128_256
    assert mem.requested == requested and mem.activation == pytest.approx(sampler)
    assert mem.kv_pool == pytest.approx(requested - mem.weights - sampler - 0.25 * GIB)
    assert mem.kv_pool / GIB == pytest.approx(58.11, rel=0.01)  # llm-d-planner's vLLM 0.19 log
    # 128 KiB per token (32 layers x 8 KV heads x 128 x 2 x 2 B): blocks of 16 tokens = 2 MiB
    assert mem.num_blocks == int(mem.kv_pool // (16 * 131_072))
    assert mem.kv_tokens == int(mem.num_blocks / 512 * 8192)  # 8,192 tokens take 512 blocks


@pytest.mark.parametrize("version,gpu,entry,expected", [
    ("0.33.0", "h100-sxm", "serve", (8192, 1024)),
    ("0.33.0", "h100-sxm", "offline", (16_384, 1024)),
    ("0.33.0", "nvidia-a100-sxm4-80gb", "serve", (2048, 256)),  # A100 excluded by name (vLLM PR #17885)
    ("0.33.0", "l40s", "offline", (8192, 256)),
    ("0.33.0", "b200", "serve", (16_384, 1024)),  # >= 160 GiB
    ("0.8.4", "h100-sxm", "serve", (2048, 256)),  # before the per-GPU tiers
])
def test_scheduler_defaults_by_release_gpu_and_entry_point(version, gpu, entry, expected):
    g = load_gpu(gpu)
    s = sc(engine_version=version, entry_point=entry, gpu=g.id, max_model_len=8192)
    lim = vllm.scheduler_limits(s, load_model("llama-3.1-8b"), g)
    assert (lim.max_num_batched_tokens, lim.max_num_seqs) == expected


def test_v0_without_chunked_prefill_profiles_the_whole_context():
    m = load_model("llama-3.1-8b")
    lim = vllm.scheduler_limits(sc(engine_version="0.6.5", max_model_len=16_384), m, H100)
    assert (lim.max_num_batched_tokens, lim.max_num_seqs, lim.chunked_prefill) == (16_384, 256, False)
    mem = vllm.startup_memory(sc(engine_version="0.6.5", max_model_len=16_384), m, H100)
    # V0 from 0.6.5: the larger of the forward of 16,384 tokens and the driver's sampler over 256 rows
    fwd, sampler = vllm.forward_peak(m, 16_384, 1), oh.VLLM_SAMPLER_EARLY_BYTES * 256 * 128_256
    assert fwd > sampler and mem.activation == pytest.approx(fwd)
    early = vllm.startup_memory(sc(engine_version="0.6.4", max_model_len=16_384), m, H100)
    # before 0.6.5: the forward plus fp32 logits of 256 rows
    assert early.activation == pytest.approx(vllm.forward_peak(m, 16_384, 1, oh.VLLM_V0_EARLY_FWD_HIDDEN_BYTES)
                                             + 256 * 128_256 * 4)


def test_v1_up_to_0_16_sampler_peak_scales_with_sampled_rows_times_vocab():
    """llm-d-planner's 0.16 H100 table: Llama-3.1-8B peak 4.76 GiB at 8,192 tokens and 1,024 sequences. V1's
    dummy run hands the sampler one row per request, so per row: 4.76 GiB / (1,024 x 128,256) = 38.9 B."""
    m = load_model("llama-3.1-8b")
    mem = vllm.startup_memory(sc(engine_version="0.16.0", max_model_len=8192), m, H100)
    assert mem.activation == pytest.approx(38.88 * 1024 * 128_256, rel=1e-3)
    assert mem.activation / GIB == pytest.approx(4.76, rel=0.01)
    # fewer batched tokens than sequences: only that many rows (2,048 tokens -> 1,024 rows still; 512 -> 512)
    small = vllm.startup_memory(sc(engine_version="0.16.0", max_model_len=8192, max_num_batched_tokens=512), m, H100)
    assert small.sampler_peak == pytest.approx(38.88 * 512 * 128_256, rel=1e-3)


def test_gpt_oss_120b_at_1024_batched_tokens_keeps_the_sampler_peak_vllm27508():
    """vllm#27508 (H100, vLLM 0.11.0: its gpu_worker.py:298 / core.py:708 lines are 0.11.0's, as in vllm#26612):
    `--gpu-memory-utilization 0.95 --max-num-batched-tokens 1024` left 1.71 GiB. Budget ceil(79.19 x 0.95) =
    75.23 GiB. The sampler keeps its 1,024 rows: 38.9 B x 1,024 x 201,088 = 7.46 GiB, as at 8,192 tokens (the
    per-token reading, 0.93 GiB, would leave ~8 GiB). 0.11.0's wheel had no triton_kernels (vLLM PR #27370 added
    the dependency for 0.11.1), so its experts are Marlin's 65.97 GiB: 75.23 - 65.97 - 7.46 - 0.13 = 1.67 GiB
    (-2 %); from 0.11.1 the Triton layout (64.38 GiB) leaves 3.3 GiB."""
    m = load_model("gpt-oss-120b")
    for version, low, high in (("0.10.2", 1.55, 1.9), ("0.11.0", 1.55, 1.9), ("0.11.1", 3.0, 3.5)):
        s = scenario_from(dict(model="gpt-oss-120b", task="infer", engine="vllm", gpu="h100-sxm",
                               engine_version=version, gpu_memory_utilization=0.95, max_num_batched_tokens=1024))
        mem = vllm.startup_memory(s, m, H100)
        assert mem.sampler_peak / GIB == pytest.approx(7.46, rel=0.01)
        assert low < mem.kv_pool / GIB < high


def test_v1_0_8_logits_cover_every_batched_token_pr17122():
    """vLLM PR #17122 (0.8.4, Llama-3.1-8B, one L40S, offline LLM, max_model_len 32,768) logged 158,656 KV
    tokens; 0.8's profiling run took fp32 logits of all 8,192 batched tokens: 4.86 B x 8,192 x 128,256 =
    4.76 GiB. The per-row reading (256 rows, 1.19 GiB) would give ~195,000 tokens (+23 %)."""
    s = sc(engine_version="0.8.4", gpu="l40s", entry_point="offline", max_model_len=32_768)
    mem = vllm.startup_memory(s, load_model("llama-3.1-8b"), load_gpu("l40s"))
    assert mem.sampler_peak == pytest.approx(4.86 * 8192 * 128_256)
    assert mem.kv_tokens == pytest.approx(158_656, rel=0.06)


def test_v0_before_0_6_5_on_an_rtx_3090_vllm10517():
    """vllm#10517 (vLLM V0, Nov 2024, RTX 3090 23.58 GiB, Llama-3.1-8B, 0.9): at max-model-len 20,000 the
    profile took peak_torch_memory 17.06 GiB (weights 14.99), non_torch 0.35 GiB, kv 3.81 GiB (calibration);
    at 29,000: peak 17.98, kv 2.89 GiB, 1,478 blocks = 23,648 tokens (the check). By hand at 29,000 tokens:
    forward 29,000 x (6 x 14,336 + 4.6 x 4,096) = 3.04e9 B = 2.83 GiB, logits 256 x 128,256 x 4 = 0.12 GiB:
    peak 2.95 GiB above the weights (logged 2.99)."""
    g = load_gpu("rtx-3090")
    m = load_model("llama-3.1-8b")
    s = sc(engine_version="0.6.4", gpu=g.id, gpu_memory_utilization=0.9, max_model_len=29_000)
    mem = vllm.startup_memory(s, m, g, total_gib=23.58)
    assert mem.non_torch / GIB == 0.35
    assert mem.forward_peak == pytest.approx(29_000 * (6 * 14_336 + 4.6 * 4096))
    assert mem.activation / GIB == pytest.approx(17.98 - 14.99, abs=0.06)
    assert mem.kv_pool / GIB == pytest.approx(2.89, rel=0.03)
    assert mem.num_blocks == pytest.approx(1478, rel=0.03)


def test_v0_from_0_7_tp2_pool_is_the_driver_ranks_vllm13061():
    """vllm#13061 (0.7.2, 2x RTX 4090, R1-Distill-Qwen-14B, TP 2, 0.98): a worker rank logged non_torch 0.25 GiB,
    activation 0.19 GiB and 8.69 GiB of KV cache; vLLM printed 81,536 tokens (96 KiB each: 7.46 GiB), the
    driver rank's, which also runs the profiling batch's sampler (max_num_seqs x vocab rows; V0 keeps the
    smallest rank's blocks). gpuplan: the forward 0.196 GiB, the worker rank's pool +3.5 % on 8.69 GiB and the
    driver's +4.3 % on 7.46 GiB (weights 0.19 GiB light, non-torch 0.16 GiB from PR #12126's H100 log against the
    0.25 logged)."""
    g = load_gpu("rtx-4090")
    s = scenario_from(dict(model="deepseek-r1-distill-qwen-14b", task="infer", engine="vllm", gpu=g.id,
                           engine_version="0.7.2", gpu_memory_utilization=0.98, tp=2, num_gpus=2))
    mem = vllm.startup_memory(s, load_model("deepseek-r1-distill-qwen-14b"), g)
    assert mem.non_torch / GIB == 0.16
    assert mem.forward_peak / GIB == pytest.approx(0.19, abs=0.01)
    worker_rank = mem.kv_pool + mem.activation - mem.forward_peak
    assert worker_rank / GIB == pytest.approx(8.69, rel=0.04)
    assert mem.kv_pool / GIB == pytest.approx(81_536 * 96 / 2**20, rel=0.05)


def test_mla_latent_is_replicated_and_pipeline_stages_size_the_pool_pr20665():
    """vLLM PR #20665: DeepSeek-V2-Lite on L4s, TP 2 x PP 2, max-model-len 1,024: rank 0 12.13 GiB, 807,792
    tokens. MLA keeps (512 + 64) x 2 B = 1,152 B per token and layer on every TP rank; the first stage holds 14
    of 27 layers: 12.13 GiB / (14 x 1,152 B) = 807,552 tokens, the log's count within 0.03 %."""
    from pathlib import Path

    path = str(Path(__file__).resolve().parents[2] / "bench/models/DeepSeek-V2-Lite.json")
    s = scenario_from(dict(model=path, task="infer", engine="vllm", gpu="nvidia-l4", engine_version="0.9.2",
                           max_model_len=1024, enforce_eager=True, tp=2, pp=2, num_gpus=4))
    from gpuplan.model.catalog import load_model as load

    m = load(path)
    first = vllm.stages(m, 2)[0]
    assert len(first.layers) == 14
    lim = vllm.scheduler_limits(s, m, load_gpu("nvidia-l4"))
    page, per_request = vllm.kv_geometry(s, m, first, lim)
    assert page == 16 * 14 * 1152 and per_request == 1024 // 16
    mem = vllm.startup_memory(s, m, load_gpu("nvidia-l4"))
    assert mem.kv_tokens == pytest.approx(807_792, rel=0.06)
    assert mem.max_concurrency == pytest.approx(788.86, rel=0.06)


def test_cuda_graph_estimate_comes_out_of_the_budget_from_0_21_only():
    m = load_model("llama-3.1-8b")
    before = vllm.startup_memory(sc(engine_version="0.20.0", max_model_len=8192), m, H100)
    after = vllm.startup_memory(sc(engine_version="0.21.0", max_model_len=8192), m, H100)
    eager = vllm.startup_memory(sc(engine_version="0.21.0", max_model_len=8192, enforce_eager=True), m, H100)
    assert before.cuda_graphs == 0 and eager.cuda_graphs == 0 and after.cuda_graphs > 0
    assert before.kv_pool - after.kv_pool == pytest.approx(after.cuda_graphs)
    # capture sizes up to min(2 x 1,024, 512): 1, 2, 4, 8..248 by 8, 256..512 by 16 = 51 sizes
    assert len(vllm.capture_sizes(1024, H100)) == 51


def test_non_torch_memory_by_release_tp_and_pp():
    m = load_model("llama-3.1-8b")
    nt = {key: vllm.rules(sc(engine_version=v, tp=tp, pp=pp, num_gpus=tp * pp)).non_torch_gib
          for key, (v, tp, pp) in {"v0": ("0.6.5", 1, 1), "v0tp2": ("0.6.5", 2, 1), "v0.6.4": ("0.6.4", 1, 1),
                                   "v0.7": ("0.7.2", 2, 1), "early": ("0.16.0", 1, 1),
                                   "tp1": ("0.19.0", 1, 1), "tp2": ("0.19.0", 2, 1), "pp2": ("0.19.0", 1, 2)}.items()}
    assert nt == {"v0": 1.79, "v0tp2": 3.58, "v0.6.4": 0.35, "v0.7": 0.16, "early": 0.13, "tp1": 0.25,
                  "tp2": pytest.approx(2.07), "pp2": 0.07}
    assert m.num_layers == 32


def test_pipeline_stages_split_layers_and_hold_embedding_or_head():
    m = load_model("llama-3.1-8b")
    st = vllm.stages(m, 3)  # 32 = 10 + 11 + 11? vLLM gives the remainder to the stages before the last
    assert [len(x.layers) for x in st] == [11, 11, 10]
    s = sc(pp=2, num_gpus=2)
    first, last = (vllm.stage_weights(s, m, x, H100) for x in vllm.stages(m, 2))
    emb = 128_256 * 4096 * 2
    assert first - last == pytest.approx(emb - emb - 4096 * 2)  # embedding vs untied lm_head + final norm


def test_mxfp4_experts_are_padded_for_marlin_on_ampere():
    m = load_model("gpt-oss-20b")
    # hidden 2880 -> 3072 (256), intermediate 2880 / tp 2 = 1440 -> 1536 (128)
    assert vllm.mxfp4_padding(m, 2, load_gpu("nvidia-a100-sxm4-80gb")) == pytest.approx(3072 * 1536 / (2880 * 1440))
    # Triton (Hopper from 0.11.1, vLLM PR #27370): intermediate to 64, and the swizzled layout's load overhead
    # (vllm#33155)
    assert vllm.mxfp4_padding(m, 2, H100) == pytest.approx(1472 / 1440 * (1 + oh.VLLM_MXFP4_TRITON_HOPPER_LOAD))
    # Hopper up to 0.11.0 ran Marlin (no triton_kernels in the wheel: vllm#23278's warning, vllm#26582)
    for old in ("0.10.1", "0.11.0"):
        assert vllm.mxfp4_padding(m, 2, H100, old) == pytest.approx(3072 * 1536 / (2880 * 1440))


def test_gpt_oss_120b_on_one_h100_as_vllm_starts_it():
    """Public runs of gpt-oss-120b on one H100. vLLM 0.10.1 at the default 0.9 (Marlin) loaded 65.97 GiB and found
    -2.14 GiB for the KV cache (vllm#23278): gpuplan refuses too, with the same weights within 1 %. vLLM 0.11.2
    at 0.97 with 100 sequences served an 85K context (vllm#33155's description, 87,040 tokens): gpuplan starts it
    with a pool that holds that request (11.3 GiB, 3.46 of them); 0.14.1 loaded the Triton layout in 64.38 GiB
    (the same issue). At today's rules one H100 at 0.9 has a pool of a few GiB (the sampler's dummy run shrank in
    0.17), and the launcher names the --max-model-len that fits it."""
    from gpuplan import estimate
    from gpuplan.launchers.plan import launch_plan
    from gpuplan.launchers.vllm import max_model_len

    def run(version, **kw):
        return estimate({"model": "gpt-oss-120b", "task": "infer", "engine": "vllm", "gpu": "h100-sxm",
                         "engine_version": version, **kw}, advise=False)

    r = run("0.10.1")
    assert r.memory.weights_gib == pytest.approx(65.97, rel=0.01)
    assert r.memory.engine["available_kv_cache_gib"] == 0.0 and r.memory.max_concurrency == 0
    assert any("refuse to start" in w for w in r.warnings)
    started = run("0.11.2", gpu_memory_utilization=0.97, max_num_seqs=100, max_model_len=87_040).memory.engine
    assert started["max_concurrency_at_max_model_len"] >= 1
    assert started["max_model_len_that_fits"] >= 87_040
    assert run("0.14.1").memory.weights_gib == pytest.approx(64.38, rel=0.01)
    today = run(None).memory.engine
    assert 2.0 < today["available_kv_cache_gib"] < 4.0
    plan = launch_plan({"model": "gpt-oss-120b", "task": "infer", "engine": "vllm", "gpu": "h100-sxm",
                        "prompt_tokens": 8192, "batch_size": 1})
    fit = plan.result.memory.engine["max_model_len_that_fits"]
    assert 8448 <= fit < 131_072 and max_model_len(plan) <= fit


def test_versions_as_vllm_prints_them():
    """`vllm --version` prints 0.10.1.1, 0.11.0rc2, 0.6.5.dev...: accepted, and each follows the rules of the
    release it is or leads to."""
    for text, release in (("0.10.1.1", (0, 10, 1)), ("0.11.0rc2", (0, 11, 0)), ("0.6.5.dev", (0, 6, 5)),
                          ("v0.6.3.post1", (0, 6, 3)), ("0.6.5.dev0+g1a2b3c", (0, 6, 5))):
        s = scenario_from(dict(model="llama-3.1-8b", task="infer", engine="vllm", gpu="h100-sxm",
                               engine_version=text))
        assert vllm.version_tuple(s.engine_version) == release
    with pytest.raises(GpuplanError, match="release number"):
        scenario_from(dict(model="llama-3.1-8b", task="infer", engine="vllm", engine_version="0.x"))


def test_sliding_window_layers_hold_window_minus_one_plus_batch_tokens():
    m = load_model("gemma-2-9b")
    s = scenario_from(dict(model="gemma-2-9b", task="infer", engine="vllm", gpu="h100-sxm", max_model_len=8192))
    lim = vllm.scheduler_limits(s, m, H100)
    _, per_request = vllm.kv_geometry(s, m, vllm.stages(m, 1)[0], lim)
    # 21 full + 21 sliding (window 4096) layers: two groups; full: 8192/16 = 512 blocks; sliding:
    # min(8192, 4095 + 8192) -> 512 blocks as well at this length
    assert per_request == 512 + 512
    _, short = vllm.kv_geometry(s, m, vllm.stages(m, 1)[0], lim, max_len=131_072)
    assert short == 131_072 // 16 + math.ceil((4095 + 8192) / 16)


def test_the_default_context_that_does_not_fit_is_shortened_f20():
    """Llama-3.1-8B on a 4090: one request of its 131,072-token context does not fit vLLM's pool, so the plan starts
    vLLM at the longest that does (a request of N tokens takes ceil(N / 16) of the pool's 16-token blocks in every
    layer: the pool's blocks x 16), says so among its defaults, and warns of nothing; the same scenario with
    max_model_len 131,072 set is warned, with that length as the fix."""
    r = estimate(dict(model="llama-3.1-8b", task="infer", engine="vllm", gpu="rtx-4090"), advise=False)
    fit = r.memory.engine["max_model_len"]
    assert 20_000 < fit < 131_072 and fit == r.memory.engine["num_gpu_blocks"] * 16
    assert r.scenario["max_model_len"] == fit and any(d.startswith(f"max_model_len {fit:,}: ") for d in r.defaults)
    assert not any("refuse to start" in w for w in r.warnings)
    asked = estimate(dict(model="llama-3.1-8b", task="infer", engine="vllm", gpu="rtx-4090", max_model_len=131_072),
                     advise=False)
    assert asked.memory.engine["max_model_len_that_fits"] == fit
    assert any(f"--max-model-len {fit:,}" in w for w in asked.warnings)


def test_device_level_is_the_budget_plus_context_n12():
    """The device level is vLLM's budget plus what lives outside it. At 0.9 the budget is short of Llama-3.1-70B's
    half (65.7 GiB of weights, the profiled activations, NCCL, CUDA graphs): no KV block is left and the process
    holds its tensors, more than the budget, before it stops; at 0.95 the pool is positive and the budget is
    the level."""
    r = estimate(dict(model="llama-3.1-70b", task="infer", engine="vllm", num_gpus=2, tp=2, gpu="h100-sxm",
                      gpu_memory_utilization=0.95), advise=False)
    requested = r.memory.engine["requested_gib"]
    assert r.memory.kv_cache_gib > 1
    assert r.memory.reserved_peak_gib == pytest.approx(requested)
    assert r.memory.device_peak_gib == pytest.approx(requested + sum(r.memory.device_overheads.values()))
    assert r.memory.device_peak_gib < 0.95 * 79.6 + 1.0
    short = estimate(dict(model="llama-3.1-70b", task="infer", engine="vllm", num_gpus=2, tp=2, gpu="h100-sxm"),
                     advise=False).memory
    assert short.kv_cache_gib == 0 and not short.fits
    assert short.reserved_peak_gib == pytest.approx(short.allocated_peak_gib)
    assert short.reserved_peak_gib > short.engine["requested_gib"]


def test_hybrid_models_raise_the_attention_block_to_the_state_page_and_take_one_block_per_state():
    """Qwen3.5-27B: 48 Gated DeltaNet layers (state) and 16 attention layers (4 KV heads x 256). vLLM raises the
    attention block until one attention page holds one layer's state (``attn_block_size = 16 x cdiv(state_page,
    16 x attn_page_per_token)``) and logs 784 tokens for this shape (LMCache's vLLM guide, Qwen3.6-27B, one GPU).
    By hand from transformers' cache, which gpuplan measures: recurrent state 48 x 128 x 128 in fp32 (2 units of
    16 bits each) + convolution 10,240 channels x 4 columns = 1,613,824 units = 3,227,648 B; attention 2 x 4 x 256
    x 2 B = 4,096 B per token -> 16 x ceil(3,227,648 / 65,536) = 16 x 50 = 800 tokens. vLLM keeps kernel - 1 = 3
    convolution columns (3,207,168 B -> 49 -> 784): the page is 2 % larger here."""
    m = load_model("qwen3.5-27b")
    s = scenario_from(dict(model="qwen3.5-27b", task="infer", engine="vllm"))
    linear = next(layer for layer in m.layers if layer.attention == "linear")
    assert linear.state_elements == 48 * 128 * 128 * 2 + 10_240 * 4 == 1_613_824
    block = vllm.attention_block_tokens(s, m, m.layers)
    assert block == 16 * math.ceil(2 * 1_613_824 / (16 * 4_096)) == 800
    assert abs(block / 784 - 1) < 0.025
    # a request takes one block per state layer group and its tokens in attention blocks, not tokens / 16 blocks
    stage = vllm.stages(m, 1)[0]
    lim = vllm.scheduler_limits(s, m, load_gpu("h100-sxm"))
    page, per_request = vllm.kv_geometry(s, m, stage, lim, max_len=8_000)
    groups = 16  # layers per group: the smaller kind's count; 48 linear layers make 3 groups, 16 attention 1
    assert per_request == 3 * 1 + 1 * math.ceil(8_000 / block)
    # one block id: a page in each layer of a group, every page the attention page (the state page padded to it)
    assert page == groups * 800 * 4_096 > groups * 2 * 1_613_824


def test_layers_without_attention_or_state_hold_no_kv_block():
    """Nemotron-3-Nano-30B-A3B: 23 Mamba-2 layers, 6 attention layers and 23 MoE layers with neither. vLLM's model
    runner builds KV-cache specs for attention and Mamba modules only (``GPUModelRunner.get_kv_cache_spec``), so
    a request takes ceil(23 / 6) = 4 Mamba blocks (one state each, in groups of 6 layers) and its tokens in
    attention blocks, and the MoE layers none: before, they took 4 more, 9 blocks instead of 5."""
    m = load_model("nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16")
    kinds = [layer.attention for layer in m.layers]
    assert (kinds.count("mamba"), kinds.count("full"), kinds.count("none")) == (23, 6, 23)
    s = scenario_from(dict(model="nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16", task="infer", engine="vllm",
                           engine_version="0.12.0", kv_cache_dtype="fp8"))
    block = vllm.attention_block_tokens(s, m, m.layers)
    lim = vllm.scheduler_limits(s, m, load_gpu("h200"))
    _, per_request = vllm.kv_geometry(s, m, vllm.stages(m, 1)[0], lim, max_len=2_048)
    assert block >= 2_048 and per_request == 4 + math.ceil(2_048 / block) == 5


def test_cuda_total_of_geforce_cards():
    """cudaMemGetInfo's total, which the budget multiplies: an Ampere/Ada GeForce card shows its whole 24,576 MiB
    (24 GiB) and vLLM logged 23.58 GiB on an RTX 3090 (vllm#10517): 24 - 0.42. A GeForce RTX 5090 shows
    32,607 MiB (vllm#34076): the datacenter rule, usable 31.84 - 0.41 = 31.43 GiB."""
    assert vllm.cuda_total_gib(load_gpu("rtx-3090")) == pytest.approx(23.58)
    assert vllm.cuda_total_gib(load_gpu("rtx-4090")) == pytest.approx(23.58)
    rtx5090 = load_gpu("rtx-5090")
    assert vllm.cuda_total_gib(rtx5090) == pytest.approx(rtx5090.usable_gib - 0.41) == pytest.approx(31.43, abs=0.01)
    assert vllm.cuda_total_gib(H100) == pytest.approx(79.19)


@pytest.mark.parametrize("engine", ["vllm", "sglang", "trtllm"])
def test_max_model_len_shorter_than_a_request_is_refused(engine):
    """vLLM, SGLang and TensorRT-LLM reject a request longer than the context they were started with: 1,024 prompt
    + 256 output tokens = 1,280 do not run at max_model_len 100 (it was accepted and said to fit); at 1,280 they
    do, and the longest prompt found stays within it (1,280 - 256 = 1,024)."""
    job = {"model": "qwen3-8b", "task": "infer", "engine": engine, "gpu": "h100-sxm"}
    with pytest.raises(GpuplanError, match=r"max_model_len 100 is shorter than one request .* = 1,280 tokens"):
        estimate({**job, "max_model_len": 100}, advise=False)
    plan = estimate({**job, "max_model_len": 1280})
    assert plan.memory.fits and plan.memory.max_seq_len == 1024


def test_v0_before_0_6_5_counts_nvlink_sharp_buffers_at_tp8_vllm9699():
    """vllm#9699 (Llama-3.1-405B, TP 8, 8 H200, vLLM of 2024-10-25): 17,595 GPU blocks with NCCL's NVLink SHARP on,
    22,7xx with NCCL_NVLS_ENABLE=0: 5,105-5,204 blocks of 16 x 64,512 B = 4.91-5.00 GiB per GPU more non-torch
    memory. Only over more than 2 GPUs, on SXM Hopper (NVSwitches with SHARP), in V0 before 0.6.5; at TP 4 half."""
    m = load_model("llama-3.1-405b")
    base = {"model": "llama-3.1-405b", "gpu": "h200", "engine_version": "0.6.3", "num_gpus": 8, "tp": 8,
            "max_num_seqs": 1024, "max_num_batched_tokens": 1024}
    hopper_tp = oh.VLLM_V0_NON_TORCH_GIB * 2  # PR #10511's H100 TP 2 figure, the floor on Hopper (next test)
    on = vllm.startup_memory(sc(**base), m, load_gpu("h200"))
    assert on.non_torch / GIB == pytest.approx(hopper_tp + 4.95)
    assert 5105 * 16 * 64_512 / GIB <= 4.95 <= 5204 * 16 * 64_512 / GIB
    half = vllm.startup_memory(sc(**{**base, "tp": 4, "num_gpus": 4}), m, load_gpu("h200"))
    assert half.non_torch / GIB == pytest.approx(hopper_tp + 4.95 / 2)
    later = vllm.startup_memory(sc(**{**base, "engine_version": "0.6.5"}), m, load_gpu("h200"))
    assert later.non_torch / GIB == pytest.approx(oh.VLLM_V0_NON_TORCH_GIB * 2)  # measured only before 0.6.5
    for other in ({"tp": 2, "num_gpus": 2}, {"gpu": "h100-pcie"}, {"gpu": "nvidia-a100-sxm4-80gb"}):
        s = sc(**{**base, **other})
        assert vllm.nvls_gib(s, load_gpu(s.gpu)) == 0.0


def test_v0_before_0_6_5_counts_at_least_0_6_5s_non_torch_memory_on_hopper():
    """0.6.3 counts the free memory lost since init_device and 0.6.4 the device's whole use less torch's allocated
    bytes; 0.6.5 (PR #10511) counts only the growth less torch's, and logged 1.79 GiB on one H100 and 3.58 at TP 2.
    On Hopper that is the floor for the earlier releases too; elsewhere the RTX 3090's 0.35 (vllm#10517, 0.6.4)
    stays. dstack's Llama-3.1-405B FP8 on 8 H100s (vLLM 0.6.3, chunked prefill at 512 tokens, 256 sequences):
    3.58 + 4.95 GiB of NVLink SHARP counted, gpuplan's pool is within 7 % of the 91,680 tokens (5,730 blocks of
    16) the source states its setup supports (it was 151k with the 3090's figure)."""
    nt = {g: vllm.rules(sc(engine_version="0.6.3", gpu=g, tp=tp, num_gpus=tp), load_gpu(g)).non_torch_gib
          for g, tp in (("h100-sxm", 1), ("h200", 2), ("rtx-3090", 1), ("nvidia-a100-sxm4-80gb", 4))}
    assert nt == {"h100-sxm": 1.79, "h200": 3.58, "rtx-3090": 0.35, "nvidia-a100-sxm4-80gb": 0.35}
    assert vllm.rules(sc(engine_version="0.6.4", tp=8, num_gpus=8), H100).non_torch_gib == pytest.approx(3.58 + 4.95)
    from pathlib import Path

    model = str(Path(__file__).resolve().parents[2] / "bench" / "serving" / "models" / "llama-3.1-405b-fp8.json")
    s = scenario_from({"model": model, "task": "infer", "engine": "vllm", "gpu": "h100-sxm", "tp": 8, "num_gpus": 8,
                       "engine_version": "0.6.3"})
    mem = vllm.startup_memory(s, load_model(s.model), H100)
    assert (mem.limits.max_num_batched_tokens, mem.limits.max_num_seqs) == (512, 256)
    assert mem.kv_tokens == pytest.approx(91_680, rel=0.07)


def test_a_yarn_config_starts_at_its_scaled_context(tmp_path):
    """vLLM derives max_model_len from max_position_embeddings with a YaRN rope_scaling's factor
    (``_get_and_verify_max_len``: original_max_position_embeddings x factor), as Qwen's long-context recipe adds
    to Qwen3's config: 40,960 x 4 = 163,840. The startup and the launch file took max_position_embeddings (review
    3's second rewalk: ``--max-model-len 40960`` for a YaRN config planned at 101,000-token requests)."""
    import json
    from pathlib import Path

    import gpuplan

    config = json.loads((Path(gpuplan.__file__).parent / "data" / "models" / "Qwen__Qwen3-8B.json").read_text())
    config["rope_scaling"] = {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 40960}
    (tmp_path / "config.json").write_text(json.dumps(config))
    m = load_model(str(tmp_path))
    assert (m.max_context, m.scaled_context) == (40_960, 163_840)
    s = scenario_from({"model": str(tmp_path), "task": "infer", "engine": "vllm", "gpu": "h200"})
    assert vllm.scheduler_limits(s, m, load_gpu("h200")).max_model_len == 163_840
    plan = gpuplan.estimate({"model": str(tmp_path), "task": "infer", "engine": "vllm", "gpu": "h200",
                             "prompt_tokens": 100_000, "output_tokens": 1_000})
    assert plan.memory.engine["max_model_len"] == 163_840
    plain = load_model("qwen3-8b")  # no rope_scaling: the model's own context
    assert vllm.scheduler_limits(scenario_from({"model": "qwen3-8b", "task": "infer", "engine": "vllm"}), plain,
                                 load_gpu("h200")).max_model_len == 40_960


def test_llama_405b_fp8_at_tp8_loads_its_bf16_first_and_last_mlps():
    """Meta's Llama-3.1-405B-FP8 as vLLM loads it on 8 GPUs (FBGEMMFp8Config: every listed module, by path, gets
    UnquantizedLinearMethod): attention bf16, 124 MLPs FP8 (one fp32 scale a matrix here), the first and last MLPs
    bf16, embedding and head bf16, all split 8 ways. Counted by hand (bytes):
    attention 126 x (2 x 16384^2 + 2 x 16384 x 1024) x 2 = 143,747,186,688; MLPs 124 x (3 x 16384 x 53248 + 12)
    + 2 x 3 x 16384 x 53248 x 2 = 335,007,450,576; embedding and head 2 x 128256 x 16384 x 2 = 8,405,385,216;
    norms 253 x 16384 x 2 = 8,290,304; in all 487,168,312,784, 60.90 GB = 56.71 GiB per GPU."""
    from pathlib import Path

    path = Path(__file__).resolve().parents[2] / "bench" / "serving" / "models" / "llama-3.1-405b-fp8.json"
    m = load_model(str(path))
    s = scenario_from({"model": str(path), "task": "infer", "engine": "vllm", "engine_version": "0.6.3",
                       "gpu": "h100-sxm", "num_gpus": 8, "tp": 8, "max_model_len": 91_680})
    mem = vllm.startup_memory(s, m, H100)
    assert mem.weights == pytest.approx(487_168_312_784 / 8, rel=1e-6)
    assert mem.weights / 2**30 == pytest.approx(56.71, abs=0.005)
