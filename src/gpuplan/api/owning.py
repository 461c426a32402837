"""``buy``: owning a build against renting any card, or the builds a budget buys (issue 33), as an answer:
:class:`~gpuplan.owning.compare.BuyReport`. The arguments are checked here, each of its kind; the pricing is
:mod:`gpuplan.owning`'s."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from ..errors import GpuplanError, echo_value
from ..hardware import resolve_gpu, short_id
from ..owning.compare import BuyReport
from ..userfiles import number
from . import arguments as arg
from .arguments import names_of
from .searches import gpu_ids


def _rent_options(rent: Any) -> list[tuple[Any, int]]:
    from ..owning.builds import parse_build

    return [parse_build(r) for r in names_of(rent, "rent") if r.strip()]


def _owned(have: Any, gpu: Any, count: int) -> int:
    """How many of the build's ``count`` cards of ``gpu`` are owned already: ``have`` in ``recommend --have``'s
    spelling (``2x3090``, or ``(gpu id, count)``), read as it reads them (:func:`.arguments.owned_cards`); another
    card or more than the build holds is one sentence."""
    if have is None:
        return 0
    gpu_id, n = arg.owned_cards(have)
    if gpu_id != gpu.id:
        raise GpuplanError(f"--have {short_id(gpu_id)} is not the build's card ({short_id(gpu.id)}): a build is of "
                           "one card, so price the cards you own in a build of their own kind")
    if n > count:
        raise GpuplanError(f"--have {n}x {short_id(gpu_id)} is more than the build's {count}: the build counts every "
                           "card it runs on, the owned ones too")
    return n


def _build_price(price: float | None, prices: dict[str, float], gpu: Any) -> float | None:
    """What the named build's cards cost: ``price`` (``--price 3000``) or a ``prices`` entry naming the build's card
    (``--price 3090=700``). An entry for another card would price nothing and two different prices contradict each
    other: one sentence each, not a street price used in their place (session 18's fuzzing)."""
    chosen = price
    for name, usd in prices.items():
        card = resolve_gpu(name)[0]
        if card.id != gpu.id:
            raise GpuplanError(f"--price {name}={usd:g} is for {short_id(card.id)}, a card the build of "
                               f"{short_id(gpu.id)} does not hold: give --price USD, or {short_id(gpu.id)}=USD")
        if chosen is not None and chosen != usd:
            raise GpuplanError(f"two prices for the build's {short_id(gpu.id)} ({chosen:g} and {usd:g} USD): give one")
        chosen = usd
    return chosen


def _bounded(value: Any, what: str, low: float, high: float) -> None:
    if value is not None:
        number(value, what, least=low, most=high, whole=what == "--top")


def _buy_kinds(build: Any, host: Any, region: Any, sector: Any, display: Any, prices: Any, flags: dict[str, Any],
               amounts: dict[str, Any]) -> dict[str, float]:
    """buy's arguments, each of its kind (or one sentence); ``prices`` as ``{card: USD}``."""
    arg.text(build, "build", optional=True)
    arg.text(host, "host", optional=True)
    arg.text(region, "region", optional=True)
    arg.text(sector, "sector", choices=("residential", "commercial"))
    arg.text(display, "display", choices=("none", "linux", "windows"))
    for name, value in flags.items():
        arg.flag(value, name)
    for name, value in amounts.items():
        arg.amount(value, name, optional=True)
    if prices is None:
        return {}
    if not isinstance(prices, Mapping):
        raise GpuplanError(f"prices takes a dict of card: USD (e.g. {{'rtx-5090': 2500}}), not {echo_value(prices)}")
    return {arg.text(k, "prices' card names"): number(v, f"price of {k}", least=1, most=1e8)
            for k, v in prices.items()}


def buy(build: str | None = None, *, workloads: str | Path | Mapping[str, Any] | list | None = None,
        rent: Iterable[str] | str = (), budget_usd: float | None = None, years: float | None = None,
        gpus: Iterable[str] = (), price: float | None = None, prices: Mapping[str, float] | None = None,
        used: bool = False, host: str | None = None, host_usd: float | None = None,
        host_ram_gib: float | None = None, host_w: float | None = None, host_idle_w: float | None = None,
        display: str = "none", region: str | None = None, sector: str = "residential",
        usd_per_kwh: float | None = None, pue: float = 1.0, off_when_idle: bool = False,
        maintenance_usd_per_year: float = 0.0, space_usd_per_month: float = 0.0, hours: float | None = None,
        utilization: float | None = None, top: int = 10, have: str | tuple[str, int] | None = None) -> BuyReport:
    """Buy or rent: ``gpuplan buy``. With ``build`` (``"8x5090"``), the total cost of owning it over ``years``
    for the ``workloads`` (a YAML file, a dict or a list of jobs: :mod:`gpuplan.owning.workloads`) against renting
    them on ``rent`` (``["8xh100-sxm"]``; the same cards by default), with break-even months and utilization and the
    build's checks; without workloads, ``hours`` of use (or ``utilization``, the share of the horizon's hours) against
    renting the same cards. With ``budget_usd`` and ``workloads``, the builds the budget buys, ranked. ``display``
    (``linux`` or ``windows``): a card also drives that desktop, counted on the card by each job's Plan.

    ``have`` (``"2x3090"``, or ``(gpu id, count)``, as ``recommend`` takes it): of the build's cards, those owned
    already. A sunk cost is not a cost of the decision (what was paid for them is the same whatever is decided now),
    so their price is left out, and so is the host's when the owned cards' host holds the build; their loss of value
    over the horizon is an opportunity cost that buying more and keeping them share alike, so it is left out of both
    and said beside renting everything (selling them now saves it). The answer weighs (a) buying the added cards
    (their price less their resale, the power of all the cards), (b) keeping the owned cards and renting the jobs they
    cannot run and the hours beyond their capacity, (c) renting it all (docs/owning.md, "Cards you own")."""
    from ..owning.advisor import advise
    from ..owning.answer import Terms, buy_report, hours_report
    from ..owning.builds import make_build, parse_build
    from ..owning.power import HOURS_PER_YEAR, electricity_price
    from ..owning.workloads import load_workloads

    gpus = names_of(gpus, "gpus")
    prices = _buy_kinds(build, host, region, sector, display, prices, {"used": used, "off_when_idle": off_when_idle},
                        {"host_usd": host_usd, "host_ram_gib": host_ram_gib, "host_w": host_w,
                         "host_idle_w": host_idle_w, "usd_per_kwh": usd_per_kwh})
    for value, what, low, high in ((price, "--price", 1, 1e8), (budget_usd, "--budget", 1, 1e9), (pue, "--pue", 1, 3),
                                   (years, "--years", .01, 10), (maintenance_usd_per_year, "--maintenance-usd", 0, 1e7),
                                   (space_usd_per_month, "--space-usd-per-month", 0, 1e6), (hours, "--hours", 1, 1e6),
                                   (utilization, "--utilization", 1e-4, 1), (top, "--top", 1, 100)):
        _bounded(value, what, low, high)
    if (build is None) == (budget_usd is None):
        raise GpuplanError("name a build to price (8x5090) or give a budget to search (--budget 15000), one of them")
    if have is not None and build is None:
        raise GpuplanError("--have counts cards of a named build: name the build they go in (buy 3x3090 --have "
                           "2x3090)")
    w = load_workloads(workloads, years) if workloads is not None else None
    horizon = w.years if w else (years or 1.0)
    terms = Terms(years=horizon, electricity=electricity_price(region, sector, usd_per_kwh), pue=pue,
                  off_when_idle=off_when_idle, maintenance_usd_per_year=maintenance_usd_per_year,
                  space_usd_per_month=space_usd_per_month)
    if budget_usd is not None:
        if w is None:
            raise GpuplanError("a budget search needs the work: --workloads FILE (jobs and how often they run)")
        if price is not None:  # a bare USD names no card of the search: it would price nothing
            raise GpuplanError(f"--price {price:g} names no card, and a search prices several: say which card it "
                               "is for (--price 5090=3000)")
        price_map = {resolve_gpu(k)[0].id: v for k, v in prices.items()}
        return advise(w, budget_usd, terms, cards=gpu_ids(gpus, []), prices=price_map, used=used,
                      host_usd=host_usd, host_ram_gib=host_ram_gib, display=display, top=top)
    if gpus:  # s19's fuzz: `buy 2x3090 --gpus h100` priced the 3090s without a word, and --gpus -inf too
        raise GpuplanError(f"--gpus narrows a budget search, and the build {build} names its cards: drop --gpus, or "
                           "search with --budget instead of the build")
    gpu, count = parse_build(build)
    owned = _owned(have, gpu, count)
    price = _build_price(price, prices, gpu)
    b = make_build(gpu, count, price=price, used=used, host=host, host_usd=host_usd, host_ram_gib=host_ram_gib,
                   host_w=host_w, host_idle_w=host_idle_w, display=display, owned=owned)
    if w is not None:
        if hours is not None or utilization is not None:
            raise GpuplanError("the workloads say how busy the build is: drop --hours / --utilization")
        same = b.whole_computer or b.host_owned  # the owned cards' host is the build's
        kept = make_build(gpu, owned, price=price, used=used, owned=owned, display=display,
                          **({"host_ram_gib": host_ram_gib, "host_w": host_w, "host_idle_w": host_idle_w}
                             if same else {})) if owned else None
        return buy_report(b, w, _rent_options(rent), terms, kept)
    if _rent_options(rent):
        raise GpuplanError("renting other cards needs the work they would do: --workloads FILE")
    if hours is None and utilization is None:
        raise GpuplanError("say what the cards will do: --workloads FILE, or --hours of use (or --utilization, the "
                           "share of hours busy) over --years")
    busy = hours if hours is not None else utilization * horizon * HOURS_PER_YEAR
    return hours_report(b, busy, terms)
