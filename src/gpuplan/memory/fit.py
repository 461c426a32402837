"""Whether a scenario can run, and whether it fits: the checks, and the memory report on a GPU.

:func:`check` raises one sentence for combinations that cannot run; :func:`memory_report` estimates the peak
and compares it with the card (vLLM by its KV pool, llama.cpp by the layers it places).
"""

from __future__ import annotations

import math

from ..errors import GpuplanError
from ..hardware import GpuSpec
from ..model.spec import ModelSpec
from ..result import MemoryReport
from ..scenario import INFER_ONLY, TRAIN_ONLY, Scenario
from ..tensors.breakdown import GIB, Estimate, device_overheads
from .host import host_shortfall
from .inference import inference_memory
from .training import training_memory

QLORA_BASES = ("nf4", "fp4", "gptq-int4", "awq-int4")  # the 4-bit bases QLoRA is estimated on


def check(s: Scenario, m: ModelSpec, gpu: GpuSpec | None) -> list[str]:
    """Combinations that cannot run raise :class:`GpuplanError` (one sentence: what, and the fix); doubtful
    ones return warnings."""
    warnings: list[str] = []
    other = sorted(s.model_fields_set & (INFER_ONLY if s.task == "train" else TRAIN_ONLY))
    if other:  # one file may hold both tasks' settings, so this is said, not refused
        kind, batch = (("serving", "micro_batch_size x grad_accum_steps") if s.task == "train" else
                       ("training", "batch_size"))
        warnings.append(f"{', '.join(other)} {'is a' if len(other) == 1 else 'are'} {kind} setting"
                        f"{'s' if len(other) > 1 else ''}: this {'training' if s.task == 'train' else 'serving'} "
                        f"plan leaves {'it' if len(other) == 1 else 'them'} out (its batch is {batch})")
    if s.task == "train" and s.method == "qlora":
        if s.precision in ("fp32", "fp8-mixed"):
            raise GpuplanError(f"precision {s.precision!r} does not work with QLoRA: its 4-bit base computes in "
                               "bf16 or fp16; set precision to bf16-mixed (or fp16-mixed on GPUs without bf16)")
        if s.quant not in (None, *QLORA_BASES):
            raise GpuplanError(f"QLoRA trains adapters on a 4-bit base (nf4, fp4, gptq-int4 or awq-int4), not "
                               f"{s.quant!r}: set quant to nf4 or drop it")
    if s.world_size % (s.tp * s.pp * s.cp):
        what = "tp x pp x cp" if s.cp > 1 else "tp x pp"
        raise GpuplanError(f"{what} = {s.tp * s.pp * s.cp} must divide the {s.world_size} GPUs (num_gpus x "
                           "num_nodes)")
    if s.task == "infer" and s.num_nodes > 1:  # one copy of the model across nodes (issue 33)
        if s.engine not in ("vllm", "sglang", "trtllm"):
            raise GpuplanError(f"{s.engine} serves on one machine: set engine to vllm, sglang or trtllm to split "
                               f"the model across {s.num_nodes} nodes, or plan one node")
        if s.tp * s.pp != s.world_size:
            raise GpuplanError(f"serving over {s.num_nodes} nodes runs one copy of the model across them: set tp x pp "
                               f"= {s.world_size} (tp {s.num_gpus} inside each node and pp {s.num_nodes} across nodes, "
                               f"or tp {s.world_size} over all of them); for replicas, plan one node and count the "
                               "nodes")
        if s.tp % s.num_gpus and s.num_gpus % s.tp:
            raise GpuplanError(f"a tensor-parallel group of {s.tp} would straddle nodes of {s.num_gpus} GPUs: set tp "
                               f"to a divisor of {s.num_gpus} (inside each node) or a multiple of it (whole nodes)")
    if s.framework == "megatron" and s.task == "train":
        warnings += check_megatron(s, m)
    strategy = s.resolved_strategy
    # on one GPU ZeRO-3 still streams the weights from CPU memory layer by layer (DeepSpeed's ZeRO-Offload /
    # ZeRO-Infinity and FSDP's CPUOffload run with one rank): what fits a model the card cannot hold
    alone = strategy == "zero3" and s.offload == "optimizer+params"
    if s.task == "train" and strategy != "single" and s.dp * s.cp == 1 and not alone:
        taken = (f"tp x pp = {s.tp * s.pp} takes all {s.world_size} GPUs, leaving one data-parallel rank: add GPUs "
                 "(num_gpus a multiple of tp x pp)" if s.world_size > 1 else "there is one: set num_gpus >= 2")
        raise GpuplanError(f"strategy {s.strategy!r} shards or replicates over data-parallel GPUs, but {taken}, "
                           "or use strategy single (offload optimizer to save memory), or zero3 with offload "
                           "optimizer+params to stream the weights from CPU memory")
    if s.task == "train" and strategy == "single" and s.dp > 1:
        raise GpuplanError(f"strategy 'single' uses one GPU but the scenario has {s.dp} data-parallel GPUs: "
                           "choose ddp, zero1, zero2, zero3 or fsdp")
    if s.task == "train" and s.pp > 1 and s.sharding == "deepspeed" and strategy in ("zero2", "zero3"):
        # DeepSpeed's PipelineEngine asserts zero_optimization_stage < 2 (runtime/pipe/engine.py)
        raise GpuplanError(f"DeepSpeed runs pipeline parallelism with ZeRO-1 at most, not {strategy}: use strategy "
                           "zero1 with pp, or pp 1 with ZeRO-2/3")
    if m.num_heads % s.tp:
        raise GpuplanError(f"tp={s.tp} does not divide the {m.num_heads} attention heads of {m.name}; "
                           f"use a divisor of {m.num_heads}")
    if s.tp > m.num_kv_heads and s.tp % m.num_kv_heads and not m.mla:
        raise GpuplanError(f"tp={s.tp} exceeds the {m.num_kv_heads} KV heads of {m.name} and is not a multiple of "
                           "them, so KV heads cannot be replicated evenly; use tp <= "
                           f"{m.num_kv_heads} or a multiple of it")
    if s.tp > m.num_kv_heads and not m.mla:
        warnings.append(f"tp={s.tp} > {m.num_kv_heads} KV heads: each rank replicates KV heads")
    if s.pp > m.num_layers:
        raise GpuplanError(f"pp={s.pp} is more pipeline stages than {m.name}'s {m.num_layers} layers")
    if s.task == "train" and s.method == "lora" and s.quant not in (None, "none"):
        warnings.append(f"LoRA on a {s.quant} base: its memory holds the {s.quant} weights, its speed is LoRA's on a "
                        "16-bit base (the base's own kernels, int8 matmuls or dequantization, are not timed)")
    if s.offload != "none" and s.task == "infer":
        raise GpuplanError("offload applies to training states; for inference use quant or a llama.cpp engine")
    if s.offload == "optimizer+params" and strategy != "zero3":
        raise GpuplanError("offloading parameters needs ZeRO-3 (strategy zero3 or fsdp, on one GPU too) to fetch "
                           "them layer by layer; use offload optimizer, or strategy zero3")
    if s.engine != "transformers" and s.task == "train":
        raise GpuplanError(f"engine {s.engine!r} serves models; training runs on transformers (drop engine)")
    if s.engine != "trtllm" and (s.free_gpu_memory_fraction is not None or s.tokens_per_block is not None
                                 or s.capacity_scheduler_policy is not None):
        raise GpuplanError("free_gpu_memory_fraction, tokens_per_block and capacity_scheduler_policy are "
                           "TensorRT-LLM's settings: set engine trtllm, or drop them")
    if s.engine == "trtllm" and s.quant and s.quant not in ("none", "fp8", "nvfp4", "int8", "awq-int4",
                                                            "gptq-int4", "mxfp4"):
        raise GpuplanError(f"TensorRT-LLM does not load {s.quant} weights: use quant fp8 or nvfp4 (or awq-int4, "
                           "gptq-int4, int8)")
    if s.task == "train" and s.method == "full" and s.quant not in (None, "none"):  # it was counted 16-bit
        raise GpuplanError(f"full fine-tuning updates every weight, and {s.quant} weights take no gradients (they "
                           "are loaded frozen): train LoRA or QLoRA on them, or drop quant")
    if s.task == "infer" and s.engine == "transformers" and (s.quant or "").startswith("gguf-"):
        raise GpuplanError(f"transformers dequantizes a GGUF file when it loads it, so {s.quant} saves no GPU memory "
                           "there: serve it with engine llama.cpp (or vllm), or drop quant")
    check_kv_cache(s)
    if s.engine == "llama.cpp" and s.quant and not s.quant.startswith("gguf-") and s.quant != "none":
        raise GpuplanError(f"llama.cpp runs GGUF files: set quant to a gguf type (gguf-q4_k_m, gguf-q8_0...), "
                           f"not {s.quant!r}")
    tokens = s.seq_len if s.task == "train" else s.prompt_tokens + s.output_tokens
    engine = {"vllm": "vLLM", "sglang": "SGLang", "trtllm": "TensorRT-LLM"}.get(s.engine)
    if s.task == "infer" and engine and s.max_model_len and s.max_model_len < tokens:  # a longer request is refused
        raise GpuplanError(f"max_model_len {s.max_model_len:,} is shorter than one request ({s.prompt_tokens:,} "
                           f"prompt + {s.output_tokens:,} output = {tokens:,} tokens), which {engine} rejects: "
                           f"set max_model_len to {tokens:,} or more (or leave it unset), or shorten the requests")
    warnings += _other_engines_settings(s)
    if gpu is not None:
        _check_gpu(s, m, gpu)
    if m.max_context and tokens > m.max_context and m.position_params:  # a learned position table has no row past it
        raise GpuplanError(f"{m.name} learns {m.max_context:,} positions (a position-embedding table, no RoPE to "
                           f"extend): {tokens:,} tokens index past it; use at most {m.max_context:,} tokens "
                           f"({'seq_len' if s.task == 'train' else 'prompt_tokens + output_tokens'})")
    scaled = rope_scaled_context(m)
    if m.max_context and tokens > scaled:
        limit = (f"max_position_embeddings {m.max_context:,}" if scaled == m.max_context else
                 f"context {scaled:,} (max_position_embeddings {m.max_context:,} with its rope_scaling)")
        warnings.append(f"{tokens:,} tokens exceed {m.name}'s {limit}: quality degrades unless the context is "
                        "extended (RoPE scaling)")
    return warnings


def rope_scaled_context(m: ModelSpec) -> int:
    """The context a config's ``rope_scaling`` (``rope_parameters`` in transformers 5) already extends to: YaRN
    reaches ``original_max_position_embeddings x factor`` (vLLM's ``_get_and_verify_max_len``; Qwen's long-context
    recipe adds it to a 32k config). Other kinds are taken as inside max_position_embeddings (llama3, longrope; Gemma 3
    states its linear-scaled 128k there)."""
    text = m.config.get("text_config") or m.config
    rope = text.get("rope_scaling") or text.get("rope_parameters") or m.config.get("rope_scaling")
    context = m.max_context or 0
    if not isinstance(rope, dict) or not isinstance(rope.get("factor"), (int, float)):
        return context
    kind = rope.get("rope_type") or rope.get("type")
    if kind == "yarn" and isinstance(rope.get("original_max_position_embeddings"), int):
        return max(context, int(rope["original_max_position_embeddings"] * rope["factor"]))
    return context


def check_megatron(s: Scenario, m: ModelSpec) -> list[str]:
    """Megatron-Core's own rules for its parallel sizes (``megatron/training/arguments.py`` and Transformer
    Engine's context-parallel attention), one sentence each; returns warnings for what it runs unevenly."""
    if s.cp > 1 and s.seq_len % (2 * s.cp):
        raise GpuplanError(f"cp={s.cp} needs seq_len divisible by 2 x cp = {2 * s.cp} (each sequence is cut into "
                           f"2·cp chunks for load-balanced causal ring attention); seq_len is {s.seq_len}")
    if s.tp > 1 and (s.seq_len // s.cp) % s.tp:
        raise GpuplanError(f"sequence parallelism splits each rank's {s.seq_len // s.cp} tokens (seq_len / cp) over "
                           f"tp={s.tp} ranks: choose a seq_len divisible by tp x cp = {s.tp * s.cp}")
    if s.ep > 1 and not m.is_moe:
        raise GpuplanError(f"ep={s.ep} splits the experts of an MoE model, and {m.name} has none: set ep 1")
    if s.ep > 1 and m.num_experts % s.ep:
        raise GpuplanError(f"ep={s.ep} does not divide the {m.num_experts} experts of {m.name}; use a divisor of "
                           f"{m.num_experts}")
    if s.ep > 1 and (s.tp * s.cp * s.dp) % s.ep:
        raise GpuplanError(f"ep={s.ep} must divide tp x cp x dp = {s.tp * s.cp * s.dp}, the ranks of one pipeline "
                           "stage that the expert-parallel groups are cut from (expert_tensor_parallel_size 1)")
    warnings = []
    if m.num_layers % (s.pp * s.vpp) and (m.num_layers + 2) % (s.pp * s.vpp):
        warnings.append(f"{m.num_layers} layers do not split evenly into pp x vpp = {s.pp * s.vpp} model chunks: "
                        "Megatron needs an uneven split (num_layers_in_first/last_pipeline_stage); the first stage "
                        "is counted with the rounded-up share")
    if s.vpp > 1 and s.grad_accum_steps % s.pp:
        warnings.append(f"the interleaved schedule runs best with micro-batches per step ({s.grad_accum_steps}) a "
                        f"multiple of pp={s.pp}")
    return warnings


def check_kv_cache(s: Scenario) -> None:
    """The KV-cache dtypes an engine has: llama.cpp's are f16, bf16 and integer blocks, SGLang's 16-bit and fp8."""
    if s.task == "infer" and s.engine == "llama.cpp" and s.kv_cache_dtype == "fp8":
        raise GpuplanError("llama.cpp caches keys and values in f16, bf16 or integer blocks (q8_0, q4_0), not fp8: "
                           "set kv_cache_dtype int8 (--cache-type-k/v q8_0)")
    if s.task == "infer" and s.engine == "sglang" and s.kv_cache_dtype == "int8":
        raise GpuplanError("SGLang's KV cache is 16-bit or fp8, not int8: set kv_cache_dtype fp8 or auto")


def _other_engines_settings(s: Scenario) -> list[str]:
    """A warning for each engine setting given to a scenario that serves with another engine (it changes nothing)."""
    if s.task != "infer":
        return []
    owners = {"gpu_memory_utilization": ("vllm", s.gpu_memory_utilization != 0.9),
              "mem_fraction_static": ("sglang", s.mem_fraction_static is not None),
              "ubatch_tokens": ("llama.cpp", s.ubatch_tokens is not None)}
    return [f"{name} is {engine}'s setting and changes nothing when serving with {s.engine}: drop it, or set engine "
            f"{engine}" for name, (engine, given) in owners.items() if given and s.engine != engine]


def _check_gpu(s: Scenario, m: ModelSpec, gpu: GpuSpec) -> None:
    flash = s.attention == "flash" and (s.task == "train" or s.engine == "transformers")
    if flash and (gpu.vendor == "Apple" or (gpu.vendor == "NVIDIA" and float(gpu.compute_capability or 8) < 8)):
        raise GpuplanError(f"FlashAttention 2 runs on Ampere or newer NVIDIA GPUs (and ROCm), and {gpu.name} is "
                           f"{gpu.architecture}: use attention sdpa")
    if s.task == "infer" and s.engine == "trtllm" and gpu.vendor != "NVIDIA":  # TensorRT builds CUDA engines only
        raise GpuplanError(f"TensorRT-LLM runs on NVIDIA GPUs only, and {gpu.name} is {gpu.vendor}'s: use engine "
                           "vllm or sglang" + (" (ROCm builds)" if gpu.vendor == "AMD" else ""))
    dtype = s.precision.split("-")[0]
    if dtype in ("bf16", "fp8") and not gpu.supports_dtype(dtype):
        if s.task == "infer":
            fix = "fp16-true (for serving, precision is the dtype the weights run in)"
        else:
            fix = "fp16-mixed" if dtype == "bf16" else "bf16-mixed"
        raise GpuplanError(f"{gpu.name} has no {dtype} tensor cores ({gpu.architecture}): set precision {fix}, or "
                           "leave precision unset to get the card's own")
    if s.quant == "nvfp4" and not gpu.supports_dtype("fp4"):
        raise GpuplanError(f"{gpu.name} ({gpu.architecture}) has no fp4 tensor cores for nvfp4 weights (Blackwell "
                           "has): use quant fp8, or a B200/GB200-class card")
    if s.kv_cache_dtype == "bf16" and not gpu.supports_dtype("bf16"):
        raise GpuplanError(f"{gpu.name} has no bf16: set kv_cache_dtype fp16")
    if s.quant == "fp8" and s.engine == "trtllm" and not gpu.supports_dtype("fp8"):  # docs/source/features/
        # quantization.md "Hardware Support Matrix": FP8 (per tensor) on Blackwell, Hopper and Ada, not Ampere
        raise GpuplanError(f"TensorRT-LLM runs fp8 weights on Ada, Hopper and Blackwell only, and {gpu.name} is "
                           f"{gpu.architecture}: use awq-int4 or gptq-int4 (W4A16), or engine vllm (weight-only fp8)")
    if s.quant == "fp8" and s.engine == "transformers" and not gpu.supports_dtype("fp8"):
        raise GpuplanError(f"{gpu.name} ({gpu.architecture}) has no fp8 tensor cores: choose int8, a 4-bit quant, "
                           "or engine vllm (weight-only fp8)")
    if s.precision.startswith("bf16") and s.task == "infer" and not gpu.supports_dtype("bf16"):
        raise GpuplanError(f"{gpu.name} has no bf16: set precision fp16-true for inference")


def memory_report(s: Scenario, m: ModelSpec, gpu: GpuSpec | None) -> tuple[Estimate, MemoryReport]:
    capacity = gpu.usable_gib if gpu else None
    outside = device_overheads(s, gpu.generation if gpu else None)
    e = training_memory(s, m, capacity, sum(outside.values()) / GIB) if s.task == "train" else \
        inference_memory(s, m, capacity, gpu)
    e.outside_allocator = outside
    e.outside_allocator.update(e.extra.pop("outside", {}))
    other = {k: v / GIB for k, v in e.other.items()}
    device = e.device / GIB
    report = MemoryReport(
        weights_gib=e.weights / GIB, gradients_gib=e.gradients / GIB, optimizer_gib=e.optimizer / GIB,
        activations_gib=e.activations / GIB, kv_cache_gib=e.kv_cache / GIB, other_gib=sum(other.values()),
        other=other, allocated_peak_gib=e.allocated / GIB, reserved_peak_gib=e.reserved / GIB,
        device_peak_gib=device, device_overheads={k: v / GIB for k, v in {**e.managed, **e.outside_allocator}.items()},
        cached_gib=e.fragmentation / GIB if e.preallocated is None else 0.0,
        capacity_gib=capacity, peak_phase=e.peak_phase, phases_gib=e.phases, cpu_gib=e.cpu / GIB,
        max_concurrency=e.extra.get("max_concurrency"), max_context_tokens=e.extra.get("max_context_tokens"),
        kv_cache_pool_gib=e.extra.get("kv_cache_pool_gib"), gpu_layers=e.extra.get("gpu_layers"),
        offloaded_layers=e.extra.get("offloaded_layers"), engine=e.extra.get("engine"))
    if s.task == "train":
        report.logged_statistic = f"{s.framework}: {s.recipe.logs}"
        report.logged_gib = report.allocated_peak_gib if s.recipe.logs_level == "allocated" else \
            report.reserved_peak_gib
    if capacity is not None:
        report.fits = _fits(s, e, report, capacity)
        report.headroom_gib = capacity - device
        short = host_shortfall(s, report, gpu)  # offloaded states and CPU layers must fit the host's RAM
        if short:
            report.fits = False
            e.warnings.append(short)
    return e, report


def _fits(s: Scenario, e: Estimate, r: MemoryReport, capacity: float) -> bool:
    if s.engine in ("vllm", "sglang", "trtllm"):  # they take their budget whatever the job: the pool must hold the
        # requests, and the budget with what lives outside it must fit the card ("fits" never with a negative headroom)
        return (r.max_concurrency or 0) >= s.batch_size and r.device_peak_gib <= capacity
    if s.engine == "llama.cpp":  # it places what fits and runs the rest on the CPU: that fits only when asked
        return r.device_peak_gib <= capacity and (s.cpu_layers or not r.offloaded_layers)
    return r.device_peak_gib <= capacity


def fits_only(s: Scenario, m: ModelSpec, gpu: GpuSpec) -> tuple[bool, float]:
    """Whether ``s`` fits on ``gpu`` and its device peak in GiB, skipping solvers (for search loops)."""
    try:
        check(s, m, gpu)
    except GpuplanError:
        return False, math.inf
    _, report = memory_report(s, m, gpu)
    return bool(report.fits), report.device_peak_gib

