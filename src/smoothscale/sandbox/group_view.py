"""Kafka's own view of a Kafka Streams app's group: which pod's consumers own which tasks' input partitions.

A task is `<subtopology>_<partition>`; the subtopology of an input partition comes from the app's topology
(`status.topology` as the bridge reported it, else the `spec.topology` the user wrote), so that the view can
be read for any app, not only the sample's. A member's pod is the start of its client id: Kafka Streams
names a stream thread's consumer `<client.id>-StreamThread-<n>-consumer`, and the bridge's apps set
`client.id` to the pod's name.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from confluent_kafka import KafkaException
from confluent_kafka.admin import AdminClient

from .kafka.topics import QUIET


def group_actives(
    bootstrap: str, group: str, subtopology_of: Callable[[str], str | None], timeout: float = 30
) -> dict[str, set[str]]:
    """Per pod, the active tasks its consumers own in `group` (a pod with none: an empty set); a partition
    of a topic `subtopology_of` does not know counts as no task."""
    client = AdminClient({"bootstrap.servers": bootstrap, **QUIET})
    described = client.describe_consumer_groups([group])[group].result(timeout=timeout)
    view: dict[str, set[str]] = {}
    for member in described.members:
        tasks = view.setdefault(member.client_id.split("-StreamThread-")[0], set())
        for partition in member.assignment.topic_partitions:
            subtopology = subtopology_of(partition.topic)
            if subtopology is not None:
                tasks.add(f"{subtopology}_{partition.partition}")
    return view


def topic_subtopologies(app: Mapping[str, Any]) -> dict[str, str]:
    """Each input topic's subtopology, from the StreamsApp `app` (its reported topology first)."""
    return {topic: name for name, _, topics in _subtopologies(app) for topic in topics}


def app_tasks(app: Mapping[str, Any]) -> list[str]:
    """Every task of the StreamsApp `app`, from its reported topology first, else its spec's."""
    return [f"{name}_{p}" for name, partitions, _ in _subtopologies(app) for p in range(partitions)]


def _subtopologies(app: Mapping[str, Any]) -> list[tuple[str, int, list[str]]]:
    reported = (app.get("status") or {}).get("topology") or []
    written = ((app.get("spec") or {}).get("topology") or {}).get("subtopologies") or []
    return [
        (str(sub["name"]), int(sub.get("partitions") or 0), [str(t) for t in sub.get("inputTopics") or []])
        for sub in (reported or written)
    ]


class GroupView:
    """Kafka's view of a StreamsApp's group (its application id is the app's name), read on each call with
    the topology the app shows then; None while the group cannot be described (its coordinator loading or
    moving, the group not formed yet)."""

    def __init__(self, bootstrap: str) -> None:
        self._bootstrap = bootstrap

    def __call__(self, app: Mapping[str, Any]) -> dict[str, set[str]] | None:
        topics = topic_subtopologies(app)
        try:
            return group_actives(self._bootstrap, str(app["metadata"]["name"]), topics.get, timeout=10)
        except (KafkaException, TimeoutError):
            return None
