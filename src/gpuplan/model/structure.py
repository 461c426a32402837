"""Model structures kept on disk: what :mod:`.trace` read off transformers, one file per config.

The key is the SHA-256 of the config JSON (sorted keys, without the ``_``-prefixed bookkeeping keys) and the
structure format version. A structure is looked up among the structures bundled with gpuplan
(``data/models/structures``, for bundled models whose family no reader of :mod:`.architectures` counts exactly,
such as multimodal checkpoints with their vision towers) and then in the user cache folder
(``userdirs.cache_dir()/models``, written after every trace). A bundled structure is always used, whatever
transformers is installed (a bundled model needs no build; a test checks the shipped files against a fresh trace).
A cached one is used when transformers is not installed, or when it was read with the installed version;
otherwise the model is traced again (meta device, seconds) and the cache refreshed.

Run ``python -m gpuplan.model.bundle`` to rewrite the bundled structures after a transformers upgrade; a
test checks they equal a fresh trace.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from .layers import Layer, Linear

FORMAT = 5  # 2: Gemma 4's top_k_experts read (traces of 1 left its experts per token at 0); 3: every stack of the
#   decoder layer class read (HRM-Text's H_module was 'other'), with the runs of each layer per forward; 4: a cache
#   class of the model's own measured (xLSTM's was read as full attention), a failed prefill said (not exact); 5: the
#   towers' linears (tower_linears: peft's all-linear adapts them)
# the user cache's bound (a structure is ~10 KB): a page's uploaded configs, each traced and kept, filled it without
# one (session 18's security audit)
MAX_ENTRIES, MAX_TOTAL_BYTES = 1_000, 64 * 2**20


def config_key(config: dict[str, Any]) -> str:
    """The cache key of a config: SHA-256 of its sorted JSON without ``_``-prefixed keys, and the format."""
    clean = {k: v for k, v in config.items() if not k.startswith("_")}
    text = json.dumps(clean, sort_keys=True, default=str)
    import hashlib  # (OpenSSL, ~10 ms: only when a structure is looked up, never for a bundled model)

    return hashlib.sha256(f"{FORMAT}:{text}".encode()).hexdigest()[:32]


def installed_transformers() -> str | None:
    """The installed transformers version, read from the package metadata (no import)."""
    from importlib import metadata  # about 10 ms (email, zipfile): only when a structure is looked up

    try:
        return metadata.version("transformers")
    except metadata.PackageNotFoundError:
        return None


def user_folder() -> Path:
    from ..userdirs import cache_dir

    return cache_dir() / "models"


def bundled_folder() -> Path:
    return Path(str(resources.files("gpuplan") / "data" / "models" / "structures"))


def to_json(arch: dict[str, Any], notes: list[str], problem: str | None, version: str | None) -> dict[str, Any]:
    """A structure as JSON: the distinct layers once, and the index of each decoder layer's."""
    distinct: dict[Layer, int] = {}
    pattern = [distinct.setdefault(layer, len(distinct)) for layer in arch["layers"]]
    fields = {k: v for k, v in arch.items() if k != "layers"}
    fields["tower_linears"] = [asdict(lin) for lin in arch.get("tower_linears", ())]
    return {"format": FORMAT, "transformers": version, "notes": notes, "problem": problem, "fields": fields,
            "layers": [asdict(layer) for layer in distinct], "pattern": pattern}


def from_json(data: dict[str, Any]) -> tuple[dict[str, Any], list[str], str | None]:
    kinds = [Layer(**{**layer, "linears": tuple(Linear(**lin) for lin in layer["linears"])})
             for layer in data["layers"]]
    arch = dict(data["fields"], layers=[kinds[k] for k in data["pattern"]])
    arch["tower_linears"] = tuple(Linear(**lin) for lin in arch.get("tower_linears", ()))
    return arch, list(data["notes"]), data.get("problem")


@dataclass(frozen=True)
class Stored:
    """A structure found on disk: what :func:`from_json` reads, the transformers version it was read with, and
    whether it was bundled with gpuplan (else the user cache holds it)."""

    traced: tuple[dict[str, Any], list[str], str | None]
    version: str | None
    bundled: bool


def lookup(config: dict[str, Any]) -> Stored | None:
    """The stored structure of a config, bundled first, or None."""
    name = f"{config_key(config)}.json"
    for folder in (bundled_folder(), user_folder()):
        try:
            data = json.loads((folder / name).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        if data.get("format") != FORMAT:
            continue
        if folder != bundled_folder():
            from ..userfiles import touch

            touch(folder / name)
        return Stored(from_json(data), data.get("transformers"), bundled=folder == bundled_folder())
    return None


def store(config: dict[str, Any], traced: tuple[dict[str, Any], list[str], str | None],
          folder: Path | None = None) -> None:
    """Write a structure to the user cache (best effort: an unwritable cache only costs the next trace), which
    keeps the :data:`MAX_ENTRIES` used last."""
    from ..userfiles import cache_entry

    cache_entry(folder or user_folder(), f"{config_key(config)}.json",
                json.dumps(to_json(*traced, installed_transformers()), indent=1), entries=MAX_ENTRIES,
                total_bytes=MAX_TOTAL_BYTES)
