"""Files made by changing a valid fixture a little: one or two values deep inside a JSON, JSON lines, YAML or CSV
file replaced by a value of another type, a boundary, NaN, a huge number or a long list, a key dropped, or an item
repeated; so that every reader meets files that are nearly right, not only the hand-written broken ones.

A case carries the files it made (name -> bytes); the runner writes them into the run's folder before it runs.
"""

from __future__ import annotations

import contextlib
import csv
import io
import json
import math
import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import yaml

VALUES = [None, True, False, 0, -1, -0.0, 1, 2**31, 2**63, 10**30, 1e308, -1e308, math.nan, math.inf, -math.inf,
          1e-320, 0.5, "", " ", "x", "nan", "1e999", "../../etc/passwd", "\u202e", "a" * 10_000, [], {}, [None],
          {"": None}, [[[[[]]]]], ["x"] * 1000, list(range(100))]
_made: list[dict[str, bytes]] = []


@contextlib.contextmanager
def collecting() -> Iterator[dict[str, bytes]]:
    """The files :func:`made_file` makes while drawing one case."""
    files: dict[str, bytes] = {}
    _made.append(files)
    try:
        yield files
    finally:
        _made.pop()


def made_file(r: random.Random, source: Path) -> str | None:
    """The name (relative to the run's folder) of a file made from ``source`` with a value or two changed, or
    None when ``source`` is not a file of a format this changes (or no case is collecting)."""
    if not _made or not source.is_file():
        return None
    data = change(r, source)
    if data is None:
        return None
    files = _made[-1]
    name = f"made{len(files)}-{source.stem[:20]}{source.suffix}"
    files[name] = data
    return name


def change(r: random.Random, source: Path) -> bytes | None:
    """``source``'s bytes with a value or two changed; None when it is not a file this reads (or reads at all)."""
    try:
        return _change(r, source)
    except (OSError, ValueError, RecursionError, yaml.YAMLError, csv.Error):  # a broken fixture: left as it is
        return None


def _change(r: random.Random, source: Path) -> bytes | None:
    suffix = source.suffix.lower()
    text = source.read_text(encoding="utf-8-sig")
    if suffix == ".json":
        return _dump_json(_mutate(r, json.loads(text)))
    if suffix == ".jsonl":
        records = [json.loads(line) for line in text.splitlines() if line.strip()]
        if not records:
            return None
        i = r.randrange(len(records))
        records[i] = _mutate(r, records[i])
        if r.random() < 0.2:
            records *= r.choice([2, 50])
        return "".join(_dump_json(x).decode() for x in records).encode()
    if suffix in (".yaml", ".yml"):
        return yaml.safe_dump(_mutate(r, yaml.safe_load(text)), allow_unicode=True, sort_keys=False).encode()
    if suffix == ".csv":
        return _mutate_csv(r, text)
    return None


def _dump_json(value: Any) -> bytes:
    return (json.dumps(value, allow_nan=True, ensure_ascii=False) + "\n").encode()


def _places(value: Any, path: tuple = ()) -> list[tuple]:
    """Every path (keys and indices) to a value inside ``value``, its root included."""
    out = [path]
    if isinstance(value, dict):
        for k, v in value.items():
            out += _places(v, (*path, k))
    elif isinstance(value, list):
        for i, v in enumerate(value[:20]):
            out += _places(v, (*path, i))
    return out


def _mutate(r: random.Random, value: Any) -> Any:
    for _ in range(r.choice([1, 1, 2])):
        places = [p for p in _places(value) if p]
        if not places:
            return r.choice(VALUES)
        path = r.choice(places)
        parent = value
        for key in path[:-1]:
            parent = parent[key]
        key = path[-1]
        pick = r.random()
        if pick < 0.15 and isinstance(parent, dict):
            del parent[key]
        elif pick < 0.25 and isinstance(parent, list):
            parent.extend([parent[key]] * r.choice([10, 1000]))
        elif pick < 0.35 and isinstance(parent[key], (int, float)) and not isinstance(parent[key], bool):
            parent[key] = parent[key] * r.choice([-1, 0, 1e6, 1e300, 0.5]) if math.isfinite(parent[key]) else 0
        else:
            parent[key] = r.choice(VALUES)
    return value


def _mutate_csv(r: random.Random, text: str) -> bytes:
    csv.field_size_limit(2**31 - 1)  # the fixtures' own long fields
    rows = list(csv.reader(io.StringIO(text)))
    if len(rows) < 2:
        return text.encode()
    i = r.randrange(1, len(rows))
    j = r.randrange(len(rows[i])) if rows[i] else 0
    cell = r.choice(["", "-1", "0", "nan", "inf", "1e308", "1e-300", "99999999999999999999", "x", "a,b", '"',
                     "\u202e", "2026-02-30", "1900-01-01", "9999-12-31", "../../x", "a" * 5000])
    if rows[i]:
        rows[i][j] = cell
    if r.random() < 0.2:
        rows.append(rows[i][:-1])  # a short row
    out = io.StringIO()
    csv.writer(out, lineterminator="\n").writerows(rows)
    return out.getvalue().encode()
