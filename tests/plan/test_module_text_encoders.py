"""Text encoders trained with the denoiser (issue 34, ``text_encoders: trained``): LoRA adapters on the CLIP encoders,
as kohya's sd-scripts train them unless ``--network_train_unet_only`` (every linear of CLIPAttention and CLIPMLP) and
diffusers' DreamBooth LoRA scripts with ``--train_text_encoder`` (q, k, v and out projections). Their adapters,
gradients and optimizer states, the activations their forward keeps for the backward, their backward and the
optimizer's per-tensor host work, each against a hand count, the real classes on the meta device, or the recording."""

from __future__ import annotations

import pytest

import gpuplan
from conftest import require
from gpuplan import overheads as oh
from gpuplan.cli import run
from gpuplan.errors import GpuplanError
from gpuplan.hardware import load_gpu
from gpuplan.memory.modules import lora_params
from gpuplan.model import diffusers, kinds
from gpuplan.model.profile import lookup
from gpuplan.scenario.modules import TEXT_LORA_ROLES
from gpuplan.speed.modules import Run, backward, forward

SDXL = "stabilityai/stable-diffusion-xl-base-1.0"
# per CLIP layer, r x (in + out) summed over the adapted linears: CLIP-L 768 wide (MLP 3,072), 12 layers; CLIP-G
# 1,280 wide (MLP 5,120), 32 layers. Attention: 4 x (d + d); all: that + (d + 4d) + (4d + d)
PER_RANK = {"attention": 12 * 4 * 1536 + 32 * 4 * 2560,  # 73,728 + 327,680
            "all": 12 * (4 * 1536 + 2 * 3840) + 32 * (4 * 2560 + 2 * 6400)}  # 165,888 + 737,280
KOHYA = dict(model="sdxl", task="train", stack="kohya", method="lora", lora_rank=32, resolution="1024",
             micro_batch_size=1, grad_checkpointing="none", precision="bf16-true", optimizer="adafactor",
             cache_latents=True, gpu="rtx-3090-ti")


def _clip_profiles():
    spec = kinds.named(SDXL)
    return spec, [lookup(te.config, "text-encoder")[0] for te in spec.role("text_encoder")]


@pytest.mark.parametrize("preset", ["attention", "all"])
def test_adapter_parameters_are_a_hand_count_and_the_real_classes(preset):
    """SDXL's CLIP-L and CLIP-G at rank 32: 903,168 x 32 = 28,901,376 adapter parameters with kohya's preset (264
    linears), 401,408 x 32 with diffusers'; and the same from peft's adapters on the real transformers classes built
    on the meta device."""
    require("transformers")
    require("peft")
    from peft import LoraConfig, inject_adapter_in_model

    assert PER_RANK == {"attention": 401_408, "all": 903_168}
    spec, profiles = _clip_profiles()
    counted = sum(lora_params(p, TEXT_LORA_ROLES[preset], 32) for p in profiles)
    assert counted == PER_RANK[preset] * 32
    real = 0
    for te in spec.role("text_encoder"):
        module = diffusers.build(te.library, te.cls, te.config)
        roles = TEXT_LORA_ROLES[preset]
        targets = [n for n, sub in module.named_modules()
                   if hasattr(sub, "in_features") and diffusers.text_lora_role(n) in roles]
        assert len(targets) == te.config["num_hidden_layers"] * (4 if preset == "attention" else 6)
        module = inject_adapter_in_model(LoraConfig(r=32, lora_alpha=32, target_modules=targets), module)
        real += sum(p.numel() for n, p in module.named_parameters() if "lora_" in n)
    assert real == counted


def test_kohya_adapts_264_text_encoder_linears():
    """kohya's log for SDXL: 'create LoRA for Text Encoder 1: 72 modules', '... 2: 192 modules' (12 and 32 layers x
    q, k, v, out_proj, fc1, fc2); diffusers' attention preset: 48 and 128."""
    _, profiles = _clip_profiles()
    for preset, want in (("all", [72, 192]), ("attention", [48, 128])):
        got = [sum(op.count for op in p.ops if op.kind == "linear" and op.role in TEXT_LORA_ROLES[preset])
               for p in profiles]
        assert got == want


def test_trained_encoders_add_adapters_gradients_and_kept_activations():
    """kohya's SDXL LoRA r32 in bf16-true, trained against frozen encoders: the adapters' weights and gradients at
    2 bytes (28,901,376 x 2 = 55.1 MiB each), Adafactor's thin factors (2 per rank row: 903,168 x 2 x 2 bytes), and
    the activations the two encoders' forward keeps, their recorded LoRA passes' peaks at batch 1."""
    frozen = gpuplan.estimate({**KOHYA, "text_encoders": "frozen"})
    trained = gpuplan.estimate({**KOHYA, "text_encoders": "trained"})
    adapters = PER_RANK["all"] * 32
    mib = 2**20
    assert (trained.memory.gradients_gib - frozen.memory.gradients_gib) * 1024 == pytest.approx(adapters * 2 / mib)
    assert (trained.memory.optimizer_gib - frozen.memory.optimizer_gib) * 2**30 == pytest.approx(
        adapters // 32 * 2 * 2)
    assert (trained.memory.other_gib - frozen.memory.other_gib) * 2**30 == pytest.approx(adapters * 2)
    _, profiles = _clip_profiles()
    kept = sum(p.activation_bytes("train-lora-all", 1, ()) for p in profiles)
    assert 20e6 < kept < 200e6  # CLIP-L about 30 MB, CLIP-G about 100 MB
    assert (trained.memory.activations_gib - frozen.memory.activations_gib) * 2**30 == pytest.approx(kept)
    assert trained.model.params_trainable - frozen.model.params_trainable == adapters
    assert any("text encoders trained" in n for n in trained.module.job.notes)


def test_trained_encoders_run_their_backward_and_their_adapters_updates():
    """The step's text-encoder part: each CLIP's forward with adapters and its backward (FLOPs: every linear twice,
    forward and input gradient, attention 1 + 2.5 times); the optimizer's host work grows by 528 adapter tensors
    x (28 + 3) Adafactor ops x 7 us = 0.114576 s."""
    frozen = gpuplan.estimate({**KOHYA, "text_encoders": "frozen"})
    trained = gpuplan.estimate({**KOHYA, "text_encoders": "trained"})
    host = trained.work.parts_s["optimizer (host)"] - frozen.work.parts_s["optimizer (host)"]
    assert host == pytest.approx(528 * 31 * 7e-6) == pytest.approx(0.114576)
    assert oh.OPTIMIZER_OPS_PER_TENSOR["adafactor"] + oh.OPTIMIZER_OPS_16BIT_EXTRA == 31
    assert "text encoders" in frozen.work.parts_s and "text encoders (LoRA trained)" in trained.work.parts_s
    assert trained.work.parts_s["text encoders (LoRA trained)"] > 2 * frozen.work.parts_s["text encoders"]
    _, profiles = _clip_profiles()
    clip_l = profiles[0]
    run_ = Run(dtype="bf16", lora_roles=TEXT_LORA_ROLES["all"], lora_rank=32)
    gpu = load_gpu("rtx-3090-ti")
    flops = forward(clip_l, gpu, 1, (), run_).flops + backward(clip_l, gpu, 1, (), run_).flops
    linears = 2 * 77 * 12 * (4 * 768 * 768 + 2 * 768 * 3072)
    attention = 2 * 12 * 77 * 77 * (64 + 64) * 12
    assert flops == pytest.approx(2 * linears + attention * (1 + oh.ATTENTION_BACKWARD_FLOP_RATIO))
    assert trained.work.step_s > frozen.work.step_s + host


def test_defaults_follow_each_trainer():
    """kohya's sd-scripts train the text encoders' LoRA unless --network_train_unet_only; its full fine-tunes and
    diffusers' scripts do not unless asked."""
    kohya = gpuplan.estimate({**KOHYA})
    assert kohya.scenario["text_encoders"] == "trained"
    assert any("network_train_unet_only" in a for a in kohya.module.assumptions)
    full = gpuplan.estimate({**KOHYA, "method": "full", "optimizer": "adamw-8bit", "gpu": "h100-sxm"})
    assert full.scenario["text_encoders"] == "frozen"
    diff = gpuplan.estimate({**KOHYA, "stack": "diffusers"})
    assert diff.scenario["text_encoders"] == "cached"


@pytest.mark.parametrize("update, words", [
    ({"stack": "simpletuner"}, "SimpleTuner's --train_text_encoder leaves them frozen"),
    ({"method": "full", "model": "flux-dev"}, "flux_train.py trains neither CLIP-L nor T5"),
    ({"model": "sd3-medium", "stack": "ai-toolkit"}, "for SD 1.x/2.x and SDXL only"),
    ({"method": "full", "stack": "diffusers"}, "no full fine-tuning script for SDXL"),
])
def test_what_cannot_train_the_encoders_is_refused(update, words):
    """Each trainer's refusal names what it trains (each profile's text_refusal, scenario.diffusion_stacks)."""
    with pytest.raises(GpuplanError, match=words) as err:
        gpuplan.estimate({**KOHYA, "text_encoders": "trained", **update})
    assert "\n" not in str(err.value) and str(err.value).endswith("set text_encoders frozen or cached")


def test_flux_trains_clip_and_keeps_t5_frozen():
    """FLUX.1's CLIP-L is trained (kohya's train_clip), its T5-XXL runs frozen every step (train_t5xxl False)."""
    p = gpuplan.estimate(dict(model="flux-dev", task="train", stack="kohya", method="lora", quant="fp8",
                              resolution="512", grad_checkpointing="full", gpu="h100-sxm", text_encoders="trained"))
    other = " ".join(p.memory.other)
    assert "text_encoder (CLIPTextModel, LoRA trained)" in other and "(T5EncoderModel, frozen)" in other
    assert "T5 frozen" in " ".join(p.module.job.notes)


def test_cli_says_the_encoders_are_trained(capsys):
    assert run(["estimate", "--model", "sdxl", "--task", "train", "--stack", "diffusers", "--method", "lora",
                "--resolution", "1024", "--gpu", "rtx-4090", "--text-encoders", "trained"]) == 0
    out = capsys.readouterr().out
    assert "text encoders trained" in out and "LoRA trained" in out
