"""Every file ``gpuplan launch`` writes, read by the library that reads it in a real run, and the round trip:
scenario -> launch -> the files read back -> the same memory-relevant settings, and the same estimate.

Readers: TRL's own parser (``trl.scripts.sft.make_parser``, which builds transformers' ``TrainingArguments`` /
``SFTConfig`` and, for ZeRO plans, the Trainer's DeepSpeed config with its consistency check); accelerate's config
loader and launch path (``load_config_from_file``, ``_validate_launch_command``, the environment its launcher
hands the processes, and the ``DeepSpeedPlugin`` / ``FullyShardedDataParallelPlugin`` built from it); DeepSpeed's
``DeepSpeedConfig``; torchrun's argument parser; ``sky.Task.from_yaml``; vLLM's ``vllm serve`` parser. The training
stacks' own configs (torchtune, torchtitan, Axolotl) are read by their stacks in test_launch_stacks.py.

Where a test needs a GPU machine's answer it says so and emulates only that: a bf16-capable GPU for
``TrainingArguments`` (it refuses bf16 on a CPU) and the data-parallel world size for DeepSpeed and the Trainer
(one process here). SkyPilot is not in ``.[all]`` (see pyproject.toml): its tests run it in a virtual environment
of its own; vLLM pulls a CUDA torch, so without it its test skips and the captured parser check (test_launch.py) runs.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

import gpuplan
from conftest import one_at_a_time, read_trainer, require
from gpuplan.launchers import launch_files, launch_plan, write
from gpuplan.launchers.settings import LaunchOptions

DATA = Path(__file__).parents[1] / "data"
SKY_REASON = ("SkyPilot cannot share this environment (its click<8.2 pin conflicts with the click>=8.4 of "
              "huggingface_hub, which transformers 5 needs): it is the `skypilot` extra, outside `.[all]`")
VLLM_REASON = ("vLLM is not installed (it pulls a CUDA build of torch); test_launch.py checks the command against "
               "vLLM 0.32's parser captured in tests/data/vllm")

PLANS = {  # the layouts a launch writes: one GPU, DDP, ZeRO-2/3 (offload, bf16-true), FSDP2, two nodes
    "qlora-4090": dict(model="llama-3.1-8b", task="train", method="qlora", gpu="rtx-4090", micro_batch_size=2,
                       grad_accum_steps=8, grad_checkpointing="full", optimizer="paged-adamw-8bit",
                       train_tokens=5e7, pricing="spot"),
    "full-zero3": dict(model="llama-3.1-8b", task="train", gpu="nvidia-a100-sxm4-80gb", num_gpus=4, sharding="zero3",
                       micro_batch_size=4, grad_accum_steps=2, seq_len=4096, grad_checkpointing="full",
                       train_tokens=1e8),
    "ddp-small": dict(model="qwen2.5-0.5b", task="train", gpu="l40s", num_gpus=2, sharding="ddp", seq_len=1024,
                      micro_batch_size=4, optimizer_impl="foreach"),
    "fsdp-offload": dict(model="qwen2.5-1.5b", task="train", gpu="l40s", num_gpus=2, sharding="fsdp",
                         offload="optimizer+params", grad_checkpointing="full"),
    "fsdp2-lora-liger": dict(model="qwen2.5-7b", task="train", method="lora", gpu="l40s", num_gpus=2,
                             sharding="fsdp2", loss="fused-linear", compile=True, attention="flash"),
    "zero3-bf16-true-offload": dict(model="qwen2.5-7b", task="train", gpu="l40s", num_gpus=2, sharding="zero3",
                                    precision="bf16-true", offload="optimizer", grad_checkpointing="full"),
    "lora-2-nodes": dict(model="llama-3.1-8b", task="train", method="lora", gpu="h100-sxm5", num_gpus=8,
                         num_nodes=2, sharding="zero2", lora_rank=64, lora_targets=["q_proj", "v_proj"],
                         train_tokens=1e9, pricing="spot", provider="aws"),
    "lora-offload-1-gpu": dict(model="llama-3.1-8b", task="train", method="lora", gpu="l40s", offload="optimizer",
                               optimizer="adamw", grad_checkpointing="full"),
}
SERVE = dict(model="llama-3.1-8b", task="infer", engine="vllm", gpu="l40s", batch_size=16, prompt_tokens=4096,
             output_tokens=512, kv_cache_dtype="fp8", quant="fp8")
MULTINODE_ENV = {"MACHINE_RANK": "1", "MAIN_PROCESS_IP": "10.0.0.1", "NODE_RANK": "1", "MASTER_ADDR": "10.0.0.1"}


DEEPSPEED_PLANS = ("full-zero3", "zero3-bf16-true-offload", "lora-2-nodes", "lora-offload-1-gpu")


def _write(name: str, folder: Path):
    plan = launch_plan(PLANS[name])
    write(launch_files(plan, None, LaunchOptions(bucket="ckpt")), folder)
    return plan, folder


@pytest.fixture(params=sorted(PLANS))
def written(request, tmp_path):
    return _write(request.param, tmp_path)


@pytest.fixture(params=DEEPSPEED_PLANS)
def written_deepspeed(request, tmp_path):
    return _write(request.param, tmp_path)


def test_deepspeed_plans_are_those_with_a_ds_config(tmp_path):
    for name in PLANS:
        _, folder = _write(name, tmp_path / name)
        assert (folder / "ds_config.json").exists() == (name in DEEPSPEED_PLANS), name


def argv_of(script: Path) -> list[str]:
    """The command of a written script as bash expands it (multi-node variables set as on node 1)."""
    lines = [line for line in script.read_text().splitlines() if line and not line.startswith(("#", "set "))]
    text = " ".join(lines).replace("\\ ", " ")
    proc = subprocess.run(["bash", "-c", f'args=( {text} ); printf "%s\\0" "${{args[@]}}"'], capture_output=True,
                          text=True, env={**os.environ, **MULTINODE_ENV}, check=True)
    return proc.stdout.split("\0")[:-1]


# ---- the trainer's arguments (TRL + transformers) ---------------------------------------------------------
def test_trainer_yaml_through_trl(written, monkeypatch):
    plan, folder = written
    s = plan.scenario
    script, args, model = read_trainer(folder, monkeypatch, s.dp)
    assert type(args).__name__ == "SFTConfig"
    assert (args.per_device_train_batch_size, args.gradient_accumulation_steps) == (s.micro_batch_size,
                                                                                    s.grad_accum_steps)
    assert args.max_length == s.seq_len and args.packing is True
    assert args.gradient_checkpointing == (s.grad_checkpointing != "none")
    assert model.model_name_or_path == plan.model.name and script.dataset_name == "trl-lib/Capybara"
    assert args.max_steps == (plan.max_steps or -1)
    # the recipe, as TRL reads it (gpuplan.plan.recipe: QLoRA's for LoRA, Alpaca's for full fine-tuning)
    r = plan.recipe
    assert (args.learning_rate, args.warmup_steps, args.max_grad_norm) == (r.learning_rate, r.warmup_steps,
                                                                            r.max_grad_norm)
    assert str(getattr(args.lr_scheduler_type, "value", args.lr_scheduler_type)) == \
        {"constant": "constant_with_warmup", "cosine": "cosine"}[r.schedule]
    assert args.use_liger_kernel == (s.loss == "fused-linear") and args.torch_compile == bool(s.compile)
    if plan.save_steps is not None:
        assert args.save_steps == plan.save_steps
    if args.deepspeed:  # the Trainer's own check of ds_config.json against its arguments: no mismatch
        assert args.hf_deepspeed_config.mismatches == []
        assert args.hf_deepspeed_config.config["zero_optimization"]["stage"] == int(s.resolved_sharding[-1]) \
            if s.resolved_sharding.startswith("zero") else 1
    if s.sharding == "fsdp":
        plugin_args = args._process_fsdp_args() if hasattr(args, "_process_fsdp_args") else None
        assert args.fsdp_config["version"] == 2 and args.fsdp_config["cpu_offload"] is (s.offload != "none")
        assert plugin_args is None or plugin_args["cpu_offload"] is (s.offload != "none")


def test_quantization_and_peft_configs(monkeypatch, tmp_path):
    """TRL turns the QLoRA fields into transformers' BitsAndBytesConfig and peft's LoraConfig."""
    require("peft")
    from trl import get_peft_config, get_quantization_config

    plan = launch_plan(PLANS["qlora-4090"])
    write(launch_files(plan, ["trainer"]), tmp_path)
    _, _, model = read_trainer(tmp_path, monkeypatch, 1)
    bnb = get_quantization_config(model)
    assert bnb.load_in_4bit and bnb.bnb_4bit_quant_type == "nf4" and bnb.bnb_4bit_use_double_quant
    lora = get_peft_config(model)
    assert lora.r == 16 and lora.target_modules == "all-linear"


# ---- DeepSpeed --------------------------------------------------------------------------------------------
def test_ds_config_through_deepspeed(written_deepspeed, monkeypatch):
    plan, folder = written_deepspeed
    require("deepspeed")
    import deepspeed.comm
    from deepspeed.runtime.config import DeepSpeedConfig

    s = plan.scenario
    monkeypatch.setattr(deepspeed.comm, "get_rank", lambda *a, **k: 0)  # rank 0 of the plan's data-parallel ranks
    monkeypatch.setattr(deepspeed.comm, "get_world_size", lambda *a, **k: s.dp)
    ds = DeepSpeedConfig(str(folder / "ds_config.json"))
    assert ds.world_size == s.dp
    assert (ds.train_micro_batch_size_per_gpu, ds.gradient_accumulation_steps) == (s.micro_batch_size,
                                                                                    s.grad_accum_steps)
    assert ds.train_batch_size == s.micro_batch_size * s.grad_accum_steps * s.dp
    assert ds.gradient_clipping == plan.recipe.max_grad_norm  # the recipe's (QLoRA's 0.3 for LoRA), as the Trainer's
    assert ds.zero_optimization_stage == (int(s.resolved_sharding[-1]) if s.dp > 1 else 1)
    assert (ds.zero_config.offload_optimizer is not None) == (s.offload != "none")
    assert (ds.zero_config.offload_param is not None) == (s.offload == "optimizer+params")
    assert ds.bfloat16_config.enabled == s.precision.startswith("bf16")
    assert ds.bfloat16_config.bf16_master_weights_and_grads == (s.precision == "bf16-true")
    assert ds.zero_config.reduce_bucket_size == plan.model.hidden_size ** 2


# ---- accelerate ------------------------------------------------------------------------------------------
def accelerate_env(folder: Path, monkeypatch) -> tuple[object, dict[str, str]]:
    """What ``accelerate launch`` does with the written command before it starts the processes: parse, merge the
    config file, and build the environment its launcher hands them (accelerate ``commands/launch.py``)."""
    from accelerate.commands.launch import _validate_launch_command, launch_command_parser
    from accelerate.utils import launch as launch_utils

    monkeypatch.chdir(folder)
    argv = argv_of(folder / "accelerate-launch.sh")
    assert argv[:2] == ["accelerate", "launch"]
    args, defaults, mp_from_config = _validate_launch_command(launch_command_parser().parse_args(argv[2:]))
    if args.use_deepspeed:
        args.deepspeed_fields_from_accelerate_config = ",".join(
            [*defaults.deepspeed_config, *(["mixed_precision"] if mp_from_config else [])])
        _, env = launch_utils.prepare_deepspeed_cmd_env(args)
    elif args.use_fsdp or args.multi_gpu:
        env = launch_utils.prepare_multi_gpu_env(args)
    else:
        _, env = launch_utils.prepare_simple_launcher_cmd_env(args)
    return args, env


def test_accelerate_config_and_launch(written, monkeypatch):
    require("accelerate")
    from accelerate.commands.config.config_args import load_config_from_file

    plan, folder = written
    s = plan.scenario
    cfg = load_config_from_file(str(folder / "accelerate.yaml"))
    assert cfg.num_processes == s.world_size and cfg.num_machines == s.num_nodes
    args, env = accelerate_env(folder, monkeypatch)
    assert args.num_processes == s.world_size and args.num_machines == s.num_nodes
    if s.num_nodes > 1:
        assert (args.machine_rank, args.main_process_ip, args.main_process_port) == (1, "10.0.0.1", 29500)
    assert args.module and args.training_script == "trl.scripts.sft"
    assert args.training_script_args == ["--config", "trainer.yaml"]
    for key in [k for k in os.environ if k.startswith(("ACCELERATE_", "FSDP_"))]:
        monkeypatch.delenv(key)
    for key, value in env.items():
        if key.startswith(("ACCELERATE_", "FSDP_")):
            monkeypatch.setenv(key, value)
    if args.use_deepspeed:
        from accelerate.utils import DeepSpeedPlugin

        plugin = DeepSpeedPlugin()  # reads the file and refuses settings that conflict with it
        assert plugin.zero_stage == json.loads((folder / "ds_config.json").read_text())["zero_optimization"]["stage"]
        assert plugin.deepspeed_config["train_micro_batch_size_per_gpu"] == s.micro_batch_size
    elif args.use_fsdp:
        import torch
        from accelerate.utils import FullyShardedDataParallelPlugin
        from accelerate.utils import dataclasses as acc_dataclasses

        # FSDP1 syncs module states from the current CUDA device: emulate the GPU the plan runs on
        monkeypatch.setattr(acc_dataclasses, "is_cuda_available", lambda: True)
        monkeypatch.setattr(torch.cuda, "current_device", lambda: 0)
        plugin = FullyShardedDataParallelPlugin()
        version = 2 if s.sharded_by == "fsdp2" else 1
        assert plugin.fsdp_version == version
        if version == 2:  # torch.distributed.fsdp offload policies: CPUOffloadPolicy moves params, grads, the step
            assert plugin.reshard_after_forward is True
            assert type(plugin.cpu_offload).__name__ == ("CPUOffloadPolicy" if s.offload != "none" else
                                                         "OffloadPolicy")
        else:
            assert plugin.sharding_strategy.name == "FULL_SHARD"
            assert plugin.cpu_offload.offload_params == (s.offload != "none")
        assert env["ACCELERATE_MIXED_PRECISION"] == "bf16"
    else:
        assert args.multi_gpu == (s.world_size > 1)
        assert env["ACCELERATE_MIXED_PRECISION"] == ("bf16" if s.precision == "bf16-mixed" else "no")


# ---- torchrun --------------------------------------------------------------------------------------------
def test_torchrun_command(written):
    require("torch")
    from torch.distributed.run import get_args_parser

    plan, folder = written
    argv = argv_of(folder / "torchrun.sh")
    env = [a for a in argv if "=" in a and a.split("=")[0].isupper()]
    args = get_args_parser().parse_args(argv[len(env) + 1:])
    assert args.nproc_per_node == str(plan.gpus_per_node) and args.nnodes == str(plan.num_nodes)
    assert args.module and args.training_script == "trl.scripts.sft"
    assert args.training_script_args == ["--config", "trainer.yaml"]
    if plan.num_nodes > 1:
        assert (args.node_rank, args.rdzv_backend, args.rdzv_endpoint) == (1, "c10d", "10.0.0.1:29500")
    else:
        assert args.standalone


# ---- SkyPilot --------------------------------------------------------------------------------------------
def test_sky_yaml_against_captured_schema(written):
    """SkyPilot 0.14.1's task and resources schemas (tests/data/skypilot, captured from
    ``sky.utils.schemas``) accept the task; runs without SkyPilot."""
    jsonschema = require("jsonschema")
    _, folder = written
    schemas = json.loads((DATA / "skypilot" / "schemas-0.14.1.json").read_text())
    task = yaml.safe_load((folder / "sky.yaml").read_text())
    jsonschema.validate(task, schemas["task"])
    jsonschema.validate(task["resources"], schemas["resources"])


SKY_VERSION = "0.14.1"
SKY_READ = """import json, sys
import sky
task = sky.Task.from_yaml(sys.argv[1])
(res,) = list(task.resources)
print(json.dumps({"num_nodes": task.num_nodes, "workdir": task.workdir, "accelerators": res.accelerators,
                  "use_spot": res.use_spot, "disk_size": res.disk_size, "cloud": str(res.cloud),
                  "region": res.region, "ports": res.ports, "run": task.run, "setup": task.setup,
                  "image_id": res.image_id, "envs": task.envs}))
"""


@pytest.fixture(scope="session")
def sky_python() -> str:
    """A Python that imports SkyPilot: this one if it does, else a virtual environment of its own, made once in
    the user's cache (``pip install skypilot==0.14.1``, ~1 minute): SkyPilot pins click<8.2 while transformers'
    huggingface_hub needs click>=8.4, so it cannot share the test environment. Skips (saying why) only when
    PyPI cannot be reached."""
    if importlib.util.find_spec("sky") is not None:
        return sys.executable
    root = Path(os.environ.get("GPUPLAN_TEST_CACHE", Path.home() / ".cache" / "gpuplan-tests"))
    venv = root / f"skypilot-{SKY_VERSION}"
    python = venv / "bin" / "python"
    with one_at_a_time(root / f"skypilot-{SKY_VERSION}.lock"):  # another worker may be making it
        if not (venv / "ok").is_file():
            subprocess.run([sys.executable, "-m", "venv", "--clear", str(venv)], check=True, timeout=120)
            proc = subprocess.run([str(python), "-m", "pip", "install", "-q", f"skypilot=={SKY_VERSION}"],
                                  capture_output=True, text=True, timeout=900)
            if proc.returncode:
                pytest.skip(f"{SKY_REASON}; installing it in its own environment failed: "
                            f"{proc.stderr.strip()[-300:]}")
            (venv / "ok").write_text(SKY_VERSION)
    return str(python)


def sky_read(python: str, folder: Path) -> dict:
    """The task as ``sky.Task.from_yaml`` reads ``folder/sky.yaml``, in SkyPilot's own Python."""
    proc = subprocess.run([python, "-c", SKY_READ, "sky.yaml"], cwd=folder, capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


@pytest.mark.slow
def test_sky_yaml_through_skypilot(written, sky_python):
    plan, folder = written
    task = sky_read(sky_python, folder)
    assert task["num_nodes"] == plan.num_nodes and task["workdir"] == "."
    assert list(task["accelerators"].values()) == [plan.gpus_per_node]
    assert task["use_spot"] == (plan.spot is not None)
    assert task["disk_size"] == plan.disk_gb
    if plan.offer and plan.offer.provider == "aws":
        assert task["cloud"] == "AWS" and task["region"] == "us-east-1"
    assert "accelerate launch" in task["run"] and "pip install" in task["setup"]


@pytest.mark.slow
def test_sky_serving_task(tmp_path, sky_python):
    plan = launch_plan(SERVE)
    write(launch_files(plan, ["skypilot"]), tmp_path)
    task = sky_read(sky_python, tmp_path)
    assert task["accelerators"] == {"L40S": 1} and task["ports"] == ["8000"]


# ---- vLLM ------------------------------------------------------------------------------------------------
def test_vllm_serve_through_vllm(tmp_path):
    """vLLM's own parser (``make_arg_parser``, as ``vllm serve`` builds it), in a child process where vLLM
    imports with ``VLLM_TARGET_DEVICE=cpu``."""
    if importlib.util.find_spec("vllm") is None:
        pytest.skip(VLLM_REASON)
    plan = launch_plan(SERVE)
    write(launch_files(plan, ["vllm"]), tmp_path)
    argv = argv_of(tmp_path / "vllm-serve.sh")
    code = ("import json, sys\n"
            "try:\n    from vllm.entrypoints.common.cli_args import make_arg_parser\n"
            "except ImportError:\n    from vllm.entrypoints.launchers.cli_args import make_arg_parser\n"
            "from vllm.utils.argparse_utils import FlexibleArgumentParser\n"
            "a = make_arg_parser(FlexibleArgumentParser()).parse_args(sys.argv[1:])\n"
            "print(json.dumps({k: getattr(a, k) for k in ('model_tag', 'tensor_parallel_size', 'max_model_len', "
            "'gpu_memory_utilization', 'kv_cache_dtype', 'quantization', 'max_num_seqs', 'max_num_batched_tokens', "
            "'dtype', 'port')}))\n")
    proc = subprocess.run([sys.executable, "-c", code, *argv[2:]], capture_output=True, text=True,
                          env={**os.environ, "VLLM_TARGET_DEVICE": "cpu"}, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    got = json.loads(proc.stdout.strip().splitlines()[-1])
    engine = plan.result.memory.engine
    assert got == {"model_tag": "meta-llama/Llama-3.1-8B", "tensor_parallel_size": 1,
                   "max_model_len": engine["max_model_len"], "gpu_memory_utilization": 0.9,
                   "kv_cache_dtype": "fp8", "quantization": "fp8", "max_num_seqs": engine["max_num_seqs"],
                   "max_num_batched_tokens": engine["max_num_batched_tokens"], "dtype": "bfloat16", "port": 8000}


# ---- the round trip ----------------------------------------------------------------------------------------
OPTIM = {"adamw_torch_fused": ("adamw", "fused"), "adamw_torch": ("adamw", "foreach"),
         "paged_adamw_8bit": ("paged-adamw-8bit", "fused"), "adamw_bnb_8bit": ("adamw-8bit", "fused"),
         "adafactor": ("adafactor", "fused"), "lion_32bit": ("lion", "fused")}


def read_back(folder: Path, monkeypatch, world_size: int) -> dict:
    """The scenario the written files describe, as their readers parse them: the trainer's arguments, the
    DeepSpeed config and the accelerate config, mapped back to scenario fields."""
    from accelerate.commands.config.config_args import load_config_from_file

    _, args, model = read_trainer(folder, monkeypatch, world_size)
    cfg = load_config_from_file(str(folder / "accelerate.yaml"))
    optim, impl = OPTIM[str(args.optim.value)]
    out = {"model": model.model_name_or_path, "task": "train", "micro_batch_size": args.per_device_train_batch_size,
           "grad_accum_steps": args.gradient_accumulation_steps, "seq_len": args.max_length,
           "grad_checkpointing": "full" if args.gradient_checkpointing else "none", "optimizer": optim,
           "optimizer_impl": impl, "attention": {"flash_attention_2": "flash"}.get(model.attn_implementation,
                                                                                  model.attn_implementation),
           "num_nodes": cfg.num_machines, "num_gpus": cfg.num_processes // cfg.num_machines,
           "loss": "fused-linear" if args.use_liger_kernel else "full", "compile": args.torch_compile}
    out["method"] = "qlora" if model.load_in_4bit else "lora" if model.use_peft else "full"
    if model.use_peft:
        out.update(lora_rank=model.lora_r, lora_targets=model.lora_target_modules)
    if model.load_in_4bit:
        out["quant"] = model.bnb_4bit_quant_type
    kind = cfg.distributed_type.value
    offload = "none"
    if kind == "DEEPSPEED":
        ds = json.loads((folder / "ds_config.json").read_text())
        zero = ds["zero_optimization"]
        out["sharding"] = f"zero{zero['stage']}" if out["num_gpus"] * out["num_nodes"] > 1 else "single"
        offload = "optimizer+params" if "offload_param" in zero else "optimizer" if "offload_optimizer" in zero \
            else "none"
        bf16 = ds.get("bf16", {})
        out["precision"] = ("bf16-true" if bf16.get("bf16_master_weights_and_grads") else "bf16-mixed") \
            if bf16.get("enabled") else "fp16-mixed" if ds.get("fp16", {}).get("enabled") else "fp32"
    else:
        out["sharding"] = {"NO": "single", "MULTI_GPU": "ddp", "FSDP": "fsdp"}[kind]
        if kind == "FSDP":
            out["sharding"] = f"fsdp{cfg.fsdp_config['fsdp_version']}"
            offload = "optimizer+params" if cfg.fsdp_config["fsdp_offload_params"] else "none"
        half = "bf16" if args.bf16 else "fp16" if args.fp16 else None
        mixed = model.dtype == "float32" or out["method"] != "full"
        out["precision"] = "fp32" if half is None and model.dtype == "float32" else \
            f"{half}-mixed" if mixed and half else f"{'bf16' if model.dtype == 'bfloat16' else 'fp16'}-true"
    out["offload"] = offload
    return out


MEMORY_FIELDS = ("model", "micro_batch_size", "grad_accum_steps", "seq_len", "grad_checkpointing", "method",
                 "optimizer", "optimizer_impl", "attention", "num_gpus", "num_nodes", "offload", "precision", "loss",
                 "compile")


def test_round_trip(written, monkeypatch):
    """scenario -> launch -> the files read back by their libraries -> the same memory-relevant settings, and
    an estimate of the read-back scenario equal to the plan's."""
    require("trl")
    plan, folder = written
    s = plan.scenario
    back = read_back(folder, monkeypatch, s.dp)
    original = plan.result.scenario
    for field in MEMORY_FIELDS:
        want = plan.model.name if field == "model" else original[field]
        assert back[field] == want, field
    assert back["sharding"] == (s.sharding or s.resolved_sharding)
    if s.method != "full":
        assert back["lora_rank"] == s.lora_rank
        assert back["lora_targets"] == (s.lora_targets if isinstance(s.lora_targets, str) else
                                        list(s.lora_targets))
    again = gpuplan.estimate({**back, "gpu": s.gpu, "train_tokens": s.train_tokens}, advise=False)
    assert again.memory.device_peak_gib == pytest.approx(plan.result.memory.device_peak_gib, rel=1e-12)


def test_shell_quoting_survives_bash(tmp_path):
    """A script path with a space reaches the program as one argument."""
    plan = launch_plan(PLANS["ddp-small"])
    write(launch_files(plan, ["torchrun"], LaunchOptions(script=("my train.py",))), tmp_path)
    argv = argv_of(tmp_path / "torchrun.sh")
    assert argv[argv.index("--standalone") + 1] == "my train.py"
    assert shlex.join(argv).count("'my train.py'") == 1
