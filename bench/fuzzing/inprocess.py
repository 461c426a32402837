"""A ``gpuplan`` command run in this process, its exit code, output and any exception caught: what the runner
judges and the silent-drop cases re-run (a module of its own, which imports nothing of the fuzzer's: the runner
imports the cases that use it)."""

from __future__ import annotations

import contextlib
import io


def cli_in_process(argv: list[str]) -> tuple[int | None, str, str, BaseException | None]:
    from gpuplan.cli import run

    out, err = io.StringIO(), io.StringIO()
    code, exc = None, None
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = run(argv)
        except SystemExit as e:
            code = e.code if isinstance(e.code, int) else 0 if e.code is None else 1
        except Exception as e:
            exc = e
    return code, out.getvalue(), err.getvalue(), exc
