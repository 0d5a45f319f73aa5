"""`smoothscale demo --kafka`: three real Kafka brokers, one per zone, holding the demo app's input topics.

The workers stay simulated; what changes is the operator, which reads the input partitions' racks from the
brokers' `broker.rack` (partition p of each input topic lives on the broker of zone p mod 3) instead of
having none, and reports what it read in `status.kafka`.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TextIO

from .demo import PARTITIONS, demo_app
from .kafka.broker import KafkaCluster
from .kafka.topics import create_topic


@contextmanager
def demo_kafka(output_dir: Path, out: TextIO) -> Iterator[dict[str, Any]]:
    """Start the brokers and the input topics; yields the app's `spec.kafka`; stops the brokers after."""
    out.write("starting 3 Kafka brokers (zone-a, zone-b, zone-c)...\n")
    out.flush()
    with KafkaCluster(output_dir / "kafka", output_dir / "kafka-logs", brokers=3) as cluster:
        bootstrap = cluster.bootstrap_servers
        subtopologies = demo_app()["spec"]["topology"]["subtopologies"]
        for topic in sorted({topic for sub in subtopologies for topic in sub["inputTopics"]}):
            create_topic(bootstrap, topic, PARTITIONS, replicas=[[p % 3 + 1] for p in range(PARTITIONS)])
        out.write(f"Kafka {bootstrap}, broker logs in {cluster.log_dir}\n")
        yield {"bootstrapServers": bootstrap, "refreshInterval": "5s", "timeout": "3s"}


def kafka_summary(status: Mapping[str, Any]) -> str:
    """One line on what the operator read from Kafka."""
    kafka = status.get("kafka") or {}
    unavailable: Mapping[str, Any] = next(
        (c for c in status.get("conditions", []) if c.get("type") == "KafkaUnavailable"), {}
    )
    topics = ", ".join(kafka.get("rackTopics", [])) or "no topic"
    return (
        f"Kafka: racks of {topics} read from {kafka.get('brokers', 0)} brokers; "
        f"KafkaUnavailable={unavailable.get('status', 'absent')}; "
        f"cross-zone cost of the actives {(status.get('assignment') or {}).get('crossRackCost')}"
    )
