"""DeepSpeed ZeRO stages 1-3, as the HF Trainer's integration runs them.

Mixed precision (ZeRO paper section 5; DeepSpeed ``stage_1_and_2.py``, ``stage3.py``): 16-bit working weights and
gradients, fp32 master weights and optimizer states partitioned over the data-parallel ranks; the fp32 gradient
partition exists during the step (made per sub-group, ``sub_group_size`` 1e9 in stage 3). Stage 1 partitions the
optimizer states, stage 2 the gradients too, stage 3 the weights too, gathered layer by layer (current + prefetched).
Buckets: ``reduce_bucket_size = hidden²`` and ``stage3_prefetch_bucket_size = 0.9·hidden²`` elements, as the HF
integration sets "auto" (``transformers/integrations/deepspeed.py``). Under tensor parallelism (Megatron-DeepSpeed's
layout) a rank holds its ``1/tp`` share and MLA's down-projections whole, as every sharding counts them
(:meth:`~gpuplan.sharding.base.Sharding.held_params`, the one rule of :mod:`gpuplan.tensors.layout`).
"""

from __future__ import annotations

from .. import overheads as oh
from ..model.spec import ModelSpec
from ..scenario import Scenario
from ..stacks.base import Stack, State
from ..tensors.layout import layer_params_per_rank
from ..tensors.state import optimizer_state_bytes
from .base import Sharding


class DeepSpeed(Sharding):
    name = "deepspeed"
    autocasts_fp32_weights = False
    gather_overlap = oh.ZERO3_GATHER_OVERLAP
    master_partition = True

    def reduced_grad_bytes(self, s: Scenario) -> float:
        """DeepSpeed reduces the 16-bit gradients (its fp32 partition is made at the step)."""
        return 2.0

    def hook_s(self, s: Scenario) -> float:
        """ZeRO-3's fetch and release hooks on every module, each layer and pass."""
        return oh.ZERO3_HOOK_S_PER_LAYER_PASS if self.shards_weights(s) else 0.0

    def shards_weights(self, s: Scenario) -> bool:
        """Stage 3 partitions the 16-bit weights."""
        return s.resolved_sharding == "zero3"

    def shards_gradients(self, s: Scenario) -> bool:
        """Stages 2 and 3 partition the gradients."""
        return s.resolved_sharding in ("zero2", "zero3")

    def shards_optimizer(self, s: Scenario) -> bool:
        """Every stage partitions the optimizer states (and the fp32 master weights)."""
        return True

    def state(self, s: Scenario, m: ModelSpec, stack: Stack) -> State:
        if s.method != "full" or not s.precision.endswith("-mixed"):
            st = super().state(s, m, stack)
            if s.method == "full":
                st.assumptions.append(f"{s.resolved_sharding.upper()} in {s.precision}: weights, gradients and "
                                      f"optimizer states in one dtype, sharded over {s.dp} ranks")
            return st
        P, held, n = m.params_total, self.held_params(s, m), s.dp
        w_n, g_n, o_n = self.shards(s)
        st = State(trainable=P, state_bytes=4)
        st.master = 4 * held / n
        st.weights = 2 * held / w_n + st.master  # 16-bit working copy + fp32 master partition
        st.gradients = 2 * held / g_n
        st.optimizer = optimizer_state_bytes(s, m, P, 4) * held / P / o_n
        st.step_extra = 4 * min(held / n, 1e9 if self.shards_weights(s) else P)
        st.assumptions.append(f"{s.resolved_sharding.upper()} as DeepSpeed runs it: bf16 working weights and "
                              "gradients, fp32 master weights and optimizer states sharded; the fp32 gradient "
                              "partition exists during the step (ZeRO paper section 5; DeepSpeed stage_1_and_2.py, "
                              "stage3.py)")
        return st

    def offload(self, s: Scenario, st: State) -> None:
        """ZeRO-Offload: each reduced gradient bucket is copied into the fp32 gradient partition on the CPU, so no
        16-bit gradient partition stays on the GPU (``stage_1_and_2.py`` under ``cpu_offload``, ``stage3.py``
        ``partition_grads`` under ``offload_optimizer``): the GPU keeps the buckets only. DeepSpeed's own
        estimators say the same: ``estimate_zero2_model_states_mem_needs`` gives 2 B per parameter on the GPU with
        CPU offload (the 16-bit weights), ``estimate_zero3_model_states_mem_needs`` the largest layer alone when the
        parameters are offloaded too, and 18 B per parameter on the CPU (fp32 weights, gradients and Adam moments,
        16-bit weights), 16 B with the parameters on the GPU."""
        if s.offload != "none" and s.method == "full" and s.precision.endswith("-mixed"):
            st.weights -= st.master  # the fp32 master partition goes with the optimizer
            st.cpu += st.master + 2 * st.gradients  # and the fp32 partition of the 16-bit gradients
            st.gradients = 0.0
        super().offload(s, st)

    def buffers(self, s: Scenario, m: ModelSpec, stack: Stack, st: State) -> dict[str, float]:
        out = {"ZeRO communication buckets": 2 * 2 * oh.deepspeed_bucket_elements(m.hidden_size)}
        if not self.shards_weights(s):
            return out
        # one decoder layer gathered whole on its rank: its tensor-parallel share, the parts TP keeps whole
        # (layer_params_per_rank); pipeline parallelism splits the layers between stages, never a layer
        if s.method == "full":
            largest = max(layer_params_per_rank(s, layer) for layer, _ in m.layer_kinds())
            out["ZeRO-3 gathered layers"] = 2 * 2 * largest + 2 * largest  # current + prefetched, one layer's grads
        else:  # a frozen base is gathered in its own format; adapter gradients are small
            fmt, skip = stack.base_format(s, m)
            largest = max(sum(lin.weight_params * fmt.high_bytes if lin.kept(skip) else fmt.linear_weight_bytes(lin)
                              for lin in layer.linears) for layer, _ in m.layer_kinds()) / s.tp
            out["ZeRO-3 gathered layers"] = 2 * largest  # current + prefetched
        return out
