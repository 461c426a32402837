"""Shared experts on a second stream in the engines' decode graphs (engines/sglang.py and engines/trtllm.py
shared_experts_stream; speed/inference.py StepTimer._shared_experts_latency_s), and the step model's decode-only
steps that carry them (serving/steptime.py decode_dense_s)."""

import dataclasses

import pytest

from gpuplan.engines import sglang, trtllm
from gpuplan.hardware import load_gpu
from gpuplan.model.catalog import load_model
from gpuplan.scenario import scenario_from
from gpuplan.serving.steptime import sample
from gpuplan.speed.inference import step_timer

R1 = load_model("deepseek-r1")


def _setup(gpu: str, **kw):
    sc = dict(model="deepseek-r1", task="infer", engine="sglang", gpu=gpu, tp=8, num_gpus=8, engine_version="0.5.12")
    s = scenario_from(sc | kw)
    return s, load_gpu(s.gpu)


def _serial(timer):
    return dataclasses.replace(timer, timing=dataclasses.replace(timer.timing, shared_experts_stream=False))


@pytest.mark.parametrize("gpu, kw, apart", [
    ("b200", {}, True),  # SM 10.x: flashinfer_trtllm by default, which turns shared-expert fusion off
    ("h200", {}, False),  # Hopper at TP 8: the shared expert fused into the Triton MoE
    ("h200", {"ep": 8}, True),  # expert parallel on CUDA: no fusion
    ("mi300x", {"ep": 8}, False),  # ROCm: no alt_stream without SGLANG_ROCM_USE_MULTI_STREAM
    ("h200", {"engine_version": "0.4.3.post2"}, False),  # the first DeepSeek releases are timed apart
    ("b200", {"engine_version": "0.5.3"}, False),  # before flashinfer_trtllm became SM 10.x's default
])
def test_which_sglang_runs_put_the_shared_experts_beside_the_routed_ones(gpu, kw, apart):
    s, g = _setup(gpu, **kw)
    assert sglang.shared_experts_stream(s, R1, g) is apart
    assert sglang.shared_experts_stream(s, load_model("llama-3.1-70b"), g) is False  # no shared experts


def test_the_decode_step_hides_the_shared_experts_fixed_time():
    """B200, DeepSeek-R1 FP8 at TP 8 (InferenceX's SGLang setup): 58 MoE layers x 2 shared-expert GEMMs (gate and up
    packed, down) x 3 us of kernel latency under CUDA graphs = 0.348 ms a decode step hidden behind the routed
    experts, whatever the batch; their bytes still count. vLLM PR #26440 ran the same overlap on the same card and
    kernels (DeepSeek-R1 FP8, TRTLLM-Gen MoE, 8 B200s, 32 sequences) and measured TPOT 23.35 -> 22.09 ms: gpuplan's
    saving is positive and below that 1.26 ms (vLLM's shared path adds its quantize and activation kernels)."""
    s, g = _setup("b200")
    timer = step_timer(s, R1, g)
    assert timer.timing.shared_experts_stream
    assert timer._shared_experts_latency_s() == pytest.approx(58 * 2 * 3e-6, rel=1e-12)
    for batch in (1, 8, 32):
        saving = _serial(timer).decode_s(batch, 1500) - timer.decode_s(batch, 1500)
        assert saving == pytest.approx(0.348e-3, rel=1e-9)
    assert 0 < saving < 23.35e-3 - 22.09e-3


def test_a_decode_only_step_is_the_timers_decode_step_where_a_prompt_would_cost_more():
    """The step model keeps decode-only steps on decode_parts' own work: a prompt's step (prefill_parts, its
    layers on one stream) does not hide the shared experts, and a step that holds one keeps the larger figure
    (before, a decode step of T sequences took that larger one)."""
    s, g = _setup("b200")
    timer = step_timer(s, R1, g)
    sm = sample(timer)
    assert timer.prefill_parts(1)["gemm"] > timer.decode_parts(1, 0)["weights"]
    for batch, context in ((1, 1024), (8, 1024), (32, 2048)):
        assert sm.time(0, batch, batch * context) == pytest.approx(timer.decode_s(batch, context), rel=1e-9)
    assert sm.dense_s[0] > sm.decode_dense_s[0]


def test_trtllm_runs_the_shared_experts_beside_the_routed_ones_in_its_decode_graphs():
    """TensorRT-LLM's Deepseekv3MoE.forward and Llama4MoE.forward: routed and shared experts on two streams under
    CUDA graphs; its eager prompt steps run them in line; a built TensorRT engine is not this code. The H200 FP8
    decode of one sequence at TP 8 (issue #5929's calibration setup) hides the shared experts' 0.348 ms; a model
    without shared experts is untouched."""
    assert trtllm.shared_experts_stream(R1) and trtllm.shared_experts_stream(load_model("llama-4-scout"))
    assert not trtllm.shared_experts_stream(load_model("mixtral-8x7b"))
    s, g = _setup("h200", engine="trtllm", engine_version="0.21.0")
    timer = step_timer(s, R1, g)
    assert timer.timing.shared_experts_stream
    assert _serial(timer).decode_s(1, 1600) - timer.decode_s(1, 1600) == pytest.approx(0.348e-3, rel=1e-9)
    assert timer.prefill_parts(1600)["gemm"] == _serial(timer).prefill_parts(1600)["gemm"]
    built = step_timer(scenario_from(dict(model="deepseek-r1", task="infer", engine="trtllm", gpu="h200", tp=8,
                                          num_gpus=8, trtllm_backend="tensorrt")), R1, g)
    assert not built.timing.shared_experts_stream
