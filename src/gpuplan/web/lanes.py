"""Where a request's work runs: never on the event loop, and answered within the request's deadline.

Two lanes, each a bounded pool with a bounded queue (:class:`Lane`):

- **plans**: estimates, searches, grids, the form, the catalogs, in :data:`WORKERS` threads of the server;
  their work is bounded by the request's limits (:mod:`.guard`) and takes seconds at most;
- **data**: any request whose scenario names an uploaded file, in a child process (:class:`Worker`,
  :data:`DATA_WORKERS` of them). Reading and tokenizing a dataset grows with the file (a 15 MB chat JSONL: about
  5 s of CPU), so it runs apart from the server and its Python lock.

A request waits for a worker within its own deadline (:data:`TIMEOUT_S`); past it the request answers 503, and
work not yet started never starts. A lane holding its workers' jobs and :data:`QUEUE` waiting ones answers 503 at
once. A plan's job past the deadline stops at its next plan (:func:`gpuplan.clock.in_time`, checked by every
plan the one builder makes: a budget search of ``/api/buy`` over 20 workloads ran 200 s on before). A reader's job
past the deadline goes on in the child, up to :data:`READ_LIMIT_S`, so that the dataset's token counts are cached
there when the page asks again (the 503 says when: ``Retry-After``); past that limit the child is killed and the
work abandoned. So no request is answered later than its deadline, none waits on the other lane, and the work a
request leaves behind is bounded.
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

from .. import api
from ..errors import GpuplanError

TIMEOUT_S = 10.0
READ_LIMIT_S = 60.0  # a reader's job, its request answered or not; then the child is killed
WORKERS = 2  # plans computed at once
DATA_WORKERS = 1  # child processes reading uploaded files
QUEUE = 64  # requests a lane keeps waiting beyond those running; more are refused at once
RETRY_S = 5  # when the page asks again for a dataset still being read
READER_MEMORY = 2 * 2**30  # the reader's heap (Linux RLIMIT_DATA): reading a 15 MB file takes about 110 MB
T = TypeVar("T")


def too_slow(timeout_s: float) -> HTTPException:
    return HTTPException(503, f"the request took longer than {timeout_s:g} s and was abandoned; ask for less "
                              "(fewer GPUs to search, a smaller top)")


def still_reading(timeout_s: float) -> HTTPException:
    return HTTPException(503, f"the uploaded files take longer than {timeout_s:g} s to read; reading goes on (up to "
                              f"{READ_LIMIT_S:g} s) and the page asks again in {RETRY_S} s",
                         {"Retry-After": str(RETRY_S)})


class Lane:
    """Jobs of one kind: at most ``workers`` at once and ``queue`` more waiting, each answered within its deadline
    (``late(timeout_s)``: the 503 past it). A job is called with one of ``tokens`` (what a worker holds: nothing, or
    a child process)."""

    def __init__(self, name: str, tokens: list[Any], late: Callable[[float], HTTPException] = too_slow,
                 waiting: int = QUEUE):
        self.name, self.limit, self.late = name, len(tokens) + waiting, late
        self._tokens: queue.SimpleQueue[Any] = queue.SimpleQueue()
        for token in tokens:
            self._tokens.put(token)
        self._pool = ThreadPoolExecutor(len(tokens), thread_name_prefix=f"gpuplan-{name.replace(' ', '-')}")
        self._held = 0
        self._lock = threading.Lock()

    async def run(self, job: Callable[[Any], T], finished: Callable[[], None] = lambda: None) -> T:
        """``job(token)`` in the lane's pool; 503 when it is not done within :data:`TIMEOUT_S` or the lane is
        full. ``finished()`` runs once the job is over: done, refused, or dropped unstarted."""
        timeout_s = TIMEOUT_S
        deadline = time.monotonic() + timeout_s
        with self._lock:
            full = self._held >= self.limit
            self._held += not full
        if full:
            finished()
            raise HTTPException(503, f"the server is busy ({self.limit} requests for {self.name} running or "
                                     "waiting); try again in a moment", {"Retry-After": "2"})
        future: Future[T] = self._pool.submit(self._in_turn, job, deadline)
        future.add_done_callback(lambda _: (self._leave(), finished()))
        try:
            with anyio.fail_after(timeout_s):
                return await asyncio.wrap_future(future)
        except TimeoutError:
            future.cancel()  # not started yet: it never will be
            raise self.late(timeout_s) from None

    def _in_turn(self, job: Callable[[Any], T], deadline: float) -> T | None:
        if time.monotonic() >= deadline:
            return None  # its request has already been answered
        token = self._tokens.get()
        try:
            with api.until(deadline):  # a plan's job stops at its next plan past the deadline (s17-sec)
                return job(token)
        except api.Overdue:
            raise self.late(TIMEOUT_S) from None
        finally:
            self._tokens.put(token)

    def _leave(self) -> None:
        with self._lock:
            self._held -= 1

    def close(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)


class Worker:
    """One child process that runs jobs one at a time: started on first use, killed when a job runs past
    :data:`READ_LIMIT_S` or the server stops. It is a fresh interpreter (``spawn``: nothing of the server's threads
    or locks is copied), so a script that serves :func:`~gpuplan.web.app.create_app` itself guards its entry point
    (``if __name__ == "__main__":``), as every program that starts processes so must."""

    def __init__(self) -> None:
        self._proc: Any = None
        self._conn: Any = None
        self._lock = threading.Lock()

    def start(self) -> None:
        with self._lock:
            if self._proc is not None and self._proc.is_alive():
                return
            context = multiprocessing.get_context("spawn")
            conn, child = context.Pipe()
            proc = context.Process(target=_serve, args=(child, READER_MEMORY), daemon=True, name="gpuplan-reader")
            try:
                proc.start()
            finally:
                child.close()
            self._proc, self._conn = proc, conn

    def stop(self) -> None:
        with self._lock:
            if self._proc is not None:
                self._proc.kill()
                self._proc.join(5)
                self._conn.close()
            self._proc = self._conn = None

    def call(self, fn: Callable[..., T], args: tuple) -> T:
        """``fn(*args)`` in the child. Its request is answered by its deadline either way (:class:`Lane`); the job
        may go on to :data:`READ_LIMIT_S`, then the child is killed."""
        self.start()
        try:
            self._conn.send((fn, args))
            if not self._conn.poll(READ_LIMIT_S):
                self.stop()
                raise too_slow(READ_LIMIT_S)
            ok, value = self._conn.recv()
        except (EOFError, OSError):
            code = self._proc.exitcode if self._proc is not None else None
            self.stop()
            raise GpuplanError(f"reading the uploaded files stopped the server's reader (exit code {code}): use "
                               "`gpuplan estimate --dataset FILE` on the command line") from None
        if not ok:
            raise GpuplanError(value)
        return value


def _serve(conn, memory: int) -> None:
    """The child's loop: one job at a time until the server closes the pipe, its heap at most ``memory`` bytes
    (where the system bounds it). Every failure goes back as one sentence: a GpuplanError's own, else what broke
    (and its traceback on the server's stderr)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl+C reaches the whole group: the server stops its child
    if sys.platform == "linux":  # RLIMIT_DATA bounds malloc and mmap there (Linux 4.7+), not thread stacks
        import resource

        resource.setrlimit(resource.RLIMIT_DATA, (memory, memory))
    from . import api as jobs  # noqa: F401  # the jobs' module, imported before the first job arrives

    for model in (api.Scenario, api.Plan):  # made ready before it too: deferred (gpuplan.datafiles.made), each is
        api.ready(model)  # built when first dumped, and a job dumps its plan

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
        except MemoryError:
            reply = (False, f"reading the uploaded files needs more than the {memory / 2**30:g} GiB of memory the "
                            "server gives it: use `gpuplan estimate --dataset FILE` on the command line")
        except Exception as err:  # a file the readers did not foresee: a 422 that says what broke, not a 500;
            traceback.print_exc(file=sys.stderr)  # its text stays in the server's log: it may name the server's paths
            reply = (False, f"an uploaded file could not be read ({type(err).__name__}; the server's log has the "
                            "details)")
        try:
            conn.send(reply)
        except (EOFError, OSError):
            return


class Pools:
    """One server's lanes: :data:`WORKERS` threads for plans, :data:`DATA_WORKERS` reader processes."""

    def __init__(self) -> None:
        self.workers = [Worker() for _ in range(DATA_WORKERS)]
        self.plans = Lane("plans", [None] * WORKERS)
        self.data = Lane("uploaded files", self.workers, late=still_reading)

    def warm(self) -> None:
        """Start the reader processes (a fresh interpreter takes seconds to import gpuplan)."""
        for worker in self.workers:
            worker.start()

    def close(self) -> None:
        self.plans.close()
        self.data.close()
        for worker in self.workers:
            worker.stop()
