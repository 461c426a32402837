"""Connections that send no request head are closed (session 18's security audit): uvicorn counts every open
connection against ``limit_concurrency`` and gave a new one no time to send its head, so 260 sockets left open made
``gpuplan serve`` answer 503 to everyone for as long as they stayed."""

from __future__ import annotations

import http.client
import socket
import threading
import time

import pytest

from conftest import require

require("fastapi")
require("uvicorn")

import uvicorn  # noqa: E402

from gpuplan.web import connections  # noqa: E402
from gpuplan.web.app import create_app  # noqa: E402

OPEN = 6  # the server's limit_concurrency here (gpuplan serve: 256)


@pytest.fixture
def server(monkeypatch):
    monkeypatch.setattr(connections, "HEAD_TIMEOUT_S", 1.0)
    config = uvicorn.Config(create_app(), host="127.0.0.1", port=0, log_level="error", limit_concurrency=OPEN,
                            http=connections.TimedHeads)
    srv = uvicorn.Server(config)
    thread = threading.Thread(target=srv.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not (srv.started and srv.servers) and time.monotonic() < deadline:
        time.sleep(0.05)
    yield srv.servers[0].sockets[0].getsockname()[1]
    srv.should_exit = True
    thread.join(10)


def _get(port: int) -> int:
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    c.request("GET", "/static/style.css")
    r = c.getresponse()
    r.read()
    c.close()
    return r.status


def test_connections_that_send_no_head_are_closed_and_the_page_answers_again(server):
    assert _get(server) == 200
    silent = [socket.create_connection(("127.0.0.1", server)) for _ in range(OPEN // 2)]
    halves = [socket.create_connection(("127.0.0.1", server)) for _ in range(OPEN - OPEN // 2)]
    for s in halves:
        s.sendall(b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n")  # a head never finished
    time.sleep(0.3)
    assert _get(server) == 503  # the limit is taken (uvicorn's own answer)
    time.sleep(connections.HEAD_TIMEOUT_S + 0.5)
    for s in silent + halves:
        s.settimeout(5)
        assert s.recv(1) == b""  # closed by the server
        s.close()
    assert _get(server) == 200


def test_a_head_sent_in_pieces_within_its_time_is_answered(server):
    s = socket.create_connection(("127.0.0.1", server))
    s.settimeout(10)
    s.sendall(b"GET /static/style.css HTTP/1.1\r\n")
    time.sleep(connections.HEAD_TIMEOUT_S / 2)
    s.sendall(b"Host: 127.0.0.1\r\n\r\n")
    assert s.recv(64).startswith(b"HTTP/1.1 200")
    s.close()
