"""What to change when a scenario does not fit (the advice stage asks, :mod:`.advice`).

Every fix is one change to the scenario from a single list (:func:`candidate_fixes`; a new technique is one more
:class:`Fix` there), re-estimated with the same functions, with what it costs in speed. When no single fix is
enough, :func:`smallest_combination` finds the fewest fixes that fit together, the gentlest first, keeping the GPUs
the user named before adding more, and then the largest micro-batch and context that fit with them.

For checkpointing, CPU offload (the optimizer step on DeepSpeed's CPU Adam, the weights streamed over the host
link every pass: :func:`gpuplan.speed.training_speed` times both, with the CPU RAM the plan keeps there said beside),
the training stacks' techniques (loss, activation offloading, compile, optimizer in backward, another stack) and
llama.cpp's CPU layers the speed a line states is the builder's: the plan ``estimate`` makes with the change applied
to the scenario as asked (laid out again where the recipe chooses the layout), against the plan read (:class:`Timing`).
The other changes keep a rule of thumb with its source: 4-bit base weights dequantize on every matmul (QLoRA paper,
section 4: slower than LoRA); ZeRO-3 all-gathers the weights twice per step (Rajbhandari et al. 2020, section 7).
Where no speed is stated (``gpuplan fit``'s rows) the probes are memory-only.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from ..datafiles import made
from ..engines import engine_for
from ..engines.base import FOUR_BIT
from ..errors import GpuplanError
from ..hardware import GpuSpec, raised_wired_limit_mb
from ..memory.host import host_need_gib, host_ram
from ..model.checkpoints import published
from ..model.spec import ModelSpec
from ..result import Suggestion, batch_words
from ..scenario import Scenario
from ..scenario.stacks import RECIPES, STACK_NAMES, card_precision
from ..sharding import sharding_for
from ..speed import Speed, training_speed
from ..speed.gemm import can_time
from ..stacks import stack_for
from .edge import BATCH_LIMIT, batch_fields, fits_with, largest
from .plan import Plan, memory_plan, probe
from .refusals import advice_lacks, offload_refusal, refused
from .resolve import resolve

MAX_COMBINED = 4  # fixes in one combination
MAX_TRIES = 400  # combinations evaluated at most (each is one memory estimate, ~0.2 ms)


@dataclass(frozen=True, kw_only=True)
class Fix:
    """One change to a scenario. Fixes of the same ``group`` exclude each other in a combination.

    ``slowdown``: the step-time multiplier it roughly costs (orders combinations, gentlest first; None: the ratio
    of the builder's plans with and without it, as ``cost`` "" is said: :func:`on_card`; 1.0 where not timed);
    ``keeps_job``:
    False for changes that alter the job itself (shorter sequences, fewer requests); ``more_gpus``: it needs
    GPUs beyond those named.
    """

    label: str
    change: dict[str, Any] = field(hash=False)
    group: str
    cost: str = ""  # "": the builder's plan of it says, on the card (checkpointing, the stacks' techniques)
    slowdown: float | None = None  # None: the ratio of that plan's speed
    ram: bool = False  # it keeps states in CPU RAM: its cost ends with how much the plan keeps there
    keeps_job: bool = True
    more_gpus: bool = False
    planned_gib: float | None = None  # the device peak of the builder's plan with it, at its layout, where timed


@dataclass(frozen=True)
class Timing:
    """Where the speed a fix's line states comes from: ``before``, the plan the advice reads; ``asked``, its scenario
    as asked (before the builder's layout); ``plan_of``, the builder's plan of a changed scenario
    (:func:`gpuplan.plan.build.build` without advice or recipe, on the offers ``before`` was priced among). A fix's
    cost is the ratio of the plan of ``asked`` with the fix's fields to ``before``: the two speeds ``estimate``
    prints without and with the change (s27 walk: Llama-3.1-70B QLoRA on an RTX 4090, ZeRO-3 offload said 35 %
    slower at the micro-batch 1 x 16 that did not fit, where estimate with the change lays out 2 x 8, 9 % slower)."""

    before: Plan
    asked: Scenario
    plan_of: Callable[[Scenario], Plan]

    def after(self, fields: dict[str, Any]) -> Plan | None:
        """The plan of the scenario as asked with ``fields``; None when it cannot run or has no speed."""
        try:
            plan = self.plan_of(self.asked.model_copy(update=fields))
        except GpuplanError:
            return None
        return plan if plan.speed is not None else None


def candidate_fixes(s: Scenario, m: ModelSpec, largest_micro_batch: int | None = None,
                    gpu: GpuSpec | None = None) -> list[Fix]:
    """Every change that can lower the memory of ``s``, in one list: single suggestions and combinations both
    come from here (``largest_micro_batch``: the largest that fits the card as it is, where searched; ``gpu``: the
    card, whose weight formats the serving engine starts with)."""
    return _training_fixes(s, m, largest_micro_batch) if s.task == "train" else _serving_fixes(s, m, gpu)


def accumulation_fix(s: Scenario, largest: int | None, cost: str = "") -> Fix | None:
    """A smaller micro-batch with the accumulation that keeps the global batch (``micro_batch_size x
    grad_accum_steps`` samples per optimizer step, as the HF Trainer's gradient_accumulation_steps sums them): the
    largest divisor of the global batch below the micro-batch that is at most ``largest`` (the largest micro-batch
    that fits, from the advice's search; 1 where none was searched), so the step stays as full as the card allows.
    Every plan's, a decoder LLM's and a module's (:func:`gpuplan.plan.modules.fixes`)."""
    if s.micro_batch_size <= 1:
        return None
    total = s.micro_batch_size * s.grad_accum_steps
    top = min(max(largest or 1, 1), s.micro_batch_size - 1)
    micro = max(d for d in range(1, top + 1) if total % d == 0)
    return Fix(label=f"micro-batch {micro} x {total // micro} accumulation steps (same global batch)",
               change={"micro_batch_size": micro, "grad_accum_steps": total // micro}, cost=cost,
               group="micro-batch", slowdown=1.1)


def _training_fixes(s: Scenario, m: ModelSpec, largest_micro_batch: int | None = None) -> list[Fix]:
    out: list[Fix] = []
    if s.grad_checkpointing != "full":
        out.append(Fix(label="enable gradient checkpointing", change={"grad_checkpointing": "full"},
                       group="checkpointing"))
    fewer = accumulation_fix(s, largest_micro_batch, "same tokens per step, lower GPU utilization")
    if fewer is not None:
        out.append(fewer)
    if s.attention == "eager":
        out.append(Fix(label="use sdpa attention", change={"attention": "sdpa"}, cost="faster, same result",
                       group="attention", slowdown=0.9))
    if s.optimizer in ("adamw", "lion", "sgd-momentum"):
        out.append(Fix(label="8-bit AdamW (bitsandbytes)", change={"optimizer": "adamw-8bit"},
                       cost="about the same speed", group="optimizer", slowdown=1.01))
        out.append(Fix(label="paged 8-bit AdamW", change={"optimizer": "paged-adamw-8bit"},
                       cost="about the same speed; pages states to CPU under pressure", group="optimizer",
                       slowdown=1.02))
    if s.method == "full":
        out.append(Fix(label="LoRA instead of full fine-tuning", change={"method": "lora"},
                       cost="about 1/3 less compute per step; trains adapters only", group="method", slowdown=1.05))
    # QLoRA computes in 16 bits: the scenario's, or from fp32 the card's (fp16 where it has no bf16: the 2080 Ti, T4)
    half = card_precision({"precision": None, "task": "train", "gpu": s.gpu, "stack": "hf"}, "bf16-mixed") \
        if s.precision == "fp32" else s.precision
    dtype = half.split("-")[0]
    if s.method == "qlora" and s.qlora_fp32_upcast and (s.quant or "nf4") in ("nf4", "fp4"):
        out.append(Fix(label=f"keep embeddings and norms in {dtype} (no fp32 upcast by "
                             "prepare_model_for_kbit_training)",
                       change={"qlora_fp32_upcast": False}, cost="same speed; as Unsloth and torchtune run QLoRA",
                       group="upcast", slowdown=1.0))
    if s.method != "qlora":
        out.append(Fix(label="QLoRA (4-bit base)", change={"method": "qlora", "quant": None, "precision": half},
            cost="slower than LoRA (dequantization on every matmul); small quality cost", group="method",
            slowdown=1.5))
        out.append(Fix(label=f"QLoRA with embeddings and norms in {dtype} (as Unsloth and torchtune run it)", change={
            "method": "qlora", "quant": None, "qlora_fp32_upcast": False, "precision": half},
            cost="slower than LoRA (dequantization on every matmul); small quality cost", group="method",
            slowdown=1.5))
    if s.world_size > 1 and not sharding_for(s).shards_weights(s) and s.tp * s.pp == 1:
        out.append(Fix(label=f"ZeRO-3 over your {s.world_size} GPUs", change={"sharding": "zero3"},
                       cost="all-gathers weights each step: NVLink recommended", group="gpus", slowdown=1.2))
    if s.offload == "none":  # DDP offloads through DeepSpeed's ZeRO-Offload (refusals.offload_refusal)
        ddp = offload_refusal(s.model_copy(update={"offload": "optimizer"})) and s.sharded_by == "ddp"
        out.append(Fix(label="offload the optimizer to CPU" + (" (DeepSpeed ZeRO-2 offload)" if ddp else ""),
                       change={"offload": "optimizer", **({"sharding": "zero2"} if ddp else {})},
                       group="offload", ram=True))
    if s.offload != "optimizer+params" and s.tp * s.pp == 1:  # on one GPU too (DeepSpeed ZeRO-Offload)
        fsdp = RECIPES[s.stack].fsdp_only  # torchtune and torchtitan shard with FSDP2 only
        out.append(Fix(label=f"offload optimizer and parameters to CPU ({'FSDP' if fsdp else 'ZeRO-3'} offload)",
                       change={"offload": "optimizer+params", "sharding": "fsdp" if fsdp else "zero3"},
                       group="offload", ram=True))
    for n in (2, 4, 8):
        if n > s.num_gpus:
            out.append(Fix(label=f"ZeRO-3 over {n} GPUs", change={"num_gpus": n, "sharding": "zero3", "tp": 1,
                                                                  "pp": 1},
                           cost="all-gathers weights each step: NVLink recommended", group="gpus", slowdown=1.2,
                           more_gpus=True))
    out += _stack_fixes(s)
    if s.seq_len > 512:
        out.append(Fix(label=f"shorter sequences ({s.seq_len // 2:,} tokens)", change={"seq_len": s.seq_len // 2},
                       cost="less context per sample", group="length", keeps_job=False))
    return out


# fields of the stacks' own techniques (Liger's or torchtune's loss, compile, activation offload, optimizer in
# backward): a combination using one is followed by the best combination without them
STACK_FIELDS = {"loss", "compile", "activation_offload", "optimizer_in_backward"}


def _stack_fixes(s: Scenario) -> list[Fix]:
    """The training stacks' techniques (each kept only where the scenario's stack runs it), then the other
    stacks themselves with their recipe defaults; their speed cost from the builder's plan (:func:`_stated`)."""
    options: list[tuple[str, dict[str, Any], str]] = []
    if s.loss != "fused-linear":
        options.append(("fused linear cross-entropy, no logits (Liger; Trainer use_liger_kernel=True)",
                        {"loss": "fused-linear"}, "loss"))
    if s.loss == "full":
        options.append(("chunked cross-entropy (8 chunks)", {"loss": "chunked"}, "loss"))
    if not s.activation_offload and s.grad_checkpointing != "none":
        options.append(("offload checkpointed activations to CPU", {"activation_offload": True}, "activation offload"))
    if not s.optimizer_in_backward and s.method == "full":
        options.append((f"optimizer step in backward (grad accumulation 1, micro-batch x{s.grad_accum_steps})",
                        {"optimizer_in_backward": True, "grad_accum_steps": 1,
                         "micro_batch_size": s.micro_batch_size * s.grad_accum_steps}, "optimizer in backward"))
    if not s.compile:
        options.append(("torch.compile", {"compile": True}, "compile"))
    if s.grad_checkpointing == "none":
        options.append(("selective (per-op) checkpointing", {"grad_checkpointing": "selective"}, "checkpointing"))
    for name in STACK_NAMES:
        if name != s.stack:
            options.append((f"switch to {RECIPES[name].title}, with its defaults", {"stack": name}, "stack"))
    # only whether the stack runs it; the speed cost comes on the card (on_card)
    return [Fix(label=label, change=change, group=group) for label, change, group in options
            if _apply(s, (Fix(label=label, change=change, group=group),)) is not None]


def speed_change(s: Scenario, changed: Scenario, m: ModelSpec, gpu: GpuSpec) -> str:
    """How a change of stack or technique changes the time per token on ``gpu`` at the same layout (the speed
    model's times with and without it, :func:`gpuplan.speed.training_speed`), in :func:`ratio_words`' words:
    recommend's note of a variant row against the scenario as given at the row's layout."""
    return ratio_words(s, training_speed(s, m, gpu), changed, training_speed(changed, m, gpu))[0]


def ratio_words(s: Scenario, before: Speed, changed: Scenario, after: Speed) -> tuple[str, float]:
    """(how ``after``, the speed of ``changed``, differs from ``before``, that of ``s``, in words; time per token
    after over before): the ratio (recomputation's extra work as the stack's checkpointing runs it, the PCIe time
    offloading leaves exposed, the stacks' published factors for compile and fused kernels), with the parts of the
    step that moved most and the stack factor's source."""
    ratio = before.tokens_per_s / after.tokens_per_s  # time per token, after over before
    same_tokens = s.micro_batch_size * s.seq_len * s.grad_accum_steps == \
        changed.micro_batch_size * changed.seq_len * changed.grad_accum_steps
    unit = "steps" if same_tokens else "per token"
    if abs(ratio - 1) < 0.005:
        text = "about the same step time" if same_tokens else "about the same time per token"
    elif ratio >= 2:  # "712% slower" read as a percentage of what is left (s27 walk: CPU Adam's 8.1x)
        text = f"{ratio:.1f}x the {'step time' if same_tokens else 'time per token'}"
    else:
        text = f"{abs(1 - ratio) * 100:.0f}% {'slower' if ratio > 1 else 'faster'} {unit}"
    # each part's time per token, as a share of the time per token before the change
    def shares(sp) -> dict[str, float]:
        return {k: v / (sp.tokens_per_s * sp.step_time_s) * before.tokens_per_s for k, v in sp.parts_s.items()}

    old, new = shares(before), shares(after)
    moved = {k: new.get(k, 0.0) - old.get(k, 0.0) for k in {*old, *new}}
    big = sorted((k for k in moved if abs(moved[k]) >= 0.01), key=lambda k: -abs(moved[k]))[:2]
    why = [", ".join(f"{k.replace('_', ' ')} {moved[k]:+.0%}" for k in big)] if big else []
    kernels_before, kernels_after = stack_for(s).kernels(s), stack_for(changed).kernels(changed)
    if kernels_after.why and kernels_after != kernels_before:
        why.append(kernels_after.text)
    return (f"{text} ({'; '.join(why)})" if why else text), ratio


def _stated(fields: dict[str, Any], timing: Timing) -> tuple[str, float, Plan] | None:
    """(the words of a change's speed, time per token after over before, the plan with it) as the builder plans the
    scenario asked with ``fields`` (:class:`Timing`): a training step's ratio, or llama.cpp's CPU layers' decode
    step (:func:`_cpu_layers_words`); None when that plan cannot be made."""
    after = timing.after(fields)
    if after is None:
        return None
    s = timing.before.setup.scenario
    if s.task != "train":
        return _cpu_layers_words(after.speed), 1.0, after  # offload: last by rule
    return (*ratio_words(s, timing.before.speed, after.setup.scenario, after.speed), after)


def _serving_fixes(s: Scenario, m: ModelSpec, gpu: GpuSpec | None = None) -> list[Fix]:
    """The serving changes; the 4-bit one in the first format the engine starts on ``gpu`` with
    (:meth:`~gpuplan.engines.Engine.four_bit_on`: GPTQ on a V100, where vLLM and SGLang refuse AWQ)."""
    out: list[Fix] = []
    engine = engine_for(s)
    nvfp4 = published(m.name, "nvfp4")
    if s.quant != "nvfp4" and nvfp4 and engine.refusal(s.model_copy(update={"quant": "nvfp4"}), m) is None:
        out.append(Fix(label=f"NVIDIA's NVFP4 checkpoint ({nvfp4})", change={"quant": "nvfp4"},
                       cost="4.5 bits per weight, published ready to load; fp4 tensor cores on Blackwell; small "
                       "quality cost", group="weights", slowdown=0.95))
    if (s.quant or "none") == "none" and engine.loads_quants:
        # a checkpoint that ships quantized (MXFP4, FP8, AWQ/GPTQ) is re-quantized only from a converted copy
        shipped = m.shipped_format()[0].name if m.quantization else None
        re = f"re-quantize the {shipped} checkpoint to " if shipped else ""
        convert = "; needs a converted checkpoint" if shipped else ""
        out.append(Fix(label=f"{re}8-bit weights (int8)", change={"quant": "int8"},
                       cost=f"LLM.int8 is slower than bf16; small quality cost{convert}", group="weights",
                       slowdown=1.5))
        out += [Fix(label=f"{re}4-bit weights ({four.split('-')[0].upper()})", change={"quant": four},
                    cost=f"fast kernels; small quality cost{convert}", group="weights", slowdown=1.0)
                for four in (engine.four_bit_on(s, gpu) if gpu else FOUR_BIT)[:1]]
        if engine.fp8_weight_only:
            out.append(Fix(label=f"{re}fp8 weights", change={"quant": "fp8"},
                           cost=f"native on Ada/Hopper+, weight-only (Marlin) on Ampere; tiny quality cost{convert}",
                           group="weights", slowdown=1.0))
    if engine.budget_fix and (getattr(s, engine.budget_fix[0]) or 0.0) < engine.budget_fix[1]:
        name, value, label, cost = engine.budget_fix
        out.append(Fix(label=label, change={name: value}, cost=cost, group="budget", slowdown=1.0))
    if s.kv_cache_dtype in ("auto", "fp16", "bf16") and "fp8" in engine.kv_dtypes:
        out.append(Fix(label="fp8 KV cache", change={"kv_cache_dtype": "fp8"},
                       cost="half the KV memory; tiny quality cost", group="kv", slowdown=1.0))
    n = s.world_size
    if not engine.tensor_parallel:  # llama.cpp splits by layer (or by row), never tensor parallel
        out += [Fix(label=f"split the layers over {k} GPUs (llama.cpp --split-mode layer)", change={"num_gpus": k},
                    cost="the GPUs run their layers in turn: more memory, not more speed per request",
                    group="gpus", slowdown=1.0, more_gpus=True) for k in (2, 4, 8) if k > n]
        if not s.cpu_layers:
            out.append(Fix(label="let llama.cpp run the layers that do not fit from system RAM (--cpu-layers)",
                           change={"cpu_layers": True}, group="offload"))  # its cost: _cpu_layers_words
    else:
        if n > 1 and s.tp * s.pp == 1:
            out.append(Fix(label=f"split the model over your {n} GPUs (tensor parallel {n})",
                           change={"tp": n, "sharding": None}, cost="all-reduce per layer: NVLink recommended",
                           group="gpus", slowdown=1.1))
        for k in (2, 4, 8):
            if k > n and m.num_heads % k == 0:
                out.append(Fix(label=f"tensor parallel over {k} GPUs", change={"num_gpus": k, "tp": k, "pp": 1,
                                                                               "sharding": None},
                               cost="all-reduce per layer: NVLink recommended", group="gpus", slowdown=1.1,
                               more_gpus=True))
    if s.batch_size > 1:
        out.append(Fix(label=f"batch {max(s.batch_size // 2, 1)}", change={"batch_size": max(s.batch_size // 2, 1)},
                       cost="fewer concurrent requests", group="batch", keeps_job=False))
    if s.prompt_tokens > 512:
        out.append(Fix(label=f"shorter prompts ({s.prompt_tokens // 2:,} tokens)",
                       change={"prompt_tokens": s.prompt_tokens // 2}, cost="less context", group="length",
                       keeps_job=False))
    return out


def _wired_fixes(gpu: GpuSpec) -> list[Fix]:
    """A Mac's GPU share of unified memory raised as far as :func:`gpuplan.hardware.raised_wired_limit_mb` says, when
    it is below that: the same machine and speed, where llama.cpp's CPU layers were the only fix offered (s25 walk:
    Llama 4 Scout at Q8_0 on a 128 GB M4 Max)."""
    limit = raised_wired_limit_mb(gpu)
    if limit is None or limit <= gpu.usable_gib * 1024:
        return []
    left = gpu.memory_gib - limit / 1024
    return [Fix(label=f"raise macOS's GPU memory limit to {limit:,} MB (sudo sysctl iogpu.wired_limit_mb={limit})",
                change={"wired_limit_mb": limit}, cost=f"the same speed; leaves macOS and other apps {left:.0f} GiB; "
                "until the next reboot", group="wired", slowdown=1.0)]


def _apply(s: Scenario, fixes: tuple[Fix, ...]) -> Scenario | None:
    """``s`` with the fixes' changes, validated again (the stack's defaults follow, e.g. QLoRA's recipe turns
    checkpointing on; :meth:`Scenario.model_copy` validates one change once, though the advice asks of one fix
    several times); None when the result is refused (the stack cannot run it)."""
    change: dict[str, Any] = {}
    for fix in fixes:
        change.update(fix.change)
    try:
        changed = s.model_copy(update=change)
    except GpuplanError:
        return None
    return None if refused(changed) else changed


def _fits(s: Scenario | None, m: ModelSpec, gpu: GpuSpec) -> tuple[bool, float]:
    return (False, math.inf) if s is None else probe(s, m)


def _implied(s: Scenario, changed: Scenario, given: dict[str, Any]) -> dict[str, Any]:
    """Fields a change moved without naming them (the stack's defaults following it)."""
    return {k: getattr(changed, k) for k in type(s).model_fields if k not in given and k != "gpu"
            and getattr(changed, k) != getattr(s, k)}


def _with_implied(label: str, implied: dict[str, Any]) -> str:
    if not implied:
        return label
    return f"{label} (and, as the stack's recipe then sets, " + ", ".join(
        f"{k.replace('_', ' ')} {_value_words(v)}" for k, v in implied.items()) + ")"


def _value_words(v: Any) -> str:
    """A field's value as the fix's words: booleans lower-case, counts with thousands separators (a float that
    holds a whole number, such as train tokens, as one: ``1,272,447``, not ``1272447.0``)."""
    if isinstance(v, bool):
        return str(v).lower()
    if (isinstance(v, float) and v.is_integer()) or isinstance(v, int):
        return f"{v:,.0f}"
    return f"{v:,g}" if isinstance(v, float) else str(v)


def on_card(s: Scenario, m: ModelSpec, gpu: GpuSpec, fixes: list[Fix], timing: Timing | None = None) -> list[Fix]:
    """The fixes the card and the stack run, with their speed cost filled in where the builder's plan states it
    (training, llama.cpp's CPU layers: :func:`_stated`, given ``timing``; else left unsaid, a memory-only probe),
    and the CPU RAM an offload keeps (that plan's)."""
    out = []
    for fix in fixes:
        if _another_machine(s, gpu, fix) or (fix.ram and gpu.unified_memory):  # offload to the card's own pool
            continue  # frees none of it (s27 walk: a 128 GB Mac was told ZeRO-3 offload "needs 134 GiB of CPU RAM")
        changed = _apply(s, (fix,))
        if changed is not None and advice_lacks(s, changed, gpu):
            continue
        if fix.cost and fix.slowdown is not None:
            out.append(fix)
            continue
        if changed is None:
            continue
        stated = _stated(fix.change, timing) if timing is not None and can_time(gpu) and \
            (s.task == "train" or fix.change.get("cpu_layers")) else None
        if stated is not None:
            text, ratio, after = stated
            fix = replace(fix, cost=fix.cost or text, slowdown=fix.slowdown if fix.slowdown is not None else ratio,
                          planned_gib=after.memory.device_peak_gib)
            ram = _ram_words(after.memory.cpu_gib) if fix.ram else ""
            fix = replace(fix, cost="; ".join(x for x in (fix.cost, ram) if x))
        elif fix.change.get("cpu_layers"):
            fix = replace(fix, cost=_cpu_layers_words(None), slowdown=1.0)
        else:  # not timed: ranked as the same speed
            fix = replace(fix, slowdown=1.0 if fix.slowdown is None else fix.slowdown)
        out.append(fix)
    return out


def _cpu_layers_words(speed: Speed | None) -> str:
    """What llama.cpp's CPU layers cost a user, read off the decode step of the plan with them (``speed``:
    :func:`gpuplan.speed.speed_of` times those layers' weights and KV cache at the system RAM's bandwidth; None:
    not timed), where the fix said "several times slower" whatever the model (s27 walk: Llama-3.3-70B Q4_K_M on an
    RTX 4090, 36 of 80 layers on the CPU: 2.4 tokens/s a user, 94 % of the step on those layers)."""
    said = "those layers run on the CPU at the RAM's speed"
    if speed is None:
        return said
    share = speed.parts_s.get("cpu_layers", 0.0) / speed.step_time_s
    return (f"{said}: each user streams {1 / speed.step_time_s:,.1f} tokens/s (decode step "
            f"{speed.step_time_s * 1e3:,.0f} ms, {share:.0%} of it those layers)")


def _ram_words(gib: float) -> str:
    """The CPU RAM an offload keeps (its plan's ``cpu_gib``), in the words its fix ends with."""
    return f"needs {gib:,.0f} GiB of CPU RAM" if gib >= 0.5 else f"needs {gib:,.1f} GiB of CPU RAM"


def _another_machine(s: Scenario, gpu: GpuSpec, fix: Fix) -> bool:
    """Whether ``fix`` adds GPUs that only other machines hold, for an engine that serves on one: a unified-memory
    computer (an Apple silicon Mac, a DGX Spark) holds one GPU, so a second is a second computer
    (:func:`gpuplan.plan.nodes.node_shape`), which llama.cpp refuses to serve across
    (:func:`gpuplan.plan.refusals.refused`: "serves on one machine")."""
    return fix.more_gpus and gpu.unified_memory and s.task != "train" and not engine_for(s).tensor_parallel_flag


def _more_host_ram(s: Scenario, gpu: GpuSpec, report) -> list[Suggestion]:
    """When the GPU holds the job and only the host's RAM is short (offloaded states, CPU layers): a machine with
    enough RAM, in steps of 64 GiB (none on a unified-memory computer, whose one pool cannot grow)."""
    need, (ram, _) = host_need_gib(s, report.cpu_gib), host_ram(s, gpu)
    if need <= ram or gpu.unified_memory or report.device_peak_gib > (report.capacity_gib or 0):
        return []
    size = math.ceil(need / 64) * 64
    fields: dict[str, Any] = {"host_ram_gib": size}
    also = ""
    if report.offloaded_layers and not s.cpu_layers:  # llama.cpp's CPU layers fit only when asked for: without
        fields["cpu_layers"] = True  # it, the RAM alone left "does not fit ... (--cpu-layers counts that as fitting)"
        also = f" and llama.cpp's {report.offloaded_layers} layers there on the CPU (--cpu-layers)"
    return [made(Suggestion, dict(
        change=f"a machine with {size:,} GiB of RAM (host_ram_gib {size}){also}: it keeps {need:,.1f} GiB there, "
               f"the host has {ram:,.0f}", fields=fields,
        device_peak_gib=report.device_peak_gib, fits=True, cost="the same speed; more host RAM"))]


# A single fix that does not fit is listed when it lowers the peak by at least the 0.1 GiB its line shows (so its
# two rounded numbers differ): "fp8 KV cache: 46.1 -> 46.1 GiB" for a 512-token prompt told the user nothing.
SHOWN_SAVING_GIB = 0.1


def suggestions(s: Scenario, m: ModelSpec, gpu: GpuSpec, report, timing: Timing | None = None) -> list[Suggestion]:
    """When ``s`` does not fit: a machine with enough RAM when only the host's RAM is short, the smallest
    combination that fits (when no single fix does, or only one that changes the method: then the smallest that
    keeps it, on the GPUs named), then every single fix that lowers the device peak by what
    its line shows (:data:`SHOWN_SAVING_GIB`), fitting ones first, on the GPUs named before more GPUs. ``timing``:
    where the lines' speeds come from (the plan the advice reads, :class:`Timing`); without it, no speed is said."""
    fixes = on_card(s, m, gpu, _wired_fixes(gpu) + candidate_fixes(s, m, report.max_batch_size, gpu), timing)
    if engine_for(s).advised_by_pool:
        return _vllm_suggestions(s, m, gpu, report, fixes)
    singles: list[tuple[Fix, bool, float, dict[str, Any]]] = []
    for fix in fixes:  # the peak estimate prints with the change (its plan's, at the layout it takes), where timed
        changed = _apply(s, (fix,))
        ok, peak = _fits(changed, m, gpu)
        peak = peak if fix.planned_gib is None or changed is None else fix.planned_gib
        if changed is not None and (ok or peak <= report.device_peak_gib - SHOWN_SAVING_GIB):
            singles.append((fix, ok, peak, _implied(s, changed, fix.change)))
    # fitting fixes: in the user's stack, on the GPUs named, keeping the job, then the method asked (a change of
    # method trains something else: session 20's walk, item 9, was told to QLoRA first when it asked to fully
    # fine-tune Qwen3-8B on four RTX 3090s, which ZeRO-3 with the optimizer offloaded does), gentlest first
    # (another stack after those, CPU offload last: _gentlest); the others: the biggest saving first
    singles.sort(key=lambda x: (not x[1], x[0].group == "stack", x[0].more_gpus, not x[0].keeps_job,
                                x[1] and x[0].group == "method", x[1] and x[0].group == "offload",
                                x[0].slowdown if x[1] else x[2]))
    found = [made(Suggestion, dict(
        change=f"{fix.label if fix.group == 'stack' else _with_implied(fix.label, implied)}: "
               f"{report.device_peak_gib:.1f} -> {peak:.1f} GiB",
        fields={k: v for k, v in fix.change.items() if v is not None}, device_peak_gib=peak, fits=ok,
        cost=fix.cost)) for fix, ok, peak, implied in singles]
    in_stack = [fix for fix, ok, _, _ in singles if ok and fix.keeps_job and not fix.more_gpus and fix.group != "stack"]
    if all(fix.group == "method" for fix in in_stack):
        # every fix that keeps the job: one that saves nothing alone (QLoRA when activations dominate) may be the
        # one a combination needs; when only another method fits alone (LoRA -> QLoRA), the combinations that keep
        # the user's method on the GPUs named (s18 walk: ZeRO-3 + checkpointing keeps bf16 LoRA on 2x 3090)
        pool = [fix for fix in fixes if fix.keeps_job and not (in_stack and (fix.group == "method" or fix.more_gpus))]
        combos = [smallest_combination(s, m, gpu, pool, timing)]
        if combos[0] is not None and set(combos[0].fields) & STACK_FIELDS:  # and the one with no extra library
            combos.append(smallest_combination(s, m, gpu, [f for f in pool if not set(f.change) & STACK_FIELDS],
                                               timing))
        found[:0] = [c for c in combos if c is not None]
    return _more_host_ram(s, gpu, report) + found


def _vllm_suggestions(s: Scenario, m: ModelSpec, gpu: GpuSpec, report, fixes: list[Fix]) -> list[Suggestion]:
    """vLLM and SGLang take their budget whatever the job, so a change shows in the KV pool it leaves and the
    requests that pool holds, not in the device peak: every single fix that grows the pool, fitting ones first (on
    the GPUs named, keeping the job, gentlest), then the largest pool."""
    def pool(r) -> tuple[float, int]:
        return r.kv_cache_pool_gib or 0.0, r.max_concurrency or 0

    before, held = pool(report)
    found = []
    for fix in fixes:
        changed = _apply(s, (fix,))
        if changed is None:
            continue
        try:
            r = memory_plan(resolve(changed, m)).memory
        except GpuplanError:
            continue
        gib, requests = pool(r)
        if r.fits or gib > before + 1e-3 or requests > held:
            found.append((fix, bool(r.fits), gib, requests, r.device_peak_gib, _implied(s, changed, fix.change),
                          changed.prompt_tokens + changed.output_tokens))
    found.sort(key=lambda x: (not x[1], x[0].more_gpus, not x[0].keeps_job, x[0].slowdown or 1.0 if x[1] else -x[2]))

    def pool_change(gib: float) -> str:  # the same GiB can hold more tokens (fp8 KV): say so only when it grows
        return f" (KV pool {before:.1f} -> {gib:.1f} GiB)" if gib > before + 0.05 else ""

    def effect(requests: int, tokens: int, gib: float) -> str:  # a smaller batch leaves the pool as it was
        if requests == held and gib <= before + 0.05:
            return f"the pool's {held:,} requests of {tokens:,} tokens hold it"
        return f"{held:,} -> {requests:,} concurrent requests of {tokens:,} tokens{pool_change(gib)}"

    return [made(Suggestion, dict(
        change=f"{_with_implied(fix.label, implied)}: {effect(requests, tokens, gib)}",
        fields={k: v for k, v in fix.change.items() if v is not None}, device_peak_gib=peak, fits=ok,
        cost=fix.cost)) for fix, ok, gib, requests, peak, implied, tokens in found]


def smallest_combination(s: Scenario, m: ModelSpec, gpu: GpuSpec, fixes: list[Fix], timing: Timing | None = None
                         ) -> Suggestion | None:
    """The fewest fixes that fit together (one per group), gentlest on speed first; fixes on the GPUs named are
    tried before those that add GPUs. With it, the largest micro-batch (keeping the global batch through
    accumulation) or batch, and the longest context, that still fit; its speed cost that of the plan of its fields
    (``timing``, as :func:`suggestions`)."""
    order = {f.label: i for i, f in enumerate(candidate_fixes(s, m, gpu=gpu))}
    # a stack switch is a single suggestion of its own, not one of several changes made together
    fixes = sorted(on_card(s, m, gpu, [f for f in fixes if f.group != "stack"]),
                   key=lambda f: order.get(f.label, len(order)))
    same = [f for f in fixes if not f.more_gpus]
    best = None
    for pool in (same, fixes):
        if pool and _all_at_once(s, m, gpu, pool):  # hopeless when even every group's best fix together fails
            best = _search(s, m, gpu, pool)
            if best:
                break
    if best is None:
        return None
    combo, peak = best
    fitted = _apply(s, combo)
    batch, max_len = _room(s, fitted, m, gpu, combo)
    max_batch = batch["max_batch_size"]
    parts = [f.label.split(" (")[0] if f.group != "micro-batch" else "micro-batch 1 with accumulation" for f in combo]
    given: dict[str, Any] = {}
    for f in combo:
        given.update(f.change)
    implied = _implied(s, fitted, given)
    label = _with_implied(" + ".join(parts), implied)
    room = []
    if max_batch and max_batch > 1:
        most = batch_words(max_batch, batch["max_batch_size_capped"])
        room.append(f"micro-batch up to {most}" if s.task == "train" else f"batch up to {most}")
    if max_len:
        room.append(f"{'seq_len' if s.task == 'train' else 'prompts'} up to {max_len:,} tokens")
    fields: dict[str, Any] = {k: v for k, v in given.items() if v is not None}  # what follows from them re-derives
    if max_batch and s.task == "train" and "micro_batch_size" in fields:  # exact global batch: a divisor of it
        total = s.micro_batch_size * s.grad_accum_steps
        fields.update(_accumulated(s, max(d for d in range(1, max_batch + 1) if total % d == 0)))
    return made(Suggestion, dict(
        change=f"{label}: {_peak(s, m, gpu):.1f} -> {peak:.1f} GiB" + (f"; with these, {' and '.join(room)} fit"
                                                                      if room else ""),
        fields=fields, device_peak_gib=peak, fits=True,
        cost=_combined_cost(combo, fields, timing), combination=True, **batch, max_seq_len=max_len))


def _combined_cost(combo: tuple[Fix, ...], fields: dict[str, Any], timing: Timing | None) -> str:
    """What a combination costs, read off the plan of the scenario asked with its ``fields`` (:func:`_stated`): for
    training, one figure for all the changes together (their effects are not additive: checkpointing's
    recomputation and a fused loss overlap), then what the fixes say besides speed and the CPU RAM they keep together;
    for serving, each fix's words (llama.cpp's CPU layers timed with the others: a split leaves fewer on the CPU).
    Without ``timing``, the fixes' words alone."""
    train = timing is not None and timing.before.setup.scenario.task == "train"
    stated = _stated(fields, timing) if timing is not None and can_time(timing.before.setup.gpu) and \
        (train or any(f.change.get("cpu_layers") for f in combo)) else None
    if not train or stated is None:
        cpu = _cpu_layers_words(stated[2].speed if stated else None)
        return "; ".join(cpu if f.change.get("cpu_layers") else f.cost for f in combo if f.cost)
    speed_words = ("slower", "faster", "speed", "step time", "time per token")  # every ratio_words wording
    others = [f.cost for f in combo if f.cost and not f.ram and not any(w in f.cost for w in speed_words)]
    ram = [_ram_words(stated[2].memory.cpu_gib)] if any(f.ram for f in combo) else []  # together they keep that
    return "; ".join(dict.fromkeys([stated[0], *others, *ram]))


def _peak(s: Scenario, m: ModelSpec, gpu: GpuSpec) -> float:
    return probe(s, m)[1]


def _all_at_once(s: Scenario, m: ModelSpec, gpu: GpuSpec, fixes: list[Fix]) -> bool:
    """Whether the strongest fix of every group (the one whose single peak is lowest), all applied together, fits:
    if not, no combination of fewer fixes will (a prune: every fix lowers memory or leaves it, given the others),
    except a change of method or weight format (QLoRA's fp32 residual can exceed LoRA's activations), so those
    groups are also tried as they are."""
    strongest: dict[str, tuple[float, Fix]] = {}
    for fix in fixes:
        peak = _fits(_apply(s, (fix,)), m, gpu)[1]
        if fix.group not in strongest or peak < strongest[fix.group][0]:
            strongest[fix.group] = (peak, fix)
    optional = [name for name in ("method", "weights") if name in strongest]
    for keep in itertools.product((True, False), repeat=len(optional)):
        skip = {name for name, kept in zip(optional, keep, strict=True) if not kept}
        chosen = tuple(f for name, (_, f) in strongest.items() if name not in skip)
        if _fits(_apply(s, chosen), m, gpu)[0]:
            return True
    return False


def _search(s: Scenario, m: ModelSpec, gpu: GpuSpec, fixes: list[Fix]) -> tuple[tuple[Fix, ...], float] | None:
    """The first fitting combination of 2..MAX_COMBINED fixes from distinct groups, by size then slowdown."""
    return fewest(fixes, lambda combo: _fits(_apply(s, combo), m, gpu), order=_gentlest)


def _gentlest(combo: tuple[Fix, ...]) -> tuple[int, bool, float]:
    """A combination's place in the search: on the GPUs named first, then without CPU offload, then by the product
    of its fixes' slowdowns. Offload comes last as a rule, not by its slowdown: the speed model times it alone at
    the scenario's micro-batch, where a large step hides the copies, and the micro-batch 1 it is combined with
    exposes them (s27 walk: Llama-3-8B LoRA 8 x 4,096 on an A100 40GB, micro-batch 1 + ZeRO-3 offload, 2.2x the
    step time, ranked before checkpointing + the fused loss, 19 % slower)."""
    return (sum(f.more_gpus for f in combo), any(f.group == "offload" for f in combo),
            math.prod(f.slowdown or 1.0 for f in combo))


def fewest(fixes: list[Fix], fits: Callable[[tuple[Fix, ...]], tuple[bool, float]], *,
           order: Callable[[tuple[Fix, ...]], Any] | None = None) -> tuple[tuple[Fix, ...], float] | None:
    """The first combination of 2..MAX_COMBINED ``fixes`` from distinct groups (fixes of one group are
    alternatives: one of them at most) that ``fits``, by size, then by ``order`` (the fixes' own order without
    one: gentlest first), with its peak in GiB; None when none does within MAX_TRIES."""
    tries = 0
    for size in range(2, MAX_COMBINED + 1):
        combos = [c for c in itertools.combinations(fixes, size) if len({f.group for f in c}) == size]
        if order is not None:
            combos.sort(key=order)
        for combo in combos:
            tries += 1
            if tries > MAX_TRIES:
                return None
            ok, peak = fits(combo)
            if ok:
                return combo, peak
    return None


def _accumulated(s: Scenario, micro: int) -> dict[str, int]:
    """Micro-batch ``micro`` with the accumulation that keeps the global batch (rounded up)."""
    total = s.micro_batch_size * s.grad_accum_steps
    return {"micro_batch_size": micro, "grad_accum_steps": max(math.ceil(total / micro), 1)}


def _room(s: Scenario, fitted: Scenario, m: ModelSpec, gpu: GpuSpec, combo: tuple[Fix, ...]) \
        -> tuple[dict[str, Any], int | None]:
    """The largest micro-batch (up to the one asked for when the combination shrank it: then it is no floor) and
    the longest context that still fit with the combination: (:func:`.edge.batch_fields`, the context)."""
    def fits(**change) -> tuple[bool, float]:
        return fits_with(fitted, m, change)

    usable = gpu.usable_gib
    if s.task == "train":
        shrunk = any(f.group == "micro-batch" for f in combo)
        batch = largest(lambda n: fits(**_accumulated(s, n)), s.micro_batch_size, usable) if shrunk else \
            largest(lambda n: fits(micro_batch_size=n), BATCH_LIMIT, usable)
        best = fitted.model_copy(update=_accumulated(s, batch)) if shrunk and batch else fitted
        limit = max(m.max_context or 0, 131_072)
        length = largest(lambda n: fits_with(best, m, {"seq_len": n}), limit, usable)
        return batch_fields(batch, math.inf if shrunk else BATCH_LIMIT), length
    return (batch_fields(largest(lambda n: fits(batch_size=n), BATCH_LIMIT, usable)),
            largest(lambda n: fits(prompt_tokens=n), max(m.max_context or 0, 131_072), usable))
