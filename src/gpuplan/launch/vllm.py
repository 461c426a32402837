"""``vllm-serve.sh``: the ``vllm serve`` command of a serving plan (engine vllm).

The memory-relevant flags carry the estimate: ``--gpu-memory-utilization`` (the share vLLM preallocates),
``--tensor-parallel-size`` / ``--pipeline-parallel-size``, ``--dtype``, ``--kv-cache-dtype``, ``--quantization`` when
the plan quantizes a checkpoint that is not already quantized, ``--max-num-seqs`` (the planned concurrency) and
``--max-model-len``: the longest sequence the predicted KV pool holds (``max_context_tokens`` of the estimate),
capped by the model's ``max_position_embeddings``; vLLM refuses to start when one sequence of ``max_model_len``
does not fit its pool. Option names and choices are those of vLLM 0.32's parser
(``vllm/entrypoints/launchers/cli_args.py`` ``make_arg_parser``, ``vllm/config/cache.py`` ``CacheDType``,
``vllm/model_executor/layers/quantization/__init__.py`` ``QuantizationMethods``).
"""

from __future__ import annotations

from ..errors import GpuplanError
from .files import LaunchFile, shell_text
from .plan import LaunchPlan
from .stack import LaunchOptions

NAME = "vllm"
SCRIPT = "vllm-serve.sh"
DTYPE = {"bf16": "bfloat16", "fp16": "float16", "fp32": "float32"}
KV_CACHE_DTYPE = {"auto": "auto", "fp16": "float16", "bf16": "bfloat16", "fp8": "fp8", "int8": "int8_per_token_head"}
QUANTIZATION = {"fp8": "fp8", "awq-int4": "awq", "gptq-int4": "gptq", "gptq-int8": "gptq", "mxfp4": "mxfp4",
                "int8": "int8_per_channel_weight_only"}  # online int8 weight-only; AWQ/GPTQ need such a checkpoint


def applies(plan: LaunchPlan) -> str | None:
    s = plan.scenario
    if plan.train:
        return "vLLM serves models; a training plan runs with --target trainer, accelerate, deepspeed or torchrun"
    if s.engine != "vllm":
        return (f"the plan is for engine {s.engine}, whose memory differs from vLLM's preallocated pool: plan "
                "again with --engine vllm")
    if s.precision == "fp8-mixed":
        return "vLLM serves fp8 as weight quantization: set quant fp8 and precision bf16-true"
    if _quant(plan) is not None and _quant(plan) not in QUANTIZATION:
        return (f"vLLM 0.32 cannot load {s.quant} weights (no bitsandbytes or GGUF loading in its quantization "
                "methods): choose awq-int4, gptq-int4, fp8 or int8")
    if plan.result.memory.max_context_tokens is None:
        return "the estimate has no KV pool for this plan (a GPU is needed)"
    return None


def _own_quant(plan: LaunchPlan) -> str | None:
    """The checkpoint's own format when it ships quantized (vLLM reads it from config.json)."""
    fmt, _ = plan.model.shipped_format()
    return None if fmt.name == "none" else fmt.name


def _quant(plan: LaunchPlan) -> str | None:
    """The quantization to ask vLLM for: the plan's, unless the checkpoint already ships it (or none)."""
    q = plan.scenario.quant
    return None if q in (None, "none") or q == _own_quant(plan) else q


def max_model_len(plan: LaunchPlan) -> int:
    """The predicted KV pool in tokens, capped by the model's context length."""
    pool = plan.result.memory.max_context_tokens or 0
    s = plan.scenario
    if pool < s.prompt_tokens + s.output_tokens:
        raise GpuplanError(f"the predicted KV pool holds {pool:,} tokens, less than one request of "
                           f"{s.prompt_tokens + s.output_tokens:,}: lower the context or add GPUs")
    return min(pool, plan.model.max_context) if plan.model.max_context else pool


def command(plan: LaunchPlan, opts: LaunchOptions) -> list[str]:
    s = plan.scenario
    argv = ["vllm", "serve", plan.model.name, "--tensor-parallel-size", str(s.tp)]
    if s.pp > 1:
        argv += ["--pipeline-parallel-size", str(s.pp)]
    argv += ["--dtype", DTYPE[s.precision.split("-")[0]], "--gpu-memory-utilization", f"{s.gpu_memory_utilization:g}",
             "--max-model-len", str(max_model_len(plan)), "--max-num-seqs", str(s.batch_size),
             "--kv-cache-dtype", KV_CACHE_DTYPE[s.kv_cache_dtype]]
    if _quant(plan) is not None:
        argv += ["--quantization", QUANTIZATION[_quant(plan)]]
    if s.max_num_batched_tokens:
        argv += ["--max-num-batched-tokens", str(s.max_num_batched_tokens)]
    return [*argv, "--port", str(opts.port)]


def notes(plan: LaunchPlan, opts: LaunchOptions) -> list[str]:
    s, mem = plan.scenario, plan.result.memory
    out = [f"run: bash {SCRIPT}; the OpenAI-compatible server listens on port {opts.port}",
           f"KV pool {mem.kv_cache_pool_gib:.1f} GiB per GPU: {mem.max_context_tokens:,} tokens, up to "
           f"{mem.max_concurrency} concurrent requests of {s.prompt_tokens + s.output_tokens:,} tokens "
           f"(--max-num-seqs is the planned {s.batch_size})"]
    if _quant(plan) in ("awq-int4", "gptq-int4", "gptq-int8"):
        out.append(f"--quantization {QUANTIZATION[s.quant]} needs a checkpoint quantized that way: replace "
                   f"{plan.model.name} with its {s.quant} version")
    return out


def files(plan: LaunchPlan, opts: LaunchOptions) -> list[LaunchFile]:
    return [LaunchFile(name=SCRIPT, target=NAME, text=shell_text(plan, command(plan, opts), notes=notes(plan, opts)),
                       reader="bash (vllm serve)", executable=True)]
