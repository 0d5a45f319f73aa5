"""The operator end to end against the emulator: creating an app, scaling it up and down."""

from __future__ import annotations

from op_testkit import FakeCluster, Kubectl, actives, balanced, streamsapp, wait_for


def test_creation_runs_every_task_on_the_new_pods(kube: Kubectl, fake: FakeCluster, run_operator) -> None:
    with run_operator():
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
        pod = kube.pods()["orders-0"]
        assert pod.metadata.labels["app.kubernetes.io/managed-by"] == "smoothscale"
        assert pod.metadata.labels["smoothscale.io/revision"]
        assert pod.metadata.owner_references[0].kind == "StreamsApp"
        assert "PodsCreated" in kube.reasons()
