"""vLLM refuses to start on a card below its quantization method's least compute capability (engines/vllm.py
MIN_CAPABILITY, from each method's ``get_min_capability``): session 29's walk planned gpt-oss-20b (mxfp4 as shipped)
under vLLM on a T4 and a V100, fp8 weights and AWQ on a V100, each "fits" with a speed, where vLLM stops at
start ("The quantization method mxfp4 is not supported for the current GPU. Minimum capability: 80. Current
capability: 75.", vllm-project/vllm#22288). recommend says why a card named in --gpus has no row."""

from __future__ import annotations

import pytest

from gpuplan import GpuplanError, estimate, recommend

GPT_OSS = {"model": "gpt-oss-20b", "task": "infer", "engine": "vllm"}
LLAMA = {"model": "llama-3.2-1b", "task": "infer", "engine": "vllm"}


@pytest.mark.parametrize(("scenario", "gpu", "words"), [
    (GPT_OSS, "t4", "no mxfp4 kernel for Tesla T4 (Turing, compute capability 7.5): its mxfp4 method needs 8.0"),
    (GPT_OSS, "v100-sxm2-32gb", "no mxfp4 kernel for Tesla V100 SXM2 32GB (Volta, compute capability 7.0)"),
    ({**LLAMA, "quant": "fp8"}, "v100-sxm2-32gb", "its fp8 method needs 7.5 or newer"),
    ({**LLAMA, "quant": "awq-int4"}, "v100-sxm2-32gb", "its awq-int4 method needs 7.5 or newer"),
])
def test_refused_below_the_methods_capability(scenario, gpu, words):
    with pytest.raises(GpuplanError, match="vLLM has no") as said:
        estimate({**scenario, "gpu": gpu})
    assert words in str(said.value)


@pytest.mark.parametrize(("scenario", "gpu"), [
    (GPT_OSS, "a100-sxm4-80gb"),  # 8.0: the least mxfp4 takes
    ({**LLAMA, "quant": "fp8"}, "t4"),  # 7.5: weight-only fp8 through Marlin in the later releases
    ({**LLAMA, "quant": "awq-int4"}, "t4"),  # 7.5: AWQ's least
    ({**LLAMA, "quant": "gptq-int4"}, "v100-sxm2-32gb"),  # GPTQ's 6.0
    ({**LLAMA, "quant": "fp8"}, "mi300x"),  # AMD: ROCm's own kernels, not this rule
    ({**GPT_OSS, "engine": "sglang"}, "l4"),  # another engine: not vLLM's rule
])
def test_planned_at_or_above_it(scenario, gpu):
    assert estimate({**scenario, "gpu": gpu}).memory.device_peak_gib > 0


def test_recommend_says_why_a_named_card_has_no_row():
    r = recommend(GPT_OSS, gpus=["t4", "l4"], top=3)
    assert {x.gpu_id for x in r.setups} == {"nvidia-l4"}
    assert any(n.startswith("t4 left out: vLLM has no mxfp4 kernel for Tesla T4") for n in r.notes), r.notes


def test_recommend_says_why_the_engine_refuses_a_named_card():
    r = recommend({**LLAMA, "engine": "trtllm"}, gpus=["mi300x", "l4"], top=3)
    assert any(n.startswith("mi300x left out: TensorRT-LLM runs on NVIDIA GPUs only") for n in r.notes), r.notes
