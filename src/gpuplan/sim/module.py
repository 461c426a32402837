"""``simulate`` for what is not a decoder LLM: your own PyTorch module (``--module my_pkg.my_model:build``), and the
diffusion pipelines and encoder-decoders gpuplan models, run on fake tensors.

**Your module.** ``build`` is a callable that returns ``(module, example_input)``: the input a tensor, a tuple of
positional arguments, a dict of keyword arguments, or an ``(args, kwargs)`` pair. It is called under
``FakeTensorMode`` (every parameter and tensor it makes has shapes, dtypes and storages, no bytes), and the module
runs once as the task says: inference under ``no_grad``, or a training step (forward, a scalar loss on its first
output, backward) with every parameter trained. What is **simulated**: the parameters and their bytes, every op's
shapes, FLOPs and the bytes of every other kernel, and the activation peak (:mod:`gpuplan.model.record`'s
recorder, as the CUDA caching allocator counts). What is **modelled**: gradients and AdamW's two moments in the
parameters' dtype (the optimizer step is not run; the gradients freed after each step, as PyTorch's default
``optimizer.zero_grad()`` frees them: :func:`gpuplan.scenario.modules.resolve_own`), the CUDA context and the
allocator's slack, and on a named card the time of each op (:mod:`gpuplan.speed.modules`).

**A pipeline or encoder-decoder**: the main component's step at the scenario's exact batch and sizes, by the same
recorder, beside the estimate (which reads the fitted profile): the simulated activation peak against the
profile's.
"""

from __future__ import annotations

import importlib
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager, redirect_stdout
from pathlib import Path
from typing import Any

from ..answer import Answer
from ..errors import GpuplanError
from ..hardware import resolve_gpu
from ..model.module_spec import Component, ModuleSpec
from ..model.profile import DIMS, Op, Poly, Profile
from ..model.record import Part, RecordError, run_pass
from ..speed.modules import Run, backward, forward

GIB = 2**30
WIDTH = {"float32": 4, "float64": 8, "float16": 2, "bfloat16": 2}  # bytes per element by parameter dtype
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


@contextmanager
def _importable_here() -> Iterator[None]:
    """The current folder first on ``sys.path`` while your module is imported, built and run, as ``python -m`` has
    it; after, ``sys.path`` as it was and the modules imported from that folder (and from no other entry of
    ``sys.path``) forgotten. Left there, it was first for every later import of the process: a module that gpuplan
    imports when it first needs it (pyarrow, jinja2, datasets) was found in the current folder (s27-sec)."""
    here, before = str(Path.cwd()), list(sys.path)
    if here in sys.path:
        yield
        return
    known = set(sys.modules)
    sys.path.insert(0, here)
    try:
        yield
    finally:
        sys.path[:] = before
        for name in set(sys.modules) - known:
            if _found_in(sys.modules[name], here, before):
                del sys.modules[name]


def _found_in(module: Any, folder: str, others: list[str]) -> bool:
    """Whether ``module``'s file (a namespace package's folder) is under ``folder`` and under none of ``others``."""
    origin = getattr(module, "__file__", None) or next(iter(getattr(module, "__path__", ()) or ()), None)
    if not isinstance(origin, str):
        return False
    where, home = Path(origin).resolve(), Path(folder).resolve()
    elsewhere = [e for e in (Path(o or ".").resolve() for o in others if isinstance(o, str)) if e != home]
    return where.is_relative_to(home) and not any(where.is_relative_to(e) for e in elsewhere)


def load_target(target: str):
    """The callable ``module.path:function`` names (the current folder importable: :func:`_importable_here`)."""
    module_name, _, attr = target.partition(":")
    if not module_name or not attr or module_name.startswith("."):
        raise GpuplanError(f"--module takes package.module:function (a callable returning (module, example_input)), "
                           f"not {target!r}")
    try:
        found = importlib.import_module(module_name)
    except ImportError as err:
        raise GpuplanError(f"cannot import {module_name} for --module ({err})") from None
    except (Exception, SystemExit) as err:  # the user's code failing as it is imported: one sentence, as build()'s
        raise GpuplanError(f"cannot import {module_name} for --module: {_failure(err)}") from None
    build = getattr(found, attr, None)
    if not callable(build):
        raise GpuplanError(f"{module_name} has no callable {attr} (--module {target})")
    needed = _required_arguments(build)
    if needed:
        raise GpuplanError(f"{target} takes arguments ({', '.join(needed)}) and --module calls it with none: give "
                           "them defaults, or name a function of no arguments that calls it with yours")
    return build


def _required_arguments(build) -> list[str]:
    """The parameters ``build`` cannot be called without (no default, not ``*args`` or ``**kwargs``): a build that
    takes a width failed inside the fake-tensor pass as a TypeError (s30-beyond's walk)."""
    import inspect

    try:
        params = inspect.signature(build).parameters.values()
    except (TypeError, ValueError):  # a builtin or C callable without a signature: called, and its failure said
        return []
    return [p.name for p in params if p.default is inspect.Parameter.empty
            and p.kind not in (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD)]


def _failure(err: BaseException) -> str:
    """The user's code's failure in a few words: its class and the first line of its message (a SyntaxError's
    file and line, a sys.exit's code)."""
    if isinstance(err, SystemExit):
        return f"it called sys.exit({err.code!r})"
    if isinstance(err, SyntaxError):
        return f"SyntaxError: {err.msg} ({Path(err.filename or '?').name}, line {err.lineno})"
    lines = str(err).splitlines()
    return f"{err.__class__.__name__}: {lines[0][:200] if lines else ''}".rstrip(": ")


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


def _fake_trunc_normal(tensor, mean=0.0, std=1.0, a=-2.0, b=2.0, generator=None):
    """``torch.nn.init.trunc_normal_`` without its rejection loop: torch 2.13's ``_no_grad_trunc_normal_`` draws again
    while ``mask.any()``, a branch on the values a fake tensor does not hold (DataDependentOutputException, s18 walk:
    ModernBERT's ``_init_weights``, timm's ViTs). The same in-place op on the same tensor, so the same bytes."""
    import torch

    with torch.no_grad():
        return tensor.normal_(mean, std, generator=generator).clamp_(min=a, max=b)


@contextmanager
def _initializers_on_fake_tensors():
    """While ``build()`` runs: the weight initializers of ``torch.nn.init`` that branch on their own values replaced
    by ones that do not (:func:`_fake_trunc_normal`); the values are never read, only the shapes and dtypes."""
    import torch.nn.init as init

    name = "_no_grad_trunc_normal_"  # what init.trunc_normal_ (and transformers' copy of it) calls
    original = getattr(init, name, None)
    if original is not None:
        setattr(init, name, _fake_trunc_normal)
    try:
        yield
    finally:
        if original is not None:
            setattr(init, name, original)


def _built(target: str):
    """The module and example input ``target``'s callable returns, made under ``FakeTensorMode`` (its weight
    initializers fake-safe: :func:`_initializers_on_fake_tensors`), and the mode."""
    try:
        import torch
        from torch._subclasses.fake_tensor import FakeTensorMode
    except ImportError:
        raise GpuplanError("--module needs torch: pip install torch==2.13.0") from None
    build = load_target(target)
    fake = FakeTensorMode(allow_non_fake_inputs=True)
    try:
        with fake, _initializers_on_fake_tensors():
            made = build()
    except (Exception, SystemExit) as err:  # the user's code: its failure (sys.exit too), in one sentence
        raise GpuplanError(f"{target} failed on fake tensors ({_failure(err)})") from None
    if not (isinstance(made, tuple) and len(made) == 2 and isinstance(made[0], torch.nn.Module)):
        got = "(" + ", ".join(type(x).__name__ for x in made[:3]) + (", ...)" if len(made) > 3 else ")") \
            if isinstance(made, tuple) else type(made).__name__  # "not tuple" said nothing of a tuple's parts
        raise GpuplanError(f"{target} must return (module, example_input), an nn.Module first, not {got}")
    return made[0], made[1], fake


def module_spec(target: str, task: str = "train") -> ModuleSpec:
    """Your module as a :class:`~gpuplan.model.module_spec.ModuleSpec` of kind ``module``, which the one resolver and
    builder plan as they plan a bundled model (:func:`gpuplan.plan.modules.build_module`): ``target``'s module run
    once on fake tensors at its example input (a forward with its ops recorded, and for ``task`` train a training
    step), its one component carrying the profile of that pass: every op, and the activation peak of each way
    (scaled to 16-bit activations, as bundled profiles are, from the dtype of its parameters). What your code
    prints (as it is imported, built or run) goes to stderr, so that stdout holds gpuplan's answer alone: a print in
    build() made ``estimate --module ... --json`` print no JSON (s25-fuzz)."""
    with redirect_stdout(sys.stderr), _importable_here():
        return _spec(target, task)


def _spec(target: str, task: str) -> ModuleSpec:
    """:func:`module_spec`'s work."""
    import torch

    module, example, fake = _built(target)
    args, kwargs = _inputs(example)
    params = sum(p.numel() for p in module.parameters())
    first = next(module.parameters(), None)
    dtype = str(first.dtype).removeprefix("torch.") if first is not None else "float32"
    name = type(module).__name__
    part = Part(name=name, variables=(), base=(), second=(), check=(), build=lambda way: module,
                inputs=lambda batch, sizes: (args, kwargs), materialized=fake)
    try:
        ops_pass = run_pass(part, "inference", 1, (), record_ops=True)
        peaks = {"inference": max(ops_pass.peaks.values(), default=0)}
        if task == "train":
            peaks["train-full"] = max(run_pass(part, "train-full", 1, ()).peaks.values(), default=0)
    except RecordError as err:
        raise GpuplanError(str(err).replace(name, target, 1)) from None
    scale = WIDTH.get(dtype, 2) / 2
    profile = _profile(name, ops_pass, params, {way: peak / scale for way, peak in peaks.items()},
                       {"torch": torch.__version__.split("+")[0]})
    c = Component(name=name, role="model", library="torch", cls=name, config={"module": target}, params=params,
                  dtype=dtype, profile=profile)
    return ModuleSpec(name=target, kind="module", family="module", components=(c,),
                      counted_by="your build() on fake tensors (its parameters counted)")


def own_precision(spec: ModuleSpec) -> str:
    """The precision your module runs in as built: the dtype of its parameters."""
    dtype = spec.main.dtype
    if dtype in ("float32", "float64"):
        return "fp32"
    return "fp16-true" if dtype == "float16" else "bf16-true"


def simulate_module(target: str, *, task: str = "train", gpu: str | None = None) -> ModuleSimulation:
    """Run the module ``target`` builds once on fake tensors (see the module docstring); its memory, verdict and
    time are the one builder's plan of it (:func:`module_spec`) in the precision it was built in."""
    from ..plan.build import build
    from ..plan.resolve import resolve_module_scenario
    from ..scenario import Scenario

    start = time.time()
    spec = module_spec(target, task)
    fields = {"model": target, "task": task, "precision": own_precision(spec)}
    plan = build(resolve_module_scenario(Scenario(**fields, **({"gpu": gpu} if gpu else {})), spec), advise=False)
    return _result(target, task, plan, spec, time.time() - start)


def _profile(name: str, p, params: int, peaks: dict[str, float], recorded_with: dict[str, str]) -> Profile:
    """A profile of one pass (every size a constant)."""
    const = lambda v: Poly((((), float(v), 0.0),))  # noqa: E731
    groups: dict[tuple, int] = {}
    for kind, leaf, role, bias, dims in p.ops:
        key = (kind, leaf, role, bias, tuple(dims))
        groups[key] = groups.get(key, 0) + 1
    ops = tuple(Op(kind=k, leaf=leaf, role=role, bias=bias, dims=tuple(const(d) for d in dims), count=n)
                for (k, leaf, role, bias, dims), n in groups.items() if len(dims) == len(DIMS[k]))
    return Profile(module=name, variables=(), ops=ops, other_bytes=const(p.other_bytes),
                   other_kernels=p.other_kernels, dispatches=p.dispatches, calls=p.calls,
                   memory={way: {"peak": const(v)} for way, v in peaks.items()}, params=params,
                   recorded_with=recorded_with)


def _result(target: str, task: str, plan, spec: ModuleSpec, elapsed: float) -> ModuleSimulation:
    mem, profile = plan.memory, spec.main.profile
    run = Run(dtype="fp32" if spec.main.dtype == "float32" else "bf16", trained="all" if task == "train" else "none")
    fwd = forward(profile, _reference(), 1, (), run).flops
    step_flops = fwd + (backward(profile, _reference(), 1, (), run).flops if task == "train" else 0.0)
    gpu = plan.module.gpu
    return ModuleSimulation(
        target=target, module=profile.module, task=task, params=spec.main.params, dtype=spec.main.dtype,
        weights_gib=mem.weights_gib, gradients_gib=mem.gradients_gib, optimizer_gib=mem.optimizer_gib,
        activations_gib=mem.activations_gib, allocated_peak_gib=mem.allocated_peak_gib,
        device_peak_gib=mem.device_peak_gib, flops_forward=fwd, flops_step=step_flops,
        gpu=gpu.name if gpu else None, fits=mem.fits, step_s=plan.work.step_s if plan.work else None,
        elapsed_s=elapsed,
        simulated=["the parameters and their bytes", "every op's shape and FLOPs, and the other kernels' bytes",
                   f"the activation peak of one {PASSES[task]} as the CUDA caching allocator counts it"],
        modelled=(["gradients and AdamW's two moments in the parameters' dtype (the optimizer step is not run); the "
                   "gradients held from the backward on, freed by zero_grad() (PyTorch's default set_to_none=True)"]
                  if task == "train" else []) + ["the CUDA context and the allocator's slack"]
        + ([f"the step's time on {gpu.name} from its ops (GEMM shapes at the card's rates, attention, "
            "element-wise bytes, host work per op)"] if gpu else []))


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
    part = diffusers.denoiser_part(c, (job.way,)) if spec.kind == "diffusion" else \
        encoders.model_part(spec, c, "float16" if job.autocast else "")  # as its profile was recorded
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
