"""The power one's own cards draw and what it costs, for a plan priced on them: a card's draw under load as one rule
(:func:`busy_draw`: its TDP or power limit, else the whole computer's measured draw) and the price of a kWh where it
runs, both read from ``data/owning.yaml`` (each region's residential and commercial price with its url and the words
that hold it; the computers' measured draw), so that a plan priced on one's own cards
(:func:`gpuplan.market.offers.owned_offer`) and ``gpuplan buy`` (:mod:`gpuplan.owning.power`) take one draw and one
price of a kWh."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from typing import Any

from ..datafiles import read_yaml

HOME_PUE = 1.0  # a card at home or in an office: no cooling plant on top (buy's default; --pue 1.4 for a rack)


@cache
def owning_yaml() -> dict[str, Any]:
    """data/owning.yaml, read once for the market (electricity, the computers' draw) and for ``gpuplan buy``
    (:func:`gpuplan.owning.facts.owning_facts`), by the package's one reader of its data files
    (:func:`gpuplan.datafiles.read_yaml`: YAML is loaded only when one's own cards are priced)."""
    return read_yaml("owning.yaml")


def electricity_facts() -> dict[str, Any]:
    """The ``electricity`` section of data/owning.yaml: the default region, each region's prices and sources."""
    return owning_yaml()["electricity"]


def home_kwh() -> tuple[float, str]:
    """The default region's residential price of a kWh, USD, and its words (``us residential 2023``): what
    ``gpuplan buy`` prices power at when no region or price is given."""
    facts = electricity_facts()
    name = facts["default_region"]
    region = facts["regions"][name]
    return float(region["residential"]), f"{name} residential {region['year']}"


@dataclass(frozen=True)
class ComputerDraw:
    """A whole computer's draw at the wall as its maker measured it (W, at work and at rest), and where it is
    published (the address and the words there)."""

    busy_w: float
    idle_w: float
    url: str
    where: str


def computer_draw(gpu_id: str) -> ComputerDraw | None:
    """A whole computer's published draw (data/owning.yaml ``computers``: Apple's figures for the Mac Studio and the
    Mac mini, power supply and system losses included, each row on its page); None if not on file."""
    facts = owning_yaml().get("computers", {})
    row = facts.get("watts", {}).get(gpu_id)
    if row is None:
        return None
    page = facts["pages"][row["page"]]
    return ComputerDraw(float(row["busy_w"]), float(row["idle_w"]), page["url"], f"{page['title']}: {row['where']}")


def busy_draw(gpu) -> tuple[float, str] | None:
    """What one card draws while a job runs, W, and whence: the one rule a plan on one's own cards and ``gpuplan
    buy`` both read. The card's power limit or TDP (:attr:`~gpuplan.hardware.GpuSpec.busy_w`, gpus.yaml); for a
    chip with no TDP (Apple silicon), the whole computer's draw at work as its maker measured it at the wall
    (:func:`computer_draw`); None when neither is on file (``buy`` then asks for ``--host-w``, and a plan is not
    priced by power)."""
    if gpu.busy_w:
        return float(gpu.busy_w), "its power limit" if gpu.power_limit_w else "its TDP"
    published = computer_draw(gpu.id)
    if published is None:
        return None
    return published.busy_w, "the computer's measured draw at work"


def owned_usd_per_gpu_hour(gpu) -> float | None:
    """An hour of one's own card: its draw under load (:func:`busy_draw`) x :data:`HOME_PUE` x :func:`home_kwh`, as
    ``buy`` prices a busy hour of a card; None when no draw is on file."""
    draw = busy_draw(gpu)
    return None if draw is None else draw[0] / 1000 * HOME_PUE * home_kwh()[0]
