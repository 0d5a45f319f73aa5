"""The CRD's openAPIV3Schema is structural, validates what the models validate, and defaults as they do."""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from typing import Any

import jsonschema
import pytest

from smoothscale.resource import (
    AssignmentStatus,
    Condition,
    ConditionStatus,
    ConditionType,
    StreamsAppSpec,
    StreamsAppStatus,
    spec_problems,
)

Json = dict[str, Any]
Defaulted = Callable[[Any, Json], Any]

_NOT_STRUCTURAL = ("$ref", "$defs", "definitions", "allOf", "oneOf", "not", "nullable", "title", "const")
_INT_OR_STRING = [{"type": "integer"}, {"type": "string"}]


def _nodes(schema: Json, path: str = "") -> Iterator[tuple[str, Json]]:
    yield path or ".", schema
    for name, sub in schema.get("properties", {}).items():
        yield from _nodes(sub, f"{path}.{name}")
    if isinstance(schema.get("additionalProperties"), dict):
        yield from _nodes(schema["additionalProperties"], f"{path}.*")
    if "items" in schema:
        yield from _nodes(schema["items"], f"{path}[]")


def test_schema_is_structural(root_schema: Json) -> None:
    for path, node in _nodes(root_schema):
        assert not set(_NOT_STRUCTURAL) & node.keys(), f"{path}: {sorted(set(_NOT_STRUCTURAL) & node.keys())}"
        assert node.get("uniqueItems") is not True, f"{path}: uniqueItems is forbidden"
        if node.get("x-kubernetes-int-or-string"):
            assert "type" not in node, path
            assert node.get("anyOf") == _INT_OR_STRING, f"{path}: int-or-string takes exactly this anyOf"
            continue
        assert "anyOf" not in node, f"{path}: anyOf is only allowed for int-or-string"
        assert node.get("type") in {"object", "array", "string", "integer", "number", "boolean"}, (
            f"{path}: every node needs a type"
        )
        if node["type"] == "array":
            assert isinstance(node.get("items"), dict), f"{path}: arrays need one items schema"
        if node["type"] == "object":
            additional = node.get("additionalProperties")
            assert additional is None or isinstance(additional, dict), (
                f"{path}: additionalProperties must be a schema"
            )
            assert not ("properties" in node and additional is not None), (
                f"{path}: properties or additionalProperties"
            )
            for name in node.get("required", []):
                assert name in node.get("properties", {}), f"{path}: required {name} is not a property"
        else:
            assert not {"properties", "additionalProperties", "required"} & node.keys(), path


def test_every_node_is_described_or_conventional(root_schema: Json) -> None:
    """`kubectl explain` shows descriptions: the models' docstrings and field descriptions must survive."""
    undocumented = [
        path
        for path, node in _nodes(root_schema)
        if "description" not in node and not path.endswith("[]") and not path.endswith(".*")
    ]
    assert undocumented == [".metadata"]


def test_metadata_is_left_to_the_api_server(root_schema: Json) -> None:
    assert root_schema["properties"]["metadata"] == {"type": "object"}
    assert root_schema["required"] == ["spec"]


def test_free_form_parts_preserve_unknown_fields(spec_schema: Json) -> None:
    template = spec_schema["properties"]["template"]
    assert template["x-kubernetes-preserve-unknown-fields"] is True
    assert template["properties"]["metadata"]["x-kubernetes-preserve-unknown-fields"] is True
    pod_spec = template["properties"]["spec"]
    assert pod_spec["x-kubernetes-preserve-unknown-fields"] is True
    assert pod_spec["required"] == ["containers"]
    assert pod_spec["properties"]["containers"]["minItems"] == 1
    assert pod_spec["properties"]["containers"]["items"]["x-kubernetes-preserve-unknown-fields"] is True
    # A PodTemplateSpec has no apiVersion/kind, which x-kubernetes-embedded-resource would require.
    assert not any("x-kubernetes-embedded-resource" in node for _, node in _nodes(spec_schema))


def test_list_types(spec_schema: Json, status_schema: Json) -> None:
    lists = {
        path: node
        for schema in (spec_schema, status_schema)
        for path, node in _nodes(schema)
        if "x-kubernetes-list-type" in node
    }
    assert {path: node["x-kubernetes-list-type"] for path, node in lists.items()} == {
        ".topology.subtopologies": "map",
        ".topology.subtopologies[].inputTopics": "set",
        ".topology.subtopologies[].stores": "set",
        ".conditions": "map",
        ".leaving": "map",
        ".progress.warmups": "map",
    }
    for path, node in lists.items():
        if node["x-kubernetes-list-type"] == "map":
            items = node["items"]
            for key in node["x-kubernetes-list-map-keys"]:
                assert key in items["required"] or "default" in items["properties"][key], (path, key)
        else:
            assert node["items"]["type"] in {"string", "integer", "number", "boolean"}, path


def test_minimums_are_enforced_by_the_schema(spec_schema: Json) -> None:
    properties = spec_schema["properties"]
    assert properties["replicas"]["minimum"] == 0
    assignment = properties["assignment"]["properties"]
    assert assignment["acceptableRecoveryLag"]["minimum"] == 0
    assert assignment["maxWarmupReplicas"]["minimum"] == 1
    subtopology = properties["topology"]["properties"]["subtopologies"]["items"]["properties"]
    assert subtopology["partitions"]["minimum"] == 1
    assert (subtopology["weight"]["minimum"], subtopology["weight"]["exclusiveMinimum"]) == (0, True)


def test_cel_rules_cover_the_cross_field_checks(spec_schema: Json) -> None:
    rules = {
        path: [rule["rule"] for rule in node["x-kubernetes-validations"]]
        for path, node in _nodes(spec_schema)
        if "x-kubernetes-validations" in node
    }
    assert rules == {
        ".": [
            "!has(self.failover) || !has(self.failover.leaseSeconds) || !has(self.runtime) || "
            "self.runtime != 'KafkaStreams'"
        ],
        ".assignment": ["!has(self.probingInterval) || duration(self.probingInterval) >= duration('1s')"],
        ".autoscaling": [
            "!has(self.maxReplicas) || !has(self.minReplicas) || self.minReplicas <= self.maxReplicas"
        ],
        ".scaling": [
            "!has(self.updateStrategy) || !has(self.maxSurge) || self.updateStrategy != 'Swap' || "
            "(type(self.maxSurge) == int ? self.maxSurge > 0 : !self.maxSurge.matches('^0+%$'))"
        ],
        ".scaling.maxSurge": ["type(self) == int ? self >= 0 : self.matches('^[0-9]+%$')"],
    }
    for path, node in _nodes(spec_schema):
        for rule in node.get("x-kubernetes-validations", []):
            assert rule["message"], path
            if "fieldPath" in rule:
                assert rule["fieldPath"].lstrip(".") in node["properties"], (path, rule["fieldPath"])


def _prune_empty(value: Any) -> Any:
    if isinstance(value, dict):
        pruned = {k: _prune_empty(v) for k, v in value.items()}
        return {k: v for k, v in pruned.items() if v not in ({}, [])}
    if isinstance(value, list):
        return [_prune_empty(v) for v in value]
    return value


@pytest.mark.parametrize("fixture", ["minimal_spec", "example_spec"])
def test_schema_defaults_equal_model_defaults(
    fixture: str, request: pytest.FixtureRequest, spec_schema: Json, defaulted: Defaulted
) -> None:
    """What the API server fills in is what the operator assumes when a field is absent; but for
    `metrics.port`, whose default is the runtime's (`Runtime.metrics_port`), which the schema must leave
    out so that a Kafka Streams app gets the bridge's port."""
    raw: Json = request.getfixturevalue(fixture)
    from_schema = defaulted(raw, spec_schema)
    from_model = StreamsAppSpec.model_validate(raw).model_dump(mode="json", exclude_none=True)
    if "port" not in (raw.get("metrics") or {}):
        assert "port" not in from_schema["metrics"], "the API server fills in no metrics port"
        del from_model["metrics"]["port"]
    assert _prune_empty(from_schema) == _prune_empty(from_model)


@pytest.fixture
def example_spec(example: Json) -> Json:
    spec: Json = example["spec"]
    return spec


# -------------------------------------------------------------- with a JSON Schema validator (the test extra)


@pytest.fixture(scope="module")
def validator_class() -> Any:
    # OpenAPI 3.0 schemas are draft 4 in the parts Kubernetes uses (boolean exclusiveMinimum included).
    return jsonschema.Draft4Validator


def _errors(validator_class: Any, schema: Json, document: Any) -> list[str]:
    return sorted(
        "/".join(map(str, e.absolute_path)) + ": " + e.message
        for e in validator_class(schema).iter_errors(document)
    )


def test_schema_is_valid_json_schema(validator_class: Any, root_schema: Json) -> None:
    validator_class.check_schema(root_schema)


def test_example_validates_against_the_crd(validator_class: Any, root_schema: Json, example: Json) -> None:
    assert _errors(validator_class, root_schema, example) == []


def test_defaulted_example_validates(
    validator_class: Any, root_schema: Json, example: Json, defaulted: Defaulted
) -> None:
    assert _errors(validator_class, root_schema, defaulted(example, root_schema)) == []


def test_model_dump_validates_against_the_crd(validator_class: Any, spec_schema: Json, example: Json) -> None:
    dumped = StreamsAppSpec.model_validate(example["spec"]).model_dump(mode="json", exclude_none=True)
    assert _errors(validator_class, spec_schema, dumped) == []


def test_defaults_validate_against_their_own_schema(
    validator_class: Any, root_schema: Json, defaulted: Defaulted
) -> None:
    """The API server rejects a CRD whose defaults do not validate (after defaulting them in turn)."""
    for path, node in _nodes(root_schema):
        if "default" in node:
            assert _errors(validator_class, node, defaulted(node["default"], node)) == [], path


def test_status_validates_against_the_crd(validator_class: Any, status_schema: Json) -> None:
    now = datetime(2026, 11, 21, 10, 0, tzinfo=UTC)
    status = StreamsAppStatus(
        replicas=3,
        ready_replicas=3,
        selector="smoothscale.io/app=orders",
        phase="Running",
        conditions=[
            Condition(
                type=ConditionType.STABLE,
                status=ConditionStatus.TRUE,
                last_transition_time=now,
                reason="Converged",
                message="no warmups",
            )
        ],
        assignment=AssignmentStatus(generation=3, config_map="orders-assignment"),
    )
    assert _errors(validator_class, status_schema, status.model_dump(mode="json", exclude_none=True)) == []


@pytest.mark.parametrize(
    ("path", "value", "where"),
    [
        ("assignment.maxWarmupReplicas", 0, "assignment/maxWarmupReplicas"),
        ("assignment.acceptableRecoveryLag", -1, "assignment/acceptableRecoveryLag"),
        ("assignment.probingInterval", "10 minutes", "assignment/probingInterval"),
        ("scaling.scaleDownTimeout", "1d", "scaling/scaleDownTimeout"),
        ("scaling.maxSurge", {"pods": 2}, "scaling/maxSurge"),
        ("scaling.updateStrategy", "Recreate", "scaling/updateStrategy"),
        ("replicas", -1, "replicas"),
        ("storage", {"size": "ten gigs"}, "storage/size"),
        ("metrics.port", 0, "metrics/port"),
        ("template", {"spec": {"containers": []}}, "template/spec/containers"),
        (
            "topology",
            {"subtopologies": [{"name": "0", "partitions": 0}]},
            "topology/subtopologies/0/partitions",
        ),
        ("topology", {"subtopologies": [{"name": "0_1", "partitions": 1}]}, "topology/subtopologies/0/name"),
        (
            "topology",
            {"subtopologies": [{"name": "0", "partitions": 1, "weight": 0}]},
            "topology/subtopologies/0",
        ),
    ],
)
def test_the_crd_rejects_what_the_models_reject(
    validator_class: Any, spec_schema: Json, minimal_spec: Json, path: str, value: Any, where: str
) -> None:
    spec = copy.deepcopy(minimal_spec)
    node = spec
    *parents, last = path.split(".")
    for part in parents:
        node = node.setdefault(part, {})
    node[last] = value
    errors = _errors(validator_class, spec_schema, spec)
    assert errors, f"the schema accepted {path}={value!r}"
    assert any(e.startswith(where) for e in errors), errors
    assert spec_problems(spec), f"the models accepted {path}={value!r}"
