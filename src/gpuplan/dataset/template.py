"""A tokenizer's chat template rendered as transformers renders it, within limits on work, size and time.

Chat templates come with tokenizers from the Hugging Face hub: third parties' jinja2. transformers renders them in
jinja2's ``ImmutableSandboxedEnvironment`` with ``trim_blocks``, ``lstrip_blocks``, the ``loopcontrols``
extension and a ``raise_exception`` global (``transformers/utils/chat_template_utils.py``
``_compile_jinja_template``). The sandbox keeps a template away from Python's internals, but not from looping for
hours or building gigabytes (``{% for i in range(100000) %}{% for j in range(100000) %}``, ``{{ "x" * 10**9 }}``).
Here the same sandbox renders under a :class:`Budget`, one per record:

- **steps**: every loop iteration (each ``{% for %}`` iterates through a counting filter put into the parsed
  template), call and filter is a step; at most :data:`STEPS` per render, and :data:`TIME_S` seconds;
- **characters**: whatever the template writes (its output, a ``{% set %}`` block, a macro's text, ``~``
  concatenations) is counted as it is written, and no single value may exceed the budget either: ``*``, ``+``,
  ``**`` and ``%`` are checked before they run (a whole number made by ``*`` or ``**`` has at most
  :data:`MAX_BITS`), as are calls and filters whose size comes from an argument (a width, a count, a format's
  padding, ``join`` and ``replace``), and namespace attributes;
- the budget is :data:`BASE_CHARS` plus :data:`PER_CHAR` times the record's own text: a template adds role and
  turn markers, not megabytes.

A template that breaks a limit raises :class:`TemplateLimit`: the caller refuses the template and counts without
it, saying so.
"""

from __future__ import annotations

import json
import re
import threading
import time
from collections.abc import Iterable
from functools import cache, wraps
from typing import Any

from jinja2 import nodes, pass_context
from jinja2.exceptions import TemplateError
from jinja2.ext import Extension
from jinja2.sandbox import ImmutableSandboxedEnvironment
from jinja2.utils import Namespace
from jinja2.visitor import NodeTransformer

STEPS = 200_000  # loop iterations, calls and filters in one render (a real template takes tens per message)
TIME_S = 2.0  # seconds for one render (a real template takes well under a millisecond)
BASE_CHARS = 100_000  # characters a render may write beyond PER_CHAR x the record's text
PER_CHAR = 4
MAX_BITS = 4096  # a whole number a template may make by ** or *: squaring one again and again doubles its size (a
#   2**64 squared 25 times held 858 MB and took 22 s in one step, past the budget's time, which is read between steps)
_LONG_FORMAT = re.compile(r"\d{7,}|%[-#0 +]*\*|\.\*|\{[^{}]*\{")  # a width or precision a format could blow up


class TemplateLimit(Exception):
    """A render went past its budget; the message says which limit, in words."""


class Budget:
    """What one render may still spend."""

    def __init__(self, chars: int):
        self.chars = self.limit = chars
        self.steps = STEPS
        self.deadline = time.monotonic() + TIME_S

    def step(self) -> None:
        self.steps -= 1
        if self.steps < 0:
            raise TemplateLimit(f"more than {STEPS:,} loop steps and calls")
        if not self.steps % 256 and time.monotonic() > self.deadline:
            raise TemplateLimit(f"more than {TIME_S:g} s")

    def size(self, n: int) -> None:
        """A value of ``n`` characters (or items) is about to be made."""
        if n > self.limit:
            raise TemplateLimit(f"a value of more than {self.limit:,} characters")

    def write(self, n: int) -> None:
        self.size(n)
        self.chars -= n
        if self.chars < 0:
            raise TemplateLimit(f"more than {self.limit:,} characters written")


_state = threading.local()


def _budget() -> Budget:
    budget = getattr(_state, "budget", None)
    if budget is None:  # a template evaluated outside render(): no budget, no work
        raise TemplateLimit("rendered outside a budget")
    return budget


def _whole(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _length(value: Any) -> int:
    return len(value) if isinstance(value, (str, list, tuple, dict)) else 0


def _check_args(budget: Budget, args: Iterable[Any]) -> None:
    for a in args:
        if isinstance(a, int) and not isinstance(a, bool) and abs(a) > budget.limit:
            raise TemplateLimit(f"a count or width of {a:,}")


def _check_format(fmt: Any) -> None:
    """A ``%`` or ``str.format`` pattern whose width or precision could make a huge string is refused."""
    if isinstance(fmt, str) and _LONG_FORMAT.search(fmt):
        raise TemplateLimit("a format with a width or precision past the budget")


def _check_growth(budget: Budget, name: str, obj: Any, args: tuple, kwargs: dict) -> None:
    """Size of what a call that grows text would make, checked before it runs."""
    if name == "join" and isinstance(obj, str) and args and isinstance(args[0], (list, tuple)):  # sep.join(items)
        budget.size(len(args[0]) * len(obj) + sum(_length(x) for x in args[0]))
    elif name == "replace" and isinstance(obj, str) and len(args) >= 2 and isinstance(args[0], str):
        budget.size(len(obj) + obj.count(args[0]) * max(_length(args[1]) - len(args[0]), 0) if args[0] else
                    len(obj) * (1 + _length(args[1])))
    elif name in ("expandtabs", "indent") and isinstance(obj, str):
        width = next((a for a in (*args, *kwargs.values()) if isinstance(a, int)), 8)
        budget.size(len(obj) + (obj.count("\t") + obj.count("\n") + 1) * max(width, 0))
    elif name == "translate":
        raise TemplateLimit("str.translate")


def _counted_filter(name: str, fn):
    """``fn``, a jinja2 filter, as a step of the budget, its size checked before (where an argument decides it)
    and after it runs."""
    passed = 1 if getattr(fn, "jinja_pass_arg", None) else 0  # a context or environment jinja2 passes first

    @wraps(fn)
    def checked(*args, **kwargs):
        budget = _budget()
        budget.step()
        head, values = list(args[:passed]), list(args[passed:])
        _check_args(budget, [*values[1:], *kwargs.values()])
        if values and name == "join":
            values[0] = list(values[0])  # counted once, then joined
            _check_growth(budget, "join", kwargs.get("d", values[1] if len(values) > 1 else ""), (values[0],), {})
        elif values and name in ("replace", "indent"):
            _check_growth(budget, name, values[0], tuple(values[1:]), kwargs)
        elif values and name == "format":
            _check_format(values[0])
        out = fn(*head, *values, **kwargs)
        budget.size(_length(out))
        return out

    return checked


class _Bounded(ImmutableSandboxedEnvironment):
    """transformers' sandbox with the budget's checks on operators, calls and str.format."""

    intercepted_binops = frozenset(["*", "**", "%", "+"])

    def call_binop(self, context, operator, left, right):
        budget = _budget()
        budget.step()
        if operator == "*":
            for seq, n in ((left, right), (right, left)):
                if isinstance(seq, (str, list, tuple)) and isinstance(n, int):
                    budget.size(len(seq) * max(n, 0))
            if _whole(left) and _whole(right) and left.bit_length() + right.bit_length() > MAX_BITS:
                raise TemplateLimit(f"a product of {left.bit_length() + right.bit_length():,} bits")
        elif operator == "+":
            budget.size(_length(left) + _length(right))
        elif operator == "**" and isinstance(left, int) and isinstance(right, int) and abs(left) > 1:
            if right > 64 or left.bit_length() * max(right, 0) > MAX_BITS:
                raise TemplateLimit(f"a power {left} ** {right}")
        elif operator == "%":
            _check_format(left)
        return super().call_binop(context, operator, left, right)

    def wrap_str_format(self, value):  # str.format and format_map, as the sandbox reaches them
        wrapped = super().wrap_str_format(value)
        if wrapped is not None:
            _check_format(value.__self__)
        return wrapped

    def call(__self, __context, __obj, *args, **kwargs):  # jinja2 names them so
        budget = _budget()
        budget.step()
        _check_args(budget, [*args, *kwargs.values()])
        name = getattr(__obj, "__name__", "")
        if name == "join" and args and not isinstance(args[0], (list, tuple)):
            args = (list(args[0]), *args[1:])  # counted once, then joined
        _check_growth(budget, name, getattr(__obj, "__self__", None), args, kwargs)
        out = super().call(__context, __obj, *args, **kwargs)
        budget.size(_length(out))
        return out


class _Generation(Extension):
    """``{% generation %}...{% endgeneration %}``: the assistant's part of a turn, as transformers parses it
    (``chat_template_utils.py`` ``AssistantTracker``, for assistant-only loss masks): rendered as its body."""

    tags = frozenset({"generation"})

    def parse(self, parser):
        lineno = next(parser.stream).lineno
        body = parser.parse_statements(("name:endgeneration",), drop_needle=True)
        return nodes.CallBlock(self.call_method("_body"), [], [], body).set_lineno(lineno)

    def _body(self, caller):
        return caller()


class _Namespace(Namespace):
    """``namespace()``: what a template keeps across loop iterations, each value written counted."""

    def __setitem__(self, name, value):
        _budget().write(_length(value))
        super().__setitem__(name, value)


def _raise_exception(message):
    raise TemplateError(message)


@pass_context
def _steps(context, iterable):
    budget = _budget()
    for item in iterable:
        budget.step()
        yield item


@pass_context
def _written(context, value):
    text = str(value)
    _budget().write(len(text))
    return text


@pass_context
def _concatenated(context, parts):
    texts = [str(p) for p in parts]
    _budget().write(sum(map(len, texts)))
    return "".join(texts)


def _bounded_concat(parts):
    parts = list(parts)
    _budget().size(sum(_length(p) for p in parts))
    return "".join(parts)


@cache
def _environment() -> _Bounded:
    """The sandbox as transformers builds it (trim_blocks, lstrip_blocks, loopcontrols, raise_exception, tojson),
    every filter counted and the budget's filters for loops, output and ``~`` added."""
    env = _Bounded(trim_blocks=True, lstrip_blocks=True, extensions=["jinja2.ext.loopcontrols", _Generation])
    env.filters["tojson"] = lambda x, indent=None, **kw: json.dumps(x, ensure_ascii=False, indent=indent)
    env.filters = {name: _counted_filter(name, fn) for name, fn in env.filters.items()}
    env.filters.update({"_gpuplan_steps": _steps, "_gpuplan_written": _written, "_gpuplan_concat": _concatenated})
    env.globals.update(raise_exception=_raise_exception, namespace=_Namespace)
    env.concat = _bounded_concat  # captured blocks ({% set %}...{% endset %}) and macros' text
    return env


def _through(node, name: str):
    return nodes.Filter(node, name, [], [], None, None, lineno=node.lineno)


class _Route(NodeTransformer):
    """Every loop's iterable, every output expression and every ``~`` through the budget's filters."""

    def visit_For(self, node):
        node = self.generic_visit(node)
        node.iter = _through(node.iter, "_gpuplan_steps")
        return node

    def visit_Output(self, node):
        node = self.generic_visit(node)
        node.nodes = [n if isinstance(n, nodes.TemplateData) else _through(n, "_gpuplan_written") for n in node.nodes]
        return node

    def visit_Concat(self, node):
        node = self.generic_visit(node)
        return _through(nodes.List(node.nodes, lineno=node.lineno), "_gpuplan_concat")


@cache
def compiled(source: str):
    """The template with every loop, output and concatenation routed through the budget's filters."""
    env = _environment()
    return env.from_string(_Route().visit(env.parse(source)))


def render(source: str, text_chars: int, **variables: Any) -> str:
    """``source`` rendered with ``variables`` within a budget of ``BASE_CHARS + PER_CHAR * text_chars``
    characters; :class:`TemplateLimit` past any limit, jinja2's own errors as they come."""
    template = compiled(source)
    budget = Budget(BASE_CHARS + PER_CHAR * text_chars)
    _state.budget = budget
    try:
        out, total = [], 0
        for chunk in template.generate(**variables):  # text an expression wrote is counted as it was written
            total += len(chunk)
            budget.size(total)
            out.append(chunk)
        return "".join(out)
    finally:
        _state.budget = None
