"""One row per incident: the deduplicated findings of `diagnoses`, worded as incidents and folded together
when several kinds show one cause.

Four steps, on the driver over the few rows of diagnoses (plain Python):
- `repeated_enough`: findings that count only when repeated (a member's SyncGroup storm, coordinator loop,
  failure to store the group's assignment) are dropped below their minimum;
- `gathered`: the members of a group that repeated them together are one incident;
- `described`: incidents of many lines or members get one sentence that counts and names them (a mass
  session expiry names every member);
- `folded`: a finding that another one explains is merged into it, its lines cited there: a rebalance
  storm or rejoin loop caused by the coordinator failing to store the assignment, the members' coordinator
  loop during it, the fencing and failed commits of a member that exceeded max.poll.interval.ms, the churn of
  members whose departure an expiration or a poll timeout explains.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from smoothscale.pipeline.churn import client_id

# (the finding that explains, the findings it explains, whether they must be about its members)
FOLDS: tuple[tuple[str, tuple[str, ...], bool], ...] = (
    (
        "assignment-store-failure",
        ("sync-storm", "rejoin-loop", "closely-grouped", "coordinator-loop", "coordinator-loss",
         "never-stabilised", "slow-rebalance", "leader-change"),
        False,
    ),
    ("coordinator-loop", ("rejoin-loop", "closely-grouped", "never-stabilised", "coordinator-loss"), False),
    ("sync-storm", ("rejoin-loop", "closely-grouped"), False),
    ("static-member-blocked", ("heartbeat-expiration", "membership-churn", "fencing"), True),
    ("poll-timeout", ("fencing", "commit-failed", "membership-churn"), True),
    ("commit-failed", ("slow-rebalance",), False),
    ("heartbeat-expiration", ("membership-churn",), True),
    ("fencing", ("commit-failed", "membership-churn"), True),
    ("thread-death", ("membership-churn",), True),
    ("client-shutdown", ("membership-churn",), True),
    ("slow-rebalance", ("heartbeat-expiration",), False),
)  # fmt: skip


# The members of these stay their own: the slow rebalance failed commits explain went on with the others.
KEEP_MEMBERS = frozenset({"commit-failed"})
# Findings about each of their members on its own: a churn incident names every member that came and went
# in one stretch of time, each for its own reason (one killed, another past its poll timeout), so what
# explains one member takes that member's part, and the churn is gone once every member's part is taken.
BY_EACH_MEMBER = frozenset({"membership-churn"})


@dataclass(frozen=True, slots=True)
class Minimums:
    sync_storm: int
    coordinator_loop: int
    assignment_store_failure: int
    slack_s: float  # how far apart two findings may be and still be one incident


def member_key(member: str) -> str:
    """One name per member: the client id without a consumer suffix (as `member_incidents.member_key`)."""
    return re.sub(r"-(?:restore-)?consumer$", "", client_id(member))


def _span(row: Mapping[str, Any]) -> str:
    return f"{(row['end_ts'] - row['ts']).total_seconds():.1f} s"


def _named(members: Iterable[str]) -> str:
    return ", ".join(members) or "members not named"


# Counted per member (one failure each, as when a broker restarts, is no incident); the members of a group
# that reached the minimum together are then one incident.
PER_MEMBER = ("sync-storm", "coordinator-loop", "assignment-store-failure")


def repeated_enough(rows: Iterable[dict[str, Any]], least: Minimums) -> list[dict[str, Any]]:
    minimum = {
        "sync-storm": least.sync_storm,
        "coordinator-loop": least.coordinator_loop,
        "assignment-store-failure": least.assignment_store_failure,
    }
    return [row for row in rows if row["occurrences"] >= minimum.get(row["kind"], 1)]


def gathered(rows: list[dict[str, Any]], slack_s: float) -> list[dict[str, Any]]:
    """The PER_MEMBER incidents of a group that overlap in time, as one incident naming their members."""
    gone: set[int] = set()
    for a in rows:
        if a["kind"] not in PER_MEMBER or id(a) in gone:
            continue
        for b in rows:
            if b is a or id(b) in gone or (b["kind"], b["group"]) != (a["kind"], a["group"]):
                continue
            if _overlap(a, b, slack_s):
                gone.add(id(b))
                a["ts"], a["end_ts"] = min(a["ts"], b["ts"]), max(a["end_ts"], b["end_ts"])
                a["members"] = sorted({*a["members"], *b["members"]})
                a["evidence"] = sorted({*a["evidence"], *b["evidence"]})
                a["occurrences"] += b["occurrences"]
    return [row for row in rows if id(row) not in gone]


def described(rows: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """Incidents of many lines or members in one sentence that counts and names them."""
    kept = []
    for row in rows:
        kind, n = row["kind"], row["occurrences"]
        first = row["detail"].split("; ")[0]
        if kind == "sync-storm":
            row["detail"] = (
                f"{n} rebalance rounds failed in {_span(row)} (JoinGroup/SyncGroup): rebalance after"
                f" rebalance failed before the members got their assignment ({first});"
                f" members: {_named(row['members'])}"
            )
        elif kind == "coordinator-loop":
            row["detail"] = (
                f"{n} lines in {_span(row)} show members losing their group coordinator and finding it again"
                f" at once ({first}): they loop on NOT_COORDINATOR / COORDINATOR_NOT_AVAILABLE instead of"
                " joining (the coordinator moves or cannot load the group);"
                f" members: {_named(row['members'])}"
            )
        elif kind == "assignment-store-failure":
            row["detail"] = (
                f"the coordinator failed {n} times in {_span(row)} to store the group's assignment ({first}):"
                " every SyncGroup fails and the members rejoin, rebalance after rebalance. The coordinator"
                " answers COORDINATOR_NOT_AVAILABLE when its __consumer_offsets partition cannot take the"
                " write"
                " (NOT_ENOUGH_REPLICAS: fewer in-sync replicas than min.insync.replicas);"
                f" members: {_named(row['members'])}"
            )
        elif kind == "heartbeat-expiration" and len(row["members"]) > 1:
            row["detail"] = (
                f"{len(row['members'])} members missed their heartbeats within {_span(row)} (session timeout)"
                f" and the coordinator removed them all: {_named(row['members'])}"
            )
        elif kind == "commit-failed":
            members = len(row["members"]) or "its"
            row["detail"] = (
                f"the commits of {members} members failed in {_span(row)} ({n} lines) because the group"
                f" had rebalanced without them ({first}): they took longer than max.poll.interval.ms between"
                " polls or were removed; the records they processed since their last commit are processed"
                f" again; members: {_named(row['members'])}"
            )
        elif kind == "static-member-blocked" and n > 1:
            row["detail"] = f"{first} ({n} failed attempts in {_span(row)})"
        kept.append(row)
    return kept


def _overlap(a: Mapping[str, Any], b: Mapping[str, Any], slack_s: float) -> bool:
    slack = timedelta(seconds=slack_s)
    return bool(b["ts"] <= a["end_ts"] + slack and b["end_ts"] >= a["ts"] - slack)


def _among_members(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    """`b` is about members of `a` (or names none: a count that changed)."""
    return {member_key(m) for m in b["members"]} <= {member_key(m) for m in a["members"]}


def _take_part(a: dict[str, Any], b: dict[str, Any]) -> None:
    """Moves the part of `b` (BY_EACH_MEMBER) about `a`'s members into `a`: the members, the sentences of
    `b`'s detail that name them, `b`'s lines (they show both parts)."""
    ours = {member_key(m) for m in a["members"]}
    taken = [m for m in b["members"] if member_key(m) in ours]
    if not taken:
        return
    b["members"] = [m for m in b["members"] if member_key(m) not in ours]
    head, _, rest = b["detail"].partition(": ")
    about = [part for part in rest.split("; ") if any(m in part for m in taken)]
    a["detail"] += f"; with it, {b['kind']}: {head}: {'; '.join(about) or _named(taken)}"
    left = [part for part in rest.split("; ") if any(m in part for m in b["members"])]
    b["detail"] = f"{head}: " + "; ".join(left)
    a["evidence"] = list(dict.fromkeys([*a["evidence"], *b["evidence"]]))
    a["end_ts"] = max(a["end_ts"], b["end_ts"])


def folded(rows: list[dict[str, Any]], slack_s: float) -> list[dict[str, Any]]:
    """`rows` with each finding another explains merged into that one (FOLDS, in order)."""
    gone: set[int] = set()
    for explaining, explained, by_member in FOLDS:
        for a in rows:
            if a["kind"] != explaining or id(a) in gone:
                continue
            for b in rows:
                if b is a or b["kind"] not in explained or id(b) in gone or b["group"] != a["group"]:
                    continue
                if not _overlap(a, b, slack_s):
                    continue
                if by_member and not _among_members(a, b):
                    if b["kind"] in BY_EACH_MEMBER:
                        _take_part(a, b)
                        if not b["members"]:
                            gone.add(id(b))
                    continue
                gone.add(id(b))
                a["evidence"] = list(dict.fromkeys([*a["evidence"], *b["evidence"]]))
                a["end_ts"] = max(a["end_ts"], b["end_ts"])
                a["detail"] += f"; with it, {b['kind']}: {b['detail']}"
                a["occurrences"] += b["occurrences"]
                if not by_member and explaining not in KEEP_MEMBERS:
                    a["members"] = sorted({*a["members"], *b["members"]})
    return [row for row in rows if id(row) not in gone]


def one_per_incident(rows: Iterable[dict[str, Any]], least: Minimums) -> list[dict[str, Any]]:
    return folded(described(gathered(repeated_enough(rows, least), least.slack_s)), least.slack_s)
