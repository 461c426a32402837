"""kohya's --blocks_to_swap in time and in the advice: the copies over the card's PCIe link (four times the swapped
bytes a forward and backward, pinned), overlapped with the pass's compute; a kohya FLUX LoRA that does not fit a
12 GB card is offered the fewest swapped blocks that fit, with what the copies cost."""

from __future__ import annotations

import pytest

import gpuplan
from gpuplan.hardware import load_gpu
from gpuplan.plan.resolve import resolve_any
from gpuplan.scenario import scenario_from
from gpuplan.speed.modules import block_swap_s, swap_exposed

SCENARIO = dict(model="flux-dev", task="train", stack="kohya", method="lora", quant="fp8", lora_rank=4,
                resolution="1024", micro_batch_size=1, grad_checkpointing="full", optimizer="adamw-8bit",
                text_encoders="cached", gpu="rtx-3060")


def _job(**kw):
    return resolve_any(scenario_from({**SCENARIO, **kw})).job


def test_the_copies_of_16_swapped_blocks_over_pcie_4_by_hand():
    """8 double and 16 single fp8 blocks, 4,982,833,152 bytes, to the card and back in the forward and the
    backward: 4 x 4.98 GB over PCIe 4.0 x16 at 80 % of 32 GB/s (25.6 GB/s) = 0.7786 s."""
    gpu = load_gpu("rtx-3060")
    assert gpu.pcie_generation == 4
    assert block_swap_s(_job(blocks_to_swap=16), gpu) == pytest.approx(4 * 4_982_833_152 / 25.6e9, rel=1e-9)
    assert block_swap_s(_job(), gpu) == 0.0


def test_an_x8_card_copies_at_half_the_rate():
    """The RTX 4060 is PCIe 4.0 x8 (the catalog's lanes): 12.8 GB/s usable, twice the RTX 3060's x16 time."""
    job = _job(blocks_to_swap=16)
    assert load_gpu("rtx-4060").pcie_lanes == 8
    assert block_swap_s(job, load_gpu("rtx-4060")) == pytest.approx(2 * block_swap_s(job, load_gpu("rtx-3060")))


def test_the_step_waits_only_for_copies_beyond_the_pass():
    job, gpu = _job(blocks_to_swap=16), load_gpu("rtx-3060")
    copies = block_swap_s(job, gpu)
    assert swap_exposed(job, gpu, 10.0) == (copies, 0.0)
    assert swap_exposed(job, gpu, 0.5) == pytest.approx((copies, copies - 0.5))


def test_a_fast_card_waits_for_the_copies_of_a_small_image():
    """FLUX LoRA at 512 px on an H100 SXM (PCIe 5: 51.2 GB/s): 35 blocks' copies, 4 x 10.9 GB, take 0.85 s,
    longer than the 0.47 s pass, so the step grows by the difference (0.48 -> 0.86 s)."""
    base = gpuplan.estimate({**SCENARIO, "gpu": "h100-sxm", "resolution": "512"})
    swapped = gpuplan.estimate({**SCENARIO, "gpu": "h100-sxm", "resolution": "512", "blocks_to_swap": 35})
    waited = swapped.work.parts_s["block swap copies (waited for)"]
    assert waited > 0.1
    assert swapped.work.step_s == pytest.approx(base.work.step_s + waited, rel=1e-6)


def test_a_kohya_flux_lora_too_big_for_12_gb_is_offered_the_fewest_blocks_that_fit():
    plan = gpuplan.estimate(SCENARIO)
    assert plan.memory.fits is False and plan.memory.device_peak_gib == pytest.approx(15.62, abs=0.01)
    swap = [x for x in plan.suggestions if "blocks_to_swap" in x.fields]
    assert len(swap) == 1 and swap[0].fits
    n = swap[0].fields["blocks_to_swap"]
    assert swap[0].change == f"blocks_to_swap {n}" and 1 < n < 35
    assert gpuplan.estimate({**SCENARIO, "blocks_to_swap": n}).memory.fits
    assert not gpuplan.estimate({**SCENARIO, "blocks_to_swap": n - 1}).memory.fits
    assert "s a step over PCIe" in swap[0].cost and "waited for" in swap[0].cost


def test_other_trainers_are_not_offered_a_block_swap():
    plan = gpuplan.estimate({**SCENARIO, "stack": "ai-toolkit", "quant": None})
    assert not any("blocks_to_swap" in x.fields for x in plan.suggestions)
