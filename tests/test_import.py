"""``import gpuplan`` must stay light: no torch, transformers, huggingface_hub, pynvml, rich or typer; the package
itself loads no submodule until one of its names is used (bench/startup.py times it)."""

import subprocess
import sys

import pytest

import gpuplan

HEAVY = ("torch", "transformers", "huggingface_hub", "pynvml", "rich", "typer", "pandas", "tokenizers", "datasets",
         "pyarrow", "jinja2")


def _imported(code: str) -> set[str]:
    proc = subprocess.run([sys.executable, "-X", "importtime", "-c", code], capture_output=True, text=True,
                          check=True)
    return {line.split("|")[-1].strip() for line in proc.stderr.splitlines() if "|" in line}


def test_import_loads_no_heavy_module():
    imported = {name.split(".")[0] for name in _imported("from gpuplan import estimate, load_model, Scenario")}
    assert "gpuplan" in imported  # the trace is real
    assert not imported & set(HEAVY), imported & set(HEAVY)


def test_import_gpuplan_loads_no_submodule():
    imported = _imported("import gpuplan")
    assert "gpuplan" in imported
    assert {name for name in imported if name.startswith("gpuplan.")} == {"gpuplan._version"}  # the ground floor
    assert not imported & {"pydantic", "yaml"}


def test_every_public_name_resolves():
    for name in gpuplan.__all__:
        assert getattr(gpuplan, name) is not None, name
    assert set(gpuplan.__all__) <= set(dir(gpuplan))
    assert gpuplan.Scenario.__module__ == "gpuplan.scenario.fields"


def test_the_api_functions_stay_functions_when_every_module_is_loaded():
    """No subpackage shares a name with a function of the API (the launch files live in gpuplan.launchers), so
    loading every module never rebinds ``gpuplan.launch`` or ``gpuplan.estimate`` to a module."""
    code = ("import gpuplan, gpuplan.launchers, gpuplan.plan.estimate, gpuplan.cli.app, gpuplan.web.api, inspect; "
            "assert all(inspect.isfunction(getattr(gpuplan, n)) for n in "
            "('estimate', 'recommend', 'fit', 'cost', 'capacity', 'launch'))")
    subprocess.run([sys.executable, "-c", code], check=True)


def test_unknown_name_is_an_attribute_error():
    with pytest.raises(AttributeError, match="no_such_name"):
        gpuplan.no_such_name  # noqa: B018
