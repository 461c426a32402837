"""gpuplan: which GPUs an LLM job needs and what it costs, checked against measurements.

The Python API mirrors the CLI. ``import gpuplan`` stays light: it loads only the standard library,
pydantic and PyYAML; torch, transformers, huggingface_hub, pynvml, rich and typer load on demand.
"""

from .catalog import load_model
from .errors import GpuplanError
from .model import ModelSpec

__version__ = "0.1.0"
__all__ = ["GpuplanError", "ModelSpec", "__version__", "load_model"]
