"""Unknown racks are not a rack (KIP-925 turns rack awareness off where racks are unknown).

A pod whose zone is unknown (`rack: null`) is neither penalised for cross-rack traffic nor counted as
"another rack" for a standby; input partitions whose replicas' racks are unknown cost nothing anywhere.
Rack awareness stays on for everything that is known, and the plan says what was unknown.
"""

from __future__ import annotations

from rules import assert_valid, make_client, make_snapshot, make_task, run_planner


def test_a_pod_without_a_zone_is_not_penalised_for_traffic_and_is_named() -> None:
    """Two pods: one in zone-a (where every input lives), one whose zone is unknown. Rack-aware, a pod in a
    real other zone would get no task it could avoid; the unknown pod is not such a pod: the tasks split
    evenly, the cross-rack cost counts nothing for it, and the plan names it."""
    tasks = [make_task(f"0_{p}", offsets=0, racks=[["zone-a"]]) for p in range(4)]
    clients = [make_client("known", active=[t["id"] for t in tasks]), make_client("nowhere", rack=None)]
    snapshot = make_snapshot(tasks, clients, strategy="min_traffic")
    plan = run_planner(snapshot)
    assert_valid(snapshot, plan)
    assert plan.stats.target_cross_rack_cost == 0
    assert plan.rack_unknown.pods == ["nowhere"] and plan.rack_unknown.tasks == []
    for task in plan.target["nowhere"].active:
        assert "rack unknown" in plan.explain[task], plan.explain[task]


def test_a_pod_without_a_zone_is_not_another_rack_for_standbys() -> None:
    """Active on a zone-a pod; candidates for its standby: a zone-b pod (certainly another rack) and a pod
    of unknown zone (perhaps zone-a). The standby goes to zone-b."""
    tasks = [make_task("0_0", offsets=0)]
    clients = [
        make_client("a", active=["0_0"]),
        make_client("b", rack="zone-b"),
        make_client("x", rack=None),
    ]
    for order in (clients, list(reversed(clients))):
        snapshot = make_snapshot(tasks, order, num_standbys=1)
        plan = run_planner(snapshot)
        assert_valid(snapshot, plan)
        assert plan.target["b"].standby == ["0_0"], plan.target
        assert plan.assignment["b"].standby == ["0_0"], plan.assignment


def test_tasks_whose_input_racks_are_unknown_are_named() -> None:
    tasks = [make_task("0_0", racks=[["zone-a"], []]), make_task("0_1", racks=[["zone-b"]])]
    clients = [make_client("a", active=["0_0", "0_1"]), make_client("b", rack="zone-b")]
    plan = run_planner(make_snapshot(tasks, clients))
    assert plan.rack_unknown.pods == [] and plan.rack_unknown.tasks == ["0_0"]
    assert "0_0" in plan.assignment["a"].active, "on zone-a the input whose rack is known is local"
    assert "racks of some input partitions unknown" in plan.explain["0_0"], plan.explain["0_0"]
