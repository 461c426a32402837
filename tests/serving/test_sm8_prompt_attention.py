"""vLLM's prompt attention on SM 8.6 and 8.9 (GA10x: RTX 30x0, A10, A40; Ada: RTX 40x0, L4, L40S): FlashAttention-2's
forward at the rate a kernel benchmark measured on the RTX 4090 (overheads.ATTENTION_FORWARD_PEAK_FRACTION), carried
to other cards by their matmul share and softmax cost (speed/work.py forward_fraction), where gpuplan had timed it
at the generation's end-to-end training fraction (Ampere 0.30, Ada 0.38). The A100 (SM 8.0) keeps Ampere's."""

import pytest

from gpuplan import overheads as oh
from gpuplan.hardware import load_gpu
from gpuplan.model.catalog import load_model
from gpuplan.scenario import scenario_from
from gpuplan.speed import work
from gpuplan.speed.inference import step_timer
from gpuplan.speed.work import attention_fraction

QWEN = load_model("qwen3-4b")


def _timer(gpu: str, engine: str = "vllm", **extra):
    s = scenario_from(dict(model="qwen3-4b", task="infer", engine=engine, gpu=gpu, num_gpus=1, tp=1,
                           prompt_tokens=4096, output_tokens=1, max_model_len=20480, **extra))
    return step_timer(s, QWEN, load_gpu(gpu))


def _softmax(peak: float, fp32: float, sms: int, mhz: float) -> float:
    """Softmax work per score over a 128-wide head's 512 matmul FLOPs: one exponential on 16 SFU lanes per SM and
    clock, four FP32 ops (overheads.py, the Ada comment above ATTENTION_PEAK_FRACTION)."""
    return (peak * 1e12 / (sms * 16 * mhz * 1e6) + 4 * peak / fp32) / 512


def test_the_rate_is_the_benchmarks_reading():
    """apache/tvm tl_doc/flash_perf.md: flash_attn's forward at 169.28 TFLOPS on an RTX 4090 (2k tokens, 128-wide
    heads, not causal) of its 165.2, for sm_86 and sm_89 alike (FA2 picks their tiles together: is_sm8x)."""
    table = oh.ATTENTION_FORWARD_PEAK_FRACTION
    for cc in ("8.6", "8.9"):
        assert table[("flash2", cc)] == ("nvidia-geforce-rtx-4090", pytest.approx(1.0247, abs=1e-4))
    assert ("flash2", "8.0") not in table and ("flash2", "8") not in table


def test_the_4090_takes_its_reading_and_the_a100_none():
    """The RTX 4090's 1.025 held to its datasheet, as its GEMMs are (MATMUL_PEAK_FRACTION_SUSTAINED); the RTX 3090
    (GA102, the same SM balance, its matmul share also held to 1.0) likewise. The A100 keeps Ampere's end-to-end
    fraction for vLLM's prompts: FA2 runs its paged cache through the split-KV kernel, whose rate on the A100 is not
    published (overheads.py); training keeps it too."""
    assert attention_fraction(load_gpu("rtx-4090"), "flash2", forward=True) == 1.0
    assert attention_fraction(load_gpu("rtx-3090"), "flash2", forward=True) == 1.0
    a100 = load_gpu("a100-sxm4-80gb")
    assert attention_fraction(a100, "flash2", forward=True) == attention_fraction(a100, "flash2") == 0.30


def test_other_cards_by_hand():
    """L40S (Ada): 169.28 / 165.2 x its matmul share 0.743 / the 4090's 1.0 x (1 + r_4090) / (1 + r_L40S), r from
    the catalog's datasheets: the L40S's tensor cores run fp32 accumulation at full rate (362 TFLOPS on 142 SMs
    beside the 4090's 165 on 128), so its softmax costs twice as much per matmul FLOP. A10 (GA102 at its 150 W
    cap, full rate too): 169.28 / 165.2 x 56 / 125 (its posted matmul share) x (1 + r_4090) / (1 + r_A10)."""
    r4090 = _softmax(165.2, 82.6, 128, 2520)
    rl40s = _softmax(362.05, 91.6, 142, 2520)
    ra10 = _softmax(125.0, 31.2, 72, 1695)
    assert (r4090, rl40s, ra10) == pytest.approx((0.078, 0.154, 0.156), abs=1e-3)
    cases = {"l40s": 169.28 / 165.2 * 0.743 * (1 + r4090) / (1 + rl40s),
             "a10": 169.28 / 165.2 * (56.0 / 125.0) * (1 + r4090) / (1 + ra10)}
    for gpu, share in cases.items():
        assert attention_fraction(load_gpu(gpu), "flash2", forward=True) == pytest.approx(share, rel=1e-3), gpu
    assert cases == pytest.approx({"l40s": 0.711, "a10": 0.428}, abs=1e-3)


def test_the_a100s_dense_reading_carried_to_the_4090(monkeypatch):
    """A check of the conversion between cards, not an input: FlashAttention-2's dense forward on the A100 (Dao
    2023, section 4.1: 73 % of 312) carried to the RTX 4090 (matmul share 1.0 / 0.859, softmax (1 + 0.375) /
    (1 + 0.078)) gives 1.08, within 6 % of the 4090's own reading, 1.025."""
    monkeypatch.setitem(oh.ATTENTION_FORWARD_PEAK_FRACTION, ("flash2", "8.9"), ("nvidia-a100-sxm4-80gb", 0.73))
    work.forward_fraction.cache_clear()
    try:
        carried = work.forward_fraction(load_gpu("rtx-4090"), "flash2")
    finally:
        work.forward_fraction.cache_clear()
    assert carried == 1.0  # held to the datasheet; uncapped:
    uncapped = 0.73 / 0.859 * (1 + _softmax(312.0, 19.5, 108, 1410)) / (1 + _softmax(165.2, 82.6, 128, 2520))
    assert uncapped == pytest.approx(1.08, abs=0.01)
    assert uncapped == pytest.approx(169.28 / 165.2, rel=0.06)


def test_a_2048_token_chunk_on_the_4090_by_hand():
    """Qwen3-4B (36 layers, 32 query heads of 128), the first 2,048-token chunk, causal: 4 x 32 x 128 x 2,048 x
    2,049 / 2 FLOPs a layer, at the RTX 4090's 165.2 TFLOPS (its reading held to the datasheet; no power cap or
    continuous-clock factor)."""
    flops = 36 * 4 * 32 * 128 * 2048 * 2049 / 2
    parts = _timer("rtx-4090").prefill_parts(2048)
    assert parts["attention"] == pytest.approx(flops / 165.2e12, rel=1e-6)  # 10.7 ms; 28.2 at Ada's 0.38


def test_which_engines_and_configurations_take_it():
    """vLLM on SM 8.x runs FA2 (FLASH_ATTN); an fp8 KV cache falls to FlashInfer or Triton. SGLang's default on
    these cards is FlashInfer's own prefill kernel and TensorRT-LLM runs its own context kernels: neither is FA2,
    and no forward rate of theirs is published here, so both keep the generation's fraction."""
    for gpu in ("a100-sxm4-80gb", "rtx-3090", "rtx-4090", "l4", "l40s", "a10"):
        assert _timer(gpu).timing.prompt_attention == "flash2", gpu
    assert _timer("rtx-4090", kv_cache_dtype="fp8").timing.prompt_attention == ""
    assert _timer("rtx-4090", engine="sglang").timing.prompt_attention == ""
