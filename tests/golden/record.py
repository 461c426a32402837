"""Run the golden cases (:mod:`cases`) in this process and write, or compare, their answers.

    python tests/golden/record.py            # record every case into tests/golden/answers/
    python tests/golden/record.py NAME...    # record only these

Each answer is the case's exit code, its ``--json`` (parsed) or its stdout, the first line of stderr and, for
``launch``, the text of every file written (the output folder written as ``<OUT>``). The date is pinned to
:data:`TODAY` through ``GPUPLAN_TODAY`` so that the prices' ages, and so the offers in force, do not move with the
calendar.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
ANSWERS = HERE / "answers"
TODAY = "2026-11-28"


def environment(scratch: Path) -> dict[str, str]:
    """The variables every case runs under: the pinned date, empty user folders, a fixed width, no network."""
    return {"GPUPLAN_TODAY": TODAY, "GPUPLAN_CACHE_DIR": str(scratch / "cache"),
            "GPUPLAN_CONFIG_DIR": str(scratch / "config"), "COLUMNS": "200", "HF_HUB_OFFLINE": "1"}


def answer(args: list[str]) -> dict:
    """One case run through the command line's entry point, in this process."""
    from gpuplan.cli import run

    with tempfile.TemporaryDirectory() as tmp:
        scratch = Path(tmp)
        args = list(args)
        if args[0] == "launch":
            args += ["-o", str(scratch / "out")]
        saved = {k: os.environ.get(k) for k in environment(scratch)}
        os.environ.update(environment(scratch))
        out, err = io.StringIO(), io.StringIO()
        cwd, argv = os.getcwd(), sys.argv
        try:
            os.chdir(ROOT)
            sys.argv = ["gpuplan", *args]  # what launch files echo as the command that wrote them
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
                code = run(args)
        finally:
            os.chdir(cwd)
            sys.argv = argv
            for k, v in saved.items():
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v
        text = out.getvalue().replace(str(scratch), "<OUT>")
        try:
            stdout = json.loads(text)
        except ValueError:
            stdout = text
        result = {"args": list(args[:-2] if args[0] == "launch" else args), "code": code, "stdout": stdout,
                  "stderr": (err.getvalue().strip().splitlines() or [""])[0].replace(str(scratch), "<OUT>")}
        if args[0] == "launch" and (scratch / "out").is_dir():
            result["files"] = {p.name: p.read_text(encoding="utf-8").replace(str(scratch), "<OUT>")
                               for p in sorted((scratch / "out").iterdir()) if p.is_file()}
        return result


def main(names: list[str]) -> None:
    sys.path.insert(0, str(HERE))
    from cases import cases

    every = cases()
    chosen = names or list(every)
    ANSWERS.mkdir(exist_ok=True)
    for name in chosen:
        got = answer(every[name])
        (ANSWERS / f"{name}.json").write_text(json.dumps(got, indent=1, sort_keys=True) + "\n", encoding="utf-8")
        print(name, got["code"], got["stderr"][:100], flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
