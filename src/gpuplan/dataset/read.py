"""The records of a dataset, one dict at a time: JSON Lines, JSON, Parquet and CSV files, or a Hugging Face
dataset id through ``datasets`` (installed with the ``hub`` extra).

Files are streamed: JSON Lines and CSV a line at a time, Parquet a record batch at a time (``pyarrow``, imported
here only), JSON whole (it has no streaming form; up to :data:`MAX_JSON_BYTES`). Text is read by
:mod:`gpuplan.userfiles`: UTF-8 with or without a byte-order mark, nesting and sizes bounded, one sentence naming
the file and line otherwise. A file with more records than :data:`SAMPLE_RECORDS` is read
whole but tokenized in a regular stride (every k-th record), and the report says so and scales its totals.
"""

from __future__ import annotations

import re
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ..clock import count_in_time
from ..errors import GpuplanError
from ..userfiles import (
    MAX_LINE_BYTES,
    csv_records,
    is_file,
    is_folder,
    json_lines,
    load_json,
    relative_to_cwd,
    user_path,
)

HUB_ID = re.compile(r"^[A-Za-z0-9][\w.-]*/[\w.-]+$")  # org/name
FORMATS = {".jsonl": "jsonl", ".ndjson": "jsonl", ".json": "json", ".parquet": "parquet", ".csv": "csv"}
MAX_JSON_BYTES = 256 * 1024 * 1024  # a .json dataset, read whole; JSON Lines, CSV and Parquet stream
# Parquet: records decoded at a time, and how many bytes Arrow may decode per byte of the file (text compresses
# some 2-8 times with snappy or zstd; a repeated value far more, by the dictionary and run-length encodings)
PARQUET_BATCH = 256
PARQUET_EXPANSION = 100
SAMPLE_RECORDS = 200_000  # more than this: tokenize a regular sample of this many records
PROGRESS_EVERY_S = 1.0


def dataset_format(source: str) -> str:
    """``jsonl``, ``json``, ``parquet``, ``csv`` for a file (by its suffix), ``hub`` for a Hugging Face id."""
    path = user_path(source)
    suffix = path.suffix.lower()
    if is_file(path):
        if suffix not in FORMATS:
            raise GpuplanError(f"dataset {source!r}: unknown file type {suffix or '(none)'!r}; gpuplan reads "
                               ".jsonl, .json, .parquet and .csv files")
        return FORMATS[suffix]
    if is_folder(path):
        raise GpuplanError(f"dataset {source!r} is a folder: pass one .jsonl, .json, .parquet or .csv file")
    if suffix in FORMATS or source.startswith((".", "/", "~")) or not HUB_ID.match(source):
        raise GpuplanError(f"no dataset file {source!r}" + relative_to_cwd(source) + (
            "" if suffix in FORMATS else " (a Hugging Face dataset id reads org/name)"))
    return "hub"


CLOCK_LINES = 4096  # lines counted between two readings of the clock (about 3 ms here: 0.7 us a line)


def count_records(source: str, fmt: str, deadline: float | None = None) -> int | None:
    """The number of records without parsing them, where that is cheap (JSON Lines: non-blank lines; Parquet:
    the footer's row count); None otherwise. :class:`gpuplan.clock.CountOverdue` once ``time.monotonic()`` passes
    ``deadline``, read every :data:`CLOCK_LINES` lines: a huge file of tiny records (20 million lines of ``{}``:
    14 s on the loaded 2-core machine) was counted whole before ``--count-timeout``'s clock started."""
    path = user_path(source)
    if fmt == "jsonl":  # in bounded pieces: a line longer than MAX_LINE_BYTES is refused when it is read
        found = 0
        with path.open("rb") as f:
            for i, line in enumerate(iter(lambda: f.readline(MAX_LINE_BYTES), b"")):
                if not i % CLOCK_LINES:
                    count_in_time(deadline)
                found += bool(line.strip())
        return found
    if fmt == "parquet":
        return _parquet_file(path).metadata.num_rows
    return None


def records(source: str, fmt: str) -> Iterator[dict[str, Any]]:
    """Every record of ``source`` as a dict, in file order."""
    path = user_path(source)
    if fmt == "jsonl":
        yield from _jsonl(path)
    elif fmt == "json":
        yield from _json(path)
    elif fmt == "csv":
        yield from csv_records(path, "dataset")
    elif fmt == "parquet":
        yield from _parquet(path)
    else:
        yield from _hub(source)


def _jsonl(path: Path) -> Iterator[dict[str, Any]]:
    for number, item in json_lines(path, "dataset"):
        if not isinstance(item, dict):
            raise GpuplanError(f"{path}, line {number:,}: a JSON {type(item).__name__}, not an object with "
                               "messages, prompt/completion or text")
        yield item


def _json(path: Path) -> Iterator[dict[str, Any]]:
    """A JSON file read whole (JSON has no streaming form), up to :data:`MAX_JSON_BYTES`."""
    data = load_json(path, "dataset", limit=MAX_JSON_BYTES, hint="for one object per line name the file .jsonl")
    if isinstance(data, dict):  # {"train": [...]} or {"data": [...]}: the first list of objects
        data = next((v for v in data.values() if isinstance(v, list)), [data])
    if not isinstance(data, list) or not all(isinstance(x, dict) for x in data):
        raise GpuplanError(f"{path} must hold a list of objects (records with messages, prompt/completion or text)")
    yield from data


SAFE_PYARROW = (14, 0, 1)  # before it, a Parquet schema's extension type was unpickled (CVE-2023-47248)


def _parquet_file(path: Path):
    """The Parquet file, read by a ``pyarrow`` that runs nothing in it: releases 0.14 to 14.0.0 rebuilt a schema's
    ``arrow.py_extension_type`` columns with pickle, code a file carries (CVE-2023-47248, fixed in 14.0.1), and
    gpuplan reads Parquet a user names or the page was sent: an older one is refused in one sentence."""
    import pyarrow as pa

    found = tuple(int(x) for x in re.findall(r"\d+", getattr(pa, "__version__", "") or "")[:3])
    if found < SAFE_PYARROW:
        raise GpuplanError(f"reading {path.name} needs pyarrow 14.0.1 or later (pip install -U pyarrow; this one is "
                           f"{getattr(pa, '__version__', '?')}): older releases run code a Parquet file carries")
    import pyarrow.parquet as pq

    try:
        return pq.ParquetFile(path)
    except (pa.ArrowException, OSError) as err:
        raise GpuplanError(f"{path} is not a Parquet file pyarrow reads ({str(err).splitlines()[0][:160]})") from None


def _parquet(path: Path) -> Iterator[dict[str, Any]]:
    """The records, :data:`PARQUET_BATCH` at a time, while what they hold stays within :data:`PARQUET_EXPANSION`
    times the file's size (at least :data:`~gpuplan.userfiles.MAX_LINE_BYTES`, one JSON Lines record's bound),
    counted before a batch's rows are made: a Parquet file's dictionary and run-length encodings expand without
    bound (s19-sec: 456 bytes, one 256 KiB text in the dictionary and 4,096 rows naming it, took 2.7 GB and more
    than 300 s before it was stopped)."""
    import pyarrow as pa

    bound, decoded = max(MAX_LINE_BYTES, PARQUET_EXPANSION * path.stat().st_size), 0
    try:
        for batch in _parquet_file(path).iter_batches(batch_size=PARQUET_BATCH):
            arrow = batch.nbytes + _dictionary_text(batch)  # what the rows will hold, before they are made
            _within(path, decoded + arrow, bound)
            rows = batch.to_pylist()
            decoded += max(arrow, _size(rows))  # nested columns' text is counted in Python
            _within(path, decoded, bound)
            yield from (_as_written(row) for row in rows)
    except (pa.ArrowException, OSError) as err:
        raise GpuplanError(f"{path} is not a Parquet file pyarrow reads ({str(err).splitlines()[0][:160]})") from None


def _as_written(row: dict[str, Any]) -> dict[str, Any]:
    """A Parquet row as the JSON Lines record it was written from: Arrow gives every struct in a column every field
    any row's struct has, null where this one has none, so a chat's turns (``messages``: a list of
    ``{role, content}`` structs) and their content parts come back with keys the record never had
    (``{"type": "image", "text": None}``), which a chat template sees (``'name' in message``) and the text count
    could not join. Those nulls inside lists are left out; a column's own null stays, as JSON's would."""
    return {key: _unfilled(value) if isinstance(value, list) else value for key, value in row.items()}


def _unfilled(value: Any) -> Any:
    """``value`` without the null fields of the structs inside it, to the depth a Parquet schema nests (Arrow
    bounds it; the walk is a loop over a stack, not recursion)."""
    out: list[Any] = []
    stack = [(value, out, None)]
    while stack:
        item, parent, key = stack.pop()
        if isinstance(item, dict):
            made: Any = {}
            children = [(v, made, k) for k, v in item.items() if v is not None]
        elif isinstance(item, list):
            made = [None] * len(item)
            children = [(v, made, i) for i, v in enumerate(item)]
        else:
            made, children = item, []
        if key is None:
            parent.append(made)
        else:
            parent[key] = made
        stack.extend(children)
    return out[0]


def _within(path: Path, decoded: int, bound: int) -> None:
    if decoded > bound:
        raise GpuplanError(f"{path.name} decodes to more than {bound // 2**20:,} MiB (Parquet's encodings repeat "
                           f"values; gpuplan reads at most {PARQUET_EXPANSION} times the file's size, "
                           f"{MAX_LINE_BYTES // 2**20} MiB for a small file): pass the data as .jsonl")


def _dictionary_text(batch) -> int:
    """Bytes the text columns that the file's Arrow schema keeps dictionary-encoded hold once each row is expanded
    (Arrow's ``nbytes`` counts the dictionary once), counted before they are."""
    import pyarrow as pa
    import pyarrow.compute as pc

    total = 0
    for column in batch.columns:
        if pa.types.is_dictionary(column.type) and (pa.types.is_string(column.type.value_type) or pa.types.is_binary(
                column.type.value_type) or pa.types.is_large_string(column.type.value_type)):
            total += pc.sum(pc.binary_length(column.dictionary).take(column.indices)).as_py() or 0
    return total


def _size(value: Any) -> int:
    """Bytes of text in ``value`` (records as Python holds them), 8 for any other value; without recursion."""
    total, stack = 0, [value]
    while stack:
        v = stack.pop()
        if isinstance(v, (str, bytes)):
            total += len(v)
        elif isinstance(v, dict):
            stack.extend(v.keys())
            stack.extend(v.values())
        elif isinstance(v, (list, tuple)):
            total += 8
            stack.extend(v)
        else:
            total += 8
    return total


def _hub(name: str) -> Iterator[dict[str, Any]]:
    try:
        import datasets
    except ImportError:
        raise GpuplanError(f"dataset {name!r} is not a file; reading a Hugging Face dataset id needs the "
                           "`datasets` package (pip install 'gpuplan[hub]'), or pass a local .jsonl file") from None
    major = int(re.match(r"\d*", getattr(datasets, "__version__", "") or "").group() or 0)
    if major < 3:  # before 3.0, a repo's loading script ran unasked (trust_remote_code defaulted to true)
        raise GpuplanError(f"reading the Hugging Face dataset {name!r} needs datasets 3.0 or later (pip install "
                           "-U datasets): older releases run the repo's own loading script")
    try:
        data = datasets.load_dataset(name, split="train", streaming=True)  # 3.x refuses a script, 4.x has none
    except Exception as err:  # offline, unknown id, gated: one sentence
        raise GpuplanError(f"cannot load the Hugging Face dataset {name!r} ({type(err).__name__}: "
                           f"{str(err).splitlines()[0][:160]}); pass a local .jsonl, .json, .parquet or .csv "
                           "file") from None
    yield from data


class Progress:
    """A progress line on stderr for long reads (only on a terminal, at most once a second)."""

    def __init__(self, what: str, total: int | None, stream=None):
        self.what, self.total = what, total
        self.stream = stream or sys.stderr
        self.on = self.stream.isatty()
        self.last = time.monotonic()
        self.shown = False

    def update(self, done: int) -> None:
        now = time.monotonic()
        if not self.on or now - self.last < PROGRESS_EVERY_S:
            return
        self.last = now
        share = f" ({100 * done / self.total:.0f}%)" if self.total else ""
        self.stream.write(f"\rtokenizing {self.what}: {done:,} records{share}")
        self.stream.flush()
        self.shown = True

    def close(self) -> None:
        if self.shown:
            self.stream.write("\n")
            self.stream.flush()
