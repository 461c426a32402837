"""Which transformers and diffusers configs are not decoder LLMs, read off the config alone: the families of
encoders and encoder-decoders modelled here (:data:`FAMILIES`, profiled in :mod:`.encoders`), the families refused
(:data:`NOT_DECODERS`), and a diffusers class's name (:func:`diffusers_class`, planned in :mod:`.diffusers`).

Apart from those two modules so that telling a decoder's config from the rest (:func:`.kinds.of_config`, on every
model a plan reads) loads neither.
"""

from __future__ import annotations

from typing import Any

from ..errors import GpuplanError

# model_type -> (kind, the class built when the config names none transformers has, its variables)
FAMILIES: dict[str, tuple[str, str, tuple[str, ...]]] = {
    "whisper": ("encoder-decoder", "WhisperForConditionalGeneration", ("decoder_tokens",)),
    "t5": ("encoder-decoder", "T5ForConditionalGeneration", ("encoder_tokens", "decoder_tokens")),
    "mt5": ("encoder-decoder", "MT5ForConditionalGeneration", ("encoder_tokens", "decoder_tokens")),
    "umt5": ("encoder-decoder", "UMT5ForConditionalGeneration", ("encoder_tokens", "decoder_tokens")),
    "bart": ("encoder-decoder", "BartForConditionalGeneration", ("encoder_tokens", "decoder_tokens")),
    "mbart": ("encoder-decoder", "MBartForConditionalGeneration", ("encoder_tokens", "decoder_tokens")),
    "vit": ("encoder", "ViTForImageClassification", ()),
    "clip": ("encoder", "CLIPModel", ()),
    "siglip": ("encoder", "SiglipModel", ()),
    "clip_vision_model": ("encoder", "CLIPVisionModel", ()),
    "siglip_vision_model": ("encoder", "SiglipVisionModel", ()),
    # text encoders, fine-tuned as classifiers (a config naming a pretraining head, ForMaskedLM, gets this one)
    "bert": ("encoder", "BertForSequenceClassification", ("encoder_tokens",)),
    "roberta": ("encoder", "RobertaForSequenceClassification", ("encoder_tokens",)),
    "xlm-roberta": ("encoder", "XLMRobertaForSequenceClassification", ("encoder_tokens",)),
    "deberta-v2": ("encoder", "DebertaV2ForSequenceClassification", ("encoder_tokens",)),
    "modernbert": ("encoder", "ModernBertForSequenceClassification", ("encoder_tokens",)),
}
# the text encoders of FAMILIES: one variable, the sequence's tokens
TEXT_ENCODERS = ("bert", "roberta", "xlm-roberta", "deberta-v2", "modernbert")
# transformers families that are no decoder LLM and that gpuplan does not model: encoders of text (but the
# TEXT_ENCODERS above), speech and images,
# and encoder-decoders other than the FAMILIES above. A config of one is refused (kinds.of_config) where it would
# otherwise be read off transformers as a decoder (DistilBERT's DistilBertModel: a KV cache and causal decoding it
# has not).
NOT_DECODERS = frozenset((
    "xlm-roberta-xl", "distilbert", "albert", "electra", "deberta", "camembert", "mpnet", "longformer", "xlm",
    "flaubert", "funnel", "mobilebert", "squeezebert", "ernie", "canine", "esm", "layoutlm", "layoutlmv2",
    "layoutlmv3", "data2vec-text", "wav2vec2", "wav2vec2-bert",
    "wav2vec2-conformer", "hubert", "wavlm", "data2vec-audio", "unispeech", "unispeech-sat", "sew", "sew-d",
    "beit", "deit", "dinov2", "swin", "swinv2", "convnext", "convnextv2", "resnet", "segformer", "mobilevit",
    "data2vec-vision", "sam", "detr", "yolos", "owlvit", "owlv2", "clap", "marian", "pegasus", "pegasus_x", "led",
    "m2m_100", "nllb-moe", "seamless_m4t", "seamless_m4t_v2", "speech_to_text", "bigbird_pegasus", "prophetnet",
    "fsmt", "plbart", "blenderbot", "blenderbot-small", "longt5", "switch_transformers", "pix2struct", "mvp",
    "vision-encoder-decoder", "speech-encoder-decoder", "encoder-decoder"))


def diffusers_class(config: dict[str, Any]) -> str | None:
    """The diffusers class a config names (``_class_name``), None for a transformers config."""
    return config.get("_class_name") if isinstance(config.get("_class_name"), str) else None


def is_encoder_family(config: dict[str, Any]) -> bool:
    """Whether a config is of an encoder or encoder-decoder family modelled here (:data:`FAMILIES`)."""
    family = config.get("model_type")
    return isinstance(family, str) and family in FAMILIES


def family_named(config: dict[str, Any]) -> str | None:
    """The modelled encoder family whose class a config names in ``architectures`` (``WhisperForConditionalGeneration``
    -> whisper: each family's classes start with its name, underscores dropped) where its ``model_type`` names no
    modelled family (missing, empty, or another's), else None: such a config is refused, not read as a decoder
    (transformers reads no config without its ``model_type``: ``AutoConfig.from_pretrained``). A text encoder's
    classes are its name and ``For...`` or ``Model`` (``BertForMaskedLM``, ``DebertaV2Model``): ``BertGeneration...``
    and ``RobertaPreLayerNorm...`` are other families', as ``Siglip2Model`` and ``ViTMAEModel`` are."""
    named = config.get("architectures")
    given = config.get("model_type")
    if (isinstance(given, str) and given in FAMILIES) or not isinstance(named, list):
        return None
    classes = [a.lower() for a in named if isinstance(a, str)]
    def names(family: str, c: str) -> bool:
        plain = family.replace("_", "").replace("-", "")
        if family in TEXT_ENCODERS:
            return c.startswith(f"{plain}for") or c == f"{plain}model"
        # the family's own classes (CLIPVisionModel, T5EncoderModel), not another family's that starts alike
        # (Siglip2Model, ViTMAEModel, CLIPSegModel, T5GemmaModel: s30-beyond's walk told a siglip2 config to write
        # model_type siglip)
        rest = c[len(plain):]
        return c.startswith(plain) and (not rest or rest.startswith(("for", "model", "vision", "text", "encoder")))

    found = [f for f in FAMILIES if any(names(f, c) for c in classes)]
    return max(found, key=len) if found else None  # mt5 before t5: the longest name that fits


def bidirectional(config: dict[str, Any]) -> str | None:
    """The config's own words where its text attention is bidirectional, an encoder's that generates no text (an
    embedding model such as google/embeddinggemma-300m: ``Gemma3TextModel`` with ``use_bidirectional_attention``
    true), else None. transformers 5.24: Gemma/Gemma 2/Gemma 3 ``use_bidirectional_attention`` True ("the model will
    attend to all text tokens instead of using a causal mask", configuration_gemma3.py); Gemma 4's and
    DiffusionGemma's ``"all"`` (``"vision"`` keeps the text causal); ``is_causal`` false, which Gemma 4 sets then."""
    for part in (config, config.get("text_config")):
        if not isinstance(part, dict):
            continue
        flag = part.get("use_bidirectional_attention")
        if flag is True or flag == "all":
            return f"use_bidirectional_attention {'true' if flag is True else repr(flag)}: every token attends to " \
                   "every other, so it generates no text"
        if part.get("is_causal") is False:
            return "is_causal false: every token attends to every other, so it generates no text"
    return None


# an encoder-decoder family's encoder alone (transformers' T5EncoderModel, MT5EncoderModel, UMT5EncoderModel): no
# decoder and no LM head, which the family's plan (its ...ForConditionalGeneration) has
ENCODER_ALONE = ("EncoderModel",)


def refuse_unknown(config: dict[str, Any], where: str) -> GpuplanError:
    """The one sentence for a config that is neither a decoder nor a family modelled here."""
    return GpuplanError(
        f"{where}: model_type {config.get('model_type')!r} is not a decoder LLM, and gpuplan models no "
        f"encoder or encoder-decoder of that family (it knows {', '.join(sorted(FAMILIES))}): `gpuplan simulate "
        "--module my_pkg.my_model:build` measures any module you build, on fake tensors")
