"""FSDP1 (``torch.distributed.fsdp.FullyShardedDataParallel``): flat parameters per unit, as accelerate's FSDP
plugin (the HF Trainer) and Answer.AI's ``fsdp_qlora`` ``train.py`` wrap a model.

Differences from FSDP2 that cost memory:

- the root unit's whole flat gradient (embeddings and head together) is allocated at the head's gradient and held
  to the end of the backward;
- bitsandbytes' ``quant_state`` (absmax per 64 values, nested scales) is an attribute, not a parameter: FSDP1
  flattens and shards the packed 4-bit storage only, so every rank keeps the whole ``quant_state``
  (fsdp_qlora ``train.py`` ``load_and_quantize`` moves only ``.data``);
- side CUDA streams (``unshard``, ``post_backward``) and ``record_stream`` keep blocks the default stream cannot
  reuse (c10/cuda/CUDACachingAllocator.cpp: "Once freed, blocks can be re-allocated on the same stream, but not on
  any other stream"): at the peak, the reduce-scatter stream caches one unit's gradient and the all-gather stream
  one more unit than is in flight (torchtitan docs/fsdp.md: FSDP2 "7% lower peak memory than FSDP1" by avoiding
  ``recordStream``).
"""

from __future__ import annotations

from ...model.spec import ModelSpec
from ...scenario import Scenario
from ..breakdown import Estimate
from .base import Runtime, State
from .fsdp import Fsdp


class Fsdp1(Fsdp):
    name = "fsdp1"

    def buffers(self, s: Scenario, m: ModelSpec, rt: Runtime, st: State) -> dict[str, float]:
        out = super().buffers(s, m, rt, st)
        if s.method == "qlora" and (s.quant or "nf4") in ("nf4", "fp4") and s.dp > 1:
            fmt, skip = rt.base_format(s, m)
            state = sum(count * sum(fmt.linear_weight_bytes(lin) - lin.weight_params / 2 for lin in layer.linears
                                    if lin.group not in skip) for layer, count in m.layer_kinds()) / (s.tp * s.pp)
            out["bitsandbytes quant_state (FSDP1 does not shard it)"] = state * (1 - 1 / s.dp)
        return out

    def fragmentation(self, s: Scenario, m: ModelSpec, rt: Runtime, e: Estimate) -> float:
        """The side streams' cached blocks: one unit's parameters (all-gather stream, beyond those in flight) and
        one unit's gradient (reduce-scatter stream)."""
        unit, trainable = self.unit_bytes(s, m, rt)
        return unit + s.compute_bytes * trainable
