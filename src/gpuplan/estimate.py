"""``estimate(scenario) -> Result``: validate, estimate memory per GPU, say what fits and what would.

The result is the one output of design.md: the scenario as normalized, model facts, the memory breakdown
with three peak levels, and, when it does not fit, each single change that would (with its new peak).
"""

from __future__ import annotations

import math
from typing import Any

from pydantic import BaseModel

from . import memory
from .catalog import load_model
from .errors import GpuplanError
from .hardware import GpuSpec, load_gpu
from .model import ModelSpec
from .scenario import Scenario, scenario_from

GIB = 2**30


class MemoryReport(BaseModel):
    weights_gib: float
    gradients_gib: float
    optimizer_gib: float
    activations_gib: float
    kv_cache_gib: float
    other_gib: float
    other: dict[str, float]
    allocated_peak_gib: float
    reserved_peak_gib: float
    device_peak_gib: float
    device_overheads: dict[str, float]
    capacity_gib: float | None = None
    fits: bool | None = None
    headroom_gib: float | None = None
    peak_phase: str
    phases_gib: dict[str, float]
    cpu_gib: float = 0.0
    max_batch_size: int | None = None
    max_seq_len: int | None = None
    max_concurrency: int | None = None
    max_context_tokens: int | None = None
    kv_cache_pool_gib: float | None = None
    gpu_layers: int | None = None
    offloaded_layers: int | None = None


class ModelFacts(BaseModel):
    name: str
    family: str
    params_total: int
    params_active: int
    params_trainable: int
    num_layers: int
    hidden_size: int
    num_kv_heads: int
    head_dim: int
    vocab_size: int
    layer_kinds: dict[str, int]


class Suggestion(BaseModel):
    change: str
    fields: dict[str, Any]
    device_peak_gib: float
    fits: bool | None
    cost: str


class Result(BaseModel):
    scenario: dict[str, Any]
    model: ModelFacts
    gpu: dict[str, Any] | None
    memory: MemoryReport
    suggestions: list[Suggestion] = []
    speed: dict[str, Any] | None = None
    cost: dict[str, Any] | None = None
    assumptions: list[str] = []
    warnings: list[str] = []


def check(s: Scenario, m: ModelSpec, gpu: GpuSpec | None) -> list[str]:
    """Combinations that cannot run raise :class:`GpuplanError` (one sentence: what, and the fix); doubtful
    ones return warnings."""
    warnings: list[str] = []
    if s.task == "train" and s.method == "qlora":
        if s.precision in ("fp32", "fp8-mixed"):
            raise GpuplanError(f"precision {s.precision!r} does not work with QLoRA: its 4-bit base computes in "
                               "bf16 or fp16; set precision to bf16-mixed (or fp16-mixed on GPUs without bf16)")
        if s.quant not in (None, "nf4", "fp4", "gptq-int4", "awq-int4"):
            raise GpuplanError(f"QLoRA trains adapters on a 4-bit base (nf4, fp4, gptq-int4 or awq-int4), not "
                               f"{s.quant!r}: set quant to nf4 or drop it")
    if s.world_size % (s.tp * s.pp):
        raise GpuplanError(f"tp x pp = {s.tp * s.pp} must divide the {s.world_size} GPUs (num_gpus x num_nodes)")
    strategy = s.resolved_strategy
    if s.task == "train" and strategy != "single" and s.dp == 1:
        raise GpuplanError(f"strategy {s.strategy!r} shards or replicates over data-parallel GPUs, but there is "
                           "one: set num_gpus >= 2, or use strategy single (with offload to save memory)")
    if s.task == "train" and strategy == "single" and s.dp > 1:
        raise GpuplanError(f"strategy 'single' uses one GPU but the scenario has {s.dp} data-parallel GPUs: "
                           "choose ddp, zero1, zero2, zero3 or fsdp")
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
    if s.offload != "none" and s.task == "infer":
        raise GpuplanError("offload applies to training states; for inference use quant or a llama.cpp engine")
    if s.offload == "optimizer+params" and strategy != "zero3":
        raise GpuplanError("offloading parameters needs ZeRO-3 (strategy zero3 or fsdp) to fetch them layer by "
                           "layer; use offload optimizer, or strategy zero3")
    if s.engine != "transformers" and s.task == "train":
        raise GpuplanError(f"engine {s.engine!r} serves models; training runs on transformers (drop engine)")
    if s.engine == "llama.cpp" and s.quant and not s.quant.startswith("gguf-") and s.quant != "none":
        raise GpuplanError(f"llama.cpp runs GGUF files: set quant to a gguf type (gguf-q4_k_m, gguf-q8_0...), "
                           f"not {s.quant!r}")
    if gpu is not None:
        _check_gpu(s, m, gpu)
    tokens = s.seq_len if s.task == "train" else s.prompt_tokens + s.output_tokens
    if m.max_context and tokens > m.max_context:
        warnings.append(f"{tokens:,} tokens exceed {m.name}'s max_position_embeddings {m.max_context:,}: quality "
                        "degrades unless the context is extended (RoPE scaling)")
    return warnings


def _check_gpu(s: Scenario, m: ModelSpec, gpu: GpuSpec) -> None:
    dtype = s.precision.split("-")[0]
    if dtype in ("bf16", "fp8") and not gpu.supports_dtype(dtype):
        fix = "fp16-mixed" if dtype == "bf16" else "bf16-mixed"
        raise GpuplanError(f"{gpu.name} has no {dtype} tensor cores ({gpu.architecture}): set precision {fix}")
    if s.kv_cache_dtype == "bf16" and not gpu.supports_dtype("bf16"):
        raise GpuplanError(f"{gpu.name} has no bf16: set kv_cache_dtype fp16")
    if s.quant == "fp8" and s.engine == "transformers" and not gpu.supports_dtype("fp8"):
        raise GpuplanError(f"{gpu.name} ({gpu.architecture}) has no fp8 tensor cores: choose int8, a 4-bit quant, "
                           "or engine vllm (weight-only fp8)")
    if s.precision.startswith("bf16") and s.task == "infer" and not gpu.supports_dtype("bf16"):
        raise GpuplanError(f"{gpu.name} has no bf16: set precision fp16-true for inference")


def _model_facts(m: ModelSpec, trainable: int) -> ModelFacts:
    kinds: dict[str, int] = {}
    for layer, count in m.layer_kinds():
        kinds[layer.kind] = kinds.get(layer.kind, 0) + count
    return ModelFacts(name=m.name, family=m.family, params_total=m.params_total, params_active=m.params_active,
                      params_trainable=trainable, num_layers=m.num_layers, hidden_size=m.hidden_size,
                      num_kv_heads=m.num_kv_heads, head_dim=m.head_dim, vocab_size=m.vocab_size, layer_kinds=kinds)


def _memory(s: Scenario, m: ModelSpec, gpu: GpuSpec | None) -> tuple[memory.Estimate, MemoryReport]:
    capacity = gpu.usable_gib if gpu else None
    e = memory.training(s, m) if s.task == "train" else memory.inference(s, m, capacity)
    e.outside_allocator = memory.device_overheads(s, gpu.generation if gpu else None)
    other = {k: v / GIB for k, v in e.other.items()}
    device = e.device / GIB
    report = MemoryReport(
        weights_gib=e.weights / GIB, gradients_gib=e.gradients / GIB, optimizer_gib=e.optimizer / GIB,
        activations_gib=e.activations / GIB, kv_cache_gib=e.kv_cache / GIB, other_gib=sum(other.values()),
        other=other, allocated_peak_gib=e.allocated / GIB, reserved_peak_gib=e.reserved / GIB,
        device_peak_gib=device, device_overheads={k: v / GIB for k, v in e.outside_allocator.items()},
        capacity_gib=capacity, peak_phase=e.peak_phase, phases_gib=e.phases, cpu_gib=e.cpu / GIB,
        max_concurrency=e.extra.get("max_concurrency"), max_context_tokens=e.extra.get("max_context_tokens"),
        kv_cache_pool_gib=e.extra.get("kv_cache_pool_gib"), gpu_layers=e.extra.get("gpu_layers"),
        offloaded_layers=e.extra.get("offloaded_layers"))
    if capacity is not None:
        report.fits = _fits(s, e, report, capacity)
        report.headroom_gib = capacity - device
    return e, report


def _fits(s: Scenario, e: memory.Estimate, r: MemoryReport, capacity: float) -> bool:
    if s.engine == "vllm":
        return (r.max_concurrency or 0) >= s.batch_size
    if s.engine == "llama.cpp":
        return r.offloaded_layers == 0
    return r.device_peak_gib <= capacity


def estimate(scenario: Scenario | dict[str, Any], *, advise: bool = True) -> Result:
    """Estimate memory for a scenario. ``advise`` adds solvers and fixes (they re-run the estimate)."""
    s = scenario_from(scenario)
    m = load_model(s.model)
    gpu = load_gpu(s.gpu) if s.gpu else None
    warnings = check(s, m, gpu)
    e, report = _memory(s, m, gpu)
    result = Result(scenario=_normalized(s), model=_model_facts(m, int(e.extra.get("params_trainable", 0))),
                    gpu=_gpu_facts(gpu), memory=report, assumptions=e.assumptions, warnings=warnings)
    if gpu and advise:
        from .advice import largest_fitting, suggestions

        report.max_batch_size, report.max_seq_len = largest_fitting(s, m, gpu)
        if not report.fits:
            result.suggestions = suggestions(s, m, gpu, report)
    if gpu and gpu.peak_tflops("fp16"):
        _speed_and_cost(result, s, m, gpu, int(e.extra.get("params_trainable", 0)))
    return result


def _speed_and_cost(result: Result, s: Scenario, m: ModelSpec, gpu: GpuSpec, trainable: int) -> None:
    """Cost on the matching offer with the lowest $ per million tokens (the order ``recommend`` ranks by), and
    speed on that offer's interconnect; without an offer, speed with the GPU's own links."""
    from dataclasses import asdict

    from .offers import load_offers
    from .pricing import matching, price
    from .speed import speed_of

    offers = load_offers()
    candidates = matching(offers, s, gpu.id)
    costs = sorted(((price(s, m, o, trainable, offers), o) for o in candidates),
                   key=lambda pair: pair[0].usd_per_million_tokens)
    speed = speed_of(s, m, gpu, costs[0][1].intra_node if costs else "")  # the interconnect of the offer priced
    result.speed = {k: v for k, v in asdict(speed).items() if k != "assumptions"}
    result.assumptions += speed.assumptions
    if not costs:
        if s.provider or s.pricing != "on_demand":
            result.warnings.append(f"no {s.pricing.replace('_', '-')} offer for {gpu.id}"
                                   + (f" at {s.provider}" if s.provider else "") + " in the price catalog")
        return
    best = costs[0][0]
    result.cost = asdict(best)
    if best.stale:
        result.warnings.append(f"the price of {best.offer} is {best.price_age_days} days old")


def fits_only(s: Scenario, m: ModelSpec, gpu: GpuSpec) -> tuple[bool, float]:
    """Whether ``s`` fits on ``gpu`` and its device peak in GiB, skipping solvers (for search loops)."""
    try:
        check(s, m, gpu)
    except GpuplanError:
        return False, math.inf
    _, report = _memory(s, m, gpu)
    return bool(report.fits), report.device_peak_gib


def _normalized(s: Scenario) -> dict[str, Any]:
    data = s.model_dump()
    data["strategy"] = s.resolved_strategy
    if s.task == "infer":
        for key in ("method", "optimizer", "optimizer_impl", "lora_rank", "lora_targets", "lora_dropout",
                    "micro_batch_size", "seq_len", "grad_accum_steps", "grad_checkpointing", "train_tokens"):
            data.pop(key, None)
    else:
        for key in ("batch_size", "prompt_tokens", "output_tokens", "kv_cache_dtype", "engine",
                    "gpu_memory_utilization", "max_num_batched_tokens"):
            data.pop(key, None)
    return data


def _gpu_facts(gpu: GpuSpec | None) -> dict[str, Any] | None:
    if gpu is None:
        return None
    return {"id": gpu.id, "name": gpu.name, "memory_gib": gpu.memory_gib, "usable_gib": gpu.usable_gib,
            "architecture": gpu.architecture}
