"""How fast a scenario runs: training step time and tokens/s, inference prefill and decode, communication.

- :mod:`.flops`: FLOPs per token (PaLM appendix B) and the compute dtype;
- :mod:`.comms`: link bandwidths and the bytes collectives move;
- :mod:`.training` / :mod:`.inference`: step time per task;
- :mod:`.breakdown`: the ``Speed`` result.
"""

from __future__ import annotations

from ..hardware import GpuSpec, Network
from ..model import ModelSpec
from ..scenario import Scenario
from .breakdown import Speed
from .flops import compute_dtype, matmul_params, training_flops_per_token
from .inference import inference_speed
from .training import training_speed


def speed_of(s: Scenario, m: ModelSpec, gpu: GpuSpec, network: Network | None = None) -> Speed:
    """Training or inference speed of ``s`` on ``gpu`` over ``network`` (the offer's links; None: the card's own)."""
    network = network or Network()
    return training_speed(s, m, gpu, network) if s.task == "train" else inference_speed(s, m, gpu, network)


__all__ = ["Speed", "compute_dtype", "inference_speed", "matmul_params", "speed_of", "training_flops_per_token",
           "training_speed"]
