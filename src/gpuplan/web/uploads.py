"""Files the page sends: a dataset (and its tokenizer.json), or a model's config.json, chosen in the browser and read
by the CLI's own readers.

The server never opens a path a request names (:func:`~gpuplan.web.guard.check_no_server_files`). The page posts
the chosen file's bytes to ``/api/upload?kind=dataset&name=train.jsonl``; the server streams them into one private
folder (mode 700, removed when the server stops: :meth:`Store.close` runs at shutdown, SIGTERM and SIGINT
included, and at exit) and answers a reference, ``upload:<hash>/<name>`` (the hash of the name and the bytes),
that a scenario's ``dataset``, ``tokenizer`` or ``model`` may carry. Before the scenario is read, each reference
becomes the stored file's path, so ``gpuplan.dataset`` reads and tokenizes it exactly as ``gpuplan estimate --dataset
FILE`` does, and a config.json is read as ``gpuplan estimate --model config.json`` reads it (data only: the same
bounded JSON reader, no code from it runs); what goes back names the file as the user did (:meth:`Store.hide`).

Bounds, each one sentence when reached:

- one file: :data:`MAX_UPLOAD_BYTES` (413), refused as it streams, never held in memory whole;
- files kept: :data:`MAX_UPLOADS`, each upload counted (the same bytes under another name are another file) and
  :data:`MAX_STORED_BYTES` on disk, uploads in progress included: the least recently used file is dropped first
  (for room in bytes, the least recently used large one), never one a request is reading (or waiting to read),
  and an upload that cannot fit beside those is refused (503);
- per client address: :data:`RATE_UPLOADS` uploads and :data:`RATE_BYTES` bytes a minute (429);
- :data:`UPLOAD_TIMEOUT_S` to receive a file (408).

The same bytes under the same name give the same reference, and are stored once.
"""

from __future__ import annotations

import atexit
import contextlib
import hashlib
import json
import os
import re
import shutil
import tempfile
import threading
import time
import unicodedata
from collections import Counter, OrderedDict, deque
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any, Literal
from urllib.parse import quote_plus

import anyio
import anyio.to_thread
from starlette.exceptions import HTTPException

from .. import api
from ..errors import GpuplanError

MAX_UPLOAD_BYTES = 16 * 1024 * 1024  # a Llama-3 tokenizer.json is 9 MB
MAX_UPLOADS = 16
MAX_STORED_BYTES = 64 * 1024 * 1024
RATE_WINDOW_S = 60.0
RATE_UPLOADS = 30
RATE_BYTES = 128 * 1024 * 1024
UPLOAD_TIMEOUT_S = 60.0
MAX_CLIENTS = 1024  # client addresses whose recent uploads are remembered (the oldest forgotten first)
PREFIX = "upload:"
SUFFIXES = {"dataset": api.dataset_formats(), "tokenizer": (".json",), "config": (".json",)}
Kind = Literal["dataset", "tokenizer", "config"]
WRITE_BYTES = 1024 * 1024  # received bytes are written (and hashed) in a worker thread this many at a time
NAME_BYTES = 200  # of a kept file's name in UTF-8 (file systems take 255)
_NAME = re.compile(r"[^\w.-]+")  # \w: letters and digits of any script, and _
_REF = re.compile(r"([0-9a-f]{16})/(\w[\w.-]*)")


def safe_name(name: str, kind: str) -> str:
    """The file's own name (no folders), its letters and digits of any script kept (NFC: données.jsonl stays so)
    and any other run of characters one ``_``, with a suffix the reader knows; a name with nothing else before its
    suffix (🚀.jsonl) is ``upload`` with that suffix."""
    base = unicodedata.normalize("NFC", name.replace("\\", "/").rsplit("/", 1)[-1])
    stem, dot, ext = base.rpartition(".")
    suffix = dot + _NAME.sub("_", ext)
    if not dot or suffix.lower() not in SUFFIXES[kind]:
        raise GpuplanError(f"{name[:100]!r} is not a file gpuplan reads as a {kind}: choose a "
                           f"{', '.join(SUFFIXES[kind])} file")
    stem = _NAME.sub("_", stem).strip("._")[-(100 - len(suffix)):] or "upload"
    while len(stem.encode()) > NAME_BYTES - len(suffix):  # 100 characters of CJK are 300 bytes; a file name 255
        stem = stem[1:]
    return stem + suffix


def is_ref(value: Any) -> bool:
    return isinstance(value, str) and value.startswith(PREFIX)


def _refused(status: int, detail: str, retry_after_s: float | None = None) -> HTTPException:
    headers = {"Retry-After": str(max(1, round(retry_after_s)))} if retry_after_s is not None else None
    return HTTPException(status, detail, headers)


class Rate:
    """Uploads per client address in a sliding window of :data:`RATE_WINDOW_S`: at most :data:`RATE_UPLOADS`
    files and :data:`RATE_BYTES` bytes."""

    def __init__(self) -> None:
        self._seen: OrderedDict[str, deque[list[float]]] = OrderedDict()  # client -> [[time, bytes], ...]
        self._lock = threading.Lock()

    def admit(self, client: str, size: int) -> list[float]:
        """Count one upload of ``size`` bytes (so far) for ``client``; its entry, to add the bytes that follow."""
        now = time.monotonic()
        with self._lock:
            seen = self._seen.pop(client, deque())
            while seen and seen[0][0] <= now - RATE_WINDOW_S:
                seen.popleft()
            self._seen[client] = seen
            while len(self._seen) > MAX_CLIENTS:
                self._seen.popitem(last=False)
            if len(seen) >= RATE_UPLOADS or sum(b for _, b in seen) + size > RATE_BYTES:
                wait = seen[0][0] + RATE_WINDOW_S - now if seen else RATE_WINDOW_S
                raise _refused(429, f"too many uploads from this address: at most {RATE_UPLOADS} files and "
                                    f"{RATE_BYTES / 2**20:g} MiB a minute; try again in {wait:.0f} s", wait)
            entry = [now, float(size)]
            seen.append(entry)
            return entry


class Store:
    """This server's uploads: one private folder, created on the first upload, removed by :meth:`close`."""

    def __init__(self) -> None:
        self._root: Path | None = None
        self._files: OrderedDict[str, int] = OrderedDict()  # "<digest>/<name>" -> bytes, least recently used first
        self._in_use: Counter[str] = Counter()  # files requests are reading (or waiting to): never dropped
        self._reserved = 0  # bytes of uploads in progress
        self._lock = threading.RLock()
        self.rate = Rate()
        atexit.register(self.close)

    @property
    def root(self) -> Path | None:
        return self._root

    def _folder(self) -> Path:
        with self._lock:
            if self._root is None:
                self._root = Path(tempfile.mkdtemp(prefix="gpuplan-uploads-"))
            return self._root

    def close(self) -> None:
        """Remove the folder and everything in it (a later upload makes a new one)."""
        with self._lock:
            root, self._root = self._root, None
            self._files.clear()
            self._in_use.clear()
        if root is not None:
            shutil.rmtree(root, ignore_errors=True)

    def _spare(self, for_bytes: bool = False) -> str | None:
        """The least recently used file no request is using; the caller holds the lock. To make room in bytes, the
        least recently used of those at least a fair share of the space (:data:`MAX_STORED_BYTES` over
        :data:`MAX_UPLOADS`) goes first: dropping a tokenizer.json of a few kB frees nothing that counts."""
        spare = [key for key in self._files if not self._in_use[key]]
        large = [key for key in spare if self._files[key] >= MAX_STORED_BYTES // MAX_UPLOADS] if for_bytes else []
        return (large or spare or [None])[0]

    def _drop(self, key: str) -> None:
        """Forget one kept file and delete it (and its folder once empty); the caller holds the lock."""
        self._files.pop(key)
        path = self._folder() / key
        path.unlink(missing_ok=True)
        with contextlib.suppress(OSError):  # another name for the same bytes is still kept
            path.parent.rmdir()

    def _reserve(self, nbytes: int) -> None:
        """Room for ``nbytes`` more of an upload in progress, dropping the least recently used files (503 when the
        uploads in progress alone would pass :data:`MAX_STORED_BYTES`)."""
        with self._lock:
            while sum(self._files.values()) + self._reserved + nbytes > MAX_STORED_BYTES and self._spare():
                self._drop(self._spare(for_bytes=True))
            if sum(self._files.values()) + self._reserved + nbytes > MAX_STORED_BYTES:
                raise _refused(503, f"the server's upload space ({MAX_STORED_BYTES // 2**20} MiB) is taken by "
                                    "uploads in progress and files being read; try again in a moment", 5)
            self._reserved += nbytes

    async def receive(self, kind: Kind, name: str, chunks: AsyncIterator[bytes],
                      client: str, declared: int | None = None) -> dict[str, Any]:
        """Stream one upload to disk within every bound; its reference, name and size."""
        safe = safe_name(name, kind)
        if declared is not None and declared > MAX_UPLOAD_BYTES:
            raise _too_big(name, declared)
        counted = self.rate.admit(client, declared or 0)
        incoming = self._folder() / f".incoming-{os.urandom(8).hex()}"
        digest, size, reserved = hashlib.sha256(safe.encode() + b"\0"), 0, 0  # one file per folder: see _keep
        try:
            if declared:
                self._reserve(declared)
                reserved = declared
            with anyio.fail_after(UPLOAD_TIMEOUT_S), incoming.open("wb") as f:
                pending = bytearray()
                async for chunk in chunks:
                    size += len(chunk)
                    if size > MAX_UPLOAD_BYTES:
                        raise _too_big(name, None)
                    if size > reserved:
                        grow = max(size - reserved, min(WRITE_BYTES, MAX_UPLOAD_BYTES - reserved))
                        self._reserve(grow)
                        reserved += grow
                    pending += chunk
                    if len(pending) >= WRITE_BYTES:
                        await anyio.to_thread.run_sync(_write, f, digest, bytes(pending))
                        pending.clear()
                await anyio.to_thread.run_sync(_write, f, digest, bytes(pending))
            counted[1] = max(counted[1], size)
            if not size:
                raise GpuplanError(f"{name[:100]!r} is empty")
            return self._keep(incoming, f"{digest.hexdigest()[:16]}/{safe}", size)
        except TimeoutError:
            raise _refused(408, f"{name[:100]!r} did not arrive within {UPLOAD_TIMEOUT_S:g} s") from None
        finally:
            incoming.unlink(missing_ok=True)
            with self._lock:
                self._reserved -= reserved

    def _keep(self, incoming: Path, key: str, size: int) -> dict[str, Any]:
        """Keep a received file under ``key`` (the same bytes under the same name: the copy already kept), then
        drop the least recently used files beyond :data:`MAX_UPLOADS`. The key's folder is the hash of the name
        and the bytes, so each folder holds one file: nothing is ever beside an uploaded tokenizer.json (a
        tokenizer_config.json there would be read, and its chat template rendered)."""
        with self._lock:
            path = self._folder() / key
            if key not in self._files:
                path.parent.mkdir(exist_ok=True)
                os.replace(incoming, path)
            self._files[key] = size
            self._files.move_to_end(key)
            while len(self._files) > MAX_UPLOADS:
                spare = self._spare()
                self._drop(spare or key)
                if spare is None or spare == key:
                    raise _refused(503, f"the server's {MAX_UPLOADS} upload places hold files being read; try "
                                        "again in a moment", 5)
        return {"ref": PREFIX + key, "name": key.split("/", 1)[1], "bytes": size}

    def take(self, ref: str) -> str:
        """The stored file of a reference, kept until :meth:`give_back` (one sentence when the reference is
        malformed or the file no longer kept)."""
        match = _REF.fullmatch(ref.removeprefix(PREFIX))
        if not match:
            raise GpuplanError(f"{ref[:60]!r} is not an upload reference of this server")
        with self._lock:
            if match[0] not in self._files:
                raise GpuplanError(f"the uploaded file {match[2]!r} is no longer on this server (it keeps the "
                                   f"{MAX_UPLOADS} files used last, {MAX_STORED_BYTES // 2**20} MiB in all): choose "
                                   "the file again")
            self._files.move_to_end(match[0])
            self._in_use[match[0]] += 1
            return str(self._folder() / match[0])

    def give_back(self, path: str) -> None:
        """The end of a request's use of a file :meth:`take` gave it."""
        with self._lock:
            key = "/".join(Path(path).parts[-2:])
            self._in_use[key] -= 1
            if self._in_use[key] <= 0:
                del self._in_use[key]

    def hide(self, text: str) -> str:
        """``text`` with each stored file's folder taken off its path: the names the user gave; in a URL's query (a
        permalink) the file's reference instead, which reopens it on this server while it keeps the file."""
        root = self._root
        if root is None or (str(root) not in text and quote_plus(str(root)) not in text):
            return text
        text = re.sub(re.escape(quote_plus(str(root))) + r"%2F([0-9a-f]{16})%2F", r"upload%3A\1%2F", text)
        with self._lock:
            keys = list(self._files)
        names = dict(key.split("/", 1) for key in keys)
        for form in (str(root), json.dumps(str(root))[1:-1]):
            text = re.sub(re.escape(form) + r"[/\\]+[0-9a-f]{16}[/\\]+", "", text)
            # a file's folder named alone (an uploaded config's model folder, which the launch files load and the
            # tokenizer is looked for in): the file's name, as the user gave it (s19-sec)
            text = re.sub(re.escape(form) + r"[/\\]+([0-9a-f]{16})(?![0-9a-f])",
                          lambda m: names.get(m[1], "the uploaded file"), text)
            text = text.replace(form, "the server's upload folder")  # any other form: never the server's path
        return _name_configs(text, keys)


def _name_configs(text: str, keys: list[str]) -> str:
    """An uploaded ``config.json`` without ``_name_or_path`` is named after its folder, as ``gpuplan estimate --model
    FOLDER/config.json`` names it (``gpuplan.model.catalog``): here the folder is the upload's hash, so the reply
    names the model after the file instead; the hash inside a reference (``upload:<hash>/``, URL-quoted in a
    permalink) stays."""
    for key in keys:
        digest, name = key.split("/", 1)
        if name == "config.json" and digest in text:
            text = re.sub(rf"(?<![:A]){digest}(?![/%])", name, text)
    return text


def _write(f, digest, data: bytes) -> None:
    f.write(data)
    digest.update(data)


def _too_big(name: str, size: int | None) -> HTTPException:
    """413 for a file of ``size`` bytes (None: over the limit, as it streams)."""
    said = f"is over {MAX_UPLOAD_BYTES:,} bytes, the most" if size is None else \
        f"is {size:,} bytes; at most {MAX_UPLOAD_BYTES:,} are what"
    return _refused(413, f"{name[:100]!r} {said} the page takes (use `gpuplan estimate --dataset FILE` for larger "
                         "files: it samples huge ones)")
