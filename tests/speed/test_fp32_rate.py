"""fp32 is timed at the fp32 rate unless TF32 is chosen (issue 33, item 6): PyTorch has run fp32 matmuls in fp32
since 1.12 (torch.backends.cuda.matmul.allow_tf32 defaults to False), and V100/T4 have no TF32 tensor cores at all,
so their fp32 runs on CUDA cores, never at a 16-bit tensor-core rate."""

from __future__ import annotations

import pytest

import gpuplan
from gpuplan.errors import GpuplanError
from gpuplan.hardware import load_gpu
from gpuplan.speed.gemm import peak_flops

JOB = {"model": "qwen2.5-0.5b", "task": "train", "method": "full", "seq_len": 1024}


def speed(gpu: str, precision: str, tf32: bool = False):
    return gpuplan.estimate({**JOB, "gpu": gpu, "precision": precision, "tf32": tf32}, advise=False)


def test_t4_fp32_is_slower_than_fp16_mixed():
    """T4: 8.1 TFLOPS fp32 against 65 TFLOPS fp16 tensor cores; fp32 once came out faster (4,820 vs 4,150 tok/s)."""
    fp32, fp16 = speed("t4", "fp32"), speed("t4", "fp16-mixed")
    assert fp32.speed.tokens_per_s < fp16.speed.tokens_per_s / 2
    assert peak_flops(load_gpu("t4"), "fp32") == pytest.approx(8.1e12)
    said = next(a for a in fp32.assumptions if "TFLOPS" in a)
    assert "8.1 TFLOPS fp32: TF32 is off by default since PyTorch 1.12" in said
    assert speed("t4", "fp32", tf32=True).speed.tokens_per_s == pytest.approx(fp32.speed.tokens_per_s)


def test_tf32_is_the_tf32_rate_where_the_card_has_it():
    a100 = load_gpu("a100-sxm4-80gb")
    assert peak_flops(a100, "fp32") == pytest.approx(19.5e12) and peak_flops(a100, "tf32") == pytest.approx(156e12)
    fp32, tf32 = speed("a100-sxm4-80gb", "fp32"), speed("a100-sxm4-80gb", "fp32", tf32=True)
    assert tf32.speed.tokens_per_s > 2 * fp32.speed.tokens_per_s
    assert fp32.speed.tokens_per_s < speed("a100-sxm4-80gb", "bf16-mixed").speed.tokens_per_s
    assert "tf32 true for the TF32 rate, 156.0 TFLOPS" in next(a for a in fp32.assumptions if "TFLOPS" in a)
    assert tf32.scenario["tf32"] is True and "tf32" not in speed("a100-sxm4-80gb", "bf16-mixed").scenario


def test_tf32_goes_with_fp32_only():
    with pytest.raises(GpuplanError, match="tf32 runs fp32 matmuls on TF32 tensor cores: it goes with precision"):
        gpuplan.estimate({**JOB, "gpu": "h100-sxm", "tf32": True})  # the default precision is bf16-mixed
