"""A zone lost for longer than the group's session, with the Java sample (`OrdersApp`, exactly-once, one
standby) under the operator on a real broker (issue 40): every pod of one zone stopped (SIGSTOP: alive,
listed, its volume kept, but silent, as a node cut off), orders flowing throughout. Kafka Streams fails over
through Kafka, not through the operator's leases: once the lost members' session (10 s) has expired, the
group rebalances and the bridge's assignor puts their actives on their most caught-up copies, the standbys
in the other zones (a `failover`, not a fallback). Checked on the tasks' runs in Kafka Streams' own log lines
(`streams_task_log`, a frozen pod's runs ending at its freeze): no task unprocessed longer than the session
plus 5 s, from the freeze until the app has settled again, never two runs of one task at once; once the zone
is back, the app settles balanced with the operator's plan equal to Kafka's view, and every order is counted
exactly once. (The operator publishes no new plan meanwhile: the plan still gives the zone's pods their
actives, and once they are back, caught up by Kafka's `acceptable.recovery.lag`, they run them again.)

Orders flow steadily (about 100 a second), so a stopped pod often holds a transaction open (exactly-once):
its pending writes keep read_committed readers of its output waiting, and, stopped as it commits, its
pending offsets keep the new owner of a task it fed from starting (`unstable offsets`), until the broker's
transaction coordinator rolls it back, at its first check (every 10 s: Kafka's default
`transaction.abort.timed.out.transaction.cleanup.interval.ms`) after `transaction.timeout.ms` (10 s under
Kafka Streams' exactly-once by default): up to 20 s after the freeze, beyond the bound (17.7 s seen). So the
app sets `producer.transaction.timeout.ms` to 4 s, as a team that wants a lost zone's tasks back within its
session and a few seconds would (its transactions last about its 100 ms commit interval): rolled back within
14 s. Thawed, such a pod's producer is fenced (its tasks migrated), or, stopped as it committed, its commit
finds the transaction aborted (`InvalidTxnStateException`, fatal to the sample's thread: it restarts, as
Kubernetes would restart it). Whether a transaction was rolled back is printed.

Nothing else is tuned for the test beyond what the sample sets as the bridge recommends (README, "Adopting
smoothscale": the main consumer heartbeats every 200 ms, so the members left learn of the rebalance within
one) and the session of the sandbox's Kafka Streams apps (10 s, where Kafka Streams' default is 45 s: a team
that wants a lost zone's tasks back within seconds sets its session so; the failover waits for it).
"""

from __future__ import annotations

import statistics
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import Producer

from smoothscale.sandbox.addresses import random_block
from smoothscale.sandbox.app_process import AppProcess
from smoothscale.sandbox.background import running
from smoothscale.sandbox.harness import Sandbox
from smoothscale.sandbox.kafka.broker import KafkaCluster
from smoothscale.sandbox.kafka.topics import QUIET
from smoothscale.sandbox.kafka_streams import (
    SampleApp,
    create_sample_topics,
    expected_totals,
    latest_totals,
    order_value,
    sample_jar,
)
from smoothscale.sandbox.kubelet import log_pod
from smoothscale.sandbox.records import handovers, longest_gaps, overlaps
from smoothscale.sandbox.streams_app import fallbacks_after_first_plan, settle, streams_app
from smoothscale.sandbox.streams_task_log import task_intervals

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]

PARTITIONS = 4
TASKS = [f"{subtopology}_{p}" for subtopology in (0, 1) for p in range(PARTITIONS)]
"""Subtopology 0 reads the orders, 1 (the totals' store) the repartition topic."""
SESSION_SECONDS = 10.0
"""`streams_app`'s session timeout (its default)."""
FAILOVER_BOUND = SESSION_SECONDS + 5.0
"""Issue 40's bound: no task unprocessed longer than the session plus 5 s."""
OUTAGE_SECONDS = 2 * SESSION_SECONDS
TRANSACTION_TIMEOUT_MS = 4000
"""The app's `producer.transaction.timeout.ms` (the module docstring says why)."""
ORDER_EVERY_SECONDS = 0.01


class SteadyOrders:
    """Orders 0, 1, ... into `topic`, one every `ORDER_EVERY_SECONDS`, for as long as `run` runs (in
    `background.running`): steady, as production traffic is, so that the pods are stopped as they process,
    within a transaction (a batch a second leaves them idle, their transactions committed, most of the
    time)."""

    def __init__(self, bootstrap: str, topic: str) -> None:
        self._bootstrap = bootstrap
        self._topic = topic
        self.count = 0

    def run(self, stop: threading.Event) -> None:
        producer = Producer({"bootstrap.servers": self._bootstrap, "enable.idempotence": True, **QUIET})
        while not stop.wait(ORDER_EVERY_SECONDS):
            value = order_value(self.count).encode()
            producer.produce(self._topic, key=f"order-{self.count}".encode(), value=value)
            producer.poll(0)
            self.count += 1
        if producer.flush(30) != 0:
            raise RuntimeError(f"orders up to {self.count - 1} were not all acknowledged")


@pytest.fixture
def sandbox(kafka_broker: KafkaCluster, tmp_path: Path) -> Iterator[Sandbox]:
    app = AppProcess((sample_jar(),), "io.smoothscale.sample.OrdersApp")
    with Sandbox(
        tmp_path / "sandbox",
        kafka_bootstrap=kafka_broker.bootstrap_servers,
        first_address=random_block(),
        kafka_app=app,
    ) as running_sandbox:
        yield running_sandbox


def rolled_back(logs: Path, pods: list[str]) -> str:
    """Whether a stopped pod's transaction was rolled back while it was stopped (what may keep the tasks it
    fed waiting): thawed, its producer is fenced, or its commit in flight finds the transaction aborted."""
    texts = [log.read_text(errors="replace") for log in logs.glob("*.log") if log_pod(log) in pods]
    errors = ("ProducerFencedException", "InvalidTxnStateException")
    found = {error for error in errors for text in texts if error in text}
    if not found:
        return "no transaction rolled back"
    return f"a transaction rolled back ({', '.join(sorted(found))})"


def test_a_zone_stopped_longer_than_the_session_fails_over_to_the_standbys(
    sandbox: Sandbox, kafka_broker: KafkaCluster, tmp_path: Path
) -> None:
    kubelet = sandbox.kubelet
    assert kubelet is not None
    began = time.monotonic()
    bootstrap = kafka_broker.bootstrap_servers
    suffix = tmp_path.name[-12:].replace("_", "-").strip("-")
    orders, totals = create_sample_topics(bootstrap, suffix, PARTITIONS)
    kafka = SampleApp(f"zone-{suffix}", "default", bootstrap, None, tmp_path / "reader")
    body = streams_app(kafka.app, orders, totals, 3, acceptable_lag=5)
    body["spec"]["assignment"]["numStandbys"] = 1
    env = body["spec"]["template"]["spec"]["containers"][0]["env"]
    env.append({"name": "STREAMS_PRODUCER_TRANSACTION_TIMEOUT_MS", "value": str(TRANSACTION_TIMEOUT_MS)})
    sandbox.apply(body)
    settle(sandbox, kafka, 3, len(TASKS))

    feed = SteadyOrders(bootstrap, orders)
    with running(feed.run, "orders"):
        time.sleep(5)  # every task has work, and each standby follows its changelog
        zones = {p["metadata"]["name"]: p["spec"]["nodeName"] for p in sandbox.pods(kafka.app)}
        zone = zones[min(zones)]
        lost = sorted(pod for pod, node in zones.items() if node == zone)
        before = sandbox.publication(kafka.app)
        assert before is not None
        held = sorted(task for pod in lost for task in before.assignment[pod].active)
        assert held, f"the pods of {zone} hold no active task"
        frozen_at = time.time()
        for pod in lost:
            kubelet.freeze(pod)
        try:
            time.sleep(OUTAGE_SECONDS)
        finally:
            for pod in lost:
                kubelet.freeze(pod, frozen=False)
        thawed_at = time.time()
        settle(sandbox, kafka, 3, len(TASKS), timeout=240)
        settled_at = time.time()
    produced = feed.count
    counted = latest_totals(bootstrap, totals, produced)  # seconds: the zone's pods run their actives again

    intervals = task_intervals(kubelet.root / "logs", sandbox.records())
    checked_at = time.time()
    gaps = longest_gaps(intervals, TASKS, frozen_at, checked_at)
    moved = [h for h in handovers(intervals, frozen_at, thawed_at) if h.source_pod in lost]
    back = [h for h in handovers(intervals, thawed_at, checked_at) if h.target_pod in lost]
    pauses = [round(h.gap, 2) for h in moved]
    print(
        f"{zone} stopped ({lost}, actives {held}) for {thawed_at - frozen_at:.1f} s: longest gap "
        f"{max(gaps.values()):.2f} s ({max(gaps, key=gaps.__getitem__)}), {len(moved)} tasks moved, pauses "
        f"{pauses} (median {statistics.median(pauses) if pauses else None}); back {len(back)}, pauses "
        f"{[round(h.gap, 2) for h in back]}, settled {settled_at - thawed_at:.1f} s after the thaw; "
        f"{rolled_back(kubelet.root / 'logs', lost)}; {produced} orders; {time.monotonic() - began:.0f} s"
    )
    assert {h.task for h in moved} == set(held), "each lost active ran elsewhere during the outage"
    beyond = {task: round(gap, 2) for task, gap in gaps.items() if gap > FAILOVER_BOUND}
    assert beyond == {}, f"tasks unprocessed longer than {FAILOVER_BOUND} s"
    assert overlaps(intervals) == [], "a task ran on two pods at once"
    assert fallbacks_after_first_plan(tmp_path / "sandbox") == [], "a failover, not a fallback"
    assert counted == expected_totals(produced), "each order once"
