"""State behind, but not from scratch: a pod back from an outage with its volume holds its old tasks'
stores minutes behind. The target gives it those tasks rather than others it would restore whole."""

from __future__ import annotations

import pytest
from rules import assert_valid, make_client, make_snapshot, make_task, run_planner

TASKS = [f"0_{p}" for p in range(8)]


@pytest.mark.parametrize("kept", [TASKS[:4], TASKS[4:], TASKS[::2], TASKS[1::2]])
def test_a_pod_back_with_its_volume_is_given_the_tasks_it_has_state_for(kept: list[str]) -> None:
    """`a` runs all eight; `back` returns with four of them 100,000 records behind (of 1,000,000): those
    four are its share of the target, whichever they are."""
    caught_up = dict.fromkeys(TASKS, 0)
    clients = [
        make_client("a", active=TASKS, lags=caught_up),
        make_client("back", lags=dict.fromkeys(kept, 100_000)),
    ]
    snapshot = make_snapshot([make_task(task) for task in TASKS], clients, strategy="none")
    plan = run_planner(snapshot)
    assert_valid(snapshot, plan)
    assert sorted(plan.target["back"].active) == sorted(kept)


def test_state_behind_by_more_than_half_its_changelog_counts_as_none() -> None:
    """Restoring 600,000 of 1,000,000 records is no cheaper, for the target, than a cold copy: the pod's
    share is then chosen as for a pod without state (every choice is valid, and it is not forced)."""
    caught_up = dict.fromkeys(TASKS, 0)
    clients = [
        make_client("a", active=TASKS, lags=caught_up),
        make_client("back", lags=dict.fromkeys(TASKS[4:], 600_000)),
    ]
    fresh = [make_client("a", active=TASKS, lags=caught_up), make_client("back")]
    tasks = [make_task(task) for task in TASKS]
    behind, cold = (
        make_snapshot(tasks, clients, strategy="none"),
        make_snapshot(tasks, fresh, strategy="none"),
    )
    assert run_planner(behind).target["back"] == run_planner(cold).target["back"]
