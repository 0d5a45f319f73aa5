"""Unknown zones against the emulator: a node that loses its zone label takes its pods out of rack
awareness (and only them), which the StreamsApp's status and Events say, naming the pods."""

from __future__ import annotations

from typing import Any

import kubernetes
from op_testkit import Kubectl, balanced, streamsapp, wait_for

from smoothscale.contract.shared_names import ZONE_LABEL
from smoothscale.sandbox.emulator.memoryruntime import MemoryRuntime
from smoothscale.sandbox.scheduling import node_name


def test_a_node_without_a_zone_label_degrades_rack_awareness_for_its_pods(
    kube: Kubectl, k8s: kubernetes.client.ApiClient, fake: MemoryRuntime, run_operator: Any
) -> None:
    core = kubernetes.client.CoreV1Api(k8s)
    with run_operator():
        kube.apply(streamsapp(replicas=3, partitions=6))
        wait_for(lambda: balanced(kube.publication(), 3, 6), what="balance")
        wait_for(lambda: kube.condition("RackAwarenessDegraded").get("status") == "False", what="zones known")

        core.patch_node(node_name("zone-a"), {"metadata": {"labels": {ZONE_LABEL: None}}})
        degraded = kube.wait_condition("RackAwarenessDegraded", "rack awareness degraded", status="True")
        unzoned = [name for name, pod in kube.pods().items() if pod.spec.node_name == node_name("zone-a")]
        assert unzoned and all(name in degraded["message"] for name in unzoned), degraded
        assert degraded["reason"] == "RackDataMissing"
        warnings = [m for kind, reason, m in kube.events() if reason == "RackAwarenessDegraded"]
        assert warnings and all(name in warnings[-1] for name in unzoned)
        # The pods' zones changed, so the app may re-plan and move tasks for a moment; it ends Ready while
        # the zone stays unknown: missing rack data alone never makes the app unready.
        wait_for(lambda: kube.condition("Ready").get("status") == "True", timeout=30, what="Ready")
        assert kube.condition("RackAwarenessDegraded").get("status") == "True"

        core.patch_node(node_name("zone-a"), {"metadata": {"labels": {ZONE_LABEL: "zone-a"}}})
        wait_for(
            lambda: kube.condition("RackAwarenessDegraded").get("status") == "False",
            timeout=30,
            what="restored",
        )
        assert "RackAwarenessRestored" in kube.reasons()
