"""The rules of docs/log-analysis.md as data: which membership changes are churn, and how findings become
one row per incident (no Spark: both run on the driver over the few rows of diagnoses)."""

from __future__ import annotations

from datetime import datetime, timedelta
from itertools import pairwise
from typing import Any

from smoothscale.pipeline.churn import churn
from smoothscale.pipeline.incident_folding import Minimums, one_per_incident

T0 = datetime(2026, 11, 26, 10, 0)
WINDOW_S, MERGE_S = 600.0, 30.0
LEAST = Minimums(sync_storm=3, coordinator_loop=3, assignment_store_failure=2, slack_s=60.0)


def at(seconds: float) -> datetime:
    return T0 + timedelta(seconds=seconds)


def memberships(*steps: tuple[float, list[str] | int]) -> list[dict[str, Any]]:
    """Successive rebalances (as `diagnoses._successive` gives them) through the memberships of `steps`:
    a list of members (a leader's listing, member ids) or only a count (a coordinator's line)."""
    pairs = []
    for n, ((before_s, before), (after_s, after)) in enumerate(pairwise(steps)):
        row: dict[str, Any] = {"group": "g", "ts": at(after_s), "prev_ts": at(before_s), "nodes": None}
        row |= {"prev_nodes": None, "cite": f"log:{n + 2}", "prev_cite": f"log:{n + 1}"}
        for prefix, value in (("prev_", before), ("", after)):
            listed = isinstance(value, list)
            row[prefix + "members"] = value if listed else None
            row[prefix + "consumers"] = len(value) if listed else value
        pairs.append(row)
    return pairs


def member(name: str, n: int = 0) -> str:
    return f"{name}-{n:08d}-0000-4000-8000-000000000000"


def test_growth_shrinking_and_one_swap_are_not_churn() -> None:
    a, b, c = member("a"), member("b"), member("c")
    assert churn(memberships((0, [a]), (60, [a, b]), (120, [a, b, c])), WINDOW_S, MERGE_S) == []
    assert churn(memberships((0, 3), (60, 2), (120, 1)), WINDOW_S, MERGE_S) == []
    # a pod replaced while the group rebalances: another member in the place of c, in one rebalance
    assert churn(memberships((0, [a, b, c]), (60, [a, b, member("d")])), WINDOW_S, MERGE_S) == []


def test_a_member_that_left_and_came_back_within_the_window_is_churn() -> None:
    a, b = member("a"), member("b")
    (found,) = churn(memberships((0, [a, b]), (60, [a]), (90, [a, member("b", 1)])), WINDOW_S, MERGE_S)
    assert (found["ts"], found["end_ts"], found["members"]) == (at(60), at(90), ["b"])
    assert found["detail"] == "membership churn: b left at 10:01:00 and came back at 10:01:30"
    assert found["evidence"] == ["log:1", "log:2", "log:3"]
    # ... but not after the window
    assert churn(memberships((0, [a, b]), (60, [a]), (900, [a, b])), WINDOW_S, MERGE_S) == []


def test_a_count_going_down_and_up_again_is_churn() -> None:
    (found,) = churn(memberships((0, 3), (60, 2), (120, 3), (150, 2)), WINDOW_S, MERGE_S)
    assert (found["ts"], found["end_ts"], found["members"]) == (at(60), at(150), [])
    assert found["occurrences"] == 2


def finding(kind: str, seconds: float, members: list[str], **more: Any) -> dict[str, Any]:
    row = {"group": "g", "kind": kind, "ts": at(seconds), "end_ts": at(seconds), "members": members}
    row |= {"interval_s": None, "detail": f"{kind} of {members}", "evidence": [f"log:{int(seconds)}"]}
    return row | {"occurrences": 1} | more


def test_a_poll_timeout_folds_the_fencing_and_churn_of_its_member_only() -> None:
    thread = "app-00000000-0000-4000-8000-000000000000-StreamThread-2"
    rows = [
        finding("poll-timeout", 0, [f"{thread}-consumer"]),
        finding("fencing", 40, [thread]),
        finding("membership-churn", 45, [f"{thread}-consumer"]),
        finding("fencing", 41, ["another-thread"]),
    ]
    folded = one_per_incident(rows, LEAST)
    assert [(r["kind"], r["members"]) for r in folded] == [
        ("poll-timeout", [f"{thread}-consumer"]),
        ("fencing", ["another-thread"]),
    ]
    assert folded[0]["evidence"] == ["log:0", "log:40", "log:45"] and folded[0]["occurrences"] == 3
    assert "with it, fencing: " in folded[0]["detail"]


def test_repeated_failures_count_only_from_their_minimum() -> None:
    rows = [
        finding("sync-storm", 0, ["w-1"], occurrences=2),
        finding("coordinator-loop", 0, ["c-1"], occurrences=2),
        finding("assignment-store-failure", 0, ["c-1"], occurrences=1),
    ]
    assert one_per_incident(rows, LEAST) == []


def test_many_members_expiring_at_once_are_one_sentence() -> None:
    members = [f"consumer-{n}" for n in range(15)]
    (row,) = one_per_incident([finding("heartbeat-expiration", 0, members, end_ts=at(0.5))], LEAST)
    assert row["detail"].startswith("15 members missed their heartbeats within 0.5 s (session timeout)")


def test_each_member_failing_once_is_no_loop_but_members_looping_together_are_one_incident() -> None:
    once = [finding("coordinator-loop", n, [f"c-{n}"]) for n in range(5)]  # a broker restarted
    assert one_per_incident(once, LEAST) == []
    looping = [finding("coordinator-loop", n, [f"c-{n}"], occurrences=4, end_ts=at(20)) for n in range(3)]
    (row,) = one_per_incident(looping, LEAST)
    assert row["members"] == ["c-0", "c-1", "c-2"] and row["occurrences"] == 12
    assert row["detail"].startswith("12 lines in 20.0 s show members losing their group coordinator")


def test_the_churn_of_members_that_each_left_for_their_own_reason_is_folded_member_by_member() -> None:
    """Two newcomers of a scale-out leave again within the window, one killed (its session expires), one
    past its poll timeout: one churn incident names both, and each reason explains its own member's part."""
    killed, slow = "shop-1-StreamThread-1-consumer", "shop-2-StreamThread-1-consumer"
    churned = finding(
        "membership-churn",
        0,
        [killed, slow, "shop-3"],
        end_ts=at(30),
        detail=f"membership churn: {killed} came at 10:00:00 and left again at 10:00:11;"
        f" {slow} came at 10:00:01 and left again at 10:00:30;"
        " shop-3 left at 10:00:02 and came back at 10:00:20",
        evidence=["log:1", "log:2"],
    )
    rows = [finding("heartbeat-expiration", 11, [f"{killed}-{member('x')[2:]}"]), churned]
    rows.append(finding("poll-timeout", 29, [slow]))
    folded = one_per_incident(rows, LEAST)
    assert [(r["kind"], r["members"]) for r in folded] == [
        ("heartbeat-expiration", [f"{killed}-{member('x')[2:]}"]),
        ("membership-churn", ["shop-3"]),
        ("poll-timeout", [slow]),
    ]
    expired, churn_left, timed_out = folded
    assert expired["detail"].endswith(
        f"with it, membership-churn: membership churn: {killed} came at 10:00:00 and left again at 10:00:11"
    )
    assert churn_left["detail"] == "membership churn: shop-3 left at 10:00:02 and came back at 10:00:20"
    assert f"{slow} came at 10:00:01" in timed_out["detail"] and "log:1" in timed_out["evidence"]
    # once every member's part is explained, no churn is left
    both = [rows[0], {**churned, "members": [killed, slow]}, rows[2]]
    assert [r["kind"] for r in one_per_incident(both, LEAST)] == ["heartbeat-expiration", "poll-timeout"]
