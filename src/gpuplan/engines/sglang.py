"""SGLang's memory at startup: the KV token pool and the limits its log prints.

SGLang sizes its pool from what is free once the weights are loaded
(``python/sglang/srt/model_executor/model_runner_kv_cache_mixin.py`` ``profile_max_num_token``, SGLang 0.5; the same
arithmetic in ``model_runner.py`` before it)::

    rest (GiB) = available after the weights - total x (1 - mem_fraction_static)
    #tokens    = int(rest x 2^30) // cell_size
    cell_size  = KV heads per GPU x (head_dim + v_head_dim) x layers x KV bytes     (MLA: kv_lora_rank + rope dims)

``total`` is the memory free when the model runner starts (torch's ``mem_get_info``, after the distributed init;
the log's "Load weight begin. avail mem"), so the reserve ``total x (1 - mem_fraction_static)`` holds what the
pool does not: activations, CUDA graphs, the ``req_to_token`` pool. The log prints "Load weight end. ... avail
mem=A GB", "KV Cache is allocated. #tokens: N, K size: ... GB" (GiB) and ``max_total_num_tokens``,
``chunked_prefill_size``, ``max_running_requests`` (``min(max(int(N / context_len x 512), 2048), 4096)`` when
unset: ``ModelRunnerKVCacheMixin.init_memory``).

The default ``mem_fraction_static`` is what changed most across releases:

- until SGLang PR #10975 (2025-09-27): 0.88 on one GPU (the public logs below, January to July 2025, all size
  their pool with it), 0.87 from TP 2, 0.85 from TP 4, 0.81 from TP 8, 0.79 from TP 16 (``ServerArgs.__post_init__``
  of the 0.3-0.4 releases; the 0.85 at TP 4 is also what SGLang's v0.3.0 benchmark README states), with
  ``chunked_prefill_size`` 8,192 and ``cuda_graph_max_bs`` 160 (2,048 and 8 on cards under 25,000 MiB); some
  mid-2025 releases already chose the chunk by memory (16,384 over 160 GiB), which is not modelled;
- from PR #10975 (``server_args.py`` ``ServerArgs._handle_gpu_memory_settings``): ``chunked_prefill_size`` and
  ``cuda_graph_max_bs`` by the card's memory (< 20 GiB: 2,048 and 8; < 35: 2,048 and 24, 80 from TP 4; < 60:
  4,096 and 32/160; < 160: 8,192 and 256/512; larger: 16,384 and 512), then a reserve in MiB of ``512 +
  max(chunked_prefill_size, 2048) x 1.5 + cuda_graph_max_bs x 2 + tp x pp / 8 x 1024``, at least 10 GiB on cards
  over 60 GiB, and ``mem_fraction_static = round((memory - reserve) / memory, 3)``.

The scheduler the serving simulation runs (:func:`gpuplan.engines.sglang.scheduler_of`) takes SGLang's
defaults (``server_args.py``): ``chunked_prefill_size`` and ``max_running_requests`` above, prefill first with
``enable_mixed_chunk`` off, the radix cache on (``disable_radix_cache`` False: prompts that share a prefix with a
cached one skip its prefill; ``page_size`` 1), and from v0.4.0 (the "zero-overhead batch scheduler", SGLang's
v0.4 release post of 2024-12-04; ``--disable-overlap-schedule``) the overlap scheduler, which prepares batch N+1
on the CPU while the GPU runs batch N. ``schedule_policy`` is simulated as ``fcfs`` (the launch file sets it):
``lpm`` orders the queue by cached prefix length, which is arrival order when every prompt shares one prefix.
A prompt is admitted only when its whole uncached prompt and its output (clipped to 4,096) fit what the pool
leaves once each running request's remaining output x ``new_token_ratio`` is reserved (``PrefillAdder.add_one_req``;
:func:`new_token_ratios`: 0.7 decaying over 600 decode steps to 0.098, x 0.3 under DP attention;
``Scheduler.reserve_ratio``); when the pool still runs out the newest request is retracted, as SGLang does. From
0.3.5, with the radix cache off (``--disable-radix-cache``) and requests that set ``ignore_eos`` (bench_serving's
default), ``add_one_req_ignore_eos`` replaces that rule: every remaining output is reserved whole, and a prompt is
admitted when the running requests, freed as they finish, leave room at every step (``Scheduler.
reserve_whole_outputs``, which the bench sets for the runs launched so; gpuplan's plans keep the radix cache on).
Not modelled: the page sizes above 1 of 2026 releases. Decode batches
past ``cuda_graph_max_bs``, and prefill batches, run without CUDA graphs, each kernel launched from Python
(:meth:`Sglang.timing`, :data:`~gpuplan.overheads.SGLANG_EAGER_LAUNCH_S`). ``--scheduler-recv-interval`` (new
requests read every N decode steps) is simulated when a run or the scenario's ``scheduler_recv_interval`` sets it
(``Scheduler.recv_interval``); the default, 1, is what gpuplan's launch files leave unless it is set.

On ROCm, from 0.4.7, SGLang scales ``mem_fraction_static`` by 0.85 where its attention backend is aiter and the
context is above 8,192 tokens (:func:`aiter_scale`): the flag stays what a launch file passes, the pool is sized
with the product. Later releases (2026: draft weights counted, disaggregation-aware reserves, the
``KVCacheConfigurator`` budget) change these again; this module is the 2025 rule set, checked against the logs in
``bench/serving/sglang_startup_cases.yaml``. Hybrid sliding-window pools and Mamba state are not modelled.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

from .. import overheads as oh
from ..hardware import GpuSpec
from ..model.quant import Format
from ..model.spec import ModelSpec
from ..scenario import Scenario
from ..tensors.breakdown import GIB, Estimate, desktop_gib, device_overheads
from ..tensors.kv import kv_dtype_bytes
from ..tensors.layout import weights_per_gpu
from ..tensors.state import weight_format
from . import deepep, speculative
from .base import Engine
from .block_fp8 import block_fp8_kernels, sglang_trtllm_moe, sm100_trtllm_moe
from .records import HostLoop, KvPool, Timing
from .vllm import cuda_total_gib, current_timing, floor_by_release, named_version, version_tuple

HEURISTIC_FROM = (0, 5, 3)  # the first release with PR #10975's reserve (2025-10)
# the reserve's growth for a speculative draft (ServerArgs._handle_gpu_memory_settings: STANDALONE 6 GiB, every
# algorithm but NGRAM 2 GiB), by gpuplan's speculative_method
DRAFT_RESERVE_MIB = {"eagle": 2 * 1024, "eagle3": 2 * 1024, "mtp": 2 * 1024, "draft": 6 * 1024}
EARLY_MEM_FRACTION_BY_TP = ((16, 0.79), (8, 0.81), (4, 0.85), (2, 0.87))  # before HEURISTIC_FROM; TP 1: 0.88
OVERLAP_FROM = (0, 4, 0)  # the overlap ("zero-overhead") scheduler, on by default
SCHEDULE_POLICY = "fcfs"  # as simulated (see the module docstring)
# the releases whose DeepSeek decode is counted in overheads.SGLANG_MLA_MOE_KERNELS_PER_LAYER, and the architectures
# whose all-reduces SGLang fuses by default on Hopper and Blackwell (server_args.py
# ServerArgs._handle_model_specific_adjustments, 2026: one node, no DP attention, no all-to-all MoE backend)
FUSED_KERNELS_FROM = (0, 5, 0)
# the last release whose default MLA backend (triton, everywhere) prefills absorbed once any prompt of the batch has a
# cached prefix (absorbed_prefill); 0.4.5.post3 already picks FA3 on Hopper, which version_tuple does not tell apart
ABSORBED_PREFILL_UNTIL = (0, 4, 5)
# piecewise CUDA graphs for prefill, on by default (SGLang v0.5.10 release notes, "Piecewise CUDA Graph Enabled by
# Default", PR #16331, merged 2026-03-02); MLA models capture prompt steps up to 2,048 tokens, others up to the chunk
# (docs advanced_features/piecewise_cuda_graph: --piecewise-cuda-graph-max-tokens "Defaults to chunked_prefill_size
# (non-MLA) or 2048 (MLA)")
PREFILL_GRAPHS_FROM = (0, 5, 10)
PREFILL_GRAPH_MLA_TOKENS = 2048
# the first release after PR #28053 (merged 2026-06-12, "Disable dsr1 prefill cudagraphs by default"), which ends
# DeepSeek's prefill graphs on trtllm_mla and with them the whole-pool cast (prefill_graphs)
POOL_CAST_UNTIL = (0, 5, 13)
# the first release without server_args.py's guard that turned the prefill graphs off under the flashinfer_trtllm MoE
# runner ("TODO(yuwei): Fix piecewise cuda graph support for bypassed topk MoE backends", in
# _handle_moe_kernel_config; its startup line "Piecewise cuda graph is disabled for ..."): sgl-project/sglang issue
# #26715 bisects its removal to PR #23351 (merged 2026-05-22); PR #23906 put it back and PR #27841 (2026-06-10)
# removed it again, two days before PR #28053 ended DeepSeek's prefill graphs on trtllm_mla (prefill_graphs)
PREFILL_GRAPHS_MOE_GUARD_UNTIL = (0, 5, 13)
# the last release read that halves chunked_prefill_size under --enable-dp-attention (chunk_size; 0.4.1.post2,
# 0.4.2, 0.4.3.post2 all do), and the first that keeps the overlap scheduler on with it (overlap_schedule)
DP_CHUNK_HALVED_UNTIL = (0, 4, 3)
DP_OVERLAP_FROM = (0, 4, 2)
# the first release that keeps the overlap scheduler on with speculative decoding (EAGLE, EAGLE3, NEXTN, STANDALONE
# chains: "spec v2"): environ.py's SGLANG_ENABLE_SPEC_V2 defaults to True in 0.5.11 (sglang PR #21062, "Use spec v2 by
# default"), False in 0.5.9 and 0.5.10, whose server_args.py sets disable_overlap_schedule with speculation ("Overlap
# scheduler is disabled when spec v2 is off"; read in the wheels); NGRAM never keeps it ("The overlap scheduler and
# mixed chunked prefill are disabled because of using ngram speculative decoding", 0.5.11)
SPEC_OVERLAP_FROM = (0, 5, 11)
# ServerArgs.max_prefill_tokens' default: the prompt tokens one prefill batch takes (PrefillAdder's rem_input_tokens;
# the scheduler's log prints it), and the first release whose PrefillAdder.add_one_req applies it only without chunked
# prefill (0.5.13: with chunking the batch closes once its prompt tokens reach it, budget_state; 0.4.x to 0.5.12.post1,
# read in the wheels, close it at a prompt as long as what is left of it)
MAX_PREFILL_TOKENS = 16_384
PREFILL_CAP_TAKES_LAST_FROM = (0, 5, 13)
# new_token_ratio, the share of the running requests' remaining output PrefillAdder reserves:
# SGLANG_INIT_NEW_TOKEN_RATIO 0.7 x schedule_conservativeness (1.0; x 0.3 under --enable-dp-attention, server_args.py
# of 0.4.1 to 0.5.19), falling over SGLANG_NEW_TOKEN_RATIO_DECAY_STEPS (600) decode steps to
# SGLANG_MIN_NEW_TOKEN_RATIO_FACTOR (0.14) of it (global_config.py 0.3.5 to 0.4.x, environ.py 0.5.x); releases
# before MIN_RATIO_FACTOR_FROM (0.3.0 to 0.3.4.post2 read) fall by new_token_ratio_decay 0.001 a step to
# base_min_new_token_ratio 0.1 x schedule_conservativeness, from init_new_token_ratio 0.7 unscaled
# (global_config.py, managers/tp_worker.py): 600 steps from 0.7 to 0.1
NEW_TOKEN_RATIO = 0.7
MIN_NEW_TOKEN_RATIO_FACTOR = 0.14
EARLY_MIN_NEW_TOKEN_RATIO = 0.1
NEW_TOKEN_RATIO_DECAY_STEPS = 600
DP_CONSERVATIVENESS = 0.3
MIN_RATIO_FACTOR_FROM = (0, 3, 5)
# SGLang's ROCm rule (sgl-project/sglang, read in the PyPI wheels): where the attention backend is aiter and the
# context is above 8,192 tokens, mem_fraction_static is scaled by 0.85 (ModelRunner.model_specific_adjustment in
# model_executor/model_runner.py from 0.4.7, absent in 0.4.6.post5; ServerArgs._handle_attention_backend_compatibility
# in server_args.py by 0.5.12; arg_groups/attention_hook.py handle_attention_backend_compatibility in 0.5.19, which
# applies it to a value given on the command line too unless SGLANG_AITER_HONOR_EXPLICIT_MEM_FRACTION is set, default
# False). MLA models took aiter by default only without speculative decoding up to 0.5.2 (0.5.3 dropped the condition)
AITER_MEM_FRACTION_FROM = (0, 4, 7)
AITER_MLA_WITH_SPECULATION_FROM = (0, 5, 3)
AITER_MEM_FRACTION_SCALE = 0.85
AITER_LONG_CONTEXT = 8192
AITER_MLA_KV_HEADS = (16, 128)  # "current aiter only support head number 16 or 128"
ALL_REDUCE_FUSION_ARCHS = frozenset({"DeepseekV3ForCausalLM", "GptOssForCausalLM", "Glm4MoeForCausalLM",
                                     "Qwen3MoeForCausalLM"})


def overlap_schedule(s: Scenario) -> bool:
    """Whether SGLang (``s.engine_version``, default current) prepares the next batch while the GPU runs this one:
    from 0.4.0, but not under DP attention before 0.4.2 (0.4.1.post2 ``server_args.py``: "Overlap scheduler is
    disabled" with ``enable_dp_attention``; 0.4.2 dropped that line), nor with speculative decoding before
    :data:`SPEC_OVERLAP_FROM` or by n-gram."""
    version = version_tuple(s.engine_version or "0.5.3")
    speculating = s.speculative_method != "none" and (s.speculative_method == "ngram" or version < SPEC_OVERLAP_FROM)
    return version >= OVERLAP_FROM and not (s.attention_dp and version < DP_OVERLAP_FROM) and not speculating


def cell_bytes(s: Scenario, m: ModelSpec) -> float:
    """Bytes one token takes in the pool on one GPU: every layer's K and V (``kv_dims``) over the KV heads this
    GPU holds (``ModelConfig.get_num_kv_heads``: ``max(1, heads // tp)``, every head under attention data
    parallelism); MLA layers cache the latent and the rope dims whole on every GPU."""
    heads = m.num_kv_heads or 1
    per_gpu = max(1, heads // s.attention_tp) / heads
    return kv_dtype_bytes(s) * sum(layer.kv_dims * (1 if layer.attention == "mla" else per_gpu) for layer in m.layers)


def kv_tokens(available_gib: float, total_gib: float, mem_fraction_static: float, cell: float) -> int:
    """``profile_max_num_token``: the tokens the memory left after the weights holds once the reserve
    ``total x (1 - mem_fraction_static)`` is set aside (GiB as SGLang's log prints them)."""
    rest = available_gib - total_gib * (1 - mem_fraction_static)
    return max(int(rest * (1 << 30)) // int(cell), 0)


def aiter_scale(s: Scenario, m: ModelSpec, gpu: GpuSpec, context_len: int) -> float:
    """The factor SGLang applies to ``mem_fraction_static`` on ``gpu`` (:data:`AITER_MEM_FRACTION_SCALE` or 1):
    on ROCm from :data:`AITER_MEM_FRACTION_FROM`, where the default attention backend is aiter and the context
    (``--context-length``, else the model's; ``ModelConfig.context_len``) is above 8,192 tokens. The default backend
    on ROCm (``get_default_attn_backend``; ``ModelRunner.model_specific_adjustment`` before it) is aiter for every
    model without MLA, and for an MLA model whose KV heads per GPU (``get_num_kv_heads(tp_size)``: the config's
    ``num_key_value_heads`` over TP, 128 // 8 = 16 for DeepSeek-V3/R1 at TP 8) are 16 or 128, triton otherwise;
    before :data:`AITER_MLA_WITH_SPECULATION_FROM` an MLA model with speculative decoding took triton."""
    version = version_tuple(s.engine_version or "0.5.3")
    if gpu.vendor != "AMD" or version < AITER_MEM_FRACTION_FROM or context_len <= AITER_LONG_CONTEXT:
        return 1.0
    if any(layer.attention == "mla" for layer in m.layers):
        heads = max(1, (m.num_kv_heads or 1) // s.tp)
        speculating = s.speculative_method != "none" and version < AITER_MLA_WITH_SPECULATION_FROM
        if heads not in AITER_MLA_KV_HEADS or speculating:
            return 1.0
    return AITER_MEM_FRACTION_SCALE


def max_running_requests(tokens: int, context_len: int) -> int:
    """The default cap on running requests (``init_memory``): 512 per context-length of pool, 2,048-4,096."""
    return min(max(int(tokens / context_len * 512), 2048), 4096)


@dataclass(frozen=True, kw_only=True)
class Defaults:
    chunked_prefill_size: int
    cuda_graph_max_bs: int
    mem_fraction_static: float


def defaults(memory_mib: float, tp: int = 1, pp: int = 1, version: str | None = None,
             speculative: str = "none") -> Defaults:
    """The server defaults a card of ``memory_mib`` (what ``nvidia-smi`` reports) gets (see the module
    docstring; ``_handle_gpu_memory_settings``): with speculative decoding the reserve grows by 2 GiB for an EAGLE
    head or MTP layers and 6 GiB for a draft model ("eagle draft models and cuda graphs", "standalone draft model
    and cuda graphs"; none for n-gram), which holds the draft (:func:`draft_bytes`)."""
    gib = 1024
    if version_tuple(version or "0.5.3") < HEURISTIC_FROM:
        small = memory_mib < 25_000
        mfs = next((f for n, f in EARLY_MEM_FRACTION_BY_TP if tp >= n), oh.SGLANG_EARLY_MEM_FRACTION_STATIC)
        return Defaults(chunked_prefill_size=2048 if small else 8192, cuda_graph_max_bs=8 if small else 160,
                        mem_fraction_static=mfs)
    if memory_mib < 20 * gib:
        chunk, bs = 2048, 8
    elif memory_mib < 35 * gib:
        chunk, bs = 2048, (24 if tp < 4 else 80)
    elif memory_mib < 60 * gib:
        chunk, bs = 4096, (32 if tp < 4 else 160)
    elif memory_mib < 160 * gib:
        chunk, bs = 8192, (256 if tp < 4 else 512)
    else:
        chunk, bs = 16384, 512
    reserve = 512 + max(chunk, 2048) * 1.5 + bs * 2 + tp * pp / 8 * 1024
    if memory_mib > 60 * gib:
        reserve = max(reserve, 10 * gib)
    reserve += DRAFT_RESERVE_MIB.get(speculative, 0)
    return Defaults(chunked_prefill_size=chunk, cuda_graph_max_bs=bs,
                    mem_fraction_static=round((memory_mib - reserve) / memory_mib, 3))


def new_token_ratios(s: Scenario) -> tuple[float, float]:
    """``init_new_token_ratio`` and ``min_new_token_ratio`` of ``s``'s release (``Scheduler.__init__``, sgl-project/
    sglang ``python/sglang/srt/managers/scheduler.py``; ``tp_worker.py`` before 0.3.5): 0.7 x
    ``schedule_conservativeness`` falling to 0.14 of it, where ``--enable-dp-attention`` scales the conservativeness
    by 0.3 (``ServerArgs``); 0.7 falling to 0.1 before 0.3.5 (the constants above)."""
    if version_tuple(s.engine_version or "0.5.3") < MIN_RATIO_FACTOR_FROM:
        return NEW_TOKEN_RATIO, EARLY_MIN_NEW_TOKEN_RATIO
    init = NEW_TOKEN_RATIO * (DP_CONSERVATIVENESS if s.attention_dp else 1.0)
    return init, init * MIN_NEW_TOKEN_RATIO_FACTOR


def chunk_size(s: Scenario, d: Defaults) -> int:
    """``--chunked-prefill-size``: the card's default, or -1 (``ServerArgs``: "Setting this to -1 means disabling
    chunked prefill") when the scenario turns chunked prefill off. Under DP attention releases up to 0.4.3 halve it
    on every rank (``server_args.py`` ``ServerArgs.__post_init__`` of 0.4.3.post2: ``self.chunked_prefill_size =
    self.chunked_prefill_size // 2``, "to avoid MoE kernel issues": the MoE layers run the gathered tokens of every
    rank)."""
    if s.chunked_prefill is False:
        return -1
    halved = s.attention_dp and version_tuple(s.engine_version or "0.5.3") <= DP_CHUNK_HALVED_UNTIL
    return d.chunked_prefill_size // 2 if halved else d.chunked_prefill_size


@dataclass(frozen=True, kw_only=True)
class StartupMemory:
    """What one GPU's log prints at startup (GiB as SGLang prints "GB")."""

    total_gib: float  # "Load weight begin. avail mem"
    weights_gib: float  # "Load weight end. ... mem usage"
    available_gib: float  # "Load weight end. ... avail mem"
    mem_fraction_static: float  # --mem-fraction-static as given or defaulted (what a launch file passes)
    kv_tokens: int  # "KV Cache is allocated. #tokens" = max_total_num_tokens
    kv_pool_gib: float  # K size + V size
    chunked_prefill_size: int
    max_running_requests: int
    context_len: int
    cuda_graph_max_bs: int = 0
    mixed_chunk: bool = False  # --enable-mixed-chunk: prompt chunks share a step with the decodes
    card_gib: float = 0.0  # what the card holds in all (cudaMemGetInfo's total): the start-up's and SGLang's
    attention_ranks: int = 1  # DP attention ranks the figures above add up (:meth:`ranks`), each its own scheduler
    max_prefill_tokens: int = MAX_PREFILL_TOKENS  # the log's max_prefill_tokens (one rank's under DP attention)
    prefill_cap_takes_last: bool = False  # the release's rule for it (PREFILL_CAP_TAKES_LAST_FROM, scheduler_of)
    new_token_ratio: float = NEW_TOKEN_RATIO  # init_new_token_ratio and min_new_token_ratio (:func:`new_token_ratios`)
    min_new_token_ratio: float = NEW_TOKEN_RATIO * MIN_NEW_TOKEN_RATIO_FACTOR
    fraction_scale: float = 1.0  # SGLang's own factor on mem_fraction_static (:func:`aiter_scale`)

    @property
    def applied_fraction(self) -> float:
        """The ``mem_fraction_static`` SGLang sizes the pool with: the flag's times :attr:`fraction_scale`."""
        return self.mem_fraction_static * self.fraction_scale

    @property
    def reserve_gib(self) -> float:
        """What ``mem_fraction_static`` keeps back for activations, CUDA graphs and the ``req_to_token`` pool."""
        return self.total_gib * (1 - self.applied_fraction)

    def ranks(self, n: int) -> StartupMemory:
        """``n`` attention data-parallel ranks of one copy: the pools, running-request caps and chunk sizes add up
        (what the copy holds); each DP worker still schedules its own requests with one GPU's share
        (:func:`scheduler_of`, ``attention_ranks``)."""
        return replace(self, kv_tokens=self.kv_tokens * n, max_running_requests=self.max_running_requests * n,
                       chunked_prefill_size=self.chunked_prefill_size * n, attention_ranks=self.attention_ranks * n)

    def budget_gib(self, outside_gib: float) -> float:
        """The memory SGLang's allocator holds (weights, pool, reserve) beside ``outside_gib`` held outside it
        (CUDA context, NCCL): SGLang sizes its pool from what it finds free (``profile_max_num_token``), so the
        two never pass the card."""
        held = self.weights_gib + self.kv_pool_gib + self.reserve_gib
        return min(held, self.card_gib - outside_gib) if self.card_gib else held


def startup_memory(s: Scenario, m: ModelSpec, gpu: GpuSpec, *, mem_fraction_static: float | None = None,
                   total_gib: float | None = None) -> StartupMemory:
    """The pool SGLang (``s.engine_version``, default the 2025 heuristic) allocates for ``s`` on ``gpu``.
    ``total_gib``: the free memory at start if known (the log's first "avail mem"); else the card's
    ``cudaMemGetInfo`` total less the CUDA context and torch's start-up
    (:data:`~gpuplan.overheads.SGLANG_START_GIB`) and a desktop on the card (``s.display``)."""
    d = defaults(gpu.usable_gib * 1024, s.tp, s.pp, s.engine_version, s.speculative_method)
    mfs = mem_fraction_static or d.mem_fraction_static
    card = cuda_total_gib(gpu)
    total = total_gib if total_gib is not None else card - oh.SGLANG_START_GIB - desktop_gib(s, gpu.memory_gib)
    fmt, skip = weight_format(s, m)
    weights = weights_per_gpu(s, m, fmt, skip) / GIB + oh.SGLANG_LOAD_EXTRA_GIB
    available = total - weights
    cell = cell_bytes(s, m)
    context = SGLANG.context(s, m)
    scale = aiter_scale(s, m, gpu, context)
    tokens = kv_tokens(available, total, mfs * scale, cell)
    ratio, floor = new_token_ratios(s)
    running = max_running_requests(tokens, context)
    tokens += speculative_headroom(s, running)
    return StartupMemory(total_gib=total, weights_gib=weights, available_gib=available, mem_fraction_static=mfs,
                         kv_tokens=tokens, kv_pool_gib=tokens * cell / GIB, chunked_prefill_size=chunk_size(s, d),
                         max_running_requests=running, context_len=context,
                         cuda_graph_max_bs=d.cuda_graph_max_bs, card_gib=max(card, total),
                         new_token_ratio=ratio, min_new_token_ratio=floor, fraction_scale=scale,
                         prefill_cap_takes_last=version_tuple(s.engine_version or "0.5.3")
                         >= PREFILL_CAP_TAKES_LAST_FROM)


def speculative_headroom(s: Scenario, running: int) -> int:
    """Tokens SGLang adds to the profiled pool under speculative decoding (``ModelRunner.init_memory_pool``: "both
    verify and draft tokens can be concurrently allocated", ``draft_runner_cache_size = max_total_num_tokens +
    max_num_reqs x speculative_num_steps x speculative_eagle_topk + max_num_reqs x speculative_num_draft_tokens +
    100``, which the target's pool takes too), for gpuplan's chain of ``k`` steps, top-1, ``k + 1`` draft tokens."""
    if s.speculative_method == "none":
        return 0
    k = s.speculative_tokens
    return running * (k + k + 1) + 100


def draft_bytes(s: Scenario, m: ModelSpec, tokens: int) -> float:
    """What SGLang's draft worker holds on one GPU beside the target's pool, out of the reserve
    (:func:`defaults` grows it for that): the draft's weights (an EAGLE head, the MTP layers, a draft model:
    :mod:`.speculative`) and its own pool of the target's ``tokens`` (``draft_runner_cache_size``) at its layers'
    bytes a token. 0 without a draft model (n-gram, or no speculation)."""
    draft = speculative.draft_of(s, m, SGLANG)
    if draft is None or not draft.layers:
        return 0.0
    served = speculative.served_model(m, draft)  # in its own format: layers the checkpoint leaves unquantized kept
    weights = weights_per_gpu(s, served, *weight_format(s, served)) - weights_per_gpu(s, m, *weight_format(s, m))
    return weights + tokens * (cell_bytes(s, served) - cell_bytes(s, m))


# ---- the engine profile ----------------------------------------------------------------------------
def pool(s: Scenario, sm: StartupMemory) -> KvPool:
    """The pool of the startup memory ``sm`` (:func:`startup_memory` of ``s``): its ``max_total_num_tokens`` over
    the request's tokens, capped by ``max_running_requests``; the radix cache holds a shared prefix of ``c`` tokens
    once: ``(pool - c) // (tokens - c)`` requests, none where the pool is smaller than the prefix. ``kv_tokens`` is
    the pool."""
    tokens = s.prompt_tokens + s.output_tokens
    cached = SGLANG.cached_prefix_tokens(s)
    return KvPool(engine="sglang", pool_gib=sm.kv_pool_gib, request_tokens=tokens,
                  max_concurrency=min(max(sm.kv_tokens - cached, 0) // (tokens - cached), sm.max_running_requests)
                  if tokens else 0,
                  kv_tokens=sm.kv_tokens, logged_tokens=sm.kv_tokens, max_model_len=sm.context_len,
                  sim_blocks=sm.kv_tokens // oh.VLLM_BLOCK_TOKENS)


def derived_context_len(m: ModelSpec) -> int:
    """The context SGLang derives from a model's config, past which it refuses a ``--context-length`` without
    SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN (``get_context_length``, sgl-project/sglang
    ``python/sglang/srt/utils/hf_transformers_utils.py`` at 2aa2e2d0, read on the text config by
    ``ModelConfig._derive_context_length``, ``srt/configs/model_config.py`` at 001adf56): max_position_embeddings x
    the rope_scaling's ``factor``, unless the rope_scaling names ``original_max_position_embeddings`` (YaRN's and
    Llama 3's do) or its ``rope_type`` is llama3. Unlike vLLM (:func:`gpuplan.engines.vllm.derived_max_len`) it
    multiplies Gemma 3's linear factor: 131,072 x 8 = 1,048,576 (under transformers 4, whose Gemma 3 config keeps
    one rope_scaling; a transformers-5 config with one rope per layer kind has no top-level factor, 1), and keeps
    YaRN's max_position_embeddings. gpuplan's max_position_embeddings (``max_context``) stands for the first of its
    length keys."""
    rope = m.rope_scaling
    factor = rope.get("factor") or 1
    if "original_max_position_embeddings" in rope or rope.get("rope_type") == "llama3":
        factor = 1
    return int(factor * (m.max_context or 0))


# SGLang's start refuses a card below the method's get_min_capability (``model_loader/loader.py``
# ``_get_quantization_config``, 005cbe0e: "The quantization method ... is not supported for the current GPU.
# Minimum capability: ..."); ``srt/layers/quantization/``: ``fp8.py`` Fp8Config 80 (00563d36; 100 for MXFP8),
# ``mxfp4.py`` Mxfp4Config 80 (0043c43a), ``awq.py`` AWQConfig 75 (0149944f; AWQMarlinConfig's 80 is chosen only
# where Marlin runs), ``gptq.py`` GPTQConfig 60 (006d0961; GPTQMarlinConfig's 80 likewise), ``modelopt_quant.py``
# ModelOptFp4Config (``modelopt_fp4``, nvfp4 checkpoints) 80 since sgl-project/sglang#25655 ("add w4a16 moe support
# to nemotron": modelopt_fp4 checkpoints through Marlin W4A16 where native FP4 is absent, run on A100 and H100; its
# value is read from that run and from SGLang's check_marlin_supported floor of 8.0, quoted in #34327, not from the
# file, whose newest stored copy is older), :data:`EARLIER_CAPABILITY` before it
MIN_CAPABILITY = {"fp8": 80, "mxfp4": 80, "awq-int4": 75, "nvfp4": 80}
# A format's higher floors in the releases before some (as vLLM's :data:`~gpuplan.engines.vllm.EARLIER_CAPABILITY`):
# ModelOptFp4Config's 100 (faeb9685, "crash immediately on non-Blackwell GPUs because get_min_capability() returned
# 100", #19652's description). #19652 (Marlin from SM75, get_min_capability 75) merged on 2026-04-03 and was
# reverted at once (#22047, opened that day: "This reverts commit 991f3aa5"); its reland #22513 closed unmerged.
# #25655, opened 2026-05-18, merged after 0.5.12 (InferenceX ran v0.5.12 from 2026-05-17): 0.5.13 (2026-06-13) is
# the first release that may hold it, and is given it, so that only what a release surely refuses is refused
EARLIER_CAPABILITY = {"nvfp4": (((0, 5, 13), 100),)}
# the formats SGLang loads a plain checkpoint in (its --quantization; python/sglang/srt/server_args.py)
QUANTIZES = ("fp8", "awq-int4", "gptq-int4", "gptq-int8", "mxfp4", "nvfp4")  # nvfp4: modelopt_fp4 checkpoints
# how SGLang is timed, said in the plan's assumptions
TIMING = ("SGLang: GPU work timed as vLLM's (CUDA graphs, the same attention kernels), its own host loop "
          "(overlap scheduler from v0.4) and scheduler (prefill batches before decodes, chunked_prefill_size, "
          "max_running_requests, radix cache), fitted and checked on SGLang's published runs "
          "(bench/results/sglang_serving.md: Llama-3.1/3.3 8B-405B dense runs, and DeepSeek-R1 on 8 H200, "
          "B200, B300, MI300X or MI325X)")

POOL_CAST_NOTE = ("under its prefill CUDA graphs this release's trtllm_mla hands prompt steps of up to 2,048 tokens to "
                  "FlashInfer's paged MLA, which casts the whole fp8 KV pool to bf16 on every such step "
                  "({ms:,.0f} ms; PR #28053 turned it off after 0.5.12)")

ABSORBED_NOTE = ("this release prefills MLA prompts absorbed once its radix cache holds a prefix (the BOS token is "
                 "one): about 3.4x the attention FLOPs, timed at the fused-attention rate, a lower bound")


def applied_words(sm: StartupMemory) -> str:
    """What SGLang makes of the flag on ROCm (:func:`aiter_scale`), said after it ("" where it keeps it)."""
    if sm.fraction_scale == 1.0:
        return ""
    return (f" (x {sm.fraction_scale} = {sm.applied_fraction:.3f}: SGLang's aiter attention on ROCm above "
            f"{AITER_LONG_CONTEXT:,} tokens of context)")


def _engine_dict(s: Scenario, sm: StartupMemory) -> dict:
    """What SGLang's startup log prints, for the report."""
    return {"engine": "sglang", "version": s.engine_version or "0.5 (2025-10 reserve rule)",
            "mem_fraction_static": sm.mem_fraction_static, "max_total_num_tokens": sm.kv_tokens,
            "chunked_prefill_size": sm.chunked_prefill_size, "max_running_requests": sm.max_running_requests,
            "context_len": sm.context_len, "available_kv_cache_gib": sm.kv_pool_gib,
            "cuda_graph_max_bs": sm.cuda_graph_max_bs, "schedule_policy": SCHEDULE_POLICY,
            "mixed_chunk": sm.mixed_chunk, "radix_cache": True, "overlap_schedule": overlap_schedule(s)} | (
        {} if sm.fraction_scale == 1.0 else {"applied_mem_fraction_static": round(sm.applied_fraction, 4)})



def scheduler_of(sm: StartupMemory) -> dict:
    """The settings of SGLang's scheduler (:class:`gpuplan.serving.simulate.Scheduler`) over its startup memory ``sm``
    (:func:`startup_memory`): the token pool in one-token pages (``page_size`` 1, the default until 2026),
    ``chunked_prefill_size`` as a prefill batch's token budget (``PrefillAdder``: each admitted prompt takes its tokens
    out of ``rem_chunk_tokens``, a longer one is chunked and closes the batch) beside ``max_prefill_tokens`` (its
    ``rem_input_tokens``: up to 0.5.12 a prompt at least as long as what the batch leaves of it closes a batch that
    holds a prompt already; from 0.5.13, with chunking, the batch closes once its prompt tokens reach it,
    :class:`gpuplan.serving.simulate.Scheduler` ``prefill_cap_takes_last``), ``max_running_requests`` as the batch
    cap, and prefill first: ``Scheduler.get_next_batch_to_run`` runs a new prefill batch whenever one forms, else the
    decode batch, so a prompt's chunks stall the running decodes (mixing them needs ``--enable-mixed-chunk``, off by
    default). With ``--chunked-prefill-size -1`` the first prompt of a batch runs whole whatever its length (the
    budget here is the larger of ``max_prefill_tokens`` and the context length) and ``max_prefill_tokens`` admits the
    others.

    Under DP attention (``sm.attention_ranks`` > 1) these are one rank's: each DP worker is a scheduler of its own
    over its GPU's pool, chunk and request cap (``managers/data_parallel_controller.py``
    ``launch_dp_attention_schedulers``), fed round robin (``round_robin_scheduler``, the default
    ``load_balance_method``), and the ranks step together (:class:`gpuplan.serving.simulate.Scheduler`
    ``attention_ranks``). The admission reserve (``PrefillAdder.rem_total_tokens``) starts at ``new_token_ratio``
    and falls to ``min_new_token_ratio`` (:func:`new_token_ratios`) over 600 decode steps."""
    n = max(sm.attention_ranks, 1)
    chunked = sm.chunked_prefill_size > 0
    budget = sm.chunked_prefill_size // n if chunked else max(sm.max_prefill_tokens, sm.context_len)
    return dict(kv_blocks=sm.kv_tokens // n, block_tokens=1, max_num_seqs=sm.max_running_requests // n,
                max_num_batched_tokens=budget, chunked_prefill=chunked, mixed_prefill=sm.mixed_chunk,
                attention_ranks=n, max_prefill_tokens=sm.max_prefill_tokens,
                prefill_cap_takes_last=sm.prefill_cap_takes_last, reserve_ratio=sm.new_token_ratio,
                reserve_ratio_min=sm.min_new_token_ratio, reserve_decay_steps=NEW_TOKEN_RATIO_DECAY_STEPS)


class Sglang(Engine):
    """SGLang: a token pool from what the weights leave, keeping ``total x (1 - mem_fraction_static)`` for
    activations and CUDA graphs (module docstring, checked against public startup logs); a radix cache shared
    token by token; its GPU work timed as vLLM's current engine's, its host loop as its own."""

    name = "sglang"
    scheduler_words = ("From a simulation of SGLang's scheduler (prefill batches before decodes, chunked_prefill_size, "
                       "max_running_requests, the radix cache on the shared prefix; its host loop fitted on SGLang "
                       "0.3.0's own published runs and checked on the other releases': "
                       "bench/results/sglang_serving.md)")
    running_cap = "max_running_requests"
    rocm_build = True
    expert_parallel = True
    moe_dispatch_words = ("SGLang's default --moe-a2a-backend none: each GPU gathers the step's tokens and "
                          "reduce-scatters the experts' outputs")
    label = "SGLang"
    pool_words = "SGLang's token pool"
    preallocates = True
    advised_by_pool = True
    tensor_parallel_flag = "SGLang --tp"
    layer_split_words = "SGLang --pp-size"
    checks_request_length = True
    context_flag = "--context-length"
    long_context_env = "SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN"
    kv_dtypes = ("auto", "fp16", "bf16", "fp8")
    fp8_weight_only = True
    budget_fix = ("mem_fraction_static", 0.93, "--mem-fraction-static 0.93 (a larger SGLang pool)",
                  "same speed; less room for activations and CUDA graphs")
    launch_target = "sglang"
    cache_words = "radix cache"
    draft_in_pool = False  # its draft worker holds its own pool of the target's tokens (draft_bytes)
    # ServerArgs: "the draft model defaults to the same quantization as the target model" (speculative_draft_model_
    # quantization = quantization where not given); of its formats only fp8 quantizes 16-bit weights on load, the
    # others read a converted checkpoint (a 16-bit head has none: PR #28196, "Cannot find the config file for awq")
    draft_inherits = ("fp8",)
    no_chunked_prefill = None
    # python/sglang/srt/layers/deep_gemm_wrapper/configurer.py: ENABLE_JIT_DEEPGEMM from SGL_ENABLE_JIT_DEEPGEMM
    # (SGLANG_ENABLE_JIT_DEEPGEMM in later releases), as InferenceX's DeepSeek-R1 scripts set it
    deepgemm_switch = "SGL_ENABLE_JIT_DEEPGEMM=false"
    min_capability = MIN_CAPABILITY

    def least_capability(self, s: Scenario, fmt: str) -> int | None:
        """:data:`MIN_CAPABILITY`'s, or the higher floor of a release the scenario names before the one that lowered
        it (:data:`EARLIER_CAPABILITY`: nvfp4 before Marlin ran it)."""
        return floor_by_release(s, EARLIER_CAPABILITY.get(fmt, ())) or super().least_capability(s, fmt)

    def scheduler_settings(self, s: Scenario, startup: StartupMemory, pool: KvPool, longest: int) -> dict | None:
        """Its scheduler's (:func:`scheduler_of`) with the scenario's ``scheduler_recv_interval``; none when one
        request of ``longest`` tokens does not fit its token pool (one rank's, under DP attention)."""
        if startup.kv_tokens // max(startup.attention_ranks, 1) < longest:
            return None
        return scheduler_of(startup) | {"recv_interval": s.scheduler_recv_interval or 1}

    def model_context(self, m: ModelSpec) -> int:
        """The model's context as SGLang derives it (:func:`derived_context_len`)."""
        return derived_context_len(m)

    def refusal(self, s: Scenario, m: ModelSpec) -> str | None:
        if s.task == "infer" and s.kv_cache_dtype not in self.kv_dtypes:
            return f"SGLang's KV cache is 16-bit or fp8, not {s.kv_cache_dtype}: set kv_cache_dtype fp8 or auto"
        asked = self.quantizes_to(s, m)
        if asked is not None and asked not in QUANTIZES:
            return f"SGLang cannot quantize to {s.quant} on load: choose fp8, or an AWQ/GPTQ checkpoint"
        return None

    def card_refusal(self, s: Scenario, gpu: GpuSpec) -> str | None:
        """The base rule, and ``fp8_gemm_backend`` on a card without its kernel: SGLang's ``fp8_utils.py``
        ``_dispatch_explicit_backend`` raises at start for flashinfer_trtllm off SM 10.x ("requires SM100/SM103
        GPUs") and for deep_gemm where DeepGEMM does not run (SM 9.x / 10.x)."""
        why = super().card_refusal(s, gpu)
        if why or s.fp8_gemm_backend in (None, "auto"):
            return why
        major = gpu.sm_major
        if s.fp8_gemm_backend == "flashinfer_trtllm" and major != 10:
            return (f"SGLang's --fp8-gemm-backend flashinfer_trtllm runs on B200/B300-class cards (SM 10.x), not "
                    f"{gpu.name}: drop fp8_gemm_backend, or choose a B200 or B300")
        if s.fp8_gemm_backend == "deep_gemm" and major not in (9, 10):
            return (f"SGLang's --fp8-gemm-backend deep_gemm runs on Hopper and Blackwell data-center cards (SM 9.x / "
                    f"10.x), not {gpu.name}: drop fp8_gemm_backend")
        return None

    def memory(self, s: Scenario, m: ModelSpec, e: Estimate, fmt: Format, gpu: GpuSpec | None,
               capacity_gib: float | None) -> Estimate:
        """The weights, the token pool and the reserve SGLang keeps; without a GPU, the weights and the cache of
        ``batch_size`` requests."""
        e.peak_phase = "serving"
        tokens = s.prompt_tokens + s.output_tokens
        cell = cell_bytes(s, m)
        if gpu is None:
            e.kv_cache = s.batch_size * tokens * cell
            return e
        sm = startup_memory(s, m, gpu, mem_fraction_static=s.mem_fraction_static)
        e.weights, e.kv_cache = (sm.weights_gib - oh.SGLANG_LOAD_EXTRA_GIB) * GIB, sm.kv_pool_gib * GIB
        e.other["SGLang load overhead (beyond the weights)"] = oh.SGLANG_LOAD_EXTRA_GIB * GIB
        budget = sm.budget_gib(sum(device_overheads(s, gpu.generation, gpu.memory_gib).values()) / GIB)
        # weights beyond the card leave no reserve (the load fails), not a negative one
        reserve = max(budget - sm.weights_gib - sm.kv_pool_gib, 0.0) * GIB
        buffers = deepep.buffer_bytes(s, m)  # allocated after the pool, out of the reserve (engines/deepep.py)
        draft = draft_bytes(s, m, sm.kv_tokens)  # the draft worker's weights and pool, out of the reserve too
        e.other["SGLang reserve (activations, CUDA graphs)"] = max(reserve - buffers - draft, 0.0)
        e.preallocated = budget * GIB + max(buffers + draft - reserve, 0.0)
        if draft:
            e.other["SGLang draft worker (its weights and token pool)"] = draft
        if buffers:
            e.other[deepep.label(s)] = buffers
        if buffers + draft > reserve:
            e.warnings.append(f"{' and '.join(x for x, b in (('DeepEP buffers', buffers), ('the draft', draft)) if b)}"
                              f" ({(buffers + draft) / GIB:.2f} GiB) exceed what mem_fraction_static leaves beside "
                              f"the pool ({reserve / GIB:.2f} GiB): lower --mem-fraction-static")
        kv = pool(s, sm)
        e.extra.update(engine=_engine_dict(s, sm), kv_pool=kv, startup=sm)
        e.assumptions.append(
            f"SGLang: mem_fraction_static {sm.mem_fraction_static}{applied_words(sm)} of {sm.total_gib:.1f} GiB free "
            f"at start, pool of "
            f"{sm.kv_tokens:,} tokens at {cell:,.0f} B each, chunked_prefill_size {sm.chunked_prefill_size:,}, "
            f"max_running_requests {sm.max_running_requests:,}")
        if sm.kv_tokens < tokens:
            e.warnings.append(f"SGLang's token pool holds {sm.kv_tokens:,} tokens, less than one request of "
                              f"{tokens:,}: quantize the weights, use more GPUs (tp) or raise --mem-fraction-static")
        return e

    def cached_prefix_tokens(self, s: Scenario, m: ModelSpec | None = None) -> int:
        """The radix cache (on unless ``--disable-radix-cache``) matches token by token at its default
        ``page_size`` of 1: the whole prefix."""
        return s.shared_prefix_tokens

    def timing(self, s: Scenario, m: ModelSpec, gpu: GpuSpec) -> Timing:
        """The GPU's work as vLLM's current engine's (CUDA graphs, the same attention kernels); the host loop
        SGLang's own (constants fitted on SGLang's published runs, see
        :data:`gpuplan.overheads.SGLANG_STEP_OVERHEAD_S`). Decode batches past ``cuda_graph_max_bs`` run without
        CUDA graphs (``python/sglang/srt/model_executor/cuda_graph_runner.py`` ``CudaGraphRunner.can_run``:
        ``cuda_graph_bs <= self.max_bs``)."""
        d = defaults(gpu.usable_gib * 1024, s.tp, s.pp, s.engine_version)
        loop = HostLoop(step_s=oh.SGLANG_STEP_OVERHEAD_S, seq_s=oh.SGLANG_HOST_S_PER_SEQ,
                        request_s=oh.SGLANG_REQUEST_S, frontend_s=oh.SGLANG_FRONTEND_S,
                        frontend_token_s=oh.SGLANG_FRONTEND_TOKEN_S,
                        frontend_prompt_token_s=oh.TOKENIZE_S_PER_TOKEN, overlapped=overlap_schedule(s),
                        chunk_tokens=chunk_size(s, d) if s.chunked_prefill is not False else None,
                        all_reduce_s=oh.SGLANG_ALL_REDUCE_S)
        absorbed, graphs = absorbed_prefill(s, m), prefill_graphs(s, m, gpu, d)
        note = f"{TIMING}; {ABSORBED_NOTE}" if absorbed else TIMING
        if graphs.get("prefill_graph_s"):
            note += "; " + POOL_CAST_NOTE.format(ms=graphs["prefill_graph_s"] * 1e3)
        return current_timing(s, m, gpu, loop=loop, note=note, graph_max_batch=d.cuda_graph_max_bs,
                              launch_s=oh.SGLANG_EAGER_LAUNCH_S, label=self.label, rocm_measured=True,
                              **fused_kernels(s, m, gpu), **(absorbed | early_deepseek(s, m, gpu)),
                              **triton_mla_decode(s, m), **block_fp8_kernels(s, m, gpu, "sglang", named_version(s)),
                              **graphs)

    def packages(self, s: Scenario, version: str | None) -> list[str]:
        """SGLang's wheel (docs.sglang.io: ``pip install sglang``): the release asked (``--engine-version
        0.4.3.post2``), else at least 0.5, the release whose memory rules the estimate follows by default
        (:func:`version`)."""
        given = s.engine_version
        return [f"sglang=={given}" if given and re.fullmatch(r"\d+(\.\d+)*(\.post\d+)?", given) else "sglang>=0.5"]


def fused_kernels(s: Scenario, m: ModelSpec, gpu: GpuSpec) -> dict:
    """What SGLang 0.5 fuses (:class:`~gpuplan.engines.records.Timing` fields): its DeepSeek decode layer's own kernel
    count (:data:`gpuplan.overheads.SGLANG_MLA_MOE_KERNELS_PER_LAYER`; the same model code on ROCm, whose share of
    the datasheet is measured against it, :mod:`.rocm`), and on NVIDIA cards FlashInfer's all-reduce + residual
    add + RMSNorm as one kernel, which ``server_args.py`` turns on by default for the architectures in
    :data:`ALL_REDUCE_FUSION_ARCHS` on SM 9.x and 10.x at tensor parallelism on one node without attention data
    parallelism (InferenceX's B200 and B300 DeepSeek-R1 scripts also pass ``--enable-flashinfer-allreduce-fusion``).
    Each fused all-reduce is timed for any token count (SGLang falls back to the unfused one past ~1,024 tokens,
    in prefill chunks, where the latency is a small part)."""
    if version_tuple(s.engine_version) < FUSED_KERNELS_FROM:
        return {}
    major = gpu.sm_major
    fused = (m.architecture in ALL_REDUCE_FUSION_ARCHS and major in (9, 10) and s.tp > 1 and s.num_nodes == 1
             and not s.attention_dp and s.moe_dispatch != "deepep")
    kernels = oh.SGLANG_MLA_MOE_KERNELS_PER_LAYER + (0 if fused else 2) if deepseek_layers(m) else 0
    return {"fused_all_reduce": fused, "layer_kernels": kernels,
            "shared_experts_stream": shared_experts_stream(s, m, gpu)}


def shared_experts_stream(s: Scenario, m: ModelSpec, gpu: GpuSpec) -> bool:
    """Whether SGLang's decode graphs run a DeepSeek layer's shared experts beside its routed ones (0.5.12 wheel,
    read: ``models/deepseek_v2.py`` ``DeepseekV2MoE.forward`` takes ``forward_normal_dual_stream`` under CUDA-graph
    capture when ``num_fused_shared_experts == 0``: the shared experts on the current stream, the router, top-k and
    routed experts on ``alt_stream``, joined before the add; ``alt_stream`` exists on CUDA, on ROCm only with
    ``SGLANG_ROCM_USE_MULTI_STREAM``). The shared expert is fused into the routed kernel unless
    (``DeepseekV2ForCausalLM.determine_num_fused_shared_experts``, ``server_args.py``) experts are expert-parallel on
    CUDA, the checkpoint is not DeepSeek-V3's 256 routed and one shared expert, or the MoE runs FlashInfer's
    TRTLLM-Gen kernels (``--moe-runner-backend flashinfer_trtllm`` sets ``disable_shared_experts_fusion``; SGLang picks
    it by default for DeepSeek's fp8, NVFP4 and 16-bit checkpoints on SM 10.x, the release of
    :data:`~gpuplan.engines.block_fp8.SGLANG_SM100_TRTLLM_MOE_FROM` on). DeepEP's path runs its own overlap (not
    this). Timed from 0.5 (:data:`FUSED_KERNELS_FROM`, the releases whose DeepSeek layer is counted; PR #7978 of
    2025-07 already overlapped the gate with the shared experts). The step hides the shared experts' kernels' fixed time
    (:meth:`gpuplan.speed.inference.StepTimer._shared_experts_latency_s`); vLLM PR #26440 measured the same overlap
    for DeepSeek-R1 FP8 on 8 B200s (TRTLLM-Gen MoE, 32 sequences): TPOT 23.35 -> 22.09 ms."""
    version = named_version(s)
    if not deepseek_layers(m) or gpu.vendor != "NVIDIA" or s.moe_dispatch == "deepep" or (
            version is not None and version < FUSED_KERNELS_FROM):
        return False
    routed = [lin for layer in m.layers for lin in layer.linears if lin.group == "experts" and lin.count > 1]
    shared = [lin for layer in m.layers for lin in layer.linears if lin.group == "shared_experts"]
    fusable = (m.architecture == "DeepseekV3ForCausalLM" and routed and routed[0].count == 256
               and shared[0].out_features == routed[0].out_features)  # one shared expert of a routed one's size
    return s.ep > 1 or sm100_trtllm_moe(gpu.sm_major, version) or not fusable


def deepseek_layers(m: ModelSpec) -> bool:
    """Whether ``m`` has DeepSeek's decoder layer: MLA attention and MoE layers with shared experts."""
    return any(layer.attention == "mla" for layer in m.layers) and any(
        lin.group == "shared_experts" for layer in m.layers for lin in layer.linears)


def early_deepseek(s: Scenario, m: ModelSpec, gpu: GpuSpec) -> dict:
    """SGLang's first DeepSeek-V3 releases (0.4.1 to 0.4.3, ``s.engine_version`` named) as
    :class:`~gpuplan.engines.records.Timing` fields, beside :func:`absorbed_prefill`'s attention:

    - the fixed GPU time per MoE layer and decode step, fitted per vendor on the SGLang team's own
      ``bench_one_batch`` runs, one sequence on 8 H200s (0.4.1.post2) and 4 on 8 MI300Xs (0.4.3), where the model's
      forward alone ran 20 and 15 ms a step slower than gpuplan's bytes and kernel count
      (:data:`gpuplan.overheads.SGLANG_EARLY_DEEPSEEK_MOE_LAYER_S`: the small unfused kernels of that release's
      ``models/deepseek_v2.py``);
    - a prompt's GPU work other than attention (its block-FP8 GEMMs already at their Triton kernels' share,
      :func:`~gpuplan.engines.block_fp8.block_fp8_kernels`, on AMD the gfx942 share fitted on PR #3237's
      ``bench_one_batch`` prefill of 4 x 2,048 tokens on 8 MI300Xs) at
      :data:`~gpuplan.overheads.SGLANG_EARLY_PROMPT_SCALE` times gpuplan's on both vendors (fitted on SGLang PR
      #3550's FlashInfer-MLA run of a long-prompt workload on 8 H200s), and its attention
      (the triton extend kernel, those releases' default MLA backend on every card) at
      :data:`~gpuplan.overheads.SGLANG_EARLY_TRITON_PROMPT_ATTENTION` times gpuplan's absorbed figure, from PR
      #3550's triton run of the same workload (overheads.py)."""
    early = s.engine_version and version_tuple(s.engine_version) <= oh.SGLANG_EARLY_DEEPSEEK_UNTIL
    layer_s = oh.SGLANG_EARLY_DEEPSEEK_MOE_LAYER_S.get(gpu.vendor, 0.0)
    if not (early and layer_s and deepseek_layers(m)):
        return {}
    absorbed = absorbed_prefill(s, m).get("context_attention_speedup", 1.0)
    return {"expert_layer_s": layer_s, "prompt_scale": oh.SGLANG_EARLY_PROMPT_SCALE,
            "context_attention_speedup": absorbed / oh.SGLANG_EARLY_TRITON_PROMPT_ATTENTION}


# query heads one program of the triton MLA decode kernel takes (triton_ops/decode_attention.py
# decode_attention_fwd_grouped of 0.4.3.post2: BLOCK_H = 16)
TRITON_DECODE_BLOCK_H = 16


def triton_mla_decode(s: Scenario, m: ModelSpec) -> dict:
    """MLA decode as SGLang's triton backend runs it, the default up to 0.4.5 (a
    :class:`~gpuplan.engines.records.Timing` field): ``_decode_grouped_att_m_fwd`` launches a grid of (batch,
    ``cdiv(heads, BLOCK_H)``, KV splits) programs, each streaming the sequence's whole latent cache for its block of
    16 query heads (SGLang 0.4.3.post2 ``layers/attention/triton_ops/decode_attention.py``). At TP 8 a GPU holds 16
    of DeepSeek's 128 heads: one block, the cache read once; under DP attention every GPU holds all 128: 8 blocks,
    the cache streamed 8 times a step (an upper bound where a small batch's cache stays in L2)."""
    if not m.mla or version_tuple(s.engine_version) > ABSORBED_PREFILL_UNTIL:
        return {}
    blocks = -(-(m.num_heads // s.attention_tp) // TRITON_DECODE_BLOCK_H)
    return {"kv_reads": blocks} if blocks > 1 else {}


def prefill_graphs(s: Scenario, m: ModelSpec, gpu: GpuSpec, d: Defaults) -> dict:
    """SGLang's piecewise CUDA graphs for prompt steps (:class:`~gpuplan.engines.records.Timing` fields), on by default
    from 0.5.10 (:data:`PREFILL_GRAPHS_FROM`): a prompt step of up to :data:`PREFILL_GRAPH_MLA_TOKENS` tokens (MLA
    models; others up to the chunk) replays graph pieces instead of launching its kernels from Python. Turned off
    for expert parallelism, DP attention and pipeline parallelism (``server_args.py``
    ``_handle_piecewise_cuda_graph``), and before :data:`PREFILL_GRAPHS_MOE_GUARD_UNTIL` under the
    ``flashinfer_trtllm`` MoE runner, SGLang's pick for a block-fp8 DeepSeek on SM 10.x
    (:func:`~gpuplan.engines.block_fp8.sglang_trtllm_moe`; InferenceX's B200 and B300 FP8 runs pass it too); not timed
    on ROCm, whose default was not read.

    Under such a graph SGLang runs MLA absorbed (``attention_backend_handler.py``: ``AttnForwardMethod.MLA`` for a
    captured extend), and ``trtllm_mla``, the default for DeepseekV3ForCausalLM on SM 10.x, has no absorbed varlen
    kernel, so it hands the step to FlashInfer's paged MLA, which casts the layer's whole KV pool to the query's
    dtype: ``self.token_to_kv_pool.get_key_buffer(layer.layer_id).to(q.dtype)`` (SGLang PRs #32782, #35807:
    "a full materialization of the entire allocated KV pool, once per layer, per forward"). With an fp8 pool that is
    a copy of every layer's ``pool tokens x (kv_lora_rank + rope)`` elements whatever the prompt, priced at
    :data:`~gpuplan.overheads.SGLANG_POOL_CAST_BYTES_PER_ELEMENT` bytes each at the card's bandwidth; PR #28053
    ("DSR1 + trtllm_mla attention backend fallbacks ... under prefill cudagraphs, which regresses performance a
    lot", 2026-06-12) turned these graphs off for DeepSeek on ``trtllm_mla``, so releases from
    :data:`POOL_CAST_UNTIL` pay none; with the MoE guard before them, no release pays it for a block-fp8 DeepSeek
    under SGLang's own MoE pick (InferenceX PR #3175's B300 FP8 TP 8 EP 1 run of 0.5.12, one 1k-token request at a
    time: 70.9 ms TTFT, where a graphed step with the cast would take ~275 ms). (The absorbed attention's own extra
    FLOPs, ~3.4x a 2,048-token prompt's multi-head ones, are not timed.)"""
    version = version_tuple(s.engine_version or "0.5.3")
    if (version < PREFILL_GRAPHS_FROM or gpu.vendor != "NVIDIA" or s.ep > 1 or s.attention_dp or s.pp > 1
            or (version < PREFILL_GRAPHS_MOE_GUARD_UNTIL and sglang_trtllm_moe(s, m, gpu, version))):
        return {}
    mla = [layer for layer in m.layers if layer.attention == "mla"]
    tokens = PREFILL_GRAPH_MLA_TOKENS if mla else d.chunked_prefill_size
    sm10 = gpu.sm_major == 10
    if not (version < POOL_CAST_UNTIL and sm10 and m.architecture == "DeepseekV3ForCausalLM"
            and kv_dtype_bytes(s) == 1):
        return {"prefill_graph_tokens": tokens}
    pool_tokens = startup_memory(s, m, gpu, mem_fraction_static=s.mem_fraction_static).kv_tokens
    elements = pool_tokens * sum(layer.kv_dims for layer in mla)
    return {"prefill_graph_tokens": tokens,
            "prefill_graph_s": elements * oh.SGLANG_POOL_CAST_BYTES_PER_ELEMENT / (gpu.bandwidth_gbs * 1e9)}


def absorbed_prefill(s: Scenario, m: ModelSpec) -> dict:
    """MLA prompts as SGLang up to 0.4.5 prefills them (a :class:`~gpuplan.engines.records.Timing` field): absorbed,
    attending to the cached latent (``kv_lora_rank + rope`` wide scores, ``kv_lora_rank`` wide values per head),
    not as multi-head attention (``qk_nope + rope`` and ``v_head_dim``), for every prompt.

    - The default MLA backend is triton on every card (``model_runner.py`` ``ModelRunner.__init__``, 0.4.2.post4 and
      0.4.3.post2: "MLA optimization is turned on. Use triton backend"; ``model_specific_adjustment`` in 0.4.5).
    - Its prefill runs multi-head attention only while no prompt of the batch has a cached prefix
      (``models/deepseek_v2.py`` ``DeepseekV2AttentionMLA.forward``: ``forward_batch.extend_prefix_lens.sum() ==
      0``, else ``forward_absorb``; ``dispatch_attn_forward_method`` in 0.4.5; SGLang issue #5731: "It will only be
      used for prefill batches with no prefix cache").
    - The radix cache is on by default and matches token by token (``page_size`` 1), up to the prompt's length
      less one (``Req.adjust_max_prefix_ids``). DeepSeek's tokenizer starts every prompt with its BOS token
      (``add_bos_token``), and the server's own warm-up request (``entrypoints/http_server.py``
      ``_wait_and_warmup``: "The capital city of France is", once per DP rank) leaves it cached before any user's
      prompt arrives: every prompt has a cached prefix of at least one token.

    0.4.5.post3 and later default to FA3 on Hopper, which runs a cached prefix as multi-head attention in chunks
    (SGLang PR #5113, ``MHA_CHUNKED_KV``); later releases are timed as now. The absorbed kernel is timed at
    gpuplan's fused-attention rate for its FLOPs, ``(2 kv_lora_rank + rope) / (qk_nope + rope + v_head_dim)``
    times the multi-head ones (1,088 / 320 for DeepSeek-V3): the triton extend kernel's own rate on 576-wide heads
    (``triton_ops/extend_attention.py``: 32 x 64 tiles on SM 9.x, 64 x 64 on ROCm, one stage) is not published,
    so this is the least the absorbed prefill costs."""
    mla = m.mla
    if not mla or version_tuple(s.engine_version) > ABSORBED_PREFILL_UNTIL:
        return {}
    rope, latent = mla.get("qk_rope_head_dim") or 0, mla.get("kv_lora_rank") or 0
    multi_head = (mla.get("qk_nope_head_dim") or 0) + rope + (mla.get("v_head_dim") or 0)
    if not (multi_head and latent):
        return {}
    return {"context_attention_speedup": multi_head / (2 * latent + rope)}


SGLANG = Sglang()
