"""Where `gpuplan launch --smoke` writes (s20-sec): its runs replace the launch files in the folder and clear the
plan's output_dir (its checkpoints) before each target, so the folder must be new or empty unless --force; with
--force, a link put where it writes is removed, never written through. Before: `gpuplan launch ... --smoke` into
the default folder a real `gpuplan launch` had written replaced the user's edited trainer.yaml without --force and
deleted gpuplan-launch/checkpoints; a `smoke-inputs` link to another folder had the tiny model and data written
there."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpuplan import api
from gpuplan.cli import run
from gpuplan.errors import GpuplanError
from gpuplan.launchers import smoke as smoke_module
from gpuplan.launchers.smoke_serve import smoke_llama_cpp
from gpuplan.scenario import scenario_from

TRAIN = ["launch", "--model", "qwen2.5-0.5b", "--task", "train", "--method", "lora", "--gpu", "a100-80gb",
         "--target", "trainer"]


def stub_run(monkeypatch) -> list[Path]:
    """Each target's run replaced by a passing one that records the folder (what it runs is test_smoke's)."""
    seen: list[Path] = []

    def ran(target, plan, opts, folder, cuda, timeout_s):
        seen.append(Path(folder) / opts.output_dir)
        return smoke_module.SmokeRun(target=target, command="stub", returncode=0, seconds=0.0, losses=(2.0, 1.0),
                                     checkpoint=True, tail="")

    monkeypatch.setattr(smoke_module, "run_target", ran)
    return seen


def test_a_smoke_run_leaves_a_folder_that_holds_files_as_it_was(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    stub_run(monkeypatch)
    assert run(TRAIN) == 0  # the real launch into the default folder, gpuplan-launch
    folder = tmp_path / "gpuplan-launch"
    (folder / "trainer.yaml").write_text("# my edited config\n")
    (folder / "checkpoints").mkdir()
    (folder / "checkpoints" / "step-9000.safetensors").write_text("weights")
    assert run([*TRAIN, "--smoke"]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "new or empty folder" in err and "checkpoints, plan.json, trainer.yaml" in err, err
    assert (folder / "trainer.yaml").read_text() == "# my edited config\n"
    assert (folder / "checkpoints" / "step-9000.safetensors").read_text() == "weights"
    assert sorted(p.name for p in folder.iterdir()) == ["checkpoints", "plan.json", "trainer.yaml"]
    with pytest.raises(GpuplanError, match="new or empty folder"):  # the Python API alike
        api.smoke({"model": "qwen2.5-0.5b", "task": "train", "method": "lora", "gpu": "a100-80gb"},
                      folder=folder, targets=["trainer"])
    with pytest.raises(GpuplanError, match="new or empty folder"):  # and a serving plan's, before llama-server runs
        smoke_llama_cpp(scenario_from(dict(model="qwen2.5-0.5b", task="infer", engine="llama.cpp", gpu="l40s")),
                        folder, Path("/nonexistent/llama-server"))
    assert (folder / "trainer.yaml").read_text() == "# my edited config\n"


def test_with_force_a_link_where_a_smoke_run_writes_is_removed_not_followed(tmp_path, monkeypatch):
    seen = stub_run(monkeypatch)
    elsewhere, folder = tmp_path / "elsewhere", tmp_path / "run"
    elsewhere.mkdir()
    folder.mkdir()
    (elsewhere / "keep.txt").write_text("mine")
    (folder / "smoke-inputs").symlink_to(elsewhere)
    (folder / "checkpoints").symlink_to(elsewhere)
    (folder / "trainer.yaml").symlink_to(elsewhere / "keep.txt")
    assert run([*TRAIN, "--smoke", "--force", "-o", str(folder)]) == 0
    assert sorted(p.name for p in elsewhere.iterdir()) == ["keep.txt"] and (elsewhere / "keep.txt").read_text() == \
        "mine"
    assert (folder / "smoke-inputs" / "chats.jsonl").is_file() and not (folder / "smoke-inputs").is_symlink()
    assert not (folder / "trainer.yaml").is_symlink() and "gpuplan launch --smoke" in (folder /
                                                                                        "trainer.yaml").read_text()
    assert seen == [folder / "checkpoints"] and not (folder / "checkpoints").exists()  # the link cleared for the run


def test_a_smoke_folder_that_is_a_file_is_one_sentence(tmp_path):
    (tmp_path / "f").write_text("x")
    with pytest.raises(GpuplanError, match="is a file, not a folder"):
        smoke_module.smoke_folder(tmp_path / "f", force=True)
    assert smoke_module.smoke_folder(tmp_path / "new") == tmp_path / "new"
