"""Incidents provoked on real Kafka 4.3.1 brokers for `test_pipe_real_broker.py`, each a function that runs
its scenario and returns what happened (groups, members, times on this process's clock, which is the logs'
clock). They touch different groups (and the store failure another cluster), so they run side by side;
their logs are then analysed together.

- `expire_then_leave`: two confluent-kafka consumers join a group, one is killed (SIGKILL, so it never
  leaves) and the coordinator removes it when its session expires; then the other closes;
- `replace_static_member`: a static member (`group.instance.id`, KIP-848's consumer protocol) is killed
  and its replacement, with the same instance id, starts at once, as when a pod is replaced: the
  coordinator refuses it while the killed member holds the instance id (UNRELEASED_INSTANCE_ID);
- `commit_after_poll_timeout`: Kafka's own Java consumer (the sample jar's `SlowCommitConsumer`, the
  classic protocol) takes longer over a batch than its `max.poll.interval.ms`, then commits: its heartbeat
  thread finds the poll timeout expired and leaves the group, the commit is refused with a
  `CommitFailedException` (logged as an application does), and it rejoins;
- `fail_to_store_assignments`: on the three-broker cluster one broker is stopped and `__consumer_offsets`
  asks for 3 in-sync replicas, so the coordinator's write of each SyncGroup's assignment cannot complete (it
  times out after `offsets.commit.timeout.ms`: the high watermark does not advance under min ISR), it
  answers COORDINATOR_NOT_AVAILABLE and the members rejoin, round after round, until the setting is
  removed. One broker cannot show this: since Kafka 3.7 the broker caps `min.insync.replicas` at the
  partition's replica count (KAFKA-15583). The setting is removed and the broker started again whatever
  happens.
"""

from __future__ import annotations

import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from confluent_kafka import Consumer
from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource
from pipe_testkit import QUICK_JIT

from smoothscale.pipeline.diagnoses import Thresholds
from smoothscale.sandbox.kafka.broker import KafkaCluster
from smoothscale.sandbox.kafka.topics import QUIET, create_topic, produce
from smoothscale.sandbox.kafka_streams import sample_jar

SESSION_TIMEOUT_MS = 6000  # the broker's group.min.session.timeout.ms
MAX_POLL_INTERVAL_MS = 3000  # the slow Java consumer's
PROCESSING_MS = 6000  # how long it takes over its batch: past the poll interval, with time to notice
STORE_FAILED = "when storing group assignment"
FAILED_ROUNDS = Thresholds().store_failure_min
# The second member, in a process of its own so that it can die without leaving the group.
MEMBER = """
import sys, time
from confluent_kafka import Consumer
consumer = Consumer({"bootstrap.servers": sys.argv[1], "group.id": sys.argv[2], "client.id": sys.argv[3],
                     "session.timeout.ms": int(sys.argv[5]), "heartbeat.interval.ms": 500, "log_level": 0})
consumer.subscribe([sys.argv[4]])
while True:
    consumer.poll(0.2)
    if consumer.assignment():
        print("assigned", flush=True)
"""
# A static member of the consumer protocol (the session timeout is the broker's).
STATIC_MEMBER = """
import sys
from confluent_kafka import Consumer
consumer = Consumer({"bootstrap.servers": sys.argv[1], "group.id": sys.argv[2], "client.id": sys.argv[3],
                     "group.instance.id": sys.argv[3], "group.protocol": "consumer", "log_level": 0})
consumer.subscribe([sys.argv[4]])
while not consumer.assignment():
    consumer.poll(0.2)
print("assigned", flush=True)
while True:
    consumer.poll(0.2)
"""


def now() -> datetime:
    """The wall clock as the logs write it (UTC, naive)."""
    return datetime.now(UTC).replace(tzinfo=None)


def wait_for(path: Path, text: str, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if path.exists() and text in path.read_text(errors="replace"):
            return
        time.sleep(0.2)
    raise AssertionError(f"{text!r} not in {path} after {timeout} s")


def server_log(cluster: KafkaCluster, node: int) -> Path:
    return cluster.node_log_dir(node) / "server.log"


class PollingConsumer:
    """A member that keeps polling in a thread (so that it rejoins when the group rebalances)."""

    def __init__(self, bootstrap: str, group: str, client_id: str, topic: str) -> None:
        self.consumer = Consumer(
            {
                "bootstrap.servers": bootstrap,
                "group.id": group,
                "client.id": client_id,
                "session.timeout.ms": SESSION_TIMEOUT_MS,
                "heartbeat.interval.ms": 500,
                **QUIET,
            }
        )
        self.consumer.subscribe([topic])
        self.stopping = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        while not self.stopping.is_set():
            self.consumer.poll(0.2)

    def close(self) -> None:
        self.stopping.set()
        self.thread.join(timeout=10)
        self.consumer.close()


def expire_then_leave(cluster: KafkaCluster, run: str) -> dict[str, Any]:
    """The group, its two members and when the second was killed."""
    bootstrap = cluster.bootstrap_servers
    topic, group = f"logs-topic-{run}", f"logs-group-{run}"
    create_topic(bootstrap, topic, 2)
    log = server_log(cluster, cluster.node_ids[0])
    first = PollingConsumer(bootstrap, group, f"first-{run}", topic)
    wait_for(log, f"Stabilized group {group} generation 1 ", 60)
    second = subprocess.Popen(
        [sys.executable, "-c", MEMBER, bootstrap, group, f"second-{run}", topic, str(SESSION_TIMEOUT_MS)],
        stdout=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        wait_for(log, f"Stabilized group {group} generation 2", 60)
        assert second.stdout is not None and second.stdout.readline().strip() == "assigned"
        killed_at = now()
        second.send_signal(signal.SIGKILL)
        second.wait(timeout=10)
        wait_for(log, f"Stabilized group {group} generation 3", 60)
    finally:
        if second.poll() is None:
            second.kill()
            second.wait(timeout=10)
        first.close()
    return {"group": group, "first": f"first-{run}", "second": f"second-{run}", "killed_at": killed_at}


def replace_static_member(cluster: KafkaCluster, run: str) -> dict[str, Any]:
    """A static member killed, and its replacement started with the same instance id; until the broker
    refuses the replacement. What happened: the group, the instance, the killed member's id, when."""
    bootstrap = cluster.bootstrap_servers
    topic, group, instance = f"static-topic-{run}", f"static-group-{run}", f"pod-0-{run}"
    create_topic(bootstrap, topic, 2)
    log = server_log(cluster, cluster.node_ids[0])
    old = subprocess.Popen(
        [sys.executable, "-c", STATIC_MEMBER, bootstrap, group, instance, topic],
        stdout=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        assert old.stdout is not None and old.stdout.readline().strip() == "assigned"
    finally:
        old.kill()
        old.wait(timeout=10)
    replaced_at = now()
    replacement = Consumer(
        {"bootstrap.servers": bootstrap, "group.id": group, "client.id": instance,
         "group.instance.id": instance, "group.protocol": "consumer", **QUIET}
    )  # fmt: skip
    replacement.subscribe([topic])  # librdkafka's own thread joins: no poll needed
    try:
        wait_for(log, f"with instance id {instance} cannot join the group", 60)
    finally:
        replacement.close()
    joined = re.search(rf"Static member (\S+) with instance id {instance} joins", log.read_text())
    assert joined is not None
    return {"group": group, "instance": instance, "killed": joined.group(1), "replaced_at": replaced_at}


def commit_after_poll_timeout(cluster: KafkaCluster, run: str, log: Path) -> dict[str, Any]:
    """The Java consumer's group, its client id, and when it began its slow batch; its log in `log`."""
    bootstrap = cluster.bootstrap_servers
    topic, group, client = f"slow-topic-{run}", f"slow-group-{run}", f"slow-consumer-{run}"
    create_topic(bootstrap, topic, 1)
    produce(bootstrap, topic, {0: 10})
    java = ["java", "-Xmx256m", "-XX:+UseSerialGC", QUICK_JIT, "-cp", str(sample_jar())]
    args = [bootstrap, topic, group, client, str(MAX_POLL_INTERVAL_MS), str(PROCESSING_MS)]
    with log.open("wb") as out:
        process = subprocess.Popen(
            [*java, "io.smoothscale.sample.SlowCommitConsumer", *args], stdout=out, stderr=subprocess.STDOUT
        )
    try:
        wait_for(log, "Processing a batch of 10 records", 60)
        processing = now()
        assert process.wait(timeout=60) == 0, log.read_text()[-3000:]
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    return {"group": group, "client": client, "processing": processing}


def _offsets_min_isr(bootstrap: str, value: str | None) -> None:
    """Sets (or with None, removes) `min.insync.replicas` on `__consumer_offsets`."""
    admin = AdminClient({"bootstrap.servers": bootstrap, **QUIET})
    op = AlterConfigOpType.SET if value is not None else AlterConfigOpType.DELETE
    entry = ConfigEntry("min.insync.replicas", value or "", incremental_operation=op)
    resource = ConfigResource(ConfigResource.Type.TOPIC, "__consumer_offsets", incremental_configs=[entry])
    for future in admin.incremental_alter_configs([resource]).values():
        future.result(timeout=30)


def _poll_until(consumers: list[Consumer], done: Callable[[], Any], what: str, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while not done():
        assert time.monotonic() < deadline, f"{what} not seen after {timeout} s"
        for consumer in consumers:
            consumer.poll(0.1)


def _member(bootstrap: str, group: str, client: str, topic: str) -> Consumer:
    consumer = Consumer(
        {"bootstrap.servers": bootstrap, "group.id": group, "client.id": client,
         "session.timeout.ms": SESSION_TIMEOUT_MS, "heartbeat.interval.ms": 500, **QUIET}
    )  # fmt: skip
    consumer.subscribe([topic])
    return consumer


def fail_to_store_assignments(cluster: KafkaCluster, run: str, stopped: int) -> dict[str, Any]:
    """The group, its members, when the store began to fail and when it was restored, and how long each
    broker's log was once the group had recovered (`ends`). The first member's
    generation is stored while the cluster is whole (`__consumer_offsets` is created then if nothing made
    it before); then node `stopped` stops and a second member joins: every round fails until the setting
    is removed."""
    bootstrap = cluster.bootstrap_servers
    topic, group = f"store-topic-{run}", f"store-group-{run}"
    clients = [f"store-{n}-{run}" for n in (1, 2)]
    create_topic(bootstrap, topic, 2, replication=2)
    logs = [server_log(cluster, node) for node in cluster.node_ids]
    written = {log: log.stat().st_size for log in logs}

    def failed_rounds() -> int:
        return sum(log.read_bytes()[written[log] :].count(STORE_FAILED.encode()) for log in logs)

    consumers = [_member(bootstrap, group, clients[0], topic)]
    try:
        _poll_until(consumers, consumers[0].assignment, "the first member's assignment", 60)
        cluster.stop_node(stopped)
        _offsets_min_isr(bootstrap, str(len(cluster.node_ids)))
        failing = now()
        consumers.append(_member(bootstrap, group, clients[1], topic))
        _poll_until(consumers, lambda: failed_rounds() >= FAILED_ROUNDS, "failed SyncGroup writes", 60)
        _offsets_min_isr(bootstrap, None)
        restored = now()
        _poll_until(consumers, lambda: all(c.assignment() for c in consumers), "both members assigned", 60)
        # What the brokers wrote up to the group's recovery: its members then close, and the broker restarts.
        ends = {log: log.stat().st_size for log in logs}
    finally:
        for consumer in consumers:
            consumer.close()
        _offsets_min_isr(bootstrap, None)
        cluster.start_node(stopped)
    return {"group": group, "clients": clients, "failing": failing, "restored": restored, "ends": ends}
