"""The token counts of a dataset file, kept between runs: the second ``--dataset`` run on the same file reads them
instead of tokenizing again.

An entry is keyed by what the counts depend on: the SHA-256 of the file's bytes, of each file the tokenizer is read
from (``tokenizer.json``, and ``tokenizer_config.json`` and ``chat_template.jinja`` where they are), the installed
``tokenizers`` and ``jinja2`` releases, the sampling limit (:data:`gpuplan.dataset.read.SAMPLE_RECORDS`) and
:data:`FORMAT` (raised when the counting rules change). A renamed or
touched file with the same bytes hits; an edited one misses. Hugging Face dataset ids are streamed and not kept.

The entries live in the user's cache folder (:func:`gpuplan.userdirs.cache_dir`, ``datasets/``), one JSON file
each, named by the key's hex digest only. The folder is bounded: at most :data:`MAX_ENTRIES` entries and
:data:`MAX_TOTAL_BYTES` in all, the least recently used removed first. An entry is a file like any the user gives
(anything may have written it): read by :func:`gpuplan.userfiles.load_json` (size, encoding and nesting bounded)
and every field checked; an entry that fails is dropped and the file tokenized again, never trusted, never an
error. Writes go to a temporary file renamed into place, so a reader never sees half an entry.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import math
import os
import time
from importlib import metadata
from pathlib import Path
from typing import Any

from .. import userfiles
from ..clock import count_in_time
from ..errors import GpuplanError
from ..userdirs import cache_dir
from ..userfiles import cache_entry, load_json, user_path
from . import read
from .lengths import Lengths
from .tokenize import tokenizer_files

# the layout of an entry and the counting rules behind it: raise when either changes (2: a record whose text is
# not a string is refused, no longer counted as one token; 3: ShareGPT turns, from/value, are counted, not empty;
# 4: the chat records with no assistant turn are counted, no_reply; 5: a tokenizer.json's saved padding and
# truncation no longer apply, s25-sec; 6: a chat turn whose role is not text, or whose content is a number or an
# object, is refused, no longer counted as its str(), fuzz_s31)
FORMAT = 6
MAX_ENTRIES = 64
MAX_ENTRY_BYTES = 16 * 2**20  # 200,000 records (read.SAMPLE_RECORDS) of three counts each take about 4 MB
MAX_TOTAL_BYTES = 256 * 2**20
MAX_RECORDS = 200_000  # tokenized records an entry may hold: read.SAMPLE_RECORDS
STALE_WRITE_S = 3600  # a temporary file this old is a write that died: trimmed
MAX_NOTES, MAX_TEXT = 16, 2_000
KINDS = {"messages", "prompt-completion", "text"}


def folder() -> Path:
    return cache_dir() / "datasets"


def file_digest(path: Path, deadline: float | None = None) -> str:
    """SHA-256 of a file's bytes, read in 1 MiB pieces; :class:`gpuplan.clock.CountOverdue` once
    ``time.monotonic()`` passes ``deadline``, read after each piece."""
    h = hashlib.sha256()
    with path.open("rb") as f:
        for piece in iter(lambda: f.read(2**20), b""):
            h.update(piece)
            count_in_time(deadline)
    return h.hexdigest()


def _release(package: str) -> str:
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return "none"


def key(dataset: Path, tokenizer_files: list[Path], deadline: float | None = None) -> str:
    """The entry's name: what the counts depend on, hashed (module docstring); the dataset read by ``deadline``
    (:func:`file_digest`)."""
    parts = {"format": FORMAT, "sample": read.SAMPLE_RECORDS, "dataset": file_digest(dataset, deadline),
             "tokenizer": {p.name: file_digest(p) for p in tokenizer_files},
             "tokenizers": _release("tokenizers"), "jinja2": _release("jinja2")}
    return hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).hexdigest()


def load(name: str) -> Lengths | None:
    """The counts kept under ``name``, or None (none kept, or an entry that fails its checks: it is removed)."""
    path = folder() / f"{name}.json"
    if not path.is_file():
        return None
    try:
        lengths = _lengths(load_json(path, "dataset cache", limit=MAX_ENTRY_BYTES))
    except (GpuplanError, OSError, ValueError, TypeError):
        lengths = None
    with contextlib.suppress(OSError):  # another run may have trimmed it meanwhile
        if lengths is None:
            path.unlink(missing_ok=True)
        else:
            os.utime(path)  # used now: the last to go when the folder is trimmed
    return lengths


def _counts(value: Any) -> tuple[int, ...] | None:
    ok = isinstance(value, list) and 0 < len(value) <= MAX_RECORDS and all(
        type(x) is int and 0 <= x < 2**31 for x in value)
    return tuple(value) if ok else None


def _lengths(data: Any) -> Lengths | None:
    """An entry's data as :class:`Lengths`, or None when any field is not what :func:`store` writes."""
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        return None
    content, special, loss = (_counts(data.get(k)) for k in ("content", "special", "loss"))
    scale, samples, kind, notes = data.get("scale"), data.get("samples"), data.get("kind"), data.get("notes")
    no_reply = data.get("no_reply")
    if content is None or special is None or loss is None or not len(content) == len(special) == len(loss):
        return None
    if not (isinstance(scale, float | int) and math.isfinite(scale) and 1 <= scale <= 1e9):
        return None
    if not (type(samples) is int and len(content) <= samples <= 1e12):
        return None
    if not (type(no_reply) is int and 0 <= no_reply <= samples):
        return None
    if not (isinstance(kind, str) and kind and set(kind.split("/")) <= KINDS):
        return None
    if not (isinstance(notes, list) and len(notes) <= MAX_NOTES
            and all(isinstance(n, str) and len(n) <= MAX_TEXT and n.isprintable() for n in notes)):
        return None
    return Lengths(content=content, special=special, loss=loss, scale=float(scale), samples=samples, kind=kind,
                   notes=tuple(notes), no_reply=no_reply)


def store(name: str, lengths: Lengths) -> None:
    """Keep ``lengths`` under ``name``, then trim the folder; a cache that cannot be written is skipped."""
    data = {"format": FORMAT, "content": list(lengths.content), "special": list(lengths.special),
            "loss": list(lengths.loss), "scale": lengths.scale, "samples": lengths.samples, "kind": lengths.kind,
            "notes": list(lengths.notes), "no_reply": lengths.no_reply}
    if cache_entry(folder(), f"{name}.json", json.dumps(data, separators=(",", ":")), entries=MAX_ENTRIES,
                   total_bytes=MAX_TOTAL_BYTES):  # written under a hidden temporary name, the folder trimmed
        _stale(folder())


def trim(where: Path) -> None:
    """At most :data:`MAX_ENTRIES` entries and :data:`MAX_TOTAL_BYTES` in ``where``: the least recently used go
    (:func:`gpuplan.userfiles.trim`)."""
    userfiles.trim(where, entries=MAX_ENTRIES, total_bytes=MAX_TOTAL_BYTES)
    _stale(where)


def _stale(where: Path) -> None:
    """What a write of a release before session 18 left when it died half way (``*.tmp``; the hidden temporary
    names of :func:`gpuplan.userfiles.cache_entry` are swept by it)."""
    now = time.time()
    for p in where.glob("*.tmp"):  # not one under way in another process
        with contextlib.suppress(OSError):
            if now - p.stat().st_mtime > STALE_WRITE_S:
                p.unlink()


def name_of(source: str, tokenizer: str, deadline: float | None = None) -> str | None:
    """The entry for the file ``source`` tokenized by ``tokenizer`` (:func:`key`, its bytes read by ``deadline``),
    or None when either is not there to hash (the reader says why)."""
    path = user_path(source)
    files = tokenizer_files(tokenizer) if path.is_file() else None
    return key(path, files, deadline) if files else None
