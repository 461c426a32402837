"""``buy``: owning cards against renting them, as an answer (the break-even hours)."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from pydantic import Field

from ..errors import GpuplanError
from ..result import Answer
from . import arguments as arg


class BuyReport(Answer):
    """``buy``'s answer: what owning costs (the cards, the host, power per hour) against the cheapest current
    on-demand rental of the same cards, and the break-even hours, as ``gpuplan buy --json`` prints it. The words
    the table needs (the card's name and power, the rental's price, age and confidence) are kept beside, not in
    the JSON."""

    purchase_usd: float
    power_usd_per_hour: float
    rent_usd_per_hour: float
    break_even_hours: float | None
    horizon_hours: float
    buy_total_usd: float
    rent_total_usd: float
    rental: str
    gpu_id: str
    num_gpus: int
    card_usd: float
    rental_observed_at: str
    notes: list[str] = Field(default_factory=list)
    said: dict[str, Any] = Field(default_factory=dict, exclude=True)


def _within(name: str, value: float, low: float, high: float) -> float:
    if not (isinstance(value, (int, float)) and value == value and low <= value <= high):
        raise GpuplanError(f"--{name.replace('_', '-')} must be between {low:g} and {high:g}, got {value}")
    return value


def buy(gpu: str, *, count: int | None = None, price: float | None = None, host_usd: float = 0.0,
        host_w: float = 0.0, hours: float = 5000.0, usd_per_kwh: float = 0.15, pue: float = 1.0,
        utilization: float = 0.8) -> BuyReport:
    """Buy or rent: what you pay for the cards (``price`` per card, new or used; launch MSRP otherwise) and the
    host, plus power (TDP x utilization x PUE x $/kWh) over the ``hours`` you will use them, against the cheapest
    current on-demand rental of the same cards; the break-even hours: ``gpuplan buy``. ``gpu``: ``2x4090`` or a
    name (one card, or ``count``)."""
    from ..hardware import load_gpu
    from ..market.cost import buy_vs_rent
    from ..plan.gpus import cheapest_rentals
    from ..plan.recommend import parse_have

    gpu_id, parsed = parse_have(arg.text(gpu, "gpu"))
    card = load_gpu(gpu_id)
    if count is not None and not (isinstance(count, int) and not isinstance(count, bool) and 1 <= count <= 1024):
        raise GpuplanError(f"--count must be between 1 and 1,024, got {count}")
    n = count or parsed
    for name, value, low, high in (("hours", hours, 1, 1e6), ("usd_per_kwh", usd_per_kwh, 0, 10), ("pue", pue, 1, 3),
                                   ("utilization", utilization, 0.01, 1), ("host_usd", host_usd, 0, 1e7),
                                   ("host_w", host_w, 0, 1e5)):
        _within(name, value, low, high)
    if price is not None:
        _within("price", price, 1, 1e7)
    per_card = price if price is not None else card.msrp_usd
    if not per_card or not card.tdp_w:
        raise GpuplanError(f"{card.name} has no public launch price in the catalog: give what you would pay with "
                           "--price USD (per card)")
    rentals = cheapest_rentals()
    if card.id not in rentals:
        from ..hardware import short_id

        raise GpuplanError(f"no recent on-demand rental of {card.name} in force to compare with (`gpuplan prices "
                           f"--gpu {short_id(card.id)}`; `gpuplan prices update`)")
    cheapest = rentals[card.id]
    b = buy_vs_rent(per_card, card.tdp_w, n, cheapest.usd_per_gpu_hour * n, hours, usd_per_kwh=usd_per_kwh, pue=pue,
                    utilization=utilization, host_usd=host_usd, host_w=host_w)
    notes = [] if price is not None else [f"priced at launch MSRP ${per_card:,.0f}; pass --price for today's "
                                          "new or used price"]
    if pue == 1.0:
        notes.append("PUE 1.0: a PC at home has no cooling plant; pass --pue 1.4 for a rack in a data centre")
    said = {"card_name": card.name, "tdp_w": card.tdp_w, "provider": cheapest.provider,
            "rent_usd_per_gpu_hour": cheapest.usd_per_gpu_hour, "age_days": cheapest.age_days(),
            "confidence": cheapest.confidence, "host_usd": host_usd, "host_w": host_w, "utilization": utilization,
            "pue": pue, "usd_per_kwh": usd_per_kwh, "hours": hours}
    return BuyReport(**asdict(b), rental=f"{cheapest.provider} {cheapest.gpu_count}x on_demand", gpu_id=card.id,
                     num_gpus=n, card_usd=per_card, rental_observed_at=str(cheapest.observed_at), notes=notes,
                     said=said)
