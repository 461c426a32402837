"""What the serving targets (vLLM, SGLang, TensorRT-LLM) write alike: the quantization to ask the engine for, the
line that states the predicted KV pool, the note that a re-quantized plan needs a converted checkpoint, and the draft
a speculative plan loads."""

from __future__ import annotations

from ..engines import engine_for
from ..errors import GpuplanError
from ..model.checkpoints import published
from .plan import LaunchPlan

CONVERTED = ("awq-int4", "gptq-int4", "gptq-int8", "nvfp4")  # formats an engine reads from a converted checkpoint only


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
