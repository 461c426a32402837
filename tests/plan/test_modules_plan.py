"""Plans of models that are not decoder LLMs (issue 34): diffusion training and generation, Whisper, T5, BART and
vision encoders. Memory and time come from the real module's recorded work (bundled profiles: nothing is recorded
here), and the plan says what was simulated and what was modelled."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import gpuplan
from gpuplan.api.page import explain
from gpuplan.cli import run
from gpuplan.errors import GpuplanError
from gpuplan.model.profile import lookup
from gpuplan.plan.modules import ModulePlan

GIB = 2**30
REVIEW = Path(__file__).resolve().parents[1] / "data" / "review-3-q8"
WHISPER_PARAMS = 1_543_490_560


def plan(**scenario) -> ModulePlan:
    result = gpuplan.estimate(scenario)
    assert isinstance(result, ModulePlan)
    return result


def test_sdxl_lora_on_a_12_gb_card_has_memory_speed_and_price():
    p = plan(model="sdxl", task="train", method="lora", resolution="1024", gpu="rtx-3060",
             grad_checkpointing="full", optimizer="adamw-8bit", train_steps=2000)
    assert p.memory.fits and 6 < p.memory.device_peak_gib < p.memory.capacity_gib
    w = p.work
    assert w.kind == "diffusion training" and w.way == "train-lora-attention-gc" and w.batch == 1
    assert 0.2 < w.steps_per_s < 3 and w.samples_per_s_low < w.samples_per_s < w.samples_per_s_high
    assert w.flops_per_step > 0 and w.parts_s["gemm"] > 0 and "VAE encode" in w.parts_s
    assert w.job_hours == pytest.approx(2000 / w.steps_per_s / 3600)
    assert p.cost is not None and p.cost.usd_per_hour > 0
    assert any("UNet2DConditionModel's ops" in s for s in w.simulated)
    assert any("CUDA context" in m for m in w.modelled)



def test_a_spot_training_run_takes_dalys_checkpoints_and_restarts(capsys):
    """SDXL LoRA, 2,000 steps on an H100 spot offer, an interruption every 4 h, checkpoints written at 0.5 GB/s. The
    checkpoint is the 23,224,320 adapter parameters in bf16 and their AdamW states as the plan's memory holds them,
    as wide as the adapters (diffusers' train_dreambooth_lora_sdxl.py keeps peft's bf16 adapters under bf16 mixed
    precision, and torch's AdamW makes each moment with zeros_like(p)): 2 + 2 x 2 = 6 B each (10 B before session
    19: fp32 moments), 139.3 MB, written in delta = 0.278692 s = 7.74144e-5 h. Daly's interval:
    sqrt(2 x delta x 4) x (1 + sqrt(delta / 8) / 3 + delta / 72) - delta = 0.0248860 x 1.0010380 - 0.0000774 =
    0.0248345 h. Wall time for W h of work, a 10 min restart: 4 x e^(0.16667 / 4) x (e^((0.0248345 + 0.0000774) / 4)
    - 1) x W / 0.0248345 = 1.04906 W (a decoder's plan takes the same, market/cost.py spot_plan)."""
    p = plan(model="sdxl", task="train", method="lora", resolution="1024", train_steps=2000, gpu="h100-sxm",
             pricing="spot", mtbi_hours=4, disk_gbs=0.5)
    sp, c = p.cost.spot, p.cost
    assert p.model.params_trainable == 23_224_320
    assert p.checkpoint_bytes == 23_224_320 * (2 + 2 * 2) == 139_345_920
    assert sp.write_h == pytest.approx(23_224_320 * 6 / 0.5e9 / 3600)
    assert sp.interval_h == pytest.approx(0.0248345, rel=1e-4)
    assert sp.overhead == pytest.approx(1.04906, rel=1e-4)
    assert c.hours == pytest.approx(p.work.job_hours * 1.04906, rel=1e-4)
    assert c.usd_total == pytest.approx(c.hours * c.usd_per_hour)
    demand = plan(model="sdxl", task="train", method="lora", resolution="1024", train_steps=2000, gpu="h100-sxm")
    assert demand.cost.spot is None and demand.cost.hours == pytest.approx(demand.work.job_hours)
    assert run(["estimate", "--model", "sdxl", "--task", "train", "--method", "lora", "--resolution", "1024",
                "--train-steps", "2000", "--gpu", "h100-sxm", "--pricing", "spot", "--mtbi-hours", "4",
                "--disk-gbs", "0.5"]) == 0
    text = " ".join(capsys.readouterr().out.split())
    assert "spot: checkpoint every 1 min (Daly), interruptions every 4.0 h on average: wall time x1.05" in text


def test_own_cards_are_priced_by_their_power_as_a_decoder_llms_plan_is():
    """--pricing owned priced no module ("no price for GeForce RTX 4090: no owned offer of it in force"), nor a card
    no offer lists (an M3 Max), where a decoder LLM's plan prices both as the user's own cards by their power:
    450 W under load x PUE 1.0 x $0.16/kWh (data/owning.yaml's us residential price, as buy prices a home's power)
    = $0.072 an hour for a 4090; an M2 Max, with no TDP in the catalog, at its Mac Studio's measured 145 W (as buy
    prices it: gpuplan.market.owned_power.busy_draw): $0.0232."""
    whisper = plan(model="whisper-small", task="infer", gpu="rtx-4090", pricing="owned")
    llm = gpuplan.estimate(dict(model="qwen3-0.6b", task="infer", gpu="rtx-4090", pricing="owned"))
    assert whisper.cost.pricing == llm.cost.pricing == "owned"
    assert whisper.cost.offer == llm.cost.offer == "your 1x rtx-4090 (power only)"
    assert whisper.cost.usd_per_hour == llm.cost.usd_per_hour == pytest.approx(0.450 * 0.16)
    mac = plan(model="sdxl", task="infer", gpu="apple-m2-max")
    mac_llm = gpuplan.estimate(dict(model="qwen3-0.6b", task="infer", gpu="apple-m2-max"))
    assert mac.cost.offer == "your 1x apple-m2-max (power only)"
    assert mac.cost.usd_per_hour == mac_llm.cost.usd_per_hour == pytest.approx(0.145 * 0.16)
    said = [w for w in mac.warnings if w.startswith("no price")]
    assert said == [w for w in mac_llm.warnings if w.startswith("no price")] and "priced as your own card" in said[0]
    rented = plan(model="sdxl", task="infer", gpu="rtx-4090")  # a card offers list: an offer's price, as before
    assert rented.cost.pricing == "on_demand" and rented.cost.usd_per_hour > 0.1

def test_the_latents_and_embeddings_cached_or_not():
    """The VAE runs each step unless latents are cached; frozen text encoders stay on the card and run."""
    base = dict(model="sdxl", task="train", method="lora", resolution="1024", gpu="a100-80gb")
    cached = plan(**base, cache_latents=True, text_encoders="cached")
    encoded = plan(**base, cache_latents=False, text_encoders="frozen")
    assert "VAE encode" not in cached.work.parts_s and "VAE encode" in encoded.work.parts_s
    assert "text encoders" in encoded.work.parts_s
    assert encoded.memory.device_peak_gib > cached.memory.device_peak_gib + 1.0  # CLIP-L and CLIP-G: 1.5 GiB
    assert encoded.work.step_s > cached.work.step_s


def test_a_flux_lora_needs_a_4_bit_base_or_checkpointing_on_24_gb():
    bf16 = plan(model="flux-dev", task="train", method="lora", resolution="1024", gpu="rtx-4090")
    assert not bf16.memory.fits
    changes = " ".join(s.change for s in bf16.suggestions)
    assert "checkpointing" in changes or "nf4" in changes.lower() or "fp8" in changes.lower()
    nf4 = plan(model="flux-dev", task="train", method="qlora", resolution="512", gpu="rtx-4090",
               grad_checkpointing="full")
    assert nf4.memory.fits and nf4.memory.weights_gib < 7  # 11.9 B weights in NF4 (and the 16-bit norms)
    assert "dequantize" in nf4.work.parts_s


def test_ai_toolkit_runs_flux_as_its_24_gb_example_config_does():
    """Walk s16: a hobbyist naming ai-toolkit for a FLUX.1-dev LoRA on a 4090 was told 'does not fit: 27.90 of
    23.88 GiB' at bf16 weights and AdamW, while ai-toolkit's own train_lora_flux_24gb.yaml (copied in
    tests/data/ai-toolkit) sets model.quantize true (qfloat8) and optimizer adamw8bit for that card. Its defaults
    are now the example's; a field given keeps the user's value."""
    import yaml

    example = yaml.safe_load((Path(__file__).resolve().parents[1] / "data" / "ai-toolkit" /
                              "train_lora_flux_24gb.yaml").read_text())["config"]["process"][0]
    assert example["model"]["quantize"] is True and example["train"]["optimizer"] == "adamw8bit"
    base = dict(model="flux-dev", task="train", method="lora", resolution="1024", gpu="rtx-4090", stack="ai-toolkit")
    p = plan(**base)
    assert p.scenario["quant"] == "fp8" and p.scenario["optimizer"] == "adamw-8bit"
    # 11.90 B weights, quanto's qfloat8 on every linear (the adaptive norms' modulation linears too: session 17, where
    # the plan kept their 3.25 B 16-bit, 14.3 GiB): 11,898,322,944 linear weights in fp8 (11.90 GB) and 3,085,376
    # biases and norms in bf16 (6.2 MB): 11.90 GB = 11.09 GiB, with the rank-16 LoRA's 85,917,696 parameters in fp32
    # (ai-toolkit's BaseSDTrainProcess: network.force_to(dtype=torch.float32); 0.32 GiB) 11.41
    assert p.memory.fits and 11.3 < p.memory.weights_gib < 11.5
    assert p.model.params_trainable == 85_917_696 and p.memory.gradients_gib * 2**30 == 85_917_696 * 4
    assert "quantize (optimum-quanto qfloat8) stores every linear in fp8" in " ".join(p.module.job.notes)
    # and the text encoders on the card, as the example leaves them (no cache_text_embeddings): T5-XXL's 4,630,511,616
    # linear weights in qfloat8 (quantize_te follows quantize) and its 131,799,040 embeddings and norms in bf16
    # (4.894 GB), CLIP-L whole in bf16 (123,060,480 x 2 = 0.246 GB): 5.140 GB = 4.787 GiB
    assert p.scenario["text_encoders"] == "frozen" and p.memory.other_gib == pytest.approx(4.787, abs=0.002)
    said = " ".join(p.assumptions)
    assert "optimizer adamw-8bit (its example configs" in said and "quant fp8 (its example configs" in said
    given = plan(**base, optimizer="adamw", quant="none")
    assert given.scenario["optimizer"] == "adamw" and not given.memory.fits
    assert plan(**{**base, "stack": "kohya"}).scenario["optimizer"] == "adamw"  # kohya's own default: AdamW


def test_aspect_buckets_average_the_step_and_the_largest_sets_the_peak():
    base = dict(model="sdxl", task="train", method="lora", gpu="a100-80gb", cache_latents=True)
    square = plan(**base, resolution="1024")
    small = plan(**base, resolution="768")
    both = plan(**base, resolution="768,1024")
    assert both.work.buckets == ["1024x1024", "768x768"]
    assert small.work.step_s < both.work.step_s < square.work.step_s
    assert both.memory.device_peak_gib == pytest.approx(square.memory.device_peak_gib)


def test_prior_preservation_doubles_the_images_per_step():
    base = dict(model="sd1.5", task="train", method="lora", resolution="512", gpu="a100-80gb", micro_batch_size=2)
    alone, prior = plan(**base), plan(**base, prior_preservation=True)
    assert (alone.work.batch, prior.work.batch) == (2, 4)
    assert prior.work.step_s > 1.5 * alone.work.step_s * 0.8


def test_sdxl_generation_seconds_per_image_cfg_and_offload():
    base = dict(model="sdxl", task="infer", gpu="rtx-4090", resolution="1024", inference_steps=30)
    p = plan(**base)
    assert p.work.kind == "diffusion generation" and p.work.batch == 2  # classifier-free guidance: 2 per image
    assert 2 < p.work.image_s < 15 and p.work.images_per_hour == pytest.approx(3600 / p.work.image_s)
    assert "VAE decode" in p.work.parts_s
    no_cfg = plan(**base, cfg=False)
    assert no_cfg.work.parts_s["denoise"] < 0.7 * p.work.parts_s["denoise"]
    model = plan(**base, cpu_offload="model")
    sequential = plan(**base, cpu_offload="sequential")
    assert sequential.memory.device_peak_gib < model.memory.device_peak_gib < p.memory.device_peak_gib
    assert p.work.image_s < model.work.image_s < sequential.work.image_s



def test_model_cpu_offload_moves_every_model_onto_the_card_and_back_each_call():
    """diffusers' enable_model_cpu_offload (src/diffusers/pipelines/pipeline_utils.py): accelerate's
    cpu_offload_with_hook moves each model onto the card when it runs and its prev_module_hook moves the one before
    back, and maybe_free_model_hooks offloads the rest at the call's end, so a call copies every weight twice; the
    copies go through accelerate's hooks from pageable memory at 1.719e9 / (1/2 - 1/6) = 5.157 GB/s (diffusers issue
    2266: an RTX 3060's SD 1.5 steps went from 6 to 2 it/s, each copying the UNet's fp16 weights). SDXL in fp16 holds
    6.94 GB of weights: 2 x 6.94e9 / 5.157e9 = 2.69 s. Sequential offload copies the text encoders and VAE once and
    the UNet's 5.14 GB before every step, none back, and each step's it/s holds its copy."""
    base = dict(model="sdxl", task="infer", gpu="rtx-4090", resolution="1024", inference_steps=30)
    p = plan(**base)
    weights = (p.memory.weights_gib + sum(v for k, v in p.memory.other.items() if "weights" in k)) * 2**30
    unet = p.memory.weights_gib * 2**30
    assert weights == pytest.approx(6.94e9, rel=1e-3) and unet == pytest.approx(5.135e9, rel=1e-3)
    rate = 1.719e9 / (1 / 2 - 1 / 6)
    model = plan(**base, cpu_offload="model").work
    assert model.parts_s["CPU offload transfers"] == pytest.approx(2 * weights / rate, rel=1e-6)
    assert model.parts_s["CPU offload transfers"] == pytest.approx(2.69, abs=0.01)
    assert model.step_s == pytest.approx(p.work.step_s)  # nothing moves between steps
    sequential = plan(**base, cpu_offload="sequential").work
    assert sequential.parts_s["CPU offload transfers"] == pytest.approx((weights - unet + 30 * unet) / rate, rel=1e-3)
    assert sequential.step_s == pytest.approx(p.work.step_s + unet / rate, rel=1e-3)


def test_a_servers_host_copies_pageable_memory_at_its_own_speed():
    """The CUDA driver copies pageable memory by first copying it with the CPU into a pinned staging buffer (NVIDIA
    developer blog, 'How to Optimize Data Transfers in CUDA C/C++'), one thread, so offload's copies run at the
    host's speed: on an A100's server at 5.157 / 1.75 = 2.95 GB/s (SERVER_HOST_FACTOR, fitted on fal-ai's eager SD
    1.5 calls, not on a copy). Checked against Hugging Face's SDXL post (simple_sdxl_optimizations.md, a Colab A100
    40GB, batch 4 at 1024 px, 25 steps): model offload ran 16.08 s a call against 11.41 s kept on the card, 4.67 s
    for two copies of the 6.94 GB of weights, 2.97 GB/s."""
    base = dict(model="sdxl", task="infer", gpu="a100-sxm4-40gb", resolution="1024", inference_steps=25,
                batch_size=4, precision="fp16-true")
    p = plan(**base)
    weights = (p.memory.weights_gib + sum(v for k, v in p.memory.other.items() if "weights" in k)) * 2**30
    model = plan(**base, cpu_offload="model").work
    rate = 1.719e9 / (1 / 2 - 1 / 6) / 1.75
    assert model.parts_s["CPU offload transfers"] == pytest.approx(2 * weights / rate, rel=1e-6)
    assert 2 * weights / model.parts_s["CPU offload transfers"] == pytest.approx(2 * 6.94e9 / (16.082 - 11.413),
                                                                               rel=0.02)


def test_a_vae_decode_holds_its_measured_working_memory_beyond_its_traced_tensors():
    """FLUX.1-dev's 1024 px peak is its VAE decode: the decoder's tensors recorded on fake tensors (1.50 GiB in bf16),
    times what InvokeAI measured a decode of that decoder to reserve on CUDA over them (overheads
    .VAE_DECODE_WORKING_FACTOR, 2.1); the H100 rows of diffusers' quantization blog then read 1 to 6 % low, where
    they read up to 15 % low on the tensors alone. Half the pixels halve it. Of that reserved memory a decode holds
    4.369 / 5.254 = 0.832 allocated (InvokeAI pull 9305, a VAE decode at 1024 x 1024 under PyTorch's allocator,
    overheads.VAE_DECODE_ALLOCATED_SHARE); the rest, with the allocator's 4 % slack, is reserved beside the
    allocations, so the reserved peak is as before: weights and the rest x 1.04 + 1.5 x 2.10."""
    from gpuplan import overheads as oh

    big = plan(model="flux-dev", task="infer", resolution="1024", inference_steps=50, gpu="h100-sxm")
    small = plan(model="flux-dev", task="infer", resolution="1024x512", inference_steps=50, gpu="h100-sxm")
    assert oh.VAE_DECODE_WORKING_FACTOR == 2.10
    assert pytest.approx(0.8316, abs=1e-4) == oh.VAE_DECODE_ALLOCATED_SHARE
    assert big.memory.peak_phase == "VAE decode"
    assert big.memory.phases_gib["VAE decode"] == pytest.approx(1.5 * 2.10 * 0.8316, rel=1e-3)
    assert small.memory.phases_gib["VAE decode"] == pytest.approx(1.5 * 2.10 * 0.8316 / 2, rel=0.02)
    assert big.memory.cached_gib == pytest.approx(1.5 * 2.10 * (1 - 0.8316) * 1.04, rel=1e-3)
    assert big.memory.reserved_peak_gib == pytest.approx(
        (big.memory.allocated_peak_gib - big.memory.activations_gib) * 1.04 + 1.5 * 2.10 * 1.04, rel=1e-3)
    assert big.memory.reserved_peak_gib == pytest.approx(36.166, rel=0.02)  # the blog's BF16 peak


def test_an_fp32_vae_decode_holds_what_invokeai_measured_of_an_fp32_decode():
    """SDXL's VAE decodes in fp32 in an fp16 pipeline (its config's force_upcast) and in an fp32 one. InvokeAI's QA
    measured that decode at 1024 x 1024 in fp32 too (invoke-ai/InvokeAI pull 7674: 5,568 MiB reserved, where the
    decoder's tensors recorded on fake tensors come to 3.0 GiB in fp32: 1.8125), which the plan takes for an fp32
    decode where it took the fp16 measurement's 2.10 (3,232 MiB over 1.50 GiB). At batch 4, 1.5 x 4 x 2 = 12.0 GiB
    of fp32 tensors: 12.0 x 1.8125 x 0.8316 = 18.09 GiB allocated, with the fp32 copy of the VAE's 83,653,863
    weights beside it (0.31 GiB). A bf16 pipeline's decode (FLUX.1-dev) keeps 2.10."""
    from gpuplan import overheads as oh

    assert pytest.approx(1.8125) == oh.VAE_DECODE_WORKING_FACTOR_FP32
    fp16 = plan(model="sdxl", task="infer", gpu="a100-sxm4-40gb", resolution="1024", inference_steps=25,
                batch_size=4, precision="fp16-true")
    fp32 = plan(model="sdxl", task="infer", gpu="a100-sxm4-40gb", resolution="1024", inference_steps=25,
                batch_size=4, precision="fp32")
    vae_fp32 = 83_653_863 * 4 / 2**30
    assert fp16.memory.peak_phase == fp32.memory.peak_phase == "VAE decode"
    assert fp16.memory.phases_gib["VAE decode"] == pytest.approx(12.0 * 1.8125 * 0.8316 + vae_fp32, rel=0.01)
    assert fp32.memory.phases_gib["VAE decode"] == pytest.approx(12.0 * 1.8125 * 0.8316, rel=0.01)
    flux = plan(model="flux-dev", task="infer", resolution="1024", inference_steps=50, gpu="h100-sxm")
    assert flux.memory.phases_gib["VAE decode"] == pytest.approx(1.5 * 2.10 * 0.8316, rel=1e-3)


def test_schnell_runs_four_steps_without_guidance():
    p = plan(model="flux-schnell", task="infer", gpu="h100-sxm", resolution="1024")
    assert p.work.steps == 4 and p.work.batch == 1
    assert any("4 steps" in d for d in p.defaults) and any("guidance-distilled" in d for d in p.defaults)


# ---- Whisper: the review's case (new-user review 3, Q8 and problem 5) ----------------------------------------------
def test_whisper_full_fine_tuning_counts_the_encoder_and_every_gradient():
    """The review's command: 16 x 448 decoder tokens, and the encoder's 16 x 1,500 frames; fp32 gradients for all
    1,543,490,560 parameters (5.75 GiB, not 4.36)."""
    p = plan(model=str(REVIEW / "whisper-large-v3"), task="train", method="full", gpu="a100-80gb", seq_len=448,
             micro_batch_size=16)
    assert p.model.params_total == WHISPER_PARAMS
    assert p.memory.gradients_gib == pytest.approx(WHISPER_PARAMS * 4 / GIB, rel=1e-6)
    assert p.memory.weights_gib == pytest.approx(WHISPER_PARAMS * 4 / GIB, rel=1e-6)
    assert p.work.sizes == {"decoder_tokens": [448]}
    assert any("1,500 frames" in d for d in p.defaults)
    # 6 x params x tokens, tokens = 1,500 frames through the encoder's half and 448 through the decoder's, plus the
    # attention: the recorded FLOPs are within 15 % of that count and above it
    encoder, decoder = 635_000_000, WHISPER_PARAMS - 635_000_000
    dense = 6 * 16 * (encoder * 1500 + decoder * 448)
    assert dense < p.work.flops_per_step < 1.4 * dense
    assert 0.2 < p.work.mfu < 0.7


def test_whisper_decoder_tokens_past_its_positions_are_refused():
    with pytest.raises(GpuplanError, match="at most 448 tokens"):
        plan(model="whisper-large-v3", task="train", method="full", gpu="a100-80gb", decoder_tokens=1000)


@pytest.mark.parametrize("model", ["whisper-large-v3", "flan-t5-base"])
def test_no_output_tokens_on_an_encoder_decoder_is_timed_as_its_first_token(model):
    # s19 fuzz: output_tokens 0 (allowed: a decoder LLM times it as one token) made the generate's "decoder steps"
    # (tokens - 1) x step = -1 step: -0.031 s on a B200 for Whisper, and a call shorter than the encoder pass
    base = dict(model=model, task="infer", gpu="b200")
    none, one = gpuplan.estimate({**base, "output_tokens": 0}), gpuplan.estimate({**base, "output_tokens": 1})
    assert none.work.parts_s["decoder steps"] == 0.0
    assert none.work.sizes["decoder_tokens"] == [1]
    assert none.work.samples_per_s == one.work.samples_per_s > 0


def test_whisper_lora_and_checkpointing_save_memory():
    base = dict(model="whisper-large-v3", task="train", gpu="a100-80gb", micro_batch_size=16, decoder_tokens=448)
    full = plan(**base, method="full")
    gc = plan(**base, method="full", grad_checkpointing="full")
    lora = plan(**base, method="lora")
    assert gc.memory.activations_gib < 0.5 * full.memory.activations_gib
    assert lora.memory.gradients_gib < 0.1 and lora.memory.optimizer_gib < 0.5


def test_whisper_transcription_time_per_window():
    p = plan(model="whisper-large-v3", task="infer", gpu="l4", batch_size=8, output_tokens=128)
    assert p.work.kind == "inference" and p.work.samples_per_s > 0


def test_a_recording_is_cut_into_the_pipelines_windows_and_timed_pass_by_pass():
    """150 minutes of audio are 450 windows (30 s, 20 s new after the first: transformers' pipeline), 24 per pass:
    18 passes of 24 and one of 18, each its encoder, first token and decoder steps, and 450 windows' log-mel
    features on the CPU; a recording of 20 s is one window, padded: the encoder's work does not shrink."""
    from gpuplan import overheads as oh

    base = dict(model="whisper-large-v3", task="infer", gpu="a100-80gb", output_tokens=110, batch_size=24)
    long = plan(**base, audio_seconds=9000)
    assert long.work.samples_per_step == 450 and long.work.batch == 24
    assert "450 windows of 30 s, 24 per pass" in long.resolved
    assert long.work.parts_s["log-mel features (CPU)"] == pytest.approx(450 * oh.WHISPER_LOG_MEL_S_PER_WINDOW)
    one_pass = plan(**base, audio_seconds=490)  # 24 windows (30 s, then 23 x 20 s), one pass
    assert one_pass.work.samples_per_step == 24
    gpu_one = one_pass.work.image_s - one_pass.work.parts_s["log-mel features (CPU)"]
    gpu_long = long.work.image_s - long.work.parts_s["log-mel features (CPU)"]
    assert 18 * gpu_one < gpu_long < 19 * gpu_one  # the last pass, on 18 windows, costs less than a full one
    assert long.work.samples_per_s == pytest.approx(450 / long.work.image_s)
    short = plan(**{**base, "batch_size": 1}, audio_seconds=20)
    full = plan(**{**base, "batch_size": 1}, audio_seconds=30)
    assert short.work.samples_per_step == 1 and short.work.image_s == pytest.approx(full.work.image_s)
    assert plan(**base, audio_seconds=51).work.samples_per_step == 3  # 30 s, then 20 s and 1 s more


def test_a_pass_of_windows_decodes_until_its_longest_window_ends():
    """Issue 34, s25: transformers' generate steps a batch until its last row ends, so a pass of Whisper windows runs
    as many steps as its longest window. Windows' tokens normal, standard deviation 0.16 of the mean (a published
    podcast transcript's, overheads.WHISPER_WINDOW_TOKENS_CV); the largest of n at Blom's quantile
    (n - 0.375) / (n + 0.25): n = 16, 0.96154, 1.7688 standard deviations, so 105 x (1 + 0.16 x 1.7688) = 134.7
    steps; n = 24, 1.9469: 110 x 1.3115 = 144.3; one window is its mean; never past the decoder's 448 positions."""
    from gpuplan.scenario.modules import pass_tokens

    assert pass_tokens(105, 1, 448) == 105
    assert pass_tokens(105, 16, 448) == pytest.approx(134.72, abs=0.01)
    assert pass_tokens(110, 24, 448) == pytest.approx(144.27, abs=0.01)
    assert pass_tokens(400, 24, 448) == 448
    base = dict(model="whisper-large-v3", task="infer", gpu="t4", output_tokens=105, batch_size=16,
                precision="fp16-true")
    recording, samples = plan(**base, audio_seconds=330), plan(**base)  # 16 windows in one pass; 16 clips
    assert recording.work.samples_per_step == samples.work.samples_per_step == 16
    assert "about 135 decoder steps for 16 windows of 105 tokens on average" in " ".join(recording.defaults)
    assert recording.work.parts_s["encoder and first token"] == samples.work.parts_s["encoder and first token"]
    # 133.72 steps after the first token against 104, each a little longer (the self-attention caches grow longer)
    ratio = recording.work.parts_s["decoder steps"] / samples.work.parts_s["decoder steps"]
    assert ratio == pytest.approx((pass_tokens(105, 16, 448) - 1) / 104 * recording.work.step_s / samples.work.step_s)
    assert 1.0 < recording.work.step_s / samples.work.step_s < 1.01
    # clips given as samples (no recording) keep the tokens asked: no spread was sourced for them
    assert samples.work.parts_s["decoder steps"] == pytest.approx(104 * samples.work.step_s)


def test_a_transcription_without_a_token_count_decodes_the_transcript_rate():
    """Issue 34, s27: a recording given with no output_tokens or decoder_tokens took a decoder LLM's 256 tokens a
    window. The default is the published podcast transcript's rate (bench/results/whisper_s25.md: 101.1 text tokens
    and 19.5 timestamp tokens a 30 s window) over the window's speech, plus the decoder's forced and end steps:
    101.1 / 30 x 30 + 4 = 105.1 -> 105; with timestamps (101.1 + 19.5) / 30 x 30 + 3 = 123.6 -> 124; a 12 s recording
    with timestamps 4.02 x 12 + 3 = 51.24 -> 51. A count given is kept; clips (no recording) keep output_tokens."""
    from gpuplan.scenario.modules import transcript_tokens

    assert transcript_tokens(3600, False)[0] == 105 and transcript_tokens(3600, True)[0] == 124
    assert transcript_tokens(12, True)[0] == 51
    base = dict(model="whisper-large-v3", task="infer", gpu="l4", batch_size=1, audio_seconds=3600)
    said = next(n for n in plan(**base).defaults if n.startswith("decoder_tokens"))
    assert said.startswith("decoder_tokens 105: from 3.37 tokens/s of speech over a window's 30 s, plus 4 forced")
    assert "Lex Fridman #367" in said
    assert plan(**base).module.job.shapes == ((105,),)
    assert plan(**base, timestamps=True).module.job.shapes == ((124,),)
    assert plan(**base, output_tokens=256).module.job.shapes == ((256,),)
    assert plan(**base, decoder_tokens=80).module.job.shapes == ((80,),)
    clips = plan(model="whisper-large-v3", task="infer", gpu="l4", batch_size=1)
    assert clips.module.job.shapes == ((256,),) and not any(n.startswith("decoder_tokens") for n in clips.defaults)


def test_a_decoder_step_copies_its_self_attention_cache_as_torch_cat_grows_it():
    """Issue 34, s27: transformers grows each decoder layer's self-attention cache with torch.cat (4.35's
    WhisperAttention, today's DynamicLayer.update), reading the cache and writing it one token longer every step.
    Whisper-large-v3 on a T4 (256 GB/s achievable), 16 windows, 100 decoder tokens (the cache 50 long on average),
    fp16: 32 layers x 2 (read, write) x 16 x 20 heads x 50 x (64 + 64) x 2 B = 262 MB, 1.024 ms a step."""
    from gpuplan.plan.modules import profiles
    from gpuplan.speed.modules import _run, decode_step

    p = plan(model="whisper-large-v3", task="infer", gpu="t4", batch_size=16, output_tokens=100,
             precision="fp16-true")
    main, _ = profiles(p.module.job)
    step = decode_step(main, p.module.gpu, 16, (100,), 0, _run(p.module.job, p.module.scenario))
    assert step.elementwise_s == pytest.approx(32 * 2 * 16 * 20 * 50 * 128 * 2 / 256e9)


def test_a_recordings_largest_batch_is_the_windows_per_pass_that_fit():
    """s13 walk: Whisper-large-v3 on a T4 with a 30 s or 600 s recording said 'largest batch that fits: 2,047': a
    recording's pass holds min(batch, windows), so every larger batch was the same pass and fitted, and the
    bisection ran past its 1,024 limit. The search is of windows per pass, as without a recording: 37. Each window
    holds at least its cross-attention keys and values, 32 decoder layers x 2 x 1,500 frames x 1,280 x 2 B =
    0.229 GiB, so no more than (15.00 usable - the peak at 1) / 0.229 + 1 windows fit."""
    from gpuplan.plan.modules import largest_batch

    base = dict(model="whisper-large-v3", task="infer", gpu="t4", batch_size=16)
    plain = plan(**base).memory.max_batch_size
    assert [plan(**base, audio_seconds=a).memory.max_batch_size for a in (30, 600)] == [plain, plain]
    cross = 32 * 2 * 1500 * 1280 * 2 / GIB
    one = plan(**{**base, "batch_size": 1}).memory.device_peak_gib
    assert 1 < plain <= (15.00 - one) / cross + 1
    assert plan(**{**base, "batch_size": plain}).memory.fits
    assert not plan(**{**base, "batch_size": plain + 1}).memory.fits
    setup = plan(**base).module
    assert largest_batch(setup.scenario, setup.job.spec, setup.gpu, limit=8) == 8  # was 15: past the limit


def test_a_recording_says_its_seconds_and_windows_as_numbers_are_written():
    """'transcribe 3600 s of audio, 180 windows' beside '1,500 encoder frames'; '12.5 s of audio, 1 windows'."""
    base = dict(model="whisper-large-v3", task="infer", gpu="l4", output_tokens=110, batch_size=8)
    assert "transcribe 3,600 s of audio, 180 windows of 30 s" in plan(**base, audio_seconds=3600).resolved
    short = plan(**base, audio_seconds=12.5)
    assert "transcribe 12.5 s of audio, 1 window of 30 s" in short.resolved
    assert any(n.startswith("12.5 s of audio: 1 window of 30 s") for n in short.defaults), short.defaults
    # s13 walk: batch 8 on a recording of one window ran 1 per pass, unsaid
    assert any(n.endswith("1 per pass (batch 8 asked: the recording has no more)") for n in short.defaults)
    assert not any("asked" in n for n in plan(**base, audio_seconds=3600).defaults)


def test_whisper_training_reads_its_log_mel_batches_on_the_cpu_between_steps():
    """Hugging Face's recipes store the features and the Trainer (no dataloader workers) pads each batch in the
    training process: micro-batch x accumulation x num_mel_bins x 3,000 values per optimizer step, its own part."""
    from gpuplan import overheads as oh

    p = plan(model="whisper-large-v3", task="train", method="full", gpu="a100-80gb", micro_batch_size=8,
             grad_accum_steps=2, decoder_tokens=64)
    part = p.work.parts_s["log-mel batches from the dataset (CPU)"]
    assert part == pytest.approx(8 * 2 * 128 * 3000 * oh.SPEECH_BATCH_S_PER_VALUE)
    assert p.work.step_s == pytest.approx(sum(p.work.parts_s.values()))  # serial with the GPU: added
    small = plan(model="whisper-small", task="train", method="full", gpu="a100-80gb", micro_batch_size=8,
                 grad_accum_steps=2, decoder_tokens=64)
    assert small.work.parts_s["log-mel batches from the dataset (CPU)"] == pytest.approx(part * 80 / 128)
    assert "log-mel batches" not in str(plan(model="t0-3b", task="train", method="lora", gpu="a100-80gb").work)


def test_audio_seconds_is_refused_where_it_cannot_apply():
    with pytest.raises(GpuplanError, match="at most 30 s"):
        plan(model="whisper-small", task="train", gpu="a100-80gb", audio_seconds=45)
    with pytest.raises(GpuplanError, match="audio_seconds sizes Whisper's audio"):
        plan(model="sdxl", task="infer", gpu="a100-80gb", audio_seconds=10)
    clip = plan(model="whisper-small", task="train", gpu="a100-80gb", audio_seconds=12)
    assert any("12 s clips, padded to 30 s: 1,500 encoder frames" in d for d in clip.defaults)


@pytest.mark.parametrize("model, task", [("t0-3b", "train"), ("flan-t5-base", "infer"), ("bart-large", "train"),
                                         ("vit-base", "infer"), ("clip-vit-large", "infer"),
                                         ("siglip-so400m", "infer")])
def test_encoder_decoders_and_encoders_are_planned(model, task):
    p = plan(model=model, task=task, gpu="a100-80gb", **({"method": "lora"} if task == "train" else {}))
    assert p.memory.device_peak_gib > 0 and p.work.samples_per_s > 0 and p.work.flops_per_step > 0


def test_a_default_length_past_an_encoder_decoders_positions_is_shortened_and_said():
    """BART learns 1,024 positions: the default seq_len (2,048) is shortened to them and said, as a decoder LLM's
    is (plan.resolve.within_context); a seq_len the user set past them is refused."""
    p = plan(model="bart-large", task="train", method="lora", gpu="a100-80gb")
    assert p.work.sizes == {"encoder_tokens": [1024], "decoder_tokens": [256]}
    assert any("seq_len 1,024: the default 2,048" in d for d in p.defaults)
    with pytest.raises(GpuplanError, match="learns 1,024 positions"):
        plan(model="bart-large", task="train", method="lora", gpu="a100-80gb", seq_len=2048)


def test_a_module_plan_is_resolved_and_built_on_the_one_road():
    """estimate() of a diffusion pipeline is the one resolver's answer built by the one builder: the same plan,
    number for number, as resolve_any then build on the offers offers_for finds; a memory-only build stops before
    the speed and the price, as a decoder's does."""
    from gpuplan.market.store import load_offers
    from gpuplan.plan.build import build, offers_for
    from gpuplan.plan.resolve import ResolvedModule, resolve_any
    from gpuplan.scenario import scenario_from

    asked = dict(model="sdxl", task="train", method="lora", resolution="1024", gpu="rtx 3060", train_steps=500)
    r = resolve_any(scenario_from(asked))
    assert isinstance(r, ResolvedModule) and r.gpu.id == "nvidia-geforce-rtx-3060-12gb" and r.job.way
    assert any("stack diffusers" in a for a in r.assumptions)
    offers = offers_for(r, load_offers())
    built = build(r, offers)
    assert built.to_dict() == gpuplan.estimate(asked).to_dict()
    on_demand = [o.usd_per_gpu_hour for o in offers.candidates if o.pricing == "on_demand"]
    assert on_demand and built.cost.usd_per_gpu_hour == min(on_demand)  # the cheapest of the builder's offers
    alone = build(r, memory_only=True)
    assert alone.work is None and alone.cost is None and alone.memory == built.memory.model_copy(
        update={"max_batch_size": None})


# ---- refusals --------------------------------------------------------------------------------------------------
def test_module_fields_on_a_decoder_llm_are_refused():
    with pytest.raises(GpuplanError, match="resolution applies to diffusion pipelines"):
        gpuplan.estimate({"model": "llama-3.1-8b", "task": "train", "resolution": "1024", "gpu": "h100-sxm"})


SDXL = "stabilityai/stable-diffusion-xl-base-1.0 is a diffusion pipeline (StableDiffusionXLPipeline)"
WHISPER = "openai/whisper-large-v3 is an encoder-decoder model (whisper)"
T5 = "google/flan-t5-base is an encoder-decoder model (t5)"
VIT = "google/vit-base-patch16-224 is an encoder model (vit)"
SIZED = "its training is sized by train_steps (optimizer steps) x micro_batch_size {} (x grad_accum_steps)"
ONE_GPU = ("its plan runs on one GPU (data parallelism over several is not modelled for it), and N replicas make N "
           "times its {} per hour at the same price per thousand")
DECODER_FIELDS = [  # (scenario, the field, the sentence after "FIELD is a decoder LLM setting, and ")
    ({"model": "sdxl", "task": "train", "method": "lora", "train_tokens": 1e6}, "train_tokens",
     f"{SDXL}: {SIZED.format('images')}"),
    ({"model": "sdxl", "task": "train", "method": "lora", "samples": 200, "mean_tokens": 60}, "samples",
     f"{SDXL}: {SIZED.format('images')}"),
    ({"model": "sdxl", "task": "train", "method": "lora", "epochs": 3.0}, "epochs",
     f"{SDXL}: {SIZED.format('images')}"),
    ({"model": "whisper-large-v3", "task": "train", "train_tokens": 1e8}, "train_tokens",
     f"{WHISPER}: {SIZED.format('samples')}"),
    ({"model": "sdxl", "task": "train", "method": "lora", "loss": "chunked"}, "loss",
     f"{SDXL}: its step is timed from its recorded profile, with precision, attention, grad_checkpointing, "
     "cache_latents and text_encoders"),
    ({"model": "flan-t5-base", "task": "train", "compile": True}, "compile",
     f"{T5}: its step is timed from its recorded profile, with precision, attention, grad_checkpointing"),
    ({"model": "sdxl", "task": "infer", "engine": "vllm"}, "engine",
     f"{SDXL}: it generates with diffusers' pipeline, per batch_size images x inference_steps (and cfg)"),
    ({"model": "whisper-large-v3", "task": "infer", "kv_cache_dtype": "fp8"}, "kv_cache_dtype",
     f"{WHISPER}: it runs on transformers, per batch_size windows of audio_seconds and decoder_tokens"),
    ({"model": "whisper-large-v3", "task": "infer", "prompt_tokens": 100}, "prompt_tokens",
     f"{WHISPER}: it runs on transformers, per batch_size windows of audio_seconds and decoder_tokens"),
    ({"model": "vit-base", "task": "infer", "gpu_memory_utilization": 0.8}, "gpu_memory_utilization",
     f"{VIT}: it runs on transformers, per batch_size samples"),
    ({"model": "sdxl", "task": "infer", "prompt_tokens": 200}, "prompt_tokens",
     f"{SDXL}: a prompt is CLIP's 77 tokens"),
    ({"model": "flux-dev", "task": "infer", "prompt_tokens": 200}, "prompt_tokens",
     "black-forest-labs/FLUX.1-dev is a diffusion pipeline (FluxPipeline): a prompt is CLIP's 77 tokens, plus the T5 "
     "tokens seq_len sets"),
    ({"model": "sdxl", "task": "train", "method": "lora", "num_gpus": 2}, "num_gpus",
     f"{SDXL}: {ONE_GPU.format('images')}"),
    ({"model": "sdxl", "task": "infer", "num_gpus": 4}, "num_gpus", f"{SDXL}: {ONE_GPU.format('images')}"),
    ({"model": "whisper-large-v3", "task": "train", "sharding": "zero2"}, "sharding",
     f"{WHISPER}: {ONE_GPU.format('samples')}"),
    ({"model": "flan-t5-base", "task": "infer", "tp": 2}, "tp", f"{T5}: {ONE_GPU.format('samples')}"),
]


@pytest.mark.parametrize(("fields", "name", "why"), DECODER_FIELDS,
                         ids=[f"{f['model']}-{f['task']}-{name}" for f, name, _ in DECODER_FIELDS])
def test_a_decoder_llm_field_given_to_a_module_plan_is_refused_saying_what_it_reads(fields, name, why, capsys):
    """A field only a decoder LLM's plan reads (a job sized in tokens, an engine, a loss, several GPUs), given to
    a diffusion pipeline, Whisper, T5 or ViT, did nothing and was taken without a word: the one resolver refuses it
    in one sentence naming the field and what the model's plan reads instead; the CLI exits 2 with that line."""
    sentence = f"{name} is a decoder LLM setting, and {why}; drop {name}"
    with pytest.raises(GpuplanError) as refused:
        gpuplan.estimate({**fields, "gpu": "a100-80gb"})
    assert str(refused.value) == sentence
    flags = [x for k, v in fields.items() for x in (f"--{k.replace('_', '-')}", str(v).lower())]
    assert run(["estimate", *flags, "--gpu", "a100-80gb"]) == 2
    err = capsys.readouterr().err.strip()
    assert err == f"error: {sentence}"


def test_text_data_and_a_serving_load_given_to_a_module_are_refused_naming_its_kind(tmp_path, capsys):
    """A dataset file was read with the model's tokenizer before the model was known, and a serving load checked
    for a vLLM or SGLang engine, so a diffusion pipeline or Whisper got errors about tokenizer.json or an engine's
    scheduler: both now reach the resolver's refusal, which names the model's kind and what its plan reads, for a
    bundled name and a local folder alike."""
    data = tmp_path / "d.jsonl"
    data.write_text('{"text": "a photo of a dog"}\n')
    cases = [({"model": "sdxl", "task": "train", "method": "lora", "dataset": str(data)}, "dataset",
              f"{SDXL}: {SIZED.format('images')}"),
             ({"model": str(REVIEW / "whisper-large-v3"), "task": "train", "dataset": str(data)}, "dataset",
              f"whisper-large-v3 is an encoder-decoder model (whisper): {SIZED.format('samples')}"),
             ({"model": "sdxl", "task": "infer", "users": 10}, "users",
              f"{SDXL}: it generates with diffusers' pipeline, per batch_size images x inference_steps (and cfg)"),
             ({"model": "whisper-large-v3", "task": "infer", "rate_rps": 2.0}, "rate_rps",
              f"{WHISPER}: it runs on transformers, per batch_size windows of audio_seconds and decoder_tokens")]
    for fields, name, why in cases:
        sentence = f"{name} is a decoder LLM setting, and {why}; drop {name}"
        with pytest.raises(GpuplanError) as refused:
            gpuplan.estimate({**fields, "gpu": "a100-80gb"})
        assert str(refused.value) == sentence
    assert run(["estimate", "--model", "sdxl", "--task", "infer", "--users", "10", "--gpu", "a100-80gb"]) == 2
    assert capsys.readouterr().err.strip().startswith("error: users is a decoder LLM setting, and " + SDXL)
    with pytest.raises(GpuplanError, match="tokenizer"):  # a decoder still reads its data with its tokenizer
        gpuplan.estimate({"model": "llama-3.1-8b", "task": "train", "dataset": str(data), "gpu": "a100-80gb"})


def test_a_decoder_field_at_its_default_or_a_field_the_plan_reads_passes():
    """A field given at its default changes nothing and is taken (a scenario file may carry num_gpus: 1); the
    fields the plan reads are its kind's (SD3 and Flux read seq_len as their T5 tokens; Whisper its transcript)."""
    base = plan(model="sdxl", task="infer", gpu="rtx-4090")
    same = plan(model="sdxl", task="infer", gpu="rtx-4090", num_gpus=1, engine="transformers")
    assert same.memory.device_peak_gib == base.memory.device_peak_gib and same.work.image_s == base.work.image_s
    assert plan(model="flux-dev", task="infer", gpu="h100-sxm", seq_len=256).work.sizes["text_tokens"] == [256]
    with pytest.raises(GpuplanError, match="seq_len sets the T5 tokens of a prompt, and UNet2DConditionModel reads "
                       "CLIP's 77: drop it"):
        gpuplan.estimate({"model": "sdxl", "task": "infer", "seq_len": 256})


def test_llm_only_commands_refuse_in_one_sentence_that_says_what_to_run(capsys):
    assert run(["capacity", "--model", "sdxl", "--rate", "2", "--prompt-tokens", "100", "--output-tokens", "100"]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and ("capacity plans an LLM engine's requests per second; `gpuplan estimate --model "
                                "stabilityai/stable-diffusion-xl-base-1.0 --task infer --gpu NAME`") in err
    with pytest.raises(gpuplan.api.NotADecoder, match="`gpuplan estimate`, `recommend`, `cost`, `simulate` and "
                       "`model` plan it; this command plans decoder LLMs"):
        gpuplan.api.load_model("whisper-large-v3")


@pytest.mark.parametrize("command", [["launch"], ["probe"]])
def test_a_module_of_ones_own_is_sent_to_the_commands_that_plan_it_in_one_sentence(command, capsys):
    """launch and probe run models gpuplan builds from a config; --module is refused naming the commands that plan
    it (estimate, recommend, cost: tests/sim/test_module_sim.py), the user's target and task in it."""
    assert run([*command, "--module", "examples.my_model:build", "--task", "infer"]) == 2
    err = " ".join(capsys.readouterr().err.split())
    assert "`gpuplan estimate --module examples.my_model:build --task infer --gpu NAME` on one card, `recommend " \
           "--module ...` and `cost --module ...`" in err
    assert err.count("error:") == 1


def test_fit_of_a_module_model_says_what_answers_it():
    with pytest.raises(GpuplanError, match=r"fit lists decoder LLMs on your cards; `gpuplan estimate --model "
                       r"stabilityai/stable-diffusion-xl-base-1.0 --task train --gpu nvidia-geforce-rtx-3090`"):
        gpuplan.fit("2x3090", {"task": "train", "method": "lora"}, models=["sdxl"])


def test_fit_refuses_a_diffusion_field_in_one_sentence(capsys):
    """Session 18's docs audit: `gpuplan fit --gpu rtx-4090 --task train --resolution 1024` answered exit 0, an empty
    table and "92 are refused as asked" (with --all, 92 rows of "resolution apply to diffusion pipelines ... drop
    them"), where beyond-llms.md says fit refuses such a job in one sentence. A field or trainer no decoder LLM reads
    is the scenario's fault, whatever the model: one sentence, exit 2, and in the singular for one field."""
    from gpuplan.cli import run

    with pytest.raises(GpuplanError, match=r"^resolution applies to diffusion pipelines and encoder-decoders, and "
                       r"every bundled model is a decoder LLM: drop it$"):
        gpuplan.fit("rtx-4090", {"task": "train", "resolution": "1024"})
    with pytest.raises(GpuplanError, match=r"^stack kohya trains diffusion models, and every bundled model is"):
        gpuplan.fit("rtx-4090", {"task": "train", "stack": "kohya"})
    assert run(["fit", "--gpu", "rtx-4090", "--task", "train", "--resolution", "1024", "--inference-steps", "20"]) == 2
    err = capsys.readouterr().err
    assert err.count("error:") == 1 and "resolution, inference_steps apply to" in err and "drop them" in err


def test_fit_says_it_leaves_a_scenario_s_model_out():
    """`gpuplan fit FILE` plans every bundled model with the file's job: a file naming `sdxl` (or any model) planned
    the 92 LLMs without a word about its model (session 18's docs audit). The note says it is left out, and which
    command plans it; a scenario without a model gets no such note."""
    named = gpuplan.fit("rtx-4090", {"model": "sdxl", "task": "train", "method": "lora"})
    assert "fit plans every bundled model with this scenario: its model sdxl is left out (`gpuplan estimate --model " \
           "sdxl` plans it)" in named.notes
    plain = gpuplan.fit("rtx-4090", {"task": "train", "method": "lora"})
    assert len(named.rows) == 92 and named.rows == plain.rows and not any("left out" in n for n in plain.notes)


def test_recommend_ranks_the_cards_a_module_job_fits_each_built_by_the_one_builder():
    """recommend for an SDXL LoRA: one row per card, its cheapest offer; each row's numbers are the plan that
    estimate builds on that card (same memory, step and price), ranked by the job's total; a card the job does
    not fit is left out."""
    asked = dict(model="sdxl", task="train", method="lora", resolution="1024", train_steps=2000)
    r = gpuplan.recommend(asked, gpus=["rtx-4090", "rtx-3060", "t4", "h100"], top=10)
    assert isinstance(r, gpuplan.api.ModuleChoices) and r.task == "train" and r.evaluated >= 3
    assert r.setups and len({x.gpu_id for x in r.setups}) == len(r.setups)
    totals = [x.usd_total for x in r.setups]
    assert totals == sorted(totals)
    for x in r.setups:
        p = plan(**asked, **x.fields, gpu=x.gpu_id)  # the job as given, or with the changes recommend tried
        assert p.memory.device_peak_gib == pytest.approx(x.device_peak_gib, rel=1e-9)
        assert p.work.step_s == pytest.approx(x.step_s, rel=1e-9) and p.cost.usd_total == pytest.approx(x.usd_total)
    assert all(x.gpu_id in {"nvidia-geforce-rtx-4090", "nvidia-geforce-rtx-3060-12gb", "nvidia-t4",
                            "nvidia-h100-sxm5-80gb"} for x in r.setups)
    timed = gpuplan.recommend(asked, gpus=["rtx-4090", "h100"], objective="time", max_gpus=4)
    assert [x.step_s for x in timed.setups] == sorted(x.step_s for x in timed.setups)
    assert any("--max-gpus does not apply here" in n for n in timed.notes)
    roomy = gpuplan.recommend(asked, top=50, min_headroom=0.5)
    assert roomy.setups and all(x.headroom_gib >= 0.5 * x.capacity_gib for x in roomy.setups)
    assert len(roomy.setups) < len(gpuplan.recommend(asked, top=50).setups)


def test_recommend_tries_checkpointing_where_a_module_training_job_fits_no_card_as_given():
    """Issue 34, s27: recommend planned a module's training job as given and left out every card it did not fit,
    where a decoder LLM's search tries gradient checkpointing, micro-batch 1 with accumulation and 8-bit AdamW
    (recommend.technique_variants, one list for both). Whisper-large-v3 full at micro-batch 16 fits no 24 GB card
    as given; with checkpointing and 8-bit AdamW it fits the RTX 4090 in 23.8 GiB (estimate says the same), and
    a card it fits as given keeps it unchanged; a row's setup names the change. At 128 decoder tokens (the default
    then); s28's default for 16 clips of 30 s, their longest label (135), fits the RTX 4090 with no variant."""
    asked = dict(model="whisper-large-v3", task="train", method="full", micro_batch_size=16, decoder_tokens=128)
    default = gpuplan.recommend({**asked, "decoder_tokens": None}, gpus=["rtx-4090", "h100"], top=10)
    assert [x.gpu_id for x in default.setups] == ["nvidia-h100-sxm5-80gb"]
    assert not plan(**asked, gpu="rtx-4090").memory.fits
    r = gpuplan.recommend(asked, gpus=["rtx-4090", "h100"], top=10)
    rows = {x.gpu_id: x for x in r.setups}
    x = rows["nvidia-geforce-rtx-4090"]
    assert x.techniques == ["gradient checkpointing", "paged 8-bit AdamW"]
    assert x.fields == {"grad_checkpointing": "full", "optimizer": "paged-adamw-8bit"}
    p = plan(**asked, **x.fields, gpu="rtx-4090")
    assert p.memory.fits and p.memory.device_peak_gib == pytest.approx(x.device_peak_gib, rel=1e-9)
    assert p.work.step_s == pytest.approx(x.step_s, rel=1e-9)
    assert not plan(**asked, grad_checkpointing="full", gpu="rtx-4090").memory.fits  # checkpointing alone: no
    assert rows["nvidia-h100-sxm5-80gb"].techniques == [] and rows["nvidia-h100-sxm5-80gb"].fields == {}
    assert any("gradient checkpointing, micro-batch 1 with accumulation, paged 8-bit AdamW" in n for n in r.notes)
    assert run(["recommend", "--model", "whisper-large-v3", "--task", "train", "--method", "full",
                "--micro-batch-size", "16", "--decoder-tokens", "128", "--gpus", "rtx-4090", "--format", "plain"]) == 0
    inference = gpuplan.recommend(dict(model="whisper-large-v3", task="infer", batch_size=16), gpus=["t4"])
    assert all(x.techniques == [] for x in inference.setups)  # an inference's variants are a decoder LLM's engines


def test_recommend_any_method_tries_lora_and_qlora_on_a_module_training_job_as_the_llm_search_does():
    """Issue 34, s28: --any-method lets a decoder LLM's search take LoRA or QLoRA in place of the method asked
    (recommend._variants); a module's training search now takes the same variants from the same generator on every
    card and keeps the best by the objective. Whisper-large-v3 full at micro-batch 16 fits no RTX 4090 as asked
    (nor with any technique at its 135 decoder tokens); with --any-method the 4090 row is LoRA with checkpointing,
    8.2 of 23.9 GiB, and equals estimate of the job with its fields; the H100, which fits full fine-tuning, takes LoRA
    too, cheaper per sample by cost; without the flag neither changes method. An inference has no method: said."""
    asked = dict(model="whisper-large-v3", task="train", method="full", micro_batch_size=16)
    plain = gpuplan.recommend(asked, gpus=["rtx-4090", "h100"], top=10)
    assert [(x.gpu_id, x.fields) for x in plain.setups] == [("nvidia-h100-sxm5-80gb", {})]
    r = gpuplan.recommend(asked, gpus=["rtx-4090", "h100"], top=10, any_method=True)
    rows = {x.gpu_id: x for x in r.setups}
    x = rows["nvidia-geforce-rtx-4090"]
    assert x.techniques == ["LoRA", "gradient checkpointing"]
    assert x.fields == {"method": "lora", "quant": None, "grad_checkpointing": "full"}
    p = plan(**{**asked, **x.fields}, gpu="rtx-4090")
    assert p.memory.fits and p.memory.device_peak_gib == pytest.approx(x.device_peak_gib, rel=1e-9)
    assert p.work.step_s == pytest.approx(x.step_s, rel=1e-9)
    assert 7.5 < x.device_peak_gib < 9.0
    h100 = rows["nvidia-h100-sxm5-80gb"]
    assert h100.techniques == ["LoRA"] and h100.usd_per_1000 < plain.setups[0].usd_per_1000
    assert any("with --any-method" in n for n in r.notes)
    assert not any("does not apply" in n for n in r.notes)
    inference = gpuplan.recommend(dict(model="whisper-large-v3", task="infer", batch_size=16), gpus=["t4"],
                                  any_method=True)
    assert "--any-method does not apply here: an inference has no method to change" in inference.notes
    assert run(["recommend", "--model", "whisper-large-v3", "--task", "train", "--method", "full",
                "--micro-batch-size", "16", "--gpus", "rtx-4090", "--any-method", "--format", "plain"]) == 0


@pytest.fixture
def a10g_without_fp32(monkeypatch):
    """The A10G as the catalog had it before session 22 (no fp32 or TF32 rate): the cards with offers all have one
    now, and these paths are for a card that fits but cannot be timed. The GEMM rates cached per card are cleared
    so the missing rate is seen."""
    from gpuplan.hardware import gpus
    from gpuplan.speed import gemm

    card = gpus()["nvidia-a10g"]
    monkeypatch.setitem(card.dense_tflops, "fp32", None)
    monkeypatch.setitem(card.dense_tflops, "tf32_tensor", None)
    monkeypatch.setattr(gemm, "_RATES", {})


def test_a_card_the_job_fits_but_cannot_time_is_named_not_dropped(a10g_without_fp32):
    """Session 22's walk: an SDXL LoRA at 1024 px fits a rented A10G (11.8 of 22.5 GiB), whose catalog entry had
    no fp32 rate for the fp32 VAE; recommend left it out without a word ("1 of 2 cards planned fit"). Now it
    counts as fitting and a note says why it has no row."""
    asked = dict(model="sdxl", task="train", method="lora", resolution="1024")
    r = gpuplan.recommend(asked, gpus=["a10g", "l4"])
    assert [x.gpu_id for x in r.setups] == ["nvidia-l4"] and (r.evaluated, r.fitting) == (2, 2)
    peak = plan(**asked, gpu="a10g").memory.device_peak_gib
    assert f"a10g fits ({peak:.1f} of 22.5 GiB) but is not ranked: A10G (AWS) has no fp32 rate in gpuplan's GPU " \
           "catalog, and this job runs fp32 work (a VAE kept in fp32, or fp32 precision)" in r.notes
    assert any(n.startswith("a10g fits") for n in gpuplan.cost({**asked, "gpu": "a10g"}).notes)


def test_cost_on_a_card_that_fits_but_cannot_be_timed_does_not_say_it_does_not_fit(capsys, a10g_without_fp32):
    """Session 22's walk: `cost --model sdxl ... --gpu a10g` said "no card among the offers in force fits this job"
    under a note that it fits."""
    assert run(["cost", "--model", "sdxl", "--task", "train", "--method", "lora", "--resolution", "1024", "--gpu",
                "a10g"]) == 0
    said = " ".join(capsys.readouterr().out.split())
    assert "no card to rank: the job fits 1 of the 1 cards planned, but none of them has the speed a price needs" \
           in said and "fits this job" not in said


def test_the_a10g_times_fp32_work_at_its_datasheet_and_posted_rates():
    """Session 22: NVIDIA's A10G datasheet (hosted by AWS) gives FP32 35 and TF32 35 TFLOPS dense, and a posted fp32
    torch.matmul reaches 23.37 of them (zzc0721/torch-performance-test-data issue 126; its TF32 34.71 is a check on
    the datasheet's 35). An fp32 SDXL call, refused before, is timed. Hand check of the ordering: the A10's
    posted fp32 matmul rate is 14 TFLOPS and its TF32 convolutions reach 62.5 x 56/125 = 28, the A10G's 23.37 and
    35 x 69.47/70 = 34.7, both higher, so the A10G's fp32 call is the shorter; and longer than its own fp16 call
    (tensor cores at 69.5 TFLOPS, the VAE alone in fp32)."""
    from gpuplan.hardware import gpus
    from gpuplan.speed.gemm import peak_flops

    card = gpus()["nvidia-a10g"]
    assert (card.peak_tflops("fp32"), card.peak_tflops("tf32")) == (35.0, 35.0)
    assert peak_flops(card, "fp32") == 35e12
    job = dict(model="stabilityai/stable-diffusion-xl-base-1.0", task="infer", resolution="1024")
    fp32 = plan(**job, gpu="a10g", precision="fp32")
    assert fp32.work is not None
    a10 = plan(**job, gpu="a10", precision="fp32").work.image_s
    fp16 = plan(**job, gpu="a10g").work.image_s
    assert fp16 < fp32.work.image_s < a10


def test_recommend_prints_the_cards_for_people_and_refuses_launch(capsys):
    args = ["recommend", "--model", "sdxl", "--task", "train", "--method", "lora", "--train-steps", "100", "--gpus",
            "rtx-4090,h100", "--max-gpus", "2", "--format", "plain"]
    assert run(args) == 0
    captured = capsys.readouterr()
    lines = captured.out.splitlines()
    header = next(line for line in lines if line.startswith("#"))
    assert all(word in header for word in ("GPU", "offer", "s/step", "images/s", "hours", "job $", "$/1k images"))
    assert any(line.split()[:2] == ["1", "rtx-4090"] for line in lines)  # the cheaper job first
    assert "--max-gpus does not apply here" in " ".join(captured.err.split())
    assert run([*args, "--launch", "1"]) == 2
    assert "run `gpuplan launch`" in capsys.readouterr().err


def test_a_narrow_recommend_keeps_the_columns_its_rows_are_ranked_by(capsys, monkeypatch):
    """At 80 columns a FLUX LoRA's "cost first" table kept $/h, s/step and images/s and dropped the job's $ it was
    ranked by (s30-beyond's walk); now the job's hours and $ stay, or the step's time when ranked by time."""
    monkeypatch.setenv("COLUMNS", "60")
    args = ["recommend", "--model", "sdxl", "--task", "train", "--method", "lora", "--gpus", "rtx-4090,h100"]
    for extra, kept, gone in ((["--train-steps", "100"], ("hours", "job $"), "s/step"),
                              ([], ("$/1k images",), "s/step"),
                              (["--objective", "time"], ("s/step",), "$/h")):
        assert run([*args, *extra]) == 0
        captured = capsys.readouterr().out
        header = next(line for line in captured.splitlines() if "GPU" in line)
        assert all(word in header for word in kept) and gone not in header
        assert f"not shown at this width: {gone}" in " ".join(captured.split())


def test_cost_lists_every_offer_of_a_card_a_module_job_fits(capsys):
    table = gpuplan.cost({"model": "flux-dev", "task": "infer", "quant": "nf4", "gpu": "rtx-4090"})
    assert isinstance(table, gpuplan.api.ModuleChoices) and len(table.setups) >= 2
    assert {x.gpu_id for x in table.setups} == {"nvidia-geforce-rtx-4090"}
    per = [x.usd_per_1000 for x in table.setups]
    assert per == sorted(per) and per[0] == pytest.approx(plan(
        model="flux-dev", task="infer", quant="nf4", gpu="rtx-4090").work.usd_per_1000_samples)
    assert gpuplan.cost({"model": "flux-dev", "task": "infer", "gpu": "rtx-4090"}).setups == []  # bf16: 24 GB short
    assert run(["cost", "--model", "whisper-large-v3", "--task", "infer", "--audio-seconds", "600", "--gpu",
                "rtx-4090", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["setups"] and data["setups"][0]["unit"] == "windows" and data["setups"][0]["call_s"] > 0


def test_the_review_sdxl_command_is_answered(capsys):
    """``gpuplan estimate --model stabilityai/stable-diffusion-xl-base-1.0 --task train --method lora --gpu
    rtx-4090`` (it was refused with "upgrade transformers" and a config URL that does not exist)."""
    assert run(["estimate", "--model", "stabilityai/stable-diffusion-xl-base-1.0", "--task", "train", "--method",
                "lora", "--gpu", "rtx-4090"]) == 0
    text = capsys.readouterr().out
    assert "UNet2DConditionModel" in text and "it/s" in text and "upgrade transformers" not in text


def test_a_bare_unet_config_plans_the_unet_alone(capsys):
    assert run(["estimate", "--model", str(REVIEW / "sdxl-unet"), "--task", "train", "--method", "lora", "--gpu",
                "rtx-4090", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["work"]["kind"] == "diffusion training"
    assert any("not counted" in n for n in data["warnings"] + data["defaults"])


def test_every_plan_here_read_bundled_profiles():
    from gpuplan.model import kinds

    for name in ("sdxl", "flux-dev", "whisper-large-v3"):
        spec = kinds.named(name)
        assert lookup(spec.main.config, "denoiser" if spec.kind == "diffusion" else "model")[1]


def test_every_bundled_denoiser_ships_its_training_profiles():
    """Each bundled pipeline's denoiser is recorded in every way a plan runs it (SD3.5-large's training ways were
    missing: its plans recorded them on first use, minutes of CPU), counted as its class counts it."""
    from gpuplan.model import diffusers, kinds

    names = list(diffusers.bundled_pipelines())
    assert "stabilityai/stable-diffusion-3.5-large" in names and len(names) >= 7
    for name in names:
        spec = kinds.named(name)
        found = lookup(spec.main.config, "denoiser")
        assert found and found[1], name  # bundled, not a user-cache copy
        assert set(found[0].memory) == set(diffusers.DENOISER_WAYS), name
        assert found[0].params == spec.main.params, name
    large = plan(model="sd3.5-large", task="train", method="lora", resolution="1024", grad_checkpointing="full",
                 gpu="rtx-4090")
    assert large.model.params_total > 8e9 and large.work.steps_per_s > 0 and large.memory.fits


def test_eager_attention_keeps_the_scores_and_is_slower():
    """Without SDPA or xformers (``attention eager``), every attention call's softmax is kept for the backward."""
    base = dict(model="flux-dev", task="train", method="qlora", resolution="512", gpu="a100-80gb")
    fused, eager = plan(**base), plan(**base, attention="eager")
    assert eager.memory.activations_gib > fused.memory.activations_gib + 1
    assert eager.work.parts_s["attention"] > fused.work.parts_s["attention"]
    assert "eager attention" in eager.resolved
    small = plan(**{**base, "gpu": "rtx-3060"}, attention="eager")
    assert any(x.change.startswith("SDPA attention") for x in small.suggestions)


def test_a_module_plans_price_says_its_origin_and_age_as_a_decoder_llms_does(monkeypatch):
    """A diffusion or speech plan's price had the file's name for its origin and 0 days for its age (the fields
    were left at their defaults), so a 65-day-old L40S price was never flagged and the page said "0 days old"."""
    monkeypatch.setenv("GPUPLAN_TODAY", "2026-11-29")
    llm = gpuplan.estimate({"model": "qwen2.5-7b", "task": "infer", "gpu": "l40s"})
    sdxl = gpuplan.estimate({"model": "sdxl", "task": "infer", "gpu": "l40s"})
    assert sdxl.cost.offer == llm.cost.offer == "runpod community 1x on-demand"
    assert sdxl.cost.observed_at == "2026-09-25" and sdxl.cost.price_age_days == 65 and sdxl.cost.stale
    assert sdxl.cost.price_origin == llm.cost.price_origin
    assert sdxl.cost.price_origin.endswith("observed 2026-09-25 (65 days old, medium confidence)")
    assert "the price of runpod community 1x on-demand is 65 days old" in sdxl.warnings
    assert "the price of runpod community 1x on-demand is 65 days old" in llm.warnings


@pytest.mark.parametrize("flags", [
    ["--model", "whisper-large-v3", "--task", "infer", "--gpu", "t4"],
    ["--model", "sdxl", "--task", "train", "--method", "lora", "--gpu", "rtx-3060"],
    ["--model", "flux.1-dev", "--task", "infer", "--gpu", "h100"],
], ids=["whisper", "sdxl-lora", "flux"])
def test_the_cli_step_line_is_the_explanations_shares(flags, capsys):
    """The CLI rounded each part of a module plan's step on its own (Whisper on a T4: "log-mel features (CPU) 0%",
    which the page's explanation leaves out); now both print :func:`gpuplan.speed.breakdown.shares`."""
    assert run(["estimate", *flags]) == 0
    out = " ".join(capsys.readouterr().out.split())
    s = {k.lstrip("-").replace("-", "_"): v for k, v in zip(flags[::2], flags[1::2], strict=True)}
    shown = explain(s).step_shares
    assert shown and sum(pct for _, pct in shown) == 100 and all(pct > 0 for _, pct in shown)
    word = "step" if s["task"] == "train" else "call"
    line = f"{word}: " + ", ".join(f"{k} {pct}%" for k, pct in shown)
    assert line in out and line + "," not in out  # the whole line: no part after the explanation's


@pytest.mark.parametrize("flags", [
    ["--model", "whisper-large-v3", "--task", "train", "--method", "full", "--gpu", "a100-80gb"],
    ["--model", "flan-t5-base", "--task", "train", "--gpu", "t4"],
    ["--model", "vit-base", "--task", "infer", "--gpu", "t4"],
], ids=["whisper", "t5", "vit"])
def test_launch_of_a_model_no_launcher_takes_is_one_sentence(flags, capsys):
    """`gpuplan launch --model whisper-large-v3 --task train` (and the page's launch files) went down the diffusion
    pipelines' road and ended in KeyError 'WhisperForConditionalGeneration' (a traceback; HTTP 500 on the page)."""
    assert run(["launch", *flags, "-o", "-"]) == 2
    err = " ".join(capsys.readouterr().err.split())
    assert err.startswith("error: ") and "gpuplan launch writes files for decoder LLMs and diffusion pipelines" in err
    assert "Traceback" not in err
    with pytest.raises(GpuplanError, match="writes files for decoder LLMs and diffusion pipelines"):
        gpuplan.launch({k.lstrip("-").replace("-", "_"): v for k, v in zip(flags[::2], flags[1::2], strict=True)},
                       folder="-")


def test_a_combination_of_changes_names_only_what_it_applies_and_takes_the_fewest():
    """FLUX.1-dev LoRA with kohya on a 16 GB card (walk s10): the combination read 'gradient checkpointing + 8-bit
    AdamW + cached latents + text encoders not trained (frozen) + cached text embeddings + fp8 base weights + QLoRA
    (NF4 base)', seven changes, where the later of each pair replaced the earlier (fp8 by NF4, frozen by cached) and
    three were enough. Now one change of each group at most, the fewest that fit, and its peak is the plan's with
    exactly its fields."""
    p = plan(model="flux-dev", task="train", method="lora", stack="kohya", gpu="rtx-4060-ti-16gb")
    combined = [x for x in p.suggestions if x.combination]
    assert len(combined) == 1 and combined[0].fits
    labels = combined[0].change.split(" + ")
    assert not {"fp8 base weights", "QLoRA (NF4 base)"} <= set(labels)
    assert not {"text encoders not trained (frozen)", "cached text embeddings"} <= set(labels)
    assert not any(x.fits for x in p.suggestions if not x.combination)
    base = {"model": "flux-dev", "task": "train", "method": "lora", "stack": "kohya", "gpu": "rtx-4060-ti-16gb"}
    again = plan(**{**base, **combined[0].fields})
    assert again.memory.fits and again.memory.device_peak_gib == pytest.approx(combined[0].device_peak_gib)
    for key in combined[0].fields:  # the fewest: without any one of its changes it does not fit
        assert not plan(**{**base, **{k: v for k, v in combined[0].fields.items() if k != key}}).memory.fits, key
    flux = plan(model="flux-dev", task="infer", gpu="rtx-3060", batch_size=4, resolution="1024")
    names = " ".join(x.change for x in flux.suggestions)  # (before: 'NF4 weights + fp8 weights + ...', 17.7 GiB)
    assert "NF4 weights + fp8 weights" not in names and "model CPU offload + sequential" not in names
    best_alone = min(x.device_peak_gib for x in flux.suggestions if not x.combination)
    assert all(x.device_peak_gib < best_alone for x in flux.suggestions if x.combination)


def test_a_trainer_is_planned_and_advised_only_on_a_base_it_loads():
    """Session 10's walk: FLUX.1-dev LoRA with kohya on a 16 GB card was advised 'QLoRA (NF4 base)', and its
    combination took it, where `launch` refuses it (sd-scripts loads a 16-bit or --fp8_base base). The refusal is the
    resolver's (each profile's bases, scenario.diffusion_stacks), so estimate refuses it in one sentence and the
    advice, which re-plans each change, offers only what the trainer runs: kohya's 16 GB recipe (fp8 base,
    checkpointing, 8-bit AdamW, cached latents and text outputs) fits."""
    with pytest.raises(GpuplanError, match=r"kohya's sd-scripts trains on a 16-bit or fp8 base, not NF4: set quant "
                                           r"fp8, or stack simpletuner$"):
        plan(model="flux-dev", task="train", method="qlora", stack="kohya", gpu="rtx-4090")
    with pytest.raises(GpuplanError, match="ai-toolkit trains on a 16-bit or fp8 base, not int8"):
        plan(model="flux-dev", task="train", method="lora", quant="int8", stack="ai-toolkit", gpu="rtx-4090")
    assert plan(model="flux-dev", task="train", method="qlora", stack="simpletuner", gpu="rtx-4090").memory.fits
    kohya = plan(model="flux-dev", task="train", method="lora", stack="kohya", gpu="rtx-4060-ti-16gb")
    assert not any("NF4" in x.change for x in kohya.suggestions)
    (combined,) = [x for x in kohya.suggestions if x.combination]
    # session 19: kohya's block swap is offered too, and three changes with it (16-bit base, 21 blocks swapped) fit
    # where the fp8 base took five (checkpointing, 8-bit AdamW, cached latents and text embeddings, fp8)
    assert combined.fits and "method" not in combined.fields and "quant" not in combined.fields
    assert combined.change == "gradient checkpointing + cached text embeddings + blocks_to_swap 21"


def test_a_modules_batch_at_the_search_limit_is_said_as_a_floor(capsys):
    """s14 rewalk finding 12, for a module: Whisper-small serving on an H200 said "largest batch that fits: 1,024",
    the module search's limit (plan.edge.MODULE_BATCH_LIMIT), though 1,530 windows a pass fit (the same search
    run to 4,096; 179 GiB at 2,048): capped, and
    said "1,024 or more (the search stops there)". On a T4 Whisper-large-v3's 37 (above) stays uncapped."""
    from gpuplan.plan.edge import MODULE_BATCH_LIMIT
    from gpuplan.plan.modules import largest_batch

    p = plan(model="whisper-small", task="infer", gpu="h200")
    assert (p.memory.max_batch_size, p.memory.max_batch_size_capped) == (MODULE_BATCH_LIMIT, True) == (1024, True)
    assert p.to_dict()["memory"]["max_batch_size_capped"] is True
    assert largest_batch(p._module.scenario, p._module.job.spec, p._module.gpu, limit=4096) == 1530
    assert plan(model="whisper-small", task="infer", gpu="h200", batch_size=1025).memory.fits
    assert plan(model="whisper-large-v3", task="infer", gpu="t4").memory.max_batch_size_capped is False
    assert run(["estimate", "--model", "whisper-small", "--task", "infer", "--gpu", "h200"]) == 0
    text = " ".join(capsys.readouterr().out.split())
    assert "largest batch that fits: 1,024 or more (the search stops there)" in text


def test_a_modules_header_names_its_card_as_a_decoder_llms_does():
    """The first line of a module's plan named the card by its catalog id ("1 x nvidia-geforce-rtx-4090"), where a
    decoder LLM's plan, recommend, cost and capacity say "1 x rtx-4090" (scenario/describe.py, short_id)."""
    sdxl = plan(model="sdxl", task="train", method="lora", gpu="4090", stack="kohya")
    whisper = plan(model="whisper-small", task="infer", gpu="h100")
    llm = gpuplan.estimate(dict(model="qwen3-0.6b", task="train", method="lora", gpu="4090"))
    assert sdxl.resolved.endswith("; 1 x rtx-4090") and llm.resolved.endswith("; 1 x rtx-4090, single GPU")
    assert whisper.resolved.endswith("; 1 x h100-sxm")


def test_sd3_model_offload_holds_t5_beside_clip_g_while_the_negative_prompt_is_encoded():
    """Session 17, Hugging Face's SD3 blog (an A100 80GB, SD3 Medium in fp16, enable_model_cpu_offload: 12.0645 GB
    allocated, where the plan held T5 alone, 8.87 GiB: -26 %). Two causes, from the libraries' code: transformers
    keeps T5's feed-forward output projections (wo) in fp32 when it loads the encoder in fp16 (T5PreTrainedModel.
    _keep_in_fp32_modules; a pipeline's from_pretrained(torch_dtype=float16) does), and the pipeline encodes the
    empty negative prompt after the positive one with CLIP-L, CLIP-G and T5 in turn, where CLIP-L's offload hook,
    the first in the chain, has no previous model to offload: T5 stays on the card while CLIP-G runs again. By hand:
    T5 4,762,310,656 x 2 B + its 24 x 10,240 x 4,096 wo weights x 2 B more, and CLIP-G 694,659,840 x 2 B: 12.039 GiB.
    In bf16 T5 loads whole in bf16 (10.164 GiB at the same moment), and SDXL's empty negative prompt is zeros
    (force_zeros_for_empty_prompt): no encoder runs for it."""
    base = dict(model="sd3-medium", task="infer", gpu="a100-sxm4-80gb", precision="fp16-true", cpu_offload="model")
    p = plan(**base)
    wo = 24 * 10_240 * 4_096
    assert p.memory.peak_phase == "text_encoder_2 encode"
    assert p.memory.weights_gib * 2**30 == pytest.approx((4_762_310_656 + wo) * 2 + 694_659_840 * 2, rel=1e-9)
    assert p.memory.weights_gib == pytest.approx(12.039, abs=1e-3)
    bf16 = plan(**{**base, "precision": "bf16-true"})
    assert bf16.memory.weights_gib * 2**30 == pytest.approx(4_762_310_656 * 2 + 694_659_840 * 2, rel=1e-9)
    whole = plan(**{k: v for k, v in base.items() if k != "cpu_offload"})
    assert whole.memory.other["text_encoder_3 weights"] * 2**30 == pytest.approx((4_762_310_656 + wo) * 2, rel=1e-9)
    sdxl = plan(model="sdxl", task="infer", gpu="a100-sxm4-80gb", resolution="1024", cpu_offload="model")
    assert sdxl.memory.peak_phase in ("denoise", "VAE decode")
    # the copies move what is held: every model on and off once a call, T5's fp32 wo included, and CLIP-L and CLIP-G
    # on and off again for the negative prompt (T5, already on the card, is not moved again), at a server host's
    # 5.157 / 1.75 GB/s (test_a_servers_host_copies_pageable_memory_at_its_own_speed)
    held = (whole.memory.weights_gib + sum(v for k, v in whole.memory.other.items() if "weights" in k)) * 2**30
    again = (123_650_304 + 694_659_840) * 2
    assert (whole.memory.other["text_encoder weights"] + whole.memory.other["text_encoder_2 weights"]) * 2**30 == \
        pytest.approx(again, rel=1e-9)
    rate = 1.719e9 / (1 / 2 - 1 / 6) / 1.75
    assert p.work.parts_s["CPU offload transfers"] == pytest.approx(2 * (held + again) / rate, rel=1e-6)
    assert 2 * again / rate == pytest.approx(1.11, abs=0.01)
    no_cfg = plan(**base, cfg=False)
    assert no_cfg.work.parts_s["CPU offload transfers"] == pytest.approx(2 * held / rate, rel=1e-6)
    assert p.work.parts_s["CPU offload transfers"] - bf16.work.parts_s["CPU offload transfers"] == pytest.approx(
        2 * wo * 2 / rate, rel=1e-6)


def test_ai_toolkit_trains_a_unet_on_a_16_bit_base():
    """Session 17: ai-toolkit's model.quantize applies to transformer denoisers (toolkit/stable_diffusion_model.py
    quantizes FLUX's and SD3's transformer; its SD and SDXL loaders have no quantize call) and its UI sets
    model.quantize false for sdxl and sd15 (ui/src/app/jobs/new/options.tsx), where the plan filled an fp8 base for
    every ai-toolkit LoRA. SDXL's UNet in bf16: 2,567,463,684 x 2 B = 4.78 GiB, with the rank-16 LoRA 4.86."""
    base = dict(model="sdxl", task="train", method="lora", resolution="1024", gpu="rtx-4090", stack="ai-toolkit")
    p = plan(**base)
    assert p.scenario["quant"] in (None, "none") and p.module.job.weights == "16bit"
    assert 4.78 < p.memory.weights_gib < 4.95
    with pytest.raises(GpuplanError, match=r"ai-toolkit quantizes transformer denoisers \(FLUX, SD3\), not a UNet"):
        plan(**base, quant="fp8")
    assert plan(**{**base, "model": "sd3.5-large"}).module.job.weights == "fp8-linears"


def test_a_resolution_written_as_a_number_is_that_many_pixels(tmp_path, capsys):
    """Session 17's outside fuzzer: ``resolution: 1024`` in a scenario file (YAML reads it as a number, as a JSON
    body gives it) was refused, "Input should be a valid string (got 1024)", where the field's help says "1024"; it
    is now the plan of the text "1024", and a number that is no side is refused by the same rule as text."""
    as_text = gpuplan.estimate({"model": "sdxl", "task": "infer", "gpu": "l4", "resolution": "1024"}).to_dict()
    as_number = gpuplan.estimate({"model": "sdxl", "task": "infer", "gpu": "l4", "resolution": 1024}).to_dict()
    assert as_number == as_text and "1024x1024" in as_number["resolved"]
    path = tmp_path / "sdxl.yaml"
    path.write_text("model: sdxl\ntask: infer\ngpu: l4\nresolution: 1024\n")
    assert run(["estimate", str(path), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["resolved"] == as_text["resolved"]
    with pytest.raises(GpuplanError, match=r"resolution 1004x1004: for UNet2DConditionModel each side must be a "
                                           r"multiple of 8"):
        gpuplan.estimate({"model": "sdxl", "task": "infer", "gpu": "l4", "resolution": 1004})


def test_a_transcription_whose_decoder_waits_on_the_host_says_so():
    """Session 17's second walk (user D): an hour of audio on whisper-large-v3-turbo, 16 windows a pass, said
    "compute-bound" at an MFU of 0.025 on an H100, its decoder steps 78 % of the call: the label was the default of
    parts that carry no GEMM, host or element-wise split. Each decoder step is its GPU work against eager PyTorch's
    host dispatch and generate's loop, the longer one taking the time (PassTime.total_s); summed over the call's
    180 windows (11 passes of 16, one of 4), the host's seconds outlast the GPU's: host-bound, on both cards."""
    from gpuplan.speed.modules import PassTime, bound_of

    assert bound_of(PassTime(gemm_s=0.3e-3, elementwise_s=0.07e-3, host_s=5.3e-3)) == "host"
    assert bound_of(PassTime(gemm_s=2e-3, elementwise_s=1e-3, host_s=1e-3)) == "compute"
    assert bound_of(PassTime(gemm_s=1e-3, elementwise_s=2e-3, host_s=1e-3)) == "memory"
    job = dict(model="whisper-large-v3-turbo", task="infer", audio_seconds=3600, batch_size=16)
    for gpu in ("h100-sxm", "rtx-4090"):
        p = plan(**job, gpu=gpu)
        assert p.work.bound == "host" and p.work.samples_per_step == 180
    assert plan(model="flux-dev", task="infer", resolution="1024", gpu="h100-sxm").work.bound == "compute"


def test_a_transcriptions_speed_names_its_step():
    """Session 17's second walk (user D): the page's Markdown said "Speed: 236.07 it/s, 9.035 windows/s" for an hour
    of audio: the "it" was one decoder step of a 16-window pass (1 / 4.24 ms), named nowhere. Diffusion and training
    keep it/s (diffusers' and the trainers' progress bars); an encoder's call is a call."""
    from gpuplan.explain.module_speed import speed_line

    whisper = plan(model="whisper-large-v3-turbo", task="infer", audio_seconds=3600, batch_size=16, gpu="rtx-4090")
    # 7.663 windows/s in s25 (9.035 before: each 16-window pass decodes until its longest window ends), 13.1 since
    # s27: a window's default is the transcript rate's 105 decoder tokens, not a decoder LLM's 256 (13.13), and each
    # step copies its self-attention cache as torch.cat grows it (13.10)
    assert speed_line(whisper).startswith(f"Speed: {1 / whisper.work.step_s:,.2f} decoder steps/s, 13.1 windows/s")
    assert whisper.work.samples_per_s == pytest.approx(13.104, abs=0.001)
    assert " calls/s, " in speed_line(plan(model="vit-base", task="infer", batch_size=64, gpu="t4"))
    assert " it/s, " in speed_line(plan(model="flux-dev", task="infer", resolution="1024", gpu="h100-sxm"))


def test_an_untimed_image_job_says_no_longest_sequence(capsys):
    """Session 22's walk: an SDXL LoRA on an A10G (fits; no fp32 rate, so no speed) read "largest micro-batch that
    fits: 2; longest sequence: none" on the command line and the page: a diffusion plan has no sequence, timed or
    not (the test held only timed plans to it)."""
    assert run(["estimate", "--model", "sdxl", "--task", "train", "--method", "lora", "--resolution", "1024",
                "--gpu", "a10g"]) == 0
    out = capsys.readouterr().out
    assert "largest micro-batch that fits: 2\n" in out and "longest sequence" not in out


def test_a_full_fine_tune_that_only_lora_fits_alone_gets_the_combination_that_keeps_it_full():
    """Session 24's walk: Whisper-large-v3 fully fine-tuned at micro-batch 16 on a 24 GB RTX 4090 (38.9 GiB) was
    offered "LoRA instead of full fine-tuning" as the one change that fits, where 8-bit AdamW with micro-batch 1 x 16
    keeps it full and fits (19.7 GiB): the combination was searched only when no change fit alone. As a decoder's
    advice does (plan/fixes.py), a change of method that fits alone no longer stops the search of the changes that
    keep the method."""
    base = {"model": "whisper-large-v3", "task": "train", "method": "full", "decoder_tokens": 448,
            "micro_batch_size": 16, "grad_checkpointing": "full", "gpu": "rtx-4090"}
    p = plan(**base)
    assert not p.memory.fits
    assert [x.change for x in p.suggestions if x.fits and not x.combination] == ["LoRA instead of full fine-tuning"]
    kept = [x for x in p.suggestions if x.combination]
    assert len(kept) == 1 and kept[0].fits and "method" not in kept[0].fields
    assert kept[0].fields["optimizer"] == "adamw-8bit"
    # the widest micro-batch that fits with it, the global batch of 16 kept: 4 x 4 (8 x 2 does not fit)
    assert (kept[0].fields["micro_batch_size"], kept[0].fields["grad_accum_steps"]) == (4, 4)
    assert not plan(**{**base, **kept[0].fields, "micro_batch_size": 8, "grad_accum_steps": 2}).memory.fits
    again = plan(**{**base, **kept[0].fields})
    assert again.memory.fits and again.memory.device_peak_gib == pytest.approx(kept[0].device_peak_gib)
    # hand check: fp32 weights and gradients 2 x 5.75 GiB, 8-bit Adam 2 bytes a parameter 2.88 GiB, bf16 autocast
    # copies 2.88 GiB: 17.3 GiB before one sample's activations and the allocator's slack
    assert 17.3 < again.memory.device_peak_gib < 23.9


def test_timestamps_charge_the_timestamp_processors_host_work_at_every_decoder_step():
    """Issue 34, s25: return_timestamps=True adds transformers' WhisperTimeStampLogitsProcessor to generate. Counted
    under a dispatch counter on transformers 5.24.0's code: 20 aten ops a step, 4 more for each row whose last token
    was a timestamp (19.5 of 123.6 tokens a window), and the input_ids.tolist() copy: 21 + 0.6311 ops a row. At
    DISPATCH_OVERHEAD_S (7 us) on a T4's server (SERVER_HOST_FACTOR 1.75): batch 16, 21 + 16 x 0.6311 = 31.097 ops,
    31.097 x 7e-6 x 1.75 = 0.38094 ms a step; batch 1, 21.631 x 12.25e-6 = 0.26498 ms; on an RTX 4090 (a desktop
    host, factor 1) batch 16, 31.097 x 7e-6 = 0.21768 ms. Without timestamps, nothing."""
    from gpuplan.speed.modules import timestamps_host_s

    base = dict(model="whisper-large-v3", task="infer", output_tokens=124, batch_size=16, precision="fp16-true",
                audio_seconds=330)  # 16 windows, one pass
    on, off = plan(**base, gpu="t4", timestamps=True), plan(**base, gpu="t4")
    t4 = on.module.gpu
    assert timestamps_host_s(on.module.job, t4, 16) == pytest.approx(0.38094e-3, rel=1e-4)
    assert timestamps_host_s(on.module.job, t4, 1) == pytest.approx(0.26498e-3, rel=1e-4)
    assert timestamps_host_s(off.module.job, t4, 16) == 0.0
    desktop = plan(**base, gpu="rtx-4090", timestamps=True)
    assert timestamps_host_s(desktop.module.job, desktop.module.gpu, 16) == pytest.approx(0.21768e-3, rel=1e-4)
    # the step takes the smooth maximum of its host and GPU work (p = 2): host-led, it grows by most of the added
    # host work, never by more (0.301 ms here, host 79 % of the step)
    grown = on.work.step_s - off.work.step_s
    assert 0.7 * 0.38094e-3 < grown <= 0.38094e-3
    assert any("WhisperTimeStampLogitsProcessor" in n for n in on.defaults)
    assert run(["estimate", "--model", "sdxl", "--task", "infer", "--gpu", "t4", "--timestamps", "true"]) == 2


def test_a_training_jobs_decoder_tokens_default_to_its_batchs_longest_label():
    """Issue 34, s28: the training default was 128 decoder tokens with no source. The fine-tuning recipes pad each
    batch's labels to its longest (DataCollatorSpeechSeq2SeqWithPadding, the fine-tune-whisper blog); a clip's
    labels are the transcript rate over its speech, 3.37 tokens/s (101.1 a 30 s window), plus 3 prefix tokens and
    the end token. 30 s clips: 101.1 + 4 = 105.1 -> 105 alone; 16 of them, the longest at Blom's 1.7688 standard
    deviations of 16 %: 105 x 1.2830 = 134.7 -> 135. 6 s clips: 3.37 x 6 + 4 = 24.2 -> 24; 8 of them, x (1 + 0.16 x
    1.4338) = 29.8 -> 30. A count given (decoder_tokens, seq_len) is kept."""
    base = dict(model="whisper-large-v3", task="train", method="full", gpu="h100")
    shapes = {(b, s): plan(**base, micro_batch_size=b, **({"audio_seconds": s} if s else {})).module.job.shapes[0]
              for b, s in ((1, None), (16, None), (1, 6), (8, 6))}
    assert shapes == {(1, None): (105,), (16, None): (135,), (1, 6): (24,), (8, 6): (30,)}
    p = plan(**base, micro_batch_size=16)
    said = next(n for n in p.defaults if n.startswith("decoder_tokens 135"))
    assert "DataCollatorSpeechSeq2SeqWithPadding" in said and "3.37 tokens/s" in said
    assert plan(**base, micro_batch_size=16, decoder_tokens=64).module.job.shapes[0] == (64,)
    assert plan(**base, micro_batch_size=16, seq_len=200).module.job.shapes[0] == (200,)


def test_an_older_transformers_release_costs_a_transcription_its_numpy_log_mel_and_per_row_timestamp_loop():
    """Issue 34, s28: transformers before 4.37.0 built the log-mel features with numpy's per-frame STFT loop (4.36.0's
    and 4.35.0's wheels have no torch path), 42 ms a window where today's extractor takes 15: 450 windows, 450 x 0.042
    = 18.9 s. Before 5.20.0 the timestamp processor looped over the rows: counted on 4.35.0's class, 6 ops a step
    and 14 + 4 x 19.5 / 123.6 + 1 = 15.631 a row; on a T4's server (7 us x 1.75 an op) at batch 16,
    (6 + 16 x 15.631) x 12.25e-6 = 3.1372 ms a step, against today's 0.38094. 4.37 and 5.20 take today's costs; a
    transcription without timestamps pays the log-mel loop only; a T5's inference does not read the field."""
    from gpuplan.speed.modules import timestamps_host_s

    base = dict(model="whisper-large-v3", task="infer", output_tokens=124, batch_size=16, precision="fp16-true",
                audio_seconds=9000, gpu="t4", timestamps=True)
    old, new = plan(**base, transformers_version="4.35"), plan(**base)
    assert old.work.parts_s["log-mel features (CPU)"] == pytest.approx(18.9)
    assert new.work.parts_s["log-mel features (CPU)"] == pytest.approx(450 * 0.015)
    assert timestamps_host_s(old.module.job, old.module.gpu, 16) == pytest.approx(3.1372e-3, rel=1e-4)
    assert timestamps_host_s(new.module.job, new.module.gpu, 16) == pytest.approx(0.38094e-3, rel=1e-4)
    assert any("numpy's STFT" in n for n in old.defaults) and any("loops over the windows" in n for n in old.defaults)
    assert not any("numpy's STFT" in n for n in new.defaults)
    for release, mel, stamps in (("4.36.0", 0.042, 3.1372e-3), ("4.37", 0.015, 3.1372e-3),
                                 ("5.19.0", 0.015, 3.1372e-3), ("5.20", 0.015, 0.38094e-3)):
        p = plan(**base, transformers_version=release)
        assert p.work.parts_s["log-mel features (CPU)"] == pytest.approx(450 * mel)
        assert timestamps_host_s(p.module.job, p.module.gpu, 16) == pytest.approx(stamps, rel=1e-4)
    plain = plan(**{**base, "timestamps": False}, transformers_version="4.35")
    assert plain.work.parts_s["log-mel features (CPU)"] == pytest.approx(18.9)
    assert not any("loops over the windows" in n for n in plain.defaults)
    assert old.work.samples_per_s < new.work.samples_per_s
    t5 = run(["estimate", "--model", "flan-t5-base", "--task", "infer", "--gpu", "t4",
              "--transformers-version", "4.35"])
    assert t5 == 0  # said as a field the plan does not read (a warning), not a refusal


def test_a_cpu_offload_change_says_its_call_time_from_the_plans():
    """s27 walk: FLUX.1-dev on an RTX 4090 was offered "sequential CPU offload (fits; 36.4 -> 3.7 GiB)" first, with
    no word of the 131 s of weight copies it adds to a 25 s call. Each offload change now says the call time with
    and without it and the copies' part, read off the two plans (the one speed model:
    speed/modules.py offload_copy_s), and the changes that fit without offload come first."""
    base = dict(model="flux-dev", task="infer", gpu="rtx-4090")
    now = plan(**base)
    assert not now.memory.fits
    offloads = [x for x in now.suggestions if x.fields.get("cpu_offload", "none") != "none"]
    assert {x.fields["cpu_offload"] for x in offloads} == {"model", "sequential"}
    for x in offloads:
        after = plan(**base, **x.fields).work
        copies = after.parts_s["CPU offload transfers"]
        assert x.cost.endswith(f"; {now.work.image_s:,.1f} -> {after.image_s:,.1f} s a call, {copies:,.1f} s of it "
                               "copying weights over PCIe")
        assert after.image_s > now.work.image_s + copies * 0.99
    fitting = [x for x in now.suggestions if x.fits]
    assert fitting[0].fields == {"quant": "nf4"} and fitting[-1].fields == {"cpu_offload": "sequential"}


UNREAD = [  # (fields, the one warning that names what the plan leaves out)
    ({"model": "whisper-large-v3", "task": "infer", "micro_batch_size": 4},
     "micro_batch_size is a training setting: this serving plan leaves it out"),
    ({"model": "sdxl", "task": "infer", "stack": "diffusers", "micro_batch_size": 4},
     "stack, micro_batch_size are training settings: this serving plan leaves them out"),
    ({"model": "sdxl", "task": "train", "method": "lora", "inference_steps": 20, "cfg": False},
     "inference_steps, cfg are serving settings: this training plan leaves them out"),
    ({"model": "flan-t5-base", "task": "train", "batch_size": 4},
     "batch_size is a serving setting: this training plan leaves it out"),
    ({"model": "bert-base-uncased", "task": "infer", "gpu_memory_utilization": 0.9, "num_gpus": 1},
     "gpu_memory_utilization, num_gpus are not read by the plan of google-bert/bert-base-uncased, an encoder model "
     "(bert): it leaves them out"),
]


@pytest.mark.parametrize(("fields", "said"), UNREAD, ids=[f"{f['model']}-{f['task']}" for f, _ in UNREAD])
def test_a_field_a_module_plan_does_not_read_is_named_in_one_warning_and_changes_nothing(fields, said, capsys):
    """s27: a module plan took the other task's fields without a word (a generation's --micro-batch-size 4, a
    training job's --inference-steps, T5 training given --batch-size), and another kind's at their default (not
    refused: they change nothing). Each is named in one warning line, as a decoder LLM's plan says a training
    field given to a serving plan (refusals.other_task), on the CLI and in the JSON, and the numbers are the plan's
    without it."""
    given = {k: v for k, v in fields.items() if k not in ("model", "task", "method")}
    with_it = plan(**fields, gpu="a100-80gb")
    without = plan(**{k: v for k, v in fields.items() if k not in given}, gpu="a100-80gb")
    assert [w for w in with_it.warnings if "leaves" in w] == [said] and not any("leaves" in w for w in without.warnings)
    assert with_it.to_dict()["memory"] == without.to_dict()["memory"]
    assert with_it.to_dict()["work"] == without.to_dict()["work"]
    flags = [x for k, v in fields.items() for x in (f"--{k.replace('_', '-')}", str(v).lower())]
    assert run(["estimate", *flags, "--gpu", "a100-80gb", "--json"]) == 0
    assert said in json.loads(capsys.readouterr().out)["warnings"]


def test_a_module_search_warns_of_the_fields_it_does_not_read(capsys):
    """recommend and cost of a module job carry the estimate's warning (ModuleChoices.warnings, printed first)."""
    job = {"model": "sdxl", "task": "infer", "micro_batch_size": 4}
    said = "micro_batch_size is a training setting: this serving plan leaves it out"
    assert gpuplan.recommend(job, top=1).warnings == [said]
    assert gpuplan.cost({**job, "gpu": "l40s"}, top=1).warnings == [said]
    assert gpuplan.recommend({"model": "sdxl", "task": "infer"}, top=1).warnings == []
    assert run(["recommend", "--model", "sdxl", "--task", "infer", "--micro-batch-size", "4", "--top", "1"]) == 0
    assert f"warning: {said}" in " ".join(capsys.readouterr().err.split())


def test_launch_says_the_plans_warnings(tmp_path, capsys):
    """launch printed none of its plan's warnings: an SDXL LoRA given --batch-size, vLLM's --max-num-seqs on a
    llama.cpp server wrote their files without a word. The answer carries them (JSON) and the CLI prints them first,
    on stderr."""
    report = gpuplan.launch({"model": "sdxl", "task": "train", "method": "lora", "gpu": "h100-sxm", "batch_size": 4},
                            folder=tmp_path / "sdxl")
    assert "batch_size is a serving setting: this training plan leaves it out" in report.warnings
    assert report.to_dict()["warnings"] == report.warnings
    assert run(["launch", "--model", "llama-3.2-1b", "--task", "infer", "--engine", "llama.cpp", "--gpu", "h100-sxm",
                "--max-num-seqs", "8", "-o", str(tmp_path / "llama")]) == 0
    err = " ".join(capsys.readouterr().err.split())
    assert err.startswith("warning: max_num_seqs is a setting of vllm and trtllm and changes nothing when serving "
                          "with llama.cpp")
