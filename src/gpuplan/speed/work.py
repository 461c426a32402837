"""The GPU work of one pass over the model for ``tokens`` tokens on one GPU: GEMMs at their shape's
efficiency, attention, element-wise traffic, the loss, and the host-side launches of eager PyTorch.

Each function returns seconds for ``tokens`` tokens of ``seqs`` sequences of ``seq`` tokens on one GPU of a
tensor-parallel group of ``tp`` (Megatron splits every linear's FLOPs ``tp`` ways; Shoeybi et al. 2019).
Forward GEMMs use the shapes of the model's linears (``[tokens x in] @ [in x out]``); routed experts see
``tokens·k/E`` tokens each (Fedus et al. 2021: top-k routing, uniform load assumed). Passes:

- ``forward``: ``2·M·K·N`` per linear; ``backward`` adds the input gradient (same shape) and, for trained
  weights, the weight gradient (``[K x M] @ [M x N]``): PaLM appendix B's ``6N`` with frozen weights at ``4N``;
- attention: ``4·a·d`` FLOPs per (query, key) pair forward, causal kernels skip the masked half, the
  backward does 2.5x the forward (FlashAttention-2: 5 matmuls to 2);
- element-wise: bytes per token per layer from :mod:`gpuplan.overheads`, backward twice the forward.

A layer the forward runs more than once (:attr:`~gpuplan.model.layers.Layer.runs`: HRM-Text's recurrent stacks)
does its work, and reads its weights, once per run; a backward once per run with autograd on (``grad=True``).
"""

from __future__ import annotations

import functools
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar

from .. import overheads as oh
from ..hardware import GpuSpec, load_gpu
from ..model.conventions import deltanet_shape, mamba2_shape
from ..model.layers import Layer, Linear, attends
from ..model.spec import ModelSpec
from ..tensors.layout import replicated
from .gemm import bandwidth, clock_factor, full_clock_fraction, gemm_time_s, peak_flops, sustained_clock_share

_SHARED: ContextVar[dict | None] = ContextVar("gpuplan_shared_work", default=None)


@contextmanager
def shared_work() -> Iterator[None]:
    """Within it, each pass below (:func:`_shared`) is worked out once per model, card and arguments: a search times
    thousands of setups whose passes repeat (the same micro-batch on the same card under every sharding and GPU
    count: ``recommend`` 8B ``--any-method`` times 4,861 forward passes, 97 of them different). Kept for one search
    in this thread's context (a search nested in it shares it), so the next search works them out again."""
    token = _SHARED.set(_SHARED.get() if _SHARED.get() is not None else {})
    try:
        yield
    finally:
        _SHARED.reset(token)


def _shared(fn):
    """``fn(m, gpu, ...)``, a pure function of its arguments, its answers kept within :func:`shared_work` by
    :func:`_key`, the arguments held beside the answer so that no identity in a key is reused while it is kept."""

    @functools.wraps(fn)
    def kept(m, gpu, *args, **kwargs):
        memo = _SHARED.get()
        key = None if memo is None else _key(fn, m, gpu, args, kwargs)
        if key is None:
            return fn(m, gpu, *args, **kwargs)
        held = memo.get(key)
        if held is None:
            held = memo[key] = (m, gpu, kwargs, fn(m, gpu, *args, **kwargs))
        return held[-1]

    return kept


def _key(fn, m, gpu, args: tuple, kwargs: dict) -> tuple | None:
    """A call's key: the model and the card by identity, the other arguments as given, a mapping's layers by
    identity (the linears each layer recomputes); None where an argument cannot be part of one (not kept)."""
    key = (fn, id(m), id(gpu), args, *kwargs.items())
    try:
        hash(key)
        return key
    except TypeError:
        key = (fn, id(m), id(gpu), args, *((k, tuple((id(layer), v) for layer, v in v.items())
                                            if isinstance(v, Mapping) else v) for k, v in kwargs.items()))
    try:
        hash(key)
        return key
    except TypeError:
        return None


def runs(layer: Layer, grad: bool = False) -> int:
    """The times a forward runs ``layer`` (:attr:`~gpuplan.model.layers.Layer.runs`), or (``grad``) the runs with
    autograd on, which alone a backward and checkpointing go through (``grad_runs``: HRM-Text runs the earlier
    low-level cycles under ``torch.no_grad()``, transformers ``modeling_hrm_text.py``, ``HrmTextModel.forward``)."""
    return layer.grad_runs if grad else layer.runs


def _tokens_per_matrix(layer: Layer, lin: Linear, tokens: float) -> float:
    """Tokens each copy of ``lin`` multiplies: routed experts share the batch ``k`` of ``count`` ways."""
    if lin.group == "experts" and lin.count > 1:
        return tokens * layer.experts_per_token / lin.count
    return tokens


def _linear_s(gpu: GpuSpec, dtype: str, layer: Layer, lin: Linear, tokens: float, tp: int, act_bytes: float,
              weight_bytes: float, out_bytes: float | None = None, split_accumulator: bool = False) -> float:
    m = _tokens_per_matrix(layer, lin, tokens)
    n = lin.out_features / tp if lin.group != "router" else lin.out_features
    return gemm_time_s(gpu, dtype, m, lin.in_features, n, count=lin.count, act_bytes=act_bytes,
                       weight_bytes=weight_bytes, out_bytes=out_bytes, kernels=1,
                       split_accumulator=split_accumulator)


@_shared
def linears_s(m: ModelSpec, gpu: GpuSpec, dtype: str, tokens: float, *, tp: int = 1, layers: float = 1.0,
              targets: frozenset[str] | None = None, act_bytes: float = 2.0, weight_bytes: float = 2.0,
              per_layer: Mapping[Layer, frozenset[str]] | None = None, whole: bool = False, grad: bool = False,
              out_bytes: float | None = None, split_accumulator: bool = False) -> float:
    """One forward pass of every decoder linear (or only those named in ``targets``, or in ``per_layer`` for each
    layer kind), for ``tokens`` tokens, over the share ``layers`` of the model this GPU holds (``1/pp``); ``grad``:
    over the runs with autograd on only (:func:`runs`), those a backward and checkpointing go through. ``whole``:
    the :func:`~gpuplan.tensors.layout.replicated` linears run unsplit on all ``tokens`` (torchtitan's
    ``NoParallel`` down-projections); otherwise every linear's work is split ``tp`` ways (Megatron-Core's
    sequence-parallel ranks multiply ``tokens / tp`` rows by the whole down-projection: the same FLOPs).
    ``out_bytes`` and ``split_accumulator`` as :func:`~.gemm.gemm_time_s` takes them (an fp8 backward's GEMMs)."""
    total = 0.0
    for layer, count in m.layer_kinds():
        chosen = per_layer.get(layer, frozenset()) if per_layer is not None else targets
        for lin in layer.linears:
            if chosen is None or lin.name in chosen:
                split = 1 if whole and replicated(layer, lin) else tp
                total += count * runs(layer, grad) * _linear_s(gpu, dtype, layer, lin, tokens, split, act_bytes,
                                                               weight_bytes, out_bytes, split_accumulator)
    return total * layers


@_shared
def lm_head_s(m: ModelSpec, gpu: GpuSpec, dtype: str, tokens: float, *, tp: int = 1) -> float:
    """The output projection ``[tokens x d] @ [d x V/tp]`` (tied or not, it is a matmul)."""
    return gemm_time_s(gpu, dtype, tokens, m.embedding_dim, m.vocab_size / tp)


@_shared
def lora_s(m: ModelSpec, gpu: GpuSpec, tokens: float, rank: int, targets: frozenset[str], *, tp: int = 1,
           layers: float = 1.0, dropout: bool = False, bytes_per_output: float = oh.LORA_BYTES_PER_OUTPUT,
           grad: bool = False) -> float:
    """peft's adapter path forward, per adapted linear (``grad``: over the runs with autograd on, :func:`runs`):
    ``x @ A`` then ``(xA) @ B``, scaled and added to the base output (peft ``lora.Linear.forward``): tiny in FLOPs,
    but each re-reads the input and writes the output, the scale and the add move the output again, and a dropout
    (``lora_dropout > 0``) copies the input with its mask (memory- and latency-bound)."""
    total = 0.0
    for layer, count in m.layer_kinds():
        for lin in layer.linears:
            if lin.name in targets and lin.count == 1:
                out = lin.out_features / tp
                traffic = tokens * (out * bytes_per_output
                                    + (lin.in_features * oh.LORA_DROPOUT_BYTES_PER_INPUT if dropout else 0))
                total += count * runs(layer, grad) * (gemm_time_s(gpu, "bf16", tokens, lin.in_features, rank)
                                  + gemm_time_s(gpu, "bf16", tokens, rank, out) + traffic / bandwidth(gpu))
    return total * layers


@_shared
def attention_s(m: ModelSpec, gpu: GpuSpec, dtype: str, seqs: float, seq: int, *, kernel: str, tp: int = 1,
                layers: float = 1.0, context: int = 0, masked_windows: bool = False,
                fp8_kernel: bool = False, backend: str | None = None, grad: bool = False,
                forward: bool = False) -> float:
    """Attention score and value matmuls forward for ``seqs`` sequences of ``seq`` new tokens after ``context``
    cached ones (``grad``: over the runs with autograd on, :func:`runs`). Flash/SDPA kernels skip the causal mask's
    upper half and run at the generation's attention efficiency; eager attention computes every score as batched
    GEMMs (``[s x d] @ [d x s]`` and back, per head) and moves the score matrix through memory
    (~:data:`~gpuplan.overheads.EAGER_SCORE_BYTES` per score).
    ``masked_windows``: transformers' SDPA path passes a sliding window as an explicit mask (Gemma-2/3, Mistral),
    and the model's full-attention layers get one too: the memory-efficient kernel then computes every score of
    the square, masked or not, in every layer. Under fp8 linears attention stays at the 16-bit rate unless
    ``fp8_kernel`` (Transformer Engine's fp8 fused attention, cuDNN's fp8 flash kernel) runs its matmuls in fp8.
    ``backend``: the fused kernel's class (:mod:`gpuplan.stacks.attention`), timed at :func:`attention_fraction`
    (``forward``: at its forward alone, a serving engine's prompt); None: the generation's own kernel. Layers that
    do not attend (:func:`~gpuplan.model.layers.attends`) add none (a serving step times Mamba-2's scan and the
    linear mixers apart: :func:`mamba_scans_s`, :func:`linear_scans_s`).
    """
    heads = max(m.num_heads / tp, 1)
    windowed = any(layer.window for layer in m.layers)
    total = flops = 0.0
    for layer, count in m.layer_kinds():
        if not attends(layer):
            continue
        keys = seq + context
        masked = windowed and masked_windows and kernel == "sdpa"
        if layer.window and not masked:
            keys = min(keys, layer.window)
        d = layer_head_dim(m, layer)
        if kernel == "eager":
            total += count * runs(layer, grad) * (
                2 * gemm_time_s(gpu, dtype, seq, d, keys, count=seqs * heads, kernels=2)
                + seqs * heads * seq * keys * oh.EAGER_SCORE_BYTES / bandwidth(gpu))
        else:  # causal: query i sees context + i keys (capped by the window)
            flops += count * runs(layer, grad) * seqs * 4 * heads * d * seq * (
                keys if masked else min(context + (seq + 1) / 2, keys))
    if windowed and masked_windows and kernel == "sdpa":  # the memory-efficient kernel reading an additive mask
        fraction = attention_fraction(gpu) * oh.MASKED_ATTENTION_FACTOR
    else:
        fraction = attention_fraction(gpu, backend, forward=forward)
    rate_dtype = "bf16" if dtype == "fp8" and not fp8_kernel else dtype
    total += flops / (peak_flops(gpu, rate_dtype) * fraction * clock_factor(gpu, rate_dtype))
    return layers * total


@_shared
def ssd_scan_s(m: ModelSpec, gpu: GpuSpec, seqs: float, seq: int, *, tp: int = 1) -> float:
    """One Mamba-2 layer's mixer between its two projections for ``seqs`` sequences of ``seq`` new tokens: the
    depthwise causal convolution and the chunked scan (SSD), each kernel at the larger of its 16-bit matmul time
    (at the fused-attention share of the peak, :func:`attention_fraction`: the scan's ``tl.dot`` tiles are Triton's)
    and its memory time. The scan's kernels (mamba_ssm ops/triton/ssd_combined.py
    ``_mamba_chunk_scan_combined_fwd``, copied into vLLM's and SGLang's layers/mamba/ops/ssd_combined.py) for
    ``inner`` = heads x head_dim, ``N`` = d_state, ``G`` groups of B and C, chunks of ``L`` <= ``chunk`` tokens:

    - ``_chunk_state_fwd``: each chunk's state ``B^T (x dt decay)``, ``2 inner N`` FLOPs a token; reads x and B,
      writes the fp32 states (``inner N`` x 4 bytes a chunk);
    - ``_state_passing_fwd``: the recurrence across chunks, reads and writes every chunk's state;
    - ``_bmm_chunk_fwd``: ``C B^T`` per chunk and group, ``2 G N L^2`` FLOPs, written in fp32;
    - ``_chunk_scan_fwd``: the output, ``(C B^T masked by the decay) x`` over the causal half of each chunk
      (``2 inner L (L + 1) / 2``) plus ``C`` times the incoming state (``2 inner N`` a token); reads the states,
      ``C B^T``, x, C and the gate z (vLLM reads z in its gated RMSNorm instead), writes y;
    - ``causal_conv1d_fn`` before them reads and writes the ``inner + 2 G N`` convolved channels.

    Heads and groups split over ``tp`` (vLLM's MambaMixer2; one group is replicated). The states are taken in fp32
    throughout: ``_chunk_state_fwd`` writes them so (``states_in_fp32=True``) and vLLM passes its state cache's dtype
    to ``_state_passing_fwd`` (``state_dtype``: fp32 for Nemotron-H, ``mamba_ssm_cache_dtype``; mamba_ssm's own
    passes C's 16-bit dtype, a quarter fewer bytes). They dominate the bytes: Nemotron-3-Nano (64 x 64 heads, N 128,
    chunks of 128) moves 64 KiB of them a token."""
    shape = mamba2_shape(m.config, m.hidden_size) if m.config else None
    if not shape or seqs <= 0 or seq <= 0:
        return 0.0
    inner, n, cs = shape["inner"] / tp, shape["state"], shape["chunk"]
    groups = shape["groups"] / tp if shape["groups"] % tp == 0 else shape["groups"]
    full, rest = divmod(seq, cs)
    chunks, squares = full + (rest > 0), full * cs * cs + rest * rest
    pairs = (squares + seq) / 2  # causal (L^2 + L) / 2 per chunk
    states = chunks * inner * n * 4
    work = (  # (FLOPs, bytes) of each kernel, per sequence
        (2 * inner * n * seq, 2 * seq * (inner + groups * n) + states),  # chunk_state
        (0.0, 2 * states),  # state_passing
        (2 * groups * n * squares, 2 * seq * 2 * groups * n + 4 * groups * squares),  # bmm_chunk
        (2 * inner * (pairs + n * seq), states + 4 * groups * squares + 2 * seq * (3 * inner + groups * n)),
        (0.0, 2 * 2 * seq * (inner + 2 * groups * n)),  # causal_conv1d
    )
    rate = _triton_rate(gpu)
    return seqs * sum(max(flops / rate, nbytes / bandwidth(gpu)) for flops, nbytes in work)


def mamba_scans_s(m: ModelSpec, gpu: GpuSpec, seqs: float, seq: int, *, tp: int = 1) -> float:
    """Every Mamba-2 mixer's scan in one forward of ``seqs`` sequences of ``seq`` new tokens (kinds ``mamba`` and
    ``hybrid``: Falcon-H1's runs beside its attention): :func:`ssd_scan_s` per layer."""
    layers = sum(count for layer, count in m.layer_kinds() if layer.attention in ("mamba", "hybrid"))
    return layers * ssd_scan_s(m, gpu, seqs, seq, tp=tp) if layers else 0.0


def _triton_rate(gpu: GpuSpec) -> float:
    """FLOP/s of a recurrent mixer's ``tl.dot`` tiles: the 16-bit peak at the fused-attention share."""
    dtype = "bf16" if gpu.supports_dtype("bf16") else "fp16"
    return peak_flops(gpu, dtype) * attention_fraction(gpu) * clock_factor(gpu, dtype)


@_shared
def deltanet_chunk_s(m: ModelSpec, gpu: GpuSpec, seqs: float, seq: int, *, tp: int = 1) -> float:
    """One Gated DeltaNet layer's mixer between its projections for ``seqs`` sequences of ``seq`` new tokens: the
    causal convolution and fla's chunked gated delta rule, each kernel at the larger of its matmul time
    (:func:`_triton_rate`) and its memory time. The kernels (fla-org/flash-linear-attention
    fla/ops/gated_delta_rule/chunk.py ``chunk_gated_delta_rule_fwd``, which vLLM and SGLang copy into their fla
    folders), per value head (``H`` of them; queries and keys repeated to them), chunks of ``C`` = 64 tokens,
    ``K`` and ``V`` the key and value widths:

    - ``chunk_scaled_dot_kkt_fwd`` (fla/ops/common/chunk_scaled_dot_kkt.py): ``beta K K^T`` per chunk, ``2 C K``
      FLOPs a token; reads k, writes A in fp32;
    - ``solve_tril`` (fla/ops/utils/solve_tril.py): ``(I + A)^-1`` of each lower-triangular ``C x C`` block, the UT
      transform (``C^2 / 3`` a token); reads A in fp32, writes it in 16 bits;
    - ``recompute_w_u_fwd`` (fla/ops/gated_delta_rule/wy_fast.py): the WY representation ``w = A (k beta e^g)``,
      ``u = A (v beta)``, ``2 C (K + V)``; reads k, v, A, writes w and u;
    - ``chunk_gated_delta_rule_fwd_h`` (fla/ops/common/chunk_delta_h.py): across chunks in order,
      ``v_new = u - w h`` and ``h = e^g h + k^T v_new``, ``4 K V`` a token; reads k, w, u, writes v_new and each
      chunk's ``K x V`` state (16-bit);
    - ``chunk_fwd_o`` (fla/ops/common/chunk_o.py): ``o = q h + (q k^T masked) v_new``, ``2 K V + 2 C (K + V)``;
      reads q, k, v_new and the states, writes o;
    - ``causal_conv1d_fn`` before them reads and writes the ``2 k_heads K + H V`` convolved channels.

    Heads split over ``tp`` (vLLM's Qwen3NextGatedDeltaNet). Qwen3-Next (32 value heads of 128, keys 128): about
    182 kFLOP a token and head, 5.8 MFLOP a token and layer."""
    shape = deltanet_shape(m.config) if m.config else None
    if not shape or seqs <= 0 or seq <= 0:
        return 0.0
    heads, k, v, c = shape["v_heads"] / tp, shape["k_dim"], shape["v_dim"], shape["chunk"]
    full, rest = divmod(seq, c)
    squares, cubes = full * c * c + rest * rest, full * c ** 3 + rest ** 3
    states = 2 * k * v * (full + (rest > 0))  # 16-bit K x V state per chunk
    work = (  # (FLOPs, bytes) of each kernel, per sequence and value head
        (2 * k * squares, 2 * k * seq + 4 * squares),  # kkt
        (cubes / 3, 6 * squares),  # solve_tril
        (2 * (k + v) * squares, 4 * (k + v) * seq + 2 * squares),  # w, u
        (4 * k * v * seq, 2 * (2 * k + 2 * v) * seq + states),  # states and v_new
        (2 * k * v * seq + 2 * (k + v) * squares, 2 * (2 * k + 2 * v) * seq + states),  # output
    )
    rate, bw = _triton_rate(gpu), bandwidth(gpu)
    conv = 2 * 2 * seq * shape["conv"] / tp / bw
    return seqs * (heads * sum(max(f / rate, b / bw) for f, b in work) + conv)


def linear_scans_s(m: ModelSpec, gpu: GpuSpec, seqs: float, seq: int, *, tp: int = 1) -> float:
    """Every linear-attention and short-convolution mixer in one forward of ``seqs`` sequences of ``seq`` new
    tokens: :func:`deltanet_chunk_s` per Gated DeltaNet layer (kind ``linear``); a short-convolution layer (kind
    ``conv``, LFM2's ``Lfm2ShortConv``: ``B x``, a causal convolution over the hidden channels, ``C y``) reads its
    three gated inputs and writes its output, and the convolution reads and writes the hidden channels (12 bytes
    a token and channel, memory-bound)."""
    linear = sum(count for layer, count in m.layer_kinds() if layer.attention == "linear")
    conv = sum(count for layer, count in m.layer_kinds() if layer.attention == "conv")
    total = linear * deltanet_chunk_s(m, gpu, seqs, seq, tp=tp) if linear else 0.0
    return total + conv * seqs * 12 * seq * m.hidden_size / tp / bandwidth(gpu)


def ssd_backward_ratio(shape: dict[str, int]) -> float:
    """FLOPs of Mamba-2's scan backward over its forward, per token (``inner``, ``N`` = d_state, ``G`` groups,
    chunks of ``L``), from the kernels mamba_ssm's ``_mamba_chunk_scan_combined_bwd`` (ops/triton/ssd_combined.py)
    runs: it recomputes ``C B^T`` (``2 G N L``) and the chunk states (``2 inner N``), then ``_chunk_scan_bwd_dstates``
    (``2 inner N``), ``_chunk_scan_chunk_state_bwd_dx`` (``inner L`` over the causal half, ``2 inner N``),
    ``_chunk_state_bwd_db`` and ``_chunk_scan_bwd_dC`` (``2 inner N`` each), ``_chunk_scan_bwd_dcb`` and
    ``_chunk_scan_bwd_ddAcs_stable`` (``inner L`` each) and two ``_bmm_chunk_bwd`` (``2 G N L`` each): ``10 inner N +
    3 inner L + 6 G N L`` against the forward's ``4 inner N + inner L + 2 G N L``. Nemotron-3-Nano (4,096, 128, 8,
    128): 7,602,176 / 2,883,584 = 2.64."""
    inner, n, g, c = shape["inner"], shape["state"], shape["groups"], shape["chunk"]
    return (10 * inner * n + 3 * inner * c + 6 * g * n * c) / (4 * inner * n + inner * c + 2 * g * n * c)


def deltanet_backward_ratio(shape: dict[str, int]) -> float:
    """FLOPs of the gated delta rule's backward over its forward, per token and value head (``K``, ``V``, chunks of
    ``C``), from fla's ``chunk_gated_delta_rule_bwd`` (fla/ops/gated_delta_rule/chunk.py): ``recompute_w_u_fwd``
    and ``chunk_gated_delta_rule_fwd_h`` again (``2 C (K + V) + 4 K V``), ``chunk_bwd_dv_local`` (``2 C (K + V)``),
    ``chunk_gated_delta_rule_bwd_dhu`` (``6 K V``: the state gradient through ``q`` and ``w``, and ``k dh`` into
    dv), ``chunk_bwd_dqkwg`` (``6 K V + 4 C K + 2 C V``) and ``prepare_wy_repr_bwd`` (``4 C (K + V) + 4 C K``):
    ``16 K V + C (16 K + 10 V)`` against the forward's ``6 K V + C (6 K + 4 V) + C^2 / 3``. Qwen3-Next (128, 128,
    64): 475,136 / 181,589 = 2.62."""
    k, v, c = shape["k_dim"], shape["v_dim"], shape["chunk"]
    return (16 * k * v + c * (16 * k + 10 * v)) / (6 * k * v + c * (6 * k + 4 * v) + c * c / 3)


def ssm_state_bytes(m: ModelSpec, *, tp: int = 1) -> float:
    """Bytes of one sequence's Mamba-2 SSM states on one GPU, every Mamba-2 mixer's ``heads x head_dim x d_state``
    in fp32 (the state :func:`ssd_scan_s` takes; vLLM's ``mamba_ssm_cache_dtype`` for Nemotron-H), heads split over
    ``tp``; the convolution windows beside them are not counted. 0 for models without Mamba-2 mixers."""
    shape = mamba2_shape(m.config, m.hidden_size) if m.config else None
    if not shape:
        return 0.0
    layers = sum(count for layer, count in m.layer_kinds() if layer.attention in ("mamba", "hybrid"))
    return layers * shape["inner"] * shape["state"] * 4 / tp


def recurrent_scans_s(m: ModelSpec, gpu: GpuSpec, seqs: float, seq: int, *, tp: int = 1) -> float:
    """Every recurrent mixer's forward over ``seqs`` sequences of ``seq`` new tokens: :func:`mamba_scans_s` and
    :func:`linear_scans_s`. llama.cpp (``ggml_ssm_scan``, its delta-net ops) and MLX run their own kernels for
    these; they are timed with the same work, not measured apart."""
    return mamba_scans_s(m, gpu, seqs, seq, tp=tp) + linear_scans_s(m, gpu, seqs, seq, tp=tp)


def scans_training_s(m: ModelSpec, gpu: GpuSpec, seqs: float, seq: int, *, tp: int = 1, again: float = 0.0
                     ) -> float:
    """The recurrent mixers' scans in one training micro-step: forward, ``again`` re-runs (checkpointing) and the
    backward at :func:`ssd_backward_ratio` (Mamba-2) or :func:`deltanet_backward_ratio` (Gated DeltaNet) forwards;
    a short convolution's backward reads and writes twice its forward's bytes."""
    total = 0.0
    if m.config and (shape := mamba2_shape(m.config, m.hidden_size)):
        total += mamba_scans_s(m, gpu, seqs, seq, tp=tp) * (1 + again + ssd_backward_ratio(shape))
    linear = linear_scans_s(m, gpu, seqs, seq, tp=tp)
    if linear:
        shape = deltanet_shape(m.config) if m.config else None
        total += linear * (1 + again + (deltanet_backward_ratio(shape) if shape else 2.0))
    return total


def attention_fraction(gpu: GpuSpec, backend: str | None = None, *, forward: bool = False) -> float:
    """Share of the dense 16-bit peak a fused attention kernel of class ``backend`` reaches end to end on ``gpu``
    (:data:`~gpuplan.overheads.ATTENTION_KERNEL_PEAK_FRACTION`), else the generation's own kernel's
    (:data:`~gpuplan.overheads.ATTENTION_PEAK_FRACTION`); ``forward``: its forward alone (a serving engine's
    prompt), measured on the card's architecture where published (:func:`forward_fraction`)."""
    measured = forward_fraction(gpu, backend) if forward else None
    if measured is not None:
        return measured
    if not forward and backend == "cudnn" and gpu.id in oh.ATTENTION_FORWARD_KERNEL_TFLOPS:
        return training_share_from_kernel(gpu)
    own = oh.ATTENTION_PEAK_FRACTION.get(gpu.generation, oh.ATTENTION_PEAK_FRACTION_DEFAULT)
    return oh.ATTENTION_KERNEL_PEAK_FRACTION.get((backend, gpu.generation), own)


def training_share_from_kernel(gpu: GpuSpec) -> float:
    """End-to-end share of the dense 16-bit peak of a card's fused attention in training, from its forward kernel's
    published rate (:data:`~gpuplan.overheads.ATTENTION_FORWARD_KERNEL_TFLOPS`: AITER's on AMD Instinct) times what
    a training step keeps of that rate on Hopper (FlashAttention-2's end-to-end fraction over its forward benchmark,
    :data:`~gpuplan.overheads.HOPPER_FA2_FORWARD_SHARE`), at the clock the card holds in a step's continuous matrix
    work rather than in the benchmark's short loop (:func:`~.gemm.sustained_clock_share`: the H100 holds its
    short-loop rate, so the Hopper ratio carries no such drop; AITER's ``benchmark_mha_fwd`` times a short loop, as
    stas00's MAMF does, and the MI300X's 750 W cap holds 0.901 of that in a step, as its GEMMs)."""
    kept = oh.ATTENTION_KERNEL_PEAK_FRACTION[("flash2", "Hopper")] / oh.HOPPER_FA2_FORWARD_SHARE
    return oh.ATTENTION_FORWARD_KERNEL_TFLOPS[gpu.id] / peak_flops(gpu, "bf16") * 1e12 * kept \
        * sustained_clock_share(gpu, "bf16")


@functools.lru_cache(maxsize=256)
def forward_fraction(gpu: GpuSpec, backend: str | None) -> float | None:
    """Share of the dense 16-bit peak the forward of a fused attention kernel of class ``backend`` reaches on
    ``gpu``, from the kernel benchmark of its architecture (:data:`~gpuplan.overheads.ATTENTION_FORWARD_PEAK_FRACTION`,
    by compute capability, else its major; None where none is published): the reference card's share times
    ``gpu``'s 16-bit matmul share at its own clock over the reference's (:func:`~.gemm.full_clock_fraction`; the
    clock it keeps, :func:`~.gemm.clock_factor`, is what :func:`attention_s` applies once to the kernel's time: a card
    its power cap holds below its boost clock runs both kernels there) and ``(1 + r_ref) / (1 + r)``, ``r`` the
    softmax's cost per score over the ``4d`` matmul FLOPs of a 128-wide head (:func:`softmax_per_score`: the A100's
    0.375 against the RTX 4090's 0.078), as :func:`gpuplan.speed.modules.attention_share` converts the generations'
    fractions; at most the datasheet
    (:data:`~gpuplan.overheads.MATMUL_PEAK_FRACTION_SUSTAINED`, as the GEMMs). Cached per card and class: every prompt
    step asks for it."""
    cc = gpu.compute_capability or "0"
    table = oh.ATTENTION_FORWARD_PEAK_FRACTION
    entry = table.get((backend, cc)) or table.get((backend, cc.split(".")[0]))
    if entry is None:
        return None
    ref = load_gpu(entry[0])
    share = entry[1] * full_clock_fraction(gpu) / full_clock_fraction(ref)
    score, ref_score = softmax_per_score(gpu), softmax_per_score(ref)
    if score is not None and ref_score is not None:
        flops = 4 * oh.ATTENTION_REFERENCE_HEAD_DIM
        share *= (1 + ref_score / flops) / (1 + score / flops)
    return min(share, oh.MATMUL_PEAK_FRACTION_SUSTAINED)


def softmax_per_score(gpu: GpuSpec) -> float | None:
    """Tensor-FLOP equivalents of a fused attention's softmax per score on ``gpu``: one exponential on the SFUs
    (:data:`~gpuplan.overheads.SFU_OPS_PER_SM_CLOCK` per SM and clock) and
    :data:`~gpuplan.overheads.SOFTMAX_FP32_OPS_PER_SCORE` FP32 ops, each against the dense 16-bit peak (None where
    the SM count, clock or FP32 rate are not in the catalog)."""
    peak = peak_flops(gpu, "bf16")
    fp32 = peak_flops(gpu, "fp32")
    if not (gpu.sm_count and gpu.boost_clock_mhz and fp32 and peak):
        return None
    return (peak / (gpu.sm_count * oh.SFU_OPS_PER_SM_CLOCK * gpu.boost_clock_mhz * 1e6)
            + oh.SOFTMAX_FP32_OPS_PER_SCORE * peak / fp32)


def layer_head_dim(m: ModelSpec, layer: Layer) -> float:
    """Per-head width of the score and value products (MLA: nope + rope for scores, v for values, averaged)."""
    if layer.attention == "mla" and m.mla:
        qk = (m.mla.get("qk_nope_head_dim") or 0) + (m.mla.get("qk_rope_head_dim") or 0)
        return (qk + (m.mla.get("v_head_dim") or qk)) / 2
    return m.head_dim


def mlp_width(m: ModelSpec, layer: Layer, tp: int) -> float:
    """Elements of the MLP's intermediate activation per token: the input width of the projections back to the
    hidden size (routed experts: ``k`` of them)."""
    width = 0.0
    for lin in layer.linears:
        if lin.group in ("mlp", "experts", "shared_experts") and lin.out_features == m.hidden_size:
            width += lin.in_features * (layer.experts_per_token if lin.group == "experts" and lin.count > 1 else 1)
    return (width or m.intermediate_size) / tp


@_shared
def elementwise_s(m: ModelSpec, gpu: GpuSpec, tokens: float, *, tp: int = 1, layers: float = 1.0,
                  per_element: tuple[float, float] | None = None, grad: bool = False) -> float:
    """Memory-bound element-wise traffic of one forward pass (``grad``: of the runs with autograd on, :func:`runs`;
    norms, residuals, rotary, activations):
    ``per_element`` bytes per hidden and per MLP element per layer, by default what unfused PyTorch modules move
    (:func:`eager_elementwise_bytes`)."""
    hidden, mlp = per_element or eager_elementwise_bytes(m)
    per_token = sum(count * runs(layer, grad) * (hidden * m.hidden_size + mlp * mlp_width(m, layer, tp))
                    for layer, count in m.layer_kinds())
    return layers * tokens * per_token / bandwidth(gpu)


def eager_elementwise_bytes(m: ModelSpec) -> tuple[float, float]:
    """Bytes per hidden and per MLP element per layer of unfused modules: transformers' Python RMSNorm moves more
    than a native LayerNorm kernel (:data:`~gpuplan.overheads.RMSNORM_EAGER_BYTES_PER_HIDDEN` for a layer's two
    norms, scaled by the norms the layer has: their weights over the hidden size)."""
    if m.family in oh.LAYERNORM_FAMILIES or not m.layers:
        return oh.ELEMENTWISE_BYTES_PER_HIDDEN, oh.ELEMENTWISE_BYTES_PER_MLP
    norms = m.layers[0].norm_params / m.hidden_size  # 2 for Llama; Gemma-2/3 4 (sandwich norms) + q/k norms
    return oh.ELEMENTWISE_BYTES_PER_HIDDEN + oh.RMSNORM_EAGER_BYTES_PER_HIDDEN * norms / 2, oh.ELEMENTWISE_BYTES_PER_MLP


@_shared
def loss_s(m: ModelSpec, gpu: GpuSpec, tokens: float, *, tp: int = 1,
           bytes_per_logit: float = oh.LOSS_BYTES_PER_LOGIT) -> float:
    """Cross-entropy forward and backward (memory-bound): over fp32 logits by default, or what the stack's loss
    kernel moves per logit."""
    return tokens * m.vocab_size / tp * bytes_per_logit / bandwidth(gpu)


def experts_hit(layer: Layer, tokens: float) -> float:
    """Distinct routed experts ``tokens`` tokens reach in ``layer`` (each picks ``k`` of ``E``, uniformly):
    ``E x (1 - (1 - k/E)^tokens)``."""
    routed = next((lin.count for lin in layer.linears if lin.group == "experts" and lin.count > 1), 0)
    if not routed or tokens <= 0:
        return 0.0
    return routed * (1 - (1 - min(layer.experts_per_token / routed, 1.0)) ** tokens)


def unread_expert_bytes(rows, tokens: float) -> float:
    """Bytes of routed experts a pass of ``tokens`` tokens does not read: of each ``(layer, linear, bytes)`` row (a
    linear's stored bytes, all its copies), the share ``1 - experts_hit / E`` for routed experts, nothing for the rest.
    One token of Qwen3-30B-A3B reaches 8 of each layer's 128 experts: 15/16 of their bytes stay unread."""
    return sum(b * (1 - experts_hit(layer, tokens) / lin.count) for layer, lin, b in rows
               if lin.group == "experts" and lin.count > 1)


def expert_loop_s(m: ModelSpec, tokens: float, *, layers: float = 1.0) -> float:
    """Host time of transformers' Python loop over the experts a pass of ``tokens`` tokens hits
    (:data:`~gpuplan.overheads.TRANSFORMERS_EXPERT_LOOP_S` per expert and layer)."""
    return layers * sum(count * layer.runs * experts_hit(layer, tokens) for layer, count in m.layer_kinds()) \
        * oh.TRANSFORMERS_EXPERT_LOOP_S


def eager_ops_per_layer(num_lora: int = 0) -> float:
    """Kernels one eager forward of a decoder layer launches (peft adds a few per adapted linear)."""
    return oh.EAGER_OPS_PER_LAYER + oh.LORA_OPS_PER_LINEAR * num_lora


def smooth_max(a: float, b: float, p: float) -> float:
    """``(a^p + b^p)^(1/p)``: the larger of two partly overlapping times, with a smooth corner."""
    return (a**p + b**p) ** (1 / p) if a > 0 or b > 0 else 0.0
