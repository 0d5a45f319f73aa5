"""Fixtures of the StreamsApp resource suite: the example manifest, a minimal spec, the generated CRD.

Test modules here have names no other suite uses: the folder is not a package, so pytest imports every
test module by its bare name.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from smoothscale.resource.crd import build_crd

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "streamsapp.yaml"
CHECKED_IN_CRD = ROOT / "crds" / "streamsapp.yaml"

Json = dict[str, Any]


@pytest.fixture(scope="session")
def checked_in_crd() -> Path:
    return CHECKED_IN_CRD


@pytest.fixture
def example() -> Json:
    """The shipped example manifest, freshly loaded (tests may change it)."""
    document: Json = yaml.safe_load(EXAMPLE.read_text(encoding="utf-8"))
    return document


@pytest.fixture
def minimal_spec() -> Json:
    """The least a person must write: a template and a topology; everything else defaults."""
    return {
        "template": {"spec": {"containers": [{"name": "app", "image": "example/app:1"}]}},
        "topology": {"subtopologies": [{"name": "0", "partitions": 4}]},
    }


@pytest.fixture(scope="session")
def crd() -> Json:
    return build_crd()


@pytest.fixture(scope="session")
def root_schema(crd: Json) -> Json:
    schema: Json = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    return schema


@pytest.fixture(scope="session")
def spec_schema(root_schema: Json) -> Json:
    schema: Json = root_schema["properties"]["spec"]
    return schema


@pytest.fixture(scope="session")
def status_schema(root_schema: Json) -> Json:
    schema: Json = root_schema["properties"]["status"]
    return schema


def apply_schema_defaults(value: Any, schema: Json) -> Any:
    """Default `value` the way the API server does: absent properties get `default`, then recursively."""
    if isinstance(value, dict):
        properties = schema.get("properties", {})
        for name, sub in properties.items():
            if name not in value and "default" in sub:
                value[name] = copy.deepcopy(sub["default"])
        additional = schema.get("additionalProperties")
        for name, item in value.items():
            if name in properties:
                apply_schema_defaults(item, properties[name])
            elif isinstance(additional, dict):
                apply_schema_defaults(item, additional)
    elif isinstance(value, list) and "items" in schema:
        for item in value:
            apply_schema_defaults(item, schema["items"])
    return value


@pytest.fixture(scope="session")
def defaulted() -> Callable[[Any, Json], Any]:
    """`apply_schema_defaults` on a deep copy, as a fixture so test modules need not import conftest."""
    return lambda value, schema: apply_schema_defaults(copy.deepcopy(value), schema)
