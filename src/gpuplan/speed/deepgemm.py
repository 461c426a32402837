"""What a launch with DeepGEMM turned off costs a plan that times DeepGEMM's block-FP8 GEMMs (issue 31).

SGLang and vLLM run a block-scaled fp8 checkpoint's linears (DeepSeek-V3/R1, Kimi K2, the Qwen3 FP8 releases) in
DeepGEMM by default on Hopper and Blackwell (:mod:`gpuplan.engines.block_fp8`). A launch that turns it off through
the engine's environment (:attr:`gpuplan.engines.base.Engine.deepgemm_switch`) runs the next kernel of the
engine's own order (:func:`gpuplan.engines.block_fp8.without_deepgemm`): FlashInfer's groupwise FP8 GEMM on a
B200/B300 and Triton's on a Hopper card under SGLang, CUTLASS's block-FP8 GEMM and the Triton MoE under vLLM.
InferenceX's DeepSeek-R1 scripts launch SGLang so (SemiAnalysisAI/InferenceX ``benchmarks/dsr1_fp8_b200.sh``,
``dsr1_fp8_h200.sh``: ``export SGL_ENABLE_JIT_DEEPGEMM=false``). Those kernels reach a third of DeepGEMM's rate on
prompt-sized GEMMs (``overheads.FLASHINFER_GROUPWISE_KERNEL_SHARE``, SGLang PR #13528's B200 table;
``overheads.BLOCK_FP8_KERNEL_SHARE``, SGLang PR #3893's H200 table), so the plan says what the switch costs: one
prompt alone and the decode step, timed both ways by the same step model.
"""

from __future__ import annotations

from dataclasses import replace

from ..engines import block_fp8, engine_for
from ..engines.vllm import named_version
from ..hardware import GpuSpec
from ..model.spec import ModelSpec
from ..scenario import Scenario
from .inference import step_timer

# (engine, kernel class) -> the kernel in words, and the setting that plans it (None: gpuplan plans the default only)
FALLBACK = {("sglang", block_fp8.FLASHINFER): ("FlashInfer's groupwise FP8 GEMM",
                                              "--fp8-gemm-backend flashinfer_trtllm"),
            ("sglang", block_fp8.TRITON): ("Triton's block-FP8 GEMM", "--fp8-gemm-backend triton"),
            ("vllm", block_fp8.TRITON): ("CUTLASS's block-FP8 GEMM, the experts in the Triton MoE", None)}


def deepgemm_warnings(s: Scenario, m: ModelSpec, gpu: GpuSpec) -> list[str]:
    """One sentence where the plan times DeepGEMM as the engine's own pick: the switch that turns it off, the
    kernels that then run and their share of the fp8 rate against DeepGEMM's, and the plan's time to first token
    of one ``prompt_tokens`` prompt alone and its decode step of ``batch_size`` sequences
    (:func:`gpuplan.speed.inference.inference_speed`'s ``ttft_s`` and ``step_time_s``) timed both ways; none
    elsewhere."""
    engine = engine_for(s)
    if s.task != "infer" or engine.deepgemm_switch is None or not block_fp8.fp8_block_served(s, m) \
            or not gpu.supports_dtype("fp8"):
        return []
    pair = block_fp8.without_deepgemm(s, gpu, engine.name, named_version(s))
    if pair is None:
        return []
    timer = step_timer(s, m, gpu)
    off = replace(timer, timing=replace(timer.timing, **block_fp8.shares(pair, s, gpu)))
    p, b, context = s.prompt_tokens, s.batch_size, s.prompt_tokens + s.output_tokens / 2
    outside = timer.request_s + p * timer.frontend[2]  # as the plan's time to first token alone counts it
    prompt, prompt_off = (1e3 * (t.ttft_s(p) + outside) for t in (timer, off))
    step, step_off = (1e3 * sum(t.step_parts(b, context).values()) for t in (timer, off))
    kernel, setting = FALLBACK[engine.name, pair[0]]
    plan = f"plan it with {setting}" if setting else f"gpuplan plans {engine.label} with DeepGEMM on only"
    return [f"{m.name}'s block-FP8 linears are timed in DeepGEMM, {engine.label}'s default on {gpu.name}; a launch "
            f"with {engine.deepgemm_switch} runs {kernel} instead ({off.timing.block_fp8_share:.0%} of the fp8 rate "
            f"against DeepGEMM's {timer.timing.block_fp8_share:.0%}): one "
            f"{p:,}-token prompt alone {prompt:,.0f} -> {prompt_off:,.0f} ms ({prompt_off / prompt - 1:+.0%}), the "
            f"decode step of {b} {step:.1f} -> {step_off:.1f} ms; {plan}"]
