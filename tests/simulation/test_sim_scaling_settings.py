"""The simulator runs the StreamsApp's `spec.scaling` settings through the operator's own pod-set decision
(`control.step.decide_pod_set`, `resource.scaling_policy`): before, it hard-coded Swap with the default
maxSurge and passed `replicas` straight through, so `scaleDownStabilization` was never simulated."""

from __future__ import annotations

from typing import Any

import pytest
from sim_testkit import small_scenario

from smoothscale.simulation import ScenarioError
from smoothscale.simulation.engine import Simulation

ZONES = ["zone-a", "zone-b", "zone-c"]
FLAP = [{"at": 65, "type": "scaleOut", "pods": 2}, {"at": 70, "type": "scaleIn", "pods": 2}]


def run(events: list[dict[str, Any]], scaling: dict[str, Any], pods: int = 2) -> Simulation:
    scenario = small_scenario(zones=ZONES, pods={"count": pods}, events=events, scaling=scaling)
    simulation = Simulation(scenario, "smoothscale", seed=0)
    simulation.run()
    return simulation


def first_leaving_mark(simulation: Simulation) -> float:
    marks = [p.leaving_since for p in simulation.cluster.pods if p.leaving_since is not None]
    return min(marks)


def test_a_scale_down_while_warmups_are_in_flight_waits_for_them_within_the_window() -> None:
    """A flapping autoscaler: +2 pods, then -2 five seconds later while the new pods still restore (20 s a
    task). Without the window the scale-down takes effect at once; with it, it waits for the warmups."""
    at_once = run(FLAP, {})
    held = run(FLAP, {"scaleDownStabilization": "10m"})
    assert first_leaving_mark(at_once) == pytest.approx(70, abs=5)
    assert first_leaving_mark(held) > 70 + 15, "held while the new pods' warmups restore"
    assert first_leaving_mark(held) < 70 + 600, "never beyond the window"
    for simulation in (at_once, held):
        assert len(simulation.cluster.present()) == 2


def test_a_short_window_lets_the_scale_down_go_when_it_ends() -> None:
    held = run(FLAP, {"scaleDownStabilization": "8s"})
    assert 70 + 8 <= first_leaving_mark(held) <= 70 + 8 + 5  # the next scrape after the window


def test_a_rolling_restart_replaces_pods_one_at_a_time_without_surge() -> None:
    simulation = run([{"at": 65, "type": "hostSwap"}], {"updateStrategy": "RollingRestart"}, pods=3)
    present = simulation.cluster.present()
    assert sorted(p.name for p in present) == ["small-0", "small-1", "small-2"]
    assert {p.revision for p in present} == {"1"}, "every pod runs the new template"
    assert max(len(s.actives) for s in simulation.recorder.timeline) <= 3, "never more than replicas pods"


def test_a_swap_surges_at_most_max_surge_pods() -> None:
    simulation = run([{"at": 65, "type": "hostSwap"}], {"maxSurge": 1}, pods=3)
    created_after_swap = [p for p in simulation.cluster.pods if p.revision == "1"]
    assert len(created_after_swap) == 3
    assert {p.revision for p in simulation.cluster.present()} == {"1"}


def test_the_scale_down_timeout_has_one_home() -> None:
    with pytest.raises(ScenarioError, match=r"scaling\.scaleDownTimeout"):
        small_scenario(scaling={"scaleDownTimeout": "1m"}, planner={"scaleDownTimeoutSeconds": 60})
    config = small_scenario(scaling={"scaleDownTimeout": "1m"}).planner_config()
    assert config.scale_down_timeout_seconds == 60
