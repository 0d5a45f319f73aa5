"""The seeds' worked examples, replayed against the planner.

KIP-441 ("Example Scenarios": scaling out, scaling in with standbys in sync and lagging) and the incremental
rebalancing drafts (scale-up with learners, scale-down with a leaving member and its timeout, online host
swapping, scale-up from an empty group, a member lost while another learns). Task Tn of a seed is ``0_{n-1}``;
instances and workers keep their names. Each test checks the end state and the facts the seed is about:
actives move only to caught-up pods, new pods warm up first, leaving pods drain, the end is balanced.
Every plan on the way is also checked against all the rules (`rules.assert_valid`).
"""

from __future__ import annotations

from datetime import timedelta

import pytest
from rules import (
    NOW,
    actives_of,
    add_client,
    advance,
    assert_fixed_point,
    assert_valid,
    convergence_bound,
    current_active,
    make_client,
    make_snapshot,
    make_task,
    mark_leaving,
    moved_actives,
    rank,
    remove_client,
    run_planner,
    run_until_stable,
    set_lags,
    timeout_expired,
    warmups,
)

from smoothscale.assignor.models import Plan, Snapshot

CHANGELOG = 1_000_000
"""Offsets in every stateful task's changelog: a pod without state is far from caught up."""


def T(n: int) -> str:
    """Task Tn of the seeds."""
    return f"0_{n - 1}"


def tasks(n: int, offsets: int = CHANGELOG) -> list[dict[str, object]]:
    return [make_task(T(i), offsets=offsets) for i in range(1, n + 1)]


def assert_moves_only_to_caught_up(snapshot: Snapshot, plan: Plan) -> None:
    """No task is taken from a caught-up pod that may keep running it and given to a pod that would first
    have to restore it: processing of a task never stops for a restore that could have happened beforehand.

    (Tasks whose owner is gone or timed out may go to a pod that is not caught up: R3 checks those.)
    """
    by_id = {c.id: c for c in snapshot.clients}
    tasks_by_id = {t.id: t for t in snapshot.tasks}
    for task, before, after in moved_actives(snapshot, plan):
        if before is None or before not in by_id:
            continue
        owner = by_id[before]
        if timeout_expired(snapshot, owner) or rank(snapshot, owner, tasks_by_id[task]) > 0:
            continue
        assert rank(snapshot, by_id[after], tasks_by_id[task]) == 0, (
            f"{task} moved from {before} (caught up) to {after}, which is not caught up"
        )


def active_counts(plan: Plan) -> dict[str, int]:
    return {c: len(a.active) for c, a in plan.assignment.items()}


def drive(snapshot: Snapshot, first: Plan | None = None) -> list[tuple[Snapshot, Plan]]:
    """Re-plan with warmups caught up until stable; every move must go to a caught-up pod."""
    trail = run_until_stable(snapshot, convergence_bound(snapshot), first=first)
    for before, plan in trail:
        assert_moves_only_to_caught_up(before, plan)
    return trail


# --------------------------------------------------------------------------------------------------------
# KIP-441, Example Scenarios
# --------------------------------------------------------------------------------------------------------


def test_kip441_scaling_out() -> None:
    """Tasks T1..T3, one standby, I1 and I2; I3 joins.

    First rebalance: I3 only warms up (no active moves to it, it has no state); the actives stay where they
    are. Once I3 has caught up: one task each, one standby each, and only one active has moved (T1 or T3,
    from I1, which ran two).
    """
    snapshot = make_snapshot(
        tasks(3),
        [
            make_client("I1", active=[T(1), T(3)], standby=[T(2)]),
            make_client("I2", active=[T(2)], standby=[T(1), T(3)]),
            make_client("I3"),
        ],
        num_standbys=1,
    )
    first = run_planner(snapshot)
    assert_valid(snapshot, first)
    assert first.assignment["I3"].active == []
    assert actives_of(first.assignment) == {"I1": {T(1), T(3)}, "I2": {T(2)}, "I3": set()}
    assert warmups(first), "I3 must start restoring"
    assert {c for _, c in warmups(first)} == {"I3"}, "only the new pod needs warmups"
    assert not first.stable and first.followup is not None

    trail = drive(snapshot, first)
    final = trail[-1][1]
    assert {c: (len(a.active), len(a.standby)) for c, a in final.assignment.items()} == {
        "I1": (1, 1),
        "I2": (1, 1),
        "I3": (1, 1),
    }
    assert final.assignment["I2"].active == [T(2)]
    assert set(final.assignment["I1"].active + final.assignment["I3"].active) == {T(1), T(3)}
    assert_fixed_point(*trail[-1])


def _scaling_in_cluster(standby_lag: int) -> Snapshot:
    """KIP-441's scaling-in start: T1..T4, one standby, I1..I3; standbys at `standby_lag`."""
    return make_snapshot(
        tasks(4),
        [
            make_client("I1", active=[T(1), T(4)], standby=[T(3)]),
            make_client(
                "I2", active=[T(2)], standby=[T(1), T(4)], lags={T(1): standby_lag, T(4): standby_lag}
            ),
            make_client("I3", active=[T(3)], standby=[T(2)], lags={T(2): standby_lag}),
        ],
        num_standbys=1,
        scale_down_timeout_seconds=600,
    )


@pytest.mark.parametrize("how", ["removed", "leaving"])
def test_kip441_scaling_in_standbys_in_sync(how: str) -> None:
    """I1 is brought down while the standbys are in sync: processing resumes at once (I2's standbys of T1
    and T4 take over), the result is balanced and no followup rebalance is needed.

    `removed`: the pod is gone (KIP-441's case). `leaving`: the operator marked it leaving first; it must be
    emptied in the same plan, as caught-up standbys exist for everything it runs.
    """
    snapshot = _scaling_in_cluster(standby_lag=0)
    if how == "removed":
        snapshot = remove_client(snapshot, "I1")
    else:
        snapshot = mark_leaving(snapshot, "I1", NOW - timedelta(seconds=5))
    plan = run_planner(snapshot)
    assert_valid(snapshot, plan)
    assert_moves_only_to_caught_up(snapshot, plan)
    assert {T(1), T(4)} <= set(plan.assignment["I2"].active)
    assert active_counts(plan) | {"I1": 0} == {"I1": 0, "I2": 2, "I3": 2}
    assert plan.stable, f"no followup rebalance is needed, got {plan.followup}"
    assert plan.followup is None
    assert_fixed_point(snapshot, plan)


def test_kip441_scaling_in_standbys_lag() -> None:
    """I1 is brought down while the standbys lag by more than acceptableRecoveryLag.

    First plan: I3 cannot take over anything yet, so I2 runs T1, T2 and T4 (it is the most caught up on
    T1 and T4) and I3 only T3: imbalanced, not stable, and I3 restores the task it will run. After I3 has
    caught up, the next plan is stable and balanced (two tasks each).
    """
    snapshot = remove_client(_scaling_in_cluster(standby_lag=50_000), "I1")
    first = run_planner(snapshot)
    assert_valid(snapshot, first)
    assert actives_of(first.assignment) == {"I2": {T(1), T(2), T(4)}, "I3": {T(3)}}
    assert not first.stable and first.followup is not None
    moving = set(first.target["I3"].active) - {T(3)}
    assert len(moving) == 1
    i3 = first.assignment["I3"]
    assert moving <= set(i3.standby) | set(i3.warmup), "I3 must be restoring the task it will run"

    second_snapshot = advance(snapshot, first)
    second = run_planner(second_snapshot)
    assert_valid(second_snapshot, second)
    assert_moves_only_to_caught_up(second_snapshot, second)
    assert second.stable
    assert active_counts(second) == {"I2": 2, "I3": 2}


# --------------------------------------------------------------------------------------------------------
# Incremental rebalancing drafts
# --------------------------------------------------------------------------------------------------------


def _three_workers(**config: object) -> Snapshot:
    """The drafts' stable group: S1[T1, T2], S2[T3, T4], S3[T5], no standbys."""
    return make_snapshot(
        tasks(5),
        [
            make_client("S1", active=[T(1), T(2)]),
            make_client("S2", active=[T(3), T(4)]),
            make_client("S3", active=[T(5)]),
        ],
        **config,  # type: ignore[arg-type]
    )


def test_draft_scale_up_with_learners() -> None:
    """S4 joins (learns, runs nothing), S5 joins before S4 is ready (S4 keeps learning, S5 starts), then
    they take over as they catch up; the group ends with one task per worker."""
    start = _three_workers()
    snapshot = add_client(start, make_client("S4"))
    first = run_planner(snapshot)
    assert_valid(snapshot, first)
    assert actives_of(first.assignment) == {"S1": {T(1), T(2)}, "S2": {T(3), T(4)}, "S3": {T(5)}, "S4": set()}
    s4_learning = {t for t, c in warmups(first) if c == "S4"}
    assert s4_learning, "S4 must get a learner"
    assert {c for _, c in warmups(first)} == {"S4"}

    snapshot = add_client(advance(snapshot, first, caught_up=False), make_client("S5"))
    second = run_planner(snapshot)
    assert_valid(snapshot, second)
    assert_moves_only_to_caught_up(snapshot, second)
    assert second.assignment["S4"].active == [] and second.assignment["S5"].active == []
    s4_still = {t for t, c in warmups(second) if c == "S4"}
    assert s4_learning <= s4_still, "a half-restored learner must not be thrown away when S5 joins"
    s5_learning = {t for t, c in warmups(second) if c == "S5"}
    assert s5_learning or len(warmups(second)) == snapshot.config.max_warmup_replicas

    trail = drive(snapshot, second)
    final = trail[-1][1]
    assert active_counts(final) == {"S1": 1, "S2": 1, "S3": 1, "S4": 1, "S5": 1}
    assert_fixed_point(*trail[-1])


def test_draft_scale_down_leaving_member_keeps_actives_until_a_learner_is_ready() -> None:
    """S2 is leaving (timeout not expired). It keeps T3 and T4 while learners restore them on S1 and S3;
    each moves as soon as its own learner is ready (not before, not later); S2 ends empty and never gets
    anything new."""
    snapshot = mark_leaving(_three_workers(scale_down_timeout_seconds=600), "S2", NOW - timedelta(seconds=10))
    first = run_planner(snapshot)
    assert_valid(snapshot, first)
    assert sorted(first.assignment["S2"].active) == [T(3), T(4)]
    learners = dict(warmups(first))
    assert set(learners) == {T(3), T(4)}, "both of S2's tasks need a learner (maxWarmupReplicas=2)"
    assert set(learners.values()) <= {"S1", "S3"}

    ready_task, ready_on = sorted(learners.items())[0]
    other = ({T(3), T(4)} - {ready_task}).pop()
    snapshot = set_lags(advance(snapshot, first, caught_up=False), ready_on, {ready_task: 0})
    second = run_planner(snapshot)
    assert_valid(snapshot, second)
    assert ready_task in second.assignment[ready_on].active, "a ready learner takes over at once"
    assert second.assignment["S2"].active == [other], "S2 keeps what nobody can take over yet"

    trail = drive(snapshot, second)
    final = trail[-1][1]
    assert final.assignment["S2"].active == []
    assert sorted(active_counts(final).values()) == [0, 2, 3]
    for before, plan in trail:
        assert set(plan.assignment["S2"].active) <= set(current_active_of(before, "S2"))


def current_active_of(snapshot: Snapshot, client_id: str) -> list[str]:
    return [t for t, c in current_active(snapshot).items() if c == client_id]


def test_draft_scale_down_timeout_expired_empties_the_member_at_once() -> None:
    """S2 has been leaving longer than scaleDownTimeoutSeconds: nothing is caught up anywhere, but the user
    asked not to wait any longer, so T3 and T4 move now and S2 holds nothing."""
    snapshot = mark_leaving(
        _three_workers(scale_down_timeout_seconds=600), "S2", NOW - timedelta(seconds=700)
    )
    plan = run_planner(snapshot)
    assert_valid(snapshot, plan)
    assert plan.assignment["S2"].active == []
    assert plan.assignment["S2"].standby == [] and plan.assignment["S2"].warmup == []
    final = drive(snapshot, plan)[-1][1]
    assert sorted(active_counts(final).values()) == [0, 2, 3]


def test_draft_scale_down_timeout_expiring_hands_over_to_the_learners() -> None:
    """The timeout runs out while the learners are half-way: they are "the best shot" (most caught up), so
    T3 and T4 become active exactly where they were being learned."""
    snapshot = mark_leaving(_three_workers(scale_down_timeout_seconds=600), "S2", NOW - timedelta(seconds=10))
    first = run_planner(snapshot)
    assert_valid(snapshot, first)
    learners = dict(warmups(first))
    assert set(learners) == {T(3), T(4)}
    snapshot = advance(snapshot, first, caught_up=False, seconds=700)
    for task, client in learners.items():
        snapshot = set_lags(snapshot, client, {task: 300_000})
    second = run_planner(snapshot)
    assert_valid(snapshot, second)
    assert second.assignment["S2"].active == []
    for task, client in learners.items():
        assert task in second.assignment[client].active, f"{task} should go to its learner {client}"


@pytest.mark.parametrize("max_warmups", [2, 4])
def test_draft_online_host_swap(max_warmups: int) -> None:
    """S1[T1, T2], S2[T3, T4]; S3 and S4 (a new instance type) join, then S1 and S2 are marked leaving.

    Nothing is ever active on a pod that is not caught up while a caught-up one exists, the old pods get
    no new copies, and they end empty with two tasks on each new pod. With four warmups allowed (as in the
    draft's example) the swap finishes one plan after the learners are ready.
    """
    snapshot = make_snapshot(
        tasks(4),
        [
            make_client("S1", active=[T(1), T(2)]),
            make_client("S2", active=[T(3), T(4)]),
            make_client("S3", rack="zone-b"),
            make_client("S4", rack="zone-b"),
        ],
        max_warmup_replicas=max_warmups,
    )
    first = run_planner(snapshot)
    assert_valid(snapshot, first)
    assert active_counts(first) == {"S1": 2, "S2": 2, "S3": 0, "S4": 0}
    assert warmups(first) and {c for _, c in warmups(first)} <= {"S3", "S4"}

    snapshot = advance(snapshot, first, caught_up=False)
    for old in ("S1", "S2"):
        snapshot = mark_leaving(snapshot, old, snapshot.now)
    second = run_planner(snapshot)
    assert_valid(snapshot, second)
    assert active_counts(second) == {"S1": 2, "S2": 2, "S3": 0, "S4": 0}, "nobody is caught up yet"
    assert {c for _, c in warmups(second)} <= {"S3", "S4"}
    assert {c for c, t in second.target.items() if t.active} == {"S3", "S4"}

    trail = drive(snapshot, second)
    final = trail[-1][1]
    assert active_counts(final) == {"S1": 0, "S2": 0, "S3": 2, "S4": 2}
    for before, plan in trail:
        for old in ("S1", "S2"):
            held = plan.assignment[old]
            assert set(held.active) <= set(current_active_of(before, old)) and not held.standby + held.warmup
    if max_warmups == 4:
        assert len(trail) <= 2, f"all four learners fit at once; took {len(trail)} plans"


@pytest.mark.parametrize("offsets", [0, CHANGELOG])
def test_draft_scale_up_from_empty_group(offsets: int) -> None:
    """Three new workers and no state anywhere: nothing to learn, so everything is assigned at once,
    balanced (2, 2, 1), and the plan is stable (no learners, no followup)."""
    snapshot = make_snapshot(tasks(5, offsets), [make_client(f"S{i}") for i in (1, 2, 3)])
    plan = run_planner(snapshot)
    assert_valid(snapshot, plan)
    assert plan.stable and plan.followup is None and warmups(plan) == []
    assert sorted(active_counts(plan).values()) == [1, 2, 2]
    assert_fixed_point(snapshot, plan)


def test_draft_scale_up_from_one_member_without_changelogs() -> None:
    """S1 starts alone and gets all five tasks; S2 and S3 join while the changelogs are still empty, so they
    are caught up immediately and take their share in the same plan."""
    snapshot = make_snapshot(tasks(5, offsets=0), [make_client("S1")])
    first = run_planner(snapshot)
    assert_valid(snapshot, first)
    assert first.stable and sorted(first.assignment["S1"].active) == [T(i) for i in range(1, 6)]
    snapshot = advance(snapshot, first)
    for name in ("S2", "S3"):
        snapshot = add_client(snapshot, make_client(name))
    second = run_planner(snapshot)
    assert_valid(snapshot, second)
    assert second.stable
    assert sorted(active_counts(second).values()) == [1, 2, 2]


def test_draft_member_lost_while_another_learns() -> None:
    """S4 is learning T1 when S1 (running T1 and T2) disappears. T1 goes to S4, which is the most caught
    up on it even if not fully; T2 (no state anywhere) can go anywhere; the group then balances."""
    start = add_client(_three_workers(), make_client("S4"))
    first = run_planner(start)
    assert_valid(start, first)
    learning = {t for t, c in warmups(first) if c == "S4"}
    assert learning
    task = sorted(learning)[0]
    snapshot = set_lags(advance(start, first, caught_up=False), "S4", {task: 400_000})
    owner = current_active(snapshot)[task]
    snapshot = remove_client(snapshot, owner)
    second = run_planner(snapshot)
    assert_valid(snapshot, second)
    assert task in second.assignment["S4"].active
    final = drive(snapshot, second)[-1][1]
    assert sorted(active_counts(final).values())[-1] - sorted(active_counts(final).values())[0] <= 1


def test_draft_learners_in_flight_survive_a_drain() -> None:
    """S1, S2, S3 hold 2, 4, 2 tasks; S4 joins and learns two of S2's (maxWarmupReplicas 2). Halfway
    through those restores, S1 is marked leaving. The drafts: "keep the existing learner tasks running. We
    don't want to see half way bounce": every learner whose destination is still in the target keeps
    restoring there, and S1's tasks wait for a slot instead of taking it from them.

    Trap: ranking the leaving pod's moves first and replacing half-restored warmups with new ones.
    """
    snapshot = make_snapshot(
        tasks(8),
        [
            make_client("S1", active=[T(1), T(2)]),
            make_client("S2", rack="zone-b", active=[T(3), T(4), T(5), T(6)]),
            make_client("S3", rack="zone-c", active=[T(7), T(8)]),
            make_client("S4", rack="zone-b"),
        ],
        max_warmup_replicas=2,
    )
    first = run_planner(snapshot)
    assert_valid(snapshot, first)
    learning = warmups(first)
    assert len(learning) == 2 and {c for _, c in learning} == {"S4"}

    snapshot = advance(snapshot, first, caught_up=False)
    snapshot = set_lags(snapshot, "S4", {task: CHANGELOG // 2 for task, _ in learning})
    snapshot = mark_leaving(snapshot, "S1", snapshot.now)
    drained = run_planner(snapshot)
    assert_valid(snapshot, drained)
    kept = [
        (task, client)
        for task, client in learning
        if task in drained.target[client].active or task in drained.target[client].standby
    ]
    assert kept, f"the drain moved every learner's target: {drained.target}"
    for task, client in kept:
        assert task in drained.assignment[client].warmup, (
            f"{task} was half restored on {client}, still its target, but is no longer a warmup there: "
            f"{warmups(drained)}"
        )
