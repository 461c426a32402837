"""How fast a scenario runs: training step time and tokens/s, inference prefill and decode, communication.

- :mod:`.flops`: FLOPs per token (PaLM appendix B) and the compute dtype;
- :mod:`.comms`: link bandwidths and the bytes collectives move;
- :mod:`.training` / :mod:`.inference`: step time per task;
- :mod:`.breakdown`: the ``Speed`` result.
"""

from __future__ import annotations

from ..hardware import GpuSpec
from ..model import ModelSpec
from ..scenario import Scenario
from .breakdown import Speed
from .flops import compute_dtype, matmul_params, training_flops_per_token
from .inference import inference_speed
from .training import training_speed


def speed_of(s: Scenario, m: ModelSpec, gpu: GpuSpec, intra_node: str = "") -> Speed:
    """Training or inference speed of ``s`` on ``gpu`` (``intra_node``: the offer's link, e.g. ``pcie``)."""
    return training_speed(s, m, gpu, intra_node) if s.task == "train" else inference_speed(s, m, gpu, intra_node)


__all__ = ["Speed", "compute_dtype", "inference_speed", "matmul_params", "speed_of", "training_flops_per_token",
           "training_speed"]
