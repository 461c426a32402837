"""The errors gpuplan raises for bad input: each says what is wrong and how to fix it.

The CLI prints any :class:`GpuplanError` as one red line and exits with code 2.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any

ECHO_LIMIT = 60  # characters of a user's value an error line quotes back


class GpuplanError(ValueError):
    """Bad input: the message is one sentence a person can act on."""


class UnknownNameError(GpuplanError, LookupError):
    """A model, GPU or provider name that is not in a catalog."""

    def __init__(self, kind: str, name: str, known: Iterable[str], hint: str = ""):
        self.kind, self.name = kind, name
        self.suggestions = did_you_mean(name, known)
        msg = f"unknown {kind} {echo(name)}"
        if self.suggestions:
            msg += "; did you mean " + " or ".join(repr(s) for s in self.suggestions) + "?"
        if hint:
            msg += ("" if msg.endswith("?") else ".") + f" {hint}"
        super().__init__(msg)


def echo(value: object, limit: int = ECHO_LIMIT) -> str:
    """``value`` quoted (``repr``) as an error line shows it: cut to ``limit`` characters with "..." so that a long
    input cannot bury the sentence around it."""
    text = str(value)
    return repr(text if len(text) <= limit else text[: limit - 3] + "...")


# a quoted value (opened after a space or bracket, not an apostrophe inside a word) longer than ECHO_LIMIT
_LONG_QUOTE = re.compile(r"""(?<![\w'"])(['"])((?:\\.|(?!\1).){""" + str(ECHO_LIMIT + 1) + r""",})\1(?!\w)""")


def cut_echoes(message: str) -> str:
    """``message`` with every quoted value longer than :data:`ECHO_LIMIT` cut as :func:`echo` cuts it: the
    CLI's last line of defence for messages it did not build (click's "Invalid value for ...")."""
    return _LONG_QUOTE.sub(lambda m: m[1] + m[2][: ECHO_LIMIT - 3] + "..." + m[1], message)


def normalize_name(name: str) -> str:
    """Fold a name the way people type it: case, spaces and underscores do not matter."""
    return "-".join(name.strip().lower().replace("_", " ").split())


def did_you_mean(name: str, known: Iterable[str], n: int = 3) -> list[str]:
    """The closest known names to ``name`` (difflib ratio >= 0.6, or a substring match)."""
    known = list(dict.fromkeys(known))
    key = normalize_name(name)
    folded = {normalize_name(k): k for k in known}
    close = difflib.get_close_matches(key, list(folded), n=n, cutoff=0.6)
    hits = [folded[c] for c in close]
    if len(hits) < n and len(key) >= 3:
        hits += [k for f, k in folded.items() if key in f and k not in hits][: n - len(hits)]
    return hits


def read_mapping(path: str | Path, what: str) -> dict[str, Any]:
    """The mapping a YAML (or JSON) file holds, or one sentence saying why it cannot be read: no such file, not
    valid YAML (with the line), not UTF-8, not a mapping. ``what`` names the file's fields in the messages
    ("scenario", "workload")."""
    import yaml  # PyYAML: loaded only when a file is read

    p = Path(path)
    if not p.is_file():
        raise GpuplanError(f"no {what} file {str(path)!r}")
    try:
        loaded = yaml.safe_load(p.read_text(encoding="utf-8"))
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        where = f" at line {mark.line + 1}" if mark else ""
        raise GpuplanError(f"{path} is not valid YAML{where}: {getattr(err, 'problem', err)}") from None
    except UnicodeDecodeError:
        raise GpuplanError(f"{path} is not a UTF-8 text file") from None
    if loaded is None:
        return {}
    if not isinstance(loaded, dict):
        raise GpuplanError(f"{path} must hold a mapping of {what} fields, not a {type(loaded).__name__}")
    return loaded


# C0 and C1 controls and DEL, the line and paragraph separators, and lone surrogates (bytes that were not UTF-8,
# as Python keeps them from a file name or argv: PEP 383): a value holding one could end a line of a written file
# (a shell or YAML comment, a header) or move a terminal's cursor, and a surrogate cannot be written as UTF-8
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029\ud800-\udfff]")


def no_control(value: str, what: str) -> str:
    """``value`` unchanged, or one sentence refusing it when it holds a control character, a line separator or a
    byte that is not UTF-8: names (files, folders, models, providers) are written into files and messages."""
    found = _CONTROL.search(value)
    if found:
        char = found.group()
        kind = "a byte that is not UTF-8" if "\ud800" <= char <= "\udfff" else "a control character"
        raise GpuplanError(f"{what} {echo(value)} holds {kind} ({ascii(char)[1:-1]}): use a name without one")
    return value
