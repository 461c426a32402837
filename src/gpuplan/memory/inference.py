"""Peak GPU memory of inference: the weights split over the GPUs, then what the serving engine holds beside them.

Each engine's allocation (transformers' growing cache, vLLM's preallocated budget, SGLang's token pool, llama.cpp's
layer split, TensorRT-LLM's paged blocks) is its profile's (:mod:`gpuplan.engines`).
"""

from __future__ import annotations

import dataclasses
import math

from .. import overheads as oh
from ..engines import engine_for, speculative
from ..hardware import GpuSpec
from ..model.spec import ModelSpec
from ..scenario import Scenario
from ..tensors.breakdown import Estimate
from ..tensors.layout import weights_per_gpu
from ..tensors.state import weight_format


def inference_memory(s: Scenario, m: ModelSpec, capacity_gib: float | None, gpu: GpuSpec | None = None) -> Estimate:
    """The weights in their storage format over ``tp x pp`` GPUs, completed by the engine's profile. With speculative
    decoding the engine holds the draft's layers and their KV cache beside the model's in its one pool
    (:func:`gpuplan.engines.speculative.served_model`), or apart where its profile says so
    (:attr:`~gpuplan.engines.base.Engine.draft_in_pool`: SGLang)."""
    e = Estimate(slack=oh.ALLOCATOR_SLACK_INFER)
    engine = engine_for(s)
    draft = speculative.draft_of(s, m, engine)
    if engine.draft_in_pool:
        m = speculative.served_model(m, draft)
    e.assumptions += engine.attention_notes(s, m)
    fmt, skip = weight_format(s, m)
    e.weights = weights_per_gpu(s, m, fmt, skip)
    if fmt.name != "none":
        kept = "norms" if fmt.name.startswith("mlx-") else "embeddings, lm_head and norms"
        e.assumptions.append(f"weights stored as {fmt.name}; {kept} at {s.compute_bytes} bytes")
    e = engine.memory(s, m, e, fmt, gpu, capacity_gib)
    if draft is not None:
        e.assumptions.append(draft_words(draft))
    return attention_ranks(s, e) if s.attention_ranks > 1 else e


def attention_ranks(s: Scenario, e: Estimate) -> Estimate:
    """Under attention data parallelism each of the copy's ``tp`` GPUs is a rank with its own requests and its own
    KV pool (:mod:`gpuplan.tensors.layout`; SGLang's DP scheduler spreads requests over the ranks): the copy
    holds ``ranks`` times the requests of one GPU's pool, and a batch puts ``ceil(batch / ranks)`` of its
    requests' cache on each GPU."""
    ranks = s.attention_ranks
    kv = e.extra.get("kv_pool")
    if kv is None:  # the cache the batch needs, on one GPU
        e.kv_cache *= math.ceil(s.batch_size / ranks) / s.batch_size
    else:
        e.extra["kv_pool"] = dataclasses.replace(kv, max_concurrency=kv.max_concurrency * ranks,
                                                 kv_tokens=kv.kv_tokens * ranks, sim_blocks=kv.sim_blocks * ranks)
        if e.extra.get("startup") is not None:
            e.extra["startup"] = e.extra["startup"].ranks(ranks)  # each engine's ranks as one scheduler
    e.assumptions.append(f"attention data parallel over {ranks} GPUs: each runs attention whole for its own "
                         f"requests and holds their KV cache (every KV head), so the copy serves {ranks} x one "
                         "GPU's pool; attention weights whole on every GPU")
    return e


def draft_words(draft: speculative.Draft) -> str:
    """What the engine holds for its speculative decoding, in words."""
    held = {"ngram": "no draft weights or KV cache (prompt lookup on the CPU)",
            "mtp": f"the checkpoint's {len(draft.layers)} MTP layer(s) and their KV cache",
            "draft": f"the draft model's {len(draft.layers)} layers, embeddings and head, and its KV cache"}
    return (f"speculative decoding ({draft.method}, {draft.tokens} tokens a step): "
            + held.get(draft.method, "one EAGLE head layer of the model's shape"
                       + (" and its own lm_head" if draft.own_params else "") + ", and its KV cache"))
