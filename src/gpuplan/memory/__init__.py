"""Peak GPU memory of one scenario, per GPU, at three levels (allocated, reserved, device).

- :mod:`.training`: a training step's peak over phases, from the stack's tensors (:mod:`gpuplan.stacks`) held the
  way the sharding splits them (:mod:`gpuplan.sharding`);
- :mod:`.inference`: inference's peak over phases per serving engine (:mod:`gpuplan.engines`);
- :mod:`.fit`: the checks a scenario must pass and the report that says whether it fits.

The bytes of each kind of tensor they add up are in :mod:`gpuplan.tensors`.
"""

from .fit import check, fits_only, memory_report
from .inference import inference_memory
from .training import training_memory

__all__ = ["check", "fits_only", "inference_memory", "memory_report", "training_memory"]
