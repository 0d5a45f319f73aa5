"""The spec and whole-object models: the example parses, defaults fill in, names are camelCase on the wire."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from smoothscale.assignor.models import RackStrategy
from smoothscale.resource import (
    ScalingSpec,
    StreamsApp,
    StreamsAppSpec,
    UpdateStrategy,
    api_kind,
    scaling_policy,
)

Json = dict[str, Any]


def test_example_parses_as_a_whole_object(example: Json) -> None:
    app = StreamsApp.model_validate(example)
    assert app.metadata["name"] == "orders"
    assert app.spec.replicas == 3
    subtopologies = app.spec.topology.subtopologies
    assert [(s.name, s.partitions, s.stateful) for s in subtopologies] == [("0", 12, False), ("1", 12, True)]
    assert app.spec.assignment.num_standbys == 1
    assert app.spec.storage is not None and app.spec.storage.size == "10Gi"
    assert app.spec.metrics.port == 8080
    assert app.status is None


def test_whole_object_literals_are_the_registered_names() -> None:
    app = StreamsApp.model_validate({"spec": _minimal()})
    assert app.api_version == api_kind.API_VERSION
    assert app.kind == api_kind.KIND


def test_whole_object_rejects_another_kind() -> None:
    with pytest.raises(ValidationError):
        StreamsApp.model_validate({"apiVersion": "apps/v1", "kind": "Deployment", "spec": _minimal()})


def test_defaults_fill_every_optional_section(minimal_spec: Json) -> None:
    spec = StreamsAppSpec.model_validate(minimal_spec)
    assert spec.replicas == 1
    sub = spec.topology.subtopologies[0]
    assert (sub.stateful, sub.input_topics, sub.weight) == (True, [], 1.0)
    assignment = spec.assignment
    assert (assignment.num_standbys, assignment.acceptable_recovery_lag, assignment.max_warmup_replicas) == (
        0,
        10_000,
        2,
    )
    assert assignment.rack_aware.strategy is RackStrategy.BALANCE_SUBTOPOLOGY
    assert (assignment.rack_aware.traffic_cost, assignment.rack_aware.non_overlap_cost) == (10, 1)
    assert assignment.probing_interval == "10m"
    assert spec.scaling.scale_down_timeout is None
    assert spec.scaling.update_strategy is UpdateStrategy.SWAP
    assert spec.scaling.max_surge == "100%"
    assert spec.storage is None
    assert (spec.metrics.port, spec.metrics.path) == (8080, "/metrics")
    assert spec.metrics.names.task_lag == "smoothscale_task_lag"
    assert spec.metrics.names.changelog_end_offset == "smoothscale_task_changelog_end_offset"
    assert spec.metrics.names.assignment_generation == "smoothscale_assignment_generation"
    assert spec.racks == {}


def test_storage_defaults(minimal_spec: Json) -> None:
    spec = StreamsAppSpec.model_validate({**minimal_spec, "storage": {"size": "1Gi"}})
    assert spec.storage is not None
    assert spec.storage.storage_class_name is None
    assert not spec.storage.deletes_with_app and not spec.storage.deletes_on_scale_down, "Retain"


def test_dump_is_camel_case_and_round_trips(example: Json) -> None:
    spec = StreamsAppSpec.model_validate(example["spec"])
    dumped = spec.model_dump(mode="json", exclude_none=True)
    assert "probingInterval" in dumped["assignment"]
    assert "nonOverlapCost" in dumped["assignment"]["rackAware"]
    assert dumped["storage"]["retentionPolicy"] == {"whenDeleted": "Retain", "whenScaled": "Delete"}
    assert "inputTopics" in dumped["topology"]["subtopologies"][0]
    assert StreamsAppSpec.model_validate(dumped) == spec


def test_snake_case_names_are_accepted_too(minimal_spec: Json) -> None:
    spec = StreamsAppSpec.model_validate({**minimal_spec, "assignment": {"max_warmup_replicas": 5}})
    assert spec.assignment.max_warmup_replicas == 5


def test_template_is_kept_as_written(example: Json) -> None:
    spec = StreamsAppSpec.model_validate(example["spec"])
    assert spec.template.model_dump(mode="json") == example["spec"]["template"]


def test_template_needs_containers(minimal_spec: Json) -> None:
    for template in ({"spec": {}}, {"spec": {"containers": []}}, {"metadata": {}}):
        with pytest.raises(ValidationError):
            StreamsAppSpec.model_validate({**minimal_spec, "template": template})


def test_models_are_immutable(minimal_spec: Json) -> None:
    spec = StreamsAppSpec.model_validate(minimal_spec)
    with pytest.raises(ValidationError):
        spec.replicas = 5  # type: ignore[misc]


@pytest.mark.parametrize(
    ("max_surge", "replicas", "pods"),
    [(2, 10, 2), (0, 3, 0), ("100%", 3, 3), ("25%", 3, 1), ("25%", 8, 2), ("1%", 1, 1), ("0%", 5, 0)],
)
def test_max_surge_pods_rounds_percentages_up(max_surge: int | str, replicas: int, pods: int) -> None:
    assert scaling_policy(ScalingSpec(max_surge=max_surge), replicas).max_surge == pods


@pytest.mark.parametrize("bad", ["2", "25", "-1%", "25 %", -1, True, 2.5, "x%"])
def test_max_surge_is_a_count_or_a_percentage(bad: object) -> None:
    with pytest.raises(ValidationError, match="neither a number of pods"):
        ScalingSpec.model_validate({"maxSurge": bad})


def test_subtopology_lookup(example: Json) -> None:
    spec = StreamsAppSpec.model_validate(example["spec"])
    found = spec.subtopology("1")
    assert found is not None and found.stateful
    assert spec.subtopology("7") is None


def _minimal() -> Json:
    return {
        "template": {"spec": {"containers": [{"name": "app"}]}},
        "topology": {"subtopologies": [{"name": "0", "partitions": 1}]},
    }
