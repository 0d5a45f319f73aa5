"""Where a Kafka Streams app's records wait, read from the brokers: what a test prints when an app's output
falls short, so that one failed run tells a task that stopped reading its input from a transaction left open
from a record lost (the three look the same in the output, and a run on a loaded machine is not repeated at
will)."""

from __future__ import annotations

from collections.abc import Iterable

from confluent_kafka import ConsumerGroupTopicPartitions, IsolationLevel, TopicPartition
from confluent_kafka.admin import AdminClient, OffsetSpec  # type: ignore[attr-defined]

from .topics import QUIET


def waiting_records(bootstrap: str, group: str, topics: Iterable[str], timeout: float = 30) -> list[str]:
    """Per partition of `topics` where they differ: its end offset, its last stable offset (a
    `read_committed` reader stops there: a transaction still open holds it back) and `group`'s committed
    offset (a task that did not read its input is behind the end). Every partition even: no line."""
    admin = AdminClient({"bootstrap.servers": bootstrap, **QUIET})
    metadata = admin.list_topics(timeout=timeout).topics
    partitions = [TopicPartition(t, p) for t in topics if t in metadata for p in metadata[t].partitions]
    ends = _offsets(admin, partitions, IsolationLevel.READ_UNCOMMITTED, timeout)
    stable = _offsets(admin, partitions, IsolationLevel.READ_COMMITTED, timeout)
    listed = admin.list_consumer_group_offsets([ConsumerGroupTopicPartitions(group, partitions)])
    found = listed[group].result(timeout=timeout).topic_partitions
    committed = {(p.topic, p.partition): p.offset for p in found if p.offset >= 0}
    lines = []
    for key, end in sorted(ends.items()):
        if not end == stable[key] == committed.get(key, end):
            lines.append(
                f"{key[0]}[{key[1]}]: end {end}, stable {stable[key]}, committed {committed.get(key)}"
            )
    return lines


def _offsets(
    admin: AdminClient, partitions: list[TopicPartition], isolation: IsolationLevel, timeout: float
) -> dict[tuple[str, int], int]:
    latest: OffsetSpec = OffsetSpec.latest()  # type: ignore[no-untyped-call]
    wanted = dict.fromkeys(partitions, latest)
    found = admin.list_offsets(wanted, isolation_level=isolation, request_timeout=timeout)
    return {(p.topic, p.partition): future.result(timeout=timeout + 1).offset for p, future in found.items()}
