"""vLLM's memory at startup, as the release the user names computes it: the KV pool, its tokens and concurrency.

vLLM preallocates a budget and gives what its profiling run leaves to the paged KV cache. In the current
release (0.33.0, ``vllm/v1/worker/gpu_worker.py`` ``Worker.determine_available_memory``)::

    requested  = ceil(total_memory x gpu_memory_utilization)              (vllm/v1/worker/utils.py request_memory)
    kv_pool    = requested - non_kv_cache_memory - cudagraph_estimate
    non_kv     = weights + non-torch increase + transient torch peak      (vllm/utils/mem_utils.py memory_profiling)

``total_memory`` is what ``cudaMemGetInfo`` reports (H100 80GB: 79.19 GiB, not the 80 GB of the datasheet). The
profiling run (``gpu_model_runner.py`` ``GPUModelRunner.profile_run``) pushes ``max_num_batched_tokens`` tokens
through the model in ``max_num_seqs`` requests and samples one token per request (``_dummy_sampler_run``); the
CUDA-graph estimate (``profile_cudagraph_memory``) is subtracted since 0.21 (``VLLM_MEMORY_PROFILER_ESTIMATE_
CUDAGRAPHS`` defaults to 1: ``vllm/envs.py``; the worker logs "CUDA graph memory profiling is enabled (default
since v0.21.0)"). Blocks hold ``block_size`` (16) tokens of every layer of a KV-cache group; the printed "GPU KV
cache size" is ``int(max_concurrency x max_model_len)`` and the concurrency counts whole blocks per request of
``max_model_len`` tokens (``vllm/v1/core/kv_cache_utils.py`` ``get_kv_cache_capacity``,
``get_max_concurrency_for_kv_cache_config``).

Rules by release (each dated by the log or source it comes from; :func:`rules` picks them):

- V0 engine (< 0.8): the profiling run takes the whole ``max_model_len`` at once when chunked prefill is off
  (``max_num_batched_tokens = max(max_model_len, 2048)``; with it on, 512 tokens before 0.6.5 and 2,048 after),
  its peak is the forward of those tokens plus fp32 logits of ``max_num_seqs`` rows before 0.6.5; from 0.6.5
  the larger of the forward and the driver rank's sampler run (38.9 bytes per row x vocab entry, as V1 0.9-0.16),
  and under TP the pool is the driver's (the smallest). Non-torch memory by accounting: 0.35 GiB before 0.6.5
  (vllm#10517, RTX 3090, CUDA context included), 1.79 GiB on one GPU and 3.58 GiB at TP 2 in 0.6.5-0.6.x
  (vLLM PR #10511's H100 logs), 0.16 GiB from 0.7 (PR #12126's H100 log). Before 0.6.5 the forward peak per
  token is the MLP's plus 4.6 bytes x hidden (vllm#10517: 1.95 GiB at 20,000 tokens), 12 after.
- V1 0.8: fp32 logits of every batched token, 4.86 bytes per token x vocab entry. Up to 0.9.0 V1 counts all
  device memory torch did not allocate as non-torch, the CUDA context included (0.35 GiB on one GPU).
- V1 0.9 to 0.16: the sampler's dummy run over ``max_num_seqs`` rows holds 38.9 bytes per row x vocab entry
  (Llama-3.1-8B 4.76 GiB, Qwen3-14B 5.64 GiB at 1,024 sequences, llm-d-planner's vLLM 0.15/0.16 H100 runs;
  vllm#27508's gpt-oss-120b at 1,024 batched tokens keeps it); non-torch 0.13 GiB, 0.55 GiB with TP over NVLink.
- V1 from 0.17: the peak is the larger of the forward and the sampler's ``max_num_seqs x vocab`` sort (14.37
  bytes per element plus 0.133 GiB: Llama-3.1-8B 1.89 GiB, Qwen2.5-7B 2.21 GiB, Gemma-2 3.64 GiB at 1,024
  sequences, llm-d-planner vLLM 0.17-0.19 runs); non-torch 0.25 GiB on one GPU, ~2.1 GiB at TP >= 2 over
  NVLink (NCCL and custom all-reduce buffers allocated in the profiling run; cards without NVLink keep the one-GPU
  figure), 0.07 GiB per pipeline stage.
- From 0.21: the CUDA-graph estimate comes out of the KV budget.

Scheduler defaults (``vllm/engine/arg_utils.py`` ``EngineArgs.get_batch_defaults`` and
``_set_default_max_num_seqs_and_batched_tokens_args``): from 0.9 (vLLM PR #17885) GPUs with >= 70 GiB other
than A100 get 8,192 tokens (``vllm serve``) / 16,384 (offline ``LLM``) and 1,024 sequences, others 2,048 / 8,192
and 256; cards with >= 160 GiB get 16,384 and 1,024 for both (read in 0.33.0, applied here from 0.21).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from dataclasses import dataclass, field, replace

from .. import overheads as oh
from ..hardware import GpuSpec
from ..model.layers import Layer, attends
from ..model.quant import Format
from ..model.spec import ModelSpec
from ..scenario import Scenario
from ..tensors.breakdown import GIB, Estimate
from ..tensors.kv import kv_bytes_per_sequence
from ..tensors.layout import replicated_attention_bytes, replicated_bytes
from ..tensors.state import weight_format
from . import deepep
from .base import Engine
from .block_fp8 import block_fp8_kernels
from .records import HostLoop, KvPool, Timing
from .rocm import gpu_scale, rocm_note

CURRENT_VERSION = "0.33.0"


@functools.lru_cache(maxsize=256)
def named_version(s: Scenario) -> tuple[int, int, int] | None:
    """The release ``s`` names (:func:`version_tuple`), None where it names none (the engine's current one)."""
    return version_tuple(s.engine_version) if s.engine_version else None


def version_tuple(text: str | None) -> tuple[int, int, int]:
    """``"0.6.3.post1"`` -> ``(0, 6, 3)``; ``"0.11.0rc2"``, ``"0.6.5.dev"``, ``"0.10.1.1"`` -> their release's
    first three numbers (a pre-release follows the rules of the release it leads to); None: the current one."""
    import re

    nums = [int(x) for x in re.findall(r"\d+", re.split(r"(?:a|b|rc|\.?post|\.?dev|\+)", text or CURRENT_VERSION)[0])]
    return tuple([*nums, 0, 0, 0][:3])  # type: ignore[return-value]


@dataclass(frozen=True, kw_only=True)
class Rules:
    """What one vLLM release does at startup (see the module docstring for the sources)."""

    version: str
    engine: str  # v0 | v1
    logits_all_tokens: bool  # V1 0.8: the profiling run's logits cover every batched token
    sampler_bytes: float  # V1 from 0.9: bytes per sampled row x vocab entry of the dummy sampler run
    sampler_fixed: float  # V1 from 0.17: bytes of the sampler's peak whatever the batch
    v0_hidden_bytes: float  # V0: forward temporaries per batched token x hidden
    v0_logits_only: bool  # V0 before 0.6.5: the profiling peak is the forward plus fp32 logits, no sampler's
    cudagraphs_in_budget: bool  # >= 0.21
    non_torch_gib: float

    @property
    def label(self) -> str:
        return f"vLLM {self.version} ({self.engine.upper()} engine)"


def rules(s: Scenario, gpu: GpuSpec | None = None) -> Rules:
    v = version_tuple(s.engine_version)
    text = s.engine_version or CURRENT_VERSION
    flashinfer = bool(s.flashinfer_sampler) and v >= (0, 9, 0)  # 0.8's logits over every token: its own rule
    sort_bytes = oh.VLLM_SAMPLER_EARLY_BYTES if v < (0, 17, 0) else oh.VLLM_SAMPLER_BYTES
    return Rules(version=text, engine="v0" if v < (0, 8, 0) else "v1",
                 logits_all_tokens=(0, 8, 0) <= v < (0, 9, 0),
                 sampler_bytes=oh.VLLM_FLASHINFER_SAMPLER_BYTES if flashinfer else sort_bytes,
                 sampler_fixed=0.0 if v < (0, 17, 0) or flashinfer else oh.VLLM_SAMPLER_FIXED_GIB * GIB,
                 v0_hidden_bytes=oh.VLLM_V0_EARLY_FWD_HIDDEN_BYTES if v < (0, 6, 5) else oh.VLLM_FWD_HIDDEN_BYTES,
                 v0_logits_only=v < (0, 6, 5),
                 cudagraphs_in_budget=v >= (0, 21, 0) and not s.enforce_eager, non_torch_gib=_non_torch_gib(v, s, gpu))


# the speculative methods vLLM's default async scheduling takes (0.14.0's release notes: it "Excludes some
# not-yet-supported configurations: ... non-MTP/Eagle spec decoding"; vLLM PR #31998, "Enable async scheduling by
# default with spec decoding": "disabled implicitly for non-EAGLE/MTP types")
ASYNC_SPECULATION = ("none", "eagle", "eagle3", "mtp")


def async_scheduling(s: Scenario) -> bool:
    """Whether the engine core schedules step N+1 while the GPU runs step N (``--async-scheduling``,
    ``SchedulerConfig.async_scheduling``; ``vllm/v1/core/sched/async_scheduler.py`` ``AsyncScheduler`` and
    ``EngineCore.step_with_batch_queue``): the scenario's ``async_scheduling`` where set (:func:`async_refusal`
    says where it cannot be), else the release's default: on from 0.14.0 (vLLM PR #27614; the 0.14.0 release
    notes: "Async scheduling is now enabled by default ... Excludes some not-yet-supported configurations:
    pipeline parallel, CPU backend, non-MTP/Eagle spec decoding"), off before (an experimental opt-in, vLLM PR
    #19970, opened 2025-06-23; taken as first released in 0.10.0 of July 2025, an assumption: neither release's
    parser was read). The engine's host work per step then overlaps the GPU's; with speculative decoding only by
    EAGLE heads and MTP (:data:`ASYNC_SPECULATION`)."""
    if s.async_scheduling is not None:
        return s.async_scheduling
    return version_tuple(s.engine_version) >= (0, 14, 0) and s.pp == 1 and s.speculative_method in ASYNC_SPECULATION


def async_refusal(s: Scenario) -> str | None:
    """Why vLLM cannot run the scenario's ``async_scheduling true``: the release has no such flag (before 0.10.0,
    vLLM PR #19970), or pipeline parallelism, which the releases up to 0.14 leave out of it (PR #19970: "async
    scheduling does not support ... Pipeline parallelism"; 0.14.0's release notes; gpustack#3836: vLLM 0.11.2 with
    ``--async-scheduling --pipeline-parallel-size 2`` would not start until the flag was dropped) and gpuplan times
    synchronously (vLLM PR #32359 of January 2026 let later releases combine them, with constraints: not
    modelled)."""
    if not s.async_scheduling:
        return None
    if version_tuple(s.engine_version) < (0, 10, 0):
        return (f"vLLM {s.engine_version} has no --async-scheduling (it came in 0.10.0): drop async_scheduling, or "
                "set engine_version 0.10.0 or later")
    if s.pp > 1:
        return ("gpuplan times vLLM's pipeline-parallel engine loop synchronously (0.14's release notes leave "
                "pipeline parallelism out of async scheduling): drop async_scheduling, or set pp 1")
    return None


def prefix_caching(s: Scenario, m: ModelSpec | None = None) -> bool:
    """Whether automatic prefix caching is on by default: yes in the V1 engine (0.8 and later:
    ``vllm/engine/arg_utils.py`` ``_set_default_args_v1``, "V1 enables prefix caching by default", when
    ``--enable-prefix-caching`` is left unset), off in V0; off for hybrid models with recurrent (Mamba,
    linear-attention) layers, where later releases leave it off by default as experimental. It caches and matches
    whole blocks of :data:`~gpuplan.overheads.VLLM_BLOCK_TOKENS`."""
    hybrid = m is not None and any(layer.state_elements or not layer.kv_dims for layer in m.layers)
    return version_tuple(s.engine_version) >= (0, 8, 0) and not hybrid


def reserve_full_sequence(s: Scenario) -> bool:
    """Whether the scheduler admits a waiting request only when its whole known sequence fits the free KV blocks,
    rather than its first chunk: from 0.19 (``SchedulerConfig.scheduler_reserve_full_isl``, vLLM PR #37307 of March
    2026; on in 0.19.0's resolved configuration as casys-kaist/LLMServingSim's bench records it), and in the V0
    engine before 0.8, whose block manager allocates a sequence's every block when it is admitted
    (``vllm/core/block_manager.py`` ``SelfAttnBlockSpaceManager.can_allocate`` and ``allocate``). V1 from 0.8 to
    0.18 allocates a chunk's blocks at a time (``KVCacheManager.allocate_slots``)."""
    v = version_tuple(s.engine_version)
    return v >= (0, 19, 0) or v < (0, 8, 0)


# V1 from 0.8.0 to 0.9.0 counted everything on the device that torch had not allocated as non-torch memory
# (``gpu_worker.py`` ``determine_available_memory``: ``mem_get_info`` total - free - torch's allocated bytes, after
# profiling; quoted in vLLM PR #17122's review of 2025-05-12, and vLLM PR #19312: "V1's memory profiling
# incorrectly counts memory used by other processes as non_torch_allocations"), the CUDA context included, as V0
# did before 0.6.5. What that adds over the baseline accounting of later releases: V0's device-wide 0.35 GiB
# (vllm#10517, RTX 3090) less the 0.13 GiB V1 counts from a baseline.
_V1_DEVICE_WIDE_EXTRA_GIB = oh.VLLM_V0_EARLY_NON_TORCH_GIB - oh.VLLM_V1_EARLY_NON_TORCH_GIB


def _non_torch_gib(v: tuple[int, int, int], s: Scenario, gpu: GpuSpec | None = None) -> float:
    """Memory outside torch that the profiling run counts (NCCL, custom all-reduce, cuBLAS workspaces). V0 changed
    what it counts twice: before 0.6.5 (vLLM PR #9352's accounting) the whole non-torch use after profiling, the
    CUDA context included; in 0.6.5-0.6.x (PR #10511) the increase since a baseline taken before the model loads;
    from 0.7.0 (PR #12126) a baseline taken after it.

    V1's extra under tensor parallelism (0.55 GiB to 0.17, ~2.1 GiB from 0.18) was measured on NVLink H100 nodes,
    where the all-reduce paths that keep device buffers live (custom all-reduce's IPC buffers, NVLink SHARP) are
    on; on cards without NVLink vLLM turns custom all-reduce off beyond two GPUs (``custom_all_reduce.py``: "not
    supported on more than two PCIe-only GPUs") and there is no NVLink SHARP, so the single-GPU figure is taken:
    LLMServingSim's Qwen3-32B on 2x RTX PRO 6000 (vLLM 0.28.0, custom all-reduce off) then lands at -1.8 % KV
    tokens instead of -4.5 %, vLLM PR #20665's DeepSeek-V2-Lite on L4s (0.9.2, TP 2 x PP 2) at -0.8 % instead of
    -4.3 %, vllm#17469's Qwen3-30B-A3B on 4x A10 (0.8.5) at -7.6 % instead of -18.6 % (with the A10's measured
    total); vllm#13061's 2x RTX 4090 on V0 0.7 logged 0.25 GiB at TP 2 (V0's 0.16 single-GPU figure + NCCL)."""
    late_v0 = oh.VLLM_V0_NON_TORCH_GIB * (2 if s.tp > 1 else 1)
    if v < (0, 6, 5):
        return max(oh.VLLM_V0_EARLY_NON_TORCH_GIB, late_v0 if _hopper(gpu) else 0.0) + nvls_gib(s, gpu)
    if v < (0, 7, 0):
        return late_v0
    if v < (0, 8, 0):
        return oh.VLLM_V0_LATE_NON_TORCH_GIB
    nvlink_tp = s.tp > 1 and (gpu is None or bool(gpu.nvlink_bandwidth_gbs))
    if v < (0, 18, 0):
        base = oh.VLLM_V1_EARLY_NON_TORCH_TP_GIB if nvlink_tp else oh.VLLM_V1_EARLY_NON_TORCH_GIB
        return base + (_V1_DEVICE_WIDE_EXTRA_GIB if v < (0, 9, 1) else 0.0)
    if nvlink_tp:
        return oh.VLLM_NON_TORCH_TP_GIB + oh.VLLM_NON_TORCH_PER_TP_RANK_GIB * s.tp
    return oh.VLLM_NON_TORCH_PP_GIB if s.pp > 1 and s.tp == 1 else oh.VLLM_NON_TORCH_GIB


def _hopper(gpu: GpuSpec | None) -> bool:
    """A Hopper card (compute capability 9.x), where V0's non-torch memory was measured (vLLM PR #10511, H100).

    V0 before 0.6.5 counts at least what 0.6.5 counts: 0.6.3 takes the free memory lost since ``init_device``
    (``worker.py`` ``determine_num_available_blocks``: ``peak_memory = self.init_gpu_memory - free_gpu_memory``
    after the profiling run, torch's cached blocks included), 0.6.4 (PR #9352) the device's whole use less torch's
    allocated bytes after ``empty_cache``, the CUDA context included; 0.6.5 (PR #10511, ``memory_profiling``)
    only the growth since ``init_device`` less torch's allocated growth, after ``empty_cache``. So on the card
    0.6.5's figure was measured on (H100: 1.79 GiB at TP 1, 3.58 at TP 2) it is a floor for the earlier releases
    too, above the RTX 3090's 0.35 (vllm#10517, 0.6.4) the early rule was fitted on. NVLink SHARP comes on top:
    #10511's TP 2 has none (NCCL sets it up for more than 2 GPUs)."""
    return gpu is not None and gpu.sm_major == 9


def nvls_gib(s: Scenario, gpu: GpuSpec | None) -> float:
    """NCCL's NVLink SHARP buffers that V0 before 0.6.5 counts as non-torch memory
    (:data:`~gpuplan.overheads.VLLM_V0_NVLS_TP8_GIB`, vllm#9699): only for tensor parallelism over more than 2 GPUs
    (the issue's measurement: "NVLS is only enabled for n > 2 GPUs, in H100 and above platforms") on SXM cards of
    compute capability 9.0 and later, whose NVSwitches have SHARP (PCIe cards and A100's NVSwitches have none);
    ranks past 8 are on other nodes. Applied where it was measured: the accounting before 0.6.5 counts everything
    on the device that torch did not allocate; later ones start from a baseline and have no such log."""
    if gpu is None or s.tp <= 2 or not gpu.form_factor.startswith("SXM") or gpu.sm_major < 9:
        return 0.0
    return oh.VLLM_V0_NVLS_TP8_GIB * min(s.tp, 8) / 8


# ---- scheduler limits ------------------------------------------------------------------------------
@dataclass(frozen=True, kw_only=True)
class Limits:
    max_num_batched_tokens: int
    max_num_seqs: int
    max_model_len: int
    chunked_prefill: bool
    defaults: bool  # both token and sequence limits are vLLM's defaults
    prefix_caching: bool = False  # automatic prefix caching on (:func:`prefix_caching`: V1, not a hybrid model)


def cuda_total_gib(gpu: GpuSpec) -> float:
    """What ``cudaMemGetInfo`` reports as total: the usable memory less the driver's own reserve
    (H100 80GB: 79.19 GiB in vLLM's logs against 79.6 GiB usable). An Ampere or Ada GeForce card shows its whole
    GDDR (24,576 MiB on a 3090 or 4090) and the driver's reserve comes off that (RTX 3090: 23.58 of 24 GiB); a
    GeForce RTX 5090 shows 32,607 MiB (vllm#34076), the usable figure's rule. Cards whose total a public log
    states take it as measured (``CUDA_TOTAL_MEASURED_GIB``)."""
    if gpu.id in oh.CUDA_TOTAL_MEASURED_GIB:
        return oh.CUDA_TOTAL_MEASURED_GIB[gpu.id]
    if gpu.segment == "consumer" and gpu.generation in ("Ampere", "Ada"):
        return gpu.memory_gib - oh.CUDA_TOTAL_BELOW_CONSUMER_SIZE_GIB
    return gpu.usable_gib - oh.CUDA_TOTAL_BELOW_USABLE_GIB


def _v0_chunked_tokens(v: tuple[int, int, int]) -> int:
    """V0's ``max_num_batched_tokens`` when chunked prefill is on (by default above 32,768 tokens of context):
    512 up to 0.6.4 ("the best balance between ITL and TTFT on A100", ``SchedulerConfig``), 2,048 from 0.6.5
    (vLLM PR #10544 of 2024-11-21, "512 is a very conservative value"). vllm#10517's RTX 3090 log (V0 of
    2024-12, Llama-3.1-8B) shows the 512: at max-model-len 35,000 its profiling peak is 15.05 GiB, 0.06 GiB
    over the weights, where 2,048 tokens would add ~0.2 GiB of MLP temporaries alone."""
    return 512 if v < (0, 6, 5) else 2048


def scheduler_limits(s: Scenario, m: ModelSpec, gpu: GpuSpec | None, *, current: bool = False) -> Limits:
    """``max_num_batched_tokens`` and ``max_num_seqs`` as the release sets them when the user does not (the current
    release's with ``current``: an engine timed as vLLM's current one). Chunked prefill is the user's
    (``s.chunked_prefill``) or the release's default: V0 turns it on only past 32,768 tokens of context
    (``vllm/engine/arg_utils.py`` ``EngineArgs.create_engine_config``, ``use_long_context``, when
    ``--enable-chunked-prefill`` is left unset) and never for an MLA model (DeepSeek-V2/V3/R1: from 0.7.1 vLLM PR
    #12642's ``VllmConfig.__post_init__`` forces it off, "MLA is enabled; forcing chunked prefill and prefix caching
    to be disabled", whatever the flag, through 0.7.3; after PR #12639 V0's default stays off,
    ``_set_default_args_v0``: "Chunked prefill not supported for Multimodal or MLA in V0"), V1 always. Turned off,
    a step must take a whole prompt, so the
    token budget (and the profiling run) becomes ``max(max_model_len, 2048)`` in either engine (V0's
    ``SchedulerConfig.__post_init__``; V1's ``SchedulerConfig``: "If max_model_len is too short, use 2048 as the
    default value for higher throughput")."""
    v = version_tuple(None if current else s.engine_version)
    max_len = VLLM.context(s, m)  # the model's as vLLM derives it (Vllm.model_context), or the requests' past it
    serve = s.entry_point == "serve"
    total = cuda_total_gib(gpu) if gpu else 0.0
    big = gpu is not None and total >= 70 and "a100" not in gpu.id
    if v < (0, 8, 0):  # V0: SchedulerConfig.__post_init__ (vllm/config.py)
        mla = m.mla is not None
        chunked = max_len > 32_768 and not mla if s.chunked_prefill is None else s.chunked_prefill
        chunked = chunked and not (mla and (0, 7, 1) <= v < (0, 7, 4))
        tokens, seqs = (_v0_chunked_tokens(v) if chunked else max(max_len, 2048)), 256
    else:
        chunked = s.chunked_prefill is not False
        if v >= (0, 21, 0) and total >= 160:
            tokens, seqs = 16_384, 1024
        elif v >= (0, 9, 0) and big:
            tokens, seqs = (8192 if serve else 16_384), 1024
        else:
            tokens, seqs = (2048 if serve else 8192), 256
        tokens = min(seqs * max_len, tokens) if chunked else max(max_len, 2048)
    tokens = s.max_num_batched_tokens or tokens
    seqs = s.max_num_seqs or min(seqs, tokens)
    return Limits(max_num_batched_tokens=tokens, max_num_seqs=seqs, max_model_len=max_len, chunked_prefill=chunked,
                  defaults=s.max_num_batched_tokens is None and s.max_num_seqs is None,
                  prefix_caching=prefix_caching(s, m))


# ---- pipeline stages and their weights -------------------------------------------------------------
@dataclass(frozen=True, kw_only=True)
class Stage:
    layers: tuple[Layer, ...]
    first: bool
    last: bool


def stages(m: ModelSpec, pp: int) -> list[Stage]:
    """Layers per pipeline stage as vLLM splits them: ``L // pp`` each, the remainder to the stages before the
    last (``vllm/distributed/utils.py`` ``get_pp_indices``)."""
    sizes = [m.num_layers // pp] * pp
    for i in range(2, m.num_layers % pp + 2):
        sizes[-i] += 1
    out, start = [], 0
    for i, n in enumerate(sizes):
        out.append(Stage(layers=m.layers[start:start + n], first=i == 0, last=i == pp - 1))
        start += n
    return out


def stage_weights(s: Scenario, m: ModelSpec, stage: Stage, gpu: GpuSpec | None) -> float:
    """Weight bytes one GPU of ``stage`` loads: its layers, the embedding on the first stage, the output head
    (and final norm) on the last, all split over TP (vocab-parallel embedding and head) but MLA's down-projections
    and indexer, whole on every rank (:func:`gpuplan.tensors.layout.replicated`)."""
    fmt, skip = weight_format(s, m)
    parts = m.weight_bytes(fmt, skip=skip)
    head = parts["lm_head"] if parts["lm_head"] else (parts["embeddings"] if s.pp > 1 else 0.0)
    norm_bytes = m.final_norm_params * fmt.high_bytes
    per_layer = (sum(parts.values()) - parts["embeddings"] - parts["lm_head"] - parts["vision"] - norm_bytes) \
        / m.num_layers
    experts_share = parts["experts"] / m.num_layers
    pad = mxfp4_padding(m, s.tp, gpu, s.engine_version) if fmt.name == "mxfp4" else 1.0
    total = len(stage.layers) * (per_layer + experts_share * (pad - 1))
    if stage.first:
        total += parts["embeddings"] + parts["vision"]
    if stage.last:
        total += head + norm_bytes
    return (total / s.tp + replicated_attention_bytes(s, parts, len(stage.layers) / m.num_layers)
            + replicated_bytes(s, stage.layers, fmt, skip) + absorbed_mla_bytes(s, m, stage.layers, fmt))


def absorbed_mla_bytes(s: Scenario, m: ModelSpec, layers, fmt: Format) -> float:
    """Bytes one GPU holds beside an MLA model's weights in the releases whose MLA backend materializes the decode
    path's absorbed matrices at load (:data:`~gpuplan.overheads.VLLM_MLA_ABSORPTION`: vLLM 0.7.1 to 0.7.x,
    ``vllm/attention/backends/mla/utils.py`` ``MLACommonImpl.process_weights_after_loading`` of v0.7.3, with
    ``VLLM_MLA_PERFORM_MATRIX_ABSORPTION`` on by default) while keeping the projections for prompts, per MLA layer
    and this GPU's ``heads / tp`` heads: ``W_Q_UK`` (q_lora_rank, or the hidden size without one, x heads x
    kv_lora_rank) and ``W_UV_O`` (heads x kv_lora_rank x hidden), requantized to the checkpoint's fp8 blocks
    (``scaled_quantize``) when it is fp8, else in the 16-bit dtype; ``W_QR`` (q_lora_rank x heads x rope dims) in
    16 bits; and, for a quantized checkpoint, ``kv_b_proj`` dequantized to 16 bits (``get_and_maybe_dequant_weights``,
    whose ``W_UK`` and ``W_UV`` views the backend keeps). 0 for other releases and models."""
    mla = m.mla
    lo, hi = oh.VLLM_MLA_ABSORPTION
    if not mla or not lo <= version_tuple(s.engine_version) < hi:
        return 0.0
    heads, hidden, latent = m.num_heads / s.tp, m.hidden_size, mla["kv_lora_rank"]
    q_in = mla.get("q_lora_rank") or hidden
    bi, bo = fmt.fp8_block or (1, 1)

    def absorbed(i: float, o: float) -> float:  # requantized to the checkpoint's fp8 blocks, else 16-bit
        return i * o + 4 * math.ceil(i / bi) * math.ceil(o / bo) if fmt.name == "fp8" else i * o * fmt.high_bytes

    per = absorbed(q_in, heads * latent) + absorbed(heads * latent, hidden) \
        + q_in * heads * mla["qk_rope_head_dim"] * fmt.high_bytes
    if fmt.name != "none":
        per += latent * heads * (mla["qk_nope_head_dim"] + mla["v_head_dim"]) * fmt.high_bytes
    return per * sum(1 for layer in layers if layer.attention == "mla")


def mxfp4_padding(m: ModelSpec, tp: int, gpu: GpuSpec | None, version: str | None = None) -> float:
    """Expert bytes vLLM holds after loading MXFP4 experts for its kernel, over the checkpoint's
    (``vllm/model_executor/layers/fused_moe/oracle/mxfp4.py`` ``mxfp4_round_up_hidden_size_and_intermediate_size``):
    Marlin (Ampere, Ada; Hopper up to 0.11.0, whose wheels came without OpenAI's triton_kernels, so that
    ``get_mxfp4_backend`` finds no ``triton_kernels`` module and falls back: vllm#23278's 0.10.1 log on an H100
    warns "Weight-only FP4 compression will be used leveraging the Marlin kernel" and loads gpt-oss-120b in
    65.97 GiB, this rule's 65.90; vllm#26582 "vllm v0.11.0 installed via uv pip install vllm" still lacks it)
    rounds the hidden size up to 256 and the per-rank intermediate size to 128; the Triton backend (Hopper from
    0.11.1, the first release with vLLM PR #27370 of 2025-10-22, "Add triton_kernels dependency ... on Hopper
    both commands default to using the Triton implementation"; Blackwell) rounds the intermediate size to 64, and
    on Hopper its swizzled layout holds ``VLLM_MXFP4_TRITON_HOPPER_LOAD`` more at the end of loading."""
    h = m.hidden_size
    inter = max((lin.in_features for layer in m.layers for lin in layer.linears if lin.group == "experts"
                 and lin.out_features == h), default=0)
    if not inter:
        return 1.0
    part = inter / tp
    hopper = gpu is not None and gpu.generation == "Hopper"
    if gpu is not None and (gpu.generation in ("Ampere", "Ada", "Turing", "Volta")
                            or (hopper and version_tuple(version) < (0, 11, 1))):
        hp, ip = math.ceil(h / 256) * 256, math.ceil(part / 128) * 128
        return (hp * ip) / (h * part)
    pad = math.ceil(part / 64) * 64 / part
    return pad * (1 + oh.VLLM_MXFP4_TRITON_HOPPER_LOAD) if hopper else pad


# ---- the profiling run -----------------------------------------------------------------------------
def forward_peak(m: ModelSpec, tokens: int, tp: int, hidden_bytes: float = oh.VLLM_FWD_HIDDEN_BYTES) -> float:
    """Peak temporaries of one layer's forward for ``tokens`` batched tokens (torch.compile'd vLLM model):
    the residual stream, norms and attention in/out (``VLLM_FWD_HIDDEN_BYTES·h`` per token) beside the larger of
    the MLP (gate/up output and activation: ``VLLM_FWD_MLP_BYTES·i/t``) and the fused-MoE caches (top-k copies
    of the ``2·i_e`` gate/up output, its activation and the ``h`` output, in chunks of 32,768 tokens:
    ``VLLM_FUSED_MOE_CHUNK_SIZE``). Calibrated on llm-d-planner's vLLM 0.19 logs (Llama-3.1-8B first pipeline
    stage 1.10 GiB, CodeLlama-7B 0.77 GiB at 8,192 tokens)."""
    h = m.hidden_size
    dense = max((lin.in_features for layer in m.layers for lin in layer.linears
                 if lin.group in ("mlp", "shared_experts") and lin.out_features == h and lin.name != "o_proj"),
                default=0)
    mlp = tokens * oh.VLLM_FWD_MLP_BYTES * dense / tp
    if m.is_moe:
        inter = max((lin.in_features for layer in m.layers for lin in layer.linears
                     if lin.group == "experts" and lin.out_features == h), default=0)
        chunk = min(tokens, 32_768)
        moe = chunk * m.experts_per_token * (3 * inter / tp + h) * 2 + tokens * m.num_experts * 4
        mlp = max(mlp, moe)
    return tokens * hidden_bytes * h + mlp


def profile_peak(r: Rules, m: ModelSpec, lim: Limits, stage: Stage, tp: int) -> tuple[float, float]:
    """(forward, sampler) peaks of the profiling run on one GPU of ``stage``; the worker's peak is the larger (V0
    before 0.6.5: their sum, logits of ``max_num_seqs`` rows in fp32). V0 from 0.6.5 samples the profiling batch
    with top-k = vocab - 1 and top-p 0.99 (``model_runner.py`` ``profile_run``) on the driver worker only, and takes
    the smallest rank's blocks, so its pool is the driver's: vLLM PR #10511's H100 logs keep the same 1.26 GiB
    activation peak at TP 1 and TP 2 (the forward halves, the sampler does not), and vllm#13061's 2x RTX 4090
    (0.7.2) printed 81,536 tokens where its other rank's 8.69 GiB holds ~94,900: the driver's sampler at the V1
    0.9-0.16 bytes per row (``VLLM_SAMPLER_EARLY_BYTES``) accounts for the difference. V1's dummy run returns the
    hidden states of one token per request (``_dummy_run``: ``outputs[logit_indices]``, in the code from 0.10), so
    the sampler's rows are ``min(max_num_seqs, max_num_batched_tokens)``; in 0.8 the logits covered every batched
    token (PR #17122's 0.8.4 L40S log fits that reading at +3.6 %, the per-row one at +22 %); 0.9 is put with the
    later rule, unpinned."""
    tokens = lim.max_num_batched_tokens
    fwd = forward_peak(m, tokens, tp, r.v0_hidden_bytes if r.engine == "v0" else oh.VLLM_FWD_HIDDEN_BYTES)
    if not stage.last:
        return fwd, 0.0
    rows = min(lim.max_num_seqs, tokens)
    if r.v0_logits_only:
        return fwd, rows * m.vocab_size * 4.0
    if r.logits_all_tokens:
        return fwd, oh.VLLM_LOGITS_ALL_BYTES * tokens * m.vocab_size
    return fwd, r.sampler_fixed + r.sampler_bytes * rows * m.vocab_size


def capture_sizes(max_num_seqs: int, gpu: GpuSpec | None) -> list[int]:
    """Default CUDA-graph batch sizes: 1, 2, 4, then every 8 to 248, then every 16 up to
    ``min(2·max_num_seqs, 512)`` (1,024 on Blackwell B200/B300) (``vllm/config/vllm.py``
    ``VllmConfig._set_cudagraph_sizes``)."""
    ceiling = 1024 if gpu is not None and gpu.sm_major == 10 else 512
    top = min(2 * max_num_seqs, ceiling)
    sizes = [1, 2, 4, *range(8, 256, 8), *range(256, top + 1, 16)]
    return [x for x in sizes if x <= top]


def cudagraph_estimate(m: ModelSpec, lim: Limits, tp: int, gpu: GpuSpec | None) -> float:
    """vLLM's CUDA-graph estimate (``profile_cudagraph_memory``): the first capture of each mode at the largest
    size, then the second capture's increment times the remaining sizes; FULL (decode) and PIECEWISE graphs share
    one pool, so the larger first capture counts once. The increment per graph and layer
    (``VLLM_CUDAGRAPH_PER_GRAPH_LAYER_MIB``) is calibrated on the 0.84 GiB vLLM estimated for Llama-3.1-8B on
    an H100 (llm-d-planner logs, vLLM 0.19)."""
    sizes = capture_sizes(lim.max_num_seqs, gpu)
    first = forward_peak(m, sizes[-1], tp)
    decode = [x for x in sizes if x <= lim.max_num_seqs]
    graphs = (len(sizes) - 1) + max(len(decode) - 1, 0)
    return first + graphs * oh.VLLM_CUDAGRAPH_PER_GRAPH_LAYER_MIB * m.num_layers * 2**20


# ---- the KV pool -----------------------------------------------------------------------------------
def layer_page_bytes(s: Scenario, m: ModelSpec, layer: Layer, block: int) -> float:
    """Bytes of one block of one layer on one GPU, from the per-layer cache function (KV heads split over TP,
    MLA latent replicated, fp8 / int8 KV with their scales)."""
    return kv_bytes_per_sequence(s, m, block, layers=(layer,), block=oh.VLLM_BLOCK_TOKENS)


def _layer_blocks(layer: Layer, lim: Limits, block: int) -> int:
    """Blocks one request takes in ``layer`` at ``max_model_len``: one for a recurrent state (``MambaSpec``),
    else its tokens in blocks of ``block``."""
    if not layer.kv_dims:
        return 1
    return math.ceil(_layer_tokens(layer, lim) / block)


def attention_block_tokens(s: Scenario, m: ModelSpec, layers) -> int:
    """Tokens per block of the attention layers: 16, raised on hybrid models until one attention page holds at
    least one layer's recurrent state, in multiples of 16 (``HybridAttentionMambaModelConfig``
    ``verify_and_update_config``: ``attn_block_size = 16 * cdiv(mamba_page, 16 * attn_page_per_token)``)."""
    block = oh.VLLM_BLOCK_TOKENS
    distinct = list(dict.fromkeys(layers))
    states = [layer for layer in distinct if not layer.kv_dims and layer.state_elements]
    attention = [layer for layer in distinct if layer.kv_dims]
    if not states or not attention:
        return block
    state_page = max(layer_page_bytes(s, m, layer, block) for layer in states)
    per_token = max(layer_page_bytes(s, m, layer, block) for layer in attention) / block
    return block * max(1, math.ceil(state_page / (block * per_token)))


def _layer_tokens(layer: Layer, lim: Limits) -> int:
    """Tokens one request keeps in ``layer`` at ``max_model_len``: all of them, or for a sliding window
    ``window - 1 + max_num_batched_tokens`` (``SlidingWindowSpec.max_memory_usage_bytes``)."""
    if layer.window:
        return min(lim.max_model_len, layer.window - 1 + lim.max_num_batched_tokens)
    return lim.max_model_len


def kv_geometry(s: Scenario, m: ModelSpec, stage: Stage, lim: Limits, max_len: int | None = None
                ) -> tuple[float, int]:
    """(bytes of one block id across the stage's layers, block ids one request of ``max_len`` tokens takes).

    Layers of one kind form one KV-cache group; hybrid models split kinds into groups of equal size (the
    smallest kind's count) that draw block ids from one shared pool (``vllm/v1/core/kv_cache_utils.py``
    ``_get_kv_cache_groups_uniform_page_size``); a request takes whole blocks in every group, and one block per
    linear-attention or Mamba layer for its state, whose page the attention pages are raised to
    (:func:`attention_block_tokens`)."""
    block_bytes, per_request = _kv_groups(s, m, stage)
    lim = lim if max_len is None else Limits(**{**lim.__dict__, "max_model_len": max_len})
    return block_bytes, per_request(lim)


def _group_shares(stage: Stage) -> tuple[int, list[tuple[int, Layer]]]:
    """(layers per KV-cache group, [(groups of one kind, a layer of that kind)]): layers of one kind (attention,
    window) split into groups of the smallest kind's count (``_get_kv_cache_groups_uniform_page_size``)."""
    kinds: dict[tuple, list[Layer]] = {}
    for layer in stage.layers:  # a layer with neither attention nor a recurrent state (Nemotron-H's MoE and MLP
        # layers) has no KV-cache spec: the model runner's ``get_kv_cache_spec`` walks attention and Mamba modules
        if layer.kv_dims or layer.state_elements:
            kinds.setdefault((layer.attention, layer.window), []).append(layer)
    group = min(len(v) for v in kinds.values())
    return group, [(math.ceil(len(layers) / group), layers[0]) for layers in kinds.values()]


def logged_kv_tokens(s: Scenario, m: ModelSpec, stage: Stage, blocks: int, concurrency: float, max_model_len: int
                     ) -> int:
    """vLLM's "GPU KV cache size: N tokens". Up to 0.19 it is the pool's block ids shared out evenly over the
    KV-cache groups, times the smallest block size (``vllm/v1/core/kv_cache_utils.py`` ``_report_kv_cache_config``:
    ``num_blocks // len(kv_cache_groups) * min_block_size``, quoted from 0.19.0 in vllm#40691; V0 printed its
    blocks times the block size), so a sliding-window layer counts as holding every token: vllm-benchmarking's
    gpt-oss-120b log (0.10.1, TP 4, 45.32 GiB) prints 2,640,144 tokens, the pool over all 36 layers' bytes. Later
    releases print ``max_concurrency * max_model_len`` (the code vllm#51041 quotes, 2026-08; the change is put at
    0.20, unpinned), which counts a sliding window's blocks only up to the window."""
    if version_tuple(s.engine_version) >= (0, 20, 0):
        return int(concurrency * max_model_len)
    groups = sum(n for n, _ in _group_shares(stage)[1])
    return blocks // groups * attention_block_tokens(s, m, stage.layers)


def _kv_groups(s: Scenario, m: ModelSpec, stage: Stage) -> tuple[float, Callable[[Limits], int]]:
    """:func:`kv_geometry` in two steps: the block bytes, and the block ids one request takes under given limits
    (the binary search of :func:`max_model_len_that_fits` asks the second for many lengths)."""
    block = attention_block_tokens(s, m, stage.layers)
    group, shares = _group_shares(stage)
    page = max(layer_page_bytes(s, m, layer, block) for layer in dict.fromkeys(stage.layers))  # distinct layers

    def per_request(lim: Limits) -> int:
        return sum(n * _layer_blocks(layer, lim, block) for n, layer in shares)

    return page * group, per_request


@dataclass(kw_only=True)
class StartupMemory:
    """One GPU of the first pipeline stage (what rank 0 logs), bytes; tokens and concurrency for the engine
    (the smallest over stages)."""

    rules: Rules
    limits: Limits
    requested: float
    weights: float
    activation: float
    forward_peak: float
    sampler_peak: float
    non_torch: float
    cuda_graphs: float
    kv_pool: float
    num_blocks: int
    kv_tokens: int
    max_concurrency: float
    max_model_len_fit: int
    assumptions: list[str] = field(default_factory=list)

    @property
    def fits_max_model_len(self) -> bool:
        return self.max_model_len_fit >= self.limits.max_model_len

    def ranks(self, n: int) -> StartupMemory:
        """``n`` attention data-parallel ranks as one scheduler sees them: each rank is an engine core with its
        own limits and pool, so the blocks, running sequences and per-step tokens add up."""
        limits = replace(self.limits, max_num_seqs=self.limits.max_num_seqs * n,
                         max_num_batched_tokens=self.limits.max_num_batched_tokens * n)
        return replace(self, limits=limits, num_blocks=self.num_blocks * n)


def startup_memory(s: Scenario, m: ModelSpec, gpu: GpuSpec, total_gib: float | None = None) -> StartupMemory:
    """The budget, the profiled non-KV memory and the KV pool vLLM computes at startup on ``gpu``."""
    r = rules(s, gpu)
    lim = scheduler_limits(s, m, gpu)
    total = (total_gib if total_gib is not None else cuda_total_gib(gpu)) * GIB
    requested = math.ceil(total * s.gpu_memory_utilization)
    per_stage = []
    for st in stages(m, s.pp):
        weights = stage_weights(s, m, st, gpu)
        fwd, sampler = profile_peak(r, m, lim, st, s.tp)
        act = fwd + sampler if r.v0_logits_only else max(fwd, sampler)
        graphs = cudagraph_estimate(m, lim, s.tp, gpu) if r.cudagraphs_in_budget else 0.0
        pool = requested - weights - act - r.non_torch_gib * GIB - graphs - deepep.buffer_bytes(s, m)
        block_bytes, per_request = kv_geometry(s, m, st, lim)
        blocks = max(int(pool // block_bytes), 0) if block_bytes else 0
        per_stage.append((st, weights, fwd, sampler, act, graphs, pool, block_bytes, blocks, per_request))
    first = per_stage[0]
    blocks = min(p[8] for p in per_stage)
    per_request = max(p[9] for p in per_stage)
    concurrency = blocks / per_request if per_request else 0.0
    fit = max_model_len_that_fits(s, m, [(p[0], p[8]) for p in per_stage], lim)
    out = StartupMemory(rules=r, limits=lim, requested=requested, weights=first[1], activation=first[4],
                        forward_peak=first[2], sampler_peak=first[3], non_torch=r.non_torch_gib * GIB,
                        cuda_graphs=first[5], kv_pool=max(first[6], 0.0), num_blocks=blocks,
                        kv_tokens=logged_kv_tokens(s, m, first[0], blocks, concurrency, lim.max_model_len),
                        max_concurrency=concurrency,
                        max_model_len_fit=fit)
    out.assumptions.append(
        f"{r.label}: max_num_batched_tokens {lim.max_num_batched_tokens:,}, max_num_seqs {lim.max_num_seqs}"
        f"{' (its defaults for this GPU and `vllm ' + s.entry_point + '`)' if lim.defaults else ''}, max_model_len "
        f"{lim.max_model_len:,}, block size {oh.VLLM_BLOCK_TOKENS}, gpu_memory_utilization "
        f"{s.gpu_memory_utilization} of {total / GIB:.2f} GiB; "
        + ("CUDA-graph estimate taken from the KV budget" if r.cudagraphs_in_budget else
           "no CUDA graphs (--enforce-eager)" if s.enforce_eager else "CUDA graphs outside the KV budget"))
    return out


def started(s: Scenario, m: ModelSpec, gpu: GpuSpec) -> tuple[StartupMemory, str | None]:
    """The startup memory of the vLLM a plan starts, and the default it took for it (None: none). With no
    max_model_len set vLLM starts at the model's context (:meth:`Vllm.context`) and refuses to start when one request
    of it does not fit its KV pool (``check_enough_kv_cache_memory`` in ``vllm/v1/core/kv_cache_utils.py``: "the
    estimated maximum model length is N ... decreasing `max_model_len`"); where the scenario's requests fit, the plan
    starts it at the longest that does (:func:`max_model_len_that_fits`, vLLM's own estimate), the value the launch
    files write (``--max-model-len``)."""
    sm = startup_memory(s, m, gpu)
    fit, tokens = sm.max_model_len_fit, s.prompt_tokens + s.output_tokens
    if s.max_model_len is not None or sm.fits_max_model_len or fit < tokens:
        return sm, None
    return startup_memory(s.with_resolved({"max_model_len": fit}), m, gpu), (
        f"max_model_len {fit:,}: the longest request the predicted KV pool holds (vLLM would refuse to start at "
        f"{sm.limits.max_model_len:,}; set max_model_len to choose)")


def max_model_len_that_fits(s: Scenario, m: ModelSpec, stage_blocks, lim: Limits) -> int:
    """The longest ``--max-model-len`` for which one request fits the pool of every stage (vLLM's
    ``estimate_max_model_len``: a binary search on the same per-request block count)."""
    requests = [(_kv_groups(s, m, st)[1], blocks) for st, blocks in stage_blocks]

    def fits(n: int) -> bool:
        at = Limits(**{**lim.__dict__, "max_model_len": n})
        return all(per_request(at) <= blocks for per_request, blocks in requests)

    if not fits(oh.VLLM_BLOCK_TOKENS):
        return 0
    lo, hi = oh.VLLM_BLOCK_TOKENS, max(lim.max_model_len, 16) * 64
    if fits(hi):
        return hi
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if fits(mid) else (lo, mid)
    return lo


# ---- the engine profile ----------------------------------------------------------------------------
def pool(s: Scenario, m: ModelSpec, sm: StartupMemory) -> KvPool:
    """The pool of the startup memory ``sm`` (:func:`startup_memory` of ``s``) for requests of ``prompt_tokens +
    output_tokens``: the pool's block ids over the ids one such request takes in every KV-cache group
    (:func:`kv_geometry`: whole blocks of its tokens in full-attention groups; in sliding-window groups the window
    plus one step's tokens, ``SlidingWindowSpec.max_memory_usage_bytes``), which is how vLLM counts its "Maximum
    concurrency for N tokens per request" (``vllm/v1/core/kv_cache_utils.py``
    ``get_max_concurrency_for_kv_cache_config``) at N = the request's length. ``kv_tokens`` is that concurrency
    times the request's length; vLLM's own log line "GPU KV cache size: N tokens" counts at ``--max-model-len``
    instead (``logged_tokens``): the same pool, a different request length, so for hybrid sliding-window models
    (gpt-oss) a different number of tokens. A shared prefix the prefix cache holds (:meth:`Vllm.cached_prefix_tokens`)
    takes its ``S`` blocks once and each request adds its other ``R - S`` blocks: ``(blocks - S) // (R - S)``
    requests (only on models of full attention in every layer: a sliding window or a recurrent state keeps blocks
    per request that this does not count); ``kv_tokens`` stays the pool's tokens, each held once. A pool too small
    for the prefix itself holds no request (not -1)."""
    tokens = s.prompt_tokens + s.output_tokens
    per_request = max(kv_geometry(s, m, st, sm.limits, max_len=tokens)[1] for st in stages(m, s.pp))
    full = all(layer.kv_dims and not layer.window and not layer.state_elements for layer in m.layers)
    cached = VLLM.cached_prefix_tokens(s, m) if full else 0
    shared = max(kv_geometry(s, m, st, sm.limits, max_len=cached)[1] for st in stages(m, s.pp)) if cached else 0
    own = per_request - shared
    exact = sm.num_blocks / per_request if per_request else 0.0  # the pool in tokens, with or without sharing
    plain = math.ceil(tokens / oh.VLLM_BLOCK_TOKENS)  # the blocks of one group of full attention
    return KvPool(engine="vllm", pool_gib=sm.kv_pool / GIB, request_tokens=tokens,
                  max_concurrency=max(sm.num_blocks - shared, 0) // own if own else 0,
                  kv_tokens=int(exact * tokens), logged_tokens=sm.kv_tokens, max_model_len=sm.limits.max_model_len,
                  sim_blocks=sm.num_blocks * plain // per_request if per_request else 0)


def _memory_without_card(s: Scenario, m: ModelSpec, e: Estimate) -> Estimate:
    """Without a GPU: the working set of one step and the KV cache of ``batch_size`` requests (paged blocks)."""
    lim = scheduler_limits(s, m, None)
    stage = stages(m, s.pp)[0]
    fwd, sampler = profile_peak(rules(s), m, lim, stage, s.tp)
    e.activations = max(fwd, sampler)
    e.kv_cache = s.batch_size * kv_bytes_per_sequence(s, m, s.prompt_tokens + s.output_tokens, stage.layers,
                                                      block=oh.VLLM_BLOCK_TOKENS)
    return e


def _engine_dict(sm: StartupMemory) -> dict:
    """What vLLM's startup log prints, for the report."""
    return {"engine": "vllm", "version": sm.rules.version, "max_num_batched_tokens": sm.limits.max_num_batched_tokens,
            "max_num_seqs": sm.limits.max_num_seqs, "max_model_len": sm.limits.max_model_len,
            "max_model_len_that_fits": sm.max_model_len_fit, "available_kv_cache_gib": sm.kv_pool / GIB,
            "kv_cache_tokens": sm.kv_tokens, "num_gpu_blocks": sm.num_blocks,
            "max_concurrency_at_max_model_len": round(sm.max_concurrency, 2), "requested_gib": sm.requested / GIB,
            "forward_peak_gib": sm.forward_peak / GIB, "sampler_peak_gib": sm.sampler_peak / GIB}


# the formats vLLM loads a plain checkpoint in (its --quantization: vllm/model_executor/layers/quantization
# QuantizationMethods, vLLM 0.32 and 0.33; int8 weight-only online)
QUANTIZES = ("fp8", "awq-int4", "gptq-int4", "gptq-int8", "mxfp4", "int8", "nvfp4")  # nvfp4: ModelOpt checkpoints


def scheduler_of(s: Scenario, mem: StartupMemory, *, chunked_prefill: bool | None = None,
                 blocks: int | None = None) -> dict:
    """The scheduler settings (the fields of :class:`gpuplan.serving.simulate.Scheduler`, which simulates it) of
    ``s``'s vLLM release over the KV pool and limits its startup ``mem`` gives (:func:`startup_memory`);
    ``blocks``: the pool in 16-token blocks of requests (:attr:`.records.KvPool.sim_blocks`: hybrid models'
    sliding-window pages counted), by default its block ids; ``chunked_prefill``: by default the release's
    (:func:`scheduler_limits`: V1 always, V0 only past 32,768 tokens of context).

    The V0 engine (before 0.8) schedules differently from V1 (``vllm/core/scheduler.py`` ``Scheduler._schedule``):
    without chunked prefill, ``_schedule_default`` batches waiting prompts first and runs no decode in a step that
    admitted any ("Don't schedule decodes if prefills are scheduled"): prefill first, as SGLang; with it,
    ``_schedule_chunked_prefill`` runs decodes, then running chunks, then new prompts in one step, as V1. Either
    way a prompt is admitted only when ``SelfAttnBlockSpaceManager.can_allocate`` (``vllm/core/block_manager.py``)
    finds blocks for its whole known sequence (``seq.get_token_ids()``: the prompt, and the tokens generated
    before a preemption) with ``watermark`` (0.01) of the pool left free, and ``allocate`` takes them all at once;
    preemption recomputes (``Scheduler._preempt``: RECOMPUTE for a single sequence) the last running request
    (``_schedule_running``: ``running_queue.pop()``). V1 recomputes too, but with its prefix cache on
    (:func:`prefix_caching`) a resumed request finds the full blocks the pool has not handed out again since
    (``keeps_preempted``: :func:`gpuplan.serving.simulate._keep_preempted`); a hybrid model's pool, with the cache
    off, recomputes the whole request."""
    kv = mem.num_blocks if blocks is None else blocks
    v0 = version_tuple(s.engine_version) < (0, 8, 0)
    chunked = mem.limits.chunked_prefill if chunked_prefill is None else chunked_prefill
    return dict(kv_blocks=kv, block_tokens=oh.VLLM_BLOCK_TOKENS, max_num_seqs=mem.limits.max_num_seqs,
                max_num_batched_tokens=mem.limits.max_num_batched_tokens, chunked_prefill=chunked,
                mixed_prefill=chunked or not v0, reserve_full_sequence=reserve_full_sequence(s),
                admit_watermark_blocks=int(oh.VLLM_V0_WATERMARK * kv) if v0 else 0,
                keeps_preempted=mem.limits.prefix_caching)


# rope_scaling kinds whose config states the extended context in max_position_embeddings already (vLLM skips their
# factor; "su" is longrope's old name)
UNSCALED_ROPE = ("su", "longrope", "llama3")


def derived_max_len(m: ModelSpec) -> int:
    """The context vLLM derives from a model's config, past which it refuses a max_model_len without
    VLLM_ALLOW_LONG_MAX_MODEL_LEN (``_get_and_verify_max_len``, vllm-project/vllm ``vllm/config/model.py`` at
    0052a5b8, on the text config): max_position_embeddings x the rope_scaling ``factor``, where a YaRN rope starts
    from its ``original_max_position_embeddings`` instead, and :data:`UNSCALED_ROPE` kinds and Gemma 3 (its 128K "is
    already scaled by RoPE scaling") keep max_position_embeddings. A config with one rope per layer kind takes the
    factor of the kinds that scale (vLLM assumes they agree). Linear and dynamic factors multiply: a Llama 2 config
    with ``{"type": "linear", "factor": 4.0}`` derives 16,384. gpuplan's max_position_embeddings (``max_context``)
    stands for the smallest of vLLM's length keys."""
    base, rope = m.max_context or 0, m.rope_scaling
    text = m.config.get("text_config") or m.config
    if not rope or "gemma3" in str(text.get("model_type") or m.config.get("model_type") or ""):
        return base
    factor = 1.0
    for rp in (rope.values() if all(isinstance(v, dict) for v in rope.values()) else [rope]):
        kind = rp.get("rope_type") or rp.get("type")  # vLLM's patch_rope_parameters reads "type" as rope_type
        if kind in UNSCALED_ROPE:
            continue
        factor = rp.get("factor") or factor
        if kind == "yarn":
            base = rp.get("original_max_position_embeddings") or base
    return int(base * factor)


# The least compute capability (major x 10 + minor) of each weight format's quantization method in vLLM: its start
# refuses the card below it ("The quantization method mxfp4 is not supported for the current GPU. Minimum
# capability: 80. Current capability: 75.", the check of ``get_min_capability`` in ``VllmConfig``, quoted in
# vllm-project/vllm#22288 and #23203). ``vllm/model_executor/layers/quantization/``: ``mxfp4.py`` Mxfp4Config 80
# (e61bac87, lines 75-76, cited by #23203), ``awq.py`` AWQConfig 75 ("The AWQ kernel only supports Turing or newer
# GPUs", 000796ac), ``fp8.py`` Fp8Config 75 (v0.30.0's lines 147-149, as a third-party reading of that tag quotes
# them; :data:`EARLIER_CAPABILITY` for the releases before). GPTQConfig's 60 is below every card in the catalog
# (``gptq.py``; its exllama kernel runs on Volta). ``modelopt.py`` ModelOptNvFp4Config (``modelopt_fp4``, the nvfp4
# checkpoints) 75 at 00155cde: off Blackwell its linear and MoE layers run weight-only through the FP4 Marlin kernel
# (vllm-project/vllm#17687, "fp4 marlin kernel", 2025-05), on Turing since #29901.
MIN_CAPABILITY = {"fp8": 75, "mxfp4": 80, "awq-int4": 75, "nvfp4": 75}
# A format's higher floors in the releases before some: ((that release, the floor), ...), oldest first. Fp8Config's 80
# (weight-only through Marlin below 8.9; 1436674b) until vllm-project/vllm#29901 ("add marlin kernel support for
# turing (sm75)": GPTQ, AWQ, FP8 and NVFP4 weights) ran Marlin on Turing; it merged in the week to 2025-12-19 (vLLM's
# weekly summary of that date), after 0.12.0: 0.13.0 (released 2025-12-19) is the first release that may hold it,
# and is given it, so that only what a release surely refuses is refused. ModelOptNvFp4Config likewise: 100 as first
# added (a stored copy whose get_name is still "modelopt_nvfp4", "Please use Blackwell and above"), 80 once the FP4
# Marlin kernel ran it (#17687, "fp4 marlin kernel": a stored copy of that form, ModelOptNvFp4LinearMethod and
# ModelOptNvFp4FusedMoE falling back to Marlin where cutlass_fp4_supported is not, has get_min_capability 80), 75
# with #29901. #17687 was still in review on 2025-05-09 (its approving review) and merged by 2025-05-12 (#18000 of
# that day builds on it): every release before 0.9.0 (2025-05-15; 0.8.5.post1 of 2025-05-02 the last before it)
# lacks it and is surely 100; 0.9.0 may hold it and is given 80
EARLIER_CAPABILITY = {"fp8": (((0, 13, 0), 80),), "nvfp4": (((0, 9, 0), 100), ((0, 13, 0), 80))}


def floor_by_release(s: Scenario, earlier: tuple[tuple[tuple[int, int, int], int], ...]) -> int | None:
    """The floor of the first of ``earlier``'s (release, floor) pairs, oldest first, whose release comes after the
    one ``s`` names (:data:`EARLIER_CAPABILITY`, SGLang's likewise); None where ``s`` names none (the engine's
    current release) or none comes after it."""
    v = named_version(s)
    return next((least for until, least in earlier if v is not None and v < until), None)


class Vllm(Engine):
    """vLLM: a budget of ``gpu_memory_utilization`` of the card, the KV pool what its profiling run leaves (module
    docstring), paged blocks shared by prefix, CUDA graphs and an engine loop (V1 from 0.8)."""

    name = "vllm"
    scheduler_words = "From a simulation of vLLM's scheduler"
    pool_admits = ("holds; the others wait for them to finish, and a pool that runs out preempts requests, which "
                   "recompute when they resume what the prefix cache no longer holds of them (all of it with the "
                   "cache off: the V0 engine, hybrid models).")
    rocm_build = True
    # vllm/envs.py VLLM_USE_DEEP_GEMM (on by default from PR #24462; the wheel carries DeepGEMM from 0.19)
    deepgemm_switch = "VLLM_USE_DEEP_GEMM=0"
    grid_note = ("vLLM preallocates gpu_memory_utilization of each card: a cell fits when its KV pool holds the "
                 "batch; the curve shows what the batch needs")
    expert_parallel = True
    moe_dispatch_words = ("vLLM's default --all2all-backend allgather_reducescatter: each GPU gathers the step's "
                          "tokens and reduce-scatters the experts' outputs")
    label = "vLLM"
    pool_words = "vLLM's KV pool"
    preallocates = True
    advised_by_pool = True
    tensor_parallel_flag = "vLLM --tensor-parallel-size"
    layer_split_words = "vLLM --pipeline-parallel-size"
    checks_request_length = True
    context_flag = "--max-model-len"
    long_context_env = "VLLM_ALLOW_LONG_MAX_MODEL_LEN"
    fp8_weight_only = True
    min_capability = MIN_CAPABILITY
    budget_fix = ("gpu_memory_utilization", 0.95, "--gpu-memory-utilization 0.95 (a larger vLLM budget)",
                  "same speed; less room for anything else on the GPU")
    kv_block_tokens = oh.VLLM_BLOCK_TOKENS
    launch_target = "vllm"
    no_chunked_prefill = None

    def scheduler_settings(self, s: Scenario, startup: StartupMemory, pool: KvPool, longest: int) -> dict | None:
        """Its scheduler's (:func:`scheduler_of`) over the pool's blocks of requests; none when the pool holds no
        block, or one request of its ``max_model_len`` does not fit it (vLLM would not start)."""
        if startup.num_blocks <= 0 or not startup.fits_max_model_len:
            return None
        return scheduler_of(s, startup, blocks=pool.sim_blocks)

    def model_context(self, m: ModelSpec) -> int:
        """The model's context as vLLM derives it (:func:`derived_max_len`)."""
        return derived_max_len(m)

    def refusal(self, s: Scenario, m: ModelSpec) -> str | None:
        if s.task == "infer" and s.precision == "fp8-mixed":
            return "vLLM serves fp8 as weight quantization: set quant fp8 and precision bf16-true"
        asked = self.quantizes_to(s, m)
        if asked is not None and asked not in QUANTIZES:
            return (f"vLLM (0.32, 0.33) cannot load {s.quant} weights (no bitsandbytes or GGUF loading in its "
                    "quantization methods): choose awq-int4, gptq-int4, fp8 or int8")
        max_len = self.context(s, m)
        if s.chunked_prefill is False and s.max_num_batched_tokens and s.max_num_batched_tokens < max_len:
            # SchedulerConfig._verify_args (V0 and V1): a step must hold a whole prompt without chunking
            return (f"vLLM refuses to start without chunked prefill when max_num_batched_tokens "
                    f"({s.max_num_batched_tokens:,}) is below max_model_len ({max_len:,}): raise one or lower the "
                    "other")
        return None

    def async_scheduling_refusal(self, s: Scenario) -> str | None:
        return async_refusal(s)

    def least_capability(self, s: Scenario, fmt: str) -> int | None:
        """:data:`MIN_CAPABILITY`'s, or the higher floor of a release the scenario names before the one that lowered
        it (:data:`EARLIER_CAPABILITY`: fp8 before Marlin ran on Turing, nvfp4 before Marlin ran it at all)."""
        return floor_by_release(s, EARLIER_CAPABILITY.get(fmt, ())) or super().least_capability(s, fmt)

    def expert_parallel_refusal(self, s: Scenario) -> str | None:
        """vLLM's expert-parallel group is every GPU of the copy (``--enable-expert-parallel``: EP = TP x DP)."""
        if s.ep in (1, s.tp):
            return None
        return (f"vLLM's expert-parallel group is every GPU of the copy (--enable-expert-parallel: EP = TP x DP): set "
                f"ep {s.tp} or 1")

    def memory(self, s: Scenario, m: ModelSpec, e: Estimate, fmt: Format, gpu: GpuSpec | None,
               capacity_gib: float | None) -> Estimate:
        """vLLM preallocates its budget and gives what the profiling run leaves to the KV cache, by the rules of
        the release named. Without a GPU, the working set of one step and the KV cache of ``batch_size``
        requests."""
        e.peak_phase = "serving"
        if gpu is None:
            return _memory_without_card(s, m, e)
        sm, took = started(s, m, gpu)
        if took:  # the plan's scenario carries it (gpuplan.plan.plan.memory_plan)
            e.extra["filled"] = ({"max_model_len": sm.limits.max_model_len}, took)
        e.weights, e.activations, e.kv_cache = sm.weights, sm.activation, sm.kv_pool
        e.other["non-torch (NCCL, workspaces)"] = sm.non_torch
        if deepep.buffer_bytes(s, m):  # non-torch memory the profiling sees: taken from the pool
            e.other[deepep.label(s)] = deepep.buffer_bytes(s, m)
        if sm.rules.cudagraphs_in_budget:
            e.other["CUDA graphs (estimate)"] = sm.cuda_graphs
        elif not s.enforce_eager:
            e.extra["outside"] = {"CUDA graphs": cudagraph_estimate(m, sm.limits, s.tp, gpu)}
        e.preallocated = sm.requested
        e.assumptions += sm.assumptions
        kv = pool(s, m, sm)
        e.extra.update(engine=_engine_dict(sm), kv_pool=kv, startup=sm)
        if not sm.fits_max_model_len:
            tokens = s.prompt_tokens + s.output_tokens
            fix = (f"set --max-model-len {sm.max_model_len_fit:,} or less" if sm.max_model_len_fit >= tokens else
                   "the KV pool cannot hold one request of this length: use more GPUs (tp), quantization, or a "
                   "shorter context")
            why = f"its KV pool holds {sm.kv_tokens:,} tokens, one request of up to {sm.max_model_len_fit:,}; {fix}"
            if sm.weights > sm.requested:  # no context is short enough: the budget is gone before the pool
                why = (f"the weights alone ({sm.weights / GIB:,.2f} GiB per GPU) are more than its budget "
                       f"({s.gpu_memory_utilization:g} of the GPU, {sm.requested / GIB:,.2f} GiB): use more "
                       "GPUs (tp) or quantized weights")
            e.warnings.append(f"vLLM will refuse to start with max_model_len {sm.limits.max_model_len:,}: {why}")
        return e

    def cached_prefix_tokens(self, s: Scenario, m: ModelSpec | None = None) -> int:
        """Automatic prefix caching (V1, on by default but on hybrid Mamba models: :func:`prefix_caching`) hashes
        and matches whole KV blocks (``vllm/v1/core/kv_cache_utils.py`` ``hash_request_tokens``: full blocks only),
        so a request finds ``floor(prefix / 16) x 16`` tokens cached and holds those blocks in common with the
        others; V0 caches nothing unless ``--enable-prefix-caching`` is given."""
        if not s.shared_prefix_tokens or not prefix_caching(s, m):
            return 0
        return s.shared_prefix_tokens // oh.VLLM_BLOCK_TOKENS * oh.VLLM_BLOCK_TOKENS

    def uncached_prefix_why(self, s: Scenario) -> str:
        return "vLLM before 0.8 caches prefixes only with --enable-prefix-caching"

    def timing(self, s: Scenario, m: ModelSpec, gpu: GpuSpec) -> Timing:
        return current_timing(s, m, gpu, current=False, eager_steps=s.enforce_eager, **measured_kernels(s, m, gpu),
                              prompt_attention=prompt_attention(s, m, gpu),
                              mixed_decode_rows=mixed_decode_rows(s, m, gpu),
                              **block_fp8_kernels(s, m, gpu, "vllm", named_version(s)))

    def packages(self, s: Scenario, version: str | None) -> list[str]:
        """vLLM's wheel at the release whose memory rules the estimate followed."""
        return [f"vllm=={version}"]


# compute capability majors on which vLLM's FLASH_ATTN backend runs FlashAttention-2 (Ampere and Ada, GeForce and
# workstation Blackwell; FA2 needs SM 8.0 or later)
FA2_MAJORS = (8, 12)


def prompt_attention(s: Scenario, m: ModelSpec, gpu: GpuSpec) -> str:
    """The fused attention class of vLLM's prompts where its forward rate is measured on the card
    (:data:`~gpuplan.overheads.ATTENTION_FORWARD_PEAK_FRACTION`): ``flash2`` on SM 8.x and 12.x. Its attention
    selector tries FLASH_ATTN first on every CUDA card but SM 10.x (``vllm/platforms/cuda.py``
    ``_get_backend_priorities``), and there FlashAttention-2 (``vllm/v1/attention/backends/fa_utils.py``
    ``get_flash_attn_version``: FA3 on SM 9.x, FA4 on 10.x, else "Fallback to FA2"). FA2 does not take an fp8 KV
    cache (FLASH_ATTN's fp8 needs FA3), attention sinks (``flash_attn_supports_sinks``: FA3) or MLA
    (FLASH_ATTN_MLA: FA3), so those fall to FlashInfer or Triton, not measured here: "" (the generation's
    fraction)."""
    if gpu.sm_major not in FA2_MAJORS or m.mla or s.kv_cache_dtype == "fp8":
        return ""
    if any(layer.attention_extra for layer in m.layers if attends(layer)):  # gpt-oss's sinks
        return ""
    return "flash2"


def mixed_decode_rows(s: Scenario, m: ModelSpec, gpu: GpuSpec) -> int:
    """The query rows FlashAttention-2 runs for each decoding sequence's every query head in a step that holds a
    prompt (:data:`~gpuplan.overheads.FA2_SPLITKV_TILE_ROWS`): vLLM's V1 engine (0.8+) on the cards where its prompts
    run FA2 (:func:`prompt_attention`), whose one varlen call over the step's tokens leaves the decodes' query heads
    unfolded unless every query is one token (flash_api.cpp ``mha_varlen_fwd``); 0 elsewhere: V0 ran its decodes in a
    call of their own, FA3 packs a KV head's query heads into one tile (hopper/flash_api.cpp ``get_pack_gqa``), and
    the other backends are not read here."""
    if version_tuple(s.engine_version) < (0, 8, 0) or prompt_attention(s, m, gpu) != "flash2":
        return 0
    return oh.FA2_SPLITKV_TILE_ROWS


def measured_kernels(s: Scenario, m: ModelSpec, gpu: GpuSpec) -> dict[str, float]:
    """vLLM's decode costs that are not the bytes' rate on Hopper and datacenter Blackwell (SM 10.x), from the vLLM
    blog's single-request sweeps (overheads.VLLM_FP8_KV_RATE, VLLM_MXFP4_MOE_LAYER_S): an fp8 KV cache read by
    FlashAttention-3 (Hopper) or FlashInfer (Blackwell), by head size (none measured: the bytes' rate; not for
    hybrids, whose cache is mostly recurrent state their own kernels read), gpt-oss's MXFP4 MoE layers (Hopper
    from 0.11.1, the Triton backend: :func:`mxfp4_padding`; Blackwell's FlashInfer kernels), and Mamba-2's SSM
    state update under the launch heuristic of the releases before the per-card tuned configs
    (:data:`~gpuplan.overheads.VLLM_SSU_HEURISTIC_GBS`: measured on the H200; the state's bytes do not depend on
    the model's weights' format, so the rate applies to any Mamba-2 hybrid on that card)."""
    major = gpu.sm_major
    family = {9: "Hopper", 10: "Blackwell"}.get(major)
    if family is None:
        return {}
    version, out = version_tuple(s.engine_version), {}
    if s.kv_cache_dtype == "fp8" and not any(layer.state_elements for layer, _ in m.layer_kinds()):
        table = max(((v, rates) for (f, v), rates in oh.VLLM_FP8_KV_RATE.items() if f == family and version >= v),
                    key=lambda x: x[0])[1]
        out["fp8_kv_rate"] = table.get(m.head_dim, 1.0)
    if weight_format(s, m)[0].name == "mxfp4" and (family == "Blackwell" or version >= (0, 11, 1)):
        out["expert_layer_s"] = oh.VLLM_MXFP4_MOE_LAYER_S
    if version < oh.VLLM_SSU_TUNED_FROM and gpu.id in oh.VLLM_SSU_HEURISTIC_GBS:
        out["ssm_state_bps"] = oh.VLLM_SSU_HEURISTIC_GBS[gpu.id] * 1e9
    return out


def piecewise_graph_s(s: Scenario, m: ModelSpec) -> float:
    """What piecewise CUDA graphs add to each step of V1 releases before 0.11 (their default ``cudagraph_mode``,
    PIECEWISE; ``vllm/config/compilation.py``): every layer's attention op runs eagerly between two graph replays
    (torch.compile's ``splitting_ops``), :data:`~gpuplan.overheads.VLLM_PIECEWISE_GRAPH_LAYER_S` per layer of a
    pipeline stage. From 0.11 (FULL_AND_PIECEWISE) a decode step replays one full graph, which the V1 host
    constants, fitted on 0.11 and 0.15 runs, already hold."""
    if not (0, 8, 0) <= version_tuple(s.engine_version) < (0, 11, 0):
        return 0.0
    return oh.VLLM_PIECEWISE_GRAPH_LAYER_S * math.ceil(m.num_layers / max(s.pp, 1))


def current_timing(s: Scenario, m: ModelSpec, gpu: GpuSpec, *, current: bool = True,
                   loop: HostLoop | None = None, note: str = "", graph_max_batch: int | None = None,
                   label: str = "vLLM", rocm_measured: bool = False, **kernels) -> Timing:
    """vLLM's timing of ``s`` (its release; the current one with ``current``, for an engine timed as vLLM's): CUDA
    graphs and fused element-wise kernels in the V1 engine (0.8+), packed projections, the measured kernel bandwidth,
    and its engine loop (``loop``: another engine's own), whose host work per step overlaps the GPU's under async
    scheduling (:func:`async_scheduling`) and, before 0.11, includes its piecewise CUDA graphs' cost per layer
    (:func:`piecewise_graph_s`), and whose prompts are prefilled in chunks of ``max_num_batched_tokens``. A step of up
    to the largest default capture size in tokens (:func:`capture_sizes`) replays a CUDA graph, a larger one runs
    eagerly (``vllm/v1/worker/gpu_model_runner.py``: ``num_scheduled_tokens <= self.cudagraph_batch_sizes[-1]`` "Use
    piecewise CUDA graphs", else "Eager mode"; the batch padded to the next captured size adds rows to GEMMs that read
    their weights once anyway, and is not timed), its kernels launched from Python at
    :data:`~gpuplan.overheads.VLLM_EAGER_LAUNCH_S` each (another engine's ``launch_s`` its own); ``graph_max_batch``:
    another engine's own cap; ``label``,
    ``rocm_measured``: the engine its ROCm note names, and whether its ROCm build was measured (SGLang's was,
    :mod:`.rocm`). ``kernels``: another engine's :class:`~gpuplan.engines.records.Timing` fields (TensorRT-LLM's grouped
    experts and context attention)."""
    v1 = current or version_tuple(s.engine_version) >= (0, 8, 0)
    limits = scheduler_limits(s, m, gpu, current=current)
    if loop is None:
        overlapped = s.pp == 1 if current else async_scheduling(s)
        piecewise = 0.0 if current else piecewise_graph_s(s, m)
        loop = HostLoop(step_s=oh.VLLM_V1_STEP_OVERHEAD_S + piecewise if v1 else oh.VLLM_STEP_OVERHEAD_S,
                        seq_s=oh.VLLM_V1_HOST_S_PER_SEQ if v1 else 0.0, request_s=oh.VLLM_V1_REQUEST_S,
                        frontend_s=oh.VLLM_V1_FRONTEND_S if v1 else 0.0,
                        frontend_token_s=oh.VLLM_V1_FRONTEND_TOKEN_S if v1 else 0.0,
                        overlapped=overlapped, chunk_tokens=limits.max_num_batched_tokens)
    if graph_max_batch is None:
        graph_max_batch = capture_sizes(limits.max_num_seqs, gpu)[-1] if v1 else 0
    rocm = rocm_note(label, gpu, m, measured=rocm_measured)
    if v1:  # a step past the largest capture size: the compiled model's kernels launched from Python
        kernels = {"launch_s": oh.VLLM_EAGER_LAUNCH_S, **kernels}
    return Timing(graphs=v1, packed_linears=True, streaming_bandwidth=True, loop=loop,
                  note="; ".join(x for x in (note, rocm) if x), graph_max_batch=graph_max_batch,
                  gpu_scale=gpu_scale(gpu, m), **kernels)


VLLM = Vllm()
