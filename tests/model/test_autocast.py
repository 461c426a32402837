"""CUDA autocast replayed on fake CPU tensors (gpuplan.model.autocast): each op in the dtype PyTorch's CUDA lists give
it (aten/src/ATen/autocast_mode.h), the casts counted where a recording runs them, and a text encoder's mixed-precision
full fine-tune read from the profile recorded so."""

from __future__ import annotations

import json

import pytest

import gpuplan
from conftest import require


def _fake(*modules):
    from torch._subclasses.fake_tensor import FakeTensorMode

    fake = FakeTensorMode(allow_non_fake_inputs=True)
    with fake:
        return fake, [m.to_empty(device="cpu") for m in modules]


def test_each_op_runs_in_the_dtype_cuda_autocast_gives_it():
    """A linear (lower-precision list) writes fp16 from fp32 inputs, layer_norm (fp32 list) reads and writes fp32,
    softmax (fp32 output dtype) writes fp32 from fp16 scores, an fp32 residual plus an fp16 output promotes to fp32,
    and the weight that takes gradients is cast once while its copy lives (autocast_mode.cpp cached_cast)."""
    require("torch")
    import torch

    from gpuplan.model.autocast import mode

    fake, (lin, norm) = _fake(torch.nn.Linear(8, 8, device="meta"), torch.nn.LayerNorm(8, device="meta"))
    casts = []

    from torch.utils._python_dispatch import TorchDispatchMode

    class Count(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            if func is torch.ops.aten._to_copy.default:
                casts.append((tuple(args[0].shape), args[0].dtype, kwargs["dtype"]))
            return func(*args, **(kwargs or {}))

    with fake, Count(), mode("float16"):
        x = torch.randn(4, 8)
        y = lin(x)
        z = lin(y)  # the same weight again: its cached copy, no second cast
        assert (y.dtype, z.dtype) == (torch.float16, torch.float16)
        assert norm(z).dtype == torch.float32
        assert torch.softmax(z, -1).dtype == torch.float32
        assert (x + z).dtype == torch.float32
    assert casts.count(((8, 8), torch.float32, torch.float16)) == 1  # the weight
    assert casts.count(((8,), torch.float32, torch.float16)) == 1  # the bias
    assert ((4, 8), torch.float32, torch.float16) in casts  # the input
    assert ((4, 8), torch.float16, torch.float32) in casts  # layer_norm's input


def test_a_recorded_linear_counts_autocast_s_casts_by_hand():
    """A Linear(64, 32) recorded under autocast at batch B: its input cast (B x 64 values read in fp32 and written in
    fp16, 6 bytes each), its weight's (64 x 32) and its bias's (32): (64·B + 2,048 + 32) x 6 bytes in three kernels,
    which a 16-bit recording, with no cast, has none of."""
    require("torch")
    import torch

    from gpuplan.model.record import Part, run_pass

    def part(autocast):
        return Part(name="Linear", variables=(), base=(), second=(), check=(), autocast=autocast,
                    build=lambda way: torch.nn.Linear(64, 32, device="meta", dtype=torch.bfloat16),
                    inputs=lambda batch, sizes: ((torch.randn(batch, 64, dtype=torch.float32 if autocast else
                                                              torch.bfloat16),), {}))

    for batch in (2, 5):
        under = run_pass(part("float16"), "inference", batch, (), record_ops=True)
        assert (under.other_bytes, under.other_kernels) == ((64 * batch + 64 * 32 + 32) * 6, 3)
        plain = run_pass(part(""), "inference", batch, (), record_ops=True)
        assert (plain.other_bytes, plain.other_kernels) == (0, 0)


BERT_LARGE = {"model": "bert-large-uncased", "task": "train", "method": "full", "seq_len": 512,
              "micro_batch_size": 4, "attention": "eager", "gpu": "v100-sxm2-16gb"}


def test_a_mixed_precision_bert_fine_tune_reads_its_autocast_profile():
    """BERT-large's fp16-mixed full fine-tune is planned from the profile recorded under autocast (bundled): its
    element-wise bytes beside the bf16 recording's, its activations holding the 16-bit weight copies (no separate
    line), and more of them than fp16-true's; LoRA and fp16-true keep the 16-bit profile."""
    from gpuplan.model import kinds
    from gpuplan.model.encoders import AUTOCAST_PART
    from gpuplan.model.profile import lookup
    from gpuplan.plan.modules import profiles

    spec = kinds.named("bert-large-uncased")
    amp, bundled = lookup(spec.main.config, AUTOCAST_PART)
    plain, _ = lookup(spec.main.config, "model")
    assert bundled and amp.under_autocast and not plain.under_autocast
    assert set(amp.memory) == {"inference", "train-full", "train-full-gc"}
    assert [(o.kind, o.count) for o in amp.ops] == [(o.kind, o.count) for o in plain.ops]  # the same GEMMs
    ratio = amp.other_bytes.at(4, (512,)) / plain.other_bytes.at(4, (512,))
    assert 2.0 < ratio < 3.5
    mixed = gpuplan.estimate({**BERT_LARGE, "precision": "fp16-mixed"}, advise=False)
    true = gpuplan.estimate({**BERT_LARGE, "precision": "fp16-true"}, advise=False)
    assert profiles(mixed.module.job)[0].under_autocast and not profiles(true.module.job)[0].under_autocast
    assert "autocast 16-bit weight copies" not in mixed.memory.other
    assert mixed.memory.activations_gib > true.memory.activations_gib + 0.5
    lora = gpuplan.estimate({**BERT_LARGE, "method": "lora", "precision": "fp16-mixed"}, advise=False)
    assert not profiles(lora.module.job)[0].under_autocast


@pytest.mark.parametrize("precision", ["fp16-mixed", "bf16-mixed"])
def test_autocast_s_work_slows_the_mixed_step_against_true_16_bit(precision):
    """The same GEMMs, more element-wise bytes: the mixed step's element-wise time is the larger, its GEMM time
    the same."""
    mixed = gpuplan.estimate({**BERT_LARGE, "precision": precision, "gpu": "a100-80gb"}, advise=False).work
    true = gpuplan.estimate({**BERT_LARGE, "precision": precision.replace("mixed", "true"), "gpu": "a100-80gb"},
                            advise=False).work
    assert mixed.parts_s["gemm"] == pytest.approx(true.parts_s["gemm"], rel=1e-9)
    assert mixed.parts_s["elementwise"] > 2 * true.parts_s["elementwise"]


@pytest.mark.parametrize("precision, autocast, noise", [("fp16-mixed", "float16", 4), ("bf16-true", "", 2)])
def test_eager_bert_memory_is_the_real_class_on_fake_tensors(precision, autocast, noise):
    """BERT-base's full fine-tune at batch 4 x 512 tokens with eager attention and its 0.1 dropout, the real class on
    fake tensors, against the plan's activations (the SDPA profile plus eager attention's saved bytes a score). On
    the CPU ``F.dropout`` is not fused (aten ``dropout``: ``is_fused_kernel_acceptable`` asks for a CUDA tensor): it
    saves a noise tensor in the scores' dtype (fp32 under autocast, whose softmax and dropout run in fp32) where
    CUDA's ``native_dropout`` keeps a 1-byte mask, so the pass is compared less those bytes: 12 layers x 4 x 12 heads
    x 512² = 150,994,944 scores (the correction: 0.42 GiB under autocast, 0.14 GiB in bf16)."""
    require("transformers")
    from dataclasses import replace

    from gpuplan.model import encoders, kinds
    from gpuplan.model.diffusers import build
    from gpuplan.model.record import run_pass

    spec = kinds.named("bert-base-uncased")

    def eager(way):
        module = build("transformers", spec.main.cls, spec.main.config)  # the config's own 0.1 attention dropout
        module.config._attn_implementation = "eager"
        return encoders._with_way(module, way, autocast)

    part = replace(encoders.model_part(spec, spec.main, autocast), build=eager)
    peak = max(run_pass(part, "train-full", 4, (512,)).peaks.values())
    scores = 12 * 4 * 12 * 512 * 512
    plan = gpuplan.estimate({"model": "bert-base-uncased", "task": "train", "method": "full", "seq_len": 512,
                             "micro_batch_size": 4, "precision": precision, "attention": "eager",
                             "gpu": "a100-80gb"}, advise=False).memory
    # within 6 %: bf16 +5.3 % here (BERT-large: +3.1 %), autocast within 4 % (BERT-large: +0.9 %)
    assert 0.97 < plan.activations_gib * 2**30 / (peak - (noise - 1) * scores) < 1.06


def test_simulate_runs_a_mixed_bert_fine_tune_under_autocast_as_its_profile(capsys):
    """``gpuplan simulate`` of BERT-base's fp16-mixed full fine-tune runs the real class once under the replayed
    autocast (fp32 weights), at 4 x 256 tokens where the profile was fitted on 64 to 128: the same activations as the
    profile's (0.571 GiB)."""
    require("transformers")
    from gpuplan.cli import run

    code = run(["simulate", "--model", "bert-base-uncased", "--task", "train", "--method", "full", "--seq-len", "256",
                "--micro-batch-size", "4", "--precision", "fp16-mixed", "--gpu", "a100-80gb", "--json"])
    out = json.loads(capsys.readouterr().out)
    assert code == 0
    assert out["simulated_activations_gib"] == pytest.approx(out["estimated_activations_gib"], rel=1e-3)
    assert out["simulated_activations_gib"] == pytest.approx(0.571, abs=0.001)


SD15_FULL = {"model": "sd1.5", "task": "train", "stack": "diffusers", "method": "full", "resolution": "512",
             "micro_batch_size": 1, "optimizer": "adamw-8bit", "grad_checkpointing": "full", "gpu": "rtx-3060"}


def test_a_mixed_precision_u_net_fine_tune_reads_its_autocast_profile():
    """SD 1.5's fp16-mixed full fine-tune (train_dreambooth.py's: the U-Net in fp32, its forward under accelerate's
    autocast) is planned from the denoiser's profile recorded under autocast (bundled): the same GEMMs; element-wise
    bytes that grow 1.98 times bf16's with the latents (GroupNorm and the SiLU after it in fp32) on top of every
    weight's cast each forward, 4 bytes read and 2 written for each of the U-Net's 859,520,964 parameters (the norms'
    few thousand, not cast, within the rounding); fp16-true and LoRA keep the 16-bit profile."""
    from gpuplan.model import diffusers, kinds
    from gpuplan.model.profile import lookup
    from gpuplan.plan.modules import profiles

    spec = kinds.named("sd1.5")
    amp, bundled = lookup(spec.main.config, diffusers.AUTOCAST_PART)
    plain, _ = lookup(spec.main.config, "denoiser")
    assert bundled and amp.under_autocast and not plain.under_autocast
    assert set(amp.memory) == {"inference", "train-full", "train-full-gc"}
    assert [(o.kind, o.count) for o in amp.ops] == [(o.kind, o.count) for o in plain.ops]
    small, large = (1, (64 * 64, 77)), (1, (96 * 96, 77))
    growth = (amp.other_bytes.at(*large) - amp.other_bytes.at(*small)) / (
        plain.other_bytes.at(*large) - plain.other_bytes.at(*small))
    assert 1.9 < growth < 2.1
    casts = amp.other_bytes.at(*small) - growth * plain.other_bytes.at(*small)
    assert casts == pytest.approx(6 * 859_520_964, rel=0.01)
    mixed = gpuplan.estimate({**SD15_FULL, "precision": "fp16-mixed"}, advise=False)
    true = gpuplan.estimate({**SD15_FULL, "precision": "fp16-true"}, advise=False)
    lora = gpuplan.estimate({**SD15_FULL, "precision": "fp16-mixed", "method": "lora"}, advise=False)
    assert profiles(mixed.module.job)[0].under_autocast
    assert not profiles(true.module.job)[0].under_autocast and not profiles(lora.module.job)[0].under_autocast
    assert "autocast 16-bit weight copies" not in mixed.memory.other  # the autocast profile's peaks hold them
    assert mixed.work.parts_s["gemm"] == pytest.approx(true.work.parts_s["gemm"], rel=1e-9)
    assert mixed.work.parts_s["elementwise"] > 4 * true.work.parts_s["elementwise"]


def test_the_u_net_s_checkpointed_recompute_runs_under_autocast():
    """torch.utils.checkpoint restores the forward's autocast state in the recompute; the recording carries the
    replayed lists there (context_fn). Its checkpointed pass holds the 16-bit copies of the fp32 weights at its peak
    (859,520,964 x 2 bytes, 1.60 GiB); recomputed without the lists, the attention would meet fp32 queries and
    bf16 keys, which SDPA refuses."""
    require("diffusers")
    from dataclasses import replace

    from gpuplan.model import diffusers, kinds
    from gpuplan.model.record import RecordError, run_pass

    c = kinds.named("sd1.5").main
    amp = diffusers.denoiser_part(c, diffusers.AUTOCAST_WAYS, autocast="float16")
    sizes = (32 * 32, 77)
    assert max(run_pass(amp, "train-full-gc", 1, sizes).peaks.values()) > 859_520_964 * 2
    forgot = replace(amp, build=lambda way: diffusers._with_way(diffusers.build(c.library, c.cls, c.config), way))
    with pytest.raises(RecordError, match="same dtype"):
        run_pass(forgot, "train-full-gc", 1, sizes)
