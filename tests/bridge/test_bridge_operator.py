"""The operator drives real Kafka Streams pods: a StreamsApp with `spec.runtime: KafkaStreams` in the sandbox,
whose kubelet stand-in runs the Java sample app as each pod's process, against a real broker.

What a user would check: after each scaling step the pods are the ones asked for, the operator's published
plan is what Kafka's own view of the consumer group shows, the actives are balanced over the pods, and every
order is counted exactly once in the output.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import KafkaException, Producer

from smoothscale.client import contract
from smoothscale.sandbox.addresses import random_block
from smoothscale.sandbox.harness import Sandbox
from smoothscale.sandbox.kafka.broker import KafkaCluster
from smoothscale.sandbox.kafka_streams import SampleApp, create_topics, read_committed

pytestmark = pytest.mark.slow

APP = "ops-shop"
PARTITIONS = 4
CUSTOMERS = 10
REPARTITION = f"{APP}-by-customer-repartition"


def streams_app(orders: str, totals: str, replicas: int) -> dict[str, Any]:
    """The sample app as a StreamsApp: subtopology 0 reads the orders, 1 the repartition topic."""
    env = [{"name": "ORDERS_TOPIC", "value": orders}, {"name": "TOTALS_TOPIC", "value": totals}]
    return {
        "apiVersion": contract.API_VERSION,
        "kind": contract.KIND,
        "metadata": {"name": APP, "namespace": "default"},
        "spec": {
            "replicas": replicas,
            "runtime": "KafkaStreams",
            "template": {"spec": {"containers": [{"name": "app", "image": "orders:1", "env": env}]}},
            "topology": {
                "subtopologies": [
                    {"name": "0", "partitions": PARTITIONS, "inputTopics": [orders]},
                    {"name": "1", "partitions": PARTITIONS, "inputTopics": [REPARTITION]},
                ]
            },
            "assignment": {"probingInterval": "10s"},
            "scaling": {"scaleDownTimeout": "3m"},
            "metrics": {"port": 8080, "path": "/metrics"},
        },
    }


@pytest.fixture
def topics(kafka_broker: KafkaCluster, tmp_path: Path) -> tuple[str, str]:
    suffix = tmp_path.name[-12:].replace("_", "-").strip("-")
    orders, totals = f"orders-{suffix}", f"totals-{suffix}"
    create_topics(kafka_broker.bootstrap_servers, {orders: PARTITIONS, totals: PARTITIONS})
    return orders, totals


@pytest.fixture
def sandbox(kafka_broker: KafkaCluster, tmp_path: Path) -> Iterator[Sandbox]:
    with Sandbox(
        tmp_path / "sandbox",
        kafka_bootstrap=kafka_broker.bootstrap_servers,
        first_address=random_block(),
    ) as running:
        yield running


def produce_orders(bootstrap: str, topic: str, first: int, count: int) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "log_level": 0})
    for index in range(first, first + count):
        value = f"customer-{index % CUSTOMERS}:{index % 7 + 1}"
        producer.produce(topic, key=f"order-{index}".encode(), value=value.encode())
    assert producer.flush(30) == 0


def expected_totals(count: int) -> dict[str, str]:
    totals: dict[str, list[int]] = {}
    for index in range(count):
        entry = totals.setdefault(f"customer-{index % CUSTOMERS}", [0, 0])
        entry[0] += 1
        entry[1] += index % 7 + 1
    return {customer: f"{orders},{amount}" for customer, (orders, amount) in totals.items()}


def settle(sandbox: Sandbox, kafka: SampleApp, replicas: int, timeout: float = 300) -> dict[str, set[str]]:
    """Wait until the app runs `replicas` pods, none leaving, and the operator's published actives are
    exactly Kafka's view of the group, balanced over the pods; that view."""
    deadline = time.monotonic() + timeout
    seen: object = None
    while time.monotonic() < deadline:
        listed = sandbox.pods(APP)
        pods = {p["metadata"]["name"] for p in listed if not p["metadata"].get("deletionTimestamp")}
        publication = sandbox.publication(APP)
        try:
            view = kafka.kafka_view()
        except KafkaException:  # the group's coordinator is still loading, or moving
            view = {}
        if publication is not None and len(pods) == replicas:
            planned = {pod: set(roles.active) for pod, roles in publication.assignment.items() if pod in pods}
            counts = [len(planned.get(pod, set())) for pod in pods]
            kafka_view = {pod: tasks for pod, tasks in view.items() if tasks}
            if (
                sum(counts) == 2 * PARTITIONS
                and max(counts) - min(counts) <= 1
                and {pod: tasks for pod, tasks in planned.items() if tasks} == kafka_view
                and not publication.revoking
            ):
                return kafka_view
            seen = (sorted(pods), planned, view)
        time.sleep(1)
    raise AssertionError(f"no agreed, balanced assignment over {replicas} pods within {timeout} s: {seen}")


def test_the_operator_scales_a_kafka_streams_app_out_and_in_counting_every_order_once(
    sandbox: Sandbox, kafka_broker: KafkaCluster, topics: tuple[str, str], tmp_path: Path
) -> None:
    orders, totals = topics
    bootstrap = kafka_broker.bootstrap_servers
    kafka = SampleApp(APP, "default", bootstrap, None, tmp_path / "reader")
    sandbox.apply(streams_app(orders, totals, replicas=3))
    produce_orders(bootstrap, orders, 0, 300)
    settle(sandbox, kafka, 3)

    sandbox.patch_app(APP, {"spec": {"replicas": 6}})
    produce_orders(bootstrap, orders, 300, 300)
    six = settle(sandbox, kafka, 6)
    assert len(six) == 6, f"every pod runs an active task: {six}"

    sandbox.patch_app(APP, {"spec": {"replicas": 3}})
    produce_orders(bootstrap, orders, 600, 300)
    settle(sandbox, kafka, 3)

    latest: dict[str, str] = {}
    deadline = time.monotonic() + 120
    while latest != expected_totals(900) and time.monotonic() < deadline:
        latest.update(dict(read_committed(bootstrap, totals, idle_seconds=3)))
    assert latest == expected_totals(900), "every order counted exactly once"
