"""Faults: a pod lost, a pod whose metrics are missing or garbage, a spec the operator cannot honour."""

from __future__ import annotations

import time
from typing import Any

import pytest
from op_testkit import Kubectl, actives, balanced, settled_balance, streamsapp, wait_for

from smoothscale.operator.config import OperatorConfig
from smoothscale.sandbox.emulator.memoryruntime import MemoryRuntime


def test_a_lost_pod_is_replaced_under_its_name_after_its_tasks_moved(
    kube: Kubectl, fake: MemoryRuntime, run_operator
) -> None:
    with run_operator():
        kube.apply(streamsapp(replicas=3, partitions=6))
        wait_for(lambda: balanced(kube.publication(), 3, 6), what="balance")
        wait_for(lambda: kube.condition("Stable").get("status") == "True", what="Stable")
        uid = kube.pods()["orders-1"].metadata.uid
        kube.delete_pod("orders-1")

        wait_for(lambda: "PodLost" in kube.reasons(), what="a PodLost event")
        wait_for(
            lambda: "orders-1" in kube.pods() and kube.pods()["orders-1"].metadata.uid != uid,
            what="orders-1 recreated",
        )
        published = wait_for(
            lambda: balanced(kube.publication(), 3, 6) and kube.publication(), what="balance"
        )
        assert set(actives(published).values()) == {"orders-0", "orders-1", "orders-2"}


def test_a_pod_without_metrics_holds_planning_and_degrades_the_app(
    kube: Kubectl, fake: MemoryRuntime, run_operator
) -> None:
    with run_operator():
        kube.apply(streamsapp(replicas=3, partitions=6))
        before = settled_balance(kube, fake, 3, 6)
        fake.pod("orders-1").mode = "down"

        degraded = wait_for(
            lambda: kube.condition("Degraded").get("status") == "True" and kube.condition("Degraded")
        )
        assert degraded["reason"] == "MetricsUnavailable" and "orders-1" in degraded["message"]
        assert kube.status()["phase"] == "Degraded"
        assert "MetricsUnavailable" in kube.reasons()

        kube.patch_app("orders", {"spec": {"replicas": 4}})
        wait_for(lambda: "orders-3" in kube.pods(), what="the new pod is still created")
        time.sleep(1.5)  # several rounds: none may plan while orders-1's data is missing
        held = kube.publication()
        assert held is not None and held.generation == before.generation
        assert "planning held" in kube.condition("Degraded")["message"]

        fake.pod("orders-1").mode = "ok"
        wait_for(lambda: balanced(kube.publication(), 4, 6), timeout=30, what="balance on 4")
        wait_for(lambda: kube.condition("Degraded").get("status") == "False", what="Degraded False")
        assert "MetricsRecovered" in kube.reasons()


def test_garbage_metrics_are_reported_not_trusted(kube: Kubectl, fake: MemoryRuntime, run_operator) -> None:
    with run_operator() as context:
        kube.apply(streamsapp(replicas=2, partitions=4))
        wait_for(lambda: balanced(kube.publication(), 2, 4), what="balance")
        fake.pod("orders-0").mode = "garbage"
        # the garbage's Degraded, not one of a scrape that a loaded machine answered late (also Degraded)
        wait_for(
            lambda: (
                (degraded := kube.condition("Degraded")).get("status") == "True"
                and "InvalidMetrics" in degraded.get("message", "")
            ),
            what="Degraded for orders-0's invalid metrics",
        )
        text = context.metrics.exposition().decode()
        assert (
            'smoothscale_operator_scrape_failures_total{app="orders",namespace="default",reason="InvalidMetrics"}'
            in text
        )


_GOOD_CONTAINERS = streamsapp()["spec"]["template"]["spec"]["containers"]


@pytest.mark.parametrize(
    ("broken", "field", "repaired"),
    [
        (
            {"assignment": {"probingInterval": "0s"}},
            "spec.assignment.probingInterval",
            {"assignment": {"probingInterval": "1m"}},
        ),
        # Found by tests/fuzz/test_fuzz_spec.py: building the new pods crashed on a malformed env entry.
        (
            {"template": {"spec": {"containers": [{**_GOOD_CONTAINERS[0], "env": [None]}]}}},
            "spec.template.spec.containers[0].env[0]",
            {"template": {"spec": {"containers": _GOOD_CONTAINERS}}},
        ),
    ],
    ids=["probing-interval", "malformed-template"],
)
def test_an_invalid_spec_freezes_the_app_on_its_last_good_assignment(
    kube: Kubectl,
    fake: MemoryRuntime,
    run_operator,
    broken: dict[str, Any],
    field: str,
    repaired: dict[str, Any],
) -> None:
    with run_operator():
        kube.apply(streamsapp(replicas=3, partitions=6))
        before = settled_balance(kube, fake, 3, 6)
        kube.patch_app("orders", {"spec": {"replicas": 5, **broken}})

        invalid = wait_for(
            lambda: kube.condition("InvalidSpec").get("status") == "True" and kube.condition("InvalidSpec")
        )
        assert field in invalid["message"]
        assert invalid["observedGeneration"] == kube.app()["metadata"]["generation"]
        assert kube.status()["phase"] == "Invalid"
        warnings = [m for kind, reason, m in kube.events() if reason == "InvalidSpec" and kind == "Warning"]
        assert warnings and field in warnings[0]
        time.sleep(1.0)
        assert len(kube.pods()) == 3, "no pod changes while the spec is invalid"
        assert kube.publication() == before, "the last good assignment keeps running"

        kube.patch_app("orders", {"spec": repaired})
        wait_for(lambda: kube.condition("InvalidSpec").get("status") == "False", what="valid again")
        wait_for(lambda: balanced(kube.publication(), 5, 6), timeout=30, what="balance on 5")
        assert "SpecValid" in kube.reasons()


def test_an_unreadable_assignment_is_never_published_over(
    kube: Kubectl, fake: MemoryRuntime, run_operator
) -> None:
    kube.apply(streamsapp(replicas=2, partitions=4))
    garbage = {
        "metadata": {"name": "orders-assignment", "labels": {"smoothscale.io/app": "orders"}},
        "binaryData": {"assignment.json.gz": "bm90IGd6aXA="},  # base64 of "not gzip"
        "data": {"generation": "9"},
    }
    kube.core.create_namespaced_config_map("default", garbage)
    with run_operator():
        degraded = wait_for(
            lambda: kube.condition("Degraded").get("status") == "True" and kube.condition("Degraded")
        )
        assert degraded["reason"] == "AssignmentUnreadable"
        time.sleep(1.0)
        configmap = kube.core.read_namespaced_config_map("orders-assignment", "default")
        assert configmap.data == {"generation": "9"}, "what cannot be read is not overwritten"
        assert kube.pods() == {}, "nor is anything else changed"


def test_a_deleted_assignment_is_rebuilt_behind_a_barrier(
    kube: Kubectl, fake: MemoryRuntime, run_operator, operator_config: OperatorConfig
) -> None:
    with run_operator(operator_config.model_copy(update={"assignment_recheck": 0.5})):
        kube.apply(streamsapp(replicas=3, partitions=6))
        # Balanced, and the status reports that very generation (one more may follow balance under load).
        before = wait_for(
            lambda: (
                (p := kube.publication()) is not None
                and balanced(p, 3, 6)
                and kube.status().get("assignment", {}).get("generation") == p.generation
                and p
            ),
            what="balance, reported in status",
        )
        kube.core.delete_namespaced_config_map("orders-assignment", "default")

        after = wait_for(
            lambda: (p := kube.publication()) is not None and p.generation > before.generation + 1 and p,
            what="generations above the lost ones",
        )
        seen = fake.generations("orders")
        barrier = before.generation + 1
        assert barrier in seen and seen == sorted(seen), seen
        wait_for(lambda: balanced(kube.publication(), 3, 6), what="balance again")
        assert after.generation > barrier
        assert "AssignmentBarrier" in kube.reasons()
