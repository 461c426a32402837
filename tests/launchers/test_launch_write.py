"""Where a launch writes: the output folder is checked before the plan is made, the files are written all or none,
and a file already there is replaced, never followed (fuzz-report-3 C6 and its usability notes on ``-o``; issue 29
item 2)."""

from __future__ import annotations

import errno
import io
import os
from pathlib import Path

import pytest

import gpuplan
from gpuplan.cli import run
from gpuplan.errors import GpuplanError

ARGS = ["launch", "--model", "qwen2.5-0.5b", "--task", "train", "--method", "lora", "--gpu", "rtx-4090",
        "--target", "trainer,torchrun"]
SCENARIO = {"model": "qwen2.5-0.5b", "task": "train", "method": "lora", "gpu": "rtx-4090"}
WRITTEN = ["plan.json", "torchrun.sh", "trainer.yaml"]


def launch(capsys, *out: str) -> tuple[int, str]:
    code = run([*ARGS, *out])
    return code, capsys.readouterr().err.strip()


def tree(folder: Path) -> set[Path]:
    return set(folder.rglob("*"))


@pytest.mark.parametrize("folder, text", [
    ("", "empty or blank"), (" ", "empty or blank"), ("runs/ ", "begins or ends with a space"),
    (" runs", "begins or ends with a space"), ("a" * 300, "300 bytes"), ("x/" + "é" * 200 + "/y", "400 bytes"),
])
def test_a_bad_folder_name_is_one_sentence_and_writes_nothing(folder, text, tmp_path, monkeypatch, capsys):
    """``-o ''`` wrote into the current folder unasked and ``-o ' '`` made a folder named by a space; a
    300-character name was an OSError traceback."""
    monkeypatch.chdir(tmp_path)
    code, err = launch(capsys, "-o", folder)
    assert code == 2 and text in err and "\n" not in err and err.startswith("error:"), err
    assert tree(tmp_path) == set()


@pytest.mark.parametrize("folder", ["~", "~/runs/a"])
def test_a_tilde_is_the_home_folder_as_a_shell_reads_it(folder, tmp_path, monkeypatch, capsys):
    """``launch -o '~'`` (quoted, or from the Python API) made a folder literally named ``~`` in the current one;
    ``~`` is expanded as a shell would, into $HOME."""
    home, here = tmp_path / "home", tmp_path / "here"
    home.mkdir(), here.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.chdir(here)
    code, err = launch(capsys, "-o", folder)
    assert code == 0, err
    assert tree(here) == set()
    assert sorted(p.name for p in (home / folder[2:]).iterdir()) == WRITTEN
    report = gpuplan.launch(SCENARIO, targets=["trainer"], folder="~/api", force=True)
    assert report.folder == str(home / "api") and (home / "api" / "trainer.yaml").is_file()


@pytest.fixture
def read_only(tmp_path, monkeypatch):
    """A folder that cannot be written to: its mode 0o555 and, since root writes through any mode, creating or
    opening a file under it fails with EROFS as on a read-only mount."""
    folder = tmp_path / "ro"
    folder.mkdir()
    (folder / "keep.txt").write_text("mine")
    folder.chmod(0o555)
    if os.geteuid() == 0:
        def inside(path) -> bool:
            return Path(os.path.abspath(os.fspath(path))).is_relative_to(folder)

        def refuse(real):
            def call(path, *args, **kwargs):
                mode = args[0] if args and real is io.open else kwargs.get("mode", "r")
                if inside(path) and (real is os.mkdir or set(str(mode)) & set("wxa+")):
                    raise OSError(errno.EROFS, os.strerror(errno.EROFS), str(path))
                return real(path, *args, **kwargs)
            return call

        monkeypatch.setattr(os, "mkdir", refuse(os.mkdir))
        monkeypatch.setattr(io, "open", refuse(io.open))
        monkeypatch.setattr("builtins.open", refuse(io.open))
    yield folder
    folder.chmod(0o755)


@pytest.mark.parametrize("sub", ["", "new"])
def test_a_read_only_folder_is_one_sentence(sub, read_only, capsys):
    """C6: ``launch -o`` into a read-only folder was an OSError traceback naming trainer.yaml."""
    before = tree(read_only)
    code, err = launch(capsys, "-o", str(read_only / sub))
    assert code == 2 and "nothing was written" in err and "\n" not in err, err
    assert ("Read-only" in err or "Permission denied" in err) and "Traceback" not in err
    assert tree(read_only) == before and (read_only / "keep.txt").read_text() == "mine"


def test_a_failed_write_leaves_nothing_half_written(tmp_path, monkeypatch):
    """A disk that fills after the first file: a new folder is not created at all, and an existing one keeps
    every file it held (with --force too) and gains none."""
    real = io.open
    opened = []

    def full_disk(path, mode="r", *args, **kwargs):
        if ("x" in mode or "w" in mode) and Path(os.fspath(path)).is_relative_to(tmp_path):
            opened.append(path)
            if len(opened) == 2:
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(path))
        return real(path, mode, *args, **kwargs)

    monkeypatch.setattr("builtins.open", full_disk)
    monkeypatch.setattr(io, "open", full_disk)
    with pytest.raises(GpuplanError, match="No space left on device; nothing was written"):
        gpuplan.launch(SCENARIO, targets=["trainer", "torchrun"], folder=tmp_path / "new" / "run")
    assert tree(tmp_path) == set() and len(opened) == 2
    old = tmp_path / "old"
    old.mkdir()
    for name in WRITTEN:
        (old / name).write_text(f"old {name}")
    opened.clear()
    with pytest.raises(GpuplanError, match="nothing was written"):
        gpuplan.launch(SCENARIO, targets=["trainer", "torchrun"], folder=old, force=True)
    assert sorted(p.name for p in old.iterdir()) == WRITTEN
    assert all((old / name).read_text() == f"old {name}" for name in WRITTEN)


def test_a_link_in_the_folder_is_replaced_not_followed(tmp_path):
    """With --force a symbolic link named like a launch file is replaced by the file; what it pointed at is left
    as it was. A dangling link is a file already there (it was written through, creating its target)."""
    victim = tmp_path / "victim.txt"
    victim.write_text("precious")
    out = tmp_path / "out"
    out.mkdir()
    (out / "trainer.yaml").symlink_to(victim)
    (out / "torchrun.sh").symlink_to(tmp_path / "nowhere.sh")
    with pytest.raises(GpuplanError, match=r"already holds trainer\.yaml, torchrun\.sh"):
        gpuplan.launch(SCENARIO, targets=["trainer", "torchrun"], folder=out)
    assert not (tmp_path / "nowhere.sh").exists()
    report = gpuplan.launch(SCENARIO, targets=["trainer", "torchrun"], folder=out, force=True)
    assert victim.read_text() == "precious" and not (tmp_path / "nowhere.sh").exists()
    assert not (out / "trainer.yaml").is_symlink() and "model_name_or_path" in (out / "trainer.yaml").read_text()
    assert sorted(Path(f.path).name for f in report.files) == WRITTEN
    assert sorted(p.name for p in out.iterdir()) == WRITTEN  # no staging folder left behind


def test_files_land_with_their_modes_and_unrelated_files_stay(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    (out / "notes.md").write_text("mine")
    gpuplan.launch(SCENARIO, targets=["trainer", "torchrun"], folder=out)
    assert sorted(p.name for p in out.iterdir()) == sorted([*WRITTEN, "notes.md"])
    assert os.access(out / "torchrun.sh", os.X_OK) and (out / "notes.md").read_text() == "mine"
    nested = tmp_path / "a" / "b" / "c"
    gpuplan.launch(SCENARIO, targets=["trainer"], folder=nested)
    assert sorted(p.name for p in nested.iterdir()) == ["plan.json", "trainer.yaml"]


@pytest.mark.parametrize("folder", [None, 3, b"out", float("nan")])
def test_the_api_folder_must_be_a_path(folder):
    with pytest.raises(GpuplanError, match="folder path"):
        gpuplan.launch(SCENARIO, targets=["trainer"], folder=folder)


def test_a_file_or_a_folder_in_the_way_is_one_sentence(tmp_path, capsys):
    (tmp_path / "file").write_text("x")
    code, err = launch(capsys, "-o", str(tmp_path / "file"))
    assert code == 2 and "is a file, not a folder" in err
    (tmp_path / "out" / "trainer.yaml").mkdir(parents=True)
    code, err = launch(capsys, "-o", str(tmp_path / "out"), "--force")
    assert code == 2 and "holds a folder named like a launch file" in err


# a child that launches into FOLDER (new, or existing with a file already there) and stops in the middle: its
# staging folder holds the files, nothing is in place yet; it says so on stdout and waits for the signal
STOPPED_CHILD = """
import os, sys, time
from pathlib import Path
import gpuplan
from gpuplan.launchers import files
folder, into_existing = Path(sys.argv[1]), sys.argv[2] == "existing"
rename = os.rename
said = []
def slow_rename(a, b):
    if ".gpuplan-launch." in str(a) + str(b) and not said:  # the first rename out of or into staging
        said.append(print("staged", flush=True))
        time.sleep(60)
    return rename(a, b)
files.os.rename = slow_rename
gpuplan.launch({"model": "qwen2.5-0.5b", "task": "train", "method": "lora", "gpu": "rtx-4090"},
               targets=["trainer", "torchrun"], folder=folder, force=into_existing)
"""


def _signals_at_default() -> None:
    import signal

    for kind in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):
        signal.signal(kind, signal.SIG_DFL)


@pytest.mark.parametrize("into", ["new", "existing"])
@pytest.mark.parametrize("signum", ["SIGTERM", "SIGHUP", "SIGINT"])
def test_a_stop_signal_mid_write_leaves_no_hidden_folder(tmp_path, into, signum):
    """A launch stopped while it writes (``timeout``, ``kill``, a closed terminal, Ctrl-C) removes its hidden
    staging folder (``.gpuplan-launch.*.tmp``) and the folders it made, then ends by that signal; the user's
    folder holds what it held before."""
    import signal
    import subprocess
    import sys

    folder = tmp_path / "runs" / "a"
    if into == "existing":
        folder.mkdir(parents=True)
        (folder / "trainer.yaml").write_text("mine\n")
    before = {p: p.read_bytes() if p.is_file() else None for p in tmp_path.rglob("*")}
    env = {**os.environ, "PYTHONPATH": str(Path(gpuplan.__file__).parents[1])}
    # the child starts with the three signals at their defaults, as from a terminal or `timeout`: a parent that
    # ignores them (nohup, a background job of a script) passes that on, and gpuplan leaves an ignored signal alone
    child = subprocess.Popen([sys.executable, "-c", STOPPED_CHILD, str(folder), into], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True, env=env, preexec_fn=_signals_at_default)
    try:
        assert child.stdout.readline().strip() == "staged", child.stderr.read()[-2000:]
        assert any(p.name.startswith(".gpuplan-launch.") for p in tmp_path.rglob("*"))  # mid-write, for real
        child.send_signal(getattr(signal, signum))
        code = child.wait(timeout=60)
    finally:
        child.kill()
    assert code == -getattr(signal, signum)  # ended by the signal, as it would have without the write
    after = {p: p.read_bytes() if p.is_file() else None for p in tmp_path.rglob("*")}
    assert after == before, sorted(map(str, set(after) ^ set(before)))


def test_what_a_killed_launch_left_goes_at_the_next(tmp_path):
    """SIGKILL cannot be caught: the staging folder a killed launch left (its process gone, a minute untouched) is
    removed by the next launch into the same folder; one of a running process, or a fresh one, stays."""
    import subprocess
    import sys

    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    dead = int(gone.stdout)
    stale, fresh = tmp_path / f".gpuplan-launch.{dead}-0123abcd.tmp", tmp_path / f".gpuplan-launch.{dead}-89abcdef.tmp"
    live = tmp_path / f".gpuplan-launch.{os.getpid()}-0123abcd.tmp"
    for p in (stale, fresh, live):
        p.mkdir()
        (p / "torchrun.sh").write_text("#!/bin/sh\n")
    os.utime(stale, (0, 0))
    os.utime(live, (0, 0))
    gpuplan.launch(SCENARIO, targets=["trainer"], folder=tmp_path / "run")
    assert not stale.exists() and fresh.is_dir() and live.is_dir()
    assert (tmp_path / "run" / "trainer.yaml").is_file()
