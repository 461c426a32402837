"""Apple silicon as a device (issue 31, item 6): the MLX engine (mlx-lm), MLX's quantized weights, the GPU's share of
unified memory (macOS's default and ``wired_limit_mb``), which engines run there, and its speed from bandwidth."""

from __future__ import annotations

import statistics
from pathlib import Path

import pytest

import benchfiles
from gpuplan import GpuplanError, estimate
from gpuplan.hardware import load_gpu
from gpuplan.model.layers import Linear
from gpuplan.model.quant import make_format

ROOT = Path(__file__).resolve().parents[2]
SERVE = {"model": "llama-3.1-8b", "task": "infer", "batch_size": 1, "prompt_tokens": 512, "output_tokens": 128}


def test_mlx_quantized_bytes_by_hand():
    """mlx.core.quantize, group 64: a 4096 x 4096 weight at 4 bits is 8,388,608 bytes of values plus 262,144 groups x
    (fp16 scale + fp16 bias) = 1,048,576: 4.5 bits per weight; 8-bit 8.5."""
    lin = Linear(name="q_proj", in_features=4096, out_features=4096)
    assert make_format("mlx-4bit").linear_weight_bytes(lin) == 4096 * 4096 / 2 + 4 * 4096 * 4096 / 64
    assert make_format("mlx-8bit").linear_weight_bytes(lin) == pytest.approx(4096 * 4096 * 8.5 / 8)
    assert make_format("mlx-4bit").quantizes_embeddings


def test_mlx_serves_on_apple_only_and_loads_its_own_quants():
    ok = estimate({**SERVE, "engine": "mlx", "gpu": "apple-m4-max", "quant": "mlx-4bit"}, advise=False)
    assert ok.speed.tokens_per_s > 0
    for gpu, maker in (("h100-sxm", "NVIDIA's"), ("mi300x", "AMD's"), ("gaudi3", "Intel's")):  # not "a AMD card"
        with pytest.raises(GpuplanError, match=f"MLX runs on Apple silicon \\(Metal\\), and .* is {maker}: serve"):
            estimate({**SERVE, "engine": "mlx", "gpu": gpu}, advise=False)
    with pytest.raises(GpuplanError, match="set quant mlx-4bit or mlx-8bit"):
        estimate({**SERVE, "engine": "mlx", "gpu": "apple-m4-max", "quant": "gguf-q4_k_m"}, advise=False)


@pytest.mark.parametrize("engine", ["vllm", "sglang", "trtllm"])
def test_engines_without_metal_are_refused_on_a_mac(engine):
    with pytest.raises(GpuplanError, match=r"llama\.cpp or mlx"):
        estimate({**SERVE, "engine": engine, "gpu": "apple-m2-ultra"}, advise=False)


def test_mlx_memory_by_hand():
    """Llama-3.1-8B, 4-bit: the KV cache in 256-token steps (640 tokens -> 768) x 32 layers x 8 KV heads x 128 x 2
    (K and V) x 2 bytes = 100,663,296 bytes for the one sequence; 4 sequences four times that."""
    one = estimate({**SERVE, "engine": "mlx", "gpu": "apple-m4-max", "quant": "mlx-4bit"}, advise=False).memory
    four = estimate({**SERVE, "engine": "mlx", "gpu": "apple-m4-max", "quant": "mlx-4bit", "batch_size": 4},
                    advise=False).memory
    assert one.kv_cache_gib * 2**30 == pytest.approx(768 * 32 * 8 * 128 * 2 * 2)
    assert four.kv_cache_gib == pytest.approx(4 * one.kv_cache_gib)


def test_the_gpu_share_of_unified_memory():
    """macOS wires 3/4 of a 128 GB Mac for the GPU by default (96 GiB); ``wired_limit_mb`` (sysctl
    iogpu.wired_limit_mb) sets it, at most the machine's memory, and only on a Mac."""
    base = {**SERVE, "engine": "llama.cpp", "gpu": "apple-m4-max", "quant": "gguf-q4_k_m"}
    assert load_gpu("apple-m4-max").usable_gib == 96.0
    raised = estimate({**base, "wired_limit_mb": 120_000}, advise=False)
    assert raised.memory.capacity_gib == pytest.approx(120_000 / 1024)
    with pytest.raises(GpuplanError, match="more than the M4 Max"):
        estimate({**base, "wired_limit_mb": 140_000}, advise=False)
    with pytest.raises(GpuplanError, match="not a Mac"):
        estimate({**base, "gpu": "rtx-4090", "wired_limit_mb": 20_000}, advise=False)


def test_llama_cpp_on_a_mac_copies_nothing_over_pcie():
    """Unified memory: a prompt reads the layers where they are; no op-offload copies over PCIe as on a discrete
    card."""
    r = estimate({**SERVE, "engine": "llama.cpp", "gpu": "apple-m2-ultra", "quant": "gguf-q4_0",
                  "model": "meta-llama/Llama-2-7b-hf"}, advise=False)
    assert r.speed.ttft_s > 0 and "cpu_layers_over_pcie" not in (r.speed.parts_s or {})


def test_apple_generation_within_the_issue_target():
    """Every held-out Apple silicon generation row of bench/data/llama-bench.csv (llama.cpp Metal and MLX): median
    |error| under 15% (4.6% when written: Metal 3.8%, MLX 6.6%; 7.2% with the six Llama 3 rows of XiongjieDai's
    table, whose M3 Max 70B Q4_K_M is within 2% and whose two M1 Max rows miss by +49% and +73%: slow against the
    chip itself, see their notes; with PR #16057's gpt-oss-20b and Qwen3-30B-A3B rows, -7% and -6%; with PR
    #15616's Qwen3-30B-A3B Q8_0 tg128, +5%; 5.7% on 43 with session 17's 22 rows of Qwen2.5 7B-72B, Qwen3 0.6B-8B and
    Llama-3.1-8B under mlx-lm, LM Studio and Ollama on M3 Ultra, M4 Pro and M4 Max, added as a test of generalisation:
    4.2% on those alone, Qwen3-0.6B under vllm-mlx -38%; 4.3% on 43 once MLX's fixed time per token was refitted on
    ml-explore/mlx PR #1864's mlx_lm.generate rows: MLX 5.8% -> 3.5% on 15, Qwen3-0.6B -38% -> -18%)."""
    bench = _bench()
    rows = [r for r in bench.load_rows() if bench.backend(r) in ("metal", "mlx") and r["test"].startswith("tg")
            and r["role"] == "check"]
    assert len(rows) == 43
    assert statistics.median(abs(bench.err(r)) for r in rows) < 0.15


def _bench():
    return benchfiles.load("bench/llama_bench.py", "bench_llama")


def test_mlx_fixed_time_per_token_by_hand():
    """MLX's fixed time is 55 us a layer and nothing a step (overheads.MLX_LAYER_S, MLX_STEP_OVERHEAD_S, fitted on
    ml-explore/mlx PR #1864): Qwen2.5-0.5B's 24 layers add 24 x 55 us = 1.32 ms to its bytes on an M4 Max, Qwen3-0.6B's
    28 layers 1.54 ms; no host time (mlx_lm's generate_step commits the next token's graph with mx.async_eval)."""
    from gpuplan.model.catalog import load_model
    from gpuplan.scenario import scenario_from
    from gpuplan.speed.inference import step_timer

    for model, layers in (("Qwen/Qwen2.5-0.5B", 24), ("Qwen/Qwen3-0.6B", 28)):
        s = scenario_from({"task": "infer", "engine": "mlx", "model": model, "gpu": "apple-m4-max", "batch_size": 1,
                           "prompt_tokens": 16, "output_tokens": 128, "quant": "mlx-4bit"})
        parts = step_timer(s, load_model(s.model), load_gpu(s.gpu)).decode_parts(1, 64)
        assert parts["kernel_latency"] == pytest.approx(layers * 55e-6)
        assert "host" not in parts


def test_mlx_fixed_time_fitted_on_its_four_rows():
    """The four fitted rows of PR #1864 (Qwen2.5-0.5B and Mistral-7B 4-bit on an M2 Ultra and an M4 Max): median
    |error| 3.7%, the M4 Max's 0.5B within 3%; the M2 Ultra's 0.5B is the miss, +58% (2.3 ms a token over its bytes
    against the M4 Max's 1.3 ms: the Mac's CPU builds MLX's graph, and gpuplan has no CPU speed for a Mac)."""
    bench = _bench()
    rows = {r["id"]: bench.err(r) for r in bench.load_rows() if r["engine"] == "mlx" and r["role"] == "fitted"}
    assert sorted(rows) == ["mlx1864-m2ultra-mistral7b-tg", "mlx1864-m2ultra-qwen05b-tg", "mlx1864-m4max-mistral7b-tg",
                            "mlx1864-m4max-qwen05b-tg"]
    assert statistics.median(abs(e) for e in rows.values()) < 0.05
    assert abs(rows["mlx1864-m4max-qwen05b-tg"]) < 0.03
    assert 0.5 < rows["mlx1864-m2ultra-qwen05b-tg"] < 0.65


def test_every_apple_chip_has_cores_clock_and_rate():
    """GPU cores x 128 lanes x 2 FLOPs x clock is the FP32 rate the catalog states (within 3%: Apple rounds)."""
    from gpuplan.hardware import gpus

    apple = [g for g in gpus().values() if g.vendor == "Apple"]
    assert len(apple) == 11
    for g in apple:
        assert g.peak_tflops("fp32") == pytest.approx(g.sm_count * 256 * g.boost_clock_mhz / 1e6, rel=0.03)
        assert g.bandwidth_gbs > 0 and "unified" in g.memory_type


def test_moe_generation_on_metal_reads_only_the_picked_experts():
    """Qwen3-30B-A3B Q8_0, one sequence (review 3, Q4): ggml's ``mul_mat_id`` (and MLX's ``gather_qmm``) multiplies
    the 8 experts the router picks of each layer's 128, so a step reads attention, norms, the output head and the
    f32 routers whole and 8/128 of the expert bytes, by hand from the file's tensor types: 3.27 GB, not the 32.1 GB
    of the whole file (the estimate read every expert: 13 tok/s on an M4 Max, where M-series llama.cpp runs reach
    ~57% of peak bandwidth (46.2 t/s for an 8B Q4_K_M on an M1 Max, brand-o/normiebench#40), i.e. 60-85 tok/s
    here). A batch big enough to reach every expert reads them all."""
    from gpuplan.model import gguf
    from gpuplan.model.catalog import load_model
    from gpuplan.scenario import scenario_from
    from gpuplan.speed import ggml

    m = load_model("qwen3-30b-a3b")
    s = scenario_from({**SERVE, "model": "qwen3-30b-a3b", "engine": "llama.cpp", "quant": "gguf-q8_0",
                       "gpu": "apple-m4-max"})
    parts, router = gguf.weight_bytes(m, "q8_0"), 48 * 2048 * 128 * 4.0
    hand = parts["attention"] + parts["norms"] + parts["lm_head"] + router + (parts["experts"] - router) * 8 / 128
    assert ggml.streamed_bytes(s, m, 1) == pytest.approx(hand, rel=1e-9) and round(hand / 1e9, 2) == 3.27
    whole = sum(v for k, v in parts.items() if k not in ("embeddings", "vision"))
    assert ggml.streamed_bytes(s, m, 100_000) == pytest.approx(whole, rel=1e-6)
    per_user = estimate(s, advise=False).speed.streaming_tokens_per_s_per_user
    assert 55 <= per_user <= 85, per_user
    from gpuplan.speed import mlx

    s4 = scenario_from({**SERVE, "model": "qwen3-30b-a3b", "engine": "mlx", "quant": "mlx-4bit", "gpu": "apple-m4-max"})
    assert mlx.weight_bytes(s4, m, 1) / mlx.weight_bytes(s4, m, 100_000) == pytest.approx(0.1016, abs=1e-4)


def test_mlx_reads_a_tied_head_not_gemma_s_per_layer_token_tables():
    """Gemma-4-E2B ties its head to the 262,144 x 1,536 token embedding; its per-layer tables (2,348,810,240
    weights beside it) are looked up a row per token, so a decode step reads the head's 402,653,184 weights at the
    format's embedding bytes, not the tables (before: 4.4 GiB more read each step, at 2 bytes)."""
    from gpuplan.model.catalog import load_model
    from gpuplan.scenario import scenario_from
    from gpuplan.speed import mlx
    from gpuplan.tensors.state import weight_format

    m = load_model("gemma-4-e2b")
    s = scenario_from({**SERVE, "model": "gemma-4-e2b", "engine": "mlx", "quant": "mlx-4bit", "gpu": "apple-m4-max"})
    fmt, skip = weight_format(s, m)
    parts = m.weight_bytes(fmt, skip=skip)
    layers = sum(v for k, v in parts.items() if k not in ("embeddings", "lm_head", "vision"))
    assert mlx.weight_bytes(s, m, 1) == pytest.approx(layers + fmt.embedding_bytes(262144 * 1536), rel=1e-9)
    assert mlx.weight_bytes(s, m, 1) < parts["embeddings"]  # the tables alone outweigh the whole step


def test_a_training_plan_on_a_mac_holds_no_cuda_buffer_and_names_its_counter():
    """Session 17's first walk (user B, left 8): a QLoRA plan on an M4 Max listed "other: cuBLAS workspace 0.06 GiB"
    and "its own log: ... torch.cuda.max_memory_allocated" on a Mac. Metal has no cuBLAS: the same plan on the Mac is
    the CUDA card's less its 64 MiB workspace (the parts that do not depend on the card), and the log line names
    the MPS counter."""
    job = dict(model="llama-3.1-8b", task="train", method="qlora", seq_len=2048, micro_batch_size=1,
               grad_accum_steps=16, precision="fp16-mixed")
    mac = estimate({**job, "gpu": "apple-m4-max"}, advise=False).memory
    cuda = estimate({**job, "gpu": "rtx-4090"}, advise=False).memory
    assert "cuBLAS workspace" not in mac.other and cuda.other["cuBLAS workspace"] == 64 / 1024
    assert mac.allocated_peak_gib == pytest.approx(cuda.allocated_peak_gib - 64 / 1024, abs=1e-9)
    assert "torch.mps.current_allocated_memory()" in mac.logged_statistic and "cuda" not in mac.logged_statistic
    assert mac.logged_gib == mac.allocated_peak_gib


def test_a_mac_that_misses_by_its_wired_limit_is_told_to_raise_it():
    """Llama 4 Scout at Q8_0 (112.2 GiB with its buffers) misses a 128 GB M4 Max's default 96 GiB GPU share; the
    first fix is macOS's limit raised as exo's configure_mlx.sh raises it, max(80 % of RAM, RAM - 5,120 MB) =
    131,072 - 5,120 = 125,952 MB (123.0 GiB), at the same speed, not llama.cpp's CPU layers (s25 walk: only
    --cpu-layers was offered, "several times slower")."""
    from gpuplan.hardware import raised_wired_limit_mb
    assert raised_wired_limit_mb(load_gpu("apple-m4-max")) == 125_952
    assert raised_wired_limit_mb(load_gpu("apple-m4")) == 27_648  # 32 GB: 32,768 - 5,120 over 80 % (26,214)
    assert raised_wired_limit_mb(load_gpu("rtx-4090")) is None
    r = estimate({**SERVE, "engine": "llama.cpp", "gpu": "apple-m4-max", "quant": "gguf-q8_0",
                  "model": "llama-4-scout"})
    assert not r.memory.fits
    first = r.suggestions[0]
    assert first.fields == {"wired_limit_mb": 125_952} and first.fits
    assert "sudo sysctl iogpu.wired_limit_mb=125952" in first.change and "same speed" in first.cost
    assert estimate({**SERVE, "engine": "llama.cpp", "gpu": "apple-m4-max", "quant": "gguf-q8_0",
                     "model": "llama-4-scout", **first.fields}, advise=False).memory.fits
    # already raised that far: not offered again
    raised = estimate({**SERVE, "engine": "llama.cpp", "gpu": "apple-m4-max", "quant": "gguf-q8_0",
                       "model": "llama-4-scout", "wired_limit_mb": 125_952, "prompt_tokens": 100_000})
    assert not any("wired_limit_mb" in x.fields for x in raised.suggestions)
    # fit takes the raised limit before the CPU layers (their peak on the GPU is lower, but they run on the CPU),
    # and adds no RAM on top of the Mac's one pool
    from gpuplan.plan.capability import what_fits
    row, = what_fits({"task": "infer", "engine": "llama.cpp", "quant": "gguf-q8_0"}, load_gpu("apple-m4-max"), 1,
                     ["llama-4-scout"])
    assert row.fits and row.fields == {"wired_limit_mb": 125_952}
    assert row.change == "macOS's GPU limit raised to 125,952 MB"


def test_cpu_layers_on_a_mac_are_said_as_they_are_timed():
    """On Metal the decode step times every layer on the GPU (no ``cpu_layers`` part): the sentence said they ran
    "from system RAM at ~48 GB/s (assumed dual-channel DDR5)", which a Mac has not and the step did not use (s25
    walk, Qwen3-235B-A22B Q4_K_M on an M4 Max)."""
    r = estimate({**SERVE, "engine": "llama.cpp", "gpu": "apple-m4-max", "quant": "gguf-q4_k_m",
                  "model": "qwen3-235b-a22b", "cpu_layers": True}, advise=False)
    assert "cpu_layers" not in r.speed.parts_s
    said = [a for a in r.assumptions if "of the layers run on the CPU" in a]
    assert said and "DDR5" not in said[0] and "timed as the GPU's" in said[0]
