"""kohya's --blocks_to_swap on FLUX.1 (gpuplan.memory.modules.swapped_weight_bytes): the swapped blocks' weights
leave the card for CPU memory, nothing else moves; counted by hand from the blocks' linears."""

from __future__ import annotations

import pytest

import gpuplan
from gpuplan import GpuplanError
from gpuplan.memory.modules import flux_block_weights
from gpuplan.scenario.modules import swap_split

README_12GB = dict(model="flux-dev", task="train", stack="kohya", method="lora", quant="fp8", lora_rank=4,
                   resolution="1024", micro_batch_size=1, grad_checkpointing="full", optimizer="adamw-8bit",
                   cache_latents=True, text_encoders="cached", gpu="rtx-3060")


def test_kohyas_split_of_the_blocks():
    """flux_models.py enable_block_swap: n // 2 double and 2 (n - n // 2) single blocks; at most 17 and 36."""
    assert swap_split(16) == (8, 16)
    assert swap_split(28) == (14, 28)
    assert swap_split(35) == (17, 36)
    assert swap_split(7) == (3, 8)


def test_a_flux_blocks_linear_weights_by_hand():
    """h = 24 x 128 = 3,072. Double: 2 x 6h^2 modulation, 2 x (3h^2 qkv + h^2 out), 2 x 8h^2 MLP = 36 h^2;
    single: 3h^2 modulation + 7h^2 linear1 + 5h^2 linear2 = 15 h^2. 19 double and 38 single blocks then hold
    11.83e9 of FLUX.1's 11.9e9 parameters."""
    double, single = flux_block_weights({"num_attention_heads": 24, "attention_head_dim": 128})
    assert (double, single) == (339_738_624, 141_557_760)
    assert 19 * double + 38 * single == 11_834_228_736


def _plan(**kw):
    return gpuplan.estimate({**README_12GB, **kw})


def test_swapping_16_blocks_moves_their_fp8_weights_to_the_cpu():
    """8 x 339,738,624 + 16 x 141,557,760 = 4,982,833,152 bytes at one byte a weight (--fp8_base)."""
    base, swapped = _plan(), _plan(blocks_to_swap=16)
    moved = 4_982_833_152 / 2**30
    assert base.memory.weights_gib - swapped.memory.weights_gib == pytest.approx(moved, abs=1e-6)
    assert swapped.memory.cpu_gib == pytest.approx(moved, abs=1e-6)
    assert base.memory.activations_gib == swapped.memory.activations_gib
    assert base.memory.device_peak_gib - swapped.memory.device_peak_gib > moved  # the allocator's slack on it too


@pytest.mark.parametrize(("kw", "words"), [
    (dict(stack="ai-toolkit", quant=None), "not for ai-toolkit"),
    (dict(stack="diffusers", quant=None), "diffusers' scripts have no block swap"),
    (dict(model="sdxl"), "modelled for FLUX.1"),
    (dict(blocks_to_swap=36), "at most 35"),
    (dict(task="infer"), "kohya's training option"),
])
def test_a_swap_it_cannot_run_is_refused(kw, words):
    with pytest.raises(GpuplanError, match=words):
        _plan(**{"blocks_to_swap": 16, **kw})
