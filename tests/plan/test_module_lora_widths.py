"""A diffusion LoRA's adapters and optimizer states as each trainer holds them (session 19; before, every trainer's
adapters were in the weights' dtype and their AdamW moments fp32 under mixed precision, 2 + 2 + 8 B a parameter):

- diffusers' train_dreambooth_lora_sdxl.py: peft's ``add_adapter`` builds the adapters in the UNet's bf16 (peft's
  ``inject_adapter_in_model`` does not autocast), ``cast_training_params(dtype=torch.float32)`` only under fp16;
- kohya's sd-scripts: networks/lora.py's LoRAModule Linears are fp32, cast to bf16 only with ``--full_bf16``;
- SimpleTuner: peft's bf16 adapters and its default optimizer adamw_bf16, three bf16 states a parameter;
- ai-toolkit: ``network.force_to(dtype=torch.float32)``, its 8-bit AdamW one byte a moment.

Torch's AdamW makes each moment with ``zeros_like(p)``: the adapters' width. Every byte below is that count times the
trainable parameters the plan reports (``peft``-exact counts checked in tests/plan/test_modules_plan.py)."""

from __future__ import annotations

import pytest

import gpuplan
from gpuplan.overheads import BNB_STATE_BLOCK

GIB = 2**30
SDXL = {"model": "sdxl", "task": "train", "method": "lora", "resolution": "1024", "gpu": "h100-sxm"}


@pytest.mark.parametrize("fields, adapter_dtype, adapter, states", [
    ({"stack": "diffusers"}, "bf16", 2, 2 * 2),
    ({"stack": "diffusers", "precision": "fp16-mixed"}, "fp32", 4, 2 * 4),
    ({"stack": "kohya"}, "fp32", 4, 2 * 4),
    ({"stack": "kohya", "precision": "bf16-true"}, "bf16", 2, 2 * 2),  # --full_bf16
    ({"stack": "simpletuner"}, "bf16", 2, 3 * 2),  # adamw_bf16: exp_avg, exp_avg_sq, shift
    ({"stack": "ai-toolkit"}, "fp32", 4, 2 + 2 * 4 / BNB_STATE_BLOCK),  # adamw8bit
    ({"stack": "kohya", "adapter_dtype": "bf16"}, "bf16", 2, 2 * 2),  # a dtype given is the user's
])
def test_each_trainer_holds_its_adapters_and_states_at_its_own_width(fields, adapter_dtype, adapter, states):
    p = gpuplan.estimate({**SDXL, **fields})
    trainable = p.model.params_trainable
    assert p.scenario["adapter_dtype"] == adapter_dtype
    assert p.memory.gradients_gib * GIB == trainable * adapter
    assert p.memory.optimizer_gib * GIB == pytest.approx(trainable * states, rel=1e-12)
    assert p.checkpoint_bytes == pytest.approx(trainable * (adapter + states), rel=1e-12)


def test_diffusers_sdxl_by_hand():
    """23,224,320 adapter parameters (the UNet's attention projections at rank 16): 46.4 MB of bf16 gradients, 92.9 MB
    of bf16 moments (185.8 MB before, fp32), a 139.3 MB checkpoint (232.2 MB before)."""
    p = gpuplan.estimate({**SDXL, "stack": "diffusers"})
    assert p.model.params_trainable == 23_224_320
    assert p.memory.optimizer_gib * GIB == 92_897_280 and p.checkpoint_bytes == 139_345_920


def test_the_plan_says_why():
    said = " ".join(gpuplan.estimate({**SDXL, "stack": "kohya"}).assumptions)
    assert "adapter_dtype fp32 (networks/lora.py's LoRAModule Linears are fp32; --full_bf16 casts them)" in said
