"""Shared fixtures. Tests marked ``sim`` need torch + transformers: on CI (``CI`` set) a missing install is
an error, not a skip, so the oracle tests cannot silently stop running. A library a test compares against (through
:func:`require`) must be the release constraints.txt pins, the one the suite was validated with; any other fails
the test in one line (``GPUPLAN_ANY_VERSIONS=1``, as .ci/newest sets, runs the comparisons anyway).

The suite runs on two processes (pytest-xdist, pyproject.toml's addopts ``-n 2 --dist loadgroup``; ``-n 0`` runs it
in this one, for ``--pdb``): every worker collects the same tests (one sampling round, fixed by the controller), the
tests that share a fixture their module makes once run in one worker (:func:`_group`), and each worker computes on
one thread, so that the two never contend for the two cores."""

from __future__ import annotations

import contextlib
import functools
import importlib
import io
import os
import subprocess
import sys
from collections import defaultdict
from importlib import metadata
from pathlib import Path

import pytest
from packaging.utils import canonicalize_name
from packaging.version import Version

import sampling

if os.environ.get("PYTEST_XDIST_WORKER"):  # before torch is imported: its thread pool reads it once
    os.environ.setdefault("OMP_NUM_THREADS", "1")
CONSTRAINTS = Path(__file__).resolve().parents[1] / "constraints.txt"


def require(module: str):
    """Import ``module`` or skip, except on CI where its absence fails the test; fail in one line when its
    release is not the validated one (:func:`check_version`)."""
    imported = importlib.import_module(module) if os.environ.get("CI") else pytest.importorskip(module)
    for distribution in _distributions().get(module.split(".")[0], []):
        check_version(distribution)
    return imported


def asked(client, path: str, body: dict, bound_s: float = 60.0):
    """``client.post(path, json=body)`` asked as the web page asks: while the server answers 503 with a Retry-After
    (a reader or worker process started cold past the 10 s deadline, as on a loaded machine or beside another xdist
    worker), ask again after it, up to ``bound_s`` (the readers' own 60 s bound); any other answer is returned."""
    import time

    deadline = time.monotonic() + bound_s
    while True:
        r = client.post(path, json=body)
        if r.status_code != 503 or "retry-after" not in r.headers or time.monotonic() > deadline:
            return r
        time.sleep(float(r.headers["retry-after"]))


def step_timer_of(base: dict, **fields):
    """The serving step timer (:func:`gpuplan.speed.inference.step_timer`) of scenario ``base`` with ``fields``
    changed, resolved on its model and card as every plan is: the speed tests' ``timer``
    (``functools.partial(step_timer_of, BASE)``)."""
    from gpuplan.plan.resolve import resolve
    from gpuplan.scenario import scenario_from
    from gpuplan.speed.inference import step_timer

    r = resolve(scenario_from({**base, **fields}))
    return step_timer(r.scenario, r.model, r.gpu)


@functools.cache
def validated_versions() -> dict[str, str]:
    """constraints.txt as {canonical distribution name: the version the suite was validated with}."""
    pins = {}
    for line in CONSTRAINTS.read_text(encoding="utf-8").splitlines() if CONSTRAINTS.is_file() else []:
        name, pinned, version = line.split("#")[0].strip().partition("==")
        if pinned:
            pins[canonicalize_name(name)] = version.strip()
    return pins


@functools.cache
def _distributions() -> dict[str, list[str]]:
    return metadata.packages_distributions()


def check_version(distribution: str) -> None:
    """Fail the test, in one line, when the installed ``distribution`` is not the release constraints.txt pins:
    what a comparison with its output expects holds for that release only."""
    expected = validated_versions().get(canonicalize_name(distribution))
    if expected is None or os.environ.get("GPUPLAN_ANY_VERSIONS"):
        return
    installed = Version(metadata.version(distribution)).public
    if installed != expected:
        pytest.fail(f"this test compares with {distribution} {expected} (constraints.txt); installed {installed}: "
                    "pip install -e '.[all]' -c constraints.txt, or re-validate the suite on it and re-pin "
                    "(python .ci/lock)", pytrace=False)


def pytest_configure(config):
    """Fix this run's sampling round (tests/sampling.py) before pytest-xdist starts its workers, which inherit the
    environment: every worker then samples the same tests, as xdist requires, also when the run crosses midnight."""
    if not hasattr(config, "workerinput"):  # the controller, or a run in one process
        os.environ.setdefault("GPUPLAN_SWEEP_SEED", str(sampling.sweep_round()))


def pytest_report_header(config):
    return sampling.header()


def pytest_terminal_summary(terminalreporter):  # also under -q, which leaves the header out
    terminalreporter.write_line(sampling.header())


@pytest.hookimpl(tryfirst=True)  # before pytest-xdist's own, which names the group in the test id
def pytest_collection_modifyitems(config, items):
    try:
        import torch

        has_cuda = torch.cuda.is_available()
    except ImportError:
        has_cuda = False
    for item in items:
        if "gpu" in item.keywords and not has_cuda:
            item.add_marker(pytest.mark.skip(reason="needs a CUDA GPU"))
    _sample(config, items)
    _group(items)


def _sample(config, items):
    """Keep this run's part of every test marked ``sampled(parts)`` (tests/sampling.py); a test or case named
    on the command line (``file::test`` or ``file::test[id]``) runs whole."""
    named = [(os.path.basename(arg.split("::", 1)[0]), arg.split("::", 1)[1]) for arg in config.args if "::" in arg]

    def asked(item) -> bool:
        file, _, test = item.nodeid.partition("::")
        return any(os.path.basename(file) == f and test.startswith(t) for f, t in named)

    groups: dict[tuple, list] = defaultdict(list)
    for item in items:
        marker = item.get_closest_marker("sampled")
        if marker is not None:
            groups[(item.path, item.originalname, marker.args[0])].append(item)
    dropped = set()
    for (_path, _name, parts), group in groups.items():
        kept = set(sampling.part_of([item.nodeid for item in group], parts))
        dropped |= {item.nodeid for item in group if item.nodeid not in kept and not asked(item)}
    if dropped:
        config.hook.pytest_deselected(items=[item for item in items if item.nodeid in dropped])
        items[:] = [item for item in items if item.nodeid not in dropped]


def _group(items):
    """Under ``--dist loadgroup`` the two workers take the tests one by one, except the tests of one group, which
    one worker runs: a test that takes a fixture its test module defines with a wider scope than the test (the
    architecture sweep, a server, a browser, a virtual environment) joins that module's group, so that the fixture
    is made once. A test marked ``xdist_group`` itself keeps its group."""
    for item in items:
        if item.get_closest_marker("xdist_group") is not None:
            continue
        info = getattr(item, "_fixtureinfo", None)
        shared = {d.baseid for defs in (info.name2fixturedefs.values() if info else ()) for d in defs
                  if d.scope != "function" and d.baseid.endswith(".py")}
        if shared:
            item.add_marker(pytest.mark.xdist_group(min(shared)))


@pytest.fixture(autouse=True, scope="session")
def _isolated_user_dirs(tmp_path_factory):
    """Tests never read or write the developer's own cache or configuration (refreshed prices, discounts)."""
    root = tmp_path_factory.mktemp("userdirs")
    old = {k: os.environ.get(k) for k in ("GPUPLAN_CACHE_DIR", "GPUPLAN_CONFIG_DIR")}
    os.environ["GPUPLAN_CACHE_DIR"] = str(root / "cache")
    os.environ["GPUPLAN_CONFIG_DIR"] = str(root / "config")
    yield root
    for k, v in old.items():
        if v is None:
            os.environ.pop(k, None)
        else:
            os.environ[k] = v


@contextlib.contextmanager
def one_at_a_time(lock: Path):
    """Hold the file ``lock`` for the block (created if missing), so that the workers of a run (pytest-xdist) or two
    runs making the same install in the user's cache take turns: the second finds it made. Without ``fcntl``
    (Windows) the block runs unguarded."""
    try:
        import fcntl
    except ImportError:
        yield
        return
    lock.parent.mkdir(parents=True, exist_ok=True)
    with lock.open("a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


@contextlib.contextmanager
def fresh_structures(folder: Path):
    """``GPUPLAN_CACHE_DIR`` pointed at an empty ``folder`` for the block (for module-scoped fixtures, which cannot
    take ``monkeypatch``): every model structure read inside it is traced afresh."""
    saved = os.environ.get("GPUPLAN_CACHE_DIR")
    os.environ["GPUPLAN_CACHE_DIR"] = str(folder)
    try:
        yield folder
    finally:
        if saved is None:
            os.environ.pop("GPUPLAN_CACHE_DIR")
        else:
            os.environ["GPUPLAN_CACHE_DIR"] = saved


def read_trainer(folder: Path, monkeypatch, world_size: int, script: str = "sft"):
    """``trainer.yaml`` through TRL's parser (its ``sft`` or ``dpo`` script's), on an emulated bf16 GPU and
    ``world_size`` processes."""
    require("trl")
    import transformers.training_args as ta
    from transformers import TrainingArguments

    make_parser = importlib.import_module(f"trl.scripts.{script}").make_parser

    monkeypatch.setattr(ta, "is_torch_bf16_gpu_available", lambda: True)
    monkeypatch.setattr(TrainingArguments, "world_size", property(lambda self: world_size))
    monkeypatch.chdir(folder)
    script, args, model, _ = make_parser().parse_args_and_config(["--config", "trainer.yaml"])
    return script, args, model


def cli_in_process(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    """``gpuplan ARGS`` run in this process (:func:`gpuplan.cli.run`, with ``sys.argv`` the command's and from
    ``cwd`` when given), as the ``subprocess.run`` of it would answer (exit code, stdout, stderr): a fresh
    interpreter per command imports the package again (~0.8 CPU-s) before it plans anything. An exception the
    command line lets out fails the test where a process would print its traceback. The tests of the process itself
    (piping, ``COLUMNS``, what ``import gpuplan`` loads) keep their subprocesses."""
    from unittest import mock

    from gpuplan.cli import run

    out, err = io.StringIO(), io.StringIO()
    with contextlib.chdir(cwd or Path.cwd()), contextlib.redirect_stdout(out), contextlib.redirect_stderr(err), \
            mock.patch.object(sys, "argv", ["gpuplan", *args]):  # launch writes its command (cli/launch.py)
        code = run(list(args))
    return subprocess.CompletedProcess(["gpuplan", *args], code, out.getvalue(), err.getvalue())
