"""Record a :class:`~.profile.Profile`: the real module run on fake tensors at a few sizes, its work and activation
memory fitted exactly and checked at one more size.

The module is built on the meta device by its own class and materialized as ``FakeTensor``s on the CPU (shapes,
dtypes and storages, no bytes). One :class:`Recorder` (a ``TorchDispatchMode`` with hooks on every ``nn.Linear`` and
convolution) runs each pass:

- the forward ops: each linear and convolution as its GEMM (module hooks: input rows, ``in_features``,
  ``out_features``; a convolution's output pixels and ``in_channels x kernel area / groups``), each
  ``scaled_dot_product_attention`` kernel (batch x heads, query and key lengths, head sizes), each other matrix
  product, and the bytes read and written by every other non-view kernel;
- the activation memory: every storage an op creates but the parameters, buffers and gradients, counted from
  creation until its Python object is collected (as the CUDA caching allocator counts allocations,
  ``sim/tracker.py``), and its peak in each segment of the pass: the forward of each module up to five levels
  down (``model.encoder.layers.3.self_attn``, ``encoder.block.0.layer.1``), where the live set of one segment grows
  with the sizes in its own way (a Whisper encoder's 1,500 frames against its decoder's tokens), and the backward
  through each repeated block (from the release of the first activation that block's forward made, or, under
  checkpointing, from the block's forward run again: :func:`_block`). A training pass
  runs the forward, a scalar loss and the backward, with gradients set aside as they accumulate
  (``register_post_accumulate_grad_hook``); the pass's peak is the largest segment's.

Passes at batch 2 and 3 (:data:`FIT_BATCHES`), at as many sizes as the polynomial has terms (:func:`points`), fix
every size exactly (fractions: ``Σ (p + q·B)·Π x_i^e_i``, degree 1, or 2 for modules with eager attention); a pass
at batch 4 with every variable changed beyond the fitted range must then match, exactly for the ops and within
:data:`MEMORY_TOLERANCE` (3 %) for the peaks, or the recording fails with the op or way that is not such a polynomial.
Needs torch, and the library whose class the module is. A part recorded under mixed precision (``Part.autocast``)
runs with fp32 weights under CUDA autocast's op lists (:mod:`.autocast`), its casts counted where autocast runs
them, inside the linears too.
"""

from __future__ import annotations

import contextlib
import math
import weakref
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from ..errors import GpuplanError
from . import profile
from .profile import DIMS, Op, Poly, Profile
from .trace import quiet

# what a way of running needs: (train, trained weights, gradient checkpointing)
WAYS = {"inference": (False, "none", False), "train-full": (True, "all", False),
        "train-full-gc": (True, "all", True), "train-frozen": (True, "none", False),
        "train-frozen-gc": (True, "none", True)}


class RecordError(GpuplanError):
    """The module's work or memory is not a polynomial of its sizes, or it cannot run on fake tensors."""


@dataclass(frozen=True, kw_only=True)
class Part:
    """A module to profile: ``build(way)`` returns it on the meta device, set up for the way (LoRA adapters,
    checkpointing: :data:`WAYS` and ``train-lora-*``); ``inputs(batch, sizes)`` makes its example inputs (called
    under the fake mode) as ``(args, kwargs)``; ``forward(module, args, kwargs)`` runs it and returns a tensor
    (default: ``module(*args, **kwargs)`` and its first tensor). ``base``, ``second``, ``check``: the variables'
    values of the fitting passes and of the check."""

    name: str
    variables: tuple[str, ...]
    base: tuple[int, ...]
    second: tuple[int, ...]
    check: tuple[int, ...]
    third: tuple[int, ...] = ()  # degree 2: a third value of each variable
    build: Callable[[str], Any]
    inputs: Callable[[int, tuple[int, ...]], tuple[tuple, dict]]
    forward: Callable[[Any, tuple, dict], Any] | None = None
    ways: tuple[str, ...] = ("inference",)
    role: Callable[[str], str] = lambda name: "other"  # a linear's role from its module name (LoRA presets)
    degree: int = 1
    materialized: Any = None  # the FakeTensorMode a module built already fake belongs to (simulate --module)
    dtype: str = "bfloat16"
    versions: dict[str, str] = field(default_factory=dict)
    autocast: str = ""  # a 16-bit dtype: fp32 weights, run under CUDA autocast's op lists (:mod:`.autocast`)


@dataclass
class Pass:
    """What one pass recorded: the ops in order (kind, leaf, role, bias, dims), other bytes and kernels, the peak
    of each segment."""

    ops: list[tuple[str, str, str, bool, tuple[int, ...]]] = field(default_factory=list)
    other_bytes: int = 0
    other_kernels: int = 0
    dispatches: int = 0  # every aten op the forward dispatches, views too (host work)
    calls: int = 0  # every module forward called (host work)
    peaks: dict[str, int] = field(default_factory=dict)


def _torch():
    try:
        import torch
    except ImportError:
        raise GpuplanError("recording a module's work needs torch: pip install torch==2.13.0 (CPU build is "
                           "enough)") from None
    return torch


class Recorder:
    """The dispatch mode and module hooks of one pass (see the module docstring)."""

    def __init__(self, module, record_ops: bool, role: Callable[[str], str], casts: bool = False):
        torch = _torch()
        from torch.utils._python_dispatch import TorchDispatchMode
        from torch.utils._pytree import tree_flatten

        self.result = Pass()
        self.fixed = {t.untyped_storage()._cdata for t in [*module.parameters(), *module.buffers()]}
        self.live: dict[int, int] = {}
        self.current = 0
        self.depth = 0
        self.segments: list[str] = []
        self.origin: dict[int, str] = {}  # storage -> the forward segment that made it
        self.backward = False
        self.backward_segment = "backward"
        self.recomputed = False  # checkpointing ran a segment's forward again in the backward
        self.record_ops = record_ops
        self.role = role
        recorder = self

        class Mode(TorchDispatchMode):
            def __torch_dispatch__(self, func, types, args=(), kwargs=None):
                out = func(*args, **(kwargs or {}))
                outs = [v for v in tree_flatten(out)[0] if isinstance(v, torch.Tensor)]
                for value in outs:
                    recorder._track(value)
                if recorder.record_ops and outs:
                    recorder.result.dispatches += 1
                    # autocast's casts of a linear's input and weight run inside it: counted (``casts``)
                    if (recorder.depth == 0 or (casts and func is to_copy)) and not func.is_view:
                        recorder._op(func, args, kwargs or {}, outs, tree_flatten)
                return out

        to_copy = torch.ops.aten._to_copy.default
        self.mode = Mode()
        self.handles = []
        convs = (torch.nn.Conv1d, torch.nn.Conv2d, torch.nn.Conv3d)
        for name, sub in module.named_modules():
            if record_ops:
                self.handles.append(sub.register_forward_pre_hook(self._count_call))
            if name and name.count(".") <= 4:
                self.handles.append(sub.register_forward_pre_hook(self._enter_segment(name)))
                self.handles.append(sub.register_forward_hook(self._leave_segment))
            if isinstance(sub, (torch.nn.Linear, *convs)):
                self.handles.append(sub.register_forward_pre_hook(self._enter))
                self.handles.append(sub.register_forward_hook(self._leave(name)))

    # ---- memory ------------------------------------------------------------------------------------------------
    def _track(self, tensor) -> None:
        storage = tensor.untyped_storage()
        key = storage._cdata
        if key in self.live or key in self.fixed:
            return
        size = storage.nbytes()
        self.live[key] = size
        self.current += size
        if self.backward:
            segment = self.backward_segment
        else:
            segment = self.segments[-1] if self.segments else "root"
            self.origin[key] = segment
        if self.current > self.result.peaks.get(segment, 0):
            self.result.peaks[segment] = self.current
        weakref.finalize(storage, self._release, key)

    def _release(self, key: int) -> None:
        self.current -= self.live.pop(key, 0)
        # the key is the storage's address, which a later storage may reuse: its origin leaves with it, or a storage
        # made in the backward at that address would name the segment after a forward activation long gone (and the
        # labels would depend on the allocator's history in this process)
        origin = self.origin.pop(key, None)
        if self.backward and not self.recomputed and origin is not None:
            # the backward has reached the activations that forward segment made
            self.backward_segment = f"backward {_block(origin)}"

    def set_aside(self, tensor) -> None:
        """A gradient: no longer an activation (its storage leaves the count for good)."""
        if tensor is not None:
            key = tensor.untyped_storage()._cdata
            self.current -= self.live.pop(key, 0)
            self.fixed.add(key)

    def _count_call(self, module, inputs) -> None:
        self.result.calls += 1

    def _enter_segment(self, name: str):
        def hook(module, inputs) -> None:
            if self.backward:  # checkpointing recomputes this segment: its backward follows
                self.backward_segment = f"backward {_block(name)}"
                self.recomputed = True
            else:
                self.segments.append(name)
        return hook

    def _leave_segment(self, module, inputs, output) -> None:
        if self.segments and not self.backward:
            self.segments.pop()

    # ---- ops ---------------------------------------------------------------------------------------------------
    def _enter(self, module, inputs) -> None:
        self.depth += 1

    def _leave(self, name: str):
        def hook(module, inputs, output):
            self.depth -= 1
            if not self.record_ops or self.depth:
                return
            x = inputs[0]
            if hasattr(module, "in_features"):
                rows = math.prod(x.shape[:-1])  # not numel // in_features: a Linear(0, n) has rows too
                dims = (rows, module.in_features, module.out_features)
                self.result.ops.append(("linear", _leaf(name), self.role(name), module.bias is not None, dims))
            else:
                area = 1
                for k in module.kernel_size:
                    area *= k
                dims = (output.numel() // module.out_channels if module.out_channels else 0,
                        module.in_channels * area // module.groups,
                        module.out_channels)
                self.result.ops.append(("conv", _leaf(name), self.role(name), module.bias is not None, dims))
        return hook

    def _op(self, func, args, kwargs, outs, tree_flatten) -> None:
        name = func.__name__
        if "scaled_dot_product" in name:
            q, k, v = args[:3]
            heads = q.numel() // (q.shape[-2] * q.shape[-1])
            self.result.ops.append(("attention", "", "", False, (heads, q.shape[-2], k.shape[-2], q.shape[-1],
                                                             v.shape[-1])))
            return
        if name.startswith("_native_multi_head_attention"):  # nn.MultiheadAttention's inference fast path
            q, k = args[0], args[1]
            embed, heads = int(args[3]), int(args[4])
            batch, sq, sk = q.shape[0], q.shape[-2], k.shape[-2]
            self.result.ops += [("matmul", "", "", False, (1, batch * sq, embed, embed)),
                                ("matmul", "", "", False, (1, batch * sk, embed, 2 * embed)),
                                ("attention", "", "", False, (batch * heads, sq, sk, embed // heads, embed // heads)),
                                ("matmul", "", "", False, (1, batch * sq, embed, embed))]
            return
        if name.split(".")[0] in ("mm", "bmm", "baddbmm", "addmm", "matmul"):
            a, b = (args[1], args[2]) if name.startswith(("baddbmm", "addmm")) else (args[0], args[1])
            batch = a.numel() // (a.shape[-2] * a.shape[-1])
            self.result.ops.append(("matmul", "", "", False, (batch, a.shape[-2], a.shape[-1], b.shape[-1])))
            return
        torch = _torch()
        tensors = [t for t in tree_flatten((args, kwargs))[0] if isinstance(t, torch.Tensor)]
        self.result.other_bytes += sum(t.numel() * t.element_size() for t in [*tensors, *outs])
        self.result.other_kernels += 1

    def close(self) -> None:
        for handle in self.handles:
            handle.remove()


def _block(name: str) -> str:
    """The repeated block a module belongs to, for labelling the backward: the deepest element of a module list on
    its path (``transformer_blocks.3``, ``model.decoder.layers.5``, ``up_blocks.1.attentions.2``), else its
    top-level module: within one block the backward's peak stays at the same op as the sizes change."""
    parts = name.split(".")
    numbered = [i for i, part in enumerate(parts) if part.isdigit()]
    return ".".join(parts[:numbered[-1] + 1]) if numbered else parts[0]


def _leaf(name: str) -> str:
    """The part of a module name LoRA targets match: its last name, and the container's for numbered ones
    (``to_out.0``, ``ff.net.2``, ``ff.net.0.proj``)."""
    parts = name.split(".")
    keep = [parts[-1]]
    i = len(parts) - 2
    while i >= 0 and (parts[i + 1].isdigit() or keep[0] == "proj" or parts[i] == "net") and len(keep) < 3:
        keep.insert(0, parts[i])
        i -= 1
    return ".".join(keep)


@contextlib.contextmanager
def silent_stderr():
    """The process's stderr (file descriptor 2) sent to /dev/null, with logging and warnings off: importing and
    building diffusers', transformers' and peft's classes prints (torchao's kernels, torch's pytree), and a
    one-line answer must not carry that."""
    import os
    import sys

    sys.stderr.flush()
    saved = os.dup(2)
    try:
        with open(os.devnull, "w") as null, quiet():
            os.dup2(null.fileno(), 2)
            yield
    finally:
        sys.stderr.flush()
        os.dup2(saved, 2)
        os.close(saved)


def _materialize(part: Part, way: str):
    torch = _torch()
    from torch._subclasses.fake_tensor import FakeTensorMode

    if part.materialized is not None:
        module, fake = part.build(way), part.materialized
    else:
        fake = FakeTensorMode(allow_non_fake_inputs=True)
        with quiet():
            module = part.build(way)
            if part.autocast:  # fp32 weights, as a mixed-precision fine-tune keeps them
                module = module.float()
            with fake:
                module = module.to_empty(device="cpu")
    train = way != "inference"
    module.train(train)
    if way.startswith("train-full"):
        for p in module.parameters():
            p.requires_grad_(p.is_floating_point())
    elif way.startswith("train-frozen") or way == "inference":
        for p in module.parameters():
            p.requires_grad_(False)
    del torch
    return module, fake


def run_pass(part: Part, way: str, batch: int, sizes: tuple[int, ...], record_ops: bool = False) -> Pass:
    """One pass of ``part`` at ``batch`` and ``sizes``, run the way ``way`` says (see the module docstring)."""
    torch = _torch()
    module, fake = _materialize(part, way)
    recorder = Recorder(module, record_ops, part.role, casts=bool(part.autocast))
    train = way != "inference"
    if train:
        for p in module.parameters():
            if p.requires_grad:
                p.register_post_accumulate_grad_hook(lambda p: recorder.set_aside(p.grad))
    forward = part.forward or (lambda m, a, k: m(*a, **k))
    try:
        with quiet(), fake:
            args, kwargs = part.inputs(batch, sizes)
            with recorder.mode, (contextlib.nullcontext() if train else torch.no_grad()):
                with autocast_mode(part):  # the forward's region (checkpointing enters its own to recompute)
                    out = _first_tensor(forward(module, args, kwargs))
                if train:
                    loss = out.float().square().mean()
                    del out
                    recorder.backward = True
                    if loss.requires_grad:
                        loss.backward()
                    del loss
                else:
                    del out
    except RecordError:
        raise
    except Exception as err:  # the module's own code failing on fake tensors: one sentence
        raise RecordError(f"{part.name} does not run on fake tensors ({err.__class__.__name__}: "
                          f"{str(err).splitlines()[0][:200]})") from None
    finally:
        recorder.close()
    return recorder.result


def autocast_mode(part: Part):
    """CUDA autocast's op lists replayed (:mod:`.autocast`) when ``part`` is recorded under mixed precision."""
    if not part.autocast:
        return contextlib.nullcontext()
    from .autocast import mode

    return mode(part.autocast)


def _first_tensor(out):
    torch = _torch()
    if isinstance(out, torch.Tensor):
        return out
    if isinstance(out, dict):
        out = list(out.values())
    if hasattr(out, "to_tuple"):
        out = out.to_tuple()
    for value in out if isinstance(out, (list, tuple)) else ():
        found = _first_tensor(value) if not isinstance(value, (int, float, str)) else None
        if found is not None:
            return found
    return None


# ---- fitting -------------------------------------------------------------------------------------------------------
def monomials(part: Part) -> list[tuple[int, ...]]:
    """The exponents of the polynomial's terms: 1, each x_i, and at degree 2 each x_i² and x_i·x_j."""
    n = len(part.variables)
    unit = [tuple(int(i == k) for k in range(n)) for i in range(n)]
    out = [(0,) * n, *unit]
    if part.degree == 2:
        out += [tuple(2 * e for e in u) for u in unit]
        out += [tuple(a + b for a, b in zip(unit[i], unit[j], strict=True)) for i in range(n) for j in range(i + 1, n)]
    return out


def points(part: Part) -> list[tuple[int, ...]]:
    """Sizes at which the terms are solved for (as many as terms): the base, each variable at its second (and
    third) value alone, and at degree 2 each pair at their second values."""
    n = len(part.variables)

    def changed(values: dict[int, int]) -> tuple[int, ...]:
        return tuple(values.get(i, part.base[i]) for i in range(n))

    out = [part.base, *(changed({i: part.second[i]}) for i in range(n))]
    if part.degree == 2:
        out += [changed({i: part.third[i]}) for i in range(n)]
        out += [changed({i: part.second[i], j: part.second[j]}) for i in range(n) for j in range(i + 1, n)]
    return out


# batches of the fitting passes and of the check: not 1, which some modules special-case (FLUX's single blocks copy
# one tensor fewer at batch 1), so that what is fitted holds for every batch from 2, and batch 1 stays within a kernel
FIT_BATCHES = (2, 3)
CHECK_BATCH = 4


def _sizes(part: Part) -> list[tuple[int, tuple[int, ...]]]:
    """(batch, sizes) of the fitting passes, each of :func:`points` at each of :data:`FIT_BATCHES`, and last the
    check (:data:`CHECK_BATCH`, every variable at its check value)."""
    return [*((b, x) for b in FIT_BATCHES for x in points(part)), (CHECK_BATCH, part.check)]


def _solve(rows: list[list[Fraction]], values: list[Fraction]) -> list[Fraction]:
    """Gaussian elimination in fractions (the systems are small and exact)."""
    n = len(values)
    m = [[*row, v] for row, v in zip(rows, values, strict=True)]
    for col in range(n):
        pivot = next(r for r in range(col, n) if m[r][col] != 0)
        m[col], m[pivot] = m[pivot], m[col]
        for r in range(n):
            if r != col and m[r][col] != 0:
                f = m[r][col] / m[col][col]
                m[r] = [a - f * b for a, b in zip(m[r], m[col], strict=True)]
    return [m[i][n] / m[i][i] for i in range(n)]


def _fit(values: Sequence[int], part: Part) -> tuple[Poly, tuple]:
    """The polynomial through the fitting passes of :func:`_sizes` (their values, in that order)."""
    terms = monomials(part)
    xs = points(part)
    rows = [[Fraction(math.prod(x**e for x, e in zip(point, exps, strict=True))) for exps in terms] for point in xs]
    k = len(xs)
    one = _solve(rows, [Fraction(v) for v in values[:k]])
    two = _solve(rows, [Fraction(v) for v in values[k:2 * k]])
    b1, b2 = FIT_BATCHES
    slopes = [(b - a) / (b2 - b1) for a, b in zip(one, two, strict=True)]
    exact = [(exps, a - q * b1, q) for exps, a, q in zip(terms, one, slopes, strict=True)]
    return Poly(tuple((exps, float(p), float(q)) for exps, p, q in exact)), tuple(exact)


def _predict(exact: tuple, batch: int, sizes: tuple[int, ...]) -> Fraction:
    return sum((p + q * batch) * math.prod(x**e for x, e in zip(sizes, exps, strict=True)) for exps, p, q in exact)


def _exact(exact: tuple, check: int, part: Part) -> bool:
    return _predict(exact, CHECK_BATCH, part.check) == check


def record(part: Part) -> Profile:
    """The profile of ``part`` (see the module docstring); raises :class:`RecordError` where it is not."""
    runs = _sizes(part)
    passes = [run_pass(part, "inference", batch, sizes, record_ops=True) for batch, sizes in runs]
    first = passes[0]
    for p in passes[1:]:
        if [op[:4] for op in p.ops] != [op[:4] for op in first.ops] or p.other_kernels != first.other_kernels \
                or (p.dispatches, p.calls) != (first.dispatches, first.calls):
            raise RecordError(f"{part.name} runs different ops at different sizes: its work is not a polynomial of "
                              f"{', '.join(part.variables)}")
    ops: dict[tuple, int] = {}
    for i, (kind, leaf, role, bias, _) in enumerate(first.ops):
        dims = []
        for d in range(len(DIMS[kind])):
            values = [p.ops[i][4][d] for p in passes]
            fitted, exact = _fit(values[:-1], part)
            if not _exact(exact, values[-1], part):
                raise RecordError(f"{part.name}: {kind} {leaf or ''} dim {DIMS[kind][d]} is not a polynomial of "
                                  f"{', '.join(part.variables)} and the batch")
            dims.append(fitted)
        key = (kind, leaf, role, bias, tuple(dims))
        ops[key] = ops.get(key, 0) + 1
    other_values = [p.other_bytes for p in passes]
    other, exact = _fit(other_values[:-1], part)
    if not _exact(exact, other_values[-1], part):
        raise RecordError(f"{part.name}: its element-wise traffic is not a polynomial of {', '.join(part.variables)}")
    misses: list[float] = []
    memory = {"inference": _memory_fit([p.peaks for p in passes], part, "inference", misses)}
    for way in part.ways:
        if way != "inference":
            memory[way] = _memory_fit([run_pass(part, way, b, s).peaks for b, s in runs], part, way, misses)
    worst = max(misses, default=0.0)
    notes = (f"activation peaks within {100 * worst:.2f} % of the check pass",) if worst else ()
    return Profile(module=part.name, variables=part.variables, dtype=part.dtype, recorded_with=dict(part.versions),
                   ops=tuple(Op(kind=k[0], leaf=k[1], role=k[2], bias=k[3], dims=k[4], count=c)
                             for k, c in ops.items()),
                   other_bytes=other, other_kernels=first.other_kernels, dispatches=first.dispatches,
                   calls=first.calls, memory=memory,
                   params=_params(part), notes=notes)


MEMORY_TOLERANCE = 0.03  # a segment's peak may move between ops as the sizes change: 3 % at the check pass


def _memory_fit(peaks: list[dict[str, int]], part: Part, way: str, misses: list[float]) -> dict[str, Poly]:
    """Each segment's peak as a polynomial, for the segments every pass labels (a backward segment is named by the
    first forward activation it frees, which can change with the sizes: those are left out). Within a segment the
    peak can move from one op to another as the sizes change (which layer's backward holds the most), so the
    largest predicted peak must meet the check pass's within :data:`MEMORY_TOLERANCE`; the miss is kept in
    ``misses``."""
    grid = prune_grid(part.base, part.second)
    out = {}
    for segment in sorted(set.intersection(*(set(p) for p in peaks))):
        poly, _ = _fit([p[segment] for p in peaks[:-1]], part)
        if _grows_with_batch(poly, grid):
            out[segment] = poly
    measured = max(peaks[-1].values())
    # the segments' labels can move between passes (which block's backward, or recomputed forward, held the peak):
    # the pass's peak itself, fitted as one polynomial, is kept instead when it meets the check better
    whole, _ = _fit([max(p.values()) for p in peaks[:-1]], part)
    predicted = max((poly.at(CHECK_BATCH, part.check) for poly in out.values()), default=-math.inf)
    miss = abs(predicted - measured) / max(measured, 1)
    whole_miss = abs(whole.at(CHECK_BATCH, part.check) - measured) / max(measured, 1)
    if whole_miss < miss:
        out, miss, predicted = {"peak": whole}, whole_miss, whole.at(CHECK_BATCH, part.check)
    if miss > MEMORY_TOLERANCE:
        raise RecordError(f"{part.name}: the peak activation memory ({way}) is not a polynomial of "
                          f"{', '.join(part.variables)} and the batch ({measured:,} bytes measured at the check, "
                          f"{predicted:,.0f} predicted)")
    misses.append(miss)
    return prune(out, grid)


PRUNE_BATCHES = (1, 2, 4, 8, 16, 32, 64)


def prune_grid(base: Sequence[int], second: Sequence[int]) -> list[tuple[int, ...]]:
    """The sizes a profile's segments are compared at: each variable at its base and second fitted values and at
    two, four and eight times the second."""
    import itertools

    return list(itertools.product(*[(b, s, 2 * s, 4 * s, 8 * s) for b, s in zip(base, second, strict=True)])) or [()]


def _grows_with_batch(poly: Poly, grid: list[tuple[int, ...]]) -> bool:
    """Whether a segment's peak is a memory at all on the grid: at least 0 at batch 1 and not shrinking as the
    batch grows. A backward segment is named by the first forward activation it frees, and when that changes
    between the fitting passes its "peak" is two different moments fitted as one: a slope below 0 in the batch
    (SD 1.5's ``backward up_blocks.3``, LoRA training: 1.09 GiB fitted at batch 1 where the pass holds 0.77)."""
    return all(poly.at(1, x) >= 0 and poly.at(2, x) >= poly.at(1, x) - 1.0 for x in grid)


def prune(segments: dict[str, Poly], grid: list[tuple[int, ...]]) -> dict[str, Poly]:
    """The segments that are memories (:func:`_grows_with_batch`) and hold the peak, or within 2 % of it,
    somewhere on a grid of batches (1 to 64) and sizes (:func:`prune_grid`): the others can never be the step's
    peak there. The whole pass's peak (``peak``) is kept when it is the only segment."""
    sane = {name: poly for name, poly in segments.items() if _grows_with_batch(poly, grid)}
    if not sane:
        raise RecordError("no segment of the pass grows with the batch: its peak is not a memory gpuplan can fit")
    keep = set()
    for batch in PRUNE_BATCHES:
        for sizes in grid:
            values = {name: poly.at(batch, sizes) for name, poly in sane.items()}
            top = max(values.values())
            keep |= {name for name, v in values.items() if v >= 0.98 * top}
    return {name: poly for name, poly in sane.items() if name in keep}


def _params(part: Part) -> int:
    with quiet():
        module = part.build("inference")
    return sum(p.numel() for p in module.parameters())


def obtain(config: dict[str, Any], part: str, make_part, ways: tuple[str, ...] = ("inference",)) -> Profile:
    """The profile of ``part`` with (at least) ``ways`` recorded: bundled, else from the user cache, else recorded
    now on fake tensors (:mod:`.record`; minutes for a large denoiser, once: the user cache keeps it). A stored
    profile lacking a way gets it recorded and added. ``make_part(ways)`` builds the :class:`~.record.Part`."""
    found = profile.lookup(config, part)
    if found and all(way in found[0].memory for way in ways):
        return found[0]
    import sys
    from dataclasses import replace

    missing = tuple(w for w in ways if not found or w not in found[0].memory)
    print(f"gpuplan: recording the work of this {part} on fake tensors ({', '.join(missing)}; once, cached in "
          f"{profile.user_profiles()})", file=sys.stderr, flush=True)
    with silent_stderr():
        recorded = record(make_part(tuple(dict.fromkeys(("inference", *missing)))))
    if found:
        recorded = replace(found[0], memory={**found[0].memory, **recorded.memory})
    profile.store(config, part, recorded)
    return recorded
