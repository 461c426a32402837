"""The plan: the one answer for one scenario, typed and immutable, that every interface renders.

A :class:`Plan` holds the scenario as resolved (every default filled, each said with why), the model's facts, memory
per GPU at three levels and the :class:`Verdict` on the card, the changes that would make it fit, the speed (on the
interconnect of the offer priced) and the cost on the chosen offer. :func:`gpuplan.plan.build.build` makes it;
:func:`memory_plan` here is its first two stages alone (memory, verdict), the plans the advice's probes and the
searches' fits build. The command line, the web page, the Python API, the searches' rows and the launch files read
plans; none recomputes a number of one.
"""

# No `from __future__ import annotations` here: the Plan's and the Verdict's field annotations are read as objects
# when the classes are made (FieldInfo.annotation; their pydantic twins would compile text), and evaluated on import
# they come compiled in the bytecode (bench/results/startup_s25.md). The names imported for type checking only, and
# the Plan in its own methods, stay quoted.
import dataclasses
import functools
import math
from typing import TYPE_CHECKING, Any

from ..datafiles import made
from ..errors import GpuplanError
from ..hardware import GpuSpec
from ..market.cost import Cost, SpotPlan, checkpoint_bytes
from ..market.offers import Offer
from ..memory import memory_report, report_of
from ..memory.host import host_shortfall
from ..model.spec import ModelSpec
from ..result import GpuFacts, MemoryReport, ModelFacts, Suggestion, to_dict
from ..scenario import INFER_ONLY, MOE_LAYOUT, TRAIN_ONLY, Scenario
from ..scenario.describe import describe
from ..serving.load import LoadRun
from ..speed.breakdown import Speed
from ..stacks import stack_for
from ..stacks.unsloth import FREE_SIZED_LOSS
from ..stored import ConfigDict, PrivateAttr, StoredModel, computed_field, model_serializer
from ..tensors.breakdown import Estimate
from .resolve import Resolved, resolve

if TYPE_CHECKING:
    from ..engines.records import KvPool  # a serving plan's pool (its engine's profile makes it)
    from .recipe import Recipe  # made for a plan with data or a launch (gpuplan.plan.recipe.plan_recipe)

BY_DESIGN = "small by design: Unsloth's fused loss sizes its chunks to half of the memory left free"


class Verdict(StoredModel):
    """Whether the job fits its card, as the one sentence every interface prints (the command line, the page, the
    API): ``fits`` (None without a card), the ``sentence`` (it opens with ``word``: "fits" or "does not fit"), the
    numbers it says, and the lines that belong under it (the engine's KV pool, the layers llama.cpp places, the
    ``--max-model-len`` vLLM starts with).

    The headroom is said only when memory decides: a KV pool too small for the requests, or llama.cpp layers left
    on the CPU, are not out of memory, and a positive headroom beside "does not fit" would contradict it."""

    model_config = ConfigDict(frozen=True)

    fits: bool | None
    word: str = ""
    sentence: str
    device_peak_gib: float
    capacity_gib: float | None = None
    headroom_gib: float | None = None  # None: memory is not what decides, or no card
    details: tuple[str, ...] = ()


class Plan(StoredModel):
    """The one answer for one scenario: the scenario as resolved (every default filled in, the card-dependent ones
    said in ``defaults`` with why), the model's facts, memory per GPU at three levels and the verdict on the card,
    the changes that would make it fit, the speed (on the interconnect of the offer priced) and the cost on the
    cheapest offer per million tokens. Immutable: every interface renders it, none recomputes a number of it."""

    # validated and dumped by pydantic-core from its stored schema (gpuplan.datafiles); the builder makes plans of
    # typed parts it made itself (model_copy of a blank plan), and an estimate read in Python validates none
    model_config = ConfigDict(frozen=True)

    model: ModelFacts
    gpu: GpuFacts | None
    memory: MemoryReport
    verdict: Verdict
    suggestions: tuple[Suggestion, ...] = ()
    speed: Speed | None = None  # None without a GPU (or one with no tensor rate)
    cost: Cost | None = None  # None when it does not fit, or no offer of the card is in force
    dataset: dict[str, Any] | None = None  # the training data: samples, tokens, lengths, batching (gpuplan.dataset)
    recipe: dict[str, Any] | None = None  # global batch, lr, schedule, layout, checkpoints, each with its source
    # serving through the engine's scheduler (gpuplan.serving.load): the run at the scenario's users or rate, and
    # its batch_size requests queued at once (waves, preemptions); None where not simulated
    load: LoadRun | None = None
    offline: LoadRun | None = None
    # the output tokens/s the cost is priced at where it is not the speed's: the load run's, served at the
    # scenario's users or rate (gpuplan.plan.build.priced_on_load); None: priced at speed.tokens_per_s
    priced_tokens_per_s: float | None = None
    _setup: Resolved | None = PrivateAttr(default=None)
    # what the builder's stages assumed and warned of beyond the resolver's: (assumptions, warnings)
    _said: tuple[tuple[str, ...], tuple[str, ...]] = PrivateAttr(default=((), ()))
    _offer: Offer | None = PrivateAttr(default=None)  # the offer it is priced on (chosen by the builder)
    _priced: tuple = PrivateAttr(default=())  # every offer it may use, priced (gpuplan.plan.build.Priced)
    _spot: SpotPlan | None = PrivateAttr(default=None)  # spot without an offer priced: the interruptions' prior
    _recipe: "Recipe | None" = PrivateAttr(default=None)  # the recipe, typed (``recipe`` is its JSON)
    # a serving engine's KV pool and its start-up state (limits, blocks): what capacity's simulation runs over
    _pool: "KvPool | None" = PrivateAttr(default=None)
    _startup: Any = PrivateAttr(default=None)

    @property
    def setup(self) -> Resolved:
        """The resolved scenario, model and card the plan was built from (typed: what the launch files and the
        page's formulas read)."""
        setup = self.__pydantic_private__["_setup"]  # (not through pydantic's slower attribute lookup)
        if setup is None:
            raise GpuplanError("this plan was not built by gpuplan.plan.build (it was read back from JSON)")
        return setup

    # the scenario in words, written when read (a search builds thousands of plans and shows a few)
    @computed_field
    @functools.cached_property
    def scenario(self) -> dict[str, Any]:
        """The scenario as resolved, every field (the sharding by its engine's name, the other task's left out)."""
        return normalized(self.setup.scenario)

    @computed_field
    @functools.cached_property
    def resolved(self) -> str:
        """The scenario as resolved, in one line (what every answer prints first)."""
        return describe(self.setup.scenario, self.setup.model)

    @computed_field
    @functools.cached_property
    def defaults(self) -> tuple[str, ...]:
        """The defaults taken for this card and model, in words (the GPU's variant, the precision, the split)."""
        return self.setup.defaults

    @computed_field
    @property
    def assumptions(self) -> tuple[str, ...]:
        """Every default or efficiency assumed, in words: the stack's defaults, then the memory's, the speed's."""
        return (*self.setup.assumptions, *self._said[0])

    @computed_field
    @property
    def warnings(self) -> tuple[str, ...]:
        """What runs but is doubtful: the model's counts, the combination, the memory, the price."""
        return (*self.setup.warnings, *self._said[1])

    @property
    def offer(self) -> Offer | None:
        """The offer the plan is priced on (None: not priced)."""
        return self.__pydantic_private__["_offer"]

    @property
    def priced(self) -> tuple:
        """Every offer the plan may use that finishes the job, priced on it (:class:`gpuplan.plan.build.Priced`:
        the cost, the offer, the speed on its links), cheapest per million tokens first; the first is the one the
        plan is priced on unless a ranked row named another."""
        return self.__pydantic_private__["_priced"]

    @property
    def spot(self) -> SpotPlan | None:
        """How a spot run checkpoints and restarts: the priced offer's, or, spot asked with no offer priced, the
        interruptions' prior (the checkpoint interval needs only its write time and the MTBI)."""
        return self.cost.spot if self.cost is not None else self.__pydantic_private__["_spot"]

    @property
    def pool(self) -> "KvPool | None":
        """The serving engine's KV pool (None: training, or an engine that grows its cache per request)."""
        return self.__pydantic_private__["_pool"]

    @property
    def startup(self) -> Any:
        """The serving engine's memory at start-up, as its own module computes it (vLLM's or SGLang's
        ``StartupMemory``: the limits and the pool a scheduler simulation runs over); None without a pool."""
        return self.__pydantic_private__["_startup"]

    @property
    def typed_recipe(self) -> "Recipe | None":
        """The training recipe (its JSON is :attr:`recipe`)."""
        return self.__pydantic_private__["_recipe"]

    @property
    def work_hours(self) -> float | None:
        """Hours of training work at the plan's speed (``train_tokens`` / tokens per second), unpriced."""
        s = self.setup.scenario
        if s.task != "train" or not s.train_tokens or self.speed is None:
            return None
        return s.train_tokens / self.speed.tokens_per_s / 3600

    @property
    def checkpoint_bytes(self) -> float:
        """What one resumable checkpoint of this training run writes: its trained weights and their optimizer states
        as its trainer keeps them (:func:`gpuplan.market.cost.checkpoint_bytes`); 0 for a serving plan. The one figure
        its spot plan, its recipe's save interval, its launch files' disk and ``buy``'s hours of the job read."""
        r = self.setup
        if r.scenario.task != "train":
            return 0.0
        return checkpoint_bytes(r.scenario, r.model, self.model.params_trainable)

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON data (non-finite numbers as null), equal to ``gpuplan estimate --json``'s output."""
        return to_dict(self)

    def said(self, assumptions: tuple[str, ...] = (), warnings: tuple[str, ...] = (), **update: Any) -> "Plan":
        """A copy with ``update`` (the builder's later stages) and their assumptions and warnings added."""
        plan = self.model_copy(update=update)
        plan._said = ((*self._said[0], *assumptions), (*self._said[1], *warnings))
        return plan

    def headroom_note(self) -> str:
        """Why the headroom is small by design, in a few words, or "": a loss that sizes its chunks from the memory
        left free (Unsloth's, :data:`~gpuplan.stacks.unsloth.FREE_SIZED_LOSS`) fills half of it whatever the batch,
        so the peak sits near the card without being a near miss (the assumption says how much)."""
        return BY_DESIGN if self.verdict.sentence.endswith(BY_DESIGN) else ""

    @model_serializer(mode="wrap")
    def _in_order(self, handler) -> dict[str, Any]:
        """The scenario, its line and its defaults first, as they are said."""
        data = handler(self)
        for key in ("load", "offline", "priced_tokens_per_s"):  # sections of serving plans the simulation ran
            if data.get(key) is None:
                data.pop(key, None)
        for key in ("band", "offline_basis", "batch_held"):  # (a serving speed's words on its range; trtllm's
            # offline figure; the pool's batch under users it cannot hold at once)
            if data.get("speed") and data["speed"].get(key) is None:
                data["speed"].pop(key, None)
        return {k: data[k] for k in ("scenario", "resolved", "defaults")} | data


def memory_plan(r: Resolved, memory: tuple[Estimate, MemoryReport] | None = None) -> Plan:
    """The builder's first two stages: memory per GPU on the card, then the verdict (no speed, cost or advice).
    ``memory``: the estimate and its report on the card, where a search made them already (it estimates a layout
    once, where the card does not change its memory, and reports it on every card: :func:`card_memory`)."""
    s, m, gpu = r.scenario, r.model, r.gpu
    e, memory = memory if memory is not None else memory_report(s, m, gpu)
    if "filled" in e.extra:  # a default the engine took from its own pool (vLLM's max_model_len): the plan's to carry
        filled, why = e.extra["filled"]
        s = s.with_resolved(filled)
        r = dataclasses.replace(r, scenario=s, chosen=(*r.chosen, why))
    plan = _blank().model_copy(update=dict(  # the calculators' typed answers: nothing to validate again
        model=model_facts(m, int(e.extra.get("params_trainable", 0))), gpu=gpu_facts(gpu), memory=memory,
        verdict=judge(r, memory, by_design=any(a.startswith(FREE_SIZED_LOSS) for a in e.assumptions)),
        suggestions=(), speed=None, cost=None, dataset=None, recipe=None))
    plan._setup = r
    short = host_shortfall(s, memory, gpu)  # what it keeps in host memory beyond the host's RAM: it does not run
    plan._said = (tuple(e.assumptions), (*e.warnings, *((short,) if short else ())))
    plan._pool, plan._startup = e.extra.get("kv_pool"), e.extra.get("startup")
    return plan


@functools.cache
def _blank() -> Plan:
    """A plan of no parts, never read: :func:`memory_plan` copies it with its parts (``model_copy``, 3 us) where
    ``model_construct`` would work out every default and private attribute again (25 us, a tenth of a search's
    time in its thousands of memory plans)."""
    return Plan.model_construct(model=None, gpu=None, memory=None, verdict=None)  # (its fields in their order)


def card_memory(r: Resolved, shared: Estimate | None) -> tuple[Estimate, MemoryReport]:
    """The memory of ``r`` on its card: ``shared``, a layout's estimate made without a card, reported on this one
    (unless the card changes it: :meth:`gpuplan.stacks.base.Stack.memory_reads_card`, or there is none), else
    estimated here."""
    s = r.scenario
    if shared is not None and not stack_for(s).memory_reads_card(s):
        return shared, report_of(s, shared, r.gpu)
    return memory_report(s, r.model, r.gpu)


def probe(s: Scenario, m: ModelSpec) -> tuple[bool, float]:
    """Whether ``s`` (placed on its card) fits it, and its device peak in GiB: a memory plan's verdict, for the
    searches' loops; (False, inf) when it cannot run there."""
    try:
        plan = memory_plan(resolve(s, m))
    except GpuplanError:
        return False, math.inf
    return bool(plan.verdict.fits), plan.memory.device_peak_gib


def judge(r: Resolved, mem: MemoryReport, by_design: bool = False) -> Verdict:
    """The verdict of ``mem`` on the resolved scenario's card (see :class:`Verdict`); ``by_design``: the peak sits
    near the card because a buffer was sized from the memory left free (:data:`BY_DESIGN` is said)."""
    s, gpu, engine = r.scenario, r.gpu, r.engine
    said = ""
    # the card holds it, the host not (no card: no verdict of the host either)
    if mem.fits is False and (mem.headroom_gib or 0) >= 0 and host_shortfall(s, mem, gpu):
        said = "the host's RAM cannot hold what it keeps there (the warning says how much); "
    elif engine.pool_words and mem.capacity_gib and mem.weights_gib > mem.capacity_gib:
        # no pool to speak of: the engine cannot load its weights (s25 walk: Phi-4 bf16 on an L4 blamed the pool)
        said = f"the weights alone ({mem.weights_gib:,.2f} GiB per GPU) are more than the GPU holds; "
    elif mem.max_concurrency == 0 and engine.pool_words and (s.rate_rps or s.users) and s.held_at_once == 1:
        # a load queues what the pool cannot hold, but a pool that holds no request runs none (no run, no queue)
        said = (f"{engine.pool_words} cannot hold one request of {s.prompt_tokens + s.output_tokens:,} tokens, so "
                "no request can run; ")
    elif mem.max_concurrency is not None and engine.pool_words and s.rate_rps and s.held_at_once == 1:
        # a rate asks no number of requests at once: the simulated run says how many it kept (its peak)
        said = (f"{engine.pool_words} holds up to {mem.max_concurrency:,} concurrent requests (the run at "
                f"{s.rate_rps:,g} requests/s says how many were running at once); ")
    elif mem.max_concurrency is not None and engine.pool_words and s.users and s.held_at_once == 1 \
            and mem.max_concurrency < s.users:
        # users are a load, not a batch: those the pool cannot hold wait their turn (Engine.fits)
        said = (f"{engine.pool_words} holds up to {mem.max_concurrency:,} concurrent requests, fewer than the "
                f"{s.users:,} users: the others wait their turn (the run of {s.users:,} users says how many were "
                "running at once); ")
    elif mem.max_concurrency is not None and engine.pool_words:
        asked = f"{s.batch_size:,} concurrent request{'s' if s.batch_size != 1 else ''} asked"
        said = (f"{engine.pool_words} holds the {asked} (up to {mem.max_concurrency:,}); "
                if mem.max_concurrency >= s.batch_size else
                f"{engine.pool_words} holds {mem.max_concurrency:,} of the {asked} ({engine.label} takes its budget "
                "whatever the job); ")
    elif mem.gpu_layers is not None:
        said = (f"{engine.label} would run {mem.offloaded_layers} of {r.model.num_layers} layers from system RAM "
                "on the CPU (--cpu-layers counts that as fitting); " if mem.offloaded_layers and not s.cpu_layers else
                f"{engine.label} places {mem.gpu_layers} of {r.model.num_layers} layers on the GPU; ")
    return verdict(s, gpu, mem, said, _details(r, mem), by_design=by_design)


def verdict(s: Scenario, gpu: GpuSpec | None, mem: MemoryReport, said: str = "",
            details: tuple[str, ...] = (), *, by_design: bool = False) -> Verdict:
    """The sentence of ``mem`` on ``gpu`` (``said``: what the engine holds, before the numbers; ``by_design``: see
    :func:`judge`): every plan's, the decoder LLMs' (:func:`judge`) and the other models'
    (:func:`gpuplan.plan.modules.build_module`)."""
    if mem.fits is None or gpu is None:
        return made(Verdict, dict(fits=None, sentence=f"device peak {mem.device_peak_gib:,.2f} GiB per GPU: name a GPU "
                                  "to see whether it fits", device_peak_gib=mem.device_peak_gib, details=details))
    word = "fits" if mem.fits else "does not fit"
    where = f"{s.world_size}x {gpu.name}" if s.world_size > 1 else gpu.name
    decides = mem.fits or mem.headroom_gib < 0  # memory is what decides
    room = f", headroom {mem.headroom_gib:+,.2f} GiB" if decides else ""
    if by_design and mem.fits:
        room += f", {BY_DESIGN}"
    return made(Verdict, dict(fits=mem.fits, word=word, sentence=f"{word} on {where}: {said}"
                              f"{mem.device_peak_gib:,.2f} of {mem.capacity_gib:,.2f} GiB usable per GPU{room}",
                              device_peak_gib=mem.device_peak_gib, capacity_gib=mem.capacity_gib,
                              headroom_gib=mem.headroom_gib if decides else None, details=details))


def _details(r: Resolved, mem: MemoryReport) -> tuple[str, ...]:
    """The lines under the verdict: the engine's KV pool, the max_model_len vLLM starts with, llama.cpp's layers."""
    s, engine, out = r.scenario, r.engine, []
    if mem.max_concurrency is not None:
        logged = ((mem.engine or {}).get("kv_cache_tokens") or 0) * s.attention_ranks  # a pool per attention rank
        also = (f"; vLLM's log counts the same pool as {logged:,} tokens at --max-model-len "
                f"{mem.engine['max_model_len']:,}" if logged and "max_model_len" in mem.engine
                and abs(logged - mem.max_context_tokens) > 0.01 * logged
                else "")
        if s.shared_prefix_tokens:
            also += f"; the {s.shared_prefix_tokens:,}-token shared prefix held once where the engine caches it"
        pools = f" on each of {s.attention_ranks} GPUs" if s.attention_ranks > 1 else ""
        out.append(f"{engine.label} KV pool {mem.kv_cache_pool_gib:,.1f} GiB{pools}: up to {mem.max_concurrency:,} "
                   f"concurrent requests of {s.prompt_tokens + s.output_tokens:,} tokens ({mem.max_context_tokens:,} "
                   f"tokens of such requests){also}")
    fit = (mem.engine or {}).get("max_model_len_that_fits")
    if fit and fit < (mem.engine.get("max_model_len") or 0):  # its default would not start
        out.append(f"{engine.label}: start it with --max-model-len {fit:,} or less (one request of that length fills "
                   "the KV pool)")
    if mem.gpu_layers is not None:
        out.append(f"{engine.label}: {mem.gpu_layers} of {r.model.num_layers} layers on the GPU"
                   + (f", {mem.offloaded_layers} offloaded to the CPU" if mem.offloaded_layers else ""))
    return tuple(out)


def normalized(s: Scenario) -> dict[str, Any]:
    """The scenario as the plan states it: every field as resolved, the sharding by its engine's name, the other
    task's fields left out."""
    data = s.model_dump()
    data["sharding"] = s.sharding_name
    for key in TRAIN_ONLY if s.task == "infer" else INFER_ONLY:
        data.pop(key, None)
    if s.precision != "fp32":
        data.pop("tf32", None)  # it means something with fp32 only
    for key in ("host_ram_gib", "extra_gpus", "tensor_split"):  # unset: said where they decide
        if data.get(key) is None:
            data.pop(key, None)
    for key in MOE_LAYOUT:  # a serving plan states its MoE layout when one is asked
        if s.task == "infer" and key in data and data[key] is Scenario.model_fields[key].default:
            data.pop(key, None)
    return data


@functools.lru_cache(maxsize=256)
def model_facts(m: ModelSpec, trainable: int) -> ModelFacts:
    """The model's facts the plan states (counts, shape, kinds of layers, whether counted exactly)."""
    kinds: dict[str, int] = {}
    for layer, count in m.layer_kinds():
        kinds[layer.kind] = kinds.get(layer.kind, 0) + count
    return made(ModelFacts, dict(name=m.name, family=m.family, params_total=m.params_total,
                                 params_active=m.params_active, params_trainable=trainable, num_layers=m.num_layers,
                                 hidden_size=m.hidden_size, num_kv_heads=m.num_kv_heads, head_dim=m.head_dim,
                                 vocab_size=m.vocab_size, layer_kinds=kinds, exact=m.exact,
                                 exact_reason=m.inexact_reason, counted_by=m.counted_by))


@functools.lru_cache(maxsize=256)
def gpu_facts(gpu: GpuSpec | None) -> GpuFacts | None:
    if gpu is None:
        return None
    return made(GpuFacts, dict(id=gpu.id, name=gpu.name, memory_gib=gpu.memory_gib, usable_gib=gpu.usable_gib,
                               architecture=gpu.architecture))
