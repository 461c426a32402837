"""The typer app, its consoles and what every command shares: the scenario options, JSON output."""

from __future__ import annotations

import inspect
import json
import sys
import typing
from typing import Annotated, Any

import typer
from rich.console import Console

from .. import __version__

app = typer.Typer(
    name="gpuplan",
    help="Which GPUs an LLM job needs and what it will cost: memory, speed and price, from the model's own "
    "config.json.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
out = Console()
err = Console(stderr=True)

JsonFlag = Annotated[bool, typer.Option("--json", help="Print machine-readable JSON instead of a table.")]


def print_json(data: Any) -> None:
    sys.stdout.write(json.dumps(data, indent=2, default=str) + "\n")


def _version(value: bool) -> None:
    if value:
        out.print(f"gpuplan {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: Annotated[bool, typer.Option("--version", callback=_version, is_eager=True,
                                          help="Show the version and exit.")] = False,
) -> None:
    """gpuplan: plan GPU memory, speed and cost for LLM inference and training."""


def scenario_options() -> list[inspect.Parameter]:
    """One ``--field-name`` option per scenario field, typed as text and validated by the scenario model."""
    from ..scenario import Scenario

    params = []
    for name, info in Scenario.model_fields.items():
        choices = typing.get_args(info.annotation)
        literals = [a for arg in choices or (info.annotation,) for a in typing.get_args(arg)
                    if isinstance(a, str)] or [a for a in choices if isinstance(a, str)]
        helptext = info.description or ""
        if literals:
            helptext = (helptext + "; " if helptext else "") + " | ".join(literals)
        if name == "lora_targets":
            helptext = "all-linear, or modules separated by commas: q_proj,v_proj"
        default = None if info.is_required() else info.default
        if default is not None:
            helptext += f" [default: {default}]"
        params.append(inspect.Parameter(
            name, inspect.Parameter.KEYWORD_ONLY, default=None,
            annotation=Annotated[str | None, typer.Option(f"--{name.replace('_', '-')}", help=helptext,
                                                          show_default=False, rich_help_panel="Scenario fields")]))
    return params


def overrides(fields: dict[str, str | None]) -> dict[str, Any]:
    out: dict[str, Any] = {k: v for k, v in fields.items() if v is not None}
    if "lora_targets" in out and out["lora_targets"] != "all-linear":
        out["lora_targets"] = [t.strip() for t in out["lora_targets"].split(",") if t.strip()]
    return out



def short(gpu_id: str) -> str:
    """nvidia-geforce-rtx-4090 -> rtx-4090: table cells stay narrow; the JSON keeps full ids."""
    return gpu_id.removeprefix("nvidia-").removeprefix("geforce-").removeprefix("amd-instinct-")


def option(name: str, kind: Any, default: Any, text: str, panel: str | None = None) -> inspect.Parameter:
    """A keyword-only ``--name`` option for a command whose signature is built at import."""
    return inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=default, annotation=Annotated[
        kind, typer.Option(f"--{name.replace('_', '-')}", help=text, rich_help_panel=panel)])


def scenario_command(name: str, fn, *extra: inspect.Parameter, skip: tuple[str, ...] = ()) -> None:
    """Register ``fn`` as command ``name`` taking a scenario file, ``--json``, ``extra`` options and one
    option per scenario field (but ``skip``); typer reads the signature set here."""
    fn.__signature__ = inspect.Signature([
        inspect.Parameter("scenario", inspect.Parameter.POSITIONAL_OR_KEYWORD, default=None,
                          annotation=Annotated[str | None, typer.Argument(
                              help="Scenario YAML/JSON file; flags override it.", show_default=False)]),
        inspect.Parameter("as_json", inspect.Parameter.KEYWORD_ONLY, default=False, annotation=JsonFlag),
        *extra,
        *[p for p in scenario_options() if p.name not in skip],
    ])
    app.command(name)(fn)

