"""`analyze` on the log a real Kafka 4.3.1 broker wrote while consumer groups rebalanced:

- two confluent-kafka consumers join a group, one is killed (SIGKILL, so it never leaves) and the
  coordinator removes it when its session expires; then the other closes. The expiration is found with the
  killed member and after the kill, and the rebalance table holds the group's generations with their
  member counts, leader and reason, from the coordinator's lines;
- a static member (`group.instance.id`, KIP-848's consumer protocol) is killed and its replacement, with
  the same instance id, starts at once, as when a pod is replaced: the coordinator refuses it while the
  killed member holds the instance id (UNRELEASED_INSTANCE_ID), one incident naming both.
"""

from __future__ import annotations

import re
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer

from smoothscale.pipeline.analyze import AnalyzeInputs, AnalyzeResult, analyze
from smoothscale.sandbox.kafka.broker import KafkaCluster
from smoothscale.sandbox.kafka.topics import QUIET, create_topic

SESSION_TIMEOUT_MS = 6000  # the broker's group.min.session.timeout.ms
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


def _wait_for(path: Path, text: str, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if path.exists() and text in path.read_text(errors="replace"):
            return
        time.sleep(0.2)
    raise AssertionError(f"{text!r} not in {path} after {timeout} s")


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


@pytest.fixture(scope="module")
def rebalanced(
    kafka_broker: KafkaCluster, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[dict[str, Any]]:
    """Runs the scenario; yields what happened (group, members, kill time) and the broker's log."""
    bootstrap = kafka_broker.bootstrap_servers
    run = uuid.uuid4().hex[:8]
    topic, group = f"logs-topic-{run}", f"logs-group-{run}"
    create_topic(bootstrap, topic, 2)
    server_log = kafka_broker.node_log_dir(kafka_broker.node_ids[0]) / "server.log"
    first = PollingConsumer(bootstrap, group, f"first-{run}", topic)
    _wait_for(server_log, f"Stabilized group {group} generation 1 ", 60)
    second = subprocess.Popen(
        [sys.executable, "-c", MEMBER, bootstrap, group, f"second-{run}", topic, str(SESSION_TIMEOUT_MS)],
        stdout=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        _wait_for(server_log, f"Stabilized group {group} generation 2", 60)
        assert second.stdout is not None and second.stdout.readline().strip() == "assigned"
        killed_at = datetime.now(UTC).replace(tzinfo=None)
        second.send_signal(signal.SIGKILL)
        second.wait(timeout=10)
        _wait_for(server_log, f"Stabilized group {group} generation 3", 60)
    finally:
        if second.poll() is None:
            second.kill()
            second.wait(timeout=10)
        first.close()
    static = replace_static_member(bootstrap, topic, run, server_log)
    # The broker goes on writing: analyze a copy of what it wrote so far.
    copy = tmp_path_factory.mktemp("real-broker") / "server.log"
    copy.write_bytes(server_log.read_bytes())
    yield {
        "group": group,
        "first": f"first-{run}",
        "second": f"second-{run}",
        "killed_at": killed_at,
        "log": copy,
        "static": static,
    }


def replace_static_member(bootstrap: str, topic: str, run: str, server_log: Path) -> dict[str, Any]:
    """A static member killed, and its replacement started with the same instance id; until the broker
    refuses the replacement. What happened: the group, the instance, the killed member's id, when."""
    group, instance = f"static-group-{run}", f"pod-0-{run}"
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
    replaced_at = datetime.now(UTC).replace(tzinfo=None)
    replacement = Consumer(
        {"bootstrap.servers": bootstrap, "group.id": group, "client.id": instance,
         "group.instance.id": instance, "group.protocol": "consumer", **QUIET}
    )  # fmt: skip
    replacement.subscribe([topic])  # librdkafka's own thread joins: no poll needed
    try:
        _wait_for(server_log, f"with instance id {instance} cannot join the group", 60)
    finally:
        replacement.close()
    joined = re.search(rf"Static member (\S+) with instance id {instance} joins", server_log.read_text())
    assert joined is not None
    killed = joined.group(1)
    return {"group": group, "instance": instance, "killed": killed, "replaced_at": replaced_at}


@pytest.fixture(scope="module")
def result(spark: Any, rebalanced: dict[str, Any], tmp_path_factory: pytest.TempPathFactory) -> AnalyzeResult:
    inputs = AnalyzeInputs(journals=[], logs=[str(rebalanced["log"])], out=tmp_path_factory.mktemp("analyze"))
    return analyze(spark, inputs)


def test_the_killed_member_expires_after_its_session_timeout(
    result: AnalyzeResult, rebalanced: dict[str, Any]
) -> None:
    diagnosed = [
        r.asDict() for r in result.tables["diagnoses"].where(f"group = '{rebalanced['group']}'").collect()
    ]
    (expired,) = [d for d in diagnosed if d["kind"] == "heartbeat-expiration"]
    assert expired["members"] == [rebalanced["second"]]
    waited = (expired["ts"] - rebalanced["killed_at"]).total_seconds()
    assert SESSION_TIMEOUT_MS / 1000 - 1 <= waited <= SESSION_TIMEOUT_MS / 1000 + 15
    # The coordinator's "has failed" line and its rebalance reason are one incident (the 4.4 coordinator's
    # other lines of the same expiry fold into it too), not a row each.
    assert expired["occurrences"] >= 2
    # Nothing else is wrong with this group: members joining, then going, is no churn.
    assert {d["kind"] for d in diagnosed} == {"heartbeat-expiration"}


def test_a_replaced_static_member_is_refused_while_the_killed_one_holds_its_instance_id(
    result: AnalyzeResult, rebalanced: dict[str, Any]
) -> None:
    static = rebalanced["static"]
    rows = result.tables["diagnoses"].where(f"group = '{static['group']}'").collect()
    (blocked,) = [r.asDict() for r in rows]
    assert blocked["kind"] == "static-member-blocked"
    assert blocked["members"] == [static["instance"], static["killed"]]
    assert 0 <= (blocked["ts"] - static["replaced_at"]).total_seconds() <= 30


def test_the_rebalance_table_from_the_coordinator(result: AnalyzeResult, rebalanced: dict[str, Any]) -> None:
    rows = result.tables["generations"].where(f"group = '{rebalanced['group']}'").orderBy("generation")
    table = [r.asDict() for r in rows.collect()]
    # The first member joins, the second joins, the second expires, the first closes (LeaveGroup).
    assert [(r["generation"], r["member_count"]) for r in table] == [(1, 1), (2, 2), (3, 1), (4, 0)]
    assert [r["leader"] for r in table] == [rebalanced["first"]] * 3 + [None]
    assert all(r["sources"] == ["broker"] and r["duration_s"] is not None for r in table)
    assert rebalanced["second"] in table[1]["reason"]
    assert "heartbeat expiration" in table[2]["reason"] and rebalanced["second"] in table[2]["reason"]
    assert "LeaveGroup" in table[3]["reason"]


def test_the_broker_log_is_read_whole(result: AnalyzeResult) -> None:
    (counts,) = result.inputs
    assert counts["unknown"] == 0 and counts["unrecognised"] == 0
    assert counts["readable"] == 1.0
