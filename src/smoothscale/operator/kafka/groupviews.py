"""Reads Kafka's view of a streams group (KIP-1071) from the topic the broker plugin publishes it to.

The operator is Python, its image has no JVM, and no Python client has `Admin.describeStreamsGroups`
(confluent-kafka 2.16 lacks it). smoothscale's broker plugin, on the broker that assigns the group, describes
it every second and writes the view to the compacted topic `smoothscale-groups` (key: the application id),
when it changes and at least every 10 s (`GroupViewPublisher`, docs/streams-protocol.md). This module reads
the latest view of one app: a consumer without a group reads the topic's one partition from the beginning
to its end (compaction keeps it to about a record per app). Blocking: call it in a thread.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, KafkaException, TopicPartition

from smoothscale.contract.streams_protocol import GROUPS_TOPIC


@dataclass(frozen=True)
class StreamsGroupRead:
    """The latest view of the app's group the plugin published, and when it published it."""

    published_at: datetime
    view: Mapping[str, Any] | None
    """`GroupView`'s JSON of `describeStreamsGroups`; None: the group does not exist."""


def read_group_view(config: Mapping[str, Any], app_id: str, *, timeout: float) -> StreamsGroupRead | None:
    """The latest view of group `app_id`; None when the plugin has published none (yet)."""
    consumer = Consumer(
        {
            **config,
            "group.id": "smoothscale-operator-group-views",  # never joined, never committed: assign() only
            "enable.auto.commit": False,
            "enable.partition.eof": True,
            "log_level": 0,
        }
    )
    try:
        partition = TopicPartition(GROUPS_TOPIC, 0)
        try:
            low, high = consumer.get_watermark_offsets(partition, timeout=timeout)
        except KafkaException as error:
            if "UNKNOWN_TOPIC" in str(error) or "UNKNOWN_PARTITION" in str(error):
                return None
            raise
        if high <= low:
            return None
        consumer.assign([TopicPartition(GROUPS_TOPIC, 0, OFFSET_BEGINNING)])
        latest: bytes | None = None
        key = app_id.encode()
        position = low
        while position < high:
            message = consumer.poll(timeout)
            if message is None:
                raise KafkaException(f"{GROUPS_TOPIC}: nothing within {timeout} s at offset {position}")
            failed = message.error()
            if failed is not None:
                if failed.code() == KafkaError._PARTITION_EOF:
                    break
                raise KafkaException(failed)
            position = (message.offset() or 0) + 1
            if message.key() == key:
                latest = message.value()
    finally:
        consumer.close()
    if latest is None:
        return None
    record = json.loads(latest)
    return StreamsGroupRead(
        published_at=datetime.fromtimestamp(record["publishedMs"] / 1000, tz=UTC), view=record["view"]
    )
