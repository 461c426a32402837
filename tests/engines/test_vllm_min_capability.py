"""vLLM refuses to start on a card below its quantization method's least compute capability (engines/vllm.py
MIN_CAPABILITY, from each method's ``get_min_capability``): session 29's walk planned gpt-oss-20b (mxfp4 as shipped)
under vLLM on a T4 and a V100, fp8 weights and AWQ on a V100, each "fits" with a speed, where vLLM stops at
start ("The quantization method mxfp4 is not supported for the current GPU. Minimum capability: 80. Current
capability: 75.", vllm-project/vllm#22288). recommend says why a card named in --gpus has no row. SGLang's start
makes the same check (``model_loader/loader.py`` ``_get_quantization_config``) with its own floors (fp8 8.0), and
vLLM's fp8 floor was 8.0 before 0.13.0 (Marlin on Turing, vllm-project/vllm#29901)."""

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
    ({**LLAMA, "quant": "fp8", "engine_version": "0.12.0"}, "t4", "its fp8 method needs 8.0 or newer"),
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
    ({**LLAMA, "quant": "fp8", "engine_version": "0.13.0"}, "t4"),  # the first release that may run Marlin on Turing
    ({**GPT_OSS, "engine": "sglang"}, "l4"),  # 8.9: above SGLang's 8.0
    ({**LLAMA, "engine": "sglang", "quant": "gptq-int4"}, "v100-sxm2-32gb"),  # SGLang's GPTQConfig: 6.0
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


@pytest.mark.parametrize(("scenario", "gpu", "sentence"), [
    ({**GPT_OSS, "engine": "sglang"}, "t4",
     "SGLang has no mxfp4 kernel for Tesla T4 (Turing, compute capability 7.5): its mxfp4 method needs 8.0 or newer "
     "and SGLang refuses to start; choose awq-int4 or gptq-int4 weights, engine llama.cpp (GGUF), or a newer card"),
    ({**LLAMA, "engine": "sglang", "quant": "fp8"}, "t4",  # SGLang's Fp8Config: 8.0 where vLLM's later say 7.5
     "SGLang has no fp8 kernel for Tesla T4 (Turing, compute capability 7.5): its fp8 method needs 8.0 or newer "
     "and SGLang refuses to start; choose awq-int4 or gptq-int4 weights, engine llama.cpp (GGUF), or a newer card"),
    ({**LLAMA, "engine": "sglang", "quant": "awq-int4"}, "v100-sxm2-16gb",  # only the format that starts there
     "SGLang has no awq-int4 kernel for Tesla V100 SXM2 16GB (Volta, compute capability 7.0): its awq-int4 method "
     "needs 7.5 or newer and SGLang refuses to start; choose gptq-int4 weights, engine llama.cpp (GGUF), or a "
     "newer card"),
])
def test_sglang_refuses_in_one_sentence(scenario, gpu, sentence):
    with pytest.raises(GpuplanError) as said:
        estimate({**scenario, "gpu": gpu})
    assert str(said.value) == sentence


@pytest.mark.parametrize(("model", "gpu", "four_bit"), [
    ("gemma-3-27b", "v100-sxm2-32gb", "gptq-int4"),  # AWQ is refused below 7.5, GPTQ starts from 6.0
    ("gemma-3-12b", "t4", "awq-int4"),  # 7.5: AWQ, the first offered, starts
])
def test_the_advice_offers_the_4bit_format_that_starts_on_the_card(model, gpu, four_bit):
    # 16-bit weights (27B: 51 GiB, 12B: 23 GiB) fit neither card, 4-bit ones do (s29 walk: the AWQ suggestion was
    # dropped on the V100, and no 4-bit one took its place)
    advice = estimate({"model": model, "task": "infer", "engine": "vllm", "gpu": gpu}).suggestions
    quants = [x.fields["quant"] for x in advice if "quant" in x.fields and x.fields["quant"] != "int8"]
    assert quants[:1] == [four_bit], advice


def test_sglang_names_the_nvfp4_floor_for_a_card_left_out():
    """Session 30 (walk2_s29's leftover): SGLang's ``modelopt_fp4`` method (``ModelOptFp4Config.get_min_capability``
    100, sgl-project/sglang faeb9685 ``srt/layers/quantization/modelopt_quant.py``) was not in its floor table, so
    ``recommend --engine sglang --quant nvfp4 --gpus h100-sxm,...`` dropped the H100 without a word. Session 31
    (s31-fp4): that floor holds for the releases before 0.5.13 (sgl-project/sglang#25655's Marlin W4A16 path came
    after 0.5.12), so the release is named here. Blackwell's 10.0 (B200) and 12.0 (RTX 5090) are at or above it and
    keep their rows."""
    from gpuplan.engines import engine_for
    from gpuplan.scenario import Scenario

    old = {**LLAMA, "engine": "sglang", "quant": "nvfp4", "engine_version": "0.5.12"}
    s = Scenario(**old)
    assert engine_for(s).least_capability(s, "nvfp4") == 100
    r = recommend(old, gpus=["h100-sxm", "b200", "rtx-5090"], top=3)
    assert r.setups and not [x for x in r.setups if x.gpu_id.startswith("nvidia-h100")]
    assert not [n for n in r.notes if n.startswith(("b200", "rtx-5090"))], r.notes
    assert estimate({**old, "gpu": "b200"}).verdict.fits
    said = [n for n in r.notes if n.startswith("h100-sxm left out:")]
    assert said == ["h100-sxm left out: SGLang has no nvfp4 kernel for H100 SXM5 80GB (Hopper, compute capability "
                    "9.0): its nvfp4 method needs 10.0 or newer and SGLang refuses to start; choose awq-int4 or "
                    "gptq-int4 weights, engine llama.cpp (GGUF), or a newer card"], r.notes


@pytest.mark.parametrize(("engine", "version", "least"), [
    # vLLM's ModelOptNvFp4Config: 100 until the FP4 Marlin kernel (#17687, merged 2025-05-09..12, after 0.8.5.post1),
    # 80 (the first release that may hold it, 0.9.0, is given it), 75 from 0.13.0 (#29901, Marlin on Turing)
    ("vllm", "0.8.5.post1", 100), ("vllm", "0.9.0", 80), ("vllm", "0.12.0", 80), ("vllm", "0.13.0", 75),
    ("vllm", None, 75),
    # SGLang's ModelOptFp4Config: 100 (faeb9685) until #25655 (Marlin W4A16 on Ampere/Hopper, after 0.5.12), then 80
    ("sglang", "0.5.12", 100), ("sglang", "0.5.13", 80), ("sglang", None, 80),
])
def test_the_nvfp4_floor_follows_the_release(engine, version, least):
    from gpuplan.engines import engine_for
    from gpuplan.scenario import Scenario

    s = Scenario(**{**LLAMA, "engine": engine, "quant": "nvfp4", **({"engine_version": version} if version else {})})
    assert engine_for(s).least_capability(s, "nvfp4") == least


@pytest.mark.parametrize(("version", "gpu", "sentence"), [
    # below ModelOptNvFp4Config's floor: vLLM stops at start (75 from 0.13.0, 80 surely before it)
    (None, "v100-sxm2-32gb",
     "vLLM has no nvfp4 kernel for Tesla V100 SXM2 32GB (Volta, compute capability 7.0): its nvfp4 method needs 7.5 "
     "or newer and vLLM refuses to start; choose gptq-int4 weights, engine llama.cpp (GGUF), or a newer card"),
    ("0.12.0", "t4",
     "vLLM has no nvfp4 kernel for Tesla T4 (Turing, compute capability 7.5): its nvfp4 method needs 8.0 or newer and "
     "vLLM refuses to start; choose awq-int4 or gptq-int4 weights, engine llama.cpp (GGUF), or a newer card"),
    # at or above it but without fp4 tensor cores: vLLM starts weight-only (Marlin), which gpuplan does not time
    (None, "h100-sxm",
     "H100 SXM5 80GB (Hopper) has no fp4 tensor cores for nvfp4 weights: vLLM runs them there weight-only "
     "(dequantized to 16 bits in its Marlin kernel), which gpuplan does not time; use quant fp8 or awq-int4, or a "
     "Blackwell card (B200, RTX 5090)"),
    ("0.13.0", "t4",
     "Tesla T4 (Turing) has no fp4 tensor cores for nvfp4 weights: vLLM runs them there weight-only (dequantized to "
     "16 bits in its Marlin kernel), which gpuplan does not time; use quant fp8 or awq-int4, or a Blackwell card "
     "(B200, RTX 5090)"),
    # s31-fp4: before 0.9.0 no Marlin path at all (100); 0.9.0 is given the Marlin floor (80)
    ("0.8.5.post1", "h100-sxm",
     "vLLM has no nvfp4 kernel for H100 SXM5 80GB (Hopper, compute capability 9.0): its nvfp4 method needs 10.0 or "
     "newer and vLLM refuses to start; choose awq-int4 or gptq-int4 weights, engine llama.cpp (GGUF), or a newer "
     "card"),
    ("0.9.0", "h100-sxm",
     "H100 SXM5 80GB (Hopper) has no fp4 tensor cores for nvfp4 weights: vLLM runs them there weight-only "
     "(dequantized to 16 bits in its Marlin kernel), which gpuplan does not time; use quant fp8 or awq-int4, or a "
     "Blackwell card (B200, RTX 5090)"),
])
def test_vllm_nvfp4_off_blackwell_is_one_sentence(version, gpu, sentence):
    """Session 31: vLLM's ``modelopt_fp4`` floor (``ModelOptNvFp4Config.get_min_capability``: 75 at vllm-project/vllm
    00155cde ``vllm/model_executor/layers/quantization/modelopt.py``; 100 as first added; Marlin on Turing from
    0.13.0, #29901) is in its table. Below it the plan says vLLM refuses to start; above it, where vLLM runs the
    weights weight-only, that gpuplan does not time that path (main: "has no fp4 tensor cores ... (Blackwell has)"
    for every card, and recommend dropped a named H100 without a word)."""
    s = {**LLAMA, "quant": "nvfp4", "gpu": gpu, **({"engine_version": version} if version else {})}
    with pytest.raises(GpuplanError) as said:
        estimate(s)
    assert str(said.value) == sentence


def test_vllm_recommend_names_a_card_left_out_of_nvfp4():
    r = recommend({**LLAMA, "quant": "nvfp4"}, gpus=["h100-sxm", "b200", "rtx-5090"], top=3)
    assert {x.gpu_id for x in r.setups} <= {"nvidia-b200", "nvidia-geforce-rtx-5090"} and r.setups
    said = [n for n in r.notes if n.startswith("h100-sxm left out:")]
    assert said == ["h100-sxm left out: H100 SXM5 80GB (Hopper) has no fp4 tensor cores for nvfp4 weights: vLLM "
                    "runs them there weight-only (dequantized to 16 bits in its Marlin kernel), which gpuplan does "
                    "not time; use quant fp8 or awq-int4, or a Blackwell card (B200, RTX 5090)"], r.notes
    assert not [n for n in r.notes if n.startswith(("b200", "rtx-5090"))], r.notes


@pytest.mark.parametrize(("version", "gpu", "sentence"), [
    # current SGLang (0.5.13 on): ModelOptFp4Config's 8.0; below it SGLang stops at start
    (None, "t4",
     "SGLang has no nvfp4 kernel for Tesla T4 (Turing, compute capability 7.5): its nvfp4 method needs 8.0 or newer "
     "and SGLang refuses to start; choose awq-int4 or gptq-int4 weights, engine llama.cpp (GGUF), or a newer card"),
    # at or above it without fp4 tensor cores: weight-only through Marlin W4A16 (#25655), which gpuplan does not time
    (None, "h100-sxm",
     "H100 SXM5 80GB (Hopper) has no fp4 tensor cores for nvfp4 weights: SGLang runs them there weight-only "
     "(dequantized to 16 bits in its Marlin kernel), which gpuplan does not time; use quant fp8 or awq-int4, or a "
     "Blackwell card (B200, RTX 5090)"),
    ("0.5.13", "a100-sxm4-80gb",
     "A100 SXM4 80GB (Ampere) has no fp4 tensor cores for nvfp4 weights: SGLang runs them there weight-only "
     "(dequantized to 16 bits in its Marlin kernel), which gpuplan does not time; use quant fp8 or awq-int4, or a "
     "Blackwell card (B200, RTX 5090)"),
    # 0.5.12 and before: 10.0 (faeb9685)
    ("0.5.12", "a100-sxm4-80gb",
     "SGLang has no nvfp4 kernel for A100 SXM4 80GB (Ampere, compute capability 8.0): its nvfp4 method needs 10.0 or "
     "newer and SGLang refuses to start; choose awq-int4 or gptq-int4 weights, engine llama.cpp (GGUF), or a newer "
     "card"),
])
def test_sglang_nvfp4_off_blackwell_is_one_sentence(version, gpu, sentence):
    """Session 31 (s31-fp4): SGLang's ``modelopt_fp4`` floor by release, as vLLM's (main: 10.0 for every release, so
    current SGLang was said to refuse an H100 that sgl-project/sglang#25655 ran Nemotron NVFP4 on)."""
    s = {**LLAMA, "engine": "sglang", "quant": "nvfp4", "gpu": gpu, **({"engine_version": version} if version else {})}
    with pytest.raises(GpuplanError) as said:
        estimate(s)
    assert str(said.value) == sentence
