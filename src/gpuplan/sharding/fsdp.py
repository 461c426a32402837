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
from ..stacks import STACKS
from ..stacks.base import Stack, State
from ..tensors.layout import layer_params_per_rank
from .base import Sharding


class Fsdp(Sharding):
    name = "fsdp"
    autocasts_fp32_weights = False  # the mixed-precision policy casts the gathered weights to bf16

    def shards_weights(self, s: Scenario) -> bool:
        return True

    def shards_gradients(self, s: Scenario) -> bool:
        return True

    def shards_optimizer(self, s: Scenario) -> bool:
        return True

    def reduced_grad_bytes(self, s: Scenario) -> float:
        """fp32 under ``-mixed`` autocast (the base's), unless the stack's FSDP policy reduces in the 16-bit compute
        dtype (:attr:`gpuplan.stacks.base.Stack.fsdp_reduces_compute_dtype`: accelerate's, for the Trainer and
        axolotl)."""
        stack = STACKS.get(s.stack)
        if stack is not None and stack.fsdp_reduces_compute_dtype:
            return float(s.compute_bytes)
        return super().reduced_grad_bytes(s)

    def reduce_copy_bytes(self, s: Scenario) -> int:
        """Bytes per element of a copy of a unit's gradient in the reduce dtype, made for the reduce-scatter (0:
        none, the gradient is reduced in its own dtype)."""
        return 0

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
        parameters replicated) and MLA's down-projections whole; pipeline parallelism splits the layers between
        stages, never a layer, so it does not divide the unit (``layer_params_per_rank``)."""
        if s.method == "full":
            largest = max(layer_params_per_rank(s, layer) for layer, _ in m.layer_kinds())
            return s.compute_bytes * largest, largest
        fmt, skip = stack.base_format(s, m)
        largest = max(sum(lin.weight_params * fmt.high_bytes if lin.kept(skip) else fmt.linear_weight_bytes(lin)
                          for lin in layer.linears) for layer, _ in m.layer_kinds())
        return largest / s.tp, 0.0

    def root_params(self, m: ModelSpec) -> int:
        return m.vocab_size * m.embedding_dim * (1 if m.tie_word_embeddings else 2) + m.final_norm_params

    def stage_root_params(self, s: Scenario, m: ModelSpec) -> tuple[int, int]:
        """(parameters, gradient parameters) of the root unit on the planned GPU, before the ``1/tp`` split. Without
        pipeline parallelism the root holds the embeddings, final norm and head. Under it each stage is its own
        model with its own root (torchtitan ``pipeline_llm`` ``_build_stage``: ``tok_embeddings = None`` on every
        stage but the first, ``norm`` and ``output`` None on every stage but the last; ``apply_fsdp`` then wraps
        each stage's model with ``fully_shard(model, reshard_after_forward=not pp_enabled)``): the first stage, the
        one planned (it holds the most micro-batches), keeps its token embedding unsharded, and the embedding's
        gradient accumulates unsharded over the micro-batches like the stage's blocks' (gradient sync is off but
        for the last one). Hand count, Llama-3.1-8B at TP 2 x PP 4: 128,256 x 4,096 / 2 = 262,668,288 parameters
        on the first stage, where a share of the whole root over TP x PP said 131,335,168."""
        if s.pp == 1:
            return self.root_params(m), self.root_grad_params(m)
        embedding = m.vocab_size * m.embedding_dim
        return embedding, embedding

    def buffers(self, s: Scenario, m: ModelSpec, stack: Stack, st: State) -> dict[str, float]:
        root_bytes = 4 if stack.fp32_upcast(s) or s.precision == "fp32" else s.compute_bytes
        root, root_grad = self.stage_root_params(s, m)
        unit, unit_trainable = self.unit_bytes(s, m, stack)
        held = "embeddings, norm, head" if s.pp == 1 else "the first stage's embeddings"
        out = {f"{self.name.upper()} root unit unsharded ({held})": root_bytes * root / s.tp,
               f"{self.name.upper()} units in flight (current + prefetched)": 2 * unit}
        if s.method == "full":
            out[f"{self.name.upper()} root gradient, unsharded until the end of backward"] = \
                s.compute_bytes * root_grad / s.tp
            out[f"{self.name.upper()} unsharded gradient of one unit (reduce-scatter)"] = \
                (s.compute_bytes + self.reduce_copy_bytes(s)) * unit_trainable
        return out

    def layer_buffers(self, s: Scenario, stack: Stack, buffers: dict[str, float]) -> dict[str, float]:
        """The decoder-layer units in flight: every unit is resharded after its forward (torchtune's
        ``shard_model``, FSDP1's FULL_SHARD) and gathered again by its backward, so none is unsharded at the loss;
        a stack that keeps the last block unsharded after the forward holds one of the two there
        (:attr:`~gpuplan.stacks.base.Stack.keeps_last_unit`: torchtitan)."""
        key = f"{self.name.upper()} units in flight (current + prefetched)"
        if key not in buffers:
            return {}
        return {key: buffers[key] / 2 if stack.keeps_last_unit else buffers[key]}

    def root_grad_params(self, m: ModelSpec) -> int:
        return self.root_params(m)
