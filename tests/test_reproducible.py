"""Reproducible installs (issue 22): constraints.txt pins what the suite was validated with, the README's test
command and .ci/run use it, CI runs that command once in a fresh clone, and a test comparing with a library's output
fails in one line on another release."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

import conftest

ROOT = Path(__file__).resolve().parents[1]
tomllib = pytest.importorskip("tomllib", reason="reading pyproject.toml needs Python 3.11")


def readme_test_command() -> str:
    blocks = re.findall(r"```bash\n(.*?)```", (ROOT / "README.md").read_text(encoding="utf-8"), re.S)
    return blocks[1].strip()  # the README's second command: install everything, run the tests


def test_ci_runs_the_readme_test_command_once_in_a_fresh_clone():
    command = readme_test_command()
    assert command == "pip install torch==2.13.0 && pip install -e '.[all]' -c constraints.txt && pytest -q"
    lines = [line.strip() for line in (ROOT / ".ci" / "run").read_text().splitlines()
             if line.strip() and not line.lstrip().startswith("#")]
    assert lines[-1] == command  # the last step, exactly
    clone = next(n for n, line in enumerate(lines) if line.startswith("git clone"))
    moved = next(n for n, line in enumerate(lines) if line.startswith('cd "$clone"'))
    assert clone < moved < len(lines) - 1
    assert sum(bool(re.search(r"\bpytest\b", line)) for line in lines) == 1  # the suite runs once


def test_constraints_pin_every_requirement_and_the_versions_the_data_were_made_with():
    pins = conftest.validated_versions()
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    wanted = [Requirement(r) for r in project["dependencies"]]
    wanted += [Requirement(r) for extra in project["optional-dependencies"].values() for r in extra]
    missing = [str(r) for r in wanted if r.name != "gpuplan" and canonicalize_name(r.name) not in pins
               and canonicalize_name(r.name) != "skypilot"]  # skypilot: its own environment (pyproject.toml)
    assert not missing, missing
    for r in wanted:  # every pin satisfies the project's own bounds
        if canonicalize_name(r.name) in pins:
            assert r.specifier.contains(pins[canonicalize_name(r.name)], prereleases=True), (str(r), pins[r.name])
    assert pins["torch"] == re.search(r"torch==([\d.]+)", readme_test_command())[1]
    traced = {json.loads(p.read_text())["transformers"]
              for p in (ROOT / "src" / "gpuplan" / "data" / "models" / "structures").glob("*.json")}
    assert traced == {pins["transformers"]}  # the bundled structures were read off the pinned release


def test_another_release_fails_in_one_line(monkeypatch):
    monkeypatch.delenv("GPUPLAN_ANY_VERSIONS", raising=False)
    monkeypatch.setattr(conftest, "validated_versions", lambda: {"pytest": "0.0.1"})
    with pytest.raises(pytest.fail.Exception) as failed:
        conftest.check_version("pytest")
    message = str(failed.value)
    assert "\n" not in message and message.startswith("this test compares with pytest 0.0.1 (constraints.txt)")
    monkeypatch.setenv("GPUPLAN_ANY_VERSIONS", "1")  # .ci/newest: compare anyway
    conftest.check_version("pytest")
