"""A DPO step on fake tensors (``train_objective: dpo``), as TRL's DPOTrainer computes its loss (trl 1.16,
``trainer/dpo_trainer.py`` ``_compute_loss``), with TRL's own fused log-prob head (``add_fused_lm_head``):

the batch of ``2 x micro_batch_size`` rows (chosen, then rejected) through the policy with ``fused_lm_head=True``;
the reference's forward under ``torch.no_grad()``: a second, frozen model built like the policy under method full,
the policy with its adapters off (peft's ``disable_adapter``) under lora and qlora, none with
``precompute_ref_log_probs`` (its log-probabilities come with the batch); then the sigmoid loss
``-logsigmoid(beta x ((chosen - ref_chosen) - (rejected - ref_rejected)))``. The step around it (backward,
optimizer) is :func:`gpuplan.sim.simulate.train_steps`'. On the CPU TRL scores every position (its non-Triton
path); on CUDA it scores the labelled ones only: the estimate sizes every position, the same bound. Its Triton
kernels' bytes are emulated (:func:`cuda_head`).
"""

from __future__ import annotations

import contextlib

from ..errors import GpuplanError

BETA = 0.1  # DPOConfig's default beta; it moves no byte


def require_trl():
    """TRL's fused head, or one sentence: the simulation runs TRL's own code."""
    try:
        from trl.trainer.utils import add_fused_lm_head
    except ImportError:
        raise GpuplanError("simulating train_objective dpo runs TRL's DPO head: pip install trl (1.16 or later)") \
            from None
    return add_fused_lm_head


def reference(s, build_ref):
    """The frozen reference model under method full (``build_ref()``: built like the policy, no gradients), else
    None: the adapters off under peft, or precomputed log-probabilities."""
    if s.method != "full" or s.precompute_ref_log_probs:
        return None
    ref = build_ref()
    ref.requires_grad_(False)
    return ref.eval()


@contextlib.contextmanager
def cuda_head():
    """TRL's head as it runs on CUDA, in bytes: its Triton kernels fold each ``tile`` into fp32 vectors of ``T``
    (forward) and write its gradient into the tile (backward) in place, and ``_addmm_fp32`` accumulates with
    ``torch.addmm(..., out_dtype=torch.float32, out=acc)``; on the CPU the torch stand-ins make fp32 copies of every
    tile (``_forward_tile``, ``_backward_tile``) and of both operands (``acc.addmm_(a.float(), b.float())``), which
    a CUDA step never holds. Emulated here with nothing allocated (values do not matter on fake tensors)."""
    from trl.kernels import chunked_logprob as kernel

    saved = kernel._forward_tile, kernel._backward_tile, kernel._addmm_fp32
    kernel._forward_tile = kernel._backward_tile = lambda *args, **kwargs: None
    kernel._addmm_fp32 = lambda acc, a, b: None
    try:
        yield
    finally:
        kernel._forward_tile, kernel._backward_tile, kernel._addmm_fp32 = saved


def dpo_loss(s, model, ref):
    """``forward_loss(ids)`` of one DPO micro-step over the paired batch ``ids`` (module docstring)."""
    import torch
    import torch.nn.functional as F

    add_fused_lm_head = require_trl()
    add_fused_lm_head(model.get_base_model() if hasattr(model, "get_base_model") else model)
    if ref is not None:
        add_fused_lm_head(ref)

    def ref_logps(ids):
        if s.precompute_ref_log_probs:
            return torch.zeros(ids.shape[0], device=ids.device)
        off = model.disable_adapter() if ref is None and hasattr(model, "disable_adapter") else contextlib.nullcontext()
        with torch.no_grad(), off:
            out = (ref or model)(input_ids=ids, labels=ids, fused_lm_head=True, use_cache=False)
        return out.log_probs.sum(dim=1)

    def forward_loss(ids):
        out = model(input_ids=ids, labels=ids, fused_lm_head=True, use_cache=False)
        chosen, rejected = out.log_probs.sum(dim=1).chunk(2, dim=0)
        ref_chosen, ref_rejected = ref_logps(ids).chunk(2, dim=0)
        return -F.logsigmoid(BETA * ((chosen - ref_chosen) - (rejected - ref_rejected))).mean()

    return forward_loss
