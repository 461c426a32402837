"""Serving engines (design.md, "One plan, three words"): one profile per engine, what it allocates at start-up and
how it sizes its KV cache, from its own code per release, checked against public start-up logs.

An :class:`Engine` (:mod:`.base`) answers for one engine: its name and label, the weights and KV dtypes it refuses,
its memory at start-up and its KV pool, the prompt prefix it shares across requests, how its steps are timed, and
the launch target that writes its command; the pool and the timing are records of :mod:`.records`. Adding an
engine is adding a module here and its entries below.

- :mod:`.transformers`: transformers' own ``generate`` (a cache grown per step, eager Python);
- :mod:`.vllm`: vLLM's memory profiling, ``gpu_memory_utilization`` budget, paged KV blocks and scheduler limits;
- :mod:`.sglang`: SGLang's ``mem_fraction_static`` token pool and radix cache;
- :mod:`.llama_cpp`: llama.cpp's layer split between the GPU and the CPU, and its compute buffers;
- :mod:`.trtllm`: TensorRT-LLM's paged KV cache from ``free_gpu_memory_fraction`` of the memory left free;
- :mod:`.mlx`: MLX's ``mlx-lm`` on Apple silicon (a cache grown in 256-token steps in unified memory).

The KV and recurrent-state arithmetic every engine uses is :mod:`gpuplan.tensors.kv`.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING

from .base import Engine

if TYPE_CHECKING:
    from ..scenario import Scenario

# each engine's name -> its module here and its profile's name there
HOMES = {"transformers": ("transformers", "TRANSFORMERS"), "vllm": ("vllm", "VLLM"), "sglang": ("sglang", "SGLANG"),
         "llama.cpp": ("llama_cpp", "LLAMA_CPP"), "trtllm": ("trtllm", "TRTLLM"), "mlx": ("mlx", "MLX")}
# the scenario fields only one engine reads: given to a plan that another engine serves, they are said in a
# warning (one file may hold several engines' settings), or refused where that engine refuses them itself
# (REFUSES_FOREIGN: TensorRT-LLM's); gpuplan.plan.refusals reads them here, without loading every profile
OWN_SETTINGS = {"vllm": ("gpu_memory_utilization", "enforce_eager", "flashinfer_sampler", "entry_point"),
                "sglang": ("mem_fraction_static", "fp8_gemm_backend", "scheduler_recv_interval"),
                "llama.cpp": ("ubatch_tokens", "flash_attention", "cpu_layers"),
                "trtllm": ("free_gpu_memory_fraction", "tokens_per_block", "capacity_scheduler_policy",
                           "trtllm_backend")}
# the scenario fields some engines read and the others leave out, with the engines that read each: vLLM's scheduler
# caps are TensorRT-LLM's max_batch_size and max_num_tokens (engines/trtllm.py), and SGLang sizes its own
# (max_running_requests, chunked_prefill_size: engines/sglang.py); the context is vLLM's --max-model-len, SGLang's
# --context-length and TensorRT-LLM's --max_seq_len (each profile's context_flag), llama.cpp, mlx-lm and
# transformers take no such limit; a release is read by vLLM's and SGLang's rules and llama.cpp's build tag
# (speed/ggml.py build); the attention implementation is the model code's in transformers, ggml and mlx-lm, while
# vLLM, SGLang and TensorRT-LLM run their own fused backends (speed/inference.py engine_attention). Said as
# OWN_SETTINGS are, by the same warning
SHARED_SETTINGS = {"max_num_seqs": ("vllm", "trtllm"), "max_num_batched_tokens": ("vllm", "trtllm"),
                   "max_model_len": ("vllm", "sglang", "trtllm"), "engine_version": ("vllm", "sglang", "llama.cpp"),
                   "attention": ("transformers", "llama.cpp", "mlx")}
REFUSES_FOREIGN = frozenset({"trtllm"})
# the engines whose scheduler gpuplan.serving.simulate runs: a load (users, rate_rps, capacity's searches) is
# simulated on these only (gpuplan.plan.refusals says so for the others)
SIMULATED = ("vllm", "sglang", "trtllm")


class _Profiles(Mapping[str, Engine]):
    """Engine name -> its profile, each module imported when its engine is first asked for: a plan is served by one
    engine, and importing the six (vLLM's tables and start-up rules among them) cost every first estimate about
    4 ms (bench/startup.py)."""

    def __init__(self) -> None:
        self._made: dict[str, Engine] = {}

    def __getitem__(self, name: str) -> Engine:
        if name not in self._made:
            module, profile = HOMES[name]
            self._made[name] = getattr(importlib.import_module(f"{__name__}.{module}"), profile)
        return self._made[name]

    def __iter__(self) -> Iterator[str]:
        return iter(HOMES)

    def __len__(self) -> int:
        return len(HOMES)


ENGINES: Mapping[str, Engine] = _Profiles()


def readers(field: str) -> tuple[str, ...]:
    """The engines that read scenario field ``field`` (:data:`OWN_SETTINGS`, :data:`SHARED_SETTINGS`); () for a field
    that is no engine's own setting."""
    own = tuple(name for name, fields in OWN_SETTINGS.items() if field in fields)
    return own or SHARED_SETTINGS.get(field, ())


def engine_for(s: Scenario) -> Engine:
    """The profile of the scenario's ``engine``."""
    return ENGINES[s.engine]


__all__ = ["ENGINES", "OWN_SETTINGS", "REFUSES_FOREIGN", "SHARED_SETTINGS", "SIMULATED", "Engine", "engine_for",
           "readers"]
