"""A campaign: many runs through a :class:`~fuzzing.runner.Pool`, failures shrunk to a minimal reproducer, the
table per command and the distinct failures."""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable

from . import oracle
from .runner import Outcome, Pool


def shrink(pool: Pool, failure: Outcome, budget: int = 40) -> tuple[Outcome, int]:
    """The failure with as few options (or keyword arguments) as still give the same signature, and the re-runs
    it took: every single removal is tried at once, then all that kept the failure together, then one by one."""
    total = failure.units + len(failure.drop)
    if total == 0 or failure.kind == "meta":
        return failure, 0
    if failure.klass == oracle.HANG:
        budget = min(budget, 8)
    same = lambda o: o.klass == failure.klass and o.signature == failure.signature  # noqa: E731
    base = set(failure.drop)
    trials = [(failure.seed, failure.index, tuple(sorted(base | {i}))) for i in range(total) if i not in base]
    trials = trials[:budget]
    results = list(pool.run(trials))
    removable = [r for r in results if same(r)]
    runs = len(results)
    best = failure
    together = tuple(sorted(base | {i for r in removable for i in r.drop}))
    if removable:
        tried = next(pool.run([(failure.seed, failure.index, together)]))
        runs += 1
        if same(tried):
            return tried, runs
        best = removable[0]
        for r in removable[1:]:
            if runs >= budget:
                break
            candidate = next(pool.run([(failure.seed, failure.index, tuple(sorted(set(best.drop) | set(r.drop))))]))
            runs += 1
            if same(candidate):
                best = candidate
    return best, runs


def table(outcomes: Iterable[Outcome], rows: list[tuple[str, str]]) -> str:
    """Markdown: runs per command (and API function) by class, with totals."""
    counts: dict[str, Counter] = defaultdict(Counter)
    for o in outcomes:
        counts[o.command][o.klass] += 1
    head = "| command | " + " | ".join(oracle.CLASSES) + " | total |\n|---|" + "---:|" * (len(oracle.CLASSES) + 1)
    lines = [head]
    groups = {"cli": "CLI total", "api": "API total", "web": "web total", "meta": "metamorphic total"}
    for kind, label in groups.items():
        names = [n for k, n in rows if k == kind]
        total: Counter = Counter()
        for name in names:
            c = counts.get(name, Counter())
            total += c
            lines.append(f"| {name} | " + " | ".join(f"{c[k]:,}" for k in oracle.CLASSES) + f" | {sum(c.values()):,} |")
        lines.append(f"| **{label}** | " + " | ".join(f"{total[k]:,}" for k in oracle.CLASSES)
                     + f" | {sum(total.values()):,} |")
    known = {n for _, n in rows}
    for name in sorted(set(counts) - known):  # the runner's own failures (a case that could not be drawn)
        c = counts[name]
        lines.append(f"| {name} | " + " | ".join(f"{c[k]:,}" for k in oracle.CLASSES) + f" | {sum(c.values()):,} |")
    return "\n".join(lines)


def distinct(failures: list[Outcome]) -> dict[str, list[Outcome]]:
    by: dict[str, list[Outcome]] = defaultdict(list)
    for f in failures:
        by[f"{f.klass}: {f.signature}"].append(f)
    return dict(by)
