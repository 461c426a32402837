"""Peak GPU memory of one scenario, per GPU, at three levels (allocated, reserved, device).

- :mod:`.training`: a training step's peak over phases, from the stack's tensors (:mod:`gpuplan.stacks`) held the
  way the sharding splits them (:mod:`gpuplan.sharding`);
- :mod:`.inference`: inference's peak over phases per serving engine (:mod:`gpuplan.engines`);
- :mod:`.report`: the report that says whether it fits the card.

The bytes of each kind of tensor they add up are in :mod:`gpuplan.tensors`; what cannot run at all is
:mod:`gpuplan.plan.refusals`'s.
"""

from .report import device_gib, estimate_memory, memory_report, report_of
from .training import training_memory

__all__ = ["device_gib", "estimate_memory", "inference_memory", "memory_report", "report_of", "training_memory"]


def __getattr__(name: str):
    """``inference_memory``, its module loaded when first asked for: a training plan never calls it, and the
    engines' speculative decoding it reads made a dataclass of every first estimate (bench/results/startup_s20.md)."""
    if name == "inference_memory":
        from .inference import inference_memory

        return inference_memory
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
