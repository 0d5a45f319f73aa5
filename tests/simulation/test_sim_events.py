"""What the scenario's events do to the pods: names, zones, leaving marks, restarts."""

from __future__ import annotations

from sim_testkit import small_scenario

from smoothscale.simulation import simulate
from smoothscale.simulation.engine import Simulation

ZONES = ["zone-a", "zone-b", "zone-c"]


def run(events: list[dict[str, object]], pods: int = 3) -> Simulation:
    simulation = Simulation(
        small_scenario(zones=ZONES, pods={"count": pods}, events=events), "smoothscale", seed=0
    )
    simulation.run()
    return simulation


def running_at(simulation: Simulation, t: float) -> set[str]:
    sample = max((s for s in simulation.recorder.timeline if s.t <= t), key=lambda s: s.t)
    return set(sample.actives)


def test_new_pods_take_the_next_ordinals_and_spread_over_zones() -> None:
    simulation = run([{"at": 65, "type": "scaleOut", "pods": 3}])
    zones = {p.name: ZONES[p.zone] for p in simulation.cluster.present()}
    assert zones == {
        "small-0": "zone-a",
        "small-1": "zone-b",
        "small-2": "zone-c",
        "small-3": "zone-a",
        "small-4": "zone-b",
        "small-5": "zone-c",
    }


def test_scale_in_retires_the_highest_ordinals_and_a_swap_all_old_pods() -> None:
    scaled_in = run([{"at": 65, "type": "scaleIn", "pods": 2}], pods=4)
    assert [p.name for p in scaled_in.cluster.present()] == ["small-0", "small-1"]
    swapped = run([{"at": 65, "type": "hostSwap"}])
    assert [p.name for p in swapped.cluster.present()] == ["small-3", "small-4", "small-5"]


def test_a_drained_pod_is_replaced_in_its_zone() -> None:
    simulation = run([{"at": 65, "type": "drain", "pod": "small-1"}])
    assert {p.name: ZONES[p.zone] for p in simulation.cluster.present()} == {
        "small-0": "zone-a",
        "small-2": "zone-c",
        "small-3": "zone-b",
    }


def test_nothing_runs_in_a_zone_while_it_is_down() -> None:
    """zone-b is down from 65 s to 665 s: a pod added meanwhile goes elsewhere, and small-1, whose own crash
    restart (at 130 s) falls inside the outage, comes back only with its zone."""
    simulation = run(
        [
            {"at": 65, "type": "zoneOutage", "zone": "zone-b", "durationSeconds": 600},
            {"at": 100, "type": "podCrash", "pod": "small-1", "restartAfterSeconds": 30},
            {"at": 200, "type": "scaleOut", "pods": 1},
        ]
    )
    assert ZONES[simulation.cluster.pods[simulation.cluster.by_name["small-3"]].zone] != "zone-b"
    assert "small-1" not in running_at(simulation, 600)
    assert "small-1" in running_at(simulation, 700)


def test_a_scale_in_reverted_before_its_pods_left_takes_them_back() -> None:
    """The operator's take-back rule: pods marked leaving by a scale-down are kept when `replicas` rises
    again, so no pod is created and no task moves twice."""
    simulation = run([{"at": 65, "type": "scaleIn", "pods": 2}, {"at": 66, "type": "scaleOut", "pods": 2}], 4)
    pods = simulation.cluster.present()
    assert [p.name for p in pods] == ["small-0", "small-1", "small-2", "small-3"]
    assert all(p.leaving_since is None for p in pods)
    assert len(simulation.cluster.pods) == 4, "no pod was created"


def test_a_pod_lost_for_good_is_recreated_under_its_name_once_its_tasks_moved() -> None:
    """A pod deleted with its node comes back as a new pod of the same ordinal (and claim), created only once
    no generation names the old one."""
    simulation = run([{"at": 65, "type": "podCrash", "pod": "small-1", "restartAfterSeconds": None}])
    small_1 = [p for p in simulation.cluster.pods if p.name == "small-1"]
    assert [p.removed for p in small_1] == [True, False]
    assert "small-1" in running_at(simulation, simulation.now)


def test_a_crashed_pod_holds_its_tasks_until_it_returns() -> None:
    """Two pods, four tasks; small-1 crashes for 30 s and keeps its volume. The operator cannot tell a
    crashed pod from one slow to answer: it lists it, not ready, and cannot scrape it, so it holds planning
    and moves none of its tasks (the simulator once took a crashed pod for gone and moved them at once, a
    restore the operator never makes). The pod comes back with its state and runs them again: its two
    actives stop for the whole outage, nothing is restored, no generation is published."""
    pods = {"count": 2, "restoreRecordsPerSecondPerCopy": 50_000, "restoreRecordsPerSecondPerPod": 100_000}
    crash = {"at": 65, "type": "podCrash", "pod": "small-1", "restartAfterSeconds": 30}
    result = simulate(small_scenario(pods=pods, events=[crash]), "smoothscale", seed=0)
    assert result.balanced
    assert result.generations_published == 0
    assert result.records_restored == 0
    assert result.downtime_task_seconds >= 2 * 30
