"""A tokenizer's chat template rendered as transformers renders it, within limits on work, size and time.

Chat templates come with tokenizers from the Hugging Face hub: third parties' jinja2. transformers renders them in
jinja2's ``ImmutableSandboxedEnvironment`` with ``trim_blocks``, ``lstrip_blocks``, the ``loopcontrols``
extension and a ``raise_exception`` global (``transformers/utils/chat_template_utils.py``
``_compile_jinja_template``). The sandbox keeps a template away from Python's internals, but not from looping for
hours or building gigabytes (``{% for i in range(100000) %}{% for j in range(100000) %}``, ``{{ "x" * 10**9 }}``).
Here the same sandbox renders under a :class:`Budget`, one per record:

- **steps**: every loop iteration (each ``{% for %}`` iterates through a counting filter put into the parsed
  template, and so does each ``loop(...)`` of a recursive loop), call and filter is a step; at most :data:`STEPS`
  (plus :data:`PER_TURN_STEPS` a turn) per render, and :data:`TIME_S` seconds. The clock is read every
  :data:`CLOCK_WORK` characters of work, a step counting as :data:`CHARS_PER_STEP` and a filter, call or
  comparison as the characters it reads and makes, so one that works on a large value is timed when it ends;
- **characters**: whatever the template writes (its output, a ``{% set %}`` block, a macro's text, ``~``
  concatenations) is counted as it is written, and no single value may exceed the budget either, counted as it
  would be written out whole (:func:`measure`: a list's nested contents, each time they appear, so ``[l, l]``
  doubled 40 times is 2**40 copies of ``l``, refused when it is made): list, tuple and dict literals are measured
  as they are made, ``*``, ``+``, ``**`` and ``%`` before they run (a whole number made by ``*`` or ``**`` has at
  most :data:`MAX_BITS`), as are calls and filters whose size comes from an argument (a width, a count, a
  format's padding and fields, ``join``, ``replace``, ``tojson``'s indent, ``lipsum``'s words), and namespace
  attributes; a value nests at most :data:`MAX_DEPTH` levels;
- the budget is :data:`BASE_CHARS` plus :data:`PER_CHAR` times the record's own text plus
  :data:`PER_TURN_CHARS` a turn: a template adds role and turn markers, not megabytes.

A template that breaks a limit raises :class:`TemplateLimit`: the caller refuses the template and counts without
it, saying so.
"""

from __future__ import annotations

import json
import re
import threading
import time
from collections.abc import Callable, ItemsView, Iterable, KeysView, ValuesView
from functools import cache, wraps
from inspect import signature
from typing import Any

from jinja2 import nodes, pass_context
from jinja2.constants import LOREM_IPSUM_WORDS
from jinja2.exceptions import TemplateError
from jinja2.ext import Extension
from jinja2.runtime import LoopContext
from jinja2.sandbox import ImmutableSandboxedEnvironment
from jinja2.utils import Namespace, generate_lorem_ipsum
from jinja2.visitor import NodeTransformer

STEPS = 200_000  # loop iterations, calls and filters in one render (a real template takes tens per message)
PER_TURN_STEPS = 200  # and per turn of the record (bench/template_cost.py: 3.5-6 a turn in three released forms)
TIME_S = 2.0  # seconds for one render (a real template takes well under a millisecond)
BASE_CHARS = 100_000  # characters a render may write beyond PER_CHAR x the record's text and PER_TURN_CHARS a turn
PER_CHAR = 4
PER_TURN_CHARS = 256  # a turn's role and turn markers (Llama 3's are 52 characters)
CHARS_PER_STEP = 256  # the work of a step, in characters read or made, for the clock
CLOCK_WORK = 256 * CHARS_PER_STEP  # work between two readings of the clock
MAX_DEPTH = 128  # levels a value may nest: the bounded reader's 64 for the record's data, as many for the template's
LOREM_WORD = max(map(len, LOREM_IPSUM_WORDS.split())) + 2  # lipsum's longest word and what follows it (", ")
MAX_BITS = 4096  # a whole number a template may make by ** or *: squaring one again and again doubles its size (a
#   2**64 squared 25 times held 858 MB and took 22 s in one step, past the budget's time, which is read between steps)
_LONG_FORMAT = re.compile(r"\d{7,}|%[-#0 +]*\*|\.\*|\{[^{}]*\{")  # a width or precision a format could blow up


class TemplateLimit(Exception):
    """A render went past its budget; the message says which limit, in words."""


class Budget:
    """What one render may still spend."""

    def __init__(self, chars: int, steps: int = STEPS, more: Callable[[], int] | None = None):
        self.chars = self.limit = chars
        self.steps = self.max_steps = steps
        self.deadline = time.monotonic() + TIME_S
        self.work = 0  # characters of work since the clock was last read
        self.more = more  # the characters to add once, the first time a value nears the limit (:meth:`within`)

    def within(self, n: int) -> bool:
        """Whether ``n`` characters are within the limit, which :attr:`more` raises once, when first needed (what
        it costs to read is spent only by a template that nears the limit)."""
        if n > self.limit and self.more is not None:
            extra, self.more = self.more(), None
            self.limit, self.chars = self.limit + extra, self.chars + extra
        return n <= self.limit

    def step(self, chars: int = 0) -> None:
        """A loop step, call or filter, and the ``chars`` characters it reads or makes (:meth:`spend`)."""
        self.steps -= 1
        if self.steps < 0:
            raise TemplateLimit(f"more than {self.max_steps:,} loop steps and calls")
        self.spend(CHARS_PER_STEP + chars)

    def spend(self, chars: int) -> None:
        """Work of ``chars`` characters done: the clock is read each :data:`CLOCK_WORK` of them."""
        self.work += chars
        if self.work >= CLOCK_WORK:
            self.work = 0
            if time.monotonic() > self.deadline:
                raise TemplateLimit(f"more than {TIME_S:g} s")

    def size(self, n: int) -> None:
        """A value of ``n`` characters (or items) is about to be made."""
        if not self.within(n):
            raise TemplateLimit(f"a value of more than {self.limit:,} characters")

    def write(self, n: int) -> None:
        self.size(n)
        self.chars -= n
        if self.chars < 0 and not (self.within(self.limit + 1) and self.chars >= 0):
            raise TemplateLimit(f"more than {self.limit:,} characters written")


_state = threading.local()


def _budget() -> Budget:
    budget = getattr(_state, "budget", None)
    if budget is None:  # a template evaluated outside render(): no budget, no work
        raise TemplateLimit("rendered outside a budget")
    return budget


def _whole(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _number(value: Any) -> bool:
    return isinstance(value, (int, float))


def _length(value: Any) -> int:
    return len(value) if isinstance(value, (str, list, tuple, dict)) else 0


_CONTAINERS = (list, tuple, dict, set, frozenset, KeysView, ValuesView, ItemsView, Namespace)


def measure(value: Any, limit: int) -> tuple[int, int, int]:
    """``value`` as it is written out whole (``str()``, ``tojson``, ``join``): its characters (a container's
    items, keys, quotes and separators, a nested container counted each time it appears), the items nested in it,
    and the sum of their depths (the lines tojson's indent indents, and how deep); :class:`TemplateLimit` past
    ``limit`` characters or :data:`MAX_DEPTH` levels. A container that appears twice is read once (the time of a
    measure is the number of distinct containers, however often they repeat)."""
    seen: dict[int, tuple[int, int, int]] = {}  # only containers alive under ``value`` while it is read

    def walk(v: Any, depth: int) -> tuple[int, int, int]:
        if isinstance(v, str):
            return len(v), 0, 0
        if not isinstance(v, _CONTAINERS):
            return (v.bit_length() * 3 // 10 + 2 if _whole(v) else 24), 0, 0  # digits; a float, None, an object
        if id(v) in seen:
            return seen[id(v)]
        if depth >= MAX_DEPTH:
            raise TemplateLimit(f"a value nested more than {MAX_DEPTH} levels deep")
        if isinstance(v, Namespace):
            v = v._Namespace__attrs  # what its repr writes
        if isinstance(v, ItemsView):
            v = v.mapping
        parts = [x for pair in v.items() for x in pair] if isinstance(v, dict) else v
        chars, items, depths = 2, 0, 0
        for part in parts:  # a dict's key and value each count as an item here: a bound, not tojson's exact lines
            c, n, d = walk(part, depth + 1)
            chars, items, depths = chars + c + 4, items + 1 + n, depths + 1 + d + n
            if chars > limit:
                raise TemplateLimit(f"a value of more than {limit:,} characters")
        seen[id(v)] = chars, items, depths
        return seen[id(v)]

    return walk(value, 0)


def _size(budget: Budget, value: Any) -> int:
    """The characters of ``value`` written out whole (:func:`measure`), past the budget refused."""
    return len(value) if isinstance(value, str) else _measured(budget, value)[0]


def _measured(budget: Budget, value: Any) -> tuple[int, int, int]:
    """:func:`measure` within the budget's limit (raised once by its :attr:`Budget.more` where needed)."""
    try:
        return measure(value, budget.limit)
    except TemplateLimit:
        if budget.more is None:
            raise
        budget.within(budget.limit + 1)
        return measure(value, budget.limit)


def _check_args(budget: Budget, args: Iterable[Any]) -> None:
    for a in args:
        if isinstance(a, int) and not isinstance(a, bool) and not budget.within(abs(a)):
            raise TemplateLimit(f"a count or width of {a:,}")


def _check_format(budget: Budget, fmt: Any, args: Iterable[Any] = ()) -> None:
    """A ``%`` or ``str.format`` pattern whose width or precision could make a huge string is refused, and so is
    one whose fields, each filled with the largest of ``args``, would pass the budget."""
    if not isinstance(fmt, str):
        return
    if _LONG_FORMAT.search(fmt):
        raise TemplateLimit("a format with a width or precision past the budget")
    fields = fmt.count("%") + fmt.count("{")
    if fields:
        budget.size(len(fmt) + fields * max((_size(budget, a) for a in args), default=0))


def _check_growth(budget: Budget, name: str, obj: Any, args: tuple, kwargs: dict) -> None:
    """Size of what a call that grows text would make, checked before it runs."""
    if name == "join" and isinstance(obj, str) and args and isinstance(args[0], (list, tuple)):  # sep.join(items)
        budget.size(len(args[0]) * len(obj) + sum(_size(budget, x) for x in args[0]))
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
        head, values = list(args[:passed]), list(args[passed:])
        _check_args(budget, [*values[1:], *kwargs.values()])
        if values and name == "join":
            values[0] = list(values[0])  # counted once, then joined
            _check_growth(budget, "join", kwargs.get("d", values[1] if len(values) > 1 else ""), (values[0],), {})
        elif values and name in ("replace", "indent"):
            _check_growth(budget, name, values[0], tuple(values[1:]), kwargs)
        elif name == "sum" and not _number(kwargs.get("start", values[2] if len(values) > 2 else 0)):
            raise TemplateLimit("a sum of lists")  # each + copies what came before: the square of the items' time
        elif values and name == "format":
            _check_format(budget, values[0], [*values[1:], *kwargs.values()])
        read = _size(budget, values[0]) if values else 0
        budget.step(read)
        out = fn(*head, *values, **kwargs)
        budget.spend(_size(budget, out))
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
                    budget.size(_size(budget, seq) * max(n, 0))
            if _whole(left) and _whole(right) and left.bit_length() + right.bit_length() > MAX_BITS:
                raise TemplateLimit(f"a product of {left.bit_length() + right.bit_length():,} bits")
        elif operator == "+":
            budget.size(_size(budget, left) + _size(budget, right))
        elif operator == "**" and isinstance(left, int) and isinstance(right, int) and abs(left) > 1:
            if right > 64 or left.bit_length() * max(right, 0) > MAX_BITS:
                raise TemplateLimit(f"a power {left} ** {right}")
        elif operator == "%":
            _check_format(budget, left, right if isinstance(right, tuple) else (right,))
        return super().call_binop(context, operator, left, right)

    def wrap_str_format(self, value):  # str.format and format_map, as the sandbox reaches them
        wrapped = super().wrap_str_format(value)
        if wrapped is None:
            return None

        @wraps(wrapped)
        def checked(*args, **kwargs):
            _check_format(_budget(), value.__self__, [*args, *kwargs.values()])
            return wrapped(*args, **kwargs)

        return checked

    def call(__self, __context, __obj, *args, **kwargs):  # jinja2 names them so
        budget = _budget()
        _check_args(budget, [*args, *kwargs.values()])
        name = getattr(__obj, "__name__", "")
        if isinstance(__obj, LoopContext) and args:  # loop(items) in a recursive loop: each item a step, as above
            args = (_steps(__context, args[0]), *args[1:])
        elif name == "join" and args and not isinstance(args[0], (list, tuple)):
            args = (list(args[0]), *args[1:])  # counted once, then joined
        owner = getattr(__obj, "__self__", None)
        _check_growth(budget, name, owner, args, kwargs)
        budget.step(_size(budget, owner) if isinstance(owner, (str, *_CONTAINERS)) else 0)
        out = super().call(__context, __obj, *args, **kwargs)
        budget.spend(_size(budget, out))
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


def _lipsum(*args, **kwargs) -> str:
    """jinja2's ``lipsum`` global, its paragraphs' words counted before they are made."""
    given = signature(generate_lorem_ipsum).bind(*args, **kwargs)
    given.apply_defaults()
    n, words = given.arguments["n"], max(given.arguments["min"], given.arguments["max"])
    if _whole(n) and _whole(words):
        _budget().size(max(n, 0) * (max(words, 0) * LOREM_WORD + 16))  # 16: a paragraph's end and <p></p>
    return generate_lorem_ipsum(*args, **kwargs)


def _tojson(value, indent=None, **_):
    """transformers' ``tojson`` (``ensure_ascii=False``), its size with ``indent`` counted before it is made:
    each item on a line of its own, indented once a level."""
    budget = _budget()
    chars, items, depths = _measured(budget, value)
    width = len(indent) if isinstance(indent, str) else indent if _whole(indent) else 0
    budget.size(chars + 2 * items + 2 * depths * max(width, 0))
    return json.dumps(value, ensure_ascii=False, indent=indent)


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
    budget = _budget()
    if not isinstance(value, str):
        budget.size(_size(budget, value))
    text = str(value)
    budget.write(len(text))
    return text


@pass_context
def _concatenated(context, parts):
    budget = _budget()
    budget.size(sum(_size(budget, p) for p in parts))
    texts = [str(p) for p in parts]
    budget.write(sum(map(len, texts)))
    return "".join(texts)


@pass_context
def _made(context, value):
    """A list, tuple or dict literal, measured whole as it is made (``[l, l]`` is twice ``l``)."""
    budget = _budget()
    budget.spend(_size(budget, value))
    return value


@pass_context
def _read(context, value):
    """A value compared (``==``, ``in``): the comparison's work, for the clock."""
    if not isinstance(value, str):
        budget = _budget()
        budget.spend(_size(budget, value))
    return value


def _bounded_concat(parts):
    parts = list(parts)
    _budget().size(sum(_length(p) for p in parts))
    return "".join(parts)


@cache
def _environment() -> _Bounded:
    """The sandbox as transformers builds it (trim_blocks, lstrip_blocks, loopcontrols, raise_exception, tojson),
    every filter counted and the budget's filters for loops, output and ``~`` added."""
    env = _Bounded(trim_blocks=True, lstrip_blocks=True, extensions=["jinja2.ext.loopcontrols", _Generation])
    env.filters["tojson"] = _tojson
    env.filters = {name: _counted_filter(name, fn) for name, fn in env.filters.items()}
    env.filters.update({"_gpuplan_steps": _steps, "_gpuplan_written": _written, "_gpuplan_concat": _concatenated,
                        "_gpuplan_made": _made, "_gpuplan_read": _read})
    env.globals.update(raise_exception=_raise_exception, namespace=_Namespace, lipsum=_lipsum)
    env.concat = _bounded_concat  # captured blocks ({% set %}...{% endset %}) and macros' text
    return env


def _through(node, name: str):
    return nodes.Filter(node, name, [], [], None, None, lineno=node.lineno)


class _Route(NodeTransformer):
    """Every loop's iterable, every output expression, every ``~``, every list, tuple and dict literal and every
    compared value through the budget's filters."""

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

    def visit_List(self, node):
        return _through(self.generic_visit(node), "_gpuplan_made")

    def visit_Dict(self, node):
        return _through(self.generic_visit(node), "_gpuplan_made")

    def visit_Tuple(self, node):  # a tuple stored into ({% for k, v in ... %}) is a target, not a value
        node = self.generic_visit(node)
        return _through(node, "_gpuplan_made") if node.ctx == "load" else node

    def visit_Compare(self, node):  # a constant ('user', 3) is small: only what is computed is read
        node = self.generic_visit(node)
        node.expr = node.expr if isinstance(node.expr, nodes.Const) else _through(node.expr, "_gpuplan_read")
        for op in node.ops:
            op.expr = op.expr if isinstance(op.expr, nodes.Const) else _through(op.expr, "_gpuplan_read")
        return node


@cache
def compiled(source: str):
    """The template with every loop, output and concatenation routed through the budget's filters."""
    env = _environment()
    return env.from_string(_Route().visit(env.parse(source)))


def render(source: str, text_chars: int, **variables: Any) -> str:
    """``source`` rendered with ``variables`` within a budget of ``BASE_CHARS + PER_CHAR * text_chars +
    PER_TURN_CHARS * turns`` characters and ``STEPS + PER_TURN_STEPS * turns`` steps, where the turns are those of
    ``messages``; where a value nears that, ``text_chars`` is taken to be at least ``variables`` written out whole
    as JSON (a turn's tool calls are data the template may write, as its content is; read only then: it would cost
    a quarter of a render); :class:`TemplateLimit` past any limit, jinja2's own errors as they come."""
    template = compiled(source)
    turns = len(variables.get("messages") or ())
    whole = lambda: PER_CHAR * max(len(json.dumps(variables, ensure_ascii=False, default=str)) - text_chars, 0)  # noqa: E731
    budget = Budget(BASE_CHARS + PER_CHAR * text_chars + PER_TURN_CHARS * turns, STEPS + PER_TURN_STEPS * turns,
                    whole)
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
