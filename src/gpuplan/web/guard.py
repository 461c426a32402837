"""What the server accepts: bounded request bodies, model names it may resolve, files it may read.

Bodies are read at most :data:`MAX_BODY_BYTES` (413 beyond), within :data:`BODY_TIMEOUT_S` (408), and every JSON
string, list and object in them is bounded before any model sees them (422 with one sentence; nesting too deep for
Python's parser too). The upload streams its own body (:mod:`.uploads`). Model names must be bundled (aliases,
chat and instruction-tuned variants of a bundled model, ``model_size``'s synthetic models), or Hugging Face repo
ids when the server was started with ``--hub`` (only their ``config.json`` is fetched; no code from a repo is ever
run). Paths on the server's disk are refused; files the page uploaded are read. Where the work runs, and its
deadline: :mod:`.lanes`.
"""

from __future__ import annotations

import json
import re
from typing import Any

import anyio

from .. import api
from ..errors import GpuplanError, echo
from ..userfiles import DuplicateKey, unique_pairs
from .uploads import Store, is_ref

MAX_BODY_BYTES = 32 * 1024
MAX_TEXT = 200  # characters in any JSON string (model ids are at most 96 on the hub)
MAX_ITEMS = 64  # entries in any JSON list or object
# nesting of JSON lists and objects: the deepest body a request takes, /api/buy's job with a list field in its
# scenario as a workloads file writes it (the body, workloads, a job, its scenario, lora_targets, a name: 5);
# tests/web/test_web_depth.py derives it from the request models
MAX_DEPTH = 5
BODY_TIMEOUT_S = 10.0  # to receive a request body
STREAMED = ("/api/upload",)  # paths that read (and bound) their own bodies
# The body a POST must declare: JSON, or a file's bytes for the upload. A page of another site can send neither
# without the browser asking first (a CORS preflight, which this server refuses), so it cannot make this one work.
CONTENT_TYPES = {"/api/upload": "application/octet-stream"}
JSON = "application/json"


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
# scenario fields that name a model, each read as the model is (a bundled name, a repo id with --hub, never a path):
# s17-sec, a draft_model naming a path read that file off the server's disk, and a repo id was fetched without --hub
MODEL_FIELDS = ("model", "draft_model")
# The scenario fields that carried an upload reference, set by :func:`with_uploads` alone (a key a request sends
# under this name is dropped): the model among them is an uploaded config.json, read as a local config is
UPLOADED = "__uploaded__"


def check_model(name: str, hub: bool) -> None:
    """The model names the server resolves (:func:`gpuplan.api.check_model_name`: bundled names always, Hugging Face
    repo ids with ``hub``, never a path on the server's disk)."""
    api.check_model_name(name, hub=hub, where="the web page")


def check_models(data: Any, hub: bool, skip: tuple[str, ...] = ()) -> None:
    """:func:`check_model` on every field of ``data`` (a scenario, as a dict or a Scenario) that names a model
    (:data:`MODEL_FIELDS`), but those in ``skip`` (a model that is an uploaded config.json)."""
    if isinstance(data, dict):
        data = {str(k).replace("-", "_"): v for k, v in data.items()}  # as scenario_from reads the keys
    for field in MODEL_FIELDS:
        name = data.get(field) if isinstance(data, dict) else getattr(data, field, None)
        if field not in skip and isinstance(name, str):
            check_model(name, hub)


def check_no_server_files(data: Any) -> None:
    """Refuse a scenario that names a file on the server (a dataset or a tokenizer): a file the page uploaded
    (:mod:`~gpuplan.web.uploads`, an ``upload:`` reference) or the shorthand ``samples`` and ``mean_tokens``
    describes the data instead."""
    named = next((k for k in SERVER_FILES if isinstance(data, dict) and data.get(k) and not is_ref(data[k])), None)
    if named:
        raise GpuplanError(f"the web page does not read files on the server ({named} {str(data[named])[:60]!r}): "
                           "choose the file on the page (it is uploaded), describe the data with samples and "
                           "mean_tokens, or use `gpuplan estimate --dataset` on the command line")


def with_uploads(data: Any, store: Store) -> Any:
    """``data`` checked (:func:`check_no_server_files`), its upload references (a dataset, a tokenizer, a model's
    config.json) turned into the stored files, which the store keeps until each is given back (:func:`held`,
    :meth:`~.uploads.Store.give_back`); the fields that were uploads listed under :data:`UPLOADED`."""
    check_no_server_files(data)
    if not isinstance(data, dict):
        return data
    data = {k: v for k, v in data.items() if k != UPLOADED}
    taken: dict[str, str] = {}
    try:
        for k in (*SERVER_FILES, "model"):
            if is_ref(data.get(k)):
                taken[k] = store.take(data[k])
    except GpuplanError:
        for path in taken.values():
            store.give_back(path)
        raise
    return {**data, **taken, UPLOADED: list(taken)} if taken else data


def held(data: Any) -> list[str]:
    """The uploaded files a scenario (after :func:`with_uploads`) reads: [] for none."""
    return [data[k] for k in data.get(UPLOADED, ())] if isinstance(data, dict) else []


class BoundedBody:
    """ASGI middleware: refuse bodies of another type than :data:`CONTENT_TYPES` says (415), over ``max_bytes``
    (413) or slower than :data:`BODY_TIMEOUT_S` (408), and JSON beyond :func:`check_bounds` (422); the paths in
    :data:`STREAMED` read and bound their own bodies."""

    def __init__(self, app, max_bytes: int = MAX_BODY_BYTES):
        self.app, self.max_bytes = app, max_bytes

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http" or scope["method"] not in ("POST", "PUT", "PATCH"):
            return await self.app(scope, receive, send)
        headers = dict(scope["headers"])
        declared = headers.get(b"content-length")
        sent_type = headers.get(b"content-type", b"").decode("latin-1").split(";")[0].strip().lower()
        expected = CONTENT_TYPES.get(scope["path"], JSON)
        if sent_type != expected and (sent_type or declared not in (None, b"0")):
            said = f"not {sent_type[:60]}" if sent_type else "the header is missing"
            return await _reply(send, 415, f"send the body as {expected} (content-type: {expected}; {said})")
        if scope["path"] in STREAMED:
            return await self.app(scope, receive, send)
        if declared and declared.isdigit() and int(declared) > self.max_bytes:
            return await _reply(send, 413, self._too_big(int(declared)))
        try:
            with anyio.fail_after(BODY_TIMEOUT_S):
                body = await self._read(receive)
        except TimeoutError:
            return await _reply(send, 408, f"the request body did not arrive within {BODY_TIMEOUT_S:g} s")
        if body is None:  # the client left
            return None
        if isinstance(body, int):
            return await _reply(send, 413, self._too_big(body, at_least=True))
        refused = _unbounded(body)
        if refused:
            return await _reply(send, 422, refused)
        sent = False

        async def replay():
            nonlocal sent
            if sent:
                return await receive()
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}

        return await self.app(scope, replay, send)

    async def _read(self, receive) -> bytes | int | None:
        """The body; its size so far when it passes ``max_bytes``; None when the client disconnects."""
        chunks, size = [], 0
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                return None
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > self.max_bytes:
                return size
            chunks.append(chunk)
            if not message.get("more_body"):
                return b"".join(chunks)

    def _too_big(self, size: int, at_least: bool = False) -> str:
        return (f"the request body is {'over ' if at_least else ''}{size:,} bytes; at most {self.max_bytes:,} are "
                "accepted")


def _unbounded(body: bytes) -> str | None:
    """The sentence refusing a JSON body that is not UTF-8 (RFC 8259 8.1), not JSON, beyond :func:`check_bounds` or
    with a key twice in one object; None for one within them, and for an empty one (the route says it has none).
    Every body the server cannot parse is answered here, so none reaches FastAPI's generic 400. A leading UTF-8
    byte-order mark is ignored, as RFC 8259 allows and FastAPI's own parse does."""
    if not body:
        return None
    try:
        text = body.decode("utf-8-sig")
    except UnicodeDecodeError as err:
        at = err.start + len(body) - len(err.object)  # err.object: the body past its byte-order mark
        return f"the request body is not UTF-8 (byte 0x{body[at]:02x} at offset {at}); send JSON encoded as UTF-8"
    try:
        check_bounds(json.loads(text, object_pairs_hook=unique_pairs))
    except DuplicateKey as dup:  # json.loads keeps the last silently; the CLI refuses it in a file (userfiles)
        return f"key {echo(dup.key)} appears twice in one object of the body; keep one"
    except GpuplanError as err:
        return str(err)
    except RecursionError:  # Python's parser gives up near 1,000 levels
        return f"body nests deeper than {MAX_DEPTH} levels"
    except json.JSONDecodeError as err:
        return f"the request body is not valid JSON (line {err.lineno}, column {err.colno}: {err.msg})"
    return None


def host_named(header: str) -> str:
    """The host a Host header names, without its port (``[::1]:8000`` -> ``[::1]``, ``localhost:80`` ->
    ``localhost``); a header whose part after the host is not ``:`` and digits is returned whole, so no host of
    this machine is read out of it (``localhost:80@evil.com``, s19-sec). A bracket is a whole IPv6 literal's or
    none: ``[::1`` and ``::1]`` are not ``::1`` (s19-fuzz2)."""
    header = header.strip().lower()
    named = re.fullmatch(r"(\[[^\]]*\]|[^:\[\]]*)(:\d{1,5})?", header)
    return named[1] if named else header


class LocalHosts:
    """ASGI middleware: refuse a request whose Host header names another machine than the one the server binds
    (400, one sentence saying which hosts it answers to): a page of another site that renames itself to this
    address (DNS rebinding) gets nothing. Starlette's TrustedHostMiddleware does the same check, answering only
    "Invalid host header", which left a TestClient's user (its host is ``testserver``) with nothing to change."""

    def __init__(self, app, hosts: tuple[str, ...]):
        self.app, self.hosts = app, tuple(dict.fromkeys(h.lower() for h in hosts))

    async def __call__(self, scope, receive, send):
        if scope["type"] not in ("http", "websocket"):
            return await self.app(scope, receive, send)
        named = [value for key, value in scope["headers"] if key.lower() == b"host"]
        host = host_named(named[0].decode("latin-1")) if len(named) == 1 else ""
        if host in self.hosts or (host.startswith("[") and host.endswith("]") and host[1:-1] in self.hosts):
            return await self.app(scope, receive, send)
        if len(named) > 1:  # RFC 9112 3.2: a request with more than one Host field is answered 400
            return await _reply(send, 400, f"this request names {len(named)} Host headers; HTTP allows one")
        return await _reply(send, 400, f"this server answers requests addressed to {', '.join(self.hosts)}, not "
                            f"{echo(host[:60]) if host else 'no host'} (a guard against DNS rebinding; `gpuplan "
                            "serve --host` binds another address; a TestClient needs base_url='http://127.0.0.1')")


async def _reply(send, status: int, detail: str) -> None:
    body = json.dumps({"detail": detail}).encode()
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]})
    await send({"type": "http.response.body", "body": body})
