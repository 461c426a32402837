"""Diffusion pipelines as models: diffusers' ``model_index.json`` and component configs, counted and profiled with
the real classes.

What gpuplan models (the classes the pipelines of Stable Diffusion 1.x/2.x/XL, SD3/SD3.5 and FLUX.1 build):

- denoisers: ``UNet2DConditionModel`` (SD 1.x/2.x/XL), ``SD3Transformer2DModel`` (SD3/3.5's MMDiT),
  ``FluxTransformer2DModel`` (FLUX.1), each fed its latents, timestep and text conditioning as its pipeline feeds
  it (``diffusers/pipelines/*/pipeline_*.py``: the UNet's ``encoder_hidden_states`` and SDXL's ``added_cond_kwargs``
  text_embeds and six time ids; SD3's joint text of CLIP and T5 tokens and pooled projection; FLUX's packed 2x2
  latent patches, ``img_ids``/``txt_ids`` and guidance);
- the VAE: ``AutoencoderKL`` (encoding training images, decoding generated latents), 8x downsampling;
- text encoders: ``CLIPTextModel``, ``CLIPTextModelWithProjection`` (CLIP-L, OpenCLIP-H, CLIP-G) and
  ``T5EncoderModel`` (T5-XXL) from transformers.

Counts are exact: each class built from its config on the meta device (bundled pipelines carry the count, and a
test checks it against the real class). A config of another class is refused in one sentence that names it.
Needs the ``diffusion`` extra (diffusers) only to count or profile a pipeline that is not bundled.
"""

from __future__ import annotations

import contextlib
import json
import math
import re
from dataclasses import dataclass
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

from ..errors import GpuplanError, echo, echo_value, normalize_name
from .families import diffusers_class
from .module_spec import Component, ModuleSpec
from .validate import check_depth

DENOISERS = ("UNet2DConditionModel", "SD3Transformer2DModel", "FluxTransformer2DModel")
VAES = ("AutoencoderKL",)
TEXT_ENCODERS = ("CLIPTextModel", "CLIPTextModelWithProjection", "T5EncoderModel")
# The attention projections LoRA scripts target (diffusers' train_dreambooth_lora_*: to_k, to_q, to_v, to_out.0;
# the joint-attention models' context stream too: add_k_proj, add_q_proj, add_v_proj, to_add_out)
ATTENTION_LEAVES = ("to_q", "to_k", "to_v", "to_out.0", "add_q_proj", "add_k_proj", "add_v_proj", "to_add_out")
BLOCK_MARKERS = (".attentions.", "transformer_blocks.", "single_transformer_blocks.")
# What each pipeline runs with by default (its __call__ signature): steps, classifier-free guidance (a second,
# unconditional pass of the denoiser per step), and the T5 tokens its max_sequence_length keeps
PIPELINES = {
    "StableDiffusionPipeline": {"steps": 50, "cfg": True},
    "StableDiffusionXLPipeline": {"steps": 50, "cfg": True},
    "StableDiffusion3Pipeline": {"steps": 28, "cfg": True, "t5_tokens": 256},
    "FluxPipeline": {"steps": 28, "cfg": False, "t5_tokens": 512},
}
CLIP_TOKENS = 77
# an image side the plans take (pixels; the scenario's resolution and a pipeline's default alike); the multiple a
# given side must be is each denoiser's own (:func:`side_rule`), a default (sample_size x 8) is held to 16, the largest
SIDE_PIXELS, SIDE_STEP = (64, 8192), 16


@dataclass(frozen=True)
class SideRule:
    """The multiple ``step`` an image side must be for a pipeline, why (``reason``), and whether diffusers' pipeline
    rounds a generation's side down to it (``rounds_down``) instead of raising."""

    step: int
    reason: str
    rounds_down: bool = False


def vae_factor(spec: ModuleSpec) -> int:
    """How much smaller the latents are than the image: every diffusers pipeline's ``vae_scale_factor = 2 **
    (len(self.vae.config.block_out_channels) - 1) if getattr(self, "vae", None) else 8``
    (pipeline_stable_diffusion_xl.py line 267, pipeline_stable_diffusion_3.py 219, pipeline_flux.py 208, diffusers
    0.42.1): 8 for every bundled VAE."""
    vae = spec.role("vae")
    channels = vae[0].config.get("block_out_channels") if vae else None
    return 2 ** (len(channels) - 1) if isinstance(channels, list) and channels else 8


def side_rule(spec: ModuleSpec) -> SideRule:
    """Each denoiser's rule for an image side, as diffusers 0.42.1 applies it:

    - a UNet (SD 1.5, SDXL): a multiple of the VAE factor alone. ``StableDiffusionXLPipeline.check_inputs`` raises
      "`height` and `width` have to be divisible by 8" (``StableDiffusionPipeline``'s the same), and
      ``UNet2DConditionModel.forward`` takes any latent side: where it is no multiple of ``2**num_upsamplers`` it
      passes each up block the skip's size (``forward_upsample_size``), so 1000 px (latents 125) runs;
    - SD3's MMDiT: the VAE factor x the transformer's ``patch_size`` (2): ``StableDiffusion3Pipeline.check_inputs``
      raises "`height` and `width` have to be divisible by 16 ... You can use height 992";
    - FLUX.1: the VAE factor x 2, its latents packed in 2x2 patches (``FluxPipeline._pack_latents``, a ``view`` of
      ``height // 2, 2``). Generating, ``check_inputs`` only warns ("Dimensions will be resized accordingly") and
      ``prepare_latents`` rounds down (``2 * (int(height) // (vae_scale_factor * 2))``): 1000 px makes 992. Training
      packs the VAE's latents as they come (``train_dreambooth_lora_flux.py``), and an odd latent side cannot be
      viewed in pairs: refused."""
    factor = vae_factor(spec)
    den = spec.main
    if den.cls == "SD3Transformer2DModel":
        patch = den.config.get("patch_size", 2)
        return SideRule(factor * patch, f"diffusers' pipeline raises otherwise: latents {factor}x smaller, cut "
                                        f"into {patch}x{patch} patches")
    if den.cls == "FluxTransformer2DModel":
        return SideRule(factor * 2, f"latents {factor}x smaller, packed in 2x2 patches", True)
    return SideRule(factor, f"diffusers' pipeline raises otherwise: latents {factor}x smaller")


def uneven_levels(spec: ModuleSpec, latent: tuple[int, int]) -> tuple[int, ...]:
    """The latent sides of a UNet's lower levels where ``latent`` (height, width) does not halve evenly down them,
    else (): each downsampler (a stride-2 convolution, padding 1) makes ``ceil(side / 2)``, and there is one per
    block but the last (``UNet2DConditionModel.num_upsamplers``, the up blocks' count less one)."""
    den = spec.main
    if den.cls != "UNet2DConditionModel":
        return ()
    levels = len(den.config.get("up_block_types") or den.config.get("block_out_channels") or ()) - 1
    if not any(side % 2 ** levels for side in latent):
        return ()
    side, out = max(latent, key=lambda v: v % 2 ** levels), []
    for _ in range(levels):
        side = -(-side // 2)
        out.append(side)
    return tuple(out)


def nearest_sides(side: int, step: int) -> str:
    """The valid sides either side of ``side`` (within :data:`SIDE_PIXELS`), in words."""
    low, high = SIDE_PIXELS
    below, above = side - side % step, side - side % step + step
    return " or ".join(str(s) for s in (below, above) if low <= s <= high)


def _data() -> Path:
    return Path(str(resources.files("gpuplan") / "data" / "modules" / "pipelines"))


@cache
def bundled_pipelines() -> dict[str, Path]:
    return {f.stem.replace("__", "/", 1): f for f in sorted(_data().glob("*__*.json"))}


@cache
def pipeline_aliases() -> dict[str, str]:
    """Every accepted name of a bundled pipeline, normalized, -> repo id."""
    table = {}
    for repo, path in bundled_pipelines().items():
        data = json.loads(path.read_text(encoding="utf-8"))
        for name in (repo, repo.split("/", 1)[1], *data.get("aliases", [])):
            table[normalize_name(name)] = repo
    return table


def bundled_pipeline(repo: str) -> ModuleSpec:
    data = json.loads(bundled_pipelines()[repo].read_text(encoding="utf-8"))
    return pipeline_spec(repo, data["model_index"], data["configs"], params=data.get("params"),
                         counted_by="the real classes on the meta device (bundled counts, checked by the tests)")


# ---- reading ----------------------------------------------------------------------------------------------------
def refuse_class(cls: str, where: str) -> GpuplanError:
    """The one sentence for a diffusers class gpuplan does not model."""
    return GpuplanError(
        f"{where} is a diffusers {cls}, which gpuplan does not model (it knows the inputs and pipeline of "
        f"{', '.join(DENOISERS)}, {', '.join(VAES)} and the {', '.join(TEXT_ENCODERS)} text encoders): "
        "`gpuplan simulate --module my_pkg.my_model:build` measures any module you build, on fake tensors")


def role_of(library: str, cls: str, where: str) -> str:
    """A component's role by its class, from the library that defines it: diffusers' denoisers and VAEs,
    transformers' text encoders. A class named with another library is refused, so that no module a config names
    is imported but these two (diffusers' ``pipeline_loading_utils.LOADABLE_CLASSES`` loads each from its own)."""
    roles = {**dict.fromkeys(DENOISERS, ("denoiser", "diffusers")), **dict.fromkeys(VAES, ("vae", "diffusers")),
             **dict.fromkeys(TEXT_ENCODERS, ("text_encoder", "transformers"))}
    if cls in roles:
        role, home = roles[cls]
        if library != home:
            raise GpuplanError(f"{where} names {cls} from the library {echo(library)}, but {cls} is a {home} "
                               f"class: write [\"{home}\", \"{cls}\"] in model_index.json")
        return role
    if library == "transformers":
        raise GpuplanError(f"{where} uses the transformers class {cls} as a text encoder, which gpuplan does not "
                           f"model (it knows {', '.join(TEXT_ENCODERS)})")
    raise refuse_class(cls, where)


# a component's key in model_index.json is an attribute of the pipeline and the name of its folder
COMPONENT_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,99}")


def component_entry(name: str, key: Any, entry: Any) -> tuple[str, str] | None:
    """``model_index.json``'s entry for ``key`` as (library, class), None where it names no component (a
    ``_`` key, a value that is no pair, a component left out as ``[null, null]``); a pair that is not two names,
    or a key that is no plain name (it is a folder: ``../x`` would climb out of the pipeline's), is refused."""
    if not isinstance(key, str) or key.startswith("_") or not isinstance(entry, list):
        return None
    if len(entry) == 2 and entry[1] is None:
        return None
    if len(entry) != 2 or not all(isinstance(x, str) and x.strip() for x in entry):
        raise GpuplanError(f"{name}: model_index.json's {echo(key)} must be [library, class name], as "
                           f"[\"diffusers\", \"AutoencoderKL\"], got {echo(entry)}")
    if not COMPONENT_KEY.fullmatch(key):
        raise GpuplanError(f"{name}: model_index.json names a component {echo(key)}; a component's name is a plain "
                           "name (letters, digits, _), the folder of its config.json beside model_index.json")
    return entry[0], entry[1]


# components a pipeline may list (model_index.json entries naming a library and class): the bundled pipelines list
# at most 9 (SD3: transformer, VAE, three text encoders, their three tokenizers, the scheduler); each is a
# config.json read, and from the Hub a request and a download of up to 64 MiB (s20-sec: a model_index.json of
# 20,000 entries asked the hub 20,000 times for one model name, past the page's deadline)
MAX_COMPONENTS = 16


def component_keys(name: str, model_index: dict[str, Any]) -> list[str]:
    """The keys of ``model_index`` that name a component (:func:`component_entry`), each checked, at most
    :data:`MAX_COMPONENTS`; else one sentence, before any component's config is read or fetched."""
    keys = [key for key, entry in model_index.items() if component_entry(name, key, entry) is not None]
    if len(keys) > MAX_COMPONENTS:
        raise GpuplanError(f"{name}: model_index.json lists {len(keys):,} components; a pipeline has at most "
                           f"{MAX_COMPONENTS} (SD3 lists 9)")
    return keys


def pipeline_spec(name: str, model_index: dict[str, Any], configs: dict[str, dict[str, Any]], *,
                  params: dict[str, int] | None = None, counted_by: str = "") -> ModuleSpec:
    """The spec of a pipeline: its model components (tokenizers, schedulers and feature extractors hold no
    weights; a safety checker is left out, with a note), counted exactly."""
    pipeline = model_index.get("_class_name") or "pipeline"
    if not isinstance(pipeline, str):
        raise GpuplanError(f"{name}: model_index.json's _class_name must be the pipeline's class name, as "
                           f"\"StableDiffusionPipeline\", got {echo(pipeline)}")
    components, notes = [], []
    for key, entry in model_index.items():
        pair = component_entry(name, key, entry)
        if pair is None:
            continue
        library, cls = pair
        if cls.endswith(("Tokenizer", "TokenizerFast", "Scheduler", "ImageProcessor", "FeatureExtractor")):
            continue
        if key in ("safety_checker", "feature_extractor", "image_encoder"):
            notes.append(f"the {key} ({cls}) the pipeline lists is not counted (pass {key}=None, as most do)")
            continue
        if key not in configs:
            raise GpuplanError(f"{name}: model_index.json lists {key} ({cls}) but its config ({key}/config.json) "
                               "was not found")
        role = role_of(library, cls, f"{name}'s {key}")
        config = configs[key]
        count = (params or {}).get(key)
        if count is None:  # a bundled pipeline's component copied into a folder: its count, without diffusers
            count = bundled_count(config, cls)
        if count is None:
            count = count_params(library, cls, config, where=f"{name}'s {key}/config.json")
        components.append(Component(name=key, role=role, library=library, cls=cls, config=config, params=count,
                                    dtype=str(config.get("torch_dtype") or "float32")))
    if not any(c.role == "denoiser" for c in components):
        raise GpuplanError(f"{name}: the pipeline ({pipeline}) has no denoiser gpuplan models ({', '.join(DENOISERS)})")
    return ModuleSpec(name=name, kind="diffusion", family=pipeline, components=tuple(components),
                      defaults=defaults(pipeline, components), counted_by=counted_by or counted_by_library(),
                      notes=tuple(notes))


def component_spec(name: str, config: dict[str, Any]) -> ModuleSpec:
    """One diffusers model config (a UNet's, a transformer's): a pipeline of that denoiser alone; its VAE and text
    encoders are not counted (their latents and embeddings count as cached), and the plan says so."""
    cls = diffusers_class(config) or "?"
    role = role_of("diffusers", cls, name)
    if role != "denoiser":
        raise GpuplanError(f"{name} is a {cls} ({role}): plan the pipeline it belongs to (a folder with "
                           "model_index.json, or its repo id)")
    key = "transformer" if cls != "UNet2DConditionModel" else "unet"
    known = bundled_count(config)
    component = Component(name=key, role=role, library="diffusers", cls=cls, config=config,
                          params=known if known is not None else count_params("diffusers", cls, config, where=name))
    pipeline = {"UNet2DConditionModel": "StableDiffusionXLPipeline" if config.get("addition_embed_type") == "text_time"
                else "StableDiffusionPipeline", "SD3Transformer2DModel": "StableDiffusion3Pipeline",
                "FluxTransformer2DModel": "FluxPipeline"}[cls]
    return ModuleSpec(name=name, kind="diffusion", family=cls, components=(component,),
                      defaults=defaults(pipeline, [component]), counted_by=counted_by_library(),
                      notes=(f"{name} is a {cls} alone: its pipeline's VAE and text encoders are not counted (their "
                             "latents and text embeddings count as cached); pass the pipeline's folder or repo id "
                             "to count them",))


def bundled_count(config: dict[str, Any], cls: str | None = None) -> int | None:
    """The bundled count of a component whose config equals one of the bundled pipelines' (``_`` keys aside), of
    class ``cls`` when given (a text encoder's config names none: CLIP-G's is built as CLIPTextModelWithProjection,
    whose projection another class would not count)."""
    def clean(c):
        return {k: v for k, v in c.items() if not k.startswith("_") or k == "_class_name"}

    for path in bundled_pipelines().values():
        data = json.loads(path.read_text(encoding="utf-8"))
        for key, other in data["configs"].items():
            same = cls is None or data["model_index"].get(key, [None, None])[1] == cls
            if same and clean(other) == clean(config) and key in (data.get("params") or {}):
                return data["params"][key]
    return None


def defaults(pipeline: str, components) -> dict[str, Any]:
    """Resolution, steps, guidance and text tokens the pipeline runs with by default (FLUX.1 without guidance
    embedding is schnell: 4 steps, 256 T5 tokens; the resolution is the denoiser's ``sample_size`` x 8)."""
    den = next(c for c in components if c.role == "denoiser")
    out = dict(PIPELINES.get(pipeline, {"steps": 50, "cfg": True}))
    if den.cls == "FluxTransformer2DModel" and not den.config.get("guidance_embeds", True):
        out.update(steps=4, t5_tokens=256)
    out["resolution"] = default_resolution(den)
    out["text_tokens"] = text_tokens(den, out)
    return out


def default_resolution(den: Component) -> int:
    """The image side a pipeline makes by default: FLUX.1's 1024 (``FluxPipeline.__call__``: ``height = height or
    self.default_sample_size * self.vae_scale_factor``, 128 x 8); the others' denoiser ``sample_size`` x 8
    (``StableDiffusionPipeline.__call__``: ``self.unet.config.sample_size * self.vae_scale_factor``), 128 when the
    config has none. A sample_size that is no whole number, or gives a side the plans do not take
    (:data:`SIDE_PIXELS`, :data:`SIDE_STEP`), is refused: it would be the resolution of every plan."""
    if den.cls == "FluxTransformer2DModel":
        return 1024
    size = den.config.get("sample_size", 128)
    low, high = SIDE_PIXELS
    if isinstance(size, bool) or not isinstance(size, int) or not (low <= 8 * size <= high) or (8 * size) % SIDE_STEP:
        raise GpuplanError(f"the {den.name} ({den.cls})'s sample_size {echo_value(size)} is not a latent side the "
                           f"pipeline can make (a whole number of {low // 8}-{high // 8}, even: images of {low}-{high} "
                           "pixels, 8x its sample_size); fix the config")
    return 8 * size


def text_tokens(denoiser: Component, defaults: dict[str, Any]) -> int:
    """Text tokens the denoiser attends to: CLIP's 77 (UNets), CLIP + T5 joined (SD3), T5 alone (FLUX.1)."""
    if denoiser.cls == "UNet2DConditionModel":
        return CLIP_TOKENS
    if denoiser.cls == "SD3Transformer2DModel":
        return CLIP_TOKENS + defaults.get("t5_tokens", 256)
    return defaults.get("t5_tokens", 512)


def counted_by_library(library: str = "diffusers") -> str:
    """Who counted a spec's parameters: ``library``'s real classes, at the release installed (a Whisper or a T5 is
    counted by transformers, a pipeline by diffusers and the transformers of its text encoders)."""
    from importlib import metadata

    try:
        version = metadata.version(library)
    except metadata.PackageNotFoundError:
        version = "?"
    return f"the real classes on the meta device ({library} {version})"


def read_pipeline_folder(folder: Path, name: str) -> ModuleSpec:
    """A local pipeline folder: ``model_index.json`` and each component's ``<name>/config.json``."""
    index = read_json(folder / "model_index.json")
    configs = {key: read_json(folder / key / "config.json") for key in component_keys(name, index)
               if (folder / key / "config.json").is_file()}
    return pipeline_spec(name, index, configs)


def read_json(path: Path) -> dict[str, Any]:
    """A pipeline's JSON file (``model_index.json``, a component's ``config.json``), through the bounded reader."""
    from ..userfiles import load_json

    data = load_json(path, "pipeline config")
    if not isinstance(data, dict):
        raise GpuplanError(f"{path} holds a JSON {type(data).__name__}, not an object")
    return data


# ---- the real classes -------------------------------------------------------------------------------------------
def library(name: str):
    """Import diffusers or transformers quietly (:func:`~.record.silent_stderr`)."""
    import importlib
    import sys

    from .record import silent_stderr

    if name in sys.modules:
        return sys.modules[name]
    try:
        with silent_stderr():
            return importlib.import_module(name)
    except ImportError:
        extra = "diffusion" if name == "diffusers" else "sim"
        raise GpuplanError(f"counting this model needs {name}, which is not installed: pip install "
                           f"'gpuplan[{extra}]' (torch first: pip install torch==2.13.0)") from None


def build(library_name: str, cls: str, config: dict[str, Any], dtype: str = "bfloat16", where: str = "the config"):
    """The component's real class built from its config on the meta device, in ``dtype``; a config the class
    cannot be built from (a negative or zero size, a wrong type: whatever the library raises) is refused in one
    sentence naming ``where``, as :func:`gpuplan.model.trace.build_meta` words a decoder's."""
    import torch

    from .record import silent_stderr

    lib = library(library_name)
    with silent_stderr():  # the class's module is imported now (lazily)
        target = getattr(lib, cls, None)
    if target is None:
        raise GpuplanError(f"{library_name} has no class {cls} (the config names it): upgrade {library_name}, or "
                           "pass a config of a class it has")
    check_depth(config, where)
    base = lib.ModelMixin if library_name == "diffusers" else lib.PreTrainedModel
    if not (isinstance(target, type) and issubclass(target, base)):  # s17-sec: transformers.pipeline was called
        raise GpuplanError(f"{where} names {library_name}.{cls}, which is not a model class ({base.__name__}): "
                           "name the model's class in architectures, as its checkpoint's config does")
    try:
        with silent_stderr(), torch.device("meta"):
            if library_name == "diffusers":
                module = getattr(lib, cls).from_config({k: v for k, v in config.items() if k != "_class_name"})
            else:
                clean = {k: v for k, v in config.items() if k not in ("architectures", "torch_dtype", "dtype")}
                module = getattr(lib, cls)(lib.AutoConfig.for_model(**clean))
            return module.to(getattr(torch, dtype))
    except Exception as err:  # the library's own checks and arithmetic on the config's values, in one sentence
        said = " ".join(line.strip() for line in str(err).splitlines() if line.strip())  # pydantic's: two lines
        raise GpuplanError(f"{library_name} {getattr(lib, '__version__', '?')} cannot build the {cls} of {where} "
                           f"({type(err).__name__}: {said[:240]}); fix the config's sizes or pass the model's "
                           "original config") from None


def count_params(library_name: str, cls: str, config: dict[str, Any], where: str = "the config") -> int:
    return sum(p.numel() for p in build(library_name, cls, config, where=where).parameters())


def count_tensors(library_name: str, cls: str, config: dict[str, Any], where: str = "the config") -> int:
    """The parameter tensors of the class built from ``config`` (what an optimizer's loop steps over, one by one)."""
    return len(list(build(library_name, cls, config, where=where).parameters()))


# ---- what to record -----------------------------------------------------------------------------------------------
def linear_role(name: str) -> str:
    leaf = name.rsplit(".", 2)
    tail = ".".join(leaf[-2:]) if leaf[-1].isdigit() else leaf[-1]
    if tail in ATTENTION_LEAVES:
        return "attention"
    return "block" if any(marker in f".{name}" for marker in BLOCK_MARKERS) else "other"


DENOISER_WAYS = ("inference", "train-full", "train-full-gc", "train-lora-attention", "train-lora-attention-gc",
                 "train-lora-all", "train-lora-all-gc")
LATENTS = (64 * 64, 96 * 96, 112 * 112)  # latent pixels of the fitting passes (512, 768 px) and the check (896 px)
# the part name of a denoiser's profile recorded under autocast (a full fine-tune's fp32 master weights, fp16-mixed or
# bf16-mixed: diffusers' train_dreambooth.py keeps the trained U-Net in fp32 and accelerate's prepare wraps its
# forward in torch.autocast; kohya's trainers run it in accelerator.autocast(), fp32 unless --full_fp16/--full_bf16,
# which cast the weights to 16 bits and keep autocast on: they assert mixed_precision fp16/bf16, train_network.py at
# 48d368fa lines 813-825). A 16-bit denoiser under autocast (those flags; every LoRA job under *-mixed) is planned
# from the 16-bit profile: its fp32 norm outputs are sized in bench/lora_autocast.py, not recorded.
AUTOCAST_PART = "denoiser-autocast"
AUTOCAST_WAYS = ("inference", "train-full", "train-full-gc")


def denoiser_part(c: Component, ways: tuple[str, ...] = DENOISER_WAYS, autocast: str = ""):
    """The denoiser as :mod:`.record` runs it: latents of ``latent_pixels`` (square in the recording) and
    ``text_tokens`` of conditioning, fed as its pipeline feeds it (see the module docstring); ``autocast`` (a 16-bit
    dtype) records it as a mixed-precision full fine-tune runs it, fp32 weights under CUDA autocast's op lists
    (:mod:`.autocast`: the group and layer norms in fp32, their outputs and what reads them too, and every
    convolution's and linear's casts of its fp32 weight and its input), in :data:`AUTOCAST_WAYS`."""
    from .record import Part

    t5 = c.cls != "UNet2DConditionModel"
    tokens = (256, 512, 640) if t5 else (77, 154, 231)
    return Part(name=c.cls, variables=("latent_pixels", "text_tokens"), base=(LATENTS[0], tokens[0]),
                second=(LATENTS[1], tokens[1]), check=(LATENTS[2], tokens[2]), autocast=autocast,
                **({"dtype": f"{autocast} under autocast, fp32 weights"} if autocast else {}),
                build=lambda way: _with_way(build(c.library, c.cls, c.config), way, autocast),
                inputs=lambda batch, sizes: _denoiser_inputs(c, batch, sizes), ways=ways, role=linear_role,
                versions=_versions("torch", "diffusers", "peft"))


def _with_way(module, way: str, autocast: str = ""):
    """Checkpointing and LoRA adapters as the way says (diffusers' ``enable_gradient_checkpointing``; peft
    adapters through ``add_adapter``, rank 16, on the attention projections or every linear of the blocks). Under
    ``autocast`` the recomputed forward runs under it again, as torch.utils.checkpoint restores the autocast state of
    the forward it saved (its ``context_fn``'s recompute context carries the replayed lists here)."""
    if way.endswith("-gc"):
        module.enable_gradient_checkpointing(_recompute_under(autocast) if autocast else None)
    if "-lora-" in way:
        from peft import LoraConfig

        roles = ("attention",) if "-attention" in way else ("attention", "block")
        targets = [n for n, sub in module.named_modules() if linear_role(n) in roles
                   and (hasattr(sub, "in_features") or getattr(sub, "kernel_size", None) in ((1, 1), (1,)))]
        module.add_adapter(LoraConfig(r=16, lora_alpha=16, target_modules=targets))
    return module


def _recompute_under(autocast: str):
    """diffusers' default checkpointing function (``ModelMixin.enable_gradient_checkpointing``: non-reentrant
    ``torch.utils.checkpoint.checkpoint``) whose recompute runs under the replayed autocast lists."""
    import contextlib

    import torch

    from .autocast import mode

    def recompute(module, *args):
        return torch.utils.checkpoint.checkpoint(module.__call__, *args, use_reentrant=False,
                                                 context_fn=lambda: (contextlib.nullcontext(), mode(autocast)))

    return recompute


def _denoiser_inputs(c: Component, batch: int, sizes: tuple[int, ...]):
    import torch

    pixels, tokens = sizes
    side = math.isqrt(pixels)
    cfg = c.config
    dt = torch.bfloat16
    t = torch.full((batch,), 500, dtype=torch.long)
    if c.cls == "UNet2DConditionModel":
        width = cfg.get("cross_attention_dim") or 1280
        width = width[0] if isinstance(width, list) else width
        kwargs: dict[str, Any] = {"encoder_hidden_states": torch.randn(batch, tokens, width, dtype=dt)}
        if cfg.get("addition_embed_type") == "text_time":
            pooled = cfg["projection_class_embeddings_input_dim"] - 6 * cfg["addition_time_embed_dim"]
            kwargs["added_cond_kwargs"] = {"text_embeds": torch.randn(batch, pooled, dtype=dt),
                                           "time_ids": torch.randn(batch, 6, dtype=dt)}
        return (torch.randn(batch, cfg.get("in_channels", 4), side, side, dtype=dt), t), kwargs
    context = torch.randn(batch, tokens, cfg.get("joint_attention_dim", 4096), dtype=dt)
    pooled = torch.randn(batch, cfg.get("pooled_projection_dim", 768), dtype=dt)
    if c.cls == "SD3Transformer2DModel":
        latents = torch.randn(batch, cfg.get("in_channels", 16), side, side, dtype=dt)
        return (), {"hidden_states": latents, "encoder_hidden_states": context, "pooled_projections": pooled,
                    "timestep": t}
    patches = pixels // 4  # FluxPipeline._pack_latents: 2x2 latent patches, 16 channels each -> 64
    kwargs = {"hidden_states": torch.randn(batch, patches, cfg.get("in_channels", 64), dtype=dt),
              "encoder_hidden_states": context, "pooled_projections": pooled, "timestep": t.to(dt) / 1000,
              "img_ids": torch.zeros(patches, 3, dtype=dt), "txt_ids": torch.zeros(tokens, 3, dtype=dt)}
    if cfg.get("guidance_embeds", True):
        kwargs["guidance"] = torch.full((batch,), 3.5, dtype=dt)
    return (), kwargs


def vae_part(c: Component, direction: str):
    """The VAE encoding images (training without cached latents) or decoding latents (generation). Its encoder
    pads each downsampling input by one row and column (``Downsample2D``, ``padding=0``), so its traffic grows with
    ``latent_edge`` (height + width, in latent pixels) as well as with the pixels: the recording varies both, on
    non-square latents."""
    from .record import Part

    def inputs(batch, sizes):
        import torch

        h, w = latent_shape(*sizes)
        if direction == "encode":
            return (torch.randn(batch, c.config.get("in_channels", 3), 8 * h, 8 * w, dtype=torch.bfloat16),), {}
        return (torch.randn(batch, c.config.get("latent_channels", 4), h, w, dtype=torch.bfloat16),), {}

    def forward(module, args, kwargs):
        if direction == "encode":
            return module.encode(*args).latent_dist.mean
        return module.decode(*args).sample

    return Part(name=f"{c.cls}-{direction}", variables=("latent_pixels", "latent_edge"), base=(64 * 64, 128),
                second=(48 * 80, 32 + 128), check=(96 * 120, 216),
                build=lambda way: build(c.library, c.cls, c.config), inputs=inputs, forward=forward,
                versions=_versions("torch", "diffusers"))


def latent_shape(pixels: int, edge: int) -> tuple[int, int]:
    """Height and width of a latent with ``pixels`` = h·w and ``edge`` = h + w."""
    root = math.isqrt(edge * edge - 4 * pixels)
    h, w = (edge - root) // 2, (edge + root) // 2
    if h * w != pixels or h + w != edge:
        raise GpuplanError(f"no latent has {pixels} pixels and height + width {edge}")
    return h, w


# the text encoders' linears a trainer's LoRA adapts when it trains them: diffusers' train_dreambooth_lora*.py
# ``--train_text_encoder``: LoraConfig(target_modules=["q_proj", "k_proj", "v_proj", "out_proj"]) on CLIP; kohya's
# networks/lora.py, lora_sd3.py and lora_flux.py: every Linear under TEXT_ENCODER_TARGET_REPLACE_MODULE
# ("CLIPAttention", "CLIPSdpaAttention", "CLIPMLP", and in lora_sd3.py and lora_flux.py "T5Attention",
# "T5DenseGatedActDense"), so CLIP's fc1 and fc2 and T5's attention (q, k, v, o) and gated MLP (wi_0, wi_1, wo)
TEXT_LORA_LEAVES = {"attention": ("q_proj", "k_proj", "v_proj", "out_proj"),
                    "all": ("q_proj", "k_proj", "v_proj", "out_proj", "fc1", "fc2")}
T5_LORA_LEAVES = {"attention": ("q", "k", "v", "o"), "all": ("q", "k", "v", "o", "wi_0", "wi_1", "wo")}
# CLIP: inference, LoRA (both presets), and the whole encoder trained with and without checkpointing (diffusers'
# train_dreambooth.py and kohya's train_db.py / sdxl_train.py ``--train_text_encoder``, which also call
# ``text_encoder.gradient_checkpointing_enable()`` under ``--gradient_checkpointing``)
TEXT_ENCODER_WAYS = ("inference", "train-lora-attention", "train-lora-all", "train-full", "train-full-gc")
# T5: inference, the whole encoder trained (diffusers' train_dreambooth_sd3.py ``--train_text_encoder`` trains
# text_encoder_three too; kohya's sd3_train.py ``--train_t5xxl``), and kohya's LoRA on every linear of its blocks
# (sd3_train_network.py and flux_train_network.py with network_args train_t5xxl=True), checkpointed as train_network.py
# checkpoints a trained encoder under --gradient_checkpointing (``t_enc.gradient_checkpointing_enable()``) or not
T5_WAYS = ("inference", "train-full", "train-full-gc", "train-lora-all", "train-lora-all-gc")


def text_lora_role(name: str) -> str:
    """A text encoder's linear by what the trainers' LoRA presets adapt: ``attention`` (CLIP's q, k, v, out; T5's
    q, k, v, o), ``block`` (CLIP's MLP fc1 and fc2; T5's wi_0, wi_1, wo), ``other`` (the projection of
    CLIPTextModelWithProjection)."""
    leaf = name.rsplit(".", 1)[-1]
    if ".block." in f".{name}":  # T5: encoder.block.N.layer.0.SelfAttention.q, ...layer.1.DenseReluDense.wi_0
        return "attention" if leaf in T5_LORA_LEAVES["attention"] else \
            "block" if leaf in T5_LORA_LEAVES["all"] else "other"
    if ".layers." not in f".{name}":
        return "other"
    return "attention" if leaf in TEXT_LORA_LEAVES["attention"] else \
        "block" if leaf in TEXT_LORA_LEAVES["all"] else "other"


def _text_with_way(module, way: str):
    """peft adapters (rank 16) on the linears ``way`` names (:data:`TEXT_LORA_LEAVES`), for a trained encoder;
    transformers' non-reentrant checkpointing of each encoder layer for a ``-gc`` way."""
    if way.endswith("-gc"):
        module.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
    if "-lora-" in way:  # peft's own injection: transformers' add_adapter asks for a newer peft
        from peft import LoraConfig, inject_adapter_in_model

        roles = ("attention",) if way.endswith("-attention") else ("attention", "block")
        targets = [n for n, sub in module.named_modules() if hasattr(sub, "in_features") and text_lora_role(n) in roles]
        module = inject_adapter_in_model(LoraConfig(r=16, lora_alpha=16, target_modules=targets), module)
    return module


def text_encoder_part(c: Component, ways: tuple[str, ...] = ("inference",)):
    """A text encoder over its prompt's tokens: CLIP's 77 always, T5's as many as the pipeline keeps; a CLIP encoder
    trained with LoRA adapters in ``ways`` (:data:`TEXT_ENCODER_WAYS`)."""
    from .record import Part

    t5 = c.cls == "T5EncoderModel"

    def inputs(batch, sizes):
        import torch

        tokens = sizes[0] if t5 else CLIP_TOKENS
        return (torch.randint(0, 1000, (batch, tokens)),), {}

    variables = ("text_tokens",) if t5 else ()
    return Part(name=c.cls, variables=variables, base=(256,) if t5 else (), second=(512,) if t5 else (),
                third=(384,) if t5 else (), check=(640,) if t5 else (), degree=2 if t5 else 1,
                build=lambda way: _text_with_way(build(c.library, c.cls, c.config), way), inputs=inputs,
                ways=ways, role=text_lora_role, versions=_versions("torch", "transformers", "peft"))


def _versions(*names: str) -> dict[str, str]:
    """The releases of the libraries a recording ran (``names``; default: all four)."""
    from importlib import metadata

    out = {}
    for name in names or ("torch", "diffusers", "transformers", "peft"):
        with contextlib.suppress(metadata.PackageNotFoundError):
            out[name] = metadata.version(name)
    return out
