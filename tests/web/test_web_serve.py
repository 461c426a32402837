"""``gpuplan serve`` as a command: local by default, a warning when it binds elsewhere."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
import urllib.request

from conftest import require

require("fastapi")
require("uvicorn")


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _serve(*args: str) -> tuple[subprocess.Popen, int]:
    port = _free_port()
    proc = subprocess.Popen([sys.executable, "-m", "gpuplan.cli", "serve", "--port", str(port), *args],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60
    while True:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=2) as reply:
                assert reply.status == 200 and b"gpuplan" in reply.read()
                return proc, port
        except OSError:
            assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
            time.sleep(0.2)


def test_serves_on_localhost_by_default():
    proc, port = _serve()
    try:
        listening = [line for line in subprocess.run(["ss", "-ltn"], capture_output=True, text=True).stdout
                     .splitlines() if f":{port} " in line] if _has_ss() else []
        assert all("127.0.0.1:" in line for line in listening)
    finally:
        proc.terminate()
        out, err = proc.communicate(timeout=10)
    assert f"gpuplan serving http://127.0.0.1:{port}/" in out
    assert "warning" not in err


def test_binding_elsewhere_warns():
    proc, _ = _serve("--host", "0.0.0.0")
    proc.terminate()
    _, err = proc.communicate(timeout=10)
    assert "warning: binding 0.0.0.0 exposes gpuplan to your network" in " ".join(err.split())


def _has_ss() -> bool:
    return subprocess.run(["sh", "-c", "command -v ss"], capture_output=True).returncode == 0
