"""trtllm-serve at low concurrency, replayed through ``gpuplan.estimate`` (issue 31: TensorRT-LLM's fixed costs from
its own single-request runs): TTFT and TPOT of ``--users N`` against what the client measured.

    python bench/serving/trtllm_serving.py [--out bench/results/trtllm_serving.md]
    python bench/serving/trtllm_serving.py --calibrate     # refit overheads.TRTLLM_EAGER_LAUNCH_S

Each row of bench/data/trtllm_serving.csv (its header and source column name the sources: NVIDIA/TensorRT-LLM issue
#5929's LLMPerf runs, InferenceX's TensorRT-LLM runs) becomes the scenario a user would write: engine trtllm, the
model and its quantization, the cards, TP and EP, ``users`` closed-loop clients with the run's lengths and requests,
scored on the statistic the source prints. ``overheads.TRTLLM_EAGER_LAUNCH_S`` (the host's time per kernel it
launches in a step that holds a context request, which TensorRT-LLM's PyTorch backend runs without a CUDA graph) is
fitted on the calibration rows only, one request at a time at two prompt lengths: the fixed part of a single
request's TTFT is the intercept of TTFT against prompt length (:func:`intercept`), and the constant is the launch
time at which the simulated intercept meets the measured one (:func:`calibrate`), the per-request server path
(``overheads.TRTLLM_REQUEST_S``, vLLM's figure borrowed) held. The prefill's cost per token, the slope, is the GPU
model's and is reported beside it, not fitted. Before: a flat per-request latency fitted on the same pair
(:data:`FLAT_REQUEST_S`) and no eager context step. error = (gpuplan - measured) / measured.
"""

from __future__ import annotations

import argparse
import csv
import statistics
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
sys.path.insert(0, str(ROOT / "src"))

from gpuplan import estimate  # noqa: E402
from gpuplan import overheads as oh  # noqa: E402

DATA = ROOT / "bench" / "data" / "trtllm_serving.csv"
# NVIDIA's own batch-1 runs (trtllm-bench): published checks, never fitted, not in the medians (published_checks)
CHECKS = ROOT / "bench" / "data" / "trtllm_latency_checks.csv"
# Before: the calibration pair's whole intercept gap charged to every request outside the steps (overheads.
# TRTLLM_REQUEST_S until 2026-11-29), with no eager context step.
FLAT_REQUEST_S = 57.5e-3


# What the rows say (read off the tables; kept with the report when it is regenerated).
NOTES = """Session 15 (s15-moetpot): TensorRT-LLM's decode graphs run an MoE layer's shared experts on a second stream
beside the router and the fused MoE (`tensorrt_llm/_torch/models/modeling_deepseekv3.py` `Deepseekv3MoE.forward`:
`maybe_execute_in_parallel(_compute_routed_output, _compute_shared_output, ..., self.aux_stream)`, which
`_torch/modules/multi_stream_utils.py` enables only under CUDA graphs; `modeling_llama.py` `Llama4MoE.forward` alike),
so the shared experts' kernels' fixed time hides behind the routed ones (engines/trtllm.py `shared_experts_stream`,
speed/inference.py `StepTimer._shared_experts_latency_s`: 58 layers x 2 GEMMs x 3 us = 0.35 ms a DeepSeek-R1 decode
step at TP 8; their bytes still count, both streams sharing the card); the eager prompt steps run them in line. vLLM
PR #26440 measured the same overlap on 8 B200s (DeepSeek-R1 FP8, TRTLLM-Gen MoE, 32 sequences): TPOT 23.35 -> 22.09
ms, more than gpuplan hides (its shared path also runs quantize and activation kernels). The step model now prices a
step of decodes alone from the decode path (serving/steptime.py `decode_dense_s`). The walk refitted on the
calibration pair (`--calibrate`): 125 -> 137 ns (launch 50.9 us unchanged). Held out: i5929 TPOT 6.3 % -> 8.8 % (its
H200 rows at EP 4 and 8 lose the 0.35 ms and gain less walk: -6..+3 % -> -9..+1 %; its B200 rows +43..+58 % ->
+38..+53 %), ix3317 TPOT 22.6 % -> 19.9 % (+17..+27 % -> +14..+25 %), TTFT 17.1 % -> 17.4 %. Elsewhere:
trtllm.py's MoE rows of release 1.0's table, held out, 10.6 % -> 10.0 % (Llama 4 Scout's shared expert; the fitted
B200 rows 4.2 % -> 4.1 %, nothing refitted there), speculative.py's blog1 4.6 % -> 3.3 % (its run without MTP -6.3 % ->
-2.8 %), bpp 18.4 % -> 18.2 %.

Session 14 (s14-dsfp8): an FP8 block-scale checkpoint's linears and grouped MoE GEMMs at DeepGEMM's share of
the fp8 rate (engines/block_fp8.py; overheads.DEEPGEMM_KERNEL_SHARE, 0.875 from the DeepGEMM README's H800 table:
TensorRT-LLM's fp8_block_scaling_gemm and fp8_blockscale_gemm are DeepGEMM's kernels), where gpuplan had timed them
at the full fast fp8 rate. Both calibration fits refitted on the calibration pair (`--calibrate`): launch 50.2 ->
50.9 us, walk 126 -> 125 ns. Held out: i5929 TTFT 24.1 % -> 23.1 %, TPOT 6.4 % -> 6.3 %; ix3317 TTFT 18.8 % ->
17.1 %, TPOT 22.5 % -> 22.6 %. The launch time also moves trtllm.py's MoE rows (nvidia-perf-overview-1.0 held out
10.5 % -> 10.6 %) and speculative.py's bpp (18.1 % -> 18.2 %).

Session 12 (s12-trt): B200 decode read again against the sources' own setups; nothing landed, every number
above as it was (held-out TTFT 21.1 %, TPOT 21.8 %; i5929 TPOT 6.4 % median, ix3317 22.5 %).

- **Issue #5929 ran options it does not publish.** Its release (v0.21.0rc2, built before the issue's 2025-07-10)
  predates CUDA graphs by default (#5480, merged 2025-07-14: session 10 below), and NVIDIA's MTP blog measures the
  same min-latency case 7.22x slower without them
  (`docs/source/blogs/tech_blog/blog2_DeepSeek_R1_MTP_Implementation_and_Optimization.md`, "Evaluation": "CUDA graph
  can achieve a 7.22x average speedup"). At 6.6-14.5 ms a token every row ran graphs, so every row ran an
  `extra_llm_api_options` file the issue does not show. The case's reading "trtllm-serve's defaults" is therefore not
  the published setup, and what else that file set (MTP, attention DP, `moe_backend`) is open: no source says.
- **Both of its cards are faster than NVIDIA's own figures without MTP, by the same share.** Its TPOT at one user
  (LLMPerf's ITL less the TTFT's share: `(ITL x 600 - TTFT) / 599`) is 6.35-6.53 ms on the B200 and 10.60-10.81 ms on
  the H200 with EP. NVIDIA's B200 without MTP, after its kernel work and `--vboost 4`, is 111 TPS a user, 9.0 ms
  (blog 1 "Autoregressive MTP Layers"); its H200 at TP 8 EP 4 with MTP 3 is 158 TPS a user, 6.32 ms
  (`Best_perf_practice_on_DeepSeek-R1_in_TensorRT-LLM.md` "H200 min-latency"), which at blog 1's MTP-3 step (2.82
  tokens a step at 1.24 times the plain step: 2.82 x 111 / 253) is about 14.4 ms without MTP. The issue is 28 %
  under the first and 26 % under the second. Blog 1's MTP 1 (1.92 tokens a step, 198 TPS, a step 1.08 times the plain
  one) is the size of that gap; but MTP on both cards puts gpuplan's H200 rows at EP 4 and 8 42-46 % fast
  (11.1 x 1.08 / 1.92 = 6.2 ms against 10.8), and MTP on the B200 alone (-11..-12 %) has no source. Not changed.
- **The robust miss is the ratio of the two cards.** The B200's step over the H200's at one user and EP 4: 0.61 in
  the issue, 0.58 in NVIDIA's MTP-3 pair (3.64 / 6.32 ms, the published checks), 0.94 in gpuplan (10.4 / 11.1 ms;
  10.05 / 10.98 on the checks' setups without MTP). gpuplan prices both cards' layers with the same 31 non-GEMM
  kernels at 3 us; against NVIDIA's own figures its H200 is about 24 % fast (10.98 against ~14.4 ms) and its B200
  21 % slow (10.05 against ~8.3 ms, blog 1's EP 2 run with MTP 3 at 2.82 tokens and 1.24 steps). The calibration
  pair (issue #5929's H200 at EP 1) fits the walk constant on rows whose options are unknown. What the Blackwell layer
  costs kernel by kernel still needs a profile; a count without durations moves both cards (session 10).
- **InferenceX's B200 FP8 (ix3317) ran without MTP and with the TRTLLM-Gen MoE** (`dsr1_fp8_b200_trt.sh@8eec0d4e`: no
  `speculative_config`, `moe_config.backend: TRTLLM`, `TLLM_OVERRIDE_LAYER_NUM=61`). PR #3317's points are that
  config's, `dsr1-fp8-b200-trt` (`.github/configs/nvidia-master.yaml@8eec0d4e`: TP 4 at 8-16 users only there; its twin
  `dsr1-fp8-b200-trt-mtp` runs TP 8 with `spec-decoding: mtp`). Counted from TensorRT-LLM's code, that MoE is one op of
  seven kernels at decode: `fp8_quantize_1x128` before it (`fused_moe_trtllm_gen.py` `quantize_input`),
  `routingMainKernel` and `routingIndicesClusterKernel` (`blockScaleMoe/RoutingDeepSeek.cu` `run`: one cluster at 1,024
  tokens or fewer), PermuteGemm1, the DeepSeek-FP8 activation ("We do not fuse activation with FC1 for DeepSeek FP8"),
  Gemm2 and finalize (`blockScaleMoe/runner.cu` `MoE::Runner::run`), every one launched with PDL (`mUsePdl = true`).
  Tried: the layer 3 kernels shorter than the generic count (the CUTLASS path's separate `noaux_tc`, expert maps and row
  expansion against the op's routing): TPOT +25 / +17 / +22 / +27 / +21 % -> +19 / +12 / +18 / +23 / +15 %, TTFT -21 /
  -15 / -14 / -19 / -26 % -> -27 / -20 / -20 / -23 / -26 % (the eager prompt step launches fewer kernels). Not landed:
  the CUTLASS path's count on Blackwell, the baseline the delta needs, is not the generic one either (session 10 counts
  12-13 non-GEMM kernels), and TTFT gets worse.
- **PDL.** TensorRT-LLM launches its kernels as programmatic dependents by default at SM 90 and newer
  (`cpp/tensorrt_llm/common/envUtils.cpp` `getEnvEnablePDL`: `enablePDL = true` unless `TRTLLM_ENABLE_PDL=0`);
  blog 1 (spring 2025) still had to set `TRTLLM_ENABLE_PDL=1` and measured +3 % (168 -> 173 TPS a user, with MTP).
  Which release turned it on was not found, and no source gives the per-kernel time it saves: not priced.
- **First tokens and `stream_interval`.** InferenceX sets `stream_interval: 10`; TensorRT-LLM streams a request's
  first token whatever the interval (`_torch/pyexecutor/py_executor.py` `_handle_responses`: `py_decoding_iter == 1
  or is_finished or py_decoding_iter % stream_interval == 0`, and `_handle_first_token_response` under the overlap
  scheduler), so its TTFT (-14..-26 %) is not held back by it.

Session 10 (s10-trt): what sets TensorRT-LLM's decode step on the B200 and the H200, held-out medians:

| change | TTFT | TPOT | i5929 TPOT | ix3317 TPOT |
|---|---:|---:|---:|---:|
| main at a31515b4 | 21.6% | 21.7% | 16.2% | 22.4% |
| 1. Hopper's FP8 block-scale MoE walks its local experts; launch time refitted | 21.1% | 21.8% | 6.4% | 22.5% |

1. `engines/trtllm.grouped_gemm_walk`, `overheads.TRTLLM_HOPPER_GROUP_WALK_S`: on Hopper, TensorRT-LLM's CUTLASS MoE
   runs an FP8 block-scale checkpoint's two grouped GEMMs as DeepGEMM kernels over one problem per local expert
   (`cpp/tensorrt_llm/kernels/cutlass_kernels/fp8_blockscale_gemm/fp8_blockscale_gemm_kernel.cuh`
   `fp8_grouped_gemm_run` -> `grouped_gemm_dispatch`, `GemmType::GroupedWithOffset`, the SwapAB variant below 32 rows
   an expert), and their persistent scheduler finds each tile by walking the experts from the first, two `__ldg` of
   `problem_m_offsets` each, on to the last before it returns false
   (`cpp/include/tensorrt_llm/deep_gemm/scheduler.cuh` `GroupedWithOffsetScheduler(SwapAB)::get_next_block`): a fixed
   cost per call that grows with the experts a GPU holds, 256 (sliced) at TP 8 without EP, 64 at EP 4, 32 at EP 8.
   Fitted on the calibration rows' ITL alone (EP 1: 13.78 and 14.53 ms measured, 10.19 and 10.66 before): 126 ns a
   local expert and call, about one L2 round trip, 3.7 ms a token at EP 1 (2 x 256 x 58 layers). Held out, the same
   issue's H200 rows at EP 4 and 8 move from -6..-10 % to -6..+3 % and reproduce what the generic step could not: EP
   1 slower than EP 8, by 3.3 ms a token (2.8 measured). At eight users -16 / -4 / -8 % -> +4 / +2 / -6 %. The B200
   rows take other kernels (NVFP4's CUTLASS grouped GEMM; Blackwell's FP8 linears run `fp8_swap_ab_gemm`,
   `_torch/modules/linear.py` `FP8BlockScalesLinearMethod.apply` under `is_sm_100f()`) and show no such step (6.78 /
   6.61 / 6.81 ms at EP 1 / 4 / 8): unchanged. A prompt's step pays the same walks among far larger GEMMs (+3 ms at
   8,192 tokens and EP 1, through the step model's closed form), so the launch time refitted on the calibration
   pair's TTFT intercept rises 49.7 -> 50.2 us (both fits together). Elsewhere only the launch time moves anything:
   trtllm.py's MoE fitted rows 3.9 -> 4.0 % (held out 6.6 %, dense unchanged), one trtllm_capacity row 12.1 -> 12.0
   %, TensorRT-LLM plans' TTFT +0.3..0.8 % (five goldens re-recorded); no other bench serves an FP8 block-scale MoE
   on Hopper under TensorRT-LLM (trtllm.py's MoE rows are per-tensor FP8 or NVFP4; MLPerf's Mixtral is per-tensor
   FP8), and SGLang and vLLM run their own MoE kernels. MoE serving TPOT, pooled over every serving bench
   (bench/results/inference_sources.md): 10.1 % -> 8.9 %.

What the B200 rows say, read this session (nothing else fitted):

- **The step is per-layer fixed cost on both cards, and the B200's is about 0.6 of the H200's.** At one user the
  weights' bytes are 0.9-1.3 ms of a token on either card; gpuplan's step is 61 x (31 non-GEMM kernels + 9 GEMMs)
  at 3 us and two fused all-reduces, about 140 us a layer on both, which the H200 rows (with the walk) measure and the
  B200 rows do not (88 us a layer at 6.35 ms a token, InferenceX's B200 FP8 about 110 us at 4 users). Counted from
  TensorRT-LLM's code (`modeling_deepseekv3.py` `DeepseekV3DecoderLayer.forward_MoE`, `Deepseekv3MoE.forward` with
  the shared expert on the aux stream, `Deepseekv3RoutingImpl.noaux_tc`, `attention.py`
  `MLA.forward_absorption_generation` with the rope on the aux stream, the CUTLASS MoE runner), a decode layer
  launches about 12-13 non-GEMM kernels on the critical path on Blackwell (one q/kv norm, the MLA kernel and its
  reduction, the routing's sigmoid, `noaux_tc` and cast, the MoE's maps, strides, expansion, activation and
  finalize, the shared + routed add) and 16-18 on Hopper (`fp8_quantize_1x128` before each FP8 block-scale linear,
  `scale_1x128_kernel` before each grouped GEMM), against the generic 31 (vLLM's unfused count). Priced at 3 us, that
  count (12 on Blackwell, 17 on Hopper) puts issue #5929's B200 rows within -5..+6 % but InferenceX's B200 FP8 at
  -18..+2 % and the H200 rows at -20..-45 % (before item 1), and it contradicts NVIDIA's own B200 batch-1 runs
  (checks table: gpuplan 10.63 -> 7.13 ms a token at EP 8 against 11.24 published, 10.28 -> 6.77 at EP 4 against
  9.01): fused kernels last longer than the 3 us floor, and no source gives their durations. Not landed: the
  count would move both cards without a duration for each kernel; a profile of one decode step (nsys) on each card
  is what it needs.
- **Issue #5929's B200 rows disagree with NVIDIA's own B200 figures.** Its release, v0.21.0rc2, predates CUDA graphs
  by default: `PyTorchConfig.use_cuda_graph = False` until `Breaking change: perf: [TRTLLM-4662] Enable cuda graph by
  default (#5480)`, merged to main on 2025-07-14 (c9e7f831dc), and trtllm-serve of that period sets no graph option
  (`tensorrt_llm/commands/serve.py` `get_llm_args`). The issue states no `extra_llm_api_options`, so as written its
  decode ran each kernel launched from Python. Priced with this bench's eager launch time (50.2 us, fitted on the
  prompt's intercept) an eager decode step would take 61 x 38 x 50.2 us = 116 ms, against 6.6-14.5 ms measured: either
  the rows ran CUDA graphs (the DeepSeek examples' `use_cuda_graph: true`) or the prompt intercept that fits the launch
  time is not launch time. For the TTFT work (helper s10-ix), not changed here. And LLMPerf's token count: upstream
  `token_benchmark_ray.py` counted output tokens with `hf-internal-testing/llama-tokenizer` until a later version took
  the model's own (`get_tokenizer(model)`); which one the issue ran is not stated, and a Llama tokenizer on
  DeepSeek-R1's output would count more tokens than were generated and shorten every row's ITL alike. NVIDIA's 111
  TPS a user without MTP (EP 4, with PDL, `--vboost 4` and unreleased grouped GEMMs) is 9.0 ms a token; the issue's
  B200 at EP 4 measures 6.6. The rows stay held out as they are.
- **InferenceX's B200 FP8 (ix3317, +17..+27 %)** ran `moe_config.backend: TRTLLM` (TRTLLM-Gen: routing, permutation
  and the first GEMM's activation fused into its kernels, `fused_moe_trtllm_gen.py`), which gpuplan's scenario cannot
  say; NVIDIA's blog 1 puts the backend's gain at 253 -> 299 TPS a user with MTP 3 (with EP 2, a check, not a
  factor). Left: a `moe_backend` setting priced from that kernel count needs the same kernel durations.

Session 9 (s9-nvfp4): NVIDIA's NVFP4 checkpoints priced as they ship, held-out medians:

| change | TTFT | TPOT |
|---|---:|---:|
| main at 5ee62495 | 21.8% | 21.7% |
| NVFP4 checkpoints' bf16 layers (`exclude_modules`): bytes and 16-bit GEMM rates | 21.6% | 21.7% |

Model Optimizer leaves layers out of NVFP4, and each checkpoint lists them (`hf_quant_config.json`
`exclude_modules`, config.json `ignore`). gpuplan priced everything but the routers as NVFP4. Now `--quant nvfp4`
on a model with a published NVFP4 checkpoint uses that checkpoint's list (`src/gpuplan/data/nvfp4_checkpoints.json`,
each list with its sources), and a local `quant_method: modelopt` config.json is read the same way. The kept layers
are stored in bf16 and their GEMMs run at the bf16 rate. For nvidia/DeepSeek-R1-FP4 that is every attention
projection and the routers (blog 1 "Precision Strategy"; Model Optimizer's `examples/deepseek/ptq.py` disables
`*attn*`): 61 x 187,105,280 attention weights, 16,406,793,020 bytes more than all-NVFP4 (hand count in
`tests/model/test_nvfp4_checkpoints.py`). At TP 8 each GPU holds 3.2 GB more: 1.9 GB of its share of q_b, kv_b and
o_proj, and 1.3 GB of MLA's down-projections (q_a, kv_a), which every GPU holds whole. Nothing is fitted; this is
what the checkpoint holds, and the B200 rows move further off:
- Issue #5929's B200 FP4 rows (taken to be nvidia/DeepSeek-R1-FP4, the checkpoint TensorRT-LLM's docs named in
  July 2025): ITL +38..+53 % -> +43..+58 %; TTFT -19..-69 % -> -19..-62 %. The H200 FP8 rows move by the routers'
  bf16 rate alone (under 1 %).
- NVIDIA's own batch-1 checks (table above, nvidia/DeepSeek-R1-FP4): EP 4 without MTP 9.94 -> 10.28 ms a token
  against 9.01 published (+10 % -> +14 %); EP 8 10.30 -> 10.63 ms (-31 % -> -29 % and -8 % -> -5 % against the
  67 and 89 TPS stages). s9-trtserve estimated +16 % from the same 3.2 GB at 6.2 TB/s (0.5 ms); gpuplan's
  step adds 0.34 ms, at the B200's modelled streaming bandwidth.
- Other benches, before -> after: SGLang's InferenceX B300 rows (ix3183) now load the checkpoint they ran,
  nvidia/DeepSeek-R1-0528-FP4-V2 (`bench/serving/models/deepseek-r1-0528-nvfp4-v2.json`: wo in NVFP4, the other
  MLA projections in bf16). MoE TPOT median (45 rows) 9.0 % -> 12.1 %, MoE TTFT 29.4 % -> 29.4 %. ix3183 TPOT at one
  user +12 % / +11 % -> +19 % / +16 %. TensorRT-LLM on one GPU (`bench/trtllm.py`): MoE medians 3.9 / 6.6 / 5.8 %
  unchanged. The Scout and Qwen3 NVFP4 lists were not found, so those models keep only the routers in bf16. The
  Llama FP4 checkpoints keep only lm_head, as before. MLPerf: Mixtral FP8 median 7.2 % -> 7.1 % (routers at bf16).
  `trtllm_capacity`: unchanged.

Session 9 (s9-trtserve), held-out medians:

| change | TTFT | TPOT |
|---|---:|---:|
| main at 358f5cbe | 21.9% | 22.9% |
| 1. InferenceX's rows run their recorded FP8 KV cache (`kv_cache_config: dtype: fp8`) | 21.8% | 21.7% |
| 2. Issue #5929's ITL scored as LLMPerf computes it (the request's latency per output token) | 21.8% | 21.7% |

1. `bench/data/trtllm_serving.csv` column `kv_cache_dtype`: InferenceX's script writes `kv_cache_config: dtype: fp8`
   into the server's options (`benchmarks/single_node/fixed_seq_len/dsr1_fp8_b200_trt.sh@8eec0d4e`); the rows ran
   gpuplan's default (the model's 16-bit cache). A decode step reads half the cache: ix3317 TPOT +18..+27 % ->
   +17..+27 %. Issue #5929's rows state no KV dtype and keep the default. Nothing else moves (no estimate code
   changed: trtllm.py, trtllm_capacity, MLPerf and the SGLang and vLLM benches are untouched).
2. `predict`, CSV column `client`: LLMPerf's "ITL" is not a TPOT. Its client appends the TTFT as the first
   `time_to_next_token` and sums them (`ray_clients/openai_chat_completions_client.py`: `INTER_TOKEN_LAT =
   sum(time_to_next_token)`, "should be same as ... E2E_LAT"), and `token_benchmark_ray.py` divides by the output
   tokens: the request's whole latency per token. The rows agree: from 1,600 to 8,192 prompt tokens the B200s' ITL
   grows 0.36 ms, and their TTFT 230-275 ms, 0.38-0.46 ms over 600 tokens. gpuplan's figure for these rows is now
   its median end-to-end latency over the output tokens: H200 ITL -6..-30 % -> -4..-27 %, B200 +34..+50 % ->
   +38..+53 % (its TTFT, too short at 8,192 tokens, is spread over them as measured). Medians unchanged (the
   median row is InferenceX's). Not modelled: LLMPerf counts the output tokens with its own Llama tokenizer
   (`get_token_length`), not DeepSeek's; no ratio between the two on DeepSeek-R1's output was measured here.

What the sources record, read this session (nothing here is fitted):

- **Issue #5929 states no server options.** Its text gives the release (v0.21.0rc2 built from source), TP 8 with
  `ep_size` None / 4 / 8, LLMPerf and the two checkpoints; no `extra_llm_api_options`, no `speculative_config`, no
  MoE backend, no attention DP. The defaults of that period (`tensorrt_llm/llmapi/llm_args.py` `TorchLlmArgs`,
  the mid-2025 copy read here, with `disable_overlap_scheduler` and `moe_backend` fields): `moe_backend='CUTLASS'`,
  `enable_attention_dp` off, no speculative decoding, and `use_cuda_graph: bool = Field(default=False)`: decode
  CUDA graphs only when asked. Later
  releases replaced it by `cuda_graph_config` with `default_factory=CudaGraphConfig` (on). Which of the two
  v0.21.0rc2 carries was not read here (no copy of the tag was reachable). The KV dtype is `auto`, which
  TensorRT-LLM takes from the checkpoint's `hf_quant_config.json`; NVIDIA's best-practice page says the FP8 KV
  default came with the later nvidia/DeepSeek-R1-0528-FP4 checkpoint ("had enabled FP8 KV cache by-default",
  `Best_perf_practice_on_DeepSeek-R1_in_TensorRT-LLM.md`), so these rows keep the 16-bit cache.
- **NVIDIA's own batch-1 runs bracket gpuplan, not the issue's B200 rows** (table above, never fitted). Blog 1
  (B200 min-latency, nvidia/DeepSeek-R1-FP4, CUDA graphs) publishes 67, 89 and 111 TPS per user without MTP at
  successive stages of its kernel work (14.9, 11.2 and 9.0 ms a token); gpuplan gives 10.3 ms at EP 8 and 9.9 at
  EP 4: -31 %, -8 % and +10 %. The issue's B200 rows measure 6.6-6.8 ms, 25-27 % under NVIDIA's fastest published
  figure without MTP, which already had tuned clocks (`--vboost 4`), PDL and CUTLASS grouped GEMMs not yet released.
  Blog 1 publishes no later figure without MTP. Scaled by what its MTP-3 run gained from the later stages (253 ->
  340 TPS per user: the TRTLLM-Gen MoE backend, faster fused_A and router GEMMs), its 111 would be 149 TPS per
  user, 6.7 ms: the issue's rows. MTP itself takes 111 to 253 at 2.82 tokens a step (its "Autoregressive MTP
  Layers" table). The issue names neither the backend nor MTP. So the B200 TPOT miss (+34..+50 %) is not
  gpuplan's Blackwell layer alone: a kernel count cut to meet these rows would put gpuplan 25 % under NVIDIA's
  published figure. The rows stay held out and unmarked: no source says what they ran beyond the defaults.
- **The H200 rows ran without MTP.** NVIDIA's H200 min-latency run with MTP 3 at TP 8 EP 4 gives 158 TPS per user
  (6.3 ms a token, `Best_perf_practice_on_DeepSeek-R1_in_TensorRT-LLM.md`); the issue's H200 EP 4 row measures
  10.8 ms.
- **The NVFP4 checkpoint's attention is BF16** (blog 1 "Precision Strategy": attention modules and RouterGEMM
  BF16, dense and MoE FFN NVFP4; the session-8 finding from the model cards). gpuplan priced every linear but the
  router as NVFP4 (`speed.inference.step_timer`: `skip` was `('router',)`); built since, in `model/quant` for every
  engine (s9-nvfp4, above). At BF16 each B200 reads about 3.2 GB more a
  token at TP 8 (2.2 G attention parameters a GPU at 2 bytes, not 0.56), 0.5 ms at 6.2 TB/s: the check at EP 4
  would read +16 % against 9.0 ms, and the issue's B200 TPOT rows move further off.
- **InferenceX's flags**, read whole this session: `moe_config.backend: TRTLLM`, CUDA graphs padded to the
  concurrency, FP8 KV at 0.8 (0.75 at TP 4 with 8k prompts), block reuse off, `stream_interval: 10`,
  `TLLM_OVERRIDE_LAYER_NUM=61` (the MTP layer not loaded), no speculative decoding, attention DP from the sweep's
  config (the rows encode it off). Its TPOT miss (+17..+27 %) is the same fixed per-layer cost: at 4 users
  gpuplan's B200 FP8 step is 3.9 ms of weights, 5.7 ms of kernel latencies (31 non-GEMM kernels a layer at 3 us)
  and 1.0 ms of all-reduces, against 8.7 ms measured. How many kernels TensorRT-LLM 1.3's Blackwell layer (the
  TRTLLM-Gen MoE) launches, and how long each waits, needs a kernel count or a profile of that release, which no
  source here gives.
- **Tried, not landed: the busiest GPU's experts at a few tokens** (`speed/experts.experts_s`, every engine's
  expert parallelism). It reads the average GPU's distinct experts, `E (1 - (1 - k/E)^T) / ep`, and puts the
  busiest GPU's extra picks on them as extra rows: at one token and EP 8 that is one expert of 2.9 rows. A token
  picks an expert once, so the busiest GPU's ~2.9 picks are ~2.9 experts of one row, read whole. Counting the
  busiest GPU's distinct experts (`local (1 - (1 - 1/local)^picks)`) puts the H200 single-user rows at EP 4 and 8
  within 7 % (-4..-10 % -> -3..+7 %, EP 8 now above EP 4 as measured; held-out TPOT median unchanged at 21.7 %)
  and leaves the B200s as they are (the NVFP4 GEMMs' row-share at one token, `TRTLLM_GEMM_HALF_ROWS`, already
  priced those rows as math). But it takes InferenceX's SGLang DeepSeek-R1 rows (ix3183, 4-64 users at EP) from a
  5.8 % to a 15.2 % TPOT median (worst +13.5 -> +19.6 %) and the MoE serving runs 18.9 -> 19.2 %: SGLang's decode
  at those loads fits without the extra expert reads, and what else in its step would absorb them is SGLang's
  profile, another helper's this session. Left for a change that re-checks SGLang's MoE rows with it.
- **H200 at 8 users** (TTFT -51..-58 %): LLMPerf sends the eight at once; without chunked prefill up to five
  1,600-token prompts share a step of at most `max_num_tokens` 8,192, so the first tokens wait on steps of
  thousands of prompt tokens, priced by the prefill slope (53.3 / 35.8 / 34.7 ms per 1k tokens measured, 31.5 / 24.0
  / 22.8 in gpuplan): mostly the slope miss below, which the calibration row at 8,192 tokens shows too (-35 %).

Session 8 (s8-trtllm), held-out medians:

| change | TTFT | TPOT |
|---|---:|---:|
| main at f6de562 | 24.1% | 21.6% |
| 1. MLA's fused down-projection run whole on every rank; launch time refitted (48.9 -> 49.7 us) | 21.9% | 22.9% |

1. `tensors/layout.replicated` (first `engines/trtllm.replicated_linears`): TensorRT-LLM builds DeepSeek's
   `q_a_proj` and `kv_a_proj_with_mqa` as one
   linear without a tensor-parallel mode (`modeling_deepseekv3.py` `DeepseekV3Attention`: `DeepseekV3Linear(...)`
   with no mapping; NVIDIA's B200 latency blog, `docs/source/blogs/tech_blog/blog1_...B200_GPUs.md`, "Parallelism
   Strategy": "Fuse_A GEMM: Data Parallelism 8 (DP8)"). At TP 8 each GPU reads and multiplies 15.1 M parameters a
   layer, not 1.9 M: a DeepSeek-R1 decode token reads 0.81 GB more a GPU (+0.2 ms on an H200), a prompt costs
   1.1-1.2 ms more per 1k tokens. H200 slopes 30.4 / 22.8 / 21.6 -> 31.5 / 24.0 / 22.8 ms per 1k tokens (EP 1 / 4 /
   8; measured 53.3 / 35.8 / 34.7); H200 TPOT -10..-16 % -> -8..-14 %; B200 TPOT +32..+48 % -> +34..+50 % (the
   Blackwell decode gap below). vLLM and SGLang replicate these linears too, so the fact moved to the layout of
   every engine (s8-mla); each rank holds them whole (0.75 GiB a GPU of FP8 at TP 8). Elsewhere:
   trtllm.py's MoE on one GPU held out 6.6 % (fitted 3.8 -> 3.9 %), MLPerf 9.6 %, trtllm_capacity 4.5 / 5.2 %:
   unchanged.

Looked at in session 8, with sources, and not built:

- **The B200 FP4 checkpoint's attention is BF16.** nvidia/DeepSeek-R1-FP4 quantizes the MoE and MLP linears and
  leaves attention unquantized: the model card of nvidia/DeepSeek-R1-0528-FP4-v2 says it "additionally quantizes the
  wo module in attention layers" against the earlier checkpoints, and TensorRT-LLM runs the unquantized fused_a with
  `dsv3_fused_a_gemm_op` at 1-16 tokens (`DeepseekV3Linear.apply_linear`: `not self.has_any_quant`). gpuplan prices
  `quant: nvfp4` attention as NVFP4. Tried on top of item 1 (attention at 2 bytes and the BF16 rate on the B200):
  B200 8,192-token TTFT -57/-64/-69 % -> -49/-56/-63 %, TPOT +34..+50 % -> +39..+49 %, held-out medians 21.9 / 22.9
  % unchanged. It is a property of the checkpoint (vLLM and SGLang load the same one), so it belongs to
  `model/quant` and the scenario's checkpoint, not to TensorRT-LLM's profile: left for the lead.
- **InferenceX's TensorRT-LLM flags** (`benchmarks/single_node/fixed_seq_len/dsr1_fp8_b200_trt.sh@8eec0d4e`):
  `moe_config.backend: TRTLLM` (the TRTLLM-Gen MoE, not the CUTLASS one gpuplan prices), CUDA graphs padded up to
  the run's concurrency, an FP8 KV cache at 0.8 (0.75 at TP 4 and 8k), `stream_interval: 10`. The stream interval
  does not delay the first token (`py_executor.py` `_handle_responses`: a response when `py_decoding_iter == 1`).
- **Decode on Blackwell (and the calibration pair's TPOT).** What a one-user token costs beyond its weights' bytes
  and the fused all-reduces (0.98 ms): about 145 us a layer on the H200s with EP, 190 at EP 1, 73-84 on the B200s
  (measured ITL less gpuplan's byte and all-reduce parts); gpuplan gives both 129 (43 kernel latencies of 3 us: the
  generic 31 non-GEMM kernels, vLLM's unfused count, and 12 GEMMs). Read from TensorRT-LLM's DeepSeek layer: one
  fused routing kernel (`noaux_tc_op`), fused GEMMs (`fused_a`, gate+up), the shared expert on its own stream
  (`Deepseekv3MoE.forward`: `maybe_execute_in_parallel`), and on Hopper a quantize kernel before each FP8 block-scale
  GEMM (`fp8_quantize_1x128`; the MoE's `fp8_grouped_gemm_run` quantizes its rows itself, `cpp/tensorrt_llm/kernels/
  cutlass_kernels/fp8_blockscale_gemm/fp8_blockscale_gemm.cu`) that NVFP4 with BF16 attention does not run: about 30
  kernels on the critical path on the H200, 24 on the B200. At 3 us each the B200 lands at 72 us (its 73-84
  measured) and the H200 55 us a layer short. Trials (decode count only, prompt launches held; held-out TTFT / TPOT):
  Hopper 18 / Blackwell 12 non-GEMM kernels 22.7 / 14.3 % (B200 TPOT -5..-14 %, H200 -33..-47 %); 28 / 16 25.4 /
  8.4 %, 24 / 14 24.4 / 11.7 % (before item 1). Counting the prompt launches the same way takes the B200 TTFT to
  40-48 %. What the H200 pays beyond its count (55 us a layer with EP, 100 at EP 1) needs a kernel profile of one decode
  step: the fewer kernels are not landed alone, because they would leave the H200 rows 33-47 % fast.
- **At EP 1 on the H200 the GPU is busy before the launches end.** At 1,600 tokens EP 1 measures 41 ms more TTFT than
  EP 8, and its slope is 18.5 ms per 1k tokens steeper; a step bound by its Python launches (gpuplan: 130 ms for
  both) cannot show that difference. Either the MoE at EP 1 (256 local expert slices of 256 columns, the down
  GEMM's K 256) costs far more per token than gpuplan's grouped GEMM gives, or the launches and the GPU's work add
  rather than overlap. No source separates the two; the B200s agree with either (EP 8 - EP 1: 6.4 ms per 1k
  tokens, 12 ms at 1,600 tokens). One Hopper-only cost that grows with the local experts, read from the code and
  not priced: the FP8 block-scale MoE's GEMMs are DeepGEMM's `GroupedWithOffset` kernels (`fp8_blockscale_gemm.cu`
  `grouped_gemm_dispatch`), whose persistent CTAs find their tiles by walking `problem_m_offsets` group by group from
  the first (`GroupedWithOffsetScheduler::get_next_block`, two dependent loads a group): 256 groups a call at EP 1,
  32 at EP 8, in each of the two GEMMs of every MoE layer, decode steps included (the H200's one-user ITL is 2.8 ms
  longer at EP 1 than at EP 8, 45 us a layer; the B200's CUTLASS NVFP4 MoE shows no such step: 6.78 / 6.61 / 6.81
  ms). Its time a group needs a profile.

Session 7 (s7-trtllm), held-out medians:

| change | TTFT | TPOT |
|---|---:|---:|
| main at 68637fd | 31.8% | 28.5% |
| 1. DeepSeek's all-reduces fused with the residual add and RMSNorm; launch time refitted | 31.9% | 20.8% |
| 3. The fused MoE's expanded rows priced as memory traffic; launch time refitted | 28.6% | 21.4% |
| 4. MLA's prompt attention at the BF16 rate (no FP8-FMHA speed-up); launch time refitted | 24.1% | 21.6% |

1. `engines/trtllm.fused_kernels`: TensorRT-LLM's DeepSeek layer runs both all-reduces as one kernel with the
   residual add and the next RMSNorm (`modeling_deepseekv3.py`, PRE/POST_MOE_FUSION at TP without attention DP).
   Every decode step at TP 8 is 0.9 ms shorter (2 x 61 all-reduces at the fused kernel's 8 us, 2 x 61 norms fewer):
   B200 FP4 +44..+61 % -> +32..+48 %, B200 FP8 +23..+33 % -> +16..+25 %, H200 with EP -2..-9 % -> -10..-16 %. The
   launch time is refitted on the calibration pair (41.8 -> 43.9 us): 38 launches a layer, not 40.
2. `trtllm_backend` (trtllm-serve `--backend`, default pytorch): every row here ran the PyTorch backend (DeepSeek-R1
   runs on no other), so none moves; MLPerf's rows now name the TensorRT engine (bench/results/mlperf_inference.md).
3. `speed/experts.expanded_rows_s`: TensorRT-LLM's CUTLASS fused MoE copies each token to one row per pick
   (`expandInputRowsKernel`, in the first GEMM's input type) and reads every pick's 16-bit output row back to sum
   them (`finalizeMoeRoutingKernel`), `hidden x (4 tokens + (a + 4) picks)` bytes a layer on the busiest GPU. At
   EP 1 each GPU carries every pick (8 per token), at EP 8 an eighth: the H200 slopes rise 23.1 -> 27.9 (EP 1),
   19.6 -> 20.3 (EP 4) and 19.1 (EP 8) ms per 1k tokens against 53.3, 35.8 and 34.7 measured. The launch time
   refitted on the calibration pair rises with it (43.9 -> 47.2 us), so the held-out intercepts rise too (H200 EP 4
   and 8: 85-86 -> 92-93 ms against 77 and 69). Held out: TTFT 31.9 -> 28.6 %, TPOT 20.8 -> 21.4 % (mixed steps
   of the InferenceX rows wait longer on the launches). Elsewhere: trtllm.py's MoE on one GPU held out 7.4 ->
   6.6 % (NVFP4 dispatch refitted, prefill 100 -> 80 ns a token and layer), MLPerf's Mixtral rows 2.9 -> 0.9 %.
4. `engines/trtllm.Trtllm.timing`: TensorRT-LLM's MLA context path expands the latent with `kv_b_proj` and runs a
   BF16 MHA (`_torch/modules/attention.py` `MLA.forward_context_default`: "Currently we use BF16 MHA for context
   phase", 2025 releases), so DeepSeek's prompt attention no longer takes `TRTLLM_CONTEXT_ATTENTION_SPEEDUP` (the
   FP8 context FMHA, 1.5x, fitted on dense models). At 8,192 tokens on the H200 it is 20 ms longer; the launch time
   refitted on the calibration pair rises 47.2 -> 48.9 us. Held out: TTFT 28.6 -> 24.1 %, TPOT 21.4 -> 21.6 %;
   no non-MLA row changes beyond the launch time (trtllm.py MoE on one GPU held out 6.6 %, fitted 3.6 -> 3.8 %).

Looked at, with sources, and not built (the prefill slope, 1.8-2.3x on the H200s, and B200 decode):

- **Which MoE backend.** DeepSeek-R1 runs TensorRT-LLM's CUTLASS fused MoE on both GPUs in both releases:
  `MoeConfig.backend` defaults to CUTLASS (`llmapi/llm_args.py`; later AUTO, which `ModelConfig.
  resolve_moe_backend` resolves to CUTLASS for every architecture but gpt-oss and DeepSeek-V4), and
  `fused_moe/create_moe.py get_moe_cls` picks TRTLLM-Gen, DeepGEMM or WIDEEP only when asked. gpuplan's grouped
  GEMM stands for it.
- **The GEMM rate is not the slope's cause.** DeepGEMM's published FP8 block-scale rates on an H800 (its README,
  28 DeepSeek shapes, dense and grouped) are a median 0.87 of what gpuplan's FP8 model gives the same shapes on
  an H100 SXM (0.80 for its shapes of 256 rows and more), and TensorRT-LLM's GEMMs are already priced at 0.9 of it
  (`TRTLLM_GEMM_PEAK_SHARE`): at most 10-20 % of the GEMM time, against a slope 1.8x too fast. What the slopes
  imply: about 37 B active parameters, 9.25 TFLOP per GPU per 1k tokens at TP 8, is 174 TFLOPS per H200 at EP 1
  (9 % of its FP8 peak) and 221 TFLOPS per B200 at EP 8 (2.5 % of its FP4 peak); the B200 gains nothing over the
  H200 at EP 4 and loses at EP 8, which is the issue's own complaint (TensorRT-LLM 0.21). A slowdown that grows
  with expert parallelism on the faster GPU points at the 0.21 MoE path on Blackwell, not at any rate gpuplan can
  take from a datasheet or a kernel table; no source gives its cost per token.
- **Expert slices at EP 1.** At TP 8 without EP each GPU runs every routed pick through 1/8 of each expert
  (`intermediate_size_per_partition`: the down projection's K is 256). The expanded rows' traffic (item 3) now
  gives EP 1 8.8 ms per 1k tokens more than EP 8 (4.0 before it), of 18.6 measured; the down GEMM's short K (its
  rows priced as 2,048 deep by 896 wide, where TensorRT-LLM splits K) adds about 1 ms per 1k tokens more if
  corrected, in the GEMM model all engines share, and is left.
- **FP8 quantize kernels.** On Hopper each FP8 block-scale linear is two kernels (`fp8_quantize_1x128`, then
  `fp8_block_scaling_gemm`); on Blackwell one (`fp8_swap_ab_gemm`, DeepGEMM) (`_torch/modules/linear.py`
  `FP8BlockScalesLinearMethod.apply`). Counting them (5 more kernels a layer on the H200, and NVFP4's
  `fp4_quantize` on the B200), tried after item 1, moved TPOT 20.8 -> 20.4 % and TTFT 32.0 -> 33-35 % (the
  refitted launch time falls to 38.9 us and the B200 prompts launch fewer kernels): not landed.
- **The NVFP4 fused MoE's dispatch on this road** (session 16, issue 30). The dispatch fitted on trtllm-bench's
  B200 rows (80 ns a prompt token and 200 ns a decoding one, per MoE layer) was added by the offline model only;
  it is now the step timer's `fused_moe` part (`speed/experts.fused_moe_s`), which the step model keeps out of its
  larger-of-two-paths and adds at the prompt's rate to a step holding a prompt, at the decode's to a step of decodes
  alone (serving/steptime.sample). The B200 FP4 rows: intercepts 116/123/124 -> 106/114/115 ms (104-106 measured),
  slopes 10.6/6.2/5.5 -> 16.4/12.0/11.3 ms per 1k tokens (35-42 measured), 8,192-token TTFT -49/-55/-62 % ->
  -39/-46/-54 %, TPOT +0-1 point; held-out TTFT median 19.4 % unchanged.
- **B200 decode** stays 16-48 % slow: at one user the step is 61 layers of fixed per-kernel cost, and what makes
  TensorRT-LLM's Blackwell layer cheaper than its Hopper one (kernel fusions of the TRTLLM-Gen path, PDL) needs a
  kernel count of the Blackwell path or a profile, which no source here gives.

What the rows say:

- **The fixed part.** One request's TTFT grows linearly with its prompt on every configuration, and the line's
  intercept is what a request pays whatever its length. On the calibration pair (H200, FP8, no expert parallelism)
  it is 79 ms. Before, the simulation's own steps held 22 ms of it and a flat 57.5 ms per request took the rest.
  Now the server path is vLLM's 14.7 ms (borrowed: both are Python OpenAI servers that tokenize, hand off,
  detokenize and stream), and the step that holds the prompt runs without a CUDA graph, as TensorRT-LLM's PyTorch
  backend runs it (`ScheduledRequests.can_run_cuda_graph`): 38 kernels a layer x 61 layers launched at 48.9 us
  (`overheads.TRTLLM_EAGER_LAUNCH_S`, the value that brings the pair's intercept to 79 ms) take 113 ms, longer
  than the GPU's work for 1,600 tokens (so that point sits at 128 ms) and shorter than for 8,192. The per-launch
  figure lands near SGLang's 41.5 us, fitted on other runs (41.8 us in session 6, before items 1, 3 and 4; 36.6 us
  since SGLang's refit of 2026-11-30).
- **Held out.** The H200 at expert parallelism 4 and 8 measure 77 and 69 ms of fixed part: gpuplan 92 and 93 now,
  74 with the flat constant, 36 with vLLM's figure alone. The B200 box measures 104-106 ms: 118-126 now, 68 with the
  flat constant, because its faster GPU leaves the launches showing at both lengths (its slope collapses to 1-6 ms
  per 1k tokens against 35-42 measured, so the intercept is right for the wrong share). Held-out TTFT median error
  (session 6) 41.1 % -> 31.8 %: the 1,600-token rows and InferenceX's B200 rows gain, the 8,192-token rows lose
  the 43 ms the flat constant gave every request; 24.1 % after session 7.
- **What it changes elsewhere.** A small dense model's prompt no longer pays 57.5 ms: Llama-3.1-8B on one H100
  (1,024-token prompts, one user) 84 -> 41 ms TTFT, its 448 launches (21.9 ms at 48.9 us) hidden behind the GPU's
  prefill.
  The launches are part of the step, so every request sharing a step with a prompt waits on them: TPOT of the
  InferenceX rows (4-16 users) rises by up to 3 %.
- **What stays wrong is the slope**, the prefill's GPU work per token: 1.6-1.8x too fast on the H200s and far more
  on the B200s (DeepSeek-R1's MLA prefill and MoE at TP 8 in TensorRT-LLM 0.21). That is the MoE prefill model's
  miss (issue 31 item 2), not a fixed cost, and no constant here was fitted to it.
- **TPOT** (LLMPerf's p50 inter-token latency; InferenceX's mean TPOT), with the fused all-reduce: 8-16 % short on
  the H200 with expert parallelism, 20-32 % short without it; too slow on every B200 row, +32..+48 % for FP4
  (TensorRT-LLM 0.21) and +16..+25 % for FP8 (1.3.0rc14, InferenceX): DeepSeek's decode on Blackwell as
  TensorRT-LLM runs it, an MoE item of issue 31.
- **Eight users** (H200, 1,600 tokens): measured TTFT 480-700 ms, gpuplan 216-242 ms; LLMPerf sends the eight at
  once, so the queue behind one another's prompts is set by the same prefill slope.
"""

def load_rows(path: Path = DATA) -> list[dict]:
    with open(path, newline="") as f:
        return list(csv.DictReader(line for line in f if not line.startswith("#")))


def check_scenario(row: dict) -> dict:
    """A published batch-1 run (bench/data/trtllm_latency_checks.csv) as ``estimate --users 1``: its lengths fixed,
    as trtllm-bench's synthetic or real prompts of one length give them, a handful of requests one at a time; a run
    with MTP layers as ``speculative_method mtp`` at that depth and gpuplan's default acceptance length."""
    tp = int(row["tp"])
    s = {"model": row["model"], "task": "infer", "engine": "trtllm", "engine_version": row["engine_version"],
         "gpu": row["gpu"], "num_gpus": tp, "tp": tp, "ep": int(row["ep"]), "quant": row["quant"],
         "prompt_tokens": int(row["prompt_tokens"]), "output_tokens": int(row["output_tokens"]), "users": 1,
         "num_requests": 4, "length_spread": 0.0}
    if int(row["mtp"]):
        s.update(speculative_method="mtp", speculative_tokens=int(row["mtp"]))
    return s


def per_user_ms(row: dict) -> float:
    """gpuplan's milliseconds per output token of a check row as trtllm-bench's TPS/User counts them: the request's
    latency (TTFT, then the rest of its tokens at TPOT) over its output tokens."""
    run = estimate(check_scenario(row), advise=False).load
    out = int(row["output_tokens"])
    return (run.median_ttft_ms + (out - 1) * run.median_tpot_ms) / out


def published_checks(path: Path = CHECKS) -> list[tuple[dict, float, float]]:
    """(row, published ms per output token, gpuplan's) for each check row, the runs with MTP layers among them
    (speculative decoding: bench/serving/speculative.py scores NVIDIA's MTP tables)."""
    rows = load_rows(path)
    return [(r, 1e3 / float(r["tps_user"]), per_user_ms(r)) for r in rows]


def checks_table(checks: list[tuple[dict, float, float]]) -> list[str]:
    lines = ["", "Published batch-1 decode (NVIDIA's own trtllm-bench runs, ISL 1,024 / OSL 2,048; never fitted, not "
             "in the medians; bench/data/trtllm_latency_checks.csv names each row's table and row). ms per output "
             "token = 1,000 / TPS per user, the request's TTFT included; rows with MTP planned with speculative_method "
             "mtp at gpuplan's default acceptance (2.82 tokens a step at 3 layers).", "",
             "| check | GPUs, EP, quant | MTP | published TPS/user (ms a token) | gpuplan ms a token | error |",
             "|---|---|---:|---|---:|---:|"]
    for r, ms, ours in checks:
        setup = f"{r['tp']}x {r['gpu']}, EP {r['ep']}, {r['quant']}"
        lines.append(f"| {r['id']} | {setup} | {r['mtp']} | {float(r['tps_user']):.0f} ({ms:.2f}) | {ours:.2f} | "
                     f"{err(ours, ms):+.0%} |")
    return lines


def scenario(row: dict) -> dict:
    """The row as the scenario a user would give ``gpuplan estimate``: its lengths as the client drew them
    (``length_spread``), its requests, and the server's KV fraction and KV dtype where the run set them."""
    tp = int(row["tp"])
    s = {"model": row["model"], "task": "infer", "engine": "trtllm", "engine_version": row["engine_version"],
         "gpu": row["gpu"], "num_gpus": tp, "tp": tp, "ep": int(row["ep"]), "quant": row["quant"],
         "prompt_tokens": int(row["prompt_tokens"]), "output_tokens": int(row["output_tokens"]),
         "users": int(row["users"]), "num_requests": int(row["num_requests"]),
         "length_spread": float(row["length_spread"])}
    if row["free_gpu_memory_fraction"]:
        s["free_gpu_memory_fraction"] = float(row["free_gpu_memory_fraction"])
    if row["kv_cache_dtype"]:
        s["kv_cache_dtype"] = row["kv_cache_dtype"]
    return s


def predict(row: dict, launch_s: float, request_s: float | None = None) -> tuple[float, float]:
    """TTFT and ITL (ms, the row's statistic: median or mean) of the row's plan with ``launch_s`` host seconds per
    kernel of a context step and ``request_s`` per request outside the steps (default: the package's). The ITL is
    what the row's client prints: InferenceX's benchmark_serving its TPOT (first token excluded); LLMPerf
    (``client`` llmperf) its inter_token_latency, the sum of the gaps between content chunks with the TTFT as the
    first over the output tokens, i.e. the request's whole latency per output token (ray-project/llmperf
    ``ray_clients/openai_chat_completions_client.py``: ``INTER_TOKEN_LAT = sum(time_to_next_token)``, "should be
    same as ... E2E_LAT"; ``token_benchmark_ray.py`` divides it by the output tokens), taken at gpuplan's median
    end-to-end latency over the row's output tokens."""
    held = oh.TRTLLM_EAGER_LAUNCH_S, oh.TRTLLM_REQUEST_S
    oh.TRTLLM_EAGER_LAUNCH_S, oh.TRTLLM_REQUEST_S = launch_s, held[1] if request_s is None else request_s
    try:
        run = estimate(scenario(row), advise=False).load
    finally:
        oh.TRTLLM_EAGER_LAUNCH_S, oh.TRTLLM_REQUEST_S = held
    stat = row["statistic"]
    if row["client"] == "llmperf":
        return getattr(run, f"{stat}_ttft_ms"), getattr(run, f"{stat}_e2el_ms") / int(row["output_tokens"])
    return getattr(run, f"{stat}_ttft_ms"), getattr(run, f"{stat}_tpot_ms")


def intercept(points: list[tuple[float, float]]) -> tuple[float, float]:
    """(intercept, slope) of the line through two (prompt tokens, TTFT) points."""
    (x1, y1), (x2, y2) = sorted(points)
    slope = (y2 - y1) / (x2 - x1)
    return y1 - slope * x1, slope


def pairs(rows: list[dict]) -> dict[str, list[dict]]:
    """Single-request rows of one configuration (GPU, quantization, EP) at their two prompt lengths."""
    out: dict[str, list[dict]] = {}
    for r in rows:
        if r["users"] == "1":
            out.setdefault(f"{r['gpu']} {r['quant']} EP {r['ep']}", []).append(r)
    return {k: v for k, v in out.items() if len(v) == 2}


def calibrate(rows: list[dict], hi: float = 1e-3) -> float:
    """TRTLLM_EAGER_LAUNCH_S: the host seconds per launch at which the calibration pair's simulated intercept meets
    the measured one, by bisection (the intercept does not fall as the launches grow: they add to the shorter
    prompt's step first)."""
    cal = [r for r in rows if r["role"] == "calibration"]
    measured, _ = intercept([(int(r["prompt_tokens"]), float(r["p50_ttft_ms"])) for r in cal])

    def gap(launch_s: float) -> float:
        return intercept([(int(r["prompt_tokens"]), predict(r, launch_s)[0]) for r in cal])[0] - measured

    return zero_of(gap, hi, 40)


def calibrate_walk(rows: list[dict], hi: float = 1e-6) -> float:
    """TRTLLM_HOPPER_GROUP_WALK_S: the seconds per local expert and grouped-GEMM call at which the calibration rows'
    mean ITL error is zero, by bisection (the rows' ITL grows with it), every other constant held. Their single
    requests' TTFT does not depend on it (a decode cost), so the launch time is fitted first."""
    cal = [r for r in rows if r["role"] == "calibration"]
    held = oh.TRTLLM_HOPPER_GROUP_WALK_S

    def gap(walk_s: float) -> float:
        oh.TRTLLM_HOPPER_GROUP_WALK_S = walk_s
        try:
            return statistics.mean(err(predict(r, oh.TRTLLM_EAGER_LAUNCH_S)[1], float(r["p50_itl_ms"])) for r in cal)
        finally:
            oh.TRTLLM_HOPPER_GROUP_WALK_S = held

    return zero_of(gap, hi, 30)


def zero_of(gap, hi: float, steps: int) -> float:
    """Where the rising ``gap`` crosses zero in [0, ``hi``], by ``steps`` bisections (0 when it is not below zero
    there)."""
    lo = 0.0
    if gap(lo) >= 0:
        return lo
    for _ in range(steps):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if gap(mid) < 0 else (lo, mid)
    return (lo + hi) / 2


def err(pred: float, meas: float) -> float:
    return pred / meas - 1


def median_abs(xs: list[float]) -> float:
    return statistics.median(abs(x) for x in xs) if xs else float("nan")


def report(rows: list[dict], seconds: float) -> str:
    launch, request = oh.TRTLLM_EAGER_LAUNCH_S, oh.TRTLLM_REQUEST_S
    res = {r["id"]: (predict(r, 0.0, FLAT_REQUEST_S), predict(r, launch)) for r in rows}
    lines = ["# trtllm-serve at low concurrency against published runs (TensorRT-LLM issue #5929, InferenceX)", "",
             f"Generated by `python bench/serving/trtllm_serving.py` in {seconds:.0f} s from "
             "bench/data/trtllm_serving.csv (the source and its conditions are in the file's header). Before: a flat "
             f"{FLAT_REQUEST_S * 1e3:.1f} ms per request outside the steps, fitted on the calibration pair; now: "
             "steps that hold a prompt run without a CUDA graph, each kernel launched at overheads."
             f"TRTLLM_EAGER_LAUNCH_S = {launch * 1e6:.1f} us of host time, fitted on the same calibration rows (H200 "
             "FP8 without expert parallelism, one request at 1,600 and 8,192 prompt tokens), and the server path "
             f"per request is vLLM's {request * 1e3:.1f} ms, borrowed. Decode steps of the H200 rows pay the FP8 "
             "block-scale MoE's walk over its local experts, overheads.TRTLLM_HOPPER_GROUP_WALK_S = "
             f"{oh.TRTLLM_HOPPER_GROUP_WALK_S * 1e9:.0f} ns an expert and grouped GEMM, fitted on the same rows' ITL. "
             "ITL as the row's client prints it (`client` "
             "column: LLMPerf's is the request's latency per output token, TTFT included). error = (gpuplan - "
             "measured) / measured.", "",
             "| rows | n | TTFT median abs error, before | now | TPOT median abs error, before | now |",
             "|---|---:|---:|---:|---:|---:|"]
    for role in ("calibration", "held-out"):
        sel = [r for r in rows if r["role"] == role]
        cols = [[err(res[r["id"]][k][j], float(r["p50_ttft_ms" if j == 0 else "p50_itl_ms"])) for r in sel]
                for j in (0, 1) for k in (0, 1)]
        lines.append(f"| {role} | {len(sel)} | " + " | ".join(f"{median_abs(c):.1%}" for c in cols) + " |")
    lines += ["", "| run | role | users | TTFT ms measured / before / now | TTFT error now | ITL ms measured / "
              "gpuplan | TPOT error |", "|---|---|---:|---|---:|---|---:|"]
    for r in rows:
        (tb, _), (tn, tpot) = res[r["id"]]
        ttft, itl = float(r["p50_ttft_ms"]), float(r["p50_itl_ms"])
        lines.append(f"| {r['id']} | {r['role']} | {r['users']} | {ttft:.0f} / {tb:.0f} / {tn:.0f} | "
                     f"{err(tn, ttft):+.0%} | {itl:.2f} / {tpot:.2f} | {err(tpot, itl):+.0%} |")
    lines += ["", "Single requests, TTFT against prompt length (two points per configuration): the intercept is the "
              "fixed part, the slope the prefill's cost per token.", "",
              "| configuration | intercept ms measured / before / now | slope ms per 1k tokens measured / now |",
              "|---|---|---|"]
    for name, pair in pairs(rows).items():
        mi, ms = intercept([(int(r["prompt_tokens"]), float(r["p50_ttft_ms"])) for r in pair])
        bi, _ = intercept([(int(r["prompt_tokens"]), res[r["id"]][0][0]) for r in pair])
        gi, gs = intercept([(int(r["prompt_tokens"]), res[r["id"]][1][0]) for r in pair])
        lines.append(f"| {name} | {mi:.0f} / {bi:.0f} / {gi:.0f} | {1e3 * ms:.1f} / {1e3 * gs:.1f} |")
    lines += checks_table(published_checks())
    return "\n".join(lines) + "\n\n" + NOTES


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "trtllm_serving.md")
    ap.add_argument("--calibrate", action="store_true", help="refit overheads.TRTLLM_EAGER_LAUNCH_S and "
                    "TRTLLM_HOPPER_GROUP_WALK_S on the calibration rows and print them (copy them into "
                    "src/gpuplan/overheads.py)")
    args = ap.parse_args()
    rows = load_rows()
    if args.calibrate:
        print(f"TRTLLM_EAGER_LAUNCH_S = {calibrate(rows):.3g}")
        print(f"TRTLLM_HOPPER_GROUP_WALK_S = {calibrate_walk(rows):.3g}")
        return
    t0 = time.perf_counter()
    text = report(rows, 0.0)
    text = text.replace(" in 0 s ", f" in {time.perf_counter() - t0:.0f} s ", 1)
    args.out.write_text(text)
    print(text)


if __name__ == "__main__":
    main()
