"""What the serving targets (vLLM, SGLang, TensorRT-LLM, llama.cpp) write alike: why a target does not apply to a
plan, the quantization to ask the engine for, the note's run line and the line that states the predicted KV pool,
the note that a re-quantized plan needs a converted checkpoint, and the draft a speculative plan loads."""

from __future__ import annotations

from ..engines import engine_for
from ..errors import GpuplanError
from ..model.checkpoints import published
from .plan import LaunchPlan

CONVERTED = ("awq-int4", "gptq-int4", "gptq-int8", "nvfp4")  # formats an engine reads from a converted checkpoint only
DTYPE = {"bf16": "bfloat16", "fp16": "float16", "fp32": "float32"}  # --dtype of vLLM and SGLang (torch's names)
TRAINERS = "trainer, accelerate, deepspeed or torchrun"  # the targets a training plan runs with


def refusal(plan: LaunchPlan, name: str, label: str, pool: str, *, trainers: str = TRAINERS) -> str | None:
    """Why serving target ``name`` (``label`` in a sentence) does not apply: a training plan, which ``trainers`` run,
    or a plan for another engine, whose memory differs from this one's ``pool``; None where it may."""
    if plan.train:
        return f"{label} serves models; a training plan runs with --target {trainers}"
    if engine_for(plan.scenario).launch_target != name:
        return (f"the plan is for engine {plan.scenario.engine}, whose memory differs from {pool}: plan again with "
                f"--engine {name}")
    return None


def no_startup(plan: LaunchPlan, label: str) -> str | None:
    """A plan without the engine's startup (the settings the script writes), which only a plan on a card has."""
    return None if plan.result.memory.engine else f"the estimate has no {label} startup for this plan (a GPU is needed)"


def run_line(plan: LaunchPlan, script: str, port: int) -> str:
    """The note that says how to start ``script``: on each node of a copy over several, with the variables that
    join them (``NODE_RANK``, ``MASTER_ADDR``), and where the server listens."""
    if plan.num_nodes <= 1:
        return f"run: bash {script}; the OpenAI-compatible server listens on port {port}"
    return (f"run: bash {script} on each of the {plan.num_nodes} machines, with NODE_RANK (0 on the main one) and "
            f"MASTER_ADDR set; the OpenAI-compatible server listens on port {port} of the main one")


def quant_to_ask(plan: LaunchPlan) -> str | None:
    """The quantization to ask the engine for (:meth:`gpuplan.engines.Engine.quantizes_to`)."""
    return engine_for(plan.scenario).quantizes_to(plan.scenario, plan.model)


def pool_line(plan: LaunchPlan, pool: str, detail: str = "") -> str:
    """``KV pool 12.3 GiB per GPU: 98,304 tokens, up to 11 concurrent requests of 8,448 tokens (the plan: 8)``, as
    the estimate predicted it (``pool`` names it as the engine does; ``detail`` follows the token count)."""
    s, mem = plan.scenario, plan.result.memory
    where = (f"on each of {s.attention_ranks} attention data-parallel GPUs, {mem.max_context_tokens:,} tokens in all"
             if s.attention_ranks > 1 else f"per GPU: {mem.max_context_tokens:,} tokens")
    return (f"{pool} {mem.kv_cache_pool_gib:.1f} GiB {where}{detail}, up to "
            f"{mem.max_concurrency:,} concurrent requests of {s.prompt_tokens + s.output_tokens:,} tokens (the plan: "
            f"{s.batch_size:,})")


def converted_note(plan: LaunchPlan, flag: str) -> list[str]:
    """The reminder that ``flag`` (the engine's option for the plan's format) needs a checkpoint converted to it."""
    q = plan.scenario.quant
    if quant_to_ask(plan) not in CONVERTED:
        return []
    ready = published(plan.model.name, q)
    if ready and plan.model_ref == ready:
        return [f"{flag}: the command loads {ready}, the {q} checkpoint of {plan.model.name} that its publisher ships"]
    return [f"{flag} needs a checkpoint quantized that way: replace {plan.model.name} with its {q} version"]


def draft_to_load(plan: LaunchPlan) -> str | None:
    """The draft checkpoint a speculative plan's engine loads (``draft_model``: an EAGLE head's id or a draft model),
    None for MTP (the checkpoint's own layers) and n-gram (none); refused for an EAGLE plan that names no head
    (every engine loads the head from its own checkpoint)."""
    s = plan.scenario
    if s.speculative_method in ("eagle", "eagle3") and s.draft_model is None:
        raise GpuplanError(f"speculative_method {s.speculative_method} loads an EAGLE head trained for "
                           f"{plan.model.name}: give its Hugging Face id as draft_model")
    return s.draft_model if s.speculative_method in ("eagle", "eagle3", "draft") else None


def long_context_env(plan: LaunchPlan) -> dict[str, str]:
    """The environment variable, set to 1, without which the engine does not start with the plan's context where it
    runs past the model's (:meth:`gpuplan.engines.base.Engine.long_context`: vLLM, SGLang, TensorRT-LLM); none
    otherwise. The scripts and SkyPilot's task write it before the command."""
    env = engine_for(plan.scenario).long_context(plan.scenario, plan.model)
    return {env: "1"} if env else {}
