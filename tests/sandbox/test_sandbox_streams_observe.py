"""What the demo sees of a pod on the streams protocol, from Kafka's view of the group: a restoring active
task is not processing yet, a pod runs its generation once its members run exactly its part of the plan, and
a killed process's member, still in the group until its session times out, runs nothing for its pod."""

from __future__ import annotations

from typing import Any

from smoothscale.contract.publication import ClientAssignment, Publication
from smoothscale.sandbox.streams_observe import StreamsGroupObserver


class Watch:
    def __init__(self, view: dict[str, Any] | None) -> None:
        self.view = view

    def latest(self, group: str) -> dict[str, Any] | None:
        return self.view


def member(
    pod: str, epoch: int, active: list[str], standby: list[str], offsets: dict[str, int]
) -> dict[str, Any]:
    return {
        "memberId": f"{pod}-{epoch}",
        "pod": pod,
        "memberEpoch": epoch,
        "assignment": {"active": active, "standby": standby, "warmup": []},
        "taskOffsets": offsets,
        "taskEndOffsets": dict.fromkeys(standby, 100),
    }


PLAN = Publication(
    generation=4,
    assignment={
        "orders-0": ClientAssignment(active=["1_0"], standby=["1_1"]),
        "orders-1": ClientAssignment(active=["1_1"]),
    },
)


def observer(*members: dict[str, Any]) -> StreamsGroupObserver:
    view = {"assignor": "smoothscale", "members": list(members)}
    return StreamsGroupObserver(Watch(view), "orders")  # type: ignore[arg-type]


def test_a_pod_runs_its_generation_once_its_members_run_its_part() -> None:
    seen = observer(
        member("orders-0", 7, ["1_0"], ["1_1"], {"1_1": 90}),
        member("orders-1", 7, [], [], {}),
    )
    reports = seen.reports({}, PLAN)
    assert (reports["orders-0"].generation, reports["orders-1"].generation) == (4, 3)
    assert reports["orders-0"].lags == {"1_0": 0, "1_1": 10}
    assert seen({}) == {"orders-0": {"1_0"}, "orders-1": set()}


def test_an_active_task_reported_at_a_changelog_offset_still_restores() -> None:
    # the end offset of 1_0 is known from another member's copy of it
    other = member("orders-1", 7, ["1_1"], ["1_0"], {"1_0": 100})
    seen = observer(member("orders-0", 7, ["1_0"], ["1_1"], {"1_0": 40, "1_1": 100}), other)
    assert seen.reports({}, PLAN)["orders-0"].lags["1_0"] == 60


def test_a_killed_processs_member_runs_nothing_for_its_pod() -> None:
    """orders-0's JVM was killed and started again: its old member (epoch 7) keeps 1_0 in the group until
    its session times out; the new member (epoch 9) has nothing yet."""
    seen = observer(
        member("orders-0", 7, ["1_0"], ["1_1"], {"1_1": 100}),
        member("orders-0", 9, [], [], {}),
        member("orders-1", 9, ["1_1"], [], {}),
    )
    assert seen({}) == {"orders-0": set(), "orders-1": {"1_1"}}
    assert seen.reports({}, PLAN)["orders-0"].generation == 3
    assert seen.differs(PLAN) is None, "the final check reads every member"
