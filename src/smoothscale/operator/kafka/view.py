"""From one read of the Kafka cluster to the planner's inputs and the app's status: pure functions.

- Racks (KIP-925): a task `<subtopology>_<p>` reads partition p of each input topic; the racks of that
  partition are the `broker.rack` of the brokers holding a replica of it. Brokers without a rack add
  nothing, and a topic none of whose replicas has a rack is left out (unknown, as the planner expects).
- Changelogs: Kafka Streams names a store's changelog `<application.id>-<store>-changelog`, with as many
  partitions as the store's subtopology has tasks, but not always: under `topology.optimization=all` a
  KTable read from a topic restores from that source topic, which is its changelog. The changelog topics the
  app reports (the bridge's topology report, the streams group's description: `expected_changelogs`) belong
  to their subtopology whatever their names. Any other topic named as a changelog belongs to the
  subtopology listing its store in `stores`, else to the only stateful subtopology with as many partitions;
  otherwise it is reported as unmapped rather than guessed. A task's changelog size is the sum of its
  partitions' end offsets.
- A changelog that could not be read (deleted, not readable by the operator's user) leaves its tasks' lags
  unknown (`unknown_lags`, see `smoothscale.control.unknownlags`), and is named with why and what to do in
  `status.kafka.changelogs`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from smoothscale.control.observed import LearnedSubtopology
from smoothscale.resource import StreamsAppSpec
from smoothscale.resource.kafkastatus import (
    ChangelogStatus,
    ConsumerGroupMember,
    ConsumerGroupStatus,
    KafkaStatus,
)

from .groupviews import StreamsGroupRead

CHANGELOG_SUFFIX = "-changelog"
MISSING = "does not exist"
"""`ClusterView.unreadable`'s reason for a changelog topic the cluster does not have."""


@dataclass(frozen=True)
class GroupMemberView:
    member_id: str
    client_id: str
    host: str
    partitions: int


@dataclass(frozen=True)
class GroupView:
    """The consumer group as DescribeGroups returns it."""

    group_id: str
    state: str
    protocol: str
    coordinator: int | None
    members: tuple[GroupMemberView, ...] = ()


@dataclass(frozen=True)
class ClusterView:
    """What one read of the cluster found."""

    read_at: datetime
    brokers: Mapping[int, str | None]
    """Node id -> broker.rack (None: no rack)."""
    replicas: Mapping[str, Sequence[Sequence[int]]]
    """Input topic -> per partition (index = partition number), the node ids holding a replica."""
    end_offsets: Mapping[str, Sequence[int]]
    """Changelog topic -> per partition, the end offset."""
    group: GroupView | None = None
    """None: the group does not exist (yet)."""
    streams_assignors: Mapping[int, str | None] | None = None
    """Node id -> its `group.streams.assignors` (None: unknown to that broker); None: not read (the app
    runs the classic protocol)."""
    streams_group: StreamsGroupRead | None = None
    """The streams group as the broker plugin last published it (apps on the streams protocol)."""
    partitions: Mapping[str, int] = field(default_factory=dict)
    """Topic -> its number of partitions (every topic of the cluster)."""
    unreadable: Mapping[str, str] = field(default_factory=dict)
    """Changelog topic -> why its end offsets could not be read (it does not exist, Kafka's error)."""


@dataclass(frozen=True)
class KafkaFacts:
    """What the operator uses from a `ClusterView`."""

    racks: dict[str, list[list[str]]] = field(default_factory=dict)
    changelog_offsets: dict[str, int] = field(default_factory=dict)
    status: KafkaStatus | None = None
    streams_assignors: Mapping[int, str | None] | None = None
    """As `ClusterView.streams_assignors`."""
    streams_group: StreamsGroupRead | None = None
    """As `ClusterView.streams_group`."""
    partitions: Mapping[str, int] = field(default_factory=dict)
    """As `ClusterView.partitions`."""
    unknown_lags: frozenset[str] = frozenset()
    """Tasks of a changelog that could not be read: their copies' lags are unknown."""
    unreadable_changelogs: Mapping[str, str] = field(default_factory=dict)
    """Changelog topic -> why it could not be read and what to do (for the Event and the log)."""


def changelog_store(application_id: str, topic: str) -> str | None:
    """The store whose changelog `topic` is, or None when it is not one of this app's changelogs."""
    prefix = f"{application_id}-"
    if topic.startswith(prefix) and topic.endswith(CHANGELOG_SUFFIX):
        store = topic[len(prefix) : -len(CHANGELOG_SUFFIX)]
        return store or None
    return None


def topic_racks(view: ClusterView) -> dict[str, list[list[str]]]:
    """Input topic -> per partition, the sorted racks of its replicas (topics without any rack left out)."""
    racks: dict[str, list[list[str]]] = {}
    for topic, partitions in view.replicas.items():
        per_partition = [
            sorted({rack for node in replicas if (rack := view.brokers.get(node)) is not None})
            for replicas in partitions
        ]
        if any(per_partition):
            racks[topic] = per_partition
    return racks


def expected_changelogs(
    spec: StreamsAppSpec, application_id: str, learned: Sequence[LearnedSubtopology] | None = None
) -> dict[str, str]:
    """The changelog topics the app has, whether they exist or not -> their subtopology: those the app
    reports for a subtopology of `spec` (source topics among them under `topology.optimization`), and
    `<application.id>-<store>-changelog` for each store `spec` lists."""
    names = {sub.name for sub in spec.topology.subtopologies}
    expected = {
        f"{application_id}-{store}{CHANGELOG_SUFFIX}": sub.name
        for sub in spec.topology.subtopologies
        for store in sub.stores
    }
    expected.update(
        {topic: sub.name for sub in learned or () if sub.name in names for topic in sub.changelog_topics}
    )
    return expected


def changelog_owners(
    spec: StreamsAppSpec,
    application_id: str,
    partitions: Mapping[str, int],
    expected: Mapping[str, str] | None = None,
) -> tuple[dict[str, str], list[str]]:
    """Changelog topic -> subtopology name, and the changelog topics no subtopology could be matched to.
    `expected` (`expected_changelogs`) names the owners of the app's own changelog topics."""
    by_store = {store: sub.name for sub in spec.topology.subtopologies for store in sub.stores}
    owners: dict[str, str] = {}
    unmapped: list[str] = []
    for topic in sorted(partitions):
        if expected and topic in expected:
            owners[topic] = expected[topic]
            continue
        store = changelog_store(application_id, topic)
        if store is None:
            continue
        if store in by_store:
            owners[topic] = by_store[store]
            continue
        candidates = [
            sub.name
            for sub in spec.topology.subtopologies
            if sub.stateful and not sub.stores and sub.partitions == partitions[topic]
        ]
        if len(candidates) == 1:
            owners[topic] = candidates[0]
        else:
            unmapped.append(topic)
    return owners, unmapped


def changelog_offsets(owners: Mapping[str, str], end_offsets: Mapping[str, Sequence[int]]) -> dict[str, int]:
    """Task id -> the sum of its changelog partitions' end offsets."""
    sizes: dict[str, int] = {}
    for topic, subtopology in owners.items():
        for partition, offset in enumerate(end_offsets.get(topic, ())):
            task = f"{subtopology}_{partition}"
            sizes[task] = sizes.get(task, 0) + offset
    return sizes


def facts(
    spec: StreamsAppSpec, application_id: str, view: ClusterView, expected: Mapping[str, str] | None = None
) -> KafkaFacts:
    """The planner's inputs and the status section from one read (`expected`: `expected_changelogs`)."""
    racks = topic_racks(view)
    partitions = {topic: len(offsets) for topic, offsets in view.end_offsets.items()}
    partitions.update(dict.fromkeys(view.unreadable, 0))
    owners, unmapped = changelog_owners(spec, application_id, partitions, expected)
    tasks = {sub.name: sub.partitions for sub in spec.topology.subtopologies}
    unreadable = {
        topic: unreadable_message(topic, owners[topic], why)
        for topic, why in view.unreadable.items()
        if topic in owners
    }
    unknown = frozenset(f"{owners[topic]}_{p}" for topic in unreadable for p in range(tasks[owners[topic]]))
    readable = {topic: owner for topic, owner in owners.items() if topic not in unreadable}
    status = KafkaStatus(
        last_read_time=view.read_at,
        brokers=len(view.brokers),
        rack_topics=sorted(racks),
        changelogs=[
            ChangelogStatus(
                topic=topic,
                subtopology=owner,
                end_offsets=sum(view.end_offsets.get(topic, ())),
                unreadable=unreadable.get(topic),
            )
            for topic, owner in sorted(owners.items())
        ],
        unmapped_changelog_topics=unmapped,
        group=_streams_group_status(application_id, view.streams_group.view)
        if view.streams_group is not None and view.streams_group.view is not None
        else _group_status(view.group),
    )
    sizes = changelog_offsets(readable, view.end_offsets)
    return KafkaFacts(
        racks=racks,
        changelog_offsets={task: size for task, size in sizes.items() if task not in unknown},
        status=status,
        streams_assignors=view.streams_assignors,
        streams_group=view.streams_group,
        partitions=view.partitions,
        unknown_lags=unknown,
        unreadable_changelogs=unreadable,
    )


def unreadable_message(topic: str, subtopology: str, why: str) -> str:
    """Why a changelog could not be read, what it means for its tasks and what to do."""
    fix = (
        "Kafka Streams creates a missing internal topic at a rebalance of the app (empty: what it held is "
        "lost), or create it with the subtopology's number of partitions"
        if why == MISSING
        else "grant the operator's Kafka user Describe on the topic, or check its partitions' leaders"
    )
    return (
        f"changelog topic {topic} (subtopology {subtopology}) {why}: its tasks' copies' lags are unknown, "
        f"so none of them moves to another pod until it can be read; {fix}"
    )


def _streams_group_status(group_id: str, view: Mapping[str, Any]) -> ConsumerGroupStatus:
    """A streams group (KIP-1071) as the broker plugin published it: its members' pods and tasks."""
    return ConsumerGroupStatus(
        group_id=group_id,
        state=str(view.get("state") or "Unknown").capitalize().replace("_", ""),
        protocol=f"streams/{view.get('assignor') or ''}",
        members=[
            ConsumerGroupMember(
                member_id=member["memberId"],
                client_id=member.get("clientId") or "",
                pod=member.get("pod"),
                active_tasks=sorted(member["assignment"]["active"]),
                standby_tasks=sorted({*member["assignment"]["standby"], *member["assignment"]["warmup"]}),
            )
            for member in sorted(view["members"], key=lambda m: (m.get("pod") or "", m["memberId"]))
        ],
    )


def _group_status(group: GroupView | None) -> ConsumerGroupStatus | None:
    if group is None:
        return None
    return ConsumerGroupStatus(
        group_id=group.group_id,
        state=group.state,
        protocol=group.protocol,
        coordinator=group.coordinator,
        members=[
            ConsumerGroupMember(
                member_id=m.member_id, client_id=m.client_id, host=m.host, partitions=m.partitions
            )
            for m in sorted(group.members, key=lambda m: m.client_id)
        ],
    )
