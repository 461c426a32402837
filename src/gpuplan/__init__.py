"""gpuplan: which GPUs an LLM job needs and what it costs, checked against measurements.

The Python API mirrors the CLI. ``import gpuplan`` stays light: it loads only the standard library; the names
below load their modules on first use (PEP 562 module ``__getattr__``), and those need only pydantic and PyYAML;
torch, transformers, huggingface_hub, pynvml, rich and typer load on demand.
"""

from __future__ import annotations

import sys
from importlib import import_module
from types import ModuleType
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

if TYPE_CHECKING:
    from .errors import GpuplanError
    from .estimate import estimate
    from .model.catalog import load_model
    from .model.spec import ModelSpec
    from .result import Result
    from .scenario import Scenario, load_scenario

# public name -> the module that defines it
_HOMES = {"GpuplanError": ".errors", "Result": ".result", "estimate": ".estimate", "load_model": ".model.catalog",
          "ModelSpec": ".model.spec", "Scenario": ".scenario", "load_scenario": ".scenario"}

__all__ = ["GpuplanError", "ModelSpec", "Result", "Scenario", "__version__", "estimate", "load_model",
           "load_scenario"]


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'gpuplan' has no attribute {name!r}")
    value = getattr(import_module(home, __name__), name)
    globals()[name] = value  # the next access skips this function
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})


class _Package(ModuleType):
    """The package keeps ``gpuplan.estimate`` the function when its submodule of the same name is first imported
    (the import system then binds the submodule on its parent; the eager import used to rebind the function)."""

    def __setattr__(self, name: str, value: Any) -> None:
        if name == "estimate" and isinstance(value, ModuleType):
            value = value.estimate
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Package
