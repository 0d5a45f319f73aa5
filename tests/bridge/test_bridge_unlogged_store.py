"""A hand-written stateful subtopology whose store has logging disabled (issue 25), on real Kafka Streams
under the operator: Kafka creates no standby for its tasks, and every pod's follower counts standbys for
each subtopology with a store (it cannot tell a logged store from another), so a plan giving them standbys
could never be followed and no pod would report running it (never Ready). The operator plans such a
subtopology stateless once the app has reported its topology; the app settles, with standbys only for the
logged subtopology, every order counted once, and the difference named in TopologyMismatch."""

from __future__ import annotations

import time
import urllib.request
from pathlib import Path

import pytest

from smoothscale.contract.shared_names import GENERATION_METRIC
from smoothscale.sandbox.addresses import random_block
from smoothscale.sandbox.harness import Sandbox
from smoothscale.sandbox.kafka.broker import KafkaCluster
from smoothscale.sandbox.kafka_streams import (
    SampleApp,
    create_sample_topics,
    expected_totals,
    latest_totals,
    produce_orders,
)
from smoothscale.sandbox.streams_app import settle, streams_app

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]

APP = "unlogged-shop"
PARTITIONS = 2
ORDERS = 40


def test_pods_follow_the_plan_when_a_written_stateful_subtopology_has_no_changelog(
    kafka_broker: KafkaCluster, tmp_path: Path
) -> None:
    bootstrap = kafka_broker.bootstrap_servers
    suffix = tmp_path.name[-12:].replace("_", "-").strip("-")
    orders, totals = create_sample_topics(bootstrap, suffix, PARTITIONS)
    app = streams_app(APP, orders, totals, 2, acceptable_lag=5)
    spec = app["spec"]
    spec["template"]["spec"]["containers"][0]["env"].append({"name": "ORDER_STORE_LOGGING", "value": "off"})
    spec["assignment"]["numStandbys"] = 1
    spec["topology"] = {
        "subtopologies": [
            {"name": "0", "partitions": PARTITIONS, "inputTopics": [orders], "stores": ["order-versions"]},
            {
                "name": "1",
                "partitions": PARTITIONS,
                "inputTopics": [f"{APP}-by-customer-repartition"],
                "stores": ["customer-totals"],
            },
        ]
    }
    with Sandbox(tmp_path / "sandbox", kafka_bootstrap=bootstrap, first_address=random_block()) as sandbox:
        sandbox.apply(app)
        produce_orders(bootstrap, orders, 0, ORDERS)
        kafka = SampleApp(APP, "default", bootstrap, None, tmp_path / "reader")
        settle(sandbox, kafka, 2, 2 * PARTITIONS, timeout=420)  # every pod Ready: each follows the plan
        publication = sandbox.publication(APP)
        assert publication is not None
        copies = {t for roles in publication.assignment.values() for t in (*roles.standby, *roles.warmup)}
        assert copies == {f"1_{p}" for p in range(PARTITIONS)}, "standbys for the logged subtopology only"
        running = running_generations(sandbox, publication.generation)
        assert set(running.values()) == {publication.generation}, (
            f"every pod runs generation {publication.generation}: {running}"
        )
        conditions = {c["type"]: c for c in sandbox.app(APP)["status"]["conditions"]}
        mismatch = conditions["TopologyMismatch"]
        assert mismatch["status"] == "True" and "logging disabled" in mismatch["message"]
        assert latest_totals(bootstrap, totals, ORDERS) == expected_totals(ORDERS)


def running_generations(sandbox: Sandbox, generation: int, timeout: float = 60) -> dict[str, int | None]:
    """Each pod's `smoothscale_assignment_generation` (the generation its follower found it running), once
    all report `generation` or `timeout` seconds passed. (A pod's readiness says only that it ran one.)"""
    deadline = time.monotonic() + timeout
    while True:
        seen: dict[str, int | None] = {}
        for pod in sandbox.pods(APP):
            ip = (pod.get("status") or {}).get("podIP")
            try:
                with urllib.request.urlopen(f"http://{ip}:8080/metrics", timeout=2) as response:
                    text = response.read().decode()
            except OSError:
                text = ""
            values = [
                int(float(line.rsplit(" ", 1)[1]))
                for line in text.splitlines()
                if line.startswith(GENERATION_METRIC + " ")
            ]
            seen[pod["metadata"]["name"]] = values[0] if values else None
        if set(seen.values()) == {generation} or time.monotonic() > deadline:
            return seen
        time.sleep(1)
