"""`stack` (the training code) and `sharding` (DDP, ZeRO, FSDP) are the scenario's words; their old names,
`framework` and `strategy`, still read from files, dicts, flags and the API, with one note that says the new name."""

from __future__ import annotations

import contextlib
import io
import json
import warnings

import pytest

import gpuplan
from gpuplan import errors
from gpuplan.cli import run
from gpuplan.errors import GpuplanError, RenamedWarning
from gpuplan.scenario import load_scenario, scenario_from


@pytest.fixture(autouse=True)
def said_afresh(monkeypatch):
    monkeypatch.setattr(errors, "_SAID", set())  # each old name is said once per process: afresh per test


def test_old_field_names_read_as_the_new_ones(tmp_path):
    path = tmp_path / "old.yaml"
    path.write_text("model: llama-3.1-8b\ntask: train\nframework: torchtune\nstrategy: fsdp\nnum_gpus: 2\n",
                    encoding="utf-8")
    with pytest.warns(RenamedWarning) as said:
        s = load_scenario(path)
    assert (s.stack, s.sharding, s.sharded_by) == ("torchtune", "fsdp2", "fsdp2")  # torchtune's FSDP is FSDP2
    assert {"stack", "sharding"} <= s.model_fields_set and "framework" not in s.model_dump()
    assert sorted(str(w.message) for w in said) == [
        "the scenario field 'framework' is now 'stack' (the old name still works)",
        "the scenario field 'strategy' is now 'sharding' (the old name still works)"]
    new = scenario_from({"model": "llama-3.1-8b", "task": "train", "stack": "torchtune", "sharding": "fsdp",
                         "num_gpus": 2})
    assert s == new


def test_an_old_name_is_said_once_per_process():
    with warnings.catch_warnings(record=True) as said:
        warnings.simplefilter("always")
        for _ in range(3):
            scenario_from({"model": "llama-3.1-8b", "task": "train", "framework": "unsloth"})
    assert len([w for w in said if issubclass(w.category, RenamedWarning)]) == 1


def test_both_names_at_once_must_agree():
    with pytest.raises(GpuplanError, match="give stack or its old name framework, not both"):
        scenario_from({"model": "llama-3.1-8b", "task": "train", "stack": "hf", "framework": "unsloth"})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RenamedWarning)
        same = scenario_from({"model": "llama-3.1-8b", "task": "train", "stack": "hf", "framework": "hf"})
    assert same.stack == "hf"


def test_old_flags_work_and_say_the_new_name_once():
    argv = ["estimate", "--json", "--model", "llama-3.1-8b", "--task", "train", "--method", "lora", "--gpu",
            "a100-sxm4-80gb", "--num-gpus", "2"]
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        assert run([*argv, "--framework", "torchtune", "--strategy", "fsdp"]) == 0
    old = json.loads(out.getvalue())
    assert err.getvalue().splitlines() == ["note: --framework is now --stack (the old name still works)",
                                           "note: --strategy is now --sharding (the old name still works)"]
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()) as quiet:
        assert run([*argv, "--stack", "torchtune", "--sharding", "fsdp"]) == 0
    assert quiet.getvalue() == "" and json.loads(out.getvalue()) == old
    assert (old["scenario"]["stack"], old["scenario"]["sharding"]) == ("torchtune", "fsdp2")
    assert "framework" not in old["scenario"] and "strategy" not in old["scenario"]


def test_old_flags_conflicting_with_new_ones_are_one_error():
    err = io.StringIO()
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
        code = run(["estimate", "--model", "llama-3.1-8b", "--task", "train", "--stack", "hf",
                    "--framework", "unsloth"])
    assert code == 2 and err.getvalue().strip() == "error: give --stack or its old name --framework, not both"


def test_recommends_old_argument_still_reads():
    with pytest.warns(RenamedWarning, match="'any_framework' is now 'any_stack'"):
        old = gpuplan.recommend({"model": "llama-3.2-1b", "task": "train", "method": "lora"}, any_framework=True,
                                top=3, gpus=["rtx-4090"], max_gpus=1)
    new = gpuplan.recommend({"model": "llama-3.2-1b", "task": "train", "method": "lora"}, any_stack=True, top=3,
                            gpus=["rtx-4090"], max_gpus=1)
    assert [x.offer for x in old.setups] == [x.offer for x in new.setups]
    assert {x.scenario.stack for x in new.setups} - {"hf"}  # other stacks searched


def test_one_table_of_renamed_fields_serves_the_scenario_the_flags_and_the_page():
    """The renames are written once (errors.RENAMED_FIELDS); before, the scenario, the CLI and errors each kept
    their own copy. Every old field name reads as its new one in a scenario and as a hidden flag."""
    from gpuplan.cli.app import old_flags
    from gpuplan.scenario import Scenario

    assert errors.RENAMED_FIELDS == {"framework": "stack", "strategy": "sharding"}
    assert errors.RENAMED == {**errors.RENAMED_FIELDS, "any_framework": "any_stack", "think_s": "think_time_s"}
    assert set(errors.RENAMED_FIELDS.values()) <= set(Scenario.model_fields)
    assert not set(errors.RENAMED_FIELDS) & set(Scenario.model_fields)
    assert [p.name for p in old_flags()] == list(errors.RENAMED_FIELDS)
    assert [p.name for p in old_flags(skip=("stack",))] == ["strategy"]
