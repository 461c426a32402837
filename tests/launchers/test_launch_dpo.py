"""DPO launch files (stack hf): ``trainer.yaml`` read by TRL 1.16's own DPO parser (``trl.scripts.dpo.make_parser``:
``ScriptArguments``, ``DPOConfig``, ``ModelConfig``), the launch scripts running ``-m trl.scripts.dpo``, and the
refusal for the stacks whose DPO files are not written (axolotl, unsloth)."""

from __future__ import annotations

import pytest
import yaml

from conftest import read_trainer
from gpuplan.errors import GpuplanError
from gpuplan.launchers import launch_files, launch_plan, targets_for, write
from gpuplan.launchers.settings import LaunchOptions

LORA = dict(model="qwen2.5-0.5b", task="train", gpu="h100", num_gpus=1, method="lora", train_objective="dpo",
            seq_len=1024, micro_batch_size=2, grad_checkpointing="full", precompute_ref_log_probs=True)
FULL_ZERO3 = dict(model="qwen2.5-7b", task="train", gpu="h100", num_gpus=8, sharding="zero3", train_objective="dpo",
                  seq_len=2048, micro_batch_size=1, grad_checkpointing="full")
QLORA = dict(model="qwen2.5-7b", task="train", gpu="l4", num_gpus=1, method="qlora", train_objective="dpo",
             seq_len=512, micro_batch_size=1, grad_checkpointing="full")


def read_dpo(folder, monkeypatch, world_size):
    """``trainer.yaml`` through TRL's DPO parser, on an emulated bf16 GPU and ``world_size`` processes."""
    return read_trainer(folder, monkeypatch, world_size, "dpo")


@pytest.mark.parametrize("scenario", [LORA, FULL_ZERO3, QLORA], ids=["lora", "full-zero3", "qlora"])
def test_dpo_trainer_yaml_through_trl(scenario, tmp_path, monkeypatch):
    plan = launch_plan(scenario)
    write(launch_files(plan, None, LaunchOptions()), tmp_path)
    s = plan.scenario
    script, args, model = read_dpo(tmp_path, monkeypatch, s.dp)
    assert type(args).__name__ == "DPOConfig"
    assert args.beta == 0.1 and args.loss_type == ["sigmoid"]
    assert args.precompute_ref_log_probs is bool(scenario.get("precompute_ref_log_probs"))
    assert args.max_length == scenario["seq_len"]
    assert (args.per_device_train_batch_size, args.gradient_accumulation_steps) == (s.micro_batch_size,
                                                                                    s.grad_accum_steps)
    assert args.gradient_checkpointing is True and args.use_liger_kernel is False
    assert script.dataset_name == "trl-lib/ultrafeedback_binarized"
    assert model.use_peft is (s.method != "full")
    if s.method != "full":
        assert (model.lora_r, model.lora_alpha) == (s.lora_rank, 2 * s.lora_rank)
    assert model.load_in_4bit is (s.method == "qlora")
    if s.resolved_sharding == "zero3":
        assert args.hf_deepspeed_config.mismatches == []
    text = (tmp_path / "trainer.yaml").read_text()
    assert "packing" not in text and "trl.scripts.dpo" in text
    for name in ("accelerate-launch.sh", "torchrun.sh"):
        launch = (tmp_path / name).read_text()
        assert "-m trl.scripts.dpo" in launch and "trl.scripts.sft" not in launch, name


def test_dpo_keeps_the_users_script_and_quotes_the_dataset(tmp_path):
    hostile = "me/prefs: 'x' # y\n"[:-1]
    opts = LaunchOptions(dataset=hostile, script=("my_dpo.py", "--flag"))
    write(launch_files(launch_plan(LORA), None, opts), tmp_path)
    assert yaml.safe_load((tmp_path / "trainer.yaml").read_text())["dataset_name"] == hostile
    launch = (tmp_path / "accelerate-launch.sh").read_text()
    assert "my_dpo.py" in launch and "trl.scripts" not in launch.split("accelerate launch")[-1]


def test_sft_plan_still_writes_sft(tmp_path):
    write(launch_files(launch_plan({**LORA, "train_objective": "sft", "precompute_ref_log_probs": False}), None,
                       LaunchOptions()), tmp_path)
    data = yaml.safe_load((tmp_path / "trainer.yaml").read_text())
    assert data["packing"] is True and "beta" not in data and data["dataset_name"] == "trl-lib/Capybara"
    assert "-m trl.scripts.sft" in (tmp_path / "accelerate-launch.sh").read_text()


@pytest.mark.parametrize("stack", ["axolotl", "unsloth"])
def test_dpo_on_other_stacks_is_refused_in_one_sentence(stack):
    plan = launch_plan({**LORA, "stack": stack})
    with pytest.raises(GpuplanError, match=f"stack {stack}'s DPO files"):
        targets_for(plan)
