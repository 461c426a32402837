"""The package's own YAML data files (``gpuplan/data``), read through their JSON twins.

PyYAML builds its objects in Python even over libyaml: about 1 ms for each of the small files an estimate reads
(``providers.yaml``, ``models/aliases.yaml``) and a tenth of a second or more for ``gpus.yaml``; ``json`` reads the
same data in a few hundredths of a millisecond. So each file in :data:`TWINS` has a twin beside it (``gpus.yaml`` ->
``gpus.json``) holding ``{"yaml_crc32": ..., <stem>: <the YAML's data>}``, and :func:`read_yaml` takes the twin when
it was made from this very text. A stale or missing twin only costs that time: the YAML, the file people edit, is
what is read then. ``python -m gpuplan.datafiles`` writes the twins again after an edit (a test checks they are
fresh). The check is a CRC-32 (zlib, built in), not a SHA-256: it catches an edit as surely, and hashlib loads
OpenSSL (~10 ms).
"""

from __future__ import annotations

import json
import zlib
from importlib import resources
from pathlib import Path
from typing import Any

# the files read through twins, relative to gpuplan/data: those a first estimate reads (bench/startup.py)
TWINS = ("gpus.yaml", "providers.yaml", "models/aliases.yaml")


def _folder() -> Path:
    return Path(str(resources.files("gpuplan") / "data"))


def yaml_crc32(text: str | bytes) -> str:
    """The CRC-32 of a YAML file's text (its UTF-8 bytes, as the file holds them) in hex: what ties its twin to
    it."""
    return f"{zlib.crc32(text.encode('utf-8') if isinstance(text, str) else text):08x}"


def twin_of(name: str) -> Path:
    """The JSON twin's path of the bundled YAML file ``name`` (``models/aliases.yaml`` -> ``models/aliases.json``)."""
    return (_folder() / name).with_suffix(".json")


def _yaml(text: str) -> Any:
    import yaml

    return yaml.load(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))  # libyaml when present


def read_yaml(name: str) -> Any:
    """The data of the bundled YAML file ``name``: from its twin when it is one of :data:`TWINS` and the twin is
    fresh, else the YAML itself (``owning.yaml``, read only when one's own cards are priced, has no twin)."""
    path = _folder() / name
    raw = path.read_bytes()  # the check reads the bytes: decoding and encoding 135 kB of gpus.yaml took 0.5 ms
    try:
        twin = json.loads(twin_of(name).read_bytes())
        if twin.get("yaml_crc32") == yaml_crc32(raw):
            return twin[path.stem]
    except (OSError, ValueError, AttributeError, KeyError):
        pass
    return _yaml(raw.decode("utf-8"))


def write_twin(name: str) -> Path:
    """Write the JSON twin of the bundled YAML file ``name`` beside it; its path."""
    raw = (_folder() / name).read_bytes()
    twin = {"yaml_crc32": yaml_crc32(raw), Path(name).stem: _yaml(raw.decode("utf-8"))}
    twin_of(name).write_text(json.dumps(twin, separators=(",", ":")) + "\n", encoding="utf-8")
    return twin_of(name)


if __name__ == "__main__":  # python -m gpuplan.datafiles: the JSON twins, after editing the YAML files
    for name in TWINS:
        print(f"wrote {write_twin(name)}")
