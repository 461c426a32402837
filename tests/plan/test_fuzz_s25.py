"""Findings of session 25's fuzzing (bench/results/fuzz_s25.md), each a case that was answered with a plan, or
crashed, before its fix."""

from __future__ import annotations

import pytest

import gpuplan
from gpuplan.errors import GpuplanError


@pytest.mark.parametrize("fields, text", [
    # a BERT fully fine-tuned on an int8 or q4_k_m base "fitted" (its weights counted 8- or 4-bit and trained)
    (dict(model="bert-base-uncased", task="train", method="full", quant="int8", gpu="rtx-4090"), "take no gradients"),
    (dict(model="bert-base-uncased", task="train", method="full", quant="gguf-q4_k_m", gpu="rtx-4090"),
     "no training stack loads it"),
    (dict(model="sdxl", task="train", method="full", quant="nf4", gpu="rtx-4090"), "take no gradients"),
    # GGUF and MLX files are serving formats: no trainer loads one as a LoRA base
    (dict(model="llama-3.2-1b", task="train", method="lora", quant="gguf-q4_k_m", gpu="rtx-4090"),
     "no training stack loads it"),
    (dict(model="llama-3.2-1b", task="train", method="lora", quant="mlx-4bit", gpu="rtx-4090"),
     "no training stack loads it"),
    (dict(model="sdxl", task="train", method="lora", quant="gguf-q4_k_m", gpu="rtx-4090"),
     "no training stack loads it"),
    # transformers serves no MLX checkpoint (decoder or encoder), and dequantizes a GGUF one
    (dict(model="llama-3.2-1b", task="infer", quant="mlx-4bit", gpu="rtx-4090"), "transformers does not load"),
    (dict(model="bert-base-uncased", task="infer", quant="mlx-4bit", gpu="rtx-4090"), "MLX's own checkpoint"),
    (dict(model="sdxl", task="infer", quant="mlx-8bit", gpu="rtx-4090"), "MLX's own checkpoint"),
    (dict(model="bert-base-uncased", task="infer", quant="gguf-q4_k_m", gpu="rtx-4090"), "dequantizes a GGUF"),
    (dict(model="whisper-large-v3", task="infer", quant="gguf-q8_0", gpu="rtx-4090"), "dequantizes a GGUF"),
    # the card's dtypes, as a decoder's plan is refused them
    (dict(model="bert-base-uncased", task="train", precision="bf16-mixed", gpu="t4"), "T4 has no bf16"),
    (dict(model="whisper-large-v3", task="infer", precision="fp8-mixed", gpu="t4"), "T4 has no fp8"),
    (dict(model="bert-base-uncased", task="infer", quant="nvfp4", gpu="rtx-4090"), "no fp4 tensor cores"),
    (dict(model="sdxl", task="infer", quant="nvfp4", gpu="t4"), "no fp4 tensor cores"),
    (dict(model="bert-base-uncased", task="infer", quant="fp8", gpu="rtx-3090"), "no fp8 tensor cores"),
    (dict(model="bert-base-uncased", task="infer", attention="flash", gpu="t4"), "FlashAttention 2"),
    # s30-fuzz (test_metamorphic[module rules], seed 30301): diffusers' flash attention is the same flash-attn
    (dict(model="sdxl", task="infer", attention="flash", gpu="apple-m3-max"), "FlashAttention 2 runs on Ampere"),
    (dict(model="sdxl", task="train", method="lora", attention="flash", gpu="t4"), "FlashAttention 2 runs on Ampere"),
])
def test_a_base_or_dtype_no_loader_or_card_runs_is_refused(fields, text):
    with pytest.raises(GpuplanError, match=text):
        gpuplan.estimate(fields, advise=False)


@pytest.mark.parametrize("fields", [
    dict(model="bert-base-uncased", task="train", method="lora", quant="nf4", gpu="rtx-4090"),
    dict(model="bert-base-uncased", task="train", method="qlora", gpu="rtx-4090"),
    dict(model="whisper-large-v3", task="infer", quant="int8", gpu="t4"),
    dict(model="sdxl", task="infer", quant="gguf-q4_k_m", gpu="rtx-4090"),  # diffusers keeps a GGUF denoiser
    dict(model="sdxl", task="infer", quant="fp8", gpu="rtx-3090"),  # diffusers' layerwise fp8 storage
    dict(model="flux-dev", task="train", method="lora", stack="ai-toolkit", gpu="rtx-4090"),  # its fp8 base
    dict(model="sdxl", task="infer", attention="flash", gpu="l40s"),
    dict(model="llama-3.2-1b", task="infer", engine="mlx", quant="mlx-4bit", gpu="m4-max"),
])
def test_the_bases_loaders_keep_still_plan(fields):
    assert gpuplan.estimate(fields, advise=False).to_dict()


def test_searches_refuse_a_serving_format_base_in_one_sentence():
    """fit listed 92 models each refused, recommend 'nothing fits', for LoRA on a GGUF base; recommend still
    advises LoRA for a full fine-tune of nf4 weights, as before."""
    with pytest.raises(GpuplanError, match="no training stack loads it"):
        gpuplan.fit("rtx-4090", task="train", method="lora", quant="gguf-q4_k_m")
    with pytest.raises(GpuplanError, match="no training stack loads it"):
        gpuplan.recommend({"model": "llama-3.2-1b", "task": "train", "method": "lora", "quant": "mlx-4bit",
                           "train_tokens": 1e6})
    rec = gpuplan.recommend({"model": "llama-3.2-1b", "task": "train", "method": "full", "quant": "nf4",
                             "train_tokens": 1e6}, any_method=True, gpus=["rtx-4090"], top=1)
    assert rec.to_dict()["setups"][0]["scenario"]["method"] == "lora"


@pytest.mark.parametrize("price", [-5, 0, 0.5, 1e9])
def test_buy_says_one_range_for_any_price_out_of_it(price):
    """s25-fuzz: --price -5 said 'price must be a number from 0', --price 0 'between 1 and 100,000,000'."""
    with pytest.raises(GpuplanError, match=r"^--price must be a number from 1 to 100,000,000"):
        gpuplan.buy("h100", hours=10, price=price)
    with pytest.raises(GpuplanError, match=r"^price of rtx-5090 must be a number from 1 to 100,000,000"):
        gpuplan.buy(budget_usd=20000, hours=10, prices={"rtx-5090": price})


@pytest.mark.parametrize("model, tokens", [("flux-dev", 100_000), ("sd3.5-large", 513)])
def test_a_prompt_past_the_pipelines_t5_limit_is_refused(model, tokens):
    """s25-fuzz: FLUX.1-dev generating with 100,000 T5 tokens a prompt was planned (2,518 GiB); diffusers'
    FluxPipeline and StableDiffusion3Pipeline raise above max_sequence_length 512 in check_inputs."""
    with pytest.raises(GpuplanError, match="at most 512 T5 tokens"):
        gpuplan.estimate({"model": model, "task": "infer", "seq_len": tokens, "gpu": "h100"}, advise=False)
    assert gpuplan.estimate({"model": model, "task": "infer", "seq_len": 512, "gpu": "h100"}, advise=False)
