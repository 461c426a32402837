"""What the serving benchmarks' client costs per request and per streamed chunk (issue 31, session 29).

    python bench/serving/client_cost.py [--streams 32] [--burst 500]     # needs aiohttp (not a gpuplan dependency)

Every row of issue 31's eight lines above 25 % was measured by one asyncio process that sends the requests and parses
the server-sent events (SSE) of every stream: ``vllm bench serve`` (vllm/benchmarks/lib/endpoint_request_func.py
``async_request_openai_completions`` / ``_chat_completions``: one shared ``aiohttp.ClientSession``, each read of
``response.content.iter_any()`` fed to ``StreamedResponseHandler.add_chunk``, which decodes it, splits it at blank
lines and, since the caller strips the trailing blank line, ``json.loads`` the remainder to see that it is whole;
then ``json.loads`` again and a ``time.perf_counter()`` per message), and InferenceX's fork of vLLM's older
benchmark_serving.py (utils/bench_serving/backend_request_func.py at InferenceX 57b5dbd57, which SGLang's
bench_serving.py of early 2025 resembles: a new ``ClientSession`` per request, ``async for line in
response.content``, one ``json.loads`` a message). This re-does those operations (not their code) against a fake
server in another process, which streams vLLM-shaped completion chunks, and prints this process's CPU time:

- per request sent one at a time (``--max-concurrency 1``), and the median TTFT the client times against a server
  that answers at once: the client's own part of a lone request's TTFT (with the fake server's);
- per streamed chunk, with ``--streams`` streams in flight, each sent 5 ms apart (the client's load at a rate R of
  chunks a second is R times this);
- per request in a burst of ``--burst`` requests sent at once (``--request-rate inf``), and the median TTFT the client
  times against a server that answers each request's first token at once (an upper bound on the client's share of
  a burst's TTFT: it includes the fake server's own work, on the same cores).

The time a request spends in the client before its first chunk is timed counts in its TTFT, because both clients
take ``st`` before ``session.post``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing
import socket
import statistics
import sys
import time

CHUNK = {"id": "cmpl-3f9b2c0e5a6d4f7e8a1b2c3d4e5f6a7b", "object": "text_completion", "created": 1767225600,
         "model": "Qwen/Qwen3-0.6B", "choices": [{"index": 0, "text": " token", "logprobs": None,
                                                  "finish_reason": None, "stop_reason": None}], "usage": None}
REPEATS = 3  # each case is run this many times; the run with the least CPU is printed
USAGE = {**CHUNK, "choices": [], "usage": {"prompt_tokens": 512, "completion_tokens": 128, "total_tokens": 640}}


def _event(obj) -> bytes:
    """One SSE message in one HTTP chunk, as a streaming server writes it."""
    body = b"data: " + (obj if isinstance(obj, bytes) else json.dumps(obj).encode()) + b"\n\n"
    return b"%x\r\n%s\r\n" % (len(body), body)


async def _serve_one(reader, writer, tokens: int, gap_s: float) -> None:
    """Answer the requests of one connection (keep-alive) with ``tokens`` chunks ``gap_s`` apart."""
    chunk, usage, done = _event(CHUNK), _event(USAGE), _event(b"[DONE]")
    while True:
        head = await reader.readuntil(b"\r\n\r\n")
        length = next((int(h.split(b":")[1]) for h in head.split(b"\r\n") if h.lower().startswith(b"content-length")),
                      0)
        await reader.readexactly(length)
        writer.write(b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n")
        for i in range(tokens):
            if i and gap_s:
                await asyncio.sleep(gap_s)
            writer.write(chunk)
            await writer.drain()
        writer.write(usage + done + b"0\r\n\r\n")
        await writer.drain()


def _server(sock: socket.socket, tokens: int, gap_s: float) -> None:
    """The fake server's process: serve on ``sock`` until killed."""
    async def handle(reader, writer):
        # as uvicorn does: without it Nagle's algorithm holds a reused connection's reply for the delayed ACK (~40 ms)
        writer.get_extra_info("socket").setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        try:
            await _serve_one(reader, writer, tokens, gap_s)
        except (asyncio.IncompleteReadError, ConnectionError):
            writer.close()

    async def main():
        server = await asyncio.start_server(handle, sock=sock, backlog=4096)
        await server.serve_forever()
    asyncio.run(main())


class _Handler:
    """vLLM's client: whole SSE messages out of each read (decode, split at blank lines, try the rest as JSON)."""

    def __init__(self):
        self.buffer = ""

    def add(self, data: bytes) -> list[str]:
        self.buffer += data.decode()
        out = []
        while "\n\n" in self.buffer:
            msg, self.buffer = self.buffer.split("\n\n", 1)
            if msg.strip():
                out.append(msg.strip())
        if self.buffer.startswith("data: "):
            rest = self.buffer.removeprefix("data: ").strip()
            try:
                if rest == "[DONE]" or json.loads(rest):
                    out.append(self.buffer.strip())
                    self.buffer = ""
            except json.JSONDecodeError:
                pass
        return out


def _take(message: str, st: float, times: list[float]) -> None:
    """One message: the timestamp of a token chunk (the first is the TTFT's)."""
    body = message.removeprefix("data: ")
    if body != "[DONE]" and json.loads(body).get("choices"):
        times.append(time.perf_counter() - st)


async def _vllm_request(session, url: str, payload: dict) -> list[float]:
    times: list[float] = []
    st = time.perf_counter()
    async with session.post(url, json=payload) as response:
        handler = _Handler()
        async for data in response.content.iter_any():
            for message in handler.add(data.strip()):
                _take(message, st, times)
    return times


async def _inferencex_request(aiohttp, url: str, payload: dict) -> list[float]:
    times: list[float] = []
    async with aiohttp.ClientSession() as session:
        st = time.perf_counter()
        async with session.post(url, json=payload) as response:
            async for line in response.content:
                line = line.strip()
                if line:
                    _take(line.decode(), st, times)
    return times


async def _run(aiohttp, client: str, url: str, requests: int, cap: int) -> tuple[list[list[float]], float]:
    """Send ``requests`` requests at once, at most ``cap`` in flight; the chunk times of each and this process's
    CPU seconds."""
    payload = {"model": "m", "prompt": "word " * 512, "max_tokens": 128, "stream": True,
               "stream_options": {"include_usage": True}}
    seats = asyncio.Semaphore(cap)
    session = aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=cap)) if client == "vllm" else None

    async def one():
        async with seats:
            if session is not None:
                return await _vllm_request(session, url, payload)
            return await _inferencex_request(aiohttp, url, payload)

    cpu = time.process_time()
    out = await asyncio.gather(*[one() for _ in range(requests)])
    cpu = time.process_time() - cpu
    if session is not None:
        await session.close()
    return out, cpu


def _measure(aiohttp, client: str, tokens: int, gap_s: float, requests: int, cap: int) -> tuple[list, float]:
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(4096)
    server = multiprocessing.Process(target=_server, args=(sock, tokens, gap_s), daemon=True)
    server.start()
    try:
        return asyncio.run(_run(aiohttp, client, f"http://127.0.0.1:{sock.getsockname()[1]}/v1/completions",
                                requests, cap))
    finally:
        server.kill()
        server.join()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--streams", type=int, default=32, help="streams in flight for the per-chunk cost")
    ap.add_argument("--burst", type=int, default=500, help="requests sent at once for the burst")
    args = ap.parse_args()
    if args.streams < 1 or args.burst < 1:
        print("client_cost.py: --streams and --burst must be at least 1.", file=sys.stderr)
        sys.exit(2)
    try:
        import aiohttp
    except ImportError:
        print("client_cost.py needs aiohttp, which gpuplan does not install; run it with a Python that has it.",
              file=sys.stderr)
        sys.exit(2)
    print("| client | case | requests | chunks | CPU us a chunk | CPU ms a request | median TTFT ms |")
    print("|---|---|---:|---:|---:|---:|---:|")
    for client in ("vllm", "inferencex"):
        for case, tokens, gap, n, cap in (("one at a time, first token at once", 1, 0.0, 50, 1),
                                          ("streams, 5 ms apart", 128, 0.005, 4 * args.streams, args.streams),
                                          ("burst, first token at once", 1, 0.0, args.burst, args.burst)):
            runs = [_measure(aiohttp, client, tokens, gap, n, cap) for _ in range(REPEATS)]
            out, cpu = min(runs, key=lambda run: run[1])  # the least disturbed run (the cores are shared)
            chunks = sum(len(t) for t in out)
            ttft = statistics.median(t[0] for t in out) * 1e3
            print(f"| {client} | {case} | {n} | {chunks} | {cpu / chunks * 1e6:.1f} | {cpu / n * 1e3:.3f} | "
                  f"{ttft:.1f} |")


if __name__ == "__main__":
    main()
