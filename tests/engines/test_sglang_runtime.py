"""SGLang's startup memory (engines/sglang.py): the pool arithmetic by hand, the default reserve of PR
#10975, and public startup logs."""

import pytest

from conftest import cli_in_process
from gpuplan.engines import sglang
from gpuplan.hardware import load_gpu
from gpuplan.model.catalog import load_model
from gpuplan.scenario import scenario_from

M = load_model("llama-3.1-8b")
S = scenario_from(dict(model="llama-3.1-8b", task="infer", gpu="h100-sxm", engine_version="0.4.1"))
H100 = load_gpu("h100-sxm")


def test_cell_is_k_and_v_of_every_layer_over_the_kv_heads_a_gpu_holds():
    assert sglang.cell_bytes(S, M) == 8 * 128 * 2 * 32 * 2  # 8 KV heads x (128 + 128) x 32 layers x bf16
    assert sglang.cell_bytes(S.model_copy(update={"tp": 2, "num_gpus": 2}), M) == 4 * 256 * 32 * 2
    assert sglang.cell_bytes(S.model_copy(update={"tp": 16, "num_gpus": 16}), M) == 1 * 256 * 32 * 2  # replicated
    assert sglang.cell_bytes(S.model_copy(update={"kv_cache_dtype": "fp8"}), M) == 8 * 256 * 32 * 1


def test_pool_from_the_docs_log_of_2025_01_23():
    """'Load weight begin. avail mem=78.81 GB', '... end ... avail mem=63.72 GB', mem_fraction_static=0.88:
    rest = 63.72 - 78.81 x 0.12 = 54.263 GiB, / 131,072 bytes a token = 444,520; the log: 444,500 (its GB are
    printed to two decimals: +-0.005 GiB is +-40 tokens)."""
    assert sglang.kv_tokens(63.72, 78.81, 0.88, 131072) == int((63.72 - 78.81 * 0.12) * 2**30) // 131072 == 444_520
    assert sglang.kv_tokens(63.72, 78.81, 0.88, 131072) == pytest.approx(444_500, abs=45)
    # PR #4760's log (2025-03-25): avail 63.48 after 15.11 loaded, 442,750 tokens
    assert sglang.kv_tokens(63.48, 63.48 + 15.11, 0.88, 131072) == pytest.approx(442_750, abs=45)
    assert sglang.max_running_requests(444_500, 131072) == 2048  # 512 per context of pool, at least 2,048


def test_predicted_pool_without_the_logs_numbers():
    """From the card and the model alone (0.38 GiB of start-up and 0.13 GiB of loader memory, both set on the
    January log): the March log's 442,750 tokens within 0.5 %."""
    sm = sglang.startup_memory(S, M, H100)
    assert sm.total_gib == pytest.approx(79.19 - 0.38, abs=0.01) and sm.mem_fraction_static == 0.88
    assert sm.kv_tokens == pytest.approx(442_750, rel=0.005)
    assert sm.kv_pool_gib == pytest.approx(sm.kv_tokens * 131072 / 2**30)


def test_default_reserve_of_pr_10975():
    """An 80 GB card (81,559 MiB): chunked prefill 8,192, CUDA graphs to 256 at TP 1; reserve 512 + 8,192 x 1.5 +
    256 x 2 + 1/8 x 1,024 = 13,440 MiB: 0.835, as SGLang's docs build of 2026-02-05 prints on its H100. TP 4:
    graphs to 512 and 4/8 x 1,024: 14,336 MiB, 0.824. A 24 GB card: 2,048 and 24, the 10 GiB floor does not
    apply: 512 + 3,072 + 48 + 128 = 3,760 MiB of 24,564, 0.847. Releases before it keep 0.88 on one GPU."""
    d = sglang.defaults(81559, tp=1, version="0.5.8")
    assert (d.chunked_prefill_size, d.cuda_graph_max_bs, d.mem_fraction_static) == (8192, 256, 0.835)
    assert sglang.defaults(81559, tp=4, version="0.5.8").mem_fraction_static == round((81559 - 14336) / 81559, 3)
    small = sglang.defaults(24564, tp=1, version="0.5.8")
    assert (small.chunked_prefill_size, small.mem_fraction_static) == (2048, round((24564 - 3760) / 24564, 3))
    assert sglang.defaults(81559, tp=1, version="0.4.1").mem_fraction_static == 0.88


# ---- engine sglang, end to end ------------------------------------------------------------------------------
def test_engine_sglang_estimates_the_pool_its_log_prints():
    """`engine: sglang` through gpuplan.estimate: PR #4760's H100 log (SGLang 0.4.4, Llama-3.1-8B, 442,750
    tokens) within 0.5 %; the pool holds 442,750 / 1,280 = 345 requests of 1,024 + 256 tokens, under
    max_running_requests 2,048; the device level is weights + pool + reserve, what SGLang holds whatever a step uses."""
    from gpuplan import estimate

    r = estimate(dict(model="llama-3.1-8b", task="infer", engine="sglang", engine_version="0.4.4", gpu="h100-sxm",
                      batch_size=64), advise=False)
    eng = r.memory.engine
    assert eng["engine"] == "sglang" and eng["mem_fraction_static"] == 0.88
    assert eng["max_total_num_tokens"] == pytest.approx(442_750, rel=0.005)
    assert r.memory.max_concurrency == eng["max_total_num_tokens"] // 1280 and r.memory.fits
    assert r.memory.kv_cache_gib == pytest.approx(eng["max_total_num_tokens"] * 131072 / 2**30)
    held = r.memory.weights_gib + r.memory.kv_cache_gib + sum(r.memory.other.values())
    assert r.memory.reserved_peak_gib == pytest.approx(held)
    assert any(line.startswith("SGLang: GPU work timed as vLLM") for line in r.assumptions)  # and says so


def test_engine_sglang_fits_by_the_requests_its_pool_holds_and_says_what_would():
    from gpuplan import estimate

    big = dict(model="llama-3.1-70b", task="infer", engine="sglang", gpu="h100-sxm", num_gpus=2, batch_size=32,
               prompt_tokens=3584, output_tokens=512)
    r = estimate(big)
    assert r.memory.fits is False and r.memory.max_concurrency < 32
    fixes = {s.change.split(":")[0]: s for s in r.suggestions}
    assert fixes["fp8 weights"].fits and "concurrent requests" in fixes["fp8 weights"].change
    assert any(k.startswith("--mem-fraction-static") for k in fixes)
    assert estimate({**big, "quant": "fp8"}, advise=False).memory.fits


def test_engine_sglang_errors_and_flags():
    import json
    import subprocess
    import sys

    from gpuplan import GpuplanError, estimate

    with pytest.raises(GpuplanError, match="serves models"):
        estimate(dict(model="llama-3.1-8b", task="train", engine="sglang", gpu="h100-sxm"))
    done = cli_in_process("estimate", "--model", "qwen2.5-7b", "--task", "infer", "--engine", "sglang",
                          "--mem-fraction-static", "0.8", "--gpu", "l40s", "--json")
    assert done.returncode == 0, done.stderr
    eng = json.loads(done.stdout)["memory"]["engine"]
    assert eng["engine"] == "sglang" and eng["mem_fraction_static"] == 0.8
    help_text = subprocess.run([sys.executable, "-m", "gpuplan", "estimate", "--help"], capture_output=True,
                               text=True, env={"COLUMNS": "200", "PATH": ""}).stdout
    assert "--mem-fraction-static" in help_text and "sglang" in help_text


def test_the_capacity_note_says_where_sglang_s_host_loop_was_fitted_and_checked():
    """`capacity --engine sglang` said its host loop was 'fitted on SGLang's own published runs, few': the file it
    names holds 85 runs (docs audit, session 16). The calibration rows are SGLang 0.3.0's own benchmark, the rest
    check them; the note says so, and the bench's data agree."""
    import csv
    from pathlib import Path

    from gpuplan.engines import ENGINES

    words = ENGINES["sglang"].scheduler_words
    assert "few" not in words and "0.3.0's own published runs" in words and "sglang_serving.md" in words
    data = Path(__file__).resolve().parents[2] / "bench" / "data" / "sglang_serving.csv"
    rows = list(csv.DictReader(line for line in data.read_text(encoding="utf-8").splitlines()
                               if not line.startswith("#")))
    calibration = {r["sglang_version"] for r in rows if r["role"] == "calibration"}
    assert calibration == {"0.3.0"} and sum(r["role"] != "calibration" for r in rows) >= 60


def test_rocm_aiter_scales_mem_fraction_static_above_8192_tokens_of_context():
    """SGLang from 0.4.7 on ROCm: attention backend aiter (the default for DeepSeek-R1 at TP 8: 128 KV heads / 8 =
    16) and a context above 8,192 tokens (R1's 163,840) scale --mem-fraction-static by 0.85. InferenceX's
    dsr1_fp8_mi325x.sh launch (0.5.19, TP 8, 0.8, fp8 KV: 576 x 61 = 35,136 B a token) on an MI325X (cudaMemGetInfo
    254.72 - 0.41 GiB, less 0.38 of start-up = 253.93 GiB free; the weights 79.248 GiB a GPU) by hand:
    (253.93 - 79.248 - 253.93 x (1 - 0.8 x 0.85)) x 2^30 // 35,136 = 2,855,020 tokens, not the 3,786,218 the flag
    alone gives (-24.6 %). The launch flag stays 0.8; H200, 0.4.6 and a 8,192-token context keep it."""
    r1 = load_model("deepseek-r1")
    mi325x = load_gpu("mi325x")
    s = scenario_from(dict(model="deepseek-r1", task="infer", gpu="mi325x", tp=8, num_gpus=8, engine="sglang",
                           engine_version="0.5.19", kv_cache_dtype="fp8"))
    sm = sglang.startup_memory(s, r1, mi325x, mem_fraction_static=0.8)
    assert sm.total_gib == pytest.approx(253.93, abs=0.005) and sm.weights_gib == pytest.approx(79.248, abs=0.001)
    by_hand = int((sm.total_gib - sm.weights_gib - sm.total_gib * (1 - 0.8 * 0.85)) * 2**30) // 35136
    assert sm.kv_tokens == by_hand == pytest.approx(2_855_020, abs=60)
    assert (sm.mem_fraction_static, sm.applied_fraction) == (0.8, pytest.approx(0.68))
    assert sglang.kv_tokens(sm.available_gib, sm.total_gib, 0.8, 35136) == pytest.approx(3_786_218, abs=60)
    for other in (dict(engine_version="0.4.6"), dict(max_model_len=8192), dict(gpu="h200")):
        t = s.model_copy(update=other)
        assert sglang.aiter_scale(t, r1, load_gpu(t.gpu), t.max_model_len or r1.max_context) == 1.0
    # TP 4: 32 KV heads a GPU, triton by default; before 0.5.3 MTP also kept MLA models off aiter
    assert sglang.aiter_scale(s.model_copy(update={"tp": 4, "num_gpus": 4}), r1, mi325x, 163840) == 1.0
    mtp = s.model_copy(update={"speculative_method": "mtp", "engine_version": "0.5.2"})
    assert sglang.aiter_scale(mtp, r1, mi325x, 163840) == 1.0
    assert sglang.aiter_scale(mtp.model_copy(update={"engine_version": "0.5.3"}), r1, mi325x, 163840) == 0.85
    # a model without MLA takes aiter on ROCm at any TP
    llama = scenario_from(dict(model="llama-3.1-70b", task="infer", gpu="mi300x", tp=2, num_gpus=2, engine="sglang"))
    assert sglang.aiter_scale(llama, load_model("llama-3.1-70b"), load_gpu("mi300x"), 131072) == 0.85
