"""The operator end to end against the emulator: creating an app, scaling it up and down."""

from __future__ import annotations

import time
import urllib.request

from op_testkit import Kubectl, actives, balanced, settled_balance, streamsapp, wait_for

from smoothscale.sandbox.emulator.memoryruntime import MemoryRuntime


def test_creation_runs_every_task_on_the_new_pods(kube: Kubectl, fake: MemoryRuntime, run_operator) -> None:
    with run_operator() as context:
        kube.apply(streamsapp(replicas=3, partitions=6))
        wait_for(lambda: len(kube.pods()) == 3, what="3 pods")
        published = wait_for(
            lambda: balanced(kube.publication(), 3, 6) and kube.publication(), what="balance"
        )
        assert set(actives(published).values()) == {"orders-0", "orders-1", "orders-2"}
        wait_for(lambda: kube.condition("Ready").get("status") == "True", what="Ready")
        wait_for(lambda: kube.condition("Stable").get("status") == "True", what="Stable")
        status = kube.status()
        assert status["phase"] == "Running"
        assert status["replicas"] == 3 and status["readyReplicas"] == 3
        assert status["selector"] == "smoothscale.io/app=orders"
        assert status["assignment"]["configMap"] == "orders-assignment"
        assert status["assignment"]["activeTasks"] == 6
        assert status["assignment"]["standbyTasks"] == 6
        assert status["observedGeneration"] == kube.app()["metadata"]["generation"]
        assert kube.app()["metadata"]["finalizers"] == ["smoothscale.io/finalizer"]
        assert all(c["observedGeneration"] == status["observedGeneration"] for c in status["conditions"])
        pod = kube.pods()["orders-0"]
        assert pod.metadata.labels["app.kubernetes.io/managed-by"] == "smoothscale"
        assert pod.metadata.labels["smoothscale.io/revision"]
        assert pod.metadata.owner_references[0].kind == "StreamsApp"
        assert "PodsCreated" in kube.reasons()
        with urllib.request.urlopen(
            f"http://127.0.0.1:{context.metrics_port}/metrics", timeout=5
        ) as response:
            exposition = response.read().decode()
        assert 'smoothscale_operator_assignment_generation{app="orders",namespace="default"}' in exposition
        assert "smoothscale_operator_plan_duration_seconds_bucket" in exposition


def test_scale_up_warms_new_pods_before_moving_tasks(
    kube: Kubectl, fake: MemoryRuntime, run_operator
) -> None:
    with run_operator():
        kube.apply(streamsapp(replicas=3, partitions=6))
        before = settled_balance(kube, fake, 3, 6)
        fake.restore_rate = 60_000  # about 2 s to restore a task
        kube.patch_app("orders", {"spec": {"replicas": 5}})

        def warming() -> bool:
            published = kube.publication()
            new = [published.assignment.get(p) for p in ("orders-3", "orders-4")] if published else []
            return all(a is not None and a.warmup and not a.active for a in new)

        wait_for(warming, what="warmups on the new pods, no actives yet")
        assert actives(kube.publication()) == actives(before)  # nothing moved yet
        migrating = kube.condition("Migrating")
        assert migrating["status"] == "True" and migrating["reason"] == "WarmupsRestoring"
        status = kube.status()
        assert status["phase"] == "Migrating" and status["autoscaling"]["migrating"]
        assert status["probing"]["nextProbeTime"] and "warmup" in status["probing"]["reason"]
        assert status["assignment"]["warmupTasks"] > 0

        wait_for(lambda: balanced(kube.publication(), 5, 6), timeout=30, what="balance on 5 pods")
        wait_for(lambda: kube.condition("Stable").get("status") == "True", what="Stable")
        assert {"WarmupsStarted", "HandOverStarted", "TasksMoved"} <= kube.reasons()
        assert kube.condition("Migrating")["status"] == "False"


def test_scale_down_retires_the_highest_ordinals_once_they_hold_nothing(
    kube: Kubectl, fake: MemoryRuntime, run_operator
) -> None:
    with run_operator():
        app = streamsapp(replicas=5, partitions=10, storage=True)
        app["spec"]["storage"]["retentionPolicy"] = {"whenScaled": "Delete"}
        kube.apply(app)
        wait_for(lambda: balanced(kube.publication(), 5, 10), what="balance on 5")
        fake.restore_rate = 100_000
        for name in ("orders-3", "orders-4"):
            fake.pod(name).hold = True  # slow to let go: the hand-over must wait for them
        kube.patch_app("orders", {"spec": {"replicas": 3}})

        def leaving() -> set[str]:
            return {x["pod"] for x in kube.status().get("leaving", [])}

        assert wait_for(lambda: leaving() == {"orders-3", "orders-4"}, what="status.leaving")
        pods = kube.pods()
        assert pods["orders-3"].metadata.annotations["smoothscale.io/leaving-reason"] == "ScaleDown"
        assert kube.condition("ScalingDown")["status"] == "True"
        wait_for(lambda: kube.publication() and kube.publication().revoking, what="revocations in flight")
        assert set(kube.pods()) == {f"orders-{i}" for i in range(5)}  # kept while they hold tasks
        for name in ("orders-3", "orders-4"):
            fake.pod(name).hold = False
        wait_for(lambda: set(kube.pods()) == {"orders-0", "orders-1", "orders-2"}, timeout=30, what="retired")
        wait_for(lambda: balanced(kube.publication(), 3, 10), what="balance on 3")
        wait_for(lambda: kube.condition("ScalingDown").get("status") == "False", what="ScalingDown False")
        assert {"PodLeaving", "PodRetired"} <= kube.reasons()
        claims = kube.core.list_namespaced_persistent_volume_claim("default").items
        assert sorted(c.metadata.name for c in claims) == [f"orders-state-{i}" for i in range(3)], (
            "whenScaled: Delete"
        )


def test_scale_down_timeout_hands_tasks_to_the_most_caught_up_pods(
    kube: Kubectl, fake: MemoryRuntime, run_operator
) -> None:
    with run_operator():
        kube.apply(streamsapp(replicas=4, partitions=8, standbys=0, scaling={"scaleDownTimeout": "2s"}))
        wait_for(lambda: balanced(kube.publication(), 4, 8), what="balance on 4")
        wait_for(lambda: kube.condition("Stable").get("status") == "True", what="Stable")
        fake.drop_unheld_state()
        fake.restore_rate = 100  # nobody catches up within the timeout
        kube.patch_app("orders", {"spec": {"replicas": 2}})
        leaving = wait_for(lambda: kube.status().get("leaving"), what="status.leaving")
        assert all(x["deadline"] for x in leaving)
        wait_for(
            lambda: set(kube.pods()) == {"orders-0", "orders-1"}, timeout=20, what="timed out pods deleted"
        )
        published = wait_for(
            lambda: balanced(kube.publication(), 2, 8) and kube.publication(), what="all on 2"
        )
        assert set(actives(published).values()) == {"orders-0", "orders-1"}
        retired = [m for _, reason, m in kube.events() if reason == "PodRetired"]
        assert any("timeout expired" in m for m in retired), retired


def test_deleting_an_app_stops_its_loop_and_removes_what_it_owned(
    kube: Kubectl, fake: MemoryRuntime, run_operator
) -> None:
    with run_operator() as context:
        kube.apply(streamsapp(replicas=2, partitions=4))
        wait_for(lambda: balanced(kube.publication(), 2, 4), what="balance")
        assert len(context.apps) == 1
        kube.custom.delete_namespaced_custom_object(
            "smoothscale.io", "v1alpha1", "default", "streamsapps", "orders"
        )
        wait_for(
            lambda: (
                not kube.custom.list_namespaced_custom_object(
                    "smoothscale.io", "v1alpha1", "default", "streamsapps"
                )["items"]
            ),
            what="the app gone",
        )
        wait_for(lambda: not kube.pods() and kube.publication() is None, what="pods and ConfigMap collected")
        wait_for(lambda: len(context.apps) == 0, what="the app's loop ended")
        assert 'app="orders"' not in context.metrics.exposition().decode()


def test_a_pod_still_starting_gets_no_task_and_no_warning(
    kube: Kubectl, fake: MemoryRuntime, run_operator
) -> None:
    """A new pod takes tasks once it is ready: a stateless task moved to a pod whose process is not up yet
    would stand still (on a real API server the sandbox's new pods took seconds to start, and tasks went
    unprocessed that long), and a starting pod is no metrics failure (no MetricsUnavailable, no Degraded)."""
    with run_operator():
        kube.apply(streamsapp(replicas=3, partitions=6))
        wait_for(lambda: balanced(kube.publication(), 3, 6), what="balance on 3")
        fake.not_ready.add("orders-3")
        kube.patch_app("orders", {"spec": {"replicas": 4}})
        wait_for(lambda: "orders-3" in kube.pods(), what="the new pod")
        wait_for(lambda: kube.status().get("replicas") == 4, what="the new pod in the status")
        time.sleep(3)  # rounds of the operator while the pod starts
        published = kube.publication()
        assert published is not None and "orders-3" not in published.assignment
        assert kube.status()["phase"] != "Degraded"
        assert "MetricsUnavailable" not in kube.reasons()
        fake.not_ready.discard("orders-3")
        wait_for(lambda: balanced(kube.publication(), 4, 6), timeout=30, what="balance on 4 once ready")
