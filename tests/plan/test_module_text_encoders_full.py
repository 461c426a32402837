"""Text encoders trained whole with the denoiser's full fine-tune (issue 34, ``text_encoders: trained`` with ``method
full``): which encoders each trainer's switch trains (diffusers' train_dreambooth*.py ``--train_text_encoder``, T5 too
for SD3; kohya's train_db.py, sdxl_train.py, sd3_train.py), their weights, autocast copies, gradients and optimizer
states against hand counts and the real transformers classes on the meta device, what their forward keeps against a
fresh fake-tensor pass, their FLOPs and the optimizer's per-tensor host work by hand."""

from __future__ import annotations

import pytest

import gpuplan
from conftest import require
from gpuplan import overheads as oh
from gpuplan.errors import GpuplanError
from gpuplan.hardware import load_gpu
from gpuplan.memory.modules import kept_activations, linear_weights
from gpuplan.model import diffusers, kinds
from gpuplan.model.profile import lookup
from gpuplan.speed.modules import Run, backward, forward

GIB = 2**30
SD15_UNET = 859_520_964
CLIP_L = 123_060_480  # SD 1.5's CLIPTextModel (data/modules/SOURCES.md: OpenAI's CLIP ViT-L/14 text tower, 123M)
# diffusers' train_dreambooth.py with --train_text_encoder, as diffusers PR 2039 ran it (fp16, 8-bit Adam)
SD15 = dict(model="sd1.5", task="train", stack="diffusers", method="full", resolution="512", micro_batch_size=1,
            grad_checkpointing="full", precision="fp16-mixed", optimizer="adamw", gpu="a100-80gb")


def _profile(model: str, name: str):
    te = next(c for c in kinds.named(model).role("text_encoder") if c.name == name)
    return te, lookup(te.config, "text-encoder")[0]


@pytest.mark.parametrize("stack, model, trained", [
    ("diffusers", "sd1.5", ["text_encoder"]),  # train_dreambooth.py: the one CLIP
    ("diffusers", "flux-dev", ["text_encoder"]),  # train_dreambooth_flux.py: CLIP-L, text_encoder_two frozen
    ("diffusers", "sd3-medium", ["text_encoder", "text_encoder_2", "text_encoder_3"]),  # _sd3.py: T5 too
    ("kohya", "sd1.5", ["text_encoder"]),  # train_db.py
    ("kohya", "sdxl", ["text_encoder", "text_encoder_2"]),  # sdxl_train.py --train_text_encoder
    ("kohya", "sd3-medium", ["text_encoder", "text_encoder_2"]),  # sd3_train.py: T5 only with --train_t5xxl
])
def test_each_trainers_switch_trains_its_encoders(stack, model, trained):
    p = gpuplan.estimate({**SD15, "model": model, "stack": stack, "text_encoders": "trained", "gpu": "h200"})
    job = p.module.job
    assert list(job.text_trained) == trained
    spec = kinds.named(model)
    whole = sum(c.params for c in spec.components if c.name in trained)
    last = 7_089_408 if (stack, model) == ("kohya", "sdxl") else 0  # CLIP-L's last layer and norm (test below)
    assert p.model.params_trainable == spec.main.params + whole - last
    frozen = [c.name for c in spec.role("text_encoder") if c.name not in trained]
    assert all(f"{name} (T5EncoderModel, frozen)" in p.memory.other for name in frozen)


def test_whole_encoder_memory_is_a_hand_count_and_the_real_class():
    """SD 1.5's CLIP-L trained whole under fp16 autocast with AdamW, against it frozen: its weights go from 2 to 4
    bytes, autocast's 16-bit copies of its linears (84,934,656 weights in 72 nn.Linear of the real class on the meta
    device) are held, gradients 4 bytes and two fp32 moments per parameter."""
    require("transformers")
    import torch

    te, prof = _profile("sd1.5", "text_encoder")
    module = diffusers.build(te.library, te.cls, te.config)
    linears = [m for m in module.modules() if isinstance(m, torch.nn.Linear)]
    assert len(linears) == 72 and sum(p.numel() for p in module.parameters()) == te.params == CLIP_L
    assert linear_weights(prof) == sum(m.weight.numel() for m in linears) == 84_934_656
    frozen = gpuplan.estimate({**SD15, "text_encoders": "frozen"})
    trained = gpuplan.estimate({**SD15, "text_encoders": "trained"})
    other = trained.memory.other
    assert other["text_encoder (CLIPTextModel, trained)"] * GIB == pytest.approx(4 * CLIP_L)
    assert other["text_encoder autocast 16-bit weight copies"] * GIB == pytest.approx(2 * 84_934_656)
    assert (trained.memory.gradients_gib - frozen.memory.gradients_gib) * GIB == pytest.approx(4 * CLIP_L)
    assert (trained.memory.optimizer_gib - frozen.memory.optimizer_gib) * GIB == pytest.approx(2 * 4 * CLIP_L)
    assert trained.model.params_trainable - frozen.model.params_trainable == CLIP_L


def test_bf16_true_keeps_16bit_weights_and_no_copies():
    """kohya's --full_bf16 (precision bf16-true) trains the encoder in bf16: 2-byte weights, gradients and AdamW
    moments, no autocast copies."""
    p = gpuplan.estimate({**SD15, "stack": "kohya", "precision": "bf16-true", "text_encoders": "trained"})
    assert p.memory.other["text_encoder (CLIPTextModel, trained)"] * GIB == pytest.approx(2 * CLIP_L)
    assert not any("autocast" in k for k in p.memory.other)


@pytest.mark.parametrize("way", ["train-full", "train-full-gc"])
def test_kept_activations_grow_with_the_batch_and_leave_out_the_embeddings_gradient(way):
    """What the encoder's forward keeps, against a fresh fake-tensor pass of the real class at batch 4: the largest
    segment's growth from batch 1 to 4 is three samples' worth; the constant part of the recorded peaks is the token
    embedding's gradient being written (49,408 x 768 x 2 bytes), counted with the gradients instead."""
    require("transformers")
    from gpuplan.model.record import run_pass

    te, prof = _profile("sd1.5", "text_encoder")
    part = diffusers.text_encoder_part(te, (way,))
    one, four = run_pass(part, way, 1, ()).peaks, run_pass(part, way, 4, ()).peaks
    grown = max(four[k] - one[k] for k in one.keys() & four.keys())
    assert 3 * kept_activations(prof, way, 1, ()) == pytest.approx(grown, rel=0.03)
    assert max(one.values()) >= 49_408 * 768 * 2 > kept_activations(prof, way, 1, ())
    # checkpointing keeps each of the 12 layers' inputs (77 x 768 x 2 bytes a sample) at least
    assert kept_activations(prof, way, 1, ()) >= 12 * 77 * 768 * 2
    trained = gpuplan.estimate({**SD15, "text_encoders": "trained", "micro_batch_size": 4,
                                "grad_checkpointing": "full" if way.endswith("-gc") else "none"})
    assert trained.module.job.text_trained == ("text_encoder",)


def test_whole_encoder_runs_weight_gradients_and_its_optimizer():
    """CLIP-L's forward and backward trained whole: every linear three times (forward, input and weight gradients),
    attention 1 + 2.5 times; AdamW's bytes over the encoder's parameters too; Adafactor's host work grows by its 72
    linears' weights and biases (144 tensors x 28 ops x 7 us on a desktop's host)."""
    _, prof = _profile("sd1.5", "text_encoder")
    gpu = load_gpu("a100-80gb")
    run_ = Run(dtype="fp16", trained="all")
    flops = forward(prof, gpu, 1, (), run_).flops + backward(prof, gpu, 1, (), run_).flops
    linears = 2 * 77 * 12 * (4 * 768 * 768 + 2 * 768 * 3072)
    attention = 2 * 12 * 77 * 77 * (64 + 64) * 12
    assert flops == pytest.approx(3 * linears + attention * (1 + oh.ATTENTION_BACKWARD_FLOP_RATIO))
    frozen = gpuplan.estimate({**SD15, "text_encoders": "frozen"})
    trained = gpuplan.estimate({**SD15, "text_encoders": "trained"})
    assert "text encoders (trained)" in trained.work.parts_s
    assert trained.work.parts_s["text encoders (trained)"] > 2 * frozen.work.parts_s["text encoders"]
    opt = trained.work.parts_s["optimizer"] / frozen.work.parts_s["optimizer"]
    assert opt == pytest.approx((SD15_UNET + CLIP_L) / SD15_UNET)
    ada = {**SD15, "optimizer": "adafactor", "gpu": "rtx-4090"}  # a desktop's host (no server factor)
    host = gpuplan.estimate({**ada, "text_encoders": "trained"}).work.parts_s["optimizer (host)"] - \
        gpuplan.estimate({**ada, "text_encoders": "frozen"}).work.parts_s["optimizer (host)"]
    assert oh.OPTIMIZER_OPS_PER_TENSOR["adafactor"] == 28
    assert host == pytest.approx(144 * 28 * oh.DISPATCH_OVERHEAD_S)



def test_sd3_trains_t5_whole_with_diffusers_and_runs_out_of_an_80gb_card():
    """train_dreambooth_sd3.py --train_text_encoder trains T5-XXL too (4.76B parameters: fp32 weights, gradients and
    AdamW states, 16 bytes each). diffusers issue 10412: SD3.5-large DreamBooth with --train_text_encoder, 8-bit
    Adam and fp16, 'running out of memory on step 0' on an 80 GB card."""
    p = gpuplan.estimate({**SD15, "model": "sd3-medium", "text_encoders": "trained", "gpu": "h200"})
    assert "text_encoder_3 (T5EncoderModel, trained)" in p.memory.other
    t5 = 4_762_310_656
    assert p.memory.other["text_encoder_3 (T5EncoderModel, trained)"] * GIB == pytest.approx(4 * t5)
    issue = gpuplan.estimate({**SD15, "model": "sd3.5-large", "text_encoders": "trained", "optimizer": "adamw-8bit",
                              "gpu": "a100-80gb"})
    assert issue.memory.fits is False and issue.memory.device_peak_gib > 80


def test_t5_tokens_size_its_kept_activations():
    """T5's kept activations scale with the prompt's T5 tokens (seq_len)."""
    short = gpuplan.estimate({**SD15, "model": "sd3-medium", "text_encoders": "trained", "gpu": "h200",
                              "seq_len": 128})
    long = gpuplan.estimate({**SD15, "model": "sd3-medium", "text_encoders": "trained", "gpu": "h200",
                             "seq_len": 256})
    assert long.memory.phases_gib["forward and backward"] > short.memory.phases_gib["forward and backward"]


def test_trained_all_adds_t5_where_kohya_trains_it():
    """text_encoders trained-all: kohya's sd3_train.py --train_t5xxl trains T5-XXL beside CLIP-L and CLIP-G; T5's
    4,762,310,656 parameters become trained (fp32 weights, gradients and AdamW moments under autocast, 16-bit copies
    of its linears, 4,762,297,856 weights in 168 nn.Linear of the real class on the meta device)."""
    require("transformers")
    import torch

    te, prof = _profile("sd3-medium", "text_encoder_3")
    module = diffusers.build(te.library, te.cls, te.config)
    linears = [m for m in module.modules() if isinstance(m, torch.nn.Linear)]
    assert len(linears) == 24 * 7 and linear_weights(prof) == sum(m.weight.numel() for m in linears)
    base = {**SD15, "model": "sd3-medium", "stack": "kohya", "gpu": "h200", "set_grads_to_none": False}
    clip = gpuplan.estimate({**base, "text_encoders": "trained"})
    both = gpuplan.estimate({**base, "text_encoders": "trained-all"})
    assert both.model.params_trainable - clip.model.params_trainable == te.params == 4_762_310_656
    assert both.memory.other["text_encoder_3 autocast 16-bit weight copies"] * GIB == pytest.approx(
        2 * linear_weights(prof))
    assert "text_encoder_3 (T5EncoderModel, frozen)" in clip.memory.other
    assert (both.memory.optimizer_gib - clip.memory.optimizer_gib) * GIB == pytest.approx(8 * te.params)


@pytest.mark.parametrize("update", [{"stack": "diffusers", "method": "lora", "model": "sd3-medium"},
                                    {"model": "flux-dev", "stack": "diffusers"},
                                    {"model": "flux-dev", "stack": "diffusers", "method": "lora"},
                                    {"model": "sd1.5"}])
def test_trained_all_is_refused_where_no_trainer_trains_t5(update):
    """T5 trains in SD3's full fine-tunes and kohya's SD3 and FLUX LoRA (train_t5xxl); diffusers' LoRA scripts adapt
    CLIP only, kohya's flux_train.py freezes T5, SD 1.5 has none: one sentence, which names who does."""
    with pytest.raises(GpuplanError, match=r"SD3's full fine-tunes do .* kohya's SD3 and FLUX LoRA") as err:
        gpuplan.estimate({**SD15, "stack": "kohya", "text_encoders": "trained-all", "gpu": "h200", **update})
    assert "\n" not in str(err.value)


@pytest.mark.parametrize("stack, model, method, freed", [
    ("diffusers", "sd1.5", "full", False),  # train_dreambooth.py: zero_grad(set_to_none=args.set_grads_to_none)
    ("diffusers", "sd3-medium", "full", True),  # train_dreambooth_sd3.py: optimizer.zero_grad(), accelerate: True
    ("kohya", "sd1.5", "full", True),  # train_db.py: zero_grad(set_to_none=True)
    ("kohya", "sdxl", "lora", False),  # LoRA's gradients are a few MB: not modelled apart
])
def test_each_trainer_frees_gradients_or_keeps_them(stack, model, method, freed):
    p = gpuplan.estimate({**SD15, "stack": stack, "model": model, "method": method, "gpu": "h200"})
    assert p.module.job.grads_freed is freed


@pytest.mark.parametrize("update", [{}, {"grad_checkpointing": "none", "micro_batch_size": 8, "resolution": "768"}])
def test_freed_gradients_peak_at_the_larger_moment(update):
    """With gradients freed after each step (kohya's zero_grad(set_to_none=True)), the peak is the larger of the
    step before its backward (every phase's transient, autocast's copies, no gradients) and the end of its backward
    (every gradient, no activations, no copies): the same plan with gradients kept, less one or the other."""
    scenario = {**SD15, "stack": "kohya", "text_encoders": "trained", **update}
    kept = gpuplan.estimate({**scenario, "set_grads_to_none": False}).memory
    freed = gpuplan.estimate(scenario).memory
    gradients, transient = kept.gradients_gib, kept.activations_gib
    copies = sum(v for k, v in kept.other.items() if k.endswith("autocast 16-bit weight copies"))
    assert copies > 0 and gradients > 0
    if gradients - copies > transient:
        assert freed.peak_phase == "end of backward" and freed.activations_gib == 0
        assert freed.allocated_peak_gib == pytest.approx(kept.allocated_peak_gib - copies - transient)
    else:
        assert freed.gradients_gib == 0
        assert freed.allocated_peak_gib == pytest.approx(kept.allocated_peak_gib - gradients)
    assert freed.allocated_peak_gib < kept.allocated_peak_gib


def test_kohya_sdxl_train_leaves_clip_l_last_layer_frozen():
    """kohya's sdxl_train.py reads CLIP-L's penultimate layer and freezes the rest of it ("freeze last layer and
    final_layer_norm in te1": ``text_encoder1.text_model.encoder.layers[-1].requires_grad_(False)`` and
    ``final_layer_norm``): those parameters, counted on the real class on the meta device (7,089,408, 7,077,888 of
    them in six nn.Linear weights), take no gradients, AdamW states or autocast copies; CLIP-G trains whole, and
    diffusers' SD 1.5 (train_dreambooth.py) freezes nothing."""
    require("transformers")
    import torch

    te, _ = _profile("sdxl", "text_encoder")
    module = diffusers.build(te.library, te.cls, te.config)
    text_model = getattr(module, "text_model", module)  # transformers 5 flattens CLIPTextModel
    last = [text_model.encoder.layers[-1], text_model.final_layer_norm]
    frozen = sum(p.numel() for m in last for p in m.parameters())
    weights = sum(m.weight.numel() for m in last[0].modules() if isinstance(m, torch.nn.Linear))
    assert (frozen, weights) == (7_089_408, 7_077_888)
    base = dict(model="sdxl", task="train", stack="kohya", method="full", resolution="1024", optimizer="adamw",
                grad_checkpointing="full", precision="fp16-mixed", gpu="h100-sxm",
                set_grads_to_none=False)  # gradients and autocast's copies held at the peak
    now = gpuplan.estimate({**base, "text_encoders": "trained"})
    plain = gpuplan.estimate({**base, "text_encoders": "frozen"})
    te2 = next(c for c in kinds.named("sdxl").role("text_encoder") if c.name == "text_encoder_2")
    assert now.model.params_trainable - plain.model.params_trainable == te.params - frozen + te2.params
    assert (now.memory.gradients_gib - plain.memory.gradients_gib) * GIB == pytest.approx(
        4 * (te.params - frozen + te2.params))
    copies = now.memory.other["text_encoder autocast 16-bit weight copies"] * GIB
    assert copies == pytest.approx(2 * (linear_weights(_profile("sdxl", "text_encoder")[1]) - weights))
    assert any("last layer and final norm frozen" in n for n in now.module.job.notes)
    # Adafactor's per-tensor host work: CLIP-L's 72 linears' weights and biases less the frozen layer's 6 (132
    # tensors), CLIP-G's 192 and its bias-free text projection (385), 28 ops each at 7 us on a desktop's host
    ada = {**base, "optimizer": "adafactor", "gpu": "rtx-4090"}
    host = gpuplan.estimate({**ada, "text_encoders": "trained"}).work.parts_s["optimizer (host)"] - \
        gpuplan.estimate({**ada, "text_encoders": "frozen"}).work.parts_s["optimizer (host)"]
    assert host == pytest.approx((72 * 2 - 12 + 192 * 2 + 1) * 28 * oh.DISPATCH_OVERHEAD_S)
    sd15 = gpuplan.estimate({**SD15, "text_encoders": "trained"})
    assert not sd15.module.job.text_last_frozen and sd15.module.job.text_trained == ("text_encoder",)


def test_kohya_lora_trains_t5_with_train_t5xxl():
    """kohya's FLUX LoRA with network_args train_t5xxl=True (networks/lora_flux.py: LoRA on every Linear of
    T5Attention and T5DenseGatedActDense, beside CLIP-L's): T5-XXL's 24 blocks x (4 x 4,096 x 4,096 attention + 2 x
    4,096 x 10,240 gated input + 10,240 x 4,096 output) linears carry r x (in + out) adapter parameters each, a hand
    count the profile's linears give; its forward and backward run every step, checkpointed as kohya checkpoints a
    trained encoder (its recorded train-lora-all-gc pass); the launch file asks for it."""
    base = dict(model="flux-dev", task="train", stack="kohya", method="lora", quant="fp8", resolution="512",
                grad_checkpointing="full", gpu="h100-sxm", lora_rank=16, seq_len=512)
    clip = gpuplan.estimate({**base, "text_encoders": "trained"})
    both = gpuplan.estimate({**base, "text_encoders": "trained-all"})
    job = both.module.job
    assert job.text_trained == ("text_encoder", "text_encoder_2") and job.text_lora == "all"
    t5 = 24 * 16 * (4 * (4096 + 4096) + 2 * (4096 + 10240) + (10240 + 4096))
    assert both.model.params_trainable - clip.model.params_trainable == t5 == 29_097_984
    # kohya's --fp8_base casts the encoders on the card to fp8 (train_network.py te_weight_dtype), T5's embeddings
    # and norms back to bf16 (flux_train_network.py prepare_text_encoder_fp8): 24 blocks' linears, 1 byte each
    linears = 24 * (4 * 4096 * 4096 + 3 * 4096 * 10240)
    frozen = clip.memory.other["text_encoder_2 (T5EncoderModel, frozen)"] * GIB
    assert frozen == pytest.approx(linears + 2 * (4_762_310_656 - linears))
    adapter = (both.memory.gradients_gib - clip.memory.gradients_gib) * GIB / t5
    assert adapter in (pytest.approx(2), pytest.approx(4))
    trained = both.memory.other["text_encoder_2 (T5EncoderModel, LoRA trained)"] * GIB
    assert trained == pytest.approx(frozen + adapter * t5)
    # frozen: one forward; LoRA-trained and checkpointed: forward, forward again, input gradients (the backward's
    # GEMMs twice a forward's, the adapters' own products): 3.8 times on an A100's server host, 4.2 on an H100 SXM5's
    # (HOPPER_SXM_HOST_FACTOR), whose lighter host hides less of the forward's GPU time
    added = both.work.parts_s["text encoders (LoRA trained)"] - clip.work.parts_s["text encoders (LoRA trained)"]
    assert 2.5 < added / clip.work.parts_s["text encoders"] < 4.5
    _, prof = _profile("flux-dev", "text_encoder_2")
    assert {"train-lora-all", "train-lora-all-gc"} <= set(prof.memory)
    gc = prof.activation_bytes("train-lora-all-gc", 1, (512,))
    assert gc < prof.activation_bytes("train-lora-all", 1, (512,)) / 4
