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
   (``prompt + output/2``), CUDA graphs replayed, plus the prefill of ``concurrency`` new prompts in iterations of
   ``max_num_tokens`` tokens (whole prompts: chunked prefill is off in trtllm-bench); output tokens/s =
   ``concurrency x output_tokens / cycle``. Each iteration is priced by the step model the scheduler simulation runs
   (:func:`gpuplan.serving.steptime.step_model` under trtllm-bench's settings: the step timer's GPU work sampled on
   its grid, TensorRT-LLM's GEMM share by rows, the fused MoE's dispatch, the eager prompt steps' launches, and the
   host loop where it is longer than the GPU's step), so that the plan's two offline figures differ only in how the
   batch is composed: here waves of whole prompts then lockstep decodes, there the simulated scheduler's mixed
   iterations (a prompt joining the decodes of the sequences in flight);
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
that way, the MLPerf rows move by 1-2 points, so prefill stays its own phase; the simulation's mixed iterations read
an MoE's experts once for the prompt and the decodes, which puts it 1-8 % above this model on every held-out MoE
group of NVIDIA's tables, this model being the closer: bench/results/trtllm.md), pipeline parallelism as trtllm-bench
pipelines it (the step timer runs stages one after another), expert parallelism and attention data parallelism. MoE
models run through the same path, their routed experts as one grouped GEMM (``StepTimer.grouped_experts``), and
each MoE layer adds what the fused MoE does beside its GEMMs (:func:`gpuplan.speed.experts.fused_moe_s`, in the
step timer's parts, which the serving step model samples too: fitted on the B200 rows of
Llama 4 Scout and Qwen3-30B-A3B, held out on GB200 and release 0.17's Mixtral rows; bench/results/trtllm.md).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ..engines import engine_for, trtllm
from ..hardware import GpuSpec, Network
from ..model.spec import ModelSpec
from ..scenario import Scenario
from ..speed import Speed, offline_band
from .steptime import step_model


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


def held_tokens(s: Scenario) -> int:
    """Tokens of KV a request in flight holds for admission: its whole ``prompt + output`` under
    ``GUARANTEED_NO_EVICT`` (blocks reserved up front), its mean ``prompt + output/2`` under ``MAX_UTILIZATION``
    (blocks taken as the sequence grows; requests admitted at every stage of their output, so the pool holds them
    at half their output on average)."""
    osl = max(s.output_tokens, 1)
    if s.capacity_scheduler_policy == "max_utilization":
        return s.prompt_tokens + math.ceil(osl / 2)
    return s.prompt_tokens + osl


def offline_throughput(s: Scenario, m: ModelSpec, gpu: GpuSpec, network: Network | None = None, *,
                       requests: int | None = None) -> OfflineRun:
    """Output tokens/s of ``trtllm-bench throughput`` for ``requests`` requests (unbounded steady state when
    None) of ``s.prompt_tokens`` in and ``s.output_tokens`` out on ``s.tp x s.pp`` GPUs (module docstring), each
    iteration priced by the step model the scheduler simulation runs (:func:`gpuplan.serving.steptime.step_model`
    under trtllm-bench's settings): one step model, two batch compositions."""
    isl, osl = s.prompt_tokens, max(s.output_tokens, 1)
    s = trtllm.bench_scenario(s)
    batch, tokens = trtllm.bench_settings(s, m, gpu)
    s = s.model_copy(update={"max_num_seqs": batch, "max_num_batched_tokens": tokens})
    kv_requests = trtllm.startup_memory(s, m, gpu, trtllm.activation(s, m)).max_concurrency(held_tokens(s))
    conc = max(min(kv_requests, batch), 1)
    per_iteration = max(tokens // isl, 1)  # whole prompts per context iteration
    model = step_model(s, m, gpu, network)

    def cycle(n: int) -> tuple[float, float, float]:
        """(decode step, prefill, cycle) seconds of a wave of ``n`` requests: a decode step of the ``n`` at the mean
        context, yielding ``tokens_per_step`` tokens a request (the acceptance length, with speculative decoding),
        and the context iterations of ``per_iteration`` whole prompts each."""
        decode = model.time(0, n, n * (isl + osl / 2))
        full, rest = divmod(n, per_iteration)
        prefill = sum(k * model.time(seqs * isl, 0, 0, seqs * isl * isl / 2, prefill_seqs=seqs)
                      for k, seqs in ((full, per_iteration), (1, rest)) if k and seqs)
        return decode, prefill, osl / model.tokens_per_step * decode + prefill

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


def with_offline(speed: Speed, s: Scenario, m: ModelSpec, gpu: GpuSpec, network: Network | None = None) -> Speed:
    """``speed`` of a TensorRT-LLM inference plan with its figure at maximum load (:func:`offline_throughput`, on each
    of its ``dp`` replicas), the words of what it answers (:func:`bench_basis`) and an assumption saying both; other
    engines' plans, pipeline-parallel ones and plans whose KV pool holds no request, as they are."""
    if not engine_for(s).offline_bench or s.pp != 1:
        return speed
    run = offline_throughput(s, m, gpu, network)
    if not run.kv_requests:
        return speed
    speed.offline_tokens_per_s = run.output_tokens_per_s * s.dp
    speed.offline_basis = bench_basis(s, m, run)
    replicas = f" on each of {s.dp} replicas of {s.tp} GPU(s)" if s.dp > 1 else ""
    speed.assumptions.append(
        f"TensorRT-LLM at maximum load, as {speed.offline_basis}{replicas} (every request "
        f"{s.prompt_tokens:,} in and {s.output_tokens:,} out; MLPerf Offline runs the same way): "
        f"{speed.offline_tokens_per_s:,.0f} output tokens/s in all ({offline_band(m)})")
    return speed
