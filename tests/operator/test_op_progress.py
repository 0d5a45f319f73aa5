"""A migration's progress and ETA (`control.progress`): the queue model, the measured rates, the work left."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime, timedelta

import pytest

from smoothscale.assignor.models import ClientTarget, Plan, PlanStats
from smoothscale.contract.publication import ClientAssignment, Publication, Revocation
from smoothscale.control.progress import Move, RestoreMeter, Work, remaining_work

T0 = datetime(2026, 11, 28, 12, 0, tzinfo=UTC)


def at(seconds: float) -> datetime:
    return T0 + timedelta(seconds=seconds)


def run(meter: RestoreMeter, rounds: Sequence[tuple[float, Work]]) -> RestoreMeter:
    for seconds, work in rounds:
        meter = meter.observe(work, at(seconds), pods={"p0", "p1", "p2"})
    return meter


def test_no_migration_keeps_the_meter_as_it_is() -> None:
    meter = RestoreMeter()
    assert meter.observe(Work(), at(0), pods={"p0"}) is meter
    assert meter.estimate(Work(), at(0)) is None


def test_copies_in_flight_finish_at_their_pods_measured_rate() -> None:
    """The first interval each copy restored in gives no rate (it may have begun within it); the next do."""
    start = Work(warming=(Move("1_0", "p1", 12_000), Move("1_1", "p2", 11_000)), cap=2)
    first = Work(warming=(Move("1_0", "p1", 10_000), Move("1_1", "p2", 10_000)), cap=2)
    later = Work(warming=(Move("1_0", "p1", 8_000), Move("1_1", "p2", 9_000)), cap=2)
    meter = run(RestoreMeter(), [(-1, start), (0, first)])
    early = meter.estimate(first, at(0))
    assert meter.rates == {} and early is not None and early.eta is None
    meter = run(meter, [(1, later)])
    progress = meter.estimate(later, at(1))
    assert progress is not None
    assert progress.records_restored == 6_000 and progress.records_left == 17_000
    assert progress.percent == 26.1
    by_task = {copy.task: copy for copy in progress.warming}
    assert by_task["1_0"].rate == pytest.approx(2_000) and by_task["1_0"].eta == at(5)
    assert by_task["1_1"].rate == pytest.approx(1_000) and by_task["1_1"].eta == at(10)
    assert progress.eta == at(10)


def test_queued_moves_take_the_next_free_slot_at_the_mean_rate() -> None:
    """Two slots at 1,000 records/s; four queued moves of 2,000 records: the slots free at 1 s and 2 s, then
    each takes two more moves of 2 s (no switch time measured: every slot restored all along)."""
    queued = tuple(Move(f"1_{i}", "p0", 2_000) for i in range(4))
    start = Work(warming=(Move("0_0", "p1", 3_000), Move("0_1", "p2", 4_000)), queued=queued, cap=2)
    first = Work(warming=(Move("0_0", "p1", 2_000), Move("0_1", "p2", 3_000)), queued=queued, cap=2)
    later = Work(warming=(Move("0_0", "p1", 1_000), Move("0_1", "p2", 2_000)), queued=queued, cap=2)
    meter = run(RestoreMeter(), [(-1, start), (0, first), (1, later)])
    progress = meter.estimate(later, at(1))
    assert progress is not None and progress.queued == 4
    # slots free at 2 s and 3 s; moves end at 4, 5, 6, 7 s
    assert progress.eta == at(7)


def test_time_a_slot_stands_without_a_restoring_copy_delays_every_queued_move() -> None:
    """A new warmup whose pod has not started restoring yet leaves its slot idle: that idle time per
    warmup started is the start-up time every queued move pays."""
    queued = (Move("1_0", "p1", 1_000),)
    rounds = [
        (0, Work(warming=(Move("0_0", "p1", 3_000),), queued=queued, cap=1)),
        (1, Work(warming=(Move("0_0", "p1", 3_000),), queued=queued, cap=1)),  # not restoring yet
        (2, Work(warming=(Move("0_0", "p1", 2_000),), queued=queued, cap=1)),
        (3, Work(warming=(Move("0_0", "p1", 1_000),), queued=queued, cap=1)),
    ]
    meter = run(RestoreMeter(), rounds)
    assert meter.idle == pytest.approx(1.0) and meter.starts == 1
    progress = meter.estimate(rounds[-1][1], at(3))
    assert progress is not None
    # the copy in flight ends in 1 s, then 1 s of start-up and 1 s to restore the queued move at 1,000/s
    assert progress.eta == at(3 + 3)
    # with a round every 2 s, the slot frees at the round 2 s from now, and the last move ends at the round
    # after it has caught up: start-up time less the half round each slot waited on average (0 here)
    gridded = meter.estimate(rounds[-1][1], at(3), interval=2.0)
    assert gridded is not None and gridded.eta == at(3 + 4)


def test_a_copy_caught_up_within_an_interval_gives_no_rate() -> None:
    """It restored only part of the interval: its drop over the whole interval would read as a slow pod."""
    rounds = [
        (0, Work(warming=(Move("0_0", "p1", 4_000),), cap=1, caught_up=100)),
        (1, Work(warming=(Move("0_0", "p1", 3_000),), cap=1, caught_up=100)),
        (2, Work(warming=(Move("0_0", "p1", 2_000),), cap=1, caught_up=100)),
        (3, Work(warming=(Move("0_0", "p1", 50),), cap=1, caught_up=100)),
    ]
    meter = run(RestoreMeter(), rounds)
    assert meter.rates["p1"] == pytest.approx(1_000) and meter.restored == pytest.approx(3_950)


def test_a_copy_that_began_restoring_within_an_interval_gives_no_rate() -> None:
    """It restored for part of the interval only (on real Kafka Streams a warmup of 300,000 records restores
    in two or three seconds: its first interval's fall read as a third of its rate)."""
    rounds = [
        (0, Work(warming=(Move("0_0", "p1", 30_000),), cap=1)),
        (1, Work(warming=(Move("0_0", "p1", 29_000),), cap=1)),  # began late in the interval
        (2, Work(warming=(Move("0_0", "p1", 26_000),), cap=1)),
    ]
    meter = run(RestoreMeter(), rounds[:2])
    assert meter.rates == {} and meter.restored == pytest.approx(1_000)
    meter = run(meter, rounds[2:])
    assert meter.rates["p1"] == pytest.approx(3_000)


def test_no_eta_before_any_copy_was_seen_restoring() -> None:
    work = Work(warming=(Move("1_0", "p1", 5_000),), cap=1)
    meter = run(RestoreMeter(), [(0, work), (1, work)])
    progress = meter.estimate(work, at(1))
    assert progress is not None and progress.eta is None and progress.percent == 0.0


def test_the_first_eta_is_kept_for_the_whole_migration_and_forgotten_after() -> None:
    start = Work(warming=(Move("1_0", "p1", 5_000),), cap=1)
    first = Work(warming=(Move("1_0", "p1", 4_000),), cap=1)
    second = Work(warming=(Move("1_0", "p1", 3_000),), cap=1)
    third = Work(warming=(Move("1_0", "p1", 2_500),), cap=1)
    meter = run(RestoreMeter(), [(-1, start), (0, first), (1, second)])
    meter = meter.promised(meter.estimate(second, at(1)))
    assert meter.first_eta == at(4)
    meter = meter.observe(third, at(2), pods={"p1"})
    progress = meter.estimate(third, at(2))
    assert progress is not None and progress.first_eta == at(4) and progress.eta != at(4)
    done = meter.observe(Work(), at(3), pods={"p1"})
    assert done.started is None and done.first_eta is None and done.rates  # rates kept for the next one
    assert done.observe(Work(), at(4), pods={"p1"}) is done
    assert done.observe(Work(), at(4), pods=set()).rates == {}


def test_remaining_work_from_the_publication_and_the_plans_target() -> None:
    published = Publication(
        generation=3,
        assignment={
            "p0": ClientAssignment(active=["1_0", "1_1", "1_2"]),
            "p1": ClientAssignment(warmup=["1_1"]),
            "p2": ClientAssignment(),
        },
        revoking={"0_0": Revocation(owner="p0", generation=3)},
    )
    plan = Plan(
        assignment={
            "p0": ClientAssignment(active=["1_0", "1_1", "1_2"]),
            "p1": ClientAssignment(warmup=["1_1"]),
            "p2": ClientAssignment(),
        },
        target={
            "p0": ClientTarget(active=["1_0"]),
            "p1": ClientTarget(active=["1_1"]),
            "p2": ClientTarget(active=["1_2"], standby=["1_0"]),
        },
        stable=False,
        followup=None,
        stats=PlanStats(
            cross_rack_cost=0,
            active_imbalance=0,
            moved_actives=0,
            warmups=1,
            target_cross_rack_cost=0,
            target_active_imbalance=0,
        ),
        explain={},
    )
    lags = {"p1": {"1_1": 700}, "p2": {"1_0": 50}}
    sizes = {"1_0": 1_000, "1_1": 1_000, "1_2": 900}
    work = remaining_work(plan, published, lags, sizes, acceptable_lag=100, cap=2)
    assert work.warming == (Move("1_1", "p1", 700),)
    assert work.queued == (Move("1_2", "p2", 900),)  # the standby 1_0 on p2 is within the acceptable lag
    assert work.revoking == 1 and work.records_left == 1_600 and work.active
