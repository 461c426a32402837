"""TensorRT-LLM's offline throughput at maximum load: what ``trtllm-bench throughput`` measures (every request
queued at once, all of ``prompt_tokens`` in and ``output_tokens`` out), as NVIDIA's performance overview
(``docs/source/performance/perf-overview.md``) publishes it.

The run (:func:`offline_throughput`):

1. ``max_batch_size`` and ``max_num_tokens`` as trtllm-bench picks them (:func:`gpuplan.engines.trtllm.
   bench_settings`), the KV pool from 0.95 of the free memory (:func:`gpuplan.engines.trtllm.startup_memory`),
   FP8 for FP8 and NVFP4 checkpoints (:func:`gpuplan.engines.trtllm.bench_scenario`);
2. in-flight batching under the default ``GUARANTEED_NO_EVICT`` capacity policy: a request is admitted only when
   blocks for its whole ``prompt + output`` are free, so ``concurrency = min(max_batch_size, whole requests the
   pool holds)``; under ``MAX_UTILIZATION`` (``capacity_scheduler_policy: max_utilization``, the default of MLPerf's
   harness: ``closed/NVIDIA/code/common/arguments.py`` ``batch_scheduler_policy`` "max_util") a request is admitted
   while the blocks it holds now fit, so in steady state the pool holds requests at their mean length, ``prompt +
   output/2`` (:func:`held_tokens`);
3. a cycle of ``output_tokens`` decode iterations of ``concurrency`` sequences at the mean context
   (``prompt + output/2``), CUDA graphs replayed (:class:`gpuplan.speed.inference.StepTimer`), plus the prefill
   of ``concurrency`` new prompts in iterations of ``max_num_tokens`` tokens (whole prompts: chunked prefill is
   off in trtllm-bench); output tokens/s = ``concurrency x output_tokens / cycle``;
4. with ``requests`` in the dataset (NVIDIA's runs: 1,000 to 30,000), the run is whole waves: requests of one
   length admitted together finish together, so ``N`` requests take ``floor(N / concurrency)`` full cycles and one
   cycle of the rest at its own (smaller) batch; throughput = ``N x output_tokens`` over that time.

Precision as the hardware runs it: ModelOpt FP8 checkpoints on Hopper are W8A8 (the linears' GEMMs at the FP8
dense peak), NVFP4 on Blackwell W4A4 (at the FP4 peak), attention and the output head out of FP4 (FP8/16-bit),
the KV cache FP8. TensorRT-LLM's quantized GEMMs reach a share of those peaks that the bf16-calibrated GEMM model
does not know; :func:`gemm_share` scales the peaks by the rows of each GEMM, and
:data:`~gpuplan.overheads.TRTLLM_CONTEXT_ATTENTION_SPEEDUP` sets its context attention (FP8 context FMHA)
apart from gpuplan's FlashAttention figure (both fitted on the H100 and B200 rows of the overview, ``bench/trtllm.py``).

Not modelled: CUDA-graph padding to the captured batch sizes, mixed context + generation iterations run outside the
graphs (chunked prefill, on in MLPerf's v5.1 runs, shares iterations between prompts and decoding sequences: timed
that way, the MLPerf rows move by 1-2 points, so prefill stays its own phase), pipeline parallelism as trtllm-bench
pipelines it (the step timer runs stages one after another), expert parallelism and attention data parallelism. MoE
models run through the same path, their routed experts as one grouped GEMM (``StepTimer.grouped_experts``), and
each MoE layer adds what the fused MoE does beside its GEMMs (:func:`gpuplan.speed.experts.fused_moe_s`, in the
step timer's parts, which the serving step model samples too: fitted on the B200 rows of
Llama 4 Scout and Qwen3-30B-A3B, held out on GB200 and release 0.17's Mixtral rows; bench/results/trtllm.md).
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

from .. import overheads as oh
from ..engines import speculative, trtllm
from ..hardware import GpuSpec, Network
from ..model.spec import ModelSpec
from ..scenario import Scenario
from .inference import StepTimer, step_timer

PEAK_KEYS = {"fp8": "fp8_tensor", "fp4": "fp4_tensor"}


@dataclass(frozen=True, kw_only=True)
class OfflineRun:
    """One ``trtllm-bench throughput`` run in steady state (seconds, tokens)."""

    max_batch_size: int
    max_num_tokens: int
    kv_requests: int  # requests the KV pool holds at the tokens each holds (held_tokens)
    concurrency: int
    decode_step_s: float
    prefill_s: float  # the prefill of one cycle's ``concurrency`` prompts
    cycle_s: float
    output_tokens_per_s: float
    requests_per_s: float
    waves: float  # cycles the dataset takes (0 when its size is not given)


def gemm_share(gpu: GpuSpec, dtype: str, rows: float) -> float:
    """Share of ``gpu``'s ``dtype`` peak TensorRT-LLM's quantized GEMMs of ``rows`` tokens reach, against the
    bf16-calibrated GEMM model: ``share / (1 + half_rows / rows)`` (:data:`~gpuplan.overheads.
    TRTLLM_GEMM_PEAK_SHARE`, :data:`~gpuplan.overheads.TRTLLM_GEMM_HALF_ROWS`): the faster the math, the larger
    the share of a tile's time its fixed costs (quantizing the activations, scales, prologue, epilogue) take, so
    low-precision GEMMs need more rows than bf16 ones to approach their peak."""
    share = oh.TRTLLM_GEMM_PEAK_SHARE.get(gpu.generation, {}).get(dtype, 1.0)
    return share / (1 + oh.TRTLLM_GEMM_HALF_ROWS.get(dtype, 0.0) / max(rows, 1.0))


def trtllm_gpu(gpu: GpuSpec, rows: float) -> GpuSpec:
    """``gpu`` with its FP8 and FP4 peaks scaled to what TensorRT-LLM's quantized GEMMs of ``rows`` tokens reach
    of them (:func:`gemm_share`)."""
    peaks = dict(gpu.dense_tflops)
    for dtype, key in PEAK_KEYS.items():
        if peaks.get(key):
            peaks[key] = peaks[key] * gemm_share(gpu, dtype, rows)
    return dataclasses.replace(gpu, dense_tflops=peaks)


def held_tokens(s: Scenario) -> int:
    """Tokens of KV a request in flight holds for admission: its whole ``prompt + output`` under
    ``GUARANTEED_NO_EVICT`` (blocks reserved up front), its mean ``prompt + output/2`` under ``MAX_UTILIZATION``
    (blocks taken as the sequence grows; requests admitted at every stage of their output, so the pool holds them
    at half their output on average)."""
    osl = max(s.output_tokens, 1)
    if s.capacity_scheduler_policy == "max_utilization":
        return s.prompt_tokens + math.ceil(osl / 2)
    return s.prompt_tokens + osl


def decode_step_s(timer: StepTimer, batch: int, context: float) -> float:
    """One decode iteration under TensorRT-LLM: the step timer's GPU work (weights, the FP8 KV cache read, kernel
    latencies, TP all-reduces, the fused MoE's dispatch: :func:`gpuplan.speed.experts.fused_moe_s`), its engine
    loop left out (TensorRT-LLM's overlap scheduler hides the executor's host work behind the GPU's step; a fitted
    per-request host cost came out at zero on the dense rows). With speculative decoding, the verify step of ``k +
    1`` tokens a sequence and the draft's passes (:meth:`~gpuplan.speed.inference.StepTimer.step_parts`)."""
    return sum(v for k, v in timer.step_parts(batch, context).items() if k != "host")


def offline_throughput(s: Scenario, m: ModelSpec, gpu: GpuSpec, network: Network | None = None, *,
                       requests: int | None = None) -> OfflineRun:
    """Output tokens/s of ``trtllm-bench throughput`` for ``requests`` requests (unbounded steady state when
    None) of ``s.prompt_tokens`` in and ``s.output_tokens`` out on ``s.tp x s.pp`` GPUs (module docstring)."""
    isl, osl = s.prompt_tokens, max(s.output_tokens, 1)
    s = trtllm.bench_scenario(s)
    batch, tokens = trtllm.bench_settings(s, m, gpu)
    s = s.model_copy(update={"max_num_seqs": batch, "max_num_batched_tokens": tokens})
    sm = trtllm.startup_memory(s, m, gpu, trtllm.activation(s, m))
    kv_requests = sm.max_concurrency(held_tokens(s))
    conc = max(min(kv_requests, batch), 1)
    per_iteration = max(tokens // isl, 1)  # whole prompts per context iteration
    draft = speculative.draft_of(s, m)
    queries, per_step = (draft.queries, draft.acceptance) if draft else (1, 1.0)

    def timer(rows: float) -> StepTimer:
        return step_timer(s, m, trtllm_gpu(gpu, rows), network)  # grouped experts: Trtllm.timing

    def cycle(n: int) -> tuple[float, float, float]:
        """(decode step, prefill, cycle) seconds of a wave of ``n`` requests; a decode step yields ``per_step``
        tokens a request (the acceptance length, with speculative decoding)."""
        decode = decode_step_s(timer(n * queries), n, isl + osl / 2)
        full, rest = divmod(n, per_iteration)
        rows = per_iteration * isl
        prefill = full * timer(rows).prefill_s(rows, seqs=per_iteration) if full else 0.0
        prefill += timer(rest * isl).prefill_s(rest * isl, seqs=rest) if rest else 0.0
        return decode, prefill, osl / per_step * decode + prefill

    decode, prefill, steady = cycle(conc)
    rate, waves = conc / steady, 0.0
    if requests:
        full, rest = divmod(requests, conc)
        rate = requests / (full * steady + (cycle(rest)[2] if rest else 0.0))
        waves = full + (rest > 0)
    return OfflineRun(max_batch_size=batch, max_num_tokens=tokens, kv_requests=kv_requests, concurrency=conc,
                      decode_step_s=decode, prefill_s=prefill, cycle_s=steady, output_tokens_per_s=rate * osl,
                      requests_per_s=rate, waves=waves)


def bench_basis(s: Scenario, m: ModelSpec, run: OfflineRun) -> str:
    """What :func:`offline_throughput`'s figure answers, in words: ``trtllm-bench throughput`` under its own settings
    (:func:`gpuplan.engines.trtllm.bench_scenario`, :func:`gpuplan.engines.trtllm.bench_settings`), each beside the
    plan's own (:func:`gpuplan.engines.trtllm.startup_memory`'s fraction, :func:`gpuplan.engines.trtllm.limits`) where
    they differ, in steady state: the plan's simulated batch runs under the plan's settings, this run under the
    benchmark's, so the two figures answer two questions."""
    bench = trtllm.bench_scenario(s)
    batch, tokens, _ = trtllm.limits(s, m)
    plan_kv = "the weights' dtype" if s.kv_cache_dtype == "auto" else s.kv_cache_dtype
    bench_kv = "the weights' dtype" if bench.kv_cache_dtype == "auto" else bench.kv_cache_dtype
    pairs = ((f"KV pool {bench.free_gpu_memory_fraction:g} of the free memory",
              f"{s.free_gpu_memory_fraction or trtllm.FREE_GPU_MEMORY_FRACTION:g}",
              f"{bench.free_gpu_memory_fraction:g}"),
             (f"max_batch_size {run.max_batch_size:,}", f"{batch:,}", f"{run.max_batch_size:,}"),
             (f"max_num_tokens {run.max_num_tokens:,}", f"{tokens:,}", f"{run.max_num_tokens:,}"),
             (f"KV cache {bench_kv}", plan_kv, bench_kv))
    said = [words if ours == theirs else f"{words} against the plan's {ours}" for words, ours, theirs in pairs]
    differ = any(ours != theirs for _, ours, theirs in pairs)
    whose = "its own settings, not the plan's" if differ else "the plan's settings"
    return (f"trtllm-bench throughput under {whose} ("
            + ", ".join(said) + f"), every request queued at once, in steady state at {run.concurrency:,} requests "
            "in flight")
