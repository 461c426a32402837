"""Models that are not decoder LLMs: diffusion pipelines, encoder-decoders, encoders (issue 34). Their counts are the
real classes' on the meta device, their profiles the real modules' work on fake tensors, and what gpuplan does not
model is refused in one sentence."""

from __future__ import annotations

import json
import math
import sys

import pytest

from conftest import require
from gpuplan.errors import GpuplanError
from gpuplan.model import diffusers, encoders, kinds
from gpuplan.model.catalog import load_model
from gpuplan.model.kinds import NotADecoder
from gpuplan.model.profile import Poly, lookup

# Published totals the bundled counts must equal (the real classes give the same: test below): the UNets'
# (SD 1.5 859.5M, SD 2.1 865.9M, SDXL 2.567B as diffusers' model cards and the SDXL paper's 2.6B), FLUX.1-dev's
# transformer (huggingface/blog flux-qlora.md: "trainable params: 4,669,440 || all params: 11,906,077,760" with a
# rank-4 LoRA on to_k/to_q/to_v/to_out.0: 11,906,077,760 - 4,669,440), the text encoders and VAEs, Whisper-large-v3
# (new-user review 3: 1,543,490,560)
PUBLISHED = {
    ("stable-diffusion-v1-5/stable-diffusion-v1-5", "unet"): 859_520_964,
    ("stabilityai/stable-diffusion-2-1", "unet"): 865_910_724,
    ("stabilityai/stable-diffusion-xl-base-1.0", "unet"): 2_567_463_684,
    ("stabilityai/stable-diffusion-xl-base-1.0", "text_encoder"): 123_060_480,
    ("stabilityai/stable-diffusion-xl-base-1.0", "text_encoder_2"): 694_659_840,
    ("stabilityai/stable-diffusion-xl-base-1.0", "vae"): 83_653_863,
    ("black-forest-labs/FLUX.1-dev", "transformer"): 11_906_077_760 - 4_669_440,
    ("black-forest-labs/FLUX.1-dev", "text_encoder_2"): 4_762_310_656,
    ("stabilityai/stable-diffusion-3-medium-diffusers", "transformer"): 2_028_328_000,
}


def test_bundled_pipelines_and_models_answer_offline_with_their_counts(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    for (repo, name), count in PUBLISHED.items():
        spec = diffusers.bundled_pipeline(repo)
        assert next(c.params for c in spec.components if c.name == name) == count, (repo, name)
    assert encoders.bundled_model("openai/whisper-large-v3").params_total == 1_543_490_560
    for name in ("sdxl", "flux-dev", "whisper-large-v3", "sd3.5-large", "t0-3b"):
        with pytest.raises(NotADecoder) as found:
            load_model(name)
        assert found.value.spec.params_total > 0 and "gpuplan estimate" in str(found.value)
    flux = kinds.named("FLUX.1-schnell")
    assert flux.defaults["steps"] == 4 and flux.defaults["text_tokens"] == 256 and not flux.defaults["cfg"]
    sdxl = kinds.named("sdxl")
    assert sdxl.defaults == {"steps": 50, "cfg": True, "resolution": 1024, "text_tokens": 77}
    assert {c.role for c in sdxl.components} == {"denoiser", "vae", "text_encoder"}


@pytest.mark.sim
def test_bundled_counts_are_the_real_classes_on_the_meta_device():
    """Every bundled component and model, built by diffusers or transformers from its bundled config."""
    require("diffusers")
    require("transformers")
    checked = 0
    for repo, path in diffusers.bundled_pipelines().items():
        data = json.loads(path.read_text(encoding="utf-8"))
        for name, config in data["configs"].items():
            library, cls = data["model_index"][name]
            assert diffusers.count_params(library, cls, config) == data["params"][name], (repo, name)
            checked += 1
    for repo in encoders.bundled_models():
        bundled = encoders.bundled_model(repo)
        assert encoders.bundled_model(repo, count=True).params_total == bundled.params_total, repo
        checked += 1
    assert checked >= 30


def test_profiles_of_the_bundled_parts_are_bundled():
    """Every part a plan of a bundled model reads is bundled: no recording on a user's machine."""
    from gpuplan.model.bundle_modules import parts_of

    missing = []
    for repo in [*diffusers.bundled_pipelines(), *encoders.bundled_models()]:
        spec = kinds.named(repo)
        for config, part, _ in parts_of(spec):
            if lookup(config, part) is None:
                missing.append(f"{repo} {part}")
    assert missing == []


def test_a_diffusers_config_of_another_class_is_refused_in_one_sentence(tmp_path):
    path = tmp_path / "unet3d"
    path.mkdir()
    (path / "config.json").write_text(json.dumps({"_class_name": "UNet3DConditionModel", "in_channels": 4}))
    with pytest.raises(GpuplanError) as err:
        load_model(str(path))
    message = str(err.value)
    assert "UNet3DConditionModel" in message and "simulate --module" in message and "\n" not in message
    assert "upgrade transformers" not in message


def test_an_encoder_head_is_refused_not_read_as_a_decoder(tmp_path):
    path = tmp_path / "config.json"
    path.write_text(json.dumps({"model_type": "wav2vec2", "architectures": ["Wav2Vec2ForCTC"], "hidden_size": 768,
                                "num_hidden_layers": 12, "num_attention_heads": 12, "vocab_size": 32}))
    with pytest.raises(GpuplanError, match=r"Wav2Vec2ForCTC.*not a decoder LLM.*simulate --module"):
        load_model(str(path))


@pytest.mark.parametrize("config", [
    # read off transformers as a decoder (BERT itself is modelled since session 24: tests/model/test_text_encoders.py)
    {"model_type": "distilbert", "architectures": ["DistilBertModel"], "dim": 768, "n_layers": 6, "n_heads": 12,
     "hidden_dim": 3072, "vocab_size": 30522},
    {"model_type": "marian", "architectures": ["MarianMTModel"], "d_model": 512, "encoder_layers": 6,
     "decoder_layers": 6, "vocab_size": 58101, "is_encoder_decoder": True},
    {"model_type": "my_seq2seq", "is_encoder_decoder": True, "hidden_size": 512, "num_hidden_layers": 6,
     "num_attention_heads": 8, "vocab_size": 32000},
], ids=["distilbert", "marian", "custom-encoder-decoder"])
def test_an_encoder_or_encoder_decoder_family_is_refused(tmp_path, config):
    """A bare BERT was counted and planned as a decoder LLM (a KV cache it has not): families that are no decoder
    and not modelled, and any config that says is_encoder_decoder, are refused in one sentence."""
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config))
    with pytest.raises(GpuplanError) as err:
        load_model(str(path))
    message = str(err.value)
    assert "is not a decoder LLM" in message and config["model_type"] in message and "\n" not in message


@pytest.mark.parametrize("repo, family", [("openai/whisper-small", "whisper"), ("google/flan-t5-base", "t5"),
                                           ("google/vit-base-patch16-224", "vit"),
                                           ("openai/clip-vit-large-patch14", "clip")])
def test_an_encoder_config_without_its_model_type_is_refused_not_read_as_a_decoder(tmp_path, repo, family):
    """The fuzzer (tests/test_fuzz.py, s12): Whisper-small's config with ``model_type`` null or empty was read by
    the decoder's conventions and planned. Its architectures name the family; transformers reads no config without its
    model_type, so neither does gpuplan: one sentence naming the family to write."""
    from gpuplan.model import encoders

    config = json.loads(encoders.bundled_models()[repo].read_text(encoding="utf-8"))["config"]
    for k, (given, said) in enumerate(((None, "no model_type"), ("", "no model_type"), ([], "no model_type"),
                                       ("llama", "model_type 'llama'"))):
        path = tmp_path / str(k) / "config.json"
        path.parent.mkdir()
        path.write_text(json.dumps({**config, "model_type": given}))
        with pytest.raises(GpuplanError) as err:
            load_model(str(path))
        assert f"names {said}, and its architectures name a {family} class" in str(err.value)
        assert f'"model_type": "{family}"' in str(err.value) and "\n" not in str(err.value)


def test_a_bare_denoiser_config_is_the_bundled_one_when_it_is(tmp_path):
    """The review's SDXL UNet config (its own folder, no model_index.json): counted without diffusers, the bundled
    profile read, and the note says its VAE and text encoders are not counted."""
    config = json.loads(diffusers.bundled_pipelines()["stabilityai/stable-diffusion-xl-base-1.0"].read_text())
    unet = {**config["configs"]["unet"], "_diffusers_version": "0.19.0.dev0"}
    folder = tmp_path / "sdxl-unet"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps(unet))
    with pytest.raises(NotADecoder) as found:
        load_model(str(folder))
    spec = found.value.spec
    assert spec.params_total == 2_567_463_684 and spec.family == "UNet2DConditionModel"
    assert "not counted" in spec.notes[0] and spec.defaults["resolution"] == 1024


def test_the_diffusers_config_as_a_decoder_says_what_it_is():
    from gpuplan.model.spec import ModelSpec

    with pytest.raises(GpuplanError, match="diffusers UNet2DConditionModel config, not a decoder"):
        ModelSpec.from_config({"_class_name": "UNet2DConditionModel", "in_channels": 4})


def test_a_polynomial_term_evaluates_with_the_batch():
    """``Σ (p + q·B)·Π x^e``: 3 + 2·B·x (a per-sample size growing with x), at B = 4, x = 10."""
    poly = Poly((((0,), 3.0, 0.0), ((1,), 0.0, 2.0)))
    assert poly.at(4, (10,)) == 3 + 2 * 4 * 10
    assert Poly.from_json(poly.to_json()) == poly


@pytest.mark.sim
@pytest.mark.slow
def test_a_bundled_profile_equals_a_fresh_recording():
    """SD 1.5's CLIP text encoder recorded again on fake tensors gives the bundled profile exactly: its forward and
    its LoRA training passes (text_encoders trained: the diffusers and kohya presets) and its passes trained whole,
    with and without checkpointing (a full fine-tune's text_encoders trained)."""
    require("diffusers")
    require("transformers")
    from gpuplan.model.record import record

    spec = diffusers.bundled_pipeline("stable-diffusion-v1-5/stable-diffusion-v1-5")
    te = spec.role("text_encoder")[0]
    fresh = record(diffusers.text_encoder_part(te, diffusers.TEXT_ENCODER_WAYS))
    bundled, is_bundled = lookup(te.config, "text-encoder")
    assert is_bundled
    assert fresh.ops == bundled.ops and fresh.other_bytes == bundled.other_bytes
    assert fresh.dispatches == bundled.dispatches and fresh.memory == bundled.memory
    assert set(bundled.memory) == {"inference", "train-lora-attention", "train-lora-all", "train-full",
                                   "train-full-gc"}


@pytest.mark.sim
@pytest.mark.slow
def test_a_pass_labels_its_peaks_the_same_however_often_it_runs():
    """The recorder keys storages by address: a storage made in the backward at the address of a forward activation
    already freed once named the backward segment after that activation, so a second identical pass in the same
    process labelled its peaks otherwise (CI at 1950c5ca: the bundled CLIP profile's train-full segments against a
    fresh recording in a long test session). Three identical passes, one with the collector running at every
    allocation, give the same peaks segment by segment."""
    require("diffusers")
    require("transformers")
    import gc

    from gpuplan.model.record import run_pass

    spec = diffusers.bundled_pipeline("stable-diffusion-v1-5/stable-diffusion-v1-5")
    part = diffusers.text_encoder_part(spec.role("text_encoder")[0], diffusers.TEXT_ENCODER_WAYS)
    first = run_pass(part, "train-full", 1, (77,)).peaks
    second = run_pass(part, "train-full", 1, (77,)).peaks
    threshold = gc.get_threshold()
    gc.set_threshold(1)
    try:
        third = run_pass(part, "train-full", 1, (77,)).peaks
    finally:
        gc.set_threshold(*threshold)
    assert first == second == third
    assert max(first.values()) == 76_009_584  # the pass's peak, bytes of fake activations


@pytest.mark.sim
@pytest.mark.slow
def test_a_profile_predicts_a_size_it_was_not_fitted_on():
    """The SD VAE's decoder at a 40 x 56 latent (320 x 448 pixels, batch 1: neither fitted nor checked on): every
    GEMM's shape, the other kernels' bytes exactly, the activation peak within the recorder's tolerance."""
    require("diffusers")
    from gpuplan.model.record import MEMORY_TOLERANCE, run_pass

    spec = diffusers.bundled_pipeline("stable-diffusion-v1-5/stable-diffusion-v1-5")
    vae = spec.role("vae")[0]
    profile, _ = lookup(vae.config, "vae-decode")
    sizes = (40 * 56, 40 + 56)
    measured = run_pass(diffusers.vae_part(vae, "decode"), "inference", 1, sizes, record_ops=True)
    assert len(measured.ops) == sum(op.count for op in profile.ops)
    predicted = sorted((op.kind, op.leaf, *op.at(1, sizes)) for op in profile.ops for _ in range(op.count))
    assert sorted((kind, leaf, *dims) for kind, leaf, _, _, dims in measured.ops) == predicted
    assert measured.other_bytes == round(profile.other_bytes.at(1, sizes))
    peak = max(measured.peaks.values())
    assert math.isclose(profile.activation_bytes("inference", 1, sizes), peak, rel_tol=MEMORY_TOLERANCE)


def test_a_local_encoder_decoder_is_said_counted_by_transformers_at_its_own_release(tmp_path):
    """A Whisper-medium folder (walk s10): its count came from transformers' WhisperForConditionalGeneration, and
    the line said 'transformers 0.42.1', diffusers' release under transformers' name."""
    require("transformers")
    from importlib import metadata

    config = {**json.loads(encoders.bundled_models()["openai/whisper-small"].read_text())["config"],
              "d_model": 1024, "encoder_layers": 24, "decoder_layers": 24, "encoder_attention_heads": 16,
              "decoder_attention_heads": 16, "encoder_ffn_dim": 4096, "decoder_ffn_dim": 4096, "num_hidden_layers": 24}
    spec = encoders.model_spec("whisper-medium", config)
    assert spec.params_total == 763_857_920  # openai/whisper-medium, WhisperForConditionalGeneration on meta
    assert spec.counted_by == f"the real classes on the meta device (transformers {metadata.version('transformers')})"


# ---- a pipeline folder of any shape (session 12's fuzzing: diffusers configs were read by no validator) ----------
SD15 = "stable-diffusion-v1-5/stable-diffusion-v1-5"


def write_pipeline(root, index: dict | None = None, **configs: dict):
    """SD 1.5's bundled pipeline as a local folder (``model_index.json`` and each ``<name>/config.json``), with
    ``index`` entries and component config keys changed."""
    data = json.loads(diffusers.bundled_pipelines()[SD15].read_text(encoding="utf-8"))
    folder = root / "pipe"
    folder.mkdir()
    (folder / "model_index.json").write_text(json.dumps({**data["model_index"], **(index or {})}))
    for name, config in data["configs"].items():
        (folder / name).mkdir()
        (folder / name / "config.json").write_text(json.dumps({**config, **configs.get(name, {})}))
    return folder


def refusal(folder) -> str:
    with pytest.raises(GpuplanError) as err:
        load_model(str(folder))
    assert not isinstance(err.value, NotADecoder), err.value.spec
    message = str(err.value)
    assert message and "\n" not in message
    return message


@pytest.mark.parametrize("index, said", [
    ({"unet": [1, 2]}, "'unet' must be [library, class name]"),  # AttributeError: 'int' has no endswith
    ({"unet": [None, "UNet2DConditionModel"]}, "must be [library, class name]"),  # import_module(None)
    ({"unet": ["diffusers", ["UNet2DConditionModel"]]}, "must be [library, class name]"),
    ({"_class_name": ["x"]}, "_class_name must be the pipeline's class name"),  # TypeError: unhashable list
    ({"../vae": ["diffusers", "AutoencoderKL"]}, "a component's name is a plain name"),  # read ../vae/config.json
])
def test_a_model_index_entry_of_another_shape_is_refused_in_one_sentence(tmp_path, index, said):
    """Each of these ended in a traceback (or read a config.json outside the pipeline's folder), for `gpuplan
    model`, `estimate` and the page alike: ``gpuplan model ./pipe`` with model_index.json's ``"unet": [1, 2]``."""
    assert said in refusal(write_pipeline(tmp_path, index))


def test_a_class_from_another_library_is_refused_and_that_library_is_not_imported(tmp_path, monkeypatch):
    """``"unet": ["this", "UNet2DConditionModel"]`` imported the module ``this`` (any module a config named, with
    what its import does) before saying it had no such class."""
    monkeypatch.delitem(sys.modules, "this", raising=False)
    message = refusal(write_pipeline(tmp_path, {"unet": ["this", "UNet2DConditionModel"]}))
    assert "UNet2DConditionModel is a diffusers class" in message and "this" not in sys.modules
    other = tmp_path / "other"
    other.mkdir()
    message = refusal(write_pipeline(other, {"text_encoder": ["diffusers", "CLIPTextModel"]}))
    assert "CLIPTextModel is a transformers class" in message


@pytest.mark.parametrize("size", [-8, 64.5, [64, 96], 10**12, "64", 0])
def test_a_sample_size_the_pipeline_cannot_make_is_refused(tmp_path, size):
    """A UNet's sample_size x 8 is the pipeline's default resolution, which every plan then took: -8 planned
    images of -64 pixels (a plan that "fits"), 10**12 a plan of 2e20 GiB, 64.5 was cut to 64, a list raised
    TypeError. The scenario's own resolution takes sides of 64-8192 pixels; the default now must too."""
    require("diffusers")
    message = refusal(write_pipeline(tmp_path, unet={"sample_size": size}))
    assert "sample_size" in message and "64-8192 pixels" in message


@pytest.mark.parametrize("component, change, library", [
    ("unet", {"block_out_channels": [-320, 640, 1280, 1280]}, "diffusers"),  # RuntimeError: negative dimension
    ("unet", {"attention_head_dim": 0}, "diffusers"),  # ZeroDivisionError in diffusers' Attention
    ("unet", {"block_out_channels": [10**9] * 4}, "diffusers"),  # RuntimeError: storage size overflowed
    ("text_encoder", {"hidden_size": -4}, "transformers"),
])
def test_a_config_its_class_cannot_be_built_from_is_refused_in_one_sentence(tmp_path, component, change, library):
    require("diffusers")
    require("transformers")
    message = refusal(write_pipeline(tmp_path, **{component: change}))
    assert f"{library} " in message and "cannot build the" in message and f"pipe's {component}/config.json" in message


def test_a_bad_pipeline_folder_is_exit_2_on_the_command_line(tmp_path, capsys):
    from gpuplan.cli import run

    folder = write_pipeline(tmp_path, {"unet": [1, 2]})
    assert run(["estimate", "--model", str(folder), "--task", "infer", "--gpu", "l4"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and err.count("\n") == 1 and "Traceback" not in err


def write_encoder(root, repo: str, **changes):
    config = {**json.loads(encoders.bundled_models()[repo].read_text(encoding="utf-8"))["config"], **changes}
    path = root / "config.json"
    path.write_text(json.dumps(config))
    return path


@pytest.mark.parametrize("repo, change, said", [
    ("openai/whisper-small", {"max_source_positions": 0}, "max_source_positions must be between 1"),  # 0 frames
    ("openai/whisper-small", {"num_mel_bins": 0}, "num_mel_bins must be between 1"),
    ("google/flan-t5-base", {"d_model": 0}, "d_model must be between 1"),  # counted as 768 parameters
    ("google/flan-t5-base", {"num_heads": 0}, "num_heads must be between 1"),
    ("google/flan-t5-base", {"vocab_size": "32128"}, "vocab_size must be a number, got '32128'; write it without"),
    ("facebook/bart-large", {"max_position_embeddings": 10**12}, "max_position_embeddings must be between 1"),
    ("google/vit-base-patch16-224", {"patch_size": 1000}, "patch_size 1000 is larger than image_size 224"),
    ("google/vit-base-patch16-224", {"image_size": [224, 160]}, "gpuplan models square images"),
    ("openai/clip-vit-large-patch14", {"vision_config": {"image_size": -1}}, "(vision_config): image_size must be"),
])
def test_an_encoder_config_is_checked_at_the_door_as_a_decoder_s_is(tmp_path, repo, change, said):
    """Session 12's fuzzing: an encoder's or encoder-decoder's config went to transformers unchecked, and what
    transformers built was planned: Whisper with max_source_positions 0 (no audio frames), a T5 of d_model 0 counted
    as 768 parameters, a ViT whose one patch is larger than its image (no patch at all); a ViT's square
    ``image_size`` written as [224, 224] was a TypeError in defaults(). The decoder's checks (model/validate.py)
    now read them too, with their families' own sizes (validate.ENCODER_POSITIVE)."""
    with pytest.raises(GpuplanError) as err:
        load_model(str(write_encoder(tmp_path, repo, **change)))
    assert not isinstance(err.value, NotADecoder), err.value.spec
    assert said in str(err.value) and "\n" not in str(err.value)


def test_a_square_image_size_as_a_pair_is_read_as_its_side(tmp_path):
    with pytest.raises(NotADecoder) as found:
        load_model(str(write_encoder(tmp_path, "google/vit-base-patch16-224", image_size=[224, 224])))
    assert found.value.spec.defaults == {"image_size": 224, "patch_size": 16}
    assert found.value.spec.params_total == encoders.bundled_model("google/vit-base-patch16-224").params_total


def test_a_bundled_pipeline_copied_into_a_folder_is_counted_without_diffusers(tmp_path, monkeypatch):
    """A local copy of SD 1.5 (a snapshot's folder) was counted again by diffusers on the meta device: 7 s, and a
    refusal without the diffusion extra; each component equal to a bundled one (of the same class) now takes its
    bundled count, as a bare denoiser's config already did."""
    monkeypatch.setitem(sys.modules, "diffusers", None)  # `import diffusers` raises ImportError
    with pytest.raises(NotADecoder) as found:
        load_model(str(write_pipeline(tmp_path)))
    spec, bundled = found.value.spec, diffusers.bundled_pipeline(SD15)
    assert {c.name: c.params for c in spec.components} == {c.name: c.params for c in bundled.components}
    assert spec.params_total == 1_066_235_307


def test_a_bundled_count_is_taken_only_for_the_same_class():
    """SDXL's second text encoder's config built as CLIPTextModel (no projection) is not CLIPTextModelWithProjection's
    bundled count."""
    data = json.loads(diffusers.bundled_pipelines()["stabilityai/stable-diffusion-xl-base-1.0"].read_text())
    config = data["configs"]["text_encoder_2"]
    assert diffusers.bundled_count(config, "CLIPTextModelWithProjection") == 694_659_840
    assert diffusers.bundled_count(config, "CLIPTextModel") is None


@pytest.mark.sim
def test_ai_toolkit_fp8_base_is_quanto_s_every_linear_counted_on_the_meta_device():
    """ai-toolkit's model.quantize (optimum-quanto quantize(transformer, weights=qfloat8), no exclude for FLUX:
    ostris/ai-toolkit toolkit/stable_diffusion_model.py) swaps every nn.Linear and nn.Conv2d for a QLinear or
    QConv2d holding fp8 weights and one bf16 scale per output row (optimum/quanto/nn/qmodule.py quantize_module;
    QLayerNorm only with quantized activations); biases, norms and embeddings stay bf16. The plan's stored bytes
    (the profile's linears in fp8 at a scale per tensor, the rest of the parameters 16-bit) against that rule
    applied to the real FluxTransformer2DModel on the meta device: the adaptive norms' modulation linears
    (norm1.linear, norm1_context.linear, the single blocks' norm.linear, norm_out.linear: 3.25 B parameters) are
    fp8 there, where diffusers' layerwise casting keeps them 16-bit (3.0 GiB apart)."""
    require("diffusers")
    import torch

    from gpuplan.memory.modules import stored_weight_bytes
    from gpuplan.model.profile import FP8_LINEARS

    spec = kinds.named("flux-dev")
    den = spec.main
    module = diffusers.build("diffusers", den.cls, den.config)
    quanto = 0.0
    scales = 0  # quanto's bf16 scale per output row, where the plan takes gpuplan's fp8 format's 4 bytes a tensor
    modulation = 0
    for name, m in module.named_modules():
        for pname, p in m.named_parameters(recurse=False):
            quantized = isinstance(m, (torch.nn.Linear, torch.nn.Conv2d)) and pname == "weight"
            quanto += p.numel() + 2 * p.shape[0] if quantized else 2 * p.numel()
            scales += 2 * p.shape[0] - 4 if quantized else 0
            if quantized and name.endswith(("norm1.linear", "norm1_context.linear", "norm.linear", "norm_out.linear")):
                modulation += p.numel()
    assert modulation == 19 * 2 * 3072 * 18432 + 38 * 3072 * 9216 + 3072 * 6144  # 3,254,779,904
    profile = lookup(den.config, "denoiser")[0]
    planned = stored_weight_bytes(profile, den.params, FP8_LINEARS, "bf16")
    assert planned == quanto - scales and scales / quanto < 6e-4  # 6.1 MB of scales in 11.9 GB
    layerwise = stored_weight_bytes(profile, den.params, "fp8", "bf16")
    assert layerwise - planned == pytest.approx(modulation, rel=1e-3)


@pytest.mark.sim
def test_t5_weights_kept_in_fp32_are_its_wo_linears_on_the_meta_device():
    """memory.modules.fp32_kept_params against the real T5EncoderModel of SD3's pipeline on the meta device: the
    parameters named by transformers' T5PreTrainedModel._keep_in_fp32_modules (["wo"]), nothing for CLIP or in
    bf16."""
    require("transformers")
    from gpuplan.memory.modules import fp32_kept_params

    spec = kinds.named("sd3-medium")
    t5 = next(c for c in spec.components if c.cls == "T5EncoderModel")
    module = diffusers.build("transformers", t5.cls, t5.config)
    assert module._keep_in_fp32_modules in (["wo"], {"wo"})
    wo = sum(p.numel() for name, p in module.named_parameters() if name.split(".")[-2] == "wo")
    assert fp32_kept_params(t5, "fp16") == wo == 24 * 10_240 * 4_096
    assert fp32_kept_params(t5, "bf16") == 0
    assert fp32_kept_params(next(c for c in spec.components if c.cls.startswith("CLIP")), "fp16") == 0


@pytest.mark.parametrize("named", ["pipeline", "TrainingArguments", "ViTConfig", "set_seed"])
def test_architectures_naming_no_model_class_is_refused_before_it_is_called(named, tmp_path):
    """s17-sec: an encoder config's ``architectures`` picked any name of transformers, which was then called with
    the config (``transformers.pipeline(ViTConfig)``, ``TrainingArguments(ViTConfig)``: each failed inside the
    library, after running). Only a model class (a PreTrainedModel) is built; its own class still is."""
    require("transformers")
    config = {"model_type": "vit", "hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 2,
              "intermediate_size": 128, "image_size": 32, "patch_size": 16}
    path = tmp_path / "config.json"
    path.write_text(json.dumps({**config, "architectures": [named]}))
    with pytest.raises(GpuplanError, match=f"names transformers.{named}, which is not a model class"):
        load_model(str(path))
    path.write_text(json.dumps({**config, "architectures": ["ViTModel"]}))
    with pytest.raises(NotADecoder) as built:
        load_model(str(path))
    assert built.value.spec.main.cls == "ViTModel" and built.value.spec.main.params > 0
