"""Models that are not decoder LLMs: diffusion pipelines, encoder-decoders (Whisper, T5, BART) and encoders (ViT,
CLIP, SigLIP), each a set of components built by their own library's class.

A :class:`ModuleSpec` is what gpuplan knows of such a model: its components (denoiser, VAE and text encoders of a
diffusion pipeline; the one model of a Whisper checkpoint), each with its class, config and exact parameter count
(the real class built on the meta device: :mod:`.diffusers`, :mod:`.encoders`), and the defaults its pipeline runs
with (resolution, steps, guidance, text tokens; audio frames). The work and activation memory of each component
come from its profile (:mod:`.profile`). Your own ``nn.Module`` is kind ``module``: one component, which carries
the profile its ``build()`` gave on fake tensors (:func:`gpuplan.sim.module.module_spec`).

:class:`~.kinds.NotADecoder` is raised where a command that plans decoder LLMs meets one of these: it carries the
spec, so the commands that plan them (``estimate``, ``simulate``, ``model``) take it, and the others say so in one
sentence.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

KINDS = {"diffusion": "a diffusion pipeline", "encoder-decoder": "an encoder-decoder model",
         "encoder": "an encoder model", "module": "your own PyTorch module"}


@dataclass(frozen=True, kw_only=True)
class Component:
    """One model of a pipeline: its ``name`` in the pipeline (``unet``, ``transformer``, ``vae``,
    ``text_encoder_2``; ``model`` for a single model), its ``role`` (``denoiser``, ``vae``, ``text_encoder``,
    ``model``), the library and class that build it, its config, and its exact parameter count."""

    name: str
    role: str
    library: str
    cls: str
    config: dict[str, Any] = field(hash=False, compare=False, repr=False)
    params: int
    tensors: int = 0  # its parameter tensors where counted (a bundled encoder's, on the meta device), else 0
    dtype: str = "bfloat16"  # the dtype its weights ship in
    # the component's profile when it was recorded just now rather than read by its config (your own module,
    # gpuplan.sim.module.module_spec): the plan reads it as it reads a bundled one
    profile: Any = field(default=None, hash=False, compare=False, repr=False)


@dataclass(frozen=True, kw_only=True)
class ModuleSpec:
    """A model that is not a decoder LLM (see the module docstring). ``defaults``: what its pipeline runs with
    when the scenario does not say (``resolution``, ``steps``, ``cfg``, ``text_tokens``; ``encoder_frames``)."""

    name: str
    kind: str
    family: str
    components: tuple[Component, ...]
    defaults: dict[str, Any] = field(default_factory=dict, hash=False, compare=False)
    counted_by: str = ""
    notes: tuple[str, ...] = ()

    @property
    def params_total(self) -> int:
        return sum(c.params for c in self.components)

    def role(self, role: str) -> tuple[Component, ...]:
        return tuple(c for c in self.components if c.role == role)

    @property
    def main(self) -> Component:
        """The component that does the work: the denoiser of a pipeline, else the model itself."""
        return next((c for c in self.components if c.role in ("denoiser", "model")), self.components[0])

    def describe(self) -> str:
        return f"{self.name} is {KINDS.get(self.kind, self.kind)} ({self.family})"
