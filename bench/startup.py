"""Start-up: ``import gpuplan``, the first ``gpuplan.estimate(...)`` and a whole ``gpuplan estimate`` against a bare
``import pydantic, yaml``, and the first ``gpuplan models``.

    python bench/startup.py [--runs 21] [--models-runs 3] [--against ../main/src]

Each line is a whole new Python process (interpreter start included), timed wall-clock from launch to exit; the
commands are run in turn, round after round, so that a load change on the machine touches all of them alike,
and the median over the rounds is printed. The estimate is the architecture review's walk 1 (QLoRA on Llama-3.1
8B, one RTX 4090, 1e8 train tokens: memory, the largest batch and context, speed and cost on the offers), through
the Python API and through the command line. ``gpuplan models`` runs with an empty ``GPUPLAN_CACHE_DIR`` each time
(a fresh install: nothing built yet) and must write nothing to stderr. The goals: ``import gpuplan`` at most 1.3x
``import pydantic, yaml`` (issue 22); the first ``gpuplan.estimate(...)`` at most 2x, and ``gpuplan estimate``
whole at most 0.6 s (issue 30); the first ``gpuplan models`` under 3 s. Beside the goals, two floors: pydantic,
PyYAML and one model built and used (what any answer typed with pydantic pays), and that with typer and rich's
table (what any command that prints a table pays). Beside each wall-clock median, the median CPU time of the
process (user + system, ``getrusage`` of the child): on a machine other jobs load, the wall clock also counts the
time a process waits for a core, and the CPU time is what the code itself costs.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

SRC = str(Path(__file__).resolve().parent.parent / "src")
WALK = {"model": "llama-3.1-8b", "task": "train", "method": "qlora", "gpu": "rtx-4090", "train_tokens": 1e8}
FIRST_ESTIMATE = f"import gpuplan; gpuplan.estimate({WALK!r})"
CLI_ESTIMATE = ["estimate", "--model", "llama-3.1-8b", "--task", "train", "--method", "qlora", "--gpu", "rtx-4090",
                "--train-tokens", "1e8"]
IMPORTS = {
    "python -c pass": ["-c", "pass"],
    "import pydantic, yaml": ["-c", "import pydantic, yaml"],
    # the floor of any answer typed with pydantic: its lazily imported model machinery, one model built and used
    "pydantic, yaml, one BaseModel used": ["-c", "import pydantic, yaml\nclass A(pydantic.BaseModel):\n    x: int\n"
                                                 "A(x=1)"],
    # the floor of a command that prints a table: the command line's libraries (typer, rich) beside that model
    "typer, rich, pydantic, yaml, one BaseModel used": ["-c", "import typer, rich.console, rich.table, pydantic, yaml\n"
                                                        "class A(pydantic.BaseModel):\n    x: int\nA(x=1)"],
    "import gpuplan": ["-c", "import gpuplan"],
    "from gpuplan import estimate, Scenario, load_model": ["-c", "from gpuplan import estimate, Scenario, load_model"],
    "first gpuplan.estimate(...)": ["-c", FIRST_ESTIMATE],
    "gpuplan estimate ... (whole process)": ["-m", "gpuplan", *CLI_ESTIMATE],
}


PYCACHE = tempfile.mkdtemp(prefix="gpuplan-bench-pycache-")


def _env(cache: str | None = None) -> dict[str, str]:
    """The environment of every timed process: this checkout first on the path, and bytecode written and read as
    an installed package's is (into a folder of its own, not the checkout; a session that sets
    PYTHONDONTWRITEBYTECODE would otherwise compile every module on every run)."""
    env = {**os.environ, "PYTHONPATH": SRC + os.pathsep + os.environ.get("PYTHONPATH", ""),
           "PYTHONPYCACHEPREFIX": PYCACHE}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    if cache:
        env["GPUPLAN_CACHE_DIR"] = cache
    return env


def _cpu() -> float:
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return used.ru_utime + used.ru_stime


def timed(argv: list[str], env: dict[str, str]) -> tuple[float, float, str]:
    """(seconds from launch to exit, CPU seconds, stderr) of one process; a failure stops the bench."""
    cpu, start = _cpu(), time.perf_counter()
    proc = subprocess.run(argv, env=env, capture_output=True, text=True)
    seconds, cpu = time.perf_counter() - start, _cpu() - cpu
    if proc.returncode:
        sys.exit(f"{' '.join(argv)} failed ({proc.returncode}): {proc.stderr.strip()[-500:]}")
    return seconds, cpu, proc.stderr


AGAINST = ("first gpuplan.estimate(...)", "gpuplan estimate ... (whole process)")


def imports(runs: int, against: str | None = None) -> tuple[dict[str, list[float]], dict[str, list[float]]]:
    """Wall-clock and CPU seconds of each command, ``runs`` rounds; ``against``: another checkout's ``src`` (main's,
    for a before and after), whose :data:`AGAINST` commands run in the same rounds, each beside this tree's."""
    commands = [(name, argv, _env()) for name, argv in IMPORTS.items()]
    if against:
        other = {**_env(), "PYTHONPATH": str(Path(against).resolve())}
        commands += [(f"{name} [against]", IMPORTS[name], other) for name in AGAINST]
    times: dict[str, list[float]] = {name: [] for name, _, _ in commands}
    cpu: dict[str, list[float]] = {name: [] for name, _, _ in commands}
    for _, argv, env in commands:  # one untimed round: the bytecode written, as on an installed package
        timed([sys.executable, *argv], env)
    for _ in range(runs):
        for name, argv, env in commands:
            seconds, used, _ = timed([sys.executable, *argv], env)
            times[name].append(seconds)
            cpu[name].append(used)
    return times, cpu


def first_models(runs: int) -> tuple[list[float], list[str]]:
    """Seconds of ``gpuplan models`` with an empty cache folder, and what it wrote to stderr."""
    seconds, noise = [], []
    for _ in range(runs):
        with tempfile.TemporaryDirectory() as cache:
            s, _, err = timed([sys.executable, "-m", "gpuplan", "models"], _env(cache))
        seconds.append(s)
        noise += err.splitlines()
    return seconds, noise


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=21, help="rounds of the import timings (median reported)")
    parser.add_argument("--models-runs", type=int, default=3, help="first `gpuplan models` runs (0: skip)")
    parser.add_argument("--against", metavar="SRC", help="another checkout's src folder (e.g. main's): its first "
                        "estimate and whole `gpuplan estimate` run in the same rounds, for a before and after")
    args = parser.parse_args()
    times, cpu = imports(args.runs, args.against)
    median = {name: statistics.median(t) for name, t in times.items()}
    used = {name: statistics.median(t) for name, t in cpu.items()}
    for name, t in times.items():
        print(f"{name:52} median {median[name] * 1e3:6.0f} ms  (min {min(t) * 1e3:.0f}, max {max(t) * 1e3:.0f}, "
              f"{len(t)} runs; CPU {used[name] * 1e3:.0f} ms)")
    base, cpu_base = median["import pydantic, yaml"], used["import pydantic, yaml"]
    print(f"import gpuplan / import pydantic, yaml: {median['import gpuplan'] / base:.2f}x (goal <= 1.3x)")
    first, floor = "first gpuplan.estimate(...)", "pydantic, yaml, one BaseModel used"
    cli, cli_floor = "gpuplan estimate ... (whole process)", "typer, rich, pydantic, yaml, one BaseModel used"
    print(f"first gpuplan.estimate(...) / import pydantic, yaml: {median[first] / base:.2f}x (goal <= 2x; one "
          f"BaseModel used: {median[floor] / base:.2f}x; in CPU time {used[first] / cpu_base:.2f}x and "
          f"{used[floor] / cpu_base:.2f}x)")
    print(f"gpuplan estimate, whole process: {median[cli]:.2f} s (goal <= 0.6 s; typer, rich and one BaseModel used: "
          f"{median[cli_floor]:.2f} s; python -c pass: {median['python -c pass']:.2f} s; in CPU time {used[cli]:.2f} s "
          f"and {used[cli_floor]:.2f} s)")
    if args.against:
        other, other_cli = used[f"{first} [against]"], used[f"{cli} [against]"]
        print(f"against {args.against}: first gpuplan.estimate(...) {other / cpu_base:.2f}x in CPU time "
              f"({other * 1e3:.1f} ms; this tree {used[first] * 1e3:.1f} ms, {used[first] / cpu_base:.2f}x), whole "
              f"gpuplan estimate {other_cli * 1e3:.0f} ms of CPU (this tree {used[cli] * 1e3:.0f} ms)")
    print(f"load average (1, 5, 15 min) at the end: {', '.join(f'{x:.1f}' for x in os.getloadavg())}")
    if args.models_runs:
        seconds, noise = first_models(args.models_runs)
        print(f"first `gpuplan models` (empty cache): median {statistics.median(seconds):.2f} s "
              f"(max {max(seconds):.2f} s, {len(seconds)} runs; goal < 3 s), {len(noise)} stderr lines")
        for line in noise[:5]:
            print(f"  stderr: {line}")


if __name__ == "__main__":
    main()
