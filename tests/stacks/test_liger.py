"""Which stacks run Liger's kernels is one fact of each stack's profile (``Stack.liger``), read by the memory
(``Stack.fused``), the speed (``stacks/speedups.kernels``), the fake-tensor emulation (``sim/stacks.fused_kernels``)
and the probe (``sim/real.backends``). Before, the last three each named the stacks themselves, and the speed and
the probe read Liger's loss where the memory and the emulation read its kernels (axolotl with another loss)."""

from __future__ import annotations

import inspect
import re

import pytest

from gpuplan.scenario import scenario_from
from gpuplan.sim import real
from gpuplan.sim import stacks as sim_stacks
from gpuplan.stacks import STACKS, speedups

LIGER = "Liger: Triton RMSNorm/RoPE/SwiGLU"


def test_the_profiles_say_which_stacks_run_liger():
    # Trainer(use_liger_kernel=True) and your own loop's _apply_liger_kernel_to_instance with loss fused-linear;
    # axolotl's Liger plugin (liger_rope, liger_rms_norm, liger_glu_activation) whatever the loss
    assert {n: STACKS[n].liger for n in STACKS if STACKS[n].liger} == {"hf": "loss", "pytorch": "loss",
                                                                       "axolotl": "plugin"}


@pytest.mark.parametrize("stack", list(STACKS))
@pytest.mark.parametrize("loss", ["full", "chunked", "fused-linear"])
def test_memory_speed_emulation_and_probe_agree_on_liger(stack, loss):
    s = scenario_from({"model": "llama-3.1-8b", "task": "train", "method": "lora", "stack": stack, "loss": loss})
    profile = STACKS[stack]
    # the rule each of the three wrote before (sim/real._liger, stacks/speedups.kernels, sim/stacks.fused_kernels)
    liger_loss = loss == "fused-linear" and stack in ("hf", "pytorch", "axolotl")
    liger_kernels = stack == "axolotl" or liger_loss
    assert profile.liger_loss(s) is liger_loss and profile.liger_kernels(s) is liger_kernels
    probe = any(b.part == "fused kernels" and b.runs.startswith("Liger") for b in real.backends(s, lambda _: True))
    assert probe is liger_kernels
    assert (LIGER in profile.kernels(s).why) is liger_kernels
    assert sim_stacks.fused_kernels(s) is (liger_kernels or stack == "unsloth")
    assert profile.fused(s) is (liger_kernels or stack == "unsloth")
    # the speed's fused norms and MLP are the memory's (nothing compiled, one GPU, bf16: no other cause)
    assert profile.kernels(s).fused_elementwise is profile.fused(s)


def test_axolotls_plugin_kernels_speed_its_step_whatever_the_loss():
    # axolotl's Liger plugin runs liger_rope, liger_rms_norm and liger_glu_activation with the full loss too: the
    # speed counts them as the memory does (before, its speed read Liger's loss and left them out)
    s = scenario_from({"model": "llama-3.1-8b", "task": "train", "method": "lora", "stack": "axolotl",
                       "loss": "full"})
    hf = scenario_from({"model": "llama-3.1-8b", "task": "train", "method": "lora", "stack": "hf", "loss": "full"})
    assert STACKS["axolotl"].kernels(s).fused_elementwise and LIGER in STACKS["axolotl"].kernels(s).why
    assert not STACKS["hf"].kernels(hf).fused_elementwise


def test_no_reader_names_the_stacks_that_run_liger():
    names = "|".join(re.escape(n) for n in STACKS if STACKS[n].liger)
    for function in (real._liger, sim_stacks.fused_kernels, speedups.kernels):
        lines = [line for line in inspect.getsource(function).splitlines() if "liger" in line.lower()]
        assert lines and not any(re.search(rf"""["'](?:{names})["']""", line) for line in lines), function
