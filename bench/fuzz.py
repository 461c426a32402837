"""The fuzzing campaign: ``python bench/fuzz.py --seeds 1,2,3 --runs 2000`` (writes bench/results/fuzz.md).

Draws ``--runs`` cases per seed from the CLI's own definition, the Python API and the page's endpoints
(``bench/fuzzing``), runs them in ``--workers`` processes with a time limit per run (``--timeout`` seconds of CPU;
three times that of wall time, the machine being shared), classes every run (OK, CLEAN-ERROR, TRACEBACK,
NONSENSE, HANG), shrinks each distinct failure to a minimal reproducer, and writes per seed the table per command
and the failures, and last ``fuzz: N failures over M runs``. Each run is drawn from ``(seed, index)`` alone:
``--index I`` re-runs one and prints what it did. The reproducers name fixture files in ``tests/data/fuzz`` and, as
``$MADE``, the ones ``python tests/data/fuzz/make.py $MADE`` writes.

The process lowers its priority (``nice``) first: other work shares the machine.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from dataclasses import asdict
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "src"))
sys.path.insert(0, str(HERE))

from fuzzing import campaign  # noqa: E402
from fuzzing.runner import Context, Pool, execute, prepare_worker  # noqa: E402


def _args(argv: list[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seeds", default="1", help="comma-separated seeds, one campaign each")
    ap.add_argument("--runs", type=int, default=2000, help="runs per seed")
    ap.add_argument("--start", type=int, default=0, help="first run index (to continue a campaign)")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--timeout", type=float, default=30.0, help="seconds of CPU a run may take")
    ap.add_argument("--memory-gib", type=float, default=4.0, help="heap limit of each worker (RLIMIT_DATA)")
    ap.add_argument("--subprocess-share", type=float, default=0.03,
                    help="share of CLI runs made as a real `python -m gpuplan` process")
    ap.add_argument("--only", action="append", default=[], help="draw only this row (repeatable): estimate, "
                    "'api fit', 'web POST /api/estimate', 'meta seq_len'")
    ap.add_argument("--index", type=int, help="run this one case (of the first seed) in this process and print it")
    ap.add_argument("--log", type=Path, help="write every outcome here (JSON lines)")
    ap.add_argument("--out", type=Path, default=HERE / "results" / "fuzz.md", help="the report (Markdown)")
    ap.add_argument("--nice", type=int, default=10)
    return ap.parse_args(argv)


def _one(ctx: Context, seed: int, a: argparse.Namespace) -> int:
    prepare_worker()
    o = execute(ctx, seed, a.index, timeout=a.timeout)
    print(json.dumps(asdict(o), indent=1))
    return 1 if o.failed() else 0


def _failures_text(groups: dict[str, list], shrunk: dict[str, campaign.Outcome]) -> list[str]:
    lines = []
    for n, (key, runs) in enumerate(sorted(groups.items(), key=lambda kv: -len(kv[1])), 1):
        small = shrunk[key]
        lines += [f"F{n}. **{key}** ({len(runs)} runs; first: seed {runs[0].seed}, index {runs[0].index})",
                  f"    reproducer: `{small.repro}`", f"    detail: {small.detail[:400]!r}", ""]
    return lines


def _campaign(pool: Pool, seed: int, a: argparse.Namespace, log) -> tuple[list, dict, dict, int, float]:
    """One seed's runs: (outcomes, failures by cause, each cause shrunk, shrink re-runs, seconds)."""
    started = time.monotonic()
    outcomes = []
    for i, o in enumerate(pool.run((seed, k, ()) for k in range(a.start, a.start + a.runs)), 1):
        outcomes.append(o)
        if log:
            log.write(json.dumps(asdict(o)) + "\n")
        if o.failed():
            print(f"  {o.klass} [{o.command}] {o.signature}\n    {o.repro[:300]}", file=sys.stderr, flush=True)
        if i % 250 == 0:
            bad = sum(x.failed() for x in outcomes)
            print(f"  seed {seed}: {i:,}/{a.runs:,} runs, {bad} failures, {time.monotonic() - started:.0f} s",
                  file=sys.stderr, flush=True)
    groups = campaign.distinct([o for o in outcomes if o.failed()])
    shrunk, reruns = {}, 0
    for key, runs in groups.items():
        shrunk[key], n = campaign.shrink(pool, runs[0])
        reruns += n
    return outcomes, groups, shrunk, reruns, time.monotonic() - started


def _header(a: argparse.Namespace, seeds: list[int]) -> list[str]:
    import platform
    import subprocess

    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                            cwd=HERE).stdout.strip() or "?"
    dirty = subprocess.run(["git", "status", "--porcelain", "--", "src"], capture_output=True, text=True,
                           cwd=HERE).stdout.strip()
    return ["# Fuzzing campaign", "",
            f"`python bench/fuzz.py --seeds {','.join(map(str, seeds))} --runs {a.runs}` at {commit}"
            f"{' (src modified)' if dirty else ''}, {platform.python_version()}, {a.workers} workers on "
            f"{os.cpu_count()} cores, {a.timeout:.0f} s of CPU per run, {a.subprocess_share:.0%} of CLI runs as a "
            "process. Every command and option of the CLI (read off its typer/click tree), every public function "
            "of the Python API and every endpoint of the page (its OpenAPI schema) get valid, boundary and hostile "
            "values and fixture files; a failure is a traceback, an exit code other than 0 and 2 (and the "
            "documented 3 of `estimate --check`, 1 of `prices update`), an HTTP 5xx, a run past its limit, output "
            "that breaks a rule (NaN, a negative amount, a fit above capacity, JSON asked and not given), or a "
            "file changed, half-written or written outside its folder (bench/fuzzing/oracle.py).", ""]


def main(argv: list[str] | None = None) -> int:
    a = _args(argv)
    seeds = [int(x) for x in a.seeds.split(",") if x.strip()]
    if a.nice:
        os.nice(a.nice)
    scratch = Path(tempfile.mkdtemp(prefix="gpuplan-fuzz-"))
    ctx = Context.create(scratch, subprocess_share=a.subprocess_share, only=a.only)
    if a.index is not None:
        return _one(ctx, seeds[0], a)
    pool = Pool(ctx, workers=a.workers, timeout=a.timeout, memory_gib=a.memory_gib)
    log = a.log.open("w") if a.log else None
    summary = ["| seed | runs | failures | distinct causes | minutes |", "|---:|---:|---:|---:|---:|"]
    sections, total = [], 0
    try:
        for seed in seeds:
            outcomes, groups, shrunk, reruns, seconds = _campaign(pool, seed, a, log)
            failures = sum(len(v) for v in groups.values())
            total += failures
            summary.append(f"| {seed} | {len(outcomes):,} | {failures} | {len(groups)} | {seconds / 60:.0f} |")
            sections += [f"## Seed {seed}", "", f"runs {a.start:,}..{a.start + a.runs - 1:,}, {seconds:.0f} s; "
                         f"{reruns} shrink re-runs", "", campaign.table(outcomes, ctx.rows()), "",
                         f"{len(groups)} distinct failures", "", *_failures_text(groups, shrunk),
                         f"fuzz: {failures} failures over {len(outcomes)} runs", ""]
    finally:
        pool.close()
        if log:
            log.close()
        shutil.rmtree(scratch, ignore_errors=True)
    text = "\n".join([*_header(a, seeds), *summary, "", *sections])
    a.out.parent.mkdir(parents=True, exist_ok=True)
    a.out.write_text(text)
    print(text)
    return 1 if total else 0


if __name__ == "__main__":
    sys.exit(main())
