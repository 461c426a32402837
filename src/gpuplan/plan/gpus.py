"""The GPU catalog as rows to read: the card's cited facts next to its cheapest rental in force.

One row per card, as ``gpuplan gpus --json`` prints it and ``GET /api/gpus`` returns it.
"""

from __future__ import annotations

from typing import Any

from ..hardware import GpuSpec


def cheapest_rentals() -> dict[str, Any]:
    """The cheapest on-demand offer in force (recent, not low confidence) per GPU id."""
    from ..market.choice import cheapest_in_force
    from ..market.store import PriceFilter, load_offers

    best: dict[str, Any] = {}
    for o in cheapest_in_force(load_offers(), PriceFilter()):
        if o.pricing == "on_demand" and (o.gpu_id not in best or o.usd_per_gpu_hour < best[o.gpu_id].usd_per_gpu_hour):
            best[o.gpu_id] = o
    return best


def gpu_row(g: GpuSpec, rental=None) -> dict[str, Any]:
    """Dense TFLOPS, memory (marketed and usable), bandwidth, NVLink, power, launch price and the rental's
    price per hour and per TFLOP-hour."""
    bf16 = g.peak_tflops("bf16") or g.peak_tflops("fp16")
    rent = rental.usd_per_gpu_hour if rental else None
    return {"id": g.id, "name": g.name, "vendor": g.vendor, "architecture": g.architecture, "segment": g.segment,
            "memory_gib": g.memory_gib, "usable_gib": round(g.usable_gib, 2), "bandwidth_gbs": g.bandwidth_gbs,
            "bf16_tflops": bf16, "fp8_tflops": g.peak_tflops("fp8"), "fp4_tflops": g.peak_tflops("fp4"),
            "tf32_tflops": g.peak_tflops("tf32"), "fp32_tflops": g.peak_tflops("fp32"),
            "nvlink_gbs": g.nvlink_bandwidth_gbs, "tdp_w": g.tdp_w, "msrp_usd": g.msrp_usd,
            "usd_per_gb": round(g.msrp_usd / g.memory_gib, 1) if g.msrp_usd else None,
            "msrp_usd_per_tflop": round(g.msrp_usd / bf16, 1) if g.msrp_usd and bf16 else None,
            "rent_usd_per_hour": rent, "rent_offer": f"{rental.provider} {rental.gpu_count}x" if rental else None,
            "usd_per_tflop_hour": round(rent / bf16, 5) if rent and bf16 else None}
