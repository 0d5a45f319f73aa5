"""The walk each Kafka Streams sample rides out under the operator, one sample per test: a StreamsApp with
`spec.runtime: KafkaStreams` in the sandbox, whose kubelet stand-in runs the sample's jar as each pod's
process, against a real broker. The tests are in modules of their own, so that a run's two processes share
them out (2 to 6 minutes each): `test_bridge_operator.py` (the plain and Quarkus samples),
`test_bridge_operator_spring.py` (Spring Boot) and `test_bridge_operator_releases.py` (releases side by side,
issue 34).

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
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import kubernetes
import pytest

from smoothscale.client import from_configmap
from smoothscale.contract import shared_names as contract
from smoothscale.contract.publication import Publication
from smoothscale.sandbox.addresses import random_block
from smoothscale.sandbox.app_process import AppProcess
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
from smoothscale.sandbox.streams_app import (
    crash,
    fallbacks_after_first_plan,
    settle,
    streams_app,
    swap_every_pod,
)


@dataclass(frozen=True)
class Sample:
    """A sample's jar (None: the sandbox's own sample app, `PlainOrdersApp` by `adoption="properties"`), where
    it serves its metrics, and the operator's release (None: this checkout's; else the PYTHONPATH of that
    release's packages, `versions_testkit.release_path`)."""

    jar: Callable[[], Path] | None
    metrics_path: str
    operator: Callable[[], str] | None = None


APP = "ops"
"""The apps' name prefix: each sample runs as its own app (`ops-<sample>`), with its own group, changelogs and
repartition topic on the session's broker (one sample's stores must not restore another's totals)."""
PARTITIONS = 4
ACCEPTABLE_LAG = 5
"""Below what the first 300 orders write to any changelog partition (`BATCH`), so that a pod that has not
restored a task's state (a new one above all) is not caught up on it, and above the 1 that exactly-once leaves
a restored copy behind (the end offset counts the last transaction's commit marker)."""
BATCH = 50
"""The first 300 orders go in six batches, each counted in the totals before the next: six commits, each
writing to every store partition its customers' keys and a commit marker. Sent at once, a backlog the pods
read in one or two polls wrote as few as 3 records to a partition: within `ACCEPTABLE_LAG`, a new pod was
rightly caught up on it from nothing, and the scale-out moved it there without a warmup."""


class Publications:
    """Every generation the operator publishes for the app, from a watch on its ConfigMap (polling could miss
    a generation that lived less than a poll), for as long as `watch` runs (in `background.running`)."""

    def __init__(self, kubeconfig: Path, app: str) -> None:
        self.seen: dict[int, Publication] = {}
        self._kubeconfig = kubeconfig
        self._app = app

    def watch(self, stop: threading.Event) -> None:
        name = contract.assignment_configmap(self._app)
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


def warmup_lags(journal: Path, app: str) -> list[WarmupLag]:
    """The warmups' lags as the operator scraped them, in the order of its journal."""
    lags = []
    for line in journal.read_text().splitlines():
        entry = json.loads(line)
        if entry["kind"] == "scrape" and entry["app"] == app:
            for warmup in entry["warmupLags"]:
                lags.append(WarmupLag(entry["generation"], warmup["task"], warmup["pod"], warmup["lag"]))
    return lags


def ride_out(
    name: str, sample: Sample, kafka_broker: KafkaCluster, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The sample adopts smoothscale by its properties alone (`metric.reporters`, `task.assignor.class`,
    `client.id`): 3 -> 6 -> 3, a crash with and one without its volume, a swap, each step settled with the
    plan equal to Kafka's view; then every check. (The code API's path is the same assignor and reporter;
    `test_bridge_kafka` runs it against every publication.)"""
    bootstrap = kafka_broker.bootstrap_servers
    suffix = tmp_path.name[-12:].replace("_", "-").strip("-")
    orders, totals = create_sample_topics(bootstrap, suffix, PARTITIONS)
    if sample.operator is not None:  # the sandbox's operator process inherits it
        monkeypatch.setenv("PYTHONPATH", sample.operator())
    with Sandbox(
        tmp_path / "sandbox",
        kafka_bootstrap=bootstrap,
        first_address=random_block(),
        kafka_app=None if sample.jar is None else AppProcess((sample.jar(),)),
    ) as sandbox:
        kafka = SampleApp(f"{APP}-{name}", "default", bootstrap, None, tmp_path / "reader")
        check_walk(sandbox, kafka, sample.metrics_path, orders, totals, tmp_path / "sandbox")


def check_walk(
    sandbox: Sandbox, kafka: SampleApp, metrics_path: str, orders: str, totals: str, root: Path
) -> None:
    """The walk, then every check (`root`: the sandbox's folder)."""
    bootstrap, app = kafka.bootstrap, kafka.app
    publications = Publications(sandbox.kubeconfig, app)
    with running(publications.watch, "publications"):
        created = walk(sandbox, kafka, orders, totals, metrics_path=metrics_path)
        final = sandbox.publication(app)
        # The watch reads on: it sees the last generation a moment after it is published.
        deadline = time.monotonic() + 15
        while final is not None and final.generation not in publications.seen and time.monotonic() < deadline:
            time.sleep(0.5)

    assert latest_totals(bootstrap, totals, 1200) == expected_totals(1200), "every order counted exactly once"
    # The crashes too: a gone pod's actives fail over to their standbys, the plan kept (not a fallback).
    assert fallbacks_after_first_plan(root) == [], "the bridge never fell back"
    zone_of = {p["metadata"]["name"]: p["spec"]["nodeName"] for p in sandbox.pods(app)}  # a node per zone
    assert imbalance(final, zone_of) == [], "balanced over the pods and the zones"
    assert final is not None and publications.seen.get(final.generation) == final, (
        "the watch saw every generation"
    )
    # From the first settled generation on: before it, the first pods' state is within the acceptable lag
    # anywhere, so that spreading the tasks onto a pod started late moves nothing cold.
    since_created = {g: p for g, p in publications.seen.items() if g >= created}
    problems, warmed = cold_moves(since_created, warmup_lags(sandbox.journal_file, app), ACCEPTABLE_LAG)
    assert problems == [], "\n".join(problems)
    assert warmed >= 3, f"the scale-out and the swap moved tasks onto caught-up warmups, {warmed} seen"


def scale_out_and_in(
    sandbox: Sandbox, kafka: SampleApp, orders: str, totals: str, metrics_path: str
) -> tuple[int, dict[str, set[str]]]:
    """3 -> 6 -> 3 with 900 orders, each step settled; the generation published once the app first settled,
    and the final placement."""
    bootstrap = kafka.bootstrap
    app = streams_app(kafka.app, orders, totals, 3, acceptable_lag=ACCEPTABLE_LAG, adoption="properties")
    app["spec"]["metrics"]["path"] = metrics_path
    sandbox.apply(app)
    settle(sandbox, kafka, 3, 2 * PARTITIONS)
    for start in range(0, 300, BATCH):
        produce_orders(bootstrap, orders, start, BATCH)
        latest_totals(bootstrap, totals, start + BATCH)
    created = sandbox.publication(kafka.app)
    assert created is not None
    status = sandbox.app(kafka.app).get("status") or {}
    learned = {sub["name"]: (sub["partitions"], sub["inputTopics"]) for sub in status.get("topology", [])}
    repartition = f"{kafka.app}-by-customer-repartition"
    assert learned == {"0": (PARTITIONS, [orders]), "1": (PARTITIONS, [repartition])}, status.get("topology")
    assert not [
        c for c in status.get("conditions", []) if c["type"] == "TopologyMismatch" and c["status"] == "True"
    ]

    sandbox.patch_app(kafka.app, {"spec": {"replicas": 6}})
    produce_orders(bootstrap, orders, 300, 300)
    six = settle(sandbox, kafka, 6, 2 * PARTITIONS)
    assert len(six) == 6, f"every pod runs an active task: {six}"

    sandbox.patch_app(kafka.app, {"spec": {"replicas": 3}})
    produce_orders(bootstrap, orders, 600, 300)
    three = settle(sandbox, kafka, 3, 2 * PARTITIONS)
    return created.generation, three


def walk(sandbox: Sandbox, kafka: SampleApp, orders: str, totals: str, metrics_path: str) -> int:
    """3 -> 6 -> 3, a crash with and one without its volume, a swap: 1,200 orders in all. The generation
    published once the app first settled."""
    bootstrap = kafka.bootstrap
    created, three = scale_out_and_in(sandbox, kafka, orders, totals, metrics_path)

    with_volume, without_volume = sorted(three)[:2]
    crash(sandbox, with_volume, lose_volume=False)  # restarted in place with its state directory
    produce_orders(bootstrap, orders, 900, 100)
    settle(sandbox, kafka, 3, 2 * PARTITIONS)
    crash(sandbox, without_volume, lose_volume=True)  # its state is restored from the changelogs
    produce_orders(bootstrap, orders, 1000, 100)
    settle(sandbox, kafka, 3, 2 * PARTITIONS)

    produce_orders(bootstrap, orders, 1100, 100)
    swap_every_pod(sandbox, kafka.app, "2026-11-25T00:00:00Z")  # what `smoothscale swap` writes
    settle(sandbox, kafka, 3, 2 * PARTITIONS)
    return created
