"""gpuplan: which GPUs an LLM job needs and what it costs, checked against measurements.

The Python API is the one face the command line and the web page call (:mod:`gpuplan.api`): ``estimate``,
``recommend``, ``fit``, ``cost``, ``capacity``, ``launch`` and ``buy``, each returning a typed answer whose
``to_dict()`` is what the command's ``--json`` prints. ``import gpuplan`` stays light: it loads only the standard
library; the names below load their modules on first use (PEP 562 module ``__getattr__``), and those need only
pydantic and PyYAML; torch, transformers, huggingface_hub, pynvml, rich and typer load on demand.
"""

import importlib as _importlib
import typing as _typing

from ._version import __version__

# public name -> the module that defines it (loaded on first use)
_HOMES = {
    "estimate": ".api", "recommend": ".api", "fit": ".api", "cost": ".api", "capacity": ".api", "launch": ".api",
    "buy": ".api", "BuyReport": ".api", "CapacityReport": ".api", "CostTable": ".api", "FitReport": ".api",
    "LaunchReport": ".api",
    "Plan": ".plan.plan", "Recommendation": ".plan.recommend", "GpuplanError": ".errors",
    "load_model": ".model.catalog", "ModelSpec": ".model.spec", "Scenario": ".scenario", "load_scenario": ".scenario",
}

if _typing.TYPE_CHECKING:
    from .api import (
        BuyReport,
        CapacityReport,
        CostTable,
        FitReport,
        LaunchReport,
        buy,
        capacity,
        cost,
        estimate,
        fit,
        launch,
        recommend,
    )
    from .errors import GpuplanError
    from .model.catalog import load_model
    from .model.spec import ModelSpec
    from .plan.plan import Plan
    from .plan.recommend import Recommendation
    from .scenario import Scenario, load_scenario


def __getattr__(name: str) -> _typing.Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'gpuplan' has no attribute {name!r}")
    value = getattr(_importlib.import_module(home, __name__), name)
    globals()[name] = value  # the next access skips this function
    return value


def __dir__() -> list[str]:
    """The public names only (what ``from gpuplan import *`` gives, what a completion offers): not the helpers of
    this module nor the subpackages that loading a name brings in."""
    return sorted(__all__)


__all__ = ["BuyReport", "CapacityReport", "CostTable", "FitReport", "GpuplanError", "LaunchReport", "ModelSpec", "Plan",
           "Recommendation", "Scenario", "__version__", "buy", "capacity", "cost", "estimate", "fit", "launch",
           "load_model", "load_scenario", "recommend"]
