"""What the web page shows beside a plan, as answers: every number as its formula (``explain``), the fit on every
card of the catalog (``fit_grid``), the plan taken away (``export``: scenario.yaml, the command, Markdown), the
scenario form (``form``) and the README as a page. Each reads plans (:mod:`gpuplan.explain`); the page renders."""

from __future__ import annotations

from typing import TYPE_CHECKING

from . import arguments as arg
from .arguments import ScenarioLike, scenario_of

if TYPE_CHECKING:
    from ..explain.export import Export
    from ..explain.formula import Explanation
    from ..explain.grid import FitGrid


def explain(scenario: ScenarioLike) -> Explanation:
    """Each number of the scenario's plan as its formula with this scenario's values, the constants' sources, the
    accuracy gpuplan measured for that kind of number, and the defaults left in force."""
    from ..explain.words import explain as words
    from ..plan.estimate import estimate

    return words(estimate(scenario_of(scenario)))


def fit_grid(scenario: ScenarioLike, axis: str = "auto") -> FitGrid:
    """The fit with its headroom on every card of the catalog, against quantization (serving), method (training)
    or context length (``axis``), and device memory against the context length: memory-only plans. A diffusion
    pipeline, an encoder-decoder or an encoder is refused in one sentence: :func:`~gpuplan.api.recommend` ranks
    the cards such a job fits."""
    from ..errors import GpuplanError
    from ..explain.grid import fit_grid as grid
    from ..model.catalog import load_model
    from ..model.kinds import NotADecoder

    axis = arg.text(axis, "axis", choices=("auto", "quant", "method", "context"))
    s = scenario_of(scenario)
    try:
        m = load_model(s.model)
    except NotADecoder as other:
        raise GpuplanError(f"{other.spec.describe()}: the grid of every card against quantization, method or "
                           "context plans decoder LLMs; recommend ranks the cards this job fits") from None
    return grid(s, m, axis)  # type: ignore[arg-type]


def export(scenario: ScenarioLike, base_url: str = "") -> Export:
    """The scenario's plan taken away: scenario.yaml (which ``gpuplan estimate`` reads), the equivalent command, a
    Markdown report (its verdict, memory, fixes, speed and cost) and the permalink's query string."""
    from ..explain.export import export as taken
    from ..plan.estimate import estimate

    s = scenario_of(scenario)
    return taken(s, estimate(s), base_url)


def form_fields() -> list:
    """One input per scenario field (choices, bounds, defaults, hints), read from the Scenario model."""
    from ..explain.forms import field_specs

    return field_specs()


def module_models() -> list[dict]:
    """The bundled models that are not decoder LLMs (diffusion pipelines, Whisper, T5/BART, ViT/CLIP/SigLIP), one
    row each: the repo id, the names that find it, the page's kind for it and the fields its plan reads (which the
    form shows: :func:`gpuplan.scenario.modules.reads`, as the resolver refuses the others), the
    family (the pipeline's class or the transformers model_type) and the exact parameter count."""
    from ..explain.forms import page_kind
    from ..model import diffusers, encoders
    from ..scenario.modules import reads

    rows = []
    for repos, aliases, load in ((diffusers.bundled_pipelines(), diffusers.pipeline_aliases(),
                                  diffusers.bundled_pipeline),
                                 (encoders.bundled_models(), encoders.model_aliases(), encoders.bundled_model)):
        for repo in repos:
            spec = load(repo)
            names = sorted({alias for alias, to in aliases.items() if to == repo and alias != repo.lower()},
                           key=lambda n: (len(n), n))
            rows.append({"name": repo, "names": names, "kind": page_kind(spec), "family": spec.family,
                         "reads": {task: list(reads(spec, task)) for task in ("train", "infer")},
                         "params_total": spec.params_total})
    return sorted(rows, key=lambda r: (r["kind"], r["params_total"]))


def quant_formats() -> list[str]:
    """The weight formats a scenario's ``quant`` takes."""
    from ..model.quant import QUANT_FORMATS

    return list(QUANT_FORMATS)


def providers() -> list[str]:
    """The providers of the price catalog in force."""
    from ..market.store import load_offers

    return sorted({o.provider for o in load_offers()})


def readme_html() -> str:
    """The README as an HTML fragment."""
    from ..explain.accuracy import readme_html as html

    return html()


def accuracy_html() -> str:
    """The accuracy tables (gpuplan/data/accuracy.md) as an HTML fragment; the page's accuracy figures link into it."""
    from ..explain.accuracy import accuracy_html as html

    return html()


def dataset_formats() -> tuple[str, ...]:
    """The file suffixes a training dataset may have (JSON lines, JSON, CSV, Parquet...)."""
    from ..dataset.read import FORMATS

    return tuple(FORMATS)
