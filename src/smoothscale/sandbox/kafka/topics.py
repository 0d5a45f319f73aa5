"""Topics and records on a sandbox cluster, for tests and the demo: create a topic (optionally with its
replicas placed by hand, to put partitions in chosen racks) and fill partitions with records."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined]

QUIET: dict[str, str | int | float] = {"log_level": 0}
"""librdkafka logs to stderr while a broker is away: sandbox clients keep quiet."""


def create_topic(
    bootstrap: str,
    name: str,
    partitions: int,
    *,
    replication: int = 1,
    replicas: Sequence[Sequence[int]] | None = None,
) -> None:
    """Create `name`; `replicas[p]` lists the node ids holding partition p (then `replication` is unused)."""
    if replicas is not None:
        # confluent-kafka wants the partition count with a replica assignment, and no replication factor.
        topic = NewTopic(name, len(replicas), replica_assignment=[list(nodes) for nodes in replicas])
    else:
        topic = NewTopic(name, partitions, replication)
    admin = AdminClient({"bootstrap.servers": bootstrap, **QUIET})  # referenced until the future is done
    admin.create_topics([topic], operation_timeout=20)[name].result(timeout=30)


def produce(bootstrap: str, topic: str, counts: Mapping[int, int]) -> None:
    """`counts[p]` records into partition p, all acknowledged by every in-sync replica."""
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", **QUIET})
    for partition, count in counts.items():
        for index in range(count):
            producer.produce(
                topic, key=f"key-{index}".encode(), value=f"record-{index}".encode(), partition=partition
            )
    unsent = producer.flush(30)
    if unsent:
        raise RuntimeError(f"{unsent} records to {topic} were not acknowledged within 30 s")
