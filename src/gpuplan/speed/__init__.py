"""How fast a scenario runs, from the work each step does: training step time and tokens/s, inference prefill,
decode and time to first token, communication.

- :mod:`.gemm`: one GEMM's time from its shape and the card (achieved fraction of peak);
- :mod:`.work`: the GPU and host work of one pass over the model;
- :mod:`.flops`: FLOPs per token (PaLM appendix B) and the compute dtype;
- :mod:`.comms`: the setup's links (from the offer's network) and collective times;
- :mod:`.training`: step time of a training scenario;
- :mod:`.float8`: the casts of torchao's float8 linears (torchtitan's ``fp8-mixed``);
- :mod:`.inference`: the reusable step-time primitives (:class:`StepTimer`: prefill, decode step, time to first
  token alone and in a burst; :func:`serving_rates` for continuous batching) and the speed of a scenario;
- :mod:`.gemm` also gives TensorRT-LLM's quantized GEMMs their share of the peak (``trtllm_gpu``); its offline
  max-load throughput (``trtllm-bench throughput``, ``Speed.offline_tokens_per_s``) is
  :mod:`gpuplan.serving.offline`, on the serving step model;
- :mod:`.breakdown`: the ``Speed`` result (parts that add up, a range).

The serving primitives (:mod:`.inference`) load when a serving plan or a caller first names them, not with the
package: a training plan never runs them (PEP 562 module ``__getattr__``).
"""

from __future__ import annotations

from dataclasses import replace
from importlib import import_module
from typing import TYPE_CHECKING, Any

from ..hardware import GpuSpec, Network
from ..model import ModelSpec
from ..scenario import Scenario
from .breakdown import Speed
from .flops import compute_dtype, matmul_params, model_flops_per_token, training_flops_per_token
from .gemm import gemm_efficiency, gemm_time_s, peak_flops
from .training import step_summary, training_speed

if TYPE_CHECKING:
    from .inference import ServingRates, StepTimer, inference_speed, serving_rates, step_timer

# the names this package gives from a module it loads on first use
_LATER = {name: ".inference" for name in ("ServingRates", "StepTimer", "inference_speed", "serving_rates",
                                          "step_timer")}


def __getattr__(name: str) -> Any:
    if name not in _LATER:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(import_module(_LATER[name], __name__), name)
    globals()[name] = value
    return value


def speed_of(s: Scenario, m: ModelSpec, gpu: GpuSpec, network: Network | None = None) -> Speed:
    """Training or inference speed of ``s`` on ``gpu`` over ``network`` (the offer's links; None: the card's own)."""
    network = network or Network()
    if s.task == "train" and (s.dataset or s.samples):  # at the data's mix of lengths (gpuplan.dataset.mix)
        from ..dataset.mix import speed_at_mix

        mixed = speed_at_mix(s, m, gpu, network, training_speed)
        peak = peak_flops(gpu, compute_dtype(s))  # MFU of the data's own tokens, their attention at their lengths
        mixed = replace(mixed, mfu=model_flops_per_token(s, m) * mixed.tokens_per_s / (s.world_size * peak)
                        if peak and mixed.mfu is not None else mixed.mfu)
        # training_speed's first assumption sums up its step at full rows: said again of the mix's parts and MFU
        return replace(mixed, assumptions=[step_summary(s, gpu, mixed), *mixed.assumptions[1:]])
    if s.task == "train":
        return training_speed(s, m, gpu, network)
    from .inference import inference_speed

    return inference_speed(s, m, gpu, network)


def offline_band(m: ModelSpec) -> str:
    """How far the TensorRT-LLM offline figure is from NVIDIA's published runs of this class of model, in words: the
    band of its held-out rows (:data:`gpuplan.overheads.DECODE_BANDS`), or uncalibrated."""
    from .bands import decode_band, model_class  # serving's bands: a training plan never loads them

    band = decode_band("trtllm", m)
    if band is None:
        return f"uncalibrated for {model_class(m)} models: no published trtllm-bench run of one is scored"
    return f"measured {band.low:+.0%} to {band.high:+.0%} of it on {band.where}"


__all__ = ["ServingRates", "Speed", "StepTimer", "compute_dtype", "gemm_efficiency", "gemm_time_s",
           "inference_speed", "matmul_params", "serving_rates", "speed_of", "step_timer",
           "training_flops_per_token", "training_speed"]
