"""pydantic JSON Schema -> Kubernetes structural schema: what translates, and what fails loudly."""

from __future__ import annotations

from typing import Any, Literal

import pytest
from pydantic import BaseModel, ConfigDict, Field

from smoothscale.resource.openapi import UnsupportedSchemaError, structural_schema


class Inner(BaseModel):
    """Inner's own description."""

    model_config = ConfigDict(extra="forbid")

    count: int = Field(3, ge=0, description="how many")


class Outer(BaseModel):
    """Outer."""

    inner: Inner = Field(description="the field's description wins")
    maybe: Inner | None = Field(None, description="optional")
    ratio: float = Field(1.0, gt=0, lt=10, title="Ratio", description="a ratio")
    labels: dict[str, str] = Field(default_factory=dict, description="labels")
    anything: dict[str, Any] = Field(default_factory=dict, description="free-form")
    names: list[str] = Field(default_factory=list, description="names")


def test_refs_are_inlined_and_the_field_description_wins() -> None:
    inner = structural_schema(Outer)["properties"]["inner"]
    assert inner["description"] == "the field's description wins"
    assert inner["type"] == "object"
    assert inner["properties"]["count"] == {
        "description": "how many",
        "type": "integer",
        "default": 3,
        "minimum": 0,
    }


def test_an_optional_field_is_just_not_required() -> None:
    schema = structural_schema(Outer)
    maybe = schema["properties"]["maybe"]
    assert "anyOf" not in maybe and "default" not in maybe
    assert maybe["type"] == "object" and maybe["description"] == "optional"
    assert schema["required"] == ["inner"]


def test_exclusive_bounds_use_the_openapi_3_0_form() -> None:
    ratio = structural_schema(Outer)["properties"]["ratio"]
    assert ratio == {
        "description": "a ratio",
        "type": "number",
        "default": 1.0,
        "minimum": 0,
        "exclusiveMinimum": True,
        "maximum": 10,
        "exclusiveMaximum": True,
    }


def test_no_titles_and_no_closed_objects() -> None:
    schema = structural_schema(Outer)
    assert "title" not in schema
    assert "additionalProperties" not in schema["properties"]["inner"], (
        "extra=forbid has no structural spelling"
    )


def test_maps_and_free_form_objects() -> None:
    properties = structural_schema(Outer)["properties"]
    assert properties["labels"]["additionalProperties"] == {"type": "string"}
    assert properties["anything"]["x-kubernetes-preserve-unknown-fields"] is True
    assert "additionalProperties" not in properties["anything"]
    assert properties["names"]["items"] == {"type": "string"}


def test_keys_read_top_down() -> None:
    inner = structural_schema(Outer)["properties"]["inner"]
    assert list(inner)[:2] == ["description", "type"]
    assert list(inner)[-1] == "properties"


class _Union(BaseModel):
    value: int | str


class _Untyped(BaseModel):
    value: Any


class _Recursive(BaseModel):
    children: list[_Recursive] = Field(default_factory=list)


class _Set(BaseModel):
    value: set[str]


class _Const(BaseModel):
    value: Literal["only"]


@pytest.mark.parametrize(
    ("model", "complaint"),
    [
        (_Union, "unions other than"),
        (_Untyped, "needs a type"),
        (_Recursive, "recursive model"),
        (_Set, "uniqueItems"),
        (_Const, "const"),
    ],
)
def test_unsupported_constructs_fail_loudly(model: type[BaseModel], complaint: str) -> None:
    with pytest.raises(UnsupportedSchemaError, match=complaint):
        structural_schema(model)
