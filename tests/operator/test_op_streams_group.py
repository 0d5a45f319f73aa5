"""A streams group as `Admin.describeStreamsGroups` shows it becomes the planner's snapshot: pods from the
`smoothscale.pod` tag, racks, capacity per member, lags from task offsets against the end offsets."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from smoothscale.assignor.models import PlannerConfig
from smoothscale.assignor.planner import plan
from smoothscale.contract.publication import ClientAssignment, Publication
from smoothscale.operator.kafka import streamsgroup


def member(pod: str | None, rack: str, offsets: dict[str, int], ends: dict[str, int]) -> dict[str, Any]:
    return {"pod": pod, "rack": rack, "taskOffsets": offsets, "taskEndOffsets": ends}


VIEW: dict[str, Any] = {
    "subtopologies": [
        {"id": "0", "sourceTopics": ["orders"], "changelogTopics": []},
        {"id": "1", "sourceTopics": [], "changelogTopics": ["app-totals-changelog"]},
    ],
    "members": [
        member("pod-0", "zone-a", {"1_0": -2, "1_1": -2}, {"1_0": 500, "1_1": 800}),
        member("pod-1", "zone-b", {"1_0": 450}, {"1_0": 500}),
        member("pod-1", "zone-b", {}, {}),
        member(None, "zone-c", {"1_1": 0}, {"1_1": 800}),
    ],
}


def test_the_group_becomes_the_planners_input() -> None:
    published = Publication(
        generation=3, assignment={"pod-0": ClientAssignment(active=["0_0", "0_1", "1_0", "1_1"])}
    )
    snapshot = streamsgroup.snapshot(
        VIEW,
        now=datetime(2026, 11, 26, tzinfo=UTC),
        config=PlannerConfig(acceptable_recovery_lag=100),
        partitions={"0": 2, "1": 2},
        input_racks={"0_0": [["zone-a"]]},
        published=published,
    )
    tasks = {task.id: task for task in snapshot.tasks}
    assert sorted(tasks) == ["0_0", "0_1", "1_0", "1_1"]
    assert not tasks["0_0"].stateful and tasks["1_0"].stateful
    assert (tasks["1_0"].changelog_offsets, tasks["1_1"].changelog_offsets) == (500, 800)
    assert tasks["0_0"].input_partition_racks == [["zone-a"]]
    clients = {client.id: client for client in snapshot.clients}
    assert sorted(clients) == ["pod-0", "pod-1"], "a member without the pod tag is no pod"
    assert clients["pod-0"].lags == {"1_0": 0, "1_1": 0}, "a running active reports -2: caught up"
    assert clients["pod-1"].lags == {"1_0": 50}
    assert (clients["pod-1"].capacity, clients["pod-1"].rack) == (2, "zone-b")
    assert clients["pod-0"].active == ["0_0", "0_1", "1_0", "1_1"]
    # pod-1 holds 1_0 within the acceptable lag: the planner may move it there at once, never 1_1
    moved = plan(snapshot).assignment["pod-1"].active
    assert "1_1" not in moved
