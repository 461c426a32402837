"""A scenario for a model that is not a decoder LLM, resolved into the job its memory and speed are computed for:
which way the main component runs (inference; training with all weights or LoRA adapters, with or without
checkpointing), at which batch and sizes, in which dtypes, with which components on the GPU; and every default
taken, in words.

- **Diffusion training** (``task train``): the denoiser is trained (``method full``; ``lora`` / ``qlora``: adapters on
  the attention projections for diffusers' scripts, on every linear of the transformer blocks for kohya,
  SimpleTuner and ai-toolkit, unless ``lora_targets`` names them) on ``micro_batch_size`` images per step, twice
  that with DreamBooth's ``prior_preservation``, at each aspect bucket of ``resolution`` (latents 8x smaller); the
  VAE encodes each batch unless ``cache_latents``; the text encoders run every step when ``frozen``. The trainer
  (``stack``) sets the defaults: diffusers' scripts unless another is named.
- **Diffusion generation** (``task infer``): ``batch_size`` images per call, ``steps`` denoising steps, the
  denoiser's batch doubled by classifier-free guidance (``cfg``), the prompt encoded once, the latents decoded once
  (the VAE in fp32 where its config says ``force_upcast`` and the pipeline runs fp16, as diffusers' pipelines do).
- **Encoder-decoders and encoders**: ``seq_len`` source tokens and ``decoder_tokens`` target tokens per sample
  (Whisper: its 30-second window, 1,500 encoder frames, and the transcript's tokens); images at the config's size.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from statistics import NormalDist
from typing import Any

from .. import overheads as oh
from ..errors import GpuplanError
from ..model.diffusers import SIDE_PIXELS, nearest_sides, side_rule, uneven_levels, vae_factor
from ..model.encoders import ATTENTION_LEAVES
from ..model.families import FAMILIES, TEXT_ENCODERS
from ..model.module_spec import ModuleSpec
from .diffusion_stacks import DIFFUSION_STACKS, diffusion_stack_for
from .fields import Scenario, release_numbers

STORED = {None: "16bit", "none": "16bit"}
# the most T5 tokens a FLUX or SD3 pipeline encodes per prompt: their check_inputs raise "`max_sequence_length` cannot
# be greater than 512" (diffusers pipelines/flux/pipeline_flux.py, pipelines/stable_diffusion_3/
# pipeline_stable_diffusion_3.py)
T5_MAX_TOKENS = 512


def _trainer_base(s: Scenario, weights: str | None) -> None:
    """Refuse a quantized base the trainer cannot load (its profile's
    :attr:`~.diffusion_stacks.DiffusionStack.bases`), naming the trainers that can."""
    allowed = diffusion_stack_for(s.stack).bases
    if weights in (None, "none", "16bit") or allowed is None or weights in allowed:
        return
    others = [p.name for p in DIFFUSION_STACKS.values() if p.bases is not None and weights in p.bases]
    raise GpuplanError(f"{diffusion_stack_for(s.stack).label} trains on a 16-bit or {' or '.join(allowed)} base, "
                       f"not {weights.upper() if weights == 'nf4' else weights}: set quant {allowed[0]}"
                       + (f", or stack {' or '.join(others)}" if others else ""))
# the roles of a CLIP text encoder's linears each trainer's LoRA preset adapts when it trains the text encoders
# (gpuplan.model.diffusers.text_lora_role: attention = q, k, v and out projections; block = the MLP's fc1, fc2)
TEXT_LORA_ROLES = {"attention": ("attention",), "all": ("attention", "block")}


@dataclass(frozen=True, kw_only=True)
class ModuleJob:
    """What one step of a module scenario runs (see the module docstring). ``shapes``: the main component's sizes
    per aspect bucket (its profile's variables), the first the largest; ``pixels``: (width, height) per bucket."""

    kind: str  # diffusion-train | diffusion-generate | train | infer
    spec: ModuleSpec
    task: str
    way: str
    trained: str  # all | none
    lora_roles: tuple[str, ...] = ()
    lora_rank: int = 16
    batch: int = 1
    samples_per_step: int = 1
    shapes: tuple[tuple[int, ...], ...] = ()
    pixels: tuple[tuple[int, int], ...] = ()
    dtype: str = "bf16"
    weights: str = "16bit"
    text_encoders: str = "cached"
    text_lora: str = ""  # trained text encoders' LoRA: the trainer's preset on CLIP (attention | all), else ""
    text_trained: tuple[str, ...] = ()  # the text encoders trained (component names): LoRA, or whole in a full job
    text_last_frozen: tuple[str, ...] = ()  # trained whole but for their last layer and final norm (kohya's SDXL)
    grads_freed: bool = False  # zero_grad(set_to_none=True): no gradients before the step's backward
    cache_latents: bool = True
    vae_dtype: str = "bf16"
    steps: int = 1
    cfg: bool = False
    offload: str = "none"
    swapped: tuple[int, int] = (0, 0)  # kohya's --blocks_to_swap: FLUX's (double, single) blocks held in CPU memory
    attention: str = "sdpa"  # sdpa (and flash, xformers: fused, no score matrix kept) | eager (scores kept)
    autocast: bool = False  # *-mixed: a denoiser's or text encoder's full fine-tune, read from its autocast profile
    optimizer_impl: str = "fused"  # AdamW's: fused | foreach | for-loop (:func:`optimizer_impl`)
    text_tokens: int = 77
    t5_tokens: int = 0
    windows: int = 0  # Whisper inference on a recording (audio_seconds): its 30 s windows, batch at a time
    timestamps: bool = False  # Whisper inference with return_timestamps=True (WhisperTimeStampLogitsProcessor)
    transformers: tuple[int, int, int] | None = None  # Whisper inference's transformers release (None: current)
    notes: tuple[str, ...] = ()
    fields: dict[str, Any] = field(default_factory=dict)


# What a module's plan reads (this module, gpuplan.plan.modules, gpuplan.memory.modules and the builder's offers):
# every kind's fields, then each kind's own. The one list: the resolver refuses a field given outside it
# (gpuplan.plan.refusals.module_refusal) and the page's form shows these for the model (gpuplan.explain.forms).
COMMON_READS = ("model", "task", "method", "stack", "precision", "quant", "micro_batch_size", "batch_size",
                "grad_checkpointing", "grad_accum_steps", "optimizer", "adapter_dtype", "lora_rank", "lora_targets",
                "attention", "train_steps", "tf32", "torch_version", "gpu", "wired_limit_mb", "provider", "pricing",
                "max_price_age_days", "include_low_confidence", "mtbi_hours", "disk_gbs")
# a transformers model's trainer: the AdamW implementation, whose default is the release's (:func:`optimizer_impl`)
TRAINER_READS = ("optimizer_impl", "transformers_version")
KIND_READS = {
    # seq_len: the T5 tokens of a prompt, for the pipelines with a T5 encoder only (resolve_diffusion)
    "diffusion": ("resolution", "seq_len", "inference_steps", "cfg", "cpu_offload", "cache_latents", "text_encoders",
                  "set_grads_to_none", "prior_preservation", "blocks_to_swap"),
    # seq_len: the transcript's tokens when decoder_tokens is unset (resolve_model)
    "whisper": ("seq_len", "output_tokens", "decoder_tokens", "audio_seconds", "timestamps", *TRAINER_READS),
    "encoder-decoder": ("seq_len", "prompt_tokens", "output_tokens", "decoder_tokens", *TRAINER_READS),
    "encoder": TRAINER_READS,
    # a text encoder's sequence: seq_len in training, prompt_tokens in inference (resolve_model)
    "text-encoder": ("seq_len", "prompt_tokens", *TRAINER_READS),
}
# your own module (gpuplan.sim.module.module_spec): its build() fixes the batch and the sizes, and it is trained
# whole, so its plan reads what runs the example input and what prices it
MODULE_READS = ("model", "task", "precision", "optimizer", "train_steps", "gpu", "wired_limit_mb", "provider",
                "pricing", "max_price_age_days", "include_low_confidence", "mtbi_hours", "disk_gbs")


# the fields among those that one task's plan reads only (resolve_diffusion, resolve_model: a generation reads no
# trainer, a training job no denoising steps)
TRAIN_READS = frozenset({"method", "stack", "micro_batch_size", "grad_checkpointing", "grad_accum_steps", "optimizer",
                         *TRAINER_READS, "adapter_dtype", "lora_rank", "lora_targets", "train_steps", "cache_latents",
                         "text_encoders", "set_grads_to_none", "prior_preservation", "mtbi_hours", "disk_gbs"})
INFER_READS = frozenset({"batch_size", "inference_steps", "cfg", "cpu_offload", "output_tokens", "prompt_tokens"})
# a Whisper transcription reads the transformers release too: its log-mel features and its timestamp processor
# (speed.modules.log_mel_s, timestamps_host_s)
WHISPER_INFER_READS = frozenset({"transformers_version"})


def reads(spec: ModuleSpec, task: str | None = None) -> tuple[str, ...]:
    """The scenario fields the plan of module ``spec`` reads (:data:`COMMON_READS`, then its kind's own), for
    ``task`` (train, infer; None: either). A diffusion pipeline without a T5 encoder (SD, SDXL) reads no seq_len,
    its prompt is CLIP's 77 tokens; an encoder-decoder's inference reads its source as prompt_tokens."""
    if spec.kind == "module":
        return tuple(name for name in MODULE_READS if task != "infer" or name not in TRAIN_READS)
    kind = reads_kind(spec)
    own = KIND_READS[kind]
    if (kind == "diffusion" and not spec.defaults.get("t5_tokens")) or \
            (kind in ("encoder-decoder", "text-encoder") and task == "infer"):
        own = tuple(name for name in own if name != "seq_len")
    other = INFER_READS if task == "train" else TRAIN_READS if task == "infer" else frozenset()
    if kind == "whisper" and task == "infer":
        other = other - WHISPER_INFER_READS
    return tuple(name for name in (*COMMON_READS, *own) if name not in other)


def reads_kind(spec: ModuleSpec) -> str:
    """The kind whose fields a module's plan reads (:data:`KIND_READS`): Whisper's and the text encoders' apart."""
    if spec.family == "whisper":
        return "whisper"
    return "text-encoder" if spec.kind == "encoder" and _variables(spec) == ("encoder_tokens",) else spec.kind


def parse_resolution(text: str) -> list[tuple[int, int]]:
    """``1024`` -> [(1024, 1024)]; ``1216x832`` -> [(1216, 832)] (width x height); buckets separated by commas."""
    out = []
    for part in str(text).replace(" ", "").split(","):
        match = re.fullmatch(r"(\d{2,5})(?:[x*](\d{2,5}))?", part)
        if not match:
            raise GpuplanError(f"resolution {text!r}: give pixels as 1024, WIDTHxHEIGHT (1216x832) or buckets "
                               "separated by commas (1024x1024,1216x832)")
        w = int(match[1])
        h = int(match[2] or match[1])
        low, high = SIDE_PIXELS
        if not (low <= w <= high and low <= h <= high):
            raise GpuplanError(f"resolution {part}: each side must be {low}-{high} pixels")
        out.append((w, h))
    return out


# why a FLUX training side must be a multiple of 16 where a generation's is rounded (side_rule)
TRAINING_PACKS = "; FLUX training packs them as the VAE makes them"


def fitted_buckets(buckets: list[tuple[int, int]], spec: ModuleSpec, task: str, notes: list[str]) \
        -> list[tuple[int, int]]:
    """The buckets held to the denoiser's rule for a side (:func:`~gpuplan.model.diffusers.side_rule`): a side off
    it is refused naming the nearest valid ones, but where diffusers' pipeline rounds a generation's side down
    (FLUX.1), which is then planned, said in ``notes``."""
    rule, factor = side_rule(spec), vae_factor(spec)
    out = []
    for w, h in buckets:
        if not (w % rule.step or h % rule.step):
            out.append((w, h))
            uneven = uneven_levels(spec, (h // factor, w // factor))
            if uneven:
                notes.append(f"{w}x{h}: latents of {w // factor}x{h // factor} do not halve evenly, and "
                             f"{spec.main.cls}'s lower levels round up (sides {', '.join(map(str, uneven))}): a "
                             "few per cent more work than planned (on fake tensors at 1000 px: SDXL's forward FLOPs "
                             "+3.8 % and a LoRA step's activation peak +3.5 %, SD 1.5's FLOPs +1.5 %)")
            continue
        if rule.rounds_down and task == "infer":
            made = (w - w % rule.step, h - h % rule.step)
            notes.append(f"resolution {w}x{h} makes {made[0]}x{made[1]} images: {rule.reason}, and diffusers' "
                         f"pipeline rounds each side down to a multiple of {rule.step}")
            out.append(made)
            continue
        bad = w if w % rule.step else h
        raise GpuplanError(f"resolution {w}x{h}: for {spec.main.cls} each side must be a multiple of {rule.step} "
                           f"({rule.reason}{TRAINING_PACKS if rule.rounds_down else ''}), so not {bad}; the nearest: "
                           f"{nearest_sides(bad, rule.step)}")
    return out


def _lora_roles(s: Scenario, stack: str) -> tuple[tuple[str, ...], str]:
    """The roles LoRA adapts and the way's suffix: the trainer's default, or what ``lora_targets`` names."""
    if "lora_targets" in s.model_fields_set:
        if s.lora_targets == "all-linear":
            return ("attention", "block"), "all"
        names = set(s.lora_targets)
        attention = {"to_q", "to_k", "to_v", "to_out.0", "add_q_proj", "add_k_proj", "add_v_proj", "to_add_out",
                     "q_proj", "v_proj", "k_proj", "q", "v", "k", "query", "value"}
        if names <= attention:
            return ("attention",), "attention"
        return ("attention", "block"), "all"
    preset = diffusion_stack_for(stack).lora_preset
    return (("attention",), "attention") if preset == "attention" else (("attention", "block"), "all")


def _dtype(s: Scenario) -> str:
    return "fp32" if s.precision == "fp32" else ("fp16" if s.precision.startswith("fp16") else "bf16")


def resolve_diffusion(s: Scenario, spec: ModuleSpec) -> ModuleJob:
    """The job of a diffusion scenario (see the module docstring)."""
    d = spec.defaults
    notes = []
    den = spec.main
    buckets = parse_resolution(s.resolution) if s.resolution else [(d["resolution"], d["resolution"])]
    if not s.resolution:
        notes.append(f"resolution {d['resolution']} (the pipeline's default)")
    buckets = fitted_buckets(buckets, spec, s.task, notes)
    buckets.sort(key=lambda wh: -wh[0] * wh[1])
    t5 = d.get("t5_tokens", 0)
    if "seq_len" in s.model_fields_set:  # the prompt's T5 tokens (the pipelines' max_sequence_length)
        if not t5:
            raise GpuplanError(f"seq_len sets the T5 tokens of a prompt, and {den.cls} reads CLIP's 77: drop it")
        if s.task == "infer" and s.seq_len > T5_MAX_TOKENS:
            raise GpuplanError(f"{den.cls}'s pipeline takes at most {T5_MAX_TOKENS} T5 tokens a prompt "
                               f"(max_sequence_length; diffusers raises above it), not {s.seq_len:,}: set seq_len "
                               f"to {T5_MAX_TOKENS} or less")
        t5 = s.seq_len
        notes.append(f"{t5} T5 tokens per prompt (seq_len: the pipeline's max_sequence_length)")
    text = t5 if den.cls == "FluxTransformer2DModel" else (77 + t5 if t5 else d["text_tokens"])
    shapes = tuple(((w // 8) * (h // 8), text) for w, h in buckets)
    dtype = _dtype(s)
    vae = spec.role("vae")
    upcast = bool(vae and vae[0].config.get("force_upcast"))
    weights = STORED.get(s.quant, s.quant)
    common = dict(kind="", spec=spec, task=s.task, shapes=shapes, pixels=tuple(buckets), dtype=dtype,
                  weights=weights, text_tokens=text, t5_tokens=t5, attention=s.attention)
    if s.task == "infer":
        if s.blocks_to_swap:
            raise GpuplanError("blocks_to_swap is kohya's training option: a pipeline generating sets cpu_offload")
        cfg = d["cfg"] if s.cfg is None else s.cfg
        steps = s.inference_steps or d["steps"]
        if s.inference_steps is None:
            notes.append(f"{steps} steps (the pipeline's default)")
        if s.cfg is None:
            notes.append("classifier-free guidance: the denoiser runs twice per step (negative prompt)" if cfg else
                         f"no classifier-free guidance ({den.cls} is guidance-distilled: one pass per step)")
        return ModuleJob(**{**common, "kind": "diffusion-generate"}, way="inference", trained="none",
                         batch=s.batch_size * (2 if cfg else 1), samples_per_step=s.batch_size, steps=steps,
                         cfg=cfg, offload=s.cpu_offload,
                         vae_dtype="fp32" if upcast and dtype == "fp16" else dtype, notes=tuple(notes))
    stack = s.stack
    if s.method == "full":
        way, roles, trained = "train-full", (), "all"
    else:
        roles, preset = _lora_roles(s, stack)
        way, trained = f"train-lora-{preset}", "none"
    if s.grad_checkpointing != "none":
        way += "-gc"
    if s.method == "qlora":
        weights = s.quant or "nf4"
    _trainer_base(s, weights)
    if weights == "fp8":
        weights = _fp8_base(s, spec, notes)
    batch = s.micro_batch_size * (2 if s.prior_preservation else 1)
    vae_dtype = "fp32" if upcast else dtype  # diffusers' SDXL scripts and kohya keep an fp32 VAE (no_half_vae)
    text_lora, text_trained = _text_training(s, spec, notes)
    last_frozen = _last_layer_frozen(s, spec, text_trained, notes)
    freed = _grads_freed(s, spec, notes)
    swapped = _swapped_blocks(s, spec, notes)
    return ModuleJob(**{**common, "kind": "diffusion-train", "weights": weights}, way=way, trained=trained,
                     swapped=swapped,
                     lora_roles=roles, lora_rank=s.lora_rank, batch=batch, samples_per_step=batch,
                     text_encoders="trained" if text_trained else s.text_encoders or "cached", text_lora=text_lora,
                     text_trained=text_trained, text_last_frozen=last_frozen, grads_freed=freed,
                     cache_latents=bool(s.cache_latents) or not vae, vae_dtype=vae_dtype,
                     autocast=s.precision.endswith("-mixed") and trained == "all", notes=tuple(notes))


def _fp8_base(s: Scenario, spec: ModuleSpec, notes: list[str]) -> str:
    """How the trainer stores an fp8 base (:attr:`~.diffusion_stacks.DiffusionStack.fp8_storage`): kohya's
    ``--fp8_base`` every weight, ai-toolkit's quantize every linear of a transformer denoiser (FLUX, SD3); a
    denoiser it does not quantize (ai-toolkit's UNet) trains 16-bit when the scenario's defaults could not recognise
    the pipeline before resolving it, and quant fp8 given for one is refused."""
    trainer = diffusion_stack_for(s.stack)
    if trainer.quantizes is not None and pipeline_family(spec) not in trainer.quantizes:
        if "quant" in s.model_fields_set:
            raise GpuplanError(trainer.unquantized_refusal)
        notes.append(trainer.unquantized_words)
        return "16bit"
    if trainer.fp8_words:
        notes.append(trainer.fp8_words)
    return trainer.fp8_storage


def swap_split(n: int) -> tuple[int, int]:
    """The (double, single) FLUX blocks kohya's ``--blocks_to_swap n`` keeps in CPU memory: ``n // 2`` double and
    ``2 (n - n // 2)`` single blocks (sd-scripts library/flux_models.py ``Flux.enable_block_swap``)."""
    return n // 2, (n - n // 2) * 2


def swap_limit(spec: ModuleSpec) -> int:
    """The most blocks kohya swaps on this FLUX transformer: ``enable_block_swap`` asserts at most all but two
    double blocks and all but two single blocks swapped (FLUX.1's 19 and 38: 35, as its docs say)."""
    double, single = spec.main.config["num_layers"], spec.main.config["num_single_layers"]
    return max(n for n in range(double + single) if swap_split(n)[0] <= double - 2 and swap_split(n)[1] <= single - 2)


def _swapped_blocks(s: Scenario, spec: ModuleSpec, notes: list[str]) -> tuple[int, int]:
    """The FLUX blocks ``blocks_to_swap`` keeps in CPU memory (:func:`swap_split`), refused in one sentence for a
    trainer or pipeline without kohya's block swap, or past :func:`swap_limit`."""
    if not s.blocks_to_swap:
        return 0, 0
    trainer = diffusion_stack_for(s.stack)
    if pipeline_family(spec) not in trainer.swaps_blocks:
        raise GpuplanError(f"blocks_to_swap {s.blocks_to_swap} on {spec.name}: {trainer.swap_refusal}")
    limit = swap_limit(spec)
    if s.blocks_to_swap > limit:
        raise GpuplanError(f"blocks_to_swap {s.blocks_to_swap}: kohya swaps at most {limit} of {spec.name}'s blocks "
                           "(all but two double and two single blocks)")
    double, single = swap_split(s.blocks_to_swap)
    notes.append(f"blocks_to_swap {s.blocks_to_swap}: {double} double and {single} single blocks' weights in CPU "
                 "memory, swapped onto the GPU in turn in the forward and the backward (kohya's block swap)")
    return double, single


def _last_layer_frozen(s: Scenario, spec: ModuleSpec, trained: tuple[str, ...], notes: list[str]) -> tuple[str, ...]:
    """The encoders a full fine-tune trains whole but for their last layer and final norm: kohya's sdxl_train.py
    with --train_text_encoder, which reads CLIP-L's penultimate layer and so freezes the rest ("freeze last layer
    and final_layer_norm in te1 since we use the output of the penultimate layer":
    ``text_encoder1.text_model.encoder.layers[-1].requires_grad_(False)``, ``final_layer_norm`` too; its optimizer
    gets the parameters, but AdamW keeps no state for one without a gradient)."""
    why = diffusion_stack_for(s.stack).clip_last_layer_frozen.get(pipeline_family(spec))
    if s.method != "full" or why is None:
        return ()
    frozen = tuple(te.name for te in spec.role("text_encoder") if te.name in trained and te.cls == "CLIPTextModel")
    if frozen:
        notes.append(f"{', '.join(frozen)}: last layer and final norm frozen ({why})")
    return frozen


@dataclass(frozen=True)
class FrozenPart:
    """What a trained encoder's trainer leaves frozen: parameters, linear weights, Adafactor's factored elements
    (a row and a column per linear weight, the rest in full) and linears."""

    params: int = 0
    weights: int = 0
    factored: int = 0
    linears: int = 0


def frozen_text_params(job: ModuleJob, component) -> FrozenPart:
    """What of a trained encoder its trainer leaves frozen (:func:`_last_layer_frozen`): a CLIP encoder layer's four
    attention projections (``h x h`` and a bias each), two layer norms, ``fc1`` and ``fc2`` (``h x i`` and a bias
    each), and the final norm; CLIP-L (h 768, i 3,072): 7,087,872 + 1,536 = 7,089,408 parameters, 7,077,888 of them
    linear weights. Nothing for any other encoder."""
    if component.name not in job.text_last_frozen:
        return FrozenPart()
    h, i = component.config["hidden_size"], component.config["intermediate_size"]
    weights = 4 * h * h + 2 * h * i
    params = weights + 4 * h + 2 * 2 * h + i + h + 2 * h
    return FrozenPart(params=params, weights=weights, factored=4 * 2 * h + 2 * (h + i) + params - weights, linears=6)


def trained_text_params(job: ModuleJob, component) -> int:
    """The parameters of a text encoder the job trains whole that take gradients (all but
    :func:`frozen_text_params`)."""
    return component.params - frozen_text_params(job, component).params


def text_ways(job: ModuleJob) -> str:
    """The recorded ways the trained text encoders run (:func:`text_way`), for the plan's words."""
    return ", ".join(dict.fromkeys(text_way(job, te) for te in job.spec.role("text_encoder")
                                   if trains_encoder(job, te)))


def trains_encoder(job: ModuleJob, component) -> bool:
    """Whether the job trains this text encoder (:func:`_text_training` chose which, by trainer and pipeline)."""
    return component.role == "text_encoder" and component.name in job.text_trained


def text_way(job: ModuleJob, component=None) -> str:
    """The recorded way a trained text encoder runs: the whole encoder with the denoiser's full fine-tune
    (``train-full``, ``-gc`` under checkpointing: the trainers checkpoint the encoders with the denoiser), else
    the trainer's LoRA preset (``train-lora-attention`` or ``-all``), T5's checkpointed under checkpointing too
    (kohya's train_network.py: ``t_enc.gradient_checkpointing_enable()`` for each trained encoder). CLIP's LoRA
    ways are recorded without checkpointing: over 77 tokens they keep little."""
    if job.trained == "all":
        return "train-full-gc" if job.way.endswith("-gc") else "train-full"
    t5 = component is not None and component.cls == "T5EncoderModel"
    return f"train-lora-{job.text_lora}" + ("-gc" if t5 and job.way.endswith("-gc") else "")


def pipeline_family(spec: ModuleSpec) -> str:
    """sd, sdxl, sd3 or flux: which scripts and options of the trainers apply to the pipeline's denoiser."""
    den = spec.main
    if den.cls == "UNet2DConditionModel":
        return "sdxl" if den.config.get("addition_embed_type") == "text_time" else "sd"
    return {"SD3Transformer2DModel": "sd3", "FluxTransformer2DModel": "flux"}.get(den.cls, "")


def encoders_trained(s: Scenario) -> bool:
    """Whether the scenario trains text encoders (``trained``, or ``trained-all``: T5 too)."""
    return s.text_encoders in ("trained", "trained-all")


def _text_training(s: Scenario, spec: ModuleSpec, notes: list[str]) -> tuple[str, tuple[str, ...]]:
    """The LoRA preset on the text encoders ("" for a full fine-tune, which trains them whole) and the names of the
    encoders the job trains (none unless ``text_encoders`` is trained): what the trainer's switch trains for this
    pipeline (its profile's :attr:`~.diffusion_stacks.DiffusionStack.text_trained`; ``trained-all``: T5 too,
    :attr:`~.diffusion_stacks.DiffusionStack.text_t5`), refused in one sentence where it
    trains none."""
    if not encoders_trained(s):
        return "", ()
    trainer = diffusion_stack_for(s.stack)
    method = "full" if s.method == "full" else "lora"
    key = (method, pipeline_family(spec))
    which = trainer.text_trained.get(key)
    if which is None:
        raise GpuplanError(f"text_encoders {s.text_encoders} with {method} {s.stack} on {spec.name}: "
                           f"{trainer.text_refusal}; set text_encoders frozen or cached")
    if s.text_encoders == "trained-all":
        if key not in trainer.text_t5:
            raise GpuplanError("text_encoders trained-all trains T5-XXL too, which SD3's full fine-tunes do "
                               "(diffusers' train_dreambooth_sd3.py, kohya's sd3_train.py --train_t5xxl) and kohya's "
                               "SD3 and FLUX LoRA (network_args train_t5xxl=True), not "
                               f"{method} {s.stack} on {spec.name}: set text_encoders trained")
        which = "all"
    encoders = spec.role("text_encoder")
    names = tuple(te.name for te in encoders if which == "all" or te.cls != "T5EncoderModel")
    t5 = [te for te in encoders if te.cls == "T5EncoderModel"]
    preset = "" if method == "full" else trainer.lora_preset
    what = "whole: " if method == "full" else (
        f"LoRA r{s.lora_rank} on the " + ("attention projections" if preset == "attention" else
                                          "attention and MLP linears") + " of ")
    trained = ", ".join(f"{te.name} ({te.cls})" for te in encoders if te.name in names)
    notes.append(f"text encoders trained as {s.stack} trains them, {what}{trained}"
                 + ("; T5 frozen, run every step" if t5 and which != "all" else ""))
    return preset, names


def _grads_freed(s: Scenario, spec: ModuleSpec, notes: list[str]) -> bool:
    """Whether the trainer frees the gradients after each optimizer step (a full fine-tune's; LoRA's are a few MB):
    ``set_grads_to_none``, else the trainer's. kohya (train_db.py, sdxl_train.py, sd3_train.py, train_network.py),
    SimpleTuner and ai-toolkit call ``optimizer.zero_grad(set_to_none=True)``, diffusers' scripts
    ``optimizer.zero_grad()`` through accelerate's AcceleratedOptimizer, which passes ``set_to_none=True``; diffusers'
    train_dreambooth.py (SD 1.x/2.x) ``zero_grad(set_to_none=args.set_grads_to_none)``, off by default."""
    if s.set_grads_to_none is not None:
        return s.set_grads_to_none
    if s.method != "full":
        return False
    keeps = diffusion_stack_for(s.stack).keeps_grads.get(pipeline_family(spec))
    if keeps:
        notes.append(f"gradients kept between steps ({keeps})")
    return not keeps


def _generated(s: Scenario) -> int:
    """The target tokens an encoder-decoder's generate makes for ``output_tokens``: at least the first, which the
    encoder pass's first decoder step makes (output_tokens 0 is timed as one token, as a decoder LLM's is)."""
    return max(s.output_tokens, 1)


def resolve_model(s: Scenario, spec: ModuleSpec) -> ModuleJob:
    """The job of an encoder-decoder or encoder scenario: tokens per sample from ``seq_len`` and
    ``decoder_tokens`` (Whisper: the transcript's tokens; its encoder always runs 1,500 frames)."""
    d = spec.defaults
    notes = []
    windows = 0
    variables = _variables(spec)
    if variables == ("decoder_tokens",):  # Whisper
        if s.decoder_tokens is None and "seq_len" in s.model_fields_set:
            tokens = s.seq_len
            notes.append(f"seq_len {tokens:,} taken as the transcript's tokens: Whisper's encoder always runs "
                         f"{d['encoder_frames']:,} frames (30 s of audio)")
        elif s.decoder_tokens is None and s.task == "infer" and s.audio_seconds is not None and \
                "output_tokens" not in s.model_fields_set:
            tokens, said = transcript_tokens(s.audio_seconds, s.timestamps)
            notes.append(said)
        elif s.decoder_tokens is None and s.task == "train":
            tokens, said = label_tokens(s.audio_seconds, s.micro_batch_size, d["decoder_tokens_max"])
            notes.append(said)
        else:
            tokens = s.decoder_tokens or _generated(s)
        if tokens > d["decoder_tokens_max"]:
            raise GpuplanError(f"{spec.name}'s decoder takes at most {d['decoder_tokens_max']} tokens "
                               f"(max_target_positions), not {tokens:,}")
        shapes: tuple[tuple[int, ...], ...] = ((tokens,),)
        windows, words = audio_windows(s, spec, tokens)
        notes += words
        if s.timestamps and s.task == "infer":
            notes.append(f"timestamps: transformers' WhisperTimeStampLogitsProcessor runs on the host at every decoder "
                         f"step; the {tokens:,} decoder tokens a window count its timestamp tokens (about 19.5 a 30 s "
                         "window of conversation)")
        if s.task == "infer":
            notes += _release_words(s)
    elif variables:
        source = _source_tokens(s, spec, notes)
        if variables == ("encoder_tokens",):  # a text encoder: the sequence alone
            if s.decoder_tokens is not None:
                raise GpuplanError(f"{spec.name} is an encoder: it has no decoder, so decoder_tokens does not apply "
                                   f"(set {s.length_field} to the tokens of one sequence)")
            return _resolved(s, spec, ((source,),), 0, notes)
        limit = d.get("encoder_tokens_max")
        target = s.decoder_tokens or (max(source // 4, 1) if s.task == "train" else _generated(s))
        if limit and max(source, target) > limit:
            raise GpuplanError(f"{spec.name} learns {limit:,} positions: use at most {limit:,} source and target "
                               "tokens")
        shapes = ((source, target),)
    else:
        shapes = ((),)
    return _resolved(s, spec, shapes, windows, notes)


def _release_words(s: Scenario) -> list[str]:
    """What an older transformers release (``transformers_version``) costs a Whisper transcription on the host, in
    words (speed.modules.log_mel_s, timestamps_host_s)."""
    given = release_numbers(s.transformers_version)
    if given is None:
        return []
    words = []
    if given < release_numbers(oh.WHISPER_TORCH_LOG_MEL_FROM):
        words.append(f"transformers {s.transformers_version}: log-mel features by numpy's STFT, a Python loop over "
                     f"each window's frames ({oh.WHISPER_NUMPY_LOG_MEL_S_PER_WINDOW * 1e3:.0f} ms a window on one "
                     f"core, {oh.WHISPER_LOG_MEL_S_PER_WINDOW * 1e3:.0f} ms with torch's from "
                     f"{oh.WHISPER_TORCH_LOG_MEL_FROM})")
    if s.timestamps and given < release_numbers(oh.WHISPER_TIMESTAMP_BATCHED_FROM):
        words.append(f"transformers {s.transformers_version}: the timestamp processor loops over the windows in "
                     f"Python, {oh.WHISPER_TIMESTAMP_LOOP_OPS_PER_ROW:.1f} ops a window and step (batched from "
                     f"{oh.WHISPER_TIMESTAMP_BATCHED_FROM})")
    return words


def _source_tokens(s: Scenario, spec: ModuleSpec, notes: list[str]) -> int:
    """The tokens of one source sequence: ``seq_len`` (training) or ``prompt_tokens`` (inference), a default held
    to the model's positions (``encoder_tokens_max``) with a note, a given length past them refused."""
    given = s.length_field
    source, limit = getattr(s, given), spec.defaults.get("encoder_tokens_max")
    if limit and source > limit and given not in s.model_fields_set:  # a default, not the user's: within reach
        notes.append(f"{given} {limit:,}: the default {source:,} would run past {spec.name}'s {limit:,} "
                     f"positions (set {given} to choose)")
        source = limit
    if limit and source > limit and FAMILIES[spec.family][2] == ("encoder_tokens",):
        raise GpuplanError(f"{spec.name} learns {limit:,} positions: set {given} to at most {limit:,} tokens "
                           f"(not {source:,})")
    return source


def _resolved(s: Scenario, spec: ModuleSpec, shapes: tuple[tuple[int, ...], ...], windows: int,
              notes: list[str]) -> ModuleJob:
    """The inference or training job of an encoder-decoder or encoder once its sizes are known."""
    dtype = _dtype(s)
    batch = s.micro_batch_size if s.task == "train" else s.batch_size
    if s.task == "infer":
        return ModuleJob(kind="infer", spec=spec, task="infer", way="inference", trained="none",
                         batch=min(batch, windows) if windows else batch, samples_per_step=windows or batch,
                         shapes=shapes, dtype=dtype, attention=s.attention, windows=windows,
                         timestamps=s.timestamps and spec.family == "whisper",
                         transformers=release_numbers(s.transformers_version) if spec.family == "whisper" else None,
                         weights=STORED.get(s.quant, s.quant), notes=tuple(notes))
    if s.method == "full":
        way, roles, trained = "train-full", (), "all"
    else:
        if ("lora_targets" in s.model_fields_set and s.lora_targets == "all-linear") or \
                ("lora_targets" in s.model_fields_set and not set(s.lora_targets) <= set(ATTENTION_LEAVES)):
            raise GpuplanError(f"LoRA of {spec.name} is modelled on the attention's query and value projections "
                               "(peft's usual q_proj, v_proj; BERT's query, value; DeBERTa's query_proj, value_proj; "
                               "ModernBERT's Wqkv): set lora_targets to those or leave it unset")
        way, roles, trained = "train-lora-attention", ("attention",), "none"
    if s.grad_checkpointing != "none":
        way += "-gc"
    return ModuleJob(kind="train", spec=spec, task="train", way=way, trained=trained, lora_roles=roles,
                     lora_rank=s.lora_rank, batch=batch, samples_per_step=batch, shapes=shapes, dtype=dtype,
                     attention=s.attention, autocast=s.precision.endswith("-mixed") and trained == "all"
                     and spec.family in TEXT_ENCODERS,
                     optimizer_impl=optimizer_impl(s),
                     weights=STORED.get(s.quant, s.quant) if s.method != "qlora" else (s.quant or "nf4"),
                     notes=tuple(notes))


def optimizer_impl(s: Scenario) -> str:
    """The AdamW implementation a transformers model's training runs: the scenario's ``optimizer_impl`` when given,
    else the Trainer's default of its ``transformers_version``: ``adamw_hf``, transformers' own AdamW, a Python
    for-loop over the tensors, before :data:`~gpuplan.overheads.TRAINER_ADAMW_HF_UNTIL` (transformers pull request
    25109); torch's fused kernel otherwise (the current release's)."""
    given = s.transformers_version
    if "optimizer_impl" in s.model_fields_set or given is None:
        return s.optimizer_impl
    old = release_numbers(given) < release_numbers(oh.TRAINER_ADAMW_HF_UNTIL)
    return "for-loop" if old else s.optimizer_impl


# transformers' automatic-speech-recognition pipeline with chunk_length_s 30: windows of 30 s that overlap by
# stride_length_s on each side, chunk_length_s / 6 by default (pipelines/automatic_speech_recognition.py,
# ``_preprocess``: ``stride_length_s = chunk_length_s / 6``), so each window after the first brings 20 s of new audio
WHISPER_WINDOW_S = 30.0
WHISPER_STRIDE_S = WHISPER_WINDOW_S / 6


def audio_windows(s: Scenario, spec: ModuleSpec, tokens: int) -> tuple[int, list[str]]:
    """The 30-second windows of a Whisper inference on ``audio_seconds`` of audio (0 when no length is given: one
    window per sample), and the words that say how they were counted (with the decoder steps a pass of them runs,
    :func:`pass_tokens`, for a window's mean ``tokens``); a training clip longer than a window is refused."""
    seconds = s.audio_seconds
    if seconds is None:
        return 0, []
    frames = f"padded to {WHISPER_WINDOW_S:.0f} s: {spec.defaults['encoder_frames']:,} encoder frames"
    if s.task == "train":
        if seconds > WHISPER_WINDOW_S:
            raise GpuplanError(f"Whisper trains on clips of at most {WHISPER_WINDOW_S:.0f} s (its 3,000 log-mel "
                               f"frames), not {seconds:g} s: cut longer audio into clips")
        return 0, [f"{seconds:,g} s clips, {frames} whatever their length"]
    step = WHISPER_WINDOW_S - 2 * WHISPER_STRIDE_S
    windows = 1 if seconds <= WHISPER_WINDOW_S else 1 + math.ceil((seconds - WHISPER_WINDOW_S) / step)
    cut = f"{windows:,} window{'s' if windows != 1 else ''}"
    over = f" (batch {s.batch_size:,} asked: the recording has no more)" if s.batch_size > windows else ""
    words = [f"{seconds:,g} s of audio: {cut} of {WHISPER_WINDOW_S:.0f} s ({frames} each; "
             f"transformers' pipeline: {WHISPER_STRIDE_S:.0f} s overlap on each side, {step:.0f} s new "
             f"per window after the first), {min(s.batch_size, windows)} per pass{over}"]
    batch = min(s.batch_size, windows)
    if batch > 1:
        longest = pass_tokens(tokens, batch, spec.defaults["decoder_tokens_max"])
        words.append(f"a pass decodes until its longest window's transcript ends: about {longest:,.0f} decoder "
                     f"steps for {batch} windows of {tokens:,} tokens on average (windows spread "
                     f"{oh.WHISPER_WINDOW_TOKENS_CV:.0%} about their mean)")
    return windows, words


def transcript_tokens(seconds: float, timestamps: bool) -> tuple[int, str]:
    """A Whisper window's decoder tokens when a transcription gives no count, and the note that says so: the
    speech's tokens a second (:data:`~gpuplan.overheads.WHISPER_TEXT_TOKENS_PER_S`, with
    :data:`~gpuplan.overheads.WHISPER_TIMESTAMP_TOKENS_PER_S` when timestamps are returned) over the window's
    speech (30 s, or the whole recording when shorter), plus the forced and end tokens' steps
    (:data:`~gpuplan.overheads.WHISPER_FORCED_TOKENS`): 105 a full window, 124 with timestamps."""
    speech = min(seconds, WHISPER_WINDOW_S)
    rate = oh.WHISPER_TEXT_TOKENS_PER_S + (oh.WHISPER_TIMESTAMP_TOKENS_PER_S if timestamps else 0.0)
    forced = oh.WHISPER_FORCED_TOKENS[timestamps]
    tokens = round(rate * speech + forced)
    stamps = f" (text {oh.WHISPER_TEXT_TOKENS_PER_S:.2f}, timestamps {oh.WHISPER_TIMESTAMP_TOKENS_PER_S:.2f})" \
        if timestamps else ""
    return tokens, (f"decoder_tokens {tokens}: from {rate:.2f} tokens/s of speech{stamps} over a window's "
                    f"{speech:g} s, plus {forced} forced and end tokens; source: the published transcript of a "
                    "2.4-hour English podcast (Lex Fridman #367, insanely-fast-whisper's faster-whisper notebook) "
                    "tokenized with Whisper's tokenizer (set --decoder-tokens for denser or sparser speech)")


def label_tokens(seconds: float | None, batch: int, cap: int) -> tuple[int, str]:
    """A Whisper training micro-batch's decoder tokens when none are given, and the note that says so. A clip's
    labels are its transcript (the speech's tokens a second over the clip's ``audio_seconds``, a full 30 s window when
    not given: :func:`transcript_tokens`) behind the language, task and ``<|notimestamps|>`` prefix tokens and before
    the end token (the recipes' tokenizer with ``set_prefix_tokens``; the collator cuts ``<|startoftranscript|>``,
    which the model shifts back in), 4 more than the text, as a transcription without timestamps. The fine-tuning
    recipes pad each batch's labels to its longest (``DataCollatorSpeechSeq2SeqWithPadding``: ``tokenizer.pad``,
    "pad the sequences to the maximum length in the batch", huggingface/blog fine-tune-whisper.md; the same collator
    in huggingface/community-events whisper-fine-tuning-event/run_speech_recognition_seq2seq_streaming.py), so the
    decoder runs the longest of ``batch`` at the windows' spread (:func:`pass_tokens`), at most its ``cap``
    positions (448)."""
    speech = WHISPER_WINDOW_S if seconds is None else min(seconds, WHISPER_WINDOW_S)
    mean, _ = transcript_tokens(speech, False)
    tokens = round(pass_tokens(mean, batch, cap))
    longest = f"the longest label of {batch} clips (spread {oh.WHISPER_WINDOW_TOKENS_CV:.0%}), as the recipes pad " \
        "labels to the batch's longest (DataCollatorSpeechSeq2SeqWithPadding)" if batch > 1 else "one clip's labels"
    return tokens, (f"decoder_tokens {tokens}: {longest}; a clip of {speech:g} s of speech holds {mean}: "
                    f"{oh.WHISPER_TEXT_TOKENS_PER_S:.2f} tokens/s (the published transcript of a 2.4-hour English "
                    f"podcast, Whisper's tokenizer) plus 3 prefix tokens and the end token (set --decoder-tokens to "
                    "your batch's longest label, or --audio-seconds to your clips' length)")


def whisper_output_default(plain: int) -> str:
    """What a blank output_tokens plans for Whisper inference, in the page's words (its placeholder): a recording's
    window the transcript's tokens (:func:`transcript_tokens`), a sample without ``audio_seconds`` ``plain`` (the
    field's own default, as :func:`resolve_model` takes it)."""
    window = transcript_tokens(WHISPER_WINDOW_S, False)[0]
    stamped = transcript_tokens(WHISPER_WINDOW_S, True)[0]
    return f"auto: {window} a 30 s window ({stamped} with timestamps); {plain:,} without audio seconds"


def pass_tokens(tokens: float, batch: int, cap: int) -> float:
    """The decoder steps a pass of ``batch`` Whisper windows runs, for a window's mean ``tokens``: transformers'
    generate steps the whole batch until its last row has ended (``unfinished_sequences``: ``greedy_search`` in
    transformers 4.35 generation/utils.py, ``_sample`` today), so a pass runs as long as its longest window. The
    windows' tokens are taken as normal, their standard deviation :data:`~gpuplan.overheads.WHISPER_WINDOW_TOKENS_CV`
    of the mean (counted on a published transcript), and the largest of ``batch`` at Blom's approximation of its
    expectation (G. Blom, *Statistical Estimates and Transformed Beta-Variables*, 1958: the normal quantile at
    (n - 0.375) / (n + 0.25); 1.434, 1.769, 1.947 standard deviations at n = 8, 16, 24, where the exact values are
    1.424, 1.766, 1.948); at most the decoder's ``cap`` positions."""
    if batch <= 1:
        return tokens
    largest = NormalDist().inv_cdf((batch - 0.375) / (batch + 0.25))
    return min(tokens * (1 + oh.WHISPER_WINDOW_TOKENS_CV * largest), cap)


def _variables(spec: ModuleSpec) -> tuple[str, ...]:
    return FAMILIES[spec.family][2] if spec.kind != "module" else ()


def resolve_own(s: Scenario, spec: ModuleSpec) -> ModuleJob:
    """The job of your own module: one pass of the example input its build() returns (a forward, or a training
    step with every parameter trained), in the scenario's precision. A training loop is taken to free its gradients
    after each optimizer step, as PyTorch's ``optimizer.zero_grad()`` does by default since 2.0 (``set_to_none=True``:
    https://docs.pytorch.org/docs/stable/generated/torch.optim.Optimizer.zero_grad.html, "Default: True"; the
    change: pytorch/pytorch#92731), so the step holds them only from its backward on
    (:func:`gpuplan.memory.modules.free_gradients`)."""
    train = s.task == "train"
    notes = [f"one {'training step' if train else 'forward'} of {spec.main.cls} on the example input of {spec.name} "
             "(its batch and sizes): a sample here is one example input"]
    if train:
        notes.append("gradients freed after each optimizer step, as PyTorch's optimizer.zero_grad() does by default "
                     "(set_to_none=True); a loop that calls zero_grad(set_to_none=False) also holds them before the "
                     "backward")
    return ModuleJob(kind=s.task, spec=spec, task=s.task, way="train-full" if train else "inference",
                     trained="all" if train else "none", shapes=((),), dtype=_dtype(s), grads_freed=train,
                     notes=tuple(notes))


def resolve_module(s: Scenario, spec: ModuleSpec) -> tuple[Scenario, ModuleJob]:
    """Scenario ``s`` with the module's defaults taken (a diffusion model trains with diffusers' scripts unless a
    trainer is named), and its job; refuses what the module cannot run, in one sentence."""
    if "audio_seconds" in s.model_fields_set and spec.family != "whisper":
        raise GpuplanError(f"audio_seconds sizes Whisper's audio, and {spec.describe()}: drop it")
    if spec.kind == "module":
        return s, resolve_own(s, spec)
    if spec.kind == "diffusion":
        if s.task == "train" and "stack" not in s.model_fields_set:
            s = s.model_copy(update={"stack": "diffusers"})
        if s.task == "train" and s.stack not in DIFFUSION_STACKS:
            raise GpuplanError(f"stack {s.stack} trains LLMs; a diffusion model trains with stack "
                               f"{', '.join(DIFFUSION_STACKS)} (left unset: diffusers)")
        return s, resolve_diffusion(s, spec)
    if s.stack in DIFFUSION_STACKS:
        raise GpuplanError(f"stack {s.stack} trains diffusion models, and {spec.describe()}: use stack "
                           "hf (the Hugging Face Trainer)")
    for name in ("resolution", "inference_steps", "cfg", "cache_latents", "text_encoders"):
        if name in s.model_fields_set:
            raise GpuplanError(f"{name} applies to diffusion pipelines, and {spec.describe()}: drop it")
    return s, resolve_model(s, spec)
