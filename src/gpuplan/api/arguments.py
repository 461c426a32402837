"""The Python API's keyword arguments, checked at the door: each is of its kind (a number in range, a flag, text,
names, a path) or the call raises :class:`~gpuplan.errors.GpuplanError` with one sentence naming the argument.

Scenario fields are checked by the scenario itself (:class:`~gpuplan.scenario.Scenario`); these are the other
arguments of :func:`~gpuplan.api.recommend`, :func:`~gpuplan.api.cost`, :func:`~gpuplan.api.capacity`,
:func:`~gpuplan.api.fit` and :func:`~gpuplan.api.launch`. Numbers use the same check as the files a user gives
(:func:`gpuplan.userfiles.number`): None, NaN, text, bytes or a list where a number goes is one sentence, not a
``TypeError`` three calls down.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Union

from ..errors import GpuplanError, echo_value
from ..userfiles import number

if TYPE_CHECKING:
    from ..scenario import Scenario


def count(value: Any, what: str, *, least: int = 1, most: int, optional: bool = False) -> int | None:
    """A whole number in ``[least, most]`` (None allowed where ``optional``)."""
    if value is None and optional:
        return None
    return int(number(value, what, least=least, most=most, whole=True))


def amount(value: Any, what: str, *, least: float = 0.0, most: float = math.inf, above: bool = False,
           optional: bool = False) -> float | None:
    """A finite number in range (None allowed where ``optional``)."""
    if value is None and optional:
        return None
    return number(value, what, least=least, most=most, above=above)


def flag(value: Any, what: str) -> bool:
    """True or False, nothing else (not 0, not "yes")."""
    if not isinstance(value, bool):
        raise GpuplanError(f"{what} takes True or False, not {echo_value(value)}")
    return value


def text(value: Any, what: str, *, optional: bool = False, choices: tuple[str, ...] = ()) -> str | None:
    """A string (one of ``choices`` when given)."""
    if value is None and optional:
        return None
    if not isinstance(value, str):
        raise GpuplanError(f"{what} takes text, not {echo_value(value)}")
    if choices and value not in choices:
        raise GpuplanError(f"{what} takes {', '.join(choices[:-1])} or {choices[-1]}, not {echo_value(value)}")
    return value


def path(value: Any, what: str, *, optional: bool = False) -> str | None:
    """A file or folder name: text or a path object, not empty."""
    if value is None and optional:
        return None
    if isinstance(value, os.PathLike):
        value = os.fspath(value)
    if not isinstance(value, str) or not value.strip():
        raise GpuplanError(f"{what} takes a file or folder name (text or a Path), not {echo_value(value)}")
    return value


def names_of(value: Any, what: str, *, pairs: bool = False) -> list[Any]:
    """A list argument as a list: one string is its comma-separated names (as the command line takes them, not its
    characters); each item a string (or, with ``pairs``, a ``(name, count)`` pair: ``("rtx-3090", 2)``). Names
    are stripped and blank ones dropped; a value given that names nothing (``","``, ``" "``, ``["", ""]``) is
    refused, where it read as no value: ``--gpus ,,`` searched every GPU."""
    if isinstance(value, str):
        names = [n.strip() for n in value.split(",") if n.strip()]
        if value and not names:
            raise GpuplanError(f"{what} names nothing ({value!r}): give names separated by commas, or leave it out")
        return names
    if isinstance(value, (bytes, Mapping)) or not hasattr(value, "__iter__"):
        raise GpuplanError(f"{what} takes names: a list of strings or one comma-separated string, not "
                           f"{echo_value(value)}")
    items = [v.strip() if isinstance(v, str) else v for v in value]
    for item in items:
        if isinstance(item, str):
            continue
        if pairs and isinstance(item, tuple) and len(item) == 2 and isinstance(item[0], str):
            count(item[1], f"{what} count of {item[0]!r}", most=512)
            continue
        raise GpuplanError(f"{what} takes names (strings){' or (name, count) pairs' if pairs else ''}, not "
                           f"{echo_value(item)}")
    names = [i for i in items if i != ""]
    if items and not names:
        raise GpuplanError(f"{what} names nothing ({items!r}): give names, or leave it out")
    return names


def owned_cards(item: Any, what: str = "have") -> tuple[str, int]:
    """One entry of ``have``, the cards owned already, as ``recommend`` and ``buy`` both take it: ``"2x3090"`` (the
    command line's spelling, :func:`gpuplan.plan.recommend.parse_have`) or a ``(card, count)`` pair; (GPU id,
    count), else one sentence."""
    from ..hardware import resolve_gpu
    from ..plan.recommend import parse_have

    if isinstance(item, str):
        return parse_have(item)
    if isinstance(item, (tuple, list)) and len(item) == 2:
        return resolve_gpu(text(item[0], f"{what}'s card"))[0].id, count(item[1], f"{what}'s count", most=512)
    raise GpuplanError(f"{what} takes the cards you own as 2x3090 (or (card, count)), not {echo_value(item)}")


def haves_of(value: Any) -> list[Any]:
    """``have``, the cards owned: :func:`names_of` with ``(card, count)`` pairs, each string's comma-separated cards
    split too, as :func:`comma_names` splits targets (``--have 1x3090,1x4090`` was one card "1x3090,1x4090", an
    unknown GPU, where ``--have 1x3090 --have 1x4090`` was two)."""
    items = names_of(value, "have", pairs=True)
    cards = [n.strip() if isinstance(n, str) else n for item in items
             for n in (item.split(",") if isinstance(item, str) else [item]) if not isinstance(n, str) or n.strip()]
    if items and not cards:
        raise GpuplanError(f"have names nothing ({items!r}): give the cards you own as 2x3090, or leave it out")
    return cards


def comma_names(value: Any, what: str) -> list[str]:
    """:func:`names_of`, each item's comma-separated names split too (``["trainer,torchrun", "sky"]``); refused when
    given but naming nothing (``-t ,`` wrote every target)."""
    items = names_of(value, what)
    names = [n.strip() for text in items for n in str(text).split(",") if n.strip()]
    if items and not names:
        raise GpuplanError(f"{what} names nothing ({items!r}): give names, or leave it out")
    return names


def discounts_of(value: Any) -> dict[str, float]:
    """``{provider: price multiplier}``: each a number in (0, 1.5]."""
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise GpuplanError(f"discounts takes a dict of provider: price multiplier (e.g. {{'runpod': 0.85}}), not "
                           f"{echo_value(value)}")
    out = {}
    for provider, factor in value.items():
        text(provider, "discounts' provider names")
        out[provider] = number(factor, f"discount for {provider}", least=0, above=True, most=1.5)
    return out


def script_of(value: Any) -> tuple[str, ...] | None:
    """The training entry point: one command line (split as a shell would) or its words."""
    if value is None:
        return None
    if isinstance(value, str):
        import shlex  # a launch's entry point only: an estimate never splits one

        try:
            words = shlex.split(value)
        except ValueError as err:
            raise GpuplanError(f"script {echo_value(value)} is not one command line ({err})") from None
        return tuple(words) or None
    words = names_of(value, "script")
    return tuple(words) or None


def devices_of(value: Any) -> tuple[int, ...] | None:
    """CUDA device numbers (0 to 1,023), each once."""
    if value is None:
        return None
    if isinstance(value, (str, bytes, Mapping)) or not hasattr(value, "__iter__"):
        raise GpuplanError(f"visible_devices takes device numbers, e.g. (0, 1), not {echo_value(value)}")
    devices = tuple(int(number(d, "visible_devices", least=0, most=1023, whole=True)) for d in value)
    if len(set(devices)) != len(devices):
        raise GpuplanError(f"visible_devices names a device twice: {devices}")
    return devices


__all__ = ["amount", "count", "devices_of", "discounts_of", "flag", "names_of", "path", "script_of", "text"]


ScenarioLike = Union["Scenario", Mapping[str, Any], str, Path]


def scenario_of(scenario: ScenarioLike, overrides: Mapping[str, Any] | None = None) -> Scenario:
    """A scenario from an object, a dict of its fields or a YAML/JSON file, with ``overrides`` on top."""
    from ..scenario import Scenario, load_scenario, scenario_from, snake_keys

    if not isinstance(scenario, (Scenario, Mapping, str, Path)):
        raise GpuplanError(f"a scenario is a Scenario, a dict of its fields or the path of a YAML/JSON file, not "
                           f"{type(scenario).__name__}")
    if isinstance(scenario, (str, Path)):
        return load_scenario(scenario, dict(overrides or {}))
    if overrides:
        base = scenario.model_dump(exclude_unset=True) if isinstance(scenario, Scenario) else dict(scenario)
        return scenario_from({**snake_keys(base), **snake_keys(overrides)})  # batch-size given, batch_size wins
    return scenario_from(scenario if isinstance(scenario, Scenario) else dict(scenario))
