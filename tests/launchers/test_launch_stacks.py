"""The training stacks' own configs that ``gpuplan launch`` writes (torchtune, torchtitan, Axolotl), read by each
stack's own code, and the round trip: scenario -> launch -> the files read back -> the same estimate.

- torchtitan 0.1.0 (the `stacks` extra): ``ConfigManager.parse_args`` loads ``torchtitan.toml`` into its
  ``JobConfig``; ``ParallelDims`` checks the degrees against the world size; the flavor is built on the meta
  device; ``apply_ac`` takes the activation-checkpointing section; torchrun's parser reads the command.
- Axolotl 0.18.0 cannot share the test environment (it pins older transformers, peft and torch): its own
  ``validate_config`` (the pydantic models, the Liger plugin's arguments merged in, every model validator) runs in
  a child process over a no-deps install of axolotl in the user's cache, its schema modules importing this
  environment's libraries. test_launch.py checks the same file against the captured schema without it.
- torchtune 0.6.1's ``training`` module imports ``int4_weight_only``, which torchao 0.16 removed, while peft needs
  torchao >= 0.16: its config checks run in a child process with torchao 0.15 (no-deps, in the user's cache) first
  on the path.

The cached installs need PyPI once (about 40 MB for torchao, 2 MB for axolotl); without it those tests skip and
say why.
"""

from __future__ import annotations

import copy
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from test_launch_readers import OPTIM, argv_of, sky_python, sky_read  # noqa: F401 (sky_python: a fixture)

import gpuplan
from conftest import one_at_a_time, require
from gpuplan.launchers import launch_files, launch_plan, write
from gpuplan.launchers import torchtitan as titan
from gpuplan.launchers.data import save_fields
from gpuplan.launchers.settings import LaunchOptions
from gpuplan.stacks.releases import AXOLOTL_VERSION, UNSLOTH_VERSION


def cached_packages(name: str, requirements: list[str]) -> Path:
    """A folder holding ``requirements`` installed without their dependencies (``pip install --no-deps --target``),
    made once in the user's cache, to put first on a child process's ``PYTHONPATH``. Skips, saying why, only
    when the install fails (PyPI out of reach)."""
    root = Path(os.environ.get("GPUPLAN_TEST_CACHE", Path.home() / ".cache" / "gpuplan-tests"))
    target = root / name
    with one_at_a_time(root / f"{name}.lock"):  # another worker may be installing it
        if not (target / "ok").is_file():
            target.mkdir(parents=True, exist_ok=True)
            proc = subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--upgrade",
                                   "--target", str(target), *requirements], capture_output=True, text=True,
                                  timeout=900)
            if proc.returncode:
                pytest.skip(f"cannot install {' '.join(requirements)} for the child process: "
                            f"{proc.stderr.strip()[-300:]}")
            (target / "ok").write_text(" ".join(requirements))
    return target


def child(code: str, args: list[str], cwd: Path, path: Path) -> dict:
    """Run ``code`` with ``path`` first on the import path, in ``cwd``; its last stdout line is JSON."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(path), *filter(None, [os.environ.get("PYTHONPATH")])])}
    proc = subprocess.run([sys.executable, "-c", code, *args], cwd=cwd, capture_output=True, text=True, env=env,
                          timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


# ---- torchtitan -----------------------------------------------------------------------------------------------
TITAN_PLANS = {  # FSDP2 on spot, float8 + compile, DDP, one GPU, one block in 2 with the optimizer in backward,
    # TP x FSDP on 4 nodes, PP x FSDP with CPU offload
    "fsdp-8b-spot": dict(model="llama-3.1-8b", task="train", stack="torchtitan", gpu="h100-sxm5", num_gpus=8,
                         sharding="fsdp", seq_len=8192, micro_batch_size=1, grad_accum_steps=2, train_tokens=1e8,
                         pricing="spot"),
    "fp8-compile": dict(model="llama-3.1-8b", task="train", stack="torchtitan", gpu="h100-sxm5", num_gpus=8,
                        sharding="fsdp", precision="fp8-mixed", compile=True, seq_len=4096, micro_batch_size=2),
    # DDP runs under torch.autocast, whose bf16 weight copies live to the loss's end (s18-left: 185.1 GiB a B200
    # uncompiled, over its 179.1); compiled, the casts are in the graph and the plan fits (169.7)
    "ddp-2-gpus": dict(model="llama-3.1-8b", task="train", stack="torchtitan", gpu="b200", num_gpus=2,
                       sharding="ddp", seq_len=2048, grad_accum_steps=4, compile=True),
    "one-gpu": dict(model="llama-3.1-8b", task="train", stack="torchtitan", gpu="b200", seq_len=2048,
                    grad_checkpointing="full", optimizer_impl="foreach", train_tokens=2e7),
    "fsdp-every-2": dict(model="llama-3.1-8b", task="train", stack="torchtitan", gpu="h100-sxm5", num_gpus=4,
                         sharding="fsdp", seq_len=4096, grad_checkpointing="full", checkpoint_every=2,
                         optimizer_in_backward=True),
    "70b-tp": dict(model="llama-3.1-70b", task="train", stack="torchtitan", gpu="h100-sxm5", num_gpus=8,
                   num_nodes=4, sharding="fsdp", tp=8, seq_len=8192, micro_batch_size=1, grad_accum_steps=4,
                   grad_checkpointing="full", train_tokens=1e9),
    "8b-pp-offload": dict(model="llama-3.1-8b", task="train", stack="torchtitan", gpu="h100-sxm5", num_gpus=8,
                          sharding="fsdp", pp=2, seq_len=4096, micro_batch_size=1, grad_accum_steps=8,
                          grad_checkpointing="full", offload="optimizer+params"),
}


@pytest.fixture(params=sorted(TITAN_PLANS))
def titan_written(request, tmp_path):
    plan = launch_plan(TITAN_PLANS[request.param])
    write(launch_files(plan, ["torchtitan"]), tmp_path)
    return plan, tmp_path


def read_titan(folder: Path, monkeypatch):
    """``torchtitan.toml`` as ``torchtitan.train`` reads it: ``ConfigManager().parse_args(['--job.config_file',
    ...])``, after checking that every key is one ``JobConfig`` knows (its loader drops unknown keys silently)."""
    require("torchtitan")
    from dataclasses import fields

    import tomllib
    from torchtitan.config_manager import ConfigManager, JobConfig

    monkeypatch.chdir(folder)
    raw = tomllib.loads((folder / titan.FILE).read_text())
    sections = {f.name: f.type for f in fields(JobConfig)}
    for section, table in raw.items():
        assert section in sections, section
        known = {f.name for f in fields(sections[section])}
        assert set(table) <= known, (section, set(table) - known)
    return ConfigManager().parse_args(["--job.config_file", titan.FILE])


def test_torchtitan_config_through_torchtitan(titan_written, monkeypatch):
    """torchtitan's parser reads the plan's values; its ParallelDims accepts the degrees for the plan's world size,
    and the gradient accumulation train.py derives equals the plan's."""
    from torchtitan.distributed import ParallelDims

    plan, folder = titan_written
    s = plan.scenario
    cfg = read_titan(folder, monkeypatch)
    dims = ParallelDims(dp_replicate=cfg.parallelism.data_parallel_replicate_degree,
                        dp_shard=cfg.parallelism.data_parallel_shard_degree, cp=cfg.parallelism.context_parallel_degree,
                        tp=cfg.parallelism.tensor_parallel_degree, pp=cfg.parallelism.pipeline_parallel_degree,
                        world_size=s.world_size, enable_loss_parallel=True)
    assert (dims.tp, dims.pp, dims.dp_replicate * dims.dp_shard) == (s.tp, s.pp, s.dp)
    assert dims.fsdp_enabled == (s.sharded_by == "fsdp2")
    # train.py: gradient_accumulation_steps = global_batch_size // (local_batch_size * dp_degree)
    accumulation = cfg.training.global_batch_size // (cfg.training.local_batch_size * s.dp)
    if s.pp > 1:  # the pipeline schedule runs local / microbatch micro-batches instead
        assert accumulation == 1
        assert cfg.training.local_batch_size // cfg.parallelism.pipeline_parallel_microbatch_size == \
            s.grad_accum_steps
        assert cfg.parallelism.pipeline_parallel_microbatch_size == s.micro_batch_size
    else:
        assert (cfg.training.local_batch_size, accumulation) == (s.micro_batch_size, s.grad_accum_steps)
    # tokens per optimizer step: micro-batch x sequence x accumulation x data-parallel ranks
    assert cfg.training.global_batch_size * cfg.training.seq_len == \
        s.micro_batch_size * s.seq_len * s.grad_accum_steps * s.dp
    assert cfg.training.seq_len == s.seq_len and cfg.training.compile == s.compile
    assert cfg.training.steps == (plan.max_steps or 10_000)
    assert cfg.training.enable_cpu_offload == (s.offload == "optimizer+params")
    assert (cfg.training.mixed_precision_param, cfg.training.mixed_precision_reduce) == ("bfloat16", "float32")
    assert ("float8" in cfg.model.converters) == (s.precision == "fp8-mixed")
    assert cfg.optimizer.implementation == s.optimizer_impl
    assert cfg.checkpoint.enable_checkpoint and cfg.checkpoint.keep_latest_k == 2
    if plan.save_steps is not None:
        assert cfg.checkpoint.interval == plan.save_steps


def test_torchtitan_flavors_are_gpuplans_models():
    """Every model the writer maps to a torchtitan flavor is that flavor: torchtitan builds it (meta device, no
    memory) with exactly gpuplan's parameter count."""
    require("torchtitan")
    import torch
    from torchtitan.protocols.train_spec import get_train_spec

    from gpuplan.model.catalog import load_model

    spec = get_train_spec("llama3")
    for name, (flavor, _) in titan.FLAVORS.items():
        m = load_model(name)
        args = copy.deepcopy(spec.config[flavor])
        args.vocab_size = m.vocab_size  # torchtitan takes it from the tokenizer
        with torch.device("meta"):
            model = spec.cls(args)
        assert sum(p.numel() for p in model.parameters()) == m.params_total, name


def test_torchtitan_checkpointing_through_apply_ac(titan_written, monkeypatch):
    """torchtitan's own apply_ac takes the written section (on its 6-layer debug model): full wraps every block."""
    plan, folder = titan_written
    import torch
    from torch.distributed.algorithms._checkpoint.checkpoint_wrapper import CheckpointWrapper
    from torchtitan.models.llama3.infra.parallelize import apply_ac
    from torchtitan.protocols.train_spec import get_train_spec

    cfg = read_titan(folder, monkeypatch)
    ac = cfg.activation_checkpoint
    assert (ac.mode, ac.selective_ac_option) == titan.checkpointing(plan)
    spec = get_train_spec("llama3")
    args = copy.deepcopy(spec.config["debugmodel"])
    args.vocab_size = 256
    with torch.device("meta"):
        model = spec.cls(args)
    apply_ac(model, ac)
    wrapped = [isinstance(block, CheckpointWrapper) for block in model.layers.values()]
    assert any(wrapped)
    if ac.mode == "full" or ac.selective_ac_option == "op":
        assert all(wrapped)


def test_torchtitan_command(titan_written):
    require("torch")
    from torch.distributed.run import get_args_parser

    plan, folder = titan_written
    argv = argv_of(folder / titan.SCRIPT)
    assert argv[:3] == ["hf", "download", plan.model.name]
    args = get_args_parser().parse_args(argv[argv.index("torchrun") + 1:])
    assert args.nproc_per_node == str(plan.gpus_per_node) and args.nnodes == str(plan.num_nodes)
    assert args.module and args.training_script == "torchtitan.train"
    assert args.training_script_args == ["--job.config_file", titan.FILE]
    tokenizer = argv[argv.index("--local-dir") + 1] + "/" + argv[3]
    assert tomllib_value(folder, "model", "tokenizer_path") == f"./{tokenizer}"


def tomllib_value(folder: Path, section: str, key: str):
    import tomllib

    return tomllib.loads((folder / titan.FILE).read_text())[section][key]


def titan_back(cfg, argv: list[str]) -> dict:
    """The scenario a torchtitan job config describes (and the torchrun command's node count)."""
    p, t, ac = cfg.parallelism, cfg.training, cfg.activation_checkpoint
    world = p.data_parallel_replicate_degree * p.data_parallel_shard_degree * p.tensor_parallel_degree * \
        p.pipeline_parallel_degree
    nodes = int(argv[argv.index("--nnodes") + 1])
    dp = p.data_parallel_replicate_degree * p.data_parallel_shard_degree
    micro = p.pipeline_parallel_microbatch_size if p.pipeline_parallel_degree > 1 else t.local_batch_size
    model = next(name for name, (flavor, _) in titan.FLAVORS.items() if flavor == cfg.model.flavor)
    out = {"model": model, "task": "train", "stack": "torchtitan", "micro_batch_size": micro,
           "grad_accum_steps": t.global_batch_size // (micro * dp), "seq_len": t.seq_len, "num_gpus": world // nodes,
           "num_nodes": nodes, "tp": p.tensor_parallel_degree, "pp": p.pipeline_parallel_degree,
           "sharding": "fsdp2" if p.data_parallel_shard_degree > 1 else "ddp" if dp > 1 else None,
           "compile": t.compile, "offload": "optimizer+params" if t.enable_cpu_offload else "none",
           "optimizer_impl": cfg.optimizer.implementation,
           "optimizer_in_backward": cfg.optimizer.early_step_in_backward,
           "precision": "fp8-mixed" if "float8" in cfg.model.converters else
           "fp32" if t.mixed_precision_param == "float32" else "bf16-mixed"}
    if ac.mode == "selective" and ac.selective_ac_option.isdigit():
        out.update(grad_checkpointing="full", checkpoint_every=int(ac.selective_ac_option))
    else:
        out["grad_checkpointing"] = ac.mode
    return out


def test_torchtitan_round_trip(titan_written, monkeypatch):
    plan, folder = titan_written
    cfg = read_titan(folder, monkeypatch)
    back = titan_back(cfg, argv_of(folder / titan.SCRIPT))
    s = plan.scenario
    for field, value in back.items():
        want = plan.model.name if field == "model" else getattr(s, field)
        assert value == want, field
    again = gpuplan.estimate({**back, "gpu": s.gpu}, advise=False)
    assert again.memory.device_peak_gib == pytest.approx(plan.result.memory.device_peak_gib, rel=1e-12)


# ---- Axolotl ----------------------------------------------------------------------------------------------
AXOLOTL_PLANS = {  # QLoRA on spot, LoRA under FSDP2, full FSDP1 with offload, full ZeRO-3, full bf16 on one GPU,
    # 8-bit LoRA over DDP with bf16 adapters, LoRA on two nodes
    "qlora-spot": dict(model="llama-3.1-8b", task="train", stack="axolotl", method="qlora", gpu="l40s",
                       micro_batch_size=2, grad_accum_steps=4, train_tokens=1e7, pricing="spot"),
    "lora-fsdp2": dict(model="qwen2.5-7b", task="train", stack="axolotl", method="lora", gpu="l40s", num_gpus=2,
                       sharding="fsdp2", attention="flash", compile=True, lora_targets=["q_proj", "v_proj"]),
    "full-fsdp1-offload": dict(model="qwen2.5-1.5b", task="train", stack="axolotl", gpu="l40s", num_gpus=2,
                               sharding="fsdp", offload="optimizer+params"),
    "full-zero3": dict(model="llama-3.1-8b", task="train", stack="axolotl", gpu="nvidia-a100-sxm4-80gb",
                       num_gpus=4, sharding="zero3", micro_batch_size=2, grad_accum_steps=2, train_tokens=1e8),
    "full-bf16-1-gpu": dict(model="qwen2.5-0.5b", task="train", stack="axolotl", gpu="l40s",
                            precision="bf16-true", loss="chunked", activation_offload=True),
    "lora-int8-ddp": dict(model="qwen2.5-1.5b", task="train", stack="axolotl", method="lora", quant="int8",
                          gpu="l40s", num_gpus=2, sharding="ddp", optimizer="adamw-8bit", adapter_dtype="bf16"),
    "lora-2-nodes": dict(model="llama-3.1-8b", task="train", stack="axolotl", method="lora", gpu="h100-sxm5",
                         num_gpus=8, num_nodes=2, sharding="zero2", train_tokens=1e9, pricing="spot", provider="aws"),
}
AXOLOTL_READ = """import json, os, sys, yaml
from axolotl.integrations.config import merge_input_args
from axolotl.utils.config import prepare_plugins, validate_config
from axolotl.utils.dict import DictDefault
out = {}
for folder, capabilities in json.loads(sys.argv[1]):
    raw = yaml.safe_load(open(os.path.join(folder, "axolotl.yaml")))
    cfg = DictDefault(raw)
    prepare_plugins(cfg)  # registers the Liger plugin, whose arguments validate_config merges in
    _, merged = merge_input_args()
    known = set(merged.model_fields) | {f.alias for f in merged.model_fields.values() if f.alias}
    valid = validate_config(cfg, capabilities=capabilities, env_capabilities={"torch_version": "2.12.1"})
    out[folder] = {"unknown": sorted(set(raw) - known), "config": valid}
print(json.dumps(out, default=str))
"""


@pytest.fixture(scope="module")
def axolotl_validated(tmp_path_factory) -> dict:
    """Every plan of AXOLOTL_PLANS written, and its config as Axolotl's validate_config returns it on the plan's
    GPU (the capabilities ``axolotl.cli.config.gpu_capabilities`` reports there), in one child process. Axolotl's
    own code is a no-deps install (its pins would downgrade transformers and peft), with ``addict``, which its
    config module imports."""
    path = cached_packages(f"axolotl-{AXOLOTL_VERSION}", [f"axolotl=={AXOLOTL_VERSION}", "addict"])
    jobs, plans = [], {}
    for name, scenario in AXOLOTL_PLANS.items():
        folder = tmp_path_factory.mktemp(name)
        plan = plans[name] = launch_plan(scenario)
        write(launch_files(plan, ["axolotl"]), folder)
        major, minor = (plan.gpu.compute_capability or "8.0").split(".")
        jobs.append([str(folder), {"bf16": plan.gpu.supports_dtype("bf16"), "fp8": plan.gpu.supports_dtype("fp8"),
                                   "tf32": True, "n_gpu": plan.scenario.world_size, "n_node": plan.num_nodes,
                                   "compute_capability": f"sm_{major}{minor}"}])
    read = child(AXOLOTL_READ, [json.dumps(jobs)], tmp_path_factory.getbasetemp(), path)
    return {name: (plans[name], Path(folder), read[folder]) for name, (folder, _) in zip(plans, jobs, strict=True)}


@pytest.fixture(params=sorted(AXOLOTL_PLANS))
def axolotl_read(request, axolotl_validated):
    return axolotl_validated[request.param]


@pytest.mark.slow
def test_axolotl_config_through_axolotl(axolotl_read):
    """Axolotl's validate_config accepts the file (every model validator), knows every key, and keeps the plan's
    values; its fused LoRA kernels stay off, as the plan's memory assumes."""
    plan, folder, read = axolotl_read
    s, cfg = plan.scenario, read["config"]
    assert read["unknown"] == []
    assert (cfg["micro_batch_size"], cfg["gradient_accumulation_steps"], cfg["sequence_len"]) == (
        s.micro_batch_size, s.grad_accum_steps, s.seq_len)
    assert cfg["sample_packing"] and cfg["pad_to_sequence_len"]
    assert cfg["gradient_checkpointing"] == (s.grad_checkpointing == "full")
    assert cfg["liger_fused_linear_cross_entropy"] == (s.loss == "fused-linear")
    assert cfg["liger_rms_norm"] and cfg["liger_glu_activation"]
    saves = save_fields(plan)  # the one rule for when the Trainer saves (s17-walk: once at max_steps, or per epoch)
    assert cfg.get("max_steps") == plan.max_steps and cfg.get("save_steps") == saves.get("save_steps")
    if s.method != "full":
        assert not any(cfg.get(k) for k in ("lora_mlp_kernel", "lora_qkv_kernel", "lora_o_kernel"))
        assert cfg["lora_r"] == s.lora_rank
    if "deepspeed" in cfg:  # normalize_config would load it; the written file is beside the config
        assert cfg["deepspeed"] == "ds_config.json" and (folder / "ds_config.json").is_file()


def axolotl_back(plan, folder: Path, cfg: dict) -> dict:
    """The scenario an Axolotl config (as Axolotl validated it) and its launch command describe."""
    argv = argv_of(folder / "axolotl-train.sh")
    nodes, per_node = int(argv[argv.index("--nnodes") + 1]), int(argv[argv.index("--nproc-per-node") + 1])
    optim, impl = OPTIM[cfg["optimizer"]]
    method = "qlora" if cfg.get("load_in_4bit") else "lora" if cfg.get("adapter") == "lora" else "full"
    out = {"model": cfg["base_model"], "task": "train", "stack": "axolotl", "method": method,
           "micro_batch_size": cfg["micro_batch_size"], "grad_accum_steps": cfg["gradient_accumulation_steps"],
           "seq_len": cfg["sequence_len"], "grad_checkpointing": "full" if cfg["gradient_checkpointing"] else "none",
           "activation_offload": bool(cfg.get("activation_offloading")), "compile": bool(cfg.get("torch_compile")),
           "optimizer": optim, "optimizer_impl": impl, "num_gpus": per_node, "num_nodes": nodes,
           "attention": {"flash_attention_2": "flash"}.get(cfg["attn_implementation"], cfg["attn_implementation"]),
           "loss": "fused-linear" if cfg["liger_fused_linear_cross_entropy"] else
           "chunked" if cfg.get("chunked_cross_entropy") else "full"}
    if out["loss"] == "chunked":
        out["loss_chunks"] = cfg["chunked_cross_entropy_num_chunks"]
    half = "bf16" if cfg["bf16"] else "fp16" if cfg.get("fp16") else None
    offload, strategy = "none", "ddp" if nodes * per_node > 1 else "single"
    if "deepspeed" in cfg:
        ds = json.loads((folder / cfg["deepspeed"]).read_text())
        zero = ds["zero_optimization"]
        strategy = f"zero{zero['stage']}" if nodes * per_node > 1 else "single"
        offload = "optimizer+params" if "offload_param" in zero else "optimizer" if "offload_optimizer" in zero \
            else "none"
        true = ds.get("bf16", {}).get("bf16_master_weights_and_grads")
    elif cfg.get("fsdp_version"):
        strategy, true = f"fsdp{cfg['fsdp_version']}", False  # accelerate upcasts the shards to fp32
        offload = "optimizer+params" if cfg["fsdp_config"].get("offload_params") else "none"
    else:
        true = method == "full"  # axolotl loads the weights in the half dtype
    out.update(sharding=strategy, offload=offload,
               precision="fp32" if half is None else f"{half}-{'true' if true else 'mixed'}")
    if method != "full":
        out.update(lora_rank=cfg["lora_r"], lora_dropout=cfg["lora_dropout"],
                   lora_targets="all-linear" if cfg.get("lora_target_linear") else cfg["lora_target_modules"],
                   adapter_dtype="fp32" if cfg.get("peft_autocast_adapter_dtype", True) else half)
        if cfg.get("load_in_8bit"):
            out["quant"] = "int8"
    return out


@pytest.mark.slow
def test_axolotl_round_trip(axolotl_read):
    plan, folder, read = axolotl_read
    back = axolotl_back(plan, folder, read["config"])
    s = plan.scenario
    for field, value in back.items():
        want = plan.model.name if field == "model" else (s.sharding or s.resolved_sharding) if field == "sharding" \
            else getattr(s, field)
        assert value == (list(want) if isinstance(want, tuple) else want), field
    again = gpuplan.estimate({**back, "gpu": s.gpu}, advise=False)
    assert again.memory.device_peak_gib == pytest.approx(plan.result.memory.device_peak_gib, rel=1e-12)


@pytest.mark.slow
def test_axolotl_command(tmp_path):
    """`axolotl train` hands the options after `--` to torchrun with its module and the config
    (cli/utils/train.py ``_launch_torchrun_training``): torchrun's parser reads them."""
    from torch.distributed.run import get_args_parser

    plan = launch_plan(AXOLOTL_PLANS["lora-2-nodes"])
    write(launch_files(plan, ["axolotl"]), tmp_path)
    argv = argv_of(tmp_path / "axolotl-train.sh")
    assert argv[:3] == ["axolotl", "train", "axolotl.yaml"] and argv[argv.index("--launcher") + 1] == "torchrun"
    launcher = argv[argv.index("--") + 1:]
    args = get_args_parser().parse_args([*launcher, "-m", "axolotl.cli.train", "axolotl.yaml"])
    assert (args.nproc_per_node, args.nnodes, args.node_rank) == ("8", "2", 1)
    assert args.rdzv_endpoint == "10.0.0.1:29500" and args.training_script_args == ["axolotl.yaml"]


# ---- torchtune ----------------------------------------------------------------------------------------------
TUNE_PLANS = {
    "lora-8b-all-linear": dict(model="llama-3.1-8b", task="train", method="lora", gpu="l40s", stack="torchtune",
                               qlora_fp32_upcast=False, micro_batch_size=2, grad_accum_steps=4, train_tokens=1e7),
    "lora-1b-qv-2-gpus": dict(model="llama-3.2-1b", task="train", method="lora", gpu="l40s", num_gpus=2,
                              sharding="fsdp", stack="torchtune", qlora_fp32_upcast=False, lora_rank=8,
                              lora_targets=["q_proj", "v_proj"], activation_offload=True, compile=True),
    "full-qwen-0.5b": dict(model="qwen2.5-0.5b", task="train", gpu="l40s", stack="torchtune",
                           qlora_fp32_upcast=False, optimizer_in_backward=True, loss="full"),
    "qlora-8b": dict(model="llama-3.1-8b", task="train", method="qlora", gpu="rtx-4090", stack="torchtune",
                     qlora_fp32_upcast=False),
}
TUNE_READ = """import json, os, sys
import torchao
from omegaconf import OmegaConf
from torchtune import config
from torchtune._cli.tune import TuneCLIParser
from torchtune._recipe_registry import get_all_recipes
out = {}
for folder, argv in json.loads(sys.argv[1]):
    cfg = OmegaConf.load(os.path.join(folder, "torchtune.yaml"))
    config.validate(cfg)  # every component's arguments bind to its signature
    args = TuneCLIParser()._parser.parse_args(argv)
    out[folder] = {"recipe": args.recipe, "recipes": [r.name for r in get_all_recipes()],
                   "torchao": torchao.__version__, "config": OmegaConf.to_container(cfg, resolve=True)}
print(json.dumps(out))
"""
TORCHAO_FOR_TORCHTUNE = "torchao==0.15.0"  # the last release with the int4_weight_only torchtune 0.6.1 imports


@pytest.fixture(scope="module")
def tune_validated(tmp_path_factory) -> dict:
    """Every plan of TUNE_PLANS written, and torchtune's reading of it in one child process where
    torchtune.training imports (torchao 0.15, no-deps, first on its path)."""
    require("torchtune")
    path = cached_packages("torchao-0.15.0", [TORCHAO_FOR_TORCHTUNE])
    jobs, plans = [], {}
    for name, scenario in TUNE_PLANS.items():
        folder = tmp_path_factory.mktemp(name)
        plan = plans[name] = launch_plan(scenario)
        write(launch_files(plan, ["torchtune"]), folder)
        argv = argv_of(folder / "tune-run.sh")
        jobs.append([str(folder), argv[argv.index("run"):]])  # after the tune download line
    read = child(TUNE_READ, [json.dumps(jobs)], tmp_path_factory.getbasetemp(), path)
    return {name: (plans[name], read[folder], argv) for name, (folder, argv) in zip(plans, jobs, strict=True)}


TUNE_OPTIMIZERS = {"torch.optim.AdamW": "adamw", "bitsandbytes.optim.AdamW8bit": "adamw-8bit",
                   "bitsandbytes.optim.PagedAdamW8bit": "paged-adamw-8bit", "torch.optim.SGD": "sgd"}


def tune_back(cfg: dict, argv: list[str]) -> dict:
    """The scenario a torchtune config (as torchtune resolved it) and its ``tune run`` command describe."""
    from gpuplan.launchers import torchtune as tune_target

    builder = cfg["model"]["_component_"]
    model, method = next((name, method) for name, entry in tune_target.models().items()
                         for method, path in entry["builders"].items() if path == builder)
    gpus = int(argv[argv.index("--nproc_per_node") + 1]) if "--nproc_per_node" in argv else 1
    optimizer = TUNE_OPTIMIZERS[cfg["optimizer"]["_component_"]]
    out = {"model": model, "task": "train", "stack": "torchtune", "method": method, "num_gpus": gpus,
           "micro_batch_size": cfg["batch_size"], "grad_accum_steps": cfg["gradient_accumulation_steps"],
           "seq_len": cfg["tokenizer"]["max_seq_len"],
           "grad_checkpointing": "full" if cfg["enable_activation_checkpointing"] else "none",
           "activation_offload": cfg["enable_activation_offloading"], "compile": cfg["compile"],
           "precision": "bf16-true" if cfg["dtype"] == "bf16" else "fp32",
           "optimizer": "sgd-momentum" if optimizer == "sgd" and cfg["optimizer"].get("momentum") else optimizer,
           "optimizer_in_backward": bool(cfg.get("optimizer_in_bwd")),
           "sharding": "fsdp2" if gpus > 1 else None,
           "offload": "optimizer+params" if cfg.get("fsdp_cpu_offload") else "none"}
    if cfg["loss"]["_component_"].endswith("CEWithChunkedOutputLoss"):
        out.update(loss="chunked", loss_chunks=cfg["loss"]["num_output_chunks"])
    else:
        out["loss"] = "full"
    if method != "full":
        m = cfg["model"]
        names = {v: k for k, v in tune_target.ATTENTION.items()}
        targets = [names[n] for n in m["lora_attn_modules"]] + \
            (["gate_proj", "up_proj", "down_proj"] if m["apply_lora_to_mlp"] else []) + \
            (["lm_head"] if m["apply_lora_to_output"] else [])
        all_linear = ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]
        out.update(lora_rank=m["lora_rank"], lora_dropout=m["lora_dropout"],
                   lora_targets="all-linear" if targets == all_linear else targets)
    return out


@pytest.fixture(params=sorted(TUNE_PLANS))
def tuned(request, tmp_path):
    plan = launch_plan(TUNE_PLANS[request.param])
    write(launch_files(plan, ["torchtune"]), tmp_path)
    return plan, tmp_path


def test_torchtune_model_through_torchtune(tuned):
    """torchtune builds the written model (on the meta device: no memory) with exactly the trainable parameters
    gpuplan counted."""
    require("torchtune")
    import torch
    from omegaconf import OmegaConf
    from torchtune import config
    from torchtune.modules.peft import get_adapter_params, set_trainable_params

    plan, folder = tuned
    cfg = OmegaConf.load(folder / "torchtune.yaml")
    with torch.device("meta"):
        model = config.instantiate(cfg.model)
    if plan.scenario.method != "full":
        set_trainable_params(model, get_adapter_params(model))
    assert sum(p.numel() for p in model.parameters() if p.requires_grad) == plan.result.model.params_trainable


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(TUNE_PLANS))
def test_torchtune_config_through_torchtune(name, tune_validated):
    """torchtune's own checks of the rest, in a child process where torchtune.training imports: every
    component's arguments bind (``torchtune.config.validate``), the recipe is one torchtune ships, ``tune run``
    parses the command, and the keys read back are the plan's, with the same estimate."""
    plan, read, argv = tune_validated[name]
    s = plan.scenario
    assert read["torchao"] == "0.15.0" and read["recipe"] in read["recipes"]
    assert read["recipe"] == ("full" if s.method == "full" else "lora") + "_finetune_" + \
        ("single_device" if s.world_size == 1 else "distributed")
    back = tune_back(read["config"], argv)
    for field, value in back.items():
        want = plan.model.name if field == "model" else getattr(s, field)
        assert value == (list(want) if isinstance(want, tuple) else want), field
    again = gpuplan.estimate({**back, "gpu": s.gpu}, advise=False)
    assert again.memory.device_peak_gib == pytest.approx(plan.result.memory.device_peak_gib, rel=1e-12)


# ---- Unsloth ----------------------------------------------------------------------------------------------
UNSLOTH_PLANS = {  # QLoRA on spot (offloaded checkpoints, fused loss), 16-bit LoRA over DDP with the full loss,
    # 8-bit LoRA with plain checkpointing and an 8-bit optimizer
    "qlora-spot": dict(model="llama-3.1-8b", task="train", stack="unsloth", method="qlora", gpu="l40s",
                       micro_batch_size=2, grad_accum_steps=4, train_tokens=1e7, pricing="spot"),
    "lora-ddp-full-loss": dict(model="qwen2.5-7b", task="train", stack="unsloth", method="lora", gpu="l40s",
                               num_gpus=2, sharding="ddp", loss="full", lora_targets=["q_proj", "v_proj"],
                               lora_rank=32),
    "lora-int8": dict(model="qwen2.5-1.5b", task="train", stack="unsloth", method="lora", quant="int8",
                      gpu="rtx-4090", grad_checkpointing="full", activation_offload=False,
                      optimizer="adamw-8bit", lora_dropout=0.05),
}
UNSLOTH_SIGNATURES = json.loads((Path(__file__).parents[1] / "data" / "unsloth" /
                                 f"signatures-{UNSLOTH_VERSION}.json").read_text())


def read_unsloth(folder: Path) -> dict:
    """The script's literals (``LOAD``, ``PEFT``, ``TRAIN``, ``DTYPE``, ``DATASET``), after checking that it
    compiles, that it calls from_pretrained, get_peft_model and SFTConfig (DPOConfig) with them, and sets
    ``UNSLOTH_RETURN_LOGITS`` (if it does) before importing Unsloth."""
    import ast

    source = (folder / "unsloth_train.py").read_text()
    tree = ast.parse(source)
    compile(tree, "unsloth_train.py", "exec")
    out = {t.id: ast.literal_eval(node.value) for node in tree.body if isinstance(node, ast.Assign)
           for t in node.targets if isinstance(t, ast.Name) and t.id.isupper()}
    calls = {ast.unparse(n.func): [ast.unparse(k.value) for k in n.keywords if k.arg is None]
             for n in ast.walk(tree) if isinstance(n, ast.Call)}
    assert calls["FastLanguageModel.from_pretrained"] == ["LOAD"]
    assert calls["FastLanguageModel.get_peft_model"] == ["PEFT"]
    assert calls.get("SFTConfig", calls.get("DPOConfig")) == ["TRAIN"]  # TRL's SFT or DPO config (a DPO plan)
    lines = source.splitlines()
    logits = [i for i, line in enumerate(lines) if line.startswith('os.environ["UNSLOTH_RETURN_LOGITS"] = "1"')]
    out["return_logits"] = bool(logits)
    assert all(i < lines.index(next(x for x in lines if x.startswith("from unsloth import"))) for i in logits)
    return out


@pytest.fixture(params=sorted(UNSLOTH_PLANS))
def unsloth_written(request, tmp_path):
    plan = launch_plan(UNSLOTH_PLANS[request.param])
    write(launch_files(plan, ["unsloth"]), tmp_path)
    return plan, tmp_path


def test_unsloth_script_against_signatures(unsloth_written, monkeypatch):
    """Every argument is a named parameter of Unsloth's from_pretrained / get_peft_model (unsloth 2026.10.9,
    captured from its source: both also take **kwargs, which would swallow a misspelt one), the SFTConfig
    fields build TRL's own SFTConfig, and the values are the plan's."""
    require("trl")
    import transformers.training_args as ta
    from transformers import TrainingArguments
    from trl import SFTConfig

    plan, folder = unsloth_written
    s = plan.scenario
    read = read_unsloth(folder)
    assert UNSLOTH_SIGNATURES["unsloth_version"] == UNSLOTH_VERSION
    assert set(read["LOAD"]) | {"dtype"} <= set(UNSLOTH_SIGNATURES["from_pretrained"]["parameters"])
    assert set(read["PEFT"]) <= set(UNSLOTH_SIGNATURES["get_peft_model"]["parameters"])
    monkeypatch.setattr(ta, "is_torch_bf16_gpu_available", lambda: True)  # the plan's GPU, emulated
    monkeypatch.setattr(TrainingArguments, "world_size", property(lambda self: s.dp))
    monkeypatch.chdir(folder)
    args = SFTConfig(**read["TRAIN"])
    assert (args.per_device_train_batch_size, args.gradient_accumulation_steps, args.max_length) == (
        s.micro_batch_size, s.grad_accum_steps, s.seq_len)
    assert args.packing and args.bf16 and args.max_steps == (plan.max_steps or -1)
    if plan.save_steps is not None:
        assert args.save_steps == plan.save_steps
    assert read["LOAD"]["load_in_4bit"] == (s.method == "qlora") and read["LOAD"]["max_seq_length"] == s.seq_len
    assert read["PEFT"]["r"] == s.lora_rank and read["return_logits"] == (s.loss == "full")


def test_unsloth_round_trip(unsloth_written, monkeypatch):
    plan, folder = unsloth_written
    s = plan.scenario
    read = read_unsloth(folder)
    load, peft, train = read["LOAD"], read["PEFT"], read["TRAIN"]
    argv = argv_of(folder / "unsloth-run.sh")
    gpus = int(argv[argv.index("--nproc-per-node") + 1]) if argv[0] == "torchrun" else 1
    checkpointing = peft["use_gradient_checkpointing"]
    optim, impl = OPTIM[train["optim"]]
    back = {"model": load["model_name"], "task": "train", "stack": "unsloth",
            "method": "qlora" if load["load_in_4bit"] else "lora", "seq_len": load["max_seq_length"],
            "micro_batch_size": train["per_device_train_batch_size"],
            "grad_accum_steps": train["gradient_accumulation_steps"], "optimizer": optim, "optimizer_impl": impl,
            "lora_rank": peft["r"], "lora_dropout": peft["lora_dropout"],
            "lora_targets": "all-linear" if peft["target_modules"] == UNSLOTH_SIGNATURES["default_target_modules"]
            else peft["target_modules"], "grad_checkpointing": "full" if checkpointing else "none",
            "activation_offload": checkpointing == "unsloth", "loss": "full" if read["return_logits"] else
            "fused-linear", "precision": "bf16-mixed" if train["bf16"] else "fp16-mixed", "num_gpus": gpus,
            "sharding": "ddp" if gpus > 1 else "single"}
    if load["load_in_8bit"]:
        back["quant"] = "int8"
    for field, value in back.items():
        want = plan.model.name if field == "model" else (s.sharding or s.resolved_sharding) if field == "sharding" \
            else getattr(s, field)
        assert value == (list(want) if isinstance(want, tuple) else want), field
    again = gpuplan.estimate({**back, "gpu": s.gpu}, advise=False)
    assert again.memory.device_peak_gib == pytest.approx(plan.result.memory.device_peak_gib, rel=1e-12)


# ---- SkyPilot running the stacks ----------------------------------------------------------------------------
STACK_TASKS = {"torchtitan": TITAN_PLANS["fsdp-8b-spot"], "axolotl": AXOLOTL_PLANS["lora-2-nodes"],
               "torchtune": TUNE_PLANS["lora-8b-all-linear"], "unsloth": UNSLOTH_PLANS["qlora-spot"],
               "megatron": {"model": "llama-3.1-8b", "task": "train", "stack": "megatron", "gpu": "h100-sxm",
                            "num_gpus": 16, "tp": 2, "pricing": "spot", "train_tokens": 1e9}}


@pytest.mark.slow
@pytest.mark.parametrize("stack", sorted(STACK_TASKS))
def test_sky_task_runs_the_stack(stack, tmp_path, sky_python):  # noqa: F811 (the fixture imported above)
    """``sky.Task.from_yaml`` reads the task that rents the cards for each stack's plan; it installs the stack and
    runs the stack's own command (on spot with a bucket, checkpoints to /checkpoints for those that resume)."""
    plan = launch_plan(STACK_TASKS[stack])
    write(launch_files(plan, ["skypilot"], LaunchOptions(bucket="ckpt")), tmp_path)
    task = sky_read(sky_python, tmp_path)
    assert task["num_nodes"] == plan.num_nodes and list(task["accelerators"].values()) == [plan.gpus_per_node]
    run = task["run"].replace(" \\\n    ", " ")
    command = {"torchtitan": "-m torchtitan.train --job.config_file torchtitan.toml --job.dump_folder /checkpoints",
               "axolotl": "axolotl train axolotl.yaml --output-dir /checkpoints --launcher torchrun --",
               "torchtune": "tune run lora_finetune_single_device --config torchtune.yaml",
               "unsloth": "OUTPUT_DIR=/checkpoints python unsloth_train.py",
               "megatron": "--save /checkpoints --load /checkpoints"}[stack]
    assert command in run and stack in task["setup"]
    if stack == "megatron":  # in NVIDIA's PyTorch container, from Megatron-LM's checkout
        assert list(task["image_id"].values()) == ["docker:nvcr.io/nvidia/pytorch:26.06-py3"]  # by region
        assert run.startswith("cd megatron-lm\ntorchrun") and "pretrain_gpt.py" in run


def test_megatron_files_name_the_checkout_they_were_read_with():
    """A Megatron plan's files say Megatron-LM's commit and container, not the Hugging Face packages the other
    stacks pin (issue 32: the header said `pip install torch transformers accelerate trl datasets`)."""
    plan = launch_plan(STACK_TASKS["megatron"])
    files = launch_files(plan, ["megatron", "skypilot"], LaunchOptions(bucket="ckpt"))
    scripts = [f for f in files if f.name in ("megatron-pretrain.sh", "sky.yaml")]
    assert len(scripts) == 2  # beside them, plan.json
    for f in scripts:
        header = [line for line in f.text.splitlines() if "tested with:" in line]
        assert header == ["# tested with: Megatron-LM d98e8a64ddf3 (https://github.com/NVIDIA/Megatron-LM.git) in "
                          "nvcr.io/nvidia/pytorch:26.06-py3; NeMo 2.0's recipes (--target nemo) in NVIDIA's NeMo "
                          "container"], f.name
        assert "transformers==" not in f.text, f.name
