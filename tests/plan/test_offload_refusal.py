"""Offloading the plan's sharding has no switch for is refused where every "cannot run" is
(gpuplan/plan/refusals.py ``offload_refusal``), so that estimate, recommend and launch answer alike (s20 walk: a
student with 4 RTX 3090s asked ``estimate --sharding fsdp --offload optimizer`` and got 28.6 GiB per GPU planned
and the changes that would make it fit, while ``launch`` refused the same plan: FSDP has no optimizer-only
offload)."""

from __future__ import annotations

import pytest

import gpuplan
from gpuplan.cli import run
from gpuplan.errors import GpuplanError

JOB = {"model": "qwen3-8b", "task": "train", "method": "full", "train_tokens": 1e7, "seq_len": 2048,
       "gpu": "rtx-3090", "num_gpus": 4, "grad_checkpointing": "full"}


@pytest.mark.parametrize("sharding", ["fsdp", "fsdp1", "fsdp2"])
def test_fsdp_with_the_optimizer_offloaded_alone_is_refused(sharding, capsys):
    with pytest.raises(GpuplanError, match="FSDP offloads parameters, gradients and optimizer states together"):
        gpuplan.estimate({**JOB, "sharding": sharding, "offload": "optimizer"})
    args = [f"--{k.replace('_', '-')}={v}" for k, v in {**JOB, "sharding": sharding, "offload": "optimizer"}.items()]
    assert run(["estimate", *args]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: FSDP offloads") and err.count("\n") == 1 and "Traceback" not in err


def test_ddp_with_an_offload_is_refused_and_its_fix_is_zero2_offload():
    with pytest.raises(GpuplanError, match="offloading with DDP needs DeepSpeed ZeRO"):
        gpuplan.estimate({**JOB, "sharding": "ddp", "offload": "optimizer"})
    plan = gpuplan.estimate({**JOB, "grad_checkpointing": "none"})  # DDP by default on 4 GPUs: 200+ GiB
    assert plan.setup.scenario.sharded_by == "ddp" and not plan.memory.fits
    offload = [(x.change.split(":")[0], x.fields) for x in plan.suggestions
               if x.change.startswith("offload the optimizer")]
    assert offload == [("offload the optimizer to CPU (DeepSpeed ZeRO-2 offload)",
                        {"offload": "optimizer", "sharding": "zero2"})]


def test_what_runs_still_plans():
    """ZeRO-3 with the optimizer offloaded (DeepSpeed ZeRO-Offload) and FSDP with everything offloaded run; one GPU
    offloads through DeepSpeed; torchtune's single-device recipe takes torchao's CPUOffloadOptimizer."""
    zero3 = gpuplan.estimate({**JOB, "sharding": "zero3", "offload": "optimizer"})
    # the bf16 parameters' quarter on the card (8,190,735,360 x 2 B / 4), the fp32 master and AdamW's on the CPU
    assert zero3.memory.fits and zero3.memory.weights_gib == pytest.approx(8_190_735_360 * 2 / 4 / 2**30, rel=1e-3)
    assert zero3.memory.optimizer_gib == 0
    assert gpuplan.estimate({**JOB, "sharding": "fsdp", "offload": "optimizer+params"}).memory.device_peak_gib > 0
    one = gpuplan.estimate({**JOB, "num_gpus": 1, "method": "lora", "offload": "optimizer"})
    assert one.setup.scenario.sharded_by == "single"
