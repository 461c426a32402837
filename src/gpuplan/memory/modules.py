"""Peak GPU memory of a module job (:mod:`gpuplan.scenario.modules`): the weights of the components on the card,
the trained parameters' gradients and optimizer states, and the largest transient of the step, by phase.

- **weights**: each component in the dtype it runs in (a full fine-tune under ``-mixed`` precision keeps fp32
  master weights); the main component's linears and convolutions in the stored format asked (``quant``: NF4,
  fp8, GGUF blocks: :mod:`gpuplan.model.quant`), the rest 16-bit; LoRA adapters ``r·(in + out)`` per adapted linear;
- **gradients and optimizer states** of what is trained (:func:`optimizer_bytes`), in fp32 under ``-mixed``;
- **activations**: the main component's peak from its profile for the way it runs, at the job's batch and largest
  sizes (fp32 activations twice the recorded bf16); under autocast a full fine-tune also holds the 16-bit copies of
  its fp32 linear weights that autocast makes for the forward and autograd keeps for the backward (a text
  encoder's or a denoiser's full fine-tune is recorded under autocast, :mod:`gpuplan.model.autocast`: its peaks
  hold those copies and the fp32 tensors autocast makes, the residual stream and the norms);
- **the other components' transients**: a VAE encoding each batch (training without cached latents) or decoding
  the latents (generation), text encoders encoding the prompts, each in its own phase, after or before the
  denoiser's: the step's peak is the largest phase; a VAE's decode holds about twice its recorded tensors on CUDA
  (:data:`~gpuplan.overheads.VAE_DECODE_WORKING_FACTOR`, measured by InvokeAI);
- **gradients freed** (a full fine-tune whose trainer calls ``zero_grad(set_to_none=True)``, as all but diffusers'
  train_dreambooth.py do): the peak is the larger of the moment before the backward and the end of the backward
  (:func:`free_gradients`);
- **block swap** (kohya's ``--blocks_to_swap`` on FLUX): the swapped blocks' weights live in CPU memory; each is
  copied into the GPU storage of a block that has run, in place, so the card holds the other blocks only
  (:func:`swapped_weight_bytes`);
- **offloading** (generation): diffusers' ``enable_model_cpu_offload`` keeps one model on the card at a time (the
  peak is the largest component with its transient); ``enable_sequential_cpu_offload`` one layer at a time.

Then, as for LLMs (:mod:`gpuplan.memory.report`): the caching allocator's slack over the allocated peak
(:data:`~gpuplan.overheads.ALLOCATOR_SLACK_TRAIN`, ``_INFER``) and the CUDA context outside it.
"""

from __future__ import annotations

from dataclasses import dataclass

from .. import overheads as oh
from ..hardware import GpuSpec
from ..model.layers import Linear
from ..model.module_spec import Component
from ..model.profile import FP8_ALL, Profile, storage_format, text_encoder_storage
from ..model.quant import make_format
from ..result import MemoryReport
from ..scenario import Scenario
from ..scenario.diffusion_stacks import DIFFUSION_STACKS
from ..scenario.modules import (
    TEXT_LORA_ROLES,
    ModuleJob,
    frozen_text_params,
    text_way,
    trained_text_params,
    trains_encoder,
)
from ..tensors.breakdown import GIB, Estimate, device_overheads

BYTES = {"fp32": 4, "bf16": 2, "fp16": 2}


def linear_weights(p: Profile) -> int:
    """Weights of the profile's linears and convolutions (each module called once per pass), at most all."""
    return min(p.params, sum(op.count * op.at(1, _any(p))[1] * op.at(1, _any(p))[2] for op in p.ops
                             if op.kind in ("linear", "conv")))


def _any(p: Profile) -> tuple[int, ...]:
    return tuple(64 for _ in p.variables)


def stored_weight_bytes(p: Profile, params: int, weights: str, dtype: str) -> float:
    """Bytes of a component's weights with its linears and convolutions stored as ``weights`` (16bit, nf4, fp8,
    gguf-...), the rest in ``dtype`` (in fp8 too where the whole module is cast:
    :data:`~gpuplan.model.profile.FP8_ALL`)."""
    high = BYTES[dtype]
    if weights == "16bit":
        return params * high
    fmt = make_format(storage_format(weights), high_bytes=high)
    stored = 0.0
    counted = 0
    sizes = _any(p)
    for op in p.ops:
        if op.kind in ("linear", "conv") and not op.stored_16bit(weights):
            _, k, n = op.at(1, sizes)
            stored += op.count * fmt.linear_weight_bytes(Linear(name="w", in_features=k, out_features=n))
            counted += op.count * k * n
    return stored + max(params - counted, 0) * (1 if weights == FP8_ALL else high)


def factored_elements(p: Profile, params: int) -> int:
    """Adafactor's second-moment elements of a whole component: a row and a column per linear or convolution
    weight, the other parameters in full (Shazeer & Stern 2018)."""
    sizes = _any(p)
    return sum(op.count * (op.at(1, sizes)[1] + op.at(1, sizes)[2]) for op in p.ops
               if op.kind in ("linear", "conv")) + (params - linear_weights(p))


def lora_params(p: Profile, roles: tuple[str, ...], rank: int) -> int:
    """Adapter parameters: ``r·(in + out)`` per adapted linear or 1x1 convolution."""
    sizes = _any(p)
    return sum(op.count * rank * (op.at(1, sizes)[1] + op.at(1, sizes)[2]) for op in p.ops
               if op.kind in ("linear", "conv") and op.role in roles)


def optimizer_bytes(optimizer: str, trainable: int, state_bytes: int, factored: int, adamw_states: int = 2) -> float:
    """AdamW: two moments (``adamw_states``: SimpleTuner's adds a third, :func:`lora_widths`); 8-bit AdamW one byte
    each plus an fp32 absmax per 256 values (Dettmers et al. 2022); Lion and SGD with momentum one state; Adafactor
    (beta1 None) factored second moments, a row and a column per matrix (Shazeer & Stern 2018: ``factored``
    elements)."""
    if optimizer == "adamw":
        return adamw_states * state_bytes * trainable
    if optimizer in ("adamw-8bit", "paged-adamw-8bit"):
        return trainable * (2 + 2 * 4 / oh.BNB_STATE_BLOCK)
    if optimizer in ("lion", "sgd-momentum"):
        return state_bytes * trainable
    if optimizer == "adafactor":
        return state_bytes * factored
    return 0.0


def lora_widths(s: Scenario, job: ModuleJob) -> tuple[int, int, int]:
    """How a diffusion trainer holds its LoRA adapters: bytes a parameter (weight and gradient alike), bytes an
    optimizer-state element, and AdamW's states a parameter. The adapters are in the scenario's ``adapter_dtype``,
    the trainer's own when not given (``DiffusionStack.fp32_adapters``: fp32 in kohya and ai-toolkit, in diffusers
    under fp16; else the weights' dtype), and the states as wide as the adapters, autocast or not:
    torch's AdamW, Lion and SGD make each with ``torch.zeros_like(p)`` (torch/optim/adamw.py ``_init_group``), as
    prodigyopt does. SimpleTuner's default AdamW, ``adamw_bf16`` (helpers/training/optimizers/adamw_bfloat16
    AdamWBF16), keeps three bf16 states a parameter, ``exp_avg``, ``exp_avg_sq`` and the Kahan-summation
    ``shift`` (its profile's ``DiffusionStack.adamw_states_16bit``)."""
    adapter = BYTES["fp32" if s.adapter_dtype == "fp32" else job.dtype]
    trainer = DIFFUSION_STACKS.get(s.stack)  # None: another module job's stack, torch's AdamW
    return adapter, adapter, trainer.adamw_states_16bit if trainer is not None and adapter == 2 else 2


def flux_block_weights(config: dict) -> tuple[int, int]:
    """The linear weights of one FLUX double and one single block, ``h`` the inner width (heads x head dim), the MLP
    4h wide (sd-scripts library/flux_models.py DoubleStreamBlock, SingleStreamBlock; diffusers'
    FluxTransformerBlock the same): a double block's two modulation linears (``h x 6h`` each), its image and text
    streams' qkv (``h x 3h``) and out projections and MLPs (``h x 4h`` twice): 36 h^2; a single block's modulation
    (``h x 3h``), ``linear1`` (qkv and MLP in, ``h x 7h``) and ``linear2`` (``5h x h``): 15 h^2. FLUX.1 (h 3,072):
    339,738,624 and 141,557,760. The biases and norm scales stay on the GPU (custom_offloading_utils.py moves each
    module's ``weight`` only), 0.03 % of a block."""
    h = config["num_attention_heads"] * config["attention_head_dim"]
    return 36 * h * h, 15 * h * h


def swapped_weight_bytes(job: ModuleJob) -> float:
    """The weights kohya's ``--blocks_to_swap`` keeps in CPU memory (:attr:`ModuleJob.swapped`, double and single
    blocks), as stored: one byte each under ``--fp8_base`` (every weight fp8), else the job's dtype. The card holds
    no block beyond the others: each swap copies a block that has run to the CPU and the next swapped block's
    weights into the same GPU storage (custom_offloading_utils.py ``swap_weight_devices``:
    ``cuda_data_view.copy_(module_to_cuda.weight.data)``)."""
    double, single = job.swapped
    if not double and not single:
        return 0.0
    per_double, per_single = flux_block_weights(job.spec.main.config)
    width = 1 if job.weights == FP8_ALL else BYTES[job.dtype]
    return (double * per_double + single * per_single) * width


def component_bytes(c: Component, dtype: str) -> float:
    return c.params * BYTES[dtype]


def fp32_kept_params(c: Component, dtype: str) -> int:
    """The parameters transformers keeps in fp32 when it loads ``c`` in fp16 (``from_pretrained(torch_dtype=
    float16)``, as a diffusers pipeline loads its text encoders): T5's feed-forward output projections, ``wo``, one
    ``d_ff x d_model`` per layer (transformers models/t5/modeling_t5.py T5PreTrainedModel._keep_in_fp32_modules =
    ["wo"]; modeling_utils.py: 'will upcast to fp32 only if the requested dtype is fp16'). A training script that
    casts the encoder afterwards (``.to(dtype=weight_dtype)``) casts them too."""
    if c.cls != "T5EncoderModel" or dtype != "fp16":
        return 0
    return c.config["num_layers"] * c.config["d_ff"] * c.config["d_model"]


def pipeline_weight_bytes(job: ModuleJob, c: Component, main: Profile, parts: dict[str, Profile]) -> float:
    """A generation component's weights on the card as the pipeline loads them: the denoiser as stored
    (:func:`stored_weight_bytes`), a T5 quantized by bitsandbytes with the denoiser, the rest in the pipeline's dtype
    with what transformers keeps in fp32 (:func:`fp32_kept_params`)."""
    if c.role == "denoiser":
        return stored_weight_bytes(main, c.params, job.weights, job.dtype)
    if c.role == "text_encoder" and job.weights in ("nf4", "fp4", "int8") and c.cls == "T5EncoderModel":
        return stored_weight_bytes(parts[f"text-encoder:{c.name}"], c.params, job.weights, job.dtype)
    return component_bytes(c, job.dtype) + fp32_kept_params(c, job.dtype) * (4 - BYTES[job.dtype])


# pipelines whose guidance encodes the negative prompt ('' when none is given) with every text encoder: diffusers'
# StableDiffusion3Pipeline.encode_prompt (negative_prompt or ""); SDXL's force_zeros_for_empty_prompt leaves an empty
# one's embeddings zero without running its encoders, SD 1.x has one encoder and FLUX.1 no guidance
NEGATIVE_ENCODED = ("StableDiffusion3Pipeline",)


def encoded_again(job: ModuleJob) -> list[str]:
    """The text encoders model offload moves onto the card and back a second time each call: with guidance that
    encodes the negative prompt (:data:`NEGATIVE_ENCODED`), the encoders run again in their offload order after the
    positive prompt's, and the first one's hook has no previous model to offload (accelerate hooks.py
    CpuOffload.pre_forward offloads only its prev_module_hook; diffusers' enable_model_cpu_offload chains
    model_cpu_offload_seq), so the last encoder, run last for the positive prompt, stays on the card while every other
    encoder is moved on again and back for the negative one."""
    names = [te.name for te in job.spec.role("text_encoder")]
    return names[:-1] if job.cfg and job.spec.family in NEGATIVE_ENCODED else []


def beside_under_offload(job: ModuleJob, who: str, resident: dict[str, float]) -> float:
    """What model offload leaves on the card beside ``who``'s own weights: the last text encoder while each encoder
    :func:`encoded_again` runs for the negative prompt."""
    if who not in encoded_again(job):
        return 0.0
    names = [te.name for te in job.spec.role("text_encoder")]
    return resident[names[-1]]


def text_weight_bytes(job: ModuleJob, te: Component, prof: Profile) -> float:
    """A text encoder's weights as a LoRA job keeps them on the card beside the denoiser: in the job's dtype, or
    under kohya's --fp8_base (:data:`~gpuplan.model.profile.FP8_ALL`) with its linears in fp8 and its embeddings
    and norms in the job's dtype (train_network.py casts each encoder on the card to ``te_weight_dtype``
    float8_e4m3fn, then prepare_text_encoder_fp8 puts CLIP's embeddings and T5's embeddings and T5LayerNorms
    back to the weight dtype; CLIP's few layer-norm parameters stay fp8, counted 16-bit here), or T5 under
    ai-toolkit's quantize with its linears in quanto's fp8 (:func:`~gpuplan.model.profile.text_encoder_storage`)."""
    stored = text_encoder_storage(job.weights, te.cls)
    if stored != "16bit":
        return stored_weight_bytes(prof, te.params, stored, job.dtype)
    return component_bytes(te, job.dtype)


def training_memory(s: Scenario, job: ModuleJob, main: Profile, parts: dict[str, Profile]) -> Estimate:
    """A training step's peak (see the module docstring). ``parts``: the other components' profiles by part name
    (``vae-encode``, ``text-encoder:<name>``)."""
    e = Estimate(slack=oh.ALLOCATOR_SLACK_TRAIN)
    c = job.spec.main
    mixed = s.precision.endswith("-mixed")
    state = 4 if mixed or job.dtype == "fp32" else 2
    sizes = job.shapes[0]
    scale = BYTES[job.dtype] / 2
    adapter, adapter_state, adamw_states = lora_widths(s, job)
    if job.trained == "all":
        trainable = c.params
        e.weights = c.params * (4 if mixed else BYTES[job.dtype])
        e.gradients = trainable * state
        factored = factored_elements(main, c.params)
        if mixed and not main.under_autocast:  # an autocast profile's peaks hold the copies
            e.other["autocast 16-bit weight copies"] = linear_weights(main) * 2
    else:
        trainable = lora_params(main, job.lora_roles, job.lora_rank)
        e.cpu = swapped_weight_bytes(job)
        e.weights = stored_weight_bytes(main, c.params, job.weights, job.dtype) - e.cpu + trainable * adapter
        if e.cpu:
            e.assumptions.append(f"block swap: {e.cpu / GIB:.2f} GiB of the transformer's block weights in CPU "
                                 "memory, swapped onto the card in turn (kohya's --blocks_to_swap)")
        e.gradients = trainable * adapter
        state = adapter_state
        factored = trainable // max(job.lora_rank, 1) * 2  # thin factors: about r + d per r x d matrix
    batch = job.batch
    phases = {"forward and backward": main.activation_bytes(job.way, batch, sizes) * scale}
    if job.attention == "eager":
        saved = not job.way.endswith("-gc")
        phases["forward and backward"] += eager_scores(main, batch, sizes, job.dtype, saved) + \
            eager_dropout_bytes(job, main, batch, sizes, mixed) * saved
    vae = job.spec.role("vae")
    if vae and not job.cache_latents:
        e.other["VAE (encodes each batch)"] = component_bytes(vae[0], job.vae_dtype)
        edge = _edge(job)
        phases["VAE encode"] = parts["vae-encode"].activation_bytes(
            "inference", batch, (sizes[0], edge)) * BYTES[job.vae_dtype] / 2
    text = text_encoders(e, job, parts, phases, TrainedBytes(adapter=adapter, mixed=mixed, state=state))
    e.gradients += text.gradients  # the trained encoders' beside the denoiser's (Adafactor: their factors too)
    factored += text.factored
    trainable += text.params
    e.optimizer = optimizer_bytes(s.optimizer, trainable, state, factored,
                                  2 if job.trained == "all" else adamw_states)
    e.extra["params_trainable"] = trainable
    # a resumable checkpoint: the trained weights in their own dtype (one gradient element each) and their
    # optimizer states, as held here (gpuplan.market.cost.checkpoint_bytes says the same of a decoder)
    e.extra["checkpoint_bytes"] = e.gradients + e.optimizer
    freed = free_gradients(e, phases) if job.grads_freed and job.trained == "all" else None
    e.peak_phase = freed or max(phases, key=phases.get)
    e.activations = phases[e.peak_phase]
    e.phases = {k: v / GIB for k, v in phases.items()}
    return e


END_OF_BACKWARD = "end of backward"


def free_gradients(e: Estimate, phases: dict[str, float]) -> str | None:
    """A full fine-tune whose trainer frees the gradients after each optimizer step (``zero_grad(set_to_none=
    True)``: :func:`~gpuplan.scenario.modules._grads_freed`) holds them only from its backward on. Its peak is the
    larger of two moments: before the backward (each phase's transient, the forward's with autocast's 16-bit
    weight copies, and no gradients), or the end of the backward (every gradient written, the activations and the
    copies freed: saved for the backward, or under checkpointing cast again one block at a time). ``e`` and
    ``phases`` are set to the larger: the gradients left out before the backward (None returned: the peak is the
    largest phase), or the copies, with an ``end of backward`` phase of no transient (its name returned: the peak,
    the other phases' transients standing on the gradients-free total below it)."""
    copies = {k: v for k, v in e.other.items() if k.endswith("autocast 16-bit weight copies")}
    if e.gradients - sum(copies.values()) > max(phases.values()):
        for key in copies:
            del e.other[key]
        phases[END_OF_BACKWARD] = 0.0
        e.assumptions.append("gradients freed after each optimizer step (zero_grad(set_to_none=True)): the peak is "
                             "the end of the backward, every gradient written, activations and autocast copies freed")
        return END_OF_BACKWARD
    else:
        e.gradients = 0.0
        e.assumptions.append("gradients freed after each optimizer step (zero_grad(set_to_none=True)): none held at "
                             "the peak, which comes before the backward")
    return None


@dataclass(frozen=True)
class TrainedBytes:
    """How a training step stores what it trains: ``adapter`` bytes per LoRA parameter (weights and gradients),
    ``mixed`` (fp32 master weights under autocast) and ``state`` bytes per gradient of a fully trained weight."""

    adapter: int
    mixed: bool
    state: int


@dataclass(frozen=True)
class TrainedText:
    """What the trained text encoders add to a step: their trained parameters, their gradients' bytes and the
    elements of Adafactor's factored second moments."""

    params: int = 0
    gradients: float = 0.0
    factored: int = 0


def text_lora_params(job: ModuleJob, parts: dict[str, Profile], te) -> int:
    """The LoRA adapter parameters of text encoder ``te`` when the job trains it with LoRA (else 0): ``r·(in +
    out)`` per linear its trainer's preset adapts (:data:`~gpuplan.scenario.modules.TEXT_LORA_ROLES`)."""
    if not trains_encoder(job, te) or not job.text_lora:
        return 0
    return lora_params(parts[f"text-encoder:{te.name}"], TEXT_LORA_ROLES[job.text_lora], job.lora_rank)


def text_kept_bytes(job: ModuleJob, parts: dict[str, Profile]) -> float:
    """What the trained text encoders' forward keeps for their backward, held while the denoiser runs forward and
    backward, in the job's dtype: with LoRA, each one's recorded LoRA pass's peak (rank 16, the recording's; the
    adapters' ``r``-wide activations are a few kB); trained whole, the part of its recorded pass's peak that grows
    with the batch (:func:`kept_activations`)."""
    total = 0.0
    for te in job.spec.role("text_encoder"):
        if trains_encoder(job, te):
            prof, way = parts[f"text-encoder:{te.name}"], text_way(job, te)
            sizes = (job.t5_tokens,) if te.cls == "T5EncoderModel" else ()
            total += kept_activations(prof, way, job.batch, sizes) if job.trained == "all" else \
                prof.activation_bytes(way, job.batch, sizes)
    return total * BYTES[job.dtype] / 2


def kept_activations(p: Profile, way: str, batch: int, sizes: tuple[float, ...]) -> float:
    """A fully trained encoder's activations at ``batch``: each recorded segment's peak less its value at batch 0,
    the largest. The constant part is a weight's gradient being written when the pass peaks in its backward (CLIP-L's
    token embedding, 49,408 x 768 x 2 bytes = 72.4 MiB, at ``backward encoder.layers.0``): counted with the
    gradients, and written after the denoiser's backward, so not held while it runs."""
    return max(0.0, *(poly.at(batch, sizes) - poly.at(0, sizes) for poly in p.memory[way].values()))


def text_encoders(e: Estimate, job: ModuleJob, parts: dict[str, Profile], phases: dict[str, float],
                  stored: TrainedBytes) -> TrainedText:
    """The text encoders on the card during a training step (``frozen`` or ``trained``), added to ``e`` and
    ``phases``; returns what the trained ones add (:class:`TrainedText`). A frozen encoder: its weights, and its
    no-grad forward as a phase of its own. A trained one (:func:`~gpuplan.scenario.modules.trains_encoder`): with
    LoRA its weights and adapters (:func:`text_lora_params`); trained whole its weights as the trainer keeps them
    (fp32 under autocast: diffusers' train_dreambooth.py refuses a trained encoder that is not, and kohya's
    load_target_model loads fp32 unless --full_bf16), the 16-bit copies autocast makes of its linears, and its
    gradients; and what its forward keeps for its backward, held while the denoiser runs forward and backward
    (:func:`text_kept_bytes`)."""
    if job.text_encoders not in ("frozen", "trained"):
        return TrainedText()
    params, gradients, factored = 0, 0.0, 0
    for te in job.spec.role("text_encoder"):
        prof = parts[f"text-encoder:{te.name}"]
        if trains_encoder(job, te) and job.text_lora:
            own = text_lora_params(job, parts, te)
            params, gradients = params + own, gradients + own * stored.adapter
            factored += own // max(job.lora_rank, 1) * 2  # thin factors: about r + d per r x d matrix
            e.other[f"{te.name} ({te.cls}, LoRA trained)"] = text_weight_bytes(job, te, prof) + own * stored.adapter
            continue
        if trains_encoder(job, te):
            own, frozen = trained_text_params(job, te), frozen_text_params(job, te)
            params, gradients = params + own, gradients + own * stored.state
            factored += factored_elements(prof, te.params) - frozen.factored
            e.other[f"{te.name} ({te.cls}, trained)"] = te.params * (4 if stored.mixed else BYTES[job.dtype])
            if stored.mixed:  # autocast caches the copies of the weights that take gradients only
                e.other[f"{te.name} autocast 16-bit weight copies"] = (linear_weights(prof) - frozen.weights) * 2
            continue
        e.other[f"{te.name} ({te.cls}, frozen)"] = text_weight_bytes(job, te, prof)
        tokens = (job.t5_tokens,) if te.cls == "T5EncoderModel" else ()
        phases[f"{te.name} encode"] = prof.activation_bytes("inference", job.batch, tokens) * BYTES[job.dtype] / 2
    phases["forward and backward"] += text_kept_bytes(job, parts)
    return TrainedText(params=params, gradients=gradients, factored=factored)


def eager_scores(p: Profile, batch: int, sizes: tuple[int, ...], dtype: str, saved: bool) -> float:
    """Bytes eager attention adds to a pass's peak (PyTorch's ``baddbmm``, ``softmax``, ``bmm``; no SDPA or
    xformers): the score matrix of one call and its softmax at a time, and when the backward needs them
    (``saved``: training without checkpointing) every call's softmax kept until then."""
    each = [op.count * op.at(batch, sizes)[0] * op.at(batch, sizes)[1] * op.at(batch, sizes)[2] * BYTES[dtype]
            for op in p.ops if op.kind == "attention"]
    largest = max((e / op.count for e, op in zip(each, [o for o in p.ops if o.kind == "attention"], strict=True)),
                  default=0.0)
    return 2 * largest + (sum(each) if saved else 0.0)


def eager_dropout_bytes(job: ModuleJob, p: Profile, batch: int, sizes: tuple[int, ...], mixed: bool) -> float:
    """What BERT's and RoBERTa's eager attention keeps for a training backward beyond :func:`eager_scores`' softmax in
    the job's dtype: its attention dropout (``attention_probs_dropout_prob``, 0.1 by default) on the probabilities,
    whose mask (1 byte a score) and output (the product with the values saves it: 2 bytes under autocast, which
    casts it to 16 bits, 4 in fp32) stay until the backward; under autocast the softmax itself runs in fp32
    (torch.autocast's fp32 op list), 2 bytes a score more than the 16-bit one counted. transformers'
    ``eager_attention_forward`` (softmax, ``nn.functional.dropout``, ``matmul``). The recording runs SDPA without
    that dropout (:func:`gpuplan.model.encoders.recorded_config`), as CUDA's fused kernels keep no mask."""
    from ..model.encoders import SDPA_DROPOUT

    key = SDPA_DROPOUT.get(job.spec.family)
    if not key or not job.spec.main.config.get(key, 0.1):
        return 0.0
    per_score = 1 + (2 + 2 if mixed else BYTES[job.dtype])
    return per_score * sum(op.count * op.at(batch, sizes)[0] * op.at(batch, sizes)[1] * op.at(batch, sizes)[2]
                           for op in p.ops if op.kind == "attention")


def vae_decode_bytes(job: ModuleJob, vae: Profile, sizes: tuple[float, ...]) -> float:
    """The VAE decode's working memory as the allocator reserves it: the recorded activation peak in the VAE's
    dtype, times what a decode in that dtype reserves on CUDA beyond its tensors (:func:`decode_working_factor`);
    :data:`~gpuplan.overheads.VAE_DECODE_ALLOCATED_SHARE` of it is allocated."""
    traced = vae.activation_bytes("inference", job.samples_per_step, (sizes[0], _edge(job))) * BYTES[job.vae_dtype] / 2
    return traced * decode_working_factor(job.vae_dtype)


def decode_working_factor(vae_dtype: str) -> float:
    """What InvokeAI measured a decode of SDXL's VAE at 1024 x 1024 to reserve over its recorded tensors, in the
    decode's dtype (invoke-ai/InvokeAI pull 7674's QA): :data:`~gpuplan.overheads.VAE_DECODE_WORKING_FACTOR_FP32`
    for fp32 (an upcast decode's, or an fp32 pipeline's), :data:`~gpuplan.overheads.VAE_DECODE_WORKING_FACTOR`
    for 16 bits."""
    return oh.VAE_DECODE_WORKING_FACTOR_FP32 if vae_dtype == "fp32" else oh.VAE_DECODE_WORKING_FACTOR


def _edge(job: ModuleJob) -> int:
    w, h = job.pixels[0]
    return w // 8 + h // 8


def generation_memory(s: Scenario, job: ModuleJob, main: Profile, parts: dict[str, Profile]) -> Estimate:
    """A generation call's peak: the prompt encoded, the latents denoised, then decoded (see the module
    docstring); with offloading only what runs is on the card."""
    e = Estimate(slack=oh.ALLOCATOR_SLACK_INFER)
    sizes = job.shapes[0]
    scale = BYTES[job.dtype] / 2
    den = job.spec.main
    resident: dict[str, float] = {}
    phases: dict[str, float] = {}
    resident["denoiser"] = pipeline_weight_bytes(job, den, main, parts)
    phases["denoise"] = main.activation_bytes("inference", job.batch, sizes) * scale
    if job.attention == "eager":
        phases["denoise"] += eager_scores(main, job.batch, sizes, job.dtype, False)
    for te in job.spec.role("text_encoder"):
        prof = parts[f"text-encoder:{te.name}"]
        resident[te.name] = pipeline_weight_bytes(job, te, main, parts)
        tokens = (job.t5_tokens,) if te.cls == "T5EncoderModel" else ()
        phases[f"{te.name} encode"] = prof.activation_bytes("inference", job.samples_per_step, tokens) * scale
    vae = job.spec.role("vae")
    if vae:
        resident["vae"] = pipeline_weight_bytes(job, vae[0], main, parts)
        decode = vae_decode_bytes(job, parts["vae-decode"], sizes)
        phases["VAE decode"] = decode * oh.VAE_DECODE_ALLOCATED_SHARE
        if job.vae_dtype != job.dtype:  # upcast for the decode: an fp32 copy of its weights
            phases["VAE decode"] += component_bytes(vae[0], job.vae_dtype)
    else:
        decode = 0.0
    cache = 0.0
    if job.weights in ("nf4", "fp4", "int8"):  # quantized as they loaded: freed 16-bit blocks stay reserved
        quantized = den.params + sum(te.params for te in job.spec.role("text_encoder") if te.cls == "T5EncoderModel")
        cache = oh.BNB_LOAD_CACHE_FRACTION * quantized * 2
    owner = {"denoise": "denoiser", "VAE decode": "vae"}
    if job.offload == "none":
        e.weights = resident["denoiser"]
        e.other.update({f"{k} weights": v for k, v in resident.items() if k != "denoiser"})
        e.peak_phase = max(phases, key=phases.get)
        e.activations = phases[e.peak_phase]
    else:
        totals = {}
        for phase, act in phases.items():
            who = owner.get(phase) or phase.removesuffix(" encode")
            held = resident[who] + beside_under_offload(job, who, resident) if job.offload == "model" else \
                largest_linear(main, parts, who, job)
            totals[phase] = held + act
        e.peak_phase = max(totals, key=totals.get)
        who = owner.get(e.peak_phase) or e.peak_phase.removesuffix(" encode")
        e.weights = totals[e.peak_phase] - phases[e.peak_phase]
        e.activations = phases[e.peak_phase]
        e.cpu = sum(resident.values())
        e.assumptions.append(f"{job.offload} CPU offload: {'one model' if job.offload == 'model' else 'one layer'} "
                             f"of the pipeline on the card at a time ({who} at the peak)")
    if cache:
        e.other["bitsandbytes' load cache (16-bit blocks freed while quantizing)"] = cache
    if e.peak_phase == "VAE decode":  # the rest of what the decode reserves: blocks between its activations
        e.fragmentation = decode * (1 - oh.VAE_DECODE_ALLOCATED_SHARE) * (1 + e.slack)
    e.phases = {k: v / GIB for k, v in phases.items()}
    return e


def largest_linear(main: Profile, parts: dict[str, Profile], who: str, job: ModuleJob) -> float:
    """Sequential offload holds one leaf module's weights at a time: the largest linear of the component."""
    prof = main if who == "denoiser" else parts.get("vae-decode" if who == "vae" else f"text-encoder:{who}")
    if prof is None:
        return 0.0
    sizes = tuple(64 for _ in prof.variables)
    largest = max((op.at(1, sizes)[1] * op.at(1, sizes)[2] for op in prof.ops if op.kind in ("linear", "conv")),
                  default=0)
    return largest * BYTES[job.dtype]


def model_memory(s: Scenario, job: ModuleJob, main: Profile) -> Estimate:
    """An encoder-decoder's or encoder's step: its weights, what training adds, its activations."""
    if job.task == "train":
        return training_memory(s, job, main, {})
    e = Estimate(slack=oh.ALLOCATOR_SLACK_INFER)
    e.weights = stored_weight_bytes(main, job.spec.main.params, job.weights, job.dtype)
    e.activations = main.activation_bytes("inference", job.batch, job.shapes[0]) * BYTES[job.dtype] / 2
    if job.attention == "eager":
        e.activations += eager_scores(main, job.batch, job.shapes[0], job.dtype, False)
    e.peak_phase = "forward"
    e.phases = {"forward": e.activations / GIB}
    return e


def report(s: Scenario, e: Estimate, gpu: GpuSpec | None) -> MemoryReport:
    """The memory report of an estimate on a card (as :func:`gpuplan.memory.report.memory_report` reports a
    decoder's): allocated, reserved with the allocator's slack, device with the CUDA context."""
    e.outside_allocator = device_overheads(s, gpu.generation if gpu else None)
    capacity = gpu.usable_gib if gpu else None
    other = {k: v / GIB for k, v in e.other.items()}
    out = MemoryReport(
        weights_gib=e.weights / GIB, gradients_gib=e.gradients / GIB, optimizer_gib=e.optimizer / GIB,
        activations_gib=e.activations / GIB, kv_cache_gib=0.0, other_gib=sum(other.values()), other=other,
        allocated_peak_gib=e.allocated / GIB, reserved_peak_gib=e.reserved / GIB, device_peak_gib=e.device / GIB,
        device_overheads={k: v / GIB for k, v in e.outside_allocator.items()}, capacity_gib=capacity,
        peak_phase=e.peak_phase, phases_gib=e.phases, cpu_gib=e.cpu / GIB, cached_gib=e.fragmentation / GIB)
    if capacity is not None:
        out.fits = out.device_peak_gib <= capacity
        out.headroom_gib = capacity - out.device_peak_gib
    return out
