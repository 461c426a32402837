"""Where a request's work runs: never on the event loop, always within the request's deadline.

Two lanes, each a bounded pool with a bounded queue (:class:`Lane`):

- **plans**: estimates, searches, grids, the form, the catalogs, in :data:`WORKERS` threads of the server;
  their work is bounded by the request's limits (:mod:`.guard`) and takes seconds at most;
- **data**: any request whose scenario names an uploaded file. Reading and tokenizing a dataset grows with the
  file, so it runs in a child process (:class:`Worker`, :data:`DATA_WORKERS` of them) that is killed when its
  request's deadline passes and started again for the next one: the work is abandoned, not left running.

A request waits for a free worker within its own deadline (:data:`TIMEOUT_S`); past it the request answers 503
and work not yet started never starts. A lane already holding its workers' jobs and :data:`QUEUE` waiting ones
answers 503 at once. So one request can hold back another at most until the other's deadline, and never the
other lane: a long tokenization never delays the form or a plan.
"""

from __future__ import annotations

import asyncio
import multiprocessing
import queue
import signal
import sys
import threading
import time
import traceback
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, TypeVar

import anyio
from starlette.exceptions import HTTPException

from ..errors import GpuplanError

TIMEOUT_S = 10.0
WORKERS = 2  # plans computed at once
DATA_WORKERS = 1  # child processes reading uploaded files
QUEUE = 32  # requests a lane keeps waiting beyond those running; more are refused at once
T = TypeVar("T")


def too_slow(timeout_s: float) -> HTTPException:
    return HTTPException(503, f"the request took longer than {timeout_s:g} s and was abandoned; ask for less "
                              "(fewer GPUs to search, a smaller top, a smaller dataset file)")


class Lane:
    """Jobs of one kind: at most ``workers`` at once and ``queue`` more waiting, each within its deadline. A job
    is called with one of ``tokens`` (what a worker holds: nothing, or a child process) and its deadline."""

    def __init__(self, name: str, tokens: list[Any], waiting: int = QUEUE):
        self.name, self.limit = name, len(tokens) + waiting
        self._tokens: queue.SimpleQueue[Any] = queue.SimpleQueue()
        for token in tokens:
            self._tokens.put(token)
        self._pool = ThreadPoolExecutor(len(tokens), thread_name_prefix=f"gpuplan-{name}")
        self._held = 0
        self._lock = threading.Lock()

    async def run(self, job: Callable[[Any, float], T]) -> T:
        """``job(token, deadline)`` in the lane's pool; 503 when it is not done within :data:`TIMEOUT_S` or the
        lane is full."""
        timeout_s = TIMEOUT_S
        deadline = time.monotonic() + timeout_s
        with self._lock:
            if self._held >= self.limit:
                raise HTTPException(503, f"the server is busy ({self.limit} requests for {self.name} running or "
                                         "waiting); try again in a moment", {"Retry-After": "2"})
            self._held += 1
        future: Future[T] = self._pool.submit(self._in_turn, job, deadline)
        future.add_done_callback(self._leave)
        try:
            with anyio.fail_after(timeout_s):
                return await asyncio.wrap_future(future)
        except TimeoutError:
            future.cancel()  # not started yet: it never will be
            raise too_slow(timeout_s) from None

    def _in_turn(self, job: Callable[[Any, float], T], deadline: float) -> T | None:
        if time.monotonic() >= deadline:
            return None  # its request has already been answered
        token = self._tokens.get()
        try:
            return job(token, deadline)
        finally:
            self._tokens.put(token)

    def _leave(self, _: Future) -> None:
        with self._lock:
            self._held -= 1

    def close(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)


class Worker:
    """One child process that runs jobs one at a time: started on first use (a fresh interpreter, ``spawn``),
    killed when a job passes its deadline or the server stops."""

    def __init__(self) -> None:
        self._proc: Any = None
        self._conn: Any = None
        self._lock = threading.Lock()

    def start(self) -> None:
        with self._lock:
            if self._proc is not None and self._proc.is_alive():
                return
            context = multiprocessing.get_context("spawn")
            self._conn, child = context.Pipe()
            self._proc = context.Process(target=_serve, args=(child,), daemon=True, name="gpuplan-data")
            self._proc.start()
            child.close()

    def stop(self) -> None:
        with self._lock:
            proc, conn, self._proc, self._conn = self._proc, self._conn, None, None
        if proc is not None:
            proc.kill()
            proc.join(5)
            conn.close()

    def call(self, fn: Callable[..., T], args: tuple, deadline: float) -> T:
        """``fn(*args)`` in the child; :func:`too_slow` (and the child killed) past ``deadline``."""
        self.start()
        try:
            self._conn.send((fn, args))
            if not self._conn.poll(max(0.0, deadline - time.monotonic())):
                self.stop()
                raise too_slow(TIMEOUT_S)
            ok, value = self._conn.recv()
        except (EOFError, OSError):
            code = self._proc.exitcode if self._proc is not None else None
            self.stop()
            raise GpuplanError(f"reading the uploaded files stopped the server's reader (exit code {code}): use "
                               "`gpuplan estimate --dataset FILE` on the command line") from None
        if not ok:
            raise GpuplanError(value)
        return value


def _serve(conn) -> None:
    """The child's loop: one job at a time until the server closes the pipe. Every failure goes back as one
    sentence: a GpuplanError's own, else what broke (and its traceback on the server's stderr)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl+C reaches the whole group: the server stops its child
    from . import api  # noqa: F401  # the jobs' module, imported before the first job arrives

    while True:
        try:
            fn, args = conn.recv()
        except (EOFError, OSError):
            return
        try:
            reply = (True, fn(*args))
        except GpuplanError as err:
            reply = (False, str(err))
        except RecursionError:
            reply = (False, "an uploaded file nests deeper than gpuplan reads (over about 1,000 levels)")
        except Exception as err:  # a file the readers did not foresee: a 422 that says what broke, not a 500
            traceback.print_exc(file=sys.stderr)
            reply = (False, f"an uploaded file could not be read ({type(err).__name__}: {str(err)[:200]})")
        try:
            conn.send(reply)
        except (EOFError, OSError):
            return


class Pools:
    """One server's lanes: :data:`WORKERS` threads for plans, :data:`DATA_WORKERS` reader processes."""

    def __init__(self) -> None:
        self.workers = [Worker() for _ in range(DATA_WORKERS)]
        self.plans = Lane("plans", [None] * WORKERS)
        self.data = Lane("uploaded files", self.workers)

    def warm(self) -> None:
        """Start the reader processes (a fresh interpreter takes seconds to import gpuplan)."""
        for worker in self.workers:
            worker.start()

    def close(self) -> None:
        self.plans.close()
        self.data.close()
        for worker in self.workers:
            worker.stop()
