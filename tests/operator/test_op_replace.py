"""Replacing pods without downtime: a manual drain, a host swap, a rolling restart."""

from __future__ import annotations

from op_testkit import Kubectl, actives, balanced, streamsapp, wait_for

from smoothscale.control.pods import parse_time
from smoothscale.sandbox.emulator.memoryruntime import MemoryRuntime


def _revisions(kube: Kubectl) -> dict[str, str]:
    return {name: pod.metadata.labels["smoothscale.io/revision"] for name, pod in kube.pods().items()}


def test_manual_drain_replaces_the_pod_and_keeps_replicas(
    kube: Kubectl, fake: MemoryRuntime, run_operator
) -> None:
    with run_operator():
        kube.apply(streamsapp(replicas=3, partitions=6))
        wait_for(lambda: balanced(kube.publication(), 3, 6), what="balance")
        kube.annotate("orders-1", {"smoothscale.io/leaving": "true"})

        stamped = wait_for(
            lambda: parse_time(kube.pods()["orders-1"].metadata.annotations["smoothscale.io/leaving"]),
            what="the operator records when the drain started",
        )
        assert stamped.tzinfo is not None
        wait_for(lambda: "orders-3" in kube.pods(), what="a replacement pod")
        final = wait_for(
            lambda: (
                set(kube.pods()) == {"orders-0", "orders-2", "orders-3"}
                and balanced(kube.publication(), 3, 6)
                and kube.publication()
            ),
            timeout=30,
            what="orders-1 retired, its tasks on the others",
        )
        assert "orders-1" not in set(actives(final).values())
        assert kube.app()["spec"]["replicas"] == 3
        assert {"DrainRequested", "PodRetired"} <= kube.reasons()


def test_swap_surges_new_pods_then_retires_the_old_ones(
    kube: Kubectl, fake: MemoryRuntime, run_operator
) -> None:
    with run_operator():
        kube.apply(
            streamsapp(replicas=3, partitions=6, scaling={"updateStrategy": "Swap", "maxSurge": "100%"})
        )
        wait_for(lambda: balanced(kube.publication(), 3, 6), what="balance")
        old = _revisions(kube)
        fake.restore_rate = 100_000
        template = {"spec": {"containers": [{"name": "app", "image": "example/orders:2"}]}}
        kube.patch_app("orders", {"spec": {"template": template}})

        wait_for(lambda: len(kube.pods()) == 6, what="3 new pods surged beside the old ones")
        new = wait_for(
            lambda: (
                set(kube.pods()) == {"orders-3", "orders-4", "orders-5"}
                and balanced(kube.publication(), 3, 6)
                and _revisions(kube)
            ),
            timeout=30,
            what="the old pods retired",
        )
        assert set(new.values()).isdisjoint(old.values())
        assert len(set(new.values())) == 1
        leaving = [m for _, reason, m in kube.events() if reason == "PodLeaving"]
        assert len(leaving) == 3 and all("(Swap)" in m for m in leaving), leaving


def test_rolling_restart_restarts_one_pod_at_a_time_in_place(
    kube: Kubectl, fake: MemoryRuntime, run_operator
) -> None:
    fake.keep_state = True  # the claims survive the restarts
    with run_operator():
        app = streamsapp(replicas=3, partitions=6, storage=True, scaling={"updateStrategy": "RollingRestart"})
        kube.apply(app)
        wait_for(lambda: balanced(kube.publication(), 3, 6), what="balance")
        wait_for(lambda: kube.condition("Stable").get("status") == "True", what="Stable")
        old = set(_revisions(kube).values())
        template = {"spec": {"containers": [{"name": "app", "image": "example/orders:2"}]}}
        kube.patch_app("orders", {"spec": {"template": template}})

        most_missing = 0
        most_outdated_restarting = 0

        def restarted() -> bool:
            nonlocal most_missing, most_outdated_restarting
            revisions = _revisions(kube)
            most_missing = max(most_missing, 3 - len(revisions))
            return set(revisions) == {"orders-0", "orders-1", "orders-2"} and not old & set(
                revisions.values()
            )

        wait_for(restarted, timeout=40, interval=0.05, what="every pod on the new template")
        assert most_missing <= 1, "one pod at a time"
        wait_for(lambda: balanced(kube.publication(), 3, 6), what="balance after the restarts")
        claims = kube.core.list_namespaced_persistent_volume_claim("default").items
        assert sorted(c.metadata.name for c in claims) == [f"orders-state-{i}" for i in range(3)]
        assert sum(1 for _, reason, _ in kube.events() if reason == "PodRestarting") == 3
