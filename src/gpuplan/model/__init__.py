"""The model: what a Hugging Face ``config.json`` describes, exactly.

- :mod:`.layers`: linear layers and decoder layers with exact parameter counts;
- :mod:`.architectures`: one reader per family, from ``config.json`` keys to layers;
- :mod:`.spec`: ``ModelSpec``, the normalized model (parameters, KV bytes, weight bytes);
- :mod:`.quant`: weight formats (int8, nf4, GPTQ/AWQ, fp8, mxfp4, GGUF) and their bytes;
- :mod:`.catalog`: resolving a name (bundled alias, path, Hugging Face repo id) to a ``ModelSpec``;
- :mod:`.meta_layers`: a decoder's layers read from the model built on the meta device (:mod:`.trace`);
- :mod:`.module_spec`: ``ModuleSpec``, a model that is not a decoder LLM (diffusion pipelines, encoder-decoders,
  encoders), made by :mod:`.diffusers` and :mod:`.encoders`;
- :mod:`.report`: plain-data views for ``gpuplan model`` and ``--json``.
"""

from .catalog import load_model
from .spec import ModelSpec

__all__ = ["ModelSpec", "load_model"]
