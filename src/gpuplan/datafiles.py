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
holds that schema as pydantic made it, tied by a CRC-32 to the class's source file (and to those of the other
classes it holds: the Plan's parts) and to pydantic-core's version, which pins pydantic's (:func:`schema_key`); a
stale or missing one only costs the 20 ms again. The Python objects a schema holds (validators, a field's
``exclude_if``, a class and its ref) are stored by name, the class's own or another's by module and qualified name,
so that the text is the same on every recording. ``python tests/record_schemas.py`` stores them again after an edit
of such a class or an upgrade of pydantic (a test checks they are fresh).

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
# the pydantic models whose core schema is stored (module, class): those an estimate validates (made), and the Plan
STORED_SCHEMAS = (("gpuplan.scenario.fields", "Scenario"), ("gpuplan.result", "MemoryReport"),
                  ("gpuplan.result", "ModelFacts"), ("gpuplan.result", "GpuFacts"), ("gpuplan.plan.plan", "Verdict"),
                  ("gpuplan.result", "Suggestion"), ("gpuplan.serving.load", "LoadRun"), ("gpuplan.plan.plan", "Plan"))
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


def schema_key(cls: type, sources: tuple[str, ...] = ()) -> str:
    """What a stored schema is made from: the CRC-32 of the class's source file (and of ``sources``, the modules of
    the other classes its schema holds: the Plan's parts) and pydantic-core's version. pydantic-core runs the
    schema, and each pydantic release pins one exact pydantic-core (its ``dependencies``), so that version names
    pydantic's too; reading pydantic's own would import ``pydantic`` (its ``__init__``, errors and typing helpers:
    0.1x of a bare ``import pydantic, yaml``, bench/results/types_s30.md), which a class that is not a pydantic
    model has not loaded."""
    from pydantic_core import __version__ as core

    crc = 0
    for module in (cls.__module__, *sources):
        crc = zlib.crc32(Path(sys.modules[module].__file__ or "").read_bytes(), crc)
    return f"{crc:08x} pydantic-core {core}"


def _sources(cls: type, data: Any) -> set[str]:
    """The modules of the package, other than the class's own, whose objects the stored schema ``data`` names."""
    if isinstance(data, list):
        return set().union(*(_sources(cls, v) for v in data))
    if not isinstance(data, dict):
        return set()
    found = set().union(*(_sources(cls, v) for v in data.values()))
    named = data["of"].split(":")[0] if "of" in data else data.get("module") if _OBJECT in data else None
    if named and named.partition(".")[0] == cls.__module__.partition(".")[0] and named != cls.__module__:
        found.add(named)
    return found


def stored_schema(cls: type) -> dict[str, Any] | None:
    """The stored core schema of the pydantic model ``cls``, or None when it is stale, missing or another class's
    (a subclass inherits the hook that asks). The functions it names (validators, a field's ``exclude_if``) are
    taken from the class as it stands."""
    if (cls.__module__, cls.__qualname__) not in STORED_SCHEMAS or cls in _MAKING:
        return None
    try:
        stored = json.loads(schema_path(cls).read_bytes(), object_hook=lambda d: _from_json(cls, d))
        return stored["schema"] if stored["key"] == schema_key(cls, tuple(stored.get("sources", ()))) else None
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


def ready(cls: Any) -> None:
    """Make ready, ahead of its first use (a server's child, before its first job), what validating and dumping the
    model ``cls`` takes: pydantic's build of a pydantic model built lazily (``defer_build``: its validator and its
    serializer); for a StoredModel, pydantic-core's validator and serializer; for another class pydantic does not
    build, pydantic-core's validator from its stored schema."""
    if hasattr(cls, "__stored_twin__"):
        validator(cls), serializer(cls)
    elif getattr(cls, "__pydantic_complete__", True) is False:
        cls.model_rebuild()
    elif (cls.__module__, cls.__qualname__) in STORED_SCHEMAS:
        _stored_validator(cls)


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
    owner = _named(*data["of"].split(":")) if "of" in data else cls  # the object's class: this one or another
    if kind == "the class's ref":  # pydantic's name of the class in a schema, with its id in this process
        return _ref(owner)
    if kind == "attribute":
        return getattr(owner, data["name"])
    if kind == "exclude_if":
        return owner.__pydantic_fields__[data["field"]].exclude_if  # type: ignore[attr-defined]
    return _named(data["module"], data["name"])  # a module's function (or class)


def _named(module: str, qualname: str) -> Any:
    """The object ``qualname`` names in the loaded ``module`` (``Plan._in_order``: an attribute of a class)."""
    value: Any = sys.modules[module]
    for part in qualname.split("."):
        value = getattr(value, part)
    return value


def _ref(cls: type) -> str:
    return f"{cls.__module__}.{cls.__qualname__}:{id(cls)}"


def _of(cls: type, owner: type) -> dict[str, str]:
    """How a stored object names its class: nothing for ``cls`` itself, else ``{"of": "module:qualname"}``."""
    return {} if owner is cls else {"of": f"{owner.__module__}:{owner.__qualname__}"}


def _to_json(cls: type, value: Any) -> Any:
    """``value``, a piece of a core schema, as JSON can hold it: each Python object the class can give back by
    name (:func:`_from_json`), its own or another class's (a model that holds others: the Plan); any other is a
    TypeError."""
    if isinstance(value, dict):
        return {key: _to_json(cls, v) for key, v in value.items()}
    if isinstance(value, list):
        return [_to_json(cls, v) for v in value]
    if isinstance(value, tuple):
        return {_OBJECT: "tuple", "items": [_to_json(cls, v) for v in value]}
    if isinstance(value, str):
        owner = _ref_owner(value)
        return value if owner is None else {_OBJECT: "the class's ref", **_of(cls, owner)}
    if value is None or isinstance(value, (int, float, bool)):
        return value
    if value is cls:
        return {_OBJECT: "the class"}
    named = _attribute(cls, value) or _exclusion(cls, value) or _function(value)
    if named is None:
        raise TypeError(f"{cls.__qualname__}'s core schema holds {value!r}, which cannot be stored by name")
    return named


def _ref_owner(text: str) -> type | None:
    """The loaded class whose ref (pydantic's ``module.qualname:id``, the id this process's) ``text`` is, or
    None: a ref holds an id, which differs on each run, so the stored schema names its class instead."""
    path, _, number = text.rpartition(":")
    parts = path.split(".")
    for cut in range(len(parts) - 1, 0, -1):  # the longest loaded module first
        try:
            owner = _named(".".join(parts[:cut]), ".".join(parts[cut:]))
        except (KeyError, AttributeError):
            continue
        if isinstance(owner, type) and number == str(id(owner)):
            return owner
        twin = owner.__stored_twin__() if isinstance(owner, type) and hasattr(owner, "__stored_twin__") else None
        return twin if number == str(id(twin)) else None  # a StoredModel's schema is made by its pydantic twin
    return None


def _class_of(value: Any) -> Any:
    """The class a function was defined in, by its qualified name (``MemoryReport.<lambda>``), or None."""
    try:
        return _named(value.__module__, value.__qualname__.rpartition(".")[0])
    except (AttributeError, KeyError, TypeError):
        return None


def _attribute(cls: type, value: Any) -> dict[str, Any] | None:
    """``value`` named as an attribute of ``cls`` or of another class: the one a method is bound to (a nested
    model's ``__get_pydantic_json_schema__``), or the one that defines a function."""
    name = getattr(value, "__name__", "")
    bound = getattr(value, "__self__", None)
    for owner in (cls, bound if isinstance(bound, type) else _class_of(value)):
        if name and isinstance(owner, type) and getattr(owner, name, None) == value:
            return {_OBJECT: "attribute", "name": name, **_of(cls, owner)}
    return None


def _exclusion(cls: type, value: Any) -> dict[str, Any] | None:
    """``value`` named as a field's ``exclude_if``, of ``cls`` or of the class whose body made the lambda."""
    for owner in (cls, _class_of(value)):
        for field, info in getattr(owner, "__pydantic_fields__", {}).items():
            if info.exclude_if is value:
                return {_OBJECT: "exclude_if", "field": field, **_of(cls, owner)}
    return None


def _function(value: Any) -> dict[str, Any] | None:
    """``value`` named as what its module holds under its qualified name (a function, a class), or None."""
    module = getattr(value, "__module__", None)
    try:
        found = module is not None and _named(module, value.__qualname__) is value
    except (AttributeError, KeyError, TypeError):
        return None
    return {_OBJECT: "function", "module": module, "name": value.__qualname__} if found else None


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
    schema = _to_json(maker, made_schema(cls))
    sources = tuple(sorted(_sources(cls, schema)))
    data = {"key": schema_key(cls, sources), **({"sources": sources} if sources else {}), "schema": schema}
    schema_path(cls).parent.mkdir(exist_ok=True)
    schema_path(cls).write_text(json.dumps(data, separators=(",", ":")) + "\n", encoding="utf-8")
    return schema_path(cls)


if __name__ == "__main__":  # python -m gpuplan.datafiles: the JSON twins, after editing the YAML files
    for name in TWINS:
        print(f"wrote {write_twin(name)}")
