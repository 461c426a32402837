"""A launch with DeepGEMM off (speed/deepgemm.py, engines/block_fp8.py without_deepgemm): the plan says the switch
and what it costs where it times DeepGEMM, and SGLang's fallback is planned by ``fp8_gemm_backend`` (issue 31:
InferenceX's dsr1_fp8_b200.sh exports SGL_ENABLE_JIT_DEEPGEMM=false)."""

from __future__ import annotations

import re

import pytest

from gpuplan import estimate
from gpuplan.engines import block_fp8
from gpuplan.hardware import load_gpu
from gpuplan.model.catalog import load_model
from gpuplan.scenario import scenario_from
from gpuplan.speed.deepgemm import deepgemm_warnings

R1 = {"model": "deepseek-r1", "task": "infer", "engine": "sglang", "gpu": "b200", "num_gpus": 8, "tp": 8,
      "prompt_tokens": 8000, "output_tokens": 1000, "engine_version": "0.5.12"}


def said(sc: dict) -> list[str]:
    return [w for w in estimate(sc, advise=False).warnings if "DeepGEMM" in w]


def numbers(warning: str) -> tuple[float, ...]:
    """The prompt's and the decode step's ms, each before and after."""
    got = re.search(r"alone ([\d,]+) -> ([\d,]+) ms .*decode step of \d+ ([\d.]+) -> ([\d.]+) ms", warning)
    return tuple(float(x.replace(",", "")) for x in got.groups())


@pytest.mark.parametrize(("gpu", "setting"), [("b200", "flashinfer_trtllm"), ("h200", "triton")])
def test_sglang_says_the_switch_and_its_cost_as_the_setting_plans_it(gpu, setting):
    """SGLang's _dispatch_auto_backend without DeepGEMM: FlashInfer's groupwise GEMM on SM 10.x, Triton's on SM 9.x.
    The warning's times are the plan's own under the setting it names: on 8 B200s one 8,000-token prompt alone
    198 -> 251 ms (0.875 -> 0.314 of the fp8 rate on the dense linears), the decode step of one bound by the
    weights' bytes either way."""
    (warning,) = said({**R1, "gpu": gpu})
    assert "SGL_ENABLE_JIT_DEEPGEMM=false" in warning and f"--fp8-gemm-backend {setting}" in warning
    own = estimate({**R1, "gpu": gpu}, advise=False).speed
    off = estimate({**R1, "gpu": gpu, "fp8_gemm_backend": setting}, advise=False)
    assert not [w for w in off.warnings if "DeepGEMM" in w]  # set: planned, not warned
    prompt, prompt_off, step, step_off = numbers(warning)
    assert (prompt, prompt_off) == (round(own.ttft_s * 1e3), round(off.speed.ttft_s * 1e3))
    assert (step, step_off) == (round(own.step_time_s * 1e3, 1), round(off.speed.step_time_s * 1e3, 1))
    assert prompt_off > prompt * 1.2
    if gpu == "b200":
        assert (prompt, prompt_off) == (198, 251)


def test_vllm_says_its_switch_and_plans_deepgemm_only():
    """vLLM from 0.19 (DeepGEMM in the wheel): VLLM_USE_DEEP_GEMM=0 runs CUTLASS's block linears, timed at the
    Triton class's 0.257 of the fp8 rate; no setting plans it."""
    (warning,) = said({**R1, "engine": "vllm", "engine_version": None, "gpu": "h200"})
    assert "VLLM_USE_DEEP_GEMM=0" in warning and "26% of the fp8 rate against DeepGEMM's 88%" in warning
    assert "plans vLLM with DeepGEMM on only" in warning


@pytest.mark.parametrize("change", [
    {"fp8_gemm_backend": "deep_gemm"},                  # asked by name: SGLang raises without it, nothing to fall to
    {"engine": "vllm", "engine_version": "0.11.0"},     # the wheel without DeepGEMM: CUTLASS already
    {"gpu": "mi300x"},                                  # ROCm: no DeepGEMM
    {"model": "llama-3.1-8b", "num_gpus": 1, "tp": 1},  # no block-scaled checkpoint
    {"engine": "trtllm", "engine_version": None},       # its DeepGEMM kernels have no switch here
])
def test_no_warning_where_deepgemm_is_not_the_default_timed(change):
    assert said({**R1, **change}) == []


def test_triton_backend_times_tritons_share():
    """``fp8_gemm_backend: triton`` puts the linears in the Triton class on any card (SGLang's
    _dispatch_explicit_backend); the experts keep FlashInfer's TRTLLM-Gen MoE on SM 10.x."""
    s = scenario_from({**R1, "fp8_gemm_backend": "triton"})
    pair = block_fp8.kernels(s, load_gpu("b200"), "sglang", (0, 5, 12))
    assert pair == (block_fp8.TRITON, block_fp8.DEEPGEMM)
    assert block_fp8.without_deepgemm(s, load_gpu("b200"), "sglang", (0, 5, 12)) is None
    plain = scenario_from(R1)
    assert deepgemm_warnings(plain, load_model("deepseek-r1"), load_gpu("b200"))


def test_capacity_rows_and_recommend_say_it_too():
    """Every face: capacity says it on each row it serves on the card (its label first), recommend once per card and
    engine among its rows; a card whose engine runs no DeepGEMM (MI300X) says nothing."""
    import gpuplan

    report = gpuplan.api.capacity("deepseek-r1", engine="sglang", gpus=["b200"], users=32, prompt_tokens=1024,
                                  output_tokens=1024, top=1)
    row = report.plans[0]  # as the CLI's --json gives it
    assert any(w.startswith(f"{row['setup']}: ") and "SGL_ENABLE_JIT_DEEPGEMM=false" in w for w in row["warnings"])
    rec = gpuplan.api.recommend({"model": "deepseek-r1", "task": "infer", "engine": "sglang", "batch_size": 32,
                                 "prompt_tokens": 2048, "output_tokens": 512}, gpus=["h200-sxm", "mi300x"], top=4)
    said = [w for w in rec.warnings if "DeepGEMM" in w]
    assert len(said) == 1 and said[0].startswith("8x h200-sxm sglang: ") and "--fp8-gemm-backend triton" in said[0]
