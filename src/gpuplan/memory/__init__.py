"""Peak GPU memory of one scenario, per GPU, at three levels (allocated, reserved, device).

- :mod:`.breakdown`: the ``Estimate`` every estimator returns, and memory outside the allocator;
- :mod:`.state`: weights, adapters and optimizer states;
- :mod:`.activations`: the tensors autograd saves and the temporaries ops allocate;
- :mod:`.training` / :mod:`.inference`: the peak over phases;
- :mod:`.fit`: the checks a scenario must pass and the report that says whether it fits.
"""

from .breakdown import GIB, Estimate, device_overheads
from .fit import check, fits_only, memory_report
from .inference import inference_memory, kv_bytes_per_sequence
from .state import adapts_experts, attention_kernel, lora_params, lora_targets, weight_format
from .training import training_memory

__all__ = ["GIB", "Estimate", "adapts_experts", "attention_kernel", "check", "device_overheads", "fits_only",
           "inference_memory", "kv_bytes_per_sequence", "lora_params", "lora_targets", "memory_report",
           "training_memory", "weight_format"]
