"""Empirical constants of the memory estimate, each with its source. Calibration changes this file only.

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
ALLOCATOR_ROUND_BYTES = 512
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
# min_8bit_size = 4096 elements keep 32-bit states.
BNB_STATE_BLOCK = 256
BNB_MIN_8BIT_SIZE = 4096

# llama.cpp: compute buffer for the micro-batch (n_ubatch = 512 by default, llama.cpp common/arg.cpp).
LLAMA_CPP_UBATCH = 512

# vLLM: default block size of the paged KV cache (tokens), max_num_batched_tokens when unset
# (vLLM V1 engine defaults: 16 and 8192) and max_num_seqs (256).
VLLM_BLOCK_TOKENS = 16
VLLM_MAX_BATCHED_TOKENS = 8192
VLLM_MAX_NUM_SEQS = 256


# ---- efficiencies (speed) ---------------------------------------------------------------------------
# Model FLOPs utilization for training with the HF stack (eager PyTorch, no compile), by GPU segment.
# Published anchors: Megatron-LM reaches 0.44-0.52 on A100 at scale (Narayanan et al. SC'21, table 1);
# torchtitan 0.38-0.45 on H100 with compile and FSDP2 (torchtitan benchmarks, Dec 2024); MosaicML's MPT
# runs 0.40-0.55 on A100/H100 (llm-foundry throughput table). An unfused HF Trainer run sits below them.
MFU_TRAIN = {"datacenter": 0.45, "workstation": 0.40, "consumer": 0.35}
MFU_SOURCE = "mid-range of Megatron-LM 0.44-0.52 (SC'21), MosaicML 0.40-0.55, torchtitan 0.38-0.45"
# LoRA leaves the GPU idle during tiny adapter ops; QLoRA dequantizes every 4-bit weight twice per step
# (QLoRA paper section 4 and peft/bnb benchmarks: roughly 30-40 % slower than LoRA).
MFU_METHOD = {"full": 1.0, "lora": 0.9, "qlora": 0.6}
MFU_MULTINODE = 0.9  # cross-node stragglers and pipeline bubbles (Megatron SC'21 scaling curves)
# The anchors above are NVIDIA runs. On ROCm, SemiAnalysis' training benchmark ("MI300X vs H100 vs H200,
# Part 1: Training", Dec 2024) measured MI300X BF16 GEMMs at roughly 45-50 % of peak against ~70 % on H100,
# and end-to-end training below H100 despite 1.3x the peak: so other vendors' peaks are discounted. No
# comparable public figure exists for Gaudi; the same factor is assumed and said.
MFU_VENDOR = {"NVIDIA": 1.0}
MFU_OTHER_VENDOR = 0.65


def mfu(gpu, s) -> float:
    value = MFU_TRAIN.get(gpu.segment, 0.35) * MFU_METHOD[s.method] * MFU_VENDOR.get(gpu.vendor, MFU_OTHER_VENDOR)
    return value * (MFU_MULTINODE if s.num_nodes > 1 else 1.0)


def mfu_source(gpu, s) -> str:
    vendor = "" if gpu.vendor in MFU_VENDOR else f" x {MFU_OTHER_VENDOR} for {gpu.vendor} software (SemiAnalysis 2024)"
    return f"{gpu.segment} x {s.method}: {MFU_SOURCE}{vendor}"


# Inference roofline efficiencies (PyTorch roofline practice eta_c = 0.75, aiconfigurator bandwidth 0.8;
# formulas.md section 10). Prefill reaches a lower fraction of peak at small batch.
PREFILL_EFFICIENCY = 0.6
DECODE_BW_EFFICIENCY = 0.8
COLLECTIVE_LATENCY_S = 8e-6
# Eager PyTorch decoding (transformers generate) is bound by the CPU at small batch: a Llama-style decoder
# layer dispatches ~40 ops (norms, projections, rotary, SDPA, cache concatenation, MLP, residuals) at
# ~20 us of Python module call + dispatcher + launch each, and the generate loop adds input preparation,
# mask update, logits processors and sampling per step. Order of magnitude from PyTorch's own profiling
# guidance (~10-20 us per eager op); the two values are set against the Qwen2.5 HF benchmark (calibration:
# the Qwen-1 inference rows are the check). vLLM and llama.cpp replay CUDA graphs and avoid most of it.
EAGER_OPS_PER_LAYER = 40
EAGER_OP_OVERHEAD_S = 20e-6
GENERATE_STEP_OVERHEAD_S = 3e-3
# vLLM's engine loop (scheduler, sampler, detokenizer in Python) runs between GPU steps: ~3 ms per decode
# step at low concurrency (a 0.5B model decodes at ~300 tokens/s on an A100 in the Qwen2.5 vLLM benchmark,
# where its weights alone would allow ~1,500).
VLLM_STEP_OVERHEAD_S = 3e-3  # per small all-reduce (NCCL ring latency on NVLink, aiconfigurator 3-10 us)

# Links: PCIe x16 per direction by generation (GB/s), reached at ~80 %; inter-node default 400 Gb/s
# InfiniBand per node = 50 GB/s (NDR, the common H100 fabric), override in a later version.
PCIE_X16_GBS = {3: 16.0, 4: 32.0, 5: 64.0, 6: 128.0}
PCIE_EFFICIENCY = 0.8
INTER_NODE_GBS = 50.0

# ---- checkpointing and spot (cost) --------------------------------------------------------------------
CHECKPOINT_WRITE_GBS = 1.0  # sustained write to network/local storage, GB/s (override: --disk-gbs)
RESTART_MINUTES = 10.0  # reprovision + load checkpoint + warm up after an interruption
POWER_USD_PER_KWH = 0.15  # US average commercial electricity 2025 (EIA); override
PUE = 1.4  # data-centre / home cooling overhead (Uptime Institute 2024 average PUE ~1.5)
UTILIZATION = 0.8  # share of TDP drawn on average under training load
