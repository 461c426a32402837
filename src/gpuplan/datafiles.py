"""The package's own YAML data files (``gpuplan/data``), read through their JSON twins.

PyYAML builds its objects in Python even over libyaml: about 1 ms for each of the small files an estimate reads
(``providers.yaml``, ``models/aliases.yaml``) and a tenth of a second or more for ``gpus.yaml``; ``json`` reads the
same data in a few hundredths of a millisecond. So each file in :data:`TWINS` has a twin beside it (``gpus.yaml`` ->
``gpus.json``) holding ``{"yaml_crc32": ..., <stem>: <the YAML's data>}``, and :func:`read_yaml` takes the twin when
it was made from this very text. A stale or missing twin only costs that time: the YAML, the file people edit, is
what is read then. ``python -m gpuplan.datafiles`` writes the twins again after an edit (a test checks they are
fresh). The check is a CRC-32 (zlib, built in), not a SHA-256: it catches an edit as surely, and hashlib loads
OpenSSL (~10 ms).

The same idea keeps the Scenario's core schema (:func:`stored_schema`): pydantic's Python code turns the Scenario's
~100 annotated fields into a core schema in about 20 ms, a sixth of a bare ``import pydantic, yaml``, and the
Rust validator it feeds takes under 1 ms to build (bench/results/startup_s25.md). ``data/schemas/<Class>.json``
holds that schema as pydantic made it, tied by a CRC-32 to the class's source file and to pydantic's and
pydantic-core's versions; a stale or missing one only costs the 20 ms again. ``python tests/record_schemas.py``
stores them again after an edit of such a class or an upgrade of pydantic (a test checks they are fresh).

The models a first estimate validates (the Scenario and the plan's parts in :data:`STORED_SCHEMAS`) are built by
pydantic only when first dumped (``defer_build``); until then :func:`made` validates them with pydantic-core's
validator made from the stored schema. Pydantic's build of any validator first looks up its plugins: it imports
``importlib.metadata`` and reads every installed distribution's entry points, 0.2x to 0.4x of a bare
``import pydantic, yaml`` (bench/results/startup_s29.md), which a first estimate so never pays.
"""

from __future__ import annotations

import json
import sys
import zlib
from importlib import resources
from pathlib import Path
from typing import Any

# the files read through twins, relative to gpuplan/data: those a first estimate reads (bench/startup.py)
TWINS = ("gpus.yaml", "providers.yaml", "models/aliases.yaml")
# the pydantic models whose core schema is stored (module, class): those a first estimate validates (made)
STORED_SCHEMAS = (("gpuplan.scenario.fields", "Scenario"), ("gpuplan.result", "MemoryReport"),
                  ("gpuplan.result", "ModelFacts"), ("gpuplan.result", "GpuFacts"), ("gpuplan.plan.plan", "Verdict"),
                  ("gpuplan.result", "Suggestion"), ("gpuplan.serving.load", "LoadRun"))
# the models whose schema is being made by pydantic (:func:`made_schema`): the stored one set aside
_MAKING: set[type] = set()
# the key that marks, in a stored schema, a Python object JSON cannot hold
_OBJECT = "gpuplan:object"


def _folder() -> Path:
    return Path(str(resources.files("gpuplan") / "data"))


def yaml_crc32(text: str | bytes) -> str:
    """The CRC-32 of a YAML file's text (its UTF-8 bytes, as the file holds them) in hex: what ties its twin to
    it."""
    return f"{zlib.crc32(text.encode('utf-8') if isinstance(text, str) else text):08x}"


def twin_of(name: str) -> Path:
    """The JSON twin's path of the bundled YAML file ``name`` (``models/aliases.yaml`` -> ``models/aliases.json``)."""
    return (_folder() / name).with_suffix(".json")


def _yaml(text: str) -> Any:
    import yaml

    return yaml.load(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))  # libyaml when present


def read_yaml(name: str) -> Any:
    """The data of the bundled YAML file ``name``: from its twin when it is one of :data:`TWINS` and the twin is
    fresh, else the YAML itself (``owning.yaml``, read only when one's own cards are priced, has no twin)."""
    path = _folder() / name
    raw = path.read_bytes()  # the check reads the bytes: decoding and encoding 135 kB of gpus.yaml took 0.5 ms
    try:
        twin = json.loads(twin_of(name).read_bytes())
        if twin.get("yaml_crc32") == yaml_crc32(raw):
            return twin[path.stem]
    except (OSError, ValueError, AttributeError, KeyError):
        pass
    return _yaml(raw.decode("utf-8"))


def write_twin(name: str) -> Path:
    """Write the JSON twin of the bundled YAML file ``name`` beside it; its path."""
    raw = (_folder() / name).read_bytes()
    twin = {"yaml_crc32": yaml_crc32(raw), Path(name).stem: _yaml(raw.decode("utf-8"))}
    twin_of(name).write_text(json.dumps(twin, separators=(",", ":")) + "\n", encoding="utf-8")
    return twin_of(name)


def schema_path(cls: type) -> Path:
    """Where the core schema of the pydantic model ``cls`` is stored."""
    return _folder() / "schemas" / f"{cls.__qualname__}.json"


def schema_key(cls: type) -> str:
    """What a stored schema is made from: the CRC-32 of the class's source file and the versions of pydantic and
    pydantic-core (both loaded with the class)."""
    source = Path(sys.modules[cls.__module__].__file__ or "").read_bytes()
    versions = sys.modules["pydantic.version"].VERSION, sys.modules["pydantic_core"].__version__
    return f"{zlib.crc32(source):08x} pydantic {versions[0]} pydantic-core {versions[1]}"


def core_schema(cls: type, source: Any, handler: Any) -> Any:
    """A pydantic model's ``__get_pydantic_core_schema__`` (``classmethod(core_schema)`` in its body): the stored
    schema while the class is being built; pydantic's own (``handler``) when the stored one is stale, and once the
    class is built (a model holding this one as a field reuses its schema)."""
    stored = None if "__pydantic_core_schema__" in cls.__dict__ else stored_schema(cls)
    return stored if stored is not None else handler(source)


def stored_schema(cls: type) -> dict[str, Any] | None:
    """The stored core schema of the pydantic model ``cls``, or None when it is stale, missing or another class's
    (a subclass inherits the hook that asks). The functions it names (validators, a field's ``exclude_if``) are
    taken from the class as it stands."""
    if (cls.__module__, cls.__qualname__) not in STORED_SCHEMAS or cls in _MAKING:
        return None
    try:
        stored = json.loads(schema_path(cls).read_bytes(), object_hook=lambda d: _from_json(cls, d))
        return stored["schema"] if stored["key"] == schema_key(cls) else None
    except (OSError, ValueError, KeyError, AttributeError):
        return None


# pydantic-core's validators and serializers made from stored schemas (:func:`made`, :func:`validator`)
_VALIDATORS: dict[type, Any] = {}
_SERIALIZERS: dict[type, Any] = {}


def made(cls: Any, data: dict[str, Any], context: dict[str, Any] | None = None) -> Any:
    """An instance of the model ``cls`` validated from ``data``: a pydantic model (built with ``defer_build``) by
    pydantic's own validator once pydantic has built the class, before that by pydantic-core's, made from the stored
    schema; a :class:`gpuplan.stored.StoredModel` always by pydantic-core's (:func:`validator`). The first estimate
    so builds no pydantic validator: pydantic's build of one imports its plugin machinery (``importlib.metadata``,
    which reads every installed distribution's entry points), 0.2x to 0.4x of a bare ``import pydantic, yaml``
    (bench/results/startup_s29.md). The two validators come from the same schema; the instance is the same, and so
    are its errors."""
    checked = None if getattr(cls, "__pydantic_complete__", False) else _stored_validator(cls)
    if checked is None:
        return cls.model_validate(data, context=context)
    return checked.validate_python(data, context=context)


def schema_of(cls: Any) -> dict[str, Any]:
    """The core schema of the :class:`gpuplan.stored.StoredModel` ``cls``: the stored one, else (stale, missing, a
    subclass's) the one its pydantic twin makes, its functions taken from ``cls`` as they are from a stored one."""
    stored = stored_schema(cls)
    if stored is not None:
        return stored
    twin = cls.__stored_twin__()
    text = json.dumps(_to_json(twin, twin.__pydantic_core_schema__))
    return json.loads(text, object_hook=lambda d: _from_json(cls, d))


def validator(cls: Any) -> Any:
    """pydantic-core's validator of the StoredModel ``cls`` (:func:`schema_of`), made once."""
    checked = _stored_validator(cls)
    if checked is None:
        from pydantic_core import SchemaValidator

        schema = schema_of(cls)
        checked = _VALIDATORS[cls] = SchemaValidator(schema, _config(schema))
    return checked


def serializer(cls: Any) -> Any:
    """pydantic-core's serializer of the StoredModel ``cls``, from the schema it is validated by, made once."""
    if cls not in _SERIALIZERS:
        from pydantic_core import SchemaSerializer

        schema = schema_of(cls)
        _SERIALIZERS[cls] = SchemaSerializer(schema, _config(schema))
    return _SERIALIZERS[cls]


def _config(schema: dict[str, Any]) -> Any:
    """The core config of a model's schema (its model schema's: the class's validators wrap it, before, after)."""
    while schema["type"] != "model":
        schema = schema["schema"]
    return schema.get("config")


def _stored_validator(cls: type) -> Any:
    """pydantic-core's validator of ``cls`` from its stored schema (None when stale), made once."""
    if cls not in _VALIDATORS:
        from pydantic_core import SchemaValidator

        schema = stored_schema(cls)
        _VALIDATORS[cls] = None if schema is None else SchemaValidator(schema, _config(schema))
    return _VALIDATORS[cls]


def _from_json(cls: type, data: dict[str, Any]) -> Any:
    kind = data.get(_OBJECT)
    if kind is None:
        return data
    if kind == "tuple":
        return tuple(data["items"])
    if kind == "the class":
        return cls
    if kind == "the class's ref":  # pydantic's name of the class in a schema, with its id in this process
        return _ref(cls)
    if kind == "attribute":
        return getattr(cls, data["name"])
    if kind == "exclude_if":
        return cls.__pydantic_fields__[data["field"]].exclude_if  # type: ignore[attr-defined]
    return getattr(sys.modules[data["module"]], data["name"])  # a module's function


def _ref(cls: type) -> str:
    return f"{cls.__module__}.{cls.__qualname__}:{id(cls)}"


def _to_json(cls: type, value: Any) -> Any:
    """``value``, a piece of a core schema, as JSON can hold it: each Python object the class can give back by
    name (:func:`_from_json`); any other is a TypeError."""
    if isinstance(value, dict):
        return {key: _to_json(cls, v) for key, v in value.items()}
    if isinstance(value, list):
        return [_to_json(cls, v) for v in value]
    if isinstance(value, tuple):
        return {_OBJECT: "tuple", "items": [_to_json(cls, v) for v in value]}
    if value == _ref(cls):
        return {_OBJECT: "the class's ref"}
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    if value is cls:
        return {_OBJECT: "the class"}
    name = getattr(value, "__name__", "")
    if name and getattr(cls, name, None) == value:
        return {_OBJECT: "attribute", "name": name}
    for field, info in cls.__pydantic_fields__.items():  # type: ignore[attr-defined]
        if info.exclude_if is value:
            return {_OBJECT: "exclude_if", "field": field}
    module = getattr(value, "__module__", None)
    if module and getattr(sys.modules.get(module), getattr(value, "__qualname__", ""), None) is value:
        return {_OBJECT: "function", "module": module, "name": value.__qualname__}
    raise TypeError(f"{cls.__qualname__}'s core schema holds {value!r}, which cannot be stored by name")


def made_schema(cls: Any) -> dict[str, Any]:
    """The core schema pydantic makes for the model ``cls`` from its fields, the stored one set aside (a
    StoredModel's: its twin's)."""
    if hasattr(cls, "__stored_twin__"):
        return cls.__stored_twin__().__pydantic_core_schema__
    _MAKING.add(cls)
    try:
        cls.model_rebuild(force=True)
        return cls.__pydantic_core_schema__
    finally:
        _MAKING.discard(cls)


def write_schema(cls: type) -> Path:
    """Store the core schema pydantic makes for the model ``cls``; its path."""
    maker = cls.__stored_twin__() if hasattr(cls, "__stored_twin__") else cls  # the class the schema names
    data = {"key": schema_key(cls), "schema": _to_json(maker, made_schema(cls))}
    schema_path(cls).parent.mkdir(exist_ok=True)
    schema_path(cls).write_text(json.dumps(data, separators=(",", ":")) + "\n", encoding="utf-8")
    return schema_path(cls)


if __name__ == "__main__":  # python -m gpuplan.datafiles: the JSON twins, after editing the YAML files
    for name in TWINS:
        print(f"wrote {write_twin(name)}")
