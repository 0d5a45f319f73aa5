"""Scale requests that arrive while tasks move: one migration, re-targeted to the latest size.

The rebalancing guide advises against scaling again while tasks move; autoscalers and people do it anyway.
Three requests in a row (3 -> 6 -> 4 -> 5) while the first migration's warmups are still restoring must
end in one stable, balanced assignment on 5 pods, and no task may change its active pod twice: a task
warming toward a pod that a later request removes is not moved there and then away again. The pods'
restores are held while the requests arrive, so "mid-migration" holds however slowly a loaded machine runs
the test.
"""

from __future__ import annotations

import time

import kubernetes
from ops_testkit import NAMESPACE, SAPP, Generations, balanced, publication, smoothscale, streamsapp, wait_for

from smoothscale.contract.publication import Publication
from smoothscale.contract.shared_names import LEAVING_ANNOTATION
from smoothscale.operator.context import OperatorContext
from smoothscale.sandbox.emulator import RunningEmulator
from smoothscale.sandbox.emulator.memoryruntime import MemoryRuntime

SLOW_RESTORE = 25_000.0
"""Offsets per second: a new pod needs ~4 s to catch up on a task (changelog 100,000), long enough for the
later requests to arrive mid-migration."""


def test_three_scale_requests_during_a_migration_end_at_the_last_size_moving_no_task_twice(
    cluster: RunningEmulator, k8s: kubernetes.client.ApiClient, fake: MemoryRuntime, operator: OperatorContext
) -> None:
    custom = kubernetes.client.CustomObjectsApi(k8s)
    core = kubernetes.client.CoreV1Api(k8s)
    with Generations(k8s) as generations:
        custom.create_namespaced_custom_object(*SAPP, streamsapp(replicas=3))
        start = wait_for(lambda: balanced(p := publication(core), 3, 12) and p, what="3 balanced pods")
        fake.restore_rate = 0.0  # no warmup catches up until the last request has been planned for

        def scale(replicas: int) -> None:
            custom.patch_namespaced_custom_object_scale(*SAPP, "orders", {"spec": {"replicas": replicas}})

        def migrating() -> bool:
            status = custom.get_namespaced_custom_object(*SAPP, "orders").get("status") or {}
            return bool((status.get("autoscaling") or {}).get("migrating"))

        scale(6)
        wait_for(
            lambda: any(r.warmup for r in (publication(core) or start).assignment.values()),
            what="warmups toward the new pods",
        )
        wait_for(migrating, what="status.autoscaling.migrating")
        second = smoothscale(cluster, "scale", "orders", "--to", "4")  # as a person would, mid-migration
        assert second.exit_code == 0, second.output
        assert "warning: orders is still moving tasks" in second.output, second.output
        time.sleep(0.5)
        scale(5)
        wait_for(lambda: targets_five(core), what="warmups toward the fifth pod, orders-5 leaving or gone")
        fake.restore_rate = SLOW_RESTORE
        wait_for(lambda: balanced(publication(core), 5, 12), timeout=40, what="5 balanced pods")
        wait_for(lambda: not migrating(), what="migration over")
        time.sleep(0.5)  # the watch delivers the last generations

    numbers = [p.generation for p in generations.seen]
    assert numbers == list(range(numbers[0], numbers[-1] + 1)), f"a generation was not seen: {numbers}"
    moves = generations.moves(since_generation=start.generation)
    assert moves, "the scale-out moved no task"
    twice = {task: pods for task, pods in moves.items() if len(pods) > 1}
    assert not twice, f"tasks moved more than once: {twice}"
    final = publication(core)
    assert final is not None and sorted(final.assignment) == [f"orders-{i}" for i in range(5)]
    assert "orders-5" not in {pod for pods in moves.values() for pod in pods}


def targets_five(core: kubernetes.client.CoreV1Api) -> bool:
    """The operator has planned for the last request: orders-0..4 stay, orders-4 warms up a task."""
    pods = core.list_namespaced_pod(NAMESPACE, label_selector="smoothscale.io/app=orders").items
    staying = sorted(
        p.metadata.name
        for p in pods
        if not p.metadata.deletion_timestamp and LEAVING_ANNOTATION not in (p.metadata.annotations or {})
    )
    published = publication(core)
    roles = published.assignment.get("orders-4") if published else None
    return staying == [f"orders-{i}" for i in range(5)] and bool(roles and roles.warmup)


def warming(published: Publication | None) -> int:
    """Pods the publication gives a warmup."""
    return sum(1 for roles in (published.assignment.values() if published else ()) if roles.warmup)


def test_a_stabilisation_window_holds_a_scale_down_until_the_warmups_are_done(
    k8s: kubernetes.client.ApiClient, fake: MemoryRuntime, operator: OperatorContext
) -> None:
    custom = kubernetes.client.CustomObjectsApi(k8s)
    core = kubernetes.client.CoreV1Api(k8s)
    app = streamsapp(replicas=3)
    app["spec"]["scaling"] = {"scaleDownStabilization": "1m"}
    custom.create_namespaced_custom_object(*SAPP, app)
    wait_for(lambda: balanced(publication(core), 3, 12), what="3 balanced pods")
    fake.restore_rate = SLOW_RESTORE
    custom.patch_namespaced_custom_object_scale(*SAPP, "orders", {"spec": {"replicas": 6}})
    wait_for(lambda: warming(publication(core)) >= 3, what="warmups on the 3 new pods")
    custom.patch_namespaced_custom_object_scale(*SAPP, "orders", {"spec": {"replicas": 4}})

    def leaving() -> list[str]:
        pods = core.list_namespaced_pod(NAMESPACE).items
        return [p.metadata.name for p in pods if LEAVING_ANNOTATION in (p.metadata.annotations or {})]

    held = 0
    while warming(publication(core)):
        assert not leaving(), "a pod was marked leaving while warmups were in flight"
        held += 1
        time.sleep(0.1)
    assert held > 5, "the warmups were over before the scale-down arrived"
    wait_for(lambda: balanced(publication(core), 4, 12), timeout=40, what="4 balanced pods")
