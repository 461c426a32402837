"""``recommend``: the setups that fit a job, ranked by cost or time, and what to change when none does.

Owned hardware (``have``) is ranked in its own list, ahead of the rentals: "can my cards do it?" comes first; when
they cannot, the smallest combination of changes that makes the job fit on them is given. At equal cost (within
0.5 %) the faster setup ranks first; within 0.5 % of a card's cheapest row, the one with fewer techniques is
shown. Serving considers vLLM as well as transformers unless the engine was named.

The guides' decision framework, in order: memory first (prune every setup that does not fit with the
headroom asked for), then communication (NVLink or PCIe, from the speed model's bound), then budget (time
and cost on every offer), then headroom. The search space is GPU type x count x sharding x techniques x
offers; memory does not depend on the GPU type beyond its capacity and CUDA context, so each
(count, sharding, techniques) is estimated once and compared with every card. The numbers are those of
``gpuplan estimate``: the same functions, on the same scenario.
"""

from __future__ import annotations

import heapq
import math
import time
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from typing import Annotated, Any

from pydantic import BaseModel, Field, SkipValidation, WrapValidator, computed_field, model_serializer

from ..answer import Answer
from ..engines import ENGINES, engine_for
from ..engines.rocm import class_slowdown
from ..errors import GpuplanError
from ..hardware import GpuSpec, Network, counted_card, gpus, load_gpu, short_id
from ..market.choice import cheapest_in_force, cheapest_on_demand
from ..market.offers import Offer, max_per_node, multi_node, owned_offer, spot_rows_missing
from ..market.store import load_offers, price_filter
from ..memory import device_gib, estimate_memory
from ..model.report import inexact_warning
from ..model.spec import ModelSpec
from ..result import usd_amount
from ..scenario import Scenario, read_back, stack_cards
from ..scenario.stacks import STACK_NAMES
from ..serving.capacity import STABLE_LOAD
from ..speed.comms import Link, intra_node_link, slowest_link
from ..speed.deepgemm import deepgemm_warnings
from ..speed.gemm import can_time
from ..speed.work import shared_work
from ..stacks import STACKS, stack_for
from ..tensors.state import weight_format
from .build import Offers, build, links_that_matter, own_links, priced_on_load, saturation_of, serving_runs
from .capability import embedding_words
from .desktop import desktop_warning
from .layout import accumulation, recipe_batch
from .layout import layout as recipe_layout
from .plan import Plan, card_memory, probe
from .pricing import left_out
from .refusals import (
    advice_lacks,
    check,
    engine_refusal,
    frozen_base,
    not_a_module,
    nvfp4_refusal,
    other_task,
    scenario_load,
    scenario_refusal,
    stack_card,
    training_engine,
)
from .resolve import resolve, tensor_parallel_ok, within_context

COUNTS = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512)
GIB = 2**30


@dataclass(kw_only=True)
class Constraints:
    """What the user allows; validated on creation (finite, in range), each problem one sentence."""

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
    any_stack: bool = False  # other training stacks (torchtune, torchtitan, Unsloth, axolotl...) may be used
    top: int = 10
    catalogs: tuple[str, ...] = ()
    per_gpu: bool = False  # one setup per GPU type (its best), to compare cards

    def __post_init__(self) -> None:
        for name, value in (("budget_usd", self.budget_usd), ("deadline_hours", self.deadline_hours)):
            if value is not None and not (isinstance(value, (int, float)) and math.isfinite(value) and value > 0):
                raise GpuplanError(f"--{name.replace('_', '-')} must be a positive number, got {value!r}")
        if not isinstance(self.max_gpus, int) or not 1 <= self.max_gpus <= COUNTS[-1]:
            raise GpuplanError(f"--max-gpus must be between 1 and {COUNTS[-1]}, got {self.max_gpus!r}")
        if not isinstance(self.top, int) or self.top < 1:
            raise GpuplanError(f"--top must be 1 or more, got {self.top!r}")
        if not (math.isfinite(self.min_headroom) and 0 <= self.min_headroom < 1):
            raise GpuplanError(f"--min-headroom must be between 0% and 100%, got {self.min_headroom!r}")
        if self.objective not in ("cost", "time", "balanced"):
            raise GpuplanError(f"--objective must be cost, time or balanced, got {self.objective!r}")
        if self.pricing == "owned":
            raise GpuplanError("--pricing owned prices one plan on your own cards (gpuplan estimate); recommend "
                               "ranks your cards beside the rentals with --have (e.g. --have 2x3090)")
        if self.pricing not in ("on_demand", "spot", "any"):
            raise GpuplanError(f"--pricing must be on-demand, spot or any, got {self.pricing!r}")
        for gpu_id, count in self.have:
            if not 1 <= count <= 1024:
                raise GpuplanError(f"--have needs 1 to 1,024 cards of {gpu_id}, got {count}")


class Setup(BaseModel):
    """One setup that fits, priced on one offer, with the numbers ``estimate`` gives for it there."""

    # as priced (provider, pricing) for the setups a Recommendation holds; an instance passes as it was validated when
    # made (pydantic would validate it again, defaults and all, for each of the thousands of rows a search ranks), a
    # dict is validated; the web API's schema names it (#/components/schemas/Scenario)
    scenario: Annotated[Scenario, WrapValidator(lambda v, _: read_back(v))]  # read back: its data not read again
    gpu_id: str
    num_gpus: int
    sharding: str
    techniques: list[str]
    offer: str
    provider: str
    pricing: str
    owned: bool
    device_peak_gib: float
    capacity_gib: float
    headroom_pct: float
    tokens_per_s: float
    tokens_per_s_per_user: float | None = None  # streaming: 1 / decode step (speed.streaming_tokens_per_s_per_user)
    ttft_s: float | None = None
    kv_tokens: int | None = None  # serving engines with a pool: the engine's kv_pool, as estimate and capacity
    max_concurrency: int | None = None
    tokens_per_s_low: float
    tokens_per_s_high: float
    band: str | None = None  # serving: where the range comes from (speed.band: overheads.DECODE_BANDS)
    bound: str
    usd_per_hour: float
    hours: float | None
    usd_total: float | None
    usd_per_million_tokens: float
    price_age_days: int = 0
    stale: bool = False
    price_confidence: str = "medium"
    observed_at: str = ""
    price_origin: str = ""
    usd_per_gpu_hour: float = 0.0
    gpus_per_instance: int = 1
    bill_usd: float | None = None
    pareto: bool = False
    rationale: str = ""
    change: str = ""  # what the techniques or the stack change save and cost against the scenario as given
    # the plan this row reads (the setup's scenario, memory, speed and cost on its offer); not in the JSON
    plan: SkipValidation[Plan | None] = Field(default=None, exclude=True, repr=False)
    # under a rate: the requests/s its engine full completes (closed form, recommend._rate_order); not in the JSON
    saturated_rps: float | None = Field(default=None, exclude=True, repr=False)

    @property
    def slow_end(self) -> float:
        """How much longer (and dearer, time being billed) the job runs at the slow end of its likely speed range
        (``tokens_per_s_low``, the calibration's spread) than at its central speed: deadlines and budgets are met
        only there."""
        return self.tokens_per_s / self.tokens_per_s_low if self.tokens_per_s_low else 1.0

    @computed_field  # type: ignore[prop-decorator]
    @property
    def speed_band(self) -> str:
        """The likely speed range (``tokens_per_s_low`` to ``_high``, the calibration's spread) around the central
        speed, in whole percent, half rounded up, as the CLI's table and the page print it beside tokens/s: ``±13%``
        where it reaches as far each way, else each side (``-0/+16%``: DeepSeek-R1 on 4x MI300X under SGLang,
        491 tok/s likely 491-569, was printed ``491 ±8%``, s25 walk). One rounding for both faces (the table's
        ``:.0f`` rounds half to even, the page's ``toLocaleString`` half away from zero: s20-left2)."""
        if not self.tokens_per_s:
            return "±0%"
        below, above = (math.floor(100 * abs(self.tokens_per_s - x) / self.tokens_per_s + 0.5)
                        for x in (self.tokens_per_s_low, self.tokens_per_s_high))
        return f"±{below}%" if below == above else f"-{below}/+{above}%"

    @property
    def hours_high(self) -> float | None:
        return None if self.hours is None else self.hours * self.slow_end

    @property
    def usd_total_high(self) -> float | None:
        return None if self.usd_total is None else self.usd_total * self.slow_end

    @model_serializer(mode="wrap")
    def _band_where_served(self, handler) -> dict[str, Any]:
        """A serving setup's band words; a training one has none and says nothing."""
        data = handler(self)
        if data.get("band", "") is None:
            data.pop("band")
        return data

    @classmethod
    def of(cls, plan: Plan, labels: list[str], offer: Offer, note: str = "") -> Setup:
        """The row of ``plan``, priced on ``offer`` (its techniques ``labels``; ``note``: what they change)."""
        r = plan.setup
        s, gpu, mem, speed, cost = r.scenario, r.gpu, plan.memory, plan.speed, plan.cost
        hours = cost.hours if s.task == "train" and s.train_tokens else None
        label = f"your {offer.gpu_count}x {short_id(offer.gpu_id)} (power only)" if offer.pricing == "owned" else \
            cost.offer
        row = cls(scenario=s, gpu_id=gpu.id, num_gpus=s.world_size, sharding=s.layout if
                  s.task == "train" else f"pp{s.pp}" if s.pp > 1 else f"tp{s.tp}", techniques=labels, offer=label,
                  provider=offer.provider, pricing=offer.pricing, owned=offer.pricing == "owned",
                  device_peak_gib=mem.device_peak_gib, capacity_gib=gpu.usable_gib,
                  headroom_pct=100 * (1 - mem.device_peak_gib / gpu.usable_gib), tokens_per_s=speed.tokens_per_s,
                  tokens_per_s_per_user=speed.streaming_tokens_per_s_per_user, ttft_s=speed.ttft_s,
                  kv_tokens=mem.max_context_tokens, max_concurrency=mem.max_concurrency,
                  tokens_per_s_low=speed.tokens_per_s_low, tokens_per_s_high=speed.tokens_per_s_high,
                  band=speed.band, bound=speed.bound, usd_per_hour=cost.usd_per_hour, hours=hours,
                  usd_total=cost.usd_total if hours is not None else None,
                  usd_per_million_tokens=cost.usd_per_million_tokens, price_age_days=cost.price_age_days,
                  stale=cost.stale, price_confidence=cost.price_confidence, observed_at=cost.observed_at,
                  price_origin=cost.price_origin, usd_per_gpu_hour=cost.usd_per_gpu_hour,
                  gpus_per_instance=cost.gpus_per_instance, bill_usd=cost.bill_usd if hours is not None else None,
                  change=note, plan=plan)
        row.rationale = _rationale(row, gpu, speed, timed_link(s, gpu, offer))
        return row


class Recommendation(Answer):
    """``recommend``'s answer: ``to_dict()`` is what ``gpuplan recommend --json`` prints."""

    setups: list[Setup]  # rentals, best first
    evaluated: int
    fitting: int
    elapsed_s: float
    changes: list[str] = Field(default_factory=list)
    notes: list[str] = Field(default_factory=list)
    owned: list[Setup] = Field(default_factory=list)  # on the user's own cards (``have``), best first
    owned_changes: list[str] = Field(default_factory=list)  # when nothing fits them: what would
    defaults: list[str] = Field(default_factory=list)  # the names and defaults taken (GPU variants, the model's)
    warnings: list[str] = Field(default_factory=list)  # a model not counted exactly, before every number
    resolved: str = ""  # the scenario as searched, in one line: what every answer prints first
    model_exact: bool = True  # whether the model's counts are exact (``model_exact_reason`` when not)
    model_exact_reason: str | None = None
    fewest: Setup | None = None  # with a deadline: the rental with the fewest GPUs that meets it (then the cheapest)
    fewest_line: str = ""  # ... said in one line


def parse_have(text: str) -> tuple[str, int]:
    """``2x3090`` -> (GPU id, 2); a bare name is one card (:func:`gpuplan.hardware.counted_card`)."""
    name, count = counted_card(text)
    return load_gpu(name).id, count or 1


def _variants(s: Scenario, c: Constraints, shipped: str | None = None) -> list[tuple[list[str], dict]]:
    """Technique combinations to try, cheapest in speed first. ``shipped``: the checkpoint's own quantized
    format (MXFP4 gpt-oss, FP8 DeepSeek, an AWQ or GPTQ repo), which ``any_quant`` serves as shipped, alone and
    with an fp8 KV cache: re-quantizing it is a conversion of its own, named in the notes, not a row."""
    if s.task == "infer":
        engines = [s.engine] if "engine" in s.model_fields_set else ["vllm", "transformers"]
        out: list[tuple[list[str], dict]] = []
        for engine in engines:
            base = {"engine": engine} if engine != s.engine else {}
            label = [engine] if "engine" not in s.model_fields_set else []
            out.append((label, base))
            loads = ENGINES[engine].loads_quants
            if c.any_quant and s.quant is None and loads and shipped:
                out.append(([*label, f"{shipped} as shipped", "fp8 KV cache"], {**base, "kv_cache_dtype": "fp8"}))
            elif c.any_quant and s.quant is None and loads:
                out += [([*label, "fp8 KV cache"], {**base, "kv_cache_dtype": "fp8"}),
                        ([*label, "int8 weights"], {**base, "quant": "int8"}),
                        ([*label, "fp8 weights"], {**base, "quant": "fp8"}),
                        ([*label, "AWQ 4-bit weights"], {**base, "quant": "awq-int4"}),
                        ([*label, "AWQ 4-bit weights", "fp8 KV cache"], {**base, "quant": "awq-int4",
                                                                         "kv_cache_dtype": "fp8"})]
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
        if (s.dataset or s.samples or s.model_size) and "micro_batch_size" not in s.model_fields_set:
            # a recipe fixes the global batch, so the micro-batch is free: the larger ones run faster where they fit
            for mb in (2, 4, 8):
                out.append(([*label, f"micro-batch {mb}"], {**base, "micro_batch_size": mb}))
            out.append(([*label, "gradient checkpointing", "micro-batch 8"],
                        {**base, "grad_checkpointing": "full", "micro_batch_size": 8}))
        if s.optimizer == "adamw":
            out.append(([*label, "gradient checkpointing", "paged 8-bit AdamW"],
                        {**base, "grad_checkpointing": "full", "optimizer": "paged-adamw-8bit"}))
        out += _own_switches(s, label, base)
        if method == "qlora":  # the QLoRA recipe's paged 8-bit AdamW where the optimizer is AdamW, said as a technique
            paged = {"optimizer": "paged-adamw-8bit"} if s.optimizer == "adamw" else {}
            said = ["paged 8-bit AdamW"] if paged else []
            out.append(([*label, "gradient checkpointing", *said, "bf16 embeddings"],
                        {**base, "grad_checkpointing": "full", **paged, "qlora_fp32_upcast": False}))
        if c.any_stack:  # every other stack with its recipe defaults, and with activation offloading
            for name in STACK_NAMES:
                if name == s.stack:
                    continue
                out.append(([*label, name], {**base, "stack": name}))
                if STACKS[name].offloads_activations:
                    out.append(([*label, name, "activation offload"], {**base, "stack": name,
                                                                       "grad_checkpointing": "full",
                                                                       "activation_offload": True}))
    return out


def technique_variants(s: Scenario, c: Constraints, shipped: str | None = None
                       ) -> Iterator[tuple[list[str], dict]]:
    """The technique combinations ``recommend`` tries (:func:`_variants`, cheapest in speed first), each with the
    words of what it changes in ``s`` (:func:`_said`); one that changes nothing a combination before it did not
    ("gradient checkpointing" when the scenario has it on already) is left out. A decoder LLM's search and a
    module's (:func:`gpuplan.plan.module_searches.card_setups`: checkpointing and 8-bit AdamW for a training job
    that does not fit a card as given) take the same list."""
    tried: set[frozenset] = set()
    for labels, change in _variants(s, c, shipped):
        effect = frozenset((k, v) for k, v in change.items() if getattr(s, k) != v)
        if effect not in tried:
            tried.add(effect)
            yield _said(labels, effect), change


def _own_switches(s: Scenario, label: list[str], base: dict) -> list[tuple[list[str], dict]]:
    """The stack's own switches in full training (:attr:`gpuplan.stacks.base.Stack.switches`: torchtitan's, the
    stack a size-only model pretrains on, turns activation checkpointing off and compiles), at each micro-batch a
    recipe leaves free; the HF variants (8-bit AdamW, full checkpointing) are not its fastest."""
    switches = STACKS[s.stack].switches if s.stack in STACKS else ()  # a diffusion trainer has none of these
    if not switches or base.get("method", s.method) != "full":
        return []
    free = (s.dataset or s.samples or s.model_size) and "micro_batch_size" not in s.model_fields_set
    out = []
    for words, change in switches:
        out.append(([*label, *words], {**base, **change}))
        out += [([*label, *words, f"micro-batch {mb}"], {**base, **change, "micro_batch_size": mb})
                for mb in ((2, 4, 8) if free else ())]
    return out


def _layouts(s: Scenario, m: ModelSpec, c: Constraints, stack: str = "hf", split: bool = False) -> list[dict]:
    """GPU counts and parallel layouts: data parallel / ZeRO for training, tensor parallel for serving; with
    ``split``, training's tensor x pipeline-parallel layouts instead (:func:`_split_layouts`)."""
    out = []
    for n in COUNTS:
        if n > c.max_gpus:
            break
        per_node, nodes = min(n, 8), max(n // 8, 1)
        if s.task == "infer" and not engine_for(s).tensor_parallel:  # llama.cpp splits layers (estimate's default)
            if n <= min(8, m.num_layers):
                out.append({"num_gpus": n, "num_nodes": 1, "tp": 1, "pp": n, "sharding": None})
            continue
        if s.task == "infer":
            if n <= 8 and m.num_heads % n == 0 and (n <= m.num_kv_heads or n % m.num_kv_heads == 0 or m.mla):
                out.append({"num_gpus": n, "num_nodes": 1, "tp": n, "pp": 1, "sharding": None})
            elif n > 8 and tensor_parallel_ok(m, 8) and nodes <= m.num_layers:  # TP 8 per node, PP across nodes
                out.append({"num_gpus": 8, "num_nodes": nodes, "tp": 8, "pp": nodes, "sharding": None})
            continue
        if split:
            out += _split_layouts(n, per_node, nodes, stack)
            continue
        shardings = ["single"] if n == 1 else list(STACKS[stack].shardings)
        out += [{"num_gpus": per_node, "num_nodes": nodes, "tp": 1, "pp": 1, "sharding": st} for st in shardings]
    return out


def _split_layouts(n: int, per_node: int, nodes: int, stack: str) -> list[dict]:
    """The layouts of ``n`` GPUs that split the model with the stack's own tensor and pipeline parallelism (its
    profile's ``model_parallel``: Megatron-Core, torchtitan), tp inside a node, the GPUs left over data parallel
    with the stack's sharding (unset where tp x pp takes them all, as estimate leaves it). What a model cannot
    split so (tp against its heads, pp against its layers, seq_len against tp) the refusals turn away, as they do
    for ``estimate``."""
    splits = STACKS[stack].model_parallel
    out = []
    for tp in (t for t in (1, 2, 4, 8) if t <= per_node and (t == 1 or "tp" in splits)):
        for pp in (p for p in COUNTS if p <= n // tp and (p == 1 or "pp" in splits)):
            if tp * pp == 1 or n % (tp * pp):
                continue
            dp = n // (tp * pp)
            out += [{"num_gpus": per_node, "num_nodes": nodes, "tp": tp, "pp": pp, "sharding": st}
                    for st in ([None] if dp == 1 else STACKS[stack].shardings)]
    return out


def _owned_offers(c: Constraints) -> list[Offer]:
    """The user's own cards (``have``) as offers priced by their power; one sentence for a card whose draw is not on
    file (:func:`gpuplan.market.owned_power.busy_draw`), as ``gpuplan buy`` refuses to price it."""
    out = []
    for gpu_id, count in c.have:
        offer = owned_offer(gpu_id, count)
        if offer is None:
            raise GpuplanError(f"--have {count}x{short_id(gpu_id)}: no power draw on file for {gpus()[gpu_id].name} "
                               "(no TDP in the GPU catalog, no measured draw of its computer in data/owning.yaml), "
                               "so its hours cannot be priced: `gpuplan estimate --gpu "
                               f"{short_id(gpu_id)}` times it unpriced")
        out.append(offer)
    return out


def _offers(c: Constraints, in_force: list[Offer]) -> list[Offer]:
    """The offers in force (those that pass the price filter, cheapest per product) that pass the allow-lists, and
    the user's own cards."""
    offers = [o for o in in_force
              if (c.pricing == "any" or (o.interruptible if c.pricing == "spot" else o.pricing == "on_demand"))
              and (not c.providers or o.provider in c.providers) and (not c.gpus or o.gpu_id in c.gpus)]
    return offers + _owned_offers(c)


def recommend(s: Scenario, m: ModelSpec, c: Constraints, explain: bool = True) -> Recommendation:
    """Every setup that fits ``s`` under ``c``, ranked; with ``explain``, the changes that would make one fit
    when none does. Every row is read from a plan (:meth:`Setup.of`)."""
    started = time.perf_counter()
    not_a_module(s, m.name)  # a diffusion trainer or a module's field asked of a decoder LLM: one sentence, no search
    scenario_load(s)  # a load that cannot be simulated as given: the same sentence as estimate's
    if s.task == "infer":  # no card, count or variant changes these (a training search sets sharding, tp and pp,
        scenario_refusal(s)  # which its stack's refusals read); s19: an unknown card in extra_gpus was "nothing fits"
    training_engine(s)  # a serving engine asked of a training search: no variant changes it
    frozen_base(s, full=False)  # nor of a base no trainer loads (a GGUF file); a full fine-tune's LoRA is advised
    why = engine_refusal(s, m) if s.task == "infer" else None
    if why:
        raise GpuplanError(why)
    fitted, context_note = within_context(s, m)  # default lengths past the model's context, shortened (said)
    s = s.model_copy(update=fitted) if fitted else s
    all_offers = load_offers(c.catalogs)
    in_force = cheapest_in_force(all_offers, price_filter(s))  # the catalog filtered once
    offers = _offers(c, in_force)
    cards = {o.gpu_id: gpus()[o.gpu_id] for o in offers}
    references = {g: cheapest_on_demand(in_force, g) for g in cards}
    biggest = max(cards.values(), key=lambda g: g.usable_gib, default=None)
    shipped = m.shipped_format()[0].name if m.quantization else None
    space = _Space(s, m, offers, cards, references, shipped, c.min_headroom)
    with shared_work():  # each pass of the model timed once per card and shape, for every setup that repeats it
        evaluated, fitting, found, pending, split = space.search(c)
    owned = _filter_rank([x for x in found if x.owned], c)
    setups = _rentals(s, found, c)
    for x in setups[: c.top]:  # the scenario as priced: validated for the setups shown only (thousands are ranked)
        x.scenario = x.scenario.model_copy(update={
            "provider": x.provider, "pricing": "spot" if x.pricing in ("spot", "interruptible") else "on_demand"})
    for x in setups[: c.top] + owned[: c.top]:  # the speed model's cost of the change, on the setup's card
        if id(x) in pending:
            labels, given, scenario, gpu = pending[id(x)]
            x.change = _change_note(labels, given, scenario, x, m, gpu)
            if x.change:  # said after the fit, as the row's memory line
                fit, _, rest = x.rationale.partition("; ")
                x.rationale = "; ".join(p for p in (fit, x.change, rest) if p)
    result = Recommendation(setups=setups[: c.top], evaluated=evaluated, fitting=fitting,
                            elapsed_s=time.perf_counter() - started, owned=owned[: c.top])
    if c.deadline_hours is not None and s.task == "train" and s.train_tokens:
        result.fewest = min(setups, key=lambda x: (x.num_gpus, _key(x, c.objective)), default=None)
        if result.fewest is not None:
            result.fewest_line = fewest_line(s, m, result.fewest, c.deadline_hours)
    result.notes = _named_below(c, setups) + _price_notes(s, c, all_offers, cards) + _load_note(s) + \
        stack_left_out(s, cards.values()) + engine_left_out(s, m, c) + _slow_stream_note(s, result.setups)
    if shipped and c.any_quant and s.task == "infer" and s.quant is None:
        result.notes.append(f"the checkpoint ships as {shipped}: rows serve it as shipped (and with an fp8 KV "
                            "cache); re-quantizing it (--quant awq-int4, fp8, int8) needs a converted checkpoint "
                            "and is priced only when asked")
    result.model_exact, result.model_exact_reason = m.exact, m.inexact_reason
    result.defaults = [*m.notes, *([context_note] if context_note else [])]
    result.warnings = [w for w in (inexact_warning(m),) if w] + other_task(s) + [
        w for x in owned[:1] if (w := desktop_warning(s, gpus()[x.gpu_id], x.num_gpus, x.device_peak_gib,
                                                        x.capacity_gib))]
    result.warnings += kernel_warnings(m, [*setups[: c.top], *owned[: c.top]])
    result.resolved = searched(s, m, c, split)
    if explain and c.have and not owned:
        result.owned_changes = _what_fits_owned(s, m, c)
    if not setups and explain:
        with shared_work():  # the relaxations' searches share their passes of the model
            result.changes = _what_would_fit(space, c, biggest, fitting, found, all_offers)
    return result


def kernel_warnings(m: ModelSpec, setups: list[Setup]) -> list[str]:
    """What turning DeepGEMM off costs (:func:`gpuplan.speed.deepgemm.deepgemm_warnings`), said once for each
    card and engine among the rows shown, at the first such row's layout."""
    said: dict[tuple[str, str], list[str]] = {}
    for x in setups:
        if (x.gpu_id, x.scenario.engine) not in said:
            said[x.gpu_id, x.scenario.engine] = [
                f"{x.num_gpus}x {short_id(x.gpu_id)} {x.scenario.engine}: {w}"
                for w in deepgemm_warnings(x.scenario, m, gpus()[x.gpu_id])]
    return [w for words in said.values() for w in words]


def stack_left_out(s: Scenario, cards) -> list[str]:
    """The ``cards`` recommend weighs that the scenario's training stack does not run on
    (:func:`.refusals.stack_card`), left out of its setups (each plan on them is refused): one note per vendor, with
    the refusal's sentence."""
    by_vendor: dict[str, list[GpuSpec]] = {}
    for gpu in cards:
        if stack_card(s, gpu):
            by_vendor.setdefault(gpu.vendor, []).append(gpu)
    return [f"{', '.join(short_id(g.id) for g in out)} left out of stack {s.stack}'s setups: {stack_card(s, out[0])}"
            for out in by_vendor.values()]


def engine_left_out(s: Scenario, m: ModelSpec, c: Constraints) -> list[str]:
    """The cards named in ``--gpus`` that the serving engine does not run the model on (its
    :meth:`~gpuplan.engines.Engine.card_refusal`, or no kernel for the weights' format there:
    :meth:`~gpuplan.engines.Engine.weights_refusal`), or on which its nvfp4 weights are not planned
    (:func:`~gpuplan.plan.refusals.nvfp4_refusal`), each with the refusal's sentence: every plan on them is
    refused, and a card asked for by name is not dropped without a word (s29 walk: ``--engine trtllm --gpus
    mi300x,l4`` showed L4 rows and said nothing of the MI300X; s31: ``--engine vllm --quant nvfp4 --gpus
    h100-sxm,b200`` said nothing of the H100)."""
    if s.task != "infer":
        return []
    engine, fmt, out = engine_for(s), weight_format(s, m)[0].name, []
    for gpu_id in c.gpus:
        gpu = gpus()[gpu_id]
        why = engine.card_refusal(s, gpu) or engine.weights_refusal(s, fmt, gpu) or nvfp4_refusal(s, gpu)
        if why:
            out.append(f"{short_id(gpu_id)} left out: {why}")
    return out


def fewest_line(s: Scenario, m: ModelSpec, x: Setup, deadline_hours: float) -> str:
    """The fewest GPUs that meet the deadline, with the model's synthetic config and token budget when it has
    one (``model_size``)."""
    where = x.provider if x.pricing == "on_demand" else f"{x.provider} {x.pricing.replace('_', '-')}"
    line = (f"fewest GPUs that meet the {deadline_hours:g} h deadline: {x.num_gpus}x {short_id(x.gpu_id)} "
            f"{x.sharding} on {where}, {x.hours:,.1f} h, ${usd_amount(x.usd_total)} (at most {x.hours_high:,.1f} h "
            f"and ${usd_amount(x.usd_total_high)} at the slow end of its likely speed, {x.tokens_per_s_low:,.0f} "
            "tokens/s)")
    if s.model_size:
        from ..model.synthetic import CHINCHILLA_TOKENS_PER_PARAM, nearest_size, param_count

        size = nearest_size(s.model_size)
        budget = (f"{s.train_tokens / 1e9:,.1f}B tokens"
                  + (f" (Chinchilla: {CHINCHILLA_TOKENS_PER_PARAM:g} per parameter, Hoffmann et al. 2022)"
                     if "train_tokens" not in s.model_fields_set and not (s.dataset or s.samples) else ""))
        line += f"; {m.notes[0]} ({param_count(size):,} parameters), {budget}"
    return line


def searched(s: Scenario, m: ModelSpec, c: Constraints, split: bool = False) -> str:
    """The resolved line of a search: the scenario, and the engines, GPU counts and layouts it tries (``split``:
    training's tensor x pipeline-parallel layouts too, tried when no data-parallel one fits)."""
    from ..scenario.describe import describe, laid_out

    engine = None if s.task == "train" or "engine" in s.model_fields_set else "vLLM or transformers"
    counts = f"1-{c.max_gpus}" if c.max_gpus > 1 else "1"
    cards = "the GPUs of --gpus" if c.gpus else "every GPU type with a price"
    profile = engine_for(s)
    layout = "tensor parallel" if profile.tensor_parallel else f"layers split, {profile.layer_split_words}"
    if s.task == "train":
        layout = "data parallel or ZeRO" + (", then tensor x pipeline parallel" if split else "")
    return describe(s, m, engine=engine, hardware=f"{counts} x {cards} ({layout})",
                    batches=laid_out(s, s.model_fields_set, "setup"))


def _what_fits_owned(s: Scenario, m: ModelSpec, c: Constraints) -> list[str]:
    """For each owned card type that nothing fits: the change (a combination when no single one is enough) that
    makes the job fit on all of those cards, as ``estimate`` would advise it."""
    from .fixes import Timing, suggestions

    out = []
    for gpu_id, count in c.have:
        gpu = gpus()[gpu_id]
        layout = {"num_gpus": count, "num_nodes": 1, "gpu": gpu_id}
        if s.task == "train":
            layout.update(sharding="single" if count == 1 else "zero3", tp=1, pp=1)
        else:
            layout.update(sharding=None, tp=1, pp=1)
        asked = s.model_copy(update=layout)  # before the builder's layout: the change is planned from it
        try:
            plan = build(resolve(asked, m))
        except GpuplanError as err:
            out.append(f"your {count}x {short_id(gpu_id)}: {err}")
            continue
        scenario, report = plan.setup.scenario, plan.memory
        where = f"your {count}x {short_id(gpu_id)}" + (f", sharded {scenario.layout}" if count > 1 else "")
        if report.fits and not can_time(gpu):  # it fits, but there is no rate to time or price it by
            out.append(f"{where}: fits ({report.device_peak_gib:.1f} of {gpu.usable_gib:.1f} GiB per card), but "
                       "gpuplan's GPU catalog has no matrix rate for it, so no speed or cost (gpuplan estimate "
                       "gives the memory)")
            continue
        if report.fits:  # it fits, not with the headroom asked: the changes that lower it, timed as estimate's
            timing = Timing(before=plan, asked=asked,
                            plan_of=lambda changed: build(resolve(changed, m), advise=False, recipe=False))
            found = suggestions(scenario, m, gpu, report, timing)
        else:
            found = list(plan.suggestions)  # the advice estimate gives, its speeds the builder's plans'
        fixes = [x for x in found if x.fits and "num_gpus" not in x.fields]
        if fixes:
            fix = fixes[0]  # one card's ZeRO-3 offload sets its sharding: said, as estimate refuses it unsharded
            where += f", sharded {fix.fields['sharding']}" if count == 1 and "sharding" in fix.fields else ""
            out.append(f"{where}: {fix.change} ({fix.cost})" + _owned_run(asked, fix.fields, m))
        else:
            out.append(f"{where}: nothing fits, even with every change on these cards "
                       f"({report.device_peak_gib:.1f} of {gpu.usable_gib:.1f} GiB per card as asked)")
    return out


def _owned_run(s: Scenario, change: dict, m: ModelSpec) -> str:
    """How long the job takes on the user's own cards once ``change`` makes it fit, and its power bill: the plan of
    the changed scenario priced as owned, the figures ``estimate --pricing owned`` prints for it (s20 walk: the line
    gave the change and not the hours, and left out the sharding it was planned with, so that estimate's default,
    DDP, did not fit with the same change). ``s`` is the scenario as asked, before the builder's layout, so the
    changed plan takes the layout ``estimate`` takes with the change (s27 walk: Llama-3.1-70B QLoRA on one RTX
    4090 with ZeRO-3 offload read 145 tokens/s at the micro-batch 1 x 16 that did not fit, where estimate with
    the change plans 2 x 8 at 180)."""
    try:
        plan = build(resolve(s.model_copy(update={**change, "pricing": "owned"}), m))
    except GpuplanError:
        return ""
    cost, speed = plan.cost, plan.speed
    if cost is None or cost.hours is None or speed is None:
        return ""
    return (f"; with it {cost.hours:,.1f} h at {speed.tokens_per_s:,.0f} tokens/s, ${cost.usd_total:,.2f} of "
            "power")


# Rows of a ``--users`` or ``--rate`` search re-ranked on their own simulated run, as ``estimate`` and ``capacity``
# read it (a run is 0.08 to 0.4 s: the first ones of a search, best first, and no more than this many).
USERS_SIMULATED = 6


def _on_load(s: Scenario, ranked: list[Setup], c: Constraints) -> list[Setup]:
    """``ranked`` with its best rows priced and ranked on their simulated run of the load asked
    (:func:`gpuplan.plan.build.serving_runs`, the run ``estimate --users/--rate`` prices on,
    :func:`~gpuplan.plan.build.priced_on_load`): rows are run best first by :func:`_floor` until ``c.top`` of them
    rank ahead of the next row's floor, at most :data:`USERS_SIMULATED` of them; a row whose open-loop queue grows
    ranks after those that keep up. A closed loop serves no more than its users at once, so the decode step at all
    of them (or at what the KV pool holds) is about the most it serves (Qwen3-32B, 50 users on an H100: the run 101
    tok/s, the step at the pool's 3, 91: the run's contexts are shorter on average; session 22, the s20b walk's left
    3: on 2x H200, 40 users thinking 15 s read 53 tok/s a user at the decode step and 92 in the run). An open loop
    serves no more than arrives, ``rate x output tokens``: its decode step at ``batch_size`` (1) is no bound at all
    (Llama-3.1-8B at 4 requests/s ranked an RTX 4090 first at 49 tokens/s, a fifth of the 800 the rate asks)."""
    if s.task != "infer" or not (s.users or s.rate_rps) or not ranked:
        return ranked
    order = _rate_order(ranked, s, c) if not s.users else ranked
    done: list[Setup] = []
    for x in order[:USERS_SIMULATED]:
        kept = sorted(_key(y, c.objective) for y in done if not _behind(y))[: c.top]
        if len(kept) == c.top and kept[-1] <= _floor(x, s, c.objective):
            break
        done.append(_run_row(x))
    rest = [_unrun_row(x, s) for x in order[len(done):]] if not s.users else order[len(done):]
    done.sort(key=lambda y: (float(f"{_key(y, c.objective):.3g}"), -y.tokens_per_s))
    return _mark_pareto([y for y in done if not _behind(y)] + rest + [y for y in done if _behind(y)])


def _floor(x: Setup, s: Scenario, objective: str) -> float:
    """The best ``objective`` key row ``x``'s run can reach: its decode-step key under ``users``; under a rate,
    the key were it served every output token it can (:func:`_most_served`) at :func:`_floor_price`."""
    if s.users:
        return _key(x, objective)
    return _objective(_floor_price(x, s), _most_served(x, s), objective)


def _floor_price(x: Setup, s: Scenario) -> float:
    """Row ``x``'s least $ per million output tokens under a rate: ``usd_per_hour / (most served x 3,600) x 1e6``."""
    return x.usd_per_hour / (_most_served(x, s) * 3600) * 1e6


def _rate_order(rows: list[Setup], s: Scenario, c: Constraints) -> list[Setup]:
    """``rows`` best first by their floor under a rate (:func:`_floor`), rows that would not hold it as a steady
    state (:func:`_steady`) last: best-first on the cheap floor (the rate's tokens at the row's $/h), each row's
    closed-form bound (:func:`gpuplan.plan.build.saturation_of`) computed when it comes first, and only until the
    rows a search shows and runs are in order; the rest follow on the floor known of them. A bound is computed once
    for the rows that differ only in their offer's price or in links the speed does not read
    (:func:`gpuplan.plan.build.links_that_matter`)."""
    heap = [((False, _floor(x, s, c.objective)), i, False, x) for i, x in enumerate(rows)]
    heapq.heapify(heap)
    seen: dict[tuple, float | None] = {}
    out: list[Setup] = []
    while heap and len(out) < c.top + USERS_SIMULATED:
        _, i, bounded, x = heapq.heappop(heap)
        if bounded:
            out.append(x)
            continue
        setup = x.plan.setup
        key = (x.gpu_id, x.num_gpus, x.sharding, tuple(x.techniques), setup.scenario.tp, setup.scenario.pp,
               links_that_matter(setup.scenario, setup.gpu, x.plan.offer.network if x.plan.offer else Network()))
        if key not in seen:
            seen[key] = saturation_of(setup, x.plan)
        x.saturated_rps = seen[key]
        heapq.heappush(heap, ((_steady(x, s) is False, _floor(x, s, c.objective)), i, True, x))
    return out + [x for *_, x in sorted(heap, key=lambda h: h[:2])]


def _steady(x: Setup, s: Scenario) -> bool | None:
    """Whether row ``x`` holds the rate as a steady state, as capacity judges a rate: under
    :data:`~gpuplan.serving.capacity.STABLE_LOAD` of the requests/s its engine full completes (closed form); None
    where that is not known."""
    return None if x.saturated_rps is None else s.rate_rps <= STABLE_LOAD * x.saturated_rps


def _most_served(x: Setup, s: Scenario) -> float:
    """The most output tokens/s an open-loop run of row ``x`` can serve: what the rate asks
    (``rate_rps x output_tokens``: no run serves more than arrives), or less where its engine full completes fewer
    requests/s (``saturated_rps``: capacity's closed-form bound, :func:`_rate_order`)."""
    return max(s.output_tokens, 1) * min(s.rate_rps, x.saturated_rps or s.rate_rps)


def _behind(x: Setup) -> bool:
    """Whether row ``x``'s simulated open-loop run fell behind its rate (its queue grew)."""
    return x.plan.load is not None and x.plan.load.falls_behind


def _run_row(x: Setup) -> Setup:
    """Row ``x`` priced at the output tokens/s its simulated run served (the range scaled with it), its streaming
    rate a user the run's mean TPOT; unchanged where its engine's scheduler is not simulated."""
    plan = priced_on_load(serving_runs(x.plan.setup, x.plan))
    run = plan.load
    if run is None or not run.served[0] or plan.cost is None:
        return x
    served = run.served[0]  # the steady window's, as the price reads it (build.priced_on_load) and capacity judges
    scale = served / x.tokens_per_s
    row = x.model_copy(update={
        "tokens_per_s": served, "tokens_per_s_low": x.tokens_per_s_low * scale,
        "tokens_per_s_high": x.tokens_per_s_high * scale, "usd_per_million_tokens": plan.cost.usd_per_million_tokens,
        "tokens_per_s_per_user": 1000 / run.mean_tpot_ms if run.mean_tpot_ms else x.tokens_per_s_per_user,
        "plan": plan})
    behind = (f"; its queue grows at {run.load_words}: it completed {run.request_throughput:,.3g} requests/s "
              f"(`gpuplan capacity --rate` finds the rate it serves)") if run.falls_behind else ""
    row.rationale = x.rationale.rsplit("; $", 1)[0] + (
        f"; ${row.usd_per_million_tokens:,.3g} per million tokens at the {row.tokens_per_s:,.0f} tokens/s its "
        f"simulated run of {_load_of(run)} served ({_step_words(x, run)}: {x.tokens_per_s:,.0f}){behind}")
    return row


def _load_of(run) -> str:
    """The load of a run as the row says it: "the 40 users", "4 requests/s"."""
    return f"the {run.load_words}" if run.mode == "closed loop" else run.load_words


def _step_words(x: Setup, run) -> str:
    """What row ``x``'s speed before its run read: the decode step at all the users at once, or at the batch."""
    if run.mode == "closed loop":
        return "decode step at all of them at once"
    batch = x.scenario.batch_size
    return f"decode step at {batch:,} request{'s' if batch != 1 else ''} at once"


def _unrun_row(x: Setup, s: Scenario) -> Setup:
    """A row of a ``--rate`` search left unsimulated (its floor ranks it below the rows shown): priced at that floor,
    the most it could serve being what the rate asks (:func:`_floor`), and said so: its decode step at
    ``batch_size`` is no bound on what a batched run serves."""
    asked, most = s.rate_rps * max(s.output_tokens, 1), _most_served(x, s)
    scale = most / x.tokens_per_s
    row = x.model_copy(update={"usd_per_million_tokens": _floor_price(x, s), "tokens_per_s": most,
                               "tokens_per_s_low": x.tokens_per_s_low * scale,
                               "tokens_per_s_high": x.tokens_per_s_high * scale})
    why = (f"no run serves more than the {asked:,.0f} output tokens/s {s.rate_rps:,g} requests/s ask" if most >= asked
           else f"its engine full serves at most {most:,.0f} of the {asked:,.0f} output tokens/s {s.rate_rps:,g} "
           "requests/s ask")
    row.rationale = x.rationale.rsplit("; $", 1)[0] + (
        f"; at least ${row.usd_per_million_tokens:,.3g} per million tokens: not simulated, and {why}")
    return row


# Tokens/s a reader keeps up with: silent reading runs about 238 words/min, fast readers about 400 (Brysbaert 2019,
# "How many words do we read per minute?", J. Memory and Language 109, 104047: 238 for non-fiction); at about 1.3
# tokens a word (Llama-3-class tokenizers on English) that is 238 / 60 * 1.3 = 5.2 to 400 / 60 * 1.3 = 8.7 tokens/s:
# a stream under 10 tokens/s is slower than most people read it.
READING_TOKENS_PER_S = 10.0


def _slow_stream_note(s: Scenario, rows: list[Setup]) -> list[str]:
    """Where the best serving row streams each user fewer than :data:`READING_TOKENS_PER_S` tokens/s (its
    ``tokens_per_s_per_user``: one over its decode step, or its simulated run's mean TPOT), a note that recommend
    ranks on price and throughput, and that ``gpuplan capacity --tpot`` (its per-token latency SLO, seconds) ranks
    on a latency target instead."""
    best = rows[0].tokens_per_s_per_user if rows and s.task == "infer" else None
    if best is None or best >= READING_TOKENS_PER_S:
        return []
    tpot = 1 / READING_TOKENS_PER_S
    return [f"the best row streams {best:.1f} tokens/s to each user, slower than people read (about "
            f"{READING_TOKENS_PER_S:.0f}): `gpuplan capacity --tpot {tpot:g}` (with the same model, load and request "
            "lengths) ranks setups on that per-token latency target"]


def _load_note(s: Scenario) -> list[str]:
    """What the rows' price reads when a load is asked (``users`` or ``rate_rps``): the best rows their simulated
    run (:func:`_on_load`); the rest, with ``users``, the decode step at all users at once, with a rate, the floor
    of serving every token it asks (:func:`_unrun_row`)."""
    if s.task != "infer" or not (s.users or s.rate_rps):
        return []
    if s.users:
        think = f", each thinking {s.think_time_s:g} s between requests" if s.think_time_s else ""
        return [f"$/M tok: the best rows (up to {USERS_SIMULATED}) are priced on their simulated run of {s.users:,} "
                f"users{think}, as `gpuplan estimate --users` and `gpuplan capacity` price them; a row whose "
                f"tokens/s do not say 'simulated run' is priced at its decode step at {s.users:,} requests at "
                "once (or as many as its KV pool holds), about the most its run serves"]
    load = f"--rate {s.rate_rps:,g}"
    return [f"$/M tok: the best rows (up to {USERS_SIMULATED}) are priced on their simulated run of {load}, as "
            f"`gpuplan estimate {load}` prices it, a row whose queue grows ranked after those that keep up; a row "
            "not simulated is priced at the least it could be, had it served every token the rate asks; "
            f"`gpuplan capacity {load}` ranks setups on the latency each run gives"]


def _named_below(c: Constraints, ranked: list[Setup]) -> list[str]:
    """The cards named in ``--gpus`` that have rows, none of them among the ``c.top`` shown: each one's best row and
    its rank (s25 walk: ``--gpus l4,a10g,rtx-4090,l40s`` showed RTX 4090 and L40S rows and said nothing of the L4 and
    the A10G; capacity's notes say it of its own, :func:`gpuplan.plan.capacity._left_out`)."""
    shown, out = {x.gpu_id for x in ranked[: c.top]}, []
    for gpu_id in c.gpus:
        rank = next((i for i, x in enumerate(ranked, 1) if x.gpu_id == gpu_id), None)
        if gpu_id in shown or rank is None:
            continue
        x = ranked[rank - 1]
        out.append(f"{gpus()[gpu_id].name}: its best setup ranks #{rank}, below the {c.top} shown ({x.num_gpus}x, "
                   f"{x.tokens_per_s:,.0f} tokens/s, ${x.usd_per_million_tokens:,.3g} per million tokens): raise "
                   f"--top to {rank}, or give --gpus {gpu_id} alone")
    return out


def _price_notes(s: Scenario, c: Constraints, all_offers: list[Offer], cards: dict) -> list[str]:
    """What the price filter left out, and the GPUs asked for that have no price at all."""
    notes = [f"{n} offers left out: {why} (--max-price-age-days, --include-low-confidence)"
             for why, n in left_out(all_offers, s).items() if n]
    notes += [f"no price for {gpus()[g].name} in the offers in force" for g in c.gpus if g not in cards]
    if c.pricing != "on_demand":
        notes.append(spot_rows_missing())
        notes.append(SPOT_CAPACITY)
    return notes


# what the spot hours leave out (review 3, question 3: 64 H100s on AWS spot ranked first for a 89 h pretraining run)
SPOT_CAPACITY = ("spot hours count restarts after interruptions (Daly's overhead) but not waiting for spot capacity: "
                 "the cards must be free to start and to come back, which for many GPUs over days is not assured")


@dataclass
class _Space:
    """What every search of one ``recommend`` shares, its relaxations' included (:func:`_what_would_fit`): the
    scenario, model, offers, cards and headroom, and each variant x layout worked out once (``units``: a wider
    search, more GPUs or more methods, holds the narrower one's units and reads them as they are)."""

    s: Scenario
    m: ModelSpec
    offers: list[Offer]
    cards: dict[str, GpuSpec]
    references: dict
    shipped: str | None
    headroom: float
    units: dict = field(default_factory=dict)

    def search(self, c: Constraints) -> tuple[int, int, list[Setup], dict, bool]:
        """(setups evaluated, fitting, the rows, what their change notes need, split) of the search under ``c``:
        training's tensor x pipeline-parallel layouts where sharding alone fits no card (the stacks that split
        models)."""
        evaluated, fitting, setups, pending = _search(self, c)
        split = self.s.task == "train" and not fitting and bool(STACKS[self.s.stack].model_parallel or c.any_stack)
        if split:
            more, fitting, setups, pending = _search(self, c, split=True)
            evaluated += more
        return evaluated, fitting, setups, pending, split


def _search(space: _Space, c: Constraints, split: bool = False) -> tuple[int, int, list[Setup], dict]:
    """Every setup that fits: each variant x layout (``split``: the tensor x pipeline-parallel ones) validated and
    refused once without a card, its memory estimated once (where the card does not change it) and reported on
    every card, and where it fits, a plan on each of the card's offers (:func:`_unit`, each worked out once in the
    ``space``). Returns (setups evaluated, fitting, the rows, what their change notes need)."""
    s = space.s
    evaluated, fitting, setups = 0, 0, []
    as_given: dict[tuple, tuple] = {}  # layout -> (scenario as given on it, its allocator-level bytes)
    pending: dict[int, tuple] = {}  # setup -> what its change note needs (written for the setups shown only)
    for labels, change in technique_variants(s, c, space.shipped):
        for layout in _layouts(s, space.m, c, change.get("stack", s.stack), split):
            key = tuple(sorted(layout.items()))
            unit = (tuple(labels), tuple(sorted(change.items())), key)
            if unit not in space.units:
                space.units[unit] = _unit(space, labels, change, layout)
            if space.units[unit] is None:  # refused
                continue
            scenario, shared, counted, rows = space.units[unit]
            if not change:
                as_given[key] = (scenario, shared)
            evaluated += counted
            for gpu, priced in rows:
                fitting += 1
                if change and shared:
                    pending.update({id(x): (labels, as_given.get(key), scenario, gpu) for x in priced})
                setups += priced
    return evaluated, fitting, setups, pending


def _unit(space: _Space, labels: list[str], change: dict, layout: dict) -> tuple | None:
    """One variant x layout of the search: (its scenario without a card, its memory without a card, the cards it was
    evaluated on, [(card, its priced rows)] for each card it fits), or None where its stack refuses it."""
    s, m = space.s, space.m
    try:  # a stack refuses what it cannot run (torchtune with ZeRO, Unsloth over FSDP...)
        scenario = s.model_copy(update={**change, **layout, "gpu": None})
        check(scenario, m, None)
    except GpuplanError:
        return None
    shared = None if scenario.task == "infer" and engine_for(scenario).card_sized else \
        estimate_memory(scenario, m, None)
    accumulated = _accumulated(scenario, m)
    laid = _Ladder(scenario, m) if _free(s, scenario) else None
    counted, rows = 0, []
    for gpu in space.cards.values():
        if advice_lacks(s, scenario, gpu):  # a variant or layout the card cannot run (8-bit AdamW on a Mac)
            continue
        counted += 1
        try:  # a card the catalog gives no rate for this precision (A10G, Gaudi at fp32) is left out,
            plan, priced = _on_card(scenario, m, space.headroom, gpu, laid, accumulated, shared, labels,
                                    space.offers, space.references[gpu.id])
        except GpuplanError:  # as compare() leaves it out; it divided by zero here (fuzz_s16)
            continue
        if plan is not None:
            rows.append((gpu, priced))
    return scenario, shared, counted, rows


def _on_card(scenario, m, headroom: float, gpu: GpuSpec, laid, accumulated, shared, labels, offers, reference):
    """(memory plan, priced setups) of one layout on ``gpu`` where it fits, else (None, []): the ladder's layout,
    else the accumulated one, else the scenario's own (:func:`_search`)."""
    speeds: dict = {}  # by class of links: the layout's speed, where the ladder timed it
    plan = laid.plan(gpu, headroom, speeds) if laid else None
    if plan is None and accumulated:
        plan = _fitting(accumulated[0], m, gpu, accumulated[1], headroom)
    plan = plan or _fitting(scenario, m, gpu, shared, headroom)
    if plan is None:
        return None, []
    return plan, _priced(plan, labels, offers, reference, speeds)


# the scenario field each technique's word changes: a word is said only where its field changes
TECHNIQUE_FIELDS = {"gradient checkpointing": "grad_checkpointing", "8-bit AdamW": "optimizer",
                    "paged 8-bit AdamW": "optimizer",
                    "bf16 embeddings": "qlora_fp32_upcast", "fp16 embeddings": "qlora_fp32_upcast",
                    "fp8 KV cache": "kv_cache_dtype"}


def _said(labels: list[str], effect: frozenset) -> list[str]:
    """The words of a variant's techniques less those whose field the scenario has already (QLoRA's
    "gradient checkpointing" where the stack's recipe turned it on: the row changed nothing there)."""
    changed = {k for k, _ in effect}
    return [w for w in labels if TECHNIQUE_FIELDS.get(w, "") in changed or w not in TECHNIQUE_FIELDS]


def _free(s: Scenario, scenario: Scenario) -> bool:
    """Whether the micro-batch of a training row is the recipe's to choose: neither the user nor the variant
    (recommend's own "micro-batch 4") set it, nor the user the accumulation."""
    return scenario.task == "train" and "micro_batch_size" not in scenario.model_fields_set and \
        "grad_accum_steps" not in s.model_fields_set


def _accumulated(scenario: Scenario, m: ModelSpec):
    """(``scenario`` at the recipe's accumulation, its memory without a card) for a training row whose accumulation
    is not set (:func:`gpuplan.plan.layout.accumulation`: the same on every card, as a ranked setup launches),
    else None."""
    if scenario.task != "train" or "grad_accum_steps" in scenario.model_fields_set:
        return None
    accum = accumulation(scenario, recipe_batch(scenario, m))[0]
    if accum == scenario.grad_accum_steps:
        return None
    laid = scenario.model_copy(update={"grad_accum_steps": accum})
    return laid, estimate_memory(laid, m, None)


class _Ladder:
    """The recipe's layout of one training row whose micro-batch is free (:func:`_free`) on each card, decided as
    the builder decides it (:func:`gpuplan.plan.layout.layout`, the one place), so that every row is ranked at the
    layout ``estimate`` and ``gpuplan launch`` plan for it, shown or not. The fast path of the search: each
    micro-batch x accumulation is validated and its memory estimated once, without a card, and reported on every
    card (:func:`_fitting`)."""

    def __init__(self, scenario: Scenario, m: ModelSpec):
        self.scenario, self.m = scenario, m
        self.global_batch = recipe_batch(scenario, m)
        self.tried: dict[tuple[int, int], tuple[Scenario, Any] | None] = {}

    def _at(self, s, m, gpu: GpuSpec, mb: int, accum: int) -> Plan | None:
        """The memory plan of the layout on ``gpu`` where it fits (``layout``'s ``plan_at``)."""
        if (mb, accum) not in self.tried:
            try:
                laid = self.scenario.model_copy(update={"micro_batch_size": mb, "grad_accum_steps": accum})
                check(laid, m, None)
                self.tried[mb, accum] = laid, estimate_memory(laid, m, None)
            except GpuplanError:  # refused at this micro-batch
                self.tried[mb, accum] = None
        tried = self.tried[mb, accum]
        return None if tried is None else _fitting(tried[0], m, gpu, tried[1], 0.0)

    def plan(self, gpu: GpuSpec, headroom: float, speeds: dict) -> Plan | None:
        """The memory plan at the builder's layout on ``gpu``, with why, where it leaves the ``headroom`` asked;
        else None (the row is ranked at the scenario's micro-batch, as before the layout). ``speeds``: given the
        layout's speed on the card's own links, as the ladder timed it (:func:`gpuplan.plan.build.own_links`)."""
        plans: dict = {}
        mb, accum, why = recipe_layout(self.scenario, self.m, gpu, self.global_batch, plans, self._at)
        if (mb, accum) not in plans:  # none fits: the scenario's own layout, as the builder keeps it
            return None
        plan, speed = plans[mb, accum]
        if plan.memory.device_peak_gib > gpu.usable_gib * (1 - headroom):
            return None
        plan._setup = replace(plan.setup, layout_why=why)
        speeds.update(own_links(plan.setup.scenario, gpu, speed))
        return plan


def _fitting(scenario: Scenario, m: ModelSpec, gpu: GpuSpec, shared, headroom: float) -> Plan | None:
    """The memory plan of ``scenario`` on ``gpu`` when it runs there and fits with the ``headroom`` asked (a share
    of the card's usable memory left free), else None.
    ``shared``: the layout's memory estimated without a card, reported on this one unless the card changes it
    (Unsloth's fused loss, Megatron's fp8 weight transposes: :meth:`gpuplan.stacks.base.Stack.memory_reads_card`)."""
    room = gpu.usable_gib * (1 - headroom)
    if shared is not None and not stack_for(scenario).memory_reads_card(scenario) and \
            device_gib(scenario, shared, gpu) > room:  # the layout's memory against the card, before it is placed
        return None  # there (placing it changes none of what the device level reads: the GPUs, the display)
    try:
        r = resolve(scenario.on_card(gpu.id), m, gpu)
    except GpuplanError:  # the stack may refuse the card's precision (fp16 where it has no bf16)
        return None
    plan = build(r, memory_only=True, memory=card_memory(r, shared))  # what fits is the plan's verdict
    return plan if plan.memory.fits and plan.memory.device_peak_gib <= room else None


def _change_note(labels: list[str], given, scenario: Scenario, x: Setup, m: ModelSpec, gpu: GpuSpec) -> str:
    """``unsloth: 87.4 -> 23.1 GiB, 33% faster steps (...)``: the row's device peak on its card against the scenario
    as given at the row's layout on the same card (the numbers ``estimate``'s suggestion prints), and the speed cost
    (the speed model's, on ``gpu``) of the variant's techniques or stack."""
    from .fixes import speed_change

    if given is None or given[1] is None:
        return ""
    as_given = {k: v for k, v in given[0] if k != "gpu" and getattr(scenario, k) != v}
    before = probe(x.scenario.model_copy(update=as_given), m)[1]
    return (f"{' + '.join(labels)}: {before:.1f} -> {x.device_peak_gib:.1f} GiB, "
            f"{speed_change(given[0], scenario, m, gpu)}")


def _priced(plan: Plan, labels: list[str], offers: list[Offer], reference: tuple[float, str] | None,
            speeds: dict) -> list[Setup]:
    """A row for each of the card's offers that holds the setup, each read from the plan built on that offer (the
    memory plan made once, the speed once per class of links, kept in ``speeds``); spot compared with
    ``reference``, the cheapest on-demand price of the card anywhere."""
    s, gpu = plan.setup.scenario, plan.setup.gpu
    per_node = (s.world_size if s.task == "train" else s.tp * s.pp) // s.num_nodes
    said = [embedding_words(s.precision) if w == "bf16 embeddings" else w for w in labels]  # fp16 off bf16 cards
    out = []
    for offer in offers:
        if offer.gpu_id != gpu.id or per_node > max_per_node(offer):
            continue
        if offer.pricing == "owned" and offer.gpu_count < s.world_size:
            continue
        if s.num_nodes > 1 and not multi_node(offer):
            continue  # the provider sells no fabric between machines
        row = build(plan.setup, Offers(candidates=(offer,), reference=reference), advise=False, base=plan,
                    speeds=speeds, recipe=False, layout=False)
        if row.cost is not None:  # a card without a matrix rate (Apple silicon) fits but cannot be timed or priced
            out.append(Setup.of(row, said, offer))
    return out


def _no_price(s: Scenario, c: Constraints, all_offers: list[Offer]) -> str:
    """Why no offer is left: the GPUs asked for have no price (at all, or none recent and confident enough)."""
    names = ", ".join(gpus()[g].name for g in c.gpus) or "the GPUs asked for"
    rows = [o for o in all_offers if (not c.gpus or o.gpu_id in c.gpus) and (not c.providers or o.provider in
                                                                              c.providers)]
    if c.gpus and not rows:
        return f"no price for {names}: no offer of it is in force (`gpuplan prices update` or --catalog FILE)"
    if rows and not cheapest_in_force(rows, price_filter(s)):
        return (f"no price for {names} recent and confident enough: its {len(rows)} offers are older than "
                f"{s.max_price_age_days} days or low confidence (--max-price-age-days, --include-low-confidence)")
    return f"no {c.pricing.replace('_', '-')} offer for {names} matches --providers / --pricing: widen them"


def timed_link(s: Scenario, gpu: GpuSpec, offer: Offer) -> tuple[Link, bool]:
    """The link the plan's collectives were timed on, and whether it is the fabric between nodes: a training job's
    data-parallel ring over several nodes runs on the slowest of the node's links and the fabric's share per GPU
    (gpuplan/speed/training.py ``_Comms.dp_link``, :func:`~gpuplan.speed.comms.slowest_link`); else the node's
    own."""
    intra = intra_node_link(gpu, offer.network)
    if s.task != "train" or s.num_nodes <= 1:
        return intra, False
    link = slowest_link(gpu, offer.network, s.num_nodes, s.num_gpus) or intra
    return link, link is not intra


def _rationale(x: Setup, gpu: GpuSpec, speed, link: tuple[Link, bool]) -> str:
    """Memory, then communication, then budget, as the guides order the decision."""
    parts = [f"fits with {x.headroom_pct:.0f}% headroom ({x.device_peak_gib:,.2f} of {x.capacity_gib:,.2f} GiB "
             "usable per GPU)"]
    if gpu.vendor == "AMD" and speed.ttft_s is not None and ENGINES[x.scenario.engine].rocm_build:
        moe = any("moe" in kind for kind in x.plan.model.layer_kinds)
        parts.append(f"AMD: the engine's ROCm build, its decode timed {class_slowdown(moe):.2f}x the CUDA build's "
                     f"on the same datasheet (measured: bench/results/{'rocm_share' if moe else 'rocm_dense'}.md)")
    elif gpu.vendor not in ("NVIDIA", "Apple"):  # Apple: the engines without Metal are refused (Engine.metal)
        parts.append(_vendor_said(x.scenario, gpu))
    parts.append(links_said(x.num_gpus, *link, speed))
    if speed.bound.startswith("host"):
        parts.append("eager decoding: a serving engine (--engine vllm) is several times faster")
    parts.append(f"${x.usd_per_million_tokens:,.3g} per million tokens at {x.tokens_per_s:,.0f} tokens/s "
                 f"(likely {x.tokens_per_s_low:,.0f}-{x.tokens_per_s_high:,.0f}: ranked on the central value)")
    return "; ".join(parts)


def _vendor_said(s: Scenario, gpu: GpuSpec) -> str:
    """What the row's software is on a card off NVIDIA: a training stack runs there fully or in part (the others were
    refused: :mod:`gpuplan.scenario.stack_cards`, whose partial warning the plan carries); a serving engine without a
    measured ROCm share is timed from the datasheet as its CUDA build is."""
    label = stack_cards.LABELS.get(gpu.vendor, gpu.vendor)
    if s.task == "train":
        part = " in part (the plan's warning says what is missing)" if stack_cards.warning(s.stack, gpu.vendor) else ""
        return f"{label}: stack {s.stack} runs there{part}"
    engine = ENGINES[s.engine]
    return (f"{label}: {engine.label or engine.name} timed from the datasheet as its CUDA build, no run on this "
            "vendor measured (uncalibrated)")


# Below this share of the step, the links of a PCIe card are not worth replacing (the plan's own breakdown).
LINKS_MINOR_SHARE = 0.05


def links_said(num_gpus: int, link: Link, between_nodes: bool, speed) -> str:
    """What the plan's own breakdown says of its links (``link``: the one its speed was timed on): the share of
    the step its collectives take (``speed.communication_s`` of ``step_time_s``: tensor-parallel all-reduces when
    serving, the exposed collectives when training), and a verdict only where the share decides it: over PCIe,
    under :data:`LINKS_MINOR_SHARE` "PCIe is enough", above it faster links would shorten the step. Over NVLink (or
    AMD's Infinity Fabric) the share is said and nothing more: how much slower PCIe would be is not in this plan.
    Over the fabric between nodes (``between_nodes``) the share is said of it, where the node's NVLink was named
    for a job over 8 nodes whose collectives the fabric bounds."""
    if num_gpus == 1:
        return "one GPU: no interconnect needed"
    share = min(speed.communication_s / speed.step_time_s, 1.0) if speed.step_time_s else 0.0
    # serving: the TP all-reduces sit in the decode step; training: what the overlap leaves of the collectives
    what = ("collectives take", "decode step") if speed.ttft_s is not None else \
        ("collectives not hidden behind compute take", "step")
    said = f"{speed.bound}-bound; {what[0]} {share:.0%} of the {what[1]} over {link.label}"
    if between_nodes:  # the fabric between nodes: NVLink inside a node would not shorten it
        return said + " between nodes"
    if link.kind in ("nvlink", "infinity-fabric"):
        return said + (" (communication-bound even there)" if speed.bound == "communication" else "")
    if share < LINKS_MINOR_SHARE:
        return said + ", so PCIe is enough"
    return said + ": faster GPU-to-GPU links (NVLink) would shorten it"


def _key(x: Setup, objective: str) -> float:
    return _objective(x.usd_per_million_tokens, x.tokens_per_s, objective)


def _objective(usd_per_million: float, tokens_per_s: float, objective: str) -> float:
    """What ``objective`` ranks by, lower first: the price, the time a token takes, or their geometric mean."""
    speed = 1 / tokens_per_s
    return {"cost": usd_per_million, "time": speed, "balanced": math.sqrt(usd_per_million * speed)}[objective]


# a technique that changes the job (8-bit AdamW's moments, QLoRA's 4-bit base) is taken only where it saves more than
# this share of the cost: LoRA's optimizer is so small that 8-bit AdamW's step is 0.004 % faster (Gemma-3-12B, H100)
SAME_COST = 0.005


def _best_of(group: list[Setup], objective: str) -> Setup:
    """The setup one row shows for a (GPU, count, provider, pricing): the cheapest by ``objective``, except that a
    setup within :data:`SAME_COST` of it with fewer techniques (changing less of the job as asked) is taken first."""
    least = min(_key(x, objective) for x in group)
    near = [x for x in group if _key(x, objective) <= least * (1 + SAME_COST)]
    return min(near, key=lambda x: (len(x.techniques), _key(x, objective)))


def _filter_rank(setups: list[Setup], c: Constraints) -> list[Setup]:
    kept = [x for x in setups  # met at the slow end of the likely range, not only at the central estimate
            if (c.budget_usd is None or x.usd_total is None or x.usd_total_high <= c.budget_usd)
            and (c.deadline_hours is None or x.hours is None or x.hours_high <= c.deadline_hours)]
    groups: dict[tuple, list[Setup]] = {}  # one per (GPU, count, provider, pricing): its best offer, techniques...
    for x in kept:
        groups.setdefault((x.gpu_id,) if c.per_gpu else (x.gpu_id, x.num_gpus, x.provider, x.pricing), []).append(x)
    best = {k: _best_of(group, c.objective) for k, group in groups.items()}
    # equal cost (3 significant digits): the faster first, then the fewer GPUs, then the roomier
    ranked = sorted(best.values(), key=lambda x: (float(f"{_key(x, c.objective):.3g}"), -x.tokens_per_s, x.num_gpus,
                                                  -x.headroom_pct))
    return _mark_pareto(ranked)


def _mark_pareto(ranked: list[Setup]) -> list[Setup]:
    """``ranked`` with each row's ``pareto``: on the front of cost against time."""
    for x in ranked:
        x.pareto = not any(y.usd_per_million_tokens <= x.usd_per_million_tokens and y.tokens_per_s >= x.tokens_per_s
                           and (y.usd_per_million_tokens, y.tokens_per_s) != (x.usd_per_million_tokens,
                                                                             x.tokens_per_s) for y in ranked)
    return ranked


def _rentals(s: Scenario, setups: list[Setup], c: Constraints) -> list[Setup]:
    """The rented rows of a search under ``c``, filtered and ranked, the best priced on their simulated load."""
    return _on_load(s, _filter_rank([x for x in setups if not x.owned], c), c)


def _what_would_fit(space: _Space, c: Constraints, biggest: GpuSpec | None, fitting: int, found: list[Setup],
                    all_offers: list[Offer] = ()) -> list[str]:
    """When nothing is left: each single relaxation that yields a setup (a bigger budget or a later deadline,
    LoRA/QLoRA, quantization, more GPUs, shorter sequences), with the best setup it gives, best first. Of the
    GPU counts and sequence lengths, only the smallest change that works is listed. A bigger budget or a later
    deadline filters the search's own rows (``found``: only the filter differs); more methods, stacks or GPUs
    search again in the same ``space``, reading the variant x layouts it worked out already."""
    if biggest is None:
        return [_no_price(space.s, c, all_offers)]
    out: list[tuple[float, str]] = []
    done: set[str] = set()
    for group, label, best in _relaxations(space, c, fitting, found):
        if group in done or (group == "both" and out):  # one of the two alone is enough
            continue
        x = best()
        if x is None:
            continue
        done.add(group)
        if group == "budget":
            label = f"raise the budget to ${math.ceil(x.usd_total_high or 0):,} (--budget-usd)"
        elif group == "deadline":
            label = f"extend the deadline to {math.ceil((x.hours_high or 0) * 10) / 10:,} hours (--deadline-hours)"
        elif group == "both":
            label = (f"raise the budget to ${math.ceil(x.usd_total_high or 0):,} and the deadline to "
                     f"{math.ceil((x.hours_high or 0) * 10) / 10:,} hours")
        total = f", ${usd_amount(x.usd_total)}" if x.usd_total is not None else ""
        out.append((_key(x, c.objective), f"{label}: {x.num_gpus}x {x.gpu_id} "
                    f"{'+'.join([x.sharding, *x.techniques])} on {x.offer}{total} "
                    f"(${x.usd_per_million_tokens:,.2f}/M tokens)"))
    return [text for _, text in sorted(out)] or [
        f"nothing in the catalog fits, even on {c.max_gpus} x {biggest.name}: a smaller model or more GPUs"]


def _relaxations(space: _Space, c: Constraints, fitting: int, found: list[Setup]) -> Iterator[tuple]:
    """(group, label, the best rented setup it gives or None, when called) of each relaxation, in the order they
    are tried. The budget and the deadline rank the first search's rows under the wider filter (``found``); the
    method, the stack and the GPU count search again in ``space``; a shorter length is another scenario, tried
    where no ``preset`` says the lengths (s29: a shorter prompt under ``--preset chat`` was refused, "drop
    prompt_tokens", and the whole answer with it)."""
    s, m, base = space.s, space.m, {**c.__dict__, "top": 1}

    def relaxed(rows: list[Setup] | None = None, **change: Any):
        wider = Constraints(**{**base, **change})
        return lambda: next(iter(_rentals(s, space.search(wider)[2] if rows is None else rows, wider)), None)

    if fitting and c.budget_usd is not None:
        yield "budget", "", relaxed(found, budget_usd=None)
    if fitting and c.deadline_hours is not None:
        yield "deadline", "", relaxed(found, deadline_hours=None)
    if fitting and c.budget_usd is not None and c.deadline_hours is not None:
        yield "both", "", relaxed(found, budget_usd=None, deadline_hours=None)
    if s.task == "train" and not c.any_method:
        yield "method", "allow LoRA/QLoRA (--any-method)", relaxed(any_method=True)
    if s.task == "train" and not c.any_stack:
        yield "stack", "allow other training stacks (--any-stack)", relaxed(any_stack=True)
    if s.task == "infer" and not c.any_quant:
        yield "quant", "allow quantized weights / fp8 KV (--any-quant)", relaxed(any_quant=True)
    for n in COUNTS:
        if n > c.max_gpus and (s.task == "train" or n <= 64):
            yield "gpus", f"allow up to {n} GPUs (--max-gpus {n})", relaxed(max_gpus=n)
    name = s.length_field
    for divisor in (2, 4, 8) if s.preset is None else ():  # a preset says the lengths (resolve.preset_lengths)
        shorter = max(getattr(s, name) // divisor, 1)
        yield "length", f"shorter sequences (--{name.replace('_', '-')} {shorter:,})", lambda shorter=shorter: next(
            iter(recommend(s.model_copy(update={name: shorter}), m, Constraints(**base), explain=False).setups), None)
