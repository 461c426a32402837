"""``recommend``: the setups that fit a job, ranked by cost or time, and what to change when none does.

The guides' decision framework, in order: memory first (prune every setup that does not fit with the
headroom asked for), then communication (NVLink or PCIe, from the speed model's bound), then budget (time
and cost on every offer), then headroom. The search space is GPU type x count x strategy x techniques x
offers; memory does not depend on the GPU type beyond its capacity and CUDA context, so each
(count, strategy, techniques) is estimated once and compared with every card. The numbers are those of
``gpuplan estimate``: the same functions, on the same scenario.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field

from .. import memory
from .. import overheads as oh
from ..errors import GpuplanError
from ..hardware import GpuSpec, gpus, load_gpu
from ..market.cost import price_job
from ..market.offers import Offer, load_offers, max_per_node
from ..memory import check, memory_report
from ..model.report import inexact_warning
from ..model.spec import ModelSpec
from ..scenario import Scenario
from ..speed import speed_of
from .pricing import on_demand_price

COUNTS = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512)
GIB = 2**30


@dataclass(kw_only=True)
class Constraints:
    budget_usd: float | None = None
    deadline_hours: float | None = None
    max_gpus: int = 8
    gpus: tuple[str, ...] = ()  # allow-list of GPU ids
    providers: tuple[str, ...] = ()
    pricing: str = "on_demand"  # on_demand | spot | any
    have: tuple[tuple[str, int], ...] = ()  # owned hardware: (gpu id, count), priced by power only
    min_headroom: float = 0.0  # fraction of usable memory left free
    objective: str = "cost"  # cost | time | balanced
    any_method: bool = False  # LoRA / QLoRA may replace full fine-tuning
    any_quant: bool = False  # weight quantization and an fp8 KV cache may be used for inference
    top: int = 10
    catalogs: tuple[str, ...] = ()


@dataclass(kw_only=True)
class Setup:
    scenario: Scenario
    gpu_id: str
    num_gpus: int
    strategy: str
    techniques: list[str]
    offer: str
    provider: str
    pricing: str
    owned: bool
    device_peak_gib: float
    capacity_gib: float
    headroom_pct: float
    tokens_per_s: float
    bound: str
    usd_per_hour: float
    hours: float | None
    usd_total: float | None
    usd_per_million_tokens: float
    price_age_days: int = 0
    stale: bool = False
    pareto: bool = False
    rationale: str = ""


@dataclass(kw_only=True)
class Recommendation:
    setups: list[Setup]
    evaluated: int
    fitting: int
    elapsed_s: float
    changes: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def parse_have(text: str) -> tuple[str, int]:
    """``2x3090`` -> (GPU id, 2)."""
    count, sep, name = text.strip().partition("x")
    if not sep or not count.isdigit():
        count, name = "1", text
    return load_gpu(name.strip()).id, int(count)


def _variants(s: Scenario, c: Constraints) -> list[tuple[list[str], dict]]:
    """Technique combinations to try, cheapest in speed first."""
    if s.task == "infer":
        out: list[tuple[list[str], dict]] = [([], {})]
        if c.any_quant and s.quant is None:
            out += [(["fp8 KV cache"], {"kv_cache_dtype": "fp8"}), (["int8 weights"], {"quant": "int8"}),
                    (["AWQ 4-bit weights"], {"quant": "awq-int4"}),
                    (["AWQ 4-bit weights", "fp8 KV cache"], {"quant": "awq-int4", "kv_cache_dtype": "fp8"})]
        return out
    methods = [s.method] + ([m for m in ("lora", "qlora") if m != s.method] if c.any_method else [])
    out = []
    for method in methods:
        base = {"method": method, "quant": None} if method != s.method else {}
        if method == "qlora" and s.precision == "fp32":
            base["precision"] = "bf16-mixed"
        label = [] if method == s.method else [{"lora": "LoRA", "qlora": "QLoRA"}[method]]
        out.append((label, base))
        out.append(([*label, "gradient checkpointing"], {**base, "grad_checkpointing": "full"}))
        if s.micro_batch_size > 1:
            accum = {"micro_batch_size": 1, "grad_accum_steps": s.micro_batch_size * s.grad_accum_steps}
            out.append(([*label, "gradient checkpointing", "micro-batch 1 + accumulation"],
                        {**base, "grad_checkpointing": "full", **accum}))
        if s.optimizer == "adamw":
            out.append(([*label, "gradient checkpointing", "8-bit AdamW"],
                        {**base, "grad_checkpointing": "full", "optimizer": "paged-adamw-8bit"}))
        if method == "qlora":
            out.append(([*label, "gradient checkpointing", "bf16 embeddings"],
                        {**base, "grad_checkpointing": "full", "optimizer": "paged-adamw-8bit",
                         "qlora_fp32_upcast": False}))
    return out


def _layouts(s: Scenario, m: ModelSpec, c: Constraints) -> list[dict]:
    """GPU counts and parallel strategies: data parallel / ZeRO for training, tensor parallel for serving."""
    out = []
    for n in COUNTS:
        if n > c.max_gpus:
            break
        per_node, nodes = min(n, 8), max(n // 8, 1)
        if s.task == "infer":
            if n <= 8 and m.num_heads % n == 0 and (n <= m.num_kv_heads or n % m.num_kv_heads == 0 or m.mla):
                out.append({"num_gpus": n, "num_nodes": 1, "tp": n, "pp": 1, "strategy": None})
            continue
        strategies = ["single"] if n == 1 else ["ddp", "zero2", "zero3"]
        out += [{"num_gpus": per_node, "num_nodes": nodes, "tp": 1, "pp": 1, "strategy": st} for st in strategies]
    return out


def _owned_offers(c: Constraints) -> list[Offer]:
    import datetime as dt

    out = []
    for gpu_id, count in c.have:
        g = gpus()[gpu_id]
        power = (g.tdp_w or 300) / 1000 * oh.UTILIZATION * oh.PUE * oh.POWER_USD_PER_KWH
        out.append(Offer(provider="owned", tier="", gpu_id=gpu_id, gpu_count=count, pricing="owned",
                         price_usd_per_gpu_hour=power, region="", intra_node="pcie", observed_at=dt.date.today(),
                         source="power only", notes="", origin="--have"))
    return out


def _offers(s: Scenario, c: Constraints) -> list[Offer]:
    offers = [o for o in load_offers(c.catalogs)
              if (c.pricing == "any" or (o.interruptible if c.pricing == "spot" else o.pricing == "on_demand"))
              and (not c.providers or o.provider in c.providers) and (not c.gpus or o.gpu_id in c.gpus)]
    return offers + _owned_offers(c)


def recommend(s: Scenario, m: ModelSpec, c: Constraints, explain: bool = True) -> Recommendation:
    """Every setup that fits ``s`` under ``c``, ranked; with ``explain``, the changes that would make one fit
    when none does."""
    started = time.perf_counter()
    offers = _offers(s, c)
    all_offers = load_offers(c.catalogs)
    cards = {o.gpu_id: gpus()[o.gpu_id] for o in offers}
    evaluated, setups, fitting = 0, [], 0
    biggest = max(cards.values(), key=lambda g: g.usable_gib, default=None)
    for labels, change in _variants(s, c):
        for layout in _layouts(s, m, c):
            scenario = s.model_copy(update={**change, **layout, "gpu": None})
            try:
                check(scenario, m, None)
            except GpuplanError:
                continue
            shared = None if scenario.task == "infer" and scenario.engine != "transformers" else \
                memory_report(scenario, m, None)[0]
            trainable = int(shared.extra.get("params_trainable", 0)) if shared else 0
            for gpu in cards.values():
                evaluated += 1
                placed = scenario.model_copy(update={"gpu": gpu.id})
                try:
                    check(placed, m, gpu)
                except GpuplanError:
                    continue
                ok, peak = _fit(placed, m, gpu, shared, c)
                if not ok:
                    continue
                fitting += 1
                setups += _priced(placed, m, gpu, labels, peak, offers, all_offers, trainable)
    setups = _filter_rank(setups, c)
    result = Recommendation(setups=setups[: c.top], evaluated=evaluated, fitting=fitting,
                            elapsed_s=time.perf_counter() - started)
    inexact = inexact_warning(m)
    if inexact:
        result.notes.insert(0, inexact)
    if not setups and explain:
        result.changes = _what_would_fit(s, m, c, biggest, fitting)
    return result


def _fit(s: Scenario, m: ModelSpec, gpu: GpuSpec, shared, c: Constraints) -> tuple[bool, float]:
    if shared is None:  # vLLM / llama.cpp: memory depends on the card's capacity
        _e, report = memory_report(s, m, gpu)
        return bool(report.fits) and report.device_peak_gib <= gpu.usable_gib * (1 - c.min_headroom), \
            report.device_peak_gib
    device = (shared.reserved + sum(memory.device_overheads(s, gpu.generation).values())) / GIB
    return device <= gpu.usable_gib * (1 - c.min_headroom), device


def _priced(s: Scenario, m: ModelSpec, gpu: GpuSpec, labels: list[str], peak: float, offers: list[Offer],
            all_offers: list[Offer], trainable: int) -> list[Setup]:
    out = []
    speeds: dict[str, object] = {}
    per_node = s.world_size // s.num_nodes if s.task == "train" else s.tp * s.pp
    for offer in offers:
        if offer.gpu_id != gpu.id or per_node > max_per_node(offer):
            continue
        if offer.pricing == "owned" and offer.gpu_count < s.world_size:
            continue
        if offer.network not in speeds:
            speeds[offer.network] = speed_of(s, m, gpu, offer.network)
        speed = speeds[offer.network]
        cost = price_job(s, m, speed, offer, trainable, mtbi_h=s.mtbi_hours, disk_gbs=s.disk_gbs,
                         on_demand_price=on_demand_price(all_offers, offer))
        hours = cost.hours if s.task == "train" and s.train_tokens else None
        offer_label = offer.label if offer.gpu_count == per_node else \
            f"{offer.label.replace(f'{offer.gpu_count}x', f'{per_node}x')} (per-GPU price)"
        priced = s if offer.pricing == "owned" else s.model_copy(update={
            "provider": offer.provider, "pricing": "spot" if offer.interruptible else "on_demand"})
        setup = Setup(scenario=priced, gpu_id=gpu.id, num_gpus=s.world_size, strategy=s.resolved_strategy if
                      s.task == "train" else f"tp{s.tp}", techniques=labels, offer=offer_label,
                      provider=offer.provider, pricing=offer.pricing, owned=offer.pricing == "owned",
                      device_peak_gib=peak, capacity_gib=gpu.usable_gib,
                      headroom_pct=100 * (1 - peak / gpu.usable_gib), tokens_per_s=speed.tokens_per_s,
                      bound=speed.bound, usd_per_hour=cost.usd_per_hour, hours=hours,
                      usd_total=cost.usd_total if hours is not None else None,
                      usd_per_million_tokens=cost.usd_per_million_tokens,
                      price_age_days=cost.price_age_days, stale=cost.stale)
        setup.rationale = _rationale(setup, gpu, speed)
        out.append(setup)
    return out


def _rationale(x: Setup, gpu: GpuSpec, speed) -> str:
    """Memory, then communication, then budget, as the guides order the decision."""
    parts = [f"fits with {x.headroom_pct:.0f}% headroom ({x.device_peak_gib:.1f} of {x.capacity_gib:.1f} GiB)"]
    if gpu.vendor != "NVIDIA":
        parts.append(f"{gpu.vendor}: check your stack supports it (ROCm / Gaudi software)")
    if x.num_gpus == 1:
        parts.append("one GPU: no interconnect needed")
    elif speed.bound == "communication":
        parts.append("communication-bound: prefer NVLink" if not gpu.nvlink_bandwidth_gbs else
                     "communication-bound even on NVLink")
    else:
        parts.append(f"{speed.bound}-bound, so " +
                     ("NVLink helps little" if gpu.nvlink_bandwidth_gbs else "PCIe is enough"))
    if speed.bound.startswith("host"):
        parts.append("eager decoding: a serving engine (--engine vllm) is several times faster")
    parts.append(f"${x.usd_per_million_tokens:,.3g} per million tokens at {x.tokens_per_s:,.0f} tokens/s")
    return "; ".join(parts)


def _key(x: Setup, objective: str) -> float:
    cost, speed = x.usd_per_million_tokens, 1 / x.tokens_per_s
    return {"cost": cost, "time": speed, "balanced": math.sqrt(cost * speed)}[objective]


def _filter_rank(setups: list[Setup], c: Constraints) -> list[Setup]:
    kept = [x for x in setups
            if (c.budget_usd is None or x.usd_total is None or x.usd_total <= c.budget_usd)
            and (c.deadline_hours is None or x.hours is None or x.hours <= c.deadline_hours)]
    best: dict[tuple, Setup] = {}  # one per (GPU, count, provider, pricing): its best offer, techniques, strategy
    for x in kept:
        k = (x.gpu_id, x.num_gpus, x.provider, x.pricing)
        if k not in best or _key(x, c.objective) < _key(best[k], c.objective):
            best[k] = x
    ranked = sorted(best.values(), key=lambda x: (round(_key(x, c.objective), 12), x.num_gpus, -x.headroom_pct))
    for x in ranked:  # Pareto front of cost vs time
        x.pareto = not any(y.usd_per_million_tokens <= x.usd_per_million_tokens and y.tokens_per_s >= x.tokens_per_s
                           and (y.usd_per_million_tokens, y.tokens_per_s) != (x.usd_per_million_tokens,
                                                                             x.tokens_per_s) for y in ranked)
    return ranked


def _what_would_fit(s: Scenario, m: ModelSpec, c: Constraints, biggest: GpuSpec | None, fitting: int) -> list[str]:
    """When nothing is left: each single relaxation that yields a setup (a bigger budget or a later deadline,
    LoRA/QLoRA, quantization, more GPUs, shorter sequences), with the best setup it gives, best first. Of the
    GPU counts and sequence lengths, only the smallest change that works is listed."""
    if biggest is None:
        return ["no GPU in the catalog matches the allow-lists: widen --gpus / --providers / --pricing"]
    base = {**c.__dict__, "top": 1}
    tries: list[tuple[str, str, Scenario, Constraints]] = []  # (group, label, scenario, constraints)
    if fitting and c.budget_usd is not None:
        tries.append(("budget", "raise the budget", s, Constraints(**{**base, "budget_usd": None})))
    if fitting and c.deadline_hours is not None:
        tries.append(("deadline", "extend the deadline", s, Constraints(**{**base, "deadline_hours": None})))
    if fitting and c.budget_usd is not None and c.deadline_hours is not None:
        tries.append(("both", "", s, Constraints(**{**base, "budget_usd": None, "deadline_hours": None})))
    if s.task == "train" and not c.any_method:
        tries.append(("method", "allow LoRA/QLoRA (--any-method)", s, Constraints(**{**base, "any_method": True})))
    if s.task == "infer" and not c.any_quant:
        tries.append(("quant", "allow quantized weights / fp8 KV (--any-quant)", s,
                      Constraints(**{**base, "any_quant": True})))
    for n in COUNTS:
        if n > c.max_gpus and (s.task == "train" or n <= 8):
            tries.append(("gpus", f"allow up to {n} GPUs (--max-gpus {n})", s,
                          Constraints(**{**base, "max_gpus": n})))
    name = "seq_len" if s.task == "train" else "prompt_tokens"
    for divisor in (2, 4, 8):
        shorter = max(getattr(s, name) // divisor, 1)
        tries.append(("length", f"shorter sequences (--{name.replace('_', '-')} {shorter:,})",
                      s.model_copy(update={name: shorter}), Constraints(**base)))
    found: list[tuple[float, str]] = []
    done: set[str] = set()
    for group, label, scenario, constraints in tries:
        if group in done:
            continue
        best = recommend(scenario, m, constraints, explain=False).setups
        if not best:
            continue
        done.add(group)
        x = best[0]
        if group == "budget":
            label = f"raise the budget to ${math.ceil(x.usd_total or 0):,} (--budget-usd)"
        elif group == "deadline":
            label = f"extend the deadline to {math.ceil((x.hours or 0) * 10) / 10:,} hours (--deadline-hours)"
        elif group == "both":
            if found:  # one of the two alone is enough
                continue
            label = (f"raise the budget to ${math.ceil(x.usd_total or 0):,} and the deadline to "
                     f"{math.ceil((x.hours or 0) * 10) / 10:,} hours")
        total = f", ${x.usd_total:,.0f}" if x.usd_total is not None else ""
        found.append((_key(x, c.objective), f"{label}: {x.num_gpus}x {x.gpu_id} "
                      f"{'+'.join([x.strategy, *x.techniques])} on {x.offer}{total} "
                      f"(${x.usd_per_million_tokens:,.2f}/M tokens)"))
    return [text for _, text in sorted(found)] or [
        f"nothing in the catalog fits, even on {c.max_gpus} x {biggest.name}: a smaller model or more GPUs"]
