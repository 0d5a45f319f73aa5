"""The status the operator writes: metav1.Condition shape, camelCase, Kubernetes timestamps, lenient reads."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import pytest
from pydantic import ValidationError

from smoothscale.resource import (
    AssignmentStatus,
    AutoscalingStatus,
    Condition,
    ConditionStatus,
    ConditionType,
    LagStatus,
    LeavingPod,
    Phase,
    ProbingStatus,
    StreamsApp,
    StreamsAppStatus,
)

Json = dict[str, Any]
NOW = datetime(2026, 11, 21, 10, 0, 0, 123456, tzinfo=UTC)


def _status() -> StreamsAppStatus:
    return StreamsAppStatus(
        observed_generation=4,
        replicas=4,
        ready_replicas=3,
        selector="smoothscale.io/app=orders",
        phase=Phase.MIGRATING,
        conditions=[
            Condition(
                type=ConditionType.STABLE,
                status=ConditionStatus.FALSE,
                observed_generation=4,
                last_transition_time=NOW,
                reason="WarmupsRestoring",
                message="2 warmups restoring state on orders-3",
            ),
            Condition(
                type=ConditionType.READY,
                status=ConditionStatus.TRUE,
                last_transition_time=NOW,
                reason="AllTasksActive",
                message="",
            ),
        ],
        assignment=AssignmentStatus(
            generation=17,
            config_map="orders-assignment",
            active_tasks=24,
            standby_tasks=12,
            warmup_tasks=2,
            cross_rack_cost=30,
            active_imbalance=1.0,
        ),
        probing=ProbingStatus(next_probe_time=NOW, reason="warmups not caught up"),
        leaving=[LeavingPod(pod="orders-0", since=NOW, deadline=NOW)],
        lag=LagStatus(total=12_000, max_task=4_000),
        autoscaling=AutoscalingStatus(migrating=True, recommended_replicas=4),
    )


def test_condition_types_are_the_contracts() -> None:
    assert [t.value for t in ConditionType] == [
        "Ready",
        "Stable",
        "Migrating",
        "ScalingDown",
        "Degraded",
        "InvalidSpec",
        "KafkaUnavailable",
        "RackAwarenessDegraded",
        "AssignorFallback",
        "TopologyMismatch",
        "StreamsAssignorMissing",
        "Autoscaling",
    ]
    assert [s.value for s in ConditionStatus] == ["True", "False", "Unknown"]


def test_dump_is_camel_case_with_kubernetes_timestamps() -> None:
    dumped = _status().model_dump(mode="json", exclude_none=True)
    assert dumped["observedGeneration"] == 4
    assert dumped["readyReplicas"] == 3
    assert dumped["conditions"][0] == {
        "type": "Stable",
        "status": "False",
        "observedGeneration": 4,
        "lastTransitionTime": "2026-11-21T10:00:00Z",
        "reason": "WarmupsRestoring",
        "message": "2 warmups restoring state on orders-3",
    }
    assert dumped["assignment"]["configMap"] == "orders-assignment"
    assert dumped["assignment"]["warmupTasks"] == 2
    assert dumped["probing"]["nextProbeTime"] == "2026-11-21T10:00:00Z"
    assert dumped["leaving"] == [
        {"pod": "orders-0", "since": "2026-11-21T10:00:00Z", "deadline": "2026-11-21T10:00:00Z"}
    ]
    assert dumped["lag"] == {"total": 12_000, "maxTask": 4_000}
    assert dumped["autoscaling"] == {"migrating": True, "recommendedReplicas": 4}


def test_round_trip_through_json() -> None:
    status = _status()
    again = StreamsAppStatus.model_validate(status.model_dump(mode="json"))
    assert again.model_dump(mode="json") == status.model_dump(mode="json")


def test_timestamps_are_written_in_utc() -> None:
    moment = datetime(2026, 11, 21, 12, 0, tzinfo=timezone(timedelta(hours=2)))
    pod = LeavingPod(pod="orders-1", since=moment)
    assert pod.model_dump(mode="json", exclude_none=True) == {
        "pod": "orders-1",
        "since": "2026-11-21T10:00:00Z",
    }


def test_reading_tolerates_fields_from_a_newer_operator() -> None:
    status = StreamsAppStatus.model_validate({"replicas": 2, "phase": "Paused", "futureField": {"x": 1}})
    assert (status.replicas, status.phase) == (2, "Paused")


def test_condition_lookup() -> None:
    status = _status()
    stable = status.condition(ConditionType.STABLE)
    assert stable is not None and stable.status is ConditionStatus.FALSE
    assert status.condition(ConditionType.DEGRADED) is None


@pytest.mark.parametrize(
    "change",
    [
        {"reason": "not camel case"},
        {"reason": ""},
        {"status": "Maybe"},
        {"lastTransitionTime": "2026-11-21T10:00:00"},
    ],
)
def test_condition_shape_is_enforced(change: Json) -> None:
    condition = {
        "type": "Ready",
        "status": "True",
        "lastTransitionTime": "2026-11-21T10:00:00Z",
        "reason": "AllTasksActive",
        "message": "",
    }
    with pytest.raises(ValidationError):
        Condition.model_validate({**condition, **change})


def test_whole_object_with_status(example: Json) -> None:
    document = {**example, "status": _status().model_dump(mode="json", exclude_none=True)}
    app = StreamsApp.model_validate(document)
    assert app.status is not None and app.status.assignment is not None
    assert app.status.assignment.generation == 17
