"""gpuplan: which GPUs an LLM job needs and what it costs, checked against measurements.

The Python API mirrors the CLI. ``import gpuplan`` stays light: it loads only the standard library,
pydantic and PyYAML; torch, transformers, huggingface_hub, pynvml, rich and typer load on demand.
"""

__version__ = "0.1.0"

from .errors import GpuplanError
from .model.catalog import load_model
from .model.spec import ModelSpec
from .plan.estimate import Result, estimate
from .scenario import Scenario, load_scenario

__all__ = ["GpuplanError", "ModelSpec", "Result", "Scenario", "__version__", "estimate", "load_model",
           "load_scenario"]
