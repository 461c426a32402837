"""A serving engine's own target plans that engine (as a stack's own target plans that stack:
test_launch_target_stack.py): ``launch --target sglang`` without ``--engine`` was refused ("the plan is for engine
transformers ...: plan again with --engine sglang"); it now plans SGLang's pool, and its header and ``plan.json`` are
exactly those of ``--engine sglang --target sglang``. A target against the engine named is one sentence, exit 2.

The values: Llama 3.1 8B served on one H100 SXM5 (the defaults: one request of 1,024 + 256 tokens). The independent
check is the plan ``--engine X`` gives: the target alone must print exactly its header and predictions, and those
are SGLang's (device peak 79.2 GiB, 155 tokens/s: the pool takes mem_fraction_static of the card), not vLLM's
(71.8 GiB, its gpu_memory_utilization 0.9 of 79.6)."""

from __future__ import annotations

import json

import pytest

import gpuplan
from gpuplan import api
from gpuplan.cli import run
from gpuplan.errors import GpuplanError
from gpuplan.launchers import engine_of

SERVE = ["--model", "llama-3.1-8b", "--task", "infer", "--gpu", "h100-sxm"]
SCRIPT = {"vllm": "vllm-serve.sh", "sglang": "sglang-serve.sh", "trtllm": "trtllm-serve.sh",
          "llama.cpp": "llama-server.sh"}


def launch(tmp_path, name: str, *args: str):
    out = tmp_path / name
    assert run(["launch", *SERVE, *args, "-o", str(out)]) == 0
    return out


def header(path) -> list[str]:
    """The comment lines a written file opens with, less the first (the command that wrote it)."""
    return [line for line in path.read_text().splitlines() if line.startswith("#")][1:]


def test_the_serving_targets_are_the_engines_own():
    """The map is the inverse of each engine profile's launch_target: every serving target, and only those."""
    assert engine_of() == {"vllm": "vllm", "sglang": "sglang", "trtllm": "trtllm", "llama.cpp": "llama.cpp"}


def test_sglang_target_predicts_the_sglang_plan(tmp_path):
    alone, named = launch(tmp_path, "alone", "--target", "sglang"), launch(tmp_path, "named", "--engine", "sglang",
                                                                            "--target", "sglang")
    assert sorted(p.name for p in alone.iterdir()) == ["plan.json", "sglang-serve.sh"]
    assert header(alone / "sglang-serve.sh") == header(named / "sglang-serve.sh")
    said = "\n".join(header(alone / "sglang-serve.sh"))
    assert "# plan: 1x H100 SXM5 80GB, sglang tp1" in said
    assert "device peak 79.2 GiB of 79.6" in said and "155 tokens/s" in said, said
    plan, plan_named = (json.loads((d / "plan.json").read_text()) for d in (alone, named))
    assert plan["predicted"] == plan_named["predicted"] and plan["again"] == plan_named["again"]
    assert plan["predicted"]["device_peak_gib_per_gpu"] == pytest.approx(79.2, abs=0.05)
    assert plan["predicted"]["tokens_per_s"] == pytest.approx(155, abs=0.5)
    assert plan["scenario"]["engine"] == "sglang" and "--engine sglang" in plan["again"]


@pytest.mark.parametrize("target", ["vllm", "trtllm", "llama.cpp"])
def test_each_serving_target_plans_its_engine(tmp_path, target):
    alone, named = launch(tmp_path, "alone", "--target", target), launch(tmp_path, "named", "--engine", target,
                                                                          "--target", target)
    assert header(alone / SCRIPT[target]) == header(named / SCRIPT[target])
    plan = json.loads((alone / "plan.json").read_text())
    assert plan["predicted"] == json.loads((named / "plan.json").read_text())["predicted"]
    assert plan["scenario"]["engine"] == target


def test_vllm_and_sglang_plans_differ(tmp_path):
    """The engine set is not a label: vLLM's pool is 0.9 of the card, so its peak is lower than SGLang's."""
    vllm = json.loads((launch(tmp_path, "v", "--target", "vllm") / "plan.json").read_text())["predicted"]
    assert vllm["device_peak_gib_per_gpu"] == pytest.approx(71.8, abs=0.05)


def test_a_target_against_the_engine_named_is_one_sentence(tmp_path, capsys):
    out = tmp_path / "o"
    assert run(["launch", *SERVE, "--engine", "vllm", "--target", "sglang", "-o", str(out)]) == 2
    assert capsys.readouterr().err == ("error: --target sglang writes engine sglang's files, and --engine vllm plans "
                                       "engine vllm: drop --engine or pick --target vllm\n")
    assert run(["launch", *SERVE, "--engine", "mlx", "--target", "llama.cpp", "-o", str(out)]) == 2
    assert capsys.readouterr().err == ("error: --target llama.cpp writes engine llama.cpp's files, and --engine mlx "
                                       "plans engine mlx: drop --engine (engine mlx has no launch files)\n")
    assert run(["launch", *SERVE, "--target", "sglang,vllm", "-o", str(out)]) == 2
    assert capsys.readouterr().err == ("error: --target sglang writes engine sglang's files and --target vllm engine "
                                       "vllm's, each from its own plan: launch them one at a time\n")
    assert not out.exists()


def test_a_training_plan_takes_no_engine(tmp_path, capsys):
    """A serving target on a training plan is still the target's own refusal, not an engine set on training."""
    args = ["launch", "--model", "llama-3.1-8b", "--task", "train", "--method", "lora", "--gpu", "h100-sxm",
            "--target", "sglang", "-o", str(tmp_path / "o")]
    assert run(args) == 2
    assert capsys.readouterr().err == ("error: --target sglang does not apply: SGLang serves models; a training plan "
                                       "runs with --target trainer, accelerate, deepspeed or torchrun\n")


def test_the_python_api_plans_the_targets_engine():
    fields = {"model": "llama-3.1-8b", "task": "infer", "gpu": "h100-sxm"}
    report = gpuplan.launch(fields, targets=["sglang"], folder="-")
    named = gpuplan.launch({**fields, "engine": "sglang"}, targets=["sglang"], folder="-")
    assert report.scenario["engine"] == "sglang" and report.setup == named.setup
    assert report.predicted == named.predicted
    assert report.predicted["device_peak_gib_per_gpu"] == pytest.approx(79.2, abs=0.05)
    with pytest.raises(GpuplanError, match="drop --engine or pick --target vllm"):
        gpuplan.launch({**fields, "engine": "vllm"}, targets=["sglang"], folder="-")


def test_smoke_takes_the_targets_engine(tmp_path):
    """--smoke --target sglang was refused as engine transformers'; it is now SGLang's, which needs a GPU; a target
    against the engine named is refused as launch refuses it."""
    fields = {"model": "llama-3.1-8b", "task": "infer", "gpu": "h100-sxm"}
    with pytest.raises(GpuplanError, match="engine sglang needs a GPU"):
        api.smoke(fields, folder=tmp_path / "s", targets=["sglang"])
    with pytest.raises(GpuplanError, match="drop --engine or pick --target vllm"):
        api.smoke({**fields, "engine": "vllm"}, folder=tmp_path / "v", targets=["llama.cpp"])
