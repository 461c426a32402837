"""Files the page sends: a dataset (and its tokenizer.json) chosen in the browser, read by the CLI's own reader.

The server never opens a path a request names (:func:`~gpuplan.web.guard.check_no_server_files`). The page reads
the chosen file and posts its bytes to ``/api/upload``; the server keeps them in a private temporary folder and
answers a reference, ``upload:<sha256 prefix>/<name>``, that a scenario's ``dataset`` or ``tokenizer`` may carry.
Before the scenario is read, each reference becomes the stored file's path, so ``gpuplan.dataset`` reads and
tokenizes it exactly as ``gpuplan estimate --dataset FILE`` does; what goes back names the file as the user did
(:func:`hide_paths`). At most :data:`MAX_UPLOAD_BYTES` per file and :data:`MAX_UPLOADS` files are kept (the oldest
is dropped first); the same bytes under the same name give the same reference.
"""

from __future__ import annotations

import atexit
import base64
import binascii
import hashlib
import json
import re
import shutil
import tempfile
import threading
from pathlib import Path
from typing import Any, Literal
from urllib.parse import quote_plus

from ..dataset.read import FORMATS
from ..errors import GpuplanError

MAX_UPLOAD_BYTES = 16 * 1024 * 1024  # a Llama-3 tokenizer.json is 9 MB
MAX_UPLOADS = 16
PREFIX = "upload:"
SUFFIXES = {"dataset": tuple(FORMATS), "tokenizer": (".json",)}
_NAME = re.compile(r"[^A-Za-z0-9._-]+")
_lock = threading.RLock()
_root: Path | None = None


def _folder() -> Path:
    """The private folder of this server's uploads (mode 700), removed when the server exits."""
    global _root
    with _lock:
        if _root is None:
            _root = Path(tempfile.mkdtemp(prefix="gpuplan-uploads-"))
            atexit.register(shutil.rmtree, _root, True)
    return _root


def _safe_name(name: str, kind: str) -> str:
    """The file's own name (no folders), in safe characters, with a suffix the reader knows."""
    base = _NAME.sub("_", name.replace("\\", "/").rsplit("/", 1)[-1]).strip("._") or "upload"
    suffix = Path(base).suffix.lower()
    if suffix not in SUFFIXES[kind]:
        raise GpuplanError(f"{name!r} is not a file gpuplan reads as a {kind}: choose a "
                           f"{', '.join(SUFFIXES[kind])} file")
    return base[:100]


def save(kind: Literal["dataset", "tokenizer"], name: str, content_base64: str) -> dict[str, Any]:
    """Keep one uploaded file; its reference, name and size."""
    try:
        data = base64.b64decode(content_base64, validate=True)
    except (binascii.Error, ValueError):
        raise GpuplanError(f"the content of {name!r} is not base64 (the page sends the file's bytes so)") from None
    if len(data) > MAX_UPLOAD_BYTES:
        raise GpuplanError(f"{name!r} is {len(data):,} bytes; the page takes files up to {MAX_UPLOAD_BYTES:,} bytes "
                           "(use `gpuplan estimate --dataset FILE` for larger ones: it samples huge files)")
    if not data:
        raise GpuplanError(f"{name!r} is empty")
    safe = _safe_name(name, kind)
    digest = hashlib.sha256(data).hexdigest()[:16]
    with _lock:
        folder = _folder() / digest
        folder.mkdir(exist_ok=True)
        path = folder / safe
        if not path.is_file():
            path.write_bytes(data)
        folder.touch()
        kept = sorted(_folder().iterdir(), key=lambda p: p.stat().st_mtime)
        for old in kept[:-MAX_UPLOADS]:
            for f in old.iterdir():
                f.unlink()
            old.rmdir()
    return {"ref": f"{PREFIX}{digest}/{safe}", "name": safe, "bytes": len(data)}


def is_ref(value: Any) -> bool:
    return isinstance(value, str) and value.startswith(PREFIX)


def resolve(ref: str) -> str:
    """The stored file of a reference (one sentence when it is malformed or no longer kept)."""
    digest, _, name = ref.removeprefix(PREFIX).partition("/")
    if not re.fullmatch(r"[0-9a-f]{16}", digest) or name != _NAME.sub("_", name) or name.startswith("."):
        raise GpuplanError(f"{ref[:60]!r} is not an upload reference of this server")
    path = _folder() / digest / name
    if not path.is_file():
        raise GpuplanError(f"the uploaded file {name!r} is no longer on this server (it keeps the last "
                           f"{MAX_UPLOADS}): choose the file again")
    return str(path)


def hide_paths(text: str) -> str:
    """``text`` with each stored file's folder taken off its path: the names the user gave; in a URL's query (a
    permalink) the file's reference instead, which reopens it on this server while it keeps the file."""
    if _root is None:
        return text
    text = re.sub(re.escape(quote_plus(str(_root))) + r"%2F([0-9a-f]{16})%2F", r"upload%3A\1%2F", text)
    for root in (str(_root), json.dumps(str(_root))[1:-1]):
        text = re.sub(re.escape(root) + r"[/\\]+[0-9a-f]{16}[/\\]+", "", text)
    return text
