"""gpuplan.stored: a StoredModel is what pydantic's model of the same body would be, validated and dumped by
pydantic-core from its stored schema. Each check sets the record beside its pydantic twin (the ``BaseModel`` made
from the same body): the instances, their dumps, the JSON schema, the fields, the errors."""

# No `from __future__ import annotations`: the twin is built by pydantic from the annotations as objects.
import copy
import json
import pickle
from typing import Any

import pydantic
import pytest

from gpuplan import datafiles
from gpuplan.stored import (
    ConfigDict,
    Field,
    PrivateAttr,
    StoredModel,
    ValidationError,
    computed_field,
    field_validator,
    model_serializer,
    model_validator,
)


class Toy(StoredModel):
    """A record with one of each thing a stored model's body may hold."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(min_length=1, description="its name")
    size: int = Field(default=1, ge=1, le=100, description="how many")
    tags: tuple[str, ...] = ()
    note: str = Field(default="", exclude_if=lambda v: not v)
    _seen: int = PrivateAttr(default=0)

    @field_validator("name")
    @classmethod
    def _lower(cls, value: str) -> str:
        return value.lower()

    @model_validator(mode="before")
    @classmethod
    def _old_name(cls, data: Any) -> Any:
        if isinstance(data, dict) and "title" in data:
            data = {**{k: v for k, v in data.items() if k != "title"}, "name": data["title"]}
        return data

    @model_validator(mode="after")
    def _not_13(self) -> "Toy":
        if self.size == 13:
            raise ValueError("13 is refused")
        return self

    @computed_field
    @property
    def double(self) -> int:
        return 2 * self.size

    @model_serializer(mode="wrap")
    def _without_tags(self, handler: Any) -> dict[str, Any]:
        data = handler(self)
        if not self.tags:
            data.pop("tags", None)
        return data


@pytest.fixture()
def stored(tmp_path, monkeypatch):
    """Toy's schema stored (as ``tests/record_schemas.py`` stores the package's), in a folder of the test's own."""
    monkeypatch.setattr(datafiles, "_folder", lambda: tmp_path)
    monkeypatch.setattr(datafiles, "STORED_SCHEMAS", (*datafiles.STORED_SCHEMAS, (Toy.__module__, "Toy")))
    _forget()
    datafiles.write_schema(Toy)
    yield Toy
    _forget()


def _forget() -> None:
    datafiles._VALIDATORS.pop(Toy, None)
    datafiles._SERIALIZERS.pop(Toy, None)


GIVEN = ({"name": "AbC"}, {"title": "Old", "size": 3, "tags": ["a", "b"]}, {"name": "n", "note": "kept", "size": 7})


def test_the_stored_schema_is_the_twins(stored):
    twin = Toy.__stored_twin__()
    assert isinstance(twin, type) and issubclass(twin, pydantic.BaseModel) and not issubclass(Toy, pydantic.BaseModel)
    assert datafiles.stored_schema(Toy) is not None
    text = json.loads(datafiles.schema_path(Toy).read_text(encoding="utf-8"))["schema"]
    assert text == datafiles._to_json(twin, twin.__pydantic_core_schema__)
    assert "attribute" in json.dumps(text) and "exclude_if" in json.dumps(text)  # the functions, by name


@pytest.mark.parametrize("data", GIVEN)
def test_made_is_what_the_twin_makes(stored, data):
    twin = Toy.__stored_twin__()
    ours, theirs = Toy(**data), twin.model_validate(data)
    assert type(ours) is Toy and datafiles.made(Toy, data) == Toy.model_validate(data) == ours
    assert ours.__dict__ == theirs.__dict__ and list(ours.__dict__) == list(Toy.model_fields)
    assert ours.model_fields_set == theirs.model_fields_set and ours._seen == theirs._seen == 0
    assert ours.__pydantic_private__ == theirs.__pydantic_private__ == {"_seen": 0}
    for mode in ("python", "json"):
        assert ours.model_dump(mode=mode) == theirs.model_dump(mode=mode)
    assert ours.model_dump(exclude_unset=True) == theirs.model_dump(exclude_unset=True)
    assert ours.model_dump_json() == theirs.model_dump_json() and ours.model_dump_json(indent=2) == \
        theirs.model_dump_json(indent=2)
    assert repr(ours) == repr(theirs) and str(ours) == str(theirs) and list(ours) == list(theirs)
    assert hash(ours) == hash(theirs)


def test_the_dump_runs_the_class_functions(stored):
    assert Toy(name="A").model_dump() == {"name": "a", "size": 1, "double": 2}  # no tags, no note: both left out
    assert Toy(name="A", tags=["x"], note="n").model_dump() == {"name": "a", "size": 1, "tags": ("x",), "note": "n",
                                                                "double": 2}


@pytest.mark.parametrize("data", [{}, {"name": ""}, {"name": "a", "size": 0}, {"name": "a", "size": 13},
                                  {"name": "a", "colour": "red"}, {"name": "a", "size": "many"}])
def test_refusals_are_the_twins(stored, data):
    with pytest.raises(ValidationError) as ours:
        Toy(**data)
    with pytest.raises(pydantic.ValidationError) as theirs:
        Toy.__stored_twin__()(**data)
    assert ours.value.errors(include_context=False) == theirs.value.errors(include_context=False)
    assert str(ours.value) == str(theirs.value) and ours.value.title == "Toy"


def test_fields_and_json_schema_are_the_twins(stored):
    twin = Toy.__stored_twin__()
    assert list(Toy.model_fields) == list(twin.model_fields) == ["name", "size", "tags", "note"]
    for name, field in Toy.model_fields.items():
        theirs = twin.model_fields[name]
        assert (field.annotation, field.default, field.description, field.is_required(), field.exclude_if) == \
            (theirs.annotation, theirs.default, theirs.description, theirs.is_required(), theirs.exclude_if)
        assert field.metadata == theirs.metadata
    assert [type(m).__name__ for m in Toy.model_fields["size"].metadata] == ["Ge", "Le"]
    assert Toy.model_json_schema() == twin.model_json_schema()
    assert Toy.model_json_schema(mode="serialization") == twin.model_json_schema(mode="serialization")
    assert set(Toy.__private_attributes__) == set(twin.__private_attributes__) == {"_seen"}


def test_a_pydantic_model_holds_one(stored):
    class Holder(pydantic.BaseModel):
        toy: Toy
        toys: list[Toy] = []

    held = Holder(toy={"title": "T", "size": 2}, toys=[Toy(name="b")])
    assert type(held.toy) is Toy and held.toy == Toy(name="t", size=2) and held.toys[0].name == "b"
    assert held.model_dump() == {"toy": {"name": "t", "size": 2, "double": 4}, "toys": [{"name": "b", "size": 1,
                                                                                         "double": 2}]}
    assert Holder.model_json_schema()["$defs"]["Toy"] == Toy.model_json_schema()
    with pytest.raises(pydantic.ValidationError, match="13 is refused"):
        Holder(toy={"name": "a", "size": 13})

    class Loose(pydantic.BaseModel):  # a field pydantic-core dumps by asking the value (__pydantic_serializer__)
        anything: Any
        named: dict[str, Any]

    loose = Loose(anything=Toy(name="a"), named={"t": Toy(name="b", note="n")})
    assert loose.model_dump() == loose.model_dump(mode="json") == {
        "anything": {"name": "a", "size": 1, "double": 2}, "named": {"t": {"name": "b", "size": 1, "note": "n",
                                                                           "double": 2}}}
    assert json.loads(loose.model_dump_json()) == loose.model_dump()


def test_a_stale_schema_falls_back_to_the_twin(stored, monkeypatch):
    """An edited class (another key) is validated and dumped from the schema its twin makes, alike."""
    fresh = Toy(name="A", size=3, note="n")
    monkeypatch.setattr(datafiles, "schema_key", lambda cls, sources=(): "an edited class")
    _forget()
    assert datafiles.stored_schema(Toy) is None
    again = Toy(name="A", size=3, note="n")
    assert again == fresh and again.model_dump_json() == fresh.model_dump_json() == \
        '{"name":"a","size":3,"note":"n","double":6}'
    with pytest.raises(ValidationError, match="13 is refused"):
        Toy(name="a", size=13)


def test_an_instance_behaves_as_a_pydantic_one(stored):
    toy = Toy(name="A", tags=["x"])
    assert pickle.loads(pickle.dumps(toy)) == toy and pickle.loads(pickle.dumps(toy)).model_fields_set == {"name",
                                                                                                             "tags"}
    with pytest.raises(ValidationError, match="frozen"):
        toy.size = 4
    with pytest.raises(ValidationError, match="frozen"):
        toy.colour = "red"
    toy._seen = 5  # a private attribute is set on a frozen model
    assert toy._seen == 5 and toy.__pydantic_private__ == {"_seen": 5} and toy != Toy(name="A", tags=["x"])
    bigger = toy.model_copy(update={"size": 9})
    assert (bigger.size, bigger.double, toy.size, bigger._seen) == (9, 18, 1, 5)
    assert bigger.model_fields_set == {"name", "tags", "size"} and toy.model_fields_set == {"name", "tags"}
    deep = toy.model_copy(deep=True)
    assert deep == toy and deep is not toy and copy.copy(toy) == toy
    assert dict(toy) == {"name": "a", "size": 1, "tags": ("x",), "note": ""}
    assert Toy(name="a") == Toy(name="A") != Toy(name="b") and Toy(name="a") != "a"
    assert Toy.model_construct(name="raw").__dict__ == {"name": "raw", "size": 1, "tags": (), "note": ""}
    assert Toy.model_rebuild() and Toy in datafiles._VALIDATORS and Toy in datafiles._SERIALIZERS  # a warm-up
    with pytest.raises(AttributeError, match="_unknown"):
        toy._unknown  # noqa: B018


def test_validators_must_be_classmethods():
    """pydantic turns a before validator into a classmethod; the stored schema names the bound method, so the body
    says @classmethod itself."""
    with pytest.raises(TypeError, match="classmethod"):
        class Bad(StoredModel):
            x: int

            @field_validator("x")
            def _check(cls, value):
                return value
