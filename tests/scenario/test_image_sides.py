"""The image sides each diffusion pipeline takes (gpuplan.model.diffusers.side_rule): every denoiser's own rule, read
from its config, against what diffusers' own pipelines do (s31-beyond: SDXL at 1000 px was refused with FLUX's and
SD3's 2x2-patch reason, though diffusers runs it)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

import gpuplan
from conftest import require
from gpuplan import GpuplanError
from gpuplan.model.diffusers import bundled_pipeline, side_rule, uneven_levels

REPOS = {"sd15": "stable-diffusion-v1-5/stable-diffusion-v1-5", "sdxl": "stabilityai/stable-diffusion-xl-base-1.0",
         "sd3-medium": "stabilityai/stable-diffusion-3-medium-diffusers", "flux-dev": "black-forest-labs/FLUX.1-dev"}


def plan(model: str, task: str, resolution: str):
    return gpuplan.estimate({"model": model, "task": task, "gpu": "h100", "resolution": resolution})


def test_each_denoiser_s_step_is_its_vae_factor_times_its_patch():
    """By hand from the bundled configs: every VAE has 4 block_out_channels, so latents are 2**3 = 8x smaller; a
    UNet takes any latent side (8 px), SD3's transformer has patch_size 2 (16 px), FLUX packs 2x2 patches (16 px)."""
    steps = {name: side_rule(bundled_pipeline(repo)).step for name, repo in REPOS.items()}
    assert steps == {"sd15": 8, "sdxl": 8, "sd3-medium": 16, "flux-dev": 16}
    assert [side_rule(bundled_pipeline(REPOS[n])).rounds_down for n in REPOS] == [False, False, False, True]


@pytest.mark.parametrize("model, task", [("sdxl", "infer"), ("sdxl", "train"), ("sd15", "train")])
def test_a_unet_at_1000_px_is_planned_and_its_uneven_levels_said(model, task):
    """1000 px: latents of 125 a side. SDXL's 3 up blocks make 2 downsamplers, each ceil(side / 2): 63, then 32;
    SD 1.5's 4 make 3: 63, 32, 16. diffusers runs it (check_inputs wants 1000 % 8 == 0; the UNet forwards the skips'
    sizes), so the plan is made, at 1000x1000, with the rounding said."""
    p = plan(model, task, "1000")
    assert "1000x1000" in p.to_dict()["resolved"]
    said = [n for n in p.to_dict()["defaults"] if "do not halve evenly" in n]
    sides = "63, 32" if model == "sdxl" else "63, 32, 16"
    assert len(said) == 1 and f"(sides {sides})" in said[0], said
    assert not any("halve" in n for n in plan(model, task, "1024").to_dict()["defaults"])


def test_uneven_levels_by_hand():
    sdxl = bundled_pipeline(REPOS["sdxl"])
    assert uneven_levels(sdxl, (125, 125)) == (63, 32)
    assert uneven_levels(sdxl, (124, 128)) == ()  # both sides halve twice evenly: 992 x 1024 px
    assert uneven_levels(sdxl, (126, 128)) == (63, 32)  # 1008 px: 126 -> 63 -> 32
    assert uneven_levels(bundled_pipeline(REPOS["flux-dev"]), (125, 125)) == ()  # no UNet


@pytest.mark.parametrize("model, task, resolution, needed, nearest", [
    ("sdxl", "infer", "1004", 8, "1000 or 1008"),
    ("sd15", "train", "1000x1020", 8, "1016 or 1024"),
    ("sd3-medium", "infer", "1000", 16, "992 or 1008"),  # diffusers' own: "You can use height 992"
    ("sd3-medium", "train", "1000", 16, "992 or 1008"),
    ("flux-dev", "train", "1000", 16, "992 or 1008"),  # _pack_latents cannot view 125 in pairs
])
def test_a_side_off_the_denoiser_s_rule_is_refused_with_its_reason_and_neighbours(model, task, resolution, needed,
                                                                                  nearest):
    with pytest.raises(GpuplanError) as err:
        plan(model, task, resolution)
    message = str(err.value)
    assert f"must be a multiple of {needed}" in message and f"the nearest: {nearest}" in message
    assert ("2x2 patches" in message) == (needed == 16) and "\n" not in message


def test_flux_generation_at_1000_px_is_planned_at_the_992_px_diffusers_makes():
    """FluxPipeline.prepare_latents: 2 * (1000 // 16) = 124 latent rows, so 992 px images (it warns, not raises)."""
    odd, even = plan("flux-dev", "infer", "1000").to_dict(), plan("flux-dev", "infer", "992").to_dict()
    assert "992x992" in odd["resolved"] and odd["memory"] == even["memory"] and odd["speed"] == even["speed"]
    assert any("resolution 1000x1000 makes 992x992 images" in n for n in odd["defaults"])


@pytest.mark.parametrize("side", [992, 1000, 1001, 1004, 1008, 1016, 1020])
def test_the_sides_refused_are_those_diffusers_pipelines_refuse(side):
    """The oracle: diffusers' own check_inputs (0.42.1 here) on an object carrying only the factors each pipeline's
    __init__ sets (vae_scale_factor from the VAE config, SD3's patch_size from its transformer's). A side gpuplan
    refuses for generation is one that raises there; FLUX's warns and is planned rounded down."""
    diffusers = require("diffusers")
    for model, cls in (("sdxl", diffusers.StableDiffusionXLPipeline), ("sd15", diffusers.StableDiffusionPipeline),
                       ("sd3-medium", diffusers.StableDiffusion3Pipeline), ("flux-dev", diffusers.FluxPipeline)):
        spec = bundled_pipeline(REPOS[model])
        channels = spec.role("vae")[0].config["block_out_channels"]
        me = SimpleNamespace(vae_scale_factor=2 ** (len(channels) - 1), _callback_tensor_inputs=["latents"],
                             patch_size=spec.main.config.get("patch_size", 2))
        args = {"sdxl": ("a", None, side, side, None), "sd15": ("a", side, side, None),
                "sd3-medium": ("a", None, None, side, side), "flux-dev": ("a", None, side, side)}[model]
        try:
            cls.check_inputs(me, *args)
            raised = False
        except ValueError:
            raised = True
        try:
            plan(model, "infer", str(side))
            refused = False
        except GpuplanError:
            refused = True
        assert refused == raised, (model, side)
