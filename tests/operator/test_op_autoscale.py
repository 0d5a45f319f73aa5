"""`autoscale`: the recommended replicas from rates and lag, and the scale-down stabilisation window."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from op_testkit import pod_record

from smoothscale.contract.publication import ClientAssignment, Publication
from smoothscale.control.autoscale import (
    ScaleDownHold,
    measured_capacity,
    recommended_replicas,
    staying_current,
)
from smoothscale.control.observed import PodMetrics, ScrapeResult

NOW = datetime(2026, 11, 22, 3, 0, tzinfo=UTC)
PUBLISHED = Publication(
    generation=4,
    assignment={
        "orders-0": ClientAssignment(active=["0_0", "0_1", "0_2"]),
        "orders-1": ClientAssignment(active=["0_3", "0_4"]),
        "orders-2": ClientAssignment(active=["0_5"], standby=["0_0"]),
    },
)
EVEN = {f"0_{p}": 10.0 for p in range(6)}


def test_no_measured_rate_gives_no_recommendation() -> None:
    assert recommended_replicas({}, PUBLISHED, 0, 6) is None
    assert recommended_replicas({"0_0": 0.0}, PUBLISHED, 5_000, 6) is None


def test_the_load_is_packed_as_densely_as_the_busiest_pod_carries_it() -> None:
    # R = 60/s, the busiest pod does 30/s: two pods as busy as it carry the load.
    assert recommended_replicas(EVEN, PUBLISHED, 0, 6) == 2


def test_lag_to_drain_within_the_target_time_adds_demand() -> None:
    # 30,000 records behind over 300 s: 100/s more, (60 + 100) / 30 -> 6 pods.
    assert recommended_replicas(EVEN, PUBLISHED, 30_000, 6) == 6
    assert recommended_replicas(EVEN, PUBLISHED, 3_000, 6) == 3  # (60 + 10) / 30 = 2.33


def test_never_more_pods_than_tasks_nor_fewer_than_one() -> None:
    assert recommended_replicas(EVEN, PUBLISHED, 10**9, 6) == 6
    assert recommended_replicas({"0_0": 5.0}, PUBLISHED, 0, 6) == 1


def test_the_window_holds_a_scale_down_only_while_warmups_are_in_flight_and_at_most_the_window() -> None:
    window = timedelta(minutes=5)
    steps = [
        (4, 6, True, None, NOW, 4),  # off by default
        (8, 6, True, window, NOW, 8),  # a scale-up is never held
        (4, 6, False, window, NOW, 4),  # nothing warming: at once
        (4, 6, True, window, NOW, 6),
        (4, 6, True, window, NOW + timedelta(minutes=4), 6),
        (4, 6, True, window, NOW + timedelta(minutes=5), 4),  # the window is over
        (4, 4, False, window, NOW + timedelta(minutes=6), 4),
    ]
    hold = ScaleDownHold()
    for wanted, staying, migrating, within, now, expected in steps:
        replicas, hold = hold.replicas(wanted, staying, migrating, within, now)
        assert replicas == expected, (wanted, staying, migrating, within, now)
    assert hold.since is None


def test_only_staying_pods_of_the_current_revision_count_so_a_swaps_surge_is_not_a_scale_down() -> None:
    pods = [
        pod_record(0, revision="old"),
        pod_record(1, revision="old", leaving="2026-11-22T02:00:00Z"),
        pod_record(2, revision="new"),
        pod_record(3, revision="new", deleting=True),
        pod_record(4, revision="new", phase="Failed"),
        pod_record(5, revision="new"),
    ]
    assert staying_current(pods, "new") == 2


def test_a_measured_busy_ratio_gives_the_true_capacity_at_the_busy_target() -> None:
    # each pod processes 300/s when busy all the time (30/s at 10% busy, 20/s at 1/15); orders-2, busy 1/30
    # of the time, is too idle to divide by; 300/s at the busy target of 0.8 is 240/s: 60/s need one pod
    busy = {"orders-0": 0.1, "orders-1": 1 / 15, "orders-2": 1 / 30}
    results: dict[str, ScrapeResult] = {pod: PodMetrics(busy_ratio=ratio) for pod, ratio in busy.items()}
    assert measured_capacity(EVEN, PUBLISHED, results) == pytest.approx(300.0)
    assert recommended_replicas(EVEN, PUBLISHED, 0, 6, results=results) == 1
    # 60/s + 72,000 records to drain in 300 s = 300/s: two pods at 240/s each
    assert recommended_replicas(EVEN, PUBLISHED, 72_000, 6, results=results) == 2
    # pods that report no busy ratio leave the lower bound: the busiest pod's 30/s
    assert recommended_replicas(EVEN, PUBLISHED, 0, 6, results={}) == 2
