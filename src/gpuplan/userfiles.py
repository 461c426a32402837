"""The one place gpuplan reads the files a user gives it: YAML, JSON, JSON lines and CSV text, each bounded.

Scenarios, workloads, calibrations, model configs, benchmark results, traces, datasets and tokenizer configs all
come here. Whatever a file holds, the answer is its data or one sentence naming the file:

- **size**: a file read whole is at most :data:`MAX_BYTES` (datasets and traces stream line by line, each line at
  most :data:`MAX_LINE_BYTES`; a CSV field at most :data:`MAX_CSV_FIELD` characters);
- **text**: UTF-8, with or without a byte-order mark (Windows tools write one); any other encoding or a binary
  file is refused with the byte and its position;
- **nesting**: at most :data:`MAX_DEPTH` levels of lists and mappings, so no reader (Python's own included) runs
  out of stack;
- **YAML aliases** (``&a`` / ``*a``) add at most :data:`MAX_ALIAS_VALUES` values to what the file spells out, and
  may not refer to themselves: the "billion laughs" bomb (each level repeating the one before) stops at its first
  levels, in milliseconds;
- **duplicate keys** in one mapping or object are refused, naming the key (YAML and JSON would keep the last one
  without a word);
- YAML is read by libyaml (PyYAML's ``CParser``) where installed, the pure-Python parser otherwise; either way only
  plain data is built (``SafeConstructor``: no Python tags).

Values are checked by their readers; :func:`number` is the shared check for a number a file gives.

A file a user asks gpuplan to write (``--out``, ``--plot``) goes through :func:`output_file`, checked before any
work (a name, in a folder that exists, not a folder itself, with a suffix the writer knows), and
:func:`write_file`, which writes it whole or not at all (a hidden file beside it, renamed into place): a full
disk, a read-only folder or ``/proc`` give one sentence and leave nothing behind.
"""

from __future__ import annotations

import codecs
import contextlib
import csv
import json
import math
import os
import re
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from .errors import GpuplanError, echo, echo_value, no_control, shown_number

MAX_BYTES = 64 * 1024 * 1024  # a file read whole (the largest tokenizer.json released is ~35 MB)
MAX_LINE_BYTES = 64 * 1024 * 1024  # one line of a streamed file (one record)
MAX_CSV_FIELD = 64 * 1024 * 1024  # characters in one CSV field (Python's csv default, 131,072, is one long document)
CSV_DEFAULT_FIELD = 131_072  # csv.field_size_limit()'s own default: the most a price list's or catalog's field holds
MAX_DEPTH = 64  # levels of nesting (real inputs use under 10; Python's readers fail near 1,000)
MAX_ALIAS_VALUES = 10_000  # values YAML aliases may add to those the file spells out


def is_file(path: str | os.PathLike) -> bool:
    """Whether ``path`` is a file (through links): False, not an OSError, for a path the system cannot look at (a
    name over 255 bytes: ENAMETOOLONG, which ``Path.is_file`` lets out; a NUL)."""
    try:
        return Path(path).is_file()
    except (OSError, ValueError):
        return False


def is_folder(path: str | os.PathLike) -> bool:
    """Whether ``path`` is a folder, as :func:`is_file` answers for files."""
    try:
        return Path(path).is_dir()
    except (OSError, ValueError):
        return False


def user_path(name: str | os.PathLike) -> Path:
    """A path as a user wrote it, ``~`` and ``~user`` expanded where they name a home folder: ``~nouser/x`` stays
    as written (``Path.expanduser`` raises RuntimeError on it)."""
    return Path(os.path.expanduser(name))


def relative_to_cwd(name: str | os.PathLike) -> str:
    """Where a relative path that names nothing was looked for, as a clause of the sentence that says so: a path
    in a scenario or workloads file is read from the folder gpuplan runs in, not from the file's (a user who wrote
    ``dataset: mydata.jsonl`` in ``/data/hobby.yaml`` and ran from elsewhere saw only "no dataset file
    'mydata.jsonl'"); empty for an absolute path."""
    path = user_path(name)
    if path.is_absolute():
        return ""
    return f" (a relative path, looked for in {Path.cwd()}, the folder gpuplan runs in: paths in a file are read " \
        "from there too)"


def read_text(path: str | Path, what: str, *, limit: int = MAX_BYTES) -> str:
    """The text of a UTF-8 file (a leading byte-order mark dropped), at most ``limit`` bytes; else one sentence.
    ``what`` names the file in the messages ("scenario", "benchmark result")."""
    p = Path(path)
    _check_file(p, what, limit)
    with _reading(p, what), p.open("rb") as f:  # in pieces, at most limit + 1 bytes: /proc files say size 0
        pieces, size = [], 0
        while size <= limit and (piece := f.read(min(2**20, limit + 1 - size))):
            pieces.append(piece)
            size += len(piece)
    data = b"".join(pieces)
    if len(data) > limit:
        raise GpuplanError(f"{p} is larger than {limit // 2**20} MiB, more than gpuplan reads for a {what} file")
    return _decode(data, p, what)


@contextlib.contextmanager
def _reading(p: Path, what: str) -> Iterator[None]:
    """An error of the file system while a file is opened or read (no permission, /proc/self/mem's EIO) as one
    sentence naming it."""
    try:
        yield
    except OSError as err:
        raise GpuplanError(f"cannot read the {what} file {echo(str(p))}: {err.strerror or err}") from None


def _check_file(p: Path, what: str, limit: int) -> None:
    try:
        is_file, is_dir = p.is_file(), p.is_dir()
        size = p.stat().st_size if is_file else 0
    except OSError:  # a name too long, a symlink loop
        is_file, is_dir, size = False, False, 0
    if is_dir:
        raise GpuplanError(f"{p} is a folder, not a {what} file")
    if not is_file:
        raise GpuplanError(f"no {what} file {echo(str(p))}")
    if size > limit:
        raise GpuplanError(f"{p} is {size / 2**20:,.0f} MiB, more than gpuplan reads for a {what} file "
                           f"({limit // 2**20} MiB)")


def _decode(data: bytes, p: Path, what: str, line: int | None = None) -> str:
    where = f"{p}, line {line}," if line else str(p)
    nul = data.find(b"\0")
    if nul >= 0:
        raise GpuplanError(f"{where} is not {what} text: it holds a NUL byte (position {nul:,}), as binary and "
                           "UTF-16 files do; save it as UTF-8 text")
    # a byte-order mark opens the file, not its text (dropped here, not by the "utf-8-sig" codec: its module is
    # 0.2 ms of every process that reads the bundled offers)
    text = data.removeprefix(codecs.BOM_UTF8) if not line or line == 1 else data
    try:
        return text.decode("utf-8")
    except UnicodeDecodeError as err:
        at = err.start + len(data) - len(text)  # in the file, the mark counted
        raise GpuplanError(f"{where} is not UTF-8 text (byte 0x{data[at]:02x} at position {at:,}): "
                           f"save the {what} file as UTF-8") from None


# ---- JSON ------------------------------------------------------------------------------------------------------
class DuplicateKey(Exception):
    """A key that appears twice in one JSON object (:func:`unique_pairs`)."""

    def __init__(self, key: Any):
        self.key = key


def unique_pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out = dict(pairs)
    if len(out) != len(pairs):
        seen: set[str] = set()
        raise DuplicateKey(next(k for k, _ in pairs if k in seen or seen.add(k)))
    return out


def parse_json(text: str, where: str, *, hint: str = "") -> Any:
    """The value of a JSON text (one file, or one line of a JSON lines file named by ``where``): duplicate keys
    and nesting deeper than :data:`MAX_DEPTH` refused. ``hint`` follows the message of a syntax error."""
    if not text.strip():  # json's "Expecting value (line 1, column 1)" of an empty file teaches nothing
        raise GpuplanError(f"{where} is empty: it holds no JSON" + (f"; {hint}" if hint else ""))
    try:
        value = json.loads(text, object_pairs_hook=unique_pairs)
    except json.JSONDecodeError as err:
        raise GpuplanError(f"{where} is not valid JSON (line {err.lineno}, column {err.colno}: {err.msg})"
                           + (f"; {hint}" if hint else "")) from None
    except DuplicateKey as dup:
        raise GpuplanError(f"{where}: key {echo(dup.key)} appears twice in one object; keep one") from None
    except RecursionError:  # Python's parser gives up near 1,000 levels
        raise GpuplanError(f"{where}: {DEEP}") from None
    except ValueError as err:  # an integer of more than 4,300 digits
        raise GpuplanError(f"{where} is not JSON gpuplan can read ({str(err).split(';')[0]})") from None
    if text.count("[") + text.count("{") > MAX_DEPTH:  # fewer brackets cannot nest deeper
        check_depth(value, where)
    if "\\u" in text and re.search(_SURROGATE_ESCAPE, text):  # an escaped U+D800-U+DFFF: paired, or left half
        check_whole_characters(value, where)
    return value


# compiled on the first text that needs them (re caches them): 0.3 ms of a process that reads no \u escape
_SURROGATE_ESCAPE = r"\\u[dD][89a-fA-F]"
_SURROGATE = "[\ud800-\udfff]"


def check_whole_characters(value: Any, where: str) -> None:
    """One sentence if a text in ``value`` (a key or a string, walked without recursion) holds half of a UTF-16
    pair: JSON may escape one (``"\\ud800"``), and Python's reader keeps it as a lone surrogate, which is no
    character: no UTF-8 file, terminal or tokenizer takes it (printing it, or tokenizing it, fails)."""
    todo = [value]
    while todo:
        item = todo.pop()
        if isinstance(item, str):
            half = re.search(_SURROGATE, item)
            if half:
                raise GpuplanError(f"{where}: the escape \\u{ord(half.group()):04x} is half of a UTF-16 pair (a lone "
                                   "surrogate), not a character; write the character itself, or both halves of "
                                   "its pair")
        elif isinstance(item, dict):
            todo += [*item, *item.values()]
        elif isinstance(item, list):
            todo += item


def load_json(path: str | Path, what: str, *, limit: int = MAX_BYTES, hint: str = "") -> Any:
    """The value of a JSON file (:func:`read_text`, :func:`parse_json`)."""
    return parse_json(read_text(path, what, limit=limit), str(path), hint=hint)


DEEP = f"lists or mappings nest more than {MAX_DEPTH} levels deep, more than any input gpuplan reads"


def check_depth(value: Any, where: str) -> None:
    """One sentence if ``value`` nests lists and dicts deeper than :data:`MAX_DEPTH` (walked without recursion)."""
    todo = [(value, 1)]
    while todo:
        item, depth = todo.pop()
        children = item.values() if isinstance(item, dict) else item
        for child in children:
            if isinstance(child, (dict, list)):
                if depth >= MAX_DEPTH:
                    raise GpuplanError(f"{where}: {DEEP}")
                todo.append((child, depth + 1))


# ---- YAML ------------------------------------------------------------------------------------------------------
def load_yaml(path: str | Path, what: str) -> Any:
    """The value of a YAML (or JSON) file, within the bounds above (:mod:`gpuplan.useryaml`: PyYAML is imported on
    the first file read); one sentence with the line otherwise."""
    from .useryaml import load

    return load(read_text(path, what), path, max_depth=MAX_DEPTH, max_alias_values=MAX_ALIAS_VALUES, deep=DEEP)


def read_mapping(path: str | Path, what: str) -> dict[str, Any]:
    """The mapping a YAML (or JSON) file holds (:func:`load_yaml`), or one sentence: ``what`` names its fields in
    the messages ("scenario", "workload"). An empty file is an empty mapping."""
    loaded = load_yaml(path, what)
    if loaded is None:
        return {}
    if not isinstance(loaded, dict):
        raise GpuplanError(f"{path} must hold a mapping of {what} fields, not a {type(loaded).__name__}")
    for key in loaded:  # YAML reads `1:`, `~:` and `yes:` as a number, a null and a boolean: no field's name
        if not isinstance(key, str):
            kind = "null" if key is None else "boolean" if isinstance(key, bool) else \
                "number" if isinstance(key, (int, float)) else type(key).__name__
            raise GpuplanError(f"{path}: a key YAML reads as a {kind} ({echo_value(key)}) is no {what} field's "
                               "name; quote it or remove it")
    return loaded


# ---- streamed text ---------------------------------------------------------------------------------------------
def text_lines(path: str | Path, what: str) -> Iterator[tuple[int, str]]:
    """``(line number, text)`` of each line of a UTF-8 file, streamed: a byte-order mark dropped, each line at most
    :data:`MAX_LINE_BYTES`; one sentence naming the line otherwise."""
    p = Path(path)
    _check_lines(p, what)
    with _reading(p, what), p.open("rb") as f:
        number = 0
        while raw := f.readline(MAX_LINE_BYTES + 1):
            number += 1
            if len(raw) > MAX_LINE_BYTES:
                raise GpuplanError(f"{p}, line {number:,}: longer than {MAX_LINE_BYTES // 2**20} MiB, more than "
                                   f"gpuplan reads as one {what} record")
            yield number, _decode(raw, p, what, number)


def _check_lines(p: Path, what: str) -> None:
    try:
        is_file = p.is_file()
    except OSError:
        is_file = False
    if not is_file:
        raise GpuplanError(f"no {what} file {echo(str(p))}")


def json_lines(path: str | Path, what: str) -> Iterator[tuple[int, Any]]:
    """``(line number, value)`` of each non-blank line of a JSON lines file (:func:`parse_json` per line)."""
    for number, line in text_lines(path, what):
        if line.strip():
            yield number, parse_json(line, f"{path}, line {number:,}")


def csv_records(path: str | Path, what: str) -> Iterator[dict[str, Any]]:
    """Each row of a CSV file with a header line, as a dict, streamed (:func:`text_lines`); a field may hold up to
    :data:`MAX_CSV_FIELD` characters (long documents), more is one sentence. The limit is csv's one global: it is
    raised only while a row is read, so a reader left half-read (a sample of a dataset) leaves csv's default to every
    other reader (:func:`read_csv`'s price lists)."""
    reader = csv.DictReader(line for _, line in text_lines(path, what))
    while True:
        previous = csv.field_size_limit(MAX_CSV_FIELD)
        try:
            row = next(reader, None)
        except csv.Error as err:
            raise GpuplanError(f"{path}, line {reader.reader.line_num:,}: not a CSV row gpuplan reads ({err})") \
                from None
        finally:
            csv.field_size_limit(previous)
        if row is None:
            return
        yield row


def read_csv(path: str | Path, what: str) -> list[dict[str, Any]]:
    """The rows of a CSV file with a header line, read whole (:func:`read_text`: at most :data:`MAX_BYTES`, UTF-8
    with or without a byte-order mark) as dicts; a row csv cannot read is one sentence (a price list, a catalog)."""
    import io

    # the line is the csv reader's: DictReader's own line_num is set after a row is read, so a row that fails
    # was said to be on the line before it (s30-fuzz: a 10 MB region on line 2 was "line 1")
    reader = csv.DictReader(io.StringIO(read_text(path, what), newline=""))
    # csv's limit is one global any library may raise (the suite's own fuzzer did): set csv's default while reading
    previous = csv.field_size_limit(CSV_DEFAULT_FIELD)
    try:
        return list(reader)
    except csv.Error as err:
        raise GpuplanError(f"{path}, line {reader.reader.line_num:,}: not a CSV row gpuplan reads ({err})") from None
    finally:
        csv.field_size_limit(previous)


# ---- values ----------------------------------------------------------------------------------------------------
def number(value: Any, where: str, *, least: float = 0.0, most: float = math.inf, whole: bool = False,
           above: bool = False) -> float:
    """``value`` as a finite number in ``[least, most]`` (``above``: strictly above ``least``), whole where
    ``whole`` (4096.0 taken as 4096); else one sentence starting with ``where`` ("trace.jsonl, record 3:
    input_len")."""
    kind = "a whole number" if whole else "a number"
    bounds = f"above {shown_number(least)}" if above else f"from {shown_number(least)}"
    bounds += f" to {shown_number(most)}" if math.isfinite(most) else ""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise GpuplanError(f"{where} must be {kind} {bounds}, got {echo_value(value)}")
    if isinstance(value, float) and not math.isfinite(value):
        raise GpuplanError(f"{where} must be {kind} {bounds}, got {value}")
    if whole and isinstance(value, float) and not value.is_integer():
        raise GpuplanError(f"{where} must be {kind}, got {value:g}")
    if value < least or (above and value == least) or value > most:
        raise GpuplanError(f"{where} must be {kind} {bounds}, got {shown_number(value)}")
    return int(value) if whole else float(value)


# ---- files a user names for gpuplan to write -------------------------------------------------------------------
NAME_MAX = 255  # bytes in one file name: the limit of ext4, XFS, Btrfs and APFS (Linux NAME_MAX)


def output_file(path: Any, flag: str) -> Path:
    """Where ``flag`` (``--out``) writes, checked before any work: a path (not blank, no control character, no
    name longer than the file system allows, none beginning or ending with a space) in a folder that exists and
    takes a new file (an empty one is made there and removed: not read-only, not /proc), and not itself a
    folder; else one sentence."""
    if isinstance(path, bytes) or not isinstance(path, (str, os.PathLike)) or not isinstance(os.fspath(path), str):
        raise GpuplanError(f"{flag} must be a file path, got {type(path).__name__}")
    text = os.fspath(path)
    if not text.strip():
        raise GpuplanError(f"{flag} is empty or blank: name the file to write")
    no_control(text, flag)
    p = user_path(text)
    for part in p.parts:
        if part != part.strip():
            raise GpuplanError(f"{flag} {echo(text)} has a name that begins or ends with a space ({echo(part)})")
        if len(os.fsencode(part)) > NAME_MAX:
            raise GpuplanError(f"{flag} has a name of {len(os.fsencode(part)):,} bytes ({echo(part)}); file systems "
                               f"allow {NAME_MAX}")
    if p.is_dir() or text.endswith(("/", os.sep)):
        raise GpuplanError(f"{flag} {echo(text)} is a folder: name the file to write in it")
    if not p.parent.is_dir():
        raise GpuplanError(f"{flag} {echo(text)}: no folder {echo(str(p.parent))}; create it first")
    write_file(p, lambda temp: temp.write_bytes(b""), flag, keep=False)  # can a file be made there? (not /proc)
    return p


class Stopped(BaseException):
    """A stop signal (SIGTERM, SIGHUP) that came while a file was written: raised where the write was, so that its
    cleanup runs; :func:`signals_clean_up` then ends the process by the same signal."""

    def __init__(self, signum: int):
        super().__init__(signum)
        self.signum = signum


@contextlib.contextmanager
def signals_clean_up() -> Iterator[None]:
    """While a file or folder is written into a user's folder: SIGTERM and SIGHUP (``timeout``, ``kill``, a closed
    terminal) raise :class:`Stopped` where the write is, so its ``except BaseException`` removes the temporary,
    then the process ends by that signal as it would have (Ctrl-C already raises KeyboardInterrupt). Only in the
    main thread, and only for a signal left at its default (a server's own handlers stay). SIGKILL cannot be
    caught: :func:`temporary` names carry the process id, and :func:`sweep` removes them once it is gone."""
    import signal
    import threading

    kinds = [getattr(signal, n) for n in ("SIGTERM", "SIGHUP") if hasattr(signal, n)]
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def stop(signum, _frame):
        raise Stopped(signum)

    old = {k: signal.getsignal(k) for k in kinds}
    for k in kinds:
        if old[k] == signal.SIG_DFL:
            signal.signal(k, stop)
    try:
        yield
    except Stopped as e:
        signal.signal(e.signum, signal.SIG_DFL)
        os.kill(os.getpid(), e.signum)
        raise
    finally:
        for k, handler in old.items():
            if handler == signal.SIG_DFL:
                signal.signal(k, handler)


def temporary(folder: Path, stem: str, suffix: str = "") -> Path:
    """A hidden name in ``folder`` for something being written: ``.STEM.PID-RANDOM.tmpSUFFIX``, the process id in
    it for :func:`sweep`."""
    import secrets  # (hmac and OpenSSL, ~10 ms: only when a file is written)

    return folder / f".{stem}.{os.getpid()}-{secrets.token_hex(4)}.tmp{suffix}"


def sweep(folder: Path, stem: str, *, older_s: float = 60.0) -> None:
    """Remove what a killed write (SIGKILL, a power cut) left in ``folder``: :func:`temporary` names of ``stem``
    whose process is gone, untouched for ``older_s`` seconds (another machine's process, sharing the folder,
    may reuse a process id for a while). Never follows a link; on systems without process signals, nothing."""
    import shutil
    import time

    if os.name != "posix":
        return
    pattern = re.compile(re.escape(f".{stem}.") + r"(\d+)-[0-9a-f]{8}\.tmp.*")
    with contextlib.suppress(OSError):
        for entry in os.scandir(folder):
            found = pattern.fullmatch(entry.name)
            if not found or _running(int(found.group(1))):
                continue
            with contextlib.suppress(OSError):
                if entry.stat(follow_symlinks=False).st_mtime > time.time() - older_s:
                    continue
                if entry.is_dir(follow_symlinks=False):
                    shutil.rmtree(entry.path)
                else:
                    os.unlink(entry.path)


def _running(pid: int) -> bool:
    try:
        os.kill(pid, 0)  # signal 0: is there such a process (POSIX only: on Windows it would end it)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError):
        return True  # another user's process, or no such number: leave the file
    return True


def write_file(path: Path, write: Any, flag: str, *, keep: bool = True) -> None:
    """``write(temporary_path)`` writes the file beside ``path`` (a hidden name with the same suffix, which
    matplotlib reads the format from), then it is renamed over ``path`` (removed instead unless ``keep``: a
    probe of the folder); on any error, or a stop signal (:func:`signals_clean_up`), the temporary file goes and
    one sentence says why (nothing was written). What a killed write left beside ``path`` goes first
    (:func:`sweep`). A device, pipe or socket at ``path`` (``/dev/null``, or a link to one or into ``/proc`` such as
    ``/dev/stdout``) is refused, never renamed over: run as root, ``--out /dev/null`` would replace the system's null
    device with a file (:func:`not_a_file`)."""
    if not_a_file(path):
        raise GpuplanError(f"cannot write {flag} {echo(str(path))}: it is a device, pipe or socket, not a file; name "
                           "a file to write (nothing was written)")
    stem = path.stem[:100]
    sweep(path.parent, stem)
    temp = temporary(path.parent, stem, path.suffix)
    with signals_clean_up():  # the temporary goes before the process ends by the signal
        try:
            write(temp)
            if keep:
                os.replace(temp, path)
            else:
                temp.unlink()
        except (OSError, UnicodeEncodeError) as err:
            with contextlib.suppress(OSError):
                temp.unlink()
            why = err.strerror if isinstance(err, OSError) and err.strerror else str(err)
            raise GpuplanError(f"cannot write {flag} {echo(str(path))}: {why}; nothing was written") from None
        except BaseException:
            with contextlib.suppress(OSError):
                temp.unlink()
            raise


def not_a_file(path: Path) -> bool:
    """Whether ``path`` is, or links to, something other than a file or a folder (a device, a pipe, a socket), or
    is a link into ``/proc`` (``/dev/stdout`` is ``/proc/self/fd/1``: a stream, whatever it is open on)."""
    try:
        if os.path.islink(path) and os.readlink(path).startswith("/proc/"):
            return True
        mode = os.stat(path).st_mode
    except (OSError, ValueError):  # absent, or a dangling link: a file may be written in its place
        return False
    return not (stat.S_ISREG(mode) or stat.S_ISDIR(mode))


def write_text(path: Path, text: str, flag: str) -> None:
    """``text`` as the UTF-8 file ``path``, whole or not at all (:func:`write_file`)."""
    write_file(path, lambda temp: temp.write_text(text, encoding="utf-8"), flag)



# ---- the cache's entries (userdirs.cache_dir: model structures, module profiles, datasets' token counts) ---------
def cache_entry(folder: Path, name: str, text: str, *, entries: int, total_bytes: int) -> bool:
    """``text`` as the entry ``folder/name``, written under a :func:`temporary` name and renamed into place (a
    reader never sees half an entry; two processes or threads writing one entry never share a file, nor follow a
    link put there), then ``folder`` trimmed (:func:`trim`); False where the cache cannot be written (best effort:
    an entry not kept costs its work again)."""
    try:
        folder.mkdir(parents=True, exist_ok=True)
        sweep(folder, "entry")
        temp = temporary(folder, "entry")
        try:
            temp.write_text(text, encoding="utf-8")
            os.replace(temp, folder / name)
        except BaseException:
            with contextlib.suppress(OSError):
                temp.unlink()
            raise
        trim(folder, entries=entries, total_bytes=total_bytes)
        return True
    except OSError:
        return False


def trim(folder: Path, *, entries: int, total_bytes: int) -> None:
    """At most ``entries`` entries (``*.json``) and ``total_bytes`` in ``folder``: the least recently used (by
    modification time: a read touches its entry) go first."""
    found = []
    for p in folder.glob("*.json"):
        with contextlib.suppress(OSError):
            st = p.stat(follow_symlinks=False)
            found.append((st.st_mtime, st.st_size, p))
    total = 0
    for i, (_, size, p) in enumerate(sorted(found, key=lambda x: x[0], reverse=True)):
        total += size
        if i >= entries or total > total_bytes:
            with contextlib.suppress(OSError):
                p.unlink()


def touch(path: Path) -> None:
    """Mark a cache entry used now (:func:`trim` keeps the most recently used); nothing where it cannot."""
    with contextlib.suppress(OSError):
        os.utime(path)

__all__ = [
    "MAX_ALIAS_VALUES",
    "MAX_BYTES",
    "MAX_DEPTH",
    "cache_entry",
    "check_depth",
    "csv_records",
    "is_file",
    "is_folder",
    "json_lines",
    "load_json",
    "load_yaml",
    "number",
    "output_file",
    "parse_json",
    "read_mapping",
    "read_text",
    "text_lines",
    "touch",
    "trim",
    "user_path",
    "write_file",
    "write_text",
]
