"""What a job costs: hours x GPUs x price, spot interruptions with checkpointing, serving price per token,
and buying vs renting with power included.

Spot: work ``T_s`` is interrupted on average every ``M`` hours; each checkpoint takes ``d`` to write and a
restart ``R``. Young (1974) gives the checkpoint interval ``tau = sqrt(2·d·M)``; Daly (2006, "A higher order
estimate of the optimum checkpoint interval", eqs. 20 and 37) the better
``tau = sqrt(2·d·M)·(1 + sqrt(d/(2M))/3 + (d/(2M))/9) - d`` for ``d < 2M`` (else ``tau = M``) and the expected
wall time ``T_w = M·exp(R/M)·(exp((tau + d)/M) - 1)·T_s/tau``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from .. import overheads as oh
from ..model.spec import ModelSpec
from ..scenario import Scenario
from ..speed import Speed
from .offers import Offer, interruption_priors


def young_interval_h(write_h: float, mtbi_h: float) -> float:
    return math.sqrt(2 * write_h * mtbi_h)


def daly_interval_h(write_h: float, mtbi_h: float) -> float:
    """Daly's optimum checkpoint interval (hours of work between checkpoints)."""
    if write_h >= 2 * mtbi_h:
        return mtbi_h
    x = write_h / (2 * mtbi_h)
    return math.sqrt(2 * write_h * mtbi_h) * (1 + math.sqrt(x) / 3 + x / 9) - write_h


def daly_wall_time_h(work_h: float, interval_h: float, write_h: float, restart_h: float, mtbi_h: float) -> float:
    """Expected wall-clock hours to finish ``work_h`` of work with checkpoints every ``interval_h``; infinite
    when checkpoints and restarts take so much longer than the time between interruptions that the job never
    finishes (the exponent beyond what a float holds)."""
    exponent = restart_h / mtbi_h + (interval_h + write_h) / mtbi_h
    if exponent > 700:
        return math.inf
    return mtbi_h * math.exp(restart_h / mtbi_h) * math.expm1((interval_h + write_h) / mtbi_h) * work_h / interval_h


def default_mtbi_h(num_gpus: int) -> float:
    """Mean hours between interruptions from providers.yaml priors (1-GPU vs 8-GPU spot traces)."""
    priors = {p["scope"]: p["mean_hours_between_interruptions"] for p in interruption_priors()}
    return priors["spot, 1 GPU"] if num_gpus < 8 else priors["spot, 8 GPUs"]


def checkpoint_bytes(s: Scenario, m: ModelSpec, trainable: int) -> float:
    """What a resumable checkpoint holds: weights and optimizer state (full: bf16 weights + fp32 master and
    two fp32 moments = 14 B/param with AdamW; LoRA: the adapters and their states)."""
    if s.method == "full":
        states = {"adamw": 8, "adamw-8bit": 2, "paged-adamw-8bit": 2, "sgd": 0}.get(s.optimizer, 4)
        return m.params_total * (2 + (4 if s.precision.endswith("mixed") else 0) + states)
    return trainable * (4 + 8)


@dataclass(kw_only=True)
class SpotPlan:
    mtbi_h: float
    write_h: float
    restart_h: float
    interval_h: float
    young_interval_h: float
    wall_h: float
    overhead: float  # wall / work


def spot_plan(work_h: float, ckpt_bytes: float, num_gpus: int, *, mtbi_h: float | None = None,
              disk_gbs: float = oh.CHECKPOINT_WRITE_GBS, restart_min: float = oh.RESTART_MINUTES) -> SpotPlan:
    mtbi = mtbi_h or default_mtbi_h(num_gpus)
    write = ckpt_bytes / (disk_gbs * 1e9) / 3600
    restart = restart_min / 60
    tau = daly_interval_h(write, mtbi)
    wall = daly_wall_time_h(work_h, tau, write, restart, mtbi) if work_h > 0 else 0.0
    return SpotPlan(mtbi_h=mtbi, write_h=write, restart_h=restart, interval_h=tau,
                    young_interval_h=young_interval_h(write, mtbi), wall_h=wall,
                    overhead=wall / work_h if work_h else 1.0)


@dataclass(kw_only=True)
class Cost:
    offer: str
    provider: str
    gpu_id: str
    pricing: str
    num_gpus: int
    instances: int
    usd_per_hour: float
    hours: float
    usd_total: float
    usd_per_million_tokens: float | None = None
    spot: SpotPlan | None = None
    spot_multiplier: float | None = None
    price_origin: str = ""
    price_age_days: int = 0
    stale: bool = False
    notes: list[str] = field(default_factory=list)


def price_job(s: Scenario, m: ModelSpec, speed: Speed, offer: Offer, trainable: int, *, today=None,
              mtbi_h: float | None = None, disk_gbs: float = oh.CHECKPOINT_WRITE_GBS,
              on_demand_price: float | None = None) -> Cost:
    """Price the scenario on ``offer``: GPUs rented in whole instances of ``offer.gpu_count``."""
    gpus_needed = s.world_size if s.task == "train" else s.tp * s.pp
    instances = math.ceil(gpus_needed / offer.gpu_count)
    rented = instances * offer.gpu_count
    per_hour = rented * offer.usd_per_gpu_hour
    cost = Cost(offer=offer.label, provider=offer.provider, gpu_id=offer.gpu_id, pricing=offer.pricing,
                num_gpus=rented, instances=instances, usd_per_hour=per_hour, hours=0.0, usd_total=0.0,
                price_origin=offer.origin, price_age_days=offer.age_days(today), stale=offer.stale(today))
    if s.task == "infer":
        cost.usd_per_million_tokens = per_hour / (speed.tokens_per_s * 3600) * 1e6
        cost.hours = 1.0
        cost.usd_total = per_hour
        return cost
    tokens = s.train_tokens or 0.0
    work_h = tokens / speed.tokens_per_s / 3600 if tokens else 0.0
    cost.hours = work_h
    if offer.interruptible:
        plan = spot_plan(work_h, checkpoint_bytes(s, m, trainable), rented, mtbi_h=mtbi_h, disk_gbs=disk_gbs)
        cost.spot, cost.hours = plan, plan.wall_h
        if on_demand_price:
            cost.spot_multiplier = plan.overhead * offer.usd_per_gpu_hour / on_demand_price
    cost.usd_total = cost.hours * per_hour
    overhead = cost.spot.overhead if cost.spot else 1.0
    cost.usd_per_million_tokens = per_hour * overhead / (speed.tokens_per_s * 3600) * 1e6
    if not tokens:
        cost.notes.append("set train_tokens for job hours and total cost")
    return cost


@dataclass(kw_only=True)
class BuyVsRent:
    purchase_usd: float
    power_usd_per_hour: float
    rent_usd_per_hour: float
    break_even_hours: float | None
    horizon_hours: float
    buy_total_usd: float
    rent_total_usd: float


def buy_vs_rent(msrp_usd: float, tdp_w: float, num_gpus: int, rent_usd_per_hour: float, horizon_hours: float, *,
                usd_per_kwh: float = oh.POWER_USD_PER_KWH, pue: float = oh.PUE,
                utilization: float = oh.UTILIZATION) -> BuyVsRent:
    """Owning = MSRP + power (TDP x utilization x PUE x $/kWh) for the hours used; renting = the hours at the
    cheapest rental. Break-even: the hours at which both cost the same (none if power costs more than rent)."""
    purchase = msrp_usd * num_gpus
    power = num_gpus * tdp_w / 1000 * utilization * pue * usd_per_kwh
    margin = rent_usd_per_hour - power
    return BuyVsRent(purchase_usd=purchase, power_usd_per_hour=power, rent_usd_per_hour=rent_usd_per_hour,
                     break_even_hours=purchase / margin if margin > 0 else None, horizon_hours=horizon_hours,
                     buy_total_usd=purchase + power * horizon_hours, rent_total_usd=rent_usd_per_hour * horizon_hours)
