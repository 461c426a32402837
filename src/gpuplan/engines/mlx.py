"""MLX (``mlx-lm``): Apple's array framework and its LLM package, on Apple silicon only.

``mlx_lm.generate`` / ``mlx_lm.server`` (ml-explore/mlx-lm ``mlx_lm/generate.py``):

- **Weights**: the checkpoint as ``mlx_lm.convert`` wrote it: 16-bit, or MLX's own 4- and 8-bit affine quantization
  (``quant: mlx-4bit`` / ``mlx-8bit``: :mod:`gpuplan.model.quant`); GGUF, bitsandbytes, GPTQ/AWQ and fp8 files are
  not loaded as such.
- **KV cache**: ``KVCache`` grows in steps of 256 tokens (``mlx_lm/models/cache.py`` ``KVCache.step``), keys and
  values in the model's 16-bit dtype, for every sequence of the batch.
- **Prompt**: processed in steps of ``prefill_step_size`` (2,048) tokens (``generate_step``); the working set is one
  layer's temporaries for a step, and the last position's logits.
- **Memory**: MLX allocates from the unified memory the GPU may wire: the card's usable memory here
  (:mod:`gpuplan.hardware`, macOS's default share; ``sysctl iogpu.wired_limit_mb`` raises it).

Speed (:mod:`gpuplan.speed.mlx`): generation streams every weight once per token at a share of the unified memory's
bandwidth, plus a fixed time per layer (MLX's lazy graph evaluated per token); prompts at a share of the GPU's FP32
rate.
"""

from __future__ import annotations

import math

from .. import overheads as oh
from ..hardware import GpuSpec
from ..model.quant import Format
from ..model.spec import ModelSpec
from ..scenario import Scenario
from ..tensors.breakdown import Estimate
from ..tensors.kv import kv_bytes_per_sequence
from .base import Engine
from .records import HostLoop, Timing
from .transformers import prefill_working_set

KV_STEP = 256  # KVCache.step
PREFILL_STEP = 2048  # generate_step's prefill_step_size


class Mlx(Engine):
    """MLX's ``mlx-lm`` (module docstring)."""

    name = "mlx"
    label = "MLX (mlx-lm)"
    layer_split_words = "mlx-lm's pipeline parallelism (mlx.launch)"
    kv_dtypes = ("auto", "fp16", "bf16")
    loads_quants = False
    tensor_parallel = False
    grows_cache = True
    metal = True
    launch_target = None
    no_chunked_prefill = f"it always prefills in steps of prefill_step_size ({PREFILL_STEP:,} tokens)"

    def refusal(self, s: Scenario, m: ModelSpec) -> str | None:
        if s.quant not in (None, "none", "mlx-4bit", "mlx-8bit"):
            return (f"MLX loads its own quantized checkpoints (mlx_lm.convert -q, mlx-community): set quant mlx-4bit "
                    f"or mlx-8bit, not {s.quant!r}")
        if s.task == "infer" and s.kv_cache_dtype not in self.kv_dtypes:
            return "mlx-lm keeps keys and values in the model's 16-bit dtype: set kv_cache_dtype auto"
        return None

    def card_refusal(self, s: Scenario, gpu: GpuSpec) -> str | None:
        if gpu.vendor != "Apple":  # llama.cpp has no Gaudi backend (engines/llama_cpp.py card_refusal)
            others = "vllm or sglang" if gpu.generation == "Gaudi" else "vllm, sglang or llama.cpp"
            return f"MLX runs on Apple silicon (Metal), and {gpu.name} is {gpu.vendor}'s: serve it with {others}"
        return None

    def memory(self, s: Scenario, m: ModelSpec, e: Estimate, fmt: Format, gpu: GpuSpec | None,
               capacity_gib: float | None) -> Estimate:
        """Weights, the KV cache in 256-token steps for the whole batch, and the larger of one prompt step's
        temporaries and the last decode step's (module docstring)."""
        tokens = math.ceil((s.prompt_tokens + s.output_tokens) / KV_STEP) * KV_STEP
        e.kv_cache = s.batch_size * kv_bytes_per_sequence(s, m, tokens)
        step = s.batch_size * min(s.prompt_tokens, PREFILL_STEP)
        logits = s.batch_size * m.vocab_size * 4
        e.activations = max(prefill_working_set(s, m, step, s.batch_size),
                            prefill_working_set(s, m, s.batch_size, s.batch_size)) + logits
        e.peak_phase = "decode"
        e.assumptions.append(f"MLX: KV cache in {KV_STEP}-token steps, prompts in steps of {PREFILL_STEP} tokens")
        return e

    def timing(self, s: Scenario, m: ModelSpec, gpu: GpuSpec) -> Timing:
        """mlx-lm's loop per token (:data:`~gpuplan.overheads.MLX_STEP_OVERHEAD_S`, 0: ``generate_step`` commits
        the next token's graph with ``mx.async_eval`` before it waits on this one, so its Python runs beside the
        GPU); MLX's kernels (:mod:`gpuplan.speed.mlx`)."""
        return Timing(loop=HostLoop(step_s=oh.MLX_STEP_OVERHEAD_S), kernels="mlx")


MLX = Mlx()
