"""Big MoE models served as the engines run them: InferenceX's DeepSeek-R1-0528 rows of bench/data/sglang_serving.csv
(SGLang, 8 GPUs, FP8 at TP 8 / EP 1 on H200, B200 and MI325X, NVFP4 at TP 4-8 with EP = TP on B300), replayed with
SGLang's scheduler and the step model (bench/serving/sglang_serving.py ``run``).

    python bench/serving/moe_layout.py [--out bench/results/moe_layout.md] [--max-requests 640]

Scores mean TTFT and mean TPOT, the sources' statistic (kept in the CSV's median columns), against the mean of
the simulated requests at the run's concurrency (sglang_serving.py ``statistic``). The rows are shown, not fitted
(role ``moe``), except MI325X's, which set and check the ROCm share (bench/serving/rocm_share.py). error =
(gpuplan - published) / published.
"""

from __future__ import annotations

import argparse
import dataclasses
import statistics
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import sglang_serving as bench  # noqa: E402

from gpuplan import overheads as oh  # noqa: E402
from gpuplan.serving.steptime import Calibration, StepModel  # noqa: E402

# what the rows say, in words (kept beside the table this script writes)
NOTES = """\
The runs as launched (SemiAnalysisAI/InferenceX benchmarks/single_node/fixed_seq_len/dsr1_fp8_h200.sh,
dsr1_fp8_b200.sh, dsr1_fp4_b300.sh, dsr1_fp8_mi325x.sh; configs/nvidia-master.yaml and
configs/deprecated/nvidia-1k1k-master.yaml, entries dsr1-fp8-h200-sglang, dsr1-fp4-b300-sglang): no speculative
decoding (the MTP variants are separate entries and scripts, *_mtp.sh, not these rows), no DP attention
(--data-parallel-size 1), no torch.compile, TP and EP as the rows say, SGLang's custom all-reduce left on. H200:
--attention-backend flashinfer; B200 and B300: --attention-backend trtllm_mla, --moe-runner-backend
flashinfer_trtllm, --enable-flashinfer-allreduce-fusion (SGLang also turns that fusion on by default for DeepSeek on
Hopper and Blackwell at TP on one node), --scheduler-recv-interval 10 below 16 requests and 30 from 16; MI325X:
aiter attention, --num-continuous-decode-steps 4. Every run has --disable-radix-cache and 10 prompts per request
slot.

TPOT: the fixed part of a DeepSeek decode step was SGLang's at v0.3.0 on a dense model: 61 layers x 33 kernels x 3
us (6.0 ms) and 2 all-reduces per layer at 12 + 18.7 us (3.8 ms), 9.8 ms before any weight is read, where the runs
imply about 3.5 ms. SGLang 0.5 runs its DeepSeek layer as 16 kernels beside the GEMMs (counted from
deepseek_v2.py: overheads.SGLANG_MLA_MOE_KERNELS_PER_LAYER) and each all-reduce as one kernel with the residual add
and RMSNorm (FlashInfer's one-shot fusion, ~8 us: overheads.FUSED_ALL_REDUCE_S): 2.9 + 1.0 ms. The ROCm build
runs the same layer with its 2 norms apart (18 kernels) and no fusion; its share was refitted on the same fit rows
(concurrency 4/16/64; 8 and 32 held out): 1.90 -> 1.67, held-out AMD / NVIDIA ratio error 7.1% -> 3.9%
(bench/results/rocm_share.md). Median TPOT error before -> now: H200 +49% -> +11%, B200 +43% -> -4%, B300 TP 8
+78% -> 0%, B300 TP 4 +75% -> +7%, MI325X +46% -> +16%. H200 stays +4..+15% (c4 +6%); not explained yet. With
the runs' own flags (chunk size, memory fraction and B200's fp8 cache, the poll interval) and SGLang's refitted host
constants (2026-11-29): H200 +10%, B200 -5%, B300 TP 8 +1%, TP 4 +8%, MI325X +14%.

TTFT, like with like: the rows are InferenceX's mean TTFT and mean TPOT under a closed loop of c requests (10c
prompts after 2c warm-up requests; the first c arrive together at an idle server and queue behind each other's
prefills), scored by the same statistic (bench/serving/sglang_serving.py statistic: the mean where the locator says
mean). Counted from SGLang's code and the runs' flags (bench/data/sglang_serving.csv columns chunked_prefill_size,
scheduler_recv_interval): (1) --scheduler-recv-interval 10 below 16 requests and 30 from 16 (B200, B300): a busy
scheduler reads its socket only every 10 or 30 decode batches, and at once after a prefill batch
(scheduler_recv_skipper.py: +1 per decode batch, +1,000 per prefill batch); a request sent meanwhile waits, on
average 5 or 15 decode steps (serving/simulate.py _Engine.receive). This gives the measured steps between
concurrencies: B300 TP 8 from 1 to 2 requests +28 ms measured, +29 simulated; from 8 to 16 +102 and +96.
(2) --chunked-prefill-size as launched (32,768 on H200 and B200, 16,384 on B300, 131,072 on MI325X; it was the
card's default, 8,192-16,384), and --mem-fraction-static and --kv-cache-dtype as launched on H200 and B200: the first
wave's prompts go in fewer, larger batches. (3) a prefill batch runs without CUDA graphs, each kernel launched from
SGLang's Python (overheads.SGLANG_EAGER_LAUNCH_S, 41.5 us, fitted with the other SGLang host constants on the v0.3.0
70B calibration row's TTFT, 36.6 us since their refit with the step model's cliff of 2026-11-30; it was the 5 us
launched-kernel floor): 23 kernels x 61 layers = 58 ms (51 ms at 36.6 us), longer than the
GPU work of a 1k prompt on 8 B300s (16-29 ms) or 8 B200s (38 ms), so TP 4 and TP 8 come out alike, as measured (B300
at 1 request: 77 and 76 ms measured, 59 and 56 simulated). The same refit brought SGLang's dense check rows from
7.6% to 4.4% median error (bench/results/sglang_serving.md). Median |TTFT error| over the 32 rows 62.6% -> 28.5%;
median signed error by family H200 -45% -> -40%, B200 -80% -> -47%, B300 TP 8 -72% -> -24%, TP 4 -67% -> -22%,
MI325X -53% -> -37%; every row but H200 8k at 4 requests is still low.
Still low (measured less simulated mean TTFT): a near-constant offset per family, 15-36 ms on B300, 71-141 ms on
H200 1k and 95-133 ms on B200, that no mechanism counted here explains (SGLANG_REQUEST_S, 8.1 ms for HTTP,
tokenizing and the hand-offs, is fitted on v0.3.0; no single-request SGLang 0.5 run outside these rows sources a
larger one; the 2026 releases' piecewise CUDA graphs for prefill are not modelled either way; the wave table below
reads it as the first wave's, not a cost per request); and at the highest
concurrency of B300 (32: +440 ms), B200 (64: +710 ms) and H200 8k (64: +925 ms) a queue the simulation does not build
(no pool binds there: SGLang's admission reserve for output to come, PrefillAdder's new_token_ratio, was tried and
changed none of these rows). MI325X's 8k rows are 390-630 ms short at every concurrency (TTFT 1,026 ms at 4 requests
against H200's 373), a fixed cost rather than a slower prefill (that would grow with the first wave's 8k-token
prompts: 1,918 ms at 64 requests).
Session 8 (s8-mla): SGLang builds MLA's q_a_proj and kv_a_proj_with_mqa as one ReplicatedLinear
(fused_qkv_a_proj_with_mqa in deepseek_v2.py), so each of the 8 GPUs reads and multiplies all 15.1 M of its parameters
a layer (tensors/layout.replicated): +0.81 GB a decode token on each GPU, and 0.75 GiB less KV pool. Held-out median
|error| TTFT 28.8% -> 26.3%, TPOT 6.5% -> 7.3% (H200 +10% -> +13%, MI325X +14% -> +16%: those already ran slow).
Session 14 (s14-dsfp8): the FP8 checkpoint's block-scaled GEMMs timed as SGLang 0.5 runs them (engines/block_fp8.py:
DeepGEMM's linears on Hopper and Blackwell, the tuned Triton MoE at TP 8 on the H200 and FlashInfer's TRTLLM-Gen MoE
on the B200, all at DeepGEMM's share of the fp8 rate, overheads.DEEPGEMM_KERNEL_SHARE and TRITON_MOE_OVER_DEEPGEMM),
where gpuplan had timed them as bf16 GEMMs. The H200's TPOT excess was those prompt steps stalling the decodes: H200
median TPOT +13% -> +6% (8k rows +7..+17% -> +4..+13%), median TTFT -23% -> -37% (the 1k rows' ~80 ms a request that
no step holds, PLACED_S, now with the 8k rows' -9..-47% beside it); B200 TTFT +3% -> -2%, TPOT unchanged. Held out:
TTFT 13.6% -> 17.5%, TPOT 9.6% -> 7.7%. The B300 NVFP4 and MI325X rows do not move."""
WAVE_NOTES = """\
Where the TTFT miss sits (2026-11-29). The table above splits each published mean over its n = 10c requests: if
the n - c requests after the first wave took their simulated time, the first wave of c (sent together to a server
the 2c warm-up requests left idle) must have averaged "first wave the mean implies". On H200 1k that is 0.9 s at 4
requests to 2.9 s at 64, 0.7-1.4 s above the simulated first wave; on B300 0.26-0.5 s, 0.2-0.4 s above. An excess
D on the first wave adds D x c / n = D / 10 to the mean at every concurrency: the near-constant offset per family
(H200 1k 71-141 ms, B200 95-133 ms, B300 15-36 ms) reads as that, not as a cost on every request. Outside check (not
one of these rows): InferenceX issue #870 (2026-03-05; SGLang v0.5.7, DeepSeek-R1-0528 FP8 on 8 H200, TP 8, 1k/1k,
the same client and 10c requests) printed P99 TTFT 835, 1,975, 2,149, 2,644 and 2,741 ms at 4, 8, 16, 32 and 64
requests beside means of 267-427 ms. With 10c requests the P99 falls inside the first wave, and it is the size of
the first wave these rows imply (912, 972, 1,306, 2,393 and 2,885 ms; closest at 4, 32 and 64); a cost added to
every request would move the P99 by no more than the mean moves, leaving it near the simulated first wave (153 ms
at 4). No source found gives the excess a mechanism, so it is not modelled (fitting it would fit the held-out rows).
The top rows (B300 at 32, B200 at 64, H200 8k at 64) imply 4-9 s of excess, beyond any first wave: there the later
requests queue too, the queue the simulation does not build. MI325X reads the other way: its simulated first wave
(1.1-11.3 s) already passes the published mean from 4 requests, so with the first wave as simulated its other
requests average 0.76-1.0 s against 0.31-0.37 s simulated: 0.44-0.71 s on every request, a cost that does not hold
the engine (a prefill that much slower would queue the requests behind it; the mean at 64 requests is 1.9 s).

Looked at and ruled out (2026-11-29): (1) InferenceX's client (utils/bench_serving/benchmark_serving.py and
backend_request_func.py at 5fe6d56e, 2026-05-15): TTFT ends at the first streamed chunk with choices, empty text
included; prompts are re-encoded until the client's count matches, with SGLang's tokenizer fixes applied (#937,
#1381, both before these runs); 2c warm-up requests of the first prompt run before the timed ones, which go out at
once behind an asyncio.Semaphore(c): all as simulated. (2) --stream-interval 10 (H200, B300) and 30 (B200): SGLang
0.5 streams a request's first token at once (scheduler_output_processor_mixin.py stream_output_generation:
len(output_ids) % stream_interval == 1 for an interval above 1); it spaces the later chunks (issue #870's mean ITL is
10 x its mean TPOT), not the first. (3) --num-continuous-decode-steps 4 (MI325X): only declared in 2026's
server_args.py; the loop that read it went with the overlap scheduler (SGLang pull request #2095, 2024-11), so it is
not MI325X's fixed cost. (4) the prefill path's kernels: DeepSeek's MHA extend path
(models/deepseek_common/attention_forward_methods/forward_mha.py forward_normal_prepare, forward_normal_core)
launches 11 kernels beside its 4 GEMMs (4 FP8 input quantizations, 2 RMSNorms, rotary, the q_pe copy, the latent
cache write, the K concat, the ragged attention) where the absorbed decode path counted in
overheads.SGLANG_MLA_MOE_KERNELS_PER_LAYER has 10 beside 5: the 23 launches per layer stand, and FlashInfer's
all-reduce fusion covers batches up to 2,048 tokens (layers/communicator.py FUSE_ALLREDUCE_MAX_BATCH_SIZE), a 1k
prompt's included. (5) the scheduler's work on going idle after the warm-up (self_check_during_idle: check_memory,
the new_token_ratio reset) is small. Open: SGLang's prefill under piecewise CUDA graphs, on by default from 0.5.10
(ServerArgs.disable_piecewise_cuda_graph; _handle_piecewise_cuda_graph turns it off for expert parallelism, DP
attention, torch.compile, pipeline parallelism, an all-to-all MoE backend, LoRA, multimodal and listed model
architectures), so B300's EP 8 and EP 4 runs prefill eagerly as modelled; H200's and B200's EP 1 runs may replay
graphs up to the captured token counts: the 2026 trees' list (configs/model_config.py
piecewise_cuda_graph_disabled_model_archs: DeepseekV32, Qwen3Next, GlmMoeDsa, BailingMoeV2_5, LLaDA) does not name
DeepseekV3ForCausalLM (0.5.12's own tree not read). Modelled since session 10 (note 10 below): it shortens H200's
prefill and, on B200, brings trtllm_mla's whole-pool cast.

Looked at next (2026-11-29, later): (6) costs paid on first use of a shape (a JIT compile, an autotune, a config
chosen by token count: Triton fused_moe's tuned configs keyed by M, DeepGEMM's JIT, which only the first rank on a
node precompiles for every M up to twice the chunk at startup, layers/deep_gemm_wrapper/compile_utils.py at 0189f1e
update_deep_gemm_config, _DO_COMPILE_ALL, H200 only since B200's script sets SGL_ENABLE_JIT_DEEPGEMM=false;
FlashInfer's autotuner, run at startup; decode CUDA graphs, captured at startup). The warm-up goes out c at a time
(benchmark_serving.py: warmup_semaphore = Semaphore(max_concurrency)), so before the timed run the server has
prefilled a batch of c copies of the first prompt (c x 819-1,024 tokens, the first wave's range) and decoded a batch
of c: a per-shape cost is paid there, not in the timed first wave. A cost paid once in the timed run (from 2
requests, the first lone prompt's token count, which the warm-up never shows) adds D / 10c to the mean and shrinks
as c grows; the offsets per family stay flat or grow with c (H200 1k 76 -> 141 ms, B200 82 -> 133 ms), so they are
not one-time costs either. Neither kind is a count: a compile's time is a measurement. PR #3363's table has the same
B200 sweep at 1 and 2 requests (configs/deprecated/nvidia-1k1k-master.yaml dsr1-fp8-b200-sglang: TP 8, EP 1,
concurrency 1 to 64), left out of the bench until now and added as held-out rows (held-out median |TTFT error| 28.2%
over 29 rows -> 28.8% over 31; TPOT 6.3% -> 6.5%): 160.4 and 177.9 ms mean TTFT against gpuplan's 66 and 96 ms. The
B200 offset (+94 and +82 ms) is there with one request and an idle server, where the first timed request is the
warm-up's own prompt. (7) the top-concurrency queue: the scripts' --max-running-requests and --cuda-graph-max-bs
(H200 512 at 1k and 256 at 8k, B200 128, B300 256, MI325X graphs to 128) are above every row's concurrency. Pools:
H200 8k at 64 requests holds 531,621 tokens when its first 64 sequences are whole (prompts of 6,553-8,192 and
outputs of 819-1,024 tokens) against gpuplan's 548,530; with admission reserving every running request's whole
output (stricter than SGLang's PrefillAdder, whose reserve is new_token_ratio x the output to come, 0.7 decaying to
0.098) the simulated mean is unchanged (1,320 ms): a queue needs a pool 3% smaller, which no log of these runs
gives. The B200, B300 and MI325X pools (2.1-5.2M tokens) are at most 26% used. The recv skipper is as simulated
(managers/scheduler_recv_skipper.py: weights SGLANG_SCHEDULER_RECV_SKIPPER_WEIGHT_DECODE 1, NONE 1, DEFAULT 1,000),
and B300 polls every 30 decode batches at both 16 and 32 requests (dsr1_fp4_b300.sh: CONC >= 16), yet 16 requests
measure 224 ms (simulated 188) and 32 measure 664 ms; its TPOT at 32 matches (11.6 against 11.7 ms), so the extra
wait happens without stalling decodes: requests held before admission, not slower prefills. No mechanism found;
nothing is built. (8) medians: PRs #3173, #3363, #3183 and #3318 label their tables "Mean latency" (InferenceX's API
means); the client computes medians too (benchmarks/benchmark_lib.sh run_benchmark_serving: --percentile-metrics
ttft,tpot,itl,e2el) but no source found prints them for these runs, and issue #870 prints means and P99s only. The
rows stay means, scored by the mean.

Looked at next (2026-11-29, s7): (9) a cost on every prefill, not only the first wave's. tenstorrent/tt-inference-
server issue #356 (2025-07-09, not one of these rows: DeepSeek-R1-0528 under SGLang on 16 H100s over InfiniBand,
one request at a time, vLLM's benchmark_serving client) measured 179.7 ms TTFT for a 128-token prompt, 184 at 128
in / 1,024 out, 190-200 ms at 2,048-4,096 (prompts that share prefixes with the earlier runs' under SGLang's radix
cache, so only the 128-token rows are clean); gpuplan's TTFT alone there is 31 ms (GPU work 23 ms, no launches
below the decode graph's cap). SGLang's ModelRunner runs every extend batch eagerly, whatever its size, so a
128-token prompt pays its ~1,400 launches too (58 ms at SGLANG_EAGER_LAUNCH_S); that still leaves ~90 ms on one
request at an idle server on H100 FP8 at EP 1, the size of this table's H200 and B200 offsets (80-140 ms at EP 1)
and not of B300's at EP 4-8 (15-36 ms). No mechanism in the code read explains it (piecewise CUDA graphs, which
SGLang turns off under expert parallelism, would shorten the EP 1 prefills, not lengthen them); nothing is built.
(10) The step model's prompt step (the closing note's "TTFT alone 50.0 vs --users 1 58.7 ms"): on main the
Llama-3.1-8B case on one H100 at 2,048 tokens gives 56.0 ms alone and 56.7 ms at --users 1 --length-spread 0 (the
0.67 ms is the decode graph's per-kernel floor, which serving/steptime.py adds to every step by design) and
59.7 ms at the default +-50 % lengths (the sampled prompts' median is not 2,048), so the 50.0 / 58.7 of the closing
note do not reproduce on main. Past the decode graph's cap, where a DeepSeek prompt waits on its launches,
the closed form adds the decode step's launches and floor to the prompt's GPU work: 67.4 ms against StepTimer's
58.2 ms for 1,024 tokens on 8 B200s. Pricing such a step as StepTimer does (the larger of its GPU work and its
launches) and refitting SGLang's host constants on the calibration rows (launch 41.5 -> 36.3 us) moved the held-out
medians the wrong way: this table's TTFT 28.8% -> 30.3% and TPOT 6.5% -> 7.0%, sglang_serving's MoE TPOT 9.6% ->
10.2%, its dense check rows 4.4% -> 4.7%; every prompt step eager, as ModelRunner.forward runs them (launch refit
to 29.3 us on the 8B and 70B calibration rows), 28.8% -> 39.5% and 4.4% -> 6.0%. Neither was kept: the decode
terms the closed form adds stand in for a prefill cost the model does not yet have.
(11) The frontend process (2026-11-29, s8-admit; serving/simulate.py _Frontend): a request now reaches SGLang's
scheduler after the TokenizerManager's serial work (overheads.SGLANG_FRONTEND_S, 1 ms, borrowed from vLLM's API
server), one request at a time, with the share of that process that streaming the running requests' tokens leaves.
At these loads the process is mostly idle (at most 64 streams of a token per 20-50 ms: 9-23 % of it at 64, under 6 %
at 1-16), so the queue itself adds little; what moved is where a closed loop's next request lands: before, it
reached the scheduler at the very end of the step that finished the last one (no real client can: its request is
sent after the last token is streamed, then parsed and tokenized), and was taken into the next batch at once; now it
lands 1 ms into the next step and waits for the scheduler's next poll and prefill batch. Held-out TTFT 28.8% ->
22.5% (H200 -40% -> -23%, B200 -47% -> -39%, B300 -24% / -22% -> -8% / -5%, MI325X -37% -> -33%), TPOT 6.5% -> 6.7%;
after s8-mla's merge (MLA's down-projections), 26.3% -> 20.5% (H200 -37% -> -20%, B200 -46% -> -39%, B300 -23% /
-21% -> -8% / -5%, MI325X -33% -> -28%), TPOT 7.3% -> 7.2%. The +20 ms at 1-2 requests is mostly this wait; the +137
ms at 16-32 and +582 ms at 64 are not the frontend's (a process at most a quarter busy queues a few ms) and stay
open."""
FACTOR_NOTES = """\
By factor, and where the offset sits (2026-11-29, s8; the tables below are generated from the runs).
(1) By factor: the offset (published less simulated mean TTFT) is one near-constant per family from 1 to 16
requests (B200 FP8 EP 1 +82..+132 ms, H200 FP8 EP 1 at 1k +71..+80 ms at 4-16 requests, B300 NVFP4 EP 4 and 8
+15..+36 ms), then a queue at B300's 32 and B200's and H200 8k's 64 requests (+437..+925 ms). It is not a slope
in concurrency below those, not the release (every NVIDIA row is 0.5.12), not TP (B300 at TP 4 and TP 8 within
10 ms of each other; PR #3363's B200 8k points below, TP 4 +135 ms and TP 8 +129 ms), and the recv interval does
not order it (at 10, B300 +15..+30 ms and B200 +82..+132 ms).
(2) Part of it is on every request, not only on the first wave (this revises the wave reading above). Issue #870's
v0.5.7 runs of the same setup show both at once: their means and P99s bound the later requests' mean from below at
148-204 ms (rest_floor), against 75 ms simulated, and their P99s (0.8-2.7 s) show a first wave far slower than
simulated, a one-time cost in the timed run. For 0.5.12 the means alone cannot split the two. Read with its first
wave as simulated, the H200 1k mean leaves 155-164 ms for each later request at 4-16 requests (the wave table's
last column), about #870's floor. B200 at 1 request, each of its 10 requests sent to an idle server, is +94 ms;
PR #3363's B200 8k/1k points, outside the bench, are +129..+152 ms at 1-2 requests. tenstorrent/tt-inference-server
issue #356 (2025-07-17) measured SGLang at 179.7 ms and vLLM at 55.6 ms for a 128-token prompt of DeepSeek-R1-0528,
one request at a time on the same 16 H100s (8 requests each). The one-time kind has a known cause in this client:
it warms up with 2c copies of one prompt (benchmark_serving.py benchmark(): test_input = input_requests[0]), so
shapes the timed run meets first can compile there.
ai-dynamo/aisimulate issue #287 (SGLang 0.5.14, DeepSeek-V4-Pro on 8 B200 at TP 8 EP 1, 1k/1k, the same warm-up)
traced 26 of its 27 first-sweep requests over 1 s to DeepGEMM JIT compiles inside measured prefills (mean TTFT at 1
request: 581.8 ms in the first sweep, 202.4 and 196.5 ms in the next two). InferenceX issue #2819 counts 357 strong
TTFT-tail candidates in its 2026-08-31 dump of published rows (one confirmed by its logs).
(3) Where it sits, read from the TPOT. The placement table puts the same 80 ms either on each request's own path
(request_s, outside the engine's steps) or inside each step that holds a prompt (which stalls every running
decode). Both bring the held-out TTFT to 20.9% (the B300 rows, which do not have it, overshoot). Inside the step,
H200's median TPOT goes from +10% to +18% (+17..+20% at 16-64 requests); on the request's path it stays. So either the
cost does not stall the decodes (the API server, the tokenizer and detokenizer processes, the client), or the H200
decode step is over-modelled by as much (its +10% is unexplained). It grows a little with the prompt on B200 (+90
ms at 1k, +130 ms at 8k) but not on H200 (8k at 4 requests: -23 ms).
(4) Not adopted. No single constant fits the families. Fitted on the B200 8k points (outside the held-out rows),
+130 ms would move H200 8k at 4 requests from +6% to about +40% and H200 1k to about +35%. Limiting it to the FP8
checkpoints would let the held-out B300 rows choose the split. These runs cannot separate what the families with
the offset share (FP8 block-quantized weights at EP 1: H200, B200 and tenstorrent's H100s) from what B300 has
(NVFP4 experts, BF16 attention, EP 4-8): every FP8 run is EP 1 and every EP run is NVFP4. Two InferenceX entries
would separate them (configs/deprecated/nvidia-1k1k-master.yaml): dsr1-fp8-b300-sglang (FP8, TP 8, EP 1 on B300,
v0.5.12) and dsr1-fp4-b200-sglang (NVFP4, TP 4, EP 1 on B200, v0.5.12.post1); no source read prints their TTFT.
One server log would place the cost: SGLang reports each request's queue time, prefill launch delay and prefill
launch latency (scheduler_output_processor_mixin.py stream_output_generation; --enable-request-time-stats-logging).
MI325X reads the same way, larger: its later requests imply 757-1,012 ms against 307-368 ms simulated.
(5) The eager floor, the one part with a measurement outside these rows. SGLang pull request #12160 (2025-10-26)
logged a "forward cost" of 82.6 ms for a DeepSeek-V3 prefill of 1 new token run eagerly, and 23.1 ms with a CUDA
graph. gpuplan counts 58 ms of launches (23 kernels x 61 layers x 41.5 us; 51 ms at 36.6 us), and it prices a
prompt step of up to cuda_graph_max_bs tokens as a graph replay, which SGLang never does for an extend batch (its
decode graphs replay decode batches only: cuda_graph_runner.py CudaGraphRunner.can_run). With every prompt step at
least 82.6 ms (the placement table's last line): held-out TTFT 27.0% and TPOT 8.3%; the B300 rows come to -6..+19%
at 1-16 requests, while H200 1k and B200 stay at -27..-46%. Not adopted: making every SGLang prompt step eager moved
the dense check rows from 4.4% to 6.0% (note 10 above), and the pull request names neither its GPUs nor its release.
Looked at next (2026-11-29, s9; the last table). (6) The prompt's matmul rate. The FP8 rows are timed at the 16-bit
rate over 1-byte weights (their quant is the checkpoint's own). SGLang runs DeepSeek's block-FP8 GEMMs on FP8 tensor
cores: DeepGEMM on H200; on B200 dsr1_fp8_b200.sh sets SGL_ENABLE_JIT_DEEPGEMM=false and
SGLANG_ENABLE_FLASHINFER_GEMM=true (FlashInfer's groupwise FP8 GEMM) beside --moe-runner-backend flashinfer_trtllm;
MI325X runs AITER's (SGLANG_USE_AITER=1). Timed at the FP8 rate, every family falls further (H200 8k from -2% to
-25%): SGLang's DeepSeek prefill reaches about the 16-bit rate end to end, and the rate is not the offset. (7)
MI325X's prompt work at the ROCm share its decode was fitted on (1.67): 4 requests -58% -> -32%, 64 requests -10% ->
+48%. A slower prefill queues the later requests, which the published means do not show, so MI325X's cost stays off
the engine's path, as read before (the ROCm runs' chunk of 131,072 tokens and fp8 KV cache are as launched). (8) What
the families with the offset share beyond FP8 is EP 1: each GPU holds an eighth of every expert (TP 8 cuts the
2,048-wide expert to 256 columns), so a 1k prompt's MoE runs 256 groups of [32 x 7,168] x [7,168 x 512] GEMMs on every
GPU, where B300 at EP 8 runs 32 whole experts. gpuplan times the 256 groups as one grouped GEMM at its shape model's
efficiency; no kernel profile of SGLang's EP 1 MoE at prefill (Triton fused_moe on H200, TensorRT-LLM's block-scale
MoE on B200) was found to price the small tiles, and tenstorrent #356's H100 run (SGLang 180 ms against vLLM 56 ms
for a 128-token prompt, same cards and model) points at a cost outside the GPU's matmuls. Nothing is built.
Looked at next (2026-11-30, s10). (9) The EP 1 experts' tile padding. The tuned Triton fused_moe config SGLang ships for
this layer on H200 (layers/moe/fused_moe_triton/configs/triton_3_3_1/E=257,N=256,device_name=NVIDIA_H200,
dtype=fp8_w8a8,block_shape=[128, 128].json, the newest Triton folder holding it; E=257: SGLang runs the shared expert
as a 257th; which MoE runner 0.5.12 picks for block FP8 at TP 8 on Hopper was not read) takes the prompts of
819-1,024 tokens at its key 1024: BLOCK_SIZE_M 64, and moe_align_block_size pads each expert's rows up to it, so a
1k prompt's ~32 rows an expert fill half a tile. gpuplan's shape model already charges 32 rows at 3.99x their bare
compute (1 + 68/32 + 132/7,168 + 218/256), where a 64-row tile with no row term costs 64/32 x 1.87 = 3.74x: the
padding is priced (0.94x of it). Charged on top (64 rows at the model's own row term), a 1k prompt's experts go
from 34.1 to 45.2 ms on 8 H200s and from 22.4 to 30.1 ms on 8 B200s (128-row tiles: 68.9 and 46.1): at most +11 ms
a prefill on H200 against its +71..+141 ms offset, and nothing on B200 at 1k, whose prompt step was then bound by
its 58.2 ms of launches over 38.4 ms of GPU work. At 8k tokens an expert gets 256 rows, whole tiles. Not the offset.
(10) Built: SGLang's prefill graphs and the whole-pool cast they bring on Blackwell (engines/sglang.py
prefill_graphs). SGLang v0.5.10's release notes: "Piecewise CUDA Graph Enabled by Default" (PR #16331, merged
2026-03-02), so 0.5.12 replays a prompt step of up to 2,048 tokens (MLA; docs advanced_features/piecewise_cuda_graph)
as graph pieces, except under expert parallelism or DP attention (the B300 EP 4/8 runs stay eager). Under such a graph
SGLang runs MLA absorbed, and trtllm_mla (B200's --attention-backend) has no absorbed varlen kernel, so it hands the
step to FlashInfer's paged MLA, which runs `get_key_buffer(layer.layer_id).to(q.dtype)`: with B200's --kv-cache-dtype
fp8_e4m3, every layer's whole pool (2.05M tokens of 576 elements) cast to bf16, whatever the prompt (PRs #32782,
#35807: "a full materialization of the entire allocated KV pool, once per layer, per forward"). PR #28053 (2026-06-12,
"DSR1 + trtllm_mla attention backend fallbacks to FlashAttention under prefill cudagraphs, which regresses performance
a lot") turned DeepSeek's prefill graphs off on trtllm_mla, after 0.5.12. Priced from issue #35291's measured cast
(13.77 ms for a 131,072-token fp8 pool on 8 H200s: 14.35 bytes an element at the card's bandwidth,
overheads.SGLANG_POOL_CAST_BYTES_PER_ELEMENT): 134 ms per graphed prompt step on 8 B200s, against the 58 ms of
launches the graphs save. Nothing fitted on these rows. The cast is a near-constant per prompt step, present with one
request at an idle server and absent at EP 4/8: the B200 offset's signature. Cross-check outside the bench (never
fitted): PR #35807 measured the same fallback on Kimi-K2.6 NVFP4 with an fp8 pool, one request of 1k tokens, at 122.68
-> 344.58 ms TTFT on 4 GB300s (+221.9 ms) and 44.50 -> 295.69 ms on 8 B200s (+251.2 ms, against its own fix, which
also swaps the attention kernel); gpuplan's pools for Kimi-K2 there (SGLang's default memory fraction: 3,515,389 and
2,558,845 tokens; the logs are not printed) give 221.6 and 167.6 ms of cast. B200 (ix3363) TTFT by concurrency
1/2/4/8/16/32/64: -59/-34/-39/-43/-21/-18/-56% -> +13/+39/+18/+3/+3/-5/-53%, held-out median |error| 38.6% -> 12.8%;
TPOT -10..0% -> -8..+7%. H200 (ix3173, flashinfer_mla, bf16 pool: no cast) loses its 1k prompt steps' launches: 1k
TTFT -19..-36% -> -22..-40% (ix3173 median 20.4% -> 23.5%), its 8k rows (steps past 2,048 tokens) unchanged. The
absorbed attention's extra FLOPs under the graphs (3.4x a prompt's multi-head ones, ~1 ms at 1k) are not timed. Left:
B200 at 64 requests (-53%: the queue above), H200's offset, now ~80-95 ms; MI325X (ROCm's default for these graphs not
read; the cast is trtllm_mla's, on Blackwell).
Revised (session 15, s15-ttft): 0.5.12 ran no prefill graphs for these B200 runs, so no cast. Until 2026-05-22
server_args.py turned the graphs off under the flashinfer_trtllm and flashinfer_mxfp4 MoE runners
(_handle_moe_kernel_config, "TODO(yuwei): Fix piecewise cuda graph support for bypassed topk MoE backends", startup
line "Piecewise cuda graph is disabled for ..."): sgl-project/sglang issue #26715 bisects its removal to PR #23351
(merged 2026-05-22, after the 2026-05-17 and 05-22 runs' v0.5.12 image); PR #23906 put it back and PR #27841 took
it out again on 2026-06-10 ("I kept seeing the 'Piecewise cuda graph is disabled...' log and thought I was somehow on
an old version"), two days before PR #28053 reported the DeepSeek regression under the graphs. dsr1_fp8_b200.sh
passes --moe-runner-backend flashinfer_trtllm, SGLang's own pick for these experts on SM 10.x. The check: InferenceX
PR #3175 runs the same launch line on 8 B300s (dsr1_fp8_b300.sh "reuses the existing DSR1 FP8 B200 SGLang recipe
as-is"; v0.5.12, published the same day): one 1k-token request at a time, 70.9 ms mean TTFT, where a graphed prompt
step with the cast takes ~275 ms on the B300's 3.9M-token pool (gpuplan with the cast: 283 ms, +299%; with the guard:
60 ms; the PR #3175 table at the end). Modelled (engines/sglang.py PREFILL_GRAPHS_MOE_GUARD_UNTIL,
engines/block_fp8.py sglang_trtllm_moe; nothing fitted): B200 (ix3363) TTFT at 1/2/4/8/16/32/64 requests
+9/+35/+14/-2/-4/-13/-58% -> -62/-39/-44/-49/-28/-27/-61%, TPOT -10..+5% -> -10..-3%; held-out median |TTFT error|
17.5% -> 26.8%, TPOT 7.7% -> 8.5%. The B200's offset is open again, and it is the B200's: the same software on B300
has none at 1k (160.4 ms against 70.9 at one request, 203.9 against 128.9 at four), and at 8k the two cards differ by
26-29 ms (314 against 288 ms at TP 8, 410 against 381 at TP 4), where gpuplan gives the two within 6 ms of each other.
Both cards miss the 8k prompts alike (+140 and +162 ms at one request, TP 8), the B200 alone the 1k ones, whose steps
wait on their eager launches (51.8 ms against ~30 ms of GPU work): the B200's extra is largest where the host
launches the step and small where the GPU's work outlasts the launches, as a slower launch per kernel on those runs'
hosts would be (a host is not an input; nothing modelled).
(11) TensorRT-LLM shows an EP 1 cost of its own (issue #5929, H200 FP8, one user: 165 ms at EP 1 against 124 at
EP 8 for 1,600 tokens; bench/results/trtllm_serving.md), with other kernels and no Python-launched Triton: for
H200 the EP 1 MoE stays a suspect, unpriced for want of a kernel profile.
(12) MI325X's rows as launched: InferenceX's dsr1_fp8_mi325x.sh has passed --kv-cache-dtype fp8_e4m3 and
--mem-fraction-static=0.8 since the file was added (8d81e0bf, 2026-02-19; unchanged through 1b234994, 2026-06-02,
before the 2026-09-10 runs), where bench/data/sglang_serving.csv left both blank for ix3318 (a bf16 pool at SGLang's
default fraction). Applied (session 10): the rows carry both, and ROCM_DECODE_SLOWDOWN is refitted on the same fit
rows, 1.70 -> 1.75 (held-out AMD / NVIDIA TPOT ratio error 4.5% -> 1.5%; the MI300X constant of the first DeepSeek
releases refitted with it on PR #3237, 150 -> 140 us). TTFT at 4/8/16/32/64 requests -57/-45/-27/-16/-9% ->
-57/-44/-26/-14/-7%, TPOT +7/+18/+27/+21/+8% -> +7/+17/+24/+16/+1%: the launch flags are not the 0.44-0.71 s a
request either. InferenceX pull request #2949 (2026-09-10, the move to the v0.5.19 image these rows ran): "launch
flags and evals are unchanged".
(13) Looked at next (session 10, s10-amd); nothing built. (a) The aiter backend's prompt path on gfx942
(sgl-project/sglang layers/attention/aiter_backend.py, a 2026 snapshot, not 0.5.19's own tree): its asm FP8 MLA
prefill (SGLANG_AITER_FP8_PREFILL_ATTN) is gfx95-only, so MI325X's prompts run aiter's 16-bit varlen attention; no
per-request constant was found in the path read. (b) --max-prefill-tokens: dsr1_fp8_mi325x.sh passes 131072 beside
its 131,072-token chunk, dsr1_fp8_h200.sh and dsr1_fp8_b200.sh (TP 8) pass 32768 beside their 32,768 chunk, and
dsr1_fp4_b300.sh leaves SGLang's 16,384 beside a 16,384 chunk (InferenceX at 843c6254, 2026-08-22; an earlier
reading here had the NVIDIA scripts at the default). Modelled since session 11 (serving/simulate.py
_closes_prefill_batch): up to 0.5.12.post1 PrefillAdder.add_one_req refuses a prompt at least as long as what the
batch leaves of max_prefill_tokens once the batch holds one, so with the cap at the chunk no prompt joins a batch as
a piece of it (from 0.5.13, with chunking, the batch closes after the prompt that uses the cap up). H200 8k TTFT at
8/16/32/64 requests +4/-2/-3/-32% -> +3/-4/-5/-33%; MI325X unchanged. (c) No public MI300X/MI325X DeepSeek-R1 prompt
timing of a 0.5 release was found to price MI325X's cost against (AMD's blogs give relative kernel gains only; PR
#3237's 0.4.3 MI300X prefill, 0.838 s for 4 x 2,048 tokens, is another release and path: since session 11 it sets
the first DeepSeek releases' ROCm prompt path, overheads.SGLANG_EARLY_PROMPT_SCALE).
(d) For the EP 1 question of note (8): InferenceX pull request #3175 prints dsr1-fp8-b300-sglang (FP8, TP 8, EP 1,
v0.5.12) mean TTFT, 1k/1k at 1/2/4/8 requests 70.9/117.3/128.9/146.1 ms and 8k/1k at 1 request 288.1 ms: FP8 at EP 1
on B300, the pair note (4) asked for; held-out rows since session 15 (ix3175-, note 18).
(14) Looked at next (session 11, s11-ix); nothing built. (a) The client as these runs ran it: InferenceX at 843c6254
(2026-08-22, the newest commit before the 2026-09-10 runs) has utils/bench_serving/benchmark_serving.py as of #1705
(2026-06-11, which only drops saved fields), benchmark_lib.sh run_benchmark_serving passes --request-rate inf,
--ignore-eos, --num-warmups 2c and --percentile-metrics, dsr1_fp8_mi325x.sh --backend vllm (the OpenAI completions
request), --num-prompts 10c and --random-range-ratio 0.8 (sample_random_requests: lengths uniform in [int(0.8 N),
N]): all as simulated. (b) The AMD runner (runners/launch_mi325x-amds.sh) sets
TRITON_CACHE_DIR=/tmp/triton-cache-$JOB_ID, so each point compiles its Triton kernels afresh, the warm-up only for
the first prompt's shape; any compile runs on the scheduler's thread and stalls the running decodes, which the TPOT
rules out (note (9) and the placement table). The script also polls amd-smi every second (benchmark_lib.sh
start_gpu_monitor; nvidia-smi on the NVIDIA runs). (c) The published curve read by itself: mean TTFT at 8 requests
is 4's (1,026.7 against 1,025.5 ms) though the first wave doubles (8 prompts of ~7,400 tokens in one 131,072-token
step where 4 were), and gpuplan's rises 125 ms from 4 to 8; at 64 requests MI325X's TTFT is below H200's (1,918
against 2,246 ms, where at 4/8/16 requests it is 2.7/2.1/1.7x H200's). So the rows read as a prompt path cheaper
than gpuplan's plus a wait of about 0.6 s on each request that neither holds the engine nor queues: the table below
(a diagnostic whose two sizes are read off these five rows, so not adopted; the ROCm share not refitted) puts prompt
work x 0.7 and 0.6 s on each request's own path at -10..+5% on all five TTFT rows, where the same 0.6 s on the one
frontend process (serial, as SGLang's TokenizerManager would add it) queues to +67..+79% at 32-64 requests: whatever
the wait is, it runs beside other requests' waits, not one at a time. No source found gives either number: the aiter
FP8 prompt path's rate on gfx942 (note (13c)) or a ~0.6 s per-request wait in SGLang 0.5.19's ROCm path or the
client.
(15) Looked at next (session 12, s12-ttft); nothing built. (a) The client's tokenizer against the server's: InferenceX
pull request #937 (2026-03-24) found transformers 5 rebuilding DeepSeek-R1's ByteLevel pre-tokenizer as Metaspace in
the client, so a 7,140-token client prompt reached the SGLang server as 35,921 tokens and TTFT read 3x (1,394
against 482 ms), near MI325X's 2.3x at 4 requests (though longer prompts would also stall the decodes). These
runs' client has the repair SGLang's server
applies (utils/bench_serving/backend_request_func.py _fix_tokenizer_for_sglang, resolving hub ids since #1381;
benchmark_serving.py _load_tokenizer takes that get_tokenizer first, in the main process and the prompt workers;
unchanged through 843c6254), so the prompts reached the server at the client's lengths, as simulated; only the runs'
server logs (each prefill batch's #new-token) could show otherwise, and none is published. (b) SGLang's completions
stream (entrypoints/openai/serving_completions.py _handle_streaming_request and _generate_completion_stream, a 2026
tree) sends the first chunk whatever its text and holds the HTTP 200 only until it exists: no first token is held
back. (c) The client opens an aiohttp session and connection per request on the same node (backend_request_func.py):
milliseconds. (d) InferenceX pull request #2949 (2026-09-10), which moved this recipe to the v0.5.19 image: "launch
flags and evals are unchanged". What would place the ~0.6 s is one ~7,400-token DeepSeek-R1 prompt timed alone on
gfx942 under SGLang 0.5 (InferenceX runs MI325X and MI300X from 4 requests up only: configs/amd-master.yaml
conc-start 4) or the runs' server logs; neither is published.
(16) Looked at next (session 14, s14-rocm); nothing built for these rows. What SGLang 0.5's ROCm build runs for
DeepSeek's block-FP8 linears on gfx942 is AITER's CK gemm_a8w8_blockscale (SGLANG_USE_AITER=1; sgl-project/sglang PR
#14043 keeps MI300X-class cards on it, the Triton variant for gfx950 only), and its tuner's published times on a
304-CU card (ROCm/aiter PR #365, 2025-05-01, unchanged through 2026; bench/data/aiter_blockscale_gemm.csv) read
against gpuplan's timing of these rows' linears (the 16-bit rate over fp8 weights) at 0.73-1.10, median 0.88
(tests/speed/test_rocm_block_fp8.py): gpuplan's GEMMs are ~12 % fast, ~30 ms of the ~580 ms missing at 4 requests,
and a slower prompt path queues the later requests (note (7)): not the gap. The first DeepSeek releases' Triton
kernels on gfx942 were slower still (overheads.ROCM_BLOCK_FP8_KERNEL_SHARE, 0.143, fitted on SGLang PR #3237's MI300X
prefill; vLLM 0.7.3's MI300X rows, load_accuracy.md dstackr1, are its test), but 0.5.19 does not run them. AITER's
fused MoE: its tuned tables (aiter/configs/tuned_fmoe.csv and model_configs/a8w8_blockscale_tuned_fmoe_ds_v3.csv,
2025-08 to 2026-05) time DeepSeek's TP 8 expert shape (7,168 x 256, 256-257 experts, top 8-9) on 80- and 256-CU
cards only, none on a 304-CU MI300X or MI325X (their 304-CU rows are EP 8's 33 experts of 2,048); its MHA varlen
prompt attention: no published gfx942 time either (AMD's blogs give "3X" and "14X" over earlier kernels, relative
only). Nothing there to price these rows' experts or attention against.
(17) Looked at next (session 15, s15-ttft); for these rows nothing built (note 10's revision above came of it).
(a) The client's request path (backend_request_func.py async_request_openai_completions, benchmark_serving.py
benchmark() at 843c6254): the clock starts after the request's own aiohttp.ClientSession is built and stops at the
first SSE line with choices, so it holds the TCP connect to the server on the same node and the 4-40 KB JSON body,
sub-millisecond; "Starting initial single prompt test run..." is printed but sends nothing; the 2c warm-up requests
(input_requests[0] with its sampled output length, ignore_eos) are gathered to their end before the timed run; prompt
and output lengths uniform in [int(0.8 N), N] (sample_uniform), as sglang_serving.py requests() draws them; the
client's tokenizer builds the prompts before the run and counts outputs after it (calculate_metrics), nothing in
between. (b) What the rows share bounds what the client and the text path can hold: H200 8k at 4 requests has the
client, the 0.5.12 TokenizerManager and detokenizer, the OpenAI completions stream, --stream-interval 10 and
--decode-log-interval 1 of the H200 1k rows, and MI325X's 8k random-text prompts, and its later requests leave
+36 ms (the wave table: 323 implied against 287 simulated). So tokenizing 6.5-8.2k tokens of random text in the main
process, detokenizing and streaming cost at most ~36 ms: neither MI325X's ~0.6 s nor, being longer for longer
prompts, the H200 1k rows' ~80 ms. (c) Neither script passes --enable-dp-attention (dsr1_fp8_h200.sh
--data-parallel-size=1; dsr1_fp8_mi325x.sh no DP flag: each prompt on all 8 GPUs at TP 8, as simulated),
--enable-mixed-chunk (prefill-only batches, as simulated) or --enable-prefill-delayer (the opt-in that holds
prefills back to batch them: a wait on each request that would not hold the engine). (d) The first token under the
overlap scheduler (event_loop_overlap, is_disable_overlap_for_batch, a 2026 tree): a prompt step's result is
processed, and its first tokens streamed, after the next batch is launched. After a decode graph replay that is a
few ms of host work (the async host loop simulated); after another prompt step
(SGLANG_DISABLE_CONSECUTIVE_PREFILL_OVERLAP, default false: "For two consecutive prefill batches, we disable overlap
to improve the TTFT of the first batch") the first tokens wait for the second step's launches, which outlast the
first step's GPU work only when both
run eagerly and the first is under two launch sets (~104 ms on 8 H200s, 23 x 61 kernels x 36.9 us each): prompt
steps of 2,048-2,500 tokens, at most ~52 ms on one step of a back-to-back pair. None of the 1k rows' steps (graphed,
at most 2,048 tokens) nor the 8k ones (254-322 ms of GPU work against 52-56 ms of launches); not ~80 ms on every
request. (e) --num-continuous-decode-steps (MI325X 4): in the 2026 trees read it sizes only the overlap clients'
kept batch references (keep_batch_reference_num = 2 x steps); no loop runs it. aiter's prompt attention without a
prefix (aiter_backend.py forward_extend, a 2026 tree): flash_attn_varlen_func on the step's own q, k and v, no read
of the fp8 pool (with a prefix it index_selects the request's own entries before the cast), so no whole-pool cast
as under note 10's fallback; --disable-radix-cache leaves no prefix anyway. Left as before: H200's ~80 ms at 1k
(on steps that replay prefill graphs: the flashinfer_mla absorbed path under them is not timed here) and MI325X's
~0.6 s.
(18) The Blackwell 8k prompts (session 15, s15-b300; (a) built by s15-figemm). InferenceX PR #3175's twelve B300
FP8 points (dsr1_fp8_b300.sh: dsr1_fp8_b200.sh's launch line) are held-out rows now (bench/data/sglang_serving.csv
ix3175-; the B300 card in gpus.yaml is the HGX B300 these ran on: runners/launch_b300-nv.sh takes x86_64 nodes of
8 B300s, the Grace-based GB300s have runners of their own). They miss the 8k
prompts as the B200 points do: at one request +140 ms (TP 8) and +176 ms (TP 4) on B300, +162 and +200 ms on B200
(PR #3363, outside the bench), against 1k's +11 ms on B300. Read as a part a that does not depend on TP and a part b
that scales with each GPU's share of the work (TP 4 holds twice TP 8's), a + b and a + 2b give b = 36-38 ms and
a = 104 ms (B300) and 124 ms (B200) for one ~7,400-token prompt, ~14-17 us a prompt token (at 1k ~13 ms, the B300's
+11). H200's 8k rows (same client, flashinfer_mla, DeepGEMM, Triton MoE) show no such part: at 4 requests, whose
first wave puts ~29,000 prompt tokens in one step, -9 %. gpuplan's B300 TP 8 step for 7,372 tokens is 141 ms: GEMMs
75 ms (the dense linears' compute 26 ms, the routed experts' 33 ms, the rest their fixed and bandwidth terms),
attention 22 ms, element-wise 12 ms, all-reduces 32 ms. What was read:
(a) The dense linears, built (session 15, s15-figemm). dsr1_fp8_b*.sh export SGL_ENABLE_JIT_DEEPGEMM=false and
SGLANG_ENABLE_FLASHINFER_GEMM=true. SGLang's environ.py turns SGL_* into SGLANG_* (still on main in 2026-09: PR
#38219), so ENABLE_JIT_DEEPGEMM is off, and fp8_utils.py's _dispatch_auto_backend (the same in the 2025-12 tree
of PR #14379 and a 2026 one; 0.5.12's own not read) then takes flashinfer_gemm_w8a8_block_fp8_linear_with_fallback
on Blackwell: FlashInfer's gemm_fp8_nt_groupwise, backend "trtllm" (the 2025-12 tree also maps
SGLANG_ENABLE_FLASHINFER_GEMM to the same kernel). That is the kernel --fp8-gemm-backend flashinfer_trtllm names
(PR #14379, 2025-12), so the scenario carries it as fp8_gemm_backend (default: SGLang's auto, DeepGEMM where it
runs) and the csv's fp8_gemm_backend column sets it on the ix3363 and ix3175 rows. Its rate: SGLang PR #13528's B200
table (the kernel alone), at M >= 1,024, 437-442 TFLOPS at N 24,576 x K 7,168 and 295-533 at 576 x 7,168; as a
share of gpuplan's fp8 rate 0.222-0.229 and 0.378-0.432, the mean of the two shapes 0.314
(overheads.FLASHINFER_GROUPWISE_KERNEL_SHARE, where DeepGEMM's is 0.875; DeepGEMM ran 5.7-6.3x faster in the same
table). flashinfer issue #2146 and cutlass issue #2923 time only shapes up to 3,072 x 2,048 at M <= 1,024, where
the trtllm backend runs at 0.68-1.03 of torch's fp16 linear: consistent (no faster than the 16-bit rate), not
used. PR #13528 ran November 2025's FlashInfer and the v0.5.12 image a later one (its TRTLLM-Gen GEMM cubins
replaced in 2026-03, FlashInfer PR #2740), not timed. With it, held out: at one 8k request B300 +140 -> +95 ms
(TP 8) and +176 -> +107 ms (TP 4), B200 (outside the bench) +162 -> +115 and +200 -> +127 ms; the TP-scaling
part b falls from 36-38 to 12 ms, a stays 83 ms (B300) and 103 ms (B200). The 1k rows: B300 TTFT -10..-31 % ->
-10..-20 %.
(b) Prefill attention: trtllm_mla's forward_extend (a 2026 tree) runs a prompt without prefix multi-head through
FlashInfer's trtllm_ragged_attention_deepseek, q, k and v cast to fp8 beside an fp8 pool: per GPU a 1/TP share of
the heads, so part of b at most (gpuplan's 22 ms is the 16-bit rate).
(c) --enable-flashinfer-allreduce-fusion: apply_flashinfer_allreduce_fusion holds it to batches of at most
FUSE_ALLREDUCE_MAX_BATCH_SIZE (2,048) tokens, so an 8k prompt runs the plain all-reduce gpuplan prices (32 ms).
(d) Not the prefill graphs (note 10's revision: off under flashinfer_trtllm before 0.5.13, and past 2,048 tokens
anyway) nor the chunk (32,768 at TP 8, 8,192 at TP 4: one chunk for prompts of at most 8,192 tokens).
What runs on every rank whatever TP (MLA's down-projections and latent-cache write, the MoE's routing and its
per-token fp8 quantization at EP 1) gpuplan prices at milliseconds; a ~14 us a token cost on Blackwell alone was
not found in the code read (the TRTLLM-Gen block-scale MoE's routing and permutation at 59,000 expert rows a layer
are the unread candidate). The all-reduces are nearly TP-independent too (2 (n - 1) / n of 106 MB, 122 a step), but
gpuplan's 32 ms already takes ~700 GB/s of bus bandwidth on NVLink 5 (H200: ~350); even at H200's rate they would
add ~30 ms, a third of a. Left: a (~85-105 ms an 8k prompt on B200 and B300, after (a)) and the FlashInfer
release of the v0.5.12 image (no timing of it published).
(19) Looked at next (session 16, s16-sglttft); nothing built, no number moves. Read in the 0.5.7, 0.5.12 and 0.5.19
wheels from PyPI and InferenceX at 843c6254. (a) The first chunk: --stream-interval's default is 1 in all three
(server_args.py stream_interval), and an interval above 1 still streams token 1 (0.5.12
managers/scheduler_output_processor_mixin.py stream_output_generation, 0.5.19 scheduler_components/output_streamer.py:
len(output_ids) % stream_interval == 1), held back only by check_match_stop_str_prefix, which is False without stop
strings (schedule_batch.py; serving_completions.py passes request.stop, and the client sends none); the completions
stream sends an empty delta as a chunk (_generate_completion_stream: delta = text[offset:]). So no first chunk waits
(N - 1) x TPOT. 0.5.19's batch_notify_size (16) sets at most 16 events before yielding and the rest at the end of the
same batch (tokenizer_manager.py _handle_batch_output); its Rust server is off by default (environ.py
SGLANG_RUST_SERVER False); tokenizer_worker_num 1, enable_dynamic_batch_tokenizer False; num_continuous_decode_steps
is declared and read nowhere. (b) The client (utils/bench_serving/backend_request_func.py
async_request_openai_completions): the clock starts before session.post and stops at the first data line with choices,
empty text included; temperature 0, no stop; benchmark_lib.sh run_benchmark_serving applies a chat template only with
--use-chat-template or --dsv4, which no dsr1_fp8 script passes. (c) H200's prompt graphs: 0.5.12's
_handle_piecewise_cuda_graph disables none of H200's runs (DeepseekV3ForCausalLM is not in configs/model_config.py
piecewise_cuda_graph_disabled_model_archs; the MoE guard names flashinfer_trtllm and flashinfer_mxfp4 only), so 1k
prompts replay graphs up to 2,048 tokens with the attention and all-reduce split ops (layers/radix_attention.py
unified_attention_with_output, distributed/parallel_state.py inplace_all_reduce) launched eagerly between pieces. It
does not place the offset: the replay as 0.5.7 (eager prompts, issue #870's release) moves the ix3173 1k TTFT by 2-3
ms (83.0 -> 84.9 ms at 4 requests; its 1k step is near the launch floor either way), and #870's rest floor (148-204
ms) is about the 0.5.12 rows' implied rest (159-173 ms at 4-16): the per-request level is the same across the graph
switch. (d) Where the runs ran: InferenceX's B300 runner takes whole nodes (runners/launch_b300-nv.sh: --exclusive
--mem=0), its MI325X runner 256 CPUs (launch_mi325x-amds.sh --cpus-per-task=256), but the CoreWeave runners inside the
b200 and h200 labels (configs/runners.yaml) ask for GPUs only: launch_b200-cw.sh was added without --exclusive
(2026-04-24) and launch_h200-cw.sh dropped it on 2026-04-27 (InferenceX PR #1196, "allowed under the CW partition's
sharing policy"), before these rows' May runs; PR #3010's reruns of this H200 family put their canaries on h200-cw_01
and h200-cw_00. The tables do not say which runner made each baseline point, nor what CPUs the partition grants, so a
host that launches eager prompt steps and serves HTTP more slowly on the H200 and B200 rows (the families with the
offset; the B300 FP8 rows, on whole nodes, miss 1k prompts by only +11..+20 ms at 1-8 requests) stays a suspicion, not
an input. (e) MI325X: every job there starts with empty compiler caches (launch_mi325x-amds.sh exports
TRITON_CACHE_DIR and XDG_CACHE_HOME under /tmp per job, since InferenceX #1748, 2026-06-14, "keep MI325X compiler
caches local", in a writable container), and 0.5.19 runs every ROCm prompt eagerly (arg_groups/cuda_graph_hook.py:
tc_piecewise off for HIP, the default prefill backend there). A kernel first met in the timed run compiles on the
scheduler's thread (Triton specializes integer arguments equal to 1 or divisible by 16; the warm-up's batches are c
copies of one prompt), and ROCm/FlyDSL issue #105 (2026-02-08) reports SGLang's eager mode on ROCm re-JITting Triton
kernels with long TTFT at random. A stall paid while the first wave waits for its first tokens stalls no decode, so
the TPOT does not rule it out (the placement table tested a cost on every request): with the later requests as
simulated, the first wave would have waited 5.8, 4.6, 3.1, 2.0 and 1.6 s longer at 4-64 requests (the wave table's
excess), falling as the warm-up's 2c copies cover more batch shapes. No log gives the compile times or a P99 TTFT for
these runs; not modelled (a compile's time is a measurement, not a count). Left: the H200 1k offset (~80 ms), B200's
(~100 ms at 1k), MI325X's; one server log with --enable-request-time-stats-logging, or a P99 TTFT, would place each.
(20) Looked at next (session 20, s20-sgl); nothing built, no number moves (bench/results/sglang_ttft_s20.md). (a) The
runners. Issue #870's comment of 2026-03-05 ran its three 4-request jobs of v0.5.7 on three H200 runners (the runner
table below): the 1k/1k job on h200-nv_0 decoded at 22.73 ms a token, 2.2x gpuplan's 10.44 and 2.1x the 1k/8k job's
10.93 on h200-cw_1, so its 267.3 ms mean TTFT, and the 4-request rest floor in the #870 table below (204 ms), were
measured on a node that decoded at half speed; the two jobs whose decodes land (TPOT +4/+5 %) miss TTFT by +120 ms (1k
prompts) and +133 ms (8k prompts). Under 0.5.7 the H200 offset is there at 8k too; the 0.5.12 rows' +75 ms at 1k
against +32 ms at 8k compares two runs whose runners the tables do not print (configs/runners.yaml at 843c6254: h200
is h200-cw_00/01, h200-nb_0/1 and h200-dgxc-slurm_0..13, b200 is b200-cw_00/01, b200-nb_0/1 and b200-dgxc_00..09; the
same issue's ITL table of 2026-03-06 sets aside its 16-request point, "ran on a thermally-throttled non-DGXC node").
Note (19d)'s host suspicion now has a measured 2x between two runners of one label on the same software; a runner is
still not an input. (b) FlashInfer's fused all-reduce and RMSNorm, on every prompt step of up to 2,048 tokens
(layers/communicator.py apply_flashinfer_allreduce_fusion): 0.5.12's server_args.py turns it on by itself for
DeepseekV3ForCausalLM on SM 9.0 and 10.x at TP above 1 on one node ("Auto-enabling FlashInfer AllReduce Fusion on
SM90/SM10X"), so the H200 runs use it though dsr1_fp8_h200.sh does not pass it, and is_sm100_supported takes any
capability 10.x (utils/common.py), so B300 runs it as B200 does. flashinfer_comm_fusion.py passes use_oneshot None;
the FlashInfer releases read take one-shot up to 128 tokens (trtllm_ar.py: use_oneshot = token_num <= 128; later ones
a size rule, not read), so a 1k prompt runs the two-shot Lamport kernel and an 8k one the plain all-reduce, where the
0.5.12 H200 rows miss and do not. Not the offset: B300 runs the same kernel on the same 1k prompts and misses by
+11..+17 ms at 1-8 requests; vLLM PR #37756 (SM 10.3, one of its world-size tables) times 8 MiB (512 tokens of 8,192)
at 0.043 ms compiled and unfused against 0.070 two-shot and 0.115 one-shot, and at 64 MiB the one-shot at 0.197
against 0.693; vLLM PR #22086 (H100, TP 2) the two-shot at 0.079-0.085 ms for 32-64 tokens against 0.010-0.012. A few
hundredths of a ms a call more, over 122 calls a step, is 4-9 ms, not 80. No H200 TP 8 timing at 1k tokens was read
(TensorRT-LLM PR #12887 prints an H200 x8 table of these kernels; only its header was reachable). (c) DeepGEMM's all-M
warm-up runs on the node's first rank only (layers/deep_gemm_wrapper/compile_utils.py update_deep_gemm_config:
_DO_COMPILE_ALL = _IS_FIRST_RANK_ON_NODE), so the other seven ranks load each kernel variant from the shared cache
directory (DG_JIT_CACHE_DIR) when a prompt's M first selects it: note (6)'s one-time kind (it shrinks as c grows, the
offsets do not), and not on B200 or B300 (SGL_ENABLE_JIT_DEEPGEMM=false). (d) 0.5.19 (MI325X): its MinFreeSlotsDelayer
(managers/min_free_slots_delayer.py), which holds fresh prefills until enough running slots are free, is off unless
--min-free-slots-delay is set or the run is DFlash (resolve_min_free_slots returns None); its transformers-5 tokenizer
fix-ups (utils/hf_transformers/tokenizer.py _fix_v5_tokenizer_components) put tokenizer.json's own ByteLevel
pre-tokenizer and decoder back, the Rust tokenizer's speed. (e) The client's payload (backend_request_func.py
async_request_openai_completions at 843c6254): temperature 0, best_of 1, logprobs None (benchmark_serving.py's
default), a stream with usage: no prompt logprobs. (f) InferenceX's own profiles of these recipes (issue #819:
dsr1-fp8-b200-sglang TP 8 at 4 requests, v0.5.6, b200-dgxc-slurm_8; #1004 and #863: dsr1-fp8-h200-sglang at 16 and 64
requests and dsr1-fp8-mi325x-sglang at 64, v0.5.9; traces in SemiAnalysisAI/InferenceX-trace-storage) would time
prompt steps on the runners themselves, but the issues summarise decode steps and the trace files were not readable
here. Left as before; a runner name on each published point, or one of those traces with a prompt step, would split
host from software."""
FAMILIES = (("ix3173-", "H200 FP8 TP 8, SGLang 0.5.12"), ("ix3363-", "B200 FP8 TP 8, SGLang 0.5.12"),
            ("ix3175-", "B300 FP8 TP 8/4 EP 1, SGLang 0.5.12 (the B200 recipe)"),
            ("ix3183-r1fp4-b300-tp8", "B300 NVFP4 TP 8 EP 8, SGLang 0.5.12"),
            ("ix3183-r1fp4-b300-tp4", "B300 NVFP4 TP 4 EP 4, SGLang 0.5.12"),
            ("ix3318-", "MI325X FP8 TP 8, SGLang 0.5.19 (ROCm share fitted on c4/c16/c64)"))


def wave_line(row: dict, got: dict) -> str:
    """One row of the wave table: the published mean TTFT over n requests split as if the n - c requests after
    the first wave of c took the simulated time; what is left is the first wave's mean, ``(mean x n - rest x
    (n - c)) / c``; and the other way round, the rest's mean if the first wave took its simulated time,
    ``(mean x n - first x c) / (n - c)``."""
    c, n = int(row["max_concurrency"]), got["requests"]
    mean, first, rest = float(row["median_ttft_ms"]), got["first_wave_ttft_ms"], got["rest_ttft_ms"]
    implied = (mean * n - rest * (n - c)) / c
    return (f"| {row['id']} | {mean:,.1f} ms | {first:,.1f} | {rest:,.1f} | {implied:,.0f} | "
            f"{implied - first:+,.0f} | {(mean * n - first * c) / (n - c):,.0f} |")


def rest_floor(mean: float, p99: float, c: int, n: int) -> float:
    """The mean TTFT of the n - c requests after a closed loop's first wave of c, from below: with n = 10c at most
    a tenth of the first wave lies above the P99, so the first wave's mean is about the P99 at most and the rest's
    mean at least ``(n x mean - c x P99) / (n - c)``."""
    return (n * mean - c * p99) / (n - c)


def band(c: int) -> str:
    return next(label for top, label in ((2, "1-2"), (8, "4-8"), (32, "16-32")) if c <= top) if c <= 32 else "64"


# the factors the signed TTFT error is tabulated by: (name, the row's value)
FACTORS = (("card, weights, EP", lambda r: f"{r['gpu'].upper()} {r.get('quant') or 'fp8'} EP {r.get('ep') or 1}"),
           ("prompt tokens", lambda r: f"{int(r['random_input']) // 1024}k"),
           ("concurrency", lambda r: band(int(r["max_concurrency"]))),
           ("--scheduler-recv-interval", lambda r: r.get("scheduler_recv_interval") or "1 (unset)"),
           ("SGLang", lambda r: r["sglang_version"]))


def factor_lines(results: list[tuple[dict, dict]]) -> list[str]:
    """The signed TTFT error and the offset (published less simulated mean, ms) of every row, by factor."""
    lines = ["", "| factor | value | rows | median signed TTFT error | offset, median (min..max) |",
             "|---|---|---|---|---|"]
    for name, key in FACTORS:
        groups: dict[str, list[tuple[float, float]]] = {}
        for row, got in results:
            real, pred = float(row["median_ttft_ms"]), got["median_ttft_ms"]
            groups.setdefault(key(row), []).append((bench.pct(pred, real), real - pred))
        for value, cells in sorted(groups.items()):
            off = [o for _, o in cells]
            lines.append(f"| {name} | {value} | {len(cells)} | {statistics.median(e for e, _ in cells):+.0f}% | "
                         f"{statistics.median(off):+,.0f} ms ({min(off):+,.0f}..{max(off):+,.0f}) |")
    return lines


# InferenceX issue #870 (2026-03-05): SGLang v0.5.7, DeepSeek-R1-0528 FP8 on 8 H200, TP 8, EP 1, 1k/1k, the same
# client (10c requests after 2c warm-ups); concurrency -> (mean TTFT, P99 TTFT) in ms: 4 from its three-job table
# (the 1k/1k column), 8-64 from its concurrency sweep. Not rows of the bench (its TTFT is not scored).
IX870_TTFT = {4: (267.3, 835.0), 8: (330.6, 1975.4), 16: (356.0, 2149.4), 32: (426.5, 2644.1), 64: (423.1, 2741.1)}
# InferenceX pull request #3363's baseline table (dsr1-fp8-b200-sglang published 2026-05-22, SGLang v0.5.12): its
# 8k/1k points, not rows of the bench: (TP, concurrency, mean TTFT ms, mean TPOT ms). TP 4 as dsr1_fp8_b200.sh
# launches it: --chunked-prefill-size 8192, --mem-fraction-static 0.95, --scheduler-recv-interval 10.
B200_8K = ((8, 1, 314.28, 7.39), (4, 1, 410.18, 7.96), (4, 2, 483.64, 9.13))
def outside_lines(rows: list[dict], max_requests: int) -> list[str]:
    """Three outside readings of the offset (not scored): issue #870's rest floor beside the simulated rest of the
    0.5.12 H200 1k row at the same concurrency, PR #3363's B200 8k points replayed from the 1k row's setup, and
    PR #3175's B300 FP8 points (the B200 recipe on B300s) replayed from the same."""
    by_id = {r["id"]: r for r in rows}
    lines = ["", "| issue #870 (v0.5.7, H200 1k), c | mean TTFT | P99 TTFT | rest, at least | 0.5.12 row's rest "
             "simulated |", "|---|---|---|---|---|"]
    for c, (mean, p99) in IX870_TTFT.items():
        got = bench.run(by_id[f"ix3173-r1-h200-1k-c{c}"], max_requests)
        lines.append(f"| {c} | {mean:,.1f} ms | {p99:,.1f} ms | {rest_floor(mean, p99, c, 10 * c):,.0f} ms | "
                     f"{got['rest_ttft_ms']:,.0f} ms |")
    lines += ["", "| PR #3363 B200 FP8 8k/1k (v0.5.12) | TTFT published | gpuplan | offset | TPOT published | "
              "gpuplan |", "|---|---|---|---|---|---|"]
    base = by_id["ix3363-r1-b200-1k-c1"]
    for tp, c, ttft, tpot in B200_8K:
        row = dict(base, tp=str(tp), random_input="8192", num_prompts=str(10 * c), max_concurrency=str(c),
                   median_ttft_ms=str(ttft), median_tpot_ms=str(tpot), scheduler_recv_interval="10",
                   **({"chunked_prefill_size": "8192", "mem_fraction_static": "0.95"} if tp == 4 else {}))
        got = bench.run(row, max_requests)
        lines.append(f"| TP {tp}, {c} request{'s' if c > 1 else ''} | {ttft:,.1f} ms | {got['median_ttft_ms']:,.1f} | "
                     f"{ttft - got['median_ttft_ms']:+,.0f} ms | {tpot:.2f} ms | {got['median_tpot_ms']:.2f} |")
    return lines + b300_fp8_lines(rows, max_requests)


# InferenceX issue #870's three-job table (comment of 2026-03-05: SGLang v0.5.7, DeepSeek-R1-0528 FP8, TP 8, EP 1, 4
# requests, the same client; "All 3 benchmark jobs completed successfully across 3 different H200 runners"):
# (job, runner, ISL, OSL, mean TTFT ms, mean TPOT ms). The 1k/1k job is IX870_TTFT's 4-request point.
IX870_RUNNERS = (("1k/1k", "h200-nv_0", 1024, 1024, 267.3, 22.73), ("1k/8k", "h200-cw_1", 1024, 8192, 204.1, 10.93),
                 ("8k/1k", "h200-dgxc-slurm_11", 8192, 1024, 474.3, 12.05))


def runner_lines(rows: list[dict], max_requests: int) -> list[str]:
    """Issue #870's three jobs of one release at one concurrency, each on another H200 runner (not scored; session
    20): replayed from the 0.5.12 4-request row's setup at v0.5.7 with each job's prompt and output lengths."""
    base = next(r for r in rows if r["id"] == "ix3173-r1-h200-1k-c4")
    lines = ["", "| issue #870 (v0.5.7, H200, 4 requests) | runner | TTFT published | gpuplan | offset | TPOT "
             "published | gpuplan |", "|---|---|---|---|---|---|---|"]
    for job, runner, isl, osl, ttft, tpot in IX870_RUNNERS:
        got = bench.run(dict(base, sglang_version="0.5.7", random_input=str(isl), random_output=str(osl)),
                        max_requests)
        lines.append(f"| {job} | {runner} | {ttft:,.1f} ms | {got['median_ttft_ms']:,.1f} | "
                     f"{ttft - got['median_ttft_ms']:+,.0f} ms | {tpot:.2f} ms | {got['median_tpot_ms']:.2f} |")
    return lines


def b300_fp8_lines(rows: list[dict], max_requests: int) -> list[str]:
    """PR #3175's B300 FP8 rows (ix3175-, the B200 recipe on B300s) beside the published B200 mean TTFT at the same
    point where PR #3363 prints one (its 1k rows, :data:`B200_8K`): the same launch line on two cards."""
    b200 = {(8, 1024, int(r["max_concurrency"])): float(r["median_ttft_ms"]) for r in rows
            if r["id"].startswith("ix3363-")} | {(tp, 8192, c): t for tp, c, t, _ in B200_8K}
    lines = ["", "| PR #3175 B300 FP8 TP 8/4 EP 1 (v0.5.12, the B200 recipe) | TTFT published | gpuplan | offset | "
             "B200's published TTFT | TPOT published | gpuplan |", "|---|---|---|---|---|---|---|"]
    for row in (r for r in rows if r["id"].startswith("ix3175-")):
        tp, isl, c = int(row["tp"]), int(row["random_input"]), int(row["max_concurrency"])
        ttft, tpot = float(row["median_ttft_ms"]), float(row["median_tpot_ms"])
        got = bench.run(row, max_requests)
        other = b200.get((tp, isl, c))
        lines.append(f"| TP {tp}, {isl // 1024}k, {c} request{'s' if c > 1 else ''} | {ttft:,.1f} ms | "
                     f"{got['median_ttft_ms']:,.1f} | {ttft - got['median_ttft_ms']:+,.0f} ms | "
                     f"{'' if other is None else f'{other:,.1f} ms'} | {tpot:.2f} ms | {got['median_tpot_ms']:.2f} |")
    return lines


@dataclasses.dataclass(frozen=True, kw_only=True)
class Stalled(StepModel):
    """A step model whose every step holding a prompt takes ``stall_s`` longer (the placement diagnostic)."""

    stall_s: float = 0.0

    def time(self, prefill_tokens: float, *args, **kwargs) -> float:
        return super().time(prefill_tokens, *args, **kwargs) + (self.stall_s if prefill_tokens > 0 else 0.0)


PLACED_S = 0.080  # the H200 1k rows' offset at 4-16 requests (76-80 ms): a diagnostic's size, fitted on nothing
# SGLang pull request #12160 (2025-10-26, DeepSeek-V3): the scheduler's log gives "forward cost" 82.64 ms for a
# prefill of 1 new token without a CUDA graph and 23.10 ms with one: the eager prefill's host-bound floor then
EAGER_FLOOR_S = 0.08264


def placement_lines(rows: list[dict], max_requests: int) -> list[str]:
    """The same extra time put in two places, to read where the TPOT lets it sit: on each request's own path
    (``request_s``: the API server, outside the steps) or inside each step that holds a prompt (which stalls every
    running request's decode); and a floor under each step that holds a prompt (``prompt_launch_s``: the step takes
    the longer of its work and the floor), at the eager prefill's measured floor."""
    ways = (("as modelled", None),
            (f"+{PLACED_S * 1e3:.0f} ms on each request's path", lambda m: dataclasses.replace(
                m, request_s=m.request_s + PLACED_S)),
            (f"+{PLACED_S * 1e3:.0f} ms in each step holding a prompt", lambda m: Stalled(
                **{f.name: getattr(m, f.name) for f in dataclasses.fields(m)}, stall_s=PLACED_S)),
            (f"each step holding a prompt at least {EAGER_FLOOR_S * 1e3:.1f} ms (PR #12160's eager floor)",
             lambda m: dataclasses.replace(m, prompt_launch_s=EAGER_FLOOR_S)))
    lines = ["", "| placement (diagnostic, not adopted) | held-out TTFT | held-out TPOT | H200 TPOT signed "
             "(median, range) |", "|---|---|---|---|"]
    for label, reshape in ways:
        ttft, tpot, h200 = [], [], []
        for r in (r for r in rows if r["id"].startswith(tuple(f for f, _ in FAMILIES)) and r["role"] != "rocm-fit"):
            got = bench.run(r, max_requests, reshape=reshape)
            ttft.append(abs(bench.pct(got["median_ttft_ms"], float(r["median_ttft_ms"]))))
            tpot.append(bench.pct(got["median_tpot_ms"], float(r["median_tpot_ms"])))
            if r["gpu"] == "h200":
                h200.append(tpot[-1])
        assert h200, "no H200 rows"
        lines.append(f"| {label} | {statistics.median(ttft):.1f}% | {statistics.median(map(abs, tpot)):.1f}% | "
                     f"{statistics.median(h200):+.0f}% ({min(h200):+.0f}..{max(h200):+.0f}) |")
    return lines


# the families the rate diagnostic reads (row id prefix, label)
RATE_FAMILIES = (("ix3173-r1-h200-1k", "H200 1k"), ("ix3173-r1-h200-8k", "H200 8k"), ("ix3363-", "B200 1k"),
                 ("ix3318-", "MI325X 8k"))


# note (14c)'s diagnostic sizes: read off the MI325X rows, not a source (so not adopted)
AMD_PROMPT_K, AMD_WAIT_S = 0.7, 0.6


def amd_split_lines(rows: list[dict], max_requests: int) -> list[str]:
    """Note (14c)'s diagnostic (not adopted: its sizes are read off these rows): MI325X's prompt work scaled
    (``Calibration.compute``: the prompt tokens' share of each step) and a wait added on each request's own path
    (``request_s``), beside each other or on the one frontend process (``frontend_s``: serial, serving/simulate.py
    ``_Frontend``). Signed TTFT and TPOT errors at 4/8/16/32/64 requests."""
    def way(k: float, wait_s: float, serial: bool):
        return lambda m: dataclasses.replace(
            m, calibration=dataclasses.replace(m.calibration, compute=m.calibration.compute * k),
            request_s=m.request_s + wait_s, frontend_s=m.frontend_s + (wait_s if serial else 0.0))
    ways = (("as modelled", None), (f"+{AMD_WAIT_S} s on each request's path", way(1.0, AMD_WAIT_S, False)),
            (f"prompt work x {AMD_PROMPT_K}, +{AMD_WAIT_S} s on each request's path",
             way(AMD_PROMPT_K, AMD_WAIT_S, False)),
            (f"prompt work x {AMD_PROMPT_K}, +{AMD_WAIT_S} s on the frontend process (serial)",
             way(AMD_PROMPT_K, AMD_WAIT_S, True)))
    lines = ["", "| MI325X split (diagnostic, not adopted) | TTFT error at 4/8/16/32/64 requests | TPOT error |",
             "|---|---|---|"]
    amd = [r for r in rows if r["id"].startswith("ix3318-")]
    assert len(amd) == 5, "the MI325X rows"
    for label, reshape in ways:
        got = [(r, bench.run(r, max_requests, reshape=reshape)) for r in amd]
        ttft = "/".join(f"{bench.pct(p['median_ttft_ms'], float(r['median_ttft_ms'])):+.0f}" for r, p in got)
        tpot = "/".join(f"{bench.pct(p['median_tpot_ms'], float(r['median_tpot_ms'])):+.0f}" for r, p in got)
        lines.append(f"| {label} | {ttft} % | {tpot} % |")
    return lines



def rate_lines(rows: list[dict], max_requests: int) -> list[str]:
    """Two prompt-rate diagnostics (session 9, not adopted): the FP8 rows' GEMMs at the FP8 rate rather than the
    16-bit rate they are timed at now (their ``quant`` is the checkpoint's, so the matmuls take the 16-bit rate over
    1-byte weights), and MI325X's prompt work slowed by the ROCm share fitted on its decode
    (overheads.ROCM_DECODE_SLOWDOWN), which prefill does not take (engines/rocm.py). Median signed TTFT error per
    family (its range) and the held-out median |TTFT error|."""
    ways = (("as modelled", None, None),
            ("FP8 rows' GEMMs at the FP8 rate", lambda r: dict(r, quant=r["quant"] or "fp8"), None),
            (f"MI325X prompt work x {oh.ROCM_DECODE_SLOWDOWN}", None,
             lambda m: dataclasses.replace(m, calibration=Calibration(compute=oh.ROCM_DECODE_SLOWDOWN))))
    lines = ["", "| prompt-rate diagnostic (not adopted) | " + " | ".join(label for _, label in RATE_FAMILIES)
             + " | held-out median abs TTFT error, these rows |", "|---|" + "---|" * (len(RATE_FAMILIES) + 1)]
    for label, edit, reshape in ways:
        cells, held = [], []
        for prefix, _ in RATE_FAMILIES:
            errs = []
            for r in (r for r in rows if r["id"].startswith(prefix)):
                amd = r["gpu"].startswith("mi")
                got = bench.run(edit(r) if edit else r, max_requests, reshape=reshape if amd else None)
                errs.append(bench.pct(got["median_ttft_ms"], float(r["median_ttft_ms"])))
                if r["role"] != "rocm-fit":
                    held.append(abs(errs[-1]))
            assert errs, prefix
            cells.append(f"{statistics.median(errs):+.0f}% ({min(errs):+.0f}..{max(errs):+.0f})")
        lines.append(f"| {label} | " + " | ".join(cells) + f" | {statistics.median(held):.1f}% |")
    return lines


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=str(HERE.parent / "results" / "moe_layout.md"))
    ap.add_argument("--max-requests", type=int, default=640)
    args = ap.parse_args()
    rows = bench.load_rows()
    lines = ["# DeepSeek-R1 served by SGLang on 8 GPUs: InferenceX's runs against gpuplan\n",
             "| row | TTFT published | gpuplan | error | TPOT published | gpuplan | error |",
             "|---|---|---|---|---|---|---|"]
    summary = ["", "| family | rows | median TTFT error | median TPOT error |", "|---|---|---|---|"]
    every: dict[str, list[float]] = {"ttft": [], "tpot": []}
    held: dict[str, list[float]] = {"ttft": [], "tpot": []}  # rows no constant is fitted on (not rocm-fit)
    waves = ["", "| row | TTFT published (mean) | simulated first wave | simulated rest | first wave the mean "
             "implies | its excess | rest the mean implies |", "|---|---|---|---|---|---|---|"]
    results: list[tuple[dict, dict]] = []
    for prefix, label in FAMILIES:
        errs: dict[str, list[float]] = {"ttft": [], "tpot": []}
        for r in (r for r in rows if r["id"].startswith(prefix)):
            p = bench.run(r, args.max_requests)
            waves.append(wave_line(r, p))
            results.append((r, p))
            cells = []
            for key, name in (("median_ttft_ms", "ttft"), ("median_tpot_ms", "tpot")):
                real, pred = float(r[key]), p[key]
                errs[name].append(bench.pct(pred, real))
                if r["role"] != "rocm-fit":
                    held[name].append(abs(bench.pct(pred, real)))
                cells.append(f"{real:,.1f} ms | {pred:,.1f} | {bench.pct(pred, real):+.0f}%")
            lines.append(f"| {r['id']} | " + " | ".join(cells) + " |")
        assert errs["tpot"], prefix
        for name in every:
            every[name] += errs[name]
        summary.append(f"| {label} | {len(errs['tpot'])} | {statistics.median(errs['ttft']):+.0f}% | "
                       f"{statistics.median(errs['tpot']):+.0f}% |")
    summary.append(f"| every row, absolute | {len(every['tpot'])} | "
                   f"{statistics.median(abs(e) for e in every['ttft']):.1f}% | "
                   f"{statistics.median(abs(e) for e in every['tpot']):.1f}% |")
    summary.append(f"| held out (every row but the 3 ROCm fit rows), absolute; goal 20% and 10% | "
                   f"{len(held['tpot'])} | {statistics.median(held['ttft']):.1f}% | "
                   f"{statistics.median(held['tpot']):.1f}% |")
    text = "\n".join(lines + summary) + "\n\n" + NOTES + "\n" + "\n".join(waves) + "\n\n" + WAVE_NOTES + "\n"
    extra = factor_lines(results) + outside_lines(rows, args.max_requests) + runner_lines(rows, args.max_requests) \
        + placement_lines(rows, args.max_requests) + rate_lines(rows, args.max_requests) \
        + amd_split_lines(rows, args.max_requests)
    text += "\n" + FACTOR_NOTES + "\n" + "\n".join(extra) + "\n"
    Path(args.out).write_text(text)
    print(text)


if __name__ == "__main__":
    main()
