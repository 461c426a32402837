"""docs/security.md states the page's limits; each one is the constant the code enforces, so the two cannot drift
apart. SECURITY.md says how to report a vulnerability, privately."""

from __future__ import annotations

from pathlib import Path

from conftest import require

require("fastapi")

from gpuplan.cli import serve  # noqa: E402
from gpuplan.web import api, connections, guard, lanes, uploads  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]


def most(field: str) -> int:
    """The upper bound of a field of ``/api/recommend``'s constraints."""
    return next(m.le for m in api.RecommendOptions.model_fields[field].metadata if hasattr(m, "le"))


def test_the_threat_model_states_the_limits_the_page_enforces():
    doc = " ".join((ROOT / "docs" / "security.md").read_text(encoding="utf-8").split())
    stated = [
        f"bodies over {guard.MAX_BODY_BYTES // 1024} KiB (413), or not received within {guard.BODY_TIMEOUT_S:g} s",
        f"JSON strings over {guard.MAX_TEXT} characters, lists or objects over {guard.MAX_ITEMS} entries, nesting "
        f"over {guard.MAX_DEPTH} levels",
        f"searches over {most('max_gpus')} GPUs or a top over {most('top')}",
        f"at most {uploads.MAX_UPLOAD_BYTES // 2**20} MiB (413), received within {uploads.UPLOAD_TIMEOUT_S:g} s",
        f"the {uploads.MAX_UPLOADS} files used last, {uploads.MAX_STORED_BYTES // 2**20} MiB in all",
        f"{uploads.RATE_UPLOADS} files and {uploads.RATE_BYTES // 2**20} MiB a {uploads.RATE_WINDOW_S / 60:g} minute"
        .replace(" a 1 minute", " a minute"),
        f"answered within {lanes.TIMEOUT_S:g} s; past that, 503",
        f"| {lanes.WORKERS} threads, {lanes.QUEUE} requests waiting",
        f"| {lanes.DATA_WORKERS} reader process, {lanes.QUEUE} waiting",
        f"| {lanes.READ_LIMIT_S:g} s, then the process is killed",
        f"| {lanes.READER_MEMORY / 2**30:g} GiB of heap",
        f"| {serve.CONNECTIONS} (uvicorn answers 503 beyond)",
        f"| {connections.HEAD_TIMEOUT_S:g} s from the connection or its last answer, then it is closed",
    ]
    missing = [s for s in stated if s not in doc]
    assert not missing, missing


def test_security_md_names_a_private_channel():
    text = (ROOT / "SECURITY.md").read_text(encoding="utf-8")
    assert "private vulnerability reporting" in text and "Report a vulnerability" in text
    assert "@" not in text  # no invented address
    assert "docs/security.md" in text
