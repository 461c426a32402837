"""The errors gpuplan raises for bad input: each says what is wrong and how to fix it.

The CLI prints any :class:`GpuplanError` as one red line and exits with code 2.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Mapping
from typing import Any

ECHO_LIMIT = 60  # characters of a user's value an error line quotes back
MESSAGE_LIMIT = 1000  # characters of a whole message: a sentence, a few names and values quoted back


class GpuplanError(ValueError):
    """Bad input: the message is one sentence a person can act on. A message built around a long value (a
    file's expanded content, a huge list) is cut to :data:`MESSAGE_LIMIT` characters, each quoted value first to
    :data:`ECHO_LIMIT`, so that no input can bury the sentence or cost memory to print."""

    def __init__(self, *args: object):
        if len(args) == 1 and isinstance(args[0], str) and len(args[0]) > MESSAGE_LIMIT:
            args = (bounded(args[0]),)
        super().__init__(*args)


class SourceError(GpuplanError):
    """A source of prices could not answer though the input was right (offline, a provider's API failed): not a
    usage error, so the CLI says the prices in force stay and exits 1."""


class RenamedWarning(DeprecationWarning):
    """An old name used where a new one stands: said once per name and process, and the old name still works
    (the command line prints it as one note on stderr)."""


# names renamed (issue 30), old -> new: the old ones still read, said once (:func:`renamed`); the scenario's
# fields (and their flags), the recommend search's argument and the capacity workload's think time
RENAMED_FIELDS = {"framework": "stack", "strategy": "sharding"}
RENAMED = {**RENAMED_FIELDS, "any_framework": "any_stack", "think_s": "think_time_s"}  # (think_s: a workload's)
_SAID: set[str] = set()


def renamed(old: str, where: str = "field") -> str:
    """The new name of ``old`` (:data:`RENAMED`), with one :class:`RenamedWarning` the first time it is used in
    the process: "the scenario field 'framework' is now 'stack' (the old name still works)"."""
    import warnings

    new = RENAMED[old]
    if old not in _SAID:
        _SAID.add(old)
        said = (f"--{old.replace('_', '-')} is now --{new.replace('_', '-')}" if where == "flag" else
                f"the {where} {old!r} is now {new!r}")
        warnings.warn(f"{said} (the old name still works)", RenamedWarning, stacklevel=3)
    return new


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
    input cannot bury the sentence around it. A list or mapping is written by :mod:`reprlib` (its first few items,
    a few levels deep), so a huge or deeply nested value costs no more than a short one."""
    if isinstance(value, str):
        text = value
    elif isinstance(value, (list, tuple, dict, set, frozenset)):
        text = _short_repr(value)
    elif isinstance(value, (int, float)) and not isinstance(value, bool) and abs(value) >= 10**15:
        text = shown_number(value)
    else:
        text = _short_repr(value) if type(value).__str__ is object.__str__ else str(value)
    return repr(text if len(text) <= limit else text[: limit - 3] + "...")


def echo_value(value: object) -> str:
    """A user's value as a message quotes it back: None, booleans and numbers as Python writes them (a huge number
    in powers of ten), anything else by :func:`echo`."""
    if value is None or isinstance(value, bool):
        return repr(value)
    if isinstance(value, (int, float)):
        return repr(value) if abs(value) < 10**15 or value != value else shown_number(value)
    return echo(value)


def _short_repr(value: object) -> str:
    import reprlib

    r = reprlib.Repr()
    r.maxlevel, r.maxlist, r.maxtuple, r.maxdict, r.maxset, r.maxstring, r.maxother = 3, 6, 6, 4, 6, ECHO_LIMIT, 40
    r.maxlong = 40
    try:
        return r.repr(value)
    except Exception:  # a user object whose repr fails
        return f"<{type(value).__name__}>"


def shown_number(value: float) -> str:
    """A number as a message shows it: thousands separators, a huge one (10**100, 1e308) in powers of ten instead
    of 300 digits, floats to 4 significant digits."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return echo(value)
    if isinstance(value, int):
        if abs(value) < 10**15:
            return f"{value:,}"
        return f"about 10^{int(abs(value).bit_length() * 0.30103)}" if value > 0 else \
            f"about -10^{int(abs(value).bit_length() * 0.30103)}"
    if value != value or value in (float("inf"), float("-inf")):
        return str(value)
    if value.is_integer() and abs(value) < 1e15:
        return f"{int(value):,}"
    return f"{value:.4g}"


def bounded(message: str) -> str:
    """``message`` with its quoted values cut (:func:`cut_echoes`) and the whole at most :data:`MESSAGE_LIMIT`
    characters."""
    message = cut_echoes(message[: 20 * MESSAGE_LIMIT])
    return message if len(message) <= MESSAGE_LIMIT else message[: MESSAGE_LIMIT - 3] + "..."


# a quoted value (opened after a space or bracket, not an apostrophe inside a word) longer than ECHO_LIMIT; compiled
# on the first message cut (re caches it), as _CONTROL below: 0.13 ms a process that says nothing
_LONG_QUOTE = r"""(?<![\w'"])(['"])((?:\\.|(?!\1).){""" + str(ECHO_LIMIT + 1) + r""",})\1(?!\w)"""


def cut_echoes(message: str) -> str:
    """``message`` with every quoted value longer than :data:`ECHO_LIMIT` cut as :func:`echo` cuts it: the
    CLI's last line of defence for messages it did not build (click's "Invalid value for ...")."""
    return re.sub(_LONG_QUOTE, lambda m: m[1] + m[2][: ECHO_LIMIT - 3] + "..." + m[1], message)


def normalize_name(name: str) -> str:
    """Fold a name the way people type it: case, spaces and underscores do not matter, nor full-width or other
    compatibility forms of letters and digits (Unicode NFKC, UAX #15: an East Asian keyboard's ``ｑｗｅｎ３-８ｂ`` is
    ``qwen3-8b``)."""
    if not name.isascii():
        import unicodedata  # a name beyond ASCII is rare: 0.1 ms a process that never meets one

        name = unicodedata.normalize("NFKC", name)
    return "-".join(name.strip().lower().replace("_", " ").split())


def _folded(word: str) -> str:
    return "".join(ch for ch in normalize_name(word) if ch not in "-._")


def spelled_choice(value: Any, choices: Iterable[str]) -> Any:
    """The one of ``choices`` that ``value`` spells with other case or punctuation, as people write the names in
    prose (``vLLM``, ``SGLang``, ``LoRA``, ``ZeRO-3``, ``llamacpp``, ``TRT-LLM``, ``BF16-mixed``); ``value``
    itself when it is a choice, not text, or folds to none of them or to two (the walk of session 31: ``--engine
    vLLM`` was refused where ``--gpu RTX4090`` and ``--model Llama 3 70B`` are read)."""
    choices = tuple(choices)
    if not isinstance(value, str) or value in choices:
        return value
    key = _folded(value)
    hits = [c for c in choices if _folded(c) == key]
    return hits[0] if len(hits) == 1 else value


def did_you_mean(name: str, known: Iterable[str], n: int = 3) -> list[str]:
    """The closest known names to ``name`` (difflib ratio >= 0.6, or a substring match)."""
    import difflib  # a name not found is rare: every process that reads errors.py would pay for it

    known = list(dict.fromkeys(known))
    key = normalize_name(name)
    folded = {normalize_name(k): k for k in known}
    close = difflib.get_close_matches(key, list(folded), n=n, cutoff=0.6)
    hits = [folded[c] for c in close]
    if len(hits) < n and len(key) >= 3:
        hits += [k for f, k in folded.items() if key in f and k not in hits][: n - len(hits)]
    return hits


# C0 and C1 controls and DEL, the line and paragraph separators, and lone surrogates (bytes that were not UTF-8,
# as Python keeps them from a file name or argv: PEP 383): a value holding one could end a line of a written file
# (a shell or YAML comment, a header) or move a terminal's cursor, and a surrogate cannot be written as UTF-8.
# The bidirectional controls (Unicode's UAX #9, 2.1-2.7: the marks, embeddings, overrides and isolates) too: a
# right-to-left override prints what follows backwards, so a folder or a comment can show other text than it holds
# (CVE-2021-42574, "Trojan Source"). Compiled on the first value that is not printable ASCII (re caches it): 0.4 ms
# a process that never meets one.
_BIDI = "\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069"
_CONTROL = "[\x00-\x1f\x7f-\x9f\u2028\u2029\ud800-\udfff" + _BIDI + "]"


def printable(value: str) -> str:
    """``value`` with each control character, line separator or lone surrogate written as its escape (``\\x1b``,
    ``\\n``, ``\\u2028``, as ``ascii()`` writes it): a label read from a file or a folder's name printed to a
    terminal cannot move the cursor, clear the screen or set the window's title."""
    return value if value.isascii() and value.isprintable() else \
        re.sub(_CONTROL, lambda m: ascii(m.group())[1:-1], value)


def no_control(value: str, what: str) -> str:
    """``value`` unchanged, or one sentence refusing it when it holds a control character, a line separator or a
    byte that is not UTF-8: names (files, folders, models, providers) are written into files and messages."""
    if value.isascii() and value.isprintable():  # printable ASCII (space to ~) holds none of them
        return value
    found = re.search(_CONTROL, value)
    if found:
        char = found.group()
        kind = "a byte that is not UTF-8" if "\ud800" <= char <= "\udfff" else \
            "a text-direction control character" if re.match(f"[{_BIDI}]", char) else "a control character"
        raise GpuplanError(f"{what} {echo(value)} holds {kind} ({ascii(char)[1:-1]}): use a name without one")
    return value


@functools.cache
def number_fields(model: Any) -> frozenset[str]:
    """The fields of ``model`` (a pydantic model class) that take an int or a float (alone or beside None or a
    string), none of which takes a yes/no."""
    import typing

    out = set()
    for name, info in model.model_fields.items():
        kinds = set(typing.get_args(info.annotation)) or {info.annotation}
        if kinds & {int, float} and bool not in kinds:
            out.add(name)
    return frozenset(out)


def yes_for_a_number(model: Any, data: Any) -> str | None:
    """``'NAME' takes a number, not true`` for the first bool ``data`` gives a number field of ``model``: pydantic's
    lax mode would read it as 1 or 0 (a ``mode="before"`` validator's check); None when there is none."""
    if not isinstance(data, Mapping):
        return None
    for name, value in data.items():
        if isinstance(value, bool) and name in number_fields(model):
            return f"{name!r} takes a number, not {str(value).lower()}"
    return None
