"""The bounded YAML reader under :func:`gpuplan.userfiles.load_yaml`: libyaml's parser (PyYAML's ``CParser``, the
pure-Python parser where libyaml is missing), PyYAML's composer with bounds on nesting and on what aliases add
(the "billion laughs" bomb stops at its first levels), and the safe constructor with duplicate keys refused.

A module of its own so that PyYAML (about 7 ms to import, bench/startup.py) is imported only when a YAML file is
read: an estimate from flags or a dict, over the bundled data (read through JSON twins, :mod:`gpuplan.datafiles`),
never needs it. The bounds are :mod:`gpuplan.userfiles`' and come as arguments.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from yaml.composer import Composer
from yaml.constructor import SafeConstructor
from yaml.events import AliasEvent, MappingStartEvent, SequenceStartEvent
from yaml.nodes import MappingNode, ScalarNode, SequenceNode
from yaml.resolver import Resolver

from .errors import GpuplanError, echo

_NUMBER = ("tag:yaml.org,2002:int", "tag:yaml.org,2002:float")


class _Refused(Exception):
    """A bound a YAML file broke, with the line where it did."""

    def __init__(self, sentence: str, mark: Any = None):
        super().__init__(sentence)
        self.sentence, self.mark = sentence, mark


if hasattr(yaml, "CSafeLoader"):  # libyaml's parser: ~10x faster on large files
    from yaml._yaml import CParser as _Parser

    _parse_init = _Parser.__init__
else:  # pragma: no cover - PyYAML without libyaml
    from yaml.parser import Parser as _PyParser
    from yaml.reader import Reader
    from yaml.scanner import Scanner

    class _Parser(Reader, Scanner, _PyParser):  # type: ignore[no-redef]
        pass

    def _parse_init(self, stream):
        Reader.__init__(self, stream)
        Scanner.__init__(self)
        _PyParser.__init__(self)


class _Loader(Composer, _Parser, SafeConstructor, Resolver):
    """libyaml's parser, PyYAML's composer with the bounds it is given (depth, alias values, self-reference), the safe
    constructor with duplicate keys refused. Each node's size once expanded and its depth are kept as it is
    composed, so an alias costs what it would expand to without being expanded."""

    def __init__(self, stream, max_depth: int, max_alias_values: int, deep: str):
        _parse_init(self, stream)
        Composer.__init__(self)
        SafeConstructor.__init__(self)
        Resolver.__init__(self)
        self.max_depth, self.max_alias_values, self.deep = max_depth, max_alias_values, deep
        self.depth, self.alias_values, self.open = 0, 0, set()
        self.sizes: dict[int, tuple[int, int]] = {}  # id(node) -> (values once expanded, nesting depth)

    def compose_node(self, parent, index):
        event = self.peek_event()
        if isinstance(event, AliasEvent):
            self._count_alias(event)
            return super().compose_node(parent, index)
        if self.depth >= self.max_depth:
            raise _Refused(self.deep, event.start_mark)
        opens = event.anchor is not None and isinstance(event, (SequenceStartEvent, MappingStartEvent))
        if opens:
            self.open.add(event.anchor)
        self.depth += 1
        try:
            node = super().compose_node(parent, index)
        finally:
            self.depth -= 1
            if opens:
                self.open.discard(event.anchor)
        if isinstance(node, ScalarNode) and not node.style and ":" in node.value and node.tag in _NUMBER:
            raise _Refused(self._base60(node, parent, index), node.start_mark)
        self.sizes[id(node)] = self._size(node)
        return node

    def _base60(self, node, parent, index) -> str:
        """The sentence refusing a plain scalar YAML 1.1 reads as a base-60 number (``rate_rps: 1:30`` is 90): a
        time or a ratio written so is read as a number no one meant."""
        value = self.construct_object(node)
        where = f"key {echo(index.value)}: " if isinstance(index, ScalarNode) else \
            "a key " if isinstance(parent, MappingNode) else "a value "
        return (f"{where}{node.value} reads as the base-60 number {value:g} in YAML 1.1; write {value:g}, or quote "
                "it if it is text")

    def _count_alias(self, event) -> None:
        node = self.anchors.get(event.anchor)
        if node is None:  # an undefined alias: the composer says so
            return
        if event.anchor in self.open:
            raise _Refused(f"alias *{event.anchor} refers to the value it is inside", event.start_mark)
        values, depth = self.sizes[id(node)]
        self.alias_values += values
        if self.alias_values > self.max_alias_values:
            raise _Refused(f"its aliases (*name) repeat more than {self.max_alias_values:,} values; write the values "
                           "out or use fewer aliases", event.start_mark)
        if self.depth + depth > self.max_depth:
            raise _Refused(self.deep, event.start_mark)

    def _size(self, node) -> tuple[int, int]:
        if isinstance(node, SequenceNode):
            children = node.value
        elif isinstance(node, MappingNode):
            children = [n for pair in node.value for n in pair]
        else:
            return 1, 1
        sizes = [self.sizes[id(c)] for c in children]
        return 1 + sum(s for s, _ in sizes), 1 + max((d for _, d in sizes), default=0)

    def construct_mapping(self, node, deep=False):
        if isinstance(node, MappingNode):
            seen = set()
            for key_node, _ in node.value:
                if key_node.tag == "tag:yaml.org,2002:merge":
                    continue
                key = self.construct_object(key_node, deep=deep)
                try:
                    if key in seen:
                        raise _Refused(f"key {echo(key)} appears twice in one mapping; keep one", key_node.start_mark)
                    seen.add(key)
                except TypeError:  # an unhashable key: the constructor says so
                    pass
        return super().construct_mapping(node, deep)


def load(text: str, path: str | Path, *, max_depth: int, max_alias_values: int, deep: str) -> Any:
    """The value of the YAML (or JSON) ``text`` of the file ``path``, within the bounds; one sentence with the line
    otherwise (``deep``: the sentence for nesting deeper than ``max_depth``)."""
    loader = _Loader(text, max_depth, max_alias_values, deep)
    try:
        node = loader.get_single_node()
        return None if node is None else loader.construct_document(node)
    except _Refused as err:
        raise GpuplanError(f"{path}{_at(err.mark)}: {err.sentence}") from None
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        problem = getattr(err, "problem", None) or str(err).splitlines()[0]
        raise GpuplanError(f"{path} is not valid YAML{_at(mark)}: {problem}") from None
    except RecursionError:
        raise GpuplanError(f"{path}: {deep}") from None
    except ValueError as err:  # an integer of more than 4,300 digits
        raise GpuplanError(f"{path} is not YAML gpuplan can read ({str(err).split(';')[0]})") from None
    finally:
        loader.dispose()


def _at(mark: Any) -> str:
    return f" at line {mark.line + 1}" if mark is not None else ""
