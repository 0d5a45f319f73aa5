"""The log lines exactly as the rebalancing guide (seed 003) quotes them: each is recognised as its kind
with its fields, lines stamped with a time only are read on `--log-date`, and lines of other formats are
counted as skipped or unknown."""

from __future__ import annotations

import re
from datetime import datetime
from typing import Any

import pytest
from pyspark.sql import functions as F

from smoothscale.pipeline import log_lines

NODE = "otter-app-225712b8-b54d-4043-a7e1-c489ee4f8fd5"
LEADER = f"{NODE}-StreamThread-2-consumer"
CLIENT = f"[Consumer clientId={NODE}-StreamThread-1-consumer, groupId=otter-app]"
MEMBER = f"{NODE}-StreamThread-1-consumer-7f45268d-547c-47ed-a835-48e7d1503b0f"

# (line, kind, fields expected)
GUIDE_LINES: list[tuple[str, str, dict[str, Any]]] = [
    (
        f"[11:08:54,694] INFO stream-thread [{LEADER}] 2 client nodes and 4 consumers participating in this"
        " rebalance:",
        "participating",
        {"member": LEADER, "group": "otter-app", "nodes": 2, "consumers": 4},
    ),
    (
        f"[11:10:57,345] INFO {CLIENT} SyncGroup failed: The group began another rebalance. Need to re-join"
        f" the group. Sent generation was Generation{{generationId=742, memberId='{MEMBER}',"
        " protocol='stream'}"
        " (org.apache.kafka.clients.consumer.internals.ConsumerCoordinator:826)",
        "sync-failed",
        {"group": "otter-app", "generation": 742},
    ),
    (
        "[11:00:00,001] INFO [GroupCoordinator 1]: Preparing to rebalance group otter-app in state"
        " PreparingRebalance with old generation 741 (__consumer_offsets-7) (reason: removing member"
        f" {MEMBER} on heartbeat expiration)",
        "rebalance-start",
        {"group": "otter-app", "generation": 741},
    ),
    (
        f"[11:00:00,002] INFO {CLIENT} Request joining group due to: rebalance failed due to 'The group"
        " member needs to have a valid member id before actually entering a consumer group.'"
        " (MemberIdRequiredException)",
        "join-request",
        {"group": "otter-app"},
    ),
    (
        f"[11:00:00,003] INFO [GroupCoordinator 1]: Member {MEMBER} in group otter-app has failed, removing"
        " it from the group",
        "heartbeat-expired",
        {"member": MEMBER, "group": "otter-app"},
    ),
    (
        f"[11:00:00,004] INFO {CLIENT} session timed out without receiving a heartbeat response",
        "heartbeat-expired",
        {"group": "otter-app"},
    ),
    (
        f"[11:00:00,005] WARN {CLIENT} Member {MEMBER} sending LeaveGroup request to coordinator due to"
        " consumer poll timeout has expired.",
        "poll-timeout",
        {"reason": "consumer poll timeout has expired"},
    ),
    (
        f"[11:00:00,006] INFO {CLIENT} Member {MEMBER} sending LeaveGroup request to coordinator due to the"
        " consumer is being closed",
        "leave-group",
        {"reason": "the consumer is being closed"},
    ),
    (
        f"[11:00:00,007] INFO stream-thread [{LEADER}] Requesting followup rebalance be scheduled by {LEADER}"
        " for 1700000600000 to probe for caught-up replica tasks.",
        "probing-scheduled",
        {"scheduled_ms": 1700000600000},
    ),
    (
        f"[11:00:00,008] INFO stream-thread [{LEADER}] Requesting followup rebalance be scheduled immediately"
        f" by {LEADER} due to tasks changing ownership.",
        "followup-scheduled",
        {"reason": "tasks changing ownership"},
    ),
    (
        "[11:00:00,009] INFO stream-thread [otter-app-225712b8-b54d-4043-a7e1-c489ee4f8fd5-StreamThread-1]"
        " Triggering the followup rebalance scheduled for 1700000600000",
        "followup-triggered",
        {"scheduled_ms": 1700000600000},
    ),
    (
        "[11:00:00,010] ERROR stream-thread [otter-app-225712b8-b54d-4043-a7e1-c489ee4f8fd5-StreamThread-1]"
        " Replacing thread in the streams uncaught exception handler",
        "thread-replaced",
        {"group": "otter-app"},
    ),
    (
        "[11:00:00,011] ERROR stream-client [otter-app-225712b8-b54d-4043-a7e1-c489ee4f8fd5] Detected that"
        " shutdown was requested. All clients in this app will now begin to shutdown",
        "shutdown-requested",
        {"group": "otter-app"},
    ),
]
OTHER = ["[11:00:01,000] INFO something else entirely", "\tat org.apache.kafka.Foo(Foo.java:1)", ""]


def test_every_pattern_matches_its_own_guide_line_in_python_too() -> None:
    """The regexes are written for Java and Python alike: a quick check without Spark."""
    for line, kind, _ in GUIDE_LINES:
        patterns = [p for p in log_lines.PATTERNS if p.marker in line]
        assert patterns and patterns[0].kind == kind, line
        assert re.search(patterns[0].regex, line), line


@pytest.fixture(scope="module")
def parsed(spark: Any) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    lines = [line for line, _, _ in GUIDE_LINES] + OTHER
    rows = [("guide.log", n, text) for n, text in enumerate(lines, start=1)]
    frame = log_lines.with_shape(
        log_lines.with_pattern(spark.createDataFrame(rows, "file string, line long, value string"))
    )
    found = [r.asDict() for r in log_lines.incidents(frame, "2026-11-21").orderBy("line").collect()]
    counts = frame.agg(*[F.sum(F.col(c).cast("int")).alias(c) for c in ("timestamped", "blank")]).first()
    return found, counts.asDict() if counts is not None else {}


def test_the_guide_lines_are_recognised_with_their_fields(parsed: Any) -> None:
    found, _ = parsed
    assert [f["kind"] for f in found] == [kind for _, kind, _ in GUIDE_LINES]
    for row, (_, _, fields) in zip(found, GUIDE_LINES, strict=True):
        assert {k: row[k] for k in fields} == fields
    assert found[0]["ts"] == datetime(2026, 11, 21, 11, 8, 54, 694000)


def test_other_lines_are_counted_not_recognised(parsed: Any) -> None:
    _, counts = parsed
    # Every guide line and the first of OTHER are log lines; the stack trace line is not; one is blank.
    assert counts == {"timestamped": len(GUIDE_LINES) + 1, "blank": 1}


# Layouts and wordings met in logs users paste (issue 38's corpus), with names made up: each is recognised
# with its time (null: the line has none) and its member and group.
WORLD_LINES: list[tuple[str, str, datetime | None, dict[str, Any]]] = [
    (  # `grep -n` output: the line number before Kafka's own layout
        "20591:[2020-06-29 19:49:14,212] INFO [GroupCoordinator 0]: Member rdkafka-1 in group orders has"
        " failed, removing it from the group (kafka.coordinator.group.GroupCoordinator)",
        "heartbeat-expired",
        datetime(2020, 6, 29, 19, 49, 14, 212000),
        {"member": "rdkafka-1", "group": "orders"},
    ),
    (  # the group's name redacted and run into `group`
        "2023-10-05 15:07:33,882 INFO [GroupCoordinator 3]: Member *** in group*** has failed, removing it"
        " from the group (kafka.coordinator.group.GroupCoordinator) [executor-Heartbeat]",
        "heartbeat-expired",
        datetime(2023, 10, 5, 15, 7, 33, 882000),
        {"member": "***", "group": "***"},
    ),
    (  # a member's own line quoted without the consumer's prefix or a stamp
        "Member consumer-B-2-05ba sending LeaveGroup request to coordinator broker:9092 (id: 2147483645 rack:"
        " null) due to consumer poll timeout has expired. This means the time between subsequent calls",
        "poll-timeout",
        None,
        {"member": "consumer-B-2-05ba"},
    ),
    (  # before 2.0: the group at the end of the line, log4j's short layout
        "2019-02-28 22:06:19 INFO  AbstractCoordinator:542 - Marking the coordinator 10.0.0.1:9092 (id:"
        " 2147483645 rack: null) dead for group rest-api",
        "coordinator-lost",
        datetime(2019, 2, 28, 22, 6, 19),
        {"member": "rest-api", "group": "rest-api"},
    ),
    (
        "2019-02-28 22:06:20 INFO  AbstractCoordinator:505 - Discovered coordinator 10.0.0.1:9092 (id:"
        " 2147483645 rack: null) for group rest-api.",
        "coordinator-found",
        datetime(2019, 2, 28, 22, 6, 20),
        {"member": "rest-api", "group": "rest-api"},
    ),
    (  # java.util.Date's text, as an application prints it
        "Wed Feb 10 22:14:31 GMT 2021 server Exception CONNECTOR-0017 An unexpected error: error message is"
        " org.apache.kafka.clients.consumer.CommitFailedException: Offset commit cannot be completed since"
        " the consumer is not part of an active group for auto partition assignment; it is likely that the"
        " consumer was kicked out of the group.",
        "commit-failed",
        datetime(2021, 2, 10, 22, 14, 31),
        {},
    ),
    # java.util.logging: the header line, then the message with the header's time
    (
        "Jul 17, 2026 1:50:29 PM org.apache.kafka.clients.consumer.internals.AbstractCoordinator$X onSuccess",
        "",
        None,
        {},
    ),
    (
        "INFO: [Consumer clientId=consumer-orders-1, groupId=orders] Discovered group coordinator"
        " localhost:9092 (id: 2147483646 rack: null)",
        "coordinator-found",
        datetime(2026, 7, 17, 13, 50, 29),
        {"member": "consumer-orders-1", "group": "orders"},
    ),
]


def test_real_world_layouts_and_wordings_are_read(spark: Any) -> None:
    rows = [("world.log", n, line) for n, (line, *_) in enumerate(WORLD_LINES, start=1)]
    frame = log_lines.with_shape(
        log_lines.with_pattern(spark.createDataFrame(rows, "file string, line long, value string"))
    )
    found = {r["line"]: r.asDict() for r in log_lines.incidents(frame, "2026-11-21").collect()}
    for n, (line, kind, ts, fields) in enumerate(WORLD_LINES, start=1):
        if not kind:
            assert n not in found, line
            continue
        row = found[n]
        assert (row["kind"], row["ts"]) == (kind, ts), line
        assert {k: row[k] for k in fields} == fields, line
