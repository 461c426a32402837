"""bench/smoke_gpu.py without a GPU: ``--dry-run`` writes every GPU-only target's files on its tiny model and names
the command it would run, and a real run refuses in one sentence (exit 2) where there is no CUDA device. What the
commands start is checked here from the files as written; running them needs a CUDA machine."""

from __future__ import annotations

import importlib.util
import json
import shlex
from pathlib import Path

import pytest

pytestmark = pytest.mark.skipif(not importlib.util.find_spec("trl"), reason="needs trl")  # found, not imported
BENCH = Path(__file__).resolve().parents[2] / "bench" / "smoke_gpu.py"


@pytest.fixture(scope="module")
def smoke_gpu():
    spec = importlib.util.spec_from_file_location("smoke_gpu", BENCH)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def words(path: Path) -> list[str]:
    """The script's last command as the shell splits it (comments and ``set -euo pipefail`` left out)."""
    lines = [line for line in path.read_text().splitlines() if not line.startswith(("#", "set "))]
    return shlex.split("\n".join(lines).replace("\\\n", " "))


def test_dry_run_writes_each_target_and_names_its_command(smoke_gpu, tmp_path):
    runs = smoke_gpu.dry_run(tmp_path, [*smoke_gpu.TRAIN, "megatron", *smoke_gpu.SERVE], 6, None)
    by = {name: (Path(cwd), argv) for name, cwd, argv in runs}
    assert list(by) == ["torchtitan", "unsloth", "trainer", "deepspeed", "megatron", "vllm", "sglang", "trtllm"]
    assert by["torchtitan"][1] == ["bash", "torchtitan-run.sh"]
    titan = words(tmp_path / "torchtitan" / "torchtitan-run.sh")
    assert titan[titan.index("--nproc-per-node") + 1] == "1" and "torchtitan.train" in titan
    toml = (tmp_path / "torchtitan" / "torchtitan.toml").read_text()
    assert 'flavor = "gpuplan"' in toml and "steps = 6" in toml  # the tiny Llama, CUDA's bf16 path, 6 steps
    assert by["unsloth"][1] == ["bash", "unsloth-run.sh"]
    unsloth = (tmp_path / "unsloth" / "unsloth_train.py").read_text()
    assert "'load_in_4bit': True" in unsloth and "'max_steps': 6" in unsloth  # QLoRA kept on CUDA
    assert by["trainer"][1][-3:] == ["trl.scripts.sft", "--config", "trainer.yaml"]
    assert by["deepspeed"][1] == ["bash", "accelerate-launch.sh"]
    ds = json.loads((tmp_path / "deepspeed" / "ds_config.json").read_text())
    assert ds["zero_optimization"]["stage"] == 3 and ds["zero_optimization"]["offload_param"]["device"] == "cpu"


def test_dry_run_megatron_and_serving_commands(smoke_gpu, tmp_path):
    runs = {name: argv for name, _, argv in smoke_gpu.dry_run(tmp_path, ["megatron", *smoke_gpu.SERVE], 6, None)}
    meg = words(tmp_path / "megatron" / "megatron-pretrain.sh")
    assert runs["megatron"] == ["bash", str(tmp_path / "megatron" / "megatron-pretrain.sh")]
    assert meg[:2] == ["torchrun", "--nproc-per-node"] and "pretrain_gpt.py" in meg and "--mock-data" in meg
    last = {flag: meg[len(meg) - 1 - meg[::-1].index(flag) + 1] for flag in ("--train-iters", "--num-layers",
                                                                             "--hidden-size", "--tokenizer-model")}
    assert last == {"--train-iters": "6", "--num-layers": "2", "--hidden-size": "64",
                    "--tokenizer-model": str(tmp_path / "megatron" / "inputs" / "model")}
    model = {e: str(tmp_path / f"serve-{e}" / "inputs" / "model") for e in smoke_gpu.SERVE}
    vllm, sglang, trt = (words(tmp_path / f"serve-{e}" / smoke_gpu.SERVE[e][1]) for e in ("vllm", "sglang", "trtllm"))
    assert vllm[:3] == ["vllm", "serve", model["vllm"]] and vllm[vllm.index("--max-model-len") + 1] == "256"
    assert sglang[sglang.index("--model-path") + 1] == model["sglang"] and "--context-length" in sglang
    assert trt[:2] == ["trtllm-serve", model["trtllm"]] and trt[trt.index("--max_seq_len") + 1] == "256"
    for e, argv in zip(smoke_gpu.SERVE, (vllm, sglang, trt), strict=True):
        assert runs[e] == ["bash", smoke_gpu.SERVE[e][1]] and argv[argv.index("--port") + 1] == "8000"
        cfg = json.loads((Path(model[e]) / "config.json").read_text())
        assert cfg["head_dim"] == 64 and cfg["num_hidden_layers"] == 2  # a head size the attention kernels take


def test_without_cuda_it_refuses_in_one_sentence(smoke_gpu, capsys, monkeypatch):
    import torch

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert smoke_gpu.main(["--only", "vllm"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("no CUDA device") and "--dry-run" in err and err.count("\n") == 1
