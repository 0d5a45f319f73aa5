"""`smoothscale demo --kafka`: real brokers, one per zone, hold the demo app's input topics, and the operator
places every active task in the zone of its input partitions' replicas."""

from __future__ import annotations

import io
import time
from pathlib import Path
from typing import Any

from sandbox_e2e_kit import Run

from smoothscale.sandbox.demo import APP, demo_app
from smoothscale.sandbox.demo_kafka import demo_kafka, kafka_summary, sample_topics
from smoothscale.sandbox.harness import Sandbox
from smoothscale.sandbox.kubelet import DEFAULT_ZONES
from smoothscale.sandbox.scheduling import node_name


def kafka_read(sandbox: Sandbox) -> dict[str, Any]:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        status = sandbox.app(APP).get("status") or {}
        if (status.get("kafka") or {}).get("rackTopics"):
            return status
        time.sleep(0.5)
    raise AssertionError("the operator never reported what it read from Kafka")


def test_the_demo_app_reads_its_racks_from_real_brokers(sandbox: Sandbox, tmp_path: Path) -> None:
    out = io.StringIO()
    with demo_kafka(tmp_path / "demo", out, sample_topics()) as spec_kafka:
        sandbox.apply(demo_app(kafka=spec_kafka))
        Run(sandbox).settled("create")
        status = kafka_read(sandbox)
        zone_by_node = {node_name(zone): zone for zone in DEFAULT_ZONES}
        zone_of = {
            pod["metadata"]["name"]: zone_by_node[pod["spec"]["nodeName"]] for pod in sandbox.pods(APP)
        }
        publication = sandbox.publication(APP)
    assert status["kafka"]["rackTopics"] == ["orders", "orders-by-customer"]
    assert status["assignment"]["crossRackCost"] == 0
    assert publication is not None
    # Partition p of both input topics is on the broker of zone p mod 3 (demo_kafka).
    placed = {task: zone_of[pod] for task, pod in publication.active_owner().items()}
    assert placed == {task: DEFAULT_ZONES[int(task.split("_")[1]) % 3] for task in placed}
    assert len(placed) == 12
    assert "racks of orders, orders-by-customer read from 3 brokers; KafkaUnavailable=False" in kafka_summary(
        status
    )
    assert "Kafka 127.0.0.1:" in out.getvalue()
    assert (tmp_path / "demo" / "kafka-logs" / "broker-3" / "server.log").stat().st_size > 0
