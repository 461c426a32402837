"""What FSDP1 and FSDP2 share (FULL_SHARD): every rank holds 1/N of each parameter, gradient and optimizer state,
and unshards one unit (a decoder layer) at a time in the parameter dtype of its mixed-precision policy.

Per GPU, besides the shards: the root unit (embeddings, final norm, output head: the parameters no decoder-layer
unit owns) stays unsharded from the forward through the backward (FSDP1 ``_post_forward_reshard``: "Do not free the
root's parameters in the post-forward for FULL_SHARD"; FSDP2's root is re-gathered for the output head's backward as
soon as it is freed), and its gradient waits unsharded until the last root parameter's gradient arrives at the end
of the backward; two decoder-layer units are unsharded at once (the current one and the prefetched one: FSDP1's
``limit_all_gathers`` caps the in-flight all-gathers at two, ``_limiter_utils._FreeEventQueue``; FSDP2 prefetches
one unit ahead); the backward reduce-scatters one unit's unsharded gradient at a time.
"""

from __future__ import annotations

from ..model.spec import ModelSpec
from ..scenario import Scenario
from ..stacks.base import Stack, State
from ..tensors.layout import training_extra_params
from .base import Sharding


class Fsdp(Sharding):
    name = "fsdp"
    autocasts_fp32_weights = False  # the mixed-precision policy casts the gathered weights to bf16
    reduce_bytes = 0  # bytes per element of an extra reduce-scatter copy in the reduce dtype (0: none)

    def shards(self, s: Scenario) -> tuple[int, int, int]:
        return s.dp, s.dp, s.dp

    def sharded_text(self, s: Scenario) -> str:
        return f", sharded over {s.dp} ranks by {self.name.upper()}"

    def offload(self, s: Scenario, st: State) -> None:
        """FSDP's CPU offload moves the parameter shards, their gradients and the optimizer step to the CPU."""
        if s.offload == "optimizer+params":
            st.cpu += st.gradients
            st.gradients = 0.0
        super().offload(s, st)

    def unit_bytes(self, s: Scenario, m: ModelSpec, stack: Stack) -> tuple[float, float]:
        """(parameter bytes, trainable parameters) of the largest decoder-layer unit, unsharded on one rank.

        A unit is one wrapped decoder layer (torchtitan ``apply_fsdp`` calls ``fully_shard`` per transformer block;
        torchtune's ``shard_model`` and FSDP1's auto-wrap policy likewise): the all-gather rebuilds that rank's
        local tensors of the whole layer. Tensor parallelism splits its linears (the local DTensor shards,
        ``ColwiseParallel``/``RowwiseParallel``), leaves its norms whole (``SequenceParallel`` keeps their
        parameters replicated) and MLA's down-projections whole (``training_extra_params``); pipeline parallelism
        splits the layers between stages, never a layer, so it does not divide the unit."""
        def held(layer) -> float:
            return (layer.params - layer.norm_params) / s.tp + layer.norm_params + training_extra_params(s, [layer])

        if s.method == "full":
            largest = max(held(layer) for layer, _ in m.layer_kinds())
            return s.compute_bytes * largest, largest
        fmt, skip = stack.base_format(s, m)
        largest = max(sum(lin.weight_params * fmt.high_bytes if lin.kept(skip) else fmt.linear_weight_bytes(lin)
                          for lin in layer.linears) for layer, _ in m.layer_kinds())
        return largest / s.tp, 0.0

    def root_params(self, m: ModelSpec) -> int:
        return m.vocab_size * m.embedding_dim * (1 if m.tie_word_embeddings else 2) + m.final_norm_params

    def buffers(self, s: Scenario, m: ModelSpec, stack: Stack, st: State) -> dict[str, float]:
        tp_pp = 1 / (s.tp * s.pp)
        root_bytes = 4 if stack.fp32_upcast(s) or s.precision == "fp32" else s.compute_bytes
        unit, unit_trainable = self.unit_bytes(s, m, stack)
        out = {f"{self.name.upper()} root unit unsharded (embeddings, norm, head)": root_bytes * self.root_params(m)
               * tp_pp, f"{self.name.upper()} units in flight (current + prefetched)": 2 * unit}
        if s.method == "full":
            out[f"{self.name.upper()} root gradient, unsharded until the end of backward"] = \
                s.compute_bytes * self.root_grad_params(m) * tp_pp
            out[f"{self.name.upper()} unsharded gradient of one unit (reduce-scatter)"] = \
                (s.compute_bytes + self.reduce_bytes) * unit_trainable
        return out

    def layer_buffers(self, s: Scenario, buffers: dict[str, float]) -> dict[str, float]:
        """The decoder-layer units in flight: every unit is resharded after its forward (torchtune's
        ``shard_model``, FSDP1's FULL_SHARD) and gathered again by its backward, so none is unsharded at the loss;
        torchtitan keeps the last block unsharded after the forward (``reshard_after_forward`` is False for it,
        ``apply_fsdp``), one of the two."""
        key = f"{self.name.upper()} units in flight (current + prefetched)"
        if key not in buffers:
            return {}
        return {key: buffers[key] / 2 if s.stack == "torchtitan" else buffers[key]}

    def root_grad_params(self, m: ModelSpec) -> int:
        return self.root_params(m)
