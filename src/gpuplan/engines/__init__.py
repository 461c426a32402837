"""Serving engines (design.md, "One plan, three words"): one profile per engine, what it allocates at start-up and
how it sizes its KV cache, from its own code per release, checked against public start-up logs.

An :class:`Engine` (:mod:`.base`) answers for one engine: its name and label, the weights and KV dtypes it refuses,
its memory at start-up and its KV pool, the prompt prefix it shares across requests, how its steps are timed, and
the launch target that writes its command. Adding an engine is adding a module here and its entry below.

- :mod:`.transformers`: transformers' own ``generate`` (a cache grown per step, eager Python);
- :mod:`.vllm`: vLLM's memory profiling, ``gpu_memory_utilization`` budget, paged KV blocks and scheduler limits;
- :mod:`.sglang`: SGLang's ``mem_fraction_static`` token pool and radix cache;
- :mod:`.llama_cpp`: llama.cpp's layer split between the GPU and the CPU, and its compute buffers;
- :mod:`.trtllm`: TensorRT-LLM's paged KV cache from ``free_gpu_memory_fraction`` of the memory left free;
- :mod:`.mlx`: MLX's ``mlx-lm`` on Apple silicon (a cache grown in 256-token steps in unified memory).

The KV and recurrent-state arithmetic every engine uses is :mod:`gpuplan.tensors.kv`.
"""

from __future__ import annotations

from ..scenario import Scenario
from .base import Engine, HostLoop, KvPool, Timing
from .llama_cpp import LLAMA_CPP
from .mlx import MLX
from .sglang import SGLANG
from .transformers import TRANSFORMERS
from .trtllm import TRTLLM
from .vllm import VLLM

ENGINES: dict[str, Engine] = {e.name: e for e in (TRANSFORMERS, VLLM, SGLANG, LLAMA_CPP, TRTLLM, MLX)}


def engine_for(s: Scenario) -> Engine:
    """The profile of the scenario's ``engine``."""
    return ENGINES[s.engine]


__all__ = ["ENGINES", "Engine", "HostLoop", "KvPool", "Timing", "engine_for"]
