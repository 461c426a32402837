"""Command lines drawn from the CLI tree: one :class:`CliCase` per (seed, index), the same on every machine.

A case is valid (a coherent job: the task picks the method and stack or the engine, a card that can hold the
model, the output format; so that most runs reach deep code), mixed (a valid case with one or two values made
hostile: a boundary, a near miss, hostile text, a broken fixture file) or wild (any options, any values, required
ones sometimes left out). Every option of the command can be drawn in every mode: what the recipes below add is
a valid starting point for the commands whose inputs must agree, never a limit on what is drawn.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

from . import values as V
from .fixtures import OUT, Fixtures, file_value, model_value
from .mutate import collecting
from .recipes import recipe
from .tree import FLAG, Command, Param

MODES = (("valid", 0.5), ("mixed", 0.35), ("wild", 0.15))


@dataclass(frozen=True)
class Unit:
    """One option with its value, a flag, or one argument: what shrinking removes."""

    param: str
    tokens: tuple[str, ...]


@dataclass
class CliCase:
    command: str
    path: tuple[str, ...]
    units: list[Unit]
    mode: str
    files: dict[str, bytes] = field(default_factory=dict)  # made files (mutate.py), written into the run's folder

    def kept(self, drop: tuple[int, ...] = ()) -> list[Unit]:
        return [u for i, u in enumerate(self.units) if i not in drop]

    def argv(self, drop: tuple[int, ...] = ()) -> list[str]:
        return [*self.path, *(t for u in self.kept(drop) for t in u.tokens)]

    def wants_json(self, drop: tuple[int, ...] = ()) -> bool:
        """--json given, or --format json (the oracle then requires strict JSON on stdout); not with --help."""
        if any(u.tokens in (("--help",), ("-h",)) for u in self.kept(drop)):
            return False
        for u in self.kept(drop):
            if u.param == "as_json" and u.tokens in (("--json",),):
                return True
            if u.param == "fmt" and (u.tokens[-1] == "json" or u.tokens[-1] == "--format=json"):
                return True
        return False


def value(r: random.Random, p: Param, hostile: bool, fx: Fixtures) -> str:
    """One value for ``p``: by its role when its name says what it holds, else by its kind."""
    role = V.role(p)
    examples = V.help_examples(p.help)
    if not hostile and examples and role and not role.startswith(("file:", "out:")) and r.random() < 0.3:
        return r.choice(examples)
    if role == "model":
        text = model_value(r, hostile, fx)
    elif role.startswith("file:"):
        text = file_value(r, role[5:], hostile, fx)
    elif role.startswith("out:"):
        good, bad = OUT[role[4:]]
        text = r.choice(bad if hostile else good)
    elif role:
        text = V.named(r, role, hostile)
    else:
        text = V.scalar(r, p, hostile, examples)
    return V.text_nul_free(text)


def units_for(r: random.Random, p: Param, values: list[str]) -> list[Unit]:
    """The tokens that give ``p`` these values (a flag takes none; ``--x=v`` now and then)."""
    if p.kind == FLAG:
        spelled = r.choice([*p.opts, *p.secondary]) if values and values[0] == "any" else r.choice(p.opts)
        return [Unit(p.name, (spelled,))]
    if p.argument:
        return [Unit(p.name, (v,)) for v in values]
    out = []
    for v in values:
        opt = r.choice(p.opts)
        out.append(Unit(p.name, (f"{opt}={v}",) if opt.startswith("--") and r.random() < 0.1 else (opt, v)))
    return out


def draw_values(r: random.Random, p: Param, hostile: bool, fx: Fixtures) -> list[str]:
    if p.kind == FLAG:
        return ["any" if hostile or r.random() < 0.3 else "on"]
    n = r.choice([1, 1, 1, 2, 3]) if p.many else 1
    return [value(r, p, hostile, fx) for _ in range(n)]


# options that run real work for minutes (``launch --smoke`` trains with the written files): the suite runs them in
# their own tests (tests/launchers/test_smoke.py), a fuzz case would only time out
RUNS_JOBS = ("smoke",)


def draw_cli(r: random.Random, cmd: Command, fx: Fixtures) -> CliCase:
    """One command line for ``cmd``, with the files it made."""
    with collecting() as files:
        case = _draw_cli(r, cmd, fx)
    case.files = dict(files)
    return case


def _draw_cli(r: random.Random, cmd: Command, fx: Fixtures) -> CliCase:
    mode = r.choices([m for m, _ in MODES], [w for _, w in MODES])[0]
    chosen: dict[str, list[str]] = {}
    if mode != "wild":
        chosen.update({k: v for k, v in recipe(r, cmd, fx).items() if cmd.has(k)})
        for p in cmd.params:  # required ones the recipe left out
            if p.required and p.name not in chosen:
                chosen[p.name] = draw_values(r, p, False, fx)
    options = [p for p in cmd.params if p.name not in ("as_json", "fmt", *RUNS_JOBS)]
    extra = r.randint(0, 3) if mode == "valid" else r.randint(1, 6)
    for p in r.sample(options, min(extra, len(options))):
        if mode == "valid" and p.name in chosen:
            continue
        hostile = mode == "wild" and r.random() < 0.5
        chosen[p.name] = draw_values(r, p, hostile, fx)
    if mode == "mixed" and options:
        files = [p for p in options if V.role(p).startswith("file:") or V.role(p) == "model"]
        spoiled = r.sample(options, min(r.choice([1, 1, 2]), len(options)))
        if files and r.random() < 0.4:  # files are where the readers are: spoil one of them more often
            spoiled = [r.choice(files)]
        for p in spoiled:
            chosen[p.name] = draw_values(r, p, True, fx)
    if mode == "wild":
        for p in cmd.params:
            if p.required and p.name in chosen and r.random() < 0.2:
                del chosen[p.name]  # a required value left out
    _output(r, cmd, chosen, mode)
    units = [u for p in cmd.params if p.name in chosen for u in units_for(r, p, chosen[p.name])]
    if mode == "wild" and r.random() < 0.2:  # what a command line may hold beyond the options
        units.append(r.choice([Unit("(junk)", ("--nosuch", "x")), Unit("(junk)", ("--",)), Unit("(junk)", ("-",)),
                               Unit("(junk)", ("extra",)), Unit("(junk)", ("--help",)), Unit("(junk)", ("-h",)),
                               *([r.choice(units)] if units else [])]))  # an option given twice
    if mode != "valid":
        r.shuffle(units)
    return CliCase(command=cmd.name, path=cmd.path, units=units, mode=mode)


def _output(r: random.Random, cmd: Command, chosen: dict[str, list[str]], mode: str) -> None:
    """--json, --format X, both, or neither."""
    js, fmt = cmd.param("as_json"), cmd.param("fmt")
    chosen.pop("as_json", None)
    chosen.pop("fmt", None)
    pick = r.random()
    if js is not None and pick < 0.45:
        chosen["as_json"] = ["on"]
    elif fmt is not None and pick < 0.75:
        chosen["fmt"] = [V.choice(r, fmt, mode != "valid" and r.random() < 0.2)]
    if mode == "wild" and js is not None and fmt is not None and r.random() < 0.3:
        chosen["as_json"], chosen["fmt"] = ["on"], [V.choice(r, fmt, False)]
