"""One test per rule of Contract 1, on hand-built clusters chosen so that a plausible wrong planner fails.

Each scenario states the trap it sets (a balance-first planner, a sticky planner, a raw-lag planner, ...),
then checks the whole plan with the oracle (`rules.check_plan`) and the specific outcome a user would see.
The first tests check the oracle itself: a checker that never complains would make every property test pass.
"""

from __future__ import annotations

import copy
import random
from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from rules import (
    NOW,
    TAGS,
    actives_of,
    advance,
    assert_fixed_point,
    assert_valid,
    check_plan,
    comparable,
    convergence_bound,
    current_active,
    dump,
    make_client,
    make_snapshot,
    make_task,
    moved_actives,
    run_planner,
    run_until_stable,
    set_lags,
    standbys_of,
    warmups,
)
from strategies import clusters

from smoothscale.assignor.models import Plan, Snapshot
from smoothscale.assignor.validation import SnapshotError

# --------------------------------------------------------------------------------------------------------
# The oracle itself: a correct hand-written plan passes, each broken variant is caught by the right rule
# --------------------------------------------------------------------------------------------------------


def _oracle_snapshot(**overrides: Any) -> Snapshot:
    """A, B hold three stateful tasks (one standby each) and a stateless one; L is leaving and empty."""
    tasks = [make_task("0_0"), make_task("0_1"), make_task("0_2"), make_task("1_0", stateful=False)]
    clients = overrides.pop(
        "clients",
        [
            make_client("A", active=["0_0", "1_0"], standby=["0_1", "0_2"], stateless=["1_0"]),
            make_client("B", rack="zone-b", active=["0_1", "0_2"], standby=["0_0"]),
            make_client("L", leaving_since=NOW - timedelta(seconds=60)),
        ],
    )
    return make_snapshot(tasks, clients, num_standbys=1, scale_down_timeout_seconds=600, **overrides)


def _oracle_plan() -> dict[str, Any]:
    """The correct plan for `_oracle_snapshot()`: keep everything, stable."""
    placement = {
        "A": {"active": ["0_0", "1_0"], "standby": ["0_1", "0_2"]},
        "B": {"active": ["0_1", "0_2"], "standby": ["0_0"]},
        "L": {"active": [], "standby": []},
    }
    return {
        "assignment": {c: {**copy.deepcopy(p), "warmup": []} for c, p in placement.items()},
        "target": copy.deepcopy(placement),
        "stable": True,
        "followup": None,
        "stats": {
            "crossRackCost": 0,
            "activeImbalance": 0,
            "movedActives": 0,
            "warmups": 0,
            "targetCrossRackCost": 0,
            "targetActiveImbalance": 0,
        },
        "explain": {t: f"kept {t}" for t in ("0_0", "0_1", "0_2", "1_0")},
    }


def _add_warmups(
    p: dict[str, Any], client: str, *tasks: str, reason: str = "warming up", probe: float = 60
) -> None:
    """Add warmups and mark the plan not stable, with a followup, so only the warmups themselves are wrong."""
    p["assignment"][client]["warmup"].extend(tasks)
    p["stable"] = False
    p["followup"] = {"reason": reason, "probeAfterSeconds": probe}


def _move_standby(p: dict[str, Any], task: str, src: str, dst: str, *, target: bool = True) -> None:
    for part in ("assignment", "target") if target else ("assignment",):
        p[part][src]["standby"].remove(task)
        p[part][dst]["standby"].append(task)


Mutation = Callable[[dict[str, Any]], None]

ORACLE_CASES: list[tuple[str, dict[str, Any], Mutation, str]] = [
    ("no active for a task", {}, lambda p: p["assignment"]["A"]["active"].remove("1_0"), "R1"),
    ("two actives for a task", {}, lambda p: p["target"]["L"]["active"].append("0_0"), "R1"),
    ("client missing from assignment", {}, lambda p: p["assignment"].pop("L"), "R1"),
    ("unknown task", {}, lambda p: p["assignment"]["A"]["active"].append("9_9"), "R1"),
    ("active and warmup on one client", {}, lambda p: p["assignment"]["A"]["warmup"].append("0_0"), "R2"),
    (
        "active stays on a stale client while a standby is caught up",
        {
            "clients": [
                make_client(
                    "A",
                    active=["0_0", "1_0"],
                    standby=["0_1", "0_2"],
                    stateless=["1_0"],
                    lags={"0_0": 10_001},
                ),
                make_client("B", rack="zone-b", active=["0_1", "0_2"], standby=["0_0"]),
                make_client("L", leaving_since=NOW - timedelta(seconds=60)),
            ]
        },
        lambda p: None,
        "R3",
    ),
    ("a standby missing", {}, lambda p: p["assignment"]["B"]["standby"].remove("0_0"), "R4"),
    (
        "standby on a leaving client",
        {},
        lambda p: _move_standby(p, "0_0", "B", "L", target=False),
        "R4",
    ),
    ("stateless task with a standby", {}, lambda p: p["assignment"]["B"]["standby"].append("1_0"), "R4"),
    ("too many warmups", {"max_warmup_replicas": 1}, lambda p: _add_warmups(p, "B", "1_0", "0_0"), "R5"),
    ("warmup that does not lead toward the target", {}, lambda p: _add_warmups(p, "L", "0_1"), "R5"),
    ("leaving client gets a new active", {}, lambda p: _swap_active(p, "0_2", "B", "L"), "R6"),
    (
        "timed-out leaving client keeps its active",
        {
            "clients": [
                make_client("A", active=["0_0", "1_0"], standby=["0_1", "0_2"], stateless=["1_0"]),
                make_client("B", rack="zone-b", active=["0_1"], standby=["0_0"]),
                make_client("L", active=["0_2"], leaving_since=NOW - timedelta(seconds=600)),
            ]
        },
        lambda p: _swap_active(p, "0_2", "B", "L", target=False),
        "R6",
    ),
    ("target uses a leaving client", {}, lambda p: _move_standby(p, "0_0", "B", "L"), "R6"),
    ("unbalanced target", {}, lambda p: _swap_target_active(p, "0_2", "B", "A"), "R9"),
    ("stable flag while a warmup runs", {}, lambda p: p["assignment"]["L"]["warmup"].append("0_1"), "STABLE"),
    ("no followup while not stable", {}, lambda p: p.update(stable=False), "FOLLOWUP"),
    (
        "followup on a stable plan",
        {},
        lambda p: p.update(followup={"reason": "x", "probeAfterSeconds": 1}),
        "FOLLOWUP",
    ),
    ("no probe delay", {}, lambda p: _add_warmups(p, "A", probe=0), "FOLLOWUP"),
    ("empty followup reason", {}, lambda p: _add_warmups(p, "A", reason=""), "FOLLOWUP"),
    ("task without explanation", {}, lambda p: p["explain"].pop("1_0"), "EXPLAIN"),
    ("empty explanation", {}, lambda p: p["explain"].update({"0_0": " "}), "EXPLAIN"),
]


def _swap_active(p: dict[str, Any], task: str, src: str, dst: str, *, target: bool = True) -> None:
    for part in ("assignment", "target") if target else ("assignment",):
        p[part][src]["active"].remove(task)
        p[part][dst]["active"].append(task)


def _swap_target_active(p: dict[str, Any], task: str, src: str, dst: str) -> None:
    _add_warmups(p, src)
    p["target"][src]["active"].remove(task)
    p["target"][dst]["active"].append(task)
    p["target"][dst]["standby"].remove(task)
    p["target"][src]["standby"].append(task)


def test_oracle_accepts_a_correct_plan() -> None:
    assert check_plan(_oracle_snapshot(), Plan.model_validate(_oracle_plan())) == []


@pytest.mark.parametrize(
    ("snapshot_overrides", "mutate", "tag"), [c[1:] for c in ORACLE_CASES], ids=[c[0] for c in ORACLE_CASES]
)
def test_oracle_catches(snapshot_overrides: dict[str, Any], mutate: Mutation, tag: str) -> None:
    """Each broken plan is reported under the rule it breaks (it may break others too)."""
    snapshot = _oracle_snapshot(**dict(snapshot_overrides))
    data = _oracle_plan()
    mutate(data)
    problems = check_plan(snapshot, Plan.model_validate(data))
    assert any(p.startswith(f"{tag}:") for p in problems), problems
    assert all(p.split(":", 1)[0] in TAGS for p in problems), problems


def test_oracle_catches_standby_on_less_caught_up_client() -> None:
    """R4's "most caught-up": C (lag 5) must be preferred over nobody; with C empty and B chosen it is fine,
    with C ignored in favour of a client that has no state it is not."""
    tasks = [make_task("0_0"), make_task("0_1")]
    snapshot = make_snapshot(
        tasks,
        [
            make_client("A", active=["0_0"], standby=["0_1"]),
            make_client("B", active=["0_1"]),
            make_client("C", lags={"0_0": 5}),
        ],
        num_standbys=1,
        strategy="none",
    )
    placement = {
        "A": {"active": ["0_0"], "standby": ["0_1"]},
        "B": {"active": ["0_1"], "standby": ["0_0"]},
        "C": {"active": [], "standby": []},
    }
    data = {**_oracle_plan(), "assignment": {c: {**p, "warmup": []} for c, p in placement.items()}}
    data["target"] = placement
    data["explain"] = {"0_0": "x", "0_1": "y"}
    problems = check_plan(snapshot, Plan.model_validate(data))
    assert any(p.startswith("R4:") and "C is more caught up" in p for p in problems), problems


def test_advance_publishes_the_assignment_and_lets_restores_finish() -> None:
    """The simulator must behave as documented, or multi-step scenarios would test a fiction."""
    snapshot = _oracle_snapshot()
    data = _oracle_plan()
    _add_warmups(data, "B", "1_0")  # stateless: never gets a lag entry
    data["assignment"]["A"]["standby"].remove("0_2")
    data["assignment"]["B"]["warmup"].append("0_2")
    data["assignment"]["B"]["active"].remove("0_2")
    data["assignment"]["A"]["active"].append("0_2")
    plan = Plan.model_validate(data)
    after = advance(snapshot, plan, caught_up=True, seconds=30)
    by_id = {c.id: c for c in after.clients}
    assert after.now == NOW + timedelta(seconds=30)
    assert by_id["A"].active == ["0_0", "1_0", "0_2"] and by_id["B"].warmup == ["1_0", "0_2"]
    assert by_id["B"].lags == {"0_1": 0, "0_0": 0, "0_2": 0} and "1_0" not in by_id["A"].lags
    assert by_id["L"].leaving_since == NOW - timedelta(seconds=60)
    stale = set_lags(snapshot, "A", {"0_0": 77})
    kept = advance(stale, plan, caught_up=False)
    assert {c.id: c.lags for c in kept.clients}["A"]["0_0"] == 77


# --------------------------------------------------------------------------------------------------------
# Input validation
# --------------------------------------------------------------------------------------------------------


SNAPSHOT_ERRORS: list[tuple[str, list[dict[str, Any]], list[dict[str, Any]], str]] = [
    (
        "unknown task in lags",
        [make_task("0_0")],
        [make_client("a"), make_client("b"), make_client("c", lags={"9_9": 3})],
        "clients[2].lags.9_9",
    ),
    ("unknown task in active", [make_task("0_0")], [make_client("a", active=["7_7"])], "clients[0].active"),
    (
        "unknown task in warmup",
        [make_task("0_0")],
        [make_client("a"), make_client("b", warmup=["7_7"])],
        "clients[1].warmup",
    ),
    ("duplicate task ids", [make_task("0_0"), make_task("0_0")], [make_client("a")], "tasks["),
    ("duplicate client ids", [make_task("0_0")], [make_client("a"), make_client("a")], "clients["),
    (
        "task held twice by one client",
        [make_task("0_0")],
        [make_client("a"), make_client("b", active=["0_0"], standby=["0_0"])],
        "clients[1]",
    ),
]


@pytest.mark.parametrize(
    ("tasks", "clients", "path"), [c[1:] for c in SNAPSHOT_ERRORS], ids=[c[0] for c in SNAPSHOT_ERRORS]
)
def test_inconsistent_snapshot_is_refused_with_the_field_path(
    tasks: list[dict[str, Any]], clients: list[dict[str, Any]], path: str
) -> None:
    """A person fixing the input needs to know which field is wrong, not just that something is."""
    snapshot = make_snapshot(tasks, clients)
    with pytest.raises(SnapshotError) as caught:
        run_planner(snapshot)
    assert any(p.startswith(path) for p in caught.value.problems), caught.value.problems


# --------------------------------------------------------------------------------------------------------
# R1: one active per task, every client listed
# --------------------------------------------------------------------------------------------------------


def test_r1_every_task_gets_one_active_and_every_client_is_listed() -> None:
    """New tasks nobody holds, stateless tasks and an idle pod: nothing may be left unassigned or dropped.

    Trap: a planner that only re-places the tasks it finds in the published assignment.
    """
    tasks = [
        make_task("0_0"),
        make_task("0_1"),
        make_task("0_2"),
        make_task("0_3"),  # new partition: held by nobody, no state anywhere
        make_task("1_0", stateful=False),
        make_task("1_1", stateful=False),  # new stateless task
    ]
    clients = [
        make_client("A", active=["0_0", "0_1", "1_0"], stateless=["1_0"]),
        make_client("B", active=["0_2"]),
        make_client("C"),
    ]
    snapshot = make_snapshot(tasks, clients)
    plan = run_planner(snapshot)
    assert_valid(snapshot, plan)
    assert set(plan.assignment) == {"A", "B", "C"}
    for part in (plan.assignment, plan.target):
        held = sorted(t for a in part.values() for t in a.active)
        assert held == sorted(t["id"] for t in tasks)


# --------------------------------------------------------------------------------------------------------
# R2 and R3: never two copies on one client; actives on caught-up clients
# --------------------------------------------------------------------------------------------------------


def test_r2_promoted_standby_holds_one_copy() -> None:
    """A runs both tasks; B mirrors both as caught-up standbys. Balancing promotes one of B's standbys.

    Trap: adding the active to B while keeping B's standby of the same task (two copies on one pod), or
    warming up a copy B already has. Everything needed is caught up, so the plan is stable at once.
    """
    tasks = [make_task("0_0"), make_task("0_1")]
    clients = [
        make_client("A", active=["0_0", "0_1"]),
        make_client("B", rack="zone-b", standby=["0_0", "0_1"]),
    ]
    snapshot = make_snapshot(tasks, clients, num_standbys=1)
    plan = run_planner(snapshot)
    assert_valid(snapshot, plan)
    for held in plan.assignment.values():
        copies = [*held.active, *held.standby, *held.warmup]
        assert len(copies) == len(set(copies)) == 2
    assert sorted(len(a.active) for a in plan.assignment.values()) == [1, 1]
    assert plan.stable


def test_r3_stale_owner_hands_over_to_a_caught_up_standby() -> None:
    """The current owner fell 60,000 offsets behind (say its disk was wiped); B's standby is caught up.

    Trap: a sticky planner keeps the active on its owner. The handover must also leave B with one copy
    (R2), and the standby goes back to A, the next most caught-up (R4), not to C, which has no state.
    """
    tasks = [make_task("0_0"), make_task("0_1"), make_task("0_2")]
    clients = [
        make_client("A", active=["0_0"], lags={"0_0": 60_000}),
        make_client("B", active=["0_1"], standby=["0_0"]),
        make_client("C", active=["0_2"]),
    ]
    snapshot = make_snapshot(tasks, clients, num_standbys=1, strategy="none")
    plan = run_planner(snapshot)
    assert_valid(snapshot, plan)
    assert "0_0" in plan.assignment["B"].active
    assert "0_0" in plan.assignment["A"].standby
    assert "0_0" not in plan.assignment["C"].standby


def test_r3_nobody_caught_up_goes_to_the_most_caught_up_even_if_overloaded() -> None:
    """Task 0_0 lost its owner; A is 200,000 behind, B 300,000, C has no state; A already runs three tasks.

    Trap: a balance-first planner gives 0_0 to an empty pod and restores 1,000,000 offsets instead of
    200,000. The other tasks stay on A too (only A is caught up on them): the plan is imbalanced for now.
    """
    tasks = [make_task(f"0_{p}") for p in range(4)]
    clients = [
        make_client("A", active=["0_1", "0_2", "0_3"], lags={"0_0": 200_000}),
        make_client("B", lags={"0_0": 300_000}),
        make_client("C"),
    ]
    snapshot = make_snapshot(tasks, clients)
    plan = run_planner(snapshot)
    assert_valid(snapshot, plan)
    assert sorted(plan.assignment["A"].active) == ["0_0", "0_1", "0_2", "0_3"]
    assert not plan.stable
    assert warmups(plan), "B and C should start warming up toward the balanced target"


def test_r3_lags_within_acceptable_recovery_lag_count_as_equal() -> None:
    """A processes 0_0 at lag 9,000 (within 10,000); B's standby is at lag 0. Both are caught up.

    Trap: a planner ranking by raw lag moves the active to B for nothing. The assignment is balanced, so
    by KIP-441 rule 5 it must be returned unchanged and stable.
    """
    tasks = [make_task("0_0"), make_task("0_1")]
    clients = [
        make_client("A", active=["0_0"], standby=["0_1"], lags={"0_0": 9_000}),
        make_client("B", rack="zone-b", active=["0_1"], standby=["0_0"]),
    ]
    snapshot = make_snapshot(tasks, clients, num_standbys=1)
    plan = run_planner(snapshot)
    assert_valid(snapshot, plan)
    assert plan.stable
    assert moved_actives(snapshot, plan) == []
    assert actives_of(plan.assignment) == {"A": {"0_0"}, "B": {"0_1"}}


# --------------------------------------------------------------------------------------------------------
# R4: standbys
# --------------------------------------------------------------------------------------------------------


def test_r4_standby_goes_to_the_most_caught_up_client_not_the_emptiest() -> None:
    """numStandbys was just raised to 1. B still has caught-up state for 0_0; C is a new, empty pod.

    Trap: a balance-first planner puts 0_0's standby on C (it has the fewest tasks), which then has to
    restore a whole changelog while B could have taken over at once.
    """
    tasks = [make_task(f"0_{p}") for p in range(4)]
    clients = [
        make_client("A", active=["0_0", "0_1"]),
        make_client("B", active=["0_2", "0_3"], lags={"0_0": 0}),
        make_client("C"),
    ]
    snapshot = make_snapshot(tasks, clients, num_standbys=1, strategy="none")
    plan = run_planner(snapshot)
    assert_valid(snapshot, plan)
    standby_of = {t: c for c, a in plan.assignment.items() for t in a.standby}
    active_of = {t: c for c, a in plan.assignment.items() for t in a.active}
    if active_of["0_0"] == "A":
        assert standby_of["0_0"] == "B"


def test_r4_standbys_are_capped_by_the_other_non_leaving_clients() -> None:
    """numStandbys=2 with two pods and a leaving third that holds a standby: one standby per task, on the
    pod that does not run the active; the leaving pod loses its standby (it will be deleted)."""
    tasks = [make_task("0_0"), make_task("0_1")]
    clients = [
        make_client("A", active=["0_0"], standby=["0_1"]),
        make_client("B", active=["0_1"]),
        make_client("L", standby=["0_0"], leaving_since=NOW - timedelta(seconds=5)),
    ]
    snapshot = make_snapshot(tasks, clients, num_standbys=2, scale_down_timeout_seconds=600)
    plan = run_planner(snapshot)
    assert_valid(snapshot, plan)
    assert standbys_of(plan.assignment) == {"A": {"0_1"}, "B": {"0_0"}, "L": set()}
    assert actives_of(plan.assignment) == {"A": {"0_0"}, "B": {"0_1"}, "L": set()}


# --------------------------------------------------------------------------------------------------------
# R5: warmups
# --------------------------------------------------------------------------------------------------------


def test_r5_warmups_are_throttled_and_serve_the_leaving_pod_first() -> None:
    """Eight tasks: A runs four, the leaving pod L runs four, B and C are new. maxWarmupReplicas=2.

    Trap: a planner that starts every restore at once (broker overload), or that spends the warmup budget
    on rebalancing A before draining L, which the operator wants to delete. Round after round: at most two
    warmups, and none for A's tasks while some of L's tasks still wait for a warmup.
    """
    tasks = [make_task(f"0_{p}") for p in range(8)]
    clients = [
        make_client("A", active=[f"0_{p}" for p in range(4)]),
        make_client("L", active=[f"0_{p}" for p in range(4, 8)], leaving_since=NOW - timedelta(seconds=30)),
        make_client("B"),
        make_client("C"),
    ]
    snapshot = make_snapshot(tasks, clients, max_warmup_replicas=2)
    trail = run_until_stable(snapshot, convergence_bound(snapshot))
    first = trail[0][1]
    assert warmups(first), "L's tasks need warmups on B and C"
    assert {t for t, _ in warmups(first)} <= {f"0_{p}" for p in range(4, 8)}
    for before, plan in trail:
        was_on_l = {t for t, c in current_active(before).items() if c == "L"}
        still_on_l = was_on_l & set(plan.assignment["L"].active)
        warming = {t for t, _ in warmups(plan)}
        if warming - still_on_l:
            assert still_on_l <= warming, (
                f"warmups {sorted(warming)} serve A while L's {sorted(still_on_l - warming)} wait"
            )
    final = trail[-1][1]
    assert final.assignment["L"].active == []
    assert sorted(len(final.assignment[c].active) for c in "ABC") == [2, 3, 3]


# --------------------------------------------------------------------------------------------------------
# R6: leaving pods and the scale-down timeout
# --------------------------------------------------------------------------------------------------------


def _leaving_cluster(seconds_ago: float, timeout: float | None) -> Snapshot:
    """L (leaving) runs 0_0 and 0_1 and still has a stray warmup of 0_3; A is caught up on 0_0 only;
    for 0_1, B is closer (100,000 behind) than A (400,000 behind)."""
    tasks = [make_task(f"0_{p}") for p in range(4)]
    clients = [
        make_client(
            "L", active=["0_0", "0_1"], warmup=["0_3"], leaving_since=NOW - timedelta(seconds=seconds_ago)
        ),
        make_client("A", active=["0_2"], lags={"0_0": 0, "0_1": 400_000}),
        make_client("B", active=["0_3"], lags={"0_1": 100_000}),
    ]
    return make_snapshot(tasks, clients, scale_down_timeout_seconds=timeout)


def test_r6_leaving_pod_keeps_only_what_nobody_can_take_over_yet() -> None:
    """Timeout not expired: 0_0 moves to A at once (A is caught up); 0_1 stays on L (nobody is), while a
    warmup starts elsewhere. L gets nothing new and drops its warmup.

    Trap: moving 0_1 now (hours of restore) or keeping 0_0 on L (delays the pod's removal).
    """
    snapshot = _leaving_cluster(seconds_ago=60, timeout=600)
    plan = run_planner(snapshot)
    assert_valid(snapshot, plan)
    assert plan.assignment["L"].active == ["0_1"]
    assert plan.assignment["L"].warmup == [] and plan.assignment["L"].standby == []
    assert "0_0" in plan.assignment["A"].active
    assert "0_1" in {t for t, _ in warmups(plan)}


@pytest.mark.parametrize(("seconds_ago", "expired"), [(599, False), (600, True), (3600, True)])
def test_r6_expired_timeout_empties_the_leaving_pod(seconds_ago: float, expired: bool) -> None:
    """Once now - leavingSince >= scaleDownTimeoutSeconds, L holds nothing; 0_1 goes to B, the most
    caught-up pod, although B is not caught up (the timeout is the user's "stop waiting").

    Trap: an off-by-one on the deadline, or picking A (the one with other state) instead of B.
    """
    snapshot = _leaving_cluster(seconds_ago=seconds_ago, timeout=600)
    plan = run_planner(snapshot)
    assert_valid(snapshot, plan)
    if expired:
        assert plan.assignment["L"].active == []
        assert "0_1" in plan.assignment["B"].active
    else:
        assert plan.assignment["L"].active == ["0_1"]


def test_r6_null_timeout_never_expires() -> None:
    """scaleDownTimeoutSeconds null: a pod leaving for 30 days still keeps the task nobody can take over."""
    snapshot = _leaving_cluster(seconds_ago=30 * 86_400, timeout=None)
    plan = run_planner(snapshot)
    assert_valid(snapshot, plan)
    assert plan.assignment["L"].active == ["0_1"]


def test_r6_leaving_pod_drains_completely() -> None:
    """Re-planning with warmups caught up empties L, and the final plan never mentions L in the target."""
    snapshot = _leaving_cluster(seconds_ago=60, timeout=None)
    trail = run_until_stable(snapshot, convergence_bound(snapshot))
    final = trail[-1][1]
    assert final.assignment["L"].active == []
    assert final.target.get("L") is None or not (final.target["L"].active or final.target["L"].standby)


# --------------------------------------------------------------------------------------------------------
# R9: balance of the target
# --------------------------------------------------------------------------------------------------------


def test_r9_balance_is_per_unit_of_capacity() -> None:
    """Capacities 1, 2, 3 and twelve fresh tasks (no changelog yet, so everyone is caught up): 2, 4, 6.

    Trap: counting tasks per pod (4, 4, 4) and ignoring the threads each pod has.
    """
    tasks = [make_task(f"0_{p}", offsets=0) for p in range(12)]
    clients = [
        make_client("A", capacity=1, active=[f"0_{p}" for p in range(12)]),
        make_client("B", capacity=2),
        make_client("C", capacity=3),
    ]
    snapshot = make_snapshot(tasks, clients)
    plan = run_planner(snapshot)
    assert_valid(snapshot, plan)
    assert {c: len(t.active) for c, t in plan.target.items()} == {"A": 2, "B": 4, "C": 6}


def test_r9_subtopologies_are_spread() -> None:
    """Two subtopologies of six tasks over three pods: two of each per pod, not (4, 2) of one of them.

    Trap: balancing only the total count per pod (four each) while one pod runs most of a hot subtopology.
    """
    tasks = [make_task(f"{s}_{p}", offsets=0) for s in range(2) for p in range(6)]
    clients = [
        make_client("A", active=[f"0_{p}" for p in range(6)]),
        make_client("B", active=[f"1_{p}" for p in range(6)]),
        make_client("C"),
    ]
    snapshot = make_snapshot(tasks, clients, strategy="balance_subtopology")
    plan = run_planner(snapshot)
    assert_valid(snapshot, plan)
    for client, target in plan.target.items():
        per_sub = sorted(sum(1 for t in target.active if t.startswith(f"{s}_")) for s in range(2))
        assert per_sub == [2, 2], (client, target.active)


@pytest.mark.parametrize("strategy", ["none", "balance_subtopology"])
def test_r9_subtopologies_are_spread_without_rack_awareness(strategy: str) -> None:
    """Three pods each running all three tasks of one subtopology, every copy caught up: balanced per pod
    (three tasks each) but not per subtopology. KIP-441 calls an assignment balanced only with both, so
    `none` (rack awareness off) must spread every subtopology too: one task of each per pod.

    Trap: treating `none` as "no subtopology constraint" (KIP-925's 4.B.I) and calling this stable.
    """
    tasks = [make_task(f"{s}_{p}") for s in range(3) for p in range(3)]
    clients = [make_client(f"pod-{s}", active=[f"{s}_{p}" for p in range(3)]) for s in range(3)]
    snapshot = make_snapshot(tasks, clients, strategy=strategy)
    plan = run_planner(snapshot)
    assert_valid(snapshot, plan)
    assert not plan.stable
    for client, target in plan.target.items():
        per_sub = sorted(sum(1 for t in target.active if t.startswith(f"{s}_")) for s in range(3))
        assert per_sub == [1, 1, 1], (client, target.active)


def test_r9_total_load_with_standbys_and_stateful_actives_are_balanced() -> None:
    """Four equal pods, six stateful tasks with one standby each and two stateless tasks.

    Traps: balancing actives only (standbys pile up on one pod), or giving one pod only stateless tasks.
    """
    tasks = [make_task(f"0_{p}", offsets=0) for p in range(6)] + [
        make_task(f"1_{p}", stateful=False) for p in range(2)
    ]
    clients = [make_client("A", active=[t["id"] for t in tasks], stateless=["1_0", "1_1"])] + [
        make_client(c) for c in "BCD"
    ]
    snapshot = make_snapshot(tasks, clients, num_standbys=1, strategy="none")
    plan = run_planner(snapshot)
    assert_valid(snapshot, plan)
    loads = sorted(len(t.active) + len(t.standby) for t in plan.target.values())
    assert loads[-1] - loads[0] <= 1 and sum(loads) == 14
    stateful = sorted(len([x for x in t.active if x.startswith("0_")]) for t in plan.target.values())
    assert stateful == [1, 1, 2, 2]


def test_r9_subtopology_quotas_follow_capacity() -> None:
    """Found by the convergence test. Pods of capacity 1, 3, 2, 3 (9 units); subtopology 0 has three
    stateless tasks, so each capacity-3 pod runs exactly one of them (3 * 3 / 9 = 1), whatever else it runs.

    Trap: filling the big pods with a subtopology's tasks once the stateful ones are placed.
    """
    tasks = [make_task(f"0_{p}", stateful=False) for p in range(3)]
    tasks += [make_task(f"1_{p}", offsets=0) for p in range(5)]
    clients = [
        make_client("pod-0", capacity=1, active=["1_1"], lags={"1_1": 1_000}),
        make_client("pod-1", rack="zone-b", capacity=3),
        make_client("pod-2", capacity=2),
        make_client("pod-3", rack="zone-b", capacity=3),
    ]
    snapshot = make_snapshot(tasks, clients, num_standbys=1, max_warmup_replicas=1)
    plan = run_planner(snapshot)
    assert_valid(snapshot, plan)
    for big in ("pod-1", "pod-3"):
        assert sum(t.startswith("0_") for t in plan.target[big].active) == 1, plan.target


@pytest.mark.parametrize("strategy", ["none", "min_traffic", "balance_subtopology"])
def test_r9_stateless_tasks_fill_the_pods_with_less_total_load(strategy: str) -> None:
    """Three pods on two racks; two stateful tasks with two standbys each put a copy of both on every pod,
    so the two stateless tasks must go to two different pods (loads 3, 3, 2), not both to one (4, 2, 2).

    Trap: placing stateless tasks by active count or by rack alone, blind to the standbys already placed.
    """
    tasks = [make_task("0_0", stateful=False), make_task("0_1", stateful=False)]
    tasks += [make_task("1_0", offsets=0), make_task("1_1", offsets=0)]
    clients = [make_client("p0", rack="zone-b"), make_client("p1"), make_client("p2")]
    snapshot = make_snapshot(tasks, clients, num_standbys=2, strategy=strategy)
    plan = run_planner(snapshot)
    assert_valid(snapshot, plan)
    assert sorted(len(t.active) + len(t.standby) for t in plan.target.values()) == [2, 3, 3]


# --------------------------------------------------------------------------------------------------------
# stable, followup, explain
# --------------------------------------------------------------------------------------------------------


def test_unstable_plan_asks_for_a_probe_and_explains_every_task() -> None:
    """A new pod that must warm up: the plan is not stable, says why, and when to look again."""
    tasks = [make_task(f"0_{p}") for p in range(4)] + [make_task("1_0", stateful=False)]
    clients = [make_client("A", active=["0_0", "0_1", "0_2", "0_3"]), make_client("B")]
    snapshot = make_snapshot(tasks, clients)
    plan = run_planner(snapshot)
    assert_valid(snapshot, plan)
    assert not plan.stable
    assert (
        plan.followup is not None and plan.followup.reason.strip() and plan.followup.probe_after_seconds > 0
    )
    assert set(plan.explain) == {t["id"] for t in tasks}


# --------------------------------------------------------------------------------------------------------
# Rule 7: determinism
# --------------------------------------------------------------------------------------------------------


def shuffled(snapshot: Snapshot, rng: random.Random) -> Snapshot:
    """The same cluster with tasks, clients, each client's lists and its lags in another order."""
    data = snapshot.model_dump(by_alias=True, mode="json")
    rng.shuffle(data["tasks"])
    rng.shuffle(data["clients"])
    for client in data["clients"]:
        for role in ("active", "standby", "warmup"):
            rng.shuffle(client[role])
        lags = list(client["lags"].items())
        rng.shuffle(lags)
        client["lags"] = dict(lags)
    return Snapshot.model_validate(data)


def _tie_heavy_cluster() -> Snapshot:
    """Identical pods, fresh tasks, no racks: almost every choice is a tie, where order leaks out."""
    tasks = [make_task(f"{s}_{p}", offsets=0) for s in range(3) for p in range(5)]
    clients = [make_client(f"pod-{i}", rack=f"zone-{'abc'[i % 3]}") for i in range(5)]
    return make_snapshot(tasks, clients, num_standbys=1)


@pytest.mark.parametrize("seed", range(6))
def test_rule7_ids_that_compare_equal_in_natural_order_keep_a_fixed_order(seed: int) -> None:
    """ "0_1" and "0_01" (and "pod-1" and "pod-01") are different ids with the same natural order: the tie
    is broken on the exact string, so the output does not depend on which comes first in the input.

    Trap: a stable sort on the natural key alone, which keeps the input order of equal keys.
    """
    tasks = [make_task(t, offsets=0) for t in ("0_1", "0_01", "0_001", "0_2", "1_1", "1_01")]
    clients = [
        make_client(c, rack=r) for c, r in (("pod-1", "zone-a"), ("pod-01", "zone-b"), ("pod-2", "zone-a"))
    ]
    snapshot = make_snapshot(tasks, clients, num_standbys=1)
    expected = run_planner(snapshot).model_dump_json(by_alias=True)
    rng = random.Random(seed)
    for _ in range(4):
        again = shuffled(snapshot, rng)
        assert run_planner(again).model_dump_json(by_alias=True) == expected, dump(again)


@pytest.mark.parametrize("seed", range(5))
def test_rule7_same_input_in_any_order_gives_byte_identical_output(seed: int) -> None:
    snapshot = _tie_heavy_cluster()
    expected = run_planner(snapshot).model_dump_json(by_alias=True)
    again = shuffled(snapshot, random.Random(seed))
    assert run_planner(again).model_dump_json(by_alias=True) == expected


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cluster=clusters(), seed=st.integers(0, 2**32 - 1))
def test_rule7_random_clusters_are_order_insensitive(cluster: Snapshot, seed: int) -> None:
    expected = run_planner(cluster).model_dump_json(by_alias=True)
    again = shuffled(cluster, random.Random(seed))
    assert run_planner(again).model_dump_json(by_alias=True) == expected, dump(cluster)


# --------------------------------------------------------------------------------------------------------
# Rule 8: fixed point
# --------------------------------------------------------------------------------------------------------


def test_rule8_balanced_assignment_is_returned_unchanged() -> None:
    """KIP-441 rule 5: a balanced, caught-up assignment must not be altered (no pointless restores)."""
    tasks = [make_task(f"{s}_{p}") for s in range(2) for p in range(3)]
    clients = [
        make_client("A", active=["0_0", "1_1"], standby=["0_1", "1_2"]),
        make_client("B", active=["0_1", "1_2"], standby=["0_2", "1_0"]),
        make_client("C", active=["0_2", "1_0"], standby=["0_0", "1_1"]),
    ]
    snapshot = make_snapshot(tasks, clients, num_standbys=1)
    plan = run_planner(snapshot)
    assert_valid(snapshot, plan)
    assert plan.stable
    published = {c.id: (set(c.active), set(c.standby)) for c in snapshot.clients}
    assert {c: (set(a.active), set(a.standby)) for c, a in plan.assignment.items()} == published
    assert_fixed_point(snapshot, plan)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cluster=clusters(max_subtopologies=3, max_partitions=6, max_clients=6))
def test_rule8_stable_plan_fed_back_is_returned_unchanged(cluster: Snapshot) -> None:
    """Reach a stable plan, then publish it twice with every copy caught up: nothing may change."""
    snapshot, plan = run_until_stable(cluster, convergence_bound(cluster))[-1]
    assert_fixed_point(snapshot, plan)


def _fresh_mixed_cluster() -> Snapshot:
    """Found by the convergence test: 8 stateless and 12 stateful fresh tasks, numStandbys=2, seven pods
    of which one has capacity 2. Standby placement has many equal-cost choices here."""
    tasks = (
        [make_task(f"0_{p}", stateful=False) for p in range(8)]
        + [make_task(f"1_{p}", offsets=0) for p in range(9)]
        + [make_task(f"2_{p}", offsets=0) for p in range(3)]
    )
    clients = [make_client(f"pod-{i}", rack="zone-b" if i == 5 else "zone-a") for i in range(6)]
    clients.append(make_client("pod-6", capacity=2))
    return make_snapshot(tasks, clients, num_standbys=2, max_warmup_replicas=1, strategy="none")


def test_rule8_fresh_mixed_cluster_reaches_a_fixed_point() -> None:
    """A stable plan must not reshuffle standbys when it is fed back (each reshuffle is a new restore)."""
    snapshot = _fresh_mixed_cluster()
    stable_snapshot, plan = run_until_stable(snapshot, convergence_bound(snapshot))[-1]
    assert_fixed_point(stable_snapshot, plan)


def test_rule8_fixed_point_helper_detects_a_changed_plan() -> None:
    """`comparable` must see a change of assignment, or the fixed-point test could never fail."""
    data = _oracle_plan()
    changed = _oracle_plan()
    changed["assignment"]["A"]["standby"].remove("0_2")
    assert comparable(Plan.model_validate(data)) != comparable(Plan.model_validate(changed))
    assert current_active(_oracle_snapshot()) == {"0_0": "A", "1_0": "A", "0_1": "B", "0_2": "B"}
    assert advance(_oracle_snapshot(), Plan.model_validate(data)).now == NOW + timedelta(seconds=60)
