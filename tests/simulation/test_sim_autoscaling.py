"""Autoscalers driving the simulated app through `replicas`: `spec.autoscaling`'s decision sized in one step
for a load step and its own migration, the baselines on the same trace, the figures a run accounts."""

from __future__ import annotations

from typing import Any

from smoothscale.control.autoscaler import AutoscalePolicy
from smoothscale.simulation import parse_scenario
from smoothscale.simulation.autoscalers import AutoscaleRun, LagThreshold, Smoothscale, Utilization
from smoothscale.simulation.engine import Simulation

POLICY = AutoscalePolicy(1, 12, 60.0, 0.8, 0.0, 300.0)


def _step_up(**overrides: Any) -> Any:
    """12 stateful tasks of 1 M records on 2 pods of 2,500 records/s, 2,400 records/s of input, four times
    that after 5 minutes, for 25 minutes."""
    return parse_scenario(
        {
            "name": "autoscale-step",
            "app": "auto",
            "zones": ["zone-a", "zone-b"],
            "pods": {"count": 2, "processRecordsPerSecond": 2_500},
            "topology": {"subtopologies": [{"partitions": 12, "inputRecordsPerSecond": 200}]},
            "events": [{"type": "inputRate", "at": 300, "factor": 4}],
            "durationSeconds": 1_800,
            **overrides,
        }
    )


def _run(autoscaler: Any) -> AutoscaleRun:
    simulation = Simulation(_step_up(), "smoothscale", 3)
    run = simulation.attach_autoscaler(autoscaler, lag_target=60.0)
    simulation.run()
    return run


def test_a_load_step_is_met_in_one_sized_scale_out_and_the_figures_are_accounted() -> None:
    smoothscale = Smoothscale(POLICY)
    run = _run(smoothscale)
    assert [(a.before, a.to) for a in run.actions][:1] == [(2, run.actions[0].to)]
    assert run.actions[0].at == 300 and run.actions[0].to >= 5  # 9,600 records/s at busy 0.8: 5 pods
    ups = [a for a in run.actions if a.to > a.before]
    assert len(ups) == 1 and len(run.actions) <= 3
    decision = smoothscale.decisions[0]
    assert decision.capacity_measured and decision.capacity == 2_500
    assert decision.predicted_seconds > 0
    # replica-seconds: 2 pods for 300 s, then more; the whole run is accounted
    assert run.replica_seconds > 2 * 1_800
    assert 0 <= run.over_target_seconds < 1_500


def test_the_baselines_run_on_the_same_trace() -> None:
    keda = _run(LagThreshold(1, 12, lag_threshold=2_500 * 0.8 * 15))
    flink = _run(Utilization(1, 12))
    assert keda.actions and keda.actions[0].to > 2
    assert flink.actions and flink.actions[0].at >= 300 + 60  # its stabilisation and window first
    assert all(a.to <= 12 for a in [*keda.actions, *flink.actions])
