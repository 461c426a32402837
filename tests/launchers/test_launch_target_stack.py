"""A stack's own target plans that stack (the walk of session 13, findings 10 and 11): ``launch --target kohya``
without ``--stack`` predicts the kohya plan its TOML runs, not the diffusers plan; a target that contradicts the
stack named is one sentence, exit 2; and launch says the resolver's notes, as ``estimate`` does.

The values: SDXL LoRA at 1024 px on an RTX 4090. Before the fix, ``--target kohya`` alone wrote ``kohya.toml`` under a
header predicting the diffusers plan (11.8 GiB, 2.48 it/s: diffusers' script freezes the text encoders); kohya's
train_network.py trains the CLIP encoders' LoRA by default (``network_train_unet_only`` unset), so its plan is 15.45 GiB
and 1.99 it/s, the plan ``--stack kohya`` gave all along. The independent check is that plan: the target alone must
print exactly its header and predictions."""

from __future__ import annotations

import json
import sys

import pytest

import gpuplan
from gpuplan.cli import run
from gpuplan.errors import GpuplanError

SDXL = ["--model", "sdxl", "--task", "train", "--method", "lora", "--gpu", "rtx-4090", "--resolution", "1024"]


def launch(tmp_path, name: str, *args: str):
    out = tmp_path / name
    assert run(["launch", *SDXL, *args, "-o", str(out)]) == 0
    return out


def header(path) -> list[str]:
    """The comment lines a written file opens with, less the first (the command that wrote it)."""
    lines = [line for line in path.read_text().splitlines() if line.startswith("#")]
    return lines[1:]


def test_kohya_target_predicts_the_kohya_plan(tmp_path):
    alone, named = launch(tmp_path, "alone", "--target", "kohya"), launch(tmp_path, "named", "--stack", "kohya")
    assert header(alone / "kohya.toml") == header(named / "kohya.toml")
    said = "\n".join(header(alone / "kohya.toml"))
    assert "# plan: 1x GeForce RTX 4090, kohya, lora" in said
    # 15.45 GiB: its LoRA network fp32 (networks/lora.py), was 15.22 with bf16 adapters and fp32 moments
    assert "device peak 15.4 GiB of 23.9" in said and "1.99 it/s" in said, said
    plan = json.loads((alone / "plan.json").read_text())
    assert plan["predicted"]["device_peak_gib_per_gpu"] == pytest.approx(15.45, abs=0.005)
    assert plan["predicted"]["it_per_s"] == pytest.approx(1.99, abs=0.005)
    assert plan["scenario"]["stack"] == "kohya"
    toml = (alone / "kohya.toml").read_text()
    assert "network_train_unet_only = false" in toml  # the text encoders' LoRA trained, as the plan counts
    diffusers = json.loads((launch(tmp_path, "diffusers", "--target", "diffusers") / "plan.json").read_text())
    # 11.79 GiB: peft's bf16 adapters with bf16 moments (train_dreambooth_lora_sdxl.py), was 11.88 with fp32 moments
    assert diffusers["predicted"]["device_peak_gib_per_gpu"] == pytest.approx(11.79, abs=0.005)
    assert diffusers["predicted"]["it_per_s"] == pytest.approx(2.48, abs=0.005)


def test_a_target_against_the_stack_named_is_one_sentence(tmp_path, capsys):
    out = tmp_path / "o"
    assert run(["launch", *SDXL, "--stack", "diffusers", "--target", "kohya", "-o", str(out)]) == 2
    captured = capsys.readouterr()
    assert captured.err == ("error: --target kohya writes stack kohya's files, and --stack diffusers plans stack "
                            "diffusers: drop --stack or pick --target diffusers\n")
    assert not out.exists()


def test_the_python_api_plans_the_targets_stack(tmp_path):
    fields = {"model": "sdxl", "task": "train", "method": "lora", "gpu": "rtx-4090", "resolution": "1024"}
    report = gpuplan.launch(fields, targets=["kohya"], folder="-")
    assert report.scenario["stack"] == "kohya" and report.setup == "1x GeForce RTX 4090, kohya, lora"
    assert report.predicted["device_peak_gib_per_gpu"] == pytest.approx(15.45, abs=0.005)
    with pytest.raises(GpuplanError, match="drop --stack or pick --target diffusers"):
        gpuplan.launch({**fields, "stack": "diffusers"}, targets=["kohya"], folder="-")


def test_an_llm_stacks_target_plans_its_stack(tmp_path, capsys):
    """``--target torchtune`` was refused without ``--stack torchtune`` ("the plan is not for stack torchtune");
    it now plans torchtune's recipe. Against ``--stack hf`` it is one sentence naming the hf target."""
    base = ["launch", "--model", "llama-3.1-8b", "--task", "train", "--method", "lora", "--gpu", "h100-sxm"]
    out = tmp_path / "tt"
    assert run([*base, "--target", "torchtune", "-o", str(out)]) == 0
    assert sorted(p.name for p in out.iterdir()) == ["plan.json", "torchtune.yaml", "tune-run.sh"]
    assert json.loads((out / "plan.json").read_text())["scenario"]["stack"] == "torchtune"
    capsys.readouterr()
    assert run([*base, "--stack", "hf", "--target", "torchtune", "-o", str(tmp_path / "no")]) == 2
    assert capsys.readouterr().err == ("error: --target torchtune writes stack torchtune's files, and --stack hf "
                                       "plans stack hf: drop --stack or pick --target trainer\n")


def test_launch_says_the_resolvers_notes(tmp_path, capsys, monkeypatch):
    """`h100` is taken as the SXM5 card, as `estimate` says in a note; launch says it too, and the files' plan line
    names the card taken."""
    args = ["launch", "--model", "llama-3.1-8b", "--task", "train", "--method", "lora", "--gpu", "h100",
            "--target", "trainer", "-o", str(tmp_path / "o")]
    monkeypatch.setattr(sys, "argv", ["gpuplan", *args])
    assert run(args) == 0
    said = " ".join(capsys.readouterr().out.split())
    assert ("note: h100 taken as H100 SXM5 80GB (nvidia-h100-sxm5-80gb); it could also be h100-pcie-80gb: name the "
            "variant to choose") in said
    assert "# plan: 1x H100 SXM5 80GB" in (tmp_path / "o" / "trainer.yaml").read_text()
