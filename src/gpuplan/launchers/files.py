"""The files a launch writes, and the one way each format is written. Every value a user gives (a model folder,
a dataset, ``--script``, ``--bucket``, the scenario file and the output folder in the command line) reaches a file
through these writers only: shell words through :func:`shlex.quote`, YAML through PyYAML's safe dumper, TOML
through tomli-w, JSON through :func:`json.dumps`, Python through ``repr``; a command line that a comment holds for
pasting through :func:`pasted`; and comment lines through :func:`comment`, which escapes every character that
could end the line or hide text. YAML, TOML, shell and Python files open with the plan's header as ``#``
comments; JSON, which has no comments, carries it under a ``_gpuplan`` key (DeepSpeed ignores top-level keys it
does not know) and in ``plan.json`` beside it.

:func:`write` writes all the files or none: into a new hidden folder beside them, then each renamed into place; a
stop signal (SIGTERM, SIGHUP, Ctrl-C) removes the hidden folder first, and one a killed launch left is removed by
the next launch into the same folder.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shlex
import shutil
import unicodedata
from dataclasses import dataclass
from pathlib import Path

import yaml

from ..errors import GpuplanError, echo, no_control
from ..userfiles import signals_clean_up, sweep, temporary, user_path
from .plan import LaunchPlan


@dataclass(frozen=True, kw_only=True)
class LaunchFile:
    name: str  # file name inside the output folder
    target: str  # the --target that wrote it
    text: str
    reader: str  # what reads it, in words a user can run
    executable: bool = False


STAGING = "gpuplan-launch"  # the staging folder's stem: .gpuplan-launch.PID-RANDOM.tmp


class Raw(str):
    """A command token written as is, unquoted, so the shell expands it (``$SKYPILOT_NODE_RANK``)."""


class Interpolation(str):
    """A value the reader's own interpolation is meant to fill (torchtune's ``${output_dir}``, OmegaConf resolves
    it): written as is where every other value is kept from that expansion (:func:`_kept`)."""


# characters a comment line shows escaped: controls (a newline or carriage return would end the comment, and the
# rest of the line would run), format characters (bidirectional overrides and zero-width characters that make a
# line read differently from what runs: "Trojan Source", CVE-2021-42574), surrogates, unassigned code points
# (U+FFFE is not allowed in YAML), and line and paragraph separators (line breaks to YAML)
HIDDEN = frozenset({"Cc", "Cf", "Cs", "Cn", "Zl", "Zp"})


def visible(text: str) -> str:
    """``text`` with every character of the :data:`HIDDEN` categories written as its Python escape (``\\n``,
    ``\\u202e``): what one comment line may hold in shell, YAML, TOML and Python alike."""
    return "".join(ascii(c)[1:-1] if unicodedata.category(c) in HIDDEN else c for c in text)


def comment(lines: list[str], mark: str = "#") -> str:
    """``lines`` as comment lines, one each, whatever they hold (:func:`visible`)."""
    return "".join(f"{mark} {visible(line)}".rstrip() + "\n" for line in lines)


class _Dumper(yaml.SafeDumper):
    """Safe YAML with multi-line strings (``setup``, ``run``) as literal blocks."""


def _text(dumper: yaml.SafeDumper, value: str) -> yaml.Node:
    style = "|" if "\n" in value else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_Dumper.add_representer(str, _text)
_Dumper.add_representer(Raw, _text)


class _TextDumper(_Dumper):
    """:class:`_Dumper` for a reader that replaces ``${...}`` in the file's text before it parses it: a string
    holding ``${`` is written double-quoted (where ``\\x7b`` is a ``{``), never as a literal block."""


def _quoted_text(dumper: yaml.SafeDumper, value: str) -> yaml.Node:
    style = '"' if "${" in value else "|" if "\n" in value else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_TextDumper.add_representer(str, _quoted_text)
_TextDumper.add_representer(Raw, _quoted_text)

# The readers that expand ``${...}`` in what they read, and how a value keeps its ``${`` from them:
# - "omegaconf": torchtune's config (``torchtune/config/_parse.py``: ``OmegaConf.load``) resolves ``${oc.env:HOME}``
#   and ``${key}`` in every string; ``\${`` is a literal ``${`` (and ``\\`` a backslash before one), OmegaConf's
#   grammar (``omegaconf/grammar/OmegaConfGrammarLexer.g4``, ESC_INTER);
# - "text": ai-toolkit's ``toolkit/config.py`` ``get_config`` replaces ``${VAR}`` with the environment's VAR in the
#   file's text, comments included, before parsing it (an unset VAR stops the job), and ``preprocess_config`` then
#   replaces ``[name]`` in every value with the job's name: a ``${`` is written ``$\x7b`` (a YAML double-quoted
#   escape; in a comment, read as visible() writes escapes), and a value holding ``[name]`` is refused;
# - "simpletuner": SimpleTuner (bghira/SimpleTuner bc8e6ab7, ``helpers/configuration/template_vars.py``) replaces
#   ``{env:VAR}`` in every value of config.json (``cli_utils.mapping_to_cli_args``) and ``{model_family}``,
#   ``{output_dir}`` and ``{id}`` in every value of multidatabackend.json (``data_backend/factory.py``
#   ``fill_variables_in_config_paths``), and reads the text "true" / "false" as a switch; it has no escape, so a
#   value it would rewrite is refused.
EXPANDS = ("omegaconf", "text", "simpletuner")
_INTERPOLATION = re.compile(r"(\\*)\$\{")
_SIMPLETUNER = re.compile(r"\{(?:env:[^{}]*|model_family|output_dir|id)\}")


def _kept(value, expands: str | None):
    """``value`` (data) with each string as ``expands``'s reader must be given it to read it back unchanged."""
    if isinstance(value, dict):
        return {_kept(k, expands): _kept(v, expands) for k, v in value.items()}
    if isinstance(value, list):
        return [_kept(v, expands) for v in value]
    if not isinstance(value, str):
        return value
    if isinstance(value, Interpolation):
        return str(value)
    if expands == "omegaconf":
        return _INTERPOLATION.sub(lambda m: m.group(1) * 2 + "\\${", value)
    if expands == "text" and "[name]" in value:
        raise GpuplanError(f"{echo(value)} holds [name], which ai-toolkit replaces with the job's name in every "
                           "value: rename it")
    if expands == "simpletuner" and (_SIMPLETUNER.search(value) or value.strip().lower() in ("true", "false")):
        said = _SIMPLETUNER.search(value)
        raise GpuplanError(f"{echo(value)} " + (f"holds {said.group()}, which SimpleTuner replaces in every value" if
                           said else "is read by SimpleTuner as a switch, not a name") + ": rename it")
    return value


def yaml_text(plan: LaunchPlan, data: dict, notes: list[str] = (), *, expands: str | None = None) -> str:
    """The header and ``notes`` as comments, then ``data`` in the order given; ``expands``: the reader's own
    expansion of ``${...}`` that every value is kept from (:data:`EXPANDS`)."""
    if expands is not None and expands not in EXPANDS:
        raise ValueError(f"expands is one of {EXPANDS}, not {expands!r}")
    dumper = _TextDumper if expands == "text" else _Dumper
    width = 1 << 30 if expands == "text" else 120  # a ${ never split over lines
    body = yaml.dump(_kept(data, expands), Dumper=dumper, sort_keys=False, default_flow_style=False, width=width)
    text = comment([*plan.header(), *notes]) + body
    return text.replace("${", "$\\x7b") if expands == "text" else text


def toml_text(plan: LaunchPlan, tables: dict[str, dict], notes: list[str] = ()) -> str:
    """The header and ``notes`` as comments, then ``tables`` written by tomli-w (every string escaped as TOML asks;
    a value TOML has no form for, such as None, is a TypeError); :mod:`tomllib` reads the text back to ``tables``."""
    import tomli_w

    return comment([*plan.header(), *notes]) + "\n" + tomli_w.dumps(tables)


def json_data(data, *, expands: str | None = None) -> str:
    """``data`` alone as JSON (a file whose every key the reader takes as an option: no header), each value kept
    from the reader's own expansion ``expands`` (:data:`EXPANDS`)."""
    return json.dumps(_kept(data, expands), indent=2) + "\n"


def json_text(plan: LaunchPlan, data: dict, notes: list[str] = ()) -> str:
    return json.dumps({"_gpuplan": {"note": "written by gpuplan: what it predicted for this plan",
                                    "header": [*plan.header(), *notes], "predicted": plan.predictions()},
                       **data}, indent=2) + "\n"


def quote(token: str) -> str:
    """One shell word: :func:`shlex.quote` (a word of safe ASCII characters stays as it is), or a :class:`Raw`
    token as written."""
    return token if isinstance(token, Raw) else shlex.quote(token)


def command_text(argv: list[str], env: dict[str, str] | None = None) -> str:
    """``argv`` on several lines, one option (and its value) per line, ready to paste into a shell; ``env``
    as assignments before it. ``shlex.split`` of the text gives back the assignments and ``argv``."""
    lines = [[*(f"{k}={quote(v)}" for k, v in (env or {}).items()), quote(argv[0])]]
    for token in argv[1:]:
        if token.startswith("-"):
            lines.append([])
        lines[-1].append(quote(token))
    return " \\\n    ".join(" ".join(line) for line in lines) + "\n"


def pasted(argv: list[str], env: dict[str, str] | None = None) -> str:
    """``argv`` on one line, for a comment or a note that a user pastes into a shell (``# run: ...``): every word
    quoted as in a script (:func:`quote`), ``env`` as assignments before it. ``shlex.split`` of the text gives back
    the assignments and ``argv``."""
    return " ".join([*(f"{k}={quote(v)}" for k, v in (env or {}).items()), *map(quote, argv)])


def shell_text(plan: LaunchPlan, argv: list[str], env: dict[str, str] | None = None,
               notes: list[str] = (), before: list[list[str]] = ()) -> str:
    """A bash script: the header and ``notes`` as comments, then each command of ``before`` and ``argv`` (with
    ``env`` assignments), every word quoted (:func:`command_text`)."""
    return "#!/usr/bin/env bash\n" + comment([*plan.header(), *notes]) + "set -euo pipefail\n" + \
        "".join(command_text(cmd) for cmd in before) + command_text(argv, env)


# ---- writing the files: all or none ---------------------------------------------------------------------------
NAME_MAX = 255  # bytes in one file name: the limit of ext4, XFS, Btrfs and APFS (Linux NAME_MAX)


def output_folder(folder, flag: str = "the output folder") -> Path:
    """``folder`` as a path to write into, ``~`` and ``~user`` expanded as a shell would (a folder named ``~``
    is never what a user meant: :func:`~gpuplan.userfiles.user_path`), or one sentence saying why not: not a path,
    empty or blank (which would write into the current folder unasked), a part that begins or ends with a space,
    a control character, or a part longer than the file system allows."""
    if isinstance(folder, bytes) or not isinstance(folder, (str, os.PathLike)):
        raise GpuplanError(f"{flag} must be a folder path, got {type(folder).__name__}")
    text = os.fspath(folder)
    if not isinstance(text, str) or not text.strip():
        raise GpuplanError(f"{flag} is empty or blank: name a folder (. for the current one)")
    no_control(text, flag)
    for part in Path(text).parts:
        if part != part.strip():
            raise GpuplanError(f"{flag} {echo(text)} has a name that begins or ends with a space ({part!r}): "
                               "quote the name without it")
        if len(os.fsencode(part)) > NAME_MAX:
            raise GpuplanError(f"{flag} has a name of {len(os.fsencode(part)):,} bytes ({echo(part)}); file "
                               f"systems allow {NAME_MAX}")
    return user_path(text)


def write(files: list[LaunchFile], folder, *, force: bool = False) -> list[Path]:
    """Write ``files`` into ``folder`` (created with its parents), all or none: each into a new hidden folder
    first (where a full disk, a read-only folder or a too long name fails with nothing in place), then renamed
    into ``folder``. Files already there are kept unless ``force``; a file replaced is renamed over (a symbolic
    link in its place is replaced, not followed)."""
    folder = output_folder(folder)
    names = [f.name for f in files]
    if any(not n or Path(n).name != n or n.startswith(".") for n in names):
        raise ValueError(f"launch file names must be plain names: {names}")  # the writers' own, never a user's
    if folder.exists() and not folder.is_dir():
        raise GpuplanError(f"{echo(folder)} is a file, not a folder: choose a folder with -o")
    clash = [n for n in names if os.path.lexists(folder / n)]
    if clash and not force:
        raise GpuplanError(f"{folder} already holds {', '.join(clash)}: choose another folder with -o, or pass "
                           "--force to overwrite")
    if any((folder / n).is_dir() and not (folder / n).is_symlink() for n in clash):
        raise GpuplanError(f"{folder} holds a folder named like a launch file ({', '.join(clash)}): remove it or "
                           "choose another folder with -o")
    made: list[Path] = []  # folders created here, removed again on failure
    with signals_clean_up():  # a stop signal: the staging folder and the folders made go, then the process ends
        try:
            if folder.is_dir():
                _stage_and_move(files, folder)
            else:
                parent = folder.absolute().parent
                made = [p for p in (parent, *parent.parents) if not p.exists()][::-1]
                parent.mkdir(parents=True, exist_ok=True)
                staged = _stage(files, parent)
                try:
                    os.rename(staged, folder)
                finally:
                    shutil.rmtree(staged, ignore_errors=True)  # left only if the rename failed or was stopped
        except BaseException as err:
            for p in reversed(made):
                _remove_empty(p)
            if not isinstance(err, (OSError, UnicodeEncodeError)):
                raise
            why = err.strerror if isinstance(err, OSError) and err.strerror else str(err)
            raise GpuplanError(f"cannot write the launch files into {echo(folder)}: {why}; nothing was written") \
                from None
    return [folder / n for n in names]


def _stage(files: list[LaunchFile], parent: Path) -> Path:
    """A new hidden folder in ``parent`` holding ``files``; removed again if one cannot be written, or on a stop
    signal; what a killed launch (SIGKILL) left there goes first (:func:`~gpuplan.userfiles.sweep`)."""
    sweep(parent, STAGING)
    staged = temporary(parent, STAGING)
    os.mkdir(staged)  # mode 0o777 less the umask, as a folder made by hand
    try:
        for f in files:
            path = staged / f.name
            with open(path, "x", encoding="utf-8", newline="") as out:
                out.write(f.text)
            if f.executable:
                path.chmod(0o755)
    except BaseException:
        shutil.rmtree(staged, ignore_errors=True)
        raise
    return staged


def _stage_and_move(files: list[LaunchFile], folder: Path) -> None:
    """Into an existing ``folder``: stage the files there, then rename each into place. What a file replaces is
    kept in the staging folder until every rename succeeded, and put back if one fails."""
    staged = _stage(files, folder)
    moved: list[str] = []
    try:
        for f in files:
            if os.path.lexists(folder / f.name):
                os.rename(folder / f.name, staged / f".old-{f.name}")
            os.rename(staged / f.name, folder / f.name)
            moved.append(f.name)
    except BaseException:
        for name in moved:
            (folder / name).unlink(missing_ok=True)
        for old in staged.glob(".old-*"):
            os.rename(old, folder / old.name[len(".old-"):])
        raise
    finally:
        shutil.rmtree(staged, ignore_errors=True)


def _remove_empty(path: Path) -> None:
    with contextlib.suppress(OSError):  # not empty: someone else's now
        path.rmdir()
