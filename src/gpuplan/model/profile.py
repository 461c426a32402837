"""The work and activation memory of a real ``nn.Module`` as a function of its input's sizes, recorded once on fake
tensors (:mod:`.record`) and read without torch.

A profile holds what one forward pass of the module runs, op by op: every ``nn.Linear`` and convolution as the
GEMM it is (``M x K`` times ``K x N``; a convolution as the implicit GEMM cuDNN runs, ``M = batch x output
pixels``, ``K = in_channels x kernel area / groups``), every attention call (``scaled_dot_product_attention``:
query and key lengths, head size), every other matrix product, and the bytes every other kernel reads and writes.
Each size is a polynomial in the input's sizes ``x_i`` (latent pixels, text tokens, audio frames...) of degree 1
(degree 2 for modules that materialize a score per pair of tokens), affine in the batch ``B``: ``Σ (p + q·B)·Π
x_i^e_i``. Forward passes on fake tensors at batch 2 and 3, at as many sizes as the polynomial has terms, fix the
coefficients exactly, and one more at batch 4 and other sizes must be met, or no profile is made
(:mod:`.record`). The peak bytes of
activations are recorded the same way for each way of running the module (inference; training with all weights or
LoRA adapters trained, with or without gradient checkpointing).

So a profile answers any batch and size without torch, exactly where the module's work is such a polynomial
(convolutions and linear layers over pixels or tokens, memory-efficient attention; eager attention's scores at
degree 2), which the verification run checks for the module it was recorded from.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

from .quant import FP8_ALL, FP8_LINEARS  # a module's fp8 storages (read here: text_encoder_storage)

FORMAT = 1
MAX_ENTRIES, MAX_TOTAL_BYTES = 1_000, 64 * 2**20  # the user cache's profiles (~20 KB each), the used last kept
KINDS = ("linear", "conv", "attention", "matmul")


def text_encoder_storage(weights: str, cls: str) -> str:
    """How a text encoder's linears are stored beside a denoiser stored as ``weights``: in fp8 under kohya's
    --fp8_base (every encoder: train_network.py casts each to ``te_weight_dtype``), in quanto's fp8 for T5 under
    ai-toolkit's quantize (model.quantize_te defaults to model.quantize, ostris/ai-toolkit toolkit/config_modules.py;
    toolkit/stable_diffusion_model.py quantizes text_encoder_2 of FLUX and text_encoder_3 of SD3, never CLIP);
    otherwise 16-bit."""
    if weights == FP8_ALL:
        return "fp8"
    return FP8_LINEARS if weights == FP8_LINEARS and cls == "T5EncoderModel" else "16bit"


def storage_format(weights: str) -> str:
    """The stored format of ``weights`` as :func:`gpuplan.model.quant.make_format` names it."""
    return "fp8" if weights in (FP8_ALL, FP8_LINEARS) else weights
# the dims of each kind of op, in order
DIMS = {"linear": ("m", "k", "n"), "conv": ("m", "k", "n"), "matmul": ("batch", "m", "k", "n"),
        "attention": ("batch_heads", "q_len", "kv_len", "head_dim", "value_dim")}


@dataclass(frozen=True)
class Poly:
    """``Σ (p + q·B)·Π x_i^e_i`` over a few monomials of the variables ``x`` (degree 1, or 2 where a module
    materializes scores of every pair of tokens): a size as a function of the batch ``B`` and the input's sizes.
    ``terms``: (exponents, p, q) per monomial."""

    terms: tuple[tuple[tuple[int, ...], float, float], ...]

    def at(self, batch: int, sizes: tuple[float, ...]) -> float:
        total = 0.0
        for exps, p, q in self.terms:
            value = p + q * batch
            for x, e in zip(sizes, exps, strict=True):
                value *= x**e
            total += value
        return total

    def to_json(self) -> list[list]:
        return [[list(exps), p, q] for exps, p, q in self.terms if p or q]

    @classmethod
    def from_json(cls, data: list[list]) -> Poly:
        return cls(tuple((tuple(exps), p, q) for exps, p, q in data))


@dataclass(frozen=True)
class Op:
    """``count`` identical ops of one ``kind`` (:data:`KINDS`) with affine dims (:data:`DIMS`). Linears and
    convolutions carry ``leaf``, the last part of their module's name (``to_q``, ``to_out.0``, ``conv1``), their
    ``role`` (``attention``: a projection of an attention block; ``block``: another linear of a transformer block;
    ``other``), which LoRA targets are matched against, and ``bias``."""

    kind: str
    dims: tuple[Poly, ...]
    count: int = 1
    leaf: str = ""
    role: str = ""
    bias: bool = False

    def at(self, batch: int, sizes: tuple[float, ...]) -> tuple[int, ...]:
        return tuple(round(d.at(batch, sizes)) for d in self.dims)

    def stored_16bit(self, weights: str) -> bool:
        """Whether this linear keeps 16-bit weights when the rest are stored in ``weights``: diffusers' fp8 layerwise
        casting skips modules named like norms and the top-level projections (``hooks/layerwise_casting.py``
        ``DEFAULT_SKIP_MODULES_PATTERN``: the adaptive norms' ``norm1.linear``, ``norm_out.linear``; ``^proj_out$``);
        kohya's ``--fp8_base`` (:data:`FP8_ALL`) casts every weight, ai-toolkit's quanto every linear
        (:data:`FP8_LINEARS`)."""
        return weights == "fp8" and (self.leaf == "linear" or (self.leaf in ("proj_in", "proj_out")
                                                               and self.role == "other"))

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"kind": self.kind, "dims": [d.to_json() for d in self.dims], "count": self.count}
        if self.leaf:
            out["leaf"] = self.leaf
        if self.role:
            out["role"] = self.role
        if self.bias:
            out["bias"] = True
        return out

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Op:
        return cls(kind=data["kind"], dims=tuple(Poly.from_json(d) for d in data["dims"]), count=data["count"],
                   leaf=data.get("leaf", ""), role=data.get("role", ""), bias=bool(data.get("bias", False)))


@dataclass(frozen=True, kw_only=True)
class Profile:
    """One module's forward work and activation memory (see the module docstring). ``other_bytes`` and
    ``other_kernels``: the element-wise, normalization and copy kernels (every non-view op outside linears,
    convolutions and matrix products), their bytes read and written a polynomial like the dims. ``dispatches``
    and ``calls``: every aten op (views too) and every module forward one pass runs, for the host's work.
    ``memory``: peak activation bytes by way of running (``inference``, ``train-full``, ``train-full-gc``,
    ``train-lora-attention``, ...), beyond the weights and the gradients, by segment of the pass (the largest is the
    peak). ``dtype``: the dtype it was recorded in (bytes scale with it)."""

    module: str
    variables: tuple[str, ...]
    ops: tuple[Op, ...]
    other_bytes: Poly
    other_kernels: int
    memory: dict[str, dict[str, Poly]]
    params: int
    dispatches: int = 0
    calls: int = 0
    dtype: str = "bfloat16"
    recorded_with: dict[str, str] = field(default_factory=dict)
    notes: tuple[str, ...] = ()

    @property
    def under_autocast(self) -> bool:
        """Recorded with fp32 weights under autocast (:mod:`.autocast`): its bytes and peaks are at the widths
        autocast gives each tensor, the 16-bit copies of the trained weights among them."""
        return "autocast" in self.dtype

    def flops(self, batch: int, sizes: tuple[float, ...]) -> float:
        """FLOPs of one forward pass (2 per multiply-add; attention: its two products)."""
        total = 0.0
        for op in self.ops:
            d = op.at(batch, sizes)
            if op.kind in ("linear", "conv"):
                total += op.count * 2 * d[0] * d[1] * d[2]
            elif op.kind == "matmul":
                total += op.count * 2 * d[0] * d[1] * d[2] * d[3]
            else:  # q·kᵀ and p·v
                total += op.count * 2 * d[0] * d[1] * d[2] * (d[3] + d[4])
        return total

    def activation_bytes(self, way: str, batch: int, sizes: tuple[float, ...]) -> float:
        """Peak activation bytes of one pass run ``way``: the largest of its segments' peaks."""
        if way not in self.memory:
            raise KeyError(way)
        return max(0.0, *(poly.at(batch, sizes) for poly in self.memory[way].values()))

    def to_json(self) -> dict[str, Any]:
        return {"format": FORMAT, "module": self.module, "variables": list(self.variables), "dtype": self.dtype,
                "params": self.params, "recorded_with": self.recorded_with, "notes": list(self.notes),
                "other_bytes": self.other_bytes.to_json(), "other_kernels": self.other_kernels,
                "dispatches": self.dispatches, "calls": self.calls,
                "memory": {k: {seg: poly.to_json() for seg, poly in v.items()} for k, v in self.memory.items()},
                "ops": [op.to_json() for op in self.ops]}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Profile:
        return cls(module=data["module"], variables=tuple(data["variables"]), dtype=data.get("dtype", "bfloat16"),
                   params=data["params"], recorded_with=dict(data.get("recorded_with") or {}),
                   notes=tuple(data.get("notes") or ()), other_bytes=Poly.from_json(data["other_bytes"]),
                   other_kernels=data["other_kernels"], dispatches=data.get("dispatches", 0),
                   calls=data.get("calls", 0),
                   memory={k: {seg: Poly.from_json(poly) for seg, poly in v.items()}
                           for k, v in data["memory"].items()},
                   ops=tuple(Op.from_json(op) for op in data["ops"]))


# ---- on disk: bundled with gpuplan, then the user cache ----------------------------------------------------------
def profile_key(config: dict[str, Any], part: str) -> str:
    """The file name of a module's profile: SHA-256 of its config (sorted JSON without ``_``-prefixed keys but
    ``_class_name``) and the part of the model profiled (``denoiser``, ``vae-decode``...)."""
    clean = {k: v for k, v in config.items() if not k.startswith("_") or k == "_class_name"}
    text = json.dumps(clean, sort_keys=True, default=str)
    import hashlib  # here: OpenSSL stays off a decoder estimate's path (tests/test_import.py)

    return hashlib.sha256(f"{FORMAT}:{part}:{text}".encode()).hexdigest()[:32]


def bundled_profiles() -> Path:
    return Path(str(resources.files("gpuplan") / "data" / "modules" / "profiles"))


def user_profiles() -> Path:
    from ..userdirs import cache_dir

    return cache_dir() / "profiles"


def lookup(config: dict[str, Any], part: str) -> tuple[Profile, bool] | None:
    """The stored profile of ``part`` of the module ``config`` describes, and whether it is bundled; or None."""
    name = f"{profile_key(config, part)}.json"
    for folder in (bundled_profiles(), user_profiles()):
        try:
            data = json.loads((folder / name).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        if data.get("format") == FORMAT:
            if folder != bundled_profiles():
                from ..userfiles import touch

                touch(folder / name)
            return Profile.from_json(data), folder == bundled_profiles()
    return None


def store(config: dict[str, Any], part: str, profile: Profile, folder: Path | None = None) -> Path | None:
    """Write a profile (to the user cache unless ``folder``); best effort: an unwritable cache costs a recording.
    The folder keeps the :data:`MAX_ENTRIES` used last (a page's uploaded configs filled it without a bound)."""
    from ..userfiles import cache_entry

    folder = folder or user_profiles()
    path = folder / f"{profile_key(config, part)}.json"
    kept = cache_entry(folder, path.name, json.dumps(profile.to_json(), separators=(",", ":")),
                       entries=MAX_ENTRIES, total_bytes=MAX_TOTAL_BYTES)
    return path if kept else None

