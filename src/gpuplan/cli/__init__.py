"""The ``gpuplan`` command line (typer + rich). Bad input prints one line and exits with code 2.

One module per group of commands; importing one registers its commands on :data:`app`, whose root group imports a
command's module when the command is first named (:class:`.commands.LazyGroup`).
"""

from __future__ import annotations

import re
import sys
import warnings

from ..errors import GpuplanError, RenamedWarning, cut_echoes, echo_value
from .commands import app  # the app, its root group loading each command when named
from .render import err

try:  # typer >= 0.24 vendors click
    from typer._click.exceptions import ClickException
except ImportError:  # pragma: no cover - older typer on click
    from click.exceptions import ClickException
from typer import Abort


def error_line(message: str) -> str:
    """One line, as printed: newlines folded, nothing read as markup (``pip install 'gpuplan[sim]'`` survives),
    every quoted value of the user's cut to 60 characters (click's own messages included)."""
    return "error: " + cut_echoes(" ".join(str(message).split()))


def run(args: list[str] | None = None) -> int:
    """Run the CLI on ``args`` (default: sys.argv) and return the exit code: 0, 2 for bad input or usage
    (one line on stderr), 3 for ``estimate --check`` when the job does not fit. An old name used (``--framework``
    for ``--stack``) is said in one note on stderr after the answer."""
    with warnings.catch_warnings(record=True) as said:
        warnings.simplefilter("always", RenamedWarning)
        code = _run(args)
    if code == 0:
        for w in said:
            if issubclass(w.category, RenamedWarning):
                err.print(f"note: {w.message}", markup=False, highlight=False, soft_wrap=True)
    return code


def _run(args: list[str] | None) -> int:
    try:
        code = app(args=args, standalone_mode=False, prog_name="gpuplan")
    except GpuplanError as e:
        err.print(error_line(str(e)), markup=False, highlight=False, soft_wrap=True)
        return 2
    except ClickException as e:
        ctx = getattr(e, "ctx", None)
        if type(e).__name__ == "NoArgsIsHelpError" and ctx is not None:  # `gpuplan` alone: the help
            err.print(ctx.get_help(), markup=False, highlight=False)
            return 0
        _name_the_options_with_the_word(e, ctx)
        where = f" (see `{ctx.command_path} --help`)" if ctx is not None else ""
        err.print(error_line(e.format_message()) + _number_hint(e, sys.argv[1:] if args is None else args)
                  + _positional_hint(e, ctx) + where, markup=False, highlight=False, soft_wrap=True)
        return e.exit_code
    except Abort:
        err.print("aborted", markup=False)
        return 130
    return code if isinstance(code, int) else 0


def _name_the_options_with_the_word(e: ClickException, ctx) -> None:
    """An unknown ``--steps`` is offered the options whose name holds its words (``--train-steps``,
    ``--inference-steps``, ``--grad-accum-steps``), not Click's nearest spellings (difflib: ``--ep``, ``--tp``,
    ``--users``, as near to ``--steps`` by its ratio); Click's are kept when no option holds the words."""
    option = getattr(e, "option_name", None)
    if ctx is None or not option or type(e).__name__ != "NoSuchOption" or not option.startswith("--"):
        return
    words = [w for w in option[2:].lower().split("-") if w]
    named = sorted({name for param in ctx.command.params for name in getattr(param, "opts", ())
                    if name.startswith("--") and words and all(w in name[2:].split("-") for w in words)})
    if named:
        e.possibilities = named  # type: ignore[misc]  (Click's own field, formatted by its format_message)


# a count with a unit, as people write them: 8k, 50M, 1.5B, 2 T
SUFFIXED = re.compile(r"(\d+(?:\.\d+)?)\s*([kmbgt])", re.IGNORECASE)


def _number_hint(e: ClickException, args: list[str]) -> str:
    """The value a number option refused, which the message of typer's coercion does not repeat ("Input should be
    a valid integer, unable to parse string as an integer"), and for a count with a unit (``--prompt-tokens 8k``,
    ``--train-tokens 50M``: the s31 walk) the number to write instead."""
    param = getattr(e, "param", None)
    said = e.format_message()
    if param is None or not ("a valid integer" in said or "a valid number" in said):
        return ""
    names, raw = set(getattr(param, "opts", ())), None
    for i, word in enumerate(args):
        if word in names and i + 1 < len(args):
            raw = args[i + 1]
        elif word.split("=", 1)[0] in names and "=" in word:
            raw = word.split("=", 1)[1]
    if raw is None:
        return ""
    unit = SUFFIXED.fullmatch(raw.strip())
    if not unit:
        return f" (got {echo_value(raw)})"
    n = float(unit[1]) * 10 ** (3 + 3 * "kmgt".index(unit[2].lower().replace("b", "g")))
    also = f" (or {float(unit[1]) * 1024:.0f} if you mean {unit[1]} x 1,024)" if unit[2].lower() == "k" else ""
    return f" (got {echo_value(raw)}): write the number itself, {n:.0f}{also}"


def _positional_hint(e: ClickException, ctx) -> str:
    """For ``--NAME`` where the command takes NAME as its argument (``gpuplan model --model x``, ``buy --build``,
    ``gpus compare --gpu``): the way it is given, as the other commands' ``--model`` taught the user to expect."""
    option = getattr(e, "option_name", None)
    if ctx is None or not option or type(e).__name__ != "NoSuchOption":
        return ""
    word = option.lstrip("-").replace("-", "_")
    for param in ctx.command.params:
        names = {param.name or "", (param.name or "").removesuffix("s"), ctx.command.name or ""}
        if param.param_type_name == "argument" and word in names | ({"gpu"} if param.name == "names" else set()):
            meta = (param.name or "").upper() + ("..." if param.nargs == -1 else "")
            return f"; `{ctx.command_path}` takes it as its argument, without {option}: {ctx.command_path} {meta}"
    return ""


def main() -> None:
    """Entry point of the ``gpuplan`` script."""
    sys.exit(run())
