"""TensorRT-LLM's memory at startup (``trtllm-serve`` / the ``LLM`` API, PyTorch backend): the paged KV cache its
``KVCacheManager`` allocates and the limits in force.

TensorRT-LLM loads the weights, runs a profiling forward of ``max_num_tokens`` tokens, then gives the KV cache
``free_gpu_memory_fraction`` of the memory still free (formulas.md section 3: "TRT-LLM applies its fraction to *free*
memory after non-KV"; ``tensorrt_llm/_torch/pyexecutor/_util.py`` ``KvCacheCreator``, ``KvCacheConfig``)::

    free      = total - weights - activation peak of the profiling forward
    kv pool   = free_gpu_memory_fraction x free                  (KvCacheConfig default 0.9)
    blocks    = floor(kv pool / (tokens_per_block x KV bytes per token on this GPU))   (tokens_per_block 32)
    max concurrency = min(max_batch_size, blocks // ceil(request tokens / tokens_per_block))

The remaining ``1 - fraction`` of the free memory holds CUDA graphs, the runtime's buffers and fragmentation.
``max_batch_size`` (2048) and ``max_num_tokens`` (8192) are the ``trtllm-serve`` defaults; gpuplan's
``max_num_seqs`` and ``max_num_batched_tokens`` set them. The KV cache is paged in blocks of ``tokens_per_block``
tokens (``--kv_cache_config tokens_per_block``), fp8 with ``kv_cache_dtype fp8`` (one byte per element).
Weights are stored as the scenario's quantization (``fp8``: one byte; ``nvfp4``: 4.5 bits, see
:mod:`gpuplan.model.quant`). Speculative decoding's draft (MTP layers, an EAGLE-3 head, a draft model) holds its
weights beside the model's and its cache in the same pool (:mod:`.speculative`). Not modelled: KV-cache reuse across
requests, the host (secondary) pool, attention data parallelism.

``trtllm-bench throughput`` (the offline runs of NVIDIA's performance overview) picks ``max_batch_size`` and
``max_num_tokens`` itself when not given (:func:`bench_settings`), gives the KV cache 0.95 of the free memory in
NVIDIA's runs, and runs without chunked prefill, so ``max_num_tokens`` is at least the longest prompt plus
``max_batch_size``; with the KV dtype left at ``auto``, FP8 and NVFP4 checkpoints get an FP8 cache
(:func:`bench_scenario`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from .. import overheads as oh
from ..hardware import GpuSpec
from ..model.quant import Format
from ..model.spec import ModelSpec
from ..scenario import Scenario
from ..tensors.activations import INPUT_OF
from ..tensors.breakdown import GIB, Estimate
from ..tensors.kv import kv_bytes_per_sequence
from ..tensors.layout import weights_per_gpu
from ..tensors.state import weight_format
from .base import Engine
from .block_fp8 import block_fp8_kernels, fp8_block_served
from .records import HostLoop, KvPool, Timing
from .vllm import cuda_total_gib, current_timing, named_version, scheduler_limits

FREE_GPU_MEMORY_FRACTION = 0.9  # KvCacheConfig.free_gpu_memory_fraction
TOKENS_PER_BLOCK = 32  # KvCacheConfig.tokens_per_block
MAX_BATCH_SIZE = 2048  # trtllm-serve --max_batch_size
MAX_NUM_TOKENS = 8192  # trtllm-serve --max_num_tokens
# trtllm-serve --enable_chunked_prefill, off by default (tensorrt_llm/commands/serve.py get_llm_args): a context is
# scheduled whole, within max_num_tokens
CHUNKED_CONTEXT = False
TESTED_GENERATIONS = ("Ampere", "Ada", "Hopper", "Blackwell")  # TrtllmEngine.card_warning's source
BENCH_KV_FRACTION = 0.95  # perf-overview.md: "--kv_cache_free_gpu_mem_fraction 0.95" in NVIDIA's runs
BENCH_MAX_REQUESTS = 4096  # tuning.py finetune_setting: "Cap total batch size to avoid decoder buffer ..."
BENCH_MAX_TOKENS = 32768  # tuning.py finetune_setting: "Cap num tokens to avoid TRT activation buffer ..."
BENCH_BYTES_PER_PARAM = {"fp8": 1.0, "nvfp4": 0.5}  # tuning.py BYTES_PER_ELEM (else 2)
BENCH_KV_DTYPE = {"fp8": "fp8", "nvfp4": "fp8"}  # bench/benchmark/utils/general.py _KV_CACHE_MAP (KV dtype "auto")


@dataclass(frozen=True, kw_only=True)
class StartupMemory:
    """One GPU's memory as TensorRT-LLM lays it out at start-up (bytes unless named ``_gib``)."""

    total_gib: float
    weights: float
    activation: float
    free: float
    fraction: float
    kv_pool: float
    block_bytes: float
    num_blocks: int
    tokens_per_block: int
    max_batch_size: int
    max_num_tokens: int
    max_seq_len: int

    @property
    def kv_tokens(self) -> int:
        return self.num_blocks * self.tokens_per_block

    def max_concurrency(self, request_tokens: int) -> int:
        """Whole requests of ``request_tokens`` the pool holds, capped by ``max_batch_size``."""
        per = math.ceil(request_tokens / self.tokens_per_block) if request_tokens else 0
        return min(self.max_batch_size, self.num_blocks // per) if per else 0

    def ranks(self, n: int) -> StartupMemory:
        """``n`` attention data-parallel ranks as one scheduler sees them (``enable_attention_dp``: each rank
        schedules its own batch), so the blocks, batch sizes and per-step tokens add up."""
        return replace(self, num_blocks=self.num_blocks * n, max_batch_size=self.max_batch_size * n,
                       max_num_tokens=self.max_num_tokens * n)


def limits(s: Scenario, m: ModelSpec) -> tuple[int, int, int]:
    """(max_batch_size, max_num_tokens, max_seq_len) in force."""
    return (s.max_num_seqs or MAX_BATCH_SIZE, s.max_num_batched_tokens or MAX_NUM_TOKENS,
            TRTLLM.context(s, m))


def activation(s: Scenario, m: ModelSpec) -> float:
    """The profiling forward's peak: one layer's largest working set for ``max_num_tokens`` tokens (the MLP's
    ``3·i + 2·h`` 16-bit elements per token, per routed expert a token visits for MoE plus the fp32 router; or
    attention's q, k, v and two hidden-wide tensors plus an fp32 one), as :func:`gpuplan.engines.transformers.
    prefill_working_set` counts it for transformers, and the last positions' fp32 logits of ``max_batch_size``
    sequences."""
    batch, T, _ = limits(s, m)
    c, t, h = s.compute_bytes, s.tp, m.hidden_size
    mids = [lin for layer, _ in m.layer_kinds() for lin in layer.linears if INPUT_OF.get(lin.name) == "mlp_mid"]
    i = max((lin.in_features for lin in mids if lin.group != "experts"), default=0) / t
    work = c * T * (3 * i + 2 * h)
    if m.is_moe:
        i_e = max((lin.in_features for lin in mids if lin.group == "experts"), default=0)
        work = max(work, c * T * m.experts_per_token * (3 * i_e + 2 * h) + 8 * T * m.num_experts)
    heads = max(m.num_heads // t, 1)
    work = max(work, c * T * (3 * heads * m.head_dim + 2 * h) + 4 * T * h)
    return work + min(batch, T) * m.vocab_size * 4 / t


def block_bytes(s: Scenario, m: ModelSpec, tokens_per_block: int) -> float:
    """One KV block on one GPU: ``tokens_per_block`` tokens of every layer of this GPU's pipeline stage, KV heads
    split over TP (:func:`gpuplan.tensors.kv.kv_bytes_per_sequence`, sliding windows not capped: TensorRT-LLM's
    default pool is one of full-length blocks)."""
    stage = m.layers[:math.ceil(m.num_layers / s.pp)]
    return kv_bytes_per_sequence(s, m, tokens_per_block, stage, windowed=False)


def total_at_start_gib(gpu: GpuSpec) -> float:
    """What ``cudaMemGetInfo`` reports as total, less the CUDA context already made when the engine reads the free
    memory."""
    return cuda_total_gib(gpu) - oh.CUDA_CONTEXT_GIB.get(gpu.generation, oh.CUDA_CONTEXT_DEFAULT_GIB)


def startup_memory(s: Scenario, m: ModelSpec, gpu: GpuSpec, activation: float) -> StartupMemory:
    """The KV pool TensorRT-LLM allocates for ``s`` on ``gpu``, given the profiling forward's ``activation`` peak
    in bytes (module docstring). The CUDA context is outside ``cudaMemGetInfo``'s free memory at start."""
    fmt, skip = weight_format(s, m)
    weights = weights_per_gpu(s, m, fmt, skip)
    total = total_at_start_gib(gpu)
    free = max(total * GIB - weights - activation, 0.0)
    fraction = s.free_gpu_memory_fraction or FREE_GPU_MEMORY_FRACTION
    tpb = s.tokens_per_block or TOKENS_PER_BLOCK
    block = block_bytes(s, m, tpb)
    pool = fraction * free
    batch, num_tokens, seq = limits(s, m)
    return StartupMemory(total_gib=total, weights=weights, activation=activation, free=free, fraction=fraction,
                         kv_pool=pool, block_bytes=block, num_blocks=int(pool // block) if block else 0,
                         tokens_per_block=tpb, max_batch_size=batch, max_num_tokens=num_tokens, max_seq_len=seq)


def bench_scenario(s: Scenario) -> Scenario:
    """``s`` as ``trtllm-bench throughput`` runs it: an FP8 KV cache for FP8 and NVFP4 checkpoints when the KV dtype
    is left at ``auto`` (``_KV_CACHE_MAP``), the pool at :data:`BENCH_KV_FRACTION` unless set."""
    update = {"free_gpu_memory_fraction": s.free_gpu_memory_fraction or BENCH_KV_FRACTION}
    if s.kv_cache_dtype == "auto" and s.quant in BENCH_KV_DTYPE:
        update["kv_cache_dtype"] = BENCH_KV_DTYPE[s.quant]
    return s.model_copy(update=update)


def bench_settings(s: Scenario, m: ModelSpec, gpu: GpuSpec) -> tuple[int, int]:
    """(max_batch_size, max_num_tokens) that ``trtllm-bench throughput`` picks for a dataset of ``prompt_tokens``
    in and ``output_tokens`` out when the user gives neither (``tensorrt_llm/bench/build/tuning.py``
    ``calc_engine_setting`` and ``finetune_setting``; ``bench/benchmark/utils/general.py`` ``get_settings``)::

        engine    = parameters x bytes per parameter (fp8 1, nvfp4 0.5, else 2)              GiB
        kv/token  = 2 x layers x max(tp, KV heads) x head_dim x KV bytes                        GiB
        requests  = (nvml total x GPUs - engine) x fraction / (kv/token x (ISL + OSL))   (fraction 0.95 unless set)
        raw_bs    = min(requests, 4096) / pp;   raw_tokens = min(raw_bs x (1 + ISL/OSL), 32768)
        max_bs    = max(64, 32·ceil(raw_bs/32)) below 256, 128·ceil(/128) below 1024, else 256·ceil(/256)
        max_tokens= max(2048, 256·ceil(raw/256)) below 4096, 512·ceil(/512) below 8192, else 1024·ceil(/1024)

    and, chunked prefill being off, ``max_num_tokens`` at least ISL + ``max_batch_size``. The user's
    ``max_num_seqs`` / ``max_num_batched_tokens`` win when both are set."""
    isl, osl = s.prompt_tokens, max(s.output_tokens, 1)
    if s.max_num_seqs and s.max_num_batched_tokens:
        return s.max_num_seqs, s.max_num_batched_tokens
    gpus = s.tp * s.pp
    engine = m.params_total * BENCH_BYTES_PER_PARAM.get(s.quant or "", 2.0) / GIB
    kv_bytes = 1.0 if s.kv_cache_dtype in ("fp8", "int8") else 2.0
    attention_layers = sum(1 for layer in m.layers if layer.kv_dims)
    per_token = 2 * attention_layers * max(s.tp, m.num_kv_heads) * m.head_dim * kv_bytes / GIB
    fraction = s.free_gpu_memory_fraction or BENCH_KV_FRACTION
    requests = (gpu.usable_gib * gpus - engine) * fraction / (per_token * (isl + osl))  # usable_gib: nvidia-smi's
    raw_bs = min(requests, BENCH_MAX_REQUESTS) / s.pp
    raw_tokens = min(raw_bs * (1 + isl / osl), BENCH_MAX_TOKENS)
    if raw_bs < 256:
        batch = max(64, 32 * math.ceil(raw_bs / 32))
    else:
        batch = (128 if raw_bs < 1024 else 256) * math.ceil(raw_bs / (128 if raw_bs < 1024 else 256))
    if raw_tokens < 4096:
        tokens = max(2048, 256 * math.ceil(raw_tokens / 256))
    else:
        tokens = (512 if raw_tokens < 8192 else 1024) * math.ceil(raw_tokens / (512 if raw_tokens < 8192 else 1024))
    return batch, max(tokens, isl + batch)


# ---- the engine profile ----------------------------------------------------------------------------
LOADS = ("none", "fp8", "nvfp4", "int8", "awq-int4", "gptq-int4", "mxfp4")  # weight formats it loads


def pool(s: Scenario, sm: StartupMemory) -> KvPool:
    """The pool of the startup memory ``sm`` (:func:`startup_memory`): whole blocks of ``tokens_per_block`` per
    request, capped by ``max_batch_size``; ``kv_tokens`` is the pool."""
    tokens = s.prompt_tokens + s.output_tokens
    return KvPool(engine="trtllm", pool_gib=sm.kv_pool / GIB, request_tokens=tokens,
                  max_concurrency=sm.max_concurrency(tokens), kv_tokens=sm.kv_tokens, logged_tokens=sm.kv_tokens,
                  max_model_len=sm.max_seq_len, sim_blocks=sm.kv_tokens // oh.VLLM_BLOCK_TOKENS)


def scheduler_of(s: Scenario, sm: StartupMemory) -> dict:
    """The settings of TensorRT-LLM's in-flight batching (PyTorch backend; simulated by
    :class:`gpuplan.serving.simulate.Scheduler`) for ``s`` over its startup memory ``sm`` (:func:`startup_memory`):
    blocks of ``tokens_per_block`` tokens, ``max_batch_size`` requests and ``max_num_tokens`` tokens an iteration
    (``trtllm-serve`` defaults 2048 and 8192, BuildConfig in ``tensorrt_llm/builder.py``).
    ``tensorrt_llm/_torch/pyexecutor/scheduler.py``: ``SimpleScheduler`` runs the capacity scheduler
    (``BindCapacityScheduler``, ``CapacitySchedulerPolicy.GUARANTEED_NO_EVICT``, the policy ``trtllm-serve`` sets in
    ``tensorrt_llm/commands/serve.py`` ``get_llm_args``) and then the micro-batch scheduler
    (``PyMicroBatchScheduler.schedule``: the generation requests and new contexts in order, one token per generation, a
    context whole, until ``max_num_tokens`` or ``max_batch_size``): contexts and generations share an iteration. Chunked
    context is off in ``trtllm-serve`` (``enable_chunked_prefill=False``): a prompt waits until it fits the iteration's
    budget whole. With ``capacity_scheduler_policy: max_utilization`` a request is admitted while its next blocks fit,
    and a full pool pauses the latest (vLLM's preemption). Block reuse across requests is not modelled."""
    return dict(kv_blocks=sm.num_blocks, block_tokens=sm.tokens_per_block, max_num_seqs=sm.max_batch_size,
                max_num_batched_tokens=sm.max_num_tokens, chunked_prefill=CHUNKED_CONTEXT,
                reserve_to_completion=s.capacity_scheduler_policy != "max_utilization", prefix_cache=False)


# rope_scaling kinds whose factor TensorRT-LLM's derived context leaves out (:func:`derived_max_seq_len`)
UNSCALED_ROPE = ("su", "longrope", "llama3", "yarn")


def derived_max_seq_len(m: ModelSpec) -> int:
    """The context TensorRT-LLM derives from a model's config (PyTorch backend), past which ``trtllm-serve
    --max_seq_len`` is cut back to it unless TLLM_ALLOW_LONG_MAX_MODEL_LEN is set: ``PyTorchModelEngine.
    _init_max_seq_len`` takes the model's ``infer_max_seq_len`` (``DecoderModelForCausalLM.infer_max_seq_len``,
    NVIDIA/TensorRT-LLM ``tensorrt_llm/_torch/models/modeling_utils.py``; a multimodal wrapper such as Gemma 3's
    ``Gemma3VLM`` asks its text model's, ``modeling_gemma3vl.py`` at 0f8dcd9d), else
    ``_infer_max_seq_len_from_config`` (``tensorrt_llm/_torch/pyexecutor/model_engine.py`` at 1a0dc5f7), both the
    same rule on the text config: max_position_embeddings (2,048 without one) x the rope_scaling ``factor``, rounded
    up, unless its ``type`` (else ``rope_type``) is su, longrope, llama3 or **yarn** (:data:`UNSCALED_ROPE`). So
    linear and dynamic factors multiply (Gemma 3: 131,072 x 8 = 1,048,576, as SGLang's; vLLM keeps 131,072), and
    YaRN keeps max_position_embeddings (Qwen3 with YaRN 4 x 32,768 over 40,960: 40,960, where vLLM derives 131,072).
    A config with one rope per layer kind (transformers 5's ``rope_parameters``) has no top-level factor: 1.
    gpuplan's ``max_context`` (max_position_embeddings, else seq_length) stands for max_position_embeddings."""
    rope = m.rope_scaling
    factor = rope.get("factor")
    if rope.get("type", rope.get("rope_type")) in UNSCALED_ROPE or not isinstance(factor, (int, float)):
        factor = 1
    return math.ceil((m.max_context or 0) * factor)


class Trtllm(Engine):
    """TensorRT-LLM (``trtllm-serve``, PyTorch backend): ``free_gpu_memory_fraction`` of what the weights and its
    profiling forward leave, in paged KV blocks (module docstring); in-flight batching with CUDA graphs for decode
    batches, the GPU's work timed as vLLM's current engine's, its own host loop (:func:`host_loop`)."""

    name = "trtllm"
    scheduler_words = ("From a simulation of TensorRT-LLM's in-flight batching (trtllm-serve's defaults: "
                       "max_batch_size 2,048, max_num_tokens 8,192, whole contexts, GUARANTEED_NO_EVICT admission; "
                       "a step holding a prompt launched without a CUDA graph, its launch cost fitted on "
                       "trtllm-serve runs; its host loop per step and per request taken as vLLM's)")
    running_cap = "max_batch_size"
    moe_dispatch = "deepep"  # its attention-DP MoE runs its own all-to-all, timed as DeepEP's
    pool_admits = ("holds for their whole output (GUARANTEED_NO_EVICT: nothing is preempted); the others wait for "
                   "them to finish.")
    expert_parallel = True
    moe_dispatch_words = ("TensorRT-LLM's attention-DP MoE sends tokens to their experts by its own all-to-all, "
                          "timed as DeepEP's")
    label = "TensorRT-LLM"
    pool_words = "TensorRT-LLM's KV pool"
    preallocates = True
    tensor_parallel_flag = "trtllm-serve --tp_size"
    layer_split_words = "trtllm-serve --pp_size"
    checks_request_length = True
    context_flag = "--max_seq_len"
    long_context_env = "TLLM_ALLOW_LONG_MAX_MODEL_LEN"
    kv_dtypes = ("auto", "fp16", "bf16", "fp8")
    offline_bench = True
    gemm_share_by_rows = True  # NVIDIA's performance overview (overheads.TRTLLM_GEMM_PEAK_SHARE)
    launch_target = "trtllm"
    skypilot_refusal = ("TensorRT-LLM's pip wheel needs the CUDA toolkit and MPI on the node, and NVIDIA ships it as a "
                        "container (nvcr.io/nvidia/tensorrt-llm/release) whose tag gpuplan does not pin: rent the card "
                        "and run trtllm-serve.sh there, or plan with --engine vllm or sglang for a SkyPilot task")
    no_chunked_prefill = "gpuplan times it with chunked context off, trtllm-serve's default (enable_chunked_prefill)"
    chunked_prefill_fixed = CHUNKED_CONTEXT

    def model_context(self, m: ModelSpec) -> int:
        """The model's context as TensorRT-LLM derives it (:func:`derived_max_seq_len`)."""
        return derived_max_seq_len(m)

    def scheduler_settings(self, s: Scenario, startup: StartupMemory, pool: KvPool, longest: int) -> dict | None:
        """Its in-flight batching (:func:`scheduler_of`); none when one request of ``longest`` tokens does not fit
        its KV pool."""
        return scheduler_of(s, startup) if startup.kv_tokens >= longest else None

    def refusal(self, s: Scenario, m: ModelSpec) -> str | None:
        if s.quant and s.quant not in LOADS:
            return (f"TensorRT-LLM does not load {s.quant} weights: use quant fp8 or nvfp4 (or awq-int4, gptq-int4, "
                    "int8)")
        if s.task == "infer" and s.kv_cache_dtype not in self.kv_dtypes:
            return (f"TensorRT-LLM's KV cache is 16-bit or fp8, not {s.kv_cache_dtype}: set kv_cache_dtype fp8 or "
                    "auto")
        return None

    def prompt_refusal(self, s: Scenario, longest: int) -> str | None:
        """Without chunked context (``trtllm-serve``'s default) a prompt is scheduled whole within
        ``max_num_tokens``, and a longer one refused (``tensorrt_llm/llmapi/llm.py`` ``_check_arguments``: "The sum
        of prompt length (...) ... should not exceed max_num_tokens" when ``enable_chunked_prefill`` is off)."""
        budget = s.max_num_batched_tokens or MAX_NUM_TOKENS
        if CHUNKED_CONTEXT or longest <= budget:
            return None
        return (f"TensorRT-LLM schedules a prompt whole (chunked prefill is off in trtllm-serve) within "
                f"max_num_tokens {budget:,}, and the workload's prompts run to {longest:,} tokens: it would refuse "
                f"them; keep prompts under {budget:,} tokens, or use engine vllm or sglang, which chunk long prompts")

    def card_refusal(self, s: Scenario, gpu: GpuSpec) -> str | None:
        if s.task == "infer" and gpu.vendor != "NVIDIA":  # TensorRT builds CUDA engines only
            other = "llama.cpp or mlx" if gpu.vendor == "Apple" else "vllm or sglang" + (
                " (ROCm builds)" if gpu.vendor == "AMD" else "")
            return f"TensorRT-LLM runs on NVIDIA GPUs only, and {gpu.name} is {gpu.vendor}'s: use engine {other}"
        if s.quant == "fp8" and not gpu.supports_dtype("fp8"):  # docs/source/features/quantization.md "Hardware
            # Support Matrix": FP8 (per tensor) on Blackwell, Hopper and Ada, not Ampere
            return (f"TensorRT-LLM runs fp8 weights on Ada, Hopper and Blackwell only, and {gpu.name} is "
                    f"{gpu.architecture}: use awq-int4 or gptq-int4 (W4A16), or engine vllm (weight-only fp8)")
        return None

    def card_warning(self, s: Scenario, gpu: GpuSpec) -> str | None:
        """An NVIDIA card older than Ampere (Volta's V100, Turing's T4 and RTX 2080 Ti): NVIDIA's supported-hardware
        page (https://nvidia.github.io/TensorRT-LLM/supported-hardware.html) lists Blackwell, Hopper, Ada Lovelace and
        Ampere, and its support matrix (https://nvidia.github.io/TensorRT-LLM/reference/support-matrix.html,
        "Hardware": "If a GPU architecture is not listed, the TensorRT-LLM team does not develop or test the software
        on the architecture and support is limited to community support") leaves the others to the community."""
        if s.task != "infer" or gpu.vendor != "NVIDIA" or gpu.generation in TESTED_GENERATIONS:
            return None
        return (f"TensorRT-LLM is not developed or tested on {gpu.architecture} ({gpu.name}): NVIDIA lists Blackwell, "
                "Hopper, Ada and Ampere and leaves other cards to community support, so its kernels may be missing or "
                "slower there; engine vllm or llama.cpp may suit the card better")

    def memory(self, s: Scenario, m: ModelSpec, e: Estimate, fmt: Format, gpu: GpuSpec | None,
               capacity_gib: float | None) -> Estimate:
        """The weights, the profiling forward and ``free_gpu_memory_fraction`` of what they leave. Without a GPU,
        the weights and the cache of ``batch_size`` requests."""
        e.peak_phase = "serving"
        tokens = s.prompt_tokens + s.output_tokens
        if gpu is None:
            e.kv_cache = s.batch_size * kv_bytes_per_sequence(s, m, tokens, m.layers[:math.ceil(m.num_layers / s.pp)])
            return e
        sm = startup_memory(s, m, gpu, activation(s, m))
        e.weights, e.activations, e.kv_cache = sm.weights, sm.activation, sm.kv_pool
        e.other["TensorRT-LLM reserve (1 - free_gpu_memory_fraction: CUDA graphs, runtime buffers)"] = \
            sm.free - sm.kv_pool
        e.preallocated = sm.weights + sm.activation + sm.free
        kv = pool(s, sm)
        e.extra.update(engine={
            "engine": "trtllm", "free_gpu_memory_fraction": sm.fraction, "tokens_per_block": sm.tokens_per_block,
            "max_batch_size": sm.max_batch_size, "max_num_tokens": sm.max_num_tokens, "max_seq_len": sm.max_seq_len,
            "num_blocks": sm.num_blocks, "kv_cache_tokens": sm.kv_tokens, "available_kv_cache_gib": sm.kv_pool / GIB},
            kv_pool=kv, startup=sm)
        e.assumptions.append(
            f"TensorRT-LLM: {sm.fraction} of the {sm.free / GIB:.1f} GiB free after the weights and a "
            f"{sm.max_num_tokens:,}-token profiling forward: {sm.num_blocks:,} KV blocks of {sm.tokens_per_block} "
            f"tokens ({sm.kv_tokens:,} tokens), max_batch_size {sm.max_batch_size:,}")
        if sm.kv_tokens < tokens:
            e.warnings.append(f"TensorRT-LLM's KV cache holds {sm.kv_tokens:,} tokens, less than one request of "
                              f"{tokens:,}: quantize (fp8, nvfp4), use more GPUs (tp) or an fp8 KV cache")
        return e

    def uncached_prefix_why(self, s: Scenario) -> str:
        return "TensorRT-LLM's KV block reuse is not modelled"

    def timing(self, s: Scenario, m: ModelSpec, gpu: GpuSpec) -> Timing:
        """In-flight batching with CUDA graphs for generation-only batches (every decode batch is taken to replay
        one: ``cuda_graph_config``'s sizes are not modelled); a step that holds a context request runs eagerly
        (``tensorrt_llm/_torch/pyexecutor/scheduler.py`` ``ScheduledRequests.can_run_cuda_graph``), its kernels
        launched from Python at :data:`~gpuplan.overheads.TRTLLM_EAGER_LAUNCH_S` each (the step takes the longer
        of the launching and the GPU's work: :meth:`gpuplan.speed.inference.StepTimer.launch_host_s`); its own
        kernels where the trtllm-bench tables measure them apart from vLLM's (``bench/trtllm.py``,
        :mod:`gpuplan.serving.offline`: routed experts as one grouped GEMM, the fused MoE; prompt attention of FP8 and
        NVFP4 checkpoints, FP8 context FMHA, at :data:`~gpuplan.overheads.TRTLLM_CONTEXT_ATTENTION_SPEEDUP` times
        gpuplan's FlashAttention figure; not MLA's: its context path expands the latent with ``kv_b_proj`` and runs
        a BF16 MHA, ``tensorrt_llm/_torch/modules/attention.py`` ``MLA.forward_context_default``: "Currently we use
        BF16 MHA for context phase", in the 2025 releases; later ones add an FP8 output scale, not measured here),
        and its own host loop (:func:`host_loop`). With ``trtllm_backend:
        tensorrt`` (:func:`backend`) a built TensorRT engine runs every step from the C++ runtime: no Python
        launches in the context step."""
        fp8_fmha = s.quant in ("fp8", "nvfp4") and not any(layer.attention == "mla" for layer in m.layers)
        eager = backend(s) == "pytorch"
        return current_timing(s, m, gpu, loop=host_loop(s, m, gpu), graph_max_batch=0, grouped_experts=True,
                              context_attention_speedup=oh.TRTLLM_CONTEXT_ATTENTION_SPEEDUP if fp8_fmha else 1.0,
                              eager_prompts=eager, launch_s=oh.TRTLLM_EAGER_LAUNCH_S if eager else 0.0,
                              note=TIMING if eager else TIMING_ENGINE, **fused_kernels(s, m, gpu),
                              shared_experts_stream=eager and shared_experts_stream(m),
                              **grouped_gemm_walk(s, m, gpu),
                              **block_fp8_kernels(s, m, gpu, "trtllm", named_version(s)))


def shared_experts_stream(m: ModelSpec) -> bool:
    """Whether TensorRT-LLM's decode graphs run an MoE layer's shared experts beside its routed ones (the PyTorch
    backend; :meth:`Trtllm.timing` asks it only there): ``Deepseekv3MoE.forward``
    (``tensorrt_llm/_torch/models/modeling_deepseekv3.py``) runs the router and the fused MoE on the current stream
    and the shared experts' ``GatedMLP`` on ``aux_stream_dict[AuxStreamType.MoeShared]`` through
    ``maybe_execute_in_parallel`` (``_torch/modules/multi_stream_utils.py``: "Multi-stream is only enabled when cuda
    graph is turned on"), then adds the two; ``Llama4MoE.forward`` (``modeling_llama.py``) does the same while
    ``torch.cuda.is_current_stream_capturing()``. Every model of it with shared experts (DeepSeek-V3/R1, Kimi K2,
    Llama 4). A step that holds a prompt runs eagerly, on one stream."""
    return any(lin.group == "shared_experts" for layer in m.layers for lin in layer.linears)


# The two RMSNorms of a DeepSeek decoder layer that TensorRT-LLM runs inside its all-reduces (fused_kernels)
FUSED_NORMS_PER_LAYER = 2


def fused_kernels(s: Scenario, m: ModelSpec, gpu: GpuSpec) -> dict:
    """What TensorRT-LLM fuses in a DeepSeek-V3/R1 (and Kimi K2) decoder layer, as :class:`~gpuplan.engines.records.
    Timing` fields: with tensor parallelism and no attention data parallelism, ``DeepseekV3DecoderLayer`` sets
    ``fusion_config.PRE_MOE_FUSION`` and ``POST_MOE_FUSION`` (``PRE_MLP_FUSION``/``POST_MLP_FUSION`` in its dense
    layers) unless ``TRTLLM_DEEPSEEK_EAGER_FUSION_DISABLED`` is set, so both all-reduces of the layer run as
    ``AllReduce(fusion_op=AllReduceFusionOp.RESIDUAL_RMS_NORM)``: one kernel that all-reduces, adds the residual and
    applies the next RMSNorm (``tensorrt_llm/_torch/models/modeling_deepseekv3.py``; the same pattern in
    ``modeling_glm.py`` ``Glm4DecoderLayer.forward_MoE``). Its custom one-shot kernel needs peer access within one
    node on Hopper or Blackwell (``AllReduceStrategy.AUTO``: NCCL across nodes). Timed as
    :data:`~gpuplan.overheads.FUSED_ALL_REDUCE_S` per all-reduce, and the layer's non-GEMM kernels as the generic
    count (:meth:`gpuplan.speed.inference.StepTimer._kernels_per_layer`) less the :data:`FUSED_NORMS_PER_LAYER`
    norms the all-reduces take in. Other models keep the unfused all-reduce."""
    major = gpu.sm_major
    deepseek = any(layer.attention == "mla" for layer in m.layers) and any(
        lin.group == "shared_experts" for layer in m.layers for lin in layer.linears)
    if not (deepseek and major in (9, 10) and s.tp > 1 and s.num_nodes == 1 and not s.attention_dp):
        return {}
    generic = oh.DECODE_KERNELS_PER_LAYER - 7 + oh.MOE_KERNELS_PER_LAYER + oh.MLA_KERNELS_PER_LAYER
    return {"fused_all_reduce": True, "layer_kernels": generic - FUSED_NORMS_PER_LAYER}


# The grouped GEMMs of a MoE layer (the gate+up and the down projections of the routed experts)
GROUPED_GEMMS_PER_MOE_LAYER = 2


def grouped_gemm_walk(s: Scenario, m: ModelSpec, gpu: GpuSpec) -> dict:
    """What a decode step's MoE layer pays on Hopper where TensorRT-LLM serves a model's own FP8 block-scale
    checkpoint (``Format.fp8_block``: DeepSeek-V3/R1's 128 x 128 weight blocks), as a :class:`~gpuplan.engines.records.
    Timing` field: the CUTLASS MoE runs both grouped GEMMs as DeepGEMM ``GroupedWithOffset`` kernels over one problem
    per local expert, whose scheduler walks every local expert on every call
    (:data:`~gpuplan.overheads.TRTLLM_HOPPER_GROUP_WALK_S`), ``2 x experts / ep`` walks a layer: at TP 8 without
    expert parallelism each GPU holds a slice of all 256 of DeepSeek-R1's experts, at EP 8 whole ones of 32. A
    decode step's cost (``StepTimer.decode_parts``); the serving simulation's steps (:mod:`gpuplan.serving.steptime`)
    carry it into those that hold a prompt too, where it is small beside their GEMMs. Blackwell, other formats
    (NVFP4, per-tensor FP8) and dense models pay none."""
    major = gpu.sm_major
    if not (m.is_moe and major == 9 and fp8_block_served(s, m)):
        return {}
    local = m.num_experts / max(s.ep, 1)
    return {"expert_layer_s": GROUPED_GEMMS_PER_MOE_LAYER * local * oh.TRTLLM_HOPPER_GROUP_WALK_S}


TIMING = ("TensorRT-LLM: its host loop's cost per step, per sequence and per request taken as vLLM's; a step holding "
          "a prompt runs without a CUDA graph")
TIMING_ENGINE = ("TensorRT-LLM (TensorRT engine, C++ runtime): its host loop's cost per step, per sequence and per "
                 "request taken as vLLM's")
# trtllm-serve --backend when the plan does not set trtllm_backend: the PyTorch flow, trtllm-serve's default since
# TensorRT-LLM 1.0 (tensorrt_llm/commands/serve.py: --backend, default "pytorch"; tests/data/trtllm/serve-options.json)
BACKEND = "pytorch"


def backend(s: Scenario) -> str:
    """The runtime a plan's trtllm-serve runs (``--backend``): the scenario's ``trtllm_backend``, else
    :data:`BACKEND`. ``pytorch`` runs the model from Python modules (a context step without a CUDA graph, each
    kernel launched from Python: :data:`~gpuplan.overheads.TRTLLM_EAGER_LAUNCH_S`); ``tensorrt`` runs a TensorRT
    engine built ahead from the C++ runtime (``tensorrt_llm/runtime``, the executor's ``enqueue``), which launches a
    step's kernels without Python: what MLPerf's submissions and releases before 1.0 ran."""
    return s.trtllm_backend or BACKEND


def host_loop(s: Scenario, m: ModelSpec, gpu: GpuSpec) -> HostLoop:
    """``trtllm-serve``'s loop (TensorRT-LLM 1.x, PyTorch backend). A request goes through the OpenAI server
    (``tensorrt_llm/serve/openai_server.py`` ``OpenAIServer.openai_completion``: FastAPI, then ``LLM.generate_async``
    tokenizes the prompt in the server process), over ZMQ to the executor worker (``executor/proxy.py``
    ``GenerationExecutorProxy``), into ``PyExecutor``'s loop (``_torch/pyexecutor/py_executor.py``, new requests
    fetched at the start of an iteration; a step that holds a context request runs without a CUDA graph, priced in
    the step: :meth:`Trtllm.timing`), and its tokens come back the same way to be detokenized
    (``executor/result.py`` ``DetokenizedGenerationResultBase._handle_response``) and streamed as OpenAI chunks
    (``serve/postprocess_handlers.py``) in the server process. What a request waits beyond the GPU's steps is
    :data:`~gpuplan.overheads.TRTLLM_REQUEST_S`, vLLM's figure borrowed (the same work in a Python OpenAI server;
    no trtllm-serve run measures it apart from the context step). The overlap scheduler (on unless
    ``disable_overlap_scheduler``) prepares the next step while the GPU runs this one, so the loop's cost per step
    and per sequence (vLLM's V1 figures: no TensorRT-LLM run measures them) shows only past the GPU's step. The
    speed layer's prompt chunks stay vLLM's (``max_num_batched_tokens``); the serving simulation schedules whole
    prompts up to ``max_num_tokens`` (``CHUNKED_CONTEXT``). Those chunks are `vllm serve`'s whatever vLLM entry point
    the scenario names: trtllm-serve reads no entry_point (s27: ``entry_point offline`` moved a TensorRT-LLM plan's
    prompt time, 34.2 -> 21.2 ms, without a word)."""
    served = s.with_resolved({"entry_point": "serve"}) if s.entry_point != "serve" else s
    return HostLoop(step_s=oh.VLLM_V1_STEP_OVERHEAD_S, seq_s=oh.VLLM_V1_HOST_S_PER_SEQ, request_s=oh.TRTLLM_REQUEST_S,
                    overlapped=s.pp == 1,
                    chunk_tokens=scheduler_limits(served, m, gpu, current=True).max_num_batched_tokens)


TRTLLM = Trtllm()
