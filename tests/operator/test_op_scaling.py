"""The pod-set decisions (`scaling.plan_pod_set`) as data: `replicas` staying pods of the current revision."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime, timedelta

from op_testkit import pod_record

from smoothscale.control.pods import PodInfo, format_time
from smoothscale.control.scaling import (
    PodSetInput,
    PodSetPlan,
    RetireReason,
    as_planned,
    plan_pod_set,
)
from smoothscale.resource import UpdateStrategy

NOW = datetime(2026, 11, 21, 10, 0, tzinfo=UTC)
EARLIER = format_time(NOW - timedelta(seconds=30))


def decide(
    pods: Sequence[PodInfo],
    replicas: int,
    *,
    holding: Sequence[str] = (),
    strategy: UpdateStrategy = UpdateStrategy.SWAP,
    surge: int = 100,
    timeout: float | None = None,
    claims: bool = False,
    settled: bool = True,
    revision: str = "r1",
) -> PodSetPlan:
    return plan_pod_set(
        PodSetInput(
            app="orders",
            replicas=replicas,
            revision=revision,
            strategy=strategy,
            max_surge=surge,
            scale_down_timeout=timeout,
            delete_claims=claims,
            pods=pods,
            holding=holding,
            settled=settled,
            now=NOW,
        )
    )


def pods(*ordinals: int, **options: object) -> list[PodInfo]:
    return [pod_record(o, **options) for o in ordinals]  # type: ignore[arg-type]


def test_steady_state_changes_nothing() -> None:
    assert decide(pods(0, 1, 2), 3, holding=["orders-0", "orders-1", "orders-2"]).empty


def test_an_empty_app_gets_its_pods_and_a_scale_up_the_next_ordinals() -> None:
    assert decide([], 3).create == (0, 1, 2)
    assert decide(pods(0, 1, 2), 5).create == (3, 4)


def test_scale_down_marks_the_highest_ordinals_leaving() -> None:
    plan = decide(pods(0, 1, 2, 3, 4), 3)
    assert plan.mark_leaving == (("orders-4", "ScaleDown"), ("orders-3", "ScaleDown"))
    assert not plan.create and not plan.retire


def test_pods_a_person_marked_leaving_count_toward_a_scale_down() -> None:
    current = [*pods(0, 2, 3), pod_record(1, leaving=EARLIER)]
    plan = decide(current, 2, holding=["orders-1"])
    assert plan.mark_leaving == (("orders-3", "ScaleDown"),)


def test_a_leaving_pod_is_kept_while_it_holds_tasks_and_retired_once_it_holds_nothing() -> None:
    current = [*pods(0, 1), pod_record(2, leaving=EARLIER, reason="ScaleDown")]
    assert not decide(current, 2, holding=["orders-0", "orders-2"]).retire
    plan = decide(current, 2, holding=["orders-0"], claims=True)
    assert [(r.pod, r.reason, r.delete_claim) for r in plan.retire] == [
        ("orders-2", RetireReason.DRAINED, True)
    ]
    assert plan.leaving_since["orders-2"] == NOW - timedelta(seconds=30)


def test_the_scale_down_timeout_retires_a_pod_that_still_holds_tasks() -> None:
    current = [*pods(0, 1), pod_record(2, leaving=EARLIER, reason="ScaleDown")]
    assert not decide(current, 2, holding=["orders-2"], timeout=60).retire
    plan = decide(current, 2, holding=["orders-2"], timeout=30)
    assert [(r.pod, r.reason) for r in plan.retire] == [("orders-2", RetireReason.TIMED_OUT)]


def test_scaling_to_zero_retires_pods_that_have_nowhere_to_hand_their_tasks() -> None:
    plan = decide(pods(0, 1, leaving=EARLIER, reason="ScaleDown"), 0, holding=["orders-0", "orders-1"])
    assert {r.reason for r in plan.retire} == {RetireReason.SCALED_TO_ZERO}


def test_a_drain_by_hand_is_stamped_and_the_pod_replaced() -> None:
    current = [*pods(0, 2), pod_record(1, leaving="true")]
    plan = decide(current, 3, holding=["orders-0", "orders-1", "orders-2"])
    assert plan.stamp_leaving == ("orders-1",)
    assert plan.leaving_since["orders-1"] == NOW
    assert plan.create == (3,), "a new ordinal: orders-1 still exists"
    assert not plan.mark_leaving


def test_a_lost_pod_comes_back_under_its_name_once_no_generation_names_it() -> None:
    assert decide(pods(0, 2), 3, holding=["orders-0", "orders-1", "orders-2"]).create == ()
    assert decide(pods(0, 2), 3, holding=["orders-0", "orders-2"]).create == (1,)


def test_raising_replicas_again_takes_back_the_pods_marked_last() -> None:
    later = format_time(NOW - timedelta(seconds=5))
    current = [
        *pods(0, 1),
        pod_record(2, leaving=EARLIER, reason="ScaleDown"),
        pod_record(3, leaving=later, reason="ScaleDown"),
        pod_record(4, leaving=later),  # drained by a person: never taken back
    ]
    plan = decide(current, 3, holding=["orders-2", "orders-3", "orders-4"])
    assert plan.unmark_leaving == ("orders-3",)
    assert not plan.create


def test_raising_replicas_again_takes_back_a_drained_pod_instead_of_replacing_it() -> None:
    """6 -> 4 -> 5 before the scale-down's pods were deleted: orders-4 (drained, nothing left to hand over)
    stays as the fifth pod; no orders-6 is created beside it while it is being deleted."""
    current = [*pods(0, 1, 2, 3), *pods(4, 5, leaving=EARLIER, reason="ScaleDown")]
    plan = decide(current, 5, holding=[f"orders-{i}" for i in range(4)])
    assert plan.unmark_leaving == ("orders-4",)
    assert [r.pod for r in plan.retire] == ["orders-5"]
    assert not plan.create


def test_swap_surges_new_pods_and_retires_old_ones_only_behind_ready_new_ones() -> None:
    old = pods(0, 1, 2, revision="old")
    assert decide(old, 3).create == (3, 4, 5)
    starting = old + pods(3, 4, 5, ready=False)
    assert decide(starting, 3).empty, "no old pod leaves before a new one is ready"
    ready = old + pods(3, 4) + pods(5, ready=False)
    assert decide(ready, 3).mark_leaving == (("orders-2", "Swap"), ("orders-1", "Swap"))
    assert decide(old + pods(3, 4, 5), 3).mark_leaving == tuple((f"orders-{i}", "Swap") for i in (2, 1, 0))


def test_swap_with_a_surge_of_one_replaces_one_pod_at_a_time() -> None:
    old = pods(0, 1, 2, revision="old")
    assert decide(old, 3, surge=1).create == (3,)
    plan = decide([*old, pod_record(3)], 3, surge=1)
    assert plan.mark_leaving == (("orders-2", "Swap"),)
    assert not plan.create
    leaving = [pod_record(0, revision="old"), pod_record(1, revision="old"), pod_record(3)]
    leaving.append(pod_record(2, revision="old", leaving=EARLIER, reason="Swap"))
    assert decide(leaving, 3, surge=1, holding=["orders-2"]).create == ()


def test_rolling_restart_restarts_one_old_pod_when_everything_is_settled() -> None:
    current = pods(0, 1, revision="old") + pods(2)
    rolling = UpdateStrategy.ROLLING_RESTART
    assert decide(current, 3, strategy=rolling).restart == ("orders-1",)
    assert decide(current, 3, strategy=rolling, settled=False).restart == ()
    not_ready = pods(0, revision="old") + pods(1, revision="old", ready=False) + pods(2)
    assert decide(not_ready, 3, strategy=rolling).restart == ()
    assert decide(current, 3, strategy=rolling).mark_leaving == ()


def test_stopped_pods_are_removed_and_replaced_under_their_name() -> None:
    current = [*pods(0, 1), pod_record(2, phase="Failed")]
    plan = decide(current, 3)
    assert plan.remove_stopped == ("orders-2",)
    assert plan.create == (), "its replacement waits for the name"
    assert decide([*pods(0, 1), pod_record(2, deleting=True)], 3).create == ()
    assert decide(pods(0, 1), 3).create == (2,)


def test_planning_sees_this_rounds_decisions() -> None:
    current = [*pods(0, 1, 2, 3), pod_record(4, leaving=EARLIER, reason="ScaleDown")]
    plan = decide(current, 2, holding=["orders-0", "orders-1", "orders-2", "orders-3"])
    seen = {p.name: p for p in as_planned(current, plan, NOW)}
    assert seen["orders-4"].deleting and seen["orders-4"].alive
    assert seen["orders-3"].leaving == format_time(NOW) and seen["orders-2"].leaving == format_time(NOW)
    assert seen["orders-0"] == current[0]
