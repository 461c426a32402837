"""Write the structures of the bundled models that no exact reader counts (a maintenance step, run after adding a
bundled config or upgrading transformers): ``python -m gpuplan.model.bundle``. Needs transformers (the ``sim``
extra)."""

from __future__ import annotations

import json

from .catalog import bundled
from .reading import EXACT_READERS, TOWER_KEYS, TOWER_READERS
from .structure import bundled_folder, store
from .trace import trace


def bundle() -> list[str]:
    """Trace every bundled model that no exact reader counts and write its structure to the bundled folder."""
    written = []
    for repo, path in bundled().items():
        config = json.loads(path.read_text(encoding="utf-8"))
        family = config.get("model_type")
        tower = any(config.get(key) for key in TOWER_KEYS)
        if family in EXACT_READERS and (not tower or family in TOWER_READERS):
            continue
        store(config, trace(config), folder=bundled_folder())
        written.append(repo)
    return written


if __name__ == "__main__":
    for repo in bundle():
        print(f"wrote the structure of {repo}")
