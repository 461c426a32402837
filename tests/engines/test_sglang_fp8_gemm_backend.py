"""SGLang's ``--fp8-gemm-backend`` as the scenario's ``fp8_gemm_backend`` (engines/block_fp8.py, engines/sglang.py
card_refusal, launchers/sglang.py): said only when set, refused on a card without its kernel, written into the launch
file, and FlashInfer's groupwise GEMM slower than DeepGEMM on a DeepSeek-R1 prompt on B200s."""

from __future__ import annotations

import pytest

from gpuplan import GpuplanError, estimate
from gpuplan.launchers import launch_files, launch_plan
from gpuplan.scenario import scenario_from

R1 = {"model": "deepseek-r1", "task": "infer", "engine": "sglang", "gpu": "b200", "num_gpus": 8, "tp": 8,
      "prompt_tokens": 8000, "output_tokens": 1000, "engine_version": "0.5.12"}


def test_said_only_when_set_and_checked_against_sglangs_choices():
    """Unset, the field stays out of a scenario's dump (recorded answers read as they did); a value outside SGLang's
    choices handled here is one clear error."""
    assert "fp8_gemm_backend" not in scenario_from(R1).model_dump()
    assert scenario_from({**R1, "fp8_gemm_backend": "flashinfer_trtllm"}).fp8_gemm_backend == "flashinfer_trtllm"
    with pytest.raises(GpuplanError, match="fp8_gemm_backend"):
        scenario_from({**R1, "fp8_gemm_backend": "cublas"})


@pytest.mark.parametrize(("backend", "gpu", "words"), [
    ("flashinfer_trtllm", "h200", "runs on B200/B300-class cards"),
    ("deep_gemm", "l40s", "runs on Hopper and Blackwell"),
])
def test_refused_on_a_card_without_the_kernel(backend, gpu, words):
    """SGLang's _dispatch_explicit_backend raises at start there; gpuplan says so in one sentence."""
    with pytest.raises(GpuplanError, match=words):
        estimate({**R1, "gpu": gpu, "fp8_gemm_backend": backend}, advise=False)


def test_the_launch_file_writes_it_and_another_engine_is_warned():
    text = {f.name: f for f in launch_files(launch_plan({**R1, "fp8_gemm_backend": "flashinfer_trtllm"}),
                                            ["sglang"])}["sglang-serve.sh"].text
    assert "--fp8-gemm-backend flashinfer_trtllm " in text
    plain = {f.name: f for f in launch_files(launch_plan(R1), ["sglang"])}["sglang-serve.sh"].text
    assert "--fp8-gemm-backend" not in plain
    warned = estimate({**R1, "engine": "vllm", "engine_version": None, "fp8_gemm_backend": "flashinfer_trtllm"},
                      advise=False).warnings
    assert any("fp8_gemm_backend is sglang's setting" in w for w in warned)


def test_flashinfers_linears_lengthen_an_8k_prompt_on_b200s():
    """The same 8,000-token DeepSeek-R1 prompt on 8 B200s: the dense linears at 0.314 of the fp8 rate rather than
    0.875 (overheads.FLASHINFER_GROUPWISE_KERNEL_SHARE) take the first token 198 -> 251 ms (+52 ms: the note's
    TP-scaling part of InferenceX's 8k shortfall was 36-38 ms on B300); a decode step of one row is bound by the
    weights' bytes and stays at 6.58 ms. Both carry the TokenizerManager's tokenizing of the prompt (s27: 8,000 x 4 us
    = 32 ms, overheads.TOKENIZE_S_PER_TOKEN) less the refitted request constant's 0.42 ms: 166.7 + 31.6 = 198.3 ms."""
    own = estimate(R1, advise=False).speed
    flashinfer = estimate({**R1, "fp8_gemm_backend": "flashinfer_trtllm"}, advise=False).speed
    assert own.ttft_s == pytest.approx(0.1983, abs=0.001) and flashinfer.ttft_s == pytest.approx(0.2508, abs=0.001)
    assert flashinfer.step_time_s == pytest.approx(own.step_time_s, rel=1e-3)
