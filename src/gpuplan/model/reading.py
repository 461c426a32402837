"""How a config is read: by an exact family reader, a structure read off transformers (stored or traced now), or
the common config keys, and whether the result is exact (and if not, why, in one sentence with the fix)."""

from __future__ import annotations

import importlib.util
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..errors import GpuplanError
from . import conventions
from .architectures import READERS
from .conventions import Keys as Config

# Families whose reader is exact: the family readers above, and the families the conventions reader counts
# exactly (every causal-LM architecture of transformers is swept by tests/model/test_model_sweep.py: a family is listed
# here only while its default config and every bundled config of it count exactly).
CONVENTION_EXACT = (
    "cwm", "deepseek_v2", "deepseek_v32", "ernie4_5", "ernie4_5_moe", "falcon_h1", "glm4_moe", "glm_moe_dsa",
    "granite", "granitemoe", "granitemoehybrid", "granitemoeshared", "helium", "internlm3", "iquestcoder", "llama4",
    "llama4_text", "minicpm3", "minimax_m2", "ministral3", "qwen3_5", "qwen3_5_moe", "qwen3_5_moe_text", "qwen3_5_text",
    "qwen3_next", "smollm3", "solar_open", "vaultgemma", "youtu")
EXACT_READERS: dict[str, Callable[[Config], dict]] = {
    **READERS, **{family: (lambda c: conventions.read(c.data)) for family in CONVENTION_EXACT}}
TOWER_READERS = ("gemma3",)  # readers that count a vision tower too
TOWER_KEYS = ("vision_config", "audio_config", "vision_tower", "speech_config")
# what the common keys leave to assumption, said with every count read that way
ASSUMED = ("assumed: a gated SwiGLU MLP of intermediate_size, or 4 x hidden_size when absent; an untied head unless "
           "tie_word_embeddings is true; no biases, no position table")


@dataclass(frozen=True, kw_only=True)
class Reading:
    """How a config was read: the architecture fields, notes, and whether the counts are exact (and if not,
    why, in one sentence with the fix)."""

    arch: dict[str, Any]
    notes: list[str] = field(default_factory=list)
    counted_by: str
    inexact_reason: str | None = None


def _can_trace() -> bool:
    return all(importlib.util.find_spec(m) is not None for m in ("torch", "transformers"))


def family_of(config: dict[str, Any]) -> str:
    """The family a config is of: its ``model_type``; without one, the ``model_type`` transformers files the class
    its ``architectures`` names under (transformers ``models/auto/modeling_auto.py``, the ``*_MAPPING_NAMES``
    tables: Qwen2ForCausalLM -> qwen2, so the launchers' family checks read it as that family's config), else that
    class's name, else ``unknown`` (never the text "None")."""
    given = config.get("model_type")
    if isinstance(given, str) and given:
        return given
    named = (config.get("architectures") or [None])[0]
    if not isinstance(named, str) or not named:
        return "unknown"
    return _filed_under().get(named, named)


def _filed_under() -> dict[str, str]:
    """transformers' model classes -> the model_type each is filed under (empty without transformers)."""
    if importlib.util.find_spec("transformers") is None:
        return {}
    from transformers.models.auto import modeling_auto

    found: dict[str, str] = {}
    for key, table in vars(modeling_auto).items():
        if key.endswith("_MAPPING_NAMES") and isinstance(table, dict):
            for model_type, classes in table.items():
                for name in classes if isinstance(classes, (tuple, list)) else (classes,):
                    found.setdefault(name, model_type)
    return found


# transformers' tables of the classes that generate text (decoders, multimodal decoders), and of encoders' tasks: a
# family filed under none of the first is no decoder LLM when its layers keep no cache (NomicBertModel) or when it
# is filed under an encoder's task (EuroBERT, ConvBERT: masked LM; DINOv2: image classification); GPT-1's and
# RWKV's causal LMs keep nothing in transformers' cache either and stay decoders, and the text halves of
# multimodal decoders (qwen2_5_vl_text) are filed under neither
GENERATING_TABLES = ("MODEL_FOR_CAUSAL_LM_MAPPING_NAMES", "MODEL_FOR_IMAGE_TEXT_TO_TEXT_MAPPING_NAMES",
                     "MODEL_FOR_MULTIMODAL_LM_MAPPING_NAMES")
ENCODER_TABLES = ("MODEL_FOR_MASKED_LM_MAPPING_NAMES", "MODEL_FOR_IMAGE_CLASSIFICATION_MAPPING_NAMES",
                  "MODEL_FOR_BACKBONE_MAPPING_NAMES", "MODEL_FOR_CTC_MAPPING_NAMES",
                  "MODEL_FOR_AUDIO_CLASSIFICATION_MAPPING_NAMES")


def not_a_decoder(config: dict[str, Any], cached: bool) -> bool:
    """Whether transformers files the config's ``model_type`` (or the class its ``architectures`` names) under no
    class that generates text, and either its layers keep no cache (``cached`` False) or it is filed under an
    encoder's task (:data:`GENERATING_TABLES`, :data:`ENCODER_TABLES`); False without transformers."""
    if importlib.util.find_spec("transformers") is None:
        return False
    from transformers.models.auto import modeling_auto

    named = set(config.get("architectures") or ()) if isinstance(config.get("architectures"), list) else set()

    def filed(tables: tuple[str, ...]) -> bool:
        found = [getattr(modeling_auto, name, {}) for name in tables]
        return any(config.get("model_type") in table or named & set(table.values()) for table in found)

    return not filed(GENERATING_TABLES) and (not cached or filed(ENCODER_TABLES))


def _one_size_each(config: dict[str, Any], model_type: str) -> None:
    """The exact family readers take one width for every layer: a list there (the per-layer form Gemma 3n writes,
    which the validator lets through) ended in a TypeError inside the reader (session 7's walk: a Llama config with
    ``intermediate_size: [1, 2]``)."""
    for part in (config, config.get("text_config") or {}):
        for key in ("intermediate_size", "moe_intermediate_size"):
            if isinstance(part.get(key), list):
                raise GpuplanError(f"config.json of model_type {model_type!r}: {key} is a list (one per layer or "
                                   f"part), and {model_type} configs give one number; fix the file or pass the "
                                   "model's original config.json")


def read_architecture(config: dict[str, Any], *, use_transformers: bool = True) -> Reading:
    """Read a config, exactly when possible, in this order:

    1. a family reader of :data:`EXACT_READERS` (no transformers needed);
    2. a structure read off transformers earlier: bundled with gpuplan (always used), or from the user cache
       (used when read with the installed transformers, or when transformers cannot run) (:mod:`.structure`);
    3. transformers on the meta device, when installed (:mod:`.trace`; one line on stderr says so, and the
       structure is then cached);
    4. the common config keys (:mod:`.conventions`): not exact, and the reading says so.

    A config none of these can read raises :class:`GpuplanError` naming the missing key.
    """
    model_type = config.get("model_type")
    reader = EXACT_READERS.get(model_type)
    if reader is not None:
        _one_size_each(config, model_type)
    tower = next((key for key in TOWER_KEYS if config.get(key)), None)
    if reader is not None and (tower is None or model_type in TOWER_READERS):
        return Reading(arch=reader(Config(config)), counted_by=f"gpuplan's {model_type} reader")
    from . import structure  # the structures read off transformers: only past the family readers

    stored = structure.lookup(config)
    installed = structure.installed_transformers()
    if stored and (stored.bundled or installed is None or stored.version == installed or not use_transformers):
        arch, notes, problem = stored.traced
        where = "bundled" if stored.bundled else "stored"
        return Reading(arch=arch, notes=notes, counted_by=f"transformers {stored.version} on the meta device ({where})",
                       inexact_reason=problem)
    failure = None
    if use_transformers and _can_trace():
        from .trace import TraceError, trace

        progress = (f"gpuplan: reading the structure of this {family_of(config)} model off transformers {installed} "
                    f"(once; cached in {structure.user_folder()})")
        try:
            arch, notes, problem = traced = trace(config, progress=progress)
        except TraceError as err:
            failure = str(err)
        else:
            structure.store(config, traced)
            return Reading(arch=arch, notes=notes, counted_by=f"transformers {installed} on the meta device",
                           inexact_reason=problem)
    if stored:
        arch, notes, problem = stored.traced
        return Reading(arch=arch, notes=[*notes, f"read with transformers {stored.version}; {failure}"],
                       counted_by=f"transformers {stored.version} on the meta device (stored)",
                       inexact_reason=problem)
    try:
        arch = reader(Config(config)) if reader is not None else conventions.read(config)
    except GpuplanError as err:
        raise GpuplanError(f"{err}{f' ({failure})' if failure else ''}") from None
    if reader is not None:  # an exact family reader, but the checkpoint also holds a tower it cannot count
        reason = (f"its {tower.removesuffix('_config')} tower ({tower}) is not counted without transformers: "
                  "install transformers (pip install 'gpuplan[sim]') for an exact count")
        if failure:
            reason = f"{failure}; {reason}"
    elif failure:
        reason = (f"{failure}; its counts come from the config's common keys and may be off (once transformers "
                  "builds it, gpuplan counts it exactly and gpuplan simulate checks it)")
    elif use_transformers:
        reason = (f"model_type {model_type!r} has no exact reader in gpuplan: its counts come from the config's "
                  f"common keys and may be off ({ASSUMED}); install transformers (pip install 'gpuplan[sim]') for "
                  "an exact count, or check with gpuplan simulate")
    else:
        reason = f"model_type {model_type!r} is read from the config's common keys, not counted exactly ({ASSUMED})"
    return Reading(arch=arch, counted_by="the common config keys", inexact_reason=reason)
