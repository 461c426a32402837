"""torchtitan (pytorch/torchtitan 0.1.0, ``models/llama3``): pre-training and full fine-tuning of its own Llama.

- FSDP2 with a ``MixedPrecisionPolicy``: fp32 parameters, gradients and AdamW states sharded (16 bytes/parameter
  over the ranks), bf16 compute on the gathered layer, fp32 reduce-scatter (``parallelize.apply_fsdp``);
- selective activation checkpointing, ``selective_ac_option = 'op'`` (``parallelize._apply_ac_to_transformer_block``):
  inside each block, the outputs of ``aten.mm`` are saved except every second one, and SDPA's outputs are saved
  (``_save_list``); everything else is recomputed. A Llama block runs wq, wk, wv, [SDPA], wo, w1, w3, w2, so it saves
  the block input, wq's, wv's, w1's and w2's outputs and SDPA's output and fp32 log-sum-exp: per token per layer
  ``(4·h + kv + f)·c + 4·heads`` bytes (:func:`gpuplan.stacks.native.op_sac_bytes`). ``selective_ac_option = 'N'``
  checkpoints every N-th block fully (``checkpoint_every``);
- attention: ``Attention.forward`` repeats the keys and values to every query head (``repeat_kv``: expand and
  reshape, a copy) before SDPA, which saves the repeated ones, as torchtune's does;
- the loss: ``components/loss.cross_entropy_loss`` upcasts the bf16 logits to fp32 for ``F.cross_entropy`` (the
  trainer deletes ``pred`` before the backward); ``training.compile`` compiles each block and the loss
  (``build_cross_entropy_loss``), so inductor fuses the upcast and saves the bf16 logits instead.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from ..model.spec import ModelSpec
from ..scenario import Scenario
from ..tensors import activations as act
from .base import LossBytes
from .native import OpSelective, chunked_loss
from .releases import TORCHTITAN_VERSION


class Torchtitan(OpSelective):
    name = "torchtitan"
    launch_targets = ("torchtitan",)
    own_model = True  # torchtitan.models.llama3
    model_parallel = ("tp", "pp")  # [parallelism] tensor_parallel_degree, pipeline_parallel_degree
    # activation checkpointing off (its default is per-op selective) and training.compile of each block and the
    # loss, alone and together
    switches = ((("no checkpointing",), {"grad_checkpointing": "none"}), (("torch.compile",), {"compile": True}),
                (("torch.compile", "no checkpointing"), {"compile": True, "grad_checkpointing": "none"}))
    replicated_on_all_tokens = True  # models/deepseek_v3/infra/parallelize.py apply_non_moe_tp: NoParallel
    torchao_float8 = fp8_all_gather = True  # components/quantization/float8.py, [quantize.linear.float8]
    keeps_last_unit = True  # parallelize.py apply_fsdp: reshard_after_forward=False for the last transformer block


    def packages(self, s: Scenario, deepspeed: Callable[[], bool]) -> list[str]:
        """Its release; its config_manager imports tyro and its metrics tensorboard, undeclared; torchao for fp8."""
        return ["torch>=2.7", f"torchtitan=={TORCHTITAN_VERSION}", "tyro", "tensorboard"] + \
            (["torchao>=0.9"] if s.precision == "fp8-mixed" else [])

    def setup(self, s: Scenario, m: ModelSpec, autocast_fp32: bool) -> act.ActivationSetup:
        return replace(super().setup(s, m, autocast_fp32), kv_expanded=True)

    def loss(self, s: Scenario, m: ModelSpec, setup: act.ActivationSetup, lm_head_cast: bool,
             free: float | None) -> LossBytes:
        TV = setup.tokens * m.vocab_size / setup.tp
        c = setup.compute_bytes
        # on one GPU (no FSDP) torchtitan runs autocast over fp32 weights: the head's 16-bit copy is saved
        cast = c * m.vocab_size * m.embedding_dim / setup.tp if lm_head_cast else 0.0
        if s.loss == "chunked":
            loss = chunked_loss(m, setup, s.loss_chunks or 8, compiled=bool(s.compile))
            return LossBytes(saved=loss.saved + cast, forward=loss.forward, backward=loss.backward)
        if s.compile:
            return LossBytes(saved=c * TV + cast, forward=0.0, backward=c * TV)
        if setup.tp > 1:
            # loss_parallel (the default with TP): DTensor's vocabulary-parallel log-softmax and its fused backward
            # (torch/distributed/tensor/parallel/loss.py ``_log_softmax``: the fp32 input, its shifted copy and
            # the result alive at once; ``_nll_loss_and_log_softmax_backward``: ``(zeros_like(x) + exp(x)) * grad``
            # keeps three fp32 copies next to the saved output)
            return LossBytes(saved=4 * TV + cast, forward=(c + 8) * TV, backward=12 * TV)
        return LossBytes(saved=4 * TV + cast, forward=(c + 4) * TV, backward=8 * TV)

    def kernels(self, s: Scenario):
        """float8 brings no fused element-wise kernels here: torchao's ``convert_to_float8_training`` swaps the
        ``nn.Linear`` modules only (Transformer Engine's fused norms are another stack's), so norms, rotary and
        SwiGLU run as in the bf16 run beside it; tensor parallelism keeps the base profile's assumption. Attention
        is PyTorch's SDPA whatever the parallelism (:mod:`.attention`), never Transformer Engine's. Its Llama rotates
        queries and keys in complex numbers (``models/llama3/model.py apply_rotary_emb``: ``view_as_complex``), which
        torch.compile leaves to eager kernels (:data:`~gpuplan.overheads.ROPE_COMPLEX_BYTES`)."""
        from .speedups import kernels

        return kernels(self.name, s, fused_stack=s.tp > 1, te_attention=False, complex_rope=True)
