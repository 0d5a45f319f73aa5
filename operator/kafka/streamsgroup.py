"""A streams group (KIP-1071) as Kafka describes it, turned into the planner's snapshot (pure).

Under `group.protocol=streams` the group coordinator already knows what the operator otherwise scrapes from
the pods: each member's pod (client tag `smoothscale.pod`), rack (`client.rack`), and the offsets of every
task it keeps state for together with the changelogs' end offsets (sent in heartbeats every
`streams.task.offset.interval.ms`). `Admin.describeStreamsGroups` returns them (read through the plugin
jar's `GroupView`, `smoothscale.sandbox.kafka_streams`); this module maps them onto Contract 1.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from smoothscale.assignor.models import Client, PlannerConfig, Snapshot, Task
from smoothscale.contract.publication import Publication


def pods(view: Mapping[str, Any]) -> dict[str, list[Mapping[str, Any]]]:
    """The group's members by pod (members without the pod tag are left out: the plugin will not follow a
    plan while they are in the group, and says so)."""
    by_pod: dict[str, list[Mapping[str, Any]]] = {}
    for member in view["members"]:
        if member.get("pod"):
            by_pod.setdefault(member["pod"], []).append(member)
    return by_pod


def task_lags(members: Sequence[Mapping[str, Any]], end_offsets: Mapping[str, int]) -> dict[str, int]:
    """A pod's lag per task it keeps state for: changelog end offset minus the offset it reported. A negative
    reported offset is Kafka Streams' mark of a running active task: caught up."""
    lags: dict[str, int] = {}
    for member in members:
        for task, offset in member["taskOffsets"].items():
            lag = 0 if offset < 0 else max(0, end_offsets.get(task, 0) - offset)
            lags[task] = min(lags.get(task, lag), lag)
    return lags


def end_offsets(view: Mapping[str, Any]) -> dict[str, int]:
    """Each task's changelog end offset: the largest any member reported."""
    ends: dict[str, int] = {}
    for member in view["members"]:
        for task, offset in member["taskEndOffsets"].items():
            ends[task] = max(ends.get(task, 0), offset)
    return ends


def snapshot(
    view: Mapping[str, Any],
    *,
    now: datetime,
    config: PlannerConfig,
    partitions: Mapping[str, int],
    input_racks: Mapping[str, list[list[str]]],
    published: Publication,
) -> Snapshot:
    """The planner's input for the group in `view`: its subtopologies (`partitions` by subtopology id,
    stateful when it has changelogs), every pod with its rack, lags and the `published` plan's roles."""
    ends = end_offsets(view)
    tasks = [
        Task(
            id=f"{sub['id']}_{partition}",
            subtopology=sub["id"],
            stateful=bool(sub["changelogTopics"]),
            changelog_offsets=ends.get(f"{sub['id']}_{partition}", 0),
            input_partition_racks=input_racks.get(f"{sub['id']}_{partition}", []),
        )
        for sub in view["subtopologies"]
        for partition in range(partitions[sub["id"]])
    ]
    stateful = {task.id for task in tasks if task.stateful}
    clients = []
    for pod, members in sorted(pods(view).items()):
        roles = published.assignment.get(pod)
        clients.append(
            Client(
                id=pod,
                rack=next((m["rack"] for m in members if m.get("rack")), None),
                capacity=len(members),
                lags={task: lag for task, lag in task_lags(members, ends).items() if task in stateful},
                active=list(roles.active) if roles else [],
                standby=list(roles.standby) if roles else [],
                warmup=list(roles.warmup) if roles else [],
            )
        )
    return Snapshot(now=now, config=config, tasks=tasks, clients=clients)
