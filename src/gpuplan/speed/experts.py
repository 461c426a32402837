"""An MoE model served with expert parallelism and attention data parallelism: the per-GPU work of one step.

The layout (``tp`` GPUs hold one copy; :mod:`gpuplan.tensors.layout` for the memory):

- **attention data parallel** (``attention_dp``: SGLang ``--enable-dp-attention``, vLLM ``--data-parallel-size``,
  TensorRT-LLM ``enable_attention_dp``): each of the ``tp`` GPUs runs the attention of its own requests whole
  (every head, its own KV cache), so a step waits for the busiest rank, ``ceil(batch / tp)`` sequences; no
  all-reduce follows the attention;
- **expert parallel** (``ep``): each GPU holds ``E / ep`` experts of every MoE layer (each split over ``tp / ep``
  GPUs) and multiplies the tokens routed to them, as one grouped GEMM (DeepGEMM's masked grouped GEMM in SGLang,
  vLLM's fused MoE, TensorRT-LLM's CUTLASS MoE) in the experts' dtype (bf16, fp8 or fp4: the card's rate for it,
  :func:`~.gemm.gemm_time_s`);
- **expert load imbalance**: the step waits for the GPU whose experts receive the most token picks. With ``n``
  tokens of ``k`` picks routed uniformly a GPU's picks have mean ``mu = n k / ep`` and standard deviation about
  ``sqrt(mu (1 - 1/ep))``; the largest of ``ep`` such counts is about ``mu + sigma sqrt(2 ln ep)`` (the
  expected maximum of ``ep`` normal draws). Real routers are less even than uniform (DeepSeek's EPLB replicates
  hot experts for that reason: deepseek-ai/EPLB README), so this is the least imbalance a run sees;
- **dispatch and combine**: how the tokens reach the GPUs that hold their experts and come back.
  ``allgather`` (SGLang's default ``--moe-a2a-backend none`` and vLLM's default ``--all2all-backend
  allgather_reducescatter``): every GPU gathers the batch's hidden states and the outputs are reduce-scattered,
  the traffic of one all-reduce of ``batch x hidden`` 16-bit values per layer. ``deepep`` (SGLang
  ``--moe-a2a-backend deepep``, vLLM ``--all2all-backend deepep_low_latency``; TensorRT-LLM's own all-to-all is
  timed alike): each GPU sends its tokens to the GPUs of their ``k`` experts in fp8 with one fp32 scale per 128
  values (DeepEP's FP8 dispatch) and receives the ``k`` outputs back in bf16 (BF16 combine), ``n k h (1 + 4/128)``
  and ``2 n k h`` bytes (DeepEP's "logical" bytes: its low-latency table's 128 tokens x 8 x 7,168 x 1.03 B in 77 us
  is its 98 GB/s). Within a node at the NVLink rate the speed layer already uses (DeepEP's normal kernels reach
  153 / 158 GB/s of the H800's ~200 GB/s per direction, 0.77-0.79; DeepEP V2 on SM100 726 / 740 GB/s of
  900 GB/s, 0.81: NCCL's 0.8 of :data:`~gpuplan.overheads.NVLINK_EFFICIENCY`); across nodes at DeepEP's published
  RDMA figures for CX7 400 Gb/s NICs (~50 GB/s), scaled to the node's NIC share: normal kernels (prefill) 43 /
  58 / 51 GB/s at EP 16 / 32 / 64, low-latency kernels (decode) 63 / 48 / 43 / 39 GB/s dispatch and 74 / 53 / 46 /
  39 GB/s combine at EP 16 / 32 / 64 / 128 (deepseek-ai/DeepEP ``docs/legacy.md``, "Performance"; V2 in
  ``README.md``); each call also pays the link's latency.
- **MLA's absorbed decode**: DeepSeek's MLA decodes against the cached latent (``kv_lora_rank`` + rope dims per
  token) with the up-projections absorbed into the query and output, so each query head does ``2 (d_k + d_v)``
  FLOPs per cached token (``d_k = kv_lora_rank + rope``, ``d_v = kv_lora_rank``): with all 128 heads on one GPU
  (attention data parallel) the kernel is compute-bound, FlashMLA's 660 TFLOPS on an H800 (of 990 dense bf16:
  0.67) against ~3,000 GB/s of 3,350 in memory-bound settings (deepseek-ai/FlashMLA README and
  ``docs/20250422-new-kernel-deep-dive.md``: compute-bound once ``h_q s_q >= 128``). Split over ``tp`` GPUs by heads
  it stays memory-bound.
"""

from __future__ import annotations

import math

from .. import overheads as oh
from .comms import DataParallel, Link, all_reduce_s
from .gemm import gemm_time_s, peak_flops

# DeepEP across nodes, GB/s per GPU on CX7 400 Gb/s NICs (~50 GB/s): by EP size, (dispatch, combine)
DEEPEP_NIC_GBS = 50.0
DEEPEP_NORMAL_RDMA_GBS = ((16, 43.0, 43.0), (32, 58.0, 57.0), (64, 51.0, 50.0))
DEEPEP_LOW_LATENCY_RDMA_GBS = ((16, 63.0, 74.0), (32, 48.0, 53.0), (64, 43.0, 46.0), (128, 39.0, 39.0),
                               (256, 39.0, 40.0))
FLASHMLA_COMPUTE_FRACTION = 660 / 990  # FlashMLA on an H800: 660 TFLOPS of the dense bf16 peak
FP8_DISPATCH_BYTES = 1 + 4 / 128  # fp8 values and an fp32 scale per 128
# bytes per value of an expanded row as TensorRT-LLM's fused MoE writes it for its first GEMM (expanded_rows_s): FP8,
# NVFP4 (4 bits and one FP8 scale per 16 values: 0.5 + 1/16)
EXPANDED_ROW_BYTES = {"fp8": 1.0, "fp4": 0.5625}


def rank_share(n: float, ranks: int) -> float:
    """What the busiest of ``ranks`` attention ranks gets of ``n`` sequences (or of their tokens): requests are
    spread evenly, whole."""
    if ranks <= 1 or n <= 0:
        return n
    return math.ceil(n / ranks)


def imbalance(tokens: float, k: int, ep: int) -> float:
    """The busiest expert-parallel GPU's token picks over the mean (uniform routing, the module docstring):
    ``1 + sqrt(2 ln ep (1 - 1/ep) / mu)``, ``mu = tokens k / ep``; 1 without expert parallelism."""
    mu = tokens * k / ep
    if ep <= 1 or mu <= 0:
        return 1.0
    return 1 + math.sqrt(2 * math.log(ep) * (1 - 1 / ep) / mu)


def experts_s(timer, tokens: float) -> float:
    """The routed experts of one step of ``tokens`` tokens on the busiest expert-parallel GPU: each MoE layer's
    ``E / ep`` local experts that the tokens reach (``E (1 - (1 - k/E)^tokens) / ep``), each ``tp / ep`` wide
    slice multiplying its share of the busiest GPU's picks, as one grouped GEMM."""
    s, total = timer.s, 0.0
    moe_tp = s.tp // s.ep
    for layer, count in timer.m.layer_kinds():
        for lin in layer.linears:
            if lin.group != "experts" or lin.count <= 1:
                continue
            k, e = layer.experts_per_token, lin.count
            touched = e * (1 - (1 - k / e) ** tokens) / s.ep
            picks = tokens * k / s.ep * imbalance(tokens, k, s.ep)
            w = 2.0 if lin.kept(timer.skip) else timer.weight_bytes_per_param
            total += count * gemm_time_s(timer.gpu, timer.linear_dtype(lin), picks / touched, lin.in_features,
                                         lin.out_features / moe_tp, count=touched, kernels=1, weight_bytes=w,
                                         latency_s=timer._kernel_latency_s, bandwidth_bps=timer._stream_bps,
                                         kernel_share=timer.kernel_share(lin))
    return total


def expanded_rows_s(timer, tokens: float) -> float:
    """The memory traffic of TensorRT-LLM's fused MoE beside its grouped GEMMs, for ``tokens`` tokens on the
    busiest expert-parallel GPU (0 for engines without it, :attr:`gpuplan.engines.records.Timing.grouped_experts`). Its
    CUTLASS path (``cpp/tensorrt_llm/kernels/cutlass_kernels/moe_gemm/moe_kernels.cu``) copies each token's hidden
    state to one row per pick, in the first GEMM's input type (``expandInputRowsKernel``: a 16-bit read per token, a
    write of 1 byte per value for FP8, 0.5625 for NVFP4 with its block scales), and after the second GEMM reads
    every pick's 16-bit output row back to weight and sum them into the token's row (``finalizeMoeRoutingKernel``:
    a 16-bit write per pick, its read, and a 16-bit write per token)::

        bytes per MoE layer = hidden x (4 x tokens + (a + 4) x picks),   picks = tokens x k / ep x imbalance

    at the weights' streaming bandwidth. The GEMMs' own reads and writes are :func:`~.gemm.gemm_time_s`'s."""
    if not timer.grouped_experts or tokens <= 0:
        return 0.0
    s, h = timer.s, timer.m.hidden_size
    a = EXPANDED_ROW_BYTES.get(timer.dtype, 2.0)
    total = 0.0
    for layer, count in timer.m.layer_kinds():
        if layer.moe:
            k = layer.experts_per_token
            picks = tokens * k / s.ep * imbalance(tokens, k, s.ep)
            total += count * h * (4 * tokens + (a + 4) * picks)
    return total / timer._stream_bps


def fused_moe_s(timer, tokens: float, *, decode: bool) -> float:
    """What TensorRT-LLM's fused MoE does beside its grouped GEMMs and expanded rows (:func:`expanded_rows_s`) in one
    iteration of ``tokens`` tokens of an NVFP4 (W4A4) model: per MoE layer a fixed cost (its routing, expansion and
    finalize kernels) and a cost per token (top-k routing, the activations' FP4 quantization and block scales, the
    tiles the grouped GEMM pads per expert), higher at decode, where each expert gets few rows
    (:data:`~gpuplan.overheads.TRTLLM_MOE_PREFILL_TOKEN_S`, ``..._DECODE_TOKEN_S``, ``..._LAYER_STEP_S``: fitted on
    NVIDIA's B200 MoE rows by ``bench/trtllm.py --fit-moe``). Zero for engines without the fused MoE
    (:attr:`gpuplan.engines.records.Timing.grouped_experts`), for a dense model, and for FP8 (W8A8) MoE on Hopper,
    which the grouped-GEMM path alone already times within 2-8% (release 0.17's Mixtral rows; MLPerf's Mixtral on 8
    H200s): the NVFP4 rows are the only ones that show it. The step timer returns it as its own part
    (``fused_moe``), so that the serving step model prices a step holding a prompt at the prefill rate and a step of
    decodes alone at the decode rate (serving/steptime.sample)."""
    if not timer.grouped_experts or timer.dtype != "fp4" or tokens <= 0:
        return 0.0
    layers = sum(count for layer, count in timer.m.layer_kinds() if layer.moe)
    per_token = oh.TRTLLM_MOE_DECODE_TOKEN_S if decode else oh.TRTLLM_MOE_PREFILL_TOKEN_S
    return layers * (oh.TRTLLM_MOE_LAYER_STEP_S + per_token * tokens)


def mla_absorbed_s(timer, batch: float, context: float) -> float:
    """Compute time of MLA's absorbed decode attention for ``batch`` sequences of ``context`` tokens on one GPU:
    ``2 (d_k + d_v)`` FLOPs per query head and cached token, over the heads this GPU runs, at FlashMLA's share of
    the card's 16-bit peak (module docstring). 0 for models without MLA."""
    mla = timer.m.mla
    if not mla or batch <= 0:
        return 0.0
    latent, rope = mla.get("kv_lora_rank") or 0, mla.get("qk_rope_head_dim") or 0
    heads = timer.m.num_heads / timer.s.attention_tp
    layers = sum(1 for layer in timer.m.layers if layer.attention == "mla")
    flops = 2 * heads * (2 * latent + rope) * context * batch * layers
    return flops / (peak_flops(timer.gpu, "bf16") * FLASHMLA_COMPUTE_FRACTION)


def _rdma_gbs(table: tuple[tuple[int, float, float], ...], ranks: int) -> tuple[float, float]:
    """DeepEP's (dispatch, combine) GB/s at the table's EP size nearest below ``ranks`` (its smallest above)."""
    row = next((r for r in reversed(table) if r[0] <= ranks), table[0])
    return row[1], row[2]


def dispatch_combine_s(timer, tokens: float, *, decode: bool) -> float:
    """Seconds of every MoE layer's dispatch and combine for ``tokens`` tokens on the busiest attention rank
    (module docstring): DeepEP's all-to-all within the node over NVLink or across nodes at its RDMA figures
    (low-latency kernels at decode, normal ones at prefill)."""
    s, m = timer.s, timer.m
    moe_layers = sum(count for layer, count in m.layer_kinds() if layer.moe)
    k = m.experts_per_token or 1
    out = tokens * k * m.hidden_size * FP8_DISPATCH_BYTES
    back = tokens * k * m.hidden_size * 2
    if s.tp <= s.num_gpus or timer.inter is None:
        link: Link = timer.link
        one = 2 * link.latency_s + (out + back) / link.bytes_per_s
    else:
        table = DEEPEP_LOW_LATENCY_RDMA_GBS if decode else DEEPEP_NORMAL_RDMA_GBS
        d, c = _rdma_gbs(table, s.tp)
        scale = timer.inter.bytes_per_s / (DEEPEP_NIC_GBS * 1e9)
        one = 2 * timer.inter.latency_s + out / (d * 1e9 * scale) + back / (c * 1e9 * scale)
    return moe_layers * one


def layout_comms_s(timer, tokens: float, seqs: float, *, decode: bool) -> dict[str, float]:
    """The communication of one step of ``tokens`` tokens in ``seqs`` sequences under attention data parallelism,
    by kind: the MoE layers' dispatch and combine (``deepep``) or gather and reduce-scatter (``allgather``: one
    all-reduce's traffic of the whole step's tokens), and the dense layers' gather and reduce-scatter (the dense
    MLPs run split over the ``tp`` GPUs on the gathered tokens: SGLang's default ``moe_dense_tp_size``). A copy over
    whole nodes gathers hierarchically (:class:`~.comms.DataParallel`), as the tensor-parallel all-reduces do."""
    s, m = timer.s, timer.m
    dense_layers = sum(count for layer, count in m.layer_kinds() if not layer.moe)
    moe_layers = m.num_layers - dense_layers
    nbytes = tokens * m.hidden_size * 2
    if s.tp > s.num_gpus and timer.inter is not None:  # a copy over whole nodes: inside each, then across
        gather = DataParallel(per_node=s.num_gpus, nodes=s.tp // s.num_gpus, intra=timer.link,
                              inter=timer.inter).all_reduce_s(nbytes)
    else:
        gather = all_reduce_s(nbytes, s.tp, timer.link)
    extra = timer.timing.loop.all_reduce_s if timer.timing.loop else 0.0
    parts = {"tensor_parallel": dense_layers * (gather + extra)}
    if s.ep > 1 and s.moe_dispatch == "deepep":  # the resolver took the engine's own where none was set
        per_rank = tokens * rank_share(seqs, s.attention_ranks) / max(seqs, 1)
        parts["expert_dispatch"] = dispatch_combine_s(timer, per_rank, decode=decode)
    else:
        parts["expert_dispatch"] = moe_layers * (gather + extra)
    return parts


__all__ = ["dispatch_combine_s", "expanded_rows_s", "experts_s", "imbalance", "layout_comms_s", "mla_absorbed_s",
           "rank_share"]
