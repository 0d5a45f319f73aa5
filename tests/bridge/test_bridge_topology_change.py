"""Input partitions added to a running app (issue 25), on real Kafka Streams under the operator: the sample
app, with no spec.topology, its repartition topic's size fixed and `order-versions` unlogged (so that Kafka
Streams keeps running when its input grows), settles on the operator's plan; then its orders topic gains
partitions. Kafka Streams' next rebalance finds tasks the published plan names nowhere: the bridge places them
around the kept plan (a fail-over, logged), not falling back to Kafka's sticky assignor (`missing_task`, which
it did before); the operator learns the new topology from the app, plans the new tasks, Kafka's view of the
group becomes that plan, and every order is counted once."""

from __future__ import annotations

from pathlib import Path

import pytest
from confluent_kafka.admin import AdminClient, NewPartitions

from smoothscale.sandbox.addresses import random_block
from smoothscale.sandbox.harness import Sandbox
from smoothscale.sandbox.kafka.broker import KafkaCluster
from smoothscale.sandbox.kafka.topics import QUIET
from smoothscale.sandbox.kafka_streams import (
    SampleApp,
    create_sample_topics,
    expected_totals,
    latest_totals,
    produce_orders,
)
from smoothscale.sandbox.streams_app import assignor_counts, fallbacks_after_first_plan, settle, streams_app

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]

APP = "growing-shop"
PARTITIONS = 2
GROWN = 4
ORDERS = 200
UNPLANNED_LINE = "are new to the app since generation"
"""What the bridge logs when it places tasks the publication names nowhere."""


def test_input_partitions_added_to_a_running_app_are_planned_without_a_fallback(
    kafka_broker: KafkaCluster, tmp_path: Path
) -> None:
    bootstrap = kafka_broker.bootstrap_servers
    suffix = tmp_path.name[-12:].replace("_", "-").strip("-")
    orders, totals = create_sample_topics(bootstrap, suffix, PARTITIONS)
    app = streams_app(APP, orders, totals, 2, acceptable_lag=5)
    app["spec"]["template"]["spec"]["containers"][0]["env"] += [
        {"name": "ORDER_STORE_LOGGING", "value": "off"},
        {"name": "REPARTITION_PARTITIONS", "value": str(PARTITIONS)},
        # The leader sees the new partitions within a second, not at the default metadata refresh (5 min).
        {"name": "STREAMS_METADATA_MAX_AGE_MS", "value": "1000"},
    ]
    kafka = SampleApp(APP, "default", bootstrap, None, tmp_path / "reader")
    with Sandbox(tmp_path / "sandbox", kafka_bootstrap=bootstrap, first_address=random_block()) as sandbox:
        sandbox.apply(app)
        produce_orders(bootstrap, orders, 0, ORDERS // 2)
        settle(sandbox, kafka, 2, 2 * PARTITIONS, timeout=300)
        before = sandbox.publication(APP)
        assert before is not None

        admin = AdminClient({"bootstrap.servers": bootstrap, **QUIET})
        admin.create_partitions([NewPartitions(orders, GROWN)])[orders].result(timeout=30)
        produce_orders(bootstrap, orders, ORDERS // 2, ORDERS // 2)
        view = settle(sandbox, kafka, 2, GROWN + PARTITIONS, timeout=300)

        new_tasks = {f"0_{p}" for p in range(PARTITIONS, GROWN)}
        assert new_tasks <= set().union(*view.values()), f"the new tasks run: {view}"
        status = sandbox.app(APP).get("status") or {}
        learned = {sub["name"]: sub["partitions"] for sub in status.get("topology", [])}
        assert learned == {"0": GROWN, "1": PARTITIONS}, status.get("topology")
        after = sandbox.publication(APP)
        assert after is not None and after.generation > before.generation
        assert new_tasks <= {t for roles in after.assignment.values() for t in roles.active}, (
            "the operator planned the new tasks"
        )
        counts = assignor_counts(sandbox, APP)
        logs = tmp_path / "sandbox"
        assert fallbacks_after_first_plan(logs) == [], "the bridge never fell back after the first plan"
        assert any(UNPLANNED_LINE in log.read_text(errors="replace") for log in logs.rglob("*.log")), (
            "a rebalance found the new tasks before the operator planned them"
        )
        fallbacks = {
            k: v for k, v in counts.items() if k.startswith("fallback_") and k != "fallback_no_publication"
        }
        assert not any(fallbacks.values()), counts
        assert counts["failovers"] >= 1, counts

    assert latest_totals(bootstrap, totals, ORDERS) == expected_totals(ORDERS), "every order counted once"
