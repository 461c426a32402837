"""Encoder-decoders (Whisper, T5, BART) and encoders (ViT, CLIP, SigLIP) as models: transformers' configs, counted
and profiled with the real classes.

Each family's inputs are what its training and inference feed it:

- Whisper: the log-mel spectrogram of a 30-second window, ``num_mel_bins x 2·max_source_positions`` (3,000 frames;
  ``WhisperFeatureExtractor`` pads every clip to 30 s), which the encoder's two convolutions (the second with stride
  2) turn into ``max_source_positions`` = 1,500 frames whatever the clip's length; the decoder runs the transcript's
  tokens (``decoder_tokens``, at most ``max_target_positions`` = 448) with cross-attention to those frames;
- T5 and BART: the source's tokens through the encoder (``encoder_tokens``) and the target's through the decoder
  (``decoder_tokens``), each with its LM head (a bare ``BartModel`` checkpoint is trained and run as
  ``BartForConditionalGeneration``, with the same parameters); T5's attention adds a relative position bias, one
  float per head and pair of tokens, to every score (SDPA takes it as its mask), and BART builds 4-D attention masks,
  so their profiles are of degree 2 (:data:`PAIRWISE`);
- ViT: one image at the config's ``image_size`` (``(image_size / patch_size)²`` patches and the class token);
  CLIP and SigLIP: an image and a text of the text model's ``max_position_embeddings`` tokens (77; SigLIP pads to
  64), through both towers to their embeddings (``get_image_features``, ``get_text_features``). The contrastive
  logits of a batch against itself (batch² values, a few kilobytes) are left out: they are no polynomial of degree
  1 in the batch;
- text encoders (BERT, RoBERTa, XLM-RoBERTa, DeBERTa-v2/v3, ModernBERT): one sequence of ``encoder_tokens`` tokens
  (``input_ids`` and an ``attention_mask``, as a tokenizer's padded batch feeds them) through the classifier
  fine-tuning builds (``...ForSequenceClassification``, 2 labels unless the config says more; a config naming a
  pretraining head such as ``BertForMaskedLM`` is fine-tuned with this one, the Trainer's
  ``AutoModelForSequenceClassification`` recipe). Their attention takes a 4-D mask (batch x 1 x query x key, built
  by transformers' masking_utils from the padding mask; DeBERTa's disentangled attention and ModernBERT's sliding
  window are of the same shape), so their profiles are of degree 2 (:data:`PAIRWISE`).
"""

from __future__ import annotations

import json
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

from ..errors import GpuplanError, echo_value, normalize_name
from .families import FAMILIES, TEXT_ENCODERS
from .module_spec import Component, ModuleSpec

# the families whose config is the vision tower itself (CLIP's and SigLIP's hold it in vision_config)
VISION_TOWERS = ("vit", "clip_vision_model", "siglip_vision_model")

# tensors of one value per pair of tokens, so profiles of degree 2 in the tokens: T5's relative position bias (heads x
# query x key, added to every score), BART's 4-D attention masks (batch x 1 x query x key, built by transformers'
# masking_utils for its decoder's causal and cross attention)
PAIRWISE = ("t5", "mt5", "umt5", "bart", "mbart", *TEXT_ENCODERS)
# the projections peft's usual recipes adapt (the Whisper int8 LoRA example: q_proj and v_proj; T5: q and v; peft's
# TRANSFORMERS_MODELS_TO_LORA_TARGET_MODULES_MAPPING: BERT and RoBERTa query and value, DeBERTa-v2 query_proj and
# value_proj; ModernBERT, which peft maps to none, has one fused query-key-value projection, Wqkv, in every layer)
ATTENTION_LEAVES = ("q_proj", "v_proj", "q", "v", "query", "value", "query_proj", "value_proj", "Wqkv")
# the heads a text encoder's config may name that fine-tuning keeps (others, ForMaskedLM, get the family's classifier)
TEXT_HEADS = ("ForSequenceClassification", "ForTokenClassification", "ForQuestionAnswering")
HEADS = ("lm_head", "proj_out", "classifier")  # output heads: not adapted by LoRA
# the part name of a text encoder's profile recorded under autocast (fp16-mixed and bf16-mixed full fine-tunes)
AUTOCAST_PART = "model-autocast"


def _data() -> Path:
    return Path(str(resources.files("gpuplan") / "data" / "modules" / "models"))


@cache
def bundled_models() -> dict[str, Path]:
    return {f.stem.replace("__", "/", 1): f for f in sorted(_data().glob("*__*.json"))}


@cache
def model_aliases() -> dict[str, str]:
    table = {}
    for repo, path in bundled_models().items():
        data = json.loads(path.read_text(encoding="utf-8"))
        for name in (repo, repo.split("/", 1)[1], *data.get("aliases", [])):
            table[normalize_name(name)] = repo
    return table


def bundled_model(repo: str, *, count: bool = False) -> ModuleSpec:
    data = json.loads(bundled_models()[repo].read_text(encoding="utf-8"))
    params = None if count else (data.get("params") or {}).get("model")
    return model_spec(repo, data["config"], params=params, tensors=(data.get("tensors") or {}).get("model", 0),
                      counted_by="" if count else "the real class on the meta device (bundled count, checked by the "
                      "tests)")


def bundled_count(config: dict[str, Any]) -> int | None:
    """The bundled count of a model whose config equals a bundled one's (``_`` keys aside): no transformers
    needed to count it."""
    def clean(c):
        return {k: v for k, v in c.items() if not k.startswith("_")}

    for path in bundled_models().values():
        data = json.loads(path.read_text(encoding="utf-8"))
        if clean(data["config"]) == clean(config) and "model" in (data.get("params") or {}):
            return data["params"]["model"]
    return None


def class_of(config: dict[str, Any]) -> str:
    """The class a config's ``architectures`` names, else its family's; an encoder-decoder runs with its LM head
    (its family's ``...ForConditionalGeneration`` unless the config names one): a bare ``BartModel`` has no logits,
    and the logits are what its training holds most of."""
    architectures = config.get("architectures")
    named = architectures[0] if isinstance(architectures, list) and architectures else None
    kind, default, _ = FAMILIES[config["model_type"]]
    if kind == "encoder-decoder" and not (isinstance(named, str) and named.endswith("ForConditionalGeneration")):
        return default
    if config["model_type"] in TEXT_ENCODERS and not (isinstance(named, str) and (
            named.endswith(TEXT_HEADS) or named == default.replace("ForSequenceClassification", "Model"))):
        return default  # a pretraining head (BertForMaskedLM) or none: fine-tuned as a classifier
    return named if isinstance(named, str) else default


def model_spec(name: str, config: dict[str, Any], *, params: int | None = None, tensors: int = 0,
               counted_by: str = "") -> ModuleSpec:
    """The spec of an encoder-decoder or encoder: one component, the model, counted exactly (``tensors``: its
    parameter tensors where counted, 0 when not)."""
    from .diffusers import count_params, counted_by_library
    from .validate import ENCODER_POSITIVE, checked_config

    config = checked_config(config, name, vision=config["model_type"] in VISION_TOWERS, positive=ENCODER_POSITIVE)
    kind = FAMILIES[config["model_type"]][0]
    cls = class_of(config)
    if params is None:
        params = bundled_count(config)
    if params is None:
        params = count_params("transformers", cls, config, where=name)
    component = Component(name="model", role="model", library="transformers", cls=cls, config=config, params=params,
                          tensors=tensors,
                          dtype=str(config.get("torch_dtype") or config.get("dtype") or "float32"))
    return ModuleSpec(name=name, kind=kind, family=str(config["model_type"]), components=(component,),
                      defaults=defaults(config, name), counted_by=counted_by or counted_by_library("transformers"),
                      notes=_tied_head_note(config))


def _tied_head_note(config: dict[str, Any]) -> tuple[str, ...]:
    """What a T5 v1.1 config's untied head means under transformers 5: its T5Config ties the LM head to the shared
    embeddings whatever ``tie_word_embeddings`` says (``T5Config.__post_init__``: "we tie weights always"), so the
    count is the tied model's; transformers 4 built the separate head the config asks for."""
    if config["model_type"] != "t5" or config.get("tie_word_embeddings") is not False:
        return ()
    head = int(config.get("vocab_size", 32128)) * int(config.get("d_model", 512))
    return (f"transformers 5 ties T5's LM head to its embeddings whatever tie_word_embeddings says; under transformers "
            f"4 this config built a separate head of {head:,} more parameters",)


def defaults(config: dict[str, Any], where: str = "config.json") -> dict[str, Any]:
    """What one sample holds when the scenario does not say: Whisper's 1,500 encoder frames (a 30 s window) and
    up to 448 transcript tokens (a training clip's own count: gpuplan.scenario.modules.label_tokens); the longest
    sources and targets the position tables allow (T5: none, 512 taken)."""
    family = config["model_type"]
    if family == "whisper":
        return {"encoder_frames": int(config.get("max_source_positions", 1500)),
                "decoder_tokens_max": int(config.get("max_target_positions", 448))}
    if family in ("bart", "mbart"):
        return {"encoder_tokens_max": int(config.get("max_position_embeddings", 1024))}
    if family in TEXT_ENCODERS:
        return {"encoder_tokens_max": text_positions(config)}
    if family in ("vit", "clip_vision_model", "siglip_vision_model", "clip", "siglip"):
        size, patch = image_sides(config, where)
        return {"image_size": size, "patch_size": patch}
    return {}


def text_positions(config: dict[str, Any]) -> int:
    """The tokens a text encoder takes: ``max_position_embeddings`` (BERT 512, ModernBERT 8,192 as
    ModernBertConfig's default), less RoBERTa's and XLM-RoBERTa's ``pad_token_id + 1`` (their position ids start
    after the padding index: ``create_position_ids_from_input_ids``, so 514 positions hold 512 tokens)."""
    family = config["model_type"]
    positions = int(config.get("max_position_embeddings", 8192 if family == "modernbert" else 512))
    if family in ("roberta", "xlm-roberta"):
        positions -= int(config.get("pad_token_id", 1) if config.get("pad_token_id") is not None else 1) + 1
    return max(positions, 1)


def image_sides(config: dict[str, Any], where: str) -> tuple[int, int]:
    """The side of the square image a vision tower takes and of its patches (``image_size``, ``patch_size``; 224 and
    16 when unset, as ViTConfig's defaults), checked: [height, width] only when square, as the profiles record
    square images, and a patch no larger than the image (``ViTPatchEmbeddings``: (image_size // patch_size)^2
    patches; a larger patch leaves none)."""
    vision = config.get("vision_config") or config
    sides = []
    for key, default in (("image_size", 224), ("patch_size", 16)):
        value = vision.get(key, default)
        if isinstance(value, list) and len(value) == 2 and value[0] == value[1]:
            value = value[0]
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise GpuplanError(f"{where}: {key} {echo_value(value)} is not one side of a square in pixels; gpuplan "
                               "models square images (give one whole number)")
        sides.append(value)
    if sides[1] > sides[0]:
        raise GpuplanError(f"{where}: patch_size {sides[1]} is larger than image_size {sides[0]}, which leaves no "
                           "patch; fix one of them")
    return sides[0], sides[1]


def model_part(spec: ModuleSpec, c: Component, autocast: str = ""):
    """The model as :mod:`.record` runs it (see the module docstring for its inputs); ``autocast`` (a 16-bit dtype)
    records it as a mixed-precision full fine-tune runs it: fp32 weights under CUDA autocast (:mod:`.autocast`), in
    the inference pass its ops are read from and the full fine-tune's ways (:data:`AUTOCAST_PART`)."""
    from .diffusers import _versions, build
    from .record import Part

    family = spec.family
    variables = FAMILIES[family][2]
    if len(variables) == 1:  # Whisper's decoder tokens, a text encoder's tokens
        base, second, third, check = (64,), (128,), (96,), (192,)
    elif variables:
        base, second, third, check = (64, 32), (128, 64), (96, 48), (160, 80)
    else:
        base = second = third = check = ()
    ways = ("inference", "train-full", "train-full-gc", "train-lora-attention", "train-lora-attention-gc")
    if autocast:  # fp32 master weights are a full fine-tune's (a LoRA job's frozen base is planned in 16 bits)
        ways = ("inference", "train-full", "train-full-gc")
    return Part(name=c.cls, variables=variables, autocast=autocast,
                dtype=f"{autocast} under autocast, fp32 weights" if autocast else "bfloat16", base=base,
                second=second, third=third, check=check,
                degree=2 if family in PAIRWISE else 1, ways=ways, role=linear_role,
                forward=_both_towers if family in ("clip", "siglip") else None,
                versions=_versions("torch", "transformers", "peft"),
                build=lambda way: _with_way(build("transformers", c.cls, recorded_config(family, c.config)), way,
                                            autocast),
                inputs=lambda batch, sizes: _inputs(spec, c, batch, sizes))


# the attention-dropout key of the families whose attention runs through SDPA (transformers' default)
SDPA_DROPOUT = {"bert": "attention_probs_dropout_prob", "roberta": "attention_probs_dropout_prob",
                "xlm-roberta": "attention_probs_dropout_prob"}


def recorded_config(family: str, config: dict[str, Any]) -> dict[str, Any]:
    """The config a family is recorded with: BERT's and RoBERTa's attention dropout (0.1) off. On CUDA, SDPA runs
    dropout inside its fused kernel (FlashAttention and the memory-efficient kernel draw it from a Philox seed: no
    mask and no score matrix kept for the backward), where on the CPU the fake-tensor recording runs on, a dropout
    above 0 sends SDPA to its math path, which keeps every layer's batch x heads x tokens² scores, softmax and mask
    (12 bytes a score in bf16: BERT-base's train-full peak at batch 4 and 512 tokens read 2.5 GiB instead of about
    0.7). The ops are the same either way (SDPA's, from the inference passes, which run no dropout). DeBERTa's
    disentangled attention is eager matmuls on CUDA too, so its dropout is kept; ModernBERT's is 0."""
    key = SDPA_DROPOUT.get(family)
    return {**config, key: 0.0} if key else config


def _both_towers(module, args, kwargs):
    """CLIP's and SigLIP's image and text embeddings, side by side (what contrastive training and retrieval run)."""
    import torch

    image = module.get_image_features(pixel_values=kwargs["pixel_values"]).pooler_output
    text = module.get_text_features(input_ids=kwargs["input_ids"]).pooler_output
    return torch.cat([image.flatten(), text.flatten()])


def linear_role(name: str) -> str:
    leaf = name.rsplit(".", 1)[-1]
    if leaf in HEADS:
        return "head"
    return "attention" if leaf in ATTENTION_LEAVES else "block"


def _with_way(module, way: str, autocast: str = ""):
    """Checkpointing (transformers' non-reentrant ``gradient_checkpointing_enable``) and peft's LoRA adapters, rank
    16, on the attention's query and value projections (or every linear of the blocks) as the way says. Under
    ``autocast`` the recomputed forward runs under it again, as torch.utils.checkpoint restores the autocast state
    of the forward it saved (its ``context_fn``'s recompute context carries the replayed lists here)."""
    if way.endswith("-gc"):
        kwargs: dict[str, Any] = {"use_reentrant": False}
        if autocast:
            import contextlib

            from .autocast import mode

            kwargs["context_fn"] = lambda: (contextlib.nullcontext(), mode(autocast))
        module.gradient_checkpointing_enable(gradient_checkpointing_kwargs=kwargs)
    if "-lora-" in way:
        from peft import LoraConfig, inject_adapter_in_model

        roles = ("attention",) if "-attention" in way else ("attention", "block")
        targets = [n for n, sub in module.named_modules() if hasattr(sub, "in_features") and linear_role(n) in roles]
        module = inject_adapter_in_model(LoraConfig(r=16, lora_alpha=16, target_modules=targets), module)
    return module


def _inputs(spec: ModuleSpec, c: Component, batch: int, sizes: tuple[int, ...]):
    import torch

    cfg = c.config
    family = spec.family
    if family == "whisper":
        frames = 2 * int(cfg.get("max_source_positions", 1500))
        return (), {"input_features": torch.randn(batch, int(cfg.get("num_mel_bins", 80)), frames,
                                                  dtype=torch.bfloat16),
                    "decoder_input_ids": torch.randint(0, 1000, (batch, sizes[0]))}
    if family in TEXT_ENCODERS:
        return (), {"input_ids": torch.randint(0, 1000, (batch, sizes[0])),
                    "attention_mask": torch.ones(batch, sizes[0], dtype=torch.long)}
    if FAMILIES[family][0] == "encoder-decoder":
        return (), {"input_ids": torch.randint(0, 1000, (batch, sizes[0])),
                    "decoder_input_ids": torch.randint(0, 1000, (batch, sizes[1]))}
    vision = cfg.get("vision_config") or cfg
    size = spec.defaults["image_size"]
    pixels = torch.randn(batch, int(vision.get("num_channels", 3)), size, size, dtype=torch.bfloat16)
    if family in ("clip", "siglip"):
        text = cfg.get("text_config") or {}
        tokens = int(text.get("max_position_embeddings", 77 if family == "clip" else 64))
        return (), {"input_ids": torch.randint(0, 1000, (batch, tokens)), "pixel_values": pixels}
    return (), {"pixel_values": pixels}
