"""The diffusion trainers' profiles (gpuplan.scenario.diffusion_stacks): one per diffusion stack, and the facts the
resolver and the launch files read agree with each other."""

from __future__ import annotations

import pytest

from gpuplan import GpuplanError
from gpuplan.launchers.diffusion import NAMES, ST_PRECISION
from gpuplan.model.quant import FP8_ALL, FP8_LINEARS
from gpuplan.scenario import scenario_from
from gpuplan.scenario.diffusion_stacks import DIFFUSION_STACKS, FAMILIES
from gpuplan.scenario.modules import resolve_module
from gpuplan.scenario.stacks import DIFFUSION_TRAINERS, RECIPES


def test_every_diffusion_stack_has_one_profile_and_one_launch_target():
    assert set(DIFFUSION_STACKS) == {"diffusers", "kohya", "simpletuner", "ai-toolkit"} <= set(RECIPES)
    assert set(DIFFUSION_STACKS) == DIFFUSION_TRAINERS  # what a decoder's plan asks without loading the profiles
    assert tuple(DIFFUSION_STACKS) == NAMES
    for name, p in DIFFUSION_STACKS.items():
        assert p.name == name and p.lora_preset in ("attention", "all")
        assert p.text_t5 <= set(p.text_trained), name  # trained-all trains T5 beside what trained trains
        assert {family for _, family in p.text_trained} <= set(FAMILIES)
        assert set(p.clip_last_layer_frozen) | set(p.keeps_grads) <= set(FAMILIES)


def test_the_bases_a_trainer_loads_are_those_its_files_write():
    """SimpleTuner's --base_model_precision names each base it loads; kohya and ai-toolkit load fp8 alone, stored
    as --fp8_base (every weight) and quanto's qfloat8 (every linear); diffusers' scripts are not limited here (its
    launch refuses a quantized base)."""
    assert set(DIFFUSION_STACKS["simpletuner"].bases) <= set(ST_PRECISION)
    assert DIFFUSION_STACKS["kohya"].bases == DIFFUSION_STACKS["ai-toolkit"].bases == ("fp8",)
    assert (DIFFUSION_STACKS["kohya"].fp8_storage, DIFFUSION_STACKS["ai-toolkit"].fp8_storage) == (FP8_ALL,
                                                                                                   FP8_LINEARS)
    assert DIFFUSION_STACKS["diffusers"].bases is None


@pytest.mark.parametrize(("stack", "weights"), [("kohya", FP8_ALL), ("simpletuner", "fp8"),
                                               ("ai-toolkit", FP8_LINEARS)])
def test_an_fp8_flux_base_is_stored_as_each_trainer_stores_it(stack, weights):
    from gpuplan.model.kinds import known_here

    spec = known_here("flux.1-dev")
    s = scenario_from({"model": "flux.1-dev", "task": "train", "method": "lora", "stack": stack, "quant": "fp8",
                       "gpu": "rtx-4090"})
    assert resolve_module(s, spec)[1].weights == weights


def test_ai_toolkit_refuses_an_fp8_unet_it_does_not_quantize():
    from gpuplan.model.kinds import known_here

    s = scenario_from({"model": "sdxl", "task": "train", "method": "lora", "stack": "ai-toolkit", "quant": "fp8",
                       "gpu": "rtx-4090"})
    with pytest.raises(GpuplanError, match="ai-toolkit quantizes transformer denoisers"):
        resolve_module(s, known_here("sdxl"))


def test_simpletuner_alone_keeps_a_third_adamw_state_for_16_bit_adapters():
    """SimpleTuner's default adamw_bf16 adds a Kahan-summation buffer to AdamW's two moments; the other trainers
    use torch's AdamW (memory.modules.lora_widths reads the profile, not the trainer's name)."""
    assert {name: p.adamw_states_16bit for name, p in DIFFUSION_STACKS.items()} == {
        "diffusers": 2, "kohya": 2, "simpletuner": 3, "ai-toolkit": 2}
