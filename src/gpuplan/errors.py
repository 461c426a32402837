"""The errors gpuplan raises for bad input: each says what is wrong and how to fix it.

The CLI prints any :class:`GpuplanError` as one red line and exits with code 2.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable


class GpuplanError(ValueError):
    """Bad input: the message is one sentence a person can act on."""


class UnknownNameError(GpuplanError, LookupError):
    """A model, GPU or provider name that is not in a catalog."""

    def __init__(self, kind: str, name: str, known: Iterable[str], hint: str = ""):
        self.kind, self.name = kind, name
        self.suggestions = did_you_mean(name, known)
        msg = f"unknown {kind} {name!r}"
        if self.suggestions:
            msg += "; did you mean " + " or ".join(repr(s) for s in self.suggestions) + "?"
        if hint:
            msg += ("" if msg.endswith("?") else ".") + f" {hint}"
        super().__init__(msg)


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
