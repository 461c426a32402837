"""The repository carries every file its tests and benchmarks read (issue 22): the files a commit would hold are
copied into an empty temporary folder and the suite's data paths run there, with nothing beside the copy, a fresh
home folder and no network. A second check reads the code for paths that leave the repository."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
# where the files of a checkout live when git cannot list them (an unpacked source archive)
FOLDERS = ("src", "bench", "tests", "examples", "docs", ".ci")
FILES = ("pyproject.toml", "README.md", "constraints.txt")


def repository_files() -> list[str]:
    """The files a commit of the working tree would hold: tracked ones and untracked ones git does not ignore
    (``git ls-files``); without git, the package, bench, tests and the root's project files."""
    if shutil.which("git"):
        proc = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard", "-z"], cwd=ROOT,
                              capture_output=True, text=True)
        if proc.returncode == 0 and proc.stdout:
            return [f for f in proc.stdout.split("\0") if f and (ROOT / f).is_file()]
    found = [p for folder in FOLDERS for p in (ROOT / folder).rglob("*")
             if p.is_file() and "__pycache__" not in p.parts and ".pytest_cache" not in p.parts]
    found += [ROOT / f for f in FILES if (ROOT / f).is_file()]
    return [str(p.relative_to(ROOT)) for p in found]


@pytest.fixture(scope="module")
def copy(tmp_path_factory) -> tuple[Path, dict[str, str]]:
    """(the copy, the environment to run in it): its own src first on the import path, an empty home and cache,
    Hugging Face offline."""
    alone = tmp_path_factory.mktemp("alone")  # holds the copy and nothing else
    repo = alone / "repo"
    for name in repository_files():
        target = repo / name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / name, target)
    home = tmp_path_factory.mktemp("home")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GPUPLAN_", "HF_", "PYTHON"))}
    env.update(PYTHONPATH=str(repo / "src"), HOME=str(home), GPUPLAN_CACHE_DIR=str(home / "cache"),
               GPUPLAN_CONFIG_DIR=str(home / "config"), HF_HOME=str(home / "hf"), HF_HUB_OFFLINE="1",
               PYTHONDONTWRITEBYTECODE="1")
    return repo, env


def run(repo: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess:
    proc = subprocess.run([sys.executable, *args], cwd=repo, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc


def test_the_copy_holds_only_the_repository(copy):
    repo, env = copy
    assert [p.name for p in repo.parent.iterdir()] == ["repo"]
    assert (repo / "bench" / "data" / "measured-public.csv").is_file()
    where = run(repo, env, "-c", "import gpuplan; print(gpuplan.__file__)").stdout.strip()
    assert Path(where).is_relative_to(repo), where  # the copy's package, not an installed one


@pytest.mark.parametrize("script, stored", [("bench/make_cases.py", "bench/accuracy_cases.yaml"),
                                            ("bench/make_throughput_cases.py", "bench/throughput_cases.yaml")])
def test_the_case_files_build_from_the_copy(copy, tmp_path, script, stored):
    repo, env = copy
    out = tmp_path / "built.yaml"
    run(repo, env, script, "--out", str(out))
    built = yaml.safe_load(out.read_text())
    assert built == yaml.safe_load((repo / stored).read_text())
    assert len(built["cases"]) >= 150


def test_the_accuracy_cases_run_in_the_copy(copy):
    """Every stored memory and throughput case loads its model (bundled, or a config under bench/models) and is
    scored: none rejected."""
    repo, env = copy
    code = ("import json, sys, yaml; sys.path.insert(0, 'bench'); import accuracy, throughput\n"
            "memory = yaml.safe_load(open('bench/accuracy_cases.yaml'))['cases']\n"
            "scored, ooms, rejected = accuracy.run(memory)\n"
            "speed, _ = throughput.run(yaml.safe_load(open('bench/throughput_cases.yaml'))['cases'])\n"
            "print(json.dumps([len(memory), len(scored), len(ooms), len(rejected), len(speed)]))")
    cases, scored, ooms, rejected, speed = json.loads(run(repo, env, "-c", code).stdout.strip().splitlines()[-1])
    assert rejected == 0 and scored + ooms == cases and scored >= 150 and speed >= 150


def test_a_bundled_estimate_answers_from_the_copy(copy):
    repo, env = copy
    proc = run(repo, env, "-m", "gpuplan", "estimate", "--model", "llama-3.1-8b", "--task", "train", "--method",
               "qlora", "--gpu", "rtx-4090", "--json")
    result = json.loads(proc.stdout)
    assert result["model"]["params_total"] == 8_030_261_248  # Llama-3.1-8B's exact count (test_cli.py)
    assert result["memory"]["device_peak_gib"] > 0


# Paths that leave the repository: the workspace's shared folder, absolute workspace paths.
OUTSIDE = re.compile(r"""\.\./shared|["']shared["']\s*/|/work/""")


def test_no_code_reads_beside_the_repository():
    offenders = [f"{name}:{n}" for name in repository_files() if name.endswith(".py")
                 for n, line in enumerate((ROOT / name).read_text(encoding="utf-8").splitlines(), start=1)
                 if OUTSIDE.search(line) and not line.lstrip().startswith("#")]
    offenders = [o for o in offenders if not o.startswith("tests/test_self_contained.py")]
    assert not offenders, offenders


# A path of the machine the work was done on means nothing in a fresh clone: written results name files by the
# repository's own paths (or the workspace's outside files, named in words), never the author's checkout.
MACHINE_PATH = re.compile(r"(?<![\w.])/(?:work|root)/")


def test_no_file_carries_a_path_of_the_authors_machine():
    offenders = [f"{name}:{n}" for name in repository_files()
                 if name.endswith((".md", ".py", ".yaml", ".yml", ".toml", ".csv", ".txt", ".json"))
                 for n, line in enumerate((ROOT / name).read_text(encoding="utf-8", errors="replace").splitlines(), 1)
                 if MACHINE_PATH.search(line)]
    offenders = [o for o in offenders if not o.startswith("tests/test_self_contained.py")]
    assert not offenders, offenders
