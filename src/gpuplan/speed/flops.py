"""FLOPs per token (PaLM, Chowdhery et al. 2022, appendix B) and the compute dtype a scenario runs in.

Training FLOPs per token: ``6·N + 12·L·a·d·s`` where ``N`` counts the parameters a token multiplies (active
parameters without the input embedding lookup) and the second term is attention's score and value matmuls over ``s``
keys (a sliding window caps ``s``). A layer a forward runs more than once (HRM-Text's recurrent stacks) counts
``2·N`` and ``4·a·d·s`` per run and its backward per run with autograd on. Recomputation adds the forward work the
stack's checkpointing runs again (:meth:`~gpuplan.stacks.Stack.recompute`): full checkpointing one forward (``+2·N +
4·L·a·d·s``, i.e. 8/6; Chen et al. 2016), of the checkpointed share of the layers with ``checkpoint_every``;
torchtitan's and torchtune's per-op selective policy the forward of the matmuls it does not save (every second one:
``+2·N_re``) and no attention (its output is on the save list). LoRA/QLoRA skip the weight gradients of the frozen
base: the backward is ``2·N`` instead of ``4·N`` (Hu et al. 2021: "no gradients for most parameters"), so ``4·N``.
"""

from __future__ import annotations

from collections.abc import Mapping

from ..model import ModelSpec
from ..model.layers import Layer, attends
from ..scenario import Scenario
from ..stacks import Recompute, stack_for


def matmul_params(m: ModelSpec) -> int:
    """Parameters a token multiplies: the active ones less the input embedding lookup (kept when tied,
    since the same matrix is the output head)."""
    lookup = 0 if m.tie_word_embeddings else m.vocab_size * m.embedding_dim
    return m.params_active - lookup - m.position_params - m.vision_params


def run_params(m: ModelSpec, *, grad: bool = False) -> int:
    """Parameters a token multiplies over one forward: :func:`matmul_params` with each decoder layer's counted once
    per run (:attr:`~gpuplan.model.layers.Layer.runs`; ``grad``: per run the backward goes through, ``grad_runs``).
    Equal to :func:`matmul_params` for a model that runs each layer once."""
    extra = sum(count * ((layer.grad_runs if grad else layer.runs) - 1) * layer.params_active
                for layer, count in m.layer_kinds())
    return matmul_params(m) + extra


def attention_forward_flops(m: ModelSpec, seq: int, *, grad: bool = False) -> float:
    """Forward attention FLOPs per token: ``4 · a · d · s_eff`` per layer run (scores and values; ``grad``: over
    the runs the backward goes through), over the layers that compute attention scores
    (:func:`~gpuplan.model.layers.attends`, as :func:`gpuplan.speed.work.attention_s` times them): a Mamba, linear-
    attention or MLP-only layer has no such term (session 20's fuzzing: Nemotron-3-Nano's 46 non-attention layers of
    52 were counted at 16,384 keys, 41.9 GFLOPs a token of attention, and a LoRA step on an M4 Max read MFU 1.45)."""
    total = 0.0
    for layer, count in m.layer_kinds():
        if not attends(layer):
            continue
        keys = min(seq, layer.window) if layer.window else seq
        total += 4 * m.num_heads * m.head_dim * keys * count * (layer.grad_runs if grad else layer.runs)
    return total


def attention_flops_per_token(m: ModelSpec, seq: int) -> float:
    """Forward + backward attention FLOPs per token: ``12 · a · d · s_eff`` summed over layers (the backward twice
    the forward, over the runs it goes through)."""
    return attention_forward_flops(m, seq) + 2 * attention_forward_flops(m, seq, grad=True)


def active_params_of(m: ModelSpec, chosen: Mapping[Layer, frozenset[str]]) -> float:
    """Parameters a token multiplies in the linears named per layer kind (routed experts: ``k`` of them), over
    the layer runs the backward goes through (those a checkpointed layer runs again)."""
    total = 0.0
    for layer, count in m.layer_kinds():
        for lin in layer.linears:
            if lin.name in chosen.get(layer, frozenset()):
                routed = lin.group == "experts" and lin.count > 1
                total += count * layer.grad_runs * lin.weight_params * (
                    layer.experts_per_token / lin.count if routed else 1)
    return total


def training_flops_per_token(s: Scenario, m: ModelSpec, *, recompute: bool = True) -> float:
    """FLOPs a training step spends per token (module docstring); ``recompute`` False: the model's own, without
    what checkpointing runs again (MFU's numerator). A layer run with autograd off has no backward and is not
    checkpointed (HRM-Text's early low-level cycles)."""
    forward, backward = run_params(m), run_params(m, grad=True)
    attention = attention_flops_per_token(m, s.seq_len)
    dense = 2 * forward + (4 if s.method == "full" else 2) * backward
    rc = stack_for(s).recompute(s, m) if recompute else Recompute()
    if rc.selective:
        dense += 2 * active_params_of(m, rc.linears)
    else:
        dense += 2 * backward * rc.layers
        attention += rc.layers * attention_forward_flops(m, s.seq_len, grad=True)
    return dense + attention


def attended_length(s: Scenario) -> int:
    """The keys a trained token of ``s``'s data attends to on average: ``sum(len^2) / sum(len)`` over its records,
    each cut at ``seq_len`` (in PaLM's attention term every token of a record counts the record's length, so the
    data's attention FLOPs per token are those at this length), whether the records are padded into batches or
    packed into rows with attention masked per record (bfd); ``seq_len`` without data, or where rows are wrapped
    and attention runs across records."""
    from ..dataset import profile

    p = profile(s)
    if p is None or p.batching.packing == "wrapped":
        return s.seq_len
    rows = [min(x, s.seq_len) for x in p.lengths.sequences]
    tokens = sum(rows)
    return max(1, round(sum(x * x for x in rows) / tokens)) if tokens else s.seq_len


def model_flops_per_token(s: Scenario, m: ModelSpec) -> float:
    """MFU's numerator per token: the model's own FLOPs (no recomputation) per token of the data, attention at
    :func:`attended_length` (a step timed at the data's mix of lengths would otherwise be credited with the
    attention of full ``seq_len`` rows: review 3's rewalk found MFU 0.77 for a step at 0.51)."""
    at = s.model_copy(update={"seq_len": attended_length(s)}) if s.dataset or s.samples else s
    return training_flops_per_token(at, m, recompute=False)


def compute_dtype(s: Scenario) -> str:
    if s.precision.startswith("fp8"):
        return "fp8"
    if s.precision == "fp4-mixed":  # NVFP4 linears (Transformer Engine NVFP4BlockScaling)
        return "fp4"
    if s.precision == "fp32":  # PyTorch runs fp32 matmuls in fp32 unless TF32 is allowed (off since 1.12)
        return "tf32" if s.tf32 else "fp32"
    return s.precision.split("-")[0]
