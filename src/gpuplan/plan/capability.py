"""What can my hardware do? For every bundled model: does the job fit these cards, with which changes, and how
large a batch and how long a context then fit.

The same functions as ``gpuplan estimate``: each model's scenario is the user's (task, method, lengths, engine...)
on the cards named, with the card- and count-dependent defaults of :mod:`gpuplan.plan.resolve`. Several training
GPUs try DDP, then ZeRO-2, then ZeRO-3 (the first that fits, unless a sharding was given). When the job does not fit
as asked, the change that makes it fit on the same cards with the most room (a combination when no single one is
enough, from :mod:`gpuplan.plan.fixes`; CPU offload and another stack only when nothing else fits) is given, and
the batch and context are those with the change.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field

from ..errors import GpuplanError
from ..hardware import GpuSpec
from ..model.catalog import bundled, load_model
from ..model.spec import ModelSpec
from ..scenario import Scenario, scenario_from
from ..stacks import stack_for
from .advice import largest_fitting
from .build import build
from .edge import batch_fields
from .fixes import suggestions
from .layout import with_layout
from .plan import Plan
from .resolve import resolve


class FitRow(BaseModel):
    """One model on the user's cards: fits as asked, fits with a change, or not at all (and why)."""

    model: str  # repo id
    params_total: int
    fits: bool  # as asked, or with ``change``
    change: str = ""  # what makes it fit on these cards ("" when it fits as asked)
    fields: dict[str, Any] = Field(default_factory=dict)  # the scenario fields of that change
    sharding: str = ""
    device_peak_gib: float | None = None
    max_batch_size: int | None = None
    max_batch_size_capped: bool = Field(default=False, exclude_if=lambda v: not v)  # as MemoryReport's
    max_seq_len: int | None = None
    cpu_gib: float = 0.0  # CPU memory the change needs (offload)
    reason: str = ""  # why nothing fits


def what_fits(template: dict[str, Any], gpu: GpuSpec, count: int, models: list[str] | None = None) -> list[FitRow]:
    """One row per model (default: every bundled one): those that fit as asked, then with a change on the GPU
    alone, then with CPU offload (slow), then the rest; largest first in each group. Every model refused for
    one reason (a GGUF file under transformers, bf16 on a V100, a diffusion pipeline as draft model) is that one
    sentence raised, as estimate says it, not a row per model saying it again (issue 30)."""
    rows = [_row(template, repo, gpu, count) for repo in (models or list(bundled()))]
    reasons = {r.reason for r in rows if r.device_peak_gib is None and not r.fits}
    if len(reasons) == 1 and all(r.device_peak_gib is None and not r.fits for r in rows):
        raise GpuplanError(reasons.pop())
    rows.sort(key=lambda r: (not r.fits, bool(r.change), r.cpu_gib > 0, -r.params_total))
    return rows


def _layouts(s: Scenario, count: int) -> list[dict[str, Any]]:
    """The shardings tried on several cards, least sharded first: the stack's own, as recommend searches them
    (:attr:`~gpuplan.stacks.base.Stack.shardings`: the Trainer's DDP and ZeRO-2/3, torchtune's FSDP2, ...)."""
    if s.task == "infer" or count == 1 or s.sharding is not None:
        return [{}]
    return [{"sharding": st} for st in stack_for(s).shardings]  # a diffusion stack is refused before: no profile


def _row(template: dict[str, Any], repo: str, gpu: GpuSpec, count: int) -> FitRow:
    """The model's row: the first layout whose plan fits as asked, else the change that makes the most sharded
    one fit (each a plan of the changed scenario)."""
    m = load_model(repo)
    row = FitRow(model=repo, params_total=m.params_total, fits=False)
    try:
        base = scenario_from({**template, "model": repo, "gpu": gpu.id, "num_gpus": count})
    except GpuplanError as err:  # the template is checked by the caller; a model may still refuse it
        row.reason = str(err).splitlines()[0]
        return row
    tried: list[Plan] = []
    for layout in _layouts(base, count):
        try:
            plan = build(resolve(base.model_copy(update=layout), m, gpu), memory_only=True)
        except GpuplanError as err:
            row.reason = str(err)
            continue
        tried.append(plan)
        if plan.verdict.fits:
            plan = laid_out(plan)
            s = plan.setup.scenario
            return row.model_copy(update={"fits": True, "device_peak_gib": plan.memory.device_peak_gib,
                                          "sharding": s.layout, **_room(s, m, gpu, plan)})
    return _with_change(row, tried[-1]) if tried else row  # the most sharded layout: the changes start there


def _with_change(row: FitRow, plan: Plan) -> FitRow:
    """The row of a model that does not fit as asked: the change that makes it fit with the most room, read off
    the plan of the changed scenario, or why none does."""
    s, m, gpu = plan.setup.scenario, plan.setup.model, plan.setup.gpu
    fixes = [x for x in suggestions(s, m, gpu, plan.memory) if x.fits and "num_gpus" not in x.fields
             and not _changes_job(x.fields, s)]
    if not fixes:
        row.device_peak_gib = plan.memory.device_peak_gib
        mem = plan.memory  # llama.cpp's layers past the cards run from RAM: the card's share is not the need
        ram = f" and {mem.cpu_gib:,.0f} GiB of RAM for the {mem.offloaded_layers} layers past them" \
            if mem.offloaded_layers else ""
        row.reason = f"needs {mem.device_peak_gib:,.0f} GiB per card{ram} as asked, and no change on these cards fits"
        return row
    # the most room on the cards (the question is how much fits), keeping the method and weights asked for, in the
    # user's stack, without CPU offload (llama.cpp's CPU layers are one: a Mac's raised GPU limit holds them on the
    # GPU, s25 walk), as far as some change does without each
    fixes.sort(key=lambda x: ("offload" in x.fields or "activation_offload" in x.fields or "cpu_layers" in x.fields,
                              "stack" in x.fields,
                              "method" in x.fields or "quant" in x.fields, x.device_peak_gib))
    best = fixes[0]
    unlaid = build(resolve(s.model_copy(update=best.fields), m, gpu), memory_only=True)
    fixed = laid_out(unlaid)
    after = fixed.setup.scenario
    changed = unlaid.setup.scenario  # the change, said without the layout the recipe then takes
    moved = {k: getattr(changed, k) for k in type(s).model_fields if getattr(changed, k) != getattr(s, k)}
    row.fits, row.change, row.fields = True, change_words(moved, s), best.fields  # what moves, said; what to set
    row.cpu_gib = fixed.memory.cpu_gib
    if row.cpu_gib and not (gpu.unified_memory and "wired_limit_mb" in moved):  # a Mac's own pool, not more RAM
        row.change += f" ({row.cpu_gib:,.0f} GiB {'of it used' if 'host_ram_gib' in moved else 'of RAM'})"
    row.device_peak_gib, row.sharding = best.device_peak_gib, after.layout
    if fixed is not unlaid:  # at the recipe's layout, as estimate plans the change
        row.device_peak_gib = fixed.memory.device_peak_gib
        return row.model_copy(update=_room(after, m, gpu, fixed))
    if best.combination:  # the room its search found
        return row.model_copy(update={"max_batch_size": best.max_batch_size, "max_seq_len": best.max_seq_len,
                                      "max_batch_size_capped": best.max_batch_size_capped})
    return row.model_copy(update=_room(after, m, gpu))


def _room(s: Scenario, m: ModelSpec, gpu: GpuSpec, plan: Plan | None = None) -> dict[str, Any]:
    """The largest batch (:func:`.edge.batch_fields`) and context that fit ``s`` (:func:`.advice.largest_fitting`)."""
    batch, length = largest_fitting(s, m, gpu, plan)
    return {**batch_fields(batch), "max_seq_len": length}


def laid_out(plan: Plan) -> Plan:
    """A training plan that fits at the recipe's micro-batch x accumulation, as ``estimate`` plans it (the builder
    takes it: :func:`gpuplan.plan.layout.with_layout`)."""
    r, memory = with_layout(plan.setup)
    return plan if r.scenario is plan.setup.scenario else build(r, memory_only=True, memory=memory)


def _changes_job(fields: dict[str, Any], s: Scenario) -> bool:
    """A fix that shortens the sequences or serves fewer requests answers another question."""
    return any(k in fields and fields[k] < getattr(s, k) for k in ("seq_len", "prompt_tokens", "batch_size"))


def embedding_words(precision: str) -> str:
    """QLoRA's embeddings and norms left in the compute dtype (``qlora_fp32_upcast`` false), named by that dtype:
    "fp16 embeddings" where the plan computes in fp16 (a card without bf16: the RTX 2080 Ti, T4, V100), else
    "bf16 embeddings" (s24 fuzz: ``fit --gpu rtx-2080-ti`` offered "bf16 embeddings" at fp16-mixed)."""
    return "fp16 embeddings" if precision.startswith("fp16") else "bf16 embeddings"


def change_words(fields: dict[str, Any], s: Scenario) -> str:
    """The scenario fields of a change, in a few words: ``checkpointing + QLoRA``."""
    words = []
    if fields.get("grad_checkpointing"):
        words.append("checkpointing" if fields["grad_checkpointing"] == "full" else
                     f"{fields['grad_checkpointing']} checkpointing")
    if "micro_batch_size" in fields:
        words.append(f"micro-batch {fields['micro_batch_size']} x {fields.get('grad_accum_steps', 1)} accumulation")
    if fields.get("method") and fields["method"] != s.method:
        words.append({"lora": "LoRA", "qlora": "QLoRA", "full": "full"}[fields["method"]])
    if fields.get("optimizer"):
        words.append({"adamw-8bit": "8-bit AdamW", "paged-adamw-8bit": "paged 8-bit AdamW"}.get(
            fields["optimizer"], fields["optimizer"]))
    if fields.get("qlora_fp32_upcast") is False:  # kept in the compute dtype: fp16 on a card without bf16
        words.append(embedding_words(fields.get("precision") or s.precision))
    if fields.get("quant"):
        words.append({"awq-int4": "AWQ 4-bit", "int8": "int8", "fp8": "fp8"}.get(fields["quant"], fields["quant"])
                     + " weights")
    if fields.get("kv_cache_dtype"):
        words.append(f"{fields['kv_cache_dtype']} KV cache")
    if fields.get("sharding") and fields["sharding"] != s.sharding:
        words.append({"zero3": "ZeRO-3", "zero2": "ZeRO-2"}.get(fields["sharding"], fields["sharding"]))
    if fields.get("tp", 1) > 1 and fields.get("tp") != s.tp:
        words.append(f"tensor parallel {fields['tp']}")
    if fields.get("offload"):
        words.append({"optimizer": "optimizer offload", "optimizer+params": "CPU offload"}[fields["offload"]])
    if fields.get("attention"):
        words.append(f"{fields['attention']} attention")
    if fields.get("loss") and fields["loss"] != s.loss:
        words.append({"fused-linear": "fused linear cross-entropy", "chunked": "chunked cross-entropy"}.get(
            fields["loss"], f"{fields['loss']} loss"))
    if fields.get("compile") and not s.compile:
        words.append("torch.compile")
    if fields.get("activation_offload") and not s.activation_offload:
        words.append("activation offload")
    if fields.get("optimizer_in_backward") and not s.optimizer_in_backward:
        words.append("optimizer in backward")
    if fields.get("stack") and fields["stack"] != s.stack:
        words.insert(0, f"the {fields['stack']} stack")
    if fields.get("cpu_layers") and not s.cpu_layers:
        words.append("llama.cpp layers on the CPU")
    if fields.get("wired_limit_mb"):
        words.append(f"macOS's GPU limit raised to {fields['wired_limit_mb']:,} MB")
    if fields.get("host_ram_gib"):  # was "host ram gib 1472.0" (session 8's walk)
        words.append(f"host RAM of {fields['host_ram_gib']:,.0f} GiB")
    said = {"grad_checkpointing", "micro_batch_size", "grad_accum_steps", "method", "optimizer", "qlora_fp32_upcast",
            "host_ram_gib", "quant", "kv_cache_dtype", "sharding", "tp", "offload", "attention", "loss", "compile",
            "activation_offload", "optimizer_in_backward", "stack", "precision", "pp", "num_gpus", "cpu_layers",
            "wired_limit_mb"}
    words += [f"{k.replace('_', ' ')} {v}" for k, v in fields.items() if k not in said and v != getattr(s, k, v)]
    return " + ".join(words) or "a change"
