"""The fuzz fixtures too large, too odd or too machine-specific to commit: written into a scratch folder by
:func:`make` before a campaign (``bench/fuzz.py``) or a test run (``tests/test_fuzz.py``), beside the small ones
committed in this folder (README.md says where each group comes from).

Each is a file (or folder) of one of the kinds the committed subfolders name (``configs``, ``datasets``...), so the
fuzzer draws it wherever it draws that kind: a CSV field over the ``csv`` module's 131,072-character default
limit, nesting 3,000 levels deep in every format gpuplan parses, a record of a million tokens, a symbolic link
that points at itself, a FIFO (reading it would block), names holding a newline and shell text, and a scenario
YAML with a 5 MB comment.
"""

from __future__ import annotations

import contextlib
import json
import os
from pathlib import Path

DEEP = 3000  # levels: three times Python's default recursion limit
LONG_FIELD = 140_000  # characters in one CSV field (the csv module refuses above 131,072 by default)
LONG_RECORD = 1_000_000  # words of one dataset record (the tokenizer below reads each as a token)
HOSTILE_NAME = "m\ntouch PWNED\n$(id)"  # a folder or file name that would break out of a comment line


def deep_json() -> str:
    return "[" * DEEP + "]" * DEEP


def deep_yaml() -> str:
    return "a: " + "[" * DEEP + "]" * DEEP + "\n"


def _write(path: Path, text: str | bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text, encoding="utf-8")
    return path


def _links(folder: Path) -> None:
    """A link to itself, a dangling link and a FIFO, where the platform allows them."""
    for name, target in (("loop.jsonl", "loop.jsonl"), ("dangling.jsonl", "no-such-file.jsonl")):
        link = folder / name
        if not link.is_symlink():
            with contextlib.suppress(OSError):
                link.symlink_to(target)
    fifo = folder / "fifo.jsonl"
    if hasattr(os, "mkfifo") and not fifo.exists():
        with contextlib.suppress(OSError):
            os.mkfifo(fifo)


def make(root: str | Path) -> Path:
    """Write the large and odd fixtures under ``root`` (kind subfolders, as in this folder); returns ``root``."""
    root = Path(root)
    config = json.loads((Path(__file__).parent / "configs" / "ok-llama.json").read_text())
    for kind, suffix in (("configs", ".json"), ("scenarios", ".json"), ("results", ".json"), ("traces", ".json"),
                         ("records", ".json"), ("datasets", ".json"), ("datasets", ".jsonl"),
                         ("tokenizers", ".json")):
        _write(root / kind / f"deep{suffix}", deep_json() + "\n")
    for kind in ("scenarios", "workloads", "calibrations"):
        _write(root / kind / "deep.yaml", deep_yaml())
    _write(root / "datasets" / "long-field.csv", "text\n" + "a" * LONG_FIELD + "\nhello\n")
    _write(root / "offers" / "long-field.csv", "provider,gpu_id\n" + "b" * LONG_FIELD + ",nvidia-l40s\n")
    _write(root / "datasets" / "long-record.jsonl", json.dumps({"text": "hello " * LONG_RECORD}) + "\n")
    _write(root / "scenarios" / "big-comment.yaml", "# " + "x" * 5_000_000 + "\nmodel: gpt2\ntask: infer\n")
    _write(root / "configs" / ("x" * 200 + ".json"), json.dumps(config))
    _write(root / "configs" / HOSTILE_NAME / "config.json", json.dumps(config))
    _write(root / "scenarios" / f"{HOSTILE_NAME}.yaml", "model: qwen2.5-0.5b\ntask: train\nmethod: lora\n")
    for kind in ("datasets", "traces", "results", "records", "scenarios"):
        (root / kind).mkdir(parents=True, exist_ok=True)
        _links(root / kind)
    return root


if __name__ == "__main__":  # python tests/data/fuzz/make.py FOLDER
    import sys

    print(make(sys.argv[1] if len(sys.argv) > 1 else "fuzz-fixtures"))
