"""Which kind of model a model argument names, when it is not a decoder LLM: a diffusion pipeline or one of its
denoisers, an encoder-decoder or an encoder (:mod:`.module`).

Resolution, as :mod:`.catalog` resolves decoders (it asks here first, and raises :class:`NotADecoder` with what it
found; the class is here, not beside :class:`~.module.ModuleSpec`, so that a decoder's plan, which catches it, does
not make the modules' dataclasses):

1. a bundled pipeline or model by repo id or alias (``sdxl``, ``flux-dev``, ``whisper-large-v3``);
2. a local folder with a diffusers ``model_index.json`` (each component's ``<name>/config.json`` beside it), or a
   ``config.json`` (a file or a folder holding one, read once by the catalog and handed to :func:`of_config`) of a
   diffusers class (``_class_name``) or of a transformers family modelled here (Whisper, T5, BART, ViT, CLIP,
   SigLIP);
3. a Hugging Face repo id: its ``model_index.json`` and components' configs when it is a diffusers repo (fetched
   with ``huggingface_hub``, cache first), else its ``config.json`` as for decoders.

A config of a diffusers class or a transformers family that is not modelled is refused in one sentence naming it.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import GpuplanError, normalize_name
from .families import (
    ENCODER_ALONE,
    FAMILIES,
    NOT_DECODERS,
    bidirectional,
    diffusers_class,
    family_named,
    is_encoder_family,
    refuse_unknown,
)

if TYPE_CHECKING:
    from .module_spec import ModuleSpec  # made by the readers of such models (.diffusers, .encoders)


class NotADecoder(GpuplanError):
    """The model is not a decoder LLM: ``spec`` says what it is. Its message says which commands plan it."""

    def __init__(self, spec: ModuleSpec):
        self.spec = spec
        super().__init__(f"{spec.describe()}: `gpuplan estimate`, `recommend`, `cost`, `simulate` and `model` plan "
                         "it; this command plans decoder LLMs")


def named(name: str) -> ModuleSpec | None:
    """A bundled pipeline or model answering to ``name``, or None."""
    from . import diffusers, encoders

    key = normalize_name(name)
    repo = diffusers.pipeline_aliases().get(key)
    if repo:
        return diffusers.bundled_pipeline(repo)
    repo = encoders.model_aliases().get(key)
    if repo:
        return encoders.bundled_model(repo)
    return None


def known_here(name: Any) -> ModuleSpec | None:
    """The module ``name`` names without the hub: a bundled one, a local pipeline folder or a local config of a
    module; None for anything else (a decoder, a repo id, a config that does not read). For the scenario's checks,
    which word their refusals by the model's kind before the model is resolved (the resolver asks the hub)."""
    if not isinstance(name, str) or not name.strip():
        return None
    found = named(name)
    if found:
        return found
    from ..userfiles import user_path
    from .diffusers import read_json

    path = user_path(name)
    try:
        if path.is_dir() and (path / "model_index.json").is_file():
            return pipeline_folder(path)
        config = path / "config.json" if path.is_dir() else path
        if config.is_file():
            return of_config(read_json(config), name)
        return _cached(name)
    except (GpuplanError, OSError, ValueError):  # the resolver says what is wrong with it, in its own words
        return None


def _cached(repo_id: str) -> ModuleSpec | None:
    """The module a repo id names when its files are in the local Hugging Face cache (no network), else None."""
    try:
        from huggingface_hub import try_to_load_from_cache
    except ImportError:
        return None
    from .diffusers import read_json

    def cached(repo: str, filename: str) -> str | None:
        found = try_to_load_from_cache(repo, filename)
        return found if isinstance(found, str) else None

    if cached(repo_id, "model_index.json"):
        return from_hub(repo_id, cached)
    config = cached(repo_id, "config.json")
    return of_config(read_json(Path(config)), repo_id) if config else None


def pipeline_folder(path: Path) -> ModuleSpec:
    """The pipeline a local folder holds: its ``model_index.json`` and each component's ``<name>/config.json``."""
    from .diffusers import read_pipeline_folder

    return read_pipeline_folder(path, path.name)


# transformers heads that no decoder LLM has: a config naming one is an encoder's (BERT, wav2vec 2.0, ViT...)
NOT_DECODER_HEAD = re.compile(r"For(MaskedLM|SequenceClassification|TokenClassification|QuestionAnswering|CTC|"
                              r"AudioClassification|AudioFrameClassification|XVector|ImageClassification|"
                              r"ObjectDetection|SemanticSegmentation|MultipleChoice|PreTraining|SpeechSeq2Seq)$")


def _refuse_encoders_alone(config: dict[str, Any], name: str, named: list[Any]) -> None:
    """Refuse an encoder that a decoder's or an encoder-decoder's family builds: attention both ways
    (:func:`~.families.bidirectional`: EmbeddingGemma's ``Gemma3TextModel``), which would be planned as a decoder
    generating text, or an encoder-decoder's encoder alone (``T5EncoderModel``: :data:`~.families.ENCODER_ALONE`),
    which would be planned with the decoder and LM head it has not."""
    classes = [a for a in named if isinstance(a, str)]
    both_ways = bidirectional(config)
    if both_ways:
        raise refuse_unknown(config, f"{name} ({f'{classes[0]}: ' if classes else ''}{both_ways})")
    alone = next((a for a in classes if a.endswith(ENCODER_ALONE)), None)
    if alone and is_encoder_family(config) and FAMILIES[config["model_type"]][0] == "encoder-decoder":
        family = config["model_type"]
        raise GpuplanError(f"{name}: {alone} is {family}'s encoder alone, and gpuplan plans {family} as the whole "
                           f"encoder-decoder ({FAMILIES[family][1]}, with its decoder and LM head): `gpuplan simulate "
                           "--module my_pkg.my_model:build` measures the encoder you build, on fake tensors")


def of_config(config: Any, name: str) -> ModuleSpec | None:
    """The module a config dict describes, None for a decoder's; a diffusers class or a transformers head that
    gpuplan does not model is refused in one sentence. A decoder's config loads neither :mod:`.diffusers` nor
    :mod:`.encoders` (:mod:`.families` tells them apart)."""
    if not isinstance(config, dict):
        return None
    if diffusers_class(config):
        from .diffusers import component_spec

        return component_spec(name, config)
    unnamed = family_named(config)
    if unnamed:
        given = config.get("model_type")
        said = f"model_type {given!r}" if isinstance(given, str) and given else "no model_type"
        raise GpuplanError(f"{name}: config.json names {said}, and its architectures name a {unnamed} class; "
                           f"gpuplan reads an encoder or encoder-decoder by its model_type (write \"model_type\": "
                           f"\"{unnamed}\", as transformers' config of that class does)")
    named = config.get("architectures")  # its shape is checked where the decoder is read (model/validate.py)
    head = next((a for a in named if isinstance(a, str) and NOT_DECODER_HEAD.search(a)), None) \
        if isinstance(named, list) else None
    _refuse_encoders_alone(config, name, named if isinstance(named, list) else [])
    family = config.get("model_type")
    refused = head or (isinstance(family, str) and family in NOT_DECODERS) or config.get("is_encoder_decoder") is True
    if not (is_encoder_family(config) or refused):
        return None
    if is_encoder_family(config):
        from . import encoders

        return encoders.model_spec(name, config)
    raise refuse_unknown(config, f"{name} ({head})" if head else name)


def from_hub(repo_id: str, fetch) -> ModuleSpec | None:
    """A diffusers repo's pipeline, fetched (``fetch(repo, filename)`` returns a local path or None when the file
    is not there), or None when the repo has no ``model_index.json``."""
    index_path = fetch(repo_id, "model_index.json")
    if index_path is None:
        return None
    from . import diffusers

    index = diffusers.read_json(Path(index_path))
    configs: dict[str, dict[str, Any]] = {}
    for key in diffusers.component_keys(repo_id, index):  # bounded before the first is fetched
        found = fetch(repo_id, f"{key}/config.json")
        if found is not None:
            configs[key] = diffusers.read_json(Path(found))
    if not configs:
        raise GpuplanError(f"{repo_id}: model_index.json lists no component whose config.json could be fetched")
    return diffusers.pipeline_spec(repo_id, index, configs)


def names() -> list[str]:
    """Every bundled module's repo id and aliases (for "did you mean")."""
    from . import diffusers, encoders

    return [*diffusers.pipeline_aliases(), *encoders.model_aliases(), *diffusers.bundled_pipelines(),
            *encoders.bundled_models()]
