"""Peak GPU memory of inference: the weights split over the GPUs, then what the serving engine holds beside them.

Each engine's allocation (transformers' growing cache, vLLM's preallocated budget, SGLang's token pool, llama.cpp's
layer split, TensorRT-LLM's paged blocks) is its profile's (:mod:`gpuplan.engines`).
"""

from __future__ import annotations

from .. import overheads as oh
from ..engines import engine_for
from ..hardware import GpuSpec
from ..model.spec import ModelSpec
from ..scenario import Scenario
from ..tensors.breakdown import Estimate
from ..tensors.state import attention_kernel, weight_format


def inference_memory(s: Scenario, m: ModelSpec, capacity_gib: float | None, gpu: GpuSpec | None = None) -> Estimate:
    """The weights in their storage format over ``tp x pp`` GPUs, completed by the engine's profile."""
    e = Estimate(slack=oh.ALLOCATOR_SLACK_INFER)
    if attention_kernel(s, m) != s.attention and s.engine == "transformers":
        e.assumptions.append(f"{m.family} runs eager attention in transformers (no SDPA support): the s x s "
                             "scores are materialized; attention flash (FlashAttention-2) avoids them")
    fmt, skip = weight_format(s, m)
    e.weights = sum(m.weight_bytes(fmt, skip=skip).values()) / (s.tp * s.pp)
    if fmt.name != "none":
        kept = "norms" if fmt.name.startswith("mlx-") else "embeddings, lm_head and norms"
        e.assumptions.append(f"weights stored as {fmt.name}; {kept} at {s.compute_bytes} bytes")
    return engine_for(s).memory(s, m, e, fmt, gpu, capacity_gib)
