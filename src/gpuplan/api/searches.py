"""The searches as answers: ``recommend`` (the setups that fit, ranked), ``fit`` (every bundled model on the user's
cards) and ``cost`` (the job on every offer that fits it); each row a reading of plans."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from pydantic import Field, computed_field

from ..answer import Answer
from ..errors import GpuplanError, UnknownNameError, renamed
from ..hardware import counted_card, resolve_gpu, short_id
from ..market.cost import Cost
from ..model.catalog import load_model
from ..model.kinds import NotADecoder
from ..model.report import inexact_warning
from ..plan.capability import FitRow
from ..plan.module_searches import ModuleChoices
from ..plan.recommend import Recommendation
from ..plan.refusals import every_model
from ..scenario import Scenario, load_scenario, snake_keys
from . import arguments as arg
from .arguments import ScenarioLike, names_of
from .planning import own_module


def gpu_ids(names: Iterable[str], notes: list[str]) -> tuple[str, ...]:
    """Catalog ids of GPU names (aliases, ambiguous names taking their common variant, said in ``notes``)."""
    out = []
    for name in names_of(names, "gpus"):
        if not name.strip():
            continue
        gpu, note = resolve_gpu(name.strip())
        if note:
            notes.append(note)
        out.append(gpu.id)
    return tuple(out)


def provider_names(names: Iterable[str]) -> tuple[str, ...]:
    """Providers of the price catalog, checked (an unknown one gets "did you mean")."""
    from ..market.store import load_offers

    wanted = [n.strip() for n in names_of(names, "providers") if n.strip()]
    if not wanted:
        return ()
    known = sorted({o.provider for o in load_offers()})
    for name in wanted:
        if name not in known:
            raise UnknownNameError("provider", name, known, f"(providers in the price catalog: {', '.join(known)})")
    return tuple(wanted)


def _providers(s: Scenario, providers: Iterable[str]) -> tuple[str, ...]:
    """The providers recommend ranks offers of: ``providers``, narrowed to the scenario's own provider where it names
    one, as its pricing is taken (session 17's outside fuzzer: ``recommend --provider runpod`` ranked hyperbolic
    and vast offers first, where ``cost --provider runpod`` priced runpod's alone)."""
    listed = provider_names(providers)
    if s.provider is None:
        return listed
    provider_names([s.provider])  # an unknown name: one sentence with the catalog's providers
    if listed and s.provider not in listed:
        raise GpuplanError(f"provider {s.provider!r} is not one of providers {', '.join(listed)}: give one or the "
                           "other")
    return (s.provider,)


def recommend(scenario: ScenarioLike, *, budget_usd: float | None = None, deadline_hours: float | None = None,
              max_gpus: int = 8, gpus: Iterable[str] = (), providers: Iterable[str] = (),
              have: Iterable[str | tuple[str, int]] = (), min_headroom: float = 0.0, objective: str = "cost",
              top: int = 10, any_method: bool = False, any_quant: bool = False, any_stack: bool = False,
              catalogs: Iterable[str] = (), per_gpu: bool = False, any_framework: bool | None = None,
              module: str | None = None
              ) -> Recommendation | ModuleChoices:
    """Which GPUs, how many, where: every setup that fits, ranked by ``objective`` (cost, time or balanced), your
    own cards (``have``: ``"2x3090"`` or ``("nvidia-geforce-rtx-3090", 2)``) in their own list: ``gpuplan
    recommend``. ``min_headroom`` is a fraction of the card's usable memory (0.1 for 10 %). ``any_framework``:
    the old name of ``any_stack`` (said once, still read). A diffusion pipeline, an encoder-decoder or an encoder
    gets a :class:`~gpuplan.plan.module_searches.ModuleChoices`: one card per setup, each built by the one
    builder."""
    from ..plan.recommend import Constraints

    if any_framework is not None:
        renamed("any_framework", "argument")
        any_stack = any_stack or arg.flag(any_framework, "any_framework")
    from ..plan.recommend import recommend as search

    budget_usd = arg.amount(budget_usd, "budget_usd", above=True, optional=True)
    deadline_hours = arg.amount(deadline_hours, "deadline_hours", above=True, optional=True)
    max_gpus = arg.count(max_gpus, "max_gpus", most=512)
    min_headroom = arg.amount(min_headroom, "min_headroom", most=0.99)
    top = arg.count(top, "top", most=10_000)
    objective = arg.text(objective, "objective", choices=("cost", "time", "balanced"))
    any_method, any_quant, any_stack, per_gpu = (arg.flag(v, k) for k, v in (
        ("any_method", any_method), ("any_quant", any_quant), ("any_stack", any_stack),
        ("per_gpu", per_gpu)))
    catalogs = tuple(names_of(catalogs, "catalogs"))
    s, own = own_module(scenario, module)
    notes: list[str] = []
    owned = tuple(arg.owned_cards(h) for h in arg.haves_of(have))
    c = Constraints(budget_usd=budget_usd, deadline_hours=deadline_hours, max_gpus=max_gpus,
                    gpus=gpu_ids(gpus, notes), providers=_providers(s, providers), pricing=s.pricing, have=owned,
                    min_headroom=min_headroom, objective=objective, top=top, any_method=any_method,
                    any_quant=any_quant, any_stack=any_stack, catalogs=catalogs, per_gpu=per_gpu)
    from ..plan.module_searches import recommend_module

    if own is not None:  # your own module: one card per setup
        return recommend_module(s, own, c, notes)
    try:
        m = load_model(s.model)
    except NotADecoder as other:  # a diffusion pipeline, an encoder-decoder, an encoder: one card per setup
        return recommend_module(s, other.spec, c, notes)
    result = search(s, m, c)
    result.defaults = [*notes, *result.defaults]
    return result


class FitReport(Answer):
    """``fit``'s answer: every bundled model on the cards, those that fit first."""

    resolved: str  # the job, resolved, in one line
    task: str
    gpu_id: str
    num_gpus: int
    notes: list[str] = Field(default_factory=list)
    rows: list[FitRow]

    @computed_field  # in the JSON: the counts fit's headline says (review 3 s27: "34 of 92 ... fit as asked")
    @property
    def fit_as_asked(self) -> int:
        """Rows that fit with no change."""
        return sum(r.fits and not r.change for r in self.rows)

    @computed_field
    @property
    def fit_with_change(self) -> int:
        """Rows that fit only with the change their row names (another stack, offload, a fused loss ...)."""
        return sum(r.fits and bool(r.change) for r in self.rows)

    @property
    def fitting(self) -> int:
        return self.fit_as_asked + self.fit_with_change


def fit(gpu: str, scenario: ScenarioLike | None = None, *, models: Iterable[str] | None = None,
        module: str | None = None, **fields: Any) -> FitReport:
    """What can my cards do? Each bundled model (or ``models``) with the job of ``scenario`` (serving unless
    ``task`` says train) on ``gpu`` (``"2x3090"``, ``"rtx-4090"``): fits as asked, fits with a change, or not,
    with the largest batch and longest context: ``gpuplan fit``. ``module``: your own PyTorch module instead
    (``package.module:function``), its one row the builder's plan of it on one of the cards. A reason that refuses
    every model alike is raised, one sentence (:func:`~gpuplan.plan.capability.what_fits`)."""
    from ..plan.capability import what_fits
    from ..scenario.describe import describe, laid_out

    if not isinstance(gpu, str) or not gpu.strip():
        raise GpuplanError("fit needs your cards: --gpu 2x3090 (count x name, or a name for one card)")
    models = names_of(models, "models") if models is not None else None
    if models == []:  # an empty list planned every bundled model, as if none had been given
        raise GpuplanError("fit's models names no model: give model names, or leave it out for every bundled model")
    name, count = counted_card(gpu)
    card, note = resolve_gpu(name)
    gpu_id, count = card.id, count or 1
    if count > 8:
        raise GpuplanError(f"fit looks at one machine: --gpu takes up to 8 cards, got {count}")
    if scenario is None:
        template: dict[str, Any] = {}
    elif isinstance(scenario, (str, Path)):
        template = load_scenario(scenario).model_dump(exclude_unset=True)
    elif isinstance(scenario, Scenario):
        template = scenario.model_dump(exclude_unset=True)
    elif isinstance(scenario, Mapping):
        template = snake_keys(dict(scenario))  # num-gpus given, the card count below wins
    else:
        raise GpuplanError(f"a scenario is a Scenario, a dict of its fields or the path of a YAML/JSON file, not "
                           f"{type(scenario).__name__}")
    template = {**template, **fields}
    named = template.pop("model", None)  # fit plans every bundled model (or ``models``): a scenario's is said
    notes = [note] if note else []
    if named:
        notes.append(f"fit plans {'the models asked' if models else 'every bundled model'} with this scenario: its "
                     f"model {named} is left out (`gpuplan estimate --model {named}` plans it)")
    template.setdefault("task", "infer")
    if module is not None:
        return _fit_module(module, template, card, count, notes)
    example = load_scenario(None, {**template, "model": "each bundled model", "gpu": gpu_id, "num_gpus": count})
    every_model(example, card)  # one sentence, not 92 rows each refused the same way
    try:
        rows = what_fits(template, card, count, models)
    except NotADecoder as other:
        name = other.spec.name
        raise GpuplanError(f"{other.spec.describe()}: fit lists decoder LLMs on your cards; `gpuplan estimate "
                           f"--model {name} --task {example.task} --gpu {card.id}` gives its memory on one of them, "
                           f"the largest batch and the changes that fit, and `gpuplan recommend --model {name} "
                           f"--task {example.task}` the cards it fits") from None
    # each row is laid out as estimate lays it out (plan.layout): the fields not given are each model's own
    given = {k for k in ("micro_batch_size", "grad_accum_steps") if template.get(k) is not None}
    batches = laid_out(example, given, "model") if example.task == "train" else None
    sharded = example.task == "train" and count > 1 and "sharding" not in template
    resolved = describe(example, batches=batches, hardware=f"{count} x {short_id(card.id)}, DDP, ZeRO-2 or ZeRO-3 "
                        "(the first that fits)" if sharded else None)
    return FitReport(resolved=resolved, task=example.task, gpu_id=card.id, num_gpus=count, notes=notes, rows=rows)


def _fit_module(module: str, template: dict[str, Any], card, count: int, notes: list[str]) -> FitReport:
    """``fit`` of your own module: its plan on one of the cards (the one builder's), as asked or with the first
    change that fits."""
    from ..plan.estimate import estimate

    s, spec = own_module({**template, "gpu": card.id}, module)
    assert spec is not None
    plan = estimate(s, spec=spec)
    fix = None if plan.memory.fits else next((x for x in plan.suggestions if x.fits), None)
    row = FitRow(model=spec.name, params_total=spec.params_total, fits=bool(plan.memory.fits) or fix is not None,
                 change=fix.change if fix else "", fields=dict(fix.fields) if fix else {},
                 device_peak_gib=fix.device_peak_gib if fix else plan.memory.device_peak_gib,
                 reason="" if plan.memory.fits or fix else f"{plan.memory.device_peak_gib:,.1f} GiB on a card of "
                 f"{plan.memory.capacity_gib:,.1f} GiB usable, and no change planned fits")
    if count > 1:
        notes.append(f"your module's plan runs on one of the {count} cards (data parallelism over several is not "
                     "modelled for it)")
    return FitReport(resolved=plan.resolved, task=s.task, gpu_id=card.id, num_gpus=count, notes=notes, rows=[row])


class CostTable(Answer):
    """``cost``'s answer: the job on every offer that fits it, cheapest per million tokens first."""

    resolved: str
    model_exact: bool = True
    model_exact_reason: str | None = None
    notes: list[str] = Field(default_factory=list)  # the defaults taken, in words
    warnings: list[str] = Field(default_factory=list)  # a model not counted exactly, before every number
    left_out: dict[str, int] = Field(default_factory=dict)  # offers the price filter left out, by reason
    rows: list[Cost]
    why_none: str = ""  # no rows: why, where the card named has no offer to fit (plan.pricing.why_none)


def cost(scenario: ScenarioLike, *, catalogs: Iterable[str] = (), discounts: Mapping[str, float] | None = None,
         top: int | None = None, module: str | None = None) -> CostTable | ModuleChoices:
    """What the job costs on every offer that fits it (the scenario's GPU only, when it names one), each row
    with its whole bill and the device peak per GPU: ``gpuplan cost``. A diffusion pipeline, an encoder-decoder
    or an encoder gets a :class:`~gpuplan.plan.module_searches.ModuleChoices`, one row per offer."""
    from ..market.offers import spot_rows_missing
    from ..market.store import load_offers
    from ..plan.pricing import compare, left_out, why_none
    from ..plan.resolve import card_free
    from ..scenario.describe import describe, laid_out

    top = arg.count(top, "top", most=100_000, optional=True)
    catalogs = tuple(names_of(catalogs, "catalogs"))
    discounts = arg.discounts_of(discounts)
    s, own = own_module(scenario, module)
    if s.pricing == "owned":
        raise GpuplanError("--pricing owned has no offers to compare: `gpuplan estimate --pricing owned` prices "
                           "your own cards by their power, `gpuplan buy` weighs buying against renting")
    try:
        m = load_model(s.model) if own is None else None
    except NotADecoder as other:  # a diffusion pipeline, an encoder-decoder, an encoder: every offer of a card
        own = other.spec
    if own is not None:  # a module, bundled or your own
        from ..plan.module_searches import cost_module

        if s.gpu:
            s = s.model_copy(update={"gpu": resolve_gpu(s.gpu)[0].id})
        return cost_module(s, own, load_offers(catalogs, discounts), top=top)
    assert m is not None
    if s.gpu:  # one GPU: its name resolved (an ambiguous one takes its common variant)
        s = s.model_copy(update={"gpu": resolve_gpu(s.gpu)[0].id})
    s, said = card_free(s, m)  # the card is each offer's
    defaults = [n for n in said if n]
    offers = load_offers(catalogs, discounts)
    rows = compare(s, m, offers)
    return CostTable(resolved=describe(s, m, hardware=f"on each offer's GPUs ({s.world_size} per job)"
                                       if not s.gpu else None, batches=laid_out(s, s.model_fields_set, "offer")),
                     model_exact=m.exact, model_exact_reason=m.inexact_reason,
                     notes=[*m.notes, *defaults, *([spot_rows_missing()] if s.pricing != "on_demand" else [])],
                     warnings=[w for w in (inexact_warning(m),) if w],
                     left_out={k: v for k, v in left_out(offers, s).items() if v},
                     rows=rows[:top] if top else rows, why_none="" if rows else why_none(s, m, offers))
