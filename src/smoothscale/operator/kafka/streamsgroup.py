"""A streams group (KIP-1071) as Kafka describes it, turned into the planner's snapshot (pure).

Under `group.protocol=streams` the group coordinator already knows what the operator otherwise scrapes from
the pods: each member's pod (client tag `smoothscale.pod`), rack (`client.rack`), and the offsets of every
task it keeps state for together with the changelogs' end offsets (sent in heartbeats every
`streams.task.offset.interval.ms`). `Admin.describeStreamsGroups` returns them (read through the plugin
jar's `GroupView`, `smoothscale.sandbox.kafka_streams`, or as the plugin publishes it, `groupviews`); this
module maps them onto Contract 1 and onto what the operator otherwise scrapes from a pod (`pod_results`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any, Final

from smoothscale.assignor.models import Client, PlannerConfig, Snapshot, Task
from smoothscale.contract.publication import ClientAssignment, Publication
from smoothscale.control.observed import LearnedSubtopology, PodMetrics


def pods(view: Mapping[str, Any]) -> dict[str, list[Mapping[str, Any]]]:
    """The group's members by pod (members without the pod tag are left out: the plugin will not follow a
    plan while they are in the group, and says so)."""
    by_pod: dict[str, list[Mapping[str, Any]]] = {}
    for member in view["members"]:
        if member.get("pod"):
            by_pod.setdefault(member["pod"], []).append(member)
    return by_pod


UNKNOWN_END: Final = 1 << 62
"""Kafka Streams 4.4 reports a changelog end offset it does not know yet as Long.MAX_VALUE: none at all."""


def task_lags(members: Sequence[Mapping[str, Any]], end_offsets: Mapping[str, int]) -> dict[str, int]:
    """A pod's lag per task it keeps state for: changelog end offset minus the offset it reported. A task
    its members run as active is caught up, as is one reported with a negative offset (Kafka Streams' mark of
    a running active task); a task whose end offset is unknown gets no lag (the planner then counts it as not
    caught up: a copy is never taken for caught up on a guess)."""
    lags: dict[str, int] = {}
    for member in members:
        running = set((member.get("assignment") or {}).get("active") or ())
        for task, offset in member["taskOffsets"].items():
            end = end_offsets.get(task)
            if task in running or offset < 0:
                lag = 0
            elif end is None:
                continue
            else:
                lag = max(0, end - offset)
            lags[task] = min(lags.get(task, lag), lag)
        for task in running:
            lags[task] = 0
    return lags


def end_offsets(view: Mapping[str, Any]) -> dict[str, int]:
    """Each task's changelog end offset: the largest any member reported (unknown ones left out)."""
    ends: dict[str, int] = {}
    for member in view["members"]:
        for task, offset in member["taskEndOffsets"].items():
            if 0 <= offset < UNKNOWN_END:
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
    changelog_ends: Mapping[str, int] | None = None,
) -> Snapshot:
    """The planner's input for the group in `view`: its subtopologies (`partitions` by subtopology id,
    stateful when it has changelogs), every pod with its rack, lags and the `published` plan's roles. Each
    task's changelog size (a pod without its state is that far behind) is `changelog_ends` as read from
    Kafka, else the largest end offset a member reported: Kafka Streams 4.4 reports none for a task it runs
    as active (`UNKNOWN_END`), so without `changelog_ends` the tasks of a group whose members hold only
    actives have size 0 and an empty pod counts as caught up on all of them."""
    ends = {**end_offsets(view), **(changelog_ends or {})}
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


def learned_topology(
    view: Mapping[str, Any], partitions: Mapping[str, int]
) -> tuple[LearnedSubtopology, ...]:
    """The group's topology as the coordinator knows it: each subtopology with as many tasks as its input
    topics (source and repartition) have partitions (`partitions`, read from the cluster's metadata). Empty
    while a topic of it does not exist yet: no plan can name its tasks then."""
    learned = []
    for sub in view["subtopologies"]:
        topics = [*sub["sourceTopics"], *sub["repartitionSourceTopics"]]
        counts = [partitions.get(topic, 0) for topic in topics]
        if not counts or min(counts) == 0:
            return ()
        learned.append(
            LearnedSubtopology(
                name=str(sub["id"]),
                partitions=max(counts),
                stateful=bool(sub["changelogTopics"]),
                input_topics=tuple(sorted(topics)),
                changelog_topics=tuple(sorted(sub["changelogTopics"])),
            )
        )
    return tuple(learned)


def running(members: Sequence[Mapping[str, Any]]) -> ClientAssignment:
    """What a pod's members run in Kafka's view (a warmup the plugin gives is a standby there)."""
    roles = [member["assignment"] for member in members]
    return ClientAssignment(
        active=sorted({task for r in roles for task in r["active"]}),
        standby=sorted({task for r in roles for task in (*r["standby"], *r["warmup"])}),
    )


def runs_plan(members: Sequence[Mapping[str, Any]], planned: ClientAssignment | None) -> bool:
    """Whether a pod's members run exactly what the plan gives the pod (copies: standbys and warmups)."""
    runs = running(members)
    wanted = planned or ClientAssignment()
    copies = set(wanted.standby) | set(wanted.warmup)
    return set(runs.active) == set(wanted.active) and set(runs.standby) == copies


def pod_results(
    view: Mapping[str, Any],
    published: Publication,
    partitions: Mapping[str, int],
    changelog_ends: Mapping[str, int],
) -> dict[str, PodMetrics]:
    """What the operator scrapes from a pod under the classic protocol, read from Kafka's view instead: per
    pod in the group, its lags (task offsets against the changelogs' end offsets: `changelog_ends` as the
    operator read them from Kafka, else what the members reported), the topology, and as the generation it
    has applied the published one once its members run exactly that pod's part of it (else the one before:
    Kafka has not handed it over yet)."""
    ends = {**end_offsets(view), **changelog_ends}
    topology = learned_topology(view, partitions)
    applied = published.generation
    return {
        pod: PodMetrics(
            lags=task_lags(members, ends),
            end_offsets={task: ends[task] for task in task_lags(members, ends) if task in ends},
            generation=applied if runs_plan(members, published.assignment.get(pod)) else max(applied - 1, 0),
            topology=topology,
        )
        for pod, members in pods(view).items()
    }


def targets(view: Mapping[str, Any] | None, plan: Publication) -> bool:
    """Whether the coordinator's target assignment of the group is `plan` (nothing planned yet: nothing to
    compare): every pod's members are to run exactly its part (a warmup is a standby there)."""
    if view is None or plan.generation == 0:
        return True
    targeted = {
        pod: [{"assignment": member["targetAssignment"]} for member in members]
        for pod, members in pods(view).items()
    }
    given = {pod for pod, roles in plan.assignment.items() if roles.active or roles.standby or roles.warmup}
    return given <= set(targeted) and all(
        runs_plan(members, plan.assignment.get(pod)) for pod, members in targeted.items()
    )
