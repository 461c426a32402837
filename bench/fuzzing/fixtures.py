"""Fixture files and paths for the fuzzer's values: the committed and generated fixture folders, valid files with a
value or two changed (:mod:`.mutate`), hostile paths and output targets. Used by the command-line draws
(:mod:`.draw`), their recipes (:mod:`.recipes`), the API calls (:mod:`.api`) and the page's calls (:mod:`.web`).
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from pathlib import Path

from . import values as V
from .mutate import made_file


@dataclass
class Fixtures:
    """Where fixture files are: the committed ``tests/data/fuzz`` and the generated folder (``make.py``)."""

    roots: list[Path] = field(default_factory=list)
    _listed: dict[str, tuple[list[Path], list[Path]]] = field(default_factory=dict, repr=False)

    def files(self, kind: str) -> tuple[list[Path], list[Path]]:
        if kind not in self._listed:
            valid, other = [], []
            for root in self.roots:
                v, o = V.fixture_files(root, kind)
                valid += v
                other += o
            self._listed[kind] = (valid, other)
        return self._listed[kind]


HOSTILE_PATHS = ["", " ", "missing.yaml", "/nonexistent/dir/file.json", "/dev/zero", "/dev/null", "/etc/passwd",
                 "/proc/self/environ", ".", "..", "/", "x" * 300 + ".json", "http://127.0.0.1:1/x.json", "hf://org/x",
                 "~nouser/x.yaml", "existing", "afile.txt", "afile.txt/child.json"]
OUT = {
    "folder": (["out", "runs/a/b", "-", "existing"], ["", " ", "afile.txt", "afile.txt/sub", "/proc/gpuplan-fuzz",
                                                      "x" * 300, "../escape-out", "a\nb", "$(touch PWNED)", ".", "/"]),
    "png": (["plot.png", "sub/plot.png"], ["missing/dir/plot.png", "plot.txt", "plot", "", "afile.txt", "existing",
                                           "/proc/x.png", "-", "x" * 300 + ".png"]),
    "yaml": (["cal.yaml", "sub/cal.yaml"], ["", "existing", "missing/dir/cal.yaml", "/proc/x.yaml", "-",
                                            "afile.txt/x.yaml"]),
}


def file_value(r: random.Random, kind: str, hostile: bool, fx: Fixtures) -> str:
    valid, other = fx.files(kind)
    if valid and r.random() < (0.5 if hostile else 0.1):  # a valid file with a value or two changed
        made = made_file(r, r.choice(valid))
        if made:
            return made
    if not hostile and valid:
        return str(r.choice(valid))
    if other and r.random() < 0.7:
        return str(r.choice(other))
    return r.choice(HOSTILE_PATHS + V.HOSTILE_TEXT[:12])


def model_value(r: random.Random, hostile: bool, fx: Fixtures) -> str:
    """A model: a bundled name (mostly), a config.json fixture, or a hostile name or config."""
    if r.random() < 0.2:
        return file_value(r, "configs", hostile, fx)
    return V.named(r, "model", hostile)
