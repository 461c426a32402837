"""Quantized checkpoints a model's publishers ship, so that a plan can point at them instead of asking for a
conversion.

``NVFP4``: NVIDIA's Model Optimizer checkpoints in NVFP4 on Hugging Face (the ``nvidia`` organization), by the
model they quantize. They carry an ``hf_quant_config.json`` that TensorRT-LLM reads, and vLLM and SGLang load them
with ``--quantization modelopt_fp4``. Sources: NVIDIA/TensorRT-LLM ``README.md`` (news of 2025-02-25: DeepSeek-R1,
Llama-3.3-70B-Instruct and Llama-3.1-405B-Instruct FP4); sgl-project/sglang ``python/sglang/test/test_utils.py``
(``DEFAULT_DEEPSEEK_NVFP4_MODEL_FOR_TEST = "nvidia/DeepSeek-V3-0324-FP4"``) and its B200 nightly tests
(``nvidia/DeepSeek-R1-0528-NVFP4-v2``); NVIDIA's DGX Spark playbooks (Qwen3-235B-A22B, Qwen3-30B-A3B, Llama-4 Scout
and Maverick FP4).
"""

from __future__ import annotations

NVFP4 = {
    "deepseek-ai/deepseek-r1": "nvidia/DeepSeek-R1-FP4",
    "deepseek-ai/deepseek-r1-0528": "nvidia/DeepSeek-R1-0528-NVFP4-v2",
    "deepseek-ai/deepseek-v3-0324": "nvidia/DeepSeek-V3-0324-FP4",
    "meta-llama/llama-3.3-70b-instruct": "nvidia/Llama-3.3-70B-Instruct-FP4",
    "meta-llama/llama-3.1-405b-instruct": "nvidia/Llama-3.1-405B-Instruct-FP4",
    "qwen/qwen3-235b-a22b": "nvidia/Qwen3-235B-A22B-FP4",
    "qwen/qwen3-30b-a3b": "nvidia/Qwen3-30B-A3B-FP4",
    "meta-llama/llama-4-scout-17b-16e-instruct": "nvidia/Llama-4-Scout-17B-16E-Instruct-FP4",
    "meta-llama/llama-4-maverick-17b-128e-instruct": "nvidia/Llama-4-Maverick-17B-128E-Instruct-FP4",
}


def published(model_name: str, fmt: str) -> str | None:
    """The Hugging Face id of the checkpoint of ``model_name`` (its Hugging Face id) that its publishers ship in
    ``fmt`` (``nvfp4``), or None."""
    return NVFP4.get(model_name.lower()) if fmt == "nvfp4" else None
