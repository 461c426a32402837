"""The page's API: each call's time for one keystroke, and the server under load (no assertions: numbers to read).

    python bench/web.py                   # each endpoint in process, the median of 7 calls
    python bench/web.py load              # `gpuplan serve` under 1,000 requests from 64 clients, 15 MB datasets
    python bench/web.py load --requests 200 --clients 16 --dataset-mb 3

The first mode calls each endpoint through the ASGI app in process (FastAPI's TestClient): the server's work plus
JSON, without a network. ``load`` starts ``gpuplan serve`` as a user does and sends it what many pages would, at
once (:func:`load`): uploads of a chat JSONL (the same bytes under new names, more files than the server keeps) with
the word-level tokenizer of ``tests/data/web``, plans of those datasets, plans and catalogs without data, searches,
and refused bodies. It reports the latency of each kind of request, the server's and its reader's memory, and the
uploads folder's size on disk, sampled every 50 ms. ``tests/web/test_web_load.py`` runs a small load and asserts
the bounds.
"""

from __future__ import annotations

import argparse
import contextlib
import http.client
import json
import os
import random
import socket
import statistics
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from urllib.parse import urlencode

from fastapi.testclient import TestClient

from gpuplan.web.app import create_app

TOKENIZER = Path(__file__).resolve().parents[1] / "tests" / "data" / "web" / "tokenizer.json"

SCENARIOS = {
    "QLoRA 8B on 4090": {"model": "llama-3.1-8b", "task": "train", "method": "qlora", "gpu": "rtx-4090"},
    "LoRA 8B on 4090 (no fit)": {"model": "llama-3.1-8b", "task": "train", "method": "lora", "gpu": "rtx-4090"},
    "serve 70B vLLM tp2": {"model": "llama-3.1-70b", "task": "infer", "engine": "vllm", "num_gpus": 2, "tp": 2,
                           "gpu": "h100-sxm", "batch_size": 32},
}
CALLS = {
    "estimate": lambda s: ("/api/estimate", s),
    "explain": lambda s: ("/api/explain", s),
    "export": lambda s: ("/api/export", s),
    "recommend": lambda s: ("/api/recommend", {"scenario": s}),
    "fit-grid": lambda s: ("/api/fit-grid", {"scenario": s}),
}


def timed(client: TestClient, path: str, body, repeat: int = 7) -> float:
    client.post(path, json=body).raise_for_status()  # warm the caches
    samples = []
    for _ in range(repeat):
        start = time.perf_counter()
        client.post(path, json=body).raise_for_status()
        samples.append(time.perf_counter() - start)
    return statistics.median(samples) * 1e3


def per_call() -> None:
    client = TestClient(create_app(), base_url="http://127.0.0.1")
    print(f"{'scenario':26s}" + "".join(f"{name + ' ms':>15s}" for name in CALLS))
    for label, scenario in SCENARIOS.items():
        row = [timed(client, *call(scenario)) for call in CALLS.values()]
        print(f"{label:26s}" + "".join(f"{ms:15.1f}" for ms in row))


# ---- the server under load --------------------------------------------------------------------------------------
LIGHT = [  # plans and catalogs a page asks for without data
    {"model": "llama-3.1-8b", "task": "train", "method": "qlora", "gpu": "rtx-4090"},
    {"model": "llama-3.1-8b", "task": "train", "method": "lora", "gpu": "h100-sxm", "train_tokens": 1e8},
    {"model": "qwen2.5-7b", "task": "infer", "batch_size": 16, "prompt_tokens": 8192, "gpu": "l40s"},
    {"model": "llama-3.1-70b", "task": "infer", "engine": "vllm", "num_gpus": 2, "tp": 2, "gpu": "h100-sxm"},
    {"model": "meta-llama/Llama-3.1-8B-Instruct", "task": "infer", "gpu": "rtx-4090"},
    {"task": "train", "model_size": "1B", "gpu": "h100-sxm", "num_gpus": 8},
]
DATA = {"model": "llama-3.2-1b", "task": "train", "method": "lora", "gpu": "rtx-4090"}
BAD = [b"[" * 15_000 + b"]" * 15_000, b'{"model": "llama-3.1-8b", "task": "train", "bogus": 1}']


def chat_jsonl(nbytes: int, seed: int = 0) -> bytes:
    """JSON Lines of two-turn chat records, at least ``nbytes`` long, in the tokenizer's own words (one token
    each)."""
    vocab = [w for w in json.loads(TOKENIZER.read_text(encoding="utf-8"))["model"]["vocab"] if w.isalpha()]
    rng, lines, size = random.Random(seed), [], 0
    while size < nbytes:
        turns = [{"role": "user", "content": " ".join(rng.choices(vocab, k=rng.randint(5, 60)))},
                 {"role": "assistant", "content": " ".join(rng.choices(vocab, k=rng.randint(20, 200)))}]
        lines.append(json.dumps({"messages": turns}) + "\n")
        size += len(lines[-1])
    return "".join(lines).encode()


def serve(tmp: Path, *args: str) -> tuple[subprocess.Popen, int]:
    """``gpuplan serve`` on a free port, its temporary files (the uploads folder) under ``tmp``, offline."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    env = {**os.environ, "TMPDIR": str(tmp), "HF_HUB_OFFLINE": "1"}
    proc = subprocess.Popen([sys.executable, "-m", "gpuplan.cli", "serve", "--port", str(port), *args], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60
    while True:
        try:
            if call(port, "GET", "/api/gpus")[0] == 200:
                return proc, port
        except OSError:
            if proc.poll() is not None or time.monotonic() > deadline:
                proc.kill()
                raise RuntimeError(f"gpuplan serve did not start: {proc.communicate()}") from None
            time.sleep(0.2)


_local = threading.local()


def call(port: int, method: str, path: str, body: bytes | None = None, kind: str = "application/json",
         timeout: float = 60) -> tuple[int, dict, float]:
    """(status, JSON reply, seconds) of one request on this thread's kept-alive connection."""
    conn = getattr(_local, "conn", None)
    if conn is None or conn.port != port:
        source = getattr(_local, "source", None)  # this client's own loopback address: 127.0.0.2, 127.0.0.3, ...
        conn = _local.conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout,
                                                        source_address=(source, 0) if source else None)
    start = time.monotonic()
    try:
        conn.request(method, path, body, {"content-type": kind} if body is not None else {})
        reply = conn.getresponse()
        data = reply.read()
    except (OSError, http.client.HTTPException):
        conn.close()
        _local.conn = None
        raise
    return reply.status, json.loads(data or b"null"), time.monotonic() - start


def rss_mib(pid: int) -> float:
    """Resident memory of a process (Linux /proc), MiB; 0 once it is gone."""
    try:
        with open(f"/proc/{pid}/status", encoding="ascii") as f:
            return next(int(line.split()[1]) for line in f if line.startswith("VmRSS:")) / 1024
    except (OSError, StopIteration):
        return 0.0


def children(pid: int) -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat", encoding="ascii", errors="replace") as f:
                    if int(f.read().rsplit(")", 1)[1].split()[1]) == pid:
                        found.append(int(entry))
            except (OSError, IndexError, ValueError):
                pass
    return found


def folder_bytes(tmp: Path) -> int:
    total = 0
    for root, _, files in os.walk(tmp):
        for name in files:
            with contextlib.suppress(OSError):  # removed meanwhile
                total += os.stat(os.path.join(root, name)).st_size
    return total


class Sampler(threading.Thread):
    """The server's and its children's resident memory and the size of ``tmp`` (the uploads), every 50 ms."""

    def __init__(self, pid: int, tmp: Path):
        super().__init__(daemon=True)
        self.pid, self.tmp, self.done = pid, tmp, threading.Event()
        self.server_mib = self.reader_mib = 0.0
        self.disk_bytes = 0

    def run(self) -> None:
        while not self.done.wait(0.05):
            self.server_mib = max(self.server_mib, rss_mib(self.pid))
            self.reader_mib = max([self.reader_mib, *(rss_mib(c) for c in children(self.pid))])
            self.disk_bytes = max(self.disk_bytes, folder_bytes(self.tmp))


def tasks(requests: int, data_users: int, uploaders: int, searches: int, seed: int) -> list[list[tuple]]:
    """What the clients send, as tasks of steps (a page's upload and its plans are one task, in order)."""
    out: list[list[tuple]] = []
    for i in range(data_users):
        out.append([("upload", "tokenizer", f"tokenizer{i}.json"), ("upload", "dataset", f"chat{i}.jsonl"),
                    *(("data", path) for path in ("/api/estimate", "/api/explain", "/api/export"))])
    out += [[("upload", "dataset", f"copy{i}.jsonl")] for i in range(uploaders)]
    out += [[("search", s)] for s in LIGHT[:searches]] + [[("bad", b)] for b in BAD]
    rng = random.Random(seed)
    paths = ["/api/estimate", "/api/explain", "/api/export", "/api/fit-grid", "/api/form", "/api/gpus", "/api/models"]
    while sum(len(t) for t in out) < requests:
        out.append([("light", rng.choice(paths), rng.choice(LIGHT))])
    rng.shuffle(out)
    return out


def _step(port: int, step: tuple, refs: dict[str, str], files: dict[str, bytes]) -> dict:
    kind = step[0]
    if kind == "upload":
        path = "/api/upload?" + urlencode({"kind": step[1], "name": step[2]})
        status, reply, seconds = call(port, "POST", path, files[step[1]], "application/octet-stream")
        if status == 200:
            refs[step[1]] = reply["ref"]
    elif kind == "data":
        path = step[1]
        body = {**DATA, "dataset": refs.get("dataset", "upload:0000000000000000/none.jsonl"),
                **({"tokenizer": refs["tokenizer"]} if "tokenizer" in refs else {})}
        status, reply, seconds = call(port, "POST", path, json.dumps(body).encode())
    elif kind == "light" and step[1] in ("/api/form", "/api/gpus", "/api/models"):
        path = step[1]
        status, reply, seconds = call(port, "GET", path)
    elif kind == "light":
        path = step[1]
        body = {"scenario": step[2]} if path == "/api/fit-grid" else step[2]
        status, reply, seconds = call(port, "POST", path, json.dumps(body).encode())
    elif kind == "search":
        path = "/api/recommend"
        status, reply, seconds = call(port, "POST", path, json.dumps({"scenario": step[1],
                                                                       "constraints": {"top": 5}}).encode())
    else:
        path = "/api/estimate"
        status, reply, seconds = call(port, "POST", path, step[1])
    detail = reply.get("detail", "") if isinstance(reply, dict) and status != 200 else ""
    return {"kind": kind, "path": path, "status": status, "seconds": seconds, "detail": detail}


def load(port: int, pid: int, tmp: Path, *, requests: int = 200, clients: int = 16, dataset_mb: float = 3,
         data_users: int = 4, uploaders: int = 12, searches: int = 4, seed: int = 0) -> dict:
    """Send the requests of :func:`tasks` from ``clients`` threads at once (on Linux each from its own loopback
    address, so that the server's per-address upload limits apply per client); each request's kind, path, status,
    seconds and detail, with the server's memory before and at its peak, its reader's peak and the uploads' peak
    size on disk."""
    files = {"dataset": chat_jsonl(int(dataset_mb * 2**20), seed), "tokenizer": TOKENIZER.read_bytes()}
    for path in ("/api/form", "/api/gpus", "/api/models"):  # the caches every page fills first
        call(port, "GET", path)
    for scenario in LIGHT:
        call(port, "POST", "/api/estimate", json.dumps(scenario).encode())
    base_mib = rss_mib(pid)
    sampler = Sampler(pid, tmp)
    sampler.start()

    addresses = iter(range(2, 2 + clients))

    def client() -> None:  # each client thread calls from its own address, as pages on other machines would
        _local.source, _local.conn = (f"127.0.0.{next(addresses)}" if sys.platform == "linux" else None), None

    def run(task: list[tuple]) -> list[dict]:
        refs: dict[str, str] = {}
        return [_step(port, step, refs, files) for step in task]

    start = time.monotonic()
    with ThreadPoolExecutor(clients, initializer=client) as pool:
        records = [r for done in pool.map(run, tasks(requests, data_users, uploaders, searches, seed)) for r in done]
    wall_s = time.monotonic() - start
    time.sleep(0.1)
    sampler.done.set()
    sampler.join()
    return {"records": records, "wall_s": wall_s, "server_base_mib": base_mib, "server_peak_mib": sampler.server_mib,
            "reader_peak_mib": sampler.reader_mib, "disk_peak_bytes": sampler.disk_bytes,
            "dataset_bytes": len(files["dataset"])}


def quantile(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))] if xs else float("nan")


def report(result: dict) -> str:
    lines = [f"{'kind':8s} {'n':>5s} {'p50 s':>7s} {'p95 s':>7s} {'max s':>7s}  statuses"]
    for kind in ("light", "search", "upload", "data", "bad"):
        rows = [r for r in result["records"] if r["kind"] == kind]
        if rows:
            seconds = [r["seconds"] for r in rows]
            statuses = ", ".join(f"{s}: {n}" for s, n in sorted(
                {s: sum(r["status"] == s for r in rows) for s in {r["status"] for r in rows}}.items()))
            lines.append(f"{kind:8s} {len(rows):5d} {quantile(seconds, .5):7.2f} {quantile(seconds, .95):7.2f} "
                         f"{max(seconds):7.2f}  {statuses}")
            details = {r["detail"][:90] for r in rows if r["status"] not in (200, 422) or kind != "bad"} - {""}
            lines += [f"{'':8s} {r}" for r in sorted(details)[:4]]
    lines.append(f"{len(result['records'])} requests in {result['wall_s']:.1f} s; server memory "
                 f"{result['server_base_mib']:.0f} MiB before, {result['server_peak_mib']:.0f} MiB at peak; reader "
                 f"{result['reader_peak_mib']:.0f} MiB at peak; uploads on disk at most "
                 f"{result['disk_peak_bytes'] / 2**20:.1f} MiB (datasets of {result['dataset_bytes'] / 2**20:.1f} MiB)")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("mode", nargs="?", choices=["calls", "load"], default="calls")
    parser.add_argument("--requests", type=int, default=1000)
    parser.add_argument("--clients", type=int, default=64)
    parser.add_argument("--dataset-mb", type=float, default=15)
    parser.add_argument("--data-users", type=int, default=8)
    parser.add_argument("--uploaders", type=int, default=16)
    args = parser.parse_args()
    if args.mode == "calls":
        return per_call()
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        proc, port = serve(Path(tmp))
        try:
            print(report(load(port, proc.pid, Path(tmp), requests=args.requests, clients=args.clients,
                              dataset_mb=args.dataset_mb, data_users=args.data_users, uploaders=args.uploaders)))
        finally:
            proc.terminate()
            proc.wait(30)


if __name__ == "__main__":
    main()
