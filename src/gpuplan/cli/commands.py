"""The root command: each command's module imported when the command is first named.

The table and the group that reads it stand above the commands' modules, which import :mod:`.app` (the typer app
they register on and the options they share) and nothing here: the package sets this group as the app's root
(:mod:`gpuplan.cli`), as ``market/sources`` keeps its contract below the plugins its registry loads.
"""

from __future__ import annotations

import importlib
from typing import Any

import typer
import typer.core

from .app import app

# each command -> the module of this package that registers it, in the order `gpuplan --help` lists them: the
# questions first (does it fit, what fits, where, for how much, for how many users), then the files, the catalogs,
# the page, and the checks against real runs
COMMANDS = {"estimate": "estimate", "fit": "plan", "recommend": "plan", "cost": "market", "capacity": "capacity",
            "buy": "buy", "launch": "launch", "models": "models", "model": "models", "gpus": "market",
            "prices": "prices", "table": "plan", "serve": "serve", "simulate": "check", "probe": "check",
            "calibrate": "check", "calibrate-serving": "capacity"}


class LazyGroup(typer.core.TyperGroup):
    """The root command, whose commands are imported when first named: ``gpuplan estimate`` imports and converts
    to click the estimate command alone, not the 16 others (their modules, signatures of ~70 scenario options each
    and click commands took about a fifth of a second of every run). Listing the commands (``--help``) or a name
    that is none of them (click's "did you mean") loads them all. Click's documented pattern for large command
    lines ("Lazily Loading Subcommands", click.palletsprojects.com/en/stable/complex/), over typer's conversion of
    its registered commands (typer.main.get_group)."""

    def get_command(self, ctx: Any, cmd_name: str) -> Any:
        if cmd_name not in self.commands:
            self._load([COMMANDS[cmd_name]] if cmd_name in COMMANDS else COMMANDS.values())
        return self.commands.get(cmd_name)

    def resolve_command(self, ctx: Any, args: list[str]) -> Any:
        """A command typed in another case (``gpuplan ESTIMATE``) is named back in its own: click's "did you mean"
        compares names as typed and finds none."""
        name = args[0] if args else ""
        if name not in COMMANDS and name.lower() in COMMANDS:
            ctx.fail(f"No such command {name!r}. Did you mean {name.lower()!r}?")
        return super().resolve_command(ctx, args)

    def list_commands(self, ctx: Any) -> list[str]:
        self._load(COMMANDS.values())
        order = list(COMMANDS)
        return sorted(self.commands, key=lambda name: order.index(name) if name in order else len(order))

    def _load(self, modules: Any) -> None:
        for module in dict.fromkeys(modules):
            importlib.import_module(f"{__package__}.{module}")
        self.commands.update(typer.main.get_group(app).commands)


app.info.cls = LazyGroup  # typer.Typer(cls=...) as set after the app: typer builds the root group from app.info
