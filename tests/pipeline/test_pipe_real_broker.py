"""`analyze` on what real Kafka 4.3.1 brokers and clients log through the incidents of
`pipe_broker_scenarios` (run side by side, on the test run's broker and three-broker cluster), analysed
together as one folder of logs, each incident asserted by kind, time and members:

- a killed consumer whose session expires: the expiration is found with the killed member and after the
  kill, and the rebalance table holds the group's generations with their member counts, leader and reason,
  from the coordinator's lines;
- a replaced static member refused while the killed one holds its instance id: one incident naming both;
- Kafka's Java consumer committing after its poll timeout expired: one poll-timeout incident of that
  member, the failed commit folded into it;
- the coordinator failing to store assignments (three brokers, one stopped, `min.insync.replicas=3` on
  `__consumer_offsets`): one incident during the failing rounds, naming the member whose SyncGroup the
  coordinator names.
"""

from __future__ import annotations

import uuid
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta
from typing import Any

import pytest
from pipe_broker_scenarios import (
    FAILED_ROUNDS,
    MAX_POLL_INTERVAL_MS,
    PROCESSING_MS,
    SESSION_TIMEOUT_MS,
    commit_after_poll_timeout,
    expire_then_leave,
    fail_to_store_assignments,
    replace_static_member,
    server_log,
)

from smoothscale.pipeline.analyze import AnalyzeInputs, AnalyzeResult, analyze
from smoothscale.sandbox.kafka.broker import KafkaCluster

pytestmark = pytest.mark.slow

STOPPED = 3  # the node of the three-broker cluster that the store failure stops


@pytest.fixture(scope="module")
def rebalanced(
    kafka_broker: KafkaCluster, kafka_racks: KafkaCluster, tmp_path_factory: pytest.TempPathFactory
) -> dict[str, Any]:
    """Runs the scenarios side by side; what happened in each, and copies of the logs they wrote: the
    broker's log whole (every line it wrote in the test run is read), the three-broker cluster's from the
    store failure's start to the group's recovery (then the members close, and the stopped broker restarts).
    The brokers go on writing: copies are analysed."""
    run = uuid.uuid4().hex[:8]
    work = tmp_path_factory.mktemp("real-broker")
    brokers = [server_log(kafka_broker, node) for node in kafka_broker.node_ids]
    racks = [server_log(kafka_racks, node) for node in kafka_racks.node_ids]
    written = {log: log.stat().st_size for log in racks}
    consumer_log = work / "slow-consumer.log"
    with ThreadPoolExecutor(max_workers=3) as pool:
        store = pool.submit(fail_to_store_assignments, kafka_racks, run, STOPPED)
        commit = pool.submit(commit_after_poll_timeout, kafka_broker, run, consumer_log)
        expired = expire_then_leave(kafka_broker, run)
        static = replace_static_member(kafka_broker, run)
        happened = {**expired, "static": static, "commit": commit.result(), "store": store.result()}
    logs = [consumer_log]
    ends = happened["store"]["ends"]
    for index, log in enumerate(brokers + racks):
        logs.append(work / f"{index}-{log.parent.parent.name}-{log.parent.name}.log")
        logs[-1].write_bytes(whole_lines(log.read_bytes(), written.get(log, 0), ends.get(log)))
    return {**happened, "logs": logs}


def whole_lines(data: bytes, start: int, end: int | None) -> bytes:
    """The lines of `data` that lie wholly between byte offsets `start` and `end` (None: the end)."""
    part = data[:end]
    first = 0 if start == 0 else part.find(b"\n", start - 1) + 1
    return part[first : part.rfind(b"\n") + 1]


@pytest.fixture(scope="module")
def result(spark: Any, rebalanced: dict[str, Any], tmp_path_factory: pytest.TempPathFactory) -> AnalyzeResult:
    logs = [str(log) for log in rebalanced["logs"]]
    inputs = AnalyzeInputs(journals=[], logs=logs, out=tmp_path_factory.mktemp("analyze"))
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


def test_every_log_is_read_whole(result: AnalyzeResult, rebalanced: dict[str, Any]) -> None:
    assert len(result.inputs) == len(rebalanced["logs"])
    for counts in result.inputs:
        assert counts["unknown"] == 0 and counts["unrecognised"] == 0, counts
        assert counts["readable"] == 1.0, counts


def diagnosed(result: AnalyzeResult, group: str) -> list[dict[str, Any]]:
    return [r.asDict() for r in result.tables["diagnoses"].where(f"group = '{group}'").collect()]


def test_a_commit_after_the_poll_timeout_is_one_incident_of_the_slow_member(
    result: AnalyzeResult, rebalanced: dict[str, Any]
) -> None:
    commit = rebalanced["commit"]
    log = rebalanced["logs"][0].read_text()
    # The real client's own wording, which the analysis reads.
    assert "consumer poll timeout has expired" in log
    assert "CommitFailedException: Offset commit cannot be completed since the consumer" in log
    (incident,) = diagnosed(result, commit["group"])
    assert (incident["kind"], incident["members"]) == ("poll-timeout", [commit["client"]]), incident
    expired = commit["processing"] + timedelta(milliseconds=MAX_POLL_INTERVAL_MS)
    done = commit["processing"] + timedelta(milliseconds=PROCESSING_MS)
    assert expired - timedelta(seconds=1) <= incident["ts"] <= done, (incident, commit)
    assert "commit" in incident["detail"], incident


def test_the_coordinator_failing_to_store_assignments_is_one_incident(
    result: AnalyzeResult, rebalanced: dict[str, Any]
) -> None:
    store = rebalanced["store"]
    # The members' rejoining is no incident of its own: the failing rounds explain it.
    (failure,) = diagnosed(result, store["group"])
    assert failure["kind"] == "assignment-store-failure", failure
    assert store["failing"] <= failure["ts"] <= store["restored"], (failure, store)
    assert failure["occurrences"] >= FAILED_ROUNDS
    # The coordinator names the member whose SyncGroup stored the assignment: the group's leader.
    assert len(failure["members"]) == 1 and failure["members"][0] in store["clients"], failure
    assert "COORDINATOR_NOT_AVAILABLE" in failure["detail"], failure
