"""Quantized checkpoints a model's publishers ship, so that a plan can point at them instead of asking for a
conversion, and priced as they ship.

NVFP4: NVIDIA's Model Optimizer checkpoints in NVFP4 on Hugging Face (the ``nvidia`` organization), by the
model they quantize. They carry an ``hf_quant_config.json`` that TensorRT-LLM reads, and vLLM and SGLang load them
with ``--quantization modelopt_fp4``. Sources: NVIDIA/TensorRT-LLM ``README.md`` (news of 2025-02-25: DeepSeek-R1,
Llama-3.3-70B-Instruct and Llama-3.1-405B-Instruct FP4); sgl-project/sglang ``python/sglang/test/test_utils.py``
(``DEFAULT_DEEPSEEK_NVFP4_MODEL_FOR_TEST = "nvidia/DeepSeek-V3-0324-FP4"``) and its B200 nightly tests
(``nvidia/DeepSeek-R1-0528-NVFP4-v2``); NVIDIA's DGX Spark playbooks (Qwen3-235B-A22B, Qwen3-30B-A3B, Llama-4 Scout
and Maverick FP4).

Model Optimizer does not quantize every linear layer: each checkpoint lists the modules it leaves in bf16
(``exclude_modules``). The lists found, with their sources, are bundled in ``data/nvfp4_checkpoints.json``
(DeepSeek-R1-FP4: every attention projection and the routers, NVIDIA's "Precision Strategy" for DeepSeek-R1 on
B200); where none was found the entry says so and a plan keeps only the routers at 16 bits.
"""

from __future__ import annotations

import json
from functools import cache
from importlib import resources


@cache
def _entries() -> dict[str, dict]:
    text = (resources.files("gpuplan") / "data" / "nvfp4_checkpoints.json").read_text()
    return json.loads(text)["checkpoints"]


def published(model_name: str, fmt: str) -> str | None:
    """The Hugging Face id of the checkpoint of ``model_name`` (its Hugging Face id) that its publishers ship in
    ``fmt`` (``nvfp4``), or None."""
    entry = _entries().get(model_name.lower()) if fmt == "nvfp4" else None
    return entry["repo"] if entry else None


def excluded_modules(model_name: str, fmt: str) -> list[str] | None:
    """The modules the published ``fmt`` checkpoint of ``model_name`` leaves unquantized (its
    ``exclude_modules`` patterns), or None where there is no such checkpoint or its list was not found."""
    entry = _entries().get(model_name.lower()) if fmt == "nvfp4" else None
    return entry["exclude"] if entry else None
