"""DPO launch files: stack hf's ``trainer.yaml`` read by TRL 1.16's own DPO parser (``trl.scripts.dpo.make_parser``:
``ScriptArguments``, ``DPOConfig``, ``ModelConfig``) and the launch scripts running ``-m trl.scripts.dpo``; axolotl's
``rl: dpo`` config against its captured schema and through axolotl 0.18.0's own ``validate_config``; Unsloth's
script's ``DPOConfig`` built by TRL and its DPOTrainer call read back."""

from __future__ import annotations

import json

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


# ---- axolotl ----------------------------------------------------------------------------------------------
AXOLOTL_DPO = {  # LoRA on one GPU (TRL's example data), full ZeRO-3 precomputed, QLoRA under FSDP1 on two cards
    "lora": {**LORA, "stack": "axolotl", "precompute_ref_log_probs": False},
    "full-zero3-precomputed": {**FULL_ZERO3, "stack": "axolotl", "precompute_ref_log_probs": True},
    "qlora-fsdp1": {**QLORA, "stack": "axolotl", "num_gpus": 2, "sharding": "fsdp1", "gpu": "l40s"},
}


def axolotl_cfg(scenario, opts=None) -> dict:
    files = {f.name: f.text for f in launch_files(launch_plan(scenario), ["axolotl"], opts or LaunchOptions())}
    return yaml.safe_load(files["axolotl.yaml"])


@pytest.mark.parametrize("name", sorted(AXOLOTL_DPO))
def test_axolotl_dpo_config_against_captured_schema(name):
    """axolotl 0.18.0's keys for DPO (docs/rlhf.qmd; DPOStrategy.set_training_args_kwargs): rl dpo, TRL's beta 0.1,
    the sigmoid loss, precompute_ref_log_probs as planned, no sample packing (check_sample_packing_w_rl), no fused
    cross-entropy (TRL's DPO head is its own), pairs per micro-batch; every key a field of the captured schema and
    the dataset's keys DPODataset's."""
    from test_launch import AXOLOTL_SCHEMA, _schema_ok

    scenario = AXOLOTL_DPO[name]
    cfg = axolotl_cfg(scenario)
    assert (cfg["rl"], cfg["rl_beta"], cfg["dpo_loss_type"]) == ("dpo", 0.1, ["sigmoid"])
    assert cfg["precompute_ref_log_probs"] is bool(scenario.get("precompute_ref_log_probs"))
    assert cfg["sample_packing"] is False and "pad_to_sequence_len" not in cfg and "train_on_inputs" not in cfg
    assert cfg["liger_fused_linear_cross_entropy"] is False and "chunked_cross_entropy" not in cfg
    assert (cfg["micro_batch_size"], cfg["sequence_len"]) == (scenario["micro_batch_size"], scenario["seq_len"])
    assert cfg["datasets"] == [{"path": "trl-lib/ultrafeedback_binarized", "split": "train",
                                "type": "chat_template.argilla_chat"}]
    fields = AXOLOTL_SCHEMA["fields"]
    for key, value in cfg.items():
        assert key in fields and _schema_ok(value, fields[key]), (key, value)
    assert set(cfg["datasets"][0]) <= set(AXOLOTL_SCHEMA["dpo_dataset"])


def test_axolotl_dpo_reads_a_local_pairs_file_and_quotes_it(tmp_path):
    """A local file of whole chosen/rejected conversations (the smoke run's, smoke.pairs) becomes
    chat_template.argilla_chat; TRL's explicit pairs (a prompt column) chat_template.default with the prompt as the
    messages; a hostile folder name round-trips through YAML."""
    from gpuplan.launchers.smoke import pairs

    folder = tmp_path / "me: 'x' # y"
    folder.mkdir()
    implicit, explicit = folder / "pairs.jsonl", folder / "explicit.jsonl"
    implicit.write_text("".join(json.dumps(p) + "\n" for p in pairs(2)))
    explicit.write_text("".join(json.dumps({"prompt": p["chosen"][:-1], "chosen": p["chosen"][-1:],
                                            "rejected": p["rejected"][-1:]}) + "\n" for p in pairs(2)))
    one = axolotl_cfg(AXOLOTL_DPO["lora"], LaunchOptions(dataset=str(explicit)))["datasets"]
    assert one == [{"path": "json", "split": "train", "data_files": [str(explicit)], "type": "chat_template.default",
                    "field_messages": "prompt", "field_chosen": "chosen", "field_rejected": "rejected"}]
    two = axolotl_cfg(AXOLOTL_DPO["lora"], LaunchOptions(dataset=str(implicit)))["datasets"]
    assert two == [{"path": "json", "split": "train", "data_files": [str(implicit)],
                    "type": "chat_template.argilla_chat"}]


def test_axolotl_dpo_refuses_quantized_loading_under_fsdp2():
    """axolotl 0.18.0's check_fsdp2_base_model_quant_rl: no 4-bit or 8-bit base under FSDP2 with rl: dpo."""
    plan = launch_plan({**AXOLOTL_DPO["qlora-fsdp1"], "sharding": "fsdp2"})
    with pytest.raises(GpuplanError, match=r"axolotl refuses 4-bit or 8-bit loading under FSDP2 with rl: dpo"):
        targets_for(plan, ["axolotl"])


@pytest.mark.slow
def test_axolotl_dpo_through_axolotls_validate_config(tmp_path):
    """axolotl 0.18.0's own validate_config (a no-deps install in the user's cache, as test_launch_stacks runs it)
    accepts each DPO file, knows every key and keeps rl, beta, the loss, the precompute switch and the pairs."""
    from test_launch_stacks import AXOLOTL_READ, AXOLOTL_VERSION, cached_packages, child

    path = cached_packages(f"axolotl-{AXOLOTL_VERSION}", [f"axolotl=={AXOLOTL_VERSION}", "addict"])
    jobs = []
    for name, scenario in AXOLOTL_DPO.items():
        plan = launch_plan(scenario)
        write(launch_files(plan, ["axolotl"]), tmp_path / name)
        major, minor = (plan.gpu.compute_capability or "8.0").split(".")
        jobs.append([str(tmp_path / name), {"bf16": True, "fp8": False, "tf32": True, "n_gpu": plan.scenario.world_size,
                                            "n_node": 1, "compute_capability": f"sm_{major}{minor}"}])
    read = child(AXOLOTL_READ, [json.dumps(jobs)], tmp_path, path)
    for (folder, _), scenario in zip(jobs, AXOLOTL_DPO.values(), strict=True):
        got = read[folder]
        cfg = got["config"]
        assert got["unknown"] == []
        assert (cfg["rl"], cfg["rl_beta"], cfg["dpo_loss_type"]) == ("dpo", 0.1, ["sigmoid"])
        assert cfg["precompute_ref_log_probs"] is bool(scenario.get("precompute_ref_log_probs"))
        assert cfg["micro_batch_size"] == scenario["micro_batch_size"] and not cfg["sample_packing"]
        assert cfg["datasets"][0]["type"] == "chat_template.argilla_chat"


# ---- Unsloth ----------------------------------------------------------------------------------------------
UNSLOTH_DPO = {**QLORA, "stack": "unsloth", "gpu": "l4"}


def test_unsloth_dpo_script_builds_trls_dpoconfig(tmp_path, monkeypatch):
    """The script imports Unsloth first and calls PatchDPOTrainer() before TRL (Unsloth's DPO docs), builds TRL
    1.16's own DPOConfig from its TRAIN literal with the plan's pairs, length, beta, loss and precompute switch,
    and runs DPOTrainer with ref_model=None (the adapters off: no copy, as planned) on TRL's preference example."""
    import ast

    import transformers.training_args as ta
    from test_launch_stacks import read_unsloth
    from transformers import TrainingArguments
    from trl import DPOConfig

    plan = launch_plan(UNSLOTH_DPO)
    write(launch_files(plan, ["unsloth"]), tmp_path)
    read = read_unsloth(tmp_path)
    source = (tmp_path / "unsloth_train.py").read_text()
    lines = source.splitlines()
    assert lines.index("PatchDPOTrainer()") < lines.index("from trl import DPOConfig, DPOTrainer")
    assert lines.index("from unsloth import FastLanguageModel, PatchDPOTrainer  # first: Unsloth patches "
                       "transformers and TRL") < lines.index("PatchDPOTrainer()")
    call = next(n for n in ast.walk(ast.parse(source)) if isinstance(n, ast.Call) and ast.unparse(n.func) ==
                "DPOTrainer")
    assert {k.arg: ast.unparse(k.value) for k in call.keywords}["ref_model"] == "None"
    assert read["DATASET"] == "trl-lib/ultrafeedback_binarized"
    monkeypatch.setattr(ta, "is_torch_bf16_gpu_available", lambda: True)
    monkeypatch.setattr(TrainingArguments, "world_size", property(lambda self: 1))
    monkeypatch.chdir(tmp_path)
    args = DPOConfig(**read["TRAIN"])
    s = plan.scenario
    assert (args.per_device_train_batch_size, args.max_length, args.beta, args.loss_type) == (
        s.micro_batch_size, s.seq_len, 0.1, ["sigmoid"])
    assert args.precompute_ref_log_probs is False and "packing" not in read["TRAIN"]
    assert read["LOAD"]["load_in_4bit"] is True and read["return_logits"] is False


def test_unsloth_dpo_quotes_the_dataset(tmp_path):
    from test_launch_stacks import read_unsloth

    hostile = "me/prefs\"); import os; ('"
    write(launch_files(launch_plan(UNSLOTH_DPO), ["unsloth"], LaunchOptions(dataset=hostile)), tmp_path)
    assert read_unsloth(tmp_path)["DATASET"] == hostile


# ---- torchtune --------------------------------------------------------------------------------------------
TUNE_DPO = {  # torchtune 0.6.1's three DPO recipes
    "lora_dpo_single_device": dict(model="llama-3.1-8b", task="train", stack="torchtune", method="lora",
                                   train_objective="dpo", gpu="h100", seq_len=1024, micro_batch_size=2),
    "lora_dpo_distributed": dict(model="llama-3.2-1b", task="train", stack="torchtune", method="lora",
                                 train_objective="dpo", gpu="l40s", num_gpus=2, sharding="fsdp", seq_len=1024),
    "full_dpo_distributed": dict(model="llama-3.1-8b", task="train", stack="torchtune", method="full",
                                 train_objective="dpo", gpu="h100", num_gpus=8, sharding="fsdp", seq_len=2048,
                                 micro_batch_size=1),
}


def tune_cfg(scenario, opts=None) -> tuple[str, dict]:
    files = {f.name: f.text for f in launch_files(launch_plan(scenario), ["torchtune"], opts or LaunchOptions())}
    return files["tune-run.sh"], yaml.safe_load(files["torchtune.yaml"])


@pytest.mark.parametrize("recipe", sorted(TUNE_DPO))
def test_torchtune_dpo_config_against_captured_signatures(recipe):
    """torchtune 0.6.1's DPO recipe for the layout (its registry: tests/data/torchtune), every component's keys
    parameters of that component (preference_dataset, DPOLoss captured from torchtune), DPOLoss at TRL's beta 0.1,
    pairs per batch, TRL's preference example as the data, and full DPO's reference loaded by its own
    ref_checkpointer from the same checkpoint (recipes/configs/llama3_1/8B_full_dpo.yaml)."""
    from test_launch import TUNE_SIGNATURES

    scenario = TUNE_DPO[recipe]
    script, cfg = tune_cfg(scenario)
    assert f"{recipe} \\\n    --config torchtune.yaml" in script and recipe in TUNE_SIGNATURES["recipes"]
    components = TUNE_SIGNATURES["components"]
    for key, node in cfg.items():
        if isinstance(node, dict) and "_component_" in node:
            sig = components[node["_component_"]]
            assert sig["var_keyword"] or not set(node) - {"_component_"} - set(sig["parameters"]), key
    assert cfg["loss"] == {"_component_": "torchtune.rlhf.loss.DPOLoss", "beta": 0.1, "label_smoothing": 0.0}
    assert cfg["dataset"] == {"_component_": "torchtune.datasets.preference_dataset",
                              "source": "trl-lib/ultrafeedback_binarized", "split": "train"}
    assert cfg["batch_size"] == scenario.get("micro_batch_size", launch_plan(scenario).scenario.micro_batch_size)
    assert cfg["tokenizer"]["max_seq_len"] == scenario["seq_len"]
    assert ("ref_checkpointer" in cfg) is (scenario["method"] == "full")
    if "ref_checkpointer" in cfg:
        assert cfg["ref_checkpointer"] == cfg["checkpointer"]


def test_torchtune_dpo_quotes_the_dataset_for_omegaconf(tmp_path):
    """tune run reads the config with OmegaConf: a dataset name holding an interpolation and quotes comes back as
    written, not resolved."""
    from omegaconf import OmegaConf

    hostile = "me/prefs ${oc.env:HOME} 'x' \"y\""
    write(launch_files(launch_plan(TUNE_DPO["lora_dpo_single_device"]), ["torchtune"], LaunchOptions(dataset=hostile)),
          tmp_path)
    cfg = OmegaConf.to_container(OmegaConf.load(tmp_path / "torchtune.yaml"), resolve=True)
    assert cfg["dataset"]["source"] == hostile


def test_torchtune_dpo_refusals(tmp_path):
    """In one sentence each: an explicit-prompt pairs file (preference_dataset reads whole conversations), a
    precomputed reference, full DPO on one GPU."""
    from gpuplan.launchers.smoke import pairs

    explicit = tmp_path / "explicit.jsonl"
    explicit.write_text("".join(json.dumps({"prompt": p["chosen"][:-1], "chosen": p["chosen"][-1:],
                                            "rejected": p["rejected"][-1:]}) + "\n" for p in pairs(2)))
    with pytest.raises(GpuplanError, match=r"preference_dataset reads whole chosen and rejected conversations"):
        launch_files(launch_plan(TUNE_DPO["lora_dpo_single_device"]), ["torchtune"],
                     LaunchOptions(dataset=str(explicit)))
    with pytest.raises(GpuplanError, match=r"no precompute_ref_log_probs"):
        launch_plan({**TUNE_DPO["lora_dpo_single_device"], "precompute_ref_log_probs": True})
    with pytest.raises(GpuplanError, match=r"full_dpo_distributed only"):
        launch_plan({**TUNE_DPO["full_dpo_distributed"], "num_gpus": 1, "sharding": "single"})
