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


SDXL = {"model": "sdxl", "task": "infer", "gpu": "a100-sxm4-80gb", "resolution": "1024", "inference_steps": 30,
        "precision": "fp32", "attention": "eager"}


def test_a_module_plans_fp32_matmuls_at_the_fp32_rate_and_its_convolutions_at_tf32():
    """PyTorch's defaults (docs notes/cuda.html, TF32 on Ampere): convolutions take TF32
    (torch.backends.cudnn.allow_tf32, on), matmuls do not (torch.backends.cuda.matmul.allow_tf32, off since 1.12).
    huggingface/diffusion-fast's run_benchmark.py sets torch.set_float32_matmul_precision('high') and timed SDXL's
    fp32 call at 7.36 s (batch 1, 30 steps); the Colab notebook of 'Exploring simple optimizations for SDXL', which
    sets nothing, 72.2 s at 4 images and 25 steps: 7.4 times the work of an image-step, 2.9 times longer each."""
    from types import SimpleNamespace

    from gpuplan.speed.modules import Run, _matmul_dtype, _op_dtype

    conv, linear = SimpleNamespace(kind="conv"), SimpleNamespace(kind="linear")
    assert (_op_dtype(Run(dtype="fp32"), conv), _op_dtype(Run(dtype="fp32"), linear)) == ("tf32", "fp32")
    assert (_op_dtype(Run(dtype="fp32", tf32=True), linear), _matmul_dtype(Run(dtype="fp32", tf32=True))) == \
        ("tf32", "tf32")
    assert _op_dtype(Run(dtype="bf16"), conv) == _matmul_dtype(Run(dtype="bf16")) == "bf16"
    plain = gpuplan.estimate(SDXL, advise=False)
    tf32 = gpuplan.estimate({**SDXL, "tf32": True}, advise=False)
    assert plain.work.image_s > 3 * tf32.work.image_s  # SDXL's linears: most of its FLOPs, 8x slower on CUDA cores
    assert tf32.scenario["tf32"] is True  # a module plan reads tf32 (gpuplan.scenario.modules.COMMON_READS)
    assert "matmuls at the fp32 rate, 19.0 TFLOPS achievable (TF32 is off for matmuls by default since PyTorch " \
           "1.12; tf32 true for the TF32 rate)" in " ".join(plain.assumptions)
    assert "fp32 matmuls and convolutions on TF32 tensor cores (tf32 true)" in tf32.assumptions


def test_fp32_on_cuda_cores_takes_the_cards_posted_fp32_matmul_rate():
    """chsasank/device-benchmarks README.md, 'TFLOPs (FP32)' (torch.matmul, square sizes to 6,888): A100 80GB 19,
    T4 4, RTX 4090 58; a T4 has no TF32 tensor cores, so its 'tf32' work is the same CUDA-core work; a card without a
    posting (H100 SXM) keeps its 16-bit share (stas00's MAMF, 792.1 / 989)."""
    from gpuplan.speed.gemm import matmul_fraction

    a100, t4, h100, rtx4090 = (load_gpu(g) for g in ("a100-sxm4-80gb", "t4", "h100-sxm", "rtx-4090"))
    assert matmul_fraction(a100, "fp32") * 19.5 == pytest.approx(19.0)
    assert matmul_fraction(a100, "tf32") == pytest.approx(0.859)  # TF32 on its tensor cores: the MAMF share
    assert matmul_fraction(t4, "fp32") * 8.1 == matmul_fraction(t4, "tf32") * 8.1 == pytest.approx(4.0)
    assert matmul_fraction(rtx4090, "fp32") * 82.6 == pytest.approx(58.0)
    assert matmul_fraction(h100, "fp32") == matmul_fraction(h100, "bf16") == pytest.approx(0.801)


def test_an_fp32_prompt_is_served_at_the_fp32_rate_unless_tf32():
    """Serving an fp32 checkpoint runs its GEMMs in fp32 (PyTorch's default, as in training): Qwen2.5-0.5B's 8,000-token
    prompt runs its decoder's linears, 2 x (494.0M - 151,936 x 896 embedding) x 8,000 = 5.73 TFLOP, at least 0.294 s
    at the A100's 19.5 TFLOPS fp32 peak. It had been timed at the bf16 rate whatever the precision (0.074 s: 77
    TFLOPS implied, 4x the card's fp32 peak), and ``tf32`` was dropped from a serving plan as training-only."""
    job = {"model": "qwen2.5-0.5b", "task": "infer", "engine": "vllm", "gpu": "a100-sxm4-80gb", "precision": "fp32",
           "prompt_tokens": 8000, "output_tokens": 16}
    fp32 = gpuplan.estimate(job, advise=False)
    tf32 = gpuplan.estimate({**job, "tf32": True}, advise=False)
    work = 2 * (fp32.model.params_total - 151936 * 896) * 8000
    assert work == pytest.approx(5.73e12, rel=0.01)
    assert work / fp32.speed.ttft_s < 19.5e12
    assert work / tf32.speed.ttft_s < 156e12
    assert tf32.speed.ttft_s < fp32.speed.ttft_s / 3
    assert tf32.scenario["tf32"] is True
