"""Topics and records on a sandbox cluster, for tests and the demo: create a topic (optionally with its
replicas placed by hand, to put partitions in chosen racks) and fill partitions with records."""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence

from confluent_kafka import KafkaError, KafkaException, Producer
from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined]

QUIET: dict[str, str | int | float] = {"log_level": 0}
"""librdkafka logs to stderr while a broker is away: sandbox clients keep quiet."""

ATTEMPTS = 5
RETRY_SECONDS = 1.0
PASSING = frozenset(
    {
        KafkaError._DESTROY_BROKER,
        KafkaError._TRANSPORT,
        KafkaError._TIMED_OUT,
        KafkaError._ALL_BROKERS_DOWN,
        KafkaError.REQUEST_TIMED_OUT,
        KafkaError.NOT_CONTROLLER,
    }
)
"""Errors of a cluster that has just started, which another attempt gets past: librdkafka drops its
connection to a bootstrap address, with a request in flight on it, once it has learnt the brokers
(`_DESTROY_BROKER`: a demo's first topic failed so in CI), and a controller may still be settling."""


def create_topic(
    bootstrap: str,
    name: str,
    partitions: int,
    *,
    replication: int = 1,
    replicas: Sequence[Sequence[int]] | None = None,
    config: Mapping[str, str] | None = None,
) -> None:
    """Create `name` with the topic `config` given; `replicas[p]` lists the node ids holding partition p (then
    `replication` is unused)."""
    settings = dict(config or {})
    if replicas is not None:
        # confluent-kafka wants the partition count with a replica assignment, and no replication factor.
        topic = NewTopic(
            name, len(replicas), replica_assignment=[list(nodes) for nodes in replicas], config=settings
        )
    else:
        topic = NewTopic(name, partitions, replication, config=settings)
    create_topics(bootstrap, [topic])


def create_topics(bootstrap: str, topics: Sequence[NewTopic]) -> None:
    """Create `topics` (none may exist yet), trying again after the errors of `PASSING`: a topic that an
    earlier attempt created (its answer lost with the connection) is then found to exist, and counts as
    created."""
    pending = {topic.topic: topic for topic in topics}
    for attempt in range(ATTEMPTS):
        admin = AdminClient({"bootstrap.servers": bootstrap, **QUIET})  # kept until the futures are done
        futures = admin.create_topics(list(pending.values()), operation_timeout=20)
        for name, future in futures.items():
            try:
                future.result(timeout=30)
            except KafkaException as failure:
                code = failure.args[0].code()
                created_before = attempt > 0 and code == KafkaError.TOPIC_ALREADY_EXISTS
                if not created_before:
                    if code not in PASSING or attempt == ATTEMPTS - 1:
                        raise
                    continue  # the next attempt asks again
            del pending[name]
        if not pending:
            return
        time.sleep(RETRY_SECONDS)


def produce(bootstrap: str, topic: str, counts: Mapping[int, int]) -> None:
    """`counts[p]` records into partition p, all acknowledged by every in-sync replica. Any number: a full
    send queue (librdkafka holds 100,000 records) waits for the brokers' acknowledgments."""
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", **QUIET})
    for partition, count in counts.items():
        for index in range(count):
            key, value = f"key-{index}".encode(), f"record-{index}".encode()
            while True:
                try:
                    producer.produce(topic, key=key, value=value, partition=partition)
                    break
                except BufferError:
                    producer.poll(0.5)
    unsent = producer.flush(60)
    if unsent:
        raise RuntimeError(f"{unsent} records to {topic} were not acknowledged within 60 s")
