"""FSDP1 (``torch.distributed.fsdp.FullyShardedDataParallel``): flat parameters per unit, as accelerate's FSDP
plugin (the HF Trainer) and Answer.AI's ``fsdp_qlora`` ``train.py`` wrap a model.

Differences from FSDP2 that cost memory:

- the root unit's whole flat gradient (embeddings and head together) is allocated at the head's gradient and held
  to the end of the backward;
- bitsandbytes' ``quant_state`` (absmax per 64 values, nested scales) is an attribute, not a parameter: FSDP1
  flattens and shards the packed 4-bit storage only, so every rank keeps the whole ``quant_state`` on the GPU,
  CPU offload or not (fsdp_qlora ``train.py`` ``load_and_quantize`` quantizes on every rank's GPU, then
  ``type(param)(value.data.to("cpu"), **value.__dict__)`` moves only ``.data``);
- side CUDA streams (``unshard``, ``post_backward``) and ``record_stream`` keep blocks the default stream cannot
  reuse (c10/cuda/CUDACachingAllocator.cpp: "Once freed, blocks can be re-allocated on the same stream, but not on
  any other stream"): at the peak, the reduce-scatter stream caches one unit's gradient and the all-gather stream
  one more unit than is in flight (torchtitan docs/fsdp.md: FSDP2 "7% lower peak memory than FSDP1" by avoiding
  ``recordStream``).
"""

from __future__ import annotations

from ..model.spec import ModelSpec
from ..scenario import Scenario
from ..stacks.base import Stack, State
from ..tensors.breakdown import Estimate
from .fsdp import Fsdp


class Fsdp1(Fsdp):
    name = "fsdp1"

    def buffers(self, s: Scenario, m: ModelSpec, stack: Stack, st: State) -> dict[str, float]:
        out = super().buffers(s, m, stack, st)
        if s.method == "qlora" and (s.quant or "nf4") in ("nf4", "fp4"):
            fmt, skip = stack.base_format(s, m)
            state = sum(count * sum(fmt.linear_weight_bytes(lin) - lin.weight_params / 2 for lin in layer.linears
                                    if not lin.kept(skip)) for layer, count in m.layer_kinds()) / (s.tp * s.pp)
            # the state's 1/dp share is counted with the sharded weights, unless CPU offload moved those away
            kept = state if s.offload == "optimizer+params" else state * (1 - 1 / s.dp)
            if kept:
                out["bitsandbytes quant_state (FSDP1 does not shard or offload it)"] = kept
        return out

    def fragmentation(self, s: Scenario, m: ModelSpec, stack: Stack, e: Estimate) -> float:
        """The side streams' cached blocks: one unit's parameters (all-gather stream, beyond those in flight) and
        one unit's gradient (reduce-scatter stream); with CPU offload, the pre-unshard stream's copies of the
        shards brought to the GPU for the all-gathers (``FlatParamHandle.pre_unshard`` ``flat_param_to(device)``,
        "created on the pre-unshard stream" and handed to the all-gather stream by ``record_stream``): the root's
        shard, still waiting for its all-gather when the first decoder unit's shard is copied in, and that one."""
        unit, trainable = self.unit_bytes(s, m, stack)
        pools = unit + s.compute_bytes * trainable
        if s.offload == "optimizer+params" and s.dp > 1:
            root_bytes = 4 if stack.fp32_upcast(s) or s.precision == "fp32" else s.compute_bytes
            pools += (root_bytes * self.stage_root_params(s, m)[0] / s.tp + unit) / s.dp
        return pools
