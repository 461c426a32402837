"""llama.cpp's prompt processing from the kernels ggml runs, and token generation on Apple silicon (Metal).

A prompt is processed in micro-batches of ``n_ubatch`` tokens (``-ub``, 512 by default: ``common/arg.cpp``); each
runs the whole graph once. Per micro-batch of ``u`` tokens (:func:`prefill_parts`):

- **matrix multiplications**, by the ggml type of each weight (:func:`gpuplan.model.gguf.tensor_types`, the types
  llama-quantize gives each tensor):

  - CUDA, quantized weights: MMQ, the quantized-matrix kernels (``ggml/src/ggml-cuda/mmq.cu``
    ``ggml_cuda_should_use_mmq`` at ggml-org/llama.cpp@027ef876): always on Turing and later (int8 tensor cores),
    on Volta only below ``MMQ_DP4A_MAX_BATCH_SIZE`` (64) rows; past that Volta dequantizes the weight to f16 and
    calls cuBLAS. MMQ's tiles unpack and scale the quantized blocks in integer and fp32 instructions beside the
    int8 MMAs; the public llama-bench tables put its rate in proportion to the SMs times their clock, not to the
    int8 tensor peak (an A100, 624 int8 TOPS, runs Llama-2-7B Q4_0 at the RTX 3090's pace, 284 TOPS; the RTX 4090
    with 128 SMs at 2.5 GHz three times as fast): ``LLAMA_CPP_MMQ_FLOP_PER_SM_CYCLE`` FLOPs per SM and clock,
    scaled by the type (``LLAMA_CPP_MMQ_TYPE_FACTOR``).
  - CUDA, f16/bf16 weights (and quantized ones past MMQ): cuBLAS ``GemmEx`` with ``CUBLAS_COMPUTE_16F``
    (``ggml-cuda.cu`` ``ggml_cuda_op_mul_mat_cublas``: ``use_fp16`` for f16 and quantized weights at
    ``GGML_PREC_DEFAULT``): the GEMM model's fp16 time with its math at the fp16-accumulate rate, twice the
    fp32-accumulate one on GeForce cards (:func:`cublas_s`), its f16 output converted to f32; a dequantized weight
    is written and read again as f16 first.
  - Metal: ``kernel_mul_mm`` (``ggml/src/ggml-metal``): simdgroup matrices on the shader ALUs, each block
    dequantized into threadgroup memory; a share of the GPU's FP32 rate (Apple's GPUs run FP16 at the same rate),
    lower for quantized weights than for f16 (``LLAMA_CPP_METAL_MATMUL_FRACTION``).

  Each is a roofline with the weight's bytes streamed once per micro-batch.
- **attention**: with flash attention (on by default where the backend has it: ``--flash-attn auto``), the causal
  score and value matmuls at the card's attention efficiency; without it (``-fa 0``, and every build before
  flash attention), ggml's own graph: KQ and KQV as batched GEMMs over every cache cell, and on CUDA the scores
  through memory where the L2 cannot hold them (:func:`unfused_attention_s`);
- **element-wise work**: ggml keeps activations in fp32 between kernels: the norms, rotary embedding, the KV
  cache copies in f16, residual adds and the gated activation, counted from the graph (``LLAMA_CPP_ACT_BYTES_*``),
  and on CUDA each matmul's input converted for its kernel (:func:`matmul_s`);
- **kernel launches**: a graph of ~``DECODE_KERNELS_PER_LAYER`` kernels per layer, each at least the launch latency.

Token generation on Metal (:func:`metal_decode_parts`): every weight the step reaches (the routed experts the
batch picks, :func:`streamed_bytes`) streamed once per token at a share of the
unified memory's bandwidth, plus a fixed time per layer (Metal's command encoding and the ~15 kernels of a layer):
the public M-series tables fit ``bytes / (BW x 0.89) + n_layers x t`` across F16, Q8_0 and Q4_0 (the Q4_0 runs are
not 'less efficient': they spend the same time per layer on a third of the bytes).

Token generation on CUDA (:func:`cuda_decode_parts`), the same two terms with their own constants. Up to
``MMVQ_MAX_BATCH_SIZE`` (8) rows a quantized weight runs ``mul_mat_vec_q`` (``ggml/src/ggml-cuda/mmvq.cu``, chosen in
``ggml-cuda.cu`` ``ggml_cuda_mul_mat`` when ``src1->ne[1] <= MMVQ_MAX_BATCH_SIZE``), which streams the quantized
blocks once for all the rows; an f16 weight runs the vector kernel ``mul_mat_vec_f`` (``mmvf.cu``). The step is the
weights' bytes at a share of the card's bandwidth (``LLAMA_CPP_CUDA_DECODE_BANDWIDTH_FRACTION``), on a roofline with
the dot products' rate (:func:`mmvq_flops`, which shows from ~4 rows on), plus a time per kernel
(``LLAMA_CPP_CUDA_KERNEL_S``) for each kernel the layers launch (:func:`layer_kernels`: counted from each layer's
structure after the fusions of the scenario's build), replayed as one CUDA graph (``ggml-cuda.cu``
``ggml_backend_cuda_graph_compute`` captures single-token batches), with the host's graph build per step spread over
them. Steps of 2 to 8 rows ran without a graph until PR #19645 (February 2026: an ``ADD`` of several rows turned
graphs off), at the same cost a kernel on the fitted rows (session 19: the RTX 3090's ``-ub 4``/``8`` rows fit 2.5 us
launched one by one against 2.6 in a graph at ``-ub 1``), so one constant serves both. From PR #22522 (May 2026) a
Hopper or Blackwell card overlaps each kernel's start with the one before it (programmatic dependent launch:
:func:`cuda_kernel_s`). llama-bench samples nothing, so no host loop is added on top. Past 8 rows MMQ runs and decode
takes the step timer's generic path. A prompt run in micro-batches of at most 8 tokens (``-ub 1..8``) is the same
step per micro-batch without the output matrix (only the last token's logits): JohannesGaessler's ``-ub 1, 4, 8``
prompt rows in llama.cpp PRs set the three constants (bench/data/llama-bench.csv).

A scenario's ``engine_version`` ``b<N>`` (llama.cpp's release tag) times that build's prompt path where it differs
from today's (:func:`build`): before b3121 quantized matmuls past 32 rows ran as dequantize + cuBLAS
(:func:`uses_mmq`), before b2540 every row of a micro-batch went through the output matrix (:func:`output_rows_s`),
before b3983 cuBLAS wrote the KQ scores in f16 (:func:`score_bytes`), before b6293 Metal walked each ``mul_mat_id``'s
id table one id at a time per expert and copied the routed rows out and back (:func:`expert_maps_s`); before b7819 a
routed expert's generation step of 2 to 8 rows ran MMQ, not MMVQ (:func:`routed_mmq`); and CUDA generation launches
the kernels of that build's graph (:data:`CUDA_KERNEL_CHANGES`, from b5778's swiglu to b10318's norm + rope).
"""

from __future__ import annotations

import math
from functools import lru_cache

from .. import overheads as oh
from ..hardware import GpuSpec
from ..model import gguf
from ..model.spec import ModelSpec
from ..scenario import Scenario
from ..tensors.kv import kv_bytes_per_sequence
from ..tensors.state import weight_format
from .flops import run_params
from .gemm import bandwidth, gemm_time_s
from .work import attends, attention_s, experts_hit, layer_head_dim, recurrent_scans_s, unread_expert_bytes

PLAIN = ("f32", "f16", "bf16")


def ftype(s: Scenario, m: ModelSpec) -> str:
    """The GGUF file type of ``s``: its ``gguf-<ftype>`` quant, else an f16 file (``convert_hf_to_gguf.py``'s
    default output type), which keeps a natively MXFP4 checkpoint's experts in MXFP4 (:func:`gguf.converted_type`:
    the types the memory counts too). MXFP4 weights run CUDA's MMQ (``mmq.cu`` ``mul_mat_q_case<GGML_TYPE_MXFP4>``)
    and MMVQ (``vec_dot_mxfp4_q8_1``) at :data:`~gpuplan.overheads.LLAMA_CPP_MMQ_TYPE_FACTOR_DEFAULT` (no
    like-for-like table read)."""
    fmt, _ = weight_format(s, m)
    return fmt.name[5:] if fmt.name.startswith("gguf-") else "f16"


@lru_cache(maxsize=64)
def _linear_types(m: ModelSpec, file_type: str) -> tuple[tuple[int, object, str], ...]:
    return tuple((i, lin, kind) for _, i, lin, kind in gguf.tensor_types(m, file_type) if kind != "f32")


def mmq_flops(gpu: GpuSpec, kind: str) -> float:
    """FLOP/s of CUDA's MMQ kernels for ggml type ``kind`` on ``gpu``: SMs x clock x
    :data:`~gpuplan.overheads.LLAMA_CPP_MMQ_FLOP_PER_SM_CYCLE` x the type's factor (module docstring); a card
    without an SM count and clock in the catalog takes its int8 tensor rate at the fraction the fitted cards reach."""
    factor = oh.LLAMA_CPP_MMQ_TYPE_FACTOR.get(kind, oh.LLAMA_CPP_MMQ_TYPE_FACTOR_DEFAULT)
    if gpu.sm_count and gpu.boost_clock_mhz:
        return oh.LLAMA_CPP_MMQ_FLOP_PER_SM_CYCLE * gpu.sm_count * gpu.boost_clock_mhz * 1e6 * factor
    int8 = gpu.peak_tflops("int8") or 2 * (gpu.peak_tflops("fp16") or 0.0)
    return int8 * 1e12 * oh.LLAMA_CPP_MMQ_INT8_FRACTION * factor


def cublas_s(gpu: GpuSpec, rows: float, k: float, n: float, *, count: float = 1, f16_acc: bool = True) -> float:
    """cuBLAS's fp16-accumulate GEMM (``CUBLAS_COMPUTE_16F``) of ``[rows x k] @ [k x n]`` (``count`` of them in one
    batched call): the GEMM model's fp16 time (:func:`~.gemm.gemm_time_s`: the card's achievable rate, shape and
    traffic), its math at the fp16-accumulate rate where the card has a faster one (GeForce: twice the
    fp32-accumulate rate PyTorch's GEMMs run at), on Ampere at the share of it llama-bench tables show
    (:data:`~gpuplan.overheads.LLAMA_CPP_CUBLAS_F16_AMPERE_SHARE`); ``f16_acc`` False: ``CUBLAS_COMPUTE_32F``."""
    fast = gpu.dense_tflops.get("fp16_tensor_fp16acc")
    slow = gpu.peak_tflops("fp16")
    speedup = fast / slow if fast and slow and f16_acc else 1.0
    if f16_acc and _ampere(gpu):  # cuBLAS's 16F kernels on Ampere (overheads.LLAMA_CPP_CUBLAS_F16_AMPERE_SHARE)
        speedup *= oh.LLAMA_CPP_CUBLAS_F16_AMPERE_SHARE
    return gemm_time_s(gpu, "fp16", rows, k, n, count=count, kernels=1, latency_s=0.0) / speedup


def mmq_stream_bw(gpu: GpuSpec) -> float:
    """Bytes/s at which CUDA's MMQ streams a weight: the card's bandwidth, or on an NVIDIA card whose SMs cannot keep up
    with it SMs x clock x :data:`~gpuplan.overheads.LLAMA_CPP_MMQ_WEIGHT_BYTES_PER_SM_CYCLE`: ``mul_mat_q`` runs one
    thread block an SM (``__launch_bounds__(..., 1)`` from Volta on, stream-k over ``nsm`` blocks: ``mmq.cuh``
    ``launch_mul_mat_q`` at ggml-org/ggml@06034b3c), which loads and unpacks each 128-row tile of the weight whatever
    the tile's columns, so at a few rows the SMs' work on the weight, not the bandwidth, sets the time (RTX 3090:
    320 GB/s of 936; RTX 4090: 742 of 1,008)."""
    bw = bandwidth(gpu)
    if gpu.vendor != "NVIDIA" or not (gpu.sm_count and gpu.boost_clock_mhz):
        return bw
    return min(bw, gpu.sm_count * gpu.boost_clock_mhz * 1e6 * oh.LLAMA_CPP_MMQ_WEIGHT_BYTES_PER_SM_CYCLE)


def _ampere(gpu: GpuSpec) -> bool:
    """NVIDIA compute capability 8.0 to 8.7 (GA100, GA10x, Orin), not 8.9 (Ada)."""
    return gpu.sm_major == 8 and gpu.capability != 89


def _hopper_or_later(gpu: GpuSpec) -> bool:
    """NVIDIA compute capability 9.0 or later (Hopper, Blackwell)."""
    return gpu.sm_major >= 9


def metal_flops(gpu: GpuSpec, kind: str) -> float:
    """FLOP/s of Metal's ``kernel_mul_mm`` for ggml type ``kind``: a share of the GPU's FP32 rate."""
    share = oh.LLAMA_CPP_METAL_MATMUL_FRACTION["plain" if kind in PLAIN else "quantized"]
    return (gpu.peak_tflops("fp32") or 0.0) * 1e12 * share


def build(s: Scenario) -> int | None:
    """The llama.cpp build ``s`` names (``engine_version`` ``b<N>``: the release tag, the commit count on master);
    None: the current code."""
    v = s.engine_version
    return int(v[1:]) if v and v.startswith("b") else None


def uses_mmq(gpu: GpuSpec, rows: float, build_no: int | None = None) -> bool:
    """Whether CUDA runs a quantized matmul of ``rows`` rows on MMQ (``ggml_cuda_should_use_mmq``): Turing and later
    always (int8 MMA), Volta below 64 rows, Pascal always. A build before PR #7676
    (:data:`~gpuplan.overheads.LLAMA_CPP_MMQ_TENSOR_CORES_BUILD`) ran MMQ only up to 32 rows on a card with fast
    fp16 (compute capability 6.0 and 7.0 on), dequantize + cuBLAS past that."""
    cc = gpu.capability or 80
    if build_no is not None and build_no < oh.LLAMA_CPP_MMQ_TENSOR_CORES_BUILD:
        return not (cc >= 70 or cc == 60) or rows <= oh.LLAMA_CPP_OLD_MMQ_MAX_BATCH
    if cc >= 75 or cc < 70:
        return True
    return rows < oh.LLAMA_CPP_MMQ_DP4A_MAX_BATCH


def _roofline(compute: float, traffic: float) -> float:
    p = oh.GEMM_ROOFLINE_SHARPNESS
    return (compute**p + traffic**p) ** (1 / p)


def matmul_s(gpu: GpuSpec, backend: str, kind: str, rows: float, params: float, in_features: float,
             build_no: int | None = None, *, tile_rows: float | None = None) -> float:
    """One weight of ``params`` elements (``in_features`` inputs) of ggml type ``kind`` multiplied by ``rows``
    activation rows: a roofline of its math and the weight's bytes, plus the fp32 input's conversion (CUDA: each
    MMQ call quantizes its input to q8_1, 4 bytes read and 1.125 written per element; cuBLAS takes it as f16, 4
    read and 2 written; Metal reads the fp32 input in the kernel) and, for cuBLAS, its output's: ``GemmEx`` with
    ``CUBLAS_COMPUTE_16F`` writes f16 into a pool buffer that ``to_fp32_cuda`` converts into the f32 result, 2
    bytes read and 4 written per output element (``ggml_cuda_op_mul_mat_cublas`` at ggerganov/llama.cpp@f30ea47a,
    March 2024, and at c392e509, February 2025; MMQ writes f32 itself). ``build_no``: the llama.cpp build
    (:func:`uses_mmq`). ``tile_rows``: the rows the tiles of MMQ or Metal's ``kernel_mul_mm_id`` compute when they
    outnumber ``rows`` (a routed expert's share of a micro-batch, :func:`expert_tile_rows`)."""
    per, size = gguf.BLOCKS[kind]
    weight = params * size / per
    bw = bandwidth(gpu)
    tiled = 2 * max(rows, tile_rows or 0.0) * params  # the math the tiles do
    if backend == "metal":
        return _roofline(tiled / metal_flops(gpu, kind), weight / bw)
    if kind not in PLAIN and uses_mmq(gpu, rows, build_no):
        return _roofline(tiled / mmq_flops(gpu, kind), weight / mmq_stream_bw(gpu)) + rows * in_features * 5.125 / bw
    dequant = 0.0 if kind in PLAIN else (weight + 2 * params) / bw  # write the f16 copy cuBLAS then reads
    out_features = params / in_features
    return dequant + cublas_s(gpu, rows, in_features, out_features) + rows * (in_features + out_features) * 6.0 / bw


def linears_s(s: Scenario, m: ModelSpec, gpu: GpuSpec, backend: str, tokens: float, *,
              routed_only: bool = False) -> float:
    """Every decoder linear for a micro-batch of ``tokens`` rows (routed experts: the experts the tokens reach, each
    with its share of the ``tokens x k`` rows, all of them run by one ``mul_mat_id``). Layers split over GPUs
    (``--split-mode layer``) run one after another for one micro-batch, so the time is the whole model's.
    ``routed_only``: the routed experts alone (:func:`cuda_decode_parts`)."""
    total = 0.0
    for i, lin, kind in _linear_types(m, ftype(s, m)):
        layer = m.layers[i]
        if routed_only and not (lin.group == "experts" and lin.count > 1):
            continue
        copies, rows, tile = lin.count, tokens, None
        if lin.group == "experts" and lin.count > 1:  # the experts the tokens reach, E (1 - (1 - k/E)^T) of them
            k = layer.experts_per_token
            copies = lin.count * (1 - (1 - k / lin.count) ** tokens)
            rows = tokens * k / copies
            width = mmq_tile_width(gpu, tokens) if backend == "cuda" else oh.LLAMA_CPP_METAL_MM_ID_TILE_COLUMNS
            tile = expert_tile_rows(round(tokens), k / lin.count, width)
            if backend == "metal":
                total += expert_maps_s(gpu, tokens, k, lin.in_features, lin.out_features, build(s))
        total += copies * matmul_s(gpu, backend, kind, rows, lin.in_features * lin.out_features, lin.in_features,
                                   build(s), tile_rows=tile)
    return total


def expert_maps_s(gpu: GpuSpec, tokens: float, k: int, in_features: int, out_features: int,
                  build_no: int | None) -> float:
    """The id maps around one Metal ``mul_mat_id`` of ``tokens`` tokens, ``k`` experts each, in a build before PR
    #15541 (:data:`~gpuplan.overheads.LLAMA_CPP_METAL_MMID_MAP_BUILD`; ggml-metal.metal and ggml-metal.m at
    ggml-org/ggml@878a093f, PR #13388's sync): ``kernel_mul_mm_id_map0`` runs one threadgroup per expert, side by side,
    each walking all ``tokens x k`` ids of ``src2`` in device memory one after another (``for i21 .. for i20 ..
    if (src2_i32[i20] != ide) continue``), so the walk takes ``tokens x k`` ids at
    :data:`~gpuplan.overheads.LLAMA_CPP_METAL_MAP0_ID_S` whatever the number of experts; it copies each routed
    token's row into an f16 buffer (4 bytes read, 2 written an input element), and ``kernel_mul_mm_id_map1`` copies
    each routed row of the f32 result back (4 read, 4 written an output element). Below
    :data:`~gpuplan.overheads.LLAMA_CPP_METAL_MM_ID_MIN_ROWS` tokens the build ran ``mul_mv_id``, with no maps;
    from PR #15541 on the maps are built in threadgroup memory and the matmul reads and writes the rows in place
    (not timed: a few microseconds). A build before PR #13388 ran an older kernel, timed as this one."""
    if build_no is None or build_no >= oh.LLAMA_CPP_METAL_MMID_MAP_BUILD or tokens < oh.LLAMA_CPP_METAL_MM_ID_MIN_ROWS:
        return 0.0
    ids = tokens * k
    return ids * oh.LLAMA_CPP_METAL_MAP0_ID_S + ids * (6 * in_features + 8 * out_features) / bandwidth(gpu)


def mmq_tile_width(gpu: GpuSpec, ncols: float) -> int:
    """MMQ's tile width ``mmq_x`` for ``ncols`` columns (``ggml/src/ggml-cuda/mmq.cuh`` ``mul_mat_q_case`` at
    ggml-org/llama.cpp@00cd2085): the first multiple of the granularity (16 from 48 on with int8 MMA, else 8) up to
    ``mmq_x_max`` (128 with Turing's MMA, 64 before) that covers ``ncols`` in the fewest tiles."""
    mma = (gpu.capability or 80) >= 75
    best, fewest = 8, math.inf
    for width in range(8, (128 if mma else 64) + 1, 8):
        if mma and width >= 48 and width % 16:
            continue
        tiles = math.ceil(ncols / width)
        if tiles < fewest:
            best, fewest = width, tiles
    return best


@lru_cache(maxsize=4096)
def expert_tile_rows(tokens: int, share: float, width: int) -> float:
    """The rows a routed expert's matmul computes in a micro-batch of ``tokens``: its tokens fill whole tiles of
    ``width`` columns, counted over how many it gets when each token picks it with probability ``share`` (k/E, the
    uniform routing :func:`linears_s` counts the reached experts with), given it gets one. CUDA:
    ``mul_mat_id`` runs one MMQ launch over every expert with the micro-batch's ``ne12`` tokens as ``ncols_max``
    (``ggml_cuda_mul_mat_q`` at ggml-org/llama.cpp@027ef876), so the width is chosen for all the tokens
    (:func:`mmq_tile_width`: 128 at ``-ub 512``, four times Qwen3-30B-A3B's 32 rows an expert). Metal:
    ``kernel_mul_mm_id`` is dispatched as ``((ne21 + 31)/32, (ne01 + 63)/64, ne02)`` threadgroups (ggml-metal-ops.cpp
    ``ggml_metal_op_mul_mat_id``), 32 columns of an expert's tokens each, so an expert sent 33 tokens runs two. (RDNA3/4
    pick the width for the mean rows an expert; llama.cpp PR #26977 proposes it for NVIDIA: +5 to +13 % at ``-ub``
    128 to 512.)"""
    n = tokens
    if share >= 1:
        return math.ceil(n / width) * width
    mean, spread = n * share, 12 * math.sqrt(n * share * (1 - share))
    total = 0.0
    for r in range(max(1, math.floor(mean - spread)), min(n, math.ceil(mean + spread) + width) + 1):
        log_pmf = math.lgamma(n + 1) - math.lgamma(r + 1) - math.lgamma(n - r + 1) + r * math.log(share) \
            + (n - r) * math.log1p(-share)
        total += math.exp(log_pmf) * math.ceil(r / width) * width
    return total / -math.expm1(n * math.log1p(-share))


def output_rows_s(s: Scenario, m: ModelSpec, gpu: GpuSpec, backend: str, rows: float) -> float:
    """The output matrix over ``rows`` more rows than the sequences' last ones: a build before PR #6122
    (:data:`~gpuplan.overheads.LLAMA_CPP_LAST_ROW_OUTPUT_BUILD`) multiplied every row of a micro-batch by it
    (``build_llama`` had no ``inp_out_ids``), later builds only the rows whose logits are kept (0 here: the step
    timer adds those)."""
    b = build(s)
    if b is None or b >= oh.LLAMA_CPP_LAST_ROW_OUTPUT_BUILD or rows <= 0:
        return 0.0
    file_type = ftype(s, m)
    plain = gguf.FTYPES[file_type]  # an f16/bf16/f32 file keeps its output in that type (gguf.tensor_types)
    kind = plain if plain in PLAIN else gguf.output_type(file_type, m.embedding_dim, m.family)
    return matmul_s(gpu, backend, kind, rows, m.embedding_dim * m.vocab_size, m.embedding_dim, b)


def unfused_attention_s(s: Scenario, m: ModelSpec, gpu: GpuSpec, backend: str, rows: int, keys: int) -> float:
    """Attention without flash attention for a micro-batch of ``rows`` tokens over ``keys`` cache cells, as ggml
    runs it (src/llama.cpp ``llm_build_kqv``): ``kq = mul_mat(k, q)`` over every cell of the view (no causal
    skipping: the mask is added in ``soft_max_ext``), then ``kqv = mul_mat(v, kq)``: two batched GEMMs per head
    (CUDA: ``ggml_cuda_mul_mat_batched_cublas`` on f16 copies of the inputs, KQ at :func:`kq_f16_scores`'s
    precision, KQV at ``CUBLAS_COMPUTE_16F``; Metal: ``kernel_mul_mm`` at its f16 rate), and on CUDA the score
    matrix's trips between those kernels (:func:`score_bytes` a score) where a layer's f32 scores do not fit in the
    L2 a kernel can count on (:func:`scores_in_l2`)."""
    gemm = scores = 0.0
    for layer, count in m.layer_kinds():
        if not attends(layer):
            continue
        d, heads = layer_head_dim(m, layer), m.num_heads
        if backend == "metal":
            gemm += count * 2 * 2 * heads * rows * keys * d / metal_flops(gpu, "f16")
            continue
        kq_f16 = kq_f16_scores(build(s))  # KQ at GGML_PREC_DEFAULT (CUBLAS_COMPUTE_16F) before PR #10015
        gemm += count * (cublas_s(gpu, rows, d, keys, count=heads, f16_acc=kq_f16)
                         + cublas_s(gpu, rows, keys, d, count=heads))
        if not scores_in_l2(gpu, heads * rows * keys * 4.0):
            scores += count * heads * rows * keys * score_bytes(build(s))
    return gemm + scores / bandwidth(gpu)


def scores_in_l2(gpu: GpuSpec, nbytes: float) -> bool:
    """Whether one layer's ``nbytes`` of f32 scores stay in the card's L2 between the kernels that write and read
    them: an L2 partition's share holds them (the A100's two 20 MB halves each cache what their SMs read, so the
    34 MB of Llama 7B's scores at pp512 go to memory; the RTX 4090's 72 MB keeps them). Evidence: PR #6017's A100
    F16 table adds 5.4 to 6.0 ms a micro-batch per 512 more cells (pp512 to pp8192: 4.2 ms of score traffic and
    1.7 ms of GEMMs here), while the RTX 4090's F16 and Q4_0 prompts without flash attention (PRs #4766, #7676)
    are timed within 10 % without any. A card without an L2 size in the catalog is taken to hold them (no traffic
    counted, as for the Ada and Blackwell GeForce cards' 48 to 128 MB)."""
    if not gpu.l2_cache_mb:
        return True
    return nbytes <= gpu.l2_cache_mb * 1e6 / gpu.l2_partitions


def score_bytes(build_no: int | None) -> float:
    """Bytes each attention score moves between CUDA kernels without flash attention: cuBLAS writes it (f16 before
    PR #10015, :data:`~gpuplan.overheads.LLAMA_CPP_KQ_F32_BUILD`, which ``to_fp32_cuda`` then reads (2) and writes
    in f32 (4); f32 from it: 4), ``soft_max_ext`` reads 4 and writes 4, ``mul_mat(v, kq)`` converts its f32 input
    to f16 (reads 4, writes 2) and cuBLAS reads that copy (2): 24 bytes, 20 from b3983."""
    return (2.0 + 6.0 if kq_f16_scores(build_no) else 4.0) + 8.0 + 6.0 + 2.0


def kq_f16_scores(build_no: int | None) -> bool:
    """Whether the build ran KQ at ``GGML_PREC_DEFAULT`` (cuBLAS ``CUBLAS_COMPUTE_16F`` into f16 scores): before
    PR #10015 (:data:`~gpuplan.overheads.LLAMA_CPP_KQ_F32_BUILD`), which set ``GGML_PREC_F32`` on it
    (``CUBLAS_COMPUTE_32F``, f32 scores)."""
    return build_no is not None and build_no < oh.LLAMA_CPP_KQ_F32_BUILD


def elementwise_s(m: ModelSpec, gpu: GpuSpec, tokens: float) -> float:
    """The fp32 activations ggml moves between kernels (module docstring), per token and layer."""
    total = 0.0
    for layer in m.layers:
        mlp = max((lin.in_features for lin in layer.linears if lin.name in ("down_proj", "w2", "fc2")), default=0)
        inter = mlp * (layer.experts_per_token if layer.moe else 1)
        total += m.hidden_size * oh.LLAMA_CPP_ACT_BYTES_PER_HIDDEN + layer.kv_dims * oh.LLAMA_CPP_ACT_BYTES_PER_KV \
            + inter * oh.LLAMA_CPP_ACT_BYTES_PER_MLP
    return tokens * total / bandwidth(gpu)


def prefill_parts(timer, tokens: int, *, context: int = 0, seqs: int = 1) -> dict[str, float]:
    """Seconds by kind of work of llama.cpp prefilling ``tokens`` tokens after ``context`` cached ones on the step
    timer's card, micro-batch by micro-batch (module docstring). Layers held in system RAM run on the GPU too for a
    prompt (ggml's op offload copies their weights over PCIe: the step timer adds that)."""
    s, m, gpu = timer.s, timer.m, timer.gpu
    backend = timer.timing.kernels.removeprefix("ggml-")
    ub = s.ubatch_tokens or oh.LLAMA_CPP_UBATCH
    if backend == "cuda" and ub <= oh.LLAMA_CPP_MMVQ_MAX_BATCH:
        return small_batch_prefill_parts(s, m, gpu, tokens, ub, context)
    parts = {"gemm": 0.0, "attention": 0.0, "ssm_scan": 0.0, "elementwise": 0.0, "kernel_latency": 0.0}
    done, linears = 0, {}  # a micro-batch's linears, by its rows: every full one costs the same
    per_token = elementwise_s(m, gpu, 1)  # the activations' bytes grow with the rows alone
    while done < tokens:
        u = min(ub, tokens - done)
        if u not in linears:
            linears[u] = linears_s(s, m, gpu, backend, u)
        parts["gemm"] += linears[u]
        per_seq = max(math.ceil(u / seqs), 1)
        parts["gemm"] += output_rows_s(s, m, gpu, backend, u if done + u < tokens else u - seqs)
        if s.flash_attention == "off" and backend in ("cuda", "metal"):
            pad = oh.LLAMA_CPP_KV_PAD_NO_FA
            keys = math.ceil((context + done + u) / pad) * pad
            parts["attention"] += unfused_attention_s(s, m, gpu, backend, u, keys)
        else:
            parts["attention"] += attention_s(m, gpu, "fp16", seqs, per_seq, kernel=timer.kernel,
                                              context=context + done)
        parts["ssm_scan"] += recurrent_scans_s(m, gpu, seqs, per_seq)
        parts["elementwise"] += u * per_token
        parts["kernel_latency"] += oh.DECODE_KERNELS_PER_LAYER * m.num_layers * oh.GEMM_KERNEL_LATENCY_S
        done += u
    return parts


def streamed_bytes(s: Scenario, m: ModelSpec, tokens: float = 1, *, head: bool = True) -> float:
    """Bytes a GGUF's generation step of ``tokens`` sequences reads: every layer's weights but only the routed
    experts the tokens reach (``ggml_mul_mat_id`` multiplies the rows of the experts the router picked; the others
    are not read), and the output matrix unless ``head`` is False (the token embedding is one row per token:
    ``get_rows``)."""
    parts = gguf.weight_bytes(m, ftype(s, m))
    # tied: the output reads token_embd (not the per-layer tables beside it, which are looked up)
    head = (parts["lm_head"] or gguf.token_embedding_bytes(m, ftype(s, m))) if head else 0.0
    unread = unread_expert_bytes(((m.layers[i], lin, gguf.type_bytes(kind, lin.weight_params))
                                  for _, i, lin, kind in gguf.tensor_types(m, ftype(s, m))), tokens)
    return sum(v for k, v in parts.items() if k not in ("embeddings", "lm_head", "vision")) + head - unread


def layers_read_share(s: Scenario, m: ModelSpec, tokens: float) -> float:
    """The share of the decoder layers' GGUF bytes a step of ``tokens`` sequences reads (:func:`streamed_bytes`
    without the head, over every layer's bytes): 1 for a dense model; for an MoE, the routed experts the tokens do
    not reach stay unread wherever the layer runs, on the GPU or on the CPU (ggml-cpu's
    ``ggml_compute_forward_mul_mat_id`` multiplies the rows of the picked experts only)."""
    parts = gguf.weight_bytes(m, ftype(s, m))
    layers = sum(v for k, v in parts.items() if k not in ("embeddings", "lm_head", "vision"))
    return streamed_bytes(s, m, tokens, head=False) / layers if layers else 1.0


def metal_decode_parts(s: Scenario, m: ModelSpec, gpu: GpuSpec, batch: int, context: float, *, weight_bytes: float,
                       bandwidth_fraction: float, layer_s: float, matmul_flops: float) -> dict[str, float]:
    """One token generation step on Apple silicon: ``weight_bytes`` (and the KV cache) streamed once at
    ``bandwidth_fraction`` of the unified memory's bandwidth, and ``layer_s`` per layer (module docstring); layers
    split over machines run one after another, so the time is the whole model's. The weights' stream is never
    shorter than the step's matrix math, ``2 x batch x`` the parameters a token multiplies
    (:func:`~gpuplan.speed.flops.run_params`), at ``matmul_flops`` FLOP/s (the engine's matmul rate on the shader
    ALUs): one row's math hides behind the stream, a batch of 64 on an M3 Pro does not (fuzz_s31: 70B Q4 at batch
    32 was timed at 62 tokens/s, 8.7 TFLOP/s on a 6.4 TFLOPS GPU)."""
    bps = gpu.bandwidth_gbs * 1e9 * bandwidth_fraction
    kv = batch * kv_bytes_per_sequence(s, m, int(context))
    math_s = 2 * batch * run_params(m) / matmul_flops if matmul_flops > 0 else 0.0
    return {"weights": max(weight_bytes / bps, math_s), "kv_cache": kv / bps, "kernel_latency": m.num_layers * layer_s}


def cuda_decode_parts(s: Scenario, m: ModelSpec, gpu: GpuSpec, tokens: int, kv_bytes: float, *,
                      head: bool = True) -> dict[str, float]:
    """One step of ``tokens`` rows (at most ``MMVQ_MAX_BATCH_SIZE``) on CUDA: the weights the step reaches
    (:func:`streamed_bytes`) and ``kv_bytes`` of cache streamed at
    :data:`~gpuplan.overheads.LLAMA_CPP_CUDA_DECODE_BANDWIDTH_FRACTION` of the card's bandwidth, and
    :func:`cuda_kernel_s` for each kernel the layers launch (:func:`cuda_kernels`)."""
    bps = gpu.bandwidth_gbs * 1e9 * oh.LLAMA_CPP_CUDA_DECODE_BANDWIDTH_FRACTION
    weights, per_row, routed = streamed_bytes(s, m, tokens, head=head), streamed_bytes(s, m, 1, head=head), 0.0
    if tokens > 1 and routed_mmq(s):  # the routed experts through MMQ, the rest through MMVQ
        weights -= routed_read_bytes(s, m, tokens)
        per_row -= routed_read_bytes(s, m, 1)
        routed = linears_s(s, m, gpu, "cuda", tokens, routed_only=True)
    # each row meets the weights one token reaches (a routed expert multiplies only the rows sent to it)
    flops = 2 * tokens * per_row / gguf.linear_bytes_per_param(m, ftype(s, m))
    return {"weights": _roofline(flops / mmvq_flops(gpu), weights / bps) + routed, "kv_cache": kv_bytes / bps,
            "kernel_latency": cuda_kernels(s, m) * cuda_kernel_s(s, gpu)}


def cuda_kernel_s(s: Scenario, gpu: GpuSpec) -> float:
    """Seconds each kernel of a CUDA generation step adds: :data:`~gpuplan.overheads.LLAMA_CPP_CUDA_KERNEL_S`, less
    :data:`~gpuplan.overheads.LLAMA_CPP_CUDA_PDL_SAVING_S` where the build launches with programmatic dependent launch
    (from PR #22522, :data:`~gpuplan.overheads.LLAMA_CPP_CUDA_PDL_BUILD`; today's code has it) on a card of compute
    capability 9.0 or later (Hopper, Blackwell: ggml-cuda's ``ggml_cuda_pdl_sync`` compiles to nothing below)."""
    b = build(s)
    pdl = (b is None or b >= oh.LLAMA_CPP_CUDA_PDL_BUILD) and _hopper_or_later(gpu)
    return oh.LLAMA_CPP_CUDA_KERNEL_S - (oh.LLAMA_CPP_CUDA_PDL_SAVING_S if pdl else 0.0)


def routed_mmq(s: Scenario) -> bool:
    """Whether the build runs a routed expert's ``mul_mat_id`` of 2 to 8 rows on MMQ, not MMVQ: before PR #18958
    (:data:`~gpuplan.overheads.LLAMA_CPP_MMVQ_MOE_BATCH_BUILD`) ``ggml_cuda_mul_mat_id`` took MMVQ only for one
    row (``ne2 == 1``) and sent every larger batch to ``ggml_cuda_mul_mat_q`` with the ids (ggml-cuda.cu at PR
    #15631's merge, its ggml sync ggml-org/ggml@81415da3), so the reached experts ran MMQ's tiles
    (:func:`expert_tile_rows`: 8 columns for 8 tokens, whatever an expert got); from it ``get_mmvq_mmid_max_batch``
    keeps small batches on MMVQ. None: today's code."""
    b = build(s)
    return b is not None and b < oh.LLAMA_CPP_MMVQ_MOE_BATCH_BUILD


def routed_read_bytes(s: Scenario, m: ModelSpec, tokens: float) -> float:
    """Bytes of the routed experts a step of ``tokens`` rows reads (the experts they reach: ``experts_hit``), of
    the linears :func:`linears_s` times."""
    return sum(gguf.type_bytes(kind, lin.weight_params) * experts_hit(m.layers[i], tokens) / lin.count
               for i, lin, kind in _linear_types(m, ftype(s, m)) if lin.group == "experts" and lin.count > 1)


def mmvq_flops(gpu: GpuSpec) -> float:
    """FLOP/s of MMVQ's dot products (``vec_dot_*_q8_1``: dp4a on each block, unpacked in integer instructions):
    SMs x clock x :data:`~gpuplan.overheads.LLAMA_CPP_MMVQ_FLOP_PER_SM_CYCLE`, or the MMQ fallback's share of the
    int8 rate scaled alike for a card without an SM count. It only shows past a few rows: #15802's RTX 3090 runs
    Llama 8B Q4_0 in 6.4 ms a step for 1 row and 13.7 ms for 8."""
    per_cycle = oh.LLAMA_CPP_MMVQ_FLOP_PER_SM_CYCLE
    if gpu.sm_count and gpu.boost_clock_mhz:
        return per_cycle * gpu.sm_count * gpu.boost_clock_mhz * 1e6
    return mmq_flops(gpu, "q4_0") * per_cycle / oh.LLAMA_CPP_MMQ_FLOP_PER_SM_CYCLE


def small_batch_prefill_parts(s: Scenario, m: ModelSpec, gpu: GpuSpec, tokens: int, ub: int,
                              context: int) -> dict[str, float]:
    """A prompt of ``tokens`` run in CUDA micro-batches of ``ub`` <= 8 tokens: each one a :func:`cuda_decode_parts`
    step without the output matrix, reading the cache at the prompt's mean depth."""
    steps = math.ceil(tokens / ub)
    kv = kv_bytes_per_sequence(s, m, int(context + tokens / 2))
    step = cuda_decode_parts(s, m, gpu, ub, kv, head=False)
    return {"gemm": steps * step["weights"], "attention": steps * step["kv_cache"],
            "kernel_latency": steps * step["kernel_latency"]}


# The first llama.cpp build (release tag) with each change to a decode layer's CUDA kernels: the merge date of the PR
# (its ggml-org/ggml sync commit in bench/data/llama-cpp-cuda-kernels.csv) placed between known tags (b6263 2025-08-24,
# b6341 2025-09-02, b7818 2026-01-24, b9578 2026-06-11), so +-20 builds; b6343 made flash attention llama-bench's
# default (``--flash-attn auto``).
CUDA_KERNEL_CHANGES = {
    "glu": 5778,  # PR #14158: GGML_OP_GLU, swiglu one kernel (silu + mul)
    "rms_norm_mul": 5986,  # PR #14800: rms_norm + mul in one kernel (ggml_cuda_op_rms_norm_fused)
    "add_chain": 6306,  # PR #15631: a chain of adds in one kernel (ggml_cuda_op_fused_add)
    "flash_auto": 6343,  # --flash-attn auto, on where the backend has it
    "topk_moe": 6577,  # PR #16130: softmax, argsort, get_rows (sum_rows, div) in one kernel (ggml_cuda_op_topk_moe)
    "topk_moe_late_softmax": 6844,  # PR #16649: the same with the softmax after the top-k (gpt-oss)
    "gemv": 6895,  # PR #16715: mul_mat_vec + bias, gate + up + glu in one kernel (ggml_cuda_should_fuse_mul_mat)
    "rope_set_rows": 7080,  # PR #16884: rope + view + set_rows of K in one kernel (ggml_cuda_op_rope_fused)
    "moe_scale": 7882,  # PR #19126: the experts' weight scale in the top-k kernel (args.scale), none for 1.0
    "norm_rope": 10318,  # PR #26767: rms_norm + mul + rope (+ view + set_rows) of Q and K in one kernel each
}


def cuda_kernels(s: Scenario, m: ModelSpec) -> int:
    """CUDA kernels one generation step of ``s``'s llama.cpp build launches in ``m``'s decoder layers
    (:func:`layer_kernels`, each layer from its structure), flash attention as ``s`` sets it (``auto`` is off before
    b6343: llama-bench's default then)."""
    b = build(s)
    on = s.flash_attention == "on" or (s.flash_attention != "off" and _has(b, "flash_auto"))
    return _model_kernels(m, on, ftype(s, m) not in PLAIN, b)


@lru_cache(maxsize=256)
def _model_kernels(m: ModelSpec, flash: bool, quantized: bool, build_no: int | None) -> int:
    return sum(layer_kernels(m, i, flash=flash, quantized=quantized, build_no=build_no) for i in range(m.num_layers))


def _has(build_no: int | None, change: str) -> bool:
    """Whether build ``build_no`` (None: today's code) has :data:`CUDA_KERNEL_CHANGES` ``change``."""
    return build_no is None or build_no >= CUDA_KERNEL_CHANGES[change]


def layer_kernels(m: ModelSpec, i: int, *, flash: bool = True, quantized: bool = True,
                  build_no: int | None = None) -> int:
    """CUDA kernels decoder layer ``i`` of ``m`` launches for one token in llama.cpp (batch 1, quantized weights
    through MMVQ), counted from the layer's structure as bench/data/llama-cpp-cuda-kernels.csv counts Llama, Qwen3,
    Qwen3-MoE, gpt-oss and DeepSeek-V2-Lite: each graph node ggml-cuda runs (views free) after ggml-cuda.cu's fusions
    in build ``build_no`` (:data:`CUDA_KERNEL_CHANGES`; ``ggml_cuda_can_fuse``, ``ggml_cuda_should_fuse_mul_mat``,
    ``ggml_cuda_op_rms_norm_fused``, ``ggml_cuda_op_fused_add``, ``ggml_cuda_op_topk_moe``,
    ``ggml_cuda_op_rope_fused``), in the graphs of llama.cpp's src/llama-graph.cpp ``build_norm``, ``build_attn``,
    ``build_ffn`` and ``build_moe_ffn``. A quantized matmul is two kernels (``quantize_row_q8_1_cuda``, then
    ``mul_mat_vec_q``), an f16 one or the router (llama-quant.cpp leaves expert gating tensors unquantized) one
    (``mul_mat_vec_f``); flash attention two (the vector kernel and ``flash_attn_combine_results``), without it KQ,
    soft_max, KQV and a cont. State-space and linear-attention mixers (not read): their matmuls and two kernels."""
    layer = m.layers[i]
    mm = 2 if quantized else 1
    norm = 1 if _has(build_no, "rms_norm_mul") else 2
    mixer = [lin for lin in layer.linears if lin.group == "attention"]
    total = _norms(m, layer) * norm
    if layer.attention in ("linear", "mamba", "conv"):
        total += len(mixer) * mm + 2
    else:
        total += _attention_kernels(m, layer, mm, norm, flash, build_no) + (2 if layer.attention == "hybrid" else 0)
    total += 1 + _mlp_kernels(m, layer, mm, build_no)  # the residual adds: one here, one in the MLP's count
    return total


def _norms(m: ModelSpec, layer) -> int:
    """The hidden-size norms of ``layer`` (``attn_norm``, ``ffn_norm``, Gemma's post-norms): its norm weights less
    MLA's latent norms and the per-head q/k norms (:func:`_qk_norm`), in vectors of the hidden size."""
    return (layer.norm_params - _mla_norm_params(m, layer)) // m.hidden_size


def _mla_norm_params(m: ModelSpec, layer) -> int:
    mla = m.mla or {}
    return (mla.get("kv_lora_rank") or 0) + (mla.get("q_lora_rank") or 0) if layer.attention == "mla" else 0


def _qk_norm(m: ModelSpec, layer) -> bool:
    """Whether queries and keys are normed before rope (Qwen3's q_norm and k_norm): norm weights beyond whole
    vectors of the hidden size."""
    return (layer.norm_params - _mla_norm_params(m, layer)) % m.hidden_size > 0


def _attention_kernels(m: ModelSpec, layer, mm: int, norm: int, flash: bool, b: int | None) -> int:
    """The attention's kernels (:func:`layer_kernels`): its matmuls (a bias add each until PR #16715's GEMV
    fusion), rope of Q and K and the cache writes of K and V (rope + set_rows of K one kernel from PR #16884; with
    q/k norms norm + rope of each one from PR #26767), and the attention. MLA (absorbed, llama-model.cpp's
    deepseek2 builder): ``wk_b`` and ``wv_b`` in place of ``kv_b``, the latent's norm (and q-LoRA's), rope of the
    two rope parts, their two concats, and a cont after the attention."""
    linears = [lin for lin in layer.linears if lin.group == "attention"]
    bias = 0 if _has(b, "gemv") else 1
    total = sum(mm * (2 if lin.name == "kv_b_proj" else 1) + bias * lin.bias for lin in linears)
    attention = 2 if flash else 3
    if layer.attention == "mla":
        latent = 2 if (m.mla or {}).get("q_lora_rank") else 1
        return total + latent * norm + 2 + 2 + 2 + attention + 1
    if _qk_norm(m, layer) and _has(b, "norm_rope"):
        q, k = 1, 1
    else:
        qk = norm if _qk_norm(m, layer) else 0
        q, k = qk + 1, qk + (1 if _has(b, "rope_set_rows") else 2)
    return total + q + k + 1 + attention + (0 if flash else 1)


def _ffn_kernels(m: ModelSpec, linears: list, mm: int, b: int | None) -> int:
    """A feed-forward's kernels (``build_ffn``, or ``build_moe_ffn``'s ``mul_mat_id``): gate and up (one fused
    ``gate_up_proj`` counts as both) and their glu, one quantize and one matmul from PR #16715's GEMV fusion;
    down; a bias add (``add_id`` for experts) after each matmul until that fusion. Not gated: up, the activation,
    down."""
    gemv, glu = _has(b, "gemv"), 1 if _has(b, "glu") else 2
    down = [lin for lin in linears if lin.name in ("down_proj", "w2", "fc2", "c_proj")]
    up = [lin for lin in linears if lin not in down]
    bias = 0 if gemv else sum(lin.bias for lin in linears) + any(lin.bias and "gate_up" in lin.name for lin in up)
    if not m.gated_mlp:
        return 2 * mm + 1 + bias
    return mm + bias + (mm if gemv else 2 * mm + glu)


def _mlp_kernels(m: ModelSpec, layer, mm: int, b: int | None) -> int:
    """The MLP's kernels and the residual add after it. An MoE (``build_moe_ffn``): the unquantized router (a bias
    add until PR #16715), the top-k (softmax, argsort, get_rows, with ``norm_topk_prob`` sum_rows and div; gpt-oss
    argsort, get_rows, softmax over the top-k) one kernel from PR #16130 (#16649 for gpt-oss's order), a scale
    where the config has ``routed_scaling_factor`` until PR #19126, the experts, the weights' mul, the ``k - 1``
    adds over the experts in chains of up to 8 from PR #15631, the shared experts and their add."""
    groups = {g: [lin for lin in layer.linears if lin.group == g] for g in ("mlp", "experts", "shared_experts")}
    if not layer.moe:
        return _ffn_kernels(m, groups["mlp"], mm, b) + 1 if groups["mlp"] else 0
    router = [lin for lin in layer.linears if lin.group == "router"]
    total = 1 + (0 if _has(b, "gemv") else sum(lin.bias for lin in router))
    late = m.family == "gpt_oss"
    if _has(b, "topk_moe_late_softmax" if late else "topk_moe"):
        total += 1
    else:
        total += 3 + (0 if late or not m.config.get("norm_topk_prob") else 2)
    total += 1 if "routed_scaling_factor" in m.config and not _has(b, "moe_scale") else 0
    adds = layer.experts_per_token - 1
    total += _ffn_kernels(m, groups["experts"], mm, b) + 1 + (math.ceil(adds / 8) if _has(b, "add_chain") else adds)
    if groups["shared_experts"]:
        total += _ffn_kernels(m, groups["shared_experts"], mm, b) + 1
    return total + 1
