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


def test_an_empty_pod_is_as_far_behind_as_the_changelogs_kafka_reports() -> None:
    """Kafka Streams 4.4 reports no end offset for a task it runs as active: a group whose members hold only
    actives shows none. With the changelogs' end offsets as read from Kafka, a pod that just joined is that
    far behind and gets a warmup first, not the active task (without them every task had size 0 and the
    benchmark's new pods restored 20,396 records while their tasks were paused)."""
    view = {
        "subtopologies": VIEW["subtopologies"],
        "members": [member("pod-0", "zone-a", {}, {}), member("pod-1", "zone-a", {}, {})],
    }
    published = Publication(
        generation=3, assignment={"pod-0": ClientAssignment(active=["0_0", "0_1", "1_0", "1_1"])}
    )
    snapshot = streamsgroup.snapshot(
        view,
        now=datetime(2026, 11, 26, tzinfo=UTC),
        config=PlannerConfig(acceptable_recovery_lag=100, num_standbys=0),
        partitions={"0": 2, "1": 2},
        input_racks={},
        published=published,
        changelog_ends={"1_0": 5_000, "1_1": 8_000},
    )
    tasks = {task.id: task for task in snapshot.tasks}
    assert (tasks["1_0"].changelog_offsets, tasks["1_1"].changelog_offsets) == (5_000, 8_000)
    roles = plan(snapshot).assignment["pod-1"]
    assert not {"1_0", "1_1"} & set(roles.active), "a stateful task moves only once its copy caught up"
    assert {"1_0", "1_1"} & set(roles.warmup)


def running_member(pod: str, active: list[str], standby: list[str]) -> dict[str, Any]:
    return {
        **member(pod, "zone-a", {"1_0": 480}, {"1_0": 500}),
        "assignment": {"active": active, "standby": standby, "warmup": []},
    }


TOPOLOGY_VIEW: dict[str, Any] = {
    "subtopologies": [
        {"id": "0", "sourceTopics": ["orders"], "repartitionSourceTopics": [], "changelogTopics": []},
        {
            "id": "1",
            "sourceTopics": [],
            "repartitionSourceTopics": ["app-by-customer-repartition"],
            "changelogTopics": ["app-totals-changelog"],
        },
    ],
    "members": [
        running_member("pod-0", ["0_0", "1_1"], ["1_0"]),
        running_member("pod-1", ["0_1"], []),
        running_member("pod-1", ["1_0"], []),
    ],
}


def test_what_a_pod_would_report_comes_from_kafkas_view_of_the_group() -> None:
    """Under the streams protocol no pod is scraped: its lags, the topology and whether it runs the
    published generation come from the group as Kafka describes it."""
    published = Publication(
        generation=7,
        assignment={
            "pod-0": ClientAssignment(active=["0_0", "1_1"], warmup=["1_0"]),
            "pod-1": ClientAssignment(active=["0_1", "1_0"], standby=["1_1"]),
        },
    )
    partitions = {"orders": 2, "app-by-customer-repartition": 2, "app-totals-changelog": 2}
    results = streamsgroup.pod_results(TOPOLOGY_VIEW, published, partitions, {"1_0": 510})
    assert sorted(results) == ["pod-0", "pod-1"]
    assert results["pod-0"].generation == 7, "runs its part of generation 7 (a warmup is a standby there)"
    assert results["pod-1"].generation == 6, "its standby 1_1 is not there yet: not handed over"
    assert results["pod-0"].lags == {"0_0": 0, "1_1": 0, "1_0": 30}, "against the changelog's end read"
    assert results["pod-1"].lags == {"0_1": 0, "1_0": 0}, "an active its members run is caught up"
    topology = {sub.name: sub for sub in results["pod-0"].topology}
    assert (topology["0"].partitions, topology["0"].stateful, topology["0"].input_topics) == (
        2,
        False,
        ("orders",),
    )
    assert topology["1"].input_topics == ("app-by-customer-repartition",) and topology["1"].stateful
    assert streamsgroup.learned_topology(TOPOLOGY_VIEW, {"orders": 2}) == (), "a topic not there yet"


def test_an_end_offset_not_known_yet_makes_no_copy_caught_up() -> None:
    """Kafka Streams 4.4 reports an end offset it does not know yet as Long.MAX_VALUE, and often none at all:
    such a copy gets no lag (the planner counts it as not caught up), never lag 0 or an overflow."""
    copy = {
        **member("pod-5", "zone-c", {"1_1": 17, "1_2": 3}, {"1_1": 2**63 - 1}),
        "assignment": {"active": [], "standby": ["1_1", "1_2"], "warmup": []},
    }
    view = {**TOPOLOGY_VIEW, "members": [copy]}
    results = streamsgroup.pod_results(view, Publication(generation=1), {}, {"1_2": 5})
    assert results["pod-5"].lags == {"1_2": 2}


def test_a_target_assignment_other_than_the_plan_is_noticed() -> None:
    """The operator asks the coordinator again when its target is not the plan (the plugin answered before
    its plan reader had the plan): the target is compared, a warmup being a standby there."""
    view = {
        **TOPOLOGY_VIEW,
        "members": [
            {**m, "targetAssignment": m["assignment"]}
            for m in TOPOLOGY_VIEW["members"]  # what runs now
        ],
    }
    runs = Publication(
        generation=3,
        assignment={
            "pod-0": ClientAssignment(active=["0_0", "1_1"], warmup=["1_0"]),
            "pod-1": ClientAssignment(active=["0_1", "1_0"]),
        },
    )
    assert streamsgroup.targets(view, runs)
    one_less = ClientAssignment(active=["0_1"])
    moved = Publication(generation=4, assignment={**runs.assignment, "pod-1": one_less})
    assert not streamsgroup.targets(view, moved)
    absent = ClientAssignment(active=["1_0"])
    elsewhere = Publication(generation=4, assignment={**runs.assignment, "pod-9": absent})
    assert not streamsgroup.targets(view, elsewhere), "a pod the plan names is not in the group"
    assert streamsgroup.targets(view, Publication(generation=0)), "nothing planned yet"
