"""The memory report of a scenario on a GPU: the peak per GPU at three levels, and whether it fits the card (by the
engine's own rule: vLLM by its KV pool, llama.cpp by the layers it places).

What cannot run at all is :mod:`gpuplan.plan.refusals`'s to say, before this is asked.
"""

from __future__ import annotations

from ..datafiles import made
from ..engines import engine_for
from ..hardware import GpuSpec
from ..model.spec import ModelSpec
from ..result import MemoryReport
from ..scenario import Scenario
from ..tensors.breakdown import GIB, Estimate, device_overheads
from .host import host_shortfall
from .training import training_memory


def memory_report(s: Scenario, m: ModelSpec, gpu: GpuSpec | None) -> tuple[Estimate, MemoryReport]:
    """The estimate of ``s`` per GPU (training or serving) and its report on ``gpu`` (capacity, fit, headroom)."""
    e = estimate_memory(s, m, gpu)
    return e, report_of(s, e, gpu)


def estimate_memory(s: Scenario, m: ModelSpec, gpu: GpuSpec | None) -> Estimate:
    """The estimate of ``s`` per GPU (training or serving) on ``gpu``, unreported: a search estimates a layout once
    without a card and reports it on each card (:func:`report_of`)."""
    capacity = gpu.usable_gib if gpu else None
    outside = device_overheads(s, gpu.generation if gpu else None, gpu.memory_gib if gpu else None)
    if s.task == "train":
        metal = gpu is not None and gpu.vendor == "Apple"
        e = training_memory(s, m, capacity, sum(outside.values()) / GIB, cuda=not metal, gpu=gpu)
    else:
        from .inference import inference_memory  # loaded by the first serving plan: a training plan never asks

        e = inference_memory(s, m, capacity, gpu)
    e.outside_allocator = {**outside, **e.extra.get("outside", {})}
    return e


def _outside(s: Scenario, e: Estimate, gpu: GpuSpec | None) -> dict[str, float]:
    """Bytes outside the allocator on ``gpu``: the card's (CUDA context, NCCL, a desktop) and the engine's own."""
    card = device_overheads(s, gpu.generation if gpu else None, gpu.memory_gib if gpu else None)
    return {**card, **e.extra.get("outside", {})}


def device_gib(s: Scenario, e: Estimate, gpu: GpuSpec | None) -> float:
    """The device level of the estimate ``e`` on ``gpu`` (what :func:`report_of` reports as the device peak),
    alone: a search compares it with every card before it writes a report."""
    return (e.reserved + sum(e.managed.values()) + sum(_outside(s, e, gpu).values())) / GIB


def report_of(s: Scenario, e: Estimate, gpu: GpuSpec | None) -> MemoryReport:
    """The report of the estimate ``e`` of ``s`` on ``gpu``: its parts at three levels, the device level with the
    card's own memory outside the allocator (CUDA context, NCCL), and whether it fits by the engine's rule. ``e``
    is left as it is: a search compares one layout's estimate with every card (when its memory does not depend on
    the card)."""
    capacity = gpu.usable_gib if gpu else None
    outside = _outside(s, e, gpu)
    other = {k: v / GIB for k, v in e.other.items()}
    device = (e.reserved + sum(e.managed.values()) + sum(outside.values())) / GIB
    pool = e.extra.get("kv_pool")  # a serving engine's pool (gpuplan.engines.records.KvPool): its numbers, read here
    report = made(MemoryReport, dict(
        weights_gib=e.weights / GIB, gradients_gib=e.gradients / GIB, optimizer_gib=e.optimizer / GIB,
        activations_gib=e.activations / GIB, kv_cache_gib=e.kv_cache / GIB, other_gib=sum(other.values()),
        other=other, allocated_peak_gib=e.allocated / GIB, reserved_peak_gib=e.reserved / GIB,
        device_peak_gib=device, device_overheads={k: v / GIB for k, v in {**e.managed, **outside}.items()},
        cached_gib=e.fragmentation / GIB if e.preallocated is None else 0.0,
        capacity_gib=capacity, peak_phase=e.peak_phase, phases_gib=e.phases, cpu_gib=e.cpu / GIB,
        max_concurrency=None if pool is None else pool.max_concurrency,
        max_context_tokens=None if pool is None else pool.kv_tokens,
        kv_cache_pool_gib=None if pool is None else pool.pool_gib, gpu_layers=e.extra.get("gpu_layers"),
        offloaded_layers=e.extra.get("offloaded_layers"), engine=e.extra.get("engine")))
    if s.task == "train" and gpu is not None and gpu.vendor == "Apple":
        # PyTorch's MPS backend counts what tensors hold now and keeps no peak (torch.mps)
        report.logged_statistic = (f"{s.stack} on Apple silicon: none by default; torch.mps.current_allocated_memory() "
                                   "counts what tensors hold when it is read (MPS keeps no peak)")
        report.logged_gib = report.allocated_peak_gib
    elif s.task == "train":
        report.logged_statistic = f"{s.stack}: {s.recipe.logs}"
        report.logged_gib = report.allocated_peak_gib if s.recipe.logs_level == "allocated" else \
            report.reserved_peak_gib
    if capacity is not None:
        # by the engine's rule, and what the plan keeps in host memory within the host's RAM (memory/host.py)
        report.fits = engine_for(s).fits(s, report, capacity) and not host_shortfall(s, report, gpu)
        report.headroom_gib = capacity - device
    return report
