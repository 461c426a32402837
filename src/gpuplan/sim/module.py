"""``simulate`` for what is not a decoder LLM: your own PyTorch module (``--module my_pkg.my_model:build``), and the
diffusion pipelines and encoder-decoders gpuplan models, run on fake tensors.

**Your module.** ``build`` is a callable that returns ``(module, example_input)``: the input a tensor, a tuple of
positional arguments, a dict of keyword arguments, or an ``(args, kwargs)`` pair. It is called under
``FakeTensorMode`` (every parameter and tensor it makes has shapes, dtypes and storages, no bytes), and the module
runs once as the task says: inference under ``no_grad``, or a training step (forward, a scalar loss on its first
output, backward) with every parameter trained. What is **simulated**: the parameters and their bytes, every op's
shapes, FLOPs and the bytes of every other kernel, and the activation peak (:mod:`gpuplan.model.record`'s
recorder, as the CUDA caching allocator counts). What is **modelled**: gradients and AdamW's two moments in the
parameters' dtype (the optimizer step is not run), the CUDA context and the allocator's slack, and on a named card
the time of each op (:mod:`gpuplan.speed.modules`).

**A pipeline or encoder-decoder**: the main component's step at the scenario's exact batch and sizes, by the same
recorder, beside the estimate (which reads the fitted profile): the simulated activation peak against the
profile's.
"""

from __future__ import annotations

import importlib
import sys
import time
from pathlib import Path
from typing import Any

from .. import overheads as oh
from ..errors import GpuplanError
from ..hardware import resolve_gpu
from ..model.profile import DIMS, Op, Poly, Profile
from ..model.record import Part, RecordError, run_pass
from ..result import Answer
from ..speed.modules import Run, backward, forward

GIB = 2**30
PASSES = {"train": "training step (forward, loss, backward)", "infer": "forward"}


class ModuleSimulation(Answer):
    """What ``simulate --module`` found (GiB and seconds); ``simulated`` and ``modelled`` say which is which."""

    target: str
    module: str  # the class of the module built
    task: str
    params: int
    dtype: str
    weights_gib: float
    gradients_gib: float
    optimizer_gib: float
    activations_gib: float
    allocated_peak_gib: float
    device_peak_gib: float
    flops_forward: float
    flops_step: float
    gpu: str | None = None
    fits: bool | None = None
    step_s: float | None = None
    elapsed_s: float
    simulated: list[str]
    modelled: list[str]


def load_target(target: str):
    """The callable ``module.path:function`` names (the current folder importable, as ``python -m`` has it)."""
    module_name, _, attr = target.partition(":")
    if not module_name or not attr:
        raise GpuplanError(f"--module takes package.module:function (a callable returning (module, example_input)), "
                           f"not {target!r}")
    if str(Path.cwd()) not in sys.path:
        sys.path.insert(0, str(Path.cwd()))
    try:
        found = importlib.import_module(module_name)
    except ImportError as err:
        raise GpuplanError(f"cannot import {module_name} for --module ({err})") from None
    build = getattr(found, attr, None)
    if not callable(build):
        raise GpuplanError(f"{module_name} has no callable {attr} (--module {target})")
    return build


def _inputs(example: Any) -> tuple[tuple, dict]:
    import torch

    if isinstance(example, torch.Tensor):
        return (example,), {}
    if isinstance(example, dict):
        return (), dict(example)
    if isinstance(example, tuple) and len(example) == 2 and isinstance(example[0], (tuple, list)) \
            and isinstance(example[1], dict):
        return tuple(example[0]), dict(example[1])
    if isinstance(example, (tuple, list)):
        return tuple(example), {}
    raise GpuplanError(f"--module: the example input must be a tensor, a tuple, a dict or (args, kwargs), not "
                       f"{type(example).__name__}")


def simulate_module(target: str, *, task: str = "train", gpu: str | None = None) -> ModuleSimulation:
    """Run the module ``target`` builds once on fake tensors (see the module docstring)."""
    try:
        import torch
        from torch._subclasses.fake_tensor import FakeTensorMode
    except ImportError:
        raise GpuplanError("simulate --module needs torch: pip install torch==2.13.0") from None
    build = load_target(target)
    start = time.time()
    fake = FakeTensorMode(allow_non_fake_inputs=True)
    try:
        with fake:
            made = build()
    except Exception as err:  # the user's code: its failure, in one sentence
        raise GpuplanError(f"{target} failed on fake tensors ({err.__class__.__name__}: {str(err)[:200]})") from None
    if not (isinstance(made, tuple) and len(made) == 2 and isinstance(made[0], torch.nn.Module)):
        raise GpuplanError(f"{target} must return (module, example_input), not {type(made).__name__}")
    module, example = made
    args, kwargs = _inputs(example)
    params = sum(p.numel() for p in module.parameters())
    first = next(module.parameters(), None)
    dtype = str(first.dtype).removeprefix("torch.") if first is not None else "float32"
    part = Part(name=type(module).__name__, variables=(), base=(), second=(), check=(), build=lambda way: module,
                inputs=lambda batch, sizes: (args, kwargs), materialized=fake)
    way = "train-full" if task == "train" else "inference"
    try:
        ops_pass = run_pass(part, "inference", 1, (), record_ops=True)
        step_pass = run_pass(part, way, 1, ()) if way != "inference" else ops_pass
    except RecordError as err:
        raise GpuplanError(str(err).replace(part.name, target, 1)) from None
    profile = _profile(part.name, ops_pass, params)
    return _result(target, task, gpu, profile, params, dtype, max(step_pass.peaks.values(), default=0),
                   time.time() - start)


def _profile(name: str, p, params: int) -> Profile:
    """A profile of one pass (every size a constant)."""
    const = lambda v: Poly((((), float(v), 0.0),))  # noqa: E731
    groups: dict[tuple, int] = {}
    for kind, leaf, role, bias, dims in p.ops:
        key = (kind, leaf, role, bias, tuple(dims))
        groups[key] = groups.get(key, 0) + 1
    ops = tuple(Op(kind=k, leaf=leaf, role=role, bias=bias, dims=tuple(const(d) for d in dims), count=n)
                for (k, leaf, role, bias, dims), n in groups.items() if len(dims) == len(DIMS[k]))
    return Profile(module=name, variables=(), ops=ops, other_bytes=const(p.other_bytes),
                   other_kernels=p.other_kernels, dispatches=p.dispatches, calls=p.calls, memory={},
                   params=params)


def _result(target: str, task: str, gpu_name: str | None, profile: Profile, params: int, dtype: str,
            activations: float, elapsed: float) -> ModuleSimulation:
    width = {"float32": 4, "float64": 8}.get(dtype, 2)
    weights = params * width
    grads = weights if task == "train" else 0
    optimizer = 2 * weights if task == "train" else 0
    allocated = weights + grads + optimizer + activations
    slack = oh.ALLOCATOR_SLACK_TRAIN if task == "train" else oh.ALLOCATOR_SLACK_INFER
    run = Run(dtype="fp32" if width == 4 else "bf16", trained="all" if task == "train" else "none")
    fwd = forward(profile, _gpu_or_none(gpu_name) or _reference(), 1, (), run)
    step_flops = fwd.flops
    if task == "train":
        step_flops += backward(profile, _gpu_or_none(gpu_name) or _reference(), 1, (), run).flops
    gpu = _gpu_or_none(gpu_name)
    context = oh.CUDA_CONTEXT_GIB.get(gpu.generation, oh.CUDA_CONTEXT_DEFAULT_GIB) * GIB if gpu else \
        oh.CUDA_CONTEXT_DEFAULT_GIB * GIB
    device = allocated * (1 + slack) + context
    step_s = None
    if gpu is not None:
        step = fwd + backward(profile, gpu, 1, (), run) if task == "train" else fwd
        step_s = step.total_s
    return ModuleSimulation(
        target=target, module=profile.module, task=task, params=params, dtype=dtype, weights_gib=weights / GIB,
        gradients_gib=grads / GIB,
        optimizer_gib=optimizer / GIB, activations_gib=activations / GIB, allocated_peak_gib=allocated / GIB,
        device_peak_gib=device / GIB, flops_forward=fwd.flops, flops_step=step_flops,
        gpu=gpu.name if gpu else None, fits=device / GIB <= gpu.usable_gib if gpu else None, step_s=step_s,
        elapsed_s=elapsed,
        simulated=["the parameters and their bytes", "every op's shape and FLOPs, and the other kernels' bytes",
                   f"the activation peak of one {PASSES[task]} as the CUDA caching allocator counts it"],
        modelled=(["gradients and AdamW's two moments in the parameters' dtype (the optimizer step is not run)"]
                  if task == "train" else []) + ["the CUDA context and the allocator's slack"]
        + ([f"the step's time on {gpu.name} from its ops (GEMM shapes at the card's rates, attention, "
            "element-wise bytes, host work per op)"] if gpu else []))


def _gpu_or_none(name: str | None):
    if not name:
        return None
    return resolve_gpu(name)[0]


def _reference():
    """FLOPs do not depend on the card; any card with a rate times them."""
    return resolve_gpu("h100-sxm")[0]


class PipelineSimulation(Answer):
    """The main component's step of a pipeline or encoder-decoder scenario at its exact sizes, on fake tensors,
    beside the estimate's (GiB)."""

    model: str
    resolved: str
    way: str
    batch: int
    sizes: list[int]
    simulated_activations_gib: float
    estimated_activations_gib: float
    allocated_peak_gib: float  # the estimate's, with the simulated activations in place of the profile's
    estimated_allocated_peak_gib: float
    elapsed_s: float
    notes: list[str]


def simulate_pipeline(s, spec) -> PipelineSimulation:
    """Run the main component of ``spec`` the way scenario ``s`` does, once, at its largest size (see the module
    docstring)."""
    from ..memory.modules import BYTES
    from ..model import diffusers, encoders
    from ..plan.modules import _estimate, describe, profiles
    from ..plan.resolve import resolve_module_scenario

    start = time.time()
    r = resolve_module_scenario(s, spec)  # the one resolver, as the plan it checks
    s, job = r.scenario, r.job
    main, parts = profiles(job)
    c = spec.main
    part = diffusers.denoiser_part(c, (job.way,)) if spec.kind == "diffusion" else encoders.model_part(spec, c)
    sizes = job.shapes[0]
    if spec.kind == "diffusion" and any(w != h for w, h in job.pixels[:1]):
        sizes = (sizes[0], sizes[1])  # the recorder feeds square latents of the same pixel count
    try:
        passed = run_pass(part, job.way, job.batch, sizes)
    except RecordError as err:
        raise GpuplanError(str(err)) from None
    scale = BYTES[job.dtype] / 2
    simulated = max(passed.peaks.values(), default=0) * scale
    estimated = main.activation_bytes(job.way, job.batch, sizes) * scale
    e = _estimate(s, job, main, parts)
    main_peak = e.peak_phase in ("forward and backward", "denoise", "forward")
    allocated = e.allocated - (e.activations - simulated if main_peak else 0.0)
    notes = [f"{c.cls} run once at batch {job.batch} and sizes {', '.join(map(str, sizes))} on fake tensors; the "
             "estimate reads its profile, fitted on other sizes"]
    if not main_peak:
        notes.append(f"the step's peak is in {e.peak_phase}, not in {c.name}'s pass: the totals are the same")
    return PipelineSimulation(model=spec.name, resolved=describe(s, job), way=job.way, batch=job.batch,
                              sizes=list(sizes), simulated_activations_gib=simulated / GIB,
                              estimated_activations_gib=estimated / GIB, allocated_peak_gib=allocated / GIB,
                              estimated_allocated_peak_gib=e.allocated / GIB, elapsed_s=time.time() - start,
                              notes=notes)
