"""A model to pretrain that exists only as a size: ``model_size 1B`` -> a Llama-style config of published shape.

Each size is the shape of a published decoder of that size, in the Llama architecture (pre-norm RMSNorm, SwiGLU
MLP, rotary positions, untied embeddings), with the 32,000-token SentencePiece vocabulary of Llama and Llama 2
(Touvron et al. 2023, "LLaMA", section 2.1; "Llama 2", section 2.2) and Llama 2's 4,096-token context:

- 125M, 350M, 760M: GPT-3 Small, Medium, Large (Brown et al. 2020, Table 2.1: layers, d_model, heads), with
  Llama's SwiGLU width ``2/3 x 4 d`` rounded up to a multiple of 256 (LLaMA section 2.2);
- 1B: TinyLlama 1.1B (Zhang et al. 2024, Table 1: 22 layers, 2,048 wide, 32 heads in 4 KV groups, MLP 5,632);
- 3B: OpenLLaMA 3B (Geng and Liu 2023, its config.json: 26 layers, 3,200 wide, 32 heads, MLP 8,640);
- 7B, 13B: LLaMA 7B and 13B (Touvron et al. 2023, Table 2; MLP 11,008 and 13,824 in the released configs);
- 34B, 70B: Llama 2 34B and 70B (Touvron et al. 2023, "Llama 2", Table 1: grouped-query attention with 8 KV
  heads; 48 and 80 layers, 8,192 wide, 64 heads, MLP 22,016 and 28,672 as Code Llama 34B and Llama-2-70B ship).

Without ``train_tokens`` or data, the token budget is the compute-optimal 20 tokens per parameter (Hoffmann et al.
2022, "Training Compute-Optimal Large Language Models", Table 3: 20.2 tokens per parameter at 1B, ~20 across
sizes). The model's notes say it is synthetic and where each number comes from.
"""

from __future__ import annotations

import math
import re

from ..errors import GpuplanError

VOCAB = 32_000  # LLaMA / Llama 2 SentencePiece vocabulary
CONTEXT = 4_096  # Llama 2's context length
CHINCHILLA_TOKENS_PER_PARAM = 20.0  # Hoffmann et al. 2022, Table 3

# size -> (layers, hidden, heads, kv heads, MLP width, source)
SHAPES: dict[str, tuple[int, int, int, int, int, str]] = {
    "125M": (12, 768, 12, 12, 2048, "GPT-3 Small's shape (Brown et al. 2020, Table 2.1) with a SwiGLU MLP"),
    "350M": (24, 1024, 16, 16, 2816, "GPT-3 Medium's shape (Brown et al. 2020, Table 2.1) with a SwiGLU MLP"),
    "760M": (24, 1536, 16, 16, 4096, "GPT-3 Large's shape (Brown et al. 2020, Table 2.1) with a SwiGLU MLP"),
    "1B": (22, 2048, 32, 4, 5632, "TinyLlama 1.1B's shape (Zhang et al. 2024, Table 1)"),
    "3B": (26, 3200, 32, 32, 8640, "OpenLLaMA 3B's shape (Geng and Liu 2023)"),
    "7B": (32, 4096, 32, 32, 11008, "LLaMA 7B's shape (Touvron et al. 2023, Table 2)"),
    "13B": (40, 5120, 40, 40, 13824, "LLaMA 13B's shape (Touvron et al. 2023, Table 2)"),
    "34B": (48, 8192, 64, 8, 22016, "Llama 2 34B's shape (Touvron et al. 2023, Llama 2, Table 1; Code Llama 34B)"),
    "70B": (80, 8192, 64, 8, 28672, "Llama 2 70B's shape (Touvron et al. 2023, Llama 2, Table 1)"),
}
PREFIX = "synthetic-"


def _params(size: str) -> float:
    value = float(size[:-1])
    return value * (1e6 if size.endswith("M") else 1e9)


def nearest_size(text: str) -> str:
    """The published size closest (in ratio) to ``text`` (``1B``, ``1.1b``, ``7B``, ``350m``)."""
    match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([mMbB])\s*", text or "")
    if not match:
        raise GpuplanError(f"model_size takes a size like 1B, 7B or 350M, not {text!r}")
    wanted = float(match.group(1)) * (1e6 if match.group(2).lower() == "m" else 1e9)
    if wanted <= 0:
        raise GpuplanError(f"model_size must be positive, not {text!r}")
    best = min(SHAPES, key=lambda k: abs(math.log(_params(k) / wanted)))
    if abs(math.log(_params(best) / wanted)) > math.log(1.6):
        raise GpuplanError(f"no published Llama-style shape near {text}: choose one of {', '.join(SHAPES)}, or pass "
                           "a config.json as --model")
    return best


def size_note(text: str | None) -> str | None:
    """What a ``model_size`` that is not one of :data:`SHAPES` became, in words, where the shape's parameters are
    more than 15 % from the size asked (``2B`` is 3,426,473,600 parameters of OpenLLaMA 3B's shape; ``3B`` itself,
    14 % off, is the shape's own name and says nothing)."""
    if not text:
        return None
    size = nearest_size(text)
    match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([mMbB])\s*", text)
    wanted = float(match.group(1)) * (1e6 if match.group(2).lower() == "m" else 1e9)
    params = param_count(size)
    if abs(params / wanted - 1) <= 0.15:
        return None
    return (f"model_size {text.strip()}: no published shape of that size; the nearest is {size} "
            f"({params:,} parameters, {params / wanted:.2f}x the size asked): name one of {', '.join(SHAPES)} "
            "to choose")


def synthetic_name(text: str) -> str:
    return PREFIX + nearest_size(text).lower()


def config(size: str) -> dict:
    """The config.json of a synthetic model of ``size`` (a key of :data:`SHAPES`)."""
    layers, hidden, heads, kv, mlp, _ = SHAPES[size]
    return {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": hidden,
            "intermediate_size": mlp, "num_hidden_layers": layers, "num_attention_heads": heads,
            "num_key_value_heads": kv, "vocab_size": VOCAB, "max_position_embeddings": CONTEXT,
            "rms_norm_eps": 1e-5, "rope_theta": 10000.0, "hidden_act": "silu", "tie_word_embeddings": False,
            "torch_dtype": "bfloat16"}


def param_count(size: str) -> int:
    """Parameters of the Llama architecture at ``size``: embeddings and LM head, per layer the attention
    projections (q, o: d x d; k, v: d x kv-width), the SwiGLU MLP (3 x d x mlp) and two RMSNorms, a final norm."""
    layers, d, heads, kv, mlp, _ = SHAPES[size]
    kv_width = kv * d // heads
    per_layer = 2 * d * d + 2 * d * kv_width + 3 * d * mlp + 2 * d
    return 2 * VOCAB * d + layers * per_layer + d


def chinchilla_tokens(size: str) -> float:
    return CHINCHILLA_TOKENS_PER_PARAM * param_count(size)


def describe(size: str) -> str:
    layers, d, heads, kv, mlp, source = SHAPES[size]
    return (f"synthetic {size} config: {source}; {layers} layers, {d:,} wide, {heads} heads ({kv} KV), MLP {mlp:,}, "
            f"Llama 2's {VOCAB:,}-token vocabulary and {CONTEXT:,} context")


def synthetic_spec(name: str):
    """The :class:`~gpuplan.model.spec.ModelSpec` of ``synthetic-<size>``."""
    from dataclasses import replace

    from .spec import ModelSpec

    size = nearest_size(name[len(PREFIX):])
    spec = ModelSpec.from_config(config(size), name=PREFIX + size.lower())
    notes = [n for n in spec.notes if "torch_dtype" not in n]
    return replace(spec, notes=(describe(size), *notes))
