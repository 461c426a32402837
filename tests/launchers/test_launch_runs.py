"""Issue 32: launch files that start and train well, from the plan.

- a plan of more GPUs than one instance holds is written as nodes x GPUs per node (torchrun, accelerate, SkyPilot);
- a local model folder, tokenizer and dataset are written as absolute paths, which sky.yaml copies to the same
  paths on every node;
- a size-only model pretrains on a pretraining stack (torchtitan, or Megatron-LM when asked), never an SFT trainer:
  torchtitan builds the model gpuplan counted (built here on the meta device), with GPT-3's ~1M-token batches and
  a step count that covers train_tokens; Megatron takes NullTokenizer on mock data;
- a small chat set gets a batch in examples, at least MIN_STEPS optimizer steps, the epochs suggested, and the loss
  on the assistant turns.
"""

from __future__ import annotations

import json
import math
import random
import shutil
from pathlib import Path

import pytest
import tomllib
import yaml

from gpuplan.errors import GpuplanError
from gpuplan.launchers import launch_files, launch_plan
from gpuplan.launchers.settings import LaunchOptions
from gpuplan.plan.batch import MIN_STEPS

DATA = Path(__file__).parents[1] / "data"
PRETRAIN = dict(model_size="3B", task="train", method="full", gpu="h100-sxm", num_gpus=16, seq_len=2048,
                train_tokens=3e11)


def files_of(scenario: dict, targets=None, **options) -> dict[str, str]:
    plan = launch_plan(scenario)
    return {f.name: f.text for f in launch_files(plan, targets, LaunchOptions(**options))}


def body(text: str) -> dict:
    return yaml.safe_load(text)


# ---- nodes x GPUs per node ----------------------------------------------------------------------------------
def test_sixteen_h100_are_two_nodes_of_eight():
    """The review's repro: --num-gpus 16 of H100 SXM (whose instances hold 8) is 2 nodes x 8 in every file."""
    plan = launch_plan(dict(model="llama-3.1-8b", task="train", gpu="h100-sxm", num_gpus=16, sharding="zero2",
                            train_tokens=1e9))
    assert (plan.scenario.num_gpus, plan.scenario.num_nodes, plan.scenario.world_size) == (8, 2, 16)
    assert any("16 GPUs as 2 nodes x 8" in d for d in plan.result.defaults)
    files = {f.name: f.text for f in launch_files(plan, None, LaunchOptions())}
    torchrun = files["torchrun.sh"]
    assert "--nproc-per-node 8" in torchrun and "--nnodes 2" in torchrun and "--rdzv-backend c10d" in torchrun
    sky = body(files["sky.yaml"])
    assert sky["num_nodes"] == 2 and sky["resources"]["accelerators"].endswith(":8")
    accel = body(files["accelerate.yaml"])
    assert (accel["num_machines"], accel["num_processes"]) == (2, 16)
    assert plan.offer is not None and plan.usd_per_hour  # priced, as recommend prices 16 GPUs


def test_nodes_set_by_hand_are_kept():
    plan = launch_plan(dict(model="llama-3.1-8b", task="train", gpu="h100-sxm", num_gpus=4, num_nodes=2,
                            sharding="zero2", train_tokens=1e9))
    assert (plan.scenario.num_gpus, plan.scenario.num_nodes) == (4, 2)


def test_estimate_and_cost_place_sixteen_h100_as_launch_does():
    """One road: estimate and cost place --num-gpus 16 of H100 SXM on 2 nodes x 8 before they build the plan, so it
    is priced (it said "no price": no instance holds 16) on the links between nodes, exactly as the same job with
    its nodes set by hand; the bill is 16 x the offer's own $/GPU-hour."""
    from gpuplan.api import cost, estimate

    job = dict(model="llama-3.1-8b", task="train", gpu="h100-sxm", sharding="zero2", train_tokens=1e9)
    plan = estimate({**job, "num_gpus": 16}, advise=False)
    by_hand = estimate({**job, "num_gpus": 8, "num_nodes": 2}, advise=False)
    s = plan.setup.scenario
    assert (s.num_gpus, s.num_nodes) == (8, 2)
    assert any("16 GPUs as 2 nodes x 8" in d for d in plan.setup.defaults)
    assert plan.cost is not None and plan.offer is not None and plan.offer.inter_node != "none"
    assert plan.cost.usd_per_hour == pytest.approx(16 * plan.offer.usd_per_gpu_hour)
    assert plan.speed.tokens_per_s == by_hand.speed.tokens_per_s
    assert (plan.cost.offer, plan.cost.usd_total) == (by_hand.cost.offer, by_hand.cost.usd_total)
    rows = cost({**job, "num_gpus": 16}).rows
    assert rows and all(r.num_gpus == 16 for r in rows)
    assert (rows[0].offer, rows[0].usd_total) == (plan.cost.offer, pytest.approx(plan.cost.usd_total))


# ---- local paths ----------------------------------------------------------------------------------------------
@pytest.fixture()
def local_model(tmp_path) -> Path:
    folder = tmp_path / "qwen3-14b"
    folder.mkdir()
    shutil.copy(DATA / "launch" / "qwen3-14b-config.json", folder / "config.json")
    return folder


def chat_file(path: Path, records: int) -> Path:
    """``records`` short chats (system, user, assistant), seeded."""
    rng = random.Random(0)
    words = ["the", "a", "model", "train", "data", "token", "batch", "step", "loss", "plan", "card", "memory", "speed"]
    with path.open("w") as out:
        for _ in range(records):
            turns = [{"role": "system", "content": "You help."},
                     {"role": "user", "content": " ".join(rng.choices(words, k=rng.randint(5, 30)))},
                     {"role": "assistant", "content": " ".join(rng.choices(words, k=rng.randint(10, 60)))}]
            out.write(json.dumps({"messages": turns}) + "\n")
    return path


def test_local_model_folder_is_its_absolute_path(local_model, monkeypatch):
    """The review's bug: a local folder became its basename ('qwen3-14b'). Relative to where gpuplan ran, it is
    written as its absolute path, and sky.yaml copies it there on every node."""
    monkeypatch.chdir(local_model.parent)
    scenario = dict(model="./qwen3-14b", task="train", method="qlora", gpu="a100-sxm4-80gb", train_tokens=1e7)
    files = files_of({**scenario, "stack": "unsloth"}, ["unsloth"])
    assert f"'model_name': {str(local_model)!r}" in files["unsloth_train.py"]
    files = files_of(scenario, ["trainer", "skypilot"])
    assert body(files["trainer.yaml"])["model_name_or_path"] == str(local_model)
    assert body(files["sky.yaml"])["file_mounts"] == {str(local_model): str(local_model)}


def test_sky_yaml_never_copies_the_home_folder(local_model, monkeypatch):
    """A config.json kept in the home folder made the home folder the model's folder, and sky.yaml copied it whole
    to every rented node (file_mounts: keys and credentials with it; s20-sec). The home folder, a folder above it
    and / are refused for --target skypilot and left out of the default targets; a folder inside home is copied."""
    top, home = local_model.parent, local_model.parent / "user"
    inside = home / "models" / "qwen3-14b"
    inside.mkdir(parents=True)
    for folder in (top, home, inside):
        shutil.copy(local_model / "config.json", folder / "config.json")
    monkeypatch.setenv("HOME", str(home))
    scenario = dict(task="train", method="qlora", gpu="a100-sxm4-80gb", train_tokens=1e7)
    for model, what in ((home / "config.json", "the home folder"), (home, "the home folder"),
                        (top, "above the home folder")):
        with pytest.raises(GpuplanError, match=f"--target skypilot does not apply: the model's folder .* is {what}, "
                           "and SkyPilot copies an input's folder whole to every node"):
            files_of({**scenario, "model": str(model)}, ["skypilot"])
        assert "sky.yaml" not in files_of({**scenario, "model": str(model)})  # the default targets leave it out
    files = files_of({**scenario, "model": str(inside / "config.json")}, ["skypilot"])
    assert body(files["sky.yaml"])["file_mounts"] == {str(inside): str(inside)}


def test_local_dataset_and_tokenizer_are_absolute(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    chat_file(tmp_path / "chat.jsonl", 40)
    shutil.copy(DATA / "web" / "tokenizer.json", tmp_path / "tokenizer.json")
    scenario = dict(model="qwen2.5-0.5b", task="train", method="lora", gpu="l40s", dataset="chat.jsonl",
                    tokenizer="tokenizer.json")
    files = files_of(scenario, ["trainer", "skypilot"], dataset="chat.jsonl")
    entry = body(files["trainer.yaml"])["datasets"][0]
    assert entry["data_files"] == str(tmp_path / "chat.jsonl")
    mounts = body(files["sky.yaml"])["file_mounts"]
    assert mounts == {str(tmp_path / "chat.jsonl"): str(tmp_path / "chat.jsonl"),
                      str(tmp_path / "tokenizer.json"): str(tmp_path / "tokenizer.json")}


# ---- pretraining ----------------------------------------------------------------------------------------------
def test_size_only_model_pretrains_on_torchtitan():
    """The review's repro: --model-size 3B --method full on 16 H100 writes torchtitan (never trl sft), 2 nodes x 8,
    ~1M-token batches (GPT-3's 1M at 2.7B) and the steps that cover train_tokens."""
    plan = launch_plan(PRETRAIN)
    assert plan.scenario.stack == "torchtitan" and plan.scenario.num_nodes == 2
    files = {f.name: f.text for f in launch_files(plan, None, LaunchOptions())}
    assert not {"trainer.yaml", "accelerate.yaml", "torchrun.sh"} & set(files)
    toml = tomllib.loads(files["torchtitan.toml"])
    training = toml["training"]
    tokens_per_step = training["global_batch_size"] * training["seq_len"]
    assert 0.9e6 <= tokens_per_step <= 1.1e6
    assert training["steps"] == math.ceil(3e11 / tokens_per_step)
    assert toml["model"]["name"] == "gpuplan" and toml["experimental"]["custom_import"] == "gpuplan_model"
    assert toml["lr_scheduler"]["decay_type"] == "cosine" and toml["lr_scheduler"]["lr_min"] == 0.1
    assert toml["lr_scheduler"]["warmup_steps"] == math.ceil(375e6 / tokens_per_step)  # GPT-3's warm-up
    assert toml["parallelism"]["data_parallel_shard_degree"] == 16
    assert "hf-internal-testing/llama-tokenizer" in files["torchtitan-run.sh"]


def test_torchtitan_builds_the_model_gpuplan_counted():
    """gpuplan_model.py's flavor, built by torchtitan's own Transformer on the meta device with the synthetic
    model's 32,000-token vocabulary, has exactly the parameters gpuplan counted."""
    torch = pytest.importorskip("torch")
    pytest.importorskip("torchtitan")
    from torchtitan.models.llama3 import Transformer, TransformerModelArgs

    plan = launch_plan(PRETRAIN)
    namespace: dict = {}
    module = next(f.text for f in launch_files(plan, ["torchtitan"], LaunchOptions()) if f.name == "gpuplan_model.py")
    exec(module.split("\nimport dataclasses")[0], namespace)  # MODEL and DATA, before the imports that register
    args = TransformerModelArgs(**namespace["MODEL"], vocab_size=32_000)
    with torch.device("meta"):
        model = Transformer(args)
    assert sum(p.numel() for p in model.parameters()) == plan.model.params_total


def test_megatron_size_only_model_takes_null_tokenizer():
    """No '--tokenizer-model synthetic-3b': a size-only model on mock data takes NullTokenizer, random init, the
    recipe's warm-up and cosine decay over the run, 2 nodes x 8."""
    script = files_of({**PRETRAIN, "stack": "megatron"}, ["megatron"])["megatron-pretrain.sh"]
    assert "synthetic-3b" not in script.split("set -euo pipefail")[1]
    for flag in ("--tokenizer-type NullTokenizer", "--mock-data", "--lr-decay-style cosine", "--init-method-std 0.02",
                 "--nproc-per-node 8", "--nnodes 2"):
        assert flag in script
    assert "--lr-warmup-iters" in script and "--lr-decay-iters" in script


def test_megatron_tokenizes_a_local_text_file(tmp_path):
    """A local file of text records is tokenized by preprocess_data.py into the indexed dataset --data-path reads,
    with the tokenizer's folder."""
    data = tmp_path / "corpus.jsonl"
    data.write_text("".join(json.dumps({"text": f"document {i} " * 50}) + "\n" for i in range(200)))
    shutil.copy(DATA / "web" / "tokenizer.json", tmp_path / "tokenizer.json")
    script = files_of({**PRETRAIN, "stack": "megatron", "dataset": str(data), "tokenizer":
                       str(tmp_path / "tokenizer.json")}, ["megatron"])["megatron-pretrain.sh"]
    assert f"tools/preprocess_data.py \\\n    --input {data}" in script
    assert f"--tokenizer-model {tmp_path}" in script and "--data-path data/gpuplan_text_document" in script
    assert "--mock-data" not in script


def test_sky_task_runs_megatron_from_the_captured_commit(tmp_path):
    """SkyPilot runs a Megatron plan (it refused one): NVIDIA's PyTorch container Megatron-LM's CI uses, Megatron-LM
    checked out at the commit whose parser the tests read, the text file tokenized there, pretrain_gpt.py with
    SkyPilot's rendezvous on 2 nodes x 8, and on spot with a bucket saving to and loading from /checkpoints (last
    flag wins in argparse); the arguments after pretrain_gpt.py are megatron-pretrain.sh's."""
    import shlex

    data = tmp_path / "corpus.jsonl"
    data.write_text("".join(json.dumps({"text": f"document {i} " * 50}) + "\n" for i in range(200)))
    shutil.copy(DATA / "web" / "tokenizer.json", tmp_path / "tokenizer.json")
    job = {**PRETRAIN, "stack": "megatron", "dataset": str(data), "tokenizer": str(tmp_path / "tokenizer.json"),
           "pricing": "spot"}
    files = files_of(job, ["skypilot", "megatron"], bucket="ckpt")
    sky = body(files["sky.yaml"])
    commit = json.loads((DATA / "megatron" / "pretrain-args.json").read_text())["source"].split("@")[1].split()[0]
    assert sky["resources"]["image_id"] == "docker:nvcr.io/nvidia/pytorch:26.06-py3"
    assert sky["num_nodes"] == 2 and sky["resources"]["accelerators"].endswith(":8") and sky["resources"]["use_spot"]
    assert f"checkout {commit}" in sky["setup"].replace("\\\n", " ").replace("  ", "")
    assert sky["envs"] == {"PIP_CONSTRAINT": ""} and sky["file_mounts"][str(data)] == str(data)
    lines = shlex.split(sky["run"].replace("\\\n", " "), comments=False)
    assert lines[:2] == ["cd", "megatron-lm"] and "tools/preprocess_data.py" in lines
    argv = lines[lines.index("pretrain_gpt.py") + 1:]
    assert "$SKYPILOT_NODE_RANK" in lines and argv[-4:] == ["--save", "/checkpoints", "--load", "/checkpoints"]
    script = files["megatron-pretrain.sh"]
    alone = shlex.split(script[script.index("\ntorchrun") + 1:].replace("\\\n", " "))
    assert argv[:-4] == alone[alone.index("pretrain_gpt.py") + 1:]


def test_sky_task_refuses_megatron_lora_saying_nemo():
    with pytest.raises(GpuplanError, match="launch --target nemo"):
        files_of(dict(model="llama-3.1-8b", task="train", stack="megatron", method="lora", gpu="h100-sxm",
                      num_gpus=8), ["skypilot"])


def test_explicit_hf_stack_for_pretraining_is_refused():
    with pytest.raises(GpuplanError, match="pretrain"):
        files_of({**PRETRAIN, "stack": "hf"}, ["trainer"])


# ---- the recipe in examples -----------------------------------------------------------------------------------
def test_small_chat_set_gets_enough_steps_and_assistant_loss(tmp_path):
    """300 chats at the defaults: at least MIN_STEPS optimizer steps at a batch of examples, 3 epochs suggested
    (Alpaca/Vicuna/Guanaco), the loss on the assistant turns in every stack's own switch."""
    data = chat_file(tmp_path / "chat.jsonl", 300)
    scenario = dict(model="qwen2.5-0.5b", task="train", method="lora", gpu="l40s", dataset=str(data),
                    tokenizer=str(DATA / "web" / "tokenizer.json"))
    plan = launch_plan(scenario)
    r = plan.recipe
    assert r.steps >= MIN_STEPS and r.examples_per_step * r.steps >= 300
    assert r.suggested_epochs == 3.0 and r.assistant_only
    assert any(c.name == "epochs" and "3 suggested for 300 examples" in c.value for c in r.choices)
    trainer = body(files_of(scenario, ["trainer"], dataset=str(data))["trainer.yaml"])
    assert trainer["assistant_only_loss"] is True
    rows = trainer["per_device_train_batch_size"] * trainer["gradient_accumulation_steps"]
    assert math.ceil(trainer["num_train_epochs"] * 300 / rows) >= MIN_STEPS  # what the Trainer will count


@pytest.mark.parametrize("model", ["llama-3.2-1b", "mistral-7b"])
def test_a_chat_template_trl_cannot_mark_trains_every_token_as_the_recipe_says(tmp_path, model):
    """The s30 walk: QLoRA files for Mistral-7B (or any Llama 3.1/3.2) on a chat JSONL set ``assistant_only_loss:
    true``, and TRL 1.16's SFTTrainer stops at start: get_training_chat_template patches only the templates it ships
    (Qwen2.5/3, Gemma 2/3, Llama 3.0, Phi-3, gpt-oss, ...; llama3_1.jinja has no training variant) and raises 'The
    chat template is not training-compatible' for the others. Those files train on every token, and the recipe that
    the estimate and launch print says so; the hf and Unsloth files alike (both run TRL's SFTTrainer)."""
    data = chat_file(tmp_path / "chat.jsonl", 300)
    scenario = dict(model=model, task="train", method="qlora", gpu="l40s", dataset=str(data),
                    tokenizer=str(DATA / "web" / "tokenizer.json"))
    r = launch_plan(scenario).recipe
    assert not r.assistant_only
    said = next(c for c in r.choices if c.name == "loss on")
    assert said.value == "every token" and "has no {% generation %} patch for" in said.why
    for stack, name in (("hf", "trainer.yaml"), ("unsloth", "unsloth_train.py")):
        files = files_of({**scenario, "stack": stack}, ["trainer"] if stack == "hf" else ["unsloth"],
                         dataset=str(data))
        code = [line for line in files[name].splitlines() if not line.lstrip().startswith("#")]
        assert not any("assistant_only_loss" in line for line in code)


def test_packed_rows_carry_the_batch_in_examples(tmp_path):
    """With packing, the recipe's 16 examples are 16 / (examples per row) rows per step, not 16 packed rows (the
    review's 40 steps for 2 epochs of 2,000 chats)."""
    data = chat_file(tmp_path / "chat.jsonl", 2000)
    scenario = dict(model="qwen2.5-0.5b", task="train", method="lora", gpu="l40s", dataset=str(data),
                    tokenizer=str(DATA / "web" / "tokenizer.json"), seq_len=512, packing="bfd", epochs=2)
    plan = launch_plan(scenario)
    r, rows = plan.recipe, plan.result.dataset["packed_sequences"]
    per_row = 2000 / rows
    assert per_row > 2  # short chats: several to a row
    assert r.examples_per_step == 16 and r.global_batch == max(1, round(16 / per_row)) > 1
    assert r.effective_batch == r.global_batch and r.steps == math.ceil(2 * rows / r.global_batch)
    assert r.steps == pytest.approx(2 * 2000 / 16, rel=0.25)  # 2 epochs of 2,000 at 16 examples, within rounding

