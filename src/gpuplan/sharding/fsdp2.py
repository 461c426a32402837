"""FSDP2 (``torch.distributed.fsdp.fully_shard``): each parameter a DTensor sharded on dim 0, as torchtune
(``training.shard_model``) and torchtitan (``apply_fsdp``) apply it per decoder layer and then to the root.

FSDP2 frees through the default stream's allocator without ``record_stream`` ("lower and deterministic GPU
memory", torchtitan docs/fsdp.md), so no side-stream pool is modelled. With a ``MixedPrecisionPolicy`` whose
``reduce_dtype`` is fp32 (torchtitan's ``mixed_precision_reduce`` default), each unit's bf16 gradient is copied to
fp32 for the reduce-scatter; torchtune sets no policy (bf16 throughout). The root module's own parameters (head,
final norm, embeddings) are gathered again for the head's backward right after the forward frees them, and the
head's gradient waits for the embeddings' at the end of the backward (one reduce-scatter per group).
"""

from __future__ import annotations

from ..model.spec import ModelSpec
from ..scenario import Scenario
from ..stacks.base import Stack, State
from ..tensors.layout import training_extra_params
from .fsdp import Fsdp


class Fsdp2(Fsdp):
    name = "fsdp2"
    gathers_once_under_pp = True  # speed/training.py _Comms.data_parallel_s

    def reduce_copy_bytes(self, s: Scenario) -> int:
        """torchtitan's ``MixedPrecisionPolicy(reduce_dtype=float32)`` under ``-mixed``: each unit's bf16 gradient
        copied to fp32 for the reduce-scatter."""
        return 4 if s.precision.endswith("-mixed") else 0

    def buffers(self, s: Scenario, m: ModelSpec, stack: Stack, st: State) -> dict[str, float]:
        out = super().buffers(s, m, stack, st)
        if s.pp > 1:
            # with pipeline parallelism torchtitan keeps every block of the stage unsharded after the forward
            # (apply_fsdp: "do not reshard after forward to avoid per-microbatch all-gathers"), and the pipeline
            # schedule turns gradient sync and resharding off but for the last micro-batch
            # (torch.distributed.pipelining.stage ``backward_maybe_with_nosync``): the stage's parameters and
            # gradients stay unsharded in the compute dtype
            layers = m.layers[:-(-m.num_layers // s.pp)]
            stage = sum(layer.params for layer in layers) / s.tp + training_extra_params(s, layers)
            out.pop(next(k for k in out if "units in flight" in k))
            out["FSDP2 stage parameters kept unsharded (PP)"] = s.compute_bytes * stage
            if s.method == "full":
                out["FSDP2 stage gradients accumulated unsharded over micro-batches (PP)"] = s.compute_bytes * stage
        return out

    def root_grad_params(self, m: ModelSpec) -> int:
        """Per-parameter gradients: at the backward's peak only the head's exists (the embeddings' comes last)."""
        return m.vocab_size * m.embedding_dim if not m.tie_word_embeddings else 0
