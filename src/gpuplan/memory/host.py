"""The host's RAM against what a plan keeps there (issue 33): offloaded optimizer states and weights (ZeRO-Offload,
FSDP CPU offload), offloaded activations, and llama.cpp's layers on the CPU must fit in the machine's RAM, or the job
does not run, whatever the GPU holds.

The RAM is ``host_ram_gib`` when given; on a unified-memory computer (Apple silicon, DGX Spark, Strix Halo) the part
of its one pool the GPU does not take; else :data:`~gpuplan.overheads.HOST_RAM_PER_GPU_GIB` per GPU of the node.
A training plan's CPU memory is per rank (each holds its shard of the offloaded states): the node needs it times its
GPUs; a serving plan's is the machine's."""

from __future__ import annotations

from .. import overheads as oh
from ..hardware import GpuSpec
from ..result import MemoryReport
from ..scenario import Scenario


def host_ram(s: Scenario, gpu: GpuSpec | None) -> tuple[float, str]:
    """The node's RAM in GiB and where the figure comes from."""
    if s.host_ram_gib is not None:
        return s.host_ram_gib, "host_ram_gib"
    if gpu is not None and gpu.unified_memory:
        rest = max(gpu.memory_gib - gpu.usable_gib, 0.0)
        return rest, (f"one memory pool: {gpu.memory_gib:,.0f} GB, {gpu.usable_gib:,.1f} GiB for the GPU, the rest for "
                      "the CPU side")
    ram = oh.HOST_RAM_PER_GPU_GIB * s.num_gpus
    return ram, f"default: {oh.HOST_RAM_PER_GPU_GIB:,.0f} GiB per GPU of the node; set host_ram_gib (--host-ram-gib)"


def host_need_gib(s: Scenario, cpu_gib: float) -> float:
    """What the node keeps in host memory, from a plan's CPU memory: a training rank's share times the node's GPUs,
    or a server's own."""
    return cpu_gib * (s.num_gpus if s.task == "train" else 1)


def host_shortfall(s: Scenario, report: MemoryReport, gpu: GpuSpec | None) -> str:
    """A sentence when the host's RAM cannot hold what the plan keeps there ("" when it can, or nothing is kept)."""
    need = host_need_gib(s, report.cpu_gib)
    if need <= 0:
        return ""
    ram, source = host_ram(s, gpu)
    if need <= ram:
        return ""
    return (f"the host's RAM cannot hold what this plan keeps there: {need:,.1f} GiB against {ram:,.1f} GiB "
            f"({source}); more RAM, fewer CPU layers or less offload")
