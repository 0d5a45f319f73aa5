"""The operator drives real Kafka Streams pods: a StreamsApp with `spec.runtime: KafkaStreams` in the sandbox,
whose kubelet stand-in runs the Java sample app as each pod's process, against a real broker.

What a user would check, after a scale-out 3 -> 6, a scale-in 6 -> 3, a crashed instance restarted with its
volume, one restarted without it, and a swap of every pod: the pods are the ones asked for, the operator's
published plan is what Kafka's own view of the consumer group shows, the actives are balanced over the pods
and the zones, every order is counted exactly once in the output, and no task ever moved onto a pod that
did not hold a copy of it, nor onto a warmup still restoring its changelogs (every published generation, as
a watch on the ConfigMap saw it, against the warmups' lags in the operator's journal).
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import kubernetes
import pytest
from confluent_kafka import KafkaException

from smoothscale.client import from_configmap
from smoothscale.contract import names as contract
from smoothscale.contract.publication import Publication
from smoothscale.operator.control.names import RESTARTED_AT_ANNOTATION
from smoothscale.sandbox.addresses import random_block
from smoothscale.sandbox.background import running
from smoothscale.sandbox.harness import Sandbox
from smoothscale.sandbox.invariants import WarmupLag, cold_moves, imbalance
from smoothscale.sandbox.kafka.broker import KafkaCluster
from smoothscale.sandbox.kafka_streams import (
    SampleApp,
    create_sample_topics,
    expected_totals,
    latest_totals,
    produce_orders,
)

pytestmark = pytest.mark.slow

APP = "ops-shop"
PARTITIONS = 4
REPARTITION = f"{APP}-by-customer-repartition"
ACCEPTABLE_LAG = 5
"""Below what 300 orders write to any changelog partition, so that a pod that has not restored a task's
state (a new one above all) is not caught up on it, and above the 1 that exactly-once leaves a restored copy
behind (the end offset counts the last transaction's commit marker)."""


def streams_app(orders: str, totals: str, replicas: int) -> dict[str, Any]:
    """The sample app as a StreamsApp: subtopology 0 reads the orders, 1 the repartition topic."""
    env = [
        {"name": "ORDERS_TOPIC", "value": orders},
        {"name": "TOTALS_TOPIC", "value": totals},
        # A killed instance's member leaves the group after 10 s, not Kafka Streams' 45 s.
        {"name": "STREAMS_SESSION_TIMEOUT_MS", "value": "10000"},
    ]
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
            "assignment": {"probingInterval": "10s", "acceptableRecoveryLag": ACCEPTABLE_LAG},
            "scaling": {"scaleDownTimeout": "3m"},
            "metrics": {"port": 8080, "path": "/metrics"},
        },
    }


@pytest.fixture
def topics(kafka_broker: KafkaCluster, tmp_path: Path) -> tuple[str, str]:
    suffix = tmp_path.name[-12:].replace("_", "-").strip("-")
    return create_sample_topics(kafka_broker.bootstrap_servers, suffix, PARTITIONS)


@pytest.fixture
def sandbox(kafka_broker: KafkaCluster, tmp_path: Path) -> Iterator[Sandbox]:
    with Sandbox(
        tmp_path / "sandbox",
        kafka_bootstrap=kafka_broker.bootstrap_servers,
        first_address=random_block(),
    ) as running:
        yield running


class Publications:
    """Every generation the operator publishes for the app, from a watch on its ConfigMap (polling could miss
    a generation that lived less than a poll), for as long as `watch` runs (in `background.running`)."""

    def __init__(self, kubeconfig: Path) -> None:
        self.seen: dict[int, Publication] = {}
        self._kubeconfig = kubeconfig

    def watch(self, stop: threading.Event) -> None:
        name = contract.assignment_configmap(APP)
        with kubernetes.config.new_client_from_config(config_file=str(self._kubeconfig)) as client:
            core = kubernetes.client.CoreV1Api(client)
            version = ""
            while not stop.is_set():
                stream = kubernetes.watch.Watch().stream(
                    core.list_namespaced_config_map, "default", resource_version=version, timeout_seconds=2
                )
                for event in stream:
                    body = event["raw_object"]
                    version = body["metadata"]["resourceVersion"]
                    if body["metadata"]["name"] == name and event["type"] != "DELETED":
                        publication = from_configmap(body)
                        self.seen[publication.generation] = publication


def warmup_lags(journal: Path) -> list[WarmupLag]:
    """The warmups' lags as the operator scraped them, in the order of its journal."""
    lags = []
    for line in journal.read_text().splitlines():
        entry = json.loads(line)
        if entry["kind"] == "scrape" and entry["app"] == APP:
            for warmup in entry["warmupLags"]:
                lags.append(WarmupLag(entry["generation"], warmup["task"], warmup["pod"], warmup["lag"]))
    return lags


def ready(pod: dict[str, Any]) -> bool:
    """Ready: its process follows the published assignment (it reports the generation it runs)."""
    conditions = (pod.get("status") or {}).get("conditions") or []
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)


def settle(sandbox: Sandbox, kafka: SampleApp, replicas: int, timeout: float = 300) -> dict[str, set[str]]:
    """Wait until the app runs `replicas` pods, all ready and none being deleted, and the operator's
    published actives are exactly Kafka's view of the group, balanced over the pods; that view."""
    deadline = time.monotonic() + timeout
    seen: object = None
    while time.monotonic() < deadline:
        listed = [p for p in sandbox.pods(APP) if not p["metadata"].get("deletionTimestamp")]
        pods = {p["metadata"]["name"] for p in listed if ready(p)}
        publication = sandbox.publication(APP)
        try:
            view = kafka.kafka_view()
        except KafkaException:  # the group's coordinator is still loading, or moving
            view = {}
        if publication is not None and len(pods) == len(listed) == replicas:
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


def crash(sandbox: Sandbox, pod: str, *, lose_volume: bool, timeout: float = 120) -> None:
    """SIGKILL the pod's JVM and wait until the kubelet stand-in runs a new one in the same pod."""
    kubelet = sandbox.kubelet
    assert kubelet is not None
    killed = kubelet.crash(pod, lose_volume=lose_volume)
    deadline = time.monotonic() + timeout
    while kubelet.worker_pids().get(f"default/{pod}") in (None, killed):
        assert time.monotonic() < deadline, f"{pod} was not restarted within {timeout} s"
        time.sleep(0.5)


def test_the_operator_runs_a_kafka_streams_app_through_scaling_crashes_and_a_swap(
    sandbox: Sandbox, kafka_broker: KafkaCluster, topics: tuple[str, str], tmp_path: Path
) -> None:
    orders, totals = topics
    bootstrap = kafka_broker.bootstrap_servers
    kafka = SampleApp(APP, "default", bootstrap, None, tmp_path / "reader")
    publications = Publications(sandbox.kubeconfig)
    with running(publications.watch, "publications"):
        created = walk(sandbox, kafka, orders, totals)

    assert latest_totals(bootstrap, totals, 1200) == expected_totals(1200), "every order counted exactly once"
    final = sandbox.publication(APP)
    zone_of = {p["metadata"]["name"]: p["spec"]["nodeName"] for p in sandbox.pods(APP)}  # a node per zone
    assert imbalance(final, zone_of) == [], "balanced over the pods and the zones"
    assert final is not None and publications.seen.get(final.generation) == final, (
        "the watch saw every generation"
    )
    # From the first settled generation on: before it, the first pods' state is within the acceptable lag
    # anywhere, so that spreading the tasks onto a pod started late moves nothing cold.
    since_created = {g: p for g, p in publications.seen.items() if g >= created}
    problems, warmed = cold_moves(since_created, warmup_lags(sandbox.journal_file), ACCEPTABLE_LAG)
    assert problems == [], "\n".join(problems)
    assert warmed >= 3, f"the scale-out and the swap moved tasks onto caught-up warmups, {warmed} seen"


def walk(sandbox: Sandbox, kafka: SampleApp, orders: str, totals: str) -> int:
    """3 -> 6 -> 3, a crash with and one without its volume, a swap: 1,200 orders in all. The generation
    published once the app first settled."""
    bootstrap = kafka.bootstrap
    sandbox.apply(streams_app(orders, totals, replicas=3))
    produce_orders(bootstrap, orders, 0, 300)
    settle(sandbox, kafka, 3)
    created = sandbox.publication(APP)
    assert created is not None

    sandbox.patch_app(APP, {"spec": {"replicas": 6}})
    produce_orders(bootstrap, orders, 300, 300)
    six = settle(sandbox, kafka, 6)
    assert len(six) == 6, f"every pod runs an active task: {six}"

    sandbox.patch_app(APP, {"spec": {"replicas": 3}})
    produce_orders(bootstrap, orders, 600, 300)
    three = settle(sandbox, kafka, 3)

    with_volume, without_volume = sorted(three)[:2]
    crash(sandbox, with_volume, lose_volume=False)  # restarted in place with its state directory
    produce_orders(bootstrap, orders, 900, 100)
    settle(sandbox, kafka, 3)
    crash(sandbox, without_volume, lose_volume=True)  # its state is restored from the changelogs
    produce_orders(bootstrap, orders, 1000, 100)
    settle(sandbox, kafka, 3)

    before = {p["metadata"]["uid"] for p in sandbox.pods(APP)}
    stamp = {RESTARTED_AT_ANNOTATION: "2026-11-25T00:00:00Z"}  # what `smoothscale swap` writes
    sandbox.patch_app(APP, {"spec": {"template": {"metadata": {"annotations": stamp}}}})
    produce_orders(bootstrap, orders, 1100, 100)
    deadline = time.monotonic() + 300
    while before & {p["metadata"]["uid"] for p in sandbox.pods(APP)} and time.monotonic() < deadline:
        time.sleep(1)
    assert not before & {p["metadata"]["uid"] for p in sandbox.pods(APP)}, "the swap replaced every pod"
    settle(sandbox, kafka, 3)
    return created.generation
