"""`spec.autoscaling.mode: Act` on the emulated API server: the operator sets replicas through the scale
subresource (an Event, a journal record, the `Autoscaling` condition), and refuses beside an HPA or a KEDA
ScaledObject that targets the app."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import kubernetes
import pytest
from op_testkit import NAMESPACE, Kubectl, read_journal, streamsapp, wait_for

from smoothscale.sandbox.emulator.memoryruntime import MemoryRuntime


def _acting_app(replicas: int = 1) -> dict[str, Any]:
    app = streamsapp(replicas=replicas, standbys=0)
    app["spec"]["autoscaling"] = {"mode": "Act", "minReplicas": 2, "maxReplicas": 4}
    return app


def test_act_mode_sets_replicas_through_the_scale_subresource(
    kube: Kubectl, fake: MemoryRuntime, run_operator: Any, journal_path: Path
) -> None:
    with run_operator():
        kube.apply(_acting_app(replicas=1))
        wait_for(lambda: kube.app()["spec"]["replicas"] == 2, what="replicas raised to minReplicas")
        wait_for(lambda: len(kube.pods()) == 2, what="the operator's pods for them")
        condition = wait_for(lambda: kube.condition("Autoscaling") or None, what="the Autoscaling condition")
        assert condition["status"] == "True"
        scaled = [m for _, reason, m in kube.events() if reason == "AutoscalerScaled"]
        assert scaled and scaled[0].startswith("replicas 1 -> 2 (OutsideMinMax)")
    records = [r for r in read_journal(journal_path) if r.get("kind") == "autoscale"]
    assert records and records[0]["replicas"] == 2 and records[0]["previous"] == 1


TARGET = {"apiVersion": "smoothscale.io/v1alpha1", "kind": "StreamsApp", "name": "orders"}


def _hpa(k8s: kubernetes.client.ApiClient) -> None:
    body = {
        "apiVersion": "autoscaling/v2",
        "kind": "HorizontalPodAutoscaler",
        "metadata": {"name": "orders-scaler", "namespace": NAMESPACE},
        "spec": {"scaleTargetRef": TARGET, "minReplicas": 1, "maxReplicas": 3},
    }
    kubernetes.client.AutoscalingV2Api(k8s).create_namespaced_horizontal_pod_autoscaler(NAMESPACE, body)


def _scaled_object(k8s: kubernetes.client.ApiClient) -> None:
    body = {
        "apiVersion": "keda.sh/v1alpha1",
        "kind": "ScaledObject",
        "metadata": {"name": "orders-scaler", "namespace": NAMESPACE},
        "spec": {
            "scaleTargetRef": TARGET,
            "triggers": [{"type": "kafka", "metadata": {"lagThreshold": "50"}}],
        },
    }
    kubernetes.client.CustomObjectsApi(k8s).create_namespaced_custom_object(
        "keda.sh", "v1alpha1", NAMESPACE, "scaledobjects", body
    )


@pytest.mark.parametrize(
    ("create", "kind"), [(_hpa, "HorizontalPodAutoscaler"), (_scaled_object, "ScaledObject")]
)
def test_act_mode_refuses_beside_another_autoscaler_that_targets_the_app(
    kube: Kubectl,
    fake: MemoryRuntime,
    run_operator: Any,
    k8s: kubernetes.client.ApiClient,
    create: Callable[[kubernetes.client.ApiClient], None],
    kind: str,
) -> None:
    create(k8s)
    with run_operator():
        kube.apply(_acting_app(replicas=1))
        condition = wait_for(lambda: kube.condition("Autoscaling") or None, what="the Autoscaling condition")
        assert condition["status"] == "False" and condition["reason"] == "ConflictingAutoscaler"
        assert f"{kind}/orders-scaler" in condition["message"]
        wait_for(lambda: "ConflictingAutoscaler" in kube.reasons(), what="the Event naming it")
        assert kube.app()["spec"]["replicas"] == 1  # below minReplicas, and still not set
