"""The formulas of a module plan's memory (a diffusion pipeline, an encoder-decoder, an encoder): each part of the
peak, the three levels, the card's usable memory and the headroom, as the page opens a decoder LLM's.

The rules are those of :mod:`gpuplan.memory.modules` (each cited there), written out with the scenario's values on
the profiles the plan read (:func:`gpuplan.plan.modules.profiles`); each formula's ``computed`` is its own arithmetic,
which tests/web/test_web_modules.py holds to the plan's number, so a changed estimator cannot leave a stale formula.
"""

from __future__ import annotations

from types import SimpleNamespace

from .. import overheads as oh
from ..memory import modules as mm
from ..model.profile import FP8_ALL, Profile, storage_format, text_encoder_storage
from ..plan.modules import ModulePlan, profiles
from ..scenario.modules import (
    ModuleJob,
    frozen_text_params,
    reads_kind,
    text_ways,
    trained_text_params,
    trains_encoder,
)
from . import memory as mf
from .accuracy import module_accuracy
from .formula import GIB, Constant, Formula, count

SOURCE = "gpuplan/memory/modules.py"
# which group of bench/modules.py's published rows a plan's numbers are measured against (the accuracy tables')
GROUPS = {"diffusion-generate": "diffusion generation", "diffusion-train": "diffusion training"}


def accuracy_group(job: ModuleJob) -> str | None:
    """The group of published rows that measure ``job``'s kind of plan: a text encoder's training is measured by the
    BERT-large fine-tuning rows; None for a vision encoder, a text encoder's inference or a user's module, which no
    published row measures."""
    if job.kind in GROUPS:
        return GROUPS[job.kind]
    if reads_kind(job.spec) == "text-encoder":
        return "text encoders" if job.task == "train" else None
    return "encoder-decoders" if job.spec.kind == "encoder-decoder" else None


def module_memory(plan: ModulePlan) -> dict[str, Formula]:
    """Formulas for every memory number of ``plan``, keyed as a decoder LLM's (``memory.weights_gib``...)."""
    s, job, gpu = plan.module.scenario, plan.module.job, plan.module.gpu
    main, parts = profiles(job)
    mem = plan.memory
    train = job.task == "train"
    numbers = {"memory.weights_gib": _weights(s, job, main, parts, plan)}
    if train:
        numbers["memory.gradients_gib"], numbers["memory.optimizer_gib"] = _states(s, job, main, parts, plan)
    numbers["memory.activations_gib"] = _activations(job, main, parts, plan)
    for name, value in mem.other.items():
        numbers[f"memory.other.{name}"] = _other(s, job, main, parts, name, value)
    x = SimpleNamespace(s=s, r=plan, gpu=gpu)  # what the decoder's level formulas read of a plan
    numbers["memory.allocated_peak_gib"] = mf.allocated(x)
    slack = oh.ALLOCATOR_SLACK_TRAIN if train else oh.ALLOCATOR_SLACK_INFER
    numbers["memory.reserved_peak_gib"] = _reserved(mem, slack)
    numbers["memory.device_peak_gib"] = mf.device(x)
    if gpu is not None and mem.capacity_gib is not None:
        numbers["memory.capacity_gib"] = mf.capacity(x)
        numbers["memory.headroom_gib"] = mf.headroom(x)
    measured = module_accuracy("memory", accuracy_group(job))
    for key, f in numbers.items():
        if key != "memory.capacity_gib":  # the card's own number, not an estimate
            f.accuracy = measured
    return numbers


def _stored(main: Profile, params: int, job: ModuleJob) -> tuple[float, str]:
    """The main component's weights in the stored format, and the arithmetic in words."""
    high = mm.BYTES[job.dtype]
    if job.weights == "16bit":
        return params * high, f"{count(params)} x {high} B"
    stored = mm.stored_weight_bytes(main, params, job.weights, job.dtype)
    return stored, (f"{count(params)} parameters, linears and convolutions in {storage_format(job.weights)}, the "
                    f"rest in {job.dtype}: {stored / GIB:,.2f} GiB")



def _reserved(mem, slack: float) -> Formula:
    """reserved = allocated x (1 + slack), and where a VAE decode is the peak the blocks it holds reserved beyond its
    allocations (the decode's working memory times 1 - :data:`~gpuplan.overheads.VAE_DECODE_ALLOCATED_SHARE`, with
    the slack): memory/modules.py generation_memory."""
    reserved = mem.allocated_peak_gib * (1 + slack) + mem.cached_gib
    formula = "reserved = allocated x (1 + allocator slack)"
    sub = f"{mem.allocated_peak_gib:,.2f} x {1 + slack:g}"
    constants = [Constant(name="allocator slack", value=f"{slack:.0%}", source="overheads.ALLOCATOR_SLACK_*")]
    if mem.cached_gib > 0.0005:
        formula += " + the blocks the VAE decode holds reserved between its activations"
        sub += f" + {mem.cached_gib:,.2f}"
        constants.append(Constant(name="VAE decode allocated share", value=f"{oh.VAE_DECODE_ALLOCATED_SHARE:.3f}",
                                  source="overheads.VAE_DECODE_ALLOCATED_SHARE (InvokeAI pull 9305's decodes)"))
    return Formula(label="reserved peak", value=mem.reserved_peak_gib, unit="GiB", computed=reserved,
                   formula=formula + " (= torch.cuda.max_memory_reserved)",
                   substituted=f"{sub} = {reserved:,.2f} GiB", constants=constants)

def _weights(s, job: ModuleJob, main: Profile, parts: dict[str, Profile], plan: ModulePlan) -> Formula:
    c = job.spec.main
    value = plan.memory.weights_gib
    if job.task == "train" and job.trained == "all":
        b = 4 if s.precision.endswith("-mixed") else mm.BYTES[job.dtype]
        why = "fp32 master weights under autocast" if b == 4 and job.dtype != "fp32" else f"weights in {job.dtype}"
        return Formula(label="weights", value=value, unit="GiB", computed=c.params * b / GIB,
                       formula=f"W = {b} B x P ({why}; the {c.cls} is trained whole)",
                       substituted=f"{b} x {count(c.params)} = {c.params * b / GIB:,.2f} GiB")
    if job.task == "train":
        stored, text = _stored(main, c.params, job)
        trainable = mm.lora_params(main, job.lora_roles, job.lora_rank)
        adapter = mm.BYTES["fp32" if s.adapter_dtype == "fp32" else job.dtype]
        total = stored + trainable * adapter
        return Formula(label="weights", value=value, unit="GiB", computed=total / GIB,
                       formula=f"W = the {c.cls}'s parameters x bytes in their stored format + LoRA adapters "
                               "(r x (in + out) per adapted linear) x bytes",
                       substituted=f"{text} + {trainable:,} x {adapter} B = {total / GIB:,.2f} GiB")
    if job.kind == "diffusion-generate" and job.offload != "none":
        return _offloaded(job, main, parts, plan)
    stored, text = _stored(main, c.params, job)
    return Formula(label="weights", value=value, unit="GiB", computed=stored / GIB,
                   formula=f"W = the {c.cls}'s parameters x bytes in their stored format"
                           + (" (the other components: under other)" if len(job.spec.components) > 1 else ""),
                   substituted=f"{text} = {stored / GIB:,.2f} GiB")


def _offloaded(job: ModuleJob, main: Profile, parts: dict[str, Profile], plan: ModulePlan) -> Formula:
    """diffusers' CPU offload: what is on the card at the peak phase (one model, or one layer)."""
    phase = plan.memory.peak_phase
    who = {"denoise": "denoiser", "VAE decode": "vae"}.get(phase) or phase.removesuffix(" encode")
    if job.offload == "model":
        c = job.spec.main if who == "denoiser" else next(x for x in job.spec.components if x.name == who)
        held = _resident(job, main, parts, c.name)
        rule, text = "one model on the card at a time (enable_model_cpu_offload)", f"{c.name} {held / GIB:,.2f} GiB"
        names = [te.name for te in job.spec.role("text_encoder")]
        if beside := mm.beside_under_offload(job, who, {n: _resident(job, main, parts, n) for n in names}):
            held += beside
            rule += (f", and {names[-1]}, which the first encoder's hook leaves on the card while the negative prompt "
                     "is encoded")
            text += f" + {names[-1]} {beside / GIB:,.2f} GiB"
    else:
        held = mm.largest_linear(main, parts, who, job)
        rule = "one layer on the card at a time (enable_sequential_cpu_offload): the component's largest linear"
        text = f"{who}'s largest linear {held / 2**20:,.1f} MiB"
    return Formula(label="weights", value=plan.memory.weights_gib, unit="GiB", computed=held / GIB,
                   formula=f"W = the weights of what runs at the {phase} peak, {rule}",
                   substituted=f"{text} = {held / GIB:,.3f} GiB", note="the rest waits in CPU memory")


def _resident(job: ModuleJob, main: Profile, parts: dict[str, Profile], name: str) -> float:
    """A generation component's weights on the card (memory/modules.generation_memory's ``resident``)."""
    return mm.pipeline_weight_bytes(job, next(x for x in job.spec.components if x.name == name), main, parts)


def _states(s, job: ModuleJob, main: Profile, parts: dict[str, Profile], plan: ModulePlan) -> tuple[Formula, Formula]:
    """The gradients and optimizer states of what is trained (memory/modules.training_memory)."""
    c, mem = job.spec.main, plan.memory
    mixed = s.precision.endswith("-mixed")
    if job.trained == "all":
        trainable, what = c.params, f"the {c.cls}'s {count(c.params)} parameters"
        state = 4 if mixed or job.dtype == "fp32" else 2
        grad, moments = state, 2
        factored = mm.factored_elements(main, c.params)
    else:
        trainable = mm.lora_params(main, job.lora_roles, job.lora_rank)
        what = f"{trainable:,} adapter parameters"
        grad, state, moments = mm.lora_widths(s, job)
        factored = trainable // max(job.lora_rank, 1) * 2
        if text := sum(mm.text_lora_params(job, parts, te) for te in job.spec.role("text_encoder")):
            trainable += text  # the trained text encoders' adapters (memory.modules.text_encoders)
            factored += text // max(job.lora_rank, 1) * 2
            what += f" (the text encoders' {text:,} with them)"
    if job.trained == "all" and (whole := [te for te in job.spec.role("text_encoder") if trains_encoder(job, te)]):
        text = sum(trained_text_params(job, te) for te in whole)  # memory.modules.text_encoders
        trainable += text
        factored += sum(mm.factored_elements(parts[f"text-encoder:{te.name}"], te.params)
                        - frozen_text_params(job, te).factored for te in whole)
        what += f" and the text encoders' {count(text)}"
    gradients = Formula(label="gradients", value=mem.gradients_gib, unit="GiB", computed=trainable * grad / GIB,
                        formula="G = bytes per gradient x trainable parameters",
                        substituted=f"{grad} B x {what} = {trainable * grad / GIB:,.2f} GiB")
    if job.grads_freed and job.trained == "all" and mem.peak_phase != mm.END_OF_BACKWARD:
        gradients = Formula(label="gradients", value=mem.gradients_gib, unit="GiB", computed=0.0,
                            formula="G = 0 at a peak before the backward: the trainer frees the gradients after each "
                                    "optimizer step (zero_grad(set_to_none=True))",
                            substituted=f"{grad} B x {what} = {trainable * grad / GIB:,.2f} GiB, held from the "
                                        f"backward on; the peak ({mem.peak_phase}) comes before it: 0 GiB")
    total = mm.optimizer_bytes(s.optimizer, trainable, state, factored, moments)
    rules = {"adamw": (f"{moments} states x {state} B x {trainable:,}", "AdamW keeps two moments per parameter"
                       + (", SimpleTuner's adamw_bf16 a Kahan-summation buffer too" if moments == 3 else "")),
             "adamw-8bit": (f"{trainable:,} x (2 x 1 B + 2 x 4 B / {oh.BNB_STATE_BLOCK})",
                            "bitsandbytes 8-bit AdamW: one byte per moment + an fp32 absmax per block"),
             "lion": (f"1 moment x {state} B x {trainable:,}", "Lion keeps one moment"),
             "sgd-momentum": (f"1 buffer x {state} B x {trainable:,}", "SGD with momentum keeps one buffer"),
             "adafactor": (f"{state} B x {factored:,} factored elements",
                           "Adafactor: a row and a column per matrix (Shazeer & Stern 2018)"),
             "sgd": ("0", "plain SGD keeps no state")}
    rules["paged-adamw-8bit"] = rules["adamw-8bit"]
    text, why = rules.get(s.optimizer, (f"{total / GIB:,.2f} GiB", s.optimizer))
    optimizer = Formula(label="optimizer states", value=mem.optimizer_gib, unit="GiB", computed=total / GIB,
                        formula=f"O = state bytes x trainable parameters ({why})",
                        substituted=f"{text} = {total / GIB:,.2f} GiB")
    return gradients, optimizer


def _activations(job: ModuleJob, main: Profile, parts: dict[str, Profile], plan: ModulePlan) -> Formula:
    """The largest phase's transient: the main component's recorded peak (and what trained text encoders keep for
    their backward), or another component's pass."""
    mem = plan.memory
    way = job.way if job.task == "train" else "inference"
    sizes = job.shapes[0]
    scale = mm.BYTES[job.dtype] / 2
    own = main.activation_bytes(way, job.batch, sizes) * scale
    eager = 0.0
    if job.attention == "eager":
        eager = mm.eager_scores(main, job.batch, sizes, job.dtype, job.task == "train" and not way.endswith("-gc"))
    kept = mm.text_kept_bytes(job, parts) if job.kind == "diffusion-train" else 0.0
    main_phase = {"diffusion-generate": "denoise", "infer": "forward"}.get(job.kind, "forward and backward")
    computed = (own + eager + kept) / GIB if mem.peak_phase == main_phase else mem.phases_gib.get(mem.peak_phase)
    shown = ", ".join(f"{k} {v:,.2f}" for k, v in mem.phases_gib.items())
    constants = [Constant(name=f"{main.module} profile", value=", ".join(
        f"{k} {v}" for k, v in main.recorded_with.items()), source="gpuplan/model/profile.py "
        "(the real class recorded on fake tensors)")]
    decode = ""
    if "VAE decode" in mem.phases_gib:
        factor = mm.decode_working_factor(job.vae_dtype)
        name = "VAE_DECODE_WORKING_FACTOR" + ("_FP32" if job.vae_dtype == "fp32" else "")
        decode = (f"; VAE decode: the VAE's recorded activation peak x {factor:.2f}, what a decode in {job.vae_dtype} "
                  "reserves on CUDA beyond its tensors (cuDNN workspaces, allocator blocks), "
                  f"x {oh.VAE_DECODE_ALLOCATED_SHARE:.3f} of it allocated")
        constants.append(Constant(name="VAE decode working factor", value=f"{factor:.2f}",
                                  source=f"overheads.{name} (InvokeAI's measured decodes)"))
    return Formula(label="activations", value=mem.activations_gib, unit="GiB", computed=computed,
                   formula=f"A = the transient of the peak phase (the largest{_offload_words(job)}); "
                           f"{main_phase}: the {main.module}'s activation peak "
                           f"recorded on fake tensors ({way}"
                           + (", fp32 weights under autocast: its 16-bit weight copies in it" if main.under_autocast
                              else "") + f") at batch {job.batch} and sizes "
                           f"{', '.join(f'{v:,}' for v in sizes)}" + (" x 2 (fp32)" if scale == 2 else "")
                           + (" + eager attention's score matrices" if eager else "")
                           + (" + what the trained text encoders' forward keeps for their backward (their recorded "
                              f"{text_ways(job)} passes)" if kept else "") + decode,
                   substituted=f"{main_phase}: {own / GIB:,.3f}" + (f" + {eager / GIB:,.3f}" if eager else "")
                               + (f" + {kept / GIB:,.3f}" if kept else "")
                               + f" GiB; phases (GiB): {shown}; the peak is {mem.peak_phase}",
                   constants=constants)


def _offload_words(job: ModuleJob) -> str:
    return ", with the weights CPU offload leaves on the card in that phase" if job.kind == "diffusion-generate" \
        and job.offload != "none" else ""


def _other(s, job: ModuleJob, main: Profile, parts: dict[str, Profile], name: str, value: float) -> Formula:
    """A component's weights held beside the main one, autocast's copies, bitsandbytes' load cache."""
    by_name = {c.name: c for c in job.spec.components}
    computed, formula, text = None, name, f"{value:,.3f} GiB"
    held = name.removesuffix(" weights")
    if name.endswith("autocast 16-bit weight copies"):  # the denoiser's, or a trained text encoder's
        own = name.split(" ", 1)[0]
        w = mm.linear_weights(parts[f"text-encoder:{own}"] if own in by_name else main)
        w -= frozen_text_params(job, by_name[own]).weights if own in by_name else 0  # no copies of frozen ones
        computed, formula, text = 2 * w / GIB, "2 B x the linears' and convolutions' weights", f"2 x {count(w)}"
    elif name.startswith("bitsandbytes' load cache"):
        quantized = job.spec.main.params + sum(te.params for te in job.spec.role("text_encoder")
                                               if te.cls == "T5EncoderModel")
        computed = oh.BNB_LOAD_CACHE_FRACTION * quantized * 2 / GIB
        formula = "fraction x the quantized components' 16-bit bytes (overheads.BNB_LOAD_CACHE_FRACTION)"
        text = f"{oh.BNB_LOAD_CACHE_FRACTION} x {count(quantized)} x 2 B"
    elif held != name and held in by_name:  # generation: the pipeline's other models on the card
        c = by_name[held]
        computed = _resident(job, main, parts, held) / GIB
        stored = job.weights if c.cls == "T5EncoderModel" and job.weights in ("nf4", "fp4", "int8") else job.dtype
        formula = f"the {c.cls}'s parameters x bytes in {storage_format(stored) if stored != job.dtype else stored}"
        text = f"{count(c.params)} parameters"
    elif name.split(" ", 1)[0] in by_name or name.startswith("VAE ("):  # training: frozen models on the card
        c = job.spec.role("vae")[0] if name.startswith("VAE (") else by_name[name.split(" ", 1)[0]]
        dtype = job.vae_dtype if c.role == "vae" else job.dtype
        if job.trained == "all" and trains_encoder(job, c) and s.precision.endswith("-mixed"):
            dtype = "fp32"  # trained whole under autocast: fp32 weights (memory.modules.text_encoders)
        computed = mm.component_bytes(c, dtype) / GIB
        formula = f"the {c.cls}'s parameters x bytes in {dtype}"
        text = f"{count(c.params)} x {mm.BYTES[dtype]} B"
        if c.role == "text_encoder" and text_encoder_storage(job.weights, c.cls) != "16bit":
            computed = mm.text_weight_bytes(job, c, parts[f"text-encoder:{c.name}"]) / GIB
            how = "kohya's --fp8_base" if job.weights == FP8_ALL else "ai-toolkit's quantize_te, quanto qfloat8"
            formula = f"the {c.cls}'s linear weights x 1 B ({how}), the rest x bytes in {dtype}"
            text = f"{count(c.params)} parameters"
        if adapters := mm.text_lora_params(job, parts, c):
            adapter = mm.BYTES["fp32" if s.adapter_dtype == "fp32" else job.dtype]
            computed += adapters * adapter / GIB
            formula += f", and its LoRA adapters: r x (in + out) per adapted linear, r {job.lora_rank}"
            text += f" + {adapters:,} x {adapter} B"
    sub = f"{text} = {computed:,.3f} GiB" if computed is not None else text
    return Formula(label=name, value=value, unit="GiB", formula=formula, substituted=sub, computed=computed,
                   note="" if computed is not None else SOURCE)
