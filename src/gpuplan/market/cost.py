"""What a job costs: hours x GPUs x price, spot interruptions with checkpointing, serving price per token (owning
cards is :mod:`gpuplan.owning`).

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
from ..hardware import short_id
from ..model.spec import ModelSpec
from ..scenario import Scenario
from ..sharding import master_partition
from ..speed import Speed
from ..stacks import STACKS
from ..tensors.state import optimizer_state_bytes
from .bill import BillLine, bill_lines
from .job import JobTime, job_time, save_interval_h
from .offers import Offer, interruption_priors, max_per_node, price_origin, providers


def young_interval_h(write_h: float, mtbi_h: float) -> float:
    return math.sqrt(2 * write_h * mtbi_h)


def daly_interval_h(write_h: float, mtbi_h: float) -> float:
    """Daly's optimum checkpoint interval (hours of work between checkpoints)."""
    if write_h >= 2 * mtbi_h:
        return mtbi_h
    x = write_h / (2 * mtbi_h)
    return math.sqrt(2 * write_h * mtbi_h) * (1 + math.sqrt(x) / 3 + x / 9) - write_h


def daly_wall_time_h(work_h: float, interval_h: float, write_h: float, restart_h: float, mtbi_h: float) -> float:
    """Expected wall-clock hours to finish ``work_h`` of work with checkpoints every ``interval_h``; ``inf`` when
    a checkpoint takes so long against the interruption rate that the job never finishes (exp overflow)."""
    exponent = (restart_h + interval_h + write_h) / mtbi_h
    if interval_h <= 0 or exponent > 700:
        return math.inf
    return mtbi_h * math.exp(restart_h / mtbi_h) * math.expm1((interval_h + write_h) / mtbi_h) * work_h / interval_h


def default_mtbi_h(num_gpus: int) -> float:
    """Mean hours between interruptions from providers.yaml priors (1-GPU vs 8-GPU spot traces)."""
    priors = {p["scope"]: p["mean_hours_between_interruptions"] for p in interruption_priors()}
    return priors["spot, 1 GPU"] if num_gpus < 8 else priors["spot, 8 GPUs"]


def spot_replicas(needed: float, mtbi_h: float, restart_s: float) -> tuple[int, float]:
    """Serving replicas on spot for ``needed`` replicas' worth of the target always up (the target's rate or users
    / what one replica serves: a fraction, not rounded up first), and one replica's availability: each replica is
    down for ``restart_s`` after each interruption, which come every ``mtbi_h`` hours on average, so it is up
    MTBI / (MTBI + restart) of the time (the steady state of an up/down renewal process) and the fleet holds
    ``ceil(needed / availability)`` to keep ``needed`` up on average. Rounding the need to whole replicas before
    dividing (session 18's rule) added a spare to every fleet under 1 / (1 - availability) replicas (~200), however
    much of the last replica the target left idle: 0.05 of one replica's rate ran two (s20 walk). The mean, not a
    guarantee: SkyPilot's SkyServe
    (docs serving/spot-policy: base_ondemand_fallback_replicas, dynamic_ondemand_fallback) keeps on-demand replicas
    for the capacity a spot market may not return, and co-interruptions in one zone take replicas together."""
    mtbi_s = mtbi_h * 3600
    availability = mtbi_s / (mtbi_s + restart_s)
    return math.ceil(needed / availability - 1e-9), availability


def checkpoint_bytes(s: Scenario, m: ModelSpec, trainable: int) -> float:
    """What a resumable checkpoint of a decoder's training holds: the trained parameters (every weight in a full
    fine-tune, the ``trainable`` adapters in LoRA) in the dtype the plan's memory holds them, and their optimizer
    states as the memory model counts them (:func:`gpuplan.tensors.state.optimizer_state_bytes`, the one figure both
    read), since a checkpoint saves what the optimizer holds: the HF Trainer's ``optimizer.pt``, torchtune's and
    torchtitan's optimizer state dicts are ``torch.save`` of ``optimizer.state_dict()``, whose tensors are the
    states themselves (AdamW's two moments; bitsandbytes' 8-bit AdamW its uint8 ``state1``/``state2`` and fp32
    ``absmax1``/``absmax2`` per 256-value block, ``bitsandbytes/optim/optimizer.py`` ``Optimizer8bit.init_state``;
    Adafactor's factored ``exp_avg_sq_row``/``exp_avg_sq_col``, transformers ``optimization.py`` ``Adafactor.step``).

    Full fine-tuning under ``-mixed`` precision keeps fp32 weights and fp32 states under torch autocast (the HF
    Trainer's DDP and FSDP, torchtitan's FSDP2: 4 + 8 = 12 B/param with AdamW), and a 16-bit working copy beside an
    fp32 master where the trainer keeps one (:func:`gpuplan.sharding.master_partition`: DeepSpeed ZeRO's bf16 model
    states and fp32 master partition; Megatron-Core's bf16 parameters and its optimizer's fp32 main parameters, for
    its adapters too: 2 + 4 + 8 = 14 B/param); under ``-true``, weights and states in the compute dtype (bf16 AdamW:
    2 + 4 = 6 B/param). LoRA: the adapters in ``adapter_dtype`` and their states (fp32 AdamW: 4 + 8 B/param)."""
    mixed = s.precision.endswith("mixed")
    if s.method == "full":
        saved, width = m.params_total, 4 if (mixed or s.precision == "fp32") else 2
    else:
        saved, width = trainable, s.adapter_bytes
    if mixed and master_partition(s):  # a 16-bit copy beside the fp32 master, whose states are fp32
        return saved * (2 + 4) + optimizer_state_bytes(s, m, saved, 4)
    return saved * width + optimizer_state_bytes(s, m, saved, width) + merged_model_bytes(s, m, saved * width)


def merged_model_bytes(s: Scenario, m: ModelSpec, adapter_bytes: float) -> float:
    """What torchtune's LoRA recipes save beside the adapters and the optimizer at every checkpoint: the model with
    the adapters merged in, and the adapters a second time (its profile's
    :attr:`~gpuplan.stacks.base.Stack.saves_merged_model`; 0 for the other stacks, whose LoRA checkpoints hold the
    adapters alone). With ``save_adapter_weights_only: False``, the recipes' default and what gpuplan's torchtune
    config writes, ``CheckpointClient._save_checkpoint_sync`` merges the adapters into the full state dict
    (``get_merged_lora_ckpt``) and ``FullModelHFCheckpointer.save_checkpoint`` writes it as the model's safetensors
    shards in the model's dtype, then the adapters as ``adapter_model.pt`` (torchtune's keys) and
    ``adapter_model.safetensors`` (peft's), and the optimizer in ``recipe_state.pt`` (pytorch/torchtune
    torchtune/training/checkpointing/_checkpoint_client.py and _checkpointer.py, April 2026)."""
    stack = STACKS.get(s.stack)  # a diffusion trainer has no profile: its checkpoints hold the adapters
    if stack is None or not stack.saves_merged_model or s.method == "full" or s.task != "train":
        return 0.0
    return m.params_total * s.compute_bytes + adapter_bytes


@dataclass(kw_only=True)
class SpotPlan:
    """A job on interruptible GPUs (hours): mean time between interruptions, one checkpoint's write, one restart,
    the checkpoint interval (Daly's, and Young's beside it), the wall time with re-done work and restarts, and
    its ratio to the work."""

    mtbi_h: float
    write_h: float
    restart_h: float
    interval_h: float
    young_interval_h: float
    wall_h: float
    overhead: float  # wall / work


def spot_plan(work_h: float, ckpt_bytes: float, num_gpus: int, *, mtbi_h: float | None = None,
              disk_gbs: float = oh.CHECKPOINT_WRITE_GBS, restart_min: float = oh.RESTART_MINUTES,
              interval_h: float | None = None) -> SpotPlan:
    """``work_h`` of work on spot: checkpoints every ``interval_h`` hours of work (the scenario's save_interval,
    :func:`.job.save_interval_h`), else at Daly's optimum; Daly's wall time counts each checkpoint's write, the
    work re-done after an interruption and the restarts, so ``work_h`` holds no checkpoint saves of its own."""
    mtbi = mtbi_h or default_mtbi_h(num_gpus)
    write = ckpt_bytes / (disk_gbs * 1e9) / 3600
    restart = restart_min / 60
    tau = interval_h or daly_interval_h(write, mtbi)
    wall = daly_wall_time_h(work_h, tau, write, restart, mtbi) if work_h > 0 else 0.0
    return SpotPlan(mtbi_h=mtbi, write_h=write, restart_h=restart, interval_h=tau,
                    young_interval_h=young_interval_h(write, mtbi), wall_h=wall,
                    overhead=wall / work_h if work_h else 1.0)


def spot_dearer(what: str, spot: tuple[float, str], on_demand: tuple[float, str], *, per: str, counted: str,
                instead: str) -> str:
    """The one verdict that spot is dearer than on demand, and its one sentence: ``spot`` and ``on_demand`` are
    (price, where) in the same unit ``per``; "" when spot is not dearer (an equal price keeps spot). A spot run is
    the on-demand run with interruptions, so a dearer spot is never the better rental. Said by estimate's price
    warning (:func:`gpuplan.plan.build.price_warnings`, per GPU-hour the job uses), capacity's note on a spot
    fleet (:mod:`gpuplan.plan.capacity`, per hour of the target's replicas) and buy's rentals
    (:mod:`gpuplan.owning.answer`, a year's rent), each with what its price ``counted`` and what to do
    ``instead`` (no parentheses when ``counted`` is "")."""
    (usd, where), (od_usd, od_where) = spot, on_demand
    if od_usd <= 0 or usd <= od_usd:
        return ""
    counted = f" ({counted})" if counted else ""
    return (f"spot costs {usd / od_usd:.2f}x on demand for {what}: {_usd(usd)}{per} on {where} against "
            f"{_usd(od_usd)}{per} on {od_where}{counted}; {instead}")


def _usd(x: float) -> str:
    """Dollars as the sentences say them: cents below $1,000, whole dollars from there."""
    return f"${x:,.2f}" if x < 1000 else f"${x:,.0f}"


STALE_DAYS = 30  # a price older than this is flagged stale (clock.py)

@dataclass(kw_only=True)
class Cost:
    """What one job costs on one offer: the instances rented, the hours, the total and its bill, the price's
    origin and age, and the spot plan when the offer can be interrupted."""

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
    price_confidence: str = "medium"
    observed_at: str = ""
    usd_per_gpu_hour: float = 0.0
    gpus_per_instance: int = 1
    instance: str = ""
    region: str = ""
    best_on_demand_usd_per_gpu_hour: float | None = None  # the cheapest on-demand price of this GPU anywhere
    best_on_demand_offer: str = ""
    finishes: bool = True  # False: spot interruptions outpace checkpoints, the job never completes
    bill: list[BillLine] = field(default_factory=list)
    bill_usd: float = 0.0
    notes: list[str] = field(default_factory=list)
    device_peak_gib: float | None = None  # memory per GPU at the device level, where the job was checked to fit
    job: JobTime | None = None  # training with eval_interval / save_interval: the hours by part
    label: str = field(init=False, default="")  # ``2x vast on_demand at $4.80/h (2 x $2.40)``

    def __post_init__(self) -> None:
        self.label = f"{self.offer} at ${self.usd_per_hour:,.2f}/h ({self.num_gpus} x ${self.usd_per_gpu_hour:,.2f})"


def instance_shape(offer: Offer, per_node: int) -> int:
    """GPUs per rented instance: the job's GPUs per node where the provider rents pods of any size, else the
    offer's fixed instance size (a 1-GPU job on an 8-GPU-only shape pays for 8)."""
    if max_per_node(offer) > offer.gpu_count and per_node <= max_per_node(offer):
        return per_node
    return offer.gpu_count


def offer_label(offer: Offer, gpus_per_instance: int) -> str:
    """``runpod secure 8x on-demand``; the user's own cards (pricing owned): ``your 2x rtx-4090 (power only)``."""
    if offer.pricing == "owned":
        return f"your {gpus_per_instance}x {short_id(offer.gpu_id)} (power only)"
    tier = f" {offer.tier}" if offer.tier not in ("neocloud", "hyperscaler", "marketplace", "") else ""
    return f"{offer.provider}{tier} {gpus_per_instance}x {offer.pricing_words}"


def price_job(s: Scenario, m: ModelSpec, speed: Speed, offer: Offer, trainable: int, *, today=None,
              mtbi_h: float | None = None, disk_gbs: float = oh.CHECKPOINT_WRITE_GBS,
              best_on_demand: tuple[float, str] | None = None) -> Cost:
    """Price the scenario on ``offer``: GPUs rented in whole instances; spot with Daly's expected wall time,
    its effective price compared with ``best_on_demand`` (the cheapest on-demand $/GPU-hour of this GPU
    anywhere, and its label); the whole bill (:mod:`.bill`) alongside."""
    gpus_needed = s.world_size if s.task == "train" else s.tp * s.pp
    per_node = gpus_needed // s.num_nodes  # a serving copy across nodes rents whole instances on each
    shape = instance_shape(offer, per_node)
    instances = math.ceil(gpus_needed / shape)
    rented = instances * shape
    per_hour = rented * offer.usd_per_gpu_hour
    label = offer_label(offer, rented if offer.pricing == "owned" else shape)
    cost = Cost(offer=label, provider=offer.provider, gpu_id=offer.gpu_id, pricing=offer.pricing,
                num_gpus=rented, instances=instances, usd_per_hour=per_hour, hours=0.0, usd_total=0.0,
                price_origin=price_origin(offer, today), price_age_days=offer.age_days(today),
                stale=offer.age_days(today) > STALE_DAYS,
                price_confidence=offer.confidence, observed_at=offer.observed_at.isoformat(),
                usd_per_gpu_hour=offer.usd_per_gpu_hour, gpus_per_instance=shape, instance=offer.instance,
                region=offer.region)
    if best_on_demand:
        cost.best_on_demand_usd_per_gpu_hour, cost.best_on_demand_offer = best_on_demand
    if s.task == "infer":
        cost.usd_per_million_tokens = per_hour / (speed.tokens_per_s * 3600) * 1e6
        cost.hours = 1.0
        cost.usd_total = per_hour
        if offer.interruptible and cost.best_on_demand_usd_per_gpu_hour:  # the hour's price alone: no restarts
            cost.spot_multiplier = per_hour / (gpus_needed * cost.best_on_demand_usd_per_gpu_hour)
        _bill(cost, s, m, offer, trainable, gpus_needed, work_h=1.0)
        return cost
    tokens = s.train_tokens or 0.0
    checkpoint = checkpoint_bytes(s, m, trainable)  # what each save writes, for the saves and spot's interval
    job = job_time(s, m, speed, checkpoint)
    if s.eval_interval or s.save_interval:
        cost.job = job
    work_h = job.total_h  # training, and the evaluation passes and checkpoint saves asked for
    cost.hours = work_h
    overhead = 1.0  # wall hours per hour of work_h
    if offer.interruptible:
        # Daly's wall time writes a checkpoint every interval (the saves asked for, at theirs): its work is the rest
        run_h = job.train_h + job.eval_h
        plan = spot_plan(run_h or 1.0, checkpoint, rented, mtbi_h=mtbi_h, disk_gbs=disk_gbs,
                         interval_h=save_interval_h(s, speed))
        cost.spot, overhead = plan, plan.overhead * (run_h / work_h if work_h else 1.0)
        cost.hours = work_h * overhead
        if not math.isfinite(overhead):
            cost.finishes = False
            cost.notes.append(f"spot: a checkpoint takes {plan.write_h:.3g} h against an interruption every "
                              f"{plan.mtbi_h:.3g} h, so the job never finishes; use on-demand or faster storage")
            cost.hours, cost.usd_total, cost.usd_per_million_tokens = 0.0, 0.0, math.inf
            return cost
        if cost.best_on_demand_usd_per_gpu_hour:
            # what the job pays per GPU-hour it uses (idle GPUs of a whole spot instance included) against the
            # cheapest on-demand GPU-hour: a 2-GPU job on an 8-GPU spot instance at $1.08 was "0.93x" a $1.39 one
            cost.spot_multiplier = overhead * per_hour / (gpus_needed * cost.best_on_demand_usd_per_gpu_hour)
    cost.usd_total = cost.hours * per_hour
    cost.usd_per_million_tokens = per_hour * overhead / (speed.tokens_per_s * 3600) * 1e6
    if job.eval_h or job.checkpoint_h:  # the job's own parts, priced at the same rate
        cost.usd_per_million_tokens *= job.total_h / job.train_h
    if not tokens:
        cost.notes.append("set train_tokens for job hours and total cost")
    _bill(cost, s, m, offer, trainable, gpus_needed, work_h=work_h)
    return cost


def _bill(cost: Cost, s: Scenario, m: ModelSpec, offer: Offer, trainable: int, gpus_needed: int,
          work_h: float) -> None:
    facts = providers().get(offer.provider, {}).get("bill") or {}
    result = m.params_total * 2 if s.task == "infer" or s.method == "full" else \
        trainable * 4 + merged_model_bytes(s, m, 0.0)  # torchtune's merged model is a result too
    cost.bill = bill_lines(
        per_gpu_hour=offer.usd_per_gpu_hour, gpus_used=gpus_needed, gpus_rented=cost.num_gpus, work_h=work_h,
        wall_h=cost.hours, instance=offer.instance, vcpus=offer.vcpus, memory_gib=offer.memory_gib,
        checkpoint_gb=checkpoint_bytes(s, m, trainable) / 1e9 if s.task == "train" else 0.0,
        dataset_gb=dataset_gb(s), result_gb=result / 1e9 if s.task == "train" else 0.0, facts=facts,
        serving=s.task == "infer")
    cost.bill_usd = sum(line.usd for line in cost.bill)


def dataset_gb(s: Scenario) -> float:
    """The training data on disk: ``dataset_gb`` when given, else ~4 bytes of UTF-8 text per token (the usual
    ~4 characters per BPE token of English text, OpenAI tokenizer guidance); 0 for serving."""
    if s.task != "train":
        return 0.0
    if getattr(s, "dataset_gb", None) is not None:
        return s.dataset_gb
    return (s.train_tokens or 0.0) * oh.DATASET_BYTES_PER_TOKEN / 1e9
