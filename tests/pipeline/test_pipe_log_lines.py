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
