"""What the server accepts: bounded request bodies, model names it may resolve, and a time limit per request.

Bodies are read at most :data:`MAX_BODY_BYTES` (413 beyond) and every JSON string, list and object in them is
bounded before any model sees them (422 with one sentence). Model names must be bundled, or Hugging Face repo
ids when the server was started with ``--hub`` (only their ``config.json`` is fetched; no code from a repo
is ever run). Paths on the server's disk are refused; files the page uploaded are read. Work runs in a worker
thread under a deadline.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from typing import Any, TypeVar

import anyio
import anyio.to_thread

from ..errors import GpuplanError, UnknownNameError
from ..model.catalog import REPO_ID, aliases, bundled, bundled_repo
from .uploads import is_ref, resolve

MAX_BODY_BYTES = 32 * 1024
MAX_TEXT = 200  # characters in any JSON string (model ids are at most 96 on the hub)
MAX_ITEMS = 64  # entries in any JSON list or object
MAX_DEPTH = 4  # nesting of JSON lists and objects
TIMEOUT_S = 10.0
WORKERS = 2  # estimates computed at once; further requests wait (within their deadline)
_slots = threading.BoundedSemaphore(WORKERS)

T = TypeVar("T")


class TooSlow(Exception):
    """A request ran past its deadline."""


def check_bounds(value: Any, where: str = "body", depth: int = 0) -> None:
    """Raise one sentence for the first string, list or object of ``value`` beyond the limits."""
    if depth > MAX_DEPTH:
        raise GpuplanError(f"{where} nests deeper than {MAX_DEPTH} levels")
    if isinstance(value, str) and len(value) > MAX_TEXT:
        raise GpuplanError(f"{where} is {len(value):,} characters long; at most {MAX_TEXT} are accepted")
    if isinstance(value, list | dict) and len(value) > MAX_ITEMS:
        raise GpuplanError(f"{where} has {len(value):,} entries; at most {MAX_ITEMS} are accepted")
    if isinstance(value, list):
        for i, item in enumerate(value):
            check_bounds(item, f"{where}[{i}]", depth + 1)
    elif isinstance(value, dict):
        for key, item in value.items():
            check_bounds(key, f"a key of {where}", depth + 1)
            check_bounds(item, f"{where}.{key}" if where != "body" else f"field {key!r}", depth + 1)


SERVER_FILES = ("dataset", "tokenizer")  # scenario fields that name files: the server never reads them


def check_no_server_files(data: Any) -> None:
    """Refuse a scenario that names a file on the server (a dataset or a tokenizer): a file the page uploaded
    (:mod:`~gpuplan.web.uploads`, an ``upload:`` reference) or the shorthand ``samples`` and ``mean_tokens``
    describes the data instead."""
    named = next((k for k in SERVER_FILES if isinstance(data, dict) and data.get(k) and not is_ref(data[k])), None)
    if named:
        raise GpuplanError(f"the web page does not read files on the server ({named} {str(data[named])[:60]!r}): "
                           "choose the file on the page (it is uploaded), describe the data with samples and "
                           "mean_tokens, or use `gpuplan estimate --dataset` on the command line")


def with_uploads(data: Any) -> Any:
    """``data`` checked (:func:`check_no_server_files`), its upload references turned into the stored files."""
    check_no_server_files(data)
    if isinstance(data, dict) and any(is_ref(data.get(k)) for k in SERVER_FILES):
        data = {**data, **{k: resolve(data[k]) for k in SERVER_FILES if is_ref(data.get(k))}}
    return data


def check_model(name: str, hub: bool) -> None:
    """Accept bundled names always and Hugging Face repo ids with ``hub``; refuse paths and unknown names."""
    if bundled_repo(name):
        return
    if REPO_ID.match(name) and not name.endswith(".json"):
        if hub:
            return
        raise GpuplanError(f"{name!r} is not a bundled model, and this server does not fetch from the Hugging Face "
                           "hub: restart it with `gpuplan serve --hub`, or pick a bundled model")
    if name.endswith(".json") or "/" in name or "\\" in name or name.startswith((".", "~")):
        raise GpuplanError(f"the web page does not read files on the server ({name!r}): name a bundled model or a "
                           "Hugging Face repo id, or use `gpuplan estimate --model PATH` on the command line")
    raise UnknownNameError("model", name, [*bundled(), *aliases()],
                           hint="GET /api/models lists the bundled models; a Hugging Face repo id (org/name) "
                                "works when the server runs with --hub.")


def _in_slot(fn: Callable[..., T], *args: Any) -> T:
    with _slots:
        return fn(*args)


async def run_limited(fn: Callable[..., T], *args: Any, timeout_s: float | None = None) -> T:
    """``fn(*args)`` in a worker thread, at most :data:`WORKERS` at once; :class:`TooSlow` when it is not done
    within ``timeout_s`` (the thread is left to finish and keeps its slot until then, so slow requests cannot
    pile up)."""
    timeout_s = TIMEOUT_S if timeout_s is None else timeout_s
    try:
        with anyio.fail_after(timeout_s):
            return await anyio.to_thread.run_sync(_in_slot, fn, *args, abandon_on_cancel=True)
    except TimeoutError:
        raise TooSlow(f"the request took longer than {timeout_s:g} s and was abandoned; ask for less (fewer GPUs "
                      "to search, a smaller top)") from None


class BoundedBody:
    """ASGI middleware: refuse bodies over ``max_bytes`` (413) and JSON beyond :func:`check_bounds` (422); the
    paths in ``larger`` (the upload) take bodies up to their own size and bound their fields themselves."""

    def __init__(self, app, max_bytes: int = MAX_BODY_BYTES, larger: dict[str, int] | None = None):
        self.app, self.max_bytes, self.larger = app, max_bytes, larger or {}

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http" or scope["method"] not in ("POST", "PUT", "PATCH"):
            return await self.app(scope, receive, send)
        if scope["path"] in self.larger:
            return await BoundedBody(self.app, self.larger[scope["path"]], {})._read(scope, receive, send, False)
        return await self._read(scope, receive, send, True)

    async def _read(self, scope, receive, send, bound_json: bool):
        headers = dict(scope["headers"])
        declared = headers.get(b"content-length")
        if declared and declared.isdigit() and int(declared) > self.max_bytes:
            return await _reply(send, 413, self._too_big(int(declared)))
        chunks, size = [], 0
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                return None
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > self.max_bytes:
                return await _reply(send, 413, self._too_big(size, at_least=True))
            chunks.append(chunk)
            if not message.get("more_body"):
                break
        body = b"".join(chunks)
        if bound_json and b"json" in headers.get(b"content-type", b""):
            try:
                check_bounds(json.loads(body))
            except ValueError as err:  # GpuplanError included; malformed JSON is FastAPI's to report
                if isinstance(err, GpuplanError):
                    return await _reply(send, 422, str(err))
        sent = False

        async def replay():
            nonlocal sent
            if sent:
                return await receive()
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}

        return await self.app(scope, replay, send)

    def _too_big(self, size: int, at_least: bool = False) -> str:
        return (f"the request body is {'over ' if at_least else ''}{size:,} bytes; at most {self.max_bytes:,} are "
                "accepted")


async def _reply(send, status: int, detail: str) -> None:
    body = json.dumps({"detail": detail}).encode()
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]})
    await send({"type": "http.response.body", "body": body})
