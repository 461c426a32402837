"""The price of a kWh where one's own cards run: the electricity figures of ``data/owning.yaml`` (each region's
residential and commercial price with its url and the words that hold it), read here so that a plan priced on one's
own cards (:func:`gpuplan.market.offers.owned_offer`) and ``gpuplan buy`` (:mod:`gpuplan.owning.power`) take one
price of a kWh, and a card's draw under load as one rule (:attr:`gpuplan.hardware.GpuSpec.busy_w`)."""

from __future__ import annotations

from functools import cache
from importlib import resources
from typing import Any

HOME_PUE = 1.0  # a card at home or in an office: no cooling plant on top (buy's default; --pue 1.4 for a rack)
NO_TDP_W = 300.0  # a card with no TDP on file (Apple silicon in a plan: buy takes the Mac's measured draw)


@cache
def electricity_facts() -> dict[str, Any]:
    """The ``electricity`` section of data/owning.yaml: the default region, each region's prices and sources."""
    import yaml  # read only when one's own cards are priced (a plan on rented cards loads no YAML)

    path = resources.files("gpuplan") / "data" / "owning.yaml"
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    return yaml.load(path.read_text(encoding="utf-8"), Loader=loader)["electricity"]


def home_kwh() -> tuple[float, str]:
    """The default region's residential price of a kWh, USD, and its words (``us residential 2023``): what
    ``gpuplan buy`` prices power at when no region or price is given."""
    facts = electricity_facts()
    name = facts["default_region"]
    region = facts["regions"][name]
    return float(region["residential"]), f"{name} residential {region['year']}"


def owned_usd_per_gpu_hour(gpu) -> float:
    """An hour of one's own card: its draw under load (:attr:`~gpuplan.hardware.GpuSpec.busy_w`, else
    :data:`NO_TDP_W`) x :data:`HOME_PUE` x :func:`home_kwh`, as ``buy`` prices a busy hour of a card."""
    return (gpu.busy_w or NO_TDP_W) / 1000 * HOME_PUE * home_kwh()[0]
