"""Running cases: each (seed, index) is drawn again wherever it runs, so a run is reproduced from two numbers.

A CLI case runs in process (``gpuplan.cli.run``, stdout and stderr captured), or now and then as a real
``python -m gpuplan`` process, in a folder of its own: the current directory (holding an ``existing`` folder and
a file, for the output options to meet), ``GPUPLAN_CACHE_DIR`` and ``GPUPLAN_CONFIG_DIR`` inside it,
``HF_HUB_OFFLINE=1``, ``GPUPLAN_TODAY`` pinned. ``gpuplan serve`` runs with ``uvicorn.run`` stubbed (it would
serve until stopped): its options are parsed and the page's app is built. A pool of worker processes runs the
cases in parallel (:class:`Pool`); a case past its time limit is a HANG and its worker is replaced.
"""

from __future__ import annotations

import contextlib
import io
import os
import random
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from . import oracle
from .api import draw_api, functions, judge_meta, meta_case
from .draw import CliCase, draw_cli
from .fixtures import Fixtures
from .inprocess import cli_in_process
from .tree import Command, commands
from .web import Endpoint, Schemas, draw_web, endpoints

REPO = Path(__file__).resolve().parents[2]
COMMITTED = REPO / "tests" / "data" / "fuzz"
TODAY = "2026-11-28"  # the golden answers' day (tests/golden/record.py): the bundled offers are in force
# how often each command is drawn, against 1 for any other (a new command gets 1); the slow ones less
WEIGHTS = {"estimate": 3.0, "cost": 2.0, "recommend": 2.0, "launch": 2.0, "capacity": 1.5, "table": 0.5,
           "simulate": 0.5, "serve": 0.5, "probe": 0.5, "gpuplan": 0.3}
SHARES = (("cli", 0.5), ("api", 0.33), ("web", 0.12), ("meta", 0.05))


@dataclass
class Outcome:
    seed: int
    index: int
    kind: str  # cli, api, web, meta
    command: str  # the table's row
    klass: str
    signature: str = ""
    detail: str = ""
    repro: str = ""
    units: int = 0
    cpu_s: float = 0.0
    wall_s: float = 0.0
    via: str = "in process"
    drop: tuple[int, ...] = ()
    mode: str = ""  # valid, mixed, wild

    def failed(self) -> bool:
        return self.klass in oracle.FAILURES


@dataclass
class Context:
    """What every worker needs: the commands, the API, the fixtures and a scratch folder."""

    scratch: Path
    fixtures: Fixtures = field(default_factory=Fixtures)
    commands: list[Command] = field(default_factory=list)
    api: dict[str, Any] = field(default_factory=dict)
    web: list[Endpoint] = field(default_factory=list)
    schemas: Schemas | None = None
    subprocess_share: float = 0.0
    only: tuple[str, ...] = ()  # commands (or "api NAME", "web POST /api/estimate", "meta NAME"); all when empty

    @classmethod
    def create(cls, scratch: Path, subprocess_share: float = 0.0, only: Iterable[str] = ()) -> Context:
        sys.path.insert(0, str(COMMITTED))
        from make import make  # tests/data/fuzz/make.py

        scratch.mkdir(parents=True, exist_ok=True)
        from .web import app_schema

        made = make(scratch / "fixtures")
        fixtures, cli, schema = Fixtures([COMMITTED, made]), commands(), app_schema()
        estimate = next(c for c in cli if c.name == "estimate")
        return cls(scratch=scratch, fixtures=fixtures, commands=cli, api=functions(), web=endpoints(schema),
                   schemas=Schemas(schema, estimate, fixtures), subprocess_share=subprocess_share, only=tuple(only))

    def estimate_command(self) -> Command:
        return next(c for c in self.commands if c.name == "estimate")

    def rows(self) -> list[tuple[str, str]]:
        """(kind, row) of everything a campaign draws from."""
        rows = [("cli", c.name) for c in self.commands] + [("api", f"api {n}") for n in self.api]
        rows += [("web", e.row) for e in self.web]
        rows += [("meta", "meta seq_len"), ("meta", "meta zero3 GPUs"), ("meta", "meta card defaults"),
                 ("meta", "meta module rules"), ("meta", "meta silent fields"), ("meta", "meta physics")]
        return [(k, n) for k, n in rows if not self.only or n in self.only]


def draw(ctx: Context, seed: int, index: int) -> tuple[str, str, Any]:
    """(kind, row, case) for run ``index`` of ``seed``."""
    r = random.Random(f"{seed}:{index}")
    rows = ctx.rows()
    kinds = [k for k, _ in SHARES if any(kind == k for kind, _ in rows)]
    kind = r.choices(kinds, [dict(SHARES)[k] for k in kinds])[0]
    names = [n for k, n in rows if k == kind]
    if kind == "cli":
        name = r.choices(names, [WEIGHTS.get(n, 1.0) for n in names])[0]
        return kind, name, draw_cli(r, next(c for c in ctx.commands if c.name == name), ctx.fixtures)
    if kind == "api":
        name = r.choice(names)
        fn = name.removeprefix("api ")
        return kind, name, draw_api(r, fn, ctx.api[fn], {"fixtures": ctx.fixtures, "estimate": ctx.estimate_command()})
    if kind == "web":
        name = r.choice(names)
        return kind, name, draw_web(r, next(e for e in ctx.web if e.row == name), ctx.schemas)
    name = r.choice(names)
    which = next((w for w in ("seq_len", "card", "module", "silent", "physics") if w in name), "zero3")
    return kind, name, meta_case(r, which)


# ---- one run -----------------------------------------------------------------------------------------------------
DEPTH = 5  # folders between a run's box and its root: a path that climbs out of the cache still lands in the box


def _run_dir(ctx: Context, seed: int, index: int, drop: tuple[int, ...]) -> tuple[Path, Path]:
    """A run's root (its cache, configuration and current folder inside) deep in a box of its own, and its current
    folder, holding a folder and a file that were there before."""
    box = ctx.scratch / "runs" / f"{seed}-{index}-{'-'.join(map(str, drop)) or 'all'}"
    shutil.rmtree(box, ignore_errors=True)
    root = box.joinpath(*(f"up{i}" for i in range(DEPTH)))
    cwd = root / "cwd"
    (cwd / "existing").mkdir(parents=True)
    (cwd / "existing" / "keep.txt").write_text("a file that was here before\n")
    (cwd / "afile.txt").write_text("a file, not a folder\n")
    return root, cwd


def box_of(root: Path) -> Path:
    return root.parents[DEPTH - 1]


def environment(root: Path) -> dict[str, str]:
    return {"GPUPLAN_CACHE_DIR": str(root / "cache"), "GPUPLAN_CONFIG_DIR": str(root / "config"),
            "HF_HUB_OFFLINE": "1", "GPUPLAN_TODAY": TODAY, "COLUMNS": "100", "BROWSER": "true",
            "TOKENIZERS_PARALLELISM": "false"}


def snapshot(root: Path) -> dict[str, tuple[int, int]]:
    """Every file (and link) in a run's box: its path from the box, size and modification time."""
    box = box_of(root)
    out = {}
    for dirpath, _, filenames in os.walk(box):
        for f in filenames:
            st = os.lstat(os.path.join(dirpath, f))
            out[os.path.relpath(os.path.join(dirpath, f), box)] = (st.st_size, st.st_mtime_ns)
    return out


def cli_subprocess(argv: list[str], cwd: Path, env: dict[str, str], timeout: float) -> tuple[int | None, str, str]:
    full = {**os.environ, **env, "PYTHONPATH": str(REPO / "src")}
    if argv[:1] == ["serve"]:
        return serve_subprocess(argv, cwd, full, timeout)
    try:
        p = subprocess.run([sys.executable, "-m", "gpuplan", *argv], cwd=cwd, env=full, capture_output=True,
                           text=True, errors="replace", timeout=timeout, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        return None, "", "timeout"
    return p.returncode, p.stdout, p.stderr


def serve_subprocess(argv: list[str], cwd: Path, env: dict[str, str], timeout: float) -> tuple[int | None, str, str]:
    """``gpuplan serve`` as a process: once it says it serves, one dataset is uploaded and the server is stopped
    as systemd and docker stop it (SIGTERM); it must stop within 15 s and leave no uploads folder behind (its
    temporary folder is the run's own). Exit 3 and a message when it does not."""
    import json
    import re
    import urllib.request

    tmp = cwd.parent / "tmp"
    tmp.mkdir(exist_ok=True)
    proc = subprocess.Popen([sys.executable, "-m", "gpuplan", *argv], cwd=cwd, env={**env, "TMPDIR": str(tmp)},
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, errors="replace",
                            stdin=subprocess.DEVNULL)
    first = proc.stdout.readline() if proc.stdout else ""  # "gpuplan serving URL ..." or nothing when refused
    url = re.search(r"serving (http://\S+/) ", first)
    if url and proc.poll() is None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and proc.poll() is None:
            try:
                request = urllib.request.Request(url.group(1) + "api/upload?kind=dataset&name=a.jsonl",
                                                 data=b'{"text": "hello"}\n',
                                                 headers={"content-type": "application/octet-stream"})
                with urllib.request.urlopen(request, timeout=5) as reply:
                    json.loads(reply.read())
                break
            except OSError:
                time.sleep(0.2)
        proc.terminate()
    try:
        out, err = proc.communicate(timeout=15 if url else timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, err = proc.communicate()
        return None, first + out, err
    # uvicorn shuts down on SIGTERM, then raises the signal again (so that a supervisor sees it): -15 is a stop
    code = 0 if url and proc.returncode == -signal.SIGTERM else proc.returncode
    if url and code == 0 and any(tmp.glob("gpuplan-uploads-*")):
        return 3, first + out, err + "\nthe uploads folder was left behind after SIGTERM"
    return code, first + out, err


@contextlib.contextmanager
def isolated(root: Path, cwd: Path):
    saved_env = {k: os.environ.get(k) for k in environment(root)}
    saved_cwd = os.getcwd()
    os.environ.update(environment(root))
    os.chdir(cwd)
    try:
        yield
    finally:
        os.chdir(saved_cwd)
        for k, v in saved_env.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def shown(argv: list[str], ctx: Context) -> str:
    import shlex

    text = "gpuplan " + shlex.join(argv)
    text = text.replace(str(COMMITTED), "tests/data/fuzz")
    for root in ctx.fixtures.roots[1:]:
        text = text.replace(str(root), "$MADE")
    return text


def _cli(ctx: Context, case: CliCase, drop: tuple[int, ...], root: Path, cwd: Path, via: str,
         timeout: float) -> oracle.Verdict:
    argv = case.argv(drop)
    if via == "subprocess":
        code, out, err = cli_subprocess(argv, cwd, environment(root), timeout)
        if code is None:
            return oracle.Verdict(oracle.HANG, f"{case.command}: past the time limit", f"{timeout:.0f} s (subprocess)")
        exc = None
    else:
        with isolated(root, cwd):
            code, out, err, exc = cli_in_process(argv)
    if exc is not None:
        import traceback

        return oracle.Verdict(oracle.TRACEBACK, oracle.cause(exc), "".join(traceback.format_exception(exc))[-800:])
    return oracle.judge_cli(case.command, argv, code, out, err, case.wants_json(drop))


def _api(case: Any, drop: tuple[int, ...], ctx: Context, root: Path, cwd: Path) -> oracle.Verdict:
    args, kwargs = case.call(drop)
    result, exc = None, None
    with isolated(root, cwd), contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        try:
            result = ctx.api[case.function](*args, **kwargs)
        except Exception as e:
            exc = e
        return oracle.judge_api(result, exc)


def _run(ctx: Context, kind: str, case: Any, index: int, drop: tuple[int, ...], root: Path, cwd: Path, via: str,
         timeout: float) -> tuple[oracle.Verdict, str, int, list[str]]:
    """Run one case: its verdict, reproducer, units left and the paths it named (that it may write to)."""
    roots = (str(COMMITTED), *(str(r) for r in ctx.fixtures.roots[1:]))
    if kind == "cli":
        argv = case.argv(drop)
        named = [t.split("=", 1)[-1] for t in argv]
        return _cli(ctx, case, drop, root, cwd, via, timeout * 3), shown(argv, ctx), len(case.kept(drop)), named
    if kind == "api":
        args, kwargs = case.call(drop)
        named = [v for v in (*args, *kwargs.values()) if isinstance(v, (str, os.PathLike))]
        return _api(case, drop, ctx, root, cwd), case.text(drop, roots), len(case.optional) - len(drop), named
    if kind == "web":
        from .web import judge

        with isolated(root, ctx.scratch):  # the page's reader process starts in the current folder: one that stays
            verdict = judge(case, drop, f"10.{index >> 16 & 255}.{index >> 8 & 255}.{index & 255}")
        return verdict, case.text(drop, roots), len(case.optional) - len(drop), []
    with isolated(root, cwd):
        verdict = judge_meta(case)
    if "silent" in case:
        from . import silent

        return verdict, silent.shown({**case["silent"]["base"], **case["silent"]["extra"]}), 0, []
    if "card" in case or "module" in case:
        return verdict, f"gpuplan.estimate({case.get('card') or case['module']})", 0, []
    if "physics" in case:
        return verdict, f"gpuplan.estimate({case['physics']}), and with {case['vary']} doubled", 0, []
    return verdict, f"gpuplan.estimate({case['base']} with {case['vary']} in {case['values']})", 0, []


def _files_verdict(root: Path, cwd: Path, before: dict, named: list[str], refused: bool) -> oracle.Verdict | None:
    """:func:`oracle.judge_files` for one run: its cache, configuration and temporary folder are the user's; it
    may write in its current folder and where it named."""
    box = box_of(root)
    rel = lambda p: os.path.relpath(p, box)  # noqa: E731
    allowed = [rel(cwd)]
    for name in named:
        with contextlib.suppress(OSError, ValueError, RuntimeError):  # a link loop: RuntimeError before 3.13
            target = (cwd / Path(os.fspath(name)).expanduser()).resolve()
            if target.is_relative_to(box):
                allowed.append(rel(target))
    mine = [rel(root / d) for d in ("cache", "config", "tmp")]
    return oracle.judge_files(before, snapshot(root), mine, allowed, refused,
                              lambda p: oracle.parse_written(box / p))


def execute(ctx: Context, seed: int, index: int, drop: tuple[int, ...] = (), timeout: float = 30.0) -> Outcome:
    """Draw and run case ``index`` of ``seed`` (without the units in ``drop``) and judge it: its answer, then the
    files it left (:func:`oracle.judge_files`)."""
    kind, row, case = draw(ctx, seed, index)
    root, cwd = _run_dir(ctx, seed, index, drop)
    via = "subprocess" if kind == "cli" and random.Random(f"{seed}:{index}:via").random() < ctx.subprocess_share \
        else "in process"
    for name, data in getattr(case, "files", {}).items():  # the files the case made (mutate.py)
        (cwd / name).write_bytes(data)
    before = snapshot(root)
    t0, c0 = time.perf_counter(), time.process_time()
    verdict, repro, units, named = _run(ctx, kind, case, index, drop, root, cwd, via, timeout)
    cpu, wall = time.process_time() - c0, time.perf_counter() - t0
    for name, data in getattr(case, "files", {}).items():
        repro += f"  # {name}: {data[:300].decode('utf-8', 'replace')!r}"
    if verdict.klass in (oracle.OK, oracle.CLEAN):
        verdict = _files_verdict(root, cwd, before, named, verdict.klass == oracle.CLEAN) or verdict
    shutil.rmtree(box_of(root), ignore_errors=True)
    if verdict.klass != oracle.HANG and cpu > timeout:
        verdict = oracle.Verdict(oracle.HANG, f"{row}: past the time limit",
                                 f"{cpu:.0f} s of CPU, past {timeout:.0f} s")
    return Outcome(seed=seed, index=index, kind=kind, command=row, klass=verdict.klass, signature=verdict.signature,
                   detail=verdict.detail, repro=repro, units=units, cpu_s=round(cpu, 3), wall_s=round(wall, 3),
                   via=via, drop=drop, mode=getattr(case, "mode", "valid"))


def prepare_worker() -> None:
    """Stubs for what would block or reach outside: a browser, a server that serves until stopped."""
    os.environ["BROWSER"] = "true"
    import webbrowser

    webbrowser.open = lambda *a, **k: True  # type: ignore[assignment]
    try:
        import uvicorn
    except ImportError:
        return

    def built_only(app: Any, **_: Any) -> None:
        if not callable(app):
            raise TypeError("gpuplan serve built no ASGI app")

    uvicorn.run = built_only  # type: ignore[assignment]


# ---- the pool ----------------------------------------------------------------------------------------------------
def _cpu_seconds(pid: int) -> float:
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return 0.0


def _worker(conn: Any, ctx: Context, timeout: float, memory_gib: float) -> None:
    with contextlib.suppress(OSError):
        os.setsid()
    if memory_gib:
        import resource

        limit = int(memory_gib * 2**30)
        resource.setrlimit(resource.RLIMIT_DATA, (limit, limit))
    import tempfile

    (ctx.scratch / "tmp").mkdir(exist_ok=True)  # the page's uploads folder too: gone with the scratch folder
    os.environ["TMPDIR"] = tempfile.tempdir = str(ctx.scratch / "tmp")
    prepare_worker()
    try:
        while True:
            task = conn.recv()
            if task is None:
                return
            seed, index, drop = task
            try:
                outcome = execute(ctx, seed, index, tuple(drop), timeout)
            except BaseException as e:
                outcome = Outcome(seed=seed, index=index, kind="?", command="(runner)", klass=oracle.TRACEBACK,
                                  signature=oracle.cause(e), detail=repr(e)[:300])
            conn.send(asdict(outcome))
    finally:
        from .web import close

        close()


@dataclass
class _Slot:
    proc: Any = None
    conn: Any = None
    task: tuple | None = None
    started: float = 0.0
    cpu0: float = 0.0


class Pool:
    """Worker processes running tasks ``(seed, index, drop)``; a task past ``timeout`` seconds of CPU (or
    ``3 x timeout`` of wall time, the machine being shared) is a HANG, and its worker is replaced."""

    def __init__(self, ctx: Context, workers: int = 2, timeout: float = 30.0, memory_gib: float = 4.0):
        import multiprocessing

        self.ctx, self.timeout, self.memory_gib = ctx, timeout, memory_gib
        self.mp = multiprocessing.get_context("fork")
        self.slots = [self._start(_Slot()) for _ in range(max(1, workers))]

    def _start(self, slot: _Slot) -> _Slot:
        parent, child = self.mp.Pipe()
        # not a daemon: the page's app starts its reader process in it (close() ends the workers)
        slot.proc = self.mp.Process(target=_worker, args=(child, self.ctx, self.timeout, self.memory_gib))
        slot.proc.start()
        slot.conn, slot.task = parent, None
        return slot

    def _kill(self, slot: _Slot) -> None:
        try:
            os.killpg(slot.proc.pid, 9)
        except OSError:
            slot.proc.kill()
        slot.proc.join(5)
        self._start(slot)

    def close(self) -> None:
        for slot in self.slots:
            with contextlib.suppress(OSError, BrokenPipeError):
                slot.conn.send(None)
            slot.proc.join(5)
            if slot.proc.is_alive():
                slot.proc.kill()

    def run(self, tasks: Iterable[tuple[int, int, tuple[int, ...]]]) -> Iterator[Outcome]:
        from multiprocessing.connection import wait

        pending = list(tasks)[::-1]
        while pending or any(s.task for s in self.slots):
            for slot in self.slots:
                if slot.task is None and pending:
                    slot.task = pending.pop()
                    slot.started, slot.cpu0 = time.monotonic(), _cpu_seconds(slot.proc.pid)
                    slot.conn.send(slot.task)
            busy = [s for s in self.slots if s.task]
            for conn in wait([s.conn for s in busy], timeout=0.5):
                slot = next(s for s in busy if s.conn is conn)
                yield self._received(slot)
            for slot in busy:
                if slot.task is not None:
                    late = self._late(slot)
                    if late:
                        yield late

    def _received(self, slot: _Slot) -> Outcome:
        task = slot.task
        try:
            data = slot.conn.recv()
            data["drop"] = tuple(data["drop"])
            outcome = Outcome(**data)
        except (EOFError, OSError):  # the worker died: a signal (abort, segfault) or the memory limit
            code = slot.proc.exitcode
            outcome = self._lost(task, oracle.TRACEBACK, f"the process died (exit {code})", "")
            self._start(slot)
        slot.task = None
        return outcome

    def _late(self, slot: _Slot) -> Outcome | None:
        cpu = _cpu_seconds(slot.proc.pid) - slot.cpu0
        wall = time.monotonic() - slot.started
        if cpu <= self.timeout and wall <= 3 * self.timeout:
            return None
        task = slot.task
        self._kill(slot)
        return self._lost(task, oracle.HANG, "past the time limit", f"{cpu:.0f} s CPU, {wall:.0f} s wall", cpu, wall)

    def _lost(self, task: tuple, klass: str, why: str, detail: str, cpu: float = 0.0, wall: float = 0.0) -> Outcome:
        seed, index, drop = task
        kind, row, case = draw(self.ctx, seed, index)
        if kind == "cli":
            repro = shown(case.argv(drop), self.ctx)
        elif kind in ("api", "web"):
            repro = case.text(drop, (str(COMMITTED), *(str(r) for r in self.ctx.fixtures.roots[1:])))
        else:
            repro = str(case)
        for name, data in getattr(case, "files", {}).items():
            repro += f"  # {name}: {data[:300].decode('utf-8', 'replace')!r}"
        return Outcome(seed=seed, index=index, kind=kind, command=row, klass=klass, signature=f"{row}: {why}",
                       detail=detail, repro=repro, cpu_s=round(cpu, 1), wall_s=round(wall, 1), drop=tuple(drop))
