"""The bundled YAML files are read through their JSON twins (gpuplan.datafiles): each twin must hold its YAML's data
as the YAML is now, and a stale twin must be passed over for the YAML itself. The same holds for the stored core
schemas of the pydantic models (the Scenario's): each must be the one pydantic makes, and a stale one is passed
over."""

from __future__ import annotations

import json
import shutil
import zlib
from pathlib import Path

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


def _scenario():
    from gpuplan.scenario import Scenario

    return Scenario


def _maker(cls):
    """The pydantic model that makes ``cls``'s schema: its twin for a StoredModel, else the class itself."""
    return cls.__stored_twin__() if hasattr(cls, "__stored_twin__") else cls


def test_each_stored_schema_is_the_one_pydantic_makes():
    """Each stored schema is exactly what pydantic makes from the class's fields today (a StoredModel's: its pydantic
    twin's; after an edit of the class or an upgrade of pydantic: ``python tests/record_schemas.py``), and it is the
    one the class is validated by (not made from the fields: the startup saving is real)."""
    import importlib

    for module, name in datafiles.STORED_SCHEMAS:
        cls = getattr(importlib.import_module(module), name)
        stored = datafiles.stored_schema(cls)
        assert stored is not None, f"{datafiles.schema_path(cls).name} is stale: run `python tests/record_schemas.py`"
        text = json.loads(datafiles.schema_path(cls).read_text(encoding="utf-8"))
        assert text["key"] == datafiles.schema_key(cls, tuple(text.get("sources", ())))
        assert text["schema"] == datafiles._to_json(_maker(cls), datafiles.made_schema(cls))
        if hasattr(cls, "__stored_twin__"):
            assert datafiles.schema_of(cls) == stored and datafiles.validator(cls) is datafiles._VALIDATORS[cls]
        else:
            assert cls.__pydantic_core_schema__ == stored
    assert {"Plan", "LoadRun", "Suggestion"} <= {name for _, name in datafiles.STORED_SCHEMAS}


def test_the_key_is_the_sources_and_pydantic_cores_version(tmp_path, monkeypatch):
    """Keyed without importing pydantic (pydantic-core pins it): the CRC-32 of the class's source file, and of each
    module whose classes its schema holds; the Plan's names its parts' modules, and an edit of one makes it stale."""
    import sys

    import pydantic_core

    from gpuplan.plan.plan import Plan
    from gpuplan.result import GpuFacts

    source = Path(sys.modules["gpuplan.result"].__file__).read_bytes()
    assert datafiles.schema_key(GpuFacts) == f"{zlib.crc32(source):08x} pydantic-core {pydantic_core.__version__}"
    file = json.loads(datafiles.schema_path(Plan).read_text(encoding="utf-8"))
    assert file["sources"] == ["gpuplan.market.bill", "gpuplan.market.cost", "gpuplan.market.job", "gpuplan.result",
                               "gpuplan.serving.load", "gpuplan.speed.breakdown"]
    assert datafiles.stored_schema(Plan) is not None
    bill = sys.modules["gpuplan.market.bill"]
    (tmp_path / "bill.py").write_bytes(Path(bill.__file__).read_bytes() + b"\n# an edit\n")
    monkeypatch.setattr(bill, "__file__", str(tmp_path / "bill.py"))
    assert datafiles.stored_schema(Plan) is None


def test_a_schema_names_other_classes_objects():
    """The Plan's schema holds its parts' objects (their ``__get_pydantic_json_schema__``, the ``exclude_if`` of
    their fields, their refs, the dataclasses Speed and Cost): stored by module and qualified name, with no id of
    this process in the text, and read back as the very objects."""
    import re

    from gpuplan.plan.plan import Plan
    from gpuplan.result import MemoryReport
    from gpuplan.serving.load import LoadRun

    text = datafiles.schema_path(Plan).read_text(encoding="utf-8")
    assert not re.search(r":\d{6,}\b", text) and str(id(Plan)) not in text
    assert '{"gpuplan:object":"exclude_if","field":"falls_behind","of":"gpuplan.serving.load:LoadRun"}' in text
    assert '{"gpuplan:object":"the class\'s ref","of":"gpuplan.speed.breakdown:Speed"}' in text
    named = {"gpuplan:object": "attribute", "name": "__get_pydantic_json_schema__", "of": "gpuplan.result:MemoryReport"}
    assert json.dumps(named, separators=(",", ":")) in text
    assert datafiles._from_json(Plan, named) == MemoryReport.__get_pydantic_json_schema__
    assert datafiles._from_json(Plan, {"gpuplan:object": "exclude_if", "field": "falls_behind",
                                       "of": "gpuplan.serving.load:LoadRun"}) is \
        LoadRun.model_fields["falls_behind"].exclude_if
    assert datafiles._to_json(Plan, f"gpuplan.serving.load.LoadRun:{id(LoadRun)}") == \
        {"gpuplan:object": "the class's ref", "of": "gpuplan.serving.load:LoadRun"}
    with pytest.raises(TypeError, match="cannot be stored by name"):
        datafiles._to_json(Plan, lambda v: v)


def test_the_stored_plan_schema_dumps_a_plan_as_pydantic_does():
    """What the Plan's dump needs once it is not built by pydantic: pydantic-core's serializer made from the stored
    schema dumps a plan (its suggestions, a serving plan's load run) exactly as pydantic's ``model_dump``."""
    from pydantic_core import SchemaSerializer

    import gpuplan
    from gpuplan.plan.plan import Plan

    serializer = SchemaSerializer(datafiles.stored_schema(Plan))
    for walk, check in (({"model": "llama-3.1-70b", "task": "train", "method": "full", "gpu": "rtx-4090"},
                         lambda p: len(p.suggestions) > 1),
                        ({"model": "llama-3.1-8b", "task": "infer", "engine": "vllm", "users": 8, "gpu": "a10g"},
                         lambda p: p.load is not None and p.load.max_concurrency == 8)):
        plan = gpuplan.estimate(walk)
        assert check(plan)
        assert serializer.to_json(plan) == plan.model_dump_json().encode()
        assert serializer.to_python(plan, mode="json") == plan.model_dump(mode="json")


def _forget(cls):
    datafiles._VALIDATORS.pop(cls, None)
    datafiles._SERIALIZERS.pop(cls, None)


def test_a_stale_stored_schema_is_passed_over(monkeypatch):
    """Another pydantic (or an edited class) makes the stored schema stale: the record is validated and dumped from
    the schema its pydantic twin makes, and it validates and refuses alike."""
    from pydantic import ValidationError

    from gpuplan.plan.plan import Verdict

    given = {"fits": True, "sentence": "fits", "device_peak_gib": 1, "details": ["a"]}
    fresh = Verdict(**given)
    monkeypatch.setattr(datafiles, "schema_key", lambda cls, sources=(): "another pydantic")
    _forget(Verdict)
    try:
        assert datafiles.stored_schema(Verdict) is None
        again = Verdict(**given)
        assert again == fresh and again.model_dump_json() == fresh.model_dump_json()
        assert datafiles.schema_of(Verdict) == json.loads(json.dumps(datafiles._to_json(
            _maker(Verdict), _maker(Verdict).__pydantic_core_schema__)), object_hook=lambda d: datafiles._from_json(
            Verdict, d))
        with pytest.raises(ValidationError, match="device_peak_gib"):
            Verdict(fits=True, sentence="fits", device_peak_gib="a lot")
    finally:
        monkeypatch.undo()
        _forget(Verdict)
    assert datafiles.stored_schema(Verdict) is not None


def _made_twice(cls, data):
    """``cls`` from ``data`` by :func:`gpuplan.datafiles.made` (the stored schema) and by pydantic's own validator
    (a StoredModel's twin's)."""
    return datafiles.made(cls, data), _maker(cls).model_validate(data)


def _load_run():
    """A closed-loop run's fields, its times as the simulation gives them (numpy's floats)."""
    import numpy as np

    times = {f"{stat}_{metric}_ms": np.float64(12.5) for stat in ("mean", "median", "p90", "p99")
             for metric in ("ttft", "tpot", "itl", "e2el")}
    return {"mode": "closed loop", "engine": "vllm", "max_concurrency": 8, "lengths": "fixed", "num_prompts": 80,
            "completed": 80, "duration": np.float64(40.25), "total_input_tokens": 8000, "total_output_tokens": 1600,
            "request_throughput": np.float64(2.0), "output_throughput": np.float64(40.0),
            "total_token_throughput": np.float64(240.0), "running_cap": 256, "peak_running": 8, "preemptions": 0,
            "per_request_s": np.float64(0.01), **times}


def test_made_is_what_pydantic_makes():
    """An instance validated from the stored schema is the one pydantic's own validator makes (types coerced:
    an int into a float field), and a refusal is pydantic's too."""
    from pydantic import ValidationError

    from gpuplan.plan.plan import Verdict
    from gpuplan.result import GpuFacts, Suggestion
    from gpuplan.serving.load import LoadRun

    ours, theirs = _made_twice(GpuFacts, {"id": "g", "name": "G", "memory_gib": 24, "usable_gib": 23.5,
                                          "architecture": "Ada"})
    assert ours.__dict__ == theirs.__dict__ and type(ours) is GpuFacts and ours.memory_gib == 24.0
    assert isinstance(ours.memory_gib, float) and ours.model_dump_json() == theirs.model_dump_json()
    ours, theirs = _made_twice(Verdict, {"fits": True, "sentence": "fits", "device_peak_gib": 1, "details": ["a"]})
    assert ours.__dict__ == theirs.__dict__ and ours.details == ("a",) and type(ours) is Verdict
    ours, theirs = _made_twice(_scenario(), {"model": "llama-3.1-8b", "task": "train", "method": "qlora"})
    assert ours.__dict__ == theirs.__dict__ and ours.grad_checkpointing == "full"
    assert ours.model_fields_set == theirs.model_fields_set and ours.model_dump_json() == theirs.model_dump_json()
    suggestion = {"change": "LoRA: 30.1 -> 20.2 GiB", "fields": {"method": "lora"}, "device_peak_gib": 20,
                  "fits": True, "cost": "slower", "max_batch_size_capped": True}
    ours, theirs = _made_twice(Suggestion, suggestion)
    assert ours.__dict__ == theirs.__dict__ and ours.device_peak_gib == 20.0
    assert ours.model_dump_json() == theirs.model_dump_json()
    ours, theirs = _made_twice(LoadRun, _load_run())
    assert ours.__dict__ == theirs.__dict__ and ours.model_dump_json() == theirs.model_dump_json()
    assert ours.load_words == "8 users"
    assert type(ours.mean_itl_ms) is float and type(ours.duration) is float  # numpy's floats stored as floats
    for make in (lambda d: datafiles.made(_scenario(), d), _scenario().model_validate,
                 _maker(_scenario()).model_validate):
        with pytest.raises(ValidationError, match="loss_chunks"):
            make({"model": "llama-3.1-8b", "task": "train", "loss_chunks": 0})


def test_a_subclass_makes_its_own_schema():
    """The hook is inherited, the stored schema is not: a subclass's fields are its own."""
    class Wider(_scenario()):
        note: str = "x"

    assert Wider(model="llama-3.1-8b", task="train", note="y").note == "y"
    assert "note" not in _scenario().model_fields
