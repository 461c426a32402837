"""The Python API, gpuplan's one face: a function per question, each returning a typed answer whose ``to_dict()``
is exactly what the command's ``--json`` prints. The command line and the web page call these and only render;
they import nothing else of the package but the errors and the result types (``tests/test_layers.py``).

Plans (:mod:`.planning`, :mod:`.searches`, :mod:`.serving`, :mod:`.files`):

- :func:`estimate`: one scenario's :class:`~gpuplan.plan.plan.Plan` (memory, fit, fixes, speed, cost);
- :func:`recommend`: the setups that fit, ranked (:class:`~gpuplan.plan.recommend.Recommendation`);
- :func:`fit`: every bundled model on the user's cards (:class:`FitReport`);
- :func:`cost`: the job priced on every offer that fits it (:class:`CostTable`);
- :func:`capacity`: the request rate each serving setup sustains within the SLOs (:class:`CapacityReport`);
- :func:`launch`: the files that run a plan (:class:`LaunchReport`).

Catalogs (:mod:`.catalog`): :func:`models`, :func:`model`, :func:`gpus`, :func:`gpus_compare`, :func:`prices`,
:func:`prices_update`, :func:`table`. Owning (:mod:`.owning`): :func:`buy`. Checks (:mod:`.checks`):
:func:`simulate`, :func:`probe`, :func:`calibrate`, :func:`calibrate_serving`. The page (:mod:`.page`):
:func:`explain`, :func:`fit_grid`, :func:`export`, the form's fields. The faces' words (:mod:`.words`):
:func:`short_gpu`, :func:`gpu_name`, :func:`engine_profile`.

Every function takes a scenario as a :class:`~gpuplan.scenario.Scenario`, a dict of its fields or the path of a
YAML/JSON file, and raises :class:`~gpuplan.errors.GpuplanError` (one sentence) on bad input. Names load their
module on first use (PEP 562), so that ``gpuplan.estimate`` loads what an estimate needs and nothing more.
"""

from __future__ import annotations

from importlib import import_module
from typing import Any

# public name -> the module of the package that defines it (loaded on first use)
_HOMES = {
    **dict.fromkeys(("estimate",), ".planning"),
    **dict.fromkeys(("recommend", "fit", "cost", "FitReport", "CostTable", "gpu_ids", "provider_names"), ".searches"),
    **dict.fromkeys(("capacity", "CapacityReport", "shown"), ".serving"),
    **dict.fromkeys(("launch", "ranked_launch", "check_launch", "write_plan", "LaunchReport", "LaunchFileInfo",
                     "smoke"), ".files"),
    **dict.fromkeys(("models", "model", "short_names", "gpus", "gpus_compare", "prices", "Prices", "prices_update",
                     "PriceUpdate", "prices_in_force", "prices_status", "plausible_prices",
                     "table", "GuideTable", "check_model_name", "MODEL_SORT", "GPU_SORT", "PRICE_SOURCES"),
                    ".catalog"),
    **dict.fromkeys(("short_gpu", "gpu_name", "engine_profile"), ".words"),  # no pydantic model: estimate's road
    **dict.fromkeys(("buy", "BuyReport"), ".owning"),
    **dict.fromkeys(("simulate", "simulate_module", "simulate_pipeline", "SimulationReport", "probe", "calibrate",
                     "Record", "calibrate_serving", "ServingCalibration"), ".checks"),
    **dict.fromkeys(("explain", "fit_grid", "export", "form_fields", "module_models", "quant_formats", "providers",
                     "readme_html",
                     "accuracy_html",
                     "dataset_formats"), ".page"),
    **dict.fromkeys(("scenario_of", "ScenarioLike"), ".arguments"),
    # the types the answers are made of, for the faces to name
    "Plan": "..plan.plan", "Recommendation": "..plan.recommend", "Setup": "..plan.recommend",
    "ModuleChoices": "..plan.module_searches",
    "Scenario": "..scenario", "load_scenario": "..scenario", "scenario_from": "..scenario",
    "LOAD_ENGINE": "..scenario.fields",
    "describe": "..scenario.describe", "load_model": "..model.catalog",
    "NotADecoder": "..model.kinds", "Workload": "..serving.workload",
    "lengths_words": "..serving.workload",
    "Deployment": "..plan.capacity",
    "Explanation": "..explain.formula", "FitGrid": "..explain.grid", "Export": "..explain.export",
    "FieldSpec": "..explain.forms", "Axis": "..explain.grid",
    "until": "..clock", "Overdue": "..clock",  # the page's deadline for the work of one request
    "count_timeout": "..clock", "COUNT_TIMEOUT_S": "..clock",  # the command line's bound on counting a dataset
    "ready": "..datafiles",  # the server's child makes the answers' types ready before its first job
}

def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'gpuplan.api' has no attribute {name!r}")
    value = getattr(import_module(home, __name__), name)
    globals()[name] = value  # the next access skips this function
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})


# the public API (what `from gpuplan.api import *` gives, and what its fuzz test calls): the questions and the types
# of their answers; the other names of _HOMES are the faces' words (a model's short names, a card's, the resolved
# line, the form's fields) and checks, importable by name
__all__ = sorted([
    "estimate", "recommend", "fit", "cost", "capacity", "launch", "ranked_launch", "models", "model", "gpus",
    "gpus_compare", "prices", "prices_update", "table", "buy", "simulate", "probe", "calibrate", "calibrate_serving",
    "explain", "fit_grid", "export",
    "Plan", "Recommendation", "Setup", "Scenario", "FitReport", "CostTable", "CapacityReport", "Deployment",
    "Workload", "LaunchReport", "LaunchFileInfo", "Prices", "PriceUpdate", "GuideTable", "BuyReport",
    "SimulationReport", "Record", "ServingCalibration", "Explanation", "FitGrid", "Export"])
