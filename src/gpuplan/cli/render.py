"""Listings for people and for scripts: one description of the columns, five formats.

A listing is rows of raw values (dicts) and :class:`Column` s that say how to show each value. ``table`` draws a
rich table sized to the terminal: the identifying columns (priority 0: model, GPU, setup) are never cut or
wrapped, and when the table is wider than the terminal the columns with the highest priority number drop first
(a dim line names them). ``plain`` aligns every column with spaces (for grep and awk), ``csv`` writes raw values,
``markdown`` a pipe table, ``json`` the rows as they are. Cells never go through rich markup, so text in square
brackets survives; a column may give a cell a style instead.

Usage::

    cols = [Column("name", "model", priority=0), Column("params", "params", fmt=human, align="right")]
    show(rows, cols, fmt="table", title="48 bundled models")
"""

from __future__ import annotations

import csv
import io
import json
import math
import os
import sys
import textwrap
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Annotated, Any, Literal

import typer
from rich.console import Console
from rich.table import Table
from rich.text import Text

from ..errors import GpuplanError
from ..result import finite, usd_amount

FORMATS = ("table", "plain", "csv", "markdown", "json")
Format = Literal["table", "plain", "csv", "markdown", "json"]

FORMAT_HELP = ("table (sized to the terminal), plain (aligned text, every column), csv, markdown or json "
               "[default: table]")
FormatValue = Format | None
FormatOption = Annotated[FormatValue, typer.Option("--format", help=FORMAT_HELP, show_default=False)]


# technique labels as table cells, a decoder LLM's setups and a module's alike (the rationale lines keep the words)
TECHNIQUE_CELLS = {"gradient checkpointing": "ckpt", "micro-batch 1 + accumulation": "mb1", "8-bit AdamW": "adam8",
                   "paged 8-bit AdamW": "padam8", "bf16 embeddings": "bf16-emb", "fp16 embeddings": "fp16-emb",
                   "fp8 KV cache": "kv8", "int8 weights": "int8", "fp8 weights": "fp8", "AWQ 4-bit weights": "awq",
                   "transformers": "hf"}


@dataclass(frozen=True)
class Column:
    """How one field of the rows is shown.

    ``priority`` 0 identifies a row (never dropped, never cut); 1 is shown whenever it can be (it may wrap);
    2 and up drop first on narrow terminals, highest number first.
    """

    key: str
    header: str
    fmt: Callable[[Any], str] | None = None
    align: Literal["left", "right"] = "left"
    priority: int = 1
    style: Callable[[dict[str, Any]], str | None] | None = None
    raw: str | None = None  # the row's key csv writes, where the cell is text made of it (``1,981 ±6%``): a number

    @property
    def raw_key(self) -> str:
        return self.raw or self.key

    def cell(self, row: dict[str, Any]) -> str:
        value = row.get(self.key)
        if value is None:
            return ""
        return self.fmt(value) if self.fmt is not None else str(value)


def num(spec: str = "{:,.0f}", empty: str = "") -> Callable[[Any], str]:
    """A formatter for numbers: ``num("{:,.1f}")``; None and non-finite values print ``empty``."""

    def fmt(value: Any) -> str:
        if value is None or (isinstance(value, float) and not math.isfinite(value)):
            return empty
        return spec.format(value)

    return fmt


def usd(value: float | None) -> str:
    """Dollars with the precision that matters: $1,234 / $12.35 / $0.123."""
    if value is None or not math.isfinite(value):
        return ""
    return usd_amount(value)


def resolve_format(fmt: str | None, as_json: bool = False, markdown: bool = False) -> str:
    """The format asked for, with the older ``--json`` / ``--markdown`` flags as shorthands; two flags that ask
    for different formats (``--format csv --json``, in either order) are refused in one sentence rather than one
    of them silently winning (a script that adds ``--json`` must get JSON or an error, not CSV)."""
    asked = {f for f, on in (("json", as_json), ("markdown", markdown)) if on} | ({fmt} if fmt else set())
    if len(asked) > 1:
        flags = [f"--format {fmt}"] if fmt else []
        flags += [flag for flag, on in (("--json", as_json), ("--markdown", markdown)) if on]
        raise GpuplanError(f"{' and '.join(flags)} ask for two formats: give one (--json is --format json)")
    return asked.pop() if asked else "table"


# the CLI's two consoles: answers on stdout, errors and progress on stderr; markup off, so that text in square
# brackets (`pip install 'gpuplan[live]'`, a user's path) prints as it is: styles are Text's; emoji codes off, so
# that a name like `run:fire:` prints as written (and rich's table of 4,000 emoji, a tenth of a second on a loaded
# machine, is never imported: bench/startup.py)
out = Console(highlight=False, markup=False, emoji=False)
err = Console(stderr=True, highlight=False, markup=False, emoji=False)


def follow_columns() -> None:
    """Size both consoles by ``COLUMNS`` as it is when a command starts: rich reads it once, when a console is made,
    and one process may run several commands (the Python API's callers, tests) with different widths."""
    columns = os.environ.get("COLUMNS", "")
    for c in (out, err):
        c.width = int(columns) if columns.isdigit() and int(columns) > 0 else None  # None: the terminal's own


def console() -> Console:
    return out


def _widths(rows: list[dict[str, Any]], c: Column) -> tuple[int, int]:
    """(natural, least) width of a column: identities and numbers never shrink; text wraps down to its longest
    word, or 12."""
    cells = [c.cell(r) for r in rows]
    natural = max([len(c.header), *(len(x) for x in cells)])
    if c.priority == 0 or c.align == "right":
        return natural, natural
    longest_word = max([len(w) for x in cells for w in x.split()] or [len(c.header)])
    return natural, min(natural, max(longest_word, 12))


def fit_columns(rows: list[dict[str, Any]], columns: Sequence[Column], width: int) -> tuple[list[Column], list[Column]]:
    """The columns that fit ``width`` (rich's box: 3 characters per column + 1), and those left out.

    Priority 0 always stays; priority 1 columns are added left to right while their least widths fit (text may
    wrap); then the others, lowest priority number first, while their natural widths fit.
    """
    sizes = {c.key: _widths(rows, c) for c in columns}
    kept = [c for c in columns if c.priority == 0]
    used = sum(sizes[c.key][0] + 3 for c in kept) + 1
    for col in (c for c in columns if c.priority == 1):
        if used + sizes[col.key][1] + 3 <= width:
            kept.append(col)
            used += sizes[col.key][1] + 3
    for col in sorted((c for c in columns if c.priority >= 2), key=lambda c: (c.priority, columns.index(c))):
        if used + sizes[col.key][0] + 3 <= width:
            kept.append(col)
            used += sizes[col.key][0] + 3
    kept.sort(key=columns.index)
    return kept, [c for c in columns if c not in kept]


def table(rows: list[dict[str, Any]], columns: Sequence[Column], *, title: str | None = None,
          width: int | None = None) -> tuple[Table, list[Column]]:
    """A rich table sized to ``width`` (the console's by default) and the columns it left out. Identifying
    columns and numbers are never cut; other text wraps between words."""
    width = width or console().width
    kept, dropped = fit_columns(rows, columns, width)
    t = Table(title=Text(title) if title else None, title_justify="left", padding=(0, 1))
    for c in kept:
        natural, least = _widths(rows, c)
        if least == natural:  # identities and numbers are never cut
            t.add_column(c.header, justify=c.align, no_wrap=True, min_width=natural)
        else:  # text may wrap between words
            t.add_column(c.header, justify=c.align, overflow="fold", min_width=least)
    for r in rows:
        t.add_row(*(Text(c.cell(r), style=(c.style(r) if c.style else None) or "") for c in kept))
    return t, dropped


PIPE_WIDTH = 120  # the width plain text wraps to when stdout is no terminal and COLUMNS is not set


def plain_width() -> int:
    """The width ``plain`` wraps to: the terminal's (or ``COLUMNS``), else :data:`PIPE_WIDTH`: a file or a pipe
    keeps readable lines without rich's 80-column guess."""
    columns = os.environ.get("COLUMNS", "")
    if columns.isdigit() and int(columns) > 0:
        return int(columns)
    return console().width if console().is_terminal else PIPE_WIDTH


def _plain_widths(rows: list[dict[str, Any]], columns: Sequence[Column], width: int) -> list[int]:
    """Each column's width in ``plain``: natural, then the widest text column narrowed a character at a time, down
    to its least width (:func:`_widths`), until the row fits ``width`` (two spaces between columns) or none can
    narrow: identities and numbers keep their width, so a name longer than the room overflows it."""
    sizes = [_widths(rows, c) for c in columns]
    widths = [natural for natural, _ in sizes]
    while sum(widths) + 2 * (len(widths) - 1) > width:
        narrowable = [i for i, (w, (_, least)) in enumerate(zip(widths, sizes, strict=True)) if w > least]
        if not narrowable:
            break
        widest = max(narrowable, key=lambda i: widths[i])
        widths[widest] -= 1
    return widths


def plain(rows: list[dict[str, Any]], columns: Sequence[Column], width: int | None = None) -> str:
    """Every column, aligned with two spaces, no box: one line per row, and where a text cell is wider than its
    column (the row would pass ``width``, :func:`plain_width` by default), its words wrap onto lines below, in the
    same column. Columns that cannot fit ``width`` even wrapped go on in a second block below (:func:`_blocks`)."""
    width = width or plain_width()
    return "\n\n".join(_plain_block(rows, block, width) for block in _blocks(rows, columns, width))


def _blocks(rows: list[dict[str, Any]], columns: Sequence[Column], width: int) -> list[list[Column]]:
    """``columns`` in blocks that fit ``width`` at their least widths (:func:`_widths`), as a wide table is printed
    in parts: the first block as many columns as fit, in order; each further block the identity columns (priority
    0) again, then the next columns that fit. One block where all fit (or where no column would be left for a
    second)."""
    least = {c.key: _widths(rows, c)[1] for c in columns}
    keys = [c for c in columns if c.priority == 0]
    wide = lambda cols: sum(least[c.key] for c in cols) + 2 * (len(cols) - 1) > width  # noqa: E731
    blocks: list[list[Column]] = []
    current: list[Column] = []
    for c in columns:
        if c in keys and not blocks:
            current.append(c)
            continue
        if c in keys:
            continue
        if wide([*current, c]) and any(x not in keys for x in current):
            blocks.append(current)
            current = [*keys, c]
        else:
            current.append(c)
    return [*blocks, current]


def _plain_block(rows: list[dict[str, Any]], columns: Sequence[Column], width: int) -> str:
    widths = _plain_widths(rows, columns, width)
    lines = []
    for line in [[c.header for c in columns], *([c.cell(r) for c in columns] for r in rows)]:
        wrapped = [textwrap.wrap(cell, w, break_long_words=False, break_on_hyphens=False) or [""]
                   if len(cell) > w else [cell] for cell, w in zip(line, widths, strict=True)]
        for k in range(max(len(cell) for cell in wrapped)):
            parts = [(cell[k] if k < len(cell) else "").rjust(w) if c.align == "right"
                     else (cell[k] if k < len(cell) else "").ljust(w)
                     for cell, w, c in zip(wrapped, widths, columns, strict=True)]
            lines.append("  ".join(parts).rstrip())
    return "\n".join(lines)


def markdown(rows: list[dict[str, Any]], columns: Sequence[Column]) -> str:
    """A pipe table; ``|`` in cells is escaped. A row is one line whatever its width: the Markdown renderer wraps
    the cells to its page (a line break inside a cell would end the row)."""
    esc = lambda s: s.replace("|", "\\|")  # noqa: E731
    lines = ["| " + " | ".join(esc(c.header) for c in columns) + " |",
             "|" + "|".join("---:" if c.align == "right" else "---" for c in columns) + "|"]
    lines += ["| " + " | ".join(esc(c.cell(r)) for c in columns) + " |" for r in rows]
    return "\n".join(lines)


def to_csv(rows: list[dict[str, Any]], columns: Sequence[Column]) -> str:
    """Raw values (numbers unformatted, None empty) under the column headers; text a spreadsheet would run as a
    formula is written as text (:func:`_inert`)."""
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow([c.header for c in columns])
    for r in rows:
        writer.writerow(["" if r.get(c.raw_key) is None else _inert(_raw(r.get(c.raw_key))) for c in columns])
    return buf.getvalue().rstrip("\n")


def _raw(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return ""
    if isinstance(value, (list, tuple)):
        return "+".join(str(v) for v in value)
    return value


FORMULA_START = ("=", "+", "-", "@", "\t", "\r")  # what Excel, LibreOffice and Sheets read as a formula's start


def _inert(value: Any) -> Any:
    """Text beginning as a formula does (a price list's region ``=HYPERLINK(...)``, an instance ``+1+cmd|...``)
    with a ``'`` before it, which spreadsheets read as "text follows" (OWASP's CSV injection advice); a number
    written as text (``-1.5``) as it is."""
    if not isinstance(value, str) or not value.startswith(FORMULA_START):
        return value
    try:
        float(value)
        return value
    except ValueError:
        return "'" + value


def write_json(data: Any) -> None:
    """Strict JSON on stdout: an API answer (anything with a ``to_dict()``: an ``Answer``, the Plan) as its
    ``to_dict()``; non-finite numbers become null; objects json cannot encode become strings."""
    if callable(getattr(data, "to_dict", None)):
        data = data.to_dict()
    sys.stdout.write(json.dumps(finite(data), indent=2, default=str, allow_nan=False) + "\n")


def show(rows: list[dict[str, Any]], columns: Sequence[Column], fmt: str = "table", *, title: str | None = None,
         notes: Sequence[str] = (), json_data: Any = None) -> None:
    """Print a listing in ``fmt``. ``notes`` follow the table (not in csv or json); ``json_data`` replaces the
    rows in json (a command's fuller records)."""
    if fmt == "json":
        write_json(rows if json_data is None else json_data)
        return
    if fmt == "csv":
        sys.stdout.write(to_csv(rows, columns) + "\n")
        return
    if fmt in ("plain", "markdown"):
        body = plain(rows, columns) if fmt == "plain" else markdown(rows, columns)
        head = [title, ""] if title and fmt == "plain" else [f"**{title}**", ""] if title else []
        if fmt == "plain":  # the title and the notes wrap as the rows do
            head, notes = ([textwrap.fill(n, plain_width(), subsequent_indent="  ", break_long_words=False,
                                          break_on_hyphens=False) for n in lines] for lines in (head, notes))
        sys.stdout.write("\n".join([*head, body, *([""] if notes else []), *notes]) + "\n")
        return
    t, dropped = table(rows, columns, title=title)
    out = console()
    out.print(t)
    if dropped:
        bullet(f"(not shown at this width: {', '.join(c.header for c in dropped)}; --format plain shows every "
               "column)", prefix="", style="dim")
    for note in notes:
        bullet(note, prefix="")


def bullet(text: str, prefix: str = "  - ", style: str | None = None, stream: Console | None = None) -> None:
    """One item, wrapped to the terminal with a hanging indent under its first word."""
    out = stream or console()
    width = max(out.width, 40)
    indent = " " * (len(prefix) if prefix.strip() else len(prefix) + 2)
    wrapped = textwrap.fill(text, width=width, initial_indent=prefix, subsequent_indent=indent,
                            break_long_words=False, break_on_hyphens=False)
    out.print(Text(wrapped, style=style or ""), soft_wrap=True)


def spot_bullet(c, save_interval: bool) -> None:
    """A spot plan's line under its cost (a decoder's or a module's plan): the checkpoint interval, the
    interruptions and the wall time they add (:func:`gpuplan.market.cost.spot_plan`)."""
    sp = c.spot
    bullet(f"spot: checkpoint every {sp.interval_h * 60:.0f} min ({'save_interval' if save_interval else 'Daly'}), "
           f"interruptions every {sp.mtbi_h:.1f} h on average: wall time x{sp.overhead:.2f}"
           + (f", {c.spot_multiplier:.2f}x the cheapest on-demand cost" if c.spot_multiplier else ""), prefix="  ")
