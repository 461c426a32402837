"""Peak GPU memory of one scenario, per GPU, at three levels (allocated, reserved, device).

- :mod:`.training`: a training step's peak over phases, from the stack's tensors (:mod:`gpuplan.stacks`) held the
  way the sharding splits them (:mod:`gpuplan.sharding`);
- :mod:`.inference`: inference's peak over phases per serving engine (:mod:`gpuplan.engines`);
- :mod:`.report`: the report that says whether it fits the card.

The bytes of each kind of tensor they add up are in :mod:`gpuplan.tensors`; what cannot run at all is
:mod:`gpuplan.plan.refusals`'s.
"""

from .inference import inference_memory
from .report import device_gib, estimate_memory, memory_report, report_of
from .training import training_memory

__all__ = ["device_gib", "estimate_memory", "inference_memory", "memory_report", "report_of", "training_memory"]
