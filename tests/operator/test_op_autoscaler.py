"""`control.autoscaler`: true capacity from busy time, sizing in task units, a scale-out sized for its own
migration in one step, the hold while it warms up, scale-downs only with headroom and after the window."""

from __future__ import annotations

from dataclasses import replace

import pytest

from smoothscale.control.autoscaler import (
    AutoscalePolicy,
    AutoscalerMemory,
    LoadSample,
    PodLoad,
    ScaleReason,
    autoscale_policy,
    decide,
    forecast,
    steady,
    throughput,
)
from smoothscale.resource.autoscaling import AutoscalingSpec

POLICY = AutoscalePolicy(
    min_replicas=1,
    max_replicas=12,
    max_lag_seconds=60.0,
    busy_ratio=0.8,
    scale_up_stabilization=0.0,
    scale_down_stabilization=300.0,
)


def sample(now: float, rate: float, replicas: int, *, backlog: float = 0.0, **changes: object) -> LoadSample:
    """24 tasks of 2 M records on `replicas` pods of 5,000 records/s, running `rate` as far as they can."""
    capacity = throughput(replicas, 5_000.0, 24)
    processed = min(rate, capacity) / replicas
    base = LoadSample(
        now=now,
        replicas=replicas,
        input_rate=rate,
        backlog=backlog,
        pods={f"app-{i}": PodLoad(processed, processed / 5_000.0) for i in range(replicas)},
        tasks=24,
        state_per_task=2_000_000.0,
        restore_rate=50_000.0,
        max_warmups=2,
        migrating=False,
    )
    return replace(base, **changes)  # type: ignore[arg-type]


def test_capacity_is_measured_from_busy_time_not_bounded_by_the_busiest_pod() -> None:
    # two pods at 1,200 records/s each, busy 24% of the time: 5,000 records/s each when busy all the time
    decision, memory = decide(AutoscalerMemory(), sample(0, 2_400, 2), POLICY)
    assert decision is None  # one pod would do, but not before a window of observations
    assert memory.capacity == pytest.approx(5_000.0)
    assert memory.measured


def test_without_busy_time_the_capacity_is_a_lower_bound_and_load_alone_never_scales_out() -> None:
    idle = {f"app-{i}": PodLoad(4_000.0, None) for i in range(2)}
    decision, memory = decide(AutoscalerMemory(), sample(0, 8_000, 2, pods=idle), POLICY)
    assert decision is None and not memory.measured and memory.capacity == 4_000.0


def test_pods_are_sized_in_tasks_the_busiest_pod_runs() -> None:
    # 24 tasks on 7 pods: the busiest runs 4, as on 6 pods; a 7th pod adds nothing
    assert throughput(7, 5_000.0, 24) == throughput(6, 5_000.0, 24) == 30_000.0
    assert steady(19_200, 5_000.0, 24, POLICY) == 5  # 24,000 at busy 1, 19,200 at 0.8
    assert steady(0, 5_000.0, 24, replace(POLICY, min_replicas=2)) == 2
    assert steady(1e9, 5_000.0, 24, POLICY) == 12  # maxReplicas


def test_a_scale_out_is_sized_in_one_step_for_the_backlog_its_migration_accrues() -> None:
    memory = decide(AutoscalerMemory(), sample(0, 4_800, 2), POLICY)[1]
    decision, memory = decide(memory, sample(5, 19_200, 2, backlog=46_000), POLICY)
    assert decision is not None and decision.reason is ScaleReason.LOAD
    # the load alone needs 5 pods; the 12 tasks still on the two old pods fall behind while 2 warmups at a
    # time restore the moved tasks, so more pods drain that backlog in time
    assert decision.replicas > steady(19_200, 5_000.0, 24, POLICY)
    assert decision.predicted_seconds > 0 and decision.predicted_backlog > 46_000  # its peak
    assert decision.inputs()["capacityMeasured"] is True


def test_forecast_follows_the_warmup_batches() -> None:
    expected = forecast(sample(0, 19_200, 2), 19_200, 5_000.0, 50_000.0, 6)
    # 16 tasks move, 2 at a time, 40 s each, after the pods start
    assert expected.seconds == pytest.approx(15 + 8 * 40)
    assert expected.last_task_backlog > 0
    faster = forecast(sample(0, 19_200, 2, max_warmups=16), 19_200, 5_000.0, 50_000.0, 6)
    assert faster.seconds < expected.seconds
    assert faster.last_task_backlog < expected.last_task_backlog
    assert expected.peak_backlog >= expected.backlog


def test_no_new_scale_out_while_its_migration_warms_up_unless_the_backlog_breaches_the_margin() -> None:
    memory = decide(AutoscalerMemory(), sample(0, 4_800, 2), POLICY)[1]
    decision, memory = decide(memory, sample(5, 19_200, 2), POLICY)
    assert decision is not None
    grown = decision.replicas
    # the new pods restore; the lag rises as forecast: no decision
    held, memory = decide(
        memory, sample(60, 19_200, grown, backlog=decision.predicted_backlog, migrating=True), POLICY
    )
    assert held is None
    # the load doubled again and the backlog far exceeds the forecast: a new decision
    breach = sample(90, 38_400, grown, backlog=3 * decision.predicted_backlog + 3e6, migrating=True)
    overridden, _ = decide(memory, breach, POLICY)
    assert overridden is not None and overridden.reason is ScaleReason.BREACH


def test_a_scale_down_waits_for_the_window_and_sizes_for_its_peak() -> None:
    memory = decide(AutoscalerMemory(), sample(0, 4_800, 2), POLICY)[1]
    up, memory = decide(memory, sample(5, 19_200, 2), POLICY)
    assert up is not None
    size, now, downs = up.replicas, 5.0, []
    while now < 1_000:  # the load falls back at 60 s
        now += 5
        decision, memory = decide(memory, sample(now, 4_800 if now > 60 else 19_200, size), POLICY)
        if decision is not None:
            downs.append(decision)
            size = decision.replicas
    assert [d.reason for d in downs] == [ScaleReason.HEADROOM] * len(downs)
    # never within the window of the scale-up, each sized for the peak of its window
    assert downs[0].at - up.at >= POLICY.scale_down_stabilization
    assert downs[0].replicas == steady(19_200, 5_000.0, 24, POLICY)  # 60 s is within its window
    assert downs[-1].replicas == steady(4_800, 5_000.0, 24, POLICY) == 2
    assert downs[-1].at - downs[0].at >= POLICY.scale_down_stabilization


def test_no_scale_down_while_tasks_move_or_a_backlog_waits() -> None:
    memory = AutoscalerMemory()
    for now in range(0, 400, 5):
        decision, memory = decide(memory, sample(now, 4_800, 6, migrating=True), POLICY)
        assert decision is None
        decision, memory = decide(memory, sample(now, 4_800, 6, backlog=100_000), POLICY)
        assert decision is None


def test_replicas_outside_the_bounds_are_brought_inside_at_once() -> None:
    decision, _ = decide(AutoscalerMemory(), sample(0, 4_800, 14), POLICY)
    assert decision is not None and decision.replicas == 12 and decision.reason is ScaleReason.BOUNDS


def test_the_spec_in_numbers() -> None:
    spec = AutoscalingSpec.model_validate(
        {
            "mode": "Act",
            "minReplicas": 2,
            "target": {"maxLag": "2m", "busyRatio": 0.7},
            "scaleDownStabilization": "10m",
        }
    )
    policy = autoscale_policy(spec, tasks=24)
    assert policy == AutoscalePolicy(2, 24, 120.0, 0.7, 0.0, 600.0)
