"""The bundled YAML files are read through their JSON twins (gpuplan.datafiles): each twin must hold its YAML's data
as the YAML is now, and a stale twin must be passed over for the YAML itself."""

from __future__ import annotations

import json
import shutil
import zlib

import pytest
import yaml

from gpuplan import datafiles
from gpuplan.datafiles import TWINS, read_yaml, twin_of, yaml_crc32


@pytest.mark.parametrize("name", TWINS)
def test_each_twin_is_its_yaml(name):
    """Made from the YAML as it is (after an edit: ``python -m gpuplan.datafiles``), holding the same data."""
    text = (datafiles._folder() / name).read_text(encoding="utf-8")
    twin = json.loads(twin_of(name).read_text(encoding="utf-8"))
    assert twin["yaml_crc32"] == yaml_crc32(text) == f"{zlib.crc32(text.encode('utf-8')):08x}", \
        f"{twin_of(name).name} is stale: run `python -m gpuplan.datafiles` after editing {name}"
    data = yaml.safe_load(text)
    assert data and twin[twin_of(name).stem] == data == read_yaml(name)


def test_a_stale_twin_is_passed_over(tmp_path, monkeypatch):
    """An edited YAML whose twin was not made again is read from the YAML: the edit is what counts."""
    shutil.copy(datafiles._folder() / "providers.yaml", tmp_path / "providers.yaml")
    shutil.copy(twin_of("providers.yaml"), tmp_path / "providers.json")
    monkeypatch.setattr(datafiles, "_folder", lambda: tmp_path)
    assert read_yaml("providers.yaml") == yaml.safe_load((tmp_path / "providers.yaml").read_text(encoding="utf-8"))
    edited = (tmp_path / "providers.yaml").read_text(encoding="utf-8") + "\nadded_by_the_test: 1\n"
    (tmp_path / "providers.yaml").write_text(edited, encoding="utf-8")
    assert read_yaml("providers.yaml")["added_by_the_test"] == 1
    (tmp_path / "providers.json").unlink()
    assert read_yaml("providers.yaml")["added_by_the_test"] == 1


def test_yaml_is_parsed_in_the_two_readers_only():
    """One reader per kind of YAML: the bundled files through :func:`read_yaml` (datafiles), a file on disk through
    the bounded reader (useryaml, behind userfiles.load_yaml). The launchers' skypilot.py and torchtune.py read
    data/skypilot.yaml and data/torchtune.yaml with their own yaml.safe_load, smoke.py the sky.yaml it wrote."""
    import re
    from pathlib import Path

    package = Path(datafiles.__file__).parent
    parsing = re.compile(r"\byaml\.(?:safe_load|load|full_load|unsafe_load|compose|SafeLoader|CSafeLoader)\b"
                         r"|\bfrom yaml\b")
    found = sorted(str(p.relative_to(package)) for p in package.rglob("*.py") if parsing.search(p.read_text()))
    assert found == ["datafiles.py", "useryaml.py"]
    from gpuplan.launchers import skypilot, torchtune

    assert skypilot.names() == read_yaml("skypilot.yaml") and "accelerators" in str(skypilot.names())
    assert torchtune.models() == read_yaml("torchtune.yaml")["models"]
