"""A malformed scenario is refused with one line per problem, each naming the field that has it."""

from __future__ import annotations

from typing import Any

import pytest

from smoothscale.simulation import ScenarioError, parse_scenario

VALID: dict[str, Any] = {
    "name": "ok",
    "zones": ["zone-a", "zone-b"],
    "pods": {"count": 2},
    "topology": {"subtopologies": [{"partitions": 4}]},
    "events": [{"at": 10, "type": "scaleOut", "pods": 1}],
}


def problems(**changes: Any) -> list[str]:
    with pytest.raises(ScenarioError) as error:
        parse_scenario({**VALID, **changes})
    return error.value.problems


def test_the_valid_base_parses() -> None:
    assert parse_scenario(VALID).pods.count == 2


@pytest.mark.parametrize(
    ("changes", "expected"),
    [
        ({"pods": {"count": 0}}, "pods.count: Input should be greater than or equal to 1"),
        (
            {"pods": {"count": 2, "restoreRecordsPerSec": 5}},
            "pods.restoreRecordsPerSec: Extra inputs are not permitted",
        ),
        ({"zones": []}, "zones: List should have at least 1 item"),
        ({"zones": ["zone-a", "zone-a"]}, "zones: zone 'zone-a' appears more than once"),
        ({"topology": {"subtopologies": [{"partitions": "many"}]}}, "topology.subtopologies[0].partitions"),
        (
            {"planner": {"maxWarmupReplicas": 0}},
            "planner.maxWarmupReplicas: Input should be greater than or equal to 1",
        ),
        ({"operator": {"scrapeIntervalSeconds": 0}}, "operator.scrapeIntervalSeconds"),
        ({"events": [{"at": 1, "type": "scaleSideways"}]}, "events[0]: Input tag 'scaleSideways'"),
        ({"events": [{"at": -1, "type": "scaleOut", "pods": 1}]}, "events[0] (scaleOut).at"),
        ({"events": [{"at": 1, "type": "scaleOut"}]}, "events[0] (scaleOut).pods: Field required"),
        (
            {"events": [{"at": 1, "type": "podCrash", "pod": "app-9"}]},
            "events[0] (podCrash).pod: no pod 'app-9'",
        ),
        (
            {"events": [{"at": 1, "type": "zoneOutage", "zone": "zone-z"}]},
            "events[0] (zoneOutage).zone: unknown zone",
        ),
        (
            {"events": [{"at": 1, "type": "scaleIn", "pods": 2}]},
            "events[0] (scaleIn): retires 2 of 2 staying pods",
        ),
        (
            {"events": [{"at": 1, "type": "scaleIn"}]},
            "events[0] (scaleIn): give exactly one of pods and podNames",
        ),
        (
            {"events": [{"at": 1, "type": "inputRate", "factor": 2, "subtopology": "9"}]},
            "unknown subtopology '9'",
        ),
        ({"events": []}, "durationSeconds: required when there are no events"),
    ],
)
def test_each_problem_names_its_field(changes: dict[str, Any], expected: str) -> None:
    found = problems(**changes)
    assert any(expected in p for p in found), found


def test_pods_added_by_earlier_events_can_be_named_later() -> None:
    events = [
        {"at": 1, "type": "scaleOut", "pods": 1},
        {"at": 2, "type": "drain", "pod": "app-2"},
        {"at": 3, "type": "podCrash", "pod": "app-3"},
    ]
    assert len(parse_scenario({**VALID, "events": events}).events) == 3


def test_all_problems_are_reported_at_once() -> None:
    assert len(problems(pods={"count": 0}, zones=[])) == 2
