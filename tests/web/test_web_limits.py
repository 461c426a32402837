"""The page's bounds (issue 29, item 4; fuzz-report-3 S2, S3, C1 and C2 on the page): uploads counted per file
and bounded on disk and per address, streamed and never held whole; deep bodies and deep or odd uploaded files
answered 4xx, never 500; a request past its deadline answered 503 while its reader goes on to a bound and is then
killed; the lanes' queues bounded; and the page resolving what the CLI resolves offline (``model_size``, a chat
variant of a bundled model) without the network."""

from __future__ import annotations

import json
import os
import sys
import threading
import time
from pathlib import Path

import pytest

from conftest import asked, require

require("fastapi")
require("httpx")
require("tokenizers")

import anyio  # noqa: E402
from chats import TOKENIZER, chat_jsonl  # noqa: E402
from fastapi.testclient import TestClient  # noqa: E402
from starlette.exceptions import HTTPException  # noqa: E402

import gpuplan  # noqa: E402
from gpuplan.errors import GpuplanError  # noqa: E402
from gpuplan.model import catalog  # noqa: E402
from gpuplan.web import guard, lanes, uploads  # noqa: E402
from gpuplan.web.app import create_app  # noqa: E402

TRAIN = {"model": "llama-3.2-1b", "task": "train", "method": "lora", "gpu": "rtx-4090"}


BYTES = {"content-type": "application/octet-stream"}


def upload(client, kind: str, name: str, data: bytes):
    return client.post("/api/upload", params={"kind": kind, "name": name}, content=data, headers=BYTES)


def on_disk(root: Path | None) -> tuple[int, int]:
    """(files, bytes) under the uploads folder, as the disk holds them (each inode once)."""
    if root is None or not root.exists():
        return 0, 0
    inodes = {(p.stat().st_ino, p.stat().st_size) for p in root.rglob("*") if p.is_file()}
    return len(inodes), sum(size for _, size in inodes)


@pytest.fixture
def app():
    app = create_app()
    yield app
    app.state.pools.close()
    app.state.uploads.close()


@pytest.fixture
def client(app):
    return TestClient(app, base_url="http://127.0.0.1")


# ---- S2: the same bytes under new names are new files; disk, count and rate bounded ----------------------------
def test_the_same_bytes_under_new_names_count_each_time(client, app, monkeypatch):
    monkeypatch.setattr(uploads, "MAX_STORED_BYTES", 3 * 2**20)
    monkeypatch.setattr(uploads, "RATE_UPLOADS", 40)
    data = chat_jsonl(2**20)
    refs = []
    for i in range(30):  # the review's reproducer: one 1 MB file posted 30 times under new names
        r = upload(client, "dataset", f"copy{i}.jsonl", data)
        assert r.status_code == 200, r.text
        refs.append(r.json()["ref"])
        files, nbytes = on_disk(app.state.uploads.root)
        assert nbytes <= uploads.MAX_STORED_BYTES and files <= 3, (i, files, nbytes)
    assert on_disk(app.state.uploads.root) == (2, 2 * len(data))  # a third 1 MiB file would pass 3 MiB
    r = client.post("/api/estimate", json={**TRAIN, "dataset": refs[0]})
    assert r.status_code == 422 and "'copy0.jsonl' is no longer on this server" in r.json()["detail"]
    assert upload(client, "dataset", "copy29.jsonl", data).json()["ref"] == refs[-1]  # same name, same bytes:
    assert len(list(app.state.uploads.root.rglob("copy29.jsonl"))) == 1  # kept once


def test_room_in_bytes_is_made_by_dropping_large_files_first(client, app, monkeypatch):
    """A dataset upload that needs room drops the least recently used large file, not the small tokenizer.json a
    page uploaded just before its own dataset."""
    monkeypatch.setattr(uploads, "MAX_STORED_BYTES", 3 * 2**20)
    monkeypatch.setattr(uploads, "MAX_UPLOADS", 8)  # a fair share: 384 KiB
    big = chat_jsonl(2**20)
    first = upload(client, "dataset", "first.jsonl", big).json()["ref"]
    tok = upload(client, "tokenizer", "tokenizer.json", TOKENIZER.read_bytes()).json()["ref"]
    for name in ("second.jsonl", "third.jsonl"):
        assert upload(client, "dataset", name, big).status_code == 200
    kept = {p.name for p in app.state.uploads.root.rglob("*") if p.is_file()}
    assert kept == {"tokenizer.json", "second.jsonl", "third.jsonl"}, kept
    assert client.post("/api/estimate", json={**TRAIN, "dataset": first}).status_code == 422
    assert tok.endswith("/tokenizer.json")


def test_files_kept_are_counted_not_their_contents(client, app):
    for i in range(uploads.MAX_UPLOADS + 4):
        assert upload(client, "tokenizer", f"t{i}.json", TOKENIZER.read_bytes()).status_code == 200
    kept = [p for p in app.state.uploads.root.rglob("*") if p.is_file()]
    assert len(kept) == uploads.MAX_UPLOADS and {p.name for p in kept} == {f"t{i}.json" for i in range(4, 20)}


def test_each_upload_has_a_folder_of_its_own(client, app):
    """Nothing is ever beside an uploaded tokenizer.json: a tokenizer_config.json there would be read (and its chat
    template rendered), so the same bytes under another name go to another folder."""
    refs = [upload(client, "tokenizer", name, TOKENIZER.read_bytes()).json()["ref"]
            for name in ("tokenizer.json", "tokenizer_config.json", "chat_template.json")]
    folders = [app.state.uploads.root / ref.removeprefix("upload:").split("/")[0] for ref in refs]
    assert len(set(folders)) == 3 and all(len(list(f.iterdir())) == 1 for f in folders)


def test_a_file_being_read_is_never_dropped(app, monkeypatch):
    """Under load a new upload dropped the dataset a request was about to read ("no dataset file 'chat2.jsonl'"):
    files in use stay until their reader is done, and an upload that would need their place waits (503)."""
    monkeypatch.setattr(uploads, "MAX_UPLOADS", 2)
    with TestClient(app, base_url="http://127.0.0.1") as client:
        data = upload(client, "dataset", "chat.jsonl", chat_jsonl(4 * 2**20)).json()["ref"]
        tok = upload(client, "tokenizer", "tokenizer.json", TOKENIZER.read_bytes()).json()["ref"]
        answer = {}
        reading = threading.Thread(target=lambda: answer.update(r=client.post(
            "/api/estimate", json={**TRAIN, "dataset": data, "tokenizer": tok})))
        reading.start()
        while not app.state.uploads._in_use and reading.is_alive():
            time.sleep(0.01)
        r = upload(client, "tokenizer", "other.json", TOKENIZER.read_bytes())
        assert r.status_code == 503 and "hold files being read" in r.json()["detail"], r.text
        assert r.headers["retry-after"] == "5"
        reading.join()
        assert answer["r"].status_code == 200, answer["r"].text
        assert not app.state.uploads._in_use  # given back
        assert upload(client, "tokenizer", "other.json", TOKENIZER.read_bytes()).status_code == 200


def test_uploads_per_address_are_rate_limited(client, monkeypatch):
    monkeypatch.setattr(uploads, "RATE_UPLOADS", 3)
    for i in range(3):
        assert upload(client, "dataset", f"d{i}.jsonl", b'{"text": "a"}\n').status_code == 200
    r = upload(client, "dataset", "d3.jsonl", b'{"text": "a"}\n')
    assert r.status_code == 429 and r.json()["detail"].startswith("too many uploads from this address: at most 3")
    assert int(r.headers["retry-after"]) > 0
    monkeypatch.setattr(uploads, "RATE_UPLOADS", 30)
    monkeypatch.setattr(uploads, "RATE_BYTES", 100)
    r = upload(client, "dataset", "d4.jsonl", b'{"text": "' + b"a" * 200 + b'"}\n')
    assert r.status_code == 429 and "100 B" not in r.text and "MiB a minute" in r.json()["detail"]


def test_an_oversized_upload_is_refused_as_it_streams(client, app):
    chunks = (b"x" * 2**20 for _ in range(17))  # no Content-Length: refused once 16 MiB have arrived
    r = client.post("/api/upload", params={"kind": "dataset", "name": "big.jsonl"}, content=chunks, headers=BYTES)
    assert r.status_code == 413 and "'big.jsonl' is over 16,777,216 bytes, the most" in r.json()["detail"]
    assert on_disk(app.state.uploads.root) == (0, 0)  # nothing half-written is left
    r = client.post("/api/upload", params={"kind": "dataset", "name": "big.jsonl"}, content=b"{}",
                    headers={**BYTES, "content-length": str(uploads.MAX_UPLOAD_BYTES + 1)})
    assert r.status_code == 413 and "is 16,777,217 bytes; at most 16,777,216" in r.json()["detail"]


def test_an_upload_too_slow_to_arrive_is_408(monkeypatch, tmp_path):
    monkeypatch.setattr(uploads, "UPLOAD_TIMEOUT_S", 0.2)
    store = uploads.Store()

    async def trickle():
        yield b'{"text": "a"}\n'
        await anyio.sleep(5)
        yield b'{"text": "b"}\n'

    async def main():
        with pytest.raises(HTTPException) as caught:
            await store.receive("dataset", "slow.jsonl", trickle(), "client")
        return caught.value

    err = anyio.run(main)
    assert err.status_code == 408 and "'slow.jsonl' did not arrive within 0.2 s" in err.detail
    assert on_disk(store.root) == (0, 0)
    store.close()


def test_a_body_too_slow_to_arrive_is_408(monkeypatch):
    monkeypatch.setattr(guard, "BODY_TIMEOUT_S", 0.2)
    sent = []

    async def never(scope, receive, send):
        raise AssertionError("the app must not see a body that never arrived")

    async def receive():
        await anyio.sleep(5)

    async def send(message):
        sent.append(message)

    scope = {"type": "http", "method": "POST", "path": "/api/estimate",
             "headers": [(b"content-length", b"40"), (b"content-type", b"application/json")]}
    anyio.run(guard.BoundedBody(never), scope, receive, send)
    assert sent[0]["status"] == 408 and b"did not arrive within 0.2 s" in sent[1]["body"]


def test_the_folder_goes_when_the_app_stops():
    app = create_app()
    with TestClient(app, base_url="http://127.0.0.1") as client:
        assert upload(client, "tokenizer", "tokenizer.json", TOKENIZER.read_bytes()).status_code == 200
        root = app.state.uploads.root
        assert root.is_dir() and on_disk(root)[0] == 1
        assert oct(root.stat().st_mode & 0o777) == "0o700"
    assert not root.exists()


# ---- C2 and C1 on the page: deep or odd input is 4xx, never 500 ---------------------------------------------------
def test_a_deeply_nested_body_is_422(client):
    body = b"[" * 15_000 + b"]" * 15_000  # the review's 30 KB body, a RecursionError (500) in the bound check
    r = client.post("/api/estimate", content=body, headers={"content-type": "application/json"})
    assert r.status_code == 422 and r.json()["detail"] == f"body nests deeper than {guard.MAX_DEPTH} levels"


def test_a_key_twice_in_the_body_is_422_as_in_a_file(client):
    """The CLI refuses a scenario file with a key twice (userfiles.parse_json); the page's body did not, and
    planned with the last one (a second look at the fuzz report's duplicate keys, with a JSON body)."""
    body = b'{"model": "llama-3.2-1b", "task": "train", "task": "infer", "gpu": "rtx-4090"}'
    r = client.post("/api/estimate", content=body, headers={"content-type": "application/json"})
    assert r.status_code == 422 and r.json()["detail"] == "key 'task' appears twice in one object of the body; keep one"
    nested = b'{"scenario": {"model": "gpt2", "task": "infer", "model": "llama-3.2-1b"}}'
    r = client.post("/api/recommend", content=nested, headers={"content-type": "application/json"})
    assert r.status_code == 422 and "key 'model' appears twice" in r.json()["detail"]


@pytest.mark.parametrize("path, body, said", [
    ("/api/estimate", {"model": "llama-3.2-1b", "task": "infer", "gpu": "rtx-4090", "batch_size": True},
     "scenario field 'batch_size' takes a number, not true"),
    ("/api/capacity", {"model": "llama-3.2-1b", "gpus": ["l4"], "users": True},
     "field 'users': takes a number, not true (got True)"),
    ("/api/recommend", {"scenario": {"model": "llama-3.2-1b", "task": "infer"}, "constraints": {"top": True}},
     "field 'constraints.top': takes a number, not true (got True)"),
    ("/api/buy", {"build": "2x5090", "workloads": [{"scenario": {"model": "llama-3.2-1b", "task": "infer"},
                                                    "per_week": False}]},
     "field 'workloads.0.per_week': takes a number, not false (got False)"),
])
def test_a_yes_or_no_for_a_number_is_422(client, path, body, said):
    """pydantic's lax mode read ``true`` as 1 (session 7's walk: ``"users": true`` simulated one user, ``"top":
    true`` ranked one setup, with HTTP 200); a yes/no given for a number is one sentence, as the CLI says it."""
    r = client.post(path, json=body)
    assert (r.status_code, r.json()["detail"]) == (422, said)


@pytest.mark.parametrize("path, headers, status, text", [
    ("/api/estimate", {"content-type": "text/plain"}, 415, "application/json (content-type: application/json; not "
                                                          "text/plain)"),
    ("/api/estimate", {}, 415, "the header is missing"),
    ("/api/upload?kind=dataset&name=a.jsonl", {"content-type": "text/plain"}, 415, "application/octet-stream"),
    ("/api/upload?kind=dataset&name=a.jsonl", {"content-type": "multipart/form-data; boundary=x"}, 415, "not multi"),
    ("/api/estimate", {"content-type": "application/json; charset=utf-8"}, 200, ""),
])
def test_a_body_must_say_what_it_is(client, app, path, headers, status, text):
    """A page of another site can post text/plain or a form to localhost without the browser asking first (no
    CORS preflight): such bodies are refused, so such a page cannot make the server store files or lanes."""
    r = client.post(path, content=b'{"model": "llama-3.1-8b", "task": "train"}', headers=headers)
    assert r.status_code == status and text in r.text, r.text
    assert app.state.uploads.root is None  # nothing was stored


@pytest.mark.parametrize("name, content", [
    ("deep.json", b"[" * 3000 + b"]" * 3000),  # the review's deep.json as a dataset
    ("deep.jsonl", b'{"text": "a"}\n' + b'{"a": ' * 3000 + b"1" + b"}" * 3000 + b"\n"),
    ("long.csv", b"text\n" + b"a" * 140_000 + b"\n"),  # C1: one field over 128 KB
], ids=["deep-json", "deep-jsonl", "long-csv-field"])
def test_an_odd_uploaded_dataset_is_not_a_500(app, name, content):
    with TestClient(app, base_url="http://127.0.0.1") as client:
        data = upload(client, "dataset", name, content).json()["ref"]
        tok = upload(client, "tokenizer", "tokenizer.json", TOKENIZER.read_bytes()).json()["ref"]
        r = client.post("/api/estimate", json={**TRAIN, "dataset": data, "tokenizer": tok})
    assert r.status_code in (200, 422), r.text  # read (a reader that copes) or one sentence
    if r.status_code == 422:
        detail = r.json()["detail"]
        assert "\n" not in detail and "gpuplan-uploads" not in detail and len(detail) < 400


# ---- S3: the deadline; a reader's work goes on to a bound, then it is killed -----------------------------------------
def test_a_dataset_past_the_deadline_is_503_and_read_on_for_the_next_ask(app, monkeypatch):
    records = chat_jsonl(4 * 2**20)
    with TestClient(app, base_url="http://127.0.0.1") as client:
        data = upload(client, "dataset", "chat.jsonl", records).json()["ref"]
        tok = upload(client, "tokenizer", "tokenizer.json", TOKENIZER.read_bytes()).json()["ref"]
        body = {**TRAIN, "dataset": data, "tokenizer": tok}
        monkeypatch.setattr(lanes, "TIMEOUT_S", 0.05)
        r = client.post("/api/estimate", json=body)
        assert r.status_code == 503 and "reading goes on" in r.json()["detail"], r.text
        assert r.headers["retry-after"] == str(lanes.RETRY_S)
        pid = app.state.pools.workers[0]._proc.pid
        monkeypatch.setattr(lanes, "TIMEOUT_S", 10.0)
        r = client.post("/api/estimate", json=body)  # waits for the reading the first request began
        assert r.status_code == 200, r.text
        assert app.state.pools.workers[0]._proc.pid == pid  # the same reader, not killed
        assert (r.json()["dataset"]["source"], r.json()["dataset"]["samples"]) == ("chat.jsonl", records.count(b"\n"))


def test_a_reader_past_its_limit_is_killed_and_the_next_request_starts_a_new_one(app, monkeypatch):
    with TestClient(app, base_url="http://127.0.0.1") as client:
        data = upload(client, "dataset", "chat.jsonl", chat_jsonl(6 * 2**20, seed=1)).json()["ref"]
        tok = upload(client, "tokenizer", "tokenizer.json", TOKENIZER.read_bytes()).json()["ref"]
        worker = app.state.pools.workers[0]
        pid = worker._proc.pid
        monkeypatch.setattr(lanes, "TIMEOUT_S", 0.05)
        monkeypatch.setattr(lanes, "READ_LIMIT_S", 0.5)
        r = client.post("/api/estimate", json={**TRAIN, "dataset": data, "tokenizer": tok})
        assert r.status_code == 503
        for _ in range(200):  # the reader is killed at its limit (and reaped)
            if worker._proc is None:
                break
            time.sleep(0.05)
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)
        monkeypatch.setattr(lanes, "TIMEOUT_S", 10.0)
        monkeypatch.setattr(lanes, "READ_LIMIT_S", 60.0)
        small = upload(client, "dataset", "small.jsonl", chat_jsonl(10_000)).json()["ref"]
        r = client.post("/api/estimate", json={**TRAIN, "dataset": small, "tokenizer": tok})
        assert r.status_code == 200, r.text
        assert worker._proc.pid != pid


@pytest.mark.skipif(sys.platform != "linux", reason="the reader's memory is bounded by Linux's RLIMIT_DATA")
def test_the_readers_memory_is_bounded(app, monkeypatch):
    """A file that takes more memory to read than the reader is given is one sentence, and the server reads the
    next file as before. 16 MiB of empty JSON lists take about 350 MiB as Python objects."""
    monkeypatch.setattr(lanes, "READER_MEMORY", 256 * 2**20)
    with TestClient(app, base_url="http://127.0.0.1") as client:
        tok = upload(client, "tokenizer", "tokenizer.json", TOKENIZER.read_bytes()).json()["ref"]
        heavy = upload(client, "dataset", "lists.json", b"[" + b"[]," * (5 * 2**20) + b"[]]").json()["ref"]
        r = client.post("/api/estimate", json={**TRAIN, "dataset": heavy, "tokenizer": tok})
        assert r.status_code == 422 and "memory" in r.json()["detail"], r.text
        small = upload(client, "dataset", "small.jsonl", chat_jsonl(10_000)).json()["ref"]
        assert client.post("/api/estimate", json={**TRAIN, "dataset": small, "tokenizer": tok}).status_code == 200


def test_lanes_bound_their_queue_and_skip_work_whose_request_was_answered(monkeypatch):
    monkeypatch.setattr(lanes, "TIMEOUT_S", 0.3)
    lane = lanes.Lane("test", [None], waiting=1)
    started = []

    def job(name):
        def run(_):
            started.append(name)
            time.sleep(0.6)
            return name
        return run

    async def main():
        results = {}

        async def ask(name):
            try:
                results[name] = await lane.run(job(name))
            except HTTPException as err:
                results[name] = err.status_code, err.detail

        async with anyio.create_task_group() as tg:
            for name in ("first", "second", "third"):
                tg.start_soon(ask, name)
                await anyio.sleep(0.01)
        return results

    results = anyio.run(main)
    time.sleep(0.5)  # the first job finishes in its thread; the second's request was answered before its turn
    assert results["first"][0] == results["second"][0] == 503 and "longer than 0.3 s" in results["first"][1]
    assert results["third"][0] == 503 and "the server is busy" in results["third"][1]
    assert started == ["first"]
    lane.close()


def test_a_plan_past_its_deadline_stops_at_its_next_plan(client, app, monkeypatch):
    """s17-sec: a thread cannot be killed, and a plan's job past its deadline went on to its end: a budget search
    of /api/buy over 20 workloads ran 200 s on after its 503, holding one of the 2 plan threads (two such requests
    held the page). Every plan the builder makes checks the deadline (clock.in_time): the search stops at its next
    plan, and the thread is free again at once."""
    from gpuplan import clock

    checks = []
    real = clock.in_time

    def spy():
        checks.append(time.monotonic())
        real()

    monkeypatch.setattr(clock, "in_time", spy)
    monkeypatch.setattr(lanes, "TIMEOUT_S", 0.5)
    body = {"scenario": {"model": "llama-3.1-405b", "task": "infer", "prompt_tokens": 100000, "batch_size": 256},
            "constraints": {"max_gpus": 64, "any_quant": True, "top": 50}}  # about 7 s of plans on 2 cores
    started = time.monotonic()
    r = client.post("/api/recommend", json=body)
    assert r.status_code == 503 and "longer than 0.5 s" in r.json()["detail"]
    for _ in range(50):  # the job's thread gives its worker back
        if app.state.pools.plans._held == 0:
            break
        time.sleep(0.1)
    assert app.state.pools.plans._held == 0
    assert checks and max(checks) - started < 2.0, max(checks) - started  # no plan built long after the deadline
    assert client.post("/api/estimate", json=TRAIN).status_code == 200  # no deadline left behind in the thread
    assert clock._DEADLINE.get() is None


# ---- the page resolves what the CLI resolves offline --------------------------------------------------------------
@pytest.fixture
def offline(monkeypatch):
    def no_network(name):
        raise AssertionError(f"the page fetched {name} from the hub")

    monkeypatch.setattr(catalog, "_fetch_config", no_network)


@pytest.mark.parametrize("scenario", [
    {"task": "train", "model_size": "7B"},
    {"task": "train", "model_size": "1.3b", "gpu": "h100-sxm", "num_gpus": 8},
    {"model": "meta-llama/Llama-3.1-8B-Instruct", "task": "infer", "gpu": "h100-sxm"},
    {"model": "Qwen/Qwen2.5-7B-Instruct", "task": "train", "method": "qlora", "gpu": "rtx-4090"},
], ids=["model_size", "model_size-8-gpus", "llama-instruct", "qwen-instruct"])
def test_the_page_resolves_what_the_cli_does_offline(client, offline, scenario, monkeypatch):
    monkeypatch.setattr(lanes, "TIMEOUT_S", 60.0)  # the answers are checked here, the deadline by the 503 tests
    r = asked(client, "/api/estimate", scenario)
    assert r.status_code == 200, r.text
    assert r.json() == json.loads(json.dumps(gpuplan.estimate(scenario).model_dump()))
    for path, body in (("/api/explain", scenario), ("/api/export", scenario),
                       ("/api/fit-grid", {"scenario": scenario}), ("/api/recommend", {"scenario": scenario})):
        assert asked(client, path, body).status_code == 200, path


def test_a_repo_id_that_is_also_a_server_folder_is_refused(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "org" / "model").mkdir(parents=True)
    (tmp_path / "org" / "model" / "config.json").write_text("{}")
    with pytest.raises(GpuplanError, match="does not read files on the server"):
        guard.check_model("org/model", hub=True)
    guard.check_model("org/other", hub=True)  # a repo id: only its config.json would be fetched
    with pytest.raises(GpuplanError, match="gpuplan serve --hub"):
        guard.check_model("org/other", hub=False)


def test_an_unforeseen_failure_in_the_reader_names_no_path_of_the_server():
    """The reader answered an exception it did not foresee with its text, which may hold the server's paths (the
    fuzzer: "cannot import name ... (/.../src/gpuplan/userfiles.py)"): the page gets its type, the server's log
    the rest."""
    reader = lanes.Worker()
    try:
        with pytest.raises(GpuplanError) as err:
            reader.call(os.listdir, ("/nonexistent/server/secret",))
    finally:
        reader.stop()
    assert str(err.value) == ("an uploaded file could not be read (FileNotFoundError; the server's log has the "
                              "details)")
