"""Peak GPU memory of inference: weights, the KV cache and the working set of prefill and decode, per engine.

transformers grows its cache per step; vLLM preallocates ``gpu_memory_utilization`` of the card
(formulas.md section 3) and SGLang a token pool from ``mem_fraction_static``; llama.cpp places as many layers
as fit and keeps the rest in system memory.
"""

from __future__ import annotations

import math

from .. import overheads as oh
from ..engines import llama_cpp, vllm
from ..hardware import GpuSpec
from ..model.spec import ModelSpec
from ..scenario import Scenario
from ..tensors import activations as act
from ..tensors.breakdown import GIB, Estimate, device_overheads
from ..tensors.kv import kv_bytes_per_sequence
from ..tensors.state import attention_kernel, weight_format
from .pool import sglang_pool, trtllm_pool, vllm_pool

# transformers runs every token through every expert in these families (Llama4TextMoe.forward repeats the hidden
# states for all experts and batch-multiplies them: transformers models/llama4/modeling_llama4.py), so its MoE
# working set is that of top-E routing; vLLM and llama.cpp route sparsely.
DENSE_DISPATCH_MOE = frozenset({"llama4", "llama4_text"})


def prefill_working_set(s: Scenario, m: ModelSpec, tokens: int, seqs: int) -> float:
    """Largest set of temporaries of one layer's forward without autograd, for ``tokens`` tokens at once:
    the MLP holds act(gate), up and their product (``3·i``) plus the residual and its norm (``2·h``); an expert
    layer the same for each of the ``k`` experts a token visits (under transformers, the families of
    :data:`DENSE_DISPATCH_MOE` hold, for every expert, a copy of the tokens, gate_up, act(gate) and their product:
    ``E·(4·i + h)``); eager attention holds the fp32 softmax of ``seqs·heads·s²`` scores, SDPA over a model with
    sliding windows in transformers the boolean window mask (``s²`` bytes) and its additive copy per sequence."""
    c = s.compute_bytes
    t = s.tp
    i = max((lin.in_features for layer in m.layers for lin in layer.linears
             if act.INPUT_OF.get(lin.name) == "mlp_mid" and lin.group != "experts"), default=0) / t
    mlp = c * tokens * (3 * i + 2 * m.hidden_size)
    if m.is_moe:
        i_e = max((lin.in_features for layer, _ in m.layer_kinds() for lin in layer.linears
                   if lin.group == "experts" and act.INPUT_OF.get(lin.name) == "mlp_mid"), default=0)
        h, E = m.hidden_size, m.num_experts
        if s.engine == "transformers" and m.family in DENSE_DISPATCH_MOE:
            # E copies of the tokens (routed_in) live with gate_up (2i), act(gate) and up*act(gate) per expert
            mlp = max(mlp, c * tokens * (E * (4 * i_e + h) + 2 * h) + 8 * tokens * E)
        else:
            mlp = max(mlp, c * tokens * m.experts_per_token * (3 * i_e + 2 * h) + 8 * tokens * E)
    heads = max(m.num_heads // t, 1)
    attn = c * tokens * (heads * m.head_dim * 3 + 2 * m.hidden_size) + 4 * tokens * m.hidden_size
    if s.engine == "transformers":  # Gated DeltaNet's reference implementation (overheads.py)
        values = max((lin.in_features for layer, _ in m.layer_kinds() if layer.attention == "linear"
                      for lin in layer.linears if lin.name == "out_proj"), default=0) / t
        attn = max(attn, 4 * tokens * oh.REFERENCE_DELTANET_FP32_COPIES * values)
    if attention_kernel(s, m) == "eager":
        seq = tokens // max(seqs, 1)
        attn += (4 + 2 * c) * seqs * heads * seq * seq
    elif s.engine == "transformers" and any(layer.window for layer in m.layers):
        # sliding-window layers under SDPA: transformers passes the pattern as an explicit boolean mask (1 x 1 x s x
        # s, built once per forward) and SDPA turns it into an additive mask in the compute dtype for every sequence
        # (torch.where) for the call: the simulation of Gemma-3-1B at 2 x 30,000 tokens holds both (0.84 + 3.35 GiB
        # at 8 layers), as the H200 probe measured (bench/gpu_probes.py record l)
        seq = tokens // max(seqs, 1)
        attn += seq * seq * (1 + c * seqs)
    return max(mlp, attn)


def _mask_segment(s: Scenario, m: ModelSpec) -> float:
    """Reserved bytes beyond the prefill's peak that the additive sliding-window mask leaves (transformers, SDPA):
    SDPA makes it for each sliding layer's call (``seqs x s²`` in the compute dtype, the largest block of the
    prefill) and frees it; the next layers' MLP temporaries are carved out of that cached block, so the next
    sliding layer's mask takes a new segment and the allocator holds two. The H200 probe of Gemma-3-1B at
    2 x 30,000 tokens (bench/data/gpu-measurements, record l) reserves 3.43 GiB above its allocated peak: one mask
    of 3.35 GiB."""
    if s.engine != "transformers" or attention_kernel(s, m) == "eager" or not any(layer.window for layer in m.layers):
        return 0.0
    return s.compute_bytes * s.batch_size * s.prompt_tokens ** 2


def inference_memory(s: Scenario, m: ModelSpec, capacity_gib: float | None, gpu: GpuSpec | None = None) -> Estimate:
    e = Estimate(slack=oh.ALLOCATOR_SLACK_INFER)
    if attention_kernel(s, m) != s.attention:
        e.assumptions.append(f"{m.family} runs eager attention in transformers (no SDPA support): the s x s "
                             "scores are materialized; attention flash (FlashAttention-2) avoids them")
    fmt, skip = weight_format(s, m)
    t, pp = s.tp, s.pp
    weights = sum(m.weight_bytes(fmt, skip=skip).values())
    e.weights = weights / (t * pp)
    layers = m.layers[: math.ceil(m.num_layers / pp)]
    tokens = s.prompt_tokens + s.output_tokens
    c = s.compute_bytes
    if fmt.name != "none":
        e.assumptions.append(f"weights stored as {fmt.name}; embeddings, lm_head and norms at {c} bytes")

    if s.engine == "vllm":
        return _vllm(s, m, e, gpu)
    if s.engine == "sglang":
        return _sglang(s, m, e, gpu)
    if s.engine == "trtllm":
        return _trtllm(s, m, e, gpu)
    if s.engine == "llama.cpp":
        return llama_cpp.llama_cpp_memory(s, m, e, fmt, capacity_gib)

    e.kv_cache = s.batch_size * kv_bytes_per_sequence(s, m, tokens, layers)
    prefill_tokens = s.batch_size * s.prompt_tokens
    work = prefill_working_set(s, m, prefill_tokens, s.batch_size)
    logits = s.batch_size * m.vocab_size * (c + 4) / t  # last position only (generate's logits_to_keep=1)
    # the prefill's keys and values of sliding / chunked layers stay whole until the first decode step: transformers'
    # DynamicSlidingWindowLayer keeps a view of the last ``window - 1`` tokens of the full tensor (cache_utils.py)
    prompt_kv = s.batch_size * kv_bytes_per_sequence(s, m, s.prompt_tokens, layers, windowed=False)
    prefill = prompt_kv + work + logits
    decode_work = prefill_working_set(s, m, s.batch_size, s.batch_size)
    decode = e.kv_cache + decode_work + logits + kv_bytes_per_sequence(s, m, tokens, layers[:1]) * s.batch_size
    e.phases = {"prefill": (e.weights + prefill) / GIB, "decode": (e.weights + decode) / GIB}
    # transformers grows each layer's cache with torch.cat every step: the freed, one-token-smaller blocks
    # cannot serve the next, larger request, so the caching allocator holds extra segments (reserved only)
    # (counted when the decode phase with those segments exceeds the allocated peak)
    fragmented = e.weights + decode + oh.KV_GROWTH_FRAGMENTATION * e.kv_cache
    e.fragmentation = max(0.0, fragmented - e.weights - max(prefill, decode))
    if prefill > decode:
        e.fragmentation = max(e.fragmentation, _mask_segment(s, m))
        e.peak_phase, e.kv_cache, e.activations = "prefill", prompt_kv, work + logits
    else:
        e.peak_phase, e.activations = "decode", decode - e.kv_cache
    return e


def _vllm(s: Scenario, m: ModelSpec, e: Estimate, gpu: GpuSpec | None) -> Estimate:
    """vLLM preallocates its budget and gives what the profiling run leaves to the KV cache, by the rules of
    the release named (:mod:`gpuplan.engines.vllm`). Without a GPU, the working set of one step and the KV cache of
    ``batch_size`` requests."""
    e.peak_phase = "serving"
    tokens = s.prompt_tokens + s.output_tokens
    if gpu is None:
        lim = vllm.scheduler_limits(s, m, None)
        stage = vllm.stages(m, s.pp)[0]
        fwd, sampler = vllm.profile_peak(vllm.rules(s), m, lim, stage, s.tp)
        e.activations = max(fwd, sampler)
        e.kv_cache = s.batch_size * kv_bytes_per_sequence(s, m, tokens, stage.layers)
        return e
    sm = vllm.startup_memory(s, m, gpu)
    e.weights, e.activations, e.kv_cache = sm.weights, sm.activation, sm.kv_pool
    e.other["non-torch (NCCL, workspaces)"] = sm.non_torch
    if sm.rules.cudagraphs_in_budget:
        e.other["CUDA graphs (estimate)"] = sm.cuda_graphs
    elif not s.enforce_eager:
        e.extra["outside"] = {"CUDA graphs": vllm.cudagraph_estimate(m, sm.limits, s.tp, gpu)}
    e.preallocated = sm.requested
    e.assumptions += sm.assumptions
    pool = vllm_pool(s, m, sm)
    e.extra["max_concurrency"] = pool.max_concurrency
    e.extra["max_context_tokens"] = pool.kv_tokens
    e.extra["kv_cache_pool_gib"] = sm.kv_pool / GIB
    e.extra["engine"] = {
        "engine": "vllm", "version": sm.rules.version, "max_num_batched_tokens": sm.limits.max_num_batched_tokens,
        "max_num_seqs": sm.limits.max_num_seqs, "max_model_len": sm.limits.max_model_len,
        "max_model_len_that_fits": sm.max_model_len_fit, "available_kv_cache_gib": sm.kv_pool / GIB,
        "kv_cache_tokens": sm.kv_tokens, "num_gpu_blocks": sm.num_blocks,
        "max_concurrency_at_max_model_len": round(sm.max_concurrency, 2), "requested_gib": sm.requested / GIB,
        "forward_peak_gib": sm.forward_peak / GIB, "sampler_peak_gib": sm.sampler_peak / GIB}
    if not sm.fits_max_model_len:
        fix = (f"set --max-model-len {sm.max_model_len_fit:,} or less" if sm.max_model_len_fit >= tokens else
               "the KV pool cannot hold one request of this length: use more GPUs (tp), quantization, or a "
               "shorter context")
        e.warnings.append(f"vLLM will refuse to start with max_model_len {sm.limits.max_model_len:,}: its KV pool "
                          f"holds {sm.kv_tokens:,} tokens, one request of up to {sm.max_model_len_fit:,}; {fix}")
    return e


def _sglang(s: Scenario, m: ModelSpec, e: Estimate, gpu: GpuSpec | None) -> Estimate:
    """SGLang sizes a token pool from what the weights leave, keeping ``total x (1 - mem_fraction_static)`` for
    activations and CUDA graphs (:mod:`gpuplan.engines.sglang`, checked against public startup logs). Without a GPU,
    the weights and the cache of ``batch_size`` requests."""
    from ..engines import sglang  # it reads this module's KV dtype

    e.peak_phase = "serving"
    tokens = s.prompt_tokens + s.output_tokens
    cell = sglang.cell_bytes(s, m)
    if gpu is None:
        e.kv_cache = s.batch_size * tokens * cell
        return e
    sm = sglang.startup_memory(s, m, gpu, mem_fraction_static=s.mem_fraction_static)
    e.weights, e.kv_cache = (sm.weights_gib - oh.SGLANG_LOAD_EXTRA_GIB) * GIB, sm.kv_pool_gib * GIB
    e.other["SGLang load overhead (beyond the weights)"] = oh.SGLANG_LOAD_EXTRA_GIB * GIB
    budget = sm.budget_gib(sum(device_overheads(s, gpu.generation, gpu.memory_gib).values()) / GIB)
    # weights beyond the card leave no reserve (the load fails), not a negative one
    e.other["SGLang reserve (activations, CUDA graphs)"] = max(budget - sm.weights_gib - sm.kv_pool_gib, 0.0) * GIB
    e.preallocated = budget * GIB
    pool = sglang_pool(s, sm)
    e.extra["max_concurrency"] = pool.max_concurrency
    e.extra["max_context_tokens"] = pool.kv_tokens
    e.extra["kv_cache_pool_gib"] = sm.kv_pool_gib
    e.extra["engine"] = {
        "engine": "sglang", "version": s.engine_version or "0.5 (2025-10 reserve rule)",
        "mem_fraction_static": sm.mem_fraction_static, "max_total_num_tokens": sm.kv_tokens,
        "chunked_prefill_size": sm.chunked_prefill_size, "max_running_requests": sm.max_running_requests,
        "context_len": sm.context_len, "available_kv_cache_gib": sm.kv_pool_gib,
        "cuda_graph_max_bs": sm.cuda_graph_max_bs, "schedule_policy": sglang.SCHEDULE_POLICY,
        "mixed_chunk": sm.mixed_chunk, "radix_cache": True, "overlap_schedule": sglang.overlap_schedule(s)}
    e.assumptions.append(
        f"SGLang: mem_fraction_static {sm.mem_fraction_static} of {sm.total_gib:.1f} GiB free at start, pool of "
        f"{sm.kv_tokens:,} tokens at {cell:,.0f} B each, chunked_prefill_size {sm.chunked_prefill_size:,}, "
        f"max_running_requests {sm.max_running_requests:,}")
    if sm.kv_tokens < tokens:
        e.warnings.append(f"SGLang's token pool holds {sm.kv_tokens:,} tokens, less than one request of {tokens:,}: "
                          "quantize the weights, use more GPUs (tp) or raise --mem-fraction-static")
    return e


def _trtllm(s: Scenario, m: ModelSpec, e: Estimate, gpu: GpuSpec | None) -> Estimate:
    """TensorRT-LLM gives ``free_gpu_memory_fraction`` of what the weights and its profiling forward leave to paged
    KV blocks (:mod:`gpuplan.engines.trtllm`). Without a GPU, the weights and the cache of ``batch_size``
    requests."""
    from ..engines import trtllm

    e.peak_phase = "serving"
    tokens = s.prompt_tokens + s.output_tokens
    if gpu is None:
        e.kv_cache = s.batch_size * kv_bytes_per_sequence(s, m, tokens, m.layers[:math.ceil(m.num_layers / s.pp)])
        return e
    sm = trtllm.startup_memory(s, m, gpu, trtllm.activation(s, m))
    e.weights, e.activations, e.kv_cache = sm.weights, sm.activation, sm.kv_pool
    e.other["TensorRT-LLM reserve (1 - free_gpu_memory_fraction: CUDA graphs, runtime buffers)"] = \
        sm.free - sm.kv_pool
    e.preallocated = sm.weights + sm.activation + sm.free
    pool = trtllm_pool(s, sm)
    e.extra["max_concurrency"] = pool.max_concurrency
    e.extra["max_context_tokens"] = pool.kv_tokens
    e.extra["kv_cache_pool_gib"] = sm.kv_pool / GIB
    e.extra["engine"] = {
        "engine": "trtllm", "free_gpu_memory_fraction": sm.fraction, "tokens_per_block": sm.tokens_per_block,
        "max_batch_size": sm.max_batch_size, "max_num_tokens": sm.max_num_tokens, "max_seq_len": sm.max_seq_len,
        "num_blocks": sm.num_blocks, "kv_cache_tokens": sm.kv_tokens, "available_kv_cache_gib": sm.kv_pool / GIB}
    e.assumptions.append(
        f"TensorRT-LLM: {sm.fraction} of the {sm.free / GIB:.1f} GiB free after the weights and a "
        f"{sm.max_num_tokens:,}-token profiling forward: {sm.num_blocks:,} KV blocks of {sm.tokens_per_block} "
        f"tokens ({sm.kv_tokens:,} tokens), max_batch_size {sm.max_batch_size:,}")
    if sm.kv_tokens < tokens:
        e.warnings.append(f"TensorRT-LLM's KV cache holds {sm.kv_tokens:,} tokens, less than one request of "
                          f"{tokens:,}: quantize (fp8, nvfp4), use more GPUs (tp) or an fp8 KV cache")
    return e
