"""From observations to the planner's snapshot, and the decisions of when (not) to plan."""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime, timedelta

from smoothscale.assignor.planner import plan
from smoothscale.contract.publication import EMPTY, ClientAssignment, Publication, Revocation
from smoothscale.control.handover import barrier_after_loss, barrier_pending, desired_reachable
from smoothscale.control.planning import PlanningDecision, PlanningInput, decide_planning
from smoothscale.control.probing import (
    PlanMemory,
    PlanTrigger,
    caught_up_moves,
    fingerprint,
    first_plan_waits,
    holders,
    missing_holders,
    new_pods_wait,
    plan_trigger,
)
from smoothscale.control.snapshot import (
    ClientObservation,
    build_snapshot,
    merge_end_offsets,
    task_ids,
)
from smoothscale.resource import load_spec

NOW = datetime(2026, 11, 21, 10, 0, tzinfo=UTC)
SPEC = load_spec(
    {
        "template": {"spec": {"containers": [{"name": "app", "image": "orders:1"}]}},
        "topology": {
            "subtopologies": [
                {"name": "0", "partitions": 2, "stateful": False, "inputTopics": ["orders"]},
                {"name": "1", "partitions": 2, "inputTopics": ["totals"], "weight": 2},
            ]
        },
        "assignment": {"numStandbys": 1, "acceptableRecoveryLag": 100, "probingInterval": "30s"},
        "scaling": {"scaleDownTimeout": "10m"},
        "racks": {"orders": [["zone-a"], ["zone-b"]]},
    }
)
PUBLISHED = Publication(
    generation=3,
    assignment={
        "orders-0": ClientAssignment(active=["0_0", "1_0", "9_9"], standby=["1_1"]),
        "orders-1": ClientAssignment(active=["0_1", "1_1"], standby=["1_0"]),
    },
)


def observe(pod: str, zone: str, lags: dict[str, int], leaving: datetime | None = None) -> ClientObservation:
    return ClientObservation(pod, zone, leaving, lags)


def test_the_snapshot_has_the_topologys_tasks_and_the_pods_as_clients() -> None:
    clients = [
        observe("orders-0", "zone-a", {"1_0": 0, "1_1": 40, "9_9": 3}),
        observe("orders-1", "zone-b", {"1_1": 0, "1_0": 500}, leaving=NOW - timedelta(minutes=1)),
        observe("orders-2", "zone-c", {}),
    ]
    snapshot = build_snapshot(SPEC, NOW, clients, PUBLISHED, {"1_0": 2000, "1_1": 1500})
    assert [t.id for t in snapshot.tasks] == task_ids(SPEC) == ["0_0", "0_1", "1_0", "1_1"]
    tasks = {t.id: t for t in snapshot.tasks}
    assert not tasks["0_0"].stateful and tasks["1_0"].stateful and tasks["1_0"].weight == 2
    assert tasks["1_0"].changelog_offsets == 2000 and tasks["0_0"].changelog_offsets == 0
    assert tasks["0_1"].input_partition_racks == [["zone-b"]]
    assert snapshot.config.scale_down_timeout_seconds == 600 and snapshot.config.num_standbys == 1
    first, second, third = snapshot.clients
    assert first.active == ["0_0", "1_0"], "a task the topology no longer has is left out"
    assert first.lags == {"1_0": 0, "1_1": 40}
    assert second.leaving_since == NOW - timedelta(minutes=1) and second.rack == "zone-b"
    assert third.active == [] and third.lags == {}
    assert plan(snapshot).assignment  # the planner accepts it


def test_changelog_lengths_only_grow() -> None:
    merged = merge_end_offsets({"1_0": 500}, [{"1_0": 400, "1_1": 10}, {"1_1": 30}])
    assert merged == {"1_0": 500, "1_1": 30}


def test_the_first_plan_and_every_relevant_change_trigger_planning() -> None:
    clients = [observe("orders-0", "zone-a", {}), observe("orders-1", "zone-b", {})]
    result = plan(build_snapshot(SPEC, NOW, clients, EMPTY, {}))
    memory = PlanMemory(1, fingerprint(clients), NOW, result)
    assert plan_trigger(None, 1, fingerprint(clients), False, NOW) is PlanTrigger.FIRST
    assert plan_trigger(memory, 2, fingerprint(clients), False, NOW) is PlanTrigger.SPEC_CHANGED
    moved = [observe("orders-0", "zone-c", {}), clients[1]]
    assert plan_trigger(memory, 1, fingerprint(moved), False, NOW) is PlanTrigger.PODS_CHANGED
    marked = [clients[0], observe("orders-1", "zone-b", {}, leaving=NOW)]
    assert plan_trigger(memory, 1, fingerprint(marked), False, NOW) is PlanTrigger.PODS_CHANGED
    recreated = [clients[0], dataclasses.replace(clients[1], uid="another pod object under the same name")]
    assert plan_trigger(memory, 1, fingerprint(recreated), False, NOW) is PlanTrigger.PODS_CHANGED
    assert plan_trigger(memory, 1, fingerprint(clients), True, NOW) is PlanTrigger.CAUGHT_UP
    assert plan_trigger(memory, 1, fingerprint(clients), False, NOW + timedelta(hours=1)) is None, "stable"


def test_a_topology_that_grows_under_the_same_spec_triggers_planning() -> None:
    """A KafkaStreams app without spec.topology is planned with the topology its pods report: more input
    partitions or a new subtopology change the tasks while the spec's generation stays, and must be
    planned for (the bridge finds tasks the plan does not place until then)."""
    clients = [observe("orders-0", "zone-a", {}), observe("orders-1", "zone-b", {})]
    result = plan(build_snapshot(SPEC, NOW, clients, EMPTY, {}))
    memory = PlanMemory(1, fingerprint(clients), NOW, result, frozenset(task_ids(SPEC)))
    same = frozenset(task_ids(SPEC))
    assert plan_trigger(memory, 1, fingerprint(clients), False, NOW, tasks=same) is None
    grown = same | {"0_2", "2_0"}
    assert (
        plan_trigger(memory, 1, fingerprint(clients), False, NOW, tasks=grown) is PlanTrigger.TOPOLOGY_CHANGED
    )
    unrecorded = dataclasses.replace(memory, tasks=frozenset())
    assert plan_trigger(unrecorded, 1, fingerprint(clients), False, NOW, tasks=grown) is None
    given = PlanningInput(
        memory=memory,
        spec_generation=1,
        clients=clients,
        published=Publication(generation=1, assignment=result.assignment),
        reported=["orders-0", "orders-1"],
        staying=["orders-0", "orders-1"],
        acceptable_recovery_lag=100,
        catch_up_trigger=SPEC.assignment.catch_up_trigger,
        now=NOW,
        waited=600,
        startup_grace=0,
        tasks=grown,
    )
    assert decide_planning(given) == PlanningDecision(PlanTrigger.TOPOLOGY_CHANGED, plan=True)


def test_an_unstable_plan_is_probed_again_after_the_followup_delay() -> None:
    clients = [
        observe("orders-0", "zone-a", {"1_0": 0, "1_1": 0}),
        observe("orders-1", "zone-b", {}),
    ]
    published = Publication(
        generation=1,
        assignment={"orders-0": ClientAssignment(active=["0_0", "0_1", "1_0", "1_1"])},
    )
    result = plan(build_snapshot(SPEC, NOW, clients, published, {"1_0": 5000, "1_1": 5000}))
    assert not result.stable and result.followup is not None
    memory = PlanMemory(1, fingerprint(clients), NOW, result)
    assert memory.next_probe == NOW + timedelta(seconds=30)
    assert plan_trigger(memory, 1, fingerprint(clients), False, NOW + timedelta(seconds=29)) is None
    probe = plan_trigger(memory, 1, fingerprint(clients), False, NOW + timedelta(seconds=30))
    assert probe is PlanTrigger.PROBING_INTERVAL

    waiting = {
        (pod, task)
        for pod, target in result.target.items()
        for task in target.active
        if task not in result.assignment[pod].active
    }
    assert {pod for pod, _ in waiting} == {"orders-1"}, "orders-1 restores what it is to run"
    lags = {"orders-1": {task: 1_000 for _, task in waiting}}
    assert caught_up_moves(result, lags, 100) == []
    lags = {"orders-1": {task: 50 for _, task in waiting}}
    assert set(caught_up_moves(result, lags, 100)) == waiting


def test_planning_is_held_while_a_holder_has_no_metrics() -> None:
    assert holders(PUBLISHED) == {"orders-0", "orders-1"}
    revoking = PUBLISHED.model_copy(update={"revoking": {"1_2": Revocation(owner="orders-7", generation=3)}})
    assert "orders-7" in holders(revoking)
    assert missing_holders(PUBLISHED, ["orders-0", "orders-1", "orders-2"], ["orders-0"]) == ["orders-1"]
    assert missing_holders(PUBLISHED, ["orders-0", "orders-2"], ["orders-0"]) == [], "a gone pod is a fact"


def test_the_first_plan_waits_a_while_for_every_new_pod() -> None:
    staying = ["orders-0", "orders-1"]
    assert first_plan_waits(EMPTY, staying, ["orders-0"], waited=1, grace=30)
    assert not first_plan_waits(EMPTY, staying, ["orders-0"], waited=31, grace=30)
    assert not first_plan_waits(EMPTY, staying, staying, waited=1, grace=30)
    assert not first_plan_waits(PUBLISHED, staying, ["orders-0"], waited=1, grace=30)


def test_a_scale_out_waits_for_its_new_pods_but_never_keeps_a_lost_pods_tasks_waiting() -> None:
    old = ["orders-0", "orders-1"]
    assert new_pods_wait(PUBLISHED, old, starting=["orders-2", "orders-3"], reported=old)
    assert new_pods_wait(PUBLISHED, [*old, "orders-2"], ["orders-2", "orders-3"], [*old, "orders-2"])
    assert not new_pods_wait(PUBLISHED, [*old, "orders-2"], ["orders-2"], [*old, "orders-2"]), "all reported"
    assert new_pods_wait(PUBLISHED, old, ["orders-2"], [*old, "orders-2"]), "reported metrics, not yet ready"
    assert not new_pods_wait(PUBLISHED, ["orders-0", "orders-2"], ["orders-2", "orders-3"], ["orders-0"]), (
        "orders-1 is gone: its tasks are placed now"
    )


def test_a_plan_naming_a_gone_pod_is_not_published() -> None:
    desired = {"orders-0": ClientAssignment(active=["0_0"]), "orders-9": ClientAssignment()}
    assert desired_reachable(desired, {"orders-0"})
    assert not desired_reachable({"orders-9": ClientAssignment(standby=["0_0"])}, {"orders-0"})


def test_a_lost_configmap_is_followed_by_a_barrier_above_every_generation_seen() -> None:
    assert barrier_after_loss(EMPTY, 0, {}) is None, "a new app"
    assert barrier_after_loss(EMPTY, 0, {"orders-0": 0}) is None
    assert barrier_after_loss(EMPTY, 7, {"orders-0": 5}) == 8
    assert barrier_after_loss(EMPTY, 3, {"orders-0": 9}) == 10, "a pod saw more than the status says"
    assert barrier_after_loss(PUBLISHED, 7, {}) is None, "the ConfigMap is there"

    barrier = Publication(generation=8)
    alive = {"orders-0", "orders-1"}
    assert barrier_pending(barrier, {"orders-0": 8, "orders-1": 7}, alive)
    assert not barrier_pending(barrier, {"orders-0": 8, "orders-1": 8}, alive)
    assert not barrier_pending(barrier, {"orders-0": 8}, {"orders-0"}), "a gone pod runs nothing"
    assert not barrier_pending(PUBLISHED, {}, alive), "a generation with actives is no barrier"
    assert not barrier_pending(EMPTY, {}, alive)


def test_a_task_being_revoked_stays_with_its_leaving_owner_until_someone_caught_up_can_take_it() -> None:
    """Host swap: 1_0 is being revoked from leaving orders-0 toward orders-2, which fell behind. Planning
    must see orders-0 as 1_0's owner (it may still be running it, and it is caught up), not hand 1_0 to a
    staying pod without state."""
    published = Publication(
        generation=7,
        assignment={
            "orders-0": ClientAssignment(active=["0_0", "0_1", "1_1"], standby=["1_0"]),
            "orders-2": ClientAssignment(warmup=["1_0"]),
            "orders-3": ClientAssignment(),
        },
        revoking={"1_0": Revocation(owner="orders-0", generation=7)},
    )
    leaving = NOW - timedelta(minutes=1)
    clients = [
        observe("orders-0", "zone-a", {"1_0": 0, "1_1": 0}, leaving=leaving),
        observe("orders-2", "zone-a", {"1_0": 900}),
        observe("orders-3", "zone-b", {}),
    ]
    snapshot = build_snapshot(SPEC, NOW, clients, published, {"1_0": 5000, "1_1": 5000})
    owner = next(c for c in snapshot.clients if c.id == "orders-0")
    assert "1_0" in owner.active and "1_0" not in owner.standby
    result = plan(snapshot)
    assert "1_0" in result.assignment["orders-0"].active, "kept by its caught-up (leaving) owner"
