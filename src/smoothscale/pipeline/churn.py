"""Membership churn: members that leave a group and come back, or come and go again, within a window.

A group's membership changes at each rebalance. Growth (members joining in a scale-out) and shrinking
(members leaving in a scale-in, or dropped when they die) are not churn, and neither is one rebalance that
swaps a member for another (a pod replaced while the group rebalances): the group changed once. Churn is
the group changing back within `window_s`:
- when both rebalances list their members: a member that left comes back (same client id: a restarted pod
  with a stable `client.id`, a consumer rejoining after a poll timeout), or a member that joined leaves again;
- when either only gives a count: the count going down then up again (or up then down).

The changes come from the leaders' listings and from the rebalance table (both may show the same change: the
churn they show is merged into one incident). This runs on the driver over the few rows of successive
rebalances, as plain Python.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from smoothscale.pipeline.log_layouts import UUID

_MEMBER_ID = re.compile("-" + UUID + "$")


def client_id(member: str) -> str:
    """A member id (`<client id>-<uuid>`) as its client id (the same rule as `generations.client_id`)."""
    return _MEMBER_ID.sub("", member)


@dataclass(frozen=True)
class Change:
    group: str
    ts: datetime
    left: frozenset[str]
    joined: frozenset[str]
    listed: bool  # both rebalances listed their members
    delta: int  # members after minus before (0 when unknown)
    before: str  # the counts, as the detail words them
    after: str
    cites: tuple[str, ...]


def _count(row: Mapping[str, Any], prefix: str) -> int | None:
    for name in ("consumers", "nodes"):
        value = row.get(prefix + name)
        if value is not None:
            return int(value)
    members = row.get(prefix + "members")
    return len(members) if members else None


def _words(row: Mapping[str, Any], prefix: str) -> str:
    nodes, consumers = row.get(prefix + "nodes"), row.get(prefix + "consumers")
    consumers_text = "?" if consumers is None else str(consumers)
    return f"{consumers_text} members" if nodes is None else f"{nodes} nodes / {consumers_text} consumers"


def changes(pairs: Iterable[Mapping[str, Any]]) -> list[Change]:
    """The membership changes among successive rebalances (rows of `diagnoses._successive`)."""
    found = []
    for row in pairs:
        before = frozenset(client_id(m) for m in row.get("prev_members") or [])
        after = frozenset(client_id(m) for m in row.get("members") or [])
        listed = bool(before) and bool(after)
        count_before, count_after = _count(row, "prev_"), _count(row, "")
        delta = count_after - count_before if count_before is not None and count_after is not None else 0
        left, joined = (before - after, after - before) if listed else (frozenset(), frozenset())
        if not left and not joined and delta == 0:
            continue
        found.append(
            Change(
                group=row["group"],
                ts=row["ts"],
                left=left,
                joined=joined,
                listed=listed,
                delta=delta,
                before=_words(row, "prev_"),
                after=_words(row, ""),
                cites=(row["prev_cite"], row["cite"]),
            )
        )
    return found


def _back_and_forth(earlier: Change, later: Change) -> tuple[set[str], str] | None:
    """The members (and words) by which `later` undoes `earlier`, if it does."""
    if earlier.listed and later.listed:
        back, went = set(later.joined & earlier.left), set(later.left & earlier.joined)
        if back:
            return (
                back,
                f"{', '.join(sorted(back))} left at {earlier.ts:%H:%M:%S}"
                f" and came back at {later.ts:%H:%M:%S}",
            )
        if went:
            return (
                went,
                f"{', '.join(sorted(went))} came at {earlier.ts:%H:%M:%S}"
                f" and left again at {later.ts:%H:%M:%S}",
            )
        return None
    if earlier.delta * later.delta < 0:
        return set(), (
            f"the group went from {earlier.before} to {earlier.after} at {earlier.ts:%H:%M:%S} and from"
            f" {later.before} to {later.after} at {later.ts:%H:%M:%S}"
        )
    return None


def churn(pairs: Iterable[Mapping[str, Any]], window_s: float, merge_s: float) -> list[dict[str, Any]]:
    """`membership-churn` incidents, in the columns of the diagnoses table: each back-and-forth within
    `window_s`; those of a group less than `merge_s` apart (or overlapping) are one incident."""
    by_group: dict[str, list[Change]] = {}
    for change in sorted(changes(pairs), key=lambda c: (c.group, c.ts)):
        by_group.setdefault(change.group, []).append(change)
    incidents: list[dict[str, Any]] = []
    for group, seen in by_group.items():
        found = []
        for i, later in enumerate(seen):
            for earlier in seen[:i]:
                if (later.ts - earlier.ts).total_seconds() > window_s or later.ts == earlier.ts:
                    continue
                undone = _back_and_forth(earlier, later)
                if undone is not None:
                    found.append((earlier, later, *undone))
                    break
        incidents += _merged(group, found, merge_s)
    return incidents


def _merged(
    group: str, found: Sequence[tuple[Change, Change, set[str], str]], merge_s: float
) -> list[dict[str, Any]]:
    merged: list[dict[str, Any]] = []
    for earlier, later, members, words in sorted(found, key=lambda f: f[0].ts):
        last = merged[-1] if merged else None
        if last is not None and (earlier.ts - last["end_ts"]).total_seconds() <= merge_s:
            last["end_ts"] = max(last["end_ts"], later.ts)
            last["members"] = sorted(set(last["members"]) | members)
            if words not in last["detail"]:
                last["detail"] += "; " + words
            last["evidence"] = list(dict.fromkeys(last["evidence"] + [*earlier.cites, *later.cites]))
            last["occurrences"] += 1
            continue
        merged.append(
            {
                "group": group,
                "kind": "membership-churn",
                "ts": earlier.ts,
                "end_ts": later.ts,
                "members": sorted(members),
                "interval_s": (later.ts - earlier.ts).total_seconds(),
                "detail": "membership churn: " + words,
                "evidence": list(dict.fromkeys([*earlier.cites, *later.cites])),
                "occurrences": 1,
            }
        )
    return merged
