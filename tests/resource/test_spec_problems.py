"""What the operator reports in the InvalidSpec condition: every problem, each message naming its field."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from smoothscale.resource import InvalidSpecError, load_spec, semantic_problems, spec_problems

Json = dict[str, Any]


def _with(spec: Json, path: str, value: Any) -> Json:
    """`spec` with the dotted `path` set to `value` (intermediate objects created; [n] indexes lists)."""
    changed = copy.deepcopy(spec)
    node: Any = changed
    parts = path.split(".")
    for part in parts[:-1]:
        node = node[int(part)] if isinstance(node, list) else node.setdefault(part, {})
    node[parts[-1]] = value
    return changed


def _only(problems: list[str]) -> str:
    assert len(problems) == 1, problems
    return problems[0]


def test_example_has_no_problems(example: Json) -> None:
    assert spec_problems(example["spec"]) == []


def test_minimal_spec_has_no_problems(minimal_spec: Json) -> None:
    assert spec_problems(minimal_spec) == []


@pytest.mark.parametrize(
    ("path", "value", "field"),
    [
        ("assignment.probingInterval", "10 minutes", "spec.assignment.probingInterval"),
        ("assignment.probingInterval", "1d", "spec.assignment.probingInterval"),
        ("scaling.scaleDownTimeout", "-5m", "spec.scaling.scaleDownTimeout"),
        ("scaling.scaleDownTimeout", "30", "spec.scaling.scaleDownTimeout"),
    ],
)
def test_bad_durations_name_the_field(minimal_spec: Json, path: str, value: str, field: str) -> None:
    message = _only(spec_problems(_with(minimal_spec, path, value)))
    assert message.startswith(f"{field}: {value!r} is not a duration")
    assert "1h30m" in message


@pytest.mark.parametrize(
    ("path", "value", "expected"),
    [
        (
            "assignment.maxWarmupReplicas",
            0,
            "spec.assignment.maxWarmupReplicas: should be greater than or equal to 1",
        ),
        (
            "assignment.acceptableRecoveryLag",
            -1,
            "spec.assignment.acceptableRecoveryLag: should be greater than",
        ),
        ("assignment.numStandbys", 17, "spec.assignment.numStandbys: should be less than or equal to 16"),
        ("assignment.rackAware.strategy", "fastest", "spec.assignment.rackAware.strategy: should be 'none'"),
        ("replicas", -1, "spec.replicas: should be greater than or equal to 0 (got -1)"),
        ("topology.subtopologies.0.partitions", 0, "spec.topology.subtopologies[0].partitions: should be"),
        (
            "topology.subtopologies.0.weight",
            0,
            "spec.topology.subtopologies[0].weight: should be greater than 0",
        ),
        (
            "topology.subtopologies.0.name",
            "a_b",
            "spec.topology.subtopologies[0].name: 'a_b' is not a subtopology",
        ),
        (
            "topology.subtopologies.0.inputTopics",
            ["bad topic"],
            "spec.topology.subtopologies[0].inputTopics[0]:",
        ),
        (
            "scaling.updateStrategy",
            "Recreate",
            "spec.scaling.updateStrategy: should be 'Swap' or 'RollingRestart'",
        ),
        ("scaling.maxSurge", "lots", "spec.scaling.maxSurge: 'lots' is neither a number of pods"),
        ("storage", {"size": "ten gigs"}, "spec.storage.size: 'ten gigs' is not a Kubernetes quantity"),
        ("storage", {}, "spec.storage.size: is required"),
        ("metrics.port", 70000, "spec.metrics.port: should be less than or equal to 65535"),
        ("metrics.path", "metrics", "spec.metrics.path: 'metrics' is not an HTTP path"),
        (
            "metrics.names.taskLag",
            "task-lag",
            "spec.metrics.names.taskLag: 'task-lag' is not a Prometheus metric",
        ),
        (
            "assignment.maxWarmupReplica",
            3,
            "spec.assignment.maxWarmupReplica: is not a field here (misspelt?)",
        ),
        ("template.spec.containers", [], "spec.template.spec.containers: should have at least 1 item"),
    ],
)
def test_schema_level_problems_name_the_field(
    minimal_spec: Json, path: str, value: Any, expected: str
) -> None:
    assert _only(spec_problems(_with(minimal_spec, path, value))).startswith(expected)


def test_missing_sections_are_reported_as_required() -> None:
    problems = spec_problems({})
    assert "spec.template: is required" in problems
    # spec.topology is optional for runtime KafkaStreams (the app reports it): required only by a rule across
    # fields, checked once every field is well-formed (tests/operator/test_op_app_report.py).
    assert not any(p.startswith("spec.topology") for p in problems)


def test_every_problem_is_reported_at_once(minimal_spec: Json) -> None:
    spec = _with(minimal_spec, "assignment.maxWarmupReplicas", 0)
    spec = _with(spec, "assignment.probingInterval", "soon")
    spec = _with(spec, "replicas", -2)
    fields = sorted(p.split(":", 1)[0] for p in spec_problems(spec))
    assert fields == ["spec.assignment.maxWarmupReplicas", "spec.assignment.probingInterval", "spec.replicas"]


def test_subtopology_names_must_be_unique(minimal_spec: Json) -> None:
    spec = _with(minimal_spec, "topology.subtopologies", [{"name": "0", "partitions": 1}] * 2)
    message = _only(spec_problems(spec))
    assert message.startswith(
        "spec.topology.subtopologies[1].name: '0' is already the name of subtopologies[0]"
    )


def test_a_topic_is_read_by_one_subtopology(minimal_spec: Json) -> None:
    subtopologies = [
        {"name": "0", "partitions": 3, "inputTopics": ["orders"]},
        {"name": "1", "partitions": 3, "inputTopics": ["payments", "orders"]},
    ]
    message = _only(spec_problems(_with(minimal_spec, "topology.subtopologies", subtopologies)))
    assert message.startswith(
        "spec.topology.subtopologies[1].inputTopics: topic 'orders' is already an input"
    )


def test_a_topic_is_listed_once(minimal_spec: Json) -> None:
    subtopologies = [{"name": "0", "partitions": 3, "inputTopics": ["orders", "orders"]}]
    message = _only(spec_problems(_with(minimal_spec, "topology.subtopologies", subtopologies)))
    assert message == "spec.topology.subtopologies[0].inputTopics: lists a topic more than once"


def test_racks_must_name_input_topics_with_one_entry_per_partition(minimal_spec: Json) -> None:
    spec = _with(
        minimal_spec, "topology.subtopologies", [{"name": "0", "partitions": 2, "inputTopics": ["a.b"]}]
    )
    assert spec_problems(_with(spec, "racks", {"a.b": [["zone-a"], ["zone-b", "zone-c"]]})) == []
    unknown = _only(spec_problems(_with(spec, "racks", {"nope": [["zone-a"], ["zone-b"]]})))
    assert unknown == "spec.racks.nope: 'nope' is not an input topic of any subtopology"
    short = _only(spec_problems(_with(spec, "racks", {"a.b": [["zone-a"]]})))
    assert short.startswith("spec.racks['a.b']: lists 1 partitions but subtopology '0' reads it with 2")


def test_probing_interval_is_at_least_a_second(minimal_spec: Json) -> None:
    message = _only(spec_problems(_with(minimal_spec, "assignment.probingInterval", "500ms")))
    assert message == "spec.assignment.probingInterval: must be at least 1s (got '500ms')"
    assert spec_problems(_with(minimal_spec, "assignment.probingInterval", "1s")) == []


@pytest.mark.parametrize("surge", [0, "0%", "000%"])
def test_swap_needs_surge(minimal_spec: Json, surge: int | str) -> None:
    spec = _with(minimal_spec, "scaling.maxSurge", surge)
    message = _only(spec_problems(spec))
    assert message.startswith(
        "spec.scaling.maxSurge: must allow at least one extra pod when updateStrategy is Swap"
    )
    assert spec_problems(_with(spec, "scaling.updateStrategy", "RollingRestart")) == []


def test_autoscaling_bounds_are_ordered(minimal_spec: Json) -> None:
    spec = _with(minimal_spec, "autoscaling", {"mode": "Act", "minReplicas": 4, "maxReplicas": 3})
    assert _only(spec_problems(spec)) == (
        "spec.autoscaling.minReplicas: must not exceed maxReplicas (got 4 > 3); lower minReplicas or raise "
        "maxReplicas"
    )
    assert spec_problems(_with(spec, "autoscaling.maxReplicas", 4)) == []
    assert _only(spec_problems(_with(minimal_spec, "autoscaling.mode", "Auto"))).startswith(
        "spec.autoscaling.mode:"
    )


def test_a_lease_is_for_the_client_library_within_its_bounds(minimal_spec: Json) -> None:
    leased = _with(minimal_spec, "failover.leaseSeconds", 10)
    assert load_spec(leased).failover.lease_seconds == 10
    assert load_spec(minimal_spec).failover.lease_seconds is None, "absent: no lease"
    for bound in (3, 1800):
        assert spec_problems(_with(minimal_spec, "failover.leaseSeconds", bound)) == []
    assert _only(spec_problems(_with(minimal_spec, "failover.leaseSeconds", 2))) == (
        "spec.failover.leaseSeconds: should be greater than or equal to 3 (got 2)"
    )
    assert _only(spec_problems(_with(minimal_spec, "failover.leaseSeconds", 1801))) == (
        "spec.failover.leaseSeconds: should be less than or equal to 1800 (got 1801)"
    )
    streams = _with(leased, "runtime", "KafkaStreams")
    message = _only(spec_problems(streams))
    assert message.startswith("spec.failover.leaseSeconds: only for runtime ClientLibrary")
    assert "session.timeout.ms" in message
    assert spec_problems(_with(streams, "failover", {})) == [], "an empty section is no lease"


def test_load_spec_returns_the_model_or_raises_with_every_problem(minimal_spec: Json) -> None:
    assert load_spec(minimal_spec).topology.subtopologies[0].name == "0"
    spec = _with(minimal_spec, "topology.subtopologies", [{"name": "0", "partitions": 1}] * 3)
    with pytest.raises(InvalidSpecError) as raised:
        load_spec(spec)
    assert len(raised.value.problems) == 2
    assert str(raised.value) == "; ".join(raised.value.problems)
    assert isinstance(raised.value, ValueError)


def test_semantic_problems_of_a_parsed_spec(minimal_spec: Json) -> None:
    spec = load_spec(minimal_spec).model_copy(update={"racks": {"ghost": [["zone-a"]]}})
    assert semantic_problems(spec) == ["spec.racks.ghost: 'ghost' is not an input topic of any subtopology"]
