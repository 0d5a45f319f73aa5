"""`analyze` on the logs that a real 4.3.1 broker and three real Kafka Streams instances (the sample app,
with Kafka's own HighAvailabilityTaskAssignor) wrote through four incidents, asserted incident by incident.

One run of one app (`shop-<run>`), in this order:
(a) scale-out with probing: `shop-0` runs alone and builds state, then `shop-1` and `shop-2` join; their
    state is behind, so the leader assigns warmups and schedules a probing rebalance;
(b) a killed instance: `shop-1` gets SIGKILL; the coordinator expires its session and the group rebalances;
(c) a poll timeout: `shop-2` takes longer over one record than its `max.poll.interval.ms`, so its consumer
    leaves the group, and rejoins once the record is done;
(d) a thread replaced: a record makes `shop-0`'s stream thread throw; the REPLACE_THREAD handler starts a
    new stream thread in its place.
Each instance runs with Kafka Streams' default client id (`<app>-<process uuid>`), which the tests map back
to the pod from its own log. The step times come from this process's clock (the logs' clock too).
"""

from __future__ import annotations

import re
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient

from smoothscale.pipeline.analyze import AnalyzeInputs, AnalyzeResult, analyze
from smoothscale.pipeline.diagnoses import Thresholds
from smoothscale.sandbox.kafka.broker import KafkaCluster
from smoothscale.sandbox.kafka.topics import QUIET
from smoothscale.sandbox.kafka_streams import SampleApp, create_sample_topics

pytestmark = pytest.mark.slow

PARTITIONS = 4
SESSION_TIMEOUT_MS = 6000  # the broker's group.min.session.timeout.ms: a killed instance expires quickly
SLOW_POLL_INTERVAL_MS = 4000  # shop-2's max.poll.interval.ms
SLOW_RECORD_MS = 12000  # how long shop-2 takes over the slow record
PROBING_INTERVAL_MS = 60000  # probing.rebalance.interval.ms's minimum
EVERY_INSTANCE = {
    "STREAMS_CLIENT_ID": "",  # Kafka Streams' default: `<application.id>-<process uuid>`
    "STREAMS_SESSION_TIMEOUT_MS": str(SESSION_TIMEOUT_MS),
    "STREAMS_HEARTBEAT_INTERVAL_MS": "1000",
    "STREAMS_PROBING_REBALANCE_INTERVAL_MS": str(PROBING_INTERVAL_MS),
    # A newcomer is caught up within 10 records of the changelog's end: one with an empty state gets warmups.
    "STREAMS_ACCEPTABLE_RECOVERY_LAG": "10",
    "STREAMS_MAX_POLL_INTERVAL_MS": "30000",
}
CLIENT = re.compile(r"stream-client \[([^\s\]]+)\]")


def now() -> datetime:
    """The wall clock as the logs write it (UTC, naive)."""
    return datetime.now(UTC).replace(tzinfo=None)


def wait_for(path: Path, text: str, timeout: float, after: int = 0) -> int:
    """Wait until `text` is in `path` (past its first `after` characters); the offset just after it."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        content = path.read_text(errors="replace") if path.exists() else ""
        found = content.find(text, after)
        if found >= 0:
            return found + len(text)
        time.sleep(0.2)
    raise AssertionError(f"{text!r} not in {path} after {timeout} s")


@dataclass
class Run:
    """What happened, when (this process's clock), and where each log is."""

    group: str
    clients: dict[str, str] = field(default_factory=dict)  # pod -> Kafka Streams client id
    steps: dict[str, tuple[datetime, datetime]] = field(default_factory=dict)
    logs: list[Path] = field(default_factory=list)

    def begin(self, step: str) -> None:
        """Ends the current step now, and starts `step`."""
        at = now()
        if self.steps:
            last = next(reversed(self.steps))
            self.steps[last] = (self.steps[last][0], at)
        self.steps[step] = (at, at)


def produce(bootstrap: str, topic: str, key: str, count: int) -> None:
    """`count` orders with `key` into every partition (`order-<n>` when `key` is empty)."""
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", **QUIET})
    for index in range(count):
        for partition in range(PARTITIONS):
            value = f"customer-{index % 7}:{index % 5 + 1}"
            producer.produce(topic, key=(key or f"order-{index}").encode(), value=value, partition=partition)
    assert producer.flush(30) == 0


def owns_input(app: SampleApp, topic: str, client: str) -> bool:
    """Whether a stream thread of `client` owns a partition of `topic` (Kafka's own view of the group)."""
    admin = AdminClient({"bootstrap.servers": app.bootstrap, **QUIET})
    group = admin.describe_consumer_groups([app.app])[app.app].result(timeout=30)
    return any(
        member.client_id.startswith(f"{client}-StreamThread-")
        and any(p.topic == topic for p in member.assignment.topic_partitions)
        for member in group.members
    )


def wait_owns_input(app: SampleApp, topic: str, client: str, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while not owns_input(app, topic, client):
        assert time.monotonic() < deadline, f"{client} owned no partition of {topic} within {timeout} s"
        time.sleep(0.5)


def client_of(log: Path) -> str:
    """The Kafka Streams client id (`<app>-<process uuid>`, or the pod's name) an instance's log names."""
    wait_for(log, "stream-client [", 60)
    match = CLIENT.search(log.read_text(errors="replace"))
    assert match, f"no stream-client line in {log}"
    return match.group(1)


@pytest.fixture(scope="module")
def run(kafka_broker: KafkaCluster, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Run]:
    bootstrap = kafka_broker.bootstrap_servers
    name = uuid.uuid4().hex[:8]
    orders, totals = create_sample_topics(bootstrap, name, PARTITIONS)
    work = tmp_path_factory.mktemp("real-streams")
    app = SampleApp(
        app=f"shop-{name}",
        namespace="default",
        bootstrap=bootstrap,
        kubeconfig=None,
        work_dir=work,
        env={"ORDERS_TOPIC": orders, "TOTALS_TOPIC": totals, **EVERY_INSTANCE},
    )
    server_log = kafka_broker.node_log_dir(kafka_broker.node_ids[0]) / "server.log"
    result = Run(group=app.app)
    result.begin("start")
    running = "State transition from REBALANCING to RUNNING"
    try:
        # (a) shop-0 alone builds state, then two more instances join.
        first = app.start(
            "shop-0",
            bridged=False,
            extra_env={"ORDERS_FAIL_KEY": "boom", "ORDERS_EXCEPTION_RESPONSE": "REPLACE_THREAD"},
        )
        result.clients["shop-0"] = client_of(first.log)
        wait_for(first.log, running, 120)
        produce(bootstrap, orders, "", 300)
        time.sleep(5)
        result.begin("scale-out")
        slow = {
            "ORDERS_SLOW_KEY": "slow",
            "ORDERS_SLOW_MS": str(SLOW_RECORD_MS),
            "STREAMS_MAX_POLL_INTERVAL_MS": str(SLOW_POLL_INTERVAL_MS),
        }
        for pod in ("shop-1", "shop-2"):
            # shop-1 names its client after its pod, as smoothscale's bridge does: its threads' lines then
            # carry no group (`shop-1-StreamThread-1`), only its consumer's do.
            named = {"STREAMS_CLIENT_ID": pod} if pod == "shop-1" else {}
            app.start(pod, bridged=False, extra_env=slow if pod == "shop-2" else named)
        for pod in ("shop-1", "shop-2"):
            result.clients[pod] = client_of(app.instances[pod].log)
            wait_for(app.instances[pod].log, running, 120)
        wait_for(first.log, "to probe for caught-up replica tasks", 60)
        scaled = time.monotonic()
        time.sleep(3)
        # (b) shop-1 is killed.
        result.begin("kill")
        app.instances["shop-1"].kill()
        offset = wait_for(server_log, f"in group {app.app} has failed, removing it from the group", 60)
        wait_for(server_log, f"Stabilized group {app.app} generation ", 60, offset)
        # (c) shop-2 is slow over one record, once it processes orders.
        wait_owns_input(app, orders, result.clients["shop-2"], 90)
        # shop-2 comes back more than `dedup_seconds` after it first came: another incident.
        time.sleep(
            max(2.0, scaled + Thresholds().dedup_seconds - SLOW_RECORD_MS / 1000 + 5 - time.monotonic())
        )
        result.begin("poll-timeout")
        produce(bootstrap, orders, "slow", 1)
        slow_log = app.instances["shop-2"].log
        offset = wait_for(slow_log, "consumer poll timeout has expired", 60)
        wait_for(slow_log, running, 60, offset)
        # (d) shop-0's stream thread throws, and is replaced.
        wait_owns_input(app, orders, result.clients["shop-0"], 90)
        time.sleep(2)
        result.begin("thread-replaced")
        produce(bootstrap, orders, "boom", 1)
        offset = wait_for(first.log, "Replacing thread in the streams uncaught exception handler", 60)
        wait_for(first.log, running, 60, offset)
        time.sleep(2)
        result.begin("after")
        # The broker and the instances go on writing (sessions expire after a stop): analyze copies.
        copies = tmp_path_factory.mktemp("real-streams-logs")
        for path in [server_log, *(i.log for i in app.instances.values())]:
            copy = copies / f"{path.parent.name}-{path.name}"
            copy.write_bytes(path.read_bytes())
            result.logs.append(copy)
    finally:
        app.stop_all()
    yield result


@pytest.fixture(scope="module")
def result(spark: Any, run: Run, tmp_path_factory: pytest.TempPathFactory) -> AnalyzeResult:
    logs = [str(path) for path in run.logs]
    return analyze(spark, AnalyzeInputs(journals=[], logs=logs, out=tmp_path_factory.mktemp("analyze")))


def consumer(run: Run, pod: str, thread: int = 1) -> str:
    """The client id of a pod's stream thread's consumer, as the group knows it."""
    return f"{run.clients[pod]}-StreamThread-{thread}-consumer"


def step_of(run: Run, ts: datetime) -> str:
    """The step during which `ts` fell (steps follow each other without gaps); "" outside them all."""
    return next((name for name, (start, end) in run.steps.items() if start <= ts <= end), "")


def test_every_log_is_read_whole(result: AnalyzeResult, run: Run) -> None:
    """Every line of the broker's and the instances' logs is a log line, part of a multi-line record or
    blank, and every line about the group's membership is recognised."""
    assert len(result.inputs) == len(run.logs)
    for counts in result.inputs:
        assert (counts["unknown"], counts["unrecognised"]) == (0, 0), counts
        assert counts["recognised"] > 0, counts


def test_each_incident_at_its_time_with_its_members(result: AnalyzeResult, run: Run) -> None:
    # How many probing rebalances the warmups take depends on how fast they catch up here: not asserted.
    diagnosed = (
        result.tables["diagnoses"]
        .where(f"group = '{run.group}' AND kind NOT IN ('regular-probing', 'endless-probing')")
        .collect()
    )
    found = sorted((step_of(run, d["ts"]), d["kind"], sorted(d["members"])) for d in diagnosed)
    # A broker that has just started may still be loading the group's offsets partition when shop-0 first
    # joins ("JoinGroup failed: Coordinator ... is loading the group"): a coordinator incident of the start,
    # rightly diagnosed, and none of the four.
    found = [f for f in found if f[:2] != ("start", "coordinator-loss")]
    first, joined, slow = (consumer(run, pod) for pod in ("shop-0", "shop-1", "shop-2"))
    replacement = consumer(run, "shop-0", 2)
    # The coordinator picks the new leader among the members that rejoined: either will do.
    changes = [members for _, kind, members in found if kind == "leader-change"]
    assert len(changes) == 1 and set(changes[0]) - {first} <= {slow, replacement}, changes
    # The newcomers of the scale-out, the killed instance's departure and the thread swapped for another
    # are no churn: the group grew, shrank, or changed once. Both newcomers left again within the churn
    # window (one killed, one past its poll timeout): each departure is its own incident, with its part
    # of the churn folded in.
    assert found == sorted(
        [
            ("kill", "heartbeat-expiration", [joined]),
            # The slow thread found out when it committed that it had been fenced, and rejoined: one incident.
            ("poll-timeout", "poll-timeout", [slow]),
            ("thread-replaced", "thread-replacement", [run.clients["shop-0"]]),
            ("thread-replaced", "leader-change", changes[0]),
            # A Streams consumer does not leave the group when its thread stops: the coordinator drops
            # the dead thread's member when its session expires.
            ("thread-replaced", "heartbeat-expiration", [first]),
        ]
    )
    (poll,) = [d for d in diagnosed if d["kind"] == "poll-timeout"]
    assert "with it, fencing: " in poll["detail"] and f"{slow} left at " in poll["detail"]


def test_the_rebalance_table(result: AnalyzeResult, run: Run) -> None:
    rows = result.tables["generations"].where(f"group = '{run.group}'").orderBy("generation").collect()
    table = [r.asDict() for r in rows]
    first, joined, slow = (consumer(run, pod) for pod in ("shop-0", "shop-1", "shop-2"))
    replacement = consumer(run, "shop-0", 2)
    assert [r["generation"] for r in table] == list(range(1, len(table) + 1))
    for row in table:  # every generation completed, seen by the coordinator, its members and its leader
        assert row["end"] is not None and row["duration_s"] is not None, row
        assert set(row["sources"]) == {"broker", "client", "leader"}, row
        assert row["member_count"] == len(row["members"]), row

    def at(step: str, reason: str) -> dict[str, Any]:
        (row,) = [r for r in table if step_of(run, r["start"]) == step and reason in (r["reason"] or "")]
        return row

    # The scale-out's generations are those it completed: one that began just before the kill (a follow-up
    # or a probe) waits for the killed member until its session expires, and completes without it.
    scaled = [r for r in table if step_of(run, r["end"]) == "scale-out"]
    assert [r["member_count"] for r in scaled] == sorted(r["member_count"] for r in scaled)
    assert set(scaled[-1]["members"]) == {first, joined, slow}
    # The first generation without the killed instance's member. Its session expires in a stable group,
    # which rebalances for it; on a loaded machine a probing rebalance may be under way as it expires, and
    # the coordinator removes it within that one, which keeps its own reason.
    after = [r for r in table if r["generation"] > scaled[-1]["generation"]]
    expired = next(r for r in after if joined not in r["members"])
    assert set(expired["members"]) == {first, slow}, expired
    reason = expired["reason"] or ""  # the coordinator names the member by its id: `<client id>-<uuid>`
    named = f"removing member {joined}-" in reason and "on heartbeat expiration" in reason
    assert named or "removing" not in reason, expired
    left = at("poll-timeout", f"LeaveGroup` request for ({slow}")
    assert left["members"] == [first]
    back = at("poll-timeout", f"Adding new member {slow}")
    assert set(back["members"]) == {first, slow}
    replaced = at("thread-replaced", f"Adding new member {replacement}")
    assert set(replaced["members"]) == {slow, replacement} and replaced["leader"] != first
    # The group waited for the dead thread's member until its session expired.
    assert replaced["duration_s"] >= SESSION_TIMEOUT_MS / 1000 - 1
    assert all(r["leader"] == first for r in table if r["generation"] < replaced["generation"])


def test_the_leader_schedules_a_probing_rebalance_for_the_warmups(result: AnalyzeResult, run: Run) -> None:
    """Kafka Streams 4.x writes when the probing rebalance is due as a date; it is read as epoch ms."""
    probes = result.tables["log_incidents"].where("kind = 'probing-scheduled'").collect()
    scale_out = [p for p in probes if step_of(run, p["ts"]) == "scale-out"]
    assert scale_out, probes
    for probe in scale_out:
        assert probe["member"] == consumer(run, "shop-0") and probe["group"] == run.group
        ahead_ms = probe["scheduled_ms"] - probe["ts"].replace(tzinfo=UTC).timestamp() * 1000
        assert PROBING_INTERVAL_MS - 1000 <= ahead_ms <= PROBING_INTERVAL_MS, probe
    joins = result.tables["rebalances"].where(f"group = '{run.group}' AND source = 'assignor'").collect()
    assert any(step_of(run, r["ts"]) == "scale-out" and (r["nodes"], r["consumers"]) == (3, 3) for r in joins)
