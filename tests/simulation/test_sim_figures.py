"""The figures point the right way on small scenarios whose answer can be worked out by hand."""

from __future__ import annotations

import pytest
from sim_testkit import SCENARIO_FILES, library_scenario, small_scenario

from smoothscale.simulation import simulate

NO_DELAYS = {"applyDelaySeconds": 0, "handoverPollSeconds": 1}


def test_eager_downtime_is_the_restore_time_of_the_moved_tasks() -> None:
    """1 -> 2 pods, four 1 M-record tasks: eager moves two to the new pod, which restores both at once at
    50 k records/s each (its 100 k budget split in two), 20 s each. The stop-the-world generation goes out
    in the round of the `replicas` change (the spec changed: the operator plans), and the round the new pod's
    start wakes sees every task stopped and publishes the target at once: no task waits between owners."""
    result = simulate(small_scenario(operator=NO_DELAYS), "eager", seed=0)
    assert result.restore_downtime_task_seconds == pytest.approx(2 * 20.0)
    assert result.handover_downtime_task_seconds == 0
    assert result.plans_by_reason == {"SpecChanged": 1, "PodsChanged": 1}
    assert result.records_restored == pytest.approx(2 * 1_000_000)


@pytest.mark.parametrize("strategy", ["kip441", "smoothscale"])
def test_moves_through_warmups_never_wait_for_a_restore(strategy: str) -> None:
    """The same scale-out without stopping the world: each moved task pauses only for its hand-over, between
    its old owner stopping and its new owner starting: the operator sees the acknowledgment one ack delay
    later (0.1 s by default), the new owner applies the next generation one apply delay later (0.25 s)."""
    result = simulate(small_scenario(), strategy, seed=0)
    assert result.restore_downtime_task_seconds == 0
    assert result.handover_downtime_task_seconds == pytest.approx(2 * (0.1 + 0.25))
    slow = simulate(small_scenario(operator={"ackDelaySeconds": 2}), strategy, seed=0)
    # A slower acknowledgment: the periodic poll, 1 s after the revocation, sees it first (0.75 s after the
    # old owner stopped), then the new owner applies.
    assert slow.handover_downtime_task_seconds == pytest.approx(2 * ((1.0 - 0.25) + 0.25))


def test_smoothscale_balances_sooner_than_kip441_and_eager_stops_more() -> None:
    scenario = library_scenario("scale-out-3-to-6")
    eager, kip441, smooth = (simulate(scenario, s, seed=0) for s in ("eager", "kip441", "smoothscale"))
    assert eager.downtime_task_seconds > 100 * smooth.downtime_task_seconds
    assert smooth.time_to_balance_seconds is not None and kip441.time_to_balance_seconds is not None
    assert kip441.time_to_balance_seconds >= 5 * smooth.time_to_balance_seconds
    assert smooth.ratio_to_lower_bound is not None and smooth.ratio_to_lower_bound <= 1.25
    assert smooth.generations_published == kip441.generations_published  # same moves, sooner
    assert set(kip441.plans_by_reason) == {"SpecChanged", "PodsChanged", "ProbingInterval"}
    assert set(smooth.plans_by_reason) == {"SpecChanged", "PodsChanged", "CaughtUp"}


@pytest.mark.parametrize("strategy", ["kip441", "smoothscale"])
@pytest.mark.parametrize("name", [path.stem for path in SCENARIO_FILES])
def test_the_lower_bound_is_never_beaten(name: str, strategy: str) -> None:
    """Strategies that move state through capped warmups never balance faster than the physical bound
    (eager restores everything at once, ignoring the cap, so it may)."""
    for event in simulate(library_scenario(name), strategy, seed=0).events:
        if event.time_to_balance_seconds is not None and event.lower_bound is not None:
            assert event.time_to_balance_seconds >= event.lower_bound.seconds, event


def test_a_crash_that_loses_its_volume_restores_more() -> None:
    crash = {"at": 65, "type": "podCrash", "pod": "small-1", "restartAfterSeconds": 5}
    base = {"pods": {"count": 2}, "planner": {"numStandbys": 1}}
    kept = simulate(small_scenario(**base, events=[crash]), "smoothscale", seed=0)
    lost = simulate(small_scenario(**base, events=[{**crash, "volumeLost": True}]), "smoothscale", seed=0)
    assert lost.records_restored > kept.records_restored + 1_000_000
    assert kept.restore_downtime_task_seconds == lost.restore_downtime_task_seconds == 0  # standbys took over


def test_a_scale_down_timeout_cuts_the_wait_at_the_price_of_a_restore() -> None:
    patient = simulate(library_scenario("draft-scale-down"), "smoothscale", seed=0)
    hasty = simulate(library_scenario("draft-scale-down-timeout"), "smoothscale", seed=0)
    assert patient.restore_downtime_task_seconds == 0
    assert hasty.restore_downtime_task_seconds > 0
    assert hasty.time_to_balance_seconds is not None and patient.time_to_balance_seconds is not None
    assert hasty.time_to_balance_seconds < patient.time_to_balance_seconds


def test_a_skewed_pod_builds_input_lag() -> None:
    """One pod with 2,000 records/s for 40 tasks of 100 records/s each falls behind until it sheds some."""
    scenario = small_scenario(
        pods={"count": 1, "processRecordsPerSecond": 2_000},
        topology={
            "subtopologies": [{"partitions": 40, "changelogRecords": 100_000, "inputRecordsPerSecond": 100}]
        },
        events=[{"at": 65, "type": "scaleOut", "pods": 3}],
    )
    result = simulate(scenario, "smoothscale", seed=0)
    assert max(s.input_lag for s in result.timeline) > 0
    assert result.timeline[-1].input_lag < max(s.input_lag for s in result.timeline)
    assert result.peak_task_skew == 40
