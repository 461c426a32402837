"""The whole bill of a job on one offer: lines that add up to the total.

Lines (USD): the GPU-hours the job computes; re-done work and restarts on spot; GPUs rented but idle when the
GPU is sold only in a larger instance; the rounding to the provider's billing increment and minimum; block
storage for the checkpoint, the dataset and the result for as long as the job runs (GB-months at the provider's
disk price, 730 h a month); egress to download the result. The instance's vCPUs and RAM are named where the row
records them: their price is inside the instance price (SkyPilot and gpuhunt price whole instances).
Per-provider rates come from ``data/providers.yaml`` (``bill``) with sources; missing ones use the defaults of
:mod:`gpuplan.overheads` and the line says so.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from .. import overheads as oh


@dataclass(frozen=True, kw_only=True)
class BillLine:
    """One line of the bill: ``quantity`` ``unit`` at ``usd_per_unit`` makes ``usd``; ``note`` says where the rate
    came from when it is assumed."""

    item: str
    quantity: float
    unit: str
    usd_per_unit: float
    usd: float
    note: str = ""


def billed_hours(hours: float, increment_s: float, minimum_s: float) -> float:
    """Hours as billed: rounded up to the increment, and at least the minimum (EC2: per second, 60 s minimum)."""
    if hours <= 0:
        return 0.0
    seconds = math.ceil(hours * 3600 / increment_s - 1e-9) * increment_s
    return max(seconds, minimum_s) / 3600


def _rate(facts: dict[str, Any], key: str, default: float) -> tuple[float, str]:
    return (float(facts[key]), "") if key in facts else (default, "assumed: no rate recorded for this provider")


def bill_lines(*, per_gpu_hour: float, gpus_used: int, gpus_rented: int, work_h: float, wall_h: float,
               instance: str, vcpus: float | None, memory_gib: float | None, checkpoint_gb: float,
               dataset_gb: float, result_gb: float, facts: dict[str, Any], serving: bool = False) -> list[BillLine]:
    """The bill's lines; ``work_h`` is the computation, ``wall_h`` with spot interruptions (>= work)."""
    host = f"{instance}: {vcpus:g} vCPU, {memory_gib:g} GiB RAM included" if instance and vcpus and memory_gib \
        else (f"{instance}: host included" if instance else "")
    lines = [BillLine(item="GPU time" + (" (one hour of serving)" if serving else ""), quantity=gpus_used * work_h,
                      unit="GPU-hour", usd_per_unit=per_gpu_hour, usd=gpus_used * work_h * per_gpu_hour, note=host)]
    if wall_h > work_h:
        extra = (wall_h - work_h) * gpus_rented
        lines.append(BillLine(item="spot: re-done work, checkpoints and restarts", quantity=extra, unit="GPU-hour",
                              usd_per_unit=per_gpu_hour, usd=extra * per_gpu_hour))
    idle = (gpus_rented - gpus_used) * work_h
    if idle > 0:
        lines.append(BillLine(item=f"idle GPUs: sold only as {gpus_rented}-GPU instances", quantity=idle,
                              unit="GPU-hour", usd_per_unit=per_gpu_hour, usd=idle * per_gpu_hour))
    increment, note_i = _rate(facts, "increment_s", oh.BILLING_INCREMENT_S)
    minimum, _ = _rate(facts, "minimum_s", oh.BILLING_MINIMUM_S)
    rounding = (billed_hours(wall_h, increment, minimum) - wall_h) * gpus_rented
    if rounding > 1e-12 and not serving:
        lines.append(BillLine(item=f"billing rounds up to {increment:g} s (minimum {minimum:g} s)", quantity=rounding,
                              unit="GPU-hour", usd_per_unit=per_gpu_hour, usd=rounding * per_gpu_hour, note=note_i))
    storage_gb = checkpoint_gb + dataset_gb + result_gb
    if storage_gb > 0 and wall_h > 0:
        rate, note = _rate(facts, "storage_usd_per_gb_month", oh.STORAGE_USD_PER_GB_MONTH)
        months = wall_h / oh.HOURS_PER_MONTH
        lines.append(BillLine(item=f"storage: checkpoint {checkpoint_gb:,.1f} + dataset {dataset_gb:,.1f} + result "
                              f"{result_gb:,.1f} GB for {wall_h:,.1f} h", quantity=storage_gb * months,
                              unit="GB-month", usd_per_unit=rate, usd=storage_gb * months * rate, note=note))
    if result_gb > 0:
        rate, note = _rate(facts, "egress_usd_per_gb", oh.EGRESS_USD_PER_GB)
        lines.append(BillLine(item="egress: download the result", quantity=result_gb, unit="GB", usd_per_unit=rate,
                              usd=result_gb * rate, note=note))
    return lines
