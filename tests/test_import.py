"""``import gpuplan`` must stay light: no torch, transformers, huggingface_hub, pynvml, rich or typer; the package
itself loads no submodule until one of its names is used (bench/startup.py times it)."""

import json
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

import gpuplan

ROOT = Path(__file__).resolve().parents[1]
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


def test_one_command_imports_its_own_module_only():
    """``gpuplan estimate`` imports the estimate command's module and none of the other commands' (the root group
    loads a command when it is named; converting all 17 to click took a fifth of a second of every run), nor the
    catalogs' answers (pydantic models): the card's short name comes from :mod:`gpuplan.api.words`."""
    code = ("import contextlib, io, json, sys; from gpuplan.cli import run\n"
            "with contextlib.redirect_stdout(io.StringIO()):\n"
            "    assert run(['estimate', '--model', 'llama-3.1-8b', '--task', 'infer', '--gpu', 'l4']) == 0\n"
            "print(json.dumps(sorted(sys.modules)))")
    loaded = json.loads(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                                       check=True).stdout)
    commands = {name for name in loaded if name.startswith("gpuplan.cli.")}
    assert "gpuplan.cli.estimate" in commands
    assert "gpuplan.api.words" in loaded and "gpuplan.api.catalog" not in loaded
    assert "rich.table" in loaded and "rich._emoji_codes" not in loaded  # 4,000 emoji: the consoles read none
    assert not commands & {f"gpuplan.cli.{m}" for m in ("capacity", "check", "launch", "market", "models", "plan",
                                                          "prices", "serve")}, commands


def test_a_training_estimate_loads_only_what_it_uses():
    """The first estimate of QLoRA on the Hugging Face stack loads that stack's profile and not the six others, not
    the serving simulation's step model and workloads, not the module plans (diffusion, encoders: their jobs,
    profiles, memory and timing; the readers of diffusers and encoder configs: a decoder's config is told apart
    by gpuplan.model.families), Megatron's layout, the serving engines' profiles and step times, TensorRT-LLM's
    offline run, the GGUF rules, not OpenSSL (hashlib, secrets) and not PyYAML (the bundled
    YAML is read through its JSON twins, gpuplan.datafiles): each was a few milliseconds of every fresh process
    (bench/startup.py). The published recipes' batch loads: it decides the plan's micro-batch x accumulation; the
    recipe's records do not (a plan without data says no recipe), nor the dataset code, with no data named (nor
    statistics), nor the serving decode bands, nor the structures read off transformers (Llama has a reader of its
    own), nor the engines' pool and timing records, nor the records of models that are not decoders (a decoder's
    plan catches NotADecoder, in gpuplan.model.kinds), nor the changes that would make a plan fit (it fits), nor the
    "utf-8-sig" codec (gpuplan.userfiles drops a byte-order mark itself), nor a serving plan's memory and
    speculative decoding, nor the diffusion trainers' profiles, nor the power of one's own cards (a plan priced on a
    rented offer), nor llama.cpp's split over mixed cards, nor pydantic's plugin lookup (``importlib.metadata``,
    every installed distribution's entry points read): pydantic builds none of gpuplan's models (the scenario and
    the plan's parts are validated from their stored schemas, gpuplan.datafiles.made), nor its model machinery
    (``pydantic.main``, the schema generator, ``pydantic.fields`` and ``types``, ``annotated_types``): the scenario,
    the plan and its parts are stored records (gpuplan.stored), validated and dumped by pydantic-core."""
    code = ("import json, sys, gpuplan\n"
            "gpuplan.estimate({'model': 'llama-3.1-8b', 'task': 'train', 'method': 'qlora', 'gpu': 'rtx-4090'})\n"
            "print(json.dumps(sorted(sys.modules)))")
    loaded = set(json.loads(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                                           check=True).stdout))
    assert {"gpuplan.stacks.hf", "gpuplan.serving.load", "gpuplan.plan.batch"} <= loaded  # the trace is real
    unused = {f"gpuplan.stacks.{m}" for m in ("torchtune", "torchtune_step", "torchtitan", "axolotl", "pytorch",
                                              "torchao_nf4", "megatron")} | {
        "gpuplan.serving.steptime", "gpuplan.serving.workload", "hashlib", "secrets", "gpuplan.plan.modules",
        "gpuplan.scenario.modules", "gpuplan.model.profile", "gpuplan.model.record", "gpuplan.speed.modules",
        "gpuplan.memory.modules", "gpuplan.memory.megatron", "gpuplan.serving.offline",
        "gpuplan.speed.inference", "yaml", "gpuplan.useryaml", "gpuplan.model.gguf", "gpuplan.model.diffusers",
        "gpuplan.model.encoders", "gpuplan.dataset", "statistics", "gpuplan.speed.bands", "gpuplan.model.structure",
        "gpuplan.plan.recipe", "gpuplan.engines.records", "gpuplan.model.module_spec", "gpuplan.plan.fixes",
        "encodings.utf_8_sig", "gpuplan.engines.speculative", "gpuplan.memory.inference",
        "gpuplan.scenario.diffusion_stacks", "gpuplan.market.owned_power", "gpuplan.plan.split",
        "pydantic.plugin._loader", "importlib.metadata", "pydantic.main", "pydantic.fields", "pydantic.types",
        "pydantic._internal._generate_schema", "annotated_types",
        *(f"gpuplan.engines.{m}" for m in ("vllm", "sglang", "trtllm", "llama_cpp", "mlx"))}
    assert not loaded & unused, loaded & unused


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


def test_dir_lists_only_the_public_names():
    """issue 35: dir(gpuplan) listed Any, TYPE_CHECKING, annotations and import_module; it is ``__all__``, also once
    every name (and so the subpackages that hold them) has been loaded."""
    code = ("import gpuplan, json; before = dir(gpuplan); [getattr(gpuplan, n) for n in gpuplan.__all__]; "
            "print(json.dumps([before, dir(gpuplan), gpuplan.__all__]))")
    before, after, public = json.loads(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                                                      check=True).stdout)
    assert before == after == sorted(public)
    assert "estimate" in public and not {"Any", "TYPE_CHECKING", "annotations", "import_module", "api"} & set(after)


@pytest.mark.slow
def test_the_wheel_ships_py_typed_and_the_data(tmp_path):
    """The wheel pip builds carries the PEP 561 marker (type checkers read the annotations of an installed gpuplan)
    and the package data the answers need. Built from a copy, so the checkout gets no build/ folder."""
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, tmp_path / name)
    shutil.copytree(ROOT / "src", tmp_path / "src", ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
    subprocess.run([sys.executable, "-m", "pip", "wheel", ".", "--no-deps", "--no-build-isolation", "-q", "-w",
                    str(tmp_path / "dist")], cwd=tmp_path, check=True, capture_output=True)
    (wheel,) = (tmp_path / "dist").glob("gpuplan-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    assert "gpuplan/py.typed" in names
    assert {"gpuplan/data/gpus.yaml", "gpuplan/web/static/app.js", "gpuplan/data/models/Qwen__Qwen3-14B.json",
            "gpuplan/data/accuracy.md", "gpuplan/data/gpus.json", "gpuplan/data/providers.json",
            "gpuplan/data/models/aliases.json"} <= names  # the accuracy tables the page quotes
