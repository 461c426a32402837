"""vLLM's prompt attention on SM 12.x (GeForce and workstation Blackwell): FlashAttention-2's forward at the rate a
kernel benchmark measured on the RTX 5090 (overheads.ATTENTION_FORWARD_PEAK_FRACTION), checked against PegaInfer's
cold prompts on that card (not fitted on them)."""

import pytest

from gpuplan import overheads as oh
from gpuplan.engines import vllm
from gpuplan.hardware import load_gpu
from gpuplan.model.catalog import load_model
from gpuplan.scenario import scenario_from
from gpuplan.speed.inference import step_timer
from gpuplan.speed.work import attention_fraction

QWEN = load_model("qwen3-4b")


def _timer(gpu: str, **extra):
    s = scenario_from(dict(model="qwen3-4b", task="infer", engine="vllm", engine_version="0.22.1", gpu=gpu,
                           num_gpus=1, tp=1, prompt_tokens=4096, output_tokens=1, max_model_len=20480, **extra))
    return step_timer(s, QWEN, load_gpu(gpu))


def test_the_rate_is_the_benchmarks_fa2_reading():
    """gau-nernst/learn-cuda@5d2897af 07_attention/README.md: flash-attn (FA2) at 189.57 of the 5090's 209.5."""
    card, share = oh.ATTENTION_FORWARD_PEAK_FRACTION[("flash2", "12")]
    assert card == "nvidia-geforce-rtx-5090" and share == pytest.approx(0.9049, abs=1e-4)


def test_training_keeps_the_end_to_end_fraction():
    """Only a forward (a serving engine's prompt) takes the kernel benchmark's rate: a training step's attention on
    the same card, forward and backward, keeps Blackwell's end-to-end fraction."""
    rtx = load_gpu("rtx-5090")
    assert attention_fraction(rtx, "flash2") == pytest.approx(oh.ATTENTION_PEAK_FRACTION["Blackwell"])
    assert attention_fraction(rtx, "flash2", forward=True) == pytest.approx(189.57 / 209.5)
    assert attention_fraction(load_gpu("b200"), "flash2", forward=True) == attention_fraction(load_gpu("b200"))


def test_a_2048_token_chunk_by_hand():
    """Qwen3-4B (36 layers, 32 query heads of 128), the first 2,048-token chunk, causal: 4 x 32 x 128 x 2,048 x
    2,049 / 2 FLOPs a layer, at 189.57 TFLOPS (the RTX 5090 runs at its datasheet's clock in gpuplan: no power
    cap or continuous-clock factor)."""
    flops = 36 * 4 * 32 * 128 * 2048 * 2049 / 2
    parts = _timer("rtx-5090").prefill_parts(2048)
    assert parts["attention"] == pytest.approx(flops / 189.57e12, rel=1e-6)  # 6.5 ms; it was 16.9 at 0.35


def test_which_cards_and_configurations_take_it():
    """SM 12.x (and 8.x: tests/serving/test_sm8_prompt_attention.py), and only where vLLM runs FA2 there: an fp8
    KV cache, MLA and attention sinks fall to FlashInfer or Triton (not measured: the generation's fraction). The
    H100 (FA3) and B200 (FA4 / FlashInfer) keep theirs."""
    assert _timer("rtx-5090").timing.prompt_attention == "flash2"
    assert _timer("rtx-pro-6000-blackwell").timing.prompt_attention == "flash2"
    assert _timer("rtx-5090", kv_cache_dtype="fp8").timing.prompt_attention == ""
    for gpu in ("h100-sxm", "b200"):
        assert _timer(gpu).timing.prompt_attention == ""
    gpt_oss = load_model("gpt-oss-20b")
    s = scenario_from(dict(model="gpt-oss-20b", task="infer", engine="vllm", gpu="rtx-5090", num_gpus=1, tp=1))
    assert vllm.prompt_attention(s, gpt_oss, load_gpu("rtx-5090")) == ""


@pytest.mark.parametrize("tokens, measured_ms", [(4096, 197.9), (8192, 449.6), (16384, 1106.8)])
def test_pegainfer_cold_prompts(tokens, measured_ms):
    """pegainfer-project/pegainfer@414b64764c46 docs/benchmarks/qwen3-4b-serving-vllm-rtx5090.md, Test 2, 'vLLM
    0.22.1', Cold TTFT (one request, the client on the host): gpuplan's TTFT with the request constant lands within
    5 % at 4k-16k tokens (it was +23, +34 and +56 % at Blackwell's end-to-end fraction, 0.35)."""
    timer = _timer("rtx-5090")
    ttft_ms = (timer.ttft_s(tokens) + timer.request_s) * 1e3
    assert ttft_ms == pytest.approx(measured_ms, rel=0.05)
