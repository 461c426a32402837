"""Typed records validated and dumped by pydantic-core from their stored core schemas, with no pydantic model built:
:class:`StoredModel` and stand-ins for the pydantic names a model's body uses (:func:`Field`, :func:`PrivateAttr`,
:func:`ConfigDict`, :func:`computed_field`, :func:`field_validator`, :func:`model_validator`,
:func:`model_serializer`, :class:`BeforeValidator`).

Why: pydantic's model machinery (``pydantic.main``, its schema generator, ``pydantic.fields``, ``annotated_types``)
is about 0.6x of a bare ``import pydantic, yaml``, and defining a ``BaseModel`` class collects its fields in Python;
the first estimate needs neither (bench/results/types_s30.md). What it needs is pydantic-core's validator and
serializer, which :mod:`gpuplan.datafiles` makes from the core schema stored for each class.

This is a thin shell, not a second pydantic. Validation (``__init__``, :meth:`StoredModel.model_validate`) and
dumping (:meth:`StoredModel.model_dump`, :meth:`StoredModel.model_dump_json`) are pydantic-core's, from the schema
pydantic made; the validators, the serializer and each field's ``exclude_if`` are the class's own functions,
which the stored schema names. The shell only keeps what pydantic's ``BaseModel`` keeps on an instance (the four
slots), and copies, compares, prints and sets attributes as ``pydantic.main.BaseModel`` does (pydantic 2.13).

Anything that needs pydantic's build of the class goes to its **twin**: a real ``BaseModel`` made on demand from
the namespace the class body declared (the stand-ins turned back into pydantic's own). The twin makes the schema
that is stored (``python tests/record_schemas.py``) and the one used while a stored schema is stale or missing (a
subclass's), the JSON schema, and a field's constraints (:attr:`FieldInfo.metadata`). None of that is on a first
estimate's road.
"""

from __future__ import annotations

import copy
import operator
from functools import cached_property
from typing import Annotated, Any, ClassVar, get_args, get_origin

from pydantic_core import PydanticUndefined, ValidationError

from gpuplan import datafiles

__all__ = ["BeforeValidator", "ConfigDict", "Field", "FieldInfo", "PrivateAttr", "StoredModel", "ValidationError",
           "computed_field", "field_validator", "model_serializer", "model_validator"]

_object_setattr = object.__setattr__
# the keywords of pydantic's Field that FieldInfo keeps as attributes (the rest: the twin's, :attr:`FieldInfo.metadata`)
_KEPT = ("description", "exclude", "exclude_if", "alias", "title", "examples", "json_schema_extra", "frozen")


class FieldInfo:
    """A field of a :class:`StoredModel` (``cls.model_fields[name]``): what pydantic's ``FieldInfo`` says of it that
    gpuplan reads (annotation, default, description, ``is_required()``), its other constraints taken from the twin
    on first use (:attr:`metadata`)."""

    def __init__(self, owner: type, name: str, annotation: Any, default: Any, kwargs: dict[str, Any]) -> None:
        self._owner, self._name = owner, name
        if get_origin(annotation) is Annotated:  # as pydantic keeps it: the type, its metadata apart
            annotation = get_args(annotation)[0]
        self.annotation = annotation
        self.default = kwargs.get("default", default)
        self.default_factory = kwargs.get("default_factory")
        self.repr = kwargs.get("repr", True)
        for key in _KEPT:
            setattr(self, key, kwargs.get(key))

    def is_required(self) -> bool:
        return self.default is PydanticUndefined and self.default_factory is None

    def get_default(self, *, call_default_factory: bool = False) -> Any:
        if self.default_factory is not None:
            return self.default_factory() if call_default_factory else self.default_factory
        return copy.deepcopy(self.default) if isinstance(self.default, (dict, list, set)) else self.default

    @cached_property
    def metadata(self) -> list[Any]:
        """The field's constraints (``annotated_types.Ge`` and the like), as pydantic's twin holds them."""
        return self._owner.__stored_twin__().model_fields[self._name].metadata

    def __repr__(self) -> str:
        return f"FieldInfo(annotation={self.annotation!r}, required={self.is_required()})"


class _Spec:
    """What a stand-in declared (``Field(...)``, ``PrivateAttr(...)``): its keywords, for the class and its twin."""

    def __init__(self, kind: str, kwargs: dict[str, Any]) -> None:
        self.kind, self.kwargs = kind, kwargs


def Field(default: Any = PydanticUndefined, **kwargs: Any) -> Any:
    """pydantic's ``Field``, noted for the class (:class:`FieldInfo`) and its twin."""
    return _Spec("field", {"default": default, **kwargs} if default is not PydanticUndefined else kwargs)


def PrivateAttr(default: Any = PydanticUndefined, *, default_factory: Any = None) -> Any:
    """pydantic's ``PrivateAttr``: an attribute kept in ``__pydantic_private__``, not a field."""
    return _Spec("private", {"default": default, "default_factory": default_factory})


def ConfigDict(**config: Any) -> dict[str, Any]:  # (pydantic's is a TypedDict: a dict)
    return config


class BeforeValidator:
    """pydantic's ``BeforeValidator`` inside ``Annotated``: the stored schema names ``func``, the twin gets
    pydantic's."""

    def __init__(self, func: Any) -> None:
        self.func = func

    def __repr__(self) -> str:
        return f"BeforeValidator(func={self.func!r})"


class _Decorated:
    """A method a pydantic decorator marked: the class keeps the method itself (the stored schema names it), the
    twin gets it decorated by pydantic's own decorator, from ``(kind, args, kwargs)``."""

    def __init__(self, kind: str, args: tuple[Any, ...], kwargs: dict[str, Any], method: Any) -> None:
        self.kind, self.args, self.kwargs, self.method = kind, args, kwargs, method


def _decorator(kind: str, classmethods: bool) -> Any:
    def decorator(*args: Any, **kwargs: Any) -> Any:
        if len(args) == 1 and not kwargs and not isinstance(args[0], str):
            return _Decorated(kind, (), {}, args[0])  # used bare: @computed_field

        def mark(method: Any) -> Any:
            bound = kind == "field_validator" or (classmethods and kwargs.get("mode") != "after")
            if bound and not isinstance(method, classmethod):
                raise TypeError(f"{kind} on {method!r}: give it @classmethod (pydantic adds one, the stored schema "
                                "names the bound method)")
            return _Decorated(kind, args, kwargs, method)
        return mark
    decorator.__name__ = kind
    decorator.__doc__ = f"pydantic's ``{kind}``: the method kept as it is, decorated by pydantic's on the twin."
    return decorator


computed_field = _decorator("computed_field", False)
field_validator = _decorator("field_validator", True)  # every mode
model_validator = _decorator("model_validator", True)  # before and wrap
model_serializer = _decorator("model_serializer", False)

# what a class body holds that the twin does not take over as it is
_NOT_FOR_THE_TWIN = {"__module__", "__qualname__", "__annotations__", "__dict__", "__weakref__", "__slots__",
                     "__get_pydantic_core_schema__", "__classcell__", "__stored_namespace__", "model_config",
                     "__orig_bases__", "__static_attributes__", "__firstlineno__"}


def _private_default(spec: _Spec) -> Any:
    factory = spec.kwargs.get("default_factory")
    return factory() if factory is not None else copy.deepcopy(spec.kwargs.get("default", PydanticUndefined))


class _Serializer:
    """``cls.__pydantic_serializer__``, made on first use: what pydantic-core asks a value it does not know of (a
    record in a pydantic model's field typed ``Any``)."""

    def __get__(self, instance: Any, cls: type) -> Any:
        return datafiles.serializer(cls)


class StoredModel:
    """The base of a typed record validated and dumped by pydantic-core from its stored core schema (the module's
    docstring). Its instances hold what a pydantic model's do: the fields in ``__dict__`` (in the fields' order, as
    pydantic-core dumps them in that order), the set given explicitly, the extra fields and the private
    attributes."""

    __slots__ = ("__dict__", "__pydantic_extra__", "__pydantic_fields_set__", "__pydantic_private__")
    model_config: ClassVar[dict[str, Any]] = {}
    model_fields: ClassVar[dict[str, FieldInfo]] = {}
    __pydantic_fields__: ClassVar[dict[str, FieldInfo]] = {}
    __private_attributes__: ClassVar[dict[str, _Spec]] = {}
    __stored_computed__: ClassVar[tuple[str, ...]] = ()
    __pydantic_serializer__ = _Serializer()

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        namespace = dict(cls.__dict__)
        cls.__stored_namespace__ = namespace
        cls.model_config = {**cls.model_config, **namespace.get("model_config", {})}
        fields = dict(cls.model_fields)
        private = dict(cls.__private_attributes__)
        computed = list(cls.__stored_computed__)
        for name, annotation in namespace.get("__annotations__", {}).items():
            if get_origin(annotation) is ClassVar or annotation is ClassVar or name.startswith("__"):
                continue
            value = namespace.get(name, PydanticUndefined)
            if name.startswith("_"):
                private[name] = value if isinstance(value, _Spec) else _Spec("private", {"default": value})
            else:
                spec = value.kwargs if isinstance(value, _Spec) else {}
                fields[name] = FieldInfo(cls, name, annotation, PydanticUndefined if spec else value, spec)
            if name in cls.__dict__:
                delattr(cls, name)  # as on a pydantic model: an instance's value, never the class's
        for name, value in namespace.items():
            if isinstance(value, _Spec) and value.kind == "private" and name not in private:
                private[name] = value
                delattr(cls, name)
            elif isinstance(value, _Decorated):
                setattr(cls, name, value.method)
                if hasattr(value.method, "__set_name__"):
                    value.method.__set_name__(cls, name)
                if value.kind == "computed_field":
                    computed.append(name)
        cls.model_fields = cls.__pydantic_fields__ = fields
        cls.__private_attributes__, cls.__stored_computed__ = private, tuple(computed)
        if cls.model_config.get("frozen") and "__hash__" not in namespace:
            cls.__hash__ = _frozen_hash  # as pydantic's: a frozen model hashes its fields

    # --- validation: pydantic-core's, from the stored schema (gpuplan.datafiles) ---

    def __init__(self, /, **data: Any) -> None:
        datafiles.validator(type(self)).validate_python(data, self_instance=self)

    @classmethod
    def model_validate(cls, obj: Any, **kwargs: Any) -> Any:
        """``obj`` validated into an instance (pydantic's keywords: ``strict``, ``from_attributes``, ``context``)."""
        return datafiles.validator(cls).validate_python(obj, **kwargs)

    @classmethod
    def model_validate_json(cls, json_data: str | bytes, **kwargs: Any) -> Any:
        return datafiles.validator(cls).validate_json(json_data, **kwargs)

    @classmethod
    def model_construct(cls, _fields_set: set[str] | None = None, **values: Any) -> Any:
        """An instance of ``values`` as they are, the missing fields at their defaults, nothing validated."""
        made = cls.__new__(cls)
        data, given = {}, set()
        for name, field in cls.model_fields.items():
            if name in values:
                data[name] = values.pop(name)
                given.add(name)
            elif not field.is_required():
                data[name] = field.get_default(call_default_factory=True)
        _object_setattr(made, "__dict__", data)
        _object_setattr(made, "__pydantic_fields_set__", given if _fields_set is None else _fields_set)
        _object_setattr(made, "__pydantic_extra__", None)
        _object_setattr(made, "__pydantic_private__", None)
        if cls.__private_attributes__:
            made.model_post_init(None)
        return made

    def model_post_init(self, context: Any, /) -> None:
        """The private attributes at their defaults (what the stored schema's ``post_init`` asks for)."""
        if getattr(self, "__pydantic_private__", None) is None:
            private = {name: _private_default(spec) for name, spec in self.__private_attributes__.items()}
            _object_setattr(self, "__pydantic_private__",
                            {k: v for k, v in private.items() if v is not PydanticUndefined})

    # --- dumping: pydantic-core's serializer, from the same schema ---

    def model_dump(self, **kwargs: Any) -> dict[str, Any]:
        """The fields as a dict (pydantic's keywords: ``mode``, ``include``, ``exclude``, ``exclude_none``...)."""
        return datafiles.serializer(type(self)).to_python(self, **kwargs)

    def model_dump_json(self, **kwargs: Any) -> str:
        return datafiles.serializer(type(self)).to_json(self, **kwargs).decode()

    @classmethod
    def model_rebuild(cls, **kwargs: Any) -> bool:
        """The validator and the serializer made now, not on first use (pydantic's builds the class: a warm-up)."""
        datafiles.validator(cls), datafiles.serializer(cls)
        return True

    @classmethod
    def model_json_schema(cls, **kwargs: Any) -> dict[str, Any]:
        """The JSON schema, as pydantic writes it from the stored core schema (``by_alias``, ``ref_template``,
        ``mode``...)."""
        from pydantic import TypeAdapter

        return TypeAdapter(cls).json_schema(**kwargs)

    @classmethod
    def __get_pydantic_core_schema__(cls, source: Any, handler: Any) -> Any:
        """The core schema, for a pydantic model or ``TypeAdapter`` that holds this class."""
        return datafiles.schema_of(cls)

    @classmethod
    def __get_pydantic_json_schema__(cls, core_schema: Any, handler: Any, /) -> Any:
        return handler(core_schema)  # as pydantic's BaseModel (the stored schema names this hook)

    @classmethod
    def __stored_twin__(cls) -> Any:
        """The pydantic model this class is, made once (off the first estimate's road: it imports pydantic's model
        machinery)."""
        if "_StoredModel__twin" not in cls.__dict__:
            cls.__twin = _twin(cls)
        return cls.__dict__["_StoredModel__twin"]

    # --- the instance, as pydantic's BaseModel keeps it ---

    @property
    def model_fields_set(self) -> set[str]:
        return self.__pydantic_fields_set__

    @property
    def model_extra(self) -> dict[str, Any] | None:
        return self.__pydantic_extra__

    def model_copy(self, *, update: dict[str, Any] | None = None, deep: bool = False) -> Any:
        """A copy, ``update`` set as given fields without validation (pydantic's ``model_copy``)."""
        copied = self.__deepcopy__() if deep else self.__copy__()
        if update:
            copied.__dict__.update(update)
            copied.__pydantic_fields_set__.update(update.keys())
        return copied

    def __copy__(self) -> Any:
        return self._copied(copy.copy, copy.copy)

    def __deepcopy__(self, memo: dict[int, Any] | None = None) -> Any:
        return self._copied(lambda v: copy.deepcopy(v, memo), copy.copy)

    def _copied(self, values: Any, fields_set: Any) -> Any:
        made = type(self).__new__(type(self))
        _object_setattr(made, "__dict__", values(self.__dict__))
        _object_setattr(made, "__pydantic_extra__", values(self.__pydantic_extra__))
        _object_setattr(made, "__pydantic_fields_set__", fields_set(self.__pydantic_fields_set__))
        private = getattr(self, "__pydantic_private__", None)
        _object_setattr(made, "__pydantic_private__", None if private is None else
                        values({k: v for k, v in private.items() if v is not PydanticUndefined}))
        return made

    def __getattr__(self, name: str) -> Any:
        if name in type(self).__private_attributes__:
            try:
                return object.__getattribute__(self, "__pydantic_private__")[name]
            except (KeyError, TypeError, AttributeError) as exc:
                raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}") from exc
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    def __setattr__(self, name: str, value: Any) -> None:
        cls = type(self)
        if name.startswith("_"):
            if name in cls.__private_attributes__:
                if getattr(self, "__pydantic_private__", None) is None:
                    _object_setattr(self, "__pydantic_private__", {})
                self.__pydantic_private__[name] = value
            else:
                _object_setattr(self, name, value)
            return
        attr = getattr(cls, name, None)
        if isinstance(attr, cached_property):
            self.__dict__[name] = value
            return
        _check_frozen(cls, name, value)
        if isinstance(attr, property):
            attr.__set__(self, value)
        elif name not in cls.model_fields:
            raise ValueError(f'"{cls.__name__}" object has no field "{name}"')
        else:
            self.__dict__[name] = value
            self.__pydantic_fields_set__.add(name)

    def __getstate__(self) -> dict[str, Any]:
        private = self.__pydantic_private__
        if private:
            private = {k: v for k, v in private.items() if v is not PydanticUndefined}
        return {"__dict__": self.__dict__, "__pydantic_extra__": self.__pydantic_extra__,
                "__pydantic_fields_set__": self.__pydantic_fields_set__, "__pydantic_private__": private}

    def __setstate__(self, state: dict[str, Any]) -> None:
        _object_setattr(self, "__pydantic_fields_set__", state.get("__pydantic_fields_set__", set()))
        _object_setattr(self, "__pydantic_extra__", state.get("__pydantic_extra__"))
        _object_setattr(self, "__pydantic_private__", state.get("__pydantic_private__"))
        _object_setattr(self, "__dict__", state.get("__dict__", {}))

    def __eq__(self, other: Any) -> bool:
        """pydantic's: the same class, private attributes and extra fields, and equal fields (the cached values
        of properties that ``__dict__`` also holds are left out)."""
        if not isinstance(other, StoredModel):
            return NotImplemented
        if not (type(self) is type(other)
                and getattr(self, "__pydantic_private__", None) == getattr(other, "__pydantic_private__", None)
                and (self.__pydantic_extra__ or {}) == (other.__pydantic_extra__ or {})):
            return False
        if self.__dict__ == other.__dict__:
            return True
        names = type(self).model_fields.keys()
        if self.__dict__.keys() <= names and other.__dict__.keys() <= names:
            return False
        return [self.__dict__.get(k) for k in names] == [other.__dict__.get(k) for k in names]

    __hash__ = None  # type: ignore[assignment]  # (a frozen class hashes its fields: __init_subclass__)

    def __iter__(self) -> Any:
        yield from [(k, v) for k, v in self.__dict__.items() if not k.startswith("_")]
        yield from (self.__pydantic_extra__ or {}).items()

    def __repr_args__(self) -> list[tuple[str, Any]]:
        computed = [(name, getattr(self, name)) for name in type(self).__stored_computed__]
        fields = type(self).model_fields
        return [(k, v) for k, v in self.__dict__.items() if k in fields and fields[k].repr] + computed

    def __repr__(self) -> str:
        return f"{type(self).__name__}({', '.join(f'{k}={v!r}' for k, v in self.__repr_args__())})"

    def __str__(self) -> str:
        return " ".join(f"{k}={v!r}" for k, v in self.__repr_args__())


def _frozen_hash(self: StoredModel) -> int:
    names = type(self).model_fields
    return hash(operator.itemgetter(*names)(self.__dict__) if names else 0)


def _check_frozen(cls: type[StoredModel], name: str, value: Any) -> None:
    """pydantic's refusal to set a field of a frozen model (or a frozen field): a ValidationError."""
    field = cls.model_fields.get(name)
    kind = "frozen_instance" if cls.model_config.get("frozen") else "frozen_field" if field and field.frozen else ""
    if kind:
        raise ValidationError.from_exception_data(cls.__name__, [{"type": kind, "loc": (name,), "input": value}])


def _pydantic_value(value: Any) -> Any:
    """A class body's value as the twin's body holds it: each stand-in turned into pydantic's own."""
    import pydantic

    if isinstance(value, _Spec):
        return (pydantic.Field if value.kind == "field" else pydantic.PrivateAttr)(**value.kwargs)
    if isinstance(value, _Decorated):
        return getattr(pydantic, value.kind)(*value.args, **value.kwargs)(value.method) if value.args or \
            value.kwargs else getattr(pydantic, value.kind)(value.method)
    return value


def _pydantic_annotation(annotation: Any) -> Any:
    if get_origin(annotation) is not Annotated:
        return annotation
    import pydantic

    kind, *metadata = get_args(annotation)
    metadata = [pydantic.BeforeValidator(m.func) if isinstance(m, BeforeValidator) else m for m in metadata]
    return Annotated[(kind, *metadata)]


def _twin(cls: type[StoredModel]) -> Any:
    """A pydantic model of ``cls``'s body, made by pydantic: its bases' twins, its annotations, its fields and
    private attributes, its config (built now, not deferred), its methods, decorated by pydantic."""
    import pydantic

    namespace = cls.__stored_namespace__
    bases = tuple(base.__stored_twin__() for base in cls.__bases__
                  if issubclass(base, StoredModel) and base is not StoredModel) or (pydantic.BaseModel,)
    body = {"__module__": cls.__module__, "__qualname__": cls.__qualname__,
            "__annotations__": {k: _pydantic_annotation(v) for k, v in namespace.get("__annotations__", {}).items()},
            "model_config": pydantic.ConfigDict(**{k: v for k, v in namespace.get("model_config", {}).items()
                                                   if k != "defer_build"})}
    body.update((k, _pydantic_value(v)) for k, v in namespace.items() if k not in _NOT_FOR_THE_TWIN)
    return type(cls.__name__, bases, body)
