"""The files a launch writes, and the one way each kind is rendered: YAML, TOML and shell files open with the
plan's header as ``#`` comments; JSON, which has no comments, carries it under a ``_gpuplan`` key (DeepSpeed
ignores top-level keys it does not know) and in ``plan.json`` beside it.
"""

from __future__ import annotations

import json
import math
import re
import shlex
from dataclasses import dataclass
from pathlib import Path

import yaml

from ..errors import GpuplanError
from .plan import LaunchPlan


@dataclass(frozen=True, kw_only=True)
class LaunchFile:
    name: str  # file name inside the output folder
    target: str  # the --target that wrote it
    text: str
    reader: str  # what reads it, in words a user can run
    executable: bool = False


class Raw(str):
    """A command token written as is, unquoted, so the shell expands it (``$SKYPILOT_NODE_RANK``)."""


def comment(lines: list[str], mark: str = "#") -> str:
    return "".join(f"{mark} {line}".rstrip() + "\n" for line in lines)


class _Dumper(yaml.SafeDumper):
    """Safe YAML with multi-line strings (``setup``, ``run``) as literal blocks."""


def _text(dumper: yaml.SafeDumper, value: str) -> yaml.Node:
    style = "|" if "\n" in value else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_Dumper.add_representer(str, _text)
_Dumper.add_representer(Raw, _text)


def yaml_text(plan: LaunchPlan, data: dict, notes: list[str] = ()) -> str:
    """The header and ``notes`` as comments, then ``data`` in the order given."""
    body = yaml.dump(data, Dumper=_Dumper, sort_keys=False, default_flow_style=False, width=120)
    return comment([*plan.header(), *notes]) + body


def toml_text(plan: LaunchPlan, tables: dict[str, dict], notes: list[str] = ()) -> str:
    """The header and ``notes`` as comments, then one ``[table]`` per entry of ``tables``, in order. Values are
    what job configs hold: strings, booleans, integers, finite floats and lists of strings; :mod:`tomllib` reads
    the text back to ``tables`` (a test checks it)."""
    out = [comment([*plan.header(), *notes])]
    for name, table in tables.items():
        out.append(f"\n[{name}]\n")
        out += [f"{key} = {_toml_value(value)}\n" for key, value in table.items()]
    return "".join(out)


def _toml_value(value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float) and math.isfinite(value):
        return repr(value)
    if isinstance(value, str):
        # a JSON string is a TOML basic string: the same escapes (non-ASCII kept as is, DEL escaped as TOML asks)
        return json.dumps(value, ensure_ascii=False).replace("\x7f", "\\u007f")
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    raise TypeError(f"no TOML form for {value!r}")


def json_text(plan: LaunchPlan, data: dict, notes: list[str] = ()) -> str:
    return json.dumps({"_gpuplan": {"note": "written by gpuplan: what it predicted for this plan",
                                    "header": [*plan.header(), *notes], "predicted": plan.predictions()},
                       **data}, indent=2) + "\n"


_SAFE = re.compile(r"^[\w./:,=@%+-]+$")


def quote(token: str) -> str:
    return token if isinstance(token, Raw) or _SAFE.match(token) else shlex.quote(token)


def command_text(argv: list[str], env: dict[str, str] | None = None) -> str:
    """``argv`` on several lines, one option (and its value) per line, ready to paste into a shell; ``env``
    as assignments before it. ``shlex.split`` of the text gives back the assignments and ``argv``."""
    lines = [[*(f"{k}={quote(v)}" for k, v in (env or {}).items()), quote(argv[0])]]
    for token in argv[1:]:
        if token.startswith("-"):
            lines.append([])
        lines[-1].append(quote(token))
    return " \\\n    ".join(" ".join(line) for line in lines) + "\n"


def shell_text(plan: LaunchPlan, argv: list[str], env: dict[str, str] | None = None,
               notes: list[str] = ()) -> str:
    return "#!/usr/bin/env bash\n" + comment([*plan.header(), *notes]) + "set -euo pipefail\n" + \
        command_text(argv, env)


def write(files: list[LaunchFile], folder: Path, *, force: bool = False) -> list[Path]:
    """Write ``files`` into ``folder`` (created); existing files are kept unless ``force``."""
    folder = Path(folder)
    clash = [f.name for f in files if (folder / f.name).exists()]
    if clash and not force:
        raise GpuplanError(f"{folder} already holds {', '.join(clash)}: choose another folder with -o, or pass "
                           "--force to overwrite")
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise GpuplanError(f"cannot create {folder}: {err.strerror}") from None
    paths = []
    for f in files:
        path = folder / f.name
        path.write_text(f.text, encoding="utf-8")
        if f.executable:
            path.chmod(0o755)
        paths.append(path)
    return paths
