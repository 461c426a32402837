"""The command line as data: every command of ``gpuplan.cli.app`` with every option and argument and its type,
read off the typer/click command tree (never listed by hand), so that a command or option added to the CLI is
fuzzed the day it lands.

An option's kind comes from its annotation (``bool`` flags, ``int``, ``float``, ``Literal`` choices, ``list``
for repeatable options and variadic arguments, paths, free text) and its range from typer's ``min``/``max``. The
scenario options are generated from :class:`gpuplan.scenario.Scenario` (``cli/app.py`` ``scenario_options``) and
typed there as text, int or float; their choices and ranges are the scenario field's (``Literal`` values,
pydantic's ``ge``/``gt``/``le``/``lt``), read from the same model the CLI reads them from.
"""

from __future__ import annotations

import typing
from dataclasses import dataclass, field
from typing import Any

FLAG, CHOICE, INT, FLOAT, BOOL_TEXT, TEXT, PATH = "flag", "choice", "int", "float", "bool-text", "text", "path"


@dataclass(frozen=True)
class Param:
    """One option or argument of a command."""

    name: str  # the Python name (scenario field name for scenario options)
    opts: tuple[str, ...]  # --model, -o... (empty for an argument)
    secondary: tuple[str, ...] = ()  # --no-x of a --x/--no-x flag
    kind: str = TEXT
    choices: tuple[Any, ...] = ()
    low: float | None = None  # the range, when the CLI or the scenario gives one
    high: float | None = None
    many: bool = False  # a repeatable option or a variadic argument
    required: bool = False
    argument: bool = False
    field: bool = False  # a scenario field
    help: str = ""  # the --help text (its examples are valid values)

    @property
    def flag(self) -> str:
        """How the option is written (an argument has no flag)."""
        return max(self.opts, key=len) if self.opts else ""


@dataclass(frozen=True)
class Command:
    """One command (``gpus compare`` is the path ("gpus", "compare")) and its parameters."""

    path: tuple[str, ...]
    params: tuple[Param, ...] = field(default_factory=tuple)

    @property
    def name(self) -> str:
        return " ".join(self.path) or "gpuplan"

    def options(self) -> tuple[Param, ...]:
        return tuple(p for p in self.params if not p.argument)

    def arguments(self) -> tuple[Param, ...]:
        return tuple(p for p in self.params if p.argument)

    def has(self, name: str) -> bool:
        return any(p.name == name for p in self.params)

    def param(self, name: str) -> Param | None:
        return next((p for p in self.params if p.name == name), None)


def _scenario_fields() -> dict[str, Any]:
    from gpuplan.scenario import Scenario

    return dict(Scenario.model_fields)


def _range(metadata: list[Any]) -> tuple[float | None, float | None]:
    low = high = None
    for m in metadata:
        for attr in ("ge", "gt"):
            if getattr(m, attr, None) is not None:
                low = getattr(m, attr)
        for attr in ("le", "lt"):
            if getattr(m, attr, None) is not None:
                high = getattr(m, attr)
    return low, high


def _literals(annotation: Any) -> tuple[Any, ...]:
    """Every Literal value in an annotation (through Optional and unions)."""
    if typing.get_origin(annotation) is typing.Literal:
        return typing.get_args(annotation)
    return tuple(v for a in typing.get_args(annotation) for v in _literals(a))


def _bare(annotation: Any) -> list[Any]:
    args = typing.get_args(annotation)
    return [a for a in args if a is not type(None)] if args and typing.get_origin(annotation) is not list else [
        annotation]


def field_kind(info: Any) -> tuple[str, tuple[Any, ...], float | None, float | None]:
    """(kind, choices, low, high) of a scenario field."""
    annotation = info.annotation
    low, high = _range(list(info.metadata))
    bare = _bare(annotation)
    literals = _literals(annotation)
    if literals and all(typing.get_origin(a) is typing.Literal for a in bare):
        return CHOICE, literals, None, None
    if bare == [bool]:
        return BOOL_TEXT, ("true", "false"), None, None
    if bare == [int]:
        return INT, (), low, high
    if bare == [float]:
        return FLOAT, (), low, high
    return TEXT, tuple(str(v) for v in literals), None, None


def _annotation_kind(annotation: Any) -> tuple[str, bool, tuple[Any, ...]]:
    """(kind, many, choices) of a CLI parameter's annotation."""
    many = typing.get_origin(annotation) in (list, tuple)
    if many:
        annotation = typing.get_args(annotation)[0] if typing.get_args(annotation) else str
    bare = _bare(annotation)
    literals = _literals(annotation)
    if literals:
        return CHOICE, many, literals
    kind = {bool: FLAG, int: INT, float: FLOAT, str: TEXT}.get(bare[0] if len(bare) == 1 else None)
    if kind is None:
        name = getattr(bare[0], "__name__", str(bare[0])) if bare else ""
        kind = PATH if "Path" in name else TEXT
    return kind, many, ()


def _click_kind(p: Any) -> tuple[str, bool, tuple[Any, ...]]:
    """The same from a plain click parameter (a typer without type descriptors)."""
    t = getattr(p, "type", None)
    name = getattr(t, "name", "text")
    if getattr(p, "is_flag", False):
        return FLAG, False, ()
    many = bool(getattr(p, "multiple", False)) or getattr(p, "nargs", 1) == -1
    if getattr(t, "choices", None):
        return CHOICE, many, tuple(t.choices)
    return {"integer": INT, "float": FLOAT, "path": PATH}.get(name.split(" ")[0], TEXT), many, ()


def to_param(p: Any, fields: dict[str, Any]) -> Param:
    """A click/typer parameter as a :class:`Param`."""
    descriptor = getattr(p, "type_descriptor", None)
    if descriptor is not None:
        kind, many, choices = _annotation_kind(descriptor.annotation)
        if getattr(p, "is_flag", False):
            kind = FLAG
    else:
        kind, many, choices = _click_kind(p)
    many = many or getattr(p, "nargs", 1) == -1 or bool(getattr(p, "multiple", False))
    low, high = getattr(p, "min", None), getattr(p, "max", None)
    argument = type(p).__name__.endswith("Argument")
    is_field = p.name in fields and not argument and kind != FLAG
    if is_field:
        kind, choices, low, high = field_kind(fields[p.name])
    return Param(name=p.name, opts=tuple(p.opts) if not argument else (), secondary=tuple(p.secondary_opts or ()),
                 kind=kind, choices=tuple(choices), low=low, high=high, many=many, required=bool(p.required),
                 argument=argument, field=is_field, help=getattr(p, "help", None) or "")


def click_root(app: Any = None) -> Any:
    """The click group typer builds from ``app`` (default: ``gpuplan.cli.app``)."""
    import typer.main

    if app is None:
        from gpuplan.cli import app
    root = typer.main.get_command(app)
    if hasattr(root, "list_commands"):  # gpuplan's root group imports its commands when they are listed
        root.list_commands(None)
    return root


def commands(app: Any = None) -> list[Command]:
    """Every command a user can run: the root (``--version``), each group that runs on its own (``gpus``,
    ``prices``) and every leaf command, with its parameters (``--help`` left out: click writes it)."""
    fields = _scenario_fields()
    found: list[Command] = []

    def walk(cmd: Any, path: tuple[str, ...]) -> None:
        subs = getattr(cmd, "commands", None)
        runs_alone = not subs or getattr(cmd, "invoke_without_command", False) or not path
        if runs_alone:
            params = tuple(to_param(p, fields) for p in cmd.params if p.name != "help")
            found.append(Command(path=path, params=params))
        for name in sorted(subs or {}):
            if not getattr(subs[name], "hidden", False):
                walk(subs[name], (*path, name))

    walk(click_root(app), ())
    return found


def declared(app: Any = None) -> dict[str, set[str]]:
    """Every option string of every command, straight from click (``--x`` and ``--no-x`` both), and each
    argument as ``<name>``: what the generator's list must equal."""
    out: dict[str, set[str]] = {}

    def walk(cmd: Any, path: tuple[str, ...]) -> None:
        subs = getattr(cmd, "commands", None)
        if not subs or getattr(cmd, "invoke_without_command", False) or not path:
            names = set()
            for p in cmd.params:
                if p.name == "help":
                    continue
                if type(p).__name__.endswith("Argument"):
                    names.add(f"<{p.name}>")
                else:
                    names |= {*p.opts, *(p.secondary_opts or ())}
            out[" ".join(path) or "gpuplan"] = names
        for name, sub in (subs or {}).items():
            if not getattr(sub, "hidden", False):
                walk(sub, (*path, name))

    walk(click_root(app), ())
    return out
